"""Hardening, the Python API: no silent wrong number, no crash.

Each case asserts the exact error class (``ecjax.InputError``) and that the
message names the argument; numeric cases are checked against an
independent numpy float64 / scikit-learn computation written here.  Under
``jit``/``vmap`` the NaN contract of ``ecjax.inputs`` holds: a value a
concrete call refuses is NaN (floats) or -1 (indices, counts), never a
plausible number.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import ecjax
from ecjax import InputError, costs
from ecjax._src import inputs as v
from ecjax._src import confusion
from ecjax.confusion import confusion_matrix, joint_outcome_table

COUNTS = np.array([[30, 10], [20, 40]])
C01 = 1.0 - np.eye(2)


def raises(name, fn, *args, **kwargs):
    """``fn(*args)`` raises InputError (exactly, a ValueError subclass) whose message names ``name``."""
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    assert type(info.value) is InputError
    assert name in str(info.value), str(info.value)
    return str(info.value)


# =============================================================== integers past int32

@pytest.mark.parametrize("labels, decisions, kwargs, name", [
    (np.array([0, 1, 2**32]), np.array([0, 1, 1]), {}, "`labels`"),                    # wrapped to class 0
    (np.array([0, 1, 1]), np.array([0, 1, 2**32 + 1]), dict(num_classes=2), "`decisions`"),  # wrapped to 1
    (np.array([0, 2**31]), np.array([0, 1]), {}, "`labels`"),
    (np.array([0, 2**63], np.uint64), np.array([0, 1]), {}, "`labels`"),
    (np.array([0.0, 1e20]), np.array([0, 1]), {}, "`labels`"),
    ([0, 100000], [0, 1], {}, "`num_classes`"),                                         # was OverflowError
    ([0, 20000], [0, 1], {}, "`labels`"),                                               # 20001 x 20001
    ([0, 1], [0, 20000], {}, "`num_decisions`"),
    ([0, 1], [0, 1], dict(num_classes=100_001, num_decisions=100_001), "`num_classes`"),  # > 2**31 cells
    ([0, 1], [0, 1], dict(num_classes=2**40), "`num_classes`"),
])
def test_indices_refused_before_any_cast(labels, decisions, kwargs, name):
    raises(name, confusion_matrix, labels, decisions, **kwargs)


@pytest.mark.parametrize("labels, decisions, kwargs, name", [
    (np.array([0, 1, 2**32]), np.array([[0, 1, 1]]), {}, "`labels`"),
    (np.array([0, 1, 1]), np.array([[0, 1, 2**33]]), {}, "`decisions`"),
    ([0, 30000], [[0, 1]], {}, "`labels`"),
])
def test_joint_outcome_table_indices(labels, decisions, kwargs, name):
    raises(name, joint_outcome_table, labels, decisions, **kwargs)


def test_a_sparse_table_of_many_classes_is_accepted_and_its_dense_matrices_refused():
    # The table holds the occupied cells only (issue 33.4): 70,000^2 cells are refused only when made dense.
    t = joint_outcome_table([0, 1], [[0, 1]], num_classes=70_000, num_decisions=70_000)
    assert t.cells.tolist() == [[0, 0], [1, 1]] and t.counts.tolist() == [1, 1]
    raises("`counts`", t.confusion_matrices)


def test_large_but_explicit_num_classes_is_accepted():
    c = np.asarray(confusion_matrix([0, 1, 12000], [0, 1, 12000], num_classes=12001, num_decisions=12001))
    assert c.shape == (12001, 12001) and c.sum() == 3 and c[12000, 12000] == 1


def test_expected_cost_of_int64_counts_past_int32():
    counts = np.array([[3_000_000_000, 1_000_000_000], [1, 3]])  # was -3.4e-09
    c = counts.astype(np.float64)
    p = c.sum(1) / c.sum()
    ref = np.sum(p[:, None] * c / c.sum(1, keepdims=True) * C01)
    assert float(ecjax.expected_cost(counts, C01)) == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize("fn, ref", [
    (ecjax.expected_cost, lambda c: (c[0, 1] + c[1, 0]) / c.sum()),
    (ecjax.accuracy, lambda c: np.trace(c) / c.sum()),
    (ecjax.balanced_accuracy, lambda c: np.mean(np.diag(c) / c.sum(1))),
    (ecjax.error_rate, lambda c: 1 - np.trace(c) / c.sum()),
    (ecjax.matthews_corrcoef, None),
])
def test_int32_counts_summing_past_2_31(fn, ref):
    counts = np.array([[2**30, 2**30 - 5], [2**30 - 7, 2**30]], np.int32)  # total 2**32 - 12: int32 sums wrap
    c = counts.astype(np.float64)
    if ref is None:  # MCC for K = 2, float64
        tp, tn, fp, fn_ = c[1, 1], c[0, 0], c[0, 1], c[1, 0]
        want = (tp * tn - fp * fn_) / np.sqrt((tp + fp) * (tp + fn_) * (tn + fp) * (tn + fn_))
    else:
        want = ref(c)
    got = float(fn(counts, C01) if fn is ecjax.expected_cost else fn(counts))
    assert got == pytest.approx(want, rel=1e-5, abs=1e-6)


def test_rates_and_priors_of_int32_counts_past_2_31():
    counts = np.array([[2**30, 2**30], [2**30, 2**30]], np.int32)
    np.testing.assert_allclose(np.asarray(ecjax.rates(counts)), 0.5, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ecjax.data_priors(counts)), 0.5, rtol=1e-6)
    jc = jnp.asarray(counts)  # a device int32 array: sums still in float
    np.testing.assert_allclose(np.asarray(jax.jit(ecjax.rates)(jc)), 0.5, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(ecjax.data_priors)(jc)), 0.5, rtol=1e-6)


def test_counts_past_int32_are_counted_on_the_host_in_int64(monkeypatch):
    # 2**31 samples do not fit a test machine: lower the threshold to take the host path.
    monkeypatch.setattr(confusion, "_DEVICE_COUNT_LIMIT", 4)
    rng = np.random.default_rng(0)
    y, d = rng.integers(0, 3, (2, 50)), rng.integers(0, 4, (2, 50))
    got = confusion_matrix(y, d, num_classes=3, num_decisions=4)
    assert isinstance(got, np.ndarray) and got.dtype == np.int64
    want = np.stack([np.histogram2d(a, b, bins=[np.arange(4), np.arange(5)])[0] for a, b in zip(y, d)])
    np.testing.assert_array_equal(got, want)


def test_joint_table_counts_never_wrap():
    y = np.array([0, 1, 1, 0])
    t = joint_outcome_table(y, np.array([[0, 1, 0, 0], [1, 1, 1, 0]]))
    assert int(np.asarray(t.counts).sum()) == 4


# Weighted counts past 2**24 (issue 30, item 5): one float32 running sum stops at 16,777,216 unit weights.
_N_PAST_2_24 = 2 * 10**7


def _labels_past_2_24():
    y = np.zeros(_N_PAST_2_24, np.int32)
    y[:1000] = 1
    return y


def test_unit_weights_after_a_weight_of_2_24_are_counted():
    # The small case of the same stall: 2**24 + 1 rounds back to 2**24 in float32.
    w = np.ones(5000)
    w[0] = 2.0**24
    y = np.zeros(5000, np.int32)
    y[-1] = 1
    want = np.bincount(y * 3, weights=w, minlength=4).reshape(2, 2)  # numpy float64: 16,781,215 and 1
    np.testing.assert_array_equal(np.asarray(confusion_matrix(y, y, sample_weight=w), np.float64),
                                  want.astype(np.float32))  # was 16,777,216
    # Posteriors 1/2 for every sample: XE = log 2 whatever the weights (the class totals were 16,777,216).
    xe = ecjax.cross_entropy(y, np.full((5000, 2), np.log(0.5)), sample_weight=w)
    assert float(xe) == pytest.approx(np.log(2.0), rel=1e-6)  # was 0.69335


def test_weighted_metric_class_totals_of_10_6_normalized_weights():
    # weighted_metric's class weight totals W_i of weights summing to 1 (~1e-6 each): one float32 running sum
    # was off by 1.7e-5 relative; numpy float64 reference.
    from ecjax._src.prob.bootstrap import weighted_metric
    n = 10**6
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, n)
    p1 = np.clip(0.3 + 0.4 * y + rng.normal(0, 0.1, n), 0.01, 0.99)
    lp = np.log(np.stack([1 - p1, p1], 1))
    w = rng.exponential(size=n).astype(np.float32)
    priors = np.array([0.3, 0.7])
    w64 = w.astype(np.float64)
    want = -sum(priors[k] * np.sum(w64[y == k] * lp[y == k, k]) / w64[y == k].sum() for k in range(2))
    got = float(weighted_metric(y, lp, w, "cross_entropy", priors=priors))
    assert got == pytest.approx(want, rel=1e-6)


@pytest.mark.slow  # reason: 2 * 10**7 samples take ~10 s on a loaded 2-core machine; the case above is the small one
def test_weighted_counts_past_2_24_equal_a_float64_sum():
    y = _labels_past_2_24()
    w = np.ones(_N_PAST_2_24)
    want = np.bincount(2 * y + y, weights=w, minlength=4).reshape(2, 2)  # numpy float64
    np.testing.assert_array_equal(np.asarray(confusion_matrix(y, y, sample_weight=w)), want)  # was 16,777,216
    jitted = jax.jit(lambda a, b: confusion_matrix(a, a, num_classes=2, sample_weight=b))
    np.testing.assert_array_equal(np.asarray(jitted(y, w.astype(np.float32))), want)  # chunked two-float sums


def test_weighted_counts_under_jit_of_uneven_weights():
    rng = np.random.default_rng(5)
    n = 300_000  # 74 chunks of 4096
    y, d = rng.integers(0, 3, n), rng.integers(0, 3, n)
    w = rng.exponential(size=n).astype(np.float32) * 1000
    want = np.bincount(3 * y + d, weights=w.astype(np.float64), minlength=9).reshape(3, 3)
    got = jax.jit(lambda a, b, c: confusion_matrix(a, b, num_classes=3, sample_weight=c))(y, d, w)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=3e-7)  # one float32 sum: 2.3e-6


@pytest.mark.slow  # reason: 2 * 10**7 scores take ~40 s on a loaded 2-core machine (the 5000-sample case above)
def test_weighted_expected_cost_cross_entropy_past_2_24():
    y = _labels_past_2_24()
    w = np.ones(_N_PAST_2_24)
    n1 = 1000.0
    # Deciding class 0 everywhere with 0-1 costs: EC = N_1 / N (float64), was 5.96e-5 for 5.00e-5.
    counts = confusion_matrix(y, np.zeros_like(y), num_classes=2, sample_weight=w)
    assert float(ecjax.expected_cost(counts, C01)) == pytest.approx(n1 / _N_PAST_2_24, rel=1e-6)
    post = np.log(np.array([0.9, 0.1], np.float32))
    scores = np.broadcast_to(post, (_N_PAST_2_24, 2))
    xe = ((_N_PAST_2_24 - n1) * -np.log(0.9) + n1 * -np.log(0.1)) / _N_PAST_2_24  # data priors: plain mean
    assert float(ecjax.cross_entropy(y, scores, sample_weight=w)) == pytest.approx(xe, rel=1e-5)  # was 0.1257


@pytest.mark.parametrize("num_classes, name", [
    (2**32 + 1, "`num_classes`"),  # aborted the interpreter ("overflow in static extent product")
    (50_000, "`num_classes`"),
    (2.5, "`num_classes`"),
    (True, "`num_classes`"),
    (1, "`num_classes`"),
])
def test_zero_one_does_not_abort(num_classes, name):
    raises(name, costs.zero_one, num_classes)


# ========================================================== uncertain priors with many classes (issue 30, item 11)

_DEPLOY_100 = np.r_[0.208, np.full(99, 0.008)]


def _box_simplex_reference(low, high, num_proposals, seed):
    """Independent reference: the first K - 1 priors uniform in their intervals, the last 1 - sum, kept if in its own
    (uniform on the slice: the map is linear); numpy float64."""
    rng = np.random.default_rng(seed)
    head = rng.uniform(low[:-1], high[:-1], size=(num_proposals, len(low) - 1))
    p = np.concatenate([head, 1 - head.sum(1, keepdims=True)], 1)
    return p[(p[:, -1] >= low[-1]) & (p[:, -1] <= high[-1])]


def test_interval_priors_with_100_classes_return_every_draw():
    from scipy import stats
    key = 166  # its first batch of 104 accepted none: "0 of 104 draws satisfied them" (232 too)
    low, high = _DEPLOY_100 * 0.5, _DEPLOY_100 * 1.5
    d = ecjax.prob.interval_priors(low, high, num_draws_for_mean=1000)
    x = np.asarray(d.sample(jax.random.key(key), 104), np.float64)
    assert x.shape == (104, 100)
    np.testing.assert_allclose(x.sum(1), 1.0, atol=1e-5)
    assert np.all(x >= low - 1e-7) and np.all(x <= high + 1e-7)
    many = np.asarray(d.sample(jax.random.key(key), 4000), np.float64)
    ref = _box_simplex_reference(low, high, 150_000, seed=key)  # ~3.8 % accepted: ~5700 draws
    for c in (0, 1, 99):
        assert stats.ks_2samp(many[:, c], ref[:, c]).pvalue > 1e-3


@pytest.mark.parametrize("low, high", [
    (np.array([0.3, 0.3, 0.3]), np.array([0.65, 0.7, 0.6])),   # sum(low) near 1: the lower corner's simplex
    (np.array([0.0, 0.05, 0.0]), np.array([0.35, 0.4, 0.3])),  # sum(high) near 1: the upper corner's simplex
    (np.array([0.1, 0.2, 0.0]), np.array([0.6, 0.7, 0.5])),    # mid-range (the box: 100 classes above)
])
def test_interval_priors_are_uniform_on_the_slice_for_each_proposal(low, high):
    from scipy import stats
    x = np.asarray(ecjax.prob.interval_priors(low, high).sample(jax.random.key(3), 5000), np.float64)
    ref = _box_simplex_reference(low, high, 400_000, seed=4)
    assert len(ref) > 4000
    for c in range(3):
        assert stats.ks_2samp(x[:, c], ref[:, c]).pvalue > 1e-3


def test_interval_priors_with_almost_no_support_are_refused_for_every_key():
    # 200 classes in [0, 0.0075]: every proposal accepts ~0 (the box's last coordinate is 8 sd away).
    raises("prior intervals", ecjax.prob.interval_priors, np.zeros(200), np.full(200, 0.0075))


# ============================================================ bad numbers in parameters

@pytest.mark.parametrize("beta", [-2, 0, -0.5, np.nan, np.inf, "2", True, None, [1, 2]])
def test_f_beta_score_beta(beta):
    raises("`beta`", ecjax.f_beta_score, COUNTS, beta=beta)


def test_f_beta_score_matches_sklearn_formula():
    tp, fn, fp = 40.0, 20.0, 10.0
    for beta in (0.5, 1.0, 2.0):
        want = (1 + beta**2) * tp / ((1 + beta**2) * tp + beta**2 * fn + fp)
        assert float(ecjax.f_beta_score(COUNTS, beta=beta)) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("values", [[2, 3], [0.5, 1.5], [-0.1, 0.5], [0.5, np.nan], [[0.2, 0.3], [0.4, 7.0]]])
def test_gps_values_outside_unit_interval(values):
    raises("`values`", ecjax.general_performance_score, values)


@pytest.mark.parametrize("fn, kwargs, name", [
    (costs.f_beta, dict(beta="2"), "`beta`"),
    (costs.f_beta, dict(beta=True), "`beta`"),
    (costs.f_beta, dict(beta=-1.0), "`beta`"),
    (costs.net_benefit, dict(threshold_probability="0.2"), "`threshold_probability`"),
    (costs.net_benefit, dict(threshold_probability=1.0), "`threshold_probability`"),
    (costs.zero_one, dict(num_classes=2, abstain="0.3"), "`abstain`"),
    (costs.zero_one, dict(num_classes=2, abstain=-1), "`abstain`"),
    (costs.zero_one, dict(num_classes=2, abstain=np.nan), "`abstain`"),
    (costs.utility_from_xy, dict(x="0.1", y=0.2), "`x`"),
    (ecjax.net_benefit, dict(counts=COUNTS, threshold_probability="0.3"), "`threshold_probability`"),
    (ecjax.net_benefit, dict(counts=COUNTS, threshold_probability=np.nan), "`threshold_probability`"),
])
def test_parameters_must_be_numbers(fn, kwargs, name):
    raises(name, fn, **kwargs)


@pytest.mark.parametrize("fn", [ecjax.precision, ecjax.recall, ecjax.f1_score, ecjax.specificity,
                                ecjax.negative_predictive_value, ecjax.fowlkes_mallows,
                                ecjax.matthews_corrcoef, ecjax.cohen_kappa])
@pytest.mark.parametrize("zero_division", ["warn", None, True])
def test_zero_division_must_be_a_number(fn, zero_division):
    raises("`zero_division`", fn, COUNTS, zero_division=zero_division)


def test_zero_division_nan_is_allowed():
    assert np.isnan(float(ecjax.precision(np.array([[5, 0], [3, 0]]), zero_division=np.nan)))


# ================================================================= roc_curve in [0, 1]

def test_roc_rates_within_unit_interval_and_equal_to_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(1)
    for n in [478] * 12 + [2866] * 4:  # sizes where 1 - miss reached -4.5e-08 and -5.3e-09; one compile each
        y = rng.integers(0, 2, n)
        if y.min() == y.max():
            continue
        s = rng.normal(size=n).astype(np.float32)
        fpr, tpr, thr = (np.asarray(a) for a in ecjax.roc_curve(y, s, score_type="llr"))
        assert tpr.min() >= 0 and fpr.min() >= 0 and tpr.max() <= 1 and fpr.max() <= 1  # TPR was -4.7e-08
        rf, rt, _ = metrics.roc_curve(y, s, drop_intermediate=False)
        np.testing.assert_allclose(fpr, rf, atol=1e-7)
        np.testing.assert_allclose(tpr, rt, atol=1e-7)


# ============================================================ offsets in float64 scores

def _log_softmax64(x):
    x = np.asarray(x, np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def test_logits_with_a_large_common_offset():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(500, 3)) * 2 + 1e7  # float64
    want = _log_softmax64(logits)
    got = np.asarray(ecjax.log_posteriors(logits, score_type="logits"), np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)  # was off by 2.4e-2
    y = rng.integers(0, 3, 500)
    xe_want = sum(np.bincount(y)[k] / 500 * -np.mean(want[y == k, k]) for k in range(3))
    assert float(ecjax.cross_entropy(y, logits, score_type="logits")) == pytest.approx(xe_want, rel=1e-5)


def test_log_likelihoods_around_minus_1e7():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    n = 2000
    y = rng.integers(0, 2, n)
    ll = rng.normal(size=(n, 2)) - 1e7
    ll[:, 1] += 1.5 * y
    priors = np.array([0.5, 0.5])
    lp = _log_softmax64(ll + np.log(priors))
    xe_want = sum(priors[k] * -np.mean(lp[y == k, k]) for k in range(2))
    got = float(ecjax.cross_entropy(y, ll, priors=priors, score_type="log_likelihoods"))
    assert got == pytest.approx(xe_want, rel=1e-5)  # was off by 1.1e-2
    auc_want = metrics.roc_auc_score(y, ll[:, 1] - ll[:, 0])
    assert float(ecjax.auc(y, ll, score_type="log_likelihoods")) == pytest.approx(auc_want, abs=1e-6)  # 3.3e-3


def test_bayes_decisions_of_offset_logits_match_float64():
    rng = np.random.default_rng(4)
    logits = rng.normal(size=(1000, 3)) * 0.01 + 1e7
    c = np.array([[0, 1, 2], [1, 0, 1], [3, 1, 0]], float)
    want = np.argmin(np.exp(_log_softmax64(logits)) @ c, -1)
    got = np.asarray(ecjax.bayes_decisions(logits, c, score_type="logits"))
    assert np.mean(got == want) > 0.999


# ================================================================ the NaN contract under jit/vmap

BATCH = np.stack([COUNTS, np.array([[5, 5], [1, 9]]), np.array([[9, 1], [0, 0]])])  # third: class 1 absent
NEG = np.array([[3, -1], [2, 4]])


def _counts_fns():
    return {
        "accuracy": ecjax.accuracy, "error_rate": ecjax.error_rate,
        "balanced_accuracy": ecjax.balanced_accuracy, "balanced_error_rate": ecjax.balanced_error_rate,
        "cohen_kappa": ecjax.cohen_kappa, "matthews_corrcoef": ecjax.matthews_corrcoef,
        "precision": ecjax.precision, "recall": ecjax.recall, "specificity": ecjax.specificity,
        "npv": ecjax.negative_predictive_value, "f1": ecjax.f1_score,
        "f2": lambda c: ecjax.f_beta_score(c, beta=2.0), "fowlkes_mallows": ecjax.fowlkes_mallows,
        "precision_macro": lambda c: ecjax.precision(c, average="macro"),
        "recall_per_class": lambda c: ecjax.recall(c, average=None),
        "informedness": ecjax.informedness, "markedness": ecjax.markedness,
        "geometric_mean": ecjax.geometric_mean,
        "net_benefit": lambda c: ecjax.net_benefit(c, threshold_probability=0.2),
        "upm": ecjax.unified_performance_measure, "gps_upm": ecjax.gps_upm,
        "ec": lambda c: ecjax.expected_cost(c, C01), "nec": lambda c: ecjax.normalized_expected_cost(c, C01),
        "yield": lambda c: ecjax.utility_yield(c, -C01),
        "rates": ecjax.rates, "data_priors": ecjax.data_priors,
    }


COUNTS_BATCH = np.stack([COUNTS, np.array([[5, 5], [1, 9]]), NEG])


@pytest.fixture(scope="module")
def counts_traced():
    """Every counts function under one ``jit(vmap(...))`` (one compilation keeps the catalogue fast)."""
    fns = _counts_fns()
    return jax.jit(jax.vmap(lambda c: {n: f(c) for n, f in fns.items()}))(jnp.asarray(COUNTS_BATCH))


@pytest.mark.parametrize("name", sorted(_counts_fns()))
def test_counts_functions_eager_jit_vmap_and_nan_on_negative_counts(name, counts_traced):
    fn = _counts_fns()[name]
    eager = [fn(c) for c in COUNTS_BATCH[:2]]
    out = counts_traced[name]
    for i, e in enumerate(eager):
        for got, want in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(e)):
            np.testing.assert_allclose(np.asarray(got)[i], np.asarray(want), rtol=1e-5, atol=1e-6)
    for got in jax.tree_util.tree_leaves(out):  # the invalid element: NaN, never a plausible number
        assert np.all(np.isnan(np.asarray(got)[2])), (name, got)
    if name not in ("rates", "data_priors"):
        raises("`counts`", fn, NEG)


def test_likelihood_ratios_with_an_absent_class_under_jit():
    for fn in (ecjax.positive_likelihood_ratio, ecjax.negative_likelihood_ratio):
        raises("likelihood ratios", fn, BATCH[2])
        out = np.asarray(jax.jit(jax.vmap(fn))(jnp.asarray(BATCH)))
        assert np.isfinite(out[0]) and np.isnan(out[2])
        assert out[0] == pytest.approx(float(fn(COUNTS)), rel=1e-6)


def test_nec_of_zero_costs_is_nan_under_jit_and_raises_eagerly():
    zero = np.zeros((2, 2))
    raises("NEC is undefined", ecjax.normalized_expected_cost, COUNTS, zero)
    assert np.isnan(float(jax.jit(ecjax.normalized_expected_cost)(jnp.asarray(COUNTS), jnp.asarray(zero))))
    free = np.array([[0.0, 0.0], [5.0, 0.0]])  # deciding 1 costs nothing: naive EC 0, EC > 0 (was +inf)
    raises("NEC is undefined", ecjax.normalized_expected_cost, COUNTS, free)
    assert np.isnan(float(jax.jit(ecjax.normalized_expected_cost)(jnp.asarray(COUNTS), jnp.asarray(free))))


def test_prior_on_absent_class_is_nan_under_jit():
    p = np.array([0.5, 0.5])
    raises("`priors`", ecjax.expected_cost, BATCH[2], C01, priors=p)
    got = jax.jit(lambda c, pr: ecjax.expected_cost(c, C01, priors=pr))(jnp.asarray(BATCH), jnp.asarray(p))
    got = np.asarray(got)
    assert np.isnan(got[2])  # was 0.25
    assert got[0] == pytest.approx(0.5 * 10 / 40 + 0.5 * 20 / 60, rel=1e-6)


@pytest.mark.parametrize("priors", [[0.7, 0.7], [1.5, -0.5], [np.nan, 1.0]])
def test_invalid_priors_are_nan_under_jit(priors):
    p = np.asarray(priors)
    raises("`priors`", ecjax.expected_cost, COUNTS, C01, priors=p)
    assert np.isnan(float(jax.jit(lambda pr: ecjax.expected_cost(COUNTS, C01, priors=pr))(jnp.asarray(p))))


def test_confusion_matrix_marks_invalid_indices_under_jit_and_vmap():
    y = jnp.array([[0, 1, 1, 0], [0, 1, 2, 0], [0, -1, 1, 0]])
    d = jnp.array([0, 1, 0, 0])
    out = np.asarray(jax.jit(jax.vmap(lambda a: confusion_matrix(a, d, num_classes=2)))(y))
    np.testing.assert_array_equal(out[0], [[2, 0], [1, 1]])
    assert np.all(out[1] == -1) and np.all(out[2] == -1)
    yf = jnp.array([0.0, 1.5, 1.0, 0.0])  # a traced non-integer label
    assert np.all(np.asarray(jax.jit(lambda a: confusion_matrix(a, d, num_classes=2))(yf)) == -1)
    bad_d = jnp.array([0, 1, 5, 0])  # decision >= D = K under jit
    assert np.all(np.asarray(jax.jit(lambda a: confusion_matrix(y[0], a, num_classes=2))(bad_d)) == -1)
    w = jnp.array([1.0, -1.0, 1.0, 1.0])
    assert np.all(np.isnan(np.asarray(jax.jit(lambda w: confusion_matrix(y[0], d, num_classes=2, sample_weight=w))(w))))


def test_invalid_count_matrix_propagates_nan():
    @jax.jit
    def pipeline(labels):
        c = confusion_matrix(labels, jnp.array([0, 1, 0, 0]), num_classes=2)
        return ecjax.accuracy(c), ecjax.expected_cost(c, C01), ecjax.rates(c)

    acc, ec, r = pipeline(jnp.array([0, 1, 7, 0]))
    assert np.isnan(float(acc)) and np.isnan(float(ec)) and np.all(np.isnan(np.asarray(r)))


@pytest.mark.parametrize("fn, bad", [
    (lambda b: ecjax.f_beta_score(COUNTS, beta=b), -2.0),
    (lambda b: costs.f_beta(b), -1.0),
    (lambda p: costs.net_benefit(p), 1.5),
    (lambda p: ecjax.net_benefit(COUNTS, threshold_probability=p), 0.0),
    (lambda a: costs.zero_one(2, abstain=a), -1.0),
    (lambda x: costs.utility_from_xy(x, -0.9), 0.9),
    (lambda p: costs.balanced(jnp.stack([p, 1 - p])), 0.0),
    (lambda v0: ecjax.general_performance_score(jnp.stack([v0, 0.5]))[0], 2.0),
])
def test_parameters_are_nan_under_jit(fn, bad):
    assert np.all(np.isnan(np.asarray(jax.jit(fn)(jnp.asarray(bad)))))
    good = jax.jit(fn)(jnp.asarray(0.5 if bad not in (0.9,) else 0.1))
    assert np.all(np.isfinite(np.asarray(good)))


def test_cost_constructors_under_vmap():
    got = np.asarray(jax.vmap(costs.f_beta)(jnp.array([2.0, -1.0, 0.5])))
    np.testing.assert_allclose(got[0], [[0, 1], [4, 0]])
    np.testing.assert_allclose(got[2], np.asarray(costs.f_beta(0.5)))
    assert np.all(np.isnan(got[1]))
    got = np.asarray(jax.vmap(costs.net_benefit)(jnp.array([0.2, 1.0])))
    np.testing.assert_allclose(got[0], [[0, 0.25], [1, 0]], rtol=1e-6)
    assert np.all(np.isnan(got[1]))
    x, y = jax.vmap(costs.xy_from_utility)(jnp.stack([costs.utility_from_xy(0.3, -0.2), jnp.ones((2, 2))]))
    np.testing.assert_allclose([float(x[0]), float(y[0])], [0.3, -0.2], atol=1e-6)
    assert np.isnan(float(x[1])) and np.isnan(float(y[1]))


def test_rescale_unit_of_constant_utilities_is_nan_under_jit():
    raises("`utilities`", costs.rescale_unit, np.ones((2, 2)))
    assert np.all(np.isnan(np.asarray(jax.jit(costs.rescale_unit)(jnp.ones((2, 2))))))


# ---------------------------------------------------------------- scores functions

Y = np.array([0, 1, 1, 0, 1, 0, 0, 1])
S = np.log(np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.9, 0.1],
                     [0.2, 0.8], [0.55, 0.45], [0.7, 0.3], [0.4, 0.6]]))


def _scores_fns():
    return {
        "cross_entropy": ecjax.cross_entropy, "brier": ecjax.brier,
        "cross_entropy_norm": lambda y, s: ecjax.cross_entropy(y, s, normalize=True),
        "ece": lambda y, s: ecjax.ece(y, s, num_bins=4), "auc": ecjax.auc, "eer": ecjax.eer,
    }


YS = np.stack([Y, Y, np.where(np.arange(8) == 3, 5, Y)])  # third: a label out of range
SS = np.stack([S, np.where(np.arange(8)[:, None] == 2, np.nan, S), S])  # second: a NaN score


@pytest.fixture(scope="module")
def scores_traced():
    fns = _scores_fns()
    return jax.jit(jax.vmap(lambda y, s: {n: f(y, s) for n, f in fns.items()}))(jnp.asarray(YS), jnp.asarray(SS))


@pytest.mark.parametrize("name", sorted(_scores_fns()))
def test_scores_functions_eager_jit_vmap_and_nan_contract(name, scores_traced):
    fn = _scores_fns()[name]
    eager = float(fn(Y, S))
    out = np.asarray(scores_traced[name])
    assert out[0] == pytest.approx(eager, rel=1e-5, abs=1e-7)
    assert np.isnan(out[1]) and np.isnan(out[2])
    raises("`labels`", fn, np.where(np.arange(8) == 3, 5, Y), S)
    raises("`scores`", fn, Y, np.where(np.arange(8)[:, None] == 2, np.nan, S))


def _sp_at_se(y, s):
    return ecjax.scores.specificity_at_sensitivity(y, s, 0.5).specificity


def _bayes_risk(y, s):
    return ecjax.bayes_risk_curve(y, s[:, 1] - s[:, 0], score_type="llr", prior_log_odds=jnp.array([0.0])).minimum[0]


@pytest.mark.parametrize("fn", [ecjax.auc, ecjax.eer, _sp_at_se, _bayes_risk])
def test_single_class_labels_under_jit(fn):
    raises("`labels`", fn, np.zeros(8, int), S)
    assert np.isnan(float(jax.jit(fn)(jnp.zeros(8, jnp.int32), jnp.asarray(S))))


def test_cross_entropy_prior_on_absent_class_under_jit():
    y = np.zeros(8, int)
    p = np.array([0.5, 0.5])
    raises("`priors`", ecjax.cross_entropy, y, S, priors=p)
    got = jax.jit(lambda pr: ecjax.cross_entropy(y, S, priors=pr))(jnp.asarray(p))
    assert np.isnan(float(got))


def test_bayes_decisions_under_vmap_on_nan_scores():
    s = jnp.full((2, 3, 2), jnp.nan)
    out = np.asarray(jax.vmap(lambda x: ecjax.bayes_decisions(x, C01))(s))
    assert np.all(out == -1)


# ------------------------------------------------- weighted_metric, offsets under jit (issue 30, items 8 and 17)

def _binary_scores(n=300, seed=6):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    llr = rng.normal(size=n) + 1.5 * (y - 0.5)
    return y, llr, np.stack([-np.logaddexp(0, llr), -np.logaddexp(0, -llr)], 1)


@pytest.mark.parametrize("metric", ["auc", "eer", "cross_entropy", "brier", "ece"])
def test_weighted_metric_of_a_label_out_of_range_is_nan_under_jit(metric):
    from ecjax._src.prob.bootstrap import weighted_metric
    y, _, lp = _binary_scores()
    bad = y.copy()
    bad[5] = 2  # a concrete call refuses it; under jit the AUC was 0.992
    raises("`labels`", weighted_metric, bad, lp, np.ones(len(y)), metric)
    f = jax.jit(lambda a, b, w: weighted_metric(a, b, w, metric))
    assert np.isnan(float(f(bad, lp, np.ones(len(y)))))
    negative = np.ones(len(y))
    negative[3] = -1.0
    assert np.isnan(float(f(y, lp, negative)))
    assert np.isfinite(float(f(y, lp, np.ones(len(y)))))


def test_weighted_metric_under_jit_matches_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    from ecjax._src.prob.bootstrap import weighted_metric
    y, llr, lp = _binary_scores()
    w = np.random.default_rng(7).integers(1, 4, len(y)).astype(float)
    got = jax.jit(lambda a, b, c: weighted_metric(a, b, c, "auc"))(y, lp, w)
    assert float(got) == pytest.approx(metrics.roc_auc_score(y, llr, sample_weight=w), abs=1e-6)


def test_auc_of_llr_with_a_common_offset_of_1e4():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 2000)
    llr = (rng.normal(size=2000) + (y - 0.5)) * 1e-3 + 1e4  # float64: float32 would tie LLRs 1e-3 apart
    want = metrics.roc_auc_score(y, llr)
    assert float(ecjax.auc(y, llr, score_type="llr")) == pytest.approx(want, abs=1e-6)  # was 0.746 for 0.769
    y_sk, s_sk = y, llr - 1e4  # EER depends on the order only: the offset must not change it
    assert float(ecjax.eer(y, llr, score_type="llr")) == pytest.approx(
        float(ecjax.eer(y_sk, s_sk, score_type="llr")), abs=1e-6)


def test_logits_offset_under_jit_holds_for_float32_exact_offsets():
    # Under jit (x64 off) JAX casts float64 arguments to float32 at the boundary, before ecjax sees them; what
    # holds there (README, the NaN contract) is shift invariance of the float32 values: logits on a 1/64 grid
    # plus 1024 are exact in float32, and the cross-entropy is that of the unshifted logits.
    rng = np.random.default_rng(8)
    logits = np.round(rng.normal(size=(400, 3)) * 2 * 64) / 64
    y = rng.integers(0, 3, 400)
    lp = _log_softmax64(logits)
    want = sum(np.mean(y == k) * -np.mean(lp[y == k, k]) for k in range(3))
    f = jax.jit(lambda a, b: ecjax.cross_entropy(a, b, score_type="logits"))
    assert float(f(y, (logits + 1024).astype(np.float32))) == pytest.approx(want, rel=1e-6)
    # A float64 array closed over (concrete inside the trace) keeps the concrete call's float64 rule at 1e7.
    g = jax.jit(lambda a: ecjax.cross_entropy(a, logits + 1e7, score_type="logits"))
    assert float(g(y)) == pytest.approx(want, rel=1e-5)


def test_bootstrap_metric_returning_a_complex_number_is_refused():
    from ecjax import prob
    y, _, lp = _binary_scores()
    systems = prob.Systems(y, scores=lp)
    msg = raises("`metric`", prob.bootstrap_metric, systems,
                 lambda a, b, w: jnp.sum(w * b[:, 1]).astype(jnp.complex64), higher_is_better=True,
                 key=jax.random.key(0))
    assert "complex" in msg  # was a raw TypeError from the ranking


def test_reliability_bands_under_jit_says_to_call_it_outside_jit():
    y, _, lp = _binary_scores()
    with pytest.raises(InputError, match="outside jit"):
        jax.jit(lambda a, b: ecjax.reliability_bands(a, b).low)(y, lp)  # was TracerArrayConversionError
    bands = ecjax.reliability_bands(y, lp)  # concrete: still fine
    assert np.all(bands.low <= bands.high)


# =================================================================== keys that are not keys

@pytest.mark.parametrize("key", [42, "abc", np.array([1.5, 2.0]), np.array([1, 2], np.int64), None, 3.0])
def test_as_key_refuses_non_keys(key):
    raises("`key`", v.as_key, key)


def test_as_key_accepts_typed_and_raw_keys():
    assert v.as_key(jax.random.key(0)) is not None
    assert v.as_key(jax.random.PRNGKey(0)).shape == (2,)


@pytest.mark.parametrize("key", [42, "abc"])
def test_compare_and_diagnose_refuse_non_keys(key):
    from ecjax import calibration, prob

    raises("`key`", prob.compare, prob.Systems(np.array([0, 1, 0, 1]), np.array([[0, 1, 0, 1], [0, 0, 0, 1]])),
           costs=C01, key=key, settings=prob.MonteCarloSettings(num_draws=10))
    raises("`key`", lambda: calibration.diagnose(S, Y, protocol=calibration.CrossValidation(key)))


@pytest.mark.parametrize("x, ok", [(3, 3.0), (np.float32(2.5), 2.5), (np.array(1.0), 1.0)])
def test_as_scalar_accepts_numbers(x, ok):
    assert v.as_scalar(x, "x") == ok


@pytest.mark.parametrize("x", ["a", "1.0", True, None, [1.0], np.array([1.0, 2.0]), 10**400, np.inf])
def test_as_scalar_refuses_non_numbers(x):
    raises("`low`", v.as_scalar, x, "low")


@pytest.mark.parametrize("sensitivity", [True, "0.5", 1.5, -0.1, np.nan])
def test_target_sensitivity_is_one_number_in_the_unit_interval(sensitivity):
    # True (read as 1.0) and the string "0.5" were taken by float() before the one scalar check.
    for fn in (ecjax.scores.specificity_at_sensitivity, ecjax.scores.nec_for_target_sensitivity):
        raises("`sensitivity`", fn, Y, S, sensitivity)


@pytest.mark.parametrize("zero_division", ["nan", None, True, [0.0]])
def test_zero_division_is_one_number(zero_division):
    raises("`zero_division`", ecjax.metrics.precision, COUNTS, zero_division=zero_division)
    raises("`zero_division`", ecjax.metrics.matthews_corrcoef, COUNTS, zero_division=zero_division)


def test_cost_ratio_of_a_string():
    from ecjax import prob

    raises("`low`", prob.cost_ratio, "a", 5)


# Probabilities given as log-domain scores: read as logits they give wrong posteriors with no sign (the
# former error for probabilities suggested score_type="logits", and following it gave a cross-entropy of 1.543
# instead of 0.282).
def _probabilities(n=200, k=3, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.5, size=n)
    return rng.integers(0, k, n), p


@pytest.mark.parametrize("score_type", ["logits", "log_posteriors"])
@pytest.mark.parametrize("call", ["bayes_decisions", "cross_entropy", "brier"])
def test_probabilities_are_not_read_as_log_scores(score_type, call):
    labels, p = _probabilities()
    fn = {"bayes_decisions": lambda: ecjax.bayes_decisions(p, 1 - np.eye(3), score_type=score_type),
          "cross_entropy": lambda: ecjax.cross_entropy(labels, p, score_type=score_type),
          "brier": lambda: ecjax.brier(labels, p, score_type=score_type)}[call]
    with pytest.raises(InputError, match=r"`scores` rows look like probabilities .* score_type='probabilities'"):
        fn()


def test_the_advice_for_probabilities_gives_the_right_cross_entropy():
    labels, p = _probabilities(n=500, k=4, seed=3)
    p = np.clip(p, 1e-12, None)
    p /= p.sum(1, keepdims=True)
    reference = -np.mean(np.log(p[np.arange(len(labels)), labels]))  # float64, independent of ecjax
    assert float(ecjax.cross_entropy(labels, np.log(p), score_type="log_posteriors")) == pytest.approx(reference, rel=1e-5)
    assert float(ecjax.cross_entropy(labels, p, score_type="probabilities")) == pytest.approx(reference, rel=1e-5)


def test_log_scores_in_the_unit_interval_that_do_not_sum_to_one_are_accepted():
    # Logits may lie in [0, 1]; only rows that also sum to 1 are refused.
    labels, p = _probabilities()
    logits = 0.5 * p + 0.25  # rows sum to 1.25
    np.testing.assert_array_equal(np.asarray(ecjax.bayes_decisions(logits, 1 - np.eye(3), score_type="logits")),
                                  np.argmax(p, 1))


# ------------------------------------------ draws that cannot fit are refused, not a MemoryError (issue 30 item 14)

@pytest.mark.parametrize("which", ["compare", "compare_counts", "bootstrap_metric"])
def test_a_billion_kept_draws_are_refused_before_any_is_drawn(which):
    import jax

    from ecjax import prob

    y = np.array([0, 1, 0, 1, 1, 0])
    # The kept draws live in host memory (a chunk at a time on the device), so what cannot fit depends on the
    # machine: 10^9 draws x 2 systems (tens of GiB) fit the 128 GiB of the lent H100's host and ran there
    # (2026-11-28). One draw of 2 systems keeps at least 2 x 4 bytes, so memory / 4 draws need at least twice the
    # machine's memory on any machine: the library says so instead of failing in XLA's allocator.
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    settings = prob.MonteCarloSettings(num_draws=max(10**9, memory // 4))
    with pytest.raises(InputError, match="num_draws.*GiB"):
        if which == "compare":
            prob.compare(prob.Systems(y, [y, 1 - y]), costs=np.array([[0, 1], [1, 0]]), key=jax.random.key(0),
                         settings=settings)
        elif which == "compare_counts":
            prob.compare_counts(np.array([[[3, 0], [0, 3]], [[1, 2], [2, 1]]]), costs=np.array([[0, 1], [1, 0]]),
                                key=jax.random.key(0), settings=settings)
        else:
            s = np.log(np.full((6, 2), 0.5))
            prob.bootstrap_metric(prob.Systems(y, scores=[s, s]), "brier", key=jax.random.key(0), settings=settings)
