"""`--sample-weight` on the command line (`metrics`, `calibrate`, `compare`): frequency weights, so a run with
integer weights must print what a run on the samples repeated that many times prints (computed without weights),
and zero weights what a run without those samples prints."""
import json
import re

import numpy as np
import pytest
from sklearn.metrics import log_loss

from ecjax import cli


def _run(capsys, *args):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _log_softmax(x):
    return x - np.logaddexp.reduce(x, axis=-1, keepdims=True)


@pytest.fixture()
def files(tmp_path, monkeypatch):
    """Two binary and two 3-class systems on 300 samples, their integer weights (0 to 3), and the same data with
    every sample repeated as many times as its weight."""
    rng = np.random.default_rng(7)
    n = 300
    w = rng.integers(0, 4, n).astype(float)
    rep = np.repeat(np.arange(n), w.astype(int))
    for k in (2, 3):
        y = rng.integers(0, k, n)
        for name, shift in (("a", 1.5), ("b", 0.8)):
            s = _log_softmax(rng.normal(size=(n, k)) + shift * np.eye(k)[y] + 0.3)
            np.save(tmp_path / f"{name}{k}.npy", s)
            np.save(tmp_path / f"{name}{k}_rep.npy", s[rep])
        np.save(tmp_path / f"y{k}.npy", y)
        np.save(tmp_path / f"y{k}_rep.npy", y[rep])
    np.save(tmp_path / "w.npy", w)
    monkeypatch.chdir(tmp_path)
    return w, rep


def _close(a, b, path=""):
    """Every number of two JSON values equal to float32 rounding."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            _close(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=2e-5, atol=1e-6, err_msg=path)
    elif isinstance(a, float):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6, err_msg=path)
    else:
        assert a == b, path


# Binary (k = 2, about 18 s: every metric and its table) runs in the slow lane; three classes stay in the default one.
@pytest.mark.parametrize("k", [pytest.param(2, marks=pytest.mark.slow), 3])
def test_metrics_with_integer_weights_equal_metrics_of_repeated_samples(files, capsys, k):
    extra = ["--metric-thresholds"] if k == 2 else []
    weighted = _run(capsys, "metrics", "--labels", f"y{k}.npy", "--scores", f"a{k}.npy", f"b{k}.npy", "--names",
                    "a", "b", "--sample-weight", "w.npy", "--curves", *extra, "--json")
    repeated = _run(capsys, "metrics", "--labels", f"y{k}_rep.npy", "--scores", f"a{k}_rep.npy", f"b{k}_rep.npy",
                    "--names", "a", "b", "--curves", *extra, "--json")
    assert weighted[0] == 0 and repeated[0] == 0, (weighted[2], repeated[2])
    rec_w, rec_r = json.loads(weighted[1]), json.loads(repeated[1])
    assert rec_w["sample_weight"] == ["w.npy"]
    # The calibrated implied costs come from 5 random folds, which split repeated copies of a sample but keep a
    # weighted sample whole: not the same data per fold, so they are left out of this comparison.
    for rec in (rec_w, rec_r):
        for rows in rec.get("metric_thresholds", {}).values():
            for row in rows.values():
                row.pop("calibrated")
    for key in ("metrics", "best", "lose_to_argmax", "optimal_threshold", "metric_thresholds"):
        _close(rec_w.get(key), rec_r.get(key), key)
    if k == 2:
        for name in ("a", "b"):
            _close(rec_w["curves"][name]["average_precision"], rec_r["curves"][name]["average_precision"])
            _close(rec_w["curves"][name]["decision_curve"], rec_r["curves"][name]["decision_curve"])
    else:
        _close(rec_w["curves"], rec_r["curves"])
    # And one column against scikit-learn's own weighted log-loss.
    y, s = np.load(f"y{k}.npy"), np.load(f"a{k}.npy")
    w = np.load("w.npy")
    np.testing.assert_allclose(rec_w["metrics"]["XE"]["a"], log_loss(y, np.exp(s), sample_weight=w), rtol=1e-5)


def test_zero_weights_equal_dropping_the_samples(files, capsys, tmp_path):
    w, _ = files
    keep = w > 0
    np.save(tmp_path / "keep.npy", keep.astype(float))
    np.save(tmp_path / "y2_kept.npy", np.load("y2.npy")[keep])
    np.save(tmp_path / "a2_kept.npy", np.load("a2.npy")[keep])
    weighted = _run(capsys, "metrics", "--labels", "y2.npy", "--scores", "a2.npy", "--sample-weight", "keep.npy",
                    "--names", "a", "--json")
    dropped = _run(capsys, "metrics", "--labels", "y2_kept.npy", "--scores", "a2_kept.npy", "--names", "a", "--json")
    assert weighted[0] == 0 and dropped[0] == 0
    _close(json.loads(weighted[1])["metrics"], json.loads(dropped[1])["metrics"])


def test_bootstrap_estimate_is_the_weighted_metric(files, capsys):
    code, out, err = _run(capsys, "metrics", "--labels", "y2.npy", "--scores", "a2.npy", "b2.npy", "--names", "a",
                          "b", "--sample-weight", "w.npy", "--bootstrap", "cross_entropy", "--bootstrap-draws", "400",
                          "--json")
    assert code == 0, err
    est = json.loads(out)["bootstrap"]["estimate"]
    y, w = np.load("y2.npy"), np.load("w.npy")
    for name in ("a", "b"):
        np.testing.assert_allclose(est[name], log_loss(y, np.exp(np.load(f"{name}2.npy")), sample_weight=w),
                                   rtol=1e-5)


def test_calibrate_with_integer_weights_equals_calibrating_repeated_samples(files, capsys):
    _, rep = files
    common = ["--method", "affine", "--calibration-errors", "--json"]
    weighted = _run(capsys, "calibrate", "--scores", "a3.npy", "--labels", "y3.npy", "--sample-weight", "w.npy",
                    "--output", "cal_w.npy", *common)
    repeated = _run(capsys, "calibrate", "--scores", "a3_rep.npy", "--labels", "y3_rep.npy", "--output",
                    "cal_r.npy", *common)
    assert weighted[0] == 0 and repeated[0] == 0, (weighted[2], repeated[2])
    rec_w, rec_r = json.loads(weighted[1]), json.loads(repeated[1])
    for key in ("cross_entropy", "brier", "calibration_errors"):
        _close(rec_w[key], rec_r[key], key)
    # The same affine map (to the optimizer's tolerance): the calibrated scores of the kept samples agree.
    np.testing.assert_allclose(np.load("cal_w.npy")[rep], np.load("cal_r.npy"), atol=2e-4)


@pytest.mark.parametrize("args, message", [
    (["metrics", "--labels", "y2.npy", "--scores", "a2.npy", "--sample-weight", "short.npy"],
     "--sample-weight short.npy: one weight per sample of y2.npy"),
    (["metrics", "--labels", "y2.npy", "--scores", "a2.npy", "--sample-weight", "negative.npy"],
     "--sample-weight negative.npy: .*non-negative"),
    (["metrics", "--labels", "y2.npy", "--scores", "a2.npy", "--sample-weight", "zeros.npy"],
     "--sample-weight zeros.npy: `sample_weight` is 0 for every sample"),
    (["metrics", "--labels", "y2.npy", "y2.npy", "--scores", "a2.npy", "b2.npy", "--sample-weight", "w.npy",
      "w.npy", "w.npy"], "--sample-weight: give one file per --labels file"),
    (["calibrate", "--scores", "a2.npy", "--labels", "y2.npy", "--train-sample-weight", "w.npy", "--output",
      "o.npy"], "--train-sample-weight: weighs the samples of --train-scores"),
    (["calibrate", "--scores", "a2.npy", "--train-scores", "a2.npy", "--train-labels", "y2.npy",
      "--sample-weight", "w.npy", "--output", "o.npy"], "--sample-weight: weighs the samples of --scores"),
])
def test_bad_weight_files_are_refused_by_name(files, capsys, tmp_path, args, message):
    np.save(tmp_path / "short.npy", np.ones(10))
    np.save(tmp_path / "negative.npy", -np.ones(300))
    np.save(tmp_path / "zeros.npy", np.zeros(300))
    code, out, err = _run(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("ecjax ") and re.search(message, err), err


def test_compare_with_integer_weights_equals_compare_of_repeated_samples(files, capsys, tmp_path):
    # Paired decisions: the joint-outcome Dirichlet sees weighted counts, so the same key gives the same draws as
    # the repeated samples (frequency weights, prob.compare's sample_weight).
    (tmp_path / "costs.toml").write_text('classes = ["0", "1"]\ncosts = [[0, 1], [4, 0]]\n')
    for name in ("a2", "b2"):
        np.save(tmp_path / f"{name}_dec.npy", np.argmax(np.load(f"{name}.npy"), -1))
        np.save(tmp_path / f"{name}_rep_dec.npy", np.argmax(np.load(f"{name}_rep.npy"), -1))
    common = ["--names", "a", "b", "--costs", "costs.toml", "--draws", "2000", "--json"]
    weighted = _run(capsys, "compare", "--labels", "y2.npy", "--decisions", "a2_dec.npy", "b2_dec.npy",
                    "--sample-weight", "w.npy", *common)
    repeated = _run(capsys, "compare", "--labels", "y2_rep.npy", "--decisions", "a2_rep_dec.npy", "b2_rep_dec.npy",
                    *common)
    assert weighted[0] == 0 and repeated[0] == 0, (weighted[2], repeated[2])
    rec_w, rec_r = json.loads(weighted[1]), json.loads(repeated[1])
    assert rec_w["paired"] and rec_w["sample_weight"] == ["w.npy"]
    for key in ("expected_yield", "p_best", "hdi", "recommendation"):
        _close(rec_w[key], rec_r[key], key)
