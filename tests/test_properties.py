"""Property-based tests (hypothesis) of the core's invariants.

- Dyrland et al. (2022) eq. 11: ranking by utility yield is unchanged by U -> a U + b, a > 0;
- Ferrer (2022a) eq. 3-4: the naive system (always the best naive decision) has NEC = 1,
  and every constant-decision system has NEC >= 1;
- Ferrer (2025) eq. 7: with the true posteriors of a simulated problem, Bayes
  decisions are never beaten on average by another decision rule;
- batching: ``(M, N)`` decisions, ``(B, K, D)`` costs and ``(S, N, K)`` scores
  give the same as separate calls; ``jit``/``vmap`` equal the eager result.

References are numpy computations written here, never ecjax itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import log_softmax

import jax
import jax.numpy as jnp

from ecjax import metrics
from ecjax.confusion import confusion_matrix
from ecjax.decisions import bayes_decisions, naive_decision
from ecjax.scores import bayes_expected_cost

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# A few fixed shapes keep the number of JAX compilations small.
SHAPES = st.sampled_from([(2, 2), (2, 3), (3, 3), (4, 5)])


@st.composite
def systems_and_matrix(draw):
    """M count matrices (K, D) with every class present, and a (K, D) matrix."""
    k, d = draw(SHAPES)
    m = draw(st.integers(2, 5))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 40, size=(m, k, d))
    counts[:, np.arange(k), rng.integers(0, d, size=k)] += 1  # every class has samples
    matrix = rng.normal(0.0, 10.0, size=(k, d))
    return counts.astype(np.int32), matrix, rng


@SETTINGS
@given(systems_and_matrix(), st.floats(0.01, 100.0), st.floats(-100.0, 100.0))
def test_utility_yield_ranking_invariant_under_affine_maps(data, a, b):
    """Dyrland et al. (2022) eq. 11: yield(aU + b) = a yield(U) + b (the rates of each class
    sum to 1 and so do the priors), so the ranking of systems is unchanged."""
    counts, u, _ = data
    y1 = np.asarray(metrics.utility_yield(counts, u), np.float64)
    y2 = np.asarray(metrics.utility_yield(counts, a * u + b), np.float64)
    # Numpy reference of eq. 10 with data priors: sum_ij U_ij K_ij / N.
    c = counts.astype(np.float64)
    ref = np.einsum("mij,ij->m", c, u) / c.sum((1, 2))
    np.testing.assert_allclose(y1, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y2, a * ref + b, rtol=1e-4, atol=1e-3 * (a + 1))
    # Same order for every pair whose yields are distinct beyond float32 round-off.
    scale = np.abs(u).max() * 1e-4 + 1e-6
    for i in range(len(ref)):
        for j in range(len(ref)):
            if ref[i] - ref[j] > scale:
                assert y1[i] > y1[j] and y2[i] > y2[j]


@st.composite
def costs_and_priors(draw):
    k, d = draw(SHAPES)
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    costs = rng.uniform(0.0, 5.0, size=(k, d))
    costs[rng.random((k, d)) < 0.3] = 0.0
    priors = rng.dirichlet(np.ones(k)) + 1e-3
    sizes = rng.integers(1, 200, size=k)
    return costs, priors / priors.sum(), sizes


@SETTINGS
@given(costs_and_priors(), st.booleans())
def test_naive_system_has_nec_one(data, deployment):
    costs, priors, sizes = data
    p = priors if deployment else sizes / sizes.sum()
    per_decision = p @ costs                               # Ferrer (2022a) eq. 3, numpy
    if per_decision.min() <= 1e-6:
        return  # NEC undefined (a free decision exists); covered in test_input_errors
    d_star = int(naive_decision(costs, p))
    assert per_decision[d_star] <= per_decision.min() + 1e-6 * per_decision.max()
    k, d = costs.shape
    for j in range(d):
        counts = np.zeros((k, d), np.int32)
        counts[:, j] = sizes                                # always decides j
        nec = float(metrics.normalized_expected_cost(counts, costs, priors=p if deployment else None))
        np.testing.assert_allclose(nec, per_decision[j] / per_decision.min(), rtol=1e-5)
        if j == d_star:
            np.testing.assert_allclose(nec, 1.0, rtol=1e-5)
        assert nec >= 1.0 - 1e-5


# ------------------------------------------------------ Bayes decisions

def _gaussian_problem(rng, k, n):
    """1-D scores x | class i ~ N(mu_i, sigma^2), with the exact log-posteriors (numpy)."""
    mu = np.sort(rng.normal(0.0, 2.0, size=k))
    sigma = rng.uniform(0.5, 2.0)
    priors = rng.dirichlet(2 * np.ones(k))
    y = rng.choice(k, size=n, p=priors)
    x = rng.normal(mu[y], sigma)
    log_lik = -0.5 * ((x[:, None] - mu[None, :]) / sigma) ** 2
    return x, y, log_softmax(log_lik + np.log(priors), axis=1), priors


@SETTINGS
@given(st.sampled_from([(2, 2), (2, 3), (3, 3), (3, 4)]), st.integers(0, 2**31 - 1))
def test_bayes_decisions_are_never_beaten_on_average(shape, seed):
    """With the true posteriors P(i|x), the Bayes decision minimizes
    sum_i c_ij P(i|x) for every x (Ferrer 2025, eq. 7).  Averaged over the labels
    given the scores, the EC of a rule d is the conditional risk
    (1/N) sum_n sum_i P(i|x_n) c_{i, d(x_n)}, so Bayes decisions are never
    beaten, sample by sample, by any other rule: random thresholds on the
    score, random permutations of the Bayes decisions, random decisions and
    every constant (naive) decision."""
    k, d = shape
    rng = np.random.default_rng(seed)
    x, y, log_post, _ = _gaussian_problem(rng, k, 500)
    costs = rng.uniform(0.0, 3.0, size=(k, d))
    if d > k:
        costs[:, k:] = rng.uniform(0.1, 0.6)  # an abstention-like column
    post = np.exp(log_post)
    dec = np.asarray(bayes_decisions(log_post, costs))
    risk = post @ costs                                  # (N, D) posterior-expected cost of each decision

    def conditional_risk(decisions):
        return risk[np.arange(len(x)), decisions]

    bayes = conditional_risk(dec)
    np.testing.assert_allclose(bayes, risk.min(1), rtol=1e-5, atol=1e-6)   # pointwise optimum
    rivals = [rng.permutation(dec), rng.integers(0, d, size=len(x))]
    rivals += [np.full(len(x), j) for j in range(d)]
    for _ in range(5):
        cuts = np.sort(rng.uniform(x.min(), x.max(), size=d - 1))
        rivals.append(rng.permutation(d)[np.searchsorted(cuts, x)])
    for rival in rivals:
        r = conditional_risk(rival)
        assert np.all(bayes <= r + 1e-6 * (1 + np.abs(r)))
        assert bayes.mean() <= r.mean() + 1e-7


def test_bayes_expected_cost_beats_rivals_over_label_draws():
    """Monte Carlo version: labels redrawn R = 400 times from the true posteriors
    of fixed scores (jax.random), EC computed by ecjax from counts.  The mean
    paired difference rival - Bayes must not be negative beyond 4 standard errors."""
    rng = np.random.default_rng(11)
    k, d, n = 3, 3, 400
    x, _, log_post, _ = _gaussian_problem(rng, k, n)
    costs = np.array([[0.0, 1.0, 4.0], [2.0, 0.0, 1.0], [6.0, 1.0, 0.0]])
    dec = np.asarray(bayes_decisions(log_post, costs))
    cuts = np.quantile(x, [0.3, 0.6])
    rivals = np.stack([rng.permutation(dec), np.searchsorted(cuts, x), np.zeros(n, int), (dec + 1) % d])
    labels = jax.random.categorical(jax.random.key(0), jnp.asarray(log_post), axis=-1, shape=(400, n))
    all_dec = np.concatenate([dec[None], rivals])                          # (1 + 4, N)
    counts = confusion_matrix(labels[:, None, :], all_dec[None], num_classes=k, num_decisions=d)  # (R, 5, K, D)
    # A label draw may miss a class: data priors give it weight 0 (EC = average cost per sample).
    ecs = np.asarray(metrics.expected_cost(counts, costs), np.float64)    # (R, 5)
    diff = ecs[:, 1:] - ecs[:, :1]
    mean, se = diff.mean(0), diff.std(0, ddof=1) / np.sqrt(len(diff))
    assert np.all(mean > -4 * se), (mean, se)
    # The exact expectation (conditional risk) is larger for every rival.
    risk = np.exp(log_post) @ costs
    exact = np.array([risk[np.arange(n), r].mean() for r in all_dec])
    assert np.all(exact[1:] >= exact[0])
    np.testing.assert_allclose(ecs.mean(0), exact, rtol=0.05)


# -------------------------------------------------------------- batching

@SETTINGS
@given(st.sampled_from([(2, 2), (3, 4)]), st.sampled_from([1, 3]), st.integers(0, 2**31 - 1))
def test_batched_decisions_equal_separate_calls(shape, m, seed):
    k, d = shape
    rng = np.random.default_rng(seed)
    n = 50
    y = rng.integers(0, k, n)
    dec = rng.integers(0, d, (m, n))
    w = rng.uniform(0, 2, n)
    batched = np.asarray(confusion_matrix(y, dec, num_classes=k, num_decisions=d))
    weighted = np.asarray(confusion_matrix(y, dec, num_classes=k, num_decisions=d, sample_weight=w))
    costs = rng.uniform(0, 1, (k, d))
    ecs = np.asarray(metrics.expected_cost(batched, costs))
    for i in range(m):
        one = np.asarray(confusion_matrix(y, dec[i], num_classes=k, num_decisions=d))
        np.testing.assert_array_equal(batched[i], one)
        np.testing.assert_array_equal(one, np.bincount(y * d + dec[i], minlength=k * d).reshape(k, d))
        np.testing.assert_allclose(
            weighted[i], np.bincount(y * d + dec[i], weights=w, minlength=k * d).reshape(k, d), rtol=1e-5)
        np.testing.assert_allclose(ecs[i], float(metrics.expected_cost(one, costs)), rtol=1e-6)


def test_batched_costs_and_scores_equal_separate_calls():
    rng = np.random.default_rng(4)
    k, d, n, s, b = 3, 4, 300, 2, 5
    y = rng.integers(0, k, n)
    scores = log_softmax(rng.normal(0, 2, (s, n, k)), axis=-1)
    costs = rng.uniform(0, 2, (b, k, d))
    dec = np.asarray(bayes_decisions(scores[0], costs))                 # (B, N)
    ecb = np.asarray(bayes_expected_cost(y, scores, costs))             # (S, B)
    necb = np.asarray(bayes_expected_cost(y, scores, costs, normalize=True))
    assert dec.shape == (b, n) and ecb.shape == (s, b)
    p = np.bincount(y, minlength=k) / n
    for j in range(b):
        one = np.asarray(bayes_decisions(scores[0], costs[j]))
        np.testing.assert_array_equal(dec[j], one)
        np.testing.assert_array_equal(one, np.argmin(np.exp(scores[0]) @ costs[j], axis=1))  # numpy reference
        for i in range(s):
            d_ij = np.argmin(np.exp(scores[i]) @ costs[j], axis=1)
            want = costs[j][y, d_ij].mean()                               # Ferrer (2022a) eq. 1
            np.testing.assert_allclose(ecb[i, j], want, rtol=1e-5)
            np.testing.assert_allclose(float(bayes_expected_cost(y, scores[i], costs[j])), want, rtol=1e-5)
            np.testing.assert_allclose(necb[i, j], want / np.min(p @ costs[j]), rtol=1e-5)


def test_jit_and_vmap_equal_eager():
    rng = np.random.default_rng(9)
    counts = jnp.asarray(rng.integers(1, 30, (6, 3, 3)), jnp.int32)
    costs = jnp.asarray(rng.uniform(0, 2, (3, 3)))
    priors = jnp.array([0.2, 0.3, 0.5])
    for fn in (metrics.expected_cost, metrics.normalized_expected_cost, metrics.utility_yield):
        eager = np.asarray(fn(counts, costs))
        np.testing.assert_allclose(np.asarray(jax.jit(fn)(counts, costs)), eager, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(jax.vmap(fn, in_axes=(0, None))(counts, costs)), eager, rtol=1e-6)
        eager_p = np.asarray(fn(counts, costs, priors=priors))
        jitted_p = jax.jit(lambda c, m, p: fn(c, m, priors=p))(counts, costs, priors)
        np.testing.assert_allclose(np.asarray(jitted_p), eager_p, rtol=1e-6)
    for fn in (metrics.f1_score, metrics.matthews_corrcoef):
        eager = np.asarray(fn(counts))
        np.testing.assert_allclose(np.asarray(jax.jit(fn)(counts)), eager, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(jax.vmap(fn)(counts)), eager, rtol=1e-6)
    # Decisions and confusion matrices under jit.
    scores = jnp.asarray(log_softmax(rng.normal(0, 1, (40, 3)), axis=-1))
    labels = jnp.asarray(rng.integers(0, 3, 40))
    eager_dec = bayes_decisions(scores, costs)
    np.testing.assert_array_equal(np.asarray(jax.jit(bayes_decisions)(scores, costs)), np.asarray(eager_dec))
    cm = jax.jit(lambda y, d: confusion_matrix(y, d, num_classes=3))(labels, eager_dec)
    np.testing.assert_array_equal(np.asarray(cm), np.asarray(confusion_matrix(labels, eager_dec, num_classes=3)))
    per_cost = jax.vmap(lambda c: metrics.expected_cost(cm, c))(jnp.stack([costs, 2 * costs]))
    np.testing.assert_allclose(np.asarray(per_cost), [float(metrics.expected_cost(cm, costs)) * f for f in (1, 2)],
                               rtol=1e-6)
