"""The doubt decomposition of :func:`~ecjax.prob.compare` and its per-draw ties.

**Doubt decomposition** (:class:`~ecjax.prob.Doubt`).  With ``r`` the
recommendation, the doubt is ``P(some system other than r, or than those
tied with r, has a higher yield)``: systems with identical confusion counts
are *tied* (their expected yields are equal in every component) and a tie is
not doubt.  It is computed four times, with one decision rule throughout:

* ``all``: every source uncertain;
* ``costs_only``: ``U_s`` drawn, ``P`` at ``E[P]``, the rates at their
  posterior mean;
* ``priors_only``: uncertain deployment priors drawn, ``U`` at ``U_hat``,
  the rates at their posterior mean;
* ``rates_only``: the rates drawn (with the test set's class frequencies
  when ``priors=None``), ``U`` at ``U_hat``, ``P`` at ``E[P]``.

``costs_only`` is exactly 0 for a fixed utility matrix and ``priors_only``
for fixed priors or the test set's own frequencies (a certain source is
not drawn at all); ``rates_only`` tends to 0 as the test set grows without
bound (the rates posterior concentrates on its mean).  With fixed
decisions every component has the same expected yield (the closed form
of :mod:`ecjax.prob.compare`), so all four are about the same system ``r``; with per-draw
decisions each component is about the system its own expected yield
recommends, and ties are judged draw by draw (identical counts in that
draw).  The doubt is not additive: sources can reinforce each other.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import jax
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src import random_bits
from ecjax._src.prob import ranking


def tie_groups(labels: ArrayLike, systems: tuple) -> tuple:
    """The names of each group of tied systems (equal tie ``labels`` ``(M,)``), groups of one left out."""
    labels = np.asarray(labels)
    return tuple(tuple(systems[j] for j in np.flatnonzero(labels == g)) for g in np.unique(labels)
                 if np.sum(labels == g) > 1)


def best_or_tied(yields: ArrayLike, tie_labels: ArrayLike) -> tuple[np.ndarray, float, np.ndarray, float]:
    """Per-draw ties: ``(p_best, p_tie)`` and their batch-means errors (:func:`ranking.batch_means_error`).

    In draw ``s`` the best system is ``t_s = argmax_m yield_sm``.  The draw
    is a *tie* when another system has ``t_s``'s confusion counts in that
    draw (``tie_labels[s, m] == tie_labels[s, t_s]``,
    :func:`~ecjax._src.prob.draw_models.outputs.tie_labels_of`): they made the same
    decisions, so their yields differ only by the noise of their rate draws
    (or not at all), and no system won.  Otherwise ``t_s`` won.  So
    ``p_best[m] = P(t_s = m, not a tie)``, ``p_tie = P(tie)`` and ``sum_m
    p_best[m] + p_tie = 1`` (exact counts over ``S``, in float64).

    Args:
      yields: ``(S, M)`` yield draws.
      tie_labels: ``(S, M)`` per-draw tie labels (equal labels: equal counts).
    """
    y, labels = np.asarray(yields), np.asarray(tie_labels)
    s, m = y.shape
    top = np.argmax(y, axis=1)
    tie = np.count_nonzero(labels == np.take_along_axis(labels, top[:, None], axis=1), axis=1) > 1
    wins = (top[:, None] == np.arange(m)) & ~tie[:, None]
    p_best = np.count_nonzero(wins, axis=0) / s
    return (p_best, np.count_nonzero(tie) / s, ranking.batch_means_error(wins),
            float(ranking.batch_means_error(tie[:, None])[0]))


def decompose(host: dict[str, Any], yields: np.ndarray, p_best: np.ndarray, rec: int, static_ties: np.ndarray | None,
              per_draw: bool, components: tuple[str, ...], key: jax.Array, hdi_prob: float) -> ranking.Doubt:
    """The four doubt components, ties counted as the recommended system's wins.

    Args:
      host: the draws on the host: ``(S, M)`` yields of each component in
        ``components`` and, with per-draw decisions, their ``ties_<name>``.
      yields: the ``(S, M)`` yields of ``all``; ``p_best``: their P(best).
      rec: the recommendation (highest expected yield).
      static_ties: ``(M,)`` tie labels of fixed counts (``None``: per draw).
      per_draw: whether each draw made its own decisions: each component is
        then about the system its own expected yield recommends, and its
        ties are judged draw by draw.
      components: the uncertain sources' components; the others are 0 (a
        certain source leaves no doubt).
      key: for the summaries of the components; ``hdi_prob``: the main
        summary's, so that both share one compiled program.
    """
    values: dict[str, float] = {}
    recs: dict[str, int] = {}
    p_bests: dict[str, Any] = {"all": p_best}  # None: a certain source, no component
    errors: dict[str, Any] = {}
    keys = random_bits.split_keys(key, 3)
    for i, name in enumerate(ranking.Doubt.COMPONENTS):
        if name != "all" and name not in components:
            values[name], recs[name], p_bests[name] = 0.0, rec, None  # a certain source leaves no doubt
            continue
        y = yields if name == "all" else host[name]
        ties: Any = host.get(f"ties_{name}", static_ties)
        # Fixed decisions: every component's expected yield is the closed form, so all are about `rec`.
        r = rec if (name == "all" or not per_draw) else int(np.argmax(y.mean(0, dtype=np.float64)))
        share, errors[name] = ranking.group_win_rate(v.to_device(y), v.to_device(ties), r)
        values[name], recs[name] = 1.0 - share, r
        if name != "all" and per_draw:
            p_bests[name] = best_or_tied(y, ties)[0]  # draws whose best system is tied are ties, as in `all`
        elif name != "all":
            # With the HDI of the main summary (unused here), so that both share one compiled program.
            p_bests[name] = np.asarray(ranking.summarize(keys[i - 1], v.to_device(y), hdi_prob=hdi_prob)["p_best"])
    return ranking.Doubt(p_bests["all"], p_bests["costs_only"], p_bests["rates_only"], rec,
                         p_best_priors_only=p_bests["priors_only"], values=values, recommendations=recs,
                         errors=errors)
