"""One of several JAX processes for ``tests/test_multiprocess.py`` (not collected: the name starts with ``_``).

Usage::

    python tests/_multiprocess_worker.py PROCESS_ID NUM_PROCESSES PORT LOCAL_DEVICES OUT.npz

It joins the other processes through ``jax.distributed.initialize`` (the
coordinator, process 0, listens on ``127.0.0.1:PORT``; CPU collectives:
gloo), checks that the processes really form one global set of devices,
runs :func:`run` on all of them and writes the results with ``np.savez``
(plain arrays, no pickle).  The test also imports :func:`run` and calls it in
its own single-device process for the reference.

``XLA_FLAGS=--xla_force_host_platform_device_count=LOCAL_DEVICES`` and
``JAX_PLATFORMS=cpu`` must be in the environment before Python starts (the
test sets them); nothing here touches JAX before ``jax.distributed.initialize``.
"""

from __future__ import annotations

import sys

import numpy as np


def inputs():
    """The inputs, identical on every process (a seeded numpy generator)."""
    rng = np.random.default_rng(7)
    counts = rng.integers(1, 60, (3, 2, 2))
    labels = rng.integers(0, 2, (3, 400))
    llr = rng.normal(size=(3, 400)) + 1.5 * labels
    return counts, labels, llr


def run(devices=None) -> dict:
    """A sharded sweep of each kind and the Dyrland et al. (2022) §4.2 study: ``{name: numpy array}``."""
    import jax

    from ecjax.sweep import SweepSettings, grids, metric_reliability, sweep_counts, sweep_scores
    from ecjax._src.sweep import reliability as R

    counts, labels, llr = inputs()
    out = {}
    # Decisions given: 600 cost ratios x 7 effective priors = 4200 points, 64 points per device per step
    # (5 steps on 4 devices, 66 on 1; the last step is padded).
    r = sweep_counts(counts, grids.cost_ratios(0.01, 100, 600), priors=grids.effective_priors(0.1, 0.9, 7),
                     settings=SweepSettings(chunk_size=64, devices=devices))
    out.update(counts_values=r.values, counts_winners=r.winners, counts_wins=r.win_counts,
               counts_pairwise=r.pairwise_wins, counts_flips=r.flip_counts, counts_min=r.minimum,
               counts_max=r.maximum, counts_mean=r.mean, counts_flip_01=r.flips[(0, 1)],
               counts_devices=np.int64(r.info["num_devices"]))
    # Scores given (binary thresholds on the log-likelihood ratios): 2001 effective priors.
    r = sweep_scores(labels, llr, np.array([[0.0, 1.0], [1.0, 0.0]]), priors=grids.effective_priors(0.02, 0.98, 2001),
                     score_type="llr",
                     settings=SweepSettings(chunk_size=128, devices=devices))
    out.update(scores_values=r.values, scores_winners=r.winners, scores_wins=r.win_counts,
               scores_flips=r.flip_counts, scores_mean=r.mean, scores_devices=np.int64(r.info["num_devices"]))
    # The Monte Carlo study: 6 blocks of pairs (the last partial), one block per device per step.
    rel = metric_reliability(jax.random.key(3), num_pairs=5 * R.BLOCK + 17, utility_error_sd=[0.0, 0.1, 0.2],
                             costs={"ec_2to1": np.array([[0.0, 1.0], [2.0, 0.0]])}, chunk_size=R.BLOCK,
                             devices=devices)
    out["reliability_names"] = np.array(list(rel))
    out["reliability_fraction"] = np.concatenate([np.atleast_1d(e.fraction) for e in rel.values()])
    out["reliability_se"] = np.concatenate([np.atleast_1d(e.standard_error) for e in rel.values()])
    return out


def main(argv):
    process_id, num_processes, port, local_devices = (int(a) for a in argv[1:5])
    out_path = argv[5]
    import jax

    # gloo is this JAX's default CPU implementation; set explicitly so a changed default cannot hide here.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}",
        coordinator_bind_address=f"127.0.0.1:{port}",
        num_processes=num_processes,
        process_id=process_id,
        initialization_timeout=60,
        heartbeat_timeout_seconds=30,
        shutdown_timeout_seconds=30,
        cluster_detection_method="deactivate",  # everything is given: ignore SLURM/MPI variables of a CI runner
    )
    from jax.experimental import multihost_utils

    # Genuinely several processes forming one global device set.
    assert jax.process_count() == num_processes, jax.process_count()
    assert jax.process_index() == process_id, jax.process_index()
    assert jax.local_device_count() == local_devices, jax.local_devices()
    assert jax.device_count() == num_processes * local_devices, jax.devices()
    assert {d.process_index for d in jax.devices()} == set(range(num_processes)), jax.devices()
    assert all(d.process_index == process_id for d in jax.local_devices())
    # A cross-process collective (gloo): every process sees every process's index.
    seen = multihost_utils.process_allgather(np.int32(jax.process_index()))
    assert seen.tolist() == list(range(num_processes)), seen

    out = run()
    np.savez(out_path, **out, meta_process_index=np.int64(jax.process_index()),
             meta_process_count=np.int64(jax.process_count()), meta_device_count=np.int64(jax.device_count()),
             meta_local_device_count=np.int64(jax.local_device_count()), meta_allgather=np.asarray(seen))
    multihost_utils.sync_global_devices("ecjax multiprocess test done")
    jax.distributed.shutdown()


if __name__ == "__main__":
    main(sys.argv)
