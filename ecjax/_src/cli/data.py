"""The inputs of a command: labels, scores or decisions, names, weights, per-sample costs and the cost
specification, each file checked by the library against the others."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from ecjax._src.cli.files import Run, canonical_score_file, check_indices, check_labels, check_of, same_samples, score_file
from ecjax._src.cli.options import MAX_NAME_LENGTH
from ecjax._src.inputs import (InputError, as_class_list, as_sample_weight, check_same_classes, check_shape,
                               check_some_weight, inferred_size, system_names)


class Inputs(NamedTuple):
    """The systems of a command, every file checked against its labels."""

    kind: str  # "scores" or "decisions"
    labels: list  # each system's (N,) class indices
    label_files: list  # the file each system's labels came from
    arrays: list  # each system's scores or decisions
    names: list  # the system names
    weights: list  # each system's (N,) sample weights, or None
    scores: list  # each system's scores made canonical once (ecjax.inputs.Scores); empty for decisions


def _default_names(files):
    """System names from the file names: the stem, with as many parent folders as make the names distinct
    (``a/scores.npy`` and ``b/scores.npy`` are ``a/scores`` and ``b/scores``, not two systems named ``scores``)."""
    parts = [Path(f).with_suffix("").parts for f in files]
    for depth in range(1, max(len(p) for p in parts) + 1):
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names):
            return names
    return names  # the same path twice: refused below, with the names shown


def load_inputs(args, run: Run) -> Inputs:
    """The systems of the command's files (:class:`Inputs`), every file checked against its labels.

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
        loaded = _load_by_class_names(run, args.classes, groups)
    else:
        loaded = {f: a for group in groups for f, a in zip(group, run.load_same_samples(*group))}
    labels = [check_labels(loaded[f], f) for f in label_files]
    if len(labels) == 1:
        labels, label_files = labels * len(files), label_files * len(files)
    st = args.score_type
    arrays, canonical = [], []
    want = 1 if (kind == "decisions" or st == "llr") else 2
    for f, y, lf in zip(files, labels, label_files):
        a = loaded[f]
        if kind == "scores":
            a = score_file(a, f, st)
            canonical.append(canonical_score_file(a, f, st))
        else:
            check_of(f, check_shape, a, "decisions", "(N,)")
        same_samples(f, a, kind, lf, y, "labels")
        if kind == "decisions":
            a = check_indices(a, f, "decisions")
        arrays.append(a)
    if kind == "scores" and want == 2:  # one set of classes for all systems
        for f, a in zip(files, arrays):
            check_of(f"--scores {f}", check_shape, a, "scores", "(N, K)", sizes={"K": arrays[0].shape[1]},
                     why=f" (the classes of {files[0]})")
    if kind == "scores":
        check_classes_count(args, 2 if want == 1 else arrays[0].shape[1])
    # Names from the files differ unless a file is given twice (_default_names).
    names = list(check_of("--names" if args.names else f"--{kind}: the same file is given twice (give --names)",
                          system_names, args.names or _default_names(files), None, len(files), "names"))
    for n, f in zip(names, files):
        if len(n) > MAX_NAME_LENGTH:  # a line of the table
            where = "--names" if args.names else f"{f} (its name comes from the file name: give --names)"
            raise InputError(f"{where}: a system name of {len(n)} characters; at most {MAX_NAME_LENGTH}")
    return Inputs(kind, labels, label_files, arrays, names, _load_sample_weights(args, run, labels, label_files),
                  canonical)


def class_names(option):
    """The class names of --classes ``a,b,c`` (spaces around a name left out)."""
    return [name.strip() for name in option.split(",")]


def check_classes_count(args, num_classes):
    """--classes, where given, names one class per score column."""
    if args.classes is not None:
        check_of("--classes", as_class_list, class_names(args.classes), num_classes=num_classes)


def scores_and_labels(args, run, scores, labels):
    """The arrays of a score file and of its label file (``None`` when not given), the labels' class names read as
    indices with --classes."""
    if labels is None or args.classes is None:
        return run.load_same_samples(scores, labels)
    loaded = _load_by_class_names(run, args.classes, [[labels, scores]])
    return loaded[scores], loaded[labels]


def _load_by_class_names(run, option, groups):
    """With --classes: each label file's class names as class indices (:func:`ecjax.io.load_class_names`), and the
    files of the same samples, each CSV's undecided first row settled by the number of labels."""
    from ecjax._src.io import load_class_names

    classes = check_of("--classes", as_class_list, class_names(option)).tolist()
    loaded = {}
    for label_file, *others in groups:
        loaded[label_file] = load_class_names(label_file, classes, max_bytes=run.max_bytes)
        loaded.update({f: run.load(f, rows=len(loaded[label_file])) for f in others})
    return loaded


def _load_sample_weights(args, run, labels, label_files):
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
    return [load_sample_weight(run, f, y, lf) for f, y, lf in zip(files, labels, label_files)]


def load_sample_weight(run, path, labels, label_file, option="--sample-weight"):
    """One weight file: ``(N,)`` finite non-negative numbers, one per label of ``label_file``, not all 0."""
    if path is None:
        return None
    w = np.asarray(check_of(f"{option} {path}", as_sample_weight, run.load(path, rows=len(labels)), labels,
                            files={"labels": label_file}), np.float64)
    check_of(f"{option} {path}", check_some_weight, w)
    return w


def load_sample_costs(args, run, labels, label_files, num_classes, base):
    """--sample-costs FILE: a 3-D ``.npy`` of ``(N, K, D)`` per-sample cost matrices, or an ``.npz`` with
    ``amount`` (``(N,)`` or ``(N, M)``), ``scale`` (``(K, D)`` or ``(M, K, D)``) and optionally ``base``
    (``(K, D)``; default: the --costs matrix): ``c_n = base + amount_n scale`` (:mod:`ecjax.scores.sample_costs`)."""
    from ecjax._src.inputs import as_per_sample_costs, as_sample_cost_parts, check_one_sample_set
    from ecjax._src.scores.sample_costs import SampleCosts

    path = args.sample_costs
    where = f"--sample-costs {path}"
    check_of(where, check_one_sample_set, label_files, "--sample-costs")
    n = len(labels[0])
    if str(path).lower().endswith(".npz"):
        from ecjax._src.io import load_array

        def member(key):
            return load_array(path, key=key, max_bytes=run.max_bytes)

        with np.load(path, allow_pickle=False) as z:
            has_base = "base" in z.files
        parts = check_of(where, as_sample_cost_parts, member("base") if has_base else base, member("amount"),
                         member("scale"), num_samples=n, num_classes=num_classes)
        return SampleCosts(*parts)
    return check_of(where, as_per_sample_costs, run.load(path), n, num_classes)


def cost_spec(args, num_classes):
    from ecjax._src.costs import zero_one
    from ecjax._src.io import CostSpec, load_cost_spec

    if args.costs is None:
        c = np.asarray(zero_one(num_classes))
        given = getattr(args, "classes", None)  # the names of --classes, where they name these classes
        names = class_names(given) if given and len(class_names(given)) == num_classes else [
            str(i) for i in range(num_classes)]
        return CostSpec(c, names, names, source="0-1 costs (default)")
    spec = load_cost_spec(args.costs)
    check_of(args.costs, check_shape, spec.costs, "costs", "(K, D)", sizes={"K": num_classes},
             why=" (a row per class of the data)")
    if getattr(args, "classes", None) is not None:  # the labels' class list and the cost rows: one order
        check_of("--classes", check_same_classes, class_names(args.classes), spec.classes, args.costs)
    return spec


def count_classes(labels, kind, arrays, score_type, spec_path, label_file="--labels", files=()):
    if kind == "scores":
        return 2 if score_type == "llr" else arrays[0].shape[1]
    if spec_path is not None:
        from ecjax._src.io import load_cost_spec

        return load_cost_spec(spec_path).costs.shape[0]
    # K from the data: bounded, so a stray label 20000 cannot build 20001 x 20001 matrices.
    return max(check_of(f, inferred_size, a.max(), what, argument="num_classes",
                        files={"num_classes": "--costs (a file that names them)"})
               for a, f, what in [(labels, label_file, "labels"), *((a, f, "decisions") for a, f in zip(arrays, files))])
