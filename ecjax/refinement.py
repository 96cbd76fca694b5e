"""What a calibrator changes in an evaluation of scores: the calibration/refinement split of a proper scoring rule,
and the threshold a metric picks on calibrated scores (the cost ratio it implies, honestly).
"""

from ecjax._src.refinement import CalibrationRefinement, calibrated_metric_threshold, calibration_refinement

__all__ = ["CalibrationRefinement", "calibrated_metric_threshold", "calibration_refinement"]
