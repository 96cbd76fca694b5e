"""Binned calibration errors beyond the ECE, and reliability diagrams with credible bands.

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

from ecjax import inputs as v
from ecjax.decisions import log_posteriors_kernel
from ecjax.scores.calibration_measures import bin_sums, confidence_and_hit, reliability_bins
from ecjax.scores.inputs import resolved_variant

NORMS = ("l1", "l2", "max")
BINNINGS = ("equal_width", "equal_mass")
VARIANTS = ("auto", "binary", "top_label", "classwise")
INTERVALS = ("jeffreys", "equal_tailed", "hdi")
# Bisection steps for the HDI's lower tail mass: halving (0, 1 - prob) 60 times reaches float64 resolution.
_HDI_BISECTION_STEPS = 60


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
      score_type: any of :data:`ecjax.inputs.SCORE_TYPES`.
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
    v.check_choice(binning, "binning", BINNINGS)
    v.check_choice(variant, "variant", VARIANTS)
    num_bins = v.as_positive_int(num_bins, "num_bins")
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
    ok = jnp.all(labels >= 0) & ~jnp.any(jnp.isnan(log_post), axis=(-2, -1))
    if sample_weight is not None:
        ok = ok & jnp.all(jnp.isfinite(sample_weight) & (sample_weight >= 0)) & (jnp.sum(sample_weight) > 0)
    return v.nan_where_invalid(out, ok)


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

    prob = v.as_number_between(prob, "prob", 0.0, 1.0)
    v.check_choice(interval, "interval", INTERVALS)
    n = np.asarray(v.check_at_least(np.asarray(count, np.float64), "count"))
    h = np.asarray(v.check_at_least(np.asarray(hits, np.float64), "hits"))
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
    prob = v.as_number_between(prob, "prob", 0.0, 1.0)
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
