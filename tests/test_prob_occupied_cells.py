"""Draws over the occupied cells only (ecjax._src.prob.occupied_cells): the evaluation of eq. (1) against a dense
scatter of the same draw, the sticks against their closed form, and compare's answers against every-cell draws and
an independent numpy sampler, within their Monte Carlo errors."""

from __future__ import annotations


import numpy as np
import pytest

import jax
import jax.numpy as jnp

from ecjax import prob
from ecjax.confusion import joint_outcome_table
from ecjax._src.prob import occupied_cells as oc
from ecjax._src.prob.paired import stick_atoms, stick_weights

from ecjax._src.prob.draw_models import occupied as occupied_model


# ------------------------------------------------------------------ sticks

def test_stick_weights_match_the_closed_form_of_the_dirichlet_process():
    # pi_1 = V_1 ~ Beta(1, A): mean 1 / (1 + A); the last of T weights is prod_{s<T} (1 - V_s), of mean
    # (A / (1 + A))^(T-1); all sum to 1.
    a, t, n = 0.5, 3, 200_000
    pi = np.asarray(stick_weights(jax.random.uniform(jax.random.key(0), (n, t - 1)), a), np.float64)
    np.testing.assert_allclose(pi.sum(-1), 1.0, atol=1e-6)
    se = pi.std(0) / np.sqrt(n)
    assert abs(pi[:, 0].mean() - 1 / (1 + a)) < 5 * se[0]
    assert abs(pi[:, -1].mean() - (a / (1 + a)) ** (t - 1)) < 5 * se[-1]


@pytest.mark.parametrize("mass", [2e-3, 0.02, 0.2, 2.0])
def test_stick_atoms_leave_an_expected_mass_below_1e_minus_12(mass):
    # The truncation bound of the module docstring: E[mass left to the last atom] = (A / (1 + A))^(T-1) <= 1e-12,
    # and T is the smallest such count.
    t = stick_atoms(mass)
    ratio = mass / (1 + mass)
    assert ratio ** (t - 1) <= 1e-12
    assert t == 2 or ratio ** (t - 2) > 1e-12


# Slow lane: compiling the sampler for this table takes about 10 s; the default lane keeps the comparison with an
# independent numpy sampler below (12 classes, every cell over the occupied ones), which these weights feed.
@pytest.mark.slow
def test_cell_weights_are_gamma_of_their_counts():
    # Each occupied cell's data weight h_c ~ Gamma(n_c): Exp(1) cells, Gamma(2) as a sum of two Exp(1), the others
    # through the Marsaglia-Tsang sampler; Kolmogorov-Smirnov against scipy's Gamma, padding cells exactly 0.
    from scipy import stats

    counts = np.zeros((1, 2, 3))
    counts[0, 0] = [1, 2, 5]
    counts[0, 1] = [2, 1, 3]
    table = oc.unpaired_cells(counts, 0.5)
    draw = oc.cell_draw(jax.random.key(11), table.shapes, table.counts, layout=table.layout, num_draws=4000)
    n = np.asarray(table.counts)
    h = np.concatenate([np.asarray(x, np.float64) for x in draw.h], axis=1)
    assert sorted(n[n > 0].tolist()) == [1, 1, 2, 2, 3, 5] and np.all(h[:, n == 0] == 0)
    for c in np.nonzero(n)[0]:
        assert stats.kstest(h[:, c], stats.gamma(n[c]).cdf).pvalue > 1e-3, n[c]


# ---------------------------------------------- eq. (1) against a dense draw

def _dense_unpaired(draw, table):
    """The draw's ``(B, M, K, D)`` rates, built cell by cell in numpy (data parts, then the atoms)."""
    lay = table.layout
    b, m, k, d = draw.prior.shape[0], lay.num_systems, lay.num_classes, lay.num_decisions
    w = np.zeros((b, m * k, k * d))
    flat, rows = np.asarray(table.flat[:, 0]), np.asarray(table.rows)
    for h, (a, e) in zip(draw.h, oc.cell_groups(lay, flat.shape[0])):
        for c in range(a, e):
            w[:, rows[c], flat[c]] += np.asarray(h, np.float64)[:, c - a]
    data_total = w.sum(-1)
    prior, pi, atoms = (np.asarray(x, np.float64) for x in (draw.prior, draw.pi, draw.atom_flat[..., 0]))
    split = np.zeros_like(w)
    for r in range(m * k):
        for t in range(lay.atoms):
            np.add.at(split[:, r], (np.arange(b), atoms[:, r, t].astype(int)), pi[:, r, t])
    w = w + prior[..., None] * split
    total = w.sum(-1, keepdims=True)
    rates = np.where(total > 0, w / np.where(total > 0, total, 1), split)  # no weight at all: the split
    assert np.any(data_total == 0)  # the class without samples
    return rates.reshape(b, m, k, k, d)[:, :, np.arange(k), np.arange(k), :]  # row (m, i): class i's decisions


def _numpy_outputs(rates_or_joint, u, p):
    """Yield, EC, NEC from ``(B, M, K, D)`` rates, ``(B, K, D)`` utilities and ``(B, K)`` priors (float64)."""
    y = np.einsum("bk,bmkd,bkd->bm", p, rates_or_joint, u)
    costs = u.max(-1, keepdims=True) - u  # the row-normalized costs of -U
    ec_n = np.einsum("bk,bmkd,bkd->bm", p, rates_or_joint, costs)
    naive = np.einsum("bk,bkd->bd", p, costs).min(-1)
    with np.errstate(divide="ignore", invalid="ignore"):  # a decision best for every class: no NEC (NaN)
        return y, -y, np.where(naive[:, None] > 0, ec_n / naive[:, None], np.nan)


def _random_counts(rng, m, k, d, per_class):
    counts = np.zeros((m, k, d))
    for s in range(m):
        for i in range(k):
            dec = np.where(rng.random(per_class) < 0.6, i, rng.integers(0, d, per_class))
            np.add.at(counts[s, i], dec, 1)
    counts[1, 2] = 0  # a class without samples: its rates are the prior field's split
    return counts


def test_unpaired_evaluation_equals_the_dense_rates_of_the_same_draw():
    rng = np.random.default_rng(1)
    m, k, d, b = 2, 5, 6, 64
    counts = _random_counts(rng, m, k, d, 7)
    table = oc.unpaired_cells(counts, 2 / (k * d))
    draw = oc.cell_draw(jax.random.key(3), table.shapes, table.counts, layout=table.layout, num_draws=b)
    u = rng.uniform(-3, 0, (b, k, d)).astype(np.float32)
    p = rng.dirichlet(np.ones(k), b).astype(np.float32)
    y, ec, nec = (np.asarray(x, np.float64) for x in oc.evaluate(draw, table, jnp.asarray(u), jnp.asarray(p)))
    rates = _dense_unpaired(draw, table)
    np.testing.assert_allclose(rates.sum(-1), 1.0, atol=1e-6)
    want = _numpy_outputs(rates, u.astype(np.float64), p.astype(np.float64))
    for got, ref in zip((y, ec, nec), want):
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("deployment", [False, True])
def test_joint_evaluation_equals_the_dense_marginals_of_the_same_draw(deployment):
    rng = np.random.default_rng(2)
    m, k, d, n, b = 2, 4, 5, 40, 64
    labels = rng.integers(0, k, n)
    decisions = np.where(rng.random((m, n)) < 0.7, labels, rng.integers(0, d, (m, n)))
    jt = joint_outcome_table(labels, decisions, num_classes=k, num_decisions=d)
    shuffled = rng.permutation(jt.cells.shape[0])  # any order of the cells: the table sorts them by class
    table = oc.joint_cells(np.asarray(jt.cells)[shuffled], np.asarray(jt.counts)[shuffled], num_classes=k,
                           num_decisions=d, alpha=2 / (k * d))
    draw = oc.cell_draw(jax.random.key(4), table.shapes, table.counts, layout=table.layout, num_draws=b)
    # Dense marginals W (B, M, K, D): each occupied cell and each atom adds its weight at (class, d_m) of system m.
    w = np.zeros((b, m, k * d))
    flat = np.asarray(table.flat)
    for h, (a, e) in zip(draw.h, oc.cell_groups(table.layout, flat.shape[0])):
        for c in range(a, e):
            w[:, np.arange(m), flat[c]] += np.asarray(h, np.float64)[:, c - a, None]
    weight = (np.asarray(draw.prior, np.float64)[..., None] * np.asarray(draw.pi, np.float64)).reshape(b, -1)
    atoms = np.asarray(draw.atom_flat).reshape(b, -1, m)
    for j in range(m):
        for t in range(atoms.shape[1]):
            w[np.arange(b), j, atoms[:, t, j]] += weight[:, t]
    w = w.reshape(b, m, k, d)
    u = rng.uniform(-3, 0, (b, k, d)).astype(np.float32)
    u[0] = 0.0
    u[0, :, 1] = 1.0  # decision 1 best for every class: the naive EC is exactly 0, the NEC NaN
    class_mass = w[:, 0].sum(-1)
    rates = w / w.sum(-1, keepdims=True)
    if deployment:
        p = np.broadcast_to(rng.dirichlet(np.ones(k)), (b, k)).astype(np.float32)
        got = oc.evaluate(draw, table, jnp.asarray(u), jnp.asarray(p))
        p64 = p.astype(np.float64)
    else:
        got = oc.evaluate(draw, table, jnp.asarray(u), None)
        p64 = class_mass / class_mass.sum(-1, keepdims=True)  # the draw's own class frequencies
    want = _numpy_outputs(rates, u.astype(np.float64), p64)
    assert np.all(np.isnan(np.asarray(got[2])[0]))
    for g, ref in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), ref, rtol=2e-5, atol=2e-6)


def test_naive_ec_from_candidate_columns_equals_the_exact_minimum():
    # min_j sum_i P_i (max_j' U_ij' - U_ij) in float64 numpy, against the candidates found by one product: random
    # matrices; a dominating decision (exactly 0, the NEC NaN) among more tied columns than candidates; ties of
    # equal columns beyond the candidates (the minimum still within float32 rounding).
    rng = np.random.default_rng(7)
    b, k, d = 6, 40, 50
    u = rng.uniform(-3, 0, (b, k, d)).astype(np.float32)
    u[1, :, 5:20] = 0.5  # 15 columns best for every class: naive EC exactly 0
    u[2, :, 3:30] = u[2, :, 3:4]  # 27 equal columns, the smallest of them among the rest or not
    u[3, :, :] = u[3, :, :1]  # every column the same: each one best for every class
    p = rng.dirichlet(np.ones(k), b).astype(np.float32)
    got = np.asarray(oc._naive_ec(jnp.asarray(u).max(-1), jnp.asarray(u), jnp.asarray(p)), np.float64)
    u64, p64 = u.astype(np.float64), p.astype(np.float64)
    want = np.einsum("bk,bkd->bd", p64, u64.max(-1, keepdims=True) - u64).min(-1)
    assert got[1] == 0.0 and got[3] == 0.0
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)


# The paired table compiles its own sampler (about 10 s): slow lane; the unpaired one shares the counts, block and
# key of the dense-rebuild test above (its draw is compiled once) and stays in the default lane.
@pytest.mark.parametrize("paired", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_doubt_components_over_the_cells_equal_numpy(paired):
    # costs_only: sum_i c_mi (sum_j n_m,ij U_ij + alpha sum_j U_ij) per draw (the count weights at the cells and the
    # matrix term from the naive EC's product); rates_only: the draw's yields under U_hat (evaluate, checked above
    # against a dense rebuild); priors_only: sum_i P_i priors_rows_mi.
    m, k, d, b = 2, 5, 6, 64
    alpha = 2 / (k * d)
    if paired:
        rng = np.random.default_rng(5)
        labels = rng.integers(0, k, 60)
        decisions = np.where(rng.random((m, 60)) < 0.6, labels, rng.integers(0, d, (m, 60)))
        counts = np.zeros((m, k, d))
        for s in range(m):
            np.add.at(counts[s], (labels, decisions[s]), 1)
        jt = joint_outcome_table(labels, decisions, num_classes=k, num_decisions=d)
        table = oc.joint_cells(np.asarray(jt.cells), np.asarray(jt.counts), num_classes=k, num_decisions=d,
                               alpha=alpha)
    else:
        rng = np.random.default_rng(1)
        counts = _random_counts(rng, m, k, d, 7)  # as the dense-rebuild test: the same table and draw
        table = oc.unpaired_cells(counts, alpha)
    u = rng.uniform(-3, 0, (b, k, d)).astype(np.float32)
    u_hat = rng.uniform(-3, 0, (k, d))
    coef, rows_yield = rng.uniform(0, 1, (m, k)), rng.uniform(-1, 0, (m, k))
    p = rng.dirichlet(np.ones(k), b).astype(np.float32)
    parts = oc.component_parts(table, u_hat, coef, rows_yield)
    comps = ("costs_only", "priors_only", "rates_only")
    out = oc.cell_outputs(jax.random.key(3), table, jnp.asarray(u), jnp.asarray(p), jnp.asarray(p), parts,
                          joint_priors=False, block=b, components=comps)
    u64 = u.astype(np.float64)
    want = np.einsum("mi,bmi->bm", coef, np.einsum("mij,bij->bmi", counts, u64) + alpha * u64.sum(-1)[:, None])
    np.testing.assert_allclose(np.asarray(out["costs_only"], np.float64), want, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(np.asarray(out["priors_only"], np.float64), p.astype(np.float64) @ rows_yield.T,
                               rtol=2e-5, atol=2e-6)
    draw = oc.cell_draw(jax.random.key(3), table.shapes, table.counts, layout=table.layout, num_draws=b)
    rates = oc.evaluate(draw, table, jnp.asarray(u_hat, jnp.float32), jnp.asarray(p))[0]
    np.testing.assert_allclose(np.asarray(out["rates_only"]), np.asarray(rates), rtol=2e-5, atol=2e-6)


def test_blocks_of_occupied_cells_fit_their_class_priors_in_the_small_unit():
    # compare plans the occupied cells' blocks from plan_elements: at 100 classes of 100 samples a block holds at
    # most SMALL_UNIT / K draws (B K class-prior variates in the sampler's small unit; the table's own elements gave
    # blocks of 100 draws, 10^4 variates in a unit of 2^18), and never fewer than the table's elements ask.
    from ecjax._src.prob.draw_plan import plan_draws
    from ecjax._src.prob.sampling import SMALL_UNIT

    rng = np.random.default_rng(0)
    k = 100
    counts = np.zeros((3, k, k))
    for s in range(3):
        y = rng.integers(0, k, 10_000)
        np.add.at(counts[s], (y, np.where(rng.random(10_000) < 0.75, y, rng.integers(0, k, 10_000))), 1)
    table = oc.unpaired_cells(counts, 2 / k**2)
    block = plan_draws(1000, oc.plan_elements(table) + k * k, group=2).block
    assert 2 <= block and block * k <= SMALL_UNIT
    assert plan_draws(1000, table.elements + k * k, group=2).block * k > SMALL_UNIT  # what the elements alone gave
    assert oc.plan_elements(table) >= table.elements


# ------------------------------------------------- compare, end to end

def _systems(k, n, paired, seed=0):
    rng = np.random.default_rng(seed)
    accuracies = (0.72, 0.78, 0.70)
    y = rng.integers(0, k, n)
    labels = [y if paired else rng.permutation(y) for _ in accuracies]
    decisions = np.stack([np.where(rng.random(n) < a, lab, rng.integers(0, k, n))
                          for a, lab in zip(accuracies, labels)])
    return labels, decisions


def _error_costs(k):
    return (0.5 * (1 - np.eye(k)), 3.0 * (1 - np.eye(k)))


def _run(monkeypatch, mode, systems, costs, draws, seed, **kwargs):
    monkeypatch.setattr(occupied_model, "_OCCUPIED_CELLS", mode)
    return prob.compare(systems, costs=costs, key=jax.random.key(seed),
                        settings=prob.MonteCarloSettings(num_draws=draws), **kwargs)


def _assert_same_posterior(a, b, draws):
    """P(best), mean yields and HDI ends of two independent runs within their Monte Carlo errors (5 sigma)."""
    ya, yb = np.asarray(a.yields, np.float64), np.asarray(b.yields, np.float64)
    sd = ya.std(0)
    p = (np.asarray(a.p_best) + np.asarray(b.p_best)) / 2
    np.testing.assert_array_less(np.abs(np.asarray(a.p_best) - np.asarray(b.p_best)),
                                 5 * np.sqrt(2 * p * (1 - p) / draws) + 1e-9)
    np.testing.assert_array_less(np.abs(ya.mean(0) - yb.mean(0)), 5 * sd * np.sqrt(2 / draws))
    # An HDI end's standard error is about 0.035 sd at 4000 draws (a 90 % interval of a near-normal posterior).
    assert np.all(np.abs(np.asarray(a.hdi) - np.asarray(b.hdi)) < 0.3 * sd[:, None])
    na, nb = np.asarray(a.normalized_expected_costs), np.asarray(b.normalized_expected_costs)
    np.testing.assert_array_less(np.abs(na.mean(0) - nb.mean(0)), 5 * na.std(0) * np.sqrt(2 / draws))


def _assert_same_doubt(a, b, names, draws):
    """The doubt components of two independent runs within 5 binomial standard errors."""
    for name in names:
        va, vb = a.doubt.values[name], b.doubt.values[name]
        q = (va + vb) / 2
        assert abs(va - vb) <= 5 * np.sqrt(2 * q * (1 - q) / draws) + 1e-9, name


# The paired case compiles a second pair of programs (about 10 s): its evaluation is checked draw by draw above.
# Both in the slow lane (13 s unpaired): the default lane keeps the draw-by-draw checks against a dense rebuild and
# the independent numpy sampler.
@pytest.mark.slow
@pytest.mark.parametrize("paired", [False, True])
def test_compare_over_occupied_cells_equals_every_cell_draws(monkeypatch, paired):
    k, n, draws = 12, 240, 4000
    labels, decisions = _systems(k, n, paired)
    systems = prob.Systems(labels[0] if paired else labels, decisions, paired=paired)
    costs = prob.intervals(*_error_costs(k), kind="cost")
    cells = _run(monkeypatch, "always", systems, costs, draws, 0, rope=0.01)
    full = _run(monkeypatch, "never", systems, costs, draws, 1, rope=0.01)
    assert "occupied_cells" in cells.info and "occupied_cells" not in full.info
    np.testing.assert_allclose(cells.expected_yield, full.expected_yield, rtol=1e-12)  # both the closed form
    _assert_same_posterior(cells, full, draws)
    _assert_same_doubt(cells, full, ("all", "costs_only", "rates_only"), draws)


@pytest.mark.slow  # reason: two more compare runs of about 10 s; the per-class normalization is checked above
def test_compare_over_occupied_cells_with_uncertain_deployment_priors(monkeypatch):
    # Deployment priors drawn (the priors_only component) and the paired model's per-class normalization.
    k, n, draws = 10, 300, 4000
    labels, decisions = _systems(k, n, True, seed=3)
    systems = prob.Systems(labels[0], decisions, paired=True)
    costs = prob.intervals(*_error_costs(k), kind="cost")
    priors = prob.dirichlet_priors(np.full(k, 20.0))
    cells = _run(monkeypatch, "always", systems, costs, draws, 0, priors=priors)
    full = _run(monkeypatch, "never", systems, costs, draws, 1, priors=priors)
    assert "occupied_cells" in cells.info
    _assert_same_posterior(cells, full, draws)
    _assert_same_doubt(cells, full, ("all", "costs_only", "priors_only", "rates_only"), draws)


# 50 classes of 20 samples: the automatic choice draws the occupied cells (slow: a larger numpy reference).
@pytest.mark.parametrize("k, n, mode", [(12, 240, "always"), pytest.param(50, 1000, "auto", marks=pytest.mark.slow)])
def test_compare_over_occupied_cells_matches_an_independent_numpy_sampler(monkeypatch, k, n, mode):
    # numpy draws the same model cell by cell: U uniform per entry, the test set's class frequencies
    # Dirichlet(mean class counts + 2 / K), each row Dirichlet(n + 2 / (K D)) over all D decisions.
    draws = 4000
    labels, decisions = _systems(k, n, False, seed=5)
    low, high = _error_costs(k)
    result = _run(monkeypatch, mode, prob.Systems(labels, decisions, paired=False),
                  prob.intervals(low, high, kind="cost"), draws, 0)
    assert "occupied_cells" in result.info
    rng = np.random.default_rng(0)
    counts = np.zeros((3, k, k))
    for m in range(3):
        np.add.at(counts[m], (labels[m], decisions[m]), 1)
    alpha = 2 / (k * k)
    u = -(low + (high - low) * rng.random((draws, k, k)))
    p = rng.dirichlet(counts.sum(-1).mean(0) + 2 / k, draws)
    y = np.zeros((draws, 3))
    for m in range(3):
        for i in range(k):
            r = rng.dirichlet(counts[m, i] + alpha, draws)  # (S, D)
            y[:, m] += p[:, i] * np.einsum("sd,sd->s", r, u[:, i])

    class Reference:
        yields = y
        p_best = np.bincount(y.argmax(1), minlength=3) / draws
        hdi = np.stack([_hdi(y[:, m], 0.9) for m in range(3)])
        normalized_expected_costs = _numpy_nec(y, u, p)

    _assert_same_posterior(result, Reference, draws)


def _hdi(x, mass):
    s = np.sort(x)
    width = int(np.floor(mass * len(s)))
    lo = np.argmin(s[width:] - s[:len(s) - width])
    return np.array([s[lo], s[lo + width]])


def _numpy_nec(y, u, p):
    costs = u.max(-1, keepdims=True) - u
    ec_n = np.einsum("sk,sk->s", p, u.max(-1))[:, None] - y
    return ec_n / np.einsum("sk,skd->sd", p, costs).min(-1)[:, None]
