"""The calibrators: one table of methods (:data:`CALIBRATORS`) and their fitters, by kind of fit.

``problem`` (what a fitter reads) → ``counting`` (histogram binning, isotonic regression), ``maps`` (the parametric
maps, optax L-BFGS), ``newton`` (the affine cross-entropy, damped Newton) → ``table`` (a row per method).  The public
API over the table, :func:`ecjax.calibration.fit` with its protocols, is :mod:`ecjax.calibration`.
"""

from ecjax._src.calibrators.counting import ISOTONIC_CLIP
from ecjax._src.calibrators.newton import fit_affine_newton_kernel
from ecjax._src.calibrators.problem import FitProblem
from ecjax._src.calibrators.table import CALIBRATORS, METHODS, NON_ITERATIVE_METHODS, CalibratorMethod

__all__ = ["CALIBRATORS", "ISOTONIC_CLIP", "METHODS", "NON_ITERATIVE_METHODS", "CalibratorMethod", "FitProblem",
           "fit_affine_newton_kernel"]
