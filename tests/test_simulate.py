"""The seeds' simulation recipes (ecjax.simulate).

References: the seeds' own generator (``expected_cost.data``), scipy's normal
log-density, and the recipe's stated parameters (class sizes, moments).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_softmax
from scipy.stats import norm

import jax

from ecjax import InputError
from ecjax import simulate as sim
from expected_cost.data import create_scores_for_expts, draw_data_for_gaussian_model


def test_keyed_and_reproducible():
    a = sim.calibration_study(jax.random.key(7), 3, num_samples=3000)
    b = sim.calibration_study(jax.random.key(7), 3, num_samples=3000)
    c = sim.calibration_study(jax.random.key(8), 3, num_samples=3000)
    np.testing.assert_array_equal(np.asarray(a.features), np.asarray(b.features))
    np.testing.assert_array_equal(np.asarray(a.posteriors[("Mismp", "mc2")]), np.asarray(b.posteriors[("Mismp", "mc2")]))
    assert np.any(np.asarray(a.features) != np.asarray(c.features))
    e1, e2 = sim.ec_study(jax.random.key(1), 4, num_samples=2000), sim.ec_study(jax.random.key(1), 4, num_samples=2000)
    np.testing.assert_array_equal(np.asarray(e1.log_posteriors), np.asarray(e2.log_posteriors))


def test_class_sizes_priors_and_feature_moments():
    study = sim.calibration_study(jax.random.key(0), 10)
    labels = np.asarray(study.labels)
    priors = np.array([0.9] + [0.1 / 9] * 9)
    np.testing.assert_allclose(study.data_priors, priors)
    np.testing.assert_allclose(study.mismatched_priors, priors[::-1])
    sizes = np.bincount(labels)
    np.testing.assert_array_equal(sizes, np.rint(priors * 100_000).astype(int))  # step 2: closest integer
    assert np.all(np.diff(labels) >= 0)  # ordered by class, as the seeds' code
    x = np.asarray(study.features, np.float64)
    for i in range(10):
        xi = x[labels == i]
        se = np.sqrt(0.15 / len(xi))
        assert abs(xi.mean() - i) < 5 * se  # mean mu_i = i (0-based)
        assert abs(xi.var() / 0.15 - 1) < 5 * np.sqrt(2 / len(xi))  # variance 0.15


def test_log_likelihoods_are_exact_gaussian_log_densities():
    x = np.linspace(-3, 12, 301)
    llk = np.asarray(sim.gaussian_log_likelihoods(jax.numpy.asarray(x, jax.numpy.float32), 10, variance=0.15))
    ref = norm.logpdf(x[:, None], np.arange(10)[None], np.sqrt(0.15))
    np.testing.assert_allclose(llk, ref, rtol=2e-6, atol=2e-4)  # float32 on values down to about -600


@pytest.mark.parametrize("k", [2, 10])
def test_steps_4_to_7_match_the_seeds_code_on_its_own_features(k):
    n = 20_000
    ref, ref_labels = create_scores_for_expts(k, N=n, seed=0, score_scale_mc2=0.2)
    # The seeds' features: the same numpy seed and call as their generator.
    pri = np.array([0.9] + [(1 - 0.9) / (k - 1)] * (k - 1))  # their expression: int() of it truncates
    np.random.seed(0)
    feats, labels = draw_data_for_gaussian_model(np.arange(k), 0.15, np.array(pri * n, dtype=int))
    np.testing.assert_array_equal(labels, ref_labels)
    study = sim.calibration_study_from_features(feats, labels, k)
    for prior in ("Datap", "Mismp"):
        for col in ("cal", "mc1", "mc2"):
            ours = np.asarray(study.posteriors[(prior, col)], np.float64)
            np.testing.assert_allclose(np.exp(ours), np.exp(ref[col][prior]), atol=2e-6, err_msg=f"{prior}-{col}")
    if k == 2:
        for col in ("cal", "mc1"):
            ref_llr = ref[col]["llks"][:, 1] - ref[col]["llks"][:, 0]
            np.testing.assert_allclose(np.asarray(study.llr[col]), ref_llr, rtol=1e-5, atol=1e-4)
    else:
        assert study.llr is None


def test_ec_study_posteriors_follow_bayes_rule():
    study = sim.ec_study(jax.random.key(3), 10, num_samples=5000)
    priors = np.array([0.8] + [0.2 / 9] * 9)
    np.testing.assert_allclose(study.priors, priors)
    np.testing.assert_array_equal(np.bincount(np.asarray(study.labels)), np.rint(priors * 5000).astype(int))
    x = np.asarray(study.features, np.float64)
    ref = log_softmax(norm.logpdf(x[:, None], np.arange(10), np.sqrt(0.2)) + np.log(priors), axis=1)
    np.testing.assert_allclose(np.exp(np.asarray(study.log_posteriors, np.float64)), np.exp(ref), atol=2e-6)


def test_bad_inputs():
    with pytest.raises(InputError, match="num_classes"):
        sim.calibration_study(jax.random.key(0), 1)
    with pytest.raises(InputError, match="first_prior"):
        sim.ec_study(jax.random.key(0), 3, first_prior=1.2)
    with pytest.raises(InputError, match="num_samples"):
        sim.ec_study(jax.random.key(0), 3, num_samples=2)
