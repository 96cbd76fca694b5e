"""Credible bands on ROC and precision-recall curves (ecjax._src.prob.curve_bands).

References: scikit-learn's weighted ``roc_curve`` / ``precision_recall_curve`` read on the grid by a short numpy
computation; numpy quantiles and depths of the draws; the binormal ROC in closed form,
``TPR(f) = Phi((mu + Phi^-1(f)) / sigma_1)``, for coverage.
"""
import numpy as np
import pytest
from scipy.stats import norm
from sklearn.metrics import precision_recall_curve, roc_curve

import jax
import jax.numpy as jnp

import ecjax
from ecjax._src.prob.curve_bands import bands_of_draws, curve_band, curve_draws

MU, SD1 = 1.5, 1.3  # positives ~ N(MU, SD1^2), negatives ~ N(0, 1)
INTERIOR = {"roc": np.linspace(0.05, 0.9, 35), "precision_recall": np.linspace(0.3, 0.95, 27)}


def true_curve(curve, grid):
    if curve == "roc":
        return norm.cdf((MU + norm.ppf(grid)) / SD1)
    fpr = norm.sf(MU - SD1 * norm.ppf(grid))  # at the threshold whose recall is the grid point
    return grid / (grid + fpr)  # both classes equally likely


def numpy_roc_on_grid(y, s, w, grid):
    """Highest TPR of the polyline through scikit-learn's ROC points at each false-alarm rate."""
    fpr, tpr, _ = roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    out = []
    for f in grid:
        best = -np.inf
        for x0, y0, x1, y1 in zip(fpr[:-1], tpr[:-1], fpr[1:], tpr[1:]):
            if x0 <= f <= x1:
                best = max(best, max(y0, y1) if x1 == x0 else y0 + (f - x0) / (x1 - x0) * (y1 - y0))
        out.append(best)
    return np.array(out)


def numpy_precision_on_grid(y, s, w, grid):
    """Precision at the highest threshold whose recall reaches each grid point."""
    precision, recall, thresholds = precision_recall_curve(y, s, sample_weight=w)
    precision, recall = precision[:-1], recall[:-1]  # the last point (recall 0) has no threshold
    return np.array([precision[recall >= r - 1e-12][np.argmax(thresholds[recall >= r - 1e-12])] for r in grid])


@pytest.mark.parametrize("curve", ["roc", "precision_recall"])
def test_each_draw_is_the_weighted_curve_of_scikit_learn(curve):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 60)
    s = np.round(rng.normal(y, 1.0), 1)  # rounded: tied scores, whose cuts no threshold realizes
    w = rng.exponential(size=(4, 60))
    grid = np.linspace(0.0 if curve == "roc" else 0.02, 1.0, 51)
    got = np.asarray(jax.jit(curve_draws, static_argnames="curve")(
        jnp.asarray(y), jnp.asarray(s, jnp.float32), jnp.asarray(w, jnp.float32), jnp.asarray(grid, jnp.float32),
        curve=curve))
    read = numpy_roc_on_grid if curve == "roc" else numpy_precision_on_grid
    want = np.stack([read(y, s.astype(np.float32), wi, grid) for wi in w])
    np.testing.assert_allclose(got, want, atol=2e-6)
    # batched weights: (2, 2, N) -> (2, 2, G)
    batched = curve_draws(jnp.asarray(y), jnp.asarray(s, jnp.float32), jnp.asarray(w.reshape(2, 2, 60), jnp.float32),
                          jnp.asarray(grid, jnp.float32), curve=curve)
    np.testing.assert_allclose(np.asarray(batched).reshape(4, -1), got, atol=1e-7)


def test_bands_are_numpy_quantiles_and_the_deepest_envelope():
    rng = np.random.default_rng(1)
    draws = rng.beta(5, 2, size=(200, 30)).astype(np.float32)
    lo, hi, slo, shi = (np.asarray(x) for x in bands_of_draws(jnp.asarray(draws), 0.9))
    np.testing.assert_allclose(lo, np.quantile(draws, 0.05, axis=0), rtol=1e-6)
    np.testing.assert_allclose(hi, np.quantile(draws, 0.95, axis=0), rtol=1e-6)
    # depth of a draw: its smallest min(#{<= it}, #{>= it}) / B over the grid; the envelope of the 180 deepest
    at_most = (draws[None, :, :] <= draws[:, None, :]).sum(1)
    at_least = (draws[None, :, :] >= draws[:, None, :]).sum(1)
    depth = np.minimum(at_most, at_least).min(1)
    kept = draws[np.argsort(-depth, kind="stable")[:180]]
    np.testing.assert_array_equal(slo, kept.min(0))
    np.testing.assert_array_equal(shi, kept.max(0))
    inside = ((draws >= slo) & (draws <= shi)).all(1).mean()
    assert inside >= 0.9
    assert np.all(slo <= lo) and np.all(shi >= hi)


def test_estimate_is_the_unweighted_curve():
    rng = np.random.default_rng(2)
    y = np.repeat([0, 1], 200)  # the shapes of the coverage test below: one compilation serves both
    s = rng.normal(y, 1.0)
    band = curve_band(y, s, score_type="llr", key=jax.random.key(0), num_draws=200, level=0.9, grid=INTERIOR["roc"])
    np.testing.assert_allclose(band.estimate, numpy_roc_on_grid(y, s.astype(np.float32), None, band.grid), atol=2e-6)
    assert band.draws.shape == (200, 35) and band.to_dict()["curve"] == "roc"


def _coverage(curve, replications, n, num_draws, level):
    rng = np.random.default_rng(3)
    whole = pointwise = 0.0
    truth = true_curve(curve, INTERIOR[curve])
    for r in range(replications):
        # Classes drawn, not fixed: the bootstrap resamples them (fixed class sizes leave the precision less
        # variable than its posterior says: pointwise PR coverage 0.945 at 0.9, measured).
        y = (rng.random(2 * n) < 0.5).astype(int)
        s = np.where(y == 1, rng.normal(MU, SD1, 2 * n), rng.normal(0.0, 1.0, 2 * n))
        b = curve_band(y, s, curve=curve, score_type="llr", key=jax.random.key(r), num_draws=num_draws, level=level,
                       grid=INTERIOR[curve])
        whole += np.all((truth >= b.simultaneous_lower) & (truth <= b.simultaneous_upper))
        pointwise += np.mean((truth >= b.pointwise_lower) & (truth <= b.pointwise_upper))
    return whole / replications, pointwise / replications


@pytest.mark.parametrize("curve", ["roc", "precision_recall"])
def test_simultaneous_band_covers_the_binormal_curve_small(curve):
    # 40 test sets: a 0.9 band's whole-curve coverage has a standard error of ~0.05 (measured here: 0.875 ROC, 0.85
    # PR); the pointwise band, taken as a whole-curve band, holds the whole curve in 0.55 (ROC) and 0.625 (PR) of
    # them, below the bound.
    whole, pointwise = _coverage(curve, 40, 200, 200, 0.9)
    assert whole >= 0.75, whole
    assert 0.8 <= pointwise <= 0.97, pointwise


@pytest.mark.slow  # 400 test sets x 2 curves: about a minute
@pytest.mark.parametrize("curve", ["roc", "precision_recall"])
def test_simultaneous_band_covers_the_binormal_curve(curve):
    whole, pointwise = _coverage(curve, 400, 300, 400, 0.9)
    assert 0.84 <= whole <= 0.96, whole  # binomial sd at 400 replications: 0.015
    assert 0.86 <= pointwise <= 0.94, pointwise


@pytest.mark.parametrize("kwargs, match", [
    (dict(curve="det"), "curve"),
    (dict(level=1.0), "level"),
    (dict(num_draws=1), "num_draws"),
    (dict(grid=[0.5, 1.2]), "grid"),
    (dict(grid=[0.0, 0.5], curve="precision_recall"), "recall 0"),
    (dict(grid=[[0.5]]), "grid"),
])
def test_bad_arguments_are_named(kwargs, match):
    y = np.array([0, 1, 0, 1])
    with pytest.raises(ecjax.InputError, match=match):
        curve_band(y, np.array([0.1, 0.9, 0.3, 0.4]), score_type="llr", key=jax.random.key(0), **kwargs)


def test_figure_draws_the_estimate_and_both_bands(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ecjax import plots

    rng = np.random.default_rng(5)
    y = np.repeat([0, 1], 200)
    s = rng.normal(y, 1.0)
    bands = [curve_band(y, s, score_type="llr", key=jax.random.key(i), num_draws=200, level=0.9,
                        grid=INTERIOR["roc"]) for i in range(2)]
    fig = plots.curve_bands(bands, names=["a", "b"], frame=plots.Frame(path=tmp_path / "roc.png"))
    ax = fig.axes[0]
    assert (tmp_path / "roc.png").stat().st_size > 0
    lines = [line for line in ax.lines if line.get_label() in ("a", "b")]
    np.testing.assert_allclose(lines[0].get_ydata(), bands[0].estimate)
    # the filled regions: simultaneous then pointwise, per band; their vertices span exactly the band arrays
    fills = ax.collections
    assert len(fills) == 4
    for fill, lo, hi in [(fills[0], bands[0].simultaneous_lower, bands[0].simultaneous_upper),
                         (fills[1], bands[0].pointwise_lower, bands[0].pointwise_upper)]:
        ys = fill.get_paths()[0].vertices[:, 1]
        assert np.isclose(ys.min(), float(np.min(lo))) and np.isclose(ys.max(), float(np.max(hi)))
    plt.close(fig)
    pr = curve_band(y, s, curve="precision_recall", score_type="llr", key=jax.random.key(0), num_draws=200,
                    level=0.9, grid=INTERIOR["precision_recall"])
    with pytest.raises(ecjax.InputError, match="curve"):
        plots.curve_bands([bands[0], pr])
    plt.close("all")


def test_metrics_curves_record_the_bands(tmp_path, monkeypatch):
    import json

    from ecjax._src.cli import metrics_extras

    from conftest import run_cli

    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 300)
    llr = rng.normal(1.5 * y, 1.0)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "llr.npy", llr)
    monkeypatch.setattr(metrics_extras, "CURVE_BAND_DRAWS", 200)
    code, out, err = run_cli("metrics", "--labels", "y.npy", "--scores", "llr.npy", "--score-type", "llr",
                             "--names", "A", "--curves", "--curve-bands", "--seed", "1", "--json", cwd=tmp_path)
    assert code == 0, err
    record = json.loads(out)["curves"]["A"]
    roc, pr = record["roc_band"], record["precision_recall_band"]
    assert roc["level"] == 0.95 and "draws" not in roc
    np.testing.assert_allclose(roc["estimate"], numpy_roc_on_grid(y, llr.astype(np.float32), None, roc["grid"]),
                               atol=2e-6)
    np.testing.assert_allclose(pr["estimate"], numpy_precision_on_grid(y, llr.astype(np.float32), None, pr["grid"]),
                               atol=2e-6)
    for band in (roc, pr):
        assert np.all(np.asarray(band["simultaneous_lower"]) <= np.asarray(band["pointwise_lower"]))
        assert np.all(np.asarray(band["simultaneous_upper"]) >= np.asarray(band["pointwise_upper"]))
    # --seed keys the bands: seed 1 draws the ROC band of key 1 folded with 0 (the PR band: with 1)
    want = curve_band(y, llr, score_type="llr", key=jax.random.fold_in(jax.random.key(1), 0), num_draws=200,
                      level=0.95)
    np.testing.assert_allclose(roc["pointwise_lower"], want.pointwise_lower, rtol=1e-6)
    # Without --curve-bands, --curves gives the curves only (no bootstrap).
    code, out, err = run_cli("metrics", "--labels", "y.npy", "--scores", "llr.npy", "--score-type", "llr",
                             "--names", "A", "--curves", "--json", cwd=tmp_path)
    assert code == 0 and "roc_band" not in json.loads(out)["curves"]["A"], err
