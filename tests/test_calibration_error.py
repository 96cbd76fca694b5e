"""Binned calibration errors (MCE, RMS, classwise ECE, ACE) and reliability bands
(ecjax._src.scores.calibration_errors).

References, never ecjax itself: the definitions written out in float64 numpy below (bins of psrcal's convention
for equal width, ``np.array_split`` of the sorted values for equal mass, as Nixon et al. 2019 describe the ACE's
ranges), Kull et al.'s classwise-ECE and Nixon et al.'s ACE formulas as printed, and scipy.stats.beta for the
credible bands.  netcal 1.4 (not installed in CI) agreed with the equal-width ECE and MCE to 3e-7 in a one-off check.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax

import jax
import jax.numpy as jnp

from ecjax import InputError
from ecjax._src.scores import calibration_errors as E

from conftest import load_dataset

NUM_BINS = 10


# ------------------------------------------------------ numpy reference

def _ref_bins(conf, num_bins, binning, hit=None):
    """Bin of each confidence: ``(m/M, (m+1)/M]`` (0 in the first), or ``np.array_split`` of the sorted values.

    Equal mass: float32 rounding (relative ~1e-6 for tiny posteriors) may order two nearly equal values the other
    way round; at a bin boundary that moves a sample to the next bin, which changes the error by more than
    rounding only when the two samples differ in ``hit``.  The data are checked to have no such pair.
    """
    if binning == "equal_width":
        edges = np.linspace(0.0, 1.0, num_bins + 1)
        # No value may sit at an edge to float32 rounding: which side it falls on would be arbitrary.
        assert np.min(np.abs(conf[:, None] - edges[None, 1:-1])) > 1e-6, "test data: a value sits on a bin edge"
        return np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, num_bins - 1)
    order = np.argsort(conf, kind="stable")
    idx = np.empty(conf.shape[0], int)
    for m, chunk in enumerate(np.array_split(order, num_bins)):
        idx[chunk] = m
    s, h = conf[order], (np.zeros_like(conf) if hit is None else hit)[order]
    for e in np.cumsum([len(c) for c in np.array_split(order, num_bins)])[:-1]:
        near = np.abs(s - s[e]) <= 1e-5 * s[e]
        assert np.all(h[near] == h[e]) or not near[:e].any(), "test data: a near-tie of different hits at a boundary"
    return idx


def _ref_errors(conf, hit, num_bins, binning):
    """``{norm: value}`` written from the definitions: weights |B_m|/N, gap = mean hit - mean confidence."""
    idx = _ref_bins(conf, num_bins, binning, hit)
    n = conf.shape[0]
    l1 = l2 = mx = 0.0
    for m in range(num_bins):
        sel = idx == m
        if not sel.any():
            continue
        gap = hit[sel].mean() - conf[sel].mean()
        l1 += sel.sum() / n * abs(gap)
        l2 += sel.sum() / n * gap**2
        mx = max(mx, abs(gap))
    return {"l1": l1, "l2": np.sqrt(l2), "max": mx}


def _ref(labels, p, variant, num_bins, binning, norm):
    if variant == "binary":
        return _ref_errors(p[:, 1], (labels == 1).astype(float), num_bins, binning)[norm]
    if variant == "top_label":
        return _ref_errors(p.max(1), (p.argmax(1) == labels).astype(float), num_bins, binning)[norm]
    return np.mean([_ref_errors(p[:, j], (labels == j).astype(float), num_bins, binning)[norm]
                    for j in range(p.shape[1])])


def _data(name, n=None):
    labels, scores, st = load_dataset(name)
    labels, scores = labels[:n], scores[:n]
    return labels.astype(np.int64), scores, st, np.exp(log_softmax(scores.astype(np.float64), 1))


# ------------------------------------------------- calibration errors

# Not top-label with equal-mass bins on CIFAR-10: hundreds of its float32 confidences are tied at 1.0, which
# ecjax keeps in one bin by design and np.array_split would split (that case is checked on synthetic scores below).
@pytest.mark.parametrize("name,n,variant,binning", [
    ("sst2_gpt2", None, "binary", "equal_width"), ("sst2_gpt2", None, "binary", "equal_mass"),
    ("cifar10_resnet-20", 2000, "top_label", "equal_width"), ("cifar10_resnet-20", 2000, "classwise", "equal_width"),
    ("cifar10_resnet-20", 2000, "classwise", "equal_mass")])
def test_every_norm_matches_the_numpy_definition_on_real_scores(name, n, variant, binning):
    labels, scores, st, p = _data(name, n)
    refs = {norm: _ref(labels, p, variant, NUM_BINS, binning, norm) for norm in E.NORMS}
    assert min(abs(refs["l1"] - refs["l2"]), abs(refs["l2"] - refs["max"])) > 1e-3  # a swapped norm would show
    for norm in E.NORMS:
        ours = float(E.binned_calibration_error(labels, scores, norm=norm, num_bins=NUM_BINS, binning=binning,
                                                variant=variant, score_type=st))
        np.testing.assert_allclose(ours, refs[norm], rtol=1e-5, atol=1e-6, err_msg=f"{norm}")
    # The named measures are these definitions.
    kw = dict(num_bins=NUM_BINS, binning=binning, variant=variant, score_type=st)
    np.testing.assert_allclose(float(E.max_calibration_error(labels, scores, **kw)), refs["max"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(E.rms_calibration_error(labels, scores, **kw)), refs["l2"], rtol=1e-5, atol=1e-6)


def test_classwise_ece_and_ace_are_the_published_formulas():
    labels, scores, st, p = _data("cifar10_resnet-20", 2000)
    n, k = p.shape
    # Kull et al. (2019): classwise-ECE = (1/K) sum_j sum_i |B_ij|/n |y_j(B_ij) - p_j(B_ij)|, equal-width bins.
    ref_cw = 0.0
    for j in range(k):
        b = np.clip(np.ceil(p[:, j] * NUM_BINS).astype(int) - 1, 0, NUM_BINS - 1)
        for m in range(NUM_BINS):
            sel = b == m
            if sel.any():
                ref_cw += sel.sum() / n * abs(np.mean(labels[sel] == j) - p[sel, j].mean()) / k
    np.testing.assert_allclose(float(E.classwise_ece(labels, scores, num_bins=NUM_BINS, score_type=st)), ref_cw,
                               rtol=1e-5, atol=1e-6)
    # Nixon et al. (2019): ACE = 1/(KR) sum_k sum_r |acc(r, k) - conf(r, k)|, ranges of N/R sorted predictions
    # (N = 2000 is divisible by R = 10, so the 1/R of the paper and the |B|/N weights coincide).
    ref_ace = 0.0
    for j in range(k):
        order = np.argsort(p[:, j])
        for r in order.reshape(NUM_BINS, -1):
            ref_ace += abs(np.mean(labels[r] == j) - p[r, j].mean()) / (k * NUM_BINS)
    np.testing.assert_allclose(float(E.adaptive_calibration_error(labels, scores, num_bins=NUM_BINS, score_type=st)),
                               ref_ace, rtol=1e-5, atol=1e-6)
    # The two differ on these scores (most class posteriors are near 0), so each check pins its own binning.
    assert abs(ref_ace - ref_cw) > 1e-3


def test_batch_axis_jit_and_the_nan_contract():
    rng = np.random.default_rng(3)
    n, k = 300, 4
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(3, n, k)) * np.array([0.5, 2.0, 4.0])[:, None, None]
    logits[..., 0] += 1.0
    p = np.exp(log_softmax(logits, -1))
    # Each system is binned on its own (equal-mass edges from its own confidences).
    got = np.asarray(E.binned_calibration_error(labels, logits, norm="l2", score_type="logits", num_bins=NUM_BINS,
                                                binning="equal_mass"))
    ref = [_ref(labels, p[i], "top_label", NUM_BINS, "equal_mass", "l2") for i in range(3)]
    assert got.shape == (3,)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    jitted = jax.jit(lambda y, s: E.binned_calibration_error(y, s, norm="max", variant="classwise",
                                                             score_type="logits", num_bins=NUM_BINS))
    ref = [_ref(labels, p[i], "classwise", NUM_BINS, "equal_width", "max") for i in range(3)]
    np.testing.assert_allclose(np.asarray(jitted(jnp.asarray(labels), jnp.asarray(logits, jnp.float32))), ref,
                               rtol=1e-5, atol=1e-6)
    # Traced labels cannot raise: a label out of range gives NaN, never a plausible number.
    bad = labels.copy()
    bad[0] = k
    assert np.all(np.isnan(np.asarray(jitted(jnp.asarray(bad), jnp.asarray(logits, jnp.float32)))))


# --------------------------------------------------- reliability bands

def _hdi_reference(a, b, prob):
    """Narrowest interval of mass ``prob``: minimize the width over the lower tail mass (scipy)."""
    width = lambda t: stats.beta.ppf(t + prob, a, b) - stats.beta.ppf(t, a, b)  # noqa: E731
    t = minimize_scalar(width, bounds=(0.0, 1.0 - prob), method="bounded", options={"xatol": 1e-12}).x
    return stats.beta.ppf(t, a, b), stats.beta.ppf(t + prob, a, b)


def test_bands_are_the_beta_posterior_of_each_bins_frequency():
    labels, scores, st, p = _data("sst2_gpt2")
    conf = p[:, 1]
    idx = _ref_bins(conf, NUM_BINS, "equal_width")
    count = np.bincount(idx, minlength=NUM_BINS)
    hits = np.bincount(idx, weights=labels == 1, minlength=NUM_BINS).astype(int)
    assert np.any(count == 0) and np.any((count > 0) & ((hits == 0) | (hits == count)))  # the edge cases occur
    for prob in (0.9, 0.5):
        eq = E.reliability_bands(labels, scores, prob=prob, interval="equal_tailed", num_bins=NUM_BINS, score_type=st)
        np.testing.assert_array_equal(eq.count, count)
        np.testing.assert_array_equal(eq.hits, hits)
        filled = count > 0
        np.testing.assert_allclose(eq.frequency[filled], hits[filled] / count[filled], rtol=1e-6)
        mean_conf = np.bincount(idx, weights=conf, minlength=NUM_BINS)[filled] / count[filled]
        np.testing.assert_allclose(eq.confidence[filled], mean_conf, rtol=1e-5)
        # Uniform prior Beta(1, 1), binomial likelihood: Beta(1 + hits, 1 + misses); equal tails.
        a, b = 1 + hits, 1 + count - hits
        np.testing.assert_allclose(eq.low, stats.beta.ppf((1 - prob) / 2, a, b), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(eq.high, stats.beta.ppf((1 + prob) / 2, a, b), rtol=1e-9, atol=1e-12)
        hdi = E.reliability_bands(labels, scores, prob=prob, interval="hdi", num_bins=NUM_BINS, score_type=st)
        assert hdi.interval == "hdi" and hdi.prob == prob
        np.testing.assert_allclose(stats.beta.cdf(hdi.high, a, b) - stats.beta.cdf(hdi.low, a, b), prob, atol=1e-9)
        for m in range(NUM_BINS):
            if hits[m] == 0 and count[m] > 0:  # decreasing density: [0, F^-1(prob)] = [0, 1 - (1-prob)^(1/b)]
                np.testing.assert_allclose([hdi.low[m], hdi.high[m]], [0.0, 1 - (1 - prob) ** (1 / b[m])],
                                           atol=1e-12)
            elif hits[m] == count[m] and count[m] > 0:  # increasing density: [(1 - prob)^(1/a), 1]
                np.testing.assert_allclose([hdi.low[m], hdi.high[m]], [(1 - prob) ** (1 / a[m]), 1.0], atol=1e-12)
            elif count[m] == 0:  # uniform posterior: the central interval (every interval of length prob is an HDI)
                np.testing.assert_allclose([hdi.low[m], hdi.high[m]], [(1 - prob) / 2, (1 + prob) / 2], atol=1e-12)
            else:
                ref_lo, ref_hi = _hdi_reference(a[m], b[m], prob)
                assert hdi.high[m] - hdi.low[m] <= ref_hi - ref_lo + 1e-9
                np.testing.assert_allclose([hdi.low[m], hdi.high[m]], [ref_lo, ref_hi], atol=1e-5)
                # Equal tails are wider for a skewed posterior: the two checks can tell the intervals apart.
                if abs(a[m] - b[m]) > 20:
                    assert eq.high[m] - eq.low[m] > hdi.high[m] - hdi.low[m] + 1e-6


def _modified_jeffreys(k, n, prob):
    """Brown, Cai & DasGupta (2001) §4.1.2, written out for integers: Beta(k + 1/2, n - k + 1/2) equal tails, with
    [0, 1 - (a/2)^(1/n)] at k = 0, [(a/2)^(1/n), 1] at k = n, low 0 at k = 1 and high 1 at k = n - 1."""
    tail = (1 - prob) / 2
    if k == 0:
        return 0.0, 1 - tail ** (1 / n)
    if k == n:
        return tail ** (1 / n), 1.0
    low = 0.0 if k == 1 else stats.beta.ppf(tail, k + 0.5, n - k + 0.5)
    high = 1.0 if k == n - 1 else stats.beta.ppf(1 - tail, k + 0.5, n - k + 0.5)
    return low, high


def test_default_band_is_the_modified_jeffreys_interval():
    labels, scores, st, p = _data("sst2_gpt2")
    bands = E.reliability_bands(labels, scores, num_bins=NUM_BINS, score_type=st)
    assert bands.interval == "jeffreys"
    filled = bands.count > 0
    assert np.any(filled & ((bands.hits <= 1) | (bands.count - bands.hits <= 1)))  # the modified ends occur
    ref = np.array([_modified_jeffreys(k, n, 0.9) for k, n in zip(bands.hits[filled], bands.count[filled])])
    np.testing.assert_allclose(bands.low[filled], ref[:, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(bands.high[filled], ref[:, 1], rtol=1e-9, atol=1e-12)


def _exact_coverage(interval, n, p, prob=0.9):
    """P(low(k) <= p <= high(k)) for k ~ Binomial(n, p): the binomial pmf summed over the k whose interval holds p."""
    k = np.arange(n + 1)
    low, high = E.binomial_interval(k, np.full(n + 1, n), prob=prob, interval=interval)
    holds = (low[:, None] <= p[None, :]) & (p[None, :] <= high[:, None])
    return np.sum(stats.binom.pmf(k[:, None], n, p[None, :]) * holds, axis=0)


def test_band_covers_the_true_frequency_in_the_extreme_bins():
    # Issue 31: the uniform-prior equal-tailed band covered 0.81 in a bin of true frequency 0.99 (about 72 samples),
    # the HDI 0.72 in bins of about one sample.  Exact coverage (binomial pmf summed over k) of the 90 % band for
    # every bin size up to 100 and true frequencies within 0.05 of 0 or 1.
    near_one = 1 - np.geomspace(1e-6, 0.05, 200)
    p = np.r_[near_one, 1 - near_one]
    worst = {name: min(_exact_coverage(name, n, p).min() for n in range(1, 101))
             for name in ("jeffreys", "equal_tailed", "hdi")}
    assert worst["jeffreys"] >= 0.85, worst
    assert worst["equal_tailed"] < 0.85 and worst["hdi"] < 0.85  # the test tells the intervals apart
    assert _exact_coverage("equal_tailed", 72, np.array([0.99]))[0] < 0.85


# ----------------------------------------------------------------- bad input

def test_bad_inputs_name_the_argument():
    rng = np.random.default_rng(0)
    lp = log_softmax(rng.normal(size=(40, 3)), 1)
    labels = np.arange(40) % 3
    cases = [
        (dict(norm="l3"), "norm"),
        (dict(binning="quantile"), "binning"),
        (dict(variant="per_class"), "variant"),
        (dict(variant="binary"), "variant='binary' needs K = 2"),
        (dict(num_bins=0), "num_bins"),
        (dict(score_type="odds"), "score_type"),
    ]
    for kw, match in cases:
        with pytest.raises(InputError, match=match):
            E.binned_calibration_error(labels, lp, **kw)
    with pytest.raises(InputError, match="same number"):
        E.max_calibration_error(labels[:30], lp)
    with pytest.raises(InputError, match="labels"):
        E.classwise_ece(labels + 1, lp)  # label 3 with K = 3
    with pytest.raises(InputError, match="labels"):
        E.rms_calibration_error(labels[None], lp)
    with pytest.raises(InputError, match="logits"):
        E.adaptive_calibration_error(labels, lp + 1.0)  # not normalized
    with pytest.raises(InputError, match="prob"):
        E.reliability_bands(labels, lp, prob=1.0)
    with pytest.raises(InputError, match="interval"):
        E.reliability_bands(labels, lp, interval="central")
    with pytest.raises(InputError, match="variant"):
        E.reliability_bands(labels, lp, variant="classwise")


# ------------------------------------------------- weighted bin totals (issue 30 item 5: every weighted path)

def test_weighted_bins_of_many_samples_keep_float32_accuracy():
    import ecjax

    # 3 * 10^5 uneven weights in one bin: one running float32 sum of the weighted gaps was 1.1e-5 off the float64
    # value, the compensated chunk sums of ecjax._src.confusion.weight_totals are 1e-7 off.
    rng = np.random.default_rng(0)
    n = 300_000
    p1 = rng.uniform(0.55, 0.6, n).astype(np.float32)  # all in one equal-width bin of 15
    labels = (rng.uniform(size=n) < 0.9).astype(int)
    w = rng.uniform(0, 2, n).astype(np.float32)
    lp = np.log(np.stack([1 - p1, p1], -1).astype(np.float64)).astype(np.float32)
    p = np.exp(lp[:, 1].astype(np.float64))  # the float32 input, read exactly
    w64 = w.astype(np.float64)
    ref = abs(np.sum(w64 * (labels - p))) / w64.sum()  # one bin: |sum_n w_n (y_n - p_n)| / sum_n w_n
    got = [float(ecjax.ece(labels, lp, sample_weight=w)), float(E.binned_calibration_error(labels, lp, sample_weight=w))]
    np.testing.assert_allclose(got, ref, rtol=1e-6)
