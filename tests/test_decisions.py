"""ecjax.decisions: scores turned into posteriors, log-odds and decisions.

References: float64 numpy computations from the probabilities (Bayes' rule written out), in the test.
"""

import numpy as np
import pytest

import jax.numpy as jnp

from ecjax._src.decisions import class_one_log_odds_kernel, log_posteriors_kernel

RNG = np.random.default_rng(12)
PROBS = RNG.dirichlet([1.0, 1.0], size=50)  # (N, 2) posteriors
PRIORS = np.array([0.3, 0.7])


def _log_odds_f64(p):
    return np.log(p[:, 1]) - np.log(p[:, 0])


@pytest.mark.parametrize("score_type", ["log_posteriors", "probabilities", "logits"])
def test_class_one_log_odds_of_posteriors_is_log_p1_minus_log_p0(score_type):
    scores = {"log_posteriors": np.log(PROBS), "probabilities": np.log(PROBS),  # probabilities arrive logged
              "logits": np.log(PROBS) + RNG.normal(0, 5, (50, 1))}[score_type]  # logits: any per-row shift
    got = np.asarray(class_one_log_odds_kernel(jnp.asarray(scores, jnp.float32), score_type), np.float64)
    np.testing.assert_allclose(got, _log_odds_f64(PROBS), rtol=2e-5, atol=2e-5)
    # Priors do not enter for posterior-type scores.
    with_priors = class_one_log_odds_kernel(jnp.asarray(scores, jnp.float32), score_type, jnp.log(PRIORS))
    np.testing.assert_allclose(np.asarray(with_priors, np.float64), got, rtol=1e-6, atol=1e-6)


def test_class_one_log_odds_of_likelihoods_is_the_llr_plus_the_prior_log_odds_when_given():
    likelihoods = RNG.uniform(0.01, 2.0, (50, 2))  # p(x | i), unnormalized across classes
    llr = np.log(likelihoods[:, 1]) - np.log(likelihoods[:, 0])
    log_lik = jnp.asarray(np.log(likelihoods), jnp.float32)
    np.testing.assert_allclose(np.asarray(class_one_log_odds_kernel(log_lik, "log_likelihoods"), np.float64), llr,
                               rtol=1e-5, atol=1e-5)
    # With priors: the posterior log-odds of Bayes' rule, from the float64 posteriors.
    joint = likelihoods * PRIORS
    posterior = joint / joint.sum(1, keepdims=True)
    got = class_one_log_odds_kernel(log_lik, "log_likelihoods", jnp.log(jnp.asarray(PRIORS, jnp.float32)))
    np.testing.assert_allclose(np.asarray(got, np.float64), _log_odds_f64(posterior), rtol=1e-5, atol=1e-5)
    # LLRs are used as they are, priors or not.
    s = jnp.asarray(llr, jnp.float32)
    np.testing.assert_array_equal(class_one_log_odds_kernel(s, "llr"), s)
    np.testing.assert_array_equal(class_one_log_odds_kernel(s, "llr", jnp.log(jnp.asarray(PRIORS))), s)


@pytest.mark.parametrize("kind, score_types", [("posterior", ("log_posteriors", "probabilities", "logits")),
                                                ("likelihood", ("log_likelihoods",)), ("llr", ("llr",))])
def test_the_posterior_kernels_branch_on_the_kind_of_the_scores(kind, score_types):
    # Issue 32.1: canonical scores carry their kind; the kernels give the same numbers for a kind as for each score
    # type of that kind, and those are Bayes' rule in float64.
    likelihoods = RNG.uniform(0.01, 2.0, (50, 2))
    joint = likelihoods * PRIORS
    posterior = joint / joint.sum(1, keepdims=True)
    scores = {"posterior": np.log(PROBS) + RNG.normal(0, 3, (50, 1)),  # a per-row shift: logits, same posteriors
              "likelihood": np.log(likelihoods),
              "llr": np.log(likelihoods[:, 1]) - np.log(likelihoods[:, 0])}[kind]
    want = PROBS if kind == "posterior" else posterior
    s, log_p = jnp.asarray(scores, jnp.float32), jnp.log(jnp.asarray(PRIORS, jnp.float32))
    got = np.asarray(log_posteriors_kernel(s, log_p, kind), np.float64)
    np.testing.assert_allclose(got, np.log(want), rtol=2e-5, atol=2e-5)
    odds = scores if kind == "llr" else _log_odds_f64(want)  # an LLR is used as it is (what a threshold compares)
    np.testing.assert_allclose(np.asarray(class_one_log_odds_kernel(s, kind, log_p), np.float64), odds,
                               rtol=2e-5, atol=2e-5)
    for score_type in score_types:
        np.testing.assert_array_equal(np.asarray(log_posteriors_kernel(s, log_p, score_type)), got)


@pytest.mark.parametrize("score_type, trained", [("log_posteriors", False), ("log_posteriors", True), ("llr", False)])
def test_binary_bayes_threshold_separates_the_cheaper_decisions(score_type, trained):
    # Reference: the expected cost of each decision, sum_i c_id P(i | x), written out in float64 from the
    # posterior Bayes' rule gives at scores just below and just above the threshold (issue 32.2: the threshold moved
    # from the command line into the library).
    from ecjax._src.decisions import binary_bayes_threshold

    rng = np.random.default_rng(5)
    for _ in range(20):
        costs = np.array([[rng.uniform(0, 1), rng.uniform(1, 5)], [rng.uniform(1, 5), rng.uniform(0, 1)]])
        priors = rng.dirichlet([2.0, 2.0])
        training = rng.dirichlet([2.0, 2.0]) if trained else None
        thr = binary_bayes_threshold(costs, priors, score_type=score_type, training_priors=training)
        for s, decide in ((thr - 1e-6, 0), (thr + 1e-6, 1)):
            if score_type == "llr":  # posterior log-odds: the LLR plus the prior log-odds
                log_odds = s + np.log(priors[1] / priors[0])
            elif trained:  # posteriors of the training priors, re-weighted to the deployment priors
                log_odds = s - np.log(training[1] / training[0]) + np.log(priors[1] / priors[0])
            else:
                log_odds = s
            p1 = 1 / (1 + np.exp(-log_odds))
            cost_of = np.array([1 - p1, p1]) @ costs
            assert int(np.argmin(cost_of)) == decide
