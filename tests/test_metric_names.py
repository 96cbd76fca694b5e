"""The README's naming rule (issue 32.7): ``*_score`` is higher-is-better, ``*_loss``, ``*_error`` and ``*_cost``
lower-is-better (scikit-learn's convention).  Every public function with such a name in the namespaces a user
meets (``ecjax``, ``ecjax.scores``, ``ecjax.calibration``, ``ecjax.scores.sample_costs``) must be listed below, and is
checked on inputs whose order is known by construction: a better system must get the better value."""
import inspect

import numpy as np
import pytest

import ecjax
from ecjax import calibration, scores
from ecjax.scores import sample_costs

SUFFIXES = {"_score": "higher", "_loss": "lower", "_error": "lower", "_cost": "lower"}
NAMESPACES = (ecjax, scores, calibration, sample_costs)

rng = np.random.default_rng(0)
N = 600
P = rng.uniform(0.02, 0.98, N)
Y = (rng.uniform(size=N) < P).astype(int)  # drawn from P: P is calibrated


def _log_post(p):
    return np.log(np.stack([1 - p, p], -1))


CALIBRATED = _log_post(P)  # informative and calibrated
OVERCONFIDENT = _log_post(1 / (1 + np.exp(-5 * np.log(P / (1 - P)))))  # the same ranking, miscalibrated
UNINFORMED = _log_post(rng.uniform(0.02, 0.98, N))  # no information on the labels
ZERO_ONE = 1.0 - np.eye(2)
PER_SAMPLE = np.broadcast_to(ZERO_ONE, (N, 2, 2))
GOOD_COUNTS, BAD_COUNTS = np.array([[45, 5], [5, 45]]), np.array([[30, 20], [20, 30]])


def _cal_loss(raw):
    return calibration.calibration_loss(Y, raw, CALIBRATED)  # the calibrated scores are known: no fit needed


# name -> (value of the better system, value of the worse one)
CASES = {
    "f1_score": lambda: (ecjax.f1_score(GOOD_COUNTS), ecjax.f1_score(BAD_COUNTS)),
    "f_beta_score": lambda: (ecjax.f_beta_score(GOOD_COUNTS, beta=2.0), ecjax.f_beta_score(BAD_COUNTS, beta=2.0)),
    "general_performance_score": lambda: (ecjax.general_performance_score([0.9, 0.8])[0],
                                          ecjax.general_performance_score([0.6, 0.5])[0]),
    "expected_cost": lambda: (ecjax.expected_cost(GOOD_COUNTS, ZERO_ONE), ecjax.expected_cost(BAD_COUNTS, ZERO_ONE)),
    "normalized_expected_cost": lambda: (ecjax.normalized_expected_cost(GOOD_COUNTS, ZERO_ONE),
                                         ecjax.normalized_expected_cost(BAD_COUNTS, ZERO_ONE)),
    "naive_expected_cost": lambda: (ecjax.naive_expected_cost(ZERO_ONE, np.array([0.9, 0.1])),
                                    ecjax.naive_expected_cost(ZERO_ONE, np.array([0.5, 0.5]))),
    "bayes_expected_cost": lambda: (ecjax.bayes_expected_cost(Y, CALIBRATED, ZERO_ONE),
                                    ecjax.bayes_expected_cost(Y, UNINFORMED, ZERO_ONE)),
    "optimal_threshold_expected_cost": lambda: (scores.optimal_threshold_expected_cost(Y, CALIBRATED).expected_cost,
                                                scores.optimal_threshold_expected_cost(Y, UNINFORMED).expected_cost),
    "binned_calibration_error": lambda: (ecjax.binned_calibration_error(Y, CALIBRATED),
                                         ecjax.binned_calibration_error(Y, OVERCONFIDENT)),
    "max_calibration_error": lambda: (ecjax.max_calibration_error(Y, CALIBRATED, num_bins=5),
                                      ecjax.max_calibration_error(Y, OVERCONFIDENT, num_bins=5)),
    "rms_calibration_error": lambda: (ecjax.rms_calibration_error(Y, CALIBRATED),
                                      ecjax.rms_calibration_error(Y, OVERCONFIDENT)),
    "adaptive_calibration_error": lambda: (ecjax.adaptive_calibration_error(Y, CALIBRATED),
                                           ecjax.adaptive_calibration_error(Y, OVERCONFIDENT)),
    "calibration_loss": lambda: (_cal_loss(CALIBRATED), _cal_loss(OVERCONFIDENT)),
    "relative_calibration_loss": lambda: (calibration.relative_calibration_loss(np.float32(1.0), np.float32(0.99)),
                                          calibration.relative_calibration_loss(np.float32(1.0), np.float32(0.5))),
    "sample_expected_cost": lambda: (sample_costs.sample_expected_cost(Y, Y, PER_SAMPLE),
                                     sample_costs.sample_expected_cost(Y, 1 - Y, PER_SAMPLE)),
    "sample_normalized_expected_cost": lambda: (sample_costs.sample_normalized_expected_cost(Y, Y, PER_SAMPLE),
                                                sample_costs.sample_normalized_expected_cost(Y, 1 - Y, PER_SAMPLE)),
    "sample_bayes_expected_cost": lambda: (sample_costs.sample_bayes_expected_cost(Y, CALIBRATED, PER_SAMPLE),
                                           sample_costs.sample_bayes_expected_cost(Y, UNINFORMED, PER_SAMPLE)),
    "sample_optimal_threshold_expected_cost": lambda: (
        sample_costs.sample_optimal_threshold_expected_cost(Y, CALIBRATED, PER_SAMPLE).expected_cost,
        sample_costs.sample_optimal_threshold_expected_cost(Y, UNINFORMED, PER_SAMPLE).expected_cost),
}


def named_metrics(namespaces=NAMESPACES):
    """The public functions of ``namespaces`` whose name carries one of :data:`SUFFIXES`."""
    return sorted({n for ns in namespaces for n, f in inspect.getmembers(ns, inspect.isfunction)
                   if not n.startswith("_") and n.endswith(tuple(SUFFIXES))})


def test_every_suffixed_name_is_checked():
    assert set(named_metrics()) == set(CASES)


# Metrics of counts and numbers compile in well under a second each: the default lane checks them; the metrics of
# scores compile a kernel each (2-6 s on a loaded machine), so all of them run in the slow lane.
QUICK = ("f1_score", "f_beta_score", "general_performance_score", "expected_cost", "normalized_expected_cost",
         "relative_calibration_loss")


@pytest.mark.parametrize("name", QUICK)
def test_the_suffix_says_which_way_is_better_quick(name):
    test_the_suffix_says_which_way_is_better(name)


@pytest.mark.slow  # about 40 s: one compilation per metric of scores
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_suffix_says_which_way_is_better(name):
    better, worse = (float(np.asarray(x)) for x in CASES[name]())
    direction = next(d for suffix, d in SUFFIXES.items() if name.endswith(suffix))
    assert (better > worse) if direction == "higher" else (better < worse), (name, better, worse)
