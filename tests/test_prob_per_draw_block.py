"""Per-draw decisions run a block as one compiled program (issue 34.3): the numbers of the block's steps run one by
one, no per-block host copy of the class priors' concentrations, and the accelerator's decision slab changing no
draw.  (The posterior these draws follow is checked against numpy in ``test_prob_compare_rate_draws.py``.)"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from ecjax import prob
from ecjax._src.inputs import is_tracer
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
        x, y = np.asarray(x), np.asarray(program[name])
        if name.startswith("ties"):
            # The decisions (their tie labels): the same in every draw.
            np.testing.assert_array_equal(y, x, err_msg=name)
        else:
            # The same draws; the yields' sums are fused in another order inside one program: float32 rounding.
            eps = np.finfo(np.float32).eps
            np.testing.assert_allclose(y, x, rtol=4 * eps, atol=eps, err_msg=name)


def test_an_accelerator_runs_each_block_traced_a_cpu_step_by_step_with_the_class_priors_from_the_host(monkeypatch):
    assert per_draw.one_program("gpu") and per_draw.one_program("tpu") and not per_draw.one_program("cpu")
    traced, counts_types = [], []
    outputs, sample = per_draw.block_outputs, compare_mod.sample_class_priors

    def spy_outputs(key_all, *args, **kw):
        traced.append(is_tracer(key_all))
        return outputs(key_all, *args, **kw)

    def spy_sample(key, priors, class_counts, **kw):
        counts_types.append(type(class_counts))
        return sample(key, priors, class_counts, **kw)

    monkeypatch.setattr(per_draw, "block_outputs", spy_outputs)
    monkeypatch.setattr(compare_mod, "sample_class_priors", spy_sample)
    state, _, _ = _state(False, False, 1)
    y = np.asarray(state.labels[0])
    systems = prob.Systems(y, scores=[np.asarray(x) for x in state.log_scores], decision_rule=prob.PerDraw(1),
                           score_type="logits", paired=False)
    costs = prob.intervals(0.5 * (1 - np.eye(K)), 2.0 * (1 - np.eye(K)), kind="cost")
    results = {}
    for accelerator in (True, False):
        monkeypatch.setattr(per_draw, "one_program", lambda backend=None, a=accelerator: a)
        traced.clear()
        # Settings of no other test (the concentration): the one program is traced here, not found compiled.
        results[accelerator] = prob.compare(systems, costs=costs, key=jax.random.key(0), concentration=0.371,
                                            settings=prob.MonteCarloSettings(num_draws=120, chunk_size=40))
        # An accelerator traces the block's steps into one program; a CPU dispatches them one by one.
        assert traced and all(t == accelerator for t in traced), (accelerator, traced)
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
