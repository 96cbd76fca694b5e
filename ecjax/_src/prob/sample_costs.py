"""Compare systems under per-sample costs whose per-sample part has an uncertain scale.

Costs ``c_n(s) = base + s sum_m amount[n, m] scale[m]`` (:mod:`ecjax.scores.sample_costs`)
with ``s`` known only to lie in ``[lo, hi]`` (how much of a fraud's amount is
really lost?), and a finite test set.  For fixed decisions the EC is linear
in ``s`` (:func:`ecjax.scores.sample_costs.sample_expected_cost_parts`), so each
posterior draw needs only two weighted sums per system and class:

    EC_m(g, s) = sum_i P_i / W_i(g) [ B_mi(g) + s A_mi(g) ],
    B_mi(g) = sum_{n: y_n = i} g_n base[i, d_mn],
    A_mi(g) = sum_{n: y_n = i} g_n sum_k amount[n, k] scale[k, i, d_mn],

with ``W_i(g) = sum_{n: y_n = i} g_n``, data priors ``P_i = W_i(g) / W(g)``
by default, Bayesian-bootstrap weights ``g_n ~ Exp(1)`` (Rubin 1981: the
posterior of the sample distribution under a flat Dirichlet, paired across the
systems because they are judged on the same samples) and ``s ~ U(lo, hi)``
independent of ``g``.  All the per-draw sums are one matrix product
``(draws, N) @ (N, (2 M + 1) K)``, in chunks of draws.

The posterior mean is exact: within a class ``g_n / W_i(g)`` is
Dirichlet(1, ..., 1) distributed with mean ``1 / N_i``, so ``E[EC_m] =
EC_base,m + E[s] EC_amount,m``, the test set's EC at the mean scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.precision import einsum, matmul
from ecjax._src.prob.ranking import RankedSystems, check_hdi_prob, check_rope, hdi, ranking_fields, summarize
from ecjax._src.scores.sample_costs import (
    SampleCosts,
    decision_inputs,
    expected_cost_parts_kernel,
    incurred_kernel,
    num_classes,
    split_costs,
)

_DRAW_CHUNK = 256  # draws whose (chunk, N) bootstrap weights are made and reduced together


@dataclass(frozen=True)
class SampleCostComparison(RankedSystems):
    """Posterior comparison of ``M`` systems' decisions under per-sample costs of uncertain scale.

    Attributes (beyond :class:`~ecjax._src.prob.ranking.RankedSystems`, computed on ``-EC``: higher is better):
      expected_costs: ``(S, M)`` draws of each system's EC.
      expected_cost: ``(M,)`` posterior mean EC (exact, see the module docstring).
      hdi_prob, hdi: ``(M, 2)`` highest-density intervals of the EC.
      info: draws, the scale interval.
    """

    expected_costs: jax.Array = field(default_factory=lambda: jnp.zeros((0, 0)))
    expected_cost: np.ndarray = field(default_factory=lambda: np.zeros(0))
    hdi_prob: float = 0.9
    hdi: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    info: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)


@partial(jax.jit, static_argnames=("num_chunks", "data_priors"))
def _draws(key, labels, columns, priors, scale_range, *, num_chunks, data_priors):
    """``(num_chunks * _DRAW_CHUNK, M)`` EC draws from the per-sample columns ``(N, 2 M + 1, K)``."""
    n, width, k = columns.shape
    m = (width - 1) // 2
    lo, hi = scale_range

    def chunk(i):
        kg, ks = jax.random.split(jax.random.fold_in(key, i))
        g = jax.random.exponential(kg, (_DRAW_CHUNK, n), columns.dtype)
        sums = matmul(g, columns.reshape(n, width * k)).reshape(_DRAW_CHUNK, width, k)  # per class
        totals, base, amount = sums[:, 0], sums[:, 1:1 + m], sums[:, 1 + m:]
        p = totals / totals.sum(-1, keepdims=True) if data_priors else priors
        per_class = jnp.where(totals > 0, p / jnp.where(totals > 0, totals, 1.0), 0.0)  # P_i / W_i(g)
        s = jax.random.uniform(ks, (_DRAW_CHUNK,), columns.dtype, lo, hi)
        return einsum("tmk,tk->tm", base + s[:, None, None] * amount, per_class)

    return jax.lax.map(chunk, jnp.arange(num_chunks)).reshape(-1, m)


@jax.jit
def _columns(labels, decisions, costs):
    """``(N, 2 M + 1, K)``: per sample, in its class's column, ``1``, ``base[y_n, d_mn]``, the amount part."""
    base, amount = (incurred_kernel(labels, decisions, c) for c in split_costs(costs))  # (M, N) each
    rows = jnp.concatenate([jnp.ones((1, labels.shape[0]), base.dtype), base, amount]).T  # (N, 2 M + 1)
    return rows[:, :, None] * jax.nn.one_hot(labels, num_classes(costs), dtype=base.dtype)[:, None, :]


_point_parts = jax.jit(expected_cost_parts_kernel)


def compare_sample_costs(labels: ArrayLike, decisions: ArrayLike, costs: SampleCosts | ArrayLike, *,
                         scale: tuple[float, float], key: jax.Array, num_draws: int = 4096,
                         priors: ArrayLike | None = None, rope: float | None = None,
                         names: Any = None, hdi_prob: float = 0.9) -> SampleCostComparison:
    """P(best), ranks and EC intervals of ``M`` systems' decisions under per-sample costs of uncertain scale.

    Args:
      labels: ``(N,)`` true classes.
      decisions: ``(M, N)`` decisions of the systems on the same samples.
      costs: :class:`~ecjax.scores.sample_costs.SampleCosts` (or a dense ``(N, K, D)`` tensor, all per sample); its
        per-sample part is scaled by ``s ~ U(lo, hi)``.
      scale: ``(lo, hi)`` with ``lo <= hi`` (``(1, 1)``: a known scale; only the test set is uncertain).
      key: a ``jax.random`` key.
      num_draws: posterior draws (rounded up to a multiple of 256).
      priors: ``(K,)`` deployment priors (default: data priors, drawn with the bootstrap).
      rope: region of practical equivalence, in EC units.
      names: system names.
      hdi_prob: mass of the reported HDIs.
    """
    y, d, c, weights = decision_inputs(labels, decisions, costs, priors, None)
    d = v.check_shape(d, "decisions", "(M, N)", why=" (the systems' decisions on the same samples)")
    bounds = v.check_shape(v.as_array(scale, "scale"), "scale", "(2,)", why=" (lo, hi)")
    # A scale of costs: below 0 the per-sample costs would turn into gains.
    lo, hi = v.as_range(bounds[0], bounds[1], "scale", minimum=0.0, why=" (a factor of the per-sample costs)")
    num_draws = v.as_scalar(num_draws, "num_draws", integer=True, low=1)
    hdi_prob = check_hdi_prob(hdi_prob, num_draws)
    rope = check_rope(rope)
    k = num_classes(c)
    num_chunks = -(-num_draws // _DRAW_CHUNK)
    p = None if priors is None else v.as_priors(priors, num_classes=k)  # checked by decision_inputs
    ec = _draws(v.as_key(key), y, _columns(y, d, c), p, jnp.asarray([lo, hi], jnp.float32),
                num_chunks=num_chunks, data_priors=priors is None)
    ec_base, ec_amount = _point_parts(y, d, c, weights)
    mean = np.asarray(ec_base, np.float64) + 0.5 * (lo + hi) * np.asarray(ec_amount, np.float64)
    summary = summarize(jax.random.fold_in(v.as_key(key), 1), -ec, rope=rope, hdi_prob=None)
    systems = v.system_names(names, None, d.shape[0], argument="names")
    return SampleCostComparison(
        systems=tuple(systems), **ranking_fields(summary, rope), recommendation=int(np.argmin(mean)),
        expected_costs=ec, expected_cost=mean, hdi_prob=hdi_prob, hdi=np.asarray(hdi(ec, hdi_prob)),
        info={"num_draws": int(ec.shape[0]), "scale": (lo, hi), "model": "Bayesian bootstrap x uniform scale"},
        errors=summary["errors"])
