"""Draw until the answer is precise enough: rounds of Monte Carlo draws under a precision target and a cap.

A posterior summarized by probabilities (P(best), pairwise, ROPE) needs as many draws as its least precise
probability: a clear winner is settled after a few hundred draws, a close call needs thousands.  Every reported
probability ``p`` estimated from ``S`` draws has a Monte Carlo standard error ``e(S)`` that falls as
``1 / sqrt(S)`` (independent draws: ``sqrt(p (1 - p) / S)``; correlated ones: the batch-means estimate), so after
a round of ``S`` draws with largest error ``e`` the target ``t`` needs about

    S' = S (e / t)^2                                                                                     (1)

draws in all.  :func:`draw_until` draws a first round, then rounds up to (1) with a margin (and at least half
as many again, so that a poor estimate of the error costs few rounds), never more than ``cap`` draws in all, and
stops when every error is at most the target.  It is :func:`ecjax.prob.compare.draw_to_precision`'s rule, except
that a round extends the draws made so far instead of starting afresh.  The caller says how to make draws
``[start, start + count)`` and how to measure the errors of all draws so far; draws that depend only on the key
and their index (as the bootstrap's) make the adaptive answer identical to a fixed one of the same length.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

# The default precision target (the standard error of every reported probability), first round and cap when the
# settings name no number of draws.
DEFAULT_MC_ERROR = 0.01
DEFAULT_FIRST_ROUND = 1000
DEFAULT_CAP = 20_000
# Rounds aim this much beyond (1): the errors are themselves estimates, and a round that falls just short costs a
# whole extra round.
_MARGIN = 1.2


class DrawnUntil(NamedTuple):
    """What :func:`draw_until` returns: the draws, how many, the errors at the end and whether the target was met."""

    draws: Any
    num_draws: int
    max_error: float
    met: bool


def draws_needed(max_error: float, num_draws: int, target: float) -> int:
    """Eq. (1): draws for an error ``max_error`` at ``num_draws`` to fall to ``target``."""
    if max_error <= target:
        return num_draws
    return int(math.ceil(num_draws * (max_error / target) ** 2))


def draw_until(draw: Callable[[int, int], Any], errors: Callable[[Any], np.ndarray], *, target: float,
               first_round: int, cap: int, join: Callable[[list], Any], multiple: int = 1) -> DrawnUntil:
    """Rounds of ``draw(start, count)`` until every entry of ``errors(draws)`` is at most ``target``, or ``cap``.

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

    rounds = [draw(0, rounded(first_round))]
    total = rounded(first_round)
    while True:
        drawn = join(rounds)
        e = np.asarray(errors(drawn), np.float64)
        worst = float(np.max(e)) if e.size else 0.0
        if worst <= target or total >= cap:
            return DrawnUntil(drawn, total, worst, worst <= target)
        more = rounded(max(int(_MARGIN * draws_needed(worst, total, target)), int(1.5 * total), total + 1)) - total
        rounds = [drawn, draw(total, more)]
        total += more
