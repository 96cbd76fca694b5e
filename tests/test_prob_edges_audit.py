"""Edge cases of ``ecjax.prob`` found by a statistical audit, each against an independent computation.

Every test here failed before its fix (or, marked ``xfail(strict=True)``, still fails: a defect in a module this
audit does not own, reported with its reproducer).
"""

import numpy as np
import pytest

import jax

import ecjax
from ecjax import prob

KEY = jax.random.key(11)


# ------------------------------------------------------------------ signed-rank test: exact ties between regions

def _signed_rank_thetas(differences, rope, weights):
    """Independent numpy: ``(theta_left, theta_rope, theta_right)`` of Benavoli et al. (2014) for ``(S, n + 1)``
    Dirichlet weights over the atoms ``(0, d_1, ..., d_n)``, ``H(x) = 1{x > 0} + 1/2 1{x = 0}``."""
    atoms = np.concatenate([[0.0], np.asarray(differences, np.float64)])
    sums = atoms[:, None] + atoms[None, :]
    heaviside = lambda x: (x > 0) + 0.5 * (x == 0)  # noqa: E731
    left = np.einsum("si,ij,sj->s", weights, heaviside(-sums - 2 * rope), weights)
    right = np.einsum("si,ij,sj->s", weights, heaviside(sums - 2 * rope), weights)
    return np.stack([left, 1.0 - left - right, right], -1)


@pytest.mark.parametrize("prior_strength", [0.5, 2.0])
def test_signed_rank_identical_systems_split_left_and_right_evenly(prior_strength):
    # Every difference 0 and rope 0: every pairwise sum is 0, so theta_left = theta_right = 1/2 in every draw
    # whatever the weights (checked below with numpy's Dirichlet), and the two regions tie exactly.  The argmax
    # gave the tie to the left region: "a better with probability 1" for two identical systems.
    results = np.array([0.81, 0.79, 0.83, 0.80, 0.82, 0.78])
    weights = np.random.default_rng(0).dirichlet(np.r_[prior_strength, np.ones(6)], size=500)
    thetas = _signed_rank_thetas(np.zeros(6), 0.0, weights)
    np.testing.assert_allclose(thetas, np.tile([0.5, 0.0, 0.5], (500, 1)), atol=1e-12)
    res = prob.signed_rank_test(results, results, rope=0.0, prior_strength=prior_strength, key=KEY, num_draws=2000)
    np.testing.assert_allclose(np.asarray(res.probabilities), [0.5, 0.0, 0.5], atol=1e-6)


def test_signed_rank_ties_are_split_only_where_exact():
    # A batch: one row of identical systems (an exact tie in every draw), one row with a clear direction (no
    # ties: the shares of the largest region, as before), against the thetas of numpy's own computation.
    a = np.array([[0.81, 0.79, 0.83, 0.80, 0.82, 0.78], [0.81, 0.79, 0.83, 0.80, 0.82, 0.78]])
    b = a + np.array([[0.0] * 6, [0.02, 0.01, 0.03, -0.005, 0.02, 0.01]])
    res = prob.signed_rank_test(a, b, rope=0.0, key=KEY, num_draws=4000)
    p = np.asarray(res.probabilities, np.float64)
    np.testing.assert_allclose(p[0], [0.5, 0.0, 0.5], atol=1e-6)
    weights = np.random.default_rng(1).dirichlet(np.r_[0.5, np.ones(6)], size=20_000)
    thetas = _signed_rank_thetas(b[1] - a[1], 0.0, weights)
    ref = np.bincount(np.argmax(thetas, -1), minlength=3) / thetas.shape[0]  # no exact ties here
    error = np.sqrt(ref * (1 - ref) / 20_000 + p[1] * (1 - p[1]) / 4000)
    np.testing.assert_array_less(np.abs(p[1] - ref), 5 * error + 1e-9)


# --------------------------------------------------- evidence past what a float32 posterior draw can hold

LABELS = np.array([0, 1, 1, 0, 1, 0, 1, 1, 0, 0])
DECISIONS = np.array([[0, 1, 1, 0, 1, 1, 1, 1, 0, 0], [0, 1, 0, 0, 1, 0, 0, 1, 1, 0]])
FEW_DRAWS = prob.MonteCarloSettings(num_draws=1000)


@pytest.mark.parametrize("call, argument", [
    # Before: a ZeroDivisionError from the paired prior's stick breaking (log(A / (1 + A)) = 0 from A = 2^53).
    (lambda: prob.compare(prob.Systems(LABELS, DECISIONS), costs=1 - np.eye(2), concentration=1e16, key=KEY,
                          settings=FEW_DRAWS), "concentration"),
    # Before: the float32 weighted counts overflowed to inf and the Gamma sampler never accepted (it hung).
    (lambda: prob.compare(prob.Systems(LABELS, DECISIONS, sample_weight=np.full(10, 1e38)), costs=1 - np.eye(2),
                          key=KEY, settings=FEW_DRAWS), "sample_weight"),
    # Before: silently wrong: every yield draw 0 (HDIs [0, 0]) and P(best) 0.51 / 0.49 where it is 0.65 / 0.35.
    (lambda: prob.compare_counts(np.array([[[1e38, 1], [1, 1e38]], [[1e38, 2], [1, 1e38]]]), costs=1 - np.eye(2),
                                 key=KEY, settings=FEW_DRAWS), "counts"),
    (lambda: prob.dirichlet_priors([1e38, 1e38]), "concentration"),
    (lambda: prob.sample_rates(KEY, np.array([[1e38, 1.0], [1.0, 1e38]]), num_draws=10), "counts"),
])
def test_evidence_past_float32_raises_input_error(call, argument):
    with pytest.raises(ecjax.InputError, match=f"`{argument}`.*above the"):
        call()


def test_counts_just_below_the_evidence_bound_give_the_closed_form():
    # 2^49 samples per matrix: the posterior is a point mass (sd ~ 1e-8), so with fixed priors every yield draw is
    # the expected cost sum_i P_i (n_i,wrong + a) / (n_i + 2 a) (numpy, float64) to float32 rounding, and the system
    # with fewer errors wins every draw.
    n = 2.0**48
    counts = np.array([[[n - 1e12, 1e12], [2e12, n - 2e12]], [[n - 3e12, 3e12], [1e12, n - 1e12]]])
    priors = np.array([0.3, 0.7])
    res = prob.compare_counts(counts, costs=1 - np.eye(2), priors=priors, key=KEY, settings=FEW_DRAWS,
                              decompose=False)
    a = 0.5  # the default concentration 2 / (K D)
    expected = -np.einsum("i,mi->m", priors, (counts[:, [0, 1], [1, 0]] + a) / (counts.sum(-1) + 2 * a))
    y = np.asarray(res.yields, np.float64)
    np.testing.assert_allclose(y, np.broadcast_to(expected, y.shape), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(res.p_best), [0.0, 1.0] if expected[1] > expected[0] else [1.0, 0.0])


# ------------------------------------------------------- Dirichlet draws whose concentrations are all small

# The exact sampler draws Gamma(a < 1) as Gamma(a + 1) U^(1/a) in float32: U^(1/a) underflows to 0 for
# U < exp(-87 a), i.e. with probability exp(-87 a) (0.42 at a = 0.01), and a Dirichlet row whose every concentration
# is small came back as all zeros, not a point of the simplex.  The sampler now returns such variates as their
# logarithms and normalizes those rows in the log domain (ecjax._src.prob.sampling._finish); both tests failed before.


def test_dirichlet_priors_of_small_concentration_draw_points_of_the_simplex():
    draws = np.asarray(prob.dirichlet_priors([0.01, 0.01]).sample(KEY, 4000), np.float64)
    # Every draw of a Dirichlet sums to 1; by symmetry P(P_0 > 1/2) = 1/2 (Beta(0.01, 0.01) is symmetric).
    np.testing.assert_allclose(draws.sum(1), 1.0, atol=1e-5)
    assert abs(np.mean(draws[:, 0] > 0.5) - 0.5) < 5 * np.sqrt(0.25 / 4000)


def test_unpaired_yields_of_an_empty_class_with_a_small_concentration_have_the_closed_form_mean():
    # Class 2 has no samples: its rates are Dirichlet(a, a, a); with a = 0.003 most draws of that row underflowed to
    # zeros (yield 0 from the class instead of its cost), biasing the yield draws by 26 standard errors.
    labels, decisions = np.array([0, 0, 0, 1, 1, 1]), np.array([[0, 0, 1, 1, 1, 1], [0, 1, 1, 1, 0, 1]])
    a, costs, num_draws = 0.003, 1.0 - np.eye(3), 8000
    res = prob.compare(prob.Systems(labels, decisions, paired=False), costs=costs, key=KEY, concentration=a,
                       decompose=False, settings=prob.MonteCarloSettings(num_draws=num_draws))
    # Independent closed form: E[yield_m] = -sum_i E[P_i] sum_j C_ij E[R_m,ij], E[R_m,ij] = (n_ij + a) / (n_i + 3 a),
    # E[P_i] = (n_i + alpha_P) / (N + 3 alpha_P) with alpha_P = 2 / K (ecjax.prob.rates' documented defaults).
    counts = np.stack([np.histogram2d(labels, d, bins=[np.arange(4), np.arange(4)])[0] for d in decisions])
    n_i = counts[0].sum(1)
    mean_rates = (counts + a) / (counts.sum(-1, keepdims=True) + 3 * a)
    mean_priors = (n_i + 2 / 3) / (n_i.sum() + 2)
    expected = -np.einsum("i,ij,mij->m", mean_priors, costs, mean_rates)
    y = np.asarray(res.yields, np.float64)
    np.testing.assert_array_less(np.abs(y.mean(0) - expected), 5 * y.std(0) / np.sqrt(num_draws))


# ------------------------------------------------------------------------------------------ hdi of bad draws

@pytest.mark.parametrize("draws", [np.arange(200) > 100, np.exp(1j * np.arange(200.0))])
def test_hdi_of_draws_that_are_not_real_numbers_raises_input_error(draws):
    # Before: a TypeError from inside the kernel ("sub does not accept dtype bool", "lt ... complex64").
    with pytest.raises(ecjax.InputError, match="`draws` must be numeric"):
        prob.hdi(draws, 0.9)


def test_hdi_of_real_draws_is_numpy_s_narrowest_interval():
    x = np.random.default_rng(3).exponential(size=2000)
    s, inside = np.sort(x), int(np.floor(0.9 * 2000))
    k = int(np.argmin(s[inside:] - s[: 2000 - inside]))
    np.testing.assert_allclose(np.asarray(prob.hdi(x, 0.9)), [s[k], s[k + inside]], rtol=1e-6)
