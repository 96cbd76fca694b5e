"""Paired comparisons: a Dirichlet over the occupied joint-outcome cells.

Systems scored on the same samples are correlated: when one errs on a hard
sample, so does the other.  The joint outcome table of
:func:`ecjax.confusion.joint_outcome_table` lists each occupied cell
``c = (true class, decision of system 1, ..., decision of system M)`` with
its count ``n_c``.  The posterior of the cell probabilities is

    w ~ Dirichlet(n_c + alpha over the occupied cells),

which for ``alpha = 0`` (the default) is the Bayesian bootstrap (Rubin
1981): resampling whole samples with Dirichlet weights, so the systems keep
their pairing.  Every system's confusion matrix is a marginal of ``w``, so
the draws cost ``O(cells)``, not ``O(N)``.  The class frequencies are the
class marginals of ``w`` (uncertain data priors); deployment priors can
replace them (each class row is then renormalized into rates).

Clustered samples (several per patient, speaker or document): with a group
id per sample, a two-level Bayesian bootstrap draws a weight ``G_g ~
Gamma(1)`` per group and, inside each group, Dirichlet weights over its own
occupied cells; the cell weight is ``G_g n_g w_gc``.  This mirrors
``confidence-intervals``' resampling of conditions then of samples within
them (whose expected weight of a group is also proportional to its size).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

import jax
import jax.numpy as jnp

from ecjax import _validate as v
from ecjax.confusion import JointOutcomeTable, joint_outcome_table
from ecjax.prob._sampling import dirichlet_draws, gamma_draws
from ecjax.prob.rates import check_concentration

DEFAULT_CONCENTRATION = 0.0


@dataclass(frozen=True)
class ClusteredOutcomeTable:
    """Joint outcome cells per group (cluster) of samples.

    Attributes:
      cells: ``(C, 1 + M)`` int32; column 0 the true class.
      groups: ``(C,)`` int32 group index in ``[0, G)`` of each cell.
      counts: ``(C,)`` counts of each (group, cell).
      num_groups, num_classes, num_decisions: ``G``, ``K``, ``D``.
    """

    cells: jax.Array
    groups: jax.Array
    counts: jax.Array
    num_groups: int
    num_classes: int
    num_decisions: int

    @property
    def num_systems(self) -> int:
        return self.cells.shape[1] - 1


def clustered_outcome_table(labels, decisions, groups, *, num_classes=None, num_decisions=None):
    """Group the samples' joint outcomes by cluster id (``groups``: ``(N,)`` hashable ids)."""
    table = joint_outcome_table(labels, decisions, num_classes=num_classes, num_decisions=num_decisions)
    labels = np.asarray(labels)
    decisions = np.asarray(decisions)
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] != labels.shape[-1]:
        raise v.InputError(
            f"`groups` must be a vector with one id per sample ({labels.shape[-1]}), got shape {g.shape}")
    _, gid = np.unique(g, return_inverse=True)
    rows = np.concatenate([gid.reshape(1, -1), labels.reshape(1, -1), decisions.reshape(-1, labels.shape[-1])], 0).T
    uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
    counts = np.bincount(inverse.ravel(), minlength=len(uniq)).astype(np.int32)
    return ClusteredOutcomeTable(
        jnp.asarray(uniq[:, 1:], jnp.int32), jnp.asarray(uniq[:, 0], jnp.int32), jnp.asarray(counts),
        int(gid.max()) + 1, table.num_classes, table.num_decisions,
    )


def _marginal_counts(weights, cells, num_classes, num_decisions):
    """Cell weights ``(S, C)`` -> per-system weighted confusion matrices ``(S, M, K, D)``."""
    s = weights.shape[0]
    m = cells.shape[1] - 1
    outs = []
    for j in range(m):
        seg = cells[:, 0] * num_decisions + cells[:, 1 + j]
        # segment_sum over cells is O(S C) per system, where a one-hot GEMM would be O(S C K D).
        summed = jax.ops.segment_sum(weights.T, seg, num_segments=num_classes * num_decisions)
        outs.append(summed.T.reshape(s, num_classes, num_decisions))
    return jnp.stack(outs, 1)


@partial(jax.jit, static_argnames=("num_draws", "num_classes", "num_decisions"))
def _paired_kernel(key, cells, counts, concentration, *, num_draws, num_classes, num_decisions):
    w = dirichlet_draws(key, counts + concentration, num_draws)
    return _marginal_counts(w, cells, num_classes, num_decisions)


def sample_joint_confusions(key, table: JointOutcomeTable, *, num_draws: int, concentration=DEFAULT_CONCENTRATION):
    """Posterior draws of every system's joint (class, decision) probabilities, paired.

    Args:
      key: ``jax.random`` key.
      table: :class:`ecjax.confusion.JointOutcomeTable` of the ``M`` systems.
      num_draws: ``S``.
      concentration: ``alpha`` added to each *occupied* cell (0: Bayesian bootstrap).

    Returns:
      ``(S, M, K, D)`` probabilities summing to 1 over ``(K, D)``: usable as
      weighted counts by :func:`ecjax.metrics.expected_value` (rates are
      their row-normalization, data priors their row sums).
    """
    if not isinstance(table, JointOutcomeTable):
        raise v.InputError(f"`table` must be an ecjax.confusion.JointOutcomeTable, got {type(table).__name__}")
    num_draws = v.as_positive_int(num_draws, "num_draws")
    alpha = check_concentration(concentration)
    return _paired_kernel(key, table.cells, jnp.asarray(table.counts, jnp.result_type(float)), alpha,
                          num_draws=num_draws, num_classes=table.num_classes, num_decisions=table.num_decisions)


@partial(jax.jit, static_argnames=("num_draws", "num_groups", "num_classes", "num_decisions"))
def _clustered_kernel(key, cells, groups, counts, concentration, *, num_draws, num_groups, num_classes,
                      num_decisions):
    key_group, key_cell = jax.random.split(key)
    f = jnp.result_type(float)
    group_weight = gamma_draws(key_group, jnp.ones(num_groups, f), num_draws, small_shapes=False)
    cell = gamma_draws(key_cell, counts + concentration, num_draws)
    within = jax.ops.segment_sum(cell.T, groups, num_segments=num_groups).T  # (S, G)
    size = jax.ops.segment_sum(counts, groups, num_segments=num_groups)  # n_g
    scale = group_weight * size / jnp.where(within > 0, within, 1.0)
    w = cell * scale[:, groups]
    w = w / w.sum(-1, keepdims=True)
    return _marginal_counts(w, cells, num_classes, num_decisions)


def sample_clustered_confusions(key, table: ClusteredOutcomeTable, *, num_draws: int,
                                concentration=DEFAULT_CONCENTRATION):
    """Two-level Bayesian bootstrap: groups, then the occupied cells within each group.

    Returns ``(S, M, K, D)`` joint probabilities, like :func:`sample_joint_confusions`.
    """
    if not isinstance(table, ClusteredOutcomeTable):
        raise v.InputError(f"`table` must be a ClusteredOutcomeTable, got {type(table).__name__}")
    num_draws = v.as_positive_int(num_draws, "num_draws")
    alpha = check_concentration(concentration)
    return _clustered_kernel(key, table.cells, table.groups, jnp.asarray(table.counts, jnp.result_type(float)), alpha,
                             num_draws=num_draws, num_groups=table.num_groups, num_classes=table.num_classes,
                             num_decisions=table.num_decisions)
