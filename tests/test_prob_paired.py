"""Paired and clustered comparisons (issue 4 item 4; paired vs unpaired, item 7).

References: the closed-form mean and variance of a Bayesian-bootstrap
mean, the percentile bootstrap of ``confidence-intervals`` (with and
without conditions), and numpy.
"""

import pathlib

import numpy as np
import pytest

import jax

import ecjax
from ecjax import prob
from ecjax.confusion import joint_outcome_table

KEY = jax.random.key(11)
DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data"


def test_paired_yields_match_bayesian_bootstrap_closed_form():
    # With w ~ Dirichlet(n_c) over the occupied cells, Y = sum_c w_c u_c has mean sum n_c u_c / N and
    # variance (sum n_c u_c^2 / N - mean^2) / (N + 1).
    rng = np.random.default_rng(0)
    n = 400
    labels = rng.integers(0, 3, n)
    decisions = np.stack([np.where(rng.random(n) < 0.8, labels, rng.integers(0, 3, n)),
                          np.where(rng.random(n) < 0.6, labels, rng.integers(0, 3, n))])
    u = np.array([[1.0, -0.5, 0.0], [-2.0, 2.0, 0.1], [0.0, -1.0, 0.7]])
    res = prob.compare(labels, decisions, utilities=u, key=KEY, num_draws=100_000, decompose=False)
    y = np.asarray(res.yields, np.float64)
    per_sample = np.stack([u[labels, decisions[0]], u[labels, decisions[1]]], 1)  # (N, M)
    for values, draws in [(per_sample[:, 0], y[:, 0]), (per_sample[:, 1], y[:, 1]),
                          (per_sample[:, 0] - per_sample[:, 1], y[:, 0] - y[:, 1])]:
        mean = values.mean()
        var = (np.mean(values ** 2) - mean ** 2) / (n + 1)
        assert abs(draws.mean() - mean) < 5 * np.sqrt(var / len(draws))
        assert abs(draws.var() / var - 1) < 0.03
    np.testing.assert_allclose(res.expected_costs, -res.yields)


def test_sst2_paired_interval_matches_confidence_intervals_bootstrap():
    from confidence_intervals import evaluate_with_conf_int

    # Two decision rules for GPT-2 zero-shot on the same SST-2 samples (argmax, and Bayes decisions
    # for a miss costing two false alarms): a genuinely paired comparison on real scores.
    labels = np.load(DATA / "sst2_gpt2" / "targets.npy", allow_pickle=False)
    scores = np.load(DATA / "sst2_gpt2" / "scores.npy", allow_pickle=False)
    dec = np.stack([scores.argmax(1), np.asarray(ecjax.bayes_decisions(scores, [[0.0, 1.0], [2.0, 0.0]]))])
    assert 0.05 < np.mean(dec[0] != dec[1]) < 0.5

    def accuracy_difference(lab, d1, d2):
        return np.mean(d1 == lab) - np.mean(d2 == lab)

    center, (lo, hi) = evaluate_with_conf_int(dec[0], accuracy_difference, labels=labels, samples2=dec[1],
                                              num_bootstraps=1000, alpha=10)
    res = prob.compare(labels, dec, utilities=np.eye(2), key=KEY, num_draws=20_000, decompose=False)
    diff = np.asarray(res.yields[:, 0] - res.yields[:, 1], np.float64)
    assert abs(diff.mean() - center) < 1e-3
    q = np.percentile(diff, [5, 95])
    # Bayesian and percentile bootstraps agree to within the anchor's Monte Carlo error (1000 resamples).
    assert abs(q[0] - lo) < 0.004 and abs(q[1] - hi) < 0.004


def test_sst2_gpt2_pair_is_not_paired_by_index():
    # shared/data's README says the two SST-2 systems share their targets; they do not (same class
    # counts, different order), and compare() refuses to pair them.
    a = np.load(DATA / "sst2_gpt2" / "targets.npy", allow_pickle=False)
    b = np.load(DATA / "sst2_gpt2_4shot" / "targets.npy", allow_pickle=False)
    assert np.array_equal(np.bincount(a), np.bincount(b)) and not np.array_equal(a, b)
    with pytest.raises(ecjax.InputError, match="share their labels"):
        prob.compare(np.stack([a, b]), np.stack([a, b]), utilities=np.eye(2), key=KEY, num_draws=200)


def _interval_width(res):
    return float(np.diff(res.interval("differences")[0, 1])[0])


def test_paired_interval_is_narrower_for_correlated_systems_and_equal_for_independent_ones():
    rng = np.random.default_rng(5)
    n = 3000
    labels = rng.integers(0, 2, n)
    a = np.where(rng.random(n) < 0.85, labels, 1 - labels)
    correlated = np.where(rng.random(n) < 0.04, 1 - a, a)  # B = A with 4 % of its decisions flipped
    independent = np.where(rng.random(n) < 0.85, labels, 1 - labels)
    kw = dict(utilities=np.eye(2), key=KEY, num_draws=20_000, decompose=False)
    for b, expected in [(correlated, "narrower"), (independent, "equal")]:
        dec = np.stack([a, b])
        paired = _interval_width(prob.compare(labels, dec, paired=True, **kw))
        unpaired = _interval_width(prob.compare(labels, dec, paired=False, **kw))
        if expected == "narrower":
            assert paired < 0.4 * unpaired
        else:
            assert abs(paired / unpaired - 1) < 0.08


def test_clustered_interval_matches_confidence_intervals_conditions():
    from confidence_intervals import evaluate_with_conf_int
    from confidence_intervals.utils import create_data

    decisions, labels, conditions = create_data(1000, 1000, 30, random_state=123456, scale=1.0)
    labels = labels.astype(int)

    def accuracy(lab, d):
        return np.mean(lab == d)

    _, (lo_c, hi_c) = evaluate_with_conf_int(decisions, accuracy, labels=labels, conditions=conditions,
                                             num_bootstraps=1000, alpha=10)
    kw = dict(utilities=np.eye(2), key=KEY, num_draws=20_000, decompose=False)
    clustered = np.asarray(prob.compare(labels, decisions[None], groups=conditions, **kw).yields[:, 0])
    iid = np.asarray(prob.compare(labels, decisions[None], **kw).yields[:, 0])
    width = lambda x: np.diff(np.percentile(x, [5, 95]))[0]  # noqa: E731
    assert abs(width(clustered) / (hi_c - lo_c) - 1) < 0.15
    assert width(clustered) > 1.5 * width(iid)


def test_joint_sampler_and_clustered_table():
    labels = np.array([0, 0, 1, 1, 1, 0])
    dec = np.array([[0, 1, 1, 1, 0, 0], [0, 0, 1, 0, 0, 0]])
    table = joint_outcome_table(labels, dec)
    w = np.asarray(prob.sample_joint_confusions(KEY, table, num_draws=1000))
    assert w.shape == (1000, 2, 2, 2)
    np.testing.assert_allclose(w.sum((-2, -1)), 1.0, atol=1e-5)
    # The class marginals are shared by the systems (same samples).
    np.testing.assert_allclose(w[:, 0].sum(-1), w[:, 1].sum(-1), atol=1e-6)
    ct = prob.clustered_outcome_table(labels, dec, ["a", "a", "b", "b", "c", "c"])
    assert ct.num_groups == 3 and int(ct.counts.sum()) == 6
    w = np.asarray(prob.sample_clustered_confusions(KEY, ct, num_draws=1000))
    np.testing.assert_allclose(w.sum((-2, -1)), 1.0, atol=1e-5)


def test_bad_paired_inputs():
    labels = np.array([0, 1, 1, 1])
    dec = np.array([[0, 1, 1, 0], [1, 1, 0, 0]])
    with pytest.raises(ecjax.InputError, match="JointOutcomeTable"):
        prob.sample_joint_confusions(KEY, dec, num_draws=10)
    with pytest.raises(ecjax.InputError, match="concentration"):
        prob.sample_joint_confusions(KEY, joint_outcome_table(labels, dec), num_draws=10, concentration=-0.5)
    with pytest.raises(ecjax.InputError, match="groups"):
        prob.clustered_outcome_table(labels, dec, [0, 1])
    with pytest.raises(ecjax.InputError, match="share their labels"):
        prob.compare(np.stack([labels, labels[::-1]]), dec, utilities=np.eye(2), key=KEY, num_draws=200)
    with pytest.raises(ecjax.InputError, match="groups"):
        prob.compare(np.stack([labels, labels[::-1]]), dec, utilities=np.eye(2), key=KEY, num_draws=200,
                     paired=False, groups=[0, 0, 1, 1])
