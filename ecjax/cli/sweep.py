"""``ecjax sweep``: which system wins where, over the binary utility space, a cost ratio or random cost
matrices."""

from __future__ import annotations

import argparse

import numpy as np

from ecjax import random_bits
from ecjax.cli import progress
from ecjax.cli.data import cost_spec, count_classes, load_inputs, load_sample_costs
from ecjax.cli.files import Run, check_of, output_folder, within
from ecjax.cli.output import JSON_SCHEMA_VERSION, emit, float_dict
from ecjax.cli.priors import check_naive, check_test_covers_priors
from ecjax.inputs import InputError
from ecjax.scores.inputs import class_frequencies, score_priors


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
    from ecjax import prob

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


def _priors_line(priors, source, classes):
    """One line when every system uses the same priors, else one per system."""
    def fmt(p):
        return ", ".join(f"{c}: {float(x):.3g}" for c, x in zip(classes, p))

    rows = list(priors.values())
    if all(np.allclose(p, rows[0], rtol=0, atol=1e-12) for p in rows):
        return [f"priors ({source}): {fmt(rows[0])}"]
    return [f"priors ({source}):"] + [f"  {n}: {fmt(p)}" for n, p in priors.items()]


def _winner_name(w, names):
    from ecjax.sweep import TIE

    return names[w] if w >= 0 else "tie" if w == TIE else None


def _cost_ratio_report(res, ratios, names, spec, lo, hi, record, lines):
    """Who wins on each stretch of cost ratios, and the grid that resolves the boundaries."""
    n = len(ratios)
    step = 100 * ((hi / lo) ** (1 / (n - 1)) - 1)
    neg, pos = spec.classes[0], spec.classes[1]
    lines.insert(0, f"cost ratio r = c10 / c01: the cost of deciding {spec.decisions[0]!r} for a true {pos!r}, "
                    f"over that of deciding {spec.decisions[1]!r} for a true {neg!r}")
    lines.insert(1, f"grid: {n} values of r from {lo:g} to {hi:g}, evenly spaced on a log scale "
                    f"(each {step:.3g} % above the previous)")
    runs = res.winner_runs()
    lines.append("who wins where (each boundary lies between the two grid values shown around it):")
    for first, last, w in runs:
        lines.append(f"  r from {ratios[first]:.4g} to {ratios[last]:.4g}: "
                     + (names[w] if w >= 0 else "tie (same NEC: often all make the naive decision)"))
    record["grid"] = {"parameter": "cost_ratio", "lo": lo, "hi": hi, "num_points": n, "spacing": "log",
                      "values": ratios.tolist()}
    record["winner_intervals"] = [{"from": float(ratios[a]), "to": float(ratios[b]),
                                   "winner": _winner_name(w, names)} for a, b, w in runs]


def _sweep_sample_costs(args, run, kind, labels, arrays, names, spec, k):
    """sweep --sample-costs: each system's EC as the factor on the per-sample part runs over --sample-cost-scale
    (per-sample Bayes decisions at every factor for --scores; the decisions as given otherwise)."""
    from ecjax.sweep import grids, sweep_sample_costs, sweep_sample_costs_of_decisions

    costs = load_sample_costs(args, run, labels, args.labels, k, spec.costs)
    lo, hi = args.sample_cost_scale or (0.0, 2.0)
    axis = check_of("--sample-cost-scale", grids.linspace, lo, hi, args.resolution or 101)
    if kind == "scores":
        res = sweep_sample_costs(labels[0], np.stack(arrays), costs, axis, priors=spec.priors,
                                 score_type=args.score_type)
    else:
        res = check_of(f"--decisions {args.decisions[0]}", sweep_sample_costs_of_decisions, labels[0],
                       np.stack(arrays), costs, axis, priors=spec.priors)
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
    from ecjax import plots, sweep
    from ecjax.confusion import confusion_matrix

    kind, labels, label_files, arrays, names, weights = load_inputs(args, run)
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
        return _sweep_sample_costs(args, run, kind, labels, arrays, names, spec, k)
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
    priors = spec.priors
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
    scores = np.stack(arrays) if kind == "scores" else None
    priors_of_scores = score_priors(st, priors, labels[0], k)
    used, source = _sweep_priors(spec, labels, names, k, priors_of_scores if kind == "scores" else None, args.costs)
    record = {"schema": JSON_SCHEMA_VERSION, "command": "sweep", "over": over, "systems": names, "input": kind,
              "classes": spec.classes, "priors": {n: np.asarray(p).tolist() for n, p in used.items()},
              "priors_source": source}
    out_dir = output_folder(args)
    settings = sweep.SweepSettings(progress=progress.sweep_progress(args))
    if over == "utility-space":
        if kind == "scores":
            m = sweep.utility_space_map(labels=lab, scores=scores, priors=priors_of_scores, score_type=st,
                                        resolution=resolution, settings=settings)
        else:
            m = sweep.utility_space_map(counts, priors=priors, resolution=resolution, settings=settings)
        record["win_fraction"] = float_dict(names, m.win_fraction)
        record["resolution"] = resolution
        lines = [f"winner over the binary utility space (every normalized 2 x 2 utility matrix; {resolution} x "
                 f"{resolution} grid):"]
        lines += [f"  {n:20s} wins {100 * float(w):5.1f} % of the space" for n, w in zip(names, m.win_fraction)]
        record["tie_fraction"] = float(m.result.tie_fraction)
        if m.result.tie_fraction > 0:
            lines.append(f"  tied (all make the same decisions, often the naive one) on {100 * m.result.tie_fraction:.1f} %")
        lines += _priors_line(used, source, spec.classes)
        if out_dir is not None:
            fig = plots.winner_map(m, names=names, frame=plots.Frame(class_names=spec.classes))
            record.setdefault("files", []).append(run.save_figure(fig, out_dir / "winner_map.png"))
    else:
        if over == "cost-ratio":
            axis: sweep.grids.Axis | np.ndarray = check_of("--lo/--hi", sweep.grids.cost_ratios, args.lo, args.hi,
                                                           resolution)
            coord_name = "cost ratio c10 / c01"
        else:
            prior, cost_source = _matrix_prior(spec, args.costs)
            cost_matrices = -np.asarray(prior.sample(random_bits.key(args.seed), resolution))  # samples: utilities
            axis = cost_matrices
            coord_name = f"random cost matrices: {cost_source}; key --seed {args.seed}"
        if kind == "scores":
            assert lab is not None and scores is not None, "score input has its labels and scores (checked above)"
            res = sweep.sweep_scores(lab, scores, axis, priors=priors_of_scores, score_type=st, normalize=True,
                                     settings=settings)
        else:
            res = sweep.sweep_counts(counts, axis, priors=priors, normalize=True, settings=settings)
        record.update(res.to_dict(names))  # win and tie fractions, points, the NEC and winner of every point
        lines = [f"NEC at {np.prod(res.shape)} points ({coord_name}):"]
        if len(names) == 1:  # one system wins every point: where it beats the naive decision is the news
            nec = np.asarray(res.values, dtype=np.float64)[:, 0]
            from ecjax.report import no_better_than_naive

            record["no_better_than_naive_fraction"] = float(np.mean(no_better_than_naive(nec)))
            lines.append(f"  {names[0]:20s} NEC >= 1 (no better than the naive decision) at "
                         f"{100 * record['no_better_than_naive_fraction']:5.1f} % of the points, NEC from "
                         f"{float(res.minimum[0]):.3f} to {float(res.maximum[0]):.3f}")
        else:
            lines += [f"  {n:20s} best at {100 * float(w):5.1f} % of the points, NEC from {float(lo):.3f} to "
                      f"{float(hi):.3f}" for n, w, lo, hi in zip(names, res.win_fraction, res.minimum, res.maximum)]
        if res.tie_fraction > 0:
            lines.append(f"  tied (all make the same decisions, often the naive one) at {100 * res.tie_fraction:.1f} %")
        lines += _priors_line(used, source, spec.classes)
        if over == "cost-ratio":
            ratios = np.asarray(res.coords[0], dtype=np.float64)
            flips = {}
            for a in range(len(names)):
                for b in range(a + 1, len(names)):
                    idx = res.flip_points(a, b)
                    if len(idx):
                        flips[f"{names[a]} / {names[b]}"] = [float(ratios[i[0]]) for i in idx]
            record["flips_at_cost_ratio"] = flips
            for pair, at in flips.items():
                lines.append(f"  ranking of {pair} flips at cost ratio " + ", ".join(f"{r:.3g}" for r in at))
            _cost_ratio_report(res, ratios, names, spec, args.lo, args.hi, record, lines)
            if out_dir is not None:
                fig = plots.sweep_curves(ratios, res.values, names=names, log_x=True,
                                         flips=[r for at in flips.values() for r in at], frame=plots.Frame(
                                             xlabel=f"cost of a missed {spec.classes[1]} / cost of a false alarm",
                                             ylabel="NEC"))
                record.setdefault("files", []).append(run.save_figure(fig, out_dir / "sweep_cost_ratio.png"))
        else:
            record["cost_source"] = coord_name
            record["seed"] = args.seed
            # null when too many to print: the same --seed and --resolution draw them again.
            record["cost_matrices"] = (cost_matrices.tolist() if cost_matrices.size <= _MAX_JSON_MATRIX_NUMBERS
                                       else None)
            if out_dir is not None:
                # Each system's NEC sorted over the draws (its quantile curve): lower is better everywhere;
                # who wins on the same matrix is in the legend, since sorting separates the pairs.
                values = np.sort(np.asarray(res.values, dtype=np.float64), axis=0)
                fig = plots.sweep_curves((np.arange(resolution) + 0.5) / resolution, values,
                                         names=[f"{n} (best on {100 * float(w):.1f} % of the matrices)"
                                                for n, w in zip(names, res.win_fraction)],
                                         frame=plots.Frame(
                                             xlabel="fraction of the drawn cost matrices (each system's NEC sorted)",
                                             ylabel="NEC (lower is better)",
                                             title=f"NEC over {resolution} random cost matrices"))
                record.setdefault("files", []).append(run.save_figure(fig, out_dir / "sweep_matrices.png"))
    emit(args, run, record, "\n".join(lines), out_dir)
    return 0
