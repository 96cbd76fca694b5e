"""Shared fixtures: the real classifier outputs in ``../shared/data``.

The data folder lives beside the repository (CI puts it there); it is never
copied into the repository.  ``ECJAX_DATA_DIR`` names another folder (a
machine that holds only a copy of the working tree, as the lent GPU of
``benchmarks/gpu_check.sh`` with the data in the git-ignored ``.gpu_data/``).
Tests that need it are skipped, with the reason, only when the folder is
genuinely absent.
"""

from __future__ import annotations

import os
import pathlib
import tempfile

# The suite runs in two worker processes (pyproject's addopts).  On a GPU each JAX process would otherwise reserve
# 75 % of the device's memory at start, and the second worker would fail to allocate.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# The command line keeps a compilation cache in the user's cache folder; the tests keep theirs in a temporary one
# (made once by the controller; the workers and the command lines they start inherit it).
os.environ.setdefault("ECJAX_COMPILATION_CACHE_DIR", tempfile.mkdtemp(prefix="ecjax-test-compilation-cache-"))
# The same folder is JAX's own cache for every process of the session: the two workers and the examples, notebooks
# and multi-process runs they start load the large programs (the Gamma sampler, about 5 s to compile) that another
# process compiled, instead of compiling them again. A size bound turns on JAX's file lock, so concurrent processes
# never read a half-written entry. Tests of the command line's own cache start their processes without it.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.environ["ECJAX_COMPILATION_CACHE_DIR"])
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(2**31))
# Only the programs over JAX's default second of compilation are kept (not every program, as the command line
# keeps them): with a size bound, JAX's cache scans every entry of the folder under its lock at each write (glob,
# stat and a read per entry), and a session that kept every program wrote about 6,400 entries, the last writes
# taking 0.15 s each: about 460 CPU s of a 2,200 CPU s lane, most of it with the other worker waiting on the lock.
# One BLAS and OpenMP thread a process: the suite runs as many workers as cores, and each OpenBLAS (numpy, scipy)
# or OpenMP (torch, under psrcal) pool as wide as the machine spins its idle threads on the other worker's core. On
# small matrices it mostly spins: scipy's float64 L-BFGS-B reference of the matrix calibrator (test_calibration.py)
# took 6.1 CPU s and 27.9 s with the default pools on the loaded 2-core machine, 0.45 CPU s and 3.4 s with one
# thread. The variables reach the processes the tests start and libraries imported later (torch); numpy's
# OpenBLAS is loaded before this file (by pytest's plugins), so its pool is narrowed at run time.
for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import numpy as np
import pytest
from scipy.special import log_softmax, logsumexp
from threadpoolctl import threadpool_limits

threadpool_limits(limits=int(os.environ["OPENBLAS_NUM_THREADS"]), user_api="blas")

DATA_DIR = pathlib.Path(os.environ.get("ECJAX_DATA_DIR") or
                        pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data").resolve()


# The log files as the session started: without workers a report is written while a test's monkeypatch.chdir still
# holds, where a relative path would name another folder (or none).
_LOG_PATHS = {(name, os.environ[name]): os.path.abspath(os.environ[name])
              for name in ("ECJAX_FAILURE_LOG", "ECJAX_DURATION_LOG") if os.environ.get(name)}


def _log_path(name):
    value = os.environ.get(name)
    return (_LOG_PATHS.get((name, value)) or os.path.abspath(value)) if value else None


def pytest_runtest_logreport(report):
    """With ``ECJAX_FAILURE_LOG=FILE``, each failure's traceback is appended to FILE as it happens; with
    ``ECJAX_DURATION_LOG=FILE``, each test phase's seconds (a relative FILE: in the folder the session started in).

    pytest prints tracebacks and ``--durations`` only at the end of a
    session: a run stopped at its time limit (a lent GPU,
    ``benchmarks/gpu_check.sh``) would otherwise name its failures (``-v``)
    without saying why they failed, nor where its time went.
    """
    path = _log_path("ECJAX_FAILURE_LOG")
    # Under xdist a report reaches this hook in its worker and again in the controller: the controller writes.
    controller = "PYTEST_XDIST_WORKER" not in os.environ
    if path and report.failed and controller:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"=== {report.nodeid} ({report.when})\n{report.longreprtext}\n")
    # With ECJAX_DURATION_LOG=FILE, each phase's seconds as it ends: a run stopped at its limit (the H100 run of
    # 2026-11-28 was half done after 388 s) still says where its time went, which --durations prints only at the end.
    durations = _log_path("ECJAX_DURATION_LOG")
    if durations and controller:
        with open(durations, "a", encoding="utf-8") as log:
            log.write(f"{report.duration:.3f} {report.when} {report.nodeid}\n")


# Score type of each dataset (``../shared/data/README.md``).
DATASETS = {
    "cifar10_resnet-20": "logits",
    "cifar10_repvgg_a2": "logits",
    "cifar10_vgg19_bn": "logits",
    "sst2_gpt2": "log_posteriors",
    "sst2_gpt2_4shot": "log_posteriors",
    "pneumoniamnist_resnet50": "log_posteriors",
}


def load_dataset(name: str):
    """``(targets, scores, score_type)`` of one dataset, loaded without pickle."""
    folder = DATA_DIR / name
    if not folder.is_dir():
        pytest.skip(f"real-score data not found: {folder} is absent (expected ../shared/data beside the repo)")
    scores = np.load(folder / "scores.npy", allow_pickle=False)
    targets = np.load(folder / "targets.npy", allow_pickle=False)
    return targets, scores, DATASETS[name]


@pytest.fixture(scope="session")
def data_dir():
    """Path of ``../shared/data``; skips when the folder is absent."""
    if not DATA_DIR.is_dir():
        pytest.skip(f"real-score data not found: {DATA_DIR} is absent (expected ../shared/data beside the repo)")
    return DATA_DIR


@pytest.fixture(scope="session", params=sorted(DATASETS))
def dataset(request):
    """Each dataset of ``../shared/data`` in turn: ``(name, targets, scores, score_type)``."""
    targets, scores, score_type = load_dataset(request.param)
    return request.param, targets, scores, score_type


# Two runs of one computation on a GPU may differ in the last float32 digits: XLA adds float scatter-adds (weighted
# counts, histogram bins) with atomics in an order that changes from run to run (an H100, 2026-11-27: an ECE of
# 0.14928104 then 0.14928105, label-shift intervals 3.5e-7 apart).  XLA's --xla_gpu_deterministic_ops would fix the
# order but gave wrong numbers there (a sweep's decision flips 2664 against 0), so ecjax does not use it.  On a CPU
# every run repeats exactly; elsewhere, records of separate runs agree to 8 float32 ulps.
def run_to_run_rtol() -> float:
    """0 on a CPU (runs repeat exactly); 8 float32 ulps, ``2^-20``, on an accelerator."""
    import jax

    return 0.0 if jax.default_backend() == "cpu" else 2.0**-20


def same_across_runs(a, b, rtol=None):
    """Whether the JSON-like records ``a`` and ``b`` of two runs agree: numbers to :func:`run_to_run_rtol` (exactly
    on a CPU), structure and strings exactly."""
    if rtol is None:
        rtol = run_to_run_rtol()
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_across_runs(a[k], b[k], rtol) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_across_runs(x, y, rtol) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return a == b or (rtol > 0 and np.isclose(a, b, rtol=rtol, atol=0.0))
    return a == b


def run_cli(*args, cwd):
    """``(exit code, stdout, stderr)`` of ``ecjax ARGS`` run in this process from ``cwd``, as the console script
    runs it (``ecjax.cli.main``): the compiled kernels of earlier tests are reused instead of compiled again in a
    new interpreter.  Tests of signals, of the interpreter's exit and of a fresh process start real processes."""
    import contextlib
    import io

    from ecjax import cli

    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main([str(a) for a in args])
    finally:
        os.chdir(here)
    return code, out.getvalue(), err.getvalue()


def run_script(path, *, cwd):
    """What the Python script ``path`` prints run as ``python PATH`` from ``cwd``, but in this process
    (``runpy.run_path`` as ``__main__``): the compiled kernels of earlier tests are reused instead of compiled again
    in a new interpreter (tests/test_examples.py's medical_abstention: 8.8 CPU s in a new process, 6.3 here).  The script gets
    fresh globals, so a name it forgets to import still fails; an exception it raises fails the test."""
    import contextlib
    import io
    import runpy

    out = io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:  # np.printoptions: what the script sets for its printing is undone for the tests after it
        with contextlib.redirect_stdout(out), np.printoptions():
            runpy.run_path(str(path), run_name="__main__")
    finally:
        os.chdir(here)
    return out.getvalue()


# Shared by the tests of the score functions (tests/test_scores_*.py).
def _logpost64(scores, score_type):
    s = np.asarray(scores, np.float64)
    return log_softmax(s, axis=1) if score_type == "logits" else s - logsumexp(s, 1, keepdims=True)


def _gaussian_binary(rng, n=2000, sep=1.5, p1=0.3):
    y = (rng.uniform(size=n) < p1).astype(np.int64)
    llr = rng.normal(0.0, 1.0, n) + sep * (2 * y - 1)
    return y, llr
