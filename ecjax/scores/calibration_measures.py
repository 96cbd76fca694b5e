"""Calibration as measured: Bayes-risk curves (Ferrer 2022b, §4.4), ECE and reliability bins (Ferrer 2022b, eqs. 62-63)."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax import inputs as v
from ecjax.confusion import weight_totals
from ecjax.scores.inputs import (
    binary_inputs, binary_ok, class1_fraction, posterior_inputs, resolved_variant, scores_ok, validated_sample_weight,
    weights_ok,
)
from ecjax.scores.roc import rates_at_cuts


ECE_BINNINGS = ("equal_width", "equal_mass")


ECE_VARIANTS = ("auto", "binary", "top_label")


class BayesRiskCurve(NamedTuple):
    """Bayes-risk (normalized DCF / APE) curve over effective prior log-odds.

    ``actual``: (normalized) EC of Bayes decisions with the scores taken as
    LLRs; ``minimum``: the same at the best threshold for each prior (the
    ROC-convex-hull / PAV "minimum DCF", optimistic); ``naive``: the EC of the
    best naive decision, ``min(pi, 1 - pi)`` (1 when normalized).
    """

    prior_log_odds: jax.Array
    actual: jax.Array
    minimum: jax.Array
    naive: jax.Array


@partial(jax.jit, static_argnames=("normalize",))
def _bayes_risk_kernel(labels, llr, plo, sample_weight=None, *, normalize):
    s_sorted, miss, fa, valid = rates_at_cuts(labels, llr, sample_weight)
    # Bayes decision: class 1 iff llr > -plo (ties go to class 0, as decisions.bayes_decisions), the
    # cut below which lie all scores <= -plo; its rates are those of the one-sort ROC.
    cut = jnp.searchsorted(s_sorted, -plo, side="right")
    act_miss, act_fa = miss[cut], fa[cut]
    # 1 - pi as sigmoid(-theta): in float32, 1 - sigmoid(theta) loses up to 2.4e-5 relative at theta = 6.
    pi, pi0 = jax.nn.sigmoid(plo), jax.nn.sigmoid(-plo)
    actual = pi * act_miss + pi0 * act_fa

    def min_one(p):
        # A linear function of the ROC points is minimized at a vertex of their convex hull.
        p1, p0 = p
        return jnp.min(jnp.where(valid, p1 * miss + p0 * fa, jnp.inf))

    minimum = jax.lax.map(min_one, (pi, pi0), batch_size=64)
    naive = jnp.minimum(pi, pi0)
    if normalize:
        return actual / naive, minimum / naive, jnp.ones_like(naive)
    return actual, minimum, naive


def bayes_risk_curve(labels: ArrayLike, scores: ArrayLike, *, prior_log_odds: ArrayLike | None = None,
                     priors: ArrayLike | None = None, score_type: str = "llr", normalize: bool = True,
                     sample_weight: ArrayLike | None = None) -> BayesRiskCurve:
    """Actual and minimum Bayes risk of binary scores over effective priors.

    For each effective prior log-odds ``theta`` (prior ``pi = sigmoid(theta)``
    of class 1, 0-1 costs; any binary cost matrix reduces to one ``theta``,
    Ferrer (2022b) eq. 9), the actual risk is ``pi R_21 + (1 - pi) R_12`` of the
    Bayes decisions "class 1 iff LLR > -theta" (Ferrer 2022b, eq. 48) and the
    minimum is the least risk over all thresholds, found on the one-sort ROC
    (the minimum of a linear function lies on the ROC convex hull, as in the
    PAV/ROCCH "min DCF").  Normalized by the naive risk ``min(pi, 1 - pi)``
    this is the NEC of Ferrer (2022b) eq. 8 and the speaker-verification normalized
    DCF; the gap between the two curves is the calibration loss of the Bayes
    EC at each operating point (Ferrer 2022b, §4.2).

    Args:
      labels: ``(N,)`` classes in {0, 1}.
      scores: LLRs ``(N,)`` (default ``score_type="llr"``), or binary
        log-likelihoods / posterior-type scores ``(N, 2)``.
      prior_log_odds: ``(T,)`` values of ``theta`` (default 121 values in
        ``[-6, 6]``).
      priors: only for posterior-type scores: the priors the posteriors were
        computed with (default: the data priors), removed to get LLRs.
      normalize: divide by ``min(pi, 1 - pi)``.
      sample_weight: optional ``(N,)`` non-negative weights: ``R_21`` and
        ``R_12`` are fractions of each class's weight total (as
        :func:`roc_curve`), and the data priors removed from posterior-type
        scores are the weighted class fractions.

    Returns:
      :class:`BayesRiskCurve`.
    """
    labels_c, s, sample_weight = binary_inputs(labels, scores, score_type, sample_weight,
                                                         drop_zero_weights=False)
    if score_type in v.POSTERIOR_TYPES:
        if priors is None:
            p1 = class1_fraction(labels_c, sample_weight)
            prior_odds = np.log(p1 / (1.0 - p1))
        else:
            p = np.asarray(v.as_positive_priors(priors, num_classes=2, why=" (to turn posteriors into LLRs)"),
                           dtype=np.float64)
            prior_odds = np.log(p[1] / p[0])
        llr = s - prior_odds
    else:
        if priors is not None:
            v.check_posterior_type(score_type, "priors", why=": the priors of a Bayes-risk curve are swept by "
                                   "`prior_log_odds`")
        llr = s
    if prior_log_odds is None:
        plo = jnp.linspace(-6.0, 6.0, 121)
    else:
        given = v.check_finite(v.as_array(prior_log_odds, "prior_log_odds", min_ndim=1), "prior_log_odds")
        plo = jnp.asarray(v.check_shape(given, "prior_log_odds", "(T,)"), dtype=llr.dtype)
    actual, minimum, naive = _bayes_risk_kernel(labels_c, llr, plo, sample_weight, normalize=bool(normalize))
    if v.any_traced(labels_c, llr, sample_weight):
        ok = binary_ok(labels_c, llr, sample_weight)
        actual, minimum = v.nan_where_invalid(actual, ok), v.nan_where_invalid(minimum, ok)
    return BayesRiskCurve(plo, actual, minimum, naive)


def bin_indices(values: jax.Array, num_bins: int, binning: str, reference: jax.Array | None = None,
                weights: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """Kernel: bin index in ``[0, num_bins)`` of each value in ``[0, 1]``.

    ``"equal_width"``: bins ``(m/M, (m+1)/M]`` (the first also holds 0), as
    in ``psrcal``.  ``"equal_mass"``: the ``M`` bins of ``np.array_split``
    over the sorted ``reference`` values (default ``values``), each closed at
    its largest reference value, so tied values always share a bin (a bin can
    then be empty); ``weights`` are frequency weights of the reference values
    (see :func:`equal_mass_upper_edges`).  Returns ``(indices, upper_edges)``.
    """
    if binning == "equal_width":
        edges = jnp.linspace(0.0, 1.0, num_bins + 1, dtype=values.dtype)
        idx = jnp.searchsorted(edges, values, side="left") - 1
        return jnp.clip(idx, 0, num_bins - 1), edges[1:]
    upper = equal_mass_upper_edges(values if reference is None else reference, num_bins, weights)
    idx = jnp.searchsorted(upper, values, side="left")
    return jnp.clip(idx, 0, num_bins - 1), upper


def equal_mass_upper_edges(reference: jax.Array, num_bins: int, weights: jax.Array | None = None) -> jax.Array:
    """Kernel: ``(M,)`` upper edges of the equal-mass bins of ``reference`` ``(N,)`` (the last is ``+inf``).

    Unweighted: ``np.array_split`` of the sorted values into ``M`` parts of
    ``q`` or ``q + 1`` values (``q, r = divmod(N, M)``, the first ``r``
    parts one longer); part ``m`` ends at the ``e_m``-th smallest value,
    ``e_m = (m + 1) q + min(m + 1, r)``, and that value is its upper edge.

    With frequency ``weights`` ``u`` (scikit-learn's meaning) the same rule
    runs on the cumulative weight instead of the sample count: ``N`` becomes
    the total weight ``W``, ``q = floor(W / M)``, ``r = W - q M``, and edge
    ``m`` is the smallest value whose cumulative weight (sorted order)
    reaches ``e_m``.  With integer weights these are exactly the edges of
    the repeated values (sample ``n`` taken ``u_n`` times); weight 0 leaves
    a value out.  Like repeated samples, the edges depend on the scale of
    the weights: a total weight below ``M`` acts as fewer samples than bins
    (bins left empty), so pass weights on the scale of counts.
    """
    n = reference.shape[-1]
    if weights is None:
        sorted_ref = jnp.sort(reference)
        q, r = divmod(n, num_bins)
        ends = jnp.asarray(np.array([(m + 1) * q + min(m + 1, r) for m in range(num_bins)]))  # array_split
        pos = jnp.maximum(ends - 1, 0)
    else:
        order = jnp.argsort(reference)
        sorted_ref = reference[order]
        cum = jnp.cumsum(weights[order].astype(sorted_ref.dtype))
        wq = jnp.floor(cum[-1] / num_bins)
        wr = cum[-1] - wq * num_bins
        m = jnp.arange(1, num_bins + 1, dtype=sorted_ref.dtype)
        ends = m * wq + jnp.minimum(m, wr)
        # The first sample whose cumulative weight reaches e_m: the e_m-th of the repeated values.
        pos = jnp.clip(jnp.searchsorted(cum, ends, side="left"), 0, n - 1)
    upper = jnp.where(ends > 0, sorted_ref[pos], -jnp.inf)  # e_m = 0: a bin with nothing in it
    return upper.at[-1].set(jnp.inf)


class BinSums(NamedTuple):
    """Per-bin sums over the samples ``n`` of bin ``B_m``, each ``(..., M)``, with frequency weights ``u_n`` (1 without).

    Every binned calibration measure is a function of these: the ECE is ``sum_m |gap_m| / sum_m weight_m``, the
    reliability diagram plots ``confidence_m / weight_m`` against ``hit_m / weight_m``.
    """

    weight: jax.Array  # sum u_n: |B_m| (a float count), or the bin's weight total
    confidence: jax.Array  # sum u_n conf_n
    hit: jax.Array  # sum u_n hit_n: a count, exact (a Wilson interval of the bin takes it; confidence + gap is not)
    gap: jax.Array  # sum u_n (hit_n - conf_n)
    squared_gap: jax.Array  # sum u_n (hit_n - conf_n)^2


def confidence_and_hit(labels: jax.Array, log_post: jax.Array, top_label: bool) -> tuple[jax.Array, jax.Array]:
    """Kernel: ``(conf, hit)``, each ``(..., N)``, of eqs. 62-63: the class-1 posterior and ``[y = 1]`` (binary), or
    the top-label confidence ``max_i P(i|x)`` and whether the argmax decision is right (``top_label``)."""
    if top_label:
        conf = jnp.exp(jnp.max(log_post, -1))
        return conf, (jnp.argmax(log_post, -1) == labels).astype(conf.dtype)
    conf = jnp.exp(log_post[..., 1])
    return conf, jnp.broadcast_to((labels == 1).astype(conf.dtype), conf.shape)


def bin_sums(conf: jax.Array, hit: jax.Array, sample_weight: jax.Array | None = None, *, num_bins: int,
             binning: str, compensated: bool = True) -> BinSums:
    """Kernel: the :class:`BinSums` of ``(N,)`` confidences and hits in the bins of :func:`bin_indices`.

    One kernel for every binned measure: :func:`ece`, :func:`reliability_bins`, the binned calibration errors of
    :mod:`ecjax.scores.calibration_errors` and the bootstrap's ECE (:mod:`ecjax.prob.bootstrap`, under ``vmap`` over
    weight vectors; equal-width bins depend on the confidences only, so they are found once).  In float32,
    summing the per-sample differences ``hit - conf`` keeps ~1e-7 accuracy, while subtracting the two sums over
    10^4 confidences near 1 loses ~1e-3 of the gap; compensated chunk sums
    (:func:`ecjax.confusion.weight_totals`) keep weight totals past 2^24 exact, as counts are.
    ``compensated=False`` sums all bins in one scatter instead (``jax.ops.segment_sum``; ``(N,)`` inputs only):
    the bootstrap's choice, for weights that sum to 1 in each of its draws, where the chunked sums cost 2.5-3.5x
    the time (``bootstrap_metric(..., "ece")``, 2 systems, 1000 draws at N = 10^4 / 10^5 on a loaded 2-core
    machine: 1.45 s / 8.95 s against 0.63 s / 3.92 s).
    """
    idx, _ = bin_indices(conf, num_bins, binning, weights=sample_weight)
    residual = hit - conf
    stats = jnp.stack([jnp.ones_like(conf), conf, hit.astype(conf.dtype), residual, residual * residual])
    if sample_weight is not None:
        stats = stats * sample_weight  # |B_m| becomes the bin's weight total
    if compensated:
        return BinSums(*weight_totals(idx, stats, num_bins))
    return BinSums(*jnp.moveaxis(jax.ops.segment_sum(jnp.moveaxis(stats, 0, -1), idx, num_segments=num_bins), -1, 0))


@partial(jax.jit, static_argnames=("num_bins", "binning", "top_label", "compensated"))
def _bin_sums(labels, log_post, sample_weight=None, *, num_bins, binning, top_label, compensated=True):
    """:class:`BinSums` of eqs. 62-63 (binary or top-label) of one system."""
    conf, hit = confidence_and_hit(labels, log_post, top_label)
    return bin_sums(conf, hit, sample_weight, num_bins=num_bins, binning=binning, compensated=compensated)


@partial(jax.jit, static_argnames=("num_bins", "binning", "top_label", "compensated"))
def ece_kernel(labels: jax.Array, log_post: jax.Array, sample_weight: jax.Array | None = None, *, num_bins: int,
               binning: str, top_label: bool, compensated: bool = True) -> jax.Array:
    """Kernel of :func:`ece`: ``sum_m |sum_{n in B_m} u_n (hit_n - conf_n)| / sum_n u_n`` (no validation; the
    bins' sums as :func:`bin_sums`, ``compensated`` as there)."""
    sums = _bin_sums(labels, log_post, sample_weight, num_bins=num_bins, binning=binning, top_label=top_label,
                     compensated=compensated)
    total = labels.shape[0] if sample_weight is None else jnp.sum(sample_weight)
    return jnp.sum(jnp.abs(sums.gap)) / total


def _ece_inputs(labels, scores, num_bins, binning, variant, priors, score_type, sample_weight=None):
    v.check_choice(binning, "binning", ECE_BINNINGS)
    v.check_choice(variant, "variant", ECE_VARIANTS)
    num_bins = v.as_positive_int(num_bins, "num_bins")
    labels, log_post, _, _ = posterior_inputs(labels, scores, priors, score_type, sample_weight)
    v.check_one_system(log_post, 2)
    top_label = resolved_variant(variant, log_post.shape[-1], ECE_VARIANTS) == "top_label"
    return labels, log_post, top_label, num_bins


def ece(labels: ArrayLike, scores: ArrayLike, *, num_bins: int = 15, binning: str = "equal_width",
        variant: str = "auto", priors: ArrayLike | None = None, score_type: str = "log_posteriors",
        sample_weight: ArrayLike | None = None) -> jax.Array:
    """Expected calibration error (Ferrer 2022b, eqs. 62-63), as a fraction.

    ``ECE = sum_m |B_m|/N |frac(B_m) - avg(B_m)|``.  ``variant="binary"``
    (eq. 62, K = 2) bins the class-1 posterior, with ``frac`` the fraction of
    class-1 samples; ``"top_label"`` (eq. 63, ``ECEmc``) bins the confidence
    ``max_i P(i|x)``, with ``frac`` the accuracy of the argmax decisions.
    ``"auto"`` is binary for K = 2 (Ferrer's recommendation: the top-label
    form throws away half the binary posterior) and top-label otherwise.
    This is the calibration loss of histogram binning trained on the test
    data (eq. 66): see Ferrer (2022b) §4.3.2 for its drawbacks.

    ``psrcal`` returns percentages: ``psrcal.losses.ECEbin`` / ``ECE`` equal
    100 times this value (``psrcal`` leaves a posterior of exactly 0 out of
    every bin; here it is in the first bin).

    Args:
      labels: ``(N,)`` true classes.
      scores: ``(N, K)`` scores of one system (``(N,)`` for ``"llr"``).
      num_bins: ``M`` (default 15).
      binning: ``"equal_width"`` or ``"equal_mass"`` (see :func:`bin_indices`).
      variant: ``"auto"``, ``"binary"`` or ``"top_label"``.
      priors, score_type: as in :func:`cross_entropy` (priors only to form
        posteriors from likelihood-type scores).
      sample_weight: optional ``(N,)`` non-negative weights ``u``: ``|B_m|``
        and ``N`` become weight totals and the bin averages weighted
        averages, ``ECE = sum_m |sum_{n in B_m} u_n (hit_n - conf_n)| /
        sum_n u_n`` (an integer weight ``k`` is ``k`` copies of the sample).
        Equal-mass bins then split the cumulative weight, not the sample
        count (:func:`equal_mass_upper_edges`: integer weights give the bins
        of the repeated samples).
    """
    sample_weight = validated_sample_weight(labels, sample_weight)
    y, log_post, top_label, num_bins = _ece_inputs(labels, scores, num_bins, binning, variant, priors, score_type,
                                                   sample_weight)
    out = ece_kernel(y, log_post, sample_weight, num_bins=num_bins, binning=binning, top_label=top_label)
    if v.any_traced(y, log_post, sample_weight):
        return v.nan_where_invalid(out, scores_ok(y, log_post) & weights_ok(sample_weight))
    return out


class ReliabilityBins(NamedTuple):
    """Per-bin statistics of a reliability diagram (empty bins have count 0 and NaN means)."""

    confidence: np.ndarray  # mean confidence (binary: mean class-1 posterior) of each bin
    frequency: np.ndarray  # observed accuracy (binary: class-1 frequency) of each bin
    count: np.ndarray  # type: ignore[assignment]  # samples per bin (int64); with sample_weight, the bin's weight total (float64)


def reliability_bins(labels: ArrayLike, scores: ArrayLike, *, num_bins: int = 15, binning: str = "equal_width",
                     variant: str = "auto", priors: ArrayLike | None = None, score_type: str = "log_posteriors",
                     sample_weight: ArrayLike | None = None) -> ReliabilityBins:
    """The bins behind :func:`ece` and the reliability diagram (Ferrer 2022b, eqs. 62-63).

    ``ece = sum_m count_m / N * |frequency_m - confidence_m|``.  Arguments as in :func:`ece`.  With
    ``sample_weight`` the means are weighted means, ``count`` the bins' weight totals (float) and ``N``
    their sum.
    """
    sample_weight = validated_sample_weight(labels, sample_weight)
    labels, log_post, top_label, num_bins = _ece_inputs(labels, scores, num_bins, binning, variant, priors,
                                                        score_type, sample_weight)
    sums = _bin_sums(labels, log_post, sample_weight, num_bins=num_bins, binning=binning, top_label=top_label)
    n, conf_sum, hit_sum = (np.asarray(a, np.float64) for a in (sums.weight, sums.confidence, sums.hit))
    with np.errstate(invalid="ignore", divide="ignore"):
        return ReliabilityBins(conf_sum / n, hit_sum / n, n.astype(np.int64) if sample_weight is None else n)
