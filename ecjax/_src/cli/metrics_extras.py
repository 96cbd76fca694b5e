"""What ``metrics`` adds on request: thresholds that maximize a metric (--metric-thresholds), curves and their
bands (--curves, --curve-bands), a bootstrap posterior (--bootstrap) and per-sample costs (--sample-costs)."""

from __future__ import annotations

import numpy as np

from ecjax._src import random_bits
from ecjax._src.cli import progress
from ecjax._src.cli.data import Inputs, load_sample_costs
from ecjax._src.cli.files import Run, check_of, output_folder
from ecjax._src.cli.options import BOOTSTRAP_DRAWS
from ecjax._src.cli.output import float_dict
from ecjax._src.cli.rules import or_default
from ecjax._src.inputs import LIKELIHOOD_TYPES, InputError, check_binary
from ecjax._src.scores.inputs import likelihood_priors, score_priors

# metrics --curves: the credible bands of the ROC and precision-recall curves (ecjax.prob.curve_band).
CURVE_BAND_DRAWS = 1000
CURVE_BAND_LEVEL = 0.95


# Threshold probabilities of the decision curves in the JSON record: 1 % to 99 %, the range clinicians read.
DECISION_CURVE_THRESHOLDS = np.round(np.arange(1, 100) / 100, 2)


# Folds of the cross-validated calibration behind the implied costs of --metric-thresholds.
IMPLIED_COST_FOLDS = 5


def _calibrated_threshold(args, y, s, metric, spec, w):
    """The metric's best threshold on cross-validated affine-calibrated scores (LLR calibration for LLRs), or why
    none was computed (a class with fewer samples than folds)."""
    from ecjax._src import calibration
    from ecjax._src.refinement import calibrated_metric_threshold

    st = args.score_type
    out_type = calibration.CALIBRATORS["llr" if st == "llr" else "affine"].output_type
    try:
        r = calibrated_metric_threshold(
            y, s, protocol=calibration.CrossValidation(random_bits.key(or_default(args.seed, 0)), IMPLIED_COST_FOLDS),
            metric=metric, score_type=st, priors=score_priors(out_type, spec.priors, y, 2, w), sample_weight=w)
    except InputError as err:  # too few samples of a class for the folds: the raw numbers stand alone
        return {"not_computed": " ".join(str(err).split())}
    return {"protocol": f"{IMPLIED_COST_FOLDS}-fold cross-validated affine calibration", "threshold": float(r.threshold),
            "implied_cost_ratio": float(r.implied_cost_ratio), "implied_nec": float(r.implied_nec)}


def threshold_and_curve_extras(args, run: Run, data: Inputs, spec, k, record):
    """--metric-thresholds and --curves: into ``record``; returns the lines they add to the table's text."""
    from ecjax._src.scores.bayes_decisions import decision_curve
    from ecjax._src.scores.ranking_curves import average_precision, det_curve, precision_recall_curve
    from ecjax._src.scores.roc import auc_one_vs_one
    from ecjax._src.scores.thresholds import optimal_metric_threshold

    if not (args.metric_thresholds or args.curves):
        return ""
    if args.metric_thresholds:
        check_of("--metric-thresholds", check_binary, k, "the threshold of a metric")
    # The files' canonical scores (ecjax.inputs.Scores): the library does not check them again.
    labels, arrays, names, weights = data.labels, data.scores, data.names, data.weights
    st = args.score_type
    text = ""
    if args.metric_thresholds:
        record["metric_thresholds"] = {}
        text += ("\nthresholds that maximize a metric, and the cost of a miss (in false alarms) for which each is "
                 "the Bayes threshold -- which holds only if the scores are calibrated probabilities; 'calibrated' "
                 f"is the same metric's threshold after {IMPLIED_COST_FOLDS}-fold cross-validated affine calibration "
                 f"(--seed {or_default(args.seed, 0)}):")
        for y, s, name, w in zip(labels, arrays, names, weights):
            rows = record["metric_thresholds"][name] = {}
            for metric in ("f1", "mcc", "youden"):
                r = optimal_metric_threshold(y, s, metric=metric, score_type=st,
                                             priors=score_priors(st, spec.priors, y, 2, w), sample_weight=w)
                rows[metric] = {"value": float(r.metric_value), "threshold": float(r.threshold),
                                "implied_cost_ratio": float(r.implied_cost_ratio),
                                "effective_prior_log_odds": float(r.effective_prior_log_odds),
                                "implied_nec": float(r.implied_nec),
                                "calibrated": _calibrated_threshold(args, y, s, metric, spec, w)}
                cal = rows[metric]["calibrated"]
                text += (f"\n  {name}: best {metric.upper() if metric != 'youden' else 'Youden J'} "
                         f"{rows[metric]['value']:.4f} at {'LLR' if st in LIKELIHOOD_TYPES else 'log-odds'} > "
                         f"{rows[metric]['threshold']:.3g}: a miss costs {rows[metric]['implied_cost_ratio']:.3g} "
                         "false alarms if these scores are calibrated; "
                         + (f"calibrated, {cal['implied_cost_ratio']:.3g} (implied NEC {cal['implied_nec']:.3g})"
                            if "implied_cost_ratio" in cal else f"not calibrated: {cal['not_computed']}"))
    if args.curves:
        from ecjax._src.scores.risk_coverage import risk_coverage_curve

        record["curves"] = {}
        bands = []
        for y, s, name, w in zip(labels, arrays, names, weights):
            rc = risk_coverage_curve(y, s, priors=likelihood_priors(st, spec.priors, y, k, w), score_type=st,
                                     sample_weight=w)
            abstention = rc.points()  # each point once: ties and weight-0 samples add none
            text += (f"\n{name}: abstention AURC {float(rc.aurc):.4f} (excess over the oracle "
                     f"{float(rc.excess_aurc):.4f})")
            if k > 2:
                ovo = float(auc_one_vs_one(y, s, priors=likelihood_priors(st, spec.priors, y, k, w), score_type=st,
                                           sample_weight=w))
                record["curves"][name] = {"auc_one_vs_one": ovo, "risk_coverage": abstention}
                text += f"\n{name}: AUC one-vs-one (Hand & Till) {ovo:.4f}"
                continue
            pr = precision_recall_curve(y, s, score_type=st, sample_weight=w)
            det = det_curve(y, s, score_type=st, sample_weight=w)
            dc = decision_curve(y, s, threshold_probabilities=DECISION_CURVE_THRESHOLDS, score_type=st,
                                priors=likelihood_priors(st, spec.priors, y, 2, w), sample_weight=w)
            ap = float(average_precision(y, s, score_type=st, sample_weight=w))
            record["curves"][name] = {
                "average_precision": ap,
                "precision_recall": {f: np.asarray(x).tolist() for f, x in zip(pr._fields, pr)},
                "det": {f: np.asarray(x).tolist() for f, x in zip(det._fields, det)},
                "decision_curve": {f: np.asarray(x).tolist() for f, x in zip(dc._fields, dc)},
                "risk_coverage": abstention,
            }
            if args.curve_bands:  # a bootstrap per system and curve: asked for, not the price of every --curves
                bands.append(_curve_bands(args, y, s, w, record["curves"][name]))
            text += f"\n{name}: average precision {ap:.4f}"
        if k == 2 and args.curve_bands:
            text += (f" (curve points, and {CURVE_BAND_LEVEL:.0%} credible bands of the ROC and precision-recall "
                     "curves: --json or --out)")
            _curve_band_figures(args, run, bands, names, record)
        elif k == 2:
            text += " (curve points: --json or --out; their credible bands: --curve-bands)"
    return text


def _curve_bands(args, labels, scores, sample_weight, entry):
    """--curves, binary: Bayesian-bootstrap bands of the ROC and precision-recall curves (ecjax.prob.curve_band)
    into the system's ``entry`` of the record; returns them."""
    from ecjax._src.prob.curve_bands import curve_band

    out = []
    key = random_bits.key(or_default(args.seed, 0))
    for i, curve in enumerate(("roc", "precision_recall")):
        band = curve_band(labels, scores, curve=curve, key=random_bits.fold_in(key, i),
                          num_draws=CURVE_BAND_DRAWS, level=CURVE_BAND_LEVEL, score_type=args.score_type,
                          sample_weight=sample_weight)
        entry[f"{curve}_band"] = band.to_dict()
        out.append(band)
    return out


def _curve_band_figures(args, run, bands, names, record):
    """--curves with --out: the ROC and the precision-recall curves of every system with their bands."""
    out_dir = output_folder(args)
    if out_dir is None:
        return
    from ecjax._src import plots

    for i, curve in enumerate(("roc", "precision_recall")):
        fig = plots.curve_bands([b[i] for b in bands], names=names)
        record.setdefault("files", []).append(run.save_figure(fig, out_dir / f"{curve}_bands.png"))


def bootstrap_extras(args, data: Inputs, spec, k, record):
    """--bootstrap METRIC: the Bayesian-bootstrap posterior of a score metric of every system, paired."""
    if args.bootstrap is None:
        return ""
    from ecjax._src import prob
    from ecjax._src.prob.bootstrap import BUILTIN_METRICS, bootstrap_metric

    labels, names, weights = data.labels, data.names, data.weights
    st = args.score_type
    # Paired: the bootstrap reweights the samples every system shares, so the library refuses systems whose
    # labels or weights differ.  The scores as the file check made them canonical: not checked again.
    systems = check_of("--bootstrap", prob.Systems, labels, scores=data.scores, score_type=st, names=names,
                       sample_weight=None if weights[0] is None else weights)
    y = labels[0]
    uses_priors = "priors" in BUILTIN_METRICS[args.bootstrap].options
    priors = likelihood_priors(st, spec.priors, y, k, weights[0]) if st in LIKELIHOOD_TYPES else (
        spec.priors if uses_priors else None)
    seed, draws = or_default(args.seed, 0), or_default(args.bootstrap_draws, BOOTSTRAP_DRAWS)
    lines = progress.progress_lines(args, "ecjax metrics --bootstrap")
    post = bootstrap_metric(systems, args.bootstrap, key=random_bits.key(seed), priors=priors,
                            settings=prob.MonteCarloSettings(num_draws=draws,
                                                             progress=False if lines is None else lines))
    record["bootstrap"] = {**post.to_dict(), "seed": seed}
    return "\n" + post.summary()


def sample_cost_extras(args, run: Run, data: Inputs, decisions, k, spec, record):
    """The EC (NEC, and for binary scores the best single threshold) of each system under --sample-costs."""
    from ecjax._src.scores import sample_costs as sc

    # Scores as their canonical value (checked once), decisions as given.
    kind, labels, names, weights = data.kind, data.labels, data.names, data.weights
    arrays = data.scores if kind == "scores" else data.arrays
    costs = load_sample_costs(args, run, labels, args.labels, k, spec.costs)
    y, w = labels[0], weights[0]
    if kind == "scores":  # Bayes decisions of each sample's own matrix
        decisions = [np.asarray(sc.sample_bayes_decisions(a, costs, score_type=args.score_type)) for a in arrays]
    ec = [float(sc.sample_expected_cost(y, d, costs, priors=spec.priors, sample_weight=w)) for d in decisions]
    try:
        nec: list[float | None] = [float(sc.sample_normalized_expected_cost(y, d, costs, priors=spec.priors,
                                                                            sample_weight=w)) for d in decisions]
    except InputError:  # the best single decision costs nothing (or gains): the NEC is undefined
        nec = [None] * len(decisions)
    out = {"file": args.sample_costs, "EC": float_dict(names, ec), "NEC": dict(zip(names, nec)),
           "decisions": "per-sample Bayes decisions" if kind == "scores" else "given"}
    text = "\nper-sample costs (" + out["decisions"] + "): " + ", ".join(
        f"{n} EC {e:.6g}" + ("" if v is None else f" NEC {v:.4g}") for n, e, v in zip(names, ec, nec))
    if kind == "scores" and k == 2 and (costs.base if isinstance(costs, sc.SampleCosts) else costs).shape[-1] == 2:
        best = [sc.sample_optimal_threshold_expected_cost(y, a, costs, priors=spec.priors, sample_weight=w,
                                                          score_type=args.score_type) for a in arrays]
        out["best_threshold"] = {n: {"ec": float(b.expected_cost), "threshold": float(b.threshold)}
                                 for n, b in zip(names, best)}
        text += "\n  best single threshold (optimistic): " + ", ".join(
            f"{n} EC {float(b.expected_cost):.6g} at log-odds > {float(b.threshold):.3g}" for n, b in zip(names, best))
    record["sample_costs"] = out
    return text
