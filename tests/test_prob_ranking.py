"""What a Comparison says: the recommendation against the ROPE, and nothing to choose for one system.

References: the ROPE probabilities are recomputed in numpy from the comparison's own yield draws (an
independent reduction of the draws), and the equivalence rule from those numbers.
"""

import re

import numpy as np
import pytest

import jax

import ecjax
from ecjax._src import prob

KEY = jax.random.key(5)


def _two_close_systems(n=300, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    a = np.where(rng.random(n) < 0.85, labels, 1 - labels)
    b = a.copy()
    b[:3] = labels[:3]  # B fixes up to three of A's samples: the same system up to noise
    return labels, np.stack([a, b])


def _numpy_rope(yields, rope):
    d = yields[:, :, None] - yields[:, None, :]
    return np.stack([(d > rope).mean(0), (np.abs(d) <= rope).mean(0), (d < -rope).mean(0)], -1)


def test_recommendation_names_the_practically_equivalent_system():
    labels, dec = _two_close_systems()
    res = prob.compare(prob.Systems(labels, dec, names=["A", "B"]), utilities=np.eye(2), key=KEY, rope=0.05,
                       settings=prob.MonteCarloSettings(num_draws=4000))
    y = np.asarray(res.yields, np.float64)
    ref = _numpy_rope(y, 0.05)
    np.testing.assert_allclose(res.rope_probabilities, ref, atol=1e-6)
    r = res.recommendation
    other = 1 - r
    assert np.argmax(ref[r, other]) == 1 and ref[r, other, 1] > 0.9  # |difference| <= 0.05 is most probable
    assert res.practically_equivalent == (res.systems[other],)
    text = res.summary()
    line = next(s for s in text.splitlines() if s.startswith("recommended:"))
    assert "practically equivalent to " + res.systems[other] in line
    assert f"P(|difference| <= 0.05) = {ref[r, other, 1]:.3f}" in text
    assert f"P({res.best} better by > 0.05) = {ref[r, other, 0]:.3f}" in text


def test_no_equivalence_when_the_difference_exceeds_the_rope():
    labels, dec = _two_close_systems()
    dec[1] = labels  # B is perfect: about 15 points better than A
    res = prob.compare(prob.Systems(labels, dec, names=["A", "B"]), utilities=np.eye(2), key=KEY, rope=0.01,
                       settings=prob.MonteCarloSettings(num_draws=4000))
    ref = _numpy_rope(np.asarray(res.yields, np.float64), 0.01)
    assert res.best == "B" and ref[1, 0, 0] > 0.99
    assert res.practically_equivalent == ()
    assert "practically equivalent" not in res.summary()
    # Without a ROPE there is nothing to say about equivalence.
    plain = prob.compare(prob.Systems(labels, dec, names=["A", "B"]), utilities=np.eye(2), key=KEY,
                         settings=prob.MonteCarloSettings(num_draws=4000))
    assert plain.practically_equivalent == () and "vs A" not in plain.summary()


def test_one_system_gets_no_recommendation():
    labels, dec = _two_close_systems()
    res = prob.compare(prob.Systems(labels, dec[:1], names=["only"]), utilities=np.eye(2), key=KEY,
                       settings=prob.MonteCarloSettings(num_draws=2000))
    text = res.summary()
    assert "recommended" not in text and "P(best)" not in text and "doubt" not in text
    # The line still carries the yield: accuracy's posterior mean under a Dirichlet over the 4 cells.
    n, correct = labels.size, np.sum(dec[0] == labels)
    a = res.info["concentration"]
    expected = (correct + 2 * a) / (n + 4 * a)
    assert f"{expected: .4f}" in text.splitlines()[1]


def test_summary_columns_align_for_long_names():
    labels, dec = _two_close_systems()
    names = ["a", "a-much-longer-system-name-than-the-header"]
    lines = prob.compare(prob.Systems(labels, dec, names=names), utilities=np.eye(2), key=KEY,
                         settings=prob.MonteCarloSettings(num_draws=2000)).summary()
    rows = lines.splitlines()[:3]

    def right_edges(row):
        return [m.end() for m in re.finditer(r"\S+(?: \S+)*", row)]  # cells are separated by 2+ spaces

    # Numeric columns are right-aligned under their headers, whatever the length of the names.
    edges = [right_edges(r) for r in rows]
    assert len(edges[0]) == 4 and edges[0][1:] == edges[1][1:] == edges[2][1:]
    assert rows[2].startswith(names[1] + "  ")


def test_nec_summaries_stay_finite_when_a_decision_is_best_for_every_class():
    # The factory of Dyrland et al. (2022) with every utility uniform on +-50 around its value: class 1 always prefers
    # decision 1 (165 vs -335), class 0 prefers decision 1 too when U01 > U00, i.e. when the difference of two
    # uniforms on [-50, 50] is below -50: probability 50^2 / 2 / 100^2 = 0.125.  In those draws the best naive
    # system (always decision 1) costs nothing and the NEC is undefined.
    import arviz as az

    from ecjax.demo import FACTORY_COUNTS, FACTORY_UTILITIES

    u = FACTORY_UTILITIES
    res = prob.compare_counts(FACTORY_COUNTS, utilities=prob.intervals(u - 50, u + 50), key=jax.random.key(3),
                              settings=prob.MonteCarloSettings(num_draws=20_000))
    assert abs(res.nec_undefined_fraction - 0.125) < 4 * np.sqrt(0.125 * 0.875 / 20_000)
    idata = res.to_arviz()
    assert "normalized_expected_cost" not in idata.posterior
    assert "undefined in 12." in idata.posterior.attrs["normalized_expected_cost"]
    summary = az.summary(idata)
    assert np.all(np.isfinite(summary[["mean", "sd", "hdi_3%", "hdi_97%"]].to_numpy()))
    assert "NEC undefined in 12." in res.summary()
    with pytest.raises(ecjax.InputError, match="undefined"):
        res.interval("normalized_expected_costs")
    # Tight intervals: every draw has a costly naive system, and the NEC stays in the summaries.
    tight = prob.compare_counts(FACTORY_COUNTS, utilities=prob.intervals(u - 5, u + 5), key=jax.random.key(3),
                                settings=prob.MonteCarloSettings(num_draws=2000))
    assert tight.nec_undefined_fraction == 0 and "NEC" not in tight.summary()
    assert np.all(np.isfinite(az.summary(tight.to_arviz())["mean"].to_numpy()))


def test_command_line_reports_where_the_nec_is_undefined(tmp_path, capsys):
    # c00 ~ U(0, 2), c01 ~ U(0, 1), c10 ~ U(1, 5), c11 = 0: class 1 always prefers decision 1, class 0 does when
    # c01 < c00, with probability 1 - E[c01] / 2 = 0.75: in those draws the naive "always 1" costs nothing.
    import json

    from ecjax import cli

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "a.npy", np.where(rng.random(400) < 0.8, y, 1 - y))
    np.save(tmp_path / "b.npy", np.where(rng.random(400) < 0.7, y, 1 - y))
    (tmp_path / "c.toml").write_text("costs = [[1, 0.5], [3, 0]]\n[uncertainty]\nlow = [[0, 0], [1, 0]]\n"
                                     "high = [[2, 1], [5, 0]]\n")
    args = ["compare", "--labels", str(tmp_path / "y.npy"), "--decisions", str(tmp_path / "a.npy"),
            str(tmp_path / "b.npy"), "--costs", str(tmp_path / "c.toml"), "--draws", "8000"]
    assert cli.main(args + ["--json"]) == 0
    fraction = json.loads(capsys.readouterr().out)["nec_undefined_fraction"]
    assert abs(fraction - 0.75) < 4 * np.sqrt(0.75 * 0.25 / 8000)
    assert cli.main(args) == 0
    assert "NEC undefined in 7" in capsys.readouterr().out


def test_hdi_refuses_too_few_draws_inside_the_interval():
    # floor(prob S) = 0 draws inside gave [min, min]; 10 inside and 10 outside are needed (issue 30.10).
    draws = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(ecjax.InputError, match=r"too few draws for a 0.01 HDI: got num_draws=50, need at least 1000 "
                                               r"\(10 draws inside the interval and 10 outside\)"):
        prob.ranking.hdi(draws, 0.01)
    with pytest.raises(ecjax.InputError, match="need at least 100 "):
        prob.ranking.hdi(draws, 0.9)
    # Enough draws: arviz's rule (the narrowest interval holding floor(prob S) + 1 sorted draws).
    import arviz as az

    many = np.random.default_rng(1).normal(size=2000)
    for p in (0.05, 0.5, 0.9):
        np.testing.assert_allclose(np.asarray(prob.ranking.hdi(many, p), np.float64), az.hdi(many, hdi_prob=p),
                                   rtol=1e-6)


def test_compare_default_concentration_is_two_over_k_d_paired_or_not():
    # The docstring of prob.compare says what info["concentration"] reports: 2 / (K D) for either model (issue 31.8).
    labels = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    decisions = np.array([[0, 1, 2, 0, 1, 1, 0, 1], [0, 1, 1, 0, 2, 2, 0, 1]])
    utilities = np.eye(3, 4)  # K = 3 classes, D = 4 decisions
    settings = prob.MonteCarloSettings(num_draws=200)
    paired = prob.compare(prob.Systems(labels, decisions), utilities=utilities, key=KEY, hdi_prob=0.5,
                          settings=settings)
    unpaired = prob.compare(prob.Systems([labels, labels[:6]], [decisions[0], decisions[1, :6]], paired=False),
                            utilities=utilities, key=KEY, hdi_prob=0.5, settings=settings)
    assert paired.info["concentration"] == pytest.approx(2 / 12)
    assert unpaired.info["concentration"] == pytest.approx(2 / 12)
    assert "default ``2 / (K D)``" in prob.compare.__doc__
