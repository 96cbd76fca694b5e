"""The binary utility space of Dyrland et al. (2022) Fig. 1, coloured by the winning classifier.

After the affine normalization of eq. 12 a binary utility matrix has two
degrees of freedom, the coordinates ``(x, y)`` of eq. 13 (rows = true class
here, :func:`ecjax.costs.utility_from_xy`)::

    U(x, y) = [[1 - max(x, 0),  max(-y, 0)],
               [max(y, 0),      1 - max(-x, 0)]]

on the hexagon ``|x| <= 1``, ``|y| <= 1``, ``|x - y| <= 1`` (the two cut
corners are matrices where a wrong decision is worth more than a right
one).  The centre is the identity (accuracy).  Because the utility yield is
invariant under affine changes of the utility scale (eq. 11), the winner at
each point is the winner for every utility matrix equivalent to ``U(x, y)``:
the map covers *all* binary evaluation problems.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src import result_formats
from ecjax._src.costs import utility_from_xy
from ecjax._src.sweep.grids import Axis, linspace, product, transform
from ecjax._src.sweep.engine import SweepSettings, check_sweep_settings
from ecjax._src.sweep.inputs import check_values_kept
from ecjax._src.sweep.sweeps import UNDEFINED, SweepResult, counts_problem, run_sweep, scores_problem


@dataclass
class UtilitySpaceMap:
    """Winners over the utility plane of Dyrland et al. (2022) Fig. 1.

    Attributes:
      x, y: ``(R,)`` grid coordinates (eq. 13).
      winners: ``(R, R)``: ``winners[i, j]`` is the best system at
        ``(x[j], y[i])`` (rows = y, so ``imshow(winners, origin="lower")``
        draws Fig. 1's orientation); ``-1`` outside the hexagon.
      yields: ``(R, R, S)`` utility yields (``NaN`` outside), or ``None``.
      win_fraction: ``(S,)`` share of the hexagon's grid points each system
        wins (its area share, up to the grid resolution).
      result: the underlying :class:`~ecjax.sweep.SweepResult`.
    """

    x: np.ndarray
    y: np.ndarray
    winners: np.ndarray | None
    yields: np.ndarray | None
    win_fraction: np.ndarray
    result: SweepResult

    def to_frame(self, systems: Sequence[str] | None = None) -> Any:
        """A pandas ``DataFrame`` of the grid points inside the hexagon (pandas is optional: ``pip install
        "ecjax[pandas]"``): ``x``, ``y``, the ``winner`` (a system's name or ``"tie"``) and, where kept, each
        system's yield.  ``to_frame().winner.value_counts(normalize=True)`` is :attr:`win_fraction` (ties apart)."""
        check_values_kept(self.winners, "to_frame")
        pd = result_formats.pandas()
        names = v.system_names(systems, None, len(self.win_fraction))
        rows, cols = np.nonzero(np.asarray(self.winners) != UNDEFINED)
        columns: dict[str, Any] = {"x": np.asarray(self.x)[cols], "y": np.asarray(self.y)[rows]}
        if self.yields is not None:
            columns.update({n: np.asarray(self.yields)[rows, cols, i] for i, n in enumerate(names)})
        columns["winner"] = np.array([*names, "tie", None], dtype=object)[np.asarray(self.winners)[rows, cols]]
        return pd.DataFrame(columns)


def _plane_utilities(vals):
    y, x = vals
    # Points outside the hexagon are masked; clamp them so their (unused) values stay finite.
    y = jnp.clip(y, x - 1.0, x + 1.0)
    return utility_from_xy(x, y)


@dataclass(frozen=True)
class _Masked:
    """Marks grid points outside the hexagon (``|x - y| > 1``) as not in the swept space.

    On the ``R x R`` grid ``x - y = 2 (col - row) / (R - 1)``, so the test is on integers: exact on the boundary.
    """

    inner: Callable
    resolution: int

    def __call__(self, args, idx):
        vals, ok = self.inner(args, idx)
        row, col = idx // self.resolution, idx % self.resolution
        inside = 2 * jnp.abs(col - row) <= self.resolution - 1
        return vals, ok & inside


def utility_plane(resolution: int) -> Axis:
    """The ``(y, x)`` grid over ``[-1, 1]^2`` as an axis of eq. 13 utility matrices (rows = y)."""
    r = v.as_scalar(resolution, "resolution", integer=True, low=2)
    base = product(linspace(-1.0, 1.0, r), linspace(-1.0, 1.0, r))
    return transform(base, _plane_utilities)


def utility_space_map(counts: ArrayLike | None = None, *, labels: ArrayLike | Sequence[ArrayLike] | None = None,
                      scores: ArrayLike | Sequence[ArrayLike] | None = None, priors: ArrayLike | None = None,
                      score_type: str = "log_posteriors", decision_rule: str = "bayes", resolution: int = 101,
                      settings: SweepSettings = SweepSettings()) -> UtilitySpaceMap:
    """Which classifier wins at each point of the utility space of Dyrland et al. (2022) Fig. 1.

    Give either ``counts`` (decisions fixed: ``(S, 2, 2)`` confusion counts)
    or ``labels`` and ``scores`` (scores given: at every utility matrix the
    systems decide by Bayes' rule, ``decision_rule="bayes"``, or at their
    best threshold found with the ROC tangent criterion,
    ``decision_rule="optimal_threshold"``, Dyrland et al. (2022) eqs. 24-25).

    Args:
      counts: ``(S, 2, 2)`` confusion counts, rows = true class.
      labels, scores, score_type: as in :func:`ecjax.sweep.sweep_scores`.
      priors: class proportions (default: the data's).  Required for
        ``"llr"``/``"log_likelihoods"`` scores with Bayes decisions.
      resolution: grid points per axis (``R``); the hexagon holds about 3/4
        of the ``R^2`` points.
      settings: as in :func:`ecjax.sweep.sweep_counts` (its ``max_flips``
        and ``point_batch`` too).

    Returns:
      :class:`UtilitySpaceMap`.
    """
    r = v.as_scalar(resolution, "resolution", integer=True, low=2)
    settings = check_sweep_settings(settings)
    plane = utility_plane(r)
    # Decisions given (counts) or made from scores (labels and scores): exactly one of the two.
    v.check_exclusive({"counts": counts, "labels": labels})
    v.check_exclusive({"counts": counts, "scores": scores})
    if counts is not None:
        if decision_rule != "bayes":
            raise v.InputError("`decision_rule` applies to scores; with counts the decisions are given")
        problem = counts_problem(counts, None, plane, priors)
    else:
        assert labels is not None and scores is not None  # both given: checked above
        problem = scores_problem(labels, scores, None, plane, priors, score_type=score_type,
                                 decision_rule=decision_rule, point_batch=settings.point_batch)
    res = run_sweep(dataclasses.replace(problem, point_fn=_Masked(problem.point_fn, r)), settings)
    coords = np.linspace(-1.0, 1.0, r)
    return UtilitySpaceMap(coords, coords, res.winners, res.values, res.win_fraction, res)
