"""Thresholds chosen by F-beta, MCC or Youden's J, and the costs they imply.

Ferrer (2025) §4.1 (Figs. 1-2) and §5 (conclusions): the binary threshold that maximizes
F-beta, the Matthews correlation coefficient or Youden's J is the Bayes
threshold of *some* expected cost, whose cost ratio the user never chose and
which moves with the score distribution.  :func:`optimal_metric_threshold`
finds that threshold exactly (every cut between distinct scores, one sort)
and makes the implied cost explicit.

Notation.  Class 1 is the positive class (Ferrer's ``H_2``); ``s`` is the
class-1 log-odds of the scores (:func:`optimal_metric_threshold` says which
log-odds per score type); the decisions are "class 1 iff ``s > t``".  Costs
follow :mod:`ecjax.costs`: ``c[i, j]`` is the cost of deciding ``j`` when the
truth is ``i``, so ``c[0, 1]`` is a false alarm and ``c[1, 0]`` a miss (in
Ferrer's ``c_12`` and ``c_21``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.scores.inputs import checked_beta

METRICS = ("f1", "f_beta", "mcc", "youden")
_METRIC_INDEX = {"f1": 0, "f_beta": 0, "mcc": 1, "youden": 2}  # rows of _metric_at_cuts
# Samples are padded to a power of two (ecjax._src.inputs.bucket_length), at least this many, so that data of a
# similar size (and every set up to this size) reach the same compiled program.
_MIN_SAMPLE_BUCKET = 2048


class MetricThreshold(NamedTuple):
    """The threshold that maximizes a metric, and the expected cost it is the Bayes threshold of.

    Every array has the batch shape of the inputs (``counts`` adds ``(2, 2)``).

    Attributes:
      threshold: decide class 1 iff ``s > threshold``: the midpoint of the
        gap between the two sorted scores the best cut falls between
        (``-inf``: every sample is class 1; ``+inf``: none is).
      threshold_low, threshold_high: every ``t`` in ``[threshold_low,
        threshold_high)`` gives the same decisions (the scores on either side
        of the cut), so every cost ratio whose Bayes threshold lies there is
        implied equally; ``implied_cost_ratio`` is the one at ``threshold``.
      metric_value: the largest value of the metric over all thresholds.
      counts: ``(2, 2)`` exact confusion counts at ``threshold`` (rows = true
        class, columns = decision): ``[[TN, FP], [FN, TP]]``; with
        ``sample_weight``, their weight totals (floats).
      implied_cost_ratio: ``r = c[1, 0] / c[0, 1]``, the cost of a miss
        relative to a false alarm for which ``threshold`` is the Bayes
        threshold (Ferrer 2025, eq. 20; Ferrer (2022b) eq. 48 for LLRs).  The implied
        cost matrix is ``[[0, 1], [r, 0]]``.
      effective_prior_log_odds: ``theta = log(P_1 c[1, 0] / (P_0 c[0, 1]))``
        with the evaluation priors ``P``: the one parameter of a binary EC
        (Ferrer 2022b, eq. 9, ``alpha = exp(-theta)``); the Bayes threshold on the
        LLR is ``-theta``.
      implied_nec: NEC at ``threshold`` under the implied costs and priors
        ``P``: ``(alpha R_01 + R_10) / min(alpha, 1)`` (Ferrer 2022b, eq. 8), with
        ``R_01`` the false-alarm and ``R_10`` the miss rate (1 for a
        trivial cut: it is then the best naive decision).
    """

    threshold: jax.Array
    threshold_low: jax.Array
    threshold_high: jax.Array
    metric_value: jax.Array
    counts: jax.Array
    implied_cost_ratio: jax.Array
    effective_prior_log_odds: jax.Array
    implied_nec: jax.Array


def _metric_at_cuts(tp, fp, fn, tn, beta, metric_index):
    """The metric at every cut from exact counts (Ferrer 2025, eqs. 9 and 14; Youden's J = R_11 - R_01).

    ``metric_index`` (traced, so one compiled program serves every metric) picks
    F-beta (0), MCC (1) or Youden's J (2); the three curves cost O(N), next to
    the O(N log N) sort.
    """
    dtype = jnp.result_type(float)
    tp, fp, fn, tn = (x.astype(dtype) for x in (tp, fp, fn, tn))
    n1, n0 = tp + fn, tn + fp
    b2 = jnp.asarray(beta, dtype) ** 2
    # Both classes have samples, so (1 + b2) TP + b2 FN + FP >= b2 N_1 > 0: never 0/0.
    f_beta = (1.0 + b2) * tp / ((1.0 + b2) * tp + b2 * fn + fp)
    youden = tp / n1 - fp / n0
    # MCC = J sqrt(N_0 N_1 / (D_0 D_1)) (Ferrer 2025, eq. 14, D_j = decisions j): products of counts
    # would pass 2**31 and lose float32 digits to cancellation; this form has neither.
    d1, d0 = tp + fp, tn + fn
    trivial = (d1 == 0) | (d0 == 0)
    # A cut that decides one class only has MCC 0/0; 0 as scikit-learn (J is 0 there too).
    mcc = jnp.where(trivial, 0.0, youden * jnp.sqrt((n0 / jnp.where(trivial, 1.0, d0))
                                                    * (n1 / jnp.where(trivial, 1.0, d1))))
    return jnp.stack([f_beta, mcc, youden])[metric_index]


def _cut_counts(is1, is0, w):
    """``(tp, fp, fn, tn)`` at every cut ``k`` (class 0 for the ``k`` lowest sorted scores): exact integer counts,
    or with frequency weights ``w`` weight totals, those above the cut summed from the top down (no cancellation
    for small totals)."""
    if w is None:
        zero = jnp.zeros((1,), jnp.int32)
        fn = jnp.concatenate([zero, jnp.cumsum(is1, dtype=jnp.int32)])
        tn = jnp.concatenate([zero, jnp.cumsum(is0, dtype=jnp.int32)])
        return fn[-1] - fn, tn[-1] - tn, fn, tn
    zero = jnp.zeros((1,), w.dtype)
    w1, w0 = jnp.where(is1, w, 0.0), jnp.where(is0, w, 0.0)
    below = [jnp.concatenate([zero, jnp.cumsum(x)]) for x in (w1, w0)]
    above = [jnp.concatenate([jnp.cumsum(x[::-1])[::-1], zero]) for x in (w1, w0)]
    return above[0], above[1], below[0], below[1]


def _one_system(labels, s, w, num_samples, priors, beta, metric_index, likelihood, data_priors):
    """Best cut of one system: one sort, cumulative counts, the metric at every cut, argmax.

    ``s`` may be padded past ``num_samples`` with ``+inf`` (labels 0): padding
    sorts last, is counted in no class, and the cuts inside it are not valid.
    ``w``: frequency weights (``None``: every sample counts 1).
    """
    n = s.shape[0]
    order = jnp.argsort(s)
    s_sorted = s[order]
    real = jnp.arange(n) < num_samples
    is1 = (labels[order] == 1) & real
    is0 = (labels[order] == 0) & real
    # Cut k decides class 0 for the k lowest scores and class 1 for the rest.
    tp, fp, fn, tn = _cut_counts(is1, is0, None if w is None else w[order])
    n1, n0 = tp[0], fp[0]
    # A cut between tied scores is realized by no threshold.
    valid = jnp.concatenate([jnp.array([True]), s_sorted[1:] > s_sorted[:-1], jnp.array([True])])
    valid = valid & (jnp.arange(n + 1) <= num_samples)
    value = _metric_at_cuts(tp, fp, fn, tn, beta, metric_index)
    k = jnp.argmax(jnp.where(valid, value, -jnp.inf))  # ties: the first, i.e. the lowest threshold

    low = jnp.where(k > 0, s_sorted[jnp.maximum(k - 1, 0)], -jnp.inf)
    high = jnp.where(k < n, s_sorted[jnp.minimum(k, n - 1)], jnp.inf)
    mid = 0.5 * (low + high)
    # Two adjacent floats can have a midpoint that rounds up to the higher one, which would then
    # be decided class 0: keep the lower one instead (s > low still puts the cut in the same place).
    mid = jnp.where(mid >= high, low, mid)
    threshold = jnp.where(jnp.isinf(low), -jnp.inf, jnp.where(jnp.isinf(high), jnp.inf, mid))

    dtype = s.dtype
    total = num_samples if w is None else n1 + n0  # the data priors are the (weighted) class fractions
    p1 = jnp.where(data_priors, n1.astype(dtype) / total, priors[1])
    p0 = jnp.where(data_priors, n0.astype(dtype) / total, priors[0])
    log_prior_odds = jnp.log(p1) - jnp.log(p0)
    # Bayes on LLRs (Ferrer 2022b, eq. 48): class 1 iff llr > log(P_0 c01 / (P_1 c10)), so theta = -t.
    # Bayes on posteriors as given (Ferrer 2025, eq. 20): class 1 iff s > log(c01 / c10), so log r = -t.
    log_ratio = jnp.where(likelihood, -threshold - log_prior_odds, -threshold)
    theta = log_prior_odds + log_ratio

    miss = fn[k].astype(dtype) / n1.astype(dtype)
    false_alarm = fp[k].astype(dtype) / n0.astype(dtype)
    # NEC = miss e^{max(theta, 0)} + fa e^{max(-theta, 0)} (Ferrer 2022b, eq. 8 with alpha = e^-theta), where
    # 0 * inf = 0: a trivial cut (theta = +-inf) is the naive decision and has NEC 1.
    nec = (jnp.where(miss > 0, miss * jnp.exp(jnp.maximum(theta, 0.0)), 0.0)
           + jnp.where(false_alarm > 0, false_alarm * jnp.exp(jnp.maximum(-theta, 0.0)), 0.0))
    counts = jnp.stack([jnp.stack([tn[k], fp[k]]), jnp.stack([fn[k], tp[k]])])
    ok = (jnp.all((labels == 0) | (labels == 1)) & ~jnp.any(jnp.isnan(s)) & (n1 > 0) & (n0 > 0)
          & (True if w is None else jnp.all(jnp.isfinite(w) & (w >= 0)))
          & (data_priors | (jnp.all(priors > 0) & (jnp.abs(jnp.sum(priors) - 1.0) <= v.SUM_TOL)))
          & ((metric_index != 0) | (jnp.isfinite(beta) & (beta > 0))))
    out = MetricThreshold(threshold, low, high, value[k], counts, jnp.exp(log_ratio), theta, nec)
    return out, ok


@jax.jit
def _metric_threshold_kernel(labels, s, w, num_samples, priors, beta, metric_index, likelihood, data_priors):
    """Kernel: :func:`_one_system` over the flattened batch ``(B, N_padded)``.

    The metric, the flags and the number of samples are traced, not static:
    one compiled program per padded shape serves every metric, score type and
    data size in the bucket (and one more with weights ``w``).
    """
    return jax.vmap(_one_system, in_axes=(0, 0, None if w is None else 0, None, 0, None, None, None, None))(
        labels, s, w, num_samples, priors, beta, metric_index, likelihood, data_priors)


def _class1_log_odds(scores, score_type):
    """``(..., N)`` class-1 log-odds: ``a_1 - a_0`` of the (log-domain) scores, or the LLR itself.

    For logits the log-softmax cancels in the difference; probabilities are
    logged by :func:`~ecjax._src.inputs.as_scores`; for ``"log_likelihoods"`` the
    difference is the LLR.
    """
    a = v.as_scores(scores, score_type=score_type)
    if score_type == "llr":
        return a
    v.check_binary_scores(a, score_type)
    return a[..., 1] - a[..., 0]


def _flat_padded(x, batch, fill):
    """``x`` broadcast to ``batch + (N,)``, flattened to ``(B, N)`` and padded with ``fill`` to the bucket length.

    Concrete arrays are padded on the host: eager ``jnp`` operations would
    compile a small program for every new shape, the cost the bucket avoids.
    """
    n = x.shape[-1]
    pad = ((0, 0), (0, v.bucket_length(n, _MIN_SAMPLE_BUCKET) - n))
    if v.is_tracer(x):
        return jnp.pad(jnp.broadcast_to(x, batch + (n,)).reshape(-1, n), pad, constant_values=fill)
    return v.to_device(np.pad(np.broadcast_to(np.asarray(x), batch + (n,)).reshape(-1, n), pad, constant_values=fill))


def optimal_metric_threshold(labels: ArrayLike, scores: ArrayLike, *, metric: str = "f1", beta: float = 1.0,
                             score_type: str = "log_posteriors", priors: ArrayLike | None = None,
                             sample_weight: ArrayLike | None = None) -> MetricThreshold:
    """The threshold that maximizes F1, F-beta, MCC or Youden's J, and the cost ratio it implies.

    Metrics of the decisions "class 1 iff ``s > t``" (class 1 positive):

    * ``"f_beta"``: ``(1 + b^2) TP / ((1 + b^2) TP + b^2 FN + FP)`` (Ferrer (2025)
      eq. 9; ``"f1"`` is ``b = 1``),
    * ``"mcc"``: ``(TP TN - FP FN) / sqrt(D_1 N_1 N_0 D_0)`` (Ferrer (2025)
      eq. 13; 0 for a cut that decides one class only, as scikit-learn),
    * ``"youden"``: ``J = TP / N_1 - FP / N_0 = 1 - NEC_b`` (Youden 1950;
      ``NEC_b = R_12 + R_21`` as in Ferrer (2025) §3.2), whose best threshold on
      calibrated scores is the Bayes threshold of ``r = P_0 / P_1``.

    The best cut is found exactly: one sort of ``s``, cumulative counts, the
    metric at every cut between distinct scores (tied scores are never
    split, and the cuts deciding every sample 0 or 1 are included), and its
    maximum (ties: the lowest threshold).  O(N log N), no grid.  The metric
    is computed in floating point from exact integer counts, so two cuts
    whose values differ by less than its rounding (~1e-7 relative in
    float32) may be taken for one another.

    The implied cost (Ferrer 2025, §4.1): ``threshold`` is the Bayes threshold
    of the costs ``[[0, 1], [r, 0]]`` with

    * posterior-type scores (``"log_posteriors"``, ``"logits"``,
      ``"probabilities"``; ``s = log P(1|x) - log P(0|x)``): ``t = log(1/r)``
      (Ferrer 2025, eq. 20), the rule :func:`ecjax.decisions.bayes_decisions`
      applies to the posteriors as given;
    * likelihood-type scores (``"llr"``, ``"log_likelihoods"``; ``s`` = the
      LLR ``log p(x|1) - log p(x|0)``): ``t = log(P_0 / (P_1 r))`` (Ferrer (2022b)
      eq. 48), with ``P`` = ``priors``.

    So ``r = exp(-t)`` for posteriors and ``r = exp(-t) P_0 / P_1`` for
    LLRs; for calibrated scores optimizing the metric is then, in effect,
    optimizing ``NEC`` with these costs, a trade-off that depends on the
    score distribution (Ferrer 2025, Fig. 2).

    Args:
      labels: ``(N,)`` (or ``(..., N)``, broadcasting with the scores'
        batch axes) classes in {0, 1}; both classes must have samples.
      scores: binary scores ``(..., N, 2)``, or ``(..., N)`` LLRs for
        ``score_type="llr"``; leading axes are systems.
      metric: ``"f1"``, ``"f_beta"``, ``"mcc"`` or ``"youden"``.
      beta: ``b > 0`` of F-beta (only with ``metric="f_beta"``).
      score_type: as everywhere in ecjax.  The threshold is on the same scale
        as :func:`ecjax.scores.roc_curve` (posterior log-odds, or the LLR for
        ``"llr"`` and ``"log_likelihoods"``).
      priors: ``(P_0, P_1)`` (or ``(..., 2)``), both > 0; default: the class
        frequencies of ``labels``.  They turn LLRs into the implied cost
        ratio, and weigh the classes in ``effective_prior_log_odds`` and
        ``implied_nec``; the threshold and metric do not depend on them.
      sample_weight: optional ``(N,)`` non-negative frequency weights
        (scikit-learn's meaning): ``TP``, ``FP``, ``FN``, ``TN`` (and ``N_i``,
        ``D_j``) become weight totals and the data priors the weighted class
        fractions, so an integer weight ``k`` is ``k`` copies of the sample;
        samples of weight 0 are left out (on concrete input: they would only
        add thresholds).  Both classes need a positive weight total.

    Returns:
      :class:`MetricThreshold`.  Under ``jax.jit`` invalid values (a label
      outside {0, 1}, a class without samples, NaN scores, bad priors) give
      NaN (``-1`` counts) in the affected systems instead of an error.

    Example:
      >>> import numpy as np
      >>> res = optimal_metric_threshold([0, 0, 1, 1], np.array([-2.0, 1.0, 0.0, 3.0]), score_type="llr",
      ...                                metric="youden")
      >>> float(res.threshold), float(res.metric_value), round(float(res.implied_cost_ratio), 4)
      (-1.0, 0.5, 2.7183)
    """
    v.check_choice(metric, "metric", METRICS)
    beta = checked_beta(beta, metric)
    v.check_score_type(score_type)
    s = _class1_log_odds(scores, score_type)
    y = v.as_index_array(labels, "labels", upper=2, upper_is="binary labels: 0 or 1")
    v.check_same_length("labels", y, "scores", s)
    batch = v.check_batch_axes_broadcast("labels", y.shape, y.shape[:-1], "scores", s.shape, s.shape[:-1])
    w = v.as_sample_weight(sample_weight, y[(0,) * (y.ndim - 1)])
    v.check_classes_present(y, w, 2, why="the metrics and the implied cost need samples of both classes")
    if not v.any_traced(y, w):
        u = None if w is None else np.asarray(w, np.float64)
        if w is not None and u is not None and not v.is_tracer(s) and not np.all(u > 0):
            keep = v.to_device(np.flatnonzero(u > 0))  # weight 0: a sample that is not there
            y, s, w = jnp.take(y, keep, axis=-1), jnp.take(s, keep, axis=-1), w[keep]
    data_priors = priors is None
    if data_priors:
        p = jnp.full(batch + (2,), 0.5, dtype=s.dtype)  # unused: the kernel takes the class frequencies
    else:
        p = v.as_positive_priors(priors, num_classes=2, why=" (the implied cost ratio divides by them)")
        batch = v.check_batch_axes_broadcast("priors", p.shape, p.shape[:-1], "scores", s.shape, batch)
        p = jnp.asarray(p, dtype=s.dtype)
    n = s.shape[-1]
    out, ok = _metric_threshold_kernel(
        _flat_padded(y, batch, 0),
        _flat_padded(s, batch, np.inf),  # +inf sorts after every (finite) score
        None if w is None else _flat_padded(w, batch, 0.0),
        jnp.asarray(n, jnp.int32),
        jnp.broadcast_to(p, batch + (2,)).reshape(-1, 2),
        jnp.asarray(beta, s.dtype),
        jnp.asarray(_METRIC_INDEX[metric], jnp.int32),
        jnp.asarray(score_type in v.LIKELIHOOD_TYPES),
        jnp.asarray(data_priors),
    )
    if v.any_traced(y, s, p, beta, w):
        out = MetricThreshold(*(v.nan_where_invalid(x, ok, extra_axes=x.ndim - 1) for x in out))
    return MetricThreshold(*(x.reshape(batch + x.shape[1:]) for x in out))
