"""Ranking-confidence benchmarks (DESIGN.md table, row 5; issue 4 item 9).

1. Paired SST-2 systems (GPT-2 zero-shot vs four-shot, N = 1821, same samples):
   ecjax.prob.compare draws of the NEC difference vs ``confidence-intervals``
   bootstrapping the NEC difference (metric: ``expected-cost``'s NEC, as a
   user of the two packages would write it; 1000 bootstraps).  Throughput in
   draws per second; target >= 100x.
2. 10^5 joint draws (utility matrices x confusion rates) for the 3 CIFAR-10
   systems (N = 10^4, K = 10, unpaired): the draws themselves, and the whole
   ranking (compare); target < 1 s steady state on CPU.

ecjax's first call (compilation included) and steady state are reported
separately.  One process, same inputs.

    python benchmarks/bench_ranking.py          # full size
    python benchmarks/bench_ranking.py --tiny   # CI smoke run
"""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp

import ecjax
from confidence_intervals import evaluate_with_conf_int
from ecjax import prob
from expected_cost import ec as ec_ref

from _common import block, load, machine, parser, time_call


def bench_sst2(num_draws, num_bootstraps, repeats):
    # shared/data's two SST-2 systems are NOT paired by index (their targets agree on 56 % of positions
    # only; same class counts, different order).  The paired workload of the DESIGN table (2 paired
    # systems, N = 1821) is therefore two decision rules for GPT-2 zero-shot on its own samples: argmax
    # and the Bayes decisions for costs [[0, 1], [2, 0]].
    s1, labels = load("sst2_gpt2")
    costs = np.array([[0.0, 1.0], [2.0, 0.0]])
    dec = np.stack([s1.argmax(1), np.asarray(ecjax.bayes_decisions(s1, costs))])

    cost_matrix = ec_ref.CostMatrix(costs)

    def nec_difference(lab, d1, d2):
        return (ec_ref.average_cost(lab, d1, cost_matrix, adjusted=True)
                - ec_ref.average_cost(lab, d2, cost_matrix, adjusted=True))

    anchor_s, (center, ci) = time_call(lambda: evaluate_with_conf_int(
        dec[0], nec_difference, labels=labels, samples2=dec[1], num_bootstraps=num_bootstraps, alpha=10))

    def run(key):
        res = prob.compare(prob.Systems(labels, dec), costs=costs, key=key, decompose=False,
                           settings=prob.MonteCarloSettings(num_draws=num_draws))
        return res.normalized_expected_costs

    key = jax.random.key(0)
    first, steady = _time(run, key, repeats)
    nec = np.asarray(run(key), np.float64)
    diff = nec[:, 0] - nec[:, 1]
    anchor_rate = num_bootstraps / anchor_s
    ecjax_rate = num_draws / steady
    print("## 1. Paired, N = 1821: SST-2 GPT-2 zero-shot, argmax vs Bayes decisions, NEC difference "
          "(costs [[0, 1], [2, 0]])")
    print(f"confidence-intervals: {num_bootstraps} bootstraps in {anchor_s:.3f} s = {anchor_rate:,.0f} draws/s; "
          f"NEC difference {center:.4f}, 90% CI [{ci[0]:.4f}, {ci[1]:.4f}]")
    print(f"ecjax.prob.compare:   {num_draws} draws, first call {first:.3f} s (compile incl.), steady {steady:.4f} s "
          f"= {ecjax_rate:,.0f} draws/s; NEC difference {diff.mean():.4f}, 90% interval "
          f"[{np.percentile(diff, 5):.4f}, {np.percentile(diff, 95):.4f}]")
    print(f"throughput ratio ecjax/anchor: {ecjax_rate / anchor_rate:,.0f}x (target >= 100x)\n")

    # The SST-2 pair (zero-shot vs four-shot, unpaired) with uncertain costs (a miss costs 1 to 5 false
    # alarms) from scores: each draw redoes the Bayes decisions for its own cost matrix.
    s2, labels2 = load("sst2_gpt2_4shot")

    def run_scores(key):
        res = prob.compare(prob.Systems([labels, labels2], scores=[s1, s2], paired=False), costs=prob.cost_ratio(1, 5),
                           key=key, decompose=False, settings=prob.MonteCarloSettings(num_draws=num_draws))
        return res.yields

    first, steady = _time(run_scores, key, repeats)
    print(f"SST-2 zero-shot vs four-shot from scores, uncertain costs (decisions redone per draw): first "
          f"{first:.3f} s, steady {steady:.4f} s = {num_draws / steady:,.0f} draws/s\n")


def _time(fn, key, repeats):
    import statistics
    import time

    t0 = time.perf_counter()
    block(fn(key))
    first = time.perf_counter() - t0
    runs = []
    for r in range(repeats):
        t0 = time.perf_counter()
        block(fn(jax.random.fold_in(key, r + 1)))
        runs.append(time.perf_counter() - t0)
    return first, statistics.median(runs)


def bench_joint_draws(num_draws, repeats):
    names = ["cifar10_resnet-20", "cifar10_repvgg_a2", "cifar10_vgg19_bn"]
    data = [load(n) for n in names]
    k = data[0][0].shape[1]
    labels = [t for _, t in data]
    decisions = [s.argmax(1) for s, _ in data]
    counts = jnp.stack([ecjax.confusion_matrix(t, d, num_classes=k) for t, d in zip(labels, decisions)])
    # Costs: 0 on the diagonal, each error cost uncertain around 1 (truncated normal, sd 0.3, >= 0).
    prior = prob.truncated_normal(1.0 - np.eye(k), 0.3 * (1.0 - np.eye(k)), low=0.0, kind="cost")

    def joint(key):
        # The joint draws themselves: utilities, class priors and rates, and the yields they give.
        ku, kr, kp = jax.random.split(key, 3)
        u = prior.sample(ku, num_draws)
        r = prob.sample_rates(kr, counts, num_draws=num_draws)
        p = prob.sample_class_priors(kp, None, counts[0].sum(-1), num_draws=num_draws)
        return prob.evaluate_draws(u, r, p)[0]

    def full(key):
        return prob.compare(prob.Systems(labels, dict(zip(names, decisions)), paired=False), utilities=prior, key=key,
                            settings=prob.MonteCarloSettings(num_draws=num_draws)).yields

    print(f"## 2. {num_draws} joint draws (utilities x rates), 3 CIFAR-10 systems, N = 10^4, K = {k}, unpaired")
    key = jax.random.key(1)
    first, steady = _time(joint, key, repeats)
    print(f"joint draws + yields: first call {first:.3f} s, steady {steady:.4f} s (target < 1 s)")
    first, steady = _time(full, key, repeats)
    print(f"full compare() (also NEC, ranks, HDIs, doubt decomposition): first {first:.3f} s, steady {steady:.4f} s")
    y = np.asarray(full(key))
    print("P(best):", dict(zip(names, np.round(np.bincount(y.argmax(1), minlength=3) / len(y), 4))))


def main():
    args = parser(__doc__.splitlines()[0]).parse_args()
    print(f"machine: {machine()}\n")
    if args.tiny:
        bench_sst2(num_draws=2000, num_bootstraps=20, repeats=1)
        bench_joint_draws(num_draws=1000, repeats=1)
    else:
        bench_sst2(num_draws=100_000, num_bootstraps=1000, repeats=args.repeats)
        bench_joint_draws(num_draws=100_000, repeats=args.repeats)


if __name__ == "__main__":
    main()
