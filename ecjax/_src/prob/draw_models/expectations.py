"""The fixed point of :func:`~ecjax.prob.compare`'s draws: the expected utility matrix, the expected priors, and the
closed-form expected yield of fixed counts.

``U`` is independent of ``(P, R)`` and the yield is linear in ``U``, so ``E[yield_m] = sum_ij U_hat_ij E[P_i
R_m,ij]`` (Dyrland et al. (2022) eq. 19), with ``U_hat = E[U]`` (eq. 18); with fixed counts ``E[P_i R_m,ij]`` has a
closed form (see :mod:`ecjax.prob.compare`).  The doubt components hold the sources they do not draw at these means.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import jax
from jax.typing import ArrayLike

from ecjax._src.draw_runner import DrawPlan
from ecjax._src.prob.rates import PriorDistribution, default_class_concentration
from ecjax._src.prob.utility_priors import UtilityPrior


def expected_priors(class_priors: PriorDistribution | ArrayLike | None, class_counts: ArrayLike) -> np.ndarray:
    """``E[P]``: the fixed or expected deployment priors, or the posterior mean of the test set's frequencies.

    The test set's frequencies are drawn from ``Dirichlet(n_i + alpha_P)``
    (:func:`~ecjax.prob.sample_class_priors`), of mean ``(n_i + alpha_P) /
    (N + K alpha_P)``.
    """
    if class_priors is None:
        n = np.asarray(class_counts, np.float64)
        alpha_p = default_class_concentration(n.shape[0])
        return (n + alpha_p) / (n.sum() + n.shape[0] * alpha_p)
    if isinstance(class_priors, PriorDistribution):
        return np.asarray(class_priors.mean, np.float64)
    return np.asarray(class_priors, np.float64)


def decision_priors(class_priors: PriorDistribution | ArrayLike | None, class_counts: ArrayLike,
                    joint: bool) -> np.ndarray:
    """The priors with which likelihood-type scores decide when the priors are at their mean."""
    if class_priors is None and joint:
        n = np.asarray(class_counts, np.float64)
        return n / n.sum()
    return expected_priors(class_priors, class_counts)


def closed_form_yield(u_hat: ArrayLike, mean_weights: ArrayLike, p_bar: ArrayLike, joint_priors: bool) -> np.ndarray:
    """``sum_ij U_hat_ij E[P_i R_m,ij]`` in float64 from the mean weights (Dyrland et al. 2022, eq. 19)."""
    w = np.asarray(mean_weights, np.float64)
    totals = w.sum(-1, keepdims=True)
    r = np.divide(w, totals, out=np.zeros_like(w), where=totals > 0)
    p = w[0].sum(-1) / w[0].sum() if joint_priors else np.asarray(p_bar, np.float64)
    return np.einsum("ij,i,mij->m", np.asarray(u_hat, np.float64), p, r)


def expected_utilities(prior: UtilityPrior | ArrayLike, plan: DrawPlan,
                       sample_u: Callable[[int], jax.Array]) -> tuple[np.ndarray, str]:
    """``U_hat = E[U]`` (Dyrland et al. 2022, eq. 18) and how it was obtained.

    The prior's exact mean when it has one; otherwise the mean of the very
    draws the comparison uses (block by block in float64, so the same for
    every chunk size).
    """
    if not isinstance(prior, UtilityPrior):
        return np.asarray(prior, np.float64), "fixed"
    if prior.mean is not None:
        return np.asarray(prior.mean, np.float64), prior.mean_method
    total: Any = 0.0
    for b in range(plan.num_blocks):
        n = min(plan.block, plan.num_draws - b * plan.block)
        total = total + np.asarray(sample_u(b)[:n], np.float64).sum(0)
    return total / plan.num_draws, "monte_carlo"
