"""What every calibrator's fitter reads: the training data and the objective's settings, as one record.

A fitter (the ``fit`` of a row of :data:`ecjax.calibration.CALIBRATORS`) is a kernel
``fit(problem, *, loss, max_iter, num_bins) -> (params, iterations, gradient norm, objective)``; each method reads
the fields it needs.  The record is a pytree (a ``NamedTuple``), so it passes through ``jit``, ``vmap`` and
``lax.map`` as its arrays do.
"""

from __future__ import annotations

from typing import NamedTuple

import jax


class FitProblem(NamedTuple):
    """The traced inputs of one calibrator fit.

    Attributes:
      s: the method's inputs (the ``inputs`` of its row): ``(N, K)`` log-posteriors or log-likelihoods, or ``(N,)``
        log-odds.
      labels: ``(N,)`` true classes.
      weights: ``(N,)`` the objective's per-sample weights ``u_n P_i / W_i`` (0: not in the training set).
      sample_weight: ``(N,)`` the frequency weights ``u_n`` alone (1 without), which the counting methods
        (histogram, isotonic) need apart from the class weights.
      log_prior_odds: ``log(P_1 / P_0)`` of the objective's priors (binary; 0 otherwise), for LLR calibration.
      penalties: ``(3,)``, ``[l2, off_diagonal_l2, intercept_l2]`` (``ecjax.calibration.FitSettings.penalties``).
      tol: the gradient norm below which the optimizer stops.
      upper_log_edges: ``(M,)`` the histogram's bins, made on the host (the row's ``bin_edges``), unused by other
        methods.
    """

    s: jax.Array
    labels: jax.Array
    weights: jax.Array
    sample_weight: jax.Array
    log_prior_odds: jax.Array
    penalties: jax.Array
    tol: jax.Array
    upper_log_edges: jax.Array
