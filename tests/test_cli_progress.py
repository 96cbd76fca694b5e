"""Progress at a terminal: `ecjax compare` shows draws done and the running P(best) with its error, `ecjax sweep`
the chunks done; on stderr, only when a person watches a run that takes a while; the printed answer is the same
with and without it.

Reference: P(best) of the leader and its binomial error computed with numpy from the same draws.
"""

import io
import re
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from ecjax import cli
from ecjax._src.cli import progress


def test_progress_line_shows_the_running_answer():
    rng = np.random.default_rng(0)
    yields = rng.normal(size=(4000, 2)) + np.array([0.0, 0.3])
    stream = io.StringIO()
    bar = progress.DrawProgress(["a", "b"], stream)(10)
    bar.update(1)
    bar.draws_done(4000, yields)
    bar.close()
    p = np.mean(np.argmax(yields, 1) == 1)
    match = re.fullmatch(r"\r  4,000 draws: P\(best\) b (\d\.\d{3}) ± (\d\.\d{3,4})   \n", stream.getvalue())
    assert match, stream.getvalue()
    assert float(match.group(1)) == pytest.approx(p, abs=5e-4)
    assert float(match.group(2)) == pytest.approx(np.sqrt(p * (1 - p) / 4000), rel=0.4)


@pytest.mark.parametrize("json_out, seconds, terminal, shown", [
    (False, 10.0, True, True),
    (True, 10.0, True, False),    # --json: machines read stdout, nobody watches
    (False, 0.5, True, False),    # answers before a progress line would help
    (False, 10.0, False, False),  # stderr is a file or a pipe
])
def test_progress_only_for_a_person_watching_a_long_run(monkeypatch, json_out, seconds, terminal, shown):
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: terminal)
    shown_by = progress.compare_progress(SimpleNamespace(json=json_out), ["a", "b"], seconds)
    assert isinstance(shown_by, progress.DrawProgress) == shown and (shown or shown_by is False)


def test_compare_at_a_terminal_reports_progress_and_the_same_answer(tmp_path, capsys, monkeypatch):
    # Per-draw decisions on 1000 samples: the draws run in several blocks, the unit of progress.
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 1000)
    np.save(tmp_path / "y.npy", y)
    for name, noise in (("a", 1.3), ("b", 1.4)):
        s = np.where(y == 1, 1.0, -1.0) + rng.normal(0, noise, y.size)
        np.save(tmp_path / f"{name}.npy", np.stack([-np.logaddexp(0, s), -np.logaddexp(0, -s)], 1))
    (tmp_path / "c.toml").write_text('costs = [[0, 1], [3, 0]]\n[uncertainty]\nlow = [[0, 1], [1, 0]]\n'
                                     'high = [[0, 1], [5, 0]]\n')
    args = ["compare", "--labels", str(tmp_path / "y.npy"), "--scores", str(tmp_path / "a.npy"),
            str(tmp_path / "b.npy"), "--names", "a", "b", "--costs", str(tmp_path / "c.toml"), "--draws", "4000",
            "--decision-rule", "per_draw"]
    assert cli.main(args) == 0
    quiet = capsys.readouterr()
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(progress, "PROGRESS_SECONDS", 0.0)
    assert cli.main(args) == 0
    watched = capsys.readouterr()
    assert quiet.err == "" and watched.out == quiet.out  # chunked draws give the same numbers
    updates = re.findall(r"\r  ([\d,]+) draws: P\(best\) [ab] \d\.\d{3} ± \d\.\d{3,4}", watched.err)
    assert len(updates) >= 3 and updates[-1] == "4,000", watched.err
    assert cli.main(args + ["--quiet"]) == 0  # a person at the terminal who asked for silence
    hushed = capsys.readouterr()
    assert hushed.err == "" and hushed.out == quiet.out


def test_quiet_silences_every_progress_line(monkeypatch):
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    hush = SimpleNamespace(json=False, quiet=True)
    assert progress.compare_progress(hush, ["a", "b"], 100.0) is False
    assert progress.sweep_progress(hush) is False
    assert not isinstance(progress.heartbeat(hush, "calibrate"), progress.Heartbeat)
    watch = SimpleNamespace(json=False, quiet=False)
    assert progress.compare_progress(watch, ["a", "b"], 100.0) and progress.sweep_progress(watch)
    assert isinstance(progress.heartbeat(watch, "calibrate"), progress.Heartbeat)


# ------------------------------------------------------------ sweeps

class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_sweep_progress_waits_then_counts_chunks():
    clock, stream = _Clock(), io.StringIO()
    bar = progress.ChunkProgress("sweep", stream, after=2.0, clock=clock)(5)
    clock.now = 1.0
    bar.update(1)
    assert stream.getvalue() == ""  # a run that answers within 2 s prints nothing
    clock.now = 4.2
    bar.update(2)
    bar.close()
    assert stream.getvalue() == "\r  sweep: 3 of 5 chunks, 4 s   \n"
    quick = io.StringIO()
    bar = progress.ChunkProgress("sweep", quick, after=2.0, clock=_Clock())(3)
    for _ in range(3):
        bar.update(1)
    bar.close()
    assert quick.getvalue() == ""


@pytest.mark.parametrize("json_out, terminal, shown", [(False, True, True), (True, True, False),
                                                       (False, False, False)])
def test_sweep_progress_only_for_a_person_watching(monkeypatch, json_out, terminal, shown):
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: terminal)
    shown_by = progress.sweep_progress(SimpleNamespace(json=json_out))
    assert isinstance(shown_by, progress.ChunkProgress) == shown and (shown or shown_by is False)


def test_sweep_at_a_terminal_reports_chunks_and_the_same_answer(tmp_path, capsys, monkeypatch):
    # 100,000 cost ratios: two automatic chunks of 2^16 points on a CPU.  An accelerator's automatic chunk
    # (up to 2^22 points) would hold them all, so it is set to the CPU's here: two chunks on any backend.
    from ecjax._src.sweep import engine

    monkeypatch.setattr(engine, "ACCELERATOR_CHUNK", engine.CPU_CHUNK)
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 500)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "a.npy", np.where(rng.random(500) < 0.8, y, 1 - y))
    np.save(tmp_path / "b.npy", np.where(rng.random(500) < 0.75, y, 1 - y))
    args = ["sweep", "--labels", str(tmp_path / "y.npy"), "--decisions", str(tmp_path / "a.npy"),
            str(tmp_path / "b.npy"), "--over", "cost-ratio", "--resolution", "100000"]
    assert cli.main(args) == 0
    quiet = capsys.readouterr()
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(progress, "sweep_progress", lambda a: progress.ChunkProgress("sweep", sys.stderr, after=0.0))
    assert cli.main(args) == 0
    watched = capsys.readouterr()
    assert quiet.err == "" and watched.out == quiet.out
    updates = re.findall(r"\r  sweep: (\d+) of (\d+) chunks, \d+ s", watched.err)
    assert len(updates) == 2 and updates[-1][0] == updates[-1][1] == "2", watched.err


def test_heartbeat_waits_then_beats_until_the_call_returns():
    import time

    stream = io.StringIO()
    with progress.Heartbeat("calibrate: fitting affine", stream, after=0.2, every=0.05):
        time.sleep(0.5)
    text = stream.getvalue()
    beats = re.findall(r"\r  calibrate: fitting affine, (\d+) s   ", text)
    assert len(beats) >= 3 and text.endswith("\n"), text
    assert text.replace("".join(f"\r  calibrate: fitting affine, {b} s   " for b in beats), "") == "\n"
    quick = io.StringIO()
    with progress.Heartbeat("calibrate", quick, after=0.5):
        pass  # answers before the line would help: nothing printed
    assert quick.getvalue() == ""


@pytest.mark.parametrize("json_out, terminal, shown", [(False, True, True), (True, True, False),
                                                       (False, False, False)])
def test_heartbeat_only_for_a_person_watching(monkeypatch, json_out, terminal, shown):
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: terminal)
    assert isinstance(progress.heartbeat(SimpleNamespace(json=json_out), "calibrate"), progress.Heartbeat) == shown


def test_calibrate_at_a_terminal_beats_and_writes_the_same_scores(tmp_path, capsys, monkeypatch):
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 600)
    s = rng.normal(size=(600, 3)) + 2.0 * np.eye(3)[y]
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "s.npy", s - np.log(np.exp(s).sum(1, keepdims=True)))
    outputs = {}
    for terminal in (False, True):
        monkeypatch.setattr(progress, "stderr_is_terminal", lambda: terminal)
        monkeypatch.setattr(progress, "PROGRESS_SECONDS", 0.0)  # beat from the start, however quick the fit
        out = tmp_path / f"cal{terminal}.npy"
        assert cli.main(["calibrate", "--scores", str(tmp_path / "s.npy"), "--labels", str(tmp_path / "y.npy"),
                         "--cv", "3", "--method", "matrix", "--output", str(out)]) == 0
        captured = capsys.readouterr()
        outputs[terminal] = (np.load(out), captured.out)
        assert ("calibrate: fitting matrix on 3 folds, " in captured.err) == terminal, captured.err
    np.testing.assert_array_equal(outputs[True][0], outputs[False][0])
    assert outputs[True][1].replace(str(tmp_path / "calTrue.npy"), "X") == \
        outputs[False][1].replace(str(tmp_path / "calFalse.npy"), "X")


def test_progress_lines_for_the_bootstrap_and_the_sweep_and_the_same_answer(tmp_path, capsys, monkeypatch):
    # `metrics --bootstrap ... --progress S` and `sweep --progress S`: plain lines on stderr (also when it is a
    # file), and the printed answer that of the run without them.  A time of 0 between lines: every chunk says one
    # (the fake clock of ProgressLines is tested in tests/test_draw_runner.py).
    from ecjax._src.sweep import engine

    monkeypatch.setattr(engine, "ACCELERATOR_CHUNK", engine.CPU_CHUNK)  # two chunks of points on any backend
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 400)
    llr = 2.0 * (y - 0.5) * 2 + rng.normal(size=400)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "s.npy", np.stack([-np.logaddexp(0, llr), -np.logaddexp(0, -llr)], 1))
    np.save(tmp_path / "a.npy", np.where(rng.random(400) < 0.8, y, 1 - y))
    np.save(tmp_path / "b.npy", np.where(rng.random(400) < 0.75, y, 1 - y))
    runs = {
        "ecjax metrics --bootstrap": ["metrics", "--labels", str(tmp_path / "y.npy"), "--scores", str(tmp_path / "s.npy"),
                                      "--bootstrap", "auc", "--bootstrap-draws", "400", "--json"],
        "ecjax sweep": ["sweep", "--labels", str(tmp_path / "y.npy"), "--decisions", str(tmp_path / "a.npy"),
                        str(tmp_path / "b.npy"), "--over", "cost-ratio", "--resolution", "100000", "--json"],
    }
    for what, args in runs.items():
        assert cli.main(args) == 0
        quiet = capsys.readouterr()
        assert cli.main(args + ["--progress", "1e-9"]) == 0
        lined = capsys.readouterr()
        assert lined.out == quiet.out and quiet.err == ""
        lines = lined.err.splitlines()
        assert lines and all(line.startswith(f"{what}: ") for line in lines), lined.err
        assert "\r" not in lined.err
