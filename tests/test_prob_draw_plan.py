"""prob.MonteCarloSettings and the functions that take it (compare, compare_counts, bootstrap_metric).

References: a settings object changes how the draws are made, never the model, so a result must equal the one
obtained by an independent route: the same number of draws given directly, the draw-to-precision loop written out
by hand, the posterior names given as a mapping or positionally.
"""

import numpy as np
import pytest

import jax

import ecjax
from ecjax import prob

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
