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
# bench_bootstrap_sizes: ~20-30 s at --tiny (four child processes compiling bootstrap and results programs); its
# kernels are tested against scikit-learn in tests/test_bootstrap_real_sizes.py (default lane).
# bench_chunks: ~27 s at --tiny; the chunked engine is tested in tests/test_sweep_sweeps.py (default lane).
SLOW = {"bench_bootstrap_metric", "bench_bootstrap_sizes", "bench_chunks", "bench_calibration", "bench_draws",
        "bench_interactive", "bench_ranking",
        "bench_real_sizes",  # ~30 s at --tiny: four comparisons compiled; their draws are tested in test_compare_real_sizes
        "bench_rate_draws", "bench_sweep",
        "bench_many_classes",  # ~30 s at --tiny: three processes compiling compare; tested in test_many_classes
        }
BENCHMARK_PARAMS = [pytest.param(b, marks=pytest.mark.slow) if b.stem in SLOW else b for b in BENCHMARKS]


@pytest.mark.parametrize("script", BENCHMARK_PARAMS, ids=lambda p: p.stem)
def test_benchmark_runs_tiny(script):
    proc = subprocess.run([sys.executable, str(script), "--tiny"], capture_output=True, text=True, timeout=600,
                          cwd=script.parent)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "x |" in proc.stdout or "ratio" in proc.stdout.lower(), proc.stdout[-2000:]


ROOT = Path(__file__).resolve().parents[1]


def test_every_benchmark_takes_a_size():
    # --size tiny|small|full, --tiny being --size tiny: what benchmarks/gpu_check.sh passes.
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from _common import parser
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    p = parser("x")
    small, tiny, full = p.parse_args(["--size", "small"]), p.parse_args(["--tiny"]), p.parse_args([])
    assert (small.small, small.tiny, tiny.size, tiny.tiny, full.size) == (True, False, "tiny", True, "full")
    with pytest.raises(SystemExit):
        p.parse_args(["--size", "huge"])
    for script in BENCHMARKS:
        assert "parser(" in script.read_text(), f"{script.name} does not use _common.parser (no --size)"


@pytest.mark.slow  # reason: ~3 min even at tiny sizes (nine fresh processes compiling their kernels)
def test_gpu_check_runs_every_step_at_tiny_size(tmp_path):
    import os

    env = dict(os.environ, GPU_CHECK_TINY="1", GPU_CHECK_LIMIT_SCALE="6", PYTHONPATH=str(ROOT))
    proc = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), str(tmp_path)], capture_output=True,
                          text=True, timeout=1500, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = (tmp_path / "report.txt").read_text()
    steps = [line for line in report.splitlines() if line.startswith("--- ") and "skipped" not in line]
    # The seven tiny benchmarks, then accuracy, bench_core, bench_chunks, bench_draws --ratio and profile_per_draw.
    names = [line[4:].split(":")[0] for line in steps]
    assert names == [f"{b} --tiny" for b in ("bench_sweep", "bench_ranking", "bench_calibration",
                                             "bench_bootstrap_metric", "bench_rate_draws", "bench_interactive",
                                             "bench_draws")] + [
        "gpu_accuracy --size tiny", "bench_core --size tiny", "bench_chunks --size tiny",
        "bench_draws --ratio --draws 200", "profile_per_draw --shape 200 5 --draws 128 --block 16 --trace"], names
    assert all(" rc 0 " in line for line in steps), "\n".join(steps)
    assert "gpu-accuracy: 7/7 checks pass" in report and "NEC / read =" in report
    assert len(list(tmp_path.iterdir())) <= 8  # what comes back from the device machine


def test_trace_summary_reads_a_device_trace(tmp_path):
    import gzip
    import json

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import trace_summary
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    folder = tmp_path / "plugins" / "profile" / "run"
    folder.mkdir(parents=True)
    # Device kernels on two streams: busy [0, 150) and [400, 500) us, one idle gap [150, 400); a host event over
    # [140, 440) overlaps the gap for 250 us, another at [0, 100) not at all.
    events = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}},
              {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/host:CPU"}},
              {"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 100, "name": "fusion"},
              {"ph": "X", "pid": 1, "tid": 2, "ts": 50, "dur": 100, "name": "gemm"},
              {"ph": "X", "pid": 1, "tid": 1, "ts": 400, "dur": 100, "name": "fusion"},
              {"ph": "X", "pid": 2, "tid": 9, "ts": 140, "dur": 300, "name": "sample_class_priors"},
              {"ph": "X", "pid": 2, "tid": 9, "ts": 0, "dur": 100, "name": "dispatch"}]
    with gzip.open(folder / "perfetto_trace.json.gz", "wt") as f:
        json.dump({"traceEvents": events}, f)
    text = trace_summary.summarize(str(tmp_path))
    assert "span 0.50 ms, busy 0.25 ms (50 %), 1 idle gaps" in text and "the longest 0.250 ms" in text, text
    assert "fusion 0.20; gemm 0.10" in text and "0.25  sample_class_priors" in text and "dispatch" not in text, text
    # A CPU's trace has no device process.
    events = [e for e in events if e["pid"] == 2]
    with gzip.open(folder / "perfetto_trace.json.gz", "wt") as f:
        json.dump({"traceEvents": events}, f)
    assert "no device process" in trace_summary.summarize(str(tmp_path))
