"""Sweep axes: what is swept (cost matrices, priors, utility coordinates) and how.

An :class:`Axis` is ``P`` points whose values are computed *from the point
index* inside the jitted sweep step, so a sweep over ``10^8`` cost ratios
never materializes ``10^8`` matrices.  Constructors:

* :func:`values`: user-supplied arrays (``(B, K, D)`` matrices, ``(B, K)``
  priors, or any pytree with a leading axis);
* :func:`linspace`: evenly (or log-evenly) spaced scalars;
* :func:`cost_ratios`: binary costs ``[[0, 1], [r, 0]]`` over a range of
  ratios ``r = c_10 / c_01`` (a miss costs ``r`` false alarms, Ferrer (2025) §4.1);
* :func:`effective_priors`: binary priors ``(1 - p, p)`` (with 0-1 costs the
  Bayes threshold on the LLR is ``-logit(p)``, Ferrer (2022b) §4.8.1);
* :func:`simplex`: a regular lattice of priors on the probability simplex;
* :func:`random`: draws of any sampler ``sample(key, n) -> (n, ...)`` (for
  example a utility prior), one independent key per point;
* :func:`product` (Cartesian product, last axis fastest) and :func:`transform`
  (apply a per-point function, e.g. build a cost-matrix family).

Every axis function is hashable (a frozen dataclass or a module-level
function) so compiled sweeps are reused across calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v


@dataclass(frozen=True, eq=False)
class Axis:
    """``P = prod(shape)`` sweep points computed from their flat indices.

    Attributes:
      shape: the sweep shape (one entry per swept dimension; C order, last
        dimension fastest).
      fn: ``(data, idx) -> values``: values of the points ``idx`` (an int32
        vector), each leaf with leading axis ``len(idx)``.  Pure, traceable,
        hashable.
      data: arrays ``fn`` reads (passed to the jitted step as arguments, not
        baked in as constants).
      coords: per-dimension host coordinates for labelling results (a tuple
        of 1-D arrays, or ``None`` entries where a dimension has none).
    """

    shape: tuple
    fn: Callable
    data: Any = ()
    coords: tuple = ()

    @property
    def size(self) -> int:
        return int(math.prod(self.shape))

    def __call__(self, idx):
        return self.fn(self.data, idx)

    def values(self, indices: ArrayLike | None = None) -> Any:
        """Materialize the values of some (default: all) points on the host."""
        idx = np.arange(self.size) if indices is None else np.asarray(indices)
        return jax.tree_util.tree_map(np.asarray, _materialize(self.fn, self.data, jnp.asarray(idx, jnp.int32)))


@partial(jax.jit, static_argnames=("fn",))
def _materialize(fn, data, idx):
    return fn(data, idx)


# ------------------------------------------------------------------ arrays

def take(data: Any, idx: jax.Array) -> Any:
    return jax.tree_util.tree_map(lambda a: jnp.take(a, idx, axis=0, mode="clip"), data)


def values(array: Any, *, name: str = "values") -> Axis:
    """A sweep over user-supplied values: the leading axis of ``array`` is swept.

    ``array`` may be a pytree (a dict of arrays sharing the leading axis).
    Empty arrays and NaN/inf raise :class:`InputError`.
    """
    leaves, treedef = jax.tree_util.tree_flatten(array)
    arrs = []
    for leaf in leaves:
        a = v.check_numbers(v.as_array(leaf, name, min_ndim=1), name, booleans=True)
        arrs.append(jnp.asarray(a, dtype=jnp.result_type(float) if np.asarray(a).dtype.kind == "f" else None))
    b = v.check_leading_axis(arrs, name)
    return Axis((b,), take, jax.tree_util.tree_unflatten(treedef, arrs), (None,))


# ------------------------------------------------------------------ scalars

@dataclass(frozen=True)
class _Linspace:
    num: int
    log: bool

    def __call__(self, data, idx):
        lo, hi = data
        t = idx.astype(lo.dtype) / max(self.num - 1, 1)
        return jnp.exp(jnp.log(lo) + t * (jnp.log(hi) - jnp.log(lo))) if self.log else lo + t * (hi - lo)


def _linspace_coords(lo, hi, num, log):
    return np.geomspace(lo, hi, num) if log else np.linspace(lo, hi, num)


def linspace(lo: float, hi: float, num: int, *, log: bool = False) -> Axis:
    """``num`` scalars from ``lo`` to ``hi`` (geometrically spaced with ``log=True``)."""
    num = v.as_scalar(num, "num", integer=True, low=1)
    lo, hi = v.as_range(lo, hi, "linspace", minimum=0.0 if log else None, exclusive=True, why=" (log-spaced)")
    data = (jnp.asarray(lo, jnp.float32), jnp.asarray(hi, jnp.float32))
    return Axis((num,), _Linspace(num, bool(log)), data, (_linspace_coords(lo, hi, num, log),))


@dataclass(frozen=True)
class _Transform:
    inner: Callable
    fn: Callable

    def __call__(self, data, idx):
        return self.fn(self.inner(data, idx))


def transform(axis: Axis, fn: Callable) -> Axis:
    """An axis whose values are ``fn(values)`` (``fn`` vectorized over the leading axis, hashable).

    Example: a family of 10-class cost matrices ``c(alpha)`` from a
    :func:`linspace` over ``alpha``.
    """
    return Axis(axis.shape, _Transform(axis.fn, fn), axis.data, axis.coords)


def _binary_costs_from_ratio(r):
    """``[[0, 1], [r, 0]]`` (rows = true class): a miss of class 1 costs ``r``."""
    zero, one = jnp.zeros_like(r), jnp.ones_like(r)
    return jnp.stack([jnp.stack([zero, one], -1), jnp.stack([r, zero], -1)], -2)


def cost_ratios(lo: float, hi: float, num: int, *, log: bool = True) -> Axis:
    """Binary costs ``c = [[0, 1], [r, 0]]`` for ``num`` ratios ``r = c_10 / c_01`` in ``[lo, hi]``.

    ``c_10`` is the cost of deciding 0 for a sample of class 1 (a miss when 1
    is the positive class); false alarms cost 1.  The Bayes decision is 1
    when the log posterior odds exceed ``-log r`` (Ferrer 2025, eq. 20).
    """
    num = v.as_scalar(num, "num", integer=True, low=1)
    lo, hi = v.as_range(lo, hi, "cost_ratios", minimum=0.0, exclusive=log, why=" (log-spaced)" if log else "")
    base = linspace(lo, hi, num, log=log)
    return transform(base, _binary_costs_from_ratio)


def _binary_priors(p):
    return jnp.stack([1.0 - p, p], -1)


def effective_priors(lo: float, hi: float, num: int, *, logit: bool = True) -> Axis:
    """Binary priors ``(1 - p, p)`` for ``num`` values of ``p`` in ``[lo, hi]`` inside ``(0, 1)``.

    With ``logit=True`` the points are evenly spaced in ``logit(p)`` (the
    Bayes threshold on the LLR is ``-logit(p)`` for 0-1 costs), else in ``p``.
    Sweeping the *effective* prior of a cost matrix (Ferrer 2022b, §4.8.1) is
    sweeping these priors with 0-1 costs.
    """
    num = v.as_scalar(num, "num", integer=True, low=1)
    lo, hi = v.as_range(lo, hi, "effective_priors", minimum=0.0, maximum=1.0, exclusive=True)
    if logit:
        lg = linspace(math.log(lo / (1 - lo)), math.log(hi / (1 - hi)), num)
        axis = transform(lg, _sigmoid_priors)
        coords = (1.0 / (1.0 + np.exp(-lg.coords[0])),)
    else:
        axis = transform(linspace(lo, hi, num), _binary_priors)
        coords = (np.linspace(lo, hi, num),)
    return Axis(axis.shape, axis.fn, axis.data, coords)


def _sigmoid_priors(t):
    return _binary_priors(jax.nn.sigmoid(t))


def simplex(num_classes: int, resolution: int) -> Axis:
    """All priors ``(n_1, ..., n_K) / resolution`` with non-negative integers summing to ``resolution``.

    ``C(resolution + K - 1, K - 1)`` points, including the vertices and edges
    of the simplex (priors with zeros: classes absent from the deployment).
    """
    k = v.as_scalar(num_classes, "num_classes", integer=True, low=2)
    r = v.as_scalar(resolution, "resolution", integer=True, low=1)
    size = math.comb(r + k - 1, k - 1)
    if size > 10**7:
        raise v.InputError(f"the simplex lattice has {size} points; lower `resolution` (it is materialized)")
    pts = _compositions(r, k).astype(np.float64) / r
    return values(pts, name="priors")


def _compositions(total, parts):
    if parts == 1:
        return np.array([[total]])
    out = []
    for first in range(total, -1, -1):
        rest = _compositions(total - first, parts - 1)
        out.append(np.concatenate([np.full((len(rest), 1), first), rest], 1))
    return np.concatenate(out, 0)


# ------------------------------------------------------------------ random

@dataclass(frozen=True)
class _Random:
    sample: Callable

    def __call__(self, key, idx):
        def one(i):
            out = self.sample(jax.random.fold_in(key, i), 1)
            return jax.tree_util.tree_map(lambda a: a[0], out)

        return jax.vmap(one)(idx)


def random(sample: Callable[[jax.Array, int], Any], key: jax.Array, num: int) -> Axis:
    """``num`` independent draws of ``sample(key, n) -> (n, ...)`` (e.g. a utility prior).

    Point ``i`` is ``sample(fold_in(key, i), 1)[0]``: the same key gives the
    same draws whatever the chunk size, the number of devices or the other
    swept axes.  ``sample`` must be traceable and hashable (a function).
    """
    num = v.as_scalar(num, "num", integer=True, low=1)
    v.check_callable(sample, "sample", "a callable sample(key, n)")
    key = v.as_key(key)
    return Axis((num,), _Random(sample), key, (None,))


# ------------------------------------------------------------------ products

@dataclass(frozen=True)
class _Product:
    fns: tuple
    shapes: tuple

    def __call__(self, data, idx):
        sizes = [math.prod(s) for s in self.shapes]
        out = []
        rem = idx
        # C order: the last axis varies fastest.
        strides = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]
        for fn, d, stride, size in zip(self.fns, data, strides, sizes):
            out.append(fn(d, (rem // stride) % size))
        return tuple(out)


def product(*axes: Axis) -> Axis:
    """The Cartesian product of axes (C order: the last axis varies fastest).

    Values are tuples, one entry per axis.
    """
    if not axes:
        raise v.InputError("`product` needs at least one axis")
    for a in axes:
        v.check_instance(a, Axis, "axes", "ecjax.sweep.grids.Axis")
    shape = tuple(s for a in axes for s in a.shape)
    coords = tuple(c for a in axes for c in (a.coords or (None,) * len(a.shape)))
    return Axis(shape, _Product(tuple(a.fn for a in axes), tuple(a.shape for a in axes)),
                tuple(a.data for a in axes), coords)
