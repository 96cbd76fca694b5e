"""Posterior draws of ``compare`` in fixed memory: blocks, chunks, index sizes, progress.

``compare`` makes its draws in blocks whose random numbers come from
``fold_in(key, block)``; ``chunk_size`` only groups blocks into compiled
steps.  So every chunk size must give bit-identical draws, no block-level
array may come near ``2^31`` elements (the int32 limit the former
``(S, M, K, D)`` count array crossed at ``10^5`` draws of 100 x 100 costs),
and the yields must still match independent numpy computations.
"""


import numpy as np
import pytest

import jax

import ecjax
from ecjax import prob
from ecjax._src.prob import draw_plan

KEY = jax.random.key(11)
INT32_LIMIT = 2**31


def _scores(rng, labels, k, sharpness):
    return [rng.normal(size=(labels.shape[0], k)) + 3.0 * q * np.eye(k)[labels] for q in sharpness]


def _same(a, b):
    for name in ("yields", "expected_costs", "normalized_expected_costs"):
        np.testing.assert_array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name)), err_msg=name)
    np.testing.assert_array_equal(a.p_best, b.p_best)
    np.testing.assert_array_equal(a.expected_yield, b.expected_yield)
    assert a.doubt.as_dict() == b.doubt.as_dict()


# ~40 s on two cores; the default lane checks the same invariance with per-draw decisions at the command line
# (tests/test_cli_progress.py: chunked and unchunked runs print the same table) and exactly with fixed decisions above.
@pytest.mark.slow
def test_per_draw_bayes_decisions_identical_for_every_chunk_size():
    # The brief's workload at reduced size: 6000 draws of 20 x 20 cost matrices, each making the Bayes
    # decisions of 3 systems on 500 samples; chunks of one block, of two blocks, and one chunk.
    rng = np.random.default_rng(5)
    n, k = 500, 20
    labels = rng.integers(0, k, n)
    scores = _scores(rng, labels, k, (1.0, 0.98, 0.96))
    costs = prob.intervals(0.5 * (1 - np.eye(k)), 2.0 * (1 - np.eye(k)), kind="cost")
    one = prob.compare(prob.Systems(labels, scores=scores, score_type="logits", decision_rule="per_draw", paired=False),
                       costs=costs, key=KEY, settings=prob.MonteCarloSettings(num_draws=6000))
    block = one.info["draw_block"]
    assert one.info["num_chunks"] == 1 and 2 < 6000 // block  # several blocks, so chunking matters
    for chunk in (block, 2 * block - 7):  # the second is rounded up to 2 whole blocks
        res = prob.compare(prob.Systems(labels, scores=scores, score_type="logits", decision_rule="per_draw",
                                        paired=False), costs=costs, key=KEY, settings=prob.MonteCarloSettings(chunk_size=chunk, num_draws=6000))
        assert res.info["num_chunks"] > 1
        _same(res, one)
    # The draws mean what they say: the yield of draw s is -sum_ij c_s,ij P_s,i R_s,m,ij; its Monte Carlo
    # mean over the draws is the expected yield reported for per-draw decisions.
    np.testing.assert_allclose(one.expected_yield, np.asarray(one.yields, np.float64).mean(0), rtol=1e-12)
    assert 0.0 < one.doubt.doubt_all < 1.0


# Float32 rounding a backend may change between two runs of the same compiled programs on the same inputs: the
# H100 gave yields 1-2 units in the last place apart (2320 of 60 000) for two chunk sizes, while every block ran the
# same executables (no program is compiled for a new chunk size: checked with jax_log_compiles).  A yield is a sum
# of K D = 9 products; a different order or fused multiply-add changes it by at most ~K D 2^-24 of the sum of the
# magnitudes of its terms (Higham, Accuracy and Stability, eq. 3.5): with costs below ~3 and yields above ~0.2 here,
# about 9 x 3 / 0.2 / 2 ~ 64 units of float32's eps relative to the yield.
ULPS = 64


def _same_up_to_rounding(a, b):
    """Equal draws up to :data:`ULPS` float32 units in the last place; P(best) and the doubt equal up to the draws
    whose two best yields are that close (only those can change their winner)."""
    tol = ULPS * np.finfo(np.float32).eps
    for name in ("yields", "expected_costs", "normalized_expected_costs"):
        np.testing.assert_allclose(np.asarray(getattr(a, name)), np.asarray(getattr(b, name)), rtol=tol, atol=0,
                                   err_msg=name)
    y = np.sort(np.asarray(a.yields, np.float64), axis=1)
    near = np.mean(y[:, -1] - y[:, -2] <= 2 * tol * np.abs(y[:, -1]))
    assert np.all(np.abs(a.p_best - b.p_best) <= near)
    for name, value in a.doubt.as_dict().items():
        assert abs(value - b.doubt.as_dict()[name]) <= near, name
    np.testing.assert_array_equal(a.expected_yield, b.expected_yield)  # the closed form, on the host


def test_fixed_decisions_identical_for_every_chunk_size_with_uncertain_priors():
    rng = np.random.default_rng(8)
    n, k = 400, 3
    labels = rng.integers(0, k, n)
    dec = np.stack([np.where(rng.random(n) < acc, labels, rng.integers(0, k, n)) for acc in (0.8, 0.78)])
    kw = dict(costs=prob.truncated_normal(1 - np.eye(k), 0.4, low=0.0, kind="cost"),
              priors=prob.dirichlet_priors([4.0, 3.0, 3.0]), key=KEY)
    one = prob.compare(prob.Systems(labels, dec), **kw, settings=prob.MonteCarloSettings(num_draws=30_000))
    assert one.info["num_chunks"] == 1
    several = prob.compare(prob.Systems(labels, dec), **kw, settings=prob.MonteCarloSettings(
        num_draws=30_000, chunk_size=one.info["draw_block"] // 3))
    assert several.info["num_chunks"] > 1
    _same_up_to_rounding(several, one)
    if jax.default_backend() == "cpu":  # on the CPU the programs run bit for bit alike: exact equality
        _same(several, one)


def test_compare_counts_chunks_and_closed_form():
    counts = np.array([[[50, 10], [5, 35]], [[45, 15], [3, 37]]])
    kw = dict(costs=prob.cost_ratio(1, 10), key=KEY, concentration=0.5)
    one = prob.compare_counts(counts, **kw, settings=prob.MonteCarloSettings(num_draws=50_000))
    two = prob.compare_counts(counts, **kw, settings=prob.MonteCarloSettings(num_draws=50_000,
                                                                            chunk_size=one.info["draw_block"]))
    _same(one, two)
    # E[yield_m] = -(E[P_0] E[R_m,01] + E[r] E[P_1] E[R_m,10]) with Dirichlet means (numpy closed form).
    from ecjax._src.prob.rates import default_class_concentration

    n_i = counts.sum(-1).mean(0)
    a_p = default_class_concentration(2)
    p = (n_i + a_p) / (n_i.sum() + 2 * a_p)
    r = (counts + 0.5) / (counts + 0.5).sum(-1, keepdims=True)
    mean_ratio = (10 - 1) / np.log(10)
    closed = -(p[0] * r[:, 0, 1] + mean_ratio * p[1] * r[:, 1, 0])
    np.testing.assert_allclose(one.expected_yield, closed, rtol=1e-6)


def test_block_arithmetic_stays_far_below_int32_at_the_target_scale():
    # 10^6 draws of 100 x 100 cost matrices, Bayes decisions of 3 systems on 10^4 x 100 scores: the former
    # code held all (S, M, K, D) = 3 x 10^10 counts at once (and an int32 index past 2^31).
    s, m, k, n = 10**6, 3, 100, 10**4
    assert s * m * k * k > INT32_LIMIT and s * m * n > INT32_LIMIT
    elements = m * k * k + k * k  # the per-draw cells compare() plans with (rates and utilities)
    for chunk in (None, 1, 5000, 10**6):
        plan = draw_plan.plan_draws(s, elements, chunk, utility_cells=k * k)
        assert plan.block * elements <= draw_plan._BLOCK_ELEMENTS < INT32_LIMIT
        assert plan.num_blocks * plan.block >= s > (plan.num_blocks - 1) * plan.block
        per_chunk = plan.blocks_per_chunk
        assert (plan.num_chunks - 1) * per_chunk < plan.num_blocks <= plan.num_chunks * per_chunk
        if chunk is not None:
            assert plan.chunk == plan.block * max(1, min(plan.num_blocks, -(-chunk // plan.block)))
        if chunk is None:  # the automatic chunk's utility draws stay bounded whatever the number of draws
            assert plan.chunk * k * k <= max(draw_plan._CHUNK_ELEMENTS, plan.block * k * k)
    # The block, hence every random number, depends on S and the shape, not on the chunk size.
    assert len({draw_plan.plan_draws(s, elements, c).block for c in (None, 1, 777, 10**6)}) == 1


def test_progress_reports_every_chunk():
    events = []

    class Bar:
        def __init__(self, total):
            events.append(("total", total))

        def update(self, n):
            events.append(("update", n))

        def close(self):
            events.append(("close",))

    counts = np.array([[[30, 10], [5, 25]], [[28, 12], [4, 26]]])
    res = prob.compare_counts(counts, costs=prob.cost_ratio(1, 5), key=KEY,
                              settings=prob.MonteCarloSettings(num_draws=150_000, chunk_size=1, progress=Bar))
    chunks = res.info["num_chunks"]
    assert chunks > 1
    assert events == [("total", chunks)] + [("update", 1)] * chunks + [("close",)]


def test_evaluate_draws_chunked_matches_numpy():
    rng = np.random.default_rng(3)
    s, m, k, d = 1000, 3, 4, 5
    u = rng.normal(size=(s, k, d)).astype(np.float32)
    w = rng.random(size=(s, m, k, d)).astype(np.float32)
    p = rng.dirichlet(np.ones(k), size=s).astype(np.float32)
    r = w / w.sum(-1, keepdims=True)
    reference = np.einsum("sij,si,smij->sm", u.astype(np.float64), p, r)
    whole = prob.evaluate_draws(u, w, p)
    for chunk in (1, 7, 333, 5000):
        parts = prob.evaluate_draws(u, w, p, chunk_size=chunk)
        for a, b in zip(parts, whole):  # the same draws, up to float32 rounding of the sums
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(whole[0]), reference, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(whole[1]), -reference, rtol=1e-5, atol=1e-6)
    with pytest.raises(ecjax.InputError, match="chunk_size"):
        prob.evaluate_draws(u, w, p, chunk_size=0)


@pytest.mark.slow  # about a minute on two CPU cores: 2^20 draws x 2 systems x 1024 samples of Bayes decisions
def test_a_million_per_draw_decisions_past_int32():
    rng = np.random.default_rng(2)
    n = 1024
    labels = rng.integers(0, 2, n)
    llr = [2.0 * q * (labels - 0.5) * 2 + rng.normal(size=n) for q in (1.0, 0.9)]
    big = prob.compare(prob.Systems(labels, scores=llr, score_type="llr", decision_rule="per_draw"), key=KEY,
                       costs=prob.cost_ratio(0.5, 4), priors=[0.7, 0.3], decompose=False,
                       settings=prob.MonteCarloSettings(num_draws=2**20))
    assert 2**20 * n * 2 > np.iinfo(np.int32).max  # 2^31 decisions: one more than int32 can count
    small = prob.compare(prob.Systems(labels, scores=llr, score_type="llr", decision_rule="per_draw"),
                         key=jax.random.key(1), costs=prob.cost_ratio(0.5, 4), priors=[0.7, 0.3], decompose=False,
                         settings=prob.MonteCarloSettings(num_draws=20_000))
    se = np.asarray(small.yields).std(0) / np.sqrt(20_000)
    assert np.all(np.abs(big.expected_yield - small.expected_yield) < 5 * se)
    assert np.all(np.isfinite(np.asarray(big.normalized_expected_costs)))
