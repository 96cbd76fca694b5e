"""Calibration: optax-fitted calibrators, training protocols and calibration loss.

Ferrer (2022b) §4.2-4.3.  A calibrator maps a system's scores to new
log-posteriors; it is fitted by minimizing an expected proper scoring rule
(cross-entropy by default, Brier on request), optionally with deployment
priors (per-class averages weighted by the priors, Ferrer (2022b) eqs. 53-54, 57).
Its *calibration loss* (eqs. 59-60) is how much of the raw EPSR it removes.

Everything here is pure: :func:`fit` returns an immutable :class:`Calibrator`
(a pytree: it can be ``vmap``-ed and passed through ``jit``) whose
``.apply(scores)`` gives calibrated scores.  One fitter per objective: the affine
map with the cross-entropy (the default, and the calibration loss of the bootstrap) by damped Newton
(:func:`fit_affine_newton_kernel`), every other map and loss by optax L-BFGS with
a zoom line search (strong Wolfe), run inside ``jax.lax.while_loop`` until
the gradient norm falls below ``tol``; the calibrator records the number of
iterations, the final gradient norm and the final objective.

Protocols (Ferrer 2022b, §4.2.1): train on held-out data (:func:`calibrate_held_out`),
stratified k-fold cross-validation on the test data with a fixed key (groups of
dependent samples kept whole, :func:`grouped_folds`), each
fold's calibrator applied only to its held-out part, all folds fitted by one
compiled function (:func:`calibrate_cross_validated`), and
train-on-test (:func:`calibrate_train_on_test`), which is optimistic and
labelled so.

Example:
  >>> import jax, jax.numpy as jnp
  >>> logits = jnp.array([[2.0, 0.0], [0.5, 0.2], [-1.0, 1.0], [0.0, 3.0]] * 5)
  >>> labels = jnp.array([0, 1, 1, 1] * 5)
  >>> cal = fit(logits, labels, method="temperature", score_type="logits")
  >>> cal.apply(logits, score_type="logits").shape
  (20, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
import optax
import optax.tree_utils as otu
from jax.typing import ArrayLike

from ecjax import inputs as v
from ecjax.confusion import weight_totals
from ecjax.decisions import log_posteriors_kernel
from ecjax.precision import matmul
from ecjax.scores import (
    bayes_expected_cost,
    brier,
    brier_kernel,
    cross_entropy,
    cross_entropy_kernel,
)
from ecjax.scores.inputs import EPSR_METRICS, epsr_metric

# Isotonic and histogram outputs are clipped to [ISOTONIC_CLIP, 1 - ISOTONIC_CLIP]: PAV (or a bin) gives exactly 0
# or 1 where its training samples are all of one class, and log 0 = -inf would make one held-out sample of the other
# class cost an infinite cross-entropy (and the output file unreadable).  With the clip it costs at most
# -log(1e-6) = 13.8 nats.
ISOTONIC_CLIP = 1e-6
LOSSES = ("xe", "brier")
BINNINGS = ("equal_width", "equal_mass")
# The protocols by name (``CalibrationResult.protocol``, ``CalibrationDiagnosis.protocol``); :func:`diagnose` takes
# them as a :class:`CrossValidation` or :class:`HeldOut` object or the string ``"train_on_test"``.
PROTOCOLS = ("cross_validation", "held_out", "train_on_test")
CALIBRATION_METRICS = EPSR_METRICS


# --------------------------------------------------------------- transforms

def _softmax_log_posteriors(z, log_prior_odds):
    return jax.nn.log_softmax(z, axis=-1)


def _llr_log_posteriors(llr, log_prior_odds):
    logit = llr + log_prior_odds
    return jnp.stack([jax.nn.log_sigmoid(-logit), jax.nn.log_sigmoid(logit)], axis=-1)


def _log_softmax(z):
    return jax.nn.log_softmax(z, axis=-1)


def _unchanged(z):
    return z


class _Map(NamedTuple):
    """A parametric calibrator, one row of :data:`_MAPS`.

    ``identity(k, dtype)``: the parameters that leave the scores alone (alpha = 1, beta = 0, as psrcal starts);
    ``transform(params, s)``: the calibrated logits (for ``llr``, the calibrated LLRs) of inputs ``s``;
    ``shift(params, m)``: what the bias absorbs when the inputs are centred at ``m`` (``None``: the map has no
    bias, or no scale to protect, and is fitted uncentred); ``penalty(penalties, params)``: the regularizer added
    to the objective, ``penalties = [l2, off_diagonal_l2, intercept_l2]`` (:class:`FitSettings`);
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
_MAPS: dict[str, _Map] = {
    "affine": _Map(lambda k, dt: {"scale": _ones((), dt), "bias": _zeros((k,), dt)}, _scaled, _scale_shift,
                   _no_penalty),
    "temperature": _Map(lambda k, dt: {"scale": _ones((), dt)}, lambda p, s: p["scale"] * s, None, _no_penalty),
    "bias": _Map(lambda k, dt: {"bias": _zeros((k,), dt)}, lambda p, s: s + p["bias"], None, _no_penalty),
    "vector": _Map(lambda k, dt: {"scale": _ones((k,), dt), "bias": _zeros((k,), dt)}, _scaled, _scale_shift,
                   _no_penalty),
    "matrix": _Map(lambda k, dt: {"weight": jnp.eye(k, dtype=dt), "bias": _zeros((k,), dt)}, _linear,
                   _weight_shift, _identity_distance),
    "dirichlet": _Map(lambda k, dt: {"weight": jnp.eye(k, dtype=dt), "bias": _zeros((k,), dt)}, _linear,
                      _weight_shift, _odir),
    "llr": _Map(lambda k, dt: {"scale": _ones((), dt), "bias": _zeros((), dt)}, _scaled, _scale_shift,
                _no_penalty, _llr_log_posteriors, _unchanged),
    # a = b = 1, c = 0: logit = log p - log(1 - p), the input log-odds unchanged.
    "beta": _Map(lambda k, dt: {"scale": _ones((2,), dt), "bias": _zeros((), dt)}, _beta_logits, _beta_shift,
                 _no_penalty),
}


def _apply_map(m, params, s):
    """Kernel: the calibrated log-posteriors (LLRs for ``"llr"``) of the parametric map ``m`` (:data:`_MAPS`)."""
    return m.output(m.transform(params, s))


def _objective(m, loss, penalties, params, s, labels, weights, log_prior_odds, centre):
    """Training objective: the prior-weighted EPSR of the calibrated scores, plus the map's penalty (:data:`_MAPS`)
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


# ---------------------------------------------------------------- calibrator

@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True)
class Calibrator:
    """A fitted calibration transform (immutable pytree).

    Attributes:
      method: one of :data:`METHODS`.
      params: the fitted parameters, a dict of arrays (``scale``/``bias``;
        ``weight`` for ``matrix``; for ``histogram``: ``upper_log_edges``, the
        upper edge of each bin as a class-1 log-posterior (the last ``+inf``),
        and ``frequencies``, ``(M, 2)``, the ``[class-0, class-1]``
        frequencies of each bin, unclipped; for ``isotonic``:
        ``thresholds``, the distinct training log-odds in increasing order
        (padded to the number of training samples by repeating the last), and
        ``frequencies``, ``(len(thresholds), 2)``, the fitted
        ``[class-0, class-1]`` probabilities there, unclipped; for ``beta``:
        ``scale = [a, b]`` and ``bias = c``).
      num_iterations: L-BFGS (Newton, for ``affine`` with ``"xe"``) iterations used (0 for ``histogram`` and
        ``isotonic``; for ``beta``, both fits when a coefficient was dropped).
      grad_norm: gradient norm of the objective at the returned parameters,
        in the optimizer's parametrization (scales and matrix multiplied by
        the RMS spread of the training inputs; biases as they are).
      loss: the training objective at the returned parameters.
      converged: ``grad_norm < tol`` (always True for ``histogram`` and
        ``isotonic``, which are computed exactly).
      num_classes, input_type, loss_name: static settings.

    A calibrator from :func:`calibrate_cross_validated` holds one set of
    parameters per fold (leading axis); apply it fold by fold
    (``jax.tree_util.tree_map(lambda p: p[f], cal)``) or use the calibrated
    scores returned with it.
    """

    params: dict
    num_iterations: Any
    grad_norm: Any
    loss: Any
    converged: Any
    method: str = field(default="affine")
    num_classes: int = field(default=2)
    input_type: str = field(default="log_posteriors")
    loss_name: str = field(default="xe")

    def tree_flatten(self) -> tuple[tuple[dict, Any, Any, Any, Any], tuple[str, int, str, str]]:
        children = (self.params, self.num_iterations, self.grad_norm, self.loss, self.converged)
        return children, (self.method, self.num_classes, self.input_type, self.loss_name)

    @classmethod
    def tree_unflatten(cls, aux: tuple[str, int, str, str], children: tuple[dict, Any, Any, Any, Any]) -> Calibrator:
        return cls(*children, *aux)

    def apply(self, scores: ArrayLike, *, score_type: str | None = None) -> jax.Array:
        """Calibrated scores: ``(N, K)`` log-posteriors, or ``(N,)`` LLRs for ``"llr"``.

        ``score_type`` defaults to the type the calibrator was fitted on and
        must match it (a calibrator of logits is not one of LLRs).
        """
        score_type = self.input_type if score_type is None else score_type
        if score_type != self.input_type and not {score_type, self.input_type} <= set(v.POSTERIOR_TYPES):
            said = v.mentioning(f"this calibrator was fitted on {{fitted}}, got {score_type!r}",
                                fitted=("score_type", self.input_type))
            raise v.InputError(said["problem"], **said)
        s = _calibration_inputs(scores, score_type, self.method, self.num_classes)
        return _apply_jit(self, s)


def _apply_kernel(cal, s):
    """Kernel: the calibrated scores of :class:`Calibrator` ``cal`` for its inputs ``s`` (:func:`_calibration_inputs`):
    its method's ``apply`` (:data:`CALIBRATORS`)."""
    return CALIBRATORS[cal.method].apply(cal.params, s)


_apply_jit = jax.jit(_apply_kernel)


def _apply_isotonic(params, s):
    """Kernel: isotonic log-posteriors of the class-1 log-odds ``(N,)`` (binary) or of the ``(N, K)`` one-vs-rest
    log-odds (:func:`_one_vs_rest_isotonic`)."""
    return _isotonic_log_posteriors(params, s) if s.ndim == 1 else _one_vs_rest_isotonic(params, s)


def _apply_histogram(params, s):
    """Kernel: the clipped class frequencies of the bin of each class-1 log-posterior of ``s`` ``(N, 2)``."""
    return _clipped_log_posteriors(params["frequencies"][_histogram_bins(params, s[..., 1])])


def _isotonic_log_posteriors(params, log_odds):
    """Kernel: ``(..., 2)`` log-posteriors of a fitted isotonic calibrator at the class-1 ``log_odds``.

    The fitted step values are joined linearly between consecutive knots
    (``thresholds``) and held constant beyond the first and last knot: the
    prediction of ``sklearn.isotonic.IsotonicRegression(out_of_bounds="clip")``
    with the log-odds as ``X``.  Both class probabilities are interpolated
    (the class-0 one from its own exact value, so that ``1 - p`` near 1 keeps
    its digits) and clipped to ``[ISOTONIC_CLIP, 1 - ISOTONIC_CLIP]``; the
    log of the larger one is ``log1p(-smaller)``, exact where float32 cannot
    hold ``1 - 1e-6`` itself.
    """
    x, f = params["thresholds"], params["frequencies"]
    m = x.shape[-1]
    i = jnp.clip(jnp.searchsorted(x, log_odds, side="right"), 1, m - 1)
    x0, x1 = x[i - 1], x[i]
    dx = x1 - x0
    # dx = 0 only between padding knots (or below the first knot via the clip on i): hold the value.
    t = jnp.where(dx > 0, jnp.clip((log_odds - x0) / jnp.where(dx > 0, dx, 1.0), 0.0, 1.0), 0.0)
    return _clipped_log_posteriors(f[i - 1] + t[..., None] * (f[i] - f[i - 1]))


def _one_vs_rest_isotonic(params, log_odds):
    """Kernel: ``(..., K)`` log-posteriors of a fitted one-vs-rest isotonic calibrator at the ``(..., K)``
    one-vs-rest log-odds (:func:`_one_vs_rest_log_odds`).

    Class ``k``'s binary calibrator (``params`` with a leading class axis) gives ``q_k``, clipped to
    ``[ISOTONIC_CLIP, 1 - ISOTONIC_CLIP]``; the posteriors are ``q_k / sum_j q_j``, as scikit-learn's
    ``CalibratedClassifierCV(method="isotonic")`` normalizes its one-vs-rest outputs.
    """
    per_class = jax.vmap(_isotonic_log_posteriors, in_axes=(0, -1), out_axes=-2)(params, log_odds)  # (..., K, 2)
    log_q = per_class[..., 1]
    return log_q - jax.nn.logsumexp(log_q, axis=-1, keepdims=True)


def _one_vs_rest_log_odds(s):
    """``(..., K)`` log-odds of each class against the others, ``s_k - log sum_{j != k} exp(s_j)``, from scores
    ``s`` (``(..., K)``, log-posteriors up to a constant per row).

    For every class but the top one, ``s_k - logsumexp(s) <= -log 2``, so ``log1p(-exp(.))`` of it keeps its
    digits; the top class's rest is summed directly (without it), so a posterior that rounds to 1 still gets a
    finite log-odds from the mass of the others.
    """
    lse = jax.nn.logsumexp(s, axis=-1, keepdims=True)
    is_top = jnp.arange(s.shape[-1]) == jnp.argmax(s, axis=-1)[..., None]
    rest_of_top = jax.nn.logsumexp(jnp.where(is_top, -jnp.inf, s), axis=-1, keepdims=True)
    rest = lse + jnp.log1p(-jnp.exp(jnp.minimum(s - lse, -jnp.log(2.0).astype(s.dtype))))
    return s - jnp.where(is_top, rest_of_top, rest)


def _clipped_log_posteriors(p):
    """``(..., 2)`` log-posteriors of the class probabilities ``p`` ``(..., 2)`` clipped to ``[ISOTONIC_CLIP, 1 -
    ISOTONIC_CLIP]``: never ``-inf``.  The log of the larger one is ``log1p(-smaller)``, exact where float32 cannot
    hold ``1 - 1e-6`` itself."""
    p = jnp.clip(p, ISOTONIC_CLIP, 1.0 - ISOTONIC_CLIP)
    return jnp.where(p < 0.5, jnp.log(p), jnp.log1p(-p[..., ::-1]))


def _pool_adjacent_violators(log_odds, labels, weights, sample_weight, class_weight=None):
    """Weighted isotonic regression of ``[label = 1]`` on ``log_odds`` (samples of weight 0 ignored).

    As ``sklearn.isotonic.IsotonicRegression``: samples with equal log-odds
    are first pooled into one point (their weighted class-1 frequency), then
    the stack-based pool-adjacent-violators algorithm (Ayer et al. 1955;
    Barlow et al. 1972) scans the points in increasing order, pushing each as
    a block and merging the top two blocks while the lower one's frequency is
    >= the upper one's: O(N) after the sort, each point pushed and merged at
    most once.  Blocks hold per-class totals ``(n_0, n_1)`` of the frequency
    weights ``sample_weight`` (exact integer counts when they are all 1);
    their value is ``w_1 n_1 / (w_0 n_0 + w_1 n_1)`` with the class weights
    ``w_i = P_i / W_i`` of the fit, ``weights = w_{y_n} u_n``.  (Which
    blocks merge depends only on ``n_1 / n_0``, so on the counts and not on
    the priors.)  With integer ``sample_weight`` this is the fit on the
    repeated samples: ``IsotonicRegression(sample_weight=)``.  ``class_weight`` ``(2,)`` overrides the class
    weights derived from ``weights / sample_weight`` (the one-vs-rest fits, whose "rest" mixes classes).

    Returns ``{"thresholds", "frequencies"}`` (see :class:`Calibrator`).
    """
    n = log_odds.shape[0]
    dtype = log_odds.dtype
    in_train = weights > 0
    order = jnp.argsort(jnp.where(in_train, log_odds, jnp.inf), stable=True)
    z, y, kept = log_odds[order], labels[order], in_train[order]
    starts_point = kept & jnp.concatenate([jnp.ones((1,), bool), z[1:] != z[:-1]])
    point = jnp.cumsum(starts_point) - 1  # ignored samples (at the end) fall in the last point with count 0
    num_points = point[-1] + 1
    u = jnp.where(kept, sample_weight[order], 0.0).astype(dtype)
    counts = weight_totals(point, (jax.nn.one_hot(y, 2, dtype=dtype) * u[:, None]).T, n).T  # compensated sums
    knots = jnp.zeros((n,), dtype).at[jnp.where(starts_point, point, n)].set(z, mode="drop")
    if class_weight is None:
        class_weight = _class_weights_of_fit(weights, sample_weight, labels)

    def class1_frequency(c):
        w = class_weight * c.astype(dtype)
        return w[1] / (w[0] + w[1])

    def push(i, carry):
        block_counts, block_start, top = carry
        block_counts = block_counts.at[top].set(counts[i])
        block_start = block_start.at[top].set(i)

        def violated(c):
            bc, _, t = c
            return (t >= 2) & (class1_frequency(bc[t - 2]) >= class1_frequency(bc[t - 1]))

        def merge(c):
            bc, bs, t = c
            return bc.at[t - 2].add(bc[t - 1]), bs, t - 1

        return jax.lax.while_loop(violated, merge, (block_counts, block_start, top + 1))

    init = (jnp.zeros((n, 2), dtype), jnp.zeros((n,), jnp.int32), jnp.zeros((), jnp.int32))
    block_counts, block_start, top = jax.lax.fori_loop(0, num_points, push, init)
    first_of_block = jnp.zeros((n,), jnp.int32).at[jnp.where(jnp.arange(n) < top, block_start, n)].set(
        1, mode="drop")
    block_of_point = jnp.cumsum(first_of_block) - 1
    w = class_weight * block_counts[block_of_point].astype(dtype)
    freqs = w / jnp.sum(w, axis=-1, keepdims=True)
    # Past the last point: repeat the last knot, so the knots stay sorted and the fit is held constant there.
    real = jnp.arange(n) < num_points
    knots = jnp.where(real, knots, knots[num_points - 1])
    freqs = jnp.where(real[:, None], freqs, freqs[num_points - 1])
    return {"thresholds": knots, "frequencies": freqs}


def _class_weights_of_fit(weights, sample_weight, labels):
    """``(2,)``: the class weights ``P_i / W_i`` of a binary fit, its per-sample weights without the frequency weights.

    Unweighted (``sample_weight`` all 1) the division is exact; samples outside the training set (weight 0)
    are skipped.
    """
    in_train = weights > 0
    per_sample = jnp.where(in_train, weights / jnp.where(in_train, sample_weight, 1.0), 0.0)
    return jax.ops.segment_max(per_sample, labels, num_segments=2)


def _pool_adjacent_violators_one_vs_rest(log_odds, labels, weights, sample_weight):
    """One weighted isotonic regression per class, of ``[label = k]`` on the ``(N, K)`` one-vs-rest
    ``log_odds[:, k]``: :func:`_pool_adjacent_violators` with a leading class axis on its outputs.

    Each fit minimizes ``sum_n w_n ([y_n = k] - f(z_nk))^2`` over monotone ``f``, with the objective's weights
    ``w_n = u_n P_i / W_i``.  They enter as frequency weights ``u_n r_{y_n}``, ``r_i = c_i / max_j c_j`` with the
    class weights ``c_i = P_i / W_i``, and equal class weights in the fit: with the data priors every ``r_i`` is
    1 up to rounding, so unweighted blocks still hold (near-)integer counts.
    """
    k = log_odds.shape[-1]
    in_train = weights > 0
    per_sample = jnp.where(in_train, weights / jnp.where(in_train, sample_weight, 1.0), 0.0)
    c = jax.ops.segment_max(per_sample, labels, num_segments=k)
    frequency_weight = sample_weight * (c / jnp.max(c))[labels]
    equal = jnp.ones((2,), log_odds.dtype)

    def one_class(i):
        return _pool_adjacent_violators(log_odds[:, i], (labels == i).astype(labels.dtype), weights,
                                        frequency_weight, equal)

    return jax.vmap(one_class)(jnp.arange(k))


def _histogram_bins(params, log_p1):
    """Bin of each class-1 log-posterior: the first bin whose upper edge is >= it (ties go to the lower bin).

    Edges and inputs are compared in the log domain, as given: no ``exp`` whose last bit may differ between
    backends decides a bin.
    """
    upper = params["upper_log_edges"]
    idx = jnp.searchsorted(upper, log_p1, side="left")
    return jnp.clip(idx, 0, upper.shape[-1] - 1)


def _histogram_log_edges(log_p1: np.ndarray, sample_weight: np.ndarray, num_bins: int, binning: str) -> np.ndarray:
    """``(M,)`` upper edges of the histogram's bins in the log domain, computed on the host (the last is ``+inf``).

    ``"equal_width"``: ``log(m / M)``.  ``"equal_mass"``: the rule of
    :func:`ecjax.scores.equal_mass_upper_edges`: one stable sort of the
    training samples' class-1 log-posteriors (``sample_weight > 0``), the
    float64 cumulative weight in that order, and edge ``m`` the value of the
    first sample whose cumulative weight reaches ``e_m = (m + 1) q + min(m +
    1, r)`` (``q, r`` the quotient and remainder of the total weight by
    ``M``): with unit weights the sorted values split as ``np.array_split``,
    edges at order statistics.  Each edge is a training value itself, and bins are assigned by
    ``searchsorted(side="left")``, so tied values share a bin.  Numpy on the
    host, sequential float64 sums: the same edges on every backend, with or
    without the padding of cross-validation (weight 0).
    """
    if binning == "equal_width":
        with np.errstate(divide="ignore"):
            upper = np.log(np.arange(1, num_bins + 1) / num_bins)
    else:
        kept = sample_weight > 0
        order = np.argsort(log_p1[kept], kind="stable")
        values = log_p1[kept][order]
        cum = np.cumsum(sample_weight[kept][order].astype(np.float64))
        q = np.floor(cum[-1] / num_bins)
        m = np.arange(1, num_bins + 1)
        ends = m * q + np.minimum(m, cum[-1] - q * num_bins)
        pos = np.clip(np.searchsorted(cum, ends, side="left"), 0, len(values) - 1)
        upper = np.where(ends > 0, values[pos], -np.inf)  # e_m = 0: a bin with nothing in it
    upper[-1] = np.inf
    return upper.astype(log_p1.dtype)


# -------------------------------------------------------------------- inputs

def _calibration_inputs(scores, score_type, method, num_classes=None):
    """Finite, validated calibrator inputs.

    Posterior-type scores become log-posteriors (so ``logits`` and
    ``log_posteriors`` give the same calibrator); log-likelihoods are used as
    they are (the bias absorbs the priors); ``llr`` is ``(N,)`` and only for
    ``method="llr"``, which also accepts binary scores of any type (it uses
    the class-1 log-odds).  ``isotonic`` works on the class-1 log-odds (on the
    ``(N, K)`` one-vs-rest log-odds for ``K > 2``) and
    ``beta`` on binary log-posteriors (log-likelihoods are normalized first:
    the posteriors for equal priors, whose shift the bias ``c`` absorbs).
    """
    row = CALIBRATORS[method]
    s = v.as_scores(scores, score_type=score_type)
    v.check_one_system(s, 1 if score_type == "llr" else 2)
    if score_type == "llr":
        if row.output_type != "llr":
            raise v.InputError(f"LLR scores (score_type='llr') need method='llr', got method={method!r}")
        return s
    if score_type in v.POSTERIOR_TYPES:
        s = log_posteriors_kernel(s, jnp.zeros(s.shape[-1], s.dtype), score_type)
    k = s.shape[-1]
    if num_classes is not None:
        v.check_shape(s, "scores", "(N, K)", sizes={"K": num_classes})
    if row.binary and k != 2:
        raise v.InputError(f"method={method!r} is for binary scores (K = 2), got K = {k}; use 'affine'")
    return row.inputs(s, score_type)


def _as_given(s, score_type):
    return s


def _class_one_log_odds(s, score_type):
    """The class-1 log-odds of binary log-posteriors (or log-likelihoods: their LLR), the input of ``"llr"``."""
    return s[:, 1] - s[:, 0]


def _isotonic_inputs(s, score_type):
    """The class-1 log-odds ``(N,)`` of binary scores, else the ``(N, K)`` one-vs-rest log-odds."""
    return _class_one_log_odds(s, score_type) if s.shape[-1] == 2 else _one_vs_rest_log_odds(s)


def _beta_inputs(s, score_type):
    """Binary log-posteriors; log-likelihoods normalized (the posteriors for equal priors, a shift ``c`` absorbs)."""
    return jax.nn.log_softmax(s, axis=-1) if score_type == "log_likelihoods" else s


@dataclass(frozen=True)
class FitSettings:
    """How a calibrator is fitted, whatever its ``method``: the objective, the solver and the histogram's bins.

    Attributes:
      loss: the expected PSR minimized, ``"xe"`` (Ferrer 2022b, eqs. 53-54) or ``"brier"`` (eq. 57).
      l2: L2 weight for ``method="matrix"`` (``l2 * ||W - I||_F^2``), >= 0.
      off_diagonal_l2, intercept_l2: the ODIR weights ``lambda`` and ``mu`` of ``method="dirichlet"`` (Kull et al.
        2019: ``lambda / (K (K - 1))`` times the sum of the squared off-diagonal weights plus ``mu / K`` times the
        sum of the squared intercepts), >= 0.  The paper chooses them by cross-validation over powers of ten;
        the defaults are a light touch.
      num_bins, binning: the bins of ``method="histogram"`` (``"equal_width"`` or ``"equal_mass"``).
      max_iter, tol: L-BFGS stops when the gradient norm is below ``tol`` or after ``max_iter`` iterations
        (see ``Calibrator.converged``); the affine cross-entropy's Newton fit stops at the rounding of its
        objective, within ``max_iter`` iterations, and is judged by the same ``tol``.

    Checked when made (:class:`~ecjax.InputError` naming the field).
    """

    loss: str = "xe"
    l2: float = 1e-3
    off_diagonal_l2: float = 1e-3
    intercept_l2: float = 1e-3
    num_bins: int = 15
    binning: str = "equal_width"
    max_iter: int = 200
    tol: float = 1e-5

    def __post_init__(self):
        v.check_choice(self.loss, "loss", LOSSES)
        v.check_choice(self.binning, "binning", BINNINGS)
        object.__setattr__(self, "max_iter", v.as_positive_int(self.max_iter, "max_iter"))
        object.__setattr__(self, "num_bins", v.as_positive_int(self.num_bins, "num_bins"))
        object.__setattr__(self, "tol", v.as_positive_real(self.tol, "tol"))
        for name in ("l2", "off_diagonal_l2", "intercept_l2"):
            object.__setattr__(self, name, v.as_nonnegative_real(getattr(self, name), name))

    @property
    def penalties(self) -> tuple[float, float, float]:
        """``(l2, off_diagonal_l2, intercept_l2)``, as the fitting kernels take them (one traced vector: changing a
        weight does not recompile)."""
        return self.l2, self.off_diagonal_l2, self.intercept_l2


def _check_fit_args(method, settings) -> FitSettings:
    v.check_choice(method, "method", METHODS)
    return v.check_instance(settings, FitSettings, "settings", "ecjax.calibration.FitSettings")


def _prepare_fit(scores, labels, method, priors, score_type):
    """Validated ``(s, labels, K, priors or None)`` for fitting."""
    v.check_score_type(score_type)
    s = _calibration_inputs(scores, score_type, method)
    k = 2 if s.ndim == 1 else s.shape[-1]
    labels = v.as_label_vector(labels, num_classes=k, scores=s, sample_axis=0)
    p = None if priors is None else np.asarray(v.as_priors(priors, num_classes=k), dtype=np.float64)
    return s, labels, k, p


def class_totals_to_calibrate(labels: ArrayLike, num_classes: int, *, sample_weight: ArrayLike | None = None,
                              where: str = "") -> np.ndarray:
    """The ``(K,)`` sample counts (weight totals) of training labels; :class:`~ecjax.InputError` if a class has none.

    A class with no training samples (or no weight) cannot be calibrated: its bias would be driven to minus
    infinity (no sample pulls it back), so this is an error, never a silent NaN or a runaway parameter.  ``where``
    says which training data in the message (``" of fold 2"``).
    """
    n_i = np.bincount(np.asarray(labels), weights=None if sample_weight is None else np.asarray(sample_weight),
                      minlength=num_classes).astype(np.float64)
    missing = np.nonzero(n_i == 0)[0]
    if missing.size:
        raise v.InputError(
            f"class {int(missing[0])} has no samples{' of non-zero weight' if sample_weight is not None else ''} "
            f"in the training data{where}: a calibrator cannot be fitted for it (use fewer folds, more data, or "
            "drop the class)"
        )
    return n_i


def _fold_weights(labels_np, k, priors, where="", sample_weight=None):
    """``P_i / N_i`` per sample for the training samples; InputError for an absent class.

    With ``sample_weight`` ``s_n``: ``s_n P_i / W_i``, ``W_i`` the total
    weight of class ``i`` (and the data priors ``W_i / W``), so that an
    integer weight counts a sample that many times.  A class with no training
    samples (or no weight) is refused (:func:`class_totals_to_calibrate`).
    """
    n_i = class_totals_to_calibrate(labels_np, k, sample_weight=sample_weight, where=where)
    p = n_i / n_i.sum() if priors is None else priors
    w = (p / n_i)[labels_np]
    return (w if sample_weight is None else w * sample_weight), p


def _sample_weight_for(sample_weight, labels):
    """Validated host sample weights for a fit, or ``None``."""
    if sample_weight is None:
        return None
    return np.asarray(v.as_sample_weight(sample_weight, labels), np.float64)


# ----------------------------------------------------------------------- fit

def _bin_edges_for(method, s, sample_weight, settings):
    """The ``(M,)`` log-domain bin edges of ``method`` over the samples of ``sample_weight > 0``, made on the host
    (:data:`CALIBRATORS`' ``bin_edges``; a placeholder for methods without bins)."""
    return CALIBRATORS[method].bin_edges(s, sample_weight, settings)


def _no_bins(s, sample_weight, settings):
    return np.zeros((1,), np.float32)


def _histogram_edges_of(s, sample_weight, settings):
    """The histogram's edges (:func:`_histogram_log_edges`) of the class-1 log-posteriors of ``s`` ``(N, 2)``."""
    return _histogram_log_edges(np.asarray(s[:, 1]), np.asarray(sample_weight), settings.num_bins, settings.binning)


@partial(jax.jit, static_argnames=("method", "loss", "max_iter", "num_bins", "binning"))
def _fit_kernel(s, labels, weights, sample_weight, log_prior_odds, penalties, tol, upper_log_edges, *, method, loss,
                max_iter, num_bins, binning):
    """Fit one calibrator on weighted samples (weights 0 = not in the training set): its method's ``fit``
    (:data:`CALIBRATORS`), ``(params, iterations, gradient norm, objective)``.

    ``weights`` are the objective's per-sample weights ``u_n P_i / W_i``;
    ``sample_weight`` the frequency weights ``u_n`` alone (1 without), which
    the counting methods (histogram, isotonic) need apart from the class
    weights.  ``upper_log_edges`` are the histogram's bins
    (:func:`_histogram_log_edges`, on the host), unused by other methods.
    """
    return CALIBRATORS[method].fit(s, labels, weights, sample_weight, log_prior_odds, penalties, tol, upper_log_edges,
                                   loss=loss, max_iter=max_iter, num_bins=num_bins)


def _fit_histogram(s, labels, weights, sample_weight, log_prior_odds, penalties, tol, upper_log_edges, *, loss,
                   max_iter, num_bins):
    """The histogram's per-bin class frequencies (counted, not optimized)."""
    dtype = s.dtype
    in_train = weights > 0
    u = jnp.where(in_train, sample_weight, 0.0).astype(dtype)  # frequency weight of each training sample
    params = {"upper_log_edges": upper_log_edges}
    idx = _histogram_bins(params, s[:, 1])
    # Per-bin class totals of the frequency weights (exact counts unweighted), then the class
    # weights P_i / W_i: the (prior-weighted) class frequencies without a long float32 sum of weights.
    cw = _class_weights_of_fit(weights, sample_weight, labels)
    # Compensated sums (ecjax.confusion.weight_totals): bin weight totals past 2^24 stay exact.
    n = weight_totals(idx, (jax.nn.one_hot(labels, 2, dtype=dtype) * u[:, None]).T, num_bins).T  # (M, 2)
    w = cw * n
    w_all = w.sum(-1, keepdims=True)
    # Empty bin (no training sample): the class prior of the objective.  Both classes divided apart (not
    # 1 - the other), so a bin of one class gives exactly 0 and 1 on every backend, clipped when applied.
    prior = cw * n.sum(0) / jnp.sum(cw * n.sum(0))
    params["frequencies"] = jnp.where(w_all > 0, w / jnp.where(w_all > 0, w_all, 1.0), prior)
    zero = jnp.zeros((), jnp.int32)
    return params, zero, jnp.zeros((), dtype), jnp.zeros((), dtype)


def _fit_isotonic(s, labels, weights, sample_weight, log_prior_odds, penalties, tol, upper_log_edges, *, loss,
                  max_iter, num_bins):
    """Pool-adjacent-violators on the class-1 log-odds ``(N,)``, or one per class on the ``(N, K)`` one-vs-rest
    log-odds.  PAV minimizes every proper scoring rule over monotone maps at once (Brummer & du Preez 2013):
    ``loss`` only chooses which one is reported, on the clipped outputs."""
    pav = _pool_adjacent_violators if s.ndim == 1 else _pool_adjacent_violators_one_vs_rest
    params = pav(s, labels, weights, sample_weight)
    value = (cross_entropy_kernel if loss == "xe" else brier_kernel)(labels, _apply_isotonic(params, s), weights)
    return params, jnp.zeros((), jnp.int32), jnp.zeros((), s.dtype), value


def _fit_map(m, s, labels, weights, sample_weight, log_prior_odds, penalties, tol, upper_log_edges, *, loss,
             max_iter, num_bins):
    """L-BFGS fit of the parametric map ``m`` (:data:`_MAPS`)."""
    return _fit_lbfgs(m, s, labels=labels, weights=weights, log_prior_odds=log_prior_odds, penalties=penalties,
                      tol=tol, loss=loss, max_iter=max_iter)


def _fit_affine(s, labels, weights, sample_weight, log_prior_odds, penalties, tol, upper_log_edges, *, loss,
                max_iter, num_bins):
    """One fitter per objective: the cross-entropy by the damped Newton fit that the bootstrap's calibration loss
    maps over its draws, the Brier score by L-BFGS."""
    if loss == "xe":
        return _affine_xe_fit(labels, s, weights, max_iter)
    return _fit_map(_MAPS["affine"], s, labels, weights, sample_weight, log_prior_odds, penalties, tol,
                    upper_log_edges, loss=loss, max_iter=max_iter, num_bins=num_bins)


def _fit_beta(s, labels, weights, sample_weight, log_prior_odds, penalties, tol, upper_log_edges, *, loss, max_iter,
              num_bins):
    """Beta calibration with its coefficients kept ``>= 0``.

    Kull et al. (2017) and their betacal package: a and b must be >= 0 for a monotone map.  If the
    unconstrained fit gives a < 0, refit without the log p feature (a = 0); else if b < 0, without
    -log(1 - p) (b = 0).  The remaining coefficient is kept as refitted, as in betacal.
    Two stages of one loop, so that the L-BFGS program is compiled once: stage 0 fits both coefficients,
    stage 1 refits only when stage 0 found one negative.
    """
    dtype = s.dtype
    m = _MAPS["beta"]
    fit_with = partial(_fit_lbfgs, m, labels=labels, weights=weights, log_prior_odds=log_prior_odds,
                       penalties=penalties, tol=tol, loss=loss, max_iter=max_iter)

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
    objective of :func:`fit` with ``method="affine"``, ``loss="xe"``, and its
    one fitter: :func:`fit` and the protocols use it, and so does
    :func:`fit_affine_newton_kernel` inside ``vmap`` over many weight vectors
    (the Bayesian bootstrap of :mod:`ecjax.prob.bootstrap`), where L-BFGS's
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

    The fitter of :func:`fit` with ``method="affine"``, ``loss="xe"`` (damped Newton, :func:`_affine_newton`),
    without validation, for use inside ``vmap`` over many weight vectors ``(N,)`` (the Bayesian bootstrap of
    :mod:`ecjax.prob.bootstrap`); ``log_posteriors`` ``(N, K)``.

    Returns:
      ``(scale (), bias (K,), calibrated log-posteriors (N, K))``.
    """
    theta, _, _ = _affine_newton(labels, log_posteriors, weights, max_iter)
    return theta[0], theta[1:], jax.nn.log_softmax(theta[0] * log_posteriors + theta[1:], axis=-1)


def _affine_xe_fit(labels, s, weights, max_iter):
    """:func:`_fit_kernel`'s ``(params, iterations, gradient norm, objective)`` of the affine XE calibrator.

    The gradient norm is that of L-BFGS's parameters ``(a sigma, b)`` (the scale times the inputs' spread), so that
    ``Calibrator.converged`` (``gradient norm < tol``) means the same for every map.
    """
    theta, iterations, sigma = _affine_newton(labels, s, weights, max_iter)
    grad, _ = _affine_xe_derivatives(theta, s, jax.nn.one_hot(labels, s.shape[-1], dtype=s.dtype), weights)
    grad_norm = jnp.linalg.norm(grad.at[0].divide(sigma))
    value = cross_entropy_kernel(labels, jax.nn.log_softmax(theta[0] * s + theta[1:], axis=-1), weights)
    return {"scale": theta[0], "bias": theta[1:]}, iterations, grad_norm, value


def _to_internal(params, sigma):
    return {name: p * sigma if name in ("scale", "weight") else p for name, p in params.items()}


def _from_internal(params, sigma):
    return {name: p / sigma if name in ("scale", "weight") else p for name, p in params.items()}


# ------------------------------------------------------------ the methods

class CalibratorMethod(NamedTuple):
    """One calibration method: a row of :data:`CALIBRATORS`, all that differs between methods.

    Attributes:
      fit: kernel ``(s, labels, weights, sample_weight, log_prior_odds, penalties, tol, upper_log_edges, *, loss,
        max_iter, num_bins) -> (params, iterations, gradient norm, objective)`` on the inputs ``s`` of
        :attr:`inputs` (arguments as :func:`_fit_kernel` takes them; each method reads those it needs).
      apply: kernel ``(params, s) -> calibrated scores``: ``(N, K)`` log-posteriors, or ``(N,)`` LLRs.
      parameters: name -> shape of each parameter (letters as in :func:`ecjax.inputs.check_shape`: ``K`` classes,
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
    """The row of the parametric map ``_MAPS[name]``: L-BFGS on its objective, applied through the map."""
    m = _MAPS[name]
    return CalibratorMethod(partial(_fit_map, m), partial(_apply_map, m), parameters, **fields)


# Every calibration method, one row each: what differs between methods lives here, not in branches on its name.
CALIBRATORS: dict[str, CalibratorMethod] = {
    "affine": CalibratorMethod(_fit_affine, partial(_apply_map, _MAPS["affine"]), {"scale": "()", "bias": "(K,)"}),
    "temperature": _parametric("temperature", {"scale": "()"}),
    "bias": _parametric("bias", {"bias": "(K,)"}),
    "vector": _parametric("vector", {"scale": "(K,)", "bias": "(K,)"}),
    "matrix": _parametric("matrix", {"weight": "(K, K)", "bias": "(K,)"}),
    "dirichlet": _parametric("dirichlet", {"weight": "(K, K)", "bias": "(K,)"}),
    "llr": _parametric("llr", {"scale": "()", "bias": "()"}, inputs=_class_one_log_odds, binary=True,
                       output_type="llr"),
    "histogram": CalibratorMethod(_fit_histogram, _apply_histogram, {"upper_log_edges": "(M,)", "frequencies": "(M, 2)"},
                                  binary=True, iterative=False, bin_edges=_histogram_edges_of),
    "isotonic": CalibratorMethod(_fit_isotonic, _apply_isotonic, {"thresholds": "(M,)", "frequencies": "(M, 2)"},
                                 {"thresholds": "(K, M)", "frequencies": "(K, M, 2)"}, inputs=_isotonic_inputs,
                                 iterative=False),
    "beta": CalibratorMethod(_fit_beta, partial(_apply_map, _MAPS["beta"]), {"scale": "(2,)", "bias": "()"},
                             inputs=_beta_inputs, binary=True),
}
METHODS = tuple(CALIBRATORS)
# Methods that count rather than optimize: no L-BFGS, ``converged`` is always True.
NON_ITERATIVE_METHODS = tuple(name for name, row in CALIBRATORS.items() if not row.iterative)


def fit(scores: ArrayLike, labels: ArrayLike, *, method: str = "affine", priors: ArrayLike | None = None,
        score_type: str = "log_posteriors", settings: FitSettings = FitSettings(),
        sample_weight: ArrayLike | None = None) -> Calibrator:
    """Fit a calibrator on ``(scores, labels)``.

    The objective is the expected PSR of the calibrated posteriors with
    per-class weights ``P_i / N_i`` (Ferrer 2022b, eqs. 53-54 for ``"xe"``, 57
    for ``"brier"``): with ``priors=None`` the plain average over samples,
    with deployment priors the per-class averages weighted by them (so the
    calibrated posteriors are for those priors).

    Methods (input ``s``: log-posteriors, or log-likelihoods as given):

    - ``"affine"``: ``log_softmax(alpha s + beta)``, scalar ``alpha``, vector
      ``beta`` (Ferrer 2022b, eq. 61; psrcal's ``AffineCalLogLoss``).
    - ``"temperature"``: ``log_softmax(alpha s)`` (temperature scaling).
    - ``"bias"``: ``log_softmax(s + beta)`` (prior-shift correction).
    - ``"vector"``: ``log_softmax(a * s + b)``, one scale per class.
    - ``"matrix"``: ``log_softmax(W s + b)`` with ``l2 * ||W - I||_F^2``
      added to the objective (shrinking towards the identity, i.e. towards
      leaving the scores alone).
    - ``"dirichlet"``: Dirichlet calibration (Kull et al. 2019), the same
      map ``log_softmax(W s + b)`` on the log-posteriors with their ODIR
      penalty instead (``off_diagonal_l2`` and ``intercept_l2`` of
      :class:`FitSettings`): off-diagonal weights and intercepts shrink to 0,
      the diagonal is free.  (The inputs are centred for the optimizer as
      for the other maps; the penalty is on the intercept of the map of the
      inputs as given.)
    - ``"llr"``: binary LLR calibration, ``llr' = a llr + b`` trained by
      prior-weighted logistic regression: the XE of the posteriors
      ``sigmoid(llr' + log(P_1/P_0))`` with weights ``P_i/N_i``, the
      speaker-verification recipe (Cllr/FoCal).  ``priors`` is the effective
      training prior (default: data priors).  ``apply`` returns calibrated
      LLRs; combine them with any deployment priors.
    - ``"histogram"``: binary histogram binning of the class-1 posterior
      (the calibrator hidden inside the ECE, Ferrer (2022b) eq. 66): each bin maps
      to the (prior-weighted) class frequencies of its training samples; an
      empty bin maps to the class priors of the objective.  Equal-mass edges
      are order statistics of the training log-posteriors, from one stable
      sort on the host (tied values share a bin; the same bins on every
      backend).  Outputs are clipped to ``[ISOTONIC_CLIP, 1 -
      ISOTONIC_CLIP]`` as isotonic's, so a bin of one class gives no
      ``-inf``.
    - ``"isotonic"``: binary isotonic regression (Zadrozny & Elkan 2002) of
      the class-1 indicator on the class-1 log-odds ``log p - log(1 - p)``,
      by pool-adjacent-violators with the weights ``P_i / N_i``: the
      monotone non-decreasing map with the lowest expected PSR on the
      training data, for every proper scoring rule at once (so ``loss`` only
      chooses the reported ``Calibrator.loss``).  Equal to
      ``sklearn.isotonic.IsotonicRegression(out_of_bounds="clip")`` fitted
      on the log-odds with these sample weights: linear between the
      distinct training log-odds, constant beyond them.  Output
      probabilities are clipped to ``[ISOTONIC_CLIP, 1 - ISOTONIC_CLIP]``
      (``1e-6``), so that no log-posterior is ``-inf``.  For ``K > 2``:
      one-vs-rest, as ``sklearn.calibration.CalibratedClassifierCV(
      method="isotonic")``: class ``k``'s fit regresses ``[y = k]`` on the
      log-odds of ``k`` against the rest, and the ``K`` clipped outputs are
      divided by their sum.  That renormalized map minimizes no proper
      scoring rule of the multiclass posterior (each fit is optimal for its
      own binary question only), so compare it with ``"affine"``,
      ``"vector"`` or ``"dirichlet"`` by the calibration loss.
    - ``"beta"``: binary beta calibration (Kull, Silva Filho & Flach 2017):
      ``logit q = a log p - b log(1 - p) + c`` fitted by prior-weighted
      logistic regression on the features ``[log p, -log(1 - p)]`` (XE, or
      Brier with ``loss="brier"``).  The paper requires ``a, b >= 0`` (a
      monotone map); as its betacal package, if the free fit has ``a < 0``
      the model is refitted with ``a = 0``, else if ``b < 0`` with ``b = 0``.

    Args:
      scores: ``(N, K)`` scores of one system (``(N,)`` for ``"llr"``).
      labels: ``(N,)`` true classes; every class must occur.
      method: one of :data:`METHODS`.
      priors: deployment priors for the objective (default: data priors).
      sample_weight: optional ``(N,)`` non-negative weight of each sample
        (scikit-learn's meaning: an integer weight counts the sample that many
        times); the objective's per-sample weights become ``s_n P_i / W_i``
        with ``W_i`` the total weight of class ``i`` (and the data priors
        ``W_i / W``).  ``"histogram"`` counts weight totals per bin (its
        equal-mass bins split the cumulative weight,
        :func:`ecjax.scores.equal_mass_upper_edges`) and ``"isotonic"`` runs
        the weighted PAV (``IsotonicRegression(sample_weight=)``); for all
        methods integer weights give the fit on the repeated samples.
      score_type: type of ``scores`` (``"log_posteriors"``, ``"logits"``,
        ``"log_likelihoods"``, ``"llr"``).
      settings: :class:`FitSettings`: the loss (``"xe"``, default, or
        ``"brier"``), ``l2`` for ``"matrix"``, the bins of
        ``"histogram"``, and L-BFGS's ``max_iter`` and ``tol``.

    Returns:
      :class:`Calibrator`.
    """
    settings = _check_fit_args(method, settings)
    loss, tol, max_iter = settings.loss, settings.tol, settings.max_iter
    s, labels, k, p = _prepare_fit(scores, labels, method, priors, score_type)
    sw = _sample_weight_for(sample_weight, labels)
    w, p_used = _fold_weights(np.asarray(labels), k, p, sample_weight=sw)
    dtype = s.dtype
    log_prior_odds = jnp.asarray(np.log(p_used[1] / p_used[0]) if k == 2 and np.all(p_used > 0) else 0.0, dtype)
    sw = np.ones(w.shape) if sw is None else sw
    params, n_iter, gnorm, value = _fit_kernel(
        s, labels, jnp.asarray(w, dtype), jnp.asarray(sw, dtype), log_prior_odds, jnp.asarray(settings.penalties, dtype),
        jnp.asarray(tol, dtype), jnp.asarray(_bin_edges_for(method, s, sw, settings)),
        method=method, loss=loss, max_iter=max_iter, num_bins=settings.num_bins, binning=settings.binning)
    converged = gnorm < tol if CALIBRATORS[method].iterative else jnp.asarray(True)
    return Calibrator(params, n_iter, gnorm, value, converged, method, k, score_type, loss)


# ----------------------------------------------------------------- protocols

class CalibrationResult(NamedTuple):
    """Calibrated scores and how they were obtained.

    ``optimistic`` is True for train-on-test: the calibrator saw the labels
    of the very samples it calibrates, so any metric of these scores is
    biased in their favour (Ferrer 2022b, §4.2.1).  ``folds`` is the fold of each
    sample for cross-validation (None otherwise).
    """

    scores: jax.Array
    calibrator: Calibrator
    protocol: str
    optimistic: bool
    folds: Any = None


def calibrate_held_out(train_scores: ArrayLike, train_labels: ArrayLike, test_scores: ArrayLike,
                       **fit_kwargs: Any) -> CalibrationResult:
    """Fit on held-out ``(train_scores, train_labels)``, apply to ``test_scores``.

    The recommended protocol (Ferrer 2022b, §4.2.1): the calibrator never sees the
    test labels.  ``fit_kwargs`` go to :func:`fit`.
    """
    cal = fit(train_scores, train_labels, **fit_kwargs)
    return CalibrationResult(cal.apply(test_scores), cal, "held_out", False, None)


def calibrate_train_on_test(scores: ArrayLike, labels: ArrayLike, **fit_kwargs: Any) -> CalibrationResult:
    """OPTIMISTIC: fit on the test data and apply to the same data.

    Common in the calibration literature and acceptable for a very
    restricted calibrator on a lot of data, but metrics of the result are
    optimistically biased (the transform can overfit the test set, Ferrer (2022b)
    §4.2.1); the result says so (``optimistic=True``).  Prefer
    :func:`calibrate_cross_validated` or :func:`calibrate_held_out`.
    """
    cal = fit(scores, labels, **fit_kwargs)
    return CalibrationResult(cal.apply(scores), cal, "train_on_test", True, None)


def stratified_folds(key: jax.Array, labels: ArrayLike, num_folds: int) -> np.ndarray:
    """Fold index ``(N,)`` of each sample: stratified, shuffled with ``key``.

    Each class is shuffled (its own subkey) and dealt round-robin over the
    folds, continuing where the previous class stopped, so every fold gets
    ``floor`` or ``ceil`` of ``N_i / num_folds`` samples of class ``i`` and
    fold sizes differ by at most one.  Same key, same folds.
    """
    labels_np = np.asarray(v.as_index_array(labels, "labels"))
    num_folds = v.as_positive_int(num_folds, "num_folds", minimum=2, maximum=labels_np.shape[0])
    folds = np.empty(labels_np.shape[0], np.int32)
    offset = 0
    classes = np.unique(labels_np)
    keys = jax.random.split(key, int(classes.max()) + 1)
    for c in classes:
        idx = np.nonzero(labels_np == c)[0]
        perm = np.asarray(jax.random.permutation(keys[c], idx.shape[0]))
        folds[idx[perm]] = (offset + np.arange(idx.shape[0])) % num_folds
        offset += idx.shape[0]
    return folds


def grouped_folds(key: jax.Array, labels: ArrayLike, groups: ArrayLike | Sequence[Any], num_folds: int) -> np.ndarray:
    """Fold index ``(N,)`` of each sample, every group whole in one fold, stratified as far as groups allow.

    For samples that are not independent (several recordings of one speaker,
    several images of one patient): a calibrator must not be tested on a
    group it was trained on, or the cross-validated loss is optimistic.  The
    folds of ``expected_cost.calibration.calibration_with_crossval`` with
    ``condition_ids`` (scikit-learn's ``StratifiedGroupKFold``, shuffled):
    the groups are shuffled with ``key``, taken from the most uneven class
    mix to the most even, and each goes to the fold where the class
    proportions across folds stay most alike (ties: the smaller fold), and
    never leaving a fold empty.  Same key, same folds.

    Args:
      key: a ``jax.random`` key.
      labels: ``(N,)`` true classes.
      groups: ``(N,)`` group (condition) id of each sample: integers or strings.
      num_folds: at least 2 and at most the number of groups.
    """
    labels_np = np.asarray(v.as_index_array(labels, "labels"))
    num_folds = v.as_positive_int(num_folds, "num_folds", minimum=2)
    ids, which = v.as_group_index(groups, labels_np.shape[0])
    if num_folds > len(ids):
        raise v.InputError(f"`num_folds` ({num_folds}) exceeds the number of groups ({len(ids)}): each fold "
                           "needs at least one whole group")
    k = int(labels_np.max()) + 1
    per_group = np.zeros((len(ids), k))
    np.add.at(per_group, (which, labels_np), 1.0)
    shuffled = np.asarray(jax.random.permutation(v.as_key(key), len(ids)))
    order = shuffled[np.argsort(-np.std(per_group[shuffled], axis=1), kind="stable")]
    class_total = np.maximum(per_group.sum(0), 1.0)
    fold_counts = np.zeros((num_folds, k))
    fold_of_group = np.empty(len(ids), np.int32)
    eye = np.eye(num_folds)[:, :, None]
    for left, grp in zip(range(len(ids), 0, -1), order):
        # Row f of `trial`: the folds' class counts had this group gone to fold f.
        trial = fold_counts[None] + eye * per_group[grp]
        spread = np.round(np.mean(np.std(trial / class_total, axis=1), axis=1), 12)  # equal up to rounding: a tie
        sizes = fold_counts.sum(1)
        empty = sizes == 0
        allowed = empty if empty.sum() >= left else np.ones(num_folds, bool)
        best = np.lexsort((sizes, spread, ~allowed))[0]
        fold_counts[best] += per_group[grp]
        fold_of_group[grp] = best
    return fold_of_group[which]


@partial(jax.jit, static_argnames=("method", "loss", "max_iter", "num_bins", "binning"))
def _cross_validation_kernel(s, labels, train_idx, train_w, train_sw, folds, log_prior_odds, penalties, tol, edges, *,
                             method, loss, max_iter, num_bins, binning):
    """All folds in one compiled function: the fit mapped over padded training sets."""
    fit_one = partial(_fit_kernel, method=method, loss=loss, max_iter=max_iter, num_bins=num_bins, binning=binning)

    def one_fold(idx, w, sw, lpo, fold_edges):
        return fit_one(s[idx], labels[idx], w, sw, lpo, penalties, tol, fold_edges)

    # lax.map, not vmap: under vmap the L-BFGS loop and its line search run until the slowest
    # fold is done and their branches become selects (both sides evaluated), which measured
    # 2-5x slower on CPU; lax.map keeps one compiled function with each fold stopping on its own.
    params, n_iter, gnorm, value = jax.lax.map(lambda a: one_fold(*a),
                                                   (train_idx, train_w, train_sw, log_prior_odds, edges))
    k = 2 if s.ndim == 1 else s.shape[-1]

    def apply_fold(p):
        cal = Calibrator(p, 0, 0.0, 0.0, True, method, k, "", loss)
        return _apply_kernel(cal, s)

    # Every fold's calibrator on all samples, then each sample takes its own fold's output:
    # F x N x K work, no per-sample copies of the parameters (a K x K matrix each for "matrix").
    all_out = jax.vmap(apply_fold)(params)  # (F, N, ...)
    out = jnp.take_along_axis(all_out, folds.reshape((1, -1) + (1,) * (all_out.ndim - 2)), axis=0)[0]
    return out, params, n_iter, gnorm, value


def calibrate_cross_validated(scores: ArrayLike, labels: ArrayLike, *, key: jax.Array, num_folds: int = 5,
                              method: str = "affine", priors: ArrayLike | None = None,
                              score_type: str = "log_posteriors", settings: FitSettings = FitSettings(),
                              groups: ArrayLike | Sequence[Any] | None = None,
                              sample_weight: ArrayLike | None = None) -> CalibrationResult:
    """Stratified k-fold cross-validated calibration of the test data.

    The data are split into ``num_folds`` stratified folds with ``key``
    (:func:`stratified_folds`); the calibrator of fold ``f`` is fitted on the
    other folds and applied only to fold ``f``, so no sample is calibrated by
    a transform that saw its label (Ferrer 2022b, §4.2.1; the protocol of
    ``expected_cost.calibration.calibration_with_crossval``).  All folds are
    fitted by one jit-compiled function (``lax.map`` over the folds): the
    training sets are padded to the same length with zero-weight samples.

    ``groups`` (``(N,)`` ids, the ``condition_ids`` of expected-cost) keeps
    every group whole in one fold (:func:`grouped_folds`), so that no sample
    is calibrated by a transform fitted on its own group.

    Raises :class:`InputError` when a class is missing from a training set
    (a class with a single sample, say): such a calibrator is undefined.
    Other arguments as in :func:`fit`.

    Returns:
      :class:`CalibrationResult` with ``folds`` and a calibrator holding one
      parameter set per fold.
    """
    settings = _check_fit_args(method, settings)
    loss, tol, max_iter = settings.loss, settings.tol, settings.max_iter
    s, labels, k, p = _prepare_fit(scores, labels, method, priors, score_type)
    if groups is None:
        folds = stratified_folds(v.as_key(key), labels, num_folds)
    else:
        folds = grouped_folds(key, labels, groups, num_folds)
    labels_np = np.asarray(labels)
    sw = _sample_weight_for(sample_weight, labels)
    train_sets = [np.nonzero(folds != f)[0] for f in range(num_folds)]
    length = max(len(t) for t in train_sets)
    idx = np.zeros((num_folds, length), np.int32)
    w = np.zeros((num_folds, length))
    train_sw = np.zeros((num_folds, length))  # padding: weight 0, outside every training set
    lpo = np.zeros(num_folds)
    for f, t in enumerate(train_sets):
        wf, pf = _fold_weights(labels_np[t], k, p, where=f" of fold {f} (cross-validation)",
                               sample_weight=None if sw is None else sw[t])
        idx[f, : len(t)] = t
        w[f, : len(t)] = wf
        train_sw[f, : len(t)] = 1.0 if sw is None else sw[t]
        lpo[f] = np.log(pf[1] / pf[0]) if k == 2 and np.all(pf > 0) else 0.0
    dtype = s.dtype
    edges = np.stack([_bin_edges_for(method, s[i], train_sw[f], settings) for f, i in enumerate(idx)])
    out, params, n_iter, gnorm, value = _cross_validation_kernel(
        s, labels, jnp.asarray(idx), jnp.asarray(w, dtype), jnp.asarray(train_sw, dtype), jnp.asarray(folds),
        jnp.asarray(lpo, dtype),
        jnp.asarray(settings.penalties, dtype), jnp.asarray(tol, dtype), jnp.asarray(edges), method=method, loss=loss, max_iter=max_iter,
        num_bins=settings.num_bins, binning=settings.binning)
    converged = gnorm < tol if CALIBRATORS[method].iterative else jnp.ones(num_folds, bool)
    cal = Calibrator(params, n_iter, gnorm, value, converged, method, k, score_type, loss)
    return CalibrationResult(out, cal, "cross_validation", False, jnp.asarray(folds))


# --------------------------------------------------------- calibration loss

def _epsr(metric, labels, scores, costs, priors, score_type, normalize, sample_weight=None):
    """The EPSR ``metric`` (from :func:`~ecjax.scores.inputs.epsr_metric`) of ``scores``."""
    kw = dict(priors=priors, score_type=score_type, normalize=normalize, sample_weight=sample_weight)
    if metric == "xe":
        return cross_entropy(labels, scores, **kw)
    if metric == "brier":
        return brier(labels, scores, **kw)
    return bayes_expected_cost(labels, scores, costs, **kw)


def calibration_loss(labels: ArrayLike, raw: ArrayLike, calibrated: ArrayLike, *, metric: str = "xe",
                     relative: bool = True, costs: ArrayLike | None = None, priors: ArrayLike | None = None,
                     score_type: str = "log_posteriors", sample_weight: ArrayLike | None = None) -> jax.Array:
    """Calibration loss ``EPSRraw - EPSRemin`` (Ferrer 2022b, eq. 59) or its relative form.

    ``relative=True`` gives ``100 (EPSRraw - EPSRemin) / EPSRraw`` (eq. 60),
    the percentage of the raw EPSR due to miscalibration (0 when the raw EPSR
    is 0; 100 when an infinite raw cross-entropy becomes finite).  The EPSR is the cross-entropy (``"xe"``), the Brier score
    (``"brier"``) or the EC of Bayes decisions for ``costs``
    (``"bayes_ec"``), with evaluation ``priors`` (default: data priors).
    ``calibrated`` should come from a calibrator that did not see these
    labels (held-out or cross-validated), or the loss is overestimated.

    Args:
      labels: ``(N,)`` true classes.
      raw, calibrated: scores of the same samples, both of ``score_type``.
      sample_weight: optional ``(N,)`` non-negative frequency weights of
        the samples, for both EPSRs (as :func:`ecjax.scores.cross_entropy`).
    """
    metric = epsr_metric(metric, costs)
    r = _epsr(metric, labels, raw, costs, priors, score_type, False, sample_weight)
    c = _epsr(metric, labels, calibrated, costs, priors, score_type, False, sample_weight)
    if not relative:
        return r - c
    return relative_calibration_loss(r, c)


def relative_calibration_loss(r: jax.Array, c: jax.Array) -> jax.Array:
    """Kernel: Ferrer (2022b) eq. 60, ``100 (r - c) / r`` for the raw and calibrated EPSRs ``r``, ``c`` (0 when ``r = 0``)."""
    # An infinite raw XE (a true-class posterior of 0) that calibration makes finite is a 100% loss.
    finite = jnp.isfinite(r)
    rel = 100.0 * (r - c) / jnp.where((r > 0) & finite, r, 1.0)
    return jnp.where(finite, jnp.where(r > 0, rel, 0.0), jnp.where(jnp.isfinite(c), 100.0, jnp.nan))


class CalibrationDiagnosis(NamedTuple):
    """Raw and calibrated EPSR and the calibration loss (Ferrer 2022b, §4.2)."""

    metric: str
    protocol: str
    raw: jax.Array
    calibrated: jax.Array
    absolute_loss: jax.Array  # eq. 59
    relative_loss: jax.Array  # eq. 60, in percent
    calibrated_scores: jax.Array
    calibrator: Calibrator


@dataclass(frozen=True, eq=False)
class CrossValidation:
    """Protocol of :func:`diagnose`: calibrate each of ``num_folds`` stratified folds with a calibrator fitted on
    the other folds (Ferrer 2022b, §4.2.1, as :func:`calibrate_cross_validated`).

    Attributes:
      key: the ``jax.random`` key that draws the folds (required: the folds are random).
      num_folds: the number of folds, >= 2.

    Checked when made (:class:`~ecjax.InputError` naming the field).  Compared by identity (it holds an array).
    """

    key: jax.Array
    num_folds: int = 5

    def __post_init__(self):
        object.__setattr__(self, "key", v.as_key(self.key))
        object.__setattr__(self, "num_folds", v.as_positive_int(self.num_folds, "num_folds", minimum=2))


@dataclass(frozen=True, eq=False)
class HeldOut:
    """Protocol of :func:`diagnose`: calibrate with a calibrator fitted on separate training data (Ferrer (2022b)
    §4.2.1, as :func:`calibrate_held_out`).

    Attributes:
      train_scores, train_labels: the training data of the calibrator, of the ``score_type`` of the scores
        diagnosed; the same number of samples.

    Checked when made (:class:`~ecjax.InputError` naming the field).  Compared by identity (it holds arrays).
    """

    train_scores: ArrayLike
    train_labels: ArrayLike

    def __post_init__(self):
        s = v.as_array(self.train_scores, "train_scores", min_ndim=1)
        y = v.as_array(self.train_labels, "train_labels", min_ndim=1)
        v.check_same_length("train_scores", s, "train_labels", y, axis_a=0, axis_b=0)


def _check_protocol(protocol):
    if not (isinstance(protocol, (CrossValidation, HeldOut)) or (isinstance(protocol, str)
                                                                  and protocol == "train_on_test")):
        raise v.InputError(
            f"`protocol` must be calibration.CrossValidation(key, num_folds=5), calibration.HeldOut(train_scores, "
            f"train_labels) or 'train_on_test' (optimistic), got {protocol!r}")


def calibrate(scores: ArrayLike, labels: ArrayLike, *, protocol: CrossValidation | HeldOut | str,
              sample_weight: ArrayLike | None = None, **fit_kwargs: Any) -> CalibrationResult:
    """Calibrated ``scores`` under ``protocol``: :class:`CrossValidation` (:func:`calibrate_cross_validated`),
    :class:`HeldOut` (:func:`calibrate_held_out`, fitted on its own unweighted data) or ``"train_on_test"``
    (:func:`calibrate_train_on_test`, optimistic).  ``fit_kwargs`` go to the protocol's function and :func:`fit`.
    """
    _check_protocol(protocol)
    if isinstance(protocol, CrossValidation):
        return calibrate_cross_validated(scores, labels, key=protocol.key, num_folds=protocol.num_folds,
                                         sample_weight=sample_weight, **fit_kwargs)
    if isinstance(protocol, HeldOut):
        return calibrate_held_out(protocol.train_scores, protocol.train_labels, scores, **fit_kwargs)
    return calibrate_train_on_test(scores, labels, sample_weight=sample_weight, **fit_kwargs)


def diagnose(scores: ArrayLike, labels: ArrayLike, *, protocol: CrossValidation | HeldOut | str, metric: str = "xe",
             costs: ArrayLike | None = None, priors: ArrayLike | None = None, score_type: str = "log_posteriors",
             normalize: bool = False, sample_weight: ArrayLike | None = None,
             **fit_kwargs: Any) -> CalibrationDiagnosis:
    """One-call calibration diagnosis: how much of the EPSR is miscalibration?

    Calibrates ``scores`` under ``protocol`` (Ferrer 2022b, §4.2.1):
    :class:`CrossValidation` ``(key, num_folds=5)`` (:func:`calibrate_cross_validated`),
    :class:`HeldOut` ``(train_scores, train_labels)`` (:func:`calibrate_held_out`), or
    ``"train_on_test"`` (:func:`calibrate_train_on_test`, optimistic), and
    reports the raw EPSR, the calibrated EPSR (``EPSRemin``), and the
    absolute and relative calibration loss (Ferrer 2022b, eqs. 59-60).  A large
    relative loss says a calibration stage would help; a small one with a
    large EPSR says the classifier itself must improve.

    ``normalize`` reports the EPSRs normalized by the naive system (the
    relative loss is the same either way; the absolute loss is then in
    normalized units).  ``priors`` are used for both fitting and evaluation.
    ``sample_weight`` (frequency weights of ``scores``/``labels``) weights
    the EPSRs and, under cross-validation and train-on-test, the fit; a
    held-out calibrator is fitted on its own (unweighted) training data.
    ``fit_kwargs`` (``method="affine"`` by default, ``settings``, and for
    cross-validation ``groups``) go to the protocol's function and
    :func:`fit`.  ``CalibrationDiagnosis.protocol`` names the protocol
    (``"cross_validation"``, ``"held_out"`` or ``"train_on_test"``).
    """
    _check_protocol(protocol)
    metric = epsr_metric(metric, costs)
    if CALIBRATORS[v.check_choice(fit_kwargs.get("method", "affine"), "method", METHODS)].output_type == "llr":
        raise v.InputError("diagnose works on posteriors; for LLR calibration use fit(..., method='llr') and "
                           "calibration_loss(..., score_type='llr')")
    res = calibrate(scores, labels, protocol=protocol, priors=priors, score_type=score_type,
                    sample_weight=sample_weight, **fit_kwargs)
    raw = _epsr(metric, labels, scores, costs, priors, score_type, normalize, sample_weight)
    calv = _epsr(metric, labels, res.scores, costs, priors, "log_posteriors", normalize, sample_weight)
    absolute = raw - calv
    relative = relative_calibration_loss(raw, calv)
    return CalibrationDiagnosis(metric, res.protocol, raw, calv, absolute, relative, res.scores, res.calibrator)
