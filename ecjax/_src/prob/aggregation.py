"""Aggregate what the answer cannot tell apart: Dirichlet cells of equal utility, merged exactly.

With a fixed utility matrix ``U`` the yield of a system is

    yield_m = sum_i P_i sum_j U_ij R_m,ij,

so within a class row ``i`` the rates of decisions of equal utility enter
only through their sum.  Group the decisions of row ``i`` by their utility
value: group ``g`` holds the ``s_ig`` decisions with ``U_ij = u_ig``.  By the
aggregation property of the Dirichlet (summing components gives a Dirichlet
with the summed concentrations), when ``R_m,i ~ Dirichlet(n_m,ij + alpha)``
the group sums are

    R_m,ig ~ Dirichlet(n_m,ig + s_ig alpha),   n_m,ig = sum_{j in g} n_m,ij,   (1)

exactly, and ``yield_m = sum_i P_i sum_g u_ig R_m,ig``.  The same holds of
the paired model's joint cells ``(i, d_1, ..., d_M)``
(:mod:`~ecjax._src.prob.paired` eq. 1, prior ``a_J`` per cell): cells whose
utility vectors ``(U_i,d_1, ..., U_i,d_M)`` are equal merge into the cell
``(i, g_1, ..., g_M)`` of concentration ``n + a_J prod_m s_i,g_m``, so ``M``
paired systems under 0-1 costs need ``2^M`` cells per class, whatever ``D``.

The expected cost is ``-yield`` and the normalized one divides the EC of
the row-normalized costs (constant within a group, like ``U``) by the naive
EC ``min_j sum_i P_i C_ij``, which needs the decisions themselves: it is
computed from the original matrix.  The expected yield's closed form and the
ties are computed from the original counts, so only the draws are
aggregated: their distribution is unchanged.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class UtilityGroups(NamedTuple):
    """The decisions of each class row grouped by their utility.

    Attributes:
      group_of: ``(K, D)`` int: the group ``g`` of decision ``j`` in row ``i``.
      sizes: ``(K, G)``: ``s_ig``, the decisions in each group (0: padding,
        where a row has fewer than ``G`` distinct utilities).
      utilities: ``(K, G)``: ``u_ig``, increasing along the row (padding:
        the row's smallest utility, so that row maxima and minima are
        unchanged).
    """

    group_of: np.ndarray
    sizes: np.ndarray
    utilities: np.ndarray

    @property
    def num_groups(self) -> int:
        return int(self.sizes.shape[1])


def utility_groups(utilities: np.ndarray) -> UtilityGroups:
    """Group the decisions of every row of a fixed ``(K, D)`` utility matrix by their (exactly equal) utility."""
    u = np.asarray(utilities, np.float64)
    k, d = u.shape
    # Each row sorted: a new group starts where the value changes; the groups numbered in increasing utility.
    order = np.argsort(u, axis=1, kind="stable")
    ordered = np.take_along_axis(u, order, 1)
    starts = np.ones((k, d), bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    rank = np.cumsum(starts, 1) - 1
    g = int(rank[:, -1].max()) + 1
    group_of = np.empty((k, d), np.int64)
    np.put_along_axis(group_of, order, rank, 1)
    rows = np.repeat(np.arange(k), d)
    sizes = np.bincount(rows * g + rank.ravel(), minlength=k * g).reshape(k, g)
    u_g = np.repeat(ordered[:, :1], g, 1)  # padding: the row's smallest utility
    u_g[rows, rank.ravel()] = ordered.ravel()
    return UtilityGroups(group_of, sizes, u_g)


def aggregate_counts(counts: np.ndarray, groups: UtilityGroups) -> np.ndarray:
    """``(..., K, D)`` counts -> ``(..., K, G)`` group sums ``n_ig = sum_{j in g} n_ij`` (float64, exact)."""
    c = np.asarray(counts, np.float64)
    k, d = c.shape[-2:]
    flat = (np.arange(k)[:, None] * groups.num_groups + groups.group_of).ravel()  # (K D) -> (K G) cell index
    c2 = c.reshape(-1, k * d)
    out = np.zeros((c2.shape[0], k * groups.num_groups))
    np.add.at(out.T, flat, c2.T)
    return out.reshape(c.shape[:-2] + (k, groups.num_groups))


def joint_concentration(cells: np.ndarray, cell_counts: np.ndarray, groups: UtilityGroups,
                        cell_prior: float) -> np.ndarray:
    """Eq. (1) for paired systems: the ``K G^M`` concentrations ``n + a_J prod_m s_i,g_m`` of the merged joint cells.

    Args:
      cells: ``(C, 1 + M)`` occupied joint cells ``(i, d_1, ..., d_M)``.
      cell_counts: ``(C,)`` their (weighted) counts.
      groups: the rows' utility groups.
      cell_prior: ``a_J``, the prior concentration of one joint cell.

    Returns:
      ``(K G^M,)`` in the order of ``(K, G, ..., G)`` (class first, then the
      systems' groups).
    """
    cells = np.asarray(cells, np.int64)
    k, g = groups.sizes.shape
    m = cells.shape[1] - 1
    prior = np.ones((k,) + (1,) * m)
    for j in range(m):
        shape = [k] + [1] * m
        shape[1 + j] = g
        prior = prior * groups.sizes.reshape(shape).astype(np.float64)
    out = cell_prior * prior.reshape(-1)
    index = cells[:, 0]
    for j in range(m):
        index = index * g + groups.group_of[cells[:, 0], cells[:, 1 + j]]
    np.add.at(out, index, np.asarray(cell_counts, np.float64))
    return out
