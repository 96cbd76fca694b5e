"""Every calibration method as one row of a table: what differs between calibrators lives here.

A row (:class:`CalibratorMethod`) holds a method's fitter and its apply kernel, the shapes of its parameters, the
inputs it reads, and what kind of method it is (binary only, iterative, output type, bins); :mod:`ecjax.calibration`
(fit, apply, the protocols), :mod:`ecjax.calibrator_files`, the command line and :mod:`ecjax.sklearn` read the row
instead of branching on the method's name.  The fitters: :mod:`~ecjax._src.calibrators.maps` (L-BFGS),
:mod:`~ecjax._src.calibrators.newton` (the affine cross-entropy), :mod:`~ecjax._src.calibrators.counting` (histogram,
isotonic).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import numpy as np

import jax

from ecjax._src.calibrators.counting import (
    apply_histogram,
    apply_isotonic,
    fit_histogram,
    fit_isotonic,
    histogram_edges,
)
from ecjax._src.calibrators.maps import MAPS, apply_map, fit_beta, fit_map
from ecjax._src.calibrators.newton import fit_affine_xe
from ecjax._src.calibrators.problem import FitProblem
from ecjax._src.decisions import one_vs_rest_log_odds

# ------------------------------------------------------------- the inputs each method reads

def _as_given(s, score_type):
    return s


def _class_one_log_odds(s, score_type):
    """The class-1 log-odds of binary log-posteriors (or log-likelihoods: their LLR), the input of ``"llr"``."""
    return s[:, 1] - s[:, 0]


def _isotonic_inputs(s, score_type):
    """The class-1 log-odds ``(N,)`` of binary scores, else the ``(N, K)`` one-vs-rest log-odds."""
    return _class_one_log_odds(s, score_type) if s.shape[-1] == 2 else one_vs_rest_log_odds(s)


def _beta_inputs(s, score_type):
    """Binary log-posteriors; log-likelihoods normalized (the posteriors for equal priors, a shift ``c`` absorbs)."""
    return jax.nn.log_softmax(s, axis=-1) if score_type == "log_likelihoods" else s


def _no_bins(s, sample_weight, settings):
    return np.zeros((1,), np.float32)


def _fit_affine(problem: FitProblem, *, loss: str, max_iter: int, num_bins: int) -> tuple:
    """One fitter per objective: the cross-entropy by the damped Newton fit that the bootstrap's calibration loss
    maps over its draws, the Brier score by L-BFGS."""
    if loss == "xe":
        return fit_affine_xe(problem.labels, problem.s, problem.weights, max_iter)
    return fit_map(MAPS["affine"], problem, loss=loss, max_iter=max_iter, num_bins=num_bins)


# ------------------------------------------------------------ the methods

class CalibratorMethod(NamedTuple):
    """One calibration method: a row of :data:`CALIBRATORS`, all that differs between methods.

    Attributes:
      fit: kernel ``(problem, *, loss, max_iter, num_bins) -> (params, iterations, gradient norm, objective)``,
        ``problem`` a :class:`~ecjax._src.calibrators.problem.FitProblem` whose ``s`` are the inputs of :attr:`inputs`
        (each method reads the fields it needs).
      apply: kernel ``(params, s) -> calibrated scores``: ``(N, K)`` log-posteriors, or ``(N,)`` LLRs.
      parameters: name -> shape of each parameter (letters as in :func:`~ecjax._src.inputs.check_shape`: ``K`` classes,
        ``M`` knots or bins), what a calibrator file holds (:mod:`ecjax.calibrator_files`).
      one_vs_rest_parameters: the shapes for ``K > 2`` where they differ (one binary calibrator per class).
      inputs: ``(log-posteriors or log-likelihoods (N, K), score_type) -> s``, what :attr:`fit` and :attr:`apply`
        read (LLR scores are read as they are, by the method whose :attr:`output_type` is ``"llr"`` only).
      binary: for ``K = 2`` only.
      iterative: fitted by an optimizer (iterations and a gradient norm to judge); ``False``: counted exactly,
        always converged.
      output_type: the score type of the calibrated scores, ``"log_posteriors"`` or ``"llr"``.
      bin_edges: host function ``(s, sample_weight, settings) -> (M,)`` bin edges in the log domain (the
        histogram's), a placeholder for methods without bins.
    """

    fit: Callable[..., tuple]
    apply: Callable[[dict, jax.Array], jax.Array]
    parameters: dict[str, str]
    one_vs_rest_parameters: dict[str, str] | None = None
    inputs: Callable[[jax.Array, str], jax.Array] = _as_given
    binary: bool = False
    iterative: bool = True
    output_type: str = "log_posteriors"
    bin_edges: Callable[[jax.Array, Any, Any], np.ndarray] = _no_bins

    def parameter_shapes(self, num_classes: int) -> dict[str, str]:
        """The shapes of :attr:`parameters` for ``num_classes`` classes."""
        if num_classes > 2 and self.one_vs_rest_parameters is not None:
            return self.one_vs_rest_parameters
        return self.parameters


def _parametric(name: str, parameters: dict[str, str], **fields: Any) -> CalibratorMethod:
    """The row of the parametric map ``MAPS[name]``: L-BFGS on its objective, applied through the map."""
    m = MAPS[name]
    return CalibratorMethod(partial(fit_map, m), partial(apply_map, m), parameters, **fields)


# Every calibration method, one row each: what differs between methods lives here, not in branches on its name.
CALIBRATORS: dict[str, CalibratorMethod] = {
    "affine": CalibratorMethod(_fit_affine, partial(apply_map, MAPS["affine"]), {"scale": "()", "bias": "(K,)"}),
    "temperature": _parametric("temperature", {"scale": "()"}),
    "bias": _parametric("bias", {"bias": "(K,)"}),
    "vector": _parametric("vector", {"scale": "(K,)", "bias": "(K,)"}),
    "matrix": _parametric("matrix", {"weight": "(K, K)", "bias": "(K,)"}),
    "dirichlet": _parametric("dirichlet", {"weight": "(K, K)", "bias": "(K,)"}),
    "llr": _parametric("llr", {"scale": "()", "bias": "()"}, inputs=_class_one_log_odds, binary=True,
                       output_type="llr"),
    "histogram": CalibratorMethod(fit_histogram, apply_histogram, {"upper_log_edges": "(M,)", "frequencies": "(M, 2)"},
                                  binary=True, iterative=False, bin_edges=histogram_edges),
    "isotonic": CalibratorMethod(fit_isotonic, apply_isotonic, {"thresholds": "(M,)", "frequencies": "(M, 2)"},
                                 {"thresholds": "(K, M)", "frequencies": "(K, M, 2)"}, inputs=_isotonic_inputs,
                                 iterative=False),
    "beta": CalibratorMethod(fit_beta, partial(apply_map, MAPS["beta"]), {"scale": "(2,)", "bias": "()"},
                             inputs=_beta_inputs, binary=True),
}
METHODS = tuple(CALIBRATORS)
# Methods that count rather than optimize: no L-BFGS, ``converged`` is always True.
NON_ITERATIVE_METHODS = tuple(name for name, row in CALIBRATORS.items() if not row.iterative)
