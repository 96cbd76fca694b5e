"""Coverage of prob.bootstrap_metric's 90 % intervals by simulation (issue 31): not a timing benchmark.

Data (issue 31's): class 1 with prevalence 0.4, a score ``x | y ~ N(+-0.75, 1)`` (class separation 1.5), whose
calibrated log-odds ``1.5 x + logit 0.4`` are scaled by 1.5 and shifted by 0.3 (an over-confident system).  Each
simulated set draws ``N`` samples; each call of the public ``prob.bootstrap_metric`` gives an interval, and the row
reports the share of sets whose interval holds the population value.  The simulation and the population values
(numerical integration over the score density; AUC in closed form) are those of tests/test_prob_bootstrap.py,
imported from there so that the README's table and the tests measure the same thing.

Clustered (``--clustered``): clusters of 10 samples whose scores share a shift ``u_g ~ N(0, 1.5^2)``; the
population values are those of the marginal density ``N(+-0.75, 1 + 1.5^2)``, and the intervals come from
``bootstrap_metric(..., groups=)`` and from ``prob.compare`` (accuracy: utilities ``eye(2)``, its 5-95 % interval).

Run from the repository root with this checkout's ecjax first on the path:

    PYTHONPATH=. python benchmarks/bootstrap_coverage.py                       # N = 50, 200, 1000; 400 sets each
    PYTHONPATH=. python benchmarks/bootstrap_coverage.py --sets 100 --sizes 50  # quicker
    PYTHONPATH=. python benchmarks/bootstrap_coverage.py --clustered --sets 300  # 20 and 50 clusters of 10
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import jax

from ecjax import prob

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_prob_bootstrap import CLUSTER_SIZE, interval_misses, population_values, simulate_set  # noqa: E402

METRICS = ("ece", "ece_plugin", "auc", "cross_entropy", "brier", "accuracy")


def compare_coverage(num_groups, num_sets, *, num_draws=1000, seed=0, cluster_sd=1.5):
    """Coverage of the population accuracy by ``prob.compare``'s clustered model (5-95 % of its yields)."""
    truth = population_values(cluster_sd)["accuracy"]
    rng = np.random.default_rng(seed)
    inside = []
    for r in range(num_sets):
        y, lp, groups = simulate_set(rng, CLUSTER_SIZE * num_groups, cluster_sd)
        res = prob.compare(prob.Systems(y, np.argmax(lp, -1)[None], groups=groups), utilities=np.eye(2),
                           key=jax.random.key(r), decompose=False,
                           settings=prob.MonteCarloSettings(num_draws=num_draws))
        lo, hi = np.percentile(np.asarray(res.yields[:, 0]), [5, 95])
        inside.append(lo <= truth <= hi)
    return np.mean(inside)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", type=int, default=400)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--metrics", nargs="+", default=list(METRICS))
    parser.add_argument("--clustered", action="store_true")
    args = parser.parse_args()
    if args.clustered:
        print("| clusters of 10 | posterior | coverage (nominal 0.90) | sets |")
        print("|---|---|---|---|")
        for g in (20, 50):
            for metric in ("accuracy", "brier"):
                misses = interval_misses(metric, CLUSTER_SIZE * g, args.sets, num_draws=args.draws, cluster_sd=1.5)
                print(f"| {g} | bootstrap_metric {metric} | {1 - misses[0].sum():.3f} | {args.sets} |", flush=True)
            print(f"| {g} | compare accuracy | {compare_coverage(g, args.sets, num_draws=args.draws):.3f} | "
                  f"{args.sets} |", flush=True)
        return
    print("| metric | N | equal-tailed (reported) | truth below / above it | HDI | sets |")
    print("|---|---|---|---|---|---|")
    for metric in args.metrics:
        for n in args.sizes:
            (above, below), hdi_misses = interval_misses(metric, n, args.sets, num_draws=args.draws)
            print(f"| {metric} | {n} | {1 - above - below:.3f} | {above:.3f} / {below:.3f} | "
                  f"{1 - hdi_misses.sum():.3f} | {args.sets} |", flush=True)


if __name__ == "__main__":
    main()
