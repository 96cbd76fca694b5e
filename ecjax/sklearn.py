"""scikit-learn integration: cost scorers, a cost-sensitive meta-estimator, calibrators as estimators."""

from ecjax._src.sklearn import CHECKS_THAT_DO_NOT_APPLY, CostSensitiveClassifier, ScoreCalibrator, cost_scorer

__all__ = ["CHECKS_THAT_DO_NOT_APPLY", "CostSensitiveClassifier", "ScoreCalibrator", "cost_scorer"]
