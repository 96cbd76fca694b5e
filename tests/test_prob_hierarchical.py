"""Several test sets: the hierarchical model fitted with NUTS (``ecjax._src.prob.hierarchical``).

References: in the pooling limit (dispersion fixed huge) the population
rates' posterior is the Beta posterior of the pooled counts (scipy); with a
learned dispersion, recovery of a known generator; ArviZ R-hat and ESS.
"""

import numpy as np
import pytest
from scipy import stats

import arviz as az
import jax

import ecjax
from ecjax import prob
from ecjax._src.prob.hierarchical import counts_from_sets

KEY = jax.random.key(5)


# NUTS, ~45 s on two cores: slow lane to keep CI under 20 minutes (the hierarchical inputs stay in the default lane)
@pytest.mark.slow
def test_pooling_limit_matches_beta_posterior_of_pooled_counts():
    counts = np.array([[[[40, 10], [6, 44]]], [[[35, 15], [9, 41]]], [[[45, 5], [4, 46]]], [[[38, 12], [7, 43]]]])
    res = prob.compare_test_sets(counts, utilities=np.eye(2), key=KEY, dispersion=1e6,
                                 nuts=prob.NUTSSettings(num_warmup=300, num_samples=800, num_chains=2))
    assert res.max_rhat < 1.01
    mu = res.samples["population_rates"].reshape(-1, 1, 2, 2)
    pooled = counts.sum(0)[0]  # (K, D)
    ess = az.ess(res.inference_data, var_names=["population_rates"])["population_rates"].to_numpy()
    for i in range(2):
        ref = stats.beta(pooled[i, 0] + 1, pooled[i, 1] + 1)  # uniform Dirichlet prior (concentration 1)
        se = ref.std() / np.sqrt(ess[0, i, 0])
        assert abs(mu[:, 0, i, 0].mean() - ref.mean()) < 4 * se
        assert abs(mu[:, 0, i, 0].std() / ref.std() - 1) < 0.12


@pytest.mark.slow  # NUTS on a learned dispersion: ~45 s on two cores (the pooling-limit NUTS run stays default)
def test_learned_dispersion_recovers_the_generator_and_converges():
    rng = np.random.default_rng(0)
    mu = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.8, 0.2], [0.3, 0.7]]])  # system 0 better on both classes
    kappa = 150.0
    labels, decisions = [], []
    for t in range(6):
        n = 300
        lab = rng.integers(0, 2, n)
        dec = []
        for m in range(2):
            r = np.stack([rng.dirichlet(kappa * mu[m, i]) for i in range(2)])  # this set's rates
            dec.append(np.array([rng.choice(2, p=r[c]) for c in lab]))
        labels.append(lab)
        decisions.append(np.stack(dec))
    counts = counts_from_sets(labels, decisions, num_classes=2)
    assert counts.shape == (6, 2, 2, 2)
    # System 0 has the higher rate on both classes: it is best for every matrix of Dyrland et al. (2022) Fig. 1.
    res = prob.compare_test_sets({"good": counts[:, 0], "worse": counts[:, 1]}, utilities=prob.seed004_uniform(),
                                 key=KEY, nuts=prob.NUTSSettings(num_warmup=400, num_samples=800, num_chains=2))
    assert res.max_rhat < 1.01 and res.min_ess_bulk > 300
    assert res.num_divergences <= 5
    assert set(res.diagnostics.columns) >= {"r_hat", "ess_bulk", "ess_tail"}
    comp = res.comparison
    assert comp.best == "good" and comp.p_best[0] > 0.95
    draws = res.samples["population_rates"]
    lo, hi = np.percentile(draws, [1, 99], axis=0)
    assert np.all((lo <= mu) & (mu <= hi))
    # Between-set spread widens the population posterior beyond the pooled Beta.
    pooled = np.asarray(counts).sum(0)[0, 0]
    assert draws[:, 0, 0, 0].std() > 1.15 * stats.beta(pooled[0] + 1, pooled[1] + 1).std()


def test_bad_hierarchical_inputs():
    counts = np.ones((3, 2, 2, 2))
    with pytest.raises(ecjax.InputError, match="T, M, K, D"):
        prob.compare_test_sets(np.ones((2, 2, 2)), utilities=np.eye(2), key=KEY)
    with pytest.raises(ecjax.InputError, match="`concentration` must be a positive finite number, got 0.0"):
        prob.compare_test_sets(counts, utilities=np.eye(2), key=KEY, concentration=0.0)
    with pytest.raises(ecjax.InputError, match="dispersion"):
        prob.compare_test_sets(counts, utilities=np.eye(2), key=KEY, dispersion=-1)
    for given in (True, "0.5"):  # one number, not something float() turns into one
        with pytest.raises(ecjax.InputError, match="`dispersion` must be a number"):
            prob.compare_test_sets(counts, utilities=np.eye(2), key=KEY, dispersion=given)
    with pytest.raises(ecjax.InputError, match="row of `counts` is 0"):
        prob.compare_test_sets(counts * np.array([1, 0])[:, None], utilities=np.eye(2), key=KEY)
    with pytest.raises(ecjax.InputError, match="shape"):
        prob.compare_test_sets(counts, utilities=np.eye(3), key=KEY)
    with pytest.raises(ecjax.InputError, match="key"):
        prob.compare_test_sets(counts, utilities=np.eye(2))
