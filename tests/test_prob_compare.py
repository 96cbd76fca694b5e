"""compare(): checks against references, ranking outputs, bad input.

References: numerical integration of Beta posteriors (scipy), direct
sweeps over the utility space written in numpy (Dyrland et al. 2022, eq. 13 and the
binary cost ratio), frequentist coverage on simulated test sets from a
known generator, arviz.hdi / arviz.summary, and numpy Bayes decisions.
"""


import numpy as np
import pytest
from scipy import integrate, stats

import arviz as az
import jax
import jax.numpy as jnp

import ecjax
from ecjax import prob
from ecjax.confusion import JointOutcomeTable
from conftest import DATA_DIR

KEY = jax.random.key(3)
DATA = DATA_DIR  # ../shared/data, or ECJAX_DATA_DIR (tests/conftest.py)


# ------------------------------------------------------------- checks against references

def test_p_higher_accuracy_matches_integral_of_two_beta_posteriors():
    # Two independent binary systems, test sets of different sizes.  Encoded as "correct / wrong"
    # decisions on class-0 samples, with priors (1, 0), the yield under the identity is the accuracy,
    # whose posterior is Beta(correct + 1/2, wrong + 1/2) (the default 1/D concentration).
    correct_a, n_a, correct_b, n_b = 171, 200, 122, 150
    dec_a = np.r_[np.zeros(correct_a, int), np.ones(n_a - correct_a, int)]
    dec_b = np.r_[np.zeros(correct_b, int), np.ones(n_b - correct_b, int)]
    res = prob.compare(prob.Systems([np.zeros(n_a, int), np.zeros(n_b, int)], [dec_a, dec_b], paired=False),
                       utilities=np.eye(2), priors=[1.0, 0.0], key=KEY, decompose=False,
                       settings=prob.MonteCarloSettings(num_draws=100_000))
    beta_a = stats.beta(correct_a + 0.5, n_a - correct_a + 0.5)
    beta_b = stats.beta(correct_b + 0.5, n_b - correct_b + 0.5)
    reference, _ = integrate.quad(lambda x: beta_a.pdf(x) * beta_b.cdf(x), 0, 1, epsabs=1e-12, limit=200)
    assert 0.6 < reference < 0.95  # a non-trivial comparison
    assert abs(res.pairwise[0, 1] - reference) < 0.005
    assert abs(res.p_best[0] - reference) < 0.005


def _seed004_yields(x, y, conf):
    """Yields of Dyrland et al. (2022) eq. 13 on a grid, written from the seed (rows = decision) with C_ij = P(decide i, class j)."""
    u00, u01 = 1 - x * (x > 0), y * (y > 0)
    u10, u11 = -y * (y < 0), 1 + x * (x < 0)
    return [u00 * c[0, 0] + u01 * c[0, 1] + u10 * c[1, 0] + u11 * c[1, 1] for c in conf]


# ~30 s: slow lane to keep CI under 20 minutes (P(best) from costs alone is also checked by the doubt tests)
@pytest.mark.slow
def test_utility_uncertainty_alone_p_best_is_the_prior_mass_where_a_system_wins():
    priors = np.array([0.3, 0.7])
    tnr_tpr = [(0.95, 0.70), (0.80, 0.90), (0.88, 0.82)]
    rates = np.array([[[tn, 1 - tn], [1 - tp, tp]] for tn, tp in tnr_tpr])  # rows = true class
    counts = rates * priors[None, :, None] * 1e8  # huge test set: no doubt from the rates
    # Seed orientation for the reference: C[decision, class] = P(class) R[class, decision].
    conf = [(r * priors[:, None]).T for r in rates]
    g = (np.arange(1500) + 0.5) / 1500 * 2 - 1
    x, y = np.meshgrid(g, g, indexing="ij")
    inside = (np.abs(x - y) <= 1)
    winner = np.argmax(np.stack(_seed004_yields(x, y, conf)), 0)
    gauss = np.exp(-0.5 * (x ** 2 + y ** 2) / (1 / 3) ** 2) * inside
    for prior, weight in [(prob.seed004_uniform(), inside.astype(float)), (prob.seed004_gaussian(), gauss)]:
        reference = np.array([(weight * (winner == m)).sum() for m in range(3)]) / weight.sum()
        res = prob.compare_counts(counts, utilities=prior, key=KEY, settings=prob.MonteCarloSettings(num_draws=100_000))
        np.testing.assert_allclose(res.p_best, reference, atol=0.006)
        # All the doubt comes from the utilities.
        np.testing.assert_allclose(res.doubt.p_best_costs_only, reference, atol=0.006)
        assert res.doubt.doubt_rates_only < 1e-3

    # The binary cost ratio: costs [[0, 1], [r, 0]], r log-uniform on [0.5, 20]: sweep log r.
    log_r = np.log(0.5) + (np.arange(200_000) + 0.5) / 200_000 * (np.log(20) - np.log(0.5))
    r = np.exp(log_r)
    ec = np.stack([priors[0] * (1 - tn) + priors[1] * (1 - tp) * r for tn, tp in tnr_tpr])
    reference = np.array([np.mean(np.argmin(ec, 0) == m) for m in range(3)])
    res = prob.compare_counts(counts, costs=prob.cost_ratio(0.5, 20), key=KEY,
                              settings=prob.MonteCarloSettings(num_draws=100_000))
    np.testing.assert_allclose(res.p_best, reference, atol=0.006)


def _binary_decisions(rng, labels, *sensitivity_specificity):
    """One row of binary decisions per system: right with probability its sensitivity (label 1) or specificity."""
    n = len(labels)
    return np.stack([np.where(rng.random(n) < np.where(labels == 1, se, sp), labels, 1 - labels)
                     for se, sp in sensitivity_specificity])


def _simulate_counts(rng, num_sets, n, priors, rates):
    k, d = rates.shape
    classes = rng.multinomial(n, priors, size=num_sets)  # (T, K)
    counts = np.stack([np.stack([rng.multinomial(classes[t, i], rates[i]) for i in range(k)])
                       for t in range(num_sets)])
    return counts


@pytest.mark.slow  # 12-19 s of simulated coverage; test_prob_rates_coverage keeps the faster coverage checks
def test_frequentist_coverage_of_90_percent_intervals():
    # 500 test sets of N = 300 from a known 3-class generator; the 90 % HDI of the yield must cover
    # the true yield sum_ij U_ij P_i R_ij in 90 +- 3 % of them.  Vectorized over the sets with vmap.
    rng = np.random.default_rng(2024)
    priors = np.array([0.5, 0.3, 0.2])
    rates = np.array([[0.85, 0.10, 0.05], [0.15, 0.70, 0.15], [0.05, 0.15, 0.80]])
    utilities = np.array([[1.0, -0.5, -1.0], [-2.0, 2.0, 0.0], [-4.0, -1.0, 3.0]])
    truth = float(np.sum(utilities * priors[:, None] * rates))
    counts = jnp.asarray(_simulate_counts(rng, 500, 300, priors, rates))
    u = jnp.broadcast_to(jnp.asarray(utilities, jnp.float32), (2000, 3, 3))

    def interval(key, c):
        k1, k2 = jax.random.split(key)
        r = prob.sample_rates(k1, c, num_draws=2000)
        p = prob.sample_class_priors(k2, None, c.sum(-1), num_draws=2000)
        y, _, _ = prob.evaluate_draws(u, r[:, None], p)
        return prob.hdi(y[:, 0], 0.9)

    iv = np.asarray(jax.vmap(interval)(jax.random.split(KEY, 500), counts))
    coverage = np.mean((iv[:, 0] <= truth) & (truth <= iv[:, 1]))
    assert 0.87 <= coverage <= 0.93, coverage


@pytest.mark.slow  # 12-19 s of simulated coverage; test_prob_rates_coverage keeps the faster coverage checks
def test_frequentist_coverage_of_paired_difference_intervals():
    # Paired model (Bayesian bootstrap over the 8 joint cells of two binary systems): coverage of the
    # 90 % HDI of the yield difference over 500 simulated test sets.
    rng = np.random.default_rng(7)
    cells = np.array([[c, a, b] for c in range(2) for a in range(2) for b in range(2)])
    joint = np.array([0.40, 0.05, 0.08, 0.02, 0.03, 0.04, 0.06, 0.32])  # P(class, dec A, dec B)
    utilities = np.array([[1.0, -1.0], [-3.0, 2.0]])
    truth = float(np.sum(joint * (utilities[cells[:, 0], cells[:, 1]] - utilities[cells[:, 0], cells[:, 2]])))
    counts = jnp.asarray(rng.multinomial(300, joint, size=500), jnp.float32)
    u = jnp.broadcast_to(jnp.asarray(utilities, jnp.float32), (2000, 2, 2))

    def interval(key, c):
        table = JointOutcomeTable(jnp.asarray(cells, jnp.int32), c, 2, 2)
        w = prob.sample_joint_confusions(key, table, num_draws=2000)
        y, _, _ = prob.evaluate_draws(u, w, w[:, 0].sum(-1))
        return prob.hdi(y[:, 0] - y[:, 1], 0.9)

    iv = np.asarray(jax.vmap(interval)(jax.random.split(KEY, 500), counts))
    coverage = np.mean((iv[:, 0] <= truth) & (truth <= iv[:, 1]))
    assert 0.87 <= coverage <= 0.93, coverage


@pytest.mark.slow  # 500 calls of compare (~15 s); the vmapped check above tests the same coverage in the default lane
def test_frequentist_coverage_through_compare():
    # The same check through the public entry point, one call per test set (about 15 ms each).
    rng = np.random.default_rng(99)
    priors = np.array([0.7, 0.3])
    rates = np.array([[0.9, 0.1], [0.25, 0.75]])
    utilities = np.array([[0.0, -1.0], [-5.0, 0.0]])
    truth = float(np.sum(utilities * priors[:, None] * rates))
    hits = 0
    for t in range(500):
        labels = rng.choice(2, size=250, p=priors)
        decisions = np.where(rng.random(250) < rates[labels, labels], labels, 1 - labels)
        res = prob.compare(prob.Systems(labels, decisions[None]), utilities=utilities, key=jax.random.key(t),
                           decompose=False, settings=prob.MonteCarloSettings(num_draws=4000))
        hits += res.hdi[0, 0] <= truth <= res.hdi[0, 1]
    assert 0.87 <= hits / 500 <= 0.93


# ------------------------------------------------------------- ranking outputs

@pytest.fixture(scope="module")
def three_systems():
    rng = np.random.default_rng(1)
    n = 600
    labels = rng.integers(0, 3, n)
    dec = np.stack([np.where(rng.random(n) < acc, labels, rng.integers(0, 3, n)) for acc in (0.80, 0.78, 0.70)])
    prior = prob.truncated_normal(1 - np.eye(3), 0.4, low=0.0, high=3.0, kind="cost")
    res = prob.compare(prob.Systems(labels, {"a": dec[0], "b": dec[1], "c": dec[2]}), utilities=prior, key=KEY,
                       rope=0.01, settings=prob.MonteCarloSettings(num_draws=20_000))
    return labels, dec, prior, res


def test_ranking_outputs_are_consistent(three_systems):
    _, _, _, res = three_systems
    assert res.systems == ("a", "b", "c")
    y = np.asarray(res.yields)
    assert y.shape == (20_000, 3)
    rp = res.rank_probabilities
    np.testing.assert_allclose(rp.sum(0), 1.0, atol=1e-6)
    np.testing.assert_allclose(rp.sum(1), 1.0, atol=1e-6)
    np.testing.assert_allclose(res.p_best, rp[:, 0])
    # Against numpy on the same draws.
    np.testing.assert_allclose(res.p_best, np.bincount(y.argmax(1), minlength=3) / len(y), atol=1e-6)
    np.testing.assert_allclose(res.pairwise[0, 1], np.mean(y[:, 0] > y[:, 1]), atol=1e-6)
    d = y[:, 0] - y[:, 2]
    np.testing.assert_allclose(res.rope_probabilities[0, 2], [np.mean(d > 0.01), np.mean(np.abs(d) <= 0.01),
                                                              np.mean(d < -0.01)], atol=1e-6)
    np.testing.assert_allclose(res.rope_probabilities.sum(-1)[~np.eye(3, dtype=bool)], 1.0, atol=1e-6)
    np.testing.assert_allclose(res.expected_costs, -res.yields)
    assert res.recommendation == int(np.argmax(y.mean(0)))
    assert res.recommendation_probability == pytest.approx(res.p_best[res.recommendation])
    assert res.best == res.systems[res.recommendation]


def test_hdi_matches_arviz_and_to_arviz_summary(three_systems):
    _, _, _, res = three_systems
    y = np.asarray(res.yields, np.float64)
    ref = np.stack([az.hdi(y[:, m], hdi_prob=0.9) for m in range(3)])
    np.testing.assert_allclose(res.hdi, ref, atol=1e-6)
    idata = res.to_arviz()
    post = idata.posterior
    assert post["utility_yield"].dims == ("chain", "draw", "system")
    assert list(post.coords["system"].values) == ["a", "b", "c"]
    # Costs with a random diagonal: in about 1 % of the draws one decision is the cheapest for every class, the
    # NEC is undefined there, and to_arviz leaves it out rather than summarize NaN (pandas' max skips NaN).
    from scipy import stats

    mean = np.broadcast_to(1 - np.eye(3), (200_000, 3, 3))
    c = stats.truncnorm.rvs((0.0 - mean) / 0.4, (3.0 - mean) / 0.4, loc=mean, scale=0.4,
                            random_state=np.random.default_rng(0))
    cheapest = np.argmin(c, -1)  # per class: the cheapest decision
    reference = np.mean(np.all(cheapest == cheapest[:, :1], -1))  # the same decision for every class
    se = np.sqrt(reference * (1 - reference) / 20_000)
    assert reference > 0.002 and abs(res.nec_undefined_fraction - reference) < 4 * se
    assert "normalized_expected_cost" not in post and "undefined" in post.attrs["normalized_expected_cost"]
    summary = az.summary(idata)
    assert summary.notna().all().all()
    np.testing.assert_allclose(summary["mean"].to_numpy()[:3], y.mean(0), atol=1e-3)
    assert summary["r_hat"].max() < 1.01  # independent draws split into chains


def test_nec_matches_expected_cost_package():
    from expected_cost import ec
    from expected_cost.ec import CostMatrix

    rng = np.random.default_rng(12)
    n = 1000
    labels = rng.integers(0, 3, n)
    dec = np.stack([np.where(rng.random(n) < acc, labels, rng.integers(0, 4, n)) for acc in (0.7, 0.5)])
    utilities = np.array([[2.0, -1.0, -1.0, 0.5], [-3.0, 1.0, 0.0, 0.2], [-1.0, -2.0, 4.0, 1.0]])  # col 3: abstain
    costs = utilities.max(1, keepdims=True) - utilities  # row-normalized costs (Ferrer 2025, §2)
    reference = [ec.average_cost(labels, d, CostMatrix(costs), adjusted=True) for d in dec]
    counts = np.stack([np.asarray(ecjax.confusion_matrix(labels, d, num_classes=3, num_decisions=4)) for d in dec])
    # A huge test set with the same rates: the NEC posterior concentrates on the anchor's NEC.
    res = prob.compare_counts(counts * 10 ** 6, utilities=utilities, key=KEY, decompose=False,
                              settings=prob.MonteCarloSettings(num_draws=20_000))
    np.testing.assert_allclose(np.asarray(res.normalized_expected_costs).mean(0), reference, rtol=1e-3)
    # The NEC orders the systems like the yield within each draw (same utilities and priors).
    y = np.asarray(res.yields)
    nec = np.asarray(res.normalized_expected_costs)
    assert np.all((nec[:, 0] < nec[:, 1]) == (y[:, 0] > y[:, 1]))


def test_fixed_costs_decisions_mode_and_doubt_split():
    rng = np.random.default_rng(4)
    n = 2000
    labels = rng.integers(0, 2, n)
    dec = np.stack([np.where(rng.random(n) < 0.9, labels, 1 - labels),
                    np.where(rng.random(n) < 0.89, labels, 1 - labels)])
    c = np.array([[0.0, 1.0], [2.0, 0.0]])
    alpha = 0.25
    res = prob.compare(prob.Systems(labels, dec), costs=c, concentration=alpha, key=KEY,
                       settings=prob.MonteCarloSettings(num_draws=20_000))
    # Paired closed form (numpy): each system's joint weights are Dirichlet(n_ij + alpha) over its K D cells,
    # so E[yield] = -sum_ij c_ij (n_ij + alpha) / (N + K D alpha); alpha = 0 is the empirical yield.
    counts = np.stack([np.histogram2d(labels, d, bins=[2, 2], range=[[0, 2], [0, 2]])[0] for d in dec])
    reference = -np.einsum("ij,mij->m", c, counts + alpha) / (n + 4 * alpha)
    assert res.info["expected_yield"] == "closed form"
    np.testing.assert_allclose(res.expected_yield, reference, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(res.yields, np.float64).mean(0), reference,
                               atol=5 * float(res.yields.std(0).max()) / np.sqrt(20_000))
    # Known costs and the test set's own class frequencies: the costs and the priors add no doubt at all,
    # and the rates-only posterior is the full one.  (Before, "costs only" plugged in the empirical rates
    # and reported the point-estimate ranking as a doubt of 0 or 1.)
    d = res.doubt
    assert d.p_best_costs_only is None and d.doubt_costs_only == 0.0
    assert d.p_best_priors_only is None and d.doubt_priors_only == 0.0
    # p_best is a float32 mean.
    assert d.doubt_rates_only == d.doubt_all == pytest.approx(1 - res.p_best[res.recommendation], abs=1e-6)
    np.testing.assert_allclose(d.p_best_rates_only, res.p_best, atol=0.01)


def test_paired_with_fixed_priors_gives_balanced_accuracy():
    from sklearn.metrics import balanced_accuracy_score

    rng = np.random.default_rng(9)
    n = 1500
    labels = (rng.random(n) < 0.2).astype(int)
    dec = _binary_decisions(rng, labels, (0.6, 0.95), (0.8, 0.85))
    res = prob.compare(prob.Systems(labels, dec), utilities=np.eye(2), priors=[0.5, 0.5], key=KEY, concentration=0.0,
                       decompose=False, settings=prob.MonteCarloSettings(num_draws=20_000))
    # Under the Bayesian bootstrap (concentration 0, no longer the default) E[R_ii] is the empirical recall, so
    # the mean yield with priors (1/2, 1/2) is the balanced accuracy.
    reference = [balanced_accuracy_score(labels, d) for d in dec]
    se = np.asarray(res.yields).std(0) / np.sqrt(20_000)
    assert np.all(np.abs(res.expected_yield - reference) < 5 * se)


def test_identical_systems_share_p_best_and_are_reported_as_tied():
    rng = np.random.default_rng(8)
    labels = rng.integers(0, 2, 300)
    d = np.where(rng.random(300) < 0.8, labels, 1 - labels)
    res = prob.compare(prob.Systems(labels, np.stack([d, d])), utilities=np.eye(2), key=KEY,
                       settings=prob.MonteCarloSettings(num_draws=20_000))
    np.testing.assert_allclose(res.p_best, [0.5, 0.5], atol=0.02)
    # The paired prior gives the cells where the two systems disagree a little mass (they might differ off this
    # test set), symmetrically: in each draw one of them is ahead by a hair, each half of the time.
    np.testing.assert_allclose(res.pairwise[0, 1] + res.pairwise[1, 0], 1.0, atol=1e-3)
    np.testing.assert_allclose(res.pairwise[0, 1], 0.5, atol=0.02)
    # The difference is at most the prior's share of the joint mass (A = 2 pseudo-observations against 300).
    assert np.max(np.abs(np.asarray(res.yields)[:, 0] - np.asarray(res.yields)[:, 1])) < 0.05
    # A tie is not doubt: the systems are interchangeable.
    assert res.ties == (("system 0", "system 1"),)
    assert res.doubt.as_dict() == {"all": 0.0, "costs_only": 0.0, "priors_only": 0.0, "rates_only": 0.0}


def test_doubt_of_the_issue_example_fixed_costs():
    # The reported example: fixed 0-1 costs, A right on 18 of 20 samples, B on 1790 of 2000 (unpaired, priors
    # fixed at 1/2).  Before: Doubt(both=0.379, costs_only=1.000, rates_only=0.379): "costs only" plugged in
    # the empirical rates (A 0.900 > B 0.895) while the recommendation used the posterior means.
    alpha = 0.5
    errors = {"A": (20, 1), "B": (2000, 105)}  # (samples, errors per class), half the samples per class
    labels, decisions = [], []
    for n, e in errors.values():
        y = np.repeat([0, 1], n // 2)
        wrong = np.r_[np.arange(e), n // 2 + np.arange(e)]
        d = y.copy()
        d[wrong] = 1 - d[wrong]
        labels.append(y)
        decisions.append(d)
    res = prob.compare(prob.Systems(labels, decisions, paired=False), costs=1 - np.eye(2), priors=[0.5, 0.5],
                       concentration=alpha, key=KEY, settings=prob.MonteCarloSettings(num_draws=20_000))
    # Reference: the error rates are independent Beta(e + alpha, n/2 - e + alpha) posteriors; the yield is
    # -(R_01 + R_10) / 2.  Closed-form expected yields, and P(A better) by numpy draws.
    rng = np.random.default_rng(0)
    closed, draws = [], []
    for n, e in errors.values():
        a, b = e + alpha, n // 2 - e + alpha
        closed.append(-a / (a + b))
        draws.append(-(rng.beta(a, b, 2_000_000) + rng.beta(a, b, 2_000_000)) / 2)
    np.testing.assert_allclose(res.expected_yield, closed, rtol=1e-6)
    assert res.best == "system 1"  # B: the larger test set wins on posterior means
    reference = np.mean(draws[0] > draws[1])
    assert 0.2 < reference < 0.5
    d = res.doubt
    assert abs(d.doubt_all - reference) < 0.012
    assert d.doubt_rates_only == d.doubt_all  # the only uncertain source
    assert d.doubt_costs_only == 0.0 and d.doubt_priors_only == 0.0
    assert repr(d) == f"Doubt(all={d.doubt_all:.3f}, costs_only=0.000, priors_only=0.000, rates_only={d.doubt_all:.3f})"


def test_rates_only_doubt_vanishes_with_the_test_set():
    priors = np.array([0.3, 0.7])
    # The expected costs cross at r = 5.7, near E[r] = 5.3: A wins at U_hat by a small margin.
    rates = np.array([[[0.95, 0.05], [0.20, 0.80]], [[0.75, 0.25], [0.185, 0.815]]])
    costs = prob.cost_ratio(0.5, 20)
    previous = 1.0
    for n in (2000, 2 * 10**6, 2 * 10**10):
        counts = rates * priors[None, :, None] * n
        res = prob.compare_counts(counts, costs=costs, priors=priors, key=KEY,
                                  settings=prob.MonteCarloSettings(num_draws=20_000))
        d = res.doubt
        assert d.doubt_priors_only == 0.0  # fixed priors
        assert d.doubt_rates_only < previous
        previous = d.doubt_rates_only
    assert previous < 1e-3
    # What remains is the doubt of the costs: the prior mass of the cost ratios where B loses at the true
    # rates (r log-uniform on [0.5, 20]; B wins iff its expected cost is lower).
    r = np.exp(np.log(0.5) + (np.arange(200_000) + 0.5) / 200_000 * np.log(40))
    ec = [priors[0] * rt[0, 1] + priors[1] * rt[1, 0] * r for rt in rates]
    winner = res.recommendation
    np.testing.assert_allclose(d.doubt_costs_only, np.mean(ec[1 - winner] < ec[winner]), atol=0.01)
    np.testing.assert_allclose(d.doubt_all, d.doubt_costs_only, atol=0.01)


def _posterior_mean_rates(counts, alpha):
    """Dirichlet(n + alpha) posterior mean of each row of (..., K, D) counts."""
    counts = np.asarray(counts, np.float64) + alpha
    return counts / counts.sum(-1, keepdims=True)


def test_scores_mode_per_draw_decisions_follow_the_drawn_costs():
    from ecjax._src.prob.rates import default_class_concentration

    names = ("sst2_gpt2", "sst2_gpt2_4shot")
    labels = {n: np.load(DATA / n / "targets.npy", allow_pickle=False) for n in names}
    scores = {n: np.load(DATA / n / "scores.npy", allow_pickle=False) for n in names}
    alpha = 0.5
    # The two SST-2 systems are not paired by index (see test_prob_paired): compare them unpaired.
    res = prob.compare(prob.Systems(labels, scores=scores, decision_rule="per_draw", paired=False),
                       costs=prob.cost_ratio(0.2, 5), concentration=alpha, key=KEY,
                       settings=prob.MonteCarloSettings(num_draws=20_000))
    assert res.info["decision_rule"] == "per_draw" and res.info["expected_yield"] == "Monte Carlo"
    # Reference for the costs-only ranking: sweep log r, make numpy Bayes decisions for each r (decide 1 iff
    # r P(1|x) > P(0|x)), and evaluate them at the posterior mean rates and priors (the costs-only component).
    k = 2
    n_i = np.bincount(labels[names[0]], minlength=k)
    a_p = default_class_concentration(k)
    p_bar = (n_i + a_p) / (n_i.sum() + k * a_p)
    r = np.exp(np.linspace(np.log(0.2), np.log(5), 4001))
    ec, counts = [], []
    for n in names:
        s, lab = scores[n], labels[n]
        post = np.exp(s - s.max(1, keepdims=True))
        post /= post.sum(1, keepdims=True)
        d = (r[:, None] * post[None, :, 1] > post[None, :, 0]).astype(int)  # (R, N)
        c = np.stack([[np.bincount(dr[lab == i], minlength=2) for i in range(k)] for dr in d])  # (R, K, D)
        rr = _posterior_mean_rates(c, alpha)
        ec.append(p_bar[0] * rr[:, 0, 1] + p_bar[1] * r * rr[:, 1, 0])
        counts.append(c)
    tied = np.all(counts[0] == counts[1], axis=(1, 2))  # identical counts: identical yields, a tie
    # Ties are no system's P(best) (issue 31.2: a draw whose systems decide alike is a tie), and no doubt.
    reference = np.mean((ec[0] < ec[1]) & ~tied)
    assert 0.05 < reference < 0.95  # the winner depends on the costs
    assert abs(res.doubt.p_best_costs_only[0] - reference) < 0.012
    winner = int(np.mean(ec[1]) < np.mean(ec[0]))  # the system of highest expected yield under this component
    assert res.doubt.recommendations["costs_only"] == winner
    assert abs(res.doubt.doubt_costs_only - np.mean((ec[1 - winner] < ec[winner]) & ~tied)) < 0.012
    # Fixed costs: the decisions are the same in every draw, so the expected yield is the closed form
    # -sum_ij c_ij E[P_i] E[R_ij] of the numpy Bayes decisions, whichever rule.
    c = np.array([[0.0, 1.0], [3.0, 0.0]])
    for rule in ("per_draw", "expected_utility"):
        fixed = prob.compare(prob.Systems(labels, scores=scores, paired=False, decision_rule=rule), costs=c,
                             concentration=alpha, key=KEY, decompose=False,
                             settings=prob.MonteCarloSettings(num_draws=20_000))
        assert fixed.info["expected_yield"] == "closed form"
        for m, n in enumerate(names):
            post = np.exp(scores[n] - scores[n].max(1, keepdims=True))
            d = np.argmin(post @ c, 1)
            cnt = np.stack([np.bincount(d[labels[n] == i], minlength=2) for i in range(k)])
            closed = -np.sum(c * p_bar[:, None] * _posterior_mean_rates(cnt, alpha))
            assert fixed.expected_yield[m] == pytest.approx(closed, rel=1e-6)


def test_uncertain_deployment_priors_are_their_own_doubt_component():
    rng = np.random.default_rng(6)
    n = 3000
    labels = (rng.random(n) < 0.3).astype(int)
    dec = _binary_decisions(rng, labels, (0.9, 0.7), (0.6, 0.95))
    prevalence = prob.interval_priors([0.95, 0.02], [0.98, 0.05])
    alpha = 0.5
    res = prob.compare(prob.Systems(labels, dec), costs=np.array([[0.0, 1.0], [30.0, 0.0]]), priors=prevalence,
                       concentration=alpha, key=KEY, settings=prob.MonteCarloSettings(num_draws=20_000))
    # Reference by a direct sweep over the prevalence (uniform on [0.02, 0.05]) with the posterior mean rates.
    rr = [_posterior_mean_rates([[np.sum((labels == i) & (d == j)) for j in range(2)] for i in range(2)], alpha)
          for d in dec]
    p1 = np.linspace(0.02, 0.05, 30001)
    ec = [(1 - p1) * r[0, 1] + p1 * 30 * r[1, 0] for r in rr]
    reference = np.mean(ec[0] < ec[1])
    assert 0.05 < reference < 0.95
    assert abs(res.doubt.p_best_priors_only[0] - reference) < 0.012
    # The costs are fixed: no doubt from them (the priors used to be counted as "costs").
    assert res.doubt.p_best_costs_only is None and res.doubt.doubt_costs_only == 0.0
    # Closed form: E[yield_m] = -sum_ij c_ij E[P_i] E[R_m,ij], E[P] = the midpoints of the intervals (K = 2).
    p_bar = np.array([0.965, 0.035])
    closed = [-(p_bar[0] * r[0, 1] + 30 * p_bar[1] * r[1, 0]) for r in rr]
    np.testing.assert_allclose(res.expected_yield, closed, rtol=1e-6)


# ---------------------------------------------------------------- bad input

def test_bad_compare_inputs():
    labels = np.array([0, 1, 1, 0, 1, 0])
    dec = np.array([[0, 1, 1, 0, 1, 1], [0, 2, 1, 0, 1, 0]])
    kw = dict(key=KEY, settings=prob.MonteCarloSettings(num_draws=200))
    with pytest.raises(ecjax.InputError, match="columns"):
        prob.compare(prob.Systems(labels, dec), utilities=np.eye(2), **kw)  # decision 2 with a 2-column matrix
    with pytest.raises(ecjax.InputError, match="too few draws"):
        prob.compare(prob.Systems(labels, dec[:1]), utilities=np.eye(2), key=KEY, hdi_prob=0.9,
                     settings=prob.MonteCarloSettings(num_draws=50))
    with pytest.raises(ecjax.InputError, match="key"):
        prob.compare(prob.Systems(labels, dec[:1]), utilities=np.eye(2),
                     settings=prob.MonteCarloSettings(num_draws=200))
    with pytest.raises(ecjax.InputError, match="exactly one of `utilities` and `costs`"):
        prob.compare(prob.Systems(labels, dec[:1]), utilities=np.eye(2), costs=np.eye(2), **kw)
    with pytest.raises(ecjax.InputError, match="rope"):
        prob.compare(prob.Systems(labels, dec[:1]), utilities=np.eye(2), rope=-0.1, **kw)
    with pytest.raises(ecjax.InputError, match="rows"):
        prob.compare(prob.Systems(labels + 1, dec[:1]), utilities=np.eye(2), **kw)
    with pytest.raises(ecjax.InputError, match="concentration"):
        prob.compare(prob.Systems(labels, dec[:1]), utilities=np.eye(2), concentration=-1, **kw)
    with pytest.raises(ecjax.InputError, match="no test samples"):
        prob.compare(prob.Systems(np.zeros(6, int), dec[:1]), utilities=np.eye(2), priors=[0.5, 0.5], **kw)
    with pytest.raises(ecjax.InputError, match="systems"):
        prob.compare(prob.Systems(labels, dec[:1], names=["a", "b"]), utilities=np.eye(2), **kw)
    with pytest.raises(ecjax.InputError, match="K = 2"):
        prob.compare(prob.Systems(labels, scores=np.zeros((1, 6, 3)), score_type="logits"), utilities=np.eye(2), **kw)
    with pytest.raises(ecjax.InputError, match="exactly one of `decisions` and `scores`"):
        prob.compare(prob.Systems(labels), utilities=np.eye(2), **kw)
    with pytest.raises(ecjax.InputError, match="hdi_prob"):
        prob.compare(prob.Systems(labels, dec[:1]), utilities=np.eye(2), hdi_prob=1.5, **kw)
    with pytest.raises(ecjax.InputError, match="too few draws"):
        prob.hdi(np.zeros((20, 2)), 0.95)


def test_compare_counts_and_precision_arguments_are_checked_by_the_shared_validators():
    kw = dict(key=KEY, settings=prob.MonteCarloSettings(num_draws=200))
    with pytest.raises(ecjax.InputError, match=r"`counts` must be \(K, D\) or \(M, K, D\) with K = 2, D = 2 \(the "
                                               r"utility matrix's shape\), got shape \(1, 3, 3\)"):
        prob.compare_counts(np.ones((1, 3, 3)), utilities=np.eye(2), **kw)
    with pytest.raises(ecjax.InputError, match="`counts` has a matrix with no samples"):
        prob.compare_counts(np.stack([np.ones((2, 2)), np.zeros((2, 2))]), utilities=np.eye(2), **kw)
    with pytest.raises(ecjax.InputError, match="`max_draws` must be >= 100, got 50"):
        prob.draw_to_precision(lambda s: None, 0.01, num_draws=100, max_draws=50)
    with pytest.raises(ecjax.InputError, match=r"score_type='llr' needs binary scores \(K = 2\)"):
        prob.compare(prob.Systems([0, 1], scores=np.zeros((1, 2)), score_type="llr"), utilities=np.eye(3), **kw)
    with pytest.raises(ecjax.InputError, match="give `groups` or `scores`, not both"):
        prob.compare(prob.Systems([0, 1], scores=np.zeros((1, 2)), score_type="llr", groups=[0, 1]),
                     utilities=np.eye(2), **kw)
