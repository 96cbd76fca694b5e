"""The one scalar check of the input layer (issue 32.7): ``ecjax.inputs.as_scalar`` with its options, and the
named checks that are its common cases.  References: the bounds written out by hand, and Python's own comparisons."""
import math

import numpy as np
import pytest

from ecjax import InputError
from ecjax import inputs as v


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


@pytest.mark.parametrize("named, options", [
    (lambda x: v.as_real(x, "x"), {}),
    (lambda x: v.as_number_between(x, "x", 0.0, 1.0), {"low": 0.0, "high": 1.0, "strict": True}),
    (lambda x: v.as_positive_real(x, "x"), {"low": 0.0, "strict": True}),
    (lambda x: v.as_nonnegative_real(x, "x"), {"low": 0.0}),
    (lambda x: v.as_positive_int(x, "x"), {"integer": True, "low": 1}),
])
def test_the_named_checks_are_cases_of_the_one_check(named, options):
    # Same value or the same message as as_scalar with the options each name stands for, over a spread of inputs.
    for value in (-1, 0, 1, 2, 0.5, -0.5, 1.0, math.inf, math.nan, "1", None, True, np.int32(3), np.float64(0.25)):
        try:
            want = ("ok", v.as_scalar(value, "x", **options))
        except InputError as e:
            want = ("error", str(e))
        try:
            got = ("ok", named(value))
        except InputError as e:
            got = ("error", str(e))
        assert got == want or (got[0] == want[0] == "ok" and math.isnan(got[1]) and math.isnan(want[1])), value
