"""Decisions: posteriors from scores, Bayes decisions and the naive decision.

Scores follow DESIGN.md: ``(..., N, K)`` log-posteriors by default, or
``"logits"`` (log-softmax applied), ``"probabilities"`` (logged by the
validator, see :func:`~ecjax._src.inputs.as_scores`), ``"llr"`` (binary log-likelihood ratio
``log p(x|1) - log p(x|0)``, shape ``(..., N)``) and ``"log_likelihoods"``
(combined with priors by Bayes' rule, Ferrer (2022b) eqs. 45-47).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.costs import StructuredCosts
from ecjax._src.precision import argmin_of_products, check_precision, einsum


def log_posteriors_kernel(scores: jax.Array, log_priors: jax.Array, score_type: str) -> jax.Array:
    """Kernel: ``(..., N, K)`` log-posteriors from validated scores, by their kind
    (:data:`~ecjax._src.inputs.KIND_OF_SCORE_TYPE` of ``score_type``, which may be a kind already).

    ``log_priors`` is used only for likelihood-type scores.
    """
    kind = v.KIND_OF_SCORE_TYPE[score_type]
    if kind == "posterior":
        # log_softmax normalizes logits; already normalized logs (log-posteriors, probabilities logged by the
        # validator) lose their float32 round-off.
        return jax.nn.log_softmax(scores, axis=-1)
    if kind == "likelihood":
        return jax.nn.log_softmax(scores + log_priors[..., None, :], axis=-1)
    # llr: log-odds of class 1 = llr + log(P1 / P0), in the log domain via log_sigmoid.
    log_odds = scores + (log_priors[..., 1] - log_priors[..., 0])[..., None]
    return jnp.stack([jax.nn.log_sigmoid(-log_odds), jax.nn.log_sigmoid(log_odds)], axis=-1)


def class_one_log_odds_kernel(scores: jax.Array, score_type: str, log_priors: jax.Array | None = None) -> jax.Array:
    """Class-1 log-odds of binary scores: what a threshold on binary scores compares against.

    ``"llr"`` scores are used as they are.  ``"log_likelihoods"`` give the
    LLR ``l_1 - l_0``, plus the prior log-odds ``log P_1 - log P_0`` when
    ``log_priors`` are given (the posterior log-odds).  Posterior-type
    scores give ``log P(1|x) - log P(0|x)`` of :func:`log_posteriors_kernel`.
    The one place that turns binary scores into log-odds (ROC family,
    thresholds, sweeps).  Kernel: no validation; it branches on the kind of ``score_type``
    (:data:`~ecjax._src.inputs.KIND_OF_SCORE_TYPE`).
    """
    kind = v.KIND_OF_SCORE_TYPE[score_type]
    if kind == "llr":
        return scores
    if kind == "likelihood" and log_priors is None:
        return scores[..., 1] - scores[..., 0]
    lp = log_posteriors_kernel(scores, jnp.zeros(2, scores.dtype) if log_priors is None else log_priors, kind)
    return lp[..., 1] - lp[..., 0]


def one_vs_rest_log_odds(s: jax.Array) -> jax.Array:
    """``(..., K)`` log-odds of each class against the others, ``s_k - log sum_{j != k} exp(s_j)``, from scores
    ``s`` (``(..., K)``, log-posteriors up to a constant per row).

    A strictly increasing function of ``P(k|x)``, so it ranks samples as the posterior does, without its
    saturation: in float32 ``log P(k|x)`` of a class ahead of the others by more than ~17 nats rounds to exactly
    0, which would tie every such sample (the one-vs-rest and one-vs-one AUCs, risk-coverage curves), while its
    log-odds ``-log sum_{j != k} P(j|x)`` keep them apart up to float32's range.  Also the input of the
    one-vs-rest isotonic calibrator.

    Where ``s_k - logsumexp(s) <= -log 2`` (every class but the top one, and the top one at ``P(k|x) <= 1/2``),
    ``log1p(-exp(.))`` of it keeps its digits and is a function of the log-posterior alone, so equal posteriors
    keep equal log-odds (a tie stays a tie for the AUCs); a top class above 1/2 has its rest summed directly
    (without it), so a posterior that rounds to 1 still gets a finite log-odds from the mass of the others.
    """
    lse = jax.nn.logsumexp(s, axis=-1, keepdims=True)
    is_top = (jnp.arange(s.shape[-1]) == jnp.argmax(s, axis=-1)[..., None]) & (s - lse > -jnp.log(2.0).astype(s.dtype))
    rest_of_top = jax.nn.logsumexp(jnp.where(is_top, -jnp.inf, s), axis=-1, keepdims=True)
    rest = lse + jnp.log1p(-jnp.exp(jnp.minimum(s - lse, -jnp.log(2.0).astype(s.dtype))))
    return s - jnp.where(is_top, rest_of_top, rest)


def log_likelihoods_from_posteriors(scores: ArrayLike, training_priors: ArrayLike, *,
                                    score_type: str = "log_posteriors") -> jax.Array:
    """Posterior-type scores as log-likelihoods, given the priors they were trained with.

    Bayes' rule read backwards (Ferrer 2022b, §3.2): ``log P(x | i) = log P(i | x)
    - log pi_i + c(x)``, where ``pi`` are the training priors and ``c(x)``
    does not depend on the class (so it changes no posterior or decision).
    Used with ``score_type="log_likelihoods"`` and deployment priors, the
    result decides for the deployment priors.

    Args:
      scores: ``(..., N, K)`` log-posteriors or logits.
      training_priors: ``(K,)`` priors the scores were trained with, all > 0.
      score_type: ``"log_posteriors"`` or ``"logits"``.

    Returns:
      ``(..., N, K)`` log-likelihoods (up to a per-sample constant).
    """
    v.check_posterior_type(score_type, "training_priors", why=": pass the deployment `priors` only")
    s = v.as_scores(scores, score_type=score_type)
    train = v.as_positive_priors(training_priors, "training_priors", num_classes=s.shape[-1],
                                 why=" (a posterior trained with a prior of 0 cannot be re-weighted)")
    return jax.nn.log_softmax(s, axis=-1) - jnp.log(train)


def _with_training_priors(scores, priors, score_type, training_priors):
    """``(scores, priors, score_type)`` with posterior-type scores of known training priors as log-likelihoods;
    without deployment ``priors`` the training priors decide, which gives back the posteriors as they were."""
    if training_priors is None:
        return scores, priors, score_type
    log_likelihoods = log_likelihoods_from_posteriors(scores, training_priors, score_type=score_type)
    # Made here from checked scores (finite): kept as canonical, not checked again.
    canonical = v.Scores(log_likelihoods, int(log_likelihoods.shape[-1]), "log_likelihoods")
    return canonical, training_priors if priors is None else priors, "log_likelihoods"


def log_posteriors(scores: ArrayLike, *, priors: ArrayLike | None = None, score_type: str = "log_posteriors",
                   training_priors: ArrayLike | None = None) -> jax.Array:
    """Log-posteriors ``log P(i | x)`` of shape ``(..., N, K)`` from any score type.

    ``priors`` is required for ``"llr"`` and ``"log_likelihoods"``.  With
    posterior-type scores it needs ``training_priors`` (the class priors the
    scores were trained with, or the class frequencies of the training data):
    the posteriors are then re-weighted to ``priors``, ``P'(i | x) ∝ P(i | x)
    priors_i / training_priors_i`` (Ferrer 2022b, §3.2); without
    ``training_priors`` it is refused (see :func:`bayes_decisions`).
    """
    scores, priors, score_type = _with_training_priors(scores, priors, score_type, training_priors)
    s, log_p = v.scores_and_log_priors(scores, priors, score_type)
    return log_posteriors_kernel(s, log_p, score_type)


def bayes_decisions_kernel(log_post: jax.Array, costs: jax.Array | StructuredCosts,
                           precision: str = "exact") -> jax.Array:
    """Kernel: ``argmin_j sum_i c_ij P(i | x)`` (Ferrer 2025, eq. 7).

    Structured costs (:class:`~ecjax.costs.StructuredCosts`) in ``O(N K)``, no
    ``K x D`` product: deciding ``j < K`` costs ``sum_i P(i | x) wrong_i +
    P(j | x) (correct_j - wrong_j)``, abstaining ``sum_i P(i | x) abstain_i``.

    ``log_post`` is ``(..., N, K)``, ``costs`` ``(..., K, D)``; their batch
    axes broadcast.  Ties go to the lowest decision index.  ``precision``:
    ``"exact"``, a float32 product on every backend
    (:func:`~ecjax._src.precision.argmin_of_products`).

    A sample whose log posteriors hold a NaN gets ``-1`` (the NaN contract
    of traced input, see :mod:`ecjax.inputs`): under ``jit``/``vmap``
    no error can be raised, and any decision would be a silent guess.
    """
    if isinstance(costs, StructuredCosts):
        p = jnp.exp(log_post)
        fields = costs.map(lambda x: x[..., None, :])  # (..., 1, K): broadcast over the samples
        expected = jnp.sum(p * fields.wrong, -1, keepdims=True) + p * (fields.correct - fields.wrong)
        if fields.abstain is not None:
            expected = jnp.concatenate([expected, jnp.sum(p * fields.abstain, -1, keepdims=True)], -1)
        decisions = jnp.argmin(expected, -1).astype(jnp.int32)
    else:
        decisions = argmin_of_products(jnp.exp(log_post), costs, precision=precision)
    return jnp.where(jnp.any(jnp.isnan(log_post), -1), v.INVALID_INDEX, decisions)


def bayes_decisions(scores: ArrayLike, costs: ArrayLike | StructuredCosts, *, priors: ArrayLike | None = None,
                    score_type: str = "log_posteriors", precision: str = "exact",
                    training_priors: ArrayLike | None = None) -> jax.Array:
    """Bayes decisions: the decision of least expected cost for each sample.

    ``d(x) = argmin_j sum_i c_ij P(i | x)`` (Ferrer 2025, eq. 7); with an
    abstention column in ``costs`` this is the abstention rule of Ferrer (2025)
    App. B.

    Args:
      scores: ``(..., N, K)`` scores (``(..., N)`` for ``"llr"``).
      costs: ``(..., K, D)`` cost matrix or matrices; batch axes broadcast
        with those of ``scores`` (``(B, K, D)`` costs on ``(N, K)`` scores
        give ``(B, N)`` decisions).  Or structured costs
        (:class:`~ecjax.costs.StructuredCosts`, any ``K``: see
        :func:`bayes_decisions_kernel`).
      priors: ``(K,)`` priors, required for ``"llr"`` and
        ``"log_likelihoods"``.  Posterior-type scores already carry their
        training priors, so passing priors with them raises
        :class:`InputError` rather than being silently ignored, unless
        ``training_priors`` says what those were.
      score_type: one of ``"log_posteriors"``, ``"logits"``, ``"llr"``,
        ``"log_likelihoods"``.
      precision: ``"exact"`` (float32 products on every backend); the
        former ``"fast"`` is refused with the reason (:mod:`ecjax.precision`).
      training_priors: ``(K,)`` priors the posterior-type scores were
        trained with: the posteriors are re-weighted to ``priors`` before
        deciding (see :func:`log_posteriors`).

    Returns:
      ``(..., N)`` int32 decisions in ``[0, D)``; ties go to the lowest index.
    """
    precision = check_precision(precision)
    scores, priors, score_type = _with_training_priors(scores, priors, score_type, training_priors)
    s, log_p = v.scores_and_log_priors(scores, priors, score_type)
    k = log_p.shape[-1]
    c: jax.Array | StructuredCosts
    if isinstance(costs, StructuredCosts):
        v.check_cost_size(costs.num_classes, costs.num_decisions, k, costs.num_decisions, against="the scores")
        c = costs
    else:
        c = v.as_matrix(costs, "costs", shape=(k, None))
    batch = s.shape[: s.ndim - (1 if score_type == "llr" else 2)]
    v.check_batch_axes_broadcast("scores", s.shape, batch, "costs", c.shape, c.shape[:-2])
    return _bayes_decisions_jit(s, log_p, c, score_type, precision)


@partial(jax.jit, static_argnames=("score_type", "precision"))
def _bayes_decisions_jit(scores, log_p, costs, score_type, precision):
    return bayes_decisions_kernel(log_posteriors_kernel(scores, log_p, score_type), costs, precision)


def binary_bayes_threshold(costs: ArrayLike, priors: ArrayLike, *, score_type: str = "log_posteriors",
                           training_priors: ArrayLike | None = None) -> float:
    """The Bayes threshold on the class-1 log-odds of binary scores: deciding class 1 iff they exceed it.

    Deciding 1 costs less iff ``P1 (c10 - c11) > P0 (c01 - c00)``, that is iff the posterior log-odds exceed
    ``log((c01 - c00) / (c10 - c11))``.  For LLRs the prior log-odds ``log(P1 / P0)`` move it (Ferrer 2025,
    eq. 20); for posteriors re-weighted from ``training_priors`` ``t`` to ``priors`` the move is that of the prior
    log-odds less the training log-odds ``log(t1 / t0)``; posteriors used as given are not moved.  Host float64.
    """
    c = np.asarray(costs, np.float64)
    p = np.asarray(priors, np.float64)
    threshold = np.log((c[0, 1] - c[0, 0]) / (c[1, 0] - c[1, 1]))
    if score_type == "llr":
        threshold -= np.log(p[1] / p[0])
    elif training_priors is not None:
        t = np.asarray(training_priors, np.float64)
        threshold -= np.log(p[1] / p[0]) - np.log(t[1] / t[0])
    return float(threshold)


def naive_expected_cost(costs: ArrayLike | StructuredCosts, priors: ArrayLike) -> jax.Array:
    """EC of the best naive system, ``min_d sum_i c_id P_i`` (Ferrer 2022a, eq. 3).

    ``costs`` ``(..., K, D)`` and ``priors`` ``(..., K)`` broadcast.  Kernel
    (no validation): it is the denominator of every normalized EC.

    Structured costs (:class:`~ecjax.costs.StructuredCosts`) in ``O(K)``:
    always deciding ``d < K`` costs ``sum_i P_i wrong_i + P_d (correct_d -
    wrong_d)``, always abstaining ``sum_i P_i abstain_i``.
    """
    if isinstance(costs, StructuredCosts):
        p = jnp.asarray(priors)
        per_decision = jnp.sum(p * costs.wrong, -1)[..., None] + p * (costs.correct - costs.wrong)
        best = jnp.min(per_decision, axis=-1)
        return best if costs.abstain is None else jnp.minimum(best, jnp.sum(p * costs.abstain, -1))
    return jnp.min(einsum("...i,...ij->...j", priors, costs), axis=-1)


def naive_decision(costs: ArrayLike, priors: ArrayLike) -> jax.Array:
    """The best naive decision ``argmin_d sum_i c_id P_i`` (Ferrer 2022a, eq. 3).

    The decision a system that ignores its input should always make.
    """
    c = v.as_matrix(costs, "costs")
    p = v.as_priors(priors, num_classes=c.shape[-2])
    return jnp.argmin(einsum("...i,...ij->...j", p, c), axis=-1).astype(jnp.int32)
