"""Scores judged by their ranking alone: ROC, the AUCs, EER and operating points (Ferrer 2022b, §4.5, §4.7).

The binary functions sort the class-1 log-odds once and read the error
rates at every cut (:func:`rates_at_cuts`); the multiclass AUCs average
binary ones, over each class against the rest (:func:`auc_one_vs_rest`) or
over pairs of classes (:func:`auc_one_vs_one`).  No priors or costs enter,
except in :func:`nec_for_target_sensitivity` (and priors that turn
likelihood-type scores into the posteriors being ranked).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.decisions import log_posteriors_kernel, one_vs_rest_log_odds
from ecjax._src.precision import einsum, matmul
from ecjax._src.scores.inputs import (
    binary_log_odds_inputs, binary_ok, class1_fraction, increasing_alphas, posterior_inputs, scores_ok,
    validated_sample_weight, weights_ok,
)

AUC_AVERAGES = ("macro", "weighted")  # how auc_one_vs_one averages its pairs of classes


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

    The weighted kernels below take it with weights ``(..., N)`` and any
    leading batch axes, in sample order or (``in_sorted_order=True``) already
    in this sort's order: a bootstrap sorts once and evaluates every draw's
    weights on the same order.
    """

    order: jax.Array  # (N,) sample indices by increasing score; among tied scores class 1 before class 0
    is1: jax.Array  # (N,) labels[order] == 1
    tie_end: jax.Array  # (N,) one past the last sorted position of each position's tie group
    s_sorted: jax.Array  # (N,) the scores in that order
    valid: jax.Array  # (N + 1,) cut k splits no tie (:func:`rates_at_cuts`)
    # The tied (class-1, class-0) pairs of sorted positions, the first `tie_capacity(N)` of them (padded with N), and
    # their number (saturated at the capacity + 1): a draw's AUC reads the weights of these instead of all N tie ends.
    tied_class1: jax.Array  # (tie_capacity(N),) int32
    tied_class0: jax.Array  # (tie_capacity(N),) int32
    num_tied_pairs: jax.Array  # () int32


def tie_capacity(num_samples: int) -> int:
    """How many tied (class-1, class-0) pairs :class:`SortedScores` lists: ``N / 16`` (at least 1).

    More of them (heavily tied scores, e.g. rounded ones) and the AUC reads
    the tie ends of all ``N`` positions instead, as fast as without the list.
    """
    return max(1, num_samples // 16)


def _saturated_prefix_sums(counts: jax.Array, limit: int) -> jax.Array:
    """``min(cumsum(counts), limit)`` of non-negative int32 ``counts`` (each below ``2^31``), exact at any length.

    The running sum is taken modulo ``2^32`` (uint32); it wraps at most once per step, where it decreases, and the
    true sum is past ``2^32 > limit`` from the first wrap on.  A ``jnp.cumsum`` and an ``argmax`` compile in a fifth
    of the time of a saturating ``associative_scan`` (0.3 s against 1.1 s of CPU at ``N = 10^6``).
    """
    wrapped = jnp.cumsum(counts.astype(jnp.uint32), dtype=jnp.uint32)
    decreased = wrapped[1:] < wrapped[:-1]
    first_wrap = jnp.where(jnp.any(decreased), jnp.argmax(decreased) + 1, counts.shape[0])
    past = jnp.arange(counts.shape[0]) >= first_wrap
    return jnp.where(past, limit, jnp.minimum(wrapped, np.uint32(limit)).astype(jnp.int32))


def sort_scores(labels: jax.Array, s: jax.Array) -> SortedScores:
    """Kernel: the one sort of :class:`SortedScores` (O(N log N)); jit-able."""
    order = jnp.lexsort((labels != 1, s))  # primary key last: the scores; among ties class 1 first
    s_sorted = s[order]
    tie_end = jnp.searchsorted(s_sorted, s_sorted, side="right").astype(jnp.int32)
    is1 = labels[order] == 1
    n, capacity = s.shape[0], tie_capacity(s.shape[0])
    # Class 1 comes first in its tie group: the class-0 samples tied with class-1 position k are the last
    # n0[k] positions before tie_end[k].
    class0_before = _with_zero(jnp.cumsum(~is1, dtype=jnp.int32))
    n0 = jnp.where(is1, class0_before[tie_end] - class0_before[:-1], 0)
    # Pair p belongs to the position k with ends[k - 1] <= p < ends[k]; the count saturates past the capacity, where
    # the list is not used.
    ends = _saturated_prefix_sums(jnp.minimum(n0, capacity + 1), capacity + 1)
    pair = jnp.arange(capacity, dtype=jnp.int32)
    k = jnp.minimum(jnp.searchsorted(ends, pair, side="right"), n - 1).astype(jnp.int32)
    listed = pair < ends[-1]
    class1 = jnp.where(listed, k, n)
    class0 = jnp.where(listed, tie_end[k] - ends[k] + pair, n)
    return SortedScores(order, is1, tie_end, s_sorted, _valid_cuts(s_sorted), class1, class0, ends[-1])


# Block length of prefix_sums: each block is summed by a product with a triangular matrix of ones (N * 64 flops).
_SCAN_BLOCK = 64


def _blocks(x, fill=0):
    """``(..., N)`` -> ``(..., ceil(N / 64), 64)``, the end padded with ``fill``."""
    n = x.shape[-1]
    num_blocks = max(1, -(-n // _SCAN_BLOCK))
    padded = x if num_blocks * _SCAN_BLOCK == n else jnp.pad(
        x, [(0, 0)] * (x.ndim - 1) + [(0, num_blocks * _SCAN_BLOCK - n)], constant_values=fill)
    return padded.reshape(x.shape[:-1] + (num_blocks, _SCAN_BLOCK))


def _blocked_prefix_sums(blocks):
    """``(within, before)`` of :func:`_blocks` output: the inclusive running sums inside each block and the sum of
    all earlier blocks (``(..., num_blocks)``); the prefix sum at ``(i, j)`` is ``within[i, j] + before[i]``."""
    within = matmul(blocks, jnp.triu(jnp.ones((_SCAN_BLOCK, _SCAN_BLOCK), blocks.dtype)))
    # The sum of all earlier blocks, shifted rather than subtracted (no cancellation).  jnp.cumsum of so few totals
    # runs as fast as associative_scan and compiles in 0.4 s instead of 1.1 s (float32 error 1.4e-7 of the total at
    # 15625 blocks, against 2.3e-7).
    before = _with_zero(jnp.cumsum(within[..., -1], axis=-1)[..., :-1])
    return within, before


def prefix_sums(x: jax.Array) -> jax.Array:
    """Kernel: inclusive cumulative sums of floating ``x`` along its last axis, in blocks of 64 summed by a product.

    The axis is cut into blocks of ``b = 64``; each block's running sums are
    one product with the upper-triangular matrix of ones (``x_block @ U``,
    ``U[i, j] = [i <= j]``, at stated precision), and the sum of the blocks
    before it (``jnp.cumsum`` of the ``N / 64`` block totals) is added.  On
    XLA's CPU backend this is about twice as fast as a scan of all ``N``
    (measured on two cores, ``(4, 10^6)`` float32: 2.9 ms against 5.4 ms per
    vector for ``jax.lax.associative_scan``, 7 ms for ``jnp.cumsum``;
    recursing on the totals, 4.5 ms, loses to the cumulative sum of so few):
    the products run in vectorized matrix kernels, where a scan is dozens of
    strided passes.  Each output is a sum of at most 64 rounded terms in its
    block plus the blocks' cumulative sum: float32 error a few ``eps``
    relative to the total (tested against a float64 running sum), where a
    running sum's grows with ``N``.
    """
    n = x.shape[-1]
    within, before = _blocked_prefix_sums(_blocks(x))
    return (within + before[..., None]).reshape(x.shape[:-1] + (-1,))[..., :n]


def _class_weights_sorted(ranked, weights, in_sorted_order):
    """``(w0, w1)``: the weights ``(..., N)`` in sorted order, split by class (0 where the other class)."""
    w = weights if in_sorted_order else jnp.take(weights, ranked.order, axis=-1)
    # Masks as products with 0 and 1 (exact for finite weights): XLA's CPU backend fuses a boolean select into the
    # products after it at about half their speed.
    class1 = ranked.is1.astype(w.dtype)
    return w * (1.0 - class1), w * class1


def _with_zero(x):
    return jnp.concatenate([jnp.zeros(x.shape[:-1] + (1,), x.dtype), x], -1)


def weighted_rates_at_cuts(ranked: SortedScores, weights: jax.Array, *,
                           in_sorted_order: bool = False) -> tuple[jax.Array, jax.Array]:
    """Kernel: ``(miss, fa)``, ``(..., N + 1)``, at every cut of ``ranked`` for weights ``(..., N)``.

    ``miss[k]`` is the class-1 weight below cut ``k`` over the class-1
    weight, ``fa[k]`` the class-0 weight above it over the class-0 weight
    (cuts that split ties, ``ranked.valid`` False, are not thresholds).  A
    class of weight 0 gives rates 0, not NaN.  The weights are in sample
    order, or in the sorted order of ``ranked`` (``weights[..., k]`` belongs
    to sample ``ranked.order[k]``) with ``in_sorted_order=True``: no gather.
    """
    w0, w1 = _class_weights_sorted(ranked, weights, in_sorted_order)
    below1 = _with_zero(prefix_sums(w1))
    # fa summed from the top down: W_0 minus a running sum would lose the small rates to cancellation.
    above0 = _with_zero(prefix_sums(w0[..., ::-1]))[..., ::-1]
    total1, total0 = below1[..., -1:], above0[..., :1]
    # Clipped: XLA may divide by multiplying with the reciprocal, so W / W can round to 1 + 2**-23.
    miss = jnp.clip(below1 / jnp.where(total1 > 0, total1, 1.0), 0.0, 1.0)
    fa = jnp.clip(above0 / jnp.where(total0 > 0, total0, 1.0), 0.0, 1.0)
    return miss, fa


def _tied_pairs_weight(ranked, w, within, before, w1):
    """``sum_k w1_k T_0(k)`` over class-1 positions ``k``, ``T_0(k)`` the class-0 weight tied with it, for weights
    ``w`` ``(..., N)`` in sorted order (blocked: class-1 part ``w1``, class-0 prefix sums ``within``, ``before``).

    The sum of ``w_k w_l`` over the tied pairs ``ranked`` lists when they all
    fit in the list (any real-valued scores), else ``T_0(k) = B_0(e_k - 1) -
    B_0(k)`` at every position (a gather of ``N``).
    """
    n = ranked.is1.shape[0]

    def listed(_):
        k, l = jnp.minimum(ranked.tied_class1, n - 1), jnp.minimum(ranked.tied_class0, n - 1)
        pairs = jnp.take(w, k, axis=-1) * jnp.take(w, l, axis=-1)
        return jnp.sum(jnp.where(ranked.tied_class1 < n, pairs, 0.0), -1)

    def every(_):
        ends = _blocks(ranked.tie_end - 1, fill=n - 1)  # a padded position has no class-1 weight: any index does
        below0 = within + before[..., None]
        tied0 = within[..., ends // _SCAN_BLOCK, ends % _SCAN_BLOCK] + before[..., ends // _SCAN_BLOCK] - below0
        return jnp.sum(w1 * tied0, (-2, -1))

    return jax.lax.cond(ranked.num_tied_pairs <= ranked.tied_class1.shape[0], listed, every, None)


def sorted_weighted_auc(ranked: SortedScores, weights: jax.Array, *, in_sorted_order: bool = False) -> jax.Array:
    """Kernel: weighted AUC ``(...,)`` of ``ranked`` for weights ``(..., N)``, ties one half.

    ``AUC = sum_{i: y=1} sum_{j: y=0} w_i w_j ([s_i > s_j] + [s_i = s_j] / 2) / (W_1 W_0)``
    (Hanley & McNeil 1982, weighted as ``sklearn.metrics.roc_auc_score(...,
    sample_weight=)``).  With ``B_0(k)`` the class-0 weight of the first
    ``k + 1`` sorted positions (:func:`prefix_sums`), a class-1 sample at
    position ``k`` has ``B_0(k)`` class-0 weight below it (the sort puts the
    tied class-1 samples first) and ``T_0(k) = B_0(e_k - 1) - B_0(k)`` tied
    with it (its tie group ends before ``e_k``), so

        AUC = sum_k w1_k (B_0(k) + T_0(k) / 2) / (W_0 W_1):

    one prefix sum and one weighted sum per weight vector, no sort; the tie
    term is the sum of ``w_k w_l`` over the tied pairs that ``ranked`` lists.  The
    sums stay in the blocks of :func:`prefix_sums` (on XLA's CPU backend,
    flattening them back to ``N`` took as long as the prefix sum).  The
    weights are in sample order (one gather into sorted order), or already in
    the sorted order of ``ranked`` with ``in_sorted_order=True``
    (``weights[..., k]`` belongs to sample ``ranked.order[k]``), as the
    bootstrap draws them.
    """
    w = weights if in_sorted_order else jnp.take(weights, ranked.order, axis=-1)
    class1 = _blocks(ranked.is1.astype(w.dtype))  # padding: class 0 of weight 0
    blocks = _blocks(w)
    w1 = blocks * class1
    within, before = _blocked_prefix_sums(blocks * (1.0 - class1))
    total0 = before[..., -1] + within[..., -1, -1]
    safe0 = jnp.where(total0 > 0, total0, 1.0)
    # The weighted sums as products (stated precision): XLA's CPU reductions of the same took twice the time.
    total1 = einsum("...ij,ij->...", blocks, class1)
    below = einsum("...ij,...ij->...", w1, within + before[..., None])
    tied = _tied_pairs_weight(ranked, w, within, before, w1)
    return (below + 0.5 * tied) / safe0 / jnp.where(total1 > 0, total1, 1.0)


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
    labels, s, sample_weight = binary_log_odds_inputs(labels, scores, score_type, sample_weight, drop_zero_weights=True)
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
    labels, s, sample_weight = binary_log_odds_inputs(labels, scores, score_type, sample_weight,
                                                      drop_zero_weights=False, order_only=True)
    out = _auc_kernel(labels, s) if sample_weight is None else _weighted_auc_kernel(labels, s, sample_weight)
    traced = v.any_traced(labels, s, sample_weight)
    return v.nan_where_invalid(out, binary_ok(labels, s, sample_weight)) if traced else out


@jax.jit
def _auc_one_vs_rest_kernel(labels, log_post, sample_weight=None):
    classes = jnp.arange(log_post.shape[-1])
    # Ranked by each class's log-odds against the rest (the order of P(i|x)), which do not saturate near 1.
    log_odds = one_vs_rest_log_odds(log_post)

    def one(c):
        is_c = (labels == c).astype(labels.dtype)
        if sample_weight is None:
            return _auc_kernel(is_c, log_odds[:, c])
        return weighted_auc_kernel(is_c, log_odds[:, c], sample_weight)

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


def _pairwise_auc(labels, log_post, sample_weight=None):
    """Kernel: ``A[i, j] = P(s_i(x) > s_i(x')) + P(=)/2`` for ``x`` of class ``i``, ``x'`` of class ``j``.

    ``s_i`` ``(N, K)`` ranks the samples as ``P(i|x)`` does (the one-vs-rest log-odds).  One sort per column ``i``: cumulative
    class counts along the sorted scores give, for every sample, how many
    samples of each class lie strictly below and at or below it; each
    sample's share (a fraction of ``N_j`` in ``[0, 1]``, so float32 sums stay
    accurate) is summed over the samples of class ``i``.  The diagonal is
    meaningless.  With ``sample_weight`` every count is a weight total (the
    probabilities are over weighted pairs) and ``n_i`` the class totals.
    """
    n, k = log_post.shape
    if sample_weight is None:
        one_hot = jax.nn.one_hot(labels, k, dtype=jnp.int32)
    else:
        one_hot = jax.nn.one_hot(labels, k, dtype=sample_weight.dtype) * sample_weight[:, None]
    n_i = jnp.sum(one_hot, axis=0)
    of_class = labels[:, None] == jnp.arange(k)[None, :]
    # Each sample of class i enters the class-i average with its weight (1 unweighted).
    mass = of_class if sample_weight is None else jnp.where(of_class, sample_weight[:, None], 0.0)

    def column(i):
        s = log_post[:, i]
        order = jnp.argsort(s)
        s_sorted = s[order]
        cum = jnp.concatenate([jnp.zeros((1, k), one_hot.dtype), jnp.cumsum(one_hot[order], axis=0)])
        below = cum[jnp.searchsorted(s_sorted, s, side="left")]  # (N, K): per class, samples with score < s_n
        not_above = cum[jnp.searchsorted(s_sorted, s, side="right")]  # ... with score <= s_n
        share = (below + not_above) / (2 * jnp.where(n_i > 0, n_i, 1))
        return jnp.sum(mass[:, i, None] * share, axis=0) / jnp.where(n_i[i] > 0, n_i[i], 1)

    return jax.lax.map(column, jnp.arange(k)), n_i


def _ovo_one(labels, log_post, weighted, sample_weight=None):
    pairwise, n_i = _pairwise_auc(labels, log_post, sample_weight)
    k = log_post.shape[-1]
    off_diagonal = ~jnp.eye(k, dtype=bool)
    # Every pair appears twice (A_ij and A_ji), so the mean over the off-diagonal is the mean of
    # (A_ij + A_ji) / 2 over the pairs, with the same (symmetric) weights.
    # A traced switch, so "macro" and "weighted" share one compiled program.
    weights = jnp.where(weighted, (n_i[:, None] + n_i[None, :]) / jnp.sum(n_i), 1.0)
    weights = jnp.where(off_diagonal, weights, 0.0)
    return jnp.sum(weights * pairwise) / jnp.sum(weights)


@jax.jit
def _ovo_kernel(labels, scores, log_p, weighted, sample_weight=None):
    # For every (N, K) score type the log-posteriors are log_softmax(scores + log-priors), the log-priors
    # being 0 for posterior types: one compiled program serves them all.
    log_post = log_posteriors_kernel(scores, log_p, "log_likelihoods")
    batch = log_post.shape[:-2]
    # Ranked by each class's log-odds against the rest (the order of P(i|x)), which do not saturate near 1.
    flat = one_vs_rest_log_odds(log_post).reshape((-1,) + log_post.shape[-2:])
    return jax.vmap(lambda lp: _ovo_one(labels, lp, weighted, sample_weight))(flat).reshape(batch)


def auc_one_vs_one(labels: ArrayLike, scores: ArrayLike, *, priors: ArrayLike | None = None,
                   score_type: str = "log_posteriors", average: str = "macro",
                   sample_weight: ArrayLike | None = None) -> jax.Array:
    """Multiclass AUC of Hand & Till (2001): the AUC averaged over all pairs of classes.

    For classes ``i != j``, ``A(i|j)`` is the Mann-Whitney statistic of the
    posterior ``P(i|x)`` on the samples of classes ``i`` and ``j`` only:
    ``P(P(i|x) > P(i|x')) + P(P(i|x) = P(i|x')) / 2`` for ``x`` of class
    ``i`` and ``x'`` of class ``j`` (ties count one half, as in
    :func:`ecjax.scores.auc`).  Hand & Till's ``M`` ("A simple
    generalisation of the area under the ROC curve for multiple class
    classification problems", Machine Learning 45, 171-186) averages ``A_ij
    = (A(i|j) + A(j|i)) / 2`` over the ``K (K - 1) / 2`` pairs.  Unlike
    :func:`ecjax.scores.auc_one_vs_rest`, whose "rest" mixes the other
    classes in their data proportions, each term compares two classes only,
    so ``M`` does not depend on the class distribution; Ferrer (2022b) §4.7
    explains why such averages of binary detection metrics need not track
    classification performance.  Equal to
    ``sklearn.metrics.roc_auc_score(labels, posteriors, multi_class="ovo")``;
    for ``K = 2`` it is the binary AUC.

    Args:
      labels: ``(N,)`` true classes; every one of the ``K`` classes needs samples.
      scores: ``(..., N, K)`` scores; leading axes are systems.
      priors, score_type: as in :func:`ecjax.scores.auc_one_vs_rest`: only
        likelihood-type scores take (and need) priors, to form the
        posteriors whose ranking is used; posterior-type scores need none.
      average: ``"macro"`` (Hand & Till: every pair counts the same) or
        ``"weighted"`` (pair ``{i, j}`` weighted by its share of the samples
        ``(N_i + N_j) / N``, as scikit-learn's ``average="weighted"``).
      sample_weight: optional ``(N,)`` non-negative weights (frequency
        weights): ``A(i|j)`` is taken over pairs weighted by the product of
        their weights, and ``N_i`` are the class weight totals, so an integer
        weight ``k`` is ``k`` copies of the sample (scikit-learn's
        ``multi_class="ovo"`` takes no ``sample_weight``).  Every class needs
        a positive weight total.

    Returns:
      The multiclass AUC, one per system.
    """
    v.check_choice(average, "average", AUC_AVERAGES)
    if score_type == "llr":
        raise v.InputError("`score_type` 'llr' is binary; the one-vs-one AUC of two classes is "
                           "ecjax.scores.auc, or pass (N, K) scores of another score type")
    a, neg_inf = v.as_log_domain_scores(scores, score_type)
    s, log_p = v.scores_and_log_priors(a, priors, score_type)
    s = v.restore_neg_inf(s, neg_inf)
    k = s.shape[-1]
    y = v.as_label_vector(labels, num_classes=k, scores=s, upper_is="the number of classes in `scores`")
    sw = None if sample_weight is None else v.as_sample_weight(sample_weight, y)
    v.check_classes_present(y, sw, k, why="the AUC of its pairs is undefined")
    out = _ovo_kernel(y, s, log_p, np.bool_(average == "weighted"), sw)
    if v.any_traced(y, s, log_p, sw):
        log_post = log_posteriors_kernel(s, log_p, score_type)
        w = jnp.ones(y.shape, log_post.dtype) if sw is None else sw
        totals = jax.ops.segment_sum(jnp.where(y >= 0, w, 0.0), jnp.where(y >= 0, y, 0),
                                     num_segments=k)
        ok = (jnp.all(y >= 0) & jnp.all(totals > 0) & ~jnp.any(jnp.isnan(log_post), axis=(-2, -1))
              & jnp.all(jnp.isfinite(w) & (w >= 0)))
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


def sorted_weighted_eer(ranked: SortedScores, weights: jax.Array, *, in_sorted_order: bool = False) -> jax.Array:
    """Kernel: ROCCH-EER ``(...,)`` of ``ranked`` for weights ``(..., N)``: :func:`eer_of_rates` of the weighted
    rates of one sort (:func:`weighted_rates_at_cuts`; weights in sample order, or sorted as the bootstrap draws them)."""
    miss, fa = weighted_rates_at_cuts(ranked, weights, in_sorted_order=in_sorted_order)
    flat = miss.reshape(-1, miss.shape[-1]), fa.reshape(-1, fa.shape[-1])
    return jax.vmap(lambda m, f: eer_of_rates(m, f, ranked.valid))(*flat).reshape(miss.shape[:-1])


@jax.jit
def _eer_kernel(labels, s, sample_weight=None):
    # Weighted, rates_at_cuts is the sort and the rates of sorted_weighted_eer (the bootstrap's kernel).
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
    labels, s, sample_weight = binary_log_odds_inputs(labels, scores, score_type, sample_weight,
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
    target = v.as_scalar(sensitivity, "sensitivity", low=0.0, high=1.0)
    labels, s, sample_weight = binary_log_odds_inputs(labels, scores, score_type, sample_weight, drop_zero_weights=True)
    out = _sp_at_se_kernel(labels, s, jnp.asarray(target, s.dtype), sample_weight)
    traced = v.any_traced(labels, s, sample_weight)
    return v.nan_where_invalid(out, binary_ok(labels, s, sample_weight)) if traced else out


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
    target = v.as_scalar(sensitivity, "sensitivity", low=0.0, high=1.0)
    labels, s, sample_weight = binary_log_odds_inputs(labels, scores, score_type, sample_weight, drop_zero_weights=True)
    if alphas is None:
        alphas = jnp.logspace(-4.0, 4.0, 801)
    else:
        alphas = jnp.asarray(increasing_alphas(alphas), dtype=s.dtype)
    alpha, thr, sens, spec, nec, found = _nec_target_kernel(labels, s, jnp.asarray(target, s.dtype), alphas,
                                                            sample_weight)
    if not bool(found):
        raise v.InputError(f"no alpha in the sweep reaches sensitivity {target}: extend `alphas` towards 0")
    p_first = 1.0 - class1_fraction(labels, sample_weight)  # Ferrer's P_1 (ecjax class 0)
    ratio = alpha * (1.0 - p_first) / p_first
    costs = jnp.array([[0.0, 1.0], [0.0, 0.0]], dtype=s.dtype) * ratio + jnp.array([[0.0, 0.0], [1.0, 0.0]], dtype=s.dtype)
    return SensitivityTargetNEC(alpha, costs, ratio, thr, sens, spec, nec)
