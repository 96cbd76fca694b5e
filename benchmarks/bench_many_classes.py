"""Many classes (issue 33.4): K = 10^5 with structured costs and sparse counts: time and peak memory.

Workloads (synthetic: no data set of ../shared/data has 10^5 classes), ``N`` samples of ``K`` classes (full:
``N = K = 10^5``), each system right with probability 0.70 / 0.65 / 0.60 and otherwise uniform:

1. ``metrics``: ``ecjax.sparse_confusion_matrix`` of 3 systems, then ``expected_cost`` under 0-1 costs
   (``costs.zero_one(K, dense=False)``), ``normalized_expected_cost`` under a per-class miss-cost vector and
   ``accuracy``; the anchor is the same three numbers in numpy straight from the samples (``np.mean(d != y)``,
   per-class ``np.bincount`` sums);
2. ``compare``: ``prob.compare`` of the 3 systems, unpaired, fixed 0-1 structured costs, ``--draws`` draws
   (default 200: the time per draw does not depend on the number of draws once compiled);
3. ``compare_paired``: the same, paired (``K G^M`` merged joint cells).

Each workload runs in a child process of its own, so that its peak resident size (``ru_maxrss``) is its own; the
time is that of the second call (the first compiles), wall-clock and, for compare, the process CPU time (on a
machine shared with other work the steadier of the two).  Before this change a dense ``K x K`` cost or count matrix
was the only form: at ``K = 10^5`` it has 10^10 cells (40 GB of float32) and was refused (more than 2^31 - 1
cells).

    python benchmarks/bench_many_classes.py              # K = N = 10^5
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

SIZES = {"tiny": (2_000, 2_000, 100), "small": (20_000, 20_000, 200), "full": (100_000, 100_000, 200)}


def _data(k, n, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return y, np.stack([np.where(rng.random(n) < q, y, rng.integers(0, k, n)) for q in (0.70, 0.65, 0.60)])


def _numpy_metrics(y, dec, miss):
    """The anchor: error rates, NECs under the miss costs and accuracies straight from the samples (float64)."""
    k = len(miss)
    n_i = np.bincount(y, minlength=k)
    p = n_i / len(y)
    naive = np.sum(p * miss) - np.max(p * miss)  # always deciding the class of largest P_d miss_d
    ec = [np.bincount(y, weights=miss[y] * (d != y), minlength=k).sum() / len(y) for d in dec]
    return [np.mean(d != y) for d in dec], np.asarray(ec) / naive, [np.mean(d == y) for d in dec]


def workload(name: str, k: int, n: int, draws: int) -> dict:
    import jax

    import ecjax
    from ecjax import costs, prob

    y, dec = _data(k, n)
    miss = np.where(np.arange(k) < 100, 50.0, 1.0)
    if name == "metrics":
        zero_one, per_class = costs.zero_one(k, dense=False), costs.class_costs(miss)

        def run(_):
            table = ecjax.sparse_confusion_matrix(y, dec, num_classes=k)
            out = (ecjax.expected_cost(table, zero_one), ecjax.normalized_expected_cost(table, per_class),
                   ecjax.accuracy(table))
            return [np.asarray(jax.block_until_ready(x)) for x in out]

        first, ecjax_out = _common.time_call(run, 0)
        steady, ecjax_out = _common.time_call(run, 1)
        anchor, ref = _common.time_call(lambda: _numpy_metrics(y, dec, miss))
        err = max(float(np.max(np.abs(a - np.asarray(b)) / np.abs(np.asarray(b)))) for a, b in zip(ecjax_out, ref))
        return {"first_s": first, "steady_s": steady, "anchor_s": anchor, "max_rel_diff": err,
                "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}
    settings = prob.MonteCarloSettings(num_draws=draws)
    systems = prob.Systems(y, dec, paired=name == "compare_paired")

    def run(seed):
        return prob.compare(systems, costs=costs.zero_one(k, dense=False), key=jax.random.key(seed), settings=settings)

    first, _ = _common.time_call(run, 0)
    cpu = time.process_time()
    steady, result = _common.time_call(run, 1)
    cpu = time.process_time() - cpu
    return {"first_s": first, "steady_s": steady, "per_draw_ms": 1e3 * steady / draws,
            "cpu_per_draw_ms": 1e3 * cpu / draws,
            "p_best": np.round(result.p_best, 3).tolist(), "block": result.info["draw_block"],
            "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


def main():
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--workload", help="run one workload in this process (internal)")
    p.add_argument("--draws", type=int, default=None, help="compare's draws (default: 100 tiny, else 200)")
    args = p.parse_args()
    k, n, draws = SIZES[args.size]
    draws = args.draws or draws
    if args.workload:
        print(json.dumps(workload(args.workload, k, n, draws)))
        return
    print(f"# K = {k}, N = {n}, 3 systems; {_common.machine()}; load {os.getloadavg()[0]:.1f}")
    print("| workload | anchor (numpy) | ecjax first | ecjax steady | ratio | note |")
    print("|---|---|---|---|---|---|")
    for name in ("metrics", "compare", "compare_paired"):
        t0 = time.perf_counter()
        command = [sys.executable, __file__, "--size", args.size, "--draws", str(draws), "--workload", name]
        proc = subprocess.run(command, capture_output=True, text=True, check=True)
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        if name == "metrics":
            # The anchor computes the three numbers straight from the samples; ecjax builds the sparse table (a
            # sort of the rows) and checks its inputs: a ratio below 1, printed to two digits.
            print(f"| sparse counts + EC, NEC, accuracy | {r['anchor_s']:.3g} s | {r['first_s']:.3g} s | "
                  f"{r['steady_s']:.3g} s | {r['anchor_s'] / r['steady_s']:.2g}x | max rel. diff "
                  f"{r['max_rel_diff']:.1e}; peak {r['peak_gb']:.2f} GiB |")
        else:
            print(f"| {name}, {draws} draws | - | {r['first_s']:.3g} s | {r['steady_s']:.3g} s | - | "
                  f"{r['per_draw_ms']:.3g} ms a draw ({r['cpu_per_draw_ms']:.3g} ms CPU; block {r['block']}), "
                  f"P(best) {r['p_best']}; "
                  f"peak {r['peak_gb']:.2f} GiB; process {time.perf_counter() - t0:.0f} s |")


if __name__ == "__main__":
    main()
