"""Fixed counts drawn over their occupied cells only (:mod:`~ecjax._src.prob.occupied_cells`), the empty ones' mass in
closed form: with drawn utilities nothing merges, but most cells of a large confusion matrix are empty.

Each row's (or the joint table's) empty cells get their mass as a Gamma total split by stick breaking
(:mod:`~ecjax._src.prob.occupied_cells` eq. 1: exact in distribution up to a ``1e-12`` truncation of the sticks).  The
draw never forms the ``(B, M, K, D)`` weights: :func:`block_outputs` draws and evaluates in one program.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import jax
from jax.typing import ArrayLike

from ecjax._src.prob import occupied_cells
from ecjax._src.prob.draw_models.joint import JointState
from ecjax._src.prob.draw_models.protocol import BlockDraws, Centre, FixedModel
from ecjax._src.prob.draw_models.unpaired import UnpairedState

# Private switch: "auto" (the cheaper draw), "always" (the occupied cells whenever they apply) or "never" (every
# cell, as before); the tests compare them.
_OCCUPIED_CELLS = "auto"


class CellsState(NamedTuple):
    """The occupied cells' ``table`` and the doubt components' fixed parts (computed once on the host, see
    :func:`prepare` and :func:`~ecjax._src.prob.occupied_cells.component_parts`)."""

    table: Any
    parts: occupied_cells.ComponentParts


def prepare(model: FixedModel, u_hat: ArrayLike, p_bar: ArrayLike, alpha: float, joint_priors: bool) -> FixedModel:
    """``model`` drawn over its occupied cells (:mod:`~ecjax._src.prob.occupied_cells`) when that is the cheaper draw.

    The occupied-cell draw is exact (up to the sticks' ``1e-12``
    truncation) and is used when its random variates per draw (the padded
    occupied cells, ``T + 1`` per prior field) are fewer than half the
    ``M K D`` rate cells of the dense draw: at 100 classes of 100 samples
    each, about 10^4 against 3 x 10^4; at 10 classes of 1000 samples the
    dense draw stays.  ``counts`` (ties) and ``mean_weights`` (the
    closed-form expected yield) are unchanged; the doubt components' fixed
    parts come precomputed: ``costs_coef`` ``(M, K)``, ``P_i / (n_m,i + D
    alpha)`` (``1 / (N + K D alpha)`` with the test set's frequencies), and
    ``priors_rows`` ``(M, K)``, ``sum_j U_hat_ij E[R_m,ij]``.
    """
    if _OCCUPIED_CELLS == "never" or not isinstance(model.state, (UnpairedState, JointState)):
        return model
    m, k, d = model.counts.shape
    if isinstance(model.state, UnpairedState):
        table = occupied_cells.unpaired_cells(model.counts, alpha)
    else:
        table = occupied_cells.joint_cells(np.asarray(model.state.cells), np.asarray(model.state.cell_counts),
                                           num_classes=k, num_decisions=d, alpha=alpha)
    if _OCCUPIED_CELLS == "auto" and 2 * occupied_cells.variates(table) >= m * k * d:
        return model
    assert model.mean_weights is not None  # the unpaired and joint models have a closed-form mean
    row_weight = model.counts.sum(-1) + d * alpha  # (M, K): n_m,i + D alpha
    if joint_priors:
        costs_coef = np.broadcast_to(1.0 / row_weight.sum(-1, keepdims=True), (m, k))
    else:
        costs_coef = np.asarray(p_bar, np.float64) / row_weight
    priors_rows = np.einsum("ij,mij->mi", np.asarray(u_hat, np.float64), model.mean_weights) / row_weight
    parts = occupied_cells.component_parts(table, np.asarray(u_hat, np.float64), costs_coef, priors_rows)
    return model._replace(draw=None, state=CellsState(table, parts), elements=occupied_cells.plan_elements(table))


def block_outputs(key: jax.Array, state: CellsState, draws: BlockDraws, centre: Centre, *, joint_priors: bool,
                  block: int, components: tuple[str, ...]) -> dict[str, jax.Array]:
    """A block of fixed counts drawn over their occupied cells only: the yield, EC, NEC and ``components`` draws."""
    return occupied_cells.cell_outputs(key, state.table, draws.utilities, draws.priors, draws.rates_priors, state.parts,
                                       joint_priors=joint_priors, block=block, components=components)
