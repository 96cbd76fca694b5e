"""Progress at a terminal: `ecjax compare` shows draws done and the running P(best) with its error, `ecjax sweep`
the chunks done; on stderr, only when a person watches a run that takes a while; the printed answer is the same
with and without it.

Reference: P(best) of the leader and its binomial error computed with numpy from the same draws.
"""

import io
import re
from types import SimpleNamespace

import numpy as np
import pytest

from ecjax import cli


def test_progress_line_shows_the_running_answer():
    rng = np.random.default_rng(0)
    yields = rng.normal(size=(4000, 2)) + np.array([0.0, 0.3])
    stream = io.StringIO()
    bar = cli.DrawProgress(["a", "b"], stream)(10)
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
    monkeypatch.setattr(cli, "_stderr_is_terminal", lambda: terminal)
    progress = cli._compare_progress(SimpleNamespace(json=json_out), ["a", "b"], seconds)
    assert isinstance(progress, cli.DrawProgress) == shown and (shown or progress is False)


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
    monkeypatch.setattr(cli, "_stderr_is_terminal", lambda: True)
    monkeypatch.setattr(cli, "_PROGRESS_SECONDS", 0.0)
    assert cli.main(args) == 0
    watched = capsys.readouterr()
    assert quiet.err == "" and watched.out == quiet.out  # chunked draws give the same numbers
    updates = re.findall(r"\r  ([\d,]+) draws: P\(best\) [ab] \d\.\d{3} ± \d\.\d{3,4}", watched.err)
    assert len(updates) >= 3 and updates[-1] == "4,000", watched.err


# ------------------------------------------------------------ sweeps

class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_sweep_progress_waits_then_counts_chunks():
    clock, stream = _Clock(), io.StringIO()
    bar = cli.ChunkProgress("sweep", stream, after=2.0, clock=clock)(5)
    clock.now = 1.0
    bar.update(1)
    assert stream.getvalue() == ""  # a run that answers within 2 s prints nothing
    clock.now = 4.2
    bar.update(2)
    bar.close()
    assert stream.getvalue() == "\r  sweep: 3 of 5 chunks, 4 s   \n"
    quick = io.StringIO()
    bar = cli.ChunkProgress("sweep", quick, after=2.0, clock=_Clock())(3)
    for _ in range(3):
        bar.update(1)
    bar.close()
    assert quick.getvalue() == ""


@pytest.mark.parametrize("json_out, terminal, shown", [(False, True, True), (True, True, False),
                                                       (False, False, False)])
def test_sweep_progress_only_for_a_person_watching(monkeypatch, json_out, terminal, shown):
    monkeypatch.setattr(cli, "_stderr_is_terminal", lambda: terminal)
    progress = cli._sweep_progress(SimpleNamespace(json=json_out))
    assert isinstance(progress, cli.ChunkProgress) == shown and (shown or progress is False)


def test_sweep_at_a_terminal_reports_chunks_and_the_same_answer(tmp_path, capsys, monkeypatch):
    # 100,000 cost ratios: more than one automatic chunk (2^16 points per device) on a CPU.
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 500)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "a.npy", np.where(rng.random(500) < 0.8, y, 1 - y))
    np.save(tmp_path / "b.npy", np.where(rng.random(500) < 0.75, y, 1 - y))
    args = ["sweep", "--labels", str(tmp_path / "y.npy"), "--decisions", str(tmp_path / "a.npy"),
            str(tmp_path / "b.npy"), "--over", "cost-ratio", "--resolution", "100000"]
    assert cli.main(args) == 0
    quiet = capsys.readouterr()
    monkeypatch.setattr(cli, "_stderr_is_terminal", lambda: True)
    monkeypatch.setattr(cli, "_sweep_progress", lambda a: cli.ChunkProgress("sweep", cli.sys.stderr, after=0.0))
    assert cli.main(args) == 0
    watched = capsys.readouterr()
    assert quiet.err == "" and watched.out == quiet.out
    updates = re.findall(r"\r  sweep: (\d+) of (\d+) chunks, \d+ s", watched.err)
    assert len(updates) >= 2 and updates[-1][0] == updates[-1][1] == str(len(updates)), watched.err
