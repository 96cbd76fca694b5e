"""Coverage of prob.bootstrap_metric's 90 % intervals by simulation (issue 31): not a timing benchmark.

Data (the issue's): class 1 with prevalence 0.4, a score ``x | y ~ N(+-0.75, 1)`` (class separation 1.5), whose
calibrated log-odds ``1.5 x + logit 0.4`` are scaled by 1.5 and shifted by 0.3 (an over-confident system).  Each
simulated set draws ``N`` samples; each call of the public ``prob.bootstrap_metric`` gives an interval, and the row
reports the share of sets whose interval holds the population value.  The population values are computed here by
numerical integration over the score density (ECE and RMS calibration error for the 15 equal-width bins,
cross-entropy, Brier) or in closed form (AUC ``Phi(d / sqrt 2)``, the accuracy of "decide 1 iff log-odds > 0").

Clustered (``--clustered``): clusters of 10 samples whose scores share a shift ``u_g ~ N(0, 1.5^2)``; the
population values are those of the marginal score density ``N(+-0.75, 1 + 1.5^2)`` (accuracy, Brier), and the
intervals come from ``bootstrap_metric(..., groups=)`` and from ``prob.compare`` (accuracy: utilities ``eye(2)``).

    python benchmarks/bootstrap_coverage.py                      # N = 50, 200, 1000; 400 sets each
    python benchmarks/bootstrap_coverage.py --sets 100 --sizes 50  # quicker
    python benchmarks/bootstrap_coverage.py --clustered          # 20 and 50 clusters of 10
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import special, stats

import jax
import jax.numpy as jnp

from ecjax import prob

PREVALENCE, SEPARATION, SCALE, SHIFT = 0.4, 1.5, 1.5, 0.3
NUM_BINS = 15
METRICS = ("ece", "rms_ece", "auc", "cross_entropy", "brier", "accuracy")


def accuracy(labels, log_posteriors, weights):
    """A user metric: the weighted accuracy of the argmax decision."""
    return jnp.sum(weights * (jnp.argmax(log_posteriors, -1) == labels))


def log_odds(x):
    return SCALE * (SEPARATION * x + special.logit(PREVALENCE)) + SHIFT


def simulate(rng, n, cluster_sd=0.0, cluster_size=10):
    """Labels, ``(N, 2)`` float32 log-posteriors and cluster ids."""
    y = (rng.random(n) < PREVALENCE).astype(int)
    groups = np.arange(n) // cluster_size
    shift = rng.normal(0.0, cluster_sd, groups.max() + 1)[groups] if cluster_sd else 0.0
    s = log_odds(rng.normal(size=n) + SEPARATION * (y - 0.5) + shift)
    return y, np.stack([-np.logaddexp(0, s), -np.logaddexp(0, -s)], -1).astype(np.float32), groups


def population(cluster_sd=0.0):
    """Population values by integration over the score density (the marginal one with clusters)."""
    sd = np.sqrt(1.0 + cluster_sd**2)
    x = np.linspace(-15, 15, 1_000_001)
    dx = x[1] - x[0]
    dens1 = stats.norm.pdf(x, SEPARATION / 2, sd) * PREVALENCE * dx
    dens0 = stats.norm.pdf(x, -SEPARATION / 2, sd) * (1 - PREVALENCE) * dx
    mass, eta, s = dens0 + dens1, dens1 / np.maximum(dens0 + dens1, 1e-300), special.expit(log_odds(x))
    bins = np.clip(np.ceil(s * NUM_BINS).astype(int) - 1, 0, NUM_BINS - 1)
    gap = np.bincount(bins, weights=mass * (eta - s), minlength=NUM_BINS)
    bin_mass = np.bincount(bins, weights=mass, minlength=NUM_BINS)
    x0 = (-SHIFT / SCALE - special.logit(PREVALENCE)) / SEPARATION  # log-odds 0
    return {
        "ece": np.abs(gap).sum(),
        "rms_ece": np.sqrt(np.sum(gap**2 / np.maximum(bin_mass, 1e-300))),
        "auc": stats.norm.cdf(SEPARATION / np.sqrt(2 * sd**2)),
        "cross_entropy": -np.sum(dens1 * np.log(s) + dens0 * np.log1p(-s)),
        "brier": np.sum(dens1 * (1 - s) ** 2 + dens0 * s**2),
        "accuracy": PREVALENCE * stats.norm.sf(x0, SEPARATION / 2, sd)
                    + (1 - PREVALENCE) * stats.norm.cdf(x0, -SEPARATION / 2, sd),
    }


def _call(metric, systems, key, num_draws):
    name = {"accuracy": accuracy}.get(metric, metric)
    return prob.bootstrap_metric(systems, name, key=key, higher_is_better=True if metric == "accuracy" else None,
                                 settings=prob.MonteCarloSettings(num_draws=num_draws))


def coverage(metric, n, num_sets, *, num_draws=1000, seed=0, cluster_sd=0.0):
    """``(reported-interval coverage, equal-tailed coverage, share of sets whose estimate is outside)``."""
    truth = population(cluster_sd)[metric]
    rng = np.random.default_rng(seed)
    inside, tails, outside = [], [], []
    for r in range(num_sets):
        y, lp, groups = simulate(rng, n, cluster_sd)
        res = _call(metric, prob.Systems(y, scores=lp, groups=groups if cluster_sd else None),
                    jax.random.key(r), num_draws)
        lo, hi = res.hdi[0]
        inside.append(lo <= truth <= hi)
        q = np.percentile(np.asarray(res.draws[:, 0]), [5, 95])
        tails.append(q[0] <= truth <= q[1])
        outside.append(not lo <= res.estimate[0] <= hi)
    return np.mean(inside), np.mean(tails), np.mean(outside)


def compare_coverage(n, num_sets, *, num_draws=1000, seed=0, cluster_sd=1.5):
    """Coverage of the accuracy by ``prob.compare``'s clustered model (the 5-95 % interval of its yields)."""
    truth = population(cluster_sd)["accuracy"]
    rng = np.random.default_rng(seed)
    inside = []
    for r in range(num_sets):
        y, lp, groups = simulate(rng, n, cluster_sd)
        decisions = np.argmax(lp, -1)[None]
        res = prob.compare(prob.Systems(y, decisions, groups=groups), utilities=np.eye(2), key=jax.random.key(r),
                           decompose=False, settings=prob.MonteCarloSettings(num_draws=num_draws))
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
        print("| clusters of 10 | metric | coverage (nominal 0.90) | sets |")
        print("|---|---|---|---|")
        for g in (20, 50):
            for metric in ("accuracy", "brier"):
                c, _, _ = coverage(metric, 10 * g, args.sets, num_draws=args.draws, cluster_sd=1.5)
                print(f"| {g} | bootstrap_metric {metric} | {c:.3f} | {args.sets} |", flush=True)
            c = compare_coverage(10 * g, args.sets, num_draws=args.draws)
            print(f"| {g} | compare accuracy | {c:.3f} | {args.sets} |", flush=True)
        return
    print("| metric | N | reported interval | equal-tailed 5-95 % | estimate outside its interval | sets |")
    print("|---|---|---|---|---|---|")
    for metric in args.metrics:
        for n in args.sizes:
            c, t, o = coverage(metric, n, args.sets, num_draws=args.draws)
            print(f"| {metric} | {n} | {c:.3f} | {t:.3f} | {o:.3f} | {args.sets} |", flush=True)


if __name__ == "__main__":
    main()
