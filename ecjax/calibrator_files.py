"""Fitted calibrators on disk without pickle: a JSON description and a ``.npz`` of its parameter arrays."""

from ecjax._src.calibrator_files import save_calibrator

__all__ = ["save_calibrator"]
