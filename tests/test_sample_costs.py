"""Per-sample costs (issue 36 item 1) against scikit-learn's fraud example metric, numpy loops and the
single-matrix functions they reduce to."""

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import ecjax
from ecjax.scores import sample_costs as sc

# scikit-learn's "Post-tuning the decision threshold for cost-sensitive learning", credit-card part, as
# utilities (rows: legitimate, fraud; columns: accept, refuse).
FRAUD_BASE = np.array([[0.0, -5.0], [0.0, 50.0]])
FRAUD_SCALE = np.array([[0.02, 0.0], [-1.0, 1.0]])


def business_metric(y_true, y_pred, amount):
    """The example's metric, written out as it defines it (total benefit in dollars)."""
    tp = (y_true == 1) & (y_pred == 1)
    tn = (y_true == 0) & (y_pred == 0)
    fp = (y_true == 0) & (y_pred == 1)
    fn = (y_true == 1) & (y_pred == 0)
    return (tp.sum() * 50 + amount[tp].sum()) - amount[fn].sum() - 5 * fp.sum() + (amount[tn] * 0.02).sum()


def fraud_data(n=1000, seed=0):  # one N for all: the kernels compile once
    rng = np.random.default_rng(seed)
    y = (rng.uniform(size=n) < 0.01).astype(int)  # the real data: 0.17 %
    amount = np.round(rng.lognormal(3.5, 1.2, n), 2)
    logit = -4.0 + 4.0 * y + rng.normal(0, 1.2, n) + 0.002 * amount * y
    p1 = 1 / (1 + np.exp(-logit))
    return y, amount, p1


def log_post(p1):
    return np.log(np.stack([1 - p1, p1], -1))


def loop_ec(y, d, c_n, priors=None, weights=None):
    """sum_n P_{y_n} u_n / W_{y_n} c_n[y_n, d_n] in float64 numpy."""
    u = np.ones(len(y)) if weights is None else np.asarray(weights, float)
    totals = np.bincount(y, u, minlength=c_n.shape[1])
    p = totals / totals.sum() if priors is None else np.asarray(priors)
    return np.sum(p[y] * u / totals[y] * np.asarray(c_n, float)[np.arange(len(y)), y, d])


def test_the_fraud_examples_business_metric_is_n_times_the_yield():
    y, amount, p1 = fraud_data()
    u = sc.sample_costs(FRAUD_BASE, amount, FRAUD_SCALE)
    decisions = np.stack([np.zeros_like(y), np.ones_like(y), (p1 > 0.5).astype(int), (p1 > 0.1).astype(int)])
    got = np.asarray(sc.sample_utility_yield(y, decisions, u)) * len(y)
    want = [business_metric(y, d, amount) for d in decisions]
    # float32 sums of N terms: the error scales with the sum of their sizes, not with the (cancelling) total
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * np.sum(55 + 1.02 * amount))
    # the "easy-going" classifier (accept everything) beats the "intolerant" one, as in the example
    assert got[0] > 0 > got[1]


def test_the_best_threshold_is_the_brute_force_best_of_the_business_metric():
    y, amount, p1 = fraud_data(seed=1)
    costs = sc.sample_costs(-FRAUD_BASE, amount, -FRAUD_SCALE)  # utilities -> costs
    best = sc.sample_optimal_threshold_expected_cost(y, log_post(p1), costs)
    s = np.log(p1) - np.log1p(-p1)
    cuts = np.r_[-np.inf, np.unique(s)]  # "refuse iff s > t" for every distinct t
    brute = max(business_metric(y, (s > t).astype(int), amount) for t in cuts)
    np.testing.assert_allclose(-float(best.expected_cost) * len(y), brute, rtol=1e-5)
    decided = (s > float(best.threshold)).astype(int)
    np.testing.assert_allclose(business_metric(y, decided, amount), brute, rtol=1e-5)


def test_scikit_learns_tuned_threshold_never_beats_the_exact_best_threshold():
    # TunedThresholdClassifierCV searches a grid of 100 probability thresholds for the same metric.
    sklearn = pytest.importorskip("sklearn")
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import TunedThresholdClassifierCV
    from sklearn.linear_model import LogisticRegression

    y, amount, _ = fraud_data(seed=2)
    rng = np.random.default_rng(3)
    x = np.c_[y * 1.5 + rng.normal(size=len(y)), amount / 100 + rng.normal(size=len(y))]
    with sklearn.config_context(enable_metadata_routing=True):
        model = LogisticRegression().fit(x, y)
        scorer = make_scorer(business_metric).set_score_request(amount=True)
        tuned = TunedThresholdClassifierCV(model, scoring=scorer, cv="prefit", refit=False, thresholds=100,
                                           store_cv_results=True).fit(x, y, amount=amount)
        p1 = model.predict_proba(x)[:, 1]
        ours = sc.sample_optimal_threshold_expected_cost(y, log_post(p1),
                                                         sc.sample_costs(-FRAUD_BASE, amount, -FRAUD_SCALE))
    exact = -float(ours.expected_cost) * len(y)
    assert tuned.best_score_ <= exact * (1 + 1e-6)
    # at each of its 100 thresholds its score is N times our yield of the same decisions (P(fraud) >= t)
    u = sc.sample_costs(FRAUD_BASE, amount, FRAUD_SCALE)
    grid = tuned.cv_results_["thresholds"]
    ours_at = np.asarray(sc.sample_utility_yield(y, (p1[None] >= grid[:, None]).astype(int), u)) * len(y)
    np.testing.assert_allclose(ours_at, tuned.cv_results_["scores"], rtol=0, atol=1e-6 * np.sum(55 + 1.02 * amount))
    # and its chosen decisions score what our yield says they score
    d = tuned.predict(x)
    np.testing.assert_allclose(float(sc.sample_utility_yield(y, d, sc.sample_costs(FRAUD_BASE, amount, FRAUD_SCALE)))
                               * len(y), business_metric(y, d, amount), rtol=1e-5)


def test_ec_with_priors_and_weights_equals_a_numpy_loop():
    rng = np.random.default_rng(4)
    n, k, d = 60, 3, 4
    y = rng.integers(0, k, n)
    dec = rng.integers(0, d, (2, n))
    c_n = rng.uniform(-1, 5, (n, k, d))
    w = rng.uniform(0, 3, n)
    priors = np.array([0.5, 0.3, 0.2])
    got = sc.sample_expected_cost(y, dec, c_n, priors=priors, sample_weight=w)
    np.testing.assert_allclose(got, [loop_ec(y, di, c_n, priors, w) for di in dec], rtol=1e-5)
    # the compact form gives the same as its dense matrices
    amount = rng.uniform(0, 10, (n, 2))
    compact = sc.sample_costs(rng.uniform(0, 1, (k, d)), amount, rng.uniform(-1, 1, (2, k, d)))
    np.testing.assert_allclose(sc.sample_expected_cost(y, dec, compact, priors=priors),
                               [loop_ec(y, di, np.asarray(compact.dense(), float), priors) for di in dec], rtol=1e-5)


def test_nec_divides_by_the_best_single_decision_for_the_whole_set():
    rng = np.random.default_rng(5)
    n = 80
    y = rng.integers(0, 2, n)
    dec = rng.integers(0, 3, n)
    c_n = rng.uniform(0.1, 4, (n, 2, 3))
    naive = min(loop_ec(y, np.full(n, j), c_n) for j in range(3))
    np.testing.assert_allclose(sc.sample_normalized_expected_cost(y, dec, c_n), loop_ec(y, dec, c_n) / naive,
                               rtol=1e-5)


@pytest.mark.parametrize("priors", [None, [0.3, 0.7]])
def test_equal_matrices_reduce_to_the_single_matrix_functions(priors):
    rng = np.random.default_rng(6)
    n = 1000
    y = rng.integers(0, 2, n)
    post = log_post(rng.uniform(0.01, 0.99, n))
    dec = rng.integers(0, 2, (3, n))
    c = np.array([[0.0, 1.0], [4.0, 0.0]])
    same = sc.sample_costs(c, np.zeros(n), np.zeros((2, 2)))
    dense = np.broadcast_to(c, (n, 2, 2))
    counts = ecjax.confusion_matrix(y, dec, num_classes=2)
    for per_sample in (same, dense):
        np.testing.assert_allclose(sc.sample_expected_cost(y, dec, per_sample, priors=priors),
                                   ecjax.expected_cost(counts, c, priors=priors), rtol=1e-6)
        np.testing.assert_allclose(sc.sample_normalized_expected_cost(y, dec, per_sample, priors=priors),
                                   ecjax.normalized_expected_cost(counts, c, priors=priors), rtol=1e-6)
        np.testing.assert_array_equal(sc.sample_bayes_decisions(post, per_sample), ecjax.bayes_decisions(post, c))
        np.testing.assert_allclose(sc.sample_bayes_expected_cost(y, post, per_sample, priors=priors, normalize=True),
                                   ecjax.bayes_expected_cost(y, post, c, priors=priors, normalize=True), rtol=1e-6)
        # both float32 sums over the cuts: each against the float64 brute force over every threshold
        best = sc.sample_optimal_threshold_expected_cost(y, post, per_sample, priors=priors)
        ref = ecjax.optimal_threshold_expected_cost(y, post, c, priors=priors)
        s = post[:, 1] - post[:, 0]
        brute = min(loop_ec(y, (s > t).astype(int), dense, priors) for t in np.r_[-np.inf, s])
        np.testing.assert_allclose([best.expected_cost, ref.expected_cost], [brute, brute], rtol=1e-5)


def test_bayes_decisions_minimize_each_samples_expected_cost():
    rng = np.random.default_rng(7)
    n, k, d = 60, 3, 4
    p = rng.dirichlet(np.ones(k), n)
    costs = sc.sample_costs(rng.uniform(0, 1, (k, d)), rng.uniform(0, 5, n), rng.uniform(-1, 1, (k, d)))
    c_n = np.asarray(costs.dense(), float)
    want = [np.argmin(p[i] @ c_n[i]) for i in range(n)]
    np.testing.assert_array_equal(sc.sample_bayes_decisions(np.log(p), costs), want)
    np.testing.assert_array_equal(sc.sample_bayes_decisions(np.log(p), c_n), want)


def test_the_ec_is_linear_in_the_scale_of_the_per_sample_part():
    y, amount, p1 = fraud_data(seed=8)
    costs = sc.sample_costs(-FRAUD_BASE, amount, -FRAUD_SCALE)
    dec = np.stack([(p1 > 0.5).astype(int), (p1 > 0.2).astype(int)])
    base, per_sample = sc.sample_expected_cost_parts(y, dec, costs)
    for s in (0.0, 0.5, 3.0):
        scaled = sc.sample_costs(-FRAUD_BASE, s * amount, -FRAUD_SCALE)
        want = [-business_metric(y, di, s * amount) / len(y) for di in dec] if s else None
        got = np.asarray(base) + s * np.asarray(per_sample)
        np.testing.assert_allclose(got, sc.sample_expected_cost(y, dec, scaled), rtol=1e-5, atol=1e-6)
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-5)


def test_kernels_jit_and_vmap_over_the_scale_and_the_base():
    y, amount, p1 = fraud_data(seed=9)
    lp = jnp.asarray(log_post(p1))
    costs = sc.sample_costs(-FRAUD_BASE, amount, -FRAUD_SCALE)
    w = sc.sample_weights_kernel(jnp.asarray(y), None, None, 2)

    @jax.jit
    def ec_at(s):
        c = costs.scaled(s)
        d = sc.sample_bayes_decisions_kernel(lp, c)
        return sc.weighted_sum(sc.incurred_kernel(jnp.asarray(y), d, c), w)

    scales = jnp.array([0.1, 1.0, 2.0])
    got = jax.vmap(ec_at)(scales)
    for s, g in zip(np.asarray(scales), np.asarray(got)):
        np.testing.assert_allclose(g, sc.sample_bayes_expected_cost(y, lp, costs.scaled(float(s))), rtol=1e-5)
    bases = jnp.stack([jnp.asarray(-FRAUD_BASE), jnp.zeros((2, 2))])
    by_base = jax.vmap(lambda b: sc.sample_bayes_decisions_kernel(lp, sc.SampleCosts(b, costs.amount, costs.scale)))(
        bases)
    np.testing.assert_array_equal(by_base[1], sc.sample_bayes_decisions(lp, sc.SampleCosts(
        jnp.zeros((2, 2)), costs.amount, costs.scale)))


def test_traced_invalid_decisions_give_nan_not_a_wrapped_index():
    y = jnp.array([0, 1, 1])
    c = jnp.ones((3, 2, 2))
    out = jax.jit(sc.incurred_kernel)(y, jnp.array([0, -1, 1]), c)
    assert np.isnan(out[1]) and np.isfinite(np.asarray(out)[[0, 2]]).all()


@pytest.mark.parametrize("make, match", [
    (lambda n: sc.sample_costs(np.zeros((2, 2)), np.ones(n + 1), np.eye(2)), "`amount` must hold one value per"),
    (lambda n: sc.sample_costs(np.zeros((2, 2)), np.r_[np.nan, np.ones(n - 1)], np.eye(2)), "`amount`"),
    (lambda n: sc.sample_costs(np.zeros((2, 2)), np.ones(n), np.eye(3)), "`scale` must have shape"),
    (lambda n: np.ones((n - 1, 2, 2)), "`costs` must be one cost matrix per sample"),
    (lambda n: np.full((n, 2, 2), np.nan), "`costs`"),
])
def test_bad_per_sample_costs_raise_input_errors_naming_the_argument(make, match):
    y = np.array([0, 1, 1, 0])
    with pytest.raises(ecjax.InputError, match=match):
        sc.sample_expected_cost(y, y, make(len(y)))


def test_decisions_past_the_cost_columns_and_costs_for_other_classes_are_refused():
    y = np.array([0, 1, 1, 0])
    with pytest.raises(ecjax.InputError, match="`decisions` must be < 2"):
        sc.sample_expected_cost(y, [0, 1, 2, 0], np.ones((4, 2, 2)))
    with pytest.raises(ecjax.InputError, match="`labels` must be < 2"):
        sc.sample_expected_cost([0, 1, 2, 0], y, np.ones((4, 2, 2)))
    with pytest.raises(ecjax.InputError, match="`base` must have one row per class"):
        sc.sample_bayes_decisions(np.log(np.full((4, 3), 1 / 3)), sc.sample_costs(np.ones((2, 2)), np.ones(4),
                                                                                  np.eye(2)))
    with pytest.raises(ecjax.InputError, match="NEC is undefined"):
        sc.sample_normalized_expected_cost(y, y, np.zeros((4, 2, 2)))


def test_sweeps_over_the_scale_equal_the_functions_at_each_scale():
    from ecjax.sweep import grids, sweep_sample_costs, sweep_sample_costs_of_decisions

    y, amount, p1 = fraud_data(seed=10)
    rng = np.random.default_rng(10)
    p2 = np.clip(p1 + rng.normal(0, 0.1, len(y)), 0.001, 0.999)
    lp = np.stack([log_post(p1), log_post(p2)])
    costs = sc.sample_costs(-FRAUD_BASE, amount, -FRAUD_SCALE)
    scales = np.linspace(0.0, 2.0, 5)
    res = sweep_sample_costs(y, lp, costs, grids.linspace(0.0, 2.0, 5))
    # reference: the example's metric of the per-sample Bayes decisions (numpy), at each scale
    for s, row in zip(scales, res.values):
        for p, got in zip((p1, p2), row):
            a = s * amount
            refuse = p * (50 + a) - (1 - p) * 5 > (1 - p) * 0.02 * a - p * a  # expected utility of each action
            np.testing.assert_allclose(got, -business_metric(y, refuse.astype(int), a) / len(y), rtol=1e-5,
                                       atol=1e-5)
    dec = np.stack([(p1 > 0.5), (p2 > 0.2)]).astype(int)
    # (at s = 0 the naive EC is 0 and the NEC undefined: NaN, left out of the sweep's counts)
    lin = sweep_sample_costs_of_decisions(y, dec, costs, grids.linspace(0.5, 2.0, 4), normalize=True)
    for s, row in zip(np.linspace(0.5, 2.0, 4), lin.values):
        c_n = np.asarray(costs.scaled(s).dense(), float)
        naive = min(loop_ec(y, np.full(len(y), j), c_n) for j in range(2))
        np.testing.assert_allclose(row, [loop_ec(y, di, c_n) / naive for di in dec], rtol=1e-5)


def test_compare_under_an_uncertain_scale_matches_a_numpy_bootstrap():
    from ecjax import prob

    y, amount, p1 = fraud_data(seed=11)
    rng = np.random.default_rng(11)
    p2 = np.clip(p1 + rng.normal(0, 0.05, len(y)), 0.001, 0.999)
    dec = np.stack([(p1 > 0.2), (p2 > 0.2), np.zeros(len(y), bool)]).astype(int)
    costs = sc.sample_costs(-FRAUD_BASE, amount, -FRAUD_SCALE)
    res = prob.compare_sample_costs(y, dec, costs, scale=(0.5, 1.5), key=jax.random.key(0), num_draws=4096)
    # the exact posterior mean: the test set's EC at the mean scale (numpy)
    want = [-business_metric(y, d, amount) / len(y) for d in dec]
    np.testing.assert_allclose(res.expected_cost, want, rtol=1e-5)
    # the same model drawn by numpy: g ~ Exp(1) per sample, s ~ U(0.5, 1.5)
    t = 4096
    g = rng.exponential(size=(t, len(y)))
    s = rng.uniform(0.5, 1.5, t)
    c_n = {part: np.asarray(c.dense(), float) for part, c in
           (("base", sc.sample_costs(-FRAUD_BASE, 0 * amount, -FRAUD_SCALE)),
            ("amount", sc.sample_costs(0 * FRAUD_BASE, amount, -FRAUD_SCALE)))}
    idx = np.arange(len(y))
    ec = np.stack([(g @ c_n["base"][idx, y, d] + s * (g @ c_n["amount"][idx, y, d])) / g.sum(1) for d in dec], 1)
    p_best = np.bincount(ec.argmin(1), minlength=3) / t
    se = np.sqrt(p_best * (1 - p_best) / t) + np.sqrt(np.asarray(res.p_best) * (1 - np.asarray(res.p_best)) / t)
    assert np.all(np.abs(np.asarray(res.p_best) - p_best) <= 4 * se + 1e-9)
    draws = np.asarray(res.expected_costs)
    assert np.all(np.abs(draws.mean(0) - ec.mean(0)) <= 4 * (draws.std(0) + ec.std(0)) / np.sqrt(t))
    np.testing.assert_allclose(draws.std(0), ec.std(0), rtol=0.1)
    assert res.best == res.systems[int(np.argmin(want))]


def test_compare_refuses_a_reversed_scale_and_one_row_of_decisions():
    from ecjax import prob

    y = np.array([0, 1, 1, 0])
    c = sc.sample_costs(np.ones((2, 2)), np.ones(4), np.eye(2))
    with pytest.raises(ecjax.InputError, match="`scale` range must have lo <= hi"):
        prob.compare_sample_costs(y, np.stack([y, y]), c, scale=(2.0, 1.0), key=jax.random.key(0))
    # A negative factor would turn the per-sample costs into gains (and the ranking upside down).
    with pytest.raises(ecjax.InputError, match="`scale` range must have lo >= 0") as caught:
        prob.compare_sample_costs(y, np.stack([y, y]), c, scale=(-1.0, 1.0), key=jax.random.key(0))
    assert caught.value.argument == "scale"
    with pytest.raises(ecjax.InputError, match="`decisions` must be"):
        prob.compare_sample_costs(y, y, c, scale=(1.0, 2.0), key=jax.random.key(0))


def _cli(capsys, *args):
    from ecjax import cli

    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_metrics_sample_costs_of_decisions_on_the_command_line(tmp_path, capsys):
    import json

    y, amount, p1 = fraud_data(seed=12)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "d.npy", (p1 > 0.3).astype(int))
    np.savez(tmp_path / "fraud.npz", amount=amount, base=-FRAUD_BASE, scale=-FRAUD_SCALE)
    code, out, _ = _cli(capsys, "metrics", "--labels", tmp_path / "y.npy", "--decisions", tmp_path / "d.npy",
                        "--sample-costs", tmp_path / "fraud.npz", "--json")
    assert code == 0
    got = json.loads(out)["sample_costs"]
    np.testing.assert_allclose(got["EC"]["d"], -business_metric(y, (p1 > 0.3).astype(int), amount) / len(y),
                               rtol=1e-5)


# ~6 s of CPU: `metrics` on scores computes every score metric besides; the library paths it calls are tested above.
@pytest.mark.slow
def test_metrics_sample_costs_of_scores_on_the_command_line(tmp_path, capsys):
    import json

    y, amount, p1 = fraud_data(seed=12)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "s.npy", log_post(p1))
    np.savez(tmp_path / "fraud.npz", amount=amount, base=-FRAUD_BASE, scale=-FRAUD_SCALE)
    # scores: each sample's Bayes decision under its own matrix (numpy), and the best single threshold
    code, out, _ = _cli(capsys, "metrics", "--labels", tmp_path / "y.npy", "--scores", tmp_path / "s.npy",
                        "--sample-costs", tmp_path / "fraud.npz", "--json")
    assert code == 0
    rec = json.loads(out)["sample_costs"]
    refuse = p1 * (50 + amount) - (1 - p1) * 5 > (1 - p1) * 0.02 * amount - p1 * amount
    np.testing.assert_allclose(rec["EC"]["s"], -business_metric(y, refuse.astype(int), amount) / len(y), rtol=1e-5)
    s = np.log(p1) - np.log1p(-p1)
    brute = max(business_metric(y, (s > t).astype(int), amount) for t in np.r_[-np.inf, np.unique(s)])
    np.testing.assert_allclose(-rec["best_threshold"]["s"]["ec"] * len(y), brute, rtol=1e-5)


def test_metrics_sample_costs_refuses_misfits_with_exit_2(tmp_path, capsys):
    y = np.array([0, 1, 1, 0, 1])
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "y2.npy", y[::-1])
    np.save(tmp_path / "d.npy", y)
    np.save(tmp_path / "short.npy", np.ones((4, 2, 2)))
    code, _, err = _cli(capsys, "metrics", "--labels", tmp_path / "y.npy", "--decisions", tmp_path / "d.npy",
                        "--sample-costs", tmp_path / "short.npy")
    assert code == 2 and "--sample-costs" in err and "(N, K, D) = (5, 2, D)" in err
    code, _, err = _cli(capsys, "metrics", "--labels", tmp_path / "y.npy", tmp_path / "y2.npy", "--decisions",
                        tmp_path / "d.npy", tmp_path / "d.npy", "--names", "a", "b", "--sample-costs",
                        tmp_path / "short.npy")
    assert code == 2 and ("one `labels` file" in err or "one --labels file" in err), err


def test_compare_sample_costs_on_the_command_line(tmp_path, capsys):
    import json

    y, amount, p1 = fraud_data(seed=13)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "a.npy", (p1 > 0.5).astype(int))
    np.save(tmp_path / "b.npy", np.zeros(len(y), int))
    np.savez(tmp_path / "fraud.npz", amount=amount, base=-FRAUD_BASE, scale=-FRAUD_SCALE)
    (tmp_path / "costs.toml").write_text('classes = ["legitimate", "fraud"]\ncosts = [[0, 5], [0, -50]]\n')
    code, out, _ = _cli(capsys, "compare", "--labels", tmp_path / "y.npy", "--decisions", tmp_path / "a.npy",
                        tmp_path / "b.npy", "--costs", tmp_path / "costs.toml", "--sample-costs", tmp_path / "fraud.npz",
                        "--sample-cost-scale", 0.5, 1.5, "--draws", 2000, "--json")
    assert code == 0
    rec = json.loads(out)
    for name, d in (("a", (p1 > 0.5).astype(int)), ("b", np.zeros(len(y), int))):  # E[EC]: the EC at s = 1
        np.testing.assert_allclose(rec["expected_cost"][name], -business_metric(y, d, amount) / len(y), rtol=1e-5)
    code, _, err = _cli(capsys, "compare", "--labels", tmp_path / "y.npy", "--decisions", tmp_path / "a.npy",
                        "--costs", tmp_path / "costs.toml", "--sample-cost-scale", 0.5, 1.5)
    assert code == 2 and "--sample-costs" in err


def test_sweep_sample_costs_on_the_command_line(tmp_path, capsys):
    import json

    y, amount, p1 = fraud_data(seed=14)
    np.save(tmp_path / "y.npy", y)
    dec = {"a": (p1 > 0.5).astype(int), "b": (p1 > 0.05).astype(int)}
    for name, d in dec.items():
        np.save(tmp_path / f"{name}.npy", d)
    np.savez(tmp_path / "fraud.npz", amount=amount, base=-FRAUD_BASE, scale=-FRAUD_SCALE)
    code, out, _ = _cli(capsys, "sweep", "--labels", tmp_path / "y.npy", "--decisions", tmp_path / "a.npy",
                        tmp_path / "b.npy", "--sample-costs", tmp_path / "fraud.npz", "--sample-cost-scale", 0, 2,
                        "--resolution", 5, "--json")
    assert code == 0
    rec = json.loads(out)
    for name, d in dec.items():
        want = [-business_metric(y, d, s * amount) / len(y) for s in np.linspace(0, 2, 5)]
        np.testing.assert_allclose(rec["expected_cost"][name], want, rtol=1e-5, atol=1e-6)


def test_the_public_functions_jit_and_vmap_and_keep_the_nan_contract():
    y = jnp.array([0, 1, 1, 0])
    d = jnp.array([0, 1, 0, 0])
    c = jnp.asarray(np.broadcast_to(1 - np.eye(2), (4, 2, 2)))
    np.testing.assert_allclose(jax.jit(sc.sample_expected_cost)(y, d, c), 0.25)  # one error in four
    np.testing.assert_allclose(jax.vmap(sc.sample_expected_cost, (None, 0, None))(y, jnp.stack([d, 1 - d]), c),
                               [0.25, 0.75])
    np.testing.assert_allclose(jax.jit(sc.sample_normalized_expected_cost)(y, d, c), 0.5)  # naive: 0.5
    # traced costs whose best single decision gains (naive EC < 0): NaN, where a concrete call raises
    assert np.isnan(jax.jit(sc.sample_normalized_expected_cost)(y, d, -jnp.ones((4, 2, 2))))
    with pytest.raises(ecjax.InputError, match="NEC is undefined"):
        sc.sample_normalized_expected_cost(y, d, -np.ones((4, 2, 2)))
