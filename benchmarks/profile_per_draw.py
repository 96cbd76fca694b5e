"""Where a draw of ``compare``'s per-draw decisions goes (issue 34.3): the pieces of one block, timed alone.

``bench_draws.py --ratio`` gives the total against the bare decision kernel; this script splits one block of
that workload (3 systems x N samples x K classes of logits, uncertain K x K costs, ``PerDraw(rate_draws=1)``)
into the steps ``compare`` runs for it, each jitted alone and timed after a compiling call:

- the Bayes decisions and their counts (``per_draw.scores_counts``), and the bare decision kernel on the same products;
- the Dirichlet rate draws given those counts (``per_draw.per_draw_rates``, the exact Gamma sampler);
- the yields, EC and NEC of the block, and the tie labels;
- the block's utility draws (the interval prior of the costs) and its class-prior draws (the test set's frequencies),
  which the unpaired model draws per block before deciding, with the concentrations on the device (as ``compare``
  passed them before session 20: a device-to-host copy a block) and on the host (as now); both draw a block's
  ``B K`` variates in one unit of the concrete sampler, ``2^12`` variates or, above that, ``2^18``
  (``ecjax._src.prob.sampling.SMALL_UNIT``): the fixed cost a block of the class priors measured on the H100;
- the whole block as ``compare`` runs it on an accelerator, one compiled program (``per_draw.block_program`` with
  ``per_draw.one_program`` true, decisions to yields; a CPU's ``compare`` runs the steps one by one), and as a CPU's
  ``compare`` runs it, step by step;
- ``G`` blocks in one program (``per_draw.blocks_per_program``, as an accelerator's ``compare`` runs 4000 draws),
  and the class priors of ``G`` blocks in one program (a tuple of keys).

Then ``compare`` per draw with its blocks grouped as this backend groups them and one block a program, and with
``--trace DIR`` a ``jax.profiler`` trace of one ``compare`` call, summarized by ``trace_summary.py`` (the device's
busy and idle time, and what the host did while the device waited).

It does so for each path of the Gamma sampler (``PATHS``: a CPU's work queue of 4096 proposals an iteration; on an
accelerator the same queue replayed in a few rounds, every block at once: the same draws), then times ``compare`` itself per draw with each, so that the effect of the sampler's
loop on the device shows directly.

    python benchmarks/profile_per_draw.py [--shape N K] [--draws S] [--trace DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import trace_summary  # noqa: E402
from bench_draws import best_seconds  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from ecjax import prob  # noqa: E402
from ecjax._src import random_bits  # noqa: E402
from ecjax._src.draw_runner import plan_blocks  # noqa: E402
from ecjax._src.decisions import bayes_decisions_kernel  # noqa: E402
from ecjax._src.prob import sampling  # noqa: E402
from ecjax._src.prob.rates import default_class_concentration, sample_class_priors  # noqa: E402
from ecjax._src.prob.utility_priors import as_utility_prior  # noqa: E402

from ecjax._src.prob.draw_models import outputs as outputs_model, per_draw as per_draw_model  # noqa: E402
from ecjax._src.prob.draw_models.protocol import BlockDraws, Centre  # noqa: E402

# The Gamma sampler's paths (both draw the same numbers): a CPU's work queue (4096 proposals an iteration), and on an
# accelerator the same queue replayed in rounds of a loop, every block at once.  (Session 19 also tried its first 8
# rounds unrolled, to spare the loop's predicate copies: on an H100 compare took 0.144 against 0.124 ms a draw, as
# each unrolled round works on every variate of the block; removed.)
PATHS = {"CPU sampler path": False, "accelerator sampler path": True}


def use(accelerator):
    sampling._on_accelerator = lambda: accelerator
    jax.clear_caches()  # the path is chosen while tracing


def best_ms(run, repeats=3):
    return 1e3 * best_seconds(run, repeats)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", type=int, nargs=2, default=None, metavar=("N", "K"))
    p.add_argument("--draws", type=int, default=None, help="draws of the timed compare calls")
    p.add_argument("--block", type=int, default=128,
                   help="draws in the block whose steps are timed (a multiple of 16: the bare kernel takes 16 a batch)")
    p.add_argument("--trace", default=None, metavar="DIR", help="write a jax.profiler trace of one compare call there")
    args = p.parse_args()
    on_cpu = jax.devices()[0].platform == "cpu"
    n, k = args.shape or ((2000, 20) if on_cpu else (10_000, 100))
    num_draws = args.draws or (500 if on_cpu else 4000)
    b, m = args.block, 3
    rng = np.random.default_rng(0)
    labels = rng.integers(0, k, n)
    scores = [(rng.normal(size=(n, k)) + 3.0 * q * np.eye(k)[labels]).astype(np.float32) for q in (1.0, 0.98, 0.96)]
    off = 1 - np.eye(k)
    print(f"machine: {_common.machine()}")
    print(f"workload: {m} systems x {n} samples x {k} classes, uncertain {k} x {k} costs; block of {b} draws; "
          f"compare timed on {num_draws} draws")

    log_scores = jnp.asarray(np.stack(scores))
    lab = jnp.asarray(np.broadcast_to(labels, (m, n)))
    costs = jnp.asarray(rng.uniform(0.5, 2.0, (b, k, k)) * off, jnp.float32)
    log_p = jnp.zeros((b, k), jnp.float32) - np.log(k)
    sub_batch = max(1, min(b, per_draw_model.decision_slab() // (m * n * k)))
    counts = per_draw_model.scores_counts(log_scores, log_p, lab, costs, score_type="logits", num_classes=k,
                                        num_decisions=k, paired=False, batch_size=sub_batch)
    log_post = jax.nn.log_softmax(log_scores, -1)
    kernel = jax.jit(lambda lp, c: jax.lax.map(lambda cb: bayes_decisions_kernel(lp[None], cb[:, None]),
                                               c.reshape(-1, 16, k, k)))
    u = -costs
    p = jnp.full((b, k), 1.0 / k)
    outputs = jax.jit(lambda u, w, p: outputs_model.all_outputs(u, w, p, joint_priors=False))
    ties = outputs_model.tie_labels
    interval = prob.intervals(0.5 * off, 2.0 * off, kind="cost")
    utility_prior = as_utility_prior(interval)
    class_counts = jnp.asarray(np.bincount(labels, minlength=k), jnp.float32)
    host_counts = np.bincount(labels, minlength=k).astype(np.float32)
    state = per_draw_model.PerDrawState(tuple(log_scores), (jnp.asarray(labels),) * m, None, log_p[0], "logits", False,
                                        False, k, k, 1.0, n, 1,  # compare decides one unpaired system at a time
                                        sub_batch=max(1, min(b, per_draw_model.decision_slab() // (n * k))))
    centre = Centre(jnp.mean(u, 0), p[0], None)
    key = jax.random.key(1)

    def one_block(as_one_program):
        chosen = per_draw_model.one_program
        per_draw_model.one_program = lambda backend=None: as_one_program
        try:
            return per_draw_model.block_program(key, key, state, BlockDraws(u, p, p), centre, joint_priors=False,
                                                block=b, decompose=False)
        finally:
            per_draw_model.one_program = chosen

    # As an accelerator's compare groups the blocks of 4000 draws.
    groups = per_draw_model.blocks_per_program(plan_blocks(4000, b), "gpu")
    group_keys = random_bits.fold_in_stacked((key,) * groups, range(groups))
    group_draws = BlockDraws(*(jnp.concatenate([x] * groups) for x in (u, p, p)))
    prior_keys = tuple(random_bits.fold_in(key, i) for i in range(groups))

    def one_group():
        return per_draw_model.block_program(group_keys, group_keys, state, group_draws, centre, joint_priors=False,
                                            block=groups * b, decompose=False, groups=groups)

    rows = []
    traced = "no trace taken"
    for name, settings in PATHS.items():
        use(settings)
        steps = {
            f"decisions + counts (per_draw.scores_counts, sub-batch {sub_batch})": lambda: per_draw_model.scores_counts(
                log_scores, log_p, lab, costs, score_type="logits", num_classes=k, num_decisions=k, paired=False,
                batch_size=sub_batch),
            "bare decision kernel (16 draws a batch)": lambda: kernel(log_post, costs),
            "rate draws given the counts (per_draw.per_draw_rates)": lambda: per_draw_model.per_draw_rates(
                key, counts, 1.0, small_shapes=False),
            "yields, EC, NEC (outputs.all_outputs)": lambda: outputs(u, per_draw_model.per_draw_rates(
                key, counts, 1.0, small_shapes=False), p),
            "tie labels": lambda: ties(counts),
            "utility draws (interval prior of the costs)": lambda: utility_prior.sample(key, b),
            "class-prior draws (test-set frequencies, concentrations on the device)": lambda: sample_class_priors(
                key, None, class_counts, num_draws=b, concentration=default_class_concentration(k)),
            f"class-prior draws (concentrations on the host; {b * k} variates in a unit of "
            f"{sampling.SMALL_UNIT if b * k <= sampling.SMALL_UNIT else 1 << 18})": lambda: sample_class_priors(
                key, None, host_counts, num_draws=b, concentration=default_class_concentration(k)),
            "whole block, one program (per_draw.block_program on an accelerator: decisions to yields and ties)":
                lambda: one_block(True),
            "whole block, step by step (per_draw.block_program on a CPU)": lambda: one_block(False),
            f"{groups} blocks in one program (per_draw.block_program, groups={groups}), a block's share": one_group,
            f"class-prior draws of {groups} blocks in one program (a tuple of keys), a block's share":
                lambda: sample_class_priors(prior_keys, None, host_counts, num_draws=b,
                                            concentration=default_class_concentration(k)),
        }
        for step, run in steps.items():
            share = groups if "a block's share" in step else 1
            rows.append((name, step, best_ms(run) / (b * share)))
        systems = prob.Systems(labels, scores=scores, score_type="logits", decision_rule=prob.PerDraw(rate_draws=1),
                               paired=False)
        settings_mc = prob.MonteCarloSettings(num_draws=num_draws)

        def call():
            return prob.compare(systems, costs=interval, key=jax.random.key(0), decompose=False,
                                settings=settings_mc).yields

        grouping = per_draw_model.blocks_per_program
        for label, blocks_per_program in (("blocks grouped as on this backend", grouping),
                                          ("one block a program", lambda plan, backend=None: 1)):
            per_draw_model.blocks_per_program = blocks_per_program
            try:
                ms = best_ms(call, repeats=2)
            finally:
                per_draw_model.blocks_per_program = grouping
            rows.append((name, f"prob.compare per draw ({num_draws} draws, {label})", ms / num_draws))
        if args.trace and settings == (not on_cpu):  # the sampler path of this backend
            with jax.profiler.trace(args.trace, create_perfetto_trace=True):
                jax.block_until_ready(call())
            traced = trace_summary.summarize(args.trace)
    print("| sampler path | step | ms per draw |")
    print("|---|---|---|")
    for name, step, ms in rows:
        print(f"| {name} | {step} | {ms:.4f} |")
    print("(the yields row includes a rate draw: subtract the row above it)")
    if args.trace:
        print(f"\n### One compare call of {num_draws} draws, traced ({args.trace})\n")
        print(traced)


if __name__ == "__main__":
    main()
