"""``score_type="probabilities"``: posteriors given as probabilities, in the library and at the command line.

References: scikit-learn's ``log_loss``, ``brier_score_loss`` and ``roc_auc_score`` on the probabilities
themselves, and float64 numpy Bayes decisions (argmin of ``p @ C``); every public score function must
give with probabilities what it gives with their logarithm as log-posteriors.

Cross-cutting on purpose: one input convention (read by ``ecjax.inputs``) checked through every public score
function (scores, decisions, calibration, ``prob``, sweeps) and the command line, so it has no single module.
"""

import json
import subprocess
import sys

import jax
import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

import ecjax
from ecjax import InputError, calibration, prob, sweep
from ecjax.sweep import grids

N, K = 400, 3
COSTS = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [5.0, 1.0, 0.0]])


def _probabilities(n=N, k=K, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = 2.0 * rng.normal(size=(n, k)) + 2.0 * np.eye(k)[y]
    p = np.exp(logits - logits.max(1, keepdims=True))
    return y, (p / p.sum(1, keepdims=True)).astype(dtype)


def test_cross_entropy_brier_and_auc_match_sklearn_on_the_probabilities():
    y, p = _probabilities()
    p64 = p.astype(np.float64)
    p64 /= p64.sum(1, keepdims=True)  # float32 rows sum to 1 within 1e-7; scikit-learn warns otherwise
    assert float(ecjax.cross_entropy(y, p, score_type="probabilities")) == pytest.approx(
        log_loss(y, p64, labels=range(K)), rel=1e-5)
    onehot = np.eye(K)[y]
    assert float(ecjax.brier(y, p, score_type="probabilities")) == pytest.approx(
        np.mean(np.sum((p64 - onehot) ** 2, 1)) / K, rel=1e-5)  # ecjax's Brier is per class (Ferrer 2022b)
    yb = (y == 2).astype(int)
    pb = np.stack([1 - p64[:, 2], p64[:, 2]], 1)
    assert float(ecjax.auc(yb, pb, score_type="probabilities")) == pytest.approx(roc_auc_score(yb, pb[:, 1]), abs=1e-6)
    assert float(ecjax.brier(yb, pb, score_type="probabilities")) == pytest.approx(
        brier_score_loss(yb, pb[:, 1]), rel=1e-5)


def test_bayes_decisions_match_float64_numpy():
    y, p = _probabilities(n=2000)
    expected = np.argmin(p.astype(np.float64) @ COSTS, axis=1)
    margin = np.sort(p.astype(np.float64) @ COSTS, axis=1)
    clear = margin[:, 1] - margin[:, 0] > 1e-5  # float32 inputs: only near-ties may differ
    got = np.asarray(ecjax.bayes_decisions(p, COSTS, score_type="probabilities"))
    np.testing.assert_array_equal(got[clear], expected[clear])


def _public_calls(y, cost):
    """Each call takes ``(scores, score_type)``; the binary ones read class 0 against the rest."""
    yb = (y == 0).astype(int)
    return {
        "log_posteriors": lambda s, t: ecjax.log_posteriors(s, score_type=t),
        "bayes_decisions": lambda s, t: ecjax.bayes_decisions(s, cost, score_type=t),
        "bayes_decisions_training_priors": lambda s, t: ecjax.bayes_decisions(
            s, cost, score_type=t, priors=[0.2, 0.3, 0.5], training_priors=[0.3, 0.3, 0.4]),
        "bayes_expected_cost": lambda s, t: ecjax.bayes_expected_cost(y, s, cost, score_type=t),
        "cross_entropy": lambda s, t: ecjax.cross_entropy(y, s, score_type=t, priors=[0.2, 0.3, 0.5]),
        "auc_one_vs_rest": lambda s, t: ecjax.auc_one_vs_rest(y, s, score_type=t),
        "calibration_fit": lambda s, t: calibration.fit(s, y, score_type=t).apply(s, score_type=t),
        "compare": lambda s, t: prob.compare(prob.Systems(y, scores=[s, s[::-1]], score_type=t), costs=cost,
                                             key=jax.random.key(1),
                                             settings=prob.MonteCarloSettings(num_draws=200)).p_best,
        "sweep_scores": lambda s, t: sweep.sweep_scores(y, s, grids.values(np.stack([cost, cost.T]), name="costs"),
                                                         score_type=t).values,
    }, {
        "roc_curve": lambda s, t: ecjax.roc_curve(yb, s, score_type=t),
        "eer": lambda s, t: ecjax.eer(yb, s, score_type=t),
        "optimal_threshold": lambda s, t: ecjax.optimal_threshold_expected_cost(yb, s, score_type=t),
        "cost_ratio_sweep": lambda s, t: sweep.sweep_scores(yb, s, grids.cost_ratios(0.1, 10, 7),
                                                             score_type=t).values,
    }


_MULTICLASS, _BINARY = _public_calls(np.zeros(1, int), COSTS)


@pytest.mark.parametrize("call", list(_MULTICLASS) + list(_BINARY))
def test_every_score_function_gives_with_probabilities_what_it_gives_with_their_log(call):
    y, p = _probabilities()
    multiclass, binary = _public_calls(y, COSTS)
    if call in binary:
        fn = binary[call]
        p = np.stack([1 - p[:, 0], p[:, 0]], 1)  # float32 rows summing to 1
    else:
        fn = multiclass[call]
    with_p, with_log = fn(p, "probabilities"), fn(np.log(p), "log_posteriors")
    parts = (lambda r: list(r) if isinstance(r, tuple) else [r])  # noqa: E731
    assert len(parts(with_p)) == len(parts(with_log))
    for a, b in zip(parts(with_p), parts(with_log)):
        np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                                   rtol=1e-6, atol=1e-6)


def test_exact_zeros_decide_and_score_as_the_limit():
    y, p = _probabilities(n=300)
    p[:100, 0] = 0.0  # underflowed softmax entries
    p /= p.sum(1, keepdims=True)
    p64 = p.astype(np.float64)
    p64 /= p64.sum(1, keepdims=True)
    got = np.asarray(ecjax.bayes_decisions(p, COSTS, score_type="probabilities"))
    ec = p64 @ COSTS
    clear = np.diff(np.sort(ec, 1)[:, :2], axis=1)[:, 0] > 1e-5
    np.testing.assert_array_equal(got[clear], np.argmin(ec, 1)[clear])
    # A zero on the true class: the cross-entropy is infinite, as -log 0 is.
    zero_true = np.nonzero((p[:, 0] == 0) & (y == 0))[0]
    assert zero_true.size
    assert np.isinf(float(ecjax.cross_entropy(y, p, score_type="probabilities")))
    # Zeros on other classes only: the cross-entropy of the rest, as scikit-learn's (which clips at 1e-16; no effect).
    keep = np.setdiff1d(np.arange(len(y)), zero_true)
    assert float(ecjax.cross_entropy(y[keep], p[keep], score_type="probabilities")) == pytest.approx(
        log_loss(y[keep], p64[keep], labels=range(K)), rel=1e-5)
    # Calibration stays finite (a zero becomes the log of float32's smallest normal number, -87.3).
    cal = calibration.fit(p, y, score_type="probabilities")
    assert np.all(np.isfinite(np.asarray(cal.apply(p, score_type="probabilities"))))


@pytest.mark.parametrize("bad, message", [
    (lambda p: p * 1.5, r"`scores` are probabilities .* must lie in \[0, 1\]"),
    (lambda p: np.where(p > 0.5, p - 0.2, p), r"`scores` rows must sum to 1"),
    (lambda p: np.log(p), r"must lie in \[0, 1\].*score_type='log_posteriors'"),
    (lambda p: np.where(np.arange(p.size).reshape(p.shape) == 4, np.nan, p), r"`scores` contains NaN"),
])
def test_bad_probabilities_are_refused_with_the_argument_named(bad, message):
    y, p = _probabilities(n=20)
    with pytest.raises(InputError, match=message):
        ecjax.cross_entropy(y, bad(p.astype(np.float64)), score_type="probabilities")
    with pytest.raises(InputError, match=message):
        ecjax.bayes_decisions(bad(p.astype(np.float64)), COSTS, score_type="probabilities")


def _cli(*args, cwd):
    proc = subprocess.run([sys.executable, "-m", "ecjax.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow  # ~17 s of CLI runs; the library's probabilities path is tested in the default lane above
def test_command_line_probabilities_give_the_log_posteriors_results(tmp_path, data_dir):
    folder = data_dir / "pneumoniamnist_resnet50"
    log_post = np.load(folder / "scores.npy").astype(np.float64)
    p = np.exp(log_post)
    p /= p.sum(1, keepdims=True)
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "lp.npy", np.log(p))
    y = np.load(folder / "targets.npy")
    common = ["metrics", "--labels", folder / "targets.npy", "--names", "resnet50", "--json"]
    with_p = _cli(*common, "--scores", tmp_path / "p.npy", "--score-type", "probabilities", cwd=tmp_path)
    with_log = _cli(*common, "--scores", tmp_path / "lp.npy", cwd=tmp_path)
    assert with_p["metrics"].keys() == with_log["metrics"].keys()
    for metric, values in with_log["metrics"].items():
        assert with_p["metrics"][metric] == pytest.approx(values, rel=1e-6), metric
    assert with_p["metrics"]["XE"]["resnet50"] == pytest.approx(log_loss(y, p), rel=1e-5)
