"""Per-fold comparisons at their edges (issues 30 and 31): differences constant up to rounding, results at any
scale, too few data sets, memory that does not grow with the folds, and calibrated Monte Carlo errors.

References: baycomp 1.0.3 (``CorrelatedTTest``) on the same results at scale 1, scipy's Student t in float64, numpy
reductions written here, and the binomial standard error of independent draws.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import stats

import jax

import ecjax
from ecjax._src.prob import from_results as fr

baycomp = pytest.importorskip("baycomp")

KEY = jax.random.key(30)
# Every default-lane ranking here has M = 2 systems and S draws: one compilation of each kernel for the file.
S = 4000


def _folds(seed, n=10, shift=0.01, noise=0.02):
    rng = np.random.default_rng(seed)
    a = 0.8 + rng.normal(0, 0.03, n)
    return a, a + shift + rng.normal(0, noise, n)


def _rounded_constant(seed=1, n=10, dtype=np.float64):
    """``b = a + 0.03``: a constant difference that rounding makes vary in its last bits."""
    a = np.random.default_rng(seed).uniform(0, 1, n).astype(dtype)
    b = a + dtype(0.03)
    assert np.ptp(b - a) > 0  # not exactly constant: only a tolerance tells it from a real spread
    return a, b


# ---------------------------------------------------------------------------------------------------------------------
# Issue 30.4: a constant difference up to rounding is refused everywhere, with the same message

SAME = "is the same non-zero number on every fold"


def test_constant_difference_up_to_rounding_is_refused_by_every_comparison():
    a, b = _rounded_constant()
    with pytest.raises(ecjax.InputError, match=SAME):
        fr.correlated_t_test(a, b)
    with pytest.raises(ecjax.InputError, match=SAME):
        fr.correlated_t_test(b - a)
    with pytest.raises(ecjax.InputError, match=f"`scores`: system 1 - system 0 {SAME}"):
        fr.compare_results(np.stack([a, b]), key=KEY)
    # float32 results round at 2^-23: their differences vary by ~1e-8 and are still constant.
    a32, b32 = _rounded_constant(dtype=np.float32)
    assert np.ptp(b32.astype(np.float64) - a32) > 1e-9
    with pytest.raises(ecjax.InputError, match=SAME):
        fr.correlated_t_test(a32, b32)
    # Several data sets: the hierarchical test (no spread within a set) and the joint model (the same message).
    c, d = _folds(2)
    with pytest.raises(ecjax.InputError, match="data set 0 has the same difference on every fold, up to rounding"):
        fr.hierarchical_test(np.stack([a, c]), np.stack([b, d]), key=KEY)
    three = np.stack([np.stack([a, c]), np.stack([b, d]), np.stack([a + 0.01 * np.sin(np.arange(10)), c - 0.01])])
    with pytest.raises(ecjax.InputError, match=f"system 1 - system 0 on data set 0 {SAME}"):
        fr.hierarchical_compare_results(three, key=KEY)


def test_a_spread_below_float32_resolution_still_counts_in_float64():
    # Differences near 0.03 that vary by 1e-10 (a ulp of 0.03 in float32 is 1.9e-9; in float64 3.5e-18): a real
    # spread for float64 results.  The probabilities are scipy's t CDFs of the posterior, computed in float64.
    rng = np.random.default_rng(3)
    d = 0.03 + 1e-10 * rng.normal(size=10)
    rope = 0.03
    res = fr.correlated_t_test(d, rope=rope)
    n, rho = d.size, 1 / d.size
    post = stats.t(n - 1, d.mean(), np.sqrt(np.var(d, ddof=1) * (1 / n + rho / (1 - rho))))
    want = [post.cdf(-rope), post.cdf(rope) - post.cdf(-rope), post.sf(rope)]
    assert 0.01 < want[2] < 0.99  # the answer depends on the spread: both sides of the ROPE's edge are likely
    np.testing.assert_allclose(np.asarray(res.probabilities, np.float64), want, atol=1e-6)
    # The spread is 3e-9 of the values, so one float64 rounding of a value (1.1e-16 of it) is 4e-8 of the spread.
    np.testing.assert_allclose([res.loc, res.scale], post.args[1:], rtol=2e-7)
    # Zero up to rounding (a few ulps of the results) is identical systems: the point mass at 0, in the ROPE.
    a = np.random.default_rng(4).uniform(0.5, 1, 10)
    b = a * (1 + 2e-16 * (-1) ** np.arange(10))
    assert np.ptp(b - a) > 0
    np.testing.assert_array_equal(np.asarray(fr.correlated_t_test(a, b, rope=0.01).probabilities), [0, 1, 0])


def test_compare_folds_refuses_it_by_the_file_and_reads_one_data_set_as_one(tmp_path):
    import json

    from conftest import run_cli

    a, b = _rounded_constant()
    (tmp_path / "r.csv").write_text("a,b\n" + "".join(f"{x!r},{y!r}\n" for x, y in zip(a.tolist(), b.tolist())))
    code, out, err = run_cli("compare-folds", "r.csv", cwd=tmp_path)
    assert code == 2 and "r.csv: `scores`: b - a " + SAME in err, err  # it printed (0, 0, 1)
    # A `dataset` column naming one data set: no population to model, the correlated t-test (baycomp's numbers).
    c, d = _folds(11)
    (tmp_path / "one.csv").write_text("dataset,a,b\n" + "".join(f"s,{x!r},{y!r}\n" for x, y in zip(c.tolist(), d.tolist())))
    code, out, err = run_cli("compare-folds", "one.csv", "--rope", "0.01", "--json", cwd=tmp_path)
    assert code == 0, err
    np.testing.assert_allclose(json.loads(out)["pairwise"]["a"]["b"], baycomp.CorrelatedTTest.probs(c, d, rope=0.01),
                               atol=1e-6)


# ---------------------------------------------------------------------------------------------------------------------
# Issue 30.4: the answer does not depend on the scale of the results


@pytest.mark.parametrize("scale", [1e-30, 1e-200, 1e300])
def test_results_at_any_scale_give_baycomps_answer_at_scale_one(scale):
    a, b = _folds(0)
    ref = baycomp.CorrelatedTTest.probs(a, b, rope=0.01)
    res = fr.correlated_t_test(a * scale, b * scale, rope=0.01 * scale)
    np.testing.assert_allclose(np.asarray(res.probabilities, np.float64), ref, atol=1e-6)
    mean, var, _ = baycomp.CorrelatedTTest.compute_statistics(a, b, 1)
    np.testing.assert_allclose([res.loc / scale, res.scale / scale], [mean, np.sqrt(var)], rtol=1e-9)

    x = np.stack([a, b])
    at_one = fr.compare_results(x, rope=0.01, key=KEY, num_draws=S)
    got = fr.compare_results(x * scale, rope=0.01 * scale, key=KEY, num_draws=S)
    np.testing.assert_allclose(got.pairwise[0, 1], ref, atol=1e-6)
    # The same key gives the same draws in units of the results: the same ranking and scaled intervals.
    np.testing.assert_allclose(got.p_best, at_one.p_best, atol=1e-9)
    np.testing.assert_allclose(got.hdi / scale, at_one.hdi, rtol=1e-6)
    np.testing.assert_allclose(got.draws / scale, at_one.draws, rtol=1e-6)
    p = baycomp.CorrelatedTTest.probs(a, b)[1]  # P(mu_b > mu_a) at rope 0
    assert abs(got.p_best[1] - p) < 4 * np.sqrt(p * (1 - p) / S)

    # The hierarchical models' data are in units of the differences' spread: the same at every scale.
    sets = np.stack([b - a, (b - a)[::-1] + 0.002 * np.arange(10)])
    prepared = fr.hierarchical_data(sets * scale, rope=0.01 * scale, rho=0.1)
    prepared_one = fr.hierarchical_data(sets, rope=0.01, rho=0.1)
    np.testing.assert_allclose(np.asarray(prepared.differences), np.asarray(prepared_one.differences), rtol=1e-6)
    np.testing.assert_allclose([prepared.rope, prepared.unit / scale], [prepared_one.rope, prepared_one.unit],
                               rtol=1e-9)
    many = fr.hierarchical_results_data([x * scale, x[::-1] * scale], rope=0.01 * scale, rho=0.1)
    many_one = fr.hierarchical_results_data([x, x[::-1]], rope=0.01, rho=0.1)
    np.testing.assert_allclose(np.asarray(many.mean_differences), np.asarray(many_one.mean_differences), rtol=1e-6)
    np.testing.assert_allclose(many.unit / scale, many_one.unit, rtol=1e-9)


# ---------------------------------------------------------------------------------------------------------------------
# Issue 30.10: a hierarchical model needs several data sets


def test_one_data_set_is_refused_by_the_hierarchical_test():
    a, b = _folds(5)
    with pytest.raises(ecjax.InputError, match=r"at least 2 data sets .* got 1.*use correlated_t_test"):
        fr.hierarchical_test(a[None], b[None], key=KEY)
    with pytest.raises(ecjax.InputError, match=r"at least 2 data sets .* got 1.*use compare_results"):
        fr.hierarchical_compare_results(np.stack([a, b])[:, None], key=KEY)


# ---------------------------------------------------------------------------------------------------------------------
# Issue 30.14: memory


def test_the_joint_posterior_needs_no_draw_per_fold():
    # mu | X is a multivariate t whose parameters are mean(X) and the sample covariance S: the factor that draws
    # it has M + 1 columns whatever the number of folds, and L L^T is S (numpy's covariance, in the factor's units).
    rng = np.random.default_rng(6)
    x = 0.8 + rng.normal(0, 0.02, (3, 100_000))
    joint = fr.joint_t_factor(x)
    assert joint.factor.shape == (4, 4)
    rel = joint.factor[:3] * joint.rel_unit
    com = joint.factor[3:] * joint.common_unit
    cov = (rel + com).T  # each system: its relative part plus the folds' common level
    np.testing.assert_allclose(cov.T @ cov, np.cov(x), rtol=1e-9)


def test_compare_results_on_a_hundred_thousand_folds():
    # Before: a (draws x 2n - 1) normal array, 20 000 x 2 * 10^5 float32 = 16 GB (killed at 3 * 10^4 folds).
    rng = np.random.default_rng(10)
    a = 0.8 + rng.normal(0, 0.02, 100_000)
    x = np.stack([a, a + 5e-5 + rng.normal(0, 0.01, a.size)])
    res = fr.compare_results(x, key=KEY, rope=1e-5, num_draws=S)
    assert res.draws.shape == (S, 2)
    np.testing.assert_allclose(res.pairwise[0, 1], baycomp.CorrelatedTTest.probs(x[0], x[1], rope=1e-5), atol=1e-6)
    draws = res.draws
    p = baycomp.CorrelatedTTest.probs(x[0], x[1])[1]  # every pairwise marginal of the draws is the pair's t-test
    assert abs(np.mean(draws[:, 1] > draws[:, 0]) - p) < 4 * np.sqrt(p * (1 - p) / draws.shape[0])


@pytest.mark.slow  # a fresh process (JAX import and compilation), ~30 s on two busy cores
def test_compare_results_memory_does_not_grow_with_folds_times_draws():
    # Before: a (draws x 2n - 1) array, 20 000 x 2 * 10^5 float32 = 16 GB at 10^5 folds (killed at 3 * 10^4).
    # Now the peak RSS after 10^5 folds is that after 100 folds plus the inputs (a few MB): measured in a fresh
    # process, where ru_maxrss is that process's own peak.
    script = textwrap.dedent("""
        import resource, numpy as np, jax
        from ecjax.prob import compare_results
        rng = np.random.default_rng(0)
        def peak():
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10  # MiB (Linux reports KiB)
        compare_results(0.8 + rng.normal(0, 0.02, (3, 100)), key=jax.random.key(0))
        small = peak()
        x = 0.8 + rng.normal(0, 0.02, (3, 100_000))
        res = compare_results(x, key=jax.random.key(0))  # the default: until precise (a close call here)
        assert 1000 < res.num_draws <= 20_000 and res.precision["met"], res.precision
        assert compare_results(x, key=jax.random.key(0), num_draws=20_000).num_draws == 20_000  # the cap, fixed
        print(small, peak())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    small, large = map(float, out.stdout.split())
    assert large - small < 100, (small, large)  # MiB; the old kernel needed 16 GiB more
    assert large < 1024


def test_draws_that_cannot_fit_are_refused():
    a, b = _folds(7)
    with pytest.raises(ecjax.InputError, match=r"`num_draws` = 10000000000 draws would need about .* GiB"):
        fr.compare_results(np.stack([a, b]), key=KEY, num_draws=10**10)
    with pytest.raises(ecjax.InputError, match=r"`num_draws` = 1000000000000 draws"):
        fr.correlated_t_test(a, b, key=KEY, num_draws=10**12)


@pytest.mark.slow  # 10^6 folds through the command line (a 30 MB file), ~30 s on two busy cores
def test_compare_folds_on_a_million_rows(tmp_path):
    rng = np.random.default_rng(8)
    a = 0.8 + rng.normal(0, 0.02, 10**6)
    b = a + 1e-4 + rng.normal(0, 0.01, 10**6)
    np.savetxt(tmp_path / "folds.csv", np.stack([a, b], 1), delimiter=",", header="a,b", comments="")
    script = textwrap.dedent(f"""
        import resource, sys
        from ecjax.cli import main
        sys.argv = ["ecjax", "compare-folds", {str(tmp_path / "folds.csv")!r}, "--json"]
        code = main()
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10, file=sys.stderr)
        sys.exit(code)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    rec = json.loads(out.stdout)
    ref = baycomp.CorrelatedTTest.probs(a, b)
    np.testing.assert_allclose([rec["pairwise"]["a"]["b"][0], rec["pairwise"]["a"]["b"][2]], ref, atol=1e-6)
    assert float(out.stderr.strip().splitlines()[-1]) < 2048  # MiB, the file's numbers included


# ---------------------------------------------------------------------------------------------------------------------
# Issue 31.7: compare_results' Monte Carlo errors are calibrated


def _z_scores(num_keys, num_draws, shift):
    """``(P(best) - exact) / error`` of system b over ``num_keys`` keys; exact: baycomp's P(mu_b > mu_a)."""
    a, b = _folds(9, shift=shift)
    exact = baycomp.CorrelatedTTest.probs(a, b)[1]
    z = []
    for i in range(num_keys):
        res = fr.compare_results(np.stack([a, b]), key=jax.random.key(i), num_draws=num_draws)
        p = np.float64(res.p_best[1])
        np.testing.assert_allclose(res.errors["p_best"][1], np.sqrt(p * (1 - p) / num_draws), rtol=1e-12)
        z.append((p - exact) / res.errors["p_best"][1])
    return exact, np.array(z)


def _sd_tolerance(num_keys):
    """Three standard errors of the sample sd of ``K`` standard normal z-scores, ``1 / sqrt(2 (K - 1))``.

    The draws are independent, so the estimate of a probability ``p`` is a binomial proportion and its error
    ``sqrt(p (1 - p) / S)`` is known up to the plug-in of ``p`` (a relative error of order ``1 / sqrt(S p (1 -
    p))``, a few per cent at the sizes below): the z-scores are close to standard normal, sd 1.  Batch means would
    add the noise of a 20-batch estimate (z ~ t_19, sd 1.06), and an error that ignored part of the Monte Carlo
    noise would push the sd further up.
    """
    return 3 / np.sqrt(2 * (num_keys - 1))


def test_monte_carlo_errors_are_calibrated_small():
    exact, z = _z_scores(num_keys=60, num_draws=S, shift=0.012)
    assert 0.6 < exact < 0.95
    assert abs(z.std(ddof=1) - 1) < _sd_tolerance(60), z.std(ddof=1)
    assert abs(z.mean()) < 3 / np.sqrt(60)  # no bias: the estimate's mean is the exact value


@pytest.mark.slow  # 400 comparisons of 20 000 draws, ~1 min on two busy cores
def test_monte_carlo_errors_are_calibrated():
    exact, z = _z_scores(num_keys=400, num_draws=20_000, shift=0.012)
    assert abs(z.std(ddof=1) - 1) < _sd_tolerance(400), z.std(ddof=1)
    assert abs(z.mean()) < 3 / np.sqrt(400)


# ---------------------------------------------------------------------------------------------------------------------
# Issue 31.8: words


def test_the_hierarchical_summary_names_baycomps_shares_for_what_they_are():
    # baycomp's p_left is the share of draws in which "left" is the most probable region for a new data set, not
    # P(a better by > rope): the summary must not print it as that probability.
    rng = np.random.default_rng(12)
    per_draw = rng.dirichlet([1, 1, 1], 400)
    shares = np.bincount(per_draw.argmax(1), minlength=3) / 400  # baycomp's summary, by numpy
    res = fr.HierarchicalTTest(p_left=shares[0], p_rope=shares[1], p_right=shares[2], predictive=per_draw.mean(0),
                               per_draw=per_draw, delta0=rng.normal(size=400), std0=np.ones(400), nu=np.full(400, 5.0),
                               delta=rng.normal(size=(400, 3)), sigma=np.ones((400, 3)), rope=0.01, rho=0.1)
    text = res.summary(names=("A", "B"))
    assert f"P(A better by > 0.01) = {shares[0]:.3f}" not in text
    assert (f"baycomp's shares of the posterior draws in which a new data set's mean difference is most probably left "
            f"of the ROPE (A better by > 0.01): {shares[0]:.3f}") in text
    assert f"P(left) = {per_draw.mean(0)[0]:.3f}" in text  # the predictive probability is one
