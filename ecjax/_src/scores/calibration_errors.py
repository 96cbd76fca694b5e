"""Binned calibration errors (ECE, MCE, RMS, classwise ECE, ACE) and reliability diagrams with credible bands.

A binned calibration error compares, bin by bin, the mean confidence with
the observed frequency (Ferrer 2022b, §4.3, eqs. 62-63).  With bins ``B_m`` of
``|B_m|`` of the ``N`` samples and gap ``g_m = frac(B_m) - avg(B_m)``:

- ``norm="l1"``: ``sum_m |B_m|/N |g_m|``, the ECE (Naeini, Cooper &
  Hauskrecht 2015; :func:`ecjax.ece`);
- ``norm="l2"``: ``sqrt(sum_m |B_m|/N g_m^2)``, the RMS (l2) calibration
  error (Kumar, Liang & Ma 2019, "Verified uncertainty calibration";
  Hendrycks et al. 2019);
- ``norm="max"``: ``max_m |g_m|`` over the non-empty bins, the maximum
  calibration error MCE (Naeini et al. 2015).

What is binned (``variant``) is as in :func:`ecjax.ece`: the class-1
posterior (``"binary"``, eq. 62) or the top-label confidence against the
accuracy of the argmax decision (``"top_label"``, eq. 63), plus
``"classwise"``: each class's posterior against the indicator of that class,
one calibration error per class, averaged over the ``K`` classes -- the
classwise-ECE of Kull et al. (2019, "Beyond temperature scaling: obtaining
well-calibrated multiclass probabilities with Dirichlet calibration"), the
"static calibration error" of Nixon et al. (2019, "Measuring calibration in
deep learning").  With equal-mass bins (:func:`ecjax.scores.bin_indices`)
the classwise form is Nixon et al.'s adaptive calibration error ACE,
weighted by ``|B_m|/N`` (equal to their ``1/R`` when no tie makes bins
unequal).

These are the calibration losses of histogram binning trained on the test
data (Ferrer 2022b, eq. 66): they depend on the bins, are optimistic for small
bins and are no substitute for a proper scoring rule (Ferrer 2022b, §4.3.2).

:func:`reliability_bands` adds, for each bin of the reliability diagram, an
interval of the true frequency: by default the Jeffreys interval with the
boundary modification of Brown, Cai & DasGupta (2001), whose coverage stays
near nominal in the extreme bins (:func:`binomial_interval`).

Example:
  >>> import jax.numpy as jnp
  >>> lp = jnp.log(jnp.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]]))
  >>> round(float(max_calibration_error([0, 1, 1, 1], lp, num_bins=5)), 4)
  0.6
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.confusion import weight_totals
from ecjax._src.decisions import log_posteriors_kernel
from ecjax._src.scores.inputs import posterior_inputs, resolved_variant, scores_ok, validated_sample_weight, weights_ok

ECE_BINNINGS = ("equal_width", "equal_mass")
ECE_VARIANTS = ("auto", "binary", "top_label")
NORMS = ("l1", "l2", "max")
VARIANTS = ("auto", "binary", "top_label", "classwise")
INTERVALS = ("jeffreys", "equal_tailed", "hdi")
# Bisection steps for the HDI's lower tail mass: halving (0, 1 - prob) 60 times reaches float64 resolution.
_HDI_BISECTION_STEPS = 60


# ------------------------------------------------------------------ the bins and the ECE

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
    this module and the bootstrap's ECE (:mod:`~ecjax._src.prob.bootstrap`, under ``vmap`` over
    weight vectors; equal-width bins depend on the confidences only, so they are found once).  In float32,
    summing the per-sample differences ``hit - conf`` keeps ~1e-7 accuracy, while subtracting the two sums over
    10^4 confidences near 1 loses ~1e-3 of the gap; compensated chunk sums
    (:func:`~ecjax._src.confusion.weight_totals`) keep weight totals past 2^24 exact, as counts are.
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
    num_bins = v.as_scalar(num_bins, "num_bins", integer=True, low=1)
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


# ------------------------------------------------------------------ kernels

def confidences_and_hits(labels, log_post, variant):
    """``(conf, hit)``, each ``(..., C, N)``: ``C = K`` for ``"classwise"``, else 1 (binary or top-label: those of
    :func:`ecjax.scores.confidence_and_hit`)."""
    if variant != "classwise":
        conf, hit = confidence_and_hit(labels, log_post, variant == "top_label")
        return conf[..., None, :], hit[..., None, :]
    conf = jnp.swapaxes(jnp.exp(log_post), -1, -2)  # (..., K, N)
    hit = jnp.broadcast_to(jax.nn.one_hot(labels, log_post.shape[-1], dtype=conf.dtype).T, conf.shape)
    return conf, hit


def _binned_errors(conf, hit, sample_weight=None, *, num_bins, binning):
    """``(3,)``: the l1, l2 and max calibration errors of one set of ``(N,)`` confidences and hits, from the bins'
    :class:`~ecjax.scores.BinSums` (with ``sample_weight`` every count is a weight total: a bin whose samples all
    have weight 0 is empty)."""
    sums = bin_sums(conf, hit, sample_weight, num_bins=num_bins, binning=binning)
    n = conf.shape[-1] if sample_weight is None else jnp.sum(sample_weight)
    filled = sums.weight > 0
    gap = sums.gap / jnp.where(filled, sums.weight, 1)
    return jnp.stack([jnp.sum(jnp.abs(sums.gap)) / n,
                      jnp.sqrt(jnp.sum(gap * sums.gap) / n),
                      jnp.max(jnp.where(filled, jnp.abs(gap), 0.0))])


@partial(jax.jit, static_argnames=("num_bins", "binning", "variant"))
def _calibration_errors_kernel(labels, log_post, sample_weight=None, *, num_bins, binning, variant):
    """``(..., 3)``: the l1, l2 and max errors (averaged over classes for ``"classwise"``).

    All three norms come from one pass over the same bins, and one compiled
    program serves them all.
    """
    conf, hit = confidences_and_hits(labels, log_post, variant)
    flat_conf = conf.reshape((-1, conf.shape[-1]))
    flat_hit = hit.reshape((-1, hit.shape[-1]))
    one = partial(_binned_errors, sample_weight=sample_weight, num_bins=num_bins, binning=binning)
    per_class = jax.vmap(one)(flat_conf, flat_hit).reshape(conf.shape[:-1] + (len(NORMS),))
    return jnp.mean(per_class, axis=-2)


# ------------------------------------------------------------------- inputs

def calibration_inputs(labels, scores, priors, score_type, sample_weight=None):
    """Validated ``(labels, log_posteriors (..., N, K), sample_weight)``; some weight must be positive."""
    s, log_p = v.scores_and_log_priors(scores, priors, score_type)
    log_post = log_posteriors_kernel(s, log_p, score_type)
    k = log_post.shape[-1]
    labels = v.as_label_vector(labels, num_classes=k, scores=log_post)
    sample_weight = v.as_sample_weight(sample_weight, labels)
    v.check_some_weight(sample_weight)
    return labels, log_post, sample_weight


def binned_calibration_error(labels: ArrayLike, scores: ArrayLike, *, norm: str = "l1", num_bins: int = 15,
                             binning: str = "equal_width", variant: str = "auto", priors: ArrayLike | None = None,
                             score_type: str = "log_posteriors", sample_weight: ArrayLike | None = None) -> jax.Array:
    """Binned calibration error with an ``l1`` (ECE), ``l2`` (RMS) or ``max`` (MCE) norm over the bins.

    See the module docstring for the formulas and sources.  With
    ``norm="l1"`` and ``variant`` ``"binary"``/``"top_label"`` this is
    :func:`ecjax.ece` (Ferrer 2022b, eqs. 62-63); here it also takes leading
    batch axes and the ``"classwise"`` variant.  ``"classwise"`` averages the
    per-class errors of the same ``norm`` over the ``K`` classes.

    Args:
      labels: ``(N,)`` true classes.
      scores: ``(..., N, K)`` scores (``(..., N)`` for ``"llr"``); leading
        axes are systems, each binned on its own.  ``-inf`` is not accepted:
        pass exact zeros as ``score_type="probabilities"``.
      norm: ``"l1"``, ``"l2"`` or ``"max"``.
      num_bins: ``M`` (default 15).
      binning: ``"equal_width"`` or ``"equal_mass"`` (:func:`ecjax.scores.bin_indices`;
        equal-mass bins are taken per system and, for ``"classwise"``, per class).
      variant: ``"auto"`` (binary for K = 2, else top-label), ``"binary"``,
        ``"top_label"`` or ``"classwise"``.
      priors: only to turn likelihood-type scores into posteriors.
      score_type: any of :data:`~ecjax._src.inputs.SCORE_TYPES`.
      sample_weight: optional ``(N,)`` non-negative weights (scikit-learn's
        frequency weights): ``|B_m|`` and ``N`` become weight totals and the
        bin means weighted means; equal-mass bins split the cumulative weight
        (:func:`ecjax.scores.equal_mass_upper_edges`).  An integer weight
        ``k`` is ``k`` copies of the sample, weight 0 leaves it out (a bin
        holding only such samples is empty for ``"max"``).

    Returns:
      The calibration error (a fraction in ``[0, 1]``), one per system.
      Under ``jax.jit`` an invalid traced input (a label out of range, a NaN
      score) gives NaN.
    """
    v.check_choice(norm, "norm", NORMS)
    v.check_choice(binning, "binning", ECE_BINNINGS)  # every binned error takes the bins of the ECE
    v.check_choice(variant, "variant", VARIANTS)
    num_bins = v.as_scalar(num_bins, "num_bins", integer=True, low=1)
    y, log_post, w = calibration_inputs(labels, scores, priors, score_type, sample_weight)
    variant = resolved_variant(variant, log_post.shape[-1], VARIANTS)
    out = _calibration_errors_kernel(y, log_post, w, num_bins=num_bins, binning=binning,
                                     variant=variant)[..., NORMS.index(norm)]
    return nan_where_traced_inputs_invalid(out, y, log_post, w)


def nan_where_traced_inputs_invalid(out: jax.Array, labels: jax.Array, log_post: jax.Array,
                                    sample_weight: jax.Array | None) -> jax.Array:
    """``out`` (one value per system) as it is for concrete inputs; under ``jax.jit``, NaN for a system whose
    traced inputs are invalid (a label out of range, a NaN score, bad weights): the NaN contract of ecjax.inputs."""
    if not v.any_traced(labels, log_post, sample_weight):
        return out
    return v.nan_where_invalid(out, scores_ok(labels, log_post) & weights_ok(sample_weight))


def max_calibration_error(labels: ArrayLike, scores: ArrayLike, *, num_bins: int = 15, binning: str = "equal_width",
                          variant: str = "auto", priors: ArrayLike | None = None, score_type: str = "log_posteriors",
                          sample_weight: ArrayLike | None = None) -> jax.Array:
    """MCE: the largest ``|frequency - confidence|`` over the non-empty bins (Naeini et al. 2015).

    ``binned_calibration_error(..., norm="max")``; arguments as there.  With few
    samples per bin it is dominated by sampling noise: read it with
    :func:`reliability_bands`.
    """
    return binned_calibration_error(labels, scores, norm="max", num_bins=num_bins, binning=binning,
                                    variant=variant, priors=priors, score_type=score_type,
                                    sample_weight=sample_weight)


def rms_calibration_error(labels: ArrayLike, scores: ArrayLike, *, num_bins: int = 15, binning: str = "equal_width",
                          variant: str = "auto", priors: ArrayLike | None = None, score_type: str = "log_posteriors",
                          sample_weight: ArrayLike | None = None) -> jax.Array:
    """RMS (l2) calibration error ``sqrt(sum_m |B_m|/N g_m^2)`` (Kumar et al. 2019).

    ``binned_calibration_error(..., norm="l2")``; arguments as there.
    """
    return binned_calibration_error(labels, scores, norm="l2", num_bins=num_bins, binning=binning,
                                    variant=variant, priors=priors, score_type=score_type,
                                    sample_weight=sample_weight)


def classwise_ece(labels: ArrayLike, scores: ArrayLike, *, num_bins: int = 15, binning: str = "equal_width",
                  priors: ArrayLike | None = None, score_type: str = "log_posteriors",
                  sample_weight: ArrayLike | None = None) -> jax.Array:
    """Classwise-ECE (Kull et al. 2019): ``(1/K) sum_j sum_m |B_jm|/N |frac_j(B_jm) - avg_j(B_jm)|``.

    ``B_jm`` bins the class-``j`` posteriors of all samples, ``frac_j`` is
    the fraction of class ``j`` in the bin, ``avg_j`` the mean class-``j``
    posterior.  Nixon et al. (2019) call it the static calibration error
    (SCE).  ``binned_calibration_error(..., variant="classwise")``.
    """
    return binned_calibration_error(labels, scores, norm="l1", num_bins=num_bins, binning=binning,
                                    variant="classwise", priors=priors, score_type=score_type,
                                    sample_weight=sample_weight)


def adaptive_calibration_error(labels: ArrayLike, scores: ArrayLike, *, num_bins: int = 15,
                               priors: ArrayLike | None = None, score_type: str = "log_posteriors",
                               sample_weight: ArrayLike | None = None) -> jax.Array:
    """ACE of Nixon et al. (2019): the classwise ECE with equal-mass bins per class.

    ``binned_calibration_error(..., variant="classwise", binning="equal_mass")``.
    Bins hold ``N/M`` samples each except where tied posteriors must share
    a bin, hence the ``|B_m|/N`` weights (Nixon et al. write ``1/M``).  For
    the top-label ECE with equal-mass bins use
    ``ecjax.ece(..., binning="equal_mass")``.
    """
    return binned_calibration_error(labels, scores, norm="l1", num_bins=num_bins, binning="equal_mass",
                                    variant="classwise", priors=priors, score_type=score_type,
                                    sample_weight=sample_weight)


# -------------------------------------------------------- reliability bands

class ReliabilityBands(NamedTuple):
    """Reliability diagram bins with credible intervals of each bin's true frequency.

    Empty bins have count 0, NaN ``confidence`` and ``frequency``, and the
    band of the prior alone.
    """

    confidence: np.ndarray  # mean confidence (binary: mean class-1 posterior) of each bin
    frequency: np.ndarray  # observed accuracy (binary: class-1 frequency) of each bin
    count: np.ndarray  # type: ignore[assignment]  # samples per bin (int64); with sample_weight, the bin's weight total (float64)
    hits: np.ndarray  # correct decisions (binary: class-1 samples) per bin (int64); weighted: float64
    low: np.ndarray  # lower end of the credible interval of the true frequency
    high: np.ndarray  # upper end
    prob: float  # posterior mass of each interval
    interval: str  # "jeffreys", "equal_tailed" or "hdi"


def _hdi_of_beta(a, b, prob):
    """Highest-density interval of ``Beta(a, b)``, ``a, b >= 1`` (float64 arrays).

    Unimodal with ``a, b > 1``: the interval ``[F^-1(t), F^-1(t + prob)]``
    whose ends have equal density, found by bisection on the lower tail
    mass ``t`` in ``(0, 1 - prob)`` (the log-density difference of the ends
    increases with ``t``).  ``a = 1 < b`` has a decreasing density, so the
    HDI is ``[0, F^-1(prob)]``; ``b = 1 < a`` gives ``[F^-1(1 - prob), 1]``;
    ``a = b = 1`` (uniform: every interval of length ``prob`` is one) gives
    the central interval.
    """
    from scipy import special  # a dependency of jax; imported here to keep `import ecjax` light

    def log_density(x):  # unnormalized: only differences at equal (a, b) are compared
        with np.errstate(divide="ignore", invalid="ignore"):  # log 0; 0 * log 0 where a or b is 1 (overridden)
            return (a - 1) * np.log(x) + (b - 1) * np.log1p(-x)

    lo, hi = np.zeros_like(a), np.full_like(a, 1.0 - prob)
    for _ in range(_HDI_BISECTION_STEPS):
        t = 0.5 * (lo + hi)
        upper_denser = log_density(special.betaincinv(a, b, t)) < log_density(special.betaincinv(a, b, t + prob))
        lo, hi = np.where(upper_denser, t, lo), np.where(upper_denser, hi, t)
    t = 0.5 * (lo + hi)
    t = np.where(a == 1, np.where(b == 1, 0.5 * (1.0 - prob), 0.0), np.where(b == 1, 1.0 - prob, t))
    low, high = special.betaincinv(a, b, t), special.betaincinv(a, b, t + prob)
    return np.where((a == 1) & (b > 1), 0.0, low), np.where((b == 1) & (a > 1), 1.0, high)


def binomial_interval(hits: ArrayLike, count: ArrayLike, *, prob: float = 0.9,
                      interval: str = "jeffreys") -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)``: an interval of a binomial proportion from ``hits`` of ``count`` trials (host, float64).

    ``"jeffreys"`` (default): the modified Jeffreys interval of Brown, Cai &
    DasGupta (2001, "Interval estimation for a binomial proportion",
    Statistical Science 16, §4.1.2): the equal-tailed ``prob`` interval of
    the Jeffreys posterior ``Beta(h + 1/2, n - h + 1/2)``, with ``[0, 1 -
    (alpha/2)^(1/n)]`` at ``h = 0``, ``[(alpha/2)^(1/n), 1]`` at ``h = n``,
    the lower end 0 at ``h = 1`` and the upper end 1 at ``h = n - 1``
    (``alpha = 1 - prob``; weighted counts: ``h <= 1`` and ``n - h <= 1``).
    Its frequentist coverage stays near ``prob`` for proportions near 0 and
    1, where the Bayes-Laplace intervals fall far below it (``prob = 0.9``:
    0.84 for ``n = 72`` at 0.99 with equal tails; 0 at 0.999 for small ``n``).
    An empty bin (``n = 0``) gets the prior's central interval.

    ``"equal_tailed"`` and ``"hdi"``: the Bayes-Laplace posterior ``Beta(1 +
    h, 1 + n - h)`` (uniform prior), its central or highest-density
    ``prob`` interval (see :func:`reliability_bands`): credible intervals,
    not intervals with coverage.
    """
    from scipy import special  # a dependency of jax; imported here to keep `import ecjax` light

    prob = v.as_scalar(prob, "prob", low=0.0, high=1.0, strict=True)
    v.check_choice(interval, "interval", INTERVALS)
    n = np.asarray(v.check_numbers(np.asarray(count, np.float64), "count", low=0.0))
    h = np.asarray(v.check_numbers(np.asarray(hits, np.float64), "hits", low=0.0))
    v.check_inside(h, 0.0, n, "hits")
    if interval == "hdi":
        return _hdi_of_beta(1.0 + h, 1.0 + n - h, prob)
    tail = 0.5 * (1.0 - prob)
    if interval == "equal_tailed":
        a, b = 1.0 + h, 1.0 + n - h
        return special.betaincinv(a, b, tail), special.betaincinv(a, b, 1.0 - tail)
    a, b = h + 0.5, n - h + 0.5
    low, high = special.betaincinv(a, b, tail), special.betaincinv(a, b, 1.0 - tail)
    with np.errstate(divide="ignore"):
        edge = tail ** (1.0 / n)  # the one-sided bound at h = 0 or h = n (n = 0: overridden)
    filled = n > 0
    low = np.where(filled & (h <= 1), 0.0, low)
    high = np.where(filled & (n - h <= 1), 1.0, high)
    low = np.where(filled & (h == n), edge, low)
    high = np.where(filled & (h == 0), 1.0 - edge, high)
    return low, high


def reliability_bands(labels: ArrayLike, scores: ArrayLike, *, prob: float = 0.9, interval: str = "jeffreys",
                      num_bins: int = 15, binning: str = "equal_width", variant: str = "auto",
                      priors: ArrayLike | None = None, score_type: str = "log_posteriors",
                      sample_weight: ArrayLike | None = None) -> ReliabilityBands:
    """Reliability-diagram bins with a band for each bin's true frequency.

    The bins are those of :func:`ecjax.scores.reliability_bins` (and of
    :func:`ecjax.ece`).  In bin ``m`` with ``n_m`` samples of which ``h_m``
    are hits (class 1 for the binary variant, correct argmax decisions for
    the top-label one), the band is by default (``interval="jeffreys"``) the
    modified Jeffreys interval of :func:`binomial_interval` (Brown, Cai &
    DasGupta 2001): a ``prob`` interval whose coverage of ``theta_m`` stays
    near ``prob`` in the extreme bins too.  The other two are credible
    intervals: the true frequency ``theta_m`` has, under the uniform
    prior ``Beta(1, 1)`` and a binomial likelihood, the posterior
    ``Beta(1 + h_m, 1 + n_m - h_m)`` (Bayes-Laplace; Gelman et al.,
    *Bayesian Data Analysis*, 3rd ed., §2.1; intervals §2.3).  The band holds ``prob``
    of that posterior: the equal-tailed interval
    ``[F^-1((1 - prob)/2), F^-1((1 + prob)/2)]`` or the highest-density
    interval (``interval="hdi"``: the ends have equal density; it is
    one-sided, ``[0, F^-1(prob)]``, when ``h_m = 0`` and
    ``[F^-1(1 - prob), 1]`` when ``h_m = n_m``, and central for an empty
    bin, whose uniform posterior makes every interval of length ``prob`` an HDI).  Their coverage falls far below
    ``prob`` near 0 and 1 (0.81 in a bin of about 72 samples at frequency 0.99; 0.72 for the HDI in bins of about one
    sample).  A bin whose mean confidence lies outside its band is miscalibrated beyond what its sample size explains.
    The quantiles are computed on the host in float64
    (``scipy.special.betaincinv``), so it does not run under ``jit``/``vmap``:
    traced input raises :class:`~ecjax.InputError`.

    Args:
      labels, scores, num_bins, binning, variant, priors, score_type: as in
        :func:`ecjax.ece` (``variant`` ``"auto"``, ``"binary"`` or
        ``"top_label"``; scores of one system).
      prob: posterior mass of each band, in ``(0, 1)`` (default 0.9).
      interval: ``"jeffreys"`` (default), ``"equal_tailed"`` or ``"hdi"``.
      sample_weight: optional ``(N,)`` non-negative frequency weights (as
        :func:`ecjax.ece`): ``n_m`` and ``h_m`` become the weight totals of
        the bin and of its hits, and the posterior ``Beta(1 + h_m, 1 + n_m -
        h_m)``.  The band width then follows the weighted counts: an integer
        weight ``k`` counts as ``k`` independent observations (the band of
        the repeated samples), and rescaling all weights by ``c`` narrows
        (``c > 1``) or widens (``c < 1``) every band, so pass weights on the
        scale of counts (importance weights normalized to sum to ``N``, say).

    Returns:
      :class:`ReliabilityBands` (NumPy arrays, one entry per bin).
    """
    v.check_host_only("reliability_bands", labels=labels, scores=scores, priors=priors, sample_weight=sample_weight)
    prob = v.as_scalar(prob, "prob", low=0.0, high=1.0, strict=True)
    v.check_choice(interval, "interval", INTERVALS)
    bins = reliability_bins(labels, scores, num_bins=num_bins, binning=binning, variant=variant, priors=priors,
                            score_type=score_type, sample_weight=sample_weight)
    count = bins.count
    hits = np.where(count > 0, bins.frequency * count, 0.0)
    if sample_weight is None:  # whole numbers, exact in float32 below 2^24 samples
        hits = np.rint(hits).astype(np.int64)
    else:  # weight totals: keep h_m <= n_m against the rounding of frequency * count
        hits = np.clip(hits, 0.0, count)
    low, high = binomial_interval(hits, count, prob=prob, interval=interval)
    return ReliabilityBands(bins.confidence, bins.frequency, count, hits, low, high, prob, interval)
