"""Posterior-type scores re-weighted from their training priors to deployment priors (Ferrer 2022b, §3.2).

The reference is Bayes' rule in float64 numpy: ``P'(i | x) = P(i | x) w_i / sum_k P(k | x) w_k`` with
``w = deployment / training``, and the Bayes decision ``argmin_j sum_i c_ij P'(i | x)``.
"""

import numpy as np
import pytest

import jax

import ecjax
from ecjax import InputError


def _posteriors(rng, n, k, train):
    labels = rng.choice(k, size=n, p=train)
    logits = rng.normal(size=(n, k)) + 1.5 * np.eye(k)[labels]
    log_post = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    return labels, log_post


def _reference(log_post, train, deploy):
    w = np.exp(log_post) * (np.asarray(deploy) / np.asarray(train))
    return w / w.sum(1, keepdims=True)


@pytest.mark.parametrize("score_type", ["log_posteriors", "logits"])
def test_reweighted_posteriors_and_decisions_match_bayes_rule(score_type):
    rng = np.random.default_rng(0)
    train, deploy = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5])
    _, log_post = _posteriors(rng, 2000, 3, train)
    scores = log_post + (rng.normal(size=(2000, 1)) if score_type == "logits" else 0.0)  # logits: any row offset
    ref = _reference(log_post, train, deploy)
    got = ecjax.log_posteriors(scores, priors=deploy, training_priors=train, score_type=score_type)
    np.testing.assert_allclose(np.exp(np.asarray(got, np.float64)), ref, atol=2e-6)
    costs = np.array([[0.0, 1.0, 4.0], [2.0, 0.0, 1.0], [8.0, 3.0, 0.0]])
    expected = ref @ costs
    dec = np.asarray(ecjax.bayes_decisions(scores, costs, priors=deploy, training_priors=train, score_type=score_type))
    best = np.sort(expected, 1)
    clear = best[:, 1] - best[:, 0] > 1e-5  # float32 cannot order closer ties
    np.testing.assert_array_equal(dec[clear], expected.argmin(1)[clear])
    # Without deployment priors, the training priors are used: the posteriors come back unchanged.
    same = ecjax.log_posteriors(scores, training_priors=train, score_type=score_type)
    np.testing.assert_allclose(np.exp(np.asarray(same, np.float64)), np.exp(log_post), atol=2e-6)


def test_deployment_priors_lower_the_expected_cost_on_data_drawn_with_them():
    # Scores trained with priors (0.5, 0.5), deployed where class 1 has prior 0.1: deciding with the re-weighted
    # posteriors costs less on deployment data than deciding with the raw ones.
    rng = np.random.default_rng(1)
    n = 20000
    labels = (rng.random(n) < 0.1).astype(int)
    llr = 2.0 * (2 * labels - 1) + rng.normal(size=n) * 1.5  # class-1 log-likelihood ratio
    log_post = np.stack([-np.logaddexp(0, llr), -np.logaddexp(0, -llr)], 1)  # posteriors at training priors 1/2
    costs = 1 - np.eye(2)
    raw = np.asarray(ecjax.bayes_decisions(log_post, costs))
    fixed = np.asarray(ecjax.bayes_decisions(log_post, costs, priors=[0.9, 0.1], training_priors=[0.5, 0.5]))
    # Closed form of the fixed rule: decide 1 iff llr > log(0.9 / 0.1).
    np.testing.assert_array_equal(fixed, (llr > np.log(9.0)).astype(int))
    assert np.mean(fixed != labels) < np.mean(raw != labels)


def test_under_jit_and_vmap():
    rng = np.random.default_rng(2)
    train, deploy = np.array([0.7, 0.3]), np.array([0.4, 0.6])
    _, log_post = _posteriors(rng, 50, 2, train)
    ref = _reference(log_post, train, deploy)
    f = jax.jit(lambda s: ecjax.log_posteriors(s, priors=deploy, training_priors=train))
    np.testing.assert_allclose(np.exp(np.asarray(f(log_post), np.float64)), ref, atol=2e-6)
    batched = jax.vmap(lambda s: ecjax.log_posteriors(s, priors=deploy, training_priors=train))(np.stack([log_post] * 3))
    np.testing.assert_allclose(np.exp(np.asarray(batched[2], np.float64)), ref, atol=2e-6)


def test_bad_training_priors():
    rng = np.random.default_rng(3)
    _, log_post = _posteriors(rng, 20, 2, [0.5, 0.5])
    with pytest.raises(InputError, match="`training_priors` must be > 0"):
        ecjax.bayes_decisions(log_post, 1 - np.eye(2), priors=[0.5, 0.5], training_priors=[1.0, 0.0])
    with pytest.raises(InputError, match="`training_priors` must sum to 1"):
        ecjax.bayes_decisions(log_post, 1 - np.eye(2), training_priors=[0.5, 0.6])
    with pytest.raises(InputError, match="`training_priors` must have 2 entries"):
        ecjax.log_posteriors(log_post, training_priors=[0.2, 0.3, 0.5])
    with pytest.raises(InputError, match="`training_priors` is for posterior-type scores"):
        ecjax.log_posteriors(log_post[:, 1] - log_post[:, 0], priors=[0.5, 0.5], training_priors=[0.5, 0.5],
                             score_type="llr")
    with pytest.raises(InputError, match="also pass `training_priors`"):
        ecjax.bayes_decisions(log_post, 1 - np.eye(2), priors=[0.5, 0.5])
