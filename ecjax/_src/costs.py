"""Cost and utility matrices: constructors and transforms.

``c[..., i, j]`` is the cost of deciding ``j`` when the true class is ``i``
(rows = truth, as in Ferrer's papers and scikit-learn).  Utilities are negated
costs.  Dyrland et al. (2022) writes matrices with rows = decision: its matrices are
transposed here.

Invalid parameters raise :class:`~ecjax.InputError` when concrete; under
``jit``/``vmap`` the matrices built from them are ``NaN`` (the NaN contract
of :mod:`ecjax.inputs`), never a plausible matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import ClassVar

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v


@partial(jax.tree_util.register_dataclass, data_fields=["correct", "wrong", "abstain"], meta_fields=[])
@dataclass(frozen=True)
class StructuredCosts:
    """Costs (or utilities) that depend only on the true class and on whether the decision is right::

        c[k, d] = correct[k]   if d = k,
                  wrong[k]     if d != k and d < K,
                  abstain[k]   if d = K        (only with ``abstain``: then D = K + 1),

    each field ``(..., K)``.  0-1 costs are ``correct = 0, wrong = 1``
    (:func:`zero_one` with ``dense=False``); a per-class miss cost is the
    vector ``wrong``; per-row scales ``s_k`` of 0-1 costs with abstention
    ``a`` are ``wrong = s, abstain = s a`` (:func:`scale_rows`).  The
    ``K x D`` matrix is never built: memory is ``O(K)``, and the EC needs of
    the counts only, per class, the correct and the abstained decisions
    (:mod:`~ecjax._src.sparse_metrics`), so any ``K`` works.  A pytree: it passes
    through ``jit``.  :meth:`dense` builds the matrix (refused, with the
    reason, when it cannot be held); a function that needs the matrix
    refuses structured costs (:func:`~ecjax._src.inputs.as_array`).
    """

    correct: jax.Array
    wrong: jax.Array
    abstain: jax.Array | None = None
    structured_costs: ClassVar[bool] = True  # the mark that ecjax.inputs reads (it cannot import this module)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape ``(..., K, D)`` of the dense matrix."""
        return tuple(self.wrong.shape[:-1]) + (self.num_classes, self.num_decisions)

    @property
    def num_classes(self) -> int:
        return int(self.wrong.shape[-1])

    @property
    def num_decisions(self) -> int:
        return self.num_classes + (self.abstain is not None)

    def dense(self) -> jax.Array:
        """The ``(..., K, D)`` matrix; :class:`InputError` when it cannot be held (see
        :func:`~ecjax._src.inputs.check_dense_fits`)."""
        k, d = self.num_classes, self.num_decisions
        v.check_dense_fits(k, d, "costs", what="cost matrix", batch=int(np.prod(self.wrong.shape[:-1])))
        eye = jnp.eye(k, dtype=self.wrong.dtype)
        c = self.correct[..., :, None] * eye + self.wrong[..., :, None] * (1.0 - eye)
        if self.abstain is not None:
            c = jnp.concatenate([c, self.abstain[..., :, None]], -1)
        return c

    def map(self, f) -> StructuredCosts:
        """``f`` applied to every field (negation, scaling)."""
        return StructuredCosts(f(self.correct), f(self.wrong), None if self.abstain is None else f(self.abstain))


def class_costs(wrong: ArrayLike, *, correct: ArrayLike = 0.0, abstain: ArrayLike | None = None) -> StructuredCosts:
    """Structured costs (:class:`StructuredCosts`): ``wrong[k]`` for every wrong decision on class ``k``,
    ``correct[k]`` for the right one, ``abstain[k]`` for abstaining (decision ``K``; ``None``: no such decision).

    Each field a number or a ``(..., K)`` array (at least one of them a vector); they broadcast.

    Example:
      >>> c = class_costs([1.0, 5.0, 2.0], abstain=0.5)   # missing class 1 costs 5, abstaining 0.5
      >>> c.dense().tolist()[1]
      [5.0, 0.0, 5.0, 0.5]
    """
    return StructuredCosts(*v.as_class_cost_fields(correct, wrong, abstain))


def scale_rows(costs: ArrayLike | StructuredCosts, scales: ArrayLike) -> jax.Array | StructuredCosts:
    """``c_kd s_k``: row ``k`` (true class ``k``) of the costs scaled by ``s_k``, ``scales`` ``(..., K)``.

    Structured costs stay structured (each field scaled), so per-row scales
    of 0-1 costs never build the ``K x D`` matrix.
    """
    c = costs if isinstance(costs, StructuredCosts) else v.as_matrix(costs, "costs")
    k = c.num_classes if isinstance(c, StructuredCosts) else c.shape[-2]
    host = v.check_numbers(np.asarray(v.as_array(scales, "scales"), np.float64), "scales")
    s = v.to_device(v.check_class_vector(host, "scales", num_classes=k), jnp.result_type(float))
    if isinstance(c, StructuredCosts):
        return c.map(lambda x: x * s)
    return c * s[:, None]


def zero_one(num_classes: int, abstain: float | None = None, *, dense: bool = True) -> jax.Array | StructuredCosts:
    """0-1 costs (``c_ij = 1 - [i = j]``), whose EC is the error rate (Ferrer 2022a, §4).

    With ``abstain`` a last column (decision ``K``, "abstain") of constant
    cost ``abstain`` is added (Ferrer 2025, App. B).  ``dense=False`` gives
    them as :class:`StructuredCosts` (memory ``O(K)``, any ``K``); a dense
    matrix that cannot be held is refused with that advice.
    """
    k = v.as_scalar(num_classes, "num_classes", integer=True, low=2)
    if not v.as_flag(dense, "dense"):
        return class_costs(np.ones(k), abstain=None if abstain is None else v.as_scalar(abstain, "abstain", low=0.0))
    v.check_dense_fits(k, k + (abstain is not None), "num_classes", what="cost matrix")
    c = 1.0 - jnp.eye(k)
    if abstain is not None:
        if v.is_tracer(abstain):
            a = jnp.where(jnp.isfinite(abstain) & (abstain >= 0), abstain, jnp.nan)
            return _nan_if_nan(jnp.concatenate([c, jnp.full((k, 1), a, dtype=c.dtype)], axis=1), a)
        a = jnp.asarray(v.as_scalar(abstain, "abstain", low=0.0))
        c = jnp.concatenate([c, jnp.full((k, 1), a, dtype=c.dtype)], axis=1)
    return c


def balanced(priors: ArrayLike) -> jax.Array:
    """Costs ``c_ij = 1 / (K P_i)`` for ``i != j``: their EC is the balanced error rate (Ferrer 2022a, eq. 12)."""
    p = v.as_positive_priors(priors, why=" (balanced costs divide by them: 1 / (K P_i))")
    k = p.shape[-1]
    v.check_dense_fits(k, k, "priors", what="cost matrix", batch=int(np.prod(p.shape[:-1])))
    out = (1.0 - jnp.eye(k)) / (k * p[..., :, None])
    if v.is_tracer(p):
        ok = jnp.all(p > 0, -1) & (jnp.abs(p.sum(-1) - 1.0) <= v.SUM_TOL)
        out = v.nan_where_invalid(out, ok, extra_axes=2)
    return out


def _scalar_parameter(x, name: str, *, check, valid):
    """A float parameter (or array of them, for a batch of matrices): numbers (not strings or booleans) that
    ``check`` (a range validator of :mod:`ecjax.inputs`) accepts; traced entries that ``valid`` refuses are NaN."""
    arr = v.as_array(x, name)
    if not v.is_tracer(arr):
        v.check_numbers(np.asarray(arr), name, finite=False)
        check(x, name)  # on x as given, which the message shows
        return jnp.asarray(arr, dtype=jnp.result_type(float))
    arr = jnp.asarray(arr, dtype=jnp.result_type(float))
    return jnp.where(jnp.isfinite(arr) & valid(arr), arr, jnp.nan)  # the NaN contract


def _nan_if_nan(matrices, parameter):
    """The NaN contract: a whole matrix is NaN when the (traced) parameter it is built from is NaN."""
    bad = jnp.isnan(jnp.asarray(parameter))
    return jnp.where(bad[..., None, None], jnp.nan, matrices)


def _binary_off_diagonal(c12, c21):
    """``[[0, c12], [c21, 0]]`` with the batch shape of ``c12`` and ``c21``."""
    c12, c21 = jnp.broadcast_arrays(c12, c21)
    zero = jnp.zeros_like(c12)
    return jnp.stack([jnp.stack([zero, c12], -1), jnp.stack([c21, zero], -1)], -2)


def f_beta(beta: ArrayLike = 1.0) -> jax.Array:
    """Binary costs ``[[0, 1], [beta**2, 0]]`` of the EC behind F-beta (Ferrer 2022a, eq. 21).

    Class index 1 is the positive class: a miss costs ``beta**2``, a false
    alarm costs 1.  An array of ``beta`` gives a batch of matrices.
    """
    b = _scalar_parameter(beta, "beta", check=lambda a, name: v.check_numbers(a, name, low=0.0, strict=True),
                          valid=lambda a: a > 0)
    return _nan_if_nan(_binary_off_diagonal(jnp.ones_like(b), b * b), b)


def net_benefit(threshold_probability: ArrayLike) -> jax.Array:
    """Binary costs ``[[0, p/(1-p)], [1, 0]]`` of the EC behind net benefit (Ferrer 2025, App. C).

    ``p`` is the threshold probability at which a clinician is indifferent
    between treating and not treating.
    """
    p = _scalar_parameter(threshold_probability, "threshold_probability",
                          check=lambda a, name: v.check_numbers(a, name, low=0.0, high=1.0, strict=True),
                          valid=lambda a: (a > 0) & (a < 1))
    return _nan_if_nan(_binary_off_diagonal(p / (1.0 - p), jnp.ones_like(p)), p)


def utilities_to_costs(utilities: ArrayLike | StructuredCosts) -> jax.Array | StructuredCosts:
    """Costs ``c = -U`` (Dyrland et al. (2022): utilities are negated costs); structured ones stay structured."""
    if isinstance(utilities, StructuredCosts):
        return utilities.map(jnp.negative)
    return -v.as_matrix(utilities, "utilities")


def costs_to_utilities(costs: ArrayLike | StructuredCosts) -> jax.Array | StructuredCosts:
    """Utilities ``U = -c``; structured costs stay structured."""
    if isinstance(costs, StructuredCosts):
        return costs.map(jnp.negative)
    return -v.as_matrix(costs, "costs")


def normalize_rows(costs: ArrayLike | StructuredCosts) -> jax.Array | StructuredCosts:
    """``c_ij - min_j c_ij`` (Ferrer 2025, §2).

    Leaves Bayes decisions unchanged, and shifts the EC of every system by
    the same constant ``sum_i P_i min_j c_ij`` for fixed priors, so rankings
    are unchanged.  The result is non-negative with a zero in each row.
    Structured costs stay structured (a row's minimum is that of its
    ``correct``, ``wrong`` and ``abstain`` entries: ``K >= 2`` leaves a wrong
    decision in every row).
    """
    if isinstance(costs, StructuredCosts):
        low = jnp.minimum(costs.correct, costs.wrong)
        if costs.abstain is not None:
            low = jnp.minimum(low, costs.abstain)
        return costs.map(lambda x: x - low)
    c = v.as_matrix(costs, "costs")
    return c - c.min(-1, keepdims=True)


def rescale_unit(utilities: ArrayLike) -> jax.Array:
    """Dyrland et al. (2022) eq. 12: ``(U - min U) / (max U - min U)``, into [0, 1].

    Undefined when all entries are equal (the decision is then immaterial):
    raises :class:`InputError`.
    """
    u = v.as_matrix(utilities, "utilities")
    lo = u.min((-2, -1), keepdims=True)
    hi = u.max((-2, -1), keepdims=True)
    # Checked on concrete input only: under jit/vmap a constant matrix gives NaN.
    if not v.is_tracer(u) and np.any(np.asarray(hi - lo) == 0):
        raise v.InputError("`utilities` has all entries equal: rescaling to [0, 1] is undefined")
    return (u - lo) / (hi - lo)


def utility_from_xy(x: ArrayLike, y: ArrayLike) -> jax.Array:
    """Binary utility matrix from the coordinates ``(x, y)`` of Dyrland et al. (2022) eq. 13.

    Rows = true class (transposed from Dyrland et al.)::

        U = [[1 - max(x, 0),  max(-y, 0)],
             [max(y, 0),      1 - max(-x, 0)]]

    ``(x, y)`` must lie in the hexagon of Dyrland et al. (2022) Fig. 1:
    ``|x| <= 1``, ``|y| <= 1``, ``|x - y| <= 1`` (the excluded corners are
    matrices where a wrong decision is worth more than the right one).
    Broadcasts over ``x`` and ``y``.
    """
    x = v.check_finite(v.as_array(x, "x"), "x")
    y = v.check_finite(v.as_array(y, "y"), "y")
    eps = 1e-6
    if not v.is_tracer(x) and not v.is_tracer(y):
        for name, a in (("x", x), ("y", y)):
            v.check_numbers(a, name, finite=False)
        xa, ya = np.broadcast_arrays(np.asarray(x, float), np.asarray(y, float))
        if np.any(np.abs(xa) > 1 + eps) or np.any(np.abs(ya) > 1 + eps) or np.any(np.abs(xa - ya) > 1 + eps):
            raise v.InputError("`x`, `y` must satisfy |x| <= 1, |y| <= 1 and |x - y| <= 1 (the binary utility space)")
        return _utility_from_xy(jnp.asarray(x, float), jnp.asarray(y, float))
    x, y = jnp.broadcast_arrays(jnp.asarray(x, float), jnp.asarray(y, float))
    ok = (jnp.abs(x) <= 1 + eps) & (jnp.abs(y) <= 1 + eps) & (jnp.abs(x - y) <= 1 + eps)
    return v.nan_where_invalid(_utility_from_xy(x, y), ok, extra_axes=2)


def _utility_from_xy(x, y):
    x, y = jnp.broadcast_arrays(x, y)
    row0 = jnp.stack([1.0 - jnp.maximum(x, 0.0), jnp.maximum(-y, 0.0)], -1)
    row1 = jnp.stack([jnp.maximum(y, 0.0), 1.0 - jnp.maximum(-x, 0.0)], -1)
    return jnp.stack([row0, row1], -2)


def xy_from_utility(utilities: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """Coordinates ``(x, y)`` of Dyrland et al. (2022) eq. 13 of binary utility matrices.

    The matrix is first rescaled with eq. 12.  Returns ``(x, y)`` arrays of
    the batch shape.  A rescaled matrix that is not of the eq. 13 form (for
    example one with both off-diagonal utilities above the minimum) raises
    :class:`InputError`; :func:`normalize_rows` applied to the matching costs
    gives an equivalent matrix for ranking purposes.
    """
    u = rescale_unit(v.as_matrix(utilities, "utilities", shape=(2, 2)))
    x = jnp.where(u[..., 0, 0] < 1.0, 1.0 - u[..., 0, 0], -(1.0 - u[..., 1, 1]))
    y = jnp.where(u[..., 1, 0] > 0.0, u[..., 1, 0], -u[..., 0, 1])
    back = _utility_from_xy(x, y)
    if v.is_tracer(u):
        ok = jnp.all(jnp.abs(back - u) <= 1e-5 + 1e-8 * jnp.abs(u), (-2, -1))
        return v.nan_where_invalid(x, ok), v.nan_where_invalid(y, ok)
    if not np.allclose(np.asarray(back), np.asarray(u), atol=1e-5):
        raise v.InputError(
            "`utilities` is not a binary utility matrix of the (x, y) form after rescaling to [0, 1] "
            "(exactly one diagonal entry must be the maximum 1, and at most one off-diagonal entry above 0)"
        )
    return x, y
