"""Bayes-risk curves (``ecjax._src.scores.bayes_decisions``), ECE and reliability bins
(``ecjax._src.scores.calibration_errors``; Ferrer (2022b) §4).

References, never ecjax itself: ``psrcal`` (ECE, ECEbin, in float64), ``llreval`` (Brümmer's PAV/ROCCH: minimum
and actual Bayes error rate), closed forms, and brute-force numpy computations written here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import expit

import ecjax
from ecjax import scores as S
from ecjax.scores import reliability_bins
from psrcal import losses as psr_losses
from llreval.bayes_error_rate import fast_Bayes_error_rate
from llreval.pav_rocch import PAV, ROCCH

from conftest import DATASETS, _gaussian_binary, _logpost64, load_dataset


# ---------------------------------------------------------- Bayes-risk curves

def test_bayes_risk_curve_against_llreval_and_brute_force():
    rng = np.random.default_rng(6)
    y, llr = _gaussian_binary(rng, 1500, p1=0.4)
    llr = 0.7 * llr - 0.4  # miscalibrated on purpose: actual > minimum
    plo = np.linspace(-4, 4, 41)
    curve = S.bayes_risk_curve(y, llr, prior_log_odds=plo, normalize=False)
    ref_act = fast_Bayes_error_rate(llr, y, plo)
    ref_min = ROCCH(PAV(llr, y)).Bayes_error_rate(plo)
    np.testing.assert_allclose(np.asarray(curve.actual), ref_act, atol=1e-6)
    np.testing.assert_allclose(np.asarray(curve.minimum), ref_min, atol=1e-6)
    np.testing.assert_allclose(np.asarray(curve.naive), np.minimum(expit(plo), expit(-plo)), atol=1e-7)
    # Brute-force threshold search for the minimum, normalized.
    cuts = np.concatenate([[-np.inf], np.sort(llr)])
    miss = np.array([np.mean(llr[y == 1] <= t) for t in cuts])
    fa = np.array([np.mean(llr[y == 0] > t) for t in cuts])
    pi = expit(plo)[:, None]
    brute = (pi * miss + (1 - pi) * fa).min(1) / np.minimum(expit(plo), expit(-plo))
    normed = S.bayes_risk_curve(y, llr, prior_log_odds=plo)
    np.testing.assert_allclose(np.asarray(normed.minimum), brute, atol=1e-5)
    assert np.all(np.asarray(normed.actual) >= np.asarray(normed.minimum) - 1e-6)


def test_bayes_risk_curve_agrees_with_core_ec_functions():
    rng = np.random.default_rng(7)
    y, llr = _gaussian_binary(rng, 600, p1=0.5)
    for theta in (-1.5, 0.0, 2.0):
        pi = expit(theta)
        curve = S.bayes_risk_curve(y, llr, prior_log_odds=[theta], normalize=False)
        # Independent numpy Bayes decisions at the Bayes threshold -theta (Ferrer 2022b, eq. 48).
        dec = llr > -theta
        ref = pi * np.mean(~dec[y == 1]) + (1 - pi) * np.mean(dec[y == 0])
        np.testing.assert_allclose(float(curve.actual[0]), ref, atol=1e-6)
        ec_min, _ = S.optimal_threshold_expected_cost(y, llr, 1 - np.eye(2), priors=[1 - pi, pi], score_type="llr")
        np.testing.assert_allclose(float(curve.minimum[0]), float(ec_min), atol=1e-6)


def test_bayes_risk_curve_from_posteriors_removes_priors():
    rng = np.random.default_rng(8)
    y, llr = _gaussian_binary(rng, 500, p1=0.25)
    p1 = y.mean()
    logit = llr + np.log(p1 / (1 - p1))
    lp = np.stack([-np.logaddexp(0, logit), -np.logaddexp(0, -logit)], 1)
    a = S.bayes_risk_curve(y, lp, score_type="log_posteriors")
    b = S.bayes_risk_curve(y, llr)
    np.testing.assert_allclose(np.asarray(a.actual), np.asarray(b.actual), atol=1e-5)
    np.testing.assert_allclose(np.asarray(a.minimum), np.asarray(b.minimum), atol=1e-5)


# ------------------------------------------------------------------------ ECE

@pytest.mark.parametrize("name", sorted(DATASETS))
def test_ece_matches_psrcal(name):
    labels, scores, score_type = load_dataset(name)
    lp = _logpost64(scores, score_type)
    t = torch.tensor(lp)
    y = torch.tensor(labels.astype(np.int64))
    for m in (10, 15):
        ref_top = float(psr_losses.ECE(t, y, M=m)) / 100  # psrcal returns percentages
        got = float(S.ece(labels, scores, num_bins=m, variant="top_label", score_type=score_type))
        np.testing.assert_allclose(got, ref_top, atol=1e-6)
        if lp.shape[1] == 2:
            ref_bin = float(psr_losses.ECEbin(t, y, M=m)) / 100
            np.testing.assert_allclose(float(S.ece(labels, scores, num_bins=m, score_type=score_type)), ref_bin, atol=1e-6)


def _numpy_equal_mass_ece(conf, hit, m):
    """Independent equal-mass ECE: np.array_split of the sorted confidences, ties kept together."""
    order = np.argsort(conf, kind="stable")
    c, h = conf[order], hit[order]
    upper = np.array([part[-1] if len(part) else -np.inf for part in np.array_split(c, m)])
    upper[-1] = np.inf
    idx = np.searchsorted(upper, c, side="left")
    total = 0.0
    for b in range(m):
        sel = idx == b
        total += abs(np.sum(h[sel]) - np.sum(c[sel]))
    return total / len(c)


def _boundary_slack(conf, hit, m):
    """How far the equal-mass ECE can move when float32 rounding moves samples across bin edges.

    A sample within float32 resolution of an edge of the float64 bins can land
    in either bin (and which one depends on the backend's last bit of exp);
    moving it changes the ECE by at most ``2 |hit - conf| / N``.
    """
    edges = np.array([part[-1] for part in np.array_split(np.sort(conf), m)])[:-1]
    near = np.abs(conf[:, None] - edges[None]) <= 4 * np.finfo(np.float32).eps * np.maximum(conf[:, None], 1e-30)
    return 2 * np.abs(hit - conf)[near.any(1)].sum() / len(conf)


def test_ece_equal_mass_matches_numpy():
    labels, scores, score_type = load_dataset("cifar10_resnet-20")
    lp = _logpost64(scores, score_type)
    conf, hit = np.exp(lp.max(1)), (lp.argmax(1) == labels).astype(float)
    got = float(S.ece(labels, scores, binning="equal_mass", num_bins=15, score_type=score_type))
    np.testing.assert_allclose(got, _numpy_equal_mass_ece(conf, hit, 15), atol=1e-6 + _boundary_slack(conf, hit, 15))
    labels, scores, score_type = load_dataset("sst2_gpt2")
    lp = _logpost64(scores, score_type)
    conf, hit = np.exp(lp[:, 1]), labels.astype(float)
    got = float(S.ece(labels, scores, binning="equal_mass", num_bins=7, score_type=score_type))
    np.testing.assert_allclose(got, _numpy_equal_mass_ece(conf, hit, 7), atol=1e-6 + _boundary_slack(conf, hit, 7))


def test_ece_of_perfectly_binned_scores_is_zero():
    # Scores whose class-1 frequency in each bin equals the posterior: ECE = 0 by eq. 62.
    post = np.repeat([0.2, 0.5, 0.8], 10)
    labels = np.concatenate([[1] * 2 + [0] * 8, [1] * 5 + [0] * 5, [1] * 8 + [0] * 2])
    lp = np.log(np.stack([1 - post, post], 1))
    assert float(S.ece(labels, lp)) == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("binning", ["equal_width", "equal_mass"])
def test_reliability_bins_recompose_ece(binning):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(800, 4)) * 2
    y = np.array([rng.choice(4, p=np.exp(l) / np.exp(l).sum()) for l in logits * 0.5])
    bins = reliability_bins(y, logits, score_type="logits", num_bins=10, binning=binning)
    assert bins.count.sum() == len(y)
    ece = float(ecjax.ece(y, logits, score_type="logits", num_bins=10, binning=binning))
    keep = bins.count > 0
    assert np.sum(bins.count[keep] / len(y) * np.abs(bins.frequency[keep] - bins.confidence[keep])) == pytest.approx(
        ece, rel=1e-5)
    if binning == "equal_width":
        # Independent top-label binning: bins (m/M, (m+1)/M], the first also holding 0.
        p = np.exp(logits - np.logaddexp.reduce(logits, axis=1, keepdims=True))
        conf, hit = p.max(1), (p.argmax(1) == y)
        idx = np.clip(np.ceil(conf * 10).astype(int) - 1, 0, 9)
        for m in range(10):
            sel = idx == m
            assert bins.count[m] == sel.sum()
            if sel.any():
                assert bins.confidence[m] == pytest.approx(conf[sel].mean(), rel=1e-5)
                assert bins.frequency[m] == pytest.approx(hit[sel].mean(), rel=1e-6)


@pytest.mark.parametrize("compensated", [True, False])
def test_bin_sums_against_numpy(compensated):
    # The one kernel behind ece, reliability_bins, the binned calibration errors and the bootstrap's ECE: every
    # weighted bin sum against a float64 numpy loop over the equal-width bins (m/M, (m+1)/M].
    import jax.numpy as jnp

    rng = np.random.default_rng(3)
    conf = rng.uniform(size=500)
    hit = (rng.uniform(size=500) < conf).astype(float)
    w = rng.gamma(1.0, size=500)
    got = S.bin_sums(jnp.asarray(conf, jnp.float32), jnp.asarray(hit, jnp.float32), jnp.asarray(w, jnp.float32),
                     num_bins=7, binning="equal_width", compensated=compensated)
    idx = np.clip(np.ceil(conf * 7).astype(int) - 1, 0, 6)
    for name, per_sample in [("weight", w), ("confidence", w * conf), ("hit", w * hit), ("gap", w * (hit - conf)),
                             ("squared_gap", w * (hit - conf) ** 2)]:
        np.testing.assert_allclose(np.asarray(getattr(got, name)), np.bincount(idx, per_sample, minlength=7),
                                   rtol=1e-5, atol=1e-5, err_msg=name)


def test_bootstrap_ece_plugin_is_the_public_ece():
    # The bootstrap's plug-in ECE with weights w is ecjax.ece(..., sample_weight=w), binary and top-label.
    from ecjax import prob

    rng = np.random.default_rng(4)
    for k in (2, 4):
        logits = rng.normal(size=(300, k)) * 2
        y = rng.integers(0, k, 300)
        w = rng.gamma(2.0, size=300)
        lp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        got = float(prob.weighted_metric(y, lp, w, "ece_plugin"))
        assert got == pytest.approx(float(S.ece(y, lp, sample_weight=w)), rel=1e-5)
