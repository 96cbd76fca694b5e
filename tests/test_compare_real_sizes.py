"""prob.compare at real sizes (issue 33): merged cells of equal utility, adaptive draw counts.

References: the Dirichlet over every joint cell written out in numpy (the
aggregation property), the unmerged draws of the same model (two samples of
one distribution: their means, spreads and Kolmogorov-Smirnov distance), and
fixed-size runs of the same comparison (within their Monte Carlo errors).
"""

import itertools

import numpy as np
import pytest
from scipy import stats

import jax

from ecjax import prob
from ecjax._src.prob import adaptive_draws, aggregation

from ecjax._src.prob.draw_models import merged as merged_model

KEY = jax.random.key(11)


def _systems(k, n, accuracies, rng, paired):
    """Labels and decisions: each system right with its accuracy, else a uniform wrong-or-right class."""
    y = rng.integers(0, k, n)
    labels = [y if paired else rng.permutation(y) for _ in accuracies]
    decisions = [np.where(rng.random(n) < a, lab, rng.integers(0, k, n)) for a, lab in zip(accuracies, labels)]
    return prob.Systems(labels[0] if paired else labels, np.stack(decisions), paired=paired)


# ------------------------------------------------------------------ the aggregation property, by hand

def test_utility_groups_and_group_sums_match_a_direct_computation():
    u = np.array([[1.0, 0.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0], [3.0, 1.0, 3.0, 1.0]])
    groups = aggregation.utility_groups(u)
    counts = np.random.default_rng(0).integers(0, 9, (2, 3, 4))
    summed = aggregation.aggregate_counts(counts, groups)
    for i in range(3):
        values = np.unique(u[i])
        assert np.array_equal(groups.utilities[i, :len(values)], values)
        for g, value in enumerate(values):
            assert groups.sizes[i, g] == np.sum(u[i] == value)
            assert np.array_equal(summed[:, i, g], counts[:, i, u[i] == value].sum(-1))
        assert np.all(groups.sizes[i, len(values):] == 0) and np.all(summed[:, i, len(values):] == 0)


def test_merged_joint_concentrations_are_sums_over_every_joint_cell():
    # Every one of the K D^M joint cells with a_J + n_c, summed by (class, utility group of each system).
    rng = np.random.default_rng(1)
    k, d, m, a_joint = 3, 4, 3, 0.07
    u = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 5.0], [0.0, 0.0, 1.0, 0.0]])
    groups = aggregation.utility_groups(u)
    cells = np.unique(np.c_[rng.integers(0, k, 40), rng.integers(0, d, (40, m))], axis=0)
    counts = rng.integers(1, 6, len(cells)).astype(float)
    full = {c: a_joint for c in itertools.product(range(k), *[range(d)] * m)}
    for c, n in zip(map(tuple, cells), counts):
        full[c] += n
    g = groups.num_groups
    expected = np.zeros((k,) + (g,) * m)
    for c, value in full.items():
        expected[(c[0],) + tuple(int(np.flatnonzero(groups.utilities[c[0]] == u[c[0], j])[0]) for j in c[1:])] += value
    got = aggregation.joint_concentration(cells, counts, groups, a_joint)
    np.testing.assert_allclose(got, expected.ravel(), rtol=1e-12)


# ------------------------------------------------------------------ merged and unmerged draws: one distribution

def _both(monkeypatch, systems, **kwargs):
    merged = prob.compare(systems, key=KEY, **kwargs)
    monkeypatch.setattr(merged_model, "_MERGE_CELLS", False)
    unmerged = prob.compare(systems, key=jax.random.key(12), **kwargs)
    return merged, unmerged


def _same_distribution(a, b):
    """Yield, EC and NEC draws of two runs: equal means within their errors, spreads within 10 %, KS p > 1e-4."""
    for name in ("yields", "expected_costs", "normalized_expected_costs"):
        x, y = np.asarray(getattr(a, name), np.float64), np.asarray(getattr(b, name), np.float64)
        error = np.sqrt(x.var(0) / len(x) + y.var(0) / len(y))
        assert np.all(np.abs(x.mean(0) - y.mean(0)) < 5 * error), name
        np.testing.assert_allclose(x.std(0), y.std(0), rtol=0.1, err_msg=name)
        for j in range(x.shape[1]):
            assert stats.ks_2samp(x[:, j], y[:, j]).pvalue > 1e-4, (name, j)
    error = np.sqrt(np.asarray(a.errors["p_best"]) ** 2 + np.asarray(b.errors["p_best"]) ** 2)
    assert np.all(np.abs(np.asarray(a.p_best) - np.asarray(b.p_best)) <= 5 * error + 1e-3)
    np.testing.assert_allclose(a.expected_yield, b.expected_yield, rtol=1e-12)  # closed form: the same counts


@pytest.mark.parametrize("paired", [False, True])
def test_merged_cells_draw_the_same_posterior_as_every_cell(monkeypatch, paired):
    # 0-1 costs over 6 classes: 2 groups per class (right, wrong) instead of 6 decisions; three close systems.
    systems = _systems(6, 300, (0.70, 0.72, 0.71), np.random.default_rng(2), paired)
    merged, unmerged = _both(monkeypatch, systems, costs=1 - np.eye(6),
                             settings=prob.MonteCarloSettings(num_draws=2500))
    assert merged.info["merged_cells"].startswith("2 utility groups") and "merged_cells" not in unmerged.info
    assert 0.1 < np.max(np.asarray(merged.p_best)) < 0.9  # a close call: the test can fail
    _same_distribution(merged, unmerged)


def test_merged_cells_with_deployment_priors_and_a_cost_vector(monkeypatch):
    # Per-class error costs (3 groups in rows with two distinct error costs), fixed deployment priors.
    costs = np.array([[0, 1, 1, 4], [2, 0, 2, 2], [1, 1, 0, 3], [5, 5, 5, 0]], float)
    systems = _systems(4, 200, (0.7, 0.75), np.random.default_rng(3), False)
    merged, unmerged = _both(monkeypatch, systems, costs=costs, priors=[0.4, 0.3, 0.2, 0.1],
                             settings=prob.MonteCarloSettings(num_draws=2500))
    assert merged.info["merged_cells"].startswith("3 utility groups")
    _same_distribution(merged, unmerged)


# ------------------------------------------------------------------ adaptive draw counts

def test_the_default_draws_until_the_probabilities_are_precise():
    # A clear winner: P(best) 1.000 after the first run, so no more draws than that.
    clear = _systems(5, 400, (0.6, 0.9), np.random.default_rng(4), False)
    res = prob.compare(clear, costs=1 - np.eye(5), key=KEY)
    assert res.num_draws == adaptive_draws.FIRST_DRAWS and res.info["mc_error_met"]
    fixed = prob.compare(clear, costs=1 - np.eye(5), key=KEY, settings=prob.MonteCarloSettings(num_draws=10_000))
    assert np.asarray(fixed.p_best)[1] > 0.999 and np.asarray(res.p_best)[1] > 0.999


# ~10 s: several runs of up to 10^4 draws; the default lane keeps the clear winner above and eq. (1) below.
@pytest.mark.slow
def test_a_close_call_gets_the_draws_it_needs_and_agrees_with_a_fixed_count():
    close = _systems(3, 300, (0.80, 0.81), np.random.default_rng(5), False)
    res = prob.compare(close, costs=1 - np.eye(3), key=KEY, decompose=False)
    assert res.info["mc_error_met"] and res.largest_probability_error() <= adaptive_draws.DEFAULT_MC_ERROR
    assert adaptive_draws.FIRST_DRAWS < res.num_draws <= adaptive_draws.DEFAULT_MAX_DRAWS
    assert res.info["mc_error_runs"][-1] == res.num_draws
    fixed = prob.compare(close, costs=1 - np.eye(3), key=jax.random.key(13), decompose=False,
                         settings=prob.MonteCarloSettings(num_draws=10_000))
    error = np.sqrt(np.asarray(res.errors["p_best"]) ** 2 + np.asarray(fixed.errors["p_best"]) ** 2)
    assert 0.1 < np.asarray(fixed.p_best)[0] < 0.9
    assert np.all(np.abs(np.asarray(res.p_best) - np.asarray(fixed.p_best)) < 5 * error)


def test_next_draws_follows_the_inverse_square_law_within_its_bounds():
    assert adaptive_draws.next_draws(1000, 0.01, 0.005, 10**6) == 4800  # 1000 * 1.2 * 2^2
    assert adaptive_draws.next_draws(1000, 0.0051, 0.005, 10**6) == 1500  # at least 1.5 times as many
    assert adaptive_draws.next_draws(1000, 0.1, 0.005, 20_000) == 20_000  # the cap
