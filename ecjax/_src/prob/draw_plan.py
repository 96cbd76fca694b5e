"""How the posterior draws of :func:`~ecjax.prob.compare` are made: the decision rule, the Monte Carlo settings,
and the plan of blocks and chunks.

* :class:`MonteCarloSettings`: how many draws, in what chunks, until what precision (the settings of
  :func:`~ecjax.prob.compare`, :func:`~ecjax.prob.compare_counts` and
  :func:`~ecjax.prob.bootstrap_metric`).
* :class:`PerDraw` and :data:`DECISION_RULES`: how scores become decisions while the costs are uncertain.
* :func:`plan_draws` and :func:`estimated_seconds`: the memory plan, and the duration measured per backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax

from ecjax._src import inputs as v
from ecjax._src.draw_runner import DrawPlan, ProgressOption, block_seconds_left


@dataclass(frozen=True)
class MonteCarloSettings:
    """How a Monte Carlo posterior is drawn: knobs of precision, memory and feedback, none of which changes the model.

    ``num_draws``: ``S``, the posterior draws (``None``: the function's default: for
    :func:`~ecjax.prob.compare` and :func:`~ecjax.prob.compare_counts` adaptive, until every reported probability
    has a standard error of at most 0.005, from 1000 draws up to 20 000 (:mod:`~ecjax._src.prob.adaptive_draws`);
    :func:`~ecjax.prob.bootstrap_metric` draws until its probabilities have Monte Carlo error 0.01, from
    1000 draws up to 20 000).
    ``chunk_size``: draws computed and copied to the host together (memory; the numbers of
    :func:`~ecjax.prob.compare` do not depend on it).  ``progress``: ``True`` for a progress bar over the chunks
    (``tqdm``), or a callable ``total -> reporter`` (:class:`~ecjax._src.draw_runner.Progress`: ``update(n)``,
    ``close()``, optionally ``time_left(seconds)``, measured on the machine, and ``draws_done(done, draws)``), e.g.
    :class:`ecjax.prob.ProgressLines` for a plain line every few seconds on standard error.  ``mc_error``: draw until every reported probability has a Monte Carlo
    standard error at most this, in ``(0, 0.5)`` (:func:`~ecjax.prob.draw_to_precision`), starting from
    ``num_draws`` and stopping at ``max_draws``.  Checked when made: a bad field raises
    :class:`~ecjax.InputError` naming it.
    """

    num_draws: int | None = None
    chunk_size: int | None = None
    progress: ProgressOption = False
    mc_error: float | None = None
    max_draws: int = 1_000_000

    def __post_init__(self):
        for name in ("num_draws", "chunk_size"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, v.as_scalar(getattr(self, name), name, integer=True, low=1))
        if not (isinstance(self.progress, bool) or callable(self.progress)):
            raise v.InputError(f"`progress` must be True, False or a callable, got {self.progress!r}")
        if self.mc_error is not None:
            # A standard error of a probability: above 0.5 it says nothing.
            object.__setattr__(self, "mc_error", v.as_scalar(self.mc_error, "mc_error", low=0.0, high=0.5, strict=True))
        # max_draws only bounds an mc_error target, which starts from num_draws.
        floor = self.num_draws if self.mc_error is not None and self.num_draws is not None else 1
        object.__setattr__(self, "max_draws", v.as_scalar(self.max_draws, "max_draws", integer=True, low=floor))

    def draws(self, default: int) -> int:
        """``num_draws``, or the calling function's ``default``."""
        return default if self.num_draws is None else self.num_draws


def check_monte_carlo_settings(settings: object) -> MonteCarloSettings:
    """``settings`` if it is a :class:`MonteCarloSettings` (checked when it was made), else :class:`~ecjax.InputError`."""
    return v.check_instance(settings, MonteCarloSettings, "settings", "ecjax.prob.MonteCarloSettings")


DECISION_RULES = ("expected_utility", "per_draw")


@dataclass(frozen=True)
class PerDraw:
    """``decision_rule=PerDraw(rate_draws=r)``: per-draw Bayes decisions, each shared by ``r`` rate draws.

    With scores and ``decision_rule="per_draw"`` every utility draw ``U_s``
    makes ``M N`` Bayes decisions (``M N K D`` multiply-adds), while a draw
    of the rates given the resulting counts is a Dirichlet draw of ``M K D``
    cells (paired: ``N`` sample weights).  The ``S`` draws are therefore
    made as ``S / r`` utility draws, each followed by ``r`` draws of the
    rates (and of the priors, unless likelihood-type scores decide with
    them): two-stage sampling.  Every draw still has the right marginal
    distribution; draws of one group are correlated, which the batch-means
    errors take into account (a group is far shorter than a batch).

    For an average over the draws (P(best), E[yield]) with between-group
    variance ``s_b^2`` (the part due to ``U``) and within-group variance
    ``s_w^2`` (due to the rates given ``U``), ``n = S / r`` groups have
    variance ``(s_b^2 + s_w^2 / r) / n`` and cost ``n (c_U + r c_R)``; the
    cost of a given variance is least at (Cochran, *Sampling Techniques*,
    1977, eq. 10.8)

        r* = sqrt((c_U / c_R) (s_w^2 / s_b^2)).

    ``rate_draws=None`` takes ``r*`` with ``c_U / c_R`` from the problem's
    shape (the measured rates of :func:`estimated_seconds`) and ``s_w^2 /
    s_b^2 = 1``, about what ``benchmarks/bench_rate_draws.py`` measured on
    the data sets of ``../shared/data`` (see ``benchmarks/README.md``),
    rounded down to at most 32.  ``info["variance_between_cost_draws"]``
    and ``info["variance_within_cost_draws"]`` report the decomposition of
    the recommendation's P(best) and E[yield] measured on the run itself,
    and ``info["efficient_rate_draws"]`` the ``r*`` it implies.
    """

    rate_draws: int | None = None

    def resolve(self, *, num_systems: int, num_samples: int, num_classes: int, num_decisions: int,
                paired: bool) -> int:
        """``r``: as given, or the default above for this shape."""
        if self.rate_draws is not None:
            return v.as_scalar(self.rate_draws, "PerDraw.rate_draws", integer=True, low=1)
        ratio = per_draw_cost_ratio(num_systems=num_systems, num_samples=num_samples, num_classes=num_classes,
                            num_decisions=num_decisions, paired=paired)
        return int(max(1, min(_MAX_RATE_DRAWS, math.floor(math.sqrt(ratio * _VARIANCE_RATIO)))))


# The default of PerDraw: the within / between variance ratio assumed, and the largest r.
_VARIANCE_RATIO = 1.0
_MAX_RATE_DRAWS = 32


def per_draw_cost_ratio(*, num_systems: int, num_samples: int, num_classes: int, num_decisions: int,
                        paired: bool) -> float:
    """``c_U / c_R``: one utility draw's Bayes decisions over one draw of the rates.

    The CPU rates of :func:`estimated_seconds` (their ratio is about the
    same on a GPU), so the default, and the numbers, do not depend on the
    backend.
    """
    decisions = num_systems * num_samples * num_classes * num_decisions / _DECISION_RATE["cpu"]
    cells = (num_systems * (num_samples + num_classes * num_decisions) + num_samples if paired else
             num_systems * num_classes * num_decisions)
    return decisions / (cells / _CELL_RATE["cpu"])


def as_decision_rule(decision_rule: object) -> tuple[str, PerDraw | None]:
    """``(name, PerDraw or None)`` of a ``decision_rule`` argument."""
    if isinstance(decision_rule, PerDraw):
        return "per_draw", decision_rule
    name = str(v.check_choice(decision_rule, "decision_rule", DECISION_RULES))
    return name, PerDraw() if name == "per_draw" else None


# A block's largest intermediate (its rate draws (B, M, K, D), its per-draw counts or decisions) holds at
# most this many elements, far below 2**31 (int32 indexing); blocks hold at most _MAX_BLOCK draws.
_BLOCK_ELEMENTS = 1 << 22
BLOCK_ELEMENTS = _BLOCK_ELEMENTS  # for a source that sizes its blocks by other limits too
_MAX_BLOCK = 1 << 16
# Automatic chunk: the utility draws of a chunk, (C, K, D), hold about this many elements (and C <= 2**16).
_CHUNK_ELEMENTS = 1 << 24
_MAX_AUTO_CHUNK = 1 << 16


# Multiply-adds per second of the per-draw Bayes decisions and cells per second of the posterior draws, measured
# with benchmarks/bench_draws.py (2-core CPU: 18 ms per draw of 3 x 10^4 x 100 x 100; H100: 1.7 s for 10^4 draws,
# issue 10) and rounded down, so that an estimate errs on the long side.
_DECISION_RATE = {"cpu": 1e10, "gpu": 1e12, "tpu": 1e12}
_CELL_RATE = {"cpu": 3e7, "gpu": 3e9, "tpu": 3e9}


def estimated_seconds(num_draws: int, *, num_systems: int, num_samples: int, num_classes: int, num_decisions: int,
                      per_draw_decisions: bool, backend: str | None = None, rate_draws: int = 1) -> float:
    """A rough duration of :func:`compare` after compilation, to warn before a long run.

    ``S (M K D / cell_rate + [per-draw decisions] M N K D / (r decision_rate))``:
    every draw samples ``M K D`` rate cells; with ``decision_rule="per_draw"``
    and uncertain costs every ``r``-th draw (``rate_draws``, :class:`PerDraw`)
    also makes ``M N`` Bayes decisions over ``K x D`` costs.  The rates are
    per backend (``jax.default_backend()`` by default), measured by
    ``benchmarks/bench_draws.py`` and rounded down.
    """
    backend = jax.default_backend() if backend is None else backend
    cells = num_draws * num_systems * num_classes * num_decisions
    seconds = cells / _CELL_RATE.get(backend, _CELL_RATE["cpu"])
    if per_draw_decisions:
        seconds += cells * num_samples / (rate_draws * _DECISION_RATE.get(backend, _DECISION_RATE["cpu"]))
    return float(seconds)


def plan_draws(num_draws: int, elements_per_draw: int, chunk_size: int | None = None, *, utility_cells: int = 1,
               group: int = 1) -> DrawPlan:
    """Blocks and chunks of posterior draws (the memory plan of :func:`compare`).

    Args:
      num_draws: ``S``.
      elements_per_draw: size of the largest per-draw intermediate (the
        ``M K D`` rate cells, the occupied joint cells, the per-draw decisions).
      chunk_size: draws per chunk (the outputs copied to the host at once,
        and the unit of progress), rounded up to whole blocks; ``None``:
        about ``2^24 / (K D)`` draws, at most ``2^16``.
      utility_cells: ``K D``, for the automatic chunk size.
      group: the block is a multiple of it (the draws that share one set
        of per-draw decisions stay in one block).

    The block size depends on ``S`` and ``elements_per_draw`` only: the
    fewest blocks of at most ``2^16`` draws with ``block * elements_per_draw
    <= 2^22`` (so no block-level array comes near ``2^31`` elements, the
    int32 index limit), balanced so that fewer than one draw per block is
    wasted.
    The chunk size only groups blocks, so it changes no number.
    """
    num_draws = v.as_scalar(num_draws, "num_draws", integer=True, low=1)
    if chunk_size is not None:
        chunk_size = v.as_scalar(chunk_size, "chunk_size", integer=True, low=1)
    largest = max(1, min(_MAX_BLOCK, _BLOCK_ELEMENTS // max(1, int(elements_per_draw))))
    largest = max(group, largest - largest % group)
    num_blocks = -(-num_draws // largest)
    block = -(-num_draws // num_blocks)  # balanced: fewer than num_blocks draws are computed and dropped
    block += (-block) % group
    if chunk_size is None:  # whole blocks whose utility draws, queued together, hold at most ~2^24 numbers
        per_chunk = max(1, min(_MAX_AUTO_CHUNK, _CHUNK_ELEMENTS // max(1, int(utility_cells))) // block)
    else:
        per_chunk = -(-chunk_size // block)
    per_chunk = min(num_blocks, per_chunk)
    return DrawPlan(num_draws, block, per_chunk, -(-num_blocks // per_chunk))
