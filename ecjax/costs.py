"""Cost and utility matrices: constructors and transforms."""

from ecjax._src.costs import (
    StructuredCosts,
    balanced,
    class_costs,
    costs_to_utilities,
    f_beta,
    net_benefit,
    normalize_rows,
    rescale_unit,
    scale_rows,
    utilities_to_costs,
    utility_from_xy,
    xy_from_utility,
    zero_one,
)

__all__ = [
    "StructuredCosts",
    "class_costs",
    "scale_rows",
    "zero_one",
    "balanced",
    "f_beta",
    "net_benefit",
    "utilities_to_costs",
    "costs_to_utilities",
    "normalize_rows",
    "rescale_unit",
    "utility_from_xy",
    "xy_from_utility",
]
