"""Proper scoring rules of the posteriors: cross-entropy and Brier score (Ferrer 2022b, §4.1, eqs. 52-57).

Each is the per-class average of a loss, weighted by the priors
(:func:`class_weights`), optionally divided by that of the naive system
that outputs the priors (Ferrer 2022b, §4.1.2).

The Brier score's convention: ecjax's (and psrcal's) squared error of a
sample is the *mean* over the ``K`` classes, ``(1/K) sum_i (s_i - [y = i])^2``
(Ferrer 2022b, eq. 57); Brier (1950), most papers and scikit-learn >= 1.7 for
three or more classes take the *sum*, ``K`` times as large
(``brier(..., over_classes="sum")``).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.scores.inputs import check_normalizable, posterior_inputs, scores_ok, validated_sample_weight, weights_ok


def class_weights(n_i: jax.Array, priors: ArrayLike) -> jax.Array:
    """Kernel: per-class sample weights ``P_i / N_i`` (Ferrer 2022b, eqs. 53-54, 57).

    With them every EPSR is ``sum_n w_{y_n} C*(y_n, s_n)``: the per-class
    average of the loss weighted by the (deployment) priors.  A class with no
    samples gets weight 0.
    """
    return jnp.where(n_i > 0, priors / jnp.where(n_i > 0, n_i, 1), 0.0)


def cross_entropy_kernel(labels: jax.Array, log_post: jax.Array, weights: jax.Array) -> jax.Array:
    """Kernel: ``-sum_n w_n log s_{y_n}(x_n)`` (Ferrer 2022b, eq. 53).

    ``log_post`` ``(..., N, K)``; ``weights`` ``(N,)``.  Works on the log
    posteriors directly, so a true-class posterior of 0 (``-inf``) gives
    ``+inf`` and never NaN; samples with weight 0 contribute 0 even then.
    """
    idx = jnp.broadcast_to(labels[:, None], log_post.shape[:-1] + (1,))
    true_lp = jnp.take_along_axis(log_post, idx, axis=-1)[..., 0]
    return jnp.sum(jnp.where(weights > 0, -weights * true_lp, 0.0), axis=-1)


def brier_kernel(labels: jax.Array, log_post: jax.Array, weights: jax.Array) -> jax.Array:
    """Kernel: ``sum_n w_n (1/K) sum_i (s_i(x_n) - [y_n = i])^2`` (Ferrer 2022b, eq. 57)."""
    k = log_post.shape[-1]
    sq = jnp.sum((jnp.exp(log_post) - jax.nn.one_hot(labels, k, dtype=log_post.dtype)) ** 2, axis=-1) / k
    return jnp.sum(weights * sq, axis=-1)


def naive_cross_entropy(priors: jax.Array) -> jax.Array:
    """XE of the naive system that outputs the priors: ``-sum_i P_i log P_i``."""
    return -jnp.sum(jnp.where(priors > 0, priors * jnp.log(jnp.where(priors > 0, priors, 1.0)), 0.0), -1)


def naive_brier(priors: jax.Array) -> jax.Array:
    """Brier score of the naive system that outputs the priors: ``(1/K) sum_i P_i (1 - P_i)``."""
    return jnp.sum(priors * (1.0 - priors), -1) / priors.shape[-1]


@partial(jax.jit, static_argnames=("rule", "normalize"))
def _psr(labels, log_post, p, n_i, sample_weight=None, *, rule, normalize):
    w = class_weights(n_i, p)[labels]
    if sample_weight is not None:
        w = w * sample_weight  # P_i u_n / W_i: n_i holds the class weight totals W_i
    if rule == "xe":
        value = cross_entropy_kernel(labels, log_post, w)
        return value / naive_cross_entropy(p) if normalize else value
    value = brier_kernel(labels, log_post, w)
    return value / naive_brier(p) if normalize else value


# How the Brier score's squared errors of one sample combine over the classes: their mean (psrcal, Ferrer 2022b,
# eq. 57) or their sum (Brier 1950; scikit-learn >= 1.7 for K >= 3).
BRIER_OVER_CLASSES = ("mean", "sum")


def _psr_public(rule, labels, scores, priors, score_type, normalize, sample_weight=None):
    sample_weight = validated_sample_weight(labels, sample_weight)
    labels, log_post, p, n_i = posterior_inputs(labels, scores, priors, score_type, sample_weight)
    naive = naive_cross_entropy(p) if rule == "xe" else naive_brier(p)
    if normalize:
        check_normalizable(naive, "cross-entropy" if rule == "xe" else "Brier score")
    out = _psr(labels, log_post, p, n_i, sample_weight, rule=rule, normalize=bool(normalize))
    if v.any_traced(labels, log_post, p, sample_weight):
        ok = scores_ok(labels, log_post, n_i, p, priors is not None) & weights_ok(sample_weight)
        out = v.nan_where_invalid(out, ok & (naive > 0) if normalize else ok)
    return out, log_post.shape[-1]


def cross_entropy(labels: ArrayLike, scores: ArrayLike, *, priors: ArrayLike | None = None,
                  score_type: str = "log_posteriors", normalize: bool = False,
                  sample_weight: ArrayLike | None = None) -> jax.Array:
    """Cross-entropy (empirical expected logarithmic loss) of the scores.

    ``XE = -sum_i (P_i / N_i) sum_{n: y_n = i} log s_i(x_n)`` (Ferrer (2022b)
    eqs. 52-54): the per-class average of ``-log`` of the true-class
    posterior, weighted by the priors.  Computed from log-posteriors, so a
    posterior of exactly 0 for the true class (``-inf``) gives ``+inf`` (not
    NaN) and LLRs of +-1e4 are exact.

    Args:
      labels: ``(N,)`` true classes.
      scores: ``(N, K)`` or ``(S, N, K)`` scores (``(..., N)`` for ``"llr"``);
        ``-inf`` is allowed (a zero probability), NaN and ``+inf`` are not.
      priors: evaluation priors ``P_i`` (default: data priors).  For
        ``"llr"``/``"log_likelihoods"`` they also turn scores into posteriors
        (required then).
      score_type: ``"log_posteriors"`` (default), ``"logits"``, ``"llr"`` or
        ``"log_likelihoods"``.
      normalize: divide by the XE of the naive system that outputs the priors,
        ``-sum_i P_i log P_i`` (Ferrer 2022b, §4.1.2); values above 1 are worse than
        that system.  Same as ``psrcal.losses.LogLoss(norm=True)``.
      sample_weight: optional ``(N,)`` non-negative weights (scikit-learn's
        meaning): ``N_i`` becomes the class weight total ``W_i`` and each
        sample's loss is multiplied by its weight, ``XE = -sum_i (P_i / W_i)
        sum_{n: y_n = i} u_n log s_i(x_n)``; with data priors ``P_i = W_i /
        W`` this is ``sklearn.metrics.log_loss(..., sample_weight=)``.  An
        integer weight ``k`` is ``k`` copies of the sample.

    Returns:
      The XE (in nats), one per system.

    Example:
      >>> float(cross_entropy([0, 1], jnp.log(jnp.array([[0.5, 0.5], [0.5, 0.5]]))))  # doctest: +ELLIPSIS
      0.693...
    """
    return _psr_public("xe", labels, scores, priors, score_type, normalize, sample_weight)[0]


def brier(labels: ArrayLike, scores: ArrayLike, *, priors: ArrayLike | None = None, score_type: str = "log_posteriors",
          normalize: bool = False, sample_weight: ArrayLike | None = None, over_classes: str = "mean") -> jax.Array:
    """Brier score ``sum_i (P_i/N_i) sum_{n: y_n=i} (1/K) sum_j (s_j(x_n) - [j = i])^2``.

    Ferrer (2022b) eqs. 56-57.  The convention: by default a sample's squared
    error is the *mean* over the ``K`` classes (the ``1/K`` above), as
    ``psrcal.losses.Brier``; ``over_classes="sum"`` drops the ``1/K`` and
    gives the *sum* over the classes, ``K`` times as large, as Brier (1950),
    most papers and ``sklearn.metrics.brier_score_loss`` (version >= 1.7) for
    ``(N, K)`` probabilities of ``K >= 3`` classes.  For ``K = 2`` the mean
    over the classes is the squared error of the class-1 probability,
    ``sklearn.metrics.brier_score_loss(labels, p1, sample_weight=)`` (with
    data priors; its default in every version), and the sum is twice that.
    ``normalize`` divides by the Brier score of the naive system that
    outputs the priors, ``(1/K) sum_i P_i (1 - P_i)`` (or ``K`` times that
    with ``"sum"``), so the normalized score is the same in both conventions.
    Arguments as in :func:`cross_entropy`.

    Example:
      >>> p = jnp.log(jnp.array([[0.8, 0.2], [0.4, 0.6]]))
      >>> round(float(brier([0, 1], p)), 4), round(float(brier([0, 1], p, over_classes="sum")), 4)
      (0.1, 0.2)
    """
    v.check_choice(over_classes, "over_classes", BRIER_OVER_CLASSES)
    out, k = _psr_public("brier", labels, scores, priors, score_type, normalize, sample_weight)
    # The naive system's score scales by K as well, so the normalized value is the same in both conventions.
    return out * k if over_classes == "sum" and not normalize else out
