"""Real sizes for the bootstrap and the results comparisons (issue 33): time per draw and peak memory.

Workloads (synthetic: no data set of ../shared/data has 10^6 scored samples or 10^5 folds):

1. ``prob.bootstrap_metric(..., "auc")`` of one binary system at ``N`` samples (full: ``N = 10^6``), its
   log-odds ``N(y, 1)``, ``--draws`` draws (default 200 at full size: the time per draw does not depend on the
   number of draws once the program is compiled, and 2000 draws of the former code take minutes);
1b. ``auc_default``: the same call with the default settings (draws until precise, or the fixed default of the
   code measured: 2000 draws at the issue's time), timed once, compilation included: the whole call a user waits
   for (the issue's 134 s), and the number of XLA compilations it makes (JAX's compile log);
2. the same with ``"cross_entropy"`` (the issue's second measurement: a weighted mean, no sort);
3. ``prob.compare_results`` of 3 systems on ``F`` folds (full: ``F = 10^5``), its default draws (until every
   P(best) has Monte Carlo error 0.005, at most 20 000; a close call here): time
   and the process's peak resident memory.

Each workload runs in a child process of its own (so its peak resident size is its own), with the ``ecjax``
that ``--code`` names (default: this checkout).  The issue's "before" is main's code at the commit this
branch started from, measured in the same session:

    git archive 9ed22c2 | tar -x -C /tmp/base
    python benchmarks/bench_bootstrap_sizes.py --before /tmp/base   # before, then this checkout, and their ratio

Times are wall-clock of the whole public call (validation, draws, summaries), second call (the first
compiles), and the process CPU time beside it: on a machine shared with other work the CPU time is the steadier
of the two.  Targets (issue 33): the AUC at ``N = 10^6`` at least 10x faster than before; ``compare_results``
on 10^5 folds under 1 GB.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

SIZES = {"tiny": (2_000, 200, 100), "small": (100_000, 10_000, 200), "full": (1_000_000, 100_000, 200)}


def _binary(n, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = (rng.normal(size=n) + y).astype(np.float32)
    return y, np.stack([-np.logaddexp(0, s), -np.logaddexp(0, -s)], -1).astype(np.float32)


def _timed(run):
    """``(wall s, cpu s, result)`` of the second call of ``run(seed)`` (the first compiles)."""
    run(0)
    w0, c0 = time.perf_counter(), time.process_time()
    out = run(1)
    return time.perf_counter() - w0, time.process_time() - c0, out


def _count_compilations():
    """A list that gets one entry per XLA compilation from now on (JAX's compile log, ``jax_log_compiles``)."""
    import logging

    import jax

    compiled: list[str] = []

    class Counter(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("Finished XLA compilation"):
                compiled.append(record.getMessage())

    logger = logging.getLogger("jax")
    logger.addHandler(Counter())
    logger.setLevel(logging.WARNING)  # the compile log comes at WARNING with jax_log_compiles
    for handler in logging.getLogger().handlers + logger.handlers[:-1]:
        handler.setLevel(logging.ERROR)  # counted, not printed
    jax.config.update("jax_log_compiles", True)
    return compiled


def workload(name: str, n: int, folds: int, draws: int) -> dict:
    """One workload in this process: its times, draws and peak resident bytes (and, for ``auc_default``, the
    compilations of its first call)."""
    import jax

    from ecjax import prob

    if name == "auc_default":
        y, lp = _binary(n)
        key = jax.random.key(1)
        compiled = _count_compilations()
        w0, c0 = time.perf_counter(), time.process_time()
        res = prob.bootstrap_metric(prob.Systems(y, scores=lp), "auc", key=key)
        np.asarray(res.draws)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        out = {"draws": res.num_draws, "mean": float(res.mean[0]), "interval": [float(x) for x in res.equal_tailed[0]],
               "compilations": len(compiled)}
    elif name in ("auc", "cross_entropy"):
        y, lp = _binary(n)
        systems = prob.Systems(y, scores=lp)

        def run(seed):
            res = prob.bootstrap_metric(systems, name, key=jax.random.key(seed),
                                        settings=prob.MonteCarloSettings(num_draws=draws))
            np.asarray(res.draws)
            return res

        wall, cpu, res = _timed(run)
        out = {"draws": res.num_draws, "mean": float(res.mean[0]), "interval": [float(x) for x in res.equal_tailed[0]]}
    else:
        rng = np.random.default_rng(1)
        scores = 0.8 + 0.02 * rng.normal(size=(3, folds)) + np.array([[0.0], [0.0005], [0.001]])

        def run(seed):
            return prob.compare_results(scores, key=jax.random.key(seed))

        wall, cpu, res = _timed(run)
        out = {"draws": int(res.draws.shape[0]), "p_best": [float(p) for p in res.p_best]}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return dict(out, workload=name, wall_s=wall, cpu_s=cpu, peak_bytes=peak)


def main():
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--code", default=str(Path(__file__).resolve().parents[1]),
                   help="the checkout whose ecjax the workloads import (default: this one)")
    p.add_argument("--before", default=None, help="another checkout, run first: the rows get the CPU ratio before / after")
    p.add_argument("--draws", type=int, default=None, help="bootstrap draws (default: per size)")
    p.add_argument("--only", default=None, help="comma-separated workloads (default: all: auc, auc_default, "
                                                "cross_entropy, compare_results)")
    p.add_argument("--workload", default=None, help=argparse_hidden())
    args = p.parse_args()
    n, folds, draws = SIZES[args.size]
    draws = args.draws or draws
    if args.workload:
        print(json.dumps(workload(args.workload, n, folds, draws)))
        return
    codes = ([args.before] if args.before else []) + [args.code]
    print(f"# {_common.machine()}; load {os.getloadavg()[0]:.1f}; ecjax from {' then '.join(codes)}")
    print("| workload | ecjax | draws | wall | CPU | per draw (wall / CPU) | peak resident | CPU ratio before / after |")
    print("|---|---|---|---|---|---|---|---|")
    names = args.only.split(",") if args.only else ("auc", "auc_default", "cross_entropy", "compare_results")
    for name in names:
        cpu = []
        for code in codes:
            done = subprocess.run([sys.executable, __file__, "--size", args.size, "--draws", str(draws), "--workload",
                                   name], env=dict(os.environ, PYTHONPATH=code), capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"{name} with {code} failed: {done.stderr[-2000:]}")
            r = json.loads(done.stdout.strip().splitlines()[-1])
            cpu.append(r["cpu_s"] / (1 if name == "auc_default" else r["draws"]))  # the whole call: draws differ
            size = f"N = {n:,}" if name != "compare_results" else f"{folds:,} folds, 3 systems"
            if name == "auc_default":
                size += f", default draws, one call with compilation ({r['compilations']} compilations)"
            ratio = f"{cpu[0] / cpu[1]:.2f}x" if len(cpu) == 2 and cpu[1] > 0 else "-"
            print(f"| {name}, {size} | {code} | {r['draws']} | {r['wall_s']:.2f} s | {r['cpu_s']:.2f} s | "
                  f"{1e3 * r['wall_s'] / r['draws']:.2f} / {1e3 * r['cpu_s'] / r['draws']:.2f} ms | "
                  f"{r['peak_bytes'] / 2**20:.0f} MiB | {ratio} |")
    if not args.before:
        print("(no ratio: pass --before PATH, a checkout of the code to compare with)")


def argparse_hidden():
    import argparse
    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
