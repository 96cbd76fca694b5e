"""The inputs of the score functions, made canonical once: labels, posteriors or class-1 log-odds, weights, priors.

Every function of :mod:`ecjax.scores` starts here.  These sit above
:mod:`ecjax.inputs` (its array-level checks) because they need the class
counts and the evaluation priors (:mod:`ecjax.confusion`,
:mod:`ecjax.metrics`) and the posteriors of the scores
(:mod:`ecjax.decisions`).  The ``*_ok`` masks are the NaN contract of
:mod:`ecjax.inputs` for what cannot be checked under ``jit``.
"""

from __future__ import annotations

import numpy as np

import jax.numpy as jnp

from ecjax import inputs as v
from ecjax.confusion import class_counts, confusion_counts
from ecjax.decisions import class_one_log_odds_kernel, log_posteriors_kernel
from ecjax.metrics import resolve_priors


def labels_and_scores(labels, scores, priors, score_type):
    scores, log_p = v.scores_and_log_priors(scores, None if score_type in v.POSTERIOR_TYPES else priors, score_type)
    k = log_p.shape[-1]
    labels = v.as_index_array(labels, "labels", upper=k)
    n_axis = -1 if score_type == "llr" else -2
    v.check_same_length("labels", labels, "scores", scores, axis_b=n_axis)
    if labels.ndim != 1:
        raise v.InputError(f"`labels` must be one vector of N classes, got shape {labels.shape}")
    return labels, scores, log_p, k


def check_weighted_classes(labels, sample_weight, num_classes, priors):
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


def weights_ok(sample_weight):
    """Traced-input mask of valid weights (the NaN contract): finite, non-negative, some positive."""
    if sample_weight is None:
        return jnp.asarray(True)
    return jnp.all(jnp.isfinite(sample_weight) & (sample_weight >= 0)) & (jnp.sum(sample_weight) > 0)


def evaluation_priors(labels, k, priors, sample_weight=None):
    """Class counts (weighted: class weight totals) and the evaluation priors they give."""
    check_weighted_classes(labels, sample_weight, k, priors)
    counts = confusion_counts(labels, labels, sample_weight, num_classes=k, num_decisions=k)
    return counts, resolve_priors(counts, priors)


def without_zero_weights(labels, s, sample_weight):
    """Concrete input: leave out samples of weight 0, as if absent (as scikit-learn's curves do).

    Otherwise their scores would add cuts (thresholds) that no sample with
    weight moves; under ``jit`` they stay, with the same rates at every cut.
    """
    if sample_weight is None or v.any_traced(labels, s, sample_weight):
        return labels, s, sample_weight
    keep = np.asarray(sample_weight) > 0
    if keep.all():
        return labels, s, sample_weight
    keep = jnp.asarray(keep)
    return labels[keep], s[keep], sample_weight[keep]


def posterior_inputs(labels, scores, priors, score_type, sample_weight=None):
    """Validated ``(labels, log_posteriors, evaluation priors, class counts)``.

    For ``"llr"`` and ``"log_likelihoods"`` the priors also turn scores into
    posteriors (and are required); for posterior-type scores they are only
    the evaluation (deployment) priors.  With ``sample_weight`` (already
    validated by :func:`ecjax.inputs.as_sample_weight`) the class counts are the classes'
    weight totals, and the data priors their fractions.
    """
    a, neg_inf = v.as_log_domain_scores(scores, score_type)
    likelihood_type = score_type in v.LIKELIHOOD_TYPES
    s, log_p = v.scores_and_log_priors(a, priors if likelihood_type else None, score_type)
    s = v.restore_neg_inf(s, neg_inf)
    k = log_p.shape[-1]
    labels = v.as_index_array(labels, "labels", upper=k)
    if labels.ndim != 1:
        raise v.InputError(f"`labels` must be one vector of N classes, got shape {labels.shape}")
    v.check_same_length("labels", labels, "scores", s, axis_b=-1 if score_type == "llr" else -2)
    if sample_weight is not None:
        v.check_same_length("labels", labels, "sample_weight", sample_weight)
    check_weighted_classes(labels, sample_weight, k, priors)
    counts = confusion_counts(labels, labels, sample_weight, num_classes=k, num_decisions=k)
    p = resolve_priors(counts, priors)
    log_post = log_posteriors_kernel(s, log_p, score_type)
    return labels, log_post, p, class_counts(counts)


def scores_ok(labels, log_post, n_i=None, p=None, priors_given=False):
    """Traced-input mask (the NaN contract of :mod:`ecjax.inputs`), one entry per system.

    Invalid labels arrive as ``-1`` from :func:`ecjax.inputs.as_index_array`; NaN (or ``+inf``)
    scores give NaN log-posteriors; deployment priors must be a distribution that gives no
    weight to a class absent from the data.
    """
    ok = jnp.all(labels >= 0) & ~jnp.any(jnp.isnan(log_post), axis=(-2, -1))
    if priors_given:
        ok = ok & jnp.all(p >= 0) & (jnp.abs(jnp.sum(p) - 1.0) <= v.SUM_TOL) & ~jnp.any((n_i == 0) & (p > 0))
    return ok


def check_normalizable(naive, what):
    if not v.is_tracer(naive) and np.any(np.asarray(naive) <= 0):
        raise v.InputError(
            f"the naive {what} is 0 (the priors put all mass on one class, e.g. a single-class label set): "
            "the normalized value is undefined; use normalize=False"
        )


def binary_log_odds(labels, scores, score_type, *, need_both=True):
    """Validated ``(labels, s)`` with ``s`` the class-1 log-odds (or the LLR).

    Only the ranking matters to ROC, AUC and EER, so no priors are needed:
    ``"llr"`` is used as is, ``"log_likelihoods"`` gives ``l_1 - l_0`` and
    posterior-type scores give ``log P(1|x) - log P(0|x)``.
    """
    a, neg_inf = v.as_log_domain_scores(scores, score_type)
    s = v.restore_neg_inf(v.as_scores(a, score_type=score_type), neg_inf)
    if score_type != "llr" and s.shape[-1] != 2:
        raise v.InputError(f"binary scores are needed (K = 2), got shape {tuple(s.shape)}")
    s = class_one_log_odds_kernel(s, score_type)
    if s.ndim != 1:
        raise v.InputError(f"`scores` must be the scores of one system, got shape {tuple(s.shape)}")
    labels = v.as_index_array(labels, "labels", upper=2)
    v.check_same_length("labels", labels, "scores", s)
    if need_both and not v.is_tracer(labels):
        n1 = int(np.sum(np.asarray(labels)))
        if n1 == 0 or n1 == labels.shape[0]:
            raise v.InputError("`labels` has a single class: ROC, AUC and EER need samples of both classes")
    return labels, s


def binary_ok(labels, s, sample_weight=None):
    """Traced-input mask of ROC/AUC/EER inputs: valid labels, no NaN score, both classes present.

    With ``sample_weight``: valid weights, and each class with a positive weight total.
    """
    if sample_weight is not None:
        w1 = jnp.sum(jnp.where(labels == 1, sample_weight, 0.0))
        w0 = jnp.sum(jnp.where(labels == 0, sample_weight, 0.0))
        return (jnp.all((labels == 0) | (labels == 1)) & ~jnp.any(jnp.isnan(s)) & weights_ok(sample_weight)
                & (w1 > 0) & (w0 > 0))
    n1 = jnp.sum(labels == 1)
    return jnp.all((labels == 0) | (labels == 1)) & ~jnp.any(jnp.isnan(s)) & (n1 > 0) & (n1 < labels.shape[0])


def binary_inputs(labels, scores, score_type, sample_weight, *, drop_zero_weights):
    """:func:`binary_log_odds` plus validated weights ``(labels, s, sample_weight)``.

    Both classes need a positive weight total (checked on concrete input).
    """
    if sample_weight is None:
        labels, s = binary_log_odds(labels, scores, score_type)
        return labels, s, None
    labels, s = binary_log_odds(labels, scores, score_type, need_both=False)
    sample_weight = v.as_sample_weight(sample_weight, labels)
    v.check_classes_present(labels, sample_weight, 2, why="ROC, AUC and EER need weight in both classes")
    if drop_zero_weights:
        labels, s, sample_weight = without_zero_weights(labels, s, sample_weight)
    return labels, s, sample_weight


def class1_fraction(labels, sample_weight):
    """Host float: the fraction of class-1 samples (of the weight total, with ``sample_weight``)."""
    is1 = np.asarray(labels) == 1
    if sample_weight is None:
        return float(np.mean(is1))
    w = np.asarray(sample_weight, np.float64)
    return float(np.sum(w * is1) / np.sum(w))


def validated_sample_weight(labels, sample_weight):
    """``sample_weight`` validated against the length of ``labels`` (``None`` stays ``None``)."""
    if sample_weight is None:
        return None
    return v.as_sample_weight(sample_weight, v.as_array(labels, "labels", min_ndim=1))
