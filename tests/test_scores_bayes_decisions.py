"""EC against the threshold of binary scores (``ecjax._src.scores.bayes_decisions``), against brute-force numpy
computations."""

import numpy as np
import pytest

import ecjax
from ecjax.scores import expected_cost_vs_threshold


def _data(n=500, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    llr = 1.5 * (2 * y - 1) + rng.normal(size=n)
    if ties:
        llr = np.round(llr, 1)
    return y, llr


@pytest.mark.parametrize("ties", [False, True])
def test_expected_cost_vs_threshold_brute_force(ties):
    y, llr = _data(ties=ties)
    c = np.array([[0.0, 1.0], [3.0, 0.0]])
    priors = np.array([0.7, 0.3])
    thr, ec = expected_cost_vs_threshold(y, llr, c, priors=priors, score_type="llr")
    assert np.all(np.diff(thr) > 0)
    for t, e in zip(thr[::7], ec[::7]):
        d = llr > t
        ref = priors[0] * np.mean(d[y == 0]) * 1.0 + priors[1] * np.mean(~d[y == 1]) * 3.0
        assert e == pytest.approx(ref, rel=1e-5, abs=1e-7)
    # Every distinct decision pattern appears once: one threshold per distinct score, plus the two extremes.
    assert len(thr) == len(np.unique(llr)) + 1
    best, best_thr = ecjax.optimal_threshold_expected_cost(y, llr, c, priors=priors, score_type="llr")
    assert float(best) == pytest.approx(ec.min(), rel=1e-6)
    nthr, nec = expected_cost_vs_threshold(y, llr, c, priors=priors, score_type="llr", normalize=True)
    np.testing.assert_allclose(nec, ec / min(priors[0] * 1.0, priors[1] * 3.0), rtol=1e-6)
    # Named results: the fields are the tuple's entries, and the best threshold attains the least EC.
    curve = expected_cost_vs_threshold(y, llr, c, priors=priors, score_type="llr")
    assert curve.thresholds is curve[0] and curve.expected_cost is curve[1]
    best_named = ecjax.optimal_threshold_expected_cost(y, llr, c, priors=priors, score_type="llr")
    assert float(best_named.expected_cost) == float(best)
    d = llr > float(best_named.threshold)
    ref = priors[0] * np.mean(d[y == 0]) * 1.0 + priors[1] * np.mean(~d[y == 1]) * 3.0
    assert float(best_named.expected_cost) == pytest.approx(ref, rel=1e-5)
