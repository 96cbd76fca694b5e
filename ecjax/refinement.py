"""The calibration/refinement split of a proper scoring rule, in one call.

The expected value of a proper scoring rule (the cross-entropy, the Brier
score) splits into what a calibrator could remove and what it could not
(Ferrer & Ramos 2025, "Evaluating posterior probabilities: decision theory,
proper scoring rules, and calibration"; Berta, Holzmüller, Jordan & Bach
2025, "Rethinking early stopping: refine, then calibrate")::

    total       = EPSR(scores)                    (the score as it is)
    refinement  = EPSR(calibrated scores)         (what is left: the refinement error)
    calibration = total - refinement              (the calibration error)

with the calibrated scores from a calibrator trained on the same proper
scoring rule (``FitSettings(loss=metric)``) under a protocol:
cross-validated (honest), held-out, or trained on the test data itself
(Berta et al.'s estimate of the refinement: optimistic, a lower bound for
an expressive calibrator).  It is :func:`ecjax.calibration.diagnose` with
the calibrator's loss matched to the metric and the parts named.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
from jax.typing import ArrayLike

from ecjax import inputs as v

METRICS = ("xe", "brier")


class CalibrationRefinement(NamedTuple):
    """The split of one proper scoring rule (``total == calibration + refinement``; ``calibration`` is stored as
    ``total - refinement``).

    Attributes:
      metric: ``"xe"`` or ``"brier"``.
      protocol: ``"cross_validation"``, ``"held_out"`` or ``"train_on_test"``.
      total: the EPSR of the scores.
      calibration: the calibration error, ``total - refinement``.
      refinement: the EPSR of the calibrated scores.
      relative_calibration: ``100 calibration / total``, in percent (Ferrer 2022b, eq. 60).
      calibrated_scores: ``(N, K)`` log-posteriors of the calibrator.
      calibrator: the fitted :class:`~ecjax.calibration.Calibrator` (the last fold's under cross-validation).
    """

    metric: str
    protocol: str
    total: jax.Array
    calibration: jax.Array
    refinement: jax.Array
    relative_calibration: jax.Array
    calibrated_scores: jax.Array
    calibrator: Any


def calibration_refinement(labels: ArrayLike, scores: ArrayLike, *, protocol: Any, metric: str = "xe",
                           method: str = "affine", priors: ArrayLike | None = None,
                           score_type: str = "log_posteriors",
                           sample_weight: ArrayLike | None = None) -> CalibrationRefinement:
    """Split the expected ``metric`` of ``scores`` into calibration and refinement (module docstring).

    Args:
      labels: ``(N,)`` true classes.
      scores: ``(N, K)`` scores of ``score_type``.
      protocol: :class:`ecjax.calibration.CrossValidation` ``(key, num_folds=5)``,
        :class:`ecjax.calibration.HeldOut` ``(train_scores, train_labels)`` or ``"train_on_test"``.
      metric: the proper scoring rule: ``"xe"`` (cross-entropy, nats) or ``"brier"``; the calibrator is
        trained on it.
      method: the calibrator (:func:`ecjax.calibration.fit`), ``"affine"`` by default.
      priors: evaluation (and training) priors; default the data priors.
      score_type: any of :data:`ecjax.inputs.SCORE_TYPES` but ``"llr"``.
      sample_weight: optional ``(N,)`` frequency weights of the samples.

    Returns:
      :class:`CalibrationRefinement`.
    """
    from ecjax import calibration  # optax loads on first use

    v.check_choice(metric, "metric", METRICS)
    d = calibration.diagnose(scores, labels, protocol=protocol, metric=metric, priors=priors,
                             score_type=score_type, sample_weight=sample_weight, method=method,
                             settings=calibration.FitSettings(loss=metric))
    return CalibrationRefinement(metric=metric, protocol=d.protocol, total=d.raw, calibration=d.raw - d.calibrated,
                                 refinement=d.calibrated, relative_calibration=d.relative_loss,
                                 calibrated_scores=d.calibrated_scores, calibrator=d.calibrator)
