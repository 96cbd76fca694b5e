"""ROC, AUC, EER and operating points (``ecjax._src.scores.roc``; Ferrer (2022b) §4).

References, never ecjax itself: scikit-learn (roc_curve, roc_auc_score), scipy (mannwhitneyu), ``llreval``
(Brümmer's PAV/ROCCH: EER), and brute-force numpy searches written here.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_softmax
from scipy.stats import mannwhitneyu
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

import jax

from ecjax import InputError
from ecjax import scores as S
from llreval.pav_rocch import PAV, ROCCH

from conftest import _gaussian_binary, _logpost64, load_dataset

BINARY = ["sst2_gpt2", "sst2_gpt2_4shot", "pneumoniamnist_resnet50"]


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
        nec = (a * fa + miss) / min(a, 1.0)  # Ferrer (2022b) eq. 8
        k = np.argmin(nec)
        if 1 - miss[k] >= target:
            chosen = (a, 1 - miss[k], 1 - fa[k], nec[k])
    res = S.nec_for_target_sensitivity(y, s, target, alphas=alphas, score_type="llr")
    np.testing.assert_allclose([float(res.alpha), float(res.sensitivity), float(res.specificity), float(res.nec)],
                               chosen, rtol=1e-5)
    # The explicit cost matrix reproduces NEC_alpha with the development priors (Ferrer 2022b, eq. 7-9).
    p1 = np.mean(y == 0)
    c = np.asarray(res.costs)
    assert c[1, 0] == 1.0 and c[0, 0] == 0.0 == c[1, 1]
    np.testing.assert_allclose(c[0, 1], chosen[0] * (1 - p1) / p1, rtol=1e-5)
    dec = (s > float(res.threshold)).astype(int)
    ec = np.mean(c[y, dec])
    naive = min(c[0, 1] * p1, c[1, 0] * (1 - p1))
    np.testing.assert_allclose(ec / naive, chosen[3], rtol=1e-5)


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
