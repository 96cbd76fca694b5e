"""The figures of ``metrics --out`` for scores: NEC against the threshold, ROC (and DET) with iso-utility lines,
Bayes-risk curves and reliability diagrams; and the NEC at the best threshold on the test data."""

from __future__ import annotations

import numpy as np

from ecjax._src.cli.data import Inputs
from ecjax._src.cli.files import Run
from ecjax._src.decisions import binary_bayes_threshold
from ecjax._src.inputs import POSTERIOR_TYPES
from ecjax._src.scores.inputs import priors_or_frequencies, score_priors


def binary_extras(args, run: Run, data: Inputs, spec, out_dir, record, training):
    """EC at the empirically optimal threshold; with --out, threshold, ROC and Bayes-risk figures.

    ``data.labels`` holds each system's own label vector."""
    from ecjax._src import plots
    from ecjax._src.costs import normalize_rows
    from ecjax._src.scores import bayes_risk_curve, expected_cost_vs_threshold, optimal_threshold_expected_cost, roc_curve

    # The files' canonical scores (ecjax.inputs.Scores): the library does not check them again.
    labels, arrays, names, weights = data.labels, data.scores, data.names, data.weights
    st = args.score_type
    costs = np.asarray(normalize_rows(spec.costs))
    result = {}
    for y, s, name, w in zip(labels, arrays, names, weights):
        nec, thr = optimal_threshold_expected_cost(y, s, costs, priors=score_priors(st, spec.priors, y, 2, w),
                                                   score_type=st, normalize=True, sample_weight=w)
        result[name] = {"nec": float(nec), "threshold": float(thr)}
    if out_dir is None:
        return result
    files = record.setdefault("files", [])
    for y, s, name, t, w in zip(labels, arrays, names, training, weights):
        bayes_thr = binary_bayes_threshold(costs, priors_or_frequencies(spec.priors, y, 2, w), score_type=st,
                                           training_priors=t)
        t, nec_t = expected_cost_vs_threshold(y, s, costs, priors=score_priors(st, spec.priors, y, 2, w),
                                              score_type=st, normalize=True, sample_weight=w)
        finite = np.isfinite(t)
        fig = plots.cost_vs_threshold(t[finite], nec_t[finite], bayes_threshold=float(bayes_thr),
                                      optimal_threshold=result[name]["threshold"],
                                      frame=plots.Frame(title=f"NEC against threshold: {name}"))
        files.append(run.save_figure(fig, out_dir / f"nec_threshold_{_safe(name)}.png"))
    rocs = [roc_curve(y, s, score_type=st, sample_weight=w)[:2] for y, s, w in zip(labels, arrays, weights)]
    # The iso-utility lines use the deployment priors, else the class frequencies of all the label files together.
    pooled = np.concatenate(labels)
    p = priors_or_frequencies(spec.priors, pooled, 2, None if weights[0] is None else np.concatenate(weights))
    fig = plots.roc_with_iso_utility([np.asarray(r[0]) for r in rocs], [np.asarray(r[1]) for r in rocs],
                                     costs=costs, priors=p, names=names, frame=plots.Frame(class_names=spec.classes))
    files.append(run.save_figure(fig, out_dir / "roc.png"))
    if args.curves:  # the figure a speaker-verification user looks for: miss rate against false alarms
        fig = plots.roc_with_iso_utility([np.asarray(r[0]) for r in rocs], [np.asarray(r[1]) for r in rocs],
                                         costs=costs, priors=p, names=names, det=True,
                                         frame=plots.Frame(class_names=spec.classes))
        files.append(run.save_figure(fig, out_dir / "det.png"))
    if st in ("llr", "log_posteriors", "logits"):
        curves = [bayes_risk_curve(y, s, score_type=st, priors=None, sample_weight=w)
                  for y, s, w in zip(labels, arrays, weights)]
        fig = plots.bayes_risk_curves(curves, names=names)
        files.append(run.save_figure(fig, out_dir / "bayes_risk.png"))
    return result


def _safe(name):
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def reliability_figures(args, run: Run, data: Inputs, out_dir, record):
    """Each system's reliability diagram (posterior-type scores), into --out."""
    from ecjax._src import plots

    if args.score_type not in POSTERIOR_TYPES:
        return
    for y, s, name, w in zip(data.labels, data.arrays, data.names, data.weights):
        # Equal-mass bins when the scores are skewed, and the multiclass axis names: the plot decides from the data.
        fig = plots.reliability_diagram(labels=y, scores=s, score_type=args.score_type, sample_weight=w,
                                        frame=plots.Frame(title=f"Reliability: {name}"))
        record.setdefault("files", []).append(run.save_figure(fig, out_dir / f"reliability_{_safe(name)}.png"))
