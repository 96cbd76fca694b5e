"""Identities of Ferrer (2022a, 2022b, 2025) and De Diego et al. (2022) and agreement with scikit-learn.

References: the seeds' equations (each cited where checked), scikit-learn's
metrics computed from label and decision vectors, and short numpy
computations written here.  Random confusion matrices come from a fixed
numpy generator and are evaluated in one batched call each.

Index convention: the seeds' class 1 (H1) is ecjax class 0, class 2 (H2, the
class of interest for F-beta, LR+ and net benefit) is ecjax class 1.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm

import jax.numpy as jnp

from ecjax import costs, metrics
from ecjax.confusion import confusion_matrix

RTOL = 2e-5  # float32 ecjax against float64 references


def _random_binary_counts(n=300, seed=0, high=60):
    """``(n, 2, 2)`` counts with every row and column total non-zero."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, high, size=(n, 2, 2))
    counts[:, 0, 0] += 1  # K_1*, K_*1 > 0
    counts[:, 1, 1] += 1  # K_2*, K_*2 > 0
    # A few extreme systems: no errors of one kind, heavily imbalanced classes.
    counts[:10, 0, 1] = 0
    counts[10:20, 1, 0] = 0
    counts[20:30, 1] //= 10
    counts[20:30, 1, 1] += 1
    return counts.astype(np.int32)


def _stats(counts):
    c = np.asarray(counts, dtype=np.float64)
    n_i = c.sum(-1)                        # K_i*
    n_j = c.sum(-2)                        # K_*j
    n = c.sum((-2, -1))
    p = n_i / n[..., None]                 # P_i
    r = c / n_i[..., None]                 # R_ij
    return c, n_i, n_j, n, p, r


@pytest.fixture(scope="module")
def binary_counts():
    return _random_binary_counts()


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0, 3.7])
def test_f_beta_is_scaled_expected_cost(binary_counts, beta):
    """Ferrer (2022b) eqs. 23-24 (Ferrer 2022a, eq. 22):
    1 - F_beta = EC_{beta^2} / (beta^2 P2 + R_*2) = min(beta^2 P2, P1) NEC_{beta^2} / (beta^2 P2 + R_*2),
    with EC_{beta^2} the EC of costs c12 = 1, c21 = beta^2 and the data priors (eq. 22)."""
    c, n_i, n_j, n, p, r = _stats(binary_counts)
    b2 = beta**2
    f = np.asarray(metrics.f_beta_score(binary_counts, beta=beta, pos_label=1), np.float64)
    ec = np.asarray(metrics.expected_cost(binary_counts, costs.f_beta(beta)), np.float64)
    nec = np.asarray(metrics.normalized_expected_cost(binary_counts, costs.f_beta(beta)), np.float64)
    r_star2 = n_j[:, 1] / n
    np.testing.assert_allclose(1 - f, ec / (b2 * p[:, 1] + r_star2), rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(
        1 - f, np.minimum(b2 * p[:, 1], p[:, 0]) * nec / (b2 * p[:, 1] + r_star2), rtol=RTOL, atol=1e-6
    )
    # Eq. 22 in numpy: EC_{beta^2} = beta^2 R21 P2 + R12 P1.
    np.testing.assert_allclose(ec, b2 * r[:, 1, 0] * p[:, 1] + r[:, 0, 1] * p[:, 0], rtol=RTOL)
    # Eq. 18 in numpy: F_beta = (1 + b^2) N22 / ((1 + b^2) N22 + b^2 N21 + N12).
    np.testing.assert_allclose(
        f, (1 + b2) * c[:, 1, 1] / ((1 + b2) * c[:, 1, 1] + b2 * c[:, 1, 0] + c[:, 0, 1]), rtol=RTOL
    )


def _nec_b(counts):
    """NEC_b: alpha = 1 in Ferrer (2022b) eq. 8 (0-1 costs, uniform priors)."""
    return np.asarray(
        metrics.normalized_expected_cost(counts, costs.zero_one(2), priors=jnp.array([0.5, 0.5])), np.float64
    )


def test_nec_b_forms(binary_counts):
    """NEC_b = R12 + R21 (Ferrer 2022a, eq. 29; Ferrer (2025) §3.2), also reached with the
    balanced-error costs 1/(K P_i) and data priors (Ferrer 2022b, eq. 11) and with
    costs c12 = P2, c21 = P1 (alpha = c12 P1 / (c21 P2) = 1)."""
    c, n_i, n_j, n, p, r = _stats(binary_counts)
    nec_b = _nec_b(binary_counts)
    np.testing.assert_allclose(nec_b, r[:, 0, 1] + r[:, 1, 0], rtol=RTOL)
    np.testing.assert_allclose(
        np.asarray(metrics.normalized_expected_cost(binary_counts, costs.balanced(p))), nec_b, rtol=RTOL
    )
    alpha_one = np.zeros((len(p), 2, 2))
    alpha_one[:, 0, 1] = p[:, 1]
    alpha_one[:, 1, 0] = p[:, 0]
    np.testing.assert_allclose(
        np.asarray(metrics.normalized_expected_cost(binary_counts, alpha_one)), nec_b, rtol=RTOL
    )


def test_mcc_is_scaled_nec_b(binary_counts):
    """Ferrer (2022b) eq. 30 (Ferrer 2022a, eq. 30): MCC = sqrt(N1* N2* / (N*1 N*2)) (1 - NEC_b).

    Ferrer (2022a) calls this EC_nb and defines it (eq. 28) as the normalized EC
    with 0-1 costs and uniform priors; Ferrer (2022b) as alpha = 1 in its eq. 8.
    Both are the same number (test_nec_b_forms).
    """
    c, n_i, n_j, n, p, r = _stats(binary_counts)
    mcc = np.asarray(metrics.matthews_corrcoef(binary_counts), np.float64)
    factor = np.sqrt(n_i[:, 0] * n_i[:, 1] / (n_j[:, 0] * n_j[:, 1]))
    np.testing.assert_allclose(mcc, factor * (1 - _nec_b(binary_counts)), rtol=RTOL, atol=1e-6)
    # Ferrer (2022b) eq. 31: the factor is sqrt(P1 (1 - P1) / (R*1 (1 - R*1))).
    r1 = n_j[:, 0] / n
    np.testing.assert_allclose(factor, np.sqrt(p[:, 0] * (1 - p[:, 0]) / (r1 * (1 - r1))), rtol=1e-12)


@pytest.mark.parametrize("p_t", [0.05, 0.2, 0.5, 0.8])
def test_net_benefit_is_affine_in_nec(binary_counts, p_t):
    """Ferrer (2022b) eqs. 12-15 (Ferrer 2025, App. C eqs. 25-27):
    NB = N22/N - p/(1-p) N12/N = P2 - EC_p = P2 - min(P2, p/(1-p) P1) NEC_p,
    with EC_p the EC of costs c21 = 1, c12 = p/(1-p)."""
    c, n_i, n_j, n, p, r = _stats(binary_counts)
    nb = np.asarray(metrics.net_benefit(binary_counts, threshold_probability=p_t), np.float64)
    odds = p_t / (1 - p_t)
    np.testing.assert_allclose(nb, c[:, 1, 1] / n - odds * c[:, 0, 1] / n, rtol=RTOL, atol=1e-6)  # eq. 12
    cost = costs.net_benefit(p_t)
    np.testing.assert_allclose(np.asarray(cost), [[0, odds], [1, 0]], rtol=1e-6)
    ec = np.asarray(metrics.expected_cost(binary_counts, cost), np.float64)
    nec = np.asarray(metrics.normalized_expected_cost(binary_counts, cost), np.float64)
    np.testing.assert_allclose(nb, p[:, 1] - ec, rtol=RTOL, atol=1e-6)  # eq. 14
    np.testing.assert_allclose(nb, p[:, 1] - np.minimum(p[:, 1], odds * p[:, 0]) * nec, rtol=RTOL, atol=1e-6)


def test_lr_plus_is_function_of_nec_b(binary_counts):
    """Ferrer (2022b) eqs. 32-35 (Ferrer 2022a, eq. 35; Ferrer (2025) App. C.2):
    LR+ = sensitivity / (1 - specificity) = (1 - R21) / R12 = (1 - NEC_b) / R12 + 1."""
    c, n_i, n_j, n, p, r = _stats(binary_counts)
    lr = np.asarray(metrics.positive_likelihood_ratio(binary_counts), np.float64)
    finite = r[:, 0, 1] > 0
    r12 = np.where(finite, r[:, 0, 1], 1.0)
    np.testing.assert_allclose(lr[finite], ((1 - _nec_b(binary_counts)) / r12 + 1)[finite], rtol=1e-4)
    np.testing.assert_allclose(lr[finite], ((1 - r[:, 1, 0]) / r12)[finite], rtol=1e-4)
    # R12 = 0 (no false positives): LR+ is documented as +inf.
    assert np.all(np.isinf(lr[~finite]))
    # LR- = (1 - TPR) / TNR = R21 / R11.
    lrm = np.asarray(metrics.negative_likelihood_ratio(binary_counts), np.float64)
    np.testing.assert_allclose(lrm, r[:, 1, 0] / r[:, 0, 0], rtol=1e-4)


def test_error_rates_are_expected_costs():
    """Ferrer (2022b) eqs. 10-11 (Ferrer 2022a, eqs. 8, 12), multiclass: ER is the EC of
    0-1 costs, BalER the EC of costs 1/(K P_i) with data priors."""
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 30, size=(100, 4, 4)) + np.eye(4, dtype=int)
    c, n_i, n_j, n, p, r = _stats(counts)
    er = 1 - np.trace(c, axis1=1, axis2=2) / n
    bal_er = np.mean(1 - np.diagonal(r, axis1=1, axis2=2), -1)
    np.testing.assert_allclose(np.asarray(metrics.expected_cost(counts, costs.zero_one(4))), er, rtol=RTOL)
    np.testing.assert_allclose(np.asarray(metrics.error_rate(counts)), er, rtol=RTOL)
    np.testing.assert_allclose(np.asarray(metrics.expected_cost(counts, costs.balanced(p))), bal_er, rtol=RTOL)
    np.testing.assert_allclose(np.asarray(metrics.balanced_error_rate(counts)), bal_er, rtol=RTOL)


# ------------------------------------------------------------ scikit-learn

def _random_labels(seed, n, k, skew=False):
    rng = np.random.default_rng(seed)
    p = np.linspace(1, 3, k) if skew else np.ones(k)
    y = rng.choice(k, size=n, p=p / p.sum())
    # Decisions: right with probability 0.6, else uniformly random.
    d = np.where(rng.random(n) < 0.6, y, rng.integers(0, k, size=n))
    return y, d


CASES = [(0, 400, 2, False), (1, 57, 2, True), (2, 500, 3, False), (3, 300, 5, True), (4, 31, 7, False)]


@pytest.mark.parametrize("seed, n, k, skew", CASES)
def test_against_sklearn(seed, n, k, skew):
    y, d = _random_labels(seed, n, k, skew)
    counts = confusion_matrix(y, d, num_classes=k)
    labels = np.arange(k)
    for average in ("macro", "micro", None):
        for name, ours, ref in (
            ("precision", metrics.precision, skm.precision_score),
            ("recall", metrics.recall, skm.recall_score),
            ("f1", metrics.f1_score, skm.f1_score),
        ):
            want = ref(y, d, labels=labels, average=average, zero_division=0.0)
            got = ours(counts, average=average)
            np.testing.assert_allclose(np.asarray(got), want, rtol=RTOL, atol=1e-7, err_msg=f"{name} {average}")
        for beta in (0.5, 2.0):
            want = skm.fbeta_score(y, d, beta=beta, labels=labels, average=average, zero_division=0.0)
            got = metrics.f_beta_score(counts, beta=beta, average=average)
            np.testing.assert_allclose(np.asarray(got), want, rtol=RTOL, atol=1e-7, err_msg=f"fbeta {average}")
    # average="binary" with each class as the positive one (one against the rest).
    for pos in range(k):
        yb, db = (y == pos).astype(int), (d == pos).astype(int)
        for ours, ref in ((metrics.precision, skm.precision_score), (metrics.recall, skm.recall_score),
                          (metrics.f1_score, skm.f1_score)):
            want = ref(yb, db, pos_label=1, average="binary", zero_division=0.0)
            np.testing.assert_allclose(float(ours(counts, pos_label=pos)), want, rtol=RTOL, atol=1e-7)
            if k == 2:
                want = ref(y, d, pos_label=pos, average="binary", zero_division=0.0)
                np.testing.assert_allclose(float(ours(counts, pos_label=pos)), want, rtol=RTOL, atol=1e-7)
        # Specificity is the recall of "not pos"; NPV its precision.
        np.testing.assert_allclose(float(metrics.specificity(counts, pos_label=pos)),
                                   skm.recall_score(1 - yb, 1 - db, zero_division=0.0), rtol=RTOL)
        np.testing.assert_allclose(float(metrics.negative_predictive_value(counts, pos_label=pos)),
                                   skm.precision_score(1 - yb, 1 - db, zero_division=0.0), rtol=RTOL)
    np.testing.assert_allclose(float(metrics.accuracy(counts)), skm.accuracy_score(y, d), rtol=RTOL)
    np.testing.assert_allclose(float(metrics.matthews_corrcoef(counts)), skm.matthews_corrcoef(y, d),
                               rtol=RTOL, atol=1e-7)
    np.testing.assert_allclose(float(metrics.cohen_kappa(counts)), skm.cohen_kappa_score(y, d), rtol=RTOL, atol=1e-7)
    np.testing.assert_allclose(float(metrics.balanced_accuracy(counts)), skm.balanced_accuracy_score(y, d),
                               rtol=RTOL)
    if k == 2:
        c = np.asarray(counts)
        if c[0, 1] > 0 and c[0, 0] > 0:
            lr_plus, lr_minus = skm.class_likelihood_ratios(y, d)
            np.testing.assert_allclose(float(metrics.positive_likelihood_ratio(counts)), lr_plus, rtol=1e-5)
            np.testing.assert_allclose(float(metrics.negative_likelihood_ratio(counts)), lr_minus, rtol=1e-5)
        elif c[0, 1] == 0:
            # No false positives: scikit-learn warns and returns NaN; ecjax documents +inf.
            assert np.isinf(float(metrics.positive_likelihood_ratio(counts)))
        # Informedness = TPR + TNR - 1 = sklearn's chance-adjusted balanced accuracy for K = 2.
        np.testing.assert_allclose(float(metrics.informedness(counts)),
                                   skm.balanced_accuracy_score(y, d, adjusted=True), rtol=1e-5, atol=1e-7)


def test_other_binary_metrics_numpy(binary_counts):
    """Markedness, geometric mean and Fowlkes-Mallows against their definitions (numpy)."""
    c, n_i, n_j, n, p, r = _stats(binary_counts)
    tp, fp, fn, tn = c[:, 1, 1], c[:, 0, 1], c[:, 1, 0], c[:, 0, 0]
    ppv, npv, tpr, tnr = tp / (tp + fp), tn / (tn + fn), tp / (tp + fn), tn / (tn + fp)
    np.testing.assert_allclose(np.asarray(metrics.markedness(binary_counts)), ppv + npv - 1, rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(np.asarray(metrics.informedness(binary_counts)), tpr + tnr - 1, rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(np.asarray(metrics.geometric_mean(binary_counts)), np.sqrt(tpr * tnr), rtol=RTOL)
    np.testing.assert_allclose(np.asarray(metrics.fowlkes_mallows(binary_counts)), np.sqrt(ppv * tpr), rtol=RTOL)


def test_batched_metrics_match_one_by_one(binary_counts):
    """A batch of count matrices gives the same as one call per matrix."""
    sub = binary_counts[:5]
    for fn in (metrics.matthews_corrcoef, metrics.f1_score, metrics.accuracy):
        batched = np.asarray(fn(sub))
        single = np.array([float(fn(x)) for x in sub])
        np.testing.assert_allclose(batched, single, rtol=1e-6)


# ---------------------------------------------------------------- De Diego et al. (2022)

def test_gps_property_4():
    """De Diego et al. (2022) Property 4: p = (1, 1/3) gives GPS = 1/2 and sd = 1/(2 sqrt 2)."""
    gps, sd = metrics.general_performance_score(jnp.array([1.0, 1.0 / 3.0]))
    np.testing.assert_allclose(float(gps), 0.5, rtol=1e-6)
    np.testing.assert_allclose(float(sd), 1 / (2 * np.sqrt(2)), rtol=1e-6)


@pytest.mark.parametrize("n", [2, 3, 4, 7, 12])
def test_gps_property_5(n):
    """De Diego et al. (2022) Property 5: p_i = 1 (i < n), p_n = 1/(n+1): GPS = 1/2, sd = (1/4) sqrt(n/(n-1))."""
    p = np.ones(n)
    p[-1] = 1 / (n + 1)
    gps, sd = metrics.general_performance_score(p)
    np.testing.assert_allclose(float(gps), 0.5, rtol=1e-6)
    np.testing.assert_allclose(float(sd), 0.25 * np.sqrt(n / (n - 1)), rtol=1e-6)


def test_gps_properties_1_2_3_and_text_examples():
    # Property 1: GPS = 1 iff all metrics are 1; Property 3: sd = 0 when all metrics are equal.
    gps, sd = metrics.general_performance_score(jnp.ones(4))
    assert float(gps) == pytest.approx(1.0) and float(sd) == pytest.approx(0.0, abs=1e-7)
    gps, sd = metrics.general_performance_score(jnp.full(5, 0.37))
    assert float(gps) == pytest.approx(0.37, rel=1e-6) and float(sd) == pytest.approx(0.0, abs=1e-6)
    # Property 2: GPS = 0 when one metric is 0.
    gps, _ = metrics.general_performance_score(jnp.array([0.9, 0.0, 0.8]))
    assert float(gps) == 0.0
    # §3.1 text: (Spec, Sens) = (0.4, 0.6): GM 0.49, GPS 0.48; (0.1, 0.9): GM 0.30, GPS 0.18.
    gps, _ = metrics.general_performance_score(jnp.array([[0.4, 0.6], [0.1, 0.9]]))
    np.testing.assert_allclose(np.asarray(gps), [0.48, 0.18], atol=0.005 + 1e-6)
    np.testing.assert_allclose(np.asarray(gps), [2 / (1 / 0.4 + 1 / 0.6), 2 / (1 / 0.1 + 1 / 0.9)], rtol=1e-6)
    # §4.3: "following Property 5, the maximum standard deviation is 0.31" for GPS of 3 UPMs.
    np.testing.assert_allclose(0.25 * np.sqrt(3 / 2), 0.31, atol=0.005)


def _upm_numpy(counts, pos):
    c = np.asarray(counts, np.float64)
    tp = c[pos, pos]
    fn = c[pos].sum() - tp
    fp = c[:, pos].sum() - tp
    tn = c.sum() - tp - fn - fp
    vals = np.array([tp / (tp + fp), tp / (tp + fn), tn / (tn + fp), tn / (tn + fn)])
    return 4 / np.sum(1 / vals), vals


def test_upm_and_gps_upm_numpy():
    """UPM = harmonic mean of (PPV, TPR, TNR, NPV) (De Diego et al. 2022, §3.1), = harmonic mean of
    F1+ and F1-; GPS_UPM = harmonic mean of the one-vs-rest UPMs (§3.2)."""
    rng = np.random.default_rng(5)
    for k in (2, 3, 4):
        counts = rng.integers(1, 40, size=(k, k))
        upms = np.array([_upm_numpy(counts, i)[0] for i in range(k)])
        if k == 2:
            upm, _ = metrics.unified_performance_measure(counts, pos_label=1)
            np.testing.assert_allclose(float(upm), upms[1], rtol=RTOL)
            _, vals = _upm_numpy(counts, 1)
            f1_pos = 2 / (1 / vals[0] + 1 / vals[1])
            f1_neg = 2 / (1 / vals[2] + 1 / vals[3])
            np.testing.assert_allclose(float(upm), 2 / (1 / f1_pos + 1 / f1_neg), rtol=RTOL)
        gps, _ = metrics.gps_upm(counts)
        np.testing.assert_allclose(float(gps), k / np.sum(1 / upms), rtol=RTOL)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_gps_upm_property_6_uniform_matrix(k):
    """De Diego et al. (2022) Property 6: a uniform K x K confusion matrix has precision = recall = 1/K,
    NPV = specificity = (K-1)/K, so GPS_UPM = UPM = 2(K-1)/K^2 (4/9 for K = 3, §4.3;
    0.5 with sd 0.0 for the random binary matrix b) of Table 6, §4.1)."""
    counts = np.full((k, k), 50)
    gps, sd = metrics.gps_upm(counts)
    np.testing.assert_allclose(float(gps), 2 * (k - 1) / k**2, rtol=1e-6)
    assert float(sd) == pytest.approx(0.0, abs=1e-6)
    if k == 3:
        np.testing.assert_allclose(float(gps), 4 / 9, rtol=1e-6)
    if k == 2:
        upm, upm_sd = metrics.unified_performance_measure(counts)
        np.testing.assert_allclose([float(upm), float(upm_sd)], [0.5, 0.0], atol=1e-6)
