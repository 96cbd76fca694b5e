"""Every benchmark at its tiny size (six of them in the slow lane): they must run and print their ratio table.

Benchmarks are not timed tests (DESIGN.md): this only checks that each one runs end to end,
compares ecjax with its anchor and prints a ratio.
"""

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"))
# These take 25-35 s each even at --tiny (a fresh process compiling calibration, ranking, draw or sweep kernels
# and running their anchors); their code paths are tested against references in the default lane, so the
# smoke runs are in the slow lane.  The others stay in the default lane.
# bench_bootstrap_metric: 15-20 s at --tiny, nearly all of it compiling four bootstrap programs; its kernels are
# tested against scikit-learn and confidence-intervals in tests/test_prob_bootstrap.py (default lane).
# bench_chunks: ~27 s at --tiny; the chunked engine is tested in tests/test_sweep_sweeps.py (default lane).
SLOW = {"bench_bootstrap_metric", "bench_chunks", "bench_calibration", "bench_draws", "bench_interactive", "bench_ranking",
        "bench_rate_draws", "bench_sweep"}
BENCHMARK_PARAMS = [pytest.param(b, marks=pytest.mark.slow) if b.stem in SLOW else b for b in BENCHMARKS]


@pytest.mark.parametrize("script", BENCHMARK_PARAMS, ids=lambda p: p.stem)
def test_benchmark_runs_tiny(script):
    proc = subprocess.run([sys.executable, str(script), "--tiny"], capture_output=True, text=True, timeout=600,
                          cwd=script.parent)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "x |" in proc.stdout or "ratio" in proc.stdout.lower(), proc.stdout[-2000:]
