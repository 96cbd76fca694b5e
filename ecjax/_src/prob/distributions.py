"""NumPyro distributions with exact samplers built on :mod:`~ecjax._src.random_bits`.

NumPyro's own samplers draw through ``jax.random.uniform``, whose
threefry hash JAX lowers on CPU as a rolled loop; the utility priors draw
``10^7`` entries per ranking, so the truncated normal below samples from
ecjax's unrolled hash instead (measured: ``10^5`` draws of a 10 x 10
matrix, 0.26 s with ``numpyro.distributions.TruncatedNormal``, 0.08 s
here).  Densities are the textbook ones; only the sampler differs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr
from numpyro.distributions import Distribution, constraints

from ecjax._src.random_bits import truncated_standard_normal

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


class TruncatedStandardNormal(Distribution):
    """``N(0, 1)`` truncated to ``[low, high]``, elementwise (``low`` may be ``-inf``, ``high`` ``inf``).

    Density ``phi(z) / Z`` on the interval, ``Z = Phi(high) - Phi(low)``.
    Sampling inverts the CDF on the side of the lower tail
    (:func:`~ecjax._src.random_bits.truncated_standard_normal`); ``Z`` is computed as
    a log-difference of ``log Phi`` for the same reason of precision.
    """

    arg_constraints = {"low": constraints.dependent, "high": constraints.dependent}
    reparametrized_params: list[str] = []

    def __init__(self, low=-jnp.inf, high=jnp.inf, *, validate_args=None):
        self.low, self.high = jnp.broadcast_arrays(jnp.asarray(low, jnp.result_type(float)),
                                                   jnp.asarray(high, jnp.result_type(float)))
        super().__init__(batch_shape=jnp.shape(self.low), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    def _lower_tail(self):
        flip = self.low > 0
        return flip, jnp.where(flip, -self.high, self.low), jnp.where(flip, -self.low, self.high)

    def sample(self, key: jax.Array, sample_shape: tuple[int, ...] = ()) -> jax.Array:
        return truncated_standard_normal(key, self.low, self.high, tuple(sample_shape) + tuple(self.batch_shape))

    def log_prob(self, value: jax.Array) -> jax.Array:
        flip, a, b = self._lower_tail()
        log_pa, log_pb = log_ndtr(a), log_ndtr(b)
        log_mass = log_pb + jnp.log1p(-jnp.exp(log_pa - log_pb))
        inside = (value >= self.low) & (value <= self.high)
        return jnp.where(inside, -0.5 * value * value - _LOG_SQRT_2PI - log_mass, -jnp.inf)

    @property
    def mean(self) -> jax.Array:
        flip, a, b = self._lower_tail()
        log_mass = log_ndtr(b) + jnp.log1p(-jnp.exp(log_ndtr(a) - log_ndtr(b)))
        # (phi(a) - phi(b)) / Z, with the densities taken as 0 at infinite bounds.
        density = lambda x: jnp.where(jnp.isfinite(x), jnp.exp(-0.5 * x * x - _LOG_SQRT_2PI - log_mass), 0.0)  # noqa: E731
        m = density(a) - density(b)
        return jnp.where(flip, -m, m)
