"""Random bits shared by the samplers: uniform draws from threefry2x32 on explicit counters.

``jax.random.uniform`` under the default partitionable threefry spends one
hash per 32-bit word; hashing the counters ``0..n-1`` in pairs gives two words
per hash, about twice as fast on CPU, and the draws still depend only on the
key and the element index (identical under any sharding).
"""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp
from jax.extend.random import threefry_2x32


def uniform(key, shape, dtype=jnp.float32):
    """Uniform ``[0, 1)`` draws of ``shape``; other key types fall back to ``jax.random.uniform``."""
    n = int(np.prod(shape))
    data = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    if data.shape != (2,) or n % 2 or jnp.dtype(dtype) != jnp.float32:
        return jax.random.uniform(key, shape, dtype)
    bits = threefry_2x32((data[0], data[1]), jnp.arange(n, dtype=jnp.uint32))
    # 23 random mantissa bits in [1, 2), shifted to [0, 1), as jax.random.uniform does.
    floats = jax.lax.bitcast_convert_type((bits >> 9) | np.uint32(0x3F800000), jnp.float32) - 1.0
    return floats.reshape(shape)
