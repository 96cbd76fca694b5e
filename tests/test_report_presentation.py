"""What a reader takes from a table: winners that rounding cannot contradict, named conventions, one ECE per run.

References are written here: the ranks and rounding of the numbers themselves, numpy NEC of Bayes decisions, and
the ECE of equal-width bins counted by hand.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import log_softmax
from test_cli_sweep_calibrate import d, nec_of_bayes_decisions, ok_json, run  # noqa: F401 (d is a fixture)

from ecjax import cli
from ecjax._src.prob.ranking import with_error
from ecjax._src.report import Column, apart, cell_digits, disagreements, format_table, winner, winners


def _cells(table, column):
    lines = table.splitlines()
    heads = lines[0].split()
    j = next(i for i, h in enumerate(heads) if h.rstrip("!") == column)
    return [line.split()[j] for line in lines[2:]]


def test_values_equal_up_to_float32_rounding_are_tied_not_won():
    # The speaker-verification table: AUC 0.9999955 against 0.9999950 (5e-7 apart, a few float32 ulps at 1).
    auc = Column("AUC", True, np.array([0.9999955, 0.9999950]))
    yield_ = Column("utility_yield", True, np.array([-0.2, -0.1]))
    assert winners(auc) == [0, 1] and winner(auc) is None
    cells = _cells(format_table([yield_, auc], ["a", "b"]), "AUC")
    assert cells == ["1=", "1="]  # equal as printed, and marked as a tie, not `1*` against `1`
    assert disagreements([yield_, auc]) == []  # a tie that includes the reference's winner picks no other winner


def test_a_winner_prints_with_the_digits_that_show_it_apart():
    values = np.array([0.99914, 0.99906, 0.5])
    col = Column("AUC", True, values)
    assert winners(col) == [0]
    cells = _cells(format_table([Column("utility_yield", True, np.array([3.0, 2.0, 1.0])), col], ["a", "b", "c"]),
                   "AUC")
    assert cells[0].endswith("*") and not cells[1].endswith("*")
    shown = [float(c.rstrip("*= ")) for c in cells]
    assert shown[0] != shown[1]  # the printed winner differs from the runner-up
    p = cell_digits(values, [0])
    assert p == 5  # 4 significant digits print both as 0.9991
    assert f"{values[0]:.4g}" == f"{values[1]:.4g}" and f"{values[0]:.5g}" != f"{values[1]:.5g}"
    # Already apart at 4 digits: 4 digits.
    assert cell_digits(np.array([0.81, 0.75]), [0]) == 4


def test_a_tie_that_excludes_the_reference_winner_still_disagrees():
    yield_ = Column("utility_yield", True, np.array([3.0, 2.0, 1.0]))
    acc = Column("accuracy", True, np.array([0.7, 0.9, 0.9]))
    assert disagreements([yield_, acc]) == ["accuracy"]


def test_before_and_after_print_apart():
    # calibrate printed "0.0045 before, 0.0043 after" for a CIFAR-100 Brier score.
    assert apart(0.004453, 0.004312) == ["0.004453", "0.004312"]
    assert apart(0.63573, 0.63571) == ["0.63573", "0.63571"]
    assert apart(0.5, 0.5) == ["0.5", "0.5"]


def test_a_tiny_monte_carlo_error_never_prints_as_zero():
    assert with_error(0.9999955, 3e-7, 4) == "1.0000 ± 0.0000003"  # printed "± 0.00000"
    assert with_error(0.5, 4e-6, 4) == "0.5000 ± 0.000004"
    assert with_error(0.5, 0.0, 3) == "0.500 ± 0.000"


def test_metrics_record_names_conventions_and_ties(d, capsys):  # noqa: F811
    # Two copies of one system: every column ties, and no "best" is named.
    rec = ok_json(capsys, "metrics", "--labels", "y3.npy", "--scores", "a3.npy", "a3.npy", "--names", "A", "B")
    assert all(best is None for best in rec["best"].values())
    assert rec["tied_for_best"]["NEC"] == ["A", "B"] and rec["disagree_with_utility_yield"] == []
    assert "mean over the K classes" in rec["conventions"]["Brier"]
    assert "15 equal-width bins" in rec["conventions"]["ECE"]
    assert "units per sample" in rec["conventions"]["utility_yield"]
    assert "sum over the classes: 3 x this" in rec["averaging"] and "15 equal-width bins" in rec["averaging"]
    # The Brier score of the record is the mean over the classes: the sum over classes / K, by hand.
    y, p = np.load("y3.npy"), np.exp(np.load("a3.npy"))
    onehot = np.eye(3)[y]
    priors = np.bincount(y, minlength=3) / len(y)
    per_class = [np.mean(np.sum((p[y == k] - onehot[y == k]) ** 2, 1)) for k in range(3)]
    assert rec["metrics"]["Brier"]["A"] == pytest.approx(np.dot(priors, per_class) / 3, rel=1e-4)
    # The table's heading names the convention too (the JSON key stays "Brier").
    rc, out, err = run(capsys, "metrics", "--labels", "y3.npy", "--scores", "a3.npy", "a3.npy", "--names", "A", "B")
    assert rc == 0, err
    assert "Brier/K" in out.splitlines()[0].split()


def test_no_better_than_naive_allows_float32_rounding_of_nec_one():
    from ecjax._src.report import no_better_than_naive

    # NEC of the naive decisions is 1 exactly; float32 may give 1 - 1 ulp (an H100 did at 6 of 41 sweep points).
    below = np.nextafter(np.float32(1), np.float32(0))
    assert no_better_than_naive([below, 1.0, 1.5, 0.999, 0.5]).tolist() == [True, True, True, False, False]


def test_one_system_sweep_says_where_it_is_no_better_than_naive(d, capsys):  # noqa: F811
    argv = ["sweep", "--labels", "y2.npy", "--scores", "b2.npy", "--over", "cost-ratio", "--lo", "0.01", "--hi",
            "100", "--resolution", "41"]
    rec = ok_json(capsys, *argv)
    y, s = np.load("y2.npy"), np.load("b2.npy")
    priors = np.bincount(y, minlength=2) / len(y)
    grid = np.logspace(-2, 2, 41)
    nec = np.array([nec_of_bayes_decisions(y, s, np.array([[0, 1], [r, 0]]), priors) for r in grid])
    naive = np.mean(nec >= 1 - 1e-6)
    assert 0 < naive < 1  # far enough out, the naive decision wins
    assert rec["no_better_than_naive_fraction"] == pytest.approx(naive, abs=1.5 / 41)
    rc, out, err = run(capsys, *argv)
    assert rc == 0, err
    assert "best at" not in out
    assert f"NEC >= 1 (no better than the naive decision) at {100 * rec['no_better_than_naive_fraction']:5.1f} %" in out


# ------------------------------------------------------------------ figures at 100 classes and at AUC ~ 1

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # tests draw off screen; the library itself never picks a backend

from ecjax import plots  # noqa: E402


def _inside(fig, artist):
    fig.canvas.draw()
    box, page = artist.get_window_extent(), fig.bbox
    return box.x0 >= page.x0 - 0.5 and box.x1 <= page.x1 + 0.5 and box.y0 >= page.y0 - 0.5 and box.y1 <= page.y1 + 0.5


def test_yield_legend_lies_outside_the_data_and_paired_differences_are_drawn():
    rng = np.random.default_rng(0)
    shared = rng.normal(0.5, 0.05, 4000)  # paired systems: the same test-set noise in both
    yields = np.c_[shared + 0.003 + rng.normal(0, 0.002, 4000), shared]
    fig = plots.yield_posteriors(yields, names=["cifar100_repvgg_a2/scores", "cifar100_resnet/scores"])
    ax, ax_diff = fig.axes[:2]
    fig.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    assert legend.y1 <= ax.get_window_extent().y0  # below the axes, not over the winner's peak
    assert _inside(fig, ax.get_legend())
    # The differences' panel: its legend gives P(leader - other > 0) from the draws, computed here.
    text = ax_diff.get_legend().get_texts()[0].get_text()
    assert f"P(> 0) = {np.mean(yields[:, 0] - yields[:, 1] > 0):.3f}" in text
    assert np.mean(yields[:, 0] - yields[:, 1] > 0) > 0.9  # while the marginals overlap almost entirely
    assert any(line.get_xdata()[0] == 0 for line in ax_diff.get_lines())  # the zero line


def test_metric_vs_yield_keeps_long_labels_inside_the_figure(tmp_path):
    names = ["cifar100_repvgg_a2/scores", "cifar100_resnet-20/scores", "cifar100_vgg19_bn/scores"]
    fig = plots.metric_vs_yield([0.1, 0.2, 0.3], [0.7, 0.8, 0.75], metric_name="accuracy", labels=names,
                                frame=plots.Frame(path=tmp_path / "m.png"))
    ax = fig.axes[0]
    for text in ax.texts:
        assert _inside(fig, text), text.get_text()


def _binormal_roc(d, n=200):
    """Points of the ROC of two unit-variance normal classes d apart (closed form: TPR = Phi(Phi^-1(FPR) + d))."""
    from scipy.stats import norm

    fpr = np.r_[0.0, np.geomspace(1e-5, 1, n)]
    return fpr, norm.cdf(norm.ppf(np.clip(fpr, 1e-300, 1)) + d)


def test_near_perfect_roc_gets_a_log_fpr_axis_and_visible_tangents():
    from scipy.stats import norm

    fpr, tpr = _binormal_roc(6.0)  # AUC = Phi(6 / sqrt 2) = 0.99999
    assert norm.cdf(6 / np.sqrt(2)) > 0.9999
    fig = plots.roc_with_iso_utility(fpr, tpr, costs=[[0, 1], [1, 0]], priors=[0.5, 0.5])
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    tangent = next(line for line in ax.get_lines() if line.get_label().startswith("iso-utility"))
    x, y = tangent.get_xdata(), tangent.get_ydata()
    visible = np.isfinite(y) & (x >= ax.get_xlim()[0]) & (y >= ax.get_ylim()[0])
    assert visible.sum() > 10  # the line is drawn inside the axes, not flattened into a corner
    # A moderate ROC keeps the linear axis.
    f2, t2 = _binormal_roc(1.0)
    assert plots.roc_with_iso_utility(f2, t2).axes[0].get_xscale() == "linear"


def test_equal_expected_costs_are_a_tie_not_a_best():
    fpr, tpr = _binormal_roc(2.0)
    fig = plots.roc_with_iso_utility([fpr, fpr], [tpr, tpr], costs=[[0, 1], [1, 0]], priors=[0.5, 0.5],
                                     names=["a", "b"])
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert not any(label.endswith(", best)") for label in labels)
    assert sum("tied for best" in label for label in labels) == 2


def test_curves_draw_a_det_figure(d, capsys, tmp_path):  # noqa: F811
    rc, out, err = run(capsys, "metrics", "--labels", "y2.npy", "--scores", "a2.npy", "b2.npy", "--curves",
                       "--out", "figs")
    assert rc == 0, err
    assert (d / "figs" / "det.png").stat().st_size > 1000
    record = json.loads((d / "figs" / "metrics.json").read_text())
    assert any(f.endswith("det.png") for f in record["files"])


def test_det_legend_stays_off_a_near_perfect_curve():
    fpr, tpr = _binormal_roc(5.0)
    fig = plots.roc_with_iso_utility(fpr, tpr, costs=[[0, 1], [10, 0]], priors=[0.99, 0.01], det=True)
    ax = fig.axes[0]
    fig.canvas.draw()
    box = ax.get_legend().get_window_extent()
    curve = ax.get_lines()[1]  # the system's curve (the first line is chance)
    xy = ax.transData.transform(np.c_[curve.get_xdata(), curve.get_ydata()])
    shown = np.all(np.isfinite(xy), 1) & (curve.get_xdata() >= ax.get_xlim()[0]) & (
        curve.get_ydata() >= ax.get_ylim()[0])
    inside = (xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)
    assert shown.sum() > 10 and not np.any(inside & shown)
