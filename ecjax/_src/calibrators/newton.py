"""The affine calibrator with the cross-entropy (Ferrer 2022b, eq. 61), fitted by damped Newton.

The default calibrator and the calibration loss of the Bayesian bootstrap: a convex problem in ``K + 1``
parameters, for which Newton's exact Hessian converges in a few steps where L-BFGS's line search costs more,
and which maps over many weight vectors inside ``vmap`` (:func:`fit_affine_newton_kernel`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ecjax._src.precision import matmul
from ecjax._src.scores import cross_entropy_kernel


# The shortest Newton step _affine_newton tries, as a fraction of the full step (1, 1/4, ..., 4^-5).
_SMALLEST_NEWTON_STEP = 4.0**-5


def _affine_xe_derivatives(theta, s, onehot, weights):
    """Gradient and Hessian in ``theta = (a, b)`` of the weighted cross-entropy of ``log_softmax(a s + b)``."""
    a, b = theta[0], theta[1:]
    p = jax.nn.softmax(a * s + b, axis=-1)
    mean_s = jnp.sum(p * s, -1)  # E_p[s] per sample
    dev = s - mean_s[:, None]
    wp = weights[:, None] * p
    grad = jnp.concatenate([jnp.sum(weights * (mean_s - jnp.sum(onehot * s, -1)))[None],
                            jnp.sum(wp - weights[:, None] * onehot, 0)])
    h_ab = jnp.sum(wp * dev, 0)
    h_bb = jnp.diag(jnp.sum(wp, 0)) - matmul(wp.T, p)
    hess = jnp.block([[jnp.sum(wp * dev * dev)[None, None], h_ab[None, :]], [h_ab[:, None], h_bb]])
    return grad, hess


def _affine_newton(labels, log_posteriors, weights, max_iter):
    """The affine calibrator of Ferrer (2022b) eq. 61 that minimizes a weighted cross-entropy, by damped Newton:
    ``(theta = (a, b), iterations, sigma)``, ``sigma`` the weighted spread of the inputs that scaled the start.

    Minimizes ``f(a, b) = sum_n w_n [logsumexp_k(a s_nk + b_k) - a s_{n y_n}
    - b_{y_n}]`` over the scale ``a`` and the bias vector ``b`` (``s`` the
    input log-posteriors ``(N, K)``, ``w`` the weights ``(N,)``): the
    objective of :func:`ecjax.calibration.fit` with ``method="affine"``, ``loss="xe"``, and its
    one fitter: :func:`ecjax.calibration.fit` and the protocols use it, and so does
    :func:`fit_affine_newton_kernel` inside ``vmap`` over many weight vectors
    (the Bayesian bootstrap of :mod:`~ecjax._src.prob.bootstrap`), where L-BFGS's
    line search would cost more.
    ``f`` is convex (a multinomial logistic regression with one shared
    feature per class), with, for ``p = softmax(a s + b)`` and ``E_p`` the
    mean under ``p`` of each sample,

        df/da = sum_n w_n (E_p[s_n] - s_{n y_n}),   df/db = sum_n w_n (p_n - e_{y_n}),
        d2f/da2 = sum_n w_n Var_p[s_n],   d2f/da db_j = sum_n w_n p_nj (s_nj - E_p[s_n]),
        d2f/db db' = sum_n w_n (diag(p_n) - p_n p_n^T).

    ``f`` does not change along ``b -> b + c 1``; the term ``(sum_k b_k)^2 /
    2`` (zero at the start and along every Newton step) removes that flat
    direction.  Each iteration solves ``(H + mu I) d = -g`` (``mu`` a
    relative ``1e-6`` of ``H``'s mean eigenvalue, for separable data where
    ``H`` tends to 0) and takes the first of the steps ``t d``, ``t`` in
    ``1, 1/4, ..., 1/1024``, that decreases ``f`` (none: it stops), so ``f``
    never increases beyond its rounding (the last, full step, taken when the decrement is at the rounding of
    ``f``, may leave it where it was).  It starts
    from ``a = 1 / sigma``, ``b = 0`` (``sigma`` the weighted spread of
    ``s``), where the softmax is not saturated, and returns the identity map
    ``(1, 0)`` if that is better (so calibration never costs).  It stops when the predicted decrease ``-g.d/2``
    falls below float rounding of ``f``, when no step decreases ``f``, or after
    ``max_iter`` iterations (separable data, where ``a`` grows without bound
    and ``f`` tends to 0).

    """
    s = log_posteriors
    k = s.shape[-1]
    dtype = s.dtype
    onehot = jax.nn.one_hot(labels, k, dtype=dtype)
    on_bias = jnp.concatenate([jnp.zeros((1,), dtype), jnp.ones((k,), dtype)])
    tiny = jnp.finfo(dtype).tiny
    eps = jnp.finfo(dtype).eps

    def value_at(theta):
        lp = jax.nn.log_softmax(theta[0] * s + theta[1:], axis=-1)
        return cross_entropy_kernel(labels, lp, weights) + 0.5 * jnp.sum(theta[1:]) ** 2

    def step(carry):
        theta, value, _, it = carry
        grad, hess = _affine_xe_derivatives(theta, s, onehot, weights)
        # The gauge term (sum_k b_k)^2 / 2.
        grad, hess = grad + jnp.sum(theta[1:]) * on_bias, hess + on_bias[:, None] * on_bias[None, :]
        mu = 1e-6 * jnp.trace(hess) / (k + 1) + tiny
        direction = -jnp.linalg.solve(hess + mu * jnp.eye(k + 1, dtype=dtype), grad)
        # Backtracking: the full step is almost always taken, so one evaluation per iteration.
        def shorter(search):
            size, _ = search
            size = size / 4
            return size, value_at(theta + size * direction)

        decrement = -jnp.sum(grad * direction)
        # At the minimum to within the rounding of f (or a NaN decrement): no need to search.
        small = ~(0.5 * decrement > eps * jnp.maximum(value, tiny))

        def worse(search):
            size, trial = search
            return ~small & ~(trial < value) & (size > _SMALLEST_NEWTON_STEP)

        size, trial = jax.lax.while_loop(worse, shorter, (jnp.ones((), dtype), value_at(theta + direction)))
        # At the minimum to within f's rounding, f can no longer judge a step, but the quadratic model is exact
        # there: the full Newton step is taken unless f rises beyond its rounding, and shrinks the gradient to its
        # rounding too (stopping on f alone left gradient norms of 3e-5 in a 10-class fit, above fit's tol).
        improved = (trial < value) | (small & (trial <= value + 4 * eps * jnp.abs(value)))  # False for NaN
        new_theta = jnp.where(improved, theta + size * direction, theta)
        return new_theta, jnp.where(improved, trial, value), ~improved | small, it + 1

    def keep_going(carry):
        _, _, done, it = carry
        return (~done) & (it < max_iter)

    # Start from a = 1 / sigma (sigma the weighted RMS spread of s), where the softmax is not saturated: from the
    # identity, scores spanning hundreds of nats give a Hessian of ~0 and Newton steps that overshoot.
    total = jnp.sum(weights) * k
    mean = jnp.sum(weights[:, None] * s) / total
    sigma = jnp.sqrt(jnp.sum(weights[:, None] * (s - mean) ** 2) / total)
    zeros = jnp.zeros((k,), dtype)
    start = jnp.concatenate([jnp.where(sigma > 0, 1.0 / sigma, 1.0)[None], zeros])
    theta, value, _, iterations = jax.lax.while_loop(keep_going, step, (start, value_at(start), jnp.zeros((), bool),
                                                                        jnp.zeros((), jnp.int32)))
    identity = jnp.concatenate([jnp.ones((1,), dtype), zeros])
    theta = jnp.where(value <= value_at(identity), theta, identity)  # never worse than no calibration
    return theta, iterations, jnp.where(sigma > 0, sigma, 1.0)


def fit_affine_newton_kernel(labels: jax.Array, log_posteriors: jax.Array, weights: jax.Array, *,
                             max_iter: int = 50) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Kernel: the affine calibrator of Ferrer (2022b) eq. 61 that minimizes a weighted cross-entropy.

    The fitter of :func:`ecjax.calibration.fit` with ``method="affine"``, ``loss="xe"`` (damped Newton,
    :func:`_affine_newton`), without validation, for use inside ``vmap`` over many weight vectors ``(N,)`` (the
    Bayesian bootstrap of :mod:`~ecjax._src.prob.bootstrap`); ``log_posteriors`` ``(N, K)``.

    Returns:
      ``(scale (), bias (K,), calibrated log-posteriors (N, K))``.
    """
    theta, _, _ = _affine_newton(labels, log_posteriors, weights, max_iter)
    return theta[0], theta[1:], jax.nn.log_softmax(theta[0] * log_posteriors + theta[1:], axis=-1)


def fit_affine_xe(labels: jax.Array, s: jax.Array, weights: jax.Array, max_iter: int) -> tuple:
    """Kernel: the fitter's ``(params, iterations, gradient norm, objective)`` of the affine calibrator with the
    cross-entropy (:func:`_affine_newton`), ``params = {"scale": a, "bias": b}``.

    The gradient norm is that of L-BFGS's parameters ``(a sigma, b)`` (the scale times the inputs' spread), so that
    ``Calibrator.converged`` (``gradient norm < tol``) means the same for every map.
    """
    theta, iterations, sigma = _affine_newton(labels, s, weights, max_iter)
    grad, _ = _affine_xe_derivatives(theta, s, jax.nn.one_hot(labels, s.shape[-1], dtype=s.dtype), weights)
    grad_norm = jnp.linalg.norm(grad.at[0].divide(sigma))
    value = cross_entropy_kernel(labels, jax.nn.log_softmax(theta[0] * s + theta[1:], axis=-1), weights)
    return {"scale": theta[0], "bias": theta[1:]}, iterations, grad_norm, value
