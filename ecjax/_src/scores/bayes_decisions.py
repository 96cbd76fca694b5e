"""Scores judged by decisions: the EC of Bayes decisions and of the best threshold, Bayes-risk and decision curves.

The EC of Bayes decisions is the proper scoring rule of Ferrer (2022b) §4.1
(eq. 53) for a cost matrix; the EC of the empirically optimal threshold is
its optimistic "minimum" counterpart (what ``expected-cost`` calls
``average_cost_for_bayes_decisions`` and ``average_cost_for_optimal_decisions``).
The Bayes-risk curve (Ferrer 2022b, §4.4) traces both over the effective
priors of binary scores; the decision curve (net benefit, Vickers & Elkin
2006) is the EC of Bayes decisions over a family of cost ratios (Ferrer
2025, App. C.1).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.confusion import class_counts
from ecjax._src.decisions import class_one_log_odds_kernel, log_posteriors_kernel, naive_expected_cost
from ecjax._src.precision import check_precision, einsum, matmul
from ecjax._src.scores.inputs import (
    binary_labels_and_weights, binary_labels_ok, binary_log_odds_inputs, binary_ok, binary_weights_ok,
    checked_threshold_probabilities, class1_fraction, evaluation_priors, labels_and_scores, without_zero_weights,
)
from ecjax._src.scores.scoring_rules import class_weights
from ecjax._src.scores.ranking_curves import per_system, ranking_log_odds, suffix_sums
from ecjax._src.scores.roc import SortedScores, cut_threshold, rates_at_cuts, sort_scores, weighted_rates_at_cuts


@partial(jax.jit, static_argnames=("score_type", "normalize", "batch_size"))
def _bayes_ec(labels, scores, log_p, costs, class_weights, p, sample_weight=None, *, score_type, normalize,
              batch_size):
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
        expected = matmul(flat_post, columns).reshape(s * n, d, batch_size)
        return jnp.argmin(expected, axis=1)  # Bayes decisions (Ferrer 2025, eq. 7); ties: lowest j

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


def bayes_expected_cost(labels: ArrayLike, scores: ArrayLike, costs: ArrayLike, *, priors: ArrayLike | None = None,
                        score_type: str = "log_posteriors", normalize: bool = False, batch_size: int | None = None,
                        precision: str = "exact", sample_weight: ArrayLike | None = None) -> jax.Array:
    """EC of Bayes decisions made from ``scores`` for each cost matrix.

    ``EC = sum_n w_n c(y_n, d_n)`` with ``d_n`` the Bayes decision (Ferrer (2025)
    eq. 7) and ``w_n = P_{y_n} / K_{y_n *}`` (Ferrer 2022a, eq. 2), computed one
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
        decisions that are not Bayes-optimal for them (Ferrer 2022b, §3.2).
      normalize: divide by the EC of the best naive decision (NEC).
      batch_size: cost matrices evaluated together in one matrix product
        (memory vs speed); default: about 4M floats of expected costs.
      precision: ``"exact"`` (float32 products on every backend; ``"fast"``
        was removed, see :mod:`ecjax.precision`).
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
    labels, scores, log_p, k = labels_and_scores(labels, scores, priors, score_type)
    w = v.as_sample_weight(sample_weight, labels)
    counts, p = evaluation_priors(labels, k, priors, w)
    c = v.check_shape(v.as_matrix(costs, "costs", shape=(k, None)), "costs", "(K, D)", "(B, K, D)")
    if normalize:
        v.check_naive_cost_positive(naive_expected_cost(c, p))
    v.check_shape(scores, "scores", *(("(N,)", "(M, N)") if score_type == "llr" else ("(N, K)", "(M, N, K)")),
                  why=" (at most one batch axis: the systems)")
    s_batch = scores.shape[: scores.ndim - (1 if score_type == "llr" else 2)]
    flat_scores = scores.reshape((-1,) + scores.shape[len(s_batch):])
    flat_costs = c.reshape((-1,) + c.shape[-2:])
    n_i = class_counts(counts)
    class_weights = jnp.where(n_i > 0, p / jnp.where(n_i > 0, n_i, 1), 0.0)  # P_i / K_i* (Ferrer 2022a, eq. 2)
    if batch_size is None:
        batch_size = _default_batch_size(flat_scores.shape[0] * labels.shape[0], c.shape[-1], flat_costs.shape[0])
    batch_size = v.as_scalar(batch_size, "batch_size", integer=True, low=1)
    out = _bayes_ec(labels, flat_scores, log_p, flat_costs, class_weights, p, w,
                    score_type=score_type, normalize=bool(normalize), batch_size=batch_size)
    return out.reshape(s_batch + c.shape[:-2])


def _expected_costs_at_cuts(miss, fa, valid, costs, priors):
    """``(..., N + 1)``: the EC at every cut of rates ``(..., N + 1)`` and priors ``(..., 2)`` (``+inf`` where a cut
    would split ties).

    :func:`~ecjax._src.metrics.expected_value` written out for the rates ``R = [[1 - fa, fa], [miss, 1 - miss]]``, whose
    rows already sum to 1: stacking them into ``(..., N + 1, 2, 2)`` matrices and normalizing their rows made the
    bootstrap's NEC at the best threshold 5x slower (53 -> 283 ms for 2000 draws of N = 624, two systems).
    """
    p0, p1 = priors[..., 0, None], priors[..., 1, None]
    ec = p0 * (costs[0, 0] * (1.0 - fa) + costs[0, 1] * fa) + p1 * (costs[1, 0] * miss + costs[1, 1] * (1.0 - miss))
    return jnp.where(valid, ec, jnp.inf)


def sorted_threshold_expected_costs(ranked: SortedScores, weights: jax.Array, costs: jax.Array,
                                    priors: jax.Array | None = None, *, normalize: bool = False,
                                    in_sorted_order: bool = False) -> jax.Array:
    """Kernel: ``(..., N + 1)`` EC of "decide 1 iff s > t" at every cut of ``ranked`` for weights ``(..., N)``.

    ``EC(k) = sum_ij P_i c_ij R_ij(k)`` (Ferrer 2022a, eq. 2) with the
    weighted rates ``R_10 = miss``, ``R_01 = fa`` of
    :func:`~ecjax.scores.weighted_rates_at_cuts` (one sort, any leading
    axes on the weights); ``+inf`` at cuts that split ties (no threshold
    realizes them).  ``costs`` ``(2, 2)``; ``priors`` ``(2,)`` or
    ``(..., 2)``, or ``None``: the weighted class frequencies ``W_i / W`` of
    each weight vector.  ``normalize``: divided by the EC of the best naive
    decision ``min_j sum_i P_i c_ij`` (Ferrer 2022a, eq. 4; positive, which
    the caller checks).  Its minimum over the cuts is
    :func:`optimal_threshold_expected_cost` with ``sample_weight``; the
    weights are in sample order, or in the sorted order of ``ranked`` with
    ``in_sorted_order=True``, as the bootstrap draws them.
    """
    miss, fa = weighted_rates_at_cuts(ranked, weights, in_sorted_order=in_sorted_order)
    if priors is None:
        w = weights if in_sorted_order else jnp.take(weights, ranked.order, axis=-1)
        w1 = jnp.sum(jnp.where(ranked.is1, w, 0.0), -1)
        priors = jnp.stack([jnp.sum(w, -1) - w1, w1], -1) / jnp.sum(w, -1, keepdims=True)
    priors = jnp.broadcast_to(priors, miss.shape[:-1] + (2,))
    ec = _expected_costs_at_cuts(miss, fa, ranked.valid, costs, priors)
    return ec / naive_expected_cost(costs, priors)[..., None] if normalize else ec


@jax.jit
def _threshold_curve(labels, s, costs, p, sample_weight=None):
    """One sort: the EC at every cut of the sorted scores (``+inf`` where a cut would split ties); weighted, the
    rates and costs of :func:`sorted_threshold_expected_costs`, the kernel that the bootstrap maps over its draws."""
    s_sorted, miss, fa, valid = rates_at_cuts(labels, s, sample_weight)
    return s_sorted, _expected_costs_at_cuts(miss, fa, valid, costs, p)


@jax.jit
def _threshold_sweep(labels, s, costs, p, sample_weight=None):
    s_sorted, ec = _threshold_curve(labels, s, costs, p, sample_weight)
    k = jnp.argmin(ec)
    return ec[k], cut_threshold(s_sorted, k)


def _binary_threshold_inputs(labels, scores, costs, priors, score_type, sample_weight=None):
    labels, scores, log_p, k = labels_and_scores(labels, scores, priors, score_type)
    sample_weight = v.as_sample_weight(sample_weight, labels)
    v.check_binary(k, "a threshold")
    costs = (jnp.asarray(1.0 - jnp.eye(2)) if costs is None
             else v.as_matrix(costs, "costs", shape=(2, 2), batched=False))
    v.check_one_system(scores, 1 if score_type == "llr" else 2)
    _, p = evaluation_priors(labels, 2, priors, sample_weight)
    s = class_one_log_odds_kernel(scores, score_type, log_p)
    labels, s, sample_weight = without_zero_weights(labels, s, sample_weight)
    return labels, s, costs, p, sample_weight


def _normalizer(costs, p, normalize):
    if not normalize:
        return 1.0
    naive = naive_expected_cost(costs, p)
    v.check_naive_cost_positive(naive)
    return naive


class ThresholdCurve(NamedTuple):
    """The EC (or NEC) of "decide 1 iff s > threshold" at every threshold that changes a decision."""

    thresholds: np.ndarray  # increasing, from -inf (always 1) to +inf (always 0)
    expected_cost: np.ndarray  # normalized (NEC) when asked for


class OptimalThreshold(NamedTuple):
    """The least EC (or NEC) over thresholds, and a threshold that attains it: decide 1 iff s > threshold."""

    expected_cost: jax.Array
    threshold: jax.Array


def expected_cost_vs_threshold(labels: ArrayLike, scores: ArrayLike, costs: ArrayLike | None = None, *,
                               priors: ArrayLike | None = None, score_type: str = "log_posteriors",
                               normalize: bool = False, sample_weight: ArrayLike | None = None) -> ThresholdCurve:
    """EC (or NEC) of "decide 1 iff s > t" at every threshold that changes a decision (one sort).

    ``s`` is the class-1 log-odds of the scores (the LLR for ``"llr"``); the
    curve of Ferrer (2022b) Fig. 3.  Thresholds sit halfway between consecutive
    distinct scores, plus ``-inf`` (always 1) and ``+inf`` (always 0).

    With ``sample_weight`` (see :func:`bayes_expected_cost`) the rates at
    each cut are weighted fractions of each class; samples of weight 0 are
    left out (they would only add thresholds).

    Returns:
      :class:`ThresholdCurve` ``(thresholds, expected_cost)`` as numpy
      arrays, thresholds increasing.
    """
    labels, s, costs, p, sample_weight = _binary_threshold_inputs(labels, scores, costs, priors, score_type,
                                                                  sample_weight)
    s_sorted, ec = _threshold_curve(labels, s, costs, p, sample_weight)
    keep = np.isfinite(np.asarray(ec))
    cuts = np.nonzero(keep)[0]
    thresholds = np.asarray(jax.vmap(lambda k: cut_threshold(s_sorted, k))(jnp.asarray(cuts)))
    return ThresholdCurve(thresholds, np.asarray(ec)[keep] / float(_normalizer(costs, p, normalize)))


def optimal_threshold_expected_cost(labels: ArrayLike, scores: ArrayLike, costs: ArrayLike | None = None, *,
                                    priors: ArrayLike | None = None, score_type: str = "log_posteriors",
                                    normalize: bool = False,
                                    sample_weight: ArrayLike | None = None) -> OptimalThreshold:
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
      :class:`OptimalThreshold` ``(expected_cost, threshold)``: decide
      class 1 when ``s > threshold`` (``-inf``: always 1; ``+inf``: always 0).
    """
    labels, s, costs, p, sample_weight = _binary_threshold_inputs(labels, scores, costs, priors, score_type,
                                                                  sample_weight)
    ec, thr = _threshold_sweep(labels, s, costs, p, sample_weight)
    return OptimalThreshold(ec / _normalizer(costs, p, normalize), thr)


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


@partial(jax.jit, static_argnames=("normalize",))
def _bayes_risk_kernel(labels, llr, plo, sample_weight=None, *, normalize):
    s_sorted, miss, fa, valid = rates_at_cuts(labels, llr, sample_weight)
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


def bayes_risk_curve(labels: ArrayLike, scores: ArrayLike, *, prior_log_odds: ArrayLike | None = None,
                     priors: ArrayLike | None = None, score_type: str = "llr", normalize: bool = True,
                     sample_weight: ArrayLike | None = None) -> BayesRiskCurve:
    """Actual and minimum Bayes risk of binary scores over effective priors.

    For each effective prior log-odds ``theta`` (prior ``pi = sigmoid(theta)``
    of class 1, 0-1 costs; any binary cost matrix reduces to one ``theta``,
    Ferrer (2022b) eq. 9), the actual risk is ``pi R_21 + (1 - pi) R_12`` of the
    Bayes decisions "class 1 iff LLR > -theta" (Ferrer 2022b, eq. 48) and the
    minimum is the least risk over all thresholds, found on the one-sort ROC
    (the minimum of a linear function lies on the ROC convex hull, as in the
    PAV/ROCCH "min DCF").  Normalized by the naive risk ``min(pi, 1 - pi)``
    this is the NEC of Ferrer (2022b) eq. 8 and the speaker-verification normalized
    DCF; the gap between the two curves is the calibration loss of the Bayes
    EC at each operating point (Ferrer 2022b, §4.2).

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
    labels_c, s, sample_weight = binary_log_odds_inputs(labels, scores, score_type, sample_weight,
                                                        drop_zero_weights=False)
    if score_type in v.POSTERIOR_TYPES:
        if priors is None:
            p1 = class1_fraction(labels_c, sample_weight)
            prior_odds = np.log(p1 / (1.0 - p1))
        else:
            p = np.asarray(v.as_positive_priors(priors, num_classes=2, why=" (to turn posteriors into LLRs)"),
                           dtype=np.float64)
            prior_odds = np.log(p[1] / p[0])
        llr = s - prior_odds
    else:
        if priors is not None:
            v.check_posterior_type(score_type, "priors", why=": the priors of a Bayes-risk curve are swept by "
                                   "`prior_log_odds`")
        llr = s
    if prior_log_odds is None:
        plo = jnp.linspace(-6.0, 6.0, 121)
    else:
        given = v.check_finite(v.as_array(prior_log_odds, "prior_log_odds", min_ndim=1), "prior_log_odds")
        plo = jnp.asarray(v.check_shape(given, "prior_log_odds", "(T,)"), dtype=llr.dtype)
    actual, minimum, naive = _bayes_risk_kernel(labels_c, llr, plo, sample_weight, normalize=bool(normalize))
    if v.any_traced(labels_c, llr, sample_weight):
        ok = binary_ok(labels_c, llr, sample_weight)
        actual, minimum = v.nan_where_invalid(actual, ok), v.nan_where_invalid(minimum, ok)
    return BayesRiskCurve(plo, actual, minimum, naive)


# ------------------------------------------------------------ decision curve

class DecisionCurve(NamedTuple):
    """Net benefit of treating when ``P(1|x) >= p_t``, with the two default strategies as references.

    ``net_benefit`` has the systems' batch axes followed by those of
    ``threshold_probabilities``; ``treat_all`` and ``treat_none`` have the
    shape of ``threshold_probabilities`` (they do not depend on the scores).
    """

    threshold_probabilities: jax.Array
    net_benefit: jax.Array
    treat_all: jax.Array
    treat_none: jax.Array


def _decision_one(labels, s, cut, odds, p1, sample_weight=None):
    is1 = labels == 1
    if sample_weight is None:
        n1 = jnp.sum(is1)
        n0 = labels.shape[0] - n1
        # Padding with +inf: never below a finite cut, so "samples below" counts only the class's own scores.
        pos_sorted = jnp.sort(jnp.where(is1, s, jnp.inf))
        neg_sorted = jnp.sort(jnp.where(is1, jnp.inf, s))
        tp = n1 - jnp.minimum(jnp.searchsorted(pos_sorted, cut, side="left"), n1)
        fp = n0 - jnp.minimum(jnp.searchsorted(neg_sorted, cut, side="left"), n0)
    else:
        # Weight totals of each class at or above the cut (suffix sums of the sorted weights).
        order = jnp.argsort(s)
        below = jnp.searchsorted(s[order], cut, side="left")
        tp = suffix_sums(jnp.where(is1, sample_weight, 0.0)[order])[below]
        fp = suffix_sums(jnp.where(is1, 0.0, sample_weight)[order])[below]
        n1 = jnp.sum(jnp.where(is1, sample_weight, 0.0))
        n0 = jnp.sum(jnp.where(is1, 0.0, sample_weight))
    # P_i / N_i weights (Ferrer 2022a, eq. 2): with data priors P_1 TP/N_1 = TP/N.
    return p1 * (tp / n1) - (1.0 - p1) * (fp / n0) * odds


@partial(jax.jit, static_argnames=("score_type",))
def _decision_kernel(labels, scores, log_p, cut, odds, sample_weight=None, *, score_type):
    s = ranking_log_odds(scores, score_type)
    if score_type in v.LIKELIHOOD_TYPES:
        s = s + (log_p[1] - log_p[0])  # posterior log-odds: Bayes' rule (Ferrer 2022b, eqs. 45-47)
        p1 = jnp.exp(log_p[1])
    elif sample_weight is None:
        p1 = jnp.mean(labels == 1, dtype=s.dtype)
    else:
        p1 = jnp.sum(jnp.where(labels == 1, sample_weight, 0.0)) / jnp.sum(sample_weight)
    flat_cut, flat_odds = cut.reshape(-1), odds.reshape(-1)

    def one_system(lab, one):
        return jax.vmap(lambda c, o: _decision_one(lab, one, c, o, p1, sample_weight))(flat_cut, flat_odds)

    nb = per_system(one_system, labels, s)
    return nb.reshape(s.shape[:-1] + cut.shape), p1 - (1.0 - p1) * odds


def _threshold_log_odds(threshold_probabilities, dtype):
    """``(p_t, cut, odds)``: the log-odds cut realizing "treat iff P(1|x) >= p_t" on scores of ``dtype``.

    For concrete ``p_t`` the cut is ``logit(p_t)`` computed in float64 and
    rounded up to ``dtype``: for log-odds ``s`` of that dtype, ``s >= cut``
    holds exactly when ``s >= logit(p_t)``.
    """
    a = checked_threshold_probabilities(threshold_probabilities)
    if v.is_tracer(a):
        p = jnp.asarray(a, dtype)
        return p, jnp.log(p) - jnp.log1p(-p), p / (1.0 - p)
    logit = np.log(a) - np.log1p(-a)
    dt = np.dtype(dtype)
    cut = logit.astype(dt)
    cut = np.where(cut < logit, np.nextafter(cut, np.array(np.inf, dt)), cut)
    return v.to_device(a, dt), v.to_device(cut, dt), v.to_device(a / (1.0 - a), dt)


def decision_curve(labels: ArrayLike, scores: ArrayLike, *, threshold_probabilities: ArrayLike,
                   priors: ArrayLike | None = None, score_type: str = "log_posteriors",
                   sample_weight: ArrayLike | None = None) -> DecisionCurve:
    """Decision curve analysis (Vickers & Elkin, Med. Decis. Making 26, 565-574, 2006).

    For each threshold probability ``p_t``, the system treats (decides class
    1) iff ``P(1|x) >= p_t``, and its net benefit is

        ``NB = TP/N - FP/N * p_t / (1 - p_t) = P_2 R_22 - P_1 R_12 p_t / (1 - p_t)``

    (Ferrer 2025, eqs. 25-26, Ferrer (2022b) eqs. 12-13; ``P_2`` = prevalence of
    class 1).  References: treat all, ``P_2 - P_1 p_t / (1 - p_t)``, and
    treat none, 0.

    Link to the expected cost (Ferrer 2025, eqs. 26-27, App. C.1): ``NB = P_2 -
    EC``, the EC (Ferrer 2022a, eq. 2) with ``c_21 = 1`` (a miss), ``c_12 = p_t /
    (1 - p_t)`` (a false alarm) and no cost for hits; so ``NB = P_2 -
    min(P_2, P_1 p_t / (1 - p_t)) NEC`` and, since treat none has ``EC =
    P_2``, NB is the EC saved over treating nobody (the utility yield of
    Dyrland et al. (2022) eq. 10 with utilities ``-c``, shifted by ``P_2``).  For those
    costs "``P(1|x) >= p_t``" is the Bayes decision (Ferrer 2025, eq. 7, up to
    ties), which is why ``p_t`` is called a threshold probability; the curve
    is thus the EC of Bayes decisions over a family of cost ratios, and it
    judges calibration as well as discrimination.

    The posterior is taken from the scores as given: ``P(1|x) >= p_t`` is
    evaluated as class-1 log-odds ``>= logit(p_t)``, with the log-odds in the
    scores' float precision (``logit(p_t)`` rounded up to it, so the
    comparison is exact for those log-odds).

    Args:
      labels: ``(N,)`` classes in {0, 1}; both must be present.
      scores: binary scores ``(..., N, 2)`` (``(..., N)`` for ``"llr"``);
        leading axes are systems.
      threshold_probabilities: ``p_t``, a number or ``(T,)`` array in ``(0, 1)``.
      priors: ``(2,)`` class priors, required for (and only for) ``"llr"``
        and ``"log_likelihoods"``, like :func:`ecjax.scores.cross_entropy`:
        they turn the likelihoods into posteriors and are the population the
        net benefit is computed for (``NB = P_2 TP/N_2 - P_1 FP/N_1 p_t / (1 -
        p_t)`` with ``N_2``, ``N_1`` the numbers of class-1 and class-0
        samples, which is ``TP/N - FP/N p_t/(1 - p_t)`` when the priors equal
        the class frequencies of ``labels``; the prior-shift reading of Ferrer
        (2022a) eq. 2).  Posterior-type scores use the class frequencies of
        ``labels``.
      score_type: any score type.
      sample_weight: optional ``(N,)`` non-negative weights (frequency
        weights): ``TP``, ``FP``, ``N_1``, ``N_2`` and ``N`` become weight
        totals (and the class frequencies of posterior-type scores weighted
        fractions), so an integer weight ``k`` is ``k`` copies of the sample.

    Returns:
      :class:`DecisionCurve`; ``net_benefit`` has shape ``scores_batch +
      threshold_probabilities.shape``.
    """
    a, neg_inf = v.as_log_domain_scores(scores, score_type)
    s, log_p = v.scores_and_log_priors(a, priors, score_type)
    s = v.restore_neg_inf(s, neg_inf)
    v.check_binary_scores(s, score_type)
    if score_type in v.LIKELIHOOD_TYPES:
        v.as_positive_priors(priors, num_classes=2, why=" (Bayes' rule takes their log)")
    labels, s, w = binary_labels_and_weights(
        labels, s, score_type, sample_weight, what="a decision curve", drop_zero_weights=False,
        one_class="its net benefit weighs the true-positive rate, among class 1, against the false-positive rate, "
                  "among class 0")
    p_t, cut, odds = _threshold_log_odds(threshold_probabilities, s.dtype)
    nb, treat_all = _decision_kernel(labels, s, log_p, cut, odds, w, score_type=score_type)
    if v.any_traced(labels, s, p_t, log_p, w):
        p_ok = (p_t > 0) & (p_t < 1)
        batch = s.shape[:-1] if score_type == "llr" else s.shape[:-2]
        common = p_ok & binary_labels_ok(labels) & binary_weights_ok(labels, w)
        if score_type in v.LIKELIHOOD_TYPES:  # traced priors: a distribution with both classes possible
            common = common & jnp.all(jnp.isfinite(log_p)) & (jnp.abs(jnp.sum(jnp.exp(log_p)) - 1.0) <= v.SUM_TOL)
        ok = ~jnp.any(jnp.isnan(ranking_log_odds(s, score_type)), axis=-1).reshape(batch + (1,) * p_t.ndim)
        nb = v.nan_where_invalid(nb, ok & common)
        treat_all = v.nan_where_invalid(treat_all, common)
    return DecisionCurve(p_t, nb, treat_all, v.to_device(np.zeros(treat_all.shape, treat_all.dtype)))
