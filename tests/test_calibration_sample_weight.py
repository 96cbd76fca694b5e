"""Calibration with sample weights: an integer weight is the sample repeated (an independent fit on the
repeated data), the LLR calibration equals scikit-learn's logistic regression with the same sample_weight,
isotonic calibration scikit-learn's IsotonicRegression(sample_weight=), histogram binning the weighted
class-1 frequency of each bin (numpy)."""
import jax
import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss

from ecjax import calibration
from ecjax.inputs import InputError


def _data(n=300, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = 2.5 * np.eye(k)[y] + rng.normal(size=(n, k))
    return y, logits, rng.integers(0, 4, n)  # weights 0..3


@pytest.mark.parametrize("method", ["affine", "vector"])
def test_integer_weights_fit_as_repeated_samples(method):
    y, s, w = _data()
    weighted = calibration.fit(s, y, method=method, score_type="logits", sample_weight=w,
                               settings=calibration.FitSettings(tol=1e-7))
    repeated = calibration.fit(np.repeat(s, w, 0), np.repeat(y, w), method=method, score_type="logits",
                               settings=calibration.FitSettings(tol=1e-7))
    for name in weighted.params:
        np.testing.assert_allclose(weighted.params[name], repeated.params[name], rtol=1e-3, atol=1e-4)
    assert float(weighted.loss) == pytest.approx(float(repeated.loss), rel=1e-5)


def test_llr_calibration_with_weights_is_weighted_logistic_regression():
    # Equal priors from the weighted class totals (P_i / W_i per unit weight): scikit-learn's class_weight
    # "balanced" over the weights, with no penalty (ecjax's l2 set to 0).
    rng = np.random.default_rng(1)
    n = 400
    y = rng.integers(0, 2, n)
    llr = 3.0 * (y - 0.5) + rng.normal(size=n)
    w = rng.uniform(0.1, 2.0, n)
    cal = calibration.fit(llr, y, method="llr", score_type="llr", sample_weight=w, priors=[0.5, 0.5],
                          settings=calibration.FitSettings(l2=0.0, tol=1e-7))
    totals = np.bincount(y, weights=w)
    ref = LogisticRegression(penalty=None, tol=1e-10, max_iter=10_000).fit(
        llr[:, None], y, sample_weight=w * (0.5 / totals)[y])
    assert float(cal.params["scale"]) == pytest.approx(ref.coef_[0, 0], rel=1e-3)
    assert float(cal.params["bias"]) == pytest.approx(ref.intercept_[0], abs=2e-3)


# The folds' frequency weights reach the counting methods too (histogram: its equal-mass edges and counts).
@pytest.mark.parametrize("method,kw", [("affine", {"settings": calibration.FitSettings(tol=1e-7)}),
                                       ("histogram", {"settings": calibration.FitSettings(binning="equal_mass",
                                                                                          num_bins=6)})])
def test_cross_validation_passes_each_fold_its_weights(method, kw):
    y, s, w = _data(seed=2, k=3 if method == "affine" else 2)
    w = w * np.random.default_rng(3).uniform(0.5, 1.5, len(w))  # non-integer, some 0
    res = calibration.calibrate_cross_validated(s, y, key=jax.random.key(0), num_folds=3, score_type="logits",
                                                method=method, sample_weight=w, **kw)
    folds = np.asarray(res.folds)
    # Fold 0's calibrator is the weighted fit on the other folds, fitted here directly.
    train = folds != 0
    direct = calibration.fit(s[train], y[train], score_type="logits", method=method, sample_weight=w[train], **kw)
    np.testing.assert_allclose(np.asarray(res.scores)[folds == 0], np.asarray(direct.apply(s[folds == 0])),
                               atol=2e-4)
    # A histogram bin of one class (there is one here) is clipped, not log 0: on a GPU the fold gave -inf where the
    # direct fit gave -16.6 (x / x rounded differently); both are now log(ISOTONIC_CLIP) (issue 34).
    assert np.all(np.isfinite(np.asarray(res.scores)))


def test_bad_sample_weights_are_refused_by_name():
    y, s, w = _data(n=60)
    for bad in (-w - 1.0, w[:-1], np.where(np.arange(60) == 3, np.nan, 1.0)):
        with pytest.raises(InputError, match="sample_weight"):
            calibration.fit(s, y, score_type="logits", sample_weight=bad)
    with pytest.raises(InputError, match="class 1 has no samples of non-zero weight"):
        calibration.fit(s, y, score_type="logits", sample_weight=(y != 1).astype(float))
    b = (y > 0).astype(int)
    for method in ("isotonic", "histogram"):
        with pytest.raises(InputError, match="sample_weight"):
            calibration.fit(s[:, :2], b, method=method, score_type="logits", sample_weight=-w - 1.0)
        with pytest.raises(InputError, match="class 0 has no samples of non-zero weight"):
            calibration.fit(s[:, :2], b, method=method, score_type="logits", sample_weight=b.astype(float))


# ------------------------------------------------- the counting methods: isotonic and histogram

def _binary(n=240, seed=5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    z = np.round(rng.normal(size=n) + 1.5 * y - 0.5, 1)  # rounded: tied log-odds are pooled
    return y, z, np.stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)], 1)


@pytest.mark.parametrize("priors", [None, [0.3, 0.7]])
def test_weighted_isotonic_is_sklearn_isotonic_regression(priors):
    y, z, lp = _binary()
    u = np.random.default_rng(6).uniform(0.0, 3.0, len(y))
    u[:15] = 0.0  # absent samples
    cal = calibration.fit(lp, y, method="isotonic", priors=priors, sample_weight=u)
    # The objective's weights u_n P_i / W_i (P_i = W_i / W with data priors: proportional to u).
    totals = np.bincount(y, weights=u)
    p = totals / totals.sum() if priors is None else np.asarray(priors)
    ref = IsotonicRegression(out_of_bounds="clip").fit(z, y, sample_weight=u * (p / totals)[y])
    grid = np.linspace(-4, 4, 81)
    grid_lp = np.stack([-np.logaddexp(0.0, grid), -np.logaddexp(0.0, -grid)], 1)
    np.testing.assert_allclose(np.exp(np.asarray(cal.apply(grid_lp))[:, 1]),
                               np.clip(ref.predict(grid), calibration.ISOTONIC_CLIP, 1 - calibration.ISOTONIC_CLIP),
                               atol=1e-6)


@pytest.mark.parametrize("method,binning", [("isotonic", "equal_width"), ("histogram", "equal_mass")])
def test_counting_methods_with_integer_weights_fit_the_repeated_samples(method, binning):
    y, _, lp = _binary(seed=7)
    w = np.random.default_rng(7).integers(0, 4, len(y))  # 0 drops a sample, 3 triples it
    test_lp = _binary(n=81, seed=8)[2]  # the size of the grid above: its compiled apply is reused
    kw = dict(method=method, settings=calibration.FitSettings(binning=binning, num_bins=7))
    # The held-out protocol: fitted on (lp, y), applied to other scores.
    weighted = calibration.calibrate_held_out(lp, y, test_lp, sample_weight=w, **kw)
    repeated = calibration.calibrate_held_out(np.repeat(lp, w, 0), np.repeat(y, w), test_lp, **kw)
    np.testing.assert_allclose(np.asarray(weighted.scores), np.asarray(repeated.scores), rtol=1e-6, atol=1e-7)
    assert float(weighted.calibrator.loss) == pytest.approx(float(repeated.calibrator.loss), rel=1e-5)


def test_weighted_histogram_matches_numpy_bin_frequencies():
    y, _, lp = _binary(seed=9)
    u = np.random.default_rng(9).uniform(0.0, 2.0, len(y))
    p1 = np.exp(lp[:, 1])
    m = 6
    b = np.clip(np.searchsorted(np.linspace(0, 1, m + 1), p1, side="left") - 1, 0, m - 1)
    freq = np.bincount(b, weights=u * y, minlength=m) / np.bincount(b, weights=u, minlength=m)
    cal = calibration.fit(lp, y, method="histogram", sample_weight=u, settings=calibration.FitSettings(num_bins=m))
    filled = np.bincount(b, minlength=m) > 0
    np.testing.assert_allclose(np.asarray(cal.params["frequencies"])[filled, 1], freq[filled], rtol=1e-5)


def test_weighted_diagnosis_is_the_diagnosis_of_the_repeated_samples():
    y, _, lp = _binary(seed=7)  # the data, weights and settings of the test above: its compiled fits are reused
    w = np.random.default_rng(7).integers(0, 4, len(y))
    kw = dict(method="histogram", settings=calibration.FitSettings(binning="equal_mass", num_bins=7),
              protocol="train_on_test", metric="brier")
    weighted = calibration.diagnose(lp, y, sample_weight=w, **kw)
    repeated = calibration.diagnose(np.repeat(lp, w, 0), np.repeat(y, w), **kw)
    for name in ("raw", "calibrated", "absolute_loss", "relative_loss"):
        assert float(getattr(weighted, name)) == pytest.approx(float(getattr(repeated, name)), rel=1e-5), name
    # The raw Brier score against scikit-learn's weighted one (for K = 2 ecjax's mean over the two classes is
    # scikit-learn's binary Brier score).
    assert float(weighted.raw) == pytest.approx(
        brier_score_loss(y, np.exp(lp[:, 1]), sample_weight=w), rel=1e-5)
