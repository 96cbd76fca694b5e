"""Merged cells of structured costs, counted from the decisions: :func:`~ecjax.prob.compare` at any ``K``.

Structured costs (:class:`ecjax.costs.StructuredCosts`) give each class row
``i`` at most three utilities: ``wrong_i`` for the ``K - 1`` wrong decisions,
``correct_i`` for ``d = i`` and ``abstain_i`` for ``d = K``.  By the
Dirichlet's aggregation property (:mod:`~ecjax._src.prob.aggregation` eq. 1) the
rates enter every yield only through the sums over these ``G`` (2 or 3)
groups, with concentrations ``n_ig + s_ig alpha`` (``s_ig`` decisions in the
group), and paired systems through the joint cells ``(i, g_1, ..., g_M)``
of concentration ``n + a_J prod_m s_i,g_m``.  Here those counts come from the
labels and decisions directly (a ``bincount``: time ``O(N)``, memory
``O(K G^M)``), never from a ``K x D`` count matrix, so ``K = 10^5`` costs
what ``K = 10`` costs per class.  The draws, the closed-form expected yield
and the naive EC (:func:`ecjax.decisions.naive_expected_cost` of structured
costs, ``O(K)``) then run as for the merged cells of a dense matrix.
"""

from __future__ import annotations

import numpy as np

from ecjax._src.confusion import unique_rows
from ecjax._src.costs import StructuredCosts
from ecjax._src.prob import aggregation

# The groups of a class row, in this order: wrong decisions, the correct one, abstaining.
WRONG, CORRECT, ABSTAIN = 0, 1, 2


def structured_groups(utilities: StructuredCosts) -> aggregation.UtilityGroups:
    """The groups of fixed ``(K,)`` structured utilities (no batch axes), as
    :func:`~ecjax._src.prob.aggregation.utility_groups` gives those of the dense matrix: in each row the groups in
    increasing utility (stable order), so that the draws are those of the dense matrix, number for number, when
    the row's three values differ.  ``group_of[i, t]``: the group of the decisions of type ``t`` (:data:`WRONG`,
    :data:`CORRECT`, :data:`ABSTAIN`) in row ``i``; sizes ``K - 1``, 1, 1; utilities in float64."""
    fields = [utilities.wrong, utilities.correct] + ([] if utilities.abstain is None else [utilities.abstain])
    u = np.stack([np.asarray(x, np.float64) for x in fields], -1)
    k, g = u.shape
    sizes = np.ones((k, g), np.int64)
    sizes[:, WRONG] = k - 1
    order = np.argsort(u, axis=1, kind="stable")
    group_of = np.empty((k, g), np.int64)
    np.put_along_axis(group_of, order, np.broadcast_to(np.arange(g), (k, g)), 1)
    return aggregation.UtilityGroups(group_of, np.take_along_axis(sizes, order, 1), np.take_along_axis(u, order, 1))


def decision_types(labels: np.ndarray, decisions: np.ndarray, num_classes: int) -> np.ndarray:
    """The type of each decision: :data:`CORRECT` where it is the label, :data:`ABSTAIN` where it is ``K``,
    :data:`WRONG` elsewhere (broadcasting ``labels`` ``(N,)`` against ``decisions`` ``(..., N)``)."""
    y = np.asarray(labels, np.int64)
    d = np.asarray(decisions, np.int64)
    return np.where(d == y, CORRECT, np.where(d == num_classes, ABSTAIN, WRONG))


def merged_counts(labels: np.ndarray, decisions: np.ndarray, weights: np.ndarray | None,
                  groups: aggregation.UtilityGroups) -> np.ndarray:
    """``(K, G)`` group counts ``n_ig = sum_n w_n [y_n = i] [d_n in g]`` of one system (float64, exact)."""
    k, g = groups.sizes.shape
    y = np.asarray(labels, np.int64)
    flat = y * g + groups.group_of[y, decision_types(y, decisions, k)]
    return np.bincount(flat, weights=weights, minlength=k * g).reshape(k, g).astype(np.float64)


def tie_signature(labels: list, decisions: list, weights: list | None, num_decisions: int) -> np.ndarray:
    """``(M, U, 1)`` counts of each system over the union of the occupied ``(class, decision)`` cells of all of
    them: two rows are equal exactly when the two systems' ``K x D`` confusion matrices are (ties), at memory
    ``O(sum N_m)``."""
    flat = [np.asarray(y, np.int64) * num_decisions + np.asarray(d, np.int64) for y, d in zip(labels, decisions)]
    cells, inverse = np.unique(np.concatenate(flat), return_inverse=True)
    starts = np.cumsum([0] + [len(f) for f in flat])
    out = np.zeros((len(flat), len(cells)))
    for m in range(len(flat)):
        w = None if weights is None else weights[m]
        out[m] = np.bincount(inverse[starts[m]:starts[m + 1]], weights=w, minlength=len(cells))
    return out[..., None]


def joint_concentration(labels: np.ndarray, decisions: np.ndarray, weights: np.ndarray | None,
                        groups: aggregation.UtilityGroups, cell_prior: float) -> np.ndarray:
    """:func:`~ecjax._src.prob.aggregation.joint_concentration` from the samples: ``(K G^M,)`` concentrations ``n + a_J
    prod_m s_i,g_m`` of the merged joint cells ``(i, g_1, ..., g_M)`` (class first), ``decisions`` ``(M, N)``:
    the occupied cells are those of the samples' decision types, ``O(N)`` of them."""
    k = groups.sizes.shape[0]
    rows = np.concatenate([np.asarray(labels, np.int64)[None], decision_types(labels, decisions, k)], 0).T
    cells, inverse = unique_rows(rows)
    counts = np.bincount(inverse.ravel(), weights=weights, minlength=len(cells))
    return aggregation.joint_concentration(cells, counts, groups, cell_prior)
