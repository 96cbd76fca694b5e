"""The sweep engine: a chunked, device-sharded map-reduce over point indices.

A sweep evaluates a pure per-point function at ``P`` points (cost matrices,
priors, utility-space coordinates, Monte Carlo blocks...) and reduces the
results.  Holding all ``P`` outputs at once is neither needed nor possible
for ``P = 10^8``, so the engine

* walks the points in fixed-size **chunks** (a Python loop over one jitted
  step, so device memory is bounded by the chunk, whatever ``P``);
* **shards** each chunk over the devices of a one-axis :class:`jax.sharding.Mesh`
  with :func:`jax.shard_map` (every device computes its slice of the chunk;
  the reductions that follow run in the global view, where XLA inserts the
  all-reduces);
* carries **streamed reductions** (an accumulator pytree updated by every
  chunk) and, only when asked, copies the per-point outputs of each chunk to
  host memory.

Point indices are ``int32``: a sweep has at most ``2^31 - 1`` points.
``chunk_size`` counts points per device, so every device compiles and runs
the same program on the same shape whatever the number of devices, and the
per-point values, winners, counts and flips are identical on 1 or ``n``
devices.  A different chunk size may change XLA's vectorization, and with it
the last bit of a float; integer reductions and min/max are order-free, and
the float sums behind the means are compensated.

Multi-host: after ``jax.distributed.initialize()`` :func:`jax.devices`
returns the devices of every process and the same code runs unchanged; the
per-point outputs are then gathered with
:func:`jax.experimental.multihost_utils.process_allgather`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import numpy as np

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ecjax._src import inputs as v
from ecjax._src.draw_runner import Block, plan_blocks, run_blocks
from ecjax._src.sweep.inputs import resolve_devices

AXIS = "points"
MAX_POINTS = 2**31 - 1
# Points per device per step.  On a 2-core CPU throughput is flat from 2^14 to 2^18 points and falls
# beyond (caches); on an H100 a 10^9-point cost-ratio sweep ran at 3.5 ns/point with 2^16 and 0.13 ns/point
# with 2^22, the host loop over steps dominating below that (benchmarks/README.md, bench_chunks.py).
CPU_CHUNK = 2**16
ACCELERATOR_CHUNK = 2**22
# Share of an accelerator's memory one step's working set may take (the rest: inputs, outputs, XLA).
_MEMORY_SHARE = 8


@dataclass(frozen=True)
class SweepSettings:
    """How a sweep runs, not what it computes: no setting changes a swept value.

    Attributes:
      chunk_size: points per device per step: memory is bounded by this, not by the number of points.  ``None``:
        :func:`auto_chunk_size` (on a CPU a chunk that stays in cache, ``2^12`` to ``2^16`` points; on a GPU or
        TPU up to ``2^22``, as the device memory allows).
      devices: ``None`` (all visible devices), ``n`` (the first ``n``) or a sequence of devices
        (:func:`~ecjax._src.sweep.inputs.resolve_devices`).
      progress: a progress bar over the chunks (``True``, needs ``tqdm``), or a callable ``total -> bar`` with
        ``update(n)`` and ``close()``.
      return_values: keep the per-point values and winners (host memory ``O(points x S)``); ``False`` keeps only
        the streamed reductions.
      max_flips: flip positions recorded per pair of systems.
      point_batch: points evaluated together inside a chunk when every point recomputes Bayes decisions (dense
        score sweeps).
    """

    chunk_size: int | None = None
    devices: Any = None
    progress: Any = False
    return_values: bool = True
    max_flips: int = 64
    point_batch: int = 8

    def __post_init__(self):
        if self.chunk_size is not None:
            object.__setattr__(self, "chunk_size", v.as_scalar(self.chunk_size, "chunk_size", integer=True, low=1))
        object.__setattr__(self, "max_flips", v.as_scalar(self.max_flips, "max_flips", integer=True, low=1))
        object.__setattr__(self, "point_batch", v.as_scalar(self.point_batch, "point_batch", integer=True, low=1))


def check_sweep_settings(settings: object) -> SweepSettings:
    """``settings`` if it is a :class:`SweepSettings` (checked when it was made), else :class:`~ecjax.InputError`."""
    return v.check_instance(settings, SweepSettings, "settings", "ecjax.sweep.SweepSettings")


def device_memory(device: jax.Device) -> int | None:
    """Bytes of memory the device reports (``None`` where it reports none, as CPUs do)."""
    try:
        stats = device.memory_stats()
    except Exception:  # backends without memory statistics
        return None
    if not stats:
        return None
    limit = stats.get("bytes_limit") or stats.get("bytes_reservable_limit")
    return int(limit) if limit else None


def auto_chunk_size(devices: Sequence[jax.Device], *, point_bytes: int = 256, cpu_chunk: int = CPU_CHUNK) -> int:
    """The automatic ``chunk_size`` (points per device per step) for ``devices``.

    A CPU gets ``cpu_chunk`` (cache-sized).  An accelerator gets the largest
    power of two up to :data:`ACCELERATOR_CHUNK` whose working set,
    ``point_bytes`` per point, fits in an eighth of the device memory, so a
    step is long enough to hide the host loop and the launch overhead.
    """
    if devices[0].platform == "cpu":
        return int(cpu_chunk)
    memory = device_memory(devices[0])
    chunk = ACCELERATOR_CHUNK
    if memory is not None:
        fit = max(1, memory // (_MEMORY_SHARE * max(1, int(point_bytes))))
        chunk = min(chunk, 1 << (fit.bit_length() - 1))
    return int(max(1, chunk))


def make_mesh(devices: Sequence[jax.Device]) -> Mesh:
    return Mesh(np.asarray(devices, dtype=object), (AXIS,))


def plan_chunks(num_points: int, chunk_size: int, num_devices: int) -> tuple[int, int]:
    """``(chunk, num_chunks)``: points per step (all devices together) and the number of steps.

    ``chunk_size`` is the number of points *per device* per step, which
    bounds each device's memory; a sweep smaller than one step shrinks it to
    ``ceil(P / num_devices)``.  Every device then runs the same program on
    the same shape, so the per-point results do not depend on the number of
    devices.
    """
    chunk_size = v.as_scalar(chunk_size, "chunk_size", integer=True, low=1)
    if num_points < 1:
        raise v.InputError("the sweep has no points: every swept grid must be non-empty")
    if num_points > MAX_POINTS:
        raise v.InputError(f"a sweep has at most {MAX_POINTS} points (int32 indices), got {num_points}")
    local = min(chunk_size, math.ceil(num_points / num_devices))
    chunk = local * num_devices
    return chunk, math.ceil(num_points / chunk)


@dataclass(frozen=True)
class Plan:
    """Static description of one compiled step (hashable: it is a jit static argument)."""

    local_fn: Callable  # (args, idx_local) -> per-point outputs; runs on each device
    reduce_fn: Callable  # (acc, outputs, idx, valid) -> acc; global view
    chunk: int
    mesh: Mesh
    collect: bool


@partial(jax.jit, static_argnames=("plan",), donate_argnames=("acc",))
def _step(args, acc, start, num_points, *, plan: Plan):
    idx = start + jnp.arange(plan.chunk, dtype=jnp.int32)
    idx = jax.lax.with_sharding_constraint(idx, NamedSharding(plan.mesh, P(AXIS)))
    out = jax.shard_map(
        plan.local_fn, mesh=plan.mesh, in_specs=(P(), P(AXIS)), out_specs=P(AXIS), check_vma=False
    )(args, idx)
    valid = idx < num_points
    acc = plan.reduce_fn(acc, out, idx, valid)
    return acc, (out if plan.collect else None)


def _replicate(x, sharding):
    """``jax.device_put(x, sharding)``, also for a PRNG key when the mesh spans several processes.

    ``device_put`` onto devices of other processes accepts host data and
    uncommitted arrays but not typed key arrays: a key travels as its raw
    ``key_data`` and is wrapped again on the mesh.
    """
    if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        data = jax.device_put(jax.random.key_data(x), sharding)
        return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
    return jax.device_put(x, sharding)


def map_reduce(local_fn: Callable[[Any, jax.Array], Any], reduce_fn: Callable[[Any, Any, jax.Array, jax.Array], Any],
               init: Any, num_points: int, *, args: Any = (), settings: SweepSettings = SweepSettings(),
               collect: bool = False, point_bytes: int = 256,
               cpu_chunk: int = CPU_CHUNK) -> tuple[Any, Any, dict[str, int]]:
    """Map ``local_fn`` over ``num_points`` point indices in chunks; reduce with ``reduce_fn``.

    Args:
      local_fn: ``(args, idx) -> outputs``: the per-point computation for a
        vector of point indices ``idx`` (the slice of the chunk held by one
        device); every output leaf has leading axis ``len(idx)``.  Pure and
        traceable; it must be hashable (a module-level function or a frozen
        dataclass) so the compiled step is reused across calls.
      reduce_fn: ``(acc, outputs, idx, valid) -> acc``: folds one chunk into
        the accumulator (``valid`` masks the padding of the last chunk).
      init: the initial accumulator pytree.
      num_points: ``P``, the number of points.
      args: arrays every point needs (replicated on every device).
      settings: :class:`SweepSettings`: its ``chunk_size`` (``None``:
        :func:`auto_chunk_size` for the devices, from ``point_bytes``, the
        working-set bytes per point, and ``cpu_chunk``), ``devices`` and
        ``progress``.
      collect: also return the per-point outputs, copied to host memory
        chunk by chunk (``P``-sized numpy arrays).

    Returns:
      ``(acc, outputs, info)``: the final accumulator, the per-point outputs
      (or ``None``) and a dict with ``chunk``, ``num_chunks`` and ``num_devices``.
    """
    settings = check_sweep_settings(settings)
    devs = resolve_devices(settings.devices)
    chunk_size = settings.chunk_size
    if chunk_size is None:
        chunk_size = auto_chunk_size(devs, point_bytes=point_bytes, cpu_chunk=cpu_chunk)
    chunk, num_chunks = plan_chunks(num_points, chunk_size, len(devs))
    mesh = make_mesh(devs)
    plan = Plan(local_fn, reduce_fn, chunk, mesh, bool(collect))
    replicated = NamedSharding(mesh, P())
    args = jax.tree_util.tree_map(lambda x: _replicate(x, replicated), args)
    acc = jax.device_put(init, replicated)
    # Host scalars (not single-device arrays), so the same call works with a multi-process global mesh.
    n_arr = np.int32(num_points)
    state = {"acc": acc}

    def step(c):
        # One step is one block of the chunked runner (ecjax._src.draw_runner): its per-point outputs and progress.
        state["acc"], out = _step(args, state["acc"], np.int32(c * chunk), n_arr, plan=plan)
        return Block(draws=out if collect else None, state=state["acc"])

    outputs = run_blocks(step, plan_blocks(num_points, chunk), progress=settings.progress, shown=lambda _: None).draws
    return state["acc"], outputs, {"chunk": chunk, "num_chunks": num_chunks, "num_devices": len(devs)}
