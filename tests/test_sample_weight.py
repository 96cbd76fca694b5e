"""``sample_weight`` (scikit-learn's name and meaning) on confusion matrices and score metrics.

References: scikit-learn's weighted ``confusion_matrix``, ``log_loss``,
``brier_score_loss``, ``roc_auc_score`` and ``roc_curve``; ``expected_cost``'s
``average_cost`` (weighted rates with given priors); short numpy
computations written here.  The defining property, checked for every
function: an integer weight ``k`` gives the same result as ``k`` copies of the
sample (0 copies: the sample removed).
"""

from __future__ import annotations

import numpy as np
import pytest
from expected_cost import ec as ec_pkg
from sklearn import metrics as skm

import jax
import jax.numpy as jnp

from ecjax.confusion import confusion_matrix
from ecjax.inputs import InputError
from ecjax.scores import (
    auc,
    bayes_expected_cost,
    brier,
    cross_entropy,
    ece,
    eer,
    expected_cost_vs_threshold,
    optimal_threshold_expected_cost,
    roc_curve,
)

from conftest import load_dataset


def _binary_data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    # Scores rounded to 0.25 so that ties (and their handling under weights) occur.
    llr = np.round((rng.normal(size=n) + 1.5 * y - 0.75) * 4) / 4
    p1 = 1.0 / (1.0 + np.exp(-llr))
    return y, np.log(np.stack([1.0 - p1, p1], 1)), p1, llr


def _multiclass_data(n=90, k=3, seed=1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k)) + 2.0 * np.eye(k)[y]
    lp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    return y, lp


def _integer_weights(n, seed=2):
    w = np.random.default_rng(seed).integers(0, 4, n)  # 0 removes the sample, 3 triples it
    w[:2] = [0, 3]
    return w


def _repeat(w, *arrays):
    idx = np.repeat(np.arange(len(w)), w)
    return [np.asarray(a)[idx] for a in arrays]


# ------------------------------------------------------------------ confusion

def test_confusion_matrix_matches_sklearn_and_repetition():
    rng = np.random.default_rng(3)
    y, d = rng.integers(0, 3, 50), rng.integers(0, 4, 50)
    w = rng.uniform(0, 2, 50)
    got = np.asarray(confusion_matrix(y, d, num_decisions=4, sample_weight=w))
    ref = skm.confusion_matrix(y, d, labels=[0, 1, 2, 3], sample_weight=w)[:3]
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    wi = _integer_weights(50)
    yr, dr = _repeat(wi, y, d)
    np.testing.assert_array_equal(np.asarray(confusion_matrix(y, d, num_decisions=4, sample_weight=wi)),
                                  np.asarray(confusion_matrix(yr, dr, num_classes=3, num_decisions=4)))
    assert confusion_matrix(y, d).dtype == jnp.int32  # the unweighted path still counts exactly


def test_confusion_matrix_weight_errors_name_the_argument():
    with pytest.raises(InputError, match="sample_weight.*non-negative"):
        confusion_matrix([0, 1, 1], [0, 1, 1], sample_weight=[1.0, -1.0, 1.0])
    with pytest.raises(InputError, match="sample_weight.*NaN"):
        confusion_matrix([0, 1, 1], [0, 1, 1], sample_weight=[1.0, np.nan, 1.0])
    with pytest.raises(InputError, match="sample_weight"):
        confusion_matrix([0, 1, 1], [0, 1, 1], sample_weight=[1.0, 1.0])


# ------------------------------------------------------- against scikit-learn

def test_psr_and_auc_match_sklearn_on_real_scores():
    y, lp, _ = load_dataset("pneumoniamnist_resnet50")
    w = np.random.default_rng(4).uniform(0, 3, len(y))
    w[::7] = 0.0
    p = np.exp(lp - np.logaddexp(lp[:, :1], lp[:, 1:]))  # normalized in float64 for scikit-learn
    np.testing.assert_allclose(float(cross_entropy(y, lp, sample_weight=w)),
                               skm.log_loss(y, p, sample_weight=w), rtol=1e-5)
    np.testing.assert_allclose(float(brier(y, lp, sample_weight=w)),
                               skm.brier_score_loss(y, p[:, 1], sample_weight=w), rtol=1e-5)
    s = lp[:, 1] - lp[:, 0]
    np.testing.assert_allclose(float(auc(y, lp, sample_weight=w)), skm.roc_auc_score(y, s, sample_weight=w),
                               rtol=1e-6)


def test_roc_curve_matches_sklearn_with_ties_and_zero_weights():
    y, lp, _, llr = _binary_data()
    w = np.random.default_rng(5).uniform(0, 2, len(y))
    w[:5] = 0.0  # scikit-learn leaves zero-weight samples out of its curve; so does ecjax
    fpr, tpr, thr = roc_curve(y, llr, score_type="llr", sample_weight=w)
    f_ref, t_ref, thr_ref = skm.roc_curve(y, llr, sample_weight=w, drop_intermediate=False)
    np.testing.assert_array_equal(np.asarray(thr), thr_ref)
    np.testing.assert_allclose(np.asarray(fpr), f_ref, atol=1e-6)
    np.testing.assert_allclose(np.asarray(tpr), t_ref, atol=1e-6)


def test_eer_matches_weighted_rocch_reference():
    y, lp, _, llr = _binary_data(seed=6)
    w = np.random.default_rng(6).uniform(0, 2, len(y))
    fpr, tpr, _ = skm.roc_curve(y, llr, sample_weight=w, drop_intermediate=False)
    # EER = max_pi min_cut [pi miss + (1 - pi) fa]: concave in pi, so a fine grid brackets it from below.
    pi = np.linspace(0, 1, 20001)[:, None]
    ref = np.max(np.min(pi * (1 - tpr) + (1 - pi) * fpr, axis=1))
    got = float(eer(y, llr, score_type="llr", sample_weight=w))
    assert ref - 1e-6 <= got <= ref + 1e-4
    assert abs(got - float(eer(y, llr, score_type="llr"))) > 1e-3  # the weights matter here


# ------------------------------------------------------ against expected_cost

def test_bayes_expected_cost_matches_expected_cost_package_with_given_priors():
    y, lp = _multiclass_data()
    w = np.random.default_rng(7).uniform(0, 2, len(y))
    costs = np.array([[0, 1, 4], [2, 0, 1], [1, 3, 0.0]])
    priors = np.array([0.5, 0.2, 0.3])
    d = np.argmin(np.exp(lp) @ costs, 1)
    # expected_cost multiplies 1-D priors along the wrong axis: give them as a column.
    ref = ec_pkg.average_cost(y, d, ec_pkg.CostMatrix(costs), priors=priors[:, None], sample_weight=w)
    got = bayes_expected_cost(y, lp, costs, priors=priors, sample_weight=w)
    np.testing.assert_allclose(float(got), ref, rtol=1e-6)
    # With data priors expected_cost keeps the unweighted class frequencies (a known difference): the
    # scikit-learn meaning used here is the weighted mean cost, sum_n u_n c(y_n, d_n) / sum_n u_n.
    np.testing.assert_allclose(float(bayes_expected_cost(y, lp, costs, sample_weight=w)),
                               np.sum(w * costs[y, d]) / np.sum(w), rtol=1e-6)


def test_optimal_threshold_matches_exhaustive_numpy_search():
    y, lp, _, llr = _binary_data(seed=8)
    w = np.random.default_rng(8).uniform(0, 2, len(y))
    costs = np.array([[0, 1.0], [2.5, 0]])
    priors = np.array([0.4, 0.6])
    u = np.unique(llr)
    candidates = np.concatenate([[-np.inf], (u[1:] + u[:-1]) / 2, [np.inf]])
    best = np.inf
    for t in candidates:
        d = (llr > t).astype(int)
        r = np.array([[np.sum(w * (y == i) * (d == j)) / np.sum(w * (y == i)) for j in (0, 1)] for i in (0, 1)])
        best = min(best, np.sum(priors[:, None] * r * costs))
    got, _ = optimal_threshold_expected_cost(y, llr, costs, score_type="llr", priors=priors, sample_weight=w)
    np.testing.assert_allclose(float(got), best, rtol=1e-5)


def test_ece_matches_numpy_weighted_binning():
    y, lp = _multiclass_data(seed=9)
    w = np.random.default_rng(9).uniform(0, 2, len(y))
    conf, hit = np.exp(lp.max(1)), (lp.argmax(1) == y).astype(float)
    b = np.clip(np.searchsorted(np.linspace(0, 1, 11), conf, side="left") - 1, 0, 9)
    ref = np.sum(np.abs(np.bincount(b, weights=w * (hit - conf), minlength=10))) / w.sum()
    np.testing.assert_allclose(float(ece(y, lp, num_bins=10, sample_weight=w)), ref, rtol=1e-5)


# ------------------------------------------------- integer weight = repetition

@pytest.mark.parametrize("priors", [None, [0.3, 0.7]])
def test_binary_functions_equal_repeated_samples(priors):
    y, lp, _, llr = _binary_data(seed=10)
    w = _integer_weights(len(y))
    yr, lpr, llrr = _repeat(w, y, lp, llr)
    costs = np.array([[0, 1.0], [3.0, 0]])

    def same(a, b, rtol=2e-6):
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol, atol=1e-7)

    # Normalized values check the weighted loss and the weighted data priors (in the naive loss) at once.
    for f in (cross_entropy, brier):
        same(f(y, lp, priors=priors, normalize=True, sample_weight=w), f(yr, lpr, priors=priors, normalize=True))
    same(bayes_expected_cost(y, lp, costs, priors=priors, normalize=True, sample_weight=w),
         bayes_expected_cost(yr, lpr, costs, priors=priors, normalize=True))
    for got, ref in zip(expected_cost_vs_threshold(y, lp, costs, priors=priors, sample_weight=w),
                        expected_cost_vs_threshold(yr, lpr, costs, priors=priors)):
        same(got, ref)
    for got, ref in zip(optimal_threshold_expected_cost(y, lp, costs, priors=priors, sample_weight=w),
                        optimal_threshold_expected_cost(yr, lpr, costs, priors=priors)):
        same(got, ref)
    if priors is None:
        same(auc(y, lp, sample_weight=w), auc(yr, lpr))
        same(eer(y, llr, score_type="llr", sample_weight=w), eer(yr, llrr, score_type="llr"))
        same(ece(y, lp, sample_weight=w), ece(yr, lpr))
        for got, ref in zip(roc_curve(y, lp, sample_weight=w), roc_curve(yr, lpr)):
            same(got, ref)


def test_multiclass_and_batched_functions_equal_repeated_samples():
    y, lp = _multiclass_data(seed=11)
    w = _integer_weights(len(y), seed=11)
    yr, lpr = _repeat(w, y, lp)
    systems = np.stack([lp, lp[:, ::-1]])  # (S, N, K)
    costs = np.stack([1 - np.eye(3), np.array([[0, 1, 4], [2, 0, 1], [1, 3, 0.0]])])  # (B, K, K)
    priors = [0.2, 0.5, 0.3]
    np.testing.assert_allclose(bayes_expected_cost(y, systems, costs, priors=priors, sample_weight=w),
                               bayes_expected_cost(yr, systems[:, np.repeat(np.arange(len(w)), w)], costs,
                                                   priors=priors), rtol=2e-6)
    np.testing.assert_allclose(cross_entropy(y, systems, sample_weight=w),
                               cross_entropy(yr, systems[:, np.repeat(np.arange(len(w)), w)]), rtol=2e-6)
    np.testing.assert_allclose(ece(y, lp, sample_weight=w), ece(yr, lpr), rtol=2e-6)


# ------------------------------------------------------------- jit and vmap

def test_weights_under_jit_and_vmap():
    y, lp, p1, _ = _binary_data(seed=13)
    ws = np.random.default_rng(13).uniform(0, 2, (3, len(y)))
    xe = jax.jit(jax.vmap(lambda w: cross_entropy(y, lp, sample_weight=w)))(ws)
    a = jax.jit(jax.vmap(lambda w: auc(y, lp, sample_weight=w)))(ws)
    for i, w in enumerate(ws):
        np.testing.assert_allclose(float(xe[i]), skm.log_loss(y, np.exp(lp), sample_weight=w), rtol=1e-5)
        np.testing.assert_allclose(float(a[i]), skm.roc_auc_score(y, p1, sample_weight=w), rtol=1e-6)
    bad = ws[0].copy()
    bad[0] = -1.0  # invalid weights under jit: NaN (the NaN contract), never a number
    assert np.isnan(float(jax.jit(lambda w: cross_entropy(y, lp, sample_weight=w))(bad)))
    assert np.isnan(float(jax.jit(lambda w: auc(y, lp, sample_weight=w))(bad)))
    assert np.isnan(float(jax.jit(lambda w: ece(y, lp, sample_weight=w))(bad)))


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize("call", [
    lambda y, lp, w: cross_entropy(y, lp, sample_weight=w),
    lambda y, lp, w: brier(y, lp, sample_weight=w),
    lambda y, lp, w: bayes_expected_cost(y, lp, 1 - np.eye(2), sample_weight=w),
    lambda y, lp, w: optimal_threshold_expected_cost(y, lp, sample_weight=w),
    lambda y, lp, w: expected_cost_vs_threshold(y, lp, sample_weight=w),
    lambda y, lp, w: ece(y, lp, sample_weight=w),
    lambda y, lp, w: auc(y, lp, sample_weight=w),
    lambda y, lp, w: roc_curve(y, lp, sample_weight=w),
    lambda y, lp, w: eer(y, lp, sample_weight=w),
])
def test_bad_weights_raise_input_error_naming_sample_weight(call):
    y, lp, _, _ = _binary_data(n=10, seed=14)
    good = np.ones(10)
    for bad in (np.where(np.arange(10) == 3, -1.0, good), np.where(np.arange(10) == 3, np.nan, good),
                good[:9], good[None], np.zeros(10)):
        with pytest.raises(InputError, match="sample_weight"):
            call(y, lp, bad)


def test_zero_weight_class_with_positive_prior_is_refused():
    y, lp, _, _ = _binary_data(n=12, seed=15)
    w = np.where(y == 1, 0.0, 1.0)
    with pytest.raises(InputError, match="sample_weight.*class 1"):
        cross_entropy(y, lp, priors=[0.5, 0.5], sample_weight=w)
    with pytest.raises(InputError, match="sample_weight.*class 1"):
        bayes_expected_cost(y, lp, 1 - np.eye(2), priors=[0.5, 0.5], sample_weight=w)
    with pytest.raises(InputError, match="sample_weight.*class 1"):
        auc(y, lp, sample_weight=w)


# =============================================================================
# The remaining score-based functions, curves and calibration errors: one
# parametrized test of the defining properties over all of them,
# then each against scikit-learn or a short numpy computation.
# =============================================================================

from scipy import special  # noqa: E402

from ecjax._src.scores import calibration_errors as ce  # noqa: E402
from ecjax._src.scores import ranking_curves as curves, roc  # noqa: E402
from ecjax._src.scores.bayes_decisions import decision_curve  # noqa: E402
from ecjax._src.scores.thresholds import optimal_metric_threshold  # noqa: E402
from ecjax.scores import (  # noqa: E402
    auc_one_vs_rest,
    bayes_risk_curve,
    nec_for_target_sensitivity,
    reliability_bins,
    specificity_at_sensitivity,
)


# Each entry: (name, kind, f(labels, scores, sample_weight) -> arrays). kind "binary" gets (N, 2)
# log-posteriors with tied scores, "multiclass" (N, 3) log-posteriors.  The references further down use the
# same data, weights, numbers of bins and thresholds (_case), so that they reuse the programs compiled here.
_WEIGHTED_FUNCTIONS = [
    ("auc_one_vs_rest", "multiclass", lambda y, s, w: auc_one_vs_rest(y, s, sample_weight=w)),
    ("bayes_risk_curve", "binary", lambda y, s, w: bayes_risk_curve(y, s, score_type="log_posteriors",
                                                                     sample_weight=w)),
    ("specificity_at_sensitivity", "binary", lambda y, s, w: specificity_at_sensitivity(y, s, 0.8, sample_weight=w)),
    ("nec_for_target_sensitivity", "binary", lambda y, s, w: nec_for_target_sensitivity(y, s, 0.8, sample_weight=w)),
    # reliability_bands reads reliability_bins: one compiled program for all three.
    ("reliability_bins_and_bands", "binary", lambda y, s, w: (
        reliability_bins(y, s, num_bins=6, sample_weight=w),
        ce.reliability_bands(y, s, num_bins=6, sample_weight=w)[:6],
        ce.reliability_bands(y, s, num_bins=6, interval="hdi", sample_weight=w)[:6])),
    # The three binary curves come from one compiled program.
    ("pr_ap_det_curves", "binary", lambda y, s, w: (curves.precision_recall_curve(y, s, sample_weight=w),
                                                    curves.average_precision(y, s, sample_weight=w),
                                                    curves.det_curve(y, s, sample_weight=w))),
    ("auc_one_vs_one", "multiclass", lambda y, s, w: [roc.auc_one_vs_one(y, s, average=a, sample_weight=w)
                                                      for a in ("macro", "weighted")]),
    ("decision_curve", "binary", lambda y, s, w: decision_curve(y, s, threshold_probabilities=[0.1, 0.4, 0.7],
                                                                sample_weight=w)),
    # One compiled program serves the three metrics.
    ("optimal_metric_threshold", "binary", lambda y, s, w: [optimal_metric_threshold(y, s, metric=m, sample_weight=w)
                                                            for m in ("f1", "mcc", "youden")]),
    # Every calibration error with variant="classwise" and equal-mass bins runs one compiled program (the other
    # variants and binnings against numpy in test_calibration_errors_match_numpy_weighted_bins).
    ("calibration_errors", "multiclass", lambda y, s, w: (
        ce.adaptive_calibration_error(y, s, num_bins=6, sample_weight=w),
        ce.classwise_ece(y, s, num_bins=6, binning="equal_mass", sample_weight=w),
        *(f(y, s, num_bins=6, binning="equal_mass", variant="classwise", sample_weight=w)
          for f in (ce.binned_calibration_error, ce.max_calibration_error, ce.rms_calibration_error)),
        ece(y, s, num_bins=6, binning="equal_mass", sample_weight=w))),
]


def _case(kind):
    """``(labels, scores, integer weights w, real weights u)``; ``u`` is 0 where ``w`` is and ranges ~0.02-50."""
    y, s = (_binary_data()[:2] if kind == "binary" else _multiclass_data())
    w = _integer_weights(len(y), seed=21)  # 0 to 3 copies of each sample: weight 0 drops the sample
    u = (w > 0) * np.exp(2.0 * np.random.default_rng(22).normal(size=len(y)))
    return y, s, w, u


def _log_odds32(lp):
    """The class-1 log-odds as ecjax ranks them (float32), for scikit-learn's binary curves."""
    lp32 = np.asarray(lp, np.float32)
    return lp32[:, 1] - lp32[:, 0]


def _assert_same(got, ref, rtol=2e-6):
    got_leaves, ref_leaves = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(ref)
    assert len(got_leaves) == len(ref_leaves)
    for a, b in zip(got_leaves, ref_leaves):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-7)


@pytest.mark.parametrize("name,kind,f", _WEIGHTED_FUNCTIONS, ids=[e[0] for e in _WEIGHTED_FUNCTIONS])
def test_integer_weights_are_repeated_samples_and_zero_weights_dropped_samples(name, kind, f):
    """0, 1, 2 or 3 copies of each sample (real weights with zeros: against scikit-learn and numpy below)."""
    y, s, w, u = _case(kind)
    yr, sr = _repeat(w, y, s)
    _assert_same(f(y, s, w), f(yr, sr, None))
    # The weights matter (guards the check above against a function that ignores them): u against the same
    # samples (w > 0) with weight 1, both through the compiled program of the first call.
    flat = [np.ravel(np.asarray(a, np.float64)) for a in jax.tree_util.tree_leaves(f(y, s, u))]
    same = [np.ravel(np.asarray(a, np.float64)) for a in jax.tree_util.tree_leaves(f(y, s, (w > 0) * 1.0))]
    assert any(a.shape != b.shape or not np.allclose(a, b, rtol=1e-4, atol=1e-4, equal_nan=True)
               for a, b in zip(flat, same))


# ------------------------------------------------------- against scikit-learn

def test_binary_curves_match_sklearn_with_ties_and_zero_weights():
    y, lp, _, u = _case("binary")
    s = _log_odds32(lp)  # scikit-learn leaves the zero-weight samples out of its curves; so does ecjax
    pr = curves.precision_recall_curve(y, lp, sample_weight=u)
    p_ref, r_ref, pr_thresholds = skm.precision_recall_curve(y, s, sample_weight=u)
    np.testing.assert_allclose(np.asarray(pr.precision), p_ref, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pr.recall), r_ref, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(pr.thresholds), pr_thresholds)
    np.testing.assert_allclose(float(curves.average_precision(y, lp, sample_weight=u)),
                               skm.average_precision_score(y, s, sample_weight=u), rtol=1e-6)
    det = curves.det_curve(y, lp, sample_weight=u)
    f_ref, m_ref, t_ref = skm.det_curve(y, s, sample_weight=u)
    np.testing.assert_allclose(np.asarray(det.false_positive_rate), f_ref, atol=1e-6)
    np.testing.assert_allclose(np.asarray(det.false_negative_rate), m_ref, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(det.thresholds), t_ref)
    # Padded: one point per sample, zero-weight ones kept as repeated vertices of the same curve.
    padded = curves.precision_recall_curve(y, lp, padded=True, sample_weight=u)
    at = np.searchsorted(np.asarray(padded.thresholds), pr_thresholds)  # each threshold's first point
    np.testing.assert_array_equal(np.asarray(padded.thresholds)[at], pr_thresholds)
    np.testing.assert_allclose(np.asarray(padded.precision)[at], p_ref[:-1], atol=1e-6)
    np.testing.assert_allclose(np.asarray(padded.recall)[at], r_ref[:-1], atol=1e-6)


def test_auc_one_vs_rest_matches_sklearn():
    y, lp, _, u = _case("multiclass")
    ref = skm.roc_auc_score(y, np.exp(lp) / np.exp(lp).sum(1, keepdims=True), multi_class="ovr", sample_weight=u)
    np.testing.assert_allclose(float(auc_one_vs_rest(y, lp, sample_weight=u)), ref, rtol=1e-6)


@pytest.mark.parametrize("average", ["macro", "weighted"])
def test_auc_one_vs_one_matches_sklearn_on_repeated_samples_and_numpy_pairs(average):
    y, lp, w, u = _case("multiclass")
    p = np.exp(lp) / np.exp(lp).sum(1, keepdims=True)
    yr, pr_ = _repeat(w, y, p)  # scikit-learn's one-vs-one AUC takes no sample_weight
    np.testing.assert_allclose(float(roc.auc_one_vs_one(y, lp, average=average, sample_weight=w)),
                               skm.roc_auc_score(yr, pr_, multi_class="ovo", average=average), rtol=1e-6)
    # Real weights: Hand & Till's pair AUCs over weighted pairs, written out.
    total, norm = 0.0, 0.0
    for i in range(3):
        for j in range(i + 1, 3):
            def a(c, x, z):  # P(p_c of class x > p_c of class z), weighted pairs, ties 1/2
                sx, sz = p[y == x, c][:, None], p[y == z, c][None, :]
                wx, wz = u[y == x][:, None], u[y == z][None, :]
                return np.sum(wx * wz * ((sx > sz) + 0.5 * (sx == sz))) / (wx.sum() * wz.sum())
            pair_weight = 1.0 if average == "macro" else (u[y == i].sum() + u[y == j].sum()) / u.sum()
            total += pair_weight * (a(i, i, j) + a(j, j, i)) / 2
            norm += pair_weight
    np.testing.assert_allclose(float(roc.auc_one_vs_one(y, lp, average=average, sample_weight=u)), total / norm,
                               rtol=1e-6)


# --------------------------------------------------- against numpy references

def test_decision_curve_matches_numpy():
    y, lp, _, u = _case("binary")
    s = _log_odds32(lp)
    p_t = np.array([0.1, 0.4, 0.7])
    odds = p_t / (1 - p_t)
    cut = np.log(p_t) - np.log1p(-p_t)
    treat = s[:, None] >= cut[None, :]
    tp = np.sum(u[:, None] * (y == 1)[:, None] * treat, 0)
    fp = np.sum(u[:, None] * (y == 0)[:, None] * treat, 0)
    prev = np.sum(u * y) / u.sum()
    got = decision_curve(y, lp, threshold_probabilities=p_t, sample_weight=u)
    np.testing.assert_allclose(np.asarray(got.net_benefit), tp / u.sum() - fp / u.sum() * odds, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got.treat_all), prev - (1 - prev) * odds, atol=1e-6)
    # Likelihood-type scores with given priors: NB = P_2 TP / W_2 - P_1 FP / W_1 odds.
    pri = np.array([0.7, 0.3])
    llr = _binary_data()[3]
    got = decision_curve(y, llr, threshold_probabilities=p_t, priors=pri, score_type="llr", sample_weight=u)
    treat = (llr + np.log(pri[1] / pri[0]))[:, None] >= cut[None, :]
    tp = np.sum(u[:, None] * (y == 1)[:, None] * treat, 0) / np.sum(u * (y == 1))
    fp = np.sum(u[:, None] * (y == 0)[:, None] * treat, 0) / np.sum(u * (y == 0))
    np.testing.assert_allclose(np.asarray(got.net_benefit), pri[1] * tp - pri[0] * fp * odds, atol=1e-6)


def test_bayes_risk_and_threshold_metrics_match_the_weighted_roc():
    y, lp, _, u = _case("binary")
    w1, w0 = np.sum(u * y), np.sum(u * (1 - y))
    llr = _log_odds32(lp) - np.log(w1 / w0)  # posterior-type scores: the weighted data prior is removed
    fpr, tpr, _ = skm.roc_curve(y, llr, sample_weight=u, drop_intermediate=False)
    plo = np.linspace(-6.0, 6.0, 121)  # the default
    pi = 1 / (1 + np.exp(-plo))
    miss = np.array([np.sum(u * (y == 1) * (llr <= -t)) for t in plo]) / w1
    fa = np.array([np.sum(u * (y == 0) * (llr > -t)) for t in plo]) / w0
    curve = bayes_risk_curve(y, lp, score_type="log_posteriors", sample_weight=u)
    naive = np.minimum(pi, 1 - pi)
    np.testing.assert_allclose(np.asarray(curve.actual), (pi * miss + (1 - pi) * fa) / naive, rtol=1e-5, atol=1e-6)
    minimum = np.min(pi[:, None] * (1 - tpr)[None] + (1 - pi)[:, None] * fpr[None], axis=1)
    np.testing.assert_allclose(np.asarray(curve.minimum), minimum / naive, rtol=1e-5, atol=1e-6)

    op = specificity_at_sensitivity(y, lp, 0.8, sample_weight=u)
    ok = tpr >= 0.8
    best = np.max(1 - fpr[ok])
    assert float(op.specificity) == pytest.approx(best, abs=1e-6)
    assert float(op.sensitivity) == pytest.approx(np.max(tpr[ok & (1 - fpr == best)]), abs=1e-6)

    res = nec_for_target_sensitivity(y, lp, 0.8, sample_weight=u)
    a = float(res.alpha)
    assert float(res.nec) == pytest.approx(np.min((a * fpr + 1 - tpr) / min(a, 1.0)), abs=1e-6)
    assert float(res.cost_ratio) == pytest.approx(a * w1 / w0, rel=1e-5)  # c_12 / c_21 = alpha P_2 / P_1


def test_metric_thresholds_match_sklearn_weighted_metrics_at_every_threshold():
    y, lp, _, u = _case("binary")
    s = _log_odds32(lp)
    cuts = np.unique(s)
    cuts = np.concatenate([[-np.inf], (cuts[1:] + cuts[:-1]) / 2])  # "class 1 iff s > t" at every distinct cut
    for metric, score in (("f1", skm.f1_score), ("mcc", skm.matthews_corrcoef),
                          ("youden", lambda a, b, sample_weight: skm.balanced_accuracy_score(
                              a, b, sample_weight=sample_weight, adjusted=True))):
        best = max(score(y, (s > t).astype(int), sample_weight=u) for t in cuts)
        res = optimal_metric_threshold(y, lp, metric=metric, sample_weight=u)
        assert float(res.metric_value) == pytest.approx(best, abs=1e-6), metric
        chosen = (s > float(res.threshold)).astype(int)
        assert score(y, chosen, sample_weight=u) == pytest.approx(best, abs=1e-6), metric
        np.testing.assert_allclose(np.asarray(res.counts), skm.confusion_matrix(y, chosen, sample_weight=u),
                                   rtol=1e-5)


def _numpy_equal_mass_edges(x, u, m):
    """The documented rule: the array_split ends of the total weight, found on the cumulative weight."""
    order = np.argsort(x, kind="stable")
    xs, cum = x[order], np.cumsum(u[order])
    q = np.floor(cum[-1] / m)
    r = cum[-1] - q * m
    ends = np.arange(1, m + 1) * q + np.minimum(np.arange(1, m + 1), r)
    upper = xs[np.minimum(np.searchsorted(cum, ends * (1 - 1e-9), side="left"), len(x) - 1)]
    upper[-1] = np.inf
    return upper


def _numpy_binned(conf, hit, u, upper):
    b = np.minimum(np.searchsorted(upper, conf, side="left"), len(upper) - 1)
    count = np.bincount(b, weights=u, minlength=len(upper))
    gap_sum = np.bincount(b, weights=u * (hit - conf), minlength=len(upper))
    filled = count > 0
    gap = np.where(filled, gap_sum / np.where(filled, count, 1), 0)
    return (np.sum(np.abs(gap_sum)) / u.sum(), np.sqrt(np.sum(count * gap ** 2) / u.sum()),
            np.max(np.abs(gap[filled])), count, np.bincount(b, weights=u * hit, minlength=len(upper)))


@pytest.mark.parametrize("binning", ["equal_width", "equal_mass"])
def test_calibration_errors_match_numpy_weighted_bins(binning):
    y, lp, _, u = _case("multiclass")
    m = 6
    p = np.exp(np.asarray(lp, np.float32)).astype(np.float64)

    def edges(x):
        return np.linspace(0, 1, m + 1)[1:] if binning == "equal_width" else _numpy_equal_mass_edges(x, u, m)

    conf, hit = p.max(1), (p.argmax(1) == y).astype(float)
    l1, l2, mx, _, _ = _numpy_binned(conf, hit, u, edges(conf))
    kw = dict(num_bins=m, binning=binning, sample_weight=u)
    np.testing.assert_allclose(float(ce.binned_calibration_error(y, lp, norm="l1", **kw)), l1, rtol=1e-5)
    np.testing.assert_allclose(float(ce.rms_calibration_error(y, lp, **kw)), l2, rtol=1e-5)
    np.testing.assert_allclose(float(ce.max_calibration_error(y, lp, **kw)), mx, rtol=1e-5)
    np.testing.assert_allclose(float(ece(y, lp, **kw)), l1, rtol=1e-5)
    per_class = [_numpy_binned(p[:, c], (y == c).astype(float), u, edges(p[:, c]))[0] for c in range(3)]
    np.testing.assert_allclose(float(ce.classwise_ece(y, lp, **kw)), np.mean(per_class), rtol=1e-5)
    if binning == "equal_mass":
        np.testing.assert_allclose(float(ce.adaptive_calibration_error(y, lp, num_bins=m, sample_weight=u)),
                                   np.mean(per_class), rtol=1e-5)


def test_reliability_bands_follow_the_weighted_counts():
    y, lp, _, u = _case("binary")
    p1 = np.exp(np.asarray(lp, np.float32)[:, 1]).astype(np.float64)
    *_, count, hits = _numpy_binned(p1, y.astype(float), u, np.linspace(0, 1, 7)[1:])
    bands = ce.reliability_bands(y, lp, num_bins=6, prob=0.8, interval="equal_tailed", sample_weight=u)
    np.testing.assert_allclose(bands.count, count, rtol=1e-6)
    np.testing.assert_allclose(bands.hits, hits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bands.low, special.betaincinv(1 + hits, 1 + count - hits, 0.1), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(bands.high, special.betaincinv(1 + hits, 1 + count - hits, 0.9), rtol=1e-5, atol=1e-7)
    # Doubling every weight counts every sample twice: narrower bands around the same frequencies.
    doubled = ce.reliability_bands(y, lp, num_bins=6, prob=0.8, interval="equal_tailed", sample_weight=2 * u)
    np.testing.assert_allclose(doubled.frequency, bands.frequency, rtol=1e-6)
    filled = count > 0
    assert np.all((doubled.high - doubled.low)[filled] < (bands.high - bands.low)[filled])


# ------------------------------------------------------------- jit, errors

def test_new_weighted_functions_under_vmap_follow_the_nan_contract():
    y, lp, _, u = _case("binary")
    bad = u.copy()
    bad[3] = -1.0  # invalid weights under a transformation: NaN, never a number
    ap = jax.vmap(lambda w: curves.average_precision(y, lp, sample_weight=w))(np.stack([u, 2 * u, bad]))
    ref = skm.average_precision_score(y, _log_odds32(lp), sample_weight=u)
    np.testing.assert_allclose(np.asarray(ap[:2]), [ref, ref], rtol=1e-5)
    assert np.isnan(float(ap[2]))


@pytest.mark.parametrize("name,kind,f", _WEIGHTED_FUNCTIONS, ids=[e[0] for e in _WEIGHTED_FUNCTIONS])
def test_new_weighted_functions_refuse_bad_weights_by_name(name, kind, f):
    y, s, _, _ = _case(kind)
    good = np.ones(len(y))
    for bad in (np.where(np.arange(len(y)) == 3, -1.0, good), np.where(np.arange(len(y)) == 3, np.nan, good),
                good[:-1], np.zeros(len(y))):
        with pytest.raises(InputError, match="sample_weight"):
            f(y, s, bad)
