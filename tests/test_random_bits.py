"""The random primitives under every sampler (``ecjax._src.random_bits``): the unrolled threefry hash, uniforms,
compaction and the host-side key derivation.

References: ``jax.extend.random.threefry_2x32`` (JAX's own hash, bit for
bit), ``jax.random``'s key, ``fold_in`` and ``split``, and ``numpy.nonzero``.
"""

import numpy as np
import pytest
from scipy import stats

import jax
import jax.numpy as jnp
from jax.extend.random import threefry_2x32

from ecjax._src import random_bits
from ecjax._src.random_bits import first_true_indices, threefry2x32, uniform, uniform_pair

KEY = jax.random.key(7)


@pytest.mark.parametrize("seed", [0, 1, 2**31 + 5])
def test_threefry_is_bit_identical_to_jax(seed):
    k = jax.random.key_data(jax.random.key(seed))
    counters = jnp.arange(2 * 1000, dtype=jnp.uint32) * np.uint32(2654435761)  # spread over all 32 bits
    ref = np.asarray(threefry_2x32((k[0], k[1]), counters))
    y0, y1 = threefry2x32(k[0], k[1], counters[:1000], counters[1000:])
    np.testing.assert_array_equal(np.concatenate([y0, y1]), ref)


def test_uniform_pair_is_the_split_of_one_uniform_array_and_keys_matter():
    a, b = uniform_pair(KEY, (3, 5))
    both = uniform(KEY, (2, 3, 5))
    np.testing.assert_array_equal(a, both[0])
    np.testing.assert_array_equal(b, both[1])
    other = uniform(jax.random.key(8), (2, 3, 5))
    assert not np.any(np.asarray(other) == np.asarray(both))
    # Raw uint32 keys give the same numbers as typed keys.
    np.testing.assert_array_equal(uniform(jax.random.key_data(KEY), (2, 3, 5)), both)


@pytest.mark.parametrize("shape", [(4, 3), (2, 5, 7), (6,), (3, 4), (5,)])
def test_uniform_is_the_flat_join_of_its_hash_words_whatever_the_shape(shape):
    # Element i of the flat array is word 0 of counter i for i < ceil(n / 2), then word 1 (the definition); even
    # leading axes are joined along that axis (faster on XLA's CPU backend), which must not change a number.
    n = int(np.prod(shape))
    half = (n + 1) // 2
    k = jax.random.key_data(KEY)
    i = jnp.arange(half, dtype=jnp.uint32)
    y0, y1 = threefry2x32(k[0], k[1], i, i + np.uint32(half))
    bits = np.concatenate([np.asarray(y0), np.asarray(y1)])[:n]
    expected = ((bits >> 9) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1.0)
    np.testing.assert_array_equal(np.asarray(uniform(KEY, shape)).ravel(), expected)
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda key: uniform(key, shape))(KEY)).ravel(), expected)


def test_uniform_and_index_are_independent_and_uniform():
    # The float is uniform_pair's first half; the index is uniform on {0, ..., 6} (chi-square) and independent of
    # the float (the mean float within each index value stays 1/2).
    u, idx = random_bits.uniform_and_index(KEY, (200_000,), 7)
    np.testing.assert_array_equal(u, uniform_pair(KEY, (200_000,))[0])
    idx, u = np.asarray(idx), np.asarray(u, np.float64)
    assert idx.min() == 0 and idx.max() == 6
    assert stats.chisquare(np.bincount(idx, minlength=7)).pvalue > 1e-3
    means = np.array([u[idx == j].mean() for j in range(7)])
    assert np.all(np.abs(means - 0.5) < 5 * np.sqrt(1 / 12 / (200_000 / 7)))


@pytest.mark.parametrize("n", [1, 7, 100_001])
def test_uniform_odd_sizes_are_uniform_on_the_unit_interval(n):
    u = np.asarray(uniform(KEY, (n,)), np.float64)
    assert u.shape == (n,) and u.min() >= 0.0 and u.max() < 1.0
    if n > 1000:
        assert stats.kstest(u, "uniform").pvalue > 1e-3
        assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.01


@pytest.mark.parametrize("n, rate, size", [(1000, 0.05, 64), (1000, 0.5, 64), (2**16, 0.05, 2**12),
                                           (96, 0.0, 8), (330, 1.0, 330), (33, 0.3, 40)])
def test_first_true_indices_matches_numpy_nonzero(n, rate, size):
    rng = np.random.default_rng(n)
    mask = rng.random(n) < rate
    ref = np.nonzero(mask)[0][:size]
    ref = np.concatenate([ref, np.full(size - len(ref), n)])
    np.testing.assert_array_equal(first_true_indices(jnp.asarray(mask), size), ref)


def test_other_key_types_fall_back_to_jax_random():
    # rbg keys have four words: the helpers hand them to jax.random instead of the threefry path.
    key = jax.random.key(0, impl="rbg")
    a, b = uniform_pair(key, (20_000,))
    u = uniform(key, (3, 7))
    assert u.shape == (3, 7) and a.shape == b.shape == (20_000,)
    assert stats.kstest(np.asarray(a, np.float64), "uniform").pvalue > 1e-3
    assert abs(np.corrcoef(np.asarray(a), np.asarray(b))[0, 1]) < 0.03


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**31 + 5, 2**32 - 1])
def test_host_key_derivation_is_bit_identical_to_jax_random(seed):
    # Reference: jax.random's own key, fold_in and split, on typed and on raw uint32 keys.
    def words(k):
        return np.asarray(jax.random.key_data(k) if jnp.issubdtype(k.dtype, jax.dtypes.prng_key) else k)

    typed = random_bits.key(seed)
    np.testing.assert_array_equal(words(typed), words(jax.random.key(seed)))
    for key in (typed, jax.random.PRNGKey(seed)):
        for data in (0, 1, 77, 2**31, 2**32 - 1):
            mine, ref = random_bits.fold_in(key, data), jax.random.fold_in(key, data)
            assert mine.dtype == ref.dtype
            np.testing.assert_array_equal(words(mine), words(ref))
        for num in (1, 2, 3, 6):
            mine, ref = random_bits.split_keys(key, num), jax.random.split(key, num)
            assert isinstance(mine, tuple) and len(mine) == num
            np.testing.assert_array_equal(np.stack([words(k) for k in mine]), words(ref))


def test_host_key_derivation_remembers_words_only_of_keys_that_cannot_change(monkeypatch):
    # The host path remembers the words of the jax keys it has read or made (by identity), so that deriving many
    # keys from one parent reads it once; a numpy key can change in place, so it is read every time.  Reference:
    # jax.random.fold_in.
    reads = []
    original = jax.random.key_data
    monkeypatch.setattr(jax.random, "key_data", lambda k: reads.append(1) or original(k))
    parent = random_bits.fold_in(random_bits.key(5), 1)  # made here: its words are known
    ref_parent = jax.random.fold_in(jax.random.key(5), 1)
    for data in range(4):
        np.testing.assert_array_equal(np.asarray(original(random_bits.fold_in(parent, data))),
                                      np.asarray(original(jax.random.fold_in(ref_parent, data))))
    assert reads == []
    raw = np.array([3, 4], np.uint32)
    first = np.asarray(random_bits.fold_in(raw, 7))
    raw[1] = 9
    np.testing.assert_array_equal(np.asarray(random_bits.fold_in(raw, 7)), np.asarray(jax.random.fold_in(raw, 7)))
    assert not np.array_equal(first, np.asarray(jax.random.fold_in(raw, 7)))


@pytest.mark.parametrize("seed", [0, 1, 2**32 - 1])
def test_host_uint32_bits_are_jax_random_bits(seed):
    # bootstrap_metric's key words come from the host (issue 33.3: no eager programs to compile on a first call).
    for key in (jax.random.key(seed), jax.random.PRNGKey(seed), random_bits.split_keys(jax.random.key(seed))[1]):
        for num in (1, 2, 5):
            np.testing.assert_array_equal(np.asarray(random_bits.uint32_bits(key, num)),
                                          np.asarray(jax.random.bits(key, (num,), jnp.uint32)))


def test_host_key_derivation_calls_no_jax_random_and_defers_to_it_under_a_trace(monkeypatch):
    # jax.random's key functions each compile a program on first use: the host path must not reach them.
    def refuse(*args, **kwargs):
        raise AssertionError("jax.random called for a concrete threefry key")

    with monkeypatch.context() as patched:
        for name in ("key", "fold_in", "split"):
            patched.setattr(jax.random, name, refuse)
        key = random_bits.key(123)
        derived = random_bits.fold_in(random_bits.split_keys(key, 4)[2], 9)
    # Traced keys go to jax.random: the same key as outside the trace.
    inside = jax.jit(lambda k: jax.random.key_data(random_bits.fold_in(random_bits.split_keys(k, 4)[2], 9)))(key)
    np.testing.assert_array_equal(np.asarray(inside), np.asarray(jax.random.key_data(derived)))
    np.testing.assert_array_equal(np.asarray(jax.random.key_data(derived)), np.asarray(jax.random.key_data(
        jax.random.fold_in(jax.random.split(jax.random.key(123), 4)[2], 9))))
