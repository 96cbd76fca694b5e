"""Sample weights in prob.compare and in the hierarchical model's counts.

Frequency weights: a sample of weight w counts as w samples.  References:
the same comparison on the repeated samples (same key: the same draws), the
same comparison on the samples without those of weight 0, the closed-form
posterior means written here in numpy from the formulas of compare's module
docstring, numpy's Dirichlet sampler, the Dirichlet's variance, scikit-learn's
weighted confusion matrix and scipy's log-gamma.
"""

import zlib

import numpy as np
import pytest
from scipy import special, stats
from sklearn.metrics import confusion_matrix

import jax

import ecjax
from ecjax import prob
from ecjax._src.prob import paired as paired_mod
from ecjax._src.prob.hierarchical import counts_from_sets, dirichlet_multinomial_log_likelihood

KEY = jax.random.key(13)
COSTS = prob.cost_ratio(2, 5)  # an uncertain binary cost ratio: decisions per draw differ


def _binary(n, accuracies, rng):
    y = rng.integers(0, 2, n)
    dec = np.stack([np.where(rng.random(n) < a, y, 1 - y) for a in accuracies])
    return y, dec


def _log_posteriors(y, m, k, rng, sharpness=1.5):
    logits = rng.normal(size=(m, y.shape[0], k)) + sharpness * np.eye(k)[y][None]
    return logits - special.logsumexp(logits, -1, keepdims=True)


def _same(a, b):
    """Two comparisons made from the same draws: equal up to float32 rounding."""
    np.testing.assert_allclose(np.asarray(a.yields), np.asarray(b.yields), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(a.expected_yield, b.expected_yield, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(a.p_best, b.p_best)
    np.testing.assert_allclose(a.hdi, b.hdi, rtol=1e-6, atol=1e-7)
    assert a.recommendation == b.recommendation


# ------------------------------------------------- integer weights = repeated samples

# The tests share shapes (two systems, 2000 draws) so that they share compiled kernels.
DRAWS = 2000


def _case(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    n = 50
    w = rng.integers(0, 4, n)  # zeros included: those samples are absent from the repeated arrays
    rep = np.repeat(np.arange(n), w)
    kw = dict(costs=COSTS, num_draws=DRAWS, decompose=name == "decisions_paired")
    if name == "decisions_paired":
        y, dec = _binary(n, (0.8, 0.75), rng)
        return (y, dec, dict(sample_weight=w, **kw)), (y[rep], dec[:, rep], kw)
    if name == "decisions_unpaired_lists":
        y2, dec2 = _binary(70, (0.75,), rng)
        w2 = rng.uniform(0, 3, 70).round()
        rep2 = np.repeat(np.arange(70), w2.astype(int))
        y, dec = _binary(n, (0.8,), rng)
        weighted = ([y, y2], [dec[0], dec2[0]], dict(sample_weight=[w, w2], paired=False, **kw))
        return weighted, ([y[rep], y2[rep2]], [dec[0][rep], dec2[0][rep2]], dict(paired=False, **kw))
    if name == "decisions_clustered":
        y, dec = _binary(n, (0.8, 0.7), rng)
        groups = rng.integers(0, 8, n)
        return ((y, dec, dict(sample_weight=w, groups=groups, **kw)),
                (y[rep], dec[:, rep], dict(groups=groups[rep], **kw)))
    y = rng.integers(0, 3, n)
    scores = _log_posteriors(y, 2, 3, rng)
    costs = prob.intervals(np.array([[0, 1, 1], [2, 0, 1], [4, 2, 0]]) * 0.5,
                           np.array([[0, 3, 3], [6, 0, 3], [9, 5, 0]]) * 0.5, kind="cost")
    kw = dict(costs=costs, num_draws=DRAWS, decompose=False)
    if name == "scores_expected_utility_paired":
        return ((y, None, dict(scores=scores, sample_weight=w, **kw)),
                (y[rep], None, dict(scores=scores[:, rep], **kw)))
    assert name == "scores_per_draw_unpaired"
    kw.update(decision_rule=prob.PerDraw(rate_draws=2), paired=False)  # r fixed: by default it follows N
    return ((y, None, dict(scores=scores, sample_weight=np.stack([w, w]), **kw)),
            (y[rep], None, dict(scores=scores[:, rep], **kw)))


_SYSTEMS_FIELDS = ("scores", "sample_weight", "groups", "paired", "decision_rule")


def _compare(labels, decisions, kw):
    """``prob.compare`` of one case: ``kw`` mixes the fields of the Systems, ``num_draws`` and compare's own."""
    data = {name: value for name, value in kw.items() if name in _SYSTEMS_FIELDS}
    rest = {name: value for name, value in kw.items() if name not in _SYSTEMS_FIELDS and name != "num_draws"}
    rest.setdefault("key", KEY)
    return prob.compare(prob.Systems(labels, decisions, **data),
                        settings=prob.MonteCarloSettings(num_draws=kw["num_draws"]), **rest)


@pytest.mark.parametrize("name", ["decisions_paired", "decisions_unpaired_lists", "decisions_clustered",
                                  "scores_expected_utility_paired", "scores_per_draw_unpaired"])
def test_integer_weights_are_repeated_samples(name):
    (y, dec, kw), (y_rep, dec_rep, kw_rep) = _case(name)
    weighted = _compare(y, dec, kw)
    repeated = _compare(y_rep, dec_rep, kw_rep)
    _same(weighted, repeated)
    if weighted.doubt is not None:
        for component in ("costs_only", "rates_only"):
            assert weighted.doubt.values[component] == repeated.doubt.values[component]
    if "per_draw" not in name:
        assert weighted.info["expected_yield"] == "closed form" or name == "decisions_clustered"


def _paired_per_draw_case():
    rng = np.random.default_rng(1)
    n = 40
    y = rng.integers(0, 2, n)
    scores = _log_posteriors(y, 2, 2, rng, sharpness=1.0)
    w = rng.integers(1, 4, n)
    kw = dict(costs=COSTS, decision_rule=prob.PerDraw(rate_draws=2), decompose=False, num_draws=4000)
    return y, scores, w, kw, rng


def test_paired_per_draw_zero_weights_are_dropped_samples():
    y, scores, w, kw, rng = _paired_per_draw_case()
    a = _compare(y, None, dict(kw, scores=scores, sample_weight=w))
    extra = _log_posteriors(np.zeros(9, int), 2, 2, rng)
    _same(_compare(np.r_[y, np.zeros(9, int)], None,
                   dict(kw, scores=np.concatenate([scores, extra], 1), sample_weight=np.r_[w, np.zeros(9)])), a)
    assert a.info["decision_rule"] == "per_draw"


# Two more compilations of the per-draw model (~15 s on two cores): slow lane.  The default lane checks the
# weighted sampler's law directly (below) and the unpaired per-draw counts against repeated samples exactly.
@pytest.mark.slow
def test_paired_per_draw_integer_weights_are_repeated_samples_in_law():
    y, scores, w, kw, rng = _paired_per_draw_case()
    rep = np.repeat(np.arange(y.shape[0]), w)
    # Gamma(w_n) per sample against w_n Exp(1) draws -- the same law, other draws.
    a = _compare(y, None, dict(kw, scores=scores, sample_weight=w))
    b = _compare(y[rep], None, dict(kw, scores=scores[:, rep], key=jax.random.key(99)))
    se = np.hypot(a.errors["expected_yield"], b.errors["expected_yield"])
    assert np.all(se > 0)
    assert np.all(np.abs(a.expected_yield - b.expected_yield) < 4 * se)
    se_best = np.hypot(a.errors["p_best"], b.errors["p_best"])
    assert np.all(np.abs(a.p_best - b.p_best) <= 4 * se_best + 1e-12)
    # the posterior widths: an sd from 4000 (pairwise correlated) draws is within about 1.6 % of its value
    sd_a, sd_b = np.asarray(a.yields).std(0), np.asarray(b.yields).std(0)
    np.testing.assert_allclose(sd_a, sd_b, rtol=0.08)
    # Weights 1 on the repeated samples: the unweighted computation, draw for draw.
    _same(_compare(y[rep], None, dict(kw, scores=scores[:, rep], sample_weight=np.ones(rep.size),
                                      key=jax.random.key(99))), b)


def test_zero_weights_are_dropped_samples_clustered():
    rng = np.random.default_rng(2)
    n = 80
    y, dec = _binary(n, (0.85, 0.7), rng)
    groups = rng.integers(0, 10, n)
    w = rng.uniform(0.2, 2.0, n) * (rng.random(n) < 0.8)
    keep = w > 0
    kw = dict(costs=COSTS, decompose=False, settings=prob.MonteCarloSettings(num_draws=DRAWS))
    _same(prob.compare(prob.Systems(y, dec, groups=groups, sample_weight=w), key=KEY, **kw),
          prob.compare(prob.Systems(y[keep], dec[:, keep], groups=groups[keep], sample_weight=w[keep]), key=KEY, **kw))


def test_weighted_per_draw_joint_posterior_is_the_dirichlet_of_the_weighted_counts():
    # The paired per-draw sampler with fractional weights: one draw per row of decisions, all the same here,
    # so its draws are W ~ Dirichlet(n_w + a) over each system's (K, D) cells (aggregation of eq. 1).
    rng = np.random.default_rng(3)
    n, k, a = 40, 2, 0.5
    y, dec = _binary(n, (0.8, 0.6), rng)
    w = rng.uniform(0.05, 3.0, n)
    s = 4000  # the shapes of the paired per-draw comparison above: the same compiled kernel
    draws = paired_mod.joint_confusions_per_draw_kernel(
        KEY, jax.numpy.asarray(y), jax.numpy.broadcast_to(jax.numpy.asarray(dec), (s, 2, n)), a, num_classes=k,
        num_decisions=k, sample_weight=jax.numpy.asarray(w, jax.numpy.float32))
    draws = np.asarray(draws, np.float64)
    for m in range(2):
        n_w = np.zeros((k, k))
        np.add.at(n_w, (y, dec[m]), w)
        conc = n_w + a
        total = conc.sum()
        mean = conc / total
        sd = np.sqrt(conc * (total - conc) / (total**2 * (total + 1)))
        np.testing.assert_allclose(draws[:, m].mean(0), mean, atol=4 * sd.max() / np.sqrt(s))
        np.testing.assert_allclose(draws[:, m].std(0), sd, rtol=0.05)  # the sd of 4000 draws: within 1.1 %


# ------------------------------------------------- the closed form with fractional weights

def _weighted_counts(y, dec, w, k):
    n = np.zeros((k, k))
    np.add.at(n, (y, dec), w)
    return n


@pytest.mark.parametrize("paired", [True, False])
def test_closed_form_expected_yield_uses_the_weighted_counts(paired):
    rng = np.random.default_rng(4)
    n, k, alpha = 90, 3, 0.25
    y = rng.integers(0, k, n)
    dec = np.stack([np.where(rng.random(n) < acc, y, rng.integers(0, k, n)) for acc in (0.7, 0.55)])
    w = rng.uniform(0.0, 2.5, n)
    u = np.array([[1.0, -0.5, -2.0], [-0.25, 1.5, -1.0], [-3.0, -0.75, 2.0]])  # dyadic: exact in float32
    res = prob.compare(prob.Systems(y, dec, sample_weight=w, paired=paired), utilities=u, concentration=alpha, key=KEY,
                       decompose=False, settings=prob.MonteCarloSettings(num_draws=DRAWS))
    assert res.info["expected_yield"] == "closed form"
    counts = np.stack([_weighted_counts(y, d, w, k) for d in dec])  # (M, K, D)
    if paired:
        # E[P_i R_m,ij] = (n_m,ij + alpha) / (N_w + K D alpha)
        joint = (counts + alpha) / (w.sum() + k * k * alpha)
        reference = np.einsum("ij,mij->m", u, joint)
    else:
        # E[R_m,ij] = (n_m,ij + alpha) / (n_m,i* + D alpha); E[P_i] = (n_i + alpha_P) / (N_w + K alpha_P)
        rates = (counts + alpha) / (counts.sum(-1, keepdims=True) + k * alpha)
        alpha_p = 2.0 / k  # two pseudo-observations spread over the classes (ecjax._src.prob.rates)
        n_i = np.bincount(y, weights=w, minlength=k)
        p = (n_i + alpha_p) / (w.sum() + k * alpha_p)
        reference = np.einsum("ij,i,mij->m", u, p, rates)
    np.testing.assert_allclose(res.expected_yield, reference, rtol=1e-10)
    assert res.info["sample_weight"]["total"] == pytest.approx([w.sum()] * 2, rel=1e-12)
    assert res.info["sample_weight"]["kish_effective_size"] == pytest.approx([w.sum() ** 2 / (w @ w)] * 2, rel=1e-12)
    # and the draws agree with it (their Monte Carlo mean, within 5 standard errors)
    yields = np.asarray(res.yields, np.float64)
    assert np.all(np.abs(yields.mean(0) - reference) < 5 * yields.std(0) / np.sqrt(yields.shape[0]))


def test_scaling_the_weights_by_c_narrows_the_posterior_like_c_times_the_data():
    rng = np.random.default_rng(5)
    n, k, alpha = 400, 2, 0.5
    y, dec = _binary(n, (0.8,), rng)
    w0 = rng.uniform(0.2, 1.8, n)
    u = np.array([[1.0, -1.0], [-2.0, 1.5]])
    priors = np.array([0.25, 0.75])  # fixed deployment priors: only the rates are uncertain
    sds = {}
    ref_rng = np.random.default_rng(7)
    for c in (0.25, 1.0, 4.0):
        res = prob.compare(prob.Systems(y, dec, sample_weight=c * w0), utilities=u, priors=priors, concentration=alpha,
                           key=KEY, decompose=False, settings=prob.MonteCarloSettings(num_draws=40_000))
        counts = _weighted_counts(y, dec[0], c * w0, k)
        # numpy reference: R_i ~ Dirichlet(n_w,i + alpha) per class; yield = sum_ij U_ij P_i R_ij.
        r = np.stack([ref_rng.dirichlet(counts[i] + alpha, 400_000) for i in range(k)], 1)  # (S, K, D)
        ref = np.einsum("ij,i,sij->s", u, priors, r)
        sd = float(np.asarray(res.yields, np.float64)[:, 0].std())
        # sd of an sd from 40,000 draws: 0.35 %; the reference's from 400,000: 0.11 %
        assert abs(sd / ref.std() - 1) < 0.02
        assert abs(res.expected_yield[0] - ref.mean()) < 4 * ref.std() / np.sqrt(400_000) + 4 * sd / np.sqrt(40_000)
        sds[c] = sd
    # four times the weight, half the width (the class totals here are ~100 to 300: within 2 % of 1/2)
    assert abs(sds[4.0] / sds[1.0] - 0.5) < 0.025
    assert abs(sds[1.0] / sds[0.25] - 0.5) < 0.025


# ------------------------------------------------------------------- bad input

def test_bad_sample_weight_is_refused_by_name():
    rng = np.random.default_rng(8)
    y, dec = _binary(20, (0.8, 0.7), rng)
    kw = dict(costs=COSTS, key=KEY, settings=prob.MonteCarloSettings(num_draws=200))
    cases = [
        (np.ones(19), "sample_weight"),  # wrong length
        (np.r_[-1.0, np.ones(19)], "non-negative"),
        (np.r_[np.nan, np.ones(19)], "NaN"),
        (np.zeros(20), "0 for every sample"),
        (np.ones((3, 20)), "3 weight vectors for 2 systems"),
        (np.ones((2, 2, 20)), "(N,) or (M, N)"),
        (np.stack([np.ones(20), np.r_[2.0, np.ones(19)]]), "must share `sample_weight`"),
        (["a"] * 20, "numeric"),
    ]
    for w, message in cases:
        with pytest.raises(ecjax.InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
            prob.compare(prob.Systems(y, dec, sample_weight=w), **kw)
    # one per system: the system is named
    with pytest.raises(ecjax.InputError, match=r"system 1"):
        prob.compare(prob.Systems([y, y[:15]], [dec[0], dec[1][:15]], sample_weight=[np.ones(20), np.ones(14)],
                                  paired=False), **kw)
    with pytest.raises(ecjax.InputError, match=r"0 for every sample \(system 1\)"):
        prob.compare(prob.Systems([y, y], [dec[0], dec[1]], sample_weight=[np.ones(20), np.zeros(20)], paired=False),
                     **kw)
    with pytest.raises(ecjax.InputError, match="same keys"):
        prob.compare(prob.Systems(y, {"a": dec[0], "b": dec[1]}, sample_weight={"a": np.ones(20), "c": np.ones(20)}),
                     **kw)
    with pytest.raises(ecjax.InputError, match="groups"):
        prob.compare(prob.Systems(y, dec, groups=np.arange(19), sample_weight=np.ones(20)), **kw)
    with pytest.raises(ecjax.InputError, match="class 1 has no test samples of non-zero `sample_weight`"):
        prob.compare(prob.Systems(y, dec, sample_weight=1.0 * (y == 0)), priors=[0.5, 0.5], **kw)


def test_unpaired_systems_take_their_own_weights_by_name():
    rng = np.random.default_rng(9)
    y, dec = _binary(30, (0.9, 0.6), rng)
    w = {"b": rng.uniform(0.5, 1.5, 30), "a": rng.uniform(0.5, 1.5, 30)}
    res = prob.compare(prob.Systems(y, {"a": dec[0], "b": dec[1]}, sample_weight=w, paired=False), utilities=np.eye(2),
                       concentration=0.5, priors=[0.5, 0.5], key=KEY, decompose=False,
                       settings=prob.MonteCarloSettings(num_draws=DRAWS))
    for m, name in enumerate("ab"):
        counts = _weighted_counts(y, dec[m], w[name], 2)
        rates = (counts + 0.5) / (counts.sum(-1, keepdims=True) + 1.0)
        assert res.expected_yield[m] == pytest.approx(0.5 * (rates[0, 0] + rates[1, 1]), rel=1e-12)


# ------------------------------------------------------- the hierarchical model

def test_counts_from_sets_weighted_equal_scikit_learn():
    rng = np.random.default_rng(10)
    labels, decisions, weights = [], [], []
    for n in (30, 45):
        y, dec = _binary(n, (0.8, 0.65), rng)
        labels.append(y)
        decisions.append(dec)
        weights.append(rng.uniform(0, 2, n))
    counts = np.asarray(counts_from_sets(labels, decisions, num_classes=2, sample_weight=weights))
    assert counts.shape == (2, 2, 2, 2)
    for t in range(2):
        for m in range(2):
            ref = confusion_matrix(labels[t], decisions[t][m], labels=[0, 1], sample_weight=weights[t])
            np.testing.assert_allclose(counts[t, m], ref, rtol=1e-6)
    with pytest.raises(ecjax.InputError, match="one weight vector per test set"):
        counts_from_sets(labels, decisions, num_classes=2, sample_weight=weights[:1])
    with pytest.raises(ecjax.InputError, match=r"non-negative.*test set 1"):
        counts_from_sets(labels, decisions, num_classes=2, sample_weight=[weights[0], -weights[1]])
    with pytest.raises(ecjax.InputError, match="0 for every sample of test set 0"):
        counts_from_sets(labels, decisions, num_classes=2, sample_weight=[0 * weights[0], weights[1]])


def test_dirichlet_multinomial_likelihood_extends_to_fractional_counts():
    # lgamma(A) - lgamma(n + A) + sum_j [lgamma(c_j + a_j) - lgamma(a_j)], written with scipy.
    counts = np.array([[3.25, 0.5, 7.0], [0.0, 12.75, 1.5]])
    conc = np.array([[0.7, 2.5, 40.0], [150.0, 3.0, 0.2]])
    ref = np.sum(special.gammaln(conc.sum(-1)) - special.gammaln(counts.sum(-1) + conc.sum(-1))
                 + np.sum(special.gammaln(counts + conc) - special.gammaln(conc), -1))
    got = float(dirichlet_multinomial_log_likelihood(jax.numpy.asarray(counts), jax.numpy.asarray(conc)))
    assert got == pytest.approx(ref, rel=2e-5)


# NUTS: ~30 s on two cores, slow lane (the weighted counts and the likelihood above stay in the default lane)
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:All-NaN slice")  # one chain: R-hat is undefined, ESS is what matters here
def test_compare_test_sets_with_fractional_counts_in_the_pooling_limit():
    # Dispersion fixed huge pools the sets: the population rates' posterior is Beta(pooled + 1) of the
    # pooled *weighted* counts (uniform Dirichlet prior), fractional or not.
    rng = np.random.default_rng(11)
    labels, decisions, weights = [], [], []
    for n in (80, 60, 70):
        y, dec = _binary(n, (0.8,), rng)
        labels.append(y)
        decisions.append(dec)
        weights.append(rng.uniform(0.1, 1.9, n))
    counts = counts_from_sets(labels, decisions, num_classes=2, sample_weight=weights)
    assert not np.allclose(np.asarray(counts), np.round(np.asarray(counts)))
    res = prob.compare_test_sets(counts, utilities=np.eye(2), key=KEY, dispersion=1e6,
                                 nuts=prob.NUTSSettings(num_warmup=300, num_samples=1000, num_chains=1))
    mu = res.samples["population_rates"].reshape(-1, 2, 2)
    pooled = np.asarray(counts, np.float64).sum(0)[0]
    for i in range(2):
        ref = stats.beta(pooled[i, 0] + 1, pooled[i, 1] + 1)
        assert abs(mu[:, i, 0].mean() - ref.mean()) < 0.25 * ref.std()  # NUTS ESS of a few hundred
        assert abs(mu[:, i, 0].std() / ref.std() - 1) < 0.15
