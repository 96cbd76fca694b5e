"""The one scalar check of the input layer (issue 32.7): ``ecjax._src.inputs.as_scalar`` with its options, and the
named checks that are its common cases.  References: the bounds written out by hand, and Python's own comparisons."""
import math

import numpy as np
import pytest

from ecjax import InputError
from ecjax._src import inputs as v


@pytest.mark.parametrize("value, options, message", [
    ("1", {}, "`x` must be a number, got '1'"),
    (True, {}, "`x` must be a number, got True"),
    (None, {}, "`x` must be a number, got None"),
    (np.ones(2), {}, "`x` must be a number"),
    (math.inf, {}, "`x` must be finite, got inf"),
    (1.0, {"low": 0, "high": 1, "strict": True}, r"`x` must be in \(0, 1\), got 1.0"),
    (1.5, {"low": 0, "high": 1}, r"`x` must be in \[0, 1\], got 1.5"),
    (0.0, {"low": 0, "strict": True}, "`x` must be a positive finite number, got 0.0"),
    (-1e-9, {"low": 0}, "`x` must be a non-negative finite number, got -1e-09"),
    (1.5, {"low": 2}, "`x` must be >= 2, got 1.5"),
    (3.0, {"high": 2, "strict": True}, "`x` must be < 2, got 3.0"),
    (2.0, {"integer": True}, "`x` must be an integer, got 2.0"),
    (np.True_, {"integer": True}, "`x` must be an integer, got "),
    (0, {"integer": True, "low": 1}, "`x` must be >= 1, got 0"),
    (2**40, {"integer": True, "high": 2**31 - 1}, f"`x` must be <= {2**31 - 1}, got {2**40}"),
    (3, {"integer": True, "low": 3, "strict": True}, "`x` must be > 3, got 3"),
])
def test_each_option_names_the_argument_and_the_bound(value, options, message):
    with pytest.raises(InputError, match=message):
        v.as_scalar(value, "x", **options)


def test_accepted_values_come_back_as_python_numbers():
    assert v.as_scalar(np.float32(0.5), "x", low=0, high=1, strict=True) == 0.5
    assert type(v.as_scalar(np.int64(7), "x", integer=True, low=1)) is int
    assert type(v.as_scalar(np.array(2.5), "x")) is float
    assert math.isnan(v.as_scalar(math.nan, "x", finite=False))
    assert v.as_scalar(0.0, "x", low=0) == 0.0 and v.as_scalar(1, "x", integer=True, low=1, high=1) == 1


def _accepted_by_hand(value, integer=False, low=None, high=None, strict=False, finite=True):
    """The contract written out with Python's own types and comparisons, independent of as_scalar."""
    if isinstance(value, (bool, np.bool_, str)) or value is None:
        return False
    if integer and not isinstance(value, (int, np.integer)):
        return False
    if not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    x = float(value)
    if finite and not math.isfinite(x):
        return False
    if math.isnan(x):
        return (low, high) == (None, None)
    above = low is None or (x > low if strict else x >= low)
    below = high is None or (x < high if strict else x <= high)
    return above and below


@pytest.mark.parametrize("options", [
    {}, {"finite": False}, {"low": 0.0, "high": 1.0, "strict": True}, {"low": 0.0, "strict": True}, {"low": 0.0},
    {"integer": True, "low": 1}, {"integer": True, "low": 2, "high": 3}, {"high": 0.5}, {"low": 0.0, "high": 0.5},
])
def test_the_options_accept_exactly_what_the_contract_says(options):
    for value in (-1, 0, 1, 2, 3, 0.5, -0.5, 1.0, math.inf, -math.inf, math.nan, "1", None, True, np.int32(3),
                  np.float64(0.25), np.float32(1.0)):
        try:
            got = v.as_scalar(value, "x", **options)
        except InputError as e:
            assert not _accepted_by_hand(value, **options), (value, str(e))
            assert e.argument == "x" and str(e).startswith("`x` must be ")  # the field a front end names
            continue
        assert _accepted_by_hand(value, **options), value
        assert type(got) is (int if options.get("integer") else float)
        assert got == value or (math.isnan(got) and math.isnan(value))


def test_traced_values_pass_only_when_asked():
    import jax
    import jax.numpy as jnp

    out = jax.jit(lambda z: v.as_scalar(z, "zero_division", finite=False, traced=True) + 0)(jnp.float32(2.0))
    assert float(out) == 2.0
    assert type(v.as_scalar(np.float32(0.5), "x", traced=True)) is float  # concrete values are checked as ever
    with pytest.raises(InputError, match="`x` must be a number"):  # without traced=True a tracer is refused
        jax.jit(lambda z: v.as_scalar(z, "x"))(jnp.float32(2.0))


def test_check_numbers_is_the_entrywise_form_with_the_same_bounds():
    # Each entry of an array checked by check_numbers as as_scalar checks it alone (finite reals).
    values = np.array([-1.0, 0.0, 0.25, 0.5, 1.0, 2.0])
    for options in ({"low": 0.0}, {"low": 0.0, "strict": True}, {"low": 0.0, "high": 1.0, "strict": True},
                    {"low": 0.0, "high": 1.0}, {"high": 0.5}):
        for x in values:
            alone = _accepted_by_hand(float(x), **options)
            try:
                v.check_numbers(np.array([0.25, x]), "a", **options)  # 0.25 passes every option set
                entrywise = True
            except InputError:
                entrywise = False
            assert entrywise == alone, (options, x)


def test_no_other_scalar_check_in_the_input_layer():
    # The named cases (as_real, as_number_between, as_positive_real, as_nonnegative_real, as_positive_int,
    # check_at_least, check_between, check_zero_division) are gone: as_scalar's options say each.
    for gone in ("as_real", "as_number_between", "as_positive_real", "as_nonnegative_real", "as_positive_int",
                 "check_at_least", "check_between", "check_zero_division"):
        assert not hasattr(v, gone), gone
