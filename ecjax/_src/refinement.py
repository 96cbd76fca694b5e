"""What a calibrator changes in an evaluation of scores: the calibration/refinement split of a proper scoring rule,
and the threshold a metric picks on calibrated scores (the cost ratio it implies, honestly).

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

from ecjax._src import inputs as v
from ecjax._src.scores.thresholds import MetricThreshold, optimal_metric_threshold

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
      score_type: any of :data:`~ecjax._src.inputs.SCORE_TYPES` but ``"llr"``.
      sample_weight: optional ``(N,)`` frequency weights of the samples.

    Returns:
      :class:`CalibrationRefinement`.
    """
    from ecjax._src import calibration  # optax loads on first use

    v.check_choice(metric, "metric", METRICS)
    d = calibration.diagnose(scores, labels, protocol=protocol, metric=metric, priors=priors,
                             score_type=score_type, sample_weight=sample_weight, method=method,
                             settings=calibration.FitSettings(loss=metric))
    return CalibrationRefinement(metric=metric, protocol=d.protocol, total=d.raw, calibration=d.raw - d.calibrated,
                                 refinement=d.calibrated, relative_calibration=d.relative_loss,
                                 calibrated_scores=d.calibrated_scores, calibrator=d.calibrator)


def calibrated_metric_threshold(labels: ArrayLike, scores: ArrayLike, *, protocol: Any, metric: str = "f1",
                                beta: float = 1.0, method: str = "affine", score_type: str = "log_posteriors",
                                priors: ArrayLike | None = None,
                                sample_weight: ArrayLike | None = None) -> MetricThreshold:
    """:func:`~ecjax.scores.optimal_metric_threshold` of the scores after calibration: the cost ratio a metric implies, honestly.

    A threshold is the Bayes threshold of ``r = exp(-t)`` only where the
    posteriors are calibrated (Ferrer 2025, §4.1): on raw scores the
    ``implied_cost_ratio`` of :func:`~ecjax.scores.optimal_metric_threshold` is the ratio
    the *scores* would imply if they were probabilities (SST-2's GPT-2: 0.273
    raw, 1.41 after an in-sample affine fit of the same cut).  This
    calibrates ``scores`` under ``protocol`` (:func:`ecjax.calibration.calibrate`:
    ``calibration.CrossValidation(key)`` for an honest estimate,
    ``"train_on_test"`` to map the raw cut itself) with ``method``
    (``"llr"`` for LLR scores, whose output stays LLRs), then finds the
    metric's best cut on the calibrated scores and the costs it implies.
    With a monotone calibrator fitted on all the data (``"train_on_test"``)
    the decisions are those of the raw cut; cross-validated, each fold's map
    differs a little, so the cut may move by a few samples.

    Args:
      protocol: ``calibration.CrossValidation(key, num_folds)``,
        ``calibration.HeldOut(train_scores, train_labels)`` or
        ``"train_on_test"``.
      method: the calibrator (:data:`ecjax.calibration.METHODS`; default
        ``"affine"``, Platt scaling of binary scores).
      others: as in :func:`~ecjax.scores.optimal_metric_threshold`; ``priors`` weigh the
      implied NEC (the calibrator is fitted with the data priors).

    Returns:
      :class:`~ecjax.scores.MetricThreshold` on the scale of the calibrated scores
      (posterior log-odds, or LLRs for ``score_type="llr"``).
    """
    from ecjax._src import calibration  # optax: only on this path

    method = "llr" if score_type == "llr" else method
    res = calibration.calibrate(scores, labels, protocol=protocol, method=method, score_type=score_type,
                                sample_weight=sample_weight)
    out_type = calibration.CALIBRATORS[method].output_type
    return optimal_metric_threshold(labels, res.scores, metric=metric, beta=beta, score_type=out_type,
                                    priors=priors, sample_weight=sample_weight)
