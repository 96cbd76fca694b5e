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

Exact ties (systems with identical decisions have identical yields in
every draw) are broken uniformly at random, so tied systems share their
probability of being best instead of favouring the lowest index.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial

import numpy as np

import jax
import jax.numpy as jnp

from ecjax import _validate as v


@jax.jit
def ranks(key, yields):
    """``(S, M)`` rank of each system in each draw (0 = highest yield), ties broken at random."""
    tiebreak = jax.random.uniform(key, yields.shape)
    better = (yields[:, None, :] > yields[:, :, None]) | (
        (yields[:, None, :] == yields[:, :, None]) & (tiebreak[:, None, :] > tiebreak[:, :, None])
    )
    return better.sum(-1)


@partial(jax.jit, static_argnames=("num_systems",))
def rank_probabilities(rank_draws, *, num_systems):
    """``(M, M)``: entry ``[m, r] = P(rank of m == r)``."""
    return jax.nn.one_hot(rank_draws, num_systems).mean(0)


@jax.jit
def pairwise_better(yields):
    """``(M, M)``: entry ``[a, b] = P(yield_a > yield_b)`` (0 on the diagonal)."""
    return (yields[:, :, None] > yields[:, None, :]).mean(0)


@jax.jit
def rope_probabilities(yields, rope):
    """``(M, M, 3)``: ``P(a better by more than rope)``, ``P(within rope)``, ``P(b better by more than rope)``."""
    diff = yields[:, :, None] - yields[:, None, :]
    return jnp.stack([(diff > rope).mean(0), (jnp.abs(diff) <= rope).mean(0), (diff < -rope).mean(0)], -1)


def min_draws_for_hdi(prob: float) -> int:
    """At least 10 draws must fall outside a ``prob`` interval for its ends to mean anything."""
    return int(math.ceil(10.0 / (1.0 - prob) - 1e-9))


def check_hdi_prob(prob, num_draws):
    try:
        p = float(prob)
    except (TypeError, ValueError):
        raise v.InputError(f"`hdi_prob` must be a number in (0, 1), got {prob!r}") from None
    if not 0.0 < p < 1.0:
        raise v.InputError(f"`hdi_prob` must be in (0, 1), got {prob!r}")
    need = min_draws_for_hdi(p)
    if num_draws < need:
        raise v.InputError(
            f"too few draws for a {p:g} HDI: got num_draws={num_draws}, need at least {need} "
            "(10 draws outside the interval)"
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


def hdi(draws, prob: float = 0.9):
    """Highest-density interval of each column: ``(S, ...)`` draws -> ``(..., 2)`` (low, high).

    The narrowest interval ``[x_(k), x_(k + floor(prob S))]`` of the sorted
    draws, the same rule as ``arviz.hdi``.
    """
    draws = jnp.asarray(v.check_finite(v.as_array(draws, "draws", min_ndim=1), "draws"))
    p = check_hdi_prob(prob, draws.shape[0])
    return _hdi_kernel(draws, prob=p)


def summarize(key, yields, *, rope=None):
    """All ranking summaries of ``(S, M)`` yield draws, as a dict of arrays."""
    m = yields.shape[1]
    r = ranks(key, yields)
    out = {
        "ranks": r,
        "rank_probabilities": rank_probabilities(r, num_systems=m),
        "pairwise": pairwise_better(yields),
    }
    out["p_best"] = out["rank_probabilities"][:, 0]
    if rope is not None:
        out["rope_probabilities"] = rope_probabilities(yields, jnp.asarray(rope, yields.dtype))
    return out


@dataclass(frozen=True)
class Doubt:
    """Where the doubt about the best system comes from.

    Three posteriors of the ranking: ``both`` (costs and rates uncertain),
    ``costs_only`` (rates fixed at their point estimate: the doubt that
    remains with an infinite test set) and ``rates_only`` (the utility
    matrix fixed at its expectation, seed 004 eq. 18: the doubt due to the
    finite test set).  For each, ``p_best`` ``(M,)`` and the doubt
    ``1 - P(recommended system is best)``.
    """

    p_best_both: np.ndarray
    p_best_costs_only: np.ndarray
    p_best_rates_only: np.ndarray
    recommendation: int

    @property
    def doubt_both(self) -> float:
        return float(1.0 - self.p_best_both[self.recommendation])

    @property
    def doubt_costs_only(self) -> float:
        return float(1.0 - self.p_best_costs_only[self.recommendation])

    @property
    def doubt_rates_only(self) -> float:
        return float(1.0 - self.p_best_rates_only[self.recommendation])

    def __repr__(self):
        return (f"Doubt(both={self.doubt_both:.3f}, costs_only={self.doubt_costs_only:.3f}, "
                f"rates_only={self.doubt_rates_only:.3f})")


@dataclass(frozen=True)
class Comparison:
    """Posterior comparison of ``M`` classifiers under uncertain utilities and a finite test set.

    Attributes:
      systems: names of the systems.
      yields: ``(S, M)`` posterior draws of the utility yield (seed 004 eq. 10).
      expected_costs: ``(S, M)`` draws of the expected cost for costs ``-U``
        (seed 000 eq. 2), i.e. ``-yields``.
      normalized_expected_costs: ``(S, M)`` draws of the NEC (seed 000 eq.
        4) for the row-normalized costs ``max_j U_ij - U_ij`` (seed 001 §2);
        NaN in a draw whose best naive system costs nothing.
      expected_utility_matrix: ``(K, D)`` ``U_hat`` (seed 004 eq. 18).
      expected_yield: ``(M,)`` posterior mean of the yield (the yield under
        ``U_hat``, eq. 19).
      p_best: ``(M,)`` probability that each system is the best.
      rank_probabilities: ``(M, M)``: ``[m, r] = P(system m has rank r)``, rank 0 best.
      pairwise: ``(M, M)``: ``[a, b] = P(yield_a > yield_b)``.
      rope: the region of practical equivalence (yield units) or ``None``.
      rope_probabilities: ``(M, M, 3)`` ``[a, b] = (P(a better), P(equivalent),
        P(b better))`` or ``None``.
      recommendation: index of the system of highest expected yield (the
        expected-utility decision).
      recommendation_probability: ``P(recommended system is truly the best)``.
      hdi_prob: probability mass of :attr:`hdi`.
      hdi: ``(M, 2)`` highest-density intervals of the yield.
      doubt: a :class:`Doubt`, or ``None`` when not computed.
      info: how the draws were made (model, concentration, priors, draws).
    """

    systems: tuple
    yields: jax.Array
    expected_costs: jax.Array
    normalized_expected_costs: jax.Array
    expected_utility_matrix: jax.Array
    expected_yield: np.ndarray
    p_best: np.ndarray
    rank_probabilities: np.ndarray
    pairwise: np.ndarray
    rope: float | None
    rope_probabilities: np.ndarray | None
    recommendation: int
    recommendation_probability: float
    hdi_prob: float
    hdi: np.ndarray
    doubt: Doubt | None = None
    info: dict = field(default_factory=dict)

    @property
    def num_draws(self) -> int:
        return int(self.yields.shape[0])

    @property
    def best(self) -> str:
        """Name of the recommended system."""
        return self.systems[self.recommendation]

    def interval(self, values: str = "yields", prob: float | None = None):
        """HDI ``(M, 2)`` of ``"yields"``, ``"expected_costs"``, ``"normalized_expected_costs"``
        or ``"differences"`` (``(M, M, 2)``, yield of row minus yield of column)."""
        prob = self.hdi_prob if prob is None else prob
        if values == "differences":
            d = self.yields[:, :, None] - self.yields[:, None, :]
            return np.asarray(hdi(d, prob))
        v.check_choice(values, "values", ("yields", "expected_costs", "normalized_expected_costs"))
        x = getattr(self, values)
        if values == "normalized_expected_costs" and not bool(jnp.all(jnp.isfinite(x))):
            raise v.InputError("some NEC draws are undefined (the best naive system costs nothing in them)")
        return np.asarray(hdi(x, prob))

    def to_arviz(self):
        """An ``arviz.InferenceData`` with dims ``(chain, draw, system)``; ``arviz.summary`` works on it.

        Conjugate draws are independent, so they are split into 4 "chains"
        (when the number of draws allows) only to let ArviZ compute R-hat,
        which should then be 1 up to Monte Carlo noise.
        """
        import arviz as az

        chains = 4 if self.num_draws % 4 == 0 and self.num_draws >= 16 else 1

        def one_chain(x):
            x = np.asarray(x, dtype=np.float64)
            return x.reshape((chains, -1) + x.shape[1:])

        posterior = {
            "utility_yield": one_chain(self.yields),
            "expected_cost": one_chain(self.expected_costs),
            "normalized_expected_cost": one_chain(self.normalized_expected_costs),
        }
        dims = {name: ["system"] for name in posterior}
        return az.from_dict(posterior=posterior, coords={"system": list(self.systems)}, dims=dims)

    def summary(self) -> str:
        """A plain-text table: expected yield, HDI, P(best), and the recommendation."""
        width = max(len(s) for s in self.systems)
        lines = [f"{'system':<{width}}  E[yield]   {int(round(self.hdi_prob * 100))}% HDI              P(best)"]
        for m, name in enumerate(self.systems):
            lo, hi = self.hdi[m]
            lines.append(
                f"{name:<{width}}  {self.expected_yield[m]: .4f}  [{lo: .4f}, {hi: .4f}]  {self.p_best[m]:.3f}")
        lines.append(f"recommended: {self.best} (P(best) = {self.recommendation_probability:.3f})")
        if self.doubt is not None:
            d = self.doubt
            lines.append(f"doubt 1 - P(best): both {d.doubt_both:.3f}, costs only {d.doubt_costs_only:.3f}, "
                         f"test set only {d.doubt_rates_only:.3f}")
        return "\n".join(lines)

    def __repr__(self):
        return f"Comparison(systems={self.systems}, num_draws={self.num_draws}, best={self.best!r})\n{self.summary()}"
