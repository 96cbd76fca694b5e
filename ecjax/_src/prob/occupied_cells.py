"""Rate draws over the occupied cells only: uncertain utilities at 100 and 1000 classes.

When the utility matrix ``U_s`` is drawn, no two cells of a confusion
matrix merge (:mod:`~ecjax._src.prob.aggregation` needs a fixed ``U``), yet most
cells are empty: 100 samples of a class spread over 100 decisions occupy
about 25 of them.  The posterior weights of a row still need not be drawn
cell by cell.

**Unpaired** (:mod:`~ecjax._src.prob.rates` eq. 1).  Row ``r = (m, i)`` of system
``m`` has ``R_r ~ Dirichlet(n_rj + alpha)`` over its ``D`` decisions, i.e.
``R_rj = g_rj / sum_j g_rj`` with independent ``g_rj ~ Gamma(n_rj +
alpha)``.  Split each Gamma in two (additivity), ``g_rj = h_rj + e_rj``
with ``h_rj ~ Gamma(n_rj)`` (zero in an empty cell) and ``e_rj ~
Gamma(alpha)``.  The *prior field* ``e_r.`` of the row is ``D`` i.i.d.
``Gamma(alpha)``: its total ``G_r ~ Gamma(D alpha)`` is independent of its
split ``e_r. / G_r ~ Dirichlet(alpha, ..., alpha)``, which is the
Dirichlet process ``DP(D alpha, uniform on the D decisions)`` (Ferguson
1973), drawn by stick breaking (Sethuraman 1994): atoms ``j_rt`` uniform on
the decisions with weights ``pi_rt``.  So, exactly in distribution,

    sum_j R_rj U_ij = (sum_{j in O_r} h_rj U_ij + G_r sum_t pi_rt U_i,j_rt)
                      / (sum_{j in O_r} h_rj + G_r),                                    (1)

with ``O_r`` the occupied cells of the row: a draw costs ``O(|O_r| + T)``
per row instead of ``O(D)``, and the utilities enter only at the occupied
cells and the atoms, gathered from the draw ``U_s`` (whatever the utility
prior: ``U`` is independent of the rates, and the atoms are drawn without
looking at it).  A row without samples has ``R_r = pi_r`` (the limit of (1)
as ``h -> 0``, used also when ``G_r`` underflows to 0 in float32:
``Gamma(2 / K)`` does, most of the time, for ``K = 1000``).

**Paired** (:mod:`~ecjax._src.prob.paired` eq. 1).  The same split over the joint
cells ``c = (i, d_1, ..., d_M)``: ``Gamma(n_c)`` on the occupied cells and
the prior field ``Gamma(A) x DP(A, uniform on the cells)`` of that module,
whose atoms draw their class and every system's decision uniformly.  With
the test set's class frequencies the yield of system ``m`` is
``sum_c w_c U_{i_c, d_mc} / sum_c w_c`` over occupied cells and atoms; with
deployment priors ``P``, ``sum_i P_i (sum_{c: i_c = i} w_c U_{i, d_mc}) /
(sum_{c: i_c = i} w_c)``, class sums of ``O(C + T)`` terms.

**Truncation.**  The sticks stop after ``T`` atoms
(:func:`~ecjax._src.prob.paired.stick_atoms`), the last taking the mass ``rho``
left by the first ``T - 1``, with ``E[rho] = (A / (1 + A))**(T-1) <=
1e-12``.  Only the split of that mass changes (one cell instead of the rest
of the DP), so a row's yield moves by at most ``rho (max_j U_ij - min_j
U_ij)``: below ``1e-12`` times the utility range in expectation, far below
float32 resolution and any Monte Carlo error.  The total prior mass is
exact.  ``T = 9`` atoms per row at ``K = D = 100`` (``D alpha = 0.02``),
``T = 6`` at ``1000``; ``T = 70`` in all for the paired ``A = 2``.

**Why not the mean over the split.**  Replacing ``sum_t pi_rt U_i,j_rt``
by its expectation given ``U`` (``mean_j U_ij``) would be cheaper still,
but it is ``E[yield | U, h, G]``, not a draw of the yield: the posterior
would be too narrow by the split's share.  The prior's mass is small
(``2`` pseudo-observations against ``N``), but the draws stay exact.

**Cells of count one** (most errors at 100 classes) draw ``h = Exp(1) =
-log(1 - u)``, those of count two ``Gamma(2) = -log((1 - u)(1 - v))`` (a
sum of two ``Exp(1)``), the others ``Gamma(n_c)`` from
:func:`~ecjax._src.prob.sampling.gamma_draws`.

**NEC** (Ferrer 2022a, eq. 4) with the row-normalized costs ``max_j U_ij -
U_ij``: rows of ``R`` sum to 1, so the EC is ``sum_i P_i max_j U_ij -
yield``; the naive EC, ``min_j sum_i P_i (max_j' U_ij' - U_ij)``, reads
the whole drawn matrix, once: the column values ``sum_i P_i max_j' U_ij' -
(P U)_j`` from one ``(K,) @ (K, D)`` product locate the smallest few
columns, and only those are summed in the exact form (:func:`_naive_ec`).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from ecjax._src import inputs as v
from ecjax._src.prob.paired import stick_atoms, stick_weights
from ecjax._src.prob.draw_plan import BLOCK_ELEMENTS
from ecjax._src.prob.sampling import SMALL_UNIT, gamma_draws
from ecjax._src.precision import einsum
from ecjax._src.random_bits import uniform_and_index, uniform_pair

# Cell lists are padded to one of 16 lengths per power of two (at least 8): similar tables share compiled
# programs, and the padding (count-0 cells, drawn but weightless) adds at most 1/16 instead of up to 1/2.
_MIN_BUCKET = 8
_STEPS_PER_OCTAVE = 16


def _bucket(n):
    """The padded length of ``n`` cells: a multiple of ``max(8, 2^ceil(log2 n) / 16)`` (even: the unit cells are
    drawn in two halves)."""
    step = max(_MIN_BUCKET, (1 << (max(n, _MIN_BUCKET) - 1).bit_length()) // _STEPS_PER_OCTAVE)
    return max(_MIN_BUCKET, -(-n // step) * step)


class CellLayout(NamedTuple):
    """Static description of an occupied-cell table (hashable: a jit static argument).

    ``kind``: ``"unpaired"`` (rows ``(m, i)``, one decision per cell) or
    ``"joint"`` (rows: classes; one decision per system and cell).
    ``unit``: the first ``unit`` cells (padded) have count 1, the next
    ``pairs`` count 2; ``rows``:
    ``M K`` (unpaired) or ``K`` (joint); ``prior_rows``: prior fields drawn
    (``M K`` rows, one joint field, or 0 without a prior); ``atoms``: ``T``.
    """

    kind: str
    num_systems: int
    num_classes: int
    num_decisions: int
    unit: int
    pairs: int
    rows: int
    prior_rows: int
    atoms: int
    mass: float  # the prior field's Gamma shape: D alpha per row (unpaired) or A = alpha K D (joint)
    alpha: float


class CellTable(NamedTuple):
    """An occupied-cell table: its layout, the device arrays of its cells and the host Gamma shapes."""

    layout: CellLayout
    flat: jax.Array  # (C, M') int32: i_c D + d of each system's decision (M' = 1 unpaired)
    rows: jax.Array  # (C,) int32: the row of each cell (m K + i unpaired; i joint)
    counts: jax.Array  # (C,) float: n_c (0: padding)
    shapes: jax.Array  # (C - unit - pairs + prior_rows,): Gamma shapes of the cells beyond them, then the priors

    @property
    def elements(self) -> int:
        """Elements per draw (cells and their utilities, atoms): for sizing blocks of draws."""
        lay = self.layout
        return int(self.flat.size) + int(self.counts.shape[0]) + lay.prior_rows * lay.atoms * (lay.num_systems + 2) \
            + lay.num_systems * lay.num_classes


def _padded_split(cells, counts, last_row):
    """Cells with count exactly 1 first, then those of count 2, then the others, each padded to :func:`_bucket` cells
    (count 0, in the last row: the rows stay sorted, column -1 of ``cells``)."""
    parts = []
    for mask in (counts == 1.0, counts == 2.0, counts > 2.0):
        c, n = cells[mask], counts[mask]
        pad = _bucket(c.shape[0]) - c.shape[0]
        filler = np.zeros((pad, c.shape[1]), c.dtype)
        filler[:, -1] = last_row
        parts.append((np.concatenate([c, filler]), np.pad(n, (0, pad))))
    return parts


def _table(kind, cells, rows, counts, *, m, k, d, alpha, prior_rows, mass, row_count):
    """``cells`` ``(C, M')`` flat indices, ``rows`` ``(C,)`` and ``counts`` ``(C,)`` (host) -> :class:`CellTable`.

    The cells are ordered by row (the segment sums are told their indices are sorted).
    """
    order = np.argsort(rows, kind="stable")
    (c1, n1), (c2, n2), (c3, n3) = _padded_split(np.concatenate([cells, rows[:, None]], 1)[order],
                                                 np.asarray(counts, np.float64)[order], row_count - 1)
    both = np.concatenate([c1, c2, c3])
    f = jnp.result_type(float)
    prior_rows = prior_rows if alpha > 0 else 0
    atoms = stick_atoms(mass) if prior_rows else 0
    layout = CellLayout(kind, m, k, d, c1.shape[0], c2.shape[0], row_count, prior_rows, atoms, float(mass),
                        float(alpha))
    shapes = np.concatenate([n3, np.full(prior_rows, mass)]).astype(f)
    return CellTable(layout, v.to_device(both[:, :-1], np.int32), v.to_device(both[:, -1], np.int32),
                     v.to_device(np.concatenate([n1, n2, n3]), f), v.to_device(shapes))


def unpaired_cells(counts: np.ndarray, alpha: float) -> CellTable:
    """The occupied cells of unpaired ``(M, K, D)`` counts (eq. 1): one prior field per row ``(m, i)``."""
    c = np.asarray(counts, np.float64)
    m, k, d = c.shape
    sm, i, j = np.nonzero(c)
    return _table("unpaired", (i * d + j)[:, None], sm * k + i, c[sm, i, j], m=m, k=k, d=d, alpha=alpha,
                  prior_rows=m * k, mass=d * alpha, row_count=m * k)


def joint_cells(cells: np.ndarray, cell_counts: np.ndarray, *, num_classes: int, num_decisions: int,
                alpha: float) -> CellTable:
    """The occupied joint cells ``(C, 1 + M)`` of paired systems: one prior field ``Gamma(A) DP(A)``, ``A = alpha K D``."""
    cells = np.asarray(cells, np.int64)
    k, d, m = num_classes, num_decisions, cells.shape[1] - 1
    keep = np.asarray(cell_counts) > 0
    cells = cells[keep]
    return _table("joint", cells[:, :1] * d + cells[:, 1:], cells[:, 0], np.asarray(cell_counts)[keep], m=m, k=k, d=d,
                  alpha=alpha, prior_rows=1, mass=alpha * k * d, row_count=k)


def plan_elements(table: CellTable) -> int:
    """Elements per draw to plan blocks of draws by (:func:`~ecjax._src.prob.draw_plan.plan_draws`): at least
    :attr:`CellTable.elements`, and enough that a block holds at most ``SMALL_UNIT / K`` draws.

    A block's class-prior draws (``B K`` Gamma variates, with the test set's
    frequencies) then fit the samplers' small unit instead of a unit of
    ``2^18`` (about 20 ms on two CPU cores: ten such blocks were 40 % of a
    100-class comparison), and a block's cells stay in cache (measured at
    100 classes: 0.21 against 0.27 ms a draw in blocks of 40 and 100 draws).
    """
    k = table.layout.num_classes
    return max(table.elements, -(-BLOCK_ELEMENTS * k // SMALL_UNIT))


def variates(table: CellTable) -> int:
    """Random variates per draw: one per (padded) occupied cell, ``T + 1`` per prior field (its atoms, its total)."""
    return int(table.counts.shape[0]) + table.layout.prior_rows * (table.layout.atoms + 1)


# ------------------------------------------------------------------ one draw

class CellDraw(NamedTuple):
    """One block of posterior draws over the occupied cells.

    ``h``: the data parts ``Gamma(n_c)`` of the cell groups of
    :func:`cell_groups` (``(B, size)`` each); ``prior``: ``(B, R)`` prior
    totals ``G_r`` (``R = 0`` without a prior); ``pi``: ``(B, R, T)`` stick
    weights; ``atom_flat``: ``(B, R, T, M')`` flat indices ``i D + d`` of the
    atoms (for the joint field, one per system).
    """

    h: tuple
    prior: jax.Array
    pi: jax.Array
    atom_flat: jax.Array


def cell_groups(layout: CellLayout, num_cells: int) -> tuple[tuple[int, int], ...]:
    """``(start, stop)`` of the cell groups: the two halves of the unit cells (the two words of one hash each), the
    cells of count 2, then the others.  Kept apart, not concatenated: XLA's CPU backend runs a hash fused into a concatenation about ten
    times slower (measured: 64 against 6 ms for 91 x 8192 ``Exp(1)`` draws)."""
    half, pairs_end = layout.unit // 2, layout.unit + layout.pairs
    return (0, half), (half, layout.unit), (layout.unit, pairs_end), (pairs_end, num_cells)


@partial(jax.jit, static_argnames=("layout", "num_draws"))
def cell_draw(key: jax.Array, shapes: jax.Array, counts: jax.Array, *, layout: CellLayout,
              num_draws: int) -> CellDraw:
    """``num_draws`` draws over the occupied cells (eq. 1): ``Exp(1)`` for the unit cells, ``Gamma(2)`` as the sum of
    two ``Exp(1)`` for the cells of count 2, ``Gamma(n_c)`` for the others and ``Gamma`` of the prior masses
    (``shapes``, :func:`~ecjax._src.prob.sampling.gamma_draws`), the sticks."""
    f = shapes.dtype
    b = num_draws
    key_gamma, key_unit, key_sticks, key_atoms, key_pairs = jax.random.split(key, 5)
    gammas = gamma_draws(key_gamma, shapes, b)
    half = layout.unit // 2
    units = uniform_pair(key_unit, (b, half))
    c1, c2, c = layout.unit, layout.unit + layout.pairs, counts.shape[0]
    # Exp(1) = -log(1 - u) (1 - u exact in float32); the padding cells have count 0.
    h = tuple(-jnp.log1p(-x).astype(f) * counts[i * half:(i + 1) * half] for i, x in enumerate(units))
    # Gamma(2) = -log((1 - u)(1 - v)): the two words of one hash, one log (the product is at least 2^-46); the
    # Marsaglia-Tsang sampler spends about ten times that on a variate (most errors at 100 classes are such cells).
    u_pair, v_pair = uniform_pair(key_pairs, (b, layout.pairs))
    h = h + (-jnp.log((1.0 - u_pair) * (1.0 - v_pair)).astype(f) * (counts[c1:c2] > 0), gammas[:, :c - c2])
    r, t = layout.prior_rows, layout.atoms
    prior = gammas[:, c - c2:]
    k, d = layout.num_classes, layout.num_decisions
    if r == 0:
        return CellDraw(h, prior, jnp.zeros((b, 0, 0), f), jnp.zeros((b, 0, 0, 1), jnp.int32))
    if layout.kind == "unpaired":
        # Row (m, i): its atoms are decisions of class i, drawn uniformly; one hash per atom (stick, decision).
        v_units, dec = uniform_and_index(key_sticks, (b, r, t), d)
        pi = stick_weights(v_units[..., 1:].astype(f), layout.mass)
        row_class = (jnp.arange(r) % k)[None, :, None]
        return CellDraw(h, prior, pi, (row_class * d + dec)[..., None])
    v_units, cls = uniform_and_index(key_sticks, (b, r, t), k)
    pi = stick_weights(v_units[..., 1:].astype(f), layout.mass)
    dec = uniform_and_index(key_atoms, (b, r, t, layout.num_systems), d)[1]
    return CellDraw(h, prior, pi, cls[..., None] * d + dec)


# ------------------------------------------------------------- the yields

def _gather(u_flat, index):
    """``u_flat`` ``(B, K D)`` or ``(K D,)`` at ``index`` ``(C,)`` (the same for every draw) or ``(B, X)``."""
    if index.ndim == 1 or u_flat.ndim == 1:  # a fixed matrix is read where asked, not broadcast to every draw first
        return jnp.take(u_flat, index, axis=-1, mode="clip")
    u = jnp.broadcast_to(u_flat, (index.shape[0], u_flat.shape[-1]))
    return jnp.take_along_axis(u, index, axis=-1, mode="clip")


def _scatter_rows(x, index, num_rows):
    """``(B, X)`` values added per draw into ``(B, num_rows)`` at ``index`` ``(B, X)``."""
    return jnp.zeros((x.shape[0], num_rows), x.dtype).at[jnp.arange(x.shape[0])[:, None], index].add(x)


class RowSums(NamedTuple):
    """Per row: ``den`` ``(B, M, K)`` (unpaired) or ``(B, K)`` (joint) weights; ``num``: for each utility matrix
    ``(B, M, K)`` weighted utilities; ``counted``: ``(B, M)`` ``sum_c W_c U_c`` of the first matrix (or None)."""

    den: jax.Array
    num: tuple
    counted: jax.Array | None


def _occupied_sums(draw, table, utilities, count_weights):
    """All the occupied cells' row sums of one draw in one sorted segment sum per cell group, and ``sum_c W_c U_c``.

    Columns: the weights ``h``; ``h U`` for each utility matrix and system
    (``U`` gathered at the cells: a fixed matrix once for the block, a
    drawn one per draw).  ``count_weights`` ``(C, M', M)`` or None: fixed
    weights of the first matrix at the cells, summed per system without a
    segment sum.
    """
    lay = table.layout
    m_cols = table.flat.shape[1]
    b = draw.prior.shape[0]
    total, counted = 0.0, None
    for h, (a, e) in zip(draw.h, cell_groups(lay, table.counts.shape[0])):
        gathered = [[_gather(u, table.flat[a:e, j]) for j in range(m_cols)] for u in utilities]
        cols = [h] + [h * g for per_u in gathered for g in per_u]
        x = jnp.stack([jnp.broadcast_to(c, (b, e - a)) for c in cols], -1)  # (B, size, L)
        total = total + jax.ops.segment_sum(jnp.moveaxis(x, 1, 0), table.rows[a:e], num_segments=lay.rows,
                                            indices_are_sorted=True)  # (rows, B, L)
        if count_weights is not None:
            part = einsum("bcx,cxm->bm", jnp.stack(gathered[0], -1), count_weights[a:e])
            counted = part if counted is None else counted + part
    return jnp.moveaxis(total, 0, 1), counted  # (B, rows, L), (B, M)


def row_sums(draw: CellDraw, table: CellTable, utilities: tuple, *,
             count_weights: jax.Array | None = None) -> RowSums:
    """The row sums of eq. (1) (unpaired) or the class sums of the joint draw, for each of ``utilities``.

    Unpaired: ``num_mi = sum_{O_r} h U + G_r sum_t pi_rt U``, ``den_mi =
    sum_{O_r} h + G_r``, and a row whose weights are all 0 (no samples,
    ``G_r`` underflowed) is its split, ``num = sum_t pi_rt U``, ``den = 1``;
    joint: the class sums of the occupied cells and the atoms.  Each of
    ``utilities``: ``(B, K D)`` drawn or ``(K D,)`` fixed;
    ``count_weights``: see :func:`_occupied_sums`.
    """
    lay = table.layout
    b, k, m = draw.prior.shape[0], lay.num_classes, lay.num_systems
    sums, counted = _occupied_sums(draw, table, utilities, count_weights)
    n_u = len(utilities)
    if lay.kind == "unpaired":
        den = sums[..., 0]  # (B, M K)
        num = [sums[..., 1 + s] for s in range(n_u)]
        if lay.prior_rows:
            splits = [(draw.pi * _gather(u, draw.atom_flat.reshape(b, -1)).reshape(draw.pi.shape)).sum(-1)
                      for u in utilities]
            full = den + draw.prior
            empty = full <= 0
            num = [jnp.where(empty, x, y + draw.prior * x) for x, y in zip(splits, num)]
            den = jnp.where(empty, 1.0, full)
        return RowSums(den.reshape(b, m, k), tuple(x.reshape(b, m, k) for x in num), counted)
    den = sums[..., 0]  # (B, K)
    num = [sums[..., 1 + s * m:1 + (s + 1) * m].swapaxes(1, 2) for s in range(n_u)]  # (B, M, K)
    if lay.prior_rows:
        weight = (draw.prior[..., None] * draw.pi).reshape(b, -1)  # (B, T): G pi_t
        cls = (draw.atom_flat[..., 0] // lay.num_decisions).reshape(b, -1)
        den = den + _scatter_rows(weight, cls, k)
        num = [x + jnp.stack([_scatter_rows(weight * _gather(u, draw.atom_flat[..., j].reshape(b, -1)), cls, k)
                              for j in range(m)], 1) for u, x in zip(utilities, num)]
    return RowSums(den, tuple(num), counted)


def _yields(num, den, kind, priors):
    """``(B, M)`` yields and the ``(B, K)`` priors used, from row sums (``priors`` None: joint, the draw's classes)."""
    if kind == "unpaired":
        p = jnp.broadcast_to(priors, (num.shape[0], num.shape[-1]))
        return (p[:, None, :] * num / den).sum(-1), p
    if priors is None:
        total = den.sum(-1)
        return num.sum(-1) / total[:, None], den / total[:, None]
    p = jnp.broadcast_to(priors, den.shape)
    row = jnp.where(den[:, None, :] > 0, num / jnp.where(den > 0, den, 1.0)[:, None, :], 0.0)
    return (p[:, None, :] * row).sum(-1), p


# Columns of the naive EC summed in the exact form: the smallest of their values by one product, and a few more.
_NAIVE_CANDIDATES = 8


def _naive_ec(top, u, p, pu=None):
    """``min_j sum_i P_i (top_i - U_ij)`` of ``top`` ``(B, K)`` row maxima, ``u`` ``(B, K, D)``, ``p`` ``(B, K)``.

    The exact form sums the normalized costs ``top_i - U_ij`` themselves,
    so a decision best for every class gives exactly 0 (a NaN NEC), not a
    rounding error; over every column it costs a ``(B, K, D)`` array of
    them and a product with it.  Here one product with ``U`` gives every
    column's value as ``sum_i P_i top_i - (P U)_j``, within a rounding
    error ``e`` of its exact form, and only the :data:`_NAIVE_CANDIDATES`
    smallest of those are summed in the exact form.  The result is the
    exact form's minimum whenever its column is a candidate, and otherwise
    within ``2 e`` of it (every candidate is then within ``2 e``): the
    float32 rounding of the sums themselves.  ``pu``: ``(B, D)`` ``P U`` if already computed.
    """
    pu = einsum("bi,bij->bj", p, u) if pu is None else pu
    approx = (p * top).sum(-1)[:, None] - pu  # (B, D)
    _, cand = jax.lax.top_k(-approx, min(_NAIVE_CANDIDATES, u.shape[-1]))  # (B, C)
    columns = jnp.take_along_axis(u, cand[:, None, :], axis=-1)  # (B, K, C)
    return einsum("bi,bij->bj", p, top[..., None] - columns).min(-1)


def _ec_nec(y, p, u, pu=None):
    """EC ``-yield`` and NEC (module docstring) of yields ``(B, M)``, priors ``(B, K)`` and utilities ``(B, K, D)``.

    The naive EC in the exact form of the normalized costs ``max_j' U_ij' - U_ij`` (:func:`_naive_ec`; ``pu``: its
    product ``P U``, if computed with others).
    """
    top = u.max(-1)  # (B, K)
    ec_normalized = (p * top).sum(-1)[:, None] - y
    naive = _naive_ec(top, u, p, pu)
    nec = jnp.where(naive[:, None] > 0, ec_normalized / jnp.where(naive > 0, naive, 1.0)[:, None], jnp.nan)
    return -y, nec


def evaluate(draw: CellDraw, table: CellTable, utilities: jax.Array,
             priors: jax.Array | None) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Yield, EC and NEC draws ``(B, M)`` from a draw and ``(B, K, D)`` utilities (as ``compare``'s ``_evaluate``).

    ``priors``: ``(B, K)`` or ``(K,)`` class priors; ``None`` (joint only):
    the test set's class frequencies, the class marginals of the draw.  EC
    ``= -yield``; NEC: the EC of the row-normalized costs ``max_j U_ij -
    U_ij``, ``sum_i P_i max_j U_ij - yield``, over the naive EC (module
    docstring); NaN where the naive EC is 0.
    """
    b = draw.prior.shape[0]
    u = jnp.broadcast_to(utilities, (b,) + utilities.shape[-2:])
    sums = row_sums(draw, table, (u.reshape(b, -1),))
    y, p = _yields(sums.num[0], sums.den, table.layout.kind, priors)
    return (y,) + _ec_nec(y, p, u)


class ComponentParts(NamedTuple):
    """The fixed parts of the doubt components (see :func:`cell_outputs`): ``U_hat`` ``(K, D)``, ``costs_coef`` and
    ``priors_rows`` ``(M, K)``, and at the cells of a table (:func:`component_parts`) the weights
    ``costs_coef_m,i_c n_c`` ``(C, M', M)`` of ``costs_only``."""

    u_hat: jax.Array
    costs_coef: jax.Array
    priors_rows: jax.Array
    count_weights: jax.Array


def component_parts(table: CellTable, u_hat: np.ndarray, costs_coef: np.ndarray,
                    priors_rows: np.ndarray) -> ComponentParts:
    """:class:`ComponentParts` of a table, its count weights computed once on the host (the draws then sum them per
    system without a segment sum)."""
    lay = table.layout
    flat, rows, counts = (np.asarray(x) for x in (table.flat, table.rows, table.counts))
    coef = np.asarray(costs_coef, np.float64)
    c, m_cols, m = flat.shape[0], flat.shape[1], lay.num_systems
    weights = np.zeros((c, m_cols, m))
    if lay.kind == "unpaired":  # row m K + i: one system per cell
        system, cls = rows // lay.num_classes, rows % lay.num_classes
        weights[np.arange(c), 0, system] = coef[system, cls] * counts
    else:
        for j in range(m):
            weights[:, j, j] = coef[j, rows] * counts
    f = jnp.result_type(float)
    return ComponentParts(*(v.to_device(np.asarray(x, np.float64), f) for x in (u_hat, costs_coef, priors_rows,
                                                                                  weights)))


def cell_outputs(key: jax.Array, table: CellTable, u: jax.Array, p_all: jax.Array, p_rates: jax.Array,
                 parts: ComponentParts, *, joint_priors: bool, block: int, components: tuple) -> dict:
    """One block of fixed counts over the occupied cells: the ``all`` draws and the doubt components' yields.

    ``costs_only``: ``sum_i c_mi (sum_O n U + alpha sum_j U_ij)`` (the
    posterior mean weights' utilities per row) with ``costs_coef`` ``c_mi
    = P_i / (n_m,i + D alpha)``, or ``1 / (N + K D alpha)`` with the test
    set's class frequencies; ``priors_only``: ``sum_i P_i priors_rows_mi``,
    ``priors_rows_mi = sum_j U_hat_ij E[R_m,ij]``; ``rates_only``: the
    draw's yields under ``U_hat`` and ``p_rates``.
    """
    # Two programs: the draw, then the outputs.  As one program they took 2.4 times the CPU time of the two (66
    # against 27 ms a block of 91 draws at 100 classes; an optimization barrier between them did not help).
    draw = cell_draw(key, table.shapes, table.counts, layout=table.layout, num_draws=block)
    return _outputs(draw, table.flat, table.rows, table.counts, u, p_all, p_rates, parts, layout=table.layout,
                    joint_priors=joint_priors, block=block, components=components)


@partial(jax.jit, static_argnames=("layout", "joint_priors", "block", "components"))
def _outputs(draw, flat, rows, counts, u, p_all, p_rates, parts, *, layout, joint_priors, block, components):
    table = CellTable(layout, flat, rows, counts, jnp.zeros(0))
    b, costs = block, "costs_only" in components
    uu = jnp.broadcast_to(u, (b,) + u.shape[-2:])
    fixed = "rates_only" in components
    utilities = (uu.reshape(b, -1),) + ((parts.u_hat.reshape(-1),) if fixed else ())
    sums = row_sums(draw, table, utilities, count_weights=parts.count_weights if costs else None)
    priors = None if joint_priors else p_all
    y, p = _yields(sums.num[0], sums.den, layout.kind, priors)
    # One read of the drawn matrices for the naive EC's P U and costs_only's sum_ij c_mi U_ij.
    rows_of = [p[:, None, :]] + ([jnp.broadcast_to(parts.costs_coef, (b,) + parts.costs_coef.shape)] if costs else [])
    products = einsum("bxi,bij->bxj", jnp.concatenate(rows_of, 1), uu)  # (B, 1 (+ M), D)
    ec, nec = _ec_nec(y, p, uu, products[:, 0])
    out = {"yields": y, "ec": ec, "nec": nec}
    if costs:
        out["costs_only"] = sums.counted + layout.alpha * products[:, 1:].sum(-1)
    if "priors_only" in components:
        out["priors_only"] = jnp.broadcast_to((jnp.atleast_2d(p_all)[:, None, :] * parts.priors_rows).sum(-1),
                                              (block, layout.num_systems))
    if "rates_only" in components:
        out["rates_only"] = _yields(sums.num[1], sums.den, layout.kind, None if joint_priors else p_rates)[0]
    return out
