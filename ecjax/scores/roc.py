"""Binary scores judged by their ranking alone: ROC, AUC, EER and operating points (Ferrer 2022b, §4.5).

Every function sorts the class-1 log-odds once and reads the error rates
at every cut (:func:`rates_at_cuts`); no priors or costs enter, except in
:func:`nec_for_target_sensitivity`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax import inputs as v
from ecjax.scores.inputs import (
    binary_inputs, binary_ok, class1_fraction, posterior_inputs, scores_ok, validated_sample_weight, weights_ok,
)


def rates_at_cuts(labels: jax.Array, s: jax.Array,
                  sample_weight: jax.Array | None = None) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Error rates at every cut of the sorted scores (one sort).

    Cut ``k`` decides class 0 for the ``k`` lowest scores and 1 for the
    rest.  Returns ``(s_sorted, miss, fa, valid)`` with ``miss[k]`` the
    fraction of class-1 samples below the cut, ``fa[k]`` the fraction of
    class-0 samples above it, and ``valid[k]`` False where the cut would split
    tied scores (no threshold realizes it).  With ``sample_weight`` the
    fractions are of each class's weight total (:func:`weighted_rates_at_cuts`).
    """
    if sample_weight is not None:
        ranked = sort_scores(labels, s)
        miss, fa = weighted_rates_at_cuts(ranked, sample_weight)
        return ranked.s_sorted, miss, fa, ranked.valid
    order = jnp.argsort(s)
    s_sorted = s[order]
    is1 = labels[order] == 1
    zero = jnp.zeros((1,), jnp.int32)
    cum1 = jnp.concatenate([zero, jnp.cumsum(is1, dtype=jnp.int32)])
    cum0 = jnp.arange(s.shape[0] + 1, dtype=jnp.int32) - cum1
    n1, n0 = cum1[-1], cum0[-1]
    # A class absent from the data (it then has weight 0 under data priors) gives rates 0, not NaN.
    # XLA may divide by multiplying with the reciprocal, so n1 / n1 can round to 1 + 2**-23: clip the
    # rates into [0, 1] (a TPR of 1 - miss would otherwise reach -5e-8).
    miss = jnp.clip(cum1 / jnp.maximum(n1, 1), 0.0, 1.0)
    fa = jnp.clip((n0 - cum0) / jnp.maximum(n0, 1), 0.0, 1.0)
    return s_sorted, miss, fa, _valid_cuts(s_sorted)


def _valid_cuts(s_sorted):
    """``(N + 1,)``: cut ``k`` splits no tie (the ends always count)."""
    edge = jnp.array([True])
    return jnp.concatenate([edge, s_sorted[1:] > s_sorted[:-1], edge])


class SortedScores(NamedTuple):
    """Binary scores sorted once, for any number of sample weightings (:func:`sort_scores`).

    The weighted kernels below take it with weights ``(..., N)`` in sample
    order and any leading batch axes: a bootstrap sorts once and evaluates
    every draw's weights on the same order.
    """

    order: jax.Array  # (N,) sample indices by increasing score; among tied scores class 1 before class 0
    is1: jax.Array  # (N,) labels[order] == 1
    tie_end: jax.Array  # (N,) one past the last sorted position of each position's tie group
    s_sorted: jax.Array  # (N,) the scores in that order
    valid: jax.Array  # (N + 1,) cut k splits no tie (:func:`rates_at_cuts`)


def sort_scores(labels: jax.Array, s: jax.Array) -> SortedScores:
    """Kernel: the one sort of :class:`SortedScores` (O(N log N)); jit-able."""
    order = jnp.lexsort((labels != 1, s))  # primary key last: the scores; among ties class 1 first
    s_sorted = s[order]
    tie_end = jnp.searchsorted(s_sorted, s_sorted, side="right").astype(jnp.int32)
    return SortedScores(order, labels[order] == 1, tie_end, s_sorted, _valid_cuts(s_sorted))


def prefix_sums(x: jax.Array) -> jax.Array:
    """Kernel: inclusive cumulative sums of ``x`` along its last axis, by a work-efficient parallel scan.

    ``jnp.cumsum`` lowers to a reduce-window on XLA's CPU backend, several
    times slower than ``jax.lax.associative_scan`` for a batch of long
    vectors (measured on two cores, ``(4, 10^6)`` float32: 8.3 ms against
    about 2 ms per vector).  The scan adds in a tree, so each output is a sum
    of ``O(log N)`` rounded partial sums: float32 error ``O(eps log N)``
    relative to the total, where a running sum's grows with ``N``.
    """
    return jax.lax.associative_scan(jnp.add, x, axis=-1)


def _class_weights_sorted(ranked, weights):
    """``(w0, w1)``: the weights ``(..., N)`` in sorted order, split by class (0 where the other class)."""
    w = jnp.take(weights, ranked.order, axis=-1)
    zero = jnp.zeros((), w.dtype)
    return jnp.where(ranked.is1, zero, w), jnp.where(ranked.is1, w, zero)


def _with_zero(x):
    return jnp.concatenate([jnp.zeros(x.shape[:-1] + (1,), x.dtype), x], -1)


def weighted_rates_at_cuts(ranked: SortedScores, weights: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Kernel: ``(miss, fa)``, ``(..., N + 1)``, at every cut of ``ranked`` for weights ``(..., N)`` (sample order).

    ``miss[k]`` is the class-1 weight below cut ``k`` over the class-1
    weight, ``fa[k]`` the class-0 weight above it over the class-0 weight
    (cuts that split ties, ``ranked.valid`` False, are not thresholds).  A
    class of weight 0 gives rates 0, not NaN.
    """
    w0, w1 = _class_weights_sorted(ranked, weights)
    below1 = _with_zero(prefix_sums(w1))
    # fa summed from the top down: W_0 minus a running sum would lose the small rates to cancellation.
    above0 = _with_zero(prefix_sums(w0[..., ::-1]))[..., ::-1]
    total1, total0 = below1[..., -1:], above0[..., :1]
    # Clipped: XLA may divide by multiplying with the reciprocal, so W / W can round to 1 + 2**-23.
    miss = jnp.clip(below1 / jnp.where(total1 > 0, total1, 1.0), 0.0, 1.0)
    fa = jnp.clip(above0 / jnp.where(total0 > 0, total0, 1.0), 0.0, 1.0)
    return miss, fa


def sorted_weighted_auc(ranked: SortedScores, weights: jax.Array) -> jax.Array:
    """Kernel: weighted AUC ``(...,)`` of ``ranked`` for weights ``(..., N)`` in sample order, ties one half.

    ``AUC = sum_{i: y=1} sum_{j: y=0} w_i w_j ([s_i > s_j] + [s_i = s_j] / 2) / (W_1 W_0)``
    (Hanley & McNeil 1982, weighted as ``sklearn.metrics.roc_auc_score(...,
    sample_weight=)``).  With ``B_0(k)`` the class-0 weight of the first
    ``k`` sorted positions, a class-1 sample at position ``k`` whose tie group
    ends before position ``e_k`` has ``B_0(k)`` class-0 weight below it (the
    sort puts the tied class-1 samples first) and ``B_0(e_k)`` at or below
    it, so

        AUC = sum_k w1_k (B_0(k) + B_0(e_k)) / (2 W_0 W_1):

    one gather into sorted order, one prefix sum and one gather at ``e`` per
    weight vector, no sort.  Each class-1 term is in ``[0, 1]`` before the
    weighted mean (float32 stays accurate at any ``N``).
    """
    w0, w1 = _class_weights_sorted(ranked, weights)
    below0 = _with_zero(prefix_sums(w0))
    not_above = jnp.take(below0, ranked.tie_end, axis=-1)
    total0 = below0[..., -1:]
    per_positive = 0.5 * (below0[..., :-1] + not_above) / jnp.where(total0 > 0, total0, 1.0)
    total1 = jnp.sum(w1, -1)
    return jnp.sum(w1 * per_positive, -1) / jnp.where(total1 > 0, total1, 1.0)


def cut_threshold(s_sorted: jax.Array, k: jax.Array | int) -> jax.Array:
    """A threshold realizing cut ``k`` with the rule "class 1 iff s > t"."""
    n = s_sorted.shape[0]
    lo = jnp.where(k > 0, s_sorted[jnp.maximum(k - 1, 0)], -jnp.inf)
    hi = jnp.where(k < n, s_sorted[jnp.minimum(k, n - 1)], jnp.inf)
    mid = jnp.where(jnp.isinf(lo) & jnp.isinf(hi), 0.0, 0.5 * (lo + hi))
    return jnp.where(jnp.isinf(lo), -jnp.inf, jnp.where(jnp.isinf(hi), jnp.inf, mid))


@jax.jit
def _roc_kernel(labels, s, sample_weight=None):
    s_sorted, miss, fa, valid = rates_at_cuts(labels, s, sample_weight)
    # sklearn's convention: thresholds descending, "positive iff s >= t", first +inf.
    thresholds = jnp.concatenate([s_sorted, jnp.array([jnp.inf], s_sorted.dtype)])
    return fa[::-1], (1.0 - miss)[::-1], thresholds[::-1], valid[::-1]


def roc_curve(labels: ArrayLike, scores: ArrayLike, *, score_type: str = "log_posteriors",
              sample_weight: ArrayLike | None = None) -> tuple[jax.Array, jax.Array, jax.Array]:
    """ROC points at every distinct threshold (Ferrer 2022b, §4.5).

    Args:
      labels: ``(N,)`` classes in {0, 1} (1 = positive, Ferrer's H2).
      scores: binary scores of one system (``(N, 2)``, or ``(N,)`` for ``"llr"``).
      score_type: any score type; only the ranking of the class-1 log-odds is
        used, so no priors are needed.
      sample_weight: optional ``(N,)`` non-negative weights: the rates are
        fractions of each class's weight total, samples of weight 0 are left
        out (as ``sklearn.metrics.roc_curve(..., sample_weight=)``).

    Returns:
      ``(fpr, tpr, thresholds)`` as ``sklearn.metrics.roc_curve(...,
      drop_intermediate=False)``: thresholds decreasing (first ``+inf``), a
      sample is positive iff its log-odds ``>= threshold``; ``fpr = R_12``,
      ``tpr = R_22``, both within ``[0, 1]``.  Concrete input only (the
      number of points depends on the data), so not usable inside ``jit``.
    """
    labels, s, sample_weight = binary_inputs(labels, scores, score_type, sample_weight,
                                                       drop_zero_weights=True)
    fpr, tpr, thr, valid = _roc_kernel(labels, s, sample_weight)
    keep = np.asarray(valid)
    return fpr[keep], tpr[keep], thr[keep]


@jax.jit
def _auc_kernel(labels, s):
    is0 = (labels == 0)
    neg_sorted = jnp.sort(jnp.where(is0, s, jnp.inf))  # class-0 scores first, padding last
    n0 = jnp.sum(is0)
    below = jnp.searchsorted(neg_sorted, s, side="left")  # class-0 scores < s
    not_above = jnp.minimum(jnp.searchsorted(neg_sorted, s, side="right"), n0)  # class-0 scores <= s
    # Mann-Whitney: P(s1 > s0) + P(s1 = s0) / 2; each term in [0, 1] keeps float32 accurate.
    per_positive = (below + 0.5 * (not_above - below)) / n0
    is1 = labels == 1
    return jnp.sum(jnp.where(is1, per_positive, 0.0)) / jnp.sum(is1)


def weighted_auc_kernel(labels: jax.Array, s: jax.Array, sample_weight: jax.Array) -> jax.Array:
    """Kernel: weighted AUC of the class-1 log-odds ``s``, the weighted Mann-Whitney statistic, ties one half.

    ``sum_{i: y=1} sum_{j: y=0} w_i w_j ([s_i > s_j] + [s_i = s_j] / 2) / (W_1 W_0)``: one sort
    (:func:`sort_scores`) and :func:`sorted_weighted_auc`.
    """
    return sorted_weighted_auc(sort_scores(labels, s), sample_weight)


_weighted_auc_kernel = jax.jit(weighted_auc_kernel)


def auc(labels: ArrayLike, scores: ArrayLike, *, score_type: str = "log_posteriors",
        sample_weight: ArrayLike | None = None) -> jax.Array:
    """Area under the ROC curve, ties counted as one half (Ferrer 2022b, §4.5).

    Equal to the Mann-Whitney statistic ``P(s_1 > s_0) + P(s_1 = s_0) / 2``
    for a random class-1 score ``s_1`` and class-0 score ``s_0`` (and to
    ``sklearn.metrics.roc_auc_score``).  One sort plus binary searches:
    O(N log N).  Arguments as in :func:`roc_curve`.

    With ``sample_weight`` ``u``: the weighted statistic ``sum_{m: y=1}
    sum_{n: y=0} u_m u_n ([s_m > s_n] + [s_m = s_n] / 2) / (W_1 W_0)``, the
    area under the weighted ROC (``roc_auc_score(..., sample_weight=)``).
    """
    labels, s, sample_weight = binary_inputs(labels, scores, score_type, sample_weight,
                                             drop_zero_weights=False, order_only=True)
    out = _auc_kernel(labels, s) if sample_weight is None else _weighted_auc_kernel(labels, s, sample_weight)
    traced = v.any_traced(labels, s, sample_weight)
    return v.nan_where_invalid(out, binary_ok(labels, s, sample_weight)) if traced else out


@jax.jit
def _auc_one_vs_rest_kernel(labels, log_post, sample_weight=None):
    classes = jnp.arange(log_post.shape[-1])

    def one(c):
        is_c = (labels == c).astype(labels.dtype)
        if sample_weight is None:
            return _auc_kernel(is_c, log_post[:, c])
        return weighted_auc_kernel(is_c, log_post[:, c], sample_weight)

    return jnp.mean(jax.vmap(one)(classes))


def auc_one_vs_rest(labels: ArrayLike, scores: ArrayLike, *, priors: ArrayLike | None = None,
                    score_type: str = "log_posteriors", sample_weight: ArrayLike | None = None) -> jax.Array:
    """Macro average over the ``K`` classes of the one-vs-rest AUC (Ferrer 2022b, §4.7).

    ``AUC_ovr = (1/K) sum_i AUC(class i against the rest, ranked by P(i|x))``,
    each term the Mann-Whitney statistic of :func:`auc`.  Equal to
    ``sklearn.metrics.roc_auc_score(labels, posteriors, multi_class="ovr",
    average="macro")``; for ``K = 2`` both terms equal the binary AUC.

    Args:
      labels: ``(N,)`` true classes; every class needs samples (and so does
        its complement).
      scores: ``(N, K)`` scores of one system.
      priors, score_type: as in :func:`cross_entropy` (priors only to form
        posteriors from likelihood-type scores, whose ranking depends on them).
      sample_weight: optional ``(N,)`` non-negative weights: each term is the
        weighted AUC of :func:`auc` (the average stays unweighted over the
        classes), as ``roc_auc_score(..., multi_class="ovr",
        sample_weight=)``; every class needs a positive weight total.
    """
    sample_weight = validated_sample_weight(labels, sample_weight)
    labels, log_post, _, n_i = posterior_inputs(labels, scores, priors, score_type, sample_weight)
    v.check_one_system(log_post, 2)
    v.check_classes_present(labels, sample_weight, log_post.shape[-1], why="its one-vs-rest AUC is undefined")
    out = _auc_one_vs_rest_kernel(labels, log_post, sample_weight)
    if v.any_traced(labels, log_post, sample_weight):
        ok = scores_ok(labels, log_post) & jnp.all(jnp.asarray(n_i) > 0) & weights_ok(sample_weight)
        out = v.nan_where_invalid(out, ok)
    return out


def eer_of_rates(miss: jax.Array, fa: jax.Array, valid: jax.Array) -> jax.Array:
    """Kernel: the ROCCH-EER of the rates at the cuts (:func:`rates_at_cuts`), ``max_pi min_cut [pi miss + (1 - pi) fa]``.

    The envelope ``min_cut`` is the smaller of the envelopes of the rising
    lines (``miss > fa``) and of the others, and it rises at ``pi`` iff the
    rising ones are the lower there: bisection on ``pi`` with two masked
    minima per step (no argmin), then the exact intersection with the
    diagonal of the hull segment between the lowest rising and the lowest
    falling line at the maximum.  The lines' slopes ``miss - fa`` lie in
    ``[-1, 1]``, so stopping within ``2^-(p + 3)`` of the breakpoint (``p``
    the mantissa bits: 26 steps in float32, 55 in float64) moves the EER by
    less than its rounding.
    """
    steps = jnp.finfo(miss.dtype).nmant + 3
    rises = miss > fa
    up, down = valid & rises, valid & ~rises

    def bisect(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        line = mid * miss + (1.0 - mid) * fa
        rising = jnp.min(jnp.where(up, line, jnp.inf)) < jnp.min(jnp.where(down, line, jnp.inf))
        return jnp.where(rising, mid, lo), jnp.where(rising, hi, mid)

    lo, hi = jax.lax.fori_loop(0, steps, bisect, (jnp.zeros((), miss.dtype), jnp.ones((), miss.dtype)))
    # The hull's vertices on either side of the maximum: the lowest rising and the lowest falling line there (the
    # argmin over all lines is ambiguous at the breakpoint, where the two are equal up to rounding).  Both sets are
    # never empty: the first cut (miss 0, fa 1) falls, the last (miss 1, fa 0) rises.
    mid = 0.5 * (lo + hi)
    line = mid * miss + (1.0 - mid) * fa
    a = jnp.argmin(jnp.where(up, line, jnp.inf))
    b = jnp.argmin(jnp.where(down, line, jnp.inf))
    da, db = miss[a] - fa[a], miss[b] - fa[b]
    # The hull segment a-b crosses the diagonal miss = fa: intersect exactly.
    t = jnp.where(da - db != 0, da / jnp.where(da - db != 0, da - db, 1.0), 0.0)
    return miss[a] + t * (miss[b] - miss[a])


@jax.jit
def _eer_kernel(labels, s, sample_weight=None):
    _, miss, fa, valid = rates_at_cuts(labels, s, sample_weight)
    return eer_of_rates(miss, fa, valid)


def eer(labels: ArrayLike, scores: ArrayLike, *, score_type: str = "log_posteriors",
        sample_weight: ArrayLike | None = None) -> jax.Array:
    """Equal error rate on the ROC convex hull (ROCCH-EER, Ferrer (2022b) §4.5).

    The rate at which the convex hull of the ROC crosses ``R_12 = R_21``
    (false-alarm = miss).  It equals ``max_pi min_t [pi R_21(t) + (1-pi)
    R_12(t)]``, the worst minimum Bayes error over priors, which is how it is
    computed: bisection on ``pi`` over the one-sort error rates, then the
    exact intersection of the hull segment with the diagonal.  This is the
    definition of the BOSARIS toolkit and ``llreval`` (``ROCCH.EER``); on a
    step ROC it interpolates between the two cuts that straddle the diagonal.

    With ``sample_weight`` the ROC is the weighted one of :func:`roc_curve`
    (rates as fractions of each class's weight total).
    """
    labels, s, sample_weight = binary_inputs(labels, scores, score_type, sample_weight,
                                             drop_zero_weights=False, order_only=True)
    out = _eer_kernel(labels, s, sample_weight)
    traced = v.any_traced(labels, s, sample_weight)
    return v.nan_where_invalid(out, binary_ok(labels, s, sample_weight)) if traced else out


class OperatingPoint(NamedTuple):
    """A threshold and its rates: decide class 1 iff log-odds ``> threshold``."""

    specificity: jax.Array
    sensitivity: jax.Array
    threshold: jax.Array


@jax.jit
def _sp_at_se_kernel(labels, s, target, sample_weight=None):
    s_sorted, miss, fa, valid = rates_at_cuts(labels, s, sample_weight)
    cut = jnp.arange(miss.shape[0])
    ok = valid & (1.0 - miss >= target)
    # The highest cut still meeting the sensitivity has the largest specificity;
    # among cuts with that same specificity take the lowest (largest sensitivity).
    k_top = jnp.max(jnp.where(ok, cut, 0))
    k = jnp.min(jnp.where(valid & (fa == fa[k_top]), cut, miss.shape[0]))
    return OperatingPoint(1.0 - fa[k], 1.0 - miss[k], cut_threshold(s_sorted, k))


def specificity_at_sensitivity(labels: ArrayLike, scores: ArrayLike, sensitivity: float, *,
                               score_type: str = "log_posteriors",
                               sample_weight: ArrayLike | None = None) -> OperatingPoint:
    """SP@SE: the specificity at the highest threshold that reaches ``sensitivity``.

    Ferrer (2022b) §4.6: the threshold is chosen on these data so that ``R_22 >=
    sensitivity`` with the largest ``R_11`` (among thresholds with that
    ``R_11``, the largest ``R_22``).  The paper explains why this is a
    poor metric (implicit, system-dependent costs); see
    :func:`nec_for_target_sensitivity` for its recommended replacement.

    With ``sample_weight`` the rates are those of :func:`roc_curve` (weighted
    fractions of each class; samples of weight 0 left out on concrete input).

    Returns:
      :class:`OperatingPoint` ``(specificity, sensitivity, threshold)``; the
      achieved sensitivity may exceed the target when ties or few samples do
      not allow it exactly.
    """
    target = _target_sensitivity(sensitivity)
    labels, s, sample_weight = binary_inputs(labels, scores, score_type, sample_weight,
                                                       drop_zero_weights=True)
    out = _sp_at_se_kernel(labels, s, jnp.asarray(target, s.dtype), sample_weight)
    traced = v.any_traced(labels, s, sample_weight)
    return v.nan_where_invalid(out, binary_ok(labels, s, sample_weight)) if traced else out


def _target_sensitivity(sensitivity):
    target = float(sensitivity)
    if not 0.0 <= target <= 1.0:
        raise v.InputError(f"`sensitivity` must be in [0, 1], got {sensitivity}")
    return target


class SensitivityTargetNEC(NamedTuple):
    """The NEC that replaces SP@SE (Ferrer 2022b, §4.6).

    ``costs`` is the cost matrix (rows = true class) with ``c_21 = 1`` (a
    miss) and ``c_12 = alpha P_2 / P_1`` (a false alarm), whose NEC on data
    with the development priors is ``NEC_alpha`` (Ferrer 2022b, eq. 8).
    """

    alpha: jax.Array
    costs: jax.Array
    cost_ratio: jax.Array  # c_12 / c_21 = alpha P_2 / P_1
    threshold: jax.Array
    sensitivity: jax.Array
    specificity: jax.Array
    nec: jax.Array


@jax.jit
def _nec_target_kernel(labels, s, target, alphas, sample_weight=None):
    s_sorted, miss, fa, valid = rates_at_cuts(labels, s, sample_weight)

    def best_cut(alpha):
        nec = (alpha * fa + miss) / jnp.minimum(alpha, 1.0)  # Ferrer (2022b) eq. 8
        k = jnp.argmin(jnp.where(valid, nec, jnp.inf))
        return k, nec[k]

    ks, necs = jax.vmap(best_cut)(alphas)
    sens = 1.0 - miss[ks]
    ok = sens >= target
    # Sensitivity falls as alpha (the weight of false alarms) grows: take the
    # largest alpha that still meets the target.
    j = jnp.max(jnp.where(ok, jnp.arange(alphas.shape[0]), 0))
    k = ks[j]
    return alphas[j], cut_threshold(s_sorted, k), sens[j], 1.0 - fa[k], necs[j], jnp.any(ok)


def nec_for_target_sensitivity(labels: ArrayLike, scores: ArrayLike, sensitivity: float, *,
                               alphas: ArrayLike | None = None, score_type: str = "log_posteriors",
                               sample_weight: ArrayLike | None = None) -> SensitivityTargetNEC:
    """The NEC-based replacement of SP@SE (Ferrer 2022b, §4.6), on development data.

    For each ``alpha`` in a sweep, the threshold minimizing ``NEC_alpha =
    (alpha R_12 + R_21) / min(alpha, 1)`` (Ferrer 2022b, eq. 8) is found by one
    sort (so calibration does not matter), and its sensitivity ``R_22``
    measured; the largest ``alpha`` whose optimal threshold still reaches the
    target sensitivity is chosen.  That ``NEC_alpha`` is then the metric to
    compare systems and datasets, with the implied cost ratio ``c_12 / c_21
    = alpha P_2 / P_1`` made explicit.

    Args:
      labels, scores, score_type: development data of the baseline system.
      sensitivity: the target ``R_22``.
      alphas: increasing ``alpha`` values to sweep (default: 801 values
        log-spaced over ``[1e-4, 1e4]``).
      sample_weight: optional ``(N,)`` non-negative weights: weighted rates
        (as :func:`roc_curve`; weight 0 leaves a sample out) and the
        development priors ``P_i = W_i / W`` of the class weight totals.

    Returns:
      :class:`SensitivityTargetNEC`.  Raises :class:`InputError` when no
      ``alpha`` of the sweep reaches the target.
    """
    target = _target_sensitivity(sensitivity)
    labels, s, sample_weight = binary_inputs(labels, scores, score_type, sample_weight,
                                                       drop_zero_weights=True)
    if alphas is None:
        alphas = jnp.logspace(-4.0, 4.0, 801)
    else:
        alphas = v.as_array(alphas, "alphas", min_ndim=1)
        a = np.asarray(alphas, dtype=np.float64)
        if a.ndim != 1 or np.any(~np.isfinite(a)) or np.any(a <= 0) or np.any(np.diff(a) <= 0):
            raise v.InputError("`alphas` must be a 1-D increasing array of positive finite values")
        alphas = jnp.asarray(a, dtype=s.dtype)
    alpha, thr, sens, spec, nec, found = _nec_target_kernel(labels, s, jnp.asarray(target, s.dtype), alphas,
                                                            sample_weight)
    if not bool(found):
        raise v.InputError(f"no alpha in the sweep reaches sensitivity {target}: extend `alphas` towards 0")
    p_first = 1.0 - class1_fraction(labels, sample_weight)  # Ferrer's P_1 (ecjax class 0)
    ratio = alpha * (1.0 - p_first) / p_first
    costs = jnp.array([[0.0, 1.0], [0.0, 0.0]], dtype=s.dtype) * ratio + jnp.array([[0.0, 0.0], [1.0, 0.0]], dtype=s.dtype)
    return SensitivityTargetNEC(alpha, costs, ratio, thr, sens, spec, nec)
