"""Comparisons from per-fold or per-dataset results (cross-validation, several benchmarks).

The inputs are not labels and scores but one number per fold (or per fold
of each data set) for each system: an accuracy, an expected cost, a
utility yield.  Three tools, after ``baycomp`` (Benavoli, Corani, Demšar &
Zaffalon 2017, "Time for a change: a tutorial for comparing multiple
classifiers through Bayesian analysis", JMLR 18(77)):

* :func:`correlated_t_test`: one data set, ``n`` folds (``runs`` repetitions
  of ``k``-fold cross-validation).  The Bayesian correlated t-test of Corani
  & Benavoli (2015, "A Bayesian approach for comparing cross-validated
  algorithms on multiple data sets", Machine Learning 100(2-3); the tutorial above).
  The fold results overlap in their training sets, so they are correlated
  with ``rho = n_test / n_total`` (Nadeau & Bengio 2003, "Inference for the
  generalization error", Machine Learning 52).  With the prior ``p(mu,
  sigma^2) ∝ 1 / sigma^2`` the posterior of the mean difference is a
  Student t::

      mu | d ~ St(df = n - 1, loc = mean(d), scale^2 = (1/n + rho/(1 - rho)) s^2)

  with ``s^2`` the sample variance (``ddof = 1``) of the differences.  The
  three probabilities against a region of practical equivalence (ROPE)
  ``[-rope, rope]`` are t CDFs, in closed form.
* :func:`hierarchical_test`: ``q`` data sets, ``n`` folds each.  The
  hierarchical model of Corani, Benavoli, Demšar, Mangili & Zaffalon (2017,
  "Statistical comparison of classifiers through Bayesian hierarchical
  modelling", Machine Learning 106(11); the tutorial above), baycomp's
  ``HierarchicalTest`` (Stan) transcribed as the NumPyro model
  :func:`hierarchical_t_model` and fitted with NUTS.
* :func:`compare_results`: ``M`` systems on one data set.  The joint
  posterior of the ``M`` mean scores whose every pairwise marginal is the
  correlated t-test of that pair (a multivariate t), its ranking
  (:mod:`~ecjax._src.prob.ranking`) and the closed-form pairwise probabilities.
* :func:`hierarchical_compare_results`: ``M`` systems on ``q`` data sets.
  The hierarchical model for all ``M`` at once
  (:func:`hierarchical_results_model`): each data set's likelihood is the
  multivariate t of :func:`compare_results` on the differences to one
  system, the population of data sets a multivariate t with a spread per
  system; NUTS, then the ranking and every pair's probabilities.

Conventions (baycomp's): the differences are ``scores_b - scores_a``; ``left``
is ``mu < -rope`` (the first system, ``a``, better when higher scores are
better), ``rope`` is ``|mu| <= rope``, ``right`` is ``mu > rope``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.typing import ArrayLike, DTypeLike
from numpyro.infer.reparam import LocScaleReparam

from ecjax._src import inputs as v
from ecjax._src import random_bits
from ecjax._src import result_formats
from ecjax._src.draw_runner import Block, ProgressOption, plan_blocks, run_blocks
from ecjax._src.precision import einsum, matmul
from ecjax._src.prob import ranking
from ecjax._src.prob.inputs import (as_fold_results, check_dataset_spread, check_draws_fit, check_fold_spread,
                                    check_pair_spread, check_several_datasets, flat_fold_rows, fold_differences,
                                    fold_rounding, results_per_dataset)
from ecjax._src.prob.mcmc import NUTSDiagnostics, NUTSSettings, check_nuts_settings, fit_nuts
from ecjax._src.prob.adaptive_draws import (DEFAULT_MAX_DRAWS, DEFAULT_MC_ERROR, describe_draws, draw_until, first_draws,
                                      precision_record)
from ecjax._src.prob.draw_plan import plan_draws
from ecjax._src.report import aligned

if TYPE_CHECKING:
    import pandas as pd

# baycomp's default number of draws of the correlated t-test's posterior (``Posterior.nsamples``).
DEFAULT_T_DRAWS = 50_000


# ---------------------------------------------------------------------------------------------------------------------
# Inputs


def _on_device(x):
    return x if v.is_tracer(x) else v.to_device(x, jnp.result_type(float))


def fold_correlation(num_folds_total: int, *, runs: int = 1, test_fraction: float | None = None) -> float:
    """``rho``, the correlation between the results of two folds (Nadeau & Bengio 2003).

    ``rho = n_test / n_total``, the fraction of the data in each test fold.
    By default (``test_fraction=None``) it is ``1 / k`` for ``runs``
    repetitions of ``k``-fold cross-validation with ``n = runs k`` results,
    as in baycomp; give ``test_fraction`` for other schemes (repeated
    hold-out).  Raises :class:`InputError` unless ``0 < rho < 1``.
    """
    runs = v.as_scalar(runs, "runs", integer=True, low=1)
    if test_fraction is not None:
        return v.as_scalar(test_fraction, "test_fraction", low=0.0, high=1.0, strict=True)
    if num_folds_total % runs:
        raise v.InputError(f"`runs` must divide the number of results: {num_folds_total} results are not "
                           f"{runs} runs of k folds")
    folds = num_folds_total // runs
    if folds < 2:
        raise v.InputError(f"`runs`: {num_folds_total} results in {runs} runs leave {folds} fold per run; "
                           "cross-validation needs at least 2 folds (or give `test_fraction`)")
    return 1.0 / folds


# ---------------------------------------------------------------------------------------------------------------------
# The Student t CDF with integer degrees of freedom (jax.scipy.stats.t has no cdf, and jax.scipy.special.betainc is
# off by up to 1e-3 in float32 near the centre of the t, enough to move a reported probability)

# |t| beyond this is clipped (its tail is below 1e-15 for any df >= 1) so that t^2 stays finite in float32.
_T_CLIP = 1e15


@partial(jax.jit, static_argnames=("df",))
def student_t_cdf(x: jax.Array, df: int) -> jax.Array:
    """``P(T <= x)`` for a standard Student t with an integer number ``df >= 1`` of degrees of freedom.

    The finite series of Abramowitz & Stegun 26.7.3-26.7.4 (Gosset's), with
    ``theta = atan(|x| / sqrt(df))`` and ``A = P(|T| <= |x|)``::

        df even:  A = sin(theta) sum_{k < df/2} c_k cos^(2k)(theta),   c_0 = 1, c_k = c_{k-1} (2k - 1) / (2k)
        df odd:   A = (2 / pi) [theta + sin(theta) cos(theta) sum_{k < (df-1)/2} d_k cos^(2k)(theta)],
                  d_0 = 1, d_k = d_{k-1} 2k / (2k + 1)

    and ``P(T <= x) = (1 - A) / 2`` for ``x <= 0``.  Every term is positive
    (no cancellation), ``cos^(2k)`` is ``exp(-k log1p(x^2 / df))``, so the
    result is within a few float32 roundings of the exact CDF (absolute);
    ``df`` is static (a Python int), as it is for ``n`` folds (``n - 1``).
    """
    df = int(df)
    x = jnp.asarray(x)
    a = jnp.minimum(jnp.abs(x), _T_CLIP)
    theta = jnp.arctan2(a, math.sqrt(df))
    sin, cos = jnp.sin(theta), jnp.cos(theta)
    log_cos2 = -jnp.log1p(a * a / df)
    num_terms = df // 2 if df % 2 == 0 else (df - 1) // 2
    k = np.arange(num_terms)
    if df % 2 == 0:
        coefficients = np.cumprod(np.concatenate([[1.0], (2 * k[1:] - 1) / (2 * k[1:])]))
    else:
        coefficients = np.cumprod(np.concatenate([[1.0], (2 * k[1:]) / (2 * k[1:] + 1)]))
    coefficients_x = jnp.asarray(coefficients[:num_terms], x.dtype)
    powers = jnp.exp(jnp.asarray(k, x.dtype) * log_cos2[..., None])
    series = jnp.sum(coefficients_x * powers, -1)
    if df % 2 == 0:
        inside = sin * series
    else:
        inside = (2.0 / math.pi) * (theta + sin * cos * series)
    tail = 0.5 * jnp.clip(1.0 - inside, 0.0, 1.0)  # P(T > |x|)
    return jnp.where(x <= 0, tail, 1.0 - tail)


# A t argument beyond this is a certain side (its tail is below 1e-15 for any df >= 1); it keeps inf - inf out.
_T_BIG = 1e30


def correlated_t_statistics(differences: jax.Array | np.ndarray, rho: ArrayLike, rope: ArrayLike,
                             tolerance: ArrayLike = 0.0) -> tuple:
    """The correlated t-test's posterior in units of each row, and its three t arguments (no checks).

    For ``(..., n)`` differences ``d`` with ``u = max |d|`` per row (1 for a
    row of zeros) and ``x = d / u``: ``loc = mean(x)``, ``scale^2 = (1/n +
    rho/(1 - rho)) var(x, ddof=1)`` (two passes), so that ``mu / u ~ St(n -
    1, loc, scale)``.  Working in units of ``u`` makes everything scale-free:
    results near ``1e-30`` or ``1e300`` give the probabilities of results
    near 1 (no square underflows or overflows).  A row whose spread is within
    ``tolerance`` (its rounding, :func:`~ecjax._src.prob.inputs.flat_fold_rows`)
    gets ``scale = 0``, and ``loc = 0`` when it is also 0 up to rounding.

    Returns ``(loc, scale, u, t_left, t_right, degenerate)``: ``P(mu < -rope)
    = T(t_left)``, ``t_left = (-rope/u - loc) / scale``, ``P(mu > rope) =
    T(t_right)``, ``t_right = (loc - rope/u) / scale``, clipped to
    ``+-1e30``; where ``scale = 0`` (``degenerate``) the posterior is the
    point mass at ``loc`` and each argument is ``+-1e30``, the side it is
    on.  Float64 NumPy on the host, so that a spread far below the results'
    float32 resolution still counts; jnp in the default float type for
    traced input.
    """
    xp = jnp if any(v.is_tracer(x) for x in (differences, tolerance)) else np
    d = differences
    n = d.shape[-1]
    largest = xp.max(xp.abs(d), axis=-1)
    unit = xp.where(largest > 0, largest, 1.0)
    x = d / unit[..., None]
    loc = x.mean(-1)
    var = xp.sum(xp.square(x - loc[..., None]), -1) / (n - 1)
    flat, zero = flat_fold_rows(d, tolerance)
    scale = xp.where(flat, 0.0, xp.sqrt(var * (1.0 / n + rho / (1.0 - rho))))
    loc = xp.where(zero, 0.0, loc)
    r = rope / unit
    safe = xp.where(flat, 1.0, scale)
    t_left = xp.where(flat, xp.where(loc < -r, _T_BIG, -_T_BIG), (-r - loc) / safe)
    t_right = xp.where(flat, xp.where(loc > r, _T_BIG, -_T_BIG), (loc - r) / safe)
    return loc, scale, unit, xp.clip(t_left, -_T_BIG, _T_BIG), xp.clip(t_right, -_T_BIG, _T_BIG), flat


@partial(jax.jit, static_argnames=("df", "rope_positive"))
def t_probabilities(t_left: jax.Array, t_right: jax.Array, degenerate: jax.Array, *, df: int,
                    rope_positive: bool) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(P(mu < -rope), P(|mu| <= rope), P(mu > rope))`` from the t arguments of :func:`correlated_t_statistics`.

    ``T(t_left)``, ``1 - T(t_left) - T(t_right)`` and ``T(t_right)`` with
    :func:`student_t_cdf` (the lower-tail form keeps a small right tail
    accurate); a ``degenerate`` row (a point mass) gets exact 0s and 1s, its
    mass in the closed ROPE as in :func:`ranking.rope_probabilities`.  With
    ``rope = 0`` a continuous posterior puts exactly 0 in the ROPE, not the
    rounding of ``1 - p_left - p_right``.
    """
    p_left = jnp.where(degenerate, (t_left > 0).astype(t_left.dtype), student_t_cdf(t_left, df))
    p_right = jnp.where(degenerate, (t_right > 0).astype(t_right.dtype), student_t_cdf(t_right, df))
    p_rope = jnp.clip(1.0 - p_left - p_right, 0.0, 1.0)
    return p_left, jnp.where(degenerate | rope_positive, p_rope, 0.0), p_right


def student_t_draws(key: jax.Array, df: int, shape: tuple[int, ...], dtype: DTypeLike) -> jax.Array:
    """Standard Student t draws ``z / sqrt(w / df)``, ``w`` a sum of ``df`` squared normals (``df`` a static int).

    Exact for an integer ``df``; one normal sampler in a loop (``df + 1``
    draws of ``shape``: the first is ``z``), which compiles in a fraction of
    the time of ``jax.random.t`` (a Gamma rejection sampler) and keeps the
    memory at two ``shape`` arrays whatever ``df``.
    """
    def one_normal(i, carry):
        z, w = carry
        g = jax.random.normal(jax.random.fold_in(key, i), shape, dtype)
        first = i == 0
        return jnp.where(first, g, z), w + jnp.where(first, 0.0, g * g)

    z, w = jax.lax.fori_loop(0, df + 1, one_normal, (jnp.zeros(shape, dtype), jnp.zeros(shape, dtype)))
    return z * jnp.sqrt(df / w)


# ---------------------------------------------------------------------------------------------------------------------
# The correlated t-test


class CorrelatedTTest(NamedTuple):
    """Posterior of the mean difference on one data set (Bayesian correlated t-test).

    ``mu | d ~ St(df, loc, scale)``; every field but ``rope`` and ``draws`` has
    the batch shape of the input (the leading axes before the folds).

    Attributes:
      p_left: ``P(mu < -rope)``: the first system (``a``) better by more than ``rope``.
      p_rope: ``P(|mu| <= rope)`` (0 with ``rope = 0`` unless the posterior is a point mass).
      p_right: ``P(mu > rope)``: the second system (``b``) better.
      df: degrees of freedom, ``n - 1`` (an int).
      loc: posterior location, the mean difference (float64 NumPy for concrete input, at any scale).
      scale: posterior scale, ``sqrt((1/n + rho/(1 - rho)) s^2)`` (likewise).
      rho: the fold correlation used.
      rope: the ROPE half-width.
      draws: ``(num_draws, ...)`` posterior draws of ``mu`` in the default float type (``inf`` beyond its range,
        float32's 3.4e38), or ``None`` without a ``key``.
    """

    p_left: jax.Array
    p_rope: jax.Array
    p_right: jax.Array
    df: int
    loc: jax.Array
    scale: jax.Array
    rho: float
    rope: float
    draws: jax.Array | None = None

    @property
    def probabilities(self) -> jax.Array:
        """``(..., 3)``: ``(p_left, p_rope, p_right)``, baycomp's triple."""
        return jnp.stack([self.p_left, self.p_rope, self.p_right], -1)

    def summary(self, names: Sequence[str] = ("a", "b")) -> str:
        """One line per comparison: the posterior and the three probabilities."""
        a, b = names
        lines = []
        for index in np.ndindex(np.shape(self.loc)):
            at = "" if not index else f"[{', '.join(map(str, index))}] "
            p = [float(np.asarray(x)[index]) for x in (self.p_left, self.p_rope, self.p_right)]
            lines.append(
                f"{at}mean difference {b} - {a}: St(df={self.df}, "
                f"loc={float(np.asarray(self.loc)[index]):.4g}, scale={float(np.asarray(self.scale)[index]):.4g}); "
                f"P({a} better by > {self.rope:g}) = {p[0]:.3f}, P(|difference| <= {self.rope:g}) = {p[1]:.3f}, "
                f"P({b} better by > {self.rope:g}) = {p[2]:.3f}")
        return "\n".join(lines)


@partial(jax.jit, static_argnames=("df", "num_draws"))
def _t_draws(key, loc, scale, unit, *, df: int, num_draws: int):
    """``(num_draws, ...)`` draws of ``unit (loc + scale T)``, ``T`` a standard t with ``df`` degrees of freedom."""
    return (loc + scale * student_t_draws(key, df, (num_draws,) + loc.shape, loc.dtype)) * unit


def correlated_t_test(scores_a: ArrayLike, scores_b: ArrayLike | None = None, *, rope: float = 0.0, runs: int = 1,
                      test_fraction: float | None = None, key: jax.Array | None = None,
                      num_draws: int = DEFAULT_T_DRAWS) -> CorrelatedTTest:
    """Bayesian correlated t-test of two systems cross-validated on one data set.

    ``correlated_t_test(scores_a, scores_b)`` compares the per-fold results of
    two systems (``(..., n)`` each, same folds); ``correlated_t_test(d)``
    takes the differences ``d = scores_b - scores_a`` directly.  The
    posterior of the mean difference is (Corani & Benavoli 2015; baycomp's
    ``CorrelatedTTest``)::

        mu | d ~ St(n - 1, mean(d), (1/n + rho/(1 - rho)) var(d))

    and ``p_left = P(mu < -rope)``, ``p_rope = P(|mu| <= rope)``,
    ``p_right = P(mu > rope)`` are t CDFs (closed form, no sampling).
    ``rho`` is the correlation of the folds (:func:`fold_correlation`):
    ``runs / n`` (``1 / k`` for ``k``-fold CV), or ``test_fraction``.

    The statistics are computed in float64 in units of each row's largest
    ``|d|`` (:func:`correlated_t_statistics`): results near ``1e-30`` or
    ``1e300`` give the probabilities of the same results near 1.

    Zero variance (every fold gives the same difference, up to the rounding
    of the results: :func:`~ecjax._src.prob.inputs.flat_fold_rows`, 64 units in
    the last place of their float type) is a limit of the
    model: the posterior of ``sigma`` collapses to 0.  When the difference
    is 0 on every fold (identical systems) the result is the point mass at
    0: ``P(rope) = 1`` for any ``rope`` (baycomp: the same for ``rope > 0``,
    and ``(0.5, 0.5)`` for ``(p_left, p_right)`` at ``rope = 0``).  A
    constant non-zero difference would claim certainty from an improper
    posterior (baycomp does so): it raises :class:`InputError` (NaN under
    ``jax.jit``).

    Args:
      scores_a, scores_b: ``(..., n)`` per-fold results (leading axes are
        batch axes: several metrics, several pairs).  ``scores_b=None``:
        ``scores_a`` holds the differences.
      rope: half-width of the region of practical equivalence (>= 0), in
        the units of the results.
      runs: repetitions of the cross-validation (``n`` must be a multiple).
      test_fraction: ``n_test / n_total`` of each fold, in ``(0, 1)``;
        overrides ``runs / n``.
      key: a ``jax.random`` key to also draw ``num_draws`` posterior samples.
      num_draws: draws made with ``key``.

    Returns:
      :class:`CorrelatedTTest`.

    Example::

        >>> res = correlated_t_test([0.81, 0.79, 0.83, 0.80, 0.82], [0.84, 0.80, 0.85, 0.83, 0.83], rope=0.01)
        >>> round(float(res.p_right), 3)  # P(b better by more than 0.01)
        0.895
    """
    differences, name, tolerance = fold_differences(scores_a, scores_b, min_ndim=1)
    rope = ranking.check_rope(rope, optional=False)
    rho = fold_correlation(differences.shape[-1], runs=runs, test_fraction=test_fraction)
    if key is not None:
        key = v.as_key(key)
        num_draws = v.as_scalar(num_draws, "num_draws", integer=True, low=1)
        check_draws_fit(num_draws, 12 * math.prod(differences.shape[:-1]))  # the draws and two loop arrays
    else:
        num_draws = 0
    check_fold_spread(differences, name, tolerance=tolerance)
    df = differences.shape[-1] - 1
    loc, scale, unit, t_left, t_right, flat = correlated_t_statistics(differences, rho, rope, tolerance)
    f = jnp.result_type(float)
    p_left, p_rope, p_right = t_probabilities(_on_device(t_left), _on_device(t_right), jnp.asarray(flat), df=df,
                                              rope_positive=rope > 0)
    if v.is_tracer(differences):
        # A constant, non-zero difference makes the posterior improper (sigma -> 0 with the mean away from 0):
        # NaN under tracing, where the concrete call raises (the NaN contract of ecjax.inputs).
        ok = (scale > 0) | (loc == 0)
        p_left, p_rope, p_right, scale = v.nan_where_invalid((p_left, p_rope, p_right, scale), ok)
    draws = None
    if num_draws:
        draws = _t_draws(key, jnp.asarray(loc, f), jnp.asarray(scale, f), jnp.asarray(unit, f), df=df,
                         num_draws=num_draws)
    return CorrelatedTTest(p_left=p_left, p_rope=p_rope, p_right=p_right, df=df, loc=loc * unit,
                           scale=scale * unit, rho=rho, rope=rope, draws=draws)


# ---------------------------------------------------------------------------------------------------------------------
# The hierarchical model (several data sets)

# baycomp's ``HierarchicalTest.sample`` defaults: bounds of the uniform hyper-priors of the Gamma prior on nu - 1,
# and how far above the observed spreads the uniform priors on the standard deviations reach.
LOWER_ALPHA, UPPER_ALPHA = 1.0, 2.0
LOWER_BETA, UPPER_BETA = 0.01, 0.1
UPPER_SIGMA = 1000.0


class HyperpriorBounds(NamedTuple):
    """baycomp's bounds of the hyper-priors of the hierarchical models (its defaults).

    ``gamma_alpha ~ Uniform(lower_alpha, upper_alpha)`` and ``gamma_beta ~ Uniform(lower_beta, upper_beta)`` are
    the shape and rate of the Gamma prior on ``nu - 1``; ``upper_sigma`` is how far above the observed spreads the
    uniform priors on the standard deviations reach.  A pytree of floats, so a model can take it as an argument.
    """

    lower_alpha: float = LOWER_ALPHA
    upper_alpha: float = UPPER_ALPHA
    lower_beta: float = LOWER_BETA
    upper_beta: float = UPPER_BETA
    upper_sigma: float = UPPER_SIGMA


def check_hyperprior_bounds(bounds: object) -> HyperpriorBounds:
    """The bounds as floats, checked: each > 0, ``lower_alpha < upper_alpha``, ``lower_beta < upper_beta``."""
    given = v.check_instance(bounds, HyperpriorBounds, "bounds", "ecjax.prob.HyperpriorBounds")
    checked = HyperpriorBounds(*(v.as_scalar(x, f"bounds.{name}", low=0.0, high=math.inf, strict=True)
                                 for name, x in zip(HyperpriorBounds._fields, given)))
    for low, high in (("lower_alpha", "upper_alpha"), ("lower_beta", "upper_beta")):
        if not getattr(checked, low) < getattr(checked, high):
            raise v.InputError(f"`bounds`: `{low}` must be < `{high}`, got {getattr(checked, low)!r} and "
                               f"{getattr(checked, high)!r}")
    return checked


def _degrees_of_freedom(bounds: HyperpriorBounds, f):
    """``nu = 1 + Gamma(gamma_alpha, rate=gamma_beta)`` under baycomp's uniform hyper-priors (sites ``gamma_alpha``,
    ``gamma_beta``, ``nu_minus_one``)."""
    gamma_alpha = numpyro.sample("gamma_alpha", dist.Uniform(jnp.asarray(bounds.lower_alpha, f),
                                                             jnp.asarray(bounds.upper_alpha, f)))
    gamma_beta = numpyro.sample("gamma_beta", dist.Uniform(jnp.asarray(bounds.lower_beta, f),
                                                           jnp.asarray(bounds.upper_beta, f)))
    return 1.0 + numpyro.sample("nu_minus_one", dist.Gamma(gamma_alpha, gamma_beta))


def hierarchical_t_model(differences: ArrayLike, rho: float, delta_bound: float, std0_high: float, std_high: float,
                         bounds: HyperpriorBounds = HyperpriorBounds()) -> None:
    """NumPyro model of ``(q, n)`` per-fold differences on ``q`` data sets (baycomp's Stan model).

    Corani et al. (2017), as in baycomp 1.0.3's
    ``hierarchical-t-test.stan``::

        delta0        ~ Uniform(-delta_bound, delta_bound)     mean difference of the population
        std0          ~ Uniform(0, std0_high)                  spread of the data sets' means
        gamma_alpha   ~ Uniform(lower_alpha, upper_alpha)
        gamma_beta    ~ Uniform(lower_beta, upper_beta)
        nu - 1        ~ Gamma(gamma_alpha, rate=gamma_beta)
        delta_i       ~ St(nu, delta0, std0)                   mean difference on data set i
        sigma_i       ~ Uniform(0, std_high)
        x_i | delta_i, sigma_i ~ N(delta_i 1, sigma_i^2 C(rho))

    ``C(rho)`` is the ``n x n`` correlation matrix with ``rho`` off the
    diagonal (Nadeau-Bengio).  Its inverse and determinant are known in
    closed form, ``C^-1 = (I - rho / (1 + (n - 1) rho) 1 1^T) / (1 - rho)``
    and ``det C = (1 + (n - 1) rho) (1 - rho)^(n - 1)``, so the likelihood
    is a sum over the folds (no matrix is built).  Sites: ``delta0``,
    ``std0``, ``gamma_alpha``, ``gamma_beta``, ``nu_minus_one``, ``delta``
    ``(q,)``, ``sigma`` ``(q,)``, and the factor ``likelihood``.
    """
    x = jnp.asarray(differences)
    q, n = x.shape
    f = x.dtype
    delta0 = numpyro.sample("delta0", dist.Uniform(jnp.asarray(-delta_bound, f), jnp.asarray(delta_bound, f)))
    std0 = numpyro.sample("std0", dist.Uniform(jnp.zeros((), f), jnp.asarray(std0_high, f)))
    nu = _degrees_of_freedom(bounds, f)
    with numpyro.plate("datasets", q):
        delta = numpyro.sample("delta", dist.StudentT(nu, delta0, std0))
        sigma = numpyro.sample("sigma", dist.Uniform(jnp.zeros((), f), jnp.asarray(std_high, f)))
    numpyro.factor("likelihood", _correlated_normal_log_likelihood(x, delta, sigma, rho))


def _correlated_normal_log_likelihood(x, delta, sigma, rho):
    """``sum_i log N(x_i; delta_i 1, sigma_i^2 C(rho))`` with the closed-form inverse and determinant of ``C``."""
    n = x.shape[-1]
    r = x - delta[:, None]
    shrink = rho / (1.0 + (n - 1) * rho)
    quadratic = (jnp.sum(r * r, -1) - shrink * jnp.square(r.sum(-1))) / (1.0 - rho)
    log_det_c = jnp.log1p((n - 1) * rho) + (n - 1) * jnp.log1p(-rho)
    per_set = -0.5 * (n * math.log(2 * math.pi) + log_det_c + 2 * n * jnp.log(sigma) + quadratic / sigma**2)
    return per_set.sum()


class HierarchicalData(NamedTuple):
    """The data of :func:`hierarchical_t_model`, prepared as baycomp prepares its Stan data.

    ``differences`` and ``rope`` are divided by ``unit``, the mean over the data
    sets of the within-set standard deviation (``ddof = 0``), so that the
    priors' bounds mean the same on any scale; the other fields are the
    model's arguments in those units.
    """

    differences: jax.Array
    rope: float
    unit: float
    rho: float
    delta_bound: float
    std0_high: float
    std_high: float


def hierarchical_data(differences: ArrayLike, *, rope: float, rho: float,
                      upper_sigma: float = UPPER_SIGMA) -> HierarchicalData:
    """Scale ``(q, n)`` differences and set the priors' bounds (baycomp's ``scaled_data`` and ``prepare_stan_data``).

    ``unit = mean_i std(x_i)``; in those units ``delta_bound = max |x|``,
    ``std_high = upper_sigma * mean_i std(x_i)``, ``std0_high = upper_sigma *
    std_i(mean(x_i))`` (the spread of the data sets' means; ``std_high``'s
    base instead when there is one data set, or when every data set has the
    same mean, where baycomp's bound would be 0 and its prior empty).
    Concrete input only (called by :func:`hierarchical_test`, which has checked it).
    """
    d = np.asarray(differences, np.float64)
    largest = float(np.max(np.abs(d)))
    unit = largest * float(np.mean(np.std(d / largest, axis=1)))  # std of d / max|d|: no square under/overflows
    x = (d / largest) / (unit / largest)
    std_within = float(np.mean(np.std(x, axis=1)))
    std_among = float(np.std(np.mean(x, axis=1))) if x.shape[0] > 1 else 0.0
    if not std_among > 0:
        std_among = std_within
    return HierarchicalData(differences=jnp.asarray(x, jnp.result_type(float)), rope=rope / unit, unit=unit, rho=rho,
                            delta_bound=float(np.max(np.abs(x))), std0_high=std_among * upper_sigma,
                            std_high=std_within * upper_sigma)


def next_dataset_probabilities(delta0: ArrayLike, std0: ArrayLike, nu: ArrayLike, rope: float) -> np.ndarray:
    """``(S, 3)`` float64: per draw, P(a new data set's mean difference is left of / in / right of the ROPE).

    ``delta_new ~ St(nu, delta0, std0)`` in each draw; t CDFs with a
    non-integer ``nu``, computed with scipy in float64 as baycomp does
    (post-processing of the NUTS draws on the host, not a kernel).
    """
    from scipy import stats

    delta0, std0, nu = (np.asarray(x, np.float64) for x in (delta0, std0, nu))
    p_left = stats.t.cdf(-rope, nu, delta0, std0)
    p_right = stats.t.sf(rope, nu, delta0, std0)
    p_rope = np.clip(1.0 - p_left - p_right, 0.0, 1.0) if rope > 0 else np.zeros_like(p_left)
    return np.stack([p_left, p_rope, p_right], -1)


# Non-centred, the t models still meet the funnel of few data sets: see hierarchical_test.
T_MODEL_TARGET_ACCEPT_PROB = 0.99


def _baycomp_shares(per_draw, rope: float):
    """baycomp's summary of ``(S, ..., 3)`` next-data-set probabilities: ``(shares, errors)``, each ``(..., 3)``.

    ``shares`` is the fraction of the draws in which each region (left, rope,
    right) is the most probable, ties to the first region (``np.argmax``, as
    baycomp); ``errors`` their batch-means standard errors.  With ``rope = 0``
    the rope region never wins and the two others are renormalized (baycomp's
    two-way answer).
    """
    won = np.eye(3)[np.argmax(per_draw, axis=-1)]
    shares = won.mean(0)
    errors = np.array(ranking.batch_means_error(won), np.float64)
    if rope == 0:
        total = shares[..., 0] + shares[..., 2]
        shares = np.stack([shares[..., 0] / total, np.zeros_like(total), shares[..., 2] / total], -1)
        errors = errors / total[..., None]
        errors[..., 1] = 0.0
    return shares, errors


@dataclass(frozen=True)
class HierarchicalTTest(NUTSDiagnostics):
    """Posterior of the hierarchical model (several data sets), in the units of the results.

    Attributes:
      p_left, p_rope, p_right: baycomp's probabilities: the fraction of the
        posterior draws in which the next data set's mean difference is most
        probably left of the ROPE / in it / right of it (the point of the
        simplex of :attr:`per_draw` falls in that region; Benavoli et al. 2017).
        With ``rope = 0`` these are ``P(left) / (P(left) + P(right))`` and
        ``P(right) / (...)`` as in baycomp, ``p_rope = 0``.
      predictive: ``(3,)`` the posterior predictive probabilities that the
        next data set's mean difference ``delta_{q+1} ~ St(nu, delta0, std0)``
        is left / in / right of the ROPE (the mean of :attr:`per_draw`).
      per_draw: ``(S, 3)`` those three probabilities in each draw.
      delta0: ``(S,)`` draws of the population mean difference.
      std0: ``(S,)`` draws of the spread of the data sets' mean differences.
      nu: ``(S,)`` draws of the degrees of freedom of that spread.
      delta: ``(S, q)`` draws of each data set's mean difference.
      sigma: ``(S, q)`` draws of each data set's within-set standard deviation.
      rope: as given.
      rho: as given or used.
      errors: batch-means Monte Carlo standard errors of ``p_left``, ``p_rope``,
        ``p_right`` (``"baycomp"``) and of :attr:`predictive`.
      max_rhat, min_ess_bulk, num_divergences: NUTS diagnostics (ArviZ) over
        ``delta0``, ``std0``, ``nu_minus_one``, ``delta`` and ``sigma``.
      inference_data: the ``arviz.InferenceData`` of the run.
    """

    p_left: float
    p_rope: float
    p_right: float
    predictive: np.ndarray
    per_draw: np.ndarray
    delta0: np.ndarray
    std0: np.ndarray
    nu: np.ndarray
    delta: np.ndarray
    sigma: np.ndarray
    rope: float
    rho: float
    errors: dict = field(default_factory=dict)

    MODEL = "hierarchical (Benavoli et al. 2017)"

    @property
    def probabilities(self) -> np.ndarray:
        """``(3,)`` baycomp's ``(p_left, p_rope, p_right)``."""
        return np.array([self.p_left, self.p_rope, self.p_right])

    def to_dict(self) -> dict:
        """The result part of ``ecjax compare-folds --json``'s record for two systems on several data sets."""
        return {"model": self.MODEL, "p_left": self.p_left, "p_rope": self.p_rope, "p_right": self.p_right,
                "p_are": "baycomp's shares of the posterior draws in which a new data set's mean difference is "
                         "most probably left of / in / right of the ROPE",
                "predictive": np.asarray(self.predictive).tolist()}

    def to_frame(self) -> pd.DataFrame:
        """One row per region of the ROPE (``left``, ``rope``, ``right``): baycomp's share of the draws
        (``p``), the posterior predictive probability (``predictive``) and their Monte Carlo errors."""
        pd = result_formats.pandas()
        columns = {"p": self.probabilities, "predictive": np.asarray(self.predictive, np.float64)}
        columns.update({f"{column}_error": np.asarray(self.errors[name], np.float64)
                        for column, name in (("p", "baycomp"), ("predictive", "predictive")) if name in self.errors})
        return pd.DataFrame(columns, index=pd.Index(["left", "rope", "right"], name="region"))

    def posterior_variables(self) -> tuple[dict, dict]:
        """The population mean difference ``delta0``, its spread ``std0``, ``nu`` and each data set's ``delta``
        and ``sigma``, in the units of the results."""
        datasets = list(range(self.delta.shape[1]))
        return ({"delta0": (self.delta0, []), "std0": (self.std0, []), "nu": (self.nu, []),
                 "delta": (self.delta, ["dataset"]), "sigma": (self.sigma, ["dataset"])}, {"dataset": datasets})

    def summary(self, names: Sequence[str] = ("a", "b")) -> str:
        """Diagnostics, the population mean difference, baycomp's triple and the predictive one (± MC errors)."""
        a, b = names
        e = self.errors.get("baycomp", [None] * 3)
        ep = self.errors.get("predictive", [None] * 3)
        lo, hi = np.percentile(self.delta0, [5, 95])
        r = f"{self.rope:g}"
        return "\n".join([
            f"hierarchical model, {self.delta.shape[1]} data sets, {self.delta0.shape[0]} NUTS draws "
            f"(max R-hat {self.max_rhat:.3f}, min bulk ESS {self.min_ess_bulk:.0f}, {self.num_divergences} "
            "divergences)",
            f"population mean difference {b} - {a}: mean {np.mean(self.delta0):.4g}, 90% central interval "
            f"[{lo:.4g}, {hi:.4g}]",
            f"baycomp's shares of the posterior draws in which a new data set's mean difference is most probably "
            f"left of the ROPE ({a} better by > {r}): {ranking.with_error(self.p_left, e[0], 3)}, "
            f"in it: {ranking.with_error(self.p_rope, e[1], 3)}, "
            f"right of it ({b} better by > {r}): {ranking.with_error(self.p_right, e[2], 3)}",
            f"next data set: P(left) = {ranking.with_error(self.predictive[0], ep[0], 3)}, "
            f"P(rope) = {ranking.with_error(self.predictive[1], ep[1], 3)}, "
            f"P(right) = {ranking.with_error(self.predictive[2], ep[2], 3)}  (posterior predictive)",
        ])

    def __repr__(self):
        return f"HierarchicalTTest(p_left={self.p_left:.3f}, p_rope={self.p_rope:.3f}, p_right={self.p_right:.3f})"


def hierarchical_test(scores_a: ArrayLike, scores_b: ArrayLike | None = None, *, rope: float = 0.0, runs: int = 1,
                      test_fraction: float | None = None, key: jax.Array | None = None,
                      nuts: NUTSSettings = NUTSSettings(),
                      bounds: HyperpriorBounds = HyperpriorBounds()) -> HierarchicalTTest:
    """Bayesian hierarchical comparison of two systems cross-validated on ``q`` data sets.

    ``hierarchical_test(scores_a, scores_b)`` takes ``(q, n)`` per-fold
    results of each system (row = data set, the same ``n`` folds on every
    set); ``hierarchical_test(d)`` takes the differences ``d = scores_b -
    scores_a``.  The model is :func:`hierarchical_t_model` (Corani et al.
    2017; Benavoli et al. 2017; baycomp's ``HierarchicalTest``), with the data
    scaled and the priors bounded as baycomp does (:func:`hierarchical_data`),
    fitted with NUTS.  NUTS runs on the same model written non-centred
    (``delta_i = delta0 + std0 z_i``, ``z_i ~ St(nu, 0, 1)``; NumPyro's
    ``LocScaleReparam``), which has the same posterior: with few data sets
    the centred form has a funnel in ``std0`` that NUTS crosses badly.  On
    the 5 data sets of ``tests/test_prob_from_results.py``: centred, 14
    divergences in 2000 draws and a bulk ESS of 33 for ``std0``;
    non-centred with ``target_accept_prob = 0.95``, 15 to 83 divergences in
    20000 draws, and the runs with most strayed (``P(delta0 < 0)`` 0.032
    against 0.021 by quadrature of the model); at 0.99, 1 to 3, and the
    predictive probabilities within Monte Carlo error of the quadrature.
    baycomp's own Stan runs (centred, Stan's default 0.8) put the next data
    set's ``P(left)`` at 0.092-0.096 where the quadrature gives 0.088.  The answer concerns a new data set: its mean
    difference is ``St(nu, delta0, std0)``, and in each posterior draw the
    three probabilities of it being left of / in / right of the ROPE are t
    CDFs (:attr:`HierarchicalTTest.per_draw`).  ``p_left, p_rope, p_right``
    are baycomp's summary of those draws (the share of draws in which each
    region is the most probable); :attr:`HierarchicalTTest.predictive` is
    their mean, the posterior predictive probabilities.

    A data set whose differences are the same on every fold (up to the
    rounding of the results, :func:`~ecjax._src.prob.inputs.flat_fold_rows`) has
    no within-set spread, and the model's likelihood grows without bound as
    its ``sigma`` goes to 0 (the prior allows 0): this raises
    :class:`InputError` (baycomp instead replaces that row by random numbers
    within the ROPE).  So does a single data set (``q = 1``): the model
    learns the spread of the data sets' means from several; for one data
    set use :func:`correlated_t_test`.  The data are scaled by ``unit``
    (:func:`hierarchical_data`), so results near ``1e-30`` or ``1e300`` give
    the answer of results near 1.

    Args:
      scores_a, scores_b: ``(q, n)`` per-fold results, ``q >= 2`` (``scores_b=None``: the differences).
      rope: half-width of the ROPE (>= 0), in the units of the results.
      runs, test_fraction: the fold correlation ``rho`` (:func:`fold_correlation`).
      key: ``jax.random`` key (required).
      nuts: :class:`~ecjax.prob.NUTSSettings` (chains run one after
        another).  Its ``target_accept_prob`` defaults here to 0.99 (see
        above); baycomp leaves Stan's 0.8.  Check
        :attr:`HierarchicalTTest.num_divergences`: more than a few per
        thousand draws mean the probabilities may be biased.
      bounds: baycomp's hyper-prior bounds (:class:`HyperpriorBounds`, its defaults).

    Returns:
      :class:`HierarchicalTTest`.
    """
    differences, name, tolerance = fold_differences(scores_a, scores_b, min_ndim=1)
    v.check_shape(differences, name, "(q, n)", why=": one row of n fold results per data set")
    check_several_datasets(differences.shape[0], name, "correlated_t_test")
    rope = ranking.check_rope(rope, optional=False)
    rho = fold_correlation(differences.shape[-1], runs=runs, test_fraction=test_fraction)
    key = v.as_key(key)
    nuts = check_nuts_settings(nuts)
    bounds = check_hyperprior_bounds(bounds)
    d = np.asarray(differences)
    check_dataset_spread(d, name, tolerance)

    data = hierarchical_data(d, rope=rope, rho=rho, upper_sigma=bounds.upper_sigma)
    non_centred = numpyro.handlers.reparam(hierarchical_t_model,
                                           config={"delta": LocScaleReparam(centered=0, shape_params=("df",))})
    fit = fit_nuts(key, non_centred, (data.differences, data.rho, data.delta_bound, data.std0_high, data.std_high,
                                      bounds), nuts,
                   var_names=["delta0", "std0", "nu_minus_one", "delta", "sigma"],
                   target_accept_prob=T_MODEL_TARGET_ACCEPT_PROB)
    samples = fit.samples

    nu = 1.0 + np.asarray(samples["nu_minus_one"], np.float64)
    per_draw = next_dataset_probabilities(samples["delta0"], samples["std0"], nu, data.rope)
    shares, share_errors = _baycomp_shares(per_draw, rope)
    unit = data.unit
    return HierarchicalTTest(
        p_left=float(shares[0]), p_rope=float(shares[1]), p_right=float(shares[2]),
        predictive=per_draw.mean(0), per_draw=per_draw,
        delta0=np.asarray(samples["delta0"]) * unit, std0=np.asarray(samples["std0"]) * unit, nu=np.asarray(nu),
        delta=np.asarray(samples["delta"]) * unit, sigma=np.asarray(samples["sigma"]) * unit, rope=rope, rho=rho,
        errors={"baycomp": np.asarray(share_errors), "predictive": ranking.batch_means_error(per_draw)},
        max_rhat=fit.max_rhat, min_ess_bulk=fit.min_ess_bulk, num_divergences=fit.num_divergences,
        inference_data=fit.inference_data,
    )


# ---------------------------------------------------------------------------------------------------------------------
# M systems on one data set: a ranking


class JointTFactor(NamedTuple):
    """The joint posterior of ``M`` mean results as a low-rank factor, in units (:func:`joint_t_factor`).

    ``mu = mean + rel_unit * (k L z)[:M] + common_unit * (k L z)[M]`` with
    ``z ~ N(0, I_r)``, ``k = sqrt(c (n - 1) / w)``, ``w ~ chi2(n - 1)``.
    """

    mean: np.ndarray
    factor: np.ndarray
    rel_unit: float
    common_unit: float
    num_folds: int


def joint_t_factor(results: np.ndarray) -> JointTFactor:
    """``L`` with ``L L^T`` the sample covariance of ``[C_rel / u_rel; c / u_c]`` (host, float64).

    For ``(M, n)`` fold results ``X`` with centred rows ``C = X - mean``, ``c``
    the mean of ``C`` over the systems (each fold's level) and ``C_rel = C -
    1 c`` (each system relative to it), ``u_rel = max |C_rel|`` and ``u_c =
    max |c|`` (1 where 0).  ``B = [C_rel / u_rel; c / u_c]`` is ``(M + 1,
    n)``; its thin SVD ``B = U S V^T`` gives ``L = U S / sqrt(n - 1)``, ``(M
    + 1, r)`` with ``r = min(M + 1, n)``.  For ``z ~ N(0, I_n)``, ``B z /
    sqrt(n - 1)`` and ``L z_r`` (``z_r ~ N(0, I_r)``) have the same normal
    distribution, so a draw needs ``r`` normals, not ``n``: memory and time
    per draw do not grow with the folds.  The two parts keep the differences
    between systems in units of their own size (float32 draws resolve them
    even when the results are near 1), and any scale (``1e-30``, ``1e300``).
    """
    x = np.asarray(results, np.float64)
    n = x.shape[-1]
    mean = x.mean(-1)
    largest = np.max(np.abs(x - mean[:, None]))
    largest = largest if largest > 0 else 1.0
    centred = (x - mean[:, None]) / largest  # in units of the largest deviation: no square under/overflows
    common = centred.mean(0)
    relative = centred - common
    rel_unit, common_unit = (float(np.max(np.abs(y))) or 1.0 for y in (relative, common))
    b = np.concatenate([relative / rel_unit, common[None] / common_unit])
    u, sv, _ = np.linalg.svd(b, full_matrices=False)
    return JointTFactor(mean, u * sv / math.sqrt(n - 1), rel_unit * largest, common_unit * largest, n)


@partial(jax.jit, static_argnames=("num_draws",))
def _unit_draws(key, factor, c, relative_mean, systems, num_folds, *, num_draws: int):
    """``(unit, relative)``: ``(num_draws, M' + 1)`` draws of ``k L z`` (:class:`JointTFactor`, ``r`` normals and
    one chi-square each), and ``(num_draws, M)`` relative draws ``relative_mean + k (L z)[:M']`` of each system
    (``systems`` indexes the ``M'`` distinct rows)."""
    key_z, key_w = random_bits.split_keys(key)
    z = jax.random.normal(key_z, (num_draws, factor.shape[1]), factor.dtype)
    w = 2.0 * jax.random.gamma(key_w, 0.5 * (num_folds - 1), (num_draws,), factor.dtype)  # chi2(n - 1)
    unit = matmul(z, factor.T) * jnp.sqrt(c * (num_folds - 1) / w)[:, None]
    return unit, (relative_mean + unit[:, :-1])[:, systems]


def mean_score_draws(key: jax.Array, scores: ArrayLike, rho: float, *, num_draws: int,
                     progress: ProgressOption = False, block_size: int | None = None) -> tuple[np.ndarray, jax.Array]:
    """``(draws, relative)``: ``(num_draws, M)`` draws of the ``M`` mean scores from their joint posterior.

    ``mu | X ~ St_M(n - 1, mean(X), (1/n + rho/(1 - rho)) S)``, the
    multivariate t with ``S`` the ``(M, M)`` sample covariance of the
    systems' fold results.  It is the posterior of the correlated normal
    model of Corani & Benavoli (2015) for a vector of ``M`` results per fold,
    with the prior ``p(mu, Sigma) ∝ |Sigma|^-M``, which is their ``1 /
    sigma^2`` at ``M = 1``: for every pair ``(a, b)`` the marginal of
    ``mu_b - mu_a`` is exactly the correlated t-test of that pair
    (:func:`correlated_t_test`).  The posterior depends on the folds only
    through ``mean(X)`` and ``S``: a draw is ``mean + sqrt(c (n - 1) / w) L
    z`` with ``L L^T = S`` of rank ``r <= min(M + 1, n)``
    (:func:`joint_t_factor`, exact even when ``S`` is singular: identical
    systems, ``M >= n``), ``z ~ N(0, I_r)`` and ``w ~ chi2(n - 1)``, so
    memory is ``O(num_draws M)`` whatever the number of folds.

    ``draws`` is float64 on the host (any scale); ``relative`` ``(num_draws,
    M)`` holds the same draws minus a common part (each fold's level), in
    units of the systems' differences (float32; all a ranking needs).  Identical
    systems get identical draws (exact ties).  Concrete input, no checks.

    The draws are made in blocks (:func:`~ecjax._src.prob.draw_plan.plan_draws`: at
    most ``2^22`` numbers a block; or blocks of ``block_size`` draws,
    whatever ``num_draws``: one compiled shape for runs of any length), block
    ``b`` from ``fold_in(key, b)``, by :func:`~ecjax._src.draw_runner.run_blocks`,
    which reports to ``progress`` (the ``relative`` draws so far to
    ``draws_done``).
    """
    x = np.asarray(scores, np.float64)
    first: dict[bytes, int] = {}  # each distinct row of results, by its bytes (np.unique(axis=0) is ~1 s at 10^5 folds)
    inverse = np.array([first.setdefault(row.tobytes(), len(first)) for row in x])
    joint = joint_t_factor(x[[int(np.argmax(inverse == i)) for i in range(len(first))]])  # the first of each
    f = jnp.result_type(float)
    c = 1.0 / joint.num_folds + rho / (1.0 - rho)
    # Each system's mean minus the systems' average, in the same units: the ranking's location part.
    relative_mean = (joint.mean - joint.mean.mean()) / joint.rel_unit
    factor, systems = jnp.asarray(joint.factor, f), jnp.asarray(inverse)
    plan = (plan_draws(num_draws, factor.shape[0] + factor.shape[1] + len(inverse)) if block_size is None else
            plan_blocks(num_draws, block_size))

    def block(b):
        return Block(draws=_unit_draws(random_bits.fold_in(key, b), factor, jnp.asarray(c, f),
                                       jnp.asarray(relative_mean, f), systems, jnp.asarray(joint.num_folds, f),
                                       num_draws=plan.block))

    unit, relative = run_blocks(block, plan, progress=progress, shown=lambda drawn: drawn[1]).draws
    host = np.asarray(unit, np.float64)
    draws = joint.mean[inverse] + host[:, -1:] * joint.common_unit + host[:, :-1][:, inverse] * joint.rel_unit
    return draws, jnp.asarray(relative)


def _pairwise_closed_form(results: np.ndarray, rho: float, rope: float, rtol: float) -> np.ndarray:
    """``(M, M, 3)``: ``[a, b]`` the correlated t-test ``(p_left, p_rope, p_right)`` of ``scores_b - scores_a``.

    The statistics of each pair on the host in float64, one pair at a time
    (memory ``O(n)``), within the rounding ``rtol`` of the pair's results
    (:func:`correlated_t_statistics`); ``[b, a]`` mirrors ``[a, b]``; the
    t CDFs of all pairs in one call.
    """
    m = results.shape[0]
    t_left, t_right = np.full((m, m), -_T_BIG), np.full((m, m), -_T_BIG)
    flat = np.eye(m, dtype=bool)  # a system against itself: the point mass at 0
    for a in range(m):
        for b in range(a + 1, m):
            tolerance = rtol * max(np.max(np.abs(results[a])), np.max(np.abs(results[b])))
            _, _, _, left, right, degenerate = correlated_t_statistics(results[b] - results[a], rho, rope, tolerance)
            t_left[a, b], t_right[a, b], flat[a, b] = left, right, degenerate
            t_left[b, a], t_right[b, a], flat[b, a] = right, left, degenerate
    f = jnp.result_type(float)
    probabilities = t_probabilities(jnp.asarray(t_left, f), jnp.asarray(t_right, f), jnp.asarray(flat),
                                    df=results.shape[-1] - 1, rope_positive=rope > 0)
    return np.stack([np.asarray(p, np.float64) for p in probabilities], -1)


def independent_draws_error(p: ArrayLike, num_draws: int) -> np.ndarray:
    """Monte Carlo standard error ``sqrt(p (1 - p) / S)`` of a probability estimated from ``S`` independent draws.

    :func:`compare_results` samples its posterior exactly, draw by draw, so
    the indicator of an event is a sequence of independent Bernoulli trials
    and this is its standard error, estimated with the ``p`` found.  Batch
    means (:func:`ranking.batch_means_error`, for correlated MCMC draws)
    would estimate it from 20 batch averages, an estimate itself off by
    about ±16 % (a chi with 19 degrees of freedom): its z-scores spread with
    an sd of about 1.06 instead of 1, and more where few draws fall on one
    side.
    """
    p = np.asarray(p, np.float64)
    return np.sqrt(p * (1.0 - p) / num_draws)


def _hdi_at_any_scale(draws: np.ndarray, prob: float) -> np.ndarray:
    """``(M, 2)`` HDIs of ``(S, M)`` float64 draws: :func:`ranking.hdi` of each column standardized in float64
    (an increasing affine map, which maps the HDI to the HDI), mapped back, so no draw overflows float32."""
    centre = draws.mean(0)
    spread = np.max(np.abs(draws - centre), axis=0)
    spread = np.where(spread > 0, spread, 1.0)
    unit_hdi = np.asarray(ranking.hdi((draws - centre) / spread, prob), np.float64)
    return centre[:, None] + spread[:, None] * unit_hdi


def _ranking_lines(systems, centres, result, header: str = "mean") -> list:
    """Aligned rows: system, ``centres`` (a posterior location), ``result.hdi`` and ``result.p_best`` ± its error."""
    rows = [["system", header, f"{int(round(result.hdi_prob * 100))}% HDI", "P(best)"]]
    for m, name in enumerate(systems):
        lo, hi = result.hdi[m]
        rows.append([name, f"{centres[m]:.4f}", f"[{lo:.4f}, {hi:.4f}]",
                     ranking.with_error(float(result.p_best[m]), float(result.errors["p_best"][m]), 3)])
    return aligned(rows)


@dataclass(frozen=True)
class ResultsComparison(ranking.BestMeanRecommended):
    """``M`` systems compared on their per-fold results of one data set (higher results are better).

    Attributes:
      systems: names.
      mean_scores: ``(M,)`` the mean result of each system (the posterior location).
      draws: ``(S, M)`` float64 joint posterior draws of the mean results (:func:`mean_score_draws`).
      p_best: ``(M,)`` P(system has the highest mean result), from the draws.
      rank_probabilities: ``(M, M)`` ``[m, r] = P(rank of m == r)``, rank 0 best.
      pairwise: ``(M, M, 3)`` ``[a, b] = (P(a better by > rope), P(|difference| <= rope),
        P(b better by > rope))`` in closed form: ``[a, b]`` is the correlated
        t-test ``(p_left, p_rope, p_right)`` of ``scores_a = scores[a]``,
        ``scores_b = scores[b]``.
      rope: as given.
      rho: as given or used.
      hdi_prob, hdi: ``(M, 2)`` highest-density intervals of the mean results.
      errors: Monte Carlo standard errors of ``p_best``, ``sqrt(p (1 - p) / S)`` (the draws are independent,
        :func:`independent_draws_error`).
      precision: how the draws were made: ``None`` for a fixed ``num_draws``, else the target, the largest error
        reached, whether it was met and the cap (:func:`~ecjax._src.prob.adaptive_draws.precision_record`).
    """

    systems: tuple
    mean_scores: np.ndarray
    draws: np.ndarray
    p_best: np.ndarray
    rank_probabilities: np.ndarray
    pairwise: np.ndarray
    rope: float
    rho: float
    hdi_prob: float
    hdi: np.ndarray
    errors: dict = field(default_factory=dict)
    precision: dict | None = None

    CENTRE = "mean_scores"
    ARVIZ_NAME = "mean_result"
    MODEL = "correlated t-test (Corani & Benavoli 2015)"

    def to_dict(self) -> dict:
        """The result part of ``ecjax compare-folds --json``'s record for one data set."""
        return {**self.model_record("mean"), "num_draws": self.num_draws,
                "draws": describe_draws(self.precision, "every P(best)"),
                "precision": self.precision}

    def pair_tables(self) -> dict[str, np.ndarray]:
        """The three closed-form ROPE probabilities of every pair (:attr:`pairwise`, :func:`ranking.rope_tables`)."""
        return ranking.rope_tables(self.pairwise)

    def summary(self) -> str:
        """Mean result, HDI and P(best) per system, then ``(P(left), P(rope), P(right))`` for every pair."""
        lines = _ranking_lines(self.systems, self.mean_scores, self)
        lines.append(f"± Monte Carlo standard error ({self.num_draws} independent draws); "
                     f"fold correlation rho = {self.rho:.4g}")
        if self.precision is not None:
            lines.append(f"drawn {describe_draws(self.precision, 'every P(best)')}")
        lines.append(f"pairs (P(left), P(rope), P(right)) with rope {self.rope:g}, closed form (correlated t-test):")
        for a in range(len(self.systems)):
            for b in range(a + 1, len(self.systems)):
                pl, pr_, pg = self.pairwise[a, b]
                lines.append(f"  {self.systems[a]} vs {self.systems[b]}: ({pl:.3f}, {pr_:.3f}, {pg:.3f})  "
                             f"[{self.systems[a]} better, equivalent, {self.systems[b]} better]")
        return "\n".join(lines)

    def __repr__(self):
        return f"ResultsComparison(systems={self.systems}, best={self.best!r})\n{self.summary()}"


# Memory of compare_results per draw and system (the system count plus one, the folds' level): float32 normals, unit
# draws, relative draws, ranks and indicators on the device, float64 unit draws and draws on the host, the HDI's sort.
_BYTES_PER_DRAW_AND_SYSTEM = 64


def compare_results(scores: ArrayLike, *, rope: float = 0.0, runs: int = 1, test_fraction: float | None = None,
                    key: jax.Array | None = None, num_draws: int | None = None, systems: Sequence[str] | None = None,
                    hdi_prob: float = 0.9, mc_error: float | None = None,
                    progress: ProgressOption = False) -> ResultsComparison:
    """Rank ``M`` systems from their ``(M, n)`` per-fold results on one data set (higher is better).

    The joint posterior of the mean results is the multivariate t of
    :func:`mean_score_draws`, whose pairwise marginals are the correlated
    t-tests of the pairs (Corani & Benavoli 2015).  From its draws:
    P(best) and rank probabilities (:func:`ranking.ranks`,
    :func:`ranking.rank_probabilities`; exact ties, from identical systems,
    are split at random).  The pairwise ``(P(left), P(rope), P(right))``
    are in closed form.  For a metric where lower is better (an error rate,
    an expected cost) pass its negation.

    Args:
      scores: ``(M, n)`` results of ``M`` systems on the same ``n`` folds.
      rope, runs, test_fraction: as in :func:`correlated_t_test`.
      key: ``jax.random`` key (required).
      num_draws: posterior draws (>= what ``hdi_prob`` needs): exactly this
        many, or with ``mc_error`` the most.  Default (``None``, no
        ``mc_error``): adaptive, as :func:`~ecjax.prob.compare` (below).
      systems: names (default ``"system 0"``, ...).
      hdi_prob: mass of the highest-density intervals.
      mc_error: draw in rounds (:func:`~ecjax._src.prob.adaptive_draws.draw_until`,
        from 1000 draws, or what ``hdi_prob`` needs) until every P(best) has
        a Monte Carlo error ``sqrt(p (1 - p) / S)`` at most this, in ``(0,
        0.5)``, at most ``num_draws`` draws (default 20 000).  With neither
        ``mc_error`` nor ``num_draws`` the target is
        :data:`~ecjax._src.prob.adaptive_draws.DEFAULT_MC_ERROR` (0.005): a clear
        winner costs the first round, a close call up to 20 000 draws.
      progress: as in :class:`~ecjax.prob.MonteCarloSettings` (the draws
        of :func:`mean_score_draws`; of each round when adaptive).

    Returns:
      :class:`ResultsComparison` (its :attr:`~ResultsComparison.precision`
      says how the draws were made; ``num_draws`` how many).  Two systems
      whose difference is the same non-zero number on every fold raise
      :class:`InputError`, as in :func:`correlated_t_test`.
    """
    results = v.check_shape(as_fold_results(scores, "scores", min_ndim=2), "scores", "(M, n)",
                            why=": one row of n fold results per system (for (M, q, n) results on several data sets "
                                "use hierarchical_compare_results)")
    m, n = results.shape
    rope = ranking.check_rope(rope, optional=False)
    rho = fold_correlation(n, runs=runs, test_fraction=test_fraction)
    key = v.as_key(key)
    hdi_prob = ranking.as_hdi_prob(hdi_prob)
    first, target, cap = _results_draw_counts(num_draws, mc_error, ranking.min_draws_for_hdi(hdi_prob))
    ranking.check_hdi_prob(hdi_prob, first)
    systems = v.system_names(systems, None, m)
    check_draws_fit(cap, _BYTES_PER_DRAW_AND_SYSTEM * (m + 1))
    x = np.asarray(results)
    rtol = fold_rounding(scores)
    check_pair_spread(x, "scores", systems, rtol)
    key_draws, key_ranks = random_bits.split_keys(key)
    precision = None
    if target is None:
        draws, relative = mean_score_draws(key_draws, x, rho, num_draws=first, progress=progress)
    else:
        until = _mean_score_draws_to_precision(key_draws, x, rho, first=first, cap=cap, mc_error=target,
                                               progress=progress)
        (draws, relative), precision = (until.draws[0], jnp.asarray(until.draws[1])), precision_record(
            until, target, cap)
    num_draws = draws.shape[0]
    rank_draws = ranking.ranks(key_ranks, relative)
    rank_probs = np.asarray(ranking.rank_probabilities(rank_draws, num_systems=m))
    return ResultsComparison(
        systems=systems, mean_scores=x.mean(-1), draws=draws, p_best=rank_probs[:, 0],
        rank_probabilities=rank_probs, pairwise=_pairwise_closed_form(x, rho, rope, rtol),
        rope=rope, rho=rho, hdi_prob=hdi_prob, hdi=_hdi_at_any_scale(draws, hdi_prob),
        errors={"p_best": independent_draws_error(rank_probs[:, 0], num_draws)}, precision=precision,
    )


def _results_draw_counts(num_draws, mc_error, hdi_draws):
    """``(first, target, cap)`` of :func:`compare_results`: ``num_draws`` alone, that many (``target`` None);
    otherwise rounds from :func:`~ecjax._src.prob.adaptive_draws.first_draws` of the ``hdi_draws`` the HDI needs (at
    most the cap) to the target ``mc_error`` (default :data:`~ecjax._src.prob.adaptive_draws.DEFAULT_MC_ERROR`), at
    most ``num_draws`` (default :data:`~ecjax._src.prob.adaptive_draws.DEFAULT_MAX_DRAWS`)."""
    if num_draws is not None:
        num_draws = v.as_scalar(num_draws, "num_draws", integer=True, low=1)
        if mc_error is None:
            return num_draws, None, num_draws
    target = (DEFAULT_MC_ERROR if mc_error is None
              else v.as_scalar(mc_error, "mc_error", low=0.0, high=0.5, strict=True))
    cap = DEFAULT_MAX_DRAWS if num_draws is None else num_draws
    return min(first_draws(hdi_draws), cap), target, cap


def _p_best_ties_split(draws: np.ndarray) -> np.ndarray:
    """``(M,)`` P(best) of ``(S, M)`` draws with each exact tie for the best split evenly (the mean of
    :func:`ranking.ranks`' random split), on the host: the stopping rule of the rounds compiles nothing."""
    top = draws == draws.max(1, keepdims=True)
    return (top / top.sum(1, keepdims=True)).mean(0)


def _mean_score_draws_to_precision(key, results, rho, *, first, cap, mc_error, progress):
    """:func:`mean_score_draws` in rounds (round ``r`` from ``fold_in(key, start)``) from ``first`` draws until
    every P(best) has the independent-draws error ``sqrt(p (1 - p) / S)`` at most ``mc_error``, at most ``cap``
    draws: the :class:`~ecjax._src.prob.adaptive_draws.DrawnUntil` of ``(draws, relative)``."""
    def draw(start, count):  # blocks of the first round's size: every round runs the same compiled program
        return mean_score_draws(random_bits.fold_in(key, start), results, rho, num_draws=count, progress=progress,
                                block_size=first)

    def errors(drawn):
        return independent_draws_error(_p_best_ties_split(drawn[1]), drawn[0].shape[0])

    def join(rounds):  # on the host: no program per round's shape
        return np.concatenate([r[0] for r in rounds]), np.concatenate([np.asarray(r[1]) for r in rounds])

    return draw_until(draw, errors, target=mc_error, first_round=first, cap=cap, join=join, multiple=first)


# ---------------------------------------------------------------------------------------------------------------------
# M systems over several data sets: the hierarchical model of the systems' mean results

# The prior of each data set's within-set covariance: "correlated", Corani & Benavoli's, whose integral gives every
# data set's contrasts the multivariate t posterior of compare_results; "baycomp", baycomp's flat prior on sigma
# (M = 2) and its generalization, whose integral has M - 1 degrees of freedom fewer.
WITHIN_PRIORS = ("correlated", "baycomp")


class HierarchicalResultsData(NamedTuple):
    """The data of :func:`hierarchical_results_model`, scaled by ``unit`` as baycomp scales its data.

    For ``q`` data sets and ``M`` systems (``p = M - 1`` differences to system 0):

    Attributes:
      mean_differences: ``(q, p)`` per data set, the mean over its folds of ``x_m - x_0`` (``m = 1..M-1``).
      whitening: ``(q, p, p)`` ``L_d^-1`` with ``L_d L_d^T = c_d S_d``, ``S_d`` the sample covariance (``ddof
        = 1``) of the fold differences, ``c_d = 1 / n_d + rho_d / (1 - rho_d)``.
      exponents: ``(q,)`` the power of the within-set factor (see :func:`hierarchical_results_model`).
      folds_minus_one: ``(q,)`` ``n_d - 1``.
      rope: the ROPE in units.
      unit: the unit: the mean over the data sets and the pairs of systems ``a <
        b`` of the standard deviation (``ddof = 0``) of the fold differences ``x_b - x_a``.
      rho: ``(q,)`` the fold correlations.
      delta_bound: the largest ``|x_b - x_a|`` of any pair on any fold (in units): the bound of the uniform
        priors of the population differences.
      std0_high: ``upper_sigma`` times the root mean square over the pairs of the standard deviation over the
        data sets of their mean difference (``upper_sigma`` times 1, the within-set spread in units, when that
        is 0 or ``q = 1``).
    """

    mean_differences: jax.Array
    whitening: jax.Array
    exponents: jax.Array
    folds_minus_one: jax.Array
    rope: float
    unit: float
    rho: np.ndarray
    delta_bound: float
    std0_high: float


def hierarchical_results_data(results: Sequence[ArrayLike], *, rope: float, rho: ArrayLike,
                              within_prior: str = "correlated",
                              upper_sigma: float = UPPER_SIGMA) -> HierarchicalResultsData:
    """Statistics of ``q`` data sets' ``(M, n_d)`` fold results for :func:`hierarchical_results_model`.

    At ``M = 2`` the unit and bounds are baycomp's (:func:`hierarchical_data` of ``x_1 - x_0``); for ``M > 2`` each
    is the same quantity over every pair of systems, so that none depends on which system is system 0.
    Concrete input only, checked by :func:`hierarchical_compare_results`.
    """
    v.check_choice(within_prior, "within_prior", WITHIN_PRIORS)
    sets = [np.asarray(x, np.float64) for x in results]
    m = sets[0].shape[0]
    p = m - 1
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m)]
    pair_differences = [np.stack([x[b] - x[a] for a, b in pairs]) for x in sets]  # q x (pairs, n_d)
    largest = max(float(np.max(np.abs(d))) for d in pair_differences) or 1.0
    # The std of the differences over their largest |value|: no square under- or overflows at any scale.
    unit = largest * float(np.mean([np.std(d / largest, axis=-1) for d in pair_differences]))
    delta_bound = max(float(np.max(np.abs(d))) for d in pair_differences) / unit
    pair_means = np.stack([d.mean(-1) for d in pair_differences]) / unit  # (q, pairs)
    spread = float(np.sqrt(np.mean(np.var(pair_means, axis=0)))) if len(sets) > 1 else 0.0
    std0_high = (spread if spread > 0 else 1.0) * upper_sigma
    rho = np.broadcast_to(np.asarray(rho, np.float64), (len(sets),))
    means, whitening, exponents, folds = [], [], [], []
    for x, r in zip(sets, rho):
        n = x.shape[-1]
        d = (x[1:] - x[0]) / unit
        c = 1.0 / n + r / (1.0 - r)
        means.append(d.mean(-1))
        whitening.append(np.linalg.inv(np.linalg.cholesky(c * np.atleast_2d(np.cov(d)))))
        exponents.append((n - 1 + (p if within_prior == "correlated" else 0)) / 2)
        folds.append(n - 1)
    f = jnp.result_type(float)
    return HierarchicalResultsData(
        mean_differences=jnp.asarray(np.stack(means), f), whitening=jnp.asarray(np.stack(whitening), f),
        exponents=jnp.asarray(exponents, f), folds_minus_one=jnp.asarray(folds, f), rope=rope / unit, unit=unit,
        rho=np.array(rho), delta_bound=delta_bound, std0_high=std0_high)


def hierarchical_results_model(mean_differences: jax.Array, whitening: jax.Array, exponents: jax.Array,
                               folds_minus_one: jax.Array, delta_bound: float, std0_high: float,
                               bounds: HyperpriorBounds = HyperpriorBounds(), centred: bool = True) -> None:
    """NumPyro model of ``M`` systems' mean results on ``q`` data sets (:class:`HierarchicalResultsData`).

    Per data set ``d``, ``theta_d`` holds the systems' mean results; only
    their differences to system 0, ``delta_d = (theta_m - theta_0)_{m >= 1}``,
    enter (the level of each data set is a nuisance, flat)::

        delta0        ~ Uniform(-delta_bound, delta_bound)^(M-1)   population mean results minus system 0's
        std0          ~ Uniform(0, std0_high)                      root mean square over pairs of their spread
        shares        ~ Dirichlet(1, ..., 1)                       how the spread divides among the M systems
        gamma_alpha, gamma_beta, nu - 1: as in hierarchical_t_model (baycomp's priors)
        s_m^2         = std0^2 (M / 2) shares_m                    spread of system m across data sets
        theta_d - b0  ~ MVT_M(nu, 0, diag(s^2))                    i.e. delta_d ~ MVT_{M-1}(nu, delta0, Sigma0),
                                                                   Sigma0 = diag(s_1..M-1^2) + s_0^2 1 1^T
        delta_d       ~ likelihood: (1 + r_d^T (c_d S_d)^-1 r_d / (n_d - 1))^-exponent_d,  r_d = delta_d - dbar_d

    The last line is each data set's correlated normal model of the fold
    results (Corani & Benavoli 2015, as in :func:`mean_score_draws`) with its
    within-set covariance ``Sigma_d`` integrated out under ``p(Sigma_d) ∝
    |Sigma_d|^-a`` (on the ``M - 1`` differences): a multivariate t kernel
    in ``delta_d`` with ``n + 2a - 2M + 1`` degrees of freedom and power
    ``exponent = (n + 2a - M) / 2``.  ``within_prior="correlated"``: ``a =
    M - 1``, ``n - 1`` degrees of freedom, the factor is the posterior of
    :func:`compare_results` on that data set.  ``"baycomp"``: ``a = (M -
    1) / 2``, which at ``M = 2`` is baycomp's uniform prior on each data
    set's ``sigma`` (the hierarchical model of :func:`hierarchical_t_model`
    with ``sigma_i`` integrated out; its bound, a thousand spreads, is
    dropped), ``n - M`` degrees of freedom.

    Each system has its own spread ``s_m`` across data sets and the systems
    share the t's mixing variable (a data set hard for one system may be
    hard for all): the prior is exchangeable in the systems, and any pair's
    difference on a data set is ``St(nu, delta0_b - delta0_a, sqrt(s_a^2 +
    s_b^2))``.  At ``M = 2`` that is baycomp's model: ``std0`` is the one
    pair's spread, uniform as in baycomp.  ``centred=False`` samples
    ``delta_std ~ MVT_{M-1}(nu, 0, I)`` and sets ``delta = delta0 + L0
    delta_std`` (``L0 L0^T = Sigma0``), the same posterior without the funnel
    in ``std0`` that NUTS crosses badly with few data sets.  The density is
    normalized up to a constant of the data.  Sites: ``delta0`` ``(M-1,)``,
    ``std0``, ``shares`` ``(M,)``, ``gamma_alpha``, ``gamma_beta``,
    ``nu_minus_one``, ``delta`` ``(q, M-1)`` (deterministic when not
    centred, with ``delta_std``), the factor ``likelihood``.
    """
    dbar = jnp.asarray(mean_differences)
    q, p = dbar.shape
    f = dbar.dtype
    delta0 = numpyro.sample("delta0", dist.Uniform(jnp.asarray(-delta_bound, f), jnp.asarray(delta_bound, f))
                            .expand([p]).to_event(1))
    std0 = numpyro.sample("std0", dist.Uniform(jnp.zeros((), f), jnp.asarray(std0_high, f)))
    shares = numpyro.sample("shares", dist.Dirichlet(jnp.ones(p + 1, f)))
    nu = _degrees_of_freedom(bounds, f)
    spread2 = jnp.square(std0) * (0.5 * (p + 1)) * shares
    covariance = jnp.diag(spread2[1:]) + spread2[0]
    chol = jnp.linalg.cholesky(covariance)
    with numpyro.plate("datasets", q):
        if centred:
            delta = numpyro.sample("delta", dist.MultivariateStudentT(nu, delta0, chol))
        else:
            standard = numpyro.sample("delta_std", dist.MultivariateStudentT(nu, jnp.zeros(p, f), jnp.eye(p, dtype=f)))
            delta = numpyro.deterministic("delta", delta0 + einsum("ij,dj->di", chol, standard))
    white = einsum("dij,dj->di", jnp.asarray(whitening), delta - dbar)
    quadratic = jnp.sum(jnp.square(white), -1)
    numpyro.factor("likelihood", -jnp.sum(jnp.asarray(exponents) * jnp.log1p(quadratic / folds_minus_one)))


def _check_within_sets(results, systems, within_prior: str, rtol: float) -> None:
    """Refuse data sets whose fold differences have a singular sample covariance, or too few folds.

    A pair whose difference is the same non-zero number on every fold up to rounding (``rtol`` relative to the
    results, :func:`~ecjax._src.prob.inputs.check_pair_spread`) is refused first, with the message of
    :func:`compare_results`.
    """
    m = results[0].shape[0]
    need = m if within_prior == "correlated" else m + 1
    for d, x in enumerate(results):
        check_pair_spread(x, "scores", systems, rtol, where=f" on data set {d}")
        n = x.shape[-1]
        if n < need:
            why = (f"the sample covariance of the M - 1 = {m - 1} differences to {systems[0]} has rank at most "
                   f"n - 1 = {n - 1}: singular" if n < m else
                   f"within_prior='baycomp' leaves n - M = {n - m} degrees of freedom")
            raise v.InputError(f"`scores`: data set {d} has {n} folds for {m} systems, {why}; it needs at least "
                               f"{need} folds")
        differences = x[1:] - x[0]
        eigenvalues = np.linalg.eigvalsh(np.atleast_2d(np.cov(differences)))
        if eigenvalues[-1] <= 0 or eigenvalues[0] <= 1e-10 * eigenvalues[-1]:
            same = [(a, b) for a in range(m) for b in range(a + 1, m) if np.all(x[b] - x[a] == x[b, 0] - x[a, 0])]
            which = (f"{systems[same[0][1]]} - {systems[same[0][0]]} is the same on every fold" if same else
                     "the systems' fold results are linearly dependent")
            raise v.InputError(
                f"`scores`: on data set {d} {which}, so the covariance of the differences between systems is "
                "singular and the data set's likelihood a point mass in some direction; leave a duplicate system out "
                "or compare that data set alone")


@dataclass(frozen=True)
class HierarchicalResultsComparison(NUTSDiagnostics, ranking.BestMeanRecommended):
    """``M`` systems compared over ``q`` data sets by the hierarchical model (higher results are better).

    Everything is about the population of data sets the ``q`` ones stand
    for.  Each system's population mean result is known only relative to
    the others (a data set's level is a nuisance): the draws are of each
    system's population mean result minus the average over the systems.

    Attributes:
      systems: names.
      effects: ``(M,)`` posterior means of those relative mean results.
      draws: ``(S, M)`` their NUTS draws (``S = num_samples * num_chains``).
      p_best: ``(M,)`` P(system has the highest population mean result).
      rank_probabilities: ``(M, M)`` ``[m, r] = P(rank of m == r)``, rank 0 best.
      pairwise: ``(M, M, 3)`` ``[a, b] = (P(a better by > rope), P(|difference| <= rope), P(b better by > rope))``
        for the difference of the population mean results, ``delta0_b - delta0_a`` (baycomp's ``(p_left,
        p_rope, p_right)`` of ``scores_a = scores[a]``, ``scores_b = scores[b]``, for the population mean).
      next_dataset: ``(M, M, 3)`` baycomp's ``(p_left, p_rope, p_right)`` of the hierarchical test: the share of
        the draws in which the difference ``b - a`` on a new data set is most probably left of / in / right
        of the ROPE (:attr:`HierarchicalTTest.p_left`).
      next_dataset_predictive: ``(M, M, 3)`` the posterior predictive probabilities of those regions for a new
        data set (:attr:`HierarchicalTTest.predictive`).
      spreads: ``(S, M)`` draws of each system's spread ``s_m`` across data sets.
      nu: ``(S,)`` draws of the degrees of freedom of the population t.
      dataset_effects: ``(S, q, M)`` draws of each data set's mean results minus their average over the systems.
      rope: as given; rho: ``(q,)`` the fold correlation of each data set; within_prior: as given.
      hdi_prob, hdi: ``(M, 2)`` highest-density intervals of :attr:`draws`: of each system's population mean
        result minus the average over the systems, not of the mean result itself (which the model leaves free).
      errors: batch-means Monte Carlo standard errors of ``p_best``, ``pairwise``, ``next_dataset`` and
        ``next_dataset_predictive``.
      max_rhat, min_ess_bulk, num_divergences: NUTS diagnostics (ArviZ) over ``delta0``, ``std0``, ``shares``,
        ``nu_minus_one`` and ``delta``.
      inference_data: the ``arviz.InferenceData`` of the run.
    """

    systems: tuple
    effects: np.ndarray
    draws: np.ndarray
    p_best: np.ndarray
    rank_probabilities: np.ndarray
    pairwise: np.ndarray
    next_dataset: np.ndarray
    next_dataset_predictive: np.ndarray
    spreads: np.ndarray
    nu: np.ndarray
    dataset_effects: np.ndarray
    rope: float
    rho: np.ndarray
    within_prior: str
    hdi_prob: float
    hdi: np.ndarray
    errors: dict = field(default_factory=dict)

    CENTRE = "effects"
    ARVIZ_NAME = "effect"
    MODEL = "hierarchical over data sets, all systems (Corani et al. 2017, joint)"

    def to_dict(self) -> dict:
        """The result part of ``ecjax compare-folds --json``'s record for several systems on several data sets."""
        return {**self.model_record("effect"),
                "effect_is": "population mean result minus the average over the systems (also in hdi)",
                "next_dataset": result_formats.by_pair(self.systems, self.next_dataset), "max_rhat": self.max_rhat,
                "num_divergences": self.num_divergences}

    def pair_tables(self) -> dict[str, np.ndarray]:
        """The ROPE probabilities of the population mean difference (:attr:`pairwise`) and, prefixed
        ``next_dataset_``, baycomp's shares for a new data set (:attr:`next_dataset`)."""
        return {**ranking.rope_tables(self.pairwise), **ranking.rope_tables(self.next_dataset, "next_dataset_")}

    def posterior_variables(self) -> tuple[dict, dict]:
        """The relative population mean results (``effect``), the spreads, ``nu`` and each data set's relative
        mean results (``dataset_effect``), in the units of the results."""
        coords = {"system": list(self.systems), "dataset": list(range(self.dataset_effects.shape[1]))}
        return ({"effect": (self.draws, ["system"]), "spread": (self.spreads, ["system"]), "nu": (self.nu, []),
                 "dataset_effect": (self.dataset_effects, ["dataset", "system"])}, coords)

    def summary(self) -> str:
        """Diagnostics, each system's relative mean result, HDI and P(best), then every pair's two triples."""
        lines = [f"hierarchical model, {self.dataset_effects.shape[1]} data sets, {self.draws.shape[0]} NUTS draws "
                 f"(max R-hat {self.max_rhat:.3f}, min bulk ESS {self.min_ess_bulk:.0f}, {self.num_divergences} "
                 f"divergences; within-set prior {self.within_prior!r})"]
        lines += _ranking_lines(self.systems, self.effects, self, header="mean - average")
        lines.append("mean - average: each system's population mean result minus the average over the systems (the "
                     "model knows the mean results only relative to each other); its HDI is of that difference")
        lines.append(f"pairs (P(left), P(rope), P(right)) with rope {self.rope:g}: population mean difference | "
                     "next data set (baycomp's shares of the draws in which each region is the most probable):")
        for a in range(len(self.systems)):
            for b in range(a + 1, len(self.systems)):
                mean, new = (", ".join(f"{p:.3f}" for p in x[a, b]) for x in (self.pairwise, self.next_dataset))
                lines.append(f"  {self.systems[a]} vs {self.systems[b]}: ({mean}) | ({new})  "
                             f"[{self.systems[a]} better, equivalent, {self.systems[b]} better]")
        return "\n".join(lines)

    def __repr__(self):
        return f"HierarchicalResultsComparison(systems={self.systems}, best={self.best!r})\n{self.summary()}"


def hierarchical_compare_results(scores: ArrayLike | Sequence[ArrayLike], *, rope: float = 0.0, runs: int = 1,
                                 test_fraction: float | None = None, key: jax.Array | None = None,
                                 systems: Sequence[str] | None = None,
                                 hdi_prob: float = 0.9, within_prior: str = "correlated",
                                 nuts: NUTSSettings = NUTSSettings(),
                                 bounds: HyperpriorBounds = HyperpriorBounds()) -> HierarchicalResultsComparison:
    """Rank ``M`` systems cross-validated on ``q`` data sets (higher results are better).

    The hierarchical model of Corani et al. (2017; baycomp's
    ``HierarchicalTest``) for ``M`` systems at once,
    :func:`hierarchical_results_model`: each data set contributes its
    correlated-t likelihood of the ``M - 1`` differences to system 0, the
    multivariate t of :func:`compare_results`, which keeps the correlation
    between differences that share system 0's folds (``M - 1`` separate
    pairwise fits would lose it); the data sets' mean results are drawn from
    a population whose systems each have their own spread.  Fitted with
    NUTS (non-centred).  From the draws of the population mean results:
    P(best), rank probabilities (:mod:`~ecjax._src.prob.ranking`, ties at random),
    HDIs, every pair's ``(P(left), P(rope), P(right))`` for the population
    mean and baycomp's probabilities for a new data set.  The prior is
    exchangeable: relabelling the systems relabels the result (up to Monte
    Carlo error and the bound of the uniform prior, the largest fold
    difference, which holds the differences to system 0 only).  At ``M = 2``
    with ``within_prior="baycomp"`` the model is baycomp's
    (:func:`hierarchical_test`) with each data set's ``sigma`` integrated out.

    For two systems on several data sets :func:`hierarchical_test` is
    baycomp's model as such; for one data set, :func:`compare_results`.
    For a metric where lower is better pass its negation.

    Args:
      scores: ``(M, q, n)`` results of ``M`` systems on ``n`` folds of each of ``q >= 2`` data sets, or a list
        of ``q`` ``(M, n_d)`` arrays when the number of folds differs.  Each data set needs ``n_d >= M`` folds
        (``M + 1`` with ``within_prior="baycomp"``), else the covariance of the differences is singular.
      rope, runs, test_fraction: as in :func:`hierarchical_test` (``runs`` must divide every ``n_d``).
      key: ``jax.random`` key (required).
      systems: names (default ``"system 0"``, ...).
      hdi_prob: mass of the highest-density intervals.
      within_prior: ``"correlated"`` (Corani & Benavoli's prior on each data set's covariance, as in
        :func:`compare_results`) or ``"baycomp"`` (baycomp's uniform prior on ``sigma`` at ``M = 2``); see
        :func:`hierarchical_results_model`.
      nuts: :class:`~ecjax.prob.NUTSSettings`, as in :func:`hierarchical_test`.
      bounds: baycomp's hyper-prior bounds (:class:`HyperpriorBounds`).

    Returns:
      :class:`HierarchicalResultsComparison`.
    """
    results = results_per_dataset(scores)
    m = results[0].shape[0]
    systems = v.system_names(systems, None, m)
    rope = ranking.check_rope(rope, optional=False)
    rho = np.array([fold_correlation(x.shape[-1], runs=runs, test_fraction=test_fraction) for x in results])
    key = v.as_key(key)
    v.check_choice(within_prior, "within_prior", WITHIN_PRIORS)
    hdi_prob = ranking.check_hdi_prob(hdi_prob, check_nuts_settings(nuts).num_draws)
    bounds = check_hyperprior_bounds(bounds)
    _check_within_sets(results, systems, within_prior, fold_rounding(scores))

    data = hierarchical_results_data(results, rope=rope, rho=rho, within_prior=within_prior,
                                     upper_sigma=bounds.upper_sigma)
    key_nuts, key_ranks = random_bits.split_keys(key)
    model = partial(hierarchical_results_model, centred=False)
    fit = fit_nuts(key_nuts, model, (data.mean_differences, data.whitening, data.exponents, data.folds_minus_one,
                                     data.delta_bound, data.std0_high, bounds), nuts,
                   var_names=["delta0", "std0", "shares", "nu_minus_one", "delta"],
                   target_accept_prob=T_MODEL_TARGET_ACCEPT_PROB)
    samples, unit = fit.samples, data.unit
    # System 0's population mean is the origin of the differences; every summary is of differences, so the
    # reported draws are centred on the average over the systems (no system is singled out).
    relative = np.concatenate([np.zeros_like(np.asarray(samples["delta0"][:, :1])), np.asarray(samples["delta0"])], 1)
    in_units = relative - relative.mean(1, keepdims=True)  # float32-safe at any scale of the results
    draws = in_units * unit
    theta = np.concatenate([np.zeros(np.shape(samples["delta"])[:2] + (1,)), np.asarray(samples["delta"])], -1)
    spreads = np.sqrt(np.asarray(samples["std0"])[:, None] ** 2 * (0.5 * m) * np.asarray(samples["shares"])) * unit
    nu = 1.0 + np.asarray(samples["nu_minus_one"], np.float64)

    summaries = ranking.summarize(key_ranks, jnp.asarray(in_units, jnp.result_type(float)), rope=data.rope)
    # A new data set: theta_b - theta_a ~ St(nu, delta0_b - delta0_a, sqrt(s_a^2 + s_b^2)) in every draw.
    per_draw = next_dataset_probabilities(relative[:, None, :] - relative[:, :, None],
                                          np.sqrt(spreads[:, :, None] ** 2 + spreads[:, None, :] ** 2) / unit,
                                          nu[:, None, None], data.rope)
    per_draw[:, np.arange(m), np.arange(m)] = (0.0, 1.0, 0.0)  # a system against itself: no difference
    shares, share_errors = _baycomp_shares(per_draw, rope)
    return HierarchicalResultsComparison(
        systems=systems, effects=draws.mean(0), draws=draws, p_best=np.asarray(summaries["p_best"]),
        rank_probabilities=np.asarray(summaries["rank_probabilities"]),
        pairwise=np.asarray(summaries["rope_probabilities"]), next_dataset=shares,
        next_dataset_predictive=per_draw.mean(0), spreads=spreads, nu=nu,
        dataset_effects=(theta - theta.mean(-1, keepdims=True)) * unit, rope=rope, rho=data.rho,
        within_prior=within_prior, hdi_prob=hdi_prob, hdi=_hdi_at_any_scale(draws, hdi_prob),
        errors={"p_best": summaries["errors"]["p_best"], "pairwise": summaries["errors"]["rope_probabilities"],
                "next_dataset": share_errors, "next_dataset_predictive": ranking.batch_means_error(per_draw)},
        max_rhat=fit.max_rhat, min_ess_bulk=fit.min_ess_bulk, num_divergences=fit.num_divergences,
        inference_data=fit.inference_data,
    )
