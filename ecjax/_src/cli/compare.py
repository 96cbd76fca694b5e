"""``ecjax compare``: the posterior ranking of the systems under an uncertain cost specification."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ecjax._src import random_bits
from ecjax._src.cli import progress
from ecjax._src.cli.data import cost_spec, count_classes, load_inputs, load_sample_costs
from ecjax._src.cli.files import Run, check_of, output_folder, within
from ecjax._src.cli.options import FIRST_DRAWS, MC_ERROR_MAX_DRAWS, SAMPLE_COST_DRAWS
from ecjax._src.cli.output import JSON_SCHEMA_VERSION, emit, float_dict
from ecjax._src.cli.priors import check_test_covers_priors, decisions_made_by, deployment_priors, training_priors
from ecjax._src.cli.rules import or_default
from ecjax._src.inputs import as_scores
from ecjax._src.scores.inputs import likelihood_priors


def _rough_seconds(args, kind, spec, arrays, k, d, paired):
    """A duration of the comparison from constant rates (:func:`~ecjax._src.prob.draw_plan.estimated_seconds`): only
    whether a progress line is worth showing; the warning of a long run waits for the measured time
    (:class:`~ecjax._src.cli.progress.RunClock`)."""
    from ecjax._src.prob.draw_plan import estimated_seconds

    per_draw = _per_draw_decisions(args, kind, spec)
    n = max(a.shape[0] for a in arrays)
    shared = _decision_rule(args).resolve(num_systems=len(arrays), num_samples=n, num_classes=k, num_decisions=d,
                                          paired=paired) if per_draw else 1
    return estimated_seconds(first_run_draws(args), num_systems=len(arrays), num_samples=n, num_classes=k,
                             num_decisions=d, per_draw_decisions=per_draw, rate_draws=shared)


def first_run_draws(args):
    """The draws of the first run: ``--draws``, or the library's first run of its default precision target."""
    return FIRST_DRAWS if args.draws is None else args.draws


def _per_draw_decisions(args, kind, spec):
    return kind == "scores" and args.decision_rule == "per_draw" and spec.uncertain


def _long_run_advice(args, kind, spec):
    advice = "fewer --draws"
    if _per_draw_decisions(args, kind, spec):
        advice += (", the default --decision-rule expected_utility (decisions made once), or --decisions with "
                   "decisions made beforehand")
    return advice


def _decision_rule(args):
    """``--decision-rule`` and ``--rate-draws`` as the library's ``decision_rule``."""
    from ecjax._src import prob

    if args.decision_rule == "per_draw":
        return prob.PerDraw(args.rate_draws)
    return args.decision_rule


def _compare_sample_costs(args, run, kind, labels, arrays, names, spec, k):
    """compare --sample-costs: P(best) and EC intervals with the per-sample part's scale uniform in
    --sample-cost-scale (ecjax.prob.compare_sample_costs); per-sample Bayes decisions for --scores."""
    from ecjax._src.scores import sample_costs as sc
    from ecjax._src.prob.sample_costs import compare_sample_costs

    costs = load_sample_costs(args, run, labels, args.labels, k, spec.costs)
    if kind == "scores":
        decisions = [np.asarray(sc.sample_bayes_decisions(a, costs, score_type=args.score_type)) for a in arrays]
    else:
        decisions = [check_of(f, sc.decision_inputs, labels[0], a, costs, spec.priors, None)[1]
                     for f, a in zip(args.decisions, arrays)]
    lo, hi = args.sample_cost_scale or (1.0, 1.0)
    res = check_of("--sample-cost-scale", compare_sample_costs, labels[0], np.stack(decisions), costs,
                   scale=(lo, hi), key=random_bits.key(args.seed), num_draws=or_default(args.draws, SAMPLE_COST_DRAWS),
                   priors=spec.priors,
                   rope=args.rope, names=names)
    record = {"schema": JSON_SCHEMA_VERSION, "command": "compare", "systems": names,
              "sample_costs": args.sample_costs, "sample_cost_scale": [lo, hi], "num_draws": res.info["num_draws"],
              "decisions": "per-sample Bayes decisions" if kind == "scores" else "given",
              "expected_cost": float_dict(names, res.expected_cost), "p_best": float_dict(names, res.p_best),
              "hdi": {n: np.asarray(h).tolist() for n, h in zip(names, res.hdi)}, "recommendation": res.best}
    width = max(len(n) for n in names)
    lines = [f"{'system':{width}s}  {'E[EC]':>12s}  {'90% HDI':>26s}  P(best)"]
    lines += [f"{n:{width}s}  {e:12.6g}  [{h[0]:11.6g}, {h[1]:11.6g}]  {p:.3f}"
              for n, e, h, p in zip(names, res.expected_cost, res.hdi, res.p_best)]
    lines.append(f"per-sample costs {args.sample_costs}, their per-sample part scaled by s ~ U({lo:g}, {hi:g}); "
                 f"Bayesian bootstrap over the samples, {res.info['num_draws']} draws; E[EC] exact")
    lines.append(f"recommended: {res.best}")
    emit(args, run, record, "\n".join(lines), None)
    return 0


def _compare_nominal_decisions(spec, score_type, labels, scores, weights, num_classes):
    """:func:`_nominal_decisions` in `compare`, by the program that makes its fixed decisions
    (:func:`~ecjax._src.prob.draw_models.fixed_decisions.padded_bayes_decisions`; one compiled program for data of
    similar sizes): the scores canonical already (:class:`ecjax.inputs.Scores`), or posterior-type ones re-weighted
    to likelihoods where deployment priors are given (checked here)."""
    from ecjax._src.prob.compare import padded_bayes_decisions

    out = []
    for s, y, w in zip(scores, labels, weights):
        p = likelihood_priors(score_type, spec.priors, y, num_classes, w)
        with np.errstate(divide="ignore"):
            log_p = np.zeros(num_classes) if p is None else np.log(p)
        # The scores as the library holds them (probabilities in the log domain), checked already.
        out.append(padded_bayes_decisions(as_scores(s, "scores", score_type=score_type), spec.costs, log_p,
                                          score_type))
    return out


def _settings(args, kind, spec, names, seconds):
    """The Monte Carlo settings of the comparison (:class:`ecjax.prob.MonteCarloSettings`' fields): --draws
    (--mc-error, --max-draws; neither: the library's default precision target), and the progress it reports (a
    terminal's line for a run of about ``seconds``, --progress lines, the measured duration)."""
    settings = dict(num_draws=args.draws)
    if args.mc_error is not None:
        settings.update(mc_error=args.mc_error, max_draws=or_default(args.max_draws, MC_ERROR_MAX_DRAWS))
    terminal = progress.compare_progress(args, names, seconds)
    if terminal:
        settings["chunk_size"] = -(-first_run_draws(args) // 10)  # about ten updates (chunking changes no number)
    if args.progress is not None:
        settings["chunk_size"] = 1  # one block per chunk: a line can come every few seconds whatever the block
    settings["progress"] = progress.RunClock(terminal, sys.stderr, num_draws=first_run_draws(args), every=args.progress,
                                             advice=_long_run_advice(args, kind, spec))
    return settings


def _record(args, kind, spec, result, paired, nominal, training, names):
    """The JSON record of the comparison: its inputs, the ranking (``result.to_dict()``) and how it decided."""
    return {
        "schema": JSON_SCHEMA_VERSION,
        "command": "compare",
        "paired": paired,
        "input": kind,
        "classes": spec.classes,
        "decision_names": spec.decisions,
        "nominal_costs": spec.costs.tolist(),
        "uncertain_costs": spec.uncertain,
        **result.to_dict(),
        # The cost matrix whose Bayes decisions are evaluated (null: given decisions, or one per drawn matrix).
        "decision_costs": spec.costs.tolist() if nominal else (
            (-np.asarray(result.expected_utility_matrix)).tolist() if kind == "scores" and
            args.decision_rule == "expected_utility" else None),
        "training_priors": None if training[0] is None else {n: np.asarray(t).tolist() for n, t in zip(names, training)},
    }


def cmd_compare(args: argparse.Namespace, run: Run) -> int:
    """Posterior ranking under an uncertain cost specification (ecjax.prob.compare)."""
    from ecjax._src import plots, prob
    from ecjax._src.prob.inputs import check_decisions_matter

    kind, labels, label_files, arrays, names, weights, canonical = load_inputs(args, run)
    files = args.scores or args.decisions
    st = args.score_type
    k = 2 if (kind == "scores" and st == "llr") else (arrays[0].shape[1] if kind == "scores" else None)
    if k is None:
        k = count_classes(labels[0], kind, arrays, st, args.costs, label_files[0], files)
    spec = cost_spec(args, k)
    k, d = spec.costs.shape
    output_folder(args)  # fail fast on an existing record or an unwritable folder
    if args.sample_costs is not None:
        return _compare_sample_costs(args, run, kind, labels, arrays, names, spec, k)

    shift = deployment_priors(args, run, spec, labels[0], canonical[0], names) if args.deployment_scores else None
    if shift is not None:
        spec = shift[0]
    for y, lf in zip(labels, label_files):
        within(lf, y, k, "labels", "the cost matrix's classes")
    for y, lf, w in zip(labels, label_files, weights):
        check_test_covers_priors(spec, y, lf, args.costs, w)
    if kind == "decisions":
        for f, a, y, lf in zip(files, arrays, labels, label_files):
            within(f, a, d, "decisions", "the cost matrix's decisions")
            within(lf, y, k, "labels", "the cost matrix's classes")
    shared = all(np.array_equal(labels[0], y) for y in labels[1:]) and (
        weights[0] is None or all(np.array_equal(weights[0], w) for w in weights[1:]))
    paired = shared and not args.unpaired
    # Costs under which no decision matters make every system equal: nothing to rank (and nothing to decide by).
    check_of(args.costs or "0-1 costs", check_decisions_matter, spec.costs_low if spec.uncertain else spec.costs,
             spec.costs_high)
    nominal = kind == "scores" and args.decision_rule == "nominal"
    if nominal:
        check_of(args.costs, check_decisions_matter, spec.costs, name="costs")
    costs = prob.intervals(spec.costs_low, spec.costs_high, kind="cost") if spec.uncertain else spec.costs
    if spec.priors_low is not None:
        priors = check_of(args.costs, prob.interval_priors, spec.priors_low, spec.priors_high)
    else:
        priors = spec.priors if shift is None else shift[1].distribution()
    common = dict(costs=costs, priors=priors, key=random_bits.key(args.seed), rope=args.rope)
    sample_weight = None if weights[0] is None else weights[0] if paired else list(weights)
    lab = labels[0] if paired else list(labels)
    training = training_priors(args, spec, labels, label_files, k, weights)
    scores = canonical  # the files' scores as their check made them canonical: not checked again
    if training[0] is not None:  # decide for the deployment priors: posteriors -> likelihoods (Ferrer 2022b, §3.2)
        from ecjax._src.decisions import log_likelihoods_from_posteriors

        scores = [np.asarray(log_likelihoods_from_posteriors(a, t, score_type=st))
                  for a, t in zip(canonical, training)]
        arrays, st = scores, "log_likelihoods"
    # The nominal costs decide, as in `metrics` (the same decisions); the [uncertainty] table spreads the evaluation.
    decided = _compare_nominal_decisions(spec, st, labels, scores, weights, k) if nominal else None
    settings = _settings(args, kind, spec, names, _rough_seconds(args, kind, spec, arrays, k, d, paired))
    if kind == "scores" and not nominal:
        systems = prob.Systems(lab, scores=scores, score_type=st, decision_rule=_decision_rule(args), names=names,
                               paired=paired, sample_weight=sample_weight)
    else:
        systems = prob.Systems(lab, decided or arrays, names=names, paired=paired, sample_weight=sample_weight)
    result = prob.compare(systems, settings=prob.MonteCarloSettings(**settings), **common)
    if nominal:  # the library was given the decisions: say how they were made
        result.info.update(decision_rule="nominal", decisions=decisions_made_by(
            kind, args.score_type, spec, training, args.training_priors) + (
            " (made once; the [uncertainty] intervals spread the evaluation, not the decisions)"
            if spec.uncertain else ""))
    record = _record(args, kind, spec, result, paired, nominal, training, names)
    if weights[0] is not None:
        record["sample_weight"] = args.sample_weight
    if shift is not None:
        record["deployment_priors"] = shift[2]
    out_dir = output_folder(args)
    if out_dir is not None:
        fig = plots.yield_posteriors(result, names=names)  # the HDI marks are the printed intervals
        record.setdefault("files", []).append(run.save_figure(fig, out_dir / "yield_posteriors.png"))
        fig = plots.rank_probabilities(result, names=names)
        record["files"].append(run.save_figure(fig, out_dir / "rank_probabilities.png"))
    text = ("paired comparison (same samples)\n" if paired else "unpaired comparison\n") + result.summary()
    text += "" if shift is None else shift[3]
    if training[0] is not None:
        source = "each system's label frequencies" if args.training_priors.strip() == "data" else "--training-priors"
        text += f"\nposteriors re-weighted to the deployment priors from the training priors of {source}"
    emit(args, run, record, text, out_dir)
    return 0
