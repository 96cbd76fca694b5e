"""The ``ecjax`` command.

Exit codes: 0 success; 2 usage or input error (one line on stderr naming the
file or option and the problem, no traceback), including an output folder
that is read-only, full or cannot hold the file name, and a standard output
that cannot be written (``> /dev/full``); 130 interrupted (Ctrl-C), 143
terminated (SIGTERM), each with one line; 141 (128 + SIGPIPE, as a shell
reports ``yes | head``), quietly, when the reader of standard output has gone
(``ecjax ... --json | head``); 1 a calibrator fit that failed (not converged,
or non-finite outputs: ``calibrate`` says why and writes nothing) or an internal
error.

Outputs: everything is validated and computed first, then every file is
written, all or none (see :func:`ecjax.io.write_files_atomic`); existing
files are never overwritten without ``--force``, and if one write fails
(a full disk, a file-size limit) the folder is left as it was, the files
of an earlier run included.  JSON is strict (RFC 8259): an
infinite number is written as the string ``"inf"`` or ``"-inf"`` and NaN as
``null``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import numpy as np
from jax.typing import ArrayLike

from ecjax.inputs import (
    LIKELIHOOD_TYPES,
    POSTERIOR_TYPES,
    SCORE_TYPES,
    InputError,
    as_class_list,
    as_group_ids,
    as_index_array,
    as_pos_label,
    as_positive_priors,
    as_sample_weight,
    as_scores,
    check_binary,
    check_choice,
    check_classes_present,
    check_exclusive,
    check_naive_cost_positive,
    check_numbers,
    check_posterior_type,
    check_priors_cover,
    check_same_classes,
    check_same_length,
    check_shape,
    check_some_weight,
    inferred_size,
    system_names,
)
from ecjax import random_bits
from ecjax.io import said_of

JSON_SCHEMA_VERSION = 1
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader has gone (`yes | head`)

MAX_NAME_LENGTH = 100  # characters of a system name (--names, or a file stem)
MAX_DRAWS = 10**8
MAX_SEED = 2**32 - 1  # jax.random.key keeps 32 bits of the seed: larger seeds would repeat smaller ones
# Defaults of options that only a parent option uses (their argparse default is None, so that OPTION_RULES can
# refuse them without it): metrics --bootstrap-draws, compare --max-draws.
BOOTSTRAP_DRAWS = 2000
# Bayesian-bootstrap draws of the deployment priors of compare --deployment-scores (each refits a calibrator).
DEPLOYMENT_PRIOR_DRAWS = 1000
# metrics --curves: the credible bands of the ROC and precision-recall curves (ecjax.prob.curve_band).
CURVE_BAND_DRAWS = 1000
CURVE_BAND_LEVEL = 0.95
MC_ERROR_MAX_DRAWS = 1_000_000

# Input size limit (bytes) of this run, from --max-input-mb; outputs waiting to be written.
_limits: dict[str, int | None] = {"max_bytes": None}
_pending: list = []


# ------------------------------------------------------------------ inputs

# --json is --format json (kept for the scripts that use it): with another --format it is refused.
_FORMAT_RULE = ("--json", "not with", ("--format table", "--format csv", "--format markdown"),
                "{rule} (--json is --format json: give one)")
# calibrate prints its table of scores before and after calibration only when it has the labels to compute them.
_CALIBRATE_TABLE_RULES = tuple((f"--format {fmt}", "needs", ("--labels",), "{rule} (the table holds the scores of "
                                "--scores before and after calibration, on its labels)") for fmt in ("csv", "markdown"))

# Which options a command's options need or exclude, checked before any file is read: (option, "needs" or
# "not with", the other options (any one of them, "--option value" for a value), the message, with the rule at
# its {rule}). A rule with option None applies to every run of the command.
OPTION_RULES: dict[str, tuple[tuple[str | None, str, tuple[str, ...], str], ...]] = {
    "metrics": (
        _FORMAT_RULE,
        ("--metric-thresholds", "needs", ("--scores",), "{rule} (the thresholds rank the samples by their scores)"),
        ("--curves", "needs", ("--scores",), "{rule} (the curves rank the samples by their scores)"),
        ("--curve-bands", "needs", ("--curves",), "{rule} (the bands are those of its ROC and precision-recall "
                                                  "curves)"),
        ("--bootstrap", "needs", ("--scores",), "{rule} (the metric is computed from the scores)"),
        ("--bootstrap-draws", "needs", ("--bootstrap",), "{rule} (they are the draws of its posterior)"),
        ("--deployment-scores", "needs", ("--scores",), "{rule} (the first system's labelled scores calibrate the "
                                                        "estimate)"),
        ("--deployment-scores", "not with", ("--sample-weight",), "{rule} (the priors are estimated from unweighted "
                                                                  "samples)"),
        ("--seed", "needs", ("--bootstrap", "--metric-thresholds", "--curves", "--deployment-scores"),
         "{rule} (the random key of the bootstraps and of the calibration folds: nothing else in metrics is random)"),
    ),
    "calibrate": (
        _FORMAT_RULE, *_CALIBRATE_TABLE_RULES,
        ("--train-scores", "not with", ("--cv",), "{rule} (--cv fits on --scores and its --labels, fold by fold)"),
        ("--train-labels", "not with", ("--cv",), "{rule} (--cv fits on --scores and its --labels, fold by fold)"),
        ("--cv", "needs", ("--labels",), "{rule} (its folds are fitted on the true classes of --scores)"),
        ("--groups", "needs", ("--cv",), "{rule} (the groups keep dependent samples in one fold)"),
        ("--train-scores", "needs", ("--train-labels",), "{rule} (a training file goes with its true classes)"),
        ("--train-labels", "needs", ("--train-scores",), "{rule} (training labels go with their scores)"),
        (None, "needs", ("--train-scores", "--labels", "--calibrator"),
         "{rule} (a calibrator fits on a training file, or on --scores and its --labels, with --cv K for "
         "cross-validation; --calibrator applies a saved one)"),
        ("--save-calibrator", "not with", ("--cv",), "{rule} (--cv fits one calibrator per fold; fit on a "
                                                     "--train-scores file, or on all of --scores, to save one)"),
        ("--calibrator", "not with", ("--train-scores", "--cv", "--save-calibrator"),
         "{rule} (--calibrator applies a saved calibrator as it is: nothing is fitted)"),
        ("--sample-weight", "needs", ("--labels",), "weighs the samples of --scores, and {rule}"),
        ("--train-sample-weight", "needs", ("--train-scores",),
         "weighs the samples of --train-scores, and {rule} (without a training file give --sample-weight)"),
        ("--calibration-errors", "needs", ("--labels",), "{rule} (the errors are measured on the true classes of "
                                                         "--scores)"),
        ("--seed", "needs", ("--cv",), "{rule} (the random key of the --cv folds: every other fit is deterministic)"),
        ("--classes", "needs", ("--labels", "--train-labels"), "{rule} (it names the classes the label files hold)"),
    ),
    "compare": (
        _FORMAT_RULE,
        (None, "needs", ("--costs",), "{rule} (compare ranks under a cost specification: see `ecjax.io` for the "
                                      "format)"),
        ("--sample-cost-scale", "needs", ("--sample-costs",), "{rule} (it scales their per-sample part)"),
        ("--sample-costs", "not with", ("--sample-weight", "--unpaired", "--mc-error", "--decision-rule per_draw"),
         "{rule} (per-sample costs are compared on one shared, unweighted test set, with --draws draws)"),
        ("--rate-draws", "needs", ("--decision-rule per_draw",), "{rule} (it draws the rates per drawn cost matrix)"),
        ("--max-draws", "needs", ("--mc-error",), "{rule} (it bounds the draws --mc-error adds; without it --draws "
                                                  "is the number of draws)"),
        ("--deployment-scores", "needs", ("--scores",), "{rule} (the first system's labelled scores calibrate the "
                                                        "estimate)"),
        ("--deployment-scores", "not with", ("--sample-weight",), "{rule} (the priors are estimated from unweighted "
                                                                  "samples)"),
        ("--deployment-scores", "not with", ("--sample-costs",), "{rule} (the per-sample costs' comparison weighs "
                                                                 "the test set's own samples)"),
    ),
    "sweep": (
        ("--sample-cost-scale", "needs", ("--sample-costs",), "{rule} (it is the range of the factor swept on their "
                                                              "per-sample part)"),
        ("--sample-costs", "not with", ("--sample-weight",), "{rule} (per-sample costs are swept on one unweighted "
                                                             "test set)"),
    ),
    "compare-folds": (
        _FORMAT_RULE,
        ("--runs", "not with", ("--test-fraction",), "{rule} (each sets the correlation of the folds: give one)"),
        ("--rank-diagram", "not with", ("--test signed-rank",),
         "{rule} (the diagram shows the ranks of the t-test models; the signed-rank test compares pairs)"),
    ),
    "sweep": (
        _FORMAT_RULE,
    ),
}


def _given(args, option):
    name, _, value = option.partition(" ")
    got = getattr(args, name[2:].replace("-", "_"), None)
    return got == value if value else got not in (None, False, [])


def _or_default(value, default):
    """An option whose parent option was given (see :data:`OPTION_RULES`): its value, else its default."""
    return default if value is None else value


def check_option_rules(args: argparse.Namespace) -> None:
    """Refuse a combination of options that :data:`OPTION_RULES` rules out, naming the option."""
    for option, relation, others, message in OPTION_RULES.get(args.command, ()):
        if option is not None and not _given(args, option):
            continue
        if any(_given(args, other) for other in others) != (relation == "needs"):
            listed = " or ".join(others)
            said = f"give {listed}" if option is None else f"{relation} {listed}"
            raise InputError(f"{option or listed}: " + message.format(rule=said))


def _load(path, rows=None):
    """One input array; ``rows``, the number of samples of the files it goes with, settles a CSV's first row that
    may be a header or a sample (:func:`ecjax.io.csv_first_row`)."""
    from ecjax.io import DEFAULT_MAX_BYTES, load_array

    return load_array(path, max_bytes=_limits["max_bytes"] or DEFAULT_MAX_BYTES, rows=rows)


def _load_same_samples(*paths):
    """The arrays of the files ``paths`` (``None`` for a file not given) that hold the same samples: each CSV's
    undecided first row is settled by the others (:func:`ecjax.io.load_arrays`)."""
    from ecjax.io import DEFAULT_MAX_BYTES, load_arrays

    given = [p for p in paths if p is not None]
    arrays = dict(zip(given, load_arrays(given, max_bytes=_limits["max_bytes"] or DEFAULT_MAX_BYTES)))
    return [None if p is None else arrays[p] for p in paths]


def _said_of(path, check, *args, files=None, **kwargs):
    """``check(*args, **kwargs)``, one of the library's checks, with its error said of the file ``path`` and
    the arguments it names said as the files ``files`` (argument name -> file) that hold them."""
    with said_of(path, files):  # main() says the library's remaining arguments as options
        return check(*args, **kwargs)


def _same_samples(path, a, what, other_path, other, other_what):
    """The library's sample-count check of two files that describe the same samples."""
    _said_of(path, check_same_length, what, a, other_what, other, axis_a=0, axis_b=0,
             files={what: path, other_what: other_path})


def _within(path, a, upper, name, upper_is):
    """The library's index check (:func:`ecjax.inputs.as_index_array` with ``upper``), said of the file."""
    _said_of(path, as_index_array, a, name, upper=upper, upper_is=upper_is)


def _check_indices(a, path, what):
    """Class or decision indices of a file: integers in [0, 2**31), checked (by the library) before any cast."""
    _within(path, a, None, what, "")
    return a.astype(np.int64)


def _check_scores(a, path, score_type):
    """A score file: one system's scores, ``(N,)`` (llr) or ``(N, K)`` (``(N,)`` class-1 probabilities become
    ``(N, 2)``: :func:`ecjax.scores.inputs.one_system_scores`), checked by the library
    (:func:`ecjax.inputs.as_scores`: numbers, finite, K >= 2, not probabilities read as logs), said of the file."""
    from ecjax.scores.inputs import one_system_scores

    a = _said_of(path, one_system_scores, a, score_type)  # the library takes batches of systems; a file holds one
    _said_of(path, as_scores, a, "scores", score_type=score_type)
    return a


def _check_labels(y, path):
    y = _said_of(path, check_shape, y, "labels", "(N,)", why=" (a vector of class indices)")
    return _check_indices(y, path, "labels")


def _default_names(files):
    """System names from the file names: the stem, with as many parent folders as make the names distinct
    (``a/scores.npy`` and ``b/scores.npy`` are ``a/scores`` and ``b/scores``, not two systems named ``scores``)."""
    parts = [Path(f).with_suffix("").parts for f in files]
    for depth in range(1, max(len(p) for p in parts) + 1):
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names):
            return names
    return names  # the same path twice: refused below, with the names shown


def _load_inputs(args):
    """(kind, labels, label files, system arrays, names), every file checked against its labels.

    ``--labels`` is one file shared by all systems, or one file per system (every subcommand).
    """
    label_files = [args.labels] if isinstance(args.labels, str) else list(args.labels)
    files = args.scores or args.decisions
    kind = "scores" if args.scores else "decisions"
    if len(label_files) not in (1, len(files)):
        raise InputError(f"--labels: give one file shared by all systems or one per system, got {len(label_files)} for {len(files)}")
    # The files of one set of samples are read together: a CSV's undecided first row is settled by the others.
    groups = [[label_files[0], *files]] if len(label_files) == 1 else list(zip(label_files, files))
    if args.classes is not None:
        loaded = _load_by_class_names(args.classes, groups)
    else:
        loaded = {f: a for group in groups for f, a in zip(group, _load_same_samples(*group))}
    labels = [_check_labels(loaded[f], f) for f in label_files]
    if len(labels) == 1:
        labels, label_files = labels * len(files), label_files * len(files)
    st = args.score_type
    arrays = []
    want = 1 if (kind == "decisions" or st == "llr") else 2
    for f, y, lf in zip(files, labels, label_files):
        a = loaded[f]
        if kind == "scores":
            a = _check_scores(a, f, st)
        else:
            _said_of(f, check_shape, a, "decisions", "(N,)")
        _same_samples(f, a, kind, lf, y, "labels")
        if kind == "decisions":
            a = _check_indices(a, f, "decisions")
        arrays.append(a)
    if kind == "scores" and want == 2:  # one set of classes for all systems
        for f, a in zip(files, arrays):
            _said_of(f"--scores {f}", check_shape, a, "scores", "(N, K)", sizes={"K": arrays[0].shape[1]},
                     why=f" (the classes of {files[0]})")
    if kind == "scores":
        _check_classes_count(args, 2 if want == 1 else arrays[0].shape[1])
    # Names from the files differ unless a file is given twice (_default_names).
    names = list(_said_of("--names" if args.names else f"--{kind}: the same file is given twice (give --names)",
                          system_names, args.names or _default_names(files), None, len(files), "names"))
    for n, f in zip(names, files):
        if len(n) > MAX_NAME_LENGTH:  # a line of the table
            where = "--names" if args.names else f"{f} (its name comes from the file name: give --names)"
            raise InputError(f"{where}: a system name of {len(n)} characters; at most {MAX_NAME_LENGTH}")
    return kind, labels, label_files, arrays, names, _load_sample_weights(args, labels, label_files)


def _class_names(option):
    """The class names of --classes ``a,b,c`` (spaces around a name left out)."""
    return [name.strip() for name in option.split(",")]


def _check_classes_count(args, num_classes):
    """--classes, where given, names one class per score column."""
    if args.classes is not None:
        _said_of("--classes", as_class_list, _class_names(args.classes), num_classes=num_classes)


def _scores_and_labels(args, scores, labels):
    """The arrays of a score file and of its label file (``None`` when not given), the labels' class names read as
    indices with --classes."""
    if labels is None or args.classes is None:
        return _load_same_samples(scores, labels)
    loaded = _load_by_class_names(args.classes, [[labels, scores]])
    return loaded[scores], loaded[labels]


def _load_by_class_names(option, groups):
    """With --classes: each label file's class names as class indices (:func:`ecjax.io.load_class_names`), and the
    files of the same samples, each CSV's undecided first row settled by the number of labels."""
    from ecjax.io import DEFAULT_MAX_BYTES, load_class_names

    classes = _said_of("--classes", as_class_list, _class_names(option)).tolist()
    max_bytes = _limits["max_bytes"] or DEFAULT_MAX_BYTES
    loaded = {}
    for label_file, *others in groups:
        loaded[label_file] = load_class_names(label_file, classes, max_bytes=max_bytes)
        loaded.update({f: _load(f, rows=len(loaded[label_file])) for f in others})
    return loaded


def _load_sample_weights(args, labels, label_files):
    """Per system: the ``(N,)`` weights of its samples from --sample-weight (one file per --labels file), or ``None``.

    Frequency weights, as scikit-learn's ``sample_weight``: a sample of weight 3 counts as three samples (and
    carries that much evidence in `compare`), one of weight 0 as none.
    """
    files = getattr(args, "sample_weight", None)
    if not files:
        return [None] * len(labels)
    # As given: one --labels file shared by the systems is one set of samples, so it takes one weight per sample
    # (two weight files would weigh each system's samples differently: a different test set for each).
    given = [args.labels] if isinstance(args.labels, str) else list(args.labels)
    if len(files) != len(given) and not (len(files) == 1 and len(set(given)) == 1):
        shared = " (the samples of the --labels file are shared by the systems)" if len(given) == 1 else ""
        raise InputError(f"--sample-weight: give one file per --labels file ({len(given)}), got {len(files)}{shared}")
    files = files * len(labels) if len(files) == 1 else files
    return [_load_sample_weight(f, y, lf) for f, y, lf in zip(files, labels, label_files)]


def _load_sample_weight(path, labels, label_file, option="--sample-weight"):
    """One weight file: ``(N,)`` finite non-negative numbers, one per label of ``label_file``, not all 0."""
    if path is None:
        return None
    w = np.asarray(_said_of(f"{option} {path}", as_sample_weight, _load(path, rows=len(labels)), labels,
                            files={"labels": label_file}), np.float64)
    _said_of(f"{option} {path}", check_some_weight, w)
    return w


def _load_sample_costs(args, labels, label_files, num_classes, base):
    """--sample-costs FILE: a 3-D ``.npy`` of ``(N, K, D)`` per-sample cost matrices, or an ``.npz`` with
    ``amount`` (``(N,)`` or ``(N, M)``), ``scale`` (``(K, D)`` or ``(M, K, D)``) and optionally ``base``
    (``(K, D)``; default: the --costs matrix): ``c_n = base + amount_n scale`` (:mod:`ecjax.sample_costs`)."""
    from ecjax.inputs import as_per_sample_costs, as_sample_cost_parts, check_one_sample_set
    from ecjax.sample_costs import SampleCosts

    path = args.sample_costs
    where = f"--sample-costs {path}"
    _said_of(where, check_one_sample_set, label_files, "--sample-costs")
    n = len(labels[0])
    if str(path).lower().endswith(".npz"):
        from ecjax.io import DEFAULT_MAX_BYTES, load_array

        def member(key):
            return load_array(path, key=key, max_bytes=_limits["max_bytes"] or DEFAULT_MAX_BYTES)

        with np.load(path, allow_pickle=False) as z:
            has_base = "base" in z.files
        parts = _said_of(where, as_sample_cost_parts, member("base") if has_base else base, member("amount"),
                         member("scale"), num_samples=n, num_classes=num_classes)
        return SampleCosts(*parts)
    return _said_of(where, as_per_sample_costs, _load(path), n, num_classes)


def _sample_cost_extras(args, labels, arrays, kind, decisions, names, k, spec, record, weights):
    """The EC (NEC, and for binary scores the best single threshold) of each system under --sample-costs."""
    from ecjax import sample_costs as sc

    costs = _load_sample_costs(args, labels, args.labels, k, spec.costs)
    y, w = labels[0], weights[0]
    if kind == "scores":  # Bayes decisions of each sample's own matrix
        decisions = [np.asarray(sc.sample_bayes_decisions(a, costs, score_type=args.score_type)) for a in arrays]
    ec = [float(sc.sample_expected_cost(y, d, costs, priors=spec.priors, sample_weight=w)) for d in decisions]
    try:
        nec: list[float | None] = [float(sc.sample_normalized_expected_cost(y, d, costs, priors=spec.priors,
                                                                            sample_weight=w)) for d in decisions]
    except InputError:  # the best single decision costs nothing (or gains): the NEC is undefined
        nec = [None] * len(decisions)
    out = {"file": args.sample_costs, "EC": _float_dict(names, ec), "NEC": dict(zip(names, nec)),
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


def _cost_spec(args, num_classes):
    from ecjax.costs import zero_one
    from ecjax.io import CostSpec, load_cost_spec

    if args.costs is None:
        c = np.asarray(zero_one(num_classes))
        given = getattr(args, "classes", None)  # the names of --classes, where they name these classes
        names = _class_names(given) if given and len(_class_names(given)) == num_classes else [
            str(i) for i in range(num_classes)]
        return CostSpec(c, names, names, source="0-1 costs (default)")
    spec = load_cost_spec(args.costs)
    _said_of(args.costs, check_shape, spec.costs, "costs", "(K, D)", sizes={"K": num_classes},
             why=" (a row per class of the data)")
    if getattr(args, "classes", None) is not None:  # the labels' class list and the cost rows: one order
        _said_of("--classes", check_same_classes, _class_names(args.classes), spec.classes, args.costs)
    return spec


def _num_classes(labels, kind, arrays, score_type, spec_path, label_file="--labels", files=()):
    if kind == "scores":
        return 2 if score_type == "llr" else arrays[0].shape[1]
    if spec_path is not None:
        from ecjax.io import load_cost_spec

        return load_cost_spec(spec_path).costs.shape[0]
    # K from the data: bounded, so a stray label 20000 cannot build 20001 x 20001 matrices.
    return max(_said_of(f, inferred_size, a.max(), what, argument="num_classes",
                        files={"num_classes": "--costs (a file that names them)"})
               for a, f, what in [(labels, label_file, "labels"), *((a, f, "decisions") for a, f in zip(arrays, files))])


def _check_priors_cover(spec, labels, label_file, costs_arg, sample_weight=None):
    """Deployment priors may not weigh a class that has no test samples (its rates are unknown)."""
    if spec.priors is None:
        return
    n_i = np.bincount(labels, weights=sample_weight, minlength=len(spec.priors))[: len(spec.priors)]
    _said_of(f"{label_file} with the priors of {costs_arg}", check_priors_cover, n_i, spec.priors,
             weighted=sample_weight is not None, class_names=spec.classes)


def _check_naive(costs, priors, labels, label_file, costs_arg, sample_weight=None):
    """The library's NEC check (the best naive decision must cost something: Ferrer (2022a) eq. 4) for the costs
    ``costs`` and the deployment ``priors`` (else the data's), said of the file that makes it fail: the labels
    when, with the data's priors, they hold one class (deciding it is free), else the cost specification."""
    p = _priors_or_frequencies(priors, labels, costs.shape[0], sample_weight)
    present = np.unique(labels if sample_weight is None else labels[sample_weight > 0])
    one_class = priors is None and len(present) == 1 and np.any(costs)
    culprit = (f"{label_file} (every label is class {present[0]}: give deployment priors in --costs)" if one_class
               else costs_arg or "0-1 costs")
    _said_of(culprit, check_naive_cost_positive, np.matmul(p, costs))  # numpy, float64


# ----------------------------------------------------------------- outputs

def _out_dir(args):
    """The --out folder, checked (not created: nothing is written before everything is validated)."""
    if args.out is None:
        return None
    d = Path(args.out)
    _check_output(d / f"{args.command}.json", args.force, "--out")
    return d


def _check_output(path, force, option):
    """Fail fast, before any work, on an output that exists or a folder that cannot be written."""
    from ecjax.io import check_output_path

    _said_of(option, check_output_path, path, force=force)


def _defer(path, data, force, option="--out"):
    """Queue an output file; :func:`_commit` writes the queue once everything has succeeded."""
    _check_output(path, force, option)
    _pending.append((Path(path), data, force, option))
    return str(path)


def _commit():
    """Write every queued output, all or none (:func:`ecjax.io.write_files_atomic`): a failed write leaves the
    folder as it was, an earlier run's files included (never some of them beside some of this run's)."""
    from ecjax.io import write_files_atomic

    for path, _, force, option in _pending:
        _check_output(path, force, option)
    force = {f for _, _, f, _ in _pending}
    assert len(force) <= 1, "one run's outputs share its --force"
    write_files_atomic([(path, data) for path, data, _, _ in _pending], force=force == {True})
    _pending.clear()


def _save_figure(fig, out_dir, name, force):
    import io

    import matplotlib.pyplot as plt

    _check_output(out_dir / name, force, "--out")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return _defer(out_dir / name, buf.getvalue(), force)


def _json_safe(x):
    """Strict JSON: +-inf as the strings "inf" / "-inf", NaN as null (documented in the README's schema)."""
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, (float, np.floating)):
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def _dumps(record):
    return json.dumps(_json_safe(record), indent=2, allow_nan=False)


class _StdoutFailed(Exception):
    """Standard output could not be written (its reader has gone, its device is full): the user's setup, not a
    bug in ecjax."""

    def __init__(self, error: OSError):
        super().__init__(str(error))
        self.error = error


def _print(text=""):
    """``text`` on standard output, flushed at once, so that a failure to write it is seen (and said) here."""
    try:
        print(text, flush=True)
    except OSError as err:
        raise _StdoutFailed(err) from err


def _flush_stdout():
    try:
        sys.stdout.flush()
    except OSError as err:
        raise _StdoutFailed(err) from err


def _stdout_failed(command, error):
    """The exit code of a run whose standard output failed: 141 and nothing said when its reader has gone (a
    closed pipe, as a Unix tool stopped by SIGPIPE), else 2 with the reason."""
    try:  # the rest of the output goes nowhere, so that Python's own flush at exit fails no more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor (captured output)
        pass
    if isinstance(error, BrokenPipeError):
        return EXIT_CLOSED_PIPE
    print(f"ecjax {command}: error: cannot write to standard output: {error.strerror or error}", file=sys.stderr)
    return 2


def _output_format(args):
    """The format of standard output (:mod:`ecjax.formats`): --format, or json for --json, else the text table."""
    return "json" if args.json else getattr(args, "format", None) or "table"


def _emit(args, record, table_text, out_dir):
    """Write the queued files, then print the ``record`` in the --format asked: the text ``table_text`` (and the
    files written), the JSON record, or its main table as CSV or markdown (:mod:`ecjax.formats`)."""
    if out_dir is not None:
        record.setdefault("files", []).append(str(out_dir / f"{args.command}.json"))
        _defer(out_dir / f"{args.command}.json", _dumps(record), args.force)
    _commit()
    fmt = _output_format(args)
    if fmt == "json":
        _print(_dumps(record))
    elif fmt == "table":
        _print("\n".join([table_text, *(f"wrote {f}" for f in record.get("files", []))]))
    else:
        from ecjax.formats import command_table, render

        _print(render(command_table(record), fmt))


def _float_dict(names, values):
    return {n: float(v) for n, v in zip(names, np.asarray(values).ravel())}


# ---------------------------------------------------------------- commands

def cmd_metrics(args: argparse.Namespace) -> int:
    from ecjax.confusion import confusion_matrix
    from ecjax.report import (CONVENTIONS, averaging_note, disagreements, format_table, metric_columns,
                              no_better_than_naive, score_columns, winner, winners)

    st = args.score_type
    kind, labels, label_files, arrays, names, weights = _load_inputs(args)
    out_dir = _out_dir(args)
    files = args.scores or args.decisions
    k = max(_num_classes(y, kind, arrays, st, args.costs, lf, files) for y, lf in zip(labels, label_files))
    for y, lf in zip(labels, label_files):
        _within(lf, y, k, "labels", "the classes of the scores")
    _said_of("--pos-label", as_pos_label, args.pos_label, k)
    spec = _cost_spec(args, k)
    d = spec.costs.shape[1]
    shift = _deployment_priors(args, spec, labels[0], arrays[0], names) if args.deployment_scores else None
    if shift is not None:  # the estimate as the cost specification's priors
        spec = shift[0]
    priors = spec.priors
    for y, lf, w in zip(labels, label_files, weights):
        _check_priors_cover(spec, y, lf, args.costs, w)
        _check_naive(spec.costs, spec.priors, y, lf, args.costs, w)
    training = _training_priors(args, spec, labels, label_files, k, weights)
    if kind == "scores":
        decisions = _nominal_decisions(spec, st, labels, arrays, training, weights, k)
    else:
        decisions = arrays
        for f, a in zip(files, arrays):
            _within(f, a, d, "decisions", "the cost matrix's decisions")
    # Each system against its own labels (they may differ in order or in number of samples).
    counts = np.stack([np.asarray(confusion_matrix(y, dm, num_classes=k, num_decisions=d, sample_weight=w))
                       for y, dm, w in zip(labels, decisions, weights)])
    cols = metric_columns(counts, costs=spec.costs, priors=priors, pos_label=args.pos_label)
    if kind == "scores":  # how good the scores are as posteriors, whatever the decisions
        cols += score_columns(labels, arrays, priors=[_evaluation_priors(st, priors, y, k, w)
                                                      for y, w in zip(labels, weights)],
                              score_type=st, sample_weight=weights)
    if out_dir is not None and len(names) >= 2:
        _said_of("--scatter-metric", check_choice, args.scatter_metric, "scatter_metric", sorted(c.name for c in cols))
    record = {
        "schema": JSON_SCHEMA_VERSION,
        "command": "metrics",
        "systems": names,
        "input": kind,
        "decisions_made_by": _decisions_made_by(kind, st, spec, training, args.training_priors),
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
        record["optimal_threshold"] = _binary_extras(args, labels, arrays, names, spec, out_dir, record, training,
                                                     weights)
    if kind == "scores" and out_dir is not None:
        _reliability_figures(args, labels, arrays, names, out_dir, record, weights)
    if shift is not None:
        record["deployment_priors"] = shift[2]
    extra_text = _threshold_and_curve_extras(args, kind, labels, arrays, names, spec, k, record, weights)
    extra_text += "" if shift is None else shift[3]
    extra_text += _bootstrap_extras(args, labels, arrays, names, spec, k, record, weights)
    if args.sample_costs is not None:
        extra_text += _sample_cost_extras(args, labels, arrays, kind, decisions, names, k, spec, record, weights)
    if out_dir is not None and len(names) >= 2:
        from ecjax import plots

        by_name = {c.name: c.values for c in cols}
        fig = plots.metric_vs_yield(by_name["utility_yield"], by_name[args.scatter_metric],
                                    metric_name=args.scatter_metric, labels=names)
        record.setdefault("files", []).append(_save_figure(fig, out_dir, "metric_vs_yield.png", args.force))
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
    record["averaging"] = averaging_note(k, d, args.pos_label, kind == "scores")
    record["conventions"] = {c.name: CONVENTIONS[c.name] for c in cols if c.name in CONVENTIONS}
    text += f"\naveraging: {record['averaging']}"
    off = record["disagree_with_utility_yield"]
    if off:
        text += f"\n! metrics that pick a different winner than the utility yield: {', '.join(off)}"
    _emit(args, record, text, out_dir)
    return 0


def _name_or_none(index, names):
    return None if index is None else names[index]


def _training_priors(args, spec, labels, label_files, num_classes, weights):
    """Per system: the priors posterior-type scores were trained with (to re-weight them to the deployment
    priors of the cost specification), or ``None`` where nothing is re-weighted."""
    choice = args.training_priors.strip()
    none = [None] * len(labels)
    posterior_type = args.scores is not None and args.score_type in POSTERIOR_TYPES
    deployment = spec.priors is not None or spec.priors_low is not None
    if choice == "data" and (not posterior_type or not deployment):
        return none  # the default: nothing to re-weight
    if args.scores is None:  # decisions: nothing to re-weight
        raise InputError("--training-priors: needs --scores (posteriors to re-weight)")
    _said_of("--training-priors", check_posterior_type, args.score_type, "training_priors")
    if not deployment:
        raise InputError(f"--training-priors: {args.costs or 'the 0-1 costs'} gives no deployment priors to "
                         "re-weight the posteriors to")
    if choice == "none":
        return none
    if choice == "data":
        for y, lf, w in zip(labels, label_files, weights):
            _said_of("--training-priors data", check_classes_present, y, w, num_classes, files={"labels": lf},
                     why="its frequency is no training prior to re-weight by: give the training priors as numbers")
        return [_frequencies(y, num_classes, w) for y, w in zip(labels, weights)]
    try:
        values = np.array([float(x) for x in choice.split(",")])
    except ValueError:
        raise InputError(f"--training-priors: 'data', 'none' or {num_classes} comma-separated numbers, got {choice!r}") from None
    _said_of("--training-priors", as_positive_priors, values, "training_priors", num_classes=num_classes)
    return [values] * len(labels)


def _nominal_decisions(spec, score_type, labels, arrays, training, weights, num_classes):
    """Each system's Bayes decisions for the nominal cost matrix of the cost specification (its ``costs``, whatever
    its [uncertainty] table says), with the deployment priors where it gives them (posteriors re-weighted from the
    ``training`` priors), else the system's own class frequencies: the decisions of `metrics`, and of `compare`
    under its default --decision-rule nominal."""
    from ecjax.decisions import bayes_decisions

    priors = spec.priors
    return [np.asarray(bayes_decisions(s, spec.costs, score_type=score_type, training_priors=t,
                                       priors=_likelihood_priors(score_type, priors, y, num_classes, w) if t is None
                                       else priors))
            for s, y, t, w in zip(arrays, labels, training, weights)]


def _compare_nominal_decisions(spec, score_type, labels, arrays, weights, num_classes):
    """:func:`_nominal_decisions` in `compare`, by the program that makes its fixed decisions
    (:func:`ecjax.prob.compare.padded_bayes_decisions`; one compiled program for data of similar sizes): the scores
    checked already, posterior-type ones re-weighted to likelihoods where deployment priors are given."""
    from ecjax.prob.compare import padded_bayes_decisions

    out = []
    for s, y, w in zip(arrays, labels, weights):
        p = _likelihood_priors(score_type, spec.priors, y, num_classes, w)
        with np.errstate(divide="ignore"):
            log_p = np.zeros(num_classes) if p is None else np.log(p)
        # The scores as the library holds them (probabilities in the log domain), checked already.
        out.append(padded_bayes_decisions(as_scores(s, "scores", score_type=score_type), spec.costs, log_p,
                                          score_type))
    return out


def _decisions_made_by(kind, score_type, spec, training, choice):
    if kind != "scores":
        return "given"
    text = "Bayes decisions for the nominal costs"
    if spec.priors is None:
        return text + " and the test data's class frequencies"
    if score_type not in POSTERIOR_TYPES:
        return text + " and the deployment priors"
    if training[0] is None:
        return text + "; posteriors used as given (--training-priors none: not re-weighted to the deployment priors)"
    source = "each system's label frequencies" if choice.strip() == "data" else "--training-priors"
    return text + f" and the deployment priors (posteriors re-weighted from the training priors of {source})"


def _lose_to_argmax(kind, score_type, spec, labels, arrays, decisions, names, k, d, weights):
    """Systems whose Bayes decisions cost more on the data than deciding the most probable class (K = D)."""
    from ecjax.confusion import confusion_matrix
    from ecjax.costs import normalize_rows
    from ecjax.metrics import expected_cost

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


def _frequencies(labels, num_classes, sample_weight=None):
    """The (weighted) class frequencies of a label vector: the priors wherever the cost specification gives none."""
    n_i = np.bincount(labels, weights=sample_weight, minlength=num_classes)
    return n_i / n_i.sum()


def _priors_or_frequencies(priors, labels, num_classes, sample_weight=None):
    return priors if priors is not None else _frequencies(labels, num_classes, sample_weight)


def _likelihood_priors(score_type, priors, labels, num_classes, sample_weight=None):
    """The priors that turn likelihood-type scores into posteriors (see ecjax.bayes_decisions): the deployment
    priors, else the system's own test-set class frequencies; ``None`` for posterior-type scores."""
    if score_type not in LIKELIHOOD_TYPES:
        return None
    return _priors_or_frequencies(priors, labels, num_classes, sample_weight)


def _evaluation_priors(score_type, priors, labels, num_classes, sample_weight=None):
    """Priors of the score-based functions: they weigh the EC or the scoring rule for every score type (``None``:
    the data's), and turn likelihoods into posteriors (then the data's are given explicitly)."""
    return priors if score_type not in LIKELIHOOD_TYPES else _likelihood_priors(
        score_type, priors, labels, num_classes, sample_weight)


# Threshold probabilities of the decision curves in the JSON record: 1 % to 99 %, the range clinicians read.
DECISION_CURVE_THRESHOLDS = np.round(np.arange(1, 100) / 100, 2)


# The calibrators of `ecjax calibrate --method` (ecjax.calibration.METHODS but "llr", which LLR scores always use),
# written out so that building the parser does not import the calibration module (and optax); a test checks them.
CALIBRATE_METHODS = ("affine", "temperature", "bias", "vector", "matrix", "dirichlet", "histogram", "isotonic", "beta")
# Folds of the cross-validated calibration behind the implied costs of --metric-thresholds.
IMPLIED_COST_FOLDS = 5


def _calibrated_threshold(args, y, s, metric, spec, w):
    """The metric's best threshold on cross-validated affine-calibrated scores (LLR calibration for LLRs), or why
    none was computed (a class with fewer samples than folds)."""
    from ecjax import calibration
    from ecjax.metric_thresholds import calibrated_metric_threshold

    st = args.score_type
    out_type = "llr" if st == "llr" else "log_posteriors"
    try:
        r = calibrated_metric_threshold(
            y, s, protocol=calibration.CrossValidation(random_bits.key(_or_default(args.seed, 0)), IMPLIED_COST_FOLDS),
            metric=metric, score_type=st, priors=_evaluation_priors(out_type, spec.priors, y, 2, w), sample_weight=w)
    except InputError as err:  # too few samples of a class for the folds: the raw numbers stand alone
        return {"not_computed": " ".join(str(err).split())}
    return {"protocol": f"{IMPLIED_COST_FOLDS}-fold cross-validated affine calibration", "threshold": float(r.threshold),
            "implied_cost_ratio": float(r.implied_cost_ratio), "implied_nec": float(r.implied_nec)}


def _threshold_and_curve_extras(args, kind, labels, arrays, names, spec, k, record, weights):
    """--metric-thresholds and --curves: into ``record``; returns the lines they add to the table's text."""
    from ecjax.curves import auc_one_vs_one, average_precision, decision_curve, det_curve, precision_recall_curve
    from ecjax.metric_thresholds import optimal_metric_threshold

    if not (args.metric_thresholds or args.curves):
        return ""
    if args.metric_thresholds:
        _said_of("--metric-thresholds", check_binary, k, "the threshold of a metric")
    st = args.score_type
    text = ""
    if args.metric_thresholds:
        record["metric_thresholds"] = {}
        text += ("\nthresholds that maximize a metric, and the cost of a miss (in false alarms) for which each is "
                 "the Bayes threshold -- which holds only if the scores are calibrated probabilities; 'calibrated' "
                 f"is the same metric's threshold after {IMPLIED_COST_FOLDS}-fold cross-validated affine calibration "
                 f"(--seed {_or_default(args.seed, 0)}):")
        for y, s, name, w in zip(labels, arrays, names, weights):
            rows = record["metric_thresholds"][name] = {}
            for metric in ("f1", "mcc", "youden"):
                r = optimal_metric_threshold(y, s, metric=metric, score_type=st,
                                             priors=_evaluation_priors(st, spec.priors, y, 2, w), sample_weight=w)
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
        from ecjax.risk_coverage import risk_coverage_curve

        record["curves"] = {}
        bands = []
        for y, s, name, w in zip(labels, arrays, names, weights):
            rc = risk_coverage_curve(y, s, priors=_likelihood_priors(st, spec.priors, y, k, w), score_type=st,
                                     sample_weight=w)
            abstention = rc.points()  # each point once: ties and weight-0 samples add none
            text += (f"\n{name}: abstention AURC {float(rc.aurc):.4f} (excess over the oracle "
                     f"{float(rc.excess_aurc):.4f})")
            if k > 2:
                ovo = float(auc_one_vs_one(y, s, priors=_likelihood_priors(st, spec.priors, y, k, w), score_type=st,
                                           sample_weight=w))
                record["curves"][name] = {"auc_one_vs_one": ovo, "risk_coverage": abstention}
                text += f"\n{name}: AUC one-vs-one (Hand & Till) {ovo:.4f}"
                continue
            pr = precision_recall_curve(y, s, score_type=st, sample_weight=w)
            det = det_curve(y, s, score_type=st, sample_weight=w)
            dc = decision_curve(y, s, threshold_probabilities=DECISION_CURVE_THRESHOLDS, score_type=st,
                                priors=_likelihood_priors(st, spec.priors, y, 2, w), sample_weight=w)
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
            _curve_band_figures(args, bands, names, record)
        elif k == 2:
            text += " (curve points: --json or --out; their credible bands: --curve-bands)"
    return text


def _curve_bands(args, labels, scores, sample_weight, entry):
    """--curves, binary: Bayesian-bootstrap bands of the ROC and precision-recall curves (ecjax.prob.curve_band)
    into the system's ``entry`` of the record; returns them."""
    from ecjax.prob.curve_bands import curve_band

    out = []
    key = random_bits.key(_or_default(args.seed, 0))
    for i, curve in enumerate(("roc", "precision_recall")):
        band = curve_band(labels, scores, curve=curve, key=random_bits.fold_in(key, i),
                          num_draws=CURVE_BAND_DRAWS, level=CURVE_BAND_LEVEL, score_type=args.score_type,
                          sample_weight=sample_weight)
        entry[f"{curve}_band"] = band.to_dict()
        out.append(band)
    return out


def _curve_band_figures(args, bands, names, record):
    """--curves with --out: the ROC and the precision-recall curves of every system with their bands."""
    out_dir = _out_dir(args)
    if out_dir is None:
        return
    from ecjax import plots

    for i, curve in enumerate(("roc", "precision_recall")):
        fig = plots.curve_bands([b[i] for b in bands], names=names)
        record.setdefault("files", []).append(_save_figure(fig, out_dir, f"{curve}_bands.png", args.force))


def _bootstrap_extras(args, labels, arrays, names, spec, k, record, weights):
    """--bootstrap METRIC: the Bayesian-bootstrap posterior of a score metric of every system, paired."""
    if args.bootstrap is None:
        return ""
    import jax

    from ecjax import prob
    from ecjax.prob.bootstrap import BUILTIN_METRICS, bootstrap_metric

    st = args.score_type
    # Paired: the bootstrap reweights the samples every system shares, so the library refuses systems whose
    # labels or weights differ.
    systems = _said_of("--bootstrap", prob.Systems, labels, scores=arrays, score_type=st, names=names,
                       sample_weight=None if weights[0] is None else weights)
    y = labels[0]
    uses_priors = "priors" in BUILTIN_METRICS[args.bootstrap].options
    priors = _likelihood_priors(st, spec.priors, y, k, weights[0]) if st in LIKELIHOOD_TYPES else (
        spec.priors if uses_priors else None)
    seed, draws = _or_default(args.seed, 0), _or_default(args.bootstrap_draws, BOOTSTRAP_DRAWS)
    post = bootstrap_metric(systems, args.bootstrap, key=random_bits.key(seed), priors=priors,
                            settings=prob.MonteCarloSettings(num_draws=draws))
    record["bootstrap"] = {**post.to_dict(), "seed": seed}
    return "\n" + post.summary()


def _binary_extras(args, labels, arrays, names, spec, out_dir, record, training, weights):
    """EC at the empirically optimal threshold; with --out, threshold, ROC and Bayes-risk figures.

    ``labels`` holds each system's own label vector."""
    from ecjax import plots
    from ecjax.costs import normalize_rows
    from ecjax.scores import bayes_risk_curve, expected_cost_vs_threshold, optimal_threshold_expected_cost, roc_curve

    st = args.score_type
    costs = np.asarray(normalize_rows(spec.costs))
    result = {}
    for y, s, name, w in zip(labels, arrays, names, weights):
        nec, thr = optimal_threshold_expected_cost(y, s, costs, priors=_evaluation_priors(st, spec.priors, y, 2, w),
                                                   score_type=st, normalize=True, sample_weight=w)
        result[name] = {"nec": float(nec), "threshold": float(thr)}
    if out_dir is None:
        return result
    files = record.setdefault("files", [])
    for y, s, name, t, w in zip(labels, arrays, names, training, weights):
        p = _priors_or_frequencies(spec.priors, y, 2, w)
        # Bayes threshold on the class-1 log-odds: decide 1 iff P1 (c10 - c11) > P0 (c01 - c00);
        # for LLRs the prior log-odds move it (Ferrer 2025, eq. 20), and for posteriors re-weighted from
        # training priors t the move is that of the prior log-odds, less the training log-odds.
        bayes_thr = np.log((costs[0, 1] - costs[0, 0]) / (costs[1, 0] - costs[1, 1]))
        if st == "llr":
            bayes_thr -= np.log(p[1] / p[0])
        elif t is not None:
            bayes_thr -= np.log(p[1] / p[0]) - np.log(t[1] / t[0])
        t, nec_t = expected_cost_vs_threshold(y, s, costs, priors=_evaluation_priors(st, spec.priors, y, 2, w),
                                              score_type=st, normalize=True, sample_weight=w)
        finite = np.isfinite(t)
        fig = plots.cost_vs_threshold(t[finite], nec_t[finite], bayes_threshold=float(bayes_thr),
                                      optimal_threshold=result[name]["threshold"],
                                      frame=plots.Frame(title=f"NEC against threshold: {name}"))
        files.append(_save_figure(fig, out_dir, f"nec_threshold_{_safe(name)}.png", args.force))
    rocs = [roc_curve(y, s, score_type=st, sample_weight=w)[:2] for y, s, w in zip(labels, arrays, weights)]
    # The iso-utility lines use the deployment priors, else the class frequencies of all the label files together.
    pooled = np.concatenate(labels)
    p = _priors_or_frequencies(spec.priors, pooled, 2, None if weights[0] is None else np.concatenate(weights))
    fig = plots.roc_with_iso_utility([np.asarray(r[0]) for r in rocs], [np.asarray(r[1]) for r in rocs],
                                     costs=costs, priors=p, names=names, frame=plots.Frame(class_names=spec.classes))
    files.append(_save_figure(fig, out_dir, "roc.png", args.force))
    if args.curves:  # the figure a speaker-verification user looks for: miss rate against false alarms
        fig = plots.roc_with_iso_utility([np.asarray(r[0]) for r in rocs], [np.asarray(r[1]) for r in rocs],
                                         costs=costs, priors=p, names=names, det=True,
                                         frame=plots.Frame(class_names=spec.classes))
        files.append(_save_figure(fig, out_dir, "det.png", args.force))
    if st in ("llr", "log_posteriors", "logits"):
        curves = [bayes_risk_curve(y, s, score_type=st, priors=None, sample_weight=w)
                  for y, s, w in zip(labels, arrays, weights)]
        fig = plots.bayes_risk_curves(curves, names=names)
        files.append(_save_figure(fig, out_dir, "bayes_risk.png", args.force))
    return result


def _safe(name):
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def _reliability_figures(args, labels, arrays, names, out_dir, record, weights):
    from ecjax import plots

    if args.score_type not in POSTERIOR_TYPES:
        return
    for y, s, name, w in zip(labels, arrays, names, weights):
        # Equal-mass bins when the scores are skewed, and the multiclass axis names: the plot decides from the data.
        fig = plots.reliability_diagram(labels=y, scores=s, score_type=args.score_type, sample_weight=w,
                                        frame=plots.Frame(title=f"Reliability: {name}"))
        record.setdefault("files", []).append(_save_figure(fig, out_dir, f"reliability_{_safe(name)}.png", args.force))


def _calibration_files(args, st):
    """``(train, train_labels, test, labels, protocol, train weights, weights)``: which data fit the calibrator and
    how to name the result; the weights are ``None`` or the frequency weights of the training / --scores samples.

    ``protocol`` is ``"held_out"`` (a separate training file), ``"cross_validation"`` (``--cv``) or
    ``"in_sample"`` (fitted on the very scores it calibrates, by omitting the training file or giving
    the same data twice): only the first two give honest numbers on ``--labels``.
    """
    want = 1 if st == "llr" else 2
    test, labels = _scores_and_labels(args, args.scores, args.labels)
    test = _check_scores(test, args.scores, st)
    _check_classes_count(args, 2 if want == 1 else test.shape[1])
    if labels is not None:  # validated before anything is fitted or written
        labels = _check_labels(labels, args.labels)
        _same_samples(args.labels, labels, "labels", args.scores, test, "scores")
    weights = _load_sample_weight(args.sample_weight, labels, args.labels)
    if args.train_scores is None:
        return test, labels, test, labels, "cross_validation" if args.cv else "in_sample", weights, weights
    train, train_labels = _scores_and_labels(args, args.train_scores, args.train_labels)
    train_labels = _check_labels(train_labels, args.train_labels)
    train = _check_scores(train, args.train_scores, st)
    _same_samples(args.train_scores, train, "scores", args.train_labels, train_labels, "labels")
    if want == 2:
        _said_of(args.train_scores, check_shape, train, "scores", "(N, K)", sizes={"K": test.shape[1]},
                 why=f" (the classes of {args.scores})")
    same = Path(args.train_scores).resolve() == Path(args.scores).resolve() or (
        train.shape == test.shape and np.array_equal(train, test))
    train_weights = _load_sample_weight(args.train_sample_weight, train_labels, args.train_labels,
                                        "--train-sample-weight")
    return train, train_labels, test, labels, "in_sample" if same else "held_out", train_weights, weights


def _load_groups(path, n):
    g = _said_of(path, as_group_ids, _load(path, rows=n), n, files={"groups": "--groups"})
    return _said_of(path, check_numbers, g, "groups", booleans=True)


def _optimizer_note(method, record, folds):
    from ecjax.calibration import NON_ITERATIVE_METHODS

    if method in NON_ITERATIVE_METHODS:  # counted, not optimized
        return ""
    most, largest = ("up to ", "largest ") if folds else ("", "")
    note = f"; {most}{record['iterations']} L-BFGS iterations, {largest}gradient norm {record['grad_norm']:.2g}"
    return note + ("" if record["converged"] else "  (NOT converged)")


def _failed_fit(method, record, out):
    """Why the fit of ``calibrate`` failed (not converged, or a non-finite output), or ``""``."""
    if not record["converged"]:
        return (f"the {method} fit did not converge (gradient norm {record['grad_norm']:.2g} after "
                f"{record['iterations']} L-BFGS iterations); a calibrator with fewer parameters (--method affine or "
                "temperature) or more data may fit")
    bad = int(np.sum(~np.all(np.isfinite(out), axis=tuple(range(1, out.ndim)))))
    return f"the {method} calibrator gave non-finite outputs for {bad} of {len(out)} samples" if bad else ""


def _fit_calibrator(args, method, st, train, train_labels, test, protocol, record, train_weights):
    """The calibrated scores of ``test`` and the text line saying how they were fitted."""
    import jax

    from ecjax import calibration

    common = dict(method=method, score_type=st, settings=calibration.FitSettings(loss=args.loss),
                  sample_weight=train_weights)
    if protocol == "saved":  # --calibrator: applied as it is, with the statistics of its own fit
        cal = _saved_calibrator(args, st, 2 if st == "llr" else test.shape[1])
        _record_fit(record, cal)
        record.update(calibrator=str(args.calibrator), loss=cal.loss_name)
        out = _said_of(args.calibrator, cal.apply, test, score_type=st)
        return np.asarray(out, dtype=np.float64), f"applied the saved {method} calibrator {args.calibrator} (nothing " \
                                                  "fitted)"
    if protocol != "cross_validation":
        cal = calibration.fit(train, train_labels, **common)
        if args.save_calibrator is not None:
            from ecjax.calibrator_files import calibrator_file_contents

            for path, data in calibrator_file_contents(cal, args.save_calibrator):
                _defer(path, data, args.force, "--save-calibrator")
        _record_fit(record, cal)
        where = args.train_scores or args.scores
        line = f"fitted {method} calibrator on {where} ({train.shape[0]} samples, loss {args.loss})"
        return np.asarray(cal.apply(test), dtype=np.float64), line + _optimizer_note(method, record, False)
    groups = None if args.groups is None else _load_groups(args.groups, test.shape[0])
    seed = _or_default(args.seed, 0)
    # The folds come from --cv (and --groups): their errors name them.
    res = _said_of(f"--cv {args.cv}{' with --groups' if groups is not None else ''}",
                   calibration.calibrate_cross_validated, test, train_labels, key=random_bits.key(seed),
                   num_folds=args.cv, groups=groups, **common)
    cal, folds = res.calibrator, np.asarray(res.folds)
    record.update(parameters={k: np.asarray(v).tolist() for k, v in cal.params.items()},
                  iterations=int(np.max(cal.num_iterations)), grad_norm=float(np.max(cal.grad_norm)),
                  converged=bool(np.all(cal.converged)), training_loss=float(np.mean(cal.loss)),
                  folds={"num_folds": args.cv, "seed": seed, "groups": args.groups,
                         "fold_sizes": np.bincount(folds, minlength=args.cv).tolist(),
                         "fold_of_sample": folds.tolist()})
    how = "stratified by class" if groups is None else f"every group of {args.groups} kept in one fold"
    line = (f"fitted {method} calibrators on {args.scores} by {args.cv}-fold cross-validation ({how}; key --seed "
            f"{seed}; loss {args.loss}): each sample calibrated by the calibrator of the other folds")
    return np.asarray(res.scores, dtype=np.float64), line + _optimizer_note(method, record, True)


def _record_fit(record, cal):
    """The parameters and fit statistics of one calibrator, into ``record``."""
    record.update(parameters={k: np.asarray(v).tolist() for k, v in cal.params.items()},
                  iterations=int(cal.num_iterations), grad_norm=float(cal.grad_norm),
                  converged=bool(cal.converged), training_loss=float(cal.loss))


def _before_after(args, st, out_type, test, out, labels, record, out_dir, weights):
    """Cross-entropy and Brier score of --scores before and after calibration, and reliability diagrams."""
    from ecjax import plots
    from ecjax.scores import brier, cross_entropy
    from ecjax.smooth_calibration_error import smooth_ece

    # Likelihood-type scores need priors to become posteriors: the labels' class frequencies, for both sides.
    data_priors = _frequencies(labels, 2 if out_type == "llr" else test.shape[1], weights)
    sides = {"before": (test, st), "after": (out, out_type)}
    prior = {t: data_priors if t in LIKELIHOOD_TYPES else None for t in (st, out_type)}
    scores = {}
    for name, fn in (("xe", cross_entropy), ("brier", brier)):
        scores[name] = {side: float(fn(labels, s, priors=prior[t], score_type=t, sample_weight=weights))
                        for side, (s, t) in sides.items()}
        before, after = scores[name]["before"], scores[name]["after"]
        scores[name]["loss"] = before - after
        scores[name]["refinement"] = after  # what calibration cannot remove (Ferrer & Ramos 2025)
        scores[name]["relative_loss_percent"] = 100.0 * (before - after) / before if before > 0 else 0.0
    record["cross_entropy"], record["brier"] = scores["xe"], scores["brier"]
    if args.calibration_errors:
        record["calibration_errors"] = _calibration_errors(sides, labels, prior, weights)
    record["relative_calibration_loss_percent"] = {m: scores[m]["relative_loss_percent"] for m in ("xe", "brier")}
    if out_dir is not None:
        for side, (s, t) in sides.items():
            fig = plots.reliability_diagram(labels=labels, scores=s, priors=prior[t], score_type=t,
                                            sample_weight=weights,
                                            frame=plots.Frame(title=f"{Path(args.scores).name}: {side} calibration"))
            record.setdefault("files", []).append(_save_figure(fig, out_dir, f"reliability_{side}.png", args.force))
            if args.calibration_errors:  # the smooth ECE's diagram, beside the binned one
                fig = plots.smooth_reliability_diagram(
                    smooth_ece(labels, s, priors=prior[t], score_type=t, sample_weight=weights),
                    frame=plots.Frame(title=f"{Path(args.scores).name}: {side} calibration (smooth)"))
                record["files"].append(_save_figure(fig, out_dir, f"smooth_reliability_{side}.png", args.force))
    return scores


# (name, norm, variant, binning) of the binned calibration errors of --calibration-errors (15 bins each).
CALIBRATION_ERRORS = (("ECE", "l1", "auto", "equal_width"), ("MCE", "max", "auto", "equal_width"),
                      ("RMS", "l2", "auto", "equal_width"), ("classwise ECE", "l1", "classwise", "equal_width"),
                      ("adaptive (ACE)", "l1", "classwise", "equal_mass"))


def _calibration_errors(sides, labels, prior, weights):
    """``{name: {"before": x, "after": y}}`` for :data:`CALIBRATION_ERRORS` and the smooth ECE."""
    from ecjax.calibration_error import binned_calibration_error
    from ecjax.smooth_calibration_error import smooth_ece

    errors = {name: {side: float(binned_calibration_error(labels, s, norm=norm, variant=variant, binning=binning,
                                                          priors=prior[t], score_type=t, sample_weight=weights))
                     for side, (s, t) in sides.items()}
              for name, norm, variant, binning in CALIBRATION_ERRORS}
    # No bins: the kernel's bandwidth is set by the data (Blasiok & Nakkiran 2024).
    errors["smooth ECE"] = {side: float(smooth_ece(labels, s, priors=prior[t], score_type=t,
                                                   sample_weight=weights).ece) for side, (s, t) in sides.items()}
    return errors


_PROTOCOL_WORDS = {
    "held_out": "held-out: the calibrator was fitted on a separate file",
    "cross_validation": "cross-validated: no sample was calibrated by a calibrator that saw its label",
    "in_sample": "IN-SAMPLE: the calibrator was fitted on these same samples, so 'after' is optimistic; use --cv K "
                 "or a separate --train-scores file for an honest estimate",
    "saved": "a saved calibrator (--calibrator): honest if it was fitted on other samples than these",
}


def _saved_calibrator(args, st, k):
    """The calibrator of --calibrator (checked by the library, said of its file), for --scores of type ``st``
    and ``k`` classes; ``None`` without --calibrator."""
    if args.calibrator is None:
        return None
    from ecjax.calibrator_files import load_calibrator
    from ecjax.inputs import check_choice

    cal = load_calibrator(args.calibrator, max_bytes=_limits["max_bytes"] or 2**30)
    _said_of(args.calibrator, check_choice, k, f"the number of classes of --scores (the calibrator's is "
                                               f"{cal.num_classes})", (cal.num_classes,))
    return cal


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Fit a calibrator (held-out file, cross-validation or in-sample), apply it to --scores, write the result."""
    from ecjax import calibration
    from ecjax.io import array_file_bytes, array_file_format

    st = args.score_type
    _check_output(args.output, args.force, "--output")
    _said_of("--output", array_file_format, args.output)  # the format its name says, known before fitting
    if args.save_calibrator is not None:
        from ecjax.calibrator_files import arrays_path, check_calibrator_path

        _said_of("--save-calibrator", check_calibrator_path, args.save_calibrator)
        for path in (args.save_calibrator, arrays_path(args.save_calibrator)):
            _check_output(path, args.force, "--save-calibrator")
    out_dir = _out_dir(args)
    train, train_labels, test, labels, protocol, train_weights, weights = _calibration_files(args, st)
    k = 2 if st == "llr" else train.shape[1]
    for y, f in ((train_labels, args.train_labels or args.labels), (labels, args.labels)):
        if y is not None:
            _within(f, y, k, "labels", "the classes of the scores")
    saved = _saved_calibrator(args, st, k)
    if saved is None:
        _said_of(args.train_labels or args.labels, calibration.class_totals_to_calibrate, train_labels, k,
                 sample_weight=train_weights)
    else:
        protocol = "saved"
    method = saved.method if saved is not None else "llr" if st == "llr" else args.method
    out_type = "llr" if method == "llr" else "log_posteriors"
    record = {"schema": JSON_SCHEMA_VERSION, "command": "calibrate", "method": method, "loss": args.loss,
              "protocol": protocol, "output": str(args.output), "output_type": out_type,
              "sample_weight": args.sample_weight, "train_sample_weight": args.train_sample_weight}
    what = f"calibrate: fitting {method}" + (f" on {args.cv} folds" if protocol == "cross_validation" else "")
    with _heartbeat(args, what):
        out, fitted = _fit_calibrator(args, method, st, train, train_labels, test, protocol, record, train_weights)
    failed = _failed_fit(method, record, out)
    if failed:  # a calibrator that failed writes no file: its output would pass for calibrated scores
        print(f"ecjax calibrate: error: {failed}; nothing written to {args.output}", file=sys.stderr)
        return 1
    _defer(args.output, array_file_bytes(args.output, out), args.force, "--output")
    lines = [fitted, f"wrote calibrated {out_type} of {args.scores} to {args.output}"]
    if labels is not None:
        s = _before_after(args, st, out_type, test, out, labels, record, out_dir, weights)
        xe, br = s["xe"], s["brier"]
        how = _PROTOCOL_WORDS[protocol] + (" or its group" if args.groups is not None else "")
        from ecjax.report import apart

        xe_before, xe_after = apart(xe["before"], xe["after"])
        br_before, br_after = apart(br["before"], br["after"])
        lines += [f"on the labels of {args.scores} ({how}):",
                  f"  cross-entropy {xe_before} nats before, {xe_after} after: calibration loss "
                  f"{xe['loss']:.4g} nats ({xe['relative_loss_percent']:.1f} % of the cross-entropy before)",
                  f"  Brier score (mean over the classes, psrcal's convention) {br_before} before, {br_after} after: "
                  f"calibration loss {br['loss']:.4g} ({br['relative_loss_percent']:.1f} %)"]
        errors = record.get("calibration_errors", {})
        lines += ["  {} {} before, {} after".format(name, *apart(e["before"], e["after"])) for name, e in errors.items()]
        if errors:
            lines.append("  (binned over 15 bins, equal-mass for ACE: they depend on the bins and miss what a bin "
                         "averages out; the smooth ECE has no bins; the proper scores above are the measure, "
                         "Ferrer (2022b) §4.3.2)")
    _emit(args, record, "\n".join(lines), out_dir)
    return 0


def cmd_compare_folds(args: argparse.Namespace) -> int:
    """Compare systems from their per-fold results: Bayesian correlated t-test, or the hierarchical model."""
    import jax

    from ecjax.io import load_results_table
    from ecjax.prob.from_results import compare_results, hierarchical_compare_results, hierarchical_test

    table = load_results_table(args.results)
    key = random_bits.key(args.seed)
    runs = _or_default(args.runs, 1)
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
        res = _said_of(args.results, compare_results, scores, key=key, systems=table.systems, **common)
        record.update(res.to_dict())
        text = res.summary()
    elif len(table.systems) == 2 and not isinstance(table.scores, list) and args.rank_diagram is None:
        # Two systems: baycomp's hierarchical test as such (each data set's sigma sampled, its output format).
        with _heartbeat(args, "compare-folds: NUTS on the hierarchical model"):
            test = _said_of(args.results, hierarchical_test, table.scores[0], table.scores[1], key=key, **common)
        record.update(test.to_dict(), datasets=table.datasets)
        text = test.summary(names=tuple(table.systems))
    else:
        # M systems (or data sets with different numbers of folds): the joint hierarchical model, ranked.
        with _heartbeat(args, "compare-folds: NUTS on the hierarchical model of all systems"):
            joint = _said_of(args.results, hierarchical_compare_results, table.scores, key=key,
                             systems=table.systems, **common)
        record.update(joint.to_dict(), datasets=table.datasets)
        text = joint.summary()
        res = joint
    if args.rank_diagram is not None:
        from ecjax import plots

        record["files"] = [_save_figure(plots.rank_diagram(res), Path(args.rank_diagram).parent,
                                        Path(args.rank_diagram).name, args.force)]
    _emit(args, record, text, None)
    return 0


def _signed_rank_pairs(args, table, key, record):
    """--test signed-rank: every pair's Bayesian signed-rank test over the data sets' mean results; the text."""
    import jax

    from ecjax.prob.inputs import check_several_datasets, results_per_dataset
    from ecjax.prob.signed_rank import signed_rank_test

    q = 1 if table.datasets is None else len(table.datasets)
    _said_of(args.results, check_several_datasets, q, "RESULTS.csv (its `dataset` column)", "--test t-test")
    means = np.stack([x.mean(-1) for x in _said_of(args.results, results_per_dataset, table.scores)], -1)
    names, pairs, lines = table.systems, {}, []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            test = _said_of(args.results, signed_rank_test, means[a], means[b], rope=args.rope,
                            key=jax.random.fold_in(key, a * len(names) + b))
            pairs.setdefault(names[a], {})[names[b]] = np.asarray(test.probabilities).tolist()
            lines.append(test.summary(names=(names[a], names[b])))
    record.update(model="Bayesian signed-rank test over data sets (Benavoli et al. 2014; baycomp's SignedRankTest)",
                  datasets=table.datasets, dataset_means={n: means[m].tolist() for m, n in enumerate(names)},
                  pairwise=pairs, p_are="baycomp's shares of the posterior draws in which each region (left, rope, "
                                        "right) is the most probable")
    return "\n".join(lines + ["(each data set's mean over its folds; Monte Carlo error about 0.002)"])


_LONG_RUN_SECONDS = 60.0
_PROGRESS_SECONDS = 2.0  # shorter runs answer before a progress line would help


def _rough_seconds(args, kind, spec, arrays, k, d, paired):
    """A duration of the comparison from constant rates (:func:`ecjax.prob.draw_plan.estimated_seconds`): only
    whether a progress line is worth showing; the warning of a long run waits for the measured time
    (:class:`RunClock`)."""
    from ecjax.prob.draw_plan import estimated_seconds

    per_draw = _per_draw_decisions(args, kind, spec)
    n = max(a.shape[0] for a in arrays)
    shared = _decision_rule(args).resolve(num_systems=len(arrays), num_samples=n, num_classes=k, num_decisions=d,
                                          paired=paired) if per_draw else 1
    return estimated_seconds(args.draws, num_systems=len(arrays), num_samples=n, num_classes=k, num_decisions=d,
                             per_draw_decisions=per_draw, rate_draws=shared)


def _per_draw_decisions(args, kind, spec):
    return kind == "scores" and args.decision_rule == "per_draw" and spec.uncertain


class RunClock:
    """``compare``'s reporter in the command line: the measured duration, and progress lines when asked.

    ``time_left(seconds)`` (the library's measured estimate, after its second block of draws): past
    :data:`_LONG_RUN_SECONDS`, one line on ``stream`` says how long and how to make the run shorter.  With
    ``every`` (``--progress``), a plain line every ``every`` seconds or more (draws done, seconds so far, the
    estimate of what is left): lines a log file or a batch job keeps, not only a terminal.  ``inner``: the
    terminal's :class:`DrawProgress` (or ``False``), called as before.
    """

    def __init__(self, inner, stream, *, num_draws, advice, every=None, clock=None):
        import time

        self.inner, self.stream, self.num_draws, self.advice, self.every = inner, stream, num_draws, advice, every
        self.clock = time.monotonic if clock is None else clock
        self.left, self.warned = None, False

    def __call__(self, total):
        self.bar = self.inner(total) if self.inner else None
        self.start = self.last = self.clock()
        self.shown_at = -math.inf
        return self

    def _say(self, text):
        self.stream.write(f"ecjax compare: {text}\n")
        self.stream.flush()

    def time_left(self, seconds: float) -> None:
        self.left, self.left_at = seconds, self.clock()
        if seconds > _LONG_RUN_SECONDS and not self.warned:  # on stderr, so --json output stays clean
            self.warned = True
            self._say(f"this run may take about {max(1, round(seconds / 60))} min more ({self.num_draws:,} draws; "
                      f"measured on this machine); for a shorter one use {self.advice}")

    def update(self, n: int) -> None:
        if self.bar:
            self.bar.update(n)

    def draws_done(self, done: int, yields) -> None:
        now = self.clock()
        if self.bar and hasattr(self.bar, "draws_done") and (self.every is None or now - self.shown_at >= 1.0):
            # With --progress the chunks are single blocks: the terminal's P(best) over all draws so far is
            # recomputed at most once a second, not after every block (that would be quadratic in the draws).
            self.shown_at = now
            self.bar.draws_done(done, yields)
        if self.every is not None and now - self.last >= self.every:
            self.last = now
            left = "" if self.left is None else f", about {max(0.0, self.left - (now - self.left_at)):.0f} s left"
            self._say(f"{done:,} of {self.num_draws:,} draws, {now - self.start:.0f} s{left}")

    def close(self) -> None:
        if self.bar:
            self.bar.close()


def _long_run_advice(args, kind, spec):
    advice = "fewer --draws"
    if _per_draw_decisions(args, kind, spec):
        advice += (", the default --decision-rule expected_utility (decisions made once), or --decisions with "
                   "decisions made beforehand")
    return advice


class _ProgressLine:
    """One line of progress on ``stream``, rewritten in place (``show``) and ended by ``close`` if it was shown."""

    def __init__(self, stream):
        self.stream, self.shown = stream, False

    def show(self, text):
        self.stream.write(f"\r  {text}   ")
        self.stream.flush()
        self.shown = True

    def close(self):
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


class DrawProgress(_ProgressLine):
    """Progress of ``compare`` on stderr: draws done and the current leader's P(best) with its Monte Carlo error.

    Called with the number of chunks (``compare``'s ``progress=`` factory convention); rewrites one line.
    """

    def __init__(self, names, stream):
        super().__init__(stream)
        self.names = list(names)

    def __call__(self, total):
        return self

    def update(self, n: int) -> None:
        pass

    def draws_done(self, done: int, yields: ArrayLike) -> None:
        from ecjax.prob.ranking import batch_means_error, with_error

        yields = np.asarray(yields)
        leader = int(np.argmax(yields.mean(0)))
        is_best = np.argmax(yields, 1) == leader
        p = with_error(float(is_best.mean()), float(batch_means_error(is_best)), 3)
        self.show(f"{done:,} draws: P(best) {self.names[leader]} {p}")


class ChunkProgress(_ProgressLine):
    """Progress of a sweep on stderr: chunks done and seconds so far, once the run has lasted ``after`` seconds.

    A sweep's duration is not estimated beforehand, so the line waits: a run that answers within ``after``
    seconds prints nothing.  Called with the number of chunks (the sweeps' ``progress=`` factory convention).
    """

    def __init__(self, what, stream, *, after=_PROGRESS_SECONDS, clock=None):
        import time

        super().__init__(stream)
        self.what, self.after = what, after
        self.clock = time.monotonic if clock is None else clock

    def __call__(self, total):
        self.total, self.done, self.start = total, 0, self.clock()
        return self

    def update(self, n: int) -> None:
        self.done += n
        elapsed = self.clock() - self.start
        if elapsed >= self.after:
            self.show(f"{self.what}: {self.done} of {self.total} chunks, {elapsed:.0f} s")


class Heartbeat(_ProgressLine):
    """Seconds so far of one long library call that has no progress hook (a calibrator's fit, its folds).

    A context manager: once the call has lasted ``after`` seconds, a background thread rewrites
    ``what, t s`` every ``every`` seconds until the call returns.  A call that answers sooner prints nothing.
    """

    def __init__(self, what, stream, *, after=_PROGRESS_SECONDS, every=1.0):
        import threading

        super().__init__(stream)
        self.what, self.after, self.every = what, after, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self):
        import time

        start = time.monotonic()
        if self._stop.wait(self.after):
            return
        while True:
            self.show(f"{self.what}, {time.monotonic() - start:.0f} s")
            if self._stop.wait(self.every):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.close()
        return False


def _watching(args):
    """A person watches stderr: it is a terminal, the output is the text table (not --json, --format json, csv or
    markdown), and --quiet was not given."""
    return _output_format(args) == "table" and not getattr(args, "quiet", False) and _stderr_is_terminal()


def _stderr_is_terminal():
    return sys.stderr.isatty()


def _sweep_progress(args):
    """A :class:`ChunkProgress` for a person watching (:func:`_watching`); else ``False``."""
    return ChunkProgress("sweep", sys.stderr) if _watching(args) else False


def _heartbeat(args, what):
    """A :class:`Heartbeat` for a person watching (:func:`_watching`); else a context that does nothing."""
    import contextlib

    return Heartbeat(what, sys.stderr, after=_PROGRESS_SECONDS) if _watching(args) else contextlib.nullcontext()


def _compare_progress(args, names, seconds):
    """A :class:`DrawProgress` when a person watches (:func:`_watching`) a run that takes a while (the estimate
    exceeds a couple of seconds); else ``False``."""
    if seconds < _PROGRESS_SECONDS or not _watching(args):
        return False
    return DrawProgress(names, sys.stderr)


def _decision_rule(args):
    """``--decision-rule`` and ``--rate-draws`` as the library's ``decision_rule``."""
    from ecjax import prob

    if args.decision_rule == "per_draw":
        return prob.PerDraw(args.rate_draws)
    return args.decision_rule


def _compare_sample_costs(args, kind, labels, arrays, names, spec, k):
    """compare --sample-costs: P(best) and EC intervals with the per-sample part's scale uniform in
    --sample-cost-scale (ecjax.prob.compare_sample_costs); per-sample Bayes decisions for --scores."""
    from ecjax import sample_costs as sc
    from ecjax.prob.sample_costs import compare_sample_costs

    costs = _load_sample_costs(args, labels, args.labels, k, spec.costs)
    if kind == "scores":
        decisions = [np.asarray(sc.sample_bayes_decisions(a, costs, score_type=args.score_type)) for a in arrays]
    else:
        decisions = [_said_of(f, sc.decision_inputs, labels[0], a, costs, spec.priors, None)[1]
                     for f, a in zip(args.decisions, arrays)]
    lo, hi = args.sample_cost_scale or (1.0, 1.0)
    res = _said_of("--sample-cost-scale", compare_sample_costs, labels[0], np.stack(decisions), costs,
                   scale=(lo, hi), key=random_bits.key(args.seed), num_draws=args.draws, priors=spec.priors,
                   rope=args.rope, names=names)
    record = {"schema": JSON_SCHEMA_VERSION, "command": "compare", "systems": names,
              "sample_costs": args.sample_costs, "sample_cost_scale": [lo, hi], "num_draws": res.info["num_draws"],
              "decisions": "per-sample Bayes decisions" if kind == "scores" else "given",
              "expected_cost": _float_dict(names, res.expected_cost), "p_best": _float_dict(names, res.p_best),
              "hdi": {n: np.asarray(h).tolist() for n, h in zip(names, res.hdi)}, "recommendation": res.best}
    width = max(len(n) for n in names)
    lines = [f"{'system':{width}s}  {'E[EC]':>12s}  {'90% HDI':>26s}  P(best)"]
    lines += [f"{n:{width}s}  {e:12.6g}  [{h[0]:11.6g}, {h[1]:11.6g}]  {p:.3f}"
              for n, e, h, p in zip(names, res.expected_cost, res.hdi, res.p_best)]
    lines.append(f"per-sample costs {args.sample_costs}, their per-sample part scaled by s ~ U({lo:g}, {hi:g}); "
                 f"Bayesian bootstrap over the samples, {res.info['num_draws']} draws; E[EC] exact")
    lines.append(f"recommended: {res.best}")
    _emit(args, record, "\n".join(lines), None)
    return 0


def _deployment_priors(args, spec, labels, scores, names):
    """--deployment-scores FILE: the posterior of the deployment priors (ecjax.prob.label_shift_posterior) from the
    first system's unlabelled deployment scores, its labelled test scores calibrating them; with the cost
    specification holding the estimate as its priors.  ``(spec, posterior, record, text)``."""
    from dataclasses import replace

    from ecjax import prob

    path = args.deployment_scores
    check_exclusive({f"priors in {args.costs}": spec.priors if spec.priors_low is None else spec.priors_low,
                     "--deployment-scores": path}, required=False)
    (deployment,) = _load_same_samples(path)
    deployment = _check_scores(deployment, path, args.score_type)
    _said_of(path, check_shape, deployment, "scores", "(N, K)", sizes={"K": scores.shape[1]},
             why=" (the classes of --scores)")
    post = _said_of(path, prob.label_shift_posterior, labels, scores, deployment,
                    key=random_bits.key(_or_default(args.seed, 0)),
                    num_draws=DEPLOYMENT_PRIOR_DRAWS, score_type=args.score_type)
    estimate = np.asarray(post.priors, np.float64)
    interval = post.interval(0.9)
    record = {"file": path, "system": names[0], "method": "EM on affine-calibrated posteriors (Saerens et al. 2002, "
              "Alexandari et al. 2020); Bayesian bootstrap of both sets", "estimate": estimate.tolist(),
              "interval_90": interval.tolist(), "training_priors": np.asarray(post.training_priors).tolist(),
              "draws": DEPLOYMENT_PRIOR_DRAWS, "converged": post.converged}
    text = (f"\ndeployment priors estimated from {path} ({names[0]}'s scores; 90 % intervals): " + ", ".join(
        f"{c} {e:.3f} [{lo:.3f}, {hi:.3f}]" for c, e, (lo, hi) in zip(spec.classes, estimate, interval)))
    return replace(spec, priors=estimate / estimate.sum()), post, record, text


def cmd_compare(args: argparse.Namespace) -> int:
    """Posterior ranking under an uncertain cost specification (ecjax.prob.compare)."""
    import jax

    from ecjax import plots, prob
    from ecjax.prob.inputs import check_decisions_matter

    kind, labels, label_files, arrays, names, weights = _load_inputs(args)
    files = args.scores or args.decisions
    st = args.score_type
    k = 2 if (kind == "scores" and st == "llr") else (arrays[0].shape[1] if kind == "scores" else None)
    if k is None:
        k = _num_classes(labels[0], kind, arrays, st, args.costs, label_files[0], files)
    spec = _cost_spec(args, k)
    k, d = spec.costs.shape
    _out_dir(args)  # fail fast on an existing record or an unwritable folder
    if args.sample_costs is not None:
        return _compare_sample_costs(args, kind, labels, arrays, names, spec, k)


    shift = _deployment_priors(args, spec, labels[0], arrays[0], names) if args.deployment_scores else None
    if shift is not None:
        spec = shift[0]
    for y, lf in zip(labels, label_files):
        _within(lf, y, k, "labels", "the cost matrix's classes")
    for y, lf, w in zip(labels, label_files, weights):
        _check_priors_cover(spec, y, lf, args.costs, w)
    if kind == "decisions":
        for f, a, y, lf in zip(files, arrays, labels, label_files):
            _within(f, a, d, "decisions", "the cost matrix's decisions")
            _within(lf, y, k, "labels", "the cost matrix's classes")
    shared = all(np.array_equal(labels[0], y) for y in labels[1:]) and (
        weights[0] is None or all(np.array_equal(weights[0], w) for w in weights[1:]))
    paired = shared and not args.unpaired
    # Costs under which no decision matters make every system equal: nothing to rank (and nothing to decide by).
    _said_of(args.costs or "0-1 costs", check_decisions_matter, spec.costs_low if spec.uncertain else spec.costs,
             spec.costs_high)
    nominal = kind == "scores" and args.decision_rule == "nominal"
    if nominal:
        _said_of(args.costs, check_decisions_matter, spec.costs, name="costs")
    costs = prob.intervals(spec.costs_low, spec.costs_high, kind="cost") if spec.uncertain else spec.costs
    if spec.priors_low is not None:
        priors = _said_of(args.costs, prob.interval_priors, spec.priors_low, spec.priors_high)
    else:
        priors = spec.priors if shift is None else shift[1].distribution()
    common = dict(costs=costs, priors=priors, key=random_bits.key(args.seed), rope=args.rope)
    settings = dict(num_draws=args.draws)
    if args.mc_error is not None:
        settings.update(mc_error=args.mc_error, max_draws=_or_default(args.max_draws, MC_ERROR_MAX_DRAWS))
    sample_weight = None if weights[0] is None else weights[0] if paired else list(weights)
    lab = labels[0] if paired else list(labels)
    training = _training_priors(args, spec, labels, label_files, k, weights)
    if training[0] is not None:  # decide for the deployment priors: posteriors -> likelihoods (Ferrer 2022b, §3.2)
        from ecjax.decisions import log_likelihoods_from_posteriors

        arrays = [np.asarray(log_likelihoods_from_posteriors(a, t, score_type=st)) for a, t in zip(arrays, training)]
        st = "log_likelihoods"
    # The nominal costs decide, as in `metrics` (the same decisions); the [uncertainty] table spreads the evaluation.
    decided = _compare_nominal_decisions(spec, st, labels, arrays, weights, k) if nominal else None
    terminal = _compare_progress(args, names, _rough_seconds(args, kind, spec, arrays, k, d, paired))
    if terminal:
        settings["chunk_size"] = -(-args.draws // 10)  # about ten updates (chunking changes no number: tested)
    if args.progress is not None:
        settings["chunk_size"] = 1  # one block per chunk: a line can come every few seconds whatever the block
    settings["progress"] = RunClock(terminal, sys.stderr, num_draws=args.draws, every=args.progress,
                                    advice=_long_run_advice(args, kind, spec))
    if kind == "scores" and not nominal:
        systems = prob.Systems(lab, scores=arrays, score_type=st, decision_rule=_decision_rule(args), names=names,
                               paired=paired, sample_weight=sample_weight)
    else:
        systems = prob.Systems(lab, decided or arrays, names=names, paired=paired, sample_weight=sample_weight)
    result = prob.compare(systems, settings=prob.MonteCarloSettings(**settings), **common)
    if nominal:  # the library was given the decisions: say how they were made
        result.info.update(decision_rule="nominal", decisions=_decisions_made_by(
            kind, args.score_type, spec, training, args.training_priors) + (
            " (made once; the [uncertainty] intervals spread the evaluation, not the decisions)"
            if spec.uncertain else ""))
    record = {
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
    if weights[0] is not None:
        record["sample_weight"] = args.sample_weight
    if shift is not None:
        record["deployment_priors"] = shift[2]
    out_dir = _out_dir(args)
    if out_dir is not None:
        fig = plots.yield_posteriors(result, names=names)  # the HDI marks are the printed intervals
        record.setdefault("files", []).append(_save_figure(fig, out_dir, "yield_posteriors.png", args.force))
        fig = plots.rank_probabilities(result, names=names)
        record["files"].append(_save_figure(fig, out_dir, "rank_probabilities.png", args.force))
    text = ("paired comparison (same samples)\n" if paired else "unpaired comparison\n") + result.summary()
    text += "" if shift is None else shift[3]
    if training[0] is not None:
        source = "each system's label frequencies" if args.training_priors.strip() == "data" else "--training-priors"
        text += f"\nposteriors re-weighted to the deployment priors from the training priors of {source}"
    _emit(args, record, text, out_dir)
    return 0


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
    return ({n: _frequencies(y, k) for n, y in zip(names, labels)},
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


def _sweep_sample_costs(args, kind, labels, arrays, names, spec, k):
    """sweep --sample-costs: each system's EC as the factor on the per-sample part runs over --sample-cost-scale
    (per-sample Bayes decisions at every factor for --scores; the decisions as given otherwise)."""
    from ecjax.sweep import grids, sweep_sample_costs, sweep_sample_costs_of_decisions

    costs = _load_sample_costs(args, labels, args.labels, k, spec.costs)
    lo, hi = args.sample_cost_scale or (0.0, 2.0)
    axis = _said_of("--sample-cost-scale", grids.linspace, lo, hi, args.resolution or 101)
    if kind == "scores":
        res = sweep_sample_costs(labels[0], np.stack(arrays), costs, axis, priors=spec.priors,
                                 score_type=args.score_type)
    else:
        res = _said_of(f"--decisions {args.decisions[0]}", sweep_sample_costs_of_decisions, labels[0],
                       np.stack(arrays), costs, axis, priors=spec.priors)
    factors = np.asarray(res.coords[0]).ravel()
    runs = [(float(factors[a]), float(factors[b]), names[w] if w >= 0 else "tie") for a, b, w in res.winner_runs()]
    record = {"schema": JSON_SCHEMA_VERSION, "command": "sweep", "systems": names, "over": "sample-cost-scale",
              "sample_costs": args.sample_costs, "sample_cost_scale": [lo, hi],
              "decisions": "per-sample Bayes decisions" if kind == "scores" else "given",
              "win_fraction": _float_dict(names, res.win_fraction), "winner_runs": runs,
              "expected_cost": {n: np.asarray(res.values)[:, m].tolist() for m, n in enumerate(names)},
              "factors": factors.tolist()}
    lines = [f"EC under per-sample costs {args.sample_costs}, their per-sample part times a factor in "
             f"[{lo:g}, {hi:g}] ({len(factors)} points; {record['decisions']})",
             "win fraction: " + ", ".join(f"{n} {f:.3f}" for n, f in zip(names, res.win_fraction))]
    lines += [f"  factor {a:8.3f} .. {b:8.3f}: {w}" for a, b, w in runs]
    _emit(args, record, "\n".join(lines), None)
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    """Winner maps and tables over the utility space, a cost ratio, or random cost matrices."""
    import jax

    from ecjax import plots, sweep
    from ecjax.confusion import confusion_matrix

    kind, labels, label_files, arrays, names, weights = _load_inputs(args)
    st = args.score_type
    if kind == "scores":
        k = 2 if st == "llr" else arrays[0].shape[1]
    else:
        k = _num_classes(labels[0], kind, arrays, st, args.costs, label_files[0], args.decisions)
    _out_dir(args)  # fail fast on an existing record or an unwritable folder
    for y, lf in zip(labels, label_files):
        _within(lf, y, k, "labels", "the classes of the scores")
    spec = _cost_spec(args, k)
    if args.sample_costs is not None:
        return _sweep_sample_costs(args, kind, labels, arrays, names, spec, k)
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
        _check_priors_cover(spec, y, lf, args.costs)
        if swept is not None:
            _check_naive(swept, spec.priors, y, lf, args.costs)
    priors = spec.priors
    if kind == "decisions":
        d = spec.costs.shape[1] if over == "matrices" else 2
        for f, a in zip(args.decisions, arrays):
            _within(f, a, d, "decisions", "the decisions swept")
        counts = np.stack([np.asarray(confusion_matrix(y, a, num_classes=k, num_decisions=d))
                           for y, a in zip(labels, arrays)])
    shared = all(np.array_equal(labels[0], y) for y in labels[1:])
    lab = labels[0] if shared else np.stack(labels) if len({len(y) for y in labels}) == 1 else None
    if kind == "scores" and lab is None:
        raise InputError("--labels: systems with test sets of different sizes cannot be swept together")
    scores = np.stack(arrays) if kind == "scores" else None
    score_priors = _evaluation_priors(st, priors, labels[0], k)
    used, source = _sweep_priors(spec, labels, names, k, score_priors if kind == "scores" else None, args.costs)
    record = {"schema": JSON_SCHEMA_VERSION, "command": "sweep", "over": over, "systems": names, "input": kind,
              "classes": spec.classes, "priors": {n: np.asarray(p).tolist() for n, p in used.items()},
              "priors_source": source}
    out_dir = _out_dir(args)
    settings = sweep.SweepSettings(progress=_sweep_progress(args))
    if over == "utility-space":
        if kind == "scores":
            m = sweep.utility_space_map(labels=lab, scores=scores, priors=score_priors, score_type=st,
                                        resolution=resolution, settings=settings)
        else:
            m = sweep.utility_space_map(counts, priors=priors, resolution=resolution, settings=settings)
        record["win_fraction"] = _float_dict(names, m.win_fraction)
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
            record.setdefault("files", []).append(_save_figure(fig, out_dir, "winner_map.png", args.force))
    else:
        if over == "cost-ratio":
            axis: sweep.grids.Axis | np.ndarray = _said_of("--lo/--hi", sweep.grids.cost_ratios, args.lo, args.hi,
                                                           resolution)
            coord_name = "cost ratio c10 / c01"
        else:
            prior, cost_source = _matrix_prior(spec, args.costs)
            cost_matrices = -np.asarray(prior.sample(random_bits.key(args.seed), resolution))  # samples: utilities
            axis = cost_matrices
            coord_name = f"random cost matrices: {cost_source}; key --seed {args.seed}"
        if kind == "scores":
            assert lab is not None and scores is not None, "score input has its labels and scores (checked above)"
            res = sweep.sweep_scores(lab, scores, axis, priors=score_priors, score_type=st, normalize=True,
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
                record.setdefault("files", []).append(_save_figure(fig, out_dir, "sweep_cost_ratio.png", args.force))
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
                record.setdefault("files", []).append(_save_figure(fig, out_dir, "sweep_matrices.png", args.force))
    _emit(args, record, "\n".join(lines), out_dir)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ecjax import demo

    demo.run(seed=args.seed)
    return 0


# ------------------------------------------------------------------ parser

def _add_common(p):
    # One rule for every subcommand: systems scored on the samples in different orders each bring their labels.
    p.add_argument("--labels", required=True, nargs="+", metavar="FILE",
                   help="true classes (.npy/.npz/.csv vector of N integers): one file shared by all systems, or "
                        "one file per system")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--scores", nargs="+", metavar="FILE", help="one (N, K) score file per system")
    g.add_argument("--decisions", nargs="+", metavar="FILE", help="one (N,) decision file per system")
    p.add_argument("--score-type", default="log_posteriors",
                   choices=SCORE_TYPES,
                   help="type of --scores (probabilities: rows in [0, 1] summing to 1)")
    p.add_argument("--names", nargs="+", help="system names (default: file stems, with parent folders where stems collide)")
    _add_classes(p)
    p.add_argument("--costs", metavar="SPEC", help="cost specification, .toml or .json (default: 0-1 costs)")
    _add_output_format(p)
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr (also silent with --json, or "
                                                        "when stderr is not a terminal)")
    p.add_argument("--out", metavar="DIR", help="write the JSON record and figures into DIR")
    p.add_argument("--force", action="store_true", help="overwrite existing output files")
    _add_max_input(p)


def _add_classes(p):
    p.add_argument("--classes", metavar="A,B,...",
                   help="the class names, comma-separated, in the order of the score columns: the label files then "
                        "hold class names (a CSV column or a .npy of strings), each read as its position here")


def _add_output_format(p):
    from ecjax.formats import FORMATS

    p.add_argument("--format", choices=FORMATS, default=None,
                   help="what to print: table (aligned text, the default), json (the record), csv or markdown (the "
                        "main table alone: one row per system, per measure for calibrate; columns named as in the "
                        "JSON)")
    p.add_argument("--json", action="store_true", help="print the JSON record: --format json")


def _add_sample_weight(p):
    p.add_argument("--sample-weight", nargs="+", metavar="FILE",
                   help="non-negative weight of each sample (.npy/.npz/.csv vector of N numbers), one file per "
                        "--labels file: frequency weights, as scikit-learn's sample_weight (a sample of weight 3 "
                        "counts as three samples, one of weight 0 as none)")


def _add_training_priors(p):
    p.add_argument("--training-priors", default="data", metavar="{data,none,P0,P1,...}",
                   help="with posterior-type --scores and deployment priors in --costs: the class priors the scores "
                        "were trained with, so that the posteriors are re-weighted to the deployment priors before "
                        "deciding. 'data': the class frequencies of each system's labels (default); 'none': use the "
                        "posteriors as they are; or comma-separated numbers")


def _add_max_input(p):
    p.add_argument("--max-input-mb", type=_int_in(1, 2**40, "--max-input-mb"), default=1024, metavar="MB",
                   help="largest array an input file may declare, in MiB (default 1024), checked before loading")


class _HelpWithDefaults(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the text already states it or there is none."""

    def _get_help_string(self, action):
        text = action.help or ""
        # `is`, not `in`: 0 == False, and a default of 0 (--seed) must still be shown.
        if ("default" in text or action.default is None or action.default is False
                or action.default is argparse.SUPPRESS or not action.option_strings):
            return text
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error: ``ecjax <command>: error: <what>`` and exit 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def _int_in(lo, hi, option):
    """An integer option in [lo, hi]; whole numbers written as floats (1e6) are accepted."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            try:
                f = float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{option} must be an integer, got {text!r}") from None
            if not math.isfinite(f) or f != int(f):
                raise argparse.ArgumentTypeError(f"{option} must be an integer, got {text!r}") from None
            value = int(f)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{option} must be between {lo} and {hi}, got {text}")
        return value

    return parse


def _float_in(lo, option, *, strict=False):
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} must be a number, got {text!r}") from None
        if not math.isfinite(value) or value < lo or (strict and value == lo):
            raise argparse.ArgumentTypeError(f"{option} must be a finite number {'>' if strict else '>='} {lo}, got {text}")
        return value

    return parse


def _build_parser() -> argparse.ArgumentParser:
    from ecjax import __version__

    parser = _Parser(prog="ecjax", description="Evaluate classifiers by expected cost and utility yield.",
                     formatter_class=_HelpWithDefaults)
    parser.add_argument("--version", action="version", version=f"ecjax {__version__}")
    sub = parser.add_subparsers(dest="command", required=True,
                                parser_class=partial(_Parser, formatter_class=_HelpWithDefaults))  # type: ignore[call-overload]
    demo = sub.add_parser("demo", help="run the main job on data the package carries or generates")
    demo.add_argument("--seed", type=_int_in(0, MAX_SEED, "--seed"), default=0,
                      help="key for the generated screening data (default 0)")
    m = sub.add_parser("metrics", help="EC, NEC, utility yield and the classical metrics of one or more systems")
    _add_common(m)
    m.add_argument("--pos-label", type=_int_in(0, 2**31 - 1, "--pos-label"), default=1,
                   help="positive class of the binary metrics (default 1)")
    _add_training_priors(m)
    _add_sample_weight(m)
    m.add_argument("--metric-thresholds", action="store_true",
                   help="binary scores: the thresholds that maximize F1, MCC and Youden's J, and the cost ratio each "
                        "one implies (the cost of a miss in false alarms for which it is the Bayes threshold: true "
                        "only of calibrated scores), on the scores as given and after 5-fold cross-validated "
                        "calibration")
    m.add_argument("--curves", action="store_true",
                   help="scores: average precision, precision-recall, DET and decision curves (binary; the points "
                        "in --json / --out), or the one-vs-one AUC (multiclass); and the risk-coverage curve of "
                        "abstaining below a confidence, with its AURC (any K)")
    m.add_argument("--curve-bands", action="store_true",
                   help="with --curves, binary: 95%% Bayesian-bootstrap bands of the ROC and precision-recall "
                        "curves, pointwise and simultaneous, in --json / --out and as figures in --out (keyed by "
                        "--seed)")
    m.add_argument("--bootstrap", metavar="METRIC", default=None,
                   choices=["cross_entropy", "brier", "auc", "eer", "ece", "nec_best_threshold", "calibration_loss"],
                   help="posterior of a score metric by the Bayesian bootstrap over the samples, paired across "
                        "systems: HDI, P(best), P(a better than b); one of %(choices)s")
    m.add_argument("--bootstrap-draws", type=_int_in(200, 10**6, "--bootstrap-draws"), metavar="N",
                   help=f"with --bootstrap: its draws (default {BOOTSTRAP_DRAWS})")
    m.add_argument("--seed", type=_int_in(0, MAX_SEED, "--seed"),
                   help="with --bootstrap, --metric-thresholds or --curves: the random key of the bootstraps and of the "
                        "cross-validation folds of the calibrated implied costs (default 0)")
    m.add_argument("--sample-costs", metavar="FILE",
                   help="per-sample costs: a (N, K, D) .npy of one cost matrix per sample, or an .npz with `amount` "
                        "(N,), `scale` (K, D) and optionally `base` (K, D; default: the --costs matrix) for "
                        "c_n = base + amount_n * scale (a missed fraud costs its amount); adds each system's EC "
                        "under them (Bayes decisions per sample for --scores)")
    m.add_argument("--deployment-scores", metavar="FILE",
                   help="unlabelled scores of the first system on deployment samples: the deployment priors are "
                        "estimated from them (label shift: EM on its affine-calibrated posteriors) and used as the "
                        "cost specification's priors (posterior-type scores)")
    m.add_argument("--scatter-metric", default="F1",
                   help="with --out and several systems: the metric plotted against the utility yield (default F1)")
    cp = sub.add_parser("compare", help="which classifier, and how sure are we, under uncertain costs")
    _add_common(cp)
    cp.add_argument("--unpaired", action="store_true", help="treat systems as scored on independent samples")
    _add_training_priors(cp)
    _add_sample_weight(cp)
    cp.add_argument("--draws", type=_int_in(1, MAX_DRAWS, "--draws"), default=20_000,
                    help=f"posterior draws (default 20000, at most {MAX_DRAWS:.0e})")
    cp.add_argument("--mc-error", type=_float_in(0.0, "--mc-error", strict=True),
                    help="draw more (from --draws up to --max-draws) until every reported probability has at most "
                         "this Monte Carlo standard error, e.g. 0.005")
    cp.add_argument("--max-draws", type=_int_in(1, MAX_DRAWS, "--max-draws"),
                    help=f"with --mc-error: the most draws it may use (default {MC_ERROR_MAX_DRAWS})")
    cp.add_argument("--seed", type=_int_in(0, MAX_SEED, "--seed"), default=0, help="random key (default 0)")
    cp.add_argument("--deployment-scores", metavar="FILE",
                    help="unlabelled scores of the first system on deployment samples: the deployment priors are "
                         "estimated from them (label shift: EM on its affine-calibrated posteriors) and drawn from "
                         "their posterior (posterior-type scores)")
    cp.add_argument("--progress", type=_float_in(0.0, "--progress", strict=True), nargs="?", const=5.0,
                    default=None, metavar="SECONDS",
                    help="a progress line on stderr every SECONDS (default 5) with the draws done and the time "
                         "left, also when stderr is not a terminal (logs, batch jobs)")
    cp.add_argument("--rope", type=_float_in(0.0, "--rope"),
                    help="half-width of the region of practical equivalence (yield units)")
    cp.add_argument("--decision-rule", default="nominal", choices=["nominal", "expected_utility", "per_draw"],
                    help="with --scores: Bayes decisions of the nominal cost matrix of --costs (its `costs`, as in "
                         "`metrics`), made once (default); of the expected cost matrix (the mean of the "
                         "[uncertainty] intervals), made once; or of each drawn cost matrix (costs known at "
                         "deployment)")
    cp.add_argument("--sample-costs", metavar="FILE",
                    help="per-sample costs, as in `metrics` (a (N, K, D) .npy, or an .npz with `amount`, `scale` and "
                         "optionally `base`, default the --costs matrix): rank the systems under them, paired on one "
                         "test set")
    cp.add_argument("--sample-cost-scale", nargs=2, metavar=("LO", "HI"), type=_float_in(0.0, "--sample-cost-scale"),
                    help="with --sample-costs: the factor on their per-sample part is uncertain, uniform in [LO, HI] "
                         "(default: 1 1, only the test set is uncertain)")
    cp.add_argument("--rate-draws", type=_int_in(1, 1024, "--rate-draws"), default=None,
                    help="with --decision-rule per_draw: draws of the rates for each drawn cost matrix (its Bayes "
                         "decisions are made once and shared by them; default: chosen from the problem's size, "
                         "see ecjax.prob.PerDraw)")
    cf = sub.add_parser("compare-folds", help="compare systems from per-fold (and per-data-set) results: "
                                              "Bayesian correlated t-test, or the hierarchical model over data sets")
    cf.add_argument("results", metavar="RESULTS.csv",
                    help="header naming the systems (and an optional `dataset` column), one row per fold; "
                         "higher is better. With a `dataset` column: baycomp's hierarchical test for two systems, "
                         "the joint hierarchical model (ecjax.prob.hierarchical_compare_results) for more, or "
                         "when the data sets have different numbers of folds")
    cf.add_argument("--rope", type=_float_in(0.0, "--rope"), default=0.0,
                    help="region of practical equivalence, in the results' units (default 0)")
    cf.add_argument("--runs", type=_int_in(1, 10**6, "--runs"),
                    help="repetitions of the cross-validation in the rows (folds correlate as runs / rows; default 1)")
    cf.add_argument("--test-fraction", type=_float_in(0.0, "--test-fraction", strict=True), default=None,
                    help="fraction of the data in each test fold (the Nadeau-Bengio correlation), instead of --runs")
    cf.add_argument("--seed", type=_int_in(0, MAX_SEED, "--seed"), default=0, help="random key (default 0)")
    cf.add_argument("--test", choices=("t-test", "signed-rank"), default="t-test",
                    help="t-test: the correlated t-test / hierarchical models above; signed-rank: the Bayesian "
                         "signed-rank test of every pair over the data sets' mean results (Benavoli et al. 2014, "
                         "baycomp's SignedRankTest; needs a `dataset` column)")
    cf.add_argument("--rank-diagram", metavar="PNG", default=None,
                    help="write a critical-difference-style figure: expected ranks, their 90%% intervals, and bars "
                         "joining the pairs with P(|difference| <= rope) >= 0.95 (ecjax.plots.rank_diagram)")
    cf.add_argument("--force", action="store_true", help="overwrite an existing --rank-diagram file")
    _add_output_format(cf)
    cf.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    sw = sub.add_parser("sweep", help="which system wins where: utility-space winner maps, cost-ratio sweeps")
    _add_common(sw)
    sw.add_argument("--over", default="auto", choices=["auto", "utility-space", "cost-ratio", "matrices"],
                    help="what to sweep: the binary utility space (who wins for every 2 x 2 utility matrix), the "
                         "binary cost ratio c10/c01, or random cost matrices (each cost uniform on its "
                         "[uncertainty] interval in --costs; without one, between 0 and twice its value). "
                         "auto: utility-space for two classes and two decisions, matrices otherwise")
    sw.add_argument("--resolution", type=_int_in(2, 10**6, "--resolution"),
                    help="grid points per axis (utility-space), cost ratios (cost-ratio) or cost matrices "
                         "(matrices) (default: 101, 101, 1000)")
    sw.add_argument("--lo", type=_float_in(0.0, "--lo", strict=True), default=0.01,
                    help="smallest cost ratio (cost-ratio sweeps)")
    sw.add_argument("--hi", type=_float_in(0.0, "--hi", strict=True), default=100.0,
                    help="largest cost ratio (cost-ratio sweeps)")
    sw.add_argument("--seed", type=_int_in(0, MAX_SEED, "--seed"), default=0,
                    help="random key for --over matrices (default 0)")
    sw.add_argument("--sample-costs", metavar="FILE",
                    help="per-sample costs, as in `metrics`: sweep a factor on their per-sample part (over "
                         "--sample-cost-scale, --resolution points) instead of --over")
    sw.add_argument("--sample-cost-scale", nargs=2, metavar=("LO", "HI"), type=_float_in(0.0, "--sample-cost-scale"),
                    help="with --sample-costs: the range of the factor (default 0 2)")
    c = sub.add_parser("calibrate", help="fit a calibrator on a separate file, by cross-validation (--cv) or on the "
                                         "scores themselves, and write calibrated scores")
    c.add_argument("--train-scores", metavar="FILE",
                   help="(N, K) scores to fit on ((N,) for llr); without it the calibrator is fitted on --scores and "
                        "its --labels: in-sample (optimistic), or by cross-validation with --cv")
    c.add_argument("--train-labels", metavar="FILE", help="true classes of --train-scores")
    c.add_argument("--scores", required=True, metavar="FILE", help="scores to calibrate")
    c.add_argument("--sample-weight", metavar="FILE",
                   help="frequency weight of each sample of --scores (as scikit-learn's sample_weight): used to fit "
                        "(with --cv, or without a training file) and to evaluate before and after")
    c.add_argument("--train-sample-weight", metavar="FILE", help="frequency weight of each sample of --train-scores")
    c.add_argument("--labels", metavar="FILE",
                   help="true classes of --scores: report the cross-entropy and Brier score before and after "
                        "calibration (and, with --out, reliability diagrams)")
    _add_classes(c)
    c.add_argument("--cv", type=_int_in(2, 10**6, "--cv"), metavar="K",
                   help="K-fold cross-validation on --scores and --labels: each sample is calibrated by a calibrator "
                        "fitted on the other folds (folds stratified by class)")
    c.add_argument("--groups", metavar="FILE",
                   help="with --cv: a group id per sample of --scores (a speaker, a patient, a recording "
                        "condition); every group stays whole in one fold, so no sample is calibrated by a "
                        "calibrator that saw its group")
    c.add_argument("--seed", type=_int_in(0, MAX_SEED, "--seed"),
                   help="with --cv: random key of its folds (default 0)")
    c.add_argument("--output", required=True, metavar="FILE.npy",
                   help="where to write the calibrated scores: .npy, or .csv for text (one row per sample)")
    c.add_argument("--method", default="affine",
                   choices=CALIBRATE_METHODS,
                   help="calibration transform (llr scores always use the binary LLR calibration; histogram "
                        "and beta are binary; isotonic is one-vs-rest for more classes; dirichlet is Dirichlet "
                        "calibration with its ODIR penalty)")
    c.add_argument("--save-calibrator", metavar="FILE.json",
                   help="also save the fitted calibrator as FILE.json and FILE.npz (no pickle; "
                        "ecjax.calibrator_files), to apply later with --calibrator")
    c.add_argument("--calibrator", metavar="FILE.json",
                   help="apply the calibrator saved with --save-calibrator to --scores, without fitting (its "
                        "method and score type are the saved ones)")
    c.add_argument("--calibration-errors", action="store_true",
                   help="with --labels: ECE, MCE, RMS, classwise and adaptive calibration errors and the smooth "
                        "ECE (Blasiok & Nakkiran 2024) before and after; with --out, smooth reliability diagrams too")
    c.add_argument("--loss", default="xe", choices=["xe", "brier"], help="training objective")
    c.add_argument("--score-type", default="log_posteriors",
                   choices=SCORE_TYPES,
                   help="type of the scores (probabilities: rows in [0, 1] summing to 1)")
    _add_output_format(c)
    c.add_argument("--quiet", action="store_true", help="no progress line on stderr (also silent with --json, or "
                                                        "when stderr is not a terminal)")
    c.add_argument("--out", metavar="DIR",
                   help="also write the JSON record and, with --labels, reliability diagrams before and after "
                        "calibration into DIR")
    c.add_argument("--force", action="store_true", help="overwrite existing output files")
    _add_max_input(c)
    return parser


COMMANDS = {"demo": cmd_demo, "metrics": cmd_metrics, "calibrate": cmd_calibrate, "compare": cmd_compare,
            "compare-folds": cmd_compare_folds, "sweep": cmd_sweep}


class _Terminated(BaseException):
    """SIGTERM, raised as an exception so that temporary files are removed on the way out."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def _as_options(message: str) -> str:
    """The library's argument spellings in a message, as the options a user types (`--score-type logits`)."""
    message = re.sub(r"""score_type=["']?([a-z_]+)["']?""", r"--score-type \1", message)
    return message.replace("`score_type`", "--score-type")


# The command line keeps JAX's compiled programs between runs, so a second run of a similar command skips most of
# its compilation. Off with ECJAX_NO_COMPILATION_CACHE=1; elsewhere with ECJAX_COMPILATION_CACHE_DIR; a cache dir
# the user gave JAX (JAX_COMPILATION_CACHE_DIR) wins. Bounded and file-locked, so concurrent runs share it safely.
COMPILATION_CACHE_BYTES = 2**30


def compilation_cache_dir() -> str | None:
    """The folder of the command line's compilation cache, or ``None`` when it is switched off."""
    if os.environ.get("ECJAX_NO_COMPILATION_CACHE", "").strip() not in ("", "0"):
        return None
    explicit = os.environ.get("ECJAX_COMPILATION_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ecjax", "jax-compilation-cache")


def _use_compilation_cache():
    path = compilation_cache_dir()
    if path is None:
        return
    import jax

    if jax.config.jax_compilation_cache_dir:
        return  # the user's own JAX setting
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return  # no writable cache folder: run without one
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_compilation_cache_max_size", COMPILATION_CACHE_BYTES)  # LRU eviction, file-locked
    # Every program: a warm run otherwise still spends ~2.5 s compiling dozens of small ones (measured).
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (one line, exit 2) and --help (exit 0)
        return exc.code if isinstance(exc.code, int) else 2
    _pending.clear()
    _limits["max_bytes"] = getattr(args, "max_input_mb", 1024) * 2**20
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: leave signals alone
        previous = None
    try:
        _use_compilation_cache()
        check_option_rules(args)
        code = COMMANDS[args.command](args)
        _flush_stdout()  # what print() left in the buffer: a full device fails here, not at exit
        return code
    except _StdoutFailed as failed:
        return _stdout_failed(args.command, failed.error)
    except BrokenPipeError as err:  # printed elsewhere (the demo) into a closed pipe
        return _stdout_failed(args.command, err)
    except InputError as err:
        print(f"ecjax {args.command}: error: {_as_options(' '.join(str(err).split()))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"ecjax {args.command}: interrupted", file=sys.stderr)
        return 130
    except _Terminated:
        print(f"ecjax {args.command}: terminated", file=sys.stderr)
        return 143
    except Exception as err:  # noqa: BLE001 - the last line of defence
        if os.environ.get("ECJAX_DEBUG"):
            raise
        msg = " ".join(f"{type(err).__name__}: {err}".split())
        print(f"ecjax {args.command}: internal error: {msg} (set ECJAX_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1
    finally:
        _pending.clear()
        _limits["max_bytes"] = None
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
