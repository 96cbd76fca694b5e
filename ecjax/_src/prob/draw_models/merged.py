"""Merged cells: with fixed utilities, the rates of decisions of equal utility drawn as one (exact).

The rates enter every yield only through the sums over each class's groups of equal utility, so the draws are over
the merged cells (:mod:`~ecjax._src.prob.aggregation` eq. 1, the Dirichlet's aggregation property): ``G`` per class
unpaired, ``K G^M`` joint cells paired.  Only the draws change: the per-system counts (ties) and the closed-form mean
weights stay those of the decisions, and the NEC's naive EC is computed from the original matrix: two cells per class
under 0-1 costs (unpaired), ``2^M`` per class for ``M`` paired systems, whatever ``D``.  Structured costs
(:mod:`~ecjax._src.prob.structured_cells`) are counted into their groups straight from the decisions, without a
``K x D`` array.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from ecjax._src import inputs as v
from ecjax._src.costs import StructuredCosts, costs_to_utilities, normalize_rows
from ecjax._src.prob import aggregation
from ecjax._src.prob import paired as paired_mod
from ecjax._src.prob import structured_cells
from ecjax._src.prob.draw_models.joint import JointState
from ecjax._src.prob.draw_models.protocol import FixedModel, Merged
from ecjax._src.prob.draw_models.unpaired import UnpairedState
from ecjax._src.prob.rates import check_rows_for_concentration
from ecjax._src.prob.sampling import dirichlet_draws

# Merged joint cells (ecjax._src.prob.aggregation) are drawn densely: at most this many per draw.
_MAX_MERGED_JOINT_CELLS = 1 << 16
# Private switch: False draws every cell, as before the merging (the tests compare the two).
_MERGE_CELLS = True


class MergedState(NamedTuple):
    """The Dirichlet ``concentration`` of the merged cells (device): ``(M, K, G)`` rows, or the ``K G^M`` joint cells
    of ``joint`` (paired) systems."""

    concentration: jax.Array
    num_systems: int
    num_classes: int
    num_groups: int
    joint: bool


@partial(jax.jit, static_argnames=("num_draws",))
def _merged_rates(key, concentration, *, num_draws):
    # Jitted as a whole, as per_draw.per_draw_rates: the same concentrations in every block, no host round trip.
    return dirichlet_draws(key, concentration, num_draws)


def draw(key: jax.Array, state: MergedState, utilities: jax.Array, priors: jax.Array, *,
         num_draws: int) -> jax.Array:
    """``(B, M, K, G)`` draws of the merged cells' rates (unpaired) or joint probabilities (paired)."""
    if not state.joint:
        return _merged_rates(key, state.concentration, num_draws=num_draws)
    return paired_mod.merged_joint_confusions(key, state.concentration, num_draws=num_draws,
                                              num_systems=state.num_systems, num_classes=state.num_classes,
                                              num_groups=state.num_groups)


def merge(model: FixedModel, u_hat: np.ndarray, alpha: float) -> FixedModel:
    """Fixed utilities: ``model`` with its cells of equal utility merged (:mod:`~ecjax._src.prob.aggregation` eq. 1).

    ``model`` itself when nothing merges (every row's utilities distinct), for
    the clustered model, or when the paired model's merged table (``K G^M``
    cells, all drawn) would not be smaller than its draws over the occupied
    cells.  Only the draws change: ``counts`` (ties) and ``mean_weights``
    (the closed-form expected yield) stay those of the decisions.
    """
    if not _MERGE_CELLS or not isinstance(model.state, (UnpairedState, JointState)):
        return model
    m, k, d = model.counts.shape
    groups = aggregation.utility_groups(u_hat)
    g = groups.num_groups
    if g >= d:
        return model
    f = jnp.result_type(float)
    mean = aggregation.aggregate_counts(model.counts, groups) + alpha * groups.sizes  # n_ig + s_ig alpha
    centre = Merged(v.to_device(groups.utilities, f), v.to_device(mean, f),
                    v.to_device(np.asarray(normalize_rows(-u_hat), np.float64), f))
    if isinstance(model.state, UnpairedState):
        return model._replace(draw=draw, state=MergedState(v.to_device(mean, f), m, k, g, False), elements=m * k * g,
                              columns=g, merged=centre)
    cells = k * g ** m
    if cells > _MAX_MERGED_JOINT_CELLS or cells >= model.elements:
        return model
    # a_J = alpha / D^(M-1): the prior of one of the K D^M joint cells (ecjax._src.prob.paired eq. 1).
    concentration = aggregation.joint_concentration(np.asarray(model.state.cells),
                                                    np.asarray(model.state.cell_counts), groups, alpha / d ** (m - 1))
    return model._replace(draw=draw, state=MergedState(v.to_device(concentration, f), m, k, g, True),
                          elements=max(m * k * g, cells), columns=g, merged=centre)


def structured(labels: list, decisions: list, weights: list | None, costs: StructuredCosts, alpha: float, d: int, *,
               shared_labels: np.ndarray | None = None,
               shared_weights: np.ndarray | None = None) -> tuple[FixedModel, np.ndarray]:
    """Fixed structured costs: the model of their merged cells (:mod:`~ecjax._src.prob.structured_cells`), counted from
    each system's ``decisions`` on its ``labels`` (``weights``: its sample weights; paired systems: ``shared_labels``
    and ``shared_weights``, their one test set), and the ``(K, G)`` group utilities (what the draws, the closed-form
    expected yield and ``expected_utility_matrix`` read; ``G`` = wrong, correct (, abstain))."""
    groups = structured_cells.structured_groups(costs)
    m, (k, g), f = len(decisions), groups.sizes.shape, jnp.result_type(float)
    per_system = [None] * m if weights is None else weights
    counts = np.stack([structured_cells.merged_counts(lab, x, w, groups)
                       for lab, x, w in zip(labels, decisions, per_system)])
    check_rows_for_concentration(counts, alpha)
    mean = counts + alpha * groups.sizes  # n_ig + s_ig alpha (ecjax._src.prob.aggregation eq. 1)
    naive = normalize_rows(costs_to_utilities(costs))  # the normalized costs, structured: the naive EC in O(K)
    centre = Merged(v.to_device(groups.utilities, f), v.to_device(mean, f),
                    jax.tree.map(lambda x: v.to_device(np.asarray(x), f), naive))
    ties = structured_cells.tie_signature(labels, decisions, weights, d)
    if shared_labels is None:
        return FixedModel(draw, MergedState(v.to_device(mean, f), m, k, g, False), ties, mean, m * k * g, columns=g,
                          merged=centre), groups.utilities
    # a_J = alpha / D^(M-1): the prior of one of the K D^M joint cells (ecjax._src.prob.paired eq. 1).
    concentration = structured_cells.joint_concentration(shared_labels, np.stack(decisions), shared_weights,
                                                         groups, alpha / d ** (m - 1))
    return FixedModel(draw, MergedState(v.to_device(concentration, f), m, k, g, True), ties, mean,
                      max(m * k * g, k * g ** m), columns=g, merged=centre), groups.utilities

