"""The draw loop of :func:`~ecjax.prob.compare`: one block of any draw model, and the blocks run in chunks.

Block ``b`` of ``B`` draws takes its random numbers from ``fold_in(key, b)`` (utilities, priors and rates each from
their own key), so the numbers are the same for every chunk size; the host loop, its chunks and its progress are
:func:`~ecjax._src.draw_runner.run_blocks`'s.  A block's outputs are ``(B, M)`` draws: yield, EC, NEC, the doubt
components' yields and (per-draw decisions) their tie labels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from ecjax._src import random_bits
from ecjax._src.confusion import rates
from ecjax._src.draw_runner import Block, DrawPlan, ProgressOption, plan_blocks, run_blocks
from ecjax._src.prob.draw_models import occupied, per_draw
from ecjax._src.prob.draw_models.outputs import component_yield, fixed_outputs, masked_sum
from ecjax._src.prob.draw_models.protocol import BlockDraws, Centre, FixedModel


class Run(NamedTuple):
    """Static settings of one run of draws, shared by every model.

    ``joint_priors``: the class priors are the class marginals of the
    paired model's joint weights (the test set's frequencies); else they
    come in as arrays.  ``components``: the doubt components reported (the
    uncertain sources).  ``fixed_point_only``: the second pass of a model
    without a closed-form mean (the components at the Monte Carlo mean
    weights).  Whether a source is uncertain is not static: fixed utilities
    and priors come in broadcast, so one compiled step serves every such
    combination.
    """

    block: int
    num_draws: int
    joint_priors: bool
    decompose: bool
    components: tuple[str, ...] = ()
    fixed_point_only: bool = False
    groups: int = 1


def block_outputs(b: int, keys: tuple[jax.Array, jax.Array], draws: BlockDraws, centre: Centre,
                  model: FixedModel | per_draw.PerDrawState, run: Run) -> dict[str, jax.Array]:
    """All outputs of block ``b``, ``(B, M)`` each: yield / EC / NEC draws and the doubt components.

    Plain Python over jitted kernels (the samplers, the decisions, the
    yields), each compiled once per shape and shared by every comparison
    of that shape, whatever its priors, components or chunk size.
    ``draws``: the block's :class:`BlockDraws` (a certain source broadcast
    at its mean); ``centre``: the :class:`Centre`.  ``model``: a prepared
    :class:`FixedModel` or a :class:`~ecjax._src.prob.draw_models.per_draw.PerDrawState`.
    """
    bsz, jp = run.block, run.joint_priors
    key_all, key_rates = keys
    if run.fixed_point_only:
        mean = centre.mean_weights
        assert mean is not None  # the second pass comes with the first pass's Monte Carlo mean
        return {"costs_only": component_yield(draws.utilities, mean, centre.priors, joint_priors=jp, block=bsz),
                "priors_only": component_yield(centre.utilities, mean, draws.priors, joint_priors=jp, block=bsz)}
    if isinstance(model, per_draw.PerDrawState):
        return per_draw.block_program(key_all, key_rates, model, draws, centre, joint_priors=jp, block=bsz,
                                      decompose=run.decompose, groups=run.groups)
    if isinstance(model.state, occupied.CellsState):
        return occupied.block_outputs(key_all, model.state, draws, centre, joint_priors=jp, block=bsz,
                                      components=run.components if run.decompose else ())
    assert model.draw is not None  # every model of fixed counts but the occupied cells' (above) has its draw
    w = model.draw(key_all, model.state, draws.utilities, draws.priors, num_draws=bsz)
    monte_carlo_mean = model.mean_weights is None
    components: tuple[str, ...] = ()
    if run.decompose:
        # A model without a closed-form mean (clustered) gets its mean weights from a first pass: its other
        # components come in a second.  A certain source's component is not reported (doubt exactly 0): not computed.
        components = ("rates_only",) if monte_carlo_mean else run.components
    out = fixed_outputs(w, draws, centre, None if model.merged is None else model.merged.naive_costs,
                        joint_priors=jp, block=bsz, components=components)
    if monte_carlo_mean:
        # Per-block sums of the weights (P_i R_ij) or of the rates, for their Monte Carlo posterior mean.
        valid = (b * bsz + np.arange(bsz)) < run.num_draws
        out["mean_sum"] = masked_sum(w if jp else rates(w), valid)
    return out


class Inputs(NamedTuple):
    """Per-block draws of the utilities and priors (``None``: fixed at ``U_hat`` / ``E[P]``)."""

    sample_u: Callable[[int], jax.Array] | None  # block b's (B, K, D)
    sample_p: Callable[[range], jax.Array] | None  # the (B, K) of these blocks, concatenated
    rates_use_p: bool  # the rates_only component keeps the drawn priors (the test set's frequencies)


def run_draws(model: FixedModel | per_draw.PerDrawState, run: Run, plan: DrawPlan, centre: Centre,
              keys: tuple[jax.Array, jax.Array], inputs: Inputs,
              progress: ProgressOption) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Per-block utility and prior draws in, ``(S, ...)`` numpy draws and the float64 ``mean_sum`` out.

    The host loop, its chunks and its progress are :func:`~ecjax._src.draw_runner.run_blocks`'s: device memory
    holds one chunk's outputs, and a reporter gets the running yields (``draws_done``) and the measured time left.
    """
    key_all, key_rates = keys
    # Per-draw decisions on an accelerator: G blocks in a row run as one program, each from its own keys.
    groups = per_draw.blocks_per_program(plan) if isinstance(model, per_draw.PerDrawState) else 1
    size = plan.block * groups
    # Broadcast on the host: an eager broadcast would be one more compiled program per shape.
    fixed_u, fixed_p = (jax.device_put(np.broadcast_to(np.asarray(x), (size,) + x.shape))
                        for x in (centre.utilities, centre.priors))

    def folded(key, first):
        return random_bits.fold_in(key, first) if groups == 1 else random_bits.fold_in_stacked(
            (key,) * groups, range(first, first + groups))

    def block(b):  # blocks b G to b G + G - 1
        first = b * groups
        u = fixed_u if inputs.sample_u is None else inputs.sample_u(first) if groups == 1 else jnp.concatenate(
            [inputs.sample_u(first + i) for i in range(groups)])
        p = fixed_p if inputs.sample_p is None else inputs.sample_p(range(first, first + groups))
        out = block_outputs(b, (folded(key_all, first), folded(key_rates, first)),
                            BlockDraws(u, p, p if inputs.rates_use_p else fixed_p), centre, model,
                            run._replace(block=size, groups=groups))
        mean_sum = out.pop("mean_sum", None)
        return Block(draws=out, sums=mean_sum)

    if groups > 1:
        plan = plan_blocks(plan.num_draws, size, plan.blocks_per_chunk // groups)  # whole programs, at least one
    host, mean_sum = run_blocks(block, plan, progress=progress, shown=lambda draws: draws.get("yields"))
    return ({} if host is None else host), mean_sum
