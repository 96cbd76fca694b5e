"""Calibration with sample weights: an integer weight is the sample repeated (an independent fit on the
repeated data), and the LLR calibration equals scikit-learn's logistic regression with the same sample_weight."""
import jax
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

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
    weighted = calibration.fit(s, y, method=method, score_type="logits", sample_weight=w, tol=1e-7)
    repeated = calibration.fit(np.repeat(s, w, 0), np.repeat(y, w), method=method, score_type="logits", tol=1e-7)
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
    cal = calibration.fit(llr, y, method="llr", score_type="llr", sample_weight=w, priors=[0.5, 0.5], l2=0.0, tol=1e-7)
    totals = np.bincount(y, weights=w)
    ref = LogisticRegression(penalty=None, tol=1e-10, max_iter=10_000).fit(
        llr[:, None], y, sample_weight=w * (0.5 / totals)[y])
    assert float(cal.params["scale"]) == pytest.approx(ref.coef_[0, 0], rel=1e-3)
    assert float(cal.params["bias"]) == pytest.approx(ref.intercept_[0], abs=2e-3)


def test_cross_validation_passes_each_fold_its_weights():
    y, s, w = _data(seed=2)
    res = calibration.calibrate_cross_validated(s, y, key=jax.random.key(0), num_folds=3, score_type="logits",
                                                sample_weight=w, tol=1e-7)
    folds = np.asarray(res.folds)
    # Fold 0's calibrator is the weighted fit on the other folds, fitted here directly.
    train = folds != 0
    direct = calibration.fit(s[train], y[train], score_type="logits", sample_weight=w[train], tol=1e-7)
    np.testing.assert_allclose(np.asarray(res.scores)[folds == 0], np.asarray(direct.apply(s[folds == 0])),
                               atol=2e-4)


def test_bad_sample_weights_are_refused_by_name():
    y, s, w = _data(n=60)
    for bad in (-w - 1.0, w[:-1], np.where(np.arange(60) == 3, np.nan, 1.0)):
        with pytest.raises(InputError, match="sample_weight"):
            calibration.fit(s, y, score_type="logits", sample_weight=bad)
    with pytest.raises(InputError, match="class 1 has no samples of non-zero weight"):
        calibration.fit(s, y, score_type="logits", sample_weight=(y != 1).astype(float))
    b = (y > 0).astype(int)
    with pytest.raises(InputError, match="`sample_weight` is not supported by method='isotonic'"):
        calibration.fit(s[:, :2], b, method="isotonic", score_type="logits", sample_weight=w)
