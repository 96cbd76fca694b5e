"""The calibrators that count instead of optimizing: histogram binning and isotonic regression.

Both are computed exactly from weighted class totals (compensated sums, :func:`~ecjax._src.confusion.weight_totals`):
histogram binning of the class-1 posterior (Ferrer 2022b, eq. 66), and isotonic regression of the class indicator on
the class-1 log-odds by pool-adjacent-violators (one-vs-rest for ``K > 2``).  Their outputs are clipped to
``[ISOTONIC_CLIP, 1 - ISOTONIC_CLIP]``, so no log-posterior is ``-inf``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from ecjax._src.calibrators.problem import FitProblem
from ecjax._src.confusion import weight_totals
from ecjax._src.scores import brier_kernel, cross_entropy_kernel

# Isotonic and histogram outputs are clipped to [ISOTONIC_CLIP, 1 - ISOTONIC_CLIP]: PAV (or a bin) gives exactly 0
# or 1 where its training samples are all of one class, and log 0 = -inf would make one held-out sample of the other
# class cost an infinite cross-entropy (and the output file unreadable).  With the clip it costs at most
# -log(1e-6) = 13.8 nats.
ISOTONIC_CLIP = 1e-6


def apply_isotonic(params, s):
    """Kernel: isotonic log-posteriors of the class-1 log-odds ``(N,)`` (binary) or of the ``(N, K)`` one-vs-rest
    log-odds (:func:`_one_vs_rest_isotonic`)."""
    return _isotonic_log_posteriors(params, s) if s.ndim == 1 else _one_vs_rest_isotonic(params, s)


def apply_histogram(params, s):
    """Kernel: the clipped class frequencies of the bin of each class-1 log-posterior of ``s`` ``(N, 2)``."""
    return _clipped_log_posteriors(params["frequencies"][_histogram_bins(params, s[..., 1])])


def _isotonic_log_posteriors(params, log_odds):
    """Kernel: ``(..., 2)`` log-posteriors of a fitted isotonic calibrator at the class-1 ``log_odds``.

    The fitted step values are joined linearly between consecutive knots
    (``thresholds``) and held constant beyond the first and last knot: the
    prediction of ``sklearn.isotonic.IsotonicRegression(out_of_bounds="clip")``
    with the log-odds as ``X``.  Both class probabilities are interpolated
    (the class-0 one from its own exact value, so that ``1 - p`` near 1 keeps
    its digits) and clipped to ``[ISOTONIC_CLIP, 1 - ISOTONIC_CLIP]``; the
    log of the larger one is ``log1p(-smaller)``, exact where float32 cannot
    hold ``1 - 1e-6`` itself.
    """
    x, f = params["thresholds"], params["frequencies"]
    m = x.shape[-1]
    i = jnp.clip(jnp.searchsorted(x, log_odds, side="right"), 1, m - 1)
    x0, x1 = x[i - 1], x[i]
    dx = x1 - x0
    # dx = 0 only between padding knots (or below the first knot via the clip on i): hold the value.
    t = jnp.where(dx > 0, jnp.clip((log_odds - x0) / jnp.where(dx > 0, dx, 1.0), 0.0, 1.0), 0.0)
    return _clipped_log_posteriors(f[i - 1] + t[..., None] * (f[i] - f[i - 1]))


def _one_vs_rest_isotonic(params, log_odds):
    """Kernel: ``(..., K)`` log-posteriors of a fitted one-vs-rest isotonic calibrator at the ``(..., K)``
    one-vs-rest log-odds (:func:`ecjax._src.decisions.one_vs_rest_log_odds`).

    Class ``k``'s binary calibrator (``params`` with a leading class axis) gives ``q_k``, clipped to
    ``[ISOTONIC_CLIP, 1 - ISOTONIC_CLIP]``; the posteriors are ``q_k / sum_j q_j``, as scikit-learn's
    ``CalibratedClassifierCV(method="isotonic")`` normalizes its one-vs-rest outputs.
    """
    per_class = jax.vmap(_isotonic_log_posteriors, in_axes=(0, -1), out_axes=-2)(params, log_odds)  # (..., K, 2)
    log_q = per_class[..., 1]
    return log_q - jax.nn.logsumexp(log_q, axis=-1, keepdims=True)


def _clipped_log_posteriors(p):
    """``(..., 2)`` log-posteriors of the class probabilities ``p`` ``(..., 2)`` clipped to ``[ISOTONIC_CLIP, 1 -
    ISOTONIC_CLIP]``: never ``-inf``.  The log of the larger one is ``log1p(-smaller)``, exact where float32 cannot
    hold ``1 - 1e-6`` itself."""
    p = jnp.clip(p, ISOTONIC_CLIP, 1.0 - ISOTONIC_CLIP)
    return jnp.where(p < 0.5, jnp.log(p), jnp.log1p(-p[..., ::-1]))


def _pool_adjacent_violators(log_odds, labels, weights, sample_weight, class_weight=None):
    """Weighted isotonic regression of ``[label = 1]`` on ``log_odds`` (samples of weight 0 ignored).

    As ``sklearn.isotonic.IsotonicRegression``: samples with equal log-odds
    are first pooled into one point (their weighted class-1 frequency), then
    the stack-based pool-adjacent-violators algorithm (Ayer et al. 1955;
    Barlow et al. 1972) scans the points in increasing order, pushing each as
    a block and merging the top two blocks while the lower one's frequency is
    >= the upper one's: O(N) after the sort, each point pushed and merged at
    most once.  Blocks hold per-class totals ``(n_0, n_1)`` of the frequency
    weights ``sample_weight`` (exact integer counts when they are all 1);
    their value is ``w_1 n_1 / (w_0 n_0 + w_1 n_1)`` with the class weights
    ``w_i = P_i / W_i`` of the fit, ``weights = w_{y_n} u_n``.  (Which
    blocks merge depends only on ``n_1 / n_0``, so on the counts and not on
    the priors.)  With integer ``sample_weight`` this is the fit on the
    repeated samples: ``IsotonicRegression(sample_weight=)``.  ``class_weight`` ``(2,)`` overrides the class
    weights derived from ``weights / sample_weight`` (the one-vs-rest fits, whose "rest" mixes classes).

    Returns ``{"thresholds", "frequencies"}`` (see :class:`Calibrator`).
    """
    n = log_odds.shape[0]
    dtype = log_odds.dtype
    in_train = weights > 0
    order = jnp.argsort(jnp.where(in_train, log_odds, jnp.inf), stable=True)
    z, y, kept = log_odds[order], labels[order], in_train[order]
    starts_point = kept & jnp.concatenate([jnp.ones((1,), bool), z[1:] != z[:-1]])
    point = jnp.cumsum(starts_point) - 1  # ignored samples (at the end) fall in the last point with count 0
    num_points = point[-1] + 1
    u = jnp.where(kept, sample_weight[order], 0.0).astype(dtype)
    counts = weight_totals(point, (jax.nn.one_hot(y, 2, dtype=dtype) * u[:, None]).T, n).T  # compensated sums
    knots = jnp.zeros((n,), dtype).at[jnp.where(starts_point, point, n)].set(z, mode="drop")
    if class_weight is None:
        class_weight = _class_weights_of_fit(weights, sample_weight, labels)

    def class1_frequency(c):
        w = class_weight * c.astype(dtype)
        return w[1] / (w[0] + w[1])

    def push(i, carry):
        block_counts, block_start, top = carry
        block_counts = block_counts.at[top].set(counts[i])
        block_start = block_start.at[top].set(i)

        def violated(c):
            bc, _, t = c
            return (t >= 2) & (class1_frequency(bc[t - 2]) >= class1_frequency(bc[t - 1]))

        def merge(c):
            bc, bs, t = c
            return bc.at[t - 2].add(bc[t - 1]), bs, t - 1

        return jax.lax.while_loop(violated, merge, (block_counts, block_start, top + 1))

    init = (jnp.zeros((n, 2), dtype), jnp.zeros((n,), jnp.int32), jnp.zeros((), jnp.int32))
    block_counts, block_start, top = jax.lax.fori_loop(0, num_points, push, init)
    first_of_block = jnp.zeros((n,), jnp.int32).at[jnp.where(jnp.arange(n) < top, block_start, n)].set(
        1, mode="drop")
    block_of_point = jnp.cumsum(first_of_block) - 1
    w = class_weight * block_counts[block_of_point].astype(dtype)
    freqs = w / jnp.sum(w, axis=-1, keepdims=True)
    # Past the last point: repeat the last knot, so the knots stay sorted and the fit is held constant there.
    real = jnp.arange(n) < num_points
    knots = jnp.where(real, knots, knots[num_points - 1])
    freqs = jnp.where(real[:, None], freqs, freqs[num_points - 1])
    return {"thresholds": knots, "frequencies": freqs}


def _class_weights_of_fit(weights, sample_weight, labels):
    """``(2,)``: the class weights ``P_i / W_i`` of a binary fit, its per-sample weights without the frequency weights.

    Unweighted (``sample_weight`` all 1) the division is exact; samples outside the training set (weight 0)
    are skipped.
    """
    in_train = weights > 0
    per_sample = jnp.where(in_train, weights / jnp.where(in_train, sample_weight, 1.0), 0.0)
    return jax.ops.segment_max(per_sample, labels, num_segments=2)


def _pool_adjacent_violators_one_vs_rest(log_odds, labels, weights, sample_weight):
    """One weighted isotonic regression per class, of ``[label = k]`` on the ``(N, K)`` one-vs-rest
    ``log_odds[:, k]``: :func:`_pool_adjacent_violators` with a leading class axis on its outputs.

    Each fit minimizes ``sum_n w_n ([y_n = k] - f(z_nk))^2`` over monotone ``f``, with the objective's weights
    ``w_n = u_n P_i / W_i``.  They enter as frequency weights ``u_n r_{y_n}``, ``r_i = c_i / max_j c_j`` with the
    class weights ``c_i = P_i / W_i``, and equal class weights in the fit: with the data priors every ``r_i`` is
    1 up to rounding, so unweighted blocks still hold (near-)integer counts.
    """
    k = log_odds.shape[-1]
    in_train = weights > 0
    per_sample = jnp.where(in_train, weights / jnp.where(in_train, sample_weight, 1.0), 0.0)
    c = jax.ops.segment_max(per_sample, labels, num_segments=k)
    frequency_weight = sample_weight * (c / jnp.max(c))[labels]
    equal = jnp.ones((2,), log_odds.dtype)

    def one_class(i):
        return _pool_adjacent_violators(log_odds[:, i], (labels == i).astype(labels.dtype), weights,
                                        frequency_weight, equal)

    return jax.vmap(one_class)(jnp.arange(k))


def _histogram_bins(params, log_p1):
    """Bin of each class-1 log-posterior: the first bin whose upper edge is >= it (ties go to the lower bin).

    Edges and inputs are compared in the log domain, as given: no ``exp`` whose last bit may differ between
    backends decides a bin.
    """
    upper = params["upper_log_edges"]
    idx = jnp.searchsorted(upper, log_p1, side="left")
    return jnp.clip(idx, 0, upper.shape[-1] - 1)


def _histogram_log_edges(log_p1: np.ndarray, sample_weight: np.ndarray, num_bins: int, binning: str) -> np.ndarray:
    """``(M,)`` upper edges of the histogram's bins in the log domain, computed on the host (the last is ``+inf``).

    ``"equal_width"``: ``log(m / M)``.  ``"equal_mass"``: the rule of
    :func:`ecjax.scores.equal_mass_upper_edges`: one stable sort of the
    training samples' class-1 log-posteriors (``sample_weight > 0``), the
    float64 cumulative weight in that order, and edge ``m`` the value of the
    first sample whose cumulative weight reaches ``e_m = (m + 1) q + min(m +
    1, r)`` (``q, r`` the quotient and remainder of the total weight by
    ``M``): with unit weights the sorted values split as ``np.array_split``,
    edges at order statistics.  Each edge is a training value itself, and bins are assigned by
    ``searchsorted(side="left")``, so tied values share a bin.  Numpy on the
    host, sequential float64 sums: the same edges on every backend, with or
    without the padding of cross-validation (weight 0).
    """
    if binning == "equal_width":
        with np.errstate(divide="ignore"):
            upper = np.log(np.arange(1, num_bins + 1) / num_bins)
    else:
        kept = sample_weight > 0
        order = np.argsort(log_p1[kept], kind="stable")
        values = log_p1[kept][order]
        cum = np.cumsum(sample_weight[kept][order].astype(np.float64))
        q = np.floor(cum[-1] / num_bins)
        m = np.arange(1, num_bins + 1)
        ends = m * q + np.minimum(m, cum[-1] - q * num_bins)
        pos = np.clip(np.searchsorted(cum, ends, side="left"), 0, len(values) - 1)
        upper = np.where(ends > 0, values[pos], -np.inf)  # e_m = 0: a bin with nothing in it
    upper[-1] = np.inf
    return upper.astype(log_p1.dtype)



def histogram_edges(s: jax.Array, sample_weight: Any, settings: Any) -> np.ndarray:
    """Host function, the ``bin_edges`` of ``"histogram"``: the edges (:func:`_histogram_log_edges`) of the class-1
    log-posteriors of ``s`` ``(N, 2)`` for ``settings.num_bins`` and ``settings.binning``
    (:class:`ecjax.calibration.FitSettings`)."""
    return _histogram_log_edges(np.asarray(s[:, 1]), np.asarray(sample_weight), settings.num_bins, settings.binning)


def fit_histogram(problem: FitProblem, *, loss: str, max_iter: int, num_bins: int) -> tuple:
    """Kernel: the histogram's per-bin class frequencies (counted, not optimized), the fitter of ``"histogram"``.

    Bin ``m`` maps to ``w_im / sum_j w_jm``, ``w_im = (P_i / W_i) n_im`` with ``n_im`` the total frequency weight of
    the training samples of class ``i`` in the bin (the edges ``problem.upper_log_edges``); an empty bin to the
    objective's class priors.  ``(params, 0 iterations, gradient norm 0, objective 0)``.
    """
    s, labels, weights, sample_weight = problem.s, problem.labels, problem.weights, problem.sample_weight
    upper_log_edges = problem.upper_log_edges
    dtype = s.dtype
    in_train = weights > 0
    u = jnp.where(in_train, sample_weight, 0.0).astype(dtype)  # frequency weight of each training sample
    params = {"upper_log_edges": upper_log_edges}
    idx = _histogram_bins(params, s[:, 1])
    # Per-bin class totals of the frequency weights (exact counts unweighted), then the class
    # weights P_i / W_i: the (prior-weighted) class frequencies without a long float32 sum of weights.
    cw = _class_weights_of_fit(weights, sample_weight, labels)
    # Compensated sums (ecjax._src.confusion.weight_totals): bin weight totals past 2^24 stay exact.
    n = weight_totals(idx, (jax.nn.one_hot(labels, 2, dtype=dtype) * u[:, None]).T, num_bins).T  # (M, 2)
    w = cw * n
    w_all = w.sum(-1, keepdims=True)
    # Empty bin (no training sample): the class prior of the objective.  Both classes divided apart (not
    # 1 - the other), so a bin of one class gives exactly 0 and 1 on every backend, clipped when applied.
    prior = cw * n.sum(0) / jnp.sum(cw * n.sum(0))
    params["frequencies"] = jnp.where(w_all > 0, w / jnp.where(w_all > 0, w_all, 1.0), prior)
    zero = jnp.zeros((), jnp.int32)
    return params, zero, jnp.zeros((), dtype), jnp.zeros((), dtype)


def fit_isotonic(problem: FitProblem, *, loss: str, max_iter: int, num_bins: int) -> tuple:
    """Kernel, the fitter of ``"isotonic"``: pool-adjacent-violators on the class-1 log-odds ``(N,)``, or one per
    class on the ``(N, K)`` one-vs-rest log-odds.  PAV minimizes every proper scoring rule over monotone maps at once
    (Brummer & du Preez 2013): ``loss`` only chooses which one is reported, on the clipped outputs."""
    s, labels, weights, sample_weight = problem.s, problem.labels, problem.weights, problem.sample_weight
    pav = _pool_adjacent_violators if s.ndim == 1 else _pool_adjacent_violators_one_vs_rest
    params = pav(s, labels, weights, sample_weight)
    value = (cross_entropy_kernel if loss == "xe" else brier_kernel)(labels, apply_isotonic(params, s), weights)
    return params, jnp.zeros((), jnp.int32), jnp.zeros((), s.dtype), value
