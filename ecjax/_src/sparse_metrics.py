"""Many classes: the metrics of sparse counts and of structured costs, without a ``K x D`` array.

With ``K = 10^5`` classes a dense count or cost matrix holds ``10^10`` cells
(40 GB of float32).  Neither is needed: with the rates ``R_ij = n_ij / n_i``
the expected cost (Ferrer 2022a, eq. 2)

    EC = sum_ij P_i R_ij c_ij = sum_i (P_i / n_i) sum_{occupied cells (i, j)} n_ij c_ij        (1)

reads the costs only at the occupied cells of a sparse table
(:func:`ecjax.confusion.sparse_confusion_matrix`, memory ``O(N)``), and for
structured costs (:class:`ecjax.costs.StructuredCosts`: ``correct_i`` on the
diagonal, ``wrong_i`` elsewhere, ``abstain_i`` in an abstain column ``K``)
a dense count matrix enters only through its diagonal and abstain column:

    EC = sum_i P_i [wrong_i [n_i > 0] + (correct_i - wrong_i) R_ii + (abstain_i - wrong_i) R_iK].   (2)

With the data priors ``P_i = n_i / N`` eq. (1) is the mean cost per sample.
Sums over cells and samples are compensated float32 chunk sums
(:func:`~ecjax._src.confusion.weight_totals`), so ``10^5`` cells keep float32's
relative accuracy.  :mod:`ecjax.metrics` sends a table or structured costs
here, so ``ecjax.expected_cost(table, costs)`` is the same call as for dense
counts.  Memory is ``O(C + K)`` for ``C`` occupied cells.
"""

from __future__ import annotations

from functools import partial

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.confusion import JointOutcomeTable, data_priors, rates, weight_totals
from ecjax._src.costs import StructuredCosts
from ecjax._src.decisions import naive_expected_cost

Costs = StructuredCosts | ArrayLike
Counts = JointOutcomeTable | ArrayLike


def cell_costs(costs: StructuredCosts | jax.Array, labels: jax.Array, decisions: jax.Array) -> jax.Array:
    """Kernel: ``c[y, d]`` of each cell, ``(..., M, C)`` for ``labels`` ``(C,)`` and ``decisions`` ``(M, C)``.

    Structured costs are read from their ``(..., K)`` fields, dense ones
    ``(..., K, D)`` gathered at the cells.
    """
    if not isinstance(costs, StructuredCosts):
        return costs[..., labels[None, :], decisions]
    pick = labels[None, :]
    out = jnp.where(decisions == pick, costs.correct[..., None, labels], costs.wrong[..., None, labels])
    if costs.abstain is not None:
        out = jnp.where(decisions == costs.num_classes, costs.abstain[..., None, labels], out)
    return out


def _compensated_total(x):
    """``sum`` over the last axis by compensated float32 chunk sums (see
    :func:`~ecjax._src.confusion.weight_totals`)."""
    return weight_totals(jnp.zeros(x.shape[-1:], jnp.int32), x, 1)[..., 0]


@partial(jax.jit, static_argnames=("num_classes",))
def table_expected_value(cells: jax.Array, counts: jax.Array, costs: StructuredCosts | jax.Array,
                         priors: jax.Array | None, *, num_classes: int) -> jax.Array:
    """Kernel: eq. (1) for each system of a sparse table, ``(..., M)``; data priors when ``priors`` is None."""
    y, d = cells[:, 0], cells[:, 1:].T
    n = counts.astype(jnp.result_type(float))
    totals = weight_totals(y, n, num_classes)  # n_i
    c = cell_costs(costs, y, d)  # (..., M, C)
    if priors is None:
        return _compensated_total(n * c) / _compensated_total(n)
    per_class = jnp.where(totals > 0, priors / jnp.where(totals > 0, totals, 1.0), 0.0)  # P_i / n_i
    return _compensated_total(n * per_class[..., None, y] * c)


@jax.jit
def structured_expected_value(counts: jax.Array, costs: StructuredCosts | jax.Array,
                              priors: jax.Array | None) -> jax.Array:
    """Kernel: eq. (2) for dense ``(..., K, D)`` counts; data priors when ``priors`` is None.  (Dense costs, which
    :mod:`ecjax.metrics` keeps for itself, give ``sum_ij P_i R_ij c_ij`` as written.)"""
    r = rates(counts)
    p = counts.sum(-1) / counts.sum((-2, -1))[..., None] if priors is None else priors
    if not isinstance(costs, StructuredCosts):
        return jnp.sum(p[..., :, None] * r * costs, (-2, -1))
    k = costs.num_classes
    present = (counts.sum(-1) > 0).astype(r.dtype)
    per_class = costs.wrong * present + (costs.correct - costs.wrong) * jnp.diagonal(r[..., :k], 0, -2, -1)
    if costs.abstain is not None:
        per_class = per_class + (costs.abstain - costs.wrong) * r[..., k]
    return jnp.sum(p * per_class, -1)


@partial(jax.jit, static_argnames=("num_classes", "balanced"))
def table_accuracy(cells: jax.Array, counts: jax.Array, *, num_classes: int, balanced: bool = False) -> jax.Array:
    """Kernel: ``(M,)`` accuracies of a sparse table, or with ``balanced`` the mean recall over present classes."""
    y, d = cells[:, 0], cells[:, 1:].T
    n = counts.astype(jnp.result_type(float))
    hit = jnp.where(d == y[None, :], n, 0.0)  # (M, C)
    if not balanced:
        return _compensated_total(hit) / _compensated_total(n)
    totals = weight_totals(y, n, num_classes)
    correct = weight_totals(jnp.broadcast_to(y, hit.shape), hit, num_classes)  # (M, K)
    present = totals > 0
    recall = jnp.where(present, correct / jnp.where(present, totals, 1.0), 0.0)
    return jnp.sum(recall, -1) / jnp.sum(present)


# ------------------------------------------------------------- public calls

def _class_totals(table: JointOutcomeTable) -> np.ndarray:
    return np.bincount(np.asarray(table.cells[:, 0]), weights=np.asarray(table.counts, np.float64),
                       minlength=table.num_classes)


def _checked(counts: Counts, costs: Costs | None, priors: ArrayLike | None, name: str = "costs"):
    """The counts (a table, or dense counts), costs (structured, or dense) and priors, checked against each other;
    the priors are ``None`` for the data priors."""
    totals: ArrayLike
    if isinstance(counts, JointOutcomeTable):
        k, d, totals = counts.num_classes, counts.num_decisions, _class_totals(counts)
        v.check_some_weight(totals)
    else:
        counts = v.as_counts(counts, nonzero=True)
        k, d = counts.shape[-2:]
        totals = counts.sum(-1)  # traced under jit: the priors check then passes (the NaN contract)
    if costs is not None and not isinstance(costs, StructuredCosts):
        costs = v.as_matrix(costs, name, shape=(k, d))
    elif costs is not None:
        v.check_cost_size(costs.num_classes, costs.num_decisions, k, d, name)
    p = None
    if priors is not None:
        p = v.as_priors(priors, num_classes=k)
        v.check_priors_cover(totals, p)
    return counts, costs, p


def _padded(table: JointOutcomeTable) -> tuple[np.ndarray, np.ndarray]:
    """The cells and counts padded with empty cells (class 0, decision 0, count 0: they add nothing) to
    :func:`~ecjax._src.inputs.bucket_length`, so that tables of similar sizes share one compiled kernel."""
    return (v.pad_to_bucket(np.asarray(table.cells), minimum=256),
            v.pad_to_bucket(np.asarray(table.counts), minimum=256))


def _expected(counts, costs, p):
    if isinstance(counts, JointOutcomeTable):
        out = table_expected_value(*_padded(counts), costs, p, num_classes=counts.num_classes)
        return out[..., 0] if counts.one_system else out
    return structured_expected_value(counts, costs, p)


def _data_priors(counts):
    if isinstance(counts, JointOutcomeTable):
        totals = _class_totals(counts)
        return totals / totals.sum()
    return data_priors(counts)


def expected_cost(counts: Counts, costs: Costs, *, priors: ArrayLike | None = None) -> jax.Array:
    """:func:`ecjax.expected_cost` of a sparse table (eq. 1) or of structured costs (eq. 2).

    A table of ``M`` systems gives ``(..., M)`` (one system's ``(N,)``
    decisions: a scalar); dense counts ``(..., K, D)`` give ``(...)``.
    """
    return _expected(*_checked(counts, costs, priors))


def utility_yield(counts: Counts, utilities: Costs, *, priors: ArrayLike | None = None) -> jax.Array:
    """:func:`ecjax.utility_yield` of a sparse table or of structured utilities: eqs. (1)-(2) with ``U`` for ``c``."""
    return _expected(*_checked(counts, utilities, priors, "utilities"))


_naive_expected_cost = jax.jit(naive_expected_cost)  # one program, not one per eager operation


def normalized_expected_cost(counts: Counts, costs: Costs, *, priors: ArrayLike | None = None) -> jax.Array:
    """:func:`ecjax.normalized_expected_cost`: the EC over the best naive EC ``min_d sum_i c_id P_i`` (Ferrer 2022a,
    eqs. 3-4), the naive EC of structured costs in ``O(K)`` (:func:`ecjax.decisions.naive_expected_cost`)."""
    counts, costs, p = _checked(counts, costs, priors)
    weights = jnp.asarray(_data_priors(counts) if p is None else p, jnp.result_type(float))
    naive = _naive_expected_cost(costs, weights)
    v.check_naive_cost_positive(naive)
    ec = _expected(counts, costs, p)
    per_system = isinstance(counts, JointOutcomeTable) and not counts.one_system
    return ec / (naive[..., None] if per_system else naive)


def accuracy(counts: JointOutcomeTable) -> jax.Array:
    """:func:`ecjax.accuracy` of a sparse table: the share of the samples (weights) on its diagonal cells."""
    _checked(counts, None, None)
    out = table_accuracy(*_padded(counts), num_classes=counts.num_classes)
    return out[0] if counts.one_system else out


def balanced_accuracy(counts: JointOutcomeTable) -> jax.Array:
    """:func:`ecjax.balanced_accuracy` of a sparse table: the mean recall over the classes it holds."""
    _checked(counts, None, None)
    out = table_accuracy(*_padded(counts), num_classes=counts.num_classes, balanced=True)
    return out[0] if counts.one_system else out
