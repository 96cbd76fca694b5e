"""``ecjax calibrate``: fit a calibrator (held-out file, cross-validation or in-sample), or apply a saved one, to
--scores and write the calibrated scores."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ecjax._src import random_bits
from ecjax._src.cli import progress
from ecjax._src.cli.calibrate_report import before_after
from ecjax._src.cli.data import check_classes_count, load_sample_weight, scores_and_labels
from ecjax._src.cli.files import (Run, canonical_score_file, check_labels, check_of, check_output, output_folder,
                                  same_samples, score_file, within)
from ecjax._src.cli.output import JSON_SCHEMA_VERSION, emit
from ecjax._src.cli.rules import or_default
from ecjax._src.inputs import as_group_ids, check_numbers, check_shape


def _calibration_files(args, run, st):
    """``(train, train_labels, test, labels, protocol, train weights, weights)``: which data fit the calibrator and
    how to name the result; the scores are the files' :class:`ecjax.inputs.Scores`, checked once by the library
    (said of the file) and taken as they are by the fit, the calibrator and the report; the weights are ``None``
    or the frequency weights of the training / --scores samples.

    ``protocol`` is ``"held_out"`` (a separate training file), ``"cross_validation"`` (``--cv``) or
    ``"in_sample"`` (fitted on the very scores it calibrates, by omitting the training file or giving
    the same data twice): only the first two give honest numbers on ``--labels``.
    """
    want = 1 if st == "llr" else 2
    test, labels = scores_and_labels(args, run, args.scores, args.labels)
    test = canonical_score_file(score_file(test, args.scores, st), args.scores, st)
    check_classes_count(args, test.num_classes)
    if labels is not None:  # validated before anything is fitted or written
        labels = check_labels(labels, args.labels)
        same_samples(args.labels, labels, "labels", args.scores, test.values, "scores")
    weights = load_sample_weight(run, args.sample_weight, labels, args.labels)
    if args.train_scores is None:
        return test, labels, test, labels, "cross_validation" if args.cv else "in_sample", weights, weights
    train, train_labels = scores_and_labels(args, run, args.train_scores, args.train_labels)
    train_labels = check_labels(train_labels, args.train_labels)
    train = canonical_score_file(score_file(train, args.train_scores, st), args.train_scores, st)
    same_samples(args.train_scores, train.values, "scores", args.train_labels, train_labels, "labels")
    if want == 2:
        check_of(args.train_scores, check_shape, train.values, "scores", "(N, K)", sizes={"K": test.num_classes},
                 why=f" (the classes of {args.scores})")
    same = Path(args.train_scores).resolve() == Path(args.scores).resolve() or _same_scores(train, test)
    train_weights = load_sample_weight(run, args.train_sample_weight, train_labels, args.train_labels,
                                       "--train-sample-weight")
    return train, train_labels, test, labels, "in_sample" if same else "held_out", train_weights, weights


def _same_scores(a, b):
    """Two files' canonical scores are the same data: equal values, and exact zeros at the same places."""
    za, zb = (np.zeros(np.shape(s.values), bool) if s.exact_zeros is None else s.exact_zeros for s in (a, b))
    return np.shape(a.values) == np.shape(b.values) and np.array_equal(a.values, b.values) and np.array_equal(za, zb)


def _load_groups(run, path, n):
    g = check_of(path, as_group_ids, run.load(path, rows=n), n, files={"groups": "--groups"})
    return check_of(path, check_numbers, g, "groups", booleans=True)


def _optimizer_note(method, record, folds):
    from ecjax._src.calibration import CALIBRATORS

    if not CALIBRATORS[method].iterative:  # counted, not optimized
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


def _fit_calibrator(args, run, method, st, train, train_labels, test, protocol, record, train_weights):
    """The calibrated scores of ``test`` and the text line saying how they were fitted."""
    from ecjax._src import calibration

    common = dict(method=method, score_type=st, settings=calibration.FitSettings(loss=args.loss),
                  sample_weight=train_weights)
    if protocol == "saved":  # --calibrator: applied as it is, with the statistics of its own fit
        cal = _saved_calibrator(args, run, st, test.num_classes)
        _record_fit(record, cal)
        record.update(calibrator=str(args.calibrator), loss=cal.loss_name)
        out = check_of(args.calibrator, cal.apply, test, score_type=st)
        return np.asarray(out, dtype=np.float64), f"applied the saved {method} calibrator {args.calibrator} (nothing " \
                                                  "fitted)"
    if protocol != "cross_validation":
        cal = calibration.fit(train, train_labels, **common)
        if args.save_calibrator is not None:
            from ecjax._src.calibrator_files import calibrator_file_contents

            for path, data in calibrator_file_contents(cal, args.save_calibrator):
                run.defer(path, data, "--save-calibrator")
        _record_fit(record, cal)
        where = args.train_scores or args.scores
        line = f"fitted {method} calibrator on {where} ({np.shape(train.values)[0]} samples, loss {args.loss})"
        return np.asarray(cal.apply(test), dtype=np.float64), line + _optimizer_note(method, record, False)
    groups = None if args.groups is None else _load_groups(run, args.groups, np.shape(test.values)[0])
    seed = or_default(args.seed, 0)
    # The folds come from --cv (and --groups): their errors name them.
    res = check_of(f"--cv {args.cv}{' with --groups' if groups is not None else ''}",
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


_PROTOCOL_WORDS = {
    "held_out": "held-out: the calibrator was fitted on a separate file",
    "cross_validation": "cross-validated: no sample was calibrated by a calibrator that saw its label",
    "in_sample": "IN-SAMPLE: the calibrator was fitted on these same samples, so 'after' is optimistic; use --cv K "
                 "or a separate --train-scores file for an honest estimate",
    "saved": "a saved calibrator (--calibrator): honest if it was fitted on other samples than these",
}


def _saved_calibrator(args, run, st, k):
    """The calibrator of --calibrator (checked by the library, said of its file), for --scores of type ``st``
    and ``k`` classes; ``None`` without --calibrator."""
    if args.calibrator is None:
        return None
    from ecjax._src.calibrator_files import load_calibrator
    from ecjax._src.inputs import check_choice

    cal = load_calibrator(args.calibrator, max_bytes=run.max_bytes)
    check_of(args.calibrator, check_choice, k, f"the number of classes of --scores (the calibrator's is "
                                               f"{cal.num_classes})", (cal.num_classes,))
    return cal


def cmd_calibrate(args: argparse.Namespace, run: Run) -> int:
    """Fit a calibrator (held-out file, cross-validation or in-sample), apply it to --scores, write the result."""
    from ecjax._src import calibration
    from ecjax._src.io import array_file_bytes, array_file_format

    st = args.score_type
    check_output(args.output, args.force, "--output")
    check_of("--output", array_file_format, args.output)  # the format its name says, known before fitting
    if args.save_calibrator is not None:
        from ecjax._src.calibrator_files import arrays_path, check_calibrator_path

        check_of("--save-calibrator", check_calibrator_path, args.save_calibrator)
        for path in (args.save_calibrator, arrays_path(args.save_calibrator)):
            check_output(path, args.force, "--save-calibrator")
    out_dir = output_folder(args)
    train, train_labels, test, labels, protocol, train_weights, weights = _calibration_files(args, run, st)
    k = train.num_classes
    for y, f in ((train_labels, args.train_labels or args.labels), (labels, args.labels)):
        if y is not None:
            within(f, y, k, "labels", "the classes of the scores")
    saved = _saved_calibrator(args, run, st, k)
    if saved is None:
        check_of(args.train_labels or args.labels, calibration.class_totals_to_calibrate, train_labels, k,
                 sample_weight=train_weights)
    else:
        protocol = "saved"
    method = saved.method if saved is not None else "llr" if st == "llr" else args.method
    out_type = calibration.CALIBRATORS[method].output_type
    record = {"schema": JSON_SCHEMA_VERSION, "command": "calibrate", "method": method, "loss": args.loss,
              "protocol": protocol, "output": str(args.output), "output_type": out_type,
              "sample_weight": args.sample_weight, "train_sample_weight": args.train_sample_weight}
    what = f"calibrate: fitting {method}" + (f" on {args.cv} folds" if protocol == "cross_validation" else "")
    with progress.heartbeat(args, what):
        out, fitted = _fit_calibrator(args, run, method, st, train, train_labels, test, protocol, record, train_weights)
    failed = _failed_fit(method, record, out)
    if failed:  # a calibrator that failed writes no file: its output would pass for calibrated scores
        print(f"ecjax calibrate: error: {failed}; nothing written to {args.output}", file=sys.stderr)
        return 1
    run.defer(args.output, array_file_bytes(args.output, out), "--output")
    lines = [fitted, f"wrote calibrated {out_type} of {args.scores} to {args.output}"]
    if labels is not None:
        s = before_after(args, run, st, out_type, test, out, labels, record, out_dir, weights)
        xe, br = s["xe"], s["brier"]
        how = _PROTOCOL_WORDS[protocol] + (" or its group" if args.groups is not None else "")
        from ecjax._src.report import apart

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
    emit(args, run, record, "\n".join(lines), out_dir)
    return 0
