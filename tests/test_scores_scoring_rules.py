"""Proper scoring rules (``ecjax._src.scores.scoring_rules``: cross-entropy and Brier; Ferrer (2022b) §4.1).

References, never ecjax itself: ``psrcal`` (LogLoss, Brier, in float64) and closed forms written here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import expit, log_softmax

import jax
import jax.numpy as jnp

from ecjax import scores as S
from psrcal import losses as psr_losses

from conftest import DATASETS, _logpost64, load_dataset


def _psrcal(fn, log_post, labels, **kw):
    return float(fn(torch.tensor(log_post), torch.tensor(labels.astype(np.int64)), **kw))



# ------------------------------------------------------------- PSRs vs psrcal

@pytest.mark.parametrize("name", sorted(DATASETS))
def test_cross_entropy_and_brier_match_psrcal(name):
    labels, scores, score_type = load_dataset(name)
    lp = _logpost64(scores, score_type)
    k = lp.shape[1]
    skewed = np.linspace(1.0, 2.0, k)
    for priors in (None, np.full(k, 1.0 / k), skewed / skewed.sum()):
        ptorch = None if priors is None else torch.tensor(priors)
        for norm in (False, True):
            ref_xe = _psrcal(psr_losses.LogLoss, lp, labels, norm=norm, priors=ptorch)
            ref_br = _psrcal(psr_losses.Brier, lp, labels, norm=norm, priors=ptorch)
            xe = float(S.cross_entropy(labels, scores, score_type=score_type, priors=priors, normalize=norm))
            br = float(S.brier(labels, scores, score_type=score_type, priors=priors, normalize=norm))
            np.testing.assert_allclose(xe, ref_xe, rtol=1e-6, err_msg=f"XE {name} priors={priors} norm={norm}")
            np.testing.assert_allclose(br, ref_br, rtol=1e-6, err_msg=f"Brier {name} priors={priors} norm={norm}")


# ------------------------------------------------- the Brier convention: mean or sum over the classes

def _brier_sum_numpy(labels, probs, priors=None, weights=None):
    """Independent float64 Brier score, summed over the classes: each class's (weighted) average of
    ``sum_j (p_j - [y = j])^2``, weighted by the priors (the data's by default)."""
    k = probs.shape[1]
    w = np.ones(len(labels)) if weights is None else np.asarray(weights, np.float64)
    per_sample = np.sum((probs - np.eye(k)[labels]) ** 2, axis=1)
    totals = np.array([w[labels == i].sum() for i in range(k)])
    p = totals / totals.sum() if priors is None else priors
    return sum(p[i] * np.sum(w[labels == i] * per_sample[labels == i]) / totals[i] for i in range(k) if totals[i] > 0)


def test_brier_mean_over_classes_is_psrcal_and_sum_is_k_times_it():
    rng = np.random.default_rng(3)
    k, n = 5, 400
    labels = rng.integers(0, k, n)
    lp = log_softmax(rng.normal(size=(n, k)) * 2, axis=1)
    priors = np.linspace(1.0, 3.0, k) / np.linspace(1.0, 3.0, k).sum()
    for p in (None, priors):
        ref_mean = _psrcal(psr_losses.Brier, lp, labels, norm=False, priors=None if p is None else torch.tensor(p))
        np.testing.assert_allclose(float(S.brier(labels, lp, priors=p, over_classes="mean")), ref_mean, rtol=1e-6)
        np.testing.assert_allclose(float(S.brier(labels, lp, priors=p, over_classes="sum")),
                                   _brier_sum_numpy(labels, np.exp(lp), p), rtol=1e-6)
        # Normalized by the naive system's score in the same convention: the same number either way.
        np.testing.assert_allclose(float(S.brier(labels, lp, priors=p, normalize=True, over_classes="sum")),
                                   _psrcal(psr_losses.Brier, lp, labels, norm=True,
                                           priors=None if p is None else torch.tensor(p)), rtol=1e-6)


def test_binary_brier_sum_is_twice_sklearn_and_mean_is_sklearn():
    from sklearn.metrics import brier_score_loss

    rng = np.random.default_rng(4)
    n = 300
    labels = rng.integers(0, 2, n)
    p1 = expit(rng.normal(size=n) * 2 + labels)
    probs = np.stack([1 - p1, p1], 1)
    w = rng.uniform(0, 3, n)
    for weights in (None, w):
        ref = brier_score_loss(labels, p1, sample_weight=weights)  # scikit-learn < 1.7: binary only
        mean = float(S.brier(labels, probs, score_type="probabilities", sample_weight=weights))
        total = float(S.brier(labels, probs, score_type="probabilities", sample_weight=weights, over_classes="sum"))
        np.testing.assert_allclose(mean, ref, rtol=1e-5)
        np.testing.assert_allclose(total, 2 * ref, rtol=1e-5)
        np.testing.assert_allclose(total, _brier_sum_numpy(labels, probs, weights=weights), rtol=1e-5)


@pytest.mark.parametrize("bad", ["total", "SUM", None, 2])
def test_brier_over_classes_refuses_other_values(bad):
    from ecjax import InputError

    with pytest.raises(InputError, match="over_classes"):
        S.brier([0, 1], np.log([[0.5, 0.5], [0.5, 0.5]]), over_classes=bad)


def test_cross_entropy_zero_true_class_posterior_is_inf_not_nan():
    with np.errstate(divide="ignore"):
        lp = np.log(np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]))  # -inf entries
    assert float(S.cross_entropy([1, 0, 1], lp)) == np.inf
    # -inf only on wrong classes: finite, equal to the closed form.
    np.testing.assert_allclose(float(S.cross_entropy([0, 0, 1], lp)), np.log(2) / 3, rtol=1e-6)
    # A class with zero deployment prior contributes nothing, even with a -inf posterior.
    assert float(S.cross_entropy([1, 0, 1], lp, priors=[1.0, 0.0])) == pytest.approx(np.log(2), rel=1e-6)
    # Brier stays bounded: the sample with posterior 0 for its class costs (1/K)(1 + 1) = 1.
    np.testing.assert_allclose(float(S.brier([1, 0, 1], lp)), (1.0 + 0.25 + 0.0) / 3, rtol=1e-6)


def test_canonical_probabilities_keep_their_exact_zeros_for_the_scoring_rules():
    # Issue 32.1: scores checked once (ecjax.inputs.canonical_scores, as `ecjax calibrate` keeps them) floor a zero
    # probability in their values (decisions stay finite) and keep where it was, so the proper scoring rules read
    # it exactly, as they read the probabilities themselves: -log 0 = inf on the true class.
    from ecjax.inputs import canonical_scores

    p = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [0.25, 0.75]])
    s = canonical_scores(p, score_type="probabilities")
    assert float(S.cross_entropy([1, 0, 1, 1], s, score_type="probabilities")) == np.inf
    y = np.array([0, 0, 1, 1])  # zeros only on wrong classes: the closed form (data priors: the mean over samples)
    np.testing.assert_allclose(float(S.cross_entropy(y, s, score_type="probabilities")),
                               -np.mean(np.log(p[np.arange(4), y])), rtol=1e-6)
    np.testing.assert_allclose(float(S.brier(y, s, score_type="probabilities")),
                               np.mean((p - np.eye(2)[y]) ** 2), rtol=1e-6)


def test_cross_entropy_of_huge_llrs_is_exact():
    llr = np.array([1e4, -1e4, 1e4, -1e4, 3.0])
    labels = np.array([1, 0, 0, 1, 1])
    priors = np.array([0.7, 0.3])
    logit = llr + np.log(priors[1] / priors[0])
    # -log P(y|x) in float64 with logaddexp: log(1 + exp(-logit)) for y = 1.
    per = np.where(labels == 1, np.logaddexp(0, -logit), np.logaddexp(0, logit))
    n_i = np.bincount(labels)
    ref = np.sum(priors[labels] / n_i[labels] * per)
    xe = float(S.cross_entropy(labels, llr, priors=priors, score_type="llr"))
    assert np.isfinite(xe)
    np.testing.assert_allclose(xe, ref, rtol=1e-6)
    br = float(S.brier(labels, llr, priors=priors, score_type="llr"))
    p1 = expit(logit)
    np.testing.assert_allclose(br, np.sum(priors[labels] / n_i[labels] * (p1 - labels) ** 2), rtol=1e-6)


def test_naive_system_normalizes_to_one():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 500)
    priors = np.array([0.1, 0.2, 0.3, 0.4])
    naive = np.tile(np.log(priors), (500, 1))
    # The system that outputs the priors has normalized XE and Brier exactly 1 (Ferrer 2022b, §4.1.2-4.1.3),
    # and its unnormalized values are the closed forms -sum P log P and (1/K) sum P (1 - P).
    assert float(S.cross_entropy(labels, naive, priors=priors, normalize=True)) == pytest.approx(1.0, rel=1e-6)
    assert float(S.brier(labels, naive, priors=priors, normalize=True)) == pytest.approx(1.0, rel=1e-6)
    assert float(S.cross_entropy(labels, naive, priors=priors)) == pytest.approx(-np.sum(priors * np.log(priors)), rel=1e-6)
    assert float(S.brier(labels, naive, priors=priors)) == pytest.approx(np.sum(priors * (1 - priors)) / 4, rel=1e-6)


def test_psrs_batch_over_systems_and_jit():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, 300)
    lp = log_softmax(rng.normal(size=(4, 300, 3)), axis=-1)
    batched = np.asarray(S.cross_entropy(labels, lp))
    single = [float(S.cross_entropy(labels, lp[i])) for i in range(4)]
    np.testing.assert_allclose(batched, single, rtol=1e-6)
    jitted = jax.jit(lambda s: S.brier(labels, s))(jnp.asarray(lp[0]))
    np.testing.assert_allclose(float(jitted), float(S.brier(labels, lp[0])), rtol=1e-6)
