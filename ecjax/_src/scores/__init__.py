"""Scores (posteriors, log-odds, LLRs) judged against labels, one module per question asked of them.

As scikit-learn splits its metrics by input kind, this package holds every evaluation that starts from scores, split
by the question it answers:

* :mod:`~ecjax._src.scores.inputs`: the canonical labels, log-domain scores, weights and priors all of them start from;
* :mod:`~ecjax._src.scores.scoring_rules`: proper scoring rules (cross-entropy,
  Brier score);
* :mod:`~ecjax._src.scores.roc`: the ranking alone (ROC; the binary, one-vs-rest
  and one-vs-one AUCs; EER; operating points);
* :mod:`~ecjax._src.scores.ranking_curves`: the other ranking curves
  (precision-recall, DET, average precision);
* :mod:`~ecjax._src.scores.bayes_decisions`: the EC of the Bayes decisions the
  scores make for a cost matrix, and of the best threshold; Bayes-risk and
  decision curves;
* :mod:`~ecjax.scores.sample_costs`: the same under per-sample costs (one
  cost matrix per sample), of decisions and of scores; its names stay in
  ``ecjax.scores.sample_costs``;
* :mod:`~ecjax._src.scores.thresholds`: the thresholds F-beta, MCC or Youden's J
  choose, and the costs they imply;
* :mod:`~ecjax._src.scores.calibration_errors`: the binned calibration errors
  (ECE, MCE, RMS, classwise ECE, ACE), the bins they share, reliability bins
  and bands;
* :mod:`~ecjax._src.scores.smooth_calibration_error`: the smooth ECE;
* :mod:`~ecjax._src.scores.risk_coverage`: risk-coverage curves for abstention.

All take ``(labels, scores, ..., *, priors, score_type, sample_weight)``
and start from the canonical inputs of :mod:`~ecjax._src.scores.inputs`.  Every
evaluation users call, with its result type, is importable from ``ecjax.scores``.
"""


from ecjax._src.scores.bayes_decisions import (
    BayesRiskCurve,
    DecisionCurve,
    bayes_risk_curve,
    decision_curve,
    bayes_expected_cost,
    expected_cost_vs_threshold,
    optimal_threshold_expected_cost,
    sorted_threshold_expected_costs,
    OptimalThreshold,
    ThresholdCurve,
)
from ecjax._src.scores.scoring_rules import (
    class_weights,
    cross_entropy_kernel,
    brier_kernel,
    naive_cross_entropy,
    naive_brier,
    cross_entropy,
    brier,
)
from ecjax._src.scores.roc import (
    AUC_AVERAGES,
    auc_one_vs_one,
    SortedScores,
    sort_scores,
    sorted_weighted_auc,
    sorted_weighted_eer,
    weighted_rates_at_cuts,
    eer_of_rates,
    rates_at_cuts,
    cut_threshold,
    roc_curve,
    weighted_auc_kernel,
    auc,
    auc_one_vs_rest,
    eer,
    OperatingPoint,
    specificity_at_sensitivity,
    SensitivityTargetNEC,
    nec_for_target_sensitivity,
)
from ecjax._src.scores.ranking_curves import (
    DetCurve,
    PrecisionRecallCurve,
    average_precision,
    det_curve,
    precision_recall_curve,
)
from ecjax._src.scores.thresholds import MetricThreshold, optimal_metric_threshold
from ecjax._src.scores.calibration_errors import (
    ECE_BINNINGS,
    ECE_VARIANTS,
    BinSums,
    ReliabilityBins,
    bin_indices,
    bin_sums,
    confidence_and_hit,
    ece,
    ece_kernel,
    equal_mass_upper_edges,
    reliability_bins,
    ReliabilityBands,
    adaptive_calibration_error,
    binned_calibration_error,
    binomial_interval,
    classwise_ece,
    max_calibration_error,
    reliability_bands,
    rms_calibration_error,
)
from ecjax._src.scores.smooth_calibration_error import SmoothECE, smooth_ece, smooth_ece_kernel
from ecjax._src.scores.risk_coverage import RiskCoverageCurve, risk_coverage_curve, risk_coverage_kernel

__all__ = [
    "AUC_AVERAGES",
    "BayesRiskCurve",
    "BinSums",
    "DecisionCurve",
    "DetCurve",
    "ECE_BINNINGS",
    "ECE_VARIANTS",
    "MetricThreshold",
    "OperatingPoint",
    "OptimalThreshold",
    "PrecisionRecallCurve",
    "ReliabilityBands",
    "ReliabilityBins",
    "RiskCoverageCurve",
    "SensitivityTargetNEC",
    "SmoothECE",
    "SortedScores",
    "ThresholdCurve",
    "adaptive_calibration_error",
    "auc",
    "auc_one_vs_one",
    "auc_one_vs_rest",
    "average_precision",
    "bayes_expected_cost",
    "bayes_risk_curve",
    "bin_indices",
    "bin_sums",
    "binned_calibration_error",
    "binomial_interval",
    "brier",
    "brier_kernel",
    "class_weights",
    "classwise_ece",
    "confidence_and_hit",
    "cross_entropy",
    "cross_entropy_kernel",
    "cut_threshold",
    "decision_curve",
    "det_curve",
    "ece",
    "ece_kernel",
    "eer",
    "eer_of_rates",
    "equal_mass_upper_edges",
    "expected_cost_vs_threshold",
    "max_calibration_error",
    "naive_brier",
    "naive_cross_entropy",
    "nec_for_target_sensitivity",
    "optimal_metric_threshold",
    "optimal_threshold_expected_cost",
    "precision_recall_curve",
    "rates_at_cuts",
    "reliability_bands",
    "reliability_bins",
    "risk_coverage_curve",
    "risk_coverage_kernel",
    "rms_calibration_error",
    "roc_curve",
    "smooth_ece",
    "smooth_ece_kernel",
    "sort_scores",
    "sorted_threshold_expected_costs",
    "sorted_weighted_auc",
    "sorted_weighted_eer",
    "specificity_at_sensitivity",
    "weighted_auc_kernel",
    "weighted_rates_at_cuts",
]
