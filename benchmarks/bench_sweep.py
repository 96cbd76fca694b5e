"""Sweep benchmarks (DESIGN.md table): ecjax.sweep vs the anchors, in one process, on the same inputs.

1. NEC of the 3 CIFAR-10 systems (argmax decisions, N = 10^4, K = 10) over
   10^5 random cost matrices (numpy float64 in, validation and transfer
   included): ``ecjax.sweep.sweep_counts`` vs two ``expected-cost`` loops,
   one call per matrix and system: ``average_cost_from_confusion_matrix``
   with rates and priors precomputed (the cheapest use of the anchor) and
   ``average_cost(targets, decisions)`` (what a user of the package writes).
   Where a loop would take more than ~30 s it is timed on a slice and scaled
   linearly (the row says so).
2. The Dyrland et al. (2022) §4.2 study at 10^6 pairs: ``ecjax.sweep.metric_reliability``
   vs a vectorized numpy implementation written here (same procedure:
   uniform hexagon, linear-density rates, inverse-CDF truncated normals with
   vectorized rejection; float64, scipy.special for the normal CDF).
3. Scaling: time of a cost-ratio sweep (3 systems, streamed reductions only)
   from 10^4 to 10^8 points, decisions given and binary scores given (Bayes
   thresholds by binary search), to show it is linear.

    python benchmarks/bench_sweep.py          # full size
    python benchmarks/bench_sweep.py --tiny   # CI smoke run
"""

from __future__ import annotations

import time

import numpy as np
from scipy.special import ndtr, ndtri

import jax

import ecjax
from ecjax.sweep import SweepSettings, grids, metric_reliability, sweep_counts, sweep_scores
from expected_cost import ec as ec_ref

from _common import HEADER, load, machine, parser, row


# ------------------------------------------------------------------ 1. NEC over cost matrices

def random_costs(rng, b, k):
    c = rng.uniform(0.1, 10.0, (b, k, k))
    c[:, np.arange(k), np.arange(k)] = 0.0
    return c


def bench_nec(rng, num_costs, repeats, anchor_budget_s=30.0):
    systems = ["cifar10_resnet-20", "cifar10_repvgg_a2", "cifar10_vgg19_bn"]
    data = [load(s) for s in systems]
    k = data[0][0].shape[1]
    costs = random_costs(rng, num_costs, k)
    counts = np.stack([np.asarray(ecjax.confusion_matrix(t, s.argmax(1), num_classes=k)) for s, t in data])

    def run():
        return sweep_counts(counts, costs, normalize=True, settings=SweepSettings(return_values=True))

    t0 = time.perf_counter()
    res = run()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = run()
        times.append(time.perf_counter() - t0)
    steady = float(np.median(times))

    rates = [c / c.sum(1, keepdims=True) for c in counts]
    priors = [c.sum(1) / c.sum() for c in counts]

    def anchor_cm(cs):  # the cheapest use of expected-cost: rates and priors precomputed
        out = np.empty((len(cs), len(counts)))
        for b, c in enumerate(cs):
            cm = ec_ref.CostMatrix(c)
            for s in range(len(counts)):
                out[b, s] = ec_ref.average_cost_from_confusion_matrix(rates[s], priors[s], cm, adjusted=True)
        return out

    def anchor_avg(cs):  # what a user of expected-cost writes: one call per matrix and system
        out = np.empty((len(cs), len(counts)))
        for b, c in enumerate(cs):
            cm = ec_ref.CostMatrix(c)
            for s, (sc, t) in enumerate(data):
                out[b, s] = ec_ref.average_cost(t, sc.argmax(1), cm, adjusted=True)
        return out

    rows = []
    for name, anchor in (("average_cost_from_confusion_matrix", anchor_cm), ("average_cost", anchor_avg)):
        probe = min(20, num_costs)
        t0 = time.perf_counter()
        anchor(costs[:probe])
        per_matrix = (time.perf_counter() - t0) / probe
        n = num_costs if per_matrix * num_costs <= anchor_budget_s else max(probe, int(anchor_budget_s / per_matrix))
        t0 = time.perf_counter()
        ref = anchor(costs[:n])
        anchor_s = (time.perf_counter() - t0) * num_costs / n
        np.testing.assert_allclose(res.values[:n], ref, rtol=1e-4)
        note = (f"anchor: expected-cost `{name}` per matrix and system; {num_costs:,} matrices, K = 10, "
                f"N = 10^4; winners {res.win_counts.tolist()}")
        if n < num_costs:
            note += f"; anchor timed on {n:,} matrices and scaled linearly"
        rows.append(row("NEC, 3 CIFAR-10 systems x cost matrices (sweep_counts)", anchor_s, first, steady, note))
    return "\n".join(rows)


# ------------------------------------------------------------------ 2. Dyrland et al. (2022) §4.2

def _np_truncated_normal(rng, mu, sd):
    lo, hi = ndtr(-mu / sd), ndtr((1.0 - mu) / sd)
    return np.clip(mu + sd * ndtri(lo + (hi - lo) * rng.random(mu.shape)), 0.0, 1.0)


def numpy_reliability(rng, n, sd):
    """Dyrland et al. (2022) §4.2 in vectorized numpy: fraction of wrongly ranked pairs per metric."""
    u, v = rng.random((2, n))
    piece = rng.integers(0, 3, n)
    lower = u + v <= 1
    x = np.where(piece == 0, u, np.where(piece == 1, -u, np.where(lower, -u, 1 - u)))
    y = np.where(piece == 0, v, np.where(piece == 1, -v, np.where(lower, v, v - 1)))
    ut = np.stack([1 - np.maximum(x, 0), np.maximum(-y, 0), np.maximum(y, 0), 1 - np.maximum(-x, 0)], 1)
    b = rng.random(n)
    t1, s1, t2, s2 = 0.5 + 0.5 * np.sqrt(rng.random((4, n)))

    def cells(t, s):  # tp, fn, fp, tn (rows = true class, class 0 positive)
        return np.stack([b * t, b * (1 - t), (1 - b) * (1 - s), (1 - b) * s], 1)

    c1, c2 = cells(t1, s1), cells(t2, s2)

    def metrics(c):
        tp, fn, fp, tn = c.T
        prec, rec, spec = tp / (tp + fp), tp / (tp + fn), tn / (tn + fp)
        mcc = (tp * tn - fp * fn) / np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        return np.stack([tp + tn, (rec + spec) / 2, prec, rec, spec, 2 * tp / (2 * tp + fp + fn), mcc,
                         np.sqrt(prec * rec)], 1)

    d_true = np.sum(ut * (c1 - c2), 1)
    d_met = metrics(c1) - metrics(c2)
    # Assessed utilities: rows (correct, wrong) per class, truncated normal errors, rejection on the order.
    means = np.stack([np.stack([ut[:, 0], ut[:, 3]], 1).ravel(), np.stack([ut[:, 1], ut[:, 2]], 1).ravel()], 1)
    vals = _np_truncated_normal(rng, means, sd)
    todo = vals[:, 0] <= vals[:, 1]
    while todo.any():
        idx = np.nonzero(todo)[0]
        cand = _np_truncated_normal(rng, means[idx], sd)
        ok = cand[:, 0] > cand[:, 1]
        vals[idx[ok]] = cand[ok]
        todo[idx[ok]] = False
    c, w = vals[:, 0].reshape(n, 2), vals[:, 1].reshape(n, 2)
    ue = np.stack([c[:, 0], w[:, 0], w[:, 1], c[:, 1]], 1)
    d_u = np.sum(ue * (c1 - c2), 1)
    return np.mean(d_true[:, None] * np.concatenate([d_met, d_u[:, None]], 1) < 0, 0)


def bench_reliability(num_pairs, repeats):
    key = jax.random.key(0)
    t0 = time.perf_counter()
    res = metric_reliability(key, num_pairs=num_pairs, utility_error_sd=0.1)
    first = time.perf_counter() - t0
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        res = metric_reliability(jax.random.key(r + 1), num_pairs=num_pairs, utility_error_sd=0.1)
        times.append(time.perf_counter() - t0)
    steady = float(np.median(times))
    rng = np.random.default_rng(0)
    numpy_reliability(rng, min(num_pairs, 10**4), 0.1)  # warm-up
    anchor_times = []
    for _ in range(max(1, min(repeats, 3))):
        t0 = time.perf_counter()
        ref = numpy_reliability(rng, num_pairs, 0.1)
        anchor_times.append(time.perf_counter() - t0)
    anchor_s = float(np.median(anchor_times))
    acc, util = res["accuracy"], res["utility_yield"]
    note = (f"{num_pairs:,} pairs; accuracy {100 * acc.fraction:.2f} +- {100 * acc.standard_error:.2f} % "
            f"(numpy {100 * ref[0]:.2f} %, seed 8.7 %), utility sd 0.1 {100 * util.fraction:.2f} % "
            f"(numpy {100 * ref[-1]:.2f} %, seed 4 %)")
    return row("Dyrland et al. (2022) §4.2 study (metric_reliability)", anchor_s, first, steady, note)


# ------------------------------------------------------------------ 3. scaling

def bench_scaling(sizes):
    rng = np.random.default_rng(1)
    counts = rng.integers(1, 500, (3, 2, 2))
    scores, labels = load("pneumoniamnist_resnet50")
    log_odds = scores[:, 1] - scores[:, 0]
    shifted = np.stack([log_odds, 0.8 * log_odds + 0.3, 1.3 * log_odds - 0.2])  # three related "systems"
    lines = ["| points | decisions given: first call | steady | ns / point | scores given (N = 624): first call "
             "| steady | ns / point |", "|---|---|---|---|---|---|---|"]
    for n in sizes:
        axis = grids.cost_ratios(1e-3, 1e3, n)
        out = []
        for fn in (lambda: sweep_counts(counts, axis, settings=SweepSettings(return_values=False)),
                   lambda: sweep_scores(labels, shifted, axis, score_type="llr", priors=[0.5, 0.5],
                                        settings=SweepSettings(return_values=False))):
            t0 = time.perf_counter()
            fn()
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            fn()
            steady = time.perf_counter() - t0
            out += [f"{first:.3g} s", f"{steady:.3g} s", f"{1e9 * steady / n:.3g}"]
        lines.append(f"| {n:.0e} | " + " | ".join(out) + " |")
    return "\n".join(lines)


def main():
    args = parser(__doc__).parse_args()
    rng = np.random.default_rng(0)
    tiny = args.tiny
    repeats = 1 if tiny else args.repeats
    print(f"machine: {machine()}")
    print(HEADER)
    print(bench_nec(rng, 300 if tiny else 10**5, repeats))
    print(bench_reliability(20000 if tiny else 10**6, repeats))
    print()
    print("Scaling (cost-ratio sweep, 3 systems, streamed reductions, return_values=False):")
    print(bench_scaling([10**3, 10**4] if tiny else [10**4, 10**5, 10**6, 10**7, 10**8]))


if __name__ == "__main__":
    main()
