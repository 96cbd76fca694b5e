"""Deployment priors from unlabelled deployment scores (ecjax._src.prob.label_shift).

References: the likelihood (1) of the module maximized by scipy in float64; exact posteriors of Gaussian classes
(perfectly calibrated, closed form); the mean calibrated posterior equal to the class frequencies (the score
equation of the fitted bias); real outputs resampled to known shifted priors for point error and coverage.
"""
from functools import partial

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_softmax, logsumexp

import jax
import jax.numpy as jnp

import ecjax
from ecjax import prob
from ecjax._src.prob.label_shift import estimate_priors, label_shift_kernel, label_shift_posterior

from conftest import load_dataset, same_across_runs

MEANS = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])  # three unit-variance Gaussian classes in 2-D


def gaussian_posteriors(rng, labels, training_priors):
    """Exact log-posteriors for ``training_priors`` of samples of the classes ``labels``."""
    x = MEANS[labels] + rng.normal(size=(len(labels), 2))
    log_lik = -0.5 * ((x[:, None, :] - MEANS[None]) ** 2).sum(-1)
    return log_softmax(log_lik + np.log(training_priors), axis=-1)


def scipy_mle_weighted(log_post, training_priors, weights):
    """Maximizer of sum_n w_n log sum_k pi_k q_nk / pi^s_k over the simplex (softmax parameters, float64)."""
    shifted = log_post - np.log(training_priors)
    w = weights / weights.sum()

    def negative(z):
        return -np.sum(w * logsumexp(shifted + log_softmax(z), axis=1))

    z = minimize(negative, np.zeros(log_post.shape[1]), method="BFGS", options={"gtol": 1e-10}).x
    return np.exp(log_softmax(z))


def test_em_is_the_maximum_likelihood_priors_of_calibrated_scores():
    rng = np.random.default_rng(0)
    training, deployment = np.array([1 / 3, 1 / 3, 1 / 3]), np.array([0.6, 0.3, 0.1])
    y = rng.choice(3, size=20000, p=deployment)
    lp = gaussian_posteriors(rng, y, training)
    got = np.asarray(estimate_priors(lp, training_priors=training))
    np.testing.assert_allclose(got, scipy_mle_weighted(lp, training, np.ones(len(y))), atol=5e-5)
    # and near the truth: 4 sd of a labelled sample's frequency (an unlabelled one knows less), doubled for the
    # overlap of the classes
    assert np.all(np.abs(got - deployment) < 8 * np.sqrt(deployment * (1 - deployment) / 20000))
    # batched: (2, N, K) -> (2, K)
    both = np.asarray(estimate_priors(np.stack([lp, lp[::-1]]), training_priors=training))
    np.testing.assert_allclose(both, [got, got], atol=1e-6)


def test_without_shift_the_estimate_is_the_labelled_frequencies():
    # The fitted bias makes the mean calibrated posterior equal the class frequencies (its score equation), so on
    # the labelled set itself EM starts at its fixed point.
    y, s, st = load_dataset("cifar10_resnet-20")
    y, s = y[:1000], s[:1000]
    res = label_shift_posterior(y, s, s, key=jax.random.key(0), num_draws=2, score_type=st)
    freq = np.bincount(y, minlength=10) / len(y)
    np.testing.assert_allclose(res.priors, freq, atol=2e-4)
    np.testing.assert_allclose(res.training_priors, freq, rtol=1e-6)


def test_one_class_deployment_reaches_the_corner():
    # Every deployment sample is far more likely under class 0: the likelihood increases towards pi = (1, 0).
    lp = np.log(np.tile([[0.999, 0.001]], (50, 1)))
    got = np.asarray(estimate_priors(lp, training_priors=[0.5, 0.5]))
    assert got[0] > 0.99


def test_kernel_is_jit_and_vmap_able():
    # Without calibration (the public function runs the calibrated kernel under jit and lax.map already).
    rng = np.random.default_rng(1)
    y = rng.choice(3, 300)
    lp = jnp.asarray(gaussian_posteriors(rng, y, np.ones(3) / 3), jnp.float32)
    t = jnp.asarray(gaussian_posteriors(rng, rng.choice(3, 200, p=[0.5, 0.3, 0.2]), np.ones(3) / 3), jnp.float32)
    u, w = jnp.asarray(rng.exponential(size=(3, 300)), jnp.float32), jnp.asarray(rng.exponential(size=(3, 200)),
                                                                                   jnp.float32)
    run = jax.jit(jax.vmap(partial(label_shift_kernel, calibrate=False), in_axes=(None, None, None, 0, 0)))
    batched, steps = run(jnp.asarray(y), lp, t, u, w)
    assert np.all(np.asarray(steps) < 2000)
    for i in range(3):  # each draw: the float64 maximizer of its weighted likelihood (1)
        training = np.bincount(y, weights=np.asarray(u[i], np.float64), minlength=3) / float(u[i].sum())
        want = scipy_mle_weighted(np.asarray(t, np.float64), training, np.asarray(w[i], np.float64))
        np.testing.assert_allclose(batched[i], want, atol=2e-4)


def _resampled(rng, y, s, target, size, labelled=None):
    """``labelled`` samples (default half) labelled; from the other half, a deployment set of ``size`` whose classes
    are drawn from ``target`` (without replacement, so the deployment samples are a sample of the population)."""
    perm = rng.permutation(len(y))
    source, pool = perm[: labelled or len(y) // 2], perm[len(y) // 2:]
    counts = np.bincount(rng.choice(len(target), size=size, p=target), minlength=len(target))
    deployment = np.concatenate([rng.choice(pool[y[pool] == c], n, replace=False) for c, n in enumerate(counts)])
    return source, deployment


def _shift_study(name, target, size, replications, num_draws, labelled=None):
    y, s, st = load_dataset(name)
    target = np.asarray(target)
    rng = np.random.default_rng(7)
    errors, covered = [], np.zeros(len(target))
    for r in range(replications):
        source, deployment = _resampled(rng, y, s, target, size, labelled)
        res = label_shift_posterior(y[source], s[source], s[deployment], key=jax.random.key(r), num_draws=num_draws,
                                    score_type=st)
        assert res.converged
        errors.append(np.asarray(res.priors) - target)
        lo, hi = res.interval(0.9).T
        covered += (lo <= target) & (target <= hi)
    return np.array(errors), covered / replications


def _oracle_rmse(target, size):
    # What the deployment set's own labels would give: the sd of a multinomial frequency.
    return np.sqrt(target * (1 - target) / size)


def test_pneumonia_resampled_to_shifted_priors_small():
    # Labelled: 312 samples at 40/60 %; deployment: 120 unlabelled samples at 75/25 %.  Point error: RMSE within
    # 2.5x the labelled-deployment oracle (the binary MLE's sd is that of BBSE at most, 1 / (1 - e0 - e1) ~ 1.3x the
    # oracle for error rates near 0.1, and the calibration on 312 samples adds a comparable share).  Coverage: 40
    # replications of a 0.9 interval (sd 0.05); an interval that ignored the calibrator's uncertainty or the
    # deployment sampling would fall well below 0.75.
    target = np.array([0.75, 0.25])
    errors, coverage = _shift_study("pneumoniamnist_resnet50", target, 120, 40, 200)
    rmse = np.sqrt(np.mean(errors ** 2, axis=0))
    assert np.all(rmse <= 2.5 * _oracle_rmse(target, 120)), rmse
    assert np.all(coverage >= 0.75), coverage


@pytest.mark.slow  # 60 replications on CIFAR-10 (K = 10), 2000 labelled samples: several minutes
def test_cifar10_resampled_to_shifted_priors():
    target = np.array([0.25, 0.15, 0.12, 0.1, 0.08, 0.08, 0.07, 0.06, 0.05, 0.04])
    errors, coverage = _shift_study("cifar10_resnet-20", target, 1000, 60, 200, labelled=2000)
    rmse = np.sqrt(np.mean(errors ** 2, axis=0))
    assert np.all(rmse <= 2.5 * _oracle_rmse(target, 1000)), rmse
    assert np.all(np.abs(errors.mean(0)) <= 3 * rmse / np.sqrt(60)), errors.mean(0)  # no visible bias
    # 600 intervals (sd of their mean coverage ~0.015 if independent) and each class's 60 (sd 0.039)
    assert 0.85 <= coverage.mean() <= 0.95, coverage
    assert np.all(coverage >= 0.75), coverage


def test_posterior_feeds_compare_as_priors():
    y, s, st = load_dataset("pneumoniamnist_resnet50")
    rng = np.random.default_rng(3)
    source, deployment = _resampled(rng, y, s, np.array([0.75, 0.25]), 120)
    # the shapes of the study above: its compiled kernel serves
    res = label_shift_posterior(y[source], s[source], s[deployment], key=jax.random.key(0), num_draws=200,
                                score_type=st)
    dist = res.distribution()
    drawn = np.asarray(dist.sample(jax.random.key(1), 5000))
    draws = np.asarray(res.draws)
    assert all(np.any(np.all(np.isclose(draws, d), axis=1)) for d in drawn[:50])  # each is one of the draws
    np.testing.assert_allclose(drawn.mean(0), draws.mean(0), atol=0.01)
    # prob.compare(..., priors=dist) runs in the command-line test below


@pytest.mark.parametrize("kwargs, match", [
    (dict(score_type="log_likelihoods"), "score_type"),
    (dict(deployment_scores=np.log(np.full((5, 3), 1 / 3))), "deployment_scores"),
    (dict(labels=np.array([0, 0, 0, 0])), "no sample of class 1"),
    (dict(num_draws=1), "num_draws"),
])
def test_bad_inputs_are_named(kwargs, match):
    args = dict(labels=np.array([0, 1, 0, 1]), scores=np.log(np.full((4, 2), 0.5)),
                deployment_scores=np.log(np.full((5, 2), 0.5)), key=jax.random.key(0))
    args.update(kwargs)
    with pytest.raises(ecjax.InputError, match=match):
        label_shift_posterior(**args)


def test_draws_priors_refuses_rows_that_are_not_priors():
    with pytest.raises(ecjax.InputError, match="draws"):
        prob.draws_priors([[0.5, 0.6], [0.5, 0.5]])


# Slow lane (about 10 s: two commands and a posterior); the library's estimate and posterior are checked in the default
# lane (against scipy's maximum of the likelihood and the resampled data sets).
@pytest.mark.slow
def test_compare_command_draws_the_estimated_deployment_priors(tmp_path, monkeypatch):
    from ecjax._src.cli import priors

    from conftest import run_cli

    y, s, st = load_dataset("pneumoniamnist_resnet50")
    source, deployment = _resampled(np.random.default_rng(4), y, s, np.array([0.75, 0.25]), 120)
    np.save(tmp_path / "y.npy", y[source])
    np.save(tmp_path / "a.npy", s[source])
    np.save(tmp_path / "b.npy", s[source][:, ::-1])  # a second (bad) system
    np.save(tmp_path / "dep.npy", s[deployment])
    (tmp_path / "c.toml").write_text('classes = ["normal", "pneumonia"]\ncosts = [[0, 1], [5, 0]]\n')
    monkeypatch.setattr(priors, "DEPLOYMENT_PRIOR_DRAWS", 200)  # the shapes of the study above: its kernel serves
    code, out, err = run_cli("compare", "--labels", "y.npy", "--scores", "a.npy", "b.npy", "--costs", "c.toml",
                             "--deployment-scores", "dep.npy", "--draws", "500", "--json", cwd=tmp_path)
    assert code == 0, err
    import json
    record = json.loads(out)
    want = label_shift_posterior(y[source], s[source], s[deployment], key=jax.random.key(0), num_draws=200,
                                 score_type=st)
    got = record["deployment_priors"]
    np.testing.assert_allclose(got["estimate"], want.priors, rtol=1e-6)
    np.testing.assert_allclose(got["interval_90"], want.interval(0.9), rtol=1e-6)
    assert got["system"] == "a" and got["converged"]
    # the posteriors are re-weighted from the labelled frequencies to the drawn deployment priors
    np.testing.assert_allclose(record["training_priors"]["a"], np.bincount(y[source]) / len(source))
    # metrics: the estimate is the cost specification's priors (the same posterior: the same key)
    code, out, err = run_cli("metrics", "--labels", "y.npy", "--scores", "a.npy", "--costs", "c.toml",
                             "--deployment-scores", "dep.npy", "--json", cwd=tmp_path)
    assert code == 0, err
    metrics = json.loads(out)
    assert same_across_runs(metrics["deployment_priors"], got)  # exact on a CPU; see conftest
    np.testing.assert_allclose(metrics["priors"], np.asarray(got["estimate"]) / np.sum(got["estimate"]), rtol=1e-12)
    # priors given twice, and deployment scores without labelled scores, are refused
    (tmp_path / "p.toml").write_text('classes = ["n", "p"]\ncosts = [[0, 1], [5, 0]]\npriors = [0.5, 0.5]\n')
    code, _, err = run_cli("compare", "--labels", "y.npy", "--scores", "a.npy", "--costs", "p.toml",
                           "--deployment-scores", "dep.npy", cwd=tmp_path)
    assert code == 2 and "not both" in err and "--deployment-scores" in err
    code, _, err = run_cli("compare", "--labels", "y.npy", "--decisions", "y.npy", "--costs", "c.toml",
                           "--deployment-scores", "dep.npy", cwd=tmp_path)
    assert code == 2 and "needs --scores" in err
