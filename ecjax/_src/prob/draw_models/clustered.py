"""The clustered model: a cluster Bayesian bootstrap, one ``Dirichlet(1)`` weight per group of samples.

Its posterior mean has no closed form: the draw loop sums the draws for their Monte Carlo mean
(:attr:`~ecjax._src.prob.draw_models.protocol.FixedModel.mean_weights` is ``None``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.prob import paired as paired_mod
from ecjax._src.prob.draw_models.fixed_decisions import fixed_counts
from ecjax._src.prob.draw_models.protocol import FixedModel


class ClusteredState(NamedTuple):
    """The clustered outcome table (:class:`ecjax.prob.ClusteredOutcomeTable`'s fields) and ``alpha``."""

    cells: Any
    groups: Any
    cell_counts: jax.Array
    num_groups: int
    num_classes: int
    num_decisions: int
    alpha: float


def prepare(labels: ArrayLike, decisions: ArrayLike, groups: ArrayLike, alpha: float, k: int, d: int,
            weights: ArrayLike | None = None) -> FixedModel:
    """The model of ``(M, N)`` fixed ``decisions`` on one test set whose samples come in ``groups`` ``(N,)``."""
    counts = fixed_counts(labels, decisions, k, d, weights).astype(np.float64)
    m = np.shape(decisions)[0]
    table = paired_mod.clustered_outcome_table(labels, decisions, groups, num_classes=k, num_decisions=d,
                                               sample_weight=weights)
    state = ClusteredState(table.cells, table.groups, v.to_device(table.counts, jnp.result_type(float)),
                           table.num_groups, k, d, float(alpha))
    return FixedModel(draw, state, counts, None, max(m * k * d, 2 * int(table.counts.shape[0])))


def draw(key: jax.Array, state: ClusteredState, utilities: jax.Array, priors: jax.Array, *,
         num_draws: int) -> jax.Array:
    """``(B, M, K, D)`` joint-probability draws (the utilities and priors do not enter)."""
    table = paired_mod.ClusteredOutcomeTable(state.cells, state.groups, state.cell_counts, state.num_groups,
                                             state.num_classes, state.num_decisions)
    return paired_mod.sample_clustered_confusions(key, table, num_draws=num_draws, concentration=state.alpha)
