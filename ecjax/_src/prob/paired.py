"""Paired comparisons: a Dirichlet over all joint-outcome cells, in memory independent of ``K * D**M``.

Systems scored on the same samples are correlated: when one errs on a hard
sample, so does the other.  A sample's joint outcome is the cell
``c = (true class, decision of system 1, ..., decision of system M)``, one
of ``L = K * D**M``.  With cell probabilities ``w`` and the prior
``w ~ Dirichlet(a_J, ..., a_J)`` over all ``L`` cells, the posterior given
the counts ``n_c`` of :func:`ecjax.confusion.joint_outcome_table` is

    w | n ~ Dirichlet(n_c + a_J  over all L cells).                                      (1)

Every system's confusion matrix is a marginal of ``w``: system ``m``'s
joint (class, decision) probability ``W_m,kd`` is the sum of ``w_c`` over
the ``D**(M-1)`` cells with ``c_0 = k`` and ``c_m = d``.  By the
aggregation property of the Dirichlet, each system's ``W_m`` alone is
``Dirichlet(n_m,kd + a)`` over its ``K * D`` cells with ``a = a_J *
D**(M-1)``: **the same law as the unpaired model** (:mod:`~ecjax._src.prob.rates`
with deployment priors left to the data) when ``concentration = a`` is
given per cell of a system's confusion matrix, which is how every function
here takes it.  The default is :func:`~ecjax._src.prob.rates.default_concentration`,
``a = A / (K D)`` with ``A = 2`` pseudo-observations spread evenly over the
whole table (``a_J = A / L``); the reasons and the coverage numbers behind
``A = 2`` are in :mod:`~ecjax._src.prob.rates` and in the tests
(``tests/test_prob_rates_coverage.py``).  For paired systems that differ on few
samples (``N = 100`` binary samples, accuracies 0.97 and 0.985,
correlation 0.6 between their correctness: about two discordant samples
per test set), the coverage of the 90 % HDIs of A's accuracy, B's accuracy
and their difference over the same 600 simulated test sets was

    A = 2 (default)     0.917  0.938  0.890   smallest P(B best) 0.04
    A = 1               0.908  0.755  0.812
    A = 3               0.917  0.927  0.950
    Bayesian bootstrap  0.790  0.765  0.805

with, for the Bayesian bootstrap, 13 % of the HDIs of the difference of
zero width and ``P(B best) <= 0.001`` in 18 % of the sets (``>= 0.999`` in
67 %) although B is better.  Two consequences of the prior over *all*
cells, which the Bayesian bootstrap (``concentration=0``, the former
default: Dirichlet over the occupied cells only, Rubin 1981) lacks: a
system with no errors has an error rate whose HDI is not ``[0, 0]``, and
when two systems differ on three samples only, all in favour of B, ``P(A
more accurate)`` is not exactly 0: the masses of the ``K (D - 1)`` cells
where only B is right and of the ``K (D - 1)`` where only A is right
aggregate (eq. 1) to ``Dirichlet(3 + b, b, ...)`` with ``b = K (D - 1)
a_J``, so ``P(B more accurate) = P(Beta(3 + b, b) > 1/2)``: 0.967 for two
binary systems under the default (``b = 1/2``), against 0.9375 for a
uniform Beta on the discordant pairs and 1 for the Bayesian bootstrap.

**Sampling without the ``L`` cells.**  Write each cell's Gamma variate of
(1) as a sum of two independent ones, ``Gamma(n_c + a_J) = Gamma(n_c) +
Gamma(a_J)`` (Gamma additivity).  The first, the *data* part, lives on the
``C`` occupied cells only (a Bayesian bootstrap).  The second, the *prior*
part, is a field of i.i.d. ``Gamma(a_J)`` over all ``L`` cells; normalized,
it is ``Dirichlet(a_J, ..., a_J)``, i.e. a Dirichlet process ``DP(A, U)``
whose base measure ``U`` is uniform over the cells (Ferguson 1973: a DP
with a discrete base measure gives its atoms exactly this Dirichlet).  Its
total mass is ``Gamma(A)``, independent of the split.  The DP is drawn by
stick breaking (Sethuraman 1994): weights ``pi_t = V_t prod_{s<t} (1 -
V_s)``, ``V_t ~ Beta(1, A)``, at cells drawn uniformly, i.e. the class and
each system's decision drawn independently and uniformly — so each atom
costs ``M + 1`` integers, whatever ``K`` and ``M``.  The sticks are cut
after ``T`` atoms, the last one taking the remaining mass, with ``T`` the
smallest count for which the expected remainder ``(A / (1 + A))**(T-1)``
is below ``1e-12`` (``T = 70`` for ``A = 2``): the per-cell split is then
exact up to a mass far below float32 resolution, and the total prior mass
is exactly ``Gamma(A)``.  When the table is small (``L <= T (M + 2)``, e.g.
two binary systems: 8 cells) the prior field is drawn directly, exactly.
The marginals of the data part are segment sums over the occupied cells,
those of the prior part scatter-adds of its atoms: the draws cost
``O(C + T M)`` per draw and are made in blocks of draws, in memory
independent of ``L``.  When every draw has its own decisions (the scores
mode), :func:`sample_joint_confusions_per_draw` draws the data part as one
``Exp(1)`` weight per sample (``Gamma(n_c)`` is the sum of ``n_c`` of them),
so no table of cells is built at all; with frequency weights ``w_n``
(``sample_weight``) each sample draws ``Gamma(w_n)`` instead, whose sum over
a cell is ``Gamma`` of the cell's weighted count.

The class frequencies are the class marginals of ``w`` (uncertain data
priors); deployment priors can replace them (each class row is then
renormalized into rates).

Clustered samples (several per patient, speaker or document): with a group
id per sample, the cluster bootstrap draws a weight ``G_g ~ Gamma(1)`` per
group and keeps each group's own cell counts ``n_gc``: the data part of
cell ``c`` is ``sum_g G_g n_gc`` (Dirichlet(1, ..., 1) weights over the
groups).  Drawing the cells within each group as well (``Dirichlet(n_gc)``,
as ``confidence-intervals`` resamples the samples within its conditions)
counts the within-group variance twice and over-covered (0.955-0.99 at a
nominal 0.90 with 20-50 groups of 10; README, coverage table).  The prior part is
the same ``DP(A, U)`` field, in the same units (``A`` pseudo-samples): cell
weights ``sum_g G_g n_gc + E_c``, with ``E`` the prior field of total
mass ``Gamma(A)``, normalized.  With one sample per group this is exactly
(1).  (Counting the prior as ``A`` pseudo-*groups* of the average size
instead would give a uniform random cell the weight of whole groups: with
30 groups of about 33 samples it made the 90 % interval of an accuracy of
0.84 0.095 wide, against 0.050 for ``confidence-intervals``' resampling of
conditions.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.random_bits import uniform
from ecjax._src.confusion import JointOutcomeTable, joint_outcome_table
from ecjax._src.prob.sampling import dirichlet_draws, in_blocks, gamma_draws
from ecjax._src.prob.rates import check_concentration, default_concentration

# None: ``default_concentration(D, K)`` per cell of each system's matrix (see resolve_concentration).
DEFAULT_CONCENTRATION = None

# Stick breaking stops when the expected mass left after the last atom is below this.
_STICK_TOLERANCE = 1e-12
# A draw block holds about this many elements (occupied cells, atoms, marginal cells).
_BLOCK_ELEMENTS = 1 << 20
# The prior's representation (dense cells or atoms) may hold at most this many elements per draw.
_MAX_PRIOR_ELEMENTS = 1 << 20


@dataclass(frozen=True)
class ClusteredOutcomeTable:
    """Joint outcome cells per group (cluster) of samples.

    Attributes:
      cells: ``(C, 1 + M)`` int32; column 0 the true class.
      groups: ``(C,)`` int32 group index in ``[0, G)`` of each cell.
      counts: ``(C,)`` counts of each (group, cell).
      num_groups, num_classes, num_decisions: ``G``, ``K``, ``D``.
    """

    cells: jax.Array
    groups: jax.Array
    counts: jax.Array
    num_groups: int
    num_classes: int
    num_decisions: int

    @property
    def num_systems(self) -> int:
        return self.cells.shape[1] - 1


def clustered_outcome_table(labels: ArrayLike, decisions: ArrayLike, groups: ArrayLike | Sequence[Any], *,
                            num_classes: int | None = None, num_decisions: int | None = None,
                            sample_weight: ArrayLike | None = None) -> ClusteredOutcomeTable:
    """Group the samples' joint outcomes by cluster id (``groups``: ``(N,)`` hashable ids).

    With ``sample_weight`` ``(N,)`` each (group, cell) holds the sum of its
    samples' weights (float32), as :func:`ecjax.confusion.joint_outcome_table`.
    """
    table = joint_outcome_table(labels, decisions, num_classes=num_classes, num_decisions=num_decisions,
                                sample_weight=sample_weight)
    labels = np.asarray(labels)
    decisions = np.asarray(decisions)
    g = v.as_group_ids(groups, labels.shape[-1])
    _, gid = np.unique(g, return_inverse=True)
    rows = np.concatenate([gid.reshape(1, -1), labels.reshape(1, -1), decisions.reshape(-1, labels.shape[-1])], 0).T
    uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
    if sample_weight is None:
        counts = np.bincount(inverse.ravel(), minlength=len(uniq)).astype(np.int32)
    else:
        counts = np.bincount(inverse.ravel(), weights=np.asarray(sample_weight, np.float64),
                             minlength=len(uniq)).astype(np.float32)
    return ClusteredOutcomeTable(
        jnp.asarray(uniq[:, 1:], jnp.int32), jnp.asarray(uniq[:, 0], jnp.int32), jnp.asarray(counts),
        int(gid.max()) + 1, table.num_classes, table.num_decisions,
    )


# ------------------------------------------------------------------ the prior

@dataclass(frozen=True)
class _PriorPlan:
    """How the prior field of eq. (1) is drawn: ``kind`` "none", "dense" (all L cells) or "sticks" (T atoms)."""

    kind: str
    atoms: int = 0


def resolve_concentration(concentration: float | None, num_classes: int, num_decisions: int) -> float:
    """``concentration`` per cell of a system's ``(K, D)`` confusion matrix; ``None``: the default ``A / (K D)``."""
    if concentration is None:
        return default_concentration(num_decisions, num_classes)
    return check_concentration(concentration)


def stick_atoms(mass: float) -> int:
    """``T``: the sticks of ``DP(A)`` (``A = mass``) cut after ``T`` atoms, the smallest count for which the expected
    mass left after the first ``T - 1``, ``(A / (1 + A))**(T-1)``, is below ``1e-12`` (the last atom takes it)."""
    ratio = mass / (1.0 + mass)
    return 1 + max(1, math.ceil(math.log(_STICK_TOLERANCE) / math.log(ratio)))


def stick_weights(units: jax.Array, mass: float) -> jax.Array:
    """``(..., T)`` stick-breaking weights of ``DP(A)`` (Sethuraman 1994), ``A = mass``, from ``(..., T - 1)`` uniforms.

    ``pi_t = V_t prod_{s<t} (1 - V_s)``, ``V_t ~ Beta(1, A)``, drawn as
    ``1 - V_t = U^(1/A)`` in the log domain; the last atom takes the mass
    left, so the weights sum to 1 exactly (up to rounding).
    """
    shape, dtype = units.shape[:-1], units.dtype
    log_keep = jnp.log(units) / mass
    left = jnp.exp(jnp.concatenate([jnp.zeros(shape + (1,), dtype), jnp.cumsum(log_keep, -1)], -1))  # mass before t
    return jnp.concatenate([left[..., :-1] * -jnp.expm1(log_keep), left[..., -1:]], -1)


def _prior_plan(concentration, num_classes, num_decisions, num_systems) -> _PriorPlan:
    mass = concentration * num_classes * num_decisions  # A = a K D = a_J L
    if mass == 0:
        return _PriorPlan("none")
    atoms = stick_atoms(mass)
    cells = num_classes * num_decisions ** num_systems  # a Python int: no overflow
    sticks = atoms * (num_systems + 2)  # per draw: T weights and T (M + 1) cell coordinates
    if min(cells, sticks) > _MAX_PRIOR_ELEMENTS:
        raise v.InputError(
            f"`concentration` {concentration:g} puts {mass:g} pseudo-observations over {cells} joint cells: "
            f"drawing that prior needs {atoms} atoms per draw; use a smaller concentration (the default is "
            f"{default_concentration(num_decisions, num_classes):g})"
        )
    return _PriorPlan("dense") if cells <= sticks else _PriorPlan("sticks", atoms)


def _prior_shapes(mass, plan, num_systems, num_classes, num_decisions):
    """The Gamma shapes the prior needs: ``a_J`` for each of the ``L`` cells (dense) or ``A`` (the sticks' total)."""
    f = jnp.result_type(float)
    if plan.kind == "dense":
        cells = num_classes * num_decisions ** num_systems
        return jnp.full((cells,), mass / cells, f)
    if plan.kind == "sticks":
        return jnp.reshape(mass, (1,)).astype(f)
    return jnp.zeros((0,), f)


def _prior_marginals(key, mass, gammas, *, plan, num_systems, num_classes, num_decisions):
    """The prior field's per-system marginals ``(B, M, K, D)`` (unnormalized; total mass ``Gamma(A)`` per draw).

    ``gammas``: ``(B, L)`` ``Gamma(a_J)`` cells (dense) or ``(B, 1)`` ``Gamma(A)`` totals (sticks).
    """
    m, k, d = num_systems, num_classes, num_decisions
    if plan.kind == "dense":
        return _dense_marginals(gammas, m, k, d)
    num_draws, t = gammas.shape[0], plan.atoms
    key_sticks, key_class, key_dec = jax.random.split(key, 3)
    weight = gammas * stick_weights(uniform(key_sticks, (num_draws, t - 1)).astype(gammas.dtype), mass)  # (B, T)
    cls = jax.random.randint(key_class, (num_draws, t), 0, k)
    dec = jax.random.randint(key_dec, (num_draws, t, m), 0, d)
    rows = jnp.arange(num_draws)[:, None]
    outs = [jnp.zeros((num_draws, k * d), gammas.dtype).at[rows, cls * d + dec[..., j]].add(weight)
            for j in range(m)]
    return jnp.stack(outs, 1).reshape(num_draws, m, k, d)


def _dense_marginals(weights, num_systems, num_classes, num_decisions):
    """Weights over all ``K * D**M`` cells ``(B, L)`` -> per-system marginals ``(B, M, K, D)``."""
    s = weights.shape[0]
    w = weights.reshape((s, num_classes) + (num_decisions,) * num_systems)
    outs = []
    for j in range(num_systems):
        other = tuple(2 + i for i in range(num_systems) if i != j)
        outs.append(w.sum(other) if other else w)
    return jnp.stack(outs, 1)


def _marginal_counts(weights, cells, num_classes, num_decisions):
    """Cell weights ``(S, C)`` -> per-system weighted confusion matrices ``(S, M, K, D)``."""
    s = weights.shape[0]
    m = cells.shape[1] - 1
    outs = []
    for j in range(m):
        seg = cells[:, 0] * num_decisions + cells[:, 1 + j]
        # segment_sum over cells is O(S C) per system, where a one-hot GEMM would be O(S C K D).
        summed = jax.ops.segment_sum(weights.T, seg, num_segments=num_classes * num_decisions)
        outs.append(summed.T.reshape(s, num_classes, num_decisions))
    return jnp.stack(outs, 1)


# Tables are padded to a power of two of cell slots (ecjax._src.inputs.bucket_length), at least this many, so tables of
# similar size share one compiled kernel; the padding cells have count 0, whose Gamma(0) = 0 adds nothing.
_MIN_CELL_BUCKET = 8


def _padded(size):
    return v.bucket_length(size, _MIN_CELL_BUCKET)


def _pad_cells(cells, counts, extra=()):
    """Pad ``cells`` (rows of zeros), ``counts`` (zeros, as floats) and the arrays in ``extra`` (zeros) to
    :func:`_padded` rows."""
    f = jnp.result_type(float)
    pad = _padded(cells.shape[0]) - cells.shape[0]
    if not any(v.is_tracer(x) for x in (cells, counts, *extra)):
        # On the host, then to the device: nothing is compiled for the table's own (unpadded) size.
        return [v.to_device(v.pad_to_bucket(x, minimum=_MIN_CELL_BUCKET, dtype=dtype))
                for x, dtype in ((cells, np.int32), (counts, f), *((x, None) for x in extra))]
    out = [jnp.pad(jnp.asarray(cells), ((0, pad), (0, 0))), jnp.pad(jnp.asarray(counts, f), (0, pad))]
    return out + [jnp.pad(jnp.asarray(x), (0, pad)) for x in extra]


def _block_rows(num_draws, per_draw):
    return max(1, min(num_draws, _BLOCK_ELEMENTS // max(per_draw, 1)))


def _prior_size(plan, num_systems, num_classes, num_decisions):
    if plan.kind == "dense":
        return num_classes * num_decisions ** num_systems
    return plan.atoms * (num_systems + 2)


def _with_prior(key, data, data_total, mass, prior_gammas, *, plan, num_systems, num_classes, num_decisions):
    """Normalized weights ``(data + prior) / total``, ``(B, M, K, D)``, from the data part's marginals and total.

    ``prior_gammas``: the block's Gamma draws of :func:`_prior_shapes` (unused when there is no prior).
    """
    if plan.kind == "none":
        return data / data_total[:, None, None, None]
    prior = _prior_marginals(key, mass, prior_gammas, plan=plan, num_systems=num_systems, num_classes=num_classes,
                             num_decisions=num_decisions)
    total = data_total + prior[:, 0].sum((-2, -1))
    return (data + prior) / total[:, None, None, None]


# -------------------------------------------------------------- the samplers

def _checked(table, table_type, num_draws, concentration):
    """Validated ``(num_draws, K, D, concentration, prior plan)`` for a sampler of ``table`` (of ``table_type``)."""
    public_name = f"ecjax.{table_type.__module__.removeprefix('ecjax._src.')}.{table_type.__name__}"
    v.check_instance(table, table_type, "table", public_name)
    num_draws = v.as_scalar(num_draws, "num_draws", integer=True, low=1)
    k, d = table.num_classes, table.num_decisions
    alpha = resolve_concentration(concentration, k, d)
    return num_draws, k, d, alpha, _prior_plan(alpha, k, d, table.num_systems)


@partial(jax.jit, static_argnames=("num_classes", "num_decisions", "plan"))
def _paired_block(key, gammas, cells, mass, *, num_classes, num_decisions, plan):
    """One block of eq. (1) from its Gamma draws ``(B, C + L)``: the cells' ``Gamma(n_c)`` then the prior's shapes."""
    c = cells.shape[0]
    h = gammas[:, :c]
    return _with_prior(key, _marginal_counts(h, cells, num_classes, num_decisions), h.sum(-1), mass, gammas[:, c:],
                       plan=plan, num_systems=cells.shape[1] - 1, num_classes=num_classes,
                       num_decisions=num_decisions)


def _paired_kernel(key, cells, counts, mass, *, num_draws, num_classes, num_decisions, plan):
    # Python blocks over two compiled pieces (the sampler, compiled once per process, and the block's
    # assembly), rather than one jit per table shape, which would recompile the sampler for every table.
    m = cells.shape[1] - 1
    rows = _block_rows(num_draws, counts.shape[0] + _prior_size(plan, m, num_classes, num_decisions)
                       + m * num_classes * num_decisions)
    # One sampler call per block for both parts: Gamma(n_c) on the occupied cells (the Bayesian-bootstrap
    # part) and the prior's Gamma shapes.
    shapes = jnp.concatenate([counts, _prior_shapes(mass, plan, m, num_classes, num_decisions)])

    def block(k, start):
        key_gamma, key_prior = jax.random.split(k)
        return _paired_block(key_prior, gamma_draws(key_gamma, shapes, rows), cells, mass, num_classes=num_classes,
                             num_decisions=num_decisions, plan=plan)

    return in_blocks(key, num_draws, rows, block, (m, num_classes, num_decisions), jnp.result_type(float))


def sample_joint_confusions(key: jax.Array, table: JointOutcomeTable, *, num_draws: int,
                            concentration: float | None = None) -> jax.Array:
    """Posterior draws of every system's joint (class, decision) probabilities, paired (eq. 1 of the module).

    Args:
      key: ``jax.random`` key.
      table: :class:`ecjax.confusion.JointOutcomeTable` of the ``M`` systems.
      num_draws: ``S``.
      concentration: ``a``, per cell of each system's ``(K, D)`` confusion
        matrix: the prior is ``Dirichlet(a / D**(M-1))`` over all ``K *
        D**M`` joint cells, whose per-system marginals are
        ``Dirichlet(a)``.  Default (``None``): ``2 / (K D)`` (two
        pseudo-observations, :func:`~ecjax._src.prob.rates.default_concentration`).
        ``0``: the Bayesian bootstrap over the occupied cells.

    Returns:
      ``(S, M, K, D)`` probabilities summing to 1 over ``(K, D)``: usable as
      weighted counts by :func:`~ecjax._src.metrics.expected_value` (rates are
      their row-normalization, data priors their row sums).
    """
    num_draws, k, d, alpha, plan = _checked(table, JointOutcomeTable, num_draws, concentration)
    cells, counts = _pad_cells(table.cells, table.counts)
    return _paired_kernel(key, cells, counts, alpha * k * d, num_draws=num_draws, num_classes=k, num_decisions=d,
                          plan=plan)


@partial(jax.jit, static_argnames=("num_draws", "num_systems", "num_classes", "num_groups"))
def merged_joint_confusions(key: jax.Array, concentration: jax.Array, *, num_draws: int, num_systems: int,
                            num_classes: int, num_groups: int) -> jax.Array:
    """Posterior draws of eq. (1) over merged joint cells (:mod:`~ecjax._src.prob.aggregation` eq. 1).  Kernel.

    ``concentration``: ``(K G^M,)`` Dirichlet concentrations of the cells
    ``(i, g_1, ..., g_M)`` (:func:`~ecjax._src.prob.aggregation.joint_concentration`),
    every one drawn (dense: ``K G^M`` is small by construction).  Returns the
    per-system marginals ``(S, M, K, G)``, summing to 1 over ``(K, G)`` as
    those of :func:`sample_joint_confusions` do over ``(K, D)``.
    """
    w = dirichlet_draws(key, concentration, num_draws)
    return _dense_marginals(w, num_systems, num_classes, num_groups)


@partial(jax.jit, static_argnames=("num_classes", "num_decisions", "plan"))
def _per_draw_kernel(key, labels, decisions, mass, e, *, num_classes, num_decisions, plan):
    s, m, n = decisions.shape
    f = jnp.result_type(float)
    key_samples, key_gamma, key_prior = jax.random.split(key, 3)
    # Gamma(n_c) of an occupied cell is the sum of n_c independent Exp(1) sample weights (Gamma additivity):
    # the Bayesian-bootstrap part needs no table of cells, only one weight per sample.  ``e``: those weights
    # when they are given (Gamma(w_n) for frequency weights w_n, see joint_confusions_per_draw_kernel).
    if e is None:
        e = -jnp.log1p(-uniform(key_samples, (s, n))).astype(f)
    rows = jnp.arange(s)[:, None]
    base = labels * num_decisions
    data = jnp.stack([jnp.zeros((s, num_classes * num_decisions), f).at[rows, base + decisions[:, j]].add(e)
                      for j in range(m)], 1).reshape(s, m, num_classes, num_decisions)
    g = None if plan.kind == "none" else gamma_draws(key_gamma, _prior_shapes(mass, plan, m, num_classes,
                                                                              num_decisions), s)
    return _with_prior(key_prior, data, e.sum(-1), mass, g, plan=plan, num_systems=m, num_classes=num_classes,
                       num_decisions=num_decisions)


def sample_joint_confusions_per_draw(key: jax.Array, labels: ArrayLike, decisions: ArrayLike, *, num_classes: int,
                                     num_decisions: int, concentration: float | None = None) -> jax.Array:
    """One paired posterior draw (eq. 1) for each row of per-draw decisions, without a joint table.

    For the scores mode, where every draw makes its own decisions: draw
    ``s`` uses ``decisions[s]``.  The data part of eq. (1), ``Gamma(n_c)``
    per occupied cell, is drawn as one ``Exp(1)`` weight per sample
    (``Gamma(n_c)`` is the sum of ``n_c`` of them), scattered into each
    system's ``(K, D)`` cells; the prior part is the field of the module
    docstring.  Cost ``O(S (N + T) M)`` and memory ``O(S (N M + M K D))``,
    independent of the ``K * D**M`` joint cells (which need not fit an int32).

    Args:
      key: ``jax.random`` key.
      labels: ``(N,)`` true classes.
      decisions: ``(S, M, N)`` decisions of the ``M`` systems in each draw.
      num_classes, num_decisions: ``K`` and ``D``.
      concentration: as in :func:`sample_joint_confusions`.

    Returns:
      ``(S, M, K, D)`` joint probabilities, as :func:`sample_joint_confusions`.
    """
    k = v.as_scalar(num_classes, "num_classes", integer=True, low=1)
    d = v.as_scalar(num_decisions, "num_decisions", integer=True, low=1)
    labels = v.as_index_array(labels, "labels", upper=k)
    decisions = v.as_index_array(decisions, "decisions", upper=d, min_ndim=3)
    v.check_shape(labels, "labels", "(N,)")
    v.check_shape(decisions, "decisions", "(S, M, N)", sizes={"N": labels.shape[0]}, why=" (the length of `labels`)")
    return joint_confusions_per_draw_kernel(key, jnp.asarray(labels, jnp.int32), jnp.asarray(decisions, jnp.int32),
                                            resolve_concentration(concentration, k, d), num_classes=k,
                                            num_decisions=d)


def weight_gammas(key: jax.Array, sample_weight: ArrayLike, num_draws: int) -> jax.Array:
    """``(S, N)`` ``Gamma(w_n)`` draws, the data part of eq. (1) for frequency weights ``w_n`` (see below).

    A sample of frequency weight ``w_n`` draws ``Gamma(w_n)`` where it would
    draw ``Exp(1)``: summed over a cell, the Gamma of the cell's weighted
    count.  Drawn from the key :func:`joint_confusions_per_draw_kernel` uses
    for the ``Exp(1)`` weights, by the sampler compiled once per process
    (with concrete weights: call it outside a trace for the same numbers).
    """
    return gamma_draws(jax.random.split(key, 3)[0], jnp.asarray(sample_weight, jnp.result_type(float)), num_draws)


def joint_confusions_per_draw_kernel(key: jax.Array, labels: jax.Array, decisions: jax.Array, concentration: float, *,
                                     num_classes: int, num_decisions: int, sample_weight: ArrayLike | None = None,
                                     sample_gammas: jax.Array | None = None) -> jax.Array:
    """Kernel of :func:`sample_joint_confusions_per_draw` (no validation): ``(S, M, N)`` decisions -> ``(S, M, K, D)``.

    ``concentration`` is the resolved ``a`` (a Python float); the prior's
    plan (dense cells or sticks) depends on it and on the shapes only.
    ``sample_weight``: ``(N,)`` frequency weights (the data part draws
    ``Gamma(w_n)`` per sample instead of ``Exp(1)``), or ``None``;
    ``sample_gammas``: those ``(S, N)`` draws when already made
    (:func:`weight_gammas`).
    """
    plan = _prior_plan(concentration, num_classes, num_decisions, decisions.shape[1])
    e = sample_gammas
    if e is None and sample_weight is not None:
        e = weight_gammas(key, sample_weight, decisions.shape[0])
    return _per_draw_kernel(key, labels, decisions, concentration * num_classes * num_decisions, e,
                            num_classes=num_classes, num_decisions=num_decisions, plan=plan)


def per_draw_elements(concentration: float, *, num_systems: int, num_classes: int, num_decisions: int,
                      num_samples: int) -> int:
    """Elements per draw of :func:`joint_confusions_per_draw_kernel` (for sizing blocks of draws)."""
    plan = _prior_plan(concentration, num_classes, num_decisions, num_systems)
    return num_systems * (num_samples + num_classes * num_decisions) + num_samples + _prior_size(
        plan, num_systems, num_classes, num_decisions)


def posterior_mean(table: JointOutcomeTable, *, concentration: float | None = None) -> jax.Array:
    """``E[W_m,kd]`` under eq. (1): ``(n_m,kd + a) / (N + a K D)``, ``(M, K, D)``.

    Closed form: ``W_m`` is ``Dirichlet(n_m + a)`` over its ``K D`` cells
    (aggregation of eq. 1), whose mean is the normalized concentration.
    """
    v.check_instance(table, JointOutcomeTable, "table", "ecjax.confusion.JointOutcomeTable")
    k, d = table.num_classes, table.num_decisions
    alpha = resolve_concentration(concentration, k, d)
    counts = jnp.asarray(table.confusion_matrices(), jnp.result_type(float))
    return (counts + alpha) / (counts.sum((-2, -1), keepdims=True) + alpha * k * d)


@partial(jax.jit, static_argnames=("num_groups", "num_classes", "num_decisions", "plan"))
def _clustered_block(key, gammas, cells, groups, size, mass, *, num_groups, num_classes, num_decisions, plan):
    """One block of the cluster bootstrap from its Gamma draws: group weights, (unused) cells, the prior's shapes."""
    g_end, c_end = num_groups, num_groups + cells.shape[0]
    # The cluster bootstrap: cell c of group g keeps its count n_gc, scaled by G_g (no draw within the groups,
    # which would count the within-group variance twice); `size` holds the cells' counts n_gc.
    group_weight = gammas[:, :g_end]
    h = group_weight[:, groups] * size  # G_g n_gc
    return _with_prior(key, _marginal_counts(h, cells, num_classes, num_decisions), h.sum(-1), mass,
                       gammas[:, c_end:], plan=plan, num_systems=cells.shape[1] - 1, num_classes=num_classes,
                       num_decisions=num_decisions)


def _clustered_kernel(key, cells, groups, counts, mass, *, num_draws, num_groups, num_classes, num_decisions, plan):
    # Python blocks over compiled pieces, as _paired_kernel.
    m = cells.shape[1] - 1
    f = jnp.result_type(float)
    size = counts  # n_gc: each cell keeps its count (see _clustered_block)
    rows = _block_rows(num_draws, counts.shape[0] + num_groups + _prior_size(plan, m, num_classes, num_decisions)
                       + m * num_classes * num_decisions)
    # One sampler call per block: the group weights Gamma(1), the cells' Gamma(n_gc) and the prior's shapes.
    shapes = jnp.concatenate([jnp.ones(num_groups, f), counts, _prior_shapes(mass, plan, m, num_classes,
                                                                             num_decisions)])

    def block(k, start):
        key_gamma, key_prior = jax.random.split(k)
        return _clustered_block(key_prior, gamma_draws(key_gamma, shapes, rows), cells, groups, size, mass,
                                num_groups=num_groups, num_classes=num_classes, num_decisions=num_decisions,
                                plan=plan)

    return in_blocks(key, num_draws, rows, block, (m, num_classes, num_decisions), f)


def sample_clustered_confusions(key: jax.Array, table: ClusteredOutcomeTable, *, num_draws: int,
                                concentration: float | None = None) -> jax.Array:
    """Cluster Bayesian bootstrap (a weight per group, each group's cell counts kept) plus the prior of eq. (1).

    ``concentration`` as in :func:`sample_joint_confusions`: its ``A = a K
    D`` pseudo-observations count as ``A`` samples.  Returns ``(S, M, K, D)`` joint probabilities, like
    :func:`sample_joint_confusions`.
    """
    num_draws, k, d, alpha, plan = _checked(table, ClusteredOutcomeTable, num_draws, concentration)
    cells, counts, groups = _pad_cells(table.cells, table.counts, (table.groups,))
    return _clustered_kernel(key, cells, groups, counts, alpha * k * d, num_draws=num_draws,
                             num_groups=table.num_groups, num_classes=k, num_decisions=d, plan=plan)
