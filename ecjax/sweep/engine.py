"""The sweep engine: a chunked, device-sharded map-reduce over point indices."""

from ecjax._src.sweep.engine import (
    ACCELERATOR_CHUNK,
    AXIS,
    CPU_CHUNK,
    MAX_POINTS,
    Plan,
    SweepSettings,
    auto_chunk_size,
    check_sweep_settings,
    device_memory,
    make_mesh,
    map_reduce,
    plan_chunks,
)

__all__ = [
    "AXIS",
    "MAX_POINTS",
    "CPU_CHUNK",
    "ACCELERATOR_CHUNK",
    "SweepSettings",
    "check_sweep_settings",
    "device_memory",
    "auto_chunk_size",
    "make_mesh",
    "plan_chunks",
    "Plan",
    "map_reduce",
]
