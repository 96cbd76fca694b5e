"""Points per second against chunk size, on whatever backend JAX sees (issue: chunk sizes that fit the device).

Two sweeps, 3 systems, streamed reductions only (``return_values=False``):

1. a cost-ratio sweep with decisions given (``sweep_counts``: one small
   contraction per point);
2. a binary cost-ratio sweep with scores given (``sweep_scores``: one binary
   search over the sorted scores per point, N = 624 SST-2-sized).

For each chunk size it prints the throughput, then the automatic chunk
(``chunk_size=None``) and its throughput as a fraction of the best measured
one (target: >= 80 %).  The "anchor" here is the best fixed chunk size.

    python benchmarks/bench_chunks.py                # 10^7 points on CPU, 10^9 on an accelerator
    python benchmarks/bench_chunks.py --size small   # 10^6 on CPU, 10^8 on an accelerator, 4 chunk sizes (~20 s)
    python benchmarks/bench_chunks.py --tiny         # CI smoke run
"""

from __future__ import annotations

import time

import numpy as np

import jax

from ecjax.sweep import SweepSettings, grids, sweep_counts, sweep_scores
from ecjax._src.sweep import engine

from _common import machine, parser

COUNTS = np.array([[[80, 20], [10, 90]], [[95, 5], [30, 70]], [[60, 40], [3, 97]]])


def _best_of(fn, repeats):
    fn()  # compile
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def sweep(kind, num_points, chunk_size, data):
    axis = grids.cost_ratios(1e-3, 1e3, num_points)
    if kind == "decisions given":
        return sweep_counts(COUNTS, axis, settings=SweepSettings(chunk_size=chunk_size, return_values=False))
    labels, llr = data
    return sweep_scores(labels, llr, axis, priors=[0.5, 0.5], score_type="llr",
                        settings=SweepSettings(chunk_size=chunk_size, return_values=False))


def main():
    args = parser(__doc__).parse_args()
    accelerator = jax.devices()[0].platform != "cpu"
    num_points = 10**4 if args.tiny else (10**9 if accelerator else 10**7) // (10 if args.small else 1)
    repeats = 1 if args.tiny else (2 if args.small else args.repeats)
    if args.tiny:
        sizes = [2**10, 2**12]
    else:  # small: four sizes around the automatic ones (2^16 on a CPU, up to 2^22 on an accelerator)
        sizes = [2**k for k in ((14, 16, 20, 22) if args.small else range(12, 25, 2)) if 2**k <= num_points]
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 624)
    llr = rng.normal(size=(3, 624)) + 2 * labels
    print(f"machine: {machine()}; {num_points:.0e} points per sweep; best of {repeats}")
    auto = engine.auto_chunk_size(engine.resolve_devices())
    print(f"automatic chunk on this backend: {auto} points per device")
    print("| sweep | chunk size | points/s | fraction of best |\n|---|---|---|---|")
    for kind in ("decisions given", "scores given"):
        n = num_points if kind == "decisions given" else max(num_points // 10, 10**4)
        rates = {}
        for size in sizes:
            rates[size] = n / _best_of(lambda: sweep(kind, n, size, (labels, llr)), repeats)
        default = n / _best_of(lambda: sweep(kind, n, None, (labels, llr)), repeats)
        best = max(max(rates.values()), default)
        for size, r in rates.items():
            print(f"| {kind} | {size} | {r:.3g} | {r / best:.2f} |")
        print(f"| {kind} | automatic | {default:.3g} | **{default / best:.2f}** (ratio automatic/best; target >= 0.8) |")


if __name__ == "__main__":
    main()
