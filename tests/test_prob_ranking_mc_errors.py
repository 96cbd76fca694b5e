"""Monte Carlo standard errors of a comparison: batch means, checked against closed forms and against the spread of
repeated runs with different keys.

References: sigma / sqrt(n) for independent normal draws; the AR(1) long-run variance
sigma^2 (1 + phi) / (1 - phi) for correlated ones; the binomial sqrt(p (1 - p) / n); and the empirical standard
deviation of P(best) and E[yield] over independent repetitions (coverage of the stated error).
"""

import json
import re

import jax
import numpy as np
import pytest

from ecjax import InputError, cli, prob
from ecjax._src.prob.ranking import batch_means_error, with_error


def test_independent_draws_match_sigma_over_root_n():
    x = np.random.default_rng(0).normal(0.0, 2.0, size=(100_000, 3))
    se = batch_means_error(x)
    np.testing.assert_allclose(se, 2.0 / np.sqrt(100_000), rtol=0.4)  # 20 batches: the estimate is within ~16 %


def test_batch_means_error_is_the_numpy_formula_and_exactly_0_for_a_constant():
    # sd(batch means) / sqrt(B) of 20 consecutive batches (the last S mod 20 draws left out), in float64 numpy.
    x = np.random.default_rng(3).normal(0.7, 1.5, size=(10_007, 2)).astype(np.float32)
    means = x[: 20 * (10_007 // 20)].astype(np.float64).reshape(20, -1, 2).mean(1)
    np.testing.assert_allclose(batch_means_error(x), means.std(0, ddof=1) / np.sqrt(20), rtol=1e-4)
    # A quantity that does not vary has no Monte Carlo error: not ~1e-8 from float32 rounding of its batch means.
    assert np.all(batch_means_error(np.full((20_000, 3), 0.9990001, np.float32)) == 0.0)
    assert np.all(batch_means_error(np.ones((4_000, 2), bool)) == 0.0)


def test_correlated_draws_get_the_long_run_variance():
    # AR(1) with phi = 0.9: the error of the mean is sqrt((1 + phi) / (1 - phi)) = 4.4 times the iid formula.
    rng = np.random.default_rng(1)
    phi, n = 0.9, 200_000
    e = rng.normal(size=n)
    x = np.empty(n)
    x[0] = e[0] / np.sqrt(1 - phi**2)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    marginal_sd = 1 / np.sqrt(1 - phi**2)
    truth = marginal_sd * np.sqrt((1 + phi) / (1 - phi)) / np.sqrt(n)
    assert float(batch_means_error(x)) == pytest.approx(truth, rel=0.4)
    assert float(batch_means_error(x)) > 3 * marginal_sd / np.sqrt(n)  # the iid formula would be far too small


def test_too_few_draws_give_nan():
    assert np.isnan(batch_means_error(np.ones(3)))


def _problem(n=300, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    decisions = np.stack([np.where(rng.random(n) < 0.80, y, 1 - y), np.where(rng.random(n) < 0.79, y, 1 - y)])
    return y, decisions


def test_p_best_error_is_the_binomial_one_and_shows_in_the_summary():
    y, d = _problem()
    r = prob.compare(prob.Systems(y, d), costs=prob.cost_ratio(1, 5), key=jax.random.key(0), rope=0.01,
                     settings=prob.MonteCarloSettings(num_draws=8000))
    p = r.p_best
    np.testing.assert_allclose(r.errors["p_best"], np.sqrt(p * (1 - p) / 8000), rtol=0.4)
    np.testing.assert_array_equal(r.errors["expected_yield"], 0.0)  # fixed decisions: the closed form
    text = r.summary()
    rec = r.recommendation
    assert f"P(best) = {with_error(p[rec], r.errors['p_best'][rec], 3)}" in text
    assert r.errors["p_best"][rec] > 0.002  # a real error, printed with 3 decimals
    assert "E[yield] exact (closed form)" in text
    assert re.search(r"P\(\|difference\| <= 0\.01\) = \d\.\d{3} ± \d\.\d{3}", text)
    assert f"doubt: all {with_error(r.doubt.doubt_all, r.doubt.error('all'), 3)}" in text


def test_an_error_too_small_for_the_digits_is_not_printed_as_zero():
    assert with_error(0.997, 0.0004, 3) == "0.997 ± 0.0004"
    assert with_error(0.5, 0.0, 3) == "0.500 ± 0.000"
    assert with_error(0.5, None, 3) == "0.500"


@pytest.mark.parametrize("rule", ["expected_utility", "per_draw"])
def test_stated_errors_cover_the_spread_of_repeated_runs(rule):
    # 40 runs with different keys: the spread of P(best) (and of the Monte Carlo E[yield] with per-draw decisions)
    # across runs is what the stated error claims for one run.
    y, _ = _problem(n=200, seed=3)
    rng = np.random.default_rng(3)
    logit = np.where(y == 1, 1.0, -1.0)
    scores = np.stack([logit + rng.normal(0, 1.3, y.size), logit + rng.normal(0, 1.35, y.size)])
    scores = np.stack([-np.logaddexp(0, scores), -np.logaddexp(0, -scores)], -1)  # (2, N, 2) log-posteriors
    p_best, y_mean, se_p, se_y = [], [], [], []
    for i in range(40):
        r = prob.compare(prob.Systems(y, scores=scores, decision_rule=rule), costs=prob.cost_ratio(1, 5),
                         key=jax.random.key(100 + i), decompose=False, settings=prob.MonteCarloSettings(num_draws=1000))
        p_best.append(r.p_best[0])
        y_mean.append(r.expected_yield[0])
        se_p.append(r.errors["p_best"][0])
        se_y.append(r.errors["expected_yield"][0])
    assert 0.1 < np.mean(p_best) < 0.9  # an uncertain ranking, so the check has something to measure
    ratio = np.std(p_best, ddof=1) / np.mean(se_p)
    assert 0.6 < ratio < 1.6, ratio  # 40 repetitions pin the spread to about +-11 %
    if rule == "per_draw":
        ratio = np.std(y_mean, ddof=1) / np.mean(se_y)
        assert 0.6 < ratio < 1.6, ratio
    else:
        assert np.all(np.asarray(se_y) == 0) and np.ptp(y_mean) < 1e-6  # closed form: the same in every run


@pytest.mark.slow  # ~20 s; the library's errors are checked by this file's default-lane tests, the JSON by test_cli
def test_command_line_json_carries_the_errors(tmp_path, capsys):
    y, d = _problem()
    files = {"y": y, "a": d[0], "b": d[1]}
    for name, values in files.items():
        np.save(tmp_path / f"{name}.npy", values)
    (tmp_path / "c.toml").write_text('classes = ["0", "1"]\ncosts = [[0, 1], [3, 0]]\n'
                                     '[uncertainty]\nlow = [[0, 1], [1, 0]]\nhigh = [[0, 1], [5, 0]]\n')
    rc = cli.main(["compare", "--labels", str(tmp_path / "y.npy"), "--decisions", str(tmp_path / "a.npy"),
                   str(tmp_path / "b.npy"), "--costs", str(tmp_path / "c.toml"), "--draws", "4000", "--rope", "0.01",
                   "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    rec = json.loads(out.out)
    errors = rec["monte_carlo_errors"]
    p = np.array([rec["p_best"][n] for n in rec["systems"]])
    np.testing.assert_allclose([errors["p_best"][n] for n in rec["systems"]], np.sqrt(p * (1 - p) / 4000), rtol=0.4)
    assert errors["expected_yield"] == {n: 0.0 for n in rec["systems"]}
    assert np.shape(errors["rope_probabilities"]) == (2, 2, 3)
    assert set(errors["doubt"]) == {"all", "costs_only", "priors_only", "rates_only"}
    assert "target" not in errors  # no precision target asked for

    rc = cli.main(["compare", "--labels", str(tmp_path / "y.npy"), "--decisions", str(tmp_path / "a.npy"),
                   str(tmp_path / "b.npy"), "--costs", str(tmp_path / "c.toml"), "--draws", "1000",
                   "--mc-error", "0.006", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    rec = json.loads(out.out)
    errors = rec["monte_carlo_errors"]
    assert errors["target"] == 0.006 and errors["target_met"] and errors["runs"][0] == 1000
    assert rec["num_draws"] == errors["runs"][-1] > 1000
    assert max(errors["p_best"].values()) <= 0.006 and max(errors["doubt"].values()) <= 0.006


# ------------------------------------------------------------ a precision target

def test_mc_error_target_draws_until_every_probability_is_that_precise():
    y, d = _problem()
    r = prob.compare(prob.Systems(y, d), costs=prob.cost_ratio(1, 5), key=jax.random.key(0), rope=0.01,
                     settings=prob.MonteCarloSettings(num_draws=2000, mc_error=0.004))
    assert r.info["mc_error_met"] and r.info["mc_error_target"] == 0.004
    runs = r.info["mc_error_runs"]
    assert runs[0] == 2000 and runs[-1] == r.num_draws > 2000 and runs == sorted(runs)
    assert r.largest_probability_error() <= 0.004
    # Independent reference: the binomial error of P(best) at the final number of draws (fixed decisions: the
    # draws are independent) meets the target, up to the batch-means estimate's own spread (~16 %).
    p = r.p_best
    assert np.all(np.sqrt(p * (1 - p) / r.num_draws) <= 0.004 * 1.25)
    # ...and the first run alone did not: more draws were needed.
    assert np.sqrt(p * (1 - p) / 2000).max() > 0.004
    assert "target 0.004 met" in r.summary()


def test_mc_error_target_stops_at_max_draws_and_says_so():
    y, d = _problem()
    r = prob.compare(prob.Systems(y, d), costs=prob.cost_ratio(1, 5), key=jax.random.key(1),
                     settings=prob.MonteCarloSettings(num_draws=2000, mc_error=0.001, max_draws=3000))
    assert r.num_draws == 3000 and r.info["mc_error_runs"] == [2000, 3000]
    assert not r.info["mc_error_met"] and r.largest_probability_error() > 0.001
    assert "target 0.001 NOT met" in r.summary()


@pytest.mark.parametrize("kw, name", [(dict(mc_error=0.6), "mc_error"), (dict(mc_error="tight"), "mc_error"),
                                      (dict(mc_error=0.01, max_draws=100), "max_draws")])
def test_mc_error_target_refuses_bad_values(kw, name):
    y, d = _problem()
    with pytest.raises(InputError, match=name):
        prob.compare(prob.Systems(y, d), costs=prob.cost_ratio(1, 5), key=jax.random.key(0),
                     settings=prob.MonteCarloSettings(num_draws=1000, **kw))
