"""prob.compare at real sizes (issue 33): 100 and 1000 classes, as ratios to the README's CIFAR-10 comparison.

Each workload runs in this process next to the README's CIFAR-10 ``prob.compare`` (three networks, given argmax
decisions, unpaired, each error's cost uncertain in an interval, ``rope=0.002``), so the noise of a shared machine
cancels in the ratio.  Times are steady state (the median of ``--repeats`` calls after a first, compiling, one).
The targets of the issue:

* 100 classes (three CIFAR-100-sized systems, 10^4 x 100, unpaired, each error's cost uncertain in [0.5, 3]):
  at most 4x the CIFAR-10 time;
* 1000 classes (N = 5 x 10^4, three paired systems, fixed 0-1 costs): at most 15x;
* 1000 classes, paired, uncertain 1000 x 1000 interval costs: at most 60x.

Each is run with the defaults (adaptive draws; cells of equal utility merged when the utilities are fixed) and
with the former settings (``num_draws=20000``, no merging: ``--before``; timed on ``--before-draws`` draws and
scaled linearly to 20,000, as the row says).  The reference is timed both ways too.  The systems are
synthetic (the shared data holds no 100- or 1000-class outputs): each sample's decision is its label with the
system's accuracy, else a uniform class.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

import jax  # noqa: E402

from ecjax import prob  # noqa: E402

from ecjax._src.prob.draw_models import merged as merged_model
FORMER_DRAWS = 20_000


def cifar10_reference():
    """The README's CIFAR-10 comparison: its systems and keyword arguments."""
    nets = ["cifar10_resnet-20", "cifar10_repvgg_a2", "cifar10_vgg19_bn"]
    data = [_common.load(n) for n in nets]
    vehicle = np.isin(np.arange(10), [0, 1, 8, 9])
    low = np.where(vehicle[:, None] == vehicle[None], 0.5, 2.0) * (1 - np.eye(10))
    high = np.where(vehicle[:, None] == vehicle[None], 1.5, 5.0) * (1 - np.eye(10))
    systems = prob.Systems({n: y for n, (_, y) in zip(nets, data)}, {n: s.argmax(1) for n, (s, _) in zip(nets, data)},
                           paired=False)
    return systems, dict(costs=prob.intervals(low, high, kind="cost"), rope=0.002)


def synthetic(k, n, paired, seed=0):
    rng = np.random.default_rng(seed)
    accuracies = (0.75, 0.78, 0.70)
    y = rng.integers(0, k, n)
    labels = [y if paired else rng.permutation(y) for _ in accuracies]
    decisions = np.stack([np.where(rng.random(n) < a, lab, rng.integers(0, k, n))
                          for a, lab in zip(accuracies, labels)])
    return prob.Systems(labels[0] if paired else labels, decisions, paired=paired)


def error_costs(k, low, high):
    return prob.intervals(low * (1 - np.eye(k)), high * (1 - np.eye(k)), kind="cost")


def timed(systems, kwargs, num_draws, repeats, merge=True):
    """(first s, steady s, draws used, P(best), steady CPU s) of ``prob.compare``; ``num_draws`` None: the adaptive
    default.  Steady: the median of ``repeats`` calls after the first, wall clock and process CPU time (on a shared
    machine the CPU time is the steadier of the two)."""
    import statistics
    import time

    merged_model._MERGE_CELLS = merge
    settings = prob.MonteCarloSettings(num_draws=num_draws)

    def run():
        return prob.compare(systems, key=jax.random.key(0), settings=settings, **kwargs)

    try:
        first, steady, result = _common.time_jax(run, repeats=repeats)
        cpu = []
        for _ in range(repeats):
            c0 = time.process_time()
            _common.block(run())
            cpu.append(time.process_time() - c0)
    finally:
        merged_model._MERGE_CELLS = True
    return first, steady, result.num_draws, np.asarray(result.p_best), statistics.median(cpu)


def breakdown(systems, costs, num_draws=1000):
    """Where a draw's time goes with uncertain utilities (process CPU time per draw, ms): the utility draw, the
    occupied-cell draw and the outputs (yields, EC, NEC, the doubt components), at compare's block size."""
    import time

    import jax.numpy as jnp

    from ecjax.confusion import joint_outcome_table
    from ecjax._src.prob import occupied_cells
    from ecjax._src.prob.draw_plan import plan_draws

    labels, decisions = systems.labels, np.stack(systems.decisions)
    k, d = costs.shape
    alpha = 2 / (k * d)
    if systems.paired:
        t = joint_outcome_table(labels[0], decisions, num_classes=k, num_decisions=d)
        table = occupied_cells.joint_cells(np.asarray(t.cells), np.asarray(t.counts), num_classes=k, num_decisions=d,
                                           alpha=alpha)
    else:
        counts = np.zeros((len(decisions), k, d))
        for m, (lab, dec) in enumerate(zip(labels, decisions)):
            np.add.at(counts[m], (lab, dec), 1)
        table = occupied_cells.unpaired_cells(counts, alpha)
    b = plan_draws(num_draws, occupied_cells.plan_elements(table) + k * d, group=2).block  # as compare plans them
    key = jax.random.key(0)
    u = costs.sample(key, b)
    p = jnp.full((b, k), 1.0 / k)
    coef = np.zeros((len(decisions), k))
    parts = occupied_cells.component_parts(table, np.asarray(u[0]), coef, coef)  # on the host, once (as compare)
    pieces = {
        "utility draw": lambda: costs.sample(key, b),
        "occupied-cell draw": lambda: occupied_cells.cell_draw(key, table.shapes, table.counts, layout=table.layout,
                                                               num_draws=b),
        "all of a block (draw, outputs, components)": lambda: occupied_cells.cell_outputs(
            key, table, u, p, p, parts, joint_priors=bool(systems.paired),
            block=b, components=("costs_only", "rates_only")),
    }
    out = {}
    for name, fn in pieces.items():
        _common.block(fn())
        c0, reps = time.process_time(), 5
        for _ in range(reps):
            _common.block(fn())
        out[name] = (time.process_time() - c0) / reps / b * 1e3
    out["outputs alone (the block less its draw)"] = out["all of a block (draw, outputs, components)"] - out[
        "occupied-cell draw"]
    return b, oc_summary(table), out


def oc_summary(table):
    lay = table.layout
    return f"{table.counts.shape[0]} cell slots, {lay.prior_rows} prior fields x {lay.atoms} atoms"


def main() -> None:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--before", action="store_true", help="also time the former settings (20,000 draws, no merging)")
    p.add_argument("--before-draws", type=int, default=1000,
                   help="draws of the former settings' rows, their time scaled linearly to 20,000")
    p.add_argument("--workloads", type=int, nargs="+", default=[1, 2, 3], choices=[1, 2, 3],
                   help="which of the three workloads to run (1: 100 classes, 2: 1000 fixed, 3: 1000 uncertain)")
    p.add_argument("--breakdown", action="store_true",
                   help="also time the pieces of a draw of the uncertain-cost workloads (CPU ms a draw)")
    args = p.parse_args()
    repeats = 1 if args.tiny else args.repeats
    # (name, K, N, paired, costs, target ratio)
    big_k, big_n = (30, 3000) if args.tiny else (1000, 5000) if args.small else (1000, 50_000)
    mid_k, mid_n = (20, 3000) if args.tiny else (100, 10_000)
    workloads = [
        (f"{mid_k} classes, N = {mid_n}, unpaired, uncertain costs [0.5, 3]", mid_k, mid_n, False,
         error_costs(mid_k, 0.5, 3.0), 4),
        (f"{big_k} classes, N = {big_n}, paired, fixed 0-1 costs", big_k, big_n, True, 1 - np.eye(big_k), 15),
        (f"{big_k} classes, N = {big_n}, paired, uncertain interval costs [0.5, 3]", big_k, big_n, True,
         error_costs(big_k, 0.5, 3.0), 60),
    ]
    print(f"# {_common.machine()}")
    ref_systems, ref_kwargs = cifar10_reference()
    ref = timed(ref_systems, ref_kwargs, None, repeats)
    print(f"reference (README CIFAR-10 compare), default settings: first {ref[0]:.3g} s, steady {ref[1]:.3g} s "
          f"(CPU {ref[4]:.3g} s), {ref[2]} draws")
    ref_before = None
    if args.before:
        ref_before = timed(ref_systems, ref_kwargs, FORMER_DRAWS, repeats, merge=False)
        print(f"reference, former settings ({FORMER_DRAWS} draws): first {ref_before[0]:.3g} s, "
              f"steady {ref_before[1]:.3g} s")
    print("\n| workload | settings | draws | first call | steady (CPU) | ratio to the reference (CPU) | target | P(best) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, k, n, paired, costs, target in (workloads[i - 1] for i in args.workloads):
        systems = synthetic(k, n, paired)
        kwargs = dict(costs=costs)
        first, steady, draws, p_best, cpu = timed(systems, kwargs, None, repeats)
        ratio, cpu_ratio = steady / ref[1], cpu / ref[4]
        met = "met" if cpu_ratio <= target else "**not met**"
        print(f"| {name} | default | {draws} | {first:.3g} s | {steady:.3g} s ({cpu:.3g} s) | {ratio:.1f}x "
              f"({cpu_ratio:.1f}x: {met}) | <= {target}x | {np.round(p_best, 3)} |")
        if args.before:
            draws = min(FORMER_DRAWS, args.before_draws)
            first, steady, _, p_best, _ = timed(systems, kwargs, draws, 1 if draws < FORMER_DRAWS else repeats,
                                                merge=False)
            steady = steady * FORMER_DRAWS / draws
            scaled = "" if draws == FORMER_DRAWS else f" (timed on {draws} draws, x{FORMER_DRAWS // draws})"
            assert ref_before is not None
            print(f"| {name} | former{scaled} | {FORMER_DRAWS} | {first:.3g} s | {steady:.3g} s | "
                  f"{steady / ref_before[1]:.0f}x | | {np.round(p_best, 3)} |")
    if args.breakdown:
        import time

        c0 = time.process_time()
        _common.block(prob.compare(ref_systems, key=jax.random.key(0), **ref_kwargs))
        print(f"\nreference: {(time.process_time() - c0):.3g} s of CPU for the whole call (1000 draws: "
              f"{(time.process_time() - c0):.3g} ms a draw, overheads included)")
        for name, k, n, paired, costs, _ in (workloads[i - 1] for i in args.workloads):
            if isinstance(costs, np.ndarray):
                continue
            block, cells, times = breakdown(synthetic(k, n, paired), costs)
            print(f"{name} (block {block}, {cells}): "
                  + ", ".join(f"{piece} {ms:.3f}" for piece, ms in times.items()) + " ms of CPU a draw")


if __name__ == "__main__":
    main()
