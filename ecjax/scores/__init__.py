"""Scores (posteriors, log-odds, LLRs) judged against labels, one module per way of judging them.

As scikit-learn splits its metrics by input kind, so does this package:

* :mod:`~ecjax.scores.bayes_decisions`: the EC of the Bayes decisions the
  scores make for a cost matrix, and of the best threshold;
* :mod:`~ecjax.scores.scoring_rules`: proper scoring rules (cross-entropy,
  Brier score);
* :mod:`~ecjax.scores.roc`: the ranking alone (ROC, AUC, EER, operating
  points);
* :mod:`~ecjax.scores.calibration_measures`: Bayes-risk curves, ECE and
  reliability bins.

All take ``(labels, scores, ..., *, priors, score_type, sample_weight)``
and start from the canonical inputs of :mod:`ecjax.scores.inputs`.  Every
public name is importable from ``ecjax.scores``.
"""


from ecjax.scores.bayes_decisions import (
    bayes_expected_cost,
    expected_cost_vs_threshold,
    optimal_threshold_expected_cost,
    sorted_threshold_expected_costs,
    OptimalThreshold,
    ThresholdCurve,
)
from ecjax.scores.scoring_rules import (
    class_weights,
    cross_entropy_kernel,
    brier_kernel,
    naive_cross_entropy,
    naive_brier,
    cross_entropy,
    brier,
)
from ecjax.scores.roc import (
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
from ecjax.scores.calibration_measures import (
    ECE_BINNINGS,
    ECE_VARIANTS,
    BayesRiskCurve,
    BinSums,
    bayes_risk_curve,
    bin_indices,
    bin_sums,
    confidence_and_hit,
    equal_mass_upper_edges,
    ece,
    ece_kernel,
    ReliabilityBins,
    reliability_bins,
)

__all__ = [
    "BayesRiskCurve",
    "BinSums",
    "ECE_BINNINGS",
    "ECE_VARIANTS",
    "OperatingPoint",
    "OptimalThreshold",
    "ReliabilityBins",
    "SensitivityTargetNEC",
    "SortedScores",
    "ThresholdCurve",
    "auc",
    "auc_one_vs_rest",
    "bayes_expected_cost",
    "bayes_risk_curve",
    "bin_indices",
    "bin_sums",
    "brier",
    "brier_kernel",
    "class_weights",
    "confidence_and_hit",
    "cross_entropy",
    "cross_entropy_kernel",
    "cut_threshold",
    "ece",
    "ece_kernel",
    "eer",
    "eer_of_rates",
    "equal_mass_upper_edges",
    "expected_cost_vs_threshold",
    "naive_brier",
    "naive_cross_entropy",
    "nec_for_target_sensitivity",
    "optimal_threshold_expected_cost",
    "rates_at_cuts",
    "reliability_bins",
    "roc_curve",
    "sort_scores",
    "sorted_threshold_expected_costs",
    "sorted_weighted_auc",
    "sorted_weighted_eer",
    "specificity_at_sensitivity",
    "weighted_auc_kernel",
    "weighted_rates_at_cuts",
]
