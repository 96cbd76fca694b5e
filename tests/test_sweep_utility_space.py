"""The utility plane of Dyrland et al. (2022) Fig. 1 (``ecjax._src.sweep.utility_space``) and the ROC tangent
criterion (eqs. 24-25, ``ecjax._src.sweep.roc``).

The tangent criterion is the map's ``decision_rule="optimal_threshold"``, and both are checked against the same
references here, so the two modules share this file.

References: Dyrland et al. (2022) eq. 13 transcribed here directly (rows = decision in the
seed, transposed), per-point numpy loops, a brute-force search over every
threshold of every system, scikit-learn's ROC curve with scipy's convex
hull, and ``ecjax.optimal_threshold_expected_cost`` (the core's one-sort
optimum, a different algorithm).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import ConvexHull
from sklearn.metrics import roc_curve

import ecjax
from ecjax.sweep import SweepSettings, roc_convex_hull, roc_tangent_winners, utility_plane, utility_space_map
from ecjax._src.sweep.sweeps import TIE


def seed_eq13(x, y):
    """Dyrland et al. (2022) eq. 13 as printed (rows = decision), then transposed to rows = true class."""
    u_seed = np.array([[1 - x * (x > 0), y * (y > 0)],
                       [-y * (y < 0), 1 + x * (x < 0)]], dtype=np.float64)
    return u_seed.T


def np_yields(counts, u, priors=None):
    counts = np.asarray(counts, np.float64)
    r = counts / counts.sum(-1, keepdims=True)
    p = counts.sum(-1) / counts.sum((-2, -1))[:, None] if priors is None else np.broadcast_to(priors, (len(counts), 2))
    return np.einsum("si,sij,ij->s", p, r, u)


def _systems(n=700, s=3, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=(s, n))
    # Different shapes of class-conditional distributions make ROC curves cross.
    llr = np.stack([rng.normal(size=n) * (0.6 + 0.5 * i) + (1.0 + 0.2 * i) * (2 * labels[i] - 1)
                    for i in range(s)])
    llr = np.round(llr, 1)  # ties in the scores: thresholds must never split them
    return labels, llr


def _log_post(llr):
    return np.stack([-np.logaddexp(0, llr), -np.logaddexp(0, -llr)], -1)


def test_plane_axis_is_eq13_and_the_mask_is_the_hexagon():
    r = 9
    axis = utility_plane(r)
    u = axis.values().reshape(r, r, 2, 2)
    grid = np.linspace(-1, 1, r)
    for i, y in enumerate(grid):
        for j, x in enumerate(grid):
            if abs(x - y) <= 1 + 1e-12:
                np.testing.assert_allclose(u[i, j], seed_eq13(x, y), atol=1e-6)
    counts = np.array([[[40, 10], [5, 45]]])
    m = utility_space_map(counts, resolution=r)
    inside = np.abs(grid[None, :] - grid[:, None]) <= 1 + 1e-12
    np.testing.assert_array_equal(m.winners >= 0, inside)
    assert np.isnan(m.yields[~inside]).all() and m.result.num_points == inside.sum()
    # Centre of the plane = identity utilities = accuracy (Dyrland et al. 2022, §3.2).
    assert m.yields[r // 2, r // 2, 0] == pytest.approx(85 / 100)


def test_counts_map_against_numpy_per_point():
    rng = np.random.default_rng(1)
    counts = rng.integers(5, 80, size=(3, 2, 2))
    r = 25
    m = utility_space_map(counts, resolution=r, settings=SweepSettings(chunk_size=50))
    grid = np.linspace(-1, 1, r)
    for i, y in enumerate(grid):
        for j, x in enumerate(grid):
            if abs(x - y) > 1:
                continue
            ref = np_yields(counts, seed_eq13(x, y))
            np.testing.assert_allclose(m.yields[i, j], ref, rtol=1e-5, atol=1e-7)
            best = ref.max()
            if np.sum(np.isclose(ref, best, rtol=1e-9, atol=0)) > 1:
                assert m.winners[i, j] == TIE
            elif np.sort(ref)[-1] - np.sort(ref)[-2] > 1e-5:
                assert m.winners[i, j] == np.argmax(ref)
    inside = m.winners != -1
    assert m.win_fraction.sum() + m.result.tie_fraction == pytest.approx(1.0)
    np.testing.assert_allclose(m.win_fraction, [(m.winners == s).sum() / inside.sum() for s in range(3)])


def test_scores_map_with_bayes_decisions_against_numpy():
    labels, llr = _systems(n=400, seed=2)
    lp = _log_post(llr)
    r = 13
    m = utility_space_map(labels=labels, scores=lp, resolution=r)
    grid = np.linspace(-1, 1, r)

    def yield_of(s, dec, u):
        cm = np.array([[np.sum((labels[s] == a) & (dec == b)) for b in (0, 1)] for a in (0, 1)])
        return np_yields(cm[None], u)[0]

    num_ties = 0
    for i, y in enumerate(grid):
        for j, x in enumerate(grid):
            if abs(x - y) > 1:
                continue
            u = seed_eq13(x, y)
            low, high = [], []
            for s in range(3):
                eu = np.exp(lp[s]) @ u  # float64 expected utilities
                # A score of LLR 0 on the diagonal x = y: both decisions are worth the same in exact arithmetic,
                # and float32 (in whatever order the backend sums) picks either. Compare like with like: either
                # decision is right there; everywhere else the decision is the float64 argmax.
                tie = np.abs(eu[:, 1] - eu[:, 0]) <= 1e-6
                num_ties += int(tie.sum())
                best = np.argmax(eu, -1)
                yields = [yield_of(s, np.where(tie, choice, best), u) for choice in (0, 1)]
                low.append(min(yields))
                high.append(max(yields))
            assert np.all(m.yields[i, j] >= np.array(low) - 1e-5 * np.abs(low) - 1e-6)
            assert np.all(m.yields[i, j] <= np.array(high) + 1e-5 * np.abs(high) + 1e-6)
    assert num_ties > 0  # the grid does meet such ties (eight samples of LLR 0 on each diagonal point)


def brute_force_best_threshold(labels, llr, u, priors=None):
    """Utility yield at every threshold of every system: (S,) best yields. O(N^2), numpy."""
    out = []
    for s in range(len(llr)):
        cuts = np.concatenate([[-np.inf], np.unique(llr[s]), [np.inf]])
        best = -np.inf
        for t in cuts:
            dec = (llr[s] > t).astype(int)
            cm = np.array([[np.sum((labels[s] == a) & (dec == b)) for b in (0, 1)] for a in (0, 1)])
            best = max(best, np_yields(cm[None], u, priors)[0])
        out.append(best)
    return np.array(out)


def test_roc_hull_against_sklearn_roc_and_scipy_convex_hull():
    labels, llr = _systems(seed=3)
    hulls = roc_convex_hull(labels, llr, score_type="llr")
    for s, (f, t) in enumerate(hulls):
        fpr, tpr, _ = roc_curve(labels[s], llr[s], drop_intermediate=False)
        pts = np.concatenate([np.stack([fpr, tpr], 1), [[1.0, 0.0]]])  # close the polygon below the curve
        hull = ConvexHull(pts)
        verts = pts[hull.vertices]
        upper = verts[~((verts[:, 1] == 0) & (verts[:, 0] == 1))]
        upper = upper[np.lexsort((upper[:, 1], upper[:, 0]))]
        np.testing.assert_allclose(np.stack([f, t], 1), upper, atol=1e-12)


def test_tangent_criterion_equals_brute_force_over_all_thresholds():
    labels, llr = _systems(n=300, seed=4)
    rng = np.random.default_rng(5)
    xy = rng.uniform(-1, 1, size=(80, 2))
    xy = xy[np.abs(xy[:, 0] - xy[:, 1]) <= 1]
    us = np.stack([seed_eq13(x, y) for x, y in xy])
    winners, yields, points = roc_tangent_winners(labels, llr, us, score_type="llr")
    for b, u in enumerate(us):
        ref = brute_force_best_threshold(labels, llr, u)
        np.testing.assert_allclose(yields[b], ref, rtol=1e-5, atol=1e-6)
        if np.sort(ref)[-1] - np.sort(ref)[-2] > 1e-6:
            assert winners[b] == np.argmax(ref)
        # The tangent point is a hull vertex whose yield (eq. 22) is the optimum.
        for s in range(3):
            f, t = points[b, s]
            p1 = labels[s].mean()
            eq22 = p1 * (u[1, 1] * t + u[1, 0] * (1 - t)) + (1 - p1) * (u[0, 1] * f + u[0, 0] * (1 - f))
            assert eq22 == pytest.approx(ref[s], rel=1e-5, abs=1e-6)


def test_tangent_yields_equal_core_optimal_threshold_expected_cost():
    labels, llr = _systems(n=500, seed=6)
    us = np.stack([seed_eq13(x, y) for x, y in [(0, 0), (0.7, 0.2), (-0.4, -0.9), (0.9, -0.05), (-1, 0)]])
    _, yields, _ = roc_tangent_winners(labels, llr, us, score_type="llr", priors=[0.3, 0.7])
    for b, u in enumerate(us):
        for s in range(3):
            ec, _ = ecjax.optimal_threshold_expected_cost(labels[s], llr[s], -u, priors=[0.3, 0.7], score_type="llr")
            assert yields[b, s] == pytest.approx(-float(ec), rel=1e-5, abs=1e-6)


def test_optimal_threshold_map_uses_the_tangent_criterion():
    labels, llr = _systems(n=250, seed=7)
    r = 11
    m = utility_space_map(labels=labels, scores=_log_post(llr), resolution=r, decision_rule="optimal_threshold")
    grid = np.linspace(-1, 1, r)
    for i, y in enumerate(grid):
        for j, x in enumerate(grid):
            if abs(x - y) > 1:
                continue
            ref = brute_force_best_threshold(labels, llr, seed_eq13(x, y))
            np.testing.assert_allclose(m.yields[i, j], ref, rtol=1e-5, atol=1e-6)


def test_seed_fig8_larger_auc_can_lose():
    # Dyrland et al. (2022) Fig. 8: the ROC curve with the larger area is not the best for U = diag(4, 1) on a
    # balanced test set.  Seed class 0 ("positive", utility 4) is class 1 here: U_11 = 4 (rows = truth).
    rng = np.random.default_rng(8)
    n = 4000
    labels = np.tile(np.repeat([0, 1], n // 2), (2, 1))
    s_a = np.where(labels[0] == 1, rng.normal(1.5, 1.0, n), rng.normal(0.0, 1.0, n))  # binormal, larger AUC
    s_b = np.where(labels[1] == 1, rng.normal(1.0, 0.4, n), rng.normal(0.0, 1.0, n))  # steep at high FPR
    scores = np.stack([s_a, s_b])
    auc = [np.mean(s[labels[0] == 1][:, None] > s[labels[0] == 0][None, :]) for s in scores]
    u = np.array([[1.0, 0.0], [0.0, 4.0]])
    winner, yields, _ = roc_tangent_winners(labels, scores, u, score_type="llr")
    np.testing.assert_allclose(yields, brute_force_best_threshold(labels, scores, u), rtol=1e-5)
    assert auc[0] > auc[1] and winner == 1
