"""Sweeps over the scale of the per-sample part of per-sample costs (:mod:`ecjax.scores.sample_costs`).

The amount-dependent part of the costs is often known only up to a factor
(is a missed fraud worth its amount, or half of it once recovered?).  With
``c_n(s) = base + s sum_m amount[n, m] scale[m]`` these sweeps give each
system's EC (NEC) at every ``s`` of an axis (``grids.linspace(0, 2, 101)``):

* :func:`sweep_sample_costs`: Bayes decisions recomputed at every ``s``
  (they follow the costs), one ``O(N K D)`` contraction per point, vmapped
  over the points of a chunk by the sweep engine;
* :func:`sweep_sample_costs_of_decisions`: decisions fixed, where the EC is
  linear in ``s``: ``EC(s) = EC_base + s EC_amount`` (and the naive EC the
  minimum over ``d`` of two such lines), so a point costs ``O(S D)``.

Both return a :class:`~ecjax.sweep.SweepResult` (winners, win fractions, flips).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.decisions import log_posteriors_kernel
from ecjax._src.scores.sample_costs import (
    SampleCosts,
    decision_inputs,
    expected_cost_parts_kernel,
    incurred_kernel,
    naive_costs_kernel,
    sample_bayes_decisions_kernel,
    scaled,
    score_inputs,
    split_costs,
    weighted_sum,
)
from ecjax._src.sweep import engine
from ecjax._src.sweep.engine import SweepSettings
from ecjax._src.sweep.grids import Axis
from ecjax._src.sweep.sweeps import Problem, SweepResult, run_sweep


def _bayes_point(s, labels, log_post, costs, weights):
    """``(EC, naive EC)`` of each system's per-sample Bayes decisions under ``scaled(costs, s)``: ``(S,)``, ``()``."""
    c = scaled(costs, s)
    ec = weighted_sum(incurred_kernel(labels, sample_bayes_decisions_kernel(log_post, c), c), weights)
    return ec, jnp.min(naive_costs_kernel(labels, c, weights))


def _linear_point(s, parts, naive_parts):
    """``EC_base + s EC_amount`` per system, and the naive ``min_d (naive_base_d + s naive_amount_d)``."""
    return parts[0] + s * parts[1], jnp.min(naive_parts[0] + s * naive_parts[1])


@dataclass(frozen=True)
class _Points:
    """The engine's point function: ``fn`` vmapped over the scales at ``idx``; values ``(c, S)`` and validity."""

    fn: Callable
    axis_fn: Callable
    normalize: bool

    def __call__(self, args, idx):
        data, fn_args = args
        ec, naive = jax.vmap(lambda s: self.fn(s, *fn_args))(self.axis_fn(data, idx))
        vals = ec / naive[:, None] if self.normalize else ec
        return vals, jnp.all(jnp.isfinite(vals), -1)


def _run(fn, scales, fn_args, num_systems, normalize, settings):
    v.check_instance(scales, Axis, "scales", "ecjax.sweep.grids.Axis")
    problem = Problem(_Points(fn, scales.fn, bool(normalize)), (scales.data, fn_args), scales, num_systems,
                      "nec" if normalize else "ec")
    return run_sweep(problem, engine.check_sweep_settings(settings))


def sweep_sample_costs(labels: ArrayLike, scores: ArrayLike, costs: SampleCosts | ArrayLike, scales: Axis, *,
                       priors: ArrayLike | None = None, score_type: str = "log_posteriors", normalize: bool = False,
                       sample_weight: ArrayLike | None = None,
                       settings: SweepSettings = SweepSettings()) -> SweepResult:
    """EC (NEC) of per-sample Bayes decisions at every scale ``s`` of ``scales``: costs ``base + s amount scale``.

    Args:
      labels: ``(N,)`` true classes, shared by the systems (per-sample costs belong to the samples).
      scores: ``(S, N, K)`` (or ``(N, K)``) scores of ``S`` systems; ``(S, N)`` for ``"llr"``.
      costs: :class:`~ecjax.scores.sample_costs.SampleCosts` (or a dense ``(N, K, D)`` tensor, all of it scaled).
      scales: a scalar axis, e.g. ``grids.linspace(0, 2, 101)``.
      priors, score_type, sample_weight: as in :func:`ecjax.scores.sample_costs.sample_bayes_expected_cost`.
      normalize: NEC: each point's EC over that point's best single decision.
      settings: the sweep engine's settings.
    """
    y, s, log_p, c, weights = score_inputs(labels, scores, costs, priors, score_type, sample_weight)
    s = s.reshape((-1,) + s.shape[-(1 if score_type == "llr" else 2):])  # (S, N, K): at most one batch axis
    log_post = jax.jit(log_posteriors_kernel, static_argnums=2)(s, log_p, score_type)
    return _run(_bayes_point, scales, (y, log_post, c, weights), log_post.shape[0], normalize, settings)


@jax.jit
def _parts_and_naive(labels, decisions, costs, weights):
    parts = expected_cost_parts_kernel(labels, decisions, costs, weights)
    return parts, tuple(naive_costs_kernel(labels, c, weights) for c in split_costs(costs))


def sweep_sample_costs_of_decisions(labels: ArrayLike, decisions: ArrayLike, costs: SampleCosts | ArrayLike,
                                    scales: Axis, *,
                                    priors: ArrayLike | None = None, normalize: bool = False,
                                    sample_weight: ArrayLike | None = None,
                                    settings: SweepSettings = SweepSettings()) -> SweepResult:
    """EC (NEC) of fixed ``(S, N)`` decisions at every scale ``s``: ``EC_base + s EC_amount`` (closed form)."""
    y, d, c, weights = decision_inputs(labels, decisions, costs, priors, sample_weight)
    parts, naive = _parts_and_naive(y, d.reshape((-1, d.shape[-1])), c, weights)
    return _run(_linear_point, scales, (parts, naive), parts[0].shape[0], normalize, settings)
