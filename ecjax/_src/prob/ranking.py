"""Ranking summaries of posterior draws, and the result object of a comparison.

Given ``(S, M)`` draws of the utility yield of ``M`` systems (higher is
better), everything below is a Monte Carlo average over the draws:

* ``p_best[m] = P(system m has the highest yield)``;
* ``rank_probabilities[m, r] = P(system m has rank r)`` (rank 0 = best);
* ``pairwise[a, b] = P(yield_a > yield_b)``;
* with a region of practical equivalence ``rope`` (in yield units), the
  three-way probabilities of ``baycomp``: ``P(yield_a - yield_b > rope)``,
  ``P(|yield_a - yield_b| <= rope)``, ``P(yield_a - yield_b < -rope)``;
* highest-density intervals (the narrowest interval holding a given
  fraction of the draws).

Exact ties (systems with identical decisions tie in every draw of the
models whose draws follow their counts alone; the paired model's prior
mass on discordant cells keeps them slightly apart) are broken uniformly at
random, so tied systems share their probability of being best instead of
favouring the lowest index.

Every Monte Carlo average comes with its standard error, estimated by batch
means (:func:`batch_means_error`): the draws are cut into consecutive
batches and the spread of the batch averages measures the precision of
their mean, without assuming that the draws are independent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Literal, overload

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

if TYPE_CHECKING:
    import arviz as az
    import pandas as pd

from ecjax._src import inputs as v
from ecjax._src import result_formats
from ecjax._src.report import aligned


@jax.jit
def ranks(key: jax.Array, yields: jax.Array) -> jax.Array:
    """``(S, M)`` rank of each system in each draw (0 = highest yield), ties broken at random."""
    tiebreak = jax.random.uniform(key, yields.shape)
    better = (yields[:, None, :] > yields[:, :, None]) | (
        (yields[:, None, :] == yields[:, :, None]) & (tiebreak[:, None, :] > tiebreak[:, :, None])
    )
    return better.sum(-1)


@partial(jax.jit, static_argnames=("num_systems",))
def rank_probabilities(rank_draws: jax.Array, *, num_systems: int) -> jax.Array:
    """``(M, M)``: entry ``[m, r] = P(rank of m == r)``."""
    return jax.nn.one_hot(rank_draws, num_systems).mean(0)


@jax.jit
def pairwise_better(yields: jax.Array) -> jax.Array:
    """``(M, M)``: entry ``[a, b] = P(yield_a > yield_b)`` (0 on the diagonal)."""
    return (yields[:, :, None] > yields[:, None, :]).mean(0)


@jax.jit
def rope_probabilities(yields: jax.Array, rope: float | jax.Array) -> jax.Array:
    """``(M, M, 3)``: ``P(a better by more than rope)``, ``P(within rope)``, ``P(b better by more than rope)``."""
    diff = yields[:, :, None] - yields[:, None, :]
    return jnp.stack([(diff > rope).mean(0), (jnp.abs(diff) <= rope).mean(0), (diff < -rope).mean(0)], -1)


class Recommends:
    """What a result that recommends one of its ``systems`` (by index, ``recommendation``) and keeps the Monte
    Carlo errors of its estimates (``errors``, by field name) offers."""

    systems: tuple
    errors: dict

    if TYPE_CHECKING:  # a field of some results, a property (the best posterior mean) of others: read-only here
        @property
        def recommendation(self) -> int: ...

    @overload
    def error(self, name: str) -> np.ndarray | None: ...
    @overload
    def error(self, name: str, first_index: int, /, *index: int) -> float | None: ...
    def error(self, name: str, *index: int) -> float | np.ndarray | None:
        """Standard error of the estimate ``name`` (``p_best``, ``rope_probabilities``, ...; at ``index``), or
        ``None`` when not estimated."""
        if name not in self.errors:
            return None
        return float(np.asarray(self.errors[name])[index]) if index else np.asarray(self.errors[name])

    @property
    def best(self) -> str:
        """Name of the recommended system."""
        return self.systems[self.recommendation]


FRAME_TABLES = ("systems", "pairs")


def rope_tables(rope_probabilities: ArrayLike, prefix: str = "") -> dict[str, np.ndarray]:
    """The three ``(M, M)`` tables of ``(M, M, 3)`` ROPE probabilities, by name: ``[a, b]`` = ``P(a better by more
    than rope)``, ``P(|difference| <= rope)``, ``P(b better by more than rope)``."""
    x = np.asarray(rope_probabilities, np.float64)
    names = ("p_better_by_more_than_rope", "p_within_rope", "p_other_better_by_more_than_rope")
    return {prefix + name: x[..., i] for i, name in enumerate(names)}


class RankedResult(Recommends):
    """The family of results that rank ``M`` systems from posterior draws (one base, whatever the draws measure).

    Every member has ``systems``; ``draws``, ``(S, M)`` posterior draws (higher, or for a metric
    ``higher_is_better``, is better); :attr:`posterior_mean`, their ``(M,)`` posterior mean, also under the name
    each result gives it (``CENTRE``: ``expected_yield``, ``mean``, ``mean_scores``, ``effects``); ``hdi_prob`` and
    ``hdi``, ``(M, 2)`` highest-density intervals; ``p_best``, ``(M,)``; ``rank_probabilities``, ``(M, M)`` with
    ``[m, r] = P(rank of m == r)``, rank 0 best; ``pairwise`` (``(M, M)`` ``P(a better than b)``, or for the
    fold-result comparisons ``(M, M, 3)`` ROPE probabilities); ``rope``; ``errors``, the Monte Carlo standard
    errors by name; the recommendation (:attr:`best`).  The NUTS-fitted members add
    :class:`~ecjax.prob.NUTSDiagnostics`.  And three exports: :meth:`to_dict` (the record the command line
    writes as JSON), :meth:`to_frame` (pandas) and :meth:`to_arviz`.
    """

    CENTRE: ClassVar[str]  # the field that holds the posterior mean
    ARVIZ_NAME: ClassVar[str]  # the name of the draws in to_arviz()'s posterior

    draws: Any
    p_best: np.ndarray
    rank_probabilities: np.ndarray
    pairwise: np.ndarray
    rope: float | None
    hdi_prob: float
    hdi: np.ndarray

    @property
    def posterior_mean(self) -> np.ndarray:
        """``(M,)`` the posterior mean of each system's draws: the result's centre, whatever its own name for it."""
        return np.asarray(getattr(self, self.CENTRE), np.float64)

    @property
    def num_draws(self) -> int:
        return int(np.shape(self.draws)[0])

    def to_dict(self) -> dict:
        """The record the command line writes as JSON (plain Python numbers, lists and dicts keyed by system)."""
        raise NotImplementedError

    def system_columns(self) -> dict[str, np.ndarray]:
        """The per-system columns of :meth:`to_frame`: ``posterior_mean``, ``hdi`` (low and high), ``p_best`` (and
        its Monte Carlo error where estimated), ``p_rank_1`` ... ``p_rank_M`` (rank 1 best)."""
        columns = {"posterior_mean": self.posterior_mean, "hdi": np.asarray(self.hdi, np.float64),
                   "p_best": np.asarray(self.p_best, np.float64)}
        if "p_best" in self.errors:
            columns["p_best_error"] = np.asarray(self.errors["p_best"], np.float64)
        ranks = np.asarray(self.rank_probabilities, np.float64)
        columns.update({f"p_rank_{r + 1}": ranks[:, r] for r in range(ranks.shape[1])})
        return columns

    def pair_tables(self) -> dict[str, np.ndarray]:
        """The ``(M, M)`` tables of :meth:`to_frame` ``("pairs")``, by column name."""
        raise NotImplementedError

    def to_frame(self, table: str = "systems") -> pd.DataFrame:
        """A pandas ``DataFrame`` (pandas is optional: ``pip install "ecjax[pandas]"``).

        ``table="systems"``: one row per system (:meth:`system_columns`); ``"pairs"``: one row per ordered pair
        ``(system, other)`` (:meth:`pair_tables`, e.g. ``p_better`` = ``P(system better than other)``).
        """
        v.check_choice(table, "table", FRAME_TABLES)
        if table == "systems":
            return result_formats.system_frame(self.systems, self.system_columns())
        return result_formats.pair_frame(self.systems, self.pair_tables())

    def posterior_variables(self) -> tuple[dict[str, tuple[Any, list[str]]], dict[str, list]]:
        """What :meth:`to_arviz` puts in the posterior: ``({name: ((S, M) draws, dims)}, coords)``."""
        return {self.ARVIZ_NAME: (self.draws, ["system"])}, {"system": list(self.systems)}

    def to_arviz(self) -> az.InferenceData:
        """An ``arviz.InferenceData`` of the draws, dims ``(chain, draw, system)``; ``arviz.summary`` works on it.

        The draws are independent, so they are split into 4 "chains" (when their number allows,
        :func:`~ecjax._src.result_formats.independent_chains`) only to let ArviZ compute R-hat, which should then be 1
        up to Monte Carlo noise.
        """
        variables, coords = self.posterior_variables()
        return result_formats.inference_data(variables, coords,
                                             chains=result_formats.independent_chains(self.num_draws))


class BestMeanRecommended(RankedResult):
    """A ranked result that recommends the system of highest posterior mean (computed, not stored), made by a named
    ``MODEL``: the comparisons of per-fold results."""

    MODEL: ClassVar[str]

    @property
    def recommendation(self) -> int:
        """The index of the system of highest posterior mean (:attr:`best` is its name)."""
        return int(np.argmax(self.posterior_mean))

    def model_record(self, centre_key: str) -> dict[str, Any]:
        """The record's common part: ``systems``, ``rope``, ``model``, the posterior mean (under ``centre_key``),
        ``p_best``, ``hdi`` and ``pairwise`` by system."""
        names = self.systems
        return {"systems": list(names), "rope": self.rope, "model": self.MODEL,
                centre_key: result_formats.by_system(names, self.posterior_mean),
                "p_best": result_formats.by_system(names, self.p_best), "hdi": result_formats.by_system(names, self.hdi),
                "pairwise": result_formats.by_pair(names, self.pairwise)}


@dataclass(frozen=True)
class RankedSystems(RankedResult):
    """The ranking every comparison of ``M`` systems reports, whatever its draws measure (see the module
    docstring): ``p_best``, ``rank_probabilities``, ``pairwise``, ``rope`` and ``rope_probabilities``, and the
    index of the recommended system.  :class:`Comparison` and :class:`~ecjax.prob.MetricPosterior` add what they
    measure."""

    systems: tuple
    p_best: np.ndarray
    rank_probabilities: np.ndarray
    pairwise: np.ndarray
    rope: float | None
    rope_probabilities: np.ndarray | None
    recommendation: int

    def pair_tables(self) -> dict[str, np.ndarray]:
        """``p_better`` (:attr:`pairwise`) and, with a ``rope``, the three tables of :func:`rope_tables`."""
        tables = {"p_better": np.asarray(self.pairwise, np.float64)}
        if self.rope_probabilities is not None:
            tables.update(rope_tables(self.rope_probabilities))
        return tables


def ranking_fields(summary: dict, rope: float | None) -> dict:
    """The fields of :class:`RankedSystems` but the recommendation, from the output of :func:`summarize` (as
    NumPy)."""
    return {"p_best": np.asarray(summary["p_best"]),
            "rank_probabilities": np.asarray(summary["rank_probabilities"]),
            "pairwise": np.asarray(summary["pairwise"]), "rope": rope,
            "rope_probabilities": None if rope is None else np.asarray(summary["rope_probabilities"])}


def min_draws_for_hdi(prob: float) -> int:
    """At least 10 draws must fall inside a ``prob`` interval and 10 outside it for its ends to mean anything.

    ``S >= 10 / min(prob, 1 - prob)``: with ``floor(prob S) = 0`` draws inside, the narrowest interval would be
    one draw, ``[min, min]`` (a width of 0); with 1 to 9 it would be the gap between a few draws.
    """
    return int(math.ceil(10.0 / min(prob, 1.0 - prob) - 1e-9))


@overload
def check_rope(rope: float | None, *, optional: Literal[False]) -> float: ...


@overload
def check_rope(rope: float | None, *, optional: bool = True) -> float | None: ...


def check_rope(rope: float | None, *, optional: bool = True) -> float | None:
    """The half-width of a region of practical equivalence: a finite number >= 0 (``None`` when ``optional``)."""
    if rope is None and optional:
        return None
    return v.as_scalar(rope, "rope", low=0.0)


def as_hdi_prob(prob: float) -> float:
    """The mass ``hdi_prob`` of a highest-density interval: a number strictly between 0 and 1."""
    return v.as_scalar(prob, "hdi_prob", low=0.0, high=1.0, strict=True)


def check_hdi_prob(prob: float, num_draws: int) -> float:
    """:func:`as_hdi_prob`, with enough of ``num_draws`` for its interval (:func:`min_draws_for_hdi`)."""
    p = as_hdi_prob(prob)
    need = min_draws_for_hdi(p)
    if num_draws < need:
        raise v.InputError(
            f"too few draws for a {p:g} HDI: got num_draws={num_draws}, need at least {need} "
            "(10 draws inside the interval and 10 outside)"
        )
    return p


@partial(jax.jit, static_argnames=("prob",))
def _hdi_kernel(draws, *, prob):
    s = draws.shape[0]
    x = jnp.sort(draws, axis=0)
    inside = int(math.floor(prob * s))
    widths = x[inside:] - x[: s - inside]
    start = jnp.argmin(widths, axis=0)
    low = jnp.take_along_axis(x, start[None], 0)[0]
    high = jnp.take_along_axis(x, (start + inside)[None], 0)[0]
    return jnp.stack([low, high], -1)


def hdi(draws: ArrayLike, prob: float = 0.9) -> jax.Array:
    """Highest-density interval of each column: ``(S, ...)`` draws -> ``(..., 2)`` (low, high).

    The narrowest interval ``[x_(k), x_(k + floor(prob S))]`` of the sorted
    draws, the same rule as ``arviz.hdi``.  Too few draws for ``prob``
    (:func:`min_draws_for_hdi`: 10 inside and 10 outside) raise
    :class:`InputError`.
    """
    draws = jnp.asarray(v.check_numbers(v.as_array(draws, "draws", min_ndim=1), "draws"))  # booleans: no order
    p = check_hdi_prob(prob, draws.shape[0])
    return _hdi_kernel(draws, prob=p)


# Batches of the batch-means error: with 20 the estimated error is itself within about +-16 % of the true one
# (the spread of a chi distribution with 19 degrees of freedom), and each batch still holds many draws.
NUM_BATCHES = 20


def _num_batches(num_draws, num_batches):
    """``B = min(num_batches, S // 2)``, or ``None`` when fewer than 2 batches fit."""
    b = min(num_batches, num_draws // 2)
    return b if b >= 2 else None


def _batches(draws, num_batches):
    """``(B, S // B, ...)`` consecutive batches of the draws (the last ``S mod B`` draws left out), or ``None``."""
    s = draws.shape[0]
    b = _num_batches(s, num_batches)
    if b is None:
        return None
    return draws[: b * (s // b)].reshape((b, s // b) + draws.shape[1:])


def _spread_of_means(batch_means):
    """``sd(batch means) / sqrt(B)`` over the first axis (float32, traced or not).

    Taken about the first batch's mean: equal batch means then give exactly 0.
    """
    m = batch_means.astype(jnp.float32)
    return jnp.std(m - m[:1], axis=0, ddof=1) / math.sqrt(m.shape[0])


def _batch_means_error_kernel(x, num_batches):
    # Draws taken about the first one: a constant gives batch means of exactly 0 (a float32 mean of a non-zero
    # constant can differ in its last bit between batches, which would report an error of ~1e-8 for no doubt).
    x = x.astype(jnp.float32)
    return _spread_of_means(_batches(x - x[:1], num_batches).mean(1))


_batch_means_error_jit = jax.jit(_batch_means_error_kernel, static_argnames=("num_batches",))


def batch_means_error(per_draw: ArrayLike, num_batches: int = NUM_BATCHES) -> np.ndarray:
    """Monte Carlo standard error of ``per_draw.mean(0)`` by batch means.

    The ``S`` draws are cut into ``B = min(num_batches, S // 2)`` consecutive
    batches of ``S // B`` draws; the error is ``sd(batch means) / sqrt(B)``
    (Flegal, Haran & Jones 2008, "Markov chain Monte Carlo: can we trust the
    third significant figure?", Statistical Science 23(2)).  It needs no
    independence between neighbouring draws, only that batches are long
    compared with the correlation between draws.  NaN with fewer than 4 draws.

    Args:
      per_draw: ``(S, ...)`` per-draw values (indicators for a probability).

    Returns:
      ``(...)`` float64 standard errors.
    """
    x = jnp.asarray(per_draw)
    if _num_batches(x.shape[0], num_batches) is None:
        return np.full(x.shape[1:], np.nan)
    # One compiled program per shape, not one per array operation (each costs ~20 ms to trace and look up).
    return np.asarray(_batch_means_error_jit(x, num_batches=num_batches), np.float64)


@partial(jax.jit, static_argnames=("has_rope", "hdi_prob", "indicator_errors"))
def _summary_kernel(key, yields, rope, *, has_rope, hdi_prob, indicator_errors):
    m = yields.shape[1]
    r = ranks(key, yields)
    out = {"ranks": r, "rank_probabilities": rank_probabilities(r, num_systems=m), "pairwise": pairwise_better(yields)}
    out["p_best"] = out["rank_probabilities"][:, 0]
    errors = {}
    if _num_batches(yields.shape[0], NUM_BATCHES) is not None:
        errors = {"p_best": _batch_means_error_kernel(r == 0, NUM_BATCHES),
                  "mean_yield": _batch_means_error_kernel(yields, NUM_BATCHES)}
        if indicator_errors:
            errors["rank_probabilities"] = _batch_means_error_kernel(jax.nn.one_hot(r, m), NUM_BATCHES)
            errors["pairwise"] = _batch_means_error_kernel(yields[:, :, None] > yields[:, None, :], NUM_BATCHES)
    if has_rope:
        out["rope_probabilities"] = rope_probabilities(yields, rope)
        batches = _batches(yields, NUM_BATCHES)
        if batches is not None:
            errors["rope_probabilities"] = _spread_of_means(jax.vmap(rope_probabilities, (0, None))(batches, rope))
    if hdi_prob is not None:
        out["hdi"] = _hdi_kernel(yields, prob=hdi_prob)
    return out, errors


def summarize(key: jax.Array, yields: jax.Array, *, rope: float | None = None,
              hdi_prob: float | None = None, indicator_errors: bool = False) -> dict[str, Any]:
    """All ranking summaries of ``(S, M)`` yield draws, as a dict of arrays.

    ``errors`` holds the batch-means standard errors of ``p_best``,
    ``mean_yield`` (the Monte Carlo mean of the yields), with a ``rope``,
    ``rope_probabilities``, and with ``indicator_errors`` those of
    ``rank_probabilities`` and ``pairwise`` (float64 numpy; NaN with fewer
    than 4 draws).
    With ``hdi_prob`` (checked by the caller, see :func:`check_hdi_prob`),
    ``hdi`` holds the ``(M, 2)`` highest-density intervals (:func:`hdi`).
    One compiled program: the summaries of a comparison cost one trace and
    one cache lookup, not one per array operation.
    """
    m = yields.shape[1]
    has_rope = rope is not None
    rope_value = np.asarray(rope if has_rope else 0.0, yields.dtype)  # host: no program to convert it
    out, errors = _summary_kernel(key, yields, rope_value, has_rope=has_rope,
                                  hdi_prob=None if hdi_prob is None else float(hdi_prob),
                                  indicator_errors=bool(indicator_errors))
    nan = {"p_best": np.full((m,), np.nan), "mean_yield": np.full((m,), np.nan),
           "rope_probabilities": np.full((m, m, 3), np.nan), "rank_probabilities": np.full((m, m), np.nan),
           "pairwise": np.full((m, m), np.nan)}
    names = (("p_best", "mean_yield") + (("rope_probabilities",) if has_rope else ())
             + (("rank_probabilities", "pairwise") if indicator_errors else ()))
    out["errors"] = {name: np.asarray(errors[name], np.float64) if name in errors else nan[name] for name in names}
    return out


def _group_is_best(yields, tie_labels, recommendation):
    same = tie_labels == jax.lax.dynamic_slice_in_dim(tie_labels, recommendation, 1, axis=-1)
    best_in_group = jnp.max(jnp.where(same, yields, -jnp.inf), axis=-1)
    return best_in_group >= jnp.max(yields, axis=-1)


@jax.jit
def group_is_best(yields: jax.Array, tie_labels: jax.Array, recommendation: int) -> jax.Array:
    """``(S,)`` bool: the recommended system, or one tied with it, has the highest yield in the draw.

    ``tie_labels``: ``(M,)`` or ``(S, M)``; systems with equal labels are
    tied (identical confusion counts).  An exact tie for the highest yield
    counts as a win: a tie is not doubt.
    """
    return _group_is_best(yields, tie_labels, recommendation)


@partial(jax.jit, static_argnames=("num_batches",))
def _group_wins_kernel(yields, tie_labels, recommendation, *, num_batches):
    wins = _group_is_best(yields, tie_labels, recommendation)
    error = jnp.nan if num_batches is None else _batch_means_error_kernel(wins, num_batches)
    return jnp.sum(wins, dtype=jnp.int32), error


def group_win_rate(yields: jax.Array, tie_labels: jax.Array, recommendation: int) -> tuple[float, float]:
    """The share of draws :func:`group_is_best` holds and its batch-means error (:func:`batch_means_error`).

    Both as Python floats, from one compiled program (the share is the
    exact count over ``S``, in float64).
    """
    s = yields.shape[0]
    wins, error = _group_wins_kernel(yields, tie_labels, np.int32(recommendation),
                                     num_batches=_num_batches(s, NUM_BATCHES))
    return int(wins) / s, float(error)


DOUBT_COMPONENTS = ("all", "costs_only", "priors_only", "rates_only")

DOUBT_EXPLANATION = ("doubt = P(a system neither recommended nor tied with it is best); "
                     "'X only': X uncertain, the other sources at their means")


@dataclass(frozen=True)
class Doubt:
    """Where the doubt about the best system comes from.

    The doubt of a posterior of the yields is ``P(some system other than
    the recommended one r, and than the systems tied with r, has the
    highest yield)``; tied systems (identical confusion counts) have equal
    expected yields, and a tie is not doubt.  Four posteriors, one decision
    rule (:func:`ecjax.prob.compare`):

    * ``all``: utilities, deployment priors and rates all uncertain;
    * ``costs_only``: the utility matrix drawn, the priors at ``E[P]`` and
      the rates at their posterior mean (the doubt left by an infinite test
      set); exactly 0 for a fixed utility matrix;
    * ``priors_only``: uncertain deployment priors drawn, ``U = U_hat``
      (Dyrland et al. 2022, eq. 18), the rates at their posterior mean; exactly 0 for
      fixed priors or the test set's own class frequencies (whose
      uncertainty belongs to the test set);
    * ``rates_only``: the rates (and the test set's class frequencies)
      drawn, ``U = U_hat``, the priors at ``E[P]``: the doubt due to the
      finite test set, which tends to 0 as it grows.

    ``p_best_*``: ``(M,)`` P(best) of each posterior (``None`` for a
    certain source); ``values``: the doubt of each component;
    ``recommendations``: the system each component's doubt is about (the
    recommendation itself with fixed decisions; with per-draw decisions,
    the system of highest expected yield under that component).  Without
    ``values`` the doubt is ``1 - p_best[recommendation]``.
    """

    p_best_all: np.ndarray
    p_best_costs_only: np.ndarray | None
    p_best_rates_only: np.ndarray
    recommendation: int
    p_best_priors_only: np.ndarray | None = None
    values: dict | None = None
    recommendations: dict | None = None
    errors: dict | None = None

    COMPONENTS = DOUBT_COMPONENTS

    def error(self, component: str) -> float | None:
        """Monte Carlo standard error of one component's doubt (``None`` where not estimated: a certain source,
        whose doubt is exactly 0, or a result made without errors)."""
        v.check_choice(component, "component", DOUBT_COMPONENTS)
        error = None if self.errors is None else self.errors.get(component)
        return None if error is None else float(error)

    def doubt(self, component: str) -> float:
        """The doubt of one component (``"all"``, ``"costs_only"``, ``"priors_only"``, ``"rates_only"``)."""
        v.check_choice(component, "component", DOUBT_COMPONENTS)
        if self.values is not None and component in self.values:
            return float(self.values[component])
        p = getattr(self, f"p_best_{component}")
        return 0.0 if p is None else float(1.0 - p[self.recommendation])

    doubt_all = property(partial(doubt, component="all"), doc="``doubt('all')``.")
    doubt_costs_only = property(partial(doubt, component="costs_only"), doc="``doubt('costs_only')``.")
    doubt_priors_only = property(partial(doubt, component="priors_only"), doc="``doubt('priors_only')``.")
    doubt_rates_only = property(partial(doubt, component="rates_only"), doc="``doubt('rates_only')``.")

    def as_dict(self) -> dict:
        return {name: self.doubt(name) for name in DOUBT_COMPONENTS}

    def text(self) -> str:
        """One line: ``doubt: all 0.012 ± 0.001 | costs_only 0.000 ± 0.000, ...`` (± where the error is known)."""
        d = {name: with_error(self.doubt(name), self.error(name), 3) for name in DOUBT_COMPONENTS}
        return (f"doubt: all {d['all']} | costs_only {d['costs_only']}, priors_only {d['priors_only']}, "
                f"rates_only {d['rates_only']}")

    def __repr__(self):
        return "Doubt(" + ", ".join(f"{name}={value:.3f}" for name, value in self.as_dict().items()) + ")"


def _nec_undefined(fraction: float) -> str:
    return (f"undefined in {100 * fraction:.2f} % of the draws (their utility matrix makes one decision the best for "
            "every class, so the best naive system costs nothing)")


def with_error(value: float, error: float | None, digits: int) -> str:
    """``"0.944 ± 0.002"``; the value alone when the error is ``None`` (not estimated).  An error that would
    print as 0 without being 0 gets the decimals of its first significant digit (``"0.997 ± 0.0004"``,
    ``"1.0000 ± 0.0000003"``), so a small error never reads as none (it printed "± 0.00000")."""
    if error is None:
        return f"{value:.{digits}f}"
    error_digits = max(digits, -math.floor(math.log10(error))) if 0 < error < 0.5 * 10.0**-digits else digits
    return f"{value:.{digits}f} ± {error:.{error_digits}f}"


@dataclass(frozen=True)
class Comparison(RankedSystems):
    """Posterior comparison of ``M`` classifiers under uncertain utilities and a finite test set.

    Attributes:
      systems: names of the systems.
      yields: ``(S, M)`` posterior draws of the utility yield (Dyrland et al. 2022, eq. 10).
      expected_costs: ``(S, M)`` draws of the expected cost for costs ``-U``
        (Ferrer 2022a, eq. 2), i.e. ``-yields``.
      normalized_expected_costs: ``(S, M)`` draws of the NEC (Ferrer 2022a, eq.
        4) for the row-normalized costs ``max_j U_ij - U_ij`` (Ferrer 2025, §2);
        NaN in a draw whose best naive system costs nothing.
      expected_utility_matrix: ``(K, D)`` ``U_hat`` (Dyrland et al. 2022, eq. 18).
      expected_yield: ``(M,)`` posterior expected yield ``sum_ij U_hat_ij
        E[P_i R_m,ij]`` (eq. 19: the yield is linear in ``U``, independent of
        the rates).  Exact (closed-form Dirichlet means) when the decisions
        are fixed (given, or made once with ``U_hat``); otherwise the Monte
        Carlo mean.  ``info["expected_yield"]`` says which.
      p_best: ``(M,)`` probability that each system is the best.
      rank_probabilities: ``(M, M)``: ``[m, r] = P(system m has rank r)``, rank 0 best.
      pairwise: ``(M, M)``: ``[a, b] = P(yield_a > yield_b)``.
      rope: the region of practical equivalence (yield units) or ``None``.
      rope_probabilities: ``(M, M, 3)`` ``[a, b] = (P(a better), P(equivalent),
        P(b better))`` or ``None``.
      recommendation: index of the system of highest expected yield (the
        expected-utility decision; the lowest index among tied systems);
        :attr:`best` is its name.
      recommendation_probability: ``P(recommended system is truly the best)``.
      hdi_prob: probability mass of :attr:`hdi`.
      hdi: ``(M, 2)`` highest-density intervals of the yield.
      doubt: a :class:`Doubt`, or ``None`` when not computed.
      info: how the draws were made (model, concentration, priors, draws,
        ``decision_rule``, whether ``expected_yield`` is exact).
      ties: groups of tied systems (identical confusion counts, so equal
        expected yields), by name; their P(best) is split between them.
      p_tie: with per-draw decisions, the share of the draws whose best
        system has the confusion counts of another system *in that draw*
        (they made the same decisions): ties, counted in no system's
        ``p_best``, so ``sum(p_best) + p_tie = 1``; ``None`` with fixed
        decisions (their ties are the same in every draw: ``ties``).
      errors: Monte Carlo standard errors (batch means over the draws,
        :func:`batch_means_error`) of ``expected_yield`` (0 where it is the
        closed form), ``p_best`` and, with a ``rope``,
        ``rope_probabilities``; empty when not estimated.
    """

    yields: jax.Array
    expected_costs: jax.Array
    normalized_expected_costs: jax.Array
    expected_utility_matrix: jax.Array
    expected_yield: np.ndarray
    recommendation_probability: float
    hdi_prob: float
    hdi: np.ndarray
    doubt: Doubt | None = None
    info: dict = field(default_factory=dict)
    ties: tuple = ()
    errors: dict = field(default_factory=dict)
    p_tie: float | None = None

    CENTRE: ClassVar[str] = "expected_yield"
    ARVIZ_NAME: ClassVar[str] = "utility_yield"

    @property
    def draws(self) -> jax.Array:
        """``(S, M)`` the yield draws (:attr:`yields`), the draws of every ranked result."""
        return self.yields

    def to_dict(self) -> dict:
        """The result part of ``ecjax compare --json``'s record: expected yields, HDIs, P(best), ranks, pairs,
        the recommendation, how the decisions were made, ties, the ROPE and doubt where computed, and every Monte
        Carlo number's standard error (``monte_carlo_errors``)."""
        names, single = self.systems, len(self.systems) == 1
        record = {
            "systems": list(names), "num_draws": self.num_draws,
            "expected_utility_matrix": np.asarray(self.expected_utility_matrix).tolist(),
            "expected_yield": result_formats.by_system(names, self.expected_yield), "hdi_prob": self.hdi_prob,
            "hdi": result_formats.by_system(names, self.hdi), "p_best": result_formats.by_system(names, self.p_best),
            "p_tie": self.p_tie,  # per-draw decisions: draws whose best system decided as another did (None: fixed)
            "rank_probabilities": np.asarray(self.rank_probabilities).tolist(),
            "pairwise": np.asarray(self.pairwise).tolist(),
            # One system: nothing to choose between.
            "recommendation": None if single else self.best,
            "recommendation_probability": None if single else float(self.recommendation_probability),
            "decision_rule": self.info.get("decision_rule"), "decisions_made_by": self.info.get("decisions", "given"),
            "rate_draws_per_cost_draw": self.info.get("rate_draws_per_cost_draw"),
            "nec_undefined_fraction": self.nec_undefined_fraction,
            "expected_yield_method": self.info.get("expected_yield"), "ties": [list(group) for group in self.ties],
        }
        if self.rope_probabilities is not None:
            record["rope"] = self.rope
            record["rope_probabilities"] = np.asarray(self.rope_probabilities).tolist()
            record["practically_equivalent_to_recommendation"] = list(self.practically_equivalent)
        if self.doubt is not None:
            record["doubt"] = self.doubt.as_dict()  # all, costs_only, priors_only, rates_only
        # Every Monte Carlo number above, with its standard error (batch means; 0 for a closed form).
        errors: dict[str, Any] = {"method": f"batch means over {NUM_BATCHES} batches of the draws"}
        errors.update({name: result_formats.by_system(names, self.errors[name])
                       for name in ("expected_yield", "p_best") if name in self.errors})
        if self.p_tie is not None and "p_tie" in self.errors:
            errors["p_tie"] = self.errors["p_tie"]
        if self.rope_probabilities is not None and "rope_probabilities" in self.errors:
            errors["rope_probabilities"] = np.asarray(self.errors["rope_probabilities"]).tolist()
        if self.doubt is not None:
            errors["doubt"] = {c: self.doubt.error(c) or 0.0 for c in self.doubt.COMPONENTS}
        if "mc_error_target" in self.info:
            errors.update(target=self.info["mc_error_target"], target_met=self.info["mc_error_met"],
                          runs=self.info["mc_error_runs"])
        record["monte_carlo_errors"] = errors
        return record

    def largest_probability_error(self) -> float:
        """The largest Monte Carlo standard error of the probabilities reported: P(best), the ROPE
        probabilities and the doubt components (0 when none was estimated as uncertain)."""
        parts = [np.asarray(self.errors.get(name, []), np.float64).ravel() for name in ("p_best", "p_tie", "rope_probabilities")]
        if self.doubt is not None and self.doubt.errors:
            parts.append(np.asarray(list(self.doubt.errors.values()), np.float64))
        found = np.concatenate(parts)
        found = found[np.isfinite(found)]
        return float(found.max()) if found.size else 0.0

    @property
    def num_draws(self) -> int:
        return int(self.yields.shape[0])

    def interval(self, values: str = "yields", prob: float | None = None) -> np.ndarray:
        """HDI ``(M, 2)`` of ``"yields"``, ``"expected_costs"``, ``"normalized_expected_costs"``
        or ``"differences"`` (``(M, M, 2)``, yield of row minus yield of column)."""
        prob = self.hdi_prob if prob is None else prob
        if values == "differences":
            d = self.yields[:, :, None] - self.yields[:, None, :]
            return np.asarray(hdi(d, prob))
        v.check_choice(values, "values", ("yields", "expected_costs", "normalized_expected_costs"))
        x = getattr(self, values)
        if values == "normalized_expected_costs" and self.nec_undefined_fraction > 0:
            raise v.InputError("`values`: the NEC is " + _nec_undefined(self.nec_undefined_fraction))
        return np.asarray(hdi(x, prob))

    @property
    def nec_undefined_fraction(self) -> float:
        """Fraction of the draws whose NEC is undefined (NaN for some system).

        The NEC divides by the expected cost of the best naive system (Ferrer
        2022a, eq. 4), which is 0 in a draw whose utility matrix makes one
        decision the best for every class (loose utility intervals do): a
        system that ignores its input is then perfect and the ratio has no
        value.  Those draws are not NEC draws at all, so no NEC summary is
        made from them (see :meth:`to_arviz`).
        """
        nec = np.asarray(self.normalized_expected_costs)
        return float(np.mean(~np.all(np.isfinite(nec), axis=-1))) if nec.size else 0.0

    def to_arviz(self) -> az.InferenceData:
        """An ``arviz.InferenceData`` with dims ``(chain, draw, system)``; ``arviz.summary`` works on it.

        Conjugate draws are independent, so they are split into 4 "chains"
        (when the number of draws allows) only to let ArviZ compute R-hat,
        which should then be 1 up to Monte Carlo noise.  The NEC is left
        out when it is undefined in some draw (:attr:`nec_undefined_fraction`;
        the posterior's ``attrs`` say so), so every summary is finite.
        """
        variables = {"utility_yield": (self.yields, ["system"]), "expected_cost": (self.expected_costs, ["system"])}
        undefined = self.nec_undefined_fraction
        if undefined == 0:
            variables["normalized_expected_cost"] = (self.normalized_expected_costs, ["system"])
        idata = result_formats.inference_data(variables, {"system": list(self.systems)},
                                              chains=result_formats.independent_chains(self.num_draws))
        if undefined > 0:
            idata.posterior.attrs["normalized_expected_cost"] = "left out: " + _nec_undefined(undefined)
        return idata

    @property
    def practically_equivalent(self) -> tuple:
        """Names of the systems practically equivalent to the recommended one (empty without a ``rope``).

        System ``j`` is when, of the three ROPE outcomes against the
        recommendation ``r`` (``r`` better by more than ``rope``, ``|yield_r -
        yield_j| <= rope``, ``j`` better by more than ``rope``), the middle
        one is the most probable: the yields then most probably differ by
        less than what matters, whatever ``P(best)`` says about who is ahead.
        """
        if self.rope_probabilities is None:
            return ()
        r = self.recommendation
        return tuple(name for j, name in enumerate(self.systems)
                     if j != r and int(np.argmax(self.rope_probabilities[r, j])) == 1)

    def summary(self) -> str:
        """A plain-text table: expected yield, HDI, P(best), the recommendation (and, with a ``rope``, what it means
        against every other system), ties, decisions and doubt.  One system: its yield only (nothing to choose)."""
        single = len(self.systems) == 1
        rows = [["system", "E[yield]", f"{int(round(self.hdi_prob * 100))}% HDI"] + ([] if single else ["P(best)"])]
        for m, name in enumerate(self.systems):
            lo, hi = self.hdi[m]
            y_err = self.error("expected_yield", m)
            rows.append([name, with_error(self.expected_yield[m], y_err or None, 4), f"[{lo:.4f}, {hi:.4f}]"]
                        + ([] if single else [with_error(self.p_best[m], self.error("p_best", m), 3)]))
        lines = aligned(rows)
        if self.errors:
            exact = "; E[yield] exact (closed form)" if not np.any(self.error("expected_yield")) else ""
            target = self.info.get("mc_error_target")
            if target is not None:
                met = "met" if self.info.get("mc_error_met") else "NOT met: the draws reached max_draws"
                exact += f"; target {target:g} {met}"
            lines.append(f"± Monte Carlo standard error ({self.num_draws} draws, batch means){exact}")
        if not single:
            lines += self._recommendation_lines()
        for group in self.ties:
            lines.append(f"tied: {' = '.join(group)} (identical confusion counts: equal expected yields)")
        if self.p_tie:
            lines.append(self._tie_line())
        tied = self.info.get("recommendation_tied_fraction", 0.0)
        if tied > 0:
            lines.append(f"tied: {self.best} has the confusion counts of another system in {100 * tied:.1f} % of "
                         "the draws (ties, not doubt)")
        rule = self.info.get("decision_rule")
        if rule == "given":
            lines.append("decisions: given")
        elif rule is not None:
            shared = self.info.get("rate_draws_per_cost_draw", 1)
            how = f"; {self.info['cost_draws']} cost draws x {shared} rate draws each" if shared > 1 else ""
            lines.append(f"decisions: {self.info.get('decisions', rule)} [decision_rule={rule}{how}]")
        undefined = self.nec_undefined_fraction
        if undefined > 0:
            lines.append(f"NEC {_nec_undefined(undefined)}; to_arviz() leaves it out")
        if self.doubt is not None and not single:
            lines.append(self.doubt.text())
            lines.append(f"  ({DOUBT_EXPLANATION})")
        return "\n".join(lines)

    def _tie_line(self) -> str:
        """P(tie), and P(best) among the draws that are not ties (per-draw decisions)."""
        p_tie = float(self.p_tie or 0.0)
        untied = ", ".join(f"{name} {p / (1.0 - p_tie):.3f}" for name, p in zip(self.systems, self.p_best)) \
            if p_tie < 1.0 else "none"
        return (f"P(tie) = {with_error(p_tie, self.errors.get('p_tie'), 3)}: draws whose best system made the decisions "
                f"of another (same confusion counts), a win for none; P(best | not a tie): {untied}")

    def _recommendation_lines(self) -> list:
        r = self.recommendation
        line = f"recommended: {self.best} (P(best) = {with_error(self.p_best[r], self.error('p_best', r), 3)})"
        if self.rope_probabilities is None:
            return [line]
        equivalent = self.practically_equivalent
        if equivalent:
            line += (f", but practically equivalent to {', '.join(equivalent)}: their yields most probably differ "
                     f"by less than the ROPE {self.rope:g}, so either choice is as good")
        r, lines = self.recommendation, [line]
        for j, name in enumerate(self.systems):
            if j != r:
                better, same, worse = (with_error(float(self.rope_probabilities[r, j, i]),
                                                  self.error("rope_probabilities", r, j, i), 3) for i in range(3))
                lines.append(f"  vs {name}: P({self.best} better by > {self.rope:g}) = {better}, "
                             f"P(|difference| <= {self.rope:g}) = {same}, "
                             f"P({name} better by > {self.rope:g}) = {worse}")
        return lines

    def __repr__(self):
        return f"Comparison(systems={self.systems}, num_draws={self.num_draws}, best={self.best!r})\n{self.summary()}"
