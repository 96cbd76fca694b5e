"""The Gamma and Dirichlet samplers (``ecjax._src.prob.sampling``) against ``scipy.stats.gamma`` and the Dirichlet
moments."""

import numpy as np
import pytest
from scipy import stats

import jax
import jax.numpy as jnp

from ecjax._src.prob.sampling import dirichlet, gamma

KEY = jax.random.key(20240611)
N_DRAWS = 40_000


@pytest.mark.parametrize("shape", [0.05, 0.5, 1.0, 3.7, 950.0, 2.5e5, 3e7])
def test_gamma_sampler_matches_scipy(shape):
    x = np.asarray(gamma(KEY, jnp.full((N_DRAWS,), shape)), np.float64)
    ref = stats.gamma(shape)
    # float32 flushes values below its smallest normal number t to 0 (about 1.3 % of Gamma(0.05) draws):
    # the atom at 0 must have the mass F(t), the rest the distribution conditional on X >= t.
    t = np.finfo(np.float32).tiny
    at_zero = np.mean(x < t)
    assert abs(at_zero - ref.cdf(t)) < 5 * np.sqrt(ref.cdf(t) / N_DRAWS) + 1e-12
    ft = ref.cdf(t)
    assert stats.kstest(x[x >= t], lambda z: (ref.cdf(z) - ft) / (1 - ft)).pvalue > 1e-3
    assert abs(x.mean() - shape) < 5 * np.sqrt(shape / N_DRAWS)


def test_gamma_large_inputs_drawn_in_blocks():
    from ecjax._src.prob.sampling import _BLOCK

    n = 3 * _BLOCK + 123  # several blocks and a padded tail
    shapes = np.where(np.arange(n) % 2 == 0, 2.5, 0.3)
    x = np.asarray(gamma(KEY, jnp.asarray(shapes)), np.float64)
    for a in (2.5, 0.3):
        assert stats.kstest(x[shapes == a], stats.gamma(a).cdf).pvalue > 1e-3
    # Blocks use different keys: consecutive blocks are not copies of each other (same shapes compared).
    assert abs(np.corrcoef(x[:_BLOCK:2], x[_BLOCK:2 * _BLOCK:2])[0, 1]) < 0.01
    assert np.all(np.isfinite(x)) and x[-123:].std() > 0


def test_gamma_zero_shape_and_dirichlet_moments():
    assert np.all(np.asarray(gamma(KEY, jnp.zeros(7))) == 0)
    alpha = np.array([30.0, 2.0, 0.2, 0.0])
    r = np.asarray(dirichlet(KEY, jnp.broadcast_to(jnp.asarray(alpha), (N_DRAWS, 4))), np.float64)
    a0 = alpha.sum()
    mean = alpha / a0
    var = alpha * (a0 - alpha) / (a0 ** 2 * (a0 + 1))
    np.testing.assert_allclose(r.sum(1), 1.0, atol=1e-5)
    np.testing.assert_allclose(r.mean(0), mean, atol=5 * np.sqrt(var.max() / N_DRAWS))
    np.testing.assert_allclose(r.var(0), var, rtol=0.05, atol=1e-9)
    assert np.all(r[:, 3] == 0)
