"""Per-draw decisions: each draw makes the Bayes decisions of its own utility matrix (and, for likelihood-type
scores, its own priors), then draws the rates given their counts.

``decide`` gives a block's counts ``(B, M, K, D)`` (unpaired) or, paired, the decisions themselves ``(B, M, N)``:
the paired posterior needs which samples each pair of systems gets right together (``O(M N)`` per draw rather than a
table of ``K D^M`` joint cells).  ``draw_given`` draws the posterior weights given them: independent Dirichlet rates
(unpaired), or :mod:`~ecjax._src.prob.paired` eq. (1) from the decisions.  With ``rate_draws = r > 1`` a block holds
``B / r`` utility draws, each repeated for ``r`` consecutive draws: their decisions are made once and ``r`` rate
draws follow (:class:`~ecjax.prob.PerDraw`).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple, cast

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.backends import on_accelerator
from ecjax._src.confusion import confusion_counts
from ecjax._src.decisions import bayes_decisions_kernel, log_posteriors_kernel
from ecjax._src.draw_runner import DrawPlan, padded_map
from ecjax._src.prob import paired as paired_mod
from ecjax._src.prob.draw_models.outputs import all_outputs, component_yield, tie_labels
from ecjax._src.prob.draw_models.protocol import BlockDraws, Centre
from ecjax._src.prob.draw_plan import per_draw_cost_ratio
from ecjax._src.prob.sampling import dirichlet

# One (draws, systems, samples, classes) slab of the per-draw Bayes decisions holds at most this many elements:
# on a CPU a slab that stays in cache (2^17 floats, 512 KiB; 2^24 made 3 x 2000 x 20 x 20 decisions 4 times slower:
# 3.1 against 0.8 ms a draw, benchmarks/bench_draws.py --ratio), on an accelerator large products.
# On an accelerator each batch is an iteration of a loop whose predicate goes to the host (~0.1 ms on an H100,
# whatever its size): 2^26 floats (256 MiB) make one block of 10^4 x 100 decisions 2 batches a system, not 7.
_DECISION_ELEMENTS_CPU = 1 << 17
_DECISION_ELEMENTS_ACCELERATOR = 1 << 26


def decision_slab(backend: str | None = None) -> int:
    """The most elements of one slab of per-draw decisions on ``backend`` (default: this one; see the constants)."""
    return _DECISION_ELEMENTS_ACCELERATOR if on_accelerator(backend) else _DECISION_ELEMENTS_CPU


class PerDrawState(NamedTuple):
    """Scores whose Bayes decisions are made again in every draw, on the device, and the rule of their draws.

    ``log_scores``/``labels``/``weights``: ``(M, N, K)``, ``(M, N)``,
    ``(N,)`` paired; per system (tuples) unpaired; ``weights`` ``None``
    without sample weights.  ``log_p_decide``: ``(K,)`` the log priors with
    which likelihood-type scores decide at ``E[P]``; ``hat_counts``: the
    counts of ``U_hat``'s decisions (the fixed point of the doubt
    components).  ``rate_draws``: draws per set of decisions;
    ``num_samples``: the largest ``N``; ``sub_batch``: draws decided at
    once.  The ``*_by_p`` flags: with likelihood-type scores, the decisions
    of that component use its drawn priors.
    """

    log_scores: tuple | jax.Array
    labels: tuple | jax.Array
    weights: tuple | jax.Array | None
    log_p_decide: jax.Array
    score_type: str
    likelihood: bool
    paired: bool
    num_classes: int
    num_decisions: int
    alpha: float
    num_samples: int
    rate_draws: int
    hat_counts: jax.Array | None = None
    sub_batch: int = 1
    all_by_p: bool = False
    priors_by_p: bool = False
    rates_by_p: bool = False


@partial(jax.jit, static_argnames=("score_type", "num_classes", "num_decisions", "paired", "batch_size"))
def scores_counts(log_scores: jax.Array, log_prior_draws: jax.Array, labels: jax.Array, costs: jax.Array,
                  weights: jax.Array | None = None, *, score_type: str, num_classes: int, num_decisions: int,
                  paired: bool, batch_size: int) -> jax.Array:
    """Each draw's Bayes decisions: their counts ``(S, M, K, D)`` (unpaired) or the decisions ``(S, M, N)`` (paired).

    ``log_scores``: ``(M, N, K)`` (or ``(M, N)`` llr); ``costs``: ``(S, K, D)``
    (one block of draws); ``log_prior_draws``: ``(S, K)`` used by
    likelihood-type scores; ``weights``: ``(M, N)`` sample weights of the
    unpaired counts (``None``: each sample counts 1).  Draws are processed
    ``batch_size`` at a time to bound the ``(batch, M, N, D)``
    intermediate; each draw's counts are summed alone, so the batch size
    changes no number.
    """
    # Posterior-type scores decide with the priors they carry: their log posteriors are the same for every draw,
    # computed once, and each batch of cost draws is one product with them.
    shared = None if score_type in v.LIKELIHOOD_TYPES else log_posteriors_kernel(
        log_scores, None, score_type)[None]  # type: ignore[arg-type]  # posterior-type scores take no priors

    def one_chunk(args):
        c, lp = args
        log_post = shared if shared is not None else log_posteriors_kernel(log_scores[None], lp[:, None], score_type)
        dec = bayes_decisions_kernel(log_post, c[:, None])  # (B, M, N): decisions follow the drawn costs
        if not paired:
            return confusion_counts(labels, dec, weights, num_classes=num_classes, num_decisions=num_decisions)
        return dec.astype(jnp.int32)

    return padded_map(one_chunk, (costs, log_prior_draws), batch_size)


@partial(jax.jit, static_argnames=("small_shapes",))
def per_draw_rates(key: jax.Array, counts: jax.Array, concentration: float, *, small_shapes: bool) -> jax.Array:
    """``(B, M, K, D)`` Dirichlet rates given each draw's counts."""
    # Jitted as a whole (the sampler compiled once per block shape): called with concrete counts the sampler would
    # copy every block's (B, M, K, D) counts to the host and back to tile them into its fixed units, a round trip
    # per block that took 3-5 times the draws themselves (CPU, 3 systems x 100 x 100: 11.6 against 3.6 ms a draw).
    return dirichlet(key, counts.astype(jnp.result_type(float)) + concentration, small_shapes=small_shapes)


def decide(state: PerDrawState, utilities: jax.Array, log_priors: jax.Array, *, num_draws: int,
           sub_batch: int) -> jax.Array:
    """The Bayes decisions for ``utilities`` ``(B, K, D)``: their counts ``(B, M, K, D)`` or, paired, ``(B, M, N)``."""
    b, k, d = num_draws, state.num_classes, state.num_decisions
    costs = jnp.broadcast_to(-utilities, (b, k, d))
    log_priors = jnp.broadcast_to(log_priors, (b, k))
    kw = dict(score_type=state.score_type, num_classes=k, num_decisions=d, batch_size=sub_batch)
    if state.paired:
        return scores_counts(state.log_scores, log_priors, state.labels, costs, paired=True, **kw)
    # One system at a time: unpaired test sets may differ in size.
    weights = (None,) * len(state.labels) if state.weights is None else state.weights
    return jnp.concatenate([scores_counts(s[None], log_priors, lab[None], costs, None if w is None else w[None],
                                          paired=False, **kw)
                            for s, lab, w in zip(state.log_scores, state.labels, weights)], 1)


@partial(jax.jit, static_argnames=("num_classes", "num_decisions"))
def _paired_counts(labels, decisions, weights, *, num_classes, num_decisions):
    return confusion_counts(labels, decisions, weights, num_classes=num_classes, num_decisions=num_decisions)


def marginal_counts(state: PerDrawState, counts: jax.Array) -> jax.Array:
    """Per-system counts ``(B, M, K, D)`` of one block's decisions (paired: from the decisions themselves)."""
    if state.paired:
        return _paired_counts(state.labels, counts, state.weights, num_classes=state.num_classes,
                              num_decisions=state.num_decisions)
    return counts


def posterior_mean(state: PerDrawState, counts: jax.Array) -> jax.Array:
    """Posterior mean weights ``n_m,ij + alpha`` of per-draw counts."""
    return marginal_counts(state, counts) + jnp.asarray(state.alpha, jnp.result_type(float))


def draw_given(key: jax.Array, state: PerDrawState, counts: jax.Array,
               sample_gammas: jax.Array | None = None, *, groups: int = 1) -> jax.Array:
    """``(B, M, K, D)`` posterior weights given a block's :func:`decide` output.

    ``sample_gammas``: paired with sample weights, the block's
    :func:`~ecjax._src.prob.paired.weight_gammas` of ``key`` when already drawn.
    ``groups``: ``G > 1`` blocks in a row (``B = G b``), ``key`` their
    ``(G,)`` keys: each block's draws from its own key, as if drawn alone.
    """
    if groups > 1:
        def by_block(x):
            return None if x is None else x.reshape((groups, -1) + x.shape[1:])

        w = jax.vmap(lambda k, c, e: draw_given(k, state, c, e))(key, by_block(counts), by_block(sample_gammas))
        return w.reshape((-1,) + w.shape[2:])
    if state.paired:
        # Eq. (1) of ecjax._src.prob.paired from the decisions: memory O(M (N + K D)) per draw, whatever K D**M.
        return paired_mod.joint_confusions_per_draw_kernel(key, state.labels[0], counts, state.alpha,
                                                           num_classes=state.num_classes,
                                                           num_decisions=state.num_decisions,
                                                           sample_weight=cast(jax.Array | None, state.weights),
                                                           sample_gammas=sample_gammas)
    return per_draw_rates(key, counts, state.alpha, small_shapes=0 < state.alpha < 1)


def block_outputs(key_all: jax.Array, key_rates: jax.Array, state: PerDrawState, draws: BlockDraws, centre: Centre,
                  *, joint_priors: bool, block: int, decompose: bool,
                  sample_gammas: tuple[jax.Array | None, jax.Array | None] = (None, None),
                  groups: int = 1) -> dict[str, jax.Array]:
    """All outputs of a block, ``(B, M)`` each: yield / EC / NEC draws, the tie labels and the doubt components.

    ``costs_only`` uses ``(U_s, E[P], the mean weights of U_s's decisions)``,
    ``priors_only`` ``(U_hat, P_s, those of U_hat's)``, ``rates_only``
    ``(U_hat, P_rates, rates drawn given U_hat's decisions)``; each
    component's decisions and ties are its own.  ``sample_gammas``: the
    paired weighted data part of ``key_all``'s and ``key_rates``' draws
    (:func:`draw_given`), or ``None``.  ``groups``: the draws are ``G``
    blocks in a row, the keys theirs (:func:`draw_given`); every other step
    treats each draw alone, so a group gives its blocks' draws.
    """
    u, p_all, p_rates = draws
    u_hat, p_bar = centre.utilities, centre.priors
    out = {}
    lp_bar, hat = state.log_p_decide, state.hat_counts
    r = state.rate_draws
    g = block // r
    decide_draws, decide_batch = (block, state.sub_batch) if r == 1 else (g, min(state.sub_batch, g))

    def component(name, utilities, weights, priors):
        out[name] = component_yield(utilities, weights, priors, joint_priors=joint_priors, block=block)

    def spread(x):
        # g rows (one per group of r draws) repeated r times; of `block` rows, each block's first b / r are those.
        if r == 1:
            return x
        if x.shape[0] == block:
            per = block // groups
            x = x.reshape((groups, per) + x.shape[1:])[:, :per // r].reshape((g,) + x.shape[1:])
        return jnp.repeat(x, r, axis=0, total_repeat_length=block)

    def decide_spread(utilities, log_priors):
        # One decision per group: the groups' first draws (the spread arrays are constant within a group).
        if utilities.ndim == 3:
            utilities = utilities[::r]
        if log_priors.ndim == 2:
            log_priors = log_priors[::r]
        return spread(decide(state, utilities, log_priors, num_draws=decide_draws, sub_batch=decide_batch))

    def per_block(counts):
        return jnp.broadcast_to(counts, (block,) + counts.shape)

    u = spread(u)
    if state.all_by_p:
        p_all = spread(p_all)
    if state.rates_by_p:
        p_rates = spread(p_rates)
    c_all = decide_spread(u, jnp.log(p_all) if state.all_by_p else lp_bar)
    w = draw_given(key_all, state, c_all, sample_gammas[0], groups=groups)
    out["yields"], out["ec"], out["nec"] = all_outputs(u, w, p_all, joint_priors=joint_priors)
    out["ties_all"] = tie_labels(marginal_counts(state, c_all))
    if decompose:
        c = decide_spread(u, lp_bar) if state.all_by_p else c_all
        component("costs_only", u, posterior_mean(state, c), p_bar)
        out["ties_costs_only"] = tie_labels(marginal_counts(state, c))
        c = decide_spread(u_hat, jnp.log(p_all)) if state.priors_by_p else per_block(hat)
        component("priors_only", u_hat, posterior_mean(state, c), p_all)
        out["ties_priors_only"] = tie_labels(marginal_counts(state, c))
        c = decide_spread(u_hat, jnp.log(p_rates)) if state.rates_by_p else per_block(hat)
        component("rates_only", u_hat, draw_given(key_rates, state, c, sample_gammas[1], groups=groups), p_rates)
        out["ties_rates_only"] = tie_labels(marginal_counts(state, c))
    return out


# The arrays of a PerDrawState; its other fields are static settings (one compiled block program per setting).
_STATE_ARRAYS = ("log_scores", "labels", "weights", "log_p_decide", "hat_counts")


def one_program(backend: str | None = None) -> bool:
    """Whether a block runs as one compiled program on ``backend`` (default: this one): on accelerators only.

    On an accelerator the block's thirty-odd programs and eager operations,
    dispatched one by one, cost an H100 about 0.035 ms a draw; as one
    program a draw cost 0.094 ms where it had cost 0.108 (``bench_draws.py
    --ratio``, ``benchmarks/README.md``, sessions 19 and 21).  On a CPU
    dispatch is small next to the work, and one program a configuration
    (decomposed or not, rate draws, block size) costs a compilation of the
    whole block each: four configurations of a binary comparison took 9.2 s
    cold against 5.6 s for the steps, whose programs the configurations
    share, and the same time warm (``tests/test_prob_compare_rate_draws.py``).
    """
    return on_accelerator(backend)


# On an accelerator up to this many blocks run as one program (each block holds at most 2^22 elements, so a
# program at most 2^26 floats of rate draws): the host then waits for the device's loops once a group, not once a
# block (benchmarks/README.md, session 22).
_MAX_BLOCKS_PER_PROGRAM = 16


def blocks_per_program(plan: DrawPlan, backend: str | None = None) -> int:
    """``G``, the blocks of ``plan`` that run in one program (:func:`block_program`): 1 on a CPU (:func:`one_program`).

    On an accelerator at most 16, as even as the blocks allow:
    ``ceil(n / ceil(n / 16))`` of ``n`` blocks, so that fewer than
    ``ceil(n / 16)`` blocks beyond the last are drawn and dropped.  Not a
    function of the chunk size, whose chunks hold whole programs: the
    programs, and so the draws, are the same for every chunk size.  Each
    block keeps its keys; a program of ``G > 1`` blocks draws their Gamma
    variates in a batched loop, whose compiled arithmetic rounds some of
    them differently in the last float32 bits than one block alone.
    """
    if not one_program(backend):
        return 1
    return -(-plan.num_blocks // -(-plan.num_blocks // _MAX_BLOCKS_PER_PROGRAM))


def block_program(key_all: jax.Array, key_rates: jax.Array, state: PerDrawState, draws: BlockDraws, centre: Centre,
                  *, joint_priors: bool, block: int, decompose: bool, groups: int = 1) -> dict[str, jax.Array]:
    """:func:`block_outputs` as one compiled program on an accelerator (:func:`one_program`), step by step on a CPU.

    As one program, the decisions, counts, rate draws, yields and tie labels
    of a block run in one XLA program whose outputs stay on the device.  The
    state's arrays are arguments and its settings static, so every
    comparison of the same shapes and settings shares the program.  The
    decisions and tie labels are those of the steps one by one; the yields,
    EC and NEC may differ by float32 rounding (XLA orders the fused sums its
    own way).  Paired with sample weights, the ``Gamma(w_n)`` sample weights
    are drawn first, by the sampler for concrete shapes (its numbers differ
    from the traced sampler's), and go in.  ``groups``: ``G`` blocks in a
    row in one program (:func:`blocks_per_program`), ``block`` their draws
    and the keys their ``(G,)`` keys.
    """
    arrays = {name: getattr(state, name) for name in _STATE_ARRAYS}
    settings = state._replace(**cast(dict[str, Any], dict.fromkeys(_STATE_ARRAYS)))
    gammas: tuple[jax.Array | None, jax.Array | None] = (None, None)
    if state.paired and state.weights is not None:
        weights = cast(jax.Array, state.weights)  # paired: one (N,) vector

        def weight_gammas(keys):
            if groups == 1:
                return paired_mod.weight_gammas(keys, weights, block)
            return jnp.concatenate([paired_mod.weight_gammas(keys[i], weights, block // groups)
                                    for i in range(groups)])

        gammas = (weight_gammas(key_all), weight_gammas(key_rates) if decompose else None)
    program = _block_program if one_program() else _block_steps
    return program(key_all, key_rates, arrays, draws, centre, gammas, settings=settings, joint_priors=joint_priors,
                   block=block, decompose=decompose, groups=groups)


def _block_steps(key_all, key_rates, arrays, draws, centre, gammas, *, settings, joint_priors, block, decompose,
                 groups):
    return block_outputs(key_all, key_rates, settings._replace(**arrays), draws, centre, joint_priors=joint_priors,
                         block=block, decompose=decompose, sample_gammas=gammas, groups=groups)


_block_program = jax.jit(_block_steps, static_argnames=("settings", "joint_priors", "block", "decompose", "groups"))


def two_stage_info(yields: ArrayLike, rec: int, state: PerDrawState) -> dict:
    """How the draws were shared, and the variance decomposition measured on them (:class:`~ecjax.prob.PerDraw`).

    One-way analysis of variance over the complete groups of ``r``
    consecutive draws (one utility draw each): ``s_w^2`` is the mean
    within-group variance and ``s_b^2 = var(group means) - s_w^2 / r``
    (clipped at 0), for the recommendation's best-indicator and its yield.
    """
    r = state.rate_draws
    yields = np.asarray(yields)
    s, m = yields.shape
    info: dict = {"rate_draws_per_cost_draw": r, "cost_draws": -(-s // r)}
    groups = s // r
    if r < 2 or groups < 2:
        return info
    y = yields[: groups * r].reshape(groups, r, m).astype(np.float64)
    best = (np.argmax(y, -1) == rec).astype(np.float64)
    between, within = {}, {}
    for name, x in (("p_best", best), ("yield", y[..., rec])):
        within[name] = float(np.mean(np.var(x, 1, ddof=1)))
        between[name] = float(max(0.0, np.var(x.mean(1), ddof=1) - within[name] / r))
    ratio = per_draw_cost_ratio(num_systems=m, num_samples=state.num_samples, num_classes=state.num_classes,
                                num_decisions=state.num_decisions, paired=state.paired)
    efficient = {name: (float(np.sqrt(ratio * within[name] / between[name])) if between[name] > 0 else math.inf)
                 for name in within}
    info.update(variance_between_cost_draws=between, variance_within_cost_draws=within,
                efficient_rate_draws=efficient)
    return info
