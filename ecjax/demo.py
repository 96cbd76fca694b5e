"""``ecjax demo``: the main job on data the package carries or generates."""

from ecjax._src.demo import FACTORY_COUNTS, FACTORY_UTILITIES, FACTORY_UTILITIES_ALT, screening_problem

__all__ = ["FACTORY_COUNTS", "FACTORY_UTILITIES", "FACTORY_UTILITIES_ALT", "screening_problem"]
