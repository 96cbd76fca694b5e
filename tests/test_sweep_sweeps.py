"""Sweeps over costs, priors and their products, decisions given and scores given.

Every value is compared with an independent float64 numpy computation written
here (per-point loops), with the ``expected-cost`` package, or with a closed
form (the EC of fixed counts is linear in the cost ratio, so the point where
two systems swap places is known exactly).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from expected_cost import ec as ec_ref

from ecjax.sweep import SweepSettings, grids, sweep_counts, sweep_map, sweep_scores
from ecjax._src.sweep.sweeps import TIE

RNG = np.random.default_rng(20240601)


# ------------------------------------------------------------------ references

def np_expected_value(counts, matrix, priors=None):
    """sum_ij m_ij P_i R_ij for each system, float64; data priors when priors is None."""
    counts = np.asarray(counts, np.float64)
    n_i = counts.sum(-1, keepdims=True)
    r = np.divide(counts, n_i, out=np.zeros_like(counts), where=n_i > 0)
    p = counts.sum(-1) / counts.sum((-2, -1))[..., None] if priors is None else np.broadcast_to(priors, counts.shape[:-1])
    return np.einsum("si,sij,ij->s", p, r, np.asarray(matrix, np.float64))


def np_naive(matrix, priors):
    return np.min(np.einsum("...i,ij->...j", priors, np.asarray(matrix, np.float64)), -1)


def random_counts(s, k, d, low=1, high=60):
    return RNG.integers(low, high, size=(s, k, d))


def random_costs(b, k, d):
    c = RNG.uniform(0.1, 5.0, size=(b, k, d))
    for i in range(min(k, d)):
        c[:, i, i] = 0.0
    return c


def np_log_softmax(x):
    x = np.asarray(x, np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def np_bayes_ec(labels, log_post, costs, priors=None):
    """EC of Bayes decisions for one system, float64, per-sample loop over decisions."""
    post = np.exp(np.asarray(log_post, np.float64))
    dec = np.argmin(post @ costs, -1)
    k = costs.shape[0]
    n_i = np.bincount(labels, minlength=k)
    p = n_i / n_i.sum() if priors is None else np.asarray(priors, np.float64)
    w = p[labels] / n_i[labels]
    return float(np.sum(w * costs[labels, dec]))


# ------------------------------------------------------------------ decisions given

@pytest.mark.parametrize("normalize", [False, True])
def test_counts_over_user_matrices_against_numpy_and_expected_cost(normalize):
    counts = random_counts(3, 3, 4)
    costs = random_costs(40, 3, 4)
    res = sweep_counts(counts, costs, normalize=normalize, settings=SweepSettings(chunk_size=16))
    ref = np.stack([np_expected_value(counts, c) for c in costs])
    if normalize:
        p = counts.sum(-1) / counts.sum((-2, -1))[:, None]
        ref = ref / np.stack([np_naive(c, p) for c in costs])
    np.testing.assert_allclose(res.values, ref, rtol=2e-6)
    # The expected-cost package, one matrix and system at a time.
    for b in (0, 17, 39):
        for s in range(3):
            r = counts[s] / counts[s].sum(-1, keepdims=True)
            p = counts[s].sum(-1) / counts[s].sum()
            anchor = ec_ref.average_cost_from_confusion_matrix(r, p, ec_ref.CostMatrix(costs[b]), adjusted=normalize)
            assert res.values[b, s] == pytest.approx(anchor, rel=2e-6)
    winners = np.argmin(ref, -1)
    np.testing.assert_array_equal(res.winners, winners)
    np.testing.assert_array_equal(res.win_counts, np.bincount(winners, minlength=3))
    np.testing.assert_allclose(res.win_fraction, np.bincount(winners, minlength=3) / 40)
    beats = (ref[:, :, None] < ref[:, None, :]).sum(0)
    np.testing.assert_array_equal(res.pairwise_wins, beats)
    np.testing.assert_allclose(res.minimum, ref.min(0), rtol=2e-6)
    np.testing.assert_allclose(res.maximum, ref.max(0), rtol=2e-6)
    np.testing.assert_allclose(res.mean, ref.mean(0), rtol=1e-5)
    assert res.num_points == 40 and res.metric == ("nec" if normalize else "ec")


def test_counts_utilities_give_yield_and_pick_the_highest():
    counts = random_counts(4, 2, 2)
    utilities = RNG.uniform(0, 1, size=(25, 2, 2))
    res = sweep_counts(counts, utilities=utilities)
    ref = np.stack([np_expected_value(counts, u) for u in utilities])
    np.testing.assert_allclose(res.values, ref, rtol=2e-6)
    np.testing.assert_array_equal(res.winners, np.argmax(ref, -1))
    assert res.higher_is_better and res.metric == "yield"


def test_counts_product_of_matrices_and_deployment_priors():
    counts = random_counts(3, 3, 3)
    costs = random_costs(6, 3, 3)
    priors = RNG.dirichlet(np.ones(3), size=5)
    res = sweep_counts(counts, costs, priors=priors, normalize=True)
    assert res.values.shape == (6, 5, 3)
    for b in range(6):
        for q in range(5):
            ref = np_expected_value(counts, costs[b], priors[q]) / np_naive(costs[b], priors[q])
            np.testing.assert_allclose(res.values[b, q], ref, rtol=2e-6)
            r = counts[1] / counts[1].sum(-1, keepdims=True)
            anchor = ec_ref.average_cost_from_confusion_matrix(r, priors[q], ec_ref.CostMatrix(costs[b]), adjusted=True)
            assert res.values[b, q, 1] == pytest.approx(anchor, rel=2e-6)


def test_counts_fixed_costs_swept_priors_on_the_simplex():
    counts = random_counts(2, 3, 3)
    costs = random_costs(1, 3, 3)[0]
    axis = grids.simplex(3, 10)
    assert axis.size == math.comb(12, 2)
    pts = axis.values()
    np.testing.assert_allclose(pts.sum(-1), 1.0, atol=1e-6)
    assert pts.min() >= 0 and {tuple(np.round(p * 10).astype(int)) for p in pts} == {
        (a, b, 10 - a - b) for a in range(11) for b in range(11 - a)}
    res = sweep_counts(counts, costs, priors=axis)
    ref = np.stack([np_expected_value(counts, costs, p) for p in pts])
    np.testing.assert_allclose(res.values, ref, rtol=2e-6, atol=1e-7)


def test_cost_ratio_sweep_crossing_is_where_the_closed_form_says():
    # EC_s(r) = P0 R01 + P1 R10 r is linear in r: the order flips once, at r* = -(A1 - A0) / (B1 - B0).
    counts = np.array([[[80, 20], [10, 90]], [[95, 5], [30, 70]]])
    res = sweep_counts(counts, grids.cost_ratios(0.1, 10.0, 1001))
    r = np.geomspace(0.1, 10.0, 1001)
    a = np.array([0.5 * 0.2, 0.5 * 0.05])
    b = np.array([0.5 * 0.1, 0.5 * 0.3])
    np.testing.assert_allclose(res.values, a + b * r[:, None], rtol=2e-6)
    r_star = -(a[1] - a[0]) / (b[1] - b[0])
    first_after = int(np.searchsorted(r, r_star))
    assert res.flip_counts[0, 1] == 1
    np.testing.assert_array_equal(res.flips[(0, 1)], [first_after])
    np.testing.assert_array_equal(res.flip_points(1, 0), [[first_after]])
    np.testing.assert_allclose(res.win_fraction, [(1001 - first_after) / 1001, first_after / 1001])
    np.testing.assert_allclose(res.coords[0], r)


def test_effective_prior_sweep_with_01_costs():
    counts = random_counts(3, 2, 2)
    axis = grids.effective_priors(0.01, 0.99, 51)
    res = sweep_counts(counts, np.array([[0.0, 1.0], [1.0, 0.0]]), priors=axis, normalize=True)
    p = axis.coords[0]
    logit = np.linspace(np.log(0.01 / 0.99), np.log(0.99 / 0.01), 51)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-logit)))
    for i, pi in enumerate(p):
        pri = np.array([1 - pi, pi])
        ref = np_expected_value(counts, 1 - np.eye(2), pri) / min(pri)
        np.testing.assert_allclose(res.values[i], ref, rtol=1e-5)


def _sample_costs(key, n):
    c = jax.random.uniform(key, (n, 3, 3), minval=0.1, maxval=2.0)
    return c * (1.0 - jnp.eye(3))


def test_random_matrices_axis_is_reproducible_and_chunk_invariant():
    counts = random_counts(3, 3, 3)
    key = jax.random.key(7)
    axis = grids.random(_sample_costs, key, 300)
    mats = axis.values()
    # Point i is sample(fold_in(key, i), 1)[0], whatever the chunking.
    for i in (0, 5, 299):
        np.testing.assert_array_equal(mats[i], np.asarray(_sample_costs(jax.random.fold_in(key, i), 1)[0]))
    a = sweep_counts(counts, axis, settings=SweepSettings(chunk_size=37))
    b = sweep_counts(counts, axis, settings=SweepSettings(chunk_size=1000))
    # Draws are exact; a different chunk shape may change the last float bit of a sum (XLA vectorization).
    np.testing.assert_allclose(a.values, b.values, rtol=1e-6)
    ref = np.stack([np_expected_value(counts, m) for m in mats])
    np.testing.assert_allclose(a.values, ref, rtol=2e-6)


def test_transform_axis_builds_a_family_of_10_class_matrices():
    # Ferrer (2025) Table 1 family: 0-1 costs with the last row multiplied by alpha (Cimb for alpha = 100).
    counts = random_counts(2, 10, 10, high=30)
    axis = grids.transform(grids.linspace(1.0, 100.0, 12, log=True), _imbalanced_costs)
    res = sweep_counts(counts, axis)
    for i, alpha in enumerate(np.geomspace(1, 100, 12)):
        c = 1 - np.eye(10)
        c[-1] *= alpha
        np.testing.assert_allclose(res.values[i], np_expected_value(counts, c), rtol=1e-5)


def _imbalanced_costs(alpha):
    base = 1.0 - jnp.eye(10)
    scale = jnp.ones((alpha.shape[0], 10, 1)).at[:, -1, 0].set(alpha)
    return base * scale


# ------------------------------------------------------------------ flips and ties

def np_flips(values, row_len):
    """Brute force: a flip at i when the strict order differs from the last strict order on the same row."""
    n, s = values.shape
    out = {}
    for a in range(s):
        for b in range(a + 1, s):
            last, hits = 0, []
            for i in range(n):
                if i % row_len == 0:
                    last = 0
                sg = int(np.sign(values[i, b] - values[i, a]))  # +1: a better (lower)
                if sg != 0:
                    if last != 0 and sg != last:
                        hits.append(i)
                    last = sg
            out[(a, b)] = hits
    return out


def _identity_values(p, table):
    return table[p]


def test_flips_against_brute_force_with_ties_and_row_resets():
    # Quantized random values make ties common; a product axis makes rows reset.
    table = RNG.integers(0, 3, size=(7 * 13, 3)).astype(np.float32)
    axis = grids.product(grids.values(np.arange(7)), grids.values(np.arange(13)))
    flat = grids.transform(axis, _flat_index_13)
    res = sweep_map(_identity_values, flat, jnp.asarray(table), settings=SweepSettings(chunk_size=10, max_flips=100))
    ref = np_flips(table, 13)
    for key, hits in ref.items():
        np.testing.assert_array_equal(res.flips[key], hits)
        assert res.flip_counts[key] == len(hits)
    best = table.min(-1)
    shared = (table == best[:, None]).sum(-1) > 1
    expected = np.where(shared, TIE, table.argmin(-1)).reshape(7, 13)
    np.testing.assert_array_equal(res.winners, expected)
    assert res.tie_count == shared.sum()
    np.testing.assert_allclose(res.win_fraction.sum() + res.tie_fraction, 1.0)


def _flat_index_13(vals):
    i, j = vals
    return (i * 13 + j).astype(jnp.int32)


def test_max_flips_caps_recorded_positions_but_not_the_count():
    table = np.tile(np.array([[0.0, 1.0], [1.0, 0.0]], np.float32), (50, 1))  # flips at every point
    res = sweep_map(_identity_values, grids.values(np.arange(100)), jnp.asarray(table),
                    settings=SweepSettings(max_flips=5, chunk_size=8))
    assert res.flip_counts[0, 1] == 99
    np.testing.assert_array_equal(res.flips[(0, 1)], [1, 2, 3, 4, 5])


# ------------------------------------------------------------------ scores given

def _binary_systems(n=1500, s=3, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=(s, n))
    llr = np.stack([rng.normal(size=n) * (1.0 + 0.3 * i) + (0.8 + 0.6 * i) * (2 * labels[i] - 1) for i in range(s)])
    return labels, llr


@pytest.mark.parametrize("method", ["threshold", "dense"])
def test_binary_scores_cost_ratio_sweep_against_numpy_bayes(method):
    labels, llr = _binary_systems()
    log_post = np.stack([-np.logaddexp(0, llr), -np.logaddexp(0, -llr)], -1)
    axis = grids.cost_ratios(0.05, 20.0, 33)
    res = sweep_scores(labels, log_post, axis, method=method, normalize=True)
    mats = axis.values()
    for b in range(33):
        for s in range(3):
            ec = np_bayes_ec(labels[s], log_post[s], mats[b])
            p = np.bincount(labels[s], minlength=2) / labels.shape[1]
            np.testing.assert_allclose(res.values[b, s], ec / np_naive(mats[b], p), rtol=1e-5)


def test_llr_scores_with_swept_effective_priors_move_the_decisions():
    labels, llr = _binary_systems(seed=1)
    axis = grids.effective_priors(0.05, 0.95, 19)
    res_t = sweep_scores(labels, llr, np.array([[0.0, 1.0], [1.0, 0.0]]), priors=axis, score_type="llr")
    res_d = sweep_scores(labels, llr, np.array([[0.0, 1.0], [1.0, 0.0]]), priors=axis, score_type="llr",
                         method="dense")
    for i, p1 in enumerate(axis.coords[0]):
        pri = np.array([1 - p1, p1])
        for s in range(3):
            log_post = np_log_softmax(np.stack([np.zeros_like(llr[s]), llr[s]], -1) + np.log(pri))
            ref = np_bayes_ec(labels[s], log_post, 1 - np.eye(2), pri)
            assert res_t.values[i, s] == pytest.approx(ref, rel=1e-5)
            assert res_d.values[i, s] == pytest.approx(ref, rel=1e-5)


def test_binary_general_matrices_including_reversed_and_flat_columns():
    # b = c10 - c11 < 0 or = 0 exercise the "decide 1 below the threshold" and constant branches.
    labels, llr = _binary_systems(n=800, seed=2)
    log_post = np.stack([-np.logaddexp(0, llr), -np.logaddexp(0, -llr)], -1)
    mats = np.array([[[0, 1], [3, 0]], [[0, 1], [-1, 0.5]], [[0, 1], [2, 2]], [[1, 0], [0, 1]],
                     [[0.2, -0.5], [4, 1]], [[0, 0], [0, 0]], [[1, 1], [1, 1]]], np.float64)
    res = sweep_scores(labels, log_post, mats)
    for b, c in enumerate(mats):
        for s in range(3):
            assert res.values[b, s] == pytest.approx(np_bayes_ec(labels[s], log_post[s], c), rel=1e-5, abs=1e-7)


def test_multiclass_scores_dense_sweep_against_numpy_and_expected_cost():
    rng = np.random.default_rng(3)
    n, k = 600, 4
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(2, n, k)) + 2.0 * np.eye(k)[labels]
    costs = random_costs(10, k, k)
    res = sweep_scores(labels, logits, costs, score_type="logits", settings=SweepSettings(chunk_size=4, point_batch=3))
    for b in range(len(costs)):
        for s in range(2):
            lp = np_log_softmax(logits[s])
            ref = np_bayes_ec(labels, lp, costs[b])
            assert res.values[b, s] == pytest.approx(ref, rel=1e-5)
            anchor = ec_ref.average_cost_for_bayes_decisions(labels, lp, ec_ref.CostMatrix(costs[b]))[0]
            assert res.values[b, s] == pytest.approx(anchor, rel=1e-5)


def test_multiclass_abstention_column():
    rng = np.random.default_rng(4)
    n, k = 500, 3
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(2, n, k)) + 1.5 * np.eye(k)[labels]
    abstain = np.linspace(0.05, 0.6, 8)
    costs = np.stack([np.concatenate([1 - np.eye(k), np.full((k, 1), a)], 1) for a in abstain])
    res = sweep_scores(labels, logits, costs, score_type="logits")
    for b in range(8):
        for s in range(2):
            assert res.values[b, s] == pytest.approx(np_bayes_ec(labels, np_log_softmax(logits[s]), costs[b]),
                                                     rel=1e-5)


# ------------------------------------------------------------------ engine behaviour

def test_chunked_equals_unchunked_and_progress_hook_sees_every_chunk():
    counts = random_counts(3, 2, 2)
    axis = grids.cost_ratios(1e-3, 1e3, 5000)
    whole = sweep_counts(counts, axis, settings=SweepSettings(chunk_size=5000))
    ticks = []

    class Bar:
        def __init__(self, total):
            ticks.append(("total", total))

        def update(self, n):
            ticks.append(n)

        def close(self):
            ticks.append("closed")

    parts = sweep_counts(counts, axis, settings=SweepSettings(chunk_size=333, progress=Bar))
    assert parts.info["chunk"] == 333 and parts.info["num_chunks"] == math.ceil(5000 / 333)
    assert ticks[0] == ("total", 16) and ticks[1:-1] == [1] * 16 and ticks[-1] == "closed"
    np.testing.assert_allclose(parts.values, whole.values, rtol=1e-6)
    np.testing.assert_array_equal(parts.winners, whole.winners)
    np.testing.assert_array_equal(parts.win_counts, whole.win_counts)
    np.testing.assert_array_equal(parts.pairwise_wins, whole.pairwise_wins)
    assert parts.flips.keys() == whole.flips.keys()
    for key in whole.flips:
        np.testing.assert_array_equal(parts.flips[key], whole.flips[key])
    np.testing.assert_allclose(parts.mean, whole.mean, rtol=1e-6)


def test_streamed_reductions_without_values_match_the_kept_values():
    counts = random_counts(3, 3, 3)
    costs = random_costs(200, 3, 3)
    kept = sweep_counts(counts, costs, settings=SweepSettings(chunk_size=64))
    lean = sweep_counts(counts, costs, settings=SweepSettings(chunk_size=64, return_values=False))
    assert lean.values is None and lean.winners is None
    np.testing.assert_array_equal(lean.win_counts, np.bincount(kept.winners, minlength=3))
    np.testing.assert_allclose(lean.minimum, np.nanmin(kept.values, 0))


def test_per_point_function_never_sees_more_than_a_chunk():
    seen = []

    def record(p, scale):
        return jnp.stack([p * scale, 1.0 - p])

    axis = grids.linspace(0.0, 1.0, 1001)
    original = axis.fn

    class Spy:
        def __call__(self, data, idx):
            seen.append(idx.shape[0])
            return original(data, idx)

        def __hash__(self):
            return 1

    spied = grids.Axis(axis.shape, Spy(), axis.data, axis.coords)
    res = sweep_map(record, spied, 2.0, settings=SweepSettings(chunk_size=128))
    assert seen and max(seen) <= 128
    x = np.linspace(0, 1, 1001)
    np.testing.assert_allclose(res.values, np.stack([2 * x, 1 - x], -1), rtol=1e-6, atol=1e-7)
    # 2x <= 1 - x  <=>  x <= 1/3 (ties at x = 1/3 are not on the grid).
    assert res.win_counts[0] == np.sum(2 * x < 1 - x)
