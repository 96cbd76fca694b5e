"""Sensitivity sweeps: which system wins, where, by how much, and where the order flips.

Two modes (Dyrland et al. 2022, §3.3-§4; Ferrer (2025) §4.1; Ferrer (2022b) §4.8.1):

* **decisions given** (:func:`sweep_counts`): each system's confusion counts
  are fixed and only the weights change, ``EC = sum_ij c_ij P_i R_ij``
  (Ferrer 2022a, eq. 2) at every point (a tiny einsum per point);
* **scores given** (:func:`sweep_scores`): Bayes decisions ``argmin_j sum_i
  c_ij P(i|x)`` (Ferrer 2025, eq. 7) are recomputed at every point, so the
  decisions follow the costs.  For binary scores and 2 decisions the Bayes
  decision is a threshold on the log posterior odds, so the per-class scores
  are sorted once and the counts at any threshold are a binary search:
  ``O(log N)`` per point instead of ``O(N)``.

Both return a :class:`SweepResult` with, per point and system, the EC, NEC or
utility yield (Dyrland et al. 2022, eq. 10), the winner, the fraction of the swept
space each system wins and the points where the order of two systems flips.
The sweep runs on the chunked, sharded engine of :mod:`ecjax.sweep.engine`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src import result_formats
from ecjax._src.confusion import class_counts, data_priors, rates
from ecjax._src.decisions import (
    bayes_decisions_kernel,
    class_one_log_odds_kernel,
    log_posteriors_kernel,
    naive_expected_cost,
)
from ecjax._src.metrics import as_counts, expected_value
from ecjax._src.precision import einsum
from ecjax._src.sweep import engine
from ecjax._src.sweep.engine import SweepSettings
from ecjax._src.sweep.inputs import (
    check_absent_classes,
    check_values_kept,
    combined_axis,
    matrix_source,
    per_class_counts,
    prior_source,
    sorted_by_class,
    split_point_values,
    systems_scores,
)
from ecjax._src.sweep.grids import Axis
from ecjax._src.sweep.roc import TangentPoint, hull_of_roc, padded_hulls

DENSE_CHUNK = 256  # points per device per step on a CPU when every point makes N decisions
TIE = -2  # winner code where the best value is shared by several systems
UNDEFINED = -1  # winner code outside the swept space (or where a value is undefined)


# ================================================================== results

@dataclass(frozen=True)
class SweepResult:
    """Outcome of a sweep over ``shape`` points for ``S`` systems.

    Attributes:
      shape: the sweep shape (C order, last axis fastest).
      metric: ``"ec"``, ``"nec"``, ``"yield"`` or ``"value"`` (a custom point function).
      higher_is_better: ``True`` for utility yields.
      num_points: points where every system's value is defined.
      win_counts: ``(S,)`` points where each system is strictly the best.
      win_fraction: ``(S,)`` fraction of the swept space each system wins.
      tie_count, tie_fraction: points (fraction) where several systems share
        the best value (typically where all of them make the naive decision).
      pairwise_wins: ``(S, S)``: ``[a, b]`` = points where ``a`` is strictly better than ``b``.
      minimum, maximum, mean: ``(S,)`` value ranges over the sweep.
      flip_counts: ``(S, S)`` symmetric: how often the order of ``a`` and ``b``
        reverses between consecutive points along the last swept axis (ties
        are skipped: a flip is a point whose strict order is the reverse of
        the last strict order before it on the same line).
      flips: ``{(a, b): flat indices}`` for ``a < b``: the first
        ``max_flips`` points where a flip happens (use :meth:`flip_points`).
      values: ``shape + (S,)`` values per point, or ``None`` (``SweepSettings(return_values=False)``).
      winners: ``shape`` winner per point (:data:`TIE` = -2 where the best
        value is shared, :data:`UNDEFINED` = -1 outside the swept space), or ``None``.
      coords: per-dimension coordinates of the swept axes (``None`` where absent).
      info: engine details: ``chunk`` (points per chunk actually used),
        ``num_chunks``, ``num_devices``.
    """

    shape: tuple
    metric: str
    higher_is_better: bool
    num_points: int
    win_counts: np.ndarray
    win_fraction: np.ndarray
    tie_count: int
    tie_fraction: float
    pairwise_wins: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    mean: np.ndarray
    flip_counts: np.ndarray
    flips: dict
    values: np.ndarray | None = None
    winners: np.ndarray | None = None
    coords: tuple = ()
    info: dict = field(default_factory=dict)

    SWEEP_TABLES = ("points", "systems")

    def to_dict(self, systems: Sequence[str] | None = None) -> dict[str, Any]:
        """The sweep's part of ``ecjax sweep --json``'s record: ``win_fraction`` by system, ``tie_fraction``,
        ``num_points``, ``metric`` and, where kept, each system's ``values`` (nested lists of the sweep's shape) and
        the ``winners`` by name (``"tie"`` where shared, ``None`` outside the swept space)."""
        names = v.system_names(systems, None, len(self.win_fraction))
        record: dict[str, Any] = {"win_fraction": result_formats.by_system(names, self.win_fraction),
                                  "tie_fraction": float(self.tie_fraction), "num_points": int(self.num_points),
                                  "metric": self.metric}
        if self.values is not None:
            values = np.asarray(self.values)
            record["values"] = {n: values[..., i].tolist() for i, n in enumerate(names)}
        if self.winners is not None:
            labels = np.array([*names, "tie", None], dtype=object)  # index -2 is TIE, -1 UNDEFINED
            record["winners"] = labels[np.asarray(self.winners)].tolist()
        return record

    def to_frame(self, table: str = "points", systems: Sequence[str] | None = None) -> Any:
        """A pandas ``DataFrame`` (pandas is optional: ``pip install "ecjax[pandas]"``).

        ``table="points"`` (needs ``SweepSettings(return_values=True)``): one row per swept point in C order,
        a column ``axis_d`` per swept dimension with scalar coordinates, one column of values per system and
        ``winner`` (a system's name, ``"tie"`` or ``None``, as :meth:`to_dict`).  ``"systems"``: one row per system,
        ``win_count``, ``win_fraction``, ``minimum``, ``maximum``, ``mean``.
        """
        v.check_choice(table, "table", self.SWEEP_TABLES)
        names = v.system_names(systems, None, len(self.win_fraction))
        if table == "systems":
            return result_formats.system_frame(names, {"win_count": self.win_counts, "win_fraction": self.win_fraction,
                                                       "minimum": self.minimum, "maximum": self.maximum,
                                                       "mean": self.mean})
        check_values_kept(self.winners, "to_frame('points')")
        pd = result_formats.pandas()
        columns: dict[str, Any] = {}
        grid = np.indices(self.shape).reshape(len(self.shape), -1)
        for d, coord in enumerate(self.coords):
            if coord is not None and np.ndim(coord) == 1 and len(coord) == self.shape[d]:
                columns[f"axis_{d}"] = np.asarray(coord)[grid[d]]
        values = np.asarray(self.values).reshape(-1, len(names))
        columns.update({n: values[:, i] for i, n in enumerate(names)})
        columns["winner"] = np.array([*names, "tie", None], dtype=object)[np.asarray(self.winners).ravel()]
        return pd.DataFrame(columns, index=pd.RangeIndex(values.shape[0], name="point"))

    def flip_points(self, a: int, b: int) -> np.ndarray:
        """Multi-indices (one row per flip) where the order of systems ``a`` and ``b`` reverses."""
        key = (min(a, b), max(a, b))
        flat = self.flips[key]
        return np.stack(np.unravel_index(flat, self.shape), -1) if len(flat) else np.zeros((0, len(self.shape)), int)

    def winner_runs(self) -> list[tuple[int, int, int]]:
        """Who wins where along a one-dimensional sweep: ``[(first, last, winner), ...]``.

        Consecutive points with the same winner form one run; ``first`` and
        ``last`` are point indices (inclusive) and ``winner`` a system index,
        :data:`TIE` or :data:`UNDEFINED`.  The true boundary between two runs
        lies somewhere between the last point of one and the first of the
        next: a finer grid narrows it.  Needs ``SweepSettings(return_values=True)``.
        """
        check_values_kept(self.winners, "winner_runs")
        if len(self.shape) != 1:
            raise v.InputError(f"winner_runs is for one-dimensional sweeps, got shape {self.shape}")
        w = np.asarray(self.winners)
        if w.size == 0:
            return []
        starts = np.flatnonzero(np.r_[True, w[1:] != w[:-1]])
        ends = np.r_[starts[1:] - 1, len(w) - 1]
        return [(int(a), int(b), int(w[a])) for a, b in zip(starts, ends)]


# ============================================================ reductions

def _pairs(s):
    ia, ib = np.triu_indices(s, 1)
    return ia.astype(np.int32), ib.astype(np.int32)


def init_accumulator(num_systems: int, max_flips: int) -> dict[str, jax.Array]:
    s = num_systems
    npairs = s * (s - 1) // 2
    f32 = jnp.float32
    return {
        "count": jnp.zeros((), jnp.int32),
        "undefined": jnp.zeros((), jnp.int32),
        "first_undefined": jnp.full((), engine.MAX_POINTS, jnp.int32),
        "wins": jnp.zeros((s,), jnp.int32),
        "ties": jnp.zeros((), jnp.int32),
        "beats": jnp.zeros((s, s), jnp.int32),
        "vmin": jnp.full((s,), jnp.inf, f32),
        "vmax": jnp.full((s,), -jnp.inf, f32),
        "vsum": jnp.zeros((s,), f32),
        "vcomp": jnp.zeros((s,), f32),
        "last_sign": jnp.zeros((npairs,), jnp.int8),
        "flip_count": jnp.zeros((npairs,), jnp.int32),
        "flip_idx": jnp.full((npairs, max_flips), -1, jnp.int32),
    }


@dataclass(frozen=True)
class StandardReduce:
    """Streamed reductions of per-point values: winners, ranges, pairwise order, flips.

    Works on the values transposed to ``(S, c)`` (systems major), so every
    reduction runs along the long, contiguous point axis.
    """

    num_systems: int
    higher_is_better: bool
    row_len: int
    max_flips: int

    def winners(self, vt: jax.Array, ok: jax.Array) -> jax.Array:
        """``(c,)``: the strictly best system, :data:`TIE` if the best value is shared, -1 where not ok."""
        best = jnp.max(vt, 0) if self.higher_is_better else jnp.min(vt, 0)
        w = jnp.argmax(vt, 0) if self.higher_is_better else jnp.argmin(vt, 0)
        shared = jnp.sum(vt == best[None, :], 0) > 1
        return jnp.where(ok, jnp.where(shared, TIE, w.astype(jnp.int32)), UNDEFINED)

    def __call__(self, acc, out, idx, valid):
        vals, point_ok, w = out  # w: winners from the local function (where the point and values are ok)
        vt = vals.astype(jnp.float32).T  # (S, c)
        in_range = valid & point_ok
        finite = jnp.all(jnp.isfinite(vt), 0)
        ok = in_range & finite
        bad = in_range & ~finite
        s = self.num_systems
        acc = dict(acc)
        acc["count"] = acc["count"] + ok.sum(dtype=jnp.int32)
        acc["undefined"] = acc["undefined"] + bad.sum(dtype=jnp.int32)
        acc["first_undefined"] = jnp.minimum(acc["first_undefined"],
                                             jnp.min(jnp.where(bad, idx, engine.MAX_POINTS)))
        w = jnp.where(valid, w, UNDEFINED)  # the padding of the last chunk
        acc["wins"] = acc["wins"] + jnp.sum(w[None, :] == jnp.arange(s)[:, None], -1, dtype=jnp.int32)
        acc["ties"] = acc["ties"] + jnp.sum(w == TIE, dtype=jnp.int32)
        better = vt[:, None, :] > vt[None, :, :] if self.higher_is_better else vt[:, None, :] < vt[None, :, :]
        acc["beats"] = acc["beats"] + jnp.sum(better & ok, -1, dtype=jnp.int32)
        acc["vmin"] = jnp.minimum(acc["vmin"], jnp.min(jnp.where(ok, vt, jnp.inf), -1))
        acc["vmax"] = jnp.maximum(acc["vmax"], jnp.max(jnp.where(ok, vt, -jnp.inf), -1))
        # Kahan summation across chunks keeps the mean of 10^8 points accurate in float32.
        y = jnp.sum(jnp.where(ok, vt, 0.0), -1) - acc["vcomp"]
        t = acc["vsum"] + y
        acc["vcomp"] = (t - acc["vsum"]) - y
        acc["vsum"] = t
        if s > 1:
            acc.update(self._flips(acc, vt, ok, idx))
        return acc

    def _flips(self, acc, vt, ok, idx):
        ia, ib = _pairs(self.num_systems)
        diff = vt[ia] - vt[ib]  # (pairs, c)
        sign = jnp.sign(diff if self.higher_is_better else -diff).astype(jnp.int8)  # +1: a better than b
        sign = jnp.where(ok, sign, 0)
        row_start = jnp.broadcast_to(idx % self.row_len == 0, sign.shape)
        carry = acc["last_sign"][:, None]

        def consecutive():
            # No ties or gaps in this chunk: the previous strict sign is simply the previous point's.
            return jnp.concatenate([carry, sign[:, :-1]], 1), sign[:, -1]

        def through_ties():
            # The previous strict sign on the same line: the last point before i with a strict order or a
            # line start (cummax of positions; a line start with a tie carries 0: no flip across lines).
            marks = (sign != 0) | row_start
            local = jnp.arange(sign.shape[1], dtype=jnp.int32)
            last = jax.lax.cummax(jnp.where(marks, local, -1), axis=1)
            prev_pos = jnp.concatenate([jnp.full((sign.shape[0], 1), -1, jnp.int32), last[:, :-1]], 1)
            prev = jnp.where(prev_pos >= 0, jnp.take_along_axis(sign, jnp.maximum(prev_pos, 0), 1), carry)
            end = last[:, -1:]
            new_last = jnp.where(end >= 0, jnp.take_along_axis(sign, jnp.maximum(end, 0), 1), carry)[:, 0]
            return prev, new_last

        prev, new_last = jax.lax.cond(jnp.any(sign == 0), through_ties, consecutive)
        flip = (sign != 0) & (prev != 0) & (sign != prev) & ~row_start

        def record(flip_idx):
            rank = acc["flip_count"][:, None] + jnp.cumsum(flip, 1, dtype=jnp.int32) - 1
            slot = jnp.where(flip & (rank < self.max_flips), rank, self.max_flips)
            return jax.vmap(lambda buf, sl: buf.at[sl].set(idx, mode="drop"))(flip_idx, slot)

        # Flips are rare: the positions are only worked out for chunks that have some.
        flip_idx = jax.lax.cond(jnp.any(flip), record, lambda f: f, acc["flip_idx"])
        return {
            "flip_idx": flip_idx,
            "flip_count": acc["flip_count"] + flip.sum(1, dtype=jnp.int32),
            "last_sign": new_last,
        }


@dataclass(frozen=True)
class _WithWinners:
    """Local function wrapper that also emits per-point winners (for ``return_values``)."""

    point_fn: Callable
    reduce: StandardReduce

    def __call__(self, args, idx):
        vals, ok = self.point_fn(args, idx)
        vt = vals.astype(jnp.float32).T
        return vals, ok, self.reduce.winners(vt, ok & jnp.all(jnp.isfinite(vt), 0))


def run_sweep(problem: Problem, settings: SweepSettings = SweepSettings()) -> SweepResult:
    """Run a problem's point function ``(args, idx) -> (values (c, S), ok (c,))`` over every point of its axis.

    With ``settings.chunk_size=None`` the chunk is :func:`ecjax.sweep.engine.auto_chunk_size` of the problem's
    ``point_bytes`` (default: the per-point values and winner bookkeeping) and ``cpu_chunk``.
    """
    settings = engine.check_sweep_settings(settings)
    shape, num_systems, max_flips = problem.axis.shape, problem.num_systems, settings.max_flips
    higher_is_better = problem.is_higher_better
    num = int(np.prod(shape))
    row_len = int(shape[-1]) if len(shape) else 1
    red = StandardReduce(int(num_systems), higher_is_better, max(row_len, 1), max_flips)
    point_bytes = 64 + 16 * int(num_systems) if problem.point_bytes is None else problem.point_bytes
    acc, outs, info = engine.map_reduce(
        _WithWinners(problem.point_fn, red), red, init_accumulator(num_systems, max_flips), num,
        args=problem.args, settings=settings, collect=settings.return_values, point_bytes=point_bytes,
        cpu_chunk=problem.cpu_chunk,
    )
    acc = jax.tree_util.tree_map(np.asarray, acc)
    what = "NEC values (the best naive decision costs 0)" if problem.kind == "nec" else "the swept values"
    if acc["undefined"] > 0:
        first = np.unravel_index(int(acc["first_undefined"]), shape)
        raise v.InputError(
            f"{what} are undefined (NaN or inf) at {int(acc['undefined'])} of {num} points, first at index "
            f"{tuple(int(i) for i in first)}"
        )
    count = int(acc["count"])
    ia, ib = _pairs(num_systems)
    flip_counts = np.zeros((num_systems, num_systems), np.int64)
    flips = {}
    for p, (a, b) in enumerate(zip(ia, ib)):
        n = int(acc["flip_count"][p])
        flip_counts[a, b] = flip_counts[b, a] = n
        buf = acc["flip_idx"][p]
        flips[(int(a), int(b))] = np.sort(buf[buf >= 0]).astype(np.int64)
    vals = winners = None
    if settings.return_values:
        vals_flat, ok_flat, win_flat = outs
        vals = np.where(ok_flat[:, None], vals_flat, np.nan).reshape(tuple(shape) + (num_systems,))
        winners = win_flat.reshape(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        return SweepResult(
            shape=tuple(int(s) for s in shape),
            metric=problem.kind,
            higher_is_better=bool(higher_is_better),
            num_points=count,
            win_counts=acc["wins"].astype(np.int64),
            win_fraction=acc["wins"] / max(count, 1),
            tie_count=int(acc["ties"]),
            tie_fraction=int(acc["ties"]) / max(count, 1),
            pairwise_wins=acc["beats"].astype(np.int64),
            minimum=acc["vmin"],
            maximum=acc["vmax"],
            mean=(acc["vsum"].astype(np.float64) / count) if count else np.full(num_systems, np.nan),
            flip_counts=flip_counts,
            flips=flips,
            values=vals,
            winners=winners,
            coords=tuple(problem.axis.coords),
            info=info,
        )


# ============================================================ generic map

@dataclass(frozen=True)
class _UserPoint:
    """The point function of :func:`sweep_map`: the user's ``fn`` vmapped over the axis values at ``idx``, its
    output shaped as ``(values (c, S), ok (c,))``."""

    fn: Callable
    axis_fn: Callable

    def __call__(self, args, idx):
        data, user_args = args
        point = self.axis_fn(data, idx)
        out = jax.vmap(lambda p: self.fn(p, *user_args))(point)
        if isinstance(out, tuple):
            vals, ok = out
        else:
            vals, ok = out, jnp.ones(idx.shape, bool)
        return jnp.atleast_1d(vals).reshape(idx.shape + (-1,)), ok


def sweep_map(fn: Callable, axis: Axis, *args: Any, higher_is_better: bool = False,
              settings: SweepSettings = SweepSettings()) -> SweepResult:
    """Sweep any per-point function: ``fn(point, *args) -> (S,)`` values (or ``(values, ok)``).

    ``point`` is the value of one point of ``axis`` (a matrix, a prior
    vector, a tuple for a :func:`~ecjax.sweep.grids.product`); ``fn`` is
    vmapped over the points of each chunk.  Lower values are better unless
    ``higher_is_better``.  ``fn`` must be a stable (module-level) function for
    the compiled sweep to be reused across calls.  ``settings``: as in
    :func:`sweep_counts`.
    """
    v.check_instance(axis, Axis, "axis", "ecjax.sweep.grids.Axis")
    probe = jax.eval_shape(lambda d, *a: _UserPoint(fn, axis.fn)((d, a), jnp.zeros((1,), jnp.int32)),
                           axis.data, *args)
    num_systems = int(probe[0].shape[-1])
    problem = Problem(_UserPoint(fn, axis.fn), (axis.data, args), axis, num_systems, "value",
                      higher_is_better=bool(higher_is_better))
    return run_sweep(problem, settings)


# ============================================================ decisions given

@dataclass(frozen=True)
class _CountsPoint:
    """EC / NEC / yield of fixed counts at each point: Ferrer (2022a) eq. 2 as a contraction.

    ``EC_s = sum_ij m_ij P_i R^s_ij``: with the priors fixed the weights
    ``W^s_ij = P_i R^s_ij`` are computed once and every chunk is one matrix
    product ``(c, K D) x (K D, S)``; with swept priors the rates are
    contracted with the matrices first, then with the priors.
    """

    axis_fn: Callable
    layout: str
    kind: str  # "ec" | "nec" | "yield"

    def __call__(self, args, idx):
        rate, weights, data_p, fixed_m, fixed_p, data = args
        m, p = split_point_values(self.axis_fn(data, idx), self.layout, fixed_m, fixed_p)
        c = idx.shape[0]
        m = jnp.broadcast_to(m, (c,) + rate.shape[-2:])
        if p is None:
            val = einsum("cij,sij->cs", m, weights)
            p = data_p[None]  # (1, S, K): each system's own data priors (for the naive EC)
        else:
            p = jnp.broadcast_to(p, (c, rate.shape[-2]))
            val = einsum("ci,sij,cij->cs", p, rate, m)
            p = p[:, None]
        if self.kind == "nec":
            naive = naive_expected_cost(m[:, None], p)  # (c, S) or (c, 1)
            val = jnp.where(naive > 0, val / jnp.where(naive > 0, naive, 1.0), jnp.nan)
        return val, jnp.ones((c,), bool)


def sweep_counts(counts: ArrayLike, costs: ArrayLike | Axis | None = None, *, utilities: ArrayLike | Axis | None = None,
                 priors: ArrayLike | Axis | None = None, normalize: bool = False,
                 settings: SweepSettings = SweepSettings()) -> SweepResult:
    """Sweep costs, utilities and/or priors with each system's decisions fixed.

    At every point ``EC_s = sum_ij c_ij P_i R^s_ij`` (Ferrer 2022a, eq. 2) for
    each system ``s``; with ``normalize`` divided by the EC of the best naive
    decision ``min_j sum_i c_ij P_i`` (NEC, Ferrer (2022a) eq. 4); with
    ``utilities`` the utility yield ``sum_ij U_ij P_i R_ij`` (Dyrland et al. (2022)
    eq. 10, higher is better).

    Args:
      counts: ``(S, K, D)`` confusion counts of ``S`` systems (or one ``(K, D)``).
      costs: a ``(K, D)`` matrix (fixed), a ``(B, K, D)`` grid of matrices,
        or an :class:`~ecjax.sweep.grids.Axis` of matrices (cost ratios,
        random draws of a prior, a parametric family).
      utilities: instead of ``costs``: utility matrices, same forms.
      priors: ``None`` (each system's data priors), a ``(K,)`` vector, a
        ``(B, K)`` grid or an Axis (deployment priors).  When both the
        matrices and the priors are swept, the sweep is their product
        (shape ``(B_matrices, B_priors)``).
      normalize: NEC instead of EC (costs only).
      settings: how the sweep runs (:class:`~ecjax.sweep.SweepSettings`:
        chunk size, devices, progress, whether per-point values are kept,
        flips recorded).  The default chunk here is ``2^21 / (K D)`` points
        clipped to ``[2^12, 2^16]`` on a CPU (a chunk of matrices stays in
        cache), up to ``2^22`` on a GPU or TPU as its memory allows.

    Returns:
      :class:`SweepResult`.

    Example:
      >>> from ecjax.sweep import grids
      >>> counts = jnp.array([[[80, 20], [10, 90]], [[95, 5], [30, 70]]])
      >>> res = sweep_counts(counts, grids.cost_ratios(0.1, 10.0, 101))
      >>> int(res.flip_counts[0, 1])  # system 1 wins for cheap misses, system 0 for costly ones
      1
    """
    return run_sweep(counts_problem(counts, costs, utilities, priors, normalize), settings)


@dataclass(frozen=True, eq=False)
class Problem:
    """A prepared sweep: point function, its arguments, the swept axis and what the values are.

    ``kind`` names the values (``"ec"``, ``"nec"``, ``"yield"``, or ``"value"`` for :func:`sweep_map`); yields are
    higher-is-better, costs lower, and ``higher_is_better`` says it for ``"value"``.  ``cpu_chunk`` and
    ``point_bytes`` (working set per point) size the automatic chunk.
    """

    point_fn: Callable
    args: Any
    axis: Axis
    num_systems: int
    kind: str
    cpu_chunk: int = engine.CPU_CHUNK
    point_bytes: int | None = None
    higher_is_better: bool | None = None

    @property
    def is_higher_better(self) -> bool:
        return self.kind == "yield" if self.higher_is_better is None else bool(self.higher_is_better)


def _kind(matrix_name, normalize):
    if matrix_name == "utilities":
        if normalize:
            raise v.InputError("`normalize` applies to costs (NEC); utility yields are not normalized")
        return "yield"
    return "nec" if normalize else "ec"


def counts_problem(counts: ArrayLike, costs: ArrayLike | Axis | None = None, utilities: ArrayLike | Axis | None = None,
                   priors: ArrayLike | Axis | None = None, normalize: bool = False) -> Problem:
    """Validate the inputs of :func:`sweep_counts` and prepare its sweep."""
    counts = as_counts(counts)
    v.check_shape(counts, "counts", "(K, D)", "(S, K, D)")
    if counts.ndim == 2:
        counts = counts[None]
    k, d = counts.shape[-2:]
    name, fixed_m, m_axis = matrix_source(costs, utilities, k, d)
    kind = _kind(name, normalize)
    fixed_p, p_axis = prior_source(priors, k)
    check_absent_classes(class_counts(counts), fixed_p, p_axis)
    axis, layout = combined_axis(m_axis, p_axis)
    rate = rates(counts).astype(jnp.float32)
    data_p = data_priors(counts).astype(jnp.float32)
    weights = (fixed_p if fixed_p is not None else data_p)[..., :, None] * rate  # W_ij = P_i R_ij
    # A chunk of (K, D) matrices of about 8 MB keeps the per-point contraction in cache.
    chunk = int(2 ** np.clip(np.floor(np.log2(2**21 / (k * d))), 12, 16))
    return Problem(_CountsPoint(axis.fn, layout, kind), (rate, weights, data_p, fixed_m, fixed_p, axis.data), axis,
                   counts.shape[0], kind, chunk, point_bytes=4 * k * d + 64 + 16 * counts.shape[0])


# ============================================================ scores given

@dataclass(frozen=True)
class _DenseScoresPoint:
    axis_fn: Callable
    layout: str
    kind: str
    score_type: str
    recompute_posteriors: bool
    point_batch: int

    def __call__(self, args, idx):
        labels, scores, n_i, fixed_m, fixed_p, data = args
        vals = self.axis_fn(data, idx)

        def one(point):
            _, point_vals = point
            m, p = split_point_values(point_vals, self.layout, fixed_m, fixed_p)
            costs = -m if self.kind == "yield" else m
            if self.recompute_posteriors:
                with jax.numpy_dtype_promotion("standard"):
                    log_post = log_posteriors_kernel(scores, jnp.log(p), self.score_type)
            else:
                log_post = scores
            dec = bayes_decisions_kernel(log_post, costs)  # (S, N)
            pp = (n_i / n_i.sum(-1, keepdims=True)) if p is None else jnp.broadcast_to(p, n_i.shape)
            per_class = jnp.where(n_i > 0, pp / jnp.where(n_i > 0, n_i, 1), 0.0)  # (S, K)
            w = jnp.take_along_axis(per_class, labels, 1)  # (S, N)
            cell = m.reshape(-1)[labels * m.shape[-1] + dec]
            val = jnp.sum(w * cell, -1)
            if self.kind == "nec":
                naive = naive_expected_cost(m, pp)
                val = jnp.where(naive > 0, val / jnp.where(naive > 0, naive, 1.0), jnp.nan)
            return val

        out = jax.lax.map(one, (idx, vals), batch_size=self.point_batch)
        return out, jnp.ones(idx.shape, bool)


@dataclass(frozen=True)
class _ThresholdPoint:
    """Binary Bayes decisions as thresholds on the log odds, counted by binary search."""

    axis_fn: Callable
    layout: str
    kind: str
    likelihood: bool  # llr / log_likelihoods: the priors shift the log odds

    def __call__(self, args, idx):
        sorted0, sorted1, n_i, fixed_m, fixed_p, data = args
        m, p = split_point_values(self.axis_fn(data, idx), self.layout, fixed_m, fixed_p)
        c = idx.shape[0]
        m = jnp.broadcast_to(m, (c, 2, 2))
        costs = -m if self.kind == "yield" else m
        a = costs[:, 0, 1] - costs[:, 0, 0]  # extra cost of deciding 1 for class 0
        b = costs[:, 1, 0] - costs[:, 1, 1]  # extra cost of deciding 0 for class 1
        # Decide 1 iff P(1|x) b > P(0|x) a, i.e. exp(L) b > a for the log odds L (ties: decision 0):
        # b > 0: L > log(a / b) (always when a <= 0); b < 0: L < log(a / b) (never when a >= 0);
        # b = 0: always when a < 0, else never.
        tau = jnp.log(jnp.abs(a / jnp.where(b != 0, b, 1.0)))
        greater = b > 0
        always_1 = ((b > 0) & (a <= 0)) | ((b == 0) & (a < 0))
        never_1 = (b <= 0) & (a >= 0)
        if self.likelihood:
            p_b = jnp.broadcast_to(p, (c, 2))
            with jax.numpy_dtype_promotion("standard"):
                shift = jnp.log(p_b[:, 1]) - jnp.log(p_b[:, 0])  # L = llr + shift
            # P1 = 0: posterior of class 1 is 0: decide 1 iff a < 0. P0 = 0: decide 1 iff b > 0.
            p1_zero = p_b[:, 1] == 0
            p0_zero = p_b[:, 0] == 0
            always_1 = jnp.where(p1_zero, a < 0, jnp.where(p0_zero, b > 0, always_1))
            never_1 = jnp.where(p1_zero, a >= 0, jnp.where(p0_zero, b <= 0, never_1))
            tau = tau - jnp.where(p1_zero | p0_zero, 0.0, shift)
        tau = jnp.where(always_1 | never_1, 0.0, tau)

        # One binary search per point: "#(s <= q)" with q = tau (above the threshold: n - that count) or
        # q = the float just below tau (below the threshold: #(s < tau) = #(s <= q)).
        query = jnp.where(greater, tau, jnp.nextafter(tau, -jnp.inf))

        def count_ones(sorted_s, n):  # sorted_s (S, Nmax) padded with +inf, n (S,) -> (c, S) deciding 1
            at_most = jax.vmap(lambda row: jnp.searchsorted(row, query, side="right"))(sorted_s).T  # (c, S)
            at_most = jnp.minimum(at_most, n[None])
            k1 = jnp.where(greater[:, None], n[None] - at_most, at_most)
            k1 = jnp.where(always_1[:, None], n[None], k1)
            return jnp.where(never_1[:, None], 0, k1)

        k0 = count_ones(sorted0, n_i[:, 0])
        k1 = count_ones(sorted1, n_i[:, 1])
        n0, n1 = n_i[None, :, 0], n_i[None, :, 1]
        counts = jnp.stack([jnp.stack([n0 - k0, k0], -1), jnp.stack([n1 - k1, k1], -1)], -2)  # (c, S, 2, 2)
        if p is None:
            pp = (n_i / n_i.sum(-1, keepdims=True))[None]
        else:
            pp = jnp.broadcast_to(p, (c, 2))[:, None]
        val = expected_value(counts, m[:, None], pp)
        if self.kind == "nec":
            naive = naive_expected_cost(m[:, None], pp)
            val = jnp.where(naive > 0, val / jnp.where(naive > 0, naive, 1.0), jnp.nan)
        return val, jnp.ones((c,), bool)


def sweep_scores(labels: ArrayLike | Sequence[ArrayLike], scores: ArrayLike | Sequence[ArrayLike],
                 costs: ArrayLike | Axis | None = None, *, utilities: ArrayLike | Axis | None = None,
                 priors: ArrayLike | Axis | None = None, score_type: str = "log_posteriors",
                 normalize: bool = False, decision_rule: str = "bayes", method: str = "auto",
                 settings: SweepSettings = SweepSettings()) -> SweepResult:
    """Sweep costs, utilities and/or priors with Bayes decisions recomputed at every point.

    At every point each system decides ``argmin_j sum_i c_ij P(i|x_n)``
    (Ferrer 2025, eq. 7; ``c = -U`` for utilities) and its EC (NEC, yield) is
    computed as in :func:`ecjax.scores.bayes_expected_cost`.

    Priors follow the core rule (:func:`ecjax.bayes_decisions`): for
    ``"llr"`` and ``"log_likelihoods"`` they are required and enter both the
    posteriors and the EC (so sweeping them moves the decisions, Ferrer (2022b)
    §4.8.1); for posterior-type scores they only weight the EC (the
    decisions keep the training priors).

    Args:
      labels: ``(N,)`` classes shared by the systems, or ``(S, N)`` (systems
        evaluated on differently ordered test sets).
      scores: ``(S, N, K)`` (``(S, N)`` for ``"llr"``) or a list of systems.
      costs, utilities, priors, normalize, settings: as in :func:`sweep_counts`
        (``settings.point_batch``: points evaluated together inside a chunk
        in dense mode).
      score_type: as in :func:`ecjax.bayes_decisions`.
      decision_rule: ``"bayes"`` (decisions from the scores as posteriors)
        or ``"optimal_threshold"`` (binary: each system at its best threshold
        for each point, found by the ROC tangent criterion of Dyrland et al. (2022)
        eqs. 24-25; priors then only weight the classes).
      method: how Bayes decisions are counted: ``"threshold"`` (binary, 2
        decisions: sort once, ``O(log N)`` per point), ``"dense"`` (any
        ``K``, ``D``: ``O(N K D)`` per point) or ``"auto"`` (threshold when
        possible).

    Returns:
      :class:`SweepResult`.
    """
    settings = engine.check_sweep_settings(settings)
    problem = scores_problem(labels, scores, costs, utilities, priors, score_type=score_type, normalize=normalize,
                             method=method, decision_rule=decision_rule, point_batch=settings.point_batch)
    return run_sweep(problem, settings)


def scores_problem(labels: ArrayLike | Sequence[ArrayLike], scores: ArrayLike | Sequence[ArrayLike],
                   costs: ArrayLike | Axis | None = None, utilities: ArrayLike | Axis | None = None,
                   priors: ArrayLike | Axis | None = None, *, score_type: str = "log_posteriors",
                   normalize: bool = False, method: str = "auto", decision_rule: str = "bayes",
                   point_batch: int = 8) -> Problem:
    """Validate the inputs of :func:`sweep_scores` and prepare its sweep."""
    v.check_choice(method, "method", ("auto", "threshold", "dense"))
    v.check_choice(decision_rule, "decision_rule", ("bayes", "optimal_threshold"))
    v.check_score_type(score_type)
    likelihood = score_type in v.LIKELIHOOD_TYPES
    labels, scores, k = systems_scores(labels, scores, score_type)
    n_i = per_class_counts(labels, k)
    name, fixed_m, m_axis = matrix_source(costs, utilities, k, None)
    if fixed_m is None:
        assert m_axis is not None, "matrix_source gives a fixed matrix or an axis of matrices"
        d = m_axis.values(np.array([0])).shape[-1]
    else:
        d = fixed_m.shape[-1]
    kind = _kind(name, normalize)
    if priors is None and likelihood and decision_rule == "bayes":
        raise v.InputError(f"`priors` is required with score_type={score_type!r}: likelihoods become posteriors "
                           "only given priors")
    fixed_p, p_axis = prior_source(priors, k)
    check_absent_classes(n_i, fixed_p, p_axis)
    axis, layout = combined_axis(m_axis, p_axis)
    num_systems = scores.shape[0]
    if decision_rule == "optimal_threshold" or method == "threshold" or (method == "auto" and k == 2 and d == 2):
        if not (k == 2 and d == 2):
            what = "decision_rule='optimal_threshold'" if decision_rule != "bayes" else "method='threshold'"
            raise v.InputError(f"{what} needs K = 2 classes and D = 2 decisions, got K = {k}, D = {d}")
        log_odds = class_one_log_odds_kernel(scores, score_type)
        if decision_rule == "optimal_threshold":
            # The ROC tangent criterion (Dyrland et al. 2022, eqs. 24-25): O(log H) per point on each system's ROC hull.
            hulls = [hull_of_roc(np.asarray(labels[i]), np.asarray(log_odds[i], np.float64))
                     for i in range(num_systems)]
            fs, ts, slopes = padded_hulls(hulls)
            data_p = n_i / n_i.sum(-1, keepdims=True)
            return Problem(TangentPoint(axis.fn, layout, kind), (fs, ts, slopes, data_p, fixed_m, fixed_p, axis.data),
                           axis, num_systems, kind)
        s0, s1 = sorted_by_class(labels, log_odds)
        return Problem(_ThresholdPoint(axis.fn, layout, kind, likelihood), (s0, s1, n_i, fixed_m, fixed_p, axis.data),
                       axis, num_systems, kind)
    point_batch = v.as_scalar(point_batch, "point_batch", integer=True, low=1)
    recompute = likelihood and p_axis is not None
    if likelihood and not recompute:
        assert fixed_p is not None, "prior_source gives fixed priors or an axis of priors"
        with jax.numpy_dtype_promotion("standard"):
            base = log_posteriors_kernel(scores, jnp.log(fixed_p), score_type)
    elif likelihood:
        base = scores
    else:
        base = log_posteriors_kernel(scores, jnp.zeros(k), score_type)
    return Problem(_DenseScoresPoint(axis.fn, layout, kind, score_type, recompute, point_batch),
                   (labels, base, n_i, fixed_m, fixed_p, axis.data), axis, num_systems, kind, DENSE_CHUNK,
                   point_bytes=4 * int(np.prod(base.shape[:-1])) * (k + 2 * d + 2))
