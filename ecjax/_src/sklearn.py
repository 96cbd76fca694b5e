"""scikit-learn integration: cost scorers, a cost-sensitive meta-estimator, calibrators as estimators.

Needs scikit-learn (an optional dependency: ``import ecjax`` does not import this module, and no other ecjax
module does).  Three pieces:

- :func:`cost_scorer` / :func:`utility_scorer`: a ``scoring=`` for ``cross_val_score``, ``GridSearchCV`` and
  friends.  It makes the Bayes decisions of the estimator's ``predict_proba`` for a cost matrix
  (``argmin_j sum_i c_ij P(i | x)``, Ferrer (2025) eq. 7; abstention columns allowed), or takes its ``predict``,
  counts them against ``y`` and returns the EC / NEC (negated, as scikit-learn's ``neg_*`` scorers, since
  scikit-learn maximizes scores) or the utility yield.
- :class:`CostSensitiveClassifier`: wraps any probabilistic classifier; ``predict`` returns the Bayes
  decisions for a cost matrix (deployment priors and abstention included), optionally after an ecjax
  calibrator fitted on out-of-fold probabilities (cross-fitting).
- :class:`ScoreCalibrator`: ecjax's calibrators (:func:`ecjax.calibration.fit`) as a scikit-learn classifier
  whose input ``X`` is the scores of one system.

Example:
  >>> from sklearn.datasets import load_iris
  >>> from sklearn.linear_model import LogisticRegression
  >>> from sklearn.model_selection import cross_val_score
  >>> X, y = load_iris(return_X_y=True)
  >>> costs = [[0, 1, 1], [1, 0, 1], [10, 10, 0]]  # missing class 2 costs 10
  >>> cross_val_score(LogisticRegression(max_iter=1000), X, y, scoring=cost_scorer(costs)).shape
  (5,)
"""

from __future__ import annotations

from typing import Any

import numpy as np

import jax
from jax.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone
from sklearn.model_selection import cross_val_predict
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ecjax._src import calibration
from ecjax._src import inputs as v
from ecjax._src.confusion import confusion_matrix
from ecjax._src.decisions import bayes_decisions
from ecjax._src.metrics import expected_cost, normalized_expected_cost, utility_yield

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _sk_validate_data
except ImportError:  # scikit-learn 1.5: the estimator's own method
    def _sk_validate_data(estimator, X="no_validation", y="no_validation", reset=True, **check_params):
        return estimator._validate_data(X, y, reset=reset, **check_params)

COST_METRICS = ("expected_cost", "normalized_expected_cost")
DECISION_SOURCES = ("bayes", "predict")
_METRIC_FUNCTIONS = {"expected_cost": expected_cost, "normalized_expected_cost": normalized_expected_cost,
                     "utility_yield": utility_yield}


# ------------------------------------------------------------------- scorers

class DecisionScorer:
    """A scikit-learn scorer ``scorer(estimator, X, y, sample_weight=None) -> float`` of decisions under a cost
    or utility matrix; made by :func:`cost_scorer` or :func:`utility_scorer` (read their docstrings)."""

    def __init__(self, matrix: ArrayLike, metric: str, priors: ArrayLike | None, training_priors: ArrayLike | None,
                 decisions: str):
        self.matrix = np.asarray(v.as_matrix(matrix, "utilities" if metric == "utility_yield" else "costs",
                                             batched=False), dtype=np.float64)
        self.metric = v.check_choice(metric, "metric", tuple(_METRIC_FUNCTIONS))
        self.priors = None if priors is None else np.asarray(v.as_priors(priors, num_classes=self.matrix.shape[0]))
        self.training_priors = None if training_priors is None else np.asarray(
            v.as_priors(training_priors, "training_priors", num_classes=self.matrix.shape[0]))
        self.decisions = v.check_choice(decisions, "decisions", DECISION_SOURCES)
        self.sign = 1.0 if metric == "utility_yield" else -1.0  # scikit-learn maximizes: costs are negated

    def __repr__(self) -> str:
        kind = "utility_scorer" if self.metric == "utility_yield" else "cost_scorer"
        return f"{kind}(metric={self.metric!r}, decisions={self.decisions!r}, matrix shape {self.matrix.shape})"

    def decisions_of(self, estimator: Any, X: Any) -> np.ndarray:
        """``(N,)`` decision indices of ``estimator`` on ``X``: Bayes decisions of ``predict_proba`` for the
        matrix (utilities: ``argmax_j sum_i u_ij P(i | x)``, the Bayes decision of the costs ``-u``), or
        ``predict``'s output mapped through ``estimator.decision_names_`` (a
        :class:`CostSensitiveClassifier`) or else ``estimator.classes_``."""
        if self.decisions == "predict":
            names = getattr(estimator, "decision_names_", None)
            names = estimator.classes_ if names is None else names
            return v.as_class_indices(estimator.predict(X), names, "the estimator's predict(X)")
        costs = -self.sign * self.matrix  # the cost matrix: c, or -u for utilities
        p = np.asarray(estimator.predict_proba(X))
        return np.asarray(bayes_decisions(p, costs, score_type="probabilities", priors=self.priors,
                                          training_priors=self.training_priors))

    def __call__(self, estimator: Any, X: Any, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        k, d = self.matrix.shape
        v.check_shape(np.asarray(estimator.classes_), "the estimator's classes_", "(K,)", sizes={"K": k},
                      why=" (a row of the matrix per class)")
        labels = v.as_class_indices(y, estimator.classes_, "y")
        counts = confusion_matrix(labels, self.decisions_of(estimator, X), num_classes=k, num_decisions=d,
                                  sample_weight=sample_weight)
        return self.sign * float(_METRIC_FUNCTIONS[self.metric](counts, self.matrix, priors=self.priors))


def cost_scorer(costs: ArrayLike, *, metric: str = "expected_cost", priors: ArrayLike | None = None,
                training_priors: ArrayLike | None = None, decisions: str = "bayes") -> DecisionScorer:
    """A scikit-learn scorer of the expected cost of an estimator's decisions: ``scoring=cost_scorer(costs)``.

    The scorer ``scorer(estimator, X, y, sample_weight=None)`` returns **minus** the EC
    ``sum_ij c_ij P_i R_ij`` (Ferrer 2022a, eq. 2) or the NEC (``metric="normalized_expected_cost"``, eqs. 3-4) of
    the decisions on ``(X, y)``: scikit-learn maximizes scores, so, as its ``neg_log_loss``, the cost is
    negated (``-0.12`` is better than ``-0.30``).  ``y`` is mapped to class indices through
    ``estimator.classes_`` (string class names work); row ``i`` of ``costs`` is class ``classes_[i]``.

    Args:
      costs: ``(K, D)`` cost matrix, ``c_ij`` the cost of deciding ``j`` for true class ``i``; ``D > K`` adds
        decisions such as abstaining.
      metric: ``"expected_cost"`` or ``"normalized_expected_cost"``.
      priors: deployment priors ``(K,)`` of the metric (default: the class frequencies of ``y``, with which
        the EC is the average cost per sample).  With ``decisions="bayes"`` they also weigh the decisions,
        which then need ``training_priors``.
      training_priors: ``(K,)`` class priors the estimator's posteriors were trained with (the class
        frequencies of its training data): the posteriors are re-weighted to ``priors`` before deciding
        (:func:`ecjax.decisions.bayes_decisions`).
      decisions: ``"bayes"``: the Bayes decisions of ``predict_proba(X)`` for ``costs`` (Ferrer 2025, eq. 7; ties
        to the lowest index); ``"predict"``: ``predict(X)`` as it is (for a classifier that already decides,
        such as :class:`CostSensitiveClassifier`).

    Returns:
      a :class:`DecisionScorer`.
    """
    if metric == "utility_yield":  # said as the choice it is: utilities go to utility_scorer
        v.check_choice(metric, "metric", COST_METRICS)
    return DecisionScorer(costs, metric, priors, training_priors, decisions)


def utility_scorer(utilities: ArrayLike, *, priors: ArrayLike | None = None,
                   training_priors: ArrayLike | None = None, decisions: str = "bayes") -> DecisionScorer:
    """A scikit-learn scorer of the utility yield ``sum_ij U_ij P_i R_ij`` (Dyrland et al. 2022, eq. 10) of an estimator's
    decisions, as it is (higher is better); Bayes decisions maximize the expected utility.  The arguments are
    those of :func:`cost_scorer`, with the ``(K, D)`` utility matrix ``utilities`` instead of costs."""
    return DecisionScorer(utilities, "utility_yield", priors, training_priors, decisions)


# ---------------------------------------------------------- score calibrator

# The checks of sklearn.utils.estimator_checks that cannot apply to a calibrator of scores, and why; marked
# expected failures (scikit-learn's ``_xfail_checks`` tag; ``expected_failed_checks`` from 1.6), never skipped
# silently.  Most feed X whose number of columns is neither the number of classes of y nor (binary y) one column:
# such X is not the scores of one system, and fit refuses it (ecjax._src.inputs.check_score_columns).  Measured with
# scikit-learn 1.5.2: every other check passes (tests/test_sklearn.py).
_NOT_SCORES = ("feeds X whose columns are not the scores of one system for the classes of y (F != K, and not one "
               "class-1 column of a binary y): ScoreCalibrator refuses such X by design; tests/test_sklearn.py "
               "checks the same property on score data where it applies")
_MULTICLASS_NOT_SCORES = ("its binary part (2 columns, 2 classes: logits) passes; its multiclass part " + _NOT_SCORES
                          .replace("feeds X", "feeds X of 2 columns for 3 classes,", 1))
CHECKS_THAT_DO_NOT_APPLY: dict[str, str] = {
    name: _MULTICLASS_NOT_SCORES for name in ("check_classifiers_classes", "check_classifiers_train")
} | {
    name: _NOT_SCORES for name in (
        "check_dict_unchanged", "check_dtype_object",
        "check_estimators_dtypes", "check_estimators_fit_returns_self", "check_estimators_nan_inf",
        "check_estimators_overwrite_params", "check_estimators_pickle", "check_non_transformer_estimators_n_iter",
        "check_pipeline_consistency", "check_transformer_data_not_an_array", "check_transformer_general",
        "check_transformer_n_iter", "check_transformer_preserve_dtypes")
} | {
    "check_sample_weights_invariance": (
        "its zero-weight case fits data that the scores separate perfectly, where the calibration objective has no "
        "minimum (the scale runs to infinity): L-BFGS stops where the gradient norm falls below tol, and that "
        "point depends on the path, which zero-weight samples change (not the objective). Where a minimum "
        "exists, zero weights equal removing the samples (tests/test_sklearn.py), and the unit-weight case of "
        "this check passes"),
}


def _log_posteriors_of_llr(llr: jax.Array, priors: np.ndarray) -> jax.Array:
    """``(N, 2)`` log-posteriors ``log sigmoid(-+(llr + log(P_1/P_0)))`` of LLRs at the class priors ``priors``."""
    logit = llr + np.log(priors[1] / priors[0])
    return jax.numpy.stack([jax.nn.log_sigmoid(-logit), jax.nn.log_sigmoid(logit)], axis=-1)


def scores_of_columns(X: np.ndarray, num_classes: int, score_type: str) -> np.ndarray:
    """The scores of one system from the columns of ``X`` (``(N, F)``): ``(N, K)`` when ``F == K``; for a binary
    problem with one class-1 column, ``(N,)`` LLRs for ``"llr"``, else ``(N, 2)`` rows: ``[1 - p, p]`` for
    probabilities, ``[0, s]`` for a log-odds given as ``"logits"``, ``[log(1 - e^s), s]`` for a class-1
    log-posterior (:func:`~ecjax._src.inputs.check_score_columns` says what is refused)."""
    v.check_score_columns(X.shape[1], num_classes, score_type)
    if X.shape[1] == num_classes and score_type != "llr":
        return X
    s = X[:, 0]
    if score_type == "llr":
        return s
    if score_type == "probabilities":
        return np.stack([1.0 - s, s], axis=-1)
    if score_type == "logits":
        return np.stack([np.zeros_like(s), s], axis=-1)
    return np.stack([np.log(-np.expm1(np.minimum(s, 0.0))), s], axis=-1)  # log_posteriors


class ScoreCalibrator(ClassifierMixin, TransformerMixin, BaseEstimator):
    """An ecjax calibrator (:func:`ecjax.calibration.fit`) as a scikit-learn classifier of scores.

    ``X`` holds the scores of one system: ``(N, K)``, a column per class of ``y`` (``classes_``, sorted), or
    for a binary ``y`` one column of class-1 scores (a probability, a log-odds as ``"logits"``, a
    log-posterior, or an LLR; see :func:`scores_of_columns`).  Any other ``X`` is refused with
    :class:`ecjax.InputError` (a ``ValueError``): a calibrator maps scores to calibrated scores, not features
    to classes, so the scikit-learn checks that feed ``X`` of arbitrary width do not apply to it
    (:data:`CHECKS_THAT_DO_NOT_APPLY`).

    Parameters:
      method: one of :data:`ecjax.calibration.METHODS` (``"llr"`` only with ``score_type="llr"``, which it needs).
      score_type: the type of ``X``'s columns: ``"logits"`` (default: any real matrix), ``"log_posteriors"``,
        ``"probabilities"``, ``"log_likelihoods"`` or ``"llr"``.
      loss: training objective, ``"xe"`` or ``"brier"`` (:class:`ecjax.calibration.FitSettings`).
      max_iter, tol: L-BFGS limits (:class:`ecjax.calibration.FitSettings`).

    Attributes (after ``fit``):

    - ``calibrator_``: the fitted :class:`ecjax.calibration.Calibrator` (save it with
      :func:`ecjax.calibrator_files.save_calibrator`).
    - ``classes_``, ``n_features_in_``: as every scikit-learn classifier.
    - ``class_priors_``: the (weighted) class frequencies of ``y``: the priors of the calibrated posteriors.

    ``predict_proba`` gives the calibrated posteriors, ``transform`` their logarithms (``-inf`` where a
    probability is 0), ``predict`` the class of highest calibrated posterior (the Bayes decision for 0-1 costs;
    ties to the first class).
    """

    def __init__(self, method: str = "affine", score_type: str = "logits", loss: str = "xe", max_iter: int = 200,
                 tol: float = 1e-5):
        self.method = method
        self.score_type = score_type
        self.loss = loss
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, X: Any, y: Any, sample_weight: ArrayLike | None = None) -> ScoreCalibrator:
        """Fit the calibrator on the scores ``X`` and true classes ``y``."""
        X, y = _sk_validate_data(self, X, y, dtype=[np.float64, np.float32])
        check_classification_targets(y)
        self.classes_, labels = np.unique(y, return_inverse=True)
        s = scores_of_columns(X, len(self.classes_), self.score_type)
        settings = calibration.FitSettings(loss=self.loss, max_iter=self.max_iter, tol=self.tol)
        self.calibrator_ = calibration.fit(s, labels, method=self.method, score_type=self.score_type,
                                           settings=settings, sample_weight=sample_weight)
        w = np.ones(len(labels)) if sample_weight is None else np.asarray(sample_weight, np.float64)
        totals = np.bincount(labels, weights=w, minlength=len(self.classes_))
        self.class_priors_ = totals / totals.sum()
        return self

    def transform(self, X: Any) -> np.ndarray:
        """``(N, K)`` calibrated log-posteriors of the scores ``X`` (for the priors :attr:`class_priors_`)."""
        check_is_fitted(self)
        X = _sk_validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        s = scores_of_columns(X, len(self.classes_), self.score_type)
        out = self.calibrator_.apply(s)
        llr = calibration.CALIBRATORS[self.method].output_type == "llr"
        return np.asarray(_log_posteriors_of_llr(out, self.class_priors_) if llr else out)

    def predict_proba(self, X: Any) -> np.ndarray:
        """``(N, K)`` calibrated posteriors, columns in the order of ``classes_``."""
        return np.exp(self.transform(X))

    def predict(self, X: Any) -> np.ndarray:
        """The class of highest calibrated posterior for each sample."""
        log_p = self.transform(X)  # first: unfitted, it raises NotFittedError
        return self.classes_[np.argmax(log_p, axis=1)]

    def _more_tags(self) -> dict:  # scikit-learn < 1.6 reads this
        return {"_xfail_checks": dict(CHECKS_THAT_DO_NOT_APPLY)}


# --------------------------------------------------- cost-sensitive classifier

class CostSensitiveClassifier(ClassifierMixin, BaseEstimator):
    """Bayes decisions for a cost matrix from any probabilistic classifier (Ferrer 2025, eq. 7, App. B).

    ``predict(X)`` is ``argmin_j sum_i c_ij P'(i | x)`` with ``P'`` the posteriors of ``predict_proba`` (of the
    base estimator, calibrated when ``calibration`` is given) re-weighted from the class frequencies of the
    training ``y`` to the deployment ``priors`` when those are given (Ferrer 2022b, §3.2).  Ties go to the lowest
    decision index.

    Parameters:
      estimator: a scikit-learn classifier with ``predict_proba``; cloned, never fitted in place.
      costs: ``(K, D)`` costs, ``c_ij`` of deciding ``j`` for true class ``classes_[i]``; ``D > K`` adds
        decisions such as abstaining.
      priors: ``(K,)`` deployment priors of the decisions (default: those of the training data).
      calibration: ``None`` or a method of :data:`ecjax.calibration.METHODS` but ``"llr"`` (whose binary form
        is ``"affine"`` here): an ecjax calibrator is fitted on the out-of-fold ``predict_proba`` of
        ``cross_val_predict(estimator, X, y, cv=cv)`` (cross-fitting: no sample is calibrated by a model that
        saw it), and the estimator is then refitted on all the data.
      cv: the ``cv`` of ``cross_val_predict`` (folds, or a splitter) when ``calibration`` is given.
      decision_names: the ``D`` values ``predict`` returns for the decisions.  Default: ``classes_`` when
        ``D == K``, else the decision indices ``0 .. D-1``.

    Attributes (after ``fit``):
      ``estimator_``: the base estimator fitted on all the data.  ``calibrator_``: the :class:`ScoreCalibrator` of
      its probabilities, or ``None``.  ``classes_``: the base estimator's.  ``training_priors_``: the class
      frequencies of ``y``.  ``decision_names_``: what ``predict`` returns for each decision.
    """

    def __init__(self, estimator: Any, costs: ArrayLike, *, priors: ArrayLike | None = None,
                 calibration: str | None = None, cv: Any = 5, decision_names: ArrayLike | None = None):
        self.estimator = estimator
        self.costs = costs
        self.priors = priors
        self.calibration = calibration
        self.cv = cv
        self.decision_names = decision_names

    def fit(self, X: Any, y: Any) -> CostSensitiveClassifier:
        """Fit the estimator (and, with ``calibration``, its cross-fitted calibrator) on ``(X, y)``."""
        check_classification_targets(y)
        classes, counts = np.unique(np.asarray(y), return_counts=True)
        costs = np.asarray(v.as_matrix(self.costs, "costs", shape=(len(classes), None), batched=False))
        d = costs.shape[1]
        names = (classes if d == len(classes) else np.arange(d)) if self.decision_names is None else (
            v.check_shape(np.asarray(self.decision_names), "decision_names", "(D,)", sizes={"D": d}))
        self.calibrator_ = None
        if self.calibration is not None:
            v.check_choice(self.calibration, "calibration", tuple(m for m, row in calibration.CALIBRATORS.items() if row.output_type != "llr"))
            out_of_fold = cross_val_predict(clone(self.estimator), X, y, cv=self.cv, method="predict_proba")
            self.calibrator_ = ScoreCalibrator(method=self.calibration, score_type="probabilities").fit(
                out_of_fold, y)
        self.estimator_ = clone(self.estimator).fit(X, y)
        self.classes_ = self.estimator_.classes_
        self.training_priors_ = counts / counts.sum()
        self.decision_names_ = names
        self.costs_ = costs
        return self

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """``(N, K)`` log-posteriors: of the base estimator, calibrated when ``calibration`` was given (for the
        training priors, not the deployment ``priors``)."""
        check_is_fitted(self)
        p = self.estimator_.predict_proba(X)
        if self.calibrator_ is not None:
            return self.calibrator_.transform(p)
        with np.errstate(divide="ignore"):
            return np.log(p)

    def predict_proba(self, X: Any) -> np.ndarray:
        """``(N, K)`` posteriors (see :meth:`predict_log_proba`)."""
        return np.exp(self.predict_log_proba(X))

    def decision_indices(self, X: Any) -> np.ndarray:
        """``(N,)`` Bayes decisions as indices ``0 .. D-1`` of the columns of ``costs``."""
        log_p = self.predict_log_proba(X)
        shift = self.priors is not None
        return np.asarray(bayes_decisions(log_p, self.costs_, score_type="log_posteriors",
                                          priors=self.priors if shift else None,
                                          training_priors=self.training_priors_ if shift else None))

    def predict(self, X: Any) -> np.ndarray:
        """The Bayes decision for each sample, as ``decision_names_`` names it."""
        return np.asarray(self.decision_names_)[self.decision_indices(X)]
