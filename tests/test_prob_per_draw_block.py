"""Per-draw decisions run a block as one compiled program (issue 34.3): the numbers of the block's steps run one by
one, several blocks in one program giving each block's draws, no per-block host copy of the class priors'
concentrations, and the accelerator's decision slab changing no draw.  (The posterior these draws follow is checked
against numpy in ``test_prob_compare_rate_draws.py``.)"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from ecjax import prob
from ecjax._src import random_bits
from ecjax._src.draw_runner import plan_blocks
from ecjax._src.inputs import is_tracer
from ecjax._src.prob import draw_plan, sampling
from ecjax._src.prob.draw_models import per_draw
from ecjax._src.prob.draw_models.protocol import BlockDraws, Centre

K, N, B = 3, 50, 12
compare_mod = importlib.import_module("ecjax._src.prob.compare")  # ecjax.prob.compare is the function


def _state(paired, weighted, rate_draws):
    rng = np.random.default_rng(1)
    y = rng.integers(0, K, N)
    scores = np.stack([rng.normal(size=(N, K)) + 2.0 * q * np.eye(K)[y] for q in (1.0, 0.7)]).astype(np.float32)
    w = rng.uniform(0.5, 2.0, N).astype(np.float32) if weighted else None
    if paired:
        arrays = dict(log_scores=jnp.asarray(scores), labels=jnp.asarray(np.stack([y, y])),
                      weights=None if w is None else jnp.asarray(w))
    else:
        arrays = dict(log_scores=tuple(jnp.asarray(x) for x in scores), labels=(jnp.asarray(y),) * 2,
                      weights=None if w is None else (jnp.asarray(w),) * 2)
    state = per_draw.PerDrawState(**arrays, log_p_decide=jnp.full(K, -np.log(K), jnp.float32), score_type="logits",
                                  likelihood=False, paired=paired, num_classes=K, num_decisions=K, alpha=0.5,
                                  num_samples=N, rate_draws=rate_draws, sub_batch=5)
    u_hat = jnp.asarray(-(1 - np.eye(K)), jnp.float32)
    hat = per_draw.decide(state, u_hat, state.log_p_decide, num_draws=1, sub_batch=1)[0]
    u = jnp.asarray(-rng.uniform(0.5, 2.0, (B, K, K)) * (1 - np.eye(K)), jnp.float32)
    p = jnp.asarray(rng.dirichlet(np.full(K, 20.0), B), jnp.float32)
    return state._replace(hat_counts=hat), BlockDraws(u, p, p), Centre(u_hat, jnp.full(K, 1.0 / K), None)


@pytest.mark.parametrize("paired, weighted, rate_draws", [(False, True, 4), (True, True, 2)])
def test_one_program_gives_the_numbers_of_the_steps_one_by_one(paired, weighted, rate_draws, monkeypatch):
    monkeypatch.setattr(per_draw, "one_program", lambda backend=None: True)  # the accelerator's path, on this CPU
    state, draws, centre = _state(paired, weighted, rate_draws)
    keys = jax.random.key(3), jax.random.key(4)
    kw = dict(joint_priors=paired, block=B, decompose=True)
    steps = per_draw.block_outputs(*keys, state, draws, centre, **kw)  # eager: one dispatch per step
    program = per_draw.block_program(*keys, state, draws, centre, **kw)
    assert program.keys() == steps.keys()
    for name, x in steps.items():
        _close(np.asarray(x), np.asarray(program[name]), name)


def _close(x, y, name):
    if name.startswith("ties"):
        np.testing.assert_array_equal(y, x, err_msg=name)  # the decisions: the same in every draw
    else:  # the same draws, summed in another order inside one program: float32 rounding
        eps = np.finfo(np.float32).eps
        np.testing.assert_allclose(y, x, rtol=4 * eps, atol=eps, err_msg=name)


def test_blocks_in_one_program_give_each_block_its_own_draws(monkeypatch):
    # Paired with sample weights and two rate draws per decision: every key-dependent step (the Gamma(w_n) weights,
    # the rate draws, the spread of one decision over its rate draws) is per block inside the group.
    monkeypatch.setattr(per_draw, "one_program", lambda backend=None: True)
    state, draws, centre = _state(True, True, 2)
    groups, kw = 3, dict(joint_priors=True, decompose=True)
    keys = [(random_bits.fold_in(jax.random.key(3), b), random_bits.fold_in(jax.random.key(4), b))
            for b in range(groups)]
    rng = np.random.default_rng(5)
    per_block = [BlockDraws(*(jnp.asarray(np.asarray(x)[rng.permutation(B)]) for x in draws)) for _ in range(groups)]
    alone = [per_draw.block_outputs(*k, state, d, centre, block=B, **kw) for k, d in zip(keys, per_block)]
    stacked = tuple(random_bits.fold_in_stacked((base,) * groups, range(groups))
                    for base in (jax.random.key(3), jax.random.key(4)))
    together = per_draw.block_program(*stacked, state, BlockDraws(*map(jnp.concatenate, zip(*per_block))), centre,
                                      block=groups * B, groups=groups, **kw)
    assert together.keys() == alone[0].keys()
    for name in together:
        _close(np.concatenate([np.asarray(a[name]) for a in alone]), np.asarray(together[name]), name)


def test_stacked_keys_and_their_draws_are_each_keys_alone():
    base = jax.random.key(7)
    stacked = random_bits.fold_in_stacked((base,) * 3, (0, 5, 2**31))
    expected = jnp.stack([jax.random.fold_in(base, d) for d in (0, 5, 2**31)])
    np.testing.assert_array_equal(jax.random.key_data(stacked), jax.random.key_data(expected))
    raw = jax.random.PRNGKey(7)  # raw uint32 keys stay raw
    np.testing.assert_array_equal(random_bits.fold_in_stacked((raw, raw), (1, 2)),
                                  jnp.stack([jax.random.fold_in(raw, 1), jax.random.fold_in(raw, 2)]))
    keys = tuple(random_bits.fold_in(base, b) for b in range(3))
    # One unit of 2^12, and two units of 2^18.
    for rows, size in ((30, 100), (3000, 100)):
        conc = np.random.default_rng(size).uniform(0.1, 5.0, size).astype(np.float32)
        together = np.asarray(sampling.dirichlet_draws(keys, conc, rows))
        alone = np.concatenate([np.asarray(sampling.dirichlet_draws(k, conc, rows)) for k in keys])
        # The batched loop's compiled arithmetic rounds some variates differently in the last bits: a few float32
        # ulps, times 1 / a where a shape a < 1 takes Gamma(a + 1) U^(1/a) (here a >= 0.1).
        np.testing.assert_allclose(together, alone, rtol=40 * np.finfo(np.float32).eps, err_msg=str((rows, size)))
        if rows == 30:  # the draws of a key do not depend on how many keys share the program
            np.testing.assert_array_equal(np.asarray(sampling.dirichlet_draws(keys[:2], conc, rows)),
                                          together[:2 * rows])


def test_blocks_per_program_are_at_most_sixteen_and_even_whatever_the_chunk():
    assert per_draw.blocks_per_program(plan_blocks(10_000, 100, 8), "cpu") == 1
    for draws, block, expected in ((4000, 128, 16), (1000, 128, 8), (17 * 128, 128, 9), (128, 128, 1),
                                   (33 * 128, 128, 11)):
        for per_chunk in (1, 5, 64):
            plan = plan_blocks(draws, block, per_chunk)
            groups = per_draw.blocks_per_program(plan, "gpu")
            assert groups == expected, (draws, block, per_chunk, groups)
            # Fewer than ceil(n / 16) blocks drawn beyond the last.
            assert -(-plan.num_blocks // groups) * groups - plan.num_blocks < -(-plan.num_blocks // 16)


def test_an_accelerator_runs_each_block_traced_a_cpu_step_by_step_with_the_class_priors_from_the_host(monkeypatch):
    assert per_draw.one_program("gpu") and per_draw.one_program("tpu") and not per_draw.one_program("cpu")
    traced, counts_types, groups = [], [], []
    outputs, sample, program = per_draw.block_outputs, compare_mod.sample_class_priors, per_draw.block_program
    # Blocks of 12 draws: 10 blocks of 120 draws, in chunks of 40 draws; an accelerator runs them as one program of
    # 10 blocks (programs do not depend on the chunk: a chunk then holds one).
    monkeypatch.setattr(draw_plan, "_BLOCK_ELEMENTS", 12 * (2 * K * K + K * K))

    def spy_outputs(key_all, *args, **kw):
        traced.append(is_tracer(key_all))
        return outputs(key_all, *args, **kw)

    def spy_program(*args, **kw):
        groups.append(kw["groups"])
        return program(*args, **kw)

    def spy_sample(key, priors, class_counts, **kw):
        counts_types.append(type(class_counts))
        return sample(key, priors, class_counts, **kw)

    monkeypatch.setattr(per_draw, "block_outputs", spy_outputs)
    monkeypatch.setattr(compare_mod, "sample_class_priors", spy_sample)
    monkeypatch.setattr(per_draw, "block_program", spy_program)
    state, _, _ = _state(False, False, 1)
    y = np.asarray(state.labels[0])
    systems = prob.Systems(y, scores=[np.asarray(x) for x in state.log_scores], decision_rule=prob.PerDraw(1),
                           score_type="logits", paired=False)
    costs = prob.intervals(0.5 * (1 - np.eye(K)), 2.0 * (1 - np.eye(K)), kind="cost")
    results = {}
    for accelerator in (True, False):
        monkeypatch.setattr(per_draw, "one_program", lambda backend=None, a=accelerator: a)
        traced.clear(), groups.clear()
        # Settings of no other test (the concentration): the one program is traced here, not found compiled.
        results[accelerator] = prob.compare(systems, costs=costs, key=jax.random.key(0), concentration=0.371,
                                            settings=prob.MonteCarloSettings(num_draws=120, chunk_size=40))
        assert results[accelerator].info["draw_block"] == 12
        # An accelerator traces the steps of 10 blocks into one program; a CPU dispatches them one by one.
        assert traced and all(t == accelerator for t in traced), (accelerator, traced)
        assert groups == ([10] if accelerator else [1] * 10)
    # The concentrations of the test set's class frequencies reach the sampler on the host: no device-to-host copy,
    # a wait on a GPU, a block.
    assert counts_types and all(t is np.ndarray for t in counts_types)
    # The same draws either way: the rankings exactly, the yields to float32 rounding of their fused sums.
    np.testing.assert_array_equal(results[True].p_best, results[False].p_best)
    eps = np.finfo(np.float32).eps
    np.testing.assert_allclose(results[True].yields, results[False].yields, rtol=4 * eps, atol=eps)


def test_the_accelerator_slab_decides_more_draws_at_once_and_changes_no_draw(monkeypatch):
    assert per_draw.decision_slab("cpu") < per_draw.decision_slab("gpu") == per_draw.decision_slab("tpu")
    state, _, _ = _state(True, False, 1)
    y = np.asarray(state.labels[0])
    systems = prob.Systems(y, scores=list(np.asarray(state.log_scores)), decision_rule=prob.PerDraw(1), paired=True,
                           score_type="logits")
    costs = prob.intervals(0.5 * (1 - np.eye(K)), 2.0 * (1 - np.eye(K)), kind="cost")
    program, slab, seen = per_draw.block_program, per_draw.decision_slab, []

    def spy(key_all, key_rates, s, *args, **kw):
        seen.append(s.sub_batch)
        return program(key_all, key_rates, s, *args, **kw)

    monkeypatch.setattr(per_draw, "block_program", spy)
    yields = {}
    for backend in ("cpu", "gpu"):
        monkeypatch.setattr(per_draw, "decision_slab", lambda backend=backend: slab(backend))
        res = prob.compare(systems, costs=costs, key=jax.random.key(2), decompose=False,
                           settings=prob.MonteCarloSettings(num_draws=600))
        yields[backend] = np.asarray(res.yields)
    block = res.info["draw_block"]
    per_slab = 2 * N * K  # (systems, samples, classes) of one paired draw
    assert seen[0] == min(block, slab("cpu") // per_slab) < seen[-1] == min(block, slab("gpu") // per_slab)
    np.testing.assert_array_equal(yields["gpu"], yields["cpu"])
