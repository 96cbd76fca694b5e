"""The unpaired model of fixed counts: independent Dirichlet posteriors of each system's rates, class by class.

``R_m,i* ~ Dirichlet(n_m,i* + alpha)`` (:mod:`~ecjax._src.prob.rates` eq. 1); the systems' test sets may differ.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.prob.draw_models.fixed_decisions import mean_weights
from ecjax._src.prob.draw_models.protocol import FixedModel
from ecjax._src.prob.rates import check_rows_for_concentration, sample_rates


class UnpairedState(NamedTuple):
    """``counts``: ``(M, K, D)`` on the device; ``alpha``: the concentration added to each cell."""

    counts: jax.Array
    alpha: float


def prepare(counts: ArrayLike, alpha: float) -> FixedModel:
    """The model of ``(M, K, D)`` fixed counts (every row with samples, unless ``alpha > 0``)."""
    counts = np.asarray(counts, np.float64)
    check_rows_for_concentration(counts, alpha)
    m, k, d = counts.shape
    state = UnpairedState(v.to_device(counts, jnp.result_type(float)), float(alpha))
    return FixedModel(draw, state, counts, mean_weights(counts, alpha), m * k * d)


def draw(key: jax.Array, state: UnpairedState, utilities: jax.Array, priors: jax.Array, *,
         num_draws: int) -> jax.Array:
    """``(B, M, K, D)`` rate draws (the utilities and priors do not enter)."""
    return sample_rates(key, state.counts, num_draws=num_draws, concentration=state.alpha)
