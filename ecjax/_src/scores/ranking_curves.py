"""Ranking curves users expect beside the EC: precision-recall and DET curves, average precision.

These complement :func:`ecjax.scores.roc_curve`, :func:`ecjax.scores.auc` and
:func:`ecjax.scores.auc_one_vs_rest` (with :func:`ecjax.scores.auc_one_vs_one`,
the AUCs are in :mod:`~ecjax._src.scores.roc`).  The binary ones rank samples by the
class-1 log-odds of the scores exactly as those functions do (``"llr"`` as
is, ``"log_likelihoods"`` as ``l_1 - l_0``, log-posteriors and probabilities
as ``log P(1|x) - log P(0|x)``, logits after a log-softmax), so all of them
share one set of thresholds.  Ferrer (2025) App. C.3 and Ferrer (2022b) §4.5 explain
what such threshold-free curves can and cannot tell (they ignore calibration
and threshold selection); the decision curve, in contrast, is a family of
expected costs of Bayes decisions (Ferrer 2025, App. C.1), in
:mod:`~ecjax._src.scores.bayes_decisions` (both take the binary inputs of :mod:`~ecjax._src.scores.inputs`).

Curves with one point per distinct threshold have a data-dependent length:
with ``padded=True`` they instead have one point per sample (its score as
the threshold), tied scores sharing their threshold's point and points that
scikit-learn leaves out repeating their neighbour (the same curve, traced
with repeated vertices), so the curves of systems scored on the same labels
stack along leading batch axes and the functions run under ``jax.jit`` /
``jax.vmap``.  :func:`average_precision` has a fixed shape and is batched
and jit-able as it is.  Under ``jit`` invalid values follow the NaN contract of
:mod:`ecjax.inputs`.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.scores.inputs import binary_inputs, binary_labels_and_weights, binary_ok, binary_scores, check_padded

# ----------------------------------------------------------------- kernels

def ranking_log_odds(s: jax.Array, score_type: str) -> jax.Array:
    """Kernel: class-1 log-odds of validated binary scores, up to a constant shift (the ranking).

    Log-posteriors (and logged probabilities) give ``s_1 - s_0`` as they are,
    so the thresholds are the given scores' differences; logits are
    normalized first (:func:`~ecjax._src.decisions.class_one_log_odds_kernel`
    also normalizes log-posteriors, which moves a threshold by an ulp).
    """
    if score_type == "llr":
        return s
    if score_type == "logits":
        s = jax.nn.log_softmax(s, axis=-1)
    return s[..., 1] - s[..., 0]


def per_system(kernel: Callable[..., Any], labels: jax.Array, s: jax.Array, *args: Any) -> Any:
    """Apply a kernel written for one system ``s`` ``(N,)`` over the leading batch axes of ``s``."""
    batch = s.shape[:-1]
    out = jax.vmap(lambda one: kernel(labels, one, *args))(s.reshape((-1, s.shape[-1])))
    return jax.tree_util.tree_map(lambda x: x.reshape(batch + x.shape[1:]), out)


# --------------------------------------------------- counts at every threshold

def _counts_at_scores(labels, s, sample_weight=None):
    """Kernel: for each sorted score ``t``, the samples of each class with log-odds ``>= t``.

    Returns ``(s_sorted, tp, fp, valid, tp_n, fp_n)``: ``tp[k]`` (``fp[k]``)
    counts the class-1 (class-0) samples decided 1 by "class 1 iff ``s >=
    s_sorted[k]``", as exact integers; tied scores get the counts of their
    common threshold, and ``valid[k]`` marks the first of each run of ties
    (one point per distinct threshold).  Binary searches in the sorted scores
    of each class (as :func:`ecjax.scores.auc`) need neither cumulative sums
    nor a pass to carry tied points.  With ``sample_weight``, ``tp`` and
    ``fp`` are weight totals, and ``tp_n``, ``fp_n`` the exact integer
    numbers of samples of positive weight behind them (for comparisons
    that must be exact); without, ``tp_n, fp_n = tp, fp``.
    """
    is1 = labels == 1
    if sample_weight is not None:
        return _weighted_counts_at_scores(is1, s, sample_weight)
    s_sorted = jnp.sort(s)
    # Padding with +inf: never below any threshold, so "samples below t" counts only the class's own scores.
    below1 = jnp.searchsorted(jnp.sort(jnp.where(is1, s, jnp.inf)), s_sorted, side="left")
    below0 = jnp.searchsorted(jnp.sort(jnp.where(is1, jnp.inf, s)), s_sorted, side="left")
    n1 = jnp.sum(is1, dtype=jnp.int32)
    valid = jnp.concatenate([jnp.array([True]), s_sorted[1:] > s_sorted[:-1]])
    tp, fp = n1 - below1, (s.shape[0] - n1) - below0
    return s_sorted, tp, fp, valid, tp, fp


def suffix_sums(x: jax.Array) -> jax.Array:
    """``(N + 1,)``: entry ``k`` is ``sum(x[k:])``, summed from the top down (no cancellation for small sums)."""
    return jnp.concatenate([jnp.cumsum(x[::-1])[::-1], jnp.zeros((1,), x.dtype)])


def _weighted_counts_at_scores(is1, s, w):
    order = jnp.argsort(s)
    s_sorted, y1, w = s[order], is1[order], w[order]
    first = jnp.searchsorted(s_sorted, s_sorted, side="left")  # the first of each run of tied scores
    present = w > 0
    tp, fp = (suffix_sums(jnp.where(c, w, 0.0))[first] for c in (y1, ~y1))
    tp_n, fp_n = (suffix_sums((c & present).astype(jnp.int32))[first] for c in (y1, ~y1))
    return s_sorted, tp, fp, first == jnp.arange(s.shape[0]), tp_n, fp_n


# ------------------------------------------------------------ precision-recall

class PrecisionRecallCurve(NamedTuple):
    """Points of the precision-recall curve, thresholds increasing (scikit-learn's order).

    ``precision[n]`` and ``recall[n]`` belong to "class 1 iff log-odds
    ``>= thresholds[n]``"; the last point (``precision = 1``, ``recall = 0``)
    has no threshold, so ``thresholds`` is one shorter.
    """

    precision: jax.Array
    recall: jax.Array
    thresholds: jax.Array


def _pr_points(s_sorted, tp, fp, valid, *_):
    """Kernel: padded PR curve ``(precision, recall, thresholds, keep, tp)``: one point per sorted score + (1, 0)."""
    tp = jnp.concatenate([tp, jnp.zeros((1,), tp.dtype)])  # the last point decides nothing as class 1
    decided = tp + jnp.concatenate([fp, jnp.zeros((1,), fp.dtype)])
    precision = jnp.where(decided > 0, tp / jnp.where(decided > 0, decided, 1), 1.0)
    return precision, tp / tp[0], s_sorted, jnp.concatenate([valid, jnp.array([True])]), tp


def _average_precision_of(precision, tp):
    # Recall steps from the exact integer counts (weighted: the weight totals): differences of rounded
    # float32 recalls would lose ~1e-6 over 10^3 thresholds. Repeated points (ties) add zero-width steps.
    return jnp.sum((tp[:-1] - tp[1:]) / tp[0] * precision[:-1])


def _traced_guard(out, labels, scores, score_type, sample_weight=None, *, extra_axes=0):
    """The NaN contract for traced input (inside a caller's jit/vmap, so nothing compiles here)."""
    if not v.any_traced(labels, scores, sample_weight):
        return out
    ok = binary_ok(labels, ranking_log_odds(scores, score_type), sample_weight)
    return v.nan_where_invalid(out, ok, extra_axes=extra_axes)


def _curve_points(labels, scores, score_type, sample_weight, padded, *, curve, what):
    """The points of the padded ``curve`` (``"pr"`` or ``"det"`` of :func:`_binary_curves_kernel`), or with
    ``padded=False`` only the first of each run of tied thresholds, selected on the host (device indexing would
    compile per shape; a curve's last point, past its thresholds, is always kept)."""
    s = binary_scores(scores, score_type)
    padded = check_padded(padded, s, labels, score_type)
    labels, s, w = binary_labels_and_weights(labels, s, score_type, sample_weight, what=what,
                                             drop_zero_weights=not padded)
    *points, keep = _binary_curves_kernel(labels, s, w, score_type=score_type)[curve]
    if padded:
        return _traced_guard(tuple(points), labels, s, score_type, w, extra_axes=1)
    keep = np.asarray(keep)
    return tuple(v.to_device(np.asarray(a)[keep[:a.shape[-1]]]) for a in points)


def precision_recall_curve(labels: ArrayLike, scores: ArrayLike, *, score_type: str = "log_posteriors",
                           padded: bool = False, sample_weight: ArrayLike | None = None) -> PrecisionRecallCurve:
    """Precision ``N_22 / N_*2`` against recall ``R_22`` over all thresholds (Ferrer 2025, App. C.3, Ferrer (2022b) §4.5).

    A sample is decided class 1 (the positive class, Ferrer's H2) iff its
    class-1 log-odds is ``>= threshold``.  With ``padded=False`` there is one
    point per distinct log-odds plus the end point ``(precision 1, recall
    0)``, as ``sklearn.metrics.precision_recall_curve(labels, log_odds)``.
    Like the ROC (and unlike the EC), the curve ignores calibration: any
    increasing transformation of the scores leaves it unchanged.

    Args:
      labels: ``(N,)`` classes in {0, 1}; both must be present.
      scores: binary scores ``(..., N, 2)`` (``(..., N)`` for ``"llr"``);
        leading axes are systems and need ``padded=True``.
      score_type: any score type; only the ranking is used, so no priors.
      padded: one threshold per sample, its log-odds, in increasing order
        (``N`` thresholds, ``N + 1`` points with the end point), tied scores
        sharing their threshold's point: the same curve with repeated
        vertices and a length that depends on ``N`` only, for batches and
        ``jit``.
      sample_weight: optional ``(N,)`` non-negative weights (scikit-learn's
        meaning): the counts ``N_22``, ``N_*2`` and the class-1 total are
        weight totals, as ``sklearn.metrics.precision_recall_curve(...,
        sample_weight=)``; with ``padded=False`` samples of weight 0 are
        left out (they add no threshold), with ``padded=True`` they keep
        their points (repeated vertices).

    Returns:
      :class:`PrecisionRecallCurve`.

    Example:
      >>> c = precision_recall_curve([0, 1, 0, 1], [-1.0, 2.0, 0.5, 0.5], score_type="llr")
      >>> [float(x) for x in c.precision], [float(x) for x in c.recall], [float(x) for x in c.thresholds]
      ([0.5, 0.6666666865348816, 1.0, 1.0], [1.0, 1.0, 0.5, 0.0], [-1.0, 0.5, 2.0])
    """
    return PrecisionRecallCurve(*_curve_points(labels, scores, score_type, sample_weight, padded, curve="pr",
                                               what="a precision-recall curve"))


def average_precision(labels: ArrayLike, scores: ArrayLike, *, score_type: str = "log_posteriors",
                      sample_weight: ArrayLike | None = None) -> jax.Array:
    """Average precision ``AP = sum_n (R_n - R_{n-1}) P_n`` (the step-wise area under the PR curve).

    ``R_n`` and ``P_n`` are the recall and precision at the ``n``-th
    threshold, from the highest down (scikit-learn's
    ``average_precision_score``: no interpolation, tied scores share one
    threshold).  It is the mean, over class-1 samples, of the precision at
    that sample's score.  Ferrer (2025) App. C.3 and Ferrer (2022b) §4.5 on what such
    threshold-free summaries assume.

    Args:
      labels: ``(N,)`` classes in {0, 1}; both must be present.
      scores: binary scores ``(..., N, 2)`` (``(..., N)`` for ``"llr"``);
        leading axes are systems.
      score_type: any score type; only the ranking is used.
      sample_weight: optional ``(N,)`` non-negative weights: the weighted
        curve of :func:`precision_recall_curve`, so that ``AP`` is the
        weighted mean over class-1 samples of the precision at their scores
        (``sklearn.metrics.average_precision_score(..., sample_weight=)``).

    Returns:
      AP in ``[0, 1]``, one per system.
    """
    labels, s, w = binary_inputs(labels, scores, score_type, sample_weight, what="average precision",
                                 drop_zero_weights=False)
    return _traced_guard(_binary_curves_kernel(labels, s, w, score_type=score_type)["ap"], labels, s, score_type, w)


# ---------------------------------------------------------------------- DET

class DetCurve(NamedTuple):
    """Detection error trade-off points, thresholds increasing (false-positive rate decreasing).

    ``false_positive_rate = R_12`` (false alarms) and ``false_negative_rate
    = R_21`` (misses) of "class 1 iff log-odds ``>= thresholds[n]``".  DET
    plots draw both on probit axes (Martin et al. 1997), where normally
    distributed scores give straight lines: see the ``probit_*`` properties.
    """

    false_positive_rate: jax.Array
    false_negative_rate: jax.Array
    thresholds: jax.Array

    @property
    def probit_false_positive_rate(self) -> jax.Array:
        """``Phi^{-1}(R_12)``, the standard normal quantile (``-inf`` at rate 0, ``+inf`` at 1)."""
        return jax.scipy.special.ndtri(self.false_positive_rate)

    @property
    def probit_false_negative_rate(self) -> jax.Array:
        """``Phi^{-1}(R_21)``, the standard normal quantile (``-inf`` at rate 0, ``+inf`` at 1)."""
        return jax.scipy.special.ndtri(self.false_negative_rate)


def _det_points(s_sorted, tp, fp, valid, tp_n, fp_n):
    """Kernel: padded DET curve ``(fpr, fnr, thresholds, keep)``: one point per sorted score."""
    n = s_sorted.shape[0]
    cut = jnp.arange(n)
    n1, n0 = tp[0], fp[0]
    rates = fp / n0, (n1 - tp) / n1
    # The ends are found on the exact integer counts (of samples with positive weight): equal counts,
    # equal weighted rates.
    tp, fp, n1 = tp_n, fp_n, tp_n[0]
    # scikit-learn's det_curve drops the redundant ends: of the highest thresholds that share the least
    # false-positive count it keeps the lowest, and of the lowest thresholds that share a full true-positive
    # count the highest. Padding repeats those end points instead. Both are found among all sorted scores:
    # tied scores carry the same counts.
    top = jnp.min(jnp.where(fp == fp[n - 1], cut, n - 1))  # the first score of a run of ties
    bottom = jnp.max(jnp.where(tp == n1, cut, 0))  # the last score of a run of ties
    idx = jnp.clip(cut, bottom, top)
    keep = valid & (s_sorted >= s_sorted[bottom]) & (cut <= top)
    return rates[0][idx], rates[1][idx], s_sorted[idx], keep


def _curves_one(labels, s, sample_weight=None):
    counts = _counts_at_scores(labels, s, sample_weight)
    precision, recall, thresholds, keep, tp = _pr_points(*counts)
    return {"pr": (precision, recall, thresholds, keep), "ap": _average_precision_of(precision, tp),
            "det": _det_points(*counts)}


@partial(jax.jit, static_argnames=("score_type",))
def _binary_curves_kernel(labels, scores, sample_weight=None, *, score_type):
    """All binary curves from one sort per system; one compiled program serves every function of them.

    Under a caller's ``jit`` XLA drops the outputs that are not used.
    """
    return per_system(_curves_one, labels, ranking_log_odds(scores, score_type), sample_weight)


def det_curve(labels: ArrayLike, scores: ArrayLike, *, score_type: str = "log_posteriors", padded: bool = False,
              sample_weight: ArrayLike | None = None) -> DetCurve:
    """Detection error trade-off: misses ``R_21`` against false alarms ``R_12`` over all thresholds.

    The ROC of Ferrer (2022b) §4.5 with the miss rate ``1 - R_22`` on the vertical
    axis, plotted on probit axes (Martin et al., "The DET curve in assessment
    of detection task performance", Eurospeech 1997).  A sample is decided
    class 1 iff its class-1 log-odds is ``>= threshold``.  With
    ``padded=False`` the points equal ``sklearn.metrics.det_curve(labels,
    log_odds)``: one per distinct log-odds, without the redundant ends (the
    thresholds above the one that reaches the least false-positive rate, and
    below the one that first reaches a miss rate of 0).

    Args:
      labels: ``(N,)`` classes in {0, 1}; both must be present.
      scores: binary scores ``(..., N, 2)`` (``(..., N)`` for ``"llr"``);
        leading axes are systems and need ``padded=True``.
      score_type: any score type; only the ranking is used, so no priors.
      padded: one point per sample, its log-odds as the threshold, in
        increasing order (``N`` points); tied scores share their threshold's
        point and the points scikit-learn leaves out at the ends repeat the
        end point they lead to: the same curve with repeated vertices and a
        length that depends on ``N`` only, for batches and ``jit``.
      sample_weight: optional ``(N,)`` non-negative weights: rates as
        fractions of each class's weight total
        (``sklearn.metrics.det_curve(..., sample_weight=)``); samples of
        weight 0 as in :func:`precision_recall_curve`.

    Returns:
      :class:`DetCurve`; its ``probit_false_positive_rate`` and
      ``probit_false_negative_rate`` give the DET plot's axes.
    """
    return DetCurve(*_curve_points(labels, scores, score_type, sample_weight, padded, curve="det",
                                   what="a DET curve"))
