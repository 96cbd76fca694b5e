"""Edge cases of ``ecjax.prob`` found by a statistical audit, each against an independent computation.

Every test here failed before its fix (or, marked ``xfail(strict=True)``, still fails: a defect in a module this
audit does not own, reported with its reproducer).
"""

import numpy as np
import pytest

import jax

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
