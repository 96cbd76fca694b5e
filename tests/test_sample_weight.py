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
    with pytest.raises(InputError, match="sample_weight.*equal_width"):
        ece(y, lp, binning="equal_mass", sample_weight=np.ones(12))
