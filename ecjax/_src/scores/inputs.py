"""The inputs of the score functions, made canonical once: labels, posteriors or class-1 log-odds, weights, priors.

Every function of :mod:`ecjax.scores` starts here.  These sit above
:mod:`ecjax.inputs` (its array-level checks) because they need the class
counts and the evaluation priors (:mod:`ecjax.confusion`,
:mod:`ecjax.metrics`) and the posteriors of the scores
(:mod:`ecjax.decisions`).  The ``*_ok`` masks are the NaN contract of
:mod:`ecjax.inputs` for what cannot be checked under ``jit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.confusion import class_counts, confusion_counts
from ecjax._src.decisions import class_one_log_odds_kernel, log_posteriors_kernel
from ecjax._src.metrics import resolve_priors

# The expected proper scoring rules by name: cross-entropy, Brier score, EC of Bayes decisions (Ferrer 2022b, §4.2).
EPSR_METRICS = ("xe", "brier", "bayes_ec")


def labels_and_scores(labels: ArrayLike, scores: ArrayLike, priors: ArrayLike | None,
                      score_type: str) -> tuple[jax.Array, jax.Array, jax.Array, int]:
    s, log_p = v.scores_and_log_priors(scores, None if score_type in v.POSTERIOR_TYPES else priors, score_type)
    k = log_p.shape[-1]
    y = v.as_label_vector(labels, num_classes=k, scores=s, sample_axis=-1 if score_type == "llr" else -2)
    return y, s, log_p, k


def one_system_scores(scores: np.ndarray, score_type: str) -> np.ndarray:
    """The scores of one system, as a file holds them, in the shape the library takes: ``(N,)`` for ``"llr"``
    (one log-likelihood ratio per sample), else ``(N, K)`` (a column per class).

    One column of class-1 probabilities of a binary problem (scikit-learn's
    ``predict_proba(X)[:, 1]``, which its binary metrics take as they are)
    becomes the rows ``[1 - p, p]``.  Any other shape is refused with what
    the shapes mean.
    """
    arr = np.asarray(scores)
    if score_type == "llr":
        if arr.ndim != 1:
            said = v.mentioning(f"{{llr}} takes one log-likelihood ratio per sample, shape (N,), got shape "
                                f"{arr.shape}: scores with a column per class need the type of their columns as "
                                "{score_type} (log_likelihoods, log_posteriors, logits or probabilities)",
                                llr=("score_type", "llr"), score_type=("score_type", None))
            raise v.InputError(said["problem"], **said)
        return arr
    if arr.ndim == 1 and score_type == "probabilities":
        if not np.all((arr >= 0) & (arr <= 1)):  # NaN fails too
            raise v.InputError(f"`scores` of one column are the class-1 probabilities of a binary problem, in "
                               f"[0, 1]; got values from {np.nanmin(arr):.4g} to {np.nanmax(arr):.4g}")
        return np.stack([1 - arr, arr], axis=-1)
    if arr.ndim == 1:
        said = v.mentioning(
            f"of one column (shape {arr.shape}) hold one number per sample: give {{llr}} for log-likelihood ratios, "
            "or {probabilities} for the class-1 probabilities of a binary problem (scikit-learn's "
            "predict_proba(X)[:, 1]); with {given} scores have a column per class, shape (N, K)",
            llr=("score_type", "llr"), probabilities=("score_type", "probabilities"), given=("score_type", score_type))
        # Said of a file, the problem names its subject: "s.npy: the scores of one column ...".
        raise v.InputError(f"`scores` {said['problem']}", argument="scores", problem=f"the scores {said['problem']}",
                           template=f"the scores {said['template']}", mentions=said["mentions"])
    if arr.ndim != 2:
        raise v.InputError(f"`scores` must be the scores of one system, shape (N, K) (a column per class), got "
                           f"shape {arr.shape}")
    return arr


def check_weighted_classes(labels: ArrayLike, sample_weight: ArrayLike | None, num_classes: int,
                           priors: ArrayLike | None) -> None:
    """Weights must leave something to average: any weight with data priors, each prior-weighted class otherwise."""
    if sample_weight is None or v.any_traced(labels, sample_weight, priors):
        return
    v.check_some_weight(sample_weight)
    if priors is not None:
        # A class absent from `labels` is the priors' check; one present with weight 0 only, this one's.
        p = np.asarray(v.as_priors(priors, num_classes=num_classes))
        present = np.bincount(np.asarray(labels), minlength=num_classes) > 0
        v.check_classes_present(labels, sample_weight, num_classes, classes=np.flatnonzero(present & (p > 0)),
                                why="it has a non-zero prior in `priors`, so its weighted average is undefined")


def epsr_metric(metric: str, costs: ArrayLike | None) -> str:
    """``metric``, one of :data:`EPSR_METRICS`, given with what it needs: ``"bayes_ec"`` needs ``costs``."""
    v.check_choice(metric, "metric", EPSR_METRICS)
    if metric == "bayes_ec" and costs is None:
        raise v.InputError("metric='bayes_ec' needs `costs` (the cost matrix of the Bayes decisions)")
    return metric


def resolved_variant(variant: str, num_classes: int, choices: Sequence[str]) -> str:
    """The binning variant of a calibration measure for ``num_classes`` classes, ``variant`` being one of
    ``choices``: ``"auto"`` is ``"binary"`` for K = 2 and ``"top_label"`` otherwise; ``"binary"`` needs K = 2."""
    if variant == "binary" and num_classes != 2:
        others = " or ".join(repr(c) for c in choices if c not in ("auto", "binary"))
        raise v.InputError(f"variant='binary' needs K = 2 classes, got K = {num_classes}; use variant={others}")
    if variant == "auto":
        return "binary" if num_classes == 2 else "top_label"
    return variant


def check_padded(padded: bool, s: jax.Array, labels: ArrayLike, score_type: str) -> bool:
    """``padded`` as a flag; ``padded=False`` (one point per distinct threshold, a length that depends on the data)
    only for one system's concrete scores."""
    padded = v.as_flag(padded, "padded")
    batched = s.ndim != (1 if score_type == "llr" else 2)
    if not padded and (batched or v.any_traced(labels, s)):
        why = "scores with batch axes" if batched else "traced inputs (inside jit/vmap)"
        raise v.InputError(f"`padded=False` gives one point per distinct threshold, a length that depends on the "
                           f"data; for {why} pass padded=True (one point per sample, equal length for every system)")
    return padded


def checked_threshold_probabilities(threshold_probabilities: ArrayLike) -> jax.Array | np.ndarray:
    """The threshold probabilities ``p_t`` of a decision curve, a number or ``(T,)``: as given when traced (the NaN
    contract marks those outside ``(0, 1)``), else a float64 array, not empty, each in ``(0, 1)``."""
    p = v.check_shape(v.as_array(threshold_probabilities, "threshold_probabilities"), "threshold_probabilities",
                      "()", "(T,)", why=" (a number or a 1-D array)")
    if v.is_tracer(p):
        return p
    a = v.check_numbers(np.asarray(p), "threshold_probabilities", finite=False).astype(np.float64)
    if a.size == 0:
        raise v.InputError("`threshold_probabilities` is empty: give at least one threshold probability")
    # On the values as given, which the message shows.
    v.check_numbers(threshold_probabilities, "threshold_probabilities", low=0.0, high=1.0, strict=True)
    return a


def increasing_alphas(alphas: ArrayLike) -> np.ndarray:
    """``alphas`` as a float64 ``(A,)`` array of positive finite values, strictly increasing (a sweep of cost
    ratios)."""
    a = np.asarray(v.as_array(alphas, "alphas", min_ndim=1), dtype=np.float64)
    if a.ndim != 1 or np.any(~np.isfinite(a)) or np.any(a <= 0) or np.any(np.diff(a) <= 0):
        raise v.InputError("`alphas` must be a 1-D increasing array of positive finite values")
    return a


def checked_beta(beta: float, metric: str) -> Any:
    """``beta`` of F-beta, a positive number, given only with ``metric="f_beta"`` (1.0 otherwise)."""
    # A traced beta cannot be told from the default 1.0, so with another metric it is refused.
    b = v.as_scalar(beta, "beta", low=0.0, strict=True, traced=True)
    if metric != "f_beta" and (v.is_tracer(b) or b != 1.0):
        raise v.InputError(f"`beta` is only used with metric='f_beta', got beta={beta!r} with metric={metric!r}")
    return b

def weights_ok(sample_weight: jax.Array | None) -> jax.Array:
    """Traced-input mask of valid weights (the NaN contract): finite, non-negative, some positive."""
    if sample_weight is None:
        return jnp.asarray(True)
    return jnp.all(jnp.isfinite(sample_weight) & (sample_weight >= 0)) & (jnp.sum(sample_weight) > 0)


def evaluation_priors(labels: jax.Array, k: int, priors: ArrayLike | None,
                      sample_weight: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """Class counts (weighted: class weight totals) and the evaluation priors they give."""
    check_weighted_classes(labels, sample_weight, k, priors)
    counts = confusion_counts(labels, labels, sample_weight, num_classes=k, num_decisions=k)
    return counts, resolve_priors(counts, priors)


def without_zero_weights(labels: jax.Array, s: jax.Array, sample_weight: jax.Array | None,
                         sample_axis: int = -1) -> tuple[jax.Array, jax.Array, jax.Array | None]:
    """Concrete input: leave out samples of weight 0, as if absent (as scikit-learn's curves do).

    Otherwise their scores would add cuts (thresholds) that no sample with
    weight moves; under ``jit`` they stay, with the same rates at every cut.
    ``sample_axis`` is the sample axis of ``s`` (``-2`` for ``(..., N, K)`` rows).
    """
    if sample_weight is None or v.any_traced(labels, s, sample_weight):
        return labels, s, sample_weight
    keep = np.asarray(sample_weight) > 0
    if keep.all():
        return labels, s, sample_weight
    idx = v.to_device(np.flatnonzero(keep))
    return labels[idx], jnp.take(s, idx, axis=sample_axis), sample_weight[idx]


def posterior_inputs(labels: ArrayLike, scores: ArrayLike, priors: ArrayLike | None, score_type: str,
                     sample_weight: jax.Array | None = None) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Validated ``(labels, log_posteriors, evaluation priors, class counts)``.

    For ``"llr"`` and ``"log_likelihoods"`` the priors also turn scores into
    posteriors (and are required); for posterior-type scores they are only
    the evaluation (deployment) priors.  With ``sample_weight`` (already
    validated by :func:`~ecjax._src.inputs.as_sample_weight`) the class counts are the classes'
    weight totals, and the data priors their fractions.
    """
    a, neg_inf = v.as_log_domain_scores(scores, score_type)
    likelihood_type = score_type in v.LIKELIHOOD_TYPES
    s, log_p = v.scores_and_log_priors(a, priors if likelihood_type else None, score_type)
    s = v.restore_neg_inf(s, neg_inf)
    k = log_p.shape[-1]
    y = v.as_label_vector(labels, num_classes=k, scores=s, sample_axis=-1 if score_type == "llr" else -2)
    if sample_weight is not None:
        v.check_same_length("labels", y, "sample_weight", sample_weight)
    check_weighted_classes(y, sample_weight, k, priors)
    counts = confusion_counts(y, y, sample_weight, num_classes=k, num_decisions=k)
    p = resolve_priors(counts, priors)
    log_post = log_posteriors_kernel(s, log_p, score_type)
    return y, log_post, p, class_counts(counts)


def scores_ok(labels: jax.Array, log_post: jax.Array, n_i: jax.Array | None = None, p: jax.Array | None = None,
              priors_given: bool = False) -> jax.Array:
    """Traced-input mask (the NaN contract of :mod:`ecjax.inputs`), one entry per system.

    Invalid labels arrive as ``-1`` from :func:`~ecjax._src.inputs.as_index_array`; NaN (or ``+inf``)
    scores give NaN log-posteriors; deployment priors must be a distribution that gives no
    weight to a class absent from the data.
    """
    ok = jnp.all(labels >= 0) & ~jnp.any(jnp.isnan(log_post), axis=(-2, -1))
    if priors_given:
        assert n_i is not None and p is not None, "priors_given needs the class counts and the priors"
        ok = ok & jnp.all(p >= 0) & (jnp.abs(jnp.sum(p) - 1.0) <= v.SUM_TOL) & ~jnp.any((n_i == 0) & (p > 0))
    return ok


def check_normalizable(naive: ArrayLike, what: str) -> None:
    if not v.is_tracer(naive) and np.any(np.asarray(naive) <= 0):
        raise v.InputError(
            f"the naive {what} is 0 (the priors put all mass on one class, e.g. a single-class label set): "
            "the normalized value is undefined; use normalize=False"
        )


def binary_scores(scores: ArrayLike, score_type: str, *, order_only: bool = False) -> jax.Array:
    """Validated binary scores ``(..., N, 2)`` (``(..., N)`` for ``"llr"``), as given (not yet log-odds).

    ``order_only`` (AUC, EER: only the order counts, no threshold is returned)
    centres float64 LLRs on their median before the float32 cast, so a common
    offset does not merge them into ties.
    """
    a, neg_inf = v.as_log_domain_scores(scores, score_type)
    if order_only and score_type == "llr":
        if isinstance(a, v.Scores):  # checked once: its float64 LLRs centred as the file's
            return v.ranking_llr_values(a)
        a = v.centred_llr(a, neg_inf)
    return v.check_binary_scores(v.restore_neg_inf(v.as_scores(a, score_type=score_type), neg_inf), score_type)


def binary_labels_and_weights(labels: ArrayLike, s: jax.Array, score_type: str, sample_weight: ArrayLike | None, *,
                              what: str, drop_zero_weights: bool, one_class: str = "a single class has nothing to rank"
                              ) -> tuple[jax.Array, jax.Array, jax.Array | None]:
    """Validated ``(labels, s, sample_weight)`` for validated scores ``s``: binary labels ``(N,)`` matching its
    sample axis, samples of both classes and, with weights, a positive weight total in each (concrete input).

    ``what`` names the measure in the messages, ``one_class`` says why one
    class is not enough.  With ``drop_zero_weights`` (concrete input only)
    samples of weight 0 are left out (:func:`without_zero_weights`).
    """
    sample_axis = -1 if score_type == "llr" else -2
    labels = v.as_label_vector(labels, num_classes=2, scores=s, sample_axis=sample_axis,
                               upper_is="binary labels are 0 or 1")
    v.check_classes_present(labels, None, 2, why=f"{what} needs samples of both classes ({one_class})")
    if sample_weight is None:
        return labels, s, None
    w = v.as_sample_weight(sample_weight, labels)
    v.check_classes_present(labels, w, 2, why=f"{what} needs weight in both classes")
    if not drop_zero_weights:
        return labels, s, w
    return without_zero_weights(labels, s, w, sample_axis=sample_axis)


def binary_inputs(labels: ArrayLike, scores: ArrayLike, score_type: str, sample_weight: ArrayLike | None, *,
                  what: str, drop_zero_weights: bool,
                  order_only: bool = False) -> tuple[jax.Array, jax.Array, jax.Array | None]:
    """Validated ``(labels, scores, sample_weight)`` of a binary ranking measure (:func:`binary_scores`,
    :func:`binary_labels_and_weights`); the scores keep their batch axes and their type."""
    s = binary_scores(scores, score_type, order_only=order_only)
    return binary_labels_and_weights(labels, s, score_type, sample_weight, what=what,
                                     drop_zero_weights=drop_zero_weights)


def binary_log_odds_inputs(labels: ArrayLike, scores: ArrayLike, score_type: str, sample_weight: ArrayLike | None, *,
                           drop_zero_weights: bool,
                           order_only: bool = False) -> tuple[jax.Array, jax.Array, jax.Array | None]:
    """:func:`binary_inputs` of one system, its scores as class-1 log-odds ``s`` ``(N,)`` (the LLR as is).

    Only the ranking matters to ROC, AUC and EER, so no priors are needed:
    ``"log_likelihoods"`` give ``l_1 - l_0`` and posterior-type scores
    ``log P(1|x) - log P(0|x)``.
    """
    y, s, w = binary_inputs(labels, scores, score_type, sample_weight, what="ROC, AUC or EER",
                            drop_zero_weights=drop_zero_weights, order_only=order_only)
    return y, v.check_one_system(class_one_log_odds_kernel(s, score_type), 1), w


def binary_labels_ok(labels: jax.Array) -> jax.Array:
    """Traced-input mask of binary labels: all in {0, 1} (invalid ones arrive as -1), both classes present."""
    n1 = jnp.sum(labels == 1)
    return jnp.all((labels == 0) | (labels == 1)) & (n1 > 0) & (n1 < labels.shape[0])


def binary_weights_ok(labels: jax.Array, sample_weight: jax.Array | None) -> jax.Array:
    """Traced-input mask of weights: :func:`weights_ok`, and a positive total in each class (True without)."""
    if sample_weight is None:
        return jnp.asarray(True)
    w1 = jnp.sum(jnp.where(labels == 1, sample_weight, 0.0))
    w0 = jnp.sum(jnp.where(labels == 0, sample_weight, 0.0))
    return weights_ok(sample_weight) & (w1 > 0) & (w0 > 0)


def binary_ok(labels: jax.Array, s: jax.Array, sample_weight: jax.Array | None = None) -> jax.Array:
    """Traced-input mask of binary ranking inputs, one entry per system of the log-odds ``s`` ``(..., N)``:
    :func:`binary_labels_ok`, no NaN score, :func:`binary_weights_ok`."""
    return binary_labels_ok(labels) & ~jnp.any(jnp.isnan(s), axis=-1) & binary_weights_ok(labels, sample_weight)


def class1_fraction(labels: ArrayLike, sample_weight: ArrayLike | None) -> float:
    """Host float: the fraction of class-1 samples (of the weight total, with ``sample_weight``)."""
    is1 = np.asarray(labels) == 1
    if sample_weight is None:
        return float(np.mean(is1))
    w = np.asarray(sample_weight, np.float64)
    return float(np.sum(w * is1) / np.sum(w))


def class_frequencies(labels: ArrayLike, num_classes: int, sample_weight: ArrayLike | None = None) -> np.ndarray:
    """Host float64: the (weighted) class frequencies ``n_i / N`` of a label vector, the priors wherever no
    deployment priors are given."""
    n_i = np.bincount(np.asarray(labels), weights=None if sample_weight is None else np.asarray(sample_weight),
                      minlength=num_classes)
    return n_i / n_i.sum()


def priors_or_frequencies(priors: ArrayLike | None, labels: ArrayLike, num_classes: int,
                          sample_weight: ArrayLike | None = None) -> ArrayLike:
    """The deployment ``priors`` where given, else the labels' :func:`class_frequencies`."""
    return priors if priors is not None else class_frequencies(labels, num_classes, sample_weight)


def likelihood_priors(score_type: str, priors: ArrayLike | None, labels: ArrayLike, num_classes: int,
                      sample_weight: ArrayLike | None = None) -> ArrayLike | None:
    """The priors that turn likelihood-type scores into posteriors (:func:`ecjax.decisions.log_posteriors`): the
    deployment priors, else the test set's class frequencies; ``None`` for posterior-type scores."""
    if score_type not in v.LIKELIHOOD_TYPES:
        return None
    return priors_or_frequencies(priors, labels, num_classes, sample_weight)


def score_priors(score_type: str, priors: ArrayLike | None, labels: ArrayLike, num_classes: int,
                 sample_weight: ArrayLike | None = None) -> ArrayLike | None:
    """The ``priors=`` of the score-based functions: the deployment priors for every score type (``None``: the
    data's), given explicitly as the class frequencies where likelihoods need priors to become posteriors."""
    return priors if score_type not in v.LIKELIHOOD_TYPES else likelihood_priors(
        score_type, priors, labels, num_classes, sample_weight)


def validated_sample_weight(labels: ArrayLike, sample_weight: ArrayLike | None) -> jax.Array | None:
    """``sample_weight`` validated against the length of ``labels`` (``None`` stays ``None``)."""
    if sample_weight is None:
        return None
    return v.as_sample_weight(sample_weight, v.as_array(labels, "labels", min_ndim=1))
