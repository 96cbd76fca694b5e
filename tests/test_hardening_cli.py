"""Hardening, the command line: the user's mistakes exit 2 with one line naming the file or option.

Run in-process through ``ecjax.cli.main`` (fast); signals need a subprocess.
Every refusal also checks that nothing was written.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest

from ecjax import cli
from ecjax.inputs import InputError

N = 120


@pytest.fixture()
def d(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(N // 2, int), np.ones(N // 2, int)]
    llr = 2.0 * (y - 0.5) + rng.normal(size=N)
    lp = np.stack([-np.logaddexp(0, llr), -np.logaddexp(0, -llr)], 1)
    np.save("y.npy", y)
    np.save("a.npy", lp)
    np.save("b.npy", lp[:, ::-1].copy())
    np.save("dec.npy", (llr > 0).astype(int))
    np.save("dec2.npy", (llr > 0.5).astype(int))
    (tmp_path / "c.toml").write_text('classes = ["neg", "pos"]\ncosts = [[0, 1], [4, 0]]\n')
    (tmp_path / "u.toml").write_text('costs = [[0, 1], [4, 0]]\n[uncertainty]\nlow = [[0, 1], [2, 0]]\n'
                                     'high = [[0, 1], [8, 0]]\n')
    return tmp_path


def run(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def refused(capsys, name, *argv):
    """Exit 2, one line on stderr, naming ``name`` (a file or an option), no traceback."""
    rc, out, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert rc == 2, (rc, out, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(name) in err, err
    return err


def files_in(folder):
    return sorted(p.name for p in folder.iterdir())


# ======================================================================= options

@pytest.mark.parametrize("argv, name", [
    (["compare", "--labels", "y.npy", "--decisions", "dec.npy", "--costs", "u.toml", "--seed", str(2**70)], "--seed"),
    (["compare", "--labels", "y.npy", "--decisions", "dec.npy", "--costs", "u.toml", "--seed", "-1"], "--seed"),
    (["compare", "--labels", "y.npy", "--decisions", "dec.npy", "--costs", "u.toml", "--seed", str(2**32)], "--seed"),
    (["sweep", "--labels", "y.npy", "--decisions", "dec.npy", "--seed", str(2**70)], "--seed"),
    (["demo", "--seed", str(2**64)], "--seed"),
    (["compare", "--labels", "y.npy", "--decisions", "dec.npy", "--costs", "u.toml", "--draws", "1e12"], "--draws"),
    (["compare", "--labels", "y.npy", "--decisions", "dec.npy", "--costs", "u.toml", "--draws", "0"], "--draws"),
    (["compare", "--labels", "y.npy", "--decisions", "dec.npy", "--costs", "u.toml", "--draws", "2.5"], "--draws"),
    (["compare", "--labels", "y.npy", "--decisions", "dec.npy", "--costs", "u.toml", "--draws", "many"], "--draws"),
    (["compare", "--labels", "y.npy", "--decisions", "dec.npy", "--costs", "u.toml", "--rope", "-1"], "--rope"),
    (["compare", "--labels", "y.npy", "--decisions", "dec.npy", "--costs", "u.toml", "--rope", "nan"], "--rope"),
    (["sweep", "--labels", "y.npy", "--decisions", "dec.npy", "--resolution", "0"], "--resolution"),
    (["sweep", "--labels", "y.npy", "--decisions", "dec.npy", "--resolution", str(10**9)], "--resolution"),
    (["sweep", "--labels", "y.npy", "--decisions", "dec.npy", "--resolution", "50000"], "--resolution"),
    (["sweep", "--labels", "y.npy", "--decisions", "dec.npy", "--over", "cost-ratio", "--lo", "nan"], "--lo"),
    (["sweep", "--labels", "y.npy", "--decisions", "dec.npy", "--over", "cost-ratio", "--hi", "-3"], "--hi"),
    (["metrics", "--labels", "y.npy", "--decisions", "dec.npy", "--pos-label", "5"], "--pos-label"),
    (["metrics", "--labels", "y.npy", "--decisions", "dec.npy", "--pos-label", "-1"], "--pos-label"),
    (["metrics", "--labels", "y.npy", "--decisions", "dec.npy", "--max-input-mb", "0"], "--max-input-mb"),
    (["metrics", "--labels", "y.npy", "--decisions", "dec.npy", "--bogus"], "--bogus"),
    (["metrics", "--labels", "y.npy"], "--scores"),
    (["metrics", "--labels", "y.npy", "--decisions", "dec.npy", "--names", "x" * 300], "--names"),
    (["metrics", "--labels", "y.npy", "--decisions", "dec.npy", "dec2.npy", "--names", "A", "A"], "--names"),
    (["metrics", "--labels", "y.npy", "--decisions", "dec.npy", "dec2.npy", "--names", "A"], "--names"),
    (["compare", "--labels", "y.npy", "--decisions", "dec.npy"], "--costs"),
    (["metrics", "--labels", "y.npy", "--scores", "a.npy", "--score-type", "probabilities"], "--score-type"),
])
def test_bad_options(d, capsys, argv, name):
    refused(capsys, name, *argv)
    assert files_in(d) == sorted(["y.npy", "a.npy", "b.npy", "dec.npy", "dec2.npy", "c.toml", "u.toml"])


# ====================================================================== input files

def test_label_past_int32(d, capsys):
    np.save("big.npy", np.r_[np.zeros(N - 1, np.int64), 2**32])  # aborted the interpreter (SIGABRT)
    refused(capsys, "big.npy", "metrics", "--labels", "big.npy", "--decisions", "dec.npy")


def test_single_label_20000_bounds_k(d, capsys):
    np.save("y20k.npy", np.r_[np.zeros(N - 1, np.int64), 20000])  # built 20001 x 20001 matrices
    t = time.perf_counter()
    err = refused(capsys, "y20k.npy", "metrics", "--labels", "y20k.npy", "--decisions", "dec.npy")
    assert time.perf_counter() - t < 20
    # The way out is said by the command line's option, not the library's argument (InputError's template).
    assert "--costs (a file that names them)" in err and "num_classes" not in err, err


def test_decision_20000_bounds_k(d, capsys):
    np.save("d20k.npy", np.r_[np.zeros(N - 1, np.int64), 20000])
    refused(capsys, "d20k.npy", "metrics", "--labels", "y.npy", "--decisions", "d20k.npy")


@pytest.mark.parametrize("labels, name", [
    (np.r_[np.zeros(N - 1, int), -1], ">= 0"),
    (np.r_[np.zeros(N - 1), 0.5], "integers"),
    (np.r_[np.zeros(N - 1), np.nan], "NaN"),
    (np.zeros((N, 2), int), "vector"),
])
def test_bad_label_files_named(d, capsys, labels, name):
    np.save("bad.npy", labels)
    err = refused(capsys, "bad.npy", "metrics", "--labels", "bad.npy", "--decisions", "dec.npy")
    assert name in err


@pytest.mark.parametrize("decisions, text", [
    (np.r_[np.zeros(N - 1), 0.5], "integers"),
    (np.r_[np.zeros(N - 1, int), -3], ">= 0"),
    (np.r_[np.zeros(N - 1, int), 2**40], "2**31"),
    (np.r_[np.zeros(N - 1), np.inf], "NaN or inf"),
])
def test_bad_decision_files_named(d, capsys, decisions, text):
    np.save("bad.npy", decisions)
    err = refused(capsys, "bad.npy", "metrics", "--labels", "y.npy", "--decisions", "bad.npy")
    assert text in err


def test_decision_out_of_range_for_costs(d, capsys):
    np.save("d3.npy", np.r_[np.zeros(N - 1, int), 2])
    refused(capsys, "d3.npy", "metrics", "--labels", "y.npy", "--decisions", "d3.npy", "--costs", "c.toml")


def test_single_class_labels_named(d, capsys):
    np.save("ones.npy", np.ones(N, int))
    err = refused(capsys, "ones.npy", "metrics", "--labels", "ones.npy", "--scores", "a.npy")
    assert "NEC" in err


def test_single_class_labels_in_a_cost_ratio_sweep_named(d, capsys):
    np.save("ones.npy", np.ones(N, int))
    refused(capsys, "ones.npy", "sweep", "--labels", "ones.npy", "--decisions", "dec.npy", "--over", "cost-ratio")


def test_zero_uncertainty_intervals_in_a_matrix_sweep_named(d, capsys):
    (d / "zu.toml").write_text("costs = [[0, 0], [0, 0]]\n[uncertainty]\nlow = [[0, 0], [0, 0]]\n"
                               "high = [[0, 0], [0, 0]]\n")
    refused(capsys, "zu.toml", "sweep", "--labels", "y.npy", "--decisions", "dec.npy", "--over", "matrices",
            "--costs", "zu.toml")


def test_calibrate_single_class_training_labels_named(d, capsys):
    np.save("ones.npy", np.ones(N, int))
    refused(capsys, "ones.npy", "calibrate", "--train-scores", "a.npy", "--train-labels", "ones.npy",
            "--scores", "b.npy", "--output", "o.npy")
    assert not (d / "o.npy").exists()


def test_all_zero_costs_named(d, capsys):
    (d / "z.toml").write_text("costs = [[0, 0], [0, 0]]\n")
    refused(capsys, "z.toml", "metrics", "--labels", "y.npy", "--scores", "a.npy", "--costs", "z.toml")


def test_prior_on_a_class_without_samples_named(d, capsys):
    np.save("zeros.npy", np.zeros(N, int))
    (d / "p.toml").write_text("costs = [[0, 1], [1, 0]]\npriors = [0.5, 0.5]\n")
    refused(capsys, "zeros.npy", "metrics", "--labels", "zeros.npy", "--decisions", "dec.npy", "--costs", "p.toml")


@pytest.mark.parametrize("text, name", [
    (b'costs = [[0, "1"], [4, 0]]\n', "`costs`"),
    (b"costs = [[0, 1], [true, 0]]\n", "`costs`"),
    (b"costs = [[0, 1], [1" + b"0" * 400 + b", 0]]\n", "`costs`"),
    (b'costs = [[0, 1], [4, 0]]\nname = "\xff"\n', "UTF-8"),
    (b"costs = [[0, 1], [4, 0]\n", "syntax"),
    (b'costs = [[0, 1], [4, 0]]\npriors = ["0.5", "0.5"]\n', "`priors`"),
])
def test_bad_cost_files_named(d, capsys, text, name):
    (d / "bad.toml").write_bytes(text)
    err = refused(capsys, "bad.toml", "metrics", "--labels", "y.npy", "--decisions", "dec.npy", "--costs", "bad.toml")
    assert name in err


def test_npz_bomb_named_with_the_flag(d, capsys):
    header = {"descr": "<i8", "fortran_order": False, "shape": (200_000_000,)}
    text = repr(header).encode()
    text += b" " * (64 - (10 + len(text) + 1) % 64) + b"\n"
    with zipfile.ZipFile("bomb.npz", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("y.npy", b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + b"\0" * 1000)
    err = refused(capsys, "bomb.npz", "metrics", "--labels", "bomb.npz", "--decisions", "dec.npy")
    assert "--max-input-mb" in err


def test_max_input_mb_raises_the_limit(d, capsys):
    big = np.zeros(300_000, np.int64)  # 2.3 MiB declared, a few KB compressed
    big[1::2] = 1
    np.savez_compressed("yz.npz", y=big)
    np.save("dz.npy", big)
    refused(capsys, "yz.npz", "metrics", "--labels", "yz.npz", "--decisions", "dz.npy", "--max-input-mb", "1")
    rc, _, err = run(capsys, "metrics", "--labels", "yz.npz", "--decisions", "dz.npy", "--max-input-mb", "3")
    assert rc == 0, err


def test_scores_of_different_widths(d, capsys):
    np.save("three.npy", np.log(np.full((N, 3), 1 / 3)))
    refused(capsys, "--scores", "metrics", "--labels", "y.npy", "--scores", "a.npy", "three.npy")


def test_one_column_scores(d, capsys):
    np.save("one.npy", np.zeros((N, 1)))
    refused(capsys, "one.npy", "metrics", "--labels", "y.npy", "--scores", "one.npy")


def test_calibrate_train_label_out_of_range(d, capsys):
    np.save("y5.npy", np.r_[np.zeros(N - 1, int), 5])
    refused(capsys, "y5.npy", "calibrate", "--train-scores", "a.npy", "--train-labels", "y5.npy",
            "--scores", "b.npy", "--output", "o.npy")
    assert not (d / "o.npy").exists()


def test_long_file_stem_needs_names(d, capsys):
    long = "s" * 150 + ".npy"
    np.save(long, np.load("dec.npy"))
    refused(capsys, "--names", "metrics", "--labels", "y.npy", "--decisions", long)
    rc, _, err = run(capsys, "metrics", "--labels", "y.npy", "--decisions", long, "--names", "short")
    assert rc == 0, err


# ======================================== files as users write them (issue 30, helper H1): the right number or why

def _sst2():
    from conftest import load_dataset

    y, s, _ = load_dataset("sst2_gpt2")  # 1821 log-posteriors of GPT-2 on SST-2
    s = s.astype(np.float64)
    xe = -np.mean(s[np.arange(len(y)), y] - np.logaddexp(s[:, 0], s[:, 1]))  # float64, normalized per row
    return y, s, xe


def _csv_text(rows, header=None, index=False):
    head = [] if header is None else [("," if index else "") + header]
    return "\n".join(head + [(f"{i}," if index else "") + ",".join(repr(float(x)) if isinstance(x, float) else str(x)
                                                                    for x in np.atleast_1d(r).tolist())
                             for i, r in enumerate(rows)]) + "\n"


@pytest.mark.parametrize("how", ["pandas", "pandas with index", "Excel CSV UTF-8"])
def test_sst2_written_by_pandas_or_excel_gives_its_cross_entropy(tmp_path, capsys, how):
    # pd.Series(y).to_csv(index=False) writes the header `0`, pd.DataFrame(s) `0,1` (and an unnamed index column
    # without index=False); Excel's "CSV UTF-8" has no header but a byte-order mark. Before: N = 1822 and an
    # unusable first row, or (BOM) the first sample dropped: N = 1820, XE 0.63597 instead of 0.63573.
    y, s, xe = _sst2()
    index = how == "pandas with index"
    if how == "Excel CSV UTF-8":
        (tmp_path / "y.csv").write_bytes(b"\xef\xbb\xbf" + _csv_text(y).replace("\n", "\r\n").encode())
        (tmp_path / "s.csv").write_bytes(b"\xef\xbb\xbf" + _csv_text(s).replace("\n", "\r\n").encode())
    else:
        (tmp_path / "y.csv").write_text(_csv_text(y, "0", index))
        (tmp_path / "s.csv").write_text(_csv_text(s, "0,1", index))
    rc, out, err = run(capsys, "metrics", "--labels", tmp_path / "y.csv", "--scores", tmp_path / "s.csv", "--json")
    assert rc == 0, err
    rec = json.loads(out)
    assert rec["metrics"]["XE"]["s"] == pytest.approx(xe, rel=1e-5) and xe == pytest.approx(0.63573, abs=5e-6)
    assert rec["metrics"]["accuracy"]["s"] == pytest.approx(np.mean(s.argmax(1) == y), rel=1e-6)


def test_two_files_that_may_both_start_with_a_header_are_refused(d, capsys):
    # Labels and decisions both as pd.Series(...).to_csv(index=False): `0` may be a header or a sample in each,
    # and no file says how many samples there are. Before: a spurious sample (0, 0) was counted.
    (d / "yl.csv").write_text(_csv_text(np.load("y.npy"), "0"))
    (d / "dl.csv").write_text(_csv_text(np.load("dec.npy"), "0"))
    err = refused(capsys, "yl.csv", "metrics", "--labels", "yl.csv", "--decisions", "dl.csv")
    assert "pandas" in err and "name the column" in err


def test_one_column_of_class_1_probabilities(tmp_path, capsys):
    # predict_proba(X)[:, 1] of a binary problem, as scikit-learn's metrics take it. Before: "`scores` must be
    # the scores of one system, got shape (1821,)". (SST-2: none of its probabilities is 0 or 1, where log_loss
    # would clip and ecjax say inf.)
    from sklearn.metrics import log_loss, roc_auc_score

    y, s, _ = _sst2()
    p1 = np.exp(s[:, 1]) / np.exp(s).sum(1)
    assert np.all((p1 > 0) & (p1 < 1))
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "p1.npy", p1)
    rc, out, err = run(capsys, "metrics", "--labels", tmp_path / "y.npy", "--scores", tmp_path / "p1.npy",
                       "--score-type", "probabilities", "--json")
    assert rc == 0, err
    rec = json.loads(out)["metrics"]
    assert rec["XE"]["p1"] == pytest.approx(log_loss(y, p1), rel=1e-5)
    assert rec["AUC"]["p1"] == pytest.approx(roc_auc_score(y, p1), rel=1e-5)
    # Without --score-type the one column is refused with what it could be.
    err = refused(capsys, "p1.npy", "metrics", "--labels", tmp_path / "y.npy", "--scores", tmp_path / "p1.npy")
    assert "--score-type probabilities" in err and "--score-type llr" in err and "one system" not in err


def test_llr_on_two_columns_says_what_llr_takes(d, capsys):
    err = refused(capsys, "a.npy", "metrics", "--labels", "y.npy", "--scores", "a.npy", "--score-type", "llr")
    assert "one log-likelihood ratio per sample, shape (N,)" in err and "one system" not in err


def test_one_based_labels_are_said_to_look_one_based(d, capsys):
    np.save("y1.npy", np.load("y.npy") + 1)
    err = refused(capsys, "y1.npy", "metrics", "--labels", "y1.npy", "--scores", "a.npy")
    assert "got maximum 2" in err and "look 1-based" in err


def test_class_name_labels_get_the_indices_to_write(d, capsys):
    names = np.where(np.load("y.npy") == 1, "pos", "neg")
    (d / "yn.csv").write_text("label\n" + "\n".join(names) + "\n")
    err = refused(capsys, "yn.csv", "metrics", "--labels", "yn.csv", "--scores", "a.npy")
    assert "{'neg': 0, 'pos': 1}" in err


def test_header_only_label_file(d, capsys):
    (d / "h.csv").write_text("label\n")  # before: an internal error (IndexError), exit 1
    refused(capsys, "h.csv", "metrics", "--labels", "h.csv", "--scores", "a.npy")


def test_calibrate_writes_the_format_its_output_name_says(d, capsys):
    # Before: out.csv held NPY bytes. NumPy's own text reader is the reference.
    for out in ("out.npy", "out.csv"):
        rc, _, err = run(capsys, "calibrate", "--scores", "a.npy", "--labels", "y.npy", "--output", out, "--quiet")
        assert rc == 0, err
    np.testing.assert_array_equal(np.loadtxt("out.csv", delimiter=","), np.load("out.npy"))
    refused(capsys, "--output", "calibrate", "--scores", "a.npy", "--labels", "y.npy", "--output", "out.bin")
    assert not (d / "out.bin").exists()


# ============================================================ weighted counts past 2**24 (issue 30, item 5)

def _weighted_ec(capsys, y, w):
    np.save("yw.npy", y)
    np.save("ww.npy", w)
    np.save("dw.npy", np.zeros_like(y))  # class 0 everywhere: EC = W_1 / W with 0-1 costs and data priors
    rc, out, _ = run(capsys, "metrics", "--labels", "yw.npy", "--decisions", "dw.npy", "--sample-weight", "ww.npy",
                     "--json")
    assert rc == 0
    return json.loads(out)["metrics"]["EC"]["dw"]


def test_cli_weighted_ec_after_a_weight_of_2_24(d, capsys):
    y = np.r_[np.zeros(3000, int), np.ones(1000, int)]
    w = np.ones(4000)
    w[0] = 2.0**24
    want = 1000 / w.sum()  # numpy float64
    assert _weighted_ec(capsys, y, w) == pytest.approx(want, rel=1e-6)  # was 1000 / (2**24 + 1000)


@pytest.mark.slow  # reason: 2 * 10**7 samples in files: ~20 s on a loaded 2-core machine (scores: minutes)
def test_cli_weighted_ec_of_2e7_samples(d, capsys):
    y = np.zeros(2 * 10**7, int)
    y[:1000] = 1
    assert _weighted_ec(capsys, y, np.ones(len(y))) == pytest.approx(5.00e-5, rel=1e-6)  # was 5.96e-5


def test_cli_prior_intervals_with_almost_no_support_name_the_cost_file(d, capsys):
    # Issue 30, item 11: the refusal of interval priors is said of the file that holds them.
    k = 200
    y = np.repeat(np.arange(k), 2)
    np.save("y200.npy", y)
    np.save("d200.npy", y)
    rows = ", ".join("[" + ", ".join("0" if i == j else "1" for j in range(k)) + "]" for i in range(k))
    lows, highs = ", ".join(["0.0"] * k), ", ".join(["0.0075"] * k)
    (d / "p200.toml").write_text(f"costs = [{rows}]\n[uncertainty]\npriors_low = [{lows}]\n"
                                 f"priors_high = [{highs}]\n")
    err = refused(capsys, "p200.toml", "compare", "--labels", "y200.npy", "--decisions", "d200.npy",
                  "--costs", "p200.toml")
    assert "almost no support" in err


# ============================================================== validate, then write

def test_calibrate_wrong_label_length_writes_nothing(d, capsys):
    np.save("y_short.npy", np.zeros(N - 3, int))
    refused(capsys, "y_short.npy", "calibrate", "--train-scores", "a.npy", "--train-labels", "y.npy",
            "--scores", "b.npy", "--labels", "y_short.npy", "--output", "o.npy", "--out", "rec")
    assert not (d / "o.npy").exists() and not (d / "rec").exists()  # --output was written before


def test_calibrate_existing_output_refused_before_fitting(d, capsys):
    (d / "o.npy").write_bytes(b"keep")
    refused(capsys, "o.npy", "calibrate", "--train-scores", "a.npy", "--train-labels", "y.npy",
            "--scores", "b.npy", "--output", "o.npy")
    assert (d / "o.npy").read_bytes() == b"keep"


def test_metrics_existing_record_refused_before_any_figure(d, capsys):
    (d / "res").mkdir()
    (d / "res" / "metrics.json").write_text("keep")
    refused(capsys, "metrics.json", "metrics", "--labels", "y.npy", "--scores", "a.npy", "b.npy", "--out", "res")
    assert files_in(d / "res") == ["metrics.json"]  # 4-6 figures were written before the refusal
    assert (d / "res" / "metrics.json").read_text() == "keep"


def test_bad_scatter_metric_writes_nothing(d, capsys):
    refused(capsys, "--scatter-metric", "metrics", "--labels", "y.npy", "--scores", "a.npy", "b.npy",
            "--out", "res", "--scatter-metric", "nonsense")
    assert not (d / "res").exists()


def test_existing_figure_refused_and_nothing_else_written(d, capsys):
    (d / "res").mkdir()
    (d / "res" / "roc.png").write_bytes(b"keep")
    refused(capsys, "roc.png", "metrics", "--labels", "y.npy", "--scores", "a.npy", "--out", "res")
    assert files_in(d / "res") == ["roc.png"]


def test_out_is_a_file(d, capsys):
    (d / "res").write_text("x")
    refused(capsys, "--out", "metrics", "--labels", "y.npy", "--decisions", "dec.npy", "--out", "res")


def test_out_under_proc(d, capsys):
    refused(capsys, "/proc", "metrics", "--labels", "y.npy", "--decisions", "dec.npy", "--out", "/proc/ecjax_out")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_out_read_only_folder(d, capsys):
    (d / "ro").mkdir()
    os.chmod(d / "ro", 0o500)
    try:
        refused(capsys, "ro", "metrics", "--labels", "y.npy", "--decisions", "dec.npy", "--out", "ro")
    finally:
        os.chmod(d / "ro", 0o700)


@pytest.mark.parametrize("err", [28, 30])  # ENOSPC, EROFS while writing
def test_full_or_read_only_disk_exit_2_and_rolls_back(d, capsys, monkeypatch, err):
    from ecjax._src import io as eio

    real, calls = eio._write_all, []

    def flaky(fd, payload):
        calls.append(1)
        if len(calls) == 2:  # the second file fails: the first must be removed again
            raise OSError(err, os.strerror(err))
        real(fd, payload)

    monkeypatch.setattr(eio, "_write_all", flaky)
    refused(capsys, "res", "metrics", "--labels", "y.npy", "--scores", "a.npy", "--out", "res")
    assert not (d / "res").exists() or files_in(d / "res") == []


def test_calibrate_output_name_too_long(d, capsys):
    refused(capsys, "--output", "calibrate", "--train-scores", "a.npy", "--train-labels", "y.npy",
            "--scores", "b.npy", "--output", "o" * 300 + ".npy")


# ==================================================================== strict JSON

def test_json_of_constant_scores_is_strict(d, capsys):
    np.save("const.npy", np.log(np.full((N, 2), 0.5)))
    rc, out, err = run(capsys, "metrics", "--labels", "y.npy", "--scores", "const.npy", "--json", "--out", "res")
    assert rc == 0, err

    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    for text in (out, (d / "res" / "metrics.json").read_text()):
        rec = json.loads(text, parse_constant=refuse)  # "-Infinity" was written
        assert rec["optimal_threshold"]["const"]["threshold"] in ("inf", "-inf")


def test_successful_run_leaves_no_temp_files_and_follows_umask(d, capsys):
    old = os.umask(0o022)
    try:
        rc, _, err = run(capsys, "metrics", "--labels", "y.npy", "--scores", "a.npy", "b.npy", "--out", "res")
    finally:
        os.umask(old)
    assert rc == 0, err
    names = files_in(d / "res")
    assert "metrics.json" in names and not [n for n in names if n.startswith(".")]
    assert all(os.stat(d / "res" / n).st_mode & 0o777 == 0o644 for n in names)


# ==================================================================== signals

def test_keyboard_interrupt_in_process(d, capsys, monkeypatch):
    def interrupted(args, run):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, "metrics", interrupted)
    rc, out, err = run(capsys, "metrics", "--labels", "y.npy", "--decisions", "dec.npy")
    assert rc == 130 and err.strip() == "ecjax metrics: interrupted"


# Ctrl-C while `import jax` runs, before ecjax.cli.main exists: the import of jax is made to raise it.
_INTERRUPTED_IMPORT = r"""
import sys
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "jax":
            raise KeyboardInterrupt
sys.meta_path.insert(0, Interrupt())
sys.argv = [sys.argv[1], "metrics"]
from ecjax.cli import main
sys.exit(main())
"""


@pytest.mark.parametrize("argv0, as_command", [("/usr/local/bin/ecjax", True), ("my_script.py", False)])
def test_interrupt_while_importing_jax(tmp_path, argv0, as_command):
    proc = subprocess.run([sys.executable, "-c", _INTERRUPTED_IMPORT, argv0], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    if as_command:  # the command: one line and exit 130, as once it runs (was a KeyboardInterrupt traceback)
        assert proc.returncode == 130 and proc.stderr.strip() == "ecjax: interrupted", proc.stderr
    else:  # a library import: the interrupt stays the caller's
        assert proc.returncode != 130 and "KeyboardInterrupt" in proc.stderr


_SLOW = r"""
import sys, time
from ecjax import cli
from ecjax.inputs import InputError
def slow(args, run):
    open("started", "w").close()
    time.sleep(60)
cli.COMMANDS["metrics"] = slow
sys.exit(cli.main(["metrics", "--labels", "y.npy", "--decisions", "dec.npy"]))
"""


@pytest.mark.parametrize("sig, code, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_signals_exit_with_one_line(d, sig, code, word):
    proc = subprocess.Popen([sys.executable, "-c", _SLOW], cwd=d, stderr=subprocess.PIPE, text=True)
    try:
        # Wait for the command itself to run (importing JAX can take long on a loaded machine): the signal is
        # meant for a running command (Ctrl-C during the import has its own test).
        for _ in range(2400):
            if (d / "started").exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert (d / "started").exists(), "the command did not start within 120 s"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert err.strip() == f"ecjax metrics: {word}"  # was a KeyboardInterrupt traceback


@pytest.mark.parametrize("score_type", [[], ["--score-type", "logits"]])
def test_probabilities_file_is_refused_with_command_line_advice(tmp_path, capsys, score_type):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "y.npy", rng.integers(0, 3, 50))
    np.save(tmp_path / "p.npy", rng.dirichlet(np.ones(3), size=50))
    rc = cli.main(["metrics", "--labels", str(tmp_path / "y.npy"), "--scores", str(tmp_path / "p.npy"), *score_type])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "p.npy: the rows look like probabilities" in err and "--score-type probabilities" in err
    # Following the advice works (and gives the cross-entropy of the probabilities themselves).
    rc = cli.main(["metrics", "--labels", str(tmp_path / "y.npy"), "--scores", str(tmp_path / "p.npy"),
                   "--score-type", "probabilities", "--json"])
    assert rc == 0


def test_library_messages_name_the_command_line_option():
    # The library says which arguments its problem mentions (InputError.mentions), so the command line says them as
    # its options without editing the text (it once rewrote `score_type='llr'` with a regular expression).
    from ecjax._src.cli.rules import said
    from ecjax._src.inputs import mentioning

    fields = mentioning("pass {logits}; or {llr}; {score_type} must be one of ...", logits=("score_type", "logits"),
                        llr=("score_type", "llr"), score_type=("score_type", None))
    assert fields["problem"] == "pass score_type='logits'; or score_type='llr'; `score_type` must be one of ..."
    err = InputError("`x` " + fields["problem"], argument="x", **fields)
    assert str(err) == "`x` pass score_type='logits'; or score_type='llr'; `score_type` must be one of ..."
    assert said(err) == "`x` pass --score-type logits; or --score-type llr; --score-type must be one of ..."
    err = InputError("`scores` " + fields["problem"], argument="scores", **fields)
    assert said(err).startswith("--scores pass --score-type logits")
    assert said(InputError("`x` must be one of ...")) == "`x` must be one of ..."  # no fields: as the library says it


def test_the_command_line_says_the_library_check_of_its_file_and_in_its_options():
    # One condition, checked once (ecjax._src.inputs.as_scores); the command line says it of the file, with its options.
    from ecjax._src.cli.files import canonical_score_file
    from ecjax._src.cli.rules import said
    from ecjax._src.inputs import as_scores

    p = np.random.default_rng(1).dirichlet(np.ones(3), size=20)
    with pytest.raises(InputError) as info:
        as_scores(p, score_type="logits")
    assert info.value.argument == "scores" and info.value.problem == (
        "the rows look like probabilities (in [0, 1], summing to 1), not log-domain scores: pass "
        "score_type='probabilities'")
    assert str(info.value).startswith("`scores` rows look like probabilities")
    with pytest.raises(InputError) as info:
        canonical_score_file(p, "p.npy", "logits")
    assert said(info.value) == ("p.npy: the rows look like probabilities (in [0, 1], summing to 1), not log-domain "
                                "scores: pass --score-type probabilities")


# ============================================ issue 30 (helper H2): what the options and files mean, and the output
# Each case failed before its fix: a second weight file, ignored options, zero costs and a full device were accepted
# (exit 0 or 1), compare decided with the intervals' mean, a failed --force write mixed two runs.

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_two_weight_files_for_one_labels_file_refused(d, capsys):
    # Each system weighted differently on the same samples: different test sets (the winner could flip), and
    # compare would have switched to the unpaired model without a word.
    np.save("w1.npy", np.ones(N))
    np.save("w2.npy", np.r_[np.full(N // 2, 3.0), np.ones(N // 2)])
    for command, costs in (("metrics", []), ("compare", ["--costs", "c.toml", "--draws", "500"])):
        err = refused(capsys, "--sample-weight", command, "--labels", "y.npy", "--scores", "a.npy", "b.npy",
                      "--sample-weight", "w1.npy", "w2.npy", *costs)
        assert "one file per --labels file (1), got 2" in err
    # One weight file per --labels file is the rule, and one file for the same --labels file given twice.
    rc, _, err = run(capsys, "metrics", "--labels", "y.npy", "y.npy", "--decisions", "dec.npy", "dec2.npy",
                     "--sample-weight", "w2.npy")
    assert rc == 0, err


@pytest.mark.parametrize("argv, option", [
    (["metrics", "--labels", "y.npy", "--scores", "a.npy", "--bootstrap-draws", "500"], "--bootstrap-draws"),
    (["metrics", "--labels", "y.npy", "--scores", "a.npy", "--seed", "3"], "--seed"),
    (["compare", "--labels", "y.npy", "--decisions", "dec.npy", "--costs", "c.toml", "--max-draws", "5000"],
     "--max-draws"),
    (["compare", "--labels", "y.npy", "--decisions", "dec.npy", "--costs", "c.toml", "--deployment-scores", "a.npy"],
     "--deployment-scores"),
    (["compare-folds", "folds.csv", "--runs", "2", "--test-fraction", "0.2"], "--runs"),
    (["calibrate", "--scores", "a.npy", "--train-scores", "b.npy", "--train-labels", "y.npy", "--output", "o.npy",
      "--calibration-errors"], "--calibration-errors"),
    (["calibrate", "--scores", "a.npy", "--labels", "y.npy", "--output", "o.npy", "--seed", "3"], "--seed"),
])
def test_options_without_their_parent_refused(d, capsys, argv, option):
    (d / "folds.csv").write_text("A,B\n0.8,0.82\n0.79,0.83\n0.81,0.8\n")
    before = files_in(d)
    err = refused(capsys, option, *argv)
    assert err.split("error: ")[1].startswith(f"{option}: needs") or "not with --test-fraction" in err
    assert files_in(d) == before


def test_options_with_their_parent_still_used(d, capsys):
    # With its parent an option is used (tests/test_cli_metrics_extras.py: --bootstrap-draws); without a value
    # its default is (--runs 1 with --test-fraction).
    (d / "folds.csv").write_text("A,B\n0.8,0.82\n0.79,0.83\n0.81,0.8\n")
    rc, out, err = run(capsys, "compare-folds", "folds.csv", "--test-fraction", "0.2", "--json")
    assert rc == 0, err
    assert json.loads(out)["runs"] == 1


def test_systems_refuse_a_decision_rule_for_given_decisions():
    from ecjax import prob

    y, dec = np.array([0, 1, 1, 0]), np.array([[0, 1, 0, 0], [1, 1, 1, 0]])
    for rule in ("per_draw", "expected_utility", prob.PerDraw(4)):
        with pytest.raises(InputError, match="`decision_rule`.*given as `decisions`"):
            prob.Systems(y, dec, decision_rule=rule)
    assert prob.Systems(y, dec).decisions is not None
    assert prob.Systems(y, scores=np.zeros((2, 4, 2))).decision_rule == "expected_utility"


@pytest.mark.parametrize("text", [
    "costs = [[0, 0], [0, 0]]\n",
    "costs = [[3, 3], [5, 5]]\n",  # every row one number: every system has the same expected cost too
    "costs = [[0, 0], [0, 0]]\n[uncertainty]\nlow = [[0, 0], [0, 0]]\nhigh = [[0, 0], [0, 0]]\n",
])
def test_compare_with_costs_that_make_every_system_equal_refused(d, capsys, text):
    (d / "z.toml").write_text(text)
    err = refused(capsys, "z.toml", "compare", "--labels", "y.npy", "--decisions", "dec.npy", "dec2.npy",
                  "--costs", "z.toml", "--draws", "500")
    assert "none can be preferred" in err  # was: exit 0, "recommended: dec2"


def test_prob_compare_refuses_costs_that_make_every_system_equal():
    import jax

    from ecjax import prob

    y = np.array([0, 1, 1, 0, 1, 0])
    systems = prob.Systems(y, np.array([[0, 1, 1, 0, 0, 0], [1, 1, 0, 0, 1, 0]]))
    settings = prob.MonteCarloSettings(num_draws=200)
    for kw in (dict(costs=np.zeros((2, 2))), dict(utilities=[[2.0, 2.0], [-1.0, -1.0]])):
        with pytest.raises(InputError, match="none can be preferred"):
            prob.compare(systems, key=jax.random.key(0), settings=settings, **kw)
    with pytest.raises(InputError, match="`costs`.*none can be preferred"):
        prob.compare_counts(np.ones((2, 2, 2)), costs=np.zeros((2, 2)), key=jax.random.key(0), settings=settings)


def _bayes_decisions(log_posteriors, c10):
    """Bayes decisions for the costs [[0, 1], [c10, 0]]: decide 1 iff P(0|x) * 1 < P(1|x) * c10 (numpy)."""
    p = np.exp(log_posteriors)
    return (p[:, 0] < c10 * p[:, 1]).astype(int)


def test_compare_decides_with_the_nominal_costs_as_metrics_does(d, capsys):
    # One cost file, one meaning: the nominal `costs` decide (as in metrics); the [uncertainty] table only spreads
    # the evaluation. Before, compare decided with the intervals' mean (21 here) and a nominal 10 or 19 changed
    # nothing.
    records, decisions = {}, {}
    for c10 in (10, 19):
        (d / f"u{c10}.toml").write_text(f"costs = [[0, 1], [{c10}, 0]]\n[uncertainty]\nlow = [[0, 1], [2, 0]]\n"
                                        "high = [[0, 1], [40, 0]]\n")
        decisions[c10] = [_bayes_decisions(np.load(f), c10) for f in ("a.npy", "b.npy")]
        np.save(f"da{c10}.npy", decisions[c10][0])
        np.save(f"db{c10}.npy", decisions[c10][1])
        common = ["--labels", "y.npy", "--names", "a", "b", "--costs", f"u{c10}.toml"]
        for kind, files in (("scores", ["a.npy", "b.npy"]), ("decisions", [f"da{c10}.npy", f"db{c10}.npy"])):
            rc, out, err = run(capsys, "compare", *common, f"--{kind}", *files, "--draws", "400", "--json")
            assert rc == 0, err
            records[c10, kind] = json.loads(out)
            rc, out, err = run(capsys, "metrics", *common, f"--{kind}", *files, "--json")
            assert rc == 0, err
            records[c10, kind, "metrics"] = json.loads(out)["metrics"]["EC"]
    assert any(np.any(x != y) for x, y in zip(decisions[10], decisions[19]))  # the nominal changes the decisions
    for c10 in (10, 19):
        by_scores, by_decisions = records[c10, "scores"], records[c10, "decisions"]
        for field in ("expected_yield", "p_best", "hdi", "pairwise"):
            assert by_scores[field] == by_decisions[field], field  # the same decisions, the same numbers
        assert by_scores["decision_rule"] == "nominal" and by_scores["decision_costs"] == [[0, 1], [c10, 0]]
        assert "nominal costs" in by_scores["decisions_made_by"]
        assert records[c10, "scores", "metrics"] == records[c10, "decisions", "metrics"]
    assert records[10, "scores"]["expected_yield"] != records[19, "scores"]["expected_yield"]
    rc, out, err = run(capsys, "compare", "--labels", "y.npy", "--scores", "a.npy", "b.npy", "--costs", "u10.toml",
                       "--draws", "500")
    assert rc == 0 and "decisions: Bayes decisions for the nominal costs" in out, err
    # The mean of the intervals decides only when asked for, and the record says so.
    rc, out, err = run(capsys, "compare", "--labels", "y.npy", "--scores", "a.npy", "b.npy", "--costs", "u10.toml",
                       "--draws", "500", "--decision-rule", "expected_utility", "--json")
    assert rc == 0, err
    assert json.loads(out)["decision_costs"] == [[0, 1], [21, 0]]


def test_compare_nominal_decisions_with_deployment_priors_and_probabilities(d, capsys):
    # The same decisions as numpy's for posteriors re-weighted from training priors to the file's priors.
    prob1 = 1 / (1 + np.exp(-np.diff(np.load("a.npy"), axis=1)[:, 0]))
    np.save("p.npy", np.stack([1 - prob1, prob1], 1))
    (d / "pu.toml").write_text("costs = [[0, 1], [3, 0]]\npriors = [0.8, 0.2]\n[uncertainty]\n"
                               "low = [[0, 1], [1, 0]]\nhigh = [[0, 1], [9, 0]]\n")
    post = np.stack([1 - prob1, prob1], 1) * np.array([0.8, 0.2]) / np.array([0.4, 0.6])
    np.save("dp.npy", np.argmin(post @ np.array([[0.0, 1.0], [3.0, 0.0]]), axis=1))
    common = ["--labels", "y.npy", "--names", "p", "--costs", "pu.toml", "--draws", "400", "--json"]
    rc, out, err = run(capsys, "compare", *common, "--scores", "p.npy", "--score-type", "probabilities",
                       "--training-priors", "0.4,0.6")
    assert rc == 0, err
    rc, out2, err = run(capsys, "compare", *common, "--decisions", "dp.npy")
    assert rc == 0, err
    assert json.loads(out)["expected_yield"] == json.loads(out2)["expected_yield"]


def _earlier_run(d, capsys):
    """A metrics run into res/ and the bytes of its files; the new run's scores differ a little (a2.npy)."""
    rc, _, err = run(capsys, "metrics", "--labels", "y.npy", "--scores", "a.npy", "--names", "s", "--out", "res")
    assert rc == 0, err
    llr = np.diff(np.load("a.npy"), axis=1)[:, 0] + np.random.default_rng(1).normal(0, 0.1, N)
    np.save("a2.npy", np.stack([-np.logaddexp(0, llr), -np.logaddexp(0, -llr)], 1))
    return {p.name: p.read_bytes() for p in (d / "res").iterdir()}


@pytest.mark.parametrize("fail_at", ["first", "last", "placing"])
def test_force_over_an_earlier_run_and_a_failed_write_leave_the_earlier_run(d, capsys, monkeypatch, fail_at):
    from ecjax._src import io as eio

    old = _earlier_run(d, capsys)
    assert len(old) >= 4  # figures and the JSON record
    name = "_move_into_place" if fail_at == "placing" else "_write_all"
    real, calls = getattr(eio, name), []

    def flaky(*args):
        calls.append(1)
        if len(calls) == (len(old) if fail_at == "last" else 1 if fail_at == "first" else 3):
            raise OSError(28, os.strerror(28))  # ENOSPC: the disk is full
        return real(*args)

    monkeypatch.setattr(eio, name, flaky)
    err = refused(capsys, "res", "metrics", "--labels", "y.npy", "--scores", "a2.npy", "--names", "s",
                  "--out", "res", "--force")
    assert "No space left on device" in err
    assert {p.name: p.read_bytes() for p in (d / "res").iterdir()} == old  # was: new figures beside the old JSON


def test_force_without_hard_links_puts_back_copies(d, capsys, monkeypatch):
    # A file system without hard links: the files a run replaces are kept as copies until it has succeeded.
    from ecjax._src import io as eio

    old = _earlier_run(d, capsys)
    real_link, real_move, moves = os.link, eio._move_into_place, []

    def no_link(*args, **kwargs):
        raise OSError(1, os.strerror(1))  # EPERM

    def move(*args):
        moves.append(1)
        if len(moves) == len(old):  # the last file fails: the others were replaced
            raise OSError(28, os.strerror(28))
        return real_move(*args)

    monkeypatch.setattr(os, "link", no_link)
    monkeypatch.setattr(eio, "_move_into_place", move)
    refused(capsys, "res", "metrics", "--labels", "y.npy", "--scores", "a2.npy", "--names", "s", "--out", "res",
            "--force")
    assert {p.name: p.read_bytes() for p in (d / "res").iterdir()} == old
    monkeypatch.setattr(eio, "_move_into_place", real_move)  # and without a failure the new run replaces the old
    rc, _, err = run(capsys, "metrics", "--labels", "y.npy", "--scores", "a2.npy", "--names", "s", "--out", "res",
                     "--force")
    monkeypatch.setattr(os, "link", real_link)
    assert rc == 0, err
    new = {p.name: p.read_bytes() for p in (d / "res").iterdir()}
    assert new.keys() == old.keys() and new["metrics.json"] != old["metrics.json"]


@pytest.mark.slow  # a subprocess that imports JAX and matplotlib (5-30 s); the test above fails the same way in-process
def test_force_under_a_file_size_limit_leaves_the_earlier_run(d, capsys):
    # A real failed write: the process may not write a file as large as the run's largest (a figure; the files
    # written before it fit).
    old = _earlier_run(d, capsys)
    second, largest = sorted(len(b) for b in old.values())[-2:]
    assert largest - second > 2000, (second, largest)  # the new run's files are about as large
    limit = (second + largest) // 2
    script = ("import resource, signal, sys\n"
              "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
              f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
              "from ecjax.cli import main\n"
              "sys.exit(main(['metrics', '--labels', 'y.npy', '--scores', 'a2.npy', '--names', 's', '--out', 'res',"
              " '--force']))\n")
    env = dict(os.environ, PYTHONPATH=ROOT, ECJAX_NO_COMPILATION_CACHE="1")
    proc = subprocess.run([sys.executable, "-c", script], cwd=d, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 2 and "File too large" in proc.stderr, proc.stderr
    assert {p.name: p.read_bytes() for p in (d / "res").iterdir()} == old


def _json_run(d, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "ecjax.cli", "metrics", "--labels", "y.npy", "--decisions",
                             "dec.npy", "dec2.npy", "--json"], cwd=d, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=ROOT), **kwargs)


def _with_stdout(capsys, monkeypatch, stream):
    """A metrics run whose standard output is ``stream``: (exit code, stderr)."""
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", stream)
    rc = cli.main(["metrics", "--labels", "y.npy", "--decisions", "dec.npy", "dec2.npy", "--json"])
    monkeypatch.undo()
    return rc, capsys.readouterr().err


def test_reader_of_the_output_gone_exits_quietly_in_process(d, capsys, monkeypatch):
    # `ecjax ... --json | head -c 10` where head has already gone: exit 141 (128 + SIGPIPE, as a shell reports for
    # `yes | head`), nothing on stderr. Was: exit 1, "internal error: BrokenPipeError".
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w") as pipe:
        rc, err = _with_stdout(capsys, monkeypatch, pipe)
        assert rc == cli.EXIT_CLOSED_PIPE and err == "", err  # the rest goes to os.devnull: closing is quiet


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_standard_output_exit_2_with_one_line_in_process(d, capsys, monkeypatch):
    with open("/dev/full", "w") as full:
        rc, err = _with_stdout(capsys, monkeypatch, full)
        assert rc == 2, err
    assert err.strip().splitlines() == ["ecjax metrics: error: cannot write to standard output: No space left on "
                                        "device"]


@pytest.mark.slow  # subprocesses that import JAX (5-15 s each): Python's own flush at exit must not fail either
def test_reader_gone_and_full_device_as_a_command(d):
    proc = _json_run(d, stdout=subprocess.PIPE)
    proc.stdout.close()  # the reader goes before anything is written
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == cli.EXIT_CLOSED_PIPE and err == "", err
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            proc = _json_run(d, stdout=full)
            err = proc.stderr.read()
            assert proc.wait(timeout=300) == 2, err
        assert err.strip().splitlines() == ["ecjax metrics: error: cannot write to standard output: No space left "
                                            "on device"]
