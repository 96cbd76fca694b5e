"""Per-sample costs: a cost matrix for each sample (a missed fraud costs its amount).

Every other EC in ecjax has one cost matrix ``c`` for all samples.  Here
sample ``n`` has its own ``c_n`` of shape ``(K, D)``, given either densely,
an ``(N, K, D)`` tensor, or (the canonical, compact form) as a base matrix
plus per-sample metadata times fixed matrices, :class:`SampleCosts`::

    c_n = base + sum_m amount[n, m] scale[m]            (one amount: c_n = base + a_n scale)

which never materializes ``(N, K, D)``.  scikit-learn's credit-card fraud
example (*Post-tuning the decision threshold for cost-sensitive learning*)
is ``M = 1``: as utilities, accepting a legitimate transaction gains 2 % of
its amount, accepting a fraud loses its amount, refusing a legitimate one
costs 5 and refusing a fraud gains 50 plus its amount, so
``base = [[0, -5], [0, 50]]`` and ``scale = [[0.02, 0], [-1, 1]]`` (rows =
truth legitimate / fraud, columns = accept / refuse), and its total benefit
is ``N`` times :func:`sample_utility_yield`.

The math (Ferrer 2022a, eq. 2 with one matrix per sample).  With sample weights
``u_n`` (default 1), class weight totals ``W_i = sum_{n: y_n = i} u_n`` and
evaluation priors ``P_i`` (default the data priors ``W_i / W``), each
sample weighs ``w_n = P_{y_n} u_n / W_{y_n}`` (``u_n / W`` with data priors)
and

* ``EC = sum_n w_n c_n[y_n, d_n]``.  When every ``c_n = c`` this is the
  usual ``sum_ij c_ij P_i R_ij`` (group the samples by ``(y_n, d_n)``);
* the naive EC is that of the best single decision for the whole set,
  ``min_d sum_n w_n c_n[y_n, d]`` (Ferrer 2022a, eq. 3 with ``sum_i P_i c_id``
  replaced by its per-sample form), and ``NEC = EC / naive``;
* the utility yield of per-sample utilities ``U_n`` is ``sum_n w_n
  U_n[y_n, d_n]`` (minus the EC of ``-U_n``);
* Bayes decisions (Ferrer 2025, eq. 7 per sample): ``d_n = argmin_d sum_k
  P(k | x_n) c_n[k, d]``, for :class:`SampleCosts` ``(P base)[n, d] +
  sum_m amount[n, m] (P scale[m])[n, d]``;
* for fixed decisions the EC is linear in the per-sample part: with
  ``c_n(s) = base + s sum_m amount[n, m] scale[m]``,
  ``EC(s) = EC_base + s EC_amount`` (:func:`sample_expected_cost_parts`),
  which the sweeps and :func:`ecjax.prob.compare_sample_costs` use.

Functions take ``labels (N,)``, then decisions ``(..., N)`` or scores
``(..., N, K)`` (leading axes: systems), then the costs; all work under
``jax.jit`` and ``jax.vmap`` (a :class:`SampleCosts` is a pytree).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple, Union

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.confusion import weight_totals
from ecjax._src.decisions import class_one_log_odds_kernel, log_posteriors_kernel
from ecjax._src.precision import einsum
from ecjax._src.scores.bayes_decisions import OptimalThreshold
from ecjax._src.scores.inputs import evaluation_priors, labels_and_scores
from ecjax._src.scores.roc import cut_threshold, prefix_sums, sort_scores


class SampleCosts(NamedTuple):
    """Per-sample costs ``c_n = base + sum_m amount[n, m] scale[m]`` without an ``(N, K, D)`` array.

    Build it with :func:`sample_costs` (validated).  Fields: ``base (K, D)``,
    ``amount (N, M)``, ``scale (M, K, D)``.
    """

    base: jax.Array
    amount: jax.Array
    scale: jax.Array

    def dense(self) -> jax.Array:
        """The ``(N, K, D)`` matrices ``c_n`` (for small N, or to hand to code that wants them)."""
        return self.base + einsum("nm,mkd->nkd", self.amount, self.scale)

    def scaled(self, s: ArrayLike) -> SampleCosts:
        """``base + s * (per-sample part)``: the costs with the per-sample part multiplied by ``s``."""
        return SampleCosts(self.base, self.amount * s, self.scale)


Costs = Union[SampleCosts, jax.Array]


def sample_costs(base: ArrayLike, amount: ArrayLike, scale: ArrayLike) -> SampleCosts:
    """Validated :class:`SampleCosts`: ``c_n = base + amount_n * scale`` (or ``sum_m amount[n, m] scale[m]``).

    Args:
      base: ``(K, D)`` the part every sample shares.
      amount: ``(N,)`` per-sample metadata (a transaction's amount), or ``(N, M)`` for ``M`` columns of it.
      scale: ``(K, D)`` (or ``(M, K, D)``): how each amount enters each cell.

    Example:
      >>> c = sample_costs([[0, 1], [0, 0]], [10.0, 20.0], [[0, 0], [1, 0]])   # a miss costs the amount
      >>> c.dense()[1].tolist()
      [[0.0, 1.0], [20.0, 0.0]]
    """
    return SampleCosts(*v.as_sample_cost_parts(base, amount, scale))


def as_costs(costs: object, num_samples: int, num_classes: int | None) -> Costs:
    """A :class:`SampleCosts` checked against ``N`` and ``K`` (any ``K`` when None), or a dense ``(N, K, D)``
    tensor checked."""
    if isinstance(costs, SampleCosts):
        if v.any_traced(*costs):
            return costs
        return SampleCosts(*v.as_sample_cost_parts(*costs, num_samples=num_samples, num_classes=num_classes))
    return v.as_per_sample_costs(costs, num_samples, num_classes)


def num_decisions(costs: Costs) -> int:
    """``D``, the decisions of the cost matrices."""
    return int((costs.base if isinstance(costs, SampleCosts) else costs).shape[-1])


def num_classes(costs: Costs) -> int:
    """``K``, the classes of the cost matrices."""
    return int((costs.base if isinstance(costs, SampleCosts) else costs).shape[-2])


# --------------------------------------------------------------------- kernels (no validation)

class SampleWeights(NamedTuple):
    """Each sample's weight in the EC, ``w_n = per_class[y_n] u_n`` with ``per_class = P_i / W_i``.

    Kept factored so that sums over samples run per class first on the
    sample weights ``u_n`` (exact for integer values, compensated past 4096
    samples: :func:`~ecjax._src.confusion.weight_totals`) and meet the rounded
    ``P_i / W_i`` once per class, as :func:`ecjax.expected_cost` does.
    """

    labels: jax.Array  # (N,)
    sample_weight: jax.Array  # (N,) u_n
    per_class: jax.Array  # (K,) P_i / W_i (0 for a class without weight)

    def per_sample(self) -> jax.Array:
        return self.per_class[self.labels] * self.sample_weight


def sample_weights_kernel(labels: jax.Array, priors: jax.Array | None, sample_weight: jax.Array | None,
                          num_classes: int) -> SampleWeights:
    """``w_n = P_{y_n} u_n / W_{y_n}`` (``u_n / W`` with data priors ``priors=None``), factored."""
    u = jnp.ones(labels.shape, jnp.result_type(float)) if sample_weight is None else sample_weight
    totals = weight_totals(labels, u, num_classes)  # W_i
    p = totals / totals.sum() if priors is None else priors
    return SampleWeights(labels, u, jnp.where(totals > 0, p / jnp.where(totals > 0, totals, 1.0), 0.0))


_sample_weights_jit = jax.jit(sample_weights_kernel, static_argnums=3)  # one program, not one per operation


def weighted_sum(x: jax.Array, weights: SampleWeights) -> jax.Array:
    """``sum_n w_n x[..., n] = sum_i (P_i / W_i) sum_{n: y_n = i} u_n x[..., n]``, shape ``x.shape[:-1]``."""
    by_class = weight_totals(weights.labels, weights.sample_weight * x, weights.per_class.shape[0])
    return einsum("...k,k->...", by_class, weights.per_class)


def incurred_kernel(labels: jax.Array, decisions: jax.Array, costs: Costs) -> jax.Array:
    """``c_n[y_n, d_n]``, shape of ``decisions`` ``(..., N)``; NaN where a (traced) label or decision is invalid."""
    if isinstance(costs, SampleCosts):
        base = costs.base[labels, decisions]
        out = base + einsum("nm,m...n->...n", costs.amount, costs.scale[:, labels, decisions])
    else:
        out = costs[jnp.arange(labels.shape[0]), labels, decisions]
    return jnp.where((decisions >= 0) & (labels >= 0), out, jnp.nan)


def naive_costs_kernel(labels: jax.Array, costs: Costs, weights: SampleWeights) -> jax.Array:
    """``sum_n w_n c_n[y_n, d]`` for each decision ``d``, ``(D,)``: the EC of always deciding ``d``.

    For :class:`SampleCosts`: ``sum_i P_i base[i, d] + sum_{m, i} A_mi scale[m, i, d]`` with the class's
    weighted amounts ``A_mi = sum_{n: y_n = i} w_n amount[n, m]`` (O(N M), no ``(N, K, D)`` array).
    """
    if isinstance(costs, SampleCosts):
        k = costs.base.shape[0]
        by_class = weights.per_class * weight_totals(labels, weights.sample_weight, k)  # P_i
        amount_by_class = weights.per_class * weight_totals(labels, weights.sample_weight * costs.amount.T, k)
        return einsum("k,kd->d", by_class, costs.base) + einsum("mk,mkd->d", amount_by_class, costs.scale)
    return weighted_sum(costs[jnp.arange(labels.shape[0]), labels].T, weights)


def expected_costs_kernel(posteriors: jax.Array, costs: Costs) -> jax.Array:
    """``sum_k P(k | x_n) c_n[k, d]``, ``(..., N, D)`` from posteriors ``(..., N, K)``."""
    if isinstance(costs, SampleCosts):
        return (einsum("...nk,kd->...nd", posteriors, costs.base)
                + einsum("nm,...nk,mkd->...nd", costs.amount, posteriors, costs.scale))
    return einsum("...nk,nkd->...nd", posteriors, costs)


def sample_bayes_decisions_kernel(log_posteriors: jax.Array, costs: Costs) -> jax.Array:
    """``argmin_d sum_k P(k | x_n) c_n[k, d]`` (ties: lowest ``d``); ``-1`` where the posteriors hold a NaN."""
    d = jnp.argmin(expected_costs_kernel(jnp.exp(log_posteriors), costs), axis=-1).astype(jnp.int32)
    return jnp.where(jnp.any(jnp.isnan(log_posteriors), -1), v.INVALID_INDEX, d)


@jax.jit
def _ec_and_naive(labels, decisions, costs, weights):
    ec = weighted_sum(incurred_kernel(labels, decisions, costs), weights)
    return ec, jnp.min(naive_costs_kernel(labels, costs, weights))


def split_costs(costs: Costs) -> tuple[Costs, Costs]:
    """``(fixed, per_sample)`` with ``costs = fixed + per_sample``: ``base`` and ``amount x scale`` of a
    :class:`SampleCosts`; ``0`` and the matrices of a dense tensor (all of it is per sample)."""
    if isinstance(costs, SampleCosts):
        return (SampleCosts(costs.base, jnp.zeros_like(costs.amount), costs.scale),
                SampleCosts(jnp.zeros_like(costs.base), costs.amount, costs.scale))
    return jnp.zeros_like(costs), costs


def scaled(costs: Costs, s: ArrayLike) -> Costs:
    """``fixed + s * per_sample`` (:func:`split_costs`): the per-sample part multiplied by ``s``."""
    return costs.scaled(s) if isinstance(costs, SampleCosts) else costs * s


def expected_cost_parts_kernel(labels: jax.Array, decisions: jax.Array, costs: Costs,
                               weights: SampleWeights) -> tuple[jax.Array, jax.Array]:
    """``(EC_fixed, EC_per_sample)`` of ``(..., N)`` decisions: ``EC(s) = EC_fixed + s EC_per_sample``."""
    fixed, per_sample = split_costs(costs)
    return (weighted_sum(incurred_kernel(labels, decisions, fixed), weights),
            weighted_sum(incurred_kernel(labels, decisions, per_sample), weights))


_parts = jax.jit(expected_cost_parts_kernel)


# --------------------------------------------------------------------- inputs

def _evaluation_weights(labels, k, priors, sample_weight):
    """Validated per-sample EC weights ``w_n`` (priors checked against the classes present)."""
    w = v.as_sample_weight(sample_weight, labels)
    _, p = evaluation_priors(labels, k, priors, w)
    return _sample_weights_jit(labels, p, w, k)


def decision_inputs(labels: ArrayLike, decisions: ArrayLike, costs: object, priors: ArrayLike | None,
                    sample_weight: ArrayLike | None) -> tuple[jax.Array, jax.Array, Costs, SampleWeights]:
    """Validated ``(labels (N,), decisions (..., N), costs, weights)`` of the decision-given functions."""
    y = v.check_shape(v.as_index_array(labels, "labels"), "labels", "(N,)")
    c = as_costs(costs, y.shape[0], None)
    k = num_classes(c)
    y = v.as_label_vector(labels, num_classes=k, upper_is="the cost matrices' rows")
    d = v.as_index_array(decisions, "decisions", upper=num_decisions(c), upper_is="the cost matrices' columns")
    v.check_same_length("labels", y, "decisions", d)
    return y, d, c, _evaluation_weights(y, k, priors, sample_weight)


# --------------------------------------------------------------------- decisions given

def sample_expected_cost(labels: ArrayLike, decisions: ArrayLike, costs: Costs | ArrayLike, *,
                         priors: ArrayLike | None = None, sample_weight: ArrayLike | None = None) -> jax.Array:
    """``EC = sum_n w_n c_n[y_n, d_n]`` with per-sample costs (module docstring for ``w_n``).

    Args:
      labels: ``(N,)`` true classes.
      decisions: ``(..., N)`` decisions of one or more systems.
      costs: :class:`SampleCosts` or an ``(N, K, D)`` tensor.
      priors: ``(K,)`` deployment priors (default: data priors, where the EC
        is the weighted average cost per sample).
      sample_weight: ``(N,)`` scikit-learn sample weights.

    Returns:
      ``(...)``: one EC per system.  Equals :func:`ecjax.expected_cost` of
      the confusion counts when every sample has the same matrix.
    """
    y, d, c, w = decision_inputs(labels, decisions, costs, priors, sample_weight)
    return _ec_and_naive(y, d, c, w)[0]


def sample_normalized_expected_cost(labels: ArrayLike, decisions: ArrayLike, costs: Costs | ArrayLike, *,
                                    priors: ArrayLike | None = None,
                                    sample_weight: ArrayLike | None = None) -> jax.Array:
    """``NEC = EC / min_d sum_n w_n c_n[y_n, d]``: the EC over that of the best single decision for all samples.

    Raises :class:`~ecjax.InputError` when that naive EC is not positive.
    Arguments as :func:`sample_expected_cost`.
    """
    y, d, c, w = decision_inputs(labels, decisions, costs, priors, sample_weight)
    ec, naive = _ec_and_naive(y, d, c, w)
    if not v.any_traced(ec, naive):
        v.check_naive_cost_positive(naive)
    return jnp.where(naive > 0, ec / naive, jnp.nan)  # traced input: the NaN contract


def sample_utility_yield(labels: ArrayLike, decisions: ArrayLike, utilities: Costs | ArrayLike, *,
                         priors: ArrayLike | None = None, sample_weight: ArrayLike | None = None) -> jax.Array:
    """Utility yield ``sum_n w_n U_n[y_n, d_n]`` of per-sample utilities (higher is better; minus the EC of ``-U``).

    With data priors, ``N`` times it is the total utility: scikit-learn's
    fraud ``business_metric`` for the ``SampleCosts`` of the module docstring.
    """
    return sample_expected_cost(labels, decisions, utilities, priors=priors, sample_weight=sample_weight)


def sample_expected_cost_parts(labels: ArrayLike, decisions: ArrayLike, costs: Costs | ArrayLike, *,
                               priors: ArrayLike | None = None,
                               sample_weight: ArrayLike | None = None) -> tuple[jax.Array, jax.Array]:
    """``(EC_base, EC_amount)``: ``EC(s) = EC_base + s EC_amount`` for costs ``base + s * amount * scale``.

    ``EC_base = sum_n w_n base[y_n, d_n]`` and ``EC_amount = sum_n w_n sum_m
    amount[n, m] scale[m, y_n, d_n]``: the EC of fixed decisions is linear in
    the scale ``s`` of the per-sample part (of a dense ``(N, K, D)`` tensor,
    all per sample: ``(0, EC)``).
    """
    y, d, c, w = decision_inputs(labels, decisions, costs, priors, sample_weight)
    return _parts(y, d, c, w)


# --------------------------------------------------------------------- scores given

def score_inputs(labels: ArrayLike, scores: ArrayLike, costs: object, priors: ArrayLike | None, score_type: str,
                 sample_weight: ArrayLike | None) -> tuple[jax.Array, jax.Array, jax.Array, Costs, SampleWeights]:
    """Validated ``(labels, scores, log priors, costs, weights)`` of the score-given functions."""
    y, s, log_p, k = labels_and_scores(labels, scores, priors, score_type)
    c = as_costs(costs, y.shape[0], k)
    return y, s, log_p, c, _evaluation_weights(y, k, priors, sample_weight)


@partial(jax.jit, static_argnames=("score_type",))
def _bayes_decisions_jit(scores, log_p, costs, score_type):
    return sample_bayes_decisions_kernel(log_posteriors_kernel(scores, log_p, score_type), costs)


def sample_bayes_decisions(scores: ArrayLike, costs: Costs | ArrayLike, *, priors: ArrayLike | None = None,
                           score_type: str = "log_posteriors") -> jax.Array:
    """Bayes decisions with per-sample costs: ``d_n = argmin_d sum_k P(k | x_n) c_n[k, d]`` (Ferrer 2025, eq. 7).

    ``scores`` ``(..., N, K)`` (``(..., N)`` for ``"llr"``); ``priors`` and
    ``score_type`` as in :func:`ecjax.bayes_decisions`.  Returns ``(..., N)``
    int32 decisions; ties go to the lowest index.
    """
    s, log_p = v.scores_and_log_priors(scores, None if score_type in v.POSTERIOR_TYPES else priors, score_type)
    n = s.shape[-1 if score_type == "llr" else -2]
    c = as_costs(costs, n, log_p.shape[-1])
    return _bayes_decisions_jit(s, log_p, c, score_type)


@partial(jax.jit, static_argnames=("score_type",))
def _bayes_ec_jit(labels, scores, log_p, costs, weights, score_type):
    d = sample_bayes_decisions_kernel(log_posteriors_kernel(scores, log_p, score_type), costs)
    return _ec_and_naive(labels, d, costs, weights)


def sample_bayes_expected_cost(labels: ArrayLike, scores: ArrayLike, costs: Costs | ArrayLike, *,
                               priors: ArrayLike | None = None, score_type: str = "log_posteriors",
                               normalize: bool = False, sample_weight: ArrayLike | None = None) -> jax.Array:
    """EC (NEC with ``normalize``) of the per-sample Bayes decisions of ``scores``.

    The per-sample counterpart of :func:`ecjax.bayes_expected_cost`: ``sum_n
    w_n c_n[y_n, d_n]`` with ``d_n`` from :func:`sample_bayes_decisions`.
    Returns one value per system ``(...)``.
    """
    y, s, log_p, c, w = score_inputs(labels, scores, costs, priors, score_type, sample_weight)
    ec, naive = _bayes_ec_jit(y, s, log_p, c, w, score_type)
    if not normalize:
        return ec
    v.check_naive_cost_positive(naive)
    return ec / naive


@jax.jit
def _threshold_kernel(labels, s, costs, weights):
    """One sort (:func:`ecjax.scores.sort_scores`): the EC of "decide 1 iff s > t" at every cut, and the best valid
    cut.

    ``EC(cut k) = sum_n w_n c_n[y_n, 0] + sum_{n above the cut} w_n (c_n[y_n, 1]
    - c_n[y_n, 0])``: a suffix sum of the sorted per-sample differences.
    """
    zeros = jnp.zeros(labels.shape, jnp.int32)
    c0, c1 = incurred_kernel(labels, zeros, costs), incurred_kernel(labels, zeros + 1, costs)
    ranked = sort_scores(labels, s)
    gain = (weights.per_sample() * (c1 - c0))[ranked.order]
    above = jnp.concatenate([prefix_sums(gain[::-1])[::-1], jnp.zeros((1,), gain.dtype)])
    ec = jnp.where(ranked.valid, weighted_sum(c0, weights) + above, jnp.inf)
    k = jnp.argmin(ec)
    return ec[k], cut_threshold(ranked.s_sorted, k), jnp.min(naive_costs_kernel(labels, costs, weights))


def sample_optimal_threshold_expected_cost(labels: ArrayLike, scores: ArrayLike, costs: Costs | ArrayLike, *,
                                           priors: ArrayLike | None = None, score_type: str = "log_posteriors",
                                           normalize: bool = False,
                                           sample_weight: ArrayLike | None = None) -> OptimalThreshold:
    """The least EC over one threshold on the class-1 log-odds, with per-sample costs (one sort, O(N log N)).

    With per-sample costs the Bayes threshold differs per sample (``log
    (c_n[0, 1] - c_n[0, 0]) / (c_n[1, 0] - c_n[1, 1])`` on the log-odds); this
    is the best *single* threshold ``t`` for "decide 1 iff ``s_n > t``", what
    scikit-learn's ``TunedThresholdClassifierCV`` searches on a grid, exact
    over every cut between distinct scores (ties never split).  Binary
    ``(N, 2, 2)`` costs or :class:`SampleCosts` with ``K = D = 2``.

    Returns:
      :class:`~ecjax.scores.OptimalThreshold` ``(expected_cost, threshold)``.
    """
    y, s, log_p, c, w = score_inputs(labels, scores, costs, priors, score_type, sample_weight)
    v.check_binary(int(log_p.shape[-1]), "a threshold")
    v.check_binary(num_decisions(c), "a threshold (two decisions)")
    v.check_one_system(s, 1 if score_type == "llr" else 2)
    ec, thr, naive = _threshold_kernel(y, class_one_log_odds_kernel(s, score_type, log_p), c, w)
    if normalize:
        v.check_naive_cost_positive(naive)
        ec = ec / naive
    return OptimalThreshold(ec, thr)
