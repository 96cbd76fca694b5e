"""``ecjax sweep``: which system wins where, over the binary utility space, a cost ratio or random cost
matrices."""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple

import numpy as np

from ecjax._src import random_bits
from ecjax._src.cli import progress
from ecjax._src.cli.data import cost_spec, count_classes, load_inputs, load_sample_costs
from ecjax._src.cli.files import Run, check_of, output_folder, within
from ecjax._src.cli.output import JSON_SCHEMA_VERSION, emit, float_dict
from ecjax._src.cli.priors import check_naive, check_test_covers_priors
from ecjax._src.cli.sweep_report import cost_ratio_flips, priors_line, sorted_nec_figure
from ecjax._src.inputs import InputError, stack_scores
from ecjax._src.scores.inputs import class_frequencies, score_priors


_MAX_JSON_MATRIX_NUMBERS = 10**6  # --over matrices: larger draws are left out of the JSON (rebuilt from --seed)


def _sweep_over(over, k, spec):
    """``--over auto``: the utility-space map where it exists (two classes, two decisions), else random matrices."""
    if over != "auto":
        return over
    return "utility-space" if k == 2 and spec.costs.shape[1] == 2 else "matrices"


def _matrix_bounds(spec):
    """The intervals ``(low, high)`` each cost of ``--over matrices`` is drawn from: the [uncertainty] table, else
    between 0 and twice the nominal cost, so the matrices average to the nominal one, free decisions stay free,
    and any error may weigh far more than another."""
    if spec.uncertain:
        return spec.costs_low, spec.costs_high
    c = np.asarray(spec.costs, dtype=np.float64)
    return np.minimum(0.0, 2 * c), np.maximum(0.0, 2 * c)


def _matrix_prior(spec, costs_arg):
    """What ``--over matrices`` draws cost matrices from, and how to say it."""
    from ecjax._src import prob

    prior = prob.intervals(*_matrix_bounds(spec), kind="cost")
    if spec.uncertain:
        return prior, f"each cost uniform on its [uncertainty] interval in {costs_arg}"
    return prior, (f"each cost uniform between 0 and twice its value in {costs_arg or 'the 0-1 costs'} (an "
                   "[uncertainty] table in --costs sets the intervals)")


def _sweep_priors(spec, labels, names, k, fixed, costs_arg):
    """The class priors that weight the swept costs: ``({system: priors}, source)``."""
    if spec.priors is not None:
        return {n: spec.priors for n in names}, costs_arg
    if fixed is not None:
        return {n: fixed for n in names}, "the class frequencies of the first --labels file"
    return ({n: class_frequencies(y, k) for n, y in zip(names, labels)},
            "the class frequencies of the labels")


def _sweep_sample_costs(args, run, kind, labels, systems, names, spec, k):
    """sweep --sample-costs: each system's EC as the factor on the per-sample part runs over --sample-cost-scale
    (per-sample Bayes decisions at every factor for --scores, given as canonical Scores; the decisions as given
    otherwise)."""
    from ecjax._src.sweep import grids, sweep_sample_costs, sweep_sample_costs_of_decisions

    costs = load_sample_costs(args, run, labels, args.labels, k, spec.costs)
    lo, hi = args.sample_cost_scale or (0.0, 2.0)
    axis = check_of("--sample-cost-scale", grids.linspace, lo, hi, args.resolution or 101)
    if kind == "scores":
        res = sweep_sample_costs(labels[0], stack_scores(systems), costs, axis, priors=spec.priors,
                                 score_type=args.score_type)
    else:
        res = check_of(f"--decisions {args.decisions[0]}", sweep_sample_costs_of_decisions, labels[0],
                       np.stack(systems), costs, axis, priors=spec.priors)
    factors = np.asarray(res.coords[0]).ravel()
    runs = [(float(factors[a]), float(factors[b]), names[w] if w >= 0 else "tie") for a, b, w in res.winner_runs()]
    record = {"schema": JSON_SCHEMA_VERSION, "command": "sweep", "systems": names, "over": "sample-cost-scale",
              "sample_costs": args.sample_costs, "sample_cost_scale": [lo, hi],
              "decisions": "per-sample Bayes decisions" if kind == "scores" else "given",
              "win_fraction": float_dict(names, res.win_fraction), "winner_runs": runs,
              "expected_cost": {n: np.asarray(res.values)[:, m].tolist() for m, n in enumerate(names)},
              "factors": factors.tolist()}
    lines = [f"EC under per-sample costs {args.sample_costs}, their per-sample part times a factor in "
             f"[{lo:g}, {hi:g}] ({len(factors)} points; {record['decisions']})",
             "win fraction: " + ", ".join(f"{n} {f:.3f}" for n, f in zip(names, res.win_fraction))]
    lines += [f"  factor {a:8.3f} .. {b:8.3f}: {w}" for a, b, w in runs]
    emit(args, run, record, "\n".join(lines), None)
    return 0


def cmd_sweep(args: argparse.Namespace, run: Run) -> int:
    """Winner maps and tables over the utility space, a cost ratio, or random cost matrices."""
    from ecjax._src import sweep
    from ecjax._src.confusion import confusion_matrix

    kind, labels, label_files, arrays, names, weights, canonical = load_inputs(args, run)
    st = args.score_type
    if kind == "scores":
        k = 2 if st == "llr" else arrays[0].shape[1]
    else:
        k = count_classes(labels[0], kind, arrays, st, args.costs, label_files[0], args.decisions)
    output_folder(args)  # fail fast on an existing record or an unwritable folder
    for y, lf in zip(labels, label_files):
        within(lf, y, k, "labels", "the classes of the scores")
    spec = cost_spec(args, k)
    if args.sample_costs is not None:
        return _sweep_sample_costs(args, run, kind, labels, canonical or arrays, names, spec, k)
    over = _sweep_over(args.over, k, spec)
    resolution = args.resolution or (1000 if over == "matrices" else 101)
    if over == "utility-space" and resolution > 4001:
        raise InputError(f"--resolution: at most 4001 points per axis of the utility space, got {resolution}")
    if (k != 2 and over != "matrices") or (over == "cost-ratio" and spec.costs.shape[1] != 2):
        what = "two classes and two decisions" if over == "cost-ratio" else "two classes"
        raise InputError(f"--over {over} needs {what}, got {k} classes and {spec.costs.shape[1]} decisions: use "
                         "--over matrices (random cost matrices, the default for more than two classes)")
    # The costs whose NEC is swept: drawn below the upper ends of their intervals (whose naive cost bounds every
    # draw's), or [[0, 1], [r, 0]] with r > 0 (the zero pattern of 1 - I).
    swept = None if over == "utility-space" else (1.0 - np.eye(2) if over == "cost-ratio" else
                                                  _matrix_bounds(spec)[1])
    for y, lf in zip(labels, label_files):
        check_test_covers_priors(spec, y, lf, args.costs)
        if swept is not None:
            check_naive(swept, spec.priors, y, lf, args.costs)
    priors, counts = spec.priors, None
    if kind == "decisions":
        d = spec.costs.shape[1] if over == "matrices" else 2
        for f, a in zip(args.decisions, arrays):
            within(f, a, d, "decisions", "the decisions swept")
        counts = np.stack([np.asarray(confusion_matrix(y, a, num_classes=k, num_decisions=d))
                           for y, a in zip(labels, arrays)])
    shared = all(np.array_equal(labels[0], y) for y in labels[1:])
    lab = labels[0] if shared else np.stack(labels) if len({len(y) for y in labels}) == 1 else None
    if kind == "scores" and lab is None:
        raise InputError("--labels: systems with test sets of different sizes cannot be swept together")
    # The files' scores as their check made them canonical, stacked as one array would be: not checked again.
    swept = _Swept(names, spec, kind, lab, stack_scores(canonical) if kind == "scores" else None, counts, priors,
                   score_priors(st, priors, labels[0], k), resolution,
                   sweep.SweepSettings(progress=progress.sweep_progress(args)))
    used, source = _sweep_priors(spec, labels, names, k, swept.score_priors if kind == "scores" else None, args.costs)
    record = {"schema": JSON_SCHEMA_VERSION, "command": "sweep", "over": over, "systems": names, "input": kind,
              "classes": spec.classes, "priors": {n: np.asarray(p).tolist() for n, p in used.items()},
              "priors_source": source}
    out_dir = output_folder(args)
    if over == "utility-space":
        lines = _utility_space(args, run, swept, record, out_dir) + priors_line(used, source, spec.classes)
    else:
        lines, res = _grid(args, swept, over, record)
        lines += priors_line(used, source, spec.classes)
        if over == "cost-ratio":
            cost_ratio_flips(args, run, swept, res, record, lines, out_dir)
        elif out_dir is not None:
            record.setdefault("files", []).append(run.save_figure(sorted_nec_figure(swept, res),
                                                                  out_dir / "sweep_matrices.png"))
    emit(args, run, record, "\n".join(lines), out_dir)
    return 0


class _Swept(NamedTuple):
    """What a sweep sweeps: the systems' scores (and their priors) or counts, and the grid's settings."""

    names: list
    spec: Any  # the cost specification (ecjax.io.CostSpec)
    kind: str  # "scores" or "decisions"
    labels: Any  # one (N,) vector shared by the systems, or (M, N); None for decisions of different test sets
    scores: Any  # (M, N, K) for scores (ecjax.inputs.Scores, checked once), else None
    counts: Any  # (M, K, D) confusion counts for decisions, else None
    priors: Any  # the cost specification's priors (None: the data's)
    score_priors: Any  # the priors of the score-based sweeps (ecjax._src.scores.inputs.score_priors)
    resolution: int
    settings: Any  # ecjax.sweep.SweepSettings, with the progress line


def _utility_space(args, run, s, record, out_dir):
    """--over utility-space: who wins for every normalized 2 x 2 utility matrix, into ``record``; its lines."""
    from ecjax._src import plots, sweep

    if s.kind == "scores":
        m = sweep.utility_space_map(labels=s.labels, scores=s.scores, priors=s.score_priors,
                                    score_type=args.score_type, resolution=s.resolution, settings=s.settings)
    else:
        m = sweep.utility_space_map(s.counts, priors=s.priors, resolution=s.resolution, settings=s.settings)
    record["win_fraction"] = float_dict(s.names, m.win_fraction)
    record["resolution"] = s.resolution
    lines = [f"winner over the binary utility space (every normalized 2 x 2 utility matrix; {s.resolution} x "
             f"{s.resolution} grid):"]
    lines += [f"  {n:20s} wins {100 * float(w):5.1f} % of the space" for n, w in zip(s.names, m.win_fraction)]
    record["tie_fraction"] = float(m.result.tie_fraction)
    if m.result.tie_fraction > 0:
        lines.append(f"  tied (all make the same decisions, often the naive one) on {100 * m.result.tie_fraction:.1f} %")
    if out_dir is not None:
        fig = plots.winner_map(m, names=s.names, frame=plots.Frame(class_names=s.spec.classes))
        record.setdefault("files", []).append(run.save_figure(fig, out_dir / "winner_map.png"))
    return lines


def _grid(args: argparse.Namespace, s: _Swept, over: str, record: dict) -> tuple[list[str], Any]:
    """--over cost-ratio or matrices: each system's NEC at every point of the grid, into ``record``; its lines and
    the sweep's result."""
    from ecjax._src import sweep

    if over == "cost-ratio":
        axis: sweep.grids.Axis | np.ndarray = check_of("--lo/--hi", sweep.grids.cost_ratios, args.lo, args.hi,
                                                       s.resolution)
        coord_name = "cost ratio c10 / c01"
    else:
        prior, cost_source = _matrix_prior(s.spec, args.costs)
        cost_matrices = -np.asarray(prior.sample(random_bits.key(args.seed), s.resolution))  # samples: utilities
        axis = cost_matrices
        coord_name = f"random cost matrices: {cost_source}; key --seed {args.seed}"
    if s.kind == "scores":
        res = sweep.sweep_scores(s.labels, s.scores, axis, priors=s.score_priors, score_type=args.score_type,
                                 normalize=True, settings=s.settings)
    else:
        res = sweep.sweep_counts(s.counts, axis, priors=s.priors, normalize=True, settings=s.settings)
    record.update(res.to_dict(s.names))  # win and tie fractions, points, the NEC and winner of every point
    lines = [f"NEC at {np.prod(res.shape)} points ({coord_name}):"]
    if len(s.names) == 1:  # one system wins every point: where it beats the naive decision is the news
        nec = np.asarray(res.values, dtype=np.float64)[:, 0]
        from ecjax._src.report import no_better_than_naive

        record["no_better_than_naive_fraction"] = float(np.mean(no_better_than_naive(nec)))
        lines.append(f"  {s.names[0]:20s} NEC >= 1 (no better than the naive decision) at "
                     f"{100 * record['no_better_than_naive_fraction']:5.1f} % of the points, NEC from "
                     f"{float(res.minimum[0]):.3f} to {float(res.maximum[0]):.3f}")
    else:
        lines += [f"  {n:20s} best at {100 * float(w):5.1f} % of the points, NEC from {float(lo):.3f} to "
                  f"{float(hi):.3f}" for n, w, lo, hi in zip(s.names, res.win_fraction, res.minimum, res.maximum)]
    if res.tie_fraction > 0:
        lines.append(f"  tied (all make the same decisions, often the naive one) at {100 * res.tie_fraction:.1f} %")
    if over == "matrices":
        record.update(cost_source=coord_name, seed=args.seed)
        # null when too many to print: the same --seed and --resolution draw them again.
        record["cost_matrices"] = cost_matrices.tolist() if cost_matrices.size <= _MAX_JSON_MATRIX_NUMBERS else None
    return lines, res
