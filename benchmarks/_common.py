"""Shared helpers for the benchmarks: timing, data loading, argument parsing."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import jax

# ../shared/data beside the repository, or the folder ECJAX_DATA_DIR names (as tests/conftest.py).
DATA = Path(os.environ.get("ECJAX_DATA_DIR") or Path(__file__).resolve().parents[1].parent / "shared" / "data")
SIZES = ("tiny", "small", "full")


class _SizedParser(argparse.ArgumentParser):
    """``--size tiny|small|full`` (``--tiny`` is ``--size tiny``); the parsed ``args.tiny`` and ``args.small``
    say which, so a benchmark reads its size either way."""

    def parse_args(self, *a, **kw):  # type: ignore[override]
        args = super().parse_args(*a, **kw)
        if args.tiny:
            args.size = "tiny"
        args.tiny, args.small = args.size == "tiny", args.size == "small"
        return args


def parser(description: str) -> argparse.ArgumentParser:
    p = _SizedParser(description=description)
    p.add_argument("--size", choices=SIZES, default="full",
                   help="tiny: CI smoke run (numbers meaningless); small: each benchmark in ~10-20 s on a GPU "
                        "(benchmarks/gpu_check.sh); full: the sizes of the README's tables")
    p.add_argument("--tiny", action="store_true", help="the same as --size tiny")
    p.add_argument("--repeats", type=int, default=5, help="steady-state repetitions (median reported)")
    return p


def block(x):
    return jax.tree_util.tree_map(lambda a: a.block_until_ready() if hasattr(a, "block_until_ready") else a, x)


def time_jax(fn, *args, repeats: int = 5):
    """(first-call seconds including compilation, median steady-state seconds, result)."""
    t0 = time.perf_counter()
    out = block(fn(*args))
    first = time.perf_counter() - t0
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        block(fn(*args))
        runs.append(time.perf_counter() - t0)
    return first, statistics.median(runs), out


def time_call(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def load(name: str):
    scores = np.load(DATA / name / "scores.npy", allow_pickle=False)
    targets = np.load(DATA / name / "targets.npy", allow_pickle=False)
    return scores, targets


def machine() -> str:
    dev = jax.devices()[0]
    return f"{platform.processor() or platform.machine()}, {jax.device_count()} x {dev.platform}:{dev.device_kind}, jax {jax.__version__}"


def row(workload: str, anchor_s: float, first_s: float, steady_s: float, note: str = "") -> str:
    ratio = anchor_s / steady_s if steady_s > 0 else float("inf")
    return (f"| {workload} | {anchor_s:.4g} s | {first_s:.4g} s | {steady_s:.4g} s | {ratio:,.0f}x |"
            + (f" {note} |" if note else " |"))


HEADER = ("| workload | anchor | ecjax first call (compile incl.) | ecjax steady state | ratio anchor/ecjax | note |\n"
          "|---|---|---|---|---|---|")
