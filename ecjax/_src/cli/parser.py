"""The ``ecjax`` argument parser: one function per command adds its options."""

from __future__ import annotations

import argparse
from functools import partial

from ecjax._src.cli.options import (BOOTSTRAP_DRAWS, CALIBRATE_METHODS, DEFAULT_MAX_DRAWS, DEFAULT_MC_ERROR, FIRST_DRAWS,
                                    MAX_DRAWS, MAX_SEED, MC_ERROR_MAX_DRAWS,
                                    HelpWithDefaults, Parser, add_classes, add_common, add_max_input, add_output_format,
                                    add_progress_lines, add_sample_weight, add_training_priors, float_in, int_in)
from ecjax._src.inputs import SCORE_TYPES


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``ecjax`` and its commands (``--help`` of each; docs/conf.py writes them into the docs)."""
    from ecjax import __version__

    parser = Parser(prog="ecjax", description="Evaluate classifiers by expected cost and utility yield.",
                    formatter_class=HelpWithDefaults)
    parser.add_argument("--version", action="version", version=f"ecjax {__version__}")
    sub = parser.add_subparsers(dest="command", required=True,
                                parser_class=partial(Parser, formatter_class=HelpWithDefaults))  # type: ignore[call-overload]
    _add_demo(sub)
    _add_metrics(sub)
    _add_compare(sub)
    _add_compare_folds(sub)
    _add_sweep(sub)
    _add_calibrate(sub)
    return parser


def _add_demo(sub):
    """The options of ``ecjax demo``."""
    demo = sub.add_parser("demo", help="run the main job on data the package carries or generates")
    demo.add_argument("--seed", type=int_in(0, MAX_SEED, "--seed"), default=0,
                      help="key for the generated screening data (default 0)")


def _add_metrics(sub):
    """The options of ``ecjax metrics``."""
    m = sub.add_parser("metrics", help="EC, NEC, utility yield and the classical metrics of one or more systems")
    add_common(m)
    m.add_argument("--pos-label", type=int_in(0, 2**31 - 1, "--pos-label"), default=1,
                   help="positive class of the binary metrics (default 1)")
    add_training_priors(m)
    add_sample_weight(m)
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
    m.add_argument("--bootstrap-draws", type=int_in(200, 10**6, "--bootstrap-draws"), metavar="N",
                   help=f"with --bootstrap: its draws (default {BOOTSTRAP_DRAWS})")
    add_progress_lines(m, "--bootstrap's draws")
    m.add_argument("--seed", type=int_in(0, MAX_SEED, "--seed"),
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


def _add_compare(sub):
    """The options of ``ecjax compare``."""
    cp = sub.add_parser("compare", help="which classifier, and how sure are we, under uncertain costs")
    add_common(cp)
    cp.add_argument("--unpaired", action="store_true", help="treat systems as scored on independent samples")
    add_training_priors(cp)
    add_sample_weight(cp)
    cp.add_argument("--draws", type=int_in(1, MAX_DRAWS, "--draws"), default=None,
                    help=f"posterior draws, exactly (at most {MAX_DRAWS:.0e}); default: {FIRST_DRAWS} and more until "
                         f"every reported probability has a Monte Carlo standard error of at most {DEFAULT_MC_ERROR}, "
                         f"at most {DEFAULT_MAX_DRAWS} (the output says how many)")
    cp.add_argument("--mc-error", type=float_in(0.0, "--mc-error", strict=True),
                    help="draw more (from --draws up to --max-draws) until every reported probability has at most "
                         "this Monte Carlo standard error, e.g. 0.002")
    cp.add_argument("--max-draws", type=int_in(1, MAX_DRAWS, "--max-draws"),
                    help=f"with --mc-error: the most draws it may use (default {MC_ERROR_MAX_DRAWS})")
    cp.add_argument("--seed", type=int_in(0, MAX_SEED, "--seed"), default=0, help="random key (default 0)")
    cp.add_argument("--deployment-scores", metavar="FILE",
                    help="unlabelled scores of the first system on deployment samples: the deployment priors are "
                         "estimated from them (label shift: EM on its affine-calibrated posteriors) and drawn from "
                         "their posterior (posterior-type scores)")
    add_progress_lines(cp, "the draws")
    cp.add_argument("--rope", type=float_in(0.0, "--rope"),
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
    cp.add_argument("--sample-cost-scale", nargs=2, metavar=("LO", "HI"), type=float_in(0.0, "--sample-cost-scale"),
                    help="with --sample-costs: the factor on their per-sample part is uncertain, uniform in [LO, HI] "
                         "(default: 1 1, only the test set is uncertain)")
    cp.add_argument("--rate-draws", type=int_in(1, 1024, "--rate-draws"), default=None,
                    help="with --decision-rule per_draw: draws of the rates for each drawn cost matrix (its Bayes "
                         "decisions are made once and shared by them; default: chosen from the problem's size, "
                         "see ecjax.prob.PerDraw)")


def _add_compare_folds(sub):
    """The options of ``ecjax compare-folds``."""
    cf = sub.add_parser("compare-folds", help="compare systems from per-fold (and per-data-set) results: "
                                              "Bayesian correlated t-test, or the hierarchical model over data sets")
    cf.add_argument("results", metavar="RESULTS.csv",
                    help="header naming the systems (and an optional `dataset` column), one row per fold; "
                         "higher is better. With a `dataset` column: baycomp's hierarchical test for two systems, "
                         "the joint hierarchical model (ecjax.prob.hierarchical_compare_results) for more, or "
                         "when the data sets have different numbers of folds")
    cf.add_argument("--rope", type=float_in(0.0, "--rope"), default=0.0,
                    help="region of practical equivalence, in the results' units (default 0)")
    cf.add_argument("--runs", type=int_in(1, 10**6, "--runs"),
                    help="repetitions of the cross-validation in the rows (folds correlate as runs / rows; default 1)")
    cf.add_argument("--test-fraction", type=float_in(0.0, "--test-fraction", strict=True), default=None,
                    help="fraction of the data in each test fold (the Nadeau-Bengio correlation), instead of --runs")
    cf.add_argument("--seed", type=int_in(0, MAX_SEED, "--seed"), default=0, help="random key (default 0)")
    cf.add_argument("--test", choices=("t-test", "signed-rank"), default="t-test",
                    help="t-test: the correlated t-test / hierarchical models above; signed-rank: the Bayesian "
                         "signed-rank test of every pair over the data sets' mean results (Benavoli et al. 2014, "
                         "baycomp's SignedRankTest; needs a `dataset` column)")
    cf.add_argument("--rank-diagram", metavar="PNG", default=None,
                    help="write a critical-difference-style figure: expected ranks, their 90%% intervals, and bars "
                         "joining the pairs with P(|difference| <= rope) >= 0.95 (ecjax.plots.rank_diagram)")
    cf.add_argument("--force", action="store_true", help="overwrite an existing --rank-diagram file")
    add_output_format(cf)
    cf.add_argument("--quiet", action="store_true", help="no progress line on stderr")


def _add_sweep(sub):
    """The options of ``ecjax sweep``."""
    sw = sub.add_parser("sweep", help="which system wins where: utility-space winner maps, cost-ratio sweeps")
    add_common(sw)
    sw.add_argument("--over", default="auto", choices=["auto", "utility-space", "cost-ratio", "matrices"],
                    help="what to sweep: the binary utility space (who wins for every 2 x 2 utility matrix), the "
                         "binary cost ratio c10/c01, or random cost matrices (each cost uniform on its "
                         "[uncertainty] interval in --costs; without one, between 0 and twice its value). "
                         "auto: utility-space for two classes and two decisions, matrices otherwise")
    sw.add_argument("--resolution", type=int_in(2, 10**6, "--resolution"),
                    help="grid points per axis (utility-space), cost ratios (cost-ratio) or cost matrices "
                         "(matrices) (default: 101, 101, 1000)")
    sw.add_argument("--lo", type=float_in(0.0, "--lo", strict=True), default=0.01,
                    help="smallest cost ratio (cost-ratio sweeps)")
    sw.add_argument("--hi", type=float_in(0.0, "--hi", strict=True), default=100.0,
                    help="largest cost ratio (cost-ratio sweeps)")
    sw.add_argument("--seed", type=int_in(0, MAX_SEED, "--seed"), default=0,
                    help="random key for --over matrices (default 0)")
    add_progress_lines(sw, "the chunks of points")
    sw.add_argument("--sample-costs", metavar="FILE",
                    help="per-sample costs, as in `metrics`: sweep a factor on their per-sample part (over "
                         "--sample-cost-scale, --resolution points) instead of --over")
    sw.add_argument("--sample-cost-scale", nargs=2, metavar=("LO", "HI"), type=float_in(0.0, "--sample-cost-scale"),
                    help="with --sample-costs: the range of the factor (default 0 2)")


def _add_calibrate(sub):
    """The options of ``ecjax calibrate``."""
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
    add_classes(c)
    c.add_argument("--cv", type=int_in(2, 10**6, "--cv"), metavar="K",
                   help="K-fold cross-validation on --scores and --labels: each sample is calibrated by a calibrator "
                        "fitted on the other folds (folds stratified by class)")
    c.add_argument("--groups", metavar="FILE",
                   help="with --cv: a group id per sample of --scores (a speaker, a patient, a recording "
                        "condition); every group stays whole in one fold, so no sample is calibrated by a "
                        "calibrator that saw its group")
    c.add_argument("--seed", type=int_in(0, MAX_SEED, "--seed"),
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
    add_output_format(c)
    c.add_argument("--quiet", action="store_true", help="no progress line on stderr (also silent with --json, or "
                                                        "when stderr is not a terminal)")
    c.add_argument("--out", metavar="DIR",
                   help="also write the JSON record and, with --labels, reliability diagrams before and after "
                        "calibration into DIR")
    c.add_argument("--force", action="store_true", help="overwrite existing output files")
    add_max_input(c)
