"""Thresholds chosen by F-beta, MCC and Youden's J, and the costs they imply (Ferrer 2025, §4.1, App. C.3).

References, all independent of ecjax: scikit-learn metrics over every threshold (brute force), the same
counts by numpy ``searchsorted``, Bayes decisions with the implied cost matrix written in numpy, the
seed's own simulation recipe and grid search re-run in numpy, closed-form population optima from
``scipy.stats.norm``, and a numpy ROC-convex-hull EER.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from scipy.stats import multivariate_normal, norm
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import confusion_matrix, f1_score, fbeta_score, matthews_corrcoef, roc_curve

import jax
import jax.numpy as jnp

from conftest import load_dataset
from ecjax.inputs import InputError
from ecjax import calibration, cli
from ecjax import calibrated_metric_threshold, optimal_metric_threshold
from ecjax.scores import eer, optimal_threshold_expected_cost

METRIC_CASES = [("f1", 1.0), ("f_beta", 0.5), ("f_beta", 2.0), ("mcc", 1.0), ("youden", 1.0)]


# ----------------------------------------------------------------- independent references

def _log_odds(scores, score_type):
    """Class-1 log-odds as ecjax reads the scores (float32), so both sides sort the same numbers."""
    a = np.asarray(scores).astype(np.float32)
    return a if score_type == "llr" else a[..., 1] - a[..., 0]


def _all_thresholds(s):
    """One threshold per distinct cut (decide 1 iff s > t): below all, between distinct scores, above all."""
    u = np.unique(np.asarray(s, np.float64))
    return np.concatenate([[-np.inf], (u[:-1] + u[1:]) / 2, [np.inf]])


def _sklearn_metric(labels, decisions, metric, beta):
    if metric == "f1":
        return f1_score(labels, decisions, zero_division=0)
    if metric == "f_beta":
        return fbeta_score(labels, decisions, beta=beta, zero_division=0)
    if metric == "mcc":
        return matthews_corrcoef(labels, decisions)
    tn, fp, fn, tp = confusion_matrix(labels, decisions, labels=[0, 1]).ravel()
    return tp / (tp + fn) - fp / (fp + tn)


def _sklearn_brute_force(labels, s, metric, beta):
    """Max of the metric over every threshold, with scikit-learn (Youden from its ROC curve)."""
    if metric == "youden":
        fpr, tpr, _ = roc_curve(labels, s, drop_intermediate=False)
        return float(np.max(tpr - fpr))
    return max(_sklearn_metric(labels, (s > t).astype(int), metric, beta) for t in _all_thresholds(s))


def _numpy_curve(labels, s, metric, beta):
    """``(thresholds, values)`` at every cut, from the textbook definitions in float64 (vectorized)."""
    t = _all_thresholds(s)
    pos, neg = np.sort(s[labels == 1]), np.sort(s[labels == 0])
    tp = (pos.size - np.searchsorted(pos, t, side="right")).astype(np.float64)
    fp = (neg.size - np.searchsorted(neg, t, side="right")).astype(np.float64)
    fn, tn = pos.size - tp, neg.size - fp
    with np.errstate(invalid="ignore", divide="ignore"):
        if metric in ("f1", "f_beta"):
            b2 = beta**2
            precision, recall = np.where(tp + fp > 0, tp / (tp + fp), 0.0), tp / pos.size
            value = np.where(precision + recall > 0, (1 + b2) * precision * recall / (b2 * precision + recall), 0.0)
        elif metric == "mcc":
            den = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
            value = np.where(den > 0, (tp * tn - fp * fn) / den, 0.0)
        else:
            value = tp / pos.size - fp / neg.size
    return t, value


def _posterior_class1(s, score_type, priors):
    """P(1|x) in float64: the log-odds as given for posteriors, LLR + prior log-odds for likelihoods."""
    z = s.astype(np.float64) + (np.log(priors[1] / priors[0]) if score_type == "llr" else 0.0)
    return 1.0 / (1.0 + np.exp(-z))


def _rocch_eer(labels, s):
    """EER on the ROC convex hull: upper hull of scikit-learn's ROC points, crossed with fpr = 1 - tpr."""
    fpr, tpr, _ = roc_curve(labels, s, drop_intermediate=False)
    hull = []
    for p in sorted(set(zip(fpr.tolist(), tpr.tolist()))):
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) >= 0:  # not a right turn: not on the upper hull
                hull.pop()
            else:
                break
        hull.append(p)
    x, y = np.array(hull).T
    g = x - (1.0 - y)  # false-alarm minus miss rate, increasing along the hull
    i = np.flatnonzero((g[:-1] <= 0) & (g[1:] >= 0))[0]
    frac = 0.0 if g[i + 1] == g[i] else -g[i] / (g[i + 1] - g[i])
    return float(x[i] + frac * (x[i + 1] - x[i]))


def _small_systems(n=150, num_systems=3, seed=0):
    """Imbalanced labels and binary log-posteriors of a few systems, rounded so that scores tie."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.3).astype(np.int64)
    llr = np.round(rng.normal(size=(num_systems, n)) * [[1.0], [2.0], [0.7]][:num_systems]
                   + np.array([1.5, 2.5, 0.5])[:num_systems, None] * labels, 1)
    lp1 = -np.logaddexp(0.0, -llr)
    return labels, np.stack([np.log1p(-np.exp(lp1)), lp1], -1)


@functools.lru_cache(maxsize=None)
def _seed001_dataset(variance):
    """Ferrer (2025) App. D as in its notebook (``expected_cost`` repository, section_4.1_equivalent_ec.ipynb).

    P_0 = 0.8, N = 100000, means 0 and 1, seeded with 0 and drawn by ``multivariate_normal.rvs(mean,
    variance, count)``: the seed's text calls 0.20 and 0.06 standard deviations, its code passes them
    as the (co)variance, and only the latter reproduces its printed thresholds (checked below).
    Returns labels and exact log-posteriors.
    """
    rng = np.random.RandomState(0)  # the stream of the notebook's np.random.seed(0)
    counts = [80000, 20000]
    x = np.concatenate([multivariate_normal.rvs(m, variance, c, random_state=rng) for m, c in zip((0, 1), counts)])
    labels = np.repeat([0, 1], counts)
    sd = np.sqrt(variance)
    ll = np.stack([norm.logpdf(x, 0, sd), norm.logpdf(x, 1, sd)], -1) + np.log([0.8, 0.2])
    lp = ll - np.logaddexp(ll[:, :1], ll[:, 1:])
    labels.flags.writeable = lp.flags.writeable = False  # shared by the tests (cached)
    return labels, lp


# ------------------------------------------------------------------ brute force references

@pytest.mark.parametrize("metric,beta", METRIC_CASES)
def test_best_threshold_matches_sklearn_brute_force(metric, beta):
    labels, scores = _small_systems()
    res = optimal_metric_threshold(labels, scores, metric=metric, beta=beta)
    assert res.threshold.shape == (3,) and res.counts.shape == (3, 2, 2)
    for i in range(3):
        s = _log_odds(scores[i], "log_posteriors")
        best = _sklearn_brute_force(labels, s, metric, beta)
        assert float(res.metric_value[i]) == pytest.approx(best, abs=1e-6)
        # The threshold achieves the maximum, with exactly the counts scikit-learn finds there ...
        decisions = (s > float(res.threshold[i])).astype(int)
        assert _sklearn_metric(labels, decisions, metric, beta) == pytest.approx(best, abs=1e-6)
        np.testing.assert_array_equal(np.asarray(res.counts[i]), confusion_matrix(labels, decisions))
        # ... as does every t in [threshold_low, threshold_high).
        low_decisions = (s > float(res.threshold_low[i])).astype(int)
        np.testing.assert_array_equal(low_decisions, decisions)
        assert float(res.threshold_low[i]) <= float(res.threshold[i]) < float(res.threshold_high[i])
        # The check can fail: with these tied, overlapping scores most thresholds fall short of the best.
        _, curve = _numpy_curve(labels, s, metric, beta)
        assert np.mean(curve < best - 1e-3) > 0.5


@pytest.mark.parametrize("name", ["sst2_gpt2", "pneumoniamnist_resnet50"])
def test_real_scores_match_numpy_brute_force(name):
    labels, scores, score_type = load_dataset(name)
    s = _log_odds(scores, score_type)
    for metric, beta in METRIC_CASES:
        res = optimal_metric_threshold(labels, scores, metric=metric, beta=beta, score_type=score_type)
        _, curve = _numpy_curve(labels, s, metric, beta)
        assert float(res.metric_value) == pytest.approx(curve.max(), abs=1e-6)
        decisions = (s > float(res.threshold)).astype(int)
        assert _sklearn_metric(labels, decisions, metric, beta) == pytest.approx(curve.max(), abs=1e-6)
        np.testing.assert_array_equal(np.asarray(res.counts), confusion_matrix(labels, decisions))


# --------------------------------------------------------------------- the implied cost

@pytest.mark.parametrize("name,priors", [("sst2_gpt2", None), ("pneumoniamnist_resnet50", None),
                                         ("pneumoniamnist_resnet50", (0.3, 0.7)), ("llr", None), ("llr", (0.9, 0.1))])
def test_implied_costs_give_the_same_bayes_decisions(name, priors):
    """Bayes decisions (numpy, argmin of expected cost) with [[0, 1], [r, 0]] are the metric's decisions."""
    if name == "llr":
        rng = np.random.default_rng(3)
        labels = (rng.random(400) < 0.25).astype(int)
        scores, score_type = rng.normal(size=400) * 1.5 + 2.0 * labels - 1.0, "llr"
    else:
        labels, scores, score_type = load_dataset(name)
    s = _log_odds(scores, score_type)
    p = np.bincount(labels) / labels.size if priors is None else np.asarray(priors)
    for metric, beta in METRIC_CASES:
        res = optimal_metric_threshold(labels, scores, metric=metric, beta=beta, score_type=score_type,
                                       priors=priors)
        r = float(res.implied_cost_ratio)
        costs = np.array([[0.0, 1.0], [r, 0.0]])
        p1 = _posterior_class1(s, score_type, p)
        bayes = np.argmin(np.stack([1.0 - p1, p1], -1) @ costs, axis=-1)  # Ferrer (2025) eq. 7
        np.testing.assert_array_equal(bayes, (s > float(res.threshold)).astype(int))
        # theta and the NEC of those decisions under the implied costs (Ferrer 2022b, eqs. 8-9), by hand.
        assert float(res.effective_prior_log_odds) == pytest.approx(np.log(p[1] * r / p[0]), abs=1e-5)
        (tn, fp), (fn, tp) = confusion_matrix(labels, bayes)
        ec = p[0] * fp / (tn + fp) + p[1] * r * fn / (fn + tp)
        assert float(res.implied_nec) == pytest.approx(ec / min(p[0], p[1] * r), rel=1e-5)
        if score_type != "llr":
            # For posteriors the ratio is the seed's c_21 = exp(-t_o) whatever the evaluation priors.
            assert r == pytest.approx(np.exp(-float(res.threshold)), rel=1e-6)


def _best_cut(labels, z, metric):
    """The metric's best threshold on ``z`` by brute force (numpy / scikit-learn): the midpoint of the best gap."""
    cuts = _all_thresholds(z)
    values = [_sklearn_metric(labels, (z > t).astype(int), metric, 1.0) for t in cuts]
    return cuts[int(np.argmax(values))]


# Issue 31 item 5: the raw cut's "a miss costs 0.273 false alarms" on SST-2 is 1.41 once the scores are calibrated
# (an in-sample Platt fit of the same cut); PneumoniaMNIST's Youden cut implies r = 0.0026 raw.
# SST-2 (about 9 s) in the slow lane; PneumoniaMNIST keeps the check in the default one.
@pytest.mark.parametrize("name,metric", [pytest.param("sst2_gpt2", "f1", marks=pytest.mark.slow),
                                         ("pneumoniamnist_resnet50", "youden")])
def test_implied_cost_ratio_after_calibration_is_platt_scalings(name, metric):
    labels, scores, score_type = load_dataset(name)
    z = _log_odds(scores, score_type).astype(np.float64)
    lr = LogisticRegression(penalty=None, tol=1e-10, max_iter=10_000).fit(z[:, None], labels)  # Platt, in-sample
    t_raw = _best_cut(labels, z, metric)
    # The Bayes threshold of r on calibrated posteriors: decide 1 iff a z + b > log(1 / r), so at the raw cut
    # r = exp(-(a t + b)).  A monotone map keeps the decisions; an affine one maps the midpoint to the midpoint.
    r_ref = np.exp(-(lr.coef_[0, 0] * t_raw + lr.intercept_[0]))
    res = calibrated_metric_threshold(labels, scores, protocol="train_on_test", metric=metric, score_type=score_type)
    assert float(res.implied_cost_ratio) == pytest.approx(r_ref, rel=2e-3)
    raw = optimal_metric_threshold(labels, scores, metric=metric, score_type=score_type)
    assert float(raw.implied_cost_ratio) == pytest.approx(np.exp(-t_raw), rel=1e-5)
    assert abs(np.log(r_ref) + t_raw) > 1.0  # raw and calibrated differ by more than e: the test tells them apart


def _cross_validated_platt_ratio(labels, z, key, metric):
    """exp(-t) of the metric's best cut on scores calibrated fold by fold by scikit-learn's logistic regression."""
    folds = calibration.stratified_folds(key, labels, 5)  # the folds the protocol draws (same key)
    z_cal = np.empty_like(z)
    for f in range(5):  # each fold calibrated by a logistic regression fitted on the others
        lr = LogisticRegression(penalty=None, tol=1e-10, max_iter=10_000).fit(z[folds != f, None], labels[folds != f])
        z_cal[folds == f] = lr.coef_[0, 0] * z[folds == f] + lr.intercept_[0]
    return np.exp(-_best_cut(labels, z_cal, metric))


# Slow lane (about 10 s); the uncalibrated and calibrated implied cost ratios stay in the default lane.
@pytest.mark.slow
def test_cross_validated_implied_cost_ratio_against_fold_by_fold_logistic_regression(tmp_path, monkeypatch, capsys):
    labels, scores, score_type = load_dataset("sst2_gpt2")
    z = _log_odds(scores, score_type).astype(np.float64)
    key = jax.random.key(0)
    res = calibrated_metric_threshold(labels, scores, protocol=calibration.CrossValidation(key, 5), metric="f1",
                                      score_type=score_type)
    r_ref = _cross_validated_platt_ratio(labels, z, key, "f1")
    assert float(res.implied_cost_ratio) == pytest.approx(r_ref, rel=5e-3)
    # The command line gives it beside the raw ratio (--seed 0: the same key).
    np.save(tmp_path / "s.npy", scores), np.save(tmp_path / "y.npy", labels)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["metrics", "--scores", "s.npy", "--labels", "y.npy", "--metric-thresholds", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["metric_thresholds"]["s"]["f1"]
    assert row["implied_cost_ratio"] == pytest.approx(np.exp(-_best_cut(labels, z, "f1")), rel=1e-5)
    assert row["calibrated"]["implied_cost_ratio"] == pytest.approx(r_ref, rel=5e-3)


def test_command_line_says_the_implied_cost_needs_calibrated_scores(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(0)
    labels = np.r_[np.zeros(42, int), np.ones(1, int)]  # one sample of class 1: a fold trains without it
    np.save(tmp_path / "y.npy", labels)
    np.save(tmp_path / "s.npy", np.log(np.stack([1 - (p := rng.uniform(0.1, 0.9, 43)), p], 1)))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["metrics", "--scores", "s.npy", "--labels", "y.npy", "--metric-thresholds"]) == 0
    out = capsys.readouterr().out
    assert "holds only if the scores are calibrated" in out and "Ferrer (2025)" not in out
    assert "false alarms if these scores are calibrated; not calibrated: class 1 has no samples" in out


def test_calibrated_scores_metric_threshold_minimizes_the_implied_ec():
    """With calibrated posteriors the Bayes threshold of the implied costs is also the empirical EC minimum.

    (Up to sampling error: the EC at the metric's threshold is within 1% of the least EC over all cuts,
    computed in numpy; for the miscalibrated GPT-2 scores it is not, and the implication holds for Bayes
    decisions only, see the test above.)
    """
    labels, scores = _seed001_dataset(0.2)
    s = _log_odds(scores, "log_posteriors").astype(np.float64)
    order = np.argsort(s)
    miss = np.concatenate([[0], np.cumsum(labels[order] == 1)]) / 20000  # cut k: k lowest decided 0
    fa = 1.0 - np.concatenate([[0], np.cumsum(labels[order] == 0)]) / 80000
    for metric in ("f1", "mcc", "youden"):
        res = optimal_metric_threshold(labels, scores, metric=metric)
        ec = 0.8 * fa + 0.2 * float(res.implied_cost_ratio) * miss
        at_threshold = ec[np.searchsorted(s[order], float(res.threshold), side="right")]
        assert at_threshold <= 1.01 * ec.min()
    labels, scores, _ = load_dataset("sst2_gpt2")
    res = optimal_metric_threshold(labels, scores, metric="f1")
    s = _log_odds(scores, "log_posteriors")
    p = np.bincount(labels) / labels.size
    r = float(res.implied_cost_ratio)
    thresholds = np.append(_all_thresholds(s), float(res.threshold))
    pos, neg = np.sort(s[labels == 1]), np.sort(s[labels == 0])
    ec = (p[0] * (1.0 - np.searchsorted(neg, thresholds, side="right") / neg.size)
          + p[1] * r * np.searchsorted(pos, thresholds, side="right") / pos.size)
    assert ec[-1] > 1.3 * ec.min()


# ------------------------------------------------------------------------ Ferrer (2025) Figs. 1-2

def _grid_f1_threshold(labels, s):
    """The seed notebook's search: F1 on np.arange(-11, 8.01, 0.1), first argmax."""
    thrs = np.arange(-11, 8.01, 0.1)
    pos, neg = np.sort(s[labels == 1]), np.sort(s[labels == 0])
    tp = pos.size - np.searchsorted(pos, thrs, side="right")
    fp = neg.size - np.searchsorted(neg, thrs, side="right")
    f1 = 2 * tp / (2 * tp + (pos.size - tp) + fp)
    return thrs[np.argmax(f1)], f1.max(), dict(zip(np.round(thrs, 2), f1))


def test_seed001_figures_1_2_implied_costs_depend_on_the_scores():
    """Ferrer (2025) §4.1: F1's threshold t_o = -0.60 is NEC's Bayes threshold for c_21 = e^0.6 = 1.8, and 1.0 on
    the easier data; MCC's implied cost moves with the data too; Youden's J implies the balanced error.
    """
    found = {}
    for variance, seed_threshold in ((0.2, -0.60), (0.06, 0.00)):
        labels, scores = _seed001_dataset(variance)
        s = _log_odds(scores, "log_posteriors")
        grid_t, grid_best, grid_f1 = _grid_f1_threshold(labels, s)
        assert round(float(grid_t), 2) == seed_threshold  # the seed's printed output: the data are the seed's
        f1 = optimal_metric_threshold(labels, scores, metric="f1")
        # The exact search is never worse than the grid, and the grid's choice is within 1e-3 of the optimum.
        assert float(f1.metric_value) >= grid_best - 1e-6
        assert grid_f1[seed_threshold] >= float(f1.metric_value) - 1e-3
        found[variance] = {m: optimal_metric_threshold(labels, scores, metric=m) for m in ("mcc", "youden")}
        found[variance]["f1"] = f1
        # Population optimum of F1 from the Gaussian model (scipy), against the sample's: within ~4 sampling
        # standard deviations (0.08 in t for variance 0.2, 0.12 for 0.06, measured over 30 seeds).
        t = np.linspace(-4, 4, 80001)
        sd = np.sqrt(variance)
        x_t = 0.5 + variance * (t - np.log(0.2 / 0.8))  # s > t  <=>  x > x_t
        tp, fp = 0.2 * norm.sf(x_t, 1, sd), 0.8 * norm.sf(x_t, 0, sd)
        t_population = t[np.argmax(2 * tp / (2 * tp + (0.2 - tp) + fp))]
        assert abs(float(f1.threshold) - t_population) < (0.3 if variance == 0.2 else 0.5)

    hard, easy = found[0.2], found[0.06]
    # Harder data: the seed's c_21 = 1.8 (1.82 = e^0.6 on its 0.1 grid; the exact optimum sits at -0.63).
    assert abs(float(hard["f1"].threshold) - (-0.60)) < 0.05
    assert float(hard["f1"].implied_cost_ratio) == pytest.approx(1.82, abs=0.1)
    # The implied trade-off moves with the score distribution, for F1 and MCC alike.
    assert float(hard["f1"].implied_cost_ratio) - float(easy["f1"].implied_cost_ratio) > 0.5
    assert float(hard["mcc"].implied_cost_ratio) - float(easy["mcc"].implied_cost_ratio) > 0.2
    # Youden's J = 1 - NEC_b: for calibrated scores its threshold is Bayes for c_21 = P_0 / P_1 = 4, i.e.
    # effective prior log-odds 0 (population value; tolerance ~4 sampling sd = 0.25, from 30 seeds).
    assert abs(float(hard["youden"].effective_prior_log_odds)) < 0.25
    assert float(hard["youden"].implied_cost_ratio) == pytest.approx(4.0, rel=0.3)


# ------------------------------------------------------------ Ferrer (2025) App. C.3: EC <= min(EER, P1, P2)

def _calibrated_gaussian(n0, n1, variance, seed):
    """Labels and exact log-posteriors of the Ferrer (2025) App. D model (means 0 and 1), any sizes."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(0.0, np.sqrt(variance), n0), rng.normal(1.0, np.sqrt(variance), n1)])
    llr = (x - 0.5) / variance  # log N(x; 1, v) - log N(x; 0, v)
    lp1 = -np.logaddexp(0.0, -(llr + np.log(n1 / n0)))
    return np.repeat([0, 1], [n0, n1]), np.stack([np.log(-np.expm1(lp1)), lp1], -1)


@pytest.mark.parametrize("name", ["sst2_gpt2", "pneumoniamnist_resnet50", "calibrated_gaussian"])
def test_error_rate_at_best_threshold_is_bounded_by_eer_and_priors(name):
    if name == "calibrated_gaussian":
        # As many samples as sst2_gpt2 (1821), so the EER and threshold programs compiled for it are reused.
        labels, scores = _calibrated_gaussian(1457, 364, 0.2, seed=2)
    else:
        labels, scores, _ = load_dataset(name)
    s = _log_odds(scores, "log_posteriors")
    p = np.bincount(labels) / labels.size
    eer_np = _rocch_eer(labels, s)
    assert float(eer(labels, scores)) == pytest.approx(eer_np, abs=2e-6)
    bound = min(eer_np, p[0], p[1])
    # EC of the 0-1 costs at the best threshold (the optimistic EC), and its NEC (Ferrer 2025, eq. 4).
    ec_best = float(optimal_threshold_expected_cost(labels, scores)[0])
    assert ec_best <= bound + 1e-6
    nec_best = float(optimal_threshold_expected_cost(labels, scores, normalize=True)[0])
    assert nec_best <= min(eer_np / min(p), 1.0) + 1e-5
    # With equal priors the bound reads (1 - max J) / 2 <= EER: the least balanced error is Youden's.
    j = float(optimal_metric_threshold(labels, scores, metric="youden").metric_value)
    assert (1.0 - j) / 2 <= eer_np + 1e-6
    # Bayes decisions (0-1 costs: class 1 iff P(1|x) > P(0|x), i.e. s > 0) obey the bound only when the
    # scores are calibrated (Ferrer (2025): "If calibration is not perfect, this EC can grow without bound").
    ec_bayes = p[0] * np.mean(s[labels == 0] > 0) + p[1] * np.mean(s[labels == 1] <= 0)
    if name == "calibrated_gaussian":
        assert ec_bayes <= bound
    if name == "sst2_gpt2":
        assert ec_bayes > bound + 0.1


# ------------------------------------------------------------------ batches, jit, vmap

def test_batches_jit_and_vmap():
    labels, scores = _small_systems()
    eager = optimal_metric_threshold(labels, scores, metric="mcc")
    # One compiled program checks both: vmap over systems (each with its labels), inside jit.
    mapped = jax.jit(jax.vmap(lambda lab, sc: optimal_metric_threshold(lab, sc, metric="mcc")))
    stacked = jnp.asarray(np.stack([labels] * 3))
    for a, b in zip(eager, mapped(stacked, jnp.asarray(scores))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # Under jit an invalid label cannot raise: that system's results are NaN and its counts -1, the others stand.
    bad = mapped(stacked.at[1, 0].set(2), jnp.asarray(scores))
    assert np.isnan(float(bad.threshold[1])) and np.all(np.asarray(bad.counts[1]) == -1)
    np.testing.assert_array_equal(np.asarray(bad.counts)[[0, 2]], np.asarray(eager.counts)[[0, 2]])
    # Labels with their own batch axis broadcast against one system's scores (here LLRs, shape (N,)).
    s = _log_odds(scores[0], "log_posteriors")
    several = np.stack([labels, labels[::-1], np.random.default_rng(1).permutation(labels)])
    res = optimal_metric_threshold(several, s, metric="youden", score_type="llr")
    assert res.metric_value.shape == (3,) and res.counts.shape == (3, 2, 2)
    for i in range(3):
        best = _sklearn_brute_force(several[i], s, "youden", 1.0)
        assert float(res.metric_value[i]) == pytest.approx(best, abs=1e-6)


# -------------------------------------------------------------------------- bad inputs

@pytest.mark.parametrize("kwargs,labels_change,argument", [
    ({"metric": "auc"}, None, "metric"),
    ({"metric": "f_beta", "beta": 0.0}, None, "beta"),
    ({"metric": "f_beta", "beta": -1.0}, None, "beta"),
    ({"metric": "f_beta", "beta": float("nan")}, None, "beta"),
    ({"metric": "mcc", "beta": 2.0}, None, "beta"),
    ({"score_type": "scores"}, None, "score_type"),
    ({"priors": (1.0, 0.0)}, None, "priors"),
    ({"priors": (0.3, 0.3)}, None, "priors"),
    ({}, "three_classes", "labels"),
    ({}, "one_class", "labels"),
    ({}, "short", "labels"),
])
def test_bad_inputs_name_the_argument(kwargs, labels_change, argument):
    labels, scores = _small_systems(num_systems=1)
    labels = {None: labels, "three_classes": np.where(np.arange(labels.size) == 0, 2, labels),
              "one_class": np.zeros_like(labels), "short": labels[:-1]}[labels_change]
    with pytest.raises(InputError, match=f"`{argument}`"):
        optimal_metric_threshold(labels, scores, **kwargs)


def test_bad_scores_name_the_argument():
    labels, scores = _small_systems(num_systems=1)
    three = np.log(np.full((labels.size, 3), 1 / 3))
    for bad in (three, np.where(np.arange(labels.size)[None, :, None] == 0, np.nan, scores)):
        with pytest.raises(InputError, match="`scores`"):
            optimal_metric_threshold(labels, bad)
