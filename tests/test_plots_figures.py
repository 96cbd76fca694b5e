"""What each figure shows, checked on the figure objects against computations written here.

Tangent lines against the closed-form iso-utility slope, y-scales of exploding costs, the ECE and its bin
intervals against numpy and scipy, HDI marks against ArviZ, the Spearman text against scipy, and ``ax=``.
"""

import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.path as mpath
import matplotlib.pyplot as plt
import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import beta, binomtest, norm, spearmanr

import ecjax
from ecjax import plots


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _iso_lines(ax):
    return [line for line in ax.lines if line.get_label().startswith("iso-utility line")]


def _binormal_roc(d):
    z = np.linspace(-5, 5, 801)
    return norm.sf(z), norm.sf(z - d)


# ------------------------------------------------------------------------ ROC

def test_roc_tangent_line_for_every_system_with_closed_form_slope():
    priors, c01, c10 = np.array([0.8, 0.2]), 1.0, 5.0
    costs = np.array([[0.0, c01], [c10, 0.0]])
    slope = priors[0] * c01 / (priors[1] * c10)
    rocs = {"weak": _binormal_roc(0.8), "strong": _binormal_roc(2.0), "mid": _binormal_roc(1.3)}
    fig = plots.roc_with_iso_utility([r[0] for r in rocs.values()], [r[1] for r in rocs.values()], costs=costs,
                                     priors=priors, names=list(rocs))
    lines = _iso_lines(fig.axes[0])
    assert len(lines) == 3
    for name, (fpr, tpr) in rocs.items():
        line = next(ln for ln in lines if ln.get_label().startswith(f"iso-utility line: {name} "))
        xs, ys = line.get_xdata(), line.get_ydata()
        np.testing.assert_allclose((ys[-1] - ys[0]) / (xs[-1] - xs[0]), slope, rtol=1e-12)
        # Tangent: through the point maximizing TPR - slope FPR, and no ROC point above it.
        j = np.argmax(tpr - slope * fpr)
        on_line = ys[0] + slope * (fpr - xs[0])
        assert abs(on_line[j] - tpr[j]) < 1e-12
        assert np.all(tpr <= on_line + 1e-12)
    # The expected cost of each best point is in its label: P0 c01 FPR + P1 c10 (1 - TPR).
    ec = {n: np.min(priors[0] * c01 * f + priors[1] * c10 * (1 - t)) for n, (f, t) in rocs.items()}
    best = min(ec, key=ec.get)
    label = next(ln.get_label() for ln in lines if ln.get_label().startswith(f"iso-utility line: {best} "))
    assert f"expected cost {ec[best]:.3g}, best" in label


def test_roc_utilities_give_the_same_tangent_as_costs():
    fpr, tpr = _binormal_roc(1.5)
    u = np.array([[1.0, -0.5], [-3.0, 2.0]])  # slope P0 (U00 - U01) / (P1 (U11 - U10)) = 0.3 * 1.5 / (0.7 * 5)
    fig = plots.roc_with_iso_utility(fpr, tpr, utilities=u, priors=[0.3, 0.7])
    xs, ys = _iso_lines(fig.axes[0])[0].get_xdata(), _iso_lines(fig.axes[0])[0].get_ydata()
    np.testing.assert_allclose((ys[-1] - ys[0]) / (xs[-1] - xs[0]), 0.3 * 1.5 / (0.7 * 5.0), rtol=1e-12)


def test_roc_best_tangent_only_names_the_system():
    rocs = [_binormal_roc(0.8), _binormal_roc(2.0)]
    priors, costs = np.array([0.5, 0.5]), np.array([[0.0, 1.0], [2.0, 0.0]])
    fig = plots.roc_with_iso_utility([r[0] for r in rocs], [r[1] for r in rocs], costs=costs, priors=priors,
                                     names=["weak", "strong"], tangents="best")
    lines = _iso_lines(fig.axes[0])
    assert len(lines) == 1 and lines[0].get_label().startswith("iso-utility line: strong ")


def test_roc_names_the_positive_class():
    fpr, tpr = _binormal_roc(1.0)
    ax = plots.roc_with_iso_utility(fpr, tpr, frame=plots.Frame(class_names=("healthy", "sick"))).axes[0]
    assert "positive class: sick" in ax.get_title()
    assert "healthy decided sick" in ax.get_xlabel()
    assert "sick decided sick" in ax.get_ylabel()


def test_roc_accepts_roc_curve_results():
    from sklearn.metrics import roc_curve as sk_roc

    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 400)
    llr = (rng.normal(size=400) + 1.2 * labels).astype(np.float32)
    ax = plots.roc_with_iso_utility([ecjax.roc_curve(labels, llr, score_type="llr")] * 2, names=["a", "b"]).axes[0]
    fpr, tpr, _ = sk_roc(labels, llr.astype(np.float64), drop_intermediate=False)
    curve = next(ln for ln in ax.lines if ln.get_label() == "a")
    np.testing.assert_allclose(curve.get_xdata(), fpr, atol=1e-7)
    np.testing.assert_allclose(curve.get_ydata(), tpr, atol=1e-7)
    single = plots.roc_with_iso_utility(ecjax.roc_curve(labels, llr, score_type="llr")).axes[0]
    assert [ln.get_label() for ln in single.lines if not ln.get_label().startswith("_")] == ["chance", "system 0"]


def test_det_plot_has_probit_axes_and_miss_rates():
    d = 1.5
    fpr, tpr = _binormal_roc(d)
    ax = plots.roc_with_iso_utility(fpr, tpr, det=True, names=["binormal"]).axes[0]
    assert ax.get_xscale() == "function" and ax.get_yscale() == "function"
    curve = next(ln for ln in ax.lines if ln.get_label() == "binormal")
    np.testing.assert_allclose(curve.get_ydata(), 1 - tpr)
    # On normal-deviate axes an equal-variance binormal DET is the straight line probit(miss) = -probit(fa) - d.
    lo, hi = ax.get_xlim()
    inside = (fpr > lo) & (fpr < hi) & (1 - tpr > lo) & (1 - tpr < hi)
    sx = ax.xaxis.get_transform().transform(fpr[inside])
    sy = ax.yaxis.get_transform().transform(1 - tpr[inside])
    np.testing.assert_allclose(sx, ndtri(fpr[inside]), rtol=1e-9)
    np.testing.assert_allclose(sy, -sx - d, atol=1e-7)
    assert "miss rate" in ax.get_ylabel()


# ------------------------------------------------------- exploding cost curves

def _binary_data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    llr = rng.normal(size=n) * 1.5 + (labels - 0.5) * 2.25  # a calibrated binormal LLR: d = 1.5, sd 1.5
    return labels, llr


def _normalized_bayes_risk(labels, llr, plo):
    """Independent: pi miss + (1 - pi) fa of "class 1 iff llr > -plo", over min(pi, 1 - pi)."""
    pi = 1 / (1 + np.exp(-plo))
    miss = np.array([np.mean(llr[labels == 1] <= -t) for t in plo])
    fa = np.array([np.mean(llr[labels == 0] > -t) for t in plo])
    return (pi * miss + (1 - pi) * fa) / np.minimum(pi, 1 - pi)


def test_bayes_risk_from_results_symlog_when_values_explode():
    labels, llr = _binary_data()
    bad = (6.0 * llr + 4.0).astype(np.float32)  # overconfident and shifted: huge risk at low priors
    good = llr.astype(np.float32)
    curves = [ecjax.bayes_risk_curve(labels, bad), ecjax.bayes_risk_curve(labels, good)]
    ax = plots.bayes_risk_curves(curves, names=["bad", "good"]).axes[0]
    plo = np.linspace(-6, 6, 121)
    expected = _normalized_bayes_risk(labels, bad.astype(np.float64), plo)
    assert expected.max() > 4 * 1.0  # the case the scale is for
    drawn = next(ln for ln in ax.lines if ln.get_label() == "bad (actual)")
    np.testing.assert_allclose(drawn.get_ydata(), expected, rtol=2e-6)  # float32 rounding
    assert ax.get_yscale() == "symlog"
    assert "logarithmic above" in ax.get_ylabel()
    # The same axes show every tick as a plain number (no 10^x on a cost axis).
    assert all("$" not in t.get_text() for t in ax.get_yticklabels())


def test_bayes_risk_linear_when_values_stay_small_and_alias():
    labels, llr = _binary_data()
    curve = ecjax.bayes_risk_curve(labels, llr.astype(np.float32))
    assert _normalized_bayes_risk(labels, llr.astype(np.float32).astype(float), np.linspace(-6, 6, 121)).max() < 4
    assert plots.bayes_risk(curve).axes[0].get_yscale() == "linear"
    assert plots.bayes_risk(curve, yscale="log").axes[0].get_yscale() == "log"


def test_cost_vs_threshold_symlog_for_exploding_nec():
    labels, llr = _binary_data(seed=1)
    costs = np.array([[0.0, 1.0], [50.0, 0.0]])
    p1 = labels.mean()
    result = ecjax.scores.expected_cost_vs_threshold(labels, llr.astype(np.float32), costs, score_type="llr",
                                                     priors=[1 - p1, p1], normalize=True)
    ax = plots.cost_vs_threshold(result).axes[0]
    curve = next(ln for ln in ax.lines if ln.get_label() == "NEC")
    t = curve.get_xdata()
    s = llr.astype(np.float32).astype(np.float64)
    miss = np.array([np.mean(s[labels == 1] <= x) for x in t])
    fa = np.array([np.mean(s[labels == 0] > x) for x in t])
    nec = ((1 - p1) * fa + p1 * 50 * miss) / min(1 - p1, 50 * p1)
    np.testing.assert_allclose(curve.get_ydata(), nec, rtol=1e-5)
    assert nec.max() > 4 and ax.get_yscale() == "symlog"


def test_cost_vs_threshold_linear_for_moderate_nec():
    t = np.linspace(-3, 3, 50)
    ax = plots.cost_vs_threshold(t, (t - 1) ** 2 / 9 + 0.3).axes[0]
    assert ax.get_yscale() == "linear"


# ----------------------------------------------------------------- reliability

def _ece_text(ax):
    text = next(t.get_text() for t in ax.texts if t.get_text().startswith("ECE"))
    return 100 * float(re.search(r"ECE = ([0-9.e-]+) ", text).group(1)), text  # a fraction, as the tables


def _independent_ece(conf, hit, groups):
    return sum(abs(np.sum(hit[g] - conf[g])) for g in groups) / len(conf)


def _skewed_binary(n=3000, seed=0):
    # Distinct posteriors (Beta quantiles on a grid), mostly above 0.85: one equal-width bin holds > 25 %.
    p1 = beta.ppf((np.arange(n) + 0.5) / n, 20, 2)
    rng = np.random.default_rng(seed)
    p1 = rng.permutation(p1)
    labels = (rng.uniform(size=n) < 0.9 * p1).astype(int)
    return labels, np.log(np.stack([1 - p1, p1], -1)), p1


def test_reliability_equal_mass_for_skewed_scores_and_ece_on_figure():
    labels, log_post, p1 = _skewed_binary()
    width_counts = np.bincount(np.clip(np.ceil(p1 * 15).astype(int) - 1, 0, 14), minlength=15)
    assert width_counts.max() > 0.25 * len(p1)  # skewed: the case of the default
    fig = plots.reliability_diagram(labels=labels, scores=log_post, frame=plots.Frame(class_names=("healthy", "sick")))
    ax = fig.axes[0]
    value, text = _ece_text(ax)
    assert "15 equal-mass bins" in text
    groups = np.array_split(np.argsort(p1), 15)
    expected = _independent_ece(p1, (labels == 1).astype(float), groups)
    assert abs(value - 100 * expected) <= 100 * 5e-4 * expected + 1e-6  # 4 significant digits
    # The tables' ECE (15 equal-width bins) is named beside it: one run never shows two unnamed ECEs.
    width = np.clip(np.ceil(p1 * 15).astype(int) - 1, 0, 14)
    table = _independent_ece(p1, (labels == 1).astype(float), [np.nonzero(width == m)[0] for m in range(15)])
    shown = float(re.search(r"ECE = ([0-9.e-]+) \(15 equal-width bins, as the tables\)", text).group(1))
    assert shown == pytest.approx(table, rel=5e-4)
    assert "sick" in fig.axes[1].get_xlabel() and "sick" in ax.get_ylabel()


def test_reliability_equal_width_for_spread_scores_with_wilson_intervals():
    n = 2000
    rng = np.random.default_rng(1)
    p1 = rng.permutation((np.arange(n) + 0.5) / n)
    labels = (rng.uniform(size=n) < p1 ** 1.3).astype(int)
    ax = plots.reliability_diagram(labels=labels, scores=np.log(np.stack([1 - p1, p1], -1))).axes[0]
    value, text = _ece_text(ax)
    assert "equal-width" in text
    idx = np.clip(np.ceil(p1 * 15).astype(int) - 1, 0, 14)
    groups = [np.nonzero(idx == m)[0] for m in range(15)]
    assert abs(value - 100 * _independent_ece(p1, labels.astype(float), groups)) <= 0.005 + 1e-6
    # Per-bin 95 % intervals: scipy's Wilson interval of (hits, samples) of each bin.
    segments = next(c for c in ax.collections if c.get_label().startswith("95 % interval")).get_segments()
    for seg, g in zip(segments, groups):
        ci = binomtest(int(labels[g].sum()), len(g)).proportion_ci(0.95, method="wilson")
        np.testing.assert_allclose([seg[0][1], seg[1][1]], [ci.low, ci.high], rtol=1e-9)
        np.testing.assert_allclose(seg[0][0], p1[g].mean(), rtol=1e-5)


def test_reliability_multiclass_top_label_axes_and_ece():
    rng = np.random.default_rng(2)
    n, k = 2000, 4
    # Distinct confidences (Beta quantiles on a grid, skewed towards 1), the other classes sharing the rest.
    conf = rng.permutation(0.3 + 0.7 * beta.ppf((np.arange(n) + 0.5) / n, 5, 1))
    top = rng.integers(0, k, n)
    prob = np.repeat(((1 - conf) / (k - 1))[:, None], k, 1)
    prob[np.arange(n), top] = conf
    hit = rng.uniform(size=n) < conf**1.5
    labels = np.where(hit, top, (top + rng.integers(1, k, n)) % k)
    fig = plots.reliability_diagram(labels=labels, scores=np.log(prob))
    ax = fig.axes[0]
    assert "decided class" in fig.axes[1].get_xlabel() and "accuracy" in ax.get_ylabel()
    width_counts = np.bincount(np.clip(np.ceil(conf * 15).astype(int) - 1, 0, 14), minlength=15)
    assert width_counts.max() > 0.25 * n
    value, text = _ece_text(ax)
    assert "15 equal-mass bins" in text
    expected = _independent_ece(conf, hit.astype(float), np.array_split(np.argsort(conf), 15))
    assert abs(value - 100 * expected) <= 0.005 + 1e-6


def test_reliability_from_bins_object_writes_ece():
    bins = ecjax.scores.ReliabilityBins(np.array([0.1, 0.5, 0.9, np.nan]), np.array([0.2, 0.5, 0.8, np.nan]),
                                        np.array([10, 20, 30, 0]))
    ax = plots.reliability_diagram(bins, variant="top_label").axes[0]
    value, _ = _ece_text(ax)
    assert abs(value - 100 * (10 * 0.1 + 20 * 0.0 + 30 * 0.1) / 60) <= 0.005 + 1e-9
    assert "decided class" in ax.figure.axes[1].get_xlabel()


# ----------------------------------------------------------- metric vs yield

def test_metric_vs_yield_no_rank_correlation_for_two_systems():
    ax = plots.metric_vs_yield([0.1, 0.3], [0.9, 0.2], metric_name="F1", labels=["a", "b"]).axes[0]
    assert "Spearman" not in ax.get_title()


def test_metric_vs_yield_spearman_with_ties_matches_scipy():
    a = np.array([0.1, 0.4, 0.2, 0.9, 0.5, 0.5])
    b = np.array([3.0, 1.0, 2.0, 2.0, 5.0, 0.0])
    ax = plots.metric_vs_yield(a, b, metric_name="F1").axes[0]
    assert f"Spearman {spearmanr(a, b).statistic:.2f}" in ax.get_title()


# -------------------------------------------------------------- posteriors

def test_yield_posteriors_hdi_marks_match_arviz():
    import arviz as az

    draws = np.random.default_rng(0).normal([0.0, 1.0], [0.3, 0.5], (800, 2)).astype(np.float32)
    for prob in (0.9, 0.8):
        ax = plots.yield_posteriors(draws, names=["a", "b"], p_best=[0.1, 0.9], hdi_prob=prob).axes[0]
        for i, name in enumerate(["a", "b"]):
            mark = next(ln for ln in ax.lines if ln.get_gid() == f"hdi:{name}")
            np.testing.assert_array_equal(mark.get_xdata(), az.hdi(draws[:, i].astype(np.float64), hdi_prob=prob))
            assert np.all(np.asarray(mark.get_ydata()) < 0)  # below the histograms
        assert f"{100 * prob:g} % highest-density interval" in [t.get_text() for t in ax.get_legend().get_texts()]


@pytest.mark.slow  # ~18 s (a full comparison to draw); the other figure tests stay in the default lane
def test_yield_posteriors_and_ranks_from_a_comparison():
    import arviz as az
    import jax

    from ecjax import prob

    counts = np.array([[[80, 20], [10, 90]], [[70, 30], [25, 75]]])
    result = prob.compare_counts(dict(zip(["left", "right"], counts)), costs=prob.cost_ratio(1, 3),
                                 key=jax.random.key(0), decompose=False,
                                 settings=prob.MonteCarloSettings(num_draws=1000))
    ax = plots.yield_posteriors(result).axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0].startswith("left  P(best) = ") and legend[1].startswith("right  P(best) = ")
    yields = np.asarray(result.yields)
    for i, name in enumerate(["left", "right"]):
        mark = next(ln for ln in ax.lines if ln.get_gid() == f"hdi:{name}")
        np.testing.assert_array_equal(mark.get_xdata(), az.hdi(yields[:, i].astype(np.float64),
                                                               hdi_prob=result.hdi_prob))
    ax = plots.rank_probabilities(result).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["left", "right"]


# ------------------------------------------------------------------- sweeps

def test_winner_map_plain_axes_and_infeasible_region_explained():
    from ecjax import sweep

    counts = np.array([[[80, 20], [10, 90]], [[95, 5], [40, 60]]])
    m = sweep.utility_space_map(counts, resolution=41)
    ax = plots.winner_map(m, names=["a", "b"], frame=plots.Frame(class_names=("healthy", "sick"))).axes[0]
    for text in (ax.get_xlabel(), ax.get_ylabel()):
        assert "seed" not in text and "eq." not in text and "worth" in text
    assert "correct sick decision" in ax.get_xlabel() and "missed sick" in ax.get_ylabel()
    corners = [p for p in ax.patches if p.get_hatch()]
    assert len(corners) == 2
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("not a utility matrix: an error worth") for t in legend)
    # The hatched corners cover exactly the blank (masked) grid points: |x - y| > 1.
    xx, yy = np.meshgrid(np.linspace(-1, 1, 41), np.linspace(-1, 1, 41))
    outside = np.abs(xx - yy) > 1 + 1e-9
    pts = np.stack([xx.ravel(), yy.ravel()], -1)
    covered = np.zeros(len(pts), bool)
    for p in corners:
        path = mpath.Path(p.get_xy())
        # The sign of the radius that widens a path depends on its orientation: take both, boundary included.
        covered |= path.contains_points(pts, radius=1e-9) | path.contains_points(pts, radius=-1e-9)
    assert np.all(covered[outside.ravel()])
    assert not np.any(covered[(np.abs(xx - yy) < 1 - 1e-9).ravel()])
    np.testing.assert_array_equal(ax.images[0].get_array().mask, outside)


def test_sweep_curves_from_a_sweep_result_marks_flips():
    from ecjax import sweep
    from ecjax.sweep import grids

    counts = np.array([[[90, 10], [30, 70]], [[60, 40], [5, 95]]])
    res = sweep.sweep_counts(counts, grids.cost_ratios(0.1, 10, 41), normalize=True)
    ax = plots.sweep_curves(res, names=["a", "b"], log_x=True).axes[0]
    r = np.logspace(-1, 1, 41)
    # Independent NEC of costs [[0, 1], [r, 0]] with the data priors (each system's own: 100/100).
    fa, miss = counts[:, 0, 1] / 100, counts[:, 1, 0] / 100
    nec = (0.5 * fa[None] + 0.5 * r[:, None] * miss[None]) / np.minimum(0.5, 0.5 * r)[:, None]
    np.testing.assert_allclose(next(ln for ln in ax.lines if ln.get_label() == "a").get_ydata(), nec[:, 0],
                               rtol=1e-5)
    order = np.sign(nec[:, 0] - nec[:, 1])
    flips = r[1:][order[1:] * order[:-1] < 0]
    drawn = [ln.get_xdata()[0] for ln in ax.lines if ln.get_linestyle() == ":"]
    np.testing.assert_allclose(sorted(drawn), flips, rtol=1e-5)
    assert len(flips) == 1


def test_sweep_curves_symlog_only_for_exploding_necs():
    r = np.logspace(-1, 2, 50)
    nec = np.stack([1 + 1 / r, 0.5 + 0 * r], 1)  # up to 11: explodes
    assert plots.sweep_curves(r, nec, log_x=True).axes[0].get_yscale() == "symlog"
    assert plots.sweep_curves(r, nec / 4, log_x=True).axes[0].get_yscale() == "linear"
    assert plots.sweep_curves(r, nec, frame=plots.Frame(ylabel="utility yield")).axes[0].get_yscale() == "linear"


# ---------------------------------------------------------------------- ax=

def _all_figures():
    t = np.linspace(-3, 3, 20)
    fpr, tpr = _binormal_roc(1.0)
    x = np.linspace(-1, 1, 21)
    xx, yy = np.meshgrid(x, x)
    winners = np.where(np.abs(xx - yy) > 1, -1, (xx > 0).astype(int))
    draws = np.random.default_rng(0).normal([0, 1], 0.3, (500, 2))
    return {
        "reliability_diagram": lambda **kw: plots.reliability_diagram(([0.2, 0.7], [0.3, 0.6], [10, 20]), **kw),
        "cost_vs_threshold": lambda **kw: plots.cost_vs_threshold(t, t**2 / 9 + 0.2, bayes_threshold=0.0, **kw),
        "bayes_risk_curves": lambda **kw: plots.bayes_risk_curves(t, t**2 / 9 + 0.3, t**2 / 9 + 0.1, **kw),
        "roc_with_iso_utility": lambda **kw: plots.roc_with_iso_utility(fpr, tpr, costs=[[0, 1], [2, 0]],
                                                                        priors=[0.5, 0.5], **kw),
        "det": lambda **kw: plots.roc_with_iso_utility(fpr, tpr, det=True, **kw),
        "yield_posteriors": lambda **kw: plots.yield_posteriors(draws, p_best=[0.1, 0.9], **kw),
        "rank_probabilities": lambda **kw: plots.rank_probabilities([[0.7, 0.3], [0.3, 0.7]], **kw),
        "winner_map": lambda **kw: plots.winner_map(x, x, winners, **kw),
        "metric_vs_yield": lambda **kw: plots.metric_vs_yield(np.arange(6.0), np.arange(6.0) ** 2, **kw),
        "sweep_curves": lambda **kw: plots.sweep_curves(t, np.stack([t, -t], 1), flips=[0.0], **kw),
    }


@pytest.mark.parametrize("name", sorted(_all_figures()))
def test_ax_draws_into_the_given_axes_and_returns_its_figure(name, tmp_path):
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4))
    before = plt.get_fignums()
    out = _all_figures()[name](frame=plots.Frame(ax=right, path=tmp_path / "f.png"))
    assert out is fig
    assert plt.get_fignums() == before  # no new figure
    assert right.has_data() and not left.has_data()
    assert (tmp_path / "f.png").stat().st_size > 1000


@pytest.mark.parametrize("name", sorted(_all_figures()))
def test_figure_text_is_plain_words(name):
    fig = _all_figures()[name]()
    texts = [fig.texts] + [[a.title, a.xaxis.label, a.yaxis.label, *a.texts,
                            *(a.get_legend().get_texts() if a.get_legend() else [])] for a in fig.axes]
    for t in (t for group in texts for t in group):
        assert not re.search(r"\bseed\b|\beq\.|\bFig\. \d", t.get_text()), t.get_text()


def test_reliability_with_credible_bands_draws_the_beta_posterior_band():
    # The band of each non-empty bin is the Beta(1 + hits, 1 + misses) posterior's equal-tailed 90 % interval.
    rng = np.random.default_rng(5)
    n = 600
    p1 = rng.uniform(0.02, 0.98, n)
    labels = (rng.uniform(size=n) < p1).astype(int)
    bands = ecjax.reliability_bands(labels, np.log(np.stack([1 - p1, p1], -1)), prob=0.9, num_bins=10,
                                    interval="equal_tailed")
    ax = plots.reliability_diagram(bands).axes[0]
    fill = next(c for c in ax.collections if c.get_label().startswith("90 % credible interval"))
    keep = np.asarray(bands.count) > 0
    hits, count = np.asarray(bands.hits)[keep], np.asarray(bands.count)[keep]
    low, high = beta.ppf(0.05, 1 + hits, 1 + count - hits), beta.ppf(0.95, 1 + hits, 1 + count - hits)
    verts = fill.get_paths()[0].vertices
    # fill_between's polygon: the upper edge runs back over the x values; compare the y values it spans at each x.
    for x, lo_ref, hi_ref in zip(np.asarray(bands.confidence)[keep], low, high):
        ys = verts[np.isclose(verts[:, 0], x), 1]
        np.testing.assert_allclose([ys.min(), ys.max()], [lo_ref, hi_ref], rtol=1e-9)
    assert not any(c.get_label().startswith("95 % interval") for c in ax.collections)
