"""The expected utility matrix and its decisions (``ecjax._src.prob.expected_utility``; Dyrland et al. (2022)
eqs. 18-19), against numpy."""

import numpy as np

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from ecjax import prob

KEY = jax.random.key(20240611)


def test_expected_utility_matrix_of_a_discrete_prior_is_eq18():
    # Dyrland et al. (2022) eq. 18: U_hat = sum_a q_a U^(a); eq. 19: the decision maximizing the q-averaged expected
    # utility is the one maximizing sum_i U_hat_ij p_i.
    mats = np.array([[[1.0, 0.0, 0.3], [0.0, 1.0, 0.3]],
                     [[4.0, 0.0, 1.0], [-2.0, 1.0, 0.5]],
                     [[0.5, 0.2, 0.4], [0.0, 3.0, 2.5]]])
    q = np.array([0.2, 0.5, 0.3])

    def discrete():
        a = numpyro.sample("a", dist.Categorical(probs=jnp.asarray(q)))
        numpyro.deterministic("utility", jnp.asarray(mats)[a])

    est = prob.expected_utility_matrix(prob.from_model(discrete), key=KEY, num_draws=200_000)
    u_hat = np.einsum("a,aij->ij", q, mats)
    assert np.all(np.abs(np.asarray(est.matrix) - u_hat) < 5 * np.asarray(est.standard_error) + 1e-6)
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(2), size=200)
    averaged = np.einsum("a,aij,ni->nj", q, mats, p)  # eq. 19: sum over a and over the true class
    fixed = prob.from_model(discrete)
    dec = np.asarray(prob.expected_utility_decision(prob.intervals(u_hat, u_hat), p))
    np.testing.assert_array_equal(dec, averaged.argmax(1))
    assert fixed.shape == (2, 3)


def test_expected_utility_bayes_decisions_match_numpy():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(300, 3)) * 2
    prior = prob.intervals(np.zeros((3, 3)), np.array([[1, 0.2, 0.3], [0.5, 2, 0.1], [0.0, 0.4, 3]]))
    dec = np.asarray(prob.expected_utility_bayes_decisions(logits, prior, score_type="logits"))
    post = np.exp(logits - logits.max(1, keepdims=True))
    post /= post.sum(1, keepdims=True)
    u_hat = np.array([[1, 0.2, 0.3], [0.5, 2, 0.1], [0.0, 0.4, 3]]) / 2
    np.testing.assert_array_equal(dec, (post @ u_hat).argmax(1))
    np.testing.assert_allclose(prob.expected_utility_matrix(prior).matrix, u_hat, rtol=1e-6)
    assert prob.expected_utility_matrix(np.eye(2)).method == "fixed"
