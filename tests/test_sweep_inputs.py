"""Bad input to the sweeps, the utility-space map, the ROC tangent criterion and the reliability study (the checks
of ``ecjax._src.sweep.inputs`` and of each entry point's own options): each raises ``InputError`` naming the argument.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax

from ecjax import InputError
from ecjax.sweep import (
    SweepSettings,
    grids,
    metric_reliability,
    roc_tangent_winners,
    sweep_counts,
    sweep_map,
    sweep_scores,
    utility_space_map,
)

COUNTS = np.array([[[80, 20], [10, 90]], [[95, 5], [30, 70]], [[60, 40], [3, 97]]])


def _ones(*shape):
    return np.ones(shape)


COSTS01 = np.array([[0.0, 1.0], [1.0, 0.0]])


@pytest.mark.parametrize(
    "call, match",
    [
        # empty grids
        (lambda: sweep_counts(COUNTS, np.zeros((0, 2, 2))), "costs"),
        (lambda: sweep_counts(COUNTS, COSTS01, priors=np.zeros((0, 2))), "priors"),
        (lambda: grids.values(np.zeros((0, 3))), "values"),
        (lambda: grids.linspace(0.0, 1.0, 0), "num"),
        (lambda: grids.simplex(3, 0), "resolution"),
        (lambda: sweep_scores([0, 1, 1], np.zeros((3, 2)), np.zeros((0, 2, 2)), score_type="logits"), "costs"),
        # NaN in a grid
        (lambda: sweep_counts(COUNTS, np.where(np.eye(2)[None] > 0, np.nan, 1.0).repeat(3, 0)), "costs"),
        (lambda: sweep_counts(COUNTS, utilities=np.full((4, 2, 2), np.nan)), "utilities"),
        (lambda: sweep_counts(COUNTS, COSTS01, priors=np.array([[0.5, 0.5], [np.nan, 0.5]])), "priors"),
        (lambda: grids.cost_ratios(np.nan, 10.0, 5), "cost_ratios"),
        (lambda: grids.linspace(0.0, np.inf, 5), "linspace"),
        (lambda: grids.values(np.array([1.0, np.nan])), "values"),
        # priors outside the simplex
        (lambda: sweep_counts(COUNTS, COSTS01, priors=[0.7, 0.7]), "priors"),
        (lambda: sweep_counts(COUNTS, COSTS01, priors=[1.5, -0.5]), "priors"),
        (lambda: sweep_counts(COUNTS, COSTS01, priors=np.array([[0.5, 0.5], [0.2, 0.2]])), "priors"),
        (lambda: sweep_scores([0, 1], np.array([0.1, 0.2]), COSTS01, priors=[0.2, 0.9], score_type="llr"), "priors"),
        (lambda: grids.effective_priors(0.0, 1.0, 5), "effective_priors"),
        (lambda: sweep_counts(COUNTS, COSTS01, priors=[0.2, 0.3, 0.5]), "priors"),
        # chunk size <= 0
        (lambda: sweep_counts(COUNTS, np.ones((3, 2, 2)), settings=SweepSettings(chunk_size=0)), "chunk_size"),
        (lambda: sweep_counts(COUNTS, np.ones((3, 2, 2)), settings=SweepSettings(chunk_size=-4)), "chunk_size"),
        (lambda: sweep_counts(COUNTS, np.ones((3, 2, 2)), settings=SweepSettings(chunk_size=2.5)), "chunk_size"),
        (lambda: sweep_scores([0, 1, 1], np.zeros((3, 2)), np.ones((2, 2, 2)), score_type="logits",
                              settings=SweepSettings(chunk_size=0)), "chunk_size"),
        (lambda: metric_reliability(jax.random.key(0), num_pairs=10, chunk_size=0), "chunk_size"),
        # more devices than exist
        (lambda: sweep_counts(COUNTS, np.ones((3, 2, 2)),
                              settings=SweepSettings(devices=len(jax.devices()) + 1)), "devices"),
        (lambda: sweep_counts(COUNTS, np.ones((3, 2, 2)), settings=SweepSettings(devices=0)), "devices"),
        (lambda: sweep_counts(COUNTS, np.ones((3, 2, 2)), settings=SweepSettings(devices=[])), "devices"),
        (lambda: sweep_counts(COUNTS, np.ones((3, 2, 2)), settings=SweepSettings(devices=["gpu:7"])), "devices"),
        (lambda: metric_reliability(jax.random.key(0), num_pairs=10, devices=99), "devices"),
        # the other sweep settings, refused when made; settings that are not a SweepSettings
        (lambda: SweepSettings(max_flips=0), "max_flips"),
        (lambda: SweepSettings(point_batch=1.5), "point_batch"),
        (lambda: sweep_counts(COUNTS, np.ones((3, 2, 2)), settings={"chunk_size": 4}),
         "`settings` must be an ecjax.sweep.SweepSettings, got dict"),
        # matrices
        (lambda: sweep_counts(COUNTS, COSTS01, utilities=COSTS01), "costs"),
        (lambda: sweep_counts(COUNTS), "costs"),
        (lambda: sweep_counts(COUNTS, np.ones((2, 3))), "costs"),
        (lambda: sweep_counts(COUNTS, utilities=np.ones((2, 2)), normalize=True), "normalize"),
        (lambda: sweep_counts(COUNTS, np.array([[0.0, 0.0], [1.0, 0.0]]), normalize=True), "NEC"),
        (lambda: sweep_counts(np.array([[5, 5], [0, 0]]), COSTS01, priors=[0.5, 0.5]), "class 1"),
        (lambda: sweep_counts(np.array([[5, 5], [0, 0]]), COSTS01, priors=grids.effective_priors(0.1, 0.9, 3)),
         "class 1"),
        # scores
        (lambda: sweep_scores([0, 1, 2], np.zeros((3, 3)), np.ones((3, 3)), method="threshold",
                              score_type="logits"), "threshold"),
        (lambda: sweep_scores([0, 1], np.array([0.1, 0.2]), COSTS01, score_type="llr"), "priors"),
        (lambda: sweep_scores([0, 1], np.array([0.1, 0.2]), COSTS01, method="fast", score_type="llr",
                              priors=[0.5, 0.5]), "method"),
        (lambda: sweep_scores([0, 1, 1], np.zeros((2, 3, 2)), COSTS01, score_type="logits",
                              decision_rule="best"), "decision_rule"),
        # axes and maps
        (lambda: grids.random(42, jax.random.key(0), 10), "sample"),
        (lambda: grids.random(lambda k, n: jax.numpy.zeros((n, 2, 2)), 0, 10), "key"),
        (lambda: grids.product(), "product"),
        (lambda: sweep_map(lambda p: p, np.ones(3)), "axis"),
        (lambda: utility_space_map(COUNTS, labels=[0, 1], scores=np.zeros((2, 2))), "counts"),
        (lambda: utility_space_map(), "counts"),
        (lambda: utility_space_map(COUNTS, resolution=1), "resolution"),
        (lambda: roc_tangent_winners([0, 1, 1], np.array([0.1, 0.2, 0.3]), np.array([[0.0, 1.0], [0.0, 1.0]]),
                                     score_type="llr"), "utilities"),
        # the reliability study
        (lambda: metric_reliability(jax.random.key(0), num_pairs=0), "num_pairs"),
        (lambda: metric_reliability(jax.random.key(0), num_pairs=10, utility_error_sd=-0.1), "utility_error_sd"),
        (lambda: metric_reliability(jax.random.key(0), num_pairs=10, utility_error_sd=np.nan), "utility_error_sd"),
        (lambda: metric_reliability(jax.random.key(0), num_pairs=10, utility_error_sd=[]), "utility_error_sd"),
        (lambda: metric_reliability(jax.random.key(0), num_pairs=10, utility_distribution="beta"),
         "utility_distribution"),
        (lambda: metric_reliability(jax.random.key(0), num_pairs=10,
                                    utility_distribution=lambda k, n: 2 * jax.numpy.ones((n, 2, 2))),
         "utility_distribution"),
        (lambda: metric_reliability(0, num_pairs=10), "key"),
        (lambda: metric_reliability(jax.random.key(0), num_pairs=10, costs={"accuracy": COSTS01}), "costs"),
        (lambda: metric_reliability(jax.random.key(0), num_pairs=10, costs={"c": np.ones((3, 3))}), "costs"),
    ],
)
def test_bad_input_raises_input_error_naming_the_argument(call, match):
    with pytest.raises(InputError, match=match):
        call()


# ------------------------------------------------- the validators the sweeps are canonicalized with

def test_as_range_gives_two_floats_and_refuses_each_bad_range():
    from ecjax._src.inputs import as_range

    assert as_range(1, np.float32(2.5), "linspace") == (1.0, 2.5)
    assert as_range(0, 0, "cost_ratios", minimum=0.0) == (0.0, 0.0)  # closed: lo = minimum is inside
    assert as_range(0.1, 0.9, "effective_priors", minimum=0.0, maximum=1.0, exclusive=True) == (0.1, 0.9)
    for args, kwargs, message in [
        (("a", 1), {}, r"`linspace` range must be two numbers, got \('a', 1\)"),
        ((np.nan, 1.0), {}, r"`linspace` range must be finite, got \(nan, 1.0\)"),
        ((2.0, 1.0), {}, r"`linspace` range must have lo <= hi, got \(2.0, 1.0\)"),
        ((-1.0, 1.0), {"minimum": 0.0}, r"`linspace` range must have lo >= 0, got \(-1.0, 1.0\)"),
        ((0.0, 1.0), {"minimum": 0.0, "exclusive": True, "why": " (log-spaced)"},
         r"`linspace` range must have lo > 0 \(log-spaced\), got \(0.0, 1.0\)"),
        ((0.5, 1.0), {"minimum": 0.0, "maximum": 1.0, "exclusive": True},
         r"`linspace` range must have lo > 0 and hi < 1, got \(0.5, 1.0\)"),
    ]:
        with pytest.raises(InputError, match=message):
            as_range(*args, "linspace", **kwargs)


def test_check_leading_axis_gives_the_shared_length():
    from ecjax._src.inputs import check_leading_axis

    assert check_leading_axis([np.zeros((3, 2)), np.zeros(3)], "values") == 3
    with pytest.raises(InputError, match="`values` is empty: its leading"):
        check_leading_axis([], "values")
    with pytest.raises(InputError, match="`values` is empty: its leading"):
        check_leading_axis([np.zeros((0, 2))], "values")
    with pytest.raises(InputError, match=r"all leaves of `values` must share the leading .* got lengths \[2, 3\]"):
        check_leading_axis([np.zeros(3), np.zeros(2)], "values")


def test_check_callable():
    from ecjax._src.inputs import check_callable

    assert check_callable(len, "sample", "a callable sample(key, n)") is len
    with pytest.raises(InputError, match=r"`sample` must be a callable sample\(key, n\), got int"):
        check_callable(42, "sample", "a callable sample(key, n)")


def test_grid_ranges_are_refused_by_as_range():
    with pytest.raises(InputError, match=r"`cost_ratios` range must have lo >= 0, got \(-1.0, 2.0\)"):
        grids.cost_ratios(-1.0, 2.0, 3, log=False)
    with pytest.raises(InputError, match=r"`cost_ratios` range must have lo > 0 \(log-spaced\)"):
        grids.cost_ratios(0.0, 2.0, 3)
    np.testing.assert_allclose(grids.cost_ratios(0.0, 2.0, 3, log=False).values()[:, 1, 0], [0.0, 1.0, 2.0])
    with pytest.raises(InputError, match=r"`linspace` range must have lo > 0 \(log-spaced\)"):
        grids.linspace(0.0, 1.0, 3, log=True)
    with pytest.raises(InputError, match=r"`effective_priors` range must have lo > 0 and hi < 1"):
        grids.effective_priors(0.2, 1.0, 3)
    with pytest.raises(InputError, match="`axes` must be an ecjax.sweep.grids.Axis, got int"):
        grids.product(grids.linspace(0.0, 1.0, 2), 3)
    with pytest.raises(InputError, match="all leaves of `values` must share"):
        grids.values({"a": np.zeros(3), "b": np.zeros(2)})


def test_resolve_devices_canonical_tuple_and_refusals():
    from ecjax._src.sweep.inputs import resolve_devices

    cpu = jax.devices()
    assert resolve_devices() == tuple(cpu)
    assert resolve_devices(1) == (cpu[0],)
    assert resolve_devices(iter(cpu[:1])) == (cpu[0],)
    for devices, message in [
        (len(cpu) + 1, f"`devices` asks for {len(cpu) + 1} devices but only {len(cpu)} are visible"),
        (0, "`devices` must be >= 1, got 0"),
        (True, "`devices` must be None, a positive int or a sequence of jax devices, got True"),
        (2.5, "`devices` must be None, a positive int or a sequence of jax devices, got 2.5"),
        ([], "`devices` is empty: at least one device is needed"),
        (["cpu:0"], "`devices` must hold devices from jax.devices\\(\\), got 'cpu:0'"),
    ]:
        with pytest.raises(InputError, match=message):
            resolve_devices(devices)


def test_check_correct_dominates():
    from ecjax._src.sweep.inputs import check_correct_dominates

    u = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [0.2, 0.3]]])
    assert check_correct_dominates(u, "utilities") is u
    for bad in ([[0.0, 1.0], [0.0, 1.0]], [[1.0, 0.0], [1.0, 0.5]]):
        with pytest.raises(InputError, match="`utilities` must value each correct decision at least as much as the "
                                             "wrong one; why"):
            check_correct_dominates(np.array(bad), "utilities", "; why")


def test_as_error_levels():
    from ecjax._src.sweep.inputs import as_error_levels

    sds, scalar = as_error_levels(0.1)
    assert scalar and sds.dtype == np.float64 and sds.tolist() == [0.1]
    sds, scalar = as_error_levels([0.0, 0.2])
    assert not scalar and sds.tolist() == [0.0, 0.2]
    for bad, message in [
        ([[0.1]], r"`utility_error_sd` must be \(E,\) \(a number or a 1-D sequence\), got shape \(1, 1\)"),
        ([], "`utility_error_sd` is empty"),
        (-0.1, r"`utility_error_sd` must be finite and >= 0, got -0.1 at entry \(0,\)"),
        ([0.1, np.inf], r"`utility_error_sd` must be finite and >= 0, got inf at entry \(1,\)"),
    ]:
        with pytest.raises(InputError, match=message):
            as_error_levels(bad)


def test_as_utility_distribution():
    import jax.numpy as jnp

    from ecjax._src.sweep.inputs import as_utility_distribution

    def good(key, n):
        return jnp.broadcast_to(jnp.array([[0.9, 0.1], [0.2, 0.8]]), (n, 2, 2))

    assert as_utility_distribution("gaussian") == "gaussian"
    assert as_utility_distribution(good) is good
    name = r"`utility_distribution\(key, 16\)`"
    for bad, message in [
        ("beta", r"`utility_distribution` must be one of \('uniform', 'gaussian'\), got 'beta'"),
        (lambda k, n: jnp.zeros((n, 3)), name + r" must be \(16, 2, 2\), got shape \(16, 3\)"),
        (lambda k, n: jnp.full((n, 2, 2), jnp.nan), name + " contains NaN"),
        (lambda k, n: 2 * good(k, n), name + r" must lie inside \[low, high\] at entry \(0, 0, 0\)"),
        (lambda k, n: good(k, n)[:, ::-1], name + " must value each correct decision at least as much"),
    ]:
        with pytest.raises(InputError, match=message):
            as_utility_distribution(bad)
