"""Randomized cross-checks of ecjax against the anchors at the edges the other tests leave out.

Each test draws inputs from fixed seeds at the corners where a silently wrong number hides: very
confident scores (logits of scale 80), sample weights with zeros, deployment priors, every score type
(logits, log-posteriors, probabilities, log-likelihoods, LLRs), K = 2 next to K > 2, absent classes,
single samples and odd N.  References: scikit-learn and psrcal (the anchors), or a float64 numpy/scipy
computation written here from the definition — never ecjax itself.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
import torch
from expected_cost import ec
from psrcal import losses as psr_losses
from scipy.special import log_softmax, logsumexp
from sklearn import metrics as skm

from ecjax import scores as S

# ---------------------------------------------------------------- helpers


def _one_vs_rest_log_odds64(logits):
    """float64 ``log P(i|x) - log(1 - P(i|x))`` of every class: the order of ``P(i|x)``, unsaturated."""
    k = logits.shape[1]
    return np.stack([logits[:, c] - logsumexp(np.delete(logits, c, axis=1), axis=1) for c in range(k)], axis=1)


def _hand_till(labels, ranking):
    """Hand & Till's M from scikit-learn's binary AUC on each pair of classes, ranked by ``ranking[:, i]``."""
    k = ranking.shape[1]
    terms = []
    for i, j in combinations(range(k), 2):
        pair = (labels == i) | (labels == j)
        a_ij = skm.roc_auc_score(labels[pair] == i, ranking[pair, i])
        a_ji = skm.roc_auc_score(labels[pair] == j, ranking[pair, j])
        terms.append((a_ij + a_ji) / 2)
    return np.mean(terms)


def _confident_logits(rng, n, k, scale):
    labels = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])
    logits = rng.normal(0.0, scale, (n, k)) + 2.0 * np.eye(k)[labels]
    return labels, logits


# ------------------------------------------------- multiclass AUCs at confident scores


def test_multiclass_aucs_rank_confident_samples_as_float64_posteriors_do():
    # Regression: the one-vs-rest and one-vs-one AUCs ranked the samples by float32 log P(i|x), which is
    # exactly 0 for every sample whose class i leads by more than ~17 nats: all such samples tied, so a
    # confident error ranked level with the confident hits.  With logits of scale 80 the AUCs were off by up
    # to 0.02 (0.3996 against 0.3778 for K = 3, N = 27 in a randomized check).  Reference: scikit-learn's
    # binary roc_auc_score on float64 one-vs-rest log-odds (the order of P(i|x) without saturation).
    rng = np.random.default_rng(3)
    n, k = 30, 3  # one size: one compilation per function (K = 2: the next test)
    for scale in (80.0, 20.0):
        labels, logits = _confident_logits(rng, n, k, scale)
        ranking = _one_vs_rest_log_odds64(logits)
        weights = rng.uniform(0.0, 2.0, n)
        weights[rng.random(n) < 0.2] = 0.0
        weights[:k] = 1.0  # every class keeps a positive total
        ovr = np.mean([skm.roc_auc_score(labels == c, ranking[:, c]) for c in range(k)])
        ovr_w = np.mean([skm.roc_auc_score(labels == c, ranking[:, c], sample_weight=weights) for c in range(k)])
        np.testing.assert_allclose(float(S.auc_one_vs_rest(labels, logits, score_type="logits")), ovr,
                                   rtol=0, atol=1e-6)
        np.testing.assert_allclose(
            float(S.auc_one_vs_rest(labels, logits, score_type="logits", sample_weight=weights)), ovr_w,
            rtol=0, atol=1e-6)
        np.testing.assert_allclose(float(S.auc_one_vs_one(labels, logits, score_type="logits")),
                                   _hand_till(labels, ranking), rtol=0, atol=1e-6)


def test_one_vs_rest_auc_of_two_classes_with_margins_past_float32_saturation():
    # The smallest case of the regression above: class-1 margins 20, 30, 25 are all past the ~17 nats where
    # float32 log P(1|x) rounds to 0; the positives (30, 25) beat the negative at 20, so every AUC is 1
    # (the binary AUC by scikit-learn), where the saturated ranking gave 0.875.
    labels = np.array([0, 1, 0, 1])
    margin = np.array([20.0, 30.0, -5.0, 25.0])
    logits = np.stack([np.zeros(4), margin], axis=1)
    assert skm.roc_auc_score(labels, margin) == 1.0
    for f in (S.auc_one_vs_rest, S.auc_one_vs_one):
        assert float(f(labels, logits, score_type="logits")) == 1.0
        assert float(f(labels, np.exp(log_softmax(logits, axis=1)), score_type="probabilities")) == 1.0


def test_equal_posteriors_stay_tied_whether_or_not_their_class_is_the_top_one():
    # P(0|x) = 1/3 in the first two rows: the top class of the first (an argmax among equals), not of the
    # second.  Its log-odds must not depend on which: summing "the rest" of a top class directly broke this
    # tie by a float32 ulp (AUCs 1.0 for scikit-learn's 0.97917 on the same float64 probabilities).
    labels = np.array([0, 1, 2, 0, 1, 2])
    p = np.array([[1 / 3, 1 / 3, 1 / 3], [1 / 3, 2 / 3, 0], [0.1, 0.1, 0.8],
                  [0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]])
    for multi_class, f in (("ovr", S.auc_one_vs_rest), ("ovo", S.auc_one_vs_one)):
        np.testing.assert_allclose(float(f(labels, p, score_type="probabilities")),
                                   skm.roc_auc_score(labels, p, multi_class=multi_class), rtol=0, atol=1e-6)


# ------------------------------------------- proper scoring rules: priors, weights, score types


def _weighted_class_average(labels, per_sample, priors, weights):
    """``sum_i P_i / W_i sum_{n: y_n = i} u_n l_n`` (data priors ``W_i / W`` when ``priors`` is None)."""
    k = int(labels.max()) + 1 if priors is None else len(priors)
    totals = np.array([weights[labels == i].sum() for i in range(k)])
    p = totals / totals.sum() if priors is None else priors
    return sum(p[i] / totals[i] * np.sum(weights[labels == i] * per_sample[labels == i])
               for i in range(k) if p[i] > 0)


def _xe64(labels, log_post, priors, weights):
    return _weighted_class_average(labels, -log_post[np.arange(len(labels)), labels], priors, weights)


def _brier64(labels, log_post, priors, weights):
    k = log_post.shape[1]
    per_sample = ((np.eye(k)[labels] - np.exp(log_post)) ** 2).mean(axis=1)
    return _weighted_class_average(labels, per_sample, priors, weights)


@pytest.mark.parametrize("k", [2, 4])
def test_scoring_rules_match_float64_definition_for_every_score_type_with_priors_and_weights(k):
    rng = np.random.default_rng(10 + k)
    n = 37
    labels, logits = _confident_logits(rng, n, k, 5.0)
    log_post = log_softmax(logits, axis=1)
    priors = rng.dirichlet(2.0 * np.ones(k))
    weights = rng.uniform(0.0, 3.0, n)
    weights[rng.random(n) < 0.25] = 0.0
    weights[:k] = 1.0
    ones = np.ones(n)
    posterior_types = [("logits", logits), ("log_posteriors", log_post), ("probabilities", np.exp(log_post))]
    for score_type, scores in posterior_types:
        for p, u in [(None, None), (priors, None), (None, weights), (priors, weights)]:
            w = ones if u is None else u
            kw = dict(priors=p, score_type=score_type, sample_weight=u)
            np.testing.assert_allclose(float(S.cross_entropy(labels, scores, **kw)), _xe64(labels, log_post, p, w),
                                       rtol=2e-5)
            np.testing.assert_allclose(float(S.brier(labels, scores, **kw)), _brier64(labels, log_post, p, w),
                                       rtol=2e-5)
    # Likelihood-type scores: the posteriors are softmax(log-likelihoods + log priors).
    log_lik = logits + rng.normal(0.0, 3.0, (n, 1))
    lp_lik = log_softmax(log_lik + np.log(priors), axis=1)
    np.testing.assert_allclose(
        float(S.cross_entropy(labels, log_lik, priors=priors, score_type="log_likelihoods", sample_weight=weights)),
        _xe64(labels, lp_lik, priors, weights), rtol=2e-5)
    if k == 2:
        llr = log_lik[:, 1] - log_lik[:, 0]
        np.testing.assert_allclose(
            float(S.brier(labels, llr, priors=priors, score_type="llr", sample_weight=weights)),
            _brier64(labels, lp_lik, priors, weights), rtol=2e-5)
    # Normalized, unweighted: psrcal's LogLoss and Brier with external priors (its mean over classes).
    lp_t, y_t, p_t = torch.tensor(log_post), torch.tensor(labels), torch.tensor(priors)
    np.testing.assert_allclose(float(S.cross_entropy(labels, log_post, priors=priors, normalize=True)),
                               psr_losses.LogLoss(lp_t, y_t, norm=True, priors=p_t).item(), rtol=2e-5)
    np.testing.assert_allclose(float(S.brier(labels, log_post, priors=priors, normalize=True)),
                               psr_losses.Brier(lp_t, y_t, norm=True, priors=p_t).item(), rtol=2e-5)


# ------------------------------------------------------ risk-coverage at confident scores


def _aurc64(labels, logits, weights):
    """AURC from the definition in float64: samples by descending top posterior (its unsaturated log-odds),
    ties sharing the point of the last of them, ``sum_n u_n risk(c_n) / W``."""
    top = logits.argmax(axis=1)
    key = _one_vs_rest_log_odds64(logits)[np.arange(len(labels)), top]
    order = np.argsort(-key, kind="stable")
    c, wrong, u = key[order], (top != labels)[order], weights[order]
    last = np.searchsorted(-c, -c, side="right") - 1
    kept = np.cumsum(u)[last]
    risk = np.cumsum(u * wrong)[last] / np.where(kept > 0, kept, 1.0)  # nothing kept yet: risk 0
    return np.sum(u * risk) / np.sum(u)


def test_risk_coverage_ranks_confident_samples_as_float64_posteriors_do():
    # Regression: the curve ranked the samples by float32 log max_i P(i|x), exactly 0 past a ~17-nat lead,
    # so confident errors tied with confident hits: at logit scale 80 (N = 200, K = 3) the AURC was 0.7154
    # where the float64 definition gives 0.7034 (0.6537 for 0.6580 at scale 20).
    rng = np.random.default_rng(0)
    n, k = 200, 3
    for scale in (80.0, 20.0, 1.0):
        labels, logits = _confident_logits(rng, n, k, scale)
        weights = rng.integers(0, 4, n).astype(np.float64)
        for u in (None, weights):
            curve = S.risk_coverage_curve(labels, logits, score_type="logits", sample_weight=u)
            np.testing.assert_allclose(float(curve.aurc), _aurc64(labels, logits, np.ones(n) if u is None else u),
                                       rtol=1e-5)
        # The thresholds stay the top posteriors, in descending order.
        top64 = np.sort(np.exp(log_softmax(logits, axis=1)).max(axis=1))[::-1]
        np.testing.assert_allclose(np.asarray(curve.thresholds), top64, rtol=1e-6)


# ------------------------------------- optimal threshold: expected-cost's saturated posteriors


def _ec_at_cut64(labels, log_odds, costs, priors, cut):
    """float64 EC of deciding 1 iff ``log_odds > cut``."""
    decide_1 = log_odds > cut
    return (priors[0] * costs[0, 1] * np.mean(decide_1[labels == 0])
            + priors[1] * costs[1, 0] * np.mean(~decide_1[labels == 1]))


def test_optimal_threshold_at_confident_scores_is_the_best_real_threshold_not_expected_costs():
    # expected-cost's average_cost_for_optimal_decisions sorts float64 posteriors exp(log P(1|x)), which are
    # exactly 1.0 for every log-odds above ~37 (and 0 below ~-745): distinct scores become ties, which its sweep
    # then cuts inside in the order of the samples, reaching ECs no threshold attains and missing some that one
    # does.  With log-odds of scale 80 (no ties at all) it returned NEC 0.880 where the best threshold on the
    # log-odds gives 0.920, and 0.316 where it gives 0.304 (randomized checks, N = 47).  ecjax sorts
    # the log-odds, so its EC is the brute-force float64 optimum over real thresholds, and its threshold
    # attains it.
    rng = np.random.default_rng(7)
    n = 47
    anchor_differs = 0
    for _ in range(6):
        labels = np.concatenate([[0, 1], rng.integers(0, 2, n - 2)])
        log_odds = rng.normal(0.0, 80.0, n) + labels
        log_post = np.stack([-np.logaddexp(0, log_odds), -np.logaddexp(0, -log_odds)], axis=1)
        costs = np.array([[0.0, 1.0], [rng.uniform(0.2, 5.0), 0.0]])
        priors = np.array([0.8, 0.2])
        distinct = np.unique(log_odds)
        cuts = np.concatenate([[-np.inf], (distinct[1:] + distinct[:-1]) / 2, [np.inf]])
        best = min(_ec_at_cut64(labels, log_odds, costs, priors, c) for c in cuts)
        got, threshold = S.optimal_threshold_expected_cost(labels, log_post, costs, priors=priors)
        np.testing.assert_allclose(float(got), best, rtol=1e-5)
        np.testing.assert_allclose(_ec_at_cut64(labels, log_odds, costs, priors, float(threshold)), best, rtol=1e-5)
        anchor = ec.average_cost_for_optimal_decisions(labels, log_post, ec.CostMatrix(costs), priors=priors[:, None])
        anchor_differs += abs(anchor - best) > 1e-6
    assert anchor_differs > 0  # the anchor's artefact shows in these draws
