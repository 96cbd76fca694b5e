"""Calibration: the public API over the table of calibrators, training protocols and calibration loss.

The methods themselves (a row each: fitter, apply kernel, parameters, inputs) are :data:`CALIBRATORS` of
:mod:`~ecjax._src.calibrators`, re-exported here; this module validates the inputs, fits and applies a row, and runs the
protocols over it.

Ferrer (2022b) §4.2-4.3.  A calibrator maps a system's scores to new
log-posteriors; it is fitted by minimizing an expected proper scoring rule
(cross-entropy by default, Brier on request), optionally with deployment
priors (per-class averages weighted by the priors, Ferrer (2022b) eqs. 53-54, 57).
Its *calibration loss* (eqs. 59-60) is how much of the raw EPSR it removes.

Everything here is pure: :func:`fit` returns an immutable :class:`Calibrator`
(a pytree: it can be ``vmap``-ed and passed through ``jit``) whose
``.apply(scores)`` gives calibrated scores.  One fitter per objective: the affine
map with the cross-entropy (the default, and the calibration loss of the bootstrap) by damped Newton
(:func:`fit_affine_newton_kernel`), every other map and loss by optax L-BFGS with
a zoom line search (strong Wolfe), run inside ``jax.lax.while_loop`` until
the gradient norm falls below ``tol``; the calibrator records the number of
iterations, the final gradient norm and the final objective.

Protocols (Ferrer 2022b, §4.2.1): train on held-out data (:func:`calibrate_held_out`),
stratified k-fold cross-validation on the test data with a fixed key (groups of
dependent samples kept whole, :func:`grouped_folds`), each
fold's calibrator applied only to its held-out part, all folds fitted by one
compiled function (:func:`calibrate_cross_validated`), and
train-on-test (:func:`calibrate_train_on_test`), which is optimistic and
labelled so.

Example:
  >>> import jax, jax.numpy as jnp
  >>> logits = jnp.array([[2.0, 0.0], [0.5, 0.2], [-1.0, 1.0], [0.0, 3.0]] * 5)
  >>> labels = jnp.array([0, 1, 1, 1] * 5)
  >>> cal = fit(logits, labels, method="temperature", score_type="logits")
  >>> cal.apply(logits, score_type="logits").shape
  (20, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.calibrators import (  # the table of methods and what it exports, part of this module's API
    CALIBRATORS,
    ISOTONIC_CLIP,
    METHODS,
    NON_ITERATIVE_METHODS,
    CalibratorMethod,
    FitProblem,
    fit_affine_newton_kernel,
)
from ecjax._src.decisions import log_posteriors_kernel
from ecjax._src.scores import bayes_expected_cost, brier, cross_entropy
from ecjax._src.scores.inputs import EPSR_METRICS, epsr_metric

__all__ = [
    "BINNINGS", "CALIBRATION_METRICS", "CALIBRATORS", "ISOTONIC_CLIP", "LOSSES", "METHODS", "NON_ITERATIVE_METHODS",
    "PROTOCOLS", "CalibrationDiagnosis", "CalibrationResult", "Calibrator", "CalibratorMethod", "CrossValidation",
    "FitSettings", "HeldOut", "calibrate", "calibrate_cross_validated", "calibrate_held_out",
    "calibrate_train_on_test", "calibration_loss", "class_totals_to_calibrate", "diagnose", "fit",
    "fit_affine_newton_kernel", "grouped_folds", "relative_calibration_loss", "stratified_folds",
]

LOSSES = ("xe", "brier")
BINNINGS = ("equal_width", "equal_mass")
# The protocols by name (``CalibrationResult.protocol``, ``CalibrationDiagnosis.protocol``); :func:`diagnose` takes
# them as a :class:`CrossValidation` or :class:`HeldOut` object or the string ``"train_on_test"``.
PROTOCOLS = ("cross_validation", "held_out", "train_on_test")
CALIBRATION_METRICS = EPSR_METRICS


# ---------------------------------------------------------------- calibrator

@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True)
class Calibrator:
    """A fitted calibration transform (immutable pytree).

    Attributes:
      method: one of :data:`METHODS`.
      params: the fitted parameters, a dict of arrays (``scale``/``bias``;
        ``weight`` for ``matrix``; for ``histogram``: ``upper_log_edges``, the
        upper edge of each bin as a class-1 log-posterior (the last ``+inf``),
        and ``frequencies``, ``(M, 2)``, the ``[class-0, class-1]``
        frequencies of each bin, unclipped; for ``isotonic``:
        ``thresholds``, the distinct training log-odds in increasing order
        (padded to the number of training samples by repeating the last), and
        ``frequencies``, ``(len(thresholds), 2)``, the fitted
        ``[class-0, class-1]`` probabilities there, unclipped; for ``beta``:
        ``scale = [a, b]`` and ``bias = c``).
      num_iterations: L-BFGS (Newton, for ``affine`` with ``"xe"``) iterations used (0 for ``histogram`` and
        ``isotonic``; for ``beta``, both fits when a coefficient was dropped).
      grad_norm: gradient norm of the objective at the returned parameters,
        in the optimizer's parametrization (scales and matrix multiplied by
        the RMS spread of the training inputs; biases as they are).
      loss: the training objective at the returned parameters.
      converged: ``grad_norm < tol`` (always True for ``histogram`` and
        ``isotonic``, which are computed exactly).
      num_classes, input_type, loss_name: static settings.

    A calibrator from :func:`calibrate_cross_validated` holds one set of
    parameters per fold (leading axis); apply it fold by fold
    (``jax.tree_util.tree_map(lambda p: p[f], cal)``) or use the calibrated
    scores returned with it.
    """

    params: dict
    num_iterations: Any
    grad_norm: Any
    loss: Any
    converged: Any
    method: str = field(default="affine")
    num_classes: int = field(default=2)
    input_type: str = field(default="log_posteriors")
    loss_name: str = field(default="xe")

    def tree_flatten(self) -> tuple[tuple[dict, Any, Any, Any, Any], tuple[str, int, str, str]]:
        children = (self.params, self.num_iterations, self.grad_norm, self.loss, self.converged)
        return children, (self.method, self.num_classes, self.input_type, self.loss_name)

    @classmethod
    def tree_unflatten(cls, aux: tuple[str, int, str, str], children: tuple[dict, Any, Any, Any, Any]) -> Calibrator:
        return cls(*children, *aux)

    def apply(self, scores: ArrayLike, *, score_type: str | None = None) -> jax.Array:
        """Calibrated scores: ``(N, K)`` log-posteriors, or ``(N,)`` LLRs for ``"llr"``.

        ``score_type`` defaults to the type the calibrator was fitted on and
        must match it (a calibrator of logits is not one of LLRs).
        """
        score_type = self.input_type if score_type is None else score_type
        if score_type != self.input_type and not {score_type, self.input_type} <= set(v.POSTERIOR_TYPES):
            said = v.mentioning(f"this calibrator was fitted on {{fitted}}, got {score_type!r}",
                                fitted=("score_type", self.input_type))
            raise v.InputError(said["problem"], **said)
        s = _calibration_inputs(scores, score_type, self.method, self.num_classes)
        return _apply_jit(self, s)


def _apply_kernel(cal, s):
    """Kernel: the calibrated scores of :class:`Calibrator` ``cal`` for its inputs ``s`` (:func:`_calibration_inputs`):
    its method's ``apply`` (:data:`CALIBRATORS`)."""
    return CALIBRATORS[cal.method].apply(cal.params, s)


_apply_jit = jax.jit(_apply_kernel)


# -------------------------------------------------------------------- inputs

def _calibration_inputs(scores, score_type, method, num_classes=None):
    """Finite, validated calibrator inputs.

    Posterior-type scores become log-posteriors (so ``logits`` and
    ``log_posteriors`` give the same calibrator); log-likelihoods are used as
    they are (the bias absorbs the priors); ``llr`` is ``(N,)`` and only for
    ``method="llr"``, which also accepts binary scores of any type (it uses
    the class-1 log-odds).  ``isotonic`` works on the class-1 log-odds (on the
    ``(N, K)`` one-vs-rest log-odds for ``K > 2``) and
    ``beta`` on binary log-posteriors (log-likelihoods are normalized first:
    the posteriors for equal priors, whose shift the bias ``c`` absorbs).
    """
    row = CALIBRATORS[method]
    s = v.as_scores(scores, score_type=score_type)
    v.check_one_system(s, 1 if score_type == "llr" else 2)
    if score_type == "llr":
        if row.output_type != "llr":
            raise v.InputError(f"LLR scores (score_type='llr') need method='llr', got method={method!r}")
        return s
    if score_type in v.POSTERIOR_TYPES:
        s = log_posteriors_kernel(s, jnp.zeros(s.shape[-1], s.dtype), score_type)
    k = s.shape[-1]
    if num_classes is not None:
        v.check_shape(s, "scores", "(N, K)", sizes={"K": num_classes})
    if row.binary and k != 2:
        raise v.InputError(f"method={method!r} is for binary scores (K = 2), got K = {k}; use 'affine'")
    return row.inputs(s, score_type)


@dataclass(frozen=True)
class FitSettings:
    """How a calibrator is fitted, whatever its ``method``: the objective, the solver and the histogram's bins.

    Attributes:
      loss: the expected PSR minimized, ``"xe"`` (Ferrer 2022b, eqs. 53-54) or ``"brier"`` (eq. 57).
      l2: L2 weight for ``method="matrix"`` (``l2 * ||W - I||_F^2``), >= 0.
      off_diagonal_l2, intercept_l2: the ODIR weights ``lambda`` and ``mu`` of ``method="dirichlet"`` (Kull et al.
        2019: ``lambda / (K (K - 1))`` times the sum of the squared off-diagonal weights plus ``mu / K`` times the
        sum of the squared intercepts), >= 0.  The paper chooses them by cross-validation over powers of ten;
        the defaults are a light touch.
      num_bins, binning: the bins of ``method="histogram"`` (``"equal_width"`` or ``"equal_mass"``).
      max_iter, tol: L-BFGS stops when the gradient norm is below ``tol`` or after ``max_iter`` iterations
        (see ``Calibrator.converged``); the affine cross-entropy's Newton fit stops at the rounding of its
        objective, within ``max_iter`` iterations, and is judged by the same ``tol``.

    Checked when made (:class:`~ecjax.InputError` naming the field).
    """

    loss: str = "xe"
    l2: float = 1e-3
    off_diagonal_l2: float = 1e-3
    intercept_l2: float = 1e-3
    num_bins: int = 15
    binning: str = "equal_width"
    max_iter: int = 200
    tol: float = 1e-5

    def __post_init__(self):
        v.check_choice(self.loss, "loss", LOSSES)
        v.check_choice(self.binning, "binning", BINNINGS)
        object.__setattr__(self, "max_iter", v.as_scalar(self.max_iter, "max_iter", integer=True, low=1))
        object.__setattr__(self, "num_bins", v.as_scalar(self.num_bins, "num_bins", integer=True, low=1))
        object.__setattr__(self, "tol", v.as_scalar(self.tol, "tol", low=0.0, strict=True))
        for name in ("l2", "off_diagonal_l2", "intercept_l2"):
            object.__setattr__(self, name, v.as_scalar(getattr(self, name), name, low=0.0))

    @property
    def penalties(self) -> tuple[float, float, float]:
        """``(l2, off_diagonal_l2, intercept_l2)``, as the fitting kernels take them (one traced vector: changing a
        weight does not recompile)."""
        return self.l2, self.off_diagonal_l2, self.intercept_l2


def _check_fit_args(method, settings) -> FitSettings:
    v.check_choice(method, "method", METHODS)
    return v.check_instance(settings, FitSettings, "settings", "ecjax.calibration.FitSettings")


def _prepare_fit(scores, labels, method, priors, score_type):
    """Validated ``(s, labels, K, priors or None)`` for fitting."""
    v.check_score_type(score_type)
    s = _calibration_inputs(scores, score_type, method)
    k = 2 if s.ndim == 1 else s.shape[-1]
    labels = v.as_label_vector(labels, num_classes=k, scores=s, sample_axis=0)
    p = None if priors is None else np.asarray(v.as_priors(priors, num_classes=k), dtype=np.float64)
    return s, labels, k, p


def class_totals_to_calibrate(labels: ArrayLike, num_classes: int, *, sample_weight: ArrayLike | None = None,
                              where: str = "") -> np.ndarray:
    """The ``(K,)`` sample counts (weight totals) of training labels; :class:`~ecjax.InputError` if a class has none.

    A class with no training samples (or no weight) cannot be calibrated: its bias would be driven to minus
    infinity (no sample pulls it back), so this is an error, never a silent NaN or a runaway parameter.  ``where``
    says which training data in the message (``" of fold 2"``).
    """
    n_i = np.bincount(np.asarray(labels), weights=None if sample_weight is None else np.asarray(sample_weight),
                      minlength=num_classes).astype(np.float64)
    missing = np.nonzero(n_i == 0)[0]
    if missing.size:
        raise v.InputError(
            f"class {int(missing[0])} has no samples{' of non-zero weight' if sample_weight is not None else ''} "
            f"in the training data{where}: a calibrator cannot be fitted for it (use fewer folds, more data, or "
            "drop the class)"
        )
    return n_i


def _fold_weights(labels_np, k, priors, where="", sample_weight=None):
    """``P_i / N_i`` per sample for the training samples; InputError for an absent class.

    With ``sample_weight`` ``s_n``: ``s_n P_i / W_i``, ``W_i`` the total
    weight of class ``i`` (and the data priors ``W_i / W``), so that an
    integer weight counts a sample that many times.  A class with no training
    samples (or no weight) is refused (:func:`class_totals_to_calibrate`).
    """
    n_i = class_totals_to_calibrate(labels_np, k, sample_weight=sample_weight, where=where)
    p = n_i / n_i.sum() if priors is None else priors
    w = (p / n_i)[labels_np]
    return (w if sample_weight is None else w * sample_weight), p


def _sample_weight_for(sample_weight, labels):
    """Validated host sample weights for a fit, or ``None``."""
    if sample_weight is None:
        return None
    return np.asarray(v.as_sample_weight(sample_weight, labels), np.float64)


# ----------------------------------------------------------------------- fit

def _bin_edges_for(method, s, sample_weight, settings):
    """The ``(M,)`` log-domain bin edges of ``method`` over the samples of ``sample_weight > 0``, made on the host
    (:data:`CALIBRATORS`' ``bin_edges``; a placeholder for methods without bins)."""
    return CALIBRATORS[method].bin_edges(s, sample_weight, settings)


# The binning is not an argument: the bins arrive as upper_log_edges, made on the host by the method's bin_edges.
@partial(jax.jit, static_argnames=("method", "loss", "max_iter", "num_bins"))
def _fit_kernel(s, labels, weights, sample_weight, log_prior_odds, penalties, tol, upper_log_edges, *, method, loss,
                max_iter, num_bins):
    """Fit one calibrator on weighted samples (weights 0 = not in the training set): its method's ``fit``
    (:data:`CALIBRATORS`) of the :class:`~ecjax._src.calibrators.problem.FitProblem` of these arguments,
    ``(params, iterations, gradient norm, objective)``.

    ``weights`` are the objective's per-sample weights ``u_n P_i / W_i``;
    ``sample_weight`` the frequency weights ``u_n`` alone (1 without), which
    the counting methods (histogram, isotonic) need apart from the class
    weights.  ``upper_log_edges`` are the histogram's bins
    (the row's ``bin_edges``, on the host), unused by other methods.
    """
    problem = FitProblem(s, labels, weights, sample_weight, log_prior_odds, penalties, tol, upper_log_edges)
    return CALIBRATORS[method].fit(problem, loss=loss, max_iter=max_iter, num_bins=num_bins)


def fit(scores: ArrayLike, labels: ArrayLike, *, method: str = "affine", priors: ArrayLike | None = None,
        score_type: str = "log_posteriors", settings: FitSettings = FitSettings(),
        sample_weight: ArrayLike | None = None) -> Calibrator:
    """Fit a calibrator on ``(scores, labels)``.

    The objective is the expected PSR of the calibrated posteriors with
    per-class weights ``P_i / N_i`` (Ferrer 2022b, eqs. 53-54 for ``"xe"``, 57
    for ``"brier"``): with ``priors=None`` the plain average over samples,
    with deployment priors the per-class averages weighted by them (so the
    calibrated posteriors are for those priors).

    Methods (input ``s``: log-posteriors, or log-likelihoods as given):

    - ``"affine"``: ``log_softmax(alpha s + beta)``, scalar ``alpha``, vector
      ``beta`` (Ferrer 2022b, eq. 61; psrcal's ``AffineCalLogLoss``).
    - ``"temperature"``: ``log_softmax(alpha s)`` (temperature scaling).
    - ``"bias"``: ``log_softmax(s + beta)`` (prior-shift correction).
    - ``"vector"``: ``log_softmax(a * s + b)``, one scale per class.
    - ``"matrix"``: ``log_softmax(W s + b)`` with ``l2 * ||W - I||_F^2``
      added to the objective (shrinking towards the identity, i.e. towards
      leaving the scores alone).
    - ``"dirichlet"``: Dirichlet calibration (Kull et al. 2019), the same
      map ``log_softmax(W s + b)`` on the log-posteriors with their ODIR
      penalty instead (``off_diagonal_l2`` and ``intercept_l2`` of
      :class:`FitSettings`): off-diagonal weights and intercepts shrink to 0,
      the diagonal is free.  (The inputs are centred for the optimizer as
      for the other maps; the penalty is on the intercept of the map of the
      inputs as given.)
    - ``"llr"``: binary LLR calibration, ``llr' = a llr + b`` trained by
      prior-weighted logistic regression: the XE of the posteriors
      ``sigmoid(llr' + log(P_1/P_0))`` with weights ``P_i/N_i``, the
      speaker-verification recipe (Cllr/FoCal).  ``priors`` is the effective
      training prior (default: data priors).  ``apply`` returns calibrated
      LLRs; combine them with any deployment priors.
    - ``"histogram"``: binary histogram binning of the class-1 posterior
      (the calibrator hidden inside the ECE, Ferrer (2022b) eq. 66): each bin maps
      to the (prior-weighted) class frequencies of its training samples; an
      empty bin maps to the class priors of the objective.  Equal-mass edges
      are order statistics of the training log-posteriors, from one stable
      sort on the host (tied values share a bin; the same bins on every
      backend).  Outputs are clipped to ``[ISOTONIC_CLIP, 1 -
      ISOTONIC_CLIP]`` as isotonic's, so a bin of one class gives no
      ``-inf``.
    - ``"isotonic"``: binary isotonic regression (Zadrozny & Elkan 2002) of
      the class-1 indicator on the class-1 log-odds ``log p - log(1 - p)``,
      by pool-adjacent-violators with the weights ``P_i / N_i``: the
      monotone non-decreasing map with the lowest expected PSR on the
      training data, for every proper scoring rule at once (so ``loss`` only
      chooses the reported ``Calibrator.loss``).  Equal to
      ``sklearn.isotonic.IsotonicRegression(out_of_bounds="clip")`` fitted
      on the log-odds with these sample weights: linear between the
      distinct training log-odds, constant beyond them.  Output
      probabilities are clipped to ``[ISOTONIC_CLIP, 1 - ISOTONIC_CLIP]``
      (``1e-6``), so that no log-posterior is ``-inf``.  For ``K > 2``:
      one-vs-rest, as ``sklearn.calibration.CalibratedClassifierCV(
      method="isotonic")``: class ``k``'s fit regresses ``[y = k]`` on the
      log-odds of ``k`` against the rest, and the ``K`` clipped outputs are
      divided by their sum.  That renormalized map minimizes no proper
      scoring rule of the multiclass posterior (each fit is optimal for its
      own binary question only), so compare it with ``"affine"``,
      ``"vector"`` or ``"dirichlet"`` by the calibration loss.
    - ``"beta"``: binary beta calibration (Kull, Silva Filho & Flach 2017):
      ``logit q = a log p - b log(1 - p) + c`` fitted by prior-weighted
      logistic regression on the features ``[log p, -log(1 - p)]`` (XE, or
      Brier with ``loss="brier"``).  The paper requires ``a, b >= 0`` (a
      monotone map); as its betacal package, if the free fit has ``a < 0``
      the model is refitted with ``a = 0``, else if ``b < 0`` with ``b = 0``.

    Args:
      scores: ``(N, K)`` scores of one system (``(N,)`` for ``"llr"``).
      labels: ``(N,)`` true classes; every class must occur.
      method: one of :data:`METHODS`.
      priors: deployment priors for the objective (default: data priors).
      sample_weight: optional ``(N,)`` non-negative weight of each sample
        (scikit-learn's meaning: an integer weight counts the sample that many
        times); the objective's per-sample weights become ``s_n P_i / W_i``
        with ``W_i`` the total weight of class ``i`` (and the data priors
        ``W_i / W``).  ``"histogram"`` counts weight totals per bin (its
        equal-mass bins split the cumulative weight,
        :func:`ecjax.scores.equal_mass_upper_edges`) and ``"isotonic"`` runs
        the weighted PAV (``IsotonicRegression(sample_weight=)``); for all
        methods integer weights give the fit on the repeated samples.
      score_type: type of ``scores`` (``"log_posteriors"``, ``"logits"``,
        ``"log_likelihoods"``, ``"llr"``).
      settings: :class:`FitSettings`: the loss (``"xe"``, default, or
        ``"brier"``), ``l2`` for ``"matrix"``, the bins of
        ``"histogram"``, and L-BFGS's ``max_iter`` and ``tol``.

    Returns:
      :class:`Calibrator`.
    """
    settings = _check_fit_args(method, settings)
    loss, tol, max_iter = settings.loss, settings.tol, settings.max_iter
    s, labels, k, p = _prepare_fit(scores, labels, method, priors, score_type)
    sw = _sample_weight_for(sample_weight, labels)
    w, p_used = _fold_weights(np.asarray(labels), k, p, sample_weight=sw)
    dtype = s.dtype
    log_prior_odds = jnp.asarray(np.log(p_used[1] / p_used[0]) if k == 2 and np.all(p_used > 0) else 0.0, dtype)
    sw = np.ones(w.shape) if sw is None else sw
    params, n_iter, gnorm, value = _fit_kernel(
        s, labels, jnp.asarray(w, dtype), jnp.asarray(sw, dtype), log_prior_odds, jnp.asarray(settings.penalties, dtype),
        jnp.asarray(tol, dtype), jnp.asarray(_bin_edges_for(method, s, sw, settings)),
        method=method, loss=loss, max_iter=max_iter, num_bins=settings.num_bins)
    converged = gnorm < tol if CALIBRATORS[method].iterative else jnp.asarray(True)
    return Calibrator(params, n_iter, gnorm, value, converged, method, k, score_type, loss)


# ----------------------------------------------------------------- protocols

class CalibrationResult(NamedTuple):
    """Calibrated scores and how they were obtained.

    ``optimistic`` is True for train-on-test: the calibrator saw the labels
    of the very samples it calibrates, so any metric of these scores is
    biased in their favour (Ferrer 2022b, §4.2.1).  ``folds`` is the fold of each
    sample for cross-validation (None otherwise).
    """

    scores: jax.Array
    calibrator: Calibrator
    protocol: str
    optimistic: bool
    folds: Any = None


def calibrate_held_out(train_scores: ArrayLike, train_labels: ArrayLike, test_scores: ArrayLike,
                       **fit_kwargs: Any) -> CalibrationResult:
    """Fit on held-out ``(train_scores, train_labels)``, apply to ``test_scores``.

    The recommended protocol (Ferrer 2022b, §4.2.1): the calibrator never sees the
    test labels.  ``fit_kwargs`` go to :func:`fit`.
    """
    cal = fit(train_scores, train_labels, **fit_kwargs)
    return CalibrationResult(cal.apply(test_scores), cal, "held_out", False, None)


def calibrate_train_on_test(scores: ArrayLike, labels: ArrayLike, **fit_kwargs: Any) -> CalibrationResult:
    """OPTIMISTIC: fit on the test data and apply to the same data.

    Common in the calibration literature and acceptable for a very
    restricted calibrator on a lot of data, but metrics of the result are
    optimistically biased (the transform can overfit the test set, Ferrer (2022b)
    §4.2.1); the result says so (``optimistic=True``).  Prefer
    :func:`calibrate_cross_validated` or :func:`calibrate_held_out`.
    """
    cal = fit(scores, labels, **fit_kwargs)
    return CalibrationResult(cal.apply(scores), cal, "train_on_test", True, None)


def stratified_folds(key: jax.Array, labels: ArrayLike, num_folds: int) -> np.ndarray:
    """Fold index ``(N,)`` of each sample: stratified, shuffled with ``key``.

    Each class is shuffled (its own subkey) and dealt round-robin over the
    folds, continuing where the previous class stopped, so every fold gets
    ``floor`` or ``ceil`` of ``N_i / num_folds`` samples of class ``i`` and
    fold sizes differ by at most one.  Same key, same folds.
    """
    labels_np = np.asarray(v.as_index_array(labels, "labels"))
    num_folds = v.as_scalar(num_folds, "num_folds", integer=True, low=2, high=labels_np.shape[0])
    folds = np.empty(labels_np.shape[0], np.int32)
    offset = 0
    classes = np.unique(labels_np)
    keys = jax.random.split(key, int(classes.max()) + 1)
    for c in classes:
        idx = np.nonzero(labels_np == c)[0]
        perm = np.asarray(jax.random.permutation(keys[c], idx.shape[0]))
        folds[idx[perm]] = (offset + np.arange(idx.shape[0])) % num_folds
        offset += idx.shape[0]
    return folds


def grouped_folds(key: jax.Array, labels: ArrayLike, groups: ArrayLike | Sequence[Any], num_folds: int) -> np.ndarray:
    """Fold index ``(N,)`` of each sample, every group whole in one fold, stratified as far as groups allow.

    For samples that are not independent (several recordings of one speaker,
    several images of one patient): a calibrator must not be tested on a
    group it was trained on, or the cross-validated loss is optimistic.  The
    folds of ``expected_cost.calibration.calibration_with_crossval`` with
    ``condition_ids`` (scikit-learn's ``StratifiedGroupKFold``, shuffled):
    the groups are shuffled with ``key``, taken from the most uneven class
    mix to the most even, and each goes to the fold where the class
    proportions across folds stay most alike (ties: the smaller fold), and
    never leaving a fold empty.  Same key, same folds.

    Args:
      key: a ``jax.random`` key.
      labels: ``(N,)`` true classes.
      groups: ``(N,)`` group (condition) id of each sample: integers or strings.
      num_folds: at least 2 and at most the number of groups.
    """
    labels_np = np.asarray(v.as_index_array(labels, "labels"))
    num_folds = v.as_scalar(num_folds, "num_folds", integer=True, low=2)
    ids, which = v.as_group_index(groups, labels_np.shape[0])
    if num_folds > len(ids):
        raise v.InputError(f"`num_folds` ({num_folds}) exceeds the number of groups ({len(ids)}): each fold "
                           "needs at least one whole group")
    k = int(labels_np.max()) + 1
    per_group = np.zeros((len(ids), k))
    np.add.at(per_group, (which, labels_np), 1.0)
    shuffled = np.asarray(jax.random.permutation(v.as_key(key), len(ids)))
    order = shuffled[np.argsort(-np.std(per_group[shuffled], axis=1), kind="stable")]
    class_total = np.maximum(per_group.sum(0), 1.0)
    fold_counts = np.zeros((num_folds, k))
    fold_of_group = np.empty(len(ids), np.int32)
    eye = np.eye(num_folds)[:, :, None]
    for left, grp in zip(range(len(ids), 0, -1), order):
        # Row f of `trial`: the folds' class counts had this group gone to fold f.
        trial = fold_counts[None] + eye * per_group[grp]
        spread = np.round(np.mean(np.std(trial / class_total, axis=1), axis=1), 12)  # equal up to rounding: a tie
        sizes = fold_counts.sum(1)
        empty = sizes == 0
        allowed = empty if empty.sum() >= left else np.ones(num_folds, bool)
        best = np.lexsort((sizes, spread, ~allowed))[0]
        fold_counts[best] += per_group[grp]
        fold_of_group[grp] = best
    return fold_of_group[which]


@partial(jax.jit, static_argnames=("method", "loss", "max_iter", "num_bins"))
def _cross_validation_kernel(s, labels, train_idx, train_w, train_sw, folds, log_prior_odds, penalties, tol, edges, *,
                             method, loss, max_iter, num_bins):
    """All folds in one compiled function: the fit mapped over padded training sets."""
    fit_one = partial(_fit_kernel, method=method, loss=loss, max_iter=max_iter, num_bins=num_bins)

    def one_fold(idx, w, sw, lpo, fold_edges):
        return fit_one(s[idx], labels[idx], w, sw, lpo, penalties, tol, fold_edges)

    # lax.map, not vmap: under vmap the L-BFGS loop and its line search run until the slowest
    # fold is done and their branches become selects (both sides evaluated), which measured
    # 2-5x slower on CPU; lax.map keeps one compiled function with each fold stopping on its own.
    params, n_iter, gnorm, value = jax.lax.map(lambda a: one_fold(*a),
                                                   (train_idx, train_w, train_sw, log_prior_odds, edges))
    k = 2 if s.ndim == 1 else s.shape[-1]

    def apply_fold(p):
        cal = Calibrator(p, 0, 0.0, 0.0, True, method, k, "", loss)
        return _apply_kernel(cal, s)

    # Every fold's calibrator on all samples, then each sample takes its own fold's output:
    # F x N x K work, no per-sample copies of the parameters (a K x K matrix each for "matrix").
    all_out = jax.vmap(apply_fold)(params)  # (F, N, ...)
    out = jnp.take_along_axis(all_out, folds.reshape((1, -1) + (1,) * (all_out.ndim - 2)), axis=0)[0]
    return out, params, n_iter, gnorm, value


def calibrate_cross_validated(scores: ArrayLike, labels: ArrayLike, *, key: jax.Array, num_folds: int = 5,
                              method: str = "affine", priors: ArrayLike | None = None,
                              score_type: str = "log_posteriors", settings: FitSettings = FitSettings(),
                              groups: ArrayLike | Sequence[Any] | None = None,
                              sample_weight: ArrayLike | None = None) -> CalibrationResult:
    """Stratified k-fold cross-validated calibration of the test data.

    The data are split into ``num_folds`` stratified folds with ``key``
    (:func:`stratified_folds`); the calibrator of fold ``f`` is fitted on the
    other folds and applied only to fold ``f``, so no sample is calibrated by
    a transform that saw its label (Ferrer 2022b, §4.2.1; the protocol of
    ``expected_cost.calibration.calibration_with_crossval``).  All folds are
    fitted by one jit-compiled function (``lax.map`` over the folds): the
    training sets are padded to the same length with zero-weight samples.

    ``groups`` (``(N,)`` ids, the ``condition_ids`` of expected-cost) keeps
    every group whole in one fold (:func:`grouped_folds`), so that no sample
    is calibrated by a transform fitted on its own group.

    Raises :class:`InputError` when a class is missing from a training set
    (a class with a single sample, say): such a calibrator is undefined.
    Other arguments as in :func:`fit`.

    Returns:
      :class:`CalibrationResult` with ``folds`` and a calibrator holding one
      parameter set per fold.
    """
    settings = _check_fit_args(method, settings)
    loss, tol, max_iter = settings.loss, settings.tol, settings.max_iter
    s, labels, k, p = _prepare_fit(scores, labels, method, priors, score_type)
    if groups is None:
        folds = stratified_folds(v.as_key(key), labels, num_folds)
    else:
        folds = grouped_folds(key, labels, groups, num_folds)
    labels_np = np.asarray(labels)
    sw = _sample_weight_for(sample_weight, labels)
    train_sets = [np.nonzero(folds != f)[0] for f in range(num_folds)]
    length = max(len(t) for t in train_sets)
    idx = np.zeros((num_folds, length), np.int32)
    w = np.zeros((num_folds, length))
    train_sw = np.zeros((num_folds, length))  # padding: weight 0, outside every training set
    lpo = np.zeros(num_folds)
    for f, t in enumerate(train_sets):
        wf, pf = _fold_weights(labels_np[t], k, p, where=f" of fold {f} (cross-validation)",
                               sample_weight=None if sw is None else sw[t])
        idx[f, : len(t)] = t
        w[f, : len(t)] = wf
        train_sw[f, : len(t)] = 1.0 if sw is None else sw[t]
        lpo[f] = np.log(pf[1] / pf[0]) if k == 2 and np.all(pf > 0) else 0.0
    dtype = s.dtype
    edges = np.stack([_bin_edges_for(method, s[i], train_sw[f], settings) for f, i in enumerate(idx)])
    out, params, n_iter, gnorm, value = _cross_validation_kernel(
        s, labels, jnp.asarray(idx), jnp.asarray(w, dtype), jnp.asarray(train_sw, dtype), jnp.asarray(folds),
        jnp.asarray(lpo, dtype),
        jnp.asarray(settings.penalties, dtype), jnp.asarray(tol, dtype), jnp.asarray(edges), method=method, loss=loss, max_iter=max_iter,
        num_bins=settings.num_bins)
    converged = gnorm < tol if CALIBRATORS[method].iterative else jnp.ones(num_folds, bool)
    cal = Calibrator(params, n_iter, gnorm, value, converged, method, k, score_type, loss)
    return CalibrationResult(out, cal, "cross_validation", False, jnp.asarray(folds))


# --------------------------------------------------------- calibration loss

def _epsr(metric, labels, scores, costs, priors, score_type, normalize, sample_weight=None):
    """The EPSR ``metric`` (from :func:`~ecjax._src.scores.inputs.epsr_metric`) of ``scores``."""
    kw = dict(priors=priors, score_type=score_type, normalize=normalize, sample_weight=sample_weight)
    if metric == "xe":
        return cross_entropy(labels, scores, **kw)
    if metric == "brier":
        return brier(labels, scores, **kw)
    return bayes_expected_cost(labels, scores, costs, **kw)


def calibration_loss(labels: ArrayLike, raw: ArrayLike, calibrated: ArrayLike, *, metric: str = "xe",
                     relative: bool = True, costs: ArrayLike | None = None, priors: ArrayLike | None = None,
                     score_type: str = "log_posteriors", sample_weight: ArrayLike | None = None) -> jax.Array:
    """Calibration loss ``EPSRraw - EPSRemin`` (Ferrer 2022b, eq. 59) or its relative form.

    ``relative=True`` gives ``100 (EPSRraw - EPSRemin) / EPSRraw`` (eq. 60),
    the percentage of the raw EPSR due to miscalibration (0 when the raw EPSR
    is 0; 100 when an infinite raw cross-entropy becomes finite).  The EPSR is the cross-entropy (``"xe"``), the Brier score
    (``"brier"``) or the EC of Bayes decisions for ``costs``
    (``"bayes_ec"``), with evaluation ``priors`` (default: data priors).
    ``calibrated`` should come from a calibrator that did not see these
    labels (held-out or cross-validated), or the loss is overestimated.

    Args:
      labels: ``(N,)`` true classes.
      raw, calibrated: scores of the same samples, both of ``score_type``.
      sample_weight: optional ``(N,)`` non-negative frequency weights of
        the samples, for both EPSRs (as :func:`ecjax.scores.cross_entropy`).
    """
    metric = epsr_metric(metric, costs)
    r = _epsr(metric, labels, raw, costs, priors, score_type, False, sample_weight)
    c = _epsr(metric, labels, calibrated, costs, priors, score_type, False, sample_weight)
    if not relative:
        return r - c
    return relative_calibration_loss(r, c)


def relative_calibration_loss(r: jax.Array, c: jax.Array) -> jax.Array:
    """Kernel: Ferrer (2022b) eq. 60, ``100 (r - c) / r`` for the raw and calibrated EPSRs ``r``, ``c`` (0 when ``r = 0``)."""
    # An infinite raw XE (a true-class posterior of 0) that calibration makes finite is a 100% loss.
    finite = jnp.isfinite(r)
    rel = 100.0 * (r - c) / jnp.where((r > 0) & finite, r, 1.0)
    return jnp.where(finite, jnp.where(r > 0, rel, 0.0), jnp.where(jnp.isfinite(c), 100.0, jnp.nan))


class CalibrationDiagnosis(NamedTuple):
    """Raw and calibrated EPSR and the calibration loss (Ferrer 2022b, §4.2)."""

    metric: str
    protocol: str
    raw: jax.Array
    calibrated: jax.Array
    absolute_loss: jax.Array  # eq. 59
    relative_loss: jax.Array  # eq. 60, in percent
    calibrated_scores: jax.Array
    calibrator: Calibrator


@dataclass(frozen=True, eq=False)
class CrossValidation:
    """Protocol of :func:`diagnose`: calibrate each of ``num_folds`` stratified folds with a calibrator fitted on
    the other folds (Ferrer 2022b, §4.2.1, as :func:`calibrate_cross_validated`).

    Attributes:
      key: the ``jax.random`` key that draws the folds (required: the folds are random).
      num_folds: the number of folds, >= 2.

    Checked when made (:class:`~ecjax.InputError` naming the field).  Compared by identity (it holds an array).
    """

    key: jax.Array
    num_folds: int = 5

    def __post_init__(self):
        object.__setattr__(self, "key", v.as_key(self.key))
        object.__setattr__(self, "num_folds", v.as_scalar(self.num_folds, "num_folds", integer=True, low=2))


@dataclass(frozen=True, eq=False)
class HeldOut:
    """Protocol of :func:`diagnose`: calibrate with a calibrator fitted on separate training data (Ferrer (2022b)
    §4.2.1, as :func:`calibrate_held_out`).

    Attributes:
      train_scores, train_labels: the training data of the calibrator, of the ``score_type`` of the scores
        diagnosed; the same number of samples.

    Checked when made (:class:`~ecjax.InputError` naming the field).  Compared by identity (it holds arrays).
    """

    train_scores: ArrayLike
    train_labels: ArrayLike

    def __post_init__(self):
        s = v.as_array(self.train_scores, "train_scores", min_ndim=1)
        y = v.as_array(self.train_labels, "train_labels", min_ndim=1)
        v.check_same_length("train_scores", s, "train_labels", y, axis_a=0, axis_b=0)


def _check_protocol(protocol):
    if not (isinstance(protocol, (CrossValidation, HeldOut)) or (isinstance(protocol, str)
                                                                  and protocol == "train_on_test")):
        raise v.InputError(
            f"`protocol` must be calibration.CrossValidation(key, num_folds=5), calibration.HeldOut(train_scores, "
            f"train_labels) or 'train_on_test' (optimistic), got {protocol!r}")


def calibrate(scores: ArrayLike, labels: ArrayLike, *, protocol: CrossValidation | HeldOut | str,
              sample_weight: ArrayLike | None = None, **fit_kwargs: Any) -> CalibrationResult:
    """Calibrated ``scores`` under ``protocol``: :class:`CrossValidation` (:func:`calibrate_cross_validated`),
    :class:`HeldOut` (:func:`calibrate_held_out`, fitted on its own unweighted data) or ``"train_on_test"``
    (:func:`calibrate_train_on_test`, optimistic).  ``fit_kwargs`` go to the protocol's function and :func:`fit`.
    """
    _check_protocol(protocol)
    if isinstance(protocol, CrossValidation):
        return calibrate_cross_validated(scores, labels, key=protocol.key, num_folds=protocol.num_folds,
                                         sample_weight=sample_weight, **fit_kwargs)
    if isinstance(protocol, HeldOut):
        return calibrate_held_out(protocol.train_scores, protocol.train_labels, scores, **fit_kwargs)
    return calibrate_train_on_test(scores, labels, sample_weight=sample_weight, **fit_kwargs)


def diagnose(scores: ArrayLike, labels: ArrayLike, *, protocol: CrossValidation | HeldOut | str, metric: str = "xe",
             costs: ArrayLike | None = None, priors: ArrayLike | None = None, score_type: str = "log_posteriors",
             normalize: bool = False, sample_weight: ArrayLike | None = None,
             **fit_kwargs: Any) -> CalibrationDiagnosis:
    """One-call calibration diagnosis: how much of the EPSR is miscalibration?

    Calibrates ``scores`` under ``protocol`` (Ferrer 2022b, §4.2.1):
    :class:`CrossValidation` ``(key, num_folds=5)`` (:func:`calibrate_cross_validated`),
    :class:`HeldOut` ``(train_scores, train_labels)`` (:func:`calibrate_held_out`), or
    ``"train_on_test"`` (:func:`calibrate_train_on_test`, optimistic), and
    reports the raw EPSR, the calibrated EPSR (``EPSRemin``), and the
    absolute and relative calibration loss (Ferrer 2022b, eqs. 59-60).  A large
    relative loss says a calibration stage would help; a small one with a
    large EPSR says the classifier itself must improve.

    ``normalize`` reports the EPSRs normalized by the naive system (the
    relative loss is the same either way; the absolute loss is then in
    normalized units).  ``priors`` are used for both fitting and evaluation.
    ``sample_weight`` (frequency weights of ``scores``/``labels``) weights
    the EPSRs and, under cross-validation and train-on-test, the fit; a
    held-out calibrator is fitted on its own (unweighted) training data.
    ``fit_kwargs`` (``method="affine"`` by default, ``settings``, and for
    cross-validation ``groups``) go to the protocol's function and
    :func:`fit`.  ``CalibrationDiagnosis.protocol`` names the protocol
    (``"cross_validation"``, ``"held_out"`` or ``"train_on_test"``).
    """
    _check_protocol(protocol)
    metric = epsr_metric(metric, costs)
    if CALIBRATORS[v.check_choice(fit_kwargs.get("method", "affine"), "method", METHODS)].output_type == "llr":
        raise v.InputError("diagnose works on posteriors; for LLR calibration use fit(..., method='llr') and "
                           "calibration_loss(..., score_type='llr')")
    res = calibrate(scores, labels, protocol=protocol, priors=priors, score_type=score_type,
                    sample_weight=sample_weight, **fit_kwargs)
    raw = _epsr(metric, labels, scores, costs, priors, score_type, normalize, sample_weight)
    calv = _epsr(metric, labels, res.scores, costs, priors, "log_posteriors", normalize, sample_weight)
    absolute = raw - calv
    relative = relative_calibration_loss(raw, calv)
    return CalibrationDiagnosis(metric, res.protocol, raw, calv, absolute, relative, res.scores, res.calibrator)
