"""Metrics from counts: expected cost, utility yield and the classical metrics.

Every function takes a count matrix ``counts`` of shape ``(..., K, D)`` (rows
= true class, columns = decision; integer or weighted float counts) and
accepts any leading batch axes (systems, posterior draws, cost matrices: the
batch axes of ``counts``, ``costs`` and ``priors`` broadcast).  All work under
``jax.jit`` and ``jax.vmap``.

Undefined values.  Where a classical metric is 0/0 for a valid input
(precision with no positive decisions, say) it returns ``zero_division``
(default 0.0, as scikit-learn), never a silent NaN.  Likelihood ratios with a
zero denominator return ``+inf``.

Invalid input.  Concrete calls raise :class:`~ecjax.InputError`.  Under
``jit``/``vmap`` values cannot be checked before the kernel runs, so every
public function here returns ``NaN`` for a batch element whose concrete call
would have raised (negative or non-finite counts, a matrix with no samples,
non-finite costs, priors that are negative, do not sum to 1 or weigh a class
absent from the data, a zero naive EC for the NEC, ``beta <= 0``...): see
the NaN contract in :mod:`ecjax.inputs`.

Counts are summed in floating point (host integer counts past ``2**31`` are
converted through ``float64`` before reaching the device), never in
``int32``, so totals cannot wrap.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Literal, overload

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src import sparse_metrics
from ecjax._src.confusion import JointOutcomeTable, class_counts, data_priors, rates
from ecjax._src.costs import StructuredCosts
from ecjax._src.decisions import naive_expected_cost
from ecjax._src.precision import broadcast_contract

AVERAGES = ("binary", "macro", "micro", None)


# ----------------------------------------------------------------- validation

def as_counts(counts: ArrayLike, *, square: bool = False) -> jax.Array:
    """Validated counts of the metrics, as floats (:func:`~ecjax._src.inputs.as_counts`): each matrix must hold a
    sample."""
    return v.as_counts(counts, square=square, nonzero=True)


def _counts_ok(c):
    """Traced-input mask of the count matrices a concrete call would accept, batch-shaped."""
    return jnp.all(jnp.isfinite(c) & (c >= 0), (-2, -1)) & (c.sum((-2, -1)) > 0)


def _priors_ok(counts, p):
    """Traced-input mask of valid deployment priors for these counts (see :func:`resolve_priors`)."""
    absent = (class_counts(counts) == 0) & (p > 0)
    return (jnp.all(jnp.isfinite(p) & (p >= 0), -1) & (jnp.abs(p.sum(-1) - 1.0) <= v.SUM_TOL)
            & ~jnp.any(absent, -1))


def _guard(out, ok_fn, *inputs, extra_axes=0):
    """Apply the NaN contract when any input is traced: ``ok_fn()`` gives the validity mask."""
    if not v.any_traced(*inputs):
        return out
    return v.nan_where_invalid(out, ok_fn(), extra_axes=extra_axes)


@overload
def resolve_priors(counts: jax.Array, priors: ArrayLike | None, *,
                   compute_data_priors: Literal[True] = True) -> jax.Array: ...
@overload
def resolve_priors(counts: jax.Array, priors: ArrayLike | None, *,
                   compute_data_priors: bool) -> jax.Array | None: ...
def resolve_priors(counts: jax.Array, priors: ArrayLike | None, *,
                   compute_data_priors: bool = True) -> jax.Array | None:
    """Data priors by default; deployment priors checked against the counts.

    With ``compute_data_priors=False`` the default is returned as ``None``
    (for kernels that compute the data priors inside their own ``jit``).
    """
    if priors is None:
        return data_priors(counts) if compute_data_priors else None
    p = v.as_priors(priors, num_classes=counts.shape[-2])
    if not v.any_traced(p, counts):
        v.check_priors_cover(class_counts(counts), p)
    return p


def _costs_for(counts, costs, name="costs"):
    c = v.as_matrix(costs, name, shape=(counts.shape[-2], counts.shape[-1]))
    v.check_batch_axes_broadcast("counts", counts.shape, counts.shape[:-2], name, c.shape, c.shape[:-2])
    return c


# ------------------------------------------------------------ expected cost

def expected_value(counts: ArrayLike, matrix: ArrayLike, priors: jax.Array) -> jax.Array:
    """Kernel: ``sum_ij m_ij P_i R_ij`` (Ferrer 2022a, eq. 2; Dyrland et al. (2022) eq. 10).

    The one computation behind the expected cost (``m`` = costs) and the
    utility yield (``m`` = utilities).  No validation.
    """
    return jnp.sum(priors[..., :, None] * rates(counts) * matrix, axis=(-2, -1))


# Most floats of the weights of one product for the EC and the naive ECs together (S (1 + D) K D).
_ONE_PRODUCT_FLOATS = 1 << 20


def _weights_fixed_along_matrices(weights_batch, matrix_batch):
    """Whether the matrices have a batch axis along which the weights (rates times priors) do not vary."""
    lead = max(len(weights_batch), len(matrix_batch))
    w = (1,) * (lead - len(weights_batch)) + tuple(weights_batch)
    m = (1,) * (lead - len(matrix_batch)) + tuple(matrix_batch)
    return any(mi > 1 and wi == 1 for wi, mi in zip(w, m))


def _expected_and_naive(counts, matrix, priors):
    """``(sum_ij m_ij P_i R_ij, min_d sum_i m_id P_i)``: :func:`expected_value` and the naive EC.

    Many cost matrices against a few systems (the matrices' batch axes are
    not those of the counts and priors): both are columns of one matrix
    product ``(B, K D) @ (K D, S (1 + D))``, the naive EC of decision ``d``
    through the weights ``P_i [j = d]``, so the matrices are read once
    (broadcasting them against every system's rates read them ``S`` times
    and the naive EC's ``einsum`` once more).  Otherwise, or where those
    weights would be large, the elementwise kernels.
    """
    w = priors[..., :, None] * rates(counts)  # (..., K, D): P_i R_ij
    k, d = matrix.shape[-2:]
    size = math.prod(w.shape[:-2]) * (1 + d) * k * d
    if not _weights_fixed_along_matrices(w.shape[:-2], matrix.shape[:-2]) or size > _ONE_PRODUCT_FLOATS:
        return expected_value(counts, matrix, priors), naive_expected_cost(matrix, priors)
    pick = jnp.broadcast_to(priors[..., None, :, None] * jnp.eye(d, dtype=w.dtype)[:, None, :],
                            w.shape[:-2] + (d, k, d))  # (..., D, K, D): P_i [j = d]
    both = broadcast_contract(jnp.concatenate([w[..., None, :, :], pick], -3), matrix[..., None, :, :], 2)
    return both[..., 0], jnp.min(both[..., 1:], axis=-1)


@jax.jit
def _expected_value_jit(counts, matrix, priors):
    """``expected_value`` with data priors when ``priors`` is None, in one compiled call."""
    p = data_priors(counts) if priors is None else priors
    if _weights_fixed_along_matrices(jnp.broadcast_shapes(counts.shape[:-2], p.shape[:-1]), matrix.shape[:-2]):
        return broadcast_contract(p[..., :, None] * rates(counts), matrix, 2)  # one read of the matrices
    return expected_value(counts, matrix, p)


@jax.jit
def _expected_and_naive_jit(counts, matrix, priors):
    return _expected_and_naive(counts, matrix, data_priors(counts) if priors is None else priors)


def expected_cost(counts: ArrayLike | JointOutcomeTable, costs: ArrayLike | StructuredCosts, *,
                  priors: ArrayLike | None = None) -> jax.Array:
    """Expected cost ``EC = sum_i sum_j c_ij P_i R_ij`` (Ferrer 2022a, eq. 2).

    Args:
      counts: ``(..., K, D)`` confusion counts.
      costs: ``(..., K, D)`` cost matrix; ``c_ij`` is the cost of deciding
        ``j`` for true class ``i``.
      priors: ``(..., K)`` deployment priors.  Default: the data priors
        ``P_i = K_i*/N``, with which EC is the average cost per sample (eq. 1)
        and a class absent from the data has weight 0.  With deployment
        priors, a class absent from the data but with ``P_i > 0`` raises
        :class:`InputError` (its rates are unknown).

    Many classes: ``counts`` may be a sparse table of the occupied cells
    (:func:`ecjax.sparse_confusion_matrix`; ``(M,)`` for ``M`` systems) and
    ``costs`` structured (:class:`ecjax.costs.StructuredCosts`); neither
    builds a ``K x D`` array (:mod:`~ecjax._src.sparse_metrics`).

    Example:
      >>> round(float(expected_cost(jnp.array([[3, 1], [2, 4]]), 1 - jnp.eye(2))), 6)
      0.3
    """
    if isinstance(counts, JointOutcomeTable) or isinstance(costs, StructuredCosts):  # no K x D array
        return sparse_metrics.expected_cost(counts, costs, priors=priors)
    counts = as_counts(counts)
    c = _costs_for(counts, costs)
    p = resolve_priors(counts, priors, compute_data_priors=False)
    return _guard(_expected_value_jit(counts, c, p), lambda: _ec_ok(counts, c, p), counts, c, p)


def _ec_ok(counts, c, p):
    ok = _counts_ok(counts) & jnp.all(jnp.isfinite(c), (-2, -1))
    return ok if p is None else ok & _priors_ok(counts, p)


def normalized_expected_cost(counts: ArrayLike | JointOutcomeTable, costs: ArrayLike | StructuredCosts, *,
                             priors: ArrayLike | None = None) -> jax.Array:
    """``NEC = EC / min_d sum_i c_id P_i`` (Ferrer 2022a, eqs. 3-4).

    The EC divided by the EC of the best naive system (one that always makes
    the same decision).  NEC >= 1 means the system is no better than a
    system that ignores its input.  Raises :class:`InputError` when the naive
    EC is 0 (some decision costs nothing for every class), where the NEC is
    undefined; under ``jit``/``vmap`` it is then ``NaN`` (the NaN contract).
    Sparse tables and structured costs as in :func:`expected_cost`.
    """
    if isinstance(counts, JointOutcomeTable) or isinstance(costs, StructuredCosts):  # no K x D array
        return sparse_metrics.normalized_expected_cost(counts, costs, priors=priors)
    counts = as_counts(counts)
    c = _costs_for(counts, costs)
    p = resolve_priors(counts, priors, compute_data_priors=False)
    if not any(v.is_tracer(x) for x in (counts, c, p)):
        # The check runs in numpy: no JAX dispatch before the one jitted kernel.
        cn = np.asarray(counts, np.float64)
        pn = np.asarray(p, np.float64) if p is not None else cn.sum(-1) / cn.sum((-2, -1))[..., None]
        v.check_naive_cost_positive(np.min(np.einsum("...i,...ij->...j", pn, np.asarray(c, np.float64)), axis=-1))
    ec, naive = _expected_and_naive_jit(counts, c, p)
    return _guard(ec / naive, lambda: _ec_ok(counts, c, p) & (naive > 0), counts, c, p)


def utility_yield(counts: ArrayLike | JointOutcomeTable, utilities: ArrayLike | StructuredCosts, *,
                  priors: ArrayLike | None = None) -> jax.Array:
    """Utility yield ``sum_ij U_ij P_i R_ij`` (Dyrland et al. 2022, eq. 10, rows = true class).

    With data priors this is ``sum_ij U_ij C_ij`` for the confusion matrix
    ``C`` normalized by the number of samples.  Higher is better; the yield
    of utilities ``U`` is minus the EC of costs ``-U``.  Sparse tables and
    structured utilities as in :func:`expected_cost`.
    """
    if isinstance(counts, JointOutcomeTable) or isinstance(utilities, StructuredCosts):
        return sparse_metrics.utility_yield(counts, utilities, priors=priors)
    counts = as_counts(counts)
    u = _costs_for(counts, utilities, "utilities")
    p = resolve_priors(counts, priors, compute_data_priors=False)
    return _guard(_expected_value_jit(counts, u, p), lambda: _ec_ok(counts, u, p), counts, u, p)


# --------------------------------------------------------- classical metrics
#
# Each public function validates its concrete inputs in numpy, then calls one
# jitted kernel: a first call on a new shape compiles once instead of once per
# eager operation.

def _div(num, den, zero_division):
    den_ok = den != 0
    return jnp.where(den_ok, num / jnp.where(den_ok, den, 1.0), zero_division)


def _one_vs_rest(counts):
    """Per-class (tp, fp, fn, tn), each ``(..., K)`` float."""
    c = jnp.asarray(counts, dtype=jnp.result_type(float))
    tp = jnp.diagonal(c, axis1=-2, axis2=-1)
    fn = c.sum(-1) - tp
    fp = c.sum(-2) - tp
    tn = c.sum((-2, -1))[..., None] - tp - fn - fp
    return tp, fp, fn, tn


def _precision(tp, fp, fn, tn, z, b2=None):
    return _div(tp, tp + fp, z)


def _recall(tp, fp, fn, tn, z, b2=None):
    return _div(tp, tp + fn, z)


def _specificity(tp, fp, fn, tn, z, b2=None):
    return _div(tn, tn + fp, z)


def _npv(tp, fp, fn, tn, z, b2=None):
    return _div(tn, tn + fn, z)


def _f_beta(tp, fp, fn, tn, z, b2):
    return _div((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp, z)


def _fowlkes_mallows(tp, fp, fn, tn, z, b2=None):
    return jnp.sqrt(_precision(tp, fp, fn, tn, z) * _recall(tp, fp, fn, tn, z))


_PER_CLASS = {
    "precision": _precision,
    "recall": _recall,
    "specificity": _specificity,
    "npv": _npv,
    "f_beta": _f_beta,
    "fowlkes_mallows": _fowlkes_mallows,
}




@partial(jax.jit, static_argnames=("kind", "average"))
def _select_kernel(counts, pos_label, zero_division, b2, *, kind, average):
    # pos_label is traced (a dynamic index): one compilation serves every class.
    fn = _PER_CLASS[kind]
    stats = _one_vs_rest(counts)
    if average == "binary":
        return fn(*(s[..., pos_label] for s in stats), zero_division, b2)
    if average == "micro":
        return fn(*(s.sum(-1) for s in stats), zero_division, b2)
    per_class = fn(*stats, zero_division, b2)
    return per_class if average is None else per_class.mean(-1)


def _select(kind, counts, pos_label, average, zero_division, b2=1.0):
    """Reduce one-vs-rest statistics as scikit-learn's ``average`` does.

    ``binary``: class ``pos_label`` against the rest; ``micro``: pool the
    one-vs-rest counts of all classes; ``macro``: mean of the per-class
    values; ``None``: the per-class values ``(..., K)``.
    """
    v.check_choice(average, "average", AVERAGES)
    pos = v.as_pos_label(pos_label, counts.shape[-1]) if average == "binary" else 0
    zero_division = v.as_scalar(zero_division, "zero_division", finite=False, traced=True)
    out = _select_kernel(counts, pos, zero_division, b2, kind=kind, average=average)
    beta_ok = (lambda: jnp.isfinite(b2) & (b2 > 0)) if v.is_tracer(b2) else (lambda: True)
    return _guard(out, lambda: _counts_ok(counts) & beta_ok(), counts, b2,
                  extra_axes=1 if average is None else 0)


def _metric(kind, doc):
    def metric(counts: ArrayLike, *, pos_label: int = 1, average: str | None = "binary",
               zero_division: float = 0.0) -> jax.Array:
        counts = as_counts(counts, square=True)
        return _select(kind, counts, pos_label, average, zero_division)

    metric.__doc__ = doc + _AVERAGE_DOC
    return metric


_AVERAGE_DOC = """

    Args:
      counts: ``(..., K, K)`` confusion counts.
      pos_label: the positive class for ``average="binary"`` (one class
        against the rest; for K = 2 the usual binary metric).
      average: ``"binary"`` (class ``pos_label``), ``"macro"`` (mean over
        classes), ``"micro"`` (pool the one-vs-rest counts), or ``None``
        (per-class values, shape ``(..., K)``), as in scikit-learn.
      zero_division: value returned where the metric is 0/0 (a number;
        ``nan`` allowed).
    """

precision = _metric("precision", "Precision (PPV) ``TP / (TP + FP)`` (Ferrer 2022a, eq. 14).")
recall = _metric("recall", "Recall (sensitivity, TPR) ``TP / (TP + FN)`` (Ferrer 2022a, eq. 15).")
specificity = _metric("specificity", "Specificity (TNR) ``TN / (TN + FP)``.")
negative_predictive_value = _metric("npv", "Negative predictive value ``TN / (TN + FN)``.")
sensitivity = recall
for _fn, _name in ((precision, "precision"), (recall, "recall"), (specificity, "specificity"),
                   (negative_predictive_value, "negative_predictive_value")):
    _fn.__name__ = _fn.__qualname__ = _name


def f_beta_score(counts: ArrayLike, *, beta: float = 1.0, pos_label: int = 1, average: str | None = "binary",
                 zero_division: float = 0.0) -> jax.Array:
    """F-beta ``(1 + b^2) TP / ((1 + b^2) TP + b^2 FN + FP)`` (Ferrer 2022a, eq. 17).

    Equals ``1 - EC_beta / (b^2 P_2 + R_*2)`` with the costs of
    :func:`ecjax.costs.f_beta` (Ferrer 2022a, eq. 22).
    """
    counts = as_counts(counts, square=True)
    b2: jax.Array | float
    if v.is_tracer(beta):
        b2 = jnp.where(beta > 0, jnp.asarray(beta, jnp.result_type(float)) ** 2, jnp.nan)
    else:
        b = v.as_scalar(beta, "beta", low=0.0, strict=True)
        b2 = b * b
    return _select("f_beta", counts, pos_label, average, zero_division, b2)


def f1_score(counts: ArrayLike, *, pos_label: int = 1, average: str | None = "binary",
             zero_division: float = 0.0) -> jax.Array:
    """F1: :func:`f_beta_score` with ``beta = 1``."""
    return f_beta_score(counts, beta=1.0, pos_label=pos_label, average=average, zero_division=zero_division)


f_beta_score.__doc__ = (f_beta_score.__doc__ or "") + _AVERAGE_DOC


@jax.jit
def _accuracy_kernel(c):
    return jnp.trace(c, axis1=-2, axis2=-1) / c.sum((-2, -1))


def _counts_metric(kernel, counts, *args, square=True):
    """A metric of the counts alone, with the NaN contract under jit."""
    c = as_counts(counts, square=square)
    return _guard(kernel(c, *args), lambda: _counts_ok(c), c, *args)


def accuracy(counts: ArrayLike | JointOutcomeTable) -> jax.Array:
    """Fraction of samples whose decision equals their class (Ferrer 2022a, eq. 5); of a sparse table too."""
    if isinstance(counts, JointOutcomeTable):
        return sparse_metrics.accuracy(counts)
    return _counts_metric(_accuracy_kernel, counts)


def error_rate(counts: ArrayLike | JointOutcomeTable) -> jax.Array:
    """``1 - accuracy``: the EC of 0-1 costs with data priors (Ferrer 2022a, eq. 8)."""
    return 1.0 - accuracy(counts)


@jax.jit
def _balanced_accuracy_kernel(c):
    present = class_counts(c) > 0
    r = jnp.diagonal(rates(c), axis1=-2, axis2=-1)
    return jnp.sum(jnp.where(present, r, 0.0), -1) / jnp.sum(present, -1)


def balanced_accuracy(counts: ArrayLike | JointOutcomeTable) -> jax.Array:
    """Mean recall over the classes present in the data (Ferrer 2022a, eq. 9).

    A class with no test samples is left out of the mean (as scikit-learn).
    Of a sparse table too.
    """
    if isinstance(counts, JointOutcomeTable):
        return sparse_metrics.balanced_accuracy(counts)
    return _counts_metric(_balanced_accuracy_kernel, counts)


def balanced_error_rate(counts: ArrayLike | JointOutcomeTable) -> jax.Array:
    """``1 - balanced_accuracy``: the EC of costs ``1/(K P_i)`` (Ferrer 2022a, eq. 12)."""
    return 1.0 - balanced_accuracy(counts)


@jax.jit
def _mcc_kernel(c, zero_division):
    c = jnp.asarray(c, dtype=jnp.result_type(float))
    n = c.sum((-2, -1))
    correct = jnp.trace(c, axis1=-2, axis2=-1)
    t = c.sum(-1)
    p = c.sum(-2)
    num = correct * n - jnp.sum(p * t, -1)
    den = jnp.sqrt((n**2 - jnp.sum(p**2, -1)) * (n**2 - jnp.sum(t**2, -1)))
    return _div(num, den, zero_division)


def matthews_corrcoef(counts: ArrayLike, *, zero_division: float = 0.0) -> jax.Array:
    """Matthews correlation coefficient, binary (Ferrer 2022a, eq. 23) and multiclass.

    Uses Gorodkin's ``R_K``: ``(c N - sum_k p_k t_k) /
    sqrt((N^2 - sum_k p_k^2)(N^2 - sum_k t_k^2))`` with ``c`` the trace,
    ``p_k`` decision totals and ``t_k`` class totals; for K = 2 it is eq. 23.
    Returns ``zero_division`` when a denominator factor is 0 (all samples in
    one class or one decision), as scikit-learn.
    """
    return _counts_metric(_mcc_kernel, counts, v.as_scalar(zero_division, "zero_division", finite=False, traced=True))


@jax.jit
def _kappa_kernel(c, zero_division):
    c = jnp.asarray(c, dtype=jnp.result_type(float))
    n = c.sum((-2, -1))
    p_o = jnp.trace(c, axis1=-2, axis2=-1) / n
    p_e = jnp.sum(c.sum(-1) * c.sum(-2), -1) / n**2
    return _div(p_o - p_e, 1.0 - p_e, zero_division)


def cohen_kappa(counts: ArrayLike, *, zero_division: float = 0.0) -> jax.Array:
    """Cohen's kappa ``(p_o - p_e) / (1 - p_e)``, with ``p_e = sum_k p_k t_k / N^2``."""
    return _counts_metric(_kappa_kernel, counts, v.as_scalar(zero_division, "zero_division", finite=False, traced=True))


def fowlkes_mallows(counts: ArrayLike, *, pos_label: int = 1, average: str | None = "binary",
                    zero_division: float = 0.0) -> jax.Array:
    """Fowlkes-Mallows index ``sqrt(PPV * TPR)`` for the positive class (Dyrland et al. 2022, Table 1)."""
    counts = as_counts(counts, square=True)
    return _select("fowlkes_mallows", counts, pos_label, average, zero_division)


fowlkes_mallows.__doc__ = (fowlkes_mallows.__doc__ or "") + _AVERAGE_DOC


@partial(jax.jit, static_argnames=("negative",))
def _likelihood_ratio_kernel(c, pos_label, *, negative):
    tp, fp, fn, tn = (s[..., pos_label] for s in _one_vs_rest(c))
    if negative:
        num, den = fn / (tp + fn), tn / (tn + fp)   # (1 - TPR) / TNR
    else:
        num, den = tp / (tp + fn), fp / (fp + tn)   # TPR / (1 - TNR)
    return jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), jnp.inf)


def positive_likelihood_ratio(counts: ArrayLike, *, pos_label: int = 1) -> jax.Array:
    """``LR+ = TPR / (1 - TNR)`` (Ferrer 2022a, eq. 32); ``+inf`` when FPR = 0."""
    c, pos = _binary_counts(counts, pos_label)
    return _guard(_likelihood_ratio_kernel(c, pos, negative=False), lambda: _binary_ok(c, pos), c)


def negative_likelihood_ratio(counts: ArrayLike, *, pos_label: int = 1) -> jax.Array:
    """``LR- = (1 - TPR) / TNR``; ``+inf`` when TNR = 0."""
    c, pos = _binary_counts(counts, pos_label)
    return _guard(_likelihood_ratio_kernel(c, pos, negative=True), lambda: _binary_ok(c, pos), c)


def _binary_ok(c, pos):
    n_i = c.sum(-1)
    return _counts_ok(c) & (n_i[..., pos] > 0) & (n_i.sum(-1) - n_i[..., pos] > 0)


def _binary_counts(counts, pos_label):
    """Square counts with both the positive class and the rest present."""
    c = as_counts(counts, square=True)
    pos = v.as_pos_label(pos_label, c.shape[-1])
    if not v.is_tracer(c):
        n_i = np.asarray(c).sum(-1)
        if np.any(n_i[..., pos] == 0) or np.any(n_i.sum(-1) - n_i[..., pos] == 0):
            raise v.InputError("likelihood ratios need test samples of both the positive class and the rest")
    return c, pos


@jax.jit
def _net_benefit_kernel(c, odds, pos_label):
    tp, fp, fn, tn = (s[..., pos_label] for s in _one_vs_rest(c))
    n = tp + fp + fn + tn
    return tp / n - fp / n * odds


def net_benefit(counts: ArrayLike, *, threshold_probability: float, pos_label: int = 1) -> jax.Array:
    """Net benefit ``TP/N - FP/N * p/(1-p)`` at threshold probability ``p`` (Ferrer 2025, App. C).

    Equals ``P_pos - EC`` with the costs of :func:`ecjax.costs.net_benefit`
    (Ferrer 2022b, eqs. 12-15).
    """
    c = as_counts(counts, square=True)
    pos = v.as_pos_label(pos_label, c.shape[-1])
    p: jax.Array | float
    p_ok: jax.Array | bool
    if v.is_tracer(threshold_probability):
        p = jnp.asarray(threshold_probability, jnp.result_type(float))
        p_ok = (p > 0) & (p < 1)
    else:
        p = v.as_scalar(threshold_probability, "threshold_probability", low=0.0, high=1.0, strict=True)
        p_ok = True
    return _guard(_net_benefit_kernel(c, p / (1.0 - p), pos), lambda: _counts_ok(c) & p_ok, c, p)


@partial(jax.jit, static_argnames=("kind",))
def _youden_kernel(c, pos_label, *, kind):
    stats = tuple(s[..., pos_label] for s in _one_vs_rest(c))
    if kind == "informedness":
        return _recall(*stats, 0.0) + _specificity(*stats, 0.0) - 1.0
    return _precision(*stats, 0.0) + _npv(*stats, 0.0) - 1.0


def informedness(counts: ArrayLike, *, pos_label: int = 1) -> jax.Array:
    """Informedness (Youden's J) ``TPR + TNR - 1`` = ``1 - NEC_b`` for balanced costs.

    A 0/0 rate counts as 0 (as in :func:`recall`).
    """
    c = as_counts(counts, square=True)
    out = _youden_kernel(c, v.as_pos_label(pos_label, c.shape[-1]), kind="informedness")
    return _guard(out, lambda: _counts_ok(c), c)


def markedness(counts: ArrayLike, *, pos_label: int = 1) -> jax.Array:
    """Markedness ``PPV + NPV - 1``; a 0/0 predictive value counts as 0."""
    c = as_counts(counts, square=True)
    out = _youden_kernel(c, v.as_pos_label(pos_label, c.shape[-1]), kind="markedness")
    return _guard(out, lambda: _counts_ok(c), c)


@jax.jit
def _geometric_mean_kernel(c):
    r = jnp.diagonal(rates(c), axis1=-2, axis2=-1)
    return jnp.exp(jnp.mean(jnp.log(r), -1))


def geometric_mean(counts: ArrayLike) -> jax.Array:
    """Geometric mean of the per-class recalls; ``sqrt(TPR * TNR)`` for K = 2.

    0 when some class has recall 0 (or no samples).
    """
    return _counts_metric(_geometric_mean_kernel, counts)


# ------------------------------------------------------------------- GPS/UPM

def _gps_kernel(p):
    n = p.shape[-1]
    any_zero = jnp.any(p == 0, -1)
    inv = 1.0 / jnp.where(p == 0, 1.0, p)
    gps = jnp.where(any_zero, 0.0, n / inv.sum(-1))
    spread = jnp.sqrt(jnp.sum((inv - inv.mean(-1, keepdims=True)) ** 2, -1))
    sd = jnp.where(any_zero, 0.0, gps**2 * spread / (n - 1))
    return gps, sd


_gps_jit = jax.jit(_gps_kernel)


def general_performance_score(values: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """GPS: harmonic mean of performance metrics ``p_1..p_n`` (De Diego et al. (2022) Definition 1).

    Args:
      values: ``(..., n)`` metric values in [0, 1] (others raise
        :class:`InputError`; ``NaN`` under ``jit``).

    Returns:
      ``(gps, sd)``: the harmonic mean ``n / sum_i (1/p_i)`` and its standard
      deviation (De Diego et al. (2022) Property 3), ``GPS^2 * sqrt(sum_i (1/p_i - mean)^2) / (n - 1)``
      with the mean taken over ``1/p_i``; this form reproduces the paper's
      Properties 4 and 5.  GPS is 0 when a metric is 0 (Property 2), and its
      sd is then 0.
    """
    p = v.as_array(values, "values", min_ndim=1)
    v.check_finite(p, "values")
    v.check_axis_at_least(p, "values", 2, "metrics (last axis)")
    if not v.is_tracer(p):
        v.check_inside(v.check_numbers(np.asarray(p), "values", finite=False), 0.0, 1.0, "`values` (metric values)")
    p = jnp.asarray(p, dtype=jnp.result_type(float))
    return _guard(_gps_jit(p), lambda: jnp.all((p >= 0) & (p <= 1), -1), p)


def _upm_values(c):
    """``(..., K, 4)``: one-vs-rest (PPV, TPR, TNR, NPV) of each class."""
    stats = _one_vs_rest(c)
    return jnp.stack([f(*stats, 0.0) for f in (_precision, _recall, _specificity, _npv)], -1)


@jax.jit
def _upm_kernel(c, pos_label):
    return _gps_kernel(_upm_values(c)[..., pos_label, :])


def unified_performance_measure(counts: ArrayLike, *, pos_label: int = 1) -> tuple[jax.Array, jax.Array]:
    """UPM: GPS of (PPV, TPR, TNR, NPV) for the positive class (De Diego et al. 2022, §3.1).

    Returns ``(upm, sd)``.
    """
    c = as_counts(counts, square=True)
    return _guard(_upm_kernel(c, v.as_pos_label(pos_label, c.shape[-1])), lambda: _counts_ok(c), c)


@jax.jit
def _gps_upm_kernel(c):
    upm_k, _ = _gps_kernel(_upm_values(c))
    return _gps_kernel(upm_k)


def gps_upm(counts: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """Multiclass GPS of the one-vs-rest UPMs (De Diego et al. 2022, §3.2). Returns ``(gps, sd)``."""
    return _counts_metric(_gps_upm_kernel, counts)
