"""Precision-recall, DET and decision curves (ecjax._src.scores.ranking_curves), and the one-vs-one AUC
(ecjax._src.scores.roc).

References: scikit-learn's ``precision_recall_curve``, ``average_precision_score``,
``det_curve`` and ``roc_auc_score(multi_class="ovo")`` on the same float32
log-odds that ecjax ranks (scores are float32 in ecjax: the reference
receives the same float32 values, so ties and order are identical and the
thresholds equal exactly), and short numpy computations of the net benefit
and of the expected-cost identity (Ferrer 2025, App. C.1).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, log_softmax, logit
from scipy.stats import norm
from sklearn import metrics as skm

import jax
import jax.numpy as jnp

from ecjax import InputError
from ecjax._src.scores import ranking_curves as curves, roc
from ecjax._src.scores.bayes_decisions import decision_curve

from conftest import load_dataset

BINARY_DATASETS = ("sst2_gpt2", "pneumoniamnist_resnet50")
# float32 rates/precisions (a quotient of exact integer counts, or a float32 sum of N <= 2000 such terms in [0, 1])
# against float64 ones: a few ulps of 1.
RATE_TOL = 1e-6


def _log_odds32(scores):
    """The class-1 log-odds of binary log-posteriors, in the float32 that ecjax computes in."""
    s = np.asarray(scores, np.float32)
    return s[:, 1] - s[:, 0]


def _tie_heavy(rng, n, levels=5):
    """Labels and integer-valued LLRs with only ``levels`` distinct values: most samples are tied."""
    labels = rng.integers(0, 2, n)
    llr = (rng.integers(0, levels, n) + labels - levels // 2).astype(np.float32)
    return labels, llr


N = 64  # one sample size for the synthetic tests: every kernel compiles once per shape


def _assert_close(actual, desired, atol):
    """``|actual - desired| <= atol`` elementwise (``atol`` may be an array, unlike numpy's assert_allclose)."""
    actual, desired = np.asarray(actual, np.float64), np.asarray(desired, np.float64)
    err = np.abs(actual - desired)
    assert np.all(err <= atol), f"max error {err.max():.3g} (at {np.argmax(err - atol)}); tolerance {atol}"


def _check_curves_against_sklearn(labels, scores, s, score_type):
    """PR curve, AP and DET of one system equal scikit-learn's on the float32 log-odds ``s``."""
    curve = curves.precision_recall_curve(labels, scores, score_type=score_type)
    precision, recall, thresholds = skm.precision_recall_curve(labels, s)
    np.testing.assert_array_equal(np.asarray(curve.thresholds), thresholds)
    np.testing.assert_allclose(curve.precision, precision, rtol=0, atol=RATE_TOL)
    np.testing.assert_allclose(curve.recall, recall, rtol=0, atol=RATE_TOL)
    ap = skm.average_precision_score(labels, s)
    np.testing.assert_allclose(float(curves.average_precision(labels, scores, score_type=score_type)), ap,
                               rtol=0, atol=RATE_TOL)
    det = curves.det_curve(labels, scores, score_type=score_type)
    fpr, fnr, thresholds = skm.det_curve(labels, s)
    np.testing.assert_array_equal(np.asarray(det.thresholds), thresholds)
    np.testing.assert_allclose(det.false_positive_rate, fpr, rtol=0, atol=RATE_TOL)
    np.testing.assert_allclose(det.false_negative_rate, fnr, rtol=0, atol=RATE_TOL)
    return precision, recall, ap


# ------------------------------------------------------------ PR, AP and DET

@pytest.mark.parametrize("name", BINARY_DATASETS)
def test_binary_curves_equal_sklearn_on_real_scores(name):
    labels, scores, score_type = load_dataset(name)
    _check_curves_against_sklearn(labels, scores, _log_odds32(scores), score_type)


def test_binary_curves_equal_sklearn_with_ties():
    labels, llr = _tie_heavy(np.random.default_rng(0), N)
    assert len(np.unique(llr)) <= 6  # ~10 samples per threshold: the tie handling decides every point
    precision, recall, ap = _check_curves_against_sklearn(labels, llr, llr, "llr")
    # The checks can fail: the trapezoidal area under the same points (a common wrong AP) is far off here,
    # and the ROC's full set of points (a DET whose redundant ends are kept) is longer than sklearn's DET.
    assert abs(skm.auc(recall, precision) - ap) > 100 * RATE_TOL
    assert len(skm.roc_curve(labels, llr, drop_intermediate=False)[0]) - 1 > len(skm.det_curve(labels, llr)[0])


@pytest.mark.parametrize("case", ["separated", "top_negative"])
def test_det_curve_ends_equal_sklearn(case):
    labels = np.arange(N) % 2
    if case == "separated":  # one DET point only: every class-0 score below every class-1 score
        llr = np.where(labels == 1, np.arange(N) % 5 + 1.0, -(np.arange(N) % 3) - 1.0).astype(np.float32)
    else:  # class-0 samples score highest and class-1 samples lowest, with ties: both ends are trimmed
        llr = (np.arange(N) % 7 - 3.0 + labels).astype(np.float32)
        llr[:4] = [-5.0, 6.0, -5.0, 6.0]
    _check_curves_against_sklearn(labels, llr, llr, "llr")


def test_binary_curves_of_log_posteriors_with_zero_probabilities():
    # log P = -inf (a probability of exactly 0) is a legitimate score: its log-odds are -inf or +inf.
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, N)
    p1 = rng.choice([0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0], size=N)  # tied probabilities, some exactly 0 or 1
    with np.errstate(divide="ignore"):
        log_post = np.log(np.stack([1 - p1, p1], -1))
    assert np.isneginf(log_post).any(axis=0).all()
    curve = curves.precision_recall_curve(labels, log_post)
    precision, recall, thresholds = skm.precision_recall_curve(labels, p1)
    np.testing.assert_allclose(curve.precision, precision, rtol=0, atol=RATE_TOL)
    np.testing.assert_allclose(curve.recall, recall, rtol=0, atol=RATE_TOL)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(curve.thresholds, logit(thresholds), rtol=1e-6)  # log-odds, -inf and +inf included
    np.testing.assert_allclose(float(curves.average_precision(labels, log_post)),
                               skm.average_precision_score(labels, p1), rtol=0, atol=RATE_TOL)
    det = curves.det_curve(labels, log_post)
    fpr, fnr, _ = skm.det_curve(labels, p1)
    np.testing.assert_allclose(det.false_positive_rate, fpr, rtol=0, atol=RATE_TOL)
    np.testing.assert_allclose(det.false_negative_rate, fnr, rtol=0, atol=RATE_TOL)


def test_padded_curves_of_a_batch_hold_each_systems_curve_and_jit():
    rng = np.random.default_rng(2)
    labels, llr = _tie_heavy(rng, N)
    systems = np.stack([llr, -0.5 * llr + rng.integers(0, 3, N), rng.normal(size=N) + labels]).astype(np.float32)

    pr = curves.precision_recall_curve(labels, systems, score_type="llr", padded=True)
    aps = curves.average_precision(labels, systems, score_type="llr")
    det = curves.det_curve(labels, systems, score_type="llr", padded=True)
    assert pr.precision.shape == (3, N + 1) and pr.thresholds.shape == (3, N) and aps.shape == (3,)
    assert det.false_positive_rate.shape == (3, N)

    @jax.jit
    def jitted(y, s):  # batch axes for the curves, jax.vmap over the systems for the AP
        return (curves.precision_recall_curve(y, s, score_type="llr", padded=True),
                jax.vmap(lambda one: curves.average_precision(y, one, score_type="llr"))(s),
                curves.det_curve(y, s, score_type="llr", padded=True))

    for a, b in zip(jax.tree_util.tree_leaves(jitted(labels, systems)), jax.tree_util.tree_leaves((pr, aps, det))):
        np.testing.assert_array_equal(a, b)
    # Under jit invalid labels cannot raise: every value is NaN instead of a plausible number.
    for bad in (np.where(np.arange(N) == 5, 2, labels), np.ones(N, int)):  # a non-binary label; a single class
        assert all(np.isnan(x).all() for x in jax.tree_util.tree_leaves(jitted(bad, systems)))
    for m in range(3):
        precision, recall, thresholds = skm.precision_recall_curve(labels, systems[m])
        t = np.asarray(pr.thresholds[m])
        np.testing.assert_array_equal(np.unique(t), thresholds)  # every distinct threshold, nothing else
        at = np.searchsorted(thresholds, t)  # each padded point is sklearn's point of its threshold
        np.testing.assert_allclose(pr.precision[m, :-1], precision[at], rtol=0, atol=RATE_TOL)
        np.testing.assert_allclose(pr.recall[m, :-1], recall[at], rtol=0, atol=RATE_TOL)
        assert pr.precision[m, -1] == 1 and pr.recall[m, -1] == 0
        np.testing.assert_allclose(aps[m], skm.average_precision_score(labels, systems[m]), rtol=0, atol=RATE_TOL)
        fpr, fnr, thresholds = skm.det_curve(labels, systems[m])
        t = np.asarray(det.thresholds[m])
        np.testing.assert_array_equal(np.unique(t), thresholds)
        at = np.searchsorted(thresholds, t)
        np.testing.assert_allclose(det.false_positive_rate[m], fpr[at], rtol=0, atol=RATE_TOL)
        np.testing.assert_allclose(det.false_negative_rate[m], fnr[at], rtol=0, atol=RATE_TOL)
    # The probit axes of a DET plot: the standard normal quantile (infinite at rates 0 and 1).
    expected = norm.ppf(np.asarray(det.false_positive_rate, np.float64))
    got = np.asarray(det.probit_false_positive_rate)
    assert np.isinf(expected).any()
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    np.testing.assert_allclose(det.probit_false_negative_rate,
                               norm.ppf(np.asarray(det.false_negative_rate, np.float64)), rtol=1e-5)


# ----------------------------------------------------------- one-vs-one AUC

def test_auc_one_vs_one_equals_sklearn_on_cifar10():
    labels, logits, _ = load_dataset("cifar10_resnet-20")
    labels, logits = labels[:2000], logits[:2000]  # a slice keeps the test fast; every class has ~200 samples
    log_post = log_softmax(logits.astype(np.float64), axis=1).astype(np.float32)
    posteriors = np.exp(log_post.astype(np.float64))  # the same float32 values, so the same ranking
    for average in ("macro", "weighted"):
        got = roc.auc_one_vs_one(labels, log_post, average=average)
        expected = skm.roc_auc_score(labels, posteriors, multi_class="ovo", average=average)
        np.testing.assert_allclose(float(got), expected, rtol=0, atol=RATE_TOL)


def _palette_probabilities(rng, n, k):
    """Labels and probability rows drawn from a palette of 6 rows: heavy ties in every column."""
    palette = rng.dirichlet(np.ones(k), size=6)
    labels = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])
    rows = rng.integers(0, 6, n)
    rows[labels == 0] = np.minimum(rows[labels == 0], 2)  # make class 0 rank differently from the rest
    return labels, palette[rows]


def test_auc_one_vs_one_with_ties_batches_and_likelihood_scores():
    rng = np.random.default_rng(5)
    labels, probs = _palette_probabilities(rng, N, 4)
    _, probs_b = _palette_probabilities(np.random.default_rng(6), N, 4)
    both = np.stack([probs, probs_b])
    for average in ("macro", "weighted"):
        expected = [skm.roc_auc_score(labels, p, multi_class="ovo", average=average) for p in (probs, probs_b)]
        got = roc.auc_one_vs_one(labels, both, score_type="probabilities", average=average)
        assert got.shape == (2,)
        np.testing.assert_allclose(got, expected, rtol=0, atol=RATE_TOL)
    jitted_ovo = jax.jit(lambda y, p: roc.auc_one_vs_one(y, p, score_type="probabilities"))
    jitted = jitted_ovo(labels, both)
    np.testing.assert_allclose(jitted, [skm.roc_auc_score(labels, p, multi_class="ovo") for p in (probs, probs_b)],
                               rtol=0, atol=RATE_TOL)
    assert np.isnan(jitted_ovo(np.where(labels == 3, 1, labels), both)).all()  # a class absent under jit: NaN
    # The check can fail: the one-vs-rest average of the same posteriors is far from the one-vs-one one.
    assert abs(skm.roc_auc_score(labels, probs, multi_class="ovr") - float(jitted[0])) > 100 * RATE_TOL
    # Log-likelihoods need the priors that make them posteriors (the ranking of P(i|x) depends on them).
    priors = np.array([0.1, 0.2, 0.3, 0.4])
    log_lik = np.log(both) + rng.normal(size=4)  # a per-class offset: not the posteriors of any prior
    post = np.exp(log_lik) * priors
    post /= post.sum(-1, keepdims=True)
    got = roc.auc_one_vs_one(labels, log_lik, score_type="log_likelihoods", priors=priors)
    np.testing.assert_allclose(got, [skm.roc_auc_score(labels, q, multi_class="ovo") for q in post], rtol=0,
                               atol=RATE_TOL)
    # The ranking of P(i|x) depends on the priors: other priors give another value (the check can fail).
    assert abs(float(got[0]) - skm.roc_auc_score(labels, probs, multi_class="ovo")) > 100 * RATE_TOL


def test_auc_one_vs_one_of_two_classes_is_the_binary_auc():
    labels, llr = _tie_heavy(np.random.default_rng(7), N)
    probs = expit(np.stack([-llr, llr], -1).astype(np.float64))
    got = roc.auc_one_vs_one(labels, probs, score_type="probabilities")
    np.testing.assert_allclose(float(got), skm.roc_auc_score(labels, llr), rtol=0, atol=RATE_TOL)


# ------------------------------------------------------------ decision curve

def _net_benefit(labels, log_odds, p_t, p1=None):
    """Vickers & Elkin's NB in numpy: treat iff P(1|x) >= p_t, i.e. log-odds >= logit(p_t), in float64."""
    treat = log_odds[:, None].astype(np.float64) >= logit(p_t)[None, :]
    pos, neg = labels == 1, labels == 0
    odds = p_t / (1 - p_t)
    if p1 is None:  # data priors: TP/N - FP/N odds
        n = len(labels)
        return (treat & pos[:, None]).sum(0) / n - (treat & neg[:, None]).sum(0) / n * odds
    return p1 * (treat & pos[:, None]).sum(0) / pos.sum() - (1 - p1) * (treat & neg[:, None]).sum(0) / neg.sum() * odds


def test_decision_curve_equals_numpy_and_the_expected_cost_identity():
    labels, scores, score_type = load_dataset("pneumoniamnist_resnet50")
    p_t = np.linspace(0.01, 0.99, 99)
    curve = decision_curve(labels, scores, threshold_probabilities=p_t, score_type=score_type)
    s = _log_odds32(scores)
    odds = p_t / (1 - p_t)
    tol = 1e-6 * (1 + odds)  # float32 counts/N times the odds
    np.testing.assert_allclose(curve.threshold_probabilities, p_t, rtol=1e-7)
    _assert_close(curve.net_benefit, _net_benefit(labels, s, p_t), tol)
    prevalence = labels.mean()
    _assert_close(curve.treat_all, prevalence - (1 - prevalence) * odds, tol)
    np.testing.assert_array_equal(curve.treat_none, np.zeros(99))
    # Ferrer (2025) eq. 26: NB = P_2 - EC of the Bayes decisions for c_21 = 1 (miss) and c_12 = p_t/(1-p_t) (false
    # alarm), computed here from scratch: posteriors, argmin of expected costs, per-class averaged costs.
    assert np.min(np.abs(s[:, None] - logit(p_t)[None, :])) > 1e-6  # no sample on a threshold: no Bayes tie
    posteriors = np.stack([expit(-s.astype(np.float64)), expit(s.astype(np.float64))], -1)
    for j, w in enumerate(odds):
        costs = np.array([[0.0, w], [1.0, 0.0]])  # rows = true class, columns = decision
        decisions = np.argmin(posteriors @ costs, axis=1)
        incurred = costs[labels, decisions]
        ec = sum(np.mean(labels == i) * incurred[labels == i].mean() for i in (0, 1))
        _assert_close(curve.net_benefit[j], prevalence - ec, tol[j])


def test_decision_curve_of_llrs_uses_the_priors_and_treats_at_equality():
    rng = np.random.default_rng(9)
    labels = rng.integers(0, 2, N)
    llr = (rng.normal(size=(2, N)) + 1.5 * labels - 0.5).astype(np.float32)  # two systems
    p_t = np.array([0.05, 0.2, 0.35, 0.5, 0.65, 0.9])
    odds = p_t / (1 - p_t)
    for p1 in (0.4, 0.5):
        curve = decision_curve(labels, llr, threshold_probabilities=p_t, priors=[1 - p1, p1],
                               score_type="llr")
        assert curve.net_benefit.shape == (2, 6) and curve.treat_all.shape == (6,)
        _assert_close(curve.treat_all, p1 - (1 - p1) * odds, 1e-6 * (1 + odds))
        for m in range(2):
            posterior_log_odds = llr[m].astype(np.float64) + np.log(p1 / (1 - p1))
            # float32 Bayes' rule may move a log-odds by ~1e-7: no sample sits that close to a threshold here.
            assert np.min(np.abs(posterior_log_odds[:, None] - logit(p_t)[None, :])) > 1e-5
            _assert_close(curve.net_benefit[m], _net_benefit(labels, posterior_log_odds, p_t, p1=p1),
                          1e-6 * (1 + odds))
    # Treat iff P(1|x) >= p_t: samples exactly at p_t = 0.5 (LLR 0 with equal priors) are treated.
    llr[:, :4], labels[:4] = 0.0, [0, 1, 1, 0]
    tied = decision_curve(labels, llr, threshold_probabilities=[0.5], priors=[0.5, 0.5], score_type="llr")
    _assert_close(tied.net_benefit[0], _net_benefit(labels, llr[0], np.array([0.5]), p1=0.5), 1e-6)
    strict = 0.5 * np.mean(llr[0, labels == 1] > 0) - 0.5 * np.mean(llr[0, labels == 0] > 0)
    assert abs(float(tied.net_benefit[0, 0]) - strict) > 1e-3  # the check can fail: "treat iff > p_t" differs


def test_decision_curve_jits_and_marks_bad_thresholds_under_jit():
    rng = np.random.default_rng(8)
    labels = rng.integers(0, 2, N)
    llr = (rng.normal(size=(2, N)) + labels).astype(np.float32)
    p_t = np.array([0.1, 0.3, 0.5, 0.8])
    jitted = jax.jit(lambda s, p: decision_curve(labels, s, threshold_probabilities=p, priors=[0.7, 0.3],
                                                 score_type="llr"))
    out = jitted(llr, jnp.asarray([0.1, 1.5, 0.5, 0.8]))
    bad = np.isnan(np.asarray(out.net_benefit))
    np.testing.assert_array_equal(bad, np.broadcast_to([False, True, False, False], (2, 4)))
    for m in range(2):
        expected = _net_benefit(labels, llr[m].astype(np.float64) + np.log(0.3 / 0.7), p_t, p1=0.3)
        _assert_close(np.asarray(out.net_benefit)[m, [0, 2, 3]], expected[[0, 2, 3]], 1e-5)


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("fn", [curves.precision_recall_curve, curves.average_precision, curves.det_curve])
def test_binary_curves_refuse_bad_input_naming_the_argument(fn):
    llr = np.array([0.5, -1.0, 2.0, 0.1])
    with pytest.raises(InputError, match="`labels`"):
        fn([0, 2, 1, 0], llr, score_type="llr")  # not binary
    with pytest.raises(InputError, match="`labels` has no sample of class 0"):
        fn([1, 1, 1, 1], llr, score_type="llr")
    with pytest.raises(InputError, match="`labels` and `scores`"):
        fn([0, 1, 1], llr, score_type="llr")
    with pytest.raises(InputError, match="`scores` must be binary"):
        fn([0, 1, 2], np.log(np.full((3, 3), 1 / 3)))
    with pytest.raises(InputError, match="`scores` contains NaN"):
        fn([0, 1, 1, 0], [0.5, np.nan, 2.0, 0.1], score_type="llr")
    with pytest.raises(InputError, match="`score_type`"):
        fn([0, 1, 1, 0], llr, score_type="llrs")
    with pytest.raises(InputError, match="`labels` must be one vector"):
        fn([[0, 1], [1, 0]], llr, score_type="llr")
    with pytest.raises(InputError, match="`scores` must have at least 2"):
        fn([0, 1, 1, 0], llr)  # log-posteriors are (N, 2), not (N,)


@pytest.mark.parametrize("fn", [curves.precision_recall_curve, curves.det_curve])
def test_unpadded_curves_refuse_batches_and_tracing(fn):
    labels = [0, 1, 1, 0]
    llr = np.array([[0.5, -1.0, 2.0, 0.1], [0.0, 1.0, 2.0, 3.0]])
    with pytest.raises(InputError, match="`padded"):
        fn(labels, llr, score_type="llr")
    with pytest.raises(InputError, match="`padded"):
        jax.jit(lambda s: fn(labels, s, score_type="llr"))(llr[0])
    with pytest.raises(InputError, match="`padded` must be True or False"):
        fn(labels, llr[0], score_type="llr", padded="yes")


def test_auc_one_vs_one_refuses_bad_input():
    log_post = np.log(np.full((4, 3), 1 / 3))
    with pytest.raises(InputError, match="`labels` has no sample of class 2"):
        roc.auc_one_vs_one([0, 1, 1, 0], log_post)
    with pytest.raises(InputError, match="`labels`"):
        roc.auc_one_vs_one([0, 1, 3, 2], log_post)
    with pytest.raises(InputError, match="`average`"):
        roc.auc_one_vs_one([0, 1, 2, 0], log_post, average="micro")
    with pytest.raises(InputError, match="`priors`"):
        roc.auc_one_vs_one([0, 1, 2, 0], log_post, priors=[0.2, 0.3, 0.5])
    with pytest.raises(InputError, match="`priors` is required"):
        roc.auc_one_vs_one([0, 1, 2, 0], log_post, score_type="log_likelihoods")
    with pytest.raises(InputError, match="`score_type`"):
        roc.auc_one_vs_one([0, 1, 1, 0], np.zeros(4), score_type="llr")


def test_decision_curve_refuses_bad_input():
    llr = np.array([0.5, -1.0, 2.0, 0.1])
    labels = [0, 1, 1, 0]
    for bad in (0.0, 1.0, 1.5, np.nan, [0.2, -0.1], [[0.2, 0.3]], []):
        with pytest.raises(InputError, match="`threshold_probabilities`"):
            decision_curve(labels, llr, threshold_probabilities=bad, priors=[0.5, 0.5], score_type="llr")
    with pytest.raises(InputError, match="`priors` is required"):
        decision_curve(labels, llr, threshold_probabilities=0.2, score_type="llr")
    with pytest.raises(InputError, match="`priors` must be > 0"):
        decision_curve(labels, llr, threshold_probabilities=0.2, priors=[1.0, 0.0], score_type="llr")
    log_post = np.log(np.full((4, 2), 0.5))
    with pytest.raises(InputError, match="`priors` cannot be combined"):
        decision_curve(labels, log_post, threshold_probabilities=0.2, priors=[0.5, 0.5])
    with pytest.raises(InputError, match="`labels` has no sample of class 1"):
        decision_curve([0, 0, 0, 0], log_post, threshold_probabilities=0.2)
    with pytest.raises(InputError, match="`scores` must be binary"):
        decision_curve([0, 1, 2, 0], np.log(np.full((4, 3), 1 / 3)), threshold_probabilities=0.2)
