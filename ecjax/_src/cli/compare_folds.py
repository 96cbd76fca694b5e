"""``ecjax compare-folds``: compare systems from their per-fold (and per-data-set) results."""

from __future__ import annotations

import argparse

import numpy as np

from ecjax._src import random_bits
from ecjax._src.cli import progress
from ecjax._src.cli.files import Run, check_of
from ecjax._src.cli.output import JSON_SCHEMA_VERSION, emit
from ecjax._src.cli.rules import or_default


def cmd_compare_folds(args: argparse.Namespace, run: Run) -> int:
    """Compare systems from their per-fold results: Bayesian correlated t-test, or the hierarchical model."""
    from ecjax._src.io import load_results_table
    from ecjax._src.prob.from_results import compare_results, hierarchical_compare_results, hierarchical_test

    table = load_results_table(args.results)
    key = random_bits.key(args.seed)
    runs = or_default(args.runs, 1)
    common = dict(rope=args.rope, runs=runs, test_fraction=args.test_fraction)
    record = {"schema": JSON_SCHEMA_VERSION, "command": "compare-folds", "systems": table.systems,
              "rope": args.rope, "runs": runs, "test_fraction": args.test_fraction, "seed": args.seed}
    one_dataset = table.datasets is not None and len(table.datasets) == 1  # no population: the correlated t-test
    res = None  # the ranking drawn by --rank-diagram
    if args.test == "signed-rank":
        text = _signed_rank_pairs(args, table, key, record)
    elif table.datasets is None or one_dataset:
        scores = table.scores
        assert isinstance(scores, np.ndarray), "results of one data set are one (M, [1,] n) array"
        scores = scores[:, 0] if one_dataset else scores
        res = check_of(args.results, compare_results, scores, key=key, systems=table.systems, **common)
        record.update(res.to_dict())
        text = res.summary()
    elif len(table.systems) == 2 and not isinstance(table.scores, list) and args.rank_diagram is None:
        # Two systems: baycomp's hierarchical test as such (each data set's sigma sampled, its output format).
        with progress.heartbeat(args, "compare-folds: NUTS on the hierarchical model"):
            test = check_of(args.results, hierarchical_test, table.scores[0], table.scores[1], key=key, **common)
        record.update(test.to_dict(), datasets=table.datasets)
        text = test.summary(names=tuple(table.systems))
    else:
        # M systems (or data sets with different numbers of folds): the joint hierarchical model, ranked.
        with progress.heartbeat(args, "compare-folds: NUTS on the hierarchical model of all systems"):
            joint = check_of(args.results, hierarchical_compare_results, table.scores, key=key,
                             systems=table.systems, **common)
        record.update(joint.to_dict(), datasets=table.datasets)
        text = joint.summary()
        res = joint
    if args.rank_diagram is not None:
        from ecjax._src import plots

        record["files"] = [run.save_figure(plots.rank_diagram(res), args.rank_diagram)]
    emit(args, run, record, text, None)
    return 0


def _signed_rank_pairs(args, table, key, record):
    """--test signed-rank: every pair's Bayesian signed-rank test over the data sets' mean results; the text."""
    import jax

    from ecjax._src.prob.inputs import check_several_datasets, results_per_dataset
    from ecjax._src.prob.signed_rank import signed_rank_test

    q = 1 if table.datasets is None else len(table.datasets)
    check_of(args.results, check_several_datasets, q, "RESULTS.csv (its `dataset` column)", "--test t-test")
    means = np.stack([x.mean(-1) for x in check_of(args.results, results_per_dataset, table.scores)], -1)
    names, pairs, lines = table.systems, {}, []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            test = check_of(args.results, signed_rank_test, means[a], means[b], rope=args.rope,
                            key=jax.random.fold_in(key, a * len(names) + b))
            pairs.setdefault(names[a], {})[names[b]] = np.asarray(test.probabilities).tolist()
            lines.append(test.summary(names=(names[a], names[b])))
    record.update(model="Bayesian signed-rank test over data sets (Benavoli et al. 2014; baycomp's SignedRankTest)",
                  datasets=table.datasets, dataset_means={n: means[m].tolist() for m, n in enumerate(names)},
                  pairwise=pairs, p_are="baycomp's shares of the posterior draws in which each region (left, rope, "
                                        "right) is the most probable")
    return "\n".join(lines + ["(each data set's mean over its folds; Monte Carlo error about 0.002)"])
