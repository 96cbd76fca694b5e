"""Draw until the answer is precise enough: the adaptive number of Monte Carlo draws.

A Monte Carlo probability ``p_hat`` from ``S`` draws has a standard error
that falls as ``1 / sqrt(S)`` (its batch-means estimate,
:func:`~ecjax._src.prob.ranking.batch_means_error`, also counts the correlation
of the draws).  So a clear winner (``P(best) = 1.000`` after a few hundred
draws, error 0) needs no more, and a close call (``p = 0.5``: error
``0.5 / sqrt(S)``) needs ``S = 0.25 / e^2`` independent draws for an error
``e`` (10,000 for ``e = 0.005``).  :func:`draw_until_precise` runs ``S``
draws, reads the largest error of every reported probability and, while it
is above the target, runs again with

    S' = min(cap, max(1.5 S, 1.2 S (error / target)^2))                      (1)

draws: the ``1 / sqrt(S)`` law aimed 20 % below the target (the next run's
error estimate is itself uncertain), at least 1.5 times as many (so the
number of runs stays logarithmic).  Each run starts afresh from the same key,
so the result is one ordinary run of ``S'`` draws, its numbers those of a
fixed ``num_draws = S'``.

The defaults of the comparisons (:func:`ecjax.prob.compare`,
:func:`ecjax.prob.compare_counts` with ``num_draws=None``): a first run of
:data:`FIRST_DRAWS`, the target :data:`DEFAULT_MC_ERROR` on every reported
probability, the cap :data:`DEFAULT_MAX_DRAWS` (never more than the former
fixed default).  A first run of 1000 draws also bounds what a run that saw no
event can miss: its probability is then below about ``3 / 1000`` (the rule of
three, 95 %), whose standard error ``sqrt(0.003 / 1000) = 0.0017`` is below the
target, so a batch-means error of 0 is no reason to draw more.

Where each draw depends only on the key and its index (the Bayesian
bootstrap's), a run need not start afresh: :func:`draw_until` extends the
draws made so far by rounds sized by the same eq. (1), and the adaptive
answer is identical to a fixed one of the same length.
:func:`ecjax.prob.bootstrap_metric` (default target
:data:`BOOTSTRAP_MC_ERROR`) draws this way.  :func:`ecjax.prob.compare_results`
(default target :data:`DEFAULT_MC_ERROR`, as the comparisons) extends its draws
by rounds too, but its rounds are keyed by their first draw's index, not by the
blocks of a fixed run: its adaptive answer is as precise as a fixed one, not
identical to one of the same length.  Both report what they drew with
:func:`precision_record` and :func:`describe_draws`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import numpy as np

from ecjax._src import inputs as v

# The adaptive default: first run, target standard error of every reported probability, cap.
FIRST_DRAWS = 1000
DEFAULT_MC_ERROR = 0.005
DEFAULT_MAX_DRAWS = 20_000
# bootstrap_metric's default target: its probabilities (P(best), pairwise) are a secondary summary of the metric's
# interval, so an error of 0.01 suffices there.
BOOTSTRAP_MC_ERROR = 0.01
# Eq. (1): aim this much below the target; grow at least this much per run.
_MARGIN = 1.2
_MIN_GROWTH = 1.5

R = TypeVar("R")


def next_draws(num_draws: int, error: float, target: float, max_draws: int) -> int:
    """Eq. (1): the draws of the next run after ``num_draws`` draws gave a largest ``error`` above ``target``."""
    wanted = math.ceil(num_draws * _MARGIN * (error / target) ** 2)
    return min(max_draws, max(wanted, int(_MIN_GROWTH * num_draws)))


def draw_until_precise(run: Callable[[int], R], largest_error: Callable[[R], float], target: float, *,
                       num_draws: int, max_draws: int) -> tuple[R, list[int], bool]:
    """``run(S)`` with ``S`` raised by eq. (1) until ``largest_error(result) <= target`` or ``S = max_draws``.

    Args:
      run: ``S -> result`` (one ordinary run of ``S`` draws).
      largest_error: the largest Monte Carlo standard error of the result's
        reported probabilities.
      target: the largest error allowed, in ``(0, 0.5)``.
      num_draws: the first run's ``S``.
      max_draws: the cap, at least ``num_draws``.

    Returns:
      ``(result, sizes, met)``: the last run's result, the sizes of all runs
      and whether the target was met.
    """
    target = v.as_scalar(target, "mc_error", low=0.0, high=0.5, strict=True)  # a standard error of a probability
    max_draws = v.as_scalar(max_draws, "max_draws", integer=True, low=num_draws)  # at least the first run's draws
    sizes, s = [], num_draws
    while True:
        result = run(s)
        sizes.append(s)
        error = largest_error(result)
        if error <= target or s >= max_draws:
            return result, sizes, bool(error <= target)
        s = next_draws(s, error, target, max_draws)


def first_draws(min_draws: int) -> int:
    """The adaptive first run: :data:`FIRST_DRAWS`, or more when the summary needs more (an HDI's ``min_draws``)."""
    return max(FIRST_DRAWS, int(min_draws))


def draws_needed(max_error: float, num_draws: int, target: float) -> int:
    """The ``1 / sqrt(S)`` law: draws in all for an error ``max_error`` at ``num_draws`` to fall to ``target``."""
    if max_error <= target:
        return num_draws
    return int(math.ceil(num_draws * (max_error / target) ** 2))


class DrawnUntil(NamedTuple):
    """What :func:`draw_until` returns: the draws, how many, the errors at the end and whether the target was met."""

    draws: Any
    num_draws: int
    max_error: float
    met: bool


def draw_until(draw: Callable[[int, int], Any], errors: Callable[[Any], np.ndarray], *, target: float,
               first_round: int, cap: int, join: Callable[[list], Any], multiple: int = 1) -> DrawnUntil:
    """Rounds of ``draw(start, count)`` until every entry of ``errors(draws)`` is at most ``target``, or ``cap``.

    The rounds extend the draws made so far (the first has ``first_round``); each brings the total to
    :func:`next_draws`'s eq. (1), at least one more draw.

    Args:
      draw: ``(start, count) -> draws`` of indices ``[start, start + count)``.
      errors: all draws so far ``->`` the Monte Carlo standard errors of the reported probabilities (any shape;
        empty: nothing to make precise, one round is enough).
      target: the largest error accepted.
      first_round: draws of the first round (capped by ``cap``).
      cap: the most draws in all.
      join: a list of rounds' draws ``->`` one (e.g. ``np.concatenate``).
      multiple: every round's size is a multiple of it (a chunk size), except where the cap cuts it.

    Returns:
      :class:`DrawnUntil`.
    """
    def rounded(count):
        return min(cap, -(-count // multiple) * multiple)

    total = rounded(first_round)
    drawn = join([draw(0, total)])
    while True:
        e = np.asarray(errors(drawn), np.float64)
        worst = float(np.max(e)) if e.size else 0.0
        if worst <= target or total >= cap:
            return DrawnUntil(drawn, total, worst, worst <= target)
        more = rounded(max(next_draws(total, worst, target, cap), total + 1)) - total
        drawn = join([drawn, draw(total, more)])
        total += more


def precision_record(until: DrawnUntil, target: float, cap: int) -> dict:
    """The JSON-ready record of a :func:`draw_until` run: the target, the largest error reached, whether the target
    was met, and the cap."""
    return {"mc_error": float(target), "max_error": float(until.max_error), "met": bool(until.met), "cap": int(cap)}


def describe_draws(precision: dict | None, probabilities: str = "every reported probability") -> str:
    """How the draws were made, in words: ``"fixed"`` (``precision`` None) or the target of a
    :func:`precision_record` on ``probabilities`` and whether it was met."""
    if precision is None:
        return "fixed"
    return (f"until {probabilities}'s Monte Carlo error <= {precision['mc_error']:g} "
            f"(at most {precision['cap']}): {'met' if precision['met'] else 'not met, cap reached'}")
