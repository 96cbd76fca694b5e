"""M systems over several data sets from per-fold results: ``hierarchical_compare_results``.

References: baycomp 1.0.3's hierarchical model (``hierarchical-t-test.stan``;
its ``HierarchicalTest`` needs pystan, absent here) as scipy densities with
each data set's ``sigma`` integrated by ``scipy.integrate.quad``, and as the
numerical integral of ``tests/test_prob_from_results.py`` (whose agreement
with baycomp's own Stan runs is quoted there); scipy's multivariate t for
the model with M = 3.  The default lane checks the model's density without
NUTS; the NUTS fits (~1 min of CPU each on two cores) are in the slow lane.
"""

import numpy as np
import pytest
from scipy import integrate, stats

import jax
import jax.numpy as jnp

import ecjax
from ecjax._src.prob import from_results as fr
from ecjax.prob import NUTSSettings
from ecjax._src.prob import ranking

# baycomp's data preparation, the 5 x 10 test vectors and the quadrature of baycomp's model are defined there.
from test_prob_from_results import X, Y, _baycomp_stan_data, _quadrature_posterior, _quadrature_predictive

KEY = jax.random.key(5)


def _log_density(data, params, centred=True):
    from numpyro.infer.util import log_density

    args = (data.mean_differences, data.whitening, data.exponents, data.folds_minus_one, data.delta_bound,
            data.std0_high)
    params = {k: jnp.asarray(val, jnp.float32) for k, val in params.items()}
    return float(log_density(fr.hierarchical_results_model, args, {"centred": centred}, params)[0])


# ---------------------------------------------------------------------------------------------------------------------
# The model's density, against baycomp's (M = 2) and scipy's multivariate t (M = 3): no NUTS


def _baycomp_marginal_log_density(stan, p):
    """baycomp's Stan model with each ``sigma_i ~ U(0, std_hi)`` integrated out numerically (scipy)."""
    x, rho = stan["x"], stan["rho"]
    q, n = x.shape
    corr = np.full((n, n), rho) + (1 - rho) * np.eye(n)
    lp = stats.uniform.logpdf(p["delta0"][0], -stan["delta_hi"], 2 * stan["delta_hi"])
    lp += stats.uniform.logpdf(p["std0"], 0, stan["std0_hi"])
    lp += stats.uniform.logpdf(p["gamma_alpha"], 1, 1) + stats.uniform.logpdf(p["gamma_beta"], 0.01, 0.09)
    lp += stats.gamma.logpdf(p["nu_minus_one"], p["gamma_alpha"], scale=1 / p["gamma_beta"])
    lp += stats.t.logpdf(p["delta"][:, 0], p["nu_minus_one"] + 1, p["delta0"][0], p["std0"]).sum()
    for i in range(q):
        def log_f(s):
            return stats.multivariate_normal.logpdf(x[i], np.full(n, p["delta"][i, 0]), s * s * corr)

        grid = np.geomspace(1e-3, stan["std_hi"], 60)
        peak_at = grid[np.argmax([log_f(s) for s in grid])]
        peak = log_f(peak_at)
        pieces = [(0, peak_at), (peak_at, 20 * peak_at), (20 * peak_at, stan["std_hi"])]
        total = sum(integrate.quad(lambda s: np.exp(log_f(s) - peak), lo, hi, limit=200)[0] for lo, hi in pieces)
        lp += peak + np.log(total) - np.log(stan["std_hi"])
    return lp


# Slow lane (about 8 s); the three-system density against scipy's multivariate t stays in the default lane.
@pytest.mark.slow
def test_two_systems_density_is_baycomps_with_sigma_integrated():
    stan = _baycomp_stan_data(X, Y, rope=0.01)
    per_set = [np.stack([a, b]) for a, b in zip(X, Y)]
    data = fr.hierarchical_results_data(per_set, rope=0.01, rho=0.1, within_prior="baycomp")
    # The scaling and bounds are baycomp's.
    np.testing.assert_allclose([data.rope, data.delta_bound, data.std0_high],
                               [stan["rope"], stan["delta_hi"], stan["std0_hi"]], rtol=1e-9)
    correlated = fr.hierarchical_results_data(per_set, rope=0.01, rho=0.1)
    rng = np.random.default_rng(4)
    got, want, other = [], [], []
    for _ in range(4):
        p = {"delta0": rng.uniform(-1, 2, 1), "std0": rng.uniform(0.05, 2), "shares": np.array([0.3, 0.7]),
             "gamma_alpha": rng.uniform(1, 2), "gamma_beta": rng.uniform(0.01, 0.1),
             "nu_minus_one": rng.gamma(1.5, 20), "delta": rng.normal(0.8, 0.5, (5, 1))}
        got.append(_log_density(data, p))
        want.append(_baycomp_marginal_log_density(stan, p))
        other.append(_log_density(correlated, p))
    # Densities agree up to a constant of the data (Stan's and the integral's normalizers): compare differences.
    got, want, other = (np.array(z) - z[0] for z in (got, want, other))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-3)
    # The comparison can fail: the default within-set prior (n - 1 degrees of freedom, not n - 2) is another model.
    assert np.abs(other - want).max() > 0.1


def _three_systems(seed, q=4, n=8):
    rng = np.random.default_rng(seed)
    level = rng.normal(0.8, 0.05, (1, q, 1)) + rng.normal(0, 0.02, (1, q, n))  # data set and fold effects
    return level + np.array([0.0, 0.01, 0.02])[:, None, None] + rng.normal(0, 0.01, (3, q, n))


def test_three_systems_density_against_scipy_multivariate_t():
    scores = _three_systems(0)
    data = fr.hierarchical_results_data([scores[:, d] for d in range(4)], rope=0.0, rho=1 / 8)
    # Units and bounds from every pair of systems, in numpy.
    pairs = [(0, 1), (0, 2), (1, 2)]
    diffs = np.stack([scores[b] - scores[a] for a, b in pairs])  # (pairs, q, n)
    unit = np.std(diffs, axis=-1).mean()
    assert abs(data.unit - unit) < 1e-12 * unit
    assert abs(data.delta_bound - np.abs(diffs).max() / unit) < 1e-9
    assert abs(data.std0_high - 1000 * np.sqrt(np.var(diffs.mean(-1) / unit, axis=1).mean())) < 1e-6
    c = 1 / 8 + (1 / 8) / (1 - 1 / 8)

    def want(p, independent=False):
        lp = stats.uniform.logpdf(p["delta0"], -data.delta_bound, 2 * data.delta_bound).sum()
        lp += stats.uniform.logpdf(p["std0"], 0, data.std0_high) + stats.dirichlet.logpdf(p["shares"], np.ones(3))
        lp += stats.uniform.logpdf(p["gamma_alpha"], 1, 1) + stats.uniform.logpdf(p["gamma_beta"], 0.01, 0.09)
        lp += stats.gamma.logpdf(p["nu_minus_one"], p["gamma_alpha"], scale=1 / p["gamma_beta"])
        # Exchangeable system effects theta_m ~ b0_m + s_m T (one shared t mixing), seen through theta - theta_0.
        contrast = np.array([[-1.0, 1, 0], [-1, 0, 1]])
        shape0 = contrast @ np.diag(p["std0"] ** 2 * 1.5 * p["shares"]) @ contrast.T
        nu = p["nu_minus_one"] + 1
        for d in range(4):
            lp += stats.multivariate_t(p["delta0"], shape0, df=nu).logpdf(p["delta"][d])
            # Each data set: the posterior of its mean differences to system 0 (compare_results' multivariate t).
            dd = (scores[1:, d] - scores[0, d]) / unit
            cov = np.cov(dd)
            if independent:
                cov = np.diag(np.diag(cov))
            lp += stats.multivariate_t(dd.mean(1), c * cov, df=7).logpdf(p["delta"][d])
        return lp

    rng = np.random.default_rng(5)
    got, ref, ind = [], [], []
    for _ in range(4):
        p = {"delta0": rng.uniform(-1, 2, 2), "std0": rng.uniform(0.1, 3), "shares": rng.dirichlet(np.ones(3)),
             "gamma_alpha": rng.uniform(1, 2), "gamma_beta": rng.uniform(0.01, 0.1),
             "nu_minus_one": rng.gamma(1.5, 20), "delta": rng.normal(1.0, 0.7, (4, 2))}
        got.append(_log_density(data, p))
        ref.append(want(p))
        ind.append(want(p, independent=True))
    got, ref, ind = (np.array(z) - z[0] for z in (got, ref, ind))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=2e-3)
    # It can fail: dropping the correlation of the two differences that share system 0 moves the density.
    assert np.abs(ind - ref).max() > 1.0

    # The non-centred form used by NUTS: delta = delta0 + L0 delta_std, density changed by the Jacobian |det L0|^q.
    p = {"delta0": np.array([0.3, 0.8]), "std0": 0.9, "shares": np.array([0.5, 0.2, 0.3]), "gamma_alpha": 1.5,
         "gamma_beta": 0.05, "nu_minus_one": 6.0, "delta_std": rng.normal(0, 1, (4, 2))}
    chol = np.linalg.cholesky(np.array([[-1.0, 1, 0], [-1, 0, 1]]) @ np.diag(0.81 * 1.5 * p["shares"])
                              @ np.array([[-1.0, 1, 0], [-1, 0, 1]]).T)
    centred = {k: val for k, val in p.items() if k != "delta_std"}
    centred["delta"] = p["delta0"] + p["delta_std"] @ chol.T
    jacobian = 4 * np.log(np.abs(np.diag(chol))).sum()
    assert abs(_log_density(data, p, centred=False) - (_log_density(data, centred) + jacobian)) < 1e-3


# ---------------------------------------------------------------------------------------------------------------------
# Input errors (refused before any NUTS run)


def test_input_errors():
    scores = _three_systems(1)
    with pytest.raises(ecjax.InputError, match=r"`scores` must be \(M, q, n\).*one data set: use compare_results"):
        fr.hierarchical_compare_results(scores[:, 0], key=KEY)
    with pytest.raises(ecjax.InputError, match="at least 2 data sets"):
        fr.hierarchical_compare_results(scores[:, :1], key=KEY)
    with pytest.raises(ecjax.InputError, match="at least 2 systems"):
        fr.hierarchical_compare_results(scores[:1], key=KEY)
    with pytest.raises(ecjax.InputError, match="`scores` contains NaN"):
        fr.hierarchical_compare_results(np.where(scores > 0.85, np.nan, scores), key=KEY)
    with pytest.raises(ecjax.InputError, match=r"`scores\[1\]` must be \(M, n_d\) with the M = 3"):
        fr.hierarchical_compare_results([scores[:, 0], scores[:2, 1]], key=KEY)
    with pytest.raises(ecjax.InputError, match=r"`scores\[1\]` contains NaN"):
        fr.hierarchical_compare_results([scores[:, 0], np.full((3, 8), np.nan)], key=KEY)
    # n <= M - 1 folds: the (M - 1) x (M - 1) covariance of the differences has rank <= n - 1.
    many = np.random.default_rng(0).normal(0.8, 0.01, (6, 3, 5))
    with pytest.raises(ecjax.InputError, match="data set 0 has 5 folds for 6 systems.*rank at most n - 1 = 4"):
        fr.hierarchical_compare_results(many, key=KEY)
    with pytest.raises(ecjax.InputError, match="within_prior='baycomp' leaves n - M = 0"):
        fr.hierarchical_compare_results(many[:5], key=KEY, within_prior="baycomp")
    # A duplicate system on one data set: singular covariance (checked in float64, named).
    dup = scores.copy()
    dup[2, 3] = dup[1, 3] + 0.004
    # A constant non-zero difference (up to rounding) is refused as compare_results refuses it ...
    with pytest.raises(ecjax.InputError, match="system 2 - system 1 on data set 3 is the same non-zero number on "
                                               "every fold"):
        fr.hierarchical_compare_results(dup, key=KEY)
    # ... and an exact duplicate leaves the covariance of the differences singular.
    dup[2, 3] = dup[1, 3]
    with pytest.raises(ecjax.InputError, match="on data set 3 system 2 - system 1 is the same on every fold"):
        fr.hierarchical_compare_results(dup, key=KEY)
    dep = scores.copy()
    dep[2, 1] = 0.5 * (dep[0, 1] + dep[1, 1])
    with pytest.raises(ecjax.InputError, match="on data set 1 the systems' fold results are linearly dependent"):
        fr.hierarchical_compare_results(dep, key=KEY)
    with pytest.raises(ecjax.InputError, match="`key` is required"):
        fr.hierarchical_compare_results(scores)
    with pytest.raises(ecjax.InputError, match="`rope` must be a non-negative finite number"):
        fr.hierarchical_compare_results(scores, rope=-0.1, key=KEY)
    with pytest.raises(ecjax.InputError, match="`within_prior`"):
        fr.hierarchical_compare_results(scores, key=KEY, within_prior="flat")
    with pytest.raises(ecjax.InputError, match="`systems` names 2 systems"):
        fr.hierarchical_compare_results(scores, key=KEY, systems=["a", "b"])
    with pytest.raises(ecjax.InputError, match="`runs` must divide"):
        fr.hierarchical_compare_results([scores[:, 0], scores[:, 1, :7]], key=KEY, runs=2)
    with pytest.raises(ecjax.InputError, match="too few draws for a 0.99 HDI"):
        fr.hierarchical_compare_results(scores, key=KEY, nuts=NUTSSettings(num_samples=100), hdi_prob=0.99)
    with pytest.raises(ecjax.InputError, match="`upper_alpha`"):
        fr.hierarchical_compare_results(scores, key=KEY, bounds=fr.HyperpriorBounds(upper_alpha=0.5))
    # compare_results points to the new function for (M, q, n) results.
    with pytest.raises(ecjax.InputError, match="use hierarchical_compare_results"):
        fr.compare_results(scores, key=KEY)


# ---------------------------------------------------------------------------------------------------------------------
# NUTS fits: slow lane


def _region_probabilities(posterior, unit, rope):
    """``(P(delta0 < -rope), P(|delta0| <= rope), P(delta0 > rope))`` from the quadrature grid (original units):
    the marginal density of ``delta0`` integrated by trapezoids, its CDF interpolated linearly."""
    d0, _, _, weights = posterior
    marginal = weights.sum((1, 2))
    density = marginal / np.concatenate([[0.5], np.ones(d0.size - 2), [0.5]]) / (d0[1] - d0[0])
    cdf = np.concatenate([[0], np.cumsum(0.5 * (density[1:] + density[:-1]) * np.diff(d0))])
    cdf /= cdf[-1]
    lo, hi = np.interp([-rope / unit, rope / unit], d0, cdf)
    return np.array([lo, hi - lo, 1 - hi])


def _with_n_minus_one_df(stan):
    """baycomp's data with one fold more, so that the quadrature's ``t_{n-2}`` per data set (sigma integrated under
    baycomp's flat prior) is the correlated model's ``t_{n-1}`` of the original data: same mean, the extra fold at
    the mean, the spread rescaled so that the t's scale is the correlated t-test's, ``sqrt(c s^2)``."""
    x, rho = stan["x"], stan["rho"]
    q, n = x.shape
    mean = x.mean(1, keepdims=True)
    factor = np.sqrt((n + 1) * (1 + (n - 1) * rho) / (n * (1 + n * rho)))
    return dict(stan, x=np.concatenate([mean + factor * (x - mean), mean], 1))


@pytest.mark.slow  # two NUTS fits of 2 x 5000 draws (~1-2 min each on two cores) and two 9 s quadratures
def test_two_systems_match_the_quadrature_of_baycomps_model():
    rope = 0.01
    stan = _baycomp_stan_data(X, Y, rope=rope)
    unit = np.mean(np.std(Y - X, axis=1))
    quad = {"baycomp": _quadrature_posterior(stan), "correlated": _quadrature_posterior(_with_n_minus_one_df(stan))}
    predictive = {k: _quadrature_predictive(post, rope / unit) for k, post in quad.items()}
    regions = {k: _region_probabilities(post, unit, rope) for k, post in quad.items()}
    # The model difference (n - 2 against n - 1 degrees of freedom in each data set), by quadrature alone: here
    # (n = 10) the predictive triple moves by 0.0020 and the population mean's by 0.0063 (P(rope) 0.6736 -> 0.6798),
    # both below the Monte Carlo error of a fit: each fit is checked against the quadrature of its own model.
    assert np.abs(predictive["baycomp"] - predictive["correlated"]).max() < 0.003
    assert np.abs(regions["baycomp"] - regions["correlated"]).max() < 0.01
    for within_prior in ("baycomp", "correlated"):
        res = fr.hierarchical_compare_results(np.stack([X, Y]), rope=rope, key=KEY, within_prior=within_prior,
                                              nuts=NUTSSettings(num_warmup=1000, num_samples=4000, num_chains=2))
        assert res.num_divergences < 0.01 * res.draws.shape[0] and res.max_rhat < 1.01
        # 4 Monte Carlo errors + the quadrature's own error (0.002, from halving its grid).
        tol = 4 * res.errors["next_dataset_predictive"][0, 1] + 0.002
        got = res.next_dataset_predictive[0, 1]
        assert np.all(np.abs(got - predictive[within_prior]) <= tol), (within_prior, got, predictive, tol)
        tol = 4 * res.errors["pairwise"][0, 1] + 0.003
        assert np.all(np.abs(res.pairwise[0, 1] - regions[within_prior]) <= tol), (res.pairwise[0, 1], regions)
        d0, _, _, weights = quad[within_prior]
        delta0 = res.draws[:, 1] - res.draws[:, 0]
        assert abs(delta0.mean() - (weights.sum((1, 2)) * d0).sum() * unit) < 4 * ranking.batch_means_error(delta0)
        # The two systems' relative means are +-delta0 / 2, and P(best) is P(delta0 > 0).
        np.testing.assert_allclose(res.draws.sum(1), 0, atol=1e-6)
        assert abs(res.p_best[1] - np.mean(delta0 > 0)) < 1e-6


def _pair_quadrature(a, b, rope):
    """baycomp's pairwise hierarchical model of ``scores_a = a``, ``scores_b = b`` by quadrature: its predictive
    triple and ``P(delta0 > 0)``."""
    stan = _baycomp_stan_data(a, b, rope=rope)
    unit = np.mean(np.std(b - a, axis=1))
    posterior = _quadrature_posterior(stan)
    return _quadrature_predictive(posterior, rope / unit), _region_probabilities(posterior, unit, 0.0)[2], posterior


def _simulated(seed, effects, q=5, n=10, spread=0.01, noise=0.01):
    rng = np.random.default_rng(seed)
    m = len(effects)
    level = rng.normal(0.8, 0.05, (1, q, 1)) + rng.normal(0, 0.02, (1, q, n))
    return level + np.asarray(effects)[:, None, None] + rng.normal(0, spread, (m, q, 1)) + rng.normal(0, noise,
                                                                                                      (m, q, n))


@pytest.mark.slow  # one NUTS fit and three 9 s quadratures: ~1.5 min on two busy cores
def test_three_systems_pairs_against_baycomps_pairwise_model():
    scores = _simulated(21, [0.0, 0.006, 0.012])
    rope = 0.005
    res = fr.hierarchical_compare_results(scores, rope=rope, key=KEY)
    assert res.num_divergences < 0.01 * res.draws.shape[0] and res.max_rhat < 1.02
    for a, b in ((0, 1), (0, 2), (1, 2)):
        predictive, p_right, _ = _pair_quadrature(scores[a], scores[b], rope)
        # Not the same model: the joint one shares nu among the pairs, ties the three pairwise spreads to three
        # systems' spreads, lets the other differences inform this one, and has n - 1 degrees of freedom per data set
        # where baycomp has n - 2 (the last moves these probabilities by < 0.01 above). Measured: at most 0.041
        # apart (the joint model a little more confident, having more data on each pair's population), Monte
        # Carlo errors <= 0.009. Agreement within 0.06 says the joint model is baycomp's pairwise model made joint;
        # a wrong sign or a lost pair would be off by far more.
        got = res.next_dataset_predictive[a, b]
        assert np.all(np.abs(got - predictive) <= 0.06), (a, b, got, predictive)
        delta0 = res.draws[:, b] - res.draws[:, a]
        assert abs(np.mean(delta0 > 0) - p_right) <= 0.06, (a, b, np.mean(delta0 > 0), p_right)
        # The matrix is antisymmetric: [b, a] is [a, b] reversed.
        np.testing.assert_allclose(res.pairwise[b, a], res.pairwise[a, b][::-1], atol=1e-6)
        np.testing.assert_allclose(res.next_dataset_predictive[b, a], got[::-1], atol=1e-9)


@pytest.mark.slow  # one NUTS fit and two 9 s quadratures: ~3 min on two busy cores
def test_the_joint_model_keeps_the_correlation_through_the_shared_system():
    # Systems 1 and 2 are the same up to 0.0005 per fold; both differ from system 0 by noisy fold results.
    rng = np.random.default_rng(31)
    q, n = 6, 10
    x0 = rng.normal(0.8, 0.05, (q, 1)) + rng.normal(0, 0.03, (q, n))
    x1 = x0 + 0.01 + rng.normal(0, 0.04, (q, n))
    x2 = x1 + rng.normal(0, 0.0005, (q, n))
    scores = np.stack([x0, x1, x2])
    rope = 0.005
    res = fr.hierarchical_compare_results(scores, rope=rope, key=KEY)
    assert res.num_divergences < 0.01 * res.draws.shape[0]
    assert res.pairwise[1, 2, 1] > 0.95, res.pairwise[1, 2]  # measured: 1.000
    # Two independent pairwise models against system 0 (baycomp's, by quadrature) lose that: the difference of
    # their population means is as uncertain as either, and 1 and 2 are far from surely equivalent.
    _, _, post1 = _pair_quadrature(x0, x1, rope)
    _, _, post2 = _pair_quadrature(x0, x2, rope)
    u1, u2 = np.mean(np.std(x1 - x0, axis=1)), np.mean(np.std(x2 - x0, axis=1))
    m1, m2 = post1[3].sum((1, 2)), post2[3].sum((1, 2))
    gap = post2[0][None, :] * u2 - post1[0][:, None] * u1
    p_equivalent = (m1[:, None] * m2[None, :] * (np.abs(gap) <= rope)).sum()
    assert p_equivalent < 0.5, p_equivalent  # measured: 0.36


@pytest.mark.slow  # two NUTS fits: ~1 min on two busy cores
def test_clear_best_and_relabelling():
    scores = _simulated(41, [0.0, 0.004, 0.05])
    res = fr.hierarchical_compare_results(scores, rope=0.005, key=KEY, systems="ABC")
    assert res.p_best[2] > 0.99 and res.best == "C"
    # Relabel: C becomes system 0 (the reference of the differences), A the last.
    order = [2, 1, 0]
    again = fr.hierarchical_compare_results(scores[order], rope=0.005, key=jax.random.key(6), systems="CBA")
    # 4 Monte Carlo errors, and 0.005 for the one asymmetry of the prior (its box bounds the differences to system
    # 0; far from binding here: measured differences 0.017 and 0.014, each within 4 errors).
    for name in ("pairwise", "next_dataset_predictive"):
        x, y = getattr(res, name), getattr(again, name)[np.ix_(order, order)]
        err = np.sqrt(res.errors[name] ** 2 + again.errors[name][np.ix_(order, order)] ** 2)
        assert np.all(np.abs(x - y) <= 4 * err + 0.005), (name, x, y)
    err = np.sqrt(ranking.batch_means_error(res.draws) ** 2 + ranking.batch_means_error(again.draws)[order] ** 2)
    assert np.all(np.abs(res.effects - again.effects[order]) <= 4 * err + 0.001), (res.effects, again.effects)
    assert "C vs B" in again.summary() and "P(best)" in res.summary()
