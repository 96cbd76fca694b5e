"""NUTS settings and runs of the hierarchical models (ecjax._src.prob.mcmc), against a conjugate closed form."""

import numpy as np
import pytest

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

import ecjax
from ecjax.prob import NUTSSettings
from ecjax._src.prob.mcmc import check_nuts_settings, fit_nuts


def _normal_mean_model(x):
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    numpyro.sample("x", dist.Normal(mu, 1.0), obs=x)


# Slow lane (about 12 s of NUTS compilation); NUTS fits stay in the default lane in tests/test_prob_hierarchical*.py
# (the pooling limit) and tests/test_prob_from_results*.py.
@pytest.mark.slow
def test_fit_nuts_matches_the_conjugate_posterior_and_reports_diagnostics():
    rng = np.random.default_rng(0)
    x = rng.normal(1.5, 1.0, 20)
    nuts = NUTSSettings(num_warmup=300, num_samples=1000, num_chains=2)
    fit = fit_nuts(jax.random.key(0), _normal_mean_model, (jnp.asarray(x, jnp.float32),), nuts, var_names=["mu"])
    # Normal-normal conjugacy: precision 1/100 + n, mean (sum x) / (1/100 + n).
    precision = 1 / 100 + x.size
    mean, sd = x.sum() / precision, precision**-0.5
    draws = np.asarray(fit.samples["mu"], np.float64)
    assert draws.shape == (nuts.num_draws,) == (2000,)
    # NUTS draws are correlated: 5 standard errors of an ESS of at least a quarter of the draws.
    assert abs(draws.mean() - mean) < 5 * sd / np.sqrt(draws.size / 4)
    assert abs(draws.std() / sd - 1) < 0.15
    assert fit.max_rhat < 1.05 and fit.min_ess_bulk > 200 and fit.num_divergences == 0
    assert list(fit.diagnostics.index) == ["mu"]


@pytest.mark.parametrize("settings, name", [
    (dict(num_warmup=0), "num_warmup"),
    (dict(num_samples=-1), "num_samples"),
    (dict(num_chains=1.5), "num_chains"),
    (dict(target_accept_prob=1.0), "target_accept_prob"),
    (dict(target_accept_prob=float("nan")), "target_accept_prob"),
])
def test_bad_settings_are_refused_when_made(settings, name):
    with pytest.raises(ecjax.InputError, match=f"`{name}`"):
        NUTSSettings(**settings)


def test_settings_must_be_the_settings_object():
    assert check_nuts_settings(NUTSSettings(num_chains=3)).num_draws == 3000
    with pytest.raises(ecjax.InputError, match="`nuts` must be an ecjax.prob.NUTSSettings, got dict"):
        check_nuts_settings({"num_chains": 3})
