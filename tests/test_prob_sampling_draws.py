"""The samplers' Gamma work queue and repeated draws in blocks (``ecjax._src.prob.sampling``).

References: ``scipy.stats.gamma`` and ``scipy.stats.beta`` (the Dirichlet marginals), and the placement of each
unit's rows written out here.
"""

import numpy as np
import pytest
from scipy import stats

import jax
import jax.numpy as jnp

from ecjax._src.prob import sampling as _sampling

KEY = jax.random.key(7)


# ------------------------------------------------------------ Gamma work queue

@pytest.mark.parametrize("batch", [64, 4096])
def test_gamma_work_queue_is_exact_when_rejections_wrap_around_the_queue(batch):
    # Shapes near 0 are boosted to ~1, where Marsaglia-Tsang rejects ~5 % of proposals: ~1600 of the 2^15
    # elements go to the back of the queue, which wraps around its ring buffer (with batch=64, ~25 batches of
    # retries, some of them retried again).
    n = 1 << 15
    shape = jnp.asarray(np.where(np.arange(n) % 2 == 0, 1e-3, 1.0), jnp.float32)
    raw = jax.jit(lambda k, s: _sampling._gamma_block(k, s, boost=True, batch=batch))(KEY, shape)
    x = np.asarray(_sampling._decoded(raw), np.float64)
    assert np.all(np.isfinite(x)) and np.all(x >= 0)
    # The variates below float32's smallest normal number come out as their logarithms (negative), so that a
    # Dirichlet row of them can be normalized: -a log G = -log U - a log Gamma(1 + a) is Exp(1) up to O(a).
    log_small = np.asarray(raw, np.float64)[0::2]
    logs = np.where(log_small < 0, log_small, np.log(np.maximum(log_small, 1e-300)))
    assert stats.kstest(-1e-3 * logs, stats.expon.cdf).pvalue > 1e-3
    assert stats.kstest(x[1::2], stats.gamma(1.0).cdf).pvalue > 1e-3
    # Gamma(0.001) is mostly below float32's smallest normal number; compare it on the log scale where it is not.
    small = x[0::2]
    t = np.finfo(np.float32).tiny
    ref = stats.gamma(1e-3)
    assert abs(np.mean(small < t) - ref.cdf(t)) < 5 * np.sqrt(ref.cdf(t) * (1 - ref.cdf(t)) / len(small))


# ------------------------------------------------------------ repeated draws

def _maybe_traced(fn, traced, **static):
    """``fn(key, x, **static)`` called eagerly (the compiled-once unit sampler) or inside a jit (the inline one)."""
    return jax.jit(lambda k, x: fn(k, x, **static)) if traced else (lambda k, x: fn(k, x, **static))


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
def test_dirichlet_draws_span_several_blocks_with_an_overlapping_last_block(traced):
    # 300 concentrations: _BLOCK // 300 draws per block; 2.33 blocks' worth of draws is not a whole number of
    # blocks, so the last block starts early and overwrites part of the one before.
    rng = np.random.default_rng(3)
    conc = np.concatenate([rng.integers(0, 900, (3, 10, 3)), np.zeros((3, 10, 7))], -1) + 0.1
    rows = _sampling._BLOCK // conc.size
    num_draws = 2 * rows + rows // 3
    assert num_draws > rows and num_draws % rows
    draw = _maybe_traced(_sampling.dirichlet_draws, traced, num_draws=num_draws)
    r = np.asarray(draw(KEY, jnp.asarray(conc)), np.float64)
    assert r.shape == (num_draws,) + conc.shape
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-5)
    # Marginals of a Dirichlet: R_ij ~ Beta(a_ij, a_i0 - a_ij); check a large and a small cell, last draws included.
    a0 = conc.sum(-1)
    for idx in [(0, 0, 0), (2, 9, 5)]:
        ref = stats.beta(conc[idx], a0[idx[:2]] - conc[idx])
        assert stats.kstest(r[(slice(None),) + idx], ref.cdf).pvalue > 1e-3
    tail = r[-rows // 2:, 1, 1, 1]
    assert np.all(np.isfinite(tail)) and len(np.unique(tail)) == len(tail)


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
def test_gamma_draws_match_scipy_and_zero_rows_stay_zero(traced):
    shape = jnp.asarray([[3.7, 0.3, 0.0], [0.0, 0.0, 0.0]])
    g = np.asarray(_maybe_traced(_sampling.gamma_draws, traced, num_draws=30_000)(KEY, shape), np.float64)
    assert g.shape == (30_000, 2, 3)
    for j, a in enumerate([3.7, 0.3]):
        assert stats.kstest(g[:, 0, j], stats.gamma(a).cdf).pvalue > 1e-3
    assert np.all(g[:, 0, 2] == 0) and np.all(g[:, 1] == 0)
    d = np.asarray(_maybe_traced(_sampling.dirichlet_draws, traced, num_draws=100)(KEY, shape), np.float64)
    assert np.all(d[:, 1] == 0) and np.allclose(d[:, 0].sum(-1), 1.0)


def test_gamma_of_an_array_longer_than_a_unit_draws_every_unit_independently():
    # 2.5 units of shapes: the eager path draws them as three units with their own keys (the last one padded).
    n = 2 * _sampling._BLOCK + _sampling._BLOCK // 2
    shape = jnp.asarray(np.where(np.arange(n) % 2 == 0, 0.4, 2.5), jnp.float32)
    x = np.asarray(_sampling.gamma(KEY, shape), np.float64)
    assert x.shape == (n,) and np.all(np.isfinite(x)) and np.all(x > 0)
    for part in np.split(np.arange(n), [_sampling._BLOCK, 2 * _sampling._BLOCK]):
        assert stats.kstest(x[part[part % 2 == 0]], stats.gamma(0.4).cdf).pvalue > 1e-3
        assert stats.kstest(x[part[part % 2 == 1]], stats.gamma(2.5).cdf).pvalue > 1e-3
    # Units with the same shapes but their own keys: no unit repeats the one before.
    u = _sampling._BLOCK
    assert not np.any(x[:u // 2] == x[u:u + u // 2])


def test_the_eager_sampler_compiles_once_whatever_the_shapes(monkeypatch):
    # Each new table shape used to recompile the whole sampler (4-9 s on two cores); the eager path reuses one
    # compiled unit per unit size, so new shapes and draw counts add no entry to its cache.
    def draw_all(k, d, num_draws):
        conc = jnp.full((2, k, d), 1.5)
        _sampling.dirichlet_draws(KEY, conc, num_draws).block_until_ready()
        _sampling.gamma_draws(KEY, conc + 0.5, num_draws, small_shapes=False).block_until_ready()
        _sampling.dirichlet(KEY, jnp.full((num_draws, k), 0.7)).block_until_ready()

    draw_all(3, 3, 50_000)
    draw_all(2, 2, 10)
    before = _sampling._gamma_unit._cache_size()
    assert before >= 2  # both unit sizes are compiled now
    traces = []
    original = _sampling._gamma_block
    # _gamma_block only runs while a sampler is being traced: any call below is a new compilation of it.
    monkeypatch.setattr(_sampling, "_gamma_block", lambda *a, **kw: traces.append(1) or original(*a, **kw))
    draw_all(4, 5, 30_001)
    draw_all(7, 2, 3)
    assert not traces and _sampling._gamma_unit._cache_size() == before


def test_concrete_draws_of_several_units_place_each_unit_rows_like_in_blocks():
    # Reference: the placement written out here: unit b (key fold_in(key, b)) fills rows [b r, (b + 1) r), the last
    # unit ends at the last row and overwrites the overlap.
    flat = np.array([0.5, 2.0, 7.0], np.float32)
    rows = _sampling._BLOCK // 3
    num_rows = 2 * rows + 11
    got = np.asarray(_sampling.gamma_draws(KEY, flat, num_rows))
    tile = np.zeros(_sampling._BLOCK, np.float32)
    tile[:3 * rows] = np.tile(flat, rows)
    want = np.zeros((num_rows, 3), np.float32)
    for b in range(3):
        start = min(b * rows, num_rows - rows)
        unit = np.asarray(_sampling._gamma_unit(jax.random.fold_in(KEY, b), jnp.asarray(tile), boost=True))
        want[start:start + rows] = unit[:3 * rows].reshape(rows, 3)
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------ accelerators: the queue replayed in rounds

@pytest.mark.parametrize("n, batch, key", [(10_000, 4096, KEY), (5000, 64, jax.random.PRNGKey(3)), (1, 4096, KEY)],
                         ids=["partial-last-batch", "many-rounds-raw-key", "fewer-than-a-batch"])
def test_the_rounds_replay_the_work_queue_bit_for_bit(n, batch, key):
    # Reference: the CPU's work queue itself (_gamma_block), whose iterations the rounds replay with the uniforms of
    # the same batch and lane: equal draws on every backend for one key.  Shapes: boosted ones near 0 (the ~5 %
    # rejected at shape ~1 wrap the queue around), zeros (drawn as 0), large ones; n not a multiple of the batch,
    # and smaller than it, make partial batches.
    rng = np.random.default_rng(n)
    shape = jnp.asarray(rng.choice([1e-3, 0.0, 0.7, 1.0, 3.5, 250.0, 4e4], n), jnp.float32)
    queue = jax.jit(lambda k, s: _sampling._gamma_block(k, s, boost=True, batch=batch))(key, shape)
    rounds = jax.jit(lambda k, s: _sampling._gamma_rounds(k, s, boost=True, batch=batch))(key, shape)
    np.testing.assert_array_equal(np.asarray(rounds), np.asarray(queue))


@pytest.mark.parametrize("tail", [4, 64, 256])
def test_the_queue_s_narrow_tail_draws_what_full_batches_draw(tail):
    # Reference: the rounds (above), which replay full batches of the queue.  The queue computes only `tail` lanes
    # once at most that many elements are pending; each lane keeps its iteration's uniforms, so the draws are the
    # same bit for bit.  Shapes near 1 (~5 % rejected) leave pending elements for the narrow batches at every tail
    # here: a tail that drew its lanes from other counters differs in 1 (tail 4, 64) and 54 (tail 256) elements.
    shape = jnp.asarray(np.where(np.arange(5000) % 2 == 0, 1e-3, 1.0), jnp.float32)
    queue = jax.jit(lambda k, s: _sampling._gamma_block(k, s, boost=True, batch=512, tail=tail))(KEY, shape)
    rounds = jax.jit(lambda k, s: _sampling._gamma_rounds(k, s, boost=True, batch=512))(KEY, shape)
    np.testing.assert_array_equal(np.asarray(queue), np.asarray(rounds))


def _counted_rounds(monkeypatch, accelerator, draw):
    """How many proposal rounds (loop iterations of the sampler) ``draw()`` runs, on a CPU's path or not."""
    rounds = []
    original = _sampling._mt_from_uniforms

    def counted(*args):
        jax.debug.callback(lambda: rounds.append(1))
        return original(*args)

    monkeypatch.setattr(_sampling, "_mt_from_uniforms", counted)
    monkeypatch.setattr(_sampling, "_on_accelerator", lambda: accelerator)
    out = jax.block_until_ready(draw())
    return len(rounds), np.asarray(out)


@pytest.mark.parametrize("sampler", ["dirichlet", "dirichlet_draws"])
def test_on_an_accelerator_the_samplers_draw_the_same_numbers_in_a_few_rounds(monkeypatch, sampler):
    # The H200 run of this session: compare's per-draw path at 0.43 ms a draw against 0.021 ms for its decisions,
    # 0.28 ms of it the ~4e6 rates of each block drawn by ~1000 iterations of the queue (4096 proposals each).
    # Reference: the CPU's path (the same key), and a count of the loop's iterations (a callback in its body).
    conc = jnp.asarray(np.random.default_rng(5).integers(0, 40, (3, 3, 64, 64)) + 0.5, jnp.float32)
    if sampler == "dirichlet":  # 36,864 variates in one block
        def draw():
            return jax.jit(lambda k, a: _sampling.dirichlet(k, a))(KEY, conc)
    else:  # 60 draws of 3 x 64 x 64: 21 draws a block of 2^18, three blocks, the last one overlapping
        def draw():
            return jax.jit(lambda k, a: _sampling.dirichlet_draws(k, a, 60))(KEY, conc[0])
    cpu_rounds, cpu = _counted_rounds(monkeypatch, False, draw)
    accelerator_rounds, accelerator = _counted_rounds(monkeypatch, True, draw)
    np.testing.assert_array_equal(accelerator, cpu)
    assert cpu_rounds >= 9 * (1 if sampler == "dirichlet" else 3)  # 36,864 / 4096 batches at least (per block)
    assert accelerator_rounds <= 12  # one round for all full batches, then the rejected and the partial batches



@pytest.mark.parametrize("traced", [False, True])
def test_dirichlet_rows_of_small_concentrations_are_points_of_the_simplex(traced):
    # Gamma(0.005) is below float32's smallest normal number with probability ~0.65 (exp(-87 a)): a row of three
    # came back all zeros ~28 % of the time when the variates were normalized as numbers; normalized from their
    # logarithms every row sums to 1, and by symmetry each coordinate is the largest a third of the time.
    conc = jnp.full((6000, 3), 0.005, jnp.float32)
    draw = jax.jit(_sampling.dirichlet) if traced else _sampling.dirichlet
    x = np.asarray(draw(KEY, conc), np.float64)
    np.testing.assert_allclose(x.sum(1), 1.0, atol=1e-5)
    share = np.bincount(np.argmax(x, 1), minlength=3) / len(x)
    assert np.all(np.abs(share - 1 / 3) < 5 * np.sqrt(2 / 9 / len(x))), share
    # Dirichlet(a, a, a) with a -> 0 puts nearly all its mass on one coordinate: E[max] = 1 - O(a).
    assert np.mean(x.max(1)) > 0.97
