"""Priors over utility (or cost) matrices, as NumPyro models.

A utility prior is a plain NumPyro model with a site named ``"utility"``
(or ``"cost"``, utilities being negated costs) of shape ``(K, D)``: rows are
true classes, columns decisions (Dyrland et al. (2022) writes them transposed).  The
model functions below take their parameters as arguments, as NumPyro models
do; the constructors (:func:`intervals`, :func:`truncated_normal`,
:func:`cost_ratio`, :func:`seed004_uniform`, :func:`seed004_gaussian`,
:func:`from_model`) bind the parameters, validate them, and wrap the model
in a :class:`UtilityPrior` that also knows the closed-form expected
utility matrix (Dyrland et al. 2022, eq. 18) where one exists.

Draws come from :class:`numpyro.infer.Predictive`.  Constraints (the
hexagon of Dyrland et al. (2022) Fig. 1, "a correct decision is never worth less than a
wrong one") are written in the model as ``numpyro.factor`` sites, so the
model's density is the constrained one; ``Predictive`` ignores factors, so
:meth:`UtilityPrior.sample` applies the same constraint by rejection, and
raises :class:`ecjax.InputError` when the constraints leave no support.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from collections.abc import Sequence
from functools import partial
from typing import Any, Callable, Literal, overload

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

# NumPyro is imported inside the models and the NUTS/Predictive functions: the samplers that `compare` and the
# command line use do not need it, and importing it (with the scipy it pulls in) costs about 0.45 s per process.
from ecjax._src import inputs as v
from ecjax._src.costs import StructuredCosts, utility_from_xy
from ecjax._src.prob.sampling import rejection_sample
from ecjax._src.random_bits import uniform

SITES = ("utility", "cost")


# ------------------------------------------------------------------ helpers

def _as_utilities(value, site):
    # "+ 0.0" turns the -0.0 of negated zero costs into 0.0.
    return value if site == "utility" else -value + 0.0


# The key under which a compiled sampler also returns its draws as utility matrices (negated costs, float).
_UTILITIES = "_utilities"


def _with_utilities(draw_sites, site, keep, key):
    """The sites ``keep`` of ``draw_sites(key)`` (a dict of sites) plus :data:`_UTILITIES`, in one compiled program.

    Only what is read comes out: an unconstrained prior keeps no site, so
    the program writes one ``(S, K, D)`` array, not three (the sites, the
    unit draws, the utilities: at ``1000 x 1000`` that was a third of a
    draw's time).
    """
    draws = dict(draw_sites(key))
    out = {name: draws[name] for name in keep}
    out[_UTILITIES] = _as_utilities(jnp.asarray(draws[site], dtype=jnp.result_type(float)), site)
    return out


def correct_dominates(utilities: jax.Array) -> jax.Array:
    """``(..., )`` bool: ``U_ii >= U_ij`` for every true class ``i`` and decision ``j``.

    Decision ``i`` is the correct decision for class ``i`` (the first ``K``
    columns); extra columns (abstention, other actions) are also never worth
    more than the correct decision.
    """
    k = utilities.shape[-2]
    diag = jnp.diagonal(utilities[..., :, :k], axis1=-2, axis2=-1)
    return jnp.all(utilities <= diag[..., :, None], axis=(-2, -1))


def _dominance_factor(utilities):
    import numpyro
    numpyro.factor("correct_dominates", jnp.where(correct_dominates(utilities), 0.0, -jnp.inf))


def in_hexagon(x: jax.Array, y: jax.Array) -> jax.Array:
    """The set of Dyrland et al. (2022) Fig. 1: ``|x| <= 1``, ``|y| <= 1``, ``|x - y| <= 1``."""
    return (jnp.abs(x) <= 1.0) & (jnp.abs(y) <= 1.0) & (jnp.abs(x - y) <= 1.0)


# ------------------------------------------------------------------- models

def interval_model(low: jax.Array, high: jax.Array, *, site: str = "utility", dominance: bool = False) -> None:
    """Independent uniform entries: ``U_ij ~ Uniform(low_ij, high_ij)``.

    Entries with ``low == high`` are fixed.  ``dominance=True`` restricts the
    support to matrices where the correct decision is never worth less than
    a wrong one (a ``numpyro.factor``).
    """
    import numpyro
    import numpyro.distributions as dist
    unit = numpyro.sample("unit", dist.Uniform(0.0, 1.0).expand(jnp.shape(low)).to_event(2))
    value = numpyro.deterministic(site, low + (high - low) * unit)
    if dominance:
        _dominance_factor(_as_utilities(value, site))


def interval_draws(low: ArrayLike, high: jax.Array, key: jax.Array, *, site: str = "utility",
                   num_draws: int) -> dict[str, jax.Array]:
    """``num_draws`` forward draws of :func:`interval_model`: ``{"unit", site}`` (factors ignored, as by ``Predictive``).

    Equal in distribution to NumPyro's ``Predictive`` of the model, drawn
    with :func:`~ecjax._src.random_bits.uniform` (one counter-based hash per
    entry) instead of one split key per draw, whose threefry program takes
    about 1.5 s to compile on two CPU cores.
    """
    low = jnp.asarray(low)
    unit = uniform(key, (num_draws,) + low.shape, jnp.result_type(low.dtype, jnp.float32))
    return {"unit": unit, site: low + (high - low) * unit}


def truncated_normal_model(nominal: ArrayLike, scale: ArrayLike, low: ArrayLike, high: ArrayLike, *,
                           site: str = "utility", dominance: bool = False) -> None:
    """Entries ``~ Normal(nominal_ij, scale_ij)`` truncated to ``[low_ij, high_ij]``.

    Dyrland et al. (2022) §4.2 (iii): the error around a true utility matrix is a
    truncated Gaussian per entry.  Entries with ``scale == 0`` are fixed at
    the nominal value.
    """
    import numpyro
    from ecjax._src.prob.distributions import TruncatedStandardNormal
    nominal, scale, low, high = jnp.broadcast_arrays(nominal, scale, low, high)
    free = scale > 0
    s = jnp.where(free, scale, 1.0)
    # Standardized bounds; fixed entries get an unbounded dummy and are replaced below.
    lo = jnp.where(free, (low - nominal) / s, -jnp.inf)
    hi = jnp.where(free, (high - nominal) / s, jnp.inf)
    z = numpyro.sample("z", TruncatedStandardNormal(lo, hi).to_event(2))
    value = numpyro.deterministic(site, jnp.where(free, nominal + s * z, nominal))
    if dominance:
        _dominance_factor(_as_utilities(value, site))


def cost_ratio_model(low: float, high: float, *, distribution: str = "log_uniform", positive: int = 1,
                     interval_mass: float = 0.95) -> None:
    """Binary costs ``c = [[0, 1], [r, 0]]`` (for ``positive=1``) with an uncertain ratio ``r``.

    ``r`` is the cost of a miss (true ``positive`` decided as the other
    class) in units of a false alarm.  ``"log_uniform"``: ``log r`` uniform
    on ``[log low, log high]``; ``"log_normal"``: ``[low, high]`` is the
    central ``interval_mass`` interval of a log-normal.
    """
    import numpyro
    import numpyro.distributions as dist
    if distribution == "log_uniform":
        r = numpyro.sample("ratio", dist.LogUniform(low, high))
    else:
        loc, sigma = _log_normal_params(low, high, interval_mass)
        r = numpyro.sample("ratio", dist.LogNormal(loc, sigma))
    miss = jnp.zeros((2, 2)).at[positive, 1 - positive].set(1.0)
    alarm = jnp.zeros((2, 2)).at[1 - positive, positive].set(1.0)
    numpyro.deterministic("cost", alarm + r * miss)


def seed004_uniform_model() -> None:
    """Uniform over the normalized binary utility space of Dyrland et al. (2022) Fig. 1 (§4.2 (i)).

    ``(x, y)`` uniform on the hexagon ``|x|, |y|, |x - y| <= 1``; the utility
    matrix is eq. 13 (rows = true class), built by :func:`ecjax.costs.utility_from_xy`.
    """
    import numpyro
    import numpyro.distributions as dist
    x = numpyro.sample("x", dist.Uniform(-1.0, 1.0))
    y = numpyro.sample("y", dist.Uniform(-1.0, 1.0))
    numpyro.factor("in_hexagon", jnp.where(in_hexagon(x, y), 0.0, -jnp.inf))
    numpyro.deterministic("utility", utility_from_xy(x, y))


def seed004_gaussian_model(center: Sequence[float] = (0.0, 0.0), sd: float = 1.0 / 3.0) -> None:
    """Dyrland et al. (2022) §4.2 (i): a Gaussian in the ``(x, y)`` coordinates of eq. 13, truncated to the hexagon.

    Dyrland et al.'s choice is centred on the identity matrix (``(0, 0)``) with
    standard deviation 1/3 in each coordinate (its Fig. 4).
    """
    import numpyro
    import numpyro.distributions as dist
    x = numpyro.sample("x", dist.Normal(center[0], sd))
    y = numpyro.sample("y", dist.Normal(center[1], sd))
    numpyro.factor("in_hexagon", jnp.where(in_hexagon(x, y), 0.0, -jnp.inf))
    numpyro.deterministic("utility", utility_from_xy(x, y))


# -------------------------------------------------------------- the wrapper

_SAMPLERS: OrderedDict = OrderedDict()  # compiled samplers shared between equal priors, oldest first
_MAX_SHARED_SAMPLERS = 32


def _value_key(x):
    """A hashable stand-in for a bound model argument: arrays by shape, dtype and content."""
    if isinstance(x, (np.ndarray, jax.Array, np.generic)):
        a = np.asarray(x)
        return ("array", a.shape, a.dtype.str, a.tobytes())
    if isinstance(x, (tuple, list)):
        return (type(x).__name__,) + tuple(_value_key(y) for y in x)
    hash(x)  # TypeError for anything else unhashable
    return x


def _model_key(model):
    """A hashable identity of a model with its bound arguments (``functools.partial``), or ``None`` if it has none."""
    try:
        if isinstance(model, partial):
            inner = _model_key(model.func)
            return None if inner is None else (inner, tuple(_value_key(a) for a in model.args),
                                               tuple((k, _value_key(v)) for k, v in sorted(model.keywords.items())))
        hash(model)
        return model
    except TypeError:
        return None


@dataclass(frozen=True, eq=False)
class UtilityPrior:
    """A NumPyro model over ``(K, D)`` utility or cost matrices, with what is known about it.

    Attributes:
      model: a NumPyro model called without arguments; it has a site named
        ``site`` of shape ``(K, D)``.
      site: ``"utility"`` or ``"cost"``.
      shape: ``(K, D)``.
      constraint: ``None`` or a function of the ``Predictive`` draws (a dict)
        returning a ``(n,)`` bool mask; it mirrors the model's factor sites.
      constraint_sites: the sites ``constraint`` reads.
      mean: the closed-form expected *utility* matrix (Dyrland et al. 2022, eq. 18), or
        ``None`` when only Monte Carlo can give it.
      mean_method: how ``mean`` was obtained (``"closed_form"``,
        ``"quadrature"``) or ``"monte_carlo"``.
      name: a short description.
      forward: ``None`` or ``f(key, *, num_draws) -> {site: (num_draws, K,
        D), ...}``, equal in distribution to NumPyro's ``Predictive`` of
        ``model`` (factors ignored; ``constraint`` is applied to its draws):
        a sampler that compiles faster.
      as_kind: for a prior made without ``kind`` (a utility prior until told otherwise), ``f(kind)`` gives the
        same prior over that kind of matrix: ``costs=intervals(low, high)`` reads the bounds as costs, so that a
        call need not say "cost" twice (:func:`resolve_utilities`).
    """

    model: Callable[[], None]
    site: str
    shape: tuple[int, int]
    constraint: Callable[[dict], jax.Array] | None = None
    constraint_sites: tuple[str, ...] = ()
    mean: jax.Array | None = None
    mean_method: str = "monte_carlo"
    name: str = "utility prior"
    forward: Callable | None = None
    # A prior made without `kind`: the same prior over the kind the argument it is passed to names (`costs=`).
    as_kind: Callable[[str], UtilityPrior] | None = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def num_classes(self) -> int:
        return self.shape[0]

    @property
    def num_decisions(self) -> int:
        return self.shape[1]

    def _sampler(self, num_draws):
        # Shared between priors built with the same model and arguments (`cost_ratio(1, 5)` called twice, a
        # command run again in the same process), so the second one compiles nothing.  Found once per prior and
        # size: the shared key hashes the bound arrays (two 1000 x 1000 bounds: about 0.1 s a lookup, once per
        # block of draws before).
        found = self._cache.get(("sampler", num_draws))
        if found is not None:
            return found
        found = self._shared_sampler(num_draws)
        self._cache[("sampler", num_draws)] = found
        return found

    def _shared_sampler(self, num_draws):
        model_key = _model_key(self.model)
        forward_key = None if self.forward is None else _model_key(self.forward)
        known = model_key is not None and (self.forward is None or forward_key is not None)
        key = (model_key, forward_key, self.site, self.constraint_sites, num_draws) if known else (num_draws,)
        cache = _SAMPLERS if known else self._cache
        fn = cache.get(key)
        if fn is None:
            if self.forward is not None:
                draw_sites = partial(self.forward, num_draws=num_draws)
            else:
                from numpyro.infer import Predictive

                sites = [self.site, *self.constraint_sites]
                draw_sites = Predictive(self.model, num_samples=num_draws, parallel=True, return_sites=sites)
            keep = () if self.constraint is None else tuple(dict.fromkeys((self.site, *self.constraint_sites)))
            fn = jax.jit(partial(_with_utilities, draw_sites, self.site, keep))
            cache[key] = fn
            while len(_SAMPLERS) > _MAX_SHARED_SAMPLERS:
                _SAMPLERS.popitem(last=False)
        return fn

    def sample(self, key: jax.Array, num_draws: int) -> jax.Array:
        """``(num_draws, K, D)`` utility matrices (negated when the site is ``"cost"``)."""
        num_draws = v.as_scalar(num_draws, "num_draws", integer=True, low=1)
        draw = lambda k, n: self._sampler(n)(k)  # noqa: E731
        if self.constraint is None:
            draws = draw(key, num_draws)
        else:
            draws = rejection_sample(draw, self.constraint, key, num_draws, what=self.name)
        return draws[_UTILITIES]

    def __repr__(self):
        return f"UtilityPrior({self.name}, shape={self.shape}, site={self.site!r})"


def _dominance_constraint(site):
    return lambda draws: correct_dominates(_as_utilities(draws[site], site))


def _check_site(kind):
    return v.check_choice(kind, "kind", SITES)


def _check_dominance_shape(shape, dominance):
    if dominance and shape[1] < shape[0]:
        raise v.InputError(
            f"`correct_dominates=True` needs at least as many decisions as classes (D >= K), got shape {shape}"
        )


# ------------------------------------------------------------- constructors

def intervals(low: ArrayLike, high: ArrayLike, *, kind: str | None = None,
              correct_dominates: bool = False) -> UtilityPrior:
    """Each entry uniform on its own interval ``[low_ij, high_ij]``.

    The expected utility matrix is ``(low + high) / 2`` in closed form (Dyrland
    et al. 2022, eq. 18) unless ``correct_dominates`` cuts the support, in which case
    it is estimated by Monte Carlo.

    Args:
      low, high: ``(K, D)`` bounds (``low == high`` fixes an entry).
      kind: ``"utility"`` or ``"cost"``: what the bounds are bounds of; by
        default the argument the prior is passed to says it (``costs=`` or
        ``utilities=``), and utilities elsewhere.
      correct_dominates: restrict to matrices where, for every true class,
        the correct decision is worth at least as much as any other.

    Example:
      >>> prior = intervals([[0, 1], [10, 0]], [[0, 1], [50, 0]], kind="cost")
    """
    if kind is None:
        return replace(intervals(low, high, kind="utility", correct_dominates=correct_dominates),
                       as_kind=lambda k: intervals(low, high, kind=k, correct_dominates=correct_dominates))
    _check_site(kind)
    lo = v.as_matrix(low, "low", batched=False)
    k, d = lo.shape
    hi = v.as_matrix(high, "high", shape=(k, d))
    v.check_bounds(lo, hi)
    shape = (k, d)
    _check_dominance_shape(shape, correct_dominates)
    if correct_dominates:
        u_lo, u_hi = (lo, hi) if kind == "utility" else (-hi, -lo)
        k = shape[0]
        # U_ii <= max, U_ij >= min: the constraint U_ii >= U_ij is impossible if max_ii < min_ij.
        diag_hi = np.diagonal(np.asarray(u_hi)[:, :k])
        impossible = np.asarray(u_lo) > diag_hi[:, None]
        if np.any(impossible):
            i, j = np.argwhere(impossible)[0]
            raise v.InputError(
                f"the constraints of this prior leave no support: the correct decision for class {i} is worth at "
                f"most {float(diag_hi[i])} but decision {j} is worth at least {float(np.asarray(u_lo)[i, j])}"
            )
    # On the host: a few eager array operations would each be a compiled program (~20-60 ms on a cold start).
    mean = None if correct_dominates else v.to_device(
        _as_utilities((np.asarray(lo, np.float64) + np.asarray(hi, np.float64)) / 2.0, kind), lo.dtype)
    return UtilityPrior(
        model=partial(interval_model, lo, hi, site=kind, dominance=correct_dominates),
        site=kind, shape=shape,
        constraint=_dominance_constraint(kind) if correct_dominates else None,
        constraint_sites=(),
        mean=mean, mean_method="monte_carlo" if correct_dominates else "closed_form",
        name=f"intervals ({kind})", forward=partial(interval_draws, lo, hi, site=kind),
    )


def _truncated_normal_mean(nominal, scale, low, high):
    """Closed-form mean of each truncated normal entry (float64 numpy)."""
    from math import erf, exp, pi, sqrt

    phi = np.vectorize(lambda z: 0.0 if not np.isfinite(z) else exp(-0.5 * z * z) / sqrt(2 * pi))
    cdf = np.vectorize(lambda z: 0.5 * (1.0 + erf(z / sqrt(2.0))))
    free = scale > 0
    s = np.where(free, scale, 1.0)
    a = np.where(free, (low - nominal) / s, -np.inf)
    b = np.where(free, (high - nominal) / s, np.inf)
    mass = cdf(b) - cdf(a)
    if np.any(mass[free] <= 0):
        raise v.InputError("a truncated normal entry has (numerically) no mass inside [low, high]")
    shift = (phi(a) - phi(b)) / np.where(mass > 0, mass, 1.0)
    return np.where(free, nominal + s * shift, nominal)


def truncated_normal(nominal: ArrayLike, scale: ArrayLike, *, low: ArrayLike = -np.inf, high: ArrayLike = np.inf,
                     kind: str | None = None, correct_dominates: bool = False) -> UtilityPrior:
    """Each entry Gaussian around a nominal matrix, truncated to ``[low, high]``.

    With ``low=0, high=1, correct_dominates=True`` this is the error model of
    Dyrland et al. (2022) §4.2 (iii).  The expected matrix is in closed form (the mean of
    a truncated normal, ``mu + sigma (phi(a) - phi(b)) / (Phi(b) - Phi(a))``)
    unless ``correct_dominates`` cuts the support (Monte Carlo then).

    Args:
      nominal: ``(K, D)`` centre.
      scale: standard deviation, scalar or ``(K, D)``, ``>= 0`` (0 fixes an entry).
      low, high: truncation bounds, scalars or ``(K, D)``.
      kind: ``"utility"`` or ``"cost"``; by default as in :func:`intervals`.
      correct_dominates: as in :func:`intervals`.
    """
    if kind is None:
        return replace(truncated_normal(nominal, scale, low=low, high=high, kind="utility",
                                        correct_dominates=correct_dominates),
                       as_kind=lambda k: truncated_normal(nominal, scale, low=low, high=high, kind=k,
                                                          correct_dominates=correct_dominates))
    _check_site(kind)
    nominal_m = v.as_matrix(nominal, "nominal", batched=False)
    k, d = nominal_m.shape
    shape = (k, d)
    sc, lo, hi = (v.as_broadcast(val, name, shape) for name, val in (("scale", scale), ("low", low), ("high", high)))
    nom = np.asarray(nominal_m, dtype=np.float64)
    v.check_numbers(sc, "scale", low=0.0)
    v.check_bounds(lo, hi, "truncation bounds")
    v.check_inside(nom, lo, hi, "`nominal`")
    _check_dominance_shape(shape, correct_dominates)
    mean = None
    if not correct_dominates:
        mean = _as_utilities(jnp.asarray(_truncated_normal_mean(nom, sc, lo, hi), jnp.result_type(float)), kind)
    f = jnp.result_type(float)
    return UtilityPrior(
        model=partial(truncated_normal_model, nominal_m, jnp.asarray(sc, f), jnp.asarray(lo, f), jnp.asarray(hi, f),
                      site=kind, dominance=correct_dominates),
        site=kind, shape=shape,
        constraint=_dominance_constraint(kind) if correct_dominates else None,
        mean=mean, mean_method="monte_carlo" if correct_dominates else "closed_form",
        name=f"truncated normal ({kind})",
    )


def _log_normal_params(low, high, interval_mass):
    z = math.sqrt(2.0) * _erfinv(interval_mass)
    loc = 0.5 * (math.log(low) + math.log(high))
    sigma = (math.log(high) - math.log(low)) / (2.0 * z)
    return loc, sigma


def _erfinv(p):
    # Bisection on math.erf: exact to double precision, and only called at construction.
    lo, hi = 0.0, 10.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if math.erf(mid) < p else (lo, mid)
    return 0.5 * (lo + hi)


def cost_ratio(low: float, high: float, *, distribution: str = "log_uniform", positive: int = 1,
               interval_mass: float = 0.95) -> UtilityPrior:
    """Binary costs with an uncertain miss/false-alarm cost ratio.

    "A missed tumour costs 10 to 50 times a false alarm" is
    ``cost_ratio(10, 50)``: costs ``c = [[0, 1], [r, 0]]`` (rows = true
    class, class ``positive`` = 1 the tumour), ``r`` log-uniform on
    ``[10, 50]``; with ``distribution="log_normal"``, ``[low, high]`` is the
    central ``interval_mass`` interval of a log-normal ``r``.

    Expected cost matrix in closed form: ``E r = (high - low) / log(high / low)``
    (log-uniform) or ``exp(mu + sigma^2 / 2)`` (log-normal).
    """
    v.check_choice(distribution, "distribution", ("log_uniform", "log_normal"))
    v.check_choice(positive, "positive", (0, 1))
    lo, hi = v.as_scalar(low, "low", low=0.0, strict=True), v.as_scalar(high, "high")
    v.check_bounds(lo, hi)
    if lo == hi:
        raise v.InputError(f"a {distribution.replace('_', '-')} ratio needs low < high (use a fixed cost matrix for a "
                           "known ratio)")
    if distribution == "log_uniform":
        mean_r = (hi - lo) / math.log(hi / lo)
    else:
        interval_mass = v.as_scalar(interval_mass, "interval_mass", low=0.0, high=1.0, strict=True)
        loc, sigma = _log_normal_params(lo, hi, float(interval_mass))
        mean_r = math.exp(loc + 0.5 * sigma * sigma)
    cost_mean = np.zeros((2, 2))
    cost_mean[1 - positive, positive] = 1.0
    cost_mean[positive, 1 - positive] = mean_r
    return UtilityPrior(
        model=partial(cost_ratio_model, lo, hi, distribution=distribution, positive=positive,
                      interval_mass=float(interval_mass)),
        site="cost", shape=(2, 2),
        mean=jnp.asarray(-cost_mean, jnp.result_type(float)), mean_method="closed_form",
        name=f"{distribution.replace('_', '-')} cost ratio in [{lo:g}, {hi:g}]",
    )


def _hexagon_constraint(draws):
    return in_hexagon(draws["x"], draws["y"])


def seed004_uniform() -> UtilityPrior:
    """Uniform over the normalized binary utility matrices of Dyrland et al. (2022) Fig. 1 (§4.2 (i)).

    Expected utility matrix in closed form: the hexagon has area 3 and
    ``E max(x, 0) = (1/3) int_0^1 x (2 - x) dx = 2/9`` (likewise for ``-x``,
    ``y``, ``-y``), so ``U_hat = [[7/9, 2/9], [2/9, 7/9]]``: equivalent to
    the identity, i.e. accuracy, as Dyrland et al. (2022) §4.1 notes for symmetric
    uncertainty.
    """
    mean = jnp.array([[7.0, 2.0], [2.0, 7.0]]) / 9.0
    return UtilityPrior(
        model=seed004_uniform_model, site="utility", shape=(2, 2),
        constraint=_hexagon_constraint, constraint_sites=("x", "y"),
        mean=mean, mean_method="closed_form", name="uniform over the binary utility space",
    )


def _hexagon_gaussian_moments(cx, cy, sd, nodes=400):
    """``E max(x,0), E max(-x,0), E max(y,0), E max(-y,0)`` under the hexagon-truncated Gaussian.

    The ``y`` integral is done in closed form (normal cdf / pdf), the ``x``
    integral by Gauss-Legendre quadrature on ``[-1, 0]`` and ``[0, 1]``
    (the integrand is smooth on each piece), accurate to ~1e-12.
    """
    from math import erf, exp, pi, sqrt

    def cdf(z):
        return 0.5 * (1.0 + erf(z / sqrt(2.0)))

    def pdf(z):
        return exp(-0.5 * z * z) / sqrt(2.0 * pi)

    def y_moments(a, b):
        # Over y ~ N(cy, sd) restricted to [a, b]: mass, E[y+ ; .], E[y- ; .]
        if b <= a:
            return 0.0, 0.0, 0.0

        def part(lo, hi):  # mass and int y phi over [lo, hi]
            if hi <= lo:
                return 0.0, 0.0
            al, be = (lo - cy) / sd, (hi - cy) / sd
            m = cdf(be) - cdf(al)
            return m, cy * m + sd * (pdf(al) - pdf(be))

        m_all, _ = part(a, b)
        _, first_pos = part(max(a, 0.0), b)
        _, first_neg = part(a, min(b, 0.0))
        return m_all, first_pos, -first_neg

    gl_x, gl_w = np.polynomial.legendre.leggauss(nodes)
    z = np.zeros(5)  # mass, x+, x-, y+, y-
    for lo, hi in ((-1.0, 0.0), (0.0, 1.0)):
        xs = 0.5 * (hi - lo) * gl_x + 0.5 * (hi + lo)
        ws = 0.5 * (hi - lo) * gl_w
        for x, w in zip(xs, ws):
            px = exp(-0.5 * ((x - cx) / sd) ** 2) / (sd * sqrt(2 * pi))
            a, b = max(-1.0, x - 1.0), min(1.0, x + 1.0)
            m, yp, yn = y_moments(a, b)
            z += w * px * np.array([m, m * max(x, 0.0), m * max(-x, 0.0), yp, yn])
    return z[1:] / z[0]


def seed004_gaussian(center: Sequence[float] = (0.0, 0.0), sd: float = 1.0 / 3.0) -> UtilityPrior:
    """Dyrland et al. (2022) §4.2 (i): Gaussian in the ``(x, y)`` of eq. 13, truncated to the hexagon of Fig. 1.

    The default is Dyrland et al.'s: centred on the identity matrix, sd 1/3 (Fig.
    4).  The expected utility matrix (eq. 18) is
    ``[[1 - E x+, E y-], [E y+, 1 - E x-]]`` (eq. 13 is linear in
    ``x+ = max(x, 0)``, ...), with the four expectations computed by
    quadrature (method ``"quadrature"``).
    """
    cx, cy = (v.as_scalar(c, "center") for c in center)
    sd = v.as_scalar(sd, "sd", low=0.0, strict=True)
    xp, xn, yp, yn = _hexagon_gaussian_moments(cx, cy, sd)
    if not np.all(np.isfinite([xp, xn, yp, yn])):
        raise v.InputError("the Gaussian has (numerically) no mass on the hexagon of valid binary utilities (|x|, |y|, |x - y| <= 1)")
    mean = jnp.array([[1.0 - xp, yn], [yp, 1.0 - xn]])
    return UtilityPrior(
        model=partial(seed004_gaussian_model, (cx, cy), sd), site="utility", shape=(2, 2),
        constraint=_hexagon_constraint, constraint_sites=("x", "y"),
        mean=mean, mean_method="quadrature", name=f"Dyrland et al. (2022) Gaussian (centre {(cx, cy)}, sd {sd:g})",
    )


def from_model(model: Callable[..., Any], *args: Any, site: str | None = None, correct_dominates: bool = False,
               name: str | None = None, **kwargs: Any) -> UtilityPrior:
    """Wrap any NumPyro model exposing a ``"utility"`` (or ``"cost"``) site of shape ``(K, D)``.

    ``args`` and ``kwargs`` are bound to the model.  ``site`` is detected
    from one prior draw when not given.  The expected matrix is then
    estimated by Monte Carlo.  Factor sites of the model are *not* applied
    by ``Predictive``: express constraints through ``correct_dominates`` or
    write the model so that its draws are valid.
    """
    from numpyro.infer import Predictive
    v.check_callable(model, "model", "a NumPyro model (a callable)")
    bound = partial(model, *args, **kwargs) if (args or kwargs) else model
    try:
        probe = Predictive(bound, num_samples=1)(jax.random.key(0))
    except Exception as err:  # noqa: BLE001 - report any failure of the user's model
        raise v.InputError(f"`model` could not be run to draw from the prior: {err}") from None
    if site is None:
        found = [s for s in SITES if s in probe]
        if not found:
            raise v.InputError(f"`model` must have a site named 'utility' or 'cost'; it has {sorted(probe)}")
        site = found[0]
    else:
        v.check_choice(_check_site(site), "site", sorted(probe))  # a site the model has
    value = v.check_shape(np.asarray(probe[site])[0], site, "(K, D)", why=" (a site of `model`)")
    shape = tuple(value.shape)
    _check_dominance_shape(shape, correct_dominates)
    return UtilityPrior(
        model=bound, site=site, shape=shape,
        constraint=_dominance_constraint(site) if correct_dominates else None,
        mean=None, mean_method="monte_carlo", name=str(name or getattr(model, "__name__", "user model")),
    )


@overload
def as_utility_prior(utilities: UtilityPrior | Callable[..., Any] | ArrayLike | StructuredCosts,
                     name: str = "utilities", *, structured: Literal[False] = False) -> UtilityPrior | jax.Array: ...
@overload
def as_utility_prior(utilities: UtilityPrior | Callable[..., Any] | ArrayLike | StructuredCosts,
                     name: str = "utilities", *, structured: bool) -> UtilityPrior | jax.Array | StructuredCosts: ...
def as_utility_prior(utilities: UtilityPrior | Callable[..., Any] | ArrayLike | StructuredCosts,
                     name: str = "utilities", *, structured: bool = False) -> UtilityPrior | jax.Array | StructuredCosts:
    """A :class:`UtilityPrior`, a NumPyro model, or a fixed ``(K, D)`` matrix (returned as an array); with
    ``structured``, also fixed structured ones (:class:`ecjax.costs.StructuredCosts` of one ``(K,)`` row each,
    returned as they are; without it they are refused, naming ``.dense()``)."""
    if isinstance(utilities, UtilityPrior):
        return utilities
    if structured and isinstance(utilities, StructuredCosts):
        v.check_shape(utilities.wrong, f"{name}.wrong", "(K,)", why=" (one matrix of structured costs)")
        return utilities
    if callable(utilities):
        return from_model(utilities)
    return v.as_matrix(utilities, name, batched=False)


@overload
def resolve_utilities(utilities: UtilityPrior | Callable[..., Any] | ArrayLike | StructuredCosts | None,
                      costs: UtilityPrior | Callable[..., Any] | ArrayLike | StructuredCosts | None, *,
                      structured: Literal[False] = False) -> UtilityPrior | jax.Array: ...
@overload
def resolve_utilities(utilities: UtilityPrior | Callable[..., Any] | ArrayLike | StructuredCosts | None,
                      costs: UtilityPrior | Callable[..., Any] | ArrayLike | StructuredCosts | None, *,
                      structured: bool) -> UtilityPrior | jax.Array | StructuredCosts: ...
def resolve_utilities(utilities: UtilityPrior | Callable[..., Any] | ArrayLike | StructuredCosts | None,
                      costs: UtilityPrior | Callable[..., Any] | ArrayLike | StructuredCosts | None, *,
                      structured: bool = False) -> UtilityPrior | jax.Array | StructuredCosts:
    """Exactly one of ``utilities`` and ``costs`` (a matrix or a prior; with ``structured``, also structured ones)
    as a utility matrix or prior.

    Costs become utilities by negation (``U = -C``), so every caller ranks by utility yield.
    """
    v.check_exclusive({"utilities": utilities, "costs": costs})
    if utilities is not None:
        return as_utility_prior(utilities, "utilities", structured=structured)
    assert costs is not None  # exactly one of the two was given
    prior = as_utility_prior(costs, "costs", structured=structured)
    if isinstance(prior, StructuredCosts):
        return prior.map(lambda x: -x + 0.0)
    if not isinstance(prior, UtilityPrior):
        return -prior + 0.0
    return prior if prior.as_kind is None else prior.as_kind("cost")  # made without `kind`: `costs=` names it
