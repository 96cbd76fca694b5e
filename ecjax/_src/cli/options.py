"""The command line's option types, shared option groups and the defaults the help texts state."""

from __future__ import annotations

import argparse
import math

from ecjax._src.inputs import SCORE_TYPES

MAX_NAME_LENGTH = 100  # characters of a system name (--names, or a file stem)
MAX_DRAWS = 10**8
MAX_SEED = 2**32 - 1  # jax.random.key keeps 32 bits of the seed: larger seeds would repeat smaller ones
# Defaults of options that only a parent option uses (their argparse default is None, so that OPTION_RULES can
# refuse them without it): metrics --bootstrap-draws, compare --max-draws.
BOOTSTRAP_DRAWS = 2000
MC_ERROR_MAX_DRAWS = 1_000_000
# compare without --draws: the library's default precision target (ecjax._src.prob.adaptive_draws, which the parser does
# not import: it would import NumPyro for --help); tests/test_cli.py checks that they are the library's.
FIRST_DRAWS, DEFAULT_MC_ERROR, DEFAULT_MAX_DRAWS = 1000, 0.005, 20_000
# compare --sample-costs without --draws (its Bayesian bootstrap has no precision target).
SAMPLE_COST_DRAWS = 20_000


# The calibrators of `ecjax calibrate --method` (ecjax.calibration.METHODS but "llr", which LLR scores always use),
# written out so that building the parser does not import the calibration module (and optax); a test checks them.
CALIBRATE_METHODS = ("affine", "temperature", "bias", "vector", "matrix", "dirichlet", "histogram", "isotonic", "beta")


class HelpWithDefaults(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the text already states it or there is none."""

    def _get_help_string(self, action):
        text = action.help or ""
        # `is`, not `in`: 0 == False, and a default of 0 (--seed) must still be shown.
        if ("default" in text or action.default is None or action.default is False
                or action.default is argparse.SUPPRESS or not action.option_strings):
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error: ``ecjax <command>: error: <what>`` and exit 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def int_in(lo, hi, option):
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


def float_in(lo, option, *, strict=False):
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} must be a number, got {text!r}") from None
        if not math.isfinite(value) or value < lo or (strict and value == lo):
            raise argparse.ArgumentTypeError(f"{option} must be a finite number {'>' if strict else '>='} {lo}, got {text}")
        return value

    return parse


def add_common(p):
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
    add_classes(p)
    p.add_argument("--costs", metavar="SPEC", help="cost specification, .toml or .json (default: 0-1 costs)")
    add_output_format(p)
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr (also silent with --json, or "
                                                        "when stderr is not a terminal)")
    p.add_argument("--out", metavar="DIR", help="write the JSON record and figures into DIR")
    p.add_argument("--force", action="store_true", help="overwrite existing output files")
    add_max_input(p)


def add_classes(p):
    p.add_argument("--classes", metavar="A,B,...",
                   help="the class names, comma-separated, in the order of the score columns: the label files then "
                        "hold class names (a CSV column or a .npy of strings), each read as its position here")


def add_output_format(p):
    from ecjax._src.formats import FORMATS

    p.add_argument("--format", choices=FORMATS, default=None,
                   help="what to print: table (aligned text, the default), json (the record), csv or markdown (the "
                        "main table alone: one row per system, per measure for calibrate; columns named as in the "
                        "JSON)")
    p.add_argument("--json", action="store_true", help="print the JSON record: --format json")


def add_sample_weight(p):
    p.add_argument("--sample-weight", nargs="+", metavar="FILE",
                   help="non-negative weight of each sample (.npy/.npz/.csv vector of N numbers), one file per "
                        "--labels file: frequency weights, as scikit-learn's sample_weight (a sample of weight 3 "
                        "counts as three samples, one of weight 0 as none)")


def add_training_priors(p):
    p.add_argument("--training-priors", default="data", metavar="{data,none,P0,P1,...}",
                   help="with posterior-type --scores and deployment priors in --costs: the class priors the scores "
                        "were trained with, so that the posteriors are re-weighted to the deployment priors before "
                        "deciding. 'data': the class frequencies of each system's labels (default); 'none': use the "
                        "posteriors as they are; or comma-separated numbers")


def add_max_input(p):
    p.add_argument("--max-input-mb", type=int_in(1, 2**40, "--max-input-mb"), default=1024, metavar="MB",
                   help="largest array an input file may declare, in MiB (default 1024), checked before loading")


def add_progress_lines(p, what):
    """``--progress [SECONDS]``: plain progress lines on stderr (``what``: the run they report)."""
    p.add_argument("--progress", type=float_in(0.0, "--progress", strict=True), nargs="?", const=5.0, default=None,
                   metavar="SECONDS",
                   help=f"a progress line on stderr every SECONDS (default 5) with {what} done and the time left, also "
                        "when stderr is not a terminal (logs, batch jobs)")
