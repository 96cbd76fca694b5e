"""Which classifier, and how sure are we?  The posterior ranking of classifiers.

:func:`compare` combines three sources of doubt about which classifier is
best:

* the utility (cost) matrix ``U`` is uncertain: a prior over utility matrices
  (:mod:`ecjax.prob.utility_priors`), or a fixed matrix;
* the deployment class priors ``P`` may be uncertain (a
  :class:`~ecjax.prob.PriorDistribution`) or fixed; by default they are the
  test set's class frequencies, whose uncertainty belongs to the test set;
* the test set is finite: the posterior of each system's confusion rates
  ``R`` (:mod:`ecjax.prob.rates`), paired through the joint outcome table
  when the systems were scored on the same samples (:mod:`ecjax.prob.paired`).

Each posterior draw ``s`` pairs ``U_s``, ``P_s`` and ``R_s`` and gives every
system ``m`` the utility yield (Dyrland et al. 2022, eq. 10, rows = true class; Ferrer (2022a)
eq. 2 for the expected cost)

    yield_sm = sum_ij U_s,ij P_s,i R_s,m,ij   (ecjax.metrics.expected_value),

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
  Dirichlet posterior mean, :mod:`ecjax.prob.rates` eq. 1) times ``E[P_i]``:
  the fixed or expected deployment prior, or ``(n_i + alpha_P) / (N + K
  alpha_P)`` for the test set's class frequencies;
* paired: each system's joint weights are ``W_m ~ Dirichlet(n_m,ij +
  alpha)`` over its ``K D`` cells (:mod:`ecjax.prob.paired` eq. 1, by
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

**Doubt decomposition** (:class:`~ecjax.prob.Doubt`).  With ``r`` the
recommendation, the doubt is ``P(some system other than r, or than those
tied with r, has a higher yield)``: systems with identical confusion counts
are *tied* (their expected yields are equal in every component) and a tie is
not doubt.  It is computed four times, with one decision rule throughout:

* ``all``: every source uncertain;
* ``costs_only``: ``U_s`` drawn, ``P`` at ``E[P]``, the rates at their
  posterior mean;
* ``priors_only``: uncertain deployment priors drawn, ``U`` at ``U_hat``,
  the rates at their posterior mean;
* ``rates_only``: the rates drawn (with the test set's class frequencies
  when ``priors=None``), ``U`` at ``U_hat``, ``P`` at ``E[P]``.

``costs_only`` is exactly 0 for a fixed utility matrix and ``priors_only``
for fixed priors or the test set's own frequencies (a certain source is
not drawn at all); ``rates_only`` tends to 0 as the test set grows without
bound (the rates posterior concentrates on its mean).  With fixed
decisions every component has the same expected yield (the closed form
above), so all four are about the same system ``r``; with per-draw
decisions each component is about the system its own expected yield
recommends, and ties are judged draw by draw (identical counts in that
draw).  The doubt is not additive: sources can reinforce each other.

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

**Merged cells.**  With a fixed utility matrix and fixed decisions the rates
of decisions of equal utility enter every yield only through their sum, so
the draws are over merged cells (:mod:`ecjax.prob.aggregation`: the
Dirichlet's aggregation property, exact): two per class under 0-1 costs
(unpaired), ``2^M`` per class for ``M`` paired systems, whatever ``D``;
``info["merged_cells"]`` says so.  The NEC's naive EC is computed from the
original matrix, the closed-form expected yield and the ties from the
original counts.

**Occupied cells.**  With drawn utilities nothing merges, but most cells
of a large confusion matrix are empty: the unpaired and paired draws are
then made over the occupied cells only, each row's (or the joint table's)
empty cells getting their mass as a Gamma total split by stick breaking
(:mod:`ecjax.prob.occupied_cells` eq. 1: exact in distribution up to a
``1e-12`` truncation of the sticks), whenever that needs fewer random
variates than the ``M K D`` rate cells; ``info["occupied_cells"]`` says so.

**How many draws.**  ``num_draws=None`` (the default) draws until every
reported probability is precise to a standard error of 0.005 (at most
20 000 draws, :mod:`ecjax.prob.adaptive_draws`); a number fixes ``S``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple, cast

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax import inputs as v
from ecjax import random_bits
from ecjax.draw_runner import Block, padded_map, run_blocks
from ecjax.confusion import JointOutcomeTable, confusion_counts, data_priors, joint_outcome_table, rates
from ecjax.costs import StructuredCosts, costs_to_utilities, normalize_rows
from ecjax.decisions import bayes_decisions_kernel, log_posteriors_kernel, naive_expected_cost
from ecjax.metrics import expected_value
from ecjax.prob import adaptive_draws
from ecjax.prob import paired as paired_mod
from ecjax.prob import ranking
from ecjax.prob.sampling import dirichlet, dirichlet_draws
from ecjax.prob import aggregation
from ecjax.prob import structured_cells
from ecjax.prob import occupied_cells
from ecjax.prob.rates import (
    PriorDistribution,
    as_class_priors,
    check_concentration,
    check_rows_for_concentration,
    default_class_concentration,
    default_concentration,
    sample_class_priors,
    sample_rates,
)
from ecjax.prob.draw_plan import (
    MonteCarloSettings,
    as_decision_rule,
    check_monte_carlo_settings,
    per_draw_cost_ratio,
    plan_draws,
)
from ecjax.prob.inputs import (Systems, as_named_counts, check_decisions_matter, check_draws_fit,
                               check_structured_comparison, check_systems)
from ecjax.prob.utility_priors import UtilityPrior, resolve_utilities
# A (K, D) matrix, a utility prior, or a NumPyro model with a "utility"/"cost" site.
_Utilities = UtilityPrior | Callable[..., Any] | ArrayLike



# One (draws, systems, samples, classes) slab of the per-draw Bayes decisions holds at most this many elements:
# on a CPU a slab that stays in cache (2^19 floats, 2 MiB; 2^24 made 3 x 2000 x 20 x 20 decisions 4 times slower:
# 3.1 against 0.8 ms a draw, benchmarks/bench_draws.py --ratio), on an accelerator large products.
_DECISION_ELEMENTS = {"cpu": 1 << 17}
_DECISION_ELEMENTS_ACCELERATOR = 1 << 24


def _decision_slab() -> int:
    return _DECISION_ELEMENTS.get(jax.default_backend(), _DECISION_ELEMENTS_ACCELERATOR)


# ---------------------------------------------------------------- evaluation

def _evaluate(utilities, weights, priors, naive_costs=None):
    """Yield, EC and NEC draws; ``naive_costs``: the ``(K, D)`` row-normalized costs of the naive EC when
    ``utilities`` and ``weights`` are merged cells (:mod:`ecjax.prob.aggregation`), whose columns are no decisions."""
    p = priors[..., None, :]
    yields = expected_value(weights, utilities[..., None, :, :], p)
    costs = normalize_rows(-utilities)
    ec_normalized = expected_value(weights, costs[..., None, :, :], p)
    naive = naive_expected_cost(costs[..., None, :, :] if naive_costs is None else naive_costs, p)
    nec = jnp.where(naive > 0, ec_normalized / jnp.where(naive > 0, naive, 1.0), jnp.nan)
    return yields, -yields, nec


@partial(jax.jit, static_argnames=("chunk",))
def _evaluate_chunked(utilities, weights, priors, *, chunk):
    s = utilities.shape[0]
    draws = tuple(jnp.broadcast_to(x, (s,) + x.shape[1:]) for x in (utilities, weights, priors))
    return padded_map(lambda a: _evaluate(*a), draws, chunk)


def evaluate_draws(utilities: ArrayLike, weights: ArrayLike, priors: ArrayLike, *,
                   chunk_size: int | None = None) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Kernel: yield, EC and NEC draws ``(S, M)`` from matched draws.

    Args:
      utilities: ``(S, K, D)`` utility matrices.
      weights: ``(S, M, K, D)`` confusion rates or joint probabilities (any
        row scaling: :func:`ecjax.metrics.expected_value` row-normalizes).
      priors: ``(S, K)`` class priors.
      chunk_size: draws evaluated at once (default: as many as keep a
        chunk's ``(C, M, K, D)`` intermediates near ``2^22`` elements).  The
        draws are independent, so the chunk size changes nothing but, at
        most, the float32 rounding (XLA may vectorize the sums differently).

    ``yield_sm = sum_ij U_s,ij P_s,i R_s,m,ij`` (Dyrland et al. 2022, eq. 10); the EC is
    that of costs ``-U`` (Ferrer 2022a, eq. 2); the NEC (Ferrer 2022a, eq. 4) uses the
    row-normalized costs ``max_j U_ij - U_ij`` (Ferrer 2025, §2), for which the
    naive EC is positive unless one decision is best for every class (NaN
    then).
    """
    utilities, weights, priors = jnp.asarray(utilities), jnp.asarray(weights), jnp.asarray(priors)
    s = utilities.shape[0]
    if chunk_size is None:
        chunk = max(1, (1 << 22) // max(1, math.prod(weights.shape[1:])))
    else:
        chunk = v.as_positive_int(chunk_size, "chunk_size")
    return _evaluate_chunked(utilities, weights, priors, chunk=min(chunk, s))



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


# ------------------------------------------------------------- scores mode

@partial(jax.jit, static_argnames=("score_type", "num_classes", "num_decisions", "paired", "batch_size"))
def _scores_counts(log_scores, log_prior_draws, labels, costs, weights=None, *, score_type, num_classes,
                   num_decisions, paired, batch_size):
    """Each draw's Bayes decisions: their counts ``(S, M, K, D)`` (unpaired) or the decisions ``(S, M, N)`` (paired).

    The paired posterior needs which samples each pair of systems gets
    right together, so it keeps the decisions themselves (``O(M N)`` per
    draw) rather than a table of the ``K * D**M`` joint cells.

    ``log_scores``: ``(M, N, K)`` (or ``(M, N)`` llr); ``costs``: ``(S, K, D)``
    (one block of draws: :func:`compare` never passes more than ``_MAX_BLOCK``);
    ``log_prior_draws``: ``(S, K)`` used by likelihood-type scores;
    ``weights``: ``(M, N)`` sample weights of the unpaired counts (``None``:
    each sample counts 1).  Draws are processed ``batch_size`` at a time to
    bound the ``(batch, M, N, D)`` intermediate; each draw's counts are
    summed alone, so the batch size changes no number.
    """
    # Posterior-type scores decide with the priors they carry: their log posteriors are the same for every draw,
    # computed once, and each batch of cost draws is one product with them.
    shared = None if score_type in v.LIKELIHOOD_TYPES else log_posteriors_kernel(log_scores, None, score_type)[None]

    def one_chunk(args):
        c, lp = args
        log_post = shared if shared is not None else log_posteriors_kernel(log_scores[None], lp[:, None], score_type)
        dec = bayes_decisions_kernel(log_post, c[:, None])  # (B, M, N): decisions follow the drawn costs
        if not paired:
            return confusion_counts(labels, dec, weights, num_classes=num_classes, num_decisions=num_decisions)
        return dec.astype(jnp.int32)

    return padded_map(one_chunk, (costs, log_prior_draws), batch_size)


@partial(jax.jit, static_argnames=("num_draws",))
def _merged_rates(key, concentration, *, num_draws):
    # Jitted as a whole, as _per_draw_rates: the same concentrations in every block, no host round trip.
    return dirichlet_draws(key, concentration, num_draws)


@partial(jax.jit, static_argnames=("small_shapes",))
def _per_draw_rates(key, counts, concentration, *, small_shapes):
    # Jitted as a whole (the sampler compiled once per block shape): called with concrete counts the sampler would
    # copy every block's (B, M, K, D) counts to the host and back to tile them into its fixed units, a round trip
    # per block that took 3-5 times the draws themselves (CPU, 3 systems x 100 x 100: 11.6 against 3.6 ms a draw).
    return dirichlet(key, counts.astype(jnp.result_type(float)) + concentration, small_shapes=small_shapes)




# ---------------------------------------------------------- the draw model

_FIXED_KINDS = ("unpaired", "joint", "clustered", "merged", "joint_merged")
# Fixed counts drawn over their occupied cells, the empty ones' mass in closed form (ecjax.prob.occupied_cells).
_CELL_KINDS = ("unpaired_cells", "joint_cells")


@dataclass(frozen=True)
class _Model:
    """Static description of one run of draws (a jit static argument).

    ``kind``: ``"unpaired"``, ``"joint"``, ``"clustered"`` (fixed counts) or
    ``"scores"``, ``"scores_joint"`` (each draw makes its own Bayes
    decisions).  ``joint_priors``: the class priors are the class marginals
    of the paired model's joint weights (the test set's frequencies); else
    they come in as arrays.  The ``*_by_p`` flags: with likelihood-type
    scores, the decisions of that component use its drawn priors.  Whether
    a source is uncertain is not static: fixed utilities and priors come in
    broadcast, so one compiled step serves every such combination.
    """

    kind: str
    num_systems: int
    num_classes: int
    num_decisions: int
    alpha: float
    block: int
    joint_priors: bool
    decompose: bool
    num_groups: int = 0
    fixed_point_only: bool = False
    components: tuple = ()  # the doubt components reported (uncertain sources); fixed counts draw only these
    score_type: str = ""
    sub_batch: int = 1
    rate_draws: int = 1  # consecutive draws that share one utility draw's decisions (see PerDraw)
    all_by_p: bool = False
    priors_by_p: bool = False
    rates_by_p: bool = False


def _tie_labels_of(counts, xp):
    """``(..., M)``: the lowest index of a system with the same ``(K, D)`` counts (equal labels = tied systems)."""
    same = xp.all(counts[..., :, None, :, :] == counts[..., None, :, :, :], axis=(-2, -1))
    return xp.argmax(same, axis=-1).astype(xp.int32)


_tie_labels = jax.jit(partial(_tie_labels_of, xp=jnp))


def _yields(utilities, weights, priors, *, joint_priors, block):
    p = data_priors(weights[..., 0, :, :]) if joint_priors else priors
    y = expected_value(weights, utilities[..., None, :, :], p[..., None, :])
    return jnp.broadcast_to(y, (block, weights.shape[-3]))


_yields_kernel = partial(jax.jit, static_argnames=("joint_priors", "block"))(_yields)


def _component_yield(model, utilities, weights, priors):
    """``(B, M)`` yields ``sum_ij U_ij P_i R_m,ij`` (each factor may be fixed: they broadcast).

    With ``joint_priors`` the priors are the class marginals of ``weights``.
    """
    return _yields_kernel(utilities, weights, priors, joint_priors=model.joint_priors, block=model.block)


@partial(jax.jit, static_argnames=("joint_priors",))
def _all_outputs(utilities, weights, priors, *, joint_priors):
    """Yield, EC and NEC draws of the ``all`` posterior."""
    return _evaluate(utilities, weights, data_priors(weights[:, 0]) if joint_priors else priors)


@partial(jax.jit, static_argnames=("joint_priors", "block", "components"))
def _fixed_outputs(u, w, p_all, u_hat, mean_weights, p_bar, p_rates, naive_costs, *, joint_priors, block,
                   components):
    """One program for a block of fixed counts: the ``all`` draws and the doubt components' yields.

    ``components``: the names among ``costs_only``, ``priors_only``,
    ``rates_only`` to compute (as :func:`_component_yield`), in one
    compiled program instead of one each.  ``naive_costs``: see :func:`_evaluate`.
    """
    out = dict(zip(("yields", "ec", "nec"), _evaluate(u, w, data_priors(w[:, 0]) if joint_priors else p_all,
                                                      naive_costs)))
    args = {"costs_only": (u, mean_weights, p_bar), "priors_only": (u_hat, mean_weights, p_all),
            "rates_only": (u_hat, w, p_rates)}
    for name in components:
        out[name] = _yields(*args[name], joint_priors=joint_priors, block=block)
    return out


@jax.jit
def _masked_sum(x, valid):
    return jnp.sum(jnp.where(valid[:, None, None, None], x, 0.0), 0)


def _draw_fixed(key, data, model):
    """``(B, M, K, D)`` posterior weights of fixed counts (unpaired rates, or paired joint probabilities)."""
    kw = dict(num_draws=model.block, concentration=model.alpha)
    k, d = model.num_classes, model.num_decisions
    if model.kind == "unpaired":
        return sample_rates(key, data["counts"], **kw)
    if model.kind == "merged":  # rates of merged cells (ecjax.prob.aggregation eq. 1): d is the number of groups
        return _merged_rates(key, data["concentration"], num_draws=model.block)
    if model.kind == "joint_merged":
        return paired_mod.merged_joint_confusions(key, data["concentration"], num_draws=model.block,
                                                  num_systems=model.num_systems, num_classes=k, num_groups=d)
    if model.kind == "joint":
        return paired_mod.sample_joint_confusions(key, JointOutcomeTable(data["cells"], data["cell_counts"], k, d),
                                                  **kw)
    table = paired_mod.ClusteredOutcomeTable(data["cells"], data["groups"], data["cell_counts"], model.num_groups,
                                             k, d)
    return paired_mod.sample_clustered_confusions(key, table, **kw)


def _cells_block(key, u, p_all, p_rates, data, model):
    """A block of fixed counts drawn over their occupied cells only (:mod:`ecjax.prob.occupied_cells`)."""
    table, parts = data["cell_table"], data["component_parts"]
    return occupied_cells.cell_outputs(key, table, u, p_all, p_rates, parts, joint_priors=model.joint_priors,
                                       block=model.block, components=model.components if model.decompose else ())


def _draw_counts(data, model, utilities, log_priors):
    """The Bayes decisions for ``utilities`` ``(B, K, D)``: their counts ``(B, M, K, D)`` or, paired, ``(B, M, N)``."""
    b, k, d = model.block, model.num_classes, model.num_decisions
    costs = jnp.broadcast_to(-utilities, (b, k, d))
    log_priors = jnp.broadcast_to(log_priors, (b, k))
    kw = dict(score_type=model.score_type, num_classes=k, num_decisions=d, batch_size=model.sub_batch)
    if model.kind == "scores_joint":
        return _scores_counts(data["log_scores"], log_priors, data["labels"], costs, paired=True, **kw)
    # One system at a time: unpaired test sets may differ in size.
    weights = data.get("weights")
    weights = (None,) * len(data["labels"]) if weights is None else weights
    return jnp.concatenate([_scores_counts(s[None], log_priors, lab[None], costs, None if w is None else w[None],
                                           paired=False, **kw)
                            for s, lab, w in zip(data["log_scores"], data["labels"], weights)], 1)


@partial(jax.jit, static_argnames=("num_classes", "num_decisions"))
def _paired_counts(labels, decisions, weights, *, num_classes, num_decisions):
    return confusion_counts(labels, decisions, weights, num_classes=num_classes, num_decisions=num_decisions)


def _marginal_counts(model, data, counts):
    """Per-system counts ``(B, M, K, D)`` of one block's decisions (paired: from the decisions themselves)."""
    if model.kind == "scores_joint":
        return _paired_counts(data["labels"], counts, data.get("weights"), num_classes=model.num_classes,
                              num_decisions=model.num_decisions)
    return counts


def _posterior_mean(model, data, counts):
    """Posterior mean weights ``n_m,ij + alpha`` of per-draw counts (see :func:`_mean_weights`)."""
    return _marginal_counts(model, data, counts) + jnp.asarray(model.alpha, jnp.result_type(float))


def _posterior_draw(key, model, data, counts):
    if model.kind == "scores_joint":
        # Eq. (1) of ecjax.prob.paired from the decisions: memory O(M (N + K D)) per draw, whatever K D**M.
        return paired_mod.joint_confusions_per_draw_kernel(key, data["labels"][0], counts, model.alpha,
                                                           num_classes=model.num_classes,
                                                           num_decisions=model.num_decisions,
                                                           sample_weight=data.get("weights"))
    return _per_draw_rates(key, counts, model.alpha, small_shapes=0 < model.alpha < 1)


def _block(b, key_all, key_rates, u, p_all, p_rates, data, model):
    """All outputs of block ``b``, ``(B, M)`` each: yield / EC / NEC draws and the doubt components.

    Plain Python over jitted kernels (the samplers, the decisions, the
    yields), each compiled once per shape and shared by every comparison
    of that shape, whatever its priors, components or chunk size.

    ``u``: the block's utility draws (or ``U_hat`` broadcast); ``p_all``:
    its class priors (drawn, or ``E[P]`` broadcast); ``p_rates``: those of
    the ``rates_only`` component (the drawn test-set frequencies, or
    ``E[P]``).  ``costs_only`` uses ``(u, E[P], mean rates)``,
    ``priors_only`` ``(U_hat, p_all, mean rates)``, ``rates_only`` ``(U_hat,
    p_rates, drawn rates)``.
    """
    bsz = model.block
    u_hat, p_bar = data["u_hat"], data["p_bar"]
    out = {}

    def component(name, utilities, weights, priors):
        out[name] = _component_yield(model, utilities, weights, priors)

    if model.fixed_point_only:
        component("costs_only", u, data["mean_weights"], p_bar)
        component("priors_only", u_hat, data["mean_weights"], p_all)
        return out
    if model.kind in _CELL_KINDS:
        out.update(_cells_block(key_all, u, p_all, p_rates, data, model))
        return out
    if model.kind in _FIXED_KINDS:
        w = _draw_fixed(key_all, data, model)
        components = ()
        if model.decompose:
            # The clustered model's mean rates come from a first pass: its other components come in a second.
            # A certain source's component is not reported (doubt exactly 0): not computed either.
            components = ("rates_only",) if model.kind == "clustered" else model.components
        out.update(_fixed_outputs(u, w, p_all, u_hat, data.get("mean_weights"), p_bar, p_rates,
                                  data.get("naive_costs"), joint_priors=model.joint_priors, block=bsz,
                                  components=components))
        if model.kind == "clustered":
            # Per-block sums of the weights (P_i R_ij) or of the rates, for their Monte Carlo posterior mean.
            valid = (b * bsz + np.arange(bsz)) < data["num_draws"]
            out["mean_sum"] = _masked_sum(w if model.joint_priors else rates(w), valid)
        return out

    # Per-draw decisions: each draw's counts, then the posterior given them.  With ``rate_draws = r > 1``
    # the block holds B / r utility draws (and, where they decide, prior draws), each repeated for r
    # consecutive draws: their decisions are made once and r rate draws follow (see PerDraw).
    lp_bar, hat = data["log_p_decide"], data["hat_counts"]
    r = model.rate_draws
    g = bsz // r
    decide_model = model if r == 1 else dataclasses.replace(model, block=g, sub_batch=min(model.sub_batch, g))

    def spread(x):
        return x if r == 1 else jnp.repeat(x[:g], r, axis=0, total_repeat_length=bsz)

    def decide(utilities, log_priors):
        # One decision per group: the groups' first draws (the spread arrays are constant within a group).
        if utilities.ndim == 3:
            utilities = utilities[::r]
        if log_priors.ndim == 2:
            log_priors = log_priors[::r]
        return spread(_draw_counts(data, decide_model, utilities, log_priors))

    def per_block(counts):
        return jnp.broadcast_to(counts, (bsz,) + counts.shape)

    u = spread(u)
    if model.all_by_p:
        p_all = spread(p_all)
    if model.rates_by_p:
        p_rates = spread(p_rates)
    c_all = decide(u, jnp.log(p_all) if model.all_by_p else lp_bar)
    w = _posterior_draw(key_all, model, data, c_all)
    out["yields"], out["ec"], out["nec"] = _all_outputs(u, w, p_all, joint_priors=model.joint_priors)
    out["ties_all"] = _tie_labels(_marginal_counts(model, data, c_all))
    if model.decompose:
        c = decide(u, lp_bar) if model.all_by_p else c_all
        component("costs_only", u, _posterior_mean(model, data, c), p_bar)
        out["ties_costs_only"] = _tie_labels(_marginal_counts(model, data, c))
        c = decide(u_hat, jnp.log(p_all)) if model.priors_by_p else per_block(hat)
        component("priors_only", u_hat, _posterior_mean(model, data, c), p_all)
        out["ties_priors_only"] = _tie_labels(_marginal_counts(model, data, c))
        c = decide(u_hat, jnp.log(p_rates)) if model.rates_by_p else per_block(hat)
        component("rates_only", u_hat, _posterior_draw(key_rates, model, data, c), p_rates)
        out["ties_rates_only"] = _tie_labels(_marginal_counts(model, data, c))
    return out


class _Inputs(NamedTuple):
    """Per-block draws of the utilities and priors (``None``: fixed at ``U_hat`` / ``E[P]``)."""

    sample_u: object
    sample_p: object
    rates_use_p: bool  # the rates_only component keeps the drawn priors (the test set's frequencies)


def _run_draws(model, plan, data, key_all, key_rates, inputs, progress):
    """Per-block utility and prior draws in, ``(S, ...)`` numpy draws and the float64 ``mean_sum`` out.

    The host loop, its chunks and its progress are :func:`ecjax.draw_runner.run_blocks`'s: device memory
    holds one chunk's outputs, and a reporter gets the running yields (``draws_done``) and the measured time left.
    """
    bsz = plan.block
    # Broadcast on the host: an eager broadcast would be one more compiled program per shape.
    fixed_u, fixed_p = (jax.device_put(np.broadcast_to(np.asarray(data[n]), (bsz,) + data[n].shape))
                        for n in ("u_hat", "p_bar"))

    def block(b):
        u = fixed_u if inputs.sample_u is None else inputs.sample_u(b)
        p = fixed_p if inputs.sample_p is None else inputs.sample_p(b)
        out = _block(b, random_bits.fold_in(key_all, b), random_bits.fold_in(key_rates, b), u, p,
                     p if inputs.rates_use_p else fixed_p, data, model)
        mean_sum = out.pop("mean_sum", None)
        return Block(draws=out, sums=mean_sum)

    host, mean_sum = run_blocks(block, plan, progress=progress, shown=lambda draws: draws.get("yields"))
    return ({} if host is None else host), mean_sum


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
    :func:`ecjax.prob.adaptive_draws.draw_until_precise`).  Each run starts
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
    (:data:`~ecjax.prob.adaptive_draws.DEFAULT_MC_ERROR`, capped at
    :data:`~ecjax.prob.adaptive_draws.DEFAULT_MAX_DRAWS`).  The first run
    has ``num_draws`` draws, or
    :func:`~ecjax.prob.adaptive_draws.first_draws` (enough for the HDI).
    """
    def run(draws):
        return function(data, settings=dataclasses.replace(settings, num_draws=draws, mc_error=None),
                        hdi_prob=hdi_prob, **kwargs)

    first = settings.num_draws
    if first is None:
        first = adaptive_draws.first_draws(ranking.min_draws_for_hdi(
            v.as_number_between(hdi_prob, "hdi_prob", 0.0, 1.0)))
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
        (:func:`~ecjax.prob.rates.default_concentration`: a prior worth 2
        samples spread evenly over the cells) for the paired (joint) model
        and the unpaired one alike, the number ``info["concentration"]``
        reports; ``0`` gives the Bayesian bootstrap over occupied cells; see
        :mod:`ecjax.prob.rates`.
      rope: half-width of the region of practical equivalence, in yield units.
      hdi_prob: mass of the reported highest-density intervals; needs
        ``settings.num_draws >= 10 / (1 - hdi_prob)``.
      decompose: also compute the doubt decomposition (:class:`~ecjax.prob.Doubt`).
      settings: :class:`~ecjax.prob.MonteCarloSettings`: ``num_draws`` (``S``;
        default ``None``: adaptive, from 1000 draws until every reported
        probability has a Monte Carlo standard error of at most 0.005, at
        most 20 000, :mod:`ecjax.prob.adaptive_draws`; ``num_draws`` says
        how many were used); ``chunk_size``, the posterior draws whose outputs
        are collected at once (rounded up to whole blocks; ``None``:
        automatic: memory is bounded by it and by the block, not by ``S``,
        and every chunk size gives the same numbers, see the module
        docstring); ``progress``, ``True`` for a progress bar over the
        chunks (``tqdm``) or a callable ``total -> bar`` with ``update(n)``
        and ``close()`` (the one protocol of every chunked run,
        :class:`ecjax.draw_runner.Progress`; :class:`ecjax.draw_runner.ProgressLines`
        writes plain lines for logs), and optionally
        ``draws_done(done, yields)`` (the draws so far, after each chunk)
        and ``time_left(seconds)``: the duration of the rest of the run,
        called once, after the second block, from its measured time on
        this machine (:func:`~ecjax.prob.draw_plan.block_seconds_left`;
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
    class_priors = _check_class_priors(priors, k, s.class_counts, weighted=s.weight_info is not None)
    model_name = ("cluster Bayesian bootstrap" if s.groups is not None else
                  "paired: Dirichlet over joint outcome cells" if s.joint else "unpaired: Dirichlet per system and class")
    info = {"model": model_name, "concentration": alpha}
    if s.weight_info is not None:
        info["sample_weight"] = s.weight_info
    p_decide = _decision_priors(class_priors, s.class_counts, s.joint)
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
            per_draw = _per_draw_model(s, score_type, likelihood, per_draw_rule, alpha, k, d)
            info.update(decision_rule="per_draw", decisions="Bayes decisions of each drawn utility matrix")
            return _run_compare(prior, class_priors, s.class_counts, k=k, d=d, alpha=alpha, joint=s.joint,
                                per_draw=per_draw, p_decide=p_decide, info=info, **common)
        info.update(decision_rule=decision_rule, decisions=(
            "Bayes decisions of the expected utility matrix (the mean of the uncertain utilities)" if decision_rule == "expected_utility"
            else "Bayes decisions of each drawn utility matrix (the same in every draw: the costs are fixed)"))
    source: Callable[..., _Source] = partial(_fixed_source, s, None if scores is None else score_type, p_decide,
                                             alpha, k, d)
    if isinstance(prior, StructuredCosts):  # merged cells counted from the decisions: no K x D array
        structured, group_utilities = _structured_source(s, prior, alpha, d, None if scores is None else score_type,
                                                         p_decide)
        prior, source = cast(jax.Array, group_utilities), lambda u_hat: structured  # _merged_source keeps them
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
        items = [v.as_scores(x, f"scores[{m}]", score_type=score_type) for m, x in enumerate(systems.scores)]
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
        # The paired model's default lives in ecjax.prob.paired (per cell of each system's (K, D) matrix).
        return paired_mod.resolve_concentration(
            paired_mod.DEFAULT_CONCENTRATION if concentration is None else concentration, k, d)
    return default_concentration(d, k) if concentration is None else check_concentration(concentration)


def _per_draw_model(s, score_type, likelihood, per_draw_rule, alpha, k, d):
    """The scores on the device and the rule of per-draw decisions (:class:`_PerDraw`)."""
    if not s.joint and alpha == 0 and np.any(s.class_counts == 0):
        raise v.InputError("with `concentration=0` every class needs test samples")
    log_scores = [v.to_device(x) for x in s.items]
    f = jnp.result_type(float)
    if s.joint:
        assert s.shared_labels is not None  # joint systems share one label vector
        data = {"log_scores": jnp.stack(log_scores), "labels": jnp.broadcast_to(
            v.to_device(s.shared_labels), (len(s.items), s.shared_labels.shape[0]))}
        if s.shared_weights is not None:
            data["weights"] = v.to_device(s.shared_weights, f)
    else:
        data = {"log_scores": tuple(log_scores), "labels": tuple(v.to_device(lab) for lab in s.labels)}
        if s.weights is not None:
            data["weights"] = tuple(v.to_device(w, f) for w in s.weights)
    n_max = max(x.shape[0] for x in s.items)
    r = per_draw_rule.resolve(num_systems=len(s.items), num_samples=n_max, num_classes=k, num_decisions=d,
                              paired=s.joint)
    return _PerDraw("scores_joint" if s.joint else "scores", data, score_type, likelihood, n_max, r)


def _fixed_source(s, score_type, p_decide, alpha, k, d, u_hat):
    """The model of fixed decisions: given ones (``score_type`` None), or the Bayes decisions of ``U_hat``."""
    if score_type is None:
        decisions = [np.asarray(x) for x in s.items]
    else:
        with np.errstate(divide="ignore"):
            log_p = np.log(p_decide)
        decisions = [padded_bayes_decisions(x, -u_hat, log_p, score_type) for x in s.items]
    if s.joint:
        return _joint_source(s.shared_labels, np.stack(decisions), s.groups, alpha, k, d, len(s.items),
                             s.shared_weights)
    weights = [None] * len(s.items) if s.weights is None else s.weights
    counts = np.stack([_fixed_counts(lab, x, k, d, w) for lab, x, w in zip(s.labels, decisions, weights)])
    return _unpaired_source(counts, alpha)


def _structured_source(s: _Canonical, utilities: StructuredCosts, alpha: float, d: int, score_type: str | None,
                       p_decide: np.ndarray) -> tuple[_Source, np.ndarray]:
    """Fixed structured utilities: the source of their merged cells (:mod:`ecjax.prob.structured_cells`), counted
    from the decisions (given, or with ``score_type`` the Bayes decisions of the scores, made once with the priors
    ``p_decide`` in ``O(N K)``), and their ``(K, G)`` group utilities (what the draws, the closed-form expected yield
    and ``expected_utility_matrix`` read; ``G`` = wrong, correct (, abstain))."""
    items = s.items
    if score_type is not None:
        with np.errstate(divide="ignore"):
            log_p = np.log(p_decide)
        items = [padded_bayes_decisions(x, costs_to_utilities(utilities), log_p, score_type) for x in s.items]
    groups = structured_cells.structured_groups(utilities)
    m, (k, g), f = len(s.items), groups.sizes.shape, jnp.result_type(float)
    weights = [None] * m if s.weights is None else s.weights
    merged = np.stack([structured_cells.merged_counts(lab, x, w, groups)
                       for lab, x, w in zip(s.labels, items, weights)])
    check_rows_for_concentration(merged, alpha)
    mean = merged + alpha * groups.sizes  # n_ig + s_ig alpha (ecjax.prob.aggregation eq. 1)
    naive = normalize_rows(costs_to_utilities(utilities))  # the normalized costs, structured: the naive EC in O(K)
    data = {"u_hat": v.to_device(groups.utilities, f), "mean_weights": v.to_device(mean, f),
            "naive_costs": jax.tree.map(lambda x: v.to_device(np.asarray(x), f), naive)}
    ties = structured_cells.tie_signature(s.labels, items, s.weights, d)
    if not s.joint:
        return _Source("merged", dict(data, concentration=v.to_device(mean, f)), ties, mean, m * k * g,
                       columns=g), groups.utilities
    assert s.shared_labels is not None  # joint systems share one label vector
    # a_J = alpha / D^(M-1): the prior of one of the K D^M joint cells (ecjax.prob.paired eq. 1).
    concentration = structured_cells.joint_concentration(s.shared_labels, np.stack(items), s.shared_weights,
                                                         groups, alpha / d ** (m - 1))
    return _Source("joint_merged", dict(data, concentration=v.to_device(concentration, f)), ties, mean,
                   max(m * k * g, k * g ** m), columns=g), groups.utilities


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
    alpha = default_concentration(d, k) if concentration is None else check_concentration(concentration)
    class_counts = np.asarray(c.sum(-1)).mean(0)
    class_priors = _check_class_priors(priors, k, class_counts)
    source = _unpaired_source(np.asarray(c), alpha)
    return _run_compare(prior, class_priors, class_counts, k=k, d=d, alpha=alpha, joint=False,
                        source=lambda u_hat: source, key=key, num_draws=num_draws, rope=rope, hdi_prob=hdi_prob,
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


def _expected_priors(class_priors, class_counts):
    """``E[P]``: the fixed or expected deployment priors, or the posterior mean of the test set's frequencies.

    The test set's frequencies are drawn from ``Dirichlet(n_i + alpha_P)``
    (:func:`~ecjax.prob.sample_class_priors`), of mean ``(n_i + alpha_P) /
    (N + K alpha_P)``.
    """
    if class_priors is None:
        n = np.asarray(class_counts, np.float64)
        alpha_p = default_class_concentration(n.shape[0])
        return (n + alpha_p) / (n.sum() + n.shape[0] * alpha_p)
    if isinstance(class_priors, PriorDistribution):
        return np.asarray(class_priors.mean, np.float64)
    return np.asarray(class_priors, np.float64)


def _decision_priors(class_priors, class_counts, joint):
    """The priors with which likelihood-type scores decide when the priors are at their mean."""
    if class_priors is None and joint:
        n = np.asarray(class_counts, np.float64)
        return n / n.sum()
    return _expected_priors(class_priors, class_counts)


@partial(jax.jit, static_argnames=("score_type",))
def _decide_kernel(scores, costs, log_priors, *, score_type):
    return bayes_decisions_kernel(log_posteriors_kernel(scores, log_priors, score_type), costs)


# Fixed decisions and their counts are computed on samples padded to a power of two (ecjax.inputs.bucket_length),
# at least this many, so that data of a similar size (9,000 or 10,000 samples) reach the same compiled programs.
_MIN_SAMPLE_BUCKET = 1024


def bucket_size(n: int) -> int:
    """The padded length of ``n`` samples: the next power of two, at least 1024 (padding made once per system)."""
    return v.bucket_length(n, _MIN_SAMPLE_BUCKET)


def _padded(x, axis=0):
    return v.pad_to_bucket(x, axis=axis, minimum=_MIN_SAMPLE_BUCKET)


def padded_bayes_decisions(scores: ArrayLike, costs: ArrayLike | StructuredCosts, log_priors: ArrayLike,
                           score_type: str) -> np.ndarray:
    """Bayes decisions (Ferrer 2025, eq. 7) of one system's validated ``(N, K)`` scores for one ``(K, D)`` cost matrix
    (or structured costs), on the host: the fixed decisions of :func:`compare`.  ``log_priors`` ``(K,)`` turn
    likelihood-type scores into posteriors (ignored otherwise).  The samples are padded to :func:`bucket_size`, so
    that data of a similar size reuse the compiled program."""
    f = jnp.result_type(float)
    n = np.shape(scores)[0]
    c = costs.map(lambda x: v.to_device(x, f)) if isinstance(costs, StructuredCosts) else v.to_device(costs, f)
    dec = _decide_kernel(v.to_device(_padded(scores)), c, v.to_device(log_priors, f), score_type=score_type)
    return np.asarray(dec)[:n]


def _fixed_counts(labels, decisions, k, d, weights=None):
    """``(..., K, D)`` counts ``sum_n w_n [y_n = i] [d_n = j]`` of fixed decisions, on the host.

    Exact: int64 counts, or float64 sums of ``weights`` ``(N,)``.  One
    ``bincount`` per system costs no compiled program (the decisions are
    on the host already).
    """
    y, dec = np.broadcast_arrays(np.asarray(labels, np.int64), np.asarray(decisions, np.int64))
    flat = (y * d + dec).reshape(-1, y.shape[-1])
    counts = [np.bincount(f, weights=weights, minlength=k * d) for f in flat]
    return np.stack(counts).reshape(y.shape[:-1] + (k, d))


class _Source(NamedTuple):
    """Fixed counts: the model kind, its arrays, the per-system counts (ties) and the closed-form mean weights."""

    kind: str
    data: dict
    counts: np.ndarray  # (M, K, D) per-system counts
    mean_weights: np.ndarray | None  # (M, K, D): E[P_i R_ij] (joint) or proportional to E[R_ij]; None: Monte Carlo
    elements: int  # largest per-draw intermediate
    num_groups: int = 0
    columns: int = 0  # the columns of the drawn weights: D, or the utility groups of merged cells (0: D)


def _mean_weights(counts, alpha):
    """Posterior mean weights of fixed counts: ``n_m,ij + alpha``.

    Row-normalized they are ``E[R_m,ij]`` (the Dirichlet mean, unpaired; the
    within-class proportions of the paired model's marginal ``W_m ~
    Dirichlet(n_m + alpha)``, :mod:`ecjax.prob.paired` eq. 1); normalized as
    a whole, ``E[P_i R_m,ij]`` of the paired model with the test set's class
    frequencies.
    """
    return np.asarray(counts, np.float64) + alpha


def _unpaired_source(counts, alpha):
    counts = np.asarray(counts, np.float64)
    check_rows_for_concentration(counts, alpha)
    m, k, d = counts.shape
    return _Source("unpaired", {"counts": v.to_device(counts, jnp.result_type(float))}, counts,
                   _mean_weights(counts, alpha), m * k * d)


def _joint_source(labels, decisions, groups, alpha, k, d, m, weights=None):
    """Paired systems (or one clustered system) from the joint outcome table of fixed decisions."""
    counts = _fixed_counts(labels, decisions, k, d, weights).astype(np.float64)
    f = jnp.result_type(float)
    if groups is not None:
        table = paired_mod.clustered_outcome_table(labels, decisions, groups, num_classes=k, num_decisions=d,
                                                   sample_weight=weights)
        data = {"cells": table.cells, "groups": table.groups, "cell_counts": v.to_device(table.counts, f)}
        return _Source("clustered", data, counts, None, max(m * k * d, 2 * int(table.counts.shape[0])),
                       table.num_groups)
    table = joint_outcome_table(labels, decisions, num_classes=k, num_decisions=d, sample_weight=weights)
    data = {"cells": table.cells, "cell_counts": v.to_device(np.asarray(table.counts), f)}
    return _Source("joint", data, counts, _mean_weights(counts, alpha), max(m * k * d, int(table.cells.shape[0])))


# Merged joint cells (ecjax.prob.aggregation) are drawn densely: at most this many per draw.
_MAX_MERGED_JOINT_CELLS = 1 << 16
# Private switch: False draws every cell, as before the merging (the tests compare the two).
_MERGE_CELLS = True


def _merged_source(src, u_hat, alpha):
    """Fixed utilities: ``src`` with its cells of equal utility merged (:mod:`ecjax.prob.aggregation` eq. 1).

    ``src`` itself when nothing merges (every row's utilities distinct), for
    the clustered model, or when the paired model's merged table (``K G^M``
    cells, all drawn) would not be smaller than its draws over the occupied
    cells.  Only the draws change: ``counts`` (ties) and ``mean_weights``
    (the closed-form expected yield) stay those of the decisions.
    """
    if not _MERGE_CELLS or src.kind not in ("unpaired", "joint"):
        return src
    m, k, d = src.counts.shape
    groups = aggregation.utility_groups(u_hat)
    g = groups.num_groups
    if g >= d:
        return src
    f = jnp.result_type(float)
    mean = aggregation.aggregate_counts(src.counts, groups) + alpha * groups.sizes  # n_ig + s_ig alpha
    data = {"u_hat": v.to_device(groups.utilities, f), "mean_weights": v.to_device(mean, f),
            "naive_costs": v.to_device(np.asarray(normalize_rows(-u_hat), np.float64), f)}
    if src.kind == "unpaired":
        return src._replace(kind="merged", data=dict(data, concentration=v.to_device(mean, f)), elements=m * k * g,
                            columns=g)
    cells = k * g ** m
    if cells > _MAX_MERGED_JOINT_CELLS or cells >= src.elements:
        return src
    # a_J = alpha / D^(M-1): the prior of one of the K D^M joint cells (ecjax.prob.paired eq. 1).
    concentration = aggregation.joint_concentration(np.asarray(src.data["cells"]), np.asarray(src.data["cell_counts"]),
                                                    groups, alpha / d ** (m - 1))
    return src._replace(kind="joint_merged", data=dict(data, concentration=v.to_device(concentration, f)),
                        elements=max(m * k * g, cells), columns=g)


# Private switch: "auto" (the cheaper draw), "always" (the occupied cells whenever they apply) or "never" (every
# cell, as before); the tests compare them.
_OCCUPIED_CELLS = "auto"


def _occupied_source(src, u_hat, p_bar, alpha, joint_priors):
    """``src`` drawn over its occupied cells (:mod:`ecjax.prob.occupied_cells`) when that is the cheaper draw.

    The occupied-cell draw is exact (up to the sticks' ``1e-12``
    truncation) and is used when its random variates per draw (the padded
    occupied cells, ``T + 1`` per prior field) are fewer than half the
    ``M K D`` rate cells of the dense draw: at 100 classes of 100 samples
    each, about 10^4 against 3 x 10^4; at 10 classes of 1000 samples the
    dense draw stays.  ``counts`` (ties) and ``mean_weights`` (the
    closed-form expected yield) are unchanged; the doubt components' fixed
    parts come precomputed: ``costs_coef`` ``(M, K)``, ``P_i / (n_m,i + D
    alpha)`` (``1 / (N + K D alpha)`` with the test set's frequencies), and
    ``priors_rows`` ``(M, K)``, ``sum_j U_hat_ij E[R_m,ij]``.
    """
    if _OCCUPIED_CELLS == "never" or src.kind not in ("unpaired", "joint"):
        return src
    m, k, d = src.counts.shape
    if src.kind == "unpaired":
        table = occupied_cells.unpaired_cells(src.counts, alpha)
    else:
        table = occupied_cells.joint_cells(np.asarray(src.data["cells"]), np.asarray(src.data["cell_counts"]),
                                           num_classes=k, num_decisions=d, alpha=alpha)
    if _OCCUPIED_CELLS == "auto" and 2 * occupied_cells.variates(table) >= m * k * d:
        return src
    row_weight = src.counts.sum(-1) + d * alpha  # (M, K): n_m,i + D alpha
    if joint_priors:
        costs_coef = np.broadcast_to(1.0 / row_weight.sum(-1, keepdims=True), (m, k))
    else:
        costs_coef = np.asarray(p_bar, np.float64) / row_weight
    priors_rows = np.einsum("ij,mij->mi", np.asarray(u_hat, np.float64), src.mean_weights) / row_weight
    data = {"cell_table": table, "component_parts": occupied_cells.component_parts(table, u_hat, costs_coef, priors_rows),
            "mean_weights": None}
    return src._replace(kind=src.kind + "_cells", data=data, elements=occupied_cells.plan_elements(table))


def _closed_form_yield(u_hat, mean_weights, p_bar, joint_priors):
    """``sum_ij U_hat_ij E[P_i R_m,ij]`` in float64 from the mean weights (Dyrland et al. 2022, eq. 19)."""
    w = np.asarray(mean_weights, np.float64)
    totals = w.sum(-1, keepdims=True)
    r = np.divide(w, totals, out=np.zeros_like(w), where=totals > 0)
    p = w[0].sum(-1) / w[0].sum() if joint_priors else np.asarray(p_bar, np.float64)
    return np.einsum("ij,i,mij->m", np.asarray(u_hat, np.float64), p, r)


# --------------------------------------------------------------- the core

class _PerDraw(NamedTuple):
    """Scores whose Bayes decisions are made again in every draw."""

    kind: str  # "scores" (unpaired) or "scores_joint" (paired: each draw keeps its decisions, (M, N))
    data: dict
    score_type: str
    likelihood: bool
    num_samples: int  # the largest N
    rate_draws: int  # draws per set of decisions (PerDraw)


def _two_stage_info(yields, rec, per_draw, *, m, k, d, joint):
    """Per-draw decisions: how the draws were shared, and the variance decomposition measured on them (PerDraw).

    One-way analysis of variance over the complete groups of ``r``
    consecutive draws (one utility draw each): ``s_w^2`` is the mean
    within-group variance and ``s_b^2 = var(group means) - s_w^2 / r``
    (clipped at 0), for the recommendation's best-indicator and its yield.
    """
    r = per_draw.rate_draws
    s = yields.shape[0]
    info = {"rate_draws_per_cost_draw": r, "cost_draws": -(-s // r)}
    groups = s // r
    if r < 2 or groups < 2:
        return info
    y = yields[: groups * r].reshape(groups, r, m).astype(np.float64)
    best = (np.argmax(y, -1) == rec).astype(np.float64)
    between, within = {}, {}
    for name, x in (("p_best", best), ("yield", y[..., rec])):
        within[name] = float(np.mean(np.var(x, 1, ddof=1)))
        between[name] = float(max(0.0, np.var(x.mean(1), ddof=1) - within[name] / r))
    ratio = per_draw_cost_ratio(num_systems=m, num_samples=per_draw.num_samples, num_classes=k, num_decisions=d,
                        paired=joint)
    efficient = {name: (float(np.sqrt(ratio * within[name] / between[name])) if between[name] > 0 else math.inf)
                 for name in within}
    info.update(variance_between_cost_draws=between, variance_within_cost_draws=within,
                efficient_rate_draws=efficient)
    return info


def _expected_utilities(prior, plan, sample_u):
    """``U_hat = E[U]`` (Dyrland et al. 2022, eq. 18) and how it was obtained.

    The prior's exact mean when it has one; otherwise the mean of the very
    draws the comparison uses (block by block in float64, so the same for
    every chunk size).
    """
    if not isinstance(prior, UtilityPrior):
        return np.asarray(prior, np.float64), "fixed"
    if prior.mean is not None:
        return np.asarray(prior.mean, np.float64), prior.mean_method
    total = 0.0
    for b in range(plan.num_blocks):
        n = min(plan.block, plan.num_draws - b * plan.block)
        total = total + np.asarray(sample_u(b)[:n], np.float64).sum(0)
    return total / plan.num_draws, "monte_carlo"


def _tie_groups(labels, systems):
    labels = np.asarray(labels)
    return tuple(tuple(systems[j] for j in np.flatnonzero(labels == g)) for g in np.unique(labels)
                 if np.sum(labels == g) > 1)


def _best_or_tied(yields: ArrayLike, tie_labels: ArrayLike) -> tuple[np.ndarray, float, np.ndarray, float]:
    """Per-draw ties: ``(p_best, p_tie)`` and their batch-means errors (:func:`ranking.batch_means_error`).

    In draw ``s`` the best system is ``t_s = argmax_m yield_sm``.  The draw
    is a *tie* when another system has ``t_s``'s confusion counts in that
    draw (``tie_labels[s, m] == tie_labels[s, t_s]``, :func:`_tie_labels_of`):
    they made the same decisions, so their yields differ only by the noise of
    their rate draws (or not at all), and no system won.  Otherwise ``t_s``
    won.  So ``p_best[m] = P(t_s = m, not a tie)``, ``p_tie = P(tie)`` and
    ``sum_m p_best[m] + p_tie = 1`` (exact counts over ``S``, in float64).

    Args:
      yields: ``(S, M)`` yield draws.
      tie_labels: ``(S, M)`` per-draw tie labels (equal labels: equal counts).
    """
    y, labels = np.asarray(yields), np.asarray(tie_labels)
    s, m = y.shape
    top = np.argmax(y, axis=1)
    tie = np.count_nonzero(labels == np.take_along_axis(labels, top[:, None], axis=1), axis=1) > 1
    wins = (top[:, None] == np.arange(m)) & ~tie[:, None]
    p_best = np.count_nonzero(wins, axis=0) / s
    return (p_best, np.count_nonzero(tie) / s, ranking.batch_means_error(wins),
            float(ranking.batch_means_error(tie[:, None])[0]))


def _doubt(host, yields, p_best, rec, static_ties, per_draw, components, key, hdi_prob):
    """The four doubt components (see the module docstring), ties counted as the recommended system's wins."""
    values, recs, p_bests, errors = {}, {}, {"all": p_best}, {}
    keys = random_bits.split_keys(key, 3)
    for i, name in enumerate(ranking.Doubt.COMPONENTS):
        if name != "all" and name not in components:
            values[name], recs[name], p_bests[name] = 0.0, rec, None  # a certain source leaves no doubt
            continue
        y = yields if name == "all" else host[name]
        ties = host.get(f"ties_{name}", static_ties)
        # Fixed decisions: every component's expected yield is the closed form, so all are about `rec`.
        r = rec if (name == "all" or not per_draw) else int(np.argmax(y.mean(0, dtype=np.float64)))
        share, errors[name] = ranking.group_win_rate(v.to_device(y), v.to_device(ties), r)
        values[name], recs[name] = 1.0 - share, r
        if name != "all" and per_draw:
            p_bests[name] = _best_or_tied(y, ties)[0]  # draws whose best system is tied are ties, as in `all`
        elif name != "all":
            # With the HDI of the main summary (unused here), so that both share one compiled program.
            p_bests[name] = np.asarray(ranking.summarize(keys[i - 1], v.to_device(y), hdi_prob=hdi_prob)["p_best"])
    return ranking.Doubt(p_bests["all"], p_bests["costs_only"], p_bests["rates_only"], rec,
                         p_best_priors_only=p_bests["priors_only"], values=values, recommendations=recs,
                         errors=errors)


def _run_compare(prior, class_priors, class_counts, *, k, d, alpha, joint, key, num_draws, rope, hdi_prob, systems,
                 decompose, chunk_size, progress, info, source=None, per_draw=None, cells_bound=0, p_decide=None):
    """Draw utilities, priors and rates block by block; summarize; decompose the doubt."""
    f = jnp.result_type(float)
    m = len(systems)
    key_u, key_p, key_all, key_rates, key_rank, key_d = random_bits.split_keys(key, 6)
    utilities_drawn = isinstance(prior, UtilityPrior)
    deployment_uncertain = isinstance(class_priors, PriorDistribution)
    if per_draw is not None and per_draw.kind == "scores_joint":
        elements = paired_mod.per_draw_elements(alpha, num_systems=m, num_classes=k, num_decisions=d,
                                                num_samples=per_draw.num_samples)
    else:
        elements = max(m * k * d, 2 * cells_bound)
    group = 1 if per_draw is None else per_draw.rate_draws
    merged, columns = None, d
    if per_draw is None and not utilities_drawn:
        # Fixed utilities: the cells of equal utility merge (ecjax.prob.aggregation); the blocks hold their draws.
        merged = _merged_source(source(np.asarray(prior, np.float64)), np.asarray(prior, np.float64), alpha)
        if merged.columns:
            elements, columns = merged.elements, merged.columns
    plan = plan_draws(num_draws, elements + k * columns, chunk_size, utility_cells=k * columns, group=group)

    def sample_u(b):
        return prior.sample(random_bits.fold_in(key_u, b), plan.block)

    def sample_p(b):
        kb = random_bits.fold_in(key_p, b)
        if deployment_uncertain:
            return class_priors.sample(kb, plan.block)
        return sample_class_priors(kb, None, v.to_device(class_counts, f), num_draws=plan.block,
                                   concentration=default_class_concentration(k))

    u_hat, u_method = _expected_utilities(prior, plan, sample_u)
    p_bar = _expected_priors(class_priors, class_counts)
    joint_priors = class_priors is None and joint
    data_priors_drawn = class_priors is None and not joint  # the unpaired model's test-set frequencies
    inputs = _Inputs(sample_u if utilities_drawn else None,
                     sample_p if (deployment_uncertain or data_priors_drawn) else None, data_priors_drawn)
    # A certain source leaves no doubt: its component is not reported (doubt exactly 0).
    sources = (("costs_only", utilities_drawn), ("priors_only", deployment_uncertain), ("rates_only", True))
    components = tuple(name for name, uncertain in sources if decompose and uncertain)
    data = {"u_hat": v.to_device(u_hat, f), "p_bar": v.to_device(p_bar, f)}
    model = _Model("", m, k, d, float(alpha), plan.block, joint_priors, bool(decompose), components=components)
    if per_draw is None:
        src = source(u_hat) if merged is None else merged
        if merged is None:
            src = _occupied_source(src, u_hat, p_bar, alpha, joint_priors)
            if src.kind in _CELL_KINDS and u_method != "monte_carlo":
                # Blocks sized by the occupied cells (U_hat came from no draw of the former plan's blocks), of an
                # even number of draws: the utility draws then join their hashes' halves along the draws
                # (ecjax.random_bits.uniform), 7 times faster at 1000 x 1000 on a CPU.
                plan = plan_draws(num_draws, src.elements + k * d, chunk_size, utility_cells=k * d, group=2)
        data.update(src.data)
        if src.mean_weights is None:
            data["num_draws"] = np.int32(num_draws)
        elif "mean_weights" not in data:
            data["mean_weights"] = v.to_device(src.mean_weights, f)
        static_ties = _tie_labels_of(np.asarray(src.counts), np)  # host counts: no program
        model = dataclasses.replace(model, kind=src.kind, num_groups=src.num_groups, num_decisions=columns,
                                    block=plan.block)
        if src.columns:
            info["merged_cells"] = f"{src.columns} utility groups per class (of {d} decisions)"
        if src.kind in _CELL_KINDS:
            lay = data["cell_table"].layout
            info["occupied_cells"] = (f"{data['cell_table'].counts.shape[0]} cell slots and {lay.prior_rows} prior "
                                      f"field(s) of {lay.atoms} atoms a draw (of {m * k * d} rate cells)")
    else:
        data.update(per_draw.data)
        with np.errstate(divide="ignore"):
            data["log_p_decide"] = v.to_device(np.log(p_decide), f)
        per_slab = (m if per_draw.kind == "scores_joint" else 1) * per_draw.num_samples * max(k, d)
        lik = per_draw.likelihood
        model = dataclasses.replace(model, kind=per_draw.kind, score_type=per_draw.score_type, rate_draws=group,
                                    sub_batch=max(1, min(plan.block, _decision_slab() // per_slab)),
                                    all_by_p=lik and inputs.sample_p is not None,
                                    priors_by_p=lik and deployment_uncertain, rates_by_p=lik and data_priors_drawn)
        one = dataclasses.replace(model, block=1, sub_batch=1, rate_draws=1)
        data["hat_counts"] = _draw_counts(data, one, data["u_hat"], data["log_p_decide"])[0]
        static_ties = None

    host, mean_sum = _run_draws(model, plan, data, key_all, key_rates, inputs, progress)
    yields = host["yields"]
    if per_draw is not None:
        expected_yield, method = yields.mean(0, dtype=np.float64), "Monte Carlo"
    else:
        mean_w, method = src.mean_weights, "closed form"
        if mean_w is None:
            mean_w, method = mean_sum / num_draws, "Monte Carlo (posterior mean rates from the draws)"
            if decompose:
                data["mean_weights"] = v.to_device(mean_w, f)
                model2 = dataclasses.replace(model, fixed_point_only=True)
                host.update(_run_draws(model2, plan, data, key_all, key_rates, inputs, progress)[0])
        expected_yield = _closed_form_yield(u_hat, mean_w, p_bar, joint_priors)
    rec = int(np.argmax(expected_yield))
    yields_j = v.to_device(yields)
    summary = ranking.summarize(key_rank, yields_j, rope=rope, hdi_prob=hdi_prob)
    fields = ranking.ranking_fields(summary, rope)
    p_tie, errors = None, {"p_best": summary["errors"]["p_best"]}
    if per_draw is not None:
        # Each draw judges its own ties: a draw whose best system decided as another one did is no one's win.
        fields["p_best"], p_tie, errors["p_best"], errors["p_tie"] = _best_or_tied(yields, host["ties_all"])
    p_best = fields["p_best"]
    doubt = None
    if decompose:
        doubt = _doubt(host, yields, p_best, rec, static_ties, per_draw is not None, components, key_d, hdi_prob)
    if per_draw is not None:
        ties_all = host["ties_all"]
        info["recommendation_tied_fraction"] = float(np.mean(np.sum(ties_all == ties_all[:, rec:rec + 1], 1) > 1))
        info.update(_two_stage_info(yields, rec, per_draw, m=m, k=k, d=d, joint=joint))
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
        doubt=doubt,
        info=info,
        ties=() if static_ties is None else _tie_groups(static_ties, systems),
        p_tie=p_tie,
    )
