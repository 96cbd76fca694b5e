"""Isotonic (PAV) and beta calibration: ``ecjax.calibration.fit(method="isotonic" | "beta")`` and its protocols.

References, never ecjax itself: ``sklearn.isotonic.IsotonicRegression(out_of_bounds="clip")`` fitted on the
class-1 log-odds with the same sample weights ``P_i / N_i``, and scikit-learn's unregularized
``LogisticRegression`` on the beta-calibration features ``[log p, -log(1 - p)]`` (Kull et al. 2017; the betacal
package is not installed, so its rule for a negative coefficient -- refit without that feature -- is done here
with a one-feature scikit-learn fit).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, log_softmax
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

import jax
import jax.numpy as jnp

from ecjax import InputError
from ecjax import calibration as C

from conftest import load_dataset

N = 624  # the size of pneumoniamnist: the synthetic sets share it, so one compiled fit serves them all
CLIP = 1e-6  # documented clip of the isotonic outputs (C.ISOTONIC_CLIP)


def _pneumonia():
    labels, scores, st = load_dataset("pneumoniamnist_resnet50")
    lp = log_softmax(scores.astype(np.float64), 1)
    return labels.astype(np.int64), scores, st, lp[:, 1] - lp[:, 0]


def _ties():
    """Posteriors on a 0.01 grid (about 90 distinct values for 624 samples), miscalibrated: many exact ties."""
    rng = np.random.default_rng(4)
    p = np.clip(np.round(rng.beta(2.0, 2.0, N), 2), 0.01, 0.99)
    labels = (rng.uniform(size=N) < p**1.7).astype(np.int64)
    return labels, np.stack([1 - p, p], 1), "probabilities", np.log(p) - np.log1p(-p)


def _log_posteriors_at(log_odds):
    return np.stack([-np.logaddexp(0, log_odds), -np.logaddexp(0, -log_odds)], 1)


def _sample_weights(labels, priors):
    n_i = np.bincount(labels, minlength=2)
    p = n_i / n_i.sum() if priors is None else np.asarray(priors)
    return (p / n_i)[labels]


def _sklearn_slope(ir, z):
    """|slope| of sklearn's piecewise-linear fit at ``z`` (0 outside its knots)."""
    x, y = ir.X_thresholds_, ir.y_thresholds_
    i = np.clip(np.searchsorted(x, z, side="right"), 1, len(x) - 1)
    return np.where((z < x[0]) | (z > x[-1]), 0.0, np.abs(y[i] - y[i - 1]) / (x[i] - x[i - 1]))


# ---------------------------------------------------------------- isotonic

@pytest.mark.parametrize("data", [_pneumonia, _ties], ids=["pneumoniamnist", "tie_heavy"])
@pytest.mark.parametrize("priors", [None, (0.3, 0.7)])
def test_isotonic_fitted_values_equal_sklearn(data, priors):
    labels, scores, st, z = data()
    cal = C.fit(scores, labels, method="isotonic", priors=priors, score_type=st)
    ir = IsotonicRegression(out_of_bounds="clip").fit(z, labels, sample_weight=_sample_weights(labels, priors))
    knots = np.unique(z)
    g = len(knots)
    th = np.asarray(cal.params["thresholds"], np.float64)
    fr = np.asarray(cal.params["frequencies"], np.float64)
    assert th.shape == (N,) and fr.shape == (N, 2)
    # The knots are the distinct training log-odds (float32), then the last repeated.
    np.testing.assert_allclose(th[:g], knots, rtol=1e-5, atol=1e-5)
    assert np.all(th[g:] == th[g - 1])
    # Fitted values (unclipped) at every knot: sklearn's isotonic fit there.
    np.testing.assert_allclose(fr[:g, 1], ir.predict(knots), atol=1e-6)
    np.testing.assert_allclose(fr[:g, 0], 1 - ir.predict(knots), atol=1e-6)
    # The training samples get the same fitted values (clipped as documented).
    out = np.exp(np.asarray(cal.apply(scores, score_type=st), np.float64))
    np.testing.assert_allclose(out[:, 1], np.clip(ir.predict(z), CLIP, 1 - CLIP), atol=1e-6)
    assert bool(cal.converged) and int(cal.num_iterations) == 0


def test_isotonic_interpolates_linearly_between_knots_and_clips_beyond():
    labels, scores, st, z = _pneumonia()
    cal = C.fit(scores, labels, method="isotonic", score_type=st)
    ir = IsotonicRegression(out_of_bounds="clip").fit(z, labels)
    knots = np.unique(z)
    mids = 0.5 * (knots[1:] + knots[:-1])
    new = np.r_[mids, knots[0] - 5.0, knots[-1] + 5.0, 0.25 * knots[1:] + 0.75 * knots[:-1]]
    ours = np.exp(np.asarray(cal.apply(_log_posteriors_at(new)), np.float64))[:, 1]
    ref = np.clip(ir.predict(new), CLIP, 1 - CLIP)
    # ecjax sees the float32 log-odds (rounded by ~3e-7 (1 + |z|)): allowed error = that times the local slope.
    tol = 1e-6 + _sklearn_slope(ir, new) * 1e-6 * (1 + np.abs(new))
    assert np.all(np.abs(ours - ref) <= tol), np.max(np.abs(ours - ref) - tol)
    # A step function (the value of the knot below) would fail this comparison: the check sees interpolation.
    below = ir.predict(knots[np.searchsorted(knots, mids) - 1])
    assert np.max(np.abs(np.clip(below, CLIP, 1 - CLIP) - ref[: len(mids)])) > 1e-2
    # The ends of the fit are pure (all one class): without the clip they would be log 0 = -inf.
    assert ir.predict([knots[0]])[0] == 0.0 and ir.predict([knots[-1]])[0] == 1.0
    lp_out = np.asarray(cal.apply(_log_posteriors_at(np.array([knots[0] - 5.0, knots[-1] + 5.0]))), np.float64)
    np.testing.assert_allclose(lp_out, [[np.log1p(-CLIP), np.log(CLIP)], [np.log(CLIP), np.log1p(-CLIP)]], rtol=1e-6)
    # The reported loss is the cross-entropy of the clipped training outputs.
    p_train = np.clip(ir.predict(z), CLIP, 1 - CLIP)
    xe = -np.mean(np.where(labels == 1, np.log(p_train), np.log1p(-p_train)))
    np.testing.assert_allclose(float(cal.loss), xe, rtol=1e-5)


# -------------------------------------------------------------------- beta

def _beta_reference(lp, labels, priors=None, features=(0, 1)):
    """sklearn's unregularized logistic regression on the chosen features of ``[log p, -log(1 - p)]``."""
    x = np.stack([lp[:, 1], -lp[:, 0]], 1)[:, list(features)]
    lr = LogisticRegression(penalty=None, tol=1e-10, max_iter=10_000)
    lr.fit(x, labels, sample_weight=_sample_weights(labels, priors))
    coef = np.zeros(2)
    coef[list(features)] = lr.coef_[0]
    return coef, lr.intercept_[0]


@pytest.mark.parametrize("priors", [None, (0.6, 0.4)])
def test_beta_calibration_is_logistic_regression_on_log_p_and_log_1_minus_p(priors):
    labels, scores, st, _ = _pneumonia()
    lp = log_softmax(scores.astype(np.float64), 1)
    (a, b), c = _beta_reference(lp, labels, priors)
    assert a > 0 and b > 0  # the unconstrained optimum is allowed
    cal = C.fit(scores, labels, method="beta", priors=priors, score_type=st, settings=C.FitSettings(tol=1e-7))
    np.testing.assert_allclose(np.asarray(cal.params["scale"]), [a, b], rtol=1e-3)
    np.testing.assert_allclose(float(cal.params["bias"]), c, atol=2e-3)
    ours = np.exp(np.asarray(cal.apply(scores, score_type=st), np.float64))[:, 1]
    np.testing.assert_allclose(ours, expit(a * lp[:, 1] - b * lp[:, 0] + c), atol=1e-4)
    assert bool(cal.converged)


def test_beta_drops_a_negative_coefficient_as_betacal():
    # Real data where the free fit has a < 0 (GPT-2 four-shot on SST-2, its last N samples): refit on
    # -log(1 - p) alone, a = 0.
    labels, scores, st = load_dataset("sst2_gpt2_4shot")
    labels, scores = labels[-N:].astype(np.int64), scores[-N:]
    lp = log_softmax(scores.astype(np.float64), 1)
    assert _beta_reference(lp, labels)[0][0] < 0
    (a, b), c = _beta_reference(lp, labels, features=(1,))
    cal = C.fit(scores, labels, method="beta", score_type=st, settings=C.FitSettings(tol=1e-7))
    assert float(cal.params["scale"][0]) == 0.0
    np.testing.assert_allclose([float(cal.params["scale"][1]), float(cal.params["bias"])], [b, c], rtol=1e-3)
    # Synthetic data drawn with b = -1 < 0 (a = 1.5): refit on log p alone, b = 0.
    rng = np.random.default_rng(7)
    p = rng.uniform(0.02, 0.98, N)
    y = (rng.uniform(size=N) < expit(0.3 + 1.5 * np.log(p) + 1.0 * np.log1p(-p))).astype(np.int64)
    lp = np.log(np.stack([1 - p, p], 1))
    assert _beta_reference(lp, y)[0][1] < 0
    (a, b), c = _beta_reference(lp, y, features=(0,))
    cal = C.fit(lp, y, method="beta", settings=C.FitSettings(tol=1e-7))
    assert float(cal.params["scale"][1]) == 0.0
    np.testing.assert_allclose([float(cal.params["scale"][0]), float(cal.params["bias"])], [a, c], rtol=1e-3)
    np.testing.assert_allclose(np.exp(np.asarray(cal.apply(lp), np.float64))[:, 1], expit(a * lp[:, 1] + c),
                               atol=1e-4)


# --------------------------------------------------------------- protocols

# Beta inside cross-validation compiles the two-stage L-BFGS fit once more, inside lax.map (3-8 s on a shared
# 2-core machine): slow lane.  The fast lane runs the same protocol code with isotonic calibration, and beta's
# fit itself above.
@pytest.mark.parametrize("method", ["isotonic", pytest.param("beta", marks=pytest.mark.slow)])
def test_cross_validation_fold_equals_a_direct_fit_on_its_training_part(method):
    labels, scores, st, z = _pneumonia()
    lp = log_softmax(scores.astype(np.float64), 1)
    res = C.calibrate_cross_validated(scores, labels, key=jax.random.key(0), num_folds=3, method=method, score_type=st,
                                      settings=C.FitSettings(tol=1e-7))
    assert res.protocol == "cross_validation" and np.all(np.asarray(res.calibrator.converged))
    folds = np.asarray(res.folds)
    out = np.exp(np.asarray(res.scores, np.float64))[:, 1]
    f = 1
    train, test = folds != f, folds == f
    if method == "isotonic":
        ir = IsotonicRegression(out_of_bounds="clip").fit(z[train], labels[train])
        ref = np.clip(ir.predict(z[test]), CLIP, 1 - CLIP)
        tol = 1e-6 + _sklearn_slope(ir, z[test]) * 1e-6 * (1 + np.abs(z[test]))
        assert np.all(np.abs(out[test] - ref) <= tol)
    else:
        (a, b), c = _beta_reference(lp[train], labels[train])
        np.testing.assert_allclose(out[test], expit(a * lp[test, 1] - b * lp[test, 0] + c), atol=1e-4)
    # This fold's calibrator, taken out of the stacked pytree, applied by hand and under jit: the same scores.
    cal_f = jax.tree_util.tree_map(lambda x: x[f], res.calibrator)
    x = jnp.asarray(scores[test], jnp.float32)
    jitted = jax.jit(lambda cal, s: cal.apply(s, score_type=st))(cal_f, x)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(res.scores)[test], atol=1e-6)


def test_held_out_protocol_with_isotonic_calibration():
    labels, scores, st, z = _ties()
    p_new = np.arange(1, 100) / 100  # every grid value, some never seen in training (interpolated)
    ho = C.calibrate_held_out(scores, labels, np.stack([1 - p_new, p_new], 1), method="isotonic", score_type=st)
    assert not ho.optimistic and ho.protocol == "held_out"
    ir = IsotonicRegression(out_of_bounds="clip").fit(z, labels)
    z_new = np.log(p_new) - np.log1p(-p_new)
    tol = 1e-6 + _sklearn_slope(ir, z_new) * 1e-6 * (1 + np.abs(z_new))
    assert np.all(np.abs(np.exp(np.asarray(ho.scores, np.float64))[:, 1] - np.clip(ir.predict(z_new), CLIP, 1 - CLIP))
                  <= tol)


def test_bad_inputs_name_the_argument():
    rng = np.random.default_rng(5)
    lp3 = log_softmax(rng.normal(size=(60, 3)), 1)
    labels3 = np.arange(60) % 3
    with pytest.raises(InputError, match="method='beta' is for binary scores"):
        C.fit(lp3, labels3, method="beta")  # (isotonic is one-vs-rest for K > 2: tests/test_calibration_multiclass.py)
    for method in ("isotonic", "beta"):
        with pytest.raises(InputError, match="method='llr'"):
            C.fit(rng.normal(size=60), labels3 % 2, method=method, score_type="llr")
        with pytest.raises(InputError, match="no samples"):
            C.fit(lp3[:, :2] - np.logaddexp(lp3[:, :1], lp3[:, 1:2]), np.zeros(60, int), method=method)
        with pytest.raises(InputError, match="same number"):
            C.fit(lp3[:, :2] - np.logaddexp(lp3[:, :1], lp3[:, 1:2]), labels3[:50] % 2, method=method)
