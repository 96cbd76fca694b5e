"""The calibration/refinement split (``ecjax.refinement``) against psrcal.

psrcal trains the same affine calibrator on the test data (``AffineCalLogLoss``, ``AffineCalBrier``) and
evaluates its losses in float64: the total is psrcal's loss of the raw scores, the refinement its loss of its
calibrated scores (the minimum both optimizers reach, to 1e-4), and the calibration their difference.
"""

import numpy as np
import pytest
import torch
from scipy.special import log_softmax

import jax

import ecjax
from conftest import load_dataset
from ecjax import calibration as C
from ecjax.refinement import calibration_refinement
from psrcal import losses as psr_losses
from psrcal.calibration import AffineCalBrier, AffineCalLogLoss


def _psrcal(cls, loss, lp, labels):
    model = cls(torch.tensor(lp), torch.tensor(labels))
    model.train()
    with torch.no_grad():
        cal = model.calibrate(torch.tensor(lp))
    return (float(loss(torch.tensor(lp), torch.tensor(labels), norm=False)),
            float(loss(cal, torch.tensor(labels), norm=False)))


@pytest.mark.parametrize("metric, cls, loss", [("xe", AffineCalLogLoss, psr_losses.LogLoss),
                                               ("brier", AffineCalBrier, psr_losses.Brier)])
def test_train_on_test_split_matches_psrcal(metric, cls, loss):
    labels, scores, _ = load_dataset("sst2_gpt2")
    labels = labels.astype(np.int64)
    lp = log_softmax(scores.astype(np.float64), -1)
    res = calibration_refinement(labels, lp, protocol="train_on_test", metric=metric)
    total, refinement = _psrcal(cls, loss, lp, labels)
    np.testing.assert_allclose(float(res.total), total, rtol=1e-5)
    np.testing.assert_allclose(float(res.refinement), refinement, rtol=1e-4)
    np.testing.assert_allclose(float(res.calibration), total - refinement, rtol=1e-3)
    assert float(res.calibration) > 0.1 * float(res.total)  # GPT-2 zero-shot: badly calibrated
    # the identity, exactly as stored, and the relative part
    assert res.calibration == res.total - res.refinement
    np.testing.assert_allclose(float(res.calibration + res.refinement), float(res.total), rtol=2 ** -23)
    np.testing.assert_allclose(float(res.relative_calibration), 100 * (total - refinement) / total, rtol=1e-3)
    assert res.protocol == "train_on_test" and res.metric == metric


def test_cross_validated_split_is_diagnose_with_the_metric_as_the_loss():
    labels, scores, _ = load_dataset("pneumoniamnist_resnet50")
    key = jax.random.key(3)
    res = calibration_refinement(labels, scores, protocol=C.CrossValidation(key, 5), metric="brier")
    d = C.diagnose(scores, labels, protocol=C.CrossValidation(key, 5), metric="brier",
                   settings=C.FitSettings(loss="brier"))
    np.testing.assert_array_equal(res.calibrated_scores, d.calibrated_scores)
    labels64 = torch.tensor(labels.astype(np.int64))
    np.testing.assert_allclose(float(res.refinement), float(psr_losses.Brier(
        torch.tensor(np.asarray(res.calibrated_scores, np.float64)), labels64, norm=False)), rtol=1e-5)
    np.testing.assert_allclose(float(res.total), float(psr_losses.Brier(
        torch.tensor(scores.astype(np.float64)), labels64, norm=False)), rtol=1e-5)
    assert res.protocol == "cross_validation"


def test_other_metrics_raise_input_error():
    labels, scores, _ = load_dataset("pneumoniamnist_resnet50")
    with pytest.raises(ecjax.InputError, match="metric"):
        calibration_refinement(labels, scores, protocol="train_on_test", metric="bayes_ec")
