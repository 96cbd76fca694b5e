"""Paired and clustered comparisons (``ecjax._src.prob.paired``), and paired against unpaired.

References: the closed-form mean and variance of a Bayesian-bootstrap
mean, the percentile bootstrap of ``confidence-intervals`` (with and
without conditions), numpy (Dirichlet draws over all joint cells), and
scipy Beta distributions of the Dirichlet aggregates (the prior over all joint cells).
"""


import numpy as np
import pytest
from scipy import stats

import jax
import jax.numpy as jnp

import ecjax
from ecjax._src import prob
from ecjax.confusion import JointOutcomeTable, joint_outcome_table
from ecjax._src.prob import paired
from conftest import DATA_DIR

KEY = jax.random.key(11)
DATA = DATA_DIR  # ../shared/data, or ECJAX_DATA_DIR (tests/conftest.py)


def test_paired_yields_match_bayesian_bootstrap_closed_form():
    # concentration=0 is the Bayesian bootstrap: with w ~ Dirichlet(n_c) over the occupied cells,
    # Y = sum_c w_c u_c has mean sum n_c u_c / N and variance (sum n_c u_c^2 / N - mean^2) / (N + 1).
    rng = np.random.default_rng(0)
    n = 400
    labels = rng.integers(0, 3, n)
    decisions = np.stack([np.where(rng.random(n) < 0.8, labels, rng.integers(0, 3, n)),
                          np.where(rng.random(n) < 0.6, labels, rng.integers(0, 3, n))])
    u = np.array([[1.0, -0.5, 0.0], [-2.0, 2.0, 0.1], [0.0, -1.0, 0.7]])
    res = prob.compare(prob.Systems(labels, decisions), utilities=u, key=KEY, decompose=False, concentration=0.0,
                       settings=prob.MonteCarloSettings(num_draws=100_000))
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
    res = prob.compare(prob.Systems(labels, dec), utilities=np.eye(2), key=KEY, decompose=False,
                       settings=prob.MonteCarloSettings(num_draws=20_000))
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
        prob.compare(prob.Systems(np.stack([a, b]), np.stack([a, b])), utilities=np.eye(2), key=KEY,
                     settings=prob.MonteCarloSettings(num_draws=200))


def _interval_width(res):
    return float(np.diff(res.interval("differences")[0, 1])[0])


def test_paired_interval_is_narrower_for_correlated_systems_and_equal_for_independent_ones():
    rng = np.random.default_rng(5)
    n = 3000
    labels = rng.integers(0, 2, n)
    a = np.where(rng.random(n) < 0.85, labels, 1 - labels)
    correlated = np.where(rng.random(n) < 0.04, 1 - a, a)  # B = A with 4 % of its decisions flipped
    independent = np.where(rng.random(n) < 0.85, labels, 1 - labels)
    kw = dict(utilities=np.eye(2), key=KEY, decompose=False, settings=prob.MonteCarloSettings(num_draws=20_000))
    for b, expected in [(correlated, "narrower"), (independent, "equal")]:
        dec = np.stack([a, b])
        paired = _interval_width(prob.compare(prob.Systems(labels, dec, paired=True), **kw))
        unpaired = _interval_width(prob.compare(prob.Systems(labels, dec, paired=False), **kw))
        if expected == "narrower":
            assert paired < 0.4 * unpaired
        else:
            assert abs(paired / unpaired - 1) < 0.08


def test_clustered_interval_has_the_cluster_bootstraps_variance_and_is_narrower_than_resampling_within():
    from confidence_intervals import evaluate_with_conf_int
    from confidence_intervals.utils import create_data

    decisions, labels, conditions = create_data(1000, 1000, 30, random_state=123456, scale=1.0)
    labels = labels.astype(int)

    def accuracy(lab, d):
        return np.mean(lab == d)

    _, (lo_c, hi_c) = evaluate_with_conf_int(decisions, accuracy, labels=labels, conditions=conditions,
                                             num_bootstraps=1000, alpha=10)
    kw = dict(utilities=np.eye(2), key=KEY, decompose=False, settings=prob.MonteCarloSettings(num_draws=20_000))
    clustered = np.asarray(prob.compare(prob.Systems(labels, decisions[None], groups=conditions), **kw).yields[:, 0])
    iid = np.asarray(prob.compare(prob.Systems(labels, decisions[None]), **kw).yields[:, 0])
    width = lambda x: np.diff(np.percentile(x, [5, 95]))[0]  # noqa: E731
    # The cluster bootstrap (Dirichlet(1) weights over the G conditions, each keeping its samples): by the delta
    # method its accuracy has variance sum_g n_g^2 (a_g - a)^2 G / (N^2 (G + 1)) (Rubin 1981 over the
    # conditions' linearized totals), a_g the accuracy of condition g.
    correct = decisions == labels
    ids, n_g = np.unique(conditions, return_counts=True)
    a_g = np.array([correct[conditions == c].mean() for c in ids])
    g, n = len(ids), len(labels)
    closed_var = np.sum(n_g**2 * (a_g - correct.mean()) ** 2) / n**2 * g / (g + 1)
    assert abs(clustered.var() / closed_var - 1) < 0.1
    # confidence-intervals also resamples the samples within each condition: it counts the within-condition
    # variance (already in the spread of the conditions' totals) a second time, so its interval is wider.
    assert width(clustered) < 0.8 * (hi_c - lo_c)
    # Ignoring the conditions (i.i.d. samples) gives the binomial variance a (1 - a) / N, smaller here.
    assert width(clustered) > 1.1 * width(iid)


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
        prob.compare(prob.Systems(np.stack([labels, labels[::-1]]), dec), utilities=np.eye(2), key=KEY,
                     settings=prob.MonteCarloSettings(num_draws=200))
    with pytest.raises(ecjax.InputError, match="groups"):
        prob.compare(prob.Systems(np.stack([labels, labels[::-1]]), dec, paired=False, groups=[0, 0, 1, 1]),
                     utilities=np.eye(2), key=KEY, settings=prob.MonteCarloSettings(num_draws=200))


# ------------------------------------------------------------------ a prior over all joint cells

def _all_cells(k, d, m):
    """Every joint cell (class, decision 1, ..., decision M), in the row-major order of a (K, D, ..., D) array."""
    return np.stack(np.unravel_index(np.arange(k * d ** m), (k,) + (d,) * m), 1)


def _paths(cells, counts, k, d, num_draws, key):
    """Accuracy draws (S, M) from the three samplers that use a joint table, for the same counts."""
    m = cells.shape[1] - 1
    table = JointOutcomeTable(jnp.asarray(cells, jnp.int32), jnp.asarray(counts, jnp.float32), k, d)
    # Clustered, one sample per group: the two-level bootstrap reduces to eq. (1) exactly.
    samples = np.repeat(np.asarray(cells), np.asarray(counts, int), axis=0)
    clustered = prob.clustered_outcome_table(samples[:, 0], samples[:, 1:].T, np.arange(len(samples)),
                                             num_classes=k, num_decisions=d)
    # The scores-mode path (compare's per-draw decisions) takes the decisions of every draw, one weight per sample.
    k1, k2, k3 = jax.random.split(key, 3)
    out = {
        "paired": prob.sample_joint_confusions(k1, table, num_draws=num_draws),
        "clustered": prob.sample_clustered_confusions(k2, clustered, num_draws=num_draws),
        "scores": prob.paired.sample_joint_confusions_per_draw(
            k3, samples[:, 0], np.broadcast_to(samples[:, 1:].T, (num_draws, m, len(samples))), num_classes=k,
            num_decisions=d),
    }
    return {name: np.asarray(jnp.trace(w, axis1=-2, axis2=-1), np.float64) for name, w in out.items()}


# 10^5 draws through every sampler path, ~40 s: slow lane to keep CI under 20 minutes (the joint law is checked
# against numpy Dirichlet draws in test_joint_law_matches_numpy_dirichlet_over_all_cells)
@pytest.mark.slow
def test_three_discordant_pairs_give_a_beta_p_best_not_certainty():
    # Two binary systems agree on 17 samples; on the other 3, only B is right.  A sign test gives p = 0.125 and a
    # uniform Beta on the discordant pairs P(B better) = P(Beta(4, 1) > 1/2) = 0.9375; the Bayesian bootstrap
    # said exactly 1.  Under the prior over all 8 cells (a_J = 2 / 8 each) the masses of the 2 cells where only B
    # is right and the 2 where only A is right aggregate to Dirichlet(3 + 1/2, 1/2, ...), so
    # P(B better) = P(Beta(3.5, 0.5) > 1/2).
    cells = np.array([[0, 0, 0], [1, 1, 1], [0, 1, 0], [1, 0, 1]])
    counts = np.array([9, 8, 2, 1])  # N = 20
    a_joint = prob.rates.default_concentration(2, 2) / 2  # per joint cell: a / D**(M-1)
    reference = stats.beta(3 + 2 * a_joint, 2 * a_joint).sf(0.5)
    assert abs(reference - 0.9375) < 0.04
    for name, acc in _paths(cells, counts, 2, 2, 100_000, KEY).items():
        p_b = np.mean(acc[:, 1] > acc[:, 0])
        assert abs(p_b - reference) < 4 * np.sqrt(reference * (1 - reference) / 100_000), (name, p_b, reference)
        assert p_b < 0.99, name


@pytest.mark.slow  # ~12 s; the paired posterior is checked against references by this file's default-lane tests
def test_perfect_system_hdi_is_not_zero():
    # System A makes no error on 20 binary samples (B makes 3).  A's error rate is the sum of its K (D - 1)
    # off-diagonal marginal cells, each Dirichlet(a): Beta(a K (D - 1), N + a K) by aggregation, whose 90 % HDI
    # is [0, F^-1(0.9)] (decreasing density), not the Bayesian bootstrap's [0, 0].  (Same shapes as the test
    # above: the compiled samplers are reused.)
    k = d = 2
    labels = np.r_[np.zeros(11, int), np.ones(9, int)]
    b = labels.copy()
    b[[0, 5, 12]] = 1 - b[[0, 5, 12]]
    table = joint_outcome_table(labels, np.stack([labels, b]), num_classes=k, num_decisions=d)
    a = prob.rates.default_concentration(d, k)
    reference = stats.beta(a * k * (d - 1), 20 + a * k)
    for name, acc in _paths(np.asarray(table.cells), np.asarray(table.counts), k, d, 100_000, KEY).items():
        error = 1 - acc[:, 0]
        lo, hi = prob.hdi(error, 0.9)
        assert float(lo) < 1e-4 and float(hi) > 0.02, (name, lo, hi)
        assert abs(np.quantile(error, 0.9) - reference.ppf(0.9)) < 0.05 * reference.ppf(0.9), name
        assert stats.kstest(error[:20_000], reference.cdf).pvalue > 1e-3, name


@pytest.mark.parametrize("k, d, m", [(2, 2, 2), (10, 10, 2), (6, 6, 3)])
def test_joint_law_matches_numpy_dirichlet_over_all_cells(k, d, m):
    # The difference of two systems' accuracies depends on how the prior's mass splits over the joint cells,
    # not only on each system's marginal.  Reference: numpy Gamma draws over all K D**M cells (eq. 1).  The
    # three shapes exercise the prior drawn cell by cell (8 cells) and by stick breaking (1000 and 1296 cells).
    rng = np.random.default_rng(k * 100 + m)
    n = 150
    labels = rng.integers(0, k, n)
    dec = np.stack([np.where(rng.random(n) < acc, labels, rng.integers(0, d, n)) for acc in (0.8, 0.7, 0.6)[:m]])
    table = joint_outcome_table(labels, dec, num_classes=k, num_decisions=d)
    a_joint = prob.rates.default_concentration(d, k) / d ** (m - 1)
    plan = paired._prior_plan(prob.rates.default_concentration(d, k), k, d, m)
    assert plan.kind == ("dense" if k == 2 else "sticks")
    draws = 100_000 if k == 2 else 20_000  # 100_000 binary draws reuse the compiled sampler of the tests above
    w = np.asarray(prob.sample_joint_confusions(KEY, table, num_draws=draws), np.float64)
    acc = np.trace(w, axis1=-2, axis2=-1)
    cells = _all_cells(k, d, m)
    counts = np.zeros(len(cells))
    counts[np.ravel_multi_index(tuple(np.asarray(table.cells).T), (k,) + (d,) * m)] = np.asarray(table.counts)
    g = rng.standard_gamma(counts + a_joint, size=(draws, len(cells)))
    g /= g.sum(1, keepdims=True)
    ref = np.stack([g[:, cells[:, 0] == cells[:, 1 + j]].sum(1) for j in range(m)], 1)
    for j in range(1, m):
        assert stats.ks_2samp(acc[:, 0] - acc[:, j], ref[:, 0] - ref[:, j]).pvalue > 1e-3
    # The mean of every system's marginal: (n_m,kd + a) / (N + a K D), exactly.
    mean = np.asarray(paired.posterior_mean(table), np.float64)
    np.testing.assert_allclose(w.mean(0), mean, atol=5 * np.sqrt(w.var(0).max() / draws) + 1e-7)
    np.testing.assert_allclose(w.sum((-2, -1)), 1.0, atol=1e-5)
