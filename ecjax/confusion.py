"""Counts: confusion matrices, rates and joint (paired) outcome tables.

Conventions: a count matrix has shape ``(..., K, D)`` with row ``i`` the true
class and column ``j`` the decision (seed 000 §2, ``K_ij``).  Counts are exact
``int32`` unless sample weights are given.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

import jax
import jax.numpy as jnp

from ecjax import _validate as v


@partial(jax.jit, static_argnames=("num_classes", "num_decisions"))
def confusion_counts(labels, decisions, weights=None, *, num_classes, num_decisions):
    """Kernel: ``K_ij = sum_n w_n [y_n = i][d_n = j]`` over the last axis.

    ``labels`` and ``decisions`` broadcast against each other on their leading
    axes (one label vector shared by ``M`` systems, say).  No validation.
    """
    labels, decisions = jnp.broadcast_arrays(labels, decisions)
    flat = labels * num_decisions + decisions
    size = num_classes * num_decisions
    if weights is not None:
        weights = jnp.broadcast_to(weights, flat.shape)
    counts = _scatter_counts(flat, size, weights)
    return counts.reshape(flat.shape[:-1] + (num_classes, num_decisions))


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
    else:
        out = jax.vmap(one)(f2, weights.reshape(f2.shape))
    return out.reshape(batch + (size,))


def confusion_matrix(labels, decisions, *, num_classes=None, num_decisions=None, weights=None):
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
      weights: optional ``(..., N)`` non-negative sample weights; counts are
        then float sums of weights.

    Returns:
      ``(..., K, D)`` counts: exact ``int32`` without weights.

    Example:
      >>> confusion_matrix([0, 1, 1], [0, 1, 0]).tolist()
      [[1, 0], [1, 1]]
    """
    if num_classes is not None:
        num_classes = v.as_positive_int(num_classes, "num_classes")
    labels = v.as_index_array(labels, "labels", upper=num_classes)
    if num_decisions is not None:
        num_decisions = v.as_positive_int(num_decisions, "num_decisions")
    decisions = v.as_index_array(decisions, "decisions", upper=num_decisions)
    v.check_same_length("labels", labels, "decisions", decisions)
    try:
        jnp.broadcast_shapes(labels.shape[:-1], decisions.shape[:-1])
    except ValueError:
        raise v.InputError(
            f"leading (batch) axes of `labels` {labels.shape} and `decisions` {decisions.shape} do not broadcast"
        ) from None
    if num_classes is None:
        if v._is_tracer(labels):
            raise v.InputError("`num_classes` is required when `labels` are traced (inside jit/vmap)")
        num_classes = int(labels.max()) + 1
    if num_decisions is None:
        # Traced decisions have no concrete maximum: D defaults to K there.
        num_decisions = num_classes if v._is_tracer(decisions) else max(num_classes, int(decisions.max()) + 1)
    w = None
    if weights is not None:
        w = v.as_array(weights, "weights", min_ndim=1)
        v.check_finite(w, "weights")
        v.check_same_length("labels", labels, "weights", w)
        if not v._is_tracer(w) and np.any(np.asarray(w) < 0):
            raise v.InputError("`weights` must be non-negative")
        w = jnp.asarray(w, dtype=jnp.result_type(float))
    return confusion_counts(labels, decisions, w, num_classes=num_classes, num_decisions=num_decisions)


def rates(counts):
    """Row-normalized rates ``R_ij = K_ij / K_i*`` (seed 000 eq. 2).

    A row with no samples (a class absent from the test data) gets rates 0:
    with data priors such a class has weight ``P_i = 0`` and does not enter
    any expected cost.  Functions that need the rate of an absent class with
    a non-zero deployment prior raise :class:`InputError` before calling this.
    """
    counts = jnp.asarray(counts)
    totals = counts.sum(-1, keepdims=True)
    return jnp.where(totals > 0, counts / jnp.where(totals > 0, totals, 1), 0.0)


def class_counts(counts):
    """``K_i*``: number of samples of each true class, ``(..., K)``."""
    return jnp.asarray(counts).sum(-1)


def data_priors(counts):
    """Empirical class priors ``P_i = K_i* / N`` of a count matrix."""
    n_i = class_counts(counts)
    return n_i / n_i.sum(-1, keepdims=True)


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

    @property
    def num_systems(self) -> int:
        return self.cells.shape[1] - 1

    def confusion_matrices(self):
        """Marginal confusion matrix of each system, ``(M, K, D)``."""
        return confusion_counts(
            self.cells[:, 0], self.cells[:, 1:].T, self.counts,
            num_classes=self.num_classes, num_decisions=self.num_decisions,
        ).astype(self.counts.dtype)


def joint_outcome_table(labels, decisions, *, num_classes=None, num_decisions=None, weights=None):
    """Joint outcome table of ``M`` systems scored on the same ``N`` samples.

    Args:
      labels: ``(N,)`` true classes shared by all systems.
      decisions: ``(M, N)`` decisions of each system on the same samples.

    Returns:
      :class:`JointOutcomeTable` with the occupied cells and their counts.
    """
    labels = np.asarray(v.as_index_array(labels, "labels", upper=num_classes))
    if labels.ndim != 1:
        raise v.InputError(f"`labels` must be one vector shared by all systems, got shape {labels.shape}")
    decisions = np.asarray(v.as_index_array(decisions, "decisions", upper=num_decisions, min_ndim=2))
    if decisions.ndim != 2:
        raise v.InputError(f"`decisions` must have shape (M, N), got {decisions.shape}")
    v.check_same_length("labels", labels, "decisions", decisions)
    k = int(labels.max()) + 1 if num_classes is None else v.as_positive_int(num_classes, "num_classes")
    d = max(k, int(decisions.max()) + 1) if num_decisions is None else v.as_positive_int(num_decisions, "num_decisions")
    rows = np.concatenate([labels[None], decisions], 0).T
    cells, inverse = np.unique(rows, axis=0, return_inverse=True)
    if weights is None:
        counts = np.bincount(inverse.ravel(), minlength=len(cells)).astype(np.int32)
    else:
        w = np.asarray(v.check_finite(v.as_array(weights, "weights", min_ndim=1), "weights"), dtype=np.float64)
        v.check_same_length("labels", labels, "weights", w)
        if np.any(w < 0):
            raise v.InputError("`weights` must be non-negative")
        counts = np.bincount(inverse.ravel(), weights=w, minlength=len(cells)).astype(np.float32)
    return JointOutcomeTable(jnp.asarray(cells, jnp.int32), jnp.asarray(counts), k, d)
