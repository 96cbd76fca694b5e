"""The truncated standard normal distribution (``ecjax.prob.TruncatedStandardNormal``) against
``scipy.stats.truncnorm``."""

import numpy as np
import pytest
from scipy import stats

import jax
import jax.numpy as jnp

from ecjax._src.prob.distributions import TruncatedStandardNormal

KEY = jax.random.key(7)


BOUNDS = [(-3.33, np.inf), (-np.inf, np.inf), (0.5, 2.0), (4.0, np.inf), (-np.inf, -6.0), (8.0, 9.0), (-9.0, -8.0)]


@pytest.mark.parametrize("low, high", BOUNDS)
def test_truncated_standard_normal_matches_scipy(low, high):
    d = TruncatedStandardNormal(low, high)
    ref = stats.truncnorm(low, high)
    x = np.asarray(d.sample(KEY, (100_000,)), np.float64)
    assert x.min() >= low and x.max() <= high
    assert stats.kstest(x, ref.cdf).pvalue > 1e-3
    # Mean and density in closed form against scipy (float32: relative 1e-5).
    assert abs(float(d.mean) - ref.mean()) < 1e-5 * max(1.0, abs(ref.mean()))
    lo = low if np.isfinite(low) else (high - 3.0 if np.isfinite(high) else -3.0)
    hi = high if np.isfinite(high) else lo + 3.0
    pts = np.linspace(lo, hi, 7)[1:-1]  # strictly inside the support
    np.testing.assert_allclose(np.asarray(d.log_prob(jnp.asarray(pts))), ref.logpdf(pts), rtol=1e-5, atol=1e-5)
    assert float(d.log_prob(jnp.asarray(low - 1.0 if np.isfinite(low) else high + 1.0))) == -np.inf


def test_truncated_standard_normal_batches_elementwise_bounds():
    low = jnp.asarray([[-1.0, 0.0], [2.0, -np.inf]])
    high = jnp.asarray([[1.0, np.inf], [3.0, 0.0]])
    x = np.asarray(TruncatedStandardNormal(low, high).sample(KEY, (40_000,)), np.float64)
    assert x.shape == (40_000, 2, 2)
    for i in range(2):
        for j in range(2):
            assert stats.kstest(x[:, i, j], stats.truncnorm(float(low[i, j]), float(high[i, j])).cdf).pvalue > 1e-3
