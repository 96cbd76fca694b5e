"""Posterior of confusion rates and deployment priors (``ecjax._src.prob.rates``; NUTS against the conjugate sampler).

References: scipy.stats.beta / dirichlet moments, a numpy rejection
sampler, and NUTS (numpyro.infer.MCMC) on the same model with ArviZ
diagnostics.
"""

import numpy as np
import pytest
from scipy import stats

import arviz as az
import jax

import ecjax
from ecjax._src import prob

KEY = jax.random.key(7)


def test_conjugate_rates_marginals_are_betas():
    counts = np.array([[[40, 8, 2], [3, 25, 0]], [[10, 0, 0], [5, 5, 20]]])  # (M=2, K=2, D=3)
    draws = np.asarray(prob.sample_rates(KEY, counts, num_draws=50_000), np.float64)
    assert draws.shape == (50_000, 2, 2, 3)
    np.testing.assert_allclose(draws.sum(-1), 1.0, atol=1e-5)
    alpha = 2 / (2 * 3)  # the documented default: A / (K D), A = 2 pseudo-observations per matrix
    for m, i, j in [(0, 0, 0), (0, 1, 2), (1, 0, 1), (1, 1, 2)]:
        a = counts[m, i, j] + alpha
        b = counts[m, i].sum() + 3 * alpha - a
        assert stats.kstest(draws[:, m, i, j], stats.beta(a, b).cdf).pvalue > 1e-3


def test_binary_default_is_jeffreys_and_concentration_is_used():
    counts = np.array([[7, 3], [1, 9]])
    d = np.asarray(prob.sample_rates(KEY, counts, num_draws=50_000), np.float64)
    assert stats.kstest(d[:, 0, 0], stats.beta(7.5, 3.5).cdf).pvalue > 1e-3
    d = np.asarray(prob.sample_rates(KEY, counts, num_draws=50_000, concentration=2.0), np.float64)
    assert stats.kstest(d[:, 1, 1], stats.beta(11, 3).cdf).pvalue > 1e-3


def test_class_priors_posterior_and_fixed():
    class_counts = np.array([30.0, 5.0, 65.0])
    p = np.asarray(prob.sample_class_priors(KEY, None, class_counts, num_draws=50_000), np.float64)
    a = class_counts + 2 / 3  # default alpha_P = A / K, A = 2
    ref = stats.dirichlet(a)
    np.testing.assert_allclose(p.mean(0), ref.mean(), atol=5 * np.sqrt(ref.var().max() / 50_000))
    np.testing.assert_allclose(p.var(0), ref.var(), rtol=0.05)
    fixed = prob.sample_class_priors(KEY, np.array([0.2, 0.3, 0.5]), class_counts, num_draws=4)
    np.testing.assert_allclose(fixed, np.tile([0.2, 0.3, 0.5], (4, 1)), rtol=1e-6)


# ~24 s at 100 classes: slow lane to keep CI under 20 minutes (the binary default stays in the default lane)
@pytest.mark.slow
def test_default_prior_is_two_pseudo_observations_per_matrix_at_100_classes():
    # The default rate prior at K = D = 100, 10 samples per class: with the class frequencies left uncertain, the
    # defaults (2 / (K D) per cell, 2 / K per class) form the Dirichlet(n + 2 / (K D)) over all K D cells, so
    # the accuracy sum_k P_k R_kk is exactly Beta(correct + 2 / D, wrong + 2 (D - 1) / D) by aggregation.
    k = 100
    rng = np.random.default_rng(11)
    rates = np.full((k, k), 0.3 / (k - 1))
    np.fill_diagonal(rates, 0.7)
    counts = np.stack([rng.multinomial(10, rates[i]) for i in range(k)])
    k1, k2 = jax.random.split(KEY)
    draws = 4000  # of 10^4 rates each
    r = np.asarray(prob.sample_rates(k1, counts, num_draws=draws), np.float64)
    p = np.asarray(prob.sample_class_priors(k2, None, counts.sum(1), num_draws=draws), np.float64)
    accuracy = (p * np.diagonal(r, axis1=-2, axis2=-1)).sum(-1)
    correct = np.trace(counts)
    reference = stats.beta(correct + 2 / k, counts.sum() - correct + 2 * (k - 1) / k)
    assert stats.kstest(accuracy, reference.cdf).pvalue > 1e-3
    # The posterior mean is shrunk by A (acc - 1/D) / (N + A) only, not by the former K (acc - 1/D) / (N + K).
    assert abs(accuracy.mean() - correct / counts.sum()) < 2.5 * 0.7 / 1002 + 4 * accuracy.std() / np.sqrt(draws)
    assert prob.rates.default_concentration(k) == pytest.approx(2 / k ** 2)
    assert prob.rates.default_concentration(k, 7) == pytest.approx(2 / (7 * k))


def test_dirichlet_deployment_priors():
    d = prob.dirichlet_priors([2.0, 6.0])
    x = np.asarray(d.sample(KEY, 50_000), np.float64)
    assert stats.kstest(x[:, 1], stats.beta(6, 2).cdf).pvalue > 1e-3
    np.testing.assert_allclose(d.mean, [0.25, 0.75])


def test_interval_priors_binary_is_uniform_prevalence():
    d = prob.interval_priors([0.95, 0.02], [0.98, 0.05])
    x = np.asarray(d.sample(KEY, 20_000), np.float64)
    np.testing.assert_allclose(x.sum(1), 1.0, atol=1e-6)
    assert stats.kstest(x[:, 1], stats.uniform(0.02, 0.03).cdf).pvalue > 1e-3
    np.testing.assert_allclose(d.mean, [0.965, 0.035], atol=1e-7)


def test_interval_priors_three_classes_uniform_on_the_slice():
    low, high = np.array([0.1, 0.2, 0.0]), np.array([0.6, 0.7, 0.5])
    d = prob.interval_priors(low, high)
    x = np.asarray(d.sample(KEY, 20_000), np.float64)
    assert np.all(x >= low - 1e-6) and np.all(x <= high + 1e-6)
    # Independent reference: uniform draws on the simplex (Dirichlet(1, 1, 1)) kept inside the box.
    rng = np.random.default_rng(3)
    ref = rng.dirichlet(np.ones(3), size=400_000)
    ref = ref[np.all((ref >= low) & (ref <= high), axis=1)]
    for c in range(3):
        assert stats.ks_2samp(x[:, c], ref[:, c]).pvalue > 1e-3
    np.testing.assert_allclose(d.mean, ref.mean(0), atol=3e-3)


@pytest.mark.slow  # NUTS, two chains: ~35 s on two cores; the conjugate sampler is checked against Betas above
def test_nuts_and_conjugate_give_the_same_posterior():
    # The same model two ways (NUTS and the conjugate sampler); R-hat through ArviZ.
    counts = np.array([[[18, 4], [6, 12]], [[15, 7], [2, 16]]])
    class_counts = counts[0].sum(1)
    samples, mcmc = prob.sample_rates_nuts(KEY, counts, num_draws=800, num_warmup=400, num_chains=2,
                                           class_counts=class_counts)
    idata = az.from_numpyro(mcmc)
    rhat = az.rhat(idata, var_names=["rates", "priors"])
    assert float(rhat["rates"].max()) < 1.01 and float(rhat["priors"].max()) < 1.01
    ess = az.ess(idata, var_names=["rates"])
    nuts = np.asarray(samples["rates"]).reshape(-1, 2, 2, 2)
    conj = np.asarray(prob.sample_rates(jax.random.key(1), counts, num_draws=100_000), np.float64)
    # Within Monte Carlo error: the NUTS standard error uses its effective sample size.
    se = np.sqrt(conj.var(0) / np.asarray(ess["rates"]) + conj.var(0) / conj.shape[0])
    assert np.all(np.abs(nuts.mean(0) - conj.mean(0)) < 4 * se)
    np.testing.assert_allclose(nuts.std(0), conj.std(0), rtol=0.15)
    p_nuts = np.asarray(samples["priors"]).reshape(-1, 2)
    p_conj = np.asarray(prob.sample_class_priors(KEY, None, class_counts, num_draws=100_000), np.float64)
    assert np.all(np.abs(p_nuts.mean(0) - p_conj.mean(0)) < 4 * np.sqrt(p_conj.var(0) / float(ess["rates"].min())))


def test_bad_rate_inputs():
    with pytest.raises(ecjax.InputError, match="concentration"):
        prob.sample_rates(KEY, np.ones((2, 2)), num_draws=10, concentration=-1)
    with pytest.raises(ecjax.InputError, match="non-negative"):
        prob.sample_rates(KEY, -np.ones((2, 2)), num_draws=10)
    with pytest.raises(ecjax.InputError, match="all zero"):
        prob.sample_rates(KEY, np.array([[1, 2], [0, 0]]), num_draws=10, concentration=0)
    with pytest.raises(ecjax.InputError, match="`concentration` must be a positive finite number, got 0"):
        prob.sample_rates_nuts(KEY, np.ones((2, 2)), concentration=0)
    with pytest.raises(ecjax.InputError, match="> 0"):
        prob.dirichlet_priors([1.0, 0.0])
    with pytest.raises(ecjax.InputError, match="low <= high"):
        prob.interval_priors([0.5, 0.6], [0.4, 0.7])
    with pytest.raises(ecjax.InputError, match="no support"):
        prob.interval_priors([0.6, 0.6], [0.9, 0.9])
    with pytest.raises(ecjax.InputError, match="num_draws"):
        prob.sample_rates(KEY, np.ones((2, 2)), num_draws=0)


def test_check_numbers_passes_numbers_and_arrays_at_or_above_the_minimum():
    from ecjax._src.inputs import check_numbers

    assert check_numbers(0.0, "concentration", low=0.0) == 0.0
    a = np.array([0.5, 2.0])
    assert check_numbers(a, "concentration", low=0.0, strict=True) is a
    for x, kwargs, message in [
        (-1.0, {}, "`concentration` must be finite and >= 0, got -1.0"),
        (0.0, {"strict": True}, "`concentration` must be finite and > 0, got 0.0"),
        (np.inf, {}, "`concentration` must be finite and >= 0, got inf"),
        (np.array([1.0, 0.0]), {"strict": True}, r"`concentration` must be finite and > 0, got 0.0 at entry \(1,\)"),
        (np.array([[3.0, np.nan]]), {"low": 2.0}, r"must be finite and >= 2, got nan at entry \(0, 1\)"),
    ]:
        with pytest.raises(ecjax.InputError, match=message):
            check_numbers(x, "concentration", **{"low": 0.0, **kwargs})


def test_check_class_vector():
    from ecjax._src.inputs import check_class_vector

    p = np.array([0.3, 0.7])
    assert check_class_vector(p, "priors") is p
    assert check_class_vector(p, "priors", num_classes=2) is p
    for x, kwargs, message in [
        (np.array([1.0]), {}, r"`priors` must be one vector of K >= 2 entries \(one per class\), got shape \(1,\)"),
        (np.ones((2, 2)), {}, r"got shape \(2, 2\)"),
        (p, {"num_classes": 3}, r"`priors` must be one vector of 3 entries \(one per class\), got shape \(2,\)"),
        (np.ones((1, 2)) / 2, {"num_classes": 2}, r"got shape \(1, 2\)"),
    ]:
        with pytest.raises(ecjax.InputError, match=message):
            check_class_vector(x, "priors", **kwargs)


def test_prior_and_concentration_arguments_are_checked_by_the_shared_validators():
    assert prob.rates.check_concentration(np.float32(0.5)) == 0.5
    with pytest.raises(ecjax.InputError, match="`concentration` must be a number, got 'a'"):
        prob.sample_rates(KEY, np.ones((2, 2)), num_draws=10, concentration="a")
    with pytest.raises(ecjax.InputError, match=r"`concentration` must be one vector of K >= 2 entries"):
        prob.dirichlet_priors([1.0])
    with pytest.raises(ecjax.InputError, match=r"`high` must be one vector of 2 entries .* got shape \(3,\)"):
        prob.interval_priors([0.1, 0.2], [0.9, 0.9, 0.9])
    with pytest.raises(ecjax.InputError, match=r"`priors` must be one vector of 2 entries"):
        prob.rates.as_class_priors(np.full((3, 2), 0.5), 2)
    np.testing.assert_allclose(prob.rates.as_class_priors([0.25, 0.75], 2), [0.25, 0.75])
