"""Posterior draws in fixed memory: time and peak memory of ``prob.compare`` against ``num_draws``.

The accelerator issue's workload (item 3): three systems' ``10^4 x 100`` logits, an uncertain ``100 x 100``
cost matrix (every off-diagonal cost uniform on [0.5, 2]), and the Bayes decisions of every drawn cost matrix
(``decision_rule="per_draw"``), up to ``10^6`` draws on an accelerator.  Each draw is ``3 x 10^4 x 100 x 100``
multiply-adds, so a 2-core CPU runs the same code at a reduced number of draws (the row says which).

There is no anchor: no other package computes this.  The benchmark shows the two things the issue asks for:

* the time per draw stays constant as ``num_draws`` grows (the draws go through the same jitted blocks; a size
  whose block shape is new is run twice and the second, compiled, run is timed);
* the peak memory does not grow with ``num_draws``.  Runs are made in increasing order of ``num_draws`` in one
  process, so the process's peak resident size (CPU) or the device's peak bytes in use (GPU) after each run
  is the largest any run so far needed: if it stops growing, the larger runs needed no more memory.  Next to
  it, the size the former unchunked implementation needed for the per-draw counts alone
  (``draws x samples x systems`` indices) is printed.

It also checks, at each size, that the reported expected yield is the mean of the kept draws and that the
per-draw yields are finite.

``--ratio`` (issue 34.3) measures instead how close the per-draw path of ``compare`` comes to the bare decision
kernel on the same products: 3 systems x 2000 samples x 20 classes on a CPU, 10^4 x 100 on an accelerator
(``--shape N K`` to change), every draw making its own decisions (``PerDraw(rate_draws=1)``, no decomposition), against
``bayes_decisions_kernel`` jitted alone over the same number of cost draws (the fastest of three batch sizes).
It prints both times per draw and their ratio compare / kernel (the goal: at most 2).  ``--cpu-time`` times
them in process CPU time instead of wall time: on a shared, loaded CPU, with XLA on one thread
(``XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"``), the steadier measure of the work.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

import jax  # noqa: E402

from ecjax import prob  # noqa: E402


def peak_memory_bytes() -> int:
    """Peak bytes: the device allocator's on an accelerator, the process's peak resident set on the CPU."""
    dev = jax.devices()[0]
    stats = dev.memory_stats() if dev.platform != "cpu" else None
    if stats and "peak_bytes_in_use" in stats:
        return int(stats["peak_bytes_in_use"])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


CLOCK = {"clock": time.perf_counter}  # --cpu-time: time.process_time


def best_seconds(run, repeats: int = 3) -> float:
    """The best of ``repeats`` timed calls of ``run()`` (after one untimed call that compiles)."""
    jax.block_until_ready(run())
    times = []
    clock = CLOCK["clock"]
    for _ in range(repeats):
        t0 = clock()
        jax.block_until_ready(run())
        times.append(clock() - t0)
    return min(times)


def kernel_ratio(n: int, k: int, num_draws: int) -> None:
    """Time per draw of compare's per-draw decisions against the bare decision kernel on the same products."""
    import jax.numpy as jnp

    from ecjax._src.decisions import bayes_decisions_kernel

    rng = np.random.default_rng(0)
    labels = rng.integers(0, k, n)
    scores = [(rng.normal(size=(n, k)) + 3.0 * q * np.eye(k)[labels]).astype(np.float32) for q in (1.0, 0.98, 0.96)]
    off = 1 - np.eye(k)
    systems = prob.Systems(labels, scores=scores, score_type="logits", decision_rule=prob.PerDraw(rate_draws=1),
                           paired=False)
    costs = prob.intervals(0.5 * off, 2.0 * off, kind="cost")

    def compare_seconds(draws):
        settings = prob.MonteCarloSettings(num_draws=draws)
        return best_seconds(lambda: prob.compare(systems, costs=costs, key=jax.random.key(0), decompose=False,
                                                 settings=settings).yields)

    # A call also pays a fixed part (the prior's mean, the summaries, the ranking's Monte Carlo errors): the per-draw
    # path is the cost of the extra draws of a call with four times as many.
    compare_s = compare_seconds(num_draws)
    marginal_s = (compare_seconds(4 * num_draws) - compare_s) / 3
    log_post = jax.nn.log_softmax(jnp.asarray(np.stack(scores)), -1)
    drawn = jnp.asarray(rng.uniform(0.5, 2.0, (num_draws, k, k)) * off, jnp.float32)
    kernel_s = {}
    for batch in (4, 16, 64):
        usable = num_draws - num_draws % batch

        @jax.jit
        def decide(lp, c, batch=batch, usable=usable):
            return jax.lax.map(lambda cb: bayes_decisions_kernel(lp[None], cb[:, None]),
                               c[:usable].reshape(-1, batch, k, k))

        kernel_s[batch] = best_seconds(lambda: decide(log_post, drawn)) / usable * num_draws
    batch = min(kernel_s, key=kernel_s.get)
    print({b: round(1e3 * t / num_draws, 3) for b, t in kernel_s.items()})
    macs = 3 * n * k * k
    print(f"machine: {_common.machine()}")
    print(f"per-draw decisions: 3 systems x {n} samples x {k} x {k} costs = {macs:.2e} multiply-adds a draw, "
          f"{num_draws} draws (best of 3 after a compiling call, {CLOCK['clock'].__name__})")
    print("| path | ms per draw | multiply-adds per s |")
    print("|---|---|---|")
    for name, seconds in ((f"bare kernel (jit, {batch} draws a batch)", kernel_s[batch]),
                          ("prob.compare, PerDraw(rate_draws=1), decompose=False: whole call", compare_s),
                          (f"prob.compare: each draw beyond the first {num_draws} (calls of {num_draws} and "
                           f"{4 * num_draws} draws)", marginal_s)):
        print(f"| {name} | {1e3 * seconds / num_draws:.3f} | {macs * num_draws / seconds:.2e} |")
    print(f"fixed part of a call: {compare_s - marginal_s:.3f} s")
    print(f"ratio compare / kernel: {compare_s / kernel_s[batch]:.2f} (whole call), "
          f"{marginal_s / kernel_s[batch]:.2f} (per draw)")


def main() -> None:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, nargs="+", default=None,
                   help="numbers of draws, increasing (default: 10^4..10^6 on an accelerator, 250..2000 on a CPU)")
    p.add_argument("--ratio", action="store_true", help="compare's per-draw path against the bare decision kernel")
    p.add_argument("--shape", type=int, nargs=2, default=None, metavar=("N", "K"),
                   help="with --ratio: samples and classes (default 2000 20 on a CPU, 10000 100 on an accelerator)")
    p.add_argument("--cpu-time", action="store_true", help="with --ratio: process CPU time, not wall time")
    args = p.parse_args()
    if args.cpu_time:
        CLOCK["clock"] = time.process_time
    on_cpu = jax.devices()[0].platform == "cpu"
    if args.ratio:
        n, k = args.shape or ((2000, 20) if on_cpu else (10_000, 100))
        kernel_ratio(n, k, (args.draws or [2000 if on_cpu else 10_000])[0])
        return
    if args.tiny:
        n, k, draws = 400, 10, [200, 400]
    else:
        n, k = 10_000, 100
        draws = args.draws or ([250, 500, 1000, 2000] if on_cpu else [10_000, 100_000, 1_000_000])
    if draws != sorted(draws):
        p.error("--draws must be increasing (the peak-memory reading is cumulative)")

    rng = np.random.default_rng(0)
    labels = rng.integers(0, k, n)
    scores = [rng.normal(size=(n, k)) + 3.0 * q * np.eye(k)[labels] for q in (1.0, 0.98, 0.96)]
    off = 1 - np.eye(k)
    costs = prob.intervals(0.5 * off, 2.0 * off, kind="cost")

    print(f"machine: {_common.machine()}")
    print(f"compare: 3 systems, N = {n}, K = D = {k}, uncertain {k} x {k} costs, Bayes decisions per draw")
    t0 = time.perf_counter()
    systems = prob.Systems(labels, scores=scores, score_type="logits", decision_rule="per_draw", paired=False)
    compiled = {prob.compare(systems, costs=costs, key=jax.random.key(0), decompose=False,  # compiles the block kernels
                             settings=prob.MonteCarloSettings(num_draws=draws[0])).info["draw_block"]}
    print(f"first call ({draws[0]} draws, compilation included): {time.perf_counter() - t0:.2f} s")
    base = peak_memory_bytes()
    print(f"peak memory after the first call: {base / 2**20:,.0f} MiB")
    print("| draws | seconds | ms per draw | draws per block | chunks | peak memory (MiB) | "
          "unchunked per-draw decisions would need (MiB) |")
    print("|---|---|---|---|---|---|---|")
    per_draw, peaks = [], []
    for s in draws:
        t0 = time.perf_counter()
        res = prob.compare(systems, costs=costs, key=jax.random.key(0), decompose=False,
                           settings=prob.MonteCarloSettings(num_draws=s))
        seconds = time.perf_counter() - t0
        if res.info["draw_block"] not in compiled:  # a new block shape was compiled in that call: time it again
            compiled.add(res.info["draw_block"])
            t0 = time.perf_counter()
            res = prob.compare(systems, costs=costs, key=jax.random.key(0), decompose=False,
                               settings=prob.MonteCarloSettings(num_draws=s))
            seconds = time.perf_counter() - t0
        y = np.asarray(res.yields, np.float64)
        assert y.shape == (s, 3) and np.all(np.isfinite(y)), "non-finite or missing yields"
        np.testing.assert_allclose(res.expected_yield, y.mean(0), rtol=1e-6)
        per_draw.append(seconds / s)
        peaks.append(peak_memory_bytes())
        unchunked = s * n * 3 * 4  # the (draws, N, systems) int32 decisions the former path materialized
        print(f"| {s:,} | {seconds:.3f} | {1e3 * seconds / s:.3f} | {res.info['draw_block']:,} | "
              f"{res.info['num_chunks']} | {peaks[-1] / 2**20:,.0f} | {unchunked / 2**20:,.0f} |")
    print(f"ratio largest / smallest run: draws {draws[-1] / draws[0]:,.0f}x, time per draw "
          f"{per_draw[-1] / per_draw[0]:.2f}x, peak memory {peaks[-1] / peaks[0]:.2f}x")
    print(f"P(best) at {draws[-1]:,} draws: {np.round(np.asarray(res.p_best), 4).tolist()}")


if __name__ == "__main__":
    main()
