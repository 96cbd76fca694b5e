"""Paired comparisons at many classes: the per-draw sampler of paired decisions in fixed memory (split from
test_prob_paired.py so the two halves run on different test workers).

References: the joint-table sampler of test_prob_paired.py (itself checked against numpy Dirichlet draws) and
closed-form shapes and memory bounds.
"""

import numpy as np
import pytest
from scipy import stats

import jax
import jax.numpy as jnp

import ecjax
from ecjax._src import prob
from ecjax.confusion import joint_outcome_table
from ecjax._src.prob import paired

KEY = jax.random.key(11)


def test_prior_too_large_to_draw_is_refused():
    labels = np.arange(200) % 100
    table = joint_outcome_table(labels, np.stack([labels] * 3), num_classes=100, num_decisions=100)
    with pytest.raises(ecjax.InputError, match="concentration"):
        prob.sample_joint_confusions(KEY, table, num_draws=10, concentration=1.0)


# ------------------------------------------------------ per-draw decisions without the K D**M cells

@pytest.mark.slow  # 15-25 s at 100 classes: a scale check of code the small-K tests of test_prob_paired cover
def test_per_draw_sampler_at_100_classes_in_fixed_memory():
    # K = 100, M = 4 systems: K D**M = 10^10 joint cells (past int32, where the dense scores path overflowed).
    # Reference: the two systems' correctness patterns aggregate eq. (1) exactly into a 4-cell Dirichlet —
    # (both right, only A, only B, both wrong) with prior mass a_J times the number of joint cells in each group:
    # K D**(M-2) (1, D - 1, D - 1, (D - 1)**2) — drawn here with numpy.
    k = d = 100
    m, n, draws = 4, 400, 2000
    rng = np.random.default_rng(15)
    labels = rng.integers(0, k, n)
    dec = np.stack([np.where(rng.random(n) < acc, labels, rng.integers(0, d, n)) for acc in (0.9, 0.85, 0.6, 0.5)])
    w = prob.paired.sample_joint_confusions_per_draw(KEY, labels, np.broadcast_to(dec, (draws, m, n)),
                                                     num_classes=k, num_decisions=d)  # (S, M, K, D): 8e7 floats
    np.testing.assert_allclose(np.asarray(w.sum((-2, -1))), 1.0, atol=1e-5)
    acc = np.asarray(jnp.trace(w, axis1=-2, axis2=-1), np.float64)
    a_joint = prob.rates.default_concentration(d, k) / d ** (m - 1)
    right_a, right_b = dec[0] == labels, dec[1] == labels
    n_groups = np.array([np.sum(right_a & right_b), np.sum(right_a & ~right_b), np.sum(~right_a & right_b),
                         np.sum(~right_a & ~right_b)])
    size = k * d ** (m - 2) * np.array([1, d - 1, d - 1, (d - 1) ** 2], dtype=np.float64)
    ref = rng.dirichlet(n_groups + a_joint * size, size=50_000)
    assert stats.ks_2samp(acc[:, 0], ref[:, 0] + ref[:, 1]).pvalue > 1e-3
    assert stats.ks_2samp(acc[:, 0] - acc[:, 1], ref[:, 1] - ref[:, 2]).pvalue > 1e-3
    # Marginal means: (n_m,kd + a) / (N + a K D) (closed form, eq. 1 aggregated).
    table = joint_outcome_table(labels, dec, num_classes=k, num_decisions=d)
    np.testing.assert_allclose(np.asarray(w.mean(0)), np.asarray(paired.posterior_mean(table)),
                               atol=5 * np.sqrt(float(w.var(0).max()) / draws) + 1e-7)


def test_per_draw_sampler_matches_the_table_sampler_and_refuses_bad_shapes():
    # Same decisions in every draw: the per-sample weights and the table's Gamma(n_c) give the same law.
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 3, 50)
    dec = np.stack([np.where(rng.random(50) < 0.8, labels, (labels + 1) % 3), labels])
    per_draw = np.asarray(prob.paired.sample_joint_confusions_per_draw(
        KEY, labels, np.broadcast_to(dec, (20_000, 2, 50)), num_classes=3, num_decisions=3), np.float64)
    table = np.asarray(prob.sample_joint_confusions(jax.random.key(1), joint_outcome_table(labels, dec),
                                                    num_draws=20_000), np.float64)
    for x in (lambda w: np.trace(w[:, 0], axis1=-2, axis2=-1) - np.trace(w[:, 1], axis1=-2, axis2=-1),
              lambda w: w[:, 0, 2, 0]):
        assert stats.ks_2samp(x(per_draw), x(table)).pvalue > 1e-3
    with pytest.raises(ecjax.InputError, match="decisions"):
        prob.paired.sample_joint_confusions_per_draw(KEY, labels, dec, num_classes=3, num_decisions=3)
    with pytest.raises(ecjax.InputError, match="decisions"):
        prob.paired.sample_joint_confusions_per_draw(KEY, labels, dec[None] + 3, num_classes=3, num_decisions=3)


@pytest.mark.slow  # 15-25 s at 100 classes: a scale check of code the small-K tests of test_prob_paired cover
def test_paired_compare_with_per_draw_decisions_at_100_classes():
    # The motivating case: raw against calibrated 100-class systems, paired, Bayes decisions per drawn cost matrix.
    # K D**M = 10^6 joint cells per draw for M = 3 (the dense path overflowed or was refused); the sparse path
    # keeps each draw's decisions.  Reference: numpy draws its own utility matrices from the same uniform
    # intervals, makes the Bayes decisions in float64 and averages the closed-form posterior mean yield given
    # them, sum_ij u_ij (n_ij(u) + a) / (N + a K D) (the per-system marginal of eq. 1 is Dirichlet(n + a)).
    k, n, m, draws = 100, 400, 3, 600
    rng = np.random.default_rng(100)
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k)) + 2.5 * np.eye(k)[labels]
    scores = np.stack([logits, 0.5 * logits, 2.0 * logits + rng.normal(size=(n, k))])
    low = rng.uniform(-1.0, 0.0, (k, k)) + np.eye(k)
    width = rng.uniform(0.5, 1.5, (k, k))
    res = prob.compare(prob.Systems(labels, scores=scores, score_type="logits", decision_rule="per_draw"),
                       utilities=prob.intervals(low, low + width), key=KEY,
                       settings=prob.MonteCarloSettings(num_draws=draws))
    assert res.info["decision_rule"] == "per_draw" and res.info["model"].startswith("paired")
    a = res.info["concentration"]
    log_post = scores - np.log(np.exp(scores - scores.max(-1, keepdims=True)).sum(-1, keepdims=True)) \
        - scores.max(-1, keepdims=True)
    post = np.exp(log_post)
    ref = []
    for _ in range(300):
        u = low + width * rng.random((k, k))
        dec = np.argmax(post @ u, -1)  # (M, N): maximum expected utility
        counts = np.stack([np.bincount(labels * k + d, minlength=k * k).reshape(k, k) for d in dec])
        ref.append(np.sum(u * (counts + a) / (n + a * k * k), (-2, -1)))
    ref = np.asarray(ref)
    y = np.asarray(res.yields, np.float64)
    assert y.shape == (draws, m) and np.all(np.isfinite(y))
    se = np.sqrt(y.var(0) / draws + ref.var(0) / len(ref))
    assert np.all(np.abs(res.expected_yield - ref.mean(0)) < 5 * se), (res.expected_yield, ref.mean(0), se)
    # The under-confident system (halved logits) makes the worst decisions by far; the probabilities are a
    # distribution.
    assert int(np.argmin(ref.mean(0))) == 1 and res.p_best[1] < 0.01
    np.testing.assert_allclose(np.sum(res.p_best), 1.0, atol=1e-6)
