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

from ecjax import inputs as v
from ecjax.confusion import class_counts, confusion_counts
from ecjax.decisions import (
    bayes_decisions_kernel,
    log_posteriors_kernel,
    naive_expected_cost,
)
from ecjax.metrics import resolve_priors, expected_value
from ecjax.precision import (
    argmin_and_near_ties,
    check_precision,
    einsum,
    fast_error_bound,
    fast_matmul,
    matmul,
    refine_argmins,
)


def _labels_and_scores(labels, scores, priors, score_type):
    scores, log_p = v.scores_and_log_priors(scores, None if score_type in v.POSTERIOR_TYPES else priors, score_type)
    k = log_p.shape[-1]
    labels = v.as_index_array(labels, "labels", upper=k)
    n_axis = -1 if score_type == "llr" else -2
    v.check_same_length("labels", labels, "scores", scores, axis_b=n_axis)
    if labels.ndim != 1:
        raise v.InputError(f"`labels` must be one vector of N classes, got shape {labels.shape}")
    return labels, scores, log_p, k


def _check_weighted_classes(labels, sample_weight, num_classes, priors):
    """Weights must leave something to average: any weight with data priors, each prior-weighted class otherwise."""
    if sample_weight is None or v.any_traced(labels, sample_weight, priors):
        return
    y = np.asarray(labels)
    w = np.asarray(sample_weight, dtype=np.float64)
    totals = np.bincount(y, weights=w, minlength=num_classes)
    if not totals.sum() > 0:
        raise v.InputError("`sample_weight` is 0 for every sample: there is nothing to average")
    if priors is not None:
        p = np.asarray(v.as_priors(priors, num_classes=num_classes))
        present = np.bincount(y, minlength=num_classes) > 0
        zeroed = present & (totals == 0) & (p > 0)
        if np.any(zeroed):
            raise v.InputError(f"`sample_weight` is 0 for every sample of class {int(np.flatnonzero(zeroed)[0])}, "
                               "which has a non-zero prior in `priors`: its weighted average is undefined")


def _weights_ok(sample_weight):
    """Traced-input mask of valid weights (the NaN contract): finite, non-negative, some positive."""
    if sample_weight is None:
        return jnp.asarray(True)
    return jnp.all(jnp.isfinite(sample_weight) & (sample_weight >= 0)) & (jnp.sum(sample_weight) > 0)


def _evaluation_priors(labels, k, priors, sample_weight=None):
    """Class counts (weighted: class weight totals) and the evaluation priors they give."""
    _check_weighted_classes(labels, sample_weight, k, priors)
    counts = confusion_counts(labels, labels, sample_weight, num_classes=k, num_decisions=k)
    return counts, resolve_priors(counts, priors)


@partial(jax.jit, static_argnames=("score_type", "normalize", "batch_size", "precision"))
def _bayes_ec(labels, scores, log_p, costs, class_weights, p, sample_weight=None, *, score_type, normalize,
              batch_size, precision):
    post = jnp.exp(log_posteriors_kernel(scores, log_p, score_type))  # (S, N, K)
    s, n, k = post.shape
    b, _, d = costs.shape
    pad = (-b) % batch_size
    chunks = jnp.concatenate([costs, jnp.zeros((pad, k, d), costs.dtype)]).reshape(-1, batch_size, k, d)
    flat_post = post.reshape(s * n, k)
    true_one_hot = jax.nn.one_hot(labels, k, dtype=post.dtype)  # (N, K)
    if sample_weight is not None:
        true_one_hot = true_one_hot * sample_weight[:, None]  # per-class sums become weighted sums
    cell = labels[None, :, None] * d  # offset of the true class's row in each flattened cost matrix

    def decisions(c):
        # One GEMM for the whole chunk: (S*N, K) @ (K, D*batch) is far faster than batch small matmuls.
        # Columns ordered (decision, matrix): the argmin then runs over a major axis and vectorizes
        # over the matrices, ~1.7x faster on CPU than reducing a minor axis of size D.
        columns = c.transpose(1, 2, 0).reshape(k, d * batch_size)
        if precision == "exact":
            expected = matmul(flat_post, columns).reshape(s * n, d, batch_size)
            return jnp.argmin(expected, axis=1)  # Bayes decisions (seed 001 eq. 7); ties: lowest j
        fast = fast_matmul(flat_post, columns).reshape(s * n, d, batch_size)
        bound = fast_error_bound(k, jnp.max(jnp.abs(c), axis=(1, 2)))  # (batch,)
        dec, near = argmin_and_near_ties(fast, bound[None], axis=1)  # (S*N, batch)

        def exact_values(t):  # entry t = row * batch + matrix
            return einsum("tk,tkd->td", flat_post[t // batch_size], c[t % batch_size])

        return refine_argmins(dec.reshape(-1), near.reshape(-1), exact_values,
                              floats_per_pair=k * d + k).reshape(s * n, batch_size)

    def chunk(c):
        dec = decisions(c).reshape(s, n, batch_size)
        incurred = jnp.take_along_axis(c.reshape(batch_size, k * d).T[None], cell + dec, axis=1)  # c[y_n, d_n]
        # Sum per class first (short sums), then weight by P_i / K_i*: one long float32 dot over all
        # samples loses ~1e-5 relative accuracy on 10^4 samples, the per-class route ~1e-7.
        per_class = einsum("nk,snb->sbk", true_one_hot, incurred)
        return matmul(per_class, class_weights)

    ec = jax.lax.map(chunk, chunks)  # (chunks, S, batch)
    ec = ec.transpose(1, 0, 2).reshape(s, -1)[:, :b]
    return ec / naive_expected_cost(costs, p)[None] if normalize else ec


def _default_batch_size(num_rows, num_decisions, num_costs):
    # Aim at ~4M floats for each chunk's GEMM output: big enough for BLAS, small enough for cache and memory.
    return int(max(1, min(num_costs, 4_000_000 // max(1, num_rows * num_decisions))))


def bayes_expected_cost(labels, scores, costs, *, priors=None, score_type="log_posteriors", normalize=False,
                        batch_size=None, precision="exact", sample_weight=None):
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
      batch_size: cost matrices evaluated together in one matrix product
        (memory vs speed); default: about 4M floats of expected costs.
      precision: ``"exact"`` or ``"fast"`` (tensor-core products with the
        near ties recomputed in float32: the same decisions, see
        :func:`ecjax.decisions.bayes_decisions`).
      sample_weight: optional ``(N,)`` non-negative sample weights
        (scikit-learn's meaning): ``K_i*`` becomes the class's weight total
        ``W_i``, the data priors ``W_i / W`` and ``w_n = P_{y_n} u_n /
        W_{y_n}`` for sample weight ``u_n``, so an integer weight ``k`` is
        ``k`` copies of the sample (as ``expected_cost``'s
        ``average_cost_for_bayes_decisions(..., sample_weight=)``).

    Returns:
      EC of shape ``scores_batch + costs_batch`` (a scalar for one system
      and one matrix).
    """
    precision = check_precision(precision)
    labels, scores, log_p, k = _labels_and_scores(labels, scores, priors, score_type)
    sample_weight = v.as_sample_weight(sample_weight, labels)
    counts, p = _evaluation_priors(labels, k, priors, sample_weight)
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
    n_i = class_counts(counts)
    class_weights = jnp.where(n_i > 0, p / jnp.where(n_i > 0, n_i, 1), 0.0)  # P_i / K_i* (seed 000 eq. 2)
    if batch_size is None:
        batch_size = _default_batch_size(flat_scores.shape[0] * labels.shape[0], costs.shape[-1], flat_costs.shape[0])
    batch_size = v.as_positive_int(batch_size, "batch_size")
    out = _bayes_ec(labels, flat_scores, log_p, flat_costs, class_weights, p, sample_weight,
                    score_type=score_type, normalize=bool(normalize), batch_size=batch_size, precision=precision)
    return out.reshape(s_batch + costs.shape[:-2])


def _log_odds(scores, log_p, score_type):
    if score_type == "llr":
        return scores
    lp = log_posteriors_kernel(scores, log_p, score_type)
    return lp[..., 1] - lp[..., 0]


@jax.jit
def _threshold_curve(labels, s, costs, p, sample_weight=None):
    """One sort: the EC at every cut of the sorted scores (``+inf`` where a cut would split ties).

    The rates at each cut, ``R = [[1 - fa, fa], [miss, 1 - miss]]``, go
    straight into the EC kernel (rates are their own row-normalized counts).
    """
    s_sorted, miss, fa, valid = _cuts(labels, s, sample_weight)
    rates_at_cut = jnp.stack([jnp.stack([1.0 - fa, fa], -1), jnp.stack([miss, 1.0 - miss], -1)], -2)
    return s_sorted, jnp.where(valid, expected_value(rates_at_cut, costs, p), jnp.inf)


@jax.jit
def _threshold_sweep(labels, s, costs, p, sample_weight=None):
    s_sorted, ec = _threshold_curve(labels, s, costs, p, sample_weight)
    k = jnp.argmin(ec)
    return ec[k], _cut_threshold(s_sorted, k)


def _binary_threshold_inputs(labels, scores, costs, priors, score_type, sample_weight=None):
    labels, scores, log_p, k = _labels_and_scores(labels, scores, priors, score_type)
    sample_weight = v.as_sample_weight(sample_weight, labels)
    if k != 2:
        raise v.InputError(f"thresholds need binary scores (K = 2), got K = {k}")
    costs = jnp.asarray(1.0 - jnp.eye(2)) if costs is None else v.as_matrix(costs, "costs", shape=(2, 2))
    if costs.ndim != 2:
        raise v.InputError(f"`costs` must be one (2, 2) matrix, got shape {tuple(costs.shape)}")
    if scores.ndim != (1 if score_type == "llr" else 2):
        raise v.InputError(f"`scores` must be for one system, got shape {tuple(scores.shape)}")
    _, p = _evaluation_priors(labels, 2, priors, sample_weight)
    s = _log_odds(scores, log_p, score_type)
    labels, s, sample_weight = _drop_zero_weights(labels, s, sample_weight)
    return labels, s, costs, p, sample_weight


def _drop_zero_weights(labels, s, sample_weight):
    """Concrete input: leave out samples of weight 0, as if absent (as scikit-learn's curves do).

    Otherwise their scores would add cuts (thresholds) that no sample with
    weight moves; under ``jit`` they stay, with the same rates at every cut.
    """
    if sample_weight is None or v.any_traced(labels, s, sample_weight):
        return labels, s, sample_weight
    keep = np.asarray(sample_weight) > 0
    if keep.all():
        return labels, s, sample_weight
    keep = jnp.asarray(keep)
    return labels[keep], s[keep], sample_weight[keep]


def _normalizer(costs, p, normalize):
    if not normalize:
        return 1.0
    naive = naive_expected_cost(costs, p)
    if float(naive) <= 0:
        raise v.InputError("the best naive system has zero expected cost for these `costs`: NEC is undefined")
    return naive


def expected_cost_vs_threshold(labels, scores, costs=None, *, priors=None, score_type="log_posteriors",
                               normalize=False, sample_weight=None):
    """EC (or NEC) of "decide 1 iff s > t" at every threshold that changes a decision (one sort).

    ``s`` is the class-1 log-odds of the scores (the LLR for ``"llr"``); the
    curve of seed 002 Fig. 3.  Thresholds sit halfway between consecutive
    distinct scores, plus ``-inf`` (always 1) and ``+inf`` (always 0).

    With ``sample_weight`` (see :func:`bayes_expected_cost`) the rates at
    each cut are weighted fractions of each class; samples of weight 0 are
    left out (they would only add thresholds).

    Returns:
      ``(thresholds, ec)`` as numpy arrays, thresholds increasing.
    """
    labels, s, costs, p, sample_weight = _binary_threshold_inputs(labels, scores, costs, priors, score_type,
                                                                  sample_weight)
    s_sorted, ec = _threshold_curve(labels, s, costs, p, sample_weight)
    keep = np.isfinite(np.asarray(ec))
    cuts = np.nonzero(keep)[0]
    thresholds = np.asarray(jax.vmap(lambda k: _cut_threshold(s_sorted, k))(jnp.asarray(cuts)))
    return thresholds, np.asarray(ec)[keep] / float(_normalizer(costs, p, normalize))


def optimal_threshold_expected_cost(labels, scores, costs=None, *, priors=None, score_type="log_posteriors",
                                    normalize=False, sample_weight=None):
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
      priors, score_type, normalize, sample_weight: as in
        :func:`bayes_expected_cost` (weighted rates at each cut; samples of
        weight 0 left out).

    Returns:
      ``(ec, threshold)``: decide class 1 when ``s > threshold``
      (``-inf``: always 1; ``+inf``: always 0).
    """
    labels, s, costs, p, sample_weight = _binary_threshold_inputs(labels, scores, costs, priors, score_type,
                                                                  sample_weight)
    ec, thr = _threshold_sweep(labels, s, costs, p, sample_weight)
    return ec / _normalizer(costs, p, normalize), thr


# =============================================================================
# Proper scoring rules, discrimination metrics, ECE and Bayes-risk curves
# (seed 002 §4).  Appended below the EC functions above; imports that only
# this part needs are kept here so the two parts can be edited independently.
# =============================================================================

from typing import NamedTuple  # noqa: E402

from ecjax.confusion import class_counts, confusion_counts  # noqa: E402
from ecjax.metrics import resolve_priors  # noqa: E402

ECE_BINNINGS = ("equal_width", "equal_mass")
ECE_VARIANTS = ("auto", "binary", "top_label")


# ------------------------------------------------------------------ inputs

def _psr_inputs(labels, scores, priors, score_type, sample_weight=None):
    """Validated ``(labels, log_posteriors, evaluation priors, class counts)``.

    For ``"llr"`` and ``"log_likelihoods"`` the priors also turn scores into
    posteriors (and are required); for posterior-type scores they are only
    the evaluation (deployment) priors.  With ``sample_weight`` (already
    validated by :func:`ecjax.inputs.as_sample_weight`) the class counts are the classes'
    weight totals, and the data priors their fractions.
    """
    a, neg_inf = v.as_log_domain_scores(scores, score_type)
    likelihood_type = score_type in v.LIKELIHOOD_TYPES
    s, log_p = v.scores_and_log_priors(a, priors if likelihood_type else None, score_type)
    s = v.restore_neg_inf(s, neg_inf)
    k = log_p.shape[-1]
    labels = v.as_index_array(labels, "labels", upper=k)
    if labels.ndim != 1:
        raise v.InputError(f"`labels` must be one vector of N classes, got shape {labels.shape}")
    v.check_same_length("labels", labels, "scores", s, axis_b=-1 if score_type == "llr" else -2)
    if sample_weight is not None:
        v.check_same_length("labels", labels, "sample_weight", sample_weight)
    _check_weighted_classes(labels, sample_weight, k, priors)
    counts = confusion_counts(labels, labels, sample_weight, num_classes=k, num_decisions=k)
    p = resolve_priors(counts, priors)
    log_post = log_posteriors_kernel(s, log_p, score_type)
    return labels, log_post, p, class_counts(counts)


def class_weights(n_i, priors):
    """Kernel: per-class sample weights ``P_i / N_i`` (seed 002 eqs. 53-54, 57).

    With them every EPSR is ``sum_n w_{y_n} C*(y_n, s_n)``: the per-class
    average of the loss weighted by the (deployment) priors.  A class with no
    samples gets weight 0.
    """
    return jnp.where(n_i > 0, priors / jnp.where(n_i > 0, n_i, 1), 0.0)


def _scores_ok(labels, log_post, n_i=None, p=None, priors_given=False):
    """Traced-input mask (the NaN contract of :mod:`ecjax.inputs`), one entry per system.

    Invalid labels arrive as ``-1`` from :func:`ecjax.inputs.as_index_array`; NaN (or ``+inf``)
    scores give NaN log-posteriors; deployment priors must be a distribution that gives no
    weight to a class absent from the data.
    """
    ok = jnp.all(labels >= 0) & ~jnp.any(jnp.isnan(log_post), axis=(-2, -1))
    if priors_given:
        ok = ok & jnp.all(p >= 0) & (jnp.abs(jnp.sum(p) - 1.0) <= v.SUM_TOL) & ~jnp.any((n_i == 0) & (p > 0))
    return ok


def _check_normalizable(naive, what):
    if not v.is_tracer(naive) and np.any(np.asarray(naive) <= 0):
        raise v.InputError(
            f"the naive {what} is 0 (the priors put all mass on one class, e.g. a single-class label set): "
            "the normalized value is undefined; use normalize=False"
        )


# ------------------------------------------------------- proper scoring rules

def cross_entropy_kernel(labels, log_post, weights):
    """Kernel: ``-sum_n w_n log s_{y_n}(x_n)`` (seed 002 eq. 53).

    ``log_post`` ``(..., N, K)``; ``weights`` ``(N,)``.  Works on the log
    posteriors directly, so a true-class posterior of 0 (``-inf``) gives
    ``+inf`` and never NaN; samples with weight 0 contribute 0 even then.
    """
    idx = jnp.broadcast_to(labels[:, None], log_post.shape[:-1] + (1,))
    true_lp = jnp.take_along_axis(log_post, idx, axis=-1)[..., 0]
    return jnp.sum(jnp.where(weights > 0, -weights * true_lp, 0.0), axis=-1)


def brier_kernel(labels, log_post, weights):
    """Kernel: ``sum_n w_n (1/K) sum_i (s_i(x_n) - [y_n = i])^2`` (seed 002 eq. 57)."""
    k = log_post.shape[-1]
    sq = jnp.sum((jnp.exp(log_post) - jax.nn.one_hot(labels, k, dtype=log_post.dtype)) ** 2, axis=-1) / k
    return jnp.sum(weights * sq, axis=-1)


def naive_cross_entropy(priors):
    """XE of the naive system that outputs the priors: ``-sum_i P_i log P_i``."""
    return -jnp.sum(jnp.where(priors > 0, priors * jnp.log(jnp.where(priors > 0, priors, 1.0)), 0.0), -1)


def naive_brier(priors):
    """Brier score of the naive system that outputs the priors: ``(1/K) sum_i P_i (1 - P_i)``."""
    return jnp.sum(priors * (1.0 - priors), -1) / priors.shape[-1]


@partial(jax.jit, static_argnames=("rule", "normalize"))
def _psr(labels, log_post, p, n_i, sample_weight=None, *, rule, normalize):
    w = class_weights(n_i, p)[labels]
    if sample_weight is not None:
        w = w * sample_weight  # P_i u_n / W_i: n_i holds the class weight totals W_i
    if rule == "xe":
        value = cross_entropy_kernel(labels, log_post, w)
        return value / naive_cross_entropy(p) if normalize else value
    value = brier_kernel(labels, log_post, w)
    return value / naive_brier(p) if normalize else value


def _psr_public(rule, labels, scores, priors, score_type, normalize, sample_weight=None):
    sample_weight = _validated_weight(labels, sample_weight)
    labels, log_post, p, n_i = _psr_inputs(labels, scores, priors, score_type, sample_weight)
    naive = naive_cross_entropy(p) if rule == "xe" else naive_brier(p)
    if normalize:
        _check_normalizable(naive, "cross-entropy" if rule == "xe" else "Brier score")
    out = _psr(labels, log_post, p, n_i, sample_weight, rule=rule, normalize=bool(normalize))
    if v.any_traced(labels, log_post, p, sample_weight):
        ok = _scores_ok(labels, log_post, n_i, p, priors is not None) & _weights_ok(sample_weight)
        out = v.nan_where_invalid(out, ok & (naive > 0) if normalize else ok)
    return out


def cross_entropy(labels, scores, *, priors=None, score_type="log_posteriors", normalize=False, sample_weight=None):
    """Cross-entropy (empirical expected logarithmic loss) of the scores.

    ``XE = -sum_i (P_i / N_i) sum_{n: y_n = i} log s_i(x_n)`` (seed 002
    eqs. 52-54): the per-class average of ``-log`` of the true-class
    posterior, weighted by the priors.  Computed from log-posteriors, so a
    posterior of exactly 0 for the true class (``-inf``) gives ``+inf`` (not
    NaN) and LLRs of +-1e4 are exact.

    Args:
      labels: ``(N,)`` true classes.
      scores: ``(N, K)`` or ``(S, N, K)`` scores (``(..., N)`` for ``"llr"``);
        ``-inf`` is allowed (a zero probability), NaN and ``+inf`` are not.
      priors: evaluation priors ``P_i`` (default: data priors).  For
        ``"llr"``/``"log_likelihoods"`` they also turn scores into posteriors
        (required then).
      score_type: ``"log_posteriors"`` (default), ``"logits"``, ``"llr"`` or
        ``"log_likelihoods"``.
      normalize: divide by the XE of the naive system that outputs the priors,
        ``-sum_i P_i log P_i`` (seed 002 §4.1.2); values above 1 are worse than
        that system.  Same as ``psrcal.losses.LogLoss(norm=True)``.
      sample_weight: optional ``(N,)`` non-negative weights (scikit-learn's
        meaning): ``N_i`` becomes the class weight total ``W_i`` and each
        sample's loss is multiplied by its weight, ``XE = -sum_i (P_i / W_i)
        sum_{n: y_n = i} u_n log s_i(x_n)``; with data priors ``P_i = W_i /
        W`` this is ``sklearn.metrics.log_loss(..., sample_weight=)``.  An
        integer weight ``k`` is ``k`` copies of the sample.

    Returns:
      The XE (in nats), one per system.

    Example:
      >>> float(cross_entropy([0, 1], jnp.log(jnp.array([[0.5, 0.5], [0.5, 0.5]]))))  # doctest: +ELLIPSIS
      0.693...
    """
    return _psr_public("xe", labels, scores, priors, score_type, normalize, sample_weight)


def brier(labels, scores, *, priors=None, score_type="log_posteriors", normalize=False, sample_weight=None):
    """Brier score ``sum_i (P_i/N_i) sum_{n: y_n=i} (1/K) sum_j (s_j(x_n) - [j = i])^2``.

    Seed 002 eqs. 56-57 (note the ``1/K``: the mean over classes, as in
    ``psrcal.losses.Brier``).  ``normalize`` divides by the Brier score of the
    naive system that outputs the priors, ``(1/K) sum_i P_i (1 - P_i)``.
    Arguments as in :func:`cross_entropy`; for ``K = 2`` with data priors and
    ``sample_weight`` this is ``sklearn.metrics.brier_score_loss(...,
    sample_weight=)``.
    """
    return _psr_public("brier", labels, scores, priors, score_type, normalize, sample_weight)


# ------------------------------------------------------------- binary scores

def _binary_log_odds(labels, scores, score_type, *, need_both=True):
    """Validated ``(labels, s)`` with ``s`` the class-1 log-odds (or the LLR).

    Only the ranking matters to ROC, AUC and EER, so no priors are needed:
    ``"llr"`` is used as is, ``"log_likelihoods"`` gives ``l_1 - l_0`` and
    posterior-type scores give ``log P(1|x) - log P(0|x)``.
    """
    a, neg_inf = v.as_log_domain_scores(scores, score_type)
    s = v.restore_neg_inf(v.as_scores(a, score_type=score_type), neg_inf)
    if score_type != "llr":
        if s.shape[-1] != 2:
            raise v.InputError(f"binary scores are needed (K = 2), got shape {tuple(s.shape)}")
        if score_type == "logits":
            s = jax.nn.log_softmax(s, axis=-1)
        s = s[..., 1] - s[..., 0]
    if s.ndim != 1:
        raise v.InputError(f"`scores` must be the scores of one system, got shape {tuple(s.shape)}")
    labels = v.as_index_array(labels, "labels", upper=2)
    v.check_same_length("labels", labels, "scores", s)
    if need_both and not v.is_tracer(labels):
        n1 = int(np.sum(np.asarray(labels)))
        if n1 == 0 or n1 == labels.shape[0]:
            raise v.InputError("`labels` has a single class: ROC, AUC and EER need samples of both classes")
    return labels, s


def _cuts(labels, s, sample_weight=None):
    """Error rates at every cut of the sorted scores (one sort).

    Cut ``k`` decides class 0 for the ``k`` lowest scores and 1 for the
    rest.  Returns ``(s_sorted, miss, fa, valid)`` with ``miss[k]`` the
    fraction of class-1 samples below the cut, ``fa[k]`` the fraction of
    class-0 samples above it, and ``valid[k]`` False where the cut would split
    tied scores (no threshold realizes it).  With ``sample_weight`` the
    fractions are of each class's weight total.
    """
    order = jnp.argsort(s)
    s_sorted = s[order]
    is1 = labels[order] == 1
    if sample_weight is not None:
        miss, fa = _weighted_rates_at_cuts(is1, sample_weight[order])
        valid = jnp.concatenate([jnp.array([True]), s_sorted[1:] > s_sorted[:-1], jnp.array([True])])
        return s_sorted, miss, fa, valid
    zero = jnp.zeros((1,), jnp.int32)
    cum1 = jnp.concatenate([zero, jnp.cumsum(is1, dtype=jnp.int32)])
    cum0 = jnp.arange(s.shape[0] + 1, dtype=jnp.int32) - cum1
    n1, n0 = cum1[-1], cum0[-1]
    # A class absent from the data (it then has weight 0 under data priors) gives rates 0, not NaN.
    # XLA may divide by multiplying with the reciprocal, so n1 / n1 can round to 1 + 2**-23: clip the
    # rates into [0, 1] (a TPR of 1 - miss would otherwise reach -5e-8).
    miss = jnp.clip(cum1 / jnp.maximum(n1, 1), 0.0, 1.0)
    fa = jnp.clip((n0 - cum0) / jnp.maximum(n0, 1), 0.0, 1.0)
    valid = jnp.concatenate([jnp.array([True]), s_sorted[1:] > s_sorted[:-1], jnp.array([True])])
    return s_sorted, miss, fa, valid


def _weighted_rates_at_cuts(is1, w):
    """``(miss, fa)`` at every cut of sorted samples, as fractions of each class's weight total."""
    zero = jnp.zeros((1,), w.dtype)
    below1 = jnp.concatenate([zero, jnp.cumsum(jnp.where(is1, w, 0.0))])
    # fa summed from the top down: W_0 minus a running sum would lose the small rates to cancellation.
    above0 = jnp.concatenate([jnp.cumsum(jnp.where(is1, 0.0, w)[::-1])[::-1], zero])
    w1, w0 = below1[-1], above0[0]
    miss = jnp.clip(below1 / jnp.where(w1 > 0, w1, 1.0), 0.0, 1.0)
    fa = jnp.clip(above0 / jnp.where(w0 > 0, w0, 1.0), 0.0, 1.0)
    return miss, fa


def _cut_threshold(s_sorted, k):
    """A threshold realizing cut ``k`` with the rule "class 1 iff s > t"."""
    n = s_sorted.shape[0]
    lo = jnp.where(k > 0, s_sorted[jnp.maximum(k - 1, 0)], -jnp.inf)
    hi = jnp.where(k < n, s_sorted[jnp.minimum(k, n - 1)], jnp.inf)
    mid = jnp.where(jnp.isinf(lo) & jnp.isinf(hi), 0.0, 0.5 * (lo + hi))
    return jnp.where(jnp.isinf(lo), -jnp.inf, jnp.where(jnp.isinf(hi), jnp.inf, mid))


@jax.jit
def _roc_kernel(labels, s, sample_weight=None):
    s_sorted, miss, fa, valid = _cuts(labels, s, sample_weight)
    # sklearn's convention: thresholds descending, "positive iff s >= t", first +inf.
    thresholds = jnp.concatenate([s_sorted, jnp.array([jnp.inf], s_sorted.dtype)])
    return fa[::-1], (1.0 - miss)[::-1], thresholds[::-1], valid[::-1]


def _binary_ok(labels, s, sample_weight=None):
    """Traced-input mask of ROC/AUC/EER inputs: valid labels, no NaN score, both classes present.

    With ``sample_weight``: valid weights, and each class with a positive weight total.
    """
    if sample_weight is not None:
        w1 = jnp.sum(jnp.where(labels == 1, sample_weight, 0.0))
        w0 = jnp.sum(jnp.where(labels == 0, sample_weight, 0.0))
        return (jnp.all((labels == 0) | (labels == 1)) & ~jnp.any(jnp.isnan(s)) & _weights_ok(sample_weight)
                & (w1 > 0) & (w0 > 0))
    n1 = jnp.sum(labels == 1)
    return jnp.all((labels == 0) | (labels == 1)) & ~jnp.any(jnp.isnan(s)) & (n1 > 0) & (n1 < labels.shape[0])


def _weighted_binary_inputs(labels, scores, score_type, sample_weight, *, drop_zero_weights):
    """:func:`_binary_log_odds` plus validated weights ``(labels, s, sample_weight)``.

    Both classes need a positive weight total (checked on concrete input).
    """
    if sample_weight is None:
        labels, s = _binary_log_odds(labels, scores, score_type)
        return labels, s, None
    labels, s = _binary_log_odds(labels, scores, score_type, need_both=False)
    sample_weight = v.as_sample_weight(sample_weight, labels)
    if not v.any_traced(labels, sample_weight):
        totals = np.bincount(np.asarray(labels), weights=np.asarray(sample_weight, np.float64), minlength=2)
        if np.any(totals <= 0):
            raise v.InputError(f"`sample_weight` is 0 for every sample of class {int(np.argmin(totals))} (or "
                               "that class is absent from `labels`): ROC, AUC and EER need weight in both classes")
    if drop_zero_weights:
        labels, s, sample_weight = _drop_zero_weights(labels, s, sample_weight)
    return labels, s, sample_weight


def roc_curve(labels, scores, *, score_type="log_posteriors", sample_weight=None):
    """ROC points at every distinct threshold (seed 002 §4.5).

    Args:
      labels: ``(N,)`` classes in {0, 1} (1 = positive, the seeds' H2).
      scores: binary scores of one system (``(N, 2)``, or ``(N,)`` for ``"llr"``).
      score_type: any score type; only the ranking of the class-1 log-odds is
        used, so no priors are needed.
      sample_weight: optional ``(N,)`` non-negative weights: the rates are
        fractions of each class's weight total, samples of weight 0 are left
        out (as ``sklearn.metrics.roc_curve(..., sample_weight=)``).

    Returns:
      ``(fpr, tpr, thresholds)`` as ``sklearn.metrics.roc_curve(...,
      drop_intermediate=False)``: thresholds decreasing (first ``+inf``), a
      sample is positive iff its log-odds ``>= threshold``; ``fpr = R_12``,
      ``tpr = R_22``, both within ``[0, 1]``.  Concrete input only (the
      number of points depends on the data), so not usable inside ``jit``.
    """
    labels, s, sample_weight = _weighted_binary_inputs(labels, scores, score_type, sample_weight,
                                                       drop_zero_weights=True)
    fpr, tpr, thr, valid = _roc_kernel(labels, s, sample_weight)
    keep = np.asarray(valid)
    return fpr[keep], tpr[keep], thr[keep]


@jax.jit
def _auc_kernel(labels, s):
    is0 = (labels == 0)
    neg_sorted = jnp.sort(jnp.where(is0, s, jnp.inf))  # class-0 scores first, padding last
    n0 = jnp.sum(is0)
    below = jnp.searchsorted(neg_sorted, s, side="left")  # class-0 scores < s
    not_above = jnp.minimum(jnp.searchsorted(neg_sorted, s, side="right"), n0)  # class-0 scores <= s
    # Mann-Whitney: P(s1 > s0) + P(s1 = s0) / 2; each term in [0, 1] keeps float32 accurate.
    per_positive = (below + 0.5 * (not_above - below)) / n0
    is1 = labels == 1
    return jnp.sum(jnp.where(is1, per_positive, 0.0)) / jnp.sum(is1)


def weighted_auc_kernel(labels, s, sample_weight, cumsum=jnp.cumsum):
    """Kernel: weighted AUC of the class-1 log-odds ``s``, the weighted Mann-Whitney statistic, ties one half.

    ``sum_{i: y=1} sum_{j: y=0} w_i w_j ([s_i > s_j] + [s_i = s_j] / 2) / (W_1 W_0)``: one sort and one
    cumulative sum of the class-0 weights (``cumsum``: any inclusive prefix sum along the last axis; the
    bootstrap passes a faster blocked one).
    """
    order = jnp.argsort(s)
    s_sorted = s[order]
    w0 = jnp.where(labels == 0, sample_weight, 0.0)[order]
    below0 = jnp.concatenate([jnp.zeros((1,), w0.dtype), cumsum(w0)])
    below = below0[jnp.searchsorted(s_sorted, s, side="left")]  # class-0 weight with scores < s_n
    not_above = below0[jnp.searchsorted(s_sorted, s, side="right")]  # class-0 weight with scores <= s_n
    total0 = below0[-1]
    # Each positive's term in [0, 1] before the weighted mean keeps float32 accurate (as _auc_kernel).
    per_positive = (below + 0.5 * (not_above - below)) / jnp.where(total0 > 0, total0, 1.0)
    w1 = jnp.where(labels == 1, sample_weight, 0.0)
    total1 = jnp.sum(w1)
    return jnp.sum(w1 * per_positive) / jnp.where(total1 > 0, total1, 1.0)


_weighted_auc_kernel = jax.jit(weighted_auc_kernel)


def auc(labels, scores, *, score_type="log_posteriors", sample_weight=None):
    """Area under the ROC curve, ties counted as one half (seed 002 §4.5).

    Equal to the Mann-Whitney statistic ``P(s_1 > s_0) + P(s_1 = s_0) / 2``
    for a random class-1 score ``s_1`` and class-0 score ``s_0`` (and to
    ``sklearn.metrics.roc_auc_score``).  One sort plus binary searches:
    O(N log N).  Arguments as in :func:`roc_curve`.

    With ``sample_weight`` ``u``: the weighted statistic ``sum_{m: y=1}
    sum_{n: y=0} u_m u_n ([s_m > s_n] + [s_m = s_n] / 2) / (W_1 W_0)``, the
    area under the weighted ROC (``roc_auc_score(..., sample_weight=)``).
    """
    labels, s, sample_weight = _weighted_binary_inputs(labels, scores, score_type, sample_weight,
                                                       drop_zero_weights=False)
    out = _auc_kernel(labels, s) if sample_weight is None else _weighted_auc_kernel(labels, s, sample_weight)
    traced = v.any_traced(labels, s, sample_weight)
    return v.nan_where_invalid(out, _binary_ok(labels, s, sample_weight)) if traced else out


@jax.jit
def _auc_one_vs_rest_kernel(labels, log_post, sample_weight=None):
    classes = jnp.arange(log_post.shape[-1])

    def one(c):
        is_c = (labels == c).astype(labels.dtype)
        if sample_weight is None:
            return _auc_kernel(is_c, log_post[:, c])
        return weighted_auc_kernel(is_c, log_post[:, c], sample_weight)

    return jnp.mean(jax.vmap(one)(classes))


def auc_one_vs_rest(labels, scores, *, priors=None, score_type="log_posteriors", sample_weight=None):
    """Macro average over the ``K`` classes of the one-vs-rest AUC (seed 002 §4.7).

    ``AUC_ovr = (1/K) sum_i AUC(class i against the rest, ranked by P(i|x))``,
    each term the Mann-Whitney statistic of :func:`auc`.  Equal to
    ``sklearn.metrics.roc_auc_score(labels, posteriors, multi_class="ovr",
    average="macro")``; for ``K = 2`` both terms equal the binary AUC.

    Args:
      labels: ``(N,)`` true classes; every class needs samples (and so does
        its complement).
      scores: ``(N, K)`` scores of one system.
      priors, score_type: as in :func:`cross_entropy` (priors only to form
        posteriors from likelihood-type scores, whose ranking depends on them).
      sample_weight: optional ``(N,)`` non-negative weights: each term is the
        weighted AUC of :func:`auc` (the average stays unweighted over the
        classes), as ``roc_auc_score(..., multi_class="ovr",
        sample_weight=)``; every class needs a positive weight total.
    """
    sample_weight = _validated_weight(labels, sample_weight)
    labels, log_post, _, n_i = _psr_inputs(labels, scores, priors, score_type, sample_weight)
    if log_post.ndim != 2:
        raise v.InputError(f"`scores` must be the scores of one system, got shape {tuple(log_post.shape)}")
    if not v.any_traced(labels, log_post, sample_weight) and np.any(np.asarray(n_i) == 0):
        absent = [int(i) for i in np.flatnonzero(np.asarray(n_i) == 0)]
        what = "`labels` has no sample" if sample_weight is None else "`sample_weight` is 0 for every sample"
        raise v.InputError(f"{what} of class {absent}: its one-vs-rest AUC is undefined")
    out = _auc_one_vs_rest_kernel(labels, log_post, sample_weight)
    if v.any_traced(labels, log_post, sample_weight):
        ok = _scores_ok(labels, log_post) & jnp.all(jnp.asarray(n_i) > 0) & _weights_ok(sample_weight)
        out = v.nan_where_invalid(out, ok)
    return out


@jax.jit
def _eer_kernel(labels, s, sample_weight=None):
    _, miss, fa, valid = _cuts(labels, s, sample_weight)

    def active(pi):
        # Line of the cut minimizing pi*miss + (1-pi)*fa: a vertex of the ROC convex hull.
        return jnp.argmin(jnp.where(valid, pi * miss + (1.0 - pi) * fa, jnp.inf))

    def bisect(_, lohi):
        lo, hi = lohi
        mid = 0.5 * (lo + hi)
        k = active(mid)
        up = miss[k] - fa[k] > 0  # envelope still rising: its maximum is to the right
        return jnp.where(up, mid, lo), jnp.where(up, hi, mid)

    lo, hi = jax.lax.fori_loop(0, 60, bisect, (jnp.asarray(0.0, miss.dtype), jnp.asarray(1.0, miss.dtype)))
    a, b = active(lo), active(hi)
    da, db = miss[a] - fa[a], miss[b] - fa[b]
    # The hull segment a-b crosses the diagonal miss = fa: intersect exactly.
    t = jnp.where(da - db != 0, da / jnp.where(da - db != 0, da - db, 1.0), 0.0)
    return miss[a] + t * (miss[b] - miss[a])


def eer(labels, scores, *, score_type="log_posteriors", sample_weight=None):
    """Equal error rate on the ROC convex hull (ROCCH-EER, seed 002 §4.5).

    The rate at which the convex hull of the ROC crosses ``R_12 = R_21``
    (false-alarm = miss).  It equals ``max_pi min_t [pi R_21(t) + (1-pi)
    R_12(t)]``, the worst minimum Bayes error over priors, which is how it is
    computed: bisection on ``pi`` over the one-sort error rates, then the
    exact intersection of the hull segment with the diagonal.  This is the
    definition of the BOSARIS toolkit and ``llreval`` (``ROCCH.EER``); on a
    step ROC it interpolates between the two cuts that straddle the diagonal.

    With ``sample_weight`` the ROC is the weighted one of :func:`roc_curve`
    (rates as fractions of each class's weight total).
    """
    labels, s, sample_weight = _weighted_binary_inputs(labels, scores, score_type, sample_weight,
                                                       drop_zero_weights=False)
    out = _eer_kernel(labels, s, sample_weight)
    traced = v.any_traced(labels, s, sample_weight)
    return v.nan_where_invalid(out, _binary_ok(labels, s, sample_weight)) if traced else out


class OperatingPoint(NamedTuple):
    """A threshold and its rates: decide class 1 iff log-odds ``> threshold``."""

    specificity: jax.Array
    sensitivity: jax.Array
    threshold: jax.Array


@jax.jit
def _sp_at_se_kernel(labels, s, target, sample_weight=None):
    s_sorted, miss, fa, valid = _cuts(labels, s, sample_weight)
    cut = jnp.arange(miss.shape[0])
    ok = valid & (1.0 - miss >= target)
    # The highest cut still meeting the sensitivity has the largest specificity;
    # among cuts with that same specificity take the lowest (largest sensitivity).
    k_top = jnp.max(jnp.where(ok, cut, 0))
    k = jnp.min(jnp.where(valid & (fa == fa[k_top]), cut, miss.shape[0]))
    return OperatingPoint(1.0 - fa[k], 1.0 - miss[k], _cut_threshold(s_sorted, k))


def specificity_at_sensitivity(labels, scores, sensitivity, *, score_type="log_posteriors", sample_weight=None):
    """SP@SE: the specificity at the highest threshold that reaches ``sensitivity``.

    Seed 002 §4.6: the threshold is chosen on these data so that ``R_22 >=
    sensitivity`` with the largest ``R_11`` (among thresholds with that
    ``R_11``, the largest ``R_22``).  The seed explains why this is a
    poor metric (implicit, system-dependent costs); see
    :func:`nec_for_target_sensitivity` for its recommended replacement.

    With ``sample_weight`` the rates are those of :func:`roc_curve` (weighted
    fractions of each class; samples of weight 0 left out on concrete input).

    Returns:
      :class:`OperatingPoint` ``(specificity, sensitivity, threshold)``; the
      achieved sensitivity may exceed the target when ties or few samples do
      not allow it exactly.
    """
    target = _target_sensitivity(sensitivity)
    labels, s, sample_weight = _weighted_binary_inputs(labels, scores, score_type, sample_weight,
                                                       drop_zero_weights=True)
    out = _sp_at_se_kernel(labels, s, jnp.asarray(target, s.dtype), sample_weight)
    traced = v.any_traced(labels, s, sample_weight)
    return v.nan_where_invalid(out, _binary_ok(labels, s, sample_weight)) if traced else out


def _target_sensitivity(sensitivity):
    target = float(sensitivity)
    if not 0.0 <= target <= 1.0:
        raise v.InputError(f"`sensitivity` must be in [0, 1], got {sensitivity}")
    return target


class SensitivityTargetNEC(NamedTuple):
    """The NEC that replaces SP@SE (seed 002 §4.6).

    ``costs`` is the cost matrix (rows = true class) with ``c_21 = 1`` (a
    miss) and ``c_12 = alpha P_2 / P_1`` (a false alarm), whose NEC on data
    with the development priors is ``NEC_alpha`` (seed 002 eq. 8).
    """

    alpha: jax.Array
    costs: jax.Array
    cost_ratio: jax.Array  # c_12 / c_21 = alpha P_2 / P_1
    threshold: jax.Array
    sensitivity: jax.Array
    specificity: jax.Array
    nec: jax.Array


@jax.jit
def _nec_target_kernel(labels, s, target, alphas, sample_weight=None):
    s_sorted, miss, fa, valid = _cuts(labels, s, sample_weight)

    def best_cut(alpha):
        nec = (alpha * fa + miss) / jnp.minimum(alpha, 1.0)  # seed 002 eq. 8
        k = jnp.argmin(jnp.where(valid, nec, jnp.inf))
        return k, nec[k]

    ks, necs = jax.vmap(best_cut)(alphas)
    sens = 1.0 - miss[ks]
    ok = sens >= target
    # Sensitivity falls as alpha (the weight of false alarms) grows: take the
    # largest alpha that still meets the target.
    j = jnp.max(jnp.where(ok, jnp.arange(alphas.shape[0]), 0))
    k = ks[j]
    return alphas[j], _cut_threshold(s_sorted, k), sens[j], 1.0 - fa[k], necs[j], jnp.any(ok)


def nec_for_target_sensitivity(labels, scores, sensitivity, *, alphas=None, score_type="log_posteriors",
                               sample_weight=None):
    """The NEC-based replacement of SP@SE (seed 002 §4.6), on development data.

    For each ``alpha`` in a sweep, the threshold minimizing ``NEC_alpha =
    (alpha R_12 + R_21) / min(alpha, 1)`` (seed 002 eq. 8) is found by one
    sort (so calibration does not matter), and its sensitivity ``R_22``
    measured; the largest ``alpha`` whose optimal threshold still reaches the
    target sensitivity is chosen.  That ``NEC_alpha`` is then the metric to
    compare systems and datasets, with the implied cost ratio ``c_12 / c_21
    = alpha P_2 / P_1`` made explicit.

    Args:
      labels, scores, score_type: development data of the baseline system.
      sensitivity: the target ``R_22``.
      alphas: increasing ``alpha`` values to sweep (default: 801 values
        log-spaced over ``[1e-4, 1e4]``).
      sample_weight: optional ``(N,)`` non-negative weights: weighted rates
        (as :func:`roc_curve`; weight 0 leaves a sample out) and the
        development priors ``P_i = W_i / W`` of the class weight totals.

    Returns:
      :class:`SensitivityTargetNEC`.  Raises :class:`InputError` when no
      ``alpha`` of the sweep reaches the target.
    """
    target = _target_sensitivity(sensitivity)
    labels, s, sample_weight = _weighted_binary_inputs(labels, scores, score_type, sample_weight,
                                                       drop_zero_weights=True)
    if alphas is None:
        alphas = jnp.logspace(-4.0, 4.0, 801)
    else:
        alphas = v.as_array(alphas, "alphas", min_ndim=1)
        a = np.asarray(alphas, dtype=np.float64)
        if a.ndim != 1 or np.any(~np.isfinite(a)) or np.any(a <= 0) or np.any(np.diff(a) <= 0):
            raise v.InputError("`alphas` must be a 1-D increasing array of positive finite values")
        alphas = jnp.asarray(a, dtype=s.dtype)
    alpha, thr, sens, spec, nec, found = _nec_target_kernel(labels, s, jnp.asarray(target, s.dtype), alphas,
                                                            sample_weight)
    if not bool(found):
        raise v.InputError(f"no alpha in the sweep reaches sensitivity {target}: extend `alphas` towards 0")
    p_first = 1.0 - _class1_fraction(labels, sample_weight)  # the seed's P_1 (ecjax class 0)
    ratio = alpha * (1.0 - p_first) / p_first
    costs = jnp.array([[0.0, 1.0], [0.0, 0.0]], dtype=s.dtype) * ratio + jnp.array([[0.0, 0.0], [1.0, 0.0]], dtype=s.dtype)
    return SensitivityTargetNEC(alpha, costs, ratio, thr, sens, spec, nec)


# ------------------------------------------------------------ Bayes-risk curve

class BayesRiskCurve(NamedTuple):
    """Bayes-risk (normalized DCF / APE) curve over effective prior log-odds.

    ``actual``: (normalized) EC of Bayes decisions with the scores taken as
    LLRs; ``minimum``: the same at the best threshold for each prior (the
    ROC-convex-hull / PAV "minimum DCF", optimistic); ``naive``: the EC of the
    best naive decision, ``min(pi, 1 - pi)`` (1 when normalized).
    """

    prior_log_odds: jax.Array
    actual: jax.Array
    minimum: jax.Array
    naive: jax.Array


def _class1_fraction(labels, sample_weight):
    """Host float: the fraction of class-1 samples (of the weight total, with ``sample_weight``)."""
    is1 = np.asarray(labels) == 1
    if sample_weight is None:
        return float(np.mean(is1))
    w = np.asarray(sample_weight, np.float64)
    return float(np.sum(w * is1) / np.sum(w))


@partial(jax.jit, static_argnames=("normalize",))
def _bayes_risk_kernel(labels, llr, plo, sample_weight=None, *, normalize):
    s_sorted, miss, fa, valid = _cuts(labels, llr, sample_weight)
    # Bayes decision: class 1 iff llr > -plo (ties go to class 0, as decisions.bayes_decisions), the
    # cut below which lie all scores <= -plo; its rates are those of the one-sort ROC.
    cut = jnp.searchsorted(s_sorted, -plo, side="right")
    act_miss, act_fa = miss[cut], fa[cut]
    # 1 - pi as sigmoid(-theta): in float32, 1 - sigmoid(theta) loses up to 2.4e-5 relative at theta = 6.
    pi, pi0 = jax.nn.sigmoid(plo), jax.nn.sigmoid(-plo)
    actual = pi * act_miss + pi0 * act_fa

    def min_one(p):
        # A linear function of the ROC points is minimized at a vertex of their convex hull.
        p1, p0 = p
        return jnp.min(jnp.where(valid, p1 * miss + p0 * fa, jnp.inf))

    minimum = jax.lax.map(min_one, (pi, pi0), batch_size=64)
    naive = jnp.minimum(pi, pi0)
    if normalize:
        return actual / naive, minimum / naive, jnp.ones_like(naive)
    return actual, minimum, naive


def bayes_risk_curve(labels, scores, *, prior_log_odds=None, priors=None, score_type="llr", normalize=True,
                     sample_weight=None):
    """Actual and minimum Bayes risk of binary scores over effective priors.

    For each effective prior log-odds ``theta`` (prior ``pi = sigmoid(theta)``
    of class 1, 0-1 costs; any binary cost matrix reduces to one ``theta``,
    seed 002 eq. 9), the actual risk is ``pi R_21 + (1 - pi) R_12`` of the
    Bayes decisions "class 1 iff LLR > -theta" (seed 002 eq. 48) and the
    minimum is the least risk over all thresholds, found on the one-sort ROC
    (the minimum of a linear function lies on the ROC convex hull, as in the
    PAV/ROCCH "min DCF").  Normalized by the naive risk ``min(pi, 1 - pi)``
    this is the NEC of seed 002 eq. 8 and the speaker-verification normalized
    DCF; the gap between the two curves is the calibration loss of the Bayes
    EC at each operating point (seed 002 §4.2).

    Args:
      labels: ``(N,)`` classes in {0, 1}.
      scores: LLRs ``(N,)`` (default ``score_type="llr"``), or binary
        log-likelihoods / posterior-type scores ``(N, 2)``.
      prior_log_odds: ``(T,)`` values of ``theta`` (default 121 values in
        ``[-6, 6]``).
      priors: only for posterior-type scores: the priors the posteriors were
        computed with (default: the data priors), removed to get LLRs.
      normalize: divide by ``min(pi, 1 - pi)``.
      sample_weight: optional ``(N,)`` non-negative weights: ``R_21`` and
        ``R_12`` are fractions of each class's weight total (as
        :func:`roc_curve`), and the data priors removed from posterior-type
        scores are the weighted class fractions.

    Returns:
      :class:`BayesRiskCurve`.
    """
    labels_c, s, sample_weight = _weighted_binary_inputs(labels, scores, score_type, sample_weight,
                                                         drop_zero_weights=False)
    if score_type in v.POSTERIOR_TYPES:
        if priors is None:
            p1 = _class1_fraction(labels_c, sample_weight)
            prior_odds = np.log(p1 / (1.0 - p1))
        else:
            p = np.asarray(v.as_priors(priors, num_classes=2), dtype=np.float64)
            if np.any(p <= 0):
                raise v.InputError("`priors` must be positive to turn posteriors into LLRs")
            prior_odds = np.log(p[1] / p[0])
        llr = s - prior_odds
    else:
        if priors is not None:
            raise v.InputError(f"`priors` is only used with posterior-type scores; the priors of a Bayes-risk "
                               f"curve are swept by `prior_log_odds` (got score_type={score_type!r})")
        llr = s
    if prior_log_odds is None:
        plo = jnp.linspace(-6.0, 6.0, 121)
    else:
        plo = v.as_array(prior_log_odds, "prior_log_odds", min_ndim=1)
        v.check_finite(plo, "prior_log_odds")
        plo = jnp.asarray(plo, dtype=llr.dtype)
        if plo.ndim != 1:
            raise v.InputError(f"`prior_log_odds` must be 1-D, got shape {tuple(plo.shape)}")
    actual, minimum, naive = _bayes_risk_kernel(labels_c, llr, plo, sample_weight, normalize=bool(normalize))
    if v.any_traced(labels_c, llr, sample_weight):
        ok = _binary_ok(labels_c, llr, sample_weight)
        actual, minimum = v.nan_where_invalid(actual, ok), v.nan_where_invalid(minimum, ok)
    return BayesRiskCurve(plo, actual, minimum, naive)


# ------------------------------------------------------------------------ ECE

def bin_indices(values, num_bins, binning, reference=None, weights=None):
    """Kernel: bin index in ``[0, num_bins)`` of each value in ``[0, 1]``.

    ``"equal_width"``: bins ``(m/M, (m+1)/M]`` (the first also holds 0), as
    in ``psrcal``.  ``"equal_mass"``: the ``M`` bins of ``np.array_split``
    over the sorted ``reference`` values (default ``values``), each closed at
    its largest reference value, so tied values always share a bin (a bin can
    then be empty); ``weights`` are frequency weights of the reference values
    (see :func:`equal_mass_upper_edges`).  Returns ``(indices, upper_edges)``.
    """
    if binning == "equal_width":
        edges = jnp.linspace(0.0, 1.0, num_bins + 1, dtype=values.dtype)
        idx = jnp.searchsorted(edges, values, side="left") - 1
        return jnp.clip(idx, 0, num_bins - 1), edges[1:]
    upper = equal_mass_upper_edges(values if reference is None else reference, num_bins, weights)
    idx = jnp.searchsorted(upper, values, side="left")
    return jnp.clip(idx, 0, num_bins - 1), upper


def equal_mass_upper_edges(reference, num_bins, weights=None):
    """Kernel: ``(M,)`` upper edges of the equal-mass bins of ``reference`` ``(N,)`` (the last is ``+inf``).

    Unweighted: ``np.array_split`` of the sorted values into ``M`` parts of
    ``q`` or ``q + 1`` values (``q, r = divmod(N, M)``, the first ``r``
    parts one longer); part ``m`` ends at the ``e_m``-th smallest value,
    ``e_m = (m + 1) q + min(m + 1, r)``, and that value is its upper edge.

    With frequency ``weights`` ``u`` (scikit-learn's meaning) the same rule
    runs on the cumulative weight instead of the sample count: ``N`` becomes
    the total weight ``W``, ``q = floor(W / M)``, ``r = W - q M``, and edge
    ``m`` is the smallest value whose cumulative weight (sorted order)
    reaches ``e_m``.  With integer weights these are exactly the edges of
    the repeated values (sample ``n`` taken ``u_n`` times); weight 0 leaves
    a value out.  Like repeated samples, the edges depend on the scale of
    the weights: a total weight below ``M`` acts as fewer samples than bins
    (bins left empty), so pass weights on the scale of counts.
    """
    n = reference.shape[-1]
    if weights is None:
        sorted_ref = jnp.sort(reference)
        q, r = divmod(n, num_bins)
        ends = jnp.asarray(np.array([(m + 1) * q + min(m + 1, r) for m in range(num_bins)]))  # array_split
        pos = jnp.maximum(ends - 1, 0)
    else:
        order = jnp.argsort(reference)
        sorted_ref = reference[order]
        cum = jnp.cumsum(weights[order].astype(sorted_ref.dtype))
        q = jnp.floor(cum[-1] / num_bins)
        r = cum[-1] - q * num_bins
        m = jnp.arange(1, num_bins + 1, dtype=sorted_ref.dtype)
        ends = m * q + jnp.minimum(m, r)
        # The first sample whose cumulative weight reaches e_m: the e_m-th of the repeated values.
        pos = jnp.clip(jnp.searchsorted(cum, ends, side="left"), 0, n - 1)
    upper = jnp.where(ends > 0, sorted_ref[pos], -jnp.inf)  # e_m = 0: a bin with nothing in it
    return upper.at[-1].set(jnp.inf)


@partial(jax.jit, static_argnames=("num_bins", "binning", "top_label"))
def _bin_sums(labels, log_post, sample_weight=None, *, num_bins, binning, top_label):
    """Per bin: samples, sum of confidences, sum of hits, sum of (hit - confidence) (eqs. 62-63).

    The ECE uses the last: in float32, summing the differences keeps ~1e-7 accuracy, while
    subtracting the two sums over 10^4 confidences near 1 loses ~1e-3 of the gap.
    """
    if top_label:
        conf = jnp.exp(jnp.max(log_post, -1))
        hit = (jnp.argmax(log_post, -1) == labels).astype(conf.dtype)
    else:
        conf = jnp.exp(log_post[..., 1])
        hit = (labels == 1).astype(conf.dtype)
    idx, _ = bin_indices(conf, num_bins, binning, weights=sample_weight)
    stats = jnp.stack([jnp.ones_like(conf), conf, hit, hit - conf], -1)
    if sample_weight is not None:
        stats = stats * sample_weight[:, None]  # |B_m| becomes the bin's weight total
    sums = jax.ops.segment_sum(stats, idx, num_segments=num_bins)
    return sums[:, 0], sums[:, 1], sums[:, 2], sums[:, 3]


@partial(jax.jit, static_argnames=("num_bins", "binning", "top_label"))
def _ece_kernel(labels, log_post, sample_weight=None, *, num_bins, binning, top_label):
    *_, gap_sum = _bin_sums(labels, log_post, sample_weight, num_bins=num_bins, binning=binning,
                            top_label=top_label)
    total = labels.shape[0] if sample_weight is None else jnp.sum(sample_weight)
    return jnp.sum(jnp.abs(gap_sum)) / total


def _ece_inputs(labels, scores, num_bins, binning, variant, priors, score_type, sample_weight=None):
    v.check_choice(binning, "binning", ECE_BINNINGS)
    v.check_choice(variant, "variant", ECE_VARIANTS)
    num_bins = v.as_positive_int(num_bins, "num_bins")
    labels, log_post, _, _ = _psr_inputs(labels, scores, priors, score_type, sample_weight)
    if log_post.ndim != 2:
        raise v.InputError(f"`scores` must be the scores of one system, got shape {tuple(log_post.shape)}")
    k = log_post.shape[-1]
    if variant == "binary" and k != 2:
        raise v.InputError(f"variant='binary' needs K = 2 classes, got K = {k}; use variant='top_label'")
    top_label = variant == "top_label" or (variant == "auto" and k > 2)
    return labels, log_post, top_label, num_bins


def ece(labels, scores, *, num_bins=15, binning="equal_width", variant="auto", priors=None,
        score_type="log_posteriors", sample_weight=None):
    """Expected calibration error (seed 002 eqs. 62-63), as a fraction.

    ``ECE = sum_m |B_m|/N |frac(B_m) - avg(B_m)|``.  ``variant="binary"``
    (eq. 62, K = 2) bins the class-1 posterior, with ``frac`` the fraction of
    class-1 samples; ``"top_label"`` (eq. 63, ``ECEmc``) bins the confidence
    ``max_i P(i|x)``, with ``frac`` the accuracy of the argmax decisions.
    ``"auto"`` is binary for K = 2 (the seed's recommendation: the top-label
    form throws away half the binary posterior) and top-label otherwise.
    This is the calibration loss of histogram binning trained on the test
    data (eq. 66): see seed 002 §4.3.2 for its drawbacks.

    ``psrcal`` returns percentages: ``psrcal.losses.ECEbin`` / ``ECE`` equal
    100 times this value (``psrcal`` leaves a posterior of exactly 0 out of
    every bin; here it is in the first bin).

    Args:
      labels: ``(N,)`` true classes.
      scores: ``(N, K)`` scores of one system (``(N,)`` for ``"llr"``).
      num_bins: ``M`` (default 15).
      binning: ``"equal_width"`` or ``"equal_mass"`` (see :func:`bin_indices`).
      variant: ``"auto"``, ``"binary"`` or ``"top_label"``.
      priors, score_type: as in :func:`cross_entropy` (priors only to form
        posteriors from likelihood-type scores).
      sample_weight: optional ``(N,)`` non-negative weights ``u``: ``|B_m|``
        and ``N`` become weight totals and the bin averages weighted
        averages, ``ECE = sum_m |sum_{n in B_m} u_n (hit_n - conf_n)| /
        sum_n u_n`` (an integer weight ``k`` is ``k`` copies of the sample).
        Equal-mass bins then split the cumulative weight, not the sample
        count (:func:`equal_mass_upper_edges`: integer weights give the bins
        of the repeated samples).
    """
    sample_weight = _validated_weight(labels, sample_weight)
    labels, log_post, top_label, num_bins = _ece_inputs(labels, scores, num_bins, binning, variant, priors, score_type,
                                                        sample_weight)
    out = _ece_kernel(labels, log_post, sample_weight, num_bins=num_bins, binning=binning, top_label=top_label)
    if v.any_traced(labels, log_post, sample_weight):
        return v.nan_where_invalid(out, _scores_ok(labels, log_post) & _weights_ok(sample_weight))
    return out


class ReliabilityBins(NamedTuple):
    """Per-bin statistics of a reliability diagram (empty bins have count 0 and NaN means)."""

    confidence: np.ndarray  # mean confidence (binary: mean class-1 posterior) of each bin
    frequency: np.ndarray  # observed accuracy (binary: class-1 frequency) of each bin
    count: np.ndarray  # type: ignore[assignment]  # samples per bin (int64); with sample_weight, the bin's weight total (float64)


def _validated_weight(labels, sample_weight):
    """``sample_weight`` validated against the length of ``labels`` (``None`` stays ``None``)."""
    if sample_weight is None:
        return None
    return v.as_sample_weight(sample_weight, v.as_array(labels, "labels", min_ndim=1))


def reliability_bins(labels, scores, *, num_bins=15, binning="equal_width", variant="auto", priors=None,
                     score_type="log_posteriors", sample_weight=None):
    """The bins behind :func:`ece` and the reliability diagram (seed 002 eqs. 62-63).

    ``ece = sum_m count_m / N * |frequency_m - confidence_m|``.  Arguments as in :func:`ece`.  With
    ``sample_weight`` the means are weighted means, ``count`` the bins' weight totals (float) and ``N``
    their sum.
    """
    sample_weight = _validated_weight(labels, sample_weight)
    labels, log_post, top_label, num_bins = _ece_inputs(labels, scores, num_bins, binning, variant, priors,
                                                        score_type, sample_weight)
    n, conf_sum, hit_sum, _ = (np.asarray(a, np.float64) for a in _bin_sums(
        labels, log_post, sample_weight, num_bins=num_bins, binning=binning, top_label=top_label))
    with np.errstate(invalid="ignore", divide="ignore"):
        return ReliabilityBins(conf_sum / n, hit_sum / n, n.astype(np.int64) if sample_weight is None else n)
