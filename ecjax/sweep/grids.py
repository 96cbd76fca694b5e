"""Sweep axes: what is swept (cost matrices, priors, utility coordinates) and how."""

from ecjax._src.sweep.grids import (
    Axis,
    cost_ratios,
    effective_priors,
    linspace,
    product,
    random,
    simplex,
    take,
    transform,
    values,
)

__all__ = [
    "Axis",
    "take",
    "values",
    "linspace",
    "transform",
    "cost_ratios",
    "effective_priors",
    "simplex",
    "random",
    "product",
]
