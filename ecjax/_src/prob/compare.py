"""Which classifier, and how sure are we?  The posterior ranking of classifiers.

:func:`compare` combines three sources of doubt about which classifier is
best:

* the utility (cost) matrix ``U`` is uncertain: a prior over utility matrices
  (:mod:`~ecjax._src.prob.utility_priors`), or a fixed matrix;
* the deployment class priors ``P`` may be uncertain (a
  :class:`~ecjax.prob.PriorDistribution`) or fixed; by default they are the
  test set's class frequencies, whose uncertainty belongs to the test set;
* the test set is finite: the posterior of each system's confusion rates
  ``R`` (:mod:`~ecjax._src.prob.rates`), paired through the joint outcome table
  when the systems were scored on the same samples (:mod:`~ecjax._src.prob.paired`).

Each posterior draw ``s`` pairs ``U_s``, ``P_s`` and ``R_s`` and gives every
system ``m`` the utility yield (Dyrland et al. 2022, eq. 10, rows = true class; Ferrer (2022a)
eq. 2 for the expected cost)

    yield_sm = sum_ij U_s,ij P_s,i R_s,m,ij   (ecjax._src.metrics.expected_value),

from which come P(best), the rank distribution, pairwise probabilities and
HDIs.

**Decisions.**  Given ``decisions`` are used as they are.  With ``scores``,
``decision_rule="expected_utility"`` (the default) makes every system take,
once, the Bayes decisions (Ferrer 2025, eq. 7) of the expected utility matrix
``U_hat = E[U]``: when the costs are still uncertain at deployment, the
decision of highest expected utility for a sample with class posteriors
``p_i`` is ``argmax_j sum_i U_hat_ij p_i`` (Dyrland et al. 2022, eqs. 18-19).  The counts
are then fixed, exactly as with given decisions.  ``decision_rule="per_draw"``
lets each draw make the Bayes decisions of its own ``U_s``: the value of a
rule that will *know* the costs at deployment (larger, and not what Dyrland et al. (2022)
prescribes when they stay uncertain).

**Expected yield.**  ``U`` is independent of ``(P, R)`` and the yield is
linear in ``U``, so ``E[yield_m] = sum_ij U_hat_ij E[P_i R_m,ij]`` (Dyrland et al. (2022)
eq. 19).  With fixed decisions ``E[P_i R_m,ij]`` has a closed form and the
expected yield is reported exactly:

* unpaired: ``E[R_m,ij] = (n_m,ij + alpha) / (n_m,i* + D alpha)`` (the
  Dirichlet posterior mean, :mod:`~ecjax._src.prob.rates` eq. 1) times ``E[P_i]``:
  the fixed or expected deployment prior, or ``(n_i + alpha_P) / (N + K
  alpha_P)`` for the test set's class frequencies;
* paired: each system's joint weights are ``W_m ~ Dirichlet(n_m,ij +
  alpha)`` over its ``K D`` cells (:mod:`~ecjax._src.prob.paired` eq. 1, by
  aggregation), so ``E[P_i R_m,ij] = (n_m,ij + alpha) / (N + K D alpha)``
  for the test set's class frequencies, and with deployment priors
  ``E[R_m,ij] = (n_m,ij + alpha) / (n_m,i* + D alpha)`` (a Dirichlet's
  within-class proportions are Dirichlet, independent of the class total).

Per-draw decisions and the clustered model have no closed form: their
expected yield is the Monte Carlo estimate (``info["expected_yield"]`` says
which).  The recommendation is the system of highest expected yield.

**Sample weights** (``sample_weight``) are frequency weights, as in
scikit-learn and ``expected-cost``: a sample of weight ``w_n`` counts as
``w_n`` samples.  Every count above is then a weighted count, ``n_m,ij =
sum_n w_n [y_n = i] [d_m,n = j]`` (fractional), which the posteriors take
as it is (``Dirichlet(n + alpha)`` is proper for any ``n >= 0``): the
closed-form expected yield uses it, the test set's class frequencies use
the weighted class totals ``n_i``, per-draw decisions are counted with the
weights, the paired per-draw model draws ``Gamma(w_n)`` per sample where it
draws ``Exp(1)`` (summed over a cell, either is ``Gamma(n_c)``), and the
clustered model's cells and group sizes are weighted (each group keeps its
one ``Gamma(1)`` weight).  So an integer weight is exactly that many copies
of the sample, a zero weight is exactly an absent sample, and scaling all
weights by ``c`` changes the posterior as ``c`` times the data would (its
widths shrink about as ``1 / sqrt(c)``).  To reweight (importance or class
weights) without changing the amount of evidence, scale the weights to sum
to ``N``, or to the Kish effective sample size ``(sum_n w_n)^2 / sum_n
w_n^2``.

**Doubt decomposition** (:class:`~ecjax.prob.Doubt`): how sure the recommendation is with every source
uncertain, and with the costs, the deployment priors or the rates alone uncertain (:mod:`~ecjax._src.prob.doubt`).

**Draws in fixed memory.**  The draws are made in *blocks*: block ``b`` of
``B`` draws takes its random numbers from ``fold_in(key, b)`` (utilities,
priors and rates each from their own key), with ``B`` set by ``num_draws``
and the problem's shape only (:func:`plan_draws`); each block runs the same
jitted kernels.  ``chunk_size`` groups whole blocks: their kernels are
queued (asynchronously, on an accelerator) and their outputs copied to the
host together, once per chunk, where ``progress`` is reported.  Memory is that
of one block plus one chunk's outputs, whatever ``num_draws``; no block
array comes near ``2^31`` elements; and the numbers are the same for every
chunk size.  Only the ``(S, M)`` draws of the yields (EC, NEC, and those of
the doubt components) are kept.

**The draw models** (:mod:`~ecjax._src.prob.draw_models`, one module per model behind one protocol): unpaired,
paired (joint outcome cells), clustered, per-draw decisions; with a fixed utility matrix and fixed decisions the
cells of equal utility are drawn merged (:mod:`~ecjax._src.prob.draw_models.merged`: exact, ``info["merged_cells"]``
says so); with drawn utilities, a large confusion matrix's fixed counts are drawn over their occupied cells
only (:mod:`~ecjax._src.prob.draw_models.occupied`, ``info["occupied_cells"]``) when that is the cheaper draw.

**How many draws.**  ``num_draws=None`` (the default) draws until every
reported probability is precise to a standard error of 0.005 (at most
20 000 draws, :mod:`~ecjax._src.prob.adaptive_draws`); a number fixes ``S``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src import random_bits
from ecjax._src.costs import StructuredCosts, costs_to_utilities
from ecjax._src.prob import adaptive_draws
from ecjax._src.prob import paired as paired_mod
from ecjax._src.prob import ranking
from ecjax._src.prob import doubt
from ecjax._src.prob.draw_models import blocks, clustered, expectations, joint, merged, occupied, per_draw, unpaired
from ecjax._src.prob.draw_models.fixed_decisions import bayes_decisions_of, bucket_size, fixed_counts, padded_bayes_decisions
from ecjax._src.prob.draw_models.outputs import evaluate_draws, tie_labels_of
from ecjax._src.prob.draw_models.protocol import Centre, FixedModel
from ecjax._src.prob.rates import (
    PriorDistribution,
    as_class_priors,
    check_concentration,
    default_class_concentration,
    default_concentration,
    sample_class_priors,
)
from ecjax._src.prob.draw_plan import (
    MonteCarloSettings,
    as_decision_rule,
    check_monte_carlo_settings,
    plan_draws,
)
from ecjax._src.prob.inputs import (Systems, as_named_counts, check_decisions_matter, check_draws_fit, check_evidence,
                                    check_structured_comparison, check_systems)
from ecjax._src.prob.utility_priors import UtilityPrior, resolve_utilities

__all__ = ["bucket_size", "compare", "compare_counts", "draw_to_precision", "evaluate_draws", "padded_bayes_decisions"]

# A (K, D) matrix, a utility prior, or a NumPyro model with a "utility"/"cost" site.
_Utilities = UtilityPrior | Callable[..., Any] | ArrayLike


def _positive_samples(label_list, items, weight_list, groups):
    """Labels, decisions or scores, weights and groups without the samples of weight 0.

    A sample of weight 0 is exactly an absent sample (see the module
    docstring), so it is left out before anything is counted or padded.
    Weights that are then all 1 become ``None``: the unweighted computation,
    draw for draw.
    """
    keep = [np.flatnonzero(w > 0) for w in weight_list]
    if groups is not None:
        groups = np.asarray(groups)[keep[0]]
    label_list = [np.asarray(lab)[i] for lab, i in zip(label_list, keep)]
    items = [x[i] for x, i in zip(items, keep)]
    weight_list = [w[i] for w, i in zip(weight_list, keep)]
    if all(np.all(w == 1) for w in weight_list):
        weight_list = None
    return label_list, items, weight_list, groups



# ---------------------------------------------------------------- compare

# Posterior draws when the settings leave `num_draws` to the function.
_DEFAULT_DRAWS = 20_000
# The kept draws of a system (yields, float32) and the copies its summary and doubt decomposition make.
_KEPT_BYTES_PER_DRAW_AND_SYSTEM = 32


def _check_summary(key, num_draws, hdi_prob, rope):
    """``(hdi_prob, rope)`` checked (the HDI against ``num_draws``), once ``key`` is known to be a key."""
    v.as_key(key)
    return ranking.check_hdi_prob(hdi_prob, num_draws), ranking.check_rope(rope)


def draw_to_precision(run: Callable[[int], ranking.Comparison], mc_error: float, *, num_draws: int,
                      max_draws: int) -> ranking.Comparison:
    """``run(S)`` with ``S`` raised until the reported probabilities are as precise as ``mc_error``.

    The batch-means error of a Monte Carlo probability falls as ``1 /
    sqrt(S)``, so after a run of ``S`` draws whose largest error is ``e >
    mc_error`` the next run has ``S (e / mc_error)^2`` draws (times
    ``1.2``, at least ``1.5 S``, at most ``max_draws``;
    :func:`~ecjax._src.prob.adaptive_draws.draw_until_precise`).  Each run starts
    afresh from the same key (the draws of a larger run are not an
    extension of the smaller one's), so the result is one ordinary run.
    ``info`` records the target, whether it was met and the runs' sizes.

    Args:
      run: ``S -> Comparison``.
      mc_error: the largest standard error allowed, in ``(0, 0.5)``.
      num_draws: the first run's ``S``.
      max_draws: the largest ``S`` tried.
    """
    result, sizes, met = adaptive_draws.draw_until_precise(run, ranking.Comparison.largest_probability_error,
                                                           mc_error, num_draws=num_draws, max_draws=max_draws)
    info = dict(result.info, mc_error_target=float(mc_error), mc_error_met=met, mc_error_runs=sizes)
    return dataclasses.replace(result, info=info)


def _adaptive(settings: MonteCarloSettings) -> bool:
    """Whether the draws are adaptive: a target ``mc_error``, or no ``num_draws`` (the default target)."""
    return settings.mc_error is not None or settings.num_draws is None


def _to_precision(function: Callable[..., ranking.Comparison], data: Any, settings: MonteCarloSettings,
                  hdi_prob: float, **kwargs: Any) -> ranking.Comparison:
    """``function(data, **kwargs)`` with the draws raised until the target error is met (:func:`draw_to_precision`).

    ``settings.mc_error`` and ``max_draws`` when a target is given; without
    ``num_draws`` either, the default target
    (:data:`~ecjax._src.prob.adaptive_draws.DEFAULT_MC_ERROR`, capped at
    :data:`~ecjax._src.prob.adaptive_draws.DEFAULT_MAX_DRAWS`).  The first run
    has ``num_draws`` draws, or
    :func:`~ecjax._src.prob.adaptive_draws.first_draws` (enough for the HDI).
    """
    def run(draws):
        return function(data, settings=dataclasses.replace(settings, num_draws=draws, mc_error=None),
                        hdi_prob=hdi_prob, **kwargs)

    first = settings.num_draws
    if first is None:
        first = adaptive_draws.first_draws(ranking.min_draws_for_hdi(ranking.as_hdi_prob(hdi_prob)))
    if settings.mc_error is None:
        target, cap = adaptive_draws.DEFAULT_MC_ERROR, max(first, adaptive_draws.DEFAULT_MAX_DRAWS)
    else:
        target, cap = settings.mc_error, max(first, settings.max_draws)
    return draw_to_precision(run, target, num_draws=first, max_draws=cap)


def compare(systems: Systems, *, utilities: _Utilities | None = None, costs: _Utilities | None = None,
            priors: PriorDistribution | ArrayLike | None = None, key: jax.Array | None = None,
            concentration: float | None = None, rope: float | None = None, hdi_prob: float = 0.9,
            decompose: bool = True, settings: MonteCarloSettings = MonteCarloSettings()) -> ranking.Comparison:
    """Posterior ranking of classifiers under uncertain utilities and priors and a finite test set.

    Args:
      systems: the classifiers' decisions or scores on their test samples, a
        :class:`~ecjax.prob.Systems` (with the labels, names, pairing,
        clusters, sample weights, and how scores become decisions).
      utilities: a ``(K, D)`` utility matrix, a
        :class:`~ecjax.prob.UtilityPrior`, or a NumPyro model with a
        ``"utility"``/``"cost"`` site.  Or give ``costs`` instead (a cost
        matrix, or a prior).
      priors: ``None`` (the test set's class frequencies, with their
        posterior uncertainty; unpaired systems with different test sets
        share one draw, from the mean of their class counts, so the same
        population is not counted ``M`` times), a fixed ``(K,)`` vector of
        deployment priors, or a :class:`~ecjax.prob.PriorDistribution`
        (:func:`~ecjax.prob.dirichlet_priors`, :func:`~ecjax.prob.interval_priors`).
      key: ``jax.random`` key (required).
      concentration: Dirichlet concentration added to each cell of a
        system's ``(K, D)`` confusion matrix; default ``2 / (K D)``
        (:func:`~ecjax._src.prob.rates.default_concentration`: a prior worth 2
        samples spread evenly over the cells) for the paired (joint) model
        and the unpaired one alike, the number ``info["concentration"]``
        reports; ``0`` gives the Bayesian bootstrap over occupied cells; see
        :mod:`~ecjax._src.prob.rates`.
      rope: half-width of the region of practical equivalence, in yield units.
      hdi_prob: mass of the reported highest-density intervals; needs
        ``settings.num_draws >= 10 / (1 - hdi_prob)``.
      decompose: also compute the doubt decomposition (:class:`~ecjax.prob.Doubt`).
      settings: :class:`~ecjax.prob.MonteCarloSettings`: ``num_draws`` (``S``;
        default ``None``: adaptive, from 1000 draws until every reported
        probability has a Monte Carlo standard error of at most 0.005, at
        most 20 000, :mod:`~ecjax._src.prob.adaptive_draws`; ``num_draws`` says
        how many were used); ``chunk_size``, the posterior draws whose outputs
        are collected at once (rounded up to whole blocks; ``None``:
        automatic: memory is bounded by it and by the block, not by ``S``,
        and every chunk size gives the same numbers, see the module
        docstring); ``progress``, ``True`` for a progress bar over the
        chunks (``tqdm``) or a callable ``total -> bar`` with ``update(n)``
        and ``close()`` (the one protocol of every chunked run,
        :class:`~ecjax._src.draw_runner.Progress`; :class:`ecjax.prob.ProgressLines`
        writes plain lines for logs), and optionally
        ``draws_done(done, yields)`` (the draws so far, after each chunk)
        and ``time_left(seconds)``: the duration of the rest of the run,
        called once, after the second block, from its measured time on
        this machine (:func:`~ecjax._src.draw_runner.block_seconds_left`;
        the blocks are the same programs on the same shapes, so the
        estimate holds on any backend); ``mc_error``, a target for
        the Monte Carlo standard errors of the reported probabilities
        (P(best), the ROPE probabilities, the doubt components; see
        :func:`draw_to_precision`): ``num_draws`` is then the first run,
        and larger runs follow until the largest error is at most
        ``mc_error`` or ``max_draws`` is reached.

    How the fields of ``systems`` are read:

      scores: instead of ``decisions``: ``(M, N, K)`` scores (see
        ``score_type``; a list or mapping of ``(N_m, K)`` arrays), turned
        into Bayes decisions (Ferrer 2025, eq. 7) by ``decision_rule``.
      decision_rule: with ``scores``: ``"expected_utility"`` (default): the
        Bayes decisions of the expected utility matrix ``U_hat``, made once
        (Dyrland et al. 2022, eq. 19: the decisions of highest expected utility while the
        costs are uncertain); the counts are then fixed, as with
        ``decisions``.  ``"per_draw"``: each draw makes the Bayes decisions
        of its own utility matrix, the value of a rule that knows the costs
        at deployment; :class:`PerDraw` ``(rate_draws=r)`` says how many
        draws share one utility draw's decisions (``"per_draw"``: ``r``
        chosen from the problem's shape).  Likelihood-type scores (``"llr"``,
        ``"log_likelihoods"``) are combined with the expected class priors
        (per draw, with ``"per_draw"``, the drawn priors; the test set's
        class frequencies for paired systems without deployment priors).
        Posterior-type scores decide with the priors they were trained
        with; to decide for the deployment ``priors``, pass
        :func:`ecjax.log_likelihoods_from_posteriors` of them (given their
        training priors) with ``score_type="log_likelihoods"``.
      paired: the systems were scored on the same samples in the same order
        (labels must then be identical): use the Dirichlet over the joint
        outcome cells (Bayesian bootstrap).  ``False``: independent Dirichlet
        posteriors per system and class.
      groups: ``(N,)`` cluster ids (patient, speaker, document) for a
        cluster Bayesian bootstrap (a Dirichlet(1) weight per cluster, its
        samples kept); needs shared labels (paired systems,
        or one system) and ``decisions``.  With ``sample_weight`` a sample
        counts ``w`` times within its group (each group keeps one weight).
      sample_weight: frequency weights of the samples, given like
        ``labels``: one ``(N,)`` vector (shared by all systems), or an
        ``(M, N)`` array / a list / a mapping of one vector per system
        (paired systems must then have equal weights).  Finite and
        non-negative, not all 0.  A sample of weight ``w`` counts as ``w``
        samples (scikit-learn's and ``expected-cost``'s meaning): every
        count becomes a weighted count ``sum_n w_n [y_n = i] [d_n = j]``,
        the test set's class frequencies use the weighted class totals, an
        integer weight is exactly that many copies of the sample and a zero
        weight exactly its absence.  The weights are therefore *evidence*:
        multiplying them all by ``c`` narrows the posterior as ``c`` times
        the data would.  To reweight without changing the evidence, scale
        them to sum to ``N`` (or to the Kish effective sample size
        ``(sum w)^2 / sum w^2``).  See the module docstring.

    Returns:
      a :class:`~ecjax.prob.Comparison`; ``info["decision_rule"]`` says how
      the decisions were made and ``info["expected_yield"]`` whether the
      expected yield is exact (closed form) or a Monte Carlo estimate.

    Example:
      >>> import jax, numpy as np
      >>> from ecjax import prob
      >>> labels = np.array([0, 1, 1, 0, 1, 0, 1, 1])
      >>> decisions = np.array([[0, 1, 1, 0, 1, 1, 1, 1], [0, 1, 0, 0, 1, 0, 0, 1]])
      >>> result = prob.compare(prob.Systems(labels, decisions), costs=prob.cost_ratio(2, 5),
      ...                       key=jax.random.key(0), settings=prob.MonteCarloSettings(num_draws=2000))
      >>> result.p_best.shape, result.rank_probabilities.shape
      ((2,), (2, 2))
    """
    systems = check_systems(systems)
    settings = check_monte_carlo_settings(settings)
    if _adaptive(settings):
        return _to_precision(compare, systems, settings, hdi_prob, utilities=utilities, costs=costs, priors=priors,
                             key=key, concentration=concentration, rope=rope, decompose=decompose)
    num_draws = settings.draws(_DEFAULT_DRAWS)
    hdi_prob, rope = _check_summary(key, num_draws, hdi_prob, rope)
    decision_rule, per_draw_rule = as_decision_rule(systems.decision_rule)
    scores, score_type = systems.scores, systems.score_type
    prior = resolve_utilities(utilities, costs, structured=True)
    if not isinstance(prior, UtilityPrior):  # a fixed matrix that makes every system equal has nothing to rank
        check_decisions_matter(prior, name="costs" if utilities is None else "utilities")
    k, d = prior.shape if isinstance(prior, UtilityPrior) else tuple(prior.shape)
    if k < 2:
        raise v.InputError(f"the utility matrix must have at least 2 classes (rows), got shape {(k, d)}")
    if isinstance(prior, StructuredCosts):
        check_structured_comparison(systems.groups, scores_per_draw=systems.scores is not None and decision_rule ==
                                    "per_draw")
    else:  # every model holds the (M, K, D) float64 counts of a dense matrix
        v.check_dense_fits(k, d, "costs" if utilities is None else "utilities", what="count matrix",
                           batch=len(systems.names), itemsize=8)
    s = _canonical_systems(systems, k, d)
    check_draws_fit(num_draws, _KEPT_BYTES_PER_DRAW_AND_SYSTEM * len(s.names))
    alpha = _model_concentration(concentration, s.joint, k, d)
    check_evidence(alpha * k * d, "concentration", "the prior's pseudo-observations per system, concentration x K x D")
    class_priors = _check_class_priors(priors, k, s.class_counts, weighted=s.weight_info is not None)
    model_name = ("cluster Bayesian bootstrap" if s.groups is not None else
                  "paired: Dirichlet over joint outcome cells" if s.joint else "unpaired: Dirichlet per system and class")
    info = {"model": model_name, "concentration": alpha}
    if s.weight_info is not None:
        info["sample_weight"] = s.weight_info
    p_decide = expectations.decision_priors(class_priors, s.class_counts, s.joint)
    common = dict(key=key, num_draws=num_draws, rope=rope, hdi_prob=hdi_prob, systems=s.names, decompose=decompose,
                  chunk_size=settings.chunk_size, progress=settings.progress)
    if scores is None:
        info.update(decision_rule="given", decisions="given")
    else:
        likelihood = score_type in v.LIKELIHOOD_TYPES
        # Per-draw decisions vary only when the utilities (or, for likelihood scores, the drawn priors) do.
        varies = isinstance(prior, UtilityPrior) or (likelihood and (
            isinstance(class_priors, PriorDistribution) or (class_priors is None and not s.joint)))
        if decision_rule == "per_draw" and varies:
            state = _per_draw_model(s, score_type, likelihood, per_draw_rule, alpha, k, d, p_decide)
            info.update(decision_rule="per_draw", decisions="Bayes decisions of each drawn utility matrix")
            return _run_compare(prior, class_priors, s.class_counts, k=k, d=d, alpha=alpha, joint=s.joint,
                                per_draw_state=state, info=info, **common)
        info.update(decision_rule=decision_rule, decisions=(
            "Bayes decisions of the expected utility matrix (the mean of the uncertain utilities)" if decision_rule == "expected_utility"
            else "Bayes decisions of each drawn utility matrix (the same in every draw: the costs are fixed)"))
    source: Callable[[np.ndarray], FixedModel] = partial(_fixed_source, s, None if scores is None else score_type,
                                                         p_decide, alpha, k, d)
    if isinstance(prior, StructuredCosts):  # merged cells counted from the decisions: no K x D array
        structured, group_utilities = _structured_source(s, prior, alpha, d, None if scores is None else score_type,
                                                         p_decide)
        prior, source = group_utilities, lambda u_hat: structured  # merged.merge keeps them
    n_max = max(lab.shape[0] for lab in s.labels)
    return _run_compare(prior, class_priors, s.class_counts, k=k, d=d, alpha=alpha, joint=s.joint, source=source,
                        cells_bound=n_max if s.joint else 0, info=info, **common)


class _Canonical(NamedTuple):
    """The systems of a comparison checked against the utility matrix: what every model of :func:`compare` reads.

    ``items``: each system's decisions (int32 indices) or scores (log
    domain); ``labels``/``weights``: per system (weights ``None`` without
    ``sample_weight``; samples of weight 0 removed); ``shared_labels`` /
    ``shared_weights``: the one test set of paired (or single) systems;
    ``joint``: the paired (or clustered) model applies; ``class_counts``:
    the mean over systems of the class counts (weight totals).
    """

    names: tuple
    items: list
    labels: list
    weights: list | None
    weight_info: dict | None
    groups: object
    shared_labels: np.ndarray | None
    shared_weights: np.ndarray | None
    joint: bool
    class_counts: np.ndarray


def _canonical_systems(systems, k, d):
    """``systems`` checked against the utility matrix's ``(K, D)`` and made canonical (see :class:`_Canonical`)."""
    groups = systems.groups
    if systems.scores is not None:
        score_type = systems.score_type
        # Clustered samples are resampled through their decisions (the paired model of given decisions).
        v.check_exclusive({"groups": groups, "scores": systems.scores}, required=False)
        items = [x.values for x in systems.canonical]  # canonical since Systems made them: not checked again
        if score_type == "llr":
            v.check_binary(k, "score_type='llr'")
        for m, x in enumerate(items):
            if score_type == "llr":
                v.check_one_system(x, 1, f"scores[{m}]")
            else:
                v.check_shape(x, f"scores[{m}]", "(N, K)", sizes={"K": k}, why=" (K: the rows of the utility matrix)")
    else:
        items = [v.as_index_array(x, f"decisions[{m}]", upper=d, upper_is="the utility matrix's columns")
                 for m, x in enumerate(systems.decisions)]
    label_list = [v.as_index_array(x, "labels", upper=k, upper_is="the utility matrix's rows (classes)")
                  for x in systems.labels]
    weight_list = None if systems.sample_weight is None else list(systems.sample_weight)
    weight_info = None
    if weight_list is not None:
        # How much evidence the weights carry: their total, and Kish's effective sample size (sum w)^2 / sum w^2.
        weight_info = {"total": [float(w.sum()) for w in weight_list],
                       "kish_effective_size": [float(w.sum() ** 2 / np.sum(w ** 2)) for w in weight_list]}
        label_list, items, weight_list, groups = _positive_samples(label_list, items, weight_list, groups)
    shared_labels = np.asarray(label_list[0]) if systems.shared else None
    class_counts = np.mean([np.bincount(np.asarray(lab), weights=None if weight_list is None else weight_list[j],
                                        minlength=k) for j, lab in enumerate(label_list)], axis=0)
    return _Canonical(systems.names, items, label_list, weight_list, weight_info, groups, shared_labels,
                      None if weight_list is None else weight_list[0],
                      shared_labels is not None and (systems.paired or groups is not None), class_counts)


def _model_concentration(concentration, joint, k, d):
    """The Dirichlet concentration ``alpha`` of the model: given, or the paired or unpaired default."""
    if joint:
        # The paired model's default lives in ecjax._src.prob.paired (per cell of each system's (K, D) matrix).
        return paired_mod.resolve_concentration(
            paired_mod.DEFAULT_CONCENTRATION if concentration is None else concentration, k, d)
    return default_concentration(d, k) if concentration is None else check_concentration(concentration)


def _per_draw_model(s, score_type, likelihood, per_draw_rule, alpha, k, d, p_decide):
    """The scores on the device and the rule of per-draw decisions (:class:`per_draw.PerDrawState`)."""
    if not s.joint and alpha == 0 and np.any(s.class_counts == 0):
        raise v.InputError("with `concentration=0` every class needs test samples")
    log_scores = [v.to_device(x) for x in s.items]
    f = jnp.result_type(float)
    if s.joint:
        assert s.shared_labels is not None  # joint systems share one label vector
        scores, labels = jnp.stack(log_scores), jnp.broadcast_to(v.to_device(s.shared_labels),
                                                                 (len(s.items), s.shared_labels.shape[0]))
        weights = None if s.shared_weights is None else v.to_device(s.shared_weights, f)
    else:
        scores, labels = tuple(log_scores), tuple(v.to_device(lab) for lab in s.labels)
        weights = None if s.weights is None else tuple(v.to_device(w, f) for w in s.weights)
    with np.errstate(divide="ignore"):
        log_p_decide = v.to_device(np.log(p_decide), f)
    n_max = max(x.shape[0] for x in s.items)
    r = per_draw_rule.resolve(num_systems=len(s.items), num_samples=n_max, num_classes=k, num_decisions=d,
                              paired=s.joint)
    return per_draw.PerDrawState(scores, labels, weights, log_p_decide, score_type, likelihood, s.joint, k, d,
                                 float(alpha), n_max, r)


def _fixed_source(s, score_type, p_decide, alpha, k, d, u_hat):
    """The model of fixed decisions: given ones (``score_type`` None), or the Bayes decisions of ``U_hat``."""
    if score_type is None:
        decisions = [np.asarray(x) for x in s.items]
    else:
        decisions = bayes_decisions_of(s.items, -u_hat, p_decide, score_type)
    if s.joint and s.groups is not None:
        return clustered.prepare(s.shared_labels, np.stack(decisions), s.groups, alpha, k, d, s.shared_weights)
    if s.joint:
        return joint.prepare(s.shared_labels, np.stack(decisions), alpha, k, d, s.shared_weights)
    weights = [None] * len(s.items) if s.weights is None else s.weights
    return unpaired.prepare(np.stack([fixed_counts(lab, x, k, d, w) for lab, x, w in zip(s.labels, decisions, weights)]),
                            alpha)


def _structured_source(s, costs, alpha, d, score_type, p_decide):
    """Fixed structured costs: :func:`merged.structured` of the decisions (given, or with ``score_type`` the Bayes
    decisions of the scores, made once with the priors ``p_decide`` in ``O(N K)``)."""
    items = s.items
    if score_type is not None:
        items = bayes_decisions_of(s.items, costs_to_utilities(costs), p_decide, score_type)
    return merged.structured(s.labels, items, s.weights, costs, alpha, d,
                             shared_labels=s.shared_labels if s.joint else None, shared_weights=s.shared_weights)


def compare_counts(counts: ArrayLike | Mapping[str, ArrayLike], *, utilities: _Utilities | None = None,
                   costs: _Utilities | None = None, priors: PriorDistribution | ArrayLike | None = None,
                   key: jax.Array | None = None, concentration: float | None = None, rope: float | None = None,
                   hdi_prob: float = 0.9, decompose: bool = True,
                   settings: MonteCarloSettings = MonteCarloSettings()) -> ranking.Comparison:
    """:func:`compare` from confusion matrices alone: ``(M, K, D)`` counts of unpaired systems.

    ``counts``: ``(K, D)`` or ``(M, K, D)``, or a mapping ``{name: (K, D)
    counts}`` that names the systems.  Without the samples the pairing is
    unknown, so this is the unpaired model (independent Dirichlet posteriors
    per system and class).  The other arguments as in :func:`compare`.
    """
    settings = check_monte_carlo_settings(settings)
    if _adaptive(settings):
        return _to_precision(compare_counts, counts, settings, hdi_prob, utilities=utilities, costs=costs,
                             priors=priors, key=key, concentration=concentration, rope=rope, decompose=decompose)
    num_draws = settings.draws(_DEFAULT_DRAWS)
    hdi_prob, rope = _check_summary(key, num_draws, hdi_prob, rope)
    names, c = as_named_counts(counts)
    check_draws_fit(num_draws, _KEPT_BYTES_PER_DRAW_AND_SYSTEM * c.shape[-3])  # c: ([T,] M, K, D) counts
    prior = resolve_utilities(utilities, costs)
    if not isinstance(prior, UtilityPrior):  # a fixed matrix that makes every system equal has nothing to rank
        check_decisions_matter(prior, name="costs" if utilities is None else "utilities")
    k, d = prior.shape if isinstance(prior, UtilityPrior) else tuple(prior.shape)
    v.check_shape(c, "counts", "(K, D)", "(M, K, D)", sizes={"K": k, "D": d}, why=" (the utility matrix's shape)")
    c = v.as_counts(c[None] if c.ndim == 2 else c, nonzero=True)  # every system has samples
    check_evidence(np.asarray(c, np.float64).sum((-2, -1)).max(), "counts", "the largest matrix's total count")
    alpha = default_concentration(d, k) if concentration is None else check_concentration(concentration)
    check_evidence(alpha * k * d, "concentration", "the prior's pseudo-observations per system, concentration x K x D")
    class_counts = np.asarray(c.sum(-1)).mean(0)
    class_priors = _check_class_priors(priors, k, class_counts)
    model = unpaired.prepare(np.asarray(c), alpha)
    return _run_compare(prior, class_priors, class_counts, k=k, d=d, alpha=alpha, joint=False,
                        source=lambda u_hat: model, key=key, num_draws=num_draws, rope=rope, hdi_prob=hdi_prob,
                        systems=v.system_names(None, names, c.shape[0]), decompose=decompose,
                        chunk_size=settings.chunk_size, progress=settings.progress,
                        info={"model": "unpaired: Dirichlet per system and class", "concentration": alpha,
                              "decision_rule": "given", "decisions": "given (counts)"})


# ------------------------------------------------------- sources and priors

def _check_class_priors(priors, k, class_counts, weighted=False):
    class_priors = as_class_priors(priors, k)
    if class_priors is not None:
        mean_p = class_priors.mean if isinstance(class_priors, PriorDistribution) else class_priors
        v.check_priors_cover(class_counts, mean_p, weighted=weighted)
    return class_priors


def _run_compare(prior, class_priors, class_counts, *, k, d, alpha, joint, key, num_draws, rope, hdi_prob, systems,
                 decompose, chunk_size, progress, info, source=None, per_draw_state=None, cells_bound=0):
    """Draw utilities, priors and rates block by block; summarize; decompose the doubt.

    ``source``: ``U_hat -> FixedModel`` (fixed counts), or ``per_draw_state`` (each draw decides).
    """
    f = jnp.result_type(float)
    m = len(systems)
    key_u, key_p, key_all, key_rates, key_rank, key_d = random_bits.split_keys(key, 6)
    utilities_drawn = isinstance(prior, UtilityPrior)
    deployment_uncertain = isinstance(class_priors, PriorDistribution)
    if per_draw_state is not None and per_draw_state.paired:
        elements = paired_mod.per_draw_elements(alpha, num_systems=m, num_classes=k, num_decisions=d,
                                                num_samples=per_draw_state.num_samples)
    else:
        elements = max(m * k * d, 2 * cells_bound)
    group = 1 if per_draw_state is None else per_draw_state.rate_draws
    merged_model, columns = None, d
    if per_draw_state is None and not utilities_drawn:
        # Fixed utilities: the cells of equal utility merge (ecjax._src.prob.aggregation); the blocks hold their draws.
        merged_model = merged.merge(source(np.asarray(prior, np.float64)), np.asarray(prior, np.float64), alpha)
        if merged_model.columns:
            elements, columns = merged_model.elements, merged_model.columns
    plan = plan_draws(num_draws, elements + k * columns, chunk_size, utility_cells=k * columns, group=group)

    def sample_u(b):
        return prior.sample(random_bits.fold_in(key_u, b), plan.block)

    def sample_p(blocks_drawn: range):
        # Several blocks (on an accelerator, a program's): the test set's frequencies of every block in one program.
        keys = tuple(random_bits.fold_in(key_p, b) for b in blocks_drawn)
        return sample_class_priors(keys[0] if len(keys) == 1 else keys,
                                   class_priors if deployment_uncertain else None, np.asarray(class_counts, f),
                                   num_draws=plan.block, concentration=default_class_concentration(k))

    u_hat, u_method = expectations.expected_utilities(prior, plan, sample_u)
    p_bar = expectations.expected_priors(class_priors, class_counts)
    joint_priors = class_priors is None and joint
    data_priors_drawn = class_priors is None and not joint  # the unpaired model's test-set frequencies
    inputs = blocks.Inputs(sample_u if utilities_drawn else None,
                     sample_p if (deployment_uncertain or data_priors_drawn) else None, data_priors_drawn)
    # A certain source leaves no doubt: its component is not reported (doubt exactly 0).
    sources = (("costs_only", utilities_drawn), ("priors_only", deployment_uncertain), ("rates_only", True))
    components = tuple(name for name, uncertain in sources if decompose and uncertain)
    centre = Centre(v.to_device(u_hat, f), v.to_device(p_bar, f), None)
    if per_draw_state is None:
        model = source(u_hat) if merged_model is None else merged_model
        if merged_model is None:
            model = occupied.prepare(model, u_hat, p_bar, alpha, joint_priors)
            if isinstance(model.state, occupied.CellsState) and u_method != "monte_carlo":
                # Blocks sized by the occupied cells (U_hat came from no draw of the former plan's blocks), of an
                # even number of draws: the utility draws then join their hashes' halves along the draws
                # (ecjax._src.random_bits.uniform), 7 times faster at 1000 x 1000 on a CPU.
                plan = plan_draws(num_draws, model.elements + k * d, chunk_size, utility_cells=k * d, group=2)
        if model.merged is not None:
            centre = Centre(model.merged.utilities, centre.priors, model.merged.mean_weights)
        elif model.mean_weights is not None and not isinstance(model.state, occupied.CellsState):
            centre = centre._replace(mean_weights=v.to_device(model.mean_weights, f))
        static_ties = tie_labels_of(np.asarray(model.counts), np)  # host counts: no program
        if model.columns:
            info["merged_cells"] = f"{model.columns} utility groups per class (of {d} decisions)"
        if isinstance(model.state, occupied.CellsState):
            lay = model.state.table.layout
            info["occupied_cells"] = (f"{model.state.table.counts.shape[0]} cell slots and {lay.prior_rows} prior "
                                      f"field(s) of {lay.atoms} atoms a draw (of {m * k * d} rate cells)")
    else:
        per_slab = (m if per_draw_state.paired else 1) * per_draw_state.num_samples * max(k, d)
        lik = per_draw_state.likelihood
        state = per_draw_state._replace(sub_batch=max(1, min(plan.block, per_draw.decision_slab() // per_slab)),
                                        all_by_p=lik and inputs.sample_p is not None,
                                        priors_by_p=lik and deployment_uncertain, rates_by_p=lik and data_priors_drawn)
        model = state._replace(hat_counts=per_draw.decide(state, centre.utilities, state.log_p_decide, num_draws=1,
                                                          sub_batch=1)[0])
        static_ties = None

    run = blocks.Run(plan.block, num_draws, joint_priors, bool(decompose), components)
    host, mean_sum = blocks.run_draws(model, run, plan, centre, (key_all, key_rates), inputs, progress)
    yields = host["yields"]
    if isinstance(model, per_draw.PerDrawState):
        expected_yield, method = yields.mean(0, dtype=np.float64), "Monte Carlo"
    else:
        mean_w, method = model.mean_weights, "closed form"
        if mean_w is None:
            mean_w, method = mean_sum / num_draws, "Monte Carlo (posterior mean rates from the draws)"
            if decompose:
                centre = centre._replace(mean_weights=v.to_device(mean_w, f))
                host.update(blocks.run_draws(model, run._replace(fixed_point_only=True), plan, centre, (key_all, key_rates),
                                       inputs, progress)[0])
        expected_yield = expectations.closed_form_yield(u_hat, mean_w, p_bar, joint_priors)
    rec = int(np.argmax(expected_yield))
    yields_j = v.to_device(yields)
    summary = ranking.summarize(key_rank, yields_j, rope=rope, hdi_prob=hdi_prob)
    fields = ranking.ranking_fields(summary, rope)
    p_tie, errors = None, {"p_best": summary["errors"]["p_best"]}
    if per_draw_state is not None:
        # Each draw judges its own ties: a draw whose best system decided as another one did is no one's win.
        fields["p_best"], p_tie, errors["p_best"], errors["p_tie"] = doubt.best_or_tied(yields, host["ties_all"])
    p_best = fields["p_best"]
    doubts = None
    if decompose:
        doubts = doubt.decompose(host, yields, p_best, rec, static_ties, per_draw_state is not None, components,
                                 key_d, hdi_prob)
    if isinstance(model, per_draw.PerDrawState):
        ties_all = host["ties_all"]
        info["recommendation_tied_fraction"] = float(np.mean(np.sum(ties_all == ties_all[:, rec:rec + 1], 1) > 1))
        info.update(per_draw.two_stage_info(yields, rec, model))
    info = {"utilities": prior.name if utilities_drawn else "fixed matrix", **info}
    info.update(priors=("test-set class frequencies (uncertain)" if class_priors is None else
                        class_priors.name if deployment_uncertain else "fixed deployment priors"),
                num_draws=num_draws, expected_yield=method, expected_utility_matrix=u_method,
                draw_block=plan.block, chunk=plan.chunk, num_chunks=plan.num_chunks)
    errors["expected_yield"] = np.zeros(m) if method == "closed form" else summary["errors"]["mean_yield"]
    if rope is not None:
        errors["rope_probabilities"] = summary["errors"]["rope_probabilities"]
    return ranking.Comparison(
        errors=errors,
        systems=systems,
        yields=yields_j,
        expected_costs=v.to_device(host["ec"]),
        normalized_expected_costs=v.to_device(host["nec"]),
        expected_utility_matrix=v.to_device(u_hat, f),
        expected_yield=expected_yield,
        **fields,
        recommendation=rec,
        recommendation_probability=float(p_best[rec]),
        hdi_prob=hdi_prob,
        hdi=np.asarray(summary["hdi"]),
        doubt=doubts,
        info=info,
        ties=() if static_ties is None else doubt.tie_groups(static_ties, systems),
        p_tie=p_tie,
    )
