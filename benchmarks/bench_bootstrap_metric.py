"""Posterior of a metric of the scores: ecjax.prob.bootstrap_metric against confidence-intervals' bootstrap.

Both resample the test samples: ``confidence-intervals`` (0.0.3) draws bootstrap index sets and calls the metric
on each in a Python loop; ``ecjax.prob.bootstrap_metric`` gives the samples Dirichlet(1, ..., 1) weights (the
Bayesian bootstrap, Rubin 1981) and evaluates a weighted kernel of the metric for every draw and every system
in one compiled program.  The two posteriors differ in variance by a factor ``N / (N + 1)`` only, so their 90 %
interval ends must agree to within Monte Carlo error (printed in units of the draws' standard deviation; with
1000 draws an equal-tailed end has a Monte Carlo error of about 0.07 sd, with 10^4 about 0.02 sd).

Workloads (real scores from ../shared/data), each at the same number of draws on both sides (1000 and 10^4):

1. AUC, PneumoniaMNIST ResNet-50 (N = 624, binary), its log-odds; the paired second system is the same log-odds
   plus Gaussian noise (sd 2, seeded), as in tests/test_prob_bootstrap.py: no second real system was scored on
   these samples.
2. Cross-entropy, SST-2 GPT-2 zero-shot (N = 1821, log-posteriors); the paired second system is the same
   scores at temperature 2 (two calibrations of one system on the same samples).

For each: one system (the anchor's plain call) and the paired difference of the two (the anchor's ``samples2``;
ecjax draws both systems with shared weights in one call, so that call also gives each system's interval).
The anchor's metric is the fastest a user would write (scipy ranks for the AUC, numpy means of per-sample
losses for the cross-entropy); scikit-learn's ``roc_auc_score`` / ``log_loss``, as most users would write it,
is timed too at the smaller number of draws (its time per draw does not depend on it).

ecjax's time is that of the whole public call (validation, draws, HDIs, P(best), ranks, Monte Carlo errors):
first call (compilation included) and the median of ``--repeats`` further calls with new keys.  Time per draw
and the ratio anchor / ecjax (the same number of draws on both sides) are printed, then the rows as a markdown
table.

    python benchmarks/bench_bootstrap_metric.py          # full size
    python benchmarks/bench_bootstrap_metric.py --tiny   # CI smoke run
"""

from __future__ import annotations

import os

import numpy as np
from scipy.special import log_softmax
from scipy.stats import rankdata
from sklearn.metrics import log_loss, roc_auc_score

import jax

from confidence_intervals import evaluate_with_conf_int
from ecjax import prob

from _common import load, machine, parser, time_call, time_jax

ALPHA = 10  # confidence-intervals' alpha in percent: the 5 % and 95 % percentiles, a 90 % interval


# ------------------------------------------------------------------ anchor metrics

def auc_ranks(labels, scores):
    """Mann-Whitney AUC by average ranks (ties count one half)."""
    r = rankdata(scores)
    n1 = labels.sum()
    return (r[labels == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * (len(labels) - n1))


def auc_sklearn(labels, scores):
    return roc_auc_score(labels, scores)


def mean_loss(losses):
    return losses.mean()


def log_loss_sklearn(labels, log_posteriors):
    return log_loss(labels, np.exp(log_posteriors), labels=[0, 1])


def difference(metric):
    """The anchor's metric of a paired difference: ``metric(system 1) - metric(system 2)`` on the same set."""
    def diff(*args):
        *labels, a, b = args
        return metric(*labels, a) - metric(*labels, b)
    return diff


# -------------------------------------------------------------------- workloads

def auc_workload():
    s, labels = load("pneumoniamnist_resnet50")
    log_odds = (s[:, 1] - s[:, 0]).astype(np.float64)
    noisy = log_odds + np.random.default_rng(7).normal(0.0, 2.0, log_odds.shape)
    llr = np.stack([log_odds, noisy])
    return dict(
        title="AUC, PneumoniaMNIST ResNet-50 (N = 624)", second="its log-odds + N(0, 2²) noise", metric="auc",
        labels=labels,
        ecjax_scores=llr.astype(np.float32), ecjax_options=dict(score_type="llr"),
        # (name, metric, per-system samples, labels or None, scikit-learn?): the anchor's metric gets
        # ([labels,] samples[, samples2]).
        anchors=[("scipy ranks", auc_ranks, llr, labels, False),
                 ("scikit-learn `roc_auc_score`", auc_sklearn, llr, labels, True)])


def cross_entropy_workload():
    s, labels = load("sst2_gpt2")
    lp = np.stack([s.astype(np.float64), log_softmax(s.astype(np.float64) / 2, axis=-1)])
    lp = log_softmax(lp, axis=-1)  # the stored log-posteriors sum to 1 - 2e-7; ecjax renormalizes them too
    losses = -lp[:, np.arange(len(labels)), labels]
    return dict(
        title="cross-entropy, SST-2 GPT-2 zero-shot (N = 1821)", second="its scores at temperature 2",
        metric="cross_entropy",
        labels=labels, ecjax_scores=lp.astype(np.float32), ecjax_options={},
        anchors=[("numpy mean of per-sample losses", mean_loss, losses, None, False),
                 # scikit-learn's log_loss needs the labels and the posteriors, not the losses.
                 ("scikit-learn `log_loss`", log_loss_sklearn, lp, labels, True)])


# ---------------------------------------------------------------------- running

def run_anchor(metric, samples, labels, num_draws, paired):
    """(seconds, centre, (low, high)) of confidence-intervals on system 0, or on system 0 minus system 1."""
    fn = difference(metric) if paired else metric
    return time_call(lambda: evaluate_with_conf_int(
        samples[0], fn, labels=labels, num_bootstraps=num_draws, alpha=ALPHA,
        samples2=samples[1] if paired else None))


def run_ecjax(work, num_draws, paired, repeats):
    """(first s, steady s, posterior draws (S,) of system 0 or of the difference, HDI of it)."""
    scores = work["ecjax_scores"] if paired else work["ecjax_scores"][0]
    key = jax.random.key(0)
    calls = iter(range(1, repeats + 2))

    def call(k):  # a new key for every call: the steady state is that of fresh draws
        return prob.bootstrap_metric(prob.Systems(work["labels"], scores=scores, **work["ecjax_options"]), work["metric"],
                                     key=jax.random.fold_in(k, next(calls)),
                                     settings=prob.MonteCarloSettings(num_draws=num_draws))

    first, steady, post = time_jax(call, key, repeats=repeats)
    draws = np.asarray(post.draws, np.float64)
    if paired:
        return first, steady, draws[:, 0] - draws[:, 1], post.interval("differences")[0, 1]
    return first, steady, draws[:, 0], post.hdi[0]


def compare(work, num_draws, paired, repeats, with_sklearn):
    """Time both sides on one workload; print the details; return the numbers for the table."""
    print(f"### {work['title']}: {_what(work, paired)}, {num_draws} draws")
    first, steady, draws, hdi = run_ecjax(work, num_draws, paired, repeats)
    ours = np.percentile(draws, [5, 95])
    sd = draws.std()
    print(f"ecjax.prob.bootstrap_metric: first call {first:.3f} s (compile incl.), steady {steady:.4f} s (median of "
          f"{repeats}) = {steady / num_draws * 1e6:.2f} us/draw; posterior mean {draws.mean():.4f}, 90% equal-tailed "
          f"[{ours[0]:.4f}, {ours[1]:.4f}], 90% HDI [{hdi[0]:.4f}, {hdi[1]:.4f}], sd {sd:.4f}")
    result = dict(first=first, steady=steady, anchors={})
    for name, metric, samples, labels, sklearn in work["anchors"]:
        if sklearn and not with_sklearn:
            continue
        anchor_s, (centre, ci) = run_anchor(metric, samples, labels, num_draws, paired)
        shift = max(abs(ci[0] - ours[0]), abs(ci[1] - ours[1])) / sd
        print(f"confidence-intervals ({name}): {num_draws} bootstraps in {anchor_s:.3f} s = "
              f"{anchor_s / num_draws * 1e6:.1f} us/draw; on the data {centre:.4f}, 90% CI [{ci[0]:.4f}, {ci[1]:.4f}]"
              f" (ends within {shift:.3f} sd of ecjax's equal-tailed ones)")
        print(f"ratio anchor / ecjax (same number of draws): {anchor_s / steady:,.1f}x")
        result["anchors"][name] = anchor_s
    print()
    return result


def _what(work, paired):
    return f"minus {work['second']} (paired difference)" if paired else "one system"


def _num(x):
    """Three significant digits, trailing zeros kept (1.00 s), no trailing point (166 µs)."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:#.3g}"


def _joined(values, fmt=None):
    return " / ".join(_num(x) if fmt is None else format(x, fmt) for x in values)


def table_row(work, paired, draw_counts, results):
    """One markdown row for all draw counts (values joined by " / "); scikit-learn's anchor in parentheses."""
    main_anchor = next(a for a in work["anchors"] if not a[4])[0]
    extra = [a[0] for a in work["anchors"] if a[4]]
    anchor_s = [r["anchors"][main_anchor] for r in results]
    steady = [r["steady"] for r in results]
    ratios = [a / s for a, s in zip(anchor_s, steady)]
    counts = " / ".join(f"{n:,}" for n in draw_counts)
    anchor = f"`confidence-intervals`, metric by {main_anchor}"
    anchor_time = f"{_joined(anchor_s)} s"
    ratio = f"**{_joined(ratios, ',.0f')}×**"
    if extra:
        sk = results[0]["anchors"][extra[0]]
        anchor += f" (by {extra[0]}, {draw_counts[0]:,} draws)"
        anchor_time += f" ({_num(sk)} s)"
        ratio += f" (**{sk / steady[0]:,.0f}×**)"
    per_draw = _joined([s / n * 1e6 for s, n in zip(steady, draw_counts)])
    return (f"| {work['title']}, {_what(work, paired)}; {counts} draws | {anchor} | {anchor_time} | "
            f"{_joined([r['first'] for r in results], '.2f')} s | {_joined(steady)} s ({per_draw} µs/draw) | "
            f"{ratio} | — |")


def main():
    args = parser(__doc__.splitlines()[0]).parse_args()
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f} (1 min) at the start\n")
    draw_counts = (200,) if args.tiny else (1000, 10_000)
    repeats = 1 if args.tiny else args.repeats
    rows = []
    for work in (auc_workload(), cross_entropy_workload()):
        for paired in (False, True):
            results = [compare(work, n, paired, repeats, with_sklearn=n == draw_counts[0]) for n in draw_counts]
            rows.append(table_row(work, paired, draw_counts, results))
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end\n")
    print("| workload | anchor | anchor time | ecjax first call | ecjax steady | ratio anchor/ecjax | target |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
