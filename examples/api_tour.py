"""A five-minute tour of the API on the classifier outputs in ../shared/data.

The README shows this file as its tour and, below it, what it prints; a test checks that both are today's.
"""
from pathlib import Path

import jax
import numpy as np

import ecjax
from ecjax import costs, prob, sweep
from ecjax.sweep import grids

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load(name):
    """(labels, scores) of one system: (N,) class indices and (N, K) scores."""
    return tuple(np.load(DATA / name / f, allow_pickle=False) for f in ("targets.npy", "scores.npy"))


np.set_printoptions(precision=4, suppress=True)

# Three CIFAR-10 networks, 10,000 test images each (in a different order for each: not paired), logits (N, K).
(labels, s_a), (y_b, s_b), (y_c, s_c) = (load(f"cifar10_{n}") for n in ("resnet-20", "repvgg_a2", "vgg19_bn"))
K = s_a.shape[1]
deploy = np.r_[0.28, np.full(K - 1, 0.08)]                # deployment priors: class 0 3.5 times as common

# Decisions -> counts -> metrics, for one or M systems at once.
decisions = np.stack([s.argmax(1) for s in (s_a, s_b, s_c)])    # (M, N) the most probable class
counts = ecjax.confusion_matrix(np.stack([labels, y_b, y_c]), decisions)   # (M, K, K) exact integer counts
c01 = costs.zero_one(K)
print("error rate      ", ecjax.expected_cost(counts, c01))     # EC with 0-1 costs and the data's priors
print("NEC, deployment ", ecjax.normalized_expected_cost(counts, c01, priors=deploy))
utilities = costs.costs_to_utilities(c01)                       # 1 on the diagonal, 0 elsewhere
print("utility yield   ", ecjax.utility_yield(counts, utilities, priors=deploy))
print("MCC, macro F1   ", ecjax.matthews_corrcoef(counts), ecjax.f1_score(counts, average="macro"))

# Bayes decisions for any cost matrix (abstention: an extra column), batched over cost matrices.
abstain = ecjax.bayes_decisions(s_a, costs.zero_one(K, abstain=0.3), score_type="logits")    # (N,) in 0..K
print("abstained on    ", int(np.sum(abstain == K)), "of", len(labels))
many = np.random.default_rng(0).uniform(0, 5, (1000, K, K)) * (1 - np.eye(K))              # 1000 cost matrices
nec = ecjax.bayes_expected_cost(labels, s_a, many, score_type="logits", normalize=True)   # (1000,)
print(f"NEC over 1000 random cost matrices: median {np.median(nec):.4f}, max {np.max(nec):.4f}")

# Scores as posteriors: proper scoring rules, discrimination, calibration.
xe = ecjax.cross_entropy(labels, s_a, score_type="logits", normalize=True)   # 1 = no better than the priors
brier, ece = ecjax.brier(labels, s_a, score_type="logits"), ecjax.ece(labels, s_a, score_type="logits")
print(f"cross-entropy    {float(xe):.4f} (normalized)   Brier {float(brier):.4f}   ECE {float(ece):.4f}")
d = ecjax.calibration.diagnose(s_a, labels, protocol=ecjax.calibration.CrossValidation(jax.random.key(0)),
                               method="affine", score_type="logits")
print(f"miscalibration   {float(d.relative_loss):.1f} % of the cross-entropy (5-fold cross-validated affine)")

# Binary scores: GPT-2 on SST-2 (log-posteriors). The EC of the best threshold is one sort, O(N log N).
y2, post2 = load("sst2_gpt2")
nec_best, threshold = ecjax.optimal_threshold_expected_cost(y2, post2, costs.f_beta(2.0), priors=[0.9, 0.1],
                                                           normalize=True)
print(f"best threshold   NEC {float(nec_best):.4f} at class-1 log-odds > {float(threshold):.3f}")
print(f"AUC              {float(ecjax.auc(y2, post2)):.4f}")
risk = ecjax.bayes_risk_curve(y2, post2, score_type="log_posteriors")     # actual and minimum NEC over the prior
at_0 = np.argmin(np.abs(risk.prior_log_odds))
print(f"Bayes risk at prior log-odds 0: actual {risk.actual[at_0]:.4f}, minimum {risk.minimum[at_0]:.4f}")
band = prob.curve_band(y2, post2, key=jax.random.key(0))                # ROC, 95 % bands; plots.curve_bands(band)
at = int(np.argmin(np.abs(np.asarray(band.grid) - 0.1)))
print(f"TPR at FPR 0.1   {float(band.estimate[at]):.3f}: {float(band.pointwise_lower[at]):.3f}-"
      f"{float(band.pointwise_upper[at]):.3f} pointwise, {float(band.simultaneous_lower[at]):.3f}-"
      f"{float(band.simultaneous_upper[at]):.3f} with the whole curve")

# Label shift: deployment priors from unlabelled deployment scores (affine calibration on labelled data, then EM).
rng = np.random.default_rng(1)
pool = np.arange(5000, len(labels))                             # 1000 unlabelled images drawn at the priors `deploy`
unlabelled = np.concatenate([rng.choice(pool[labels[pool] == k], n, replace=False)
                             for k, n in enumerate(rng.multinomial(1000, deploy))])
shift = prob.label_shift_posterior(labels[:2000], s_a[:2000], s_a[unlabelled], key=jax.random.key(0),
                                   num_draws=200, score_type="logits")    # shift.distribution(): compare's priors=
print("estimated priors", np.asarray(shift.priors), "class 0 90 % interval", shift.interval(0.9)[0])

# Which classifier, and how sure are we? Costs uncertain, deployment priors uncertain, test set finite.
low, high = 1 - np.eye(K), 5 * (1 - np.eye(K))                 # each error costs between 1 and 5
systems = prob.Systems([labels, y_b, y_c], scores=[s_a, s_b, s_c], score_type="logits", paired=False,
                       names=["resnet20", "repvgg", "vgg19"], decision_rule="expected_utility")  # or "per_draw"
result = prob.compare(systems, costs=prob.intervals(low, high),
                      priors=prob.interval_priors(deploy * 0.5, np.minimum(deploy * 1.5, 1)), key=jax.random.key(0),
                      rope=0.002, settings=prob.MonteCarloSettings(num_draws=20_000))
print(result.summary())
print("P(best)         ", np.asarray(result.p_best))

# For which costs does each system win? A 10,000-point sweep of the cost ratio, then the whole utility space.
y4, post4 = load("sst2_gpt2_4shot")
res = sweep.sweep_scores(np.stack([y2, y4]), np.stack([post2, post4]), grids.cost_ratios(0.01, 100, 10_000),
                         normalize=True)
print("win fraction    ", res.win_fraction)                      # the rest: ties
ratio = np.asarray(res.coords).ravel()                          # cost of a missed class 1 / cost of a false alarm
for first, last, winner in res.winner_runs():
    who = ["zero-shot", "4-shot"][winner] if winner >= 0 else "tie (the same decisions)"
    print(f"  cost ratio {ratio[first]:8.3f} .. {ratio[last]:8.3f}: {who}")
space = sweep.utility_space_map(labels=np.stack([y2, y4]), scores=np.stack([post2, post4]))
print("utility space   ", space.win_fraction)
