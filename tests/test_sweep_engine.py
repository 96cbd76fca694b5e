"""The sweep engine at scale (``ecjax.sweep.engine``): memory-bounded chunking and sharding over (simulated) devices.

* A 10^7-point sweep keeps only chunk-sized arrays alive (checked with
  ``jax.live_arrays`` at every chunk) and its winner counts equal the closed
  form (the EC of fixed counts is linear in the cost ratio); 10^8 points in
  the slow suite.
* The same sweeps run in a CPU subprocess with
  ``XLA_FLAGS=--xla_force_host_platform_device_count=4`` on 4 devices give
  results identical to a 1-device CPU subprocess (both on CPU, so a GPU
  machine compares like with like).
* The automatic chunk size follows the backend and the memory it reports.

Bad input to the sweeps is tested in ``test_sweep_inputs.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import jax

from ecjax import InputError
from ecjax.sweep import SweepSettings, grids, sweep_counts

ROOT = Path(__file__).resolve().parents[1]
COUNTS = np.array([[[80, 20], [10, 90]], [[95, 5], [30, 70]], [[60, 40], [3, 97]]])


def closed_form_wins(counts, r):
    """Winner at each cost ratio r for costs [[0, 1], [r, 0]] with data priors, float64."""
    counts = np.asarray(counts, np.float64)
    p = counts.sum(-1) / counts.sum((-2, -1))[:, None]
    rate = counts / counts.sum(-1, keepdims=True)
    a = p[:, 0] * rate[:, 0, 1]
    b = p[:, 1] * rate[:, 1, 0]
    ec = a[None, :] + b[None, :] * r[:, None]
    return np.bincount(ec.argmin(1), minlength=len(counts))


def _scale_check(num_points, chunk_size):
    peak = []

    class Watch:  # a "progress bar" that measures the live JAX arrays at every chunk
        def __init__(self, total):
            self.total = total

        def update(self, n):
            peak.append(sum(a.nbytes for a in jax.live_arrays()))

        def close(self):
            pass

    axis = grids.cost_ratios(1e-2, 1e2, num_points)
    res = sweep_counts(COUNTS, axis, settings=SweepSettings(chunk_size=chunk_size, return_values=False, progress=Watch))
    assert res.values is None and res.info["chunk"] == chunk_size
    assert len(peak) == res.info["num_chunks"] == -(-num_points // chunk_size)
    # Everything alive on the device is O(chunk), far below the O(points) an unchunked sweep would hold.
    assert max(peak) < 64 * chunk_size * 4 < num_points * 4
    wins = closed_form_wins(COUNTS, np.geomspace(1e-2, 1e2, num_points))
    # float32 vs float64 can disagree only at points within rounding of the two crossings.
    assert np.abs(res.win_counts - wins).max() <= 4
    assert res.num_points == num_points
    assert res.flip_counts[0, 1] >= 1


def test_ten_million_points_in_fixed_memory():
    _scale_check(10**7, 2**16)


@pytest.mark.slow
def test_hundred_million_points_in_fixed_memory():
    _scale_check(10**8, 2**18)


# ------------------------------------------------------------------ sharding

SHARDED_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import jax
    from ecjax.sweep import SweepSettings, grids, metric_reliability, sweep_counts, sweep_scores, utility_space_map
    from ecjax._src.sweep import reliability as R

    def run(devices):
        rng = np.random.default_rng(0)
        counts = rng.integers(1, 60, (3, 2, 2))
        labels = rng.integers(0, 2, (3, 500))
        llr = rng.normal(size=(3, 500)) + labels
        logits = rng.normal(size=(2, 300, 3))
        labels3 = rng.integers(0, 3, 300)
        costs3 = rng.uniform(0.1, 2, (40, 3, 3))
        out = {}
        r = sweep_counts(counts, grids.cost_ratios(0.01, 100, 1000), priors=grids.effective_priors(0.1, 0.9, 7),
                         settings=SweepSettings(chunk_size=50, devices=devices))
        out["counts"] = (r.values, r.winners, r.win_counts, r.pairwise_wins, r.flip_counts, r.mean, r.info)
        r = sweep_scores(labels, llr, np.array([[0., 1.], [1., 0.]]), priors=grids.effective_priors(0.05, 0.95, 801),
                         score_type="llr", settings=SweepSettings(chunk_size=25, devices=devices))
        out["threshold"] = (r.values, r.winners, r.win_counts, r.flip_counts, r.mean, r.info)
        r = sweep_scores(labels3, logits, costs3, score_type="logits",
                         settings=SweepSettings(chunk_size=4, devices=devices))
        out["dense"] = (r.values, r.winners, r.win_counts, r.mean, r.info)
        m = utility_space_map(counts, resolution=41, settings=SweepSettings(chunk_size=100, devices=devices))
        out["plane"] = (m.yields, m.winners, m.win_fraction, m.result.info)
        rel = metric_reliability(jax.random.key(0), num_pairs=5 * R.BLOCK + 17, utility_error_sd=[0.1, 0.2],
                                 chunk_size=R.BLOCK, devices=devices)
        out["reliability"] = {k: (np.asarray(v.fraction).tolist(), np.asarray(v.standard_error).tolist())
                              for k, v in rel.items()}
        return out

    if __name__ == "__main__":
        devices = int(sys.argv[1])
        assert jax.device_count() == int(sys.argv[2]), jax.devices()
        out = run(devices)
        arrays = {}
        for key, val in out.items():
            if key == "reliability":
                continue
            for i, a in enumerate(val):
                if isinstance(a, dict):
                    arrays[f"{key}_info"] = np.array(json.dumps(a))
                else:
                    arrays[f"{key}_{i}"] = np.asarray(a)
        np.savez(sys.argv[3], **arrays, reliability=np.array(json.dumps(out["reliability"])))
    """
)


class _FakeDevice:
    def __init__(self, platform, memory):
        self.platform, self._memory = platform, memory

    def memory_stats(self):
        return None if self._memory is None else {"bytes_limit": self._memory, "bytes_in_use": 0}


def test_automatic_chunk_follows_the_backend_and_its_memory():
    from ecjax._src.sweep import engine

    assert engine.auto_chunk_size([_FakeDevice("cpu", None)]) == engine.CPU_CHUNK
    assert engine.auto_chunk_size([_FakeDevice("cpu", None)], cpu_chunk=256) == 256
    # An H100 reports ~80 GB: the 2^22 points measured best there fit easily.
    assert engine.auto_chunk_size([_FakeDevice("gpu", 80 * 2**30)], point_bytes=112) == 2**22
    # 1 GiB and 2 KB per point: (2^30 / 8) / 2^11 = 2^16 points, a power of two that fits.
    assert engine.auto_chunk_size([_FakeDevice("gpu", 2**30)], point_bytes=2**11) == 2**16
    assert engine.auto_chunk_size([_FakeDevice("tpu", 2**30)], point_bytes=2**11 + 1) == 2**15
    assert engine.auto_chunk_size([_FakeDevice("gpu", None)]) == engine.ACCELERATOR_CHUNK
    assert engine.auto_chunk_size([_FakeDevice("gpu", 100)], point_bytes=10**6) == 1
    # A sweep with chunk_size=None on the backend this runs on: on a CPU, chunks of the CPU default (as many as
    # it needs); on an accelerator with the memory of a GPU (>= 8 GiB) the sweep fits one step of at most 2^22.
    num_points = 3 * engine.CPU_CHUNK + 5
    res = sweep_counts(COUNTS, grids.cost_ratios(0.1, 10, num_points), settings=SweepSettings(return_values=False))
    device = jax.devices()[0]
    if device.platform == "cpu":
        assert res.info["chunk"] == engine.CPU_CHUNK and res.info["num_chunks"] == 4
    elif (engine.device_memory(device) or 0) >= 8 * 2**30:
        assert res.info["chunk"] == num_points and res.info["num_chunks"] == 1
    else:  # a small accelerator: a power of two no larger than the accelerator chunk
        per_device = res.info["chunk"] // res.info["num_devices"]
        assert res.info["chunk"] == num_points or (per_device & (per_device - 1) == 0
                                                   and per_device <= engine.ACCELERATOR_CHUNK)
        assert res.info["num_chunks"] == -(-num_points // res.info["chunk"])


def test_devices_of_another_platform_are_accepted_and_mixed_platforms_refused():
    from ecjax._src.sweep import engine

    cpu = jax.devices("cpu")
    assert engine.resolve_devices(cpu[:1]) == tuple(cpu[:1])
    with pytest.raises(InputError, match="devices"):
        engine.resolve_devices(["not a device"])


def _run_sharded_script(script, num_devices, out):
    # Both runs on CPU in their own process: like is compared with like on a GPU machine too.
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT),
               XLA_FLAGS=f"--xla_force_host_platform_device_count={num_devices}")
    proc = subprocess.run([sys.executable, str(script), str(num_devices), str(num_devices), str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return np.load(out)


def test_four_simulated_devices_give_identical_results(tmp_path):
    script = tmp_path / "sharded_sweep.py"
    script.write_text(SHARDED_SCRIPT)
    four = _run_sharded_script(script, 4, tmp_path / "out_4.npz")
    one = _run_sharded_script(script, 1, tmp_path / "out_1.npz")
    for key in one.files:
        if key.endswith("_info"):
            assert json.loads(str(four[key]))["num_devices"] == 4 and json.loads(str(one[key]))["num_devices"] == 1
        elif key == "reliability":
            assert json.loads(str(four[key])) == json.loads(str(one[key]))
        elif key in ("counts_5", "threshold_4", "dense_3"):
            # Means: float sums whose partial sums are grouped per device (compensated, so near-equal).
            np.testing.assert_allclose(four[key], one[key], rtol=1e-6)
        else:
            np.testing.assert_array_equal(four[key], one[key], err_msg=key)
