"""Matrix products with a stated precision, and argmins that are fast yet exact.

On NVIDIA GPUs (and TPUs) XLA runs float32 matrix products at reduced
precision unless the product says otherwise: TF32 keeps about 3 significant
digits, enough to flip a Bayes decision or move an expected cost in its
fourth digit.  Every product in ecjax therefore goes through :func:`matmul`
or :func:`einsum` here, which ask for ``Precision.HIGHEST`` (true float32 on
every backend; on CPU it is what XLA does anyway, so nothing gets slower).
``tests/test_precision.py`` traces the public kernels and fails on any
``dot_general`` that does not state this precision.

Bayes decisions are an argmin over such a product, and there the fast
tensor-core rate can be had without giving up exactness
(:func:`argmin_of_products` with ``precision="fast"``):

1. compute ``V = X Y`` with both factors rounded to bfloat16 and float32
   accumulation (the tensor-core operation);
2. bound its error: with unit roundoff ``u = 2^-8`` for the bfloat16
   inputs and ``2^-24`` for the float32 accumulation of ``K`` terms,
   ``|V_nj - (XY)_nj| <= (2u + u^2 + 2 K 2^-24) sum_k |X_nk| |Y_kj|``,
   and since the rows of ``X`` are probabilities (``sum_k X_nk <= 1 + K 2^-24``)
   the sum is at most ``max |Y|`` (Higham, *Accuracy and Stability of
   Numerical Algorithms*, 2nd ed., §3.1, eq. 3.4-3.5);
3. a row whose best and second-best values are more than twice the bound
   (the fast error plus that of a float32 evaluation) apart has the same
   argmin in float32 as in exact arithmetic, so only the rows within the
   bound are recomputed in float32, a bounded batch at a time.

The decisions are then those of an exact float32 evaluation.  Two float32
evaluations summed in different orders can still disagree where the two best
expected costs are equal to within float32 rounding (``~K 2^-24 max|Y|``):
those are ties, on any backend.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax import inputs as v
from ecjax.random_bits import first_true_indices

EXACT = jax.lax.Precision.HIGHEST
PRECISIONS = ("exact", "fast")

# Unit roundoff of bfloat16 (8 significant bits) and of float32 (24).
_U_BF16 = 2.0**-8
_U_F32 = 2.0**-24
# Most pairs recomputed at once (floats of the gathered factors): bounds memory whatever the number of near-ties.
_REFINE_FLOATS = 1 << 21


def matmul(a: ArrayLike, b: ArrayLike) -> jax.Array:
    """``a @ b`` in float32 on every backend (``Precision.HIGHEST``)."""
    return jnp.matmul(a, b, precision=EXACT)


def einsum(subscripts: str, *operands: ArrayLike) -> jax.Array:
    """``jnp.einsum`` in float32 on every backend (``Precision.HIGHEST``)."""
    return jnp.einsum(subscripts, *operands, precision=EXACT)


def fast_matmul(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a @ b`` with bfloat16 factors and float32 accumulation: the tensor-core product.

    Deliberately inexact (about 3 significant digits); used only where
    :func:`argmin_of_products` bounds and repairs its error.
    """
    return jnp.matmul(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def fast_error_bound(num_terms: int, max_abs_y: jax.Array) -> jax.Array:
    """Bound on ``|fast_matmul(x, y) - exact float32 (x @ y)|`` when the rows of ``x`` are probabilities.

    The fast error (bfloat16 inputs, float32 accumulation) plus the error of
    the float32 evaluation it is compared with, both relative to exact
    arithmetic; ``max_abs_y`` is ``max |y|`` over the contracted entries.
    The 1.01 absorbs ``sum_k x_nk`` exceeding 1 by float32 rounding.
    """
    k = float(num_terms)
    # Input rounding of both factors, then float32 accumulation (doubled: tensor cores may truncate), then
    # the accumulation error of the float32 evaluation compared against.
    rel = 2 * _U_BF16 + _U_BF16**2 + 2 * k * _U_F32 + k * _U_F32
    return 1.01 * rel * max_abs_y


def argmin_and_near_ties(values: jax.Array, bound: jax.Array, axis: int) -> tuple[jax.Array, jax.Array]:
    """``(argmin, near_tie)`` along ``axis``: ties to the lowest index; near ties within ``2 * bound``.

    ``bound`` broadcasts against ``values`` with ``axis`` removed.
    """
    best = jnp.argmin(values, axis=axis)
    first = jnp.min(values, axis=axis)
    index = jax.lax.broadcasted_iota(jnp.int32, values.shape, axis % values.ndim)
    second = jnp.min(jnp.where(index == jnp.expand_dims(best, axis), jnp.inf, values), axis=axis)
    # A zero bound means an all-zero factor: every value is exactly 0 and the fast argmin is exact.
    return best.astype(jnp.int32), ((second - first) <= 2 * bound) & (bound > 0)


def refine_argmins(decisions: jax.Array, near_tie: jax.Array, exact_values: Callable[[jax.Array], jax.Array], *,
                   floats_per_pair: int) -> jax.Array:
    """Recompute the argmin of the flagged entries exactly.

    Args:
      decisions: ``(T,)`` int32 argmins from the fast product.
      near_tie: ``(T,)`` bool: entries whose fast argmin may be wrong.
      exact_values: ``t -> (len(t), D)`` exact float32 values of entries ``t``
        (an int32 vector of valid indices).
      floats_per_pair: floats one entry's recomputation gathers (memory per
        entry), which sets how many entries are recomputed per round.

    Rounds of at most ``2^21 / floats_per_pair`` entries run until no flag is
    left, so memory is bounded whatever the number of near ties.
    """
    total = decisions.shape[0]
    size = int(max(1, min(total, _REFINE_FLOATS // max(1, floats_per_pair))))

    def body(state):
        dec, flags = state
        t = first_true_indices(flags, size)  # padded with `total`
        vals = exact_values(jnp.minimum(t, total - 1))
        dec = dec.at[t].set(jnp.argmin(vals, axis=-1).astype(jnp.int32), mode="drop")
        return dec, flags.at[t].set(False, mode="drop")

    dec, _ = jax.lax.while_loop(lambda s: jnp.any(s[1]), body, (decisions, near_tie))
    return dec


def argmin_of_products(x: jax.Array, y: jax.Array, *, precision: str = "exact") -> jax.Array:
    """``argmin_j (x @ y)[..., n, j]``: Bayes-decision style argmins of a batched product.

    Args:
      x: ``(..., N, K)`` nonnegative rows summing to 1 (posteriors).
      y: ``(..., K, D)``; batch axes broadcast with those of ``x``.
      precision: ``"exact"`` (one float32 product) or ``"fast"``
        (bfloat16 tensor-core product, then the near ties recomputed in
        float32: see the module docstring).  Both give the decisions of an
        exact float32 evaluation.

    Returns:
      ``(..., N)`` int32; ties go to the lowest index.
    """
    if check_precision(precision) == "exact":
        return jnp.argmin(matmul(x, y), axis=-1).astype(jnp.int32)
    batch = jnp.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    n, k = x.shape[-2:]
    d = y.shape[-1]
    xb = jnp.broadcast_to(x, batch + (n, k)).reshape(-1, n, k)
    yb = jnp.broadcast_to(y, batch + (k, d)).reshape(-1, k, d)
    bound = fast_error_bound(k, jnp.max(jnp.abs(yb), axis=(-2, -1)))  # one bound per matrix
    dec, near = argmin_and_near_ties(fast_matmul(xb, yb), bound[:, None], axis=-1)
    flat_x = xb.reshape(-1, k)

    def exact_values(t):
        return einsum("tk,tkd->td", flat_x[t], yb[t // n])

    dec = refine_argmins(dec.reshape(-1), near.reshape(-1), exact_values, floats_per_pair=k * d + k)
    return dec.reshape(batch + (n,))


def check_precision(precision: str) -> str:
    """``precision`` if it names a supported mode, else :class:`InputError`."""
    return v.check_choice(precision, "precision", PRECISIONS)
