"""`ecjax sweep` and `ecjax calibrate` at the command line, run in-process.

Every number is checked against a computation written here in numpy/scipy/scikit-learn: Bayes decisions and
NEC per swept point, who wins on each stretch of cost ratios, affine calibrators fitted by scipy per fold, and
cross-entropies from ``sklearn.metrics.log_loss``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import log_softmax
from sklearn.metrics import log_loss
from test_calibration_cv import scipy_affine  # the scipy-fitted affine calibrator of the library's tests

from ecjax import cli


def probs(log_post):
    """Probabilities for scikit-learn, whose check that rows sum to 1 is tighter than float rounding."""
    p = np.exp(log_post)
    return p / p.sum(1, keepdims=True)


def run(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def ok_json(capsys, *argv):
    rc, out, err = run(capsys, *argv, "--json")
    assert rc == 0, err
    return json.loads(out)


def refused(capsys, name, *argv):
    rc, out, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert rc == 2, (rc, out, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert name in err, err
    return err


def nec_of_bayes_decisions(labels, log_post, costs, priors):
    """NEC of ``argmin_j sum_i c_ij P(i|x)`` with the EC weighted by ``priors``: plain numpy."""
    d = np.argmin(np.exp(log_post) @ costs, axis=1)
    k = costs.shape[0]
    ec = sum(priors[i] * np.mean(costs[i, d[labels == i]]) for i in range(k))
    return ec / np.min(priors @ costs)


@pytest.fixture()
def d(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    n = 240
    y3 = rng.integers(0, 3, n)
    # Two 3-class systems with different strengths: A separates class 2 well, B classes 0 and 1.
    a = log_softmax(np.array([1.0, 1.0, 3.0])[y3, None] * np.eye(3)[y3] + rng.normal(size=(n, 3)), axis=1)
    b = log_softmax(np.array([2.5, 2.5, 0.5])[y3, None] * np.eye(3)[y3] + rng.normal(size=(n, 3)), axis=1)
    np.save("y3.npy", y3), np.save("a3.npy", a), np.save("b3.npy", b)
    y2 = rng.integers(0, 2, 300)
    # A: sharp but biased towards class 1; B: less sharp, unbiased. Their order flips with the cost ratio.
    llr_a = 3.0 * (y2 - 0.5) + 0.8 * rng.normal(size=300) + 1.0
    llr_b = 1.5 * (y2 - 0.5) + rng.normal(size=300)
    for name, llr in (("a2", llr_a), ("b2", llr_b)):
        np.save(f"{name}.npy", np.stack([-np.logaddexp(0, llr), -np.logaddexp(0, -llr)], 1))
    np.save("y2.npy", y2)
    return tmp_path


# =================================================================== sweep

def test_default_sweep_of_three_classes_draws_cost_matrices_and_its_values_are_bayes_necs(d, capsys):
    rec = ok_json(capsys, "sweep", "--labels", "y3.npy", "--scores", "a3.npy", "b3.npy", "--names", "A", "B",
                  "--resolution", "60", "--out", "fig")
    assert rec["over"] == "matrices"
    y, scores = np.load("y3.npy"), [np.load("a3.npy"), np.load("b3.npy")]
    mats = np.array(rec["cost_matrices"])
    assert mats.shape == (60, 3, 3)
    # Without an [uncertainty] table each cost lies between 0 and twice its 0-1 value.
    assert np.all(np.diagonal(mats, axis1=1, axis2=2) == 0)
    off = mats[:, ~np.eye(3, dtype=bool)]
    assert off.min() >= 0 and off.max() <= 2 and off.max() > 1.5 and off.min() < 0.5
    priors = np.bincount(y, minlength=3) / len(y)
    np.testing.assert_allclose(rec["priors"]["A"], priors)
    ref = np.array([[nec_of_bayes_decisions(y, s, c, priors) for s in scores] for c in mats])
    np.testing.assert_allclose(np.c_[rec["values"]["A"], rec["values"]["B"]], ref, rtol=1e-4)
    best = np.where(np.isclose(ref[:, 0], ref[:, 1], rtol=1e-6), "tie", np.where(ref[:, 0] < ref[:, 1], "A", "B"))
    assert rec["winners"] == best.tolist()
    assert rec["win_fraction"]["A"] == pytest.approx(np.mean(best == "A"))
    assert 0 < rec["win_fraction"]["A"] < 1  # a sweep where both systems win somewhere
    assert (d / "fig" / "sweep_matrices.png").stat().st_size > 1000


def test_matrix_sweep_draws_within_the_uncertainty_table(d, capsys):
    (d / "u.toml").write_text('costs = [[0, 1, 2], [1, 0, 1], [4, 1, 0]]\n[uncertainty]\n'
                              'low = [[0, 0.5, 1], [1, 0, 1], [2, 0.5, 0]]\nhigh = [[0, 2, 3], [1, 0, 1], [8, 3, 0]]\n')
    rec = ok_json(capsys, "sweep", "--labels", "y3.npy", "--scores", "a3.npy", "b3.npy", "--costs", "u.toml",
                  "--resolution", "40", "--seed", "7")
    mats = np.array(rec["cost_matrices"])
    low = np.array([[0, 0.5, 1], [1, 0, 1], [2, 0.5, 0]])
    high = np.array([[0, 2, 3], [1, 0, 1], [8, 3, 0]])
    assert np.all(mats >= low - 1e-6) and np.all(mats <= high + 1e-6)
    assert np.all(np.ptp(mats, axis=0)[high > low] > 0)  # the uncertain entries really vary


def test_binary_cost_ratio_sweep_says_who_wins_where_with_priors_and_grid(d, capsys):
    (d / "p.toml").write_text('classes = ["neg", "pos"]\ncosts = [[0, 1], [1, 0]]\npriors = [0.7, 0.3]\n')
    argv = ["sweep", "--labels", "y2.npy", "--scores", "a2.npy", "b2.npy", "--names", "A", "B", "--over",
            "cost-ratio", "--lo", "0.05", "--hi", "20", "--resolution", "81", "--costs", "p.toml"]
    rec = ok_json(capsys, *argv)
    grid = np.logspace(np.log10(0.05), np.log10(20), 81)
    np.testing.assert_allclose(rec["grid"]["values"], grid, rtol=1e-6)
    assert rec["grid"]["num_points"] == 81 and rec["priors"]["A"] == [0.7, 0.3]
    y = np.load("y2.npy")
    ref = np.array([[nec_of_bayes_decisions(y, np.load(f), np.array([[0, 1], [r, 0]]), np.array([0.7, 0.3]))
                     for f in ("a2.npy", "b2.npy")] for r in grid])
    np.testing.assert_allclose(np.c_[rec["values"]["A"], rec["values"]["B"]], ref, rtol=1e-4)
    # Who wins on each run of consecutive grid points, from the reference values.
    best = np.where(np.isclose(ref[:, 0], ref[:, 1], rtol=1e-6), "tie", np.where(ref[:, 0] < ref[:, 1], "A", "B"))
    starts = np.flatnonzero(np.r_[True, best[1:] != best[:-1]])
    ends = np.r_[starts[1:] - 1, len(best) - 1]
    runs = [(grid[a], grid[b], best[a]) for a, b in zip(starts, ends)]
    assert len({w for *_, w in runs} - {"tie"}) == 2  # both systems win somewhere
    got = rec["winner_intervals"]
    assert [g["winner"] for g in got] == [w for *_, w in runs]
    np.testing.assert_allclose([[g["from"], g["to"]] for g in got], [[a, b] for a, b, _ in runs], rtol=1e-6)
    rc, out, err = run(capsys, *argv)
    assert rc == 0, err
    assert "81 values of r from 0.05 to 20" in out and "neg: 0.7, pos: 0.3" in out and "p.toml" in out
    for a, b, w in runs:
        assert f"r from {a:.4g} to {b:.4g}: {w}" in out


def test_binary_decisions_still_default_to_the_utility_space(d, capsys):
    y = np.load("y2.npy")
    np.save("da.npy", (np.load("a2.npy")[:, 1] > np.log(0.5)).astype(int))
    np.save("db.npy", y)
    rec = ok_json(capsys, "sweep", "--labels", "y2.npy", "--decisions", "da.npy", "db.npy", "--resolution", "21")
    assert rec["over"] == "utility-space" and rec["resolution"] == 21
    # The perfect system loses only where errors are worth more than correct decisions.
    assert rec["win_fraction"]["db"] > 0.5 > rec["win_fraction"]["da"]


@pytest.mark.parametrize("over", ["utility-space", "cost-ratio"])
def test_binary_sweeps_of_three_classes_say_what_to_pass(d, capsys, over):
    err = refused(capsys, "--over", "sweep", "--labels", "y3.npy", "--scores", "a3.npy", "--over", over)
    assert "--over matrices" in err


def test_winner_runs_need_a_one_dimensional_sweep_with_its_values():
    from ecjax import InputError
    from ecjax.sweep import SweepSettings, grids, sweep_counts

    counts = np.array([[[40, 10], [5, 45]], [[48, 2], [20, 30]]])
    res = sweep_counts(counts, grids.cost_ratios(0.1, 10, 5), normalize=True,
                       settings=SweepSettings(return_values=False))
    with pytest.raises(InputError, match="return_values=True"):
        res.winner_runs()
    res = sweep_counts(counts, grids.cost_ratios(0.1, 10, 5), priors=grids.effective_priors(0.2, 0.8, 3))
    with pytest.raises(InputError, match="one-dimensional"):
        res.winner_runs()


def test_sweep_help_shows_the_defaults(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["sweep", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: auto)" in out and "(default: 101, 101, 1000)" in out and "(default 0)" in out


# =============================================================== calibrate

def test_cross_validated_calibration_with_groups(d, capsys):
    rng = np.random.default_rng(4)
    y = np.load("y3.npy")
    groups = rng.integers(0, 30, len(y))  # 30 speakers, say
    np.save("g.npy", groups)
    logits = 3.0 * np.load("a3.npy")  # overconfident
    np.save("over.npy", logits)
    rec = ok_json(capsys, "calibrate", "--scores", "over.npy", "--labels", "y3.npy", "--score-type", "logits",
                  "--cv", "4", "--groups", "g.npy", "--seed", "2", "--output", "cal.npy", "--out", "rep")
    assert rec["protocol"] == "cross_validation"
    folds = np.array(rec["folds"]["fold_of_sample"])
    out = np.load("cal.npy")
    lp = log_softmax(logits, axis=1)
    for f in range(4):
        test = folds == f
        assert test.any() and not set(groups[test]) & set(groups[~test])
        np.testing.assert_allclose(np.exp(out[test]), np.exp(scipy_affine(lp[~test], y[~test])(lp[test])), atol=2e-3)
    before, after = log_loss(y, probs(lp), labels=[0, 1, 2]), log_loss(y, probs(out), labels=[0, 1, 2])
    assert rec["cross_entropy"]["before"] == pytest.approx(before, rel=1e-5)
    assert rec["cross_entropy"]["after"] == pytest.approx(after, rel=1e-5)
    assert rec["cross_entropy"]["loss"] == pytest.approx(before - after, rel=1e-4)
    assert rec["relative_calibration_loss_percent"]["xe"] == pytest.approx(100 * (before - after) / before, rel=1e-4)
    brier = np.mean((np.exp(out) - np.eye(3)[y]) ** 2)  # the mean over classes and samples
    assert rec["brier"]["after"] == pytest.approx(brier, rel=1e-4)
    for side in ("before", "after"):
        assert (d / "rep" / f"reliability_{side}.png").stat().st_size > 1000


def test_cross_validated_llr_calibration_reports_cross_entropy_with_the_data_priors(d, capsys):
    y = np.load("y2.npy")
    a = np.load("a2.npy")
    np.save("llr.npy", 2.0 * (a[:, 1] - a[:, 0]))
    rec = ok_json(capsys, "calibrate", "--scores", "llr.npy", "--labels", "y2.npy", "--score-type", "llr",
                  "--cv", "3", "--output", "cal.npy")
    p1 = np.mean(y == 1)
    # Posterior log-odds = LLR + log prior odds; cross-entropy per class, weighted by the priors (= the plain mean).
    for side, llr in (("before", np.load("llr.npy")), ("after", np.load("cal.npy"))):
        post1 = 1 / (1 + np.exp(-(llr + np.log(p1 / (1 - p1)))))
        assert rec["cross_entropy"][side] == pytest.approx(log_loss(y, post1), rel=1e-5)
    assert rec["cross_entropy"]["after"] < rec["cross_entropy"]["before"]


def test_calibrating_on_the_scores_themselves_is_called_in_sample(d, capsys):
    y = np.load("y3.npy")
    lp = log_softmax(3.0 * np.load("b3.npy"), axis=1)
    np.save("s.npy", lp)
    rc, out, err = run(capsys, "calibrate", "--scores", "s.npy", "--labels", "y3.npy", "--output", "cal.npy")
    assert rc == 0, err
    assert "IN-SAMPLE" in out and "held-out" not in out
    np.testing.assert_allclose(np.exp(np.load("cal.npy")), np.exp(scipy_affine(lp, y)(lp)), atol=2e-3)
    # The same file given as training and test data is in-sample too, not held-out.
    rec = ok_json(capsys, "calibrate", "--train-scores", "s.npy", "--train-labels", "y3.npy", "--scores", "s.npy",
                  "--labels", "y3.npy", "--output", "cal2.npy")
    assert rec["protocol"] == "in_sample"
    assert rec["cross_entropy"]["after"] == pytest.approx(log_loss(y, probs(np.load("cal2.npy"))), rel=1e-5)
    np.save("s_copy.npy", lp)
    rec = ok_json(capsys, "calibrate", "--train-scores", "s_copy.npy", "--train-labels", "y3.npy",
                  "--scores", "s.npy", "--labels", "y3.npy", "--output", "cal3.npy")
    assert rec["protocol"] == "in_sample"


def test_a_separate_training_file_is_held_out(d, capsys):
    lp = log_softmax(3.0 * np.load("b3.npy"), axis=1)
    y = np.load("y3.npy")
    np.save("tr.npy", lp[:160]), np.save("ytr.npy", y[:160]), np.save("te.npy", lp[160:]), np.save("yte.npy", y[160:])
    rc, out, err = run(capsys, "calibrate", "--train-scores", "tr.npy", "--train-labels", "ytr.npy",
                       "--scores", "te.npy", "--labels", "yte.npy", "--output", "cal.npy")
    assert rc == 0, err
    assert "held-out" in out and "IN-SAMPLE" not in out
    np.testing.assert_allclose(np.exp(np.load("cal.npy")), np.exp(scipy_affine(lp[:160], y[:160])(lp[160:])),
                               atol=2e-3)


@pytest.mark.parametrize("extra, name", [
    (["--cv", "3", "--train-scores", "s.npy", "--train-labels", "y3.npy", "--labels", "y3.npy"], "--train-scores"),
    (["--cv", "3"], "--labels"),
    (["--labels", "y3.npy", "--groups", "g.npy"], "--groups"),
    (["--labels", "y3.npy", "--cv", "3", "--groups", "g_short.npy"], "g_short.npy"),
    (["--labels", "y3.npy", "--cv", "3", "--groups", "g_nan.npy"], "g_nan.npy"),
    (["--labels", "y3.npy", "--cv", "5", "--groups", "g2.npy"], "--cv"),
    (["--labels", "y3.npy", "--cv", "500"], "--cv"),
    ([], "--train-scores"),
    (["--train-scores", "s.npy"], "--train-labels"),
])
def test_calibrate_mistakes_exit_2_naming_the_option_and_write_nothing(d, capsys, extra, name):
    np.save("s.npy", np.load("a3.npy"))
    np.save("g.npy", np.arange(240) % 20)
    np.save("g_short.npy", np.arange(10))
    np.save("g_nan.npy", np.r_[np.arange(239.0), np.nan])
    np.save("g2.npy", np.arange(240) % 2)  # two groups for five folds
    refused(capsys, name, "calibrate", "--scores", "s.npy", "--output", "o.npy", "--out", "rep", *extra)
    assert not (d / "o.npy").exists() and not (d / "rep").exists()
