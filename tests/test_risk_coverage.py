"""Risk-coverage curves (``ecjax._src.scores.risk_coverage``) against a NumPy loop over the thresholds."""

import numpy as np
import pytest
from scipy.special import log_softmax

import jax

import ecjax
from conftest import load_dataset
from ecjax._src.scores.risk_coverage import risk_coverage_curve


def _loop(labels, log_post, w=None):
    """For each distinct confidence tau (descending): coverage, selective risk; AURC = sum of dcoverage * risk."""
    w = np.ones(len(labels)) if w is None else np.asarray(w, float)
    conf = np.max(log_post, -1)
    loss = (np.argmax(log_post, -1) != labels).astype(float)
    points, area, before = {}, 0.0, 0.0
    for tau in np.unique(conf)[::-1]:
        keep = conf >= tau
        coverage = w[keep].sum() / w.sum()
        risk = (w * loss)[keep].sum() / w[keep].sum() if w[keep].sum() > 0 else 0.0
        points[tau] = (coverage, risk)
        area += (coverage - before) * risk
        before = coverage
    return points, area, conf, loss


def _oracle_area(loss, w):
    area, before = 0.0, 0.0
    for value in np.unique(loss):  # the oracle's confidence -loss ties all correct and all wrong samples
        keep = loss <= value
        coverage = w[keep].sum() / w.sum()
        area += (coverage - before) * (w * loss)[keep].sum() / w[keep].sum()
        before = coverage
    return area


def _check(labels, log_post, w=None):
    log_post = np.asarray(log_post, np.float32)  # the loop sees the float32 confidences (and ties) ecjax sees
    res = risk_coverage_curve(labels, log_post, sample_weight=w)
    points, area, conf, loss = _loop(labels, log_post, w)
    thresholds = np.log(np.asarray(res.thresholds, np.float64))
    for t, c, r in zip(np.sort(conf)[::-1], np.asarray(res.coverage), np.asarray(res.risk)):
        np.testing.assert_allclose((c, r), points[t], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(thresholds, np.sort(conf)[::-1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(res.aurc), area, rtol=1e-5, atol=1e-7)
    weights = np.ones(len(labels)) if w is None else np.asarray(w, float)
    np.testing.assert_allclose(float(res.excess_aurc), area - _oracle_area(loss, weights), rtol=1e-4, atol=1e-6)
    return res


def _separated(log_post, gap=1e-4):
    """Indices of the samples whose top log posterior is more than ``gap`` from every other's: float32 rounding
    (ecjax renormalizes in float32) cannot tie or untie them, so the loop's ties are ecjax's."""
    conf = np.max(log_post, -1)
    order = np.argsort(conf)
    gaps = np.diff(conf[order])
    alone = np.r_[True, gaps > gap] & np.r_[gaps > gap, True]
    return np.sort(order[alone])


def test_matches_the_loop_on_real_outputs():
    targets, scores, _ = load_dataset("pneumoniamnist_resnet50")
    keep = _separated(log_softmax(scores.astype(np.float64), -1))
    _check(targets[keep], scores[keep])
    targets, scores, _ = load_dataset("cifar10_resnet-20")
    lp = log_softmax(scores.astype(np.float64), -1)[:2000]
    keep = _separated(lp)
    assert len(keep) > 300
    res = _check(targets[keep], lp[keep])
    # AURC without ties is the mean of the selective risks (Geifman et al. 2019)
    np.testing.assert_allclose(float(res.aurc), np.mean(np.asarray(res.risk, np.float64)), rtol=1e-5)


def test_ties_and_weights_match_the_loop():
    rng = np.random.default_rng(0)
    # many tied confidences: every row is one of six, so equal rows give bit-equal confidences
    templates = np.array([[0.5, 0.3, 0.2], [0.2, 0.45, 0.35], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8], [0.4, 0.35, 0.25],
                          [0.3, 0.65, 0.05]])
    p = templates[rng.integers(0, 6, 300)]
    labels = rng.integers(0, 3, 300)
    w = rng.integers(0, 4, 300).astype(float)
    _check(labels, np.log(p))
    res = _check(labels, np.log(p), w)
    repeated = risk_coverage_curve(np.repeat(labels, w.astype(int)), np.repeat(np.log(p), w.astype(int), axis=0))
    np.testing.assert_allclose(float(res.aurc), float(repeated.aurc), rtol=1e-5)


def test_batched_systems_and_jit():
    targets, scores, _ = load_dataset("sst2_gpt2")
    both = np.stack([scores, scores[:, ::-1]])
    res = risk_coverage_curve(targets, both)
    assert res.risk.shape == (2, len(targets)) and res.aurc.shape == (2,)
    np.testing.assert_allclose(res.aurc[1], risk_coverage_curve(targets, scores[:, ::-1]).aurc, rtol=1e-6)
    jitted = jax.jit(lambda s: risk_coverage_curve(targets, s).aurc)(both)
    np.testing.assert_allclose(jitted, res.aurc, rtol=1e-6)
    # full coverage: the error rate of the argmax
    np.testing.assert_allclose(res.risk[0, -1], np.mean(np.argmax(scores, -1) != targets), rtol=1e-6)


def test_bad_inputs_raise_input_error():
    with pytest.raises(ecjax.InputError, match="labels"):
        risk_coverage_curve([0, 5], np.log([[0.5, 0.5], [0.4, 0.6]]))
    with pytest.raises(ecjax.InputError, match="sample_weight"):
        risk_coverage_curve([0, 1], np.log([[0.5, 0.5], [0.4, 0.6]]), sample_weight=[1.0, -1.0])


def test_cli_metrics_curves_report_the_risk_coverage_curve(tmp_path):
    import json

    from conftest import run_cli

    targets, scores, _ = load_dataset("cifar10_resnet-20")
    lp = log_softmax(scores.astype(np.float64), -1)[:2000]
    keep = _separated(lp)
    np.save(tmp_path / "y.npy", targets[keep])
    np.save(tmp_path / "s.npy", lp[keep].astype(np.float32))
    code, out, err = run_cli("metrics", "--labels", "y.npy", "--scores", "s.npy", "--names", "R", "--curves", "--json",
                             cwd=tmp_path)
    assert code == 0, err
    rc = json.loads(out)["curves"]["R"]["risk_coverage"]
    points, area, _, _ = _loop(targets[keep], lp[keep].astype(np.float32))
    np.testing.assert_allclose(rc["aurc"], area, rtol=1e-5)
    # Each distinct confidence once, as the loop's points (the library's arrays hold one entry per sample).
    taus = sorted(points, reverse=True)
    assert len(rc["coverage"]) == len(taus)
    np.testing.assert_allclose(rc["coverage"], [points[t][0] for t in taus], rtol=1e-6)
    np.testing.assert_allclose(rc["risk"], [points[t][1] for t in taus], rtol=1e-5, atol=1e-7)


def test_invalid_traced_inputs_give_nan_under_jit():
    rng = np.random.default_rng(9)
    y = rng.integers(0, 3, 40)
    lp = np.log(rng.dirichlet([1, 1, 1], 40))
    bad_label = y.copy()
    bad_label[0] = 7
    assert np.isnan(jax.jit(lambda labels: risk_coverage_curve(labels, lp).aurc)(bad_label))
    bad_weight = np.ones(40)
    bad_weight[2] = -1.0
    out = jax.jit(lambda w: risk_coverage_curve(y, lp, sample_weight=w))(bad_weight)
    assert np.isnan(out.aurc) and np.isnan(out.excess_aurc)
    assert np.isfinite(jax.jit(lambda s: risk_coverage_curve(y, s).aurc)(lp))
