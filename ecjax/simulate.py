"""Synthetic scores: the Gaussian simulation recipes of Ferrer's papers."""

from ecjax._src.simulate import (
    CalibrationStudy,
    ECStudy,
    calibration_study,
    calibration_study_from_features,
    class_sizes,
    ec_study,
    first_class_priors,
    gaussian_features,
    gaussian_log_likelihoods,
)

__all__ = [
    "first_class_priors",
    "class_sizes",
    "gaussian_features",
    "gaussian_log_likelihoods",
    "CalibrationStudy",
    "calibration_study_from_features",
    "calibration_study",
    "ECStudy",
    "ec_study",
]
