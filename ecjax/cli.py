"""The ``ecjax`` command.

Exit codes: 0 success; 2 usage or input error (one line on stderr naming the
file and the problem, no traceback); 1 internal error.  Output files are
never overwritten without ``--force`` and are written atomically.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from ecjax._validate import InputError

JSON_SCHEMA_VERSION = 1


# ------------------------------------------------------------------ inputs

def _load_labels(path):
    from ecjax.io import load_array

    y = load_array(path)
    if y.ndim != 1:
        raise InputError(f"{path}: labels must be a vector of N class indices, got shape {y.shape}")
    if y.dtype.kind == "f" and np.any(y != np.round(y)):
        raise InputError(f"{path}: labels must be integers")
    return y.astype(np.int64)


def _load_inputs(args):
    """(kind, labels, label files, system arrays, names), every file checked against its labels.

    ``--labels`` is one file shared by all systems, or (compare, sweep) one file per system.
    """
    from ecjax.io import load_array

    label_files = [args.labels] if isinstance(args.labels, str) else list(args.labels)
    labels = [_load_labels(f) for f in label_files]
    files = args.scores or args.decisions
    kind = "scores" if args.scores else "decisions"
    if len(labels) not in (1, len(files)):
        raise InputError(f"--labels: give one file shared by all systems or one per system, got {len(labels)} for {len(files)}")
    if len(labels) == 1:
        labels, label_files = labels * len(files), label_files * len(files)
    st = args.score_type
    arrays = []
    for f, y, lf in zip(files, labels, label_files):
        a = load_array(f)
        want = 1 if (kind == "decisions" or st == "llr") else 2
        if a.ndim != want:
            raise InputError(f"{f}: {kind} must have shape {'(N,)' if want == 1 else '(N, K)'}, got {a.shape}")
        if a.shape[0] != y.shape[0]:
            raise InputError(f"{f}: has {a.shape[0]} samples but {lf} has {y.shape[0]} labels")
        if kind == "scores" and not np.all(np.isfinite(a)):
            raise InputError(f"{f}: scores contain NaN or inf")
        arrays.append(a)
    names = args.names or [Path(f).stem for f in files]
    if len(names) != len(files):
        raise InputError(f"--names gives {len(names)} names for {len(files)} systems")
    return kind, labels, label_files, arrays, names


def _cost_spec(args, num_classes):
    from ecjax.costs import zero_one
    from ecjax.io import CostSpec, load_cost_spec

    if args.costs is None:
        c = np.asarray(zero_one(num_classes))
        names = [str(i) for i in range(num_classes)]
        return CostSpec(c, names, names, source="0-1 costs (default)")
    spec = load_cost_spec(args.costs)
    if spec.costs.shape[0] != num_classes:
        raise InputError(f"{args.costs}: the matrix has {spec.costs.shape[0]} rows (classes) but the data has {num_classes} classes")
    return spec


def _num_classes(labels, kind, arrays, score_type, spec_path):
    if kind == "scores":
        return 2 if score_type == "llr" else arrays[0].shape[1]
    if spec_path is not None:
        from ecjax.io import load_cost_spec

        return load_cost_spec(spec_path).costs.shape[0]
    return int(max(labels.max(), max(a.max() for a in arrays))) + 1


# ----------------------------------------------------------------- outputs

def _out_dir(args):
    if args.out is None:
        return None
    d = Path(args.out)
    if d.exists() and not d.is_dir():
        raise InputError(f"{d}: --out must be a directory")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _save_figure(fig, out_dir, name, force):
    import io

    from ecjax.io import write_atomic

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    path = write_atomic(out_dir / name, buf.getvalue(), force=force)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return str(path)


def _emit(args, record, table_text, out_dir):
    from ecjax.io import write_atomic

    if out_dir is not None:
        record.setdefault("files", []).append(str(out_dir / f"{args.command}.json"))
        write_atomic(out_dir / f"{args.command}.json", json.dumps(record, indent=2), force=args.force)
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        print(table_text)
        for f in record.get("files", []):
            print(f"wrote {f}")


def _float_dict(names, values):
    return {n: float(v) for n, v in zip(names, np.asarray(values).ravel())}


# ---------------------------------------------------------------- commands

def cmd_metrics(args):
    from ecjax.confusion import confusion_matrix
    from ecjax.decisions import bayes_decisions
    from ecjax.report import disagreements, format_table, metric_columns, winner

    st = args.score_type
    kind, (labels, *_), _, arrays, names = _load_inputs(args)
    k = _num_classes(labels, kind, arrays, st, args.costs)
    if labels.max() >= k:
        raise InputError(f"{args.labels}: label {labels.max()} is out of range for {k} classes")
    spec = _cost_spec(args, k)
    d = spec.costs.shape[1]
    priors = spec.priors
    if kind == "scores":
        llr_priors = None
        if st in ("llr", "log_likelihoods"):
            llr_priors = priors if priors is not None else np.bincount(labels, minlength=k) / len(labels)
        decisions = np.stack([np.asarray(bayes_decisions(s, spec.costs, priors=llr_priors, score_type=st)) for s in arrays])
    else:
        decisions = np.stack(arrays)
        if decisions.max() >= d or decisions.min() < 0:
            bad = next(f for f, a in zip(args.decisions, arrays) if a.max() >= d or a.min() < 0)
            raise InputError(f"{bad}: decisions must be in [0, {d}) for the cost matrix's {d} decisions")
    counts = confusion_matrix(labels, decisions, num_classes=k, num_decisions=d)
    cols = metric_columns(counts, costs=spec.costs, priors=priors, pos_label=args.pos_label)
    record = {
        "schema": JSON_SCHEMA_VERSION,
        "command": "metrics",
        "systems": names,
        "input": kind,
        "decisions_made_by": "Bayes decisions for the nominal costs" if kind == "scores" else "given",
        "classes": spec.classes,
        "decision_names": spec.decisions,
        "costs": spec.costs.tolist(),
        "priors": None if priors is None else np.asarray(priors).tolist(),
        "metrics": {c.name: _float_dict(names, c.values) for c in cols},
        "best": {c.name: names[winner(c)] for c in cols},
        "disagree_with_utility_yield": disagreements(cols),
    }
    out_dir = _out_dir(args)
    if kind == "scores" and k == 2 and d == 2:
        record["optimal_threshold"] = _binary_extras(args, labels, arrays, names, spec, out_dir, record)
    if kind == "scores" and out_dir is not None:
        _reliability_figures(args, labels, arrays, names, out_dir, record)
    if out_dir is not None and len(names) >= 2:
        from ecjax import plots

        by_name = {c.name: c.values for c in cols}
        if args.scatter_metric not in by_name:
            raise InputError(f"--scatter-metric: unknown metric {args.scatter_metric!r}; one of {sorted(by_name)}")
        fig = plots.metric_vs_yield(by_name["utility_yield"], by_name[args.scatter_metric],
                                    metric_name=args.scatter_metric, labels=names)
        record.setdefault("files", []).append(_save_figure(fig, out_dir, "metric_vs_yield.png", args.force))
    text = format_table(cols, names)
    for name, best in record.get("optimal_threshold", {}).items():
        text += (f"\n{name}: NEC {best['nec']:.4g} at the best threshold on the test data (optimistic; "
                 f"log-odds > {best['threshold']:.3g})")
    off = record["disagree_with_utility_yield"]
    if off:
        text += f"\n! metrics that pick a different winner than the utility yield: {', '.join(off)}"
    _emit(args, record, text, out_dir)
    return 0


def _binary_extras(args, labels, arrays, names, spec, out_dir, record):
    """EC at the empirically optimal threshold; with --out, threshold, ROC and Bayes-risk figures."""
    from ecjax import plots
    from ecjax.costs import normalize_rows
    from ecjax.scores import bayes_risk_curve, expected_cost_vs_threshold, optimal_threshold_expected_cost, roc_curve

    st = args.score_type
    costs = np.asarray(normalize_rows(spec.costs))
    p = spec.priors if spec.priors is not None else np.bincount(labels, minlength=2) / len(labels)
    # Priors enter the posteriors only for likelihood-type scores (see ecjax.bayes_decisions).
    priors = p if st in ("llr", "log_likelihoods") else spec.priors
    result = {}
    for s, name in zip(arrays, names):
        nec, thr = optimal_threshold_expected_cost(labels, s, costs, priors=priors, score_type=st, normalize=True)
        result[name] = {"nec": float(nec), "threshold": float(thr)}
    if out_dir is None:
        return result
    files = record.setdefault("files", [])
    # Bayes threshold on the class-1 log-odds: decide 1 iff P1 (c10 - c11) > P0 (c01 - c00);
    # for LLRs the prior log-odds move it (seed 001 eq. 20).
    bayes_thr = np.log((costs[0, 1] - costs[0, 0]) / (costs[1, 0] - costs[1, 1]))
    if st == "llr":
        bayes_thr -= np.log(p[1] / p[0])
    for s, name in zip(arrays, names):
        t, nec_t = expected_cost_vs_threshold(labels, s, costs, priors=priors, score_type=st, normalize=True)
        finite = np.isfinite(t)
        fig = plots.cost_vs_threshold(t[finite], nec_t[finite], bayes_threshold=float(bayes_thr),
                                      optimal_threshold=result[name]["threshold"],
                                      title=f"NEC against threshold: {name}")
        files.append(_save_figure(fig, out_dir, f"nec_threshold_{_safe(name)}.png", args.force))
    rocs = [roc_curve(labels, s, score_type=st)[:2] for s in arrays]
    fig = plots.roc_with_iso_utility([np.asarray(r[0]) for r in rocs], [np.asarray(r[1]) for r in rocs],
                                     utilities=-costs, priors=p, names=names)
    files.append(_save_figure(fig, out_dir, "roc.png", args.force))
    if st in ("llr", "log_posteriors", "logits"):
        curves = [bayes_risk_curve(labels, s, score_type=st, priors=None) for s in arrays]
        fig = plots.bayes_risk_curves(curves[0].prior_log_odds, [c.actual for c in curves],
                                      [c.minimum for c in curves], names=names)
        files.append(_save_figure(fig, out_dir, "bayes_risk.png", args.force))
    return result


def _safe(name):
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def _reliability_figures(args, labels, arrays, names, out_dir, record):
    from ecjax import plots
    from ecjax.scores import reliability_bins

    if args.score_type not in ("log_posteriors", "logits"):
        return
    for s, name in zip(arrays, names):
        b = reliability_bins(labels, s, score_type=args.score_type)
        fig = plots.reliability_diagram(b.confidence, b.frequency, b.count, title=f"Reliability: {name}")
        record.setdefault("files", []).append(_save_figure(fig, out_dir, f"reliability_{_safe(name)}.png", args.force))


def cmd_calibrate(args):
    """Fit a calibrator on (--train-scores, --train-labels), apply it to --scores, write the result."""
    import io as _io

    from ecjax import calibration
    from ecjax.io import load_array, write_atomic

    st = args.score_type
    train_labels = _load_labels(args.train_labels)
    train = load_array(args.train_scores)
    test = load_array(args.scores)
    want = 1 if st == "llr" else 2
    for f, a in ((args.train_scores, train), (args.scores, test)):
        if a.ndim != want:
            raise InputError(f"{f}: scores must have shape {'(N,)' if want == 1 else '(N, K)'}, got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise InputError(f"{f}: scores contain NaN or inf")
    if train.shape[0] != train_labels.shape[0]:
        raise InputError(f"{args.train_scores}: has {train.shape[0]} samples but {args.train_labels} has {train_labels.shape[0]}")
    if want == 2 and train.shape[1] != test.shape[1]:
        raise InputError(f"{args.scores}: has {test.shape[1]} classes but the training scores have {train.shape[1]}")
    method = "llr" if st == "llr" else args.method
    cal = calibration.fit(train, train_labels, method=method, score_type=st, loss=args.loss)
    out = np.asarray(cal.apply(test), dtype=np.float64)
    buf = _io.BytesIO()
    np.save(buf, out, allow_pickle=False)
    write_atomic(args.output, buf.getvalue(), force=args.force)
    record = {
        "schema": JSON_SCHEMA_VERSION,
        "command": "calibrate",
        "method": method,
        "loss": args.loss,
        "output": str(args.output),
        "output_type": "llr" if method == "llr" else "log_posteriors",
        "parameters": {k: np.asarray(v).tolist() for k, v in cal.params.items()},
        "iterations": int(cal.num_iterations),
        "grad_norm": float(cal.grad_norm),
        "converged": bool(cal.converged),
        "training_loss": float(cal.loss),
    }
    lines = [f"fitted {method} calibrator on {args.train_scores} ({train.shape[0]} samples, loss {args.loss}): "
             f"{record['iterations']} L-BFGS iterations, gradient norm {record['grad_norm']:.2g}"
             + ("" if record["converged"] else "  (NOT converged)"),
             f"wrote calibrated {record['output_type']} of {args.scores} to {args.output}"]
    if args.labels is not None:
        labels = _load_labels(args.labels)
        if labels.shape[0] != test.shape[0]:
            raise InputError(f"{args.labels}: has {labels.shape[0]} labels but {args.scores} has {test.shape[0]} samples")
        out_type = "llr" if method == "llr" else "log_posteriors"
        raw_type = st
        if raw_type == "logits":
            test = test - np.logaddexp.reduce(test, axis=-1, keepdims=True)
            raw_type = "log_posteriors"
        if raw_type == out_type:
            priors = None
            if out_type == "llr":
                priors = np.bincount(labels, minlength=2) / len(labels)
            loss = {m: float(calibration.calibration_loss(test, out, labels, metric=m, priors=priors, score_type=out_type))
                    for m in ("xe", "brier")}
            record["relative_calibration_loss_percent"] = loss
            lines.append("relative calibration loss on the test labels (held-out calibrator, seed 002 eq. 60): "
                         + ", ".join(f"{m} {v:.1f} %" for m, v in loss.items()))
    _emit(args, record, "\n".join(lines), _out_dir(args))
    return 0


def cmd_compare(args):
    """Posterior ranking under an uncertain cost specification (ecjax.prob.compare)."""
    import jax

    from ecjax import plots, prob

    kind, labels, label_files, arrays, names = _load_inputs(args)
    files = args.scores or args.decisions
    st = args.score_type
    k = 2 if (kind == "scores" and st == "llr") else (arrays[0].shape[1] if kind == "scores" else None)
    if args.costs is None:
        raise InputError("--costs: compare needs a cost specification (see `ecjax.io` for the format)")
    if k is None:
        k = _num_classes(labels[0], kind, arrays, st, args.costs)
    spec = _cost_spec(args, k)
    k, d = spec.costs.shape
    if kind == "decisions":
        for f, a, y, lf in zip(files, arrays, labels, label_files):
            if a.min() < 0 or a.max() >= d:
                raise InputError(f"{f}: decisions must be in [0, {d}) for the cost matrix's {d} decisions")
            if y.min() < 0 or y.max() >= k:
                raise InputError(f"{lf}: labels must be in [0, {k}) for the cost matrix's {k} classes")
    shared = all(np.array_equal(labels[0], y) for y in labels[1:])
    paired = shared and not args.unpaired
    costs = prob.intervals(spec.costs_low, spec.costs_high, kind="cost") if spec.uncertain else spec.costs
    if spec.priors_low is not None:
        priors = prob.interval_priors(spec.priors_low, spec.priors_high)
    else:
        priors = spec.priors
    common = dict(costs=costs, priors=priors, paired=paired, num_draws=args.draws, key=jax.random.key(args.seed),
                  rope=args.rope, systems=names)
    lab = labels[0] if paired else list(labels)
    if kind == "scores":
        result = prob.compare(lab, scores=arrays if not paired else np.stack(arrays), score_type=st, **common)
    else:
        result = prob.compare(lab, arrays if not paired else np.stack(arrays), **common)
    record = {
        "schema": JSON_SCHEMA_VERSION,
        "command": "compare",
        "systems": list(result.systems),
        "paired": paired,
        "input": kind,
        "num_draws": result.num_draws,
        "classes": spec.classes,
        "decision_names": spec.decisions,
        "nominal_costs": spec.costs.tolist(),
        "uncertain_costs": spec.uncertain,
        "expected_utility_matrix": np.asarray(result.expected_utility_matrix).tolist(),
        "expected_yield": _float_dict(names, result.expected_yield),
        "hdi_prob": result.hdi_prob,
        "hdi": {n: [float(x) for x in h] for n, h in zip(names, np.asarray(result.hdi))},
        "p_best": _float_dict(names, result.p_best),
        "rank_probabilities": np.asarray(result.rank_probabilities).tolist(),
        "pairwise": np.asarray(result.pairwise).tolist(),
        "recommendation": result.best,
        "recommendation_probability": float(result.recommendation_probability),
    }
    if result.rope_probabilities is not None:
        record["rope"] = result.rope
        record["rope_probabilities"] = np.asarray(result.rope_probabilities).tolist()
    if result.doubt is not None:
        record["doubt"] = {"both": result.doubt.doubt_both, "costs_only": result.doubt.doubt_costs_only,
                           "test_set_only": result.doubt.doubt_rates_only}
    out_dir = _out_dir(args)
    if out_dir is not None:
        fig = plots.yield_posteriors(np.asarray(result.yields), names=names, p_best=np.asarray(result.p_best))
        record.setdefault("files", []).append(_save_figure(fig, out_dir, "yield_posteriors.png", args.force))
        fig = plots.rank_probabilities(np.asarray(result.rank_probabilities), names=names)
        record["files"].append(_save_figure(fig, out_dir, "rank_probabilities.png", args.force))
    text = ("paired comparison (same samples)\n" if paired else "unpaired comparison\n") + result.summary()
    _emit(args, record, text, out_dir)
    return 0


def cmd_sweep(args):
    """Winner maps and tables over the utility space, a cost ratio, or random cost matrices."""
    import jax

    from ecjax import plots, prob, sweep
    from ecjax.confusion import confusion_matrix

    kind, labels, label_files, arrays, names = _load_inputs(args)
    st = args.score_type
    if kind == "scores":
        k = 2 if st == "llr" else arrays[0].shape[1]
    else:
        k = _num_classes(labels[0], kind, arrays, st, args.costs)
    for y, lf in zip(labels, label_files):
        if y.max() >= k:
            raise InputError(f"{lf}: label {y.max()} is out of range for {k} classes")
    spec = _cost_spec(args, k)
    priors = spec.priors
    if kind == "decisions":
        d = spec.costs.shape[1] if args.over == "matrices" else 2
        for f, a in zip(args.decisions, arrays):
            if a.min() < 0 or a.max() >= d:
                raise InputError(f"{f}: decisions must be in [0, {d})")
        counts = np.stack([np.asarray(confusion_matrix(y, a, num_classes=k, num_decisions=d))
                           for y, a in zip(labels, arrays)])
    shared = all(np.array_equal(labels[0], y) for y in labels[1:])
    lab = labels[0] if shared else np.stack(labels) if len({len(y) for y in labels}) == 1 else None
    if kind == "scores" and lab is None:
        raise InputError("--labels: systems with test sets of different sizes cannot be swept together")
    scores = np.stack(arrays) if kind == "scores" else None
    score_priors = priors
    if kind == "scores" and st in ("llr", "log_likelihoods") and priors is None:
        score_priors = np.bincount(labels[0], minlength=k) / len(labels[0])
    record = {"schema": JSON_SCHEMA_VERSION, "command": "sweep", "over": args.over, "systems": names, "input": kind}
    out_dir = _out_dir(args)
    if args.over == "utility-space":
        if k != 2:
            raise InputError(f"--over utility-space needs binary problems (K = 2), got K = {k}")
        if kind == "scores":
            m = sweep.utility_space_map(labels=lab, scores=scores, priors=score_priors, score_type=st,
                                        resolution=args.resolution)
        else:
            m = sweep.utility_space_map(counts, priors=priors, resolution=args.resolution)
        record["win_fraction"] = _float_dict(names, m.win_fraction)
        record["resolution"] = args.resolution
        lines = [f"winner over the binary utility space of seed 004 Fig. 1 ({args.resolution} x {args.resolution} grid):"]
        lines += [f"  {n:20s} wins {100 * float(w):5.1f} % of the space" for n, w in zip(names, m.win_fraction)]
        record["tie_fraction"] = float(m.result.tie_fraction)
        if m.result.tie_fraction > 0:
            lines.append(f"  tied (all make the same decisions, often the naive one) on {100 * m.result.tie_fraction:.1f} %")
        if out_dir is not None:
            fig = plots.winner_map(m.x, m.y, m.winners, names=names)
            record.setdefault("files", []).append(_save_figure(fig, out_dir, "winner_map.png", args.force))
    else:
        if args.over == "cost-ratio":
            if k != 2 or spec.costs.shape[1] != 2:
                raise InputError("--over cost-ratio needs binary problems with 2 decisions")
            if not 0 < args.lo < args.hi:
                raise InputError(f"--lo/--hi must satisfy 0 < lo < hi, got {args.lo}, {args.hi}")
            axis = sweep.grids.cost_ratios(args.lo, args.hi, args.resolution)
            coord_name = "cost ratio c10 / c01"
        else:
            if not spec.uncertain:
                raise InputError(f"{args.costs}: --over matrices needs an [uncertainty] table to draw cost matrices from")
            prior = prob.intervals(spec.costs_low, spec.costs_high, kind="cost")
            axis = -np.asarray(prior.sample(jax.random.key(args.seed), args.resolution))  # samples are utilities
            coord_name = "random cost matrix"
        if kind == "scores":
            res = sweep.sweep_scores(lab, scores, axis, priors=score_priors, score_type=st, normalize=True)
        else:
            res = sweep.sweep_counts(counts, axis, priors=priors, normalize=True)
        record["win_fraction"] = _float_dict(names, res.win_fraction)
        record["tie_fraction"] = float(res.tie_fraction)
        record["num_points"] = int(res.num_points)
        lines = [f"NEC over {np.prod(res.shape)} points ({coord_name}):"]
        lines += [f"  {n:20s} best at {100 * float(w):5.1f} % of the points, NEC from {float(lo):.3f} to {float(hi):.3f}"
                  for n, w, lo, hi in zip(names, res.win_fraction, res.minimum, res.maximum)]
        if res.tie_fraction > 0:
            lines.append(f"  tied (all make the same decisions, often the naive one) at {100 * res.tie_fraction:.1f} %")
        if args.over == "cost-ratio":
            ratios = np.asarray(res.coords[0]) if res.coords and res.coords[0] is not None else None
            flips = {}
            for a in range(len(names)):
                for b in range(a + 1, len(names)):
                    idx = res.flip_points(a, b)
                    if len(idx) and ratios is not None:
                        flips[f"{names[a]} / {names[b]}"] = [float(ratios[i[0]]) for i in idx]
            record["flips_at_cost_ratio"] = flips
            for pair, at in flips.items():
                lines.append(f"  ranking of {pair} flips at cost ratio " + ", ".join(f"{r:.3g}" for r in at))
            if out_dir is not None and ratios is not None and res.values is not None:
                fig = plots.sweep_curves(ratios, res.values, names=names, xlabel="cost ratio c10 / c01",
                                         ylabel="NEC", log_x=True, flips=[r for at in flips.values() for r in at])
                record.setdefault("files", []).append(_save_figure(fig, out_dir, "sweep_cost_ratio.png", args.force))
    _emit(args, record, "\n".join(lines), out_dir)
    return 0


def cmd_demo(args):
    from ecjax import demo

    demo.run(seed=args.seed)
    return 0


# ------------------------------------------------------------------ parser

def _add_common(p, labels_per_system=False):
    if labels_per_system:
        p.add_argument("--labels", required=True, nargs="+", metavar="FILE",
                       help="true classes: one file shared by all systems (paired), or one file per system")
    else:
        p.add_argument("--labels", required=True, help="true classes: .npy/.npz/.csv vector of N integers")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--scores", nargs="+", metavar="FILE", help="one (N, K) score file per system")
    g.add_argument("--decisions", nargs="+", metavar="FILE", help="one (N,) decision file per system")
    p.add_argument("--score-type", default="log_posteriors",
                   choices=["log_posteriors", "logits", "llr", "log_likelihoods"], help="type of --scores")
    p.add_argument("--names", nargs="+", help="system names (default: file stems)")
    p.add_argument("--costs", metavar="SPEC", help="cost specification, .toml or .json (default: 0-1 costs)")
    p.add_argument("--json", action="store_true", help="print a JSON record instead of the table")
    p.add_argument("--out", metavar="DIR", help="write the JSON record and figures into DIR")
    p.add_argument("--force", action="store_true", help="overwrite existing output files")


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ecjax", description="Evaluate classifiers by expected cost and utility yield.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the main job on data the package carries or generates")
    demo.add_argument("--seed", type=int, default=0, help="key for the generated screening data (default 0)")
    m = sub.add_parser("metrics", help="EC, NEC, utility yield and the classical metrics of one or more systems")
    _add_common(m)
    m.add_argument("--pos-label", type=int, default=1, help="positive class of the binary metrics (default 1)")
    m.add_argument("--scatter-metric", default="F1",
                   help="with --out and several systems: the metric plotted against the utility yield (default F1)")
    cp = sub.add_parser("compare", help="which classifier, and how sure are we, under uncertain costs")
    _add_common(cp, labels_per_system=True)
    cp.add_argument("--unpaired", action="store_true", help="treat systems as scored on independent samples")
    cp.add_argument("--draws", type=int, default=20_000, help="posterior draws (default 20000)")
    cp.add_argument("--seed", type=int, default=0, help="random key (default 0)")
    cp.add_argument("--rope", type=float, help="half-width of the region of practical equivalence (yield units)")
    sw = sub.add_parser("sweep", help="which system wins where: utility-space winner maps, cost-ratio sweeps")
    _add_common(sw, labels_per_system=True)
    sw.add_argument("--over", default="utility-space", choices=["utility-space", "cost-ratio", "matrices"],
                    help="what to sweep: the binary utility space of seed 004 Fig. 1, the binary cost ratio "
                         "c10/c01, or random cost matrices drawn from the cost file's [uncertainty] intervals")
    sw.add_argument("--resolution", type=int, default=101, help="grid points per axis / number of points")
    sw.add_argument("--lo", type=float, default=0.01, help="smallest cost ratio (cost-ratio sweeps)")
    sw.add_argument("--hi", type=float, default=100.0, help="largest cost ratio (cost-ratio sweeps)")
    sw.add_argument("--seed", type=int, default=0, help="random key for --over matrices")
    c = sub.add_parser("calibrate", help="fit a calibrator on one file, apply it to another, write calibrated scores")
    c.add_argument("--train-scores", required=True, metavar="FILE", help="(N, K) scores to fit on ((N,) for llr)")
    c.add_argument("--train-labels", required=True, metavar="FILE", help="their true classes")
    c.add_argument("--scores", required=True, metavar="FILE", help="scores to calibrate")
    c.add_argument("--labels", metavar="FILE", help="optional true classes of --scores: report the calibration loss")
    c.add_argument("--output", required=True, metavar="FILE.npy", help="where to write the calibrated scores")
    c.add_argument("--method", default="affine",
                   choices=["affine", "temperature", "bias", "vector", "matrix", "histogram"],
                   help="calibration transform (llr scores always use the binary LLR calibration)")
    c.add_argument("--loss", default="xe", choices=["xe", "brier"], help="training objective")
    c.add_argument("--score-type", default="log_posteriors",
                   choices=["log_posteriors", "logits", "llr", "log_likelihoods"], help="type of the scores")
    c.add_argument("--json", action="store_true", help="print a JSON record instead of text")
    c.add_argument("--out", metavar="DIR", help="also write the JSON record into DIR")
    c.add_argument("--force", action="store_true", help="overwrite existing output files")
    return parser


COMMANDS = {"demo": cmd_demo, "metrics": cmd_metrics, "calibrate": cmd_calibrate, "compare": cmd_compare, "sweep": cmd_sweep}


def main(argv=None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except InputError as err:
        print(f"ecjax {args.command}: error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - the last line of defence
        if os.environ.get("ECJAX_DEBUG"):
            raise
        print(f"ecjax {args.command}: internal error: {type(err).__name__}: {err} (set ECJAX_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
