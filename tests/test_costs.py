"""Cost and utility matrix constructors and transforms against their closed forms.

References: the seeds' formulas written in numpy here, scikit-learn's
accuracy and balanced accuracy, and the seeds' own examples (Ferrer 2025, App. B
abstention rule, App. C net-benefit threshold; Dyrland et al. (2022) eqs. 11-13 and the
matrices of §0).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_softmax
from sklearn.metrics import accuracy_score, balanced_accuracy_score

import jax.numpy as jnp

from ecjax import InputError, costs, metrics
from ecjax.confusion import confusion_matrix
from ecjax.decisions import bayes_decisions, naive_decision


@pytest.mark.parametrize("k", [2, 3, 10])
def test_zero_one(k):
    np.testing.assert_array_equal(np.asarray(costs.zero_one(k)), 1 - np.eye(k))
    c = np.asarray(costs.zero_one(k, abstain=0.3))
    assert c.shape == (k, k + 1)
    np.testing.assert_allclose(c, np.c_[1 - np.eye(k), np.full(k, 0.3)])


def test_zero_one_ec_is_error_rate():
    """Ferrer (2022a) eq. 8: the EC of 0-1 costs with data priors is 1 - accuracy."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 500)
    d = np.where(rng.random(500) < 0.7, y, rng.integers(0, 4, 500))
    counts = confusion_matrix(y, d, num_classes=4)
    np.testing.assert_allclose(float(metrics.expected_cost(counts, costs.zero_one(4))),
                               1 - accuracy_score(y, d), rtol=1e-6)


@pytest.mark.parametrize("k", [2, 5])
def test_balanced_costs_give_balanced_error_rate(k):
    """Ferrer (2022b) eq. 11: costs 1/(K P_i) off the diagonal; their EC with the
    data priors is the balanced error rate, 1 - sklearn's balanced accuracy."""
    rng = np.random.default_rng(k)
    p = np.linspace(1, 4, k)
    y = rng.choice(k, 800, p=p / p.sum())
    d = np.where(rng.random(800) < 0.6, y, rng.integers(0, k, 800))
    priors = np.bincount(y, minlength=k) / len(y)
    c = np.asarray(costs.balanced(priors))
    np.testing.assert_allclose(c, (1 - np.eye(k)) / (k * priors[:, None]), rtol=1e-6)
    counts = confusion_matrix(y, d, num_classes=k)
    np.testing.assert_allclose(float(metrics.expected_cost(counts, c)), 1 - balanced_accuracy_score(y, d), rtol=1e-5)
    # Batched priors give batched matrices.
    pb = np.stack([priors, np.full(k, 1 / k)])
    np.testing.assert_allclose(np.asarray(costs.balanced(pb))[1], (1 - np.eye(k)), rtol=1e-6)


def test_f_beta_and_net_benefit_costs():
    for beta in (0.5, 1.0, 2.0):
        np.testing.assert_allclose(np.asarray(costs.f_beta(beta)), [[0, 1], [beta**2, 0]], rtol=1e-6)
    for p in (0.1, 0.5, 0.75):
        np.testing.assert_allclose(np.asarray(costs.net_benefit(p)), [[0, p / (1 - p)], [1, 0]], rtol=1e-6)


@pytest.mark.parametrize("p_t", [0.1, 0.3, 0.5, 0.8])
def test_net_benefit_bayes_threshold_is_the_threshold_probability(p_t):
    """Ferrer (2025) App. C: the Bayes threshold of NEC_{p_t} (c21 = 1, c12 = p_t/(1-p_t))
    on the posterior of class 2 is p_t itself."""
    rng = np.random.default_rng(1)
    post1 = rng.uniform(0, 1, 2000)
    post1 = post1[np.abs(post1 - p_t) > 1e-4]            # stay clear of exact ties
    log_post = np.log(np.stack([1 - post1, post1], 1))
    dec = np.asarray(bayes_decisions(log_post, costs.net_benefit(p_t)))
    np.testing.assert_array_equal(dec, (post1 > p_t).astype(int))


def test_f_beta_bayes_threshold():
    """Ferrer (2025) App. A eq. 20: decide class 2 when log(P2/P1) > log(c12/c21) = -log(beta^2)."""
    rng = np.random.default_rng(2)
    log_odds = rng.normal(0, 3, 2000)
    beta = 1.7
    t = -np.log(beta**2)
    log_odds = log_odds[np.abs(log_odds - t) > 1e-4]
    log_post = np.stack([-np.logaddexp(0, log_odds), -np.logaddexp(0, -log_odds)], 1)
    dec = np.asarray(bayes_decisions(log_post, costs.f_beta(beta)))
    np.testing.assert_array_equal(dec, (log_odds > t).astype(int))


@pytest.mark.parametrize("alpha", [0.05, 0.3])
def test_abstention_rule(alpha):
    """Ferrer (2025) App. B eq. 23: with costs [1 - I, alpha 1] the Bayes decision
    abstains iff every posterior is below 1 - alpha, else it is the argmax; the
    best naive decision (eq. 24) abstains iff every prior is below 1 - alpha."""
    rng = np.random.default_rng(3)
    k = 4
    log_post = log_softmax(rng.normal(0, 1.5, (3000, k)), axis=1)
    post = np.exp(log_post)
    keep = np.abs(post.max(1) - (1 - alpha)) > 1e-4
    log_post, post = log_post[keep], post[keep]
    dec = np.asarray(bayes_decisions(log_post, costs.zero_one(k, abstain=alpha)))
    want = np.where(post.max(1) < 1 - alpha, k, post.argmax(1))
    np.testing.assert_array_equal(dec, want)
    for priors in (np.array([0.8, 0.1, 0.05, 0.05]), np.full(k, 0.25)):
        naive = int(naive_decision(costs.zero_one(k, abstain=alpha), priors))
        assert naive == (k if priors.max() < 1 - alpha else int(priors.argmax()))


def test_utilities_costs_round_trip():
    rng = np.random.default_rng(4)
    u = rng.normal(0, 5, (3, 2, 4))
    c = costs.utilities_to_costs(u)
    np.testing.assert_allclose(np.asarray(c), -u, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(costs.costs_to_utilities(c)), u, rtol=1e-6)


def test_normalize_rows():
    """Ferrer (2025) §2: c_ij - min_j c_ij is non-negative with a zero in each row,
    leaves Bayes decisions unchanged and shifts every system's EC by the same
    sum_i P_i min_j c_ij, so rankings are unchanged."""
    rng = np.random.default_rng(5)
    k, d = 3, 4
    c = rng.normal(0, 2, (k, d))
    cn = np.asarray(costs.normalize_rows(c))
    np.testing.assert_allclose(cn, c - c.min(1, keepdims=True), rtol=1e-6, atol=1e-6)
    assert np.all(cn >= 0) and np.all(cn.min(1) == 0)
    log_post = log_softmax(rng.normal(0, 1, (500, k)), axis=1)
    np.testing.assert_array_equal(np.asarray(bayes_decisions(log_post, c)), np.asarray(bayes_decisions(log_post, cn)))
    counts = rng.integers(0, 30, (6, k, d))
    counts[:, :, 0] += 1
    shift = (counts.sum(-1) / counts.sum((-2, -1))[:, None]) @ c.min(1)
    ec = np.asarray(metrics.expected_cost(counts, c), np.float64)
    ec_n = np.asarray(metrics.expected_cost(counts, cn), np.float64)
    np.testing.assert_allclose(ec - ec_n, shift, rtol=1e-4, atol=1e-5)
    p = np.array([0.2, 0.5, 0.3])  # deployment priors: one shift for all systems
    diff = np.asarray(metrics.expected_cost(counts, c, priors=p)) - np.asarray(metrics.expected_cost(counts, cn, priors=p))
    np.testing.assert_allclose(diff, p @ c.min(1), rtol=1e-4, atol=1e-5)


def test_rescale_unit():
    """Dyrland et al. (2022) eq. 12: (U - min U) / (max U - min U), per matrix of a batch."""
    rng = np.random.default_rng(6)
    u = rng.normal(0, 10, (5, 2, 3))
    r = np.asarray(costs.rescale_unit(u))
    lo = u.min((1, 2), keepdims=True)
    hi = u.max((1, 2), keepdims=True)
    np.testing.assert_allclose(r, (u - lo) / (hi - lo), rtol=1e-5, atol=1e-6)
    # Invariant under eq. 11 (a U + b, a > 0).
    np.testing.assert_allclose(np.asarray(costs.rescale_unit(3.5 * u - 7.0)), r, rtol=1e-5, atol=1e-6)


def _eq13(x, y):
    """Dyrland et al. (2022) eq. 13 as printed (rows = classifier output, columns = true class)."""
    return np.array([[1 - x * (x > 0), y * (y > 0)], [-y * (y < 0), 1 + x * (x < 0)]], dtype=np.float64)


# The hexagon of Dyrland et al. (2022) Fig. 1: the centre, its vertices and points inside.
HEXAGON = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0), (-1.0, 0.0), (-1.0, -1.0), (0.0, -1.0),
           (0.3, -0.6), (-0.4, 0.5), (0.7, 0.2), (-0.2, -0.9), (0.5, 0.5)]


@pytest.mark.parametrize("x, y", HEXAGON)
def test_utility_from_xy_is_eq13_transposed(x, y):
    u = np.asarray(costs.utility_from_xy(x, y))
    np.testing.assert_allclose(u, _eq13(x, y).T, atol=1e-7)
    # Already normalized (eq. 12): max 1, min 0.
    assert u.max() == pytest.approx(1.0) and u.min() == pytest.approx(0.0)
    # Round trip, also through affine changes of scale (eq. 11) that float32 resolves to 1e-5.
    for a, b in ((1.0, 0.0), (500.0, -335.0), (0.25, 2.0)):
        xr, yr = costs.xy_from_utility(a * u + b)
        np.testing.assert_allclose([float(xr), float(yr)], [x, y], atol=1e-5)


def test_hexagon_landmarks():
    """Dyrland et al. (2022) §3.2: the centre is the identity (accuracy); moving right lowers the
    utility of correctly classifying class 0, left that of class 1; up raises the
    utility of misclassifying class 1, down that of class 0."""
    np.testing.assert_allclose(np.asarray(costs.utility_from_xy(0.0, 0.0)), np.eye(2))
    u = np.asarray(costs.utility_from_xy(jnp.array([0.4, -0.4, 0.0, 0.0]), jnp.array([0.0, 0.0, 0.4, -0.4])))
    assert u.shape == (4, 2, 2)
    np.testing.assert_allclose(u[0], [[0.6, 0.0], [0.0, 1.0]], atol=1e-7)
    np.testing.assert_allclose(u[1], [[1.0, 0.0], [0.0, 0.6]], atol=1e-7)
    np.testing.assert_allclose(u[2], [[1.0, 0.0], [0.4, 1.0]], atol=1e-7)
    np.testing.assert_allclose(u[3], [[1.0, 0.4], [0.0, 1.0]], atol=1e-7)
    # With the identity utilities the yield is the accuracy.
    counts = np.array([[30, 5], [10, 55]])
    np.testing.assert_allclose(float(metrics.utility_yield(counts, np.eye(2))), 85 / 100, rtol=1e-6)


def test_seed004_matrices_in_the_utility_space():
    """The factory matrices of Dyrland et al. (2022) §0 (transposed): (4) and (6) differ by the constant
    335 (§1 (d)) so they are the same point, (x, y) = (0.3, -0.6); (5) is (0.24, -0.54)."""
    u4 = np.array([[15.0, -335.0], [-35.0, 165.0]]).T
    u5 = np.array([[45.0, -335.0], [-65.0, 165.0]]).T
    u6 = np.array([[350.0, 0.0], [300.0, 500.0]]).T
    for u, xy in ((u4, (0.3, -0.6)), (u6, (0.3, -0.6)), (u5, (0.24, -0.54))):
        x, y = costs.xy_from_utility(u)
        np.testing.assert_allclose([float(x), float(y)], xy, atol=1e-6)
        np.testing.assert_allclose(np.asarray(costs.rescale_unit(u)), np.asarray(costs.utility_from_xy(*xy)),
                                   atol=1e-6)


def test_xy_from_utility_rejects_excluded_corners():
    # A matrix where misclassifying class 1 is worth more than classifying it correctly
    # lies in the excluded upper-left corner of Fig. 1.
    with pytest.raises(InputError, match="`utilities`"):
        costs.xy_from_utility(np.array([[1.0, 0.5], [0.3, 0.0]]))


def test_constructors_batch_and_trace():
    """Array parameters give batches of matrices; jit/vmap give the eager result."""
    import jax
    betas = np.array([0.5, 1.0, 3.0])
    fb = np.asarray(costs.f_beta(betas))
    np.testing.assert_allclose(fb, [[[0, 1], [b**2, 0]] for b in betas], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.vmap(costs.f_beta)(jnp.asarray(betas))), fb, rtol=1e-6)
    ps = np.array([0.1, 0.5])
    np.testing.assert_allclose(np.asarray(jax.jit(costs.net_benefit)(jnp.asarray(ps))),
                               [[[0, p / (1 - p)], [1, 0]] for p in ps], rtol=1e-6)
    priors = np.array([[0.2, 0.8], [0.5, 0.5]])
    np.testing.assert_allclose(np.asarray(jax.vmap(costs.balanced)(jnp.asarray(priors))),
                               np.asarray(costs.balanced(priors)), rtol=1e-6)
    u = np.random.default_rng(7).normal(0, 3, (4, 2, 2))
    np.testing.assert_allclose(np.asarray(jax.vmap(costs.rescale_unit)(jnp.asarray(u))),
                               np.asarray(costs.rescale_unit(u)), rtol=1e-6)
    xy = np.array([[0.3, -0.6], [-0.4, 0.5]])
    mats = np.asarray(costs.utility_from_xy(xy[:, 0], xy[:, 1]))
    xr, yr = jax.jit(costs.xy_from_utility)(jnp.asarray(mats))
    np.testing.assert_allclose(np.stack([np.asarray(xr), np.asarray(yr)], 1), xy, atol=1e-6)
