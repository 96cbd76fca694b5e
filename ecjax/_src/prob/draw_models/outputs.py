"""What every draw model of :func:`~ecjax.prob.compare` gives: yield, EC and NEC draws, the doubt components' yields
and the systems' tie labels, from a block of matched draws of utilities, priors and weights.

``yield_sm = sum_ij U_s,ij P_s,i R_s,m,ij`` (Dyrland et al. 2022, eq. 10; rows = true class); the EC is that of
costs ``-U`` (Ferrer 2022a, eq. 2); the NEC (Ferrer 2022a, eq. 4) uses the row-normalized costs ``max_j U_ij - U_ij``
(Ferrer 2025, §2).  The weights may be rates or joint probabilities (:func:`~ecjax._src.metrics.expected_value`
row-normalizes); with ``joint_priors`` the class priors are the class marginals of the paired model's joint weights
(the test set's frequencies).
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.confusion import data_priors
from ecjax._src.costs import normalize_rows
from ecjax._src.decisions import naive_expected_cost
from ecjax._src.draw_runner import padded_map
from ecjax._src.metrics import expected_value


def evaluate(utilities, weights, priors, naive_costs=None):
    """Yield, EC and NEC draws; ``naive_costs``: the ``(K, D)`` row-normalized costs of the naive EC when
    ``utilities`` and ``weights`` are merged cells (:mod:`~ecjax._src.prob.aggregation`), whose columns are no
    decisions."""
    p = priors[..., None, :]
    yields = expected_value(weights, utilities[..., None, :, :], p)
    costs = normalize_rows(-utilities)
    ec_normalized = expected_value(weights, costs[..., None, :, :], p)
    naive = naive_expected_cost(costs[..., None, :, :] if naive_costs is None else naive_costs, p)
    nec = jnp.where(naive > 0, ec_normalized / jnp.where(naive > 0, naive, 1.0), jnp.nan)
    return yields, -yields, nec


@partial(jax.jit, static_argnames=("chunk",))
def _evaluate_chunked(utilities, weights, priors, *, chunk):
    s = utilities.shape[0]
    draws = tuple(jnp.broadcast_to(x, (s,) + x.shape[1:]) for x in (utilities, weights, priors))
    return padded_map(lambda a: evaluate(*a), draws, chunk)


def evaluate_draws(utilities: ArrayLike, weights: ArrayLike, priors: ArrayLike, *,
                   chunk_size: int | None = None) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Kernel: yield, EC and NEC draws ``(S, M)`` from matched draws.

    Args:
      utilities: ``(S, K, D)`` utility matrices.
      weights: ``(S, M, K, D)`` confusion rates or joint probabilities (any
        row scaling: :func:`~ecjax._src.metrics.expected_value` row-normalizes).
      priors: ``(S, K)`` class priors.
      chunk_size: draws evaluated at once (default: as many as keep a
        chunk's ``(C, M, K, D)`` intermediates near ``2^22`` elements).  The
        draws are independent, so the chunk size changes nothing but, at
        most, the float32 rounding (XLA may vectorize the sums differently).

    ``yield_sm = sum_ij U_s,ij P_s,i R_s,m,ij`` (Dyrland et al. 2022, eq. 10); the EC is
    that of costs ``-U`` (Ferrer 2022a, eq. 2); the NEC (Ferrer 2022a, eq. 4) uses the
    row-normalized costs ``max_j U_ij - U_ij`` (Ferrer 2025, §2), for which the
    naive EC is positive unless one decision is best for every class (NaN
    then).
    """
    utilities, weights, priors = jnp.asarray(utilities), jnp.asarray(weights), jnp.asarray(priors)
    s = utilities.shape[0]
    if chunk_size is None:
        chunk = max(1, (1 << 22) // max(1, math.prod(weights.shape[1:])))
    else:
        chunk = v.as_scalar(chunk_size, "chunk_size", integer=True, low=1)
    return _evaluate_chunked(utilities, weights, priors, chunk=min(chunk, s))


def _yields(utilities, weights, priors, *, joint_priors, block):
    p = data_priors(weights[..., 0, :, :]) if joint_priors else priors
    y = expected_value(weights, utilities[..., None, :, :], p[..., None, :])
    return jnp.broadcast_to(y, (block, weights.shape[-3]))


_yields_kernel = partial(jax.jit, static_argnames=("joint_priors", "block"))(_yields)


def component_yield(utilities: jax.Array, weights: jax.Array, priors: jax.Array, *, joint_priors: bool,
                    block: int) -> jax.Array:
    """``(B, M)`` yields ``sum_ij U_ij P_i R_m,ij`` of a doubt component (each factor may be fixed: they broadcast).

    With ``joint_priors`` the priors are the class marginals of ``weights``.
    """
    return _yields_kernel(utilities, weights, priors, joint_priors=joint_priors, block=block)


@partial(jax.jit, static_argnames=("joint_priors",))
def all_outputs(utilities: jax.Array, weights: jax.Array, priors: jax.Array, *,
                joint_priors: bool) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Yield, EC and NEC draws of the ``all`` posterior."""
    return evaluate(utilities, weights, data_priors(weights[:, 0]) if joint_priors else priors)


@partial(jax.jit, static_argnames=("joint_priors", "block", "components"))
def _fixed_outputs(u, w, p_all, u_hat, mean_weights, p_bar, p_rates, naive_costs, *, joint_priors, block,
                   components):
    out = dict(zip(("yields", "ec", "nec"), evaluate(u, w, data_priors(w[:, 0]) if joint_priors else p_all,
                                                     naive_costs)))
    args = {"costs_only": (u, mean_weights, p_bar), "priors_only": (u_hat, mean_weights, p_all),
            "rates_only": (u_hat, w, p_rates)}
    for name in components:
        out[name] = _yields(*args[name], joint_priors=joint_priors, block=block)
    return out


def fixed_outputs(weights: jax.Array, draws, centre, naive_costs=None, *, joint_priors: bool, block: int,
                  components: tuple[str, ...]) -> dict[str, jax.Array]:
    """One program for a block of fixed counts: the ``all`` draws and the doubt components' yields.

    ``weights``: the block's ``(B, M, K, D)`` draws of the model; ``draws``:
    its :class:`~ecjax._src.prob.draw_models.protocol.BlockDraws`; ``centre``:
    the :class:`~ecjax._src.prob.draw_models.protocol.Centre`.  ``components``: the
    names among ``costs_only`` ``(U_s, E[P], mean weights)``, ``priors_only``
    ``(U_hat, P_s, mean weights)``, ``rates_only`` ``(U_hat, P_rates, W_s)``
    to compute (as :func:`component_yield`), in one compiled program instead
    of one each.  ``naive_costs``: see :func:`evaluate`.
    """
    return _fixed_outputs(draws.utilities, weights, draws.priors, centre.utilities, centre.mean_weights,
                          centre.priors, draws.rates_priors, naive_costs, joint_priors=joint_priors, block=block,
                          components=components)


@jax.jit
def masked_sum(x: jax.Array, valid: jax.Array) -> jax.Array:
    """``sum_b x_b`` over the block's valid draws (``valid`` ``(B,)``): the Monte Carlo mean's running sum."""
    return jnp.sum(jnp.where(valid[:, None, None, None], x, 0.0), 0)


def tie_labels_of(counts, xp):
    """``(..., M)``: the lowest index of a system with the same ``(K, D)`` counts (equal labels = tied systems).

    ``xp``: ``numpy`` for host counts (no compiled program), ``jax.numpy`` for the draws' own (:data:`tie_labels`).
    """
    same = xp.all(counts[..., :, None, :, :] == counts[..., None, :, :, :], axis=(-2, -1))
    return xp.argmax(same, axis=-1).astype(xp.int32)


tie_labels = jax.jit(partial(tie_labels_of, xp=jnp))
