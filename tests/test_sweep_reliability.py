"""The metric-reliability study of Dyrland et al. (2022) §4.2 (Figs. 6-7).

Checked against: the seed's printed numbers (accuracy 8.7 % wrongly ranked
pairs, utilities with sd-0.1 errors 4 %, 10^6 pairs), its stated quartiles of
the rate distribution (0.75, 0.85, 0.93), its qualitative Fig. 7 claims, an
independent vectorized numpy implementation of the whole procedure written
here (different random numbers: agreement within Monte Carlo error), exact
moments of the uniform hexagon, scipy quadrature for the truncated,
order-constrained error distribution, and ``ecjax.metrics`` (for the
closed-form metrics the study uses).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import ndtr, ndtri

import jax
import jax.numpy as jnp

from ecjax import metrics as M
from ecjax.sweep import metric_reliability
from ecjax._src.sweep import reliability as R

METRIC_NAMES = list(R.METRICS)


def numpy_study(rng, n, sd):
    """Dyrland et al. (2022) §4.2 steps 1-6, written independently in float64 numpy (uniform true utilities)."""
    # Uniform on the hexagon |x|, |y|, |x - y| <= 1 by rejection from the square.
    xy = np.empty((0, 2))
    while len(xy) < n:
        cand = rng.uniform(-1, 1, size=(2 * n, 2))
        xy = np.concatenate([xy, cand[np.abs(cand[:, 0] - cand[:, 1]) <= 1]])
    x, y = xy[:n].T
    # Seed eq. 13 (rows = decision), used as printed: yield = sum_ij U_ij C_ij with C rows = decision too.
    u = np.stack([[1 - x * (x > 0), y * (y > 0)], [-y * (y < 0), 1 + x * (x < 0)]]).transpose(2, 0, 1)
    f0 = rng.uniform(size=n)
    rates = 0.5 + 0.5 * np.sqrt(rng.uniform(size=(4, n)))  # inverse CDF of density prop. to (r - 1/2)

    def conf(t, s):  # seed layout: rows = decision, columns = true class; class 0 positive
        return np.stack([[f0 * t, (1 - f0) * (1 - s)], [f0 * (1 - t), (1 - f0) * s]]).transpose(2, 0, 1)

    c1, c2 = conf(rates[0], rates[1]), conf(rates[2], rates[3])

    def metric(c):
        tp, fp, fn, tn = c[:, 0, 0], c[:, 0, 1], c[:, 1, 0], c[:, 1, 1]
        prec, rec, spec = tp / (tp + fp), tp / (tp + fn), tn / (tn + fp)
        mcc = (tp * tn - fp * fn) / np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        return np.stack([tp + tn, (rec + spec) / 2, prec, rec, spec, 2 * prec * rec / (prec + rec), mcc,
                         np.sqrt(prec * rec)], 1)

    d_true = np.sum(u * (c1 - c2), (1, 2))
    d_metric = metric(c1) - metric(c2)
    # Errors: truncated to [0, 1] by inverse CDF; whole matrices redrawn until correct > wrong per class.
    ue = np.empty_like(u)
    todo = np.ones(n, bool)
    while todo.any():
        m = u[todo]
        lo, hi = ndtr(-m / sd), ndtr((1 - m) / sd)
        cand = m + sd * ndtri(lo + (hi - lo) * rng.uniform(size=m.shape))
        ok = (cand[:, 0, 0] > cand[:, 1, 0]) & (cand[:, 1, 1] > cand[:, 0, 1])
        idx = np.nonzero(todo)[0][ok]
        ue[idx] = cand[ok]
        todo[idx] = False
    d_assessed = np.sum(ue * (c1 - c2), (1, 2))
    wrong = d_true[:, None] * np.concatenate([d_metric, d_assessed[:, None]], 1) < 0
    return wrong.mean(0)


@pytest.fixture(scope="module")
def study_1e6():
    """The seed's configuration: uniform true utilities, 10^6 pairs; plus the 0-1 EC and the Fig. 7 curve."""
    return metric_reliability(jax.random.key(2024), num_pairs=10**6, utility_error_sd=[0.0, 0.1, 0.15, 0.25],
                              costs={"ec_01": np.array([[0.0, 1.0], [1.0, 0.0]])})


def _within(value, se, printed, half_unit, se_printed):
    """|value - printed| within the printed rounding plus 4 combined standard errors."""
    return abs(value - printed) <= half_unit + 4 * np.hypot(se, se_printed)


def test_seed_headline_numbers_at_1e6_pairs(study_1e6):
    acc = study_1e6["accuracy"]
    util = study_1e6["utility_yield"]
    # "The accuracy metric ... leading to 8.7% incorrect pairwise rankings" (10^6 samples).
    se_seed = np.sqrt(0.087 * 0.913 / 1e6)
    assert _within(acc.fraction, acc.standard_error, 0.087, 0.0005, se_seed), acc
    # "a utility matrix affected by gaussian errors with 0.1 standard deviation ... 4%".
    f, se = util.fraction[1], util.standard_error[1]
    assert _within(f, se, 0.04, 0.005, np.sqrt(0.04 * 0.96 / 1e6)), (f, se)
    assert acc.standard_error == pytest.approx(np.sqrt(acc.fraction * (1 - acc.fraction) / 1e6))
    # Accuracy is the best of the ordinary metrics (the seed orders Fig. 6 by decreasing error).
    others = [study_1e6[m].fraction for m in METRIC_NAMES if m != "accuracy"]
    assert acc.fraction < min(others)


def test_fig7_curve_shape(study_1e6):
    util = study_1e6["utility_yield"]
    assert util.fraction[0] == 0.0  # exact utilities rank every pair correctly
    assert np.all(np.diff(util.fraction) > 0)  # more error, more wrong rankings
    # "evaluations based on a utility matrix affected by errors with sd up to ... 0.25 are still more
    # reliable than evaluations based on the other reported metrics" (uniform case).
    best_other = min(study_1e6[m].fraction for m in METRIC_NAMES)
    assert util.fraction[3] < best_other
    # The EC of 0-1 costs ranks pairs exactly as accuracy does (accuracy = 1 - EC_01).
    assert study_1e6["ec_01"].fraction == study_1e6["accuracy"].fraction


def test_every_metric_agrees_with_an_independent_numpy_study(study_1e6):
    n = 200_000
    ref = numpy_study(np.random.default_rng(5), n, 0.1)
    names = METRIC_NAMES + ["utility_yield"]
    for i, name in enumerate(names):
        est = study_1e6[name]
        f = est.fraction[1] if name == "utility_yield" else est.fraction
        se = est.standard_error[1] if name == "utility_yield" else est.standard_error
        se_ref = np.sqrt(ref[i] * (1 - ref[i]) / n)
        assert abs(f - ref[i]) <= 4.5 * np.hypot(se, se_ref), (name, f, ref[i])


@pytest.mark.slow  # ~12 s; the user-supplied-distribution test covers the same engine in the default lane
def test_gaussian_true_utilities_default_path():
    # Fig. 7 bottom: gaussian true utilities favour accuracy (identity at the centre) more than uniform ones.
    res = metric_reliability(jax.random.key(1), num_pairs=100_000, utility_error_sd=[0.0, 0.1, 0.15, 0.25],
                             utility_distribution="gaussian",
                             costs={"ec_01": np.array([[0.0, 1.0], [1.0, 0.0]])})
    acc = res["accuracy"]
    util = res["utility_yield"]
    assert util.fraction[0] == 0.0
    # sd up to 0.15 still beats every other metric (Dyrland et al. 2022, §4.2).
    assert util.fraction[2] < min(res[m].fraction for m in METRIC_NAMES)
    assert acc.fraction < 0.087 - 6 * acc.standard_error  # well below the uniform case


def test_same_key_same_numbers():
    # Same configuration as the module fixture, so the compiled step is reused.
    kw = dict(num_pairs=4 * R.BLOCK + 17, utility_error_sd=[0.0, 0.1, 0.15, 0.25],
              costs={"ec_01": np.array([[0.0, 1.0], [1.0, 0.0]])})
    a = metric_reliability(jax.random.key(3), **kw)
    b = metric_reliability(jax.random.key(3), **kw)
    c = metric_reliability(jax.random.key(4), **kw)
    for name in a:
        np.testing.assert_array_equal(a[name].fraction, b[name].fraction)
    assert any(np.any(a[n].fraction != c[n].fraction) for n in a)


# ------------------------------------------------------------------ the ingredients

def test_uniform_hexagon_moments():
    xy = np.asarray(jax.jit(R.uniform_hexagon, static_argnums=1)(jax.random.key(0), 400_000), np.float64)
    x, y = xy.T
    assert np.all((np.abs(x) <= 1) & (np.abs(y) <= 1) & (np.abs(x - y) <= 1))
    # Exact: area 3; int x^2 = 5/6, int x y = 5/12  ->  E[x^2] = 5/18, E[xy] = 5/36, E[x] = 0.
    se = np.sqrt(np.var(x * x) / len(x))
    assert abs(np.mean(x * x) - 5 / 18) < 5 * se
    assert abs(np.mean(y * y) - 5 / 18) < 5 * se
    assert abs(np.mean(x * y) - 5 / 36) < 5 * np.sqrt(np.var(x * y) / len(x))
    assert abs(np.mean(x)) < 5 * np.std(x) / np.sqrt(len(x))
    # Each of the three unit-area pieces holds a third of the points.
    in_square = np.mean((x >= 0) & (y >= 0))
    assert abs(in_square - 1 / 3) < 5 * np.sqrt(2 / 9 / len(x))


def test_gaussian_hexagon_against_numpy_rejection():
    xy = np.asarray(jax.jit(R.gaussian_hexagon, static_argnums=1)(jax.random.key(1), 100_000), np.float64)
    assert np.all((np.abs(xy) <= 1).all(1) & (np.abs(xy[:, 0] - xy[:, 1]) <= 1))
    rng = np.random.default_rng(1)
    ref = rng.normal(scale=1 / 3, size=(300_000, 2))
    ref = ref[(np.abs(ref) <= 1).all(1) & (np.abs(ref[:, 0] - ref[:, 1]) <= 1)]
    for j in range(2):
        assert stats.ks_2samp(xy[:, j], ref[:, j]).pvalue > 1e-3
    d = xy[:, 0] - xy[:, 1]
    assert stats.ks_2samp(d, ref[:, 0] - ref[:, 1]).pvalue > 1e-3


def test_linear_rates_quartiles_as_printed():
    r = np.asarray(R.linear_rates(jax.random.key(2), (400_000,)), np.float64)
    q = np.quantile(r, [0.25, 0.5, 0.75])
    # F(r) = (2r - 1)^2 on [0.5, 1]: quartiles 0.75, 0.8536, 0.9330; the seed prints 0.75, 0.85, 0.93.
    np.testing.assert_allclose(q, 0.5 + 0.5 * np.sqrt([0.25, 0.5, 0.75]), atol=2e-3)
    np.testing.assert_allclose(np.round(q, 2), [0.75, 0.85, 0.93])
    assert stats.kstest(r, lambda t: np.clip(2 * t - 1, 0, 1) ** 2).pvalue > 1e-3


def _row_moments(a, b, sd):
    """E[c], E[w] of independent N(a, sd), N(b, sd) truncated to 0 <= w < c <= 1 (scipy quadrature)."""
    pdf_c = lambda c: stats.norm.pdf(c, a, sd)  # noqa: E731
    below = lambda c: stats.norm.cdf(c, b, sd) - stats.norm.cdf(0, b, sd)  # noqa: E731
    # int_0^c w N(w; b, sd) dw in closed form.
    w_mass = lambda c: b * below(c) - sd**2 * (stats.norm.pdf(c, b, sd) - stats.norm.pdf(0, b, sd))  # noqa: E731
    z = integrate.quad(lambda c: pdf_c(c) * below(c), 0, 1)[0]
    ec = integrate.quad(lambda c: c * pdf_c(c) * below(c), 0, 1)[0] / z
    ew = integrate.quad(lambda c: pdf_c(c) * w_mass(c), 0, 1)[0] / z
    return ec, ew


@pytest.mark.parametrize("sd", [0.1, 0.25])
def test_assessment_errors_match_the_truncated_constrained_gaussian(sd):
    n = 100_000
    # Row 0: correct 0.55 vs wrong 0.5 (heavy rejection); row 1: correct 1.0 vs wrong 0.0 (boundary truncation).
    u = jnp.broadcast_to(jnp.array([[0.55, 0.5], [0.0, 1.0]]), (n, 2, 2))
    perturb = jax.jit(R.perturb_utilities)
    ue = np.asarray(perturb(jax.random.key(3), u, sd), np.float64)
    assert np.all((ue >= 0) & (ue <= 1))
    assert np.all(ue[:, 0, 0] > ue[:, 0, 1]) and np.all(ue[:, 1, 1] > ue[:, 1, 0])
    for (ci, wi), (a, b) in [(((0, 0), (0, 1)), (0.55, 0.5)), (((1, 1), (1, 0)), (1.0, 0.0))]:
        ec, ew = _row_moments(a, b, sd)
        c, w = ue[:, ci[0], ci[1]], ue[:, wi[0], wi[1]]
        assert abs(c.mean() - ec) < 5 * c.std() / np.sqrt(n), (c.mean(), ec)
        assert abs(w.mean() - ew) < 5 * w.std() / np.sqrt(n), (w.mean(), ew)
    np.testing.assert_array_equal(np.asarray(perturb(jax.random.key(3), u, 0.0)), np.asarray(u))


def test_closed_form_metrics_equal_ecjax_metrics():
    rng = np.random.default_rng(6)
    b = rng.uniform(0.05, 0.95, 500)
    t, s = rng.uniform(0.5, 1, (2, 500))
    cm = R.confusion_from_rates(jnp.asarray(b), jnp.asarray(t), jnp.asarray(s))
    got = np.asarray(R.metric_values(cm, (jnp.array([[0.0, 2.0], [3.0, 0.0]]),)))
    ref = np.stack([
        M.accuracy(cm), M.balanced_accuracy(cm), M.precision(cm, pos_label=0), M.recall(cm, pos_label=0),
        M.specificity(cm, pos_label=0), M.f1_score(cm, pos_label=0), M.matthews_corrcoef(cm),
        M.fowlkes_mallows(cm, pos_label=0), -M.expected_cost(cm, jnp.array([[0.0, 2.0], [3.0, 0.0]])),
    ], -1)
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-6)
    # Dyrland et al. (2022) §3.3 in its own coordinates (C_00, C_11, f_0 = B): precision = C00 / (C00 - C11 + f1).
    c00, c11 = b * t, (1 - b) * s
    np.testing.assert_allclose(got[:, 2], c00 / (c00 - c11 + (1 - b)), rtol=2e-5)
    np.testing.assert_allclose(got[:, 5], 2 * c00 / (c00 - c11 + 1), rtol=2e-5)


def _beta_utilities(key, n):
    """A user utility prior: diagonal ~ U(0.5, 1), off-diagonal ~ U(0, 0.5) (rows = true class)."""
    k1, k2 = jax.random.split(key)
    diag = jax.random.uniform(k1, (n, 2), minval=0.5, maxval=1.0)
    off = jax.random.uniform(k2, (n, 2), maxval=0.5)
    return jnp.stack([jnp.stack([diag[:, 0], off[:, 0]], -1), jnp.stack([off[:, 1], diag[:, 1]], -1)], -2)


def test_user_supplied_utility_distribution():
    res = metric_reliability(jax.random.key(8), num_pairs=2 * R.BLOCK, utility_error_sd=0.0,
                             utility_distribution=_beta_utilities)
    assert res["utility_yield"].fraction == 0.0
    assert 0 < res["accuracy"].fraction < 0.5
