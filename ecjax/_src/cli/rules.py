"""Which options a command's options need or exclude (:data:`OPTION_RULES`), checked before any file is read."""

from __future__ import annotations

import argparse

from ecjax._src.inputs import InputError, library_spelling

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
        ("--progress", "needs", ("--bootstrap",), "{rule} (the lines report its draws)"),
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
        _FORMAT_RULE,
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
}


# The options a user types for the library's arguments, as the command line says the arguments a library error
# mentions (InputError.mentions): `score_type='llr'` is `--score-type llr`.
LIBRARY_OPTIONS = {"score_type": "--score-type", "training_priors": "--training-priors", "scores": "--scores",
                   "labels": "--labels", "decisions": "--decisions", "sample_weight": "--sample-weight",
                   "costs": "--costs", "classes": "--classes"}


def as_option(argument: str, value: object = None) -> str:
    """A library argument (and the value it asks for) as the option a user types: ``--score-type probabilities``;
    an argument with no option, the library's way."""
    option = LIBRARY_OPTIONS.get(argument)
    if option is None:
        return library_spelling(argument, value)
    return option if value is None else f"{option} {value}"


def said(err: InputError) -> str:
    """A library error as the command line says it: from its fields (:class:`ecjax.InputError`), the arguments it
    names said as options; an error without them as the library says it."""
    problem = err.problem_said(as_option) if err.template is not None else None
    if problem is None:
        return str(err)
    return problem if err.argument is None else f"{as_option(err.argument)} {problem}"


def _given(args, option):
    name, _, value = option.partition(" ")
    got = getattr(args, name[2:].replace("-", "_"), None)
    return got == value if value else got not in (None, False, [])


def or_default(value, default):
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
