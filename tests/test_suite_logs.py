"""The suite's own logs for runs stopped at a time limit (a lent GPU): failures and durations written as they end."""

from __future__ import annotations

from types import SimpleNamespace

import conftest


def _report(nodeid, when, duration, failed=False):
    return SimpleNamespace(nodeid=nodeid, when=when, duration=duration, failed=failed, longreprtext="E   boom")


def test_failure_and_duration_logs_are_written_as_each_phase_ends(tmp_path, monkeypatch):
    failures, durations = tmp_path / "failures.log", tmp_path / "durations.log"
    monkeypatch.setenv("ECJAX_FAILURE_LOG", str(failures))
    monkeypatch.setenv("ECJAX_DURATION_LOG", str(durations))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    conftest.pytest_runtest_logreport(_report("tests/a.py::t", "setup", 0.25))
    conftest.pytest_runtest_logreport(_report("tests/a.py::t", "call", 1.5, failed=True))
    assert durations.read_text().splitlines() == ["0.250 setup tests/a.py::t", "1.500 call tests/a.py::t"]
    assert failures.read_text() == "=== tests/a.py::t (call)\nE   boom\n"
    # A worker's report reaches the controller too: only the controller writes, so nothing is written twice.
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    conftest.pytest_runtest_logreport(_report("tests/a.py::u", "call", 2.0, failed=True))
    assert len(durations.read_text().splitlines()) == 2 and failures.read_text().count("===") == 1
    # A relative path names the folder the session started in, not the one a test has moved to (monkeypatch.chdir).
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    monkeypatch.setenv("ECJAX_DURATION_LOG", "relative.log")
    monkeypatch.setattr(conftest, "_LOG_PATHS", {("ECJAX_DURATION_LOG", "relative.log"): str(durations)})
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    conftest.pytest_runtest_logreport(_report("tests/a.py::v", "call", 3.0))
    assert durations.read_text().splitlines()[-1] == "3.000 call tests/a.py::v"
    assert not (tmp_path / "elsewhere" / "relative.log").exists()
