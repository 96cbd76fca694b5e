"""Each figure renders to PNG and shows what it claims (checked on the figure's artists and pixels)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pytest

from ecjax import InputError
from ecjax._src import plots


def _png_ok(path):
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    assert img[..., :3].std() > 0.01  # not blank
    return img


def test_reliability_diagram(tmp_path):
    fig = plots.reliability_diagram(([0.1, 0.5, 0.9, 0.7], [0.2, 0.5, 0.8, 0.0], [10, 20, 30, 0]),
                                    frame=plots.Frame(path=tmp_path / "r.png"))
    _png_ok(tmp_path / "r.png")
    ax = fig.axes[0]
    observed = [l for l in ax.lines if l.get_label() == "observed"][0]
    np.testing.assert_allclose(observed.get_xdata(), [0.1, 0.5, 0.9])  # the empty bin is skipped
    diag = [l for l in ax.lines if l.get_label() == "perfect calibration"][0]
    np.testing.assert_allclose(diag.get_ydata(), [0, 1])


def test_cost_vs_threshold_marks_thresholds(tmp_path):
    t = np.linspace(-3, 3, 50)
    fig = plots.cost_vs_threshold(t, (t - 1) ** 2 / 9 + 0.3, bayes_threshold=0.5, optimal_threshold=1.0,
                                  frame=plots.Frame(path=tmp_path / "t.png"))
    _png_ok(tmp_path / "t.png")
    vlines = [l.get_xdata()[0] for l in fig.axes[0].lines if "threshold" in l.get_label()]
    assert sorted(vlines) == [0.5, 1.0]


def test_bayes_risk_curves(tmp_path):
    x = np.linspace(-5, 5, 21)
    fig = plots.bayes_risk_curves(x, [np.full(21, 0.5), np.full(21, 0.7)], [np.full(21, 0.4), np.full(21, 0.6)],
                                  names=["a", "b"], frame=plots.Frame(path=tmp_path / "b.png"))
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
    fig = plots.roc_with_iso_utility(fpr, tpr, utilities=u, priors=[0.5, 0.5],
                                     frame=plots.Frame(path=tmp_path / "roc.png"))
    _png_ok(tmp_path / "roc.png")
    iso = [l for l in fig.axes[0].lines if l.get_label().startswith("iso-utility")][0]
    xs, ys = iso.get_xdata(), iso.get_ydata()
    assert np.isclose((ys[-1] - ys[0]) / (xs[-1] - xs[0]), 1.0)
    i = np.argmax(tpr - fpr)
    assert np.isclose(np.interp(fpr[i], xs, ys), tpr[i], atol=1e-6)


def test_yield_posteriors_labels_p_best(tmp_path):
    rng = np.random.default_rng(0)
    fig = plots.yield_posteriors(rng.normal([0, 1], 0.3, (500, 2)), names=["a", "b"], p_best=[0.01, 0.99],
                                 frame=plots.Frame(path=tmp_path / "y.png"))
    _png_ok(tmp_path / "y.png")
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert texts == ["a  P(best) = 0.010", "b  P(best) = 0.990", "90 % highest-density interval"]


def test_rank_probabilities_annotated(tmp_path):
    p = np.array([[0.7, 0.3], [0.3, 0.7]])
    fig = plots.rank_probabilities(p, names=["a", "b"], frame=plots.Frame(path=tmp_path / "rank.png"))
    _png_ok(tmp_path / "rank.png")
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["0.30", "0.30", "0.70", "0.70"]
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), p)


def test_winner_map_colours_and_shares(tmp_path):
    x = np.linspace(-1, 1, 41)
    y = np.linspace(-1, 1, 41)
    xx, yy = np.meshgrid(x, y)
    winners = np.where(np.abs(xx - yy) > 1, -1, (xx > 0).astype(int))
    winners[(np.abs(xx) < 0.1) & (winners >= 0)] = -2  # a band of ties
    fig = plots.winner_map(x, y, winners, names=["left", "right"], frame=plots.Frame(path=tmp_path / "w.png"))
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
    fig = plots.metric_vs_yield(a, -a, metric_name="F1", frame=plots.Frame(path=tmp_path / "m.png"))
    _png_ok(tmp_path / "m.png")
    assert "Spearman -1.00" in fig.axes[0].get_title()


def test_metric_vs_yield_labels_points(tmp_path):
    fig = plots.metric_vs_yield([0.1, 0.3], [0.9, 0.2], metric_name="F1", labels=["a", "b"],
                                frame=plots.Frame(path=tmp_path / "l.png"))
    _png_ok(tmp_path / "l.png")
    assert [t.get_text() for t in fig.axes[0].texts] == ["a", "b"]
    # Two systems: a rank correlation is always +-1 and says nothing, so the title has none.
    assert "Spearman" not in fig.axes[0].get_title()


# ---------------------------------------------------------------------- Frame

def _figures_with_frame():
    """Every public plot function, drawn from small data, with ``frame=`` passed through."""
    t = np.linspace(-3, 3, 20)
    x = np.linspace(-1, 1, 11)
    xx, yy = np.meshgrid(x, x)
    winners = np.where(np.abs(xx - yy) > 1, -1, (xx > 0).astype(int))
    draws = np.random.default_rng(0).normal([0, 1], 0.3, (200, 2))
    fpr = np.linspace(0, 1, 11)
    return {
        "reliability_diagram": lambda frame: plots.reliability_diagram(([0.2, 0.7], [0.3, 0.6], [10, 20]),
                                                                       variant="binary", frame=frame),
        "cost_vs_threshold": lambda frame: plots.cost_vs_threshold(t, t**2 / 90 + 0.2, frame=frame),
        "bayes_risk_curves": lambda frame: plots.bayes_risk_curves(t, t**2 / 90 + 0.3, t**2 / 90 + 0.1, frame=frame),
        "roc_with_iso_utility": lambda frame: plots.roc_with_iso_utility(fpr, fpr**0.5, frame=frame),
        "yield_posteriors": lambda frame: plots.yield_posteriors(draws, frame=frame),
        "rank_probabilities": lambda frame: plots.rank_probabilities([[0.7, 0.3], [0.3, 0.7]], frame=frame),
        "winner_map": lambda frame: plots.winner_map(x, x, winners, frame=frame),
        "metric_vs_yield": lambda frame: plots.metric_vs_yield(np.arange(6.0), np.arange(6.0) ** 2, frame=frame),
        "sweep_curves": lambda frame: plots.sweep_curves(t, np.stack([t, -t], 1) / 10, frame=frame),
    }


NAMES_CLASSES = {"reliability_diagram", "roc_with_iso_utility", "winner_map"}


def test_every_public_plot_function_takes_a_frame_and_at_most_ten_parameters():
    import inspect

    functions = {n: f for n, f in vars(plots).items()
                 if inspect.isfunction(f) and not n.startswith("_") and f.__module__ == plots.__name__}
    assert set(_figures_with_frame()) <= set(functions)
    for name, f in functions.items():
        params = inspect.signature(f).parameters
        assert len(params) <= 10, (name, list(params))
        assert params["frame"].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert isinstance(params["frame"].default, plots.Frame), name
        assert not {"title", "xlabel", "ylabel", "class_names", "ax", "path"} & set(params), name


@pytest.mark.parametrize("name", sorted(_figures_with_frame()))
def test_frame_title_labels_and_path_reach_the_figure(name, tmp_path):
    path = tmp_path / f"{name}.png"
    frame = plots.Frame(title="my title", xlabel="my x", ylabel="my y", path=path)
    fig = _figures_with_frame()[name](frame)
    ax = fig.axes[0]
    assert ax.get_title() == "my title"
    # The reliability diagram's own figure has the samples per bin below, sharing the x axis and holding its label.
    assert fig.axes[1 if name == "reliability_diagram" else 0].get_xlabel() == "my x"
    assert ax.get_ylabel() == "my y"
    _png_ok(path)
    plt.close(fig)


@pytest.mark.parametrize("name", sorted(_figures_with_frame()))
def test_default_frame_keeps_each_functions_own_text(name):
    fig = _figures_with_frame()[name](plots.Frame())
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_title() not in ("my title",)
    assert fig.axes[1 if name == "reliability_diagram" else 0].get_xlabel()
    plt.close(fig)


def test_default_frame_titles_and_labels_are_the_former_defaults():
    fig = _figures_with_frame()["reliability_diagram"](plots.Frame())
    assert fig.axes[0].get_title() == "Reliability diagram"
    fig = _figures_with_frame()["sweep_curves"](plots.Frame())
    ax = fig.axes[0]
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("Sensitivity sweep", "swept parameter", "NEC")
    assert any(ln.get_label() == "naive decision (no scores)" for ln in ax.lines)  # "NEC" in the y label
    ax = _figures_with_frame()["sweep_curves"](plots.Frame(ylabel="utility yield")).axes[0]
    assert not any(ln.get_label() == "naive decision (no scores)" for ln in ax.lines)
    ax = _figures_with_frame()["roc_with_iso_utility"](plots.Frame(class_names=["no", "yes"])).axes[0]
    assert ax.get_title() == "ROC (positive class: yes)" and ax.get_xlabel() == "false-positive rate: no decided yes"
    plt.close("all")


@pytest.mark.parametrize("name", sorted(set(_figures_with_frame()) - NAMES_CLASSES))
def test_class_names_to_a_plot_that_names_no_classes_is_an_error(name):
    with pytest.raises(InputError, match=rf"{name} does not use `Frame\.class_names`"):
        _figures_with_frame()[name](plots.Frame(class_names=("a", "b")))


@pytest.mark.parametrize("name", sorted(NAMES_CLASSES))
def test_class_names_reach_the_plots_that_name_classes(name):
    fig = _figures_with_frame()[name](plots.Frame(class_names=("healthy", "sick")))
    texts = [a.get_xlabel() + a.get_ylabel() + a.get_title() for a in fig.axes]
    assert any("sick" in t for t in texts)
    plt.close(fig)


def test_frame_ax_draws_into_a_subfigure_and_returns_the_root_figure(tmp_path):
    fig = plt.figure()
    sub = fig.subfigures(1, 2)[1]
    ax = sub.subplots()
    out = plots.metric_vs_yield([0.1, 0.2], [0.3, 0.4], frame=plots.Frame(ax=ax, path=str(tmp_path / "s.png")))
    assert out is fig and ax.has_data()
    _png_ok(tmp_path / "s.png")
    plt.close(fig)


@pytest.mark.parametrize("field, value", [
    ("title", 3), ("xlabel", b"bytes"), ("ylabel", ["y"]),
    ("class_names", "ab"), ("class_names", (0, 1)), ("class_names", 2),
    ("ax", "axes"), ("path", 3.5),
])
def test_invalid_frame_field_names_it(field, value):
    with pytest.raises(InputError, match=rf"`Frame\.{field}`"):
        plots.Frame(**{field: value})


def test_frame_ax_must_be_axes_not_a_figure():
    fig = plt.figure()
    with pytest.raises(InputError, match=r"`Frame\.ax` must be a matplotlib Axes, got Figure"):
        plots.Frame(ax=fig)
    plt.close(fig)


def test_frame_is_frozen_and_class_names_become_a_tuple():
    import dataclasses

    frame = plots.Frame(class_names=["a", "b"])
    assert frame.class_names == ("a", "b") and hash(frame) == hash(plots.Frame(class_names=("a", "b")))
    with pytest.raises(dataclasses.FrozenInstanceError):
        frame.title = "t"  # type: ignore[misc]


def test_two_class_names_are_needed_where_used():
    with pytest.raises(InputError, match=r"`Frame\.class_names` must name the two classes"):
        _figures_with_frame()["winner_map"](plots.Frame(class_names=("a", "b", "c")))


def test_frame_must_be_a_frame():
    with pytest.raises(InputError, match=r"`frame` must be an ecjax\.plots\.Frame, got dict"):
        plots.sweep_curves([0.0, 1.0], [[0.1], [0.2]], frame={"title": "t"})


# ------------------------------------------------------ reliability_diagram(bins)

def test_reliability_bins_as_object_tuple_list_or_bands_draw_the_same_points():
    from ecjax.scores import ReliabilityBins

    conf, freq, count = [0.1, 0.5, 0.9, np.nan], [0.2, 0.5, 0.8, np.nan], [10, 20, 30, 0]
    for bins in (ReliabilityBins(np.array(conf), np.array(freq), np.array(count)), (conf, freq, count),
                 [conf, freq, count], np.array([conf, freq, count])):
        ax = plots.reliability_diagram(bins).axes[0]
        observed = next(ln for ln in ax.lines if ln.get_label() == "observed")
        np.testing.assert_allclose(observed.get_xdata(), conf[:3])
        np.testing.assert_allclose(observed.get_ydata(), freq[:3])
        plt.close(ax.figure)


@pytest.mark.parametrize("bins", [
    ([0.1, 0.5], [0.2, 0.5]),  # two arrays, not three
    "bins",
    0.5,
    ([0.1, 0.5], [0.2, 0.5], [10]),  # lengths differ
    ([[0.1]], [[0.2]], [[10]]),  # not (B,)
])
def test_reliability_bad_bins_name_bins(bins):
    with pytest.raises(InputError, match=r"`bins`"):
        plots.reliability_diagram(bins)


def test_reliability_bins_and_scores_are_exclusive():
    with pytest.raises(InputError, match="not both"):
        plots.reliability_diagram(([0.1], [0.2], [1]), labels=[0, 1], scores=[[0.0, 0.0], [0.0, 0.0]])
    with pytest.raises(InputError, match="give the bins"):
        plots.reliability_diagram()
