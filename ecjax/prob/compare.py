"""Which classifier, and how sure are we?  The posterior ranking of classifiers.

:func:`compare` combines the two sources of doubt about which classifier is
best:

* the utility (cost) matrix is uncertain: a prior over utility matrices
  (:mod:`ecjax.prob.utility_priors`), or a fixed matrix;
* the test set is finite: the posterior of each system's confusion rates
  (:mod:`ecjax.prob.rates`), paired through the joint outcome table when the
  systems were scored on the same samples (:mod:`ecjax.prob.paired`).

Each posterior draw ``s`` pairs a utility matrix ``U_s`` with rates ``R_s``
(and class priors ``P_s``), and gives every system ``m`` the utility yield
(seed 004 eq. 10, rows = true class; seed 000 eq. 2 for the expected cost)

    yield_sm = sum_ij U_s,ij P_s,i R_s,m,ij   (computed by ecjax.metrics.expected_value),

from which come P(best), the rank distribution, pairwise probabilities,
HDIs, and the recommendation: the system of highest expected yield, which
by seed 004 eq. 19 is the best system under the expected utility matrix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

import numpy as np

import jax
import jax.numpy as jnp

from ecjax import _validate as v
from ecjax.confusion import confusion_counts, data_priors, joint_outcome_table, rates
from ecjax.costs import normalize_rows
from ecjax.decisions import bayes_decisions_kernel, log_posteriors_kernel, naive_expected_cost
from ecjax.metrics import expected_value
from ecjax.prob import paired as paired_mod
from ecjax.prob import ranking
from ecjax.prob._sampling import dirichlet, gamma
from ecjax.prob.rates import (
    PriorDistribution,
    as_class_priors,
    check_concentration,
    default_concentration,
    sample_class_priors,
    sample_rates,
)
from ecjax.prob.utility_priors import UtilityPrior, as_utility_prior

# Scores mode materializes a dense joint table of K * D**M cells per draw.
_MAX_DENSE_CELLS = 1 << 16


# ---------------------------------------------------------------- evaluation

@jax.jit
def evaluate_draws(utilities, weights, priors):
    """Kernel: yield, EC and NEC draws ``(S, M)`` from matched draws.

    Args:
      utilities: ``(S, K, D)`` utility matrices.
      weights: ``(S, M, K, D)`` confusion rates or joint probabilities (any
        row scaling: :func:`ecjax.metrics.expected_value` row-normalizes).
      priors: ``(S, K)`` class priors.

    The EC is that of costs ``-U``; the NEC (seed 000 eq. 4) uses the
    row-normalized costs ``max_j U_ij - U_ij`` (seed 001 §2), for which the
    naive EC is positive unless one decision is best for every class (NaN then).
    """
    p = priors[:, None, :]
    yields = expected_value(weights, utilities[:, None], p)
    costs = normalize_rows(-utilities)
    ec_normalized = expected_value(weights, costs[:, None], p)
    naive = naive_expected_cost(costs[:, None], p)
    nec = jnp.where(naive > 0, ec_normalized / jnp.where(naive > 0, naive, 1.0), jnp.nan)
    return yields, -yields, nec


# ------------------------------------------------------------ input handling

def _systems_from(x, name):
    """Names and per-system arrays from a mapping, a sequence of arrays, or one stacked array."""
    if isinstance(x, Mapping):
        if not x:
            raise v.InputError(f"`{name}` is empty")
        return [str(k) for k in x], [x[k] for k in x]
    if isinstance(x, Sequence) and not isinstance(x, (str, bytes)) and len(x) and not np.isscalar(x[0]):
        return None, list(x)
    return None, None


def _split_decisions(decisions):
    names, items = _systems_from(decisions, "decisions")
    if items is None:
        arr = v.as_array(decisions, "decisions", min_ndim=1)
        items = [arr] if arr.ndim == 1 else list(arr)
        if arr.ndim > 2:
            raise v.InputError(f"`decisions` must be (N,) or (M, N), got shape {tuple(arr.shape)}")
    return names, items


def _split_scores(scores, score_type):
    names, items = _systems_from(scores, "scores")
    if items is None:
        arr = v.as_array(scores, "scores", min_ndim=1)
        single = 1 if score_type == "llr" else 2
        if arr.ndim == single:
            items = [arr]
        elif arr.ndim == single + 1:
            items = list(arr)
        else:
            raise v.InputError(f"`scores` must have {single} or {single + 1} dimensions, got shape {tuple(arr.shape)}")
    return names, items


def _split_labels(labels, num_systems, names):
    if isinstance(labels, Mapping):
        if names is None or set(map(str, labels)) != set(names):
            raise v.InputError("`labels` given as a mapping must have the same keys as `decisions`/`scores`")
        lookup = {str(k): val for k, val in labels.items()}
        return [lookup[n] for n in names]
    _, items = _systems_from(labels, "labels")
    if items is None:
        arr = v.as_array(labels, "labels", min_ndim=1)
        if arr.ndim == 1:
            return [arr] * num_systems
        if arr.ndim != 2:
            raise v.InputError(f"`labels` must be (N,) or (M, N), got shape {tuple(arr.shape)}")
        items = list(arr)
    if len(items) != num_systems:
        raise v.InputError(f"`labels` has {len(items)} label vectors for {num_systems} systems")
    return items


def _resolve_utilities(utilities, costs):
    if (utilities is None) == (costs is None):
        raise v.InputError("give exactly one of `utilities` and `costs` (a (K, D) matrix or a utility prior)")
    if utilities is not None:
        return as_utility_prior(utilities, "utilities")
    prior = as_utility_prior(costs, "costs")
    return prior if isinstance(prior, UtilityPrior) else -prior + 0.0


def _check_paired_labels(label_list):
    first = np.asarray(label_list[0])
    for m, lab in enumerate(label_list[1:], start=1):
        lab = np.asarray(lab)
        if lab.shape != first.shape:
            raise v.InputError(
                f"paired systems must share their labels: system {m} has {lab.shape[-1]} samples, system 0 has "
                f"{first.shape[-1]}; pass paired=False for systems scored on different samples"
            )
        diff = np.nonzero(lab != first)[0]
        if diff.size:
            raise v.InputError(
                f"paired systems must share their labels: labels of system {m} differ from system 0 at sample "
                f"{int(diff[0])} ({lab[diff[0]]} vs {first[diff[0]]}); pass paired=False for systems scored on "
                "different samples or in different orders"
            )
    return first


# ------------------------------------------------------------- scores mode

@partial(jax.jit, static_argnames=("score_type", "num_classes", "num_decisions", "paired", "batch_size"))
def _scores_counts(log_scores, log_prior_draws, labels, costs, *, score_type, num_classes, num_decisions, paired,
                   batch_size):
    """Counts of each draw's Bayes decisions: ``(S, M, K, D)`` (unpaired) or ``(S, K * D**M)`` (paired).

    ``log_scores``: ``(M, N, K)`` (or ``(M, N)`` llr); ``costs``: ``(S, K, D)``;
    ``log_prior_draws``: ``(S, K)`` used by likelihood-type scores.  Draws are
    processed in chunks of ``batch_size`` to bound the ``(B, M, N, D)``
    intermediate.
    """
    s = costs.shape[0]
    m = log_scores.shape[0]
    pad = (-s) % batch_size
    costs_p = jnp.concatenate([costs, jnp.broadcast_to(costs[:1], (pad,) + costs.shape[1:])])
    priors_p = jnp.concatenate([log_prior_draws, jnp.broadcast_to(log_prior_draws[:1], (pad, num_classes))])
    chunks = (costs_p.reshape(-1, batch_size, *costs.shape[1:]), priors_p.reshape(-1, batch_size, num_classes))

    def one_chunk(args):
        c, lp = args
        log_post = log_posteriors_kernel(log_scores[None], lp[:, None], score_type)  # (B, M, N, K)
        dec = bayes_decisions_kernel(log_post, c[:, None])  # (B, M, N): decisions follow the drawn costs
        if not paired:
            return confusion_counts(labels, dec, num_classes=num_classes, num_decisions=num_decisions)
        powers = num_decisions ** jnp.arange(m - 1, -1, -1)
        flat = labels[0] * num_decisions ** m + jnp.einsum("bmn,m->bn", dec, powers)
        size = num_classes * num_decisions ** m
        return jax.vmap(lambda f: jnp.zeros(size, jnp.int32).at[f].add(1))(flat)

    out = jax.lax.map(one_chunk, chunks)
    return out.reshape((-1,) + out.shape[2:])[:s]


def _dense_marginals(weights, num_systems, num_classes, num_decisions):
    s = weights.shape[0]
    w = weights.reshape((s, num_classes) + (num_decisions,) * num_systems)
    outs = []
    for j in range(num_systems):
        other = tuple(2 + i for i in range(num_systems) if i != j)
        outs.append(w.sum(other) if other else w)
    return jnp.stack(outs, 1)


@partial(jax.jit, static_argnames=("num_systems", "num_classes", "num_decisions"))
def _dense_joint_posterior(key, counts, concentration, *, num_systems, num_classes, num_decisions):
    counts = counts.astype(jnp.result_type(float))
    w = gamma(key, counts + concentration * (counts > 0))
    w = w / w.sum(-1, keepdims=True)
    return _dense_marginals(w, num_systems, num_classes, num_decisions)


@partial(jax.jit, static_argnames=("num_systems", "num_classes", "num_decisions"))
def _dense_point(counts, *, num_systems, num_classes, num_decisions):
    w = counts.astype(jnp.result_type(float))
    return _dense_marginals(w / w.sum(-1, keepdims=True), num_systems, num_classes, num_decisions)


@partial(jax.jit, static_argnames=("small_shapes",))
def _per_draw_rates(key, counts, concentration, *, small_shapes):
    return dirichlet(key, counts.astype(jnp.result_type(float)) + concentration, small_shapes=small_shapes)


# ------------------------------------------------------------ rate sources

class _Source:
    """Where the rate draws come from: given decisions (fixed counts) or scores (counts follow the costs).

    ``draw(key, costs, log_priors)`` gives ``(S, M, K, D)`` posterior
    weights for the cost draws ``(S, K, D)``; ``point(costs, log_priors)``
    the plug-in weights (empirical rates) for the same costs.  ``joint``:
    the weights are joint (class, decision) probabilities whose class
    marginals are the (uncertain) data priors.
    """

    def __init__(self, draw, point, joint, depends_on_costs):
        self.draw, self.point, self.joint, self.depends_on_costs = draw, point, joint, depends_on_costs


def _counts_source(counts, alpha):
    """Unpaired systems from their confusion counts ``(M, K, D)``."""
    counts = jnp.asarray(counts)
    point = rates(counts).astype(jnp.result_type(float))
    return _Source(
        draw=lambda key, costs, lp: sample_rates(key, counts, num_draws=costs.shape[0], concentration=alpha),
        point=lambda costs, lp: jnp.broadcast_to(point, (costs.shape[0],) + point.shape),
        joint=False, depends_on_costs=False,
    )


def _joint_source(labels, decisions, groups, alpha, k, d):
    """Paired systems (or one clustered system) from the joint outcome table."""
    labels, decisions = jnp.asarray(labels), jnp.asarray(decisions)
    counts = confusion_counts(labels, decisions, num_classes=k, num_decisions=d)  # (M, K, D)
    point = rates(counts).astype(jnp.result_type(float))
    if groups is not None:
        table = paired_mod.clustered_outcome_table(labels, decisions, groups, num_classes=k, num_decisions=d)
        sampler = paired_mod.sample_clustered_confusions
    else:
        table = joint_outcome_table(labels, decisions, num_classes=k, num_decisions=d)
        sampler = paired_mod.sample_joint_confusions
    return _Source(
        draw=lambda key, costs, lp: sampler(key, table, num_draws=costs.shape[0], concentration=alpha),
        # Rates, not joint weights: the point priors are passed separately.
        point=lambda costs, lp: jnp.broadcast_to(point, (costs.shape[0],) + point.shape),
        joint=True, depends_on_costs=False,
    )


def _scores_source(items, label_list, shared_labels, joint, alpha, score_type, k, d):
    """Scores: every cost draw makes its own Bayes decisions, then the rates posterior of those counts."""
    m = len(items)
    f = jnp.result_type(float)
    small = 0 < alpha < 1

    def counts_for(costs, lp, log_scores, lab, as_joint):
        n = lab.shape[-1]
        batch = int(max(1, min(costs.shape[0], (1 << 22) // max(1, log_scores.shape[0] * n * d))))
        return _scores_counts(log_scores, lp, lab, costs, score_type=score_type, num_classes=k, num_decisions=d,
                              paired=as_joint, batch_size=batch)

    if joint:
        log_scores = jnp.stack(items)
        lab = jnp.broadcast_to(jnp.asarray(shared_labels), (m, shared_labels.shape[0]))
        kw = dict(num_systems=m, num_classes=k, num_decisions=d)

        def draw(key, costs, lp):
            return _dense_joint_posterior(key, counts_for(costs, lp, log_scores, lab, True), alpha, **kw)

        def point(costs, lp):
            return _dense_point(counts_for(costs, lp, log_scores, lab, True), **kw)
    else:
        def all_counts(costs, lp):
            # One system at a time: unpaired test sets may differ in size.
            return jnp.concatenate([counts_for(costs, lp, x[None], jnp.asarray(lab)[None], False)
                                    for x, lab in zip(items, label_list)], 1)

        def draw(key, costs, lp):
            return _per_draw_rates(key, all_counts(costs, lp), alpha, small_shapes=small)

        def point(costs, lp):
            return rates(all_counts(costs, lp)).astype(f)

    return _Source(draw, point, joint, depends_on_costs=True)


# ---------------------------------------------------------------- compare

def _check_common(key, num_draws, hdi_prob, rope):
    if key is None:
        raise v.InputError("`key` is required: pass a jax.random key, e.g. jax.random.key(0)")
    num_draws = v.as_positive_int(num_draws, "num_draws")
    hdi_prob = ranking.check_hdi_prob(hdi_prob, num_draws)
    if rope is not None:
        try:
            rope = float(rope)
        except (TypeError, ValueError):
            raise v.InputError(f"`rope` must be a number >= 0, got {rope!r}") from None
        if not np.isfinite(rope) or rope < 0:
            raise v.InputError(f"`rope` must be a finite number >= 0, got {rope!r}")
    return num_draws, hdi_prob, rope


def _system_names(systems, names, num_systems):
    if systems is not None:
        systems = tuple(str(s) for s in systems)
        if len(systems) != num_systems:
            raise v.InputError(f"`systems` names {len(systems)} systems, but there are {num_systems}")
        return systems
    return tuple(names) if names is not None else tuple(f"system {m}" for m in range(num_systems))


def compare(labels, decisions=None, *, utilities=None, costs=None, scores=None, score_type: str = "log_posteriors",
            priors=None, paired: bool = True, groups=None, concentration=None, num_draws: int = 20_000, key=None,
            rope=None, hdi_prob: float = 0.9, systems=None, decompose: bool = True):
    """Posterior ranking of classifiers under an uncertain utility matrix and a finite test set.

    Args:
      labels: ``(N,)`` true classes shared by all systems, or ``(M, N)`` /
        a list / a mapping of one label vector per system (unpaired systems
        may have different test sets, of different sizes).
      decisions: ``(M, N)`` decisions in ``[0, D)``, a list of ``(N_m,)``
        arrays, or a mapping ``name -> decisions``.
      utilities: a ``(K, D)`` utility matrix, a
        :class:`~ecjax.prob.UtilityPrior`, or a NumPyro model with a
        ``"utility"``/``"cost"`` site.  Or give ``costs`` instead (a cost
        matrix, or a prior).
      scores: instead of ``decisions``: ``(M, N, K)`` scores (see
        ``score_type``; a list or mapping of ``(N_m, K)`` arrays); each draw
        then makes the Bayes decisions of its own cost matrix (seed 001 eq.
        7), so the decisions follow the costs.  Likelihood-type scores
        (``"llr"``, ``"log_likelihoods"``) are combined with each draw's
        class priors (with uncertain data priors in the paired model, with
        the test set's class frequencies).
      priors: ``None`` (the test set's class frequencies, with their
        posterior uncertainty; unpaired systems with different test sets
        share one draw, from the mean of their class counts, so the same
        population is not counted ``M`` times), a fixed ``(K,)`` vector of
        deployment priors, or a :class:`~ecjax.prob.PriorDistribution`
        (:func:`~ecjax.prob.dirichlet_priors`, :func:`~ecjax.prob.interval_priors`).
      paired: the systems were scored on the same samples in the same order
        (labels must then be identical): use the Dirichlet over the joint
        outcome cells (Bayesian bootstrap).  ``False``: independent Dirichlet
        posteriors per system and class.
      groups: ``(N,)`` cluster ids (patient, speaker, document) for a
        two-level Bayesian bootstrap; needs shared labels (paired systems,
        or one system) and ``decisions``.
      concentration: Dirichlet concentration added to each cell; default 0
        (Bayesian bootstrap over occupied cells) for the joint model and
        ``1 / D`` (Perks) for the unpaired one; see :mod:`ecjax.prob.rates`.
      num_draws: posterior draws ``S``.
      key: ``jax.random`` key (required).
      rope: half-width of the region of practical equivalence, in yield units.
      hdi_prob: mass of the reported highest-density intervals; needs
        ``num_draws >= 10 / (1 - hdi_prob)``.
      systems: names of the systems (default: mapping keys or ``"system m"``).
      decompose: also compute the doubt decomposition (two more rankings).

    Returns:
      a :class:`~ecjax.prob.Comparison`.

    Example:
      >>> import jax, numpy as np
      >>> from ecjax import prob
      >>> labels = np.array([0, 1, 1, 0, 1, 0, 1, 1])
      >>> decisions = np.array([[0, 1, 1, 0, 1, 1, 1, 1], [0, 1, 0, 0, 1, 0, 0, 1]])
      >>> result = prob.compare(labels, decisions, costs=prob.cost_ratio(2, 5), key=jax.random.key(0),
      ...                       num_draws=2000)
      >>> result.p_best.shape, result.rank_probabilities.shape
      ((2,), (2, 2))
    """
    num_draws, hdi_prob, rope = _check_common(key, num_draws, hdi_prob, rope)
    if (decisions is None) == (scores is None):
        raise v.InputError("give exactly one of `decisions` and `scores`")
    prior = _resolve_utilities(utilities, costs)
    k, d = prior.shape if isinstance(prior, UtilityPrior) else tuple(prior.shape)
    if k < 2:
        raise v.InputError(f"the utility matrix must have at least 2 classes (rows), got shape {(k, d)}")

    if scores is not None:
        v.check_score_type(score_type)
        if groups is not None:
            raise v.InputError("`groups` (clustered samples) is supported with `decisions`, not with `scores`")
        names, items = _split_scores(scores, score_type)
        items = [v.as_scores(x, f"scores[{m}]", score_type=score_type) for m, x in enumerate(items)]
        if score_type == "llr":
            if k != 2:
                raise v.InputError("score_type='llr' is binary: the utility matrix must have 2 rows")
            if any(x.ndim != 1 for x in items):
                raise v.InputError("llr scores must be one vector per system")
        elif any(x.ndim != 2 or x.shape[-1] != k for x in items):
            raise v.InputError(f"each system's scores must be (N, K) with K = {k} (the rows of the utility matrix)")
    else:
        names, items = _split_decisions(decisions)
        items = [v.as_index_array(x, f"decisions[{m}]") for m, x in enumerate(items)]
        for m, x in enumerate(items):
            if x.ndim != 1:
                raise v.InputError(
                    f"each system's decisions must be a vector, got shape {tuple(x.shape)} for system {m}")
            if int(x.max()) >= d:
                raise v.InputError(
                    f"decisions of system {m} go up to {int(x.max())}, outside the utility matrix's {d} columns "
                    f"(decisions must be in [0, {d}))"
                )
    num_systems = len(items)
    label_list = [v.as_index_array(x, "labels") for x in _split_labels(labels, num_systems, names)]
    for m, (lab, x) in enumerate(zip(label_list, items)):
        if lab.ndim != 1:
            raise v.InputError(f"labels of system {m} must be a vector, got shape {tuple(lab.shape)}")
        if int(lab.max()) >= k:
            raise v.InputError(f"labels go up to {int(lab.max())}, outside the utility matrix's {k} rows (classes)")
        if lab.shape[0] != x.shape[0]:
            raise v.InputError(f"system {m} has {x.shape[0]} decisions/scores but {lab.shape[0]} labels")
    systems = _system_names(systems, names, num_systems)
    paired = bool(paired)
    if paired and num_systems > 1:
        shared_labels = _check_paired_labels(label_list)
    else:
        shared_labels = np.asarray(label_list[0]) if num_systems == 1 else None
    if groups is not None and shared_labels is None:
        raise v.InputError("`groups` (clustered samples) needs paired systems (shared labels) or a single system")
    joint = shared_labels is not None and (paired or groups is not None)
    if concentration is None:
        alpha = paired_mod.DEFAULT_CONCENTRATION if joint else default_concentration(d)
    else:
        alpha = check_concentration(concentration)
    class_counts = np.mean([np.bincount(np.asarray(lab), minlength=k) for lab in label_list], axis=0)

    if scores is not None:
        source = _scores_source(items, label_list, shared_labels, joint, alpha, score_type, k, d)
    elif joint:
        source = _joint_source(shared_labels, np.stack([np.asarray(x) for x in items]), groups, alpha, k, d)
    else:
        counts = jnp.stack([confusion_counts(jnp.asarray(lab), jnp.asarray(x), num_classes=k, num_decisions=d)
                            for lab, x in zip(label_list, items)])
        source = _counts_source(counts, alpha)
    model = ("clustered two-level Bayesian bootstrap" if groups is not None else
             "paired: Dirichlet over joint outcome cells" if joint else "unpaired: Dirichlet per system and class")
    return _rank(prior, source, class_counts, priors, k=k, d=d, key=key, num_draws=num_draws, rope=rope,
                 hdi_prob=hdi_prob, systems=systems, decompose=decompose,
                 likelihood_scores=scores is not None and score_type in ("llr", "log_likelihoods"),
                 info={"model": model, "concentration": alpha,
                       "decisions": "Bayes decisions of each drawn cost matrix" if scores is not None else "given"})


def compare_counts(counts, *, utilities=None, costs=None, priors=None, concentration=None, num_draws: int = 20_000,
                   key=None, rope=None, hdi_prob: float = 0.9, systems=None, decompose: bool = True):
    """:func:`compare` from confusion matrices alone: ``(M, K, D)`` counts of unpaired systems.

    Without the samples the pairing is unknown, so this is the unpaired
    model (independent Dirichlet posteriors per system and class).
    """
    from ecjax.prob.rates import as_counts

    num_draws, hdi_prob, rope = _check_common(key, num_draws, hdi_prob, rope)
    c = as_counts(counts)
    if c.ndim == 2:
        c = c[None]
    if c.ndim != 3:
        raise v.InputError(f"`counts` must be (K, D) or (M, K, D), got shape {tuple(c.shape)}")
    if np.any(np.asarray(c).sum((-2, -1)) == 0):
        raise v.InputError("`counts` has a system with no samples")
    prior = _resolve_utilities(utilities, costs)
    k, d = prior.shape if isinstance(prior, UtilityPrior) else tuple(prior.shape)
    if tuple(c.shape[1:]) != (k, d):
        raise v.InputError(f"`counts` have (K, D) = {tuple(c.shape[1:])} but the utility matrix is {(k, d)}")
    alpha = default_concentration(d) if concentration is None else check_concentration(concentration)
    class_counts = np.asarray(c.sum(-1)).mean(0)
    return _rank(prior, _counts_source(c, alpha), class_counts, priors, k=k, d=d, key=key, num_draws=num_draws,
                 rope=rope, hdi_prob=hdi_prob, systems=_system_names(systems, None, c.shape[0]), decompose=decompose,
                 likelihood_scores=False,
                 info={"model": "unpaired: Dirichlet per system and class", "concentration": alpha,
                       "decisions": "given (counts)"})


def _rank(prior, source, class_counts, priors, *, k, d, key, num_draws, rope, hdi_prob, systems, decompose,
          likelihood_scores, info):
    """The common core: draw utilities, priors and rates; evaluate; summarize; decompose the doubt."""
    f = jnp.result_type(float)
    class_priors = as_class_priors(priors, k)
    if class_priors is not None:
        mean_p = class_priors.mean if isinstance(class_priors, PriorDistribution) else class_priors
        absent = (np.asarray(mean_p) > 0) & (np.asarray(class_counts) == 0)
        if np.any(absent):
            raise v.InputError(
                f"class {int(np.argmax(absent))} has no test samples but a non-zero prior in `priors`: its rates "
                "are unknown"
            )
    deployment_uncertain = isinstance(class_priors, PriorDistribution)
    key_u, key_r, key_p, key_rank, key_d = jax.random.split(key, 5)

    if isinstance(prior, UtilityPrior):
        utility_draws = prior.sample(key_u, num_draws)
        u_hat = prior.mean if prior.mean is not None else utility_draws.mean(0)
        info = {"utilities": prior.name, **info}
    else:
        utility_draws = jnp.broadcast_to(prior, (num_draws, k, d)).astype(f)
        u_hat = prior
        info = {"utilities": "fixed matrix", **info}
    u_hat = jnp.asarray(u_hat, f)
    fixed_u_hat = jnp.broadcast_to(u_hat, (num_draws, k, d))

    data_freq = jnp.broadcast_to(jnp.asarray(np.asarray(class_counts) / np.sum(class_counts), f), (num_draws, k))
    if class_priors is None:
        # Joint weights carry the data priors; the unpaired model draws them from their Dirichlet posterior.
        p_draws = None if source.joint else sample_class_priors(key_p, None, jnp.asarray(class_counts),
                                                                num_draws=num_draws)
        p_mean = data_freq
    elif deployment_uncertain:
        p_draws = class_priors.sample(key_p, num_draws)
        p_mean = jnp.broadcast_to(class_priors.mean, (num_draws, k)).astype(f)
    else:
        p_draws = p_mean = jnp.broadcast_to(class_priors, (num_draws, k)).astype(f)

    def log_priors(p):
        # Only likelihood-type scores use priors to decide; otherwise the value is ignored.
        with jax.numpy_dtype_promotion("standard"):
            return jnp.log(p if (likelihood_scores and p is not None) else data_freq)

    def with_priors(weights, p):
        return data_priors(weights[:, 0]) if p is None else p

    w = source.draw(key_r, -utility_draws, log_priors(p_draws))
    yields, ec, nec = evaluate_draws(utility_draws, w, with_priors(w, p_draws))
    summary = ranking.summarize(key_rank, yields, rope=rope)
    expected_yield = np.asarray(yields.mean(0))
    rec = int(np.argmax(expected_yield))

    doubt = None
    if decompose:
        k1, k2, k3 = jax.random.split(key_d, 3)
        # Costs only: rates at their point estimate (data priors at the test set's frequencies; uncertain
        # deployment priors stay uncertain: like the costs, they describe the deployment, not the test set).
        p_costs = p_draws if deployment_uncertain else (p_mean if class_priors is None else p_draws)
        y_costs, _, _ = evaluate_draws(utility_draws, source.point(-utility_draws, log_priors(p_costs)), p_costs)
        # Rates only: utilities at U_hat (seed 004 eq. 18), deployment priors at their mean.
        p_rates = p_mean if deployment_uncertain else p_draws
        w_hat = source.draw(k1, -fixed_u_hat, log_priors(p_rates)) if source.depends_on_costs else w
        y_rates, _, _ = evaluate_draws(fixed_u_hat, w_hat, with_priors(w_hat, p_rates))
        doubt = ranking.Doubt(
            p_best_both=np.asarray(summary["p_best"]),
            p_best_costs_only=np.asarray(ranking.summarize(k2, y_costs)["p_best"]),
            p_best_rates_only=np.asarray(ranking.summarize(k3, y_rates)["p_best"]),
            recommendation=rec,
        )
    info.update(priors=("test-set class frequencies (uncertain)" if class_priors is None else
                        class_priors.name if deployment_uncertain else "fixed deployment priors"),
                num_draws=num_draws)
    return ranking.Comparison(
        systems=systems,
        yields=yields,
        expected_costs=ec,
        normalized_expected_costs=nec,
        expected_utility_matrix=u_hat,
        expected_yield=expected_yield,
        p_best=np.asarray(summary["p_best"]),
        rank_probabilities=np.asarray(summary["rank_probabilities"]),
        pairwise=np.asarray(summary["pairwise"]),
        rope=rope,
        rope_probabilities=None if rope is None else np.asarray(summary["rope_probabilities"]),
        recommendation=rec,
        recommendation_probability=float(summary["p_best"][rec]),
        hdi_prob=hdi_prob,
        hdi=np.asarray(ranking.hdi(yields, hdi_prob)),
        doubt=doubt,
        info=info,
    )
