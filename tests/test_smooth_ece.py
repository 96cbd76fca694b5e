"""The smooth ECE (``ecjax._src.scores.smooth_calibration_error``, Błasiok & Nakkiran 2024).

References: the authors' ``relplot`` 1.0.3 (``smECE``, ``smECE_sigma``,
``multiclass_logits_to_confidences``), and the definition computed directly
in float64 NumPy: the exact reflected-Gaussian kernel sums over every
sample (no grid for the samples), integrated by the trapezoid rule on a fine
mesh.
"""

import numpy as np
import pytest
from scipy.special import log_softmax
from scipy.stats import norm

import jax

import ecjax
from conftest import load_dataset
from ecjax._src.scores.smooth_calibration_error import BISECTION_STEPS, smooth_ece

relplot = pytest.importorskip("relplot")

STEP = 2.0 ** -BISECTION_STEPS  # the bisection's resolution of the bandwidth


def _synthetic(seed, n=1000, bend=1.3):
    rng = np.random.default_rng(seed)
    f = rng.beta(2, 1, n)
    y = (rng.uniform(size=n) < f ** bend).astype(int)
    return f, y, np.log(np.stack([1 - f, f], -1))


def _direct_smooth_ece(f, y, sigma, w=None, mesh=4001):
    """int |sum_i w_i K(t, f_i) (f_i - y_i)| dt / int sum_i w_i K(t, f_i) dt, K with the images f, -f, 2 - f."""
    w = np.ones_like(f) if w is None else w
    t = np.linspace(0, 1, mesh)
    k = sum(norm.pdf(t[:, None] - image[None, :], scale=sigma) for image in (f, -f, 2 - f))
    return np.trapezoid(np.abs(k @ (w * (f - y))), t) / np.trapezoid(k @ w, t)


@pytest.mark.parametrize("sigma", [0.02, 0.05, 0.2])
def test_fixed_bandwidth_matches_the_definition_and_relplot(sigma):
    f, y, lp = _synthetic(0)
    ours = float(smooth_ece(y, lp, bandwidth=sigma).ece)
    np.testing.assert_allclose(ours, _direct_smooth_ece(f, y, sigma), rtol=1e-4)
    # relplot integrates on a 200-point mesh of interpolated grid values: ~1e-4 away
    np.testing.assert_allclose(ours, relplot.smECE_sigma(f, y, sigma), atol=5e-4)


@pytest.mark.parametrize("seed, bend", [(1, 1.0), (2, 1.3), (3, 2.5)])
def test_fixed_point_matches_relplot_on_synthetic_data(seed, bend):
    f, y, lp = _synthetic(seed, bend=bend)
    res = smooth_ece(y, lp)
    ref, ref_sigma = relplot.smECE(f, y, return_width=True)
    # Both bisections end on the grid of STEP; rounding near the fixed point may move one of them by one step.
    assert abs(float(res.bandwidth[0]) - ref_sigma) <= STEP + 1e-9
    assert abs(float(res.ece) - ref) <= STEP
    # the fixed point: smECE_sigma* = sigma*, to within the last step
    assert -STEP <= float(res.bandwidth[0]) - float(res.ece) <= STEP


@pytest.mark.parametrize("name", ["sst2_gpt2", "sst2_gpt2_4shot"])
def test_top_label_matches_relplot_on_real_outputs(name):
    targets, scores, _ = load_dataset(name)
    lp = log_softmax(scores, -1)
    res = smooth_ece(targets, lp, variant="top_label")
    f, hit = relplot.multiclass_logits_to_confidences(lp, targets)
    assert np.all(f < 1 - 1e-3)  # no confidence on relplot's edge grid point (see the next test)
    ref, ref_sigma = relplot.smECE(f, hit, return_width=True)
    assert abs(float(res.bandwidth[0]) - ref_sigma) <= STEP + 1e-9
    assert abs(float(res.ece) - ref) <= STEP


@pytest.mark.parametrize("name", ["cifar10_resnet-20", "pneumoniamnist_resnet50"])
def test_saturated_real_confidences_follow_the_definition(name):
    # A quarter of these confidences are 1 in float32.  relplot's grid drops the mirror image of its edge point,
    # so such a sample keeps half its kernel mass there (it gives 0.098 for the pneumonia ResNet, against the
    # definition's 0.076); the definition keeps the whole, like the reflected kernel.
    targets, scores, _ = load_dataset(name)
    lp = log_softmax(scores, -1)[::len(targets) // 600][:600]
    targets = targets[::len(targets) // 600][:600]
    f, hit = relplot.multiclass_logits_to_confidences(lp, targets)
    assert np.mean(np.float32(f) == 1) > 0.02
    np.testing.assert_allclose(float(smooth_ece(targets, lp, variant="top_label", bandwidth=0.1).ece),
                               _direct_smooth_ece(f, hit, 0.1), rtol=1e-4)
    res = smooth_ece(targets, lp, variant="top_label")
    sigma = float(res.bandwidth[0])
    assert -STEP <= sigma - float(res.ece) <= STEP  # the fixed point
    np.testing.assert_allclose(float(res.ece), _direct_smooth_ece(f, hit, sigma), rtol=1e-4)


def test_a_confidence_of_one_keeps_its_whole_kernel_mass():
    # Two samples at f = 1 (one hit, one miss) and one at 0.3 (a miss): the closed form of the definition, with
    # r(t) = 2 phi(1 - t) * 0 + ... computed by the direct sum.
    f = np.array([1.0, 1.0, 0.3])
    y = np.array([1.0, 0.0, 0.0])
    lp = np.log(np.stack([1 - f, f], -1).clip(1e-300))
    np.testing.assert_allclose(float(smooth_ece(y.astype(int), lp, bandwidth=0.1).ece),
                               _direct_smooth_ece(f, y, 0.1), rtol=1e-4)


def test_classwise_is_the_mean_of_each_class_against_its_indicator():
    targets, scores, _ = load_dataset("pneumoniamnist_resnet50")
    lp = log_softmax(scores, -1)
    res = smooth_ece(targets, lp, variant="classwise", bandwidth=0.05)
    per_class = [_direct_smooth_ece(np.exp(lp[:, k]), (targets == k).astype(float), 0.05) for k in range(2)]
    np.testing.assert_allclose(float(res.ece), np.mean(per_class), rtol=1e-4)


def test_curve_and_density_are_the_kernel_regression_and_density():
    f, y, lp = _synthetic(4, n=500)
    res = smooth_ece(y, lp, bandwidth=0.1)
    t = np.asarray(res.grid)
    k = sum(norm.pdf(t[:, None] - image[None, :], scale=0.1) for image in (f, -f, 2 - f))
    np.testing.assert_allclose(res.curve[0], k @ y / k.sum(1), atol=2e-4)
    np.testing.assert_allclose(res.density[0], k.sum(1) / np.trapezoid(k.sum(1), t), rtol=2e-3)


def test_integer_weights_are_repetitions_and_systems_are_batched():
    f, y, lp = _synthetic(5, n=300)
    w = np.random.default_rng(5).integers(0, 4, 300)
    weighted = smooth_ece(y, lp, sample_weight=w)
    repeated = smooth_ece(np.repeat(y, w), np.repeat(lp, w, axis=0))
    np.testing.assert_allclose(weighted.ece, repeated.ece, rtol=1e-4)
    np.testing.assert_allclose(weighted.bandwidth, repeated.bandwidth)
    np.testing.assert_allclose(float(smooth_ece(y, lp, sample_weight=w, bandwidth=0.05).ece),
                               _direct_smooth_ece(f, y, 0.05, w=w.astype(float)), rtol=1e-4)
    both = smooth_ece(y, np.stack([lp, lp[:, ::-1]]))
    assert both.ece.shape == (2,)
    np.testing.assert_allclose(both.ece[1], smooth_ece(y, lp[:, ::-1]).ece, rtol=1e-6)
    jitted = jax.jit(lambda s: smooth_ece(y, s).ece)(lp)
    np.testing.assert_allclose(jitted, smooth_ece(y, lp).ece, rtol=1e-6)


@pytest.mark.parametrize("kwargs, match", [
    ({"bandwidth": 0.0}, "bandwidth"),
    ({"bandwidth": float("nan")}, "bandwidth"),
    ({"grid_size": 2}, "grid_size"),
    ({"variant": "nope"}, "variant"),
])
def test_bad_arguments_raise_input_error(kwargs, match):
    _, y, lp = _synthetic(6, n=20)
    with pytest.raises(ecjax.InputError, match=match):
        smooth_ece(y, lp, **kwargs)


# ~3 s on an idle two-core machine: five cross-validated fits and two smooth ECEs of 1,821 samples through the
# command line; the library's smooth ECE is checked against relplot in the default lane.
@pytest.mark.slow
def test_cli_calibrate_reports_the_smooth_ece_before_and_after(tmp_path):
    import json

    from conftest import run_cli

    targets, scores, _ = load_dataset("sst2_gpt2")
    np.save(tmp_path / "y.npy", targets)
    np.save(tmp_path / "s.npy", scores)
    code, out, err = run_cli("calibrate", "--scores", "s.npy", "--labels", "y.npy", "--cv", "5", "--output",
                             "cal.npy", "--calibration-errors", "--json", cwd=tmp_path)
    assert code == 0, err
    rec = json.loads(out)
    smooth = rec["calibration_errors"]["smooth ECE"]
    for side, lp in (("before", log_softmax(scores.astype(np.float64), -1)), ("after", np.load(tmp_path / "cal.npy"))):
        f = np.exp(np.asarray(lp, np.float64)[:, 1])
        # relplot's edge artifact (see above) touches only confidences within 1e-3 of 0 or 1: under 1% of these
        assert np.mean((f > 1 - 1e-3) | (f < 1e-3)) < 0.01
        assert abs(smooth[side] - relplot.smECE(f, targets.astype(float))) <= STEP
    assert smooth["after"] < smooth["before"]
    assert rec["cross_entropy"]["refinement"] == rec["cross_entropy"]["after"]


def test_invalid_traced_inputs_give_nan_under_jit():
    _, y, lp = _synthetic(7, n=50)
    bad_label = np.array(y)
    bad_label[3] = 5  # K = 2
    assert np.isnan(jax.jit(lambda labels: smooth_ece(labels, lp).ece)(bad_label))
    bad_score = np.array(lp)
    bad_score[4, 0] = np.nan
    assert np.isnan(jax.jit(lambda s: smooth_ece(y, s).ece)(bad_score))
    assert np.isfinite(jax.jit(lambda s: smooth_ece(y, s).ece)(lp))


def test_cli_calibrate_writes_smooth_reliability_diagrams(tmp_path):
    import json

    from conftest import run_cli

    targets, scores, _ = load_dataset("sst2_gpt2")
    np.save(tmp_path / "y.npy", targets[:400])
    np.save(tmp_path / "s.npy", scores[:400])
    code, out, err = run_cli("calibrate", "--scores", "s.npy", "--labels", "y.npy", "--output", "cal.npy",
                             "--calibration-errors", "--out", "figs", "--json", cwd=tmp_path)
    assert code == 0, err
    rec = json.loads(out)
    for side in ("before", "after"):
        assert (tmp_path / "figs" / f"smooth_reliability_{side}.png").stat().st_size > 1000
    f = np.exp(log_softmax(scores[:400].astype(np.float64), -1)[:, 1])
    ref = relplot.smECE(f, targets[:400].astype(float))
    assert abs(rec["calibration_errors"]["smooth ECE"]["before"] - ref) <= STEP
