"""Bad input to the sweeps, the utility-space map, the ROC tangent criterion and the reliability study (the checks
of ``ecjax.sweep.inputs`` and of each entry point's own options): each raises ``InputError`` naming the argument.
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
