"""With scores, ``compare`` decides as Dyrland et al. (2022) prescribes, and reports closed forms exactly.

Dyrland et al. (2022) eqs. 18-19: while the costs are uncertain, the decision of highest
expected utility is the Bayes decision of the expected utility matrix
``U_hat``.  ``compare(..., scores=...)`` makes those decisions once
(``decision_rule="expected_utility"``, the default); ``"per_draw"`` lets
each drawn cost matrix decide (costs known at deployment).  References:
numpy Bayes decisions for ``U_hat``, numpy confusion counts, and the
closed-form ``E[yield_m] = sum_ij U_hat_ij E[P_i] E[R_m,ij]`` with
Dirichlet posterior means.
"""

import json

import numpy as np
import pytest

import jax

import ecjax
from ecjax import prob
from ecjax._src.prob.rates import default_class_concentration
from conftest import DATA_DIR

KEY = jax.random.key(16)
DATA = DATA_DIR  # ../shared/data, or ECJAX_DATA_DIR (tests/conftest.py)
SST2 = ("sst2_gpt2", "sst2_gpt2_4shot")


def _sst2():
    if not DATA.is_dir():
        pytest.skip(f"real-score data not found at {DATA}")
    labels = {n: np.load(DATA / n / "targets.npy", allow_pickle=False) for n in SST2}
    scores = {n: np.load(DATA / n / "scores.npy", allow_pickle=False) for n in SST2}
    return labels, scores


def _counts(labels, decisions, k, d):
    return np.stack([np.bincount(decisions[labels == i], minlength=d) for i in range(k)]).astype(np.float64)


def _mean_rates(counts, alpha):
    c = np.asarray(counts, np.float64) + alpha
    return c / c.sum(-1, keepdims=True)


def test_sst2_expected_utility_rule_against_numpy_and_the_issue():
    labels, scores = _sst2()
    lo, hi, alpha = 0.1, 10.0, 0.5
    res = prob.compare(prob.Systems(labels, scores=scores, paired=False), costs=prob.cost_ratio(lo, hi),
                       concentration=alpha, key=KEY, settings=prob.MonteCarloSettings(num_draws=20_000))
    assert res.info["decision_rule"] == "expected_utility" and res.info["expected_yield"] == "closed form"
    # U_hat of costs [[0, 1], [r, 0]] with log r uniform on [log lo, log hi]: E[r] = (hi - lo) / log(hi / lo).
    mean_r = (hi - lo) / np.log(hi / lo)
    u_hat = -np.array([[0.0, 1.0], [mean_r, 0.0]])
    np.testing.assert_allclose(res.expected_utility_matrix, u_hat, rtol=1e-6)
    # numpy: Bayes decisions for U_hat (decide 1 iff E[r] P(1|x) > P(0|x)), counts, Dirichlet means.
    n_i = np.bincount(labels[SST2[0]], minlength=2)
    a_p = default_class_concentration(2)
    p_bar = (n_i + a_p) / (n_i.sum() + 2 * a_p)
    closed = []
    for n in SST2:
        post = np.exp(scores[n] - scores[n].max(1, keepdims=True))
        post /= post.sum(1, keepdims=True)
        d = (mean_r * post[:, 1] > post[:, 0]).astype(int)
        closed.append(np.sum(u_hat * p_bar[:, None] * _mean_rates(_counts(labels[n], d, 2, 2), alpha)))
    np.testing.assert_allclose(res.expected_yield, closed, rtol=1e-6)
    # The Monte Carlo mean of the draws agrees with the closed form (E[U P R] = U_hat E[P] E[R]).
    y = np.asarray(res.yields, np.float64)
    assert np.all(np.abs(y.mean(0) - closed) < 5 * y.std(0) / np.sqrt(len(y)))
    # The measurements that motivated the rule (with U_hat decisions): E[yield] -0.495 / -0.501, P(best) 0.988.
    np.testing.assert_allclose(res.expected_yield, [-0.495, -0.501], atol=1.5e-3)
    assert abs(res.p_best[0] - 0.988) < 0.01
    # Per-draw decisions (costs known at deployment): the measured -0.331 / -0.369 and P(best) 0.675, which
    # counted the draws where both systems decide alike as wins; they are ties now (issue 31.2,
    # tests/test_prob_compare_per_draw_ties.py), so 0.675 lies between P(best) and P(best) + P(tie).
    per_draw = prob.compare(prob.Systems(labels, scores=scores, decision_rule="per_draw", paired=False),
                            costs=prob.cost_ratio(lo, hi), concentration=alpha, key=KEY,
                            settings=prob.MonteCarloSettings(num_draws=20_000))
    assert per_draw.info["expected_yield"] == "Monte Carlo"
    np.testing.assert_allclose(per_draw.expected_yield, [-0.331, -0.369], atol=4e-3)
    assert per_draw.p_best[0] < 0.675 - 0.1 and per_draw.p_best[0] + per_draw.p_tie > 0.675 + 0.1
    assert abs(per_draw.p_best.sum() + per_draw.p_tie - 1.0) < 1e-12
    assert "decision_rule=expected_utility" in res.summary() and "decision_rule=per_draw" in per_draw.summary()


@pytest.mark.parametrize("paired", [False, True])
def test_closed_form_expected_yield_of_given_decisions(paired):
    rng = np.random.default_rng(21)
    n, k, alpha = 900, 3, 0.3
    labels = rng.integers(0, k, n)
    dec = np.stack([np.where(rng.random(n) < acc, labels, rng.integers(0, k + 1, n)) for acc in (0.75, 0.7)])
    low = np.array([[2.0, -1.0, -2.0, 0.0], [-1.0, 3.0, -1.0, 0.2], [-3.0, -1.0, 1.0, 0.1]])
    utilities = prob.intervals(low, low + 1.0)  # U_hat = low + 1/2 (Dyrland et al. 2022, eq. 18)
    u_hat = low + 0.5
    deployment = prob.dirichlet_priors([5.0, 3.0, 2.0])  # E[P] = (0.5, 0.3, 0.2)
    p_dep = np.array([0.5, 0.3, 0.2])
    counts = np.stack([_counts(labels, d, k, k + 1) for d in dec])
    for priors in (None, deployment):
        res = prob.compare(prob.Systems(labels, dec, paired=paired), utilities=utilities, priors=priors,
                           concentration=alpha, key=KEY, decompose=False,
                           settings=prob.MonteCarloSettings(num_draws=20_000))
        assert res.info["expected_yield"] == "closed form"
        if priors is not None:
            p_bar = p_dep
        elif paired:  # the class marginals of Dirichlet(n_m,ij + alpha) over the K D cells
            p_bar = (counts[0].sum(-1) + (k + 1) * alpha) / (n + k * (k + 1) * alpha)
        else:  # Dirichlet(n_i + alpha_P) over the class frequencies
            a_p = default_class_concentration(k)
            p_bar = (counts[0].sum(-1) + a_p) / (n + k * a_p)
        closed = np.einsum("ij,i,mij->m", u_hat, p_bar, _mean_rates(counts, alpha))
        np.testing.assert_allclose(res.expected_yield, closed, rtol=1e-6)
        y = np.asarray(res.yields, np.float64)
        assert np.all(np.abs(y.mean(0) - closed) < 5 * y.std(0) / np.sqrt(len(y)))


def test_per_draw_rule_with_fixed_costs_is_the_expected_utility_rule():
    rng = np.random.default_rng(4)
    n = 600
    labels = rng.integers(0, 2, n)
    scores = [np.log(np.clip(np.stack([1 - q, q], 1), 1e-6, 1)) for q in
              (np.clip(labels * 0.6 + rng.random(n) * 0.4, 0, 1), np.clip(labels * 0.4 + rng.random(n) * 0.6, 0, 1))]
    scores = [s - np.logaddexp(s[:, :1], s[:, 1:]) for s in scores]
    c = np.array([[0.0, 1.0], [4.0, 0.0]])
    eu = prob.compare(prob.Systems(labels, scores=scores), costs=c, key=KEY,
                      settings=prob.MonteCarloSettings(num_draws=20_000))
    pd = prob.compare(prob.Systems(labels, scores=scores, decision_rule="per_draw"), costs=c, key=KEY,
                      settings=prob.MonteCarloSettings(num_draws=20_000))
    # The same decisions in every draw: both are the fixed-decision model, with the same numbers.
    np.testing.assert_array_equal(np.asarray(eu.yields), np.asarray(pd.yields))
    np.testing.assert_array_equal(eu.expected_yield, pd.expected_yield)
    assert pd.info["decision_rule"] == "per_draw" and "costs are fixed" in pd.info["decisions"]
    with pytest.raises(ecjax.InputError, match="decision_rule"):
        prob.compare(prob.Systems(labels, scores=scores, decision_rule="each_draw"), costs=c, key=KEY,
                     settings=prob.MonteCarloSettings(num_draws=20_000))


def test_identical_decisions_under_u_hat_are_a_tie_not_doubt():
    # Two systems scored on different orders of the same test set (unpaired), whose Bayes decisions for
    # U_hat are all "1": identical confusion counts.  Before, the rates-only ranking reported ~0.5 doubt.
    rng = np.random.default_rng(9)
    n = 400
    labels = (rng.random(n) < 0.4).astype(int)
    other = rng.permutation(labels)
    p1 = [0.3 + 0.6 * rng.random(n), 0.25 + 0.7 * rng.random(n)]  # P(1|x) >= 0.25: with r >= 5, always "1"
    scores = [np.log(np.stack([1 - p, p], 1)) for p in p1]
    better = np.log(np.stack([1 - (0.01 + 0.98 * labels), 0.01 + 0.98 * labels], 1))  # a third, good system
    res = prob.compare(prob.Systems([labels, other, labels], scores=[scores[0], scores[1], better], paired=False,
                                    names=["a", "b", "good"]),
                       costs=prob.cost_ratio(5, 20), key=KEY, settings=prob.MonteCarloSettings(num_draws=20_000))
    assert res.ties == (("a", "b"),)
    assert res.expected_yield[0] == res.expected_yield[1]
    assert res.best == "good" and "tied: a = b" in res.summary()
    # Without the good system the two tie: P(best) is split, but that is not doubt.
    res2 = prob.compare(prob.Systems([labels, other], scores=scores, paired=False, names=["a", "b"]),
                        costs=prob.cost_ratio(5, 20), key=KEY, settings=prob.MonteCarloSettings(num_draws=20_000))
    assert res2.ties == (("a", "b"),)
    assert 0.3 < res2.p_best[0] < 0.7
    assert res2.doubt.as_dict() == {"all": 0.0, "costs_only": 0.0, "priors_only": 0.0, "rates_only": 0.0}


def test_cli_decision_rule_and_doubt_record(tmp_path, capsys):
    from ecjax import cli

    labels, scores = _sst2()
    files = []
    for n in SST2:
        np.save(tmp_path / f"{n}_y.npy", labels[n])
        np.save(tmp_path / f"{n}_s.npy", scores[n])
        files.append(n)
    (tmp_path / "c.toml").write_text("costs = [[0, 1], [2, 0]]\n[uncertainty]\nlow = [[0, 1], [1, 0]]\n"
                                     "high = [[0, 1], [5, 0]]\n")
    base = ["compare", "--labels", *[str(tmp_path / f"{n}_y.npy") for n in files],
            "--scores", *[str(tmp_path / f"{n}_s.npy") for n in files], "--names", "zero", "four",
            "--costs", str(tmp_path / "c.toml"), "--draws", "20000", "--json"]
    records = {}
    for rule in ("expected_utility", "per_draw"):
        assert cli.main(base + ["--decision-rule", rule]) == 0
        records[rule] = json.loads(capsys.readouterr().out)
    eu, pd = records["expected_utility"], records["per_draw"]
    assert eu["decision_rule"] == "expected_utility" and pd["decision_rule"] == "per_draw"
    assert eu["expected_yield_method"] == "closed form" and pd["expected_yield_method"] == "Monte Carlo"
    assert set(eu["doubt"]) == {"all", "costs_only", "priors_only", "rates_only"}
    assert eu["doubt"]["priors_only"] == 0.0  # no deployment priors in the file: a certain source
    # The record's expected yields are the closed form of numpy Bayes decisions for U_hat: costs
    # [[0, 1], [3, 0]] (interval midpoints), with concentration 2 / (K D) = 0.5 and the prior of the
    # class frequencies.
    n_i = np.bincount(labels[SST2[0]], minlength=2)
    a_p = default_class_concentration(2)
    p_bar = (n_i + a_p) / (n_i.sum() + 2 * a_p)
    for name, n in zip(("zero", "four"), SST2):
        post = np.exp(scores[n])
        d = (3 * post[:, 1] > post[:, 0]).astype(int)
        r = _mean_rates(_counts(labels[n], d, 2, 2), 0.5)
        assert eu["expected_yield"][name] == pytest.approx(-(p_bar[0] * r[0, 1] + 3 * p_bar[1] * r[1, 0]), rel=1e-5)
    # Text output names the rule and explains the doubt.
    assert cli.main(base[:-1] + ["--decision-rule", "expected_utility"]) == 0
    text = capsys.readouterr().out
    assert "decision_rule=expected_utility" in text and "doubt: all" in text and "rates_only" in text


@pytest.mark.parametrize("n", [1000, 1024, 1025])
@pytest.mark.parametrize("paired", [False, True])
def test_counts_of_padded_samples_are_exact(n, paired):
    # The samples reach the compiled kernels padded to a power of two (bucket_size); the padding must not count.
    from ecjax._src.prob.compare import bucket_size

    assert bucket_size(n) >= max(n, 1024) and bucket_size(n) & (bucket_size(n) - 1) == 0
    rng = np.random.default_rng(n)
    labels = rng.integers(0, 3, n)
    dec = np.stack([np.where(rng.random(n) < acc, labels, rng.integers(0, 3, n)) for acc in (0.8, 0.6)])
    u = -(1 - np.eye(3))
    res = prob.compare(prob.Systems(labels, dec, paired=paired), utilities=u, concentration=0.5, key=KEY,
                       decompose=False, settings=prob.MonteCarloSettings(num_draws=200))
    counts = np.stack([_counts(labels, d, 3, 3) for d in dec])
    if paired:  # the class marginals of Dirichlet(n_m,ij + alpha) over the K D cells
        p_bar = (counts[0].sum(-1) + 3 * 0.5) / (n + 9 * 0.5)
    else:
        a_p = default_class_concentration(3)
        p_bar = (counts[0].sum(-1) + a_p) / (n + 3 * a_p)
    closed = np.einsum("ij,i,mij->m", u, p_bar, _mean_rates(counts, 0.5))
    np.testing.assert_allclose(res.expected_yield, closed, rtol=1e-6)
