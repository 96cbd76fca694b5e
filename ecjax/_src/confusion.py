"""Counts: confusion matrices, rates and joint (paired) outcome tables.

Conventions: a count matrix has shape ``(..., K, D)`` with row ``i`` the true
class and column ``j`` the decision (Ferrer 2022a, §2, ``K_ij``).  Counts are exact
``int32`` unless sample weights are given (at most ``2**31 - 1`` samples per
matrix on the device; beyond that :func:`confusion_matrix` counts on the host
in ``int64``).  Weighted counts are summed in float64 on the host for
concrete input and by compensated float32 chunk sums under ``jit``, never by
one float32 running sum (which stops growing at ``2**24``).  Sums of counts (class totals, rates, priors) are taken in
floating point, never in ``int32``, so they cannot wrap.

Under ``jit``/``vmap`` (see :mod:`ecjax.inputs`, the NaN contract) a count
matrix built from an invalid index has every cell ``-1`` (``NaN`` for
weighted counts), and :func:`rates` / :func:`data_priors` of a matrix with a
negative count are ``NaN``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import math
from functools import partial

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v

# Above this many samples per matrix, int32 device counts could wrap: count on the host in int64.
_DEVICE_COUNT_LIMIT = v.INT32_MAX


# Above this many samples per matrix, weighted counts on the device are float32 sums of one chunk at a time,
# combined by compensated (two-float) addition: one float32 running sum stops growing at 2**24 unit weights.
_WEIGHT_CHUNK = 4096


def confusion_counts(labels: ArrayLike, decisions: ArrayLike, weights: ArrayLike | None = None, *,
                     num_classes: int, num_decisions: int) -> jax.Array:
    """Kernel: ``K_ij = sum_n w_n [y_n = i][d_n = j]`` over the last axis.

    ``labels`` and ``decisions`` broadcast against each other on their leading
    axes (one label vector shared by ``M`` systems, say).  No validation.

    Unweighted counts are exact ``int32``.  Weighted counts of concrete
    input are summed on the host in float64 and rounded once to the float
    dtype; traced (``jit``) weights are summed in float32 over chunks of
    4096 samples whose totals are combined by compensated (two-float)
    addition, so the sum keeps growing past ``2**24`` (unit weights: exact
    to ``2**48``; any weights: the error of a 4096-term float32 sum).
    """
    if weights is not None and not v.any_traced(labels, decisions, weights):
        return _host_weighted_counts(labels, decisions, weights, num_classes, num_decisions)
    return _device_counts(labels, decisions, weights, num_classes=num_classes, num_decisions=num_decisions)


@partial(jax.jit, static_argnames=("num_classes", "num_decisions"))
def _device_counts(labels, decisions, weights=None, *, num_classes, num_decisions):
    labels, decisions = jnp.broadcast_arrays(labels, decisions)
    flat = labels * num_decisions + decisions
    size = num_classes * num_decisions
    if weights is not None:
        weights = jnp.broadcast_to(weights, flat.shape)
    counts = _scatter_counts(flat, size, weights)
    return counts.reshape(flat.shape[:-1] + (num_classes, num_decisions))


def weight_totals(segment_ids: ArrayLike, weights: ArrayLike, num_segments: int) -> jax.Array:
    """Kernel: ``T_s = sum_n w_n [id_n = s]`` over the last axis, ``(..., num_segments)``.

    ``jax.ops.segment_sum`` with the summation of :func:`confusion_counts`:
    float32 sums of 4096 samples combined by compensated addition, so
    ``10**7`` normalized weights keep ~1e-7 relative accuracy (one running
    float32 sum: 2e-3).  Ids must lie in ``[0, num_segments)`` (no validation).
    """
    ids, w = jnp.broadcast_arrays(jnp.asarray(segment_ids), jnp.asarray(weights))
    return _scatter_counts(ids, num_segments, w)


def _host_weighted_counts(labels, decisions, weights, k, d):
    """Weighted counts summed in float64 on the host (``np.bincount``), rounded once to the float dtype."""
    y, dec, w = np.broadcast_arrays(np.asarray(labels), np.asarray(decisions), np.asarray(weights, np.float64))
    flat = (y.astype(np.int64) * d + dec).reshape(-1, y.shape[-1])
    w2 = w.reshape(flat.shape)
    out = np.stack([np.bincount(f, weights=ww, minlength=k * d) for f, ww in zip(flat, w2)])
    return v.to_device(out.reshape(y.shape[:-1] + (k, d)), jnp.result_type(float))


def _scatter_counts(flat, size, weights):
    # A scatter-add never materializes the (N, K*D) one-hot matrix: on CPU it
    # is 10x to 5000x faster than summing one-hot rows (20 systems x 4000
    # samples x 100 classes: 0.5 ms against 2.9 s), and its memory is O(K*D).
    def one(f, w):
        zeros = jnp.zeros(size, jnp.int32 if w is None else w.dtype)
        return zeros.at[f].add(1 if w is None else w)

    batch = flat.shape[:-1]
    f2 = flat.reshape((-1, flat.shape[-1]))
    if weights is None:
        out = jax.vmap(lambda f: one(f, None))(f2)
    elif f2.shape[-1] <= _WEIGHT_CHUNK:
        out = jax.vmap(one)(f2, weights.reshape(f2.shape))
    else:
        out = _chunked_weighted_sums(f2, weights.reshape(f2.shape), jax.vmap(one))
    return out.reshape(batch + (size,))


def _chunked_weighted_sums(flat, weights, scatter):
    """``scatter`` of ``_WEIGHT_CHUNK`` samples at a time, chunk totals added with Knuth's TwoSum.

    ``hi + lo`` carries the running sum in two floats: ``lo`` holds what
    rounding ``hi + part`` dropped, so the total has about twice float32's
    precision instead of stalling once ``hi`` outgrows a chunk's total.
    """
    rows, n = flat.shape
    pad = (-n) % _WEIGHT_CHUNK
    # Padding adds weight 0 to cell 0: nothing.
    f = jnp.pad(flat, ((0, 0), (0, pad))).reshape(rows, -1, _WEIGHT_CHUNK).transpose(1, 0, 2)
    w = jnp.pad(weights, ((0, 0), (0, pad))).reshape(rows, -1, _WEIGHT_CHUNK).transpose(1, 0, 2)

    def add_chunk(carry, chunk):
        hi, lo = carry
        part = scatter(*chunk)
        total = hi + part
        back = total - hi
        dropped = (hi - (total - back)) + (part - back)  # TwoSum: hi + part == total + dropped exactly
        return (total, lo + dropped), None

    zeros = jnp.zeros((rows, scatter(f[0], w[0]).shape[-1]), weights.dtype)
    (hi, lo), _ = jax.lax.scan(add_chunk, (zeros, zeros), (f, w))
    return hi + lo


def confusion_matrix(labels: ArrayLike, decisions: ArrayLike, *, num_classes: int | None = None,
                     num_decisions: int | None = None,
                     sample_weight: ArrayLike | None = None) -> jax.Array | np.ndarray:
    """Confusion matrix ``K_ij``: samples of true class ``i`` given decision ``j``.

    Args:
      labels: ``(..., N)`` integer true classes in ``[0, K)``.
      decisions: ``(..., N)`` integer decisions in ``[0, D)``; leading axes
        (systems, draws) broadcast against those of ``labels``, so
        ``labels (N,)`` with ``decisions (M, N)`` gives ``(M, K, D)``.
      num_classes: ``K``; defaults to ``max(labels) + 1``.
      num_decisions: ``D``; defaults to ``K`` (or ``max(decisions) + 1`` if larger;
        inside ``jit``/``vmap``, where values are not concrete, to ``K``, and
        ``num_classes`` is then required).
      sample_weight: optional ``(..., N)`` non-negative finite weight of each
        sample (scikit-learn's name and meaning): ``K_ij = sum_n w_n [y_n = i]
        [d_n = j]``, float weighted counts (an integer weight ``k`` counts the
        sample ``k`` times; summed in float64, see :func:`confusion_counts`), as ``sklearn.metrics.confusion_matrix(...,
        sample_weight=)``.  :func:`~ecjax._src.metrics.as_counts` accepts such float
        counts, so they go to every metric that takes a count matrix.

    Returns:
      ``(..., K, D)`` counts: exact ``int32`` without weights (a numpy
      ``int64`` array when a matrix holds more than ``2**31 - 1`` samples).
      Under ``jit``/``vmap``, a matrix with an invalid label or decision
      (negative, ``>= K`` / ``>= D``, non-integer) has every cell ``-1``
      (weighted: ``NaN``) instead of raising.

    Raises:
      InputError: bad indices (checked before any cast, so ``2**32`` never
      wraps to ``0``), or ``K`` / ``D`` inferred from the data above
      ``10_000`` (pass ``num_classes`` / ``num_decisions`` to go further).

    Example:
      >>> confusion_matrix([0, 1, 1], [0, 1, 0]).tolist()
      [[1, 0], [1, 1]]
    """
    if num_classes is not None:
        num_classes = v.as_scalar(num_classes, "num_classes", integer=True, low=1)
    y = v.as_index_array(labels, "labels", upper=num_classes)
    if num_decisions is not None:
        num_decisions = v.as_scalar(num_decisions, "num_decisions", integer=True, low=1)
    dec = v.as_index_array(decisions, "decisions", upper=num_decisions)
    v.check_same_length("labels", y, "decisions", dec)
    v.check_batch_axes_broadcast("labels", y.shape, y.shape[:-1], "decisions", dec.shape, dec.shape[:-1])
    if num_classes is None:
        if v.is_tracer(y):
            raise v.InputError("`num_classes` is required when `labels` are traced (inside jit/vmap)")
        num_classes = v.inferred_size(int(y.max()), "labels", argument="num_classes")
    if num_decisions is None:
        # Traced decisions have no concrete maximum: D defaults to K there.
        num_decisions = num_classes if v.is_tracer(dec) else _decisions_size(int(dec.max()), num_classes)
    v.check_dense_fits(num_classes, num_decisions, "num_classes` x `num_decisions", what="count matrix",
                       batch=math.prod(np.broadcast_shapes(y.shape[:-1], dec.shape[:-1])))
    w = v.as_sample_weight(sample_weight, y, batched=True)
    if v.any_traced(y, dec, w):
        return _checked_counts(y, dec, w, num_classes=num_classes, num_decisions=num_decisions)
    if w is None and y.shape[-1] > _DEVICE_COUNT_LIMIT:
        return _host_counts(np.asarray(y), np.asarray(dec), num_classes, num_decisions)
    return confusion_counts(y, dec, w, num_classes=num_classes, num_decisions=num_decisions)


def _decisions_size(max_decision: int, num_classes: int) -> int:
    """``D`` when not given: ``K``, or ``max(decisions) + 1`` when larger (bounded as an inferred ``K``)."""
    if max_decision < num_classes:
        return num_classes
    return v.inferred_size(max_decision, "decisions", argument="num_decisions")


@partial(jax.jit, static_argnames=("num_classes", "num_decisions"))
def _checked_counts(labels, decisions, weights, *, num_classes, num_decisions):
    """:func:`confusion_counts` for traced input: invalid matrices marked (the NaN contract)."""
    counts = confusion_counts(labels, decisions, weights, num_classes=num_classes, num_decisions=num_decisions)
    y, d = jnp.broadcast_arrays(labels, decisions)
    ok = jnp.all((y >= 0) & (y < num_classes) & (d >= 0) & (d < num_decisions), -1)
    if weights is not None:
        w = jnp.broadcast_to(weights, y.shape)
        ok = ok & jnp.all(jnp.isfinite(w) & (w >= 0), -1)
    return v.nan_where_invalid(counts, ok, extra_axes=2)


def _host_counts(labels, decisions, k, d):
    """Exact int64 counts on the host, for matrices of more than ``2**31 - 1`` samples."""
    y, dec = np.broadcast_arrays(labels, decisions)
    flat = (y.astype(np.int64) * d + dec).reshape(-1, y.shape[-1])
    out = np.stack([np.bincount(f, minlength=k * d) for f in flat])
    return out.reshape(y.shape[:-1] + (k, d))


def rates(counts: ArrayLike) -> jax.Array:
    """Row-normalized rates ``R_ij = K_ij / K_i*`` (Ferrer 2022a, eq. 2).

    A row with no samples (a class absent from the test data) gets rates 0:
    with data priors such a class has weight ``P_i = 0`` and does not enter
    any expected cost.  Functions that need the rate of an absent class with
    a non-zero deployment prior raise :class:`InputError` before calling this.

    A matrix with a negative count (the mark of an invalid count matrix under
    ``jit``, see the module docstring) gives ``NaN`` rates; negative counts
    given as a numpy array or list raise :class:`InputError`.  Totals are
    summed in floating point.
    """
    c = _float_counts(counts, "counts")
    totals = c.sum(-1, keepdims=True)
    r = jnp.where(totals > 0, c / jnp.where(totals > 0, totals, 1), 0.0)
    return jnp.where(jnp.any(c < 0, (-2, -1), keepdims=True), jnp.nan, r)


def _float_counts(counts, name):
    """Counts as floats (sums never wrap); concrete negative or non-finite counts refused."""
    if not v.is_tracer(counts) and not isinstance(counts, jax.Array):
        a = np.asarray(counts)
        if a.dtype.kind in "iufb":
            v.check_numbers(a, name, booleans=True, low=0.0)
            if a.dtype.kind in "iu":
                # Host int64 values past int32 would wrap in jnp.asarray: convert through float64.
                return jnp.asarray(a.astype(np.float64), dtype=jnp.result_type(float))
    c = jnp.asarray(counts)
    return c if jnp.issubdtype(c.dtype, jnp.inexact) else c.astype(jnp.result_type(float))


def class_counts(counts: ArrayLike) -> jax.Array:
    """``K_i*``: number of samples of each true class, ``(..., K)``, summed in floating point."""
    return _float_counts(counts, "counts").sum(-1)


def data_priors(counts: ArrayLike) -> jax.Array:
    """Empirical class priors ``P_i = K_i* / N`` of a count matrix (``NaN`` if a count is negative)."""
    c = _float_counts(counts, "counts")
    n_i = c.sum(-1)
    p = n_i / n_i.sum(-1, keepdims=True)
    return jnp.where(jnp.any(c < 0, (-2, -1))[..., None], jnp.nan, p)


@dataclass(frozen=True)
class JointOutcomeTable:
    """Sparse table of joint outcomes of ``M`` systems on the same samples.

    Each occupied cell is a tuple (true class, decision of system 1, ...,
    decision of system M) with its count.  Paired comparisons need only
    these cells: their number is at most ``K * D**M`` and usually far less
    than ``N``.

    Attributes:
      cells: ``(C, 1 + M)`` int32; column 0 is the true class.
      counts: ``(C,)`` counts (int32, or float with sample weights).
      num_classes, num_decisions: ``K`` and ``D``.
    """

    cells: jax.Array
    counts: jax.Array
    num_classes: int
    num_decisions: int
    one_system: bool = False  # made of one ``(N,)`` decision vector: metrics of it are scalars, not ``(1,)``

    @property
    def num_systems(self) -> int:
        return self.cells.shape[1] - 1

    def confusion_matrices(self) -> jax.Array:
        """Marginal confusion matrix of each system, ``(M, K, D)`` (refused when it cannot be held)."""
        v.check_dense_fits(self.num_classes, self.num_decisions, "counts", what="count matrix",
                           batch=self.num_systems)
        return confusion_counts(
            self.cells[:, 0], self.cells[:, 1:].T, self.counts,
            num_classes=self.num_classes, num_decisions=self.num_decisions,
        ).astype(self.counts.dtype)


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` of a ``(N, C)`` array of indices in ``[0, 2**31)``: the
    distinct rows in lexicographic order and the index of each row among them.

    Column by column, the rank of the row's prefix times the column's bound plus its value is one int64 key
    (``< N 2**31 <= 2**62``), ranked by a 1-d ``np.unique``: a few times faster than ``np.unique(axis=0)``,
    which sorts the rows as opaque byte strings (``N = 10^5`` rows of 4 columns: 0.2 s).
    """
    rows = np.asarray(rows, np.int64)
    rank = rows[:, 0] if rows.shape[1] else np.zeros(rows.shape[0], np.int64)
    for j in range(1, rows.shape[1]):
        _, rank = np.unique(rank * (int(rows[:, j].max(initial=0)) + 1) + rows[:, j], return_inverse=True)
    _, first, inverse = np.unique(rank, return_index=True, return_inverse=True)
    return rows[first], inverse.ravel()


def joint_outcome_table(labels: ArrayLike, decisions: ArrayLike, *, num_classes: int | None = None,
                        num_decisions: int | None = None,
                        sample_weight: ArrayLike | None = None) -> JointOutcomeTable:
    """Joint outcome table of ``M`` systems scored on the same ``N`` samples.

    Args:
      labels: ``(N,)`` true classes shared by all systems.
      decisions: ``(M, N)`` decisions of each system on the same samples.
      sample_weight: optional ``(N,)`` non-negative weights; each cell then
        holds the sum of its samples' weights (float32).

    Returns:
      :class:`JointOutcomeTable` with the occupied cells and their counts.
    """
    labels = np.asarray(v.as_index_array(labels, "labels", upper=num_classes))
    v.check_shape(labels, "labels", "(N,)", why=" (one vector shared by all systems)")
    decisions = np.asarray(v.as_index_array(decisions, "decisions", upper=num_decisions, min_ndim=2))
    v.check_shape(decisions, "decisions", "(M, N)")
    v.check_same_length("labels", labels, "decisions", decisions)
    k = (v.inferred_size(int(labels.max()), "labels", argument="num_classes") if num_classes is None
         else v.as_scalar(num_classes, "num_classes", integer=True, low=1))
    d = (_decisions_size(int(decisions.max()), k) if num_decisions is None
         else v.as_scalar(num_decisions, "num_decisions", integer=True, low=1))
    if labels.shape[0] > v.INT32_MAX:
        raise v.InputError(f"`labels` has {labels.shape[0]} samples: joint outcome tables count at most 2**31 - 1")
    rows = np.concatenate([labels[None], decisions], 0).T
    cells, inverse = unique_rows(rows)
    if sample_weight is None:
        counts = np.bincount(inverse.ravel(), minlength=len(cells)).astype(np.int32)
    else:
        w = np.asarray(v.as_sample_weight(sample_weight, labels), dtype=np.float64)
        counts = np.bincount(inverse.ravel(), weights=w, minlength=len(cells)).astype(np.float32)
    return JointOutcomeTable(v.to_device(cells, np.int32), v.to_device(counts), k, d)


def sparse_confusion_matrix(labels: ArrayLike, decisions: ArrayLike, *, num_classes: int | None = None,
                            num_decisions: int | None = None,
                            sample_weight: ArrayLike | None = None) -> JointOutcomeTable:
    """The counts of :func:`confusion_matrix` held sparsely: only the occupied ``(class, decision)`` cells.

    Memory ``O(N)`` whatever ``K x D`` (10^5 classes: 10^10 dense cells),
    for the metrics of :mod:`~ecjax._src.sparse_metrics` (``ecjax.expected_cost``
    and the others accept the table as ``counts``).  ``decisions`` ``(M,
    N)`` (systems on the same samples) give the joint table of
    :func:`joint_outcome_table`; ``(N,)`` one system (its metrics are then
    scalars).  ``num_classes`` above 10 000 must be given (a stray label
    would otherwise make the class vectors long).

    Example:
      >>> t = sparse_confusion_matrix([0, 1, 1], [0, 1, 0], num_classes=100_000)
      >>> t.cells.tolist(), t.counts.tolist()
      ([[0, 0], [1, 0], [1, 1]], [1, 1, 1])
    """
    one = np.ndim(decisions) == 1
    d = np.asarray(decisions)[None] if one else decisions
    table = joint_outcome_table(labels, d, num_classes=num_classes, num_decisions=num_decisions,
                                sample_weight=sample_weight)
    return dataclasses.replace(table, one_system=one)
