"""The bootstrap at real sizes (issue 33) and one implementation per ranking metric (issue 32 item 8).

References, never ecjax itself: scikit-learn's ``roc_auc_score`` and ``roc_curve`` with ``sample_weight``, a
numpy ROCCH-EER from scikit-learn's ROC points, a numpy search of the best threshold's NEC, the closed-form standard error ``sqrt(p (1 - p) / S)`` of a
Bernoulli mean, and a fixed number of draws of the same key (the adaptive draws must extend it).
"""

from functools import partial

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score, roc_curve

import jax
import jax.numpy as jnp

from ecjax._src import random_bits
from ecjax import scores as S
from ecjax.prob import BUILTIN_METRICS, MonteCarloSettings, Systems, bootstrap_metric, weighted_metric
from ecjax._src.prob.adaptive_draws import draw_until, draws_needed
from ecjax.scores import eer_of_rates, sort_scores, sorted_weighted_auc, weighted_rates_at_cuts
from ecjax._src.scores.roc import prefix_sums

KEY = jax.random.key(3)


def _binary(n, seed, noise=0.0, base=None):
    """Labels and (N, 2) log-posteriors whose log-odds are rounded to 0.5 (many ties), optionally a noisy copy."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n) if base is None else base[0]
    s = (rng.normal(size=n) + y) if base is None else base[1] + noise * rng.normal(size=n)
    s = np.round(s * 2) / 2
    return y, s, np.stack([-np.logaddexp(0, s), -np.logaddexp(0, -s)], -1).astype(np.float32)


def _rocch_eer(y, s, w):
    """ROCCH-EER = max_pi min over scikit-learn's ROC points of pi miss + (1 - pi) fa (on a grid of 20001 pi)."""
    fpr, tpr, _ = roc_curve(y, s, sample_weight=w)
    pi = np.linspace(0.0, 1.0, 20001)[:, None]
    return float(np.max(np.min(pi * (1 - tpr) + (1 - pi) * fpr, axis=1)))


# Slow lane (about 15 s): the bootstrap's draws in sorted order against scikit-learn per draw (below) and the AUC at
# 10^4 samples stay in the default lane.
@pytest.mark.slow
def test_one_sort_serves_a_batch_of_weights_as_scikit_learn_per_weight_vector():
    y, s, _ = _binary(400, seed=0)
    rng = np.random.default_rng(1)
    weights = np.concatenate([np.ones((1, 400)), rng.exponential(size=(5, 400)), rng.integers(0, 3, (2, 400))])
    ranked = sort_scores(jnp.asarray(y), jnp.asarray(s, jnp.float32))
    got = np.asarray(sorted_weighted_auc(ranked, jnp.asarray(weights, jnp.float32)))
    expected = [roc_auc_score(y, s, sample_weight=w) for w in weights]
    np.testing.assert_allclose(got, expected, rtol=2e-6)
    # (2, 4, N) weights: any leading axes.
    got2 = np.asarray(sorted_weighted_auc(ranked, jnp.asarray(weights, jnp.float32).reshape(2, 4, 400)))
    np.testing.assert_allclose(got2.reshape(-1), expected, rtol=2e-6)
    miss, fa = weighted_rates_at_cuts(ranked, jnp.asarray(weights, jnp.float32))
    eers = jax.jit(jax.vmap(lambda m, f: eer_of_rates(m, f, ranked.valid)))(miss, fa)  # one compiled program
    np.testing.assert_allclose(np.asarray(eers), [_rocch_eer(y, s, w) for w in weights], atol=1e-4)


def _best_threshold_nec(y, s, w, costs, priors=None):
    """NEC of "decide 1 iff s > t" at the best t, by numpy over every distinct threshold (Ferrer 2022a, eqs. 2, 4)."""
    w1, w0 = w * (y == 1), w * (y == 0)
    p = np.array([w0.sum(), w1.sum()]) / w.sum() if priors is None else np.asarray(priors, np.float64)
    ecs = []
    for t in np.concatenate([[-np.inf], np.unique(s)]):
        miss, fa = w1[s <= t].sum() / w1.sum(), w0[s > t].sum() / w0.sum()
        ecs.append(p[0] * (costs[0][0] * (1 - fa) + costs[0][1] * fa) + p[1] * (costs[1][0] * miss
                                                                                  + costs[1][1] * (1 - miss)))
    return min(ecs) / min(p @ np.asarray(costs, np.float64))


def test_eer_and_best_threshold_kernels_serve_a_batch_of_weights_and_the_bootstrap():
    # One kernel per metric (issue 32 item 8): the public kernels sorted_weighted_eer and
    # sorted_threshold_expected_costs (behind ecjax.scores.eer and optimal_threshold_expected_cost with
    # sample_weight, tested in test_sample_weight.py) on a batch of weight vectors and one sort, and the bootstrap's
    # weighted_metric, which maps them, equal scikit-learn's ROCCH / a numpy threshold search per vector.
    y, s, lp = _binary(150, seed=4)
    rng = np.random.default_rng(5)
    weights = np.concatenate([np.ones((1, 150)), rng.exponential(size=(2, 150)), rng.integers(0, 3, (1, 150))])
    w32 = jnp.asarray(weights, jnp.float32)
    costs = [[0.0, 1.0], [4.0, 0.5]]
    assert BUILTIN_METRICS["eer"].ranked is S.sorted_weighted_eer  # the bootstrap's draws: the public kernel
    np.testing.assert_allclose(np.asarray(weighted_metric(y, lp, w32, "eer")), [_rocch_eer(y, s, w) for w in weights],
                               atol=1e-4)
    ranked = sort_scores(jnp.asarray(y), jnp.asarray(s, jnp.float32))
    curves = jax.jit(partial(S.sorted_threshold_expected_costs, normalize=True))(ranked, w32, jnp.asarray(costs))
    np.testing.assert_allclose(np.asarray(jnp.min(curves, -1)), [_best_threshold_nec(y, s, w, costs) for w in weights],
                               rtol=1e-5)
    priors = [0.3, 0.7]
    np.testing.assert_allclose(np.asarray(weighted_metric(y, lp, w32, "nec_best_threshold", costs=costs,
                                                          priors=priors)),
                               [_best_threshold_nec(y, s, w, costs, priors) for w in weights], rtol=1e-5)


def _sorted_draw_weights(key, draws, y, s):
    """The sample weights of bootstrap draws ``draws`` of a ranking metric without clusters (float64, ``(D, N)``):
    counter-based Exp(1) variates of (key, d), entry ``k`` given to the ``k``-th sample of the first system's sort
    (by score, class 1 first among ties), rebuilt with numpy's sort."""
    from ecjax._src.prob import bootstrap as b

    key_weights, _ = random_bits.split_keys(key)
    words = jax.random.bits(key_weights, (2,), jnp.uint32)
    e = np.asarray(b._exponentials(words, jnp.asarray(draws, jnp.uint32), len(y)), np.float64)
    w = np.empty_like(e)
    w[:, np.lexsort((y != 1, s))] = e  # tied samples of one class are interchangeable: any order among them
    return w


# Slow lane (about 9 s); each AUC draw against scikit-learn stays in the default lane
# (test_bootstrap_draws_in_sorted_order_keep_the_systems_paired_and_match_scikit_learn).
@pytest.mark.slow
def test_bootstrap_auc_at_ten_thousand_samples_matches_scikit_learn_on_its_own_weights():
    # The draws of bootstrap_metric are the metric of Dirichlet-weighted samples: rebuild the weights of each draw
    # and score them with scikit-learn.
    y, s, lp = _binary(10_000, seed=2)
    res = bootstrap_metric(Systems(y, scores=lp), "auc", key=KEY, settings=MonteCarloSettings(num_draws=120))
    s32 = lp[:, 1].astype(np.float64) - lp[:, 0]
    expected = [roc_auc_score(y, s32, sample_weight=w) for w in _sorted_draw_weights(KEY, [0, 1, 2], y, s32)]
    np.testing.assert_allclose(np.asarray(res.draws[:3, 0], np.float64), expected, rtol=1e-5)
    assert res.estimate[0] == pytest.approx(roc_auc_score(y, s32), rel=1e-5)  # float32 sums over 10^4 samples


def test_bootstrap_draws_in_sorted_order_keep_the_systems_paired_and_match_scikit_learn():
    # Two systems with real-valued scores (few ties: the listed tie pairs) and a third with rounded scores (many
    # ties: every tie end): each draw gives every system the same sample weights, the first system's sort order
    # assigning them; scikit-learn scores each system on those weights.
    rng = np.random.default_rng(7)
    n = 3000
    y = rng.integers(0, 2, n)
    s = [rng.normal(size=n) + y, 0.5 * rng.normal(size=n) + y]
    s[1][:200] = s[1][200:400]  # 200 tied pairs, of mixed classes
    s.append(np.round(s[0]))
    s = [x.astype(np.float32).astype(np.float64) for x in s]
    res = bootstrap_metric(Systems(y, scores={"a": s[0], "b": s[1], "c": s[2]}, score_type="llr"), "auc", key=KEY,
                           settings=MonteCarloSettings(num_draws=100))
    weights = _sorted_draw_weights(KEY, [0, 17, 99], y, s[0])
    expected = [[roc_auc_score(y, x, sample_weight=w) for x in s] for w in weights]
    np.testing.assert_allclose(np.asarray(res.draws)[[0, 17, 99]], expected, rtol=2e-6)


@pytest.mark.parametrize("n", [1, 5, 64, 65, 1000, 100_003])
def test_prefix_sums_match_a_float64_running_sum(n):
    rng = np.random.default_rng(n)
    x = rng.exponential(size=(3, n))
    got = np.asarray(jax.jit(prefix_sums)(jnp.asarray(x, jnp.float32)), np.float64)
    expected = np.cumsum(x, -1)
    # Float32 sums of at most 64 terms a block plus a tree over the blocks: a few eps of the total.
    np.testing.assert_allclose(got, expected, rtol=0, atol=4e-6 * expected[:, -1:].max())


def test_tied_pairs_listed_or_every_tie_end_give_scikit_learns_auc():
    # Real-valued scores with a few ties read the listed tied pairs; rounded scores overflow the list and read every
    # tie end; a sort whose count says "overflowed" must give the same AUC through the other branch.
    rng = np.random.default_rng(5)
    auc_of = jax.jit(sorted_weighted_auc)  # one program for both data sets and both branches
    for s_of in (lambda z: z, lambda z: np.round(z * 2) / 2):
        n = 2000
        y = rng.integers(0, 2, n)
        s = s_of(rng.normal(size=n) + y)
        s[:100] = s[100:200]
        s = s.astype(np.float32)
        weights = rng.exponential(size=(4, n))
        ranked = jax.jit(sort_scores)(jnp.asarray(y), jnp.asarray(s))
        expected = [roc_auc_score(y, s, sample_weight=w) for w in weights]
        for r in (ranked, ranked._replace(num_tied_pairs=jnp.int32(n * n))):
            np.testing.assert_allclose(np.asarray(auc_of(r, jnp.asarray(weights, jnp.float32))),
                                       expected, rtol=2e-6)
    assert int(ranked.num_tied_pairs) > ranked.tied_class1.shape[0]  # the rounded scores overflowed the list


@pytest.mark.parametrize("n, spread", [(2000, 2.0), (2**19, 0.0)])
def test_the_count_of_tied_pairs_saturates_exactly_past_the_list(n, spread):
    # The count is a prefix sum of each class-1 position's tied class-0 samples (each capped at the list's capacity
    # + 1), saturated at the capacity + 1: a numpy int64 count is the reference.  All 2^19 scores tied: 2^18 class-1
    # positions each with 2^18 class-0 ties, capped at 32769, sum to 8.6e9 > 2^32 (the wrap itself is tested below,
    # where a wrapped running sum would land under the limit).
    from ecjax._src.scores.roc import tie_capacity

    rng = np.random.default_rng(0)
    y = (np.arange(n) % 2) if spread == 0 else rng.integers(0, 2, n)
    s = np.zeros(n) if spread == 0 else np.round(rng.normal(size=n) * spread)
    cap = tie_capacity(n)
    _, group = np.unique(s, return_inverse=True)
    class0_in_group = np.bincount(group, weights=(y == 0)).astype(np.int64)
    per_class1 = np.minimum(class0_in_group[group[y == 1]], cap + 1)
    got = jax.jit(sort_scores)(jnp.asarray(y), jnp.asarray(s, jnp.float32)).num_tied_pairs  # one program
    assert int(got) == min(int(per_class1.sum()), cap + 1)


@pytest.mark.parametrize("counts, limit", [
    ([5, 2**31 - 1, 2**31 - 1, 3, 7, 1], 100),  # wraps at the third entry, to 3 + 5 - 2: a plain min would say 6
    ([2**31 - 1] * 5 + [0, 9], 2**31 - 1),  # wraps twice
    ([1, 2, 3, 4], 7),  # saturates without wrapping
    ([0, 0, 0], 1),
])
def test_saturated_prefix_sums_are_exact_past_a_wrap(counts, limit):
    # The tie count's running sum in uint32: after it wraps, every later entry is past the limit.  Reference: numpy's
    # int64 cumsum; the first case gives [5, 100, 3, 6, 13, 14] with a running sum that wraps and is then capped.
    from ecjax._src.scores.roc import _saturated_prefix_sums

    expected = np.minimum(np.cumsum(np.asarray(counts, np.int64)), limit)
    got = jax.jit(_saturated_prefix_sums, static_argnums=1)(jnp.asarray(counts, jnp.int32), limit)
    np.testing.assert_array_equal(np.asarray(got, np.int64), expected)


def test_a_first_bootstrap_call_compiles_two_programs():
    # Issue 33.3: a first call used to compile about 20 programs (eager key words, the mean, each error, the HDI);
    # now the draws and the summaries are one program each.  New sizes (N = 777, 1237 draws): nothing cached.
    import logging

    compiled = []

    class Counter(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("Finished XLA compilation"):
                compiled.append(record.getMessage().split(" in ")[0])

    y, _, lp = _binary(777, seed=8)
    counter, logger = Counter(), logging.getLogger("jax")
    logger.addHandler(counter)
    try:
        with jax.log_compiles(True):
            post = bootstrap_metric(Systems(y, scores=lp), "auc", key=KEY,
                                    settings=MonteCarloSettings(num_draws=1237))
    finally:
        logger.removeHandler(counter)
    assert len(compiled) <= 2 and any("_bootstrap_draws" in c for c in compiled), compiled
    assert post.num_draws == 1237
    np.testing.assert_allclose(post.estimate[0], roc_auc_score(y, lp[:, 1] - lp[:, 0]), rtol=1e-6)


def test_draw_until_stops_where_the_closed_form_error_of_a_bernoulli_mean_meets_the_target():
    rng_p = 0.3

    def draw(start, count):  # Bernoulli(0.3) draws that depend only on their index
        return np.array([np.random.default_rng(i).random() < rng_p for i in range(start, start + count)])

    def errors(x):
        p = x.mean()
        return np.array([np.sqrt(p * (1 - p) / len(x))])

    out = draw_until(draw, errors, target=0.01, first_round=200, cap=50_000, join=np.concatenate, multiple=100)
    need = rng_p * (1 - rng_p) / 0.01**2  # 2100 draws for the closed-form error to reach 0.01
    assert out.met and out.max_error <= 0.01 and out.num_draws % 100 == 0
    assert 0.8 * need <= out.num_draws <= 2.0 * need, out.num_draws
    np.testing.assert_array_equal(out.draws, draw(0, out.num_draws))  # rounds extend the draws, in order
    capped = draw_until(draw, errors, target=0.001, first_round=200, cap=1000, join=np.concatenate)
    assert capped.num_draws == 1000 and not capped.met
    assert draws_needed(0.02, 100, 0.01) == 400 and draws_needed(0.005, 100, 0.01) == 100


# Slow lane (about 13 s); see test_default_draws_stop_early_for_a_clear_winner_and_one_system for the default lane.
@pytest.mark.slow
def test_adaptive_draws_extend_the_fixed_draws_and_agree_within_monte_carlo_error():
    y, s, lp_a = _binary(300, seed=4)
    _, _, lp_b = _binary(300, seed=5, noise=0.4, base=(y, s))
    systems = Systems(y, scores={"a": lp_a, "b": lp_b})
    adaptive = bootstrap_metric(systems, "auc", key=KEY, settings=MonteCarloSettings(mc_error=0.01))
    precision = adaptive.info["precision"]
    assert precision["met"] and adaptive.info["num_draws"] == adaptive.num_draws
    assert max(np.max(adaptive.errors["p_best"]), np.max(adaptive.errors["pairwise"])) <= 0.01
    # The same key with that many fixed draws: the same draws (counter-based), so the same answer.
    fixed = bootstrap_metric(systems, "auc", key=KEY, settings=MonteCarloSettings(num_draws=adaptive.num_draws))
    np.testing.assert_array_equal(np.asarray(fixed.draws), np.asarray(adaptive.draws))
    # Another key and 4x the draws: P(best) within four combined Monte Carlo errors.
    other = bootstrap_metric(systems, "auc", key=jax.random.key(9),
                             settings=MonteCarloSettings(num_draws=4 * adaptive.num_draws))
    z = (adaptive.p_best - other.p_best) / np.hypot(adaptive.errors["p_best"], other.errors["p_best"])
    assert np.all(np.abs(z) < 4), z


def test_default_draws_stop_early_for_a_clear_winner_and_one_system():
    y, s, lp_a = _binary(300, seed=6)
    lp_b = np.log(np.full_like(lp_a, 0.5))  # every score tied: AUC 1/2 under any weights
    clear = bootstrap_metric(Systems(y, scores={"good": lp_a, "chance": lp_b}), "auc", key=KEY)
    assert clear.num_draws == 1000 and clear.info["precision"]["met"] and clear.p_best[0] == 1.0
    single = bootstrap_metric(Systems(y, scores=lp_a), "auc", key=KEY)
    assert single.num_draws == 1000  # nothing to make precise: one round


# Slow lane (about 16 s); the adaptive draws of the bootstrap are checked in the default lane by
# test_default_draws_stop_early_for_a_clear_winner_and_one_system.
@pytest.mark.slow
def test_compare_results_to_a_precision_meets_it_and_agrees_with_the_fixed_draws():
    from ecjax.prob import compare_results

    rng = np.random.default_rng(11)
    scores = 0.8 + 0.02 * rng.normal(size=(3, 30)) + np.array([[0.0], [0.004], [0.008]])
    adaptive = compare_results(scores, key=KEY, mc_error=0.005, num_draws=50_000)
    s = adaptive.draws.shape[0]
    assert 1000 <= s <= 50_000
    # The closed-form error sqrt(p (1 - p) / S) of every P(best) at the draws used meets the target.
    assert np.all(np.sqrt(adaptive.p_best * (1 - adaptive.p_best) / s) <= 0.005)
    fixed = compare_results(scores, key=jax.random.key(5), num_draws=40_000)
    z = (adaptive.p_best - fixed.p_best) / np.hypot(adaptive.errors["p_best"], fixed.errors["p_best"])
    assert np.all(np.abs(z) < 4), z
    clear = compare_results(scores + np.array([[0.0], [0.0], [0.2]]), key=KEY, mc_error=0.005)
    assert clear.draws.shape[0] == 1000 and clear.p_best[2] == 1.0  # a clear winner: one round


def test_compare_results_default_draws_stop_early_for_a_clear_winner_and_draw_more_on_a_close_call():
    # Issue 33.2: by default compare_results draws until every P(best) has the binomial error sqrt(p (1 - p) / S)
    # <= 0.005 (adaptive_draws.DEFAULT_MC_ERROR), from 1000 draws, at most 20 000 (before: always 20 000).
    from ecjax.prob import compare_results
    from ecjax._src.prob.adaptive_draws import DEFAULT_MC_ERROR

    rng = np.random.default_rng(12)
    noise = 0.02 * rng.normal(size=(2, 12))
    clear = compare_results(0.8 + noise + np.array([[0.0], [0.2]]), key=KEY)
    assert clear.num_draws == 1000 and clear.p_best[1] == 1.0 and clear.precision["met"]
    # Fold differences (e, -e): their mean is 0, so the posterior of the difference is a t centred on 0 and
    # P(best) = 1/2 exactly; the binomial error needs 0.25 / 0.005^2 = 10 000 draws.
    a = 0.8 + noise[0]
    e = 0.01 * np.arange(1, 7)
    pair = np.stack([a, a + np.concatenate([e, -e])])
    close = compare_results(pair, key=KEY)
    need = 0.25 / DEFAULT_MC_ERROR**2
    assert 0.8 * need <= close.num_draws <= 20_000, close.num_draws
    assert close.precision["met"] and close.num_draws % 1000 == 0  # rounds of whole first-round blocks
    assert np.all(np.sqrt(close.p_best * (1 - close.p_best) / close.num_draws) <= DEFAULT_MC_ERROR)
    assert abs(close.p_best[0] - 0.5) < 4 * np.sqrt(0.25 / close.num_draws)
    record = close.to_dict()
    assert record["num_draws"] == close.num_draws and record["precision"]["cap"] == 20_000
    assert f"({close.num_draws} independent draws)" in close.summary()
    assert "drawn until every P(best)'s Monte Carlo error <= 0.005 (at most 20000): met" in close.summary()
    # num_draws alone is still that many, fixed (as many as above: the compiled shapes are shared); another key's
    # fixed draws agree with the adaptive ones within their Monte Carlo errors (the slow lane has three systems).
    fixed = compare_results(pair, key=jax.random.key(8), num_draws=close.num_draws)
    assert fixed.num_draws == close.num_draws and fixed.precision is None and fixed.to_dict()["draws"] == "fixed"
    z = (close.p_best - fixed.p_best) / np.hypot(close.errors["p_best"], fixed.errors["p_best"])
    assert np.all(np.abs(z) < 4), z

