"""Proper scoring rules, discrimination metrics, ECE and Bayes-risk curves (seed 002 §4).

References, never ecjax itself: ``psrcal`` (LogLoss, Brier, ECE, ECEbin, in
float64), scikit-learn (roc_curve, roc_auc_score), scipy (mannwhitneyu),
``llreval`` (Brümmer's PAV/ROCCH: EER, minimum and actual Bayes error rate),
closed forms, and brute-force numpy searches written here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import expit, log_softmax, logsumexp
from scipy.stats import mannwhitneyu
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

import jax
import jax.numpy as jnp

from ecjax import InputError
from ecjax import scores as S
from psrcal import losses as psr_losses
from llreval.bayes_error_rate import fast_Bayes_error_rate
from llreval.pav_rocch import PAV, ROCCH

from conftest import DATASETS, load_dataset

BINARY = ["sst2_gpt2", "sst2_gpt2_4shot", "pneumoniamnist_resnet50"]


def _logpost64(scores, score_type):
    s = np.asarray(scores, np.float64)
    return log_softmax(s, axis=1) if score_type == "logits" else s - logsumexp(s, 1, keepdims=True)


def _psrcal(fn, log_post, labels, **kw):
    return float(fn(torch.tensor(log_post), torch.tensor(labels.astype(np.int64)), **kw))


def _gaussian_binary(rng, n=2000, sep=1.5, p1=0.3):
    y = (rng.uniform(size=n) < p1).astype(np.int64)
    llr = rng.normal(0.0, 1.0, n) + sep * (2 * y - 1)
    return y, llr


# ------------------------------------------------------------- PSRs vs psrcal

@pytest.mark.parametrize("name", sorted(DATASETS))
def test_cross_entropy_and_brier_match_psrcal(name):
    labels, scores, score_type = load_dataset(name)
    lp = _logpost64(scores, score_type)
    k = lp.shape[1]
    skewed = np.linspace(1.0, 2.0, k)
    for priors in (None, np.full(k, 1.0 / k), skewed / skewed.sum()):
        ptorch = None if priors is None else torch.tensor(priors)
        for norm in (False, True):
            ref_xe = _psrcal(psr_losses.LogLoss, lp, labels, norm=norm, priors=ptorch)
            ref_br = _psrcal(psr_losses.Brier, lp, labels, norm=norm, priors=ptorch)
            xe = float(S.cross_entropy(labels, scores, score_type=score_type, priors=priors, normalize=norm))
            br = float(S.brier(labels, scores, score_type=score_type, priors=priors, normalize=norm))
            np.testing.assert_allclose(xe, ref_xe, rtol=1e-6, err_msg=f"XE {name} priors={priors} norm={norm}")
            np.testing.assert_allclose(br, ref_br, rtol=1e-6, err_msg=f"Brier {name} priors={priors} norm={norm}")


def test_cross_entropy_zero_true_class_posterior_is_inf_not_nan():
    with np.errstate(divide="ignore"):
        lp = np.log(np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]))  # -inf entries
    assert float(S.cross_entropy([1, 0, 1], lp)) == np.inf
    # -inf only on wrong classes: finite, equal to the closed form.
    np.testing.assert_allclose(float(S.cross_entropy([0, 0, 1], lp)), np.log(2) / 3, rtol=1e-6)
    # A class with zero deployment prior contributes nothing, even with a -inf posterior.
    assert float(S.cross_entropy([1, 0, 1], lp, priors=[1.0, 0.0])) == pytest.approx(np.log(2), rel=1e-6)
    # Brier stays bounded: the sample with posterior 0 for its class costs (1/K)(1 + 1) = 1.
    np.testing.assert_allclose(float(S.brier([1, 0, 1], lp)), (1.0 + 0.25 + 0.0) / 3, rtol=1e-6)


def test_cross_entropy_of_huge_llrs_is_exact():
    llr = np.array([1e4, -1e4, 1e4, -1e4, 3.0])
    labels = np.array([1, 0, 0, 1, 1])
    priors = np.array([0.7, 0.3])
    logit = llr + np.log(priors[1] / priors[0])
    # -log P(y|x) in float64 with logaddexp: log(1 + exp(-logit)) for y = 1.
    per = np.where(labels == 1, np.logaddexp(0, -logit), np.logaddexp(0, logit))
    n_i = np.bincount(labels)
    ref = np.sum(priors[labels] / n_i[labels] * per)
    xe = float(S.cross_entropy(labels, llr, priors=priors, score_type="llr"))
    assert np.isfinite(xe)
    np.testing.assert_allclose(xe, ref, rtol=1e-6)
    br = float(S.brier(labels, llr, priors=priors, score_type="llr"))
    p1 = expit(logit)
    np.testing.assert_allclose(br, np.sum(priors[labels] / n_i[labels] * (p1 - labels) ** 2), rtol=1e-6)


def test_naive_system_normalizes_to_one():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 500)
    priors = np.array([0.1, 0.2, 0.3, 0.4])
    naive = np.tile(np.log(priors), (500, 1))
    # The system that outputs the priors has normalized XE and Brier exactly 1 (seed 002 §4.1.2-4.1.3),
    # and its unnormalized values are the closed forms -sum P log P and (1/K) sum P (1 - P).
    assert float(S.cross_entropy(labels, naive, priors=priors, normalize=True)) == pytest.approx(1.0, rel=1e-6)
    assert float(S.brier(labels, naive, priors=priors, normalize=True)) == pytest.approx(1.0, rel=1e-6)
    assert float(S.cross_entropy(labels, naive, priors=priors)) == pytest.approx(-np.sum(priors * np.log(priors)), rel=1e-6)
    assert float(S.brier(labels, naive, priors=priors)) == pytest.approx(np.sum(priors * (1 - priors)) / 4, rel=1e-6)


def test_psrs_batch_over_systems_and_jit():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, 300)
    lp = log_softmax(rng.normal(size=(4, 300, 3)), axis=-1)
    batched = np.asarray(S.cross_entropy(labels, lp))
    single = [float(S.cross_entropy(labels, lp[i])) for i in range(4)]
    np.testing.assert_allclose(batched, single, rtol=1e-6)
    jitted = jax.jit(lambda s: S.brier(labels, s))(jnp.asarray(lp[0]))
    np.testing.assert_allclose(float(jitted), float(S.brier(labels, lp[0])), rtol=1e-6)


# ---------------------------------------------------------- ROC, AUC and EER

@pytest.mark.parametrize("name", BINARY)
def test_auc_roc_eer_on_real_scores(name):
    labels, scores, score_type = load_dataset(name)
    lp = _logpost64(scores, score_type)
    s = lp[:, 1] - lp[:, 0]
    np.testing.assert_allclose(float(S.auc(labels, scores, score_type=score_type)), roc_auc_score(labels, s), atol=1e-6)
    fpr, tpr, thr = S.roc_curve(labels, scores, score_type=score_type)
    f2, t2, th2 = sk_roc_curve(labels, s, drop_intermediate=False)
    assert len(fpr) == len(f2)
    np.testing.assert_allclose(np.asarray(fpr), f2, atol=1e-6)
    np.testing.assert_allclose(np.asarray(tpr), t2, atol=1e-6)
    np.testing.assert_allclose(np.asarray(thr)[1:], th2[1:], rtol=1e-5, atol=1e-5)
    ref_eer = ROCCH(PAV(s, labels.astype(np.int64))).EER()
    np.testing.assert_allclose(float(S.eer(labels, scores, score_type=score_type)), ref_eer, atol=1e-6)


def test_auc_with_ties_is_mann_whitney():
    rng = np.random.default_rng(2)
    y, llr = _gaussian_binary(rng, 3000)
    tied = np.round(llr, 1)  # many ties, also across classes
    u = mannwhitneyu(tied[y == 1], tied[y == 0]).statistic
    ref = u / ((y == 1).sum() * (y == 0).sum())
    got = float(S.auc(y, tied, score_type="llr"))
    np.testing.assert_allclose(got, ref, atol=1e-6)
    np.testing.assert_allclose(got, roc_auc_score(y, tied), atol=1e-6)
    # All scores tied: AUC = 1/2.
    assert float(S.auc(y, np.zeros(3000), score_type="llr")) == pytest.approx(0.5)


def _brute_force_hull_eer(s, y):
    """EER on the ROC convex hull: least diagonal crossing over pairs of ROC points."""
    thr = np.concatenate([np.unique(s), [np.inf]])
    miss = np.array([np.mean(s[y == 1] < t) for t in thr])
    fa = np.array([np.mean(s[y == 0] >= t) for t in thr])
    best = 1.0
    for i in range(len(thr)):
        for j in range(len(thr)):
            da, db = miss[i] - fa[i], miss[j] - fa[j]
            if da >= 0 >= db and da != db:
                t = da / (da - db)
                best = min(best, miss[i] + t * (miss[j] - miss[i]))
            elif da == 0:
                best = min(best, miss[i])
    return best


def test_eer_equals_brute_force_convex_hull():
    rng = np.random.default_rng(3)
    for trial in range(3):
        y, llr = _gaussian_binary(rng, 120, sep=0.6 + 0.4 * trial)
        llr = np.round(llr, 1) if trial == 2 else llr  # ties in the last trial
        np.testing.assert_allclose(float(S.eer(y, llr, score_type="llr")), _brute_force_hull_eer(llr, y), atol=1e-6)


def test_specificity_at_sensitivity_matches_brute_force():
    rng = np.random.default_rng(4)
    y, s = _gaussian_binary(rng, 1500)
    for target in (0.5, 0.9, 0.95, 1.0):
        best = None
        for t in np.concatenate([[-np.inf], np.unique(s)]):  # rule: class 1 iff s > t
            se = np.mean(s[y == 1] > t)
            if se >= target:
                sp = np.mean(s[y == 0] <= t)
                best = (sp, se) if best is None or sp > best[0] else best
        op = S.specificity_at_sensitivity(y, s, target, score_type="llr")
        np.testing.assert_allclose([float(op.specificity), float(op.sensitivity)], best, atol=1e-6)
        thr = float(op.threshold)
        assert np.mean(s[y == 1] > thr) == pytest.approx(float(op.sensitivity))


def test_nec_for_target_sensitivity_matches_brute_force():
    rng = np.random.default_rng(5)
    y, s = _gaussian_binary(rng, 800, p1=0.2)
    alphas = np.logspace(-2, 2, 81)
    target = 0.9
    cuts = np.concatenate([[-np.inf], np.unique(s)])
    miss = np.array([np.mean(s[y == 1] <= t) for t in cuts])
    fa = np.array([np.mean(s[y == 0] > t) for t in cuts])
    chosen = None
    for a in alphas:
        nec = (a * fa + miss) / min(a, 1.0)  # seed 002 eq. 8
        k = np.argmin(nec)
        if 1 - miss[k] >= target:
            chosen = (a, 1 - miss[k], 1 - fa[k], nec[k])
    res = S.nec_for_target_sensitivity(y, s, target, alphas=alphas, score_type="llr")
    np.testing.assert_allclose([float(res.alpha), float(res.sensitivity), float(res.specificity), float(res.nec)],
                               chosen, rtol=1e-5)
    # The explicit cost matrix reproduces NEC_alpha with the development priors (seed 002 eq. 7-9).
    p1 = np.mean(y == 0)
    c = np.asarray(res.costs)
    assert c[1, 0] == 1.0 and c[0, 0] == 0.0 == c[1, 1]
    np.testing.assert_allclose(c[0, 1], chosen[0] * (1 - p1) / p1, rtol=1e-5)
    dec = (s > float(res.threshold)).astype(int)
    ec = np.mean(c[y, dec])
    naive = min(c[0, 1] * p1, c[1, 0] * (1 - p1))
    np.testing.assert_allclose(ec / naive, chosen[3], rtol=1e-5)


# ---------------------------------------------------------- Bayes-risk curves

def test_bayes_risk_curve_against_llreval_and_brute_force():
    rng = np.random.default_rng(6)
    y, llr = _gaussian_binary(rng, 1500, p1=0.4)
    llr = 0.7 * llr - 0.4  # miscalibrated on purpose: actual > minimum
    plo = np.linspace(-4, 4, 41)
    curve = S.bayes_risk_curve(y, llr, prior_log_odds=plo, normalize=False)
    ref_act = fast_Bayes_error_rate(llr, y, plo)
    ref_min = ROCCH(PAV(llr, y)).Bayes_error_rate(plo)
    np.testing.assert_allclose(np.asarray(curve.actual), ref_act, atol=1e-6)
    np.testing.assert_allclose(np.asarray(curve.minimum), ref_min, atol=1e-6)
    np.testing.assert_allclose(np.asarray(curve.naive), np.minimum(expit(plo), expit(-plo)), atol=1e-7)
    # Brute-force threshold search for the minimum, normalized.
    cuts = np.concatenate([[-np.inf], np.sort(llr)])
    miss = np.array([np.mean(llr[y == 1] <= t) for t in cuts])
    fa = np.array([np.mean(llr[y == 0] > t) for t in cuts])
    pi = expit(plo)[:, None]
    brute = (pi * miss + (1 - pi) * fa).min(1) / np.minimum(expit(plo), expit(-plo))
    normed = S.bayes_risk_curve(y, llr, prior_log_odds=plo)
    np.testing.assert_allclose(np.asarray(normed.minimum), brute, atol=1e-5)
    assert np.all(np.asarray(normed.actual) >= np.asarray(normed.minimum) - 1e-6)


def test_bayes_risk_curve_agrees_with_core_ec_functions():
    rng = np.random.default_rng(7)
    y, llr = _gaussian_binary(rng, 600, p1=0.5)
    for theta in (-1.5, 0.0, 2.0):
        pi = expit(theta)
        curve = S.bayes_risk_curve(y, llr, prior_log_odds=[theta], normalize=False)
        # Independent numpy Bayes decisions at the Bayes threshold -theta (seed 002 eq. 48).
        dec = llr > -theta
        ref = pi * np.mean(~dec[y == 1]) + (1 - pi) * np.mean(dec[y == 0])
        np.testing.assert_allclose(float(curve.actual[0]), ref, atol=1e-6)
        ec_min, _ = S.optimal_threshold_expected_cost(y, llr, 1 - np.eye(2), priors=[1 - pi, pi], score_type="llr")
        np.testing.assert_allclose(float(curve.minimum[0]), float(ec_min), atol=1e-6)


def test_bayes_risk_curve_from_posteriors_removes_priors():
    rng = np.random.default_rng(8)
    y, llr = _gaussian_binary(rng, 500, p1=0.25)
    p1 = y.mean()
    logit = llr + np.log(p1 / (1 - p1))
    lp = np.stack([-np.logaddexp(0, logit), -np.logaddexp(0, -logit)], 1)
    a = S.bayes_risk_curve(y, lp, score_type="log_posteriors")
    b = S.bayes_risk_curve(y, llr)
    np.testing.assert_allclose(np.asarray(a.actual), np.asarray(b.actual), atol=1e-5)
    np.testing.assert_allclose(np.asarray(a.minimum), np.asarray(b.minimum), atol=1e-5)


# ------------------------------------------------------------------------ ECE

@pytest.mark.parametrize("name", sorted(DATASETS))
def test_ece_matches_psrcal(name):
    labels, scores, score_type = load_dataset(name)
    lp = _logpost64(scores, score_type)
    t = torch.tensor(lp)
    y = torch.tensor(labels.astype(np.int64))
    for m in (10, 15):
        ref_top = float(psr_losses.ECE(t, y, M=m)) / 100  # psrcal returns percentages
        got = float(S.ece(labels, scores, num_bins=m, variant="top_label", score_type=score_type))
        np.testing.assert_allclose(got, ref_top, atol=1e-6)
        if lp.shape[1] == 2:
            ref_bin = float(psr_losses.ECEbin(t, y, M=m)) / 100
            np.testing.assert_allclose(float(S.ece(labels, scores, num_bins=m, score_type=score_type)), ref_bin, atol=1e-6)


def _numpy_equal_mass_ece(conf, hit, m):
    """Independent equal-mass ECE: np.array_split of the sorted confidences, ties kept together."""
    order = np.argsort(conf, kind="stable")
    c, h = conf[order], hit[order]
    upper = np.array([part[-1] if len(part) else -np.inf for part in np.array_split(c, m)])
    upper[-1] = np.inf
    idx = np.searchsorted(upper, c, side="left")
    total = 0.0
    for b in range(m):
        sel = idx == b
        total += abs(np.sum(h[sel]) - np.sum(c[sel]))
    return total / len(c)


def _boundary_slack(conf, hit, m):
    """How far the equal-mass ECE can move when float32 rounding moves samples across bin edges.

    A sample within float32 resolution of an edge of the float64 bins can land
    in either bin (and which one depends on the backend's last bit of exp);
    moving it changes the ECE by at most ``2 |hit - conf| / N``.
    """
    edges = np.array([part[-1] for part in np.array_split(np.sort(conf), m)])[:-1]
    near = np.abs(conf[:, None] - edges[None]) <= 4 * np.finfo(np.float32).eps * np.maximum(conf[:, None], 1e-30)
    return 2 * np.abs(hit - conf)[near.any(1)].sum() / len(conf)


def test_ece_equal_mass_matches_numpy():
    labels, scores, score_type = load_dataset("cifar10_resnet-20")
    lp = _logpost64(scores, score_type)
    conf, hit = np.exp(lp.max(1)), (lp.argmax(1) == labels).astype(float)
    got = float(S.ece(labels, scores, binning="equal_mass", num_bins=15, score_type=score_type))
    np.testing.assert_allclose(got, _numpy_equal_mass_ece(conf, hit, 15), atol=1e-6 + _boundary_slack(conf, hit, 15))
    labels, scores, score_type = load_dataset("sst2_gpt2")
    lp = _logpost64(scores, score_type)
    conf, hit = np.exp(lp[:, 1]), labels.astype(float)
    got = float(S.ece(labels, scores, binning="equal_mass", num_bins=7, score_type=score_type))
    np.testing.assert_allclose(got, _numpy_equal_mass_ece(conf, hit, 7), atol=1e-6 + _boundary_slack(conf, hit, 7))


def test_ece_of_perfectly_binned_scores_is_zero():
    # Scores whose class-1 frequency in each bin equals the posterior: ECE = 0 by eq. 62.
    post = np.repeat([0.2, 0.5, 0.8], 10)
    labels = np.concatenate([[1] * 2 + [0] * 8, [1] * 5 + [0] * 5, [1] * 8 + [0] * 2])
    lp = np.log(np.stack([1 - post, post], 1))
    assert float(S.ece(labels, lp)) == pytest.approx(0.0, abs=1e-6)


# ----------------------------------------------------------------- bad input

def test_bad_inputs_raise_input_error():
    lp = np.log(np.array([[0.3, 0.7], [0.6, 0.4], [0.5, 0.5]]))
    y = np.array([1, 0, 1])
    with pytest.raises(InputError, match="NaN"):
        S.cross_entropy(y, np.where(np.eye(3, 2) > 0, np.nan, lp))
    with pytest.raises(InputError, match=r"\+inf"):
        S.brier(y, np.where(np.eye(3, 2) > 0, np.inf, lp))
    with pytest.raises(InputError, match="logits"):
        S.cross_entropy(y, lp + 1.0)  # rows do not normalize
    with pytest.raises(InputError, match="labels"):
        S.cross_entropy([0, 2, 1], lp)  # label out of range
    with pytest.raises(InputError, match="same number"):
        S.brier([0, 1], lp)
    with pytest.raises(InputError, match="single class|one class"):
        S.cross_entropy([1, 1, 1], lp, normalize=True)
    with pytest.raises(InputError, match="single class"):
        S.auc([1, 1, 1], lp)
    with pytest.raises(InputError, match="single class"):
        S.eer([0, 0, 0], lp)
    with pytest.raises(InputError, match="score_type"):
        S.cross_entropy(y, lp, score_type="probabilities")
    with pytest.raises(InputError, match="binning"):
        S.ece(y, lp, binning="quantile")
    with pytest.raises(InputError, match="variant"):
        S.ece(y, lp, variant="classwise")
    with pytest.raises(InputError, match="K = 2"):
        S.auc([0, 1, 2], np.log(np.full((3, 3), 1 / 3)))
    with pytest.raises(InputError, match="priors"):
        S.cross_entropy(y, np.array([0.1, -0.3, 2.0]), score_type="llr")  # LLRs need priors
    with pytest.raises(InputError, match="sensitivity"):
        S.specificity_at_sensitivity(y, lp, 1.5)


def test_auc_one_vs_rest_matches_sklearn_on_cifar10():
    # sklearn ranks class i by P(i|x); log P(i|x) gives the same ranking.  Reference: roc_auc_score, ovr, macro.
    targets, scores, score_type = load_dataset("cifar10_vgg19_bn")
    p = np.exp(log_softmax(scores.astype(np.float64), axis=1))
    ref = roc_auc_score(targets, p, multi_class="ovr", average="macro")
    assert float(S.auc_one_vs_rest(targets, scores, score_type=score_type)) == pytest.approx(ref, abs=1e-6)
    # Two classes: both one-vs-rest terms are the binary AUC.
    y = targets[targets < 2]
    s2 = scores[targets < 2][:, :2]
    assert float(S.auc_one_vs_rest(y, s2, score_type="logits")) == pytest.approx(
        roc_auc_score(y, s2[:, 1] - s2[:, 0]), abs=1e-6)
    # Under jit the same number; a class without samples is refused eagerly and NaN under jit.
    jitted = jax.jit(lambda lab, s: S.auc_one_vs_rest(lab, s, score_type="logits"))
    assert float(jitted(targets, scores)) == pytest.approx(ref, abs=1e-6)
    with pytest.raises(InputError, match="class"):
        S.auc_one_vs_rest(np.where(targets == 3, 4, targets), scores, score_type="logits")
    assert np.isnan(float(jitted(np.where(targets == 3, 4, targets), scores)))
