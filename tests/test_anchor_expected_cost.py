"""Agreement with the anchor package ``expected-cost`` (Ferrer's own code) on
every dataset of ``../shared/data``.

expected-cost gets float64 log-posteriors (``scipy.special.log_softmax`` of
the CIFAR-10 logits; the other sets already are log-posteriors); ecjax gets
the scores as stored, with ``score_type="logits"`` for CIFAR-10, and computes
in float32.  Compared, for several cost matrices (0-1, 0-1 with abstention,
random positive, balanced) and with data and deployment priors:

- EC and NEC (``ec.average_cost``, ``adjusted=True``) of fixed decisions;
- Bayes decisions (``ec.bayes_decisions``): identical except at ties closer
  than float32 resolution, which are counted (every disagreement must be one);
- EC and NEC of Bayes decisions (``ec.average_cost_for_bayes_decisions``);
- the EC at the empirically optimal threshold for the binary sets
  (``ec.average_cost_for_optimal_decisions``).

All to 1e-5 relative.  Two pitfalls of expected-cost 1.0 that the test works
around, not ecjax behaviour: ``average_cost`` needs priors as a column
``(K, 1)`` (a 1-D vector is broadcast along the decision axis, weighting
column ``j`` by ``P_j``), and its default cost matrix for ``costs=None`` has
the wrong size (``zero_one_costs(max(label))``), so costs are always given.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.special import log_softmax

from expected_cost import ec

from ecjax import costs as ecosts
from ecjax import metrics
from ecjax.confusion import confusion_matrix
from ecjax.decisions import bayes_decisions, log_posteriors
from ecjax.scores import bayes_expected_cost, optimal_threshold_expected_cost

from conftest import DATASETS, load_dataset

RTOL = 1e-5
# float32 resolution of a posterior-weighted cost: a Bayes decision may differ
# from the float64 reference only where two decisions' expected costs differ
# by less than this (times the largest cost).
_TIE = 64 * np.finfo(np.float32).eps


@functools.lru_cache(maxsize=None)
def _data(name):
    targets, scores, score_type = load_dataset(name)
    log_post64 = log_softmax(np.asarray(scores, np.float64), axis=1)
    return targets.astype(np.int64), scores, score_type, log_post64


def _cost_sets(k, data_priors, seed):
    """Square and abstention cost matrices for K classes."""
    rng = np.random.default_rng(seed)
    square = np.stack([
        np.asarray(ecosts.zero_one(k)),
        np.asarray(ecosts.balanced(data_priors)),
        rng.uniform(0.1, 3.0, (k, k)) * (1 - np.eye(k)),     # random positive, zero diagonal
        rng.uniform(0.0, 2.0, (k, k)),                       # random positive, non-zero diagonal
    ])
    abstain = np.stack([
        np.asarray(ecosts.zero_one(k, abstain=0.05)),
        np.asarray(ecosts.zero_one(k, abstain=0.3)),
        rng.uniform(0.0, 2.0, (k, k + 1)),
    ])
    return square, abstain


def _deployment_priors(k, seed):
    rng = np.random.default_rng(seed)
    p = 0.5 * rng.dirichlet(np.ones(k)) + 0.5 / k
    return p / p.sum()


def _ref_priors(p):
    return None if p is None else np.asarray(p, np.float64)[:, None]  # expected-cost wants (K, 1)


@pytest.fixture(scope="module", params=sorted(DATASETS))
def setup(request):
    name = request.param
    targets, scores, score_type, log_post64 = _data(name)
    k = scores.shape[1]
    p_data = np.bincount(targets, minlength=k) / len(targets)
    square, abstain = _cost_sets(k, p_data, seed=len(name))
    return dict(name=name, targets=targets, scores=scores, score_type=score_type, lp=log_post64, k=k,
                square=square, abstain=abstain, p_deploy=_deployment_priors(k, seed=k))


@pytest.mark.parametrize("prior_kind", ["data", "deployment"])
def test_ec_and_nec_of_decisions(setup, prior_kind):
    y, lp, k = setup["targets"], setup["lp"], setup["k"]
    priors = None if prior_kind == "data" else setup["p_deploy"]
    rng = np.random.default_rng(7)
    # Fixed decisions: argmax of the float64 posteriors (square costs), and
    # random decisions including the abstention column (K x (K + 1) costs).
    d_argmax = np.argmax(lp, axis=1)
    d_abstain = np.where(rng.random(len(y)) < 0.2, k, d_argmax)
    for d, cs in ((d_argmax, setup["square"]), (d_abstain, setup["abstain"])):
        counts = confusion_matrix(y, d, num_classes=k, num_decisions=cs.shape[-1])
        got_ec = np.asarray(metrics.expected_cost(counts, cs, priors=priors))
        got_nec = np.asarray(metrics.normalized_expected_cost(counts, cs, priors=priors))
        want_ec = [ec.average_cost(y, d, ec.CostMatrix(c), priors=_ref_priors(priors)) for c in cs]
        want_nec = [ec.average_cost(y, d, ec.CostMatrix(c), priors=_ref_priors(priors), adjusted=True) for c in cs]
        np.testing.assert_allclose(got_ec, want_ec, rtol=RTOL)
        np.testing.assert_allclose(got_nec, want_nec, rtol=RTOL)


def _tie_aware_decisions(setup, cs):
    """ecjax and expected-cost Bayes decisions, and the float64 expected costs."""
    ours = np.asarray(bayes_decisions(setup["scores"], cs, score_type=setup["score_type"]))  # (B, N)
    ref = np.stack([ec.bayes_decisions(setup["lp"], ec.CostMatrix(c))[0] for c in cs])
    post = np.exp(setup["lp"])
    expected = np.einsum("nk,bkd->bnd", post, cs)  # float64 posterior expected cost of each decision
    return ours, ref, expected


def test_bayes_decisions(setup):
    n_ties = 0
    for cs in (setup["square"], setup["abstain"]):
        ours, ref, expected = _tie_aware_decisions(setup, cs)
        assert ours.shape == ref.shape
        differ = ours != ref
        b, n = np.nonzero(differ)
        gap = np.abs(expected[b, n, ours[b, n]] - expected[b, n, ref[b, n]])
        tol = _TIE * np.abs(cs).max((-2, -1))[b]
        # Every disagreement is a tie below float32 resolution.
        assert np.all(gap <= tol), f"{setup['name']}: Bayes decisions differ beyond ties, gaps {gap[gap > tol][:5]}"
        n_ties += int(differ.sum())
    # Count of tie disagreements (0 on these datasets; at most a handful in any case).
    assert n_ties <= 5, f"{setup['name']}: {n_ties} tied Bayes decisions"


@pytest.mark.parametrize("prior_kind", ["data", "deployment"])
def test_ec_of_bayes_decisions(setup, prior_kind):
    y, k = setup["targets"], setup["k"]
    priors = None if prior_kind == "data" else setup["p_deploy"]
    p_eval = np.bincount(y, minlength=k) / len(y) if priors is None else priors
    w = p_eval / np.bincount(y, minlength=k)  # per-sample weight P_y / K_y* (Ferrer 2022a, eqs. 1-2)
    for cs in (setup["square"], setup["abstain"]):
        got = np.asarray(bayes_expected_cost(y, setup["scores"], cs, priors=priors, score_type=setup["score_type"]))
        got_n = np.asarray(bayes_expected_cost(y, setup["scores"], cs, priors=priors,
                                               score_type=setup["score_type"], normalize=True))
        ours, ref, _ = _tie_aware_decisions(setup, cs)
        for i, c in enumerate(cs):
            want, want_dec = ec.average_cost_for_bayes_decisions(
                y, setup["lp"], ec.CostMatrix(c), priors=_ref_priors(priors), silent=True)
            want_n, _ = ec.average_cost_for_bayes_decisions(
                y, setup["lp"], ec.CostMatrix(c), priors=_ref_priors(priors), adjusted=True, silent=True)
            np.testing.assert_array_equal(want_dec, ref[i])
            # Tied decisions (test_bayes_decisions) may incur different costs: allow exactly their effect.
            tie = ours[i] != ref[i]
            slack = np.sum(w[y[tie]] * np.abs(c[y[tie], ours[i][tie]] - c[y[tie], ref[i][tie]]))
            naive = np.min(p_eval @ c)
            assert abs(got[i] - want) <= RTOL * abs(want) + slack + 1e-9
            assert abs(got_n[i] - want_n) <= RTOL * abs(want_n) + slack / naive + 1e-9


def _binary_costs():
    return [
        np.array([[0.0, 1.0], [1.0, 0.0]]),
        np.asarray(ecosts.f_beta(2.0)),
        np.asarray(ecosts.net_benefit(0.2)),
        np.array([[0.0, 0.37], [2.9, 0.0]]),
    ]


def _ec_at_cut_numpy(y, log_odds, c, p, thr):
    """Float64 EC of deciding 1 when log_odds > thr."""
    d = (log_odds > thr).astype(int)
    r = np.array([[np.mean(d[y == i] == j) for j in (0, 1)] for i in (0, 1)])
    return float(np.sum(p[:, None] * r * c))


@pytest.mark.parametrize("name", sorted(n for n in DATASETS if not n.startswith("cifar")))
@pytest.mark.parametrize("prior_kind", ["data", "deployment"])
def test_optimal_threshold_expected_cost(name, prior_kind):
    y, scores, score_type, lp = _data(name)
    priors = None if prior_kind == "data" else np.array([0.3, 0.7])
    p = np.bincount(y, minlength=2) / len(y) if priors is None else priors
    log_odds = lp[:, 1] - lp[:, 0]
    for c in _binary_costs():
        want = ec.average_cost_for_optimal_decisions(y, lp, ec.CostMatrix(c), priors=_ref_priors(priors))
        want_n = ec.average_cost_for_optimal_decisions(y, lp, ec.CostMatrix(c), priors=_ref_priors(priors),
                                                       adjusted=True)
        got, thr = optimal_threshold_expected_cost(y, scores, c, priors=priors, score_type=score_type)
        got_n, _ = optimal_threshold_expected_cost(y, scores, c, priors=priors, score_type=score_type,
                                                   normalize=True)
        # expected-cost may split tied scores (pneumoniamnist has 621 distinct of 624), ecjax never does:
        # on these sets every tie is within one class, so splitting cannot lower the EC and both agree.
        np.testing.assert_allclose(float(got), want, rtol=RTOL)
        np.testing.assert_allclose(float(got_n), want_n, rtol=RTOL)
        # The threshold is real: applied to the float64 log-odds it attains the EC.
        np.testing.assert_allclose(_ec_at_cut_numpy(y, log_odds, c, p, float(thr)), float(got), rtol=RTOL)


def test_pneumoniamnist_ties_are_within_one_class():
    """Why expected-cost's tie splitting does not matter on pneumoniamnist."""
    y, scores, _, lp = _data("pneumoniamnist_resnet50")
    post1 = np.exp(lp[:, 1])
    values, counts = np.unique(post1, return_counts=True)
    tied = values[counts > 1]
    assert len(values) == 621 and len(tied) == 3
    for v in tied:
        assert len(np.unique(y[post1 == v])) == 1


def _brute_force_no_split(y, s, c, p):
    """Least EC over thresholds placed between distinct scores (float64 numpy)."""
    u = np.unique(s)
    cuts = np.concatenate([[-np.inf], (u[1:] + u[:-1]) / 2, [np.inf]])
    return min(_ec_at_cut_numpy(y, s, c, p, t) for t in cuts)


def test_tie_splitting_difference():
    """With ties across classes expected-cost's sweep cuts inside a group of
    tied scores: an EC no threshold can attain, and one that depends on the
    arbitrary order of the tied samples.  ecjax's EC equals the brute-force
    optimum over real thresholds (float64 numpy)."""
    rng = np.random.default_rng(3)
    n = 200
    y = rng.integers(0, 2, n)
    # Coarse scores: many ties, each tie group mixing both classes.
    s = np.round(rng.normal(y * 1.0, 1.0, n) * 2) / 2
    lp = np.stack([-np.logaddexp(0, s), -np.logaddexp(0, -s)], 1)  # log-posteriors with log-odds s
    c = np.array([[0.0, 1.0], [1.0, 0.0]])
    p = np.bincount(y) / n
    got, thr = optimal_threshold_expected_cost(y, lp, c)
    brute = _brute_force_no_split(y, s, c, p)
    np.testing.assert_allclose(float(got), brute, rtol=RTOL)
    np.testing.assert_allclose(_ec_at_cut_numpy(y, s, c, p, float(thr)), brute, rtol=RTOL)
    # expected-cost, on two orderings of the same samples.
    refs = []
    for perm in (np.argsort(y, kind="stable"), np.argsort(-y, kind="stable")):
        refs.append(ec.average_cost_for_optimal_decisions(y[perm], lp[perm], ec.CostMatrix(c)))
    assert min(refs) < brute - 1e-6           # below anything a threshold can attain
    assert abs(refs[0] - refs[1]) > 1e-6      # and order-dependent


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_likelihood_score_types(name):
    """Score types that need priors ("llr" for the binary sets, "log_likelihoods"
    for all), with deployment priors used both to form the posteriors and to
    weight the EC, as expected-cost does.  The real scores stand in for
    likelihoods: the binary sets' log-odds as LLRs, the log-posteriors (or
    log-softmaxed logits) as log-likelihoods.  Posteriors, Bayes decisions and
    the EC of Bayes decisions are compared.  (expected-cost's log-likelihood
    conversion needs 1-D priors while its ``average_cost`` needs a column, so
    its decisions and its EC are called separately.)"""
    y, _, _, lp = _data(name)
    k = lp.shape[1]
    p = _deployment_priors(k, seed=3 * k)
    cases = [("log_likelihoods", "log_likelihoods", lp)]
    if k == 2:
        cases.append(("llr", "log_likelihood_ratios", lp[:, 1] - lp[:, 0]))
    square, abstain = _cost_sets(k, np.bincount(y, minlength=k) / len(y), seed=k)
    for ours_type, ref_type, s64 in cases:
        s32 = s64.astype(np.float32)
        post_ref = ec.get_posteriors_from_scores(s64, p, ref_type)
        np.testing.assert_allclose(np.exp(np.asarray(log_posteriors(s32, priors=p, score_type=ours_type))),
                                   post_ref, atol=2e-6)
        for cs in (square, abstain):
            dec = np.asarray(bayes_decisions(s32, cs, priors=p, score_type=ours_type))
            got = np.asarray(bayes_expected_cost(y, s32, cs, priors=p, score_type=ours_type))
            for i, c in enumerate(cs):
                d_ref, post = ec.bayes_decisions(s64, ec.CostMatrix(c), priors=p, score_type=ref_type)
                differ = dec[i] != d_ref
                expected = post @ c
                gap = np.abs(expected[differ, dec[i][differ]] - expected[differ, d_ref[differ]])
                assert np.all(gap <= _TIE * np.abs(c).max()), f"{name} {ours_type}: non-tie disagreements"
                want = ec.average_cost(y, d_ref, ec.CostMatrix(c), priors=_ref_priors(p))
                w = p / np.bincount(y, minlength=k)
                slack = np.sum(w[y[differ]] * np.abs(c[y[differ], dec[i][differ]] - c[y[differ], d_ref[differ]]))
                assert abs(got[i] - want) <= RTOL * want + slack + 1e-9
        if ours_type == "llr":
            for c in _binary_costs():
                want = ec.average_cost_for_optimal_decisions(y, s64, ec.CostMatrix(c), priors=_ref_priors(p),
                                                             score_type=ref_type)
                got, _ = optimal_threshold_expected_cost(y, s32, c, priors=p, score_type="llr")
                np.testing.assert_allclose(float(got), want, rtol=RTOL)
