"""``ecjax metrics``: EC, NEC, utility yield and the classical metrics of one or more systems."""

from __future__ import annotations

import argparse

import numpy as np

from ecjax._src.cli import metrics_extras as extras
from ecjax._src.cli.data import cost_spec, count_classes, load_inputs
from ecjax._src.cli.files import Run, check_of, output_folder, within
from ecjax._src.cli.metrics_figures import binary_extras, reliability_figures
from ecjax._src.cli.output import JSON_SCHEMA_VERSION, emit
from ecjax._src.cli.priors import (check_naive, check_test_covers_priors, decisions_made_by, deployment_priors,
                                   training_priors)
from ecjax._src.inputs import POSTERIOR_TYPES, as_pos_label, check_choice
from ecjax._src.scores.inputs import likelihood_priors, score_priors


def cmd_metrics(args: argparse.Namespace, run: Run) -> int:
    """EC, NEC, utility yield and the classical metrics of every system, with what the options add."""
    from ecjax._src.confusion import confusion_matrix
    from ecjax._src.report import (CONVENTIONS, averaging_note, disagreements, metric_columns, no_better_than_naive,
                                   score_columns, winner, winners)

    st = args.score_type
    data = load_inputs(args, run)
    kind, labels, label_files, arrays, names, weights, canonical = data
    out_dir = output_folder(args)
    files = args.scores or args.decisions
    k = max(count_classes(y, kind, arrays, st, args.costs, lf, files) for y, lf in zip(labels, label_files))
    for y, lf in zip(labels, label_files):
        within(lf, y, k, "labels", "the classes of the scores")
    check_of("--pos-label", as_pos_label, args.pos_label, k)
    spec = cost_spec(args, k)
    d = spec.costs.shape[1]
    shift = deployment_priors(args, run, spec, labels[0], canonical[0], names) if args.deployment_scores else None
    if shift is not None:  # the estimate as the cost specification's priors
        spec = shift[0]
    priors = spec.priors
    for y, lf, w in zip(labels, label_files, weights):
        check_test_covers_priors(spec, y, lf, args.costs, w)
        check_naive(spec.costs, spec.priors, y, lf, args.costs, w)
    training = training_priors(args, spec, labels, label_files, k, weights)
    if kind == "scores":
        decisions = _nominal_decisions(spec, st, labels, canonical, training, weights, k)
    else:
        decisions = arrays
        for f, a in zip(files, arrays):
            within(f, a, d, "decisions", "the cost matrix's decisions")
    # Each system against its own labels (they may differ in order or in number of samples).
    counts = np.stack([np.asarray(confusion_matrix(y, dm, num_classes=k, num_decisions=d, sample_weight=w))
                       for y, dm, w in zip(labels, decisions, weights)])
    cols = metric_columns(counts, costs=spec.costs, priors=priors, pos_label=args.pos_label)
    # The library takes the files' canonical scores (ecjax.inputs.Scores) as their check made them: not checked again.
    if kind == "scores":  # how good the scores are as posteriors, whatever the decisions
        cols += score_columns(labels, canonical, priors=[score_priors(st, priors, y, k, w)
                                                      for y, w in zip(labels, weights)],
                              score_type=st, sample_weight=weights)
    if out_dir is not None and len(names) >= 2:
        check_of("--scatter-metric", check_choice, args.scatter_metric, "scatter_metric", sorted(c.name for c in cols))
    record = {
        "schema": JSON_SCHEMA_VERSION,
        "command": "metrics",
        "systems": names,
        "input": kind,
        "decisions_made_by": decisions_made_by(kind, st, spec, training, args.training_priors),
        "training_priors": None if training[0] is None else {n: np.asarray(t).tolist() for n, t in zip(names, training)},
        "classes": spec.classes,
        "decision_names": spec.decisions,
        "costs": spec.costs.tolist(),
        "priors": None if priors is None else np.asarray(priors).tolist(),
        "metrics": cols.to_dict(names),
        "best": {c.name: _name_or_none(winner(c), names) for c in cols} if len(names) > 1 else {},
        "tied_for_best": {c.name: [names[i] for i in winners(c)] for c in cols
                          if len(names) > 1 and winner(c) is None},
        "disagree_with_utility_yield": disagreements(cols),
    }
    nec = next(c.values for c in cols if c.name == "NEC")
    # NEC >= 1: the system does no better than the best decision made without looking at the input (Ferrer 2025, §2).
    record["no_better_than_naive"] = [n for n, naive in zip(names, no_better_than_naive(nec)) if naive]
    record["lose_to_argmax"] = _lose_to_argmax(kind, st, spec, labels, arrays, decisions, names, k, d, weights)
    if weights[0] is not None:
        record["sample_weight"] = args.sample_weight
    if kind == "scores" and k == 2 and d == 2:
        record["optimal_threshold"] = binary_extras(args, run, data, spec, out_dir, record, training)
    if kind == "scores" and out_dir is not None:
        reliability_figures(args, run, data, out_dir, record)
    if shift is not None:
        record["deployment_priors"] = shift[2]
    extra_text = extras.threshold_and_curve_extras(args, run, data, spec, k, record)
    extra_text += "" if shift is None else shift[3]
    extra_text += extras.bootstrap_extras(args, data, spec, k, record)
    if args.sample_costs is not None:
        extra_text += extras.sample_cost_extras(args, run, data, decisions, k, spec, record)
    if out_dir is not None and len(names) >= 2:
        from ecjax._src import plots

        by_name = {c.name: c.values for c in cols}
        fig = plots.metric_vs_yield(by_name["utility_yield"], by_name[args.scatter_metric],
                                    metric_name=args.scatter_metric, labels=names)
        record.setdefault("files", []).append(run.save_figure(fig, out_dir / "metric_vs_yield.png"))
    record["averaging"] = averaging_note(k, d, args.pos_label, kind == "scores")
    record["conventions"] = {c.name: CONVENTIONS[c.name] for c in cols if c.name in CONVENTIONS}
    text = _table_text(cols, names, record, extra_text)
    emit(args, run, record, text, out_dir)
    return 0


def _table_text(cols, names, record, extra_text):
    """The printed table of ``metrics`` and the notes under it (the ``record``'s findings, then ``extra_text``)."""
    from ecjax._src.report import format_table

    text = format_table(cols, names)
    for name, best in record.get("optimal_threshold", {}).items():
        text += (f"\n{name}: NEC {best['nec']:.4g} at the best threshold on the test data (optimistic; "
                 f"log-odds > {best['threshold']:.3g})")
    if record["no_better_than_naive"]:
        text += (f"\n! NEC >= 1 for {', '.join(record['no_better_than_naive'])}: no better than the naive decision "
                 "(the best single decision for every sample, made without the scores)")
    if record["lose_to_argmax"]:
        text += (f"\n! the Bayes decisions of {', '.join(record['lose_to_argmax'])} cost more on these data than "
                 "deciding the most probable class: the scores are not calibrated for these priors (see "
                 "`ecjax calibrate` and --training-priors)")
    text += extra_text
    text += f"\ndecisions: {record['decisions_made_by']}"
    text += f"\naveraging: {record['averaging']}"
    off = record["disagree_with_utility_yield"]
    if off:
        text += f"\n! metrics that pick a different winner than the utility yield: {', '.join(off)}"
    return text


def _name_or_none(index, names):
    return None if index is None else names[index]


def _nominal_decisions(spec, score_type, labels, scores, training, weights, num_classes):
    """Each system's Bayes decisions for the nominal cost matrix of the cost specification (its ``costs``, whatever
    its [uncertainty] table says), with the deployment priors where it gives them (posteriors re-weighted from the
    ``training`` priors), else the system's own class frequencies: the decisions of `metrics`, and of `compare`
    under its default --decision-rule nominal."""
    from ecjax._src.decisions import bayes_decisions

    priors = spec.priors
    return [np.asarray(bayes_decisions(s, spec.costs, score_type=score_type, training_priors=t,
                                       priors=likelihood_priors(score_type, priors, y, num_classes, w) if t is None
                                       else priors))
            for s, y, t, w in zip(scores, labels, training, weights)]


def _lose_to_argmax(kind, score_type, spec, labels, arrays, decisions, names, k, d, weights):
    """Systems whose Bayes decisions cost more on the data than deciding the most probable class (K = D)."""
    from ecjax._src.confusion import confusion_matrix
    from ecjax._src.costs import normalize_rows
    from ecjax._src.metrics import expected_cost

    if kind != "scores" or score_type not in POSTERIOR_TYPES or k != d:
        return []
    costs = normalize_rows(spec.costs)  # as the EC column: each row shifted to a minimum of 0 (same ranking)
    out = []
    for y, s, dec, name, w in zip(labels, arrays, decisions, names, weights):
        ec = [float(expected_cost(np.asarray(confusion_matrix(y, x, num_classes=k, num_decisions=k, sample_weight=w)), costs,
                                  priors=spec.priors))
              for x in (dec, np.argmax(s, -1))]
        if ec[0] > ec[1] * (1 + 1e-6):
            out.append(name)
    return out
