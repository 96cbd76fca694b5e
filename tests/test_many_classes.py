"""Many classes (issue 33.4): structured costs and sparse counts, K far above 10^4, memory O(N + K).

References are independent numpy computations in float64 (the EC as the prior-weighted mean cost per class, the
error rate weighted by priors) and, at K = 50, the dense path, which both run.
"""

import tracemalloc

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import ecjax
from ecjax import costs
from ecjax._src import sparse_metrics
from ecjax._src import inputs as v


def _data(k, n, seed=0, abstain=False):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    wrong = rng.integers(0, k + abstain, n)
    d = np.where(rng.random(n) < 0.6, y, wrong)
    return rng, y, d


def _numpy_ec(y, d, cost_of, priors=None):
    """EC = sum_i P_i (mean cost over the samples of class i), in float64 (Ferrer 2022a, eq. 1-2)."""
    k = len(cost_of["wrong"])
    c = np.where(d == y, cost_of["correct"][y], cost_of["wrong"][y])
    if cost_of.get("abstain") is not None:
        c = np.where(d == k, cost_of["abstain"][y], c)
    n_i = np.bincount(y, minlength=k).astype(float)
    sums = np.bincount(y, weights=c, minlength=k)
    p = n_i / n_i.sum() if priors is None else priors
    return float(np.sum(p[n_i > 0] * sums[n_i > 0] / n_i[n_i > 0]))


def _structured(rng, k, abstain=True):
    fields = {"wrong": rng.uniform(1, 3, k), "correct": rng.uniform(0, 0.5, k),
              "abstain": rng.uniform(0.2, 1, k) if abstain else None}
    return fields, costs.class_costs(fields["wrong"], correct=fields["correct"], abstain=fields["abstain"])


@pytest.mark.parametrize("deployment", [False, True])
def test_small_k_sparse_structured_and_dense_agree_with_numpy(deployment):
    k = 50
    rng, y, d = _data(k, 3000, abstain=True)
    fields, sc = _structured(rng, k)
    p = rng.dirichlet(np.ones(k)) if deployment else None
    ref = _numpy_ec(y, d, fields, p)
    table = ecjax.sparse_confusion_matrix(y, d, num_classes=k, num_decisions=k + 1)
    dense_counts = ecjax.confusion_matrix(y, d, num_classes=k, num_decisions=k + 1)
    # Every pairing of sparse / dense counts with structured / dense costs (dense with dense: the existing path,
    # and the sparse module's own when called directly).
    for counts, c in ((table, sc), (table, sc.dense()), (dense_counts, sc), (dense_counts, sc.dense())):
        np.testing.assert_allclose(float(ecjax.expected_cost(counts, c, priors=p)), ref, rtol=2e-6)
        np.testing.assert_allclose(float(sparse_metrics.expected_cost(counts, c, priors=p)), ref, rtol=2e-6)
    for counts in (table, dense_counts):
        u = costs.costs_to_utilities(sc)
        np.testing.assert_allclose(float(ecjax.utility_yield(counts, u, priors=p)), -ref, rtol=2e-6)
    # NEC: the naive EC min_d sum_i P_i c_id from the dense float64 matrix.
    dense64 = np.asarray(sc.dense(), np.float64)
    w = np.bincount(y, minlength=k) / len(y) if p is None else p
    naive = np.min(w @ dense64)
    for counts in (table, dense_counts):
        np.testing.assert_allclose(float(ecjax.normalized_expected_cost(counts, sc, priors=p)), ref / naive,
                                   rtol=2e-6)


def test_small_k_accuracy_of_a_table_of_two_systems():
    k = 50
    rng, y, d = _data(k, 3000)
    d2 = np.where(rng.random(len(y)) < 0.3, y, rng.integers(0, k, len(y)))
    table = ecjax.sparse_confusion_matrix(y, np.stack([d, d2]), num_classes=k)
    assert table.num_systems == 2
    acc = [np.mean(x == y) for x in (d, d2)]
    np.testing.assert_allclose(np.asarray(ecjax.accuracy(table)), acc, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ecjax.error_rate(table)), 1 - np.asarray(acc), rtol=1e-5)
    present = np.unique(y)
    bal = [np.mean([np.mean(x[y == i] == i) for i in present]) for x in (d, d2)]
    np.testing.assert_allclose(np.asarray(ecjax.balanced_accuracy(table)), bal, rtol=1e-6)
    dense = ecjax.confusion_matrix(y, np.stack([d, d2]), num_classes=k)
    np.testing.assert_allclose(np.asarray(ecjax.balanced_error_rate(table)),
                               np.asarray(ecjax.balanced_error_rate(dense)), rtol=1e-5)


def test_structured_transforms_equal_the_dense_ones():
    rng = np.random.default_rng(1)
    k = 6
    _, sc = _structured(rng, k)
    s = rng.uniform(0.5, 2, k)
    np.testing.assert_allclose(np.asarray(costs.scale_rows(sc, s).dense()), np.asarray(sc.dense()) * s[:, None],
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(costs.scale_rows(sc.dense(), s)), np.asarray(sc.dense()) * s[:, None],
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(costs.normalize_rows(sc).dense()), np.asarray(costs.normalize_rows(
        sc.dense())), atol=1e-7)
    np.testing.assert_array_equal(np.asarray(costs.zero_one(k, 0.3, dense=False).dense()),
                                  np.asarray(costs.zero_one(k, 0.3)))
    # The naive EC of structured costs (O(K)) is that of the dense matrix.
    p = rng.dirichlet(np.ones(k))
    np.testing.assert_allclose(float(ecjax.naive_expected_cost(sc, jnp.asarray(p, jnp.float32))),
                               np.min(p @ np.asarray(sc.dense(), np.float64)), rtol=1e-6)


def test_weighted_sparse_counts_equal_the_dense_weighted_ec():
    k = 30
    rng, y, d = _data(k, 2000)
    w = rng.uniform(0, 3, len(y))
    fields, sc = _structured(rng, k, abstain=False)
    table = ecjax.sparse_confusion_matrix(y, d, num_classes=k, sample_weight=w)
    c = np.where(d == y, fields["correct"][y], fields["wrong"][y])
    np.testing.assert_allclose(float(ecjax.expected_cost(table, sc)), np.sum(w * c) / np.sum(w), rtol=2e-6)


@pytest.mark.parametrize("k", [20_000, 100_000])
def test_many_classes_zero_one_and_per_class_costs_against_numpy(k):
    n = 50_000
    rng, y, d = _data(k, n, seed=2)
    table = ecjax.sparse_confusion_matrix(y, d, num_classes=k)
    assert table.cells.shape[0] <= n
    # 0-1 costs with data priors: the error rate; with deployment priors: the prior-weighted per-class error rate.
    np.testing.assert_allclose(float(ecjax.expected_cost(table, costs.zero_one(k, dense=False))), np.mean(d != y),
                               rtol=1e-6)
    present = np.bincount(y, minlength=k) > 0
    p = np.where(present, rng.uniform(0.5, 1.5, k), 0.0)
    p /= p.sum()
    n_i = np.bincount(y, minlength=k)
    err_i = np.bincount(y, weights=(d != y), minlength=k) / np.maximum(n_i, 1)
    np.testing.assert_allclose(float(ecjax.expected_cost(table, costs.zero_one(k, dense=False), priors=p)),
                               np.sum(p * err_i), rtol=1e-5)
    # A per-class miss-cost vector: the per-class cost sums over N.
    miss = rng.uniform(1, 10, k)
    np.testing.assert_allclose(float(ecjax.expected_cost(table, costs.class_costs(miss))),
                               np.sum(np.bincount(y, weights=miss[y] * (d != y), minlength=k)) / n, rtol=1e-5)
    np.testing.assert_allclose(float(ecjax.accuracy(table)), np.mean(d == y), rtol=1e-6)


def test_many_classes_memory_is_o_of_n_plus_k():
    """K = 10^5, N = 5 * 10^4: the host allocations (tracemalloc) and the compiled kernel's buffers (XLA's memory
    analysis) stay within a few bytes per sample and class; a dense matrix would take 4 * 10^10 bytes."""
    k, n = 100_000, 50_000
    _, y, d = _data(k, n, seed=3)
    zero_one = costs.zero_one(k, dense=False)
    tracemalloc.start()
    table = ecjax.sparse_confusion_matrix(y, d, num_classes=k)
    ec = float(ecjax.expected_cost(table, zero_one))
    _, host_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert ec == pytest.approx(np.mean(d != y), rel=1e-6)
    bound = 64 * (n + k)  # bytes: a few float64 / int64 vectors of length N or K
    assert host_peak < bound, host_peak
    compiled = jax.jit(sparse_metrics.table_expected_value, static_argnames="num_classes").lower(
        table.cells, table.counts, zero_one, None, num_classes=k).compile()
    stats = compiled.memory_analysis()
    device = stats.temp_size_in_bytes + stats.argument_size_in_bytes + stats.output_size_in_bytes
    assert device < bound, device


def test_a_dense_matrix_too_large_is_refused_with_the_fix(monkeypatch):
    # Beyond int32 cells: today's 10^5 classes.
    with pytest.raises(v.InputError, match=r"dense=False.*sparse_confusion_matrix"):
        costs.zero_one(100_000)
    rng, y, d = _data(100_000, 1000)
    with pytest.raises(v.InputError, match=r"count matrix takes 37\.3 GiB.*structured costs"):
        ecjax.confusion_matrix(y, d, num_classes=100_000)
    with pytest.raises(v.InputError, match="sparse counts"):
        costs.class_costs(np.ones(100_000)).dense()
    # Within int32 cells, but more than half of the available memory (here said to be 64 MiB): 4000^2 float32.
    monkeypatch.setattr(v, "available_memory_bytes", lambda: 64 << 20)
    with pytest.raises(v.InputError, match=r"takes 0\.1 GiB, more than the 0\.0 GiB .*50% of the 0\.1 GiB"):
        costs.zero_one(4000)
    assert costs.zero_one(4000, dense=False).num_decisions == 4000


def test_structured_cost_and_sparse_count_inputs_are_checked():
    k = 5
    _, y, d = _data(k, 200)
    table = ecjax.sparse_confusion_matrix(y, d, num_classes=k)
    with pytest.raises(v.InputError, match=r"`costs` are for 5 classes and 6 decisions, the counts have 5 classes"):
        ecjax.expected_cost(table, costs.zero_one(k, 0.5, dense=False))
    with pytest.raises(v.InputError, match=r"`costs` must have trailing shape \(5, 5\)"):
        ecjax.expected_cost(table, np.ones((4, 4)))
    with pytest.raises(v.InputError, match="K >= 2"):
        costs.class_costs(1.0)
    with pytest.raises(v.InputError, match="broadcast"):
        costs.class_costs(np.ones(3), correct=np.zeros(4))
    with pytest.raises(v.InputError, match="costs.wrong"):
        costs.class_costs([1.0, np.nan])
    absent = ecjax.sparse_confusion_matrix([0, 0, 1], [0, 1, 1], num_classes=3)
    with pytest.raises(v.InputError, match="class 2 has no test samples"):
        ecjax.expected_cost(absent, costs.zero_one(3, dense=False), priors=[0.2, 0.3, 0.5])
    with pytest.raises(v.InputError, match="naive"):
        ecjax.normalized_expected_cost(table, costs.class_costs(np.zeros(k)))  # every decision costs 0
    with pytest.raises(v.InputError, match="`dense` must be True or False"):
        costs.zero_one(3, dense=0)


# ------------------------------------------------------------------ prob.compare with fixed structured costs

def _systems_data(k, n, seed, abstain=False):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    dec = np.stack([np.where(rng.random(n) < q, y, rng.integers(0, k + abstain, n)) for q in (0.6, 0.62, 0.5)])
    return rng, y, dec


# Unpaired (about 8 s) in the slow lane; the paired case, which shares its merged-cell source, stays in the default one.
@pytest.mark.parametrize("paired", [pytest.param(False, marks=pytest.mark.slow), True])
def test_compare_structured_costs_equal_the_dense_matrix_draw_for_draw(paired):
    """K = 20: the merged cells counted from the decisions are those the dense matrix merges to, in the same
    order, so the draws are the same numbers (the dense path is the reference where both run)."""
    from ecjax import prob

    k = 8
    rng, y, dec = _systems_data(k, 400, seed=4, abstain=True)
    sc = costs.class_costs(rng.uniform(1, 3, k), correct=rng.uniform(0, 0.5, k), abstain=0.6)
    settings = prob.MonteCarloSettings(num_draws=200)
    out = [prob.compare(prob.Systems(y, dec, paired=paired), costs=c, key=jax.random.key(1), settings=settings)
           for c in (sc.dense(), sc)]
    np.testing.assert_array_equal(out[1].p_best, out[0].p_best)
    np.testing.assert_allclose(out[1].expected_yield, out[0].expected_yield, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(out[1].yields), np.asarray(out[0].yields))
    np.testing.assert_allclose(np.asarray(out[1].normalized_expected_costs),
                               np.asarray(out[0].normalized_expected_costs), rtol=1e-6)
    assert out[1].info["merged_cells"] == "3 utility groups per class (of 9 decisions)"


@pytest.mark.parametrize("k", [2000, pytest.param(20_000, marks=pytest.mark.slow(
    reason="K = 2 * 10^4: 4 * 10^4 gamma variates a draw, about 30 s"))])
def test_compare_structured_costs_at_many_classes_closed_form_and_ties(k):
    """K = 2 * 10^3 (and 2 * 10^4 in the slow lane), fixed deployment priors and concentration: the closed-form
    expected yield of each system is
    ``-sum_i P_i E[R_i,wrong] c_i`` with ``E[R_i,wrong] = (n_i,wrong + (K - 1) alpha) / (n_i + K alpha)``, in numpy;
    a system repeated is a tie."""
    from ecjax import prob

    alpha = 0.01
    rng, y, dec = _systems_data(k, k, seed=5)
    dec = np.concatenate([dec, dec[:1]])
    miss = rng.uniform(1, 2, k).astype(np.float32).astype(np.float64)  # costs are float32: no rounding here
    n_i = np.bincount(y, minlength=k)
    p = np.where(n_i > 0, rng.uniform(0.5, 1.5, k), 0.0)
    p = (p / p.sum()).astype(np.float32).astype(np.float64)  # priors are held in float32 too
    result = prob.compare(prob.Systems(y, dec, names=["a", "b", "c", "a again"]), costs=costs.class_costs(miss),
                          priors=p, concentration=alpha, key=jax.random.key(2), decompose=False,
                          settings=prob.MonteCarloSettings(num_draws=100))
    wrong = np.stack([np.bincount(y, weights=(x != y), minlength=k) for x in dec])
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = -np.sum(np.where(n_i > 0, p * miss * (wrong + (k - 1) * alpha) / (n_i + k * alpha), 0.0), -1)
    np.testing.assert_allclose(result.expected_yield, expected, rtol=1e-9)
    assert result.ties == (("a", "a again"),)
    assert result.info["merged_cells"] == f"2 utility groups per class (of {k} decisions)"


def test_compare_structured_costs_with_scores_decide_as_the_dense_matrix():
    """Scores: the Bayes decisions of the structured costs, made once (O(N K)), are those of the dense matrix, and
    so is everything drawn from them (three unpaired systems, logits; the shapes of the test above, so its compiled
    programs serve)."""
    from ecjax import prob

    k = 8
    rng, y, _ = _systems_data(k, 400, seed=4, abstain=True)
    scores = [np.eye(k)[y] * 2.0 + rng.normal(size=(len(y), k)) * s for s in (1.0, 1.2, 1.5)]
    sc = costs.class_costs(rng.uniform(1, 3, k), correct=rng.uniform(0, 0.5, k), abstain=0.6)
    systems = prob.Systems(y, scores=scores, score_type="logits", paired=False)
    out = [prob.compare(systems, costs=c, key=jax.random.key(3), settings=prob.MonteCarloSettings(num_draws=200))
           for c in (sc.dense(), sc)]
    np.testing.assert_array_equal(np.asarray(out[1].yields), np.asarray(out[0].yields))
    np.testing.assert_allclose(out[1].expected_yield, out[0].expected_yield, rtol=1e-12)
    assert out[1].info["decision_rule"] == "expected_utility"


def test_compare_structured_costs_refuses_what_it_cannot_do():
    from ecjax import prob

    rng, y, dec = _systems_data(5, 100, seed=6)
    key = jax.random.key(0)
    zero_one = costs.zero_one(5, dense=False)
    scores = [np.log(np.full((100, 5), 0.2))]
    with pytest.raises(v.InputError, match="decision_rule='per_draw' is not supported with them"):
        prob.compare(prob.Systems(y, scores=scores, decision_rule="per_draw"), costs=zero_one, key=key)
    with pytest.raises(v.InputError, match="`groups` .* is not supported with them"):
        prob.compare(prob.Systems(y, dec, groups=np.arange(100) // 10), costs=zero_one, key=key)
    with pytest.raises(v.InputError, match=r"`costs.wrong` must be"):
        prob.compare(prob.Systems(y, dec), costs=costs.class_costs(np.ones((2, 5))), key=key)
    with pytest.raises(v.InputError, match="correct = wrong"):
        prob.compare(prob.Systems(y, dec), costs=costs.class_costs(np.ones(5), correct=1.0), key=key)
    with pytest.raises(v.InputError, match=r"structured costs .*\.dense\(\)"):
        prob.compare_counts(np.ones((2, 5, 5)), costs=zero_one, key=key)


def test_compare_refuses_dense_counts_too_large_and_says_the_fix(monkeypatch):
    """The dense path holds (M, K, D) float64 counts: 3 x 2000^2 x 8 bytes = 96 MB, refused when said to be more
    than half of the memory available (here 64 MiB); structured costs then run."""
    from ecjax import prob

    k = 2000
    _, y, dec = _systems_data(k, 3000, seed=11)
    monkeypatch.setattr(v, "available_memory_bytes", lambda: 64 << 20)
    with pytest.raises(v.InputError, match=r"`costs`: a dense 2000 x 2000 count matrix \(x 3\) takes 0\.1 GiB.*"
                                           r"zero_one\(K, dense=False\)"):
        prob.compare(prob.Systems(y, dec), costs=np.ones((k, k)) - np.eye(k), key=jax.random.key(0))


@pytest.mark.parametrize("shape, high", [((3000, 4), 50), ((3000, 2), 2**31 - 1), ((7, 1), 3), ((0, 3), 2)])
def test_unique_rows_is_numpy_unique_along_rows(shape, high):
    from ecjax._src.confusion import unique_rows

    rows = np.random.default_rng(7).integers(0, high, shape)
    cells, inverse = unique_rows(rows)
    ref_cells, ref_inverse = np.unique(rows, axis=0, return_inverse=True)
    np.testing.assert_array_equal(cells, ref_cells)
    np.testing.assert_array_equal(inverse, ref_inverse.ravel())


def test_structured_costs_pass_through_jit_and_batch_like_dense_matrices():
    k = 6
    rng, y, d = _data(k, 300, seed=8)
    dec = np.stack([d, np.where(rng.random(len(y)) < 0.5, y, rng.integers(0, k, len(y)))])
    counts = ecjax.confusion_matrix(y, dec, num_classes=k)  # (2, K, K)
    batch = costs.class_costs(rng.uniform(1, 3, (4, k)))  # 4 cost vectors: (4, K) fields
    dense = np.asarray(batch.dense(), np.float64)  # (4, K, K)
    c = np.asarray(counts, np.float64)
    p = c.sum(-1) / c.sum((-2, -1))[:, None]
    ref = np.einsum("mi,mij,bij->mb", p, c / c.sum(-1, keepdims=True), dense)  # sum_ij P_i R_ij c_ij
    np.testing.assert_allclose(np.asarray(ecjax.expected_cost(counts[:, None], batch)), ref, rtol=1e-6)
    jitted = jax.jit(lambda cc, n: ecjax.normalized_expected_cost(n, cc))
    np.testing.assert_allclose(float(jitted(costs.zero_one(k, dense=False), counts[0])),
                               float(ecjax.normalized_expected_cost(counts[0], costs.zero_one(k))), rtol=1e-6)


def test_bayes_decisions_of_structured_costs_equal_the_dense_ones():
    """argmin_d sum_i P(i|x) c_id without the K x D product: the dense matrix's decisions (abstention included),
    and for a miss-cost vector the closed form argmax_d P(d|x) wrong_d."""
    k = 7
    rng = np.random.default_rng(9)
    scores = rng.normal(size=(500, k)) * 2
    _, sc = _structured(rng, k)
    np.testing.assert_array_equal(np.asarray(ecjax.bayes_decisions(scores, sc, score_type="logits")),
                                  np.asarray(ecjax.bayes_decisions(scores, sc.dense(), score_type="logits")))
    miss = rng.uniform(1, 3, (3, k))
    post = np.exp(scores - scores.max(1, keepdims=True))
    post /= post.sum(1, keepdims=True)
    decided = ecjax.bayes_decisions(scores, costs.class_costs(miss), score_type="logits")  # (3, N)
    np.testing.assert_array_equal(np.asarray(decided), np.argmax(post[None] * miss[:, None, :], -1))
    with pytest.raises(v.InputError, match="the scores have 7 classes"):
        ecjax.bayes_decisions(scores, costs.zero_one(5, dense=False), score_type="logits")
