"""The one protocol of :func:`~ecjax.prob.compare`'s draw models (BlackJAX's shape: pure functions over a typed state).

Each model module has

* ``prepare(...) -> model``: the host-side work done once (counts, outcome tables, concentrations) into a small typed
  state, a ``NamedTuple`` of arrays and the static numbers its kernels need;
* ``draw(key, state, utilities, priors, *, num_draws) -> weights``: one block of ``num_draws`` posterior draws of the
  systems' ``(B, M, K, D)`` weights (rates, or paired joint probabilities), plain Python over jitted kernels.  The
  block's ``(B, K, D)`` utilities and ``(B, K)`` priors come in for the models whose weights depend on them (per-draw
  decisions decide with them); the models of fixed counts ignore them.

The models of fixed counts (:mod:`~ecjax._src.prob.draw_models.unpaired`, :mod:`~ecjax._src.prob.draw_models.joint`,
:mod:`~ecjax._src.prob.draw_models.clustered`, :mod:`~ecjax._src.prob.draw_models.merged`) prepare a
:class:`FixedModel`, which carries its ``draw`` with its state, so that the draw loop calls
``model.draw(key, model.state, ...)`` without asking which model it holds.  The occupied-cell model
(:mod:`~ecjax._src.prob.draw_models.occupied`) never forms the ``(B, M, K, D)`` weights (that is its point): its
``block_outputs`` draws and evaluates in one program.  Per-draw decisions
(:mod:`~ecjax._src.prob.draw_models.per_draw`) split ``draw`` into ``decide`` (the counts of each draw's Bayes
decisions) and ``draw_given`` (the posterior weights given them), which the doubt components reuse.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import numpy as np

import jax


class Draw(Protocol):
    """``draw(key, state, utilities, priors, *, num_draws) -> (B, M, K, D) weights`` of one model."""

    def __call__(self, key: jax.Array, state: Any, utilities: jax.Array, priors: jax.Array, *,
                 num_draws: int) -> jax.Array: ...


class Centre(NamedTuple):
    """The doubt components' fixed point, on the device.

    ``utilities``: ``U_hat`` (or, for merged cells, the ``(K, G)`` utilities of
    the groups the weights are drawn over); ``priors``: ``E[P]``;
    ``mean_weights``: the posterior mean weights of fixed counts (``None``
    where no component reads them, or until the Monte Carlo pass made them).
    """

    utilities: jax.Array
    priors: jax.Array
    mean_weights: jax.Array | None


class BlockDraws(NamedTuple):
    """One block's draws of the sources other than the rates (a certain source comes in broadcast at its mean).

    ``utilities``: ``(B, K, D)``; ``priors``: ``(B, K)`` of the ``all``
    posterior; ``rates_priors``: ``(B, K)`` of the ``rates_only`` component
    (the drawn test-set frequencies, or ``E[P]``).
    """

    utilities: jax.Array
    priors: jax.Array
    rates_priors: jax.Array


class Merged(NamedTuple):
    """What merged cells (:mod:`~ecjax._src.prob.aggregation`) change in the evaluation, on the device.

    ``utilities``: the ``(K, G)`` utilities of the groups; ``mean_weights``:
    their posterior mean weights; ``naive_costs``: the row-normalized costs
    of the naive EC (of the decisions, not of the groups).
    """

    utilities: jax.Array
    mean_weights: jax.Array
    naive_costs: Any


class FixedModel(NamedTuple):
    """A prepared model of fixed counts: its ``draw`` and ``state``, and what the host reads of it.

    ``counts``: ``(M, K, D)`` per-system counts (the ties);
    ``mean_weights``: ``(M, K, D)`` ``n_m,ij + alpha``, the closed-form
    expected yield's (``None``: no closed form, the Monte Carlo mean of the
    draws); ``elements``: the largest per-draw intermediate (the draw plan);
    ``columns``: the columns of the drawn weights when cells are merged
    (``0``: ``D``); ``merged``: see :class:`Merged`.
    """

    draw: Draw | None
    state: Any
    counts: np.ndarray
    mean_weights: np.ndarray | None
    elements: int
    columns: int = 0
    merged: Merged | None = None
