"""Sensitivity sweeps at scale: chunked, device-sharded sweeps over costs, priors and utility space.

* :mod:`~ecjax.sweep.grids`: what is swept (cost ratios, effective priors,
  user matrices, simplex priors, random draws of any sampler, products);
* :func:`sweep_counts` (decisions given) and :func:`sweep_scores` (Bayes
  decisions recomputed at every point), :func:`sweep_map` (any point function);
* :func:`sweep_sample_costs`, :func:`sweep_sample_costs_of_decisions`: the scale of the per-sample part of
  per-sample costs (:mod:`ecjax.scores.sample_costs`);
* :func:`utility_space_map`: winners over the binary utility plane of Dyrland et al. (2022) Fig. 1;
* :func:`roc_convex_hull`, :func:`roc_tangent_winners`: the ROC tangent
  criterion (Dyrland et al. 2022, eqs. 24-25);
* :func:`metric_reliability`: the Monte Carlo study of Dyrland et al. (2022) §4.2 (Figs. 6-7).

Everything runs on :mod:`~ecjax.sweep.engine`: fixed-size chunks (memory
bounded whatever the number of points), each sharded over all visible devices.
"""

from ecjax._src.sweep import engine, grids
from ecjax._src.sweep.engine import SweepSettings
from ecjax._src.sweep.grids import Axis
from ecjax._src.sweep.reliability import METRICS, Estimate, metric_reliability
from ecjax._src.sweep.roc import roc_convex_hull, roc_tangent_winners
from ecjax._src.sweep.sample_costs import sweep_sample_costs, sweep_sample_costs_of_decisions
from ecjax._src.sweep.sweeps import TIE, UNDEFINED, SweepResult, sweep_counts, sweep_map, sweep_scores
from ecjax._src.sweep.utility_space import UtilitySpaceMap, utility_plane, utility_space_map

__all__ = [
    "METRICS",
    "Axis",
    "Estimate",
    "SweepResult",
    "SweepSettings",
    "TIE",
    "UNDEFINED",
    "UtilitySpaceMap",
    "engine",
    "grids",
    "metric_reliability",
    "roc_convex_hull",
    "roc_tangent_winners",
    "sweep_counts",
    "sweep_map",
    "sweep_sample_costs",
    "sweep_sample_costs_of_decisions",
    "sweep_scores",
    "utility_plane",
    "utility_space_map",
]
