"""Each figure renders to PNG and shows what it claims (checked on the figure's artists and pixels)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg
import numpy as np

from ecjax import plots


def _png_ok(path):
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    assert img[..., :3].std() > 0.01  # not blank
    return img


def test_reliability_diagram(tmp_path):
    fig = plots.reliability_diagram([0.1, 0.5, 0.9, 0.7], [0.2, 0.5, 0.8, 0.0], [10, 20, 30, 0], path=tmp_path / "r.png")
    _png_ok(tmp_path / "r.png")
    ax = fig.axes[0]
    observed = [l for l in ax.lines if l.get_label() == "observed"][0]
    np.testing.assert_allclose(observed.get_xdata(), [0.1, 0.5, 0.9])  # the empty bin is skipped
    diag = [l for l in ax.lines if l.get_label() == "perfect calibration"][0]
    np.testing.assert_allclose(diag.get_ydata(), [0, 1])


def test_cost_vs_threshold_marks_thresholds(tmp_path):
    t = np.linspace(-3, 3, 50)
    fig = plots.cost_vs_threshold(t, (t - 1) ** 2 / 9 + 0.3, bayes_threshold=0.5, optimal_threshold=1.0,
                                  path=tmp_path / "t.png")
    _png_ok(tmp_path / "t.png")
    vlines = [l.get_xdata()[0] for l in fig.axes[0].lines if "threshold" in l.get_label()]
    assert sorted(vlines) == [0.5, 1.0]


def test_bayes_risk_curves(tmp_path):
    x = np.linspace(-5, 5, 21)
    fig = plots.bayes_risk_curves(x, [np.full(21, 0.5), np.full(21, 0.7)], [np.full(21, 0.4), np.full(21, 0.6)],
                                  names=["a", "b"], path=tmp_path / "b.png")
    _png_ok(tmp_path / "b.png")
    labels = [l.get_label() for l in fig.axes[0].lines]
    assert {"a (actual)", "a (minimum)", "b (actual)", "b (minimum)"} <= set(labels)


def test_roc_iso_utility_line_is_tangent(tmp_path):
    # ROC of a binormal model; with symmetric utilities and equal priors the iso-utility slope is 1 and the best
    # point maximizes TPR - FPR (an independent closed form).
    z = np.linspace(-4, 4, 401)
    from scipy.stats import norm

    fpr, tpr = norm.sf(z), norm.sf(z - 1.5)
    u = np.eye(2)
    fig = plots.roc_with_iso_utility(fpr, tpr, utilities=u, priors=[0.5, 0.5], path=tmp_path / "roc.png")
    _png_ok(tmp_path / "roc.png")
    iso = [l for l in fig.axes[0].lines if l.get_label().startswith("iso-utility")][0]
    xs, ys = iso.get_xdata(), iso.get_ydata()
    assert np.isclose((ys[-1] - ys[0]) / (xs[-1] - xs[0]), 1.0)
    i = np.argmax(tpr - fpr)
    assert np.isclose(np.interp(fpr[i], xs, ys), tpr[i], atol=1e-6)


def test_yield_posteriors_labels_p_best(tmp_path):
    rng = np.random.default_rng(0)
    fig = plots.yield_posteriors(rng.normal([0, 1], 0.3, (500, 2)), names=["a", "b"], p_best=[0.01, 0.99],
                                 path=tmp_path / "y.png")
    _png_ok(tmp_path / "y.png")
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert texts == ["a  P(best) = 0.010", "b  P(best) = 0.990", "90 % highest-density interval"]


def test_rank_probabilities_annotated(tmp_path):
    p = np.array([[0.7, 0.3], [0.3, 0.7]])
    fig = plots.rank_probabilities(p, names=["a", "b"], path=tmp_path / "rank.png")
    _png_ok(tmp_path / "rank.png")
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["0.30", "0.30", "0.70", "0.70"]
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), p)


def test_winner_map_colours_and_shares(tmp_path):
    x = np.linspace(-1, 1, 41)
    y = np.linspace(-1, 1, 41)
    xx, yy = np.meshgrid(x, y)
    winners = np.where(np.abs(xx - yy) > 1, -1, (xx > 0).astype(int))
    winners[(np.abs(xx) < 0.1) & (winners >= 0)] = -2  # a band of ties
    fig = plots.winner_map(x, y, winners, names=["left", "right"], path=tmp_path / "w.png")
    img = _png_ok(tmp_path / "w.png")
    arr = fig.axes[0].images[0].get_array()
    assert arr.mask.sum() == np.sum(winners == -1)  # only the outside of the hexagon is blank
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    inside = winners != -1
    share_right = np.mean(winners[inside] == 1)
    assert f"right ({100 * share_right:.1f} %)" in legend
    assert f"tie ({100 * np.mean(winners[inside] == -2):.1f} %)" in legend
    # Two distinct system colours appear in the rendered image.
    colours = {tuple(np.round(c, 2)) for c in img[..., :3].reshape(-1, 3)[::50]}
    assert len(colours) > 3


def test_metric_vs_yield_spearman_in_title(tmp_path):
    a = np.arange(10.0)
    fig = plots.metric_vs_yield(a, -a, metric_name="F1", path=tmp_path / "m.png")
    _png_ok(tmp_path / "m.png")
    assert "Spearman -1.00" in fig.axes[0].get_title()


def test_metric_vs_yield_labels_points(tmp_path):
    fig = plots.metric_vs_yield([0.1, 0.3], [0.9, 0.2], metric_name="F1", labels=["a", "b"], path=tmp_path / "l.png")
    _png_ok(tmp_path / "l.png")
    assert [t.get_text() for t in fig.axes[0].texts] == ["a", "b"]
    # Two systems: a rank correlation is always +-1 and says nothing, so the title has none.
    assert "Spearman" not in fig.axes[0].get_title()
