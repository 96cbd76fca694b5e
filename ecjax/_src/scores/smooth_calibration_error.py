"""The smooth ECE and its reliability diagram (Błasiok & Nakkiran 2024).

Błasiok & Nakkiran ("Smooth ECE: Principled reliability diagrams via kernel
smoothing", ICLR 2024) replace the bins of the ECE by a kernel.  With
confidences ``f_i`` in ``[0, 1]``, outcomes ``y_i`` (the hit of the
decision, or the class indicator), weights ``w_i`` (1 without
``sample_weight``) and a kernel ``K_sigma``::

    r_sigma(t)     = sum_i w_i K_sigma(t, f_i) (f_i - y_i)      (smoothed residual mass)
    delta_sigma(t) = sum_i w_i K_sigma(t, f_i)                  (smoothed density mass)
    smECE_sigma    = int_0^1 |r_sigma(t)| dt / int_0^1 delta_sigma(t) dt

``K_sigma`` is the reflected Gaussian kernel: the Gaussian of standard
deviation ``sigma`` around ``f`` and its mirror images at the edges of
``[0, 1]`` (``-f`` and ``2 - f``), so that no mass leaves the interval
(images farther than 1 are left out).  The smooth ECE is ``smECE_sigma*``
at the bandwidth where it equals the bandwidth, ``smECE_sigma* = sigma*``
(the paper's fixed point; it exists since ``smECE_sigma`` falls as
``sigma`` grows).  As in the authors' ``relplot`` package, ``sigma*`` is
found by 10 bisection steps on ``(0, 1]``, keeping the side where
``sigma >= smECE_sigma`` (and never below 0.001), and the integrals are
computed on a grid: each ``f_i`` is split linearly between its two nearest
grid points (which keeps every sample's mass and mean), the grid is
smoothed by a discrete convolution with the reflected kernel, and the
integrals are trapezoid sums over the grid.  ``grid_size`` points resolve bandwidths
down to a few grid steps: against the exact kernel sums, 1e-4 relative at 20 steps per ``sigma``, 3e-4 at 10
and 2e-3 at 4 (400 samples; the default grid's step is 0.0005, and ``sigma*`` stays above 0.001).

The reliability diagram plots the smoothed outcome ``sum_i w_i K_sigma(t,
f_i) y_i / delta_sigma(t)`` against ``t`` (the kernel regression of ``y`` on
``f``, relplot's ``mu``), with the density ``delta_sigma``.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.scores.calibration_errors import (VARIANTS, calibration_inputs, confidences_and_hits,
                                     nan_where_traced_inputs_invalid)
from ecjax._src.precision import EXACT
from ecjax._src.scores.inputs import resolved_variant

# relplot's search: 10 halvings of (0, 1], and no bandwidth below 0.001.
BISECTION_STEPS = 10
MIN_BANDWIDTH = 1e-3
DEFAULT_GRID_SIZE = 2001


class SmoothECE(NamedTuple):
    """The smooth ECE of each system (``(...)``; averaged over the classes for ``"classwise"``) and its curves.

    Attributes:
      ece: the smooth ECE, ``smECE_sigma`` at :attr:`bandwidth`.
      bandwidth: ``sigma`` used (``sigma*``, the fixed point, unless given); ``(..., C)``, ``C = K`` classes for
        ``"classwise"``, else 1.
      grid: ``(G,)`` the points ``t`` of ``[0, 1]`` where the curves are evaluated.
      curve: ``(..., C, G)`` the smoothed outcome, the kernel regression of ``y`` on ``f`` (NaN where the density
        is 0).
      density: ``(..., C, G)`` the smoothed density of the confidences, integrating to 1 over ``[0, 1]``.
    """

    ece: jax.Array
    bandwidth: jax.Array
    grid: jax.Array
    curve: jax.Array
    density: jax.Array


def linear_binning(values: jax.Array, weights: jax.Array, grid_size: int) -> jax.Array:
    """``(G,)``: each weight split between the two grid points ``g / (G - 1)`` around its value in ``[0, 1]``, in
    proportion to closeness (the split keeps the total and the mean)."""
    position = jnp.clip(values, 0.0, 1.0) * (grid_size - 1)
    left = jnp.clip(jnp.floor(position).astype(jnp.int32), 0, grid_size - 2)
    frac = position - left
    out = jnp.zeros(grid_size, weights.dtype)
    return out.at[left].add((1 - frac) * weights).at[left + 1].add(frac * weights)


def reflected_smoothing(mass: jax.Array, bandwidth: jax.Array) -> jax.Array:
    """``(G,)``: grid masses smoothed by the reflected Gaussian kernel of standard deviation ``bandwidth``.

    ``out[t] = sum_u mass[u] (phi(t - u) + phi(t + u) + phi(2 - t - u))`` over the grid points ``t, u`` (the
    images at 0 and 1): a 'valid' convolution of the mirrored masses with the Gaussian sampled at the grid steps
    ``|d| <= 1``.  An edge point is its own image (``-0 = 0``, ``2 - 1 = 1``): its mass counts twice there,
    which keeps every sample's kernel mass 1 on ``[0, 1]`` (relplot's grid omits that image, so that a
    confidence of exactly 1, common in float32, keeps half its mass).
    """
    g = mass.shape[-1]
    offsets = jnp.arange(-(g - 1), g, dtype=mass.dtype) / (g - 1)
    kernel = jnp.exp(-0.5 * (offsets / bandwidth) ** 2) / (bandwidth * jnp.sqrt(2 * jnp.pi) * (g - 1))
    middle = mass.at[0].multiply(2).at[-1].multiply(2)
    mirrored = jnp.concatenate([jnp.flip(mass[1:]), middle, jnp.flip(mass[:-1])])
    return jnp.convolve(mirrored, kernel, mode="valid", precision=EXACT)


def _smoothed(residual_mass, density_mass, bandwidth):
    return reflected_smoothing(residual_mass, bandwidth), reflected_smoothing(density_mass, bandwidth)


def trapezoid_sum(x: jax.Array) -> jax.Array:
    """``sum(x) - (x[0] + x[-1]) / 2``: the trapezoid rule on the grid, in units of its step."""
    return jnp.sum(x) - 0.5 * (x[0] + x[-1])


def smooth_ece_at(residual_mass: jax.Array, density_mass: jax.Array, bandwidth: jax.Array) -> jax.Array:
    """``smECE_sigma`` from the binned residual and density masses (module docstring)."""
    r, d = _smoothed(residual_mass, density_mass, bandwidth)
    return trapezoid_sum(jnp.abs(r)) / trapezoid_sum(d)


def fixed_point_bandwidth(residual_mass: jax.Array, density_mass: jax.Array) -> jax.Array:
    """``sigma*``, relplot's bisection for ``smECE_sigma = sigma`` on ``(0, 1]``.

    ``below(s)``: ``s < 0.001`` or ``s < smECE_s`` (``s`` is below the fixed point).  ``1`` if ``below(1)``;
    otherwise ``BISECTION_STEPS`` halvings of ``[0, 1]`` keep ``below`` at the lower end, and the upper end is
    returned (the smallest tried bandwidth at or above the fixed point).
    """
    def below(s):
        return (s < MIN_BANDWIDTH) | (s < smooth_ece_at(residual_mass, density_mass, s))

    def step(_, bounds):
        low, high = bounds
        mid = (low + high) / 2
        is_below = below(mid)
        return jnp.where(is_below, mid, low), jnp.where(is_below, high, mid)

    one = jnp.ones((), density_mass.dtype)
    _, high = jax.lax.fori_loop(0, BISECTION_STEPS, step, (jnp.zeros_like(one), one))
    return jnp.where(below(one), one, high)


def _one_row(conf, hit, weights, bandwidth, *, grid_size):
    residual_mass = linear_binning(conf, weights * (conf - hit), grid_size)
    density_mass = linear_binning(conf, weights, grid_size)
    sigma = fixed_point_bandwidth(residual_mass, density_mass) if bandwidth is None else bandwidth
    r, d = _smoothed(residual_mass, density_mass, sigma)
    outcome = reflected_smoothing(linear_binning(conf, weights * hit, grid_size), sigma)
    curve = jnp.where(d > 0, outcome / jnp.where(d > 0, d, 1), jnp.nan)
    return trapezoid_sum(jnp.abs(r)) / trapezoid_sum(d), sigma, curve, d * (grid_size - 1) / trapezoid_sum(d)


@partial(jax.jit, static_argnames=("variant", "grid_size"))
def smooth_ece_kernel(labels: jax.Array, log_post: jax.Array, sample_weight: jax.Array | None = None,
                      bandwidth: jax.Array | None = None, *, variant: str, grid_size: int) -> SmoothECE:
    """:class:`SmoothECE` of validated labels and ``(..., N, K)`` log-posteriors (no checks)."""
    conf, hit = confidences_and_hits(labels, log_post, variant)  # (..., C, N)
    weights = jnp.ones(conf.shape[-1], conf.dtype) if sample_weight is None else sample_weight.astype(conf.dtype)
    one = partial(_one_row, weights=weights, bandwidth=bandwidth, grid_size=grid_size)
    flat = conf.shape[:-1]
    ece, sigma, curve, density = jax.vmap(one)(conf.reshape((-1, conf.shape[-1])), hit.reshape((-1, hit.shape[-1])))
    return SmoothECE(ece=jnp.mean(ece.reshape(flat), -1), bandwidth=sigma.reshape(flat),
                     grid=jnp.linspace(0.0, 1.0, grid_size, dtype=conf.dtype),
                     curve=curve.reshape(flat + (grid_size,)), density=density.reshape(flat + (grid_size,)))


def smooth_ece(labels: ArrayLike, scores: ArrayLike, *, variant: str = "auto", bandwidth: float | None = None,
               grid_size: int = DEFAULT_GRID_SIZE, priors: ArrayLike | None = None,
               score_type: str = "log_posteriors", sample_weight: ArrayLike | None = None) -> SmoothECE:
    """Smooth ECE (Błasiok & Nakkiran 2024) with its smoothed reliability curve.

    The formulas, the kernel and the choice of the bandwidth are in the
    module docstring; the numbers are those of the authors' ``relplot``
    (``smECE``) up to its grid.  Unlike the binned ECE there are no bins to
    choose: the bandwidth is set by the data (``smECE = sigma*``).

    Args:
      labels: ``(N,)`` true classes.
      scores: ``(..., N, K)`` scores (``(..., N)`` for ``"llr"``); leading axes are systems.
      variant: ``"auto"`` (binary for K = 2, else top-label), ``"binary"``, ``"top_label"`` (relplot's
        ``multiclass_logits_to_confidences``) or ``"classwise"`` (the mean over the classes of each class's
        smooth ECE), as in :func:`ecjax.scores.binned_calibration_error`.
      bandwidth: a fixed ``sigma > 0`` (``smECE_sigma``) instead of the fixed point.
      grid_size: points of the grid on ``[0, 1]`` (odd keeps 0.5 on it).
      priors, score_type: to turn the scores into posteriors, as everywhere.
      sample_weight: optional ``(N,)`` non-negative weights: each sample's kernel mass is its weight.

    Returns:
      :class:`SmoothECE`.  Under ``jax.jit`` an invalid traced input (a label out of range, a NaN score) gives a
      NaN ``ece``.

    Example::

        >>> import jax.numpy as jnp
        >>> lp = jnp.log(jnp.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]]))
        >>> res = smooth_ece([0, 1, 1, 1], lp)
        >>> bool(0 < res.ece < 1), res.curve.shape
        (True, (1, 2001))
    """
    v.check_choice(variant, "variant", VARIANTS)
    grid_size = v.as_scalar(grid_size, "grid_size", integer=True, low=3)
    sigma = None if bandwidth is None else v.as_scalar(bandwidth, "bandwidth", low=0.0, strict=True)
    y, log_post, w = calibration_inputs(labels, scores, priors, score_type, sample_weight)
    variant = resolved_variant(variant, log_post.shape[-1], VARIANTS)
    res = smooth_ece_kernel(y, log_post, w, None if sigma is None else jnp.asarray(sigma, log_post.dtype),
                            variant=variant, grid_size=grid_size)
    return res._replace(ece=nan_where_traced_inputs_invalid(res.ece, y, log_post, w))
