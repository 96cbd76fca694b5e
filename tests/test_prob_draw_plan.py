"""prob.MonteCarloSettings and the functions that take it (compare, compare_counts, bootstrap_metric).

References: a settings object changes how the draws are made, never the model, so a result must equal the one
obtained by an independent route: the same number of draws given directly, the draw-to-precision loop written out
by hand, the posterior names given as a mapping or positionally.
"""

import time

import numpy as np
import pytest

import jax

import ecjax
from ecjax import prob
from ecjax._src.prob import draw_plan

KEY = jax.random.key(9)
COUNTS = np.array([[[50, 10], [5, 35]], [[45, 15], [3, 37]]])


@pytest.mark.parametrize("kwargs, field", [
    (dict(num_draws=0), "num_draws"), (dict(num_draws=2.5), "num_draws"), (dict(chunk_size=-1), "chunk_size"),
    (dict(progress="yes"), "progress"), (dict(mc_error=0.0), "mc_error"), (dict(mc_error=0.6), "mc_error"),
    (dict(max_draws=0), "max_draws"), (dict(num_draws=5000, max_draws=1000, mc_error=0.01), "max_draws"),
])
def test_bad_settings_name_their_field(kwargs, field):
    with pytest.raises(ecjax.InputError, match=field):
        prob.MonteCarloSettings(**kwargs)


def test_settings_keep_checked_values_and_defer_the_default():
    s = prob.MonteCarloSettings(num_draws=np.int64(300), chunk_size=100)
    assert s.num_draws == 300 and type(s.num_draws) is int and s.draws(20_000) == 300
    assert prob.MonteCarloSettings().draws(20_000) == 20_000
    # max_draws only bounds an mc_error target: without one, more draws than the cap are fine.
    assert prob.MonteCarloSettings(num_draws=2_000_000).num_draws == 2_000_000
    with pytest.raises(AttributeError):
        s.num_draws = 10
    with pytest.raises(ecjax.InputError, match="`settings` must be an ecjax.prob.MonteCarloSettings"):
        prob.compare_counts(COUNTS, costs=prob.cost_ratio(1, 5), key=KEY, settings={"num_draws": 100})


def test_compare_counts_names_its_systems_by_a_mapping():
    settings = prob.MonteCarloSettings(num_draws=3000)
    named = prob.compare_counts({"left": COUNTS[0], "right": COUNTS[1]}, costs=prob.cost_ratio(1, 5), key=KEY,
                                settings=settings)
    plain = prob.compare_counts(COUNTS, costs=prob.cost_ratio(1, 5), key=KEY, settings=settings)
    assert named.systems == ("left", "right") and plain.systems == ("system 0", "system 1")
    np.testing.assert_array_equal(np.asarray(named.yields), np.asarray(plain.yields))
    with pytest.raises(ecjax.InputError, match="empty mapping"):
        prob.compare_counts({}, costs=prob.cost_ratio(1, 5), key=KEY)


def test_compare_counts_draws_to_a_precision_as_the_loop_by_hand():
    target = 0.004
    res = prob.compare_counts(COUNTS, costs=prob.cost_ratio(0.5, 20), key=KEY, decompose=False,
                              settings=prob.MonteCarloSettings(num_draws=500, mc_error=target))
    sizes = res.info["mc_error_runs"]
    assert res.info["mc_error_met"] and res.largest_probability_error() <= target
    assert sizes[0] == 500 and len(sizes) > 1 and res.num_draws == sizes[-1]
    # The result is one ordinary run of the last size, from the same key.
    again = prob.compare_counts(COUNTS, costs=prob.cost_ratio(0.5, 20), key=KEY, decompose=False,
                                settings=prob.MonteCarloSettings(num_draws=sizes[-1]))
    np.testing.assert_array_equal(np.asarray(res.yields), np.asarray(again.yields))
    np.testing.assert_array_equal(res.p_best, again.p_best)


class _Clock:
    """A ``progress`` reporter that records the library's estimate of the time left and when the draws end."""

    def __init__(self):
        self.estimate = self.estimated_at = self.closed_at = None

    def __call__(self, total):
        return self

    def update(self, n):
        pass

    def time_left(self, seconds):
        self.estimate, self.estimated_at = seconds, time.perf_counter()

    def close(self):
        self.closed_at = time.perf_counter()


def test_time_left_is_measured_on_the_machine_within_a_factor_two():
    # Issue 30.15 / 33.5: the estimate from constant rates was ~4x optimistic on an H100.  The library now times
    # its second block (the first compiles) and multiplies by the blocks left; here that prediction is checked
    # against the measured time from the estimate to the end of the draws, for fixed decisions (the per-draw
    # path, whose blocks make Bayes decisions, is timed the same way: tests/test_cli_metrics_table.py).
    rng = np.random.default_rng(2)
    n, k = 500, 10
    labels = rng.integers(0, k, n)
    dec = np.stack([np.where(rng.random(n) < acc, labels, rng.integers(0, k, n)) for acc in (0.7, 0.65, 0.6)])
    clock = _Clock()
    res = prob.compare(prob.Systems(labels, dec), costs=prob.intervals(0.5 * (1 - np.eye(k)), 2 * (1 - np.eye(k)),
                                                                       kind="cost"),
                       key=jax.random.key(0), decompose=False,
                       settings=prob.MonteCarloSettings(num_draws=8 * 13_000, progress=clock))
    blocks = -(-res.num_draws // res.info["draw_block"])
    assert blocks >= 6  # enough blocks after the timed one for the extrapolation to mean something
    measured = clock.closed_at - clock.estimated_at
    assert clock.estimate is not None and 0.5 * measured <= clock.estimate <= 2.0 * measured, (clock.estimate,
                                                                                               measured)


def test_block_seconds_left_counts_the_blocks_after_the_second():
    plan = draw_plan.plan_draws(10_000, 1 << 18)  # 16 draws a block: 625 blocks
    assert plan.num_blocks == 625
    assert draw_plan.block_seconds_left(0.01, plan) == pytest.approx(623 * 0.01)
    assert draw_plan.block_seconds_left(1.0, draw_plan.plan_draws(10, 1)) == 0.0
