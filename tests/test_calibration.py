"""Calibrators, protocols and calibration loss (Ferrer 2022b, §4.2-4.3).

References, never ecjax itself: psrcal (AffineCalLogLoss / AffineCalBrier /
HistogramBinningCal trained in float64, LogLoss, CalLossLogLoss), scipy.optimize
minimizing the same objectives written here in float64 numpy, scikit-learn's
LogisticRegression (prior-weighted logistic regression), and closed-form
optimality conditions.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import minimize
from scipy.special import log_softmax, logsumexp
from sklearn.linear_model import LogisticRegression

import jax
import jax.numpy as jnp

from ecjax import InputError
from ecjax import calibration as C
from psrcal import losses as psr_losses
from psrcal.calibration import AffineCalBrier, AffineCalLogLoss, HistogramBinningCal

from conftest import load_dataset


def _lp64(scores, score_type):
    s = np.asarray(scores, np.float64)
    return log_softmax(s, 1) if score_type == "logits" else s - logsumexp(s, 1, keepdims=True)


def _psrcal_train(cls, lp, labels, **kw):
    model = cls(torch.tensor(lp), torch.tensor(labels.astype(np.int64)), **kw)
    model.train()
    with torch.no_grad():
        return float(model.loss()), model.calibrate(torch.tensor(lp)).numpy()


def _xe64(lp, labels, priors=None):
    return float(psr_losses.LogLoss(torch.tensor(np.asarray(lp, np.float64)), torch.tensor(labels.astype(np.int64)),
                                    norm=False, priors=None if priors is None else torch.tensor(priors)))


# One size for every CIFAR-10 subset below: the calibrators' kernels compile once a shape (and method), so tests at
# one size share what they compile (at 1500, 800, 1000 and 1200 samples each compiled its own).
CIFAR_SUBSET = 1000


def _subset(name, n):
    labels, scores, st = load_dataset(name)
    return labels[:n].astype(np.int64), scores[:n], st


# ----------------------------------------------------- affine family vs psrcal

@pytest.mark.parametrize("name", ["cifar10_resnet-20", "sst2_gpt2", "sst2_gpt2_4shot", "pneumoniamnist_resnet50"])
def test_affine_and_temperature_reach_psrcal_training_loss(name):
    labels, scores, st = load_dataset(name)
    labels = labels.astype(np.int64)
    lp = _lp64(scores, st)
    for method, bias in (("affine", True), ("temperature", False)):
        ref_loss, _ = _psrcal_train(AffineCalLogLoss, lp, labels, bias=bias)
        cal = C.fit(scores, labels, method=method, score_type=st)
        ours = _xe64(cal.apply(scores, score_type=st), labels)  # re-evaluated in float64 by psrcal
        assert ours <= ref_loss * (1 + 1e-4), f"{name} {method}: {ours} vs psrcal {ref_loss}"
        assert bool(cal.converged) and 0 < int(cal.num_iterations) < 200
        assert float(cal.grad_norm) < 1e-5


def test_affine_with_deployment_priors_and_brier_match_psrcal():
    labels, scores, st = _subset("cifar10_resnet-20", CIFAR_SUBSET)
    lp = _lp64(scores, st)
    priors = np.linspace(1, 3, 10)
    priors /= priors.sum()
    ref_loss, _ = _psrcal_train(AffineCalLogLoss, lp, labels, priors=priors)
    cal = C.fit(scores, labels, method="affine", priors=priors, score_type=st)
    assert _xe64(cal.apply(scores, score_type=st), labels, priors) <= ref_loss * (1 + 1e-4)
    ref_brier, _ = _psrcal_train(AffineCalBrier, lp, labels)
    cal_b = C.fit(scores, labels, method="affine", score_type=st, settings=C.FitSettings(loss="brier"))
    ours = float(psr_losses.Brier(torch.tensor(np.asarray(cal_b.apply(scores, score_type=st), np.float64)),
                                  torch.tensor(labels), norm=False))
    assert ours <= ref_brier * (1 + 1e-4)


def test_one_fitter_of_the_affine_cross_entropy(name="cifar10_resnet-20", n=CIFAR_SUBSET):
    # fit(method="affine") and the kernel the bootstrap's calibration loss maps over its draws are one fitter: the
    # same parameters for the same weights P_i / N_i (per-class weights of data priors: 1 / N), and at the float64
    # optimum of scipy's L-BFGS-B on the same objective.
    labels, scores, st = _subset(name, n)
    lp = _lp64(scores, st)
    s = jnp.asarray(lp, jnp.float32)
    cal = C.fit(s, labels, method="affine")
    scale, bias, _ = jax.jit(C.fit_affine_newton_kernel)(jnp.asarray(labels), s, jnp.full(len(labels), 1.0 / n))
    np.testing.assert_allclose(float(cal.params["scale"]), float(scale), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(cal.params["bias"]), np.asarray(bias), atol=1e-6)
    k = lp.shape[1]

    def objective(x):
        z = x[0] * lp + x[1:]
        return -np.mean(log_softmax(z, 1)[np.arange(len(labels)), labels]) + 0.5 * np.sum(x[1:]) ** 2

    ref = minimize(objective, np.concatenate([[1.0], np.zeros(k)]), method="L-BFGS-B", options={"ftol": 1e-15,
                                                                                                 "gtol": 1e-10}).x
    np.testing.assert_allclose(float(scale), ref[0], rtol=1e-4)
    np.testing.assert_allclose(np.asarray(bias) - np.mean(bias), ref[1:] - np.mean(ref[1:]), atol=1e-4)


# --------------------------------------------- other methods vs scipy (float64)

def _scipy_fit(lp, labels, method, l2=0.0):
    """The same objectives in float64 numpy with analytic gradients, minimized by scipy's L-BFGS-B."""
    n, k = lp.shape
    onehot = np.eye(k)[labels]

    def unpack(x):
        if method == "bias":
            return np.ones(k), np.eye(k), x
        if method == "vector":
            return x[:k], np.eye(k), x[k:]
        return np.ones(k), x[: k * k].reshape(k, k), x[k * k:]

    def objective(x):
        a, w, b = unpack(x)
        z = (lp * a if method != "matrix" else lp @ w.T) + b
        lsm = log_softmax(z, 1)
        g = (np.exp(lsm) - onehot) / n  # d XE / d z
        f = -np.sum(lsm * onehot) / n
        if method == "bias":
            return f, g.sum(0)
        if method == "vector":
            return f, np.r_[(g * lp).sum(0), g.sum(0)]
        f += l2 * np.sum((w - np.eye(k)) ** 2)
        return f, np.r_[(g.T @ lp + 2 * l2 * (w - np.eye(k))).ravel(), g.sum(0)]

    x0 = {"bias": np.zeros(k), "vector": np.r_[np.ones(k), np.zeros(k)],
          "matrix": np.r_[np.eye(k).ravel(), np.zeros(k)]}[method]
    return minimize(objective, x0, jac=True, method="L-BFGS-B",
                    options={"maxiter": 3000, "gtol": 1e-9, "ftol": 1e-13}).fun


def test_vector_matrix_and_bias_scaling_reach_scipy_optimum():
    labels, scores, st = _subset("cifar10_resnet-20", CIFAR_SUBSET)
    lp = _lp64(scores, st)
    k = lp.shape[1]
    l2 = 1e-3
    refs = {m: _scipy_fit(lp, labels, m, l2) for m in ("bias", "vector", "matrix")}
    for method, ref in refs.items():
        cal = C.fit(scores, labels, method=method, score_type=st, settings=C.FitSettings(l2=l2))
        out = np.asarray(cal.apply(scores, score_type=st), np.float64)
        value = -np.mean(out[np.arange(len(labels)), labels])
        if method == "matrix":
            w = np.asarray(cal.params["weight"], np.float64)
            value += l2 * np.sum((w - np.eye(k)) ** 2)
        assert value <= ref * (1 + 1e-4) + 1e-7, f"{method}: {value} vs scipy {ref}"
    # Bias-only optimality (closed form): the mean calibrated posterior equals the class frequencies.
    # At the default max_iter (a static argument of the kernel): the bias kernel the loop above compiled is reused.
    cal = C.fit(scores, labels, method="bias", score_type=st, settings=C.FitSettings(tol=1e-7))
    assert bool(cal.converged)
    mean_post = np.exp(np.asarray(cal.apply(scores, score_type=st), np.float64)).mean(0)
    np.testing.assert_allclose(mean_post, np.bincount(labels, minlength=k) / len(labels), atol=2e-5)


def test_llr_calibration_is_prior_weighted_logistic_regression():
    rng = np.random.default_rng(0)
    n1, n0 = 400, 1600
    labels = np.r_[np.ones(n1, int), np.zeros(n0, int)]
    raw = np.r_[rng.normal(2.0, 1.5, n1), rng.normal(-1.0, 1.5, n0)]  # miscalibrated LLRs
    for priors in (None, np.array([0.5, 0.5]), np.array([0.95, 0.05])):
        p = np.array([n0, n1]) / (n0 + n1) if priors is None else priors
        sw = (p / np.array([n0, n1]))[labels]
        lr = LogisticRegression(penalty=None, tol=1e-10, max_iter=10_000).fit(raw[:, None], labels, sample_weight=sw)
        cal = C.fit(raw, labels, method="llr", score_type="llr", priors=priors, settings=C.FitSettings(tol=1e-7))
        a, b = float(cal.params["scale"]), float(cal.params["bias"])
        np.testing.assert_allclose(a, lr.coef_[0, 0], rtol=1e-3)
        np.testing.assert_allclose(b, lr.intercept_[0] - np.log(p[1] / p[0]), atol=2e-3)
        np.testing.assert_allclose(np.asarray(cal.apply(raw, score_type="llr")), a * raw + b, rtol=1e-5, atol=1e-5)


def test_histogram_binning_matches_psrcal():
    labels, scores, st = load_dataset("sst2_gpt2")
    labels = labels.astype(np.int64)
    lp = _lp64(scores, st)
    ref = HistogramBinningCal(torch.tensor(lp), torch.tensor(labels), M=15)
    ref.train()
    cal = C.fit(scores, labels, method="histogram", score_type=st, settings=C.FitSettings(num_bins=15))
    freqs = np.asarray(cal.params["frequencies"])[:, 1]
    for m, f in enumerate(ref.cal_transform):
        n_in_bin = np.sum((ref.lows[m] < np.exp(lp[:, 1])) & (np.exp(lp[:, 1]) <= ref.highs[m]))
        if n_in_bin:
            np.testing.assert_allclose(freqs[m], float(f), atol=1e-6)
        else:  # documented fallback: the class-1 prior (psrcal uses 0)
            np.testing.assert_allclose(freqs[m], labels.mean(), atol=1e-6)
    with np.errstate(divide="ignore"):
        ref_out = ref.calibrate(torch.tensor(lp)).numpy()
    ours = np.asarray(cal.apply(scores, score_type=st))
    # psrcal's outputs clipped as documented (a bin of one class gives 0 there, ISOTONIC_CLIP here).
    np.testing.assert_allclose(np.exp(ours), np.clip(np.exp(ref_out), C.ISOTONIC_CLIP, 1 - C.ISOTONIC_CLIP),
                               atol=1e-6)


def _numpy_equal_mass_bins(values, num_bins):
    """Bin of each value by an independent numpy sort-and-index: the sorted values split as ``np.array_split``,
    every value tied with a part's last value moved into that part."""
    order = np.argsort(values, kind="stable")
    parts = np.array_split(np.arange(len(values)), num_bins)
    last = np.array([values[order[part[-1]]] for part in parts])
    return np.array([np.nonzero(last >= x)[0][0] for x in values])


def test_histogram_equal_mass_bins_hold_equal_counts():
    # Issue 34: on a GPU, edges compared with exp() of the inputs put 149 and 151 samples in two bins.  The bins
    # are now order statistics of the inputs as ecjax holds them (float32 log-posteriors): count them so.
    rng = np.random.default_rng(1)
    p = rng.uniform(0.01, 0.99, 1500)
    labels = (rng.uniform(size=1500) < p).astype(int)
    lp = np.log(np.stack([1 - p, p], 1))
    cal = C.fit(lp, labels, method="histogram", settings=C.FitSettings(num_bins=10, binning="equal_mass"))
    idx = _numpy_equal_mass_bins(lp[:, 1].astype(np.float32), 10)
    assert np.all(np.bincount(idx, minlength=10) == 150)
    # The edges are the 150th, 300th, ... smallest inputs (as ecjax renormalizes them: within an ulp of numpy's).
    edges = np.asarray(cal.params["upper_log_edges"], np.float64)
    np.testing.assert_allclose(edges[:-1], np.sort(lp[:, 1].astype(np.float32))[149:1499:150], rtol=5e-7)
    assert edges[-1] == np.inf
    out = np.exp(np.asarray(cal.apply(lp), np.float64))[:, 1]
    for m in range(10):
        np.testing.assert_allclose(out[idx == m], labels[idx == m].mean(), atol=1e-6)


def test_histogram_keeps_ties_together_and_never_outputs_log_zero():
    # 40 values, 4 bins: the 10th smallest is tied with the next five, so bin 0 takes all six (16 values), and the
    # top bin, all class 1, is clipped instead of log 0 = -inf (the -inf that CLI files held, issue 30).
    p = np.r_[np.linspace(0.05, 0.3, 9), np.full(7, 0.35), np.linspace(0.4, 0.6, 14), np.linspace(0.7, 0.95, 10)]
    labels = np.r_[np.tile([0, 1], 15), np.ones(10, int)]
    lp = np.log(np.stack([1 - p, p], 1))
    cal = C.fit(lp, labels, method="histogram", settings=C.FitSettings(num_bins=4, binning="equal_mass"))
    idx = _numpy_equal_mass_bins(lp[:, 1].astype(np.float32), 4)
    np.testing.assert_array_equal(np.bincount(idx, minlength=4), [16, 4, 10, 10])
    out = np.asarray(cal.apply(lp), np.float64)
    assert np.all(np.isfinite(out))
    freq = np.array([labels[idx == m].mean() for m in range(4)])
    np.testing.assert_allclose(np.exp(out[:, 1]), np.clip(freq[idx], C.ISOTONIC_CLIP, 1 - C.ISOTONIC_CLIP),
                               rtol=1e-5)
    np.testing.assert_allclose(out[idx == 3, 0], np.log(C.ISOTONIC_CLIP), rtol=1e-5)


# Issue 30: constant scores carry no information, so every calibrator with a bias must return the class frequencies
# of its training data; uncentred, the flat valley of scale and bias sent L-BFGS to logits of -2.7e8 (vector) and
# left beta "NOT converged".  The SST-2 class counts (912 / 909) and p = 0.5 were the failing case.
@pytest.mark.parametrize("method", ["beta", "vector"])
def test_constant_scores_calibrate_to_the_class_frequencies(method):
    labels = np.r_[np.zeros(912, int), np.ones(909, int)]
    scores = np.full((len(labels), 2), np.log(0.5))
    res = C.calibrate_cross_validated(scores, labels, key=jax.random.key(0), num_folds=5, method=method)
    folds = np.asarray(res.folds)
    assert np.all(np.asarray(res.calibrator.converged))
    p1 = np.exp(np.asarray(res.scores, np.float64)[:, 1])
    for f in range(5):  # each fold: the class-1 frequency of the other folds (numpy)
        np.testing.assert_allclose(p1[folds == f], labels[folds != f].mean(), rtol=1e-5)


# ----------------------------------------------------------------- protocols

def test_stratified_folds_are_balanced_and_keyed():
    labels = np.repeat(np.arange(4), [50, 23, 7, 120])
    folds = C.stratified_folds(jax.random.key(3), labels, 5)
    for c in range(4):
        per_fold = np.bincount(folds[labels == c], minlength=5)
        assert per_fold.max() - per_fold.min() <= 1
    sizes = np.bincount(folds, minlength=5)
    assert sizes.max() - sizes.min() <= 1
    np.testing.assert_array_equal(folds, C.stratified_folds(jax.random.key(3), labels, 5))
    assert np.any(folds != C.stratified_folds(jax.random.key(4), labels, 5))


def test_cross_validation_applies_each_fold_calibrator_only_to_its_held_out_part():
    labels, scores, st = _subset("cifar10_resnet-20", CIFAR_SUBSET)
    lp = _lp64(scores, st)
    res = C.calibrate_cross_validated(scores, labels, key=jax.random.key(0), num_folds=3, score_type=st)
    assert res.protocol == "cross_validation" and not res.optimistic
    folds = np.asarray(res.folds)
    out = np.asarray(res.scores, np.float64)
    for f in range(3):
        train, test = folds != f, folds == f
        # psrcal trained on exactly this fold's training part, applied to its held-out part.
        model = AffineCalLogLoss(torch.tensor(lp[train]), torch.tensor(labels[train]))
        model.train()
        with torch.no_grad():
            ref = model.calibrate(torch.tensor(lp[test])).numpy()
        ref = ref - logsumexp(ref, 1, keepdims=True)
        np.testing.assert_allclose(np.exp(out[test]), np.exp(ref), atol=2e-3)
        # The same as applying this fold's calibrator by hand.
        cal_f = jax.tree_util.tree_map(lambda x: x[f], res.calibrator)
        np.testing.assert_allclose(out[test], np.asarray(cal_f.apply(scores[test], score_type=st)), atol=1e-5)
    assert np.all(np.asarray(res.calibrator.converged))


def test_protocol_labels_and_held_out():
    labels, scores, st = _subset("sst2_gpt2", 1821)
    tot = C.calibrate_train_on_test(scores, labels, score_type=st)
    assert tot.optimistic and tot.protocol == "train_on_test"
    ho = C.calibrate_held_out(scores[:900], labels[:900], scores[900:], score_type=st)
    assert not ho.optimistic and ho.protocol == "held_out" and ho.scores.shape == (921, 2)
    # Held-out calibration is fitted without the test labels: it equals the calibrator fitted on the first part.
    cal = C.fit(scores[:900], labels[:900], score_type=st)
    np.testing.assert_allclose(np.asarray(ho.scores), np.asarray(cal.apply(scores[900:])), atol=1e-6)
    # Train-on-test is optimistic: its XE on the test data is at most that of cross-validation.
    cv = C.calibrate_cross_validated(scores, labels, key=jax.random.key(1), score_type=st)
    assert _xe64(tot.scores, labels) <= _xe64(cv.scores, labels) + 1e-6


def test_missing_class_in_a_training_fold_is_a_clear_error():
    rng = np.random.default_rng(2)
    labels = np.r_[np.zeros(40, int), np.ones(40, int), [2]]  # class 2 has a single sample
    lp = log_softmax(rng.normal(size=(81, 3)), 1)
    with pytest.raises(InputError, match="class 2 has no samples"):
        C.calibrate_cross_validated(lp, labels, key=jax.random.key(0))
    with pytest.raises(InputError, match="class 2 has no samples"):
        C.fit(lp[:80], labels[:80])  # K = 3 from the scores, class 2 absent


# ----------------------------------------------------------- calibration loss

def test_calibration_loss_matches_psrcal_and_closed_forms():
    labels, scores, st = load_dataset("sst2_gpt2")
    labels = labels.astype(np.int64)
    lp = _lp64(scores, st)
    cal = np.asarray(C.calibrate_cross_validated(scores, labels, key=jax.random.key(0), score_type=st).scores,
                     np.float64)
    ref_rel = float(psr_losses.CalLossLogLoss(torch.tensor(lp), torch.tensor(cal), torch.tensor(labels)))
    np.testing.assert_allclose(float(C.calibration_loss(labels, lp, cal)), ref_rel, rtol=1e-5)
    ref_abs = _xe64(lp, labels) - _xe64(cal, labels)
    np.testing.assert_allclose(float(C.calibration_loss(labels, lp, cal, relative=False)), ref_abs, rtol=1e-4)
    ref_br = float(psr_losses.CalLossBrier(torch.tensor(lp), torch.tensor(cal), torch.tensor(labels)))
    np.testing.assert_allclose(float(C.calibration_loss(labels, lp, cal, metric="brier")), ref_br, rtol=1e-5)
    costs = np.array([[0.0, 1.0], [5.0, 0.0]])

    def bayes_ec(x):  # independent numpy EC of Bayes decisions
        d = np.argmin(np.exp(x) @ costs, 1)
        return np.mean(costs[labels, d])

    ref_ec = 100 * (bayes_ec(lp) - bayes_ec(cal)) / bayes_ec(lp)
    np.testing.assert_allclose(float(C.calibration_loss(labels, lp, cal, metric="bayes_ec", costs=costs)), ref_ec,
                               rtol=1e-5)


def test_relative_calibration_loss_of_an_infinite_raw_cross_entropy():
    with np.errstate(divide="ignore"):
        raw = np.log(np.array([[1.0, 0.0], [0.5, 0.5]]))  # true-class posterior 0 for sample 0
    cal = np.log(np.array([[0.6, 0.4], [0.5, 0.5]]))
    labels = np.array([1, 0])
    assert float(C.calibration_loss(labels, raw, cal)) == pytest.approx(100.0)
    assert float(C.calibration_loss(labels, raw, cal, relative=False)) == np.inf


def test_diagnose_reports_raw_calibrated_and_losses():
    labels, scores, st = load_dataset("sst2_gpt2")
    labels = labels.astype(np.int64)
    d = C.diagnose(scores, labels, protocol=C.CrossValidation(jax.random.key(0)), score_type=st)
    raw, cal = _xe64(_lp64(scores, st), labels), _xe64(d.calibrated_scores, labels)
    np.testing.assert_allclose([float(d.raw), float(d.calibrated)], [raw, cal], rtol=1e-5)
    np.testing.assert_allclose(float(d.absolute_loss), raw - cal, rtol=1e-4)
    np.testing.assert_allclose(float(d.relative_loss), 100 * (raw - cal) / raw, rtol=1e-4)
    assert d.protocol == "cross_validation" and d.metric == "xe"
    assert float(d.relative_loss) > 30  # GPT-2 zero-shot is badly calibrated (shared/data README)


def _synthetic_logits(seed, n=240, k=3):
    """Over-confident, biased 3-class logits: a calibrator has something to remove."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % k
    logits = 3.0 * (rng.normal(size=(n, k)) + 1.2 * np.eye(k)[labels]) + np.array([0.8, 0.0, -0.5])
    return labels.astype(np.int64), logits


def test_diagnose_cross_validation_is_calibrate_cross_validated_then_calibration_loss():
    labels, logits = _synthetic_logits(11)
    key = jax.random.key(4)
    d = C.diagnose(logits, labels, protocol=C.CrossValidation(key, num_folds=4), score_type="logits")
    # The same protocol composed by hand: the cross-validated scores, then eqs. 59-60 on log-posteriors.
    res = C.calibrate_cross_validated(logits, labels, key=key, num_folds=4, score_type="logits")
    lp = _lp64(logits, "logits")
    np.testing.assert_allclose(np.asarray(d.calibrated_scores), np.asarray(res.scores), rtol=1e-6, atol=1e-6)
    absolute = float(C.calibration_loss(labels, lp, res.scores, relative=False))
    relative = float(C.calibration_loss(labels, lp, res.scores))
    np.testing.assert_allclose([float(d.absolute_loss), float(d.relative_loss)], [absolute, relative], rtol=1e-4)
    np.testing.assert_allclose([float(d.raw), float(d.calibrated)],
                               [_xe64(lp, labels), _xe64(np.asarray(res.scores), labels)], rtol=1e-5)
    assert d.protocol == "cross_validation" and d.calibrator.method == "affine"
    assert np.asarray(d.calibrator.params["scale"]).shape == (4,)  # one calibrator per fold: num_folds arrived
    assert relative > 5  # the over-confident logits are miscalibrated
    # Other folds, other numbers: num_folds is not ignored.
    d5 = C.diagnose(logits, labels, protocol=C.CrossValidation(key), score_type="logits")
    assert np.asarray(d5.calibrator.params["scale"]).shape == (5,)
    assert not np.allclose(np.asarray(d5.calibrated_scores), np.asarray(d.calibrated_scores))


def test_diagnose_held_out_is_calibrate_held_out_then_calibration_loss():
    train_labels, train_logits = _synthetic_logits(12, n=300)
    labels, logits = _synthetic_logits(13)
    protocol = C.HeldOut(train_logits, train_labels)
    d = C.diagnose(logits, labels, protocol=protocol, metric="brier", score_type="logits", method="temperature")
    res = C.calibrate_held_out(train_logits, train_labels, logits, method="temperature", score_type="logits")
    lp = _lp64(logits, "logits")
    np.testing.assert_allclose(np.asarray(d.calibrated_scores), np.asarray(res.scores), rtol=1e-6, atol=1e-6)
    absolute = float(C.calibration_loss(labels, lp, res.scores, metric="brier", relative=False))
    relative = float(C.calibration_loss(labels, lp, res.scores, metric="brier"))
    np.testing.assert_allclose([float(d.absolute_loss), float(d.relative_loss)], [absolute, relative], rtol=1e-4)
    # The raw Brier score by hand: mean over samples of sum_k (p_k - [y = k])^2 ...
    p = np.exp(lp)
    brier_raw = np.mean(np.sum((p - np.eye(3)[labels]) ** 2, axis=1))
    # ... up to ecjax's normalization, which is the same for raw and calibrated: check their ratio.
    p_cal = np.exp(np.asarray(res.scores, np.float64))
    brier_cal = np.mean(np.sum((p_cal - np.eye(3)[labels]) ** 2, axis=1))
    assert float(d.calibrated) / float(d.raw) == pytest.approx(brier_cal / brier_raw, rel=1e-4)
    assert d.protocol == "held_out" and d.calibrator.method == "temperature"
    # The calibrator was fitted on the training data only: refitting there gives the same temperature.
    again = C.fit(train_logits, train_labels, method="temperature", score_type="logits")
    np.testing.assert_allclose(np.asarray(d.calibrator.params["scale"]), np.asarray(again.params["scale"]),
                               rtol=1e-6)


def test_diagnose_train_on_test_is_optimistic_and_named():
    labels, logits = _synthetic_logits(14)
    d = C.diagnose(logits, labels, protocol="train_on_test", score_type="logits")
    res = C.calibrate_train_on_test(logits, labels, score_type="logits")
    np.testing.assert_allclose(np.asarray(d.calibrated_scores), np.asarray(res.scores), rtol=1e-6, atol=1e-6)
    assert d.protocol == "train_on_test"
    # Fitted on the very samples it scores, it is at least as good there as the cross-validated calibrator.
    cv = C.diagnose(logits, labels, protocol=C.CrossValidation(jax.random.key(0)), score_type="logits")
    assert float(d.calibrated) <= float(cv.calibrated) + 1e-6


@pytest.mark.parametrize("make, field", [
    (lambda: C.CrossValidation(None), "`key`"),
    (lambda: C.CrossValidation(42), "`key`"),
    (lambda: C.CrossValidation(np.array([1, 2], np.int64)), "`key`"),
    (lambda: C.CrossValidation(jax.random.key(0), num_folds=1), "`num_folds`"),
    (lambda: C.CrossValidation(jax.random.key(0), num_folds=2.5), "`num_folds`"),
    (lambda: C.CrossValidation(jax.random.key(0), num_folds=True), "`num_folds`"),
    (lambda: C.CrossValidation(jax.random.key(0), num_folds="5"), "`num_folds`"),
    (lambda: C.HeldOut(None, np.zeros(4, int)), "`train_scores`"),
    (lambda: C.HeldOut(np.zeros((4, 2)), None), "`train_labels`"),
    (lambda: C.HeldOut([[0.0, 1.0], [2.0]], np.zeros(2, int)), "`train_scores`"),
    (lambda: C.HeldOut(np.zeros((4, 2)), 1), "`train_labels`"),
    (lambda: C.HeldOut(np.zeros((5, 2)), np.zeros(4, int)), "`train_scores` and `train_labels`"),
])
def test_protocol_objects_name_their_bad_fields(make, field):
    with pytest.raises(InputError) as info:
        make()
    assert type(info.value) is InputError and field in str(info.value), str(info.value)


def test_protocol_objects_keep_their_checked_fields():
    cv = C.CrossValidation(jax.random.PRNGKey(3), num_folds=np.int64(3))  # a raw uint32 key is a key too
    assert cv.num_folds == 3 and type(cv.num_folds) is int
    assert C.CrossValidation(jax.random.key(0)).num_folds == 5
    s, y = np.zeros((4, 2)), np.array([0, 1, 0, 1])
    held = C.HeldOut(s, y)
    assert held.train_scores is s and held.train_labels is y
    with pytest.raises(AttributeError):
        cv.num_folds = 4  # frozen


@pytest.mark.parametrize("protocol", ["cross_validation", "held_out", "cv", "", None, 3])
def test_diagnose_refuses_other_protocols_with_the_objects_to_use(protocol):
    labels, logits = _synthetic_logits(15, n=30)
    with pytest.raises(InputError) as info:
        C.diagnose(logits, labels, protocol=protocol, score_type="logits")
    msg = str(info.value)
    assert "`protocol`" in msg and "calibration.CrossValidation(key" in msg, msg
    assert "calibration.HeldOut(train_scores, train_labels)" in msg and "'train_on_test'" in msg, msg


def test_diagnose_protocol_is_required_and_llr_is_refused():
    labels, logits = _synthetic_logits(16, n=30)
    with pytest.raises(TypeError, match="protocol"):
        C.diagnose(logits, labels, score_type="logits")  # type: ignore[call-arg]
    with pytest.raises(InputError, match="method='llr'"):
        C.diagnose(logits, labels, protocol="train_on_test", score_type="logits", method="llr")
    with pytest.raises(InputError, match="method='llr'"):
        C.diagnose(logits, labels, protocol=C.CrossValidation(jax.random.key(0)), score_type="logits",
                   method="llr")


def test_calibrator_is_a_pytree_usable_under_jit():
    labels, scores, st = _subset("sst2_gpt2", 600)
    cal = C.fit(scores, labels, score_type=st)
    leaves, tree = jax.tree_util.tree_flatten(cal)
    again = jax.tree_util.tree_unflatten(tree, leaves)
    assert again.method == "affine"
    lp = jnp.asarray(_lp64(scores, st), jnp.float32)
    jitted = jax.jit(lambda c, s: c.apply(s))(cal, lp)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(cal.apply(lp)), atol=1e-6)


# ----------------------------------------------------------------- bad input

def test_bad_inputs_raise_input_error():
    rng = np.random.default_rng(5)
    lp = log_softmax(rng.normal(size=(60, 3)), 1)
    labels = np.arange(60) % 3
    with pytest.raises(InputError, match="method"):
        C.fit(lp, labels, method="beta")  # binary only (isotonic is one-vs-rest for K > 2)
    with pytest.raises(InputError, match="loss"):
        C.fit(lp, labels, settings=C.FitSettings(loss="hinge"))
    with pytest.raises(InputError, match="NaN"):
        C.fit(np.where(np.eye(60, 3) > 0, np.nan, lp), labels)
    with pytest.raises(InputError, match="inf"):
        C.fit(np.where(np.eye(60, 3) > 0, np.inf, lp), labels)
    with pytest.raises(InputError, match="logits"):
        C.fit(lp + 2.0, labels)  # not normalized
    with pytest.raises(InputError, match="labels"):
        C.fit(lp, labels + 1)  # label 3 out of range
    with pytest.raises(InputError, match="no samples"):
        C.fit(lp, np.zeros(60, int))  # single-class label set
    with pytest.raises(InputError, match="same number"):
        C.fit(lp, labels[:50])
    with pytest.raises(InputError, match="binary"):
        C.fit(lp, labels, method="histogram")
    with pytest.raises(InputError, match="method='llr'"):
        C.fit(lp[:, 0], labels % 2, score_type="llr", method="affine")
    with pytest.raises(InputError, match="key"):
        C.diagnose(lp, labels, protocol=C.CrossValidation(None))
    with pytest.raises(InputError, match="metric"):
        C.calibration_loss(labels, lp, lp, metric="ece")
    with pytest.raises(InputError, match="costs"):
        C.calibration_loss(labels, lp, lp, metric="bayes_ec")
    with pytest.raises(InputError, match="num_folds"):
        C.calibrate_cross_validated(lp, labels, key=jax.random.key(0), num_folds=1)
