"""ecjax.sklearn: cost scorers, CostSensitiveClassifier and ScoreCalibrator against independent computations.

References: numpy in float64 (Bayes decisions ``argmin_j sum_i P(i|x) c_ij``, average costs), expected-cost's
``average_cost``, scikit-learn's own LogisticRegression (a binary affine calibrator of logits is an unpenalized
logistic regression on the log-odds) and scikit-learn's estimator checks.
"""

from __future__ import annotations

import functools
import inspect
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

from expected_cost import ec  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import load_iris, load_wine  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold, cross_val_predict, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils import estimator_checks  # noqa: E402

from ecjax import InputError, calibration  # noqa: E402
from ecjax.sklearn import CHECKS_THAT_DO_NOT_APPLY, CostSensitiveClassifier, ScoreCalibrator, cost_scorer
from ecjax._src.sklearn import utility_scorer

# Asymmetric costs of the 3 wine classes: missing class 2 is expensive.
COSTS = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [8.0, 4.0, 0.0]])
# The same with a 4th decision, abstaining, at cost 0.6 whatever the class.
ABSTAIN = np.hstack([COSTS, np.full((3, 1), 0.6)])


def _model():
    return make_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=2000))


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return X, y, _model().fit(X, y)


def _bayes(p, costs):
    """float64 numpy Bayes decisions: argmin_j sum_i p_i c_ij."""
    return np.argmin(p @ costs, axis=1)


# ------------------------------------------------------------------- scorers

def test_cost_scorer_is_minus_the_average_cost_of_numpy_bayes_decisions(wine):
    X, y, model = wine
    d = _bayes(model.predict_proba(X), COSTS)
    want = np.mean(COSTS[y, d])
    assert cost_scorer(COSTS)(model, X, y) == pytest.approx(-want, rel=1e-6)
    # expected-cost's average cost of the same decisions (priors as a column: its convention)
    anchor = ec.average_cost(y, d, ec.CostMatrix(COSTS), priors=(np.bincount(y) / len(y))[:, None])
    assert cost_scorer(COSTS)(model, X, y) == pytest.approx(-anchor, rel=1e-6)
    naive = np.min((np.bincount(y) / len(y)) @ COSTS)
    nec = cost_scorer(COSTS, metric="normalized_expected_cost")(model, X, y)
    assert nec == pytest.approx(-want / naive, rel=1e-6)


def test_cost_scorer_maps_string_labels_through_classes(wine):
    X, y, _ = wine
    names = np.array(["barolo", "grignolino", "barbera"])[y]  # sorted: barbera, barolo, grignolino
    model = _model().fit(X, names)
    idx = np.searchsorted(model.classes_, names)
    d = _bayes(model.predict_proba(X), COSTS)
    assert cost_scorer(COSTS)(model, X, names) == pytest.approx(-np.mean(COSTS[idx, d]), rel=1e-6)
    with pytest.raises(InputError, match="`y` holds \\['merlot'\\]"):
        cost_scorer(COSTS)(model, X[:3], np.array(["barolo", "merlot", "barbera"]))


def test_cost_scorer_with_deployment_priors_and_weights(wine):
    X, y, model = wine
    train = np.bincount(y) / len(y)
    priors = np.array([0.2, 0.2, 0.6])
    p = model.predict_proba(X) * priors / train
    d = _bayes(p / p.sum(1, keepdims=True), COSTS)
    want = sum(priors[i] * np.mean(COSTS[i, d[y == i]]) for i in range(3))
    got = cost_scorer(COSTS, priors=priors, training_priors=train)(model, X, y)
    assert got == pytest.approx(-want, rel=1e-6)
    with pytest.raises(InputError, match="training_priors"):  # the library refuses priors without them
        cost_scorer(COSTS, priors=priors)(model, X, y)
    w = np.random.default_rng(0).uniform(0, 2, len(y))
    d = _bayes(model.predict_proba(X), COSTS)
    got = cost_scorer(COSTS)(model, X, y, sample_weight=w)
    assert got == pytest.approx(-np.sum(w * COSTS[y, d]) / np.sum(w), rel=1e-6)


def test_utility_scorer_maximizes_the_expected_utility(wine):
    X, y, model = wine
    utilities = 3.0 - 2.0 * COSTS
    d = np.argmax(model.predict_proba(X) @ utilities, axis=1)
    assert utility_scorer(utilities)(model, X, y) == pytest.approx(np.mean(utilities[y, d]), rel=1e-6)


def test_cost_scorer_of_predict(wine):
    X, y, model = wine
    d = model.predict(X)
    assert cost_scorer(COSTS, decisions="predict")(model, X, y) == pytest.approx(-np.mean(COSTS[y, d]), rel=1e-6)
    with pytest.raises(InputError, match="metric"):
        cost_scorer(COSTS, metric="utility_yield")
    with pytest.raises(InputError, match="decisions"):
        cost_scorer(COSTS, decisions="argmax")
    with pytest.raises(InputError, match="classes_"):
        cost_scorer(np.zeros((2, 2)) + [[0, 1], [1, 0]])(model, X, y)


def test_cross_val_score_equals_the_numpy_cost_of_each_fold(wine):
    X, y, _ = wine
    folds = KFold(4, shuffle=True, random_state=0)
    got = cross_val_score(_model(), X, y, cv=folds, scoring=cost_scorer(ABSTAIN))
    want = []
    for train, test in folds.split(X):
        m = _model().fit(X[train], y[train])
        want.append(-np.mean(ABSTAIN[y[test], _bayes(m.predict_proba(X[test]), ABSTAIN)]))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def _least_cost_c(X, y, folds, grid, costs):
    """``(C, mean cost)``: the C of the grid whose numpy Bayes decisions cost least on average over the folds."""
    mean_cost = {}
    for c in grid:
        per_fold = []
        for train, test in folds.split(X):
            m = _model().set_params(logisticregression__C=c).fit(X[train], y[train])
            per_fold.append(np.mean(costs[y[test], _bayes(m.predict_proba(X[test]), costs)]))
        mean_cost[c] = np.mean(per_fold)
    best = min(mean_cost, key=mean_cost.get)
    return best, mean_cost[best]


def test_grid_search_picks_the_c_of_least_cross_validated_cost(wine):
    X, y, _ = wine
    folds = KFold(3, shuffle=True, random_state=1)
    grid = [0.001, 0.05, 1.0]
    search = GridSearchCV(_model(), {"logisticregression__C": grid}, scoring=cost_scorer(COSTS), cv=folds).fit(X, y)
    best, cost = _least_cost_c(X, y, folds, grid, COSTS)
    assert search.best_params_ == {"logisticregression__C": best}
    assert search.best_score_ == pytest.approx(-cost, rel=1e-6)


# ---------------------------------------------------- cost-sensitive classifier

def test_cost_sensitive_classifier_makes_numpy_bayes_decisions(wine):
    X, y, model = wine
    clf = CostSensitiveClassifier(_model(), COSTS).fit(X, y)
    p = model.predict_proba(X)
    np.testing.assert_allclose(clf.predict_proba(X), p, rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[_bayes(p, COSTS)])
    assert cost_scorer(COSTS, decisions="predict")(clf, X, y) == pytest.approx(
        -np.mean(COSTS[y, _bayes(p, COSTS)]), rel=1e-6)


def test_cost_sensitive_classifier_abstains(wine):
    X, y, model = wine
    p = model.predict_proba(X)
    want = _bayes(p, ABSTAIN)
    assert 0 < np.sum(want == 3) < len(y)  # some abstentions, not all: the test can tell them apart
    clf = CostSensitiveClassifier(_model(), ABSTAIN).fit(X, y)
    np.testing.assert_array_equal(clf.predict(X), want)  # decision indices when D != K
    names = ["barolo", "grignolino", "barbera", "ask an expert"]
    clf = CostSensitiveClassifier(_model(), ABSTAIN, decision_names=names).fit(X, y)
    np.testing.assert_array_equal(clf.predict(X), np.array(names)[want])
    # the scorer reads the names back through decision_names_
    assert cost_scorer(ABSTAIN, decisions="predict")(clf, X, y) == pytest.approx(
        -np.mean(ABSTAIN[y, want]), rel=1e-6)
    with pytest.raises(InputError, match="decision_names"):
        CostSensitiveClassifier(_model(), ABSTAIN, decision_names=names[:3]).fit(X, y)


def test_cost_sensitive_classifier_shifts_to_deployment_priors(wine):
    X, y, model = wine
    priors = np.array([0.1, 0.1, 0.8])
    p = model.predict_proba(X) * priors / (np.bincount(y) / len(y))
    want = _bayes(p / p.sum(1, keepdims=True), COSTS)
    got = CostSensitiveClassifier(_model(), COSTS, priors=priors).fit(X, y).predict(X)
    np.testing.assert_array_equal(got, want)


def test_cross_fitted_calibration_equals_a_calibrator_fitted_by_hand():
    X, y = load_iris(return_X_y=True)
    base = LogisticRegression(C=0.01, max_iter=2000)  # strongly regularized: under-confident, worth calibrating
    clf = CostSensitiveClassifier(base, ABSTAIN, calibration="affine", cv=5).fit(X, y)
    out_of_fold = cross_val_predict(clone(base), X, y, cv=5, method="predict_proba")
    cal = calibration.fit(out_of_fold, y, method="affine", score_type="probabilities")
    p_base = clone(base).fit(X, y).predict_proba(X)
    want = np.exp(np.asarray(cal.apply(p_base, score_type="probabilities"), np.float64))
    np.testing.assert_allclose(clf.predict_proba(X), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(clf.predict(X), _bayes(want, ABSTAIN))
    # calibration mattered: the decisions of the raw probabilities differ
    assert np.any(_bayes(p_base, ABSTAIN) != clf.predict(X))
    with pytest.raises(InputError, match="calibration"):
        CostSensitiveClassifier(base, COSTS, calibration="llr").fit(X, y)


def test_grid_search_over_the_wrapped_estimator_with_the_cost_scorer(wine):
    X, y, _ = wine
    folds = KFold(3, shuffle=True, random_state=2)
    grid = [0.001, 1.0]
    search = GridSearchCV(CostSensitiveClassifier(_model(), ABSTAIN), {"estimator__logisticregression__C": grid},
                          scoring=cost_scorer(ABSTAIN, decisions="predict"), cv=folds).fit(X, y)
    best, cost = _least_cost_c(X, y, folds, grid, ABSTAIN)
    assert search.best_params_ == {"estimator__logisticregression__C": best}
    assert search.best_score_ == pytest.approx(-cost, rel=1e-6)


# ----------------------------------------------------------- score calibrator

# Every ScoreCalibrator test fits (N, 2) = (300, 2) logits where it can: a fit compiles once per shape and method
# (seconds on a busy CPU), so the tests share compilations.
def _binary_logits(n=300, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = rng.normal(size=(n, 2)) * 1.5
    s[np.arange(n), y] += 1.0
    return 3.0 * s, y  # over-confident logits


def test_binary_affine_calibrator_is_logistic_regression_on_the_log_odds():
    s, y = _binary_logits()
    cal = ScoreCalibrator(method="affine", score_type="logits", tol=1e-6).fit(s, y)
    lr = LogisticRegression(penalty=None, tol=1e-10, max_iter=10_000).fit((s[:, 1] - s[:, 0])[:, None], y)
    want = lr.predict_proba((s[:, 1] - s[:, 0])[:, None])
    np.testing.assert_allclose(cal.predict_proba(s), want, atol=2e-5)  # both stop at a small gradient
    np.testing.assert_allclose(cal.transform(s), np.log(cal.predict_proba(s)), rtol=1e-6)
    np.testing.assert_array_equal(cal.predict(s), np.argmax(want, axis=1))
    # one column of log-odds ("logits" of class 1 against a class 0 at 0) is the same calibrator
    one = ScoreCalibrator(method="affine", score_type="logits", tol=1e-6).fit((s[:, 1] - s[:, 0])[:, None], y)
    np.testing.assert_allclose(one.predict_proba((s[:, 1] - s[:, 0])[:, None]), want, atol=2e-5)


@pytest.mark.slow  # a new fit compiles: seconds (the default lane keeps one calibrator test)
def test_one_column_of_probabilities_and_string_classes():
    s, y = _binary_logits(seed=1)
    p1 = 1.0 / (1.0 + np.exp(-(s[:, 1] - s[:, 0])))
    names = np.array(["ham", "spam"])[y]
    cal = ScoreCalibrator(method="temperature", score_type="probabilities").fit(p1[:, None], names)
    ref = calibration.fit(np.stack([1 - p1, p1], 1), y, method="temperature", score_type="probabilities")
    np.testing.assert_allclose(cal.predict_proba(p1[:, None]),
                               np.exp(np.asarray(ref.apply(np.stack([1 - p1, p1], 1)), np.float64)), rtol=1e-6)
    assert set(cal.predict(p1[:, None])) <= {"ham", "spam"}
    np.testing.assert_array_equal(cal.classes_, ["ham", "spam"])


@pytest.mark.slow  # a new fit compiles: seconds (the default lane keeps one calibrator test)
def test_llr_calibrator_gives_posteriors_at_the_training_priors():
    s, y = _binary_logits(seed=2)
    llr = (s[:, 1] - s[:, 0])[:, None]
    cal = ScoreCalibrator(method="llr", score_type="llr").fit(llr, y)
    lr = LogisticRegression(penalty=None, tol=1e-10, max_iter=10_000).fit(llr, y)
    # with the data priors, prior-weighted logistic regression is plain logistic regression
    np.testing.assert_allclose(cal.predict_proba(llr), lr.predict_proba(llr), atol=2e-5)


@pytest.mark.slow  # a new fit compiles: seconds (the default lane keeps one calibrator test)
def test_zero_weight_equals_removal_where_the_objective_has_a_minimum():
    s, y = _binary_logits(seed=3)
    s[240:] *= 5.0  # the samples to weigh 0: far from the others, so that counting them would show
    a = ScoreCalibrator().fit(s[:240], y[:240])
    b = ScoreCalibrator().fit(s, y, sample_weight=np.r_[np.ones(240), np.zeros(60)])
    np.testing.assert_allclose(b.predict_proba(s), a.predict_proba(s), atol=1e-5)  # L-BFGS tol 1e-5
    c = ScoreCalibrator().fit(s, y)
    assert np.max(np.abs(c.predict_proba(s) - a.predict_proba(s))) > 1e-3  # the test can fail


def test_x_that_is_not_scores_is_refused():
    s, y = _binary_logits()
    with pytest.raises(InputError, match="one column per class \\(2 here\\).*got 3 column"):
        ScoreCalibrator().fit(np.hstack([s, s[:, :1]]), y)
    with pytest.raises(InputError, match="at least 2 classes"):
        ScoreCalibrator().fit(s[:, :1], np.zeros(300, int))
    cal = ScoreCalibrator().fit(s, y)
    with pytest.raises(ValueError, match="features"):
        cal.predict(s[:, :1])


def test_what_the_checks_marked_not_applying_test_holds_on_scores():
    # check_estimators_pickle, _fit_returns_self, _nan_inf, _dtypes, _overwrite_params, on score data
    s, y = _binary_logits(seed=5)
    est = ScoreCalibrator()
    params = est.get_params()
    assert est.fit(s, y) is est
    assert est.get_params() == params
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict_proba(s), est.predict_proba(s))
    np.testing.assert_allclose(ScoreCalibrator().fit(s.astype(np.float32), y).predict_proba(s),
                               est.predict_proba(s), atol=1e-5)
    bad = s.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ScoreCalibrator().fit(bad, y)
    with pytest.raises(ValueError, match="NaN"):
        est.predict(bad)


# ----------------------------------------------------- scikit-learn's checks

def _checks():
    """``{name: [check, ...]}`` of check_estimator for a default ScoreCalibrator."""
    out: dict[str, list] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for est, check in estimator_checks.check_estimator(ScoreCalibrator(), generate_only=True):
            # check_estimator wraps a marked check in a skip (functools.wraps): take the check itself
            inner = getattr(check.func, "__wrapped__", check.func)
            name = getattr(inner, "func", inner).__name__
            out.setdefault(name, []).append((est, functools.partial(inner, *check.args, **check.keywords)))
    return out


# Quick checks that fit little (each new data shape compiles a fit: seconds on this CPU) for the default lane.
FAST_CHECKS = ("check_no_attributes_set_in_init", "check_parameters_default_constructible",
               "check_get_params_invariance", "check_set_params", "check_estimators_unfitted",
               "check_classifiers_one_label", "check_classifiers_one_label_sample_weights", "check_fit1d",
               "check_fit2d_1sample", "check_requires_y_none", "check_estimators_empty_data_messages",
               "check_complex_data", "check_supervised_y_no_nan",
               "check_classifiers_regression_target", "check_estimator_get_tags_default_keys",
               "check_transformers_unfitted")


def test_a_subset_of_the_estimator_checks_passes():
    checks = _checks()
    assert set(FAST_CHECKS) <= set(checks)
    for name in FAST_CHECKS:
        for est, check in checks[name]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check(est)


# Marked checks that fit (seconds) before they reach X that is not scores, or fail otherwise: the slow lane.
SLOW_TO_FAIL = ("check_sample_weights_invariance", "check_classifiers_classes", "check_classifiers_train")


@pytest.mark.parametrize("lane", ["default", pytest.param("slow", marks=pytest.mark.slow)])
def test_the_checks_marked_not_applying_fail_only_because_x_is_not_scores(lane):
    # Each check marked expected-to-fail for X that is not scores is refused by check_score_columns (and not for
    # another reason); the sample-weight one is the separable-data case (test_zero_sample_weight_check_...).
    checks = _checks()
    for name, reason in CHECKS_THAT_DO_NOT_APPLY.items():
        assert name in checks, f"{name}: no such check any more: remove it"
        if name == "check_sample_weights_invariance" or (name in SLOW_TO_FAIL) != (lane == "slow"):
            continue
        for est, check in checks[name]:
            with pytest.raises(InputError, match="holds the scores of one system"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check(est)


@pytest.mark.slow  # ~50-80 s: every check fits on data of a new shape, and each compiles a fit
def test_check_estimator_passes_with_the_checks_that_do_not_apply_marked():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator_checks.check_estimator(ScoreCalibrator())
    marked = {name for name in CHECKS_THAT_DO_NOT_APPLY if any(name in str(w.message) for w in caught)}
    assert marked == set(CHECKS_THAT_DO_NOT_APPLY)  # each was marked, not silently skipped


@pytest.mark.slow  # ~10 s: the fits on separable data
def test_zero_sample_weight_check_fails_as_its_reason_says():
    checks = _checks()
    kinds = [(est, check) for est, check in checks["check_sample_weights_invariance"]]
    ones = [c for c in kinds if c[1].func.keywords.get("kind") == "ones"]
    zeros = [c for c in kinds if c[1].func.keywords.get("kind") == "zeros"]
    assert len(ones) == len(zeros) == 1
    for est, check in ones:
        check(est)  # unit weights: passes
    for est, check in zeros:
        with pytest.raises(AssertionError, match="zero sample_weight"):
            check(est)


def _expected_failures_argument():
    """``{"expected_failed_checks": ...}`` where scikit-learn takes it (>= 1.6; 1.5 reads the estimator's tag)."""
    params = inspect.signature(estimator_checks.parametrize_with_checks).parameters
    return {"expected_failed_checks": lambda est: CHECKS_THAT_DO_NOT_APPLY} if "expected_failed_checks" in params \
        else {}


@pytest.mark.slow  # the whole check suite, one test per check (xfail where CHECKS_THAT_DO_NOT_APPLY says why)
@estimator_checks.parametrize_with_checks([ScoreCalibrator()], **_expected_failures_argument())
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_import_ecjax_needs_no_sklearn():
    code = ("import sys; sys.modules['sklearn'] = None\n"
            "import ecjax, ecjax.calibration, ecjax.calibrator_files, ecjax.cli, ecjax.metrics\n"
            "try:\n    import ecjax.sklearn\nexcept ImportError:\n    print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "ok"
