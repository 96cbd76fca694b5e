"""compare's draw models behind one protocol (issue 32.3): each module's ``prepare`` gives a typed state and its
``draw(key, state, utilities, priors, *, num_draws)`` the ``(B, M, K, D)`` weights, checked against the Dirichlet
posterior means in closed form (numpy, float64), within their Monte Carlo errors."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import jax

from ecjax._src.prob.draw_models import clustered, joint, merged, occupied, per_draw, unpaired

KEY = jax.random.key(5)
DRAWS = 2000
PROTOCOL = ["key", "state", "utilities", "priors", "num_draws"]


def _data(seed=0, n=60, k=3, m=2):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    dec = np.stack([np.where(rng.random(n) < q, y, rng.integers(0, k, n)) for q in (0.7, 0.5)[:m]])
    return y, dec


def _counts(y, dec, k):
    return np.stack([np.histogram2d(y, d, bins=[k, k], range=[[0, k], [0, k]])[0] for d in dec])


def _within_errors(draws, expected):
    draws = np.asarray(draws, np.float64)
    error = draws.std(0) / np.sqrt(draws.shape[0])
    assert np.all(np.abs(draws.mean(0) - expected) <= 5 * error + 1e-6), np.max(np.abs(draws.mean(0) - expected))


@pytest.mark.parametrize("module", [unpaired, joint, clustered, merged])
def test_every_model_of_fixed_counts_draws_through_the_one_protocol(module):
    # The signature every draw loop relies on: a model is swapped without the loop asking which one it holds.
    assert list(inspect.signature(module.draw).parameters) == PROTOCOL
    assert hasattr(module, "prepare") or hasattr(module, "merge")


def test_the_models_without_dense_weights_name_their_parts():
    # Per-draw decisions split the draw in two (the doubt components reuse both); the occupied cells evaluate fused.
    assert list(inspect.signature(per_draw.decide).parameters)[:3] == ["state", "utilities", "log_priors"]
    assert list(inspect.signature(per_draw.draw_given).parameters)[:3] == ["key", "state", "counts"]
    assert list(inspect.signature(occupied.block_outputs).parameters)[:4] == ["key", "state", "draws", "centre"]


def test_unpaired_and_joint_draws_have_the_dirichlet_means():
    k, alpha = 3, 0.5
    y, dec = _data()
    n = _counts(y, dec, k)
    model = unpaired.prepare(n, alpha)
    w = model.draw(KEY, model.state, None, None, num_draws=DRAWS)
    assert w.shape == (DRAWS, 2, k, k)
    # R_m,i* ~ Dirichlet(n_m,i* + alpha): mean (n_ij + alpha) / (n_i* + D alpha).
    _within_errors(w, (n + alpha) / (n.sum(-1, keepdims=True) + k * alpha))
    model = joint.prepare(y, dec, alpha, k, k)
    w = model.draw(KEY, model.state, None, None, num_draws=DRAWS)
    # Each system's joint weights W_m ~ Dirichlet(n_m + alpha) over its K D cells (ecjax._src.prob.paired eq. 1).
    _within_errors(w, (n + alpha) / (len(y) + k * k * alpha))
    np.testing.assert_allclose(np.asarray(w, np.float64).sum((-2, -1)), 1.0, atol=1e-5)


def test_merged_cells_give_the_expected_yield_of_every_cell():
    # 0-1 utilities merge each row into correct / wrong; the yield of the merged draws has the every-cell mean
    # sum_ij U_ij (n_ij + alpha) / (n_i + D alpha).
    k, alpha = 3, 0.5
    y, dec = _data(1)
    n = _counts(y, dec, k)
    u = np.eye(k)
    model = merged.merge(unpaired.prepare(n, alpha), u, alpha)
    assert isinstance(model.state, merged.MergedState) and model.columns == 2
    w = np.asarray(model.draw(KEY, model.state, None, None, num_draws=DRAWS), np.float64)
    yields = np.einsum("ig,smig->smi", np.asarray(model.merged.utilities, np.float64), w).mean(-1)
    _within_errors(yields, np.einsum("ij,mij->mi", u, (n + alpha) / (n.sum(-1, keepdims=True) + k * alpha)).mean(-1))


def test_clustered_draws_are_joint_probabilities():
    k = 3
    y, dec = _data(2)
    model = clustered.prepare(y, dec, np.arange(len(y)) // 3, 0.1, k, k)
    assert model.mean_weights is None  # no closed form: the loop sums the draws
    w = np.asarray(model.draw(KEY, model.state, None, None, num_draws=500), np.float64)
    assert w.shape == (500, 2, k, k) and np.all(w >= 0)
    np.testing.assert_allclose(w.sum((-2, -1)), 1.0, atol=1e-5)
