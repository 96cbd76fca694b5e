"""ecjax: evaluate and compare classifiers by expected cost and utility yield, in JAX.

Data flows one way (the README's "Layout" lists the modules in that order): checks -> costs and decisions ->
counts -> metrics -> scores against labels -> calibration -> files -> sweeps -> posterior draws -> tables and
figures -> the command line.
"""

import os as _os
import sys as _sys

try:
    from ecjax import costs
    from ecjax.inputs import InputError, class_indices
    from ecjax.confusion import (
        JointOutcomeTable,
        confusion_matrix,
        data_priors,
        joint_outcome_table,
        rates,
        sparse_confusion_matrix,
    )
    from ecjax.decisions import (
        bayes_decisions,
        log_likelihoods_from_posteriors,
        log_posteriors,
        naive_decision,
        naive_expected_cost,
    )
    from ecjax.metrics import (
        accuracy,
        balanced_accuracy,
        balanced_error_rate,
        cohen_kappa,
        error_rate,
        expected_cost,
        f1_score,
        f_beta_score,
        fowlkes_mallows,
        general_performance_score,
        geometric_mean,
        gps_upm,
        informedness,
        markedness,
        matthews_corrcoef,
        negative_likelihood_ratio,
        negative_predictive_value,
        net_benefit,
        normalized_expected_cost,
        positive_likelihood_ratio,
        precision,
        recall,
        sensitivity,
        specificity,
        unified_performance_measure,
        utility_yield,
    )
    from ecjax.scores import (  # scores against labels, every question (ecjax.scores holds the rest)
        DecisionCurve,
        DetCurve,
        MetricThreshold,
        PrecisionRecallCurve,
        ReliabilityBands,
        RiskCoverageCurve,
        SmoothECE,
        adaptive_calibration_error,
        auc,
        auc_one_vs_one,
        auc_one_vs_rest,
        average_precision,
        bayes_expected_cost,
        bayes_risk_curve,
        binned_calibration_error,
        brier,
        classwise_ece,
        cross_entropy,
        decision_curve,
        det_curve,
        ece,
        eer,
        max_calibration_error,
        optimal_metric_threshold,
        optimal_threshold_expected_cost,
        precision_recall_curve,
        reliability_bands,
        risk_coverage_curve,
        rms_calibration_error,
        roc_curve,
        smooth_ece,
    )
    from ecjax.refinement import CalibrationRefinement, calibrated_metric_threshold, calibration_refinement
    from ecjax.scores import sample_costs  # per-sample costs: ecjax.scores.sample_costs.sample_expected_cost, ...
except KeyboardInterrupt:
    # Ctrl-C while the `ecjax` command is still importing JAX: the same one line and exit status (130) as once
    # it runs (ecjax.cli.main), not a traceback.  Imported as a library, the interrupt is the caller's.
    if _os.path.basename(_sys.argv[0] if _sys.argv else "").lower() in ("ecjax", "ecjax.exe", "ecjax-script.py"):
        print("ecjax: interrupted", file=_sys.stderr)
        raise SystemExit(130) from None
    raise

__version__ = "0.1.0"

# Heavier layers load on first use: `ecjax.prob` (NumPyro), `ecjax.calibration` (optax),
# `ecjax.sweep`, `ecjax.simulate`, `ecjax.plots` (matplotlib), `ecjax.io`.
_LAZY = ("calibration", "io", "plots", "prob", "simulate", "sweep")


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"ecjax.{name}")
    raise AttributeError(f"module 'ecjax' has no attribute {name!r}")
