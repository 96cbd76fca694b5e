"""Multiclass calibrators beyond the affine family: one-vs-rest isotonic and Dirichlet calibration (issue 36 item 5).

References, never ecjax itself: scikit-learn's ``CalibratedClassifierCV(method="isotonic")`` (one isotonic
regression per class on that class's decision values, outputs divided by their sum) fed the one-vs-rest log-odds
as decision values, and a float64 numpy/scipy L-BFGS-B fit of the ODIR-penalized objective of Kull et al. (2019).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_softmax, logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV

import jax

from ecjax import InputError, cli
from ecjax import calibration as C
from ecjax._src.decisions import one_vs_rest_log_odds
from ecjax._src.calibrators.maps import MAPS
from ecjax.calibrator_files import save_calibrator
from ecjax._src.calibrator_files import load_calibrator
from ecjax._src.cli.options import CALIBRATE_METHODS

from conftest import load_dataset

CLIP = C.ISOTONIC_CLIP
# Every default-lane fit here has N samples of K = 4 classes, so that one compiled program per method serves them.
N = 600


def _miscalibrated(n, k, seed, temperature=2.5):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = 1.5 * rng.normal(size=(n, k))
    logits[np.arange(n), labels] += 1.0
    return labels, log_softmax(temperature * logits, 1)


def _one_vs_rest_log_odds_float64(log_post):
    """``log p_k - log(sum_{j != k} p_j)`` in float64, summing the others directly."""
    k = log_post.shape[1]
    others = np.stack([logsumexp(np.delete(log_post, i, axis=1), axis=1) for i in range(k)], 1)
    return log_post - others


class _DecisionValues(ClassifierMixin, BaseEstimator):
    """A 'prefit' classifier whose decision function is its input: scikit-learn calibrates the given columns."""

    def fit(self, x, y):
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, x):
        return x


def _sklearn_isotonic(train_x, train_y, test_x, sample_weight=None):
    model = CalibratedClassifierCV(_DecisionValues().fit(train_x, train_y), cv="prefit", method="isotonic")
    return model.fit(train_x, train_y, sample_weight=sample_weight).predict_proba(test_x)


# The documented clip moves each of the K one-vs-rest outputs by at most CLIP before they are divided by their sum
# (which is >= the largest output, >= 1/K... of the unclipped ones only when they sum to about 1): a posterior moves
# by at most about 2 K CLIP; float32 rounding of the interpolation adds ~1e-6.
def _isotonic_tolerance(k):
    return 2 * k * CLIP + 2e-6


def test_one_vs_rest_log_odds_keep_their_digits():
    lp = log_softmax(np.array([[30.0, 0.0, -5.0], [1.0, 1.0, -2.0], [0.2, -0.1, 0.0], [-40.0, 3.0, 2.0]]), 1)
    got = np.asarray(one_vs_rest_log_odds(lp.astype(np.float32)), np.float64)
    want = _one_vs_rest_log_odds_float64(lp)
    # Row 0: p_0 rounds to 1 in float32, yet the log-odds 30 - log(1 + e^-5) stays finite and exact.
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("priors", [None, [0.4, 0.3, 0.2, 0.1]])
def test_one_vs_rest_isotonic_is_scikit_learns(priors):
    labels, lp = _miscalibrated(N + 300, 4, seed=1)
    train, test = slice(0, N), slice(N, None)
    cal = C.fit(lp[train], labels[train], method="isotonic", priors=priors)
    got_train = np.exp(np.asarray(cal.apply(lp[train]), np.float64))
    got_test = np.exp(np.asarray(cal.apply(lp[test]), np.float64))
    x = _one_vs_rest_log_odds_float64(lp)
    n_i = np.bincount(labels[train], minlength=4)
    weight = None if priors is None else (np.asarray(priors) / n_i)[labels[train]]
    np.testing.assert_allclose(got_train, _sklearn_isotonic(x[train], labels[train], x[train], weight),
                               atol=_isotonic_tolerance(4))
    # Held out: linear between the knots of each class's fit, constant beyond them, as scikit-learn's.
    np.testing.assert_allclose(got_test, _sklearn_isotonic(x[train], labels[train], x[test], weight),
                               atol=_isotonic_tolerance(4))
    np.testing.assert_allclose(got_test.sum(1), 1.0, atol=1e-6)


@pytest.mark.slow  # compiles a K = 10 fit (about 20 s); the K = 4 tests above check the same code
def test_one_vs_rest_isotonic_on_cifar10():
    labels, scores, st = load_dataset("cifar10_resnet-20")
    lp = log_softmax(scores[:3000].astype(np.float64), 1)
    labels = labels[:3000].astype(np.int64)
    cal = C.fit(lp[:2000].astype(np.float32), labels[:2000], method="isotonic")
    got = np.exp(np.asarray(cal.apply(lp[2000:].astype(np.float32)), np.float64))
    x = _one_vs_rest_log_odds_float64(lp)
    np.testing.assert_allclose(got, _sklearn_isotonic(x[:2000], labels[:2000], x[2000:]), atol=_isotonic_tolerance(10))


def test_one_vs_rest_isotonic_cross_validated_fold_by_fold():
    labels, lp = _miscalibrated(N, 4, seed=2)
    res = C.calibrate_cross_validated(lp, labels, key=jax.random.key(3), num_folds=3, method="isotonic")
    folds = np.asarray(res.folds)
    x = _one_vs_rest_log_odds_float64(lp)
    got = np.exp(np.asarray(res.scores, np.float64))
    for f in range(3):
        held = folds == f
        want = _sklearn_isotonic(x[~held], labels[~held], x[held])
        np.testing.assert_allclose(got[held], want, atol=_isotonic_tolerance(4))


def _odir_objective_float64(log_post, labels, lam, mu, weights):
    """Kull et al. (2019)'s ODIR objective in float64, with its gradient: the weighted mean cross-entropy of
    ``log_softmax(W s + b)`` plus ``lam / (K (K - 1)) sum_{i != j} W_ij^2 + mu / K sum_j b_j^2``."""
    n, k = log_post.shape
    onehot = np.eye(k)[labels]

    def value_and_grad(theta):
        w, b = theta[:k * k].reshape(k, k), theta[k * k:]
        z = log_post @ w.T + b
        lp = z - logsumexp(z, axis=1, keepdims=True)
        xe = -np.sum(weights * np.sum(onehot * lp, 1))
        off = w - np.diag(np.diag(w))
        value = xe + lam * np.sum(off**2) / (k * (k - 1)) + mu * np.sum(b**2) / k
        g = weights[:, None] * (np.exp(lp) - onehot)
        grad_w = g.T @ log_post + 2 * lam * off / (k * (k - 1))
        return value, np.concatenate([grad_w.ravel(), g.sum(0) + 2 * mu * b / k])

    return value_and_grad


@pytest.mark.parametrize("priors", [None, [0.1, 0.2, 0.3, 0.4]])
def test_dirichlet_calibration_is_the_odir_optimum(priors):
    labels, lp = _miscalibrated(N, 4, seed=4)
    k, lam, mu = 4, 0.05, 0.02
    settings = C.FitSettings(off_diagonal_l2=lam, intercept_l2=mu, max_iter=1000)
    cal = C.fit(lp.astype(np.float32), labels, method="dirichlet", priors=priors, settings=settings)
    assert bool(cal.converged)
    n_i = np.bincount(labels, minlength=k)
    p = n_i / n_i.sum() if priors is None else np.asarray(priors)
    objective = _odir_objective_float64(lp, labels, lam, mu, (p / n_i)[labels])
    ref = minimize(objective, np.concatenate([np.eye(k).ravel(), np.zeros(k)]), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000})
    theta = np.concatenate([np.asarray(cal.params["weight"], np.float64).ravel(),
                            np.asarray(cal.params["bias"], np.float64)])
    # The fit stops at a float32 gradient norm below 1e-5: its objective is the optimum's to float32 resolution.
    assert objective(theta)[0] - ref.fun <= 1e-6 * ref.fun
    want = np.exp(log_softmax(lp @ ref.x[:k * k].reshape(k, k).T + ref.x[k * k:], 1))
    np.testing.assert_allclose(np.exp(np.asarray(cal.apply(lp.astype(np.float32)), np.float64)), want, atol=2e-4)


def test_dirichlet_penalties_are_checked():
    with pytest.raises(InputError, match="off_diagonal_l2"):
        C.FitSettings(off_diagonal_l2=-1.0)
    with pytest.raises(InputError, match="intercept_l2"):
        C.FitSettings(intercept_l2=float("nan"))


@pytest.mark.parametrize("method", ["isotonic", "dirichlet"])
def test_multiclass_calibrators_round_trip_their_files(tmp_path, method):
    labels, lp = _miscalibrated(N, 4, seed=5)
    # The settings of the test above: the same compiled fit.
    settings = C.FitSettings(off_diagonal_l2=0.05, intercept_l2=0.02, max_iter=1000)
    cal = C.fit(lp.astype(np.float32), labels, method=method, settings=settings)
    save_calibrator(cal, tmp_path / "cal.json")
    back = load_calibrator(tmp_path / "cal.json")
    np.testing.assert_array_equal(np.asarray(back.apply(lp)), np.asarray(cal.apply(lp)))


def test_calibrate_command_offers_every_calibrator():
    assert set(CALIBRATE_METHODS) == set(C.METHODS) - {"llr"}


def test_calibrate_command_fits_one_vs_rest_isotonic(tmp_path, monkeypatch):
    labels, lp = _miscalibrated(N, 4, seed=6)
    monkeypatch.chdir(tmp_path)
    np.save("s.npy", lp.astype(np.float32))
    np.save("y.npy", labels)
    assert cli.main(["calibrate", "--scores", "s.npy", "--labels", "y.npy", "--method", "isotonic",
                     "--output", "out.npy"]) == 0  # fitted on --scores itself (train-on-test)
    x = _one_vs_rest_log_odds_float64(lp)
    np.testing.assert_allclose(np.exp(np.load("out.npy")), _sklearn_isotonic(x, labels, x),
                               atol=_isotonic_tolerance(4))


def test_every_method_is_a_map_or_counted():
    # Each calibrator is one row of the table of maps, or one of the counting methods: none is branched elsewhere.
    assert set(MAPS) | set(C.NON_ITERATIVE_METHODS) == set(C.METHODS)
    assert not set(MAPS) & set(C.NON_ITERATIVE_METHODS)
