"""A posterior for any metric of the scores: the Bayesian bootstrap over the test samples.

:func:`ecjax.prob.compare` puts a posterior on the utility yield, EC and
NEC, which depend on the data only through confusion counts.  Metrics that
need the scores themselves (cross-entropy, Brier score, AUC, EER, ECE, the
NEC at the best threshold, the calibration loss, or any user function) get theirs here, by the
Bayesian bootstrap (Rubin 1981, "The Bayesian bootstrap", Annals of
Statistics 9(1)): each posterior draw gives the ``N`` test samples weights

    w ~ Dirichlet(1, ..., 1),       w_n = e_n / sum_m e_m,   e_n ~ Exp(1) i.i.d.,      (1)

and the metric is evaluated on the same scores with those weights.  (1) is
the posterior of the sample distribution under a Dirichlet-process model
with a vanishing prior mass, supported on the observed samples; for a
weighted mean ``sum_n w_n x_n`` its mean is the sample mean ``xbar`` and its
variance ``sum_n (x_n - xbar)^2 / (N (N + 1))`` (Rubin 1981, §2), the
ordinary bootstrap's ``sum_n (x_n - xbar)^2 / N^2`` up to a factor ``N / (N +
1)``.  One weight vector per draw is shared by all ``M`` systems, so the
draws are paired by construction: two systems that err on the same hard
samples move together, and the posterior of their difference is as narrow as
the data allow (the same pairing as the joint-outcome Dirichlet of
:mod:`~ecjax._src.prob.paired` with ``concentration=0``, for confusion-count
metrics).

Clustered samples (several per patient, speaker or document, ``groups=``):
the cluster bootstrap, one weight ``G_g ~ Exp(1)`` per cluster shared by
all its samples,

    w_n ∝ G_g    for sample n in cluster g,                                        (2)

i.e. Dirichlet(1, ..., 1) weights over the clusters, each spread evenly
over its samples: the clusters are the independent units, and the samples
within a cluster are kept as observed.  (Resampling the samples within each
cluster as well, as ``confidence-intervals`` does with its conditions,
counts the within-cluster variance twice -- it is already in the spread of
the cluster totals -- and its 90 % intervals covered 0.955-0.99 of
simulated populations with 20-50 clusters of 10; (2) covers the nominal
share: see the README's coverage table.)  With one sample per cluster (2)
is (1); when every sample of a cluster is the same sample repeated, (2) is
(1) over the clusters.

Frequency weights (``sample_weight=``, scikit-learn's meaning: a sample of
weight ``k`` stands for ``k`` samples): by the aggregation property of the
Dirichlet, ``k`` copies of a sample with Exp(1) weights carry a Gamma(k, 1)
total, so the weights become

    w_n ∝ e_n,    e_n ~ Gamma(s_n, 1),                                              (3)

integer weights give the same posterior as repeated samples, and a zero weight removes the sample.
For a weighted mean the posterior mean is ``sum_n s_n x_n / W`` and the
variance ``sum_n s_n (x_n - xbar)^2 / (W (W + 1))``, ``W = sum_n s_n``.
With clusters, (2) becomes ``w_n ∝ G_g s_n``: a sample of weight ``k`` is
``k`` copies of it within its cluster.

Every weighted metric here is written as a ratio of weighted sums, so the
built-in kernels are invariant to the scale of ``w`` (except ``"ece"``,
whose bias correction counts samples: it takes their number, below); a user
function receives weights normalized to sum to 1.

What the intervals cover.  The draws of a metric are those of its estimator
on the reweighted samples, so an interval targets the population value only
as far as the estimator is unbiased: the plug-in ECE is biased upward (in a
bin whose true gap is near 0 the mean gap's absolute value is about
``sqrt(2/pi)`` of its standard error), and its draws covered the population
ECE of a simulated over-confident system in 0-1 % of test sets of 50-200
samples.  ``"ece"`` is therefore the debiased estimator of
:func:`weighted_ece`, its draws moved by the estimated bias so that they
centre on the estimate (:func:`_recentred`); ``"ece_plugin"`` keeps the
plug-in.  The reported interval is the equal-tailed one
(:attr:`MetricPosterior.equal_tailed`; the HDI stays in
:attr:`MetricPosterior.hdi`): on a skewed posterior the HDI gives up the
long tail.  The README's coverage table (``benchmarks/bootstrap_coverage.py``)
gives the measured coverage at ``N = 50, 200, 1000``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

import math

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src import random_bits
from ecjax._src import result_formats
from ecjax._src.confusion import weight_totals
from ecjax._src.calibration import fit_affine_newton_kernel, relative_calibration_loss
from ecjax._src.decisions import log_posteriors_kernel
from ecjax._src.draw_runner import Block, ProgressOption, plan_blocks, run_blocks
from ecjax._src.precision import matmul
from ecjax._src.prob import sampling
from ecjax._src.prob.draw_plan import MonteCarloSettings, check_monte_carlo_settings
from ecjax._src.prob.adaptive_draws import (BOOTSTRAP_MC_ERROR, DEFAULT_MAX_DRAWS, FIRST_DRAWS, describe_draws, draw_until,
                                      precision_record)
from ecjax._src.prob.inputs import (Systems, as_metric_spec, check_class_support, check_draws_fit, paired_scores,
                                    stacked_scores)
from ecjax._src.prob.ranking import (
    RankedSystems,
    check_hdi_prob,
    check_rope,
    hdi,
    ranking_fields,
    summarize,
    with_error,
)
from ecjax._src.report import aligned
from ecjax._src.scores import bin_sums, brier_kernel, class_weights, confidence_and_hit, cross_entropy_kernel, ece_kernel
from ecjax._src.scores.bayes_decisions import sorted_threshold_expected_costs
from ecjax._src.scores.roc import SortedScores, sort_scores, sorted_weighted_auc, sorted_weighted_eer

# A user metric: jit-able f(labels, log_posteriors, weights) -> scalar, of one system.
_UserMetric = Callable[[jax.Array, jax.Array, jax.Array], ArrayLike]

# Equal-width bins of the built-in "ece", as the default of ecjax.scores.ece (Ferrer 2022b, eqs. 62-63).
ECE_NUM_BINS = 15
# A chunk of draws holds about this many (draw, system, sample) elements: bounded memory at N = 10^4, S = 10^4.
_CHUNK_ELEMENTS = 1 << 22
# With progress, a round of draws is cut into about this many blocks (the unit of progress and of the time left).
_PROGRESS_BLOCKS = 16


# ------------------------------------------------------------ weighted kernels

def _normalized(weights):
    return weights / jnp.sum(weights)


def _evaluation_weights(labels, weights, priors, num_classes):
    """Per-sample weights ``w_n P_{y_n} / W_{y_n}`` (``W_i`` the weight of class ``i``), or ``w / sum(w)``.

    With data priors (``priors=None``), ``P_i = W_i / W`` and the weights are ``w / W``: a weighted mean.
    """
    if priors is None:
        return _normalized(weights)
    class_weight = weight_totals(labels, weights, num_classes)  # compensated: N = 10**7 weights of ~1e-7 each
    return weights * class_weights(class_weight, priors)[labels]


def weighted_cross_entropy(labels: jax.Array, log_posteriors: jax.Array, weights: jax.Array,
                           priors: jax.Array | None = None) -> jax.Array:
    """Kernel: weighted cross-entropy ``sum_i P_i sum_{n: y_n = i} w_n (-log s_i(x_n)) / W_i``.

    With data priors (``priors=None``) it is the weighted mean ``sum_n w_n
    (-log s_{y_n}(x_n)) / sum_n w_n``; with uniform weights, Ferrer (2022b) eqs.
    52-54 (``sklearn.metrics.log_loss``).  ``labels`` ``(N,)``,
    ``log_posteriors`` ``(N, K)``, ``weights`` ``(N,)`` non-negative
    (any scale).
    """
    w = _evaluation_weights(labels, weights, priors, log_posteriors.shape[-1])
    return cross_entropy_kernel(labels, log_posteriors, w)


def weighted_brier(labels: jax.Array, log_posteriors: jax.Array, weights: jax.Array,
                   priors: jax.Array | None = None) -> jax.Array:
    """Kernel: weighted Brier score, ``(1/K) sum_j (s_j(x_n) - [j = y_n])^2`` averaged as in
    :func:`weighted_cross_entropy`.

    Ferrer (2022b) eq. 57 (with its ``1/K``; for ``K = 2`` it equals
    ``sklearn.metrics.brier_score_loss``).
    """
    w = _evaluation_weights(labels, weights, priors, log_posteriors.shape[-1])
    return brier_kernel(labels, log_posteriors, w)


def _log_odds(log_posteriors):
    return log_posteriors[..., 1] - log_posteriors[..., 0]


def _ranked(labels, log_posteriors):
    """The one sort of the class-1 log-odds that every weighting of a ranking metric shares."""
    return sort_scores(labels, _log_odds(log_posteriors))


def weighted_auc(labels: jax.Array, log_posteriors: jax.Array, weights: jax.Array) -> jax.Array:
    """Kernel: weighted AUC, the weighted Mann-Whitney statistic with ties counted one half.

    ``AUC = sum_{i: y=1} sum_{j: y=0} w_i w_j ([s_i > s_j] + [s_i = s_j] / 2) / (W_1 W_0)``
    with ``s`` the class-1 log-odds (Hanley & McNeil 1982; Ferrer 2022b, §4.5;
    ``sklearn.metrics.roc_auc_score(..., sample_weight=w)``): the public
    kernel :func:`ecjax.scores.sorted_weighted_auc` on one sort, O(N log N).
    Under the bootstrap the sort is made once and every draw's weights
    (``(..., N)``, any leading axes) use it.
    """
    return sorted_weighted_auc(_ranked(labels, log_posteriors), weights)


def weighted_eer(labels: jax.Array, log_posteriors: jax.Array, weights: jax.Array) -> jax.Array:
    """Kernel: weighted equal error rate on the ROC convex hull (ROCCH-EER, Ferrer (2022b) §4.5).

    The weighted ROC has rates ``miss = W_1(below cut) / W_1`` and ``fa =
    W_0(above cut) / W_0``; the EER is ``max_pi min_cut [pi miss + (1 - pi)
    fa]`` (the point where the hull crosses ``miss = fa``, as the BOSARIS
    toolkit defines it): :func:`ecjax.scores.eer` with ``sample_weight``,
    through its kernel :func:`ecjax.scores.sorted_weighted_eer`, on one sort.
    """
    return sorted_weighted_eer(_ranked(labels, log_posteriors), weights)


def _ece_bins(labels, log_posteriors, weights):
    """The :class:`~ecjax.scores.BinSums` of :data:`ECE_NUM_BINS` equal-width bins, as :func:`ecjax.scores.ece`
    with its defaults bins them: binary for ``K = 2`` (``conf`` the class-1 posterior, ``hit = [y = 1]``),
    top-label for ``K > 2`` (``conf = max_i s_i``, ``hit`` = argmax correct).  The public kernel
    :func:`ecjax.scores.bin_sums` (in one scatter, not compensated chunk sums: see there); the bins depend on the
    scores only, so under ``vmap`` over the weights they are found once."""
    conf, hit = confidence_and_hit(labels, log_posteriors, log_posteriors.shape[-1] > 2)
    return bin_sums(conf, hit, weights, num_bins=ECE_NUM_BINS, binning="equal_width", compensated=False)


def weighted_ece_plugin(labels: jax.Array, log_posteriors: jax.Array, weights: jax.Array) -> jax.Array:
    """Kernel: the plug-in ECE ``sum_m |sum_{n in B_m} w_n (hit_n - conf_n)| / sum_n w_n``.

    Ferrer (2022b) eqs. 62-63 with :data:`ECE_NUM_BINS` equal-width bins:
    the public kernel :func:`ecjax.scores.ece_kernel` of :func:`ecjax.scores.ece` with its defaults.  A
    biased estimator of the population ECE: ``E|mean gap| > |E gap|``, by
    about ``sqrt(2 / pi) sigma_m`` in a bin whose true gap is within its
    standard error ``sigma_m`` of 0, so its bootstrap posterior sits above
    the population value (0 % coverage of it at ``N = 200`` in the README's
    table).  :func:`weighted_ece` corrects it.
    """
    return ece_kernel(labels, log_posteriors, weights, num_bins=ECE_NUM_BINS, binning="equal_width",
                      top_label=log_posteriors.shape[-1] > 2, compensated=False)


def _mean_abs_normal(mean, sd):
    """``E|X|`` for ``X ~ N(mean, sd^2)``: ``sd sqrt(2/pi) exp(-mean^2 / (2 sd^2)) + mean erf(mean / (sd sqrt 2))``
    (the folded normal's mean); ``|mean|`` where ``sd = 0``."""
    safe = jnp.where(sd > 0, sd, 1.0)
    z = mean / (safe * math.sqrt(2.0))
    folded = safe * math.sqrt(2.0 / math.pi) * jnp.exp(-z * z) + mean * jax.scipy.special.erf(z)
    return jnp.where(sd > 0, folded, jnp.abs(mean))


def weighted_ece(labels: jax.Array, log_posteriors: jax.Array, weights: jax.Array,
                 num_samples: jax.Array | None = None) -> jax.Array:
    """Kernel: debiased ECE, an estimator of the population binned ECE ``sum_m P(B_m) |E[hit - conf | B_m]|``.

    The target is the calibration error of *these* bins (:data:`ECE_NUM_BINS`
    equal-width bins of the confidence, binary or top-label form as
    :func:`weighted_ece_plugin`) on the population the samples come from.
    In bin ``m`` with weight share ``p_m = W_m / W``, gap ``g_m = sum_{n in
    B_m} w_n (hit_n - conf_n) / W_m``, mean confidence ``c_m`` and ``n_m =
    num_samples p_m`` samples, the plug-in ``|g_m|`` is biased upward by
    ``E|N(g, sigma_m^2)| - |g|``, ``sigma_m^2`` the variance of the bin's mean
    gap; subtracting its estimate at ``g = g_m`` (Kumar, Liang & Ma 2019,
    "Verified uncertainty calibration", §5, with the folded normal's mean in
    closed form, :func:`_mean_abs_normal`) gives::

        ECE_debiased = sum_m p_m (2 |g_m| - E|N(g_m, sigma_m^2)|),
        sigma_m^2 = (SS_m + c_m (1 - c_m)) / n_m^2,

    ``SS_m = n_m * (weighted variance of hit - conf in the bin)`` the sum of
    squared deviations: ``n_m - 1`` degrees of freedom plus one pseudo-sample
    at the variance ``c_m (1 - c_m)`` of a calibrated bin, so that a bin of
    one sample (``SS_m = 0``) is still corrected (without it, 15 bins at ``N =
    50`` covered 0.70 of the population values instead of 0.80).  A bin whose
    gap is many ``sigma_m`` from 0 keeps its ``|g_m|``; one whose gap is
    within noise loses about ``sqrt(2/pi) sigma_m``, so the estimate can be
    negative when the scores are well calibrated (the population value is
    ``>= 0``).  The Gaussian approximation of the gap fails for bins of a few
    samples: at ``N = 50`` over 15 bins the estimate still averages about
    twice the population value (README, coverage table).

    ``num_samples``: the number of samples ``W`` the weights stand for (their
    sum when ``None``: frequency weights); the bootstrap passes ``N`` with
    weights that sum to 1.
    """
    bins = _ece_bins(labels, log_posteriors, weights)
    mass, gap_sum, square_sum, conf_sum = bins.weight, bins.gap, bins.squared_gap, bins.confidence
    total = jnp.sum(mass)
    filled = mass > 0
    safe_mass = jnp.where(filled, mass, 1.0)
    gap = gap_sum / safe_mass
    conf = conf_sum / safe_mass
    count = (total if num_samples is None else num_samples) * mass / total
    safe_count = jnp.where(filled, count, 1.0)
    # Sum of squared deviations of hit - conf from their bin mean, plus one pseudo-sample at the variance of a
    # calibrated bin, conf (1 - conf): over n_m - 1 + 1 degrees of freedom.
    deviations = jnp.maximum(square_sum / safe_mass - gap * gap, 0.0) * count
    sd = jnp.sqrt((deviations + conf * (1.0 - conf)) / safe_count**2)
    per_bin = 2.0 * jnp.abs(gap) - _mean_abs_normal(gap, sd)
    return jnp.sum(jnp.where(filled, mass * per_bin, 0.0)) / total


def weighted_nec_best_threshold(labels: jax.Array, log_posteriors: jax.Array, weights: jax.Array,
                                priors: jax.Array | None = None, costs: jax.Array | None = None) -> jax.Array:
    """Kernel: NEC of "decide 1 iff log-odds > t" at the best threshold ``t`` for these weights.

    ``EC(t) = sum_i P_i sum_j c_ij R_ij(t)`` (Ferrer 2022a, eq. 2) at every
    cut that splits no tie (one sort), divided by the EC of the best naive
    decision ``min_j sum_i P_i c_ij`` (Ferrer 2022a, eq. 4), minimized over
    the cuts: the public kernel :func:`ecjax.scores.sorted_threshold_expected_costs`
    of :func:`ecjax.scores.optimal_threshold_expected_cost` with
    ``normalize=True`` on weighted data: optimistic, since the threshold is
    chosen on the data (and, in a bootstrap draw, on that draw's weights).
    ``priors=None``: the weighted class frequencies; ``costs=None``: 0-1.
    """
    return _nec_of_ranked(_ranked(labels, log_posteriors), weights, priors, costs)


def _nec_of_ranked(ranked, weights, priors=None, costs=None, *, in_sorted_order=False):
    """``(...,)`` :func:`weighted_nec_best_threshold` of weights ``(..., N)`` on one sort."""
    c = 1.0 - jnp.eye(2, dtype=weights.dtype) if costs is None else costs
    return jnp.min(sorted_threshold_expected_costs(ranked, weights, c, priors, normalize=True,
                                                   in_sorted_order=in_sorted_order), -1)


def weighted_calibration_loss(labels: jax.Array, log_posteriors: jax.Array, weights: jax.Array,
                              priors: jax.Array | None = None) -> jax.Array:
    """Kernel: relative calibration loss ``100 (XE_raw - XE_cal) / XE_raw`` (Ferrer 2022b, eqs. 59-60) for these weights.

    ``XE_raw`` is :func:`weighted_cross_entropy`; ``XE_cal`` the same
    cross-entropy after the affine calibrator (Ferrer 2022b, eq. 61, scale and
    bias on the log-posteriors) that minimizes it for these weights, fitted
    by :func:`ecjax.calibration.fit_affine_newton_kernel`.  This is
    :func:`ecjax.calibration.diagnose` with ``method="affine"``,
    ``protocol="train_on_test"`` on weighted data: the calibrator is fitted
    on the samples it is judged on (and, in a bootstrap draw, on that draw's
    weights), so the loss is the most that an affine calibrator could remove
    from this data, optimistic for a calibrator trained elsewhere.  In
    ``[0, 100]``: the identity map is one of the affine calibrators.
    """
    k = log_posteriors.shape[-1]
    evaluation = _evaluation_weights(labels, weights, priors, k)
    raw = cross_entropy_kernel(labels, log_posteriors, evaluation)
    _, _, calibrated = fit_affine_newton_kernel(labels, log_posteriors, evaluation)
    return relative_calibration_loss(raw, cross_entropy_kernel(labels, calibrated, evaluation))


@dataclass(frozen=True)
class _Builtin:
    kernel: object
    higher_is_better: bool
    binary: bool
    options: tuple  # the keyword options (priors, costs) the kernel takes
    # (N, K) arrays the kernel holds per weight vector, beyond the shared scores: sizes the default chunk of draws.
    arrays_per_sample_and_class: int = 0
    # The kernel takes `num_samples`, the count the weights stand for (a debiasing term depends on it).
    counts: bool = False
    # A debiased kernel: the built-in plug-in whose value on the data its draws are centred on (see _recentred).
    plugin: str | None = None
    # A ranking metric: its kernel of (SortedScores, weights (C, N), **options, in_sorted_order=) -> (C,), on a sort
    # made once.
    ranked: Callable | None = None


BUILTIN_METRICS = {
    "cross_entropy": _Builtin(weighted_cross_entropy, False, False, ("priors",)),
    "brier": _Builtin(weighted_brier, False, False, ("priors",)),
    "auc": _Builtin(weighted_auc, True, True, (), ranked=sorted_weighted_auc),
    "eer": _Builtin(weighted_eer, False, True, (), ranked=sorted_weighted_eer),
    "ece": _Builtin(weighted_ece, False, False, (), counts=True, plugin="ece_plugin"),
    "ece_plugin": _Builtin(weighted_ece_plugin, False, False, ()),
    "nec_best_threshold": _Builtin(weighted_nec_best_threshold, False, True, ("priors", "costs"),
                                   ranked=_nec_of_ranked),
    # The Newton fit's candidate steps evaluate 6 log-softmaxes at once, besides p and the deviations.
    "calibration_loss": _Builtin(weighted_calibration_loss, False, False, ("priors",), 10),
}
# Metrics that depend on the ranking of the log-odds only, so likelihood-type scores need no priors for them.
_RANKING_METRICS = ("auc", "eer", "nec_best_threshold")


def _kernel_of(metric):
    return BUILTIN_METRICS[metric].kernel if isinstance(metric, str) else metric


# ------------------------------------------------------------------ validation

def _metric_spec(metric, higher_is_better, score_type, priors, costs):
    """The checked :class:`~ecjax._src.prob.inputs.MetricSpec` of a built-in name of this module or a user function."""
    return as_metric_spec(metric, higher_is_better, builtins=BUILTIN_METRICS, score_type=score_type, priors=priors,
                          costs=costs)


class _DrawCounts(NamedTuple):
    """The draws the settings ask for: a fixed ``first`` (``target`` None), or rounds from ``first`` until every
    reported probability has Monte Carlo error at most ``target``, at most ``cap`` draws
    (:mod:`~ecjax._src.prob.adaptive_draws`)."""

    first: int
    target: float | None
    cap: int
    chunk_size: int | None
    progress: ProgressOption


def _draw_settings(settings):
    """:class:`_DrawCounts` of the settings.

    ``num_draws`` alone: that many.  ``mc_error``: rounds from ``num_draws`` (default
    :data:`~ecjax._src.prob.adaptive_draws.FIRST_DRAWS`) up to ``max_draws``.  Neither: the default target
    :data:`~ecjax._src.prob.adaptive_draws.BOOTSTRAP_MC_ERROR` from the default first round, at most
    :data:`~ecjax._src.prob.adaptive_draws.DEFAULT_MAX_DRAWS` draws.
    """
    settings = check_monte_carlo_settings(settings)
    if settings.mc_error is not None:
        return _DrawCounts(settings.draws(FIRST_DRAWS), settings.mc_error,
                           max(settings.max_draws, settings.draws(FIRST_DRAWS)), settings.chunk_size,
                           settings.progress)
    if settings.num_draws is not None:
        return _DrawCounts(settings.num_draws, None, settings.num_draws, settings.chunk_size, settings.progress)
    return _DrawCounts(FIRST_DRAWS, BOOTSTRAP_MC_ERROR, DEFAULT_MAX_DRAWS, settings.chunk_size, settings.progress)

# The kept draws of a system (float32) and the copies its summaries make (sorts for intervals, differences).
_KEPT_BYTES_PER_DRAW_AND_SYSTEM = 16


class _Scores(NamedTuple):
    """Validated scores ``(M, N, K)`` (``(M, N)`` for ``"llr"``) and the log-priors that make them posteriors.

    The log-posteriors are formed inside the compiled programs (one program per call, not one more per shape).
    """

    values: jax.Array
    log_priors: jax.Array

    @property
    def shape(self):
        """``(M, N, K)`` of the log-posteriors."""
        return self.values.shape[:2] + self.log_priors.shape[-1:]


def _validated_scores(labels, scores, spec, score_type, priors):
    """Validated ``(labels (N,), _Scores, evaluation priors or None)`` for the metric of ``spec`` (a
    :class:`~ecjax._src.prob.inputs.MetricSpec` checked with ``score_type`` and ``priors``); ``scores`` made canonical
    already (:class:`ecjax.inputs.Scores`, from :class:`~ecjax.prob.Systems`) are not checked again."""
    metric = spec.metric
    likelihood = score_type in v.LIKELIHOOD_TYPES
    # Ranking metrics of likelihood scores need no priors: equal ones give log-odds equal to the LLR.
    stand_in = likelihood and priors is None and metric in _RANKING_METRICS
    k_guess = 2 if score_type == "llr" else None
    if stand_in:
        k_guess = k_guess or np.shape(scores)[-1]
    formed_with = np.full(k_guess, 1.0 / k_guess) if stand_in else priors
    s, log_p = v.scores_and_log_priors(scores, formed_with if likelihood else None, score_type)
    single, stacked = ("(N,)", "(M, N)") if score_type == "llr" else ("(N, K)", "(M, N, K)")
    v.check_shape(s, "scores", single, stacked, why=" (one or M systems)")
    if s.ndim == (1 if score_type == "llr" else 2):
        s = s[None]
    k = log_p.shape[-1]
    labels = v.as_label_vector(labels, num_classes=k, scores=s, sample_axis=-1 if score_type == "llr" else -2)
    if spec.binary:
        v.check_binary(k, f"`metric` {metric!r}")
    evaluation_priors = None
    if priors is not None and "priors" in spec.options:
        evaluation_priors = v.as_priors(priors, num_classes=k)
    # Value checks need concrete labels (under jit, e.g. weighted_metric inside a traced function, they are skipped).
    if not v.any_traced(labels, priors):
        check_class_support(np.bincount(np.asarray(labels), minlength=k), evaluation_priors,
                            both_classes_for=_needs_both_classes(metric))
    return labels, _Scores(s, log_p), evaluation_priors


def _needs_both_classes(metric):
    """The name of a ranking metric (undefined without samples of both classes), else ``None``."""
    return metric if isinstance(metric, str) and metric in _RANKING_METRICS else None


def _metric_options(metric, labels, priors, costs):
    """The keyword options of a built-in kernel (arrays: traced, not static)."""
    if not isinstance(metric, str):
        return {}
    options = {}
    if "priors" in BUILTIN_METRICS[metric].options:
        options["priors"] = priors
    if metric == "nec_best_threshold":
        c = jnp.asarray(1.0 - np.eye(2), jnp.result_type(float)) if costs is None else v.as_matrix(
            costs, "costs", shape=(2, 2), batched=False)
        if v.any_traced(labels, c, priors):
            options["costs"] = c
            return options
        if np.any(np.asarray(c) < 0):
            raise v.InputError("`costs` must be non-negative (subtract the row minima: Ferrer (2025) §2)")
        p = np.bincount(np.asarray(labels), minlength=2) / labels.shape[0] if priors is None else np.asarray(priors)
        v.check_naive_cost_positive(np.min(np.sum(p[:, None] * np.asarray(c, np.float64), 0)))  # min_j sum_i P_i c_ij
        options["costs"] = c
    return options


def _check_user_metric(metric, labels, scores):
    """A user metric must trace (jit-able) and return a scalar for one system and one weight vector."""
    n = labels.shape[0]
    dtype = scores.values.dtype
    try:
        out = jax.eval_shape(metric, labels, jax.ShapeDtypeStruct(scores.shape[1:], dtype),
                             jax.ShapeDtypeStruct((n,), dtype))
    except Exception as err:  # noqa: BLE001 - any failure to trace is the user function's
        raise v.InputError(f"`metric` must be a jit-able function f(labels, log_posteriors, weights) -> scalar; "
                           f"tracing it with shapes {tuple(labels.shape)}, {tuple(scores.shape[1:])}, ({n},) "
                           f"raised {type(err).__name__}: {err}") from None
    shape = getattr(out, "shape", None)
    real = jnp.issubdtype(out.dtype, jnp.floating) or jnp.issubdtype(out.dtype, jnp.integer)
    if shape != () or not (real or out.dtype == jnp.bool_):  # complex numbers have no order: not a metric
        raise v.InputError(f"`metric` must return a real numeric scalar (not complex), got {out!r}")


def _checked_sample_weight(sample_weight, labels, metric, evaluation_priors, num_classes):
    """Frequency weights ``(N,)`` or ``None``; the class checks of :func:`_validated_scores`, on the weighted counts."""
    sample_weight = v.as_sample_weight(sample_weight, labels)
    if sample_weight is None:
        return None
    counts = np.bincount(np.asarray(labels), weights=np.asarray(sample_weight), minlength=num_classes)
    v.check_some_weight(sample_weight)
    check_class_support(counts, evaluation_priors, both_classes_for=_needs_both_classes(metric), weighted=True)
    return sample_weight


def _group_index(groups, num_samples):
    """``(group index (N,) int32, G)`` from hashable ids, or ``(None, 0)``."""
    if groups is None:
        return None, 0
    g = v.as_group_ids(groups, num_samples)
    _, gid = np.unique(g, return_inverse=True)
    return jnp.asarray(gid.reshape(-1), jnp.int32), int(gid.max()) + 1


def _check_weights(weights, num_samples):
    w = v.as_array(weights, "weights", min_ndim=1)
    if w.shape[-1] != num_samples:
        raise v.InputError(f"`weights` must have N = {num_samples} entries in its last axis (one per sample), got "
                           f"shape {tuple(w.shape)}")
    if not v.is_tracer(w):
        a = v.check_numbers(np.asarray(w), "weights", booleans=True)
        if np.any(a < 0):
            raise v.InputError(f"`weights` must be non-negative, got minimum {a.min()}")
        if np.any(a.sum(-1) <= 0):
            raise v.InputError("`weights` must have a positive sum for every weight vector")
    return jnp.asarray(w, jnp.result_type(float))


# ----------------------------------------------------------------- the draws

def _unit_floats(bits):
    # 23 random mantissa bits in [1, 2), shifted to [0, 1), as jax.random.uniform does.
    return jax.lax.bitcast_convert_type((bits >> 9) | np.uint32(0x3F800000), jnp.float32) - 1.0


def _exponentials(words, draw_ids, size):
    """``(C, size)`` Exp(1) variates; element ``t`` of draw ``d`` depends only on the key, ``d`` and ``t``.

    Counter-based (Threefry-2x32 of the counters ``(d, j)``, two words per
    hash): no per-draw key to derive, and the same draws whatever the chunks.
    ``-log(1 - u)`` of a uniform with 23 random bits is at most ``23 log 2 ~
    15.9``; the Exp(1) tail beyond it has probability ``2^-23``.
    """
    half = (size + 1) // 2
    shape = (draw_ids.shape[0], half)
    y0, y1 = random_bits.threefry2x32(words[0], words[1], jnp.broadcast_to(draw_ids[:, None], shape),
                                      jnp.broadcast_to(jnp.arange(half, dtype=jnp.uint32), shape))
    # 1 - u is exact in float32 (u has 23 random bits), so log(1 - u) needs no log1p (twice the time of a log).
    return -jnp.log(1.0 - jnp.concatenate([_unit_floats(y0), _unit_floats(y1)], -1)[:, :size])


def _cluster_weights(group_weight, groups, sample_weight=None):
    """(2): every sample of cluster ``g`` gets the cluster's weight ``G_g`` (times its frequency weight ``s_n``)."""
    w = group_weight[:, groups]
    return w if sample_weight is None else w * sample_weight


def _draw_weights(words, draw_ids, groups, num_samples, num_groups, normalized=True):
    """``(C, N)`` draws of (1) (``groups=None``) or (2), each normalized to sum to 1 (or not: a ranking metric's
    kernels are ratios of weighted sums, so the division would be a pass over the weights for nothing)."""
    if groups is None:
        e = _exponentials(words, draw_ids, num_samples)
    else:
        e = _cluster_weights(_exponentials(words, draw_ids, num_groups), groups)
    return e / jnp.sum(e, -1, keepdims=True) if normalized else e


def _is_ranked(metric):
    return isinstance(metric, str) and BUILTIN_METRICS[metric].ranked is not None


class _Ranking(NamedTuple):
    """A ranking metric's sorts of ``M`` systems and where each sorted position's weight is in a weight vector."""

    ranked: SortedScores  # (M, ...): one sort per system
    to_sorted: jax.Array  # (M, N): weights[..., to_sorted[m, k]] belongs to system m's sorted position k
    first_in_sorted_order: bool  # the weight vectors are in system 0's sorted order (to_sorted[0] is the identity)


def _prepared(metric, labels, log_post, *, exchangeable=False):
    """What the metric needs of the ``(M, N, K)`` log-posteriors for any weights: a ranking metric's sort of each
    system's log-odds (made once, outside the loop over draws, :class:`_Ranking`), else the log-posteriors.

    ``exchangeable``: the weights are i.i.d. draws (eq. 1), so any assignment of a weight vector's entries to the
    samples is a draw of the same distribution: entry ``k`` goes to system 0's ``k``-th sorted sample, its kernel
    reads the draws as they come (no gather of ``N`` weights into sorted order), and every other system reads the
    same sample's entry, so the systems stay paired.
    """
    if not _is_ranked(metric):
        return log_post
    ranked = jax.vmap(lambda lp: _ranked(labels, lp))(log_post)
    if not exchangeable:
        return _Ranking(ranked, ranked.order, False)
    n = labels.shape[0]
    position = jnp.zeros(n, jnp.int32).at[ranked.order[0]].set(jnp.arange(n, dtype=jnp.int32))  # sample -> entry
    return _Ranking(ranked, position[ranked.order], True)


def _ranked_metric(kernel, ranking, weights, options):
    """``(C, M)`` of a ranking kernel on :class:`_Ranking` for weights ``(C, N)``.

    The systems are a loop (``lax.map``), not a ``vmap``: the kernels branch (``lax.cond``) on their sort, which a
    ``vmap`` over the sorts would turn into computing both branches.
    """
    def one(system):
        ranked, to_sorted = system
        return kernel(ranked, jnp.take(weights, to_sorted, axis=-1), in_sorted_order=True, **options)

    systems = (ranking.ranked, ranking.to_sorted)
    if not ranking.first_in_sorted_order:
        return jax.lax.map(one, systems).T
    first = kernel(jax.tree.map(lambda a: a[0], ranking.ranked), weights, in_sorted_order=True, **options)
    if ranking.to_sorted.shape[0] == 1:
        return first[:, None]
    rest = jax.lax.map(one, jax.tree.map(lambda a: a[1:], systems))
    return jnp.concatenate([first[None], rest]).T


def _evaluate(metric, labels, prepared, weights, options, num_samples):
    """``(C, M)``: the metric of every system for weights ``(C, N)`` (``num_samples`` ``(C,)``: the count each
    weight vector stands for), on :func:`_prepared` input."""
    if _is_ranked(metric):
        return _ranked_metric(BUILTIN_METRICS[metric].ranked, prepared, weights, options)
    kernel = _kernel_of(metric)
    counts = isinstance(metric, str) and BUILTIN_METRICS[metric].counts

    def one(w, count):
        extra = dict(options, num_samples=count) if counts else options
        return jax.vmap(lambda lp: kernel(labels, lp, w, **extra))(prepared)

    return jax.vmap(one)(weights, jnp.broadcast_to(num_samples, weights.shape[:1]))


def _frequency_weighted_chunk(key, c, labels, scores, groups, options, sample_weight, *, metric, score_type,
                              chunk_size, num_groups):
    """``(chunk_size, M)`` draws of (3): chunk ``c``, draws ``c * chunk_size`` to ``(c + 1) * chunk_size - 1``.

    The chunk draws its Gamma(s_n) weights with ``fold_in(key, c)`` through
    :func:`~ecjax._src.prob.sampling.gamma` (with clusters, the cluster weights ``G_g
    ~ Exp(1)`` of (2) from ``fold_in(fold_in(key, c), 1)``, times ``s_n``), whose sampler is compiled once per
    process (a copy inlined into this program would cost seconds of
    compilation per call shape); the metric is evaluated by the compiled
    :func:`_weighted_kernel`.  Every chunk is full, so one shape compiles.
    """
    key_c = random_bits.fold_in(key, c)
    if groups is None:
        e = sampling.gamma(key_c, np.broadcast_to(np.asarray(sample_weight, np.float32), (chunk_size, labels.shape[0])))
    else:  # (2) with (3): no draw within the clusters
        group_weight = jax.random.exponential(random_bits.fold_in(key_c, 1), (chunk_size, num_groups))
        e = _cluster_weights(group_weight, groups, jnp.asarray(sample_weight, group_weight.dtype))
    return _weighted_kernel(labels, scores, e, options, metric=metric, score_type=score_type)


@partial(jax.jit, static_argnames=("metric", "score_type", "num_draws", "chunk_size", "num_groups"))
def _bootstrap_draws(words, start, labels, scores, groups, options, *, metric, score_type, num_draws, chunk_size,
                     num_groups):
    """``(S, M)`` draws ``start, ..., start + S - 1`` and the ``(M,)`` metric on the data (uniform weights), in one
    compiled program (``start`` traced: later rounds of the same size reuse it).

    The rows evaluated are the uniform weights, then the ``S`` draws, in chunks of ``chunk_size`` rows: one vmapped
    copy of the metric to compile (not a second one for the estimate), and one extra evaluation per call, not one
    per chunk (a fifth more work at 4 draws a chunk, ``N = 10^6``).
    """
    log_post = log_posteriors_kernel(scores.values, scores.log_priors, score_type)
    n, m = labels.shape[0], log_post.shape[0]
    num_chunks = -(-(num_draws + 1) // chunk_size)
    row = jnp.arange(num_chunks * chunk_size, dtype=jnp.uint32).reshape(num_chunks, chunk_size)
    uniform = jnp.asarray(1.0 / n, log_post.dtype)

    # A ranking metric's sorts, once for every draw; without clusters its draws come in the first system's order.
    prepared = _prepared(metric, labels, log_post, exchangeable=groups is None)

    def chunk(rows):
        # Row r > 0 is draw start + r - 1 (row 0's draw, replaced by the uniform weights, is never used).
        drawn = _draw_weights(words, jnp.asarray(start, jnp.uint32) + rows - 1, groups, n, num_groups,
                              normalized=not _is_ranked(metric))
        w = jnp.where((rows == 0)[:, None], uniform, drawn)
        return _evaluate(metric, labels, prepared, w, options, n)

    out = chunk(row[0]) if num_chunks == 1 else jax.lax.map(chunk, row).reshape(-1, m)
    return out[1:num_draws + 1], out[0]


@partial(jax.jit, static_argnames=("metric", "score_type"))
def _weighted_kernel(labels, scores, weights, options, *, metric, score_type):
    """``(..., M)`` for weights ``(..., N)`` (normalized here; their sum is the sample count of ``"ece"``) and scores
    of ``M`` systems."""
    log_post = log_posteriors_kernel(scores.values, scores.log_priors, score_type)
    flat = weights.reshape(-1, weights.shape[-1])
    totals = jnp.sum(flat, -1, keepdims=True)
    out = _evaluate(metric, labels, _prepared(metric, labels, log_post), flat / totals, options, totals[:, 0])
    return out.reshape(weights.shape[:-1] + (log_post.shape[0],))


def _recentred(draws, estimate, labels, scores, sample_weight, options, *, metric, score_type):
    """The draws of a debiased metric, moved by its estimated bias: ``draw_s - (plug-in - estimate)`` on the data.

    A bootstrap draws from the empirical distribution, whose value of the
    metric is the *plug-in* one: the draws of a debiased estimator centre
    on the plug-in value (with the spread of the estimator), not on the
    debiased estimate.  Moving them by ``plug-in - debiased`` on the data
    centres them on the estimate (the bootstrap bias correction of Efron &
    Tibshirani 1993, §10.6, with the analytic bias of the estimator), so
    that the interval targets the population value.  Other metrics: as drawn.
    """
    plugin = BUILTIN_METRICS[metric].plugin if isinstance(metric, str) else None
    if plugin is None:
        return draws
    data_weights = jnp.ones(labels.shape[:1], draws.dtype) if sample_weight is None else jnp.asarray(
        sample_weight, draws.dtype)
    value = _weighted_kernel(labels, scores, data_weights[None], options, metric=plugin, score_type=score_type)[0]
    return draws - (value - estimate)


def weighted_metric(labels: ArrayLike, scores: ArrayLike, weights: ArrayLike, metric: str | _UserMetric, *,
                    score_type: str = "log_posteriors", priors: ArrayLike | None = None,
                    costs: ArrayLike | None = None) -> jax.Array:
    """A metric of the scores with per-sample weights: built-in by name, or a user function.

    ``metric`` is one of :data:`BUILTIN_METRICS` (``"cross_entropy"``,
    ``"brier"``, ``"auc"``, ``"eer"``, ``"ece"``, ``"nec_best_threshold"``,
    ``"calibration_loss"``; see the ``weighted_*`` kernels of this module for their formulas) or a
    jit-able ``f(labels, log_posteriors, weights) -> scalar`` of one system.
    Integer weights give the metric of the data with each row repeated that
    many times; uniform weights give the ordinary metric.

    Args:
      labels: ``(N,)`` true classes.
      scores: ``(N, K)`` or ``(M, N, K)`` (``(N,)`` / ``(M, N)`` for ``"llr"``).
      weights: ``(..., N)`` non-negative weights, any scale (normalized to
        sum to 1 before the metric sees them), any leading batch axes.
      score_type: as everywhere (:mod:`ecjax.inputs`).
      priors: for ``"cross_entropy"``, ``"brier"``, ``"nec_best_threshold"``
        and ``"calibration_loss"``, evaluation priors (default: the weighted
        class frequencies); for ``"llr"`` / ``"log_likelihoods"`` scores also
        the priors that make them posteriors (required then, except for the
        ranking metrics ``"auc"``, ``"eer"``, ``"nec_best_threshold"``).
      costs: ``(2, 2)`` non-negative costs of ``"nec_best_threshold"``
        (default 0-1).

    Returns:
      ``weights.shape[:-1]`` (one system) or ``weights.shape[:-1] + (M,)``.
      Works under ``jax.jit`` / ``jax.vmap`` over ``weights`` (value checks
      of traced weights are skipped).

    Example:
      >>> float(weighted_metric([0, 1, 1], jnp.log(jnp.array([[.5, .5], [.3, .7], [.7, .3]])),
      ...                       jnp.array([1.0, 3.0, 1.0]), "auc"))
      0.75
    """
    spec = _metric_spec(metric, None if isinstance(metric, str) else True, score_type, priors, costs)
    metric = spec.metric
    single = np.ndim(scores) == (1 if score_type == "llr" else 2)
    y, checked, evaluation_priors = _validated_scores(labels, scores, spec, score_type, priors)
    options = _metric_options(metric, y, evaluation_priors, costs)
    if callable(metric):
        _check_user_metric(metric, y, checked)
    w = _check_weights(weights, y.shape[0])
    out = _weighted_kernel(y, checked, w, options, metric=metric, score_type=score_type)
    if v.any_traced(y, checked.values, checked.log_priors, w):  # the NaN contract: a value the concrete call refuses
        out = jnp.where(_weighted_metric_ok(y, checked.values, w, checked.log_priors.shape[-1],
                                            _needs_both_classes(metric) is not None)[..., None], out, jnp.nan)
    return out[..., 0] if single else out


def _weighted_metric_ok(labels, scores, weights, num_classes, both_classes):
    """``weights.shape[:-1]`` mask of traced input that :func:`weighted_metric` would accept if it were concrete:
    labels in ``[0, K)`` (both classes present for a ranking metric), no NaN score, weights finite, ``>= 0``, with a
    positive sum."""
    ok = jnp.all((labels >= 0) & (labels < num_classes)) & ~jnp.any(jnp.isnan(scores))
    if both_classes:
        n1 = jnp.sum(labels == 1)
        ok = ok & (n1 > 0) & (n1 < labels.shape[0])
    return ok & jnp.all(jnp.isfinite(weights) & (weights >= 0), -1) & (jnp.sum(weights, -1) > 0)


# ---------------------------------------------------------------- the result

INTERVAL_KINDS = ("equal_tailed", "hdi")


def equal_tailed_interval(draws: ArrayLike, prob: float = 0.9) -> np.ndarray:
    """``(S, ...)`` draws -> ``(..., 2)``: their ``(1 - prob) / 2`` and ``(1 + prob) / 2`` quantiles (float64).

    Invariant under monotone maps of the metric, and it leaves ``(1 - prob) / 2`` of the draws in each tail,
    where the HDI of a skewed posterior gives up the long one.
    """
    q = np.quantile(np.asarray(draws, np.float64), [(1.0 - prob) / 2, (1.0 + prob) / 2], axis=0)
    return np.moveaxis(q, 0, -1)


@dataclass(frozen=True)
class MetricPosterior(RankedSystems):
    """Bayesian-bootstrap posterior of a metric of ``M`` systems scored on the same samples.

    Attributes:
      systems: names of the systems.
      metric: the metric's name (a user function's ``__name__``).
      higher_is_better: the metric's direction; every "better" below follows it.
      draws: ``(S, M)`` posterior draws of the metric, paired across systems.
      estimate: ``(M,)`` the metric on the data (uniform weights).
      mean: ``(M,)`` posterior mean (Monte Carlo).
      hdi_prob: probability mass of :attr:`hdi` and :attr:`equal_tailed`.
      hdi: ``(M, 2)`` highest-density intervals (the narrowest holding
        ``hdi_prob`` of the draws).
      equal_tailed: ``(M, 2)`` equal-tailed intervals, the ``(1 - hdi_prob) / 2``
        and ``(1 + hdi_prob) / 2`` quantiles of the draws: the interval the
        summary reports.  On a skewed posterior the HDI gives up the long
        tail, and its coverage of the population value at ``N = 50`` fell
        to 0.86 (AUC, accuracy) where the equal-tailed one held 0.90-0.92
        (README, coverage table).
      p_best: ``(M,)`` ``P(system m is the best)``; exact ties split at random.
      rank_probabilities: ``(M, M)`` ``[m, r] = P(system m has rank r)``, rank 0 best.
      pairwise: ``(M, M)`` ``[a, b] = P(a strictly better than b)``: two
        systems with identical draws give 0 both ways (a tie is neither).
      rope: half-width of the region of practical equivalence (metric units) or ``None``.
      rope_probabilities: ``(M, M, 3)`` ``[a, b] = (P(a better by more than
        rope), P(|difference| <= rope), P(b better by more than rope))`` or ``None``.
      recommendation: index of the best posterior mean (lowest index among ties).
      errors: batch-means Monte Carlo standard errors
        (:func:`~ecjax._src.prob.ranking.batch_means_error`) of ``mean``,
        ``p_best``, ``rank_probabilities``, ``pairwise`` and, with a rope,
        ``rope_probabilities``.
      info: how the draws were made.
    """

    metric: str
    higher_is_better: bool
    draws: jax.Array
    estimate: np.ndarray
    mean: np.ndarray
    hdi_prob: float
    hdi: np.ndarray
    equal_tailed: np.ndarray
    errors: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    CENTRE = "mean"

    def to_dict(self) -> dict:
        """The record ``ecjax metrics --bootstrap METRIC --json`` writes under ``"bootstrap"`` (without its seed)."""
        names = self.systems
        return {"metric": self.metric, "higher_is_better": self.higher_is_better, "num_draws": self.num_draws,
                "hdi_prob": self.hdi_prob, "estimate": result_formats.by_system(names, self.estimate),
                "mean": result_formats.by_system(names, self.mean), "hdi": result_formats.by_system(names, self.hdi),
                "p_best": result_formats.by_system(names, self.p_best),
                "pairwise": result_formats.by_pair(names, self.pairwise)}

    def system_columns(self) -> dict[str, np.ndarray]:
        """The estimate on the data and the equal-tailed interval, then the columns of every ranked result."""
        return {"estimate": np.asarray(self.estimate, np.float64), **super().system_columns(),
                "equal_tailed": np.asarray(self.equal_tailed, np.float64)}

    def posterior_variables(self) -> tuple[dict, dict]:
        """The draws under the metric's name."""
        return {self.metric: (self.draws, ["system"])}, {"system": list(self.systems)}

    def interval(self, values: str = "draws", prob: float | None = None, kind: str = "equal_tailed") -> np.ndarray:
        """Interval ``(M, 2)`` of the metric (``"draws"``) or ``(M, M, 2)`` of ``"differences"`` (row minus column).

        ``kind``: ``"equal_tailed"`` (the ``(1 -+ prob) / 2`` quantiles of the
        draws, as :attr:`equal_tailed`) or ``"hdi"`` (as :attr:`hdi`).
        """
        v.check_choice(values, "values", ("draws", "differences"))
        v.check_choice(kind, "kind", INTERVAL_KINDS)
        prob = self.hdi_prob if prob is None else prob
        x = self.draws if values == "draws" else self.draws[:, :, None] - self.draws[:, None, :]
        return np.asarray(hdi(x, prob)) if kind == "hdi" else equal_tailed_interval(x, prob)

    def summary(self) -> str:
        """A plain-text table: estimate, posterior mean, equal-tailed interval, P(best), and the recommendation against
        every other system (with a ``rope``, the three ROPE probabilities).  One system: its row only."""
        single = len(self.systems) == 1
        direction = "higher" if self.higher_is_better else "lower"
        where = f"{self.info['num_samples']} samples"
        if self.info.get("num_groups"):
            where += f" in {self.info['num_groups']} clusters"
        lines = [f"metric: {self.metric} ({direction} is better); Bayesian bootstrap over {where}"
                 + ("" if single else ", paired across systems")]
        rows = [["system", "estimate", f"E[{self.metric}]", f"{int(round(self.hdi_prob * 100))}% interval"]
                + ([] if single else ["P(best)"])]
        for m, name in enumerate(self.systems):
            lo, hi = self.equal_tailed[m]
            rows.append([name, f"{self.estimate[m]:.4f}", with_error(self.mean[m], self.error("mean", m), 4),
                         f"[{lo:.4f}, {hi:.4f}]"]
                        + ([] if single else [with_error(self.p_best[m], self.error("p_best", m), 3)]))
        lines += aligned(rows)
        lines.append(f"± Monte Carlo standard error ({self.num_draws} draws, batch means); intervals equal-tailed")
        if single:
            return "\n".join(lines)
        r = self.recommendation
        lines.append(f"recommended: {self.best} (P(best) = {with_error(self.p_best[r], self.error('p_best', r), 3)})")
        for j, name in enumerate(self.systems):
            if j == r:
                continue
            line = (f"  vs {name}: P({self.best} better) = "
                    f"{with_error(self.pairwise[r, j], self.error('pairwise', r, j), 3)}")
            if self.rope_probabilities is not None:
                better, same, worse = (with_error(float(self.rope_probabilities[r, j, i]),
                                                  self.error("rope_probabilities", r, j, i), 3) for i in range(3))
                line += (f"; P({self.best} better by > {self.rope:g}) = {better}, "
                         f"P(|difference| <= {self.rope:g}) = {same}, P({name} better by > {self.rope:g}) = {worse}")
            lines.append(line)
        return "\n".join(lines)

    def __repr__(self):
        return (f"MetricPosterior(metric={self.metric!r}, systems={self.systems}, num_draws={self.num_draws}, "
                f"best={self.best!r})\n{self.summary()}")



def bootstrap_metric(systems: Systems, metric: str | _UserMetric, *, key: jax.Array | None = None,
                     higher_is_better: bool | None = None, priors: ArrayLike | None = None,
                     costs: ArrayLike | None = None, rope: float | None = None, hdi_prob: float = 0.9,
                     settings: MonteCarloSettings = MonteCarloSettings()) -> MetricPosterior:
    """Posterior of any metric of ``M`` classifiers' scores by the Bayesian bootstrap (eqs. 1-2 of the module).

    Each of the ``S`` draws gives every test sample (with ``groups``: every
    cluster, shared by its samples) a Dirichlet(1, ..., 1) weight
    (Rubin 1981) and evaluates the metric of every system on the same scores
    with the same weights, so the systems are paired.  Draws are evaluated in
    chunks under ``jax.lax.map`` (memory ``O(chunk_size M N)``, whatever
    ``S``); draw ``i`` depends only on ``key`` and ``i``, not on the chunk size.

    Args:
      systems: a :class:`~ecjax.prob.Systems` made with ``scores``: ``M``
        paired systems' scores on one test set (``(N, K)`` each, ``(N,)``
        for ``"llr"``), their ``score_type``, names, ``groups`` (cluster
        ids for the cluster bootstrap, eq. 2) and ``sample_weight`` (below).
      metric: a built-in name: ``"cross_entropy"``, ``"brier"`` (Ferrer (2022b)
        §4.1), ``"auc"``, ``"eer"`` (binary; §4.5), ``"ece"`` (15
        equal-width bins, §4.3.2: the debiased estimator of the population
        ECE of these bins, :func:`weighted_ece`, its draws centred on its
        estimate, :func:`_recentred`), ``"ece_plugin"`` (the plug-in ECE of
        :func:`ecjax.scores.ece`, whose posterior sits above the population
        value), ``"nec_best_threshold"`` (binary: the NEC
        of "decide 1 iff log-odds > t" at the best ``t`` for each draw, 0-1
        costs unless ``costs`` given), ``"calibration_loss"`` (the relative
        cross-entropy calibration loss of Ferrer (2022b) eq. 60, in percent, of
        the affine calibrator fitted on each draw's weights:
        :func:`weighted_calibration_loss`); or a user function ``f(labels,
        log_posteriors, weights) -> scalar`` for one system (``(N,)``,
        ``(N, K)``, ``(N,)``), jit- and vmap-able, where ``weights`` are
        non-negative and sum to 1 (uniform ``1/N`` gives the ordinary metric).
        A metric of confusion counts (F1, MCC, ...) forms the weighted
        counts ``sum_n w_n [y_n = i] [d_n = j]`` of its decisions inside ``f``.
      key: ``jax.random`` key (required).
      higher_is_better: the direction of a user metric (required then); the
        built-ins know theirs.
      priors, costs: as in :func:`weighted_metric` (evaluation priors fixed
        by ``priors`` are not resampled: only the samples within each class
        are).
      rope: half-width of the region of practical equivalence, in metric units.
      hdi_prob: mass of the intervals (equal-tailed and highest-density).
      settings: :class:`~ecjax.prob.MonteCarloSettings`: ``num_draws``
        (``S``) and ``chunk_size``, the draws evaluated together (default:
        about 4M ``(draw, system, sample)`` elements per chunk); ``mc_error``
        draws in rounds from ``num_draws`` (default 1000) until every
        reported probability (P(best), pairwise, ROPE) has a Monte Carlo
        error at most ``mc_error``, at most ``max_draws``
        (:func:`~ecjax._src.prob.adaptive_draws.draw_until`: a round extends the draws
        already made, so the answer equals a fixed run of as many draws).
        Default (neither ``num_draws`` nor ``mc_error``): the target 0.01
        from 1000 draws, at most 20 000 (one system: 1000 draws);
        ``info["num_draws"]``, ``info["draws"]`` and ``info["precision"]``
        say how many were drawn and whether the target was met.
        ``progress``: as in :func:`~ecjax.prob.compare`, a report after
        every block of draws (whole chunks, about a 16th of the first round;
        frequency-weighted draws: every chunk), with the measured time left
        of the run (of each round when drawing until precise) and the
        ``(done, M)`` draws so far.

    ``systems.sample_weight``: frequency weights (scikit-learn's meaning,
    one ``(N,)`` vector): the draws are (3) of the module, so an integer
    weight ``k`` is ``k`` copies of the sample in distribution and 0
    removes it; the estimate is the weighted metric.  The weighted draws
    come from one key per chunk, so they depend on ``chunk_size`` (the
    unweighted ones do not).

    Returns:
      :class:`MetricPosterior`.  Not jit-able itself (it validates and
      summarizes on the host); :func:`weighted_metric` and the kernels are.

    Example:
      >>> import numpy as np
      >>> from ecjax.prob import MonteCarloSettings
      >>> labels = np.array([0, 0, 0, 1, 1, 1] * 5)
      >>> llr_a = np.array([-2.0, -1.0, 0.5, 0.0, 1.0, 2.0] * 5)
      >>> llr_b = np.array([-1.0, 0.5, 1.0, -0.5, 0.0, 1.5] * 5)
      >>> post = bootstrap_metric(Systems(labels, scores={"a": llr_a, "b": llr_b}, score_type="llr"), "auc",
      ...                         key=jax.random.key(0), settings=MonteCarloSettings(num_draws=1000))
      >>> [round(float(x), 4) for x in post.estimate], post.draws.shape  # the AUCs on the data: 8/9 and 5/9
      ([0.8889, 0.5556], (1000, 2))
    """
    key = v.as_key(key)
    labels, _, score_type, groups, sample_weight, names = paired_scores(systems)
    counts = _draw_settings(settings)
    num_draws = counts.first
    check_draws_fit(counts.cap, _KEPT_BYTES_PER_DRAW_AND_SYSTEM * len(names))
    hdi_prob = check_hdi_prob(hdi_prob, num_draws)
    rope = check_rope(rope)
    spec = _metric_spec(metric, higher_is_better, score_type, priors, costs)
    metric, higher = spec.metric, spec.higher_is_better
    y, checked, evaluation_priors = _validated_scores(labels, stacked_scores(systems), spec, score_type, priors)
    options = _metric_options(metric, y, evaluation_priors, costs)
    if callable(metric):
        _check_user_metric(metric, y, checked)
    m, n, k = checked.shape
    sample_weight = _checked_sample_weight(sample_weight, y, metric, evaluation_priors, checked.shape[-1])
    group_index, num_groups = _group_index(groups, n)
    chunk_size = counts.chunk_size
    # The rows a chunk can hold: the draws, and without frequency weights the uniform weights' row (the estimate).
    rows = num_draws + (sample_weight is None)
    if chunk_size is None:
        per_sample = max(1, BUILTIN_METRICS[metric].arrays_per_sample_and_class * k) if isinstance(metric, str) else 1
        chunk_size = max(1, min(rows, _CHUNK_ELEMENTS // (n * m * per_sample)))
    chunk_size = min(chunk_size, rows)

    key_weights, key_rank = random_bits.split_keys(key)
    # Two threefry key words from any key type: the counter-based draws of _exponentials need them (on the host for
    # a threefry key: no programs to compile).
    words = random_bits.uint32_bits(key_weights, 2)
    # The host loop's blocks (ecjax._src.draw_runner): whole chunks, one compiled call each, the last one cut to the
    # round.  Counter-based draws start anywhere: a block is the first round (one call per round, so one sort of a
    # ranking metric's scores), or with progress about 1/_PROGRESS_BLOCKS of it, a sort each, so that reports and the
    # measured time left come regularly.  Frequency-weighted draws take a key per chunk: a block is a chunk, and
    # rounds start on one (draw_until's `multiple`).  Without progress the host copies the round once, at its end.
    # A block's program evaluates the uniform weights and its draws: whole chunks of them, so one fewer draw.
    reported = bool(counts.progress)
    block = chunk_size if sample_weight is not None else chunk_size * -(
        -((-(-num_draws // _PROGRESS_BLOCKS) if reported else num_draws) + 1) // chunk_size) - 1
    estimates = [] if sample_weight is None else [
        _weighted_kernel(y, checked, sample_weight[None], options, metric=metric, score_type=score_type)[0]]

    def draw(start, count):
        def one_block(j):
            b = start + j * block
            if sample_weight is not None:
                return Block(draws=_frequency_weighted_chunk(
                    key_weights, b // chunk_size, y, checked, group_index, options, sample_weight, metric=metric,
                    score_type=score_type, chunk_size=chunk_size, num_groups=num_groups))
            d, e = _bootstrap_draws(words, b, y, checked, group_index, options, metric=metric, score_type=score_type,
                                    num_draws=block, chunk_size=chunk_size, num_groups=num_groups)
            if not estimates:
                estimates.append(e)
            return Block(draws=d)

        plan = plan_blocks(count, block, 1 if reported else count)
        return run_blocks(one_block, plan, progress=counts.progress).draws  # on the host

    def summary_of(draws):
        # One compiled program for all summaries and their errors: each round's and the final one (the same
        # arguments, so a final summary of the last round's shape compiles nothing).  The ranking functions take
        # "higher is better" draws; the HDI of the negated draws would be another program's (ties at its ends).
        return summarize(key_rank, draws if higher else -draws, rope=rope, hdi_prob=hdi_prob if higher else None,
                         indicator_errors=True)

    def probability_errors(drawn):
        if m == 1 or not np.all(np.isfinite(drawn)):
            return np.zeros(0)
        found = summary_of(drawn)["errors"]
        return np.concatenate([np.ravel(found["p_best"]), np.ravel(found["pairwise"])]
                              + ([np.ravel(found["rope_probabilities"])] if rope is not None else []))

    if counts.target is None:
        drawn = draw(0, num_draws)
        precision = None
    else:
        # Counter-based draws start anywhere; frequency-weighted ones draw a key per chunk, so rounds start on one.
        until = draw_until(draw, probability_errors, target=counts.target, first_round=num_draws, cap=counts.cap,
                           join=np.concatenate, multiple=1 if sample_weight is None else chunk_size)
        drawn, num_draws = until.draws, until.num_draws
        precision = precision_record(until, counts.target, counts.cap)
    draws = _recentred(v.to_device(drawn), estimates[0], y, checked, sample_weight, options, metric=metric,
                       score_type=score_type)
    estimate = np.asarray(estimates[0], np.float64)
    bad = int(np.sum(~np.all(np.isfinite(np.asarray(draws)), axis=-1)))
    if bad:
        raise v.InputError(f"`metric` returned NaN or inf in {bad} of {num_draws} draws; a posterior needs a finite "
                           "metric for every weighting of the samples")

    summary = summary_of(draws)
    mean = np.mean(np.asarray(draws, np.float64), 0)
    # The batch means of the negated draws are the negated batch means (exactly): their error is the draws'.
    errors = {"mean": summary["errors"]["mean_yield"], "p_best": summary["errors"]["p_best"],
              "rank_probabilities": summary["errors"]["rank_probabilities"],
              "pairwise": summary["errors"]["pairwise"]}
    if rope is not None:
        errors["rope_probabilities"] = summary["errors"]["rope_probabilities"]
    best_mean = mean if higher else -mean
    name = metric if isinstance(metric, str) else getattr(metric, "__name__", "metric")
    info = {"method": "Bayesian bootstrap (Rubin 1981)" + (", over clusters (eq. 2)" if groups is not None
                                                           else ""),
            "num_samples": n, "num_groups": num_groups or None, "chunk_size": chunk_size, "score_type": score_type,
            "priors": "data (resampled)" if evaluation_priors is None else "given (fixed)",
            "sample_weight": "none" if sample_weight is None else "frequency weights (Gamma(s_n) draws, eq. 3)",
            "num_draws": num_draws,
            "draws": describe_draws(precision),
            "precision": precision}
    return MetricPosterior(
        systems=names, metric=name, higher_is_better=higher, draws=draws, estimate=estimate, mean=mean,
        hdi_prob=hdi_prob, hdi=np.asarray(summary["hdi"] if higher else hdi(draws, hdi_prob)), equal_tailed=equal_tailed_interval(draws, hdi_prob), **ranking_fields(summary, rope),
        recommendation=int(np.argmax(best_mean)), errors=errors, info=info)
