"""Utility priors (``ecjax._src.prob.utility_priors``), checked through the expected utility matrix they give.

References: scipy.stats distributions (uniform, truncnorm, loguniform,
lognorm, gamma), scipy.integrate.nested quad over the hexagon of Dyrland et al. (2022)
Fig. 1, and Dyrland et al. (2022) eq. 13 / eq. 18 written out in numpy in this file.
"""

import math

import numpy as np
import pytest
from scipy import integrate, stats

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.infer import Predictive

import ecjax
from ecjax._src import prob

KEY = jax.random.key(20240611)
N_DRAWS = 40_000


def seed004_entry(i, j, x, y):
    """Entry (i, j) (rows = true class) of Dyrland et al. (2022) eq. 13, which is printed with rows = decision:
    [[1 - x d(x > 0), y d(y > 0)], [-y d(y < 0), 1 + x d(x < 0)]]; transposed here."""
    seed = ((1 - x * (x > 0), y * (y > 0)), (-y * (y < 0), 1 + x * (x < 0)))
    return seed[j][i]


def hexagon_quad(f):
    """int over |x|, |y|, |x - y| <= 1 of f(x, y) by nested scipy quad, split where eq. 13 has kinks."""
    def inner(x):
        lo, hi = max(-1.0, x - 1.0), min(1.0, x + 1.0)
        parts = [(lo, min(hi, 0.0)), (max(lo, 0.0), hi)]
        return sum(integrate.quad(lambda y: f(x, y), a, b, epsabs=1e-12, epsrel=1e-12)[0] for a, b in parts if b > a)
    return sum(integrate.quad(inner, a, b, epsabs=1e-11, epsrel=1e-11)[0] for a, b in [(-1.0, 0.0), (0.0, 1.0)])


# ------------------------------------------------------------------- priors

def test_intervals_uniform_entries_and_closed_form_mean():
    low = np.array([[0.0, -1.0, -2.0], [-5.0, 0.0, -1.0]])
    high = np.array([[0.0, 1.0, -1.0], [-1.0, 2.0, -1.0]])
    p = prob.intervals(low, high)
    assert p.shape == (2, 3) and p.mean_method == "closed_form"
    np.testing.assert_allclose(p.mean, (low + high) / 2)
    # Not KEY: with it, entry (0, 1) of the counter-based uniforms has a KS p-value of 5e-4, the 1-in-2000 tail.
    # Checked to be chance: 240 KS tests of ecjax._src.random_bits.uniform over 40 keys gave p-values uniform on [0, 1]
    # (KS of the p-values: p = 0.87; smallest 0.011).
    u = np.asarray(p.sample(jax.random.fold_in(KEY, 1), N_DRAWS), np.float64)
    assert u.shape == (N_DRAWS, 2, 3)
    for i, j in [(0, 1), (0, 2), (1, 0), (1, 1)]:
        ref = stats.uniform(low[i, j], high[i, j] - low[i, j])
        assert stats.kstest(u[:, i, j], ref.cdf).pvalue > 1e-3
    assert np.all(u[:, 0, 0] == 0) and np.all(u[:, 1, 2] == -1)
    # Independent entries (the forward sampler hashes one counter per entry and draw): the correlations of the
    # four free entries are within 5 standard errors (1 / sqrt(n)) of 0.
    free = u[:, [0, 0, 1, 1], [1, 2, 0, 1]]
    corr = np.corrcoef(free.T)[np.triu_indices(4, 1)]
    assert np.all(np.abs(corr) < 5 / np.sqrt(N_DRAWS)), corr
    # The forward sampler is NumPyro's Predictive of the same model, in distribution.
    from numpyro.infer import Predictive
    ref = np.asarray(Predictive(p.model, num_samples=N_DRAWS)(jax.random.key(5))["utility"], np.float64)
    for i, j in [(0, 1), (1, 0)]:
        assert stats.ks_2samp(u[:, i, j], ref[:, i, j]).pvalue > 1e-3


def test_intervals_of_costs_give_negated_utilities():
    p = prob.intervals([[0, 1], [10, 0]], [[0, 1], [50, 0]], kind="cost")
    np.testing.assert_allclose(p.mean, [[0, -1], [-30, 0]])
    u = np.asarray(p.sample(KEY, 1000))
    assert np.all(u[:, 1, 0] <= -10) and np.all(u[:, 1, 0] >= -50)


def test_truncated_normal_matches_scipy_truncnorm():
    nominal = np.array([[0.9, 0.2], [0.05, 1.0]])
    scale = np.array([[0.1, 0.3], [0.2, 0.0]])
    p = prob.truncated_normal(nominal, scale, low=0.0, high=1.0)
    u = np.asarray(p.sample(KEY, N_DRAWS), np.float64)
    for i, j in [(0, 0), (0, 1), (1, 0)]:
        a, b = (0 - nominal[i, j]) / scale[i, j], (1 - nominal[i, j]) / scale[i, j]
        ref = stats.truncnorm(a, b, loc=nominal[i, j], scale=scale[i, j])
        assert abs(float(p.mean[i, j]) - ref.mean()) < 1e-5
        assert stats.kstest(u[:, i, j], ref.cdf).pvalue > 1e-3
    assert np.all(u[:, 1, 1] == 1.0) and float(p.mean[1, 1]) == 1.0


def test_seed004_error_model_with_dominance_is_the_conditional_distribution():
    # Dyrland et al. (2022) §4.2 (iii): truncated Gaussian errors in [0, 1], correct decisions worth more than wrong ones.
    nominal = np.array([[0.5, 0.5], [0.0, 1.0]])  # a Fig. 5 centre (transposed)
    p = prob.truncated_normal(nominal, 0.2, low=0.0, high=1.0, correct_dominates=True)
    assert p.mean is None
    u = np.asarray(p.sample(KEY, N_DRAWS), np.float64)
    assert np.all(u[:, 0, 0] >= u[:, 0, 1]) and np.all(u[:, 1, 1] >= u[:, 1, 0])
    # Independent reference: scipy truncnorm draws, kept when they satisfy the constraint.
    rng = np.random.default_rng(0)
    ref = np.empty((400_000, 2, 2))
    for i in range(2):
        for j in range(2):
            a, b = (0 - nominal[i, j]) / 0.2, (1 - nominal[i, j]) / 0.2
            ref[:, i, j] = stats.truncnorm(a, b, loc=nominal[i, j], scale=0.2).rvs(400_000, random_state=rng)
    ref = ref[(ref[:, 0, 0] >= ref[:, 0, 1]) & (ref[:, 1, 1] >= ref[:, 1, 0])]
    se = np.sqrt(u.var(0) / len(u) + ref.var(0) / len(ref))
    assert np.all(np.abs(u.mean(0) - ref.mean(0)) < 5 * se)
    est = prob.expected_utility_matrix(p, key=KEY, num_draws=N_DRAWS)
    assert est.method == "monte_carlo"
    assert np.all(np.abs(np.asarray(est.matrix) - ref.mean(0)) < 5 * se)


def test_cost_ratio_log_uniform_and_log_normal():
    p = prob.cost_ratio(10, 50)
    assert p.site == "cost"
    ref = stats.loguniform(10, 50)
    np.testing.assert_allclose(p.mean, [[0, -1], [-ref.mean(), 0]], rtol=1e-6)
    u = np.asarray(p.sample(KEY, N_DRAWS), np.float64)
    assert np.all(u[:, 0, 1] == -1) and np.all(u[:, 0, 0] == 0) and np.all(u[:, 1, 1] == 0)
    assert stats.kstest(-u[:, 1, 0], ref.cdf).pvalue > 1e-3

    q = prob.cost_ratio(10, 50, distribution="log_normal", interval_mass=0.9, positive=0)
    sigma = (np.log(50) - np.log(10)) / (2 * stats.norm.ppf(0.95))
    ref = stats.lognorm(s=sigma, scale=np.sqrt(10 * 50))
    assert abs(ref.ppf(0.05) - 10) < 1e-9 and abs(ref.ppf(0.95) - 50) < 1e-9
    np.testing.assert_allclose(q.mean, [[0, -ref.mean()], [-1, 0]], rtol=1e-6)
    u = np.asarray(q.sample(KEY, N_DRAWS), np.float64)
    assert stats.kstest(-u[:, 0, 1], ref.cdf).pvalue > 1e-3


def test_seed004_uniform_is_uniform_on_the_hexagon():
    p = prob.seed004_uniform()
    draws = Predictive(prob.seed004_uniform_model, num_samples=10)(KEY)
    assert draws["utility"].shape == (10, 2, 2)
    u = np.asarray(p.sample(KEY, N_DRAWS), np.float64)
    area = hexagon_quad(lambda x, y: 1.0)
    assert abs(area - 3.0) < 1e-9
    for (i, j) in [(0, 0), (0, 1), (1, 0), (1, 1)]:
        ref = hexagon_quad(lambda x, y: seed004_entry(i, j, x, y)) / area
        assert abs(float(p.mean[i, j]) - ref) < 1e-7  # float32
        assert abs(u[:, i, j].mean() - ref) < 5 * u[:, i, j].std() / np.sqrt(N_DRAWS)
    # Uniformity: the quadrant x > 0, y > 0 of the hexagon has area 1 of 3.
    frac = np.mean((u[:, 0, 0] < 1) & (u[:, 1, 0] > 0))
    assert abs(frac - 1 / 3) < 5 * np.sqrt(2 / 9 / N_DRAWS)


def test_seed004_gaussian_expected_matrix_matches_dblquad():
    for center, sd in [((0.0, 0.0), 1 / 3), ((0.3, -0.4), 0.5)]:
        p = prob.seed004_gaussian(center, sd)
        def dens(x, y):  # unnormalized Gaussian density, pure Python for speed inside quad
            return math.exp(-0.5 * (((x - center[0]) / sd) ** 2 + ((y - center[1]) / sd) ** 2))

        z = hexagon_quad(dens)
        for (i, j) in [(0, 0), (0, 1), (1, 0), (1, 1)]:
            ref = hexagon_quad(lambda x, y: dens(x, y) * seed004_entry(i, j, x, y)) / z
            assert abs(float(p.mean[i, j]) - ref) < 1e-6
        u = np.asarray(p.sample(KEY, N_DRAWS), np.float64)
        se = u.std(0) / np.sqrt(N_DRAWS)
        assert np.all(np.abs(u.mean(0) - np.asarray(p.mean)) < 5 * se + 1e-7)


def test_from_model_user_model_and_predictive():
    def my_costs():
        r = numpyro.sample("r", dist.Gamma(4.0, 1.0))
        numpyro.deterministic("cost", jnp.array([[0.0, 1.0], [1.0, 0.0]]) * jnp.array([[1.0, 1.0], [r, 1.0]]))

    p = prob.from_model(my_costs)
    assert p.site == "cost" and p.shape == (2, 2) and p.mean is None
    est = prob.expected_utility_matrix(p, key=KEY, num_draws=N_DRAWS)
    ref = np.array([[0.0, -1.0], [-4.0, 0.0]])  # E[Gamma(4, 1)] = 4
    assert np.all(np.abs(np.asarray(est.matrix) - ref) <= 5 * np.asarray(est.standard_error) + 1e-7)
    # Plain NumPyro usage of the shipped models.
    s = Predictive(prob.interval_model, num_samples=5)(KEY, jnp.zeros((3, 3)), jnp.ones((3, 3)))
    assert s["utility"].shape == (5, 3, 3)


# ---------------------------------------------------------------- bad input

def test_bad_priors_raise_input_error():
    with pytest.raises(ecjax.InputError, match="low <= high"):
        prob.intervals([[0, 2], [0, 0]], [[1, 1], [1, 1]])
    with pytest.raises(ecjax.InputError, match="no support"):
        prob.intervals([[0, 0.8], [0, 0]], [[0.5, 1], [1, 1]], correct_dominates=True)
    with pytest.raises(ecjax.InputError, match="low <= high"):
        prob.cost_ratio(50, 10)
    with pytest.raises(ecjax.InputError, match="`low` must be a positive finite number, got 0"):
        prob.cost_ratio(0, 10)
    with pytest.raises(ecjax.InputError, match="scale"):
        prob.truncated_normal(np.eye(2), -0.1)
    with pytest.raises(ecjax.InputError, match="inside"):
        prob.truncated_normal(np.eye(2) * 2, 0.1, low=0, high=1)
    with pytest.raises(ecjax.InputError, match="sd"):
        prob.seed004_gaussian(sd=0)
    with pytest.raises(ecjax.InputError, match="D >= K"):
        prob.intervals(np.zeros((3, 2)), np.ones((3, 2)), correct_dominates=True)
    with pytest.raises(ecjax.InputError, match="kind"):
        prob.intervals(np.zeros((2, 2)), np.ones((2, 2)), kind="loss")


def test_constraints_without_support_are_reported_not_looped():
    def always_wrong():
        # Wrong decisions always worth more than correct ones: the constraint has no support.
        e = numpyro.sample("e", dist.Uniform(0, 0.1))
        numpyro.deterministic("utility", jnp.array([[0.0, 1.0], [1.0, 0.0]]) + e)

    p = prob.from_model(always_wrong, correct_dominates=True)
    with pytest.raises(ecjax.InputError, match="no support"):
        p.sample(KEY, 1000)

    def rarely_right():
        u = numpyro.sample("u", dist.Normal(0.0, 1.0).expand([2, 2]).to_event(2))
        # Row 1 always satisfies the constraint; row 0 with probability P(N(-3.7, 2) >= 0) = 0.0044.
        numpyro.deterministic("utility", u - jnp.array([[3.7, 0.0], [0.0, -20.0]]))

    with pytest.raises(ecjax.InputError, match="almost no support"):
        prob.from_model(rarely_right, correct_dominates=True).sample(KEY, 5000)
    with pytest.raises(ecjax.InputError, match="utility' or 'cost"):
        prob.from_model(lambda: numpyro.sample("z", dist.Normal()))
    with pytest.raises(ecjax.InputError, match="key"):
        prob.expected_utility_matrix(prob.from_model(rarely_right))


def test_a_prior_finds_its_sampler_once_per_size(monkeypatch):
    # The shared sampler's key hashes the bound arrays (two 1000 x 1000 bounds: 0.1 s); compare asks once per
    # block of draws, so the prior keeps what it found: a second draw of the same size hashes nothing.
    from ecjax._src.prob import utility_priors
    prior = prob.intervals(np.zeros((3, 3)), np.ones((3, 3)))
    calls = []
    real = utility_priors._model_key
    monkeypatch.setattr(utility_priors, "_model_key", lambda model: calls.append(1) or real(model))
    first = prior.sample(jax.random.key(0), 16)
    looked_up = len(calls)
    assert looked_up > 0
    again = prior.sample(jax.random.key(0), 16)
    assert len(calls) == looked_up
    np.testing.assert_array_equal(np.asarray(first), np.asarray(again))


def test_equal_priors_share_one_compiled_sampler():
    # Rebuilding the same prior (a command run again in one process, a loop over keys) must not compile its
    # sampler again; a prior with other arguments must get its own (it draws from another distribution).
    traces = []

    def model(low, high):
        traces.append((low, high))  # runs only while JAX traces the sampler
        numpyro.sample("utility", dist.Uniform(jnp.full((2, 2), low), jnp.full((2, 2), high)).to_event(2))

    one, two, three = (prob.from_model(model, *bounds) for bounds in ((0.0, 1.0), (0.0, 1.0), (2.0, 3.0)))
    built = len(traces)  # from_model runs the model once to read the site's shape
    first = one.sample(jax.random.key(0), 64)
    again = two.sample(jax.random.key(0), 64)
    assert len(traces) == built + 1
    np.testing.assert_array_equal(np.asarray(first), np.asarray(again))
    other = three.sample(jax.random.key(0), 64)
    assert len(traces) == built + 2 and float(jnp.min(other)) >= 2.0
    a = prob.intervals(np.zeros((2, 2)), np.ones((2, 2)))
    b = prob.intervals(np.zeros((2, 2)), np.full((2, 2), 2.0))
    assert float(jnp.max(b.sample(jax.random.key(1), 4000))) > 1.5 > float(jnp.max(a.sample(jax.random.key(1), 4000)))


def test_as_broadcast_gives_float64_of_the_shape_and_allows_infinite_bounds():
    from ecjax._src.inputs import as_broadcast

    out = as_broadcast(-np.inf, "low", (2, 2))
    assert out.dtype == np.float64 and out.shape == (2, 2) and np.all(out == -np.inf)
    np.testing.assert_array_equal(as_broadcast([1, 2], "scale", (2, 2)), [[1.0, 2.0], [1.0, 2.0]])
    with pytest.raises(ecjax.InputError, match="`scale` contains NaN"):
        as_broadcast([0.1, np.nan], "scale", (2, 2))
    with pytest.raises(ecjax.InputError, match=r"`high` must be a scalar or broadcast to \(2, 2\), got shape \(3,\)"):
        as_broadcast([1.0, 2.0, 3.0], "high", (2, 2))


def test_prior_arguments_are_checked_by_the_shared_validators():
    with pytest.raises(ecjax.InputError, match=r"`scale` must be finite and >= 0, got -0.1 at entry \(0, 1\)"):
        prob.truncated_normal(np.eye(2), [[0.1, -0.1], [0.1, 0.1]])
    with pytest.raises(ecjax.InputError, match="^`low` must be a positive finite number, got 0$"):  # as given
        prob.cost_ratio(0, 10)
    for distribution in ("log_uniform", "log_normal"):
        with pytest.raises(ecjax.InputError, match=f"a {distribution.replace('_', '-')} ratio needs low < high"):
            prob.cost_ratio(5, 5, distribution=distribution)
    with pytest.raises(ecjax.InputError, match="`center` must be finite, got nan"):
        prob.seed004_gaussian(center=(0.0, np.nan))
    with pytest.raises(ecjax.InputError, match="`sd` must be a positive finite number, got -1"):
        prob.seed004_gaussian(sd=-1)
    with pytest.raises(ecjax.InputError, match=r"`model` must be a NumPyro model \(a callable\), got int"):
        prob.from_model(3)
    with pytest.raises(ecjax.InputError, match=r"`site` must be one of \('z',\), got 'cost'"):
        prob.from_model(lambda: numpyro.sample("z", dist.Normal()), site="cost")
    with pytest.raises(ecjax.InputError, match=r"`utility` must be \(K, D\) \(a site of `model`\), got shape \(3,\)"):
        prob.from_model(lambda: numpyro.deterministic("utility", jnp.zeros(3)))
    with pytest.raises(ecjax.InputError, match=r"`costs` must be one \(K, D\) matrix, got shape \(2, 2, 2\)"):
        prob.utility_priors.resolve_utilities(None, np.zeros((2, 2, 2)))
    with pytest.raises(ecjax.InputError, match="give exactly one of `utilities` and `costs`"):
        prob.utility_priors.resolve_utilities(None, None)


def test_a_prior_made_without_kind_takes_it_from_the_argument():
    # No repeated words in a call (issue 32.7): `costs=prob.intervals(low, high)` reads the bounds as costs, the
    # same prior as kind="cost" (draw for draw), with the closed-form expected utility -(low + high) / 2; passed as
    # `utilities=` (or used alone) it is a utility prior, and an explicit kind is kept.
    from ecjax._src.prob.utility_priors import resolve_utilities

    low, high = np.array([[0.0, 1.0], [10.0, 0.0]]), np.array([[0.0, 3.0], [50.0, 0.0]])
    as_costs = resolve_utilities(None, ecjax.prob.intervals(low, high))
    explicit = resolve_utilities(None, ecjax.prob.intervals(low, high, kind="cost"))
    assert as_costs.site == "cost"
    np.testing.assert_allclose(np.asarray(as_costs.mean), -(low + high) / 2)
    key = jax.random.key(1)
    np.testing.assert_array_equal(np.asarray(as_costs.sample(key, 64)), np.asarray(explicit.sample(key, 64)))
    as_utilities = resolve_utilities(ecjax.prob.intervals(low, high), None)
    assert as_utilities.site == "utility"
    np.testing.assert_allclose(np.asarray(as_utilities.mean), (low + high) / 2)
    kept = resolve_utilities(None, ecjax.prob.intervals(-high, -low, kind="utility"))
    np.testing.assert_allclose(np.asarray(kept.mean), -(low + high) / 2)
    nominal = 1.0 - np.eye(2)
    normal = resolve_utilities(None, ecjax.prob.truncated_normal(nominal, 0.0, low=0.0))  # scale 0: fixed entries
    assert normal.site == "cost"
    np.testing.assert_allclose(np.asarray(normal.mean), -nominal)
