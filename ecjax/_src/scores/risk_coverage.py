"""Risk-coverage curves for abstention (selective classification).

A classifier that may abstain keeps the samples whose confidence ``c_i``
(the top posterior) is at least a threshold ``tau`` and decides them by the
argmax; the others are left to someone else.  For each threshold, with
weights ``w_i`` (1 without ``sample_weight``) and the 0-1 loss ``l_i`` of the
argmax decision (El-Yaniv & Wiener 2010; Geifman & El-Yaniv 2017)::

    coverage(tau) = sum_{c_i >= tau} w_i / sum_i w_i
    risk(tau)     = sum_{c_i >= tau} w_i l_i / sum_{c_i >= tau} w_i    (the selective risk)

The curve is traced by one sort of the confidences (descending): each
sample is a point, and samples of equal confidence, which no threshold can
separate, share the point of the last of them.  The area under it (AURC;
Geifman, Uziel & El-Yaniv 2019, "Bias-reduced uncertainty estimation for
deep neural classifiers") is the right Riemann sum over the coverage steps,
``sum_i w_i / W * risk(c_i)`` (``mean_i risk(c_i)`` without weights and
ties), and the excess AURC (E-AURC) is the AURC minus that of the oracle
ordering, which keeps the correct decisions first (``c_i = -l_i``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.decisions import one_vs_rest_log_odds
from ecjax._src.scores.calibration_errors import calibration_inputs, nan_where_traced_inputs_invalid


class RiskCoverageCurve(NamedTuple):
    """Risk-coverage curves of one or more systems (``(..., N)`` arrays, confidences in descending order).

    Attributes:
      coverage: share of the weight kept at each threshold (non-decreasing; the last is 1).
      risk: the selective risk (error rate of the kept samples) at each threshold.
      thresholds: the confidences, descending.
      aurc: ``(...)`` the area under the curve.
      excess_aurc: ``(...)`` the AURC minus the oracle's (E-AURC).
    """

    coverage: jax.Array
    risk: jax.Array
    thresholds: jax.Array
    aurc: jax.Array
    excess_aurc: jax.Array

    def points(self) -> dict[str, list[float] | float]:
        """One system's curve as drawn, each point once (host lists: what the command line writes).

        The arrays hold a point per sample; samples of tied confidence share theirs, and a sample of weight 0
        adds none (its coverage equals the previous point's).  Kept here: the first entry of each rise in
        coverage, so integer weights give the points of the repeated samples.
        """
        coverage = np.asarray(self.coverage, np.float64)
        v.check_shape(coverage, "coverage", "(N,)", why=" (the points of one system's curve)")
        rises = np.diff(coverage, prepend=0.0) > 0
        return {"coverage": coverage[rises].tolist(), "risk": np.asarray(self.risk, np.float64)[rises].tolist(),
                "thresholds": np.asarray(self.thresholds, np.float64)[rises].tolist(),
                "aurc": float(self.aurc), "excess_aurc": float(self.excess_aurc)}


def _curve_and_area(confidence, loss, weights):
    """``(coverage, risk, sorted confidence, aurc)`` of ``(N,)`` arrays (one sort; ties share a point)."""
    order = jnp.argsort(-confidence, stable=True)
    c, l, w = confidence[order], loss[order], weights[order]
    kept = jnp.cumsum(w)
    wrong = jnp.cumsum(w * l)
    last_of_tie = jnp.searchsorted(-c, -c, side="right") - 1
    kept, wrong = kept[last_of_tie], wrong[last_of_tie]
    risk = jnp.where(kept > 0, wrong / jnp.where(kept > 0, kept, 1), 0.0)
    total = jnp.sum(w)
    return kept / total, risk, c, jnp.sum(w * risk) / total


@jax.jit
def risk_coverage_kernel(labels: jax.Array, log_post: jax.Array,
                         sample_weight: jax.Array | None = None) -> RiskCoverageCurve:
    """:class:`RiskCoverageCurve` of validated labels and ``(..., N, K)`` log-posteriors (no checks)."""
    # Ranked by the top class's log-odds against the rest, in the order of the top posterior: float32
    # log-posteriors round to 0 past ~17 nats and would tie every confident sample, right or wrong.
    confidence = jnp.max(one_vs_rest_log_odds(log_post), axis=-1)
    loss = (jnp.argmax(log_post, axis=-1) != labels).astype(log_post.dtype)
    weights = jnp.ones(labels.shape, log_post.dtype) if sample_weight is None else sample_weight.astype(
        log_post.dtype)

    def one(conf, los):
        coverage, risk, c, aurc = _curve_and_area(conf, los, weights)
        *_, oracle = _curve_and_area(-los, los, weights)
        return coverage, risk, jnp.exp(jax.nn.log_sigmoid(c)), aurc, aurc - oracle  # log-odds -> posterior

    flat = confidence.shape[:-1]
    out = jax.vmap(one)(confidence.reshape((-1, labels.shape[-1])), loss.reshape((-1, labels.shape[-1])))
    return RiskCoverageCurve(*(x.reshape(flat + x.shape[1:]) for x in out))


def risk_coverage_curve(labels: ArrayLike, scores: ArrayLike, *, priors: ArrayLike | None = None,
                        score_type: str = "log_posteriors",
                        sample_weight: ArrayLike | None = None) -> RiskCoverageCurve:
    """Risk-coverage curve, AURC and E-AURC of abstaining below a confidence threshold (module docstring).

    Args:
      labels: ``(N,)`` true classes.
      scores: ``(..., N, K)`` scores (``(..., N)`` for ``"llr"``); leading axes are systems.
      priors, score_type: to turn the scores into posteriors, as everywhere; the decisions are their argmax
        and the confidence their maximum.
      sample_weight: optional ``(N,)`` non-negative weights (frequency weights: an integer weight ``k`` is ``k``
        copies of the sample).

    Returns:
      :class:`RiskCoverageCurve`.  Under ``jax.jit`` an invalid traced input (a label out of range, a NaN
      score) gives NaN areas.

    Example::

        >>> import jax.numpy as jnp
        >>> lp = jnp.log(jnp.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]]))
        >>> curve = risk_coverage_curve([0, 1, 1, 0], lp)
        >>> [round(float(r), 3) for r in curve.risk], round(float(curve.aurc), 4)
        ([0.0, 0.0, 0.333, 0.5], 0.2083)
    """
    y, log_post, w = calibration_inputs(labels, scores, priors, score_type, sample_weight)
    res = risk_coverage_kernel(y, log_post, w)
    return res._replace(aurc=nan_where_traced_inputs_invalid(res.aurc, y, log_post, w),
                        excess_aurc=nan_where_traced_inputs_invalid(res.excess_aurc, y, log_post, w))
