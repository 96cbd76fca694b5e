"""The paired model of fixed decisions: a Dirichlet over the joint outcome cells (Bayesian bootstrap).

Each system's joint weights are ``W_m ~ Dirichlet(n_m,ij + alpha)`` over its ``K D`` cells by aggregation
(:mod:`~ecjax._src.prob.paired` eq. 1), drawn together so that the systems' errors stay correlated.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.confusion import JointOutcomeTable, joint_outcome_table
from ecjax._src.prob import paired as paired_mod
from ecjax._src.prob.draw_models.fixed_decisions import fixed_counts, mean_weights
from ecjax._src.prob.draw_models.protocol import FixedModel


class JointState(NamedTuple):
    """The joint outcome table's occupied ``cells`` and their ``cell_counts`` (device), its shape and ``alpha``."""

    cells: Any
    cell_counts: jax.Array
    num_classes: int
    num_decisions: int
    alpha: float


def prepare(labels: ArrayLike, decisions: ArrayLike, alpha: float, k: int, d: int,
            weights: ArrayLike | None = None) -> FixedModel:
    """The model of paired systems' ``(M, N)`` fixed ``decisions`` on one test set (``labels``, ``weights``)."""
    counts = fixed_counts(labels, decisions, k, d, weights).astype(np.float64)
    m = np.shape(decisions)[0]
    table = joint_outcome_table(labels, decisions, num_classes=k, num_decisions=d, sample_weight=weights)
    state = JointState(table.cells, v.to_device(np.asarray(table.counts), jnp.result_type(float)), k, d, float(alpha))
    return FixedModel(draw, state, counts, mean_weights(counts, alpha), max(m * k * d, int(table.cells.shape[0])))


def draw(key: jax.Array, state: JointState, utilities: jax.Array, priors: jax.Array, *,
         num_draws: int) -> jax.Array:
    """``(B, M, K, D)`` joint-probability draws (the utilities and priors do not enter)."""
    table = JointOutcomeTable(state.cells, state.cell_counts, state.num_classes, state.num_decisions)
    return paired_mod.sample_joint_confusions(key, table, num_draws=num_draws, concentration=state.alpha)
