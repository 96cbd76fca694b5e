"""The ROC tangent criterion (Dyrland et al. 2022, §5, eqs. 20-25).

For a binary classifier with a threshold on its scores, every threshold gives
a point ``(f, t)`` of its ROC curve (false- and true-positive rate) and, for
class proportions ``P``, a confusion matrix (Dyrland et al. 2022, eq. 21).  Its utility
yield is linear in ``(f, t)`` (eq. 22; here rows = true class and class 1
is the positive class):

    sum_ij U_ij P_i R_ij = a t - b f + P_1 U_10 + P_0 U_00,
    a = P_1 (U_11 - U_10),  b = P_0 (U_00 - U_01).

So the best threshold is where the ROC curve touches a line of slope
``m = b / a`` (eq. 24), and among several classifiers the best is the one
whose tangent line ``t = m f + const`` has the highest intercept (eq. 25).
Only the upper convex hull of the ROC points can touch such a line, so each
system is reduced once to its hull, whose segment slopes decrease; the
tangent vertex for a slope ``m`` is then a binary search, ``O(log H)`` per
utility matrix.  The yields found this way are those of each system at its
best (empirically optimal) threshold: :func:`ecjax.optimal_threshold_expected_cost`
with costs ``-U`` gives the same value one matrix at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.decisions import class_one_log_odds_kernel, naive_expected_cost
from ecjax._src.sweep.inputs import check_correct_dominates, split_point_values, systems_scores


def hull_of_roc(labels: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Upper-left convex hull of the ROC points of one system (numpy, float64).

    ROC points are taken at every cut between distinct scores (tied scores
    are never split), from ``(0, 0)`` (decide 0 for all) to ``(1, 1)``.
    """
    order = np.argsort(-s, kind="stable")
    s_sorted = s[order]
    pos = labels[order] == 1
    tp = np.concatenate([[0], np.cumsum(pos)])
    fp = np.concatenate([[0], np.cumsum(~pos)])
    cut = np.concatenate([[True], s_sorted[1:] < s_sorted[:-1], [True]])
    n1, n0 = max(tp[-1], 1), max(fp[-1], 1)
    f = fp[cut] / n0
    t = tp[cut] / n1
    # Monotone chain over points sorted by (f, t): keep right turns only (upper hull).
    hull: list[tuple[float, float]] = []
    for p in zip(f, t):
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) >= 0:
                hull.pop()
            else:
                break
        hull.append(p)
    vertices = np.asarray(hull)
    return vertices[:, 0], vertices[:, 1]


def roc_convex_hull(labels: ArrayLike | Sequence[ArrayLike], scores: ArrayLike | Sequence[ArrayLike], *,
                    priors: ArrayLike | None = None,
                    score_type: str = "log_posteriors") -> list[tuple[np.ndarray, np.ndarray]]:
    """ROC convex hulls ``[(fpr, tpr), ...]`` of one or several binary systems.

    Rates are for class 1 (``tpr``: fraction of class 1 decided 1; ``fpr``:
    fraction of class 0 decided 1), deciding 1 above a threshold on the log
    odds of class 1.  ``priors`` (for ``"llr"``/``"log_likelihoods"``) only
    shift the log odds and so leave the hull unchanged.
    """
    labels, scores, k = systems_scores(labels, scores, score_type)
    v.check_binary(k, "a ROC curve")
    s = np.asarray(class_one_log_odds_kernel(scores, score_type), np.float64)
    labels = np.asarray(labels)
    return [hull_of_roc(labels[i], s[i]) for i in range(s.shape[0])]


def padded_hulls(hulls: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[jax.Array, jax.Array, jax.Array]:
    h = max(len(f) for f, _ in hulls)
    fs = np.stack([np.concatenate([f, np.full(h - len(f), f[-1])]) for f, _ in hulls])
    ts = np.stack([np.concatenate([t, np.full(h - len(t), t[-1])]) for _, t in hulls])
    df, dt = np.diff(fs, axis=1), np.diff(ts, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = np.where(df > 0, dt / np.where(df > 0, df, 1.0), np.where(dt > 0, np.inf, -np.inf))
    # Padding segments (zero length) must never be "improving": slope -inf.
    slopes = np.where((df == 0) & (dt == 0), -np.inf, slopes)
    return jnp.asarray(fs, jnp.float32), jnp.asarray(ts, jnp.float32), jnp.asarray(slopes, jnp.float32)


def tangent_kernel(fs: jax.Array, ts: jax.Array, slopes: jax.Array, utilities: jax.Array,
                   priors: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Kernel: best hull vertex and its yield for each system, eqs. 24-25.

    ``fs, ts`` ``(S, H)`` hull vertices, ``slopes`` ``(S, H-1)`` decreasing;
    ``utilities`` ``(..., 2, 2)`` rows = true class; ``priors`` broadcasting
    to ``(..., S, 2)``.  Returns ``(yield (..., S), vertex (..., S))``.
    """
    batch = jnp.broadcast_shapes(utilities.shape[:-2] + (fs.shape[0],), priors.shape[:-1])
    u = jnp.broadcast_to(utilities[..., None, :, :], batch + (2, 2))
    p = jnp.broadcast_to(priors, batch + (2,))
    a = p[..., 1] * (u[..., 1, 1] - u[..., 1, 0])
    b = p[..., 0] * (u[..., 0, 0] - u[..., 0, 1])
    m = jnp.where(a > 0, b / jnp.where(a > 0, a, 1.0), jnp.inf)  # eq. 24: the slope of the tangent
    # Segments with slope > m still raise a t - b f; on a concave hull they form a prefix.
    flat_m = m.reshape(-1, m.shape[-1])  # (B, S)
    count = jax.vmap(lambda sl, mm: jnp.searchsorted(-sl, -mm, side="left"), in_axes=(0, 1), out_axes=1)(slopes,
                                                                                                         flat_m)
    vertex = count.reshape(m.shape)
    f_star = jnp.take_along_axis(jnp.broadcast_to(fs, m.shape[:-1] + fs.shape), vertex[..., None], -1)[..., 0]
    t_star = jnp.take_along_axis(jnp.broadcast_to(ts, m.shape[:-1] + ts.shape), vertex[..., None], -1)[..., 0]
    value = a * t_star - b * f_star + p[..., 1] * u[..., 1, 0] + p[..., 0] * u[..., 0, 0]
    return value, vertex


def roc_tangent_winners(labels: ArrayLike | Sequence[ArrayLike], scores: ArrayLike | Sequence[ArrayLike],
                        utilities: ArrayLike, *, priors: ArrayLike | None = None, score_type: str = "log_posteriors"
                        ) -> tuple[np.ndarray | np.integer, np.ndarray, np.ndarray]:
    """Best system for each utility matrix by the ROC tangent criterion (Dyrland et al. 2022, eqs. 24-25).

    Args:
      labels: ``(N,)`` or ``(S, N)`` binary classes.
      scores: ``(S, N, 2)`` (``(S, N)`` for ``"llr"``) scores of ``S`` systems.
      utilities: ``(2, 2)`` or ``(B, 2, 2)`` utility matrices, rows = true
        class, with each correct decision worth at least the wrong one.
      priors: class proportions ``(2,)`` (default: each system's data
        proportions, ``B`` of eq. 21).

    Returns:
      ``(winners, yields, operating_points)``: ``(B,)`` index of the best
      system, ``(B, S)`` utility yields at each system's tangent point, and
      ``(B, S, 2)`` the tangent points ``(fpr, tpr)``.
    """
    labels_v, scores_v, k = systems_scores(labels, scores, score_type)
    v.check_binary(k, "the ROC tangent criterion")
    u = v.as_matrix(utilities, "utilities", shape=(2, 2))
    single = u.ndim == 2
    u = u.reshape((-1, 2, 2))
    check_correct_dominates(u, "utilities", " (Dyrland et al. 2022, §5); the tangent criterion assumes it")
    n_i = np.stack([(np.asarray(labels_v) == c).sum(-1) for c in (0, 1)], -1)
    if priors is None:
        p = jnp.asarray(n_i / n_i.sum(-1, keepdims=True), jnp.float32)  # (S, 2)
    else:
        p = v.check_class_vector(v.as_priors(priors, num_classes=2), "priors", num_classes=2)
    log_odds = np.asarray(class_one_log_odds_kernel(scores_v, score_type), np.float64)
    hulls = [hull_of_roc(np.asarray(labels_v)[i], s) for i, s in enumerate(log_odds)]
    fs, ts, slopes = padded_hulls(hulls)
    yields, vertex = _tangent_jit(fs, ts, slopes, u, p)
    yields = np.asarray(yields)
    vertex = np.asarray(vertex)
    systems = np.arange(fs.shape[0])[None]
    pts = np.stack([np.asarray(fs)[systems, vertex], np.asarray(ts)[systems, vertex]], -1)
    winners = np.argmax(yields, -1)
    if single:
        return winners[0], yields[0], pts[0]
    return winners, yields, pts


@jax.jit
def _tangent_jit(fs, ts, slopes, u, p):
    return tangent_kernel(fs, ts, slopes, u, p)


@dataclass(frozen=True)
class TangentPoint:
    """Sweep point function: optimal-threshold yields by the tangent criterion."""

    axis_fn: Callable
    layout: str
    kind: str  # "yield" (utilities) or "ec"/"nec" (costs)

    def __call__(self, args, idx):
        fs, ts, slopes, data_p, fixed_m, fixed_p, data = args
        m, p = split_point_values(self.axis_fn(data, idx), self.layout, fixed_m, fixed_p)
        c = idx.shape[0]
        m = jnp.broadcast_to(m, (c, 2, 2))
        u = m if self.kind == "yield" else -m
        pp = data_p[None] if p is None else jnp.broadcast_to(p, (c, 2))[:, None]
        val, _ = tangent_kernel(fs, ts, slopes, u, pp)
        if self.kind != "yield":
            val = -val
            if self.kind == "nec":
                naive = naive_expected_cost(m[:, None], pp)
                val = jnp.where(naive > 0, val / jnp.where(naive > 0, naive, 1.0), jnp.nan)
        return val, jnp.ones((c,), bool)
