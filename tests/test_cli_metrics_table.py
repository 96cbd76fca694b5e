"""The metrics table a user expects: score columns (XE, Brier, ECE, AUC), the averaging said in words, and no
winner marks for a single system; what `compare` says about the ROPE, a single system, and a long run.

References: scikit-learn (log_loss, roc_auc_score, brier_score_loss) and short numpy computations.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import run_cli as run
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score


def _softmax(x):
    z = np.exp(x - x.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def _top_label_ece(labels, p, bins=15):
    conf, pred = p.max(-1), p.argmax(-1)
    idx = np.minimum((conf * bins).astype(int), bins - 1)
    return sum(np.sum(idx == b) / len(labels) * abs(np.mean(pred[idx == b] == labels[idx == b]) - conf[idx == b].mean())
               for b in range(bins) if np.any(idx == b))


def test_cifar10_score_columns_match_sklearn(data_dir):
    names = ["cifar10_repvgg_a2", "cifar10_resnet-20", "cifar10_vgg19_bn"]
    folders = [data_dir / n for n in names]
    rc, out, err = run("metrics", "--labels", *[f / "targets.npy" for f in folders],
                       "--scores", *[f / "scores.npy" for f in folders], "--score-type", "logits",
                       "--names", *names, "--json", cwd=data_dir)
    assert rc == 0, err
    rec = json.loads(out)
    for name, folder in zip(names, folders):
        y = np.load(folder / "targets.npy")
        p = _softmax(np.load(folder / "scores.npy").astype(np.float64))
        onehot = np.eye(10)[y]
        assert rec["metrics"]["XE"][name] == pytest.approx(log_loss(y, p, labels=range(10)), rel=2e-4)
        assert rec["metrics"]["Brier"][name] == pytest.approx(np.mean(np.sum((p - onehot) ** 2, 1)) / 10, rel=2e-4)
        assert rec["metrics"]["ECE"][name] == pytest.approx(_top_label_ece(y, p), abs=2e-4)
        auc = roc_auc_score(y, p, multi_class="ovr", average="macro")
        assert rec["metrics"]["AUC_ovr"][name] == pytest.approx(auc, abs=1e-5)
    assert "macro averages over the 10 classes" in rec["averaging"] and "one-vs-rest" in rec["averaging"]


def test_binary_score_columns_and_single_system_table(data_dir):
    folder = data_dir / "sst2_gpt2"
    rc, out, err = run("metrics", "--labels", folder / "targets.npy", "--scores", folder / "scores.npy",
                       "--names", "gpt2", "--json", cwd=data_dir)
    assert rc == 0, err
    rec = json.loads(out)
    y = np.load(folder / "targets.npy")
    p = np.exp(np.load(folder / "scores.npy").astype(np.float64))
    p /= p.sum(1, keepdims=True)  # the stored log-posteriors sum to 1 up to rounding
    assert rec["metrics"]["AUC"]["gpt2"] == pytest.approx(roc_auc_score(y, p[:, 1]), abs=1e-5)
    assert rec["metrics"]["Brier"]["gpt2"] == pytest.approx(brier_score_loss(y, p[:, 1]), rel=2e-4)
    assert rec["metrics"]["XE"]["gpt2"] == pytest.approx(log_loss(y, p), rel=2e-4)
    assert rec["best"] == {} and "class 1 as the positive class" in rec["averaging"]
    rc, out, err = run("metrics", "--labels", folder / "targets.npy", "--scores", folder / "scores.npy",
                       "--names", "gpt2", cwd=data_dir)
    assert rc == 0, err
    table = out.splitlines()[:3]
    assert table[0].split()[-1] == "AUC" and "*" not in "\n".join(table) and "!" not in table[0]
    assert any(line.startswith("averaging: ") for line in out.splitlines())


COSTS = 'costs = [[0, 1], [2, 0]]\n[uncertainty]\nlow = [[0, 1], [1, 0]]\nhigh = [[0, 1], [4, 0]]\n'


def _compare(tmp_path, cwd, *args):
    """One run gives both the text (stdout) and the JSON record (written by --out)."""
    (tmp_path / "c.toml").write_text(COSTS)
    rc, out, err = run("compare", *args, "--costs", tmp_path / "c.toml", "--out", tmp_path / "out", cwd=cwd)
    assert rc == 0, err
    assert "may take" not in err  # a run of seconds gets no duration warning
    return out, json.loads((tmp_path / "out" / "compare.json").read_text())


def test_single_system_compare_has_no_recommendation(data_dir, tmp_path):
    folder = data_dir / "sst2_gpt2"
    out, rec = _compare(tmp_path, data_dir, "--labels", folder / "targets.npy", "--scores", folder / "scores.npy",
                        "--names", "gpt2", "--draws", "2000")
    assert rec["recommendation"] is None and rec["recommendation_probability"] is None
    assert "recommended" not in out and "P(best)" not in out and "gpt2" in out


def test_compare_rope_reaches_the_recommendation(data_dir, tmp_path):
    # SST-2, GPT-2 zero-shot against 4-shot: the JSON's ROPE probabilities and the text say the same thing.
    folders = [data_dir / "sst2_gpt2", data_dir / "sst2_gpt2_4shot"]
    text, rec = _compare(tmp_path, data_dir, "--labels", *[f / "targets.npy" for f in folders], "--scores",
                         *[f / "scores.npy" for f in folders], "--names", "zero", "four", "--draws", "4000",
                         "--rope", "0.05")
    r = rec["systems"].index(rec["recommendation"])
    rp = np.asarray(rec["rope_probabilities"])[r, 1 - r]
    equivalent = int(np.argmax(rp)) == 1
    assert rec["practically_equivalent_to_recommendation"] == ([rec["systems"][1 - r]] if equivalent else [])
    assert f"P(|difference| <= 0.05) = {rp[1]:.3f}" in text
    assert ("practically equivalent to" in text) == equivalent


def test_compare_warns_before_a_long_run(tmp_path):
    # 10^8 draws (the most --draws takes), each drawing 3 x 10^4 rate cells and, once per --rate-draws 32, making
    # 3 x 10^4 Bayes decisions over 100 x 100 uncertain costs: 3 x 10^12 cells and 10^15 multiply-adds, hours on a
    # CPU and far past a minute on any accelerator (an H100 draws ~3 x 10^9 cells/s).  The warning comes from the
    # time of the second block measured on the machine (the constants it replaced said 10^5 draws took seconds on
    # an H100): it must come before the work, so read it, then stop the run.
    rng = np.random.default_rng(0)
    k, n = 100, 10_000
    np.save(tmp_path / "y.npy", rng.integers(0, k, n))
    for name in "abc":
        np.save(tmp_path / f"{name}.npy", rng.normal(size=(n, k)).astype(np.float32))
    off = 1 - np.eye(k)
    rows = lambda m: "[" + ", ".join("[" + ", ".join(f"{x:g}" for x in r) + "]" for r in m) + "]"
    (tmp_path / "c.toml").write_text(f"costs = {rows(off)}\n[uncertainty]\nlow = {rows(0.5 * off)}\n"
                                     f"high = {rows(2 * off)}\n")
    proc = subprocess.Popen([sys.executable, "-m", "ecjax.cli", "compare", "--labels", "y.npy", "--scores", "a.npy",
                             "b.npy", "c.npy", "--score-type", "logits", "--costs", "c.toml", "--draws", "100000000",
                             "--decision-rule", "per_draw", "--rate-draws", "32"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
    finally:
        proc.kill()
        proc.wait()
    assert "may take about" in line and "min" in line and "measured on this machine" in line, line
    assert "--draws" in line and "expected_utility" in line and "--decisions" in line


def test_run_clock_warns_from_the_measured_time_and_prints_progress_lines():
    # The reporter the command line hands to compare: a warning past a minute of *measured* time left, and with
    # --progress a plain line at most every `every` seconds (a fake clock: no sleeping).
    import io

    from ecjax._src.cli.progress import RunClock

    now = [0.0]
    stream = io.StringIO()
    clock = RunClock(False, stream, num_draws=10_000, advice="fewer --draws", every=5.0, clock=lambda: now[0])(3)
    clock.time_left(30.0)  # under a minute: no warning
    assert stream.getvalue() == ""
    now[0] = 2.0
    clock.draws_done(1000, np.zeros((1000, 2)))  # 2 s after the start: too soon for a line
    assert stream.getvalue() == ""
    now[0] = 6.0
    clock.draws_done(3000, np.zeros((3000, 2)))
    assert stream.getvalue() == "ecjax compare: 3,000 of 10,000 draws, 6 s, about 24 s left\n"
    clock.time_left(150.0)
    assert stream.getvalue().splitlines()[-1].startswith("ecjax compare: this run may take about 2 min more")
    clock.time_left(150.0)  # said once
    assert len(stream.getvalue().splitlines()) == 2


def test_compare_progress_lines_and_p_tie_in_the_json(tmp_path, data_dir):
    # --progress prints its lines when stderr is not a terminal (here a buffer); per-draw decisions put P(tie) in
    # the record, and P(best) + P(tie) = 1 (tests/test_prob_compare_per_draw_ties.py checks the numbers).
    names = ["sst2_gpt2", "sst2_gpt2_4shot"]
    (tmp_path / "c.toml").write_text("costs = [[0, 1], [3, 0]]\n[uncertainty]\nlow = [[0, 1], [1, 0]]\n"
                                     "high = [[0, 1], [5, 0]]\n")
    rc, out, err = run("compare", "--labels", *[data_dir / n / "targets.npy" for n in names],
                       "--scores", *[data_dir / n / "scores.npy" for n in names], "--costs", tmp_path / "c.toml",
                       "--draws", "2000", "--decision-rule", "per_draw", "--json", "--progress", "1e-9",
                       cwd=tmp_path)
    assert rc == 0, err
    rec = json.loads(out)
    assert 0 < rec["p_tie"] < 1 and rec["monte_carlo_errors"]["p_tie"] > 0
    assert abs(sum(rec["p_best"].values()) + rec["p_tie"] - 1) < 1e-12
    assert "of 2,000 draws" in err
