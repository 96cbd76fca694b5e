"""Credible bands on ROC and precision-recall curves, from the Bayesian bootstrap.

Each posterior draw gives the ``N`` test samples Bayesian-bootstrap weights
(Rubin 1981; as :func:`ecjax.prob.bootstrap_metric`)

    w ~ Dirichlet(1, ..., 1)    (with ``sample_weight`` s: w_n ∝ e_n, e_n ~ Gamma(s_n, 1)),

and the curve is read on a fixed grid, so that the draws align point by
point (vertical averaging, Macskassy & Provost 2004, "Confidence bands for
ROC curves"):

* ROC: the true-positive rate at each false-alarm rate ``f`` of the grid,
  on the empirical curve through the cuts of the sorted scores (a vertical
  step where positives pass the cut, a horizontal one for negatives, a
  diagonal across tied scores), at the top of any vertical step at ``f``;
* precision-recall: the precision at the first cut whose recall reaches
  ``r`` (the step function that average precision integrates).

The scores are sorted once (:func:`ecjax.scores.sort_scores`); a draw costs the two weighted prefix sums of
:func:`ecjax.scores.weighted_rates_at_cuts` and one search per grid point, so ``B`` draws of ``N`` samples cost ``O(B (N + G log
N))`` under ``vmap``.

Bands at level ``1 - alpha``:

* pointwise: the ``alpha / 2`` and ``1 - alpha / 2`` quantiles of the draws
  at each grid point (each point's band holds the curve with probability
  ``1 - alpha``, not the whole curve);
* simultaneous: the envelope of the ``ceil((1 - alpha) B)`` draws that lie
  deepest inside the pointwise distributions, a draw's depth being its
  smallest, over the grid, of ``min(#{draws <= it}, #{draws >= it}) / B``
  (a sup-norm band calibrated on the quantiles, as Montiel Olea &
  Plagborg-Moller 2019, "Simultaneous confidence bands", J. Applied
  Econometrics 34(1)): a share ``1 - alpha`` of the posterior curves lies
  wholly inside it.  Unlike a mean +- k sd band it never leaves ``[0, 1]``
  and follows the skew of the draws near the ends of the curve.

The grid's ends deserve care: ``TPR(0)`` is the share of positives above
every negative and ``TPR(1) = 1`` always, so the default ROC grid is the
interior ``0.01, ..., 0.99``; below a few ``/ N_0`` false alarms (or a few
``/ N_1`` recall) the band rests on a handful of samples.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.prob import sampling
from ecjax._src.prob.inputs import check_curve_grid
from ecjax._src.scores.roc import SortedScores, sort_scores, weighted_rates_at_cuts
from ecjax._src.scores.inputs import binary_log_odds_inputs

CURVES = ("roc", "precision_recall")
# Rates within this many float epsilons of a grid point count as on it (a ratio of sums rounds a few times).
_ROUNDING = 8
DEFAULT_GRIDS = {"roc": np.linspace(0.01, 0.99, 99), "precision_recall": np.linspace(0.01, 1.0, 100)}


class CurveBand(NamedTuple):
    """A curve with its Bayesian-bootstrap credible bands, on a fixed grid.

    Attributes:
      curve: ``"roc"`` (true-positive rate against false-alarm rate) or
        ``"precision_recall"`` (precision against recall).
      grid: ``(G,)`` the false-alarm rates (ROC) or recalls (PR).
      estimate: ``(G,)`` the curve of the data (the given sample weights).
      pointwise_lower, pointwise_upper: ``(G,)`` the pointwise band.
      simultaneous_lower, simultaneous_upper: ``(G,)`` the band that holds
        a share ``level`` of the posterior curves whole.
      level: the credible level ``1 - alpha``.
      draws: ``(B, G)`` the posterior curves.
    """

    curve: str
    grid: jax.Array
    estimate: jax.Array
    pointwise_lower: jax.Array
    pointwise_upper: jax.Array
    simultaneous_lower: jax.Array
    simultaneous_upper: jax.Array
    level: float
    draws: jax.Array

    def to_dict(self) -> dict:
        """JSON-ready: every array as a list of floats; the ``(B, G)`` draws are left out (large, and the bands say
        what they hold)."""
        return {f: (np.asarray(x, np.float64).tolist() if isinstance(x, (jax.Array, np.ndarray)) else x)
                for f, x in zip(self._fields, self) if f != "draws"}


# ------------------------------------------------------------------ kernels

def sorted_cuts(labels: jax.Array, log_odds: jax.Array, curve: str) -> tuple[SortedScores, jax.Array]:
    """Kernel: the sort every draw shares, :func:`ecjax.scores.sort_scores`, and the cut of each point of the curve.

    Returns ``(ranked, cut_at)``: ``cut_at`` ``(N + 1,)`` maps point ``c`` of the curve (the ``c`` highest scores
    decided positive) to the cut of ``ranked`` that :func:`ecjax.scores.weighted_rates_at_cuts` reads it at, moved
    to the end of a tie group it would split (every tied score positive: no threshold splits a tie).  The sort runs
    from the side of the curve's search variable, so that the rate searched on the grid is a prefix sum over its
    total, exact where a grid point equals ``k / N_i``: the ascending scores for the ROC (the false-alarm rate is
    the kernel's ``fa``), the descending ones for precision-recall (the recall is the kernel's ``miss`` of the
    negated scores).
    """
    n = log_odds.shape[-1]
    cuts = jnp.arange(n + 1)
    if curve == "roc":  # point c is the cut below the N - c highest; a tie moves it down to the group's start
        ranked = sort_scores(labels, log_odds)
        return ranked, jax.lax.cummax(jnp.where(ranked.valid, cuts, 0))[n - cuts]
    ranked = sort_scores(labels, -log_odds)  # point c is the cut after the c highest; a tie moves it up
    return ranked, jax.lax.cummin(jnp.where(ranked.valid, cuts, n), reverse=True)


def _roc_on_grid(ranked, cut_at, w, grid):
    """TPR at each false-alarm rate of ``grid``: linear between cuts, the top of a vertical step."""
    miss, fa = weighted_rates_at_cuts(ranked, w)
    fpr, tpr = fa[cut_at], 1.0 - miss[cut_at]
    last = fpr.shape[0] - 1
    # The last cut with fpr <= f, to within rounding: a rate k / N_0 equal to a grid point may round above it.
    at = jnp.clip(jnp.searchsorted(fpr, grid * (1 + _ROUNDING * jnp.finfo(fpr.dtype).eps), side="right") - 1, 0,
                  last)
    nxt = jnp.minimum(at + 1, last)
    gap = fpr[nxt] - fpr[at]
    t = jnp.clip(jnp.where(gap > 0, (grid - fpr[at]) / jnp.where(gap > 0, gap, 1.0), 0.0), 0.0, 1.0)
    return jnp.clip(tpr[at] + t * (tpr[nxt] - tpr[at]), 0.0, 1.0)


def _precision_on_grid(ranked, cut_at, w, grid):
    """Precision at the first cut whose recall reaches each recall of ``grid`` (``grid > 0``)."""
    miss, fa = weighted_rates_at_cuts(ranked, w)  # of the negated scores: miss is the recall, fa 1 - the FPR
    w_sorted = jnp.take(w, ranked.order, axis=-1)
    total1 = jnp.sum(jnp.where(ranked.is1, w_sorted, 0.0))
    total0 = jnp.sum(w_sorted) - total1
    recall = miss[cut_at]
    tp, fp = total1 * recall, total0 * (1.0 - fa[cut_at])
    # To within rounding, as in _roc_on_grid: a recall k / N_1 equal to a grid point may round below it.
    at = jnp.clip(jnp.searchsorted(recall, grid * (1 - _ROUNDING * jnp.finfo(tp.dtype).eps), side="left"), 1,
                  tp.shape[0] - 1)
    return tp[at] / (tp[at] + fp[at])


def curve_draws(labels: jax.Array, log_odds: jax.Array, weights: jax.Array, grid: jax.Array, *,
                curve: str) -> jax.Array:
    """Kernel: the weighted curve on ``grid`` for each weight vector, ``weights (..., N) -> (..., G)``.

    ``labels`` ``(N,)`` in {0, 1}, ``log_odds`` ``(N,)`` the class-1 scores
    (any monotone score), ``weights`` non-negative, any scale, with weight in
    both classes.  One sort for every weight vector (:func:`sorted_cuts`), the rates of each from the public kernel
    :func:`ecjax.scores.weighted_rates_at_cuts`.
    """
    ranked, cut_at = sorted_cuts(labels, log_odds, curve)
    read = _roc_on_grid if curve == "roc" else _precision_on_grid
    flat = weights.reshape(-1, weights.shape[-1])
    return jax.vmap(lambda w: read(ranked, cut_at, w, grid))(flat).reshape(weights.shape[:-1] + grid.shape)


def _depth(draws):
    """``(B, G)`` -> ``(B,)``: each draw's smallest pointwise depth ``min(#{<=}, #{>=}) / B`` over the grid."""
    b = draws.shape[0]
    ranked = jnp.sort(draws, axis=0)

    def column(sorted_col, col):
        at_most = jnp.searchsorted(sorted_col, col, side="right")
        at_least = b - jnp.searchsorted(sorted_col, col, side="left")
        return jnp.minimum(at_most, at_least)

    return jnp.min(jax.vmap(column, in_axes=1, out_axes=1)(ranked, draws), axis=1) / b


def bands_of_draws(draws: jax.Array, level: float) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Kernel: ``(B, G)`` posterior curves -> pointwise and simultaneous bands at ``level``.

    Returns ``(pointwise_lower, pointwise_upper, simultaneous_lower,
    simultaneous_upper)``, each ``(G,)`` (see the module's docstring).
    """
    alpha = 1.0 - level
    lower, upper = jnp.quantile(draws, jnp.array([alpha / 2, 1 - alpha / 2], draws.dtype), axis=0)
    b = draws.shape[0]
    kept = min(b, math.ceil(level * b - 1e-9))
    deepest = jnp.argsort(-_depth(draws), stable=True)[:kept]
    inside = draws[deepest]
    return lower, upper, inside.min(0), inside.max(0)


@partial(jax.jit, static_argnames=("curve", "num_draws", "level"))
def _band_kernel(key, labels, log_odds, sample_weight, grid, *, curve, num_draws, level):
    # Exp(1) = Gamma(1, 1): the plain draw compiles in a fraction of the general Gamma sampler's time.
    if sample_weight is None:
        shapes = jnp.ones_like(log_odds)
        weights = jax.random.exponential(key, (num_draws,) + log_odds.shape, log_odds.dtype)
    else:
        shapes = sample_weight
        weights = sampling.gamma_draws(key, shapes, num_draws)
    draws = curve_draws(labels, log_odds, weights, grid, curve=curve)
    estimate = curve_draws(labels, log_odds, shapes, grid, curve=curve)
    return estimate, draws, *bands_of_draws(draws, level)


# ------------------------------------------------------------------ public

def curve_band(labels: ArrayLike, scores: ArrayLike, *, curve: str = "roc", key: jax.Array,
               num_draws: int = 1000, level: float = 0.95, grid: ArrayLike | None = None,
               score_type: str = "log_posteriors", sample_weight: ArrayLike | None = None) -> CurveBand:
    """ROC or precision-recall curve of one binary system, with Bayesian-bootstrap credible bands.

    Args:
      labels: ``(N,)`` classes in {0, 1} (1 = positive).
      scores: binary scores (``(N, 2)``, or ``(N,)`` for ``"llr"``); only
        the ranking of the class-1 log-odds is used.
      curve: ``"roc"`` or ``"precision_recall"``.
      key: JAX random key of the bootstrap weights.
      num_draws: ``B``, the posterior curves drawn.
      level: the credible level ``1 - alpha`` of both bands, in ``(0, 1)``.
      grid: false-alarm rates in ``[0, 1]`` (ROC) or recalls in ``(0, 1]``
        (PR); default :data:`DEFAULT_GRIDS`.
      score_type: any score type.
      sample_weight: optional ``(N,)`` frequency weights (a sample of weight
        ``k`` stands for ``k`` samples).

    Returns:
      :class:`CurveBand`.

    Example:
      >>> import numpy as np, jax
      >>> from ecjax.prob import curve_band
      >>> rng = np.random.default_rng(0)
      >>> y = np.repeat([0, 1], 200); llr = rng.normal(1.5 * y, 1.0)
      >>> band = curve_band(y, llr, score_type="llr", key=jax.random.key(0), num_draws=200)
      >>> bool(np.all(band.simultaneous_lower <= band.pointwise_lower))
      True
    """
    curve = v.check_choice(curve, "curve", CURVES)
    num_draws = v.as_scalar(num_draws, "num_draws", integer=True, low=2)
    level = v.as_scalar(level, "level", low=0.0, high=1.0, strict=True)
    g = check_curve_grid(DEFAULT_GRIDS[curve] if grid is None else grid, "recall" if curve != "roc" else "fpr")
    key = v.as_key(key)
    y, s, w = binary_log_odds_inputs(labels, scores, score_type, sample_weight, drop_zero_weights=True)
    out = _band_kernel(key, y, s, w, jnp.asarray(g, s.dtype), curve=curve, num_draws=num_draws, level=level)
    estimate, draws, pl, pu, sl, su = out
    return CurveBand(curve, jnp.asarray(g, s.dtype), estimate, pl, pu, sl, su, level, draws)
