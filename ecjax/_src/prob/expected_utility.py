"""The expected utility matrix of an uncertain utility matrix (Dyrland et al. 2022, §4.1).

If the utility matrix is ``U^(a)`` with probability ``q_a``, the decision
problem is solved by the expected utility matrix (Dyrland et al. 2022, eq. 18)

    U_hat = sum_a q_a U^(a),

because, the uncertainty about utilities being independent of that about
the class, the expected utility of decision ``j`` is (eq. 19, rows = true
class here)

    sum_i sum_a q_a U^(a)_ij p_i = sum_i U_hat_ij p_i.

So the best decision under uncertain utilities is the Bayes decision for
``U_hat``, and the expected utility yield of a classifier is its yield
under ``U_hat`` (the yield is linear in ``U``).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.decisions import bayes_decisions, bayes_decisions_kernel
from ecjax._src.prob.utility_priors import UtilityPrior, as_utility_prior


class ExpectedUtility(NamedTuple):
    """The expected utility matrix and how it was obtained.

    Attributes:
      matrix: ``(K, D)`` expected utility matrix ``U_hat`` (Dyrland et al. 2022, eq. 18).
      method: ``"fixed"`` (a known matrix), ``"closed_form"``,
        ``"quadrature"`` or ``"monte_carlo"``.
      standard_error: ``(K, D)`` Monte Carlo standard error, or ``None``.
    """

    matrix: jax.Array
    method: str
    standard_error: jax.Array | None = None


def expected_utility_matrix(utilities: UtilityPrior | Callable[..., Any] | ArrayLike, *, key: jax.Array | None = None,
                            num_draws: int = 100_000) -> ExpectedUtility:
    """``U_hat = E[U]`` under a utility prior (Dyrland et al. 2022, eq. 18), exact where possible.

    Args:
      utilities: a :class:`~ecjax.prob.UtilityPrior`, a NumPyro model with a
        ``"utility"``/``"cost"`` site, or a fixed ``(K, D)`` matrix.
      key: ``jax.random`` key, needed only when no closed form exists.
      num_draws: Monte Carlo draws in that case.

    Returns:
      :class:`ExpectedUtility` (always a *utility* matrix: a cost prior's
      expectation is negated).
    """
    prior = as_utility_prior(utilities)
    if not isinstance(prior, UtilityPrior):
        return ExpectedUtility(prior, "fixed", None)
    if prior.mean is not None:
        return ExpectedUtility(prior.mean, prior.mean_method, None)
    key = v.as_key(key)  # required here: no closed form, so Monte Carlo
    num_draws = v.as_scalar(num_draws, "num_draws", integer=True, low=2)
    draws = prior.sample(key, num_draws)
    return ExpectedUtility(draws.mean(0), "monte_carlo", draws.std(0, ddof=1) / jnp.sqrt(num_draws))


def expected_utility_decision(utilities: UtilityPrior | Callable[..., Any] | ArrayLike, probabilities: ArrayLike, *,
                              key: jax.Array | None = None, num_draws: int = 100_000) -> jax.Array:
    """The decision implied by uncertain utilities for given class probabilities (Dyrland et al. 2022, eq. 19).

    ``argmax_j sum_i U_hat_ij p_i``: with ``probabilities`` the deployment
    priors this is the best input-independent decision; with per-sample
    posteriors ``(..., N, K)`` it is the Bayes decision of each sample.
    Ties go to the lowest decision index.

    Args:
      utilities: as in :func:`expected_utility_matrix`.
      probabilities: ``(..., K)`` class probabilities (rows sum to 1).
    """
    u_hat = expected_utility_matrix(utilities, key=key, num_draws=num_draws).matrix
    p = v.as_priors(probabilities, "probabilities", num_classes=u_hat.shape[0])
    with jax.numpy_dtype_promotion("standard"):
        log_p = jnp.log(p)
    return bayes_decisions_kernel(log_p[..., None, :], -u_hat)[..., 0]


def expected_utility_bayes_decisions(scores: ArrayLike, utilities: UtilityPrior | Callable[..., Any] | ArrayLike, *,
                                     priors: ArrayLike | None = None, score_type: str = "log_posteriors",
                                     key: jax.Array | None = None, num_draws: int = 100_000) -> jax.Array:
    """Bayes decisions from scores under uncertain utilities: the Bayes decisions for ``U_hat``.

    By eq. 19 these maximize the expected utility averaged over the utility
    prior.  Arguments as :func:`ecjax.decisions.bayes_decisions`, with
    ``utilities`` in place of ``costs``.
    """
    u_hat = expected_utility_matrix(utilities, key=key, num_draws=num_draws).matrix
    return bayes_decisions(scores, -u_hat, priors=priors, score_type=score_type)
