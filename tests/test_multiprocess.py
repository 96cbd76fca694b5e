"""More than one process: a sharded sweep and ``metric_reliability`` across two JAX processes.

Two local processes (``tests/_multiprocess_worker.py``) join through
``jax.distributed.initialize`` with the coordinator on ``127.0.0.1`` (a free
port picked here) and the CPU collectives JAX provides (gloo); each has 2
CPU devices (``XLA_FLAGS=--xla_force_host_platform_device_count=2``), so the
global mesh has 4 devices in 2 processes.  Each process runs the same
``sweep_counts``, ``sweep_scores`` (``return_values=True``: per-point values
gathered across processes) and ``metric_reliability`` and writes its results
with ``np.savez``.  Both processes must hold the same results, equal to this
process's single-process run: exactly for per-point values, winners, counts,
flips, min/max and the Monte Carlo fractions; the means to ``rtol=1e-6``
(float32 sums grouped per device before the cross-device reduction, so the
last bit may differ; measured 7e-8).

Every subprocess is bounded by :data:`TIMEOUT` seconds and killed on any
failure, so a broken coordinator or collective cannot hang the suite.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import jax

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "_multiprocess_worker.py"
NUM_PROCESSES = 2
LOCAL_DEVICES = 2
TIMEOUT = 240  # seconds for all workers together (about 25 s on 2 busy cores)
MEANS = ("counts_mean", "scores_mean")  # float32 sums: grouped per device, near-equal (see the docstring)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_workers(tmp_path):
    """Start the workers, wait for all of them (bounded), kill every one still running on any failure."""
    port = _free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"--xla_force_host_platform_device_count={LOCAL_DEVICES}",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    for var in ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "JAX_LOCAL_DEVICE_IDS"):
        env.pop(var, None)
    outs = [tmp_path / f"process_{i}.npz" for i in range(NUM_PROCESSES)]
    logs = [tmp_path / f"process_{i}.log" for i in range(NUM_PROCESSES)]
    procs = []
    try:
        for i in range(NUM_PROCESSES):
            with open(logs[i], "wb") as log:  # a file, not a pipe: a chatty worker cannot block on a full pipe
                procs.append(subprocess.Popen(
                    [sys.executable, str(WORKER), str(i), str(NUM_PROCESSES), str(port), str(LOCAL_DEVICES),
                     str(outs[i])], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(tmp_path)))
        deadline = time.monotonic() + TIMEOUT
        while any(p.poll() is None for p in procs):
            if any(p.poll() not in (None, 0) for p in procs):
                break  # one failed: the others would wait for it in a collective
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        codes = [p.poll() for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()

    def report():
        return "\n".join(f"--- process {i} (exit {c}):\n{logs[i].read_text(errors='replace')[-3000:]}"
                         for i, c in enumerate(codes))

    failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
    assert not failed, f"process(es) {failed} failed; the others were killed\n{report()}"
    assert None not in codes, f"workers still running after {TIMEOUT} s (killed)\n{report()}"
    return [dict(np.load(o, allow_pickle=False)) for o in outs]


def _reference():
    """The same computation in this process (one process, its own devices)."""
    spec = importlib.util.spec_from_file_location("_multiprocess_worker", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # imported without its __main__ block: no jax.distributed here
    assert jax.process_count() == 1
    return module.run(None)


@pytest.mark.slow  # ~48 s (two JAX processes over gloo); one process with four devices is checked by test_sweep_engine
def test_two_processes_give_the_single_process_results(tmp_path):
    results = _run_workers(tmp_path)
    # Genuinely two processes, one global device set.
    for i, res in enumerate(results):
        assert int(res["meta_process_index"]) == i
        assert int(res["meta_process_count"]) == NUM_PROCESSES
        assert int(res["meta_local_device_count"]) == LOCAL_DEVICES
        assert int(res["meta_device_count"]) == NUM_PROCESSES * LOCAL_DEVICES
        assert res["meta_allgather"].tolist() == list(range(NUM_PROCESSES))  # a gloo collective ran
        assert int(res["counts_devices"]) == int(res["scores_devices"]) == NUM_PROCESSES * LOCAL_DEVICES
    # Every process holds the same (global) results, bit for bit.
    first = results[0]
    for res in results[1:]:
        for key in first:
            if not key.startswith("meta_process_index"):
                np.testing.assert_array_equal(res[key], first[key], err_msg=key)
    # ... equal to one process.
    one = _reference()
    assert set(one) <= set(first)
    for key, ref in one.items():
        got = first[key]
        if key.endswith("_devices"):
            assert int(ref) == jax.device_count()
        elif key in MEANS:
            np.testing.assert_allclose(got, ref, rtol=1e-6, err_msg=key)
        else:
            assert got.shape == np.shape(ref), key
            np.testing.assert_array_equal(got, ref, err_msg=key)
    fractions = dict(zip(first["reliability_names"].tolist(), first["reliability_fraction"]))
    assert 0.05 < fractions["accuracy"] < 0.12  # Dyrland et al. (2022): 8.7 % (here 5 * 4096 + 17 pairs)
    assert first["reliability_fraction"][-3] == 0.0  # the exact utility matrix (sd 0) never ranks wrongly
