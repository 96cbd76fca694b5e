"""How often does a metric rank two classifiers the wrong way round?  (Dyrland et al. 2022, §4.2)

The Monte Carlo study of Dyrland et al. (2022) §4.2 (Figs. 6-7), as a reusable function.
For each of ``num_pairs`` draws:

1. a *true* binary utility matrix ``U`` from a distribution over the set of
   Fig. 1 (eq. 13 coordinates ``(x, y)``): ``"uniform"`` on the hexagon
   ``|x|, |y|, |x - y| <= 1``, or ``"gaussian"``: a bivariate Gaussian centred
   on the identity matrix (``x = y = 0``) with standard deviation 1/3 in
   ``x`` and ``y``, truncated to the hexagon (item (i));
2. an *assessed* matrix ``U + e``: each element gets a Gaussian error of
   standard deviation ``sd`` centred on the true value, truncated so that
   every utility stays in ``[0, 1]`` and a correct decision keeps a higher
   utility than a wrong one for each class (item (iii));
3. a class proportion ``B ~ U(0, 1)`` shared by two classifiers, and for
   each classifier a true-positive and a true-negative rate, independent on
   ``[0.5, 1]`` with linearly increasing density (median 0.85, quartiles
   0.75 and 0.93; item (ii)), giving two normalized confusion matrices;
4. the sign of the difference of their true utility yields (eq. 10) against
   the sign of the difference of each metric (accuracy, balanced accuracy,
   precision, recall, specificity, F1, MCC, Fowlkes-Mallows, the EC of any
   given cost matrices) and of the assessed yield: opposite signs are a
   wrongly ranked pair (steps 4-6).

The fraction of wrongly ranked pairs is a binomial proportion; its Monte
Carlo standard error is ``sqrt(f (1 - f) / num_pairs)``.  The paper prints
8.7 % for accuracy and 4 % for the utility matrix with errors of sd 0.1
(uniform true utilities, 10^6 pairs).

Class 0 is the paper's "positive" class (its true-positive rate is
``C_00 / f_0``), so precision, recall, F1 and Fowlkes-Mallows are computed
for class 0.  Randomness: pairs come in blocks of :data:`BLOCK`; each device
step draws a run of ``chunk_size / BLOCK`` blocks from ``fold_in(key, first
block)``, so the same key and chunk size give the same pairs on any number
of devices.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.random_bits import first_true_indices, uniform
from ecjax._src.costs import utility_from_xy
from ecjax._src.sweep import engine
from ecjax._src.sweep.inputs import as_error_levels, as_utility_distribution

BLOCK = 4096  # pairs per random block
GAUSSIAN_SD = 1.0 / 3.0  # Dyrland et al. (2022) §4.2 item (i)

METRICS = (
    "accuracy",
    "balanced_accuracy",
    "precision",
    "recall",
    "specificity",
    "f1_score",
    "matthews_corrcoef",
    "fowlkes_mallows",
)


class Estimate(NamedTuple):
    """A Monte Carlo fraction of wrongly ranked pairs and its standard error."""

    fraction: float | np.ndarray
    standard_error: float | np.ndarray


# ------------------------------------------------------------ random numbers

_uniform = uniform


def _truncated_normal_unit(key, mean, scale):
    """``N(mean, scale^2)`` truncated to ``[0, 1]``, by the inverse CDF (as ``jax.random.truncated_normal``).

    Through ``erf``/``erf_inv`` rather than :func:`~ecjax._src.random_bits.truncated_standard_normal`'s
    ``ndtr``/``ndtri``: half the time here (0.27 s against 0.54 s for the 10^6-pair study at four error
    levels), and a mean inside ``[0, 1]`` keeps the draws out of the far tails where ``erf`` rounds to 1.
    """
    r2 = np.float32(np.sqrt(0.5))
    lo = jax.lax.erf(-mean / scale * r2)
    hi = jax.lax.erf((1.0 - mean) / scale * r2)
    z = jax.lax.erf_inv(lo + (hi - lo) * _uniform(key, mean.shape)) / r2
    return jnp.clip(mean + scale * z, 0.0, 1.0)


# ------------------------------------------------------------ rejection

def _merge(vals, ok, rows, buf_vals, buf_ok):
    """Write the accepted entries of a compacted buffer back to their rows (a scatter of the buffer only).

    ``vals`` and ``buf_vals`` are pytrees of arrays with the row axis first.
    """
    target = jnp.where(buf_ok & (rows < ok.shape[0]), rows, ok.shape[0])  # out of range: dropped
    vals = jax.tree_util.tree_map(lambda x, b: x.at[target].set(b, mode="drop"), vals, buf_vals)
    return vals, ok.at[target].set(True, mode="drop")


def _first_accepted(key, rows, propose, accept, tries):
    """Propose ``tries`` candidates per row and keep the first accepted one (exact rejection sampling)."""
    m = rows.shape[0]
    # The barrier keeps XLA from fusing (and so recomputing) the random draws into the gathers below.
    cand = jax.lax.optimization_barrier(propose(key, jnp.tile(rows, tries)))
    good = accept(cand).reshape(tries, m)
    first = jnp.argmax(good, 0)
    chosen = jax.tree_util.tree_map(
        lambda x: jnp.take_along_axis(x.reshape((tries, m) + x.shape[1:]),
                                      first.reshape((1, m) + (1,) * (x.ndim - 1)), 0)[0], cand)
    return chosen, good.any(0)


def _fill_rejected(key, vals, ok, propose, accept, buffer_sizes, tries=(2, 16)):
    """Redraw the rows of ``vals`` where ``ok`` is False until every row is accepted.

    Exact rejection sampling with fixed shapes.  The rejected rows (a few
    percent) are compacted into a buffer ``A`` and get ``tries[0]``
    candidates each (the first accepted is kept); the rows still rejected
    are compacted into a smaller buffer ``B`` with ``tries[1]`` candidates
    each.  Acceptance is at least 1/2 per candidate here, so one round almost
    always suffices; rows left over (or that did not fit a buffer) are
    picked up by the next round of the loop.  ``vals`` is a pytree of arrays
    with the row axis first; ``propose(key, rows)`` returns the same
    structure for the given rows and ``accept(vals)`` a boolean per row.
    """
    n = ok.shape[0]
    size_a, size_b = buffer_sizes

    def round_(state):
        it, vals, ok = state
        k_a, k_b = jax.random.split(jax.random.fold_in(key, it))
        rows_a = first_true_indices(~ok, size_a)
        vals_a, ok_a = _first_accepted(k_a, jnp.minimum(rows_a, n - 1), propose, accept, tries[0])
        ok_a = ok_a | (rows_a >= n)  # padding slots count as done
        pos_b = first_true_indices(~ok_a, size_b)
        rows_b = jnp.where(pos_b < size_a, rows_a[jnp.minimum(pos_b, size_a - 1)], n)
        vals_b, ok_b = _first_accepted(k_b, jnp.minimum(rows_b, n - 1), propose, accept, tries[1])
        vals_a, ok_a = _merge(vals_a, ok_a, pos_b, vals_b, ok_b)
        vals, ok = _merge(vals, ok, rows_a, vals_a, ok_a)
        return it + 1, vals, ok

    _, vals, _ = jax.lax.while_loop(lambda s: ~jnp.all(s[2]), round_, (0, vals, ok))
    return vals


def _buffers(n):
    a = max(64, n // 8)
    return a, max(16, a // 8)


# ------------------------------------------------------------ distributions

def _in_hexagon(xy):
    x, y = xy[..., 0], xy[..., 1]
    return (jnp.abs(x) <= 1) & (jnp.abs(y) <= 1) & (jnp.abs(x - y) <= 1)


def uniform_hexagon(key: jax.Array, n: int) -> jax.Array:
    """``(n, 2)`` points uniform on the hexagon of Dyrland et al. (2022) Fig. 1, without rejection.

    The hexagon (area 3) is three unit-area pieces: the squares ``[0, 1]^2``
    and ``[-1, 0]^2`` and the two triangles ``x <= 0 <= y <= 1 + x`` and
    ``y <= 0 <= x <= 1 + y``; a uniform ``(u, v)`` on the unit square is
    mapped measure-preservingly onto the chosen piece.
    """
    u, v_, w = _uniform(key, (3, n))
    piece = jnp.minimum(jnp.floor(3.0 * w), 2.0)  # one uniform per point (cheaper than randint)
    lower = u + v_ <= 1.0
    x = jnp.where(piece == 0, u, jnp.where(piece == 1, -u, jnp.where(lower, -u, 1.0 - u)))
    y = jnp.where(piece == 0, v_, jnp.where(piece == 1, -v_, jnp.where(lower, v_, v_ - 1.0)))
    return jnp.stack([x, y], -1)


def gaussian_hexagon(key: jax.Array, n: int, sd: float = GAUSSIAN_SD) -> jax.Array:
    """``(n, 2)`` points from ``N(0, sd^2 I)`` truncated to the hexagon (exact rejection)."""
    k0, k1 = jax.random.split(key)
    xy = sd * jax.random.normal(k0, (n, 2))

    def propose(k, rows):
        return sd * jax.random.normal(k, (rows.shape[0], 2))

    return _fill_rejected(k1, xy, _in_hexagon(xy), propose, _in_hexagon, _buffers(n))


def _true_utilities(key, n, distribution):
    if callable(distribution):
        return distribution(key, n)
    xy = uniform_hexagon(key, n) if distribution == "uniform" else gaussian_hexagon(key, n)
    return utility_from_xy(xy[:, 0], xy[:, 1])


def perturb_rows(key: jax.Array, correct: jax.Array, wrong: jax.Array,
                 sd: float | jax.Array) -> tuple[jax.Array, jax.Array]:
    """Assessed ``(correct, wrong)`` utility pairs, one per row (Dyrland et al. 2022, §4.2 item (iii)).

    Each utility gets an independent Gaussian error of standard deviation
    ``sd``, truncated to ``[0, 1]`` (inverse CDF); a row is redrawn until
    the correct decision keeps the higher utility (exact rejection).
    ``correct`` and ``wrong`` are 1-D arrays of the true utilities; ``sd = 0``
    returns them unchanged; ``sd`` may be traced.
    """
    sd = jnp.asarray(sd, correct.dtype)
    exact = sd <= 0
    scale = jnp.where(exact, 1.0, sd)
    means = jax.lax.optimization_barrier((correct, wrong))

    def propose(k, rows):
        kc, kw = jax.random.split(k)
        return (_truncated_normal_unit(kc, means[0][rows], scale), _truncated_normal_unit(kw, means[1][rows], scale))

    def accept(cand):
        return (cand[0] > cand[1]) | exact

    k0, kc, kw = jax.random.split(key, 3)
    first = jax.lax.optimization_barrier((_truncated_normal_unit(kc, correct, scale),
                                          _truncated_normal_unit(kw, wrong, scale)))
    c, w = _fill_rejected(k0, first, accept(first), propose, accept, _buffers(correct.shape[0]))
    return jnp.where(exact, correct, c), jnp.where(exact, wrong, w)


def perturb_utilities(key: jax.Array, utilities: jax.Array, sd: float | jax.Array) -> jax.Array:
    """Assessed utilities ``U + e`` of Dyrland et al. (2022) §4.2 item (iii), for ``(n, 2, 2)`` matrices (rows = true class).

    Every element gets an independent truncated Gaussian error (:func:`perturb_rows`
    on the rows ``(U_00, U_01)`` and ``(U_11, U_10)``), so each stays in
    ``[0, 1]`` and each class keeps its correct decision the more valuable.
    """
    n = utilities.shape[0]
    c, w = perturb_rows(key, jnp.concatenate([utilities[:, 0, 0], utilities[:, 1, 1]]),
                        jnp.concatenate([utilities[:, 0, 1], utilities[:, 1, 0]]), sd)
    row0 = jnp.stack([c[:n], w[:n]], -1)
    row1 = jnp.stack([w[n:], c[n:]], -1)
    return jnp.stack([row0, row1], -2)


def linear_rates(key: jax.Array, shape: Sequence[int]) -> jax.Array:
    """Rates on ``[0.5, 1]`` with density increasing linearly from 0: ``0.5 + 0.5 sqrt(u)``.

    CDF ``F(r) = (2 r - 1)^2``: median ``0.5 + 0.5 sqrt(0.5) = 0.854``,
    quartiles 0.75 and 0.933 (Dyrland et al. 2022, §4.2 item (ii)).
    """
    return 0.5 + 0.5 * jnp.sqrt(_uniform(key, shape))


def confusion_from_rates(proportion: float | jax.Array, tpr: float | jax.Array,
                         tnr: float | jax.Array) -> jax.Array:
    """Normalized binary confusion matrices, rows = true class, class 0 positive (Dyrland et al. 2022, eq. 21).

    ``[[B t, B (1 - t)], [(1 - B)(1 - s), (1 - B) s]]`` with ``B`` the
    proportion of class 0, ``t`` its true-positive and ``s`` the true-negative rate.
    """
    b = proportion
    row0 = jnp.stack([b * tpr, b * (1 - tpr)], -1)
    row1 = jnp.stack([(1 - b) * (1 - tnr), (1 - b) * tnr], -1)
    return jnp.stack([row0, row1], -2)


def _div(num, den):
    ok = den > 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), 0.0)


def metric_values(cm: jax.Array, extra_costs: Sequence[jax.Array] = ()) -> jax.Array:
    """``(n, M)`` metric values (higher = better) of normalized binary confusion matrices ``(n, 2, 2)``.

    The paper's §3.3 closed forms in the four cells (class 0 positive, rows =
    true class): ``tp = C_00``, ``fn = C_01``, ``fp = C_10``, ``tn = C_11``,
    ``f_0 = tp + fn``, ``f_1 = fp + tn``.  They equal :mod:`ecjax.metrics`
    with ``pos_label=0`` (the tests check it); written on the four cells as
    vectors they run about six times faster than on ``(n, 2, 2)`` matrices,
    whose minor axis of length 2 defeats vectorization.  A 0/0 gives 0, as
    the core metrics' default ``zero_division``.  For each cost matrix in
    ``extra_costs`` the value is ``-EC = -sum_ij c_ij C_ij`` (lower cost is
    better).
    """
    return _metric_cells((cm[..., 0, 0], cm[..., 0, 1], cm[..., 1, 0], cm[..., 1, 1]), extra_costs)


def _metric_cells(cells, extra_costs=()):
    """:func:`metric_values` on the four cells ``(tp, fn, fp, tn)`` as separate arrays."""
    tp, fn, fp, tn = cells
    f0, f1 = tp + fn, fp + tn
    precision = _div(tp, tp + fp)
    recall = _div(tp, f0)
    specificity = _div(tn, f1)
    vals = [
        (tp + tn) / (f0 + f1),  # accuracy
        0.5 * (recall + specificity),  # balanced accuracy
        precision,
        recall,
        specificity,
        _div(2 * tp, 2 * tp + fp + fn),  # F1
        _div(tp * tn - fp * fn, jnp.sqrt((tp + fp) * f0 * f1 * (tn + fn))),  # MCC
        jnp.sqrt(precision * recall),  # Fowlkes-Mallows
    ]
    for c in extra_costs:
        vals.append(-(c[0, 0] * tp + c[0, 1] * fn + c[1, 0] * fp + c[1, 1] * tn) / (f0 + f1))
    return jnp.stack(vals, -1)


# ------------------------------------------------------------ the study

@dataclass(frozen=True)
class _Slice:
    """The study on one device's slice of ``L`` consecutive blocks of pairs, computed flat."""

    distribution: str | Callable

    def __call__(self, args, blocks):
        key, num_pairs, extra_costs, sds = args
        n = blocks.shape[0] * BLOCK
        # One key per slice, from its first block: the same key and chunk size give the same pairs on any
        # number of devices (each device's slice is the same run of blocks).
        ku, kp, kr, ke = jax.random.split(jax.random.fold_in(key, blocks[0]), 4)
        # Everything below works on the four cells as separate vectors (structure of arrays): a minor
        # axis of length 2 would defeat vectorization.  Barriers keep XLA from fusing (and so
        # recomputing) random draws into each of their consumers.
        u = _true_utilities(ku, n, self.distribution)
        u00, u01, u10, u11 = jax.lax.optimization_barrier((u[:, 0, 0], u[:, 0, 1], u[:, 1, 0], u[:, 1, 1]))
        b = _uniform(kp, (n,))
        t1, s1, t2, s2 = jax.lax.optimization_barrier(linear_rates(kr, (4, n)))
        # Cells (tp, fn, fp, tn) of Dyrland et al. (2022) eq. 21, rows = true class, class 0 positive.
        cells1 = (b * t1, b * (1 - t1), (1 - b) * (1 - s1), (1 - b) * s1)
        cells2 = (b * t2, b * (1 - t2), (1 - b) * (1 - s2), (1 - b) * s2)
        delta = [x1 - x2 for x1, x2 in zip(cells1, cells2)]  # (d00, d01, d10, d11)

        def yield_diff(v00, v01, v10, v11):  # sum_ij U_ij (C1 - C2)_ij, Dyrland et al. (2022) eq. 10
            return v00 * delta[0] + v01 * delta[1] + v10 * delta[2] + v11 * delta[3]

        d_true = yield_diff(u00, u01, u10, u11)
        d_metric = _metric_cells(cells1, extra_costs) - _metric_cells(cells2, extra_costs)

        def assessed(e_sd):
            e, sd = e_sd
            c, w = perturb_rows(jax.random.fold_in(ke, e), jnp.concatenate([u00, u11]), jnp.concatenate([u01, u10]),
                                sd)
            return yield_diff(c[:n], w[:n], w[n:], c[n:])

        # One compiled body for any number of error levels (sd is traced).
        d_assessed = jax.lax.map(assessed, (jnp.arange(sds.shape[0]), sds)).T
        d_all = jnp.concatenate([d_metric, d_assessed], -1)
        live = blocks[0] * BLOCK + jnp.arange(n) < num_pairs
        wrong = (d_true[:, None] * d_all < 0) & live[:, None]
        return wrong.reshape(blocks.shape[0], BLOCK, -1).sum(1, dtype=jnp.int32)


def _sum_valid(acc, out, idx, valid):
    return acc + jnp.sum(jnp.where(valid[:, None], out, 0), 0, dtype=jnp.int32)


def metric_reliability(key: jax.Array, *, num_pairs: int, utility_error_sd: float | Sequence[float] = 0.1,
                       utility_distribution: str | Callable[[jax.Array, int], jax.Array] = "uniform",
                       costs: Mapping[str, ArrayLike] | None = None, chunk_size: int = 4 * BLOCK,
                       devices: int | Sequence[jax.Device] | None = None,
                       progress: bool | Callable[[int], Any] = False) -> dict[str, Estimate]:
    """Fraction of pairs of confusion matrices each metric ranks opposite to the true utility yield.

    Dyrland et al. (2022) §4.2 (procedure steps 1-6; Figs. 6-7): see the module docstring.

    Args:
      key: a ``jax.random`` key.
      num_pairs: number of Monte Carlo pairs (Dyrland et al. use ``10^6``).
      utility_error_sd: standard deviation of the utility-assessment errors
        (seed: 0 to 0.3), or a sequence of them: the ``"utility_yield"``
        entry then holds one fraction per value, on the same pairs (the
        curve of Fig. 7).
      utility_distribution: ``"uniform"`` or ``"gaussian"`` over the Fig. 1
        set (item (i)), or a callable ``sample(key, n) -> (n, 2, 2)`` of true
        utility matrices in ``[0, 1]`` (rows = true class, correct decisions
        worth more), e.g. a utility prior.
      costs: optional ``{name: (2, 2) cost matrix}``: the EC with data
        priors of each is reported under its name.
      chunk_size: pairs per chunk (rounded up to whole blocks of
        :data:`BLOCK` pairs).
      devices, progress: as in :func:`ecjax.sweep.sweep_counts`.

    Returns:
      ``{metric name: Estimate(fraction, standard_error)}`` for the names in
      :data:`METRICS`, then each entry of ``costs``, then ``"utility_yield"``
      (the assessed utility matrix; arrays when ``utility_error_sd`` is a
      sequence).

    Example:
      >>> res = metric_reliability(jax.random.key(0), num_pairs=10**5, utility_error_sd=0.1)
      >>> round(float(res["accuracy"].fraction), 2)  # Dyrland et al. (2022): 8.7 %
      0.09
    """
    num_pairs = v.as_scalar(num_pairs, "num_pairs", integer=True, low=1)
    key = v.as_key(key)
    sds, scalar_sd = as_error_levels(utility_error_sd)
    as_utility_distribution(utility_distribution)
    costs = dict(costs or {})
    names = list(METRICS)
    extra = []
    for name, c in costs.items():
        if name in names or name == "utility_yield":
            raise v.InputError(f"`costs` name {name!r} clashes with a metric name")
        extra.append(v.as_matrix(c, f"costs[{name!r}]", shape=(2, 2), batched=False))
        names.append(name)
    chunk_size = v.as_scalar(chunk_size, "chunk_size", integer=True, low=1)
    num_blocks = math.ceil(num_pairs / BLOCK)
    kernel = _Slice(utility_distribution)
    args = (key, jnp.asarray(num_pairs, jnp.int32), tuple(extra), jnp.asarray(sds, jnp.float32))
    init = jnp.zeros((len(names) + len(sds),), jnp.int32)
    wrong, _, _ = engine.map_reduce(kernel, _sum_valid, init, num_blocks, args=args,
                                    settings=engine.SweepSettings(chunk_size=max(1, math.ceil(chunk_size / BLOCK)),
                                                                  devices=devices, progress=progress))
    frac = np.asarray(wrong, np.float64) / num_pairs
    se = np.sqrt(frac * (1 - frac) / num_pairs)
    out = {name: Estimate(float(frac[i]), float(se[i])) for i, name in enumerate(names)}
    u_frac, u_se = frac[len(names):], se[len(names):]
    out["utility_yield"] = Estimate(float(u_frac[0]), float(u_se[0])) if scalar_sd else Estimate(u_frac, u_se)
    return out
