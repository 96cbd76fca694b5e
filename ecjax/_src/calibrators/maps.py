"""The parametric calibrators: maps of the scores with parameters, fitted by optax L-BFGS.

Affine (Ferrer 2022b, eq. 61), temperature, bias, vector and matrix scaling, Dirichlet calibration (Kull et al.
2019), LLR calibration and beta calibration (Kull, Silva Filho & Flach 2017), each a :class:`ParametricMap` of
:data:`MAPS`.  The objective is the prior-weighted expected proper scoring rule of the calibrated scores plus the
map's penalty, minimized by L-BFGS with a zoom line search inside ``jax.lax.while_loop`` until the gradient norm
falls below ``tol``, on preconditioned (scales times the inputs' spread) and centred inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
import optax.tree_utils as otu

from ecjax._src.calibrators.problem import FitProblem
from ecjax._src.precision import matmul
from ecjax._src.scores import brier_kernel, cross_entropy_kernel


def _softmax_log_posteriors(z, log_prior_odds):
    return _log_softmax(z)


def _llr_log_posteriors(llr, log_prior_odds):
    logit = llr + log_prior_odds
    return jnp.stack([jax.nn.log_sigmoid(-logit), jax.nn.log_sigmoid(logit)], axis=-1)


def _log_softmax(z):
    return jax.nn.log_softmax(z, axis=-1)


def _unchanged(z):
    return z


class ParametricMap(NamedTuple):
    """A parametric calibrator, one row of :data:`MAPS`.

    ``identity(k, dtype)``: the parameters that leave the scores alone (alpha = 1, beta = 0, as psrcal starts);
    ``transform(params, s)``: the calibrated logits (for ``llr``, the calibrated LLRs) of inputs ``s``;
    ``shift(params, m)``: what the bias absorbs when the inputs are centred at ``m`` (``None``: the map has no
    bias, or no scale to protect, and is fitted uncentred); ``penalty(penalties, params)``: the regularizer added
    to the objective, ``penalties = [l2, off_diagonal_l2, intercept_l2]`` (:class:`ecjax.calibration.FitSettings`);
    ``log_posteriors(z, log_prior_odds)``: the log-posteriors the objective scores (softmax of the logits, or the
    LLRs plus the log prior odds); ``output(z)``: what the calibrator returns (log-posteriors, or the LLRs).
    """

    identity: Callable[[int, Any], dict]
    transform: Callable[[dict, jax.Array], jax.Array]
    shift: Callable[[dict, jax.Array], jax.Array] | None
    penalty: Callable[[jax.Array, dict], jax.Array]
    log_posteriors: Callable[[jax.Array, jax.Array], jax.Array] = _softmax_log_posteriors
    output: Callable[[jax.Array], jax.Array] = _log_softmax


def _scaled(params, s):
    """``a s + b``, scalar or per-class ``a``: affine (Ferrer 2022b, eq. 61), vector scaling, LLR calibration."""
    return params["scale"] * s + params["bias"]


def _linear(params, s):
    """``W s + b``: matrix scaling and Dirichlet calibration (on log-posteriors)."""
    return matmul(s, params["weight"].T) + params["bias"]


def _beta_logits(params, s):
    """The logits ``(0, a log p - b log(1 - p) + c)`` of beta calibration (Kull, Silva Filho & Flach 2017), with
    ``log p = s_1`` and ``log(1 - p) = s_0`` the input log-posteriors (no probability rounded before its log)."""
    t = params["scale"][0] * s[..., 1] - params["scale"][1] * s[..., 0] + params["bias"]
    return jnp.stack([jnp.zeros_like(t), t], axis=-1)


def _no_penalty(penalties, params):
    return jnp.zeros((), penalties.dtype)


def _identity_distance(penalties, params):
    """``l2 ||W - I||_F^2``: matrix scaling shrunk towards leaving the scores alone."""
    k = params["weight"].shape[-1]
    return penalties[0] * jnp.sum((params["weight"] - jnp.eye(k, dtype=params["weight"].dtype)) ** 2)


def _odir(penalties, params):
    """ODIR, Kull et al. (2019) §3.2: ``lambda / (K (K - 1)) sum_{i != j} W_ij^2 + mu / K sum_j b_j^2``.  The
    diagonal is free, so the per-class scalings of vector scaling cost nothing; off-diagonal terms and intercepts
    shrink to 0."""
    w, b = params["weight"], params["bias"]
    k = w.shape[-1]
    off_diagonal = jnp.sum(w**2) - jnp.sum(jnp.diagonal(w) ** 2)
    return penalties[1] * off_diagonal / (k * (k - 1)) + penalties[2] * jnp.sum(b**2) / k


def _scale_shift(params, m):  # a (s - m) + b
    return params["scale"] * m


def _weight_shift(params, m):  # W (s - m) + b
    return matmul(params["weight"], m)


def _beta_shift(params, m):  # a (s_1 - m_1) - b (s_0 - m_0) + c
    return params["scale"][0] * m[1] - params["scale"][1] * m[0]


def _ones(shape, dtype):
    return jnp.ones(shape, dtype)


def _zeros(shape, dtype):
    return jnp.zeros(shape, dtype)


# The parametric calibrators (the counting ones, histogram and isotonic, have no map to optimize).  Temperature has
# no bias to absorb a centring and bias no scale to protect, so both are fitted on the inputs as given.
MAPS: dict[str, ParametricMap] = {
    "affine": ParametricMap(lambda k, dt: {"scale": _ones((), dt), "bias": _zeros((k,), dt)}, _scaled, _scale_shift,
                   _no_penalty),
    "temperature": ParametricMap(lambda k, dt: {"scale": _ones((), dt)}, lambda p, s: p["scale"] * s, None, _no_penalty),
    "bias": ParametricMap(lambda k, dt: {"bias": _zeros((k,), dt)}, lambda p, s: s + p["bias"], None, _no_penalty),
    "vector": ParametricMap(lambda k, dt: {"scale": _ones((k,), dt), "bias": _zeros((k,), dt)}, _scaled, _scale_shift,
                   _no_penalty),
    "matrix": ParametricMap(lambda k, dt: {"weight": jnp.eye(k, dtype=dt), "bias": _zeros((k,), dt)}, _linear,
                   _weight_shift, _identity_distance),
    "dirichlet": ParametricMap(lambda k, dt: {"weight": jnp.eye(k, dtype=dt), "bias": _zeros((k,), dt)}, _linear,
                      _weight_shift, _odir),
    "llr": ParametricMap(lambda k, dt: {"scale": _ones((), dt), "bias": _zeros((), dt)}, _scaled, _scale_shift,
                _no_penalty, _llr_log_posteriors, _unchanged),
    # a = b = 1, c = 0: logit = log p - log(1 - p), the input log-odds unchanged.
    "beta": ParametricMap(lambda k, dt: {"scale": _ones((2,), dt), "bias": _zeros((), dt)}, _beta_logits, _beta_shift,
                 _no_penalty),
}


def apply_map(m, params, s):
    """Kernel: the calibrated log-posteriors (LLRs for ``"llr"``) of the parametric map ``m`` (:data:`MAPS`)."""
    return m.output(m.transform(params, s))


def _objective(m, loss, penalties, params, s, labels, weights, log_prior_odds, centre):
    """Training objective: the prior-weighted EPSR of the calibrated scores, plus the map's penalty (:data:`MAPS`)
    on the parameters of the map of the uncentred inputs ``s + centre``."""
    log_post = m.log_posteriors(m.transform(params, s), log_prior_odds)
    value = (cross_entropy_kernel if loss == "xe" else brier_kernel)(labels, log_post, weights)
    return value + m.penalty(penalties, _uncentred(m, params, centre))


def _lbfgs_minimize(objective, init_params, max_iter, tol):
    """optax L-BFGS with zoom line search until ``||grad|| < tol`` or ``max_iter``.

    The pattern of the optax docs: the line search stores the value and
    gradient at the accepted point in the state, and
    ``value_and_grad_from_state`` reuses them, so each iteration costs one
    gradient plus the line-search evaluations.
    """
    solver = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(objective)

    def step(carry):
        params, state = carry
        value, grad = value_and_grad(params, state=state)
        updates, state = solver.update(grad, state, params, value=value, grad=grad, value_fn=objective)
        return optax.apply_updates(params, updates), state

    def keep_going(carry):
        _, state = carry
        count = otu.tree_get(state, "count")
        grad_norm = otu.tree_norm(otu.tree_get(state, "grad"))
        # A NaN gradient also stops the loop (it compares False), and is reported.
        return (count == 0) | ((count < max_iter) & (grad_norm >= tol))

    params, state = jax.lax.while_loop(keep_going, step, (init_params, solver.init(init_params)))
    grad_norm = otu.tree_norm(otu.tree_get(state, "grad"))
    return params, otu.tree_get(state, "count"), grad_norm, otu.tree_get(state, "value")


def fit_map(m: ParametricMap, problem: FitProblem, *, loss: str, max_iter: int, num_bins: int) -> tuple:
    """Kernel: L-BFGS fit of the parametric map ``m`` (:data:`MAPS`) to ``problem``, the fitter of its method:
    ``(params, iterations, gradient norm, objective)``."""
    return _fit_lbfgs(m, problem.s, labels=problem.labels, weights=problem.weights,
                      log_prior_odds=problem.log_prior_odds, penalties=problem.penalties, tol=problem.tol, loss=loss,
                      max_iter=max_iter)


def fit_beta(problem: FitProblem, *, loss: str, max_iter: int, num_bins: int) -> tuple:
    """Kernel, the fitter of ``"beta"``: beta calibration with its coefficients kept ``>= 0``.

    Kull et al. (2017) and their betacal package: a and b must be >= 0 for a monotone map.  If the
    unconstrained fit gives a < 0, refit without the log p feature (a = 0); else if b < 0, without
    -log(1 - p) (b = 0).  The remaining coefficient is kept as refitted, as in betacal.
    Two stages of one loop, so that the L-BFGS program is compiled once: stage 0 fits both coefficients,
    stage 1 refits only when stage 0 found one negative.
    """
    s = problem.s
    dtype = s.dtype
    m = MAPS["beta"]
    fit_with = partial(_fit_lbfgs, m, labels=problem.labels, weights=problem.weights,
                       log_prior_odds=problem.log_prior_odds, penalties=problem.penalties, tol=problem.tol, loss=loss,
                       max_iter=max_iter)

    def stage(i, carry):
        result, keep = carry  # keep = [keep a, keep b]

        def run():
            # Zeroing a feature's column freezes its coefficient (zero gradient); it is then set to 0.
            params, n_iter, gnorm, value = fit_with(s * keep[::-1])
            return {"scale": params["scale"] * keep, "bias": params["bias"]}, result[1] + n_iter, gnorm, value

        result = jax.lax.cond((i == 0) | jnp.any(keep == 0), run, lambda: result)
        a, b = result[0]["scale"][0], result[0]["scale"][1]
        keep = jnp.where(i == 0, jnp.stack([a >= 0, (a < 0) | (b >= 0)]).astype(dtype), keep)
        return result, keep

    zero = jnp.zeros((), dtype)
    init = (m.identity(2, dtype), jnp.zeros((), jnp.int32), zero, zero)
    result, _ = jax.lax.fori_loop(0, 2, stage, (init, jnp.ones((2,), dtype)))
    return result


def _fit_lbfgs(m, s, *, labels, weights, log_prior_odds, penalties, tol, loss, max_iter):
    """L-BFGS fit of a parametric calibrator: ``(params, iterations, gradient norm, objective)``."""
    dtype = s.dtype
    k = 2 if s.ndim == 1 else s.shape[-1]
    # Precondition: optimize the scales times the RMS spread sigma of the training inputs, so that
    # scale and bias gradients are of comparable size (log-posteriors can span tens or thousands
    # of nats).  The objective is unchanged; matrix scaling needs ~4x fewer iterations this way.
    in_train = weights > 0
    mask = (in_train if s.ndim == 1 else in_train[:, None]).astype(dtype)
    # Centre the inputs at the midrange of each training column (the bias absorbs the shift): a
    # constant column becomes exactly 0, so its scale gets a gradient of exactly 0 and stays put, and the bias
    # alone fits the class frequencies.  Uncentred, a constant input makes scale and bias a flat valley whose
    # rounding-level curvature sent L-BFGS to parameters of 1e8 (issue 30).  The midrange, not the mean: (c + c) / 2
    # is c exactly, a float32 mean of N copies of c need not be.
    centre = _midrange(s, in_train) if m.shift else jnp.zeros(s.shape[1:], dtype)
    s = s - centre
    count = jnp.sum(mask) * (1 if s.ndim == 1 else k)
    mean = jnp.sum(mask * s) / count
    sigma = jnp.sqrt(jnp.sum(mask * (s - mean) ** 2) / count)
    sigma = jnp.where(sigma > 0, sigma, 1.0)
    init = _to_internal(m.identity(k, dtype), sigma)
    objective = partial(_objective, m, loss, penalties, s=s, labels=labels, weights=weights,
                        log_prior_odds=log_prior_odds, centre=centre)
    q, n_iter, gnorm, value = _lbfgs_minimize(lambda q: objective(_from_internal(q, sigma)), init, max_iter, tol)
    return _uncentred(m, _from_internal(q, sigma), centre), n_iter, gnorm, value


def _midrange(s, in_train):
    """``(min + max) / 2`` of each column of ``s`` over the training samples (``s`` itself if it is ``(N,)``)."""
    where = in_train if s.ndim == 1 else in_train[:, None]
    low = jnp.min(jnp.where(where, s, jnp.inf), axis=0)
    high = jnp.max(jnp.where(where, s, -jnp.inf), axis=0)
    return low / 2 + high / 2  # halves first: no overflow, and exact for low == high


def _uncentred(m, params, centre):
    """The parameters of the map ``m`` of ``s`` from those fitted on ``s - centre``."""
    shift = m.shift
    return params if shift is None else {**params, "bias": params["bias"] - shift(params, centre)}


def _to_internal(params, sigma):
    return {name: p * sigma if name in ("scale", "weight") else p for name, p in params.items()}


def _from_internal(params, sigma):
    return {name: p / sigma if name in ("scale", "weight") else p for name, p in params.items()}
