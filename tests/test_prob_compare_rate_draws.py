"""Per-draw decisions shared by several rate draws (``prob.PerDraw``): same posterior, honest errors, less work.

References: a numpy computation of the per-draw expected yield (10^5 cost ratios, each with its Bayes decisions
and the Dirichlet posterior-mean rates, which is ``E[yield | U]`` exactly), the spread of repeated runs with
different keys (coverage of the stated batch-means errors), a numpy one-way analysis of variance, and the
formula ``r* = sqrt((c_U / c_R) (s_w^2 / s_b^2))`` (Cochran 1977, eq. 10.8) evaluated by hand.
"""

import numpy as np
import pytest

import jax

from ecjax import InputError, prob
from ecjax._src.prob.draw_plan import plan_draws
from ecjax._src.prob.rates import default_class_concentration, default_concentration

KEY = jax.random.key(11)


def _binary(n=300, seed=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    logit = np.where(y == 1, 1.0, -1.0)
    s = np.stack([logit + rng.normal(0, 1.3, n), logit + rng.normal(0, 1.35, n)])
    return y, np.stack([-np.logaddexp(0, s), -np.logaddexp(0, -s)], -1)  # (2, N, 2) log-posteriors


def _numpy_per_draw_yield(y, scores, lo, hi, alpha, num=100_000, seed=0):
    """``E[yield_m]`` under per-draw decisions: the mean over cost ratios of ``E[yield | ratio]`` (exact given it).

    Costs ``[[0, 1], [r, 0]]`` with ``log r`` uniform on ``[log lo, log hi]``; decide 1 iff ``r P(1|x) > P(0|x)``;
    given the decisions, ``E[P_i R_ij] = E[P_i] E[R_ij]`` (unpaired), both Dirichlet means.
    """
    r = np.exp(np.random.default_rng(seed).uniform(np.log(lo), np.log(hi), num))
    n_i = np.bincount(y, minlength=2)
    a_p = default_class_concentration(2)
    p_bar = (n_i + a_p) / (n_i.sum() + 2 * a_p)
    out = []
    for s in scores:
        log_odds = s[:, 1] - s[:, 0]
        yield_ = np.zeros(num)
        for i in range(2):
            lo_i = np.sort(log_odds[y == i])
            ones = lo_i.size - np.searchsorted(lo_i, -np.log(r), side="right")  # decided 1: log-odds > -log r
            counts = np.stack([lo_i.size - ones, ones], -1).astype(np.float64)
            mean_rates = (counts + alpha) / (lo_i.size + 2 * alpha)
            # A false positive costs 1, a missed class 1 costs r (rows = true class).
            yield_ -= p_bar[i] * (mean_rates[:, 1] if i == 0 else r * mean_rates[:, 0])
        out.append(yield_.mean())
    return np.array(out)


def test_shared_decisions_keep_the_posterior_and_the_numpy_expected_yield():
    y, scores = _binary()
    lo, hi = 0.2, 5.0
    alpha = default_concentration(2, 2)
    reference = _numpy_per_draw_yield(y, scores, lo, hi, alpha)
    for rule in (prob.PerDraw(1), prob.PerDraw(8)):
        res = prob.compare(prob.Systems(y, scores=scores, decision_rule=rule, paired=False),
                           costs=prob.cost_ratio(lo, hi), key=KEY, settings=prob.MonteCarloSettings(num_draws=16_000))
        assert res.info["rate_draws_per_cost_draw"] == rule.rate_draws
        assert res.info["cost_draws"] == 16_000 // rule.rate_draws
        err = res.errors["expected_yield"]
        assert np.all(np.abs(res.expected_yield - reference) < 4 * err), (rule, res.expected_yield, reference, err)
        assert np.all(err < 0.004)  # the check has teeth: the yields differ by about 0.015
    # The decision-free components agree too: P(best) of the two runs within their combined errors.
    one = prob.compare(prob.Systems(y, scores=scores, decision_rule=prob.PerDraw(1), paired=False),
                       costs=prob.cost_ratio(lo, hi), key=KEY, decompose=False,
                       settings=prob.MonteCarloSettings(num_draws=16_000))
    eight = prob.compare(prob.Systems(y, scores=scores, decision_rule=prob.PerDraw(8), paired=False),
                         costs=prob.cost_ratio(lo, hi), key=KEY, decompose=False,
                         settings=prob.MonteCarloSettings(num_draws=16_000))
    gap = abs(one.p_best[0] - eight.p_best[0])
    assert gap < 4 * np.hypot(one.errors["p_best"][0], eight.errors["p_best"][0])


@pytest.mark.parametrize("paired", [False, True])
def test_stated_errors_cover_repeated_runs_when_draws_share_decisions(paired):
    # 40 keys, 16 rate draws per cost draw: draws of one group are correlated, so the binomial error
    # sqrt(p (1 - p) / S) understates the spread; the batch-means error must not.
    y, scores = _binary(n=200, seed=3)
    p_best, y_mean, se_p, se_y = [], [], [], []
    for i in range(40):
        r = prob.compare(prob.Systems(y, scores=scores, paired=paired, decision_rule=prob.PerDraw(16)),
                         costs=prob.cost_ratio(1, 5), key=jax.random.key(200 + i), decompose=False,
                         settings=prob.MonteCarloSettings(num_draws=1600))
        p_best.append(r.p_best[0])
        y_mean.append(r.expected_yield[0])
        se_p.append(r.errors["p_best"][0])
        se_y.append(r.errors["expected_yield"][0])
    assert 0.1 < np.mean(p_best) < 0.9
    ratio = np.std(p_best, ddof=1) / np.mean(se_p)
    assert 0.6 < ratio < 1.6, ratio  # 40 repetitions pin the spread to about +-11 %
    p = np.mean(p_best)
    # The correlation is real: the binomial error would fail the coverage check above (measured: 1.8x).
    assert np.std(p_best, ddof=1) > 1.6 * np.sqrt(p * (1 - p) / 1600)
    ratio = np.std(y_mean, ddof=1) / np.mean(se_y)
    assert 0.6 < ratio < 1.6, ratio


def test_the_variance_decomposition_is_a_one_way_anova_of_the_draws():
    y, scores = _binary()
    r = 10
    res = prob.compare(prob.Systems(y, scores=scores, decision_rule=prob.PerDraw(r), paired=False),
                       costs=prob.cost_ratio(0.2, 5), key=KEY, decompose=False,
                       settings=prob.MonteCarloSettings(num_draws=5000))
    x = np.asarray(res.yields, np.float64).reshape(-1, r, 2)
    rec = res.recommendation
    for name, values in (("p_best", (np.argmax(x, -1) == rec).astype(float)), ("yield", x[..., rec])):
        within = np.mean([np.var(g, ddof=1) for g in values])
        between = max(0.0, np.var(values.mean(1), ddof=1) - within / r)
        assert res.info["variance_within_cost_draws"][name] == pytest.approx(within, rel=1e-9)
        assert res.info["variance_between_cost_draws"][name] == pytest.approx(between, rel=1e-9, abs=1e-12)
        # r* by hand: unpaired c_U / c_R = (M N K D / 1e10) / (M K D / 3e7) = 3e-3 N.
        by_hand = np.sqrt(3e-3 * y.size * within / between)
        assert res.info["efficient_rate_draws"][name] == pytest.approx(by_hand, rel=1e-9)
    # The cost draws carry most of the yield's variance, the rates most of the best-indicator's.
    assert res.info["variance_between_cost_draws"]["yield"] > res.info["variance_within_cost_draws"]["yield"]
    assert res.info["variance_within_cost_draws"]["p_best"] > res.info["variance_between_cost_draws"]["p_best"]


@pytest.mark.parametrize("m, n, k, paired, expected", [
    (3, 10_000, 10, False, 5),  # CIFAR-10: c_U / c_R = 3e-3 N = 30
    (2, 1821, 2, False, 2),  # SST-2: 5.5
    (2, 300, 2, False, 1),  # 0.9: sharing would not pay
    (3, 10_000, 10, True, 1),  # paired: a rate draw is N sample weights, as dear as the decisions
    (2, 10**7, 2, False, 32),  # capped
])
def test_default_rate_draws_follow_the_cost_ratio(m, n, k, paired, expected):
    assert prob.PerDraw().resolve(num_systems=m, num_samples=n, num_classes=k, num_decisions=k,
                                  paired=paired) == expected


def test_the_default_rule_is_used_by_per_draw_and_shown():
    y, scores = _binary(n=2000, seed=4)  # c_U / c_R = 3e-3 * 2000 = 6: r = 2
    res = prob.compare(prob.Systems(y, scores=scores, decision_rule="per_draw", paired=False),
                       costs=prob.cost_ratio(0.2, 5), key=KEY, settings=prob.MonteCarloSettings(num_draws=3001))
    assert res.info["rate_draws_per_cost_draw"] == 2 and res.info["cost_draws"] == 1501
    assert res.yields.shape == (3001, 2)
    assert "1501 cost draws x 2 rate draws each" in res.summary()


@pytest.mark.parametrize("group", [1, 3, 8, 64])
def test_blocks_hold_whole_groups(group):
    for draws in (1, 100, 20_000, 200_001):
        for elements in (4, 3000, 10**6):
            plan = plan_draws(draws, elements, group=group)
            assert plan.block % group == 0 and plan.block * plan.num_blocks >= draws
            assert plan.block <= max(group, 1 << 16)


@pytest.mark.parametrize("bad", [0, -2, 2.5, "4", True])
def test_bad_rate_draws_are_refused(bad):
    y, scores = _binary(n=50)
    with pytest.raises(InputError, match="rate_draws"):
        prob.compare(prob.Systems(y, scores=scores, decision_rule=prob.PerDraw(bad)), costs=prob.cost_ratio(0.2, 5),
                     key=KEY, settings=prob.MonteCarloSettings(num_draws=100))
    with pytest.raises(InputError, match="decision_rule"):
        prob.compare(prob.Systems(y, scores=scores, decision_rule="per draw"), costs=prob.cost_ratio(0.2, 5), key=KEY)


def test_command_line_rate_draws(tmp_path, capsys):
    import json

    from ecjax import cli

    y, scores = _binary(n=300)
    np.save(tmp_path / "y.npy", y)
    for name, s in zip("ab", scores):
        np.save(tmp_path / f"{name}.npy", s)
    (tmp_path / "c.toml").write_text('costs = [[0, 1], [3, 0]]\n[uncertainty]\nlow = [[0, 1], [1, 0]]\n'
                                     'high = [[0, 1], [5, 0]]\n')
    base = ["compare", "--labels", str(tmp_path / "y.npy"), "--scores", str(tmp_path / "a.npy"),
            str(tmp_path / "b.npy"), "--costs", str(tmp_path / "c.toml"), "--draws", "2000", "--unpaired", "--json"]
    assert cli.main(base + ["--decision-rule", "per_draw", "--rate-draws", "4"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["decision_rule"] == "per_draw" and rec["rate_draws_per_cost_draw"] == 4
    systems = prob.Systems([y, y], scores=list(scores), paired=False, decision_rule=prob.PerDraw(4),
                           names=list(rec["systems"]))
    direct = prob.compare(systems, costs=prob.intervals([[0, 1], [1, 0]], [[0, 1], [5, 0]], kind="cost"),
                          key=jax.random.key(0), settings=prob.MonteCarloSettings(num_draws=2000))
    np.testing.assert_allclose([rec["p_best"][n] for n in rec["systems"]], direct.p_best, rtol=1e-6)
    assert cli.main(base + ["--rate-draws", "4"]) == 2  # an input error: without per-draw decisions there is nothing to share
    assert "--rate-draws" in capsys.readouterr().err
