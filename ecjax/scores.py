"""Scores judged by decisions: the EC of Bayes decisions and of the best threshold.

The EC of Bayes decisions is the proper scoring rule of seed 002 §4.1
(eq. 53) for a cost matrix; the EC of the empirically optimal threshold is
its optimistic "minimum" counterpart (what ``expected-cost`` calls
``average_cost_for_bayes_decisions`` and ``average_cost_for_optimal_decisions``).
"""

from __future__ import annotations

from functools import partial

import numpy as np

import jax
import jax.numpy as jnp

from ecjax import _validate as v
from ecjax.confusion import class_counts, confusion_counts
from ecjax.decisions import (
    _prepare,
    bayes_decisions_kernel,
    log_posteriors_kernel,
    naive_expected_cost,
)
from ecjax.metrics import _resolve_priors, expected_value


def _labels_and_scores(labels, scores, priors, score_type):
    scores, log_p = _prepare(scores, None if score_type in ("log_posteriors", "logits") else priors, score_type)
    k = log_p.shape[-1]
    labels = v.as_index_array(labels, "labels", upper=k)
    n_axis = -1 if score_type == "llr" else -2
    v.check_same_length("labels", labels, "scores", scores, axis_b=n_axis)
    if labels.ndim != 1:
        raise v.InputError(f"`labels` must be one vector of N classes, got shape {labels.shape}")
    return labels, scores, log_p, k


def _evaluation_priors(labels, k, priors):
    counts = confusion_counts(labels, labels, num_classes=k, num_decisions=k)
    return counts, _resolve_priors(counts, priors)


def _sample_weights(labels, counts, p):
    """``w_n = P_{y_n} / K_{y_n *}``: EC = sum_n w_n c(y_n, d_n) (seed 000 eqs. 1-2)."""
    n_i = class_counts(counts)
    per_class = jnp.where(n_i > 0, p / jnp.where(n_i > 0, n_i, 1), 0.0)
    return per_class[labels]


@partial(jax.jit, static_argnames=("score_type", "normalize", "batch_size"))
def _bayes_ec(labels, scores, log_p, costs, weights, p, *, score_type, normalize, batch_size):
    log_post = log_posteriors_kernel(scores, log_p, score_type)  # (S, N, K)
    d = costs.shape[-1]

    def one_cost(c):
        dec = bayes_decisions_kernel(log_post, c)  # (S, N)
        per_sample = c.reshape(-1)[labels * d + dec]
        ec = jnp.sum(per_sample * weights, -1)
        return ec / naive_expected_cost(c, p) if normalize else ec

    return jax.lax.map(one_cost, costs, batch_size=batch_size).T  # (S, B)


def bayes_expected_cost(labels, scores, costs, *, priors=None, score_type="log_posteriors", normalize=False,
                        batch_size=16):
    """EC of Bayes decisions made from ``scores`` for each cost matrix.

    ``EC = sum_n w_n c(y_n, d_n)`` with ``d_n`` the Bayes decision (seed 001
    eq. 7) and ``w_n = P_{y_n} / K_{y_n *}`` (seed 000 eq. 2), computed one
    cost matrix at a time (so ``10^3`` matrices on ``10^4 x 100`` scores need
    no ``(B, N, D)`` array).

    Args:
      labels: ``(N,)`` true classes.
      scores: ``(N, K)`` or ``(S, N, K)`` scores of one or ``S`` systems
        (``(..., N)`` for ``"llr"``).
      costs: ``(K, D)`` or ``(B, K, D)`` cost matrices.
      priors: evaluation priors (default: data priors).  For ``"llr"`` and
        ``"log_likelihoods"`` they also turn the scores into posteriors; for
        posterior-type scores the decisions use the posteriors as given, so
        deployment priors that differ from the training priors give
        decisions that are not Bayes-optimal for them (seed 002 §3.2).
      normalize: divide by the EC of the best naive decision (NEC).
      batch_size: cost matrices evaluated together (memory vs speed).

    Returns:
      EC of shape ``scores_batch + costs_batch`` (a scalar for one system
      and one matrix).
    """
    labels, scores, log_p, k = _labels_and_scores(labels, scores, priors, score_type)
    counts, p = _evaluation_priors(labels, k, priors)
    costs = v.as_matrix(costs, "costs", shape=(k, None))
    if costs.ndim > 3:
        raise v.InputError(f"`costs` must be (K, D) or (B, K, D), got shape {tuple(costs.shape)}")
    if normalize and np.any(np.asarray(naive_expected_cost(costs, p)) <= 0):
        raise v.InputError("the best naive system has zero expected cost for these `costs`: NEC is undefined")
    s_batch = scores.shape[: scores.ndim - (1 if score_type == "llr" else 2)]
    if len(s_batch) > 1:
        raise v.InputError(f"`scores` may have at most one batch axis (systems), got shape {tuple(scores.shape)}")
    flat_scores = scores.reshape((-1,) + scores.shape[len(s_batch):])
    flat_costs = costs.reshape((-1,) + costs.shape[-2:])
    w = _sample_weights(labels, counts, p)
    batch_size = v.as_positive_int(batch_size, "batch_size")
    out = _bayes_ec(labels, flat_scores, log_p, flat_costs, w, p,
                    score_type=score_type, normalize=bool(normalize), batch_size=batch_size)
    return out.reshape(s_batch + costs.shape[:-2])


def _log_odds(scores, log_p, score_type):
    if score_type == "llr":
        return scores
    lp = log_posteriors_kernel(scores, log_p, score_type)
    return lp[..., 1] - lp[..., 0]


@jax.jit
def _threshold_sweep(labels, s, costs, p):
    """One sort: the EC at every cut between distinct sorted scores."""
    order = jnp.argsort(s)
    s_sorted = s[order]
    is1 = labels[order] == 1
    zero = jnp.zeros((1,), jnp.int32)
    cum1 = jnp.concatenate([zero, jnp.cumsum(is1, dtype=jnp.int32)])  # class-1 samples below the cut
    cum0 = jnp.arange(s.shape[0] + 1, dtype=jnp.int32) - cum1
    n1, n0 = cum1[-1], cum0[-1]
    # Cut k: the k lowest scores decide 0, the rest decide 1.
    counts = jnp.stack([jnp.stack([cum0, n0 - cum0], -1), jnp.stack([cum1, n1 - cum1], -1)], -2)
    ec = expected_value(counts, costs, p)
    distinct = jnp.concatenate([jnp.array([True]), s_sorted[1:] > s_sorted[:-1], jnp.array([True])])
    ec = jnp.where(distinct, ec, jnp.inf)
    k = jnp.argmin(ec)
    lo = jnp.where(k > 0, s_sorted[jnp.maximum(k - 1, 0)], -jnp.inf)
    hi = jnp.where(k < s.shape[0], s_sorted[jnp.minimum(k, s.shape[0] - 1)], jnp.inf)
    threshold = jnp.where(jnp.isinf(lo) | jnp.isinf(hi), jnp.where(jnp.isinf(lo), lo, hi), 0.5 * (lo + hi))
    return ec[k], threshold


def optimal_threshold_expected_cost(labels, scores, costs=None, *, priors=None, score_type="log_posteriors",
                                    normalize=False):
    """EC at the empirically optimal threshold for binary scores, by one sort.

    Sorts the log-odds ``s = log P(1|x) - log P(0|x)`` (the LLR for
    ``"llr"``), computes the counts at every cut between distinct scores with
    cumulative sums, and returns the least EC: O(N log N), no grid.  Tied
    scores are never split, so the EC is attainable by a real threshold.
    This is optimistic (the threshold is chosen on the test data) and is the
    reference that Bayes decisions of perfectly calibrated scores approach.

    Args:
      labels: ``(N,)`` classes in {0, 1}.
      scores: binary scores of any score type.
      costs: ``(2, 2)`` costs (default 0-1).
      priors, score_type, normalize: as in :func:`bayes_expected_cost`.

    Returns:
      ``(ec, threshold)``: decide class 1 when ``s > threshold``
      (``-inf``: always 1; ``+inf``: always 0).
    """
    labels, scores, log_p, k = _labels_and_scores(labels, scores, priors, score_type)
    if k != 2:
        raise v.InputError(f"optimal thresholds need binary scores (K = 2), got K = {k}")
    costs = jnp.asarray(1.0 - jnp.eye(2)) if costs is None else v.as_matrix(costs, "costs", shape=(2, 2))
    if costs.ndim != 2:
        raise v.InputError(f"`costs` must be one (2, 2) matrix, got shape {tuple(costs.shape)}")
    if scores.ndim != (1 if score_type == "llr" else 2):
        raise v.InputError(f"`scores` must be for one system, got shape {tuple(scores.shape)}")
    _, p = _evaluation_priors(labels, 2, priors)
    ec, thr = _threshold_sweep(labels, _log_odds(scores, log_p, score_type), costs, p)
    if normalize:
        naive = naive_expected_cost(costs, p)
        if float(naive) <= 0:
            raise v.InputError("the best naive system has zero expected cost for these `costs`: NEC is undefined")
        ec = ec / naive
    return ec, thr
