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
    refused(capsys, "y20k.npy", "metrics", "--labels", "y20k.npy", "--decisions", "dec.npy")
    assert time.perf_counter() - t < 20


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
    from ecjax import io as eio

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
    def interrupted(args):
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
def slow(args):
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


def test_library_messages_name_the_command_line_option(tmp_path, capsys):
    from ecjax.cli import _as_options

    msg = 'pass score_type="logits"; or score_type=\'llr\'; `score_type` must be one of ...'
    assert _as_options(msg) == "pass --score-type logits; or --score-type llr; --score-type must be one of ..."


def test_the_command_line_says_the_library_check_of_its_file_and_in_its_options():
    # One condition, checked once (ecjax.inputs.as_scores); the command line says it of the file, with its options.
    from ecjax.inputs import as_scores

    p = np.random.default_rng(1).dirichlet(np.ones(3), size=20)
    with pytest.raises(InputError) as info:
        as_scores(p, score_type="logits")
    assert info.value.problem == ("the rows look like probabilities (in [0, 1], summing to 1), not log-domain "
                                  "scores: pass score_type=\"probabilities\"")
    assert str(info.value).startswith("`scores` rows look like probabilities")
    with pytest.raises(InputError) as info:
        cli._check_scores(p, "p.npy", 2, "logits")
    assert cli._as_options(str(info.value)) == ("p.npy: the rows look like probabilities (in [0, 1], summing to 1), "
                                                "not log-domain scores: pass --score-type probabilities")
