"""Random bits shared by the samplers: uniform draws from threefry2x32 on explicit counters, and compaction.

``jax.random.uniform`` under the default partitionable threefry spends one
hash per 32-bit word, and on CPU JAX lowers the hash as a rolled loop of
five passes over memory.  Here the hash is written out round by round, so
XLA fuses all 20 rounds into one vectorized loop, bit-identical to
``jax.extend.random.threefry_2x32`` and about three times faster (measured:
2x10^7 words in 0.032 s against 0.102 s on two cores); hashing the counters
in pairs gives two words per hash.  The draws still depend only on the key
and the element index (identical under any sharding).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr, ndtri
from jax.typing import DTypeLike

# Threefry words: host (numpy) or device (jax) uint32 arrays; the cipher returns the kind it is given.
_Words = TypeVar("_Words", np.ndarray, jax.Array)

# Threefry-2x32 (Salmon et al., SC 2011, "Parallel random numbers: as easy as 1, 2, 3"): 20 rounds,
# rotation constants alternating between these two groups of four, key injection after every four rounds.
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = np.uint32(0x1BD11BDA)
_MASK = 0xFFFFFFFF


def _rotate_left(x, r):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(k0: _Words, k1: _Words, x0: _Words, x1: _Words) -> tuple[_Words, _Words]:
    """The Threefry-2x32 block cipher of the counters ``(x0, x1)`` under the key ``(k0, k1)``, unrolled.

    Same output as ``jax.extend.random.threefry_2x32`` (tested bit for bit).
    """
    k2 = k0 ^ k1 ^ _KEY_PARITY
    keys = (k0, k1, k2)
    x0, x1 = x0 + k0, x1 + k1
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = _rotate_left(x1, r) ^ x0
        x0 = x0 + keys[(i + 1) % 3]
        x1 = x1 + keys[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


# The words of recently seen concrete keys, by identity (each entry holds its key, so that its id is not reused
# while it is here): a comparison derives every block's keys from the same few parents, and reading a typed key's
# words back costs about 0.3 ms of jax's machinery each time (a 1000-class comparison derives 1500 keys).
_KNOWN_WORDS: OrderedDict[int, tuple[Any, tuple[int, int] | None]] = OrderedDict()
_MAX_KNOWN_WORDS = 64


def _remember(key, words):
    if not isinstance(key, jax.Array):  # a numpy key may change in place
        return words
    _KNOWN_WORDS[id(key)] = (key, words)
    while len(_KNOWN_WORDS) > _MAX_KNOWN_WORDS:
        _KNOWN_WORDS.popitem(last=False)
    return words


def _host_words(key) -> tuple[int, int] | None:
    """The two words of a concrete threefry key as Python ints, or None (traced, or another generator)."""
    if isinstance(key, jax.core.Tracer):
        return None
    known = _KNOWN_WORDS.get(id(key))
    if known is not None and known[0] is key:
        return known[1]
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        if str(jax.random.key_impl(key)) != "threefry2x32" or key.shape != ():
            return _remember(key, None)
        data = np.asarray(jax.random.key_data(key))
    else:
        data = np.asarray(key)
        if data.dtype != np.uint32:
            return _remember(key, None)
    return _remember(key, (int(data[0]), int(data[1])) if data.shape == (2,) else None)


def _threefry_ints(k0: int, k1: int, x0: int, x1: int) -> tuple[int, int]:
    """:func:`threefry2x32` of one counter pair, in Python ints: deriving one key on the host, where numpy spends
    about 2 us an operation on one-element arrays (0.2 ms a hash; a 100-class comparison derives 140 keys)."""
    k2 = k0 ^ k1 ^ int(_KEY_PARITY)
    keys = (k0, k1, k2)
    x0, x1 = (x0 + k0) & _MASK, (x1 + k1) & _MASK
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = (x0 + x1) & _MASK
            x1 = (((x1 << r) | (x1 >> (32 - r))) & _MASK) ^ x0
        x0 = (x0 + keys[(i + 1) % 3]) & _MASK
        x1 = (x1 + keys[(i + 2) % 3] + i + 1) & _MASK
    return x0, x1


def _as_key_like(key, words):
    """The two words (ints) of a key as a key of the kind of ``key``: typed ones stay typed, raw ones raw."""
    data = np.array(words, np.uint32)
    made = _wrap(data) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else jnp.asarray(data)
    _remember(made, words)
    return made


def _wrap(words: np.ndarray):
    # Host words: wrapping a device array would compile a program (jit(stage)); the annotation asks for an Array.
    return jax.random.wrap_key_data(words)  # type: ignore[arg-type]


# Key derivation on the host: with a concrete key, jax.random's split / fold_in / key each compile a small program
# (about 0.1 s apiece on two CPU cores, and a cache lookup on every later run).  A hash of two words needs none:
# the functions below give jax.random's keys bit for bit (tested), from the same cipher.

def fold_in(key: jax.Array, data: int) -> jax.Array:
    """``jax.random.fold_in(key, data)``, computed on the host when ``key`` is a concrete threefry key.

    jax hashes the counter pair ``(0, data)`` (the 64-bit ``data`` as two
    words) under the key; the two output words are the new key.
    """
    words = _host_words(key)
    if words is None or not isinstance(data, (int, np.integer)) or not 0 <= int(data) < 2**32:
        return jax.random.fold_in(key, data)
    return _as_key_like(key, _threefry_ints(*words, 0, int(data)))


def fold_in_stacked(keys: Sequence[jax.Array], data: Sequence[int]) -> jax.Array:
    """``[fold_in(k, d) for k, d in zip(keys, data)]`` stacked along a new leading axis, computed on the host (one
    array put on the device) when the keys are concrete threefry keys."""
    words = [_host_words(k) for k in keys]
    if any(w is None for w in words) or not all(isinstance(d, (int, np.integer)) and 0 <= int(d) < 2**32
                                                for d in data):
        return jnp.stack([jax.random.fold_in(k, d) for k, d in zip(keys, data)])
    stacked = np.array([_threefry_ints(*w, 0, int(d)) for w, d in zip(words, data) if w is not None], np.uint32)
    return _wrap(stacked) if jnp.issubdtype(keys[0].dtype, jax.dtypes.prng_key) else jnp.asarray(stacked)


def split_keys(key: jax.Array, num: int = 2) -> tuple[jax.Array, ...]:
    """``tuple(jax.random.split(key, num))``, computed on the host when ``key`` is a concrete threefry key.

    With jax's default partitionable threefry, key ``i`` is the hash of the
    counter pair ``(0, i)``.  A tuple, so that unpacking or indexing it
    costs no device program either.
    """
    words = _host_words(key)
    if words is None or not getattr(jax.config, "jax_threefry_partitionable"):  # a flag jax does not annotate
        return tuple(jax.random.split(key, num))
    return tuple(_as_key_like(key, _threefry_ints(*words, 0, i)) for i in range(num))


def uint32_bits(key: jax.Array, num: int) -> np.ndarray | jax.Array:
    """``jax.random.bits(key, (num,), jnp.uint32)``, computed on the host when ``key`` is a concrete threefry key.

    With jax's default partitionable threefry, word ``i`` is the exclusive or of the two output words of the hash
    of the counter pair ``(0, i)``.
    """
    words = _host_words(key)
    if words is None or not getattr(jax.config, "jax_threefry_partitionable"):  # a flag jax does not annotate
        return jax.random.bits(key, (num,), jnp.uint32)
    y0, y1 = threefry2x32(np.full(num, words[0], np.uint32), np.full(num, words[1], np.uint32),
                          np.zeros(num, np.uint32), np.arange(num, dtype=np.uint32))
    return y0 ^ y1


def key(seed: int) -> jax.Array:
    """``jax.random.key(seed)`` without a device program, for the default threefry generator and ``0 <= seed < 2^32``."""
    # getattr: a flag that jax's type annotations do not declare.
    if (getattr(jax.config, "jax_default_prng_impl") != "threefry2x32" or not isinstance(seed, (int, np.integer))
            or not 0 <= int(seed) < 2**32):
        return jax.random.key(seed)
    made = _wrap(np.array([0, seed], np.uint32))
    _remember(made, (0, int(seed)))
    return made


def _key_words(key: jax.Array) -> tuple[jax.Array, jax.Array] | None:
    """The two uint32 words of a threefry key (typed or raw), or None for other key types."""
    data = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    return (data[0], data[1]) if data.shape == (2,) else None


def _to_unit_float(bits):
    # 23 random mantissa bits in [1, 2), shifted to [0, 1), as jax.random.uniform does.
    return jax.lax.bitcast_convert_type((bits >> 9) | np.uint32(0x3F800000), jnp.float32) - 1.0


def uniform_pair(key: jax.Array, shape: Sequence[int]) -> tuple[jax.Array, jax.Array]:
    """Two independent float32 uniform ``[0, 1)`` arrays of ``shape``: the two words of one hash per element.

    Element ``i`` of the pair hashes the counters ``(i, n + i)``, so the
    pair equals ``uniform(key, (2,) + shape)`` split along its first axis.
    Keeping the halves apart matters: a consumer that reads the two words
    concatenated inside one fused loop runs about four times slower on XLA's
    CPU backend (measured: inverse normal CDF of 10^7 draws, 0.176 s
    against 0.038 s).
    """
    n = int(np.prod(shape))
    words = _key_words(key)
    if words is None:
        k1, k2 = jax.random.split(key)
        return jax.random.uniform(k1, shape), jax.random.uniform(k2, shape)
    i = jnp.arange(n, dtype=jnp.uint32)
    y0, y1 = threefry2x32(*words, i, i + np.uint32(n))
    return _to_unit_float(y0).reshape(shape), _to_unit_float(y1).reshape(shape)


def uniform_pair_head(key: jax.Array, n: int, count: int) -> tuple[jax.Array, jax.Array]:
    """The first ``count`` elements of ``uniform_pair(key, (n,))``, computing only those (lane ``i`` hashes the
    counters ``(i, n + i)`` whatever ``count``)."""
    words = _key_words(key)
    if words is None or count == n:
        u, v = uniform_pair(key, (n,))
        return u[:count], v[:count]
    i = jnp.arange(count, dtype=jnp.uint32)
    y0, y1 = threefry2x32(*words, i, i + np.uint32(n))
    return _to_unit_float(y0), _to_unit_float(y1)


def folded_uniform_pair(key: jax.Array, folds: jax.Array, lanes: jax.Array,
                        num_lanes: int) -> tuple[jax.Array, jax.Array] | None:
    """Element ``j`` of ``uniform_pair(jax.random.fold_in(key, folds[j]), (num_lanes,))`` at ``lanes[j]``, for all ``j``.

    Lets a loop that drew ``uniform_pair(fold_in(key, it), (b,))`` at each
    iteration ``it`` be replayed in fewer, larger steps with the very same
    numbers: ``fold_in`` hashes the counters ``(0, it)`` under the key, and
    lane ``l`` of the pair hashes ``(l, b + l)`` under the folded key.
    None for keys other than threefry's.
    """
    words = _key_words(key)
    if words is None:
        return None
    f0, f1 = threefry2x32(*words, jnp.zeros_like(folds, jnp.uint32), folds.astype(jnp.uint32))
    lanes = lanes.astype(jnp.uint32)
    y0, y1 = threefry2x32(f0, f1, lanes, lanes + np.uint32(num_lanes))
    return _to_unit_float(y0), _to_unit_float(y1)


def uniform_and_index(key: jax.Array, shape: Sequence[int], num_values: int) -> tuple[jax.Array, jax.Array]:
    """A float32 uniform ``[0, 1)`` array and an independent int32 array on ``{0, ..., num_values - 1}`` of ``shape``.

    The two words of one hash per element: the first as :func:`uniform_pair`'s, the second ``mod num_values``
    (each value's probability within ``num_values 2^-32`` of ``1 / num_values``).  A threefry key only.
    """
    n = int(np.prod(shape))
    words = _key_words(key)
    assert words is not None, "uniform_and_index needs a threefry key"
    i = jnp.arange(n, dtype=jnp.uint32)
    y0, y1 = threefry2x32(*words, i, i + np.uint32(n))
    return _to_unit_float(y0).reshape(shape), (y1 % np.uint32(num_values)).astype(jnp.int32).reshape(shape)


def uniform(key: jax.Array, shape: Sequence[int], dtype: DTypeLike = jnp.float32) -> jax.Array:
    """Uniform ``[0, 1)`` draws of ``shape``; other key types and dtypes fall back to ``jax.random.uniform``."""
    n = int(np.prod(shape))
    words = _key_words(key)
    if words is None or jnp.dtype(dtype) != jnp.float32:
        return jax.random.uniform(key, shape, dtype)
    half = (n + 1) // 2
    i = jnp.arange(half, dtype=jnp.uint32)
    y0, y1 = threefry2x32(*words, i, i + np.uint32(half))
    shape = tuple(shape)
    if shape and shape[0] % 2 == 0:
        # The same numbers, the halves joined along the leading axis: XLA's CPU backend runs a consumer fused
        # into the flat join and its reshape about 5 times slower (measured: scaling 3 x 10^6 interval
        # utilities, 14 against 2.7 ms of CPU a 10^6 draw).
        lead = (shape[0] // 2,) + shape[1:]
        return jnp.concatenate([_to_unit_float(y0).reshape(lead), _to_unit_float(y1).reshape(lead)])
    return _to_unit_float(jnp.concatenate([y0, y1])[:n]).reshape(shape)


def truncated_standard_normal(key: jax.Array, low: jax.Array, high: jax.Array, shape: Sequence[int]) -> jax.Array:
    """``N(0, 1)`` draws of ``shape`` truncated to ``[low, high]`` (arrays broadcasting to ``shape``).

    Inverts the CDF, ``z = Phi^-1(Phi(a) + u (Phi(b) - Phi(a)))``, on the
    side of the lower tail: where ``low > 0`` it draws ``-z`` on
    ``[-high, -low]``, because ``Phi`` keeps full relative precision only
    below 0 (in the upper tail ``1 - Phi`` would round away).
    """
    flip = low > 0
    a, b = jnp.where(flip, -high, low), jnp.where(flip, -low, high)
    pa, pb = ndtr(a), ndtr(b)
    # u in [0, 1) puts p in [pa, pb); the floor keeps Phi^-1 finite when a = -inf.
    p = jnp.maximum(pa + uniform(key, shape) * (pb - pa), jnp.finfo(jnp.float32).tiny)
    z = jnp.clip(ndtri(p), a, b)
    return jnp.where(flip, -z, z)


def first_true_indices(mask: jax.Array, size: int) -> jax.Array:
    """Indices of the first ``size`` true entries of the vector ``mask``, in order, padded with ``len(mask)``.

    The compaction step of vectorized rejection sampling.  The mask is
    packed 32 flags to a word, so the prefix sum runs over ``n / 32``
    popcounts; each slot finds its word by binary search and its bit by five
    halvings.  ``jnp.nonzero(size=...)`` gives the same indices at several
    times the cost on CPU.
    """
    n = mask.shape[0]
    mask = jnp.pad(mask, (0, -n % 32))
    words = (mask.reshape(-1, 32).astype(jnp.uint32) << jnp.arange(32, dtype=jnp.uint32)).sum(1, dtype=jnp.uint32)
    count = jax.lax.population_count(words).astype(jnp.int32)
    total = jnp.cumsum(count)
    slot = jnp.arange(1, size + 1, dtype=jnp.int32)
    w = jnp.minimum(jnp.searchsorted(total, slot, side="left", method="scan_unrolled"), words.shape[0] - 1)
    rank = slot - (total[w] - count[w])  # 1-based rank of the wanted flag inside word w
    word = words[w]
    pos = jnp.zeros_like(slot)
    for half in (16, 8, 4, 2, 1):
        # The flags in bits [pos, pos + half) of the word.
        window = jnp.right_shift(jnp.left_shift(word, (32 - pos - half).astype(jnp.uint32)), np.uint32(32 - half))
        below = jax.lax.population_count(window).astype(jnp.int32)
        up = rank > below
        rank = jnp.where(up, rank - below, rank)
        pos = jnp.where(up, pos + half, pos)
    return jnp.where(slot <= total[-1], w.astype(jnp.int32) * 32 + pos, n)
