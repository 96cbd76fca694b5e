"""Matrix products with a stated precision, and the argmins of Bayes decisions over them.

On NVIDIA GPUs (and TPUs) XLA runs float32 matrix products at reduced
precision unless the product says otherwise: TF32 keeps about 3 significant
digits, enough to flip a Bayes decision or move an expected cost in its
fourth digit.  Every product in ecjax therefore goes through :func:`matmul`
or :func:`einsum` here, which ask for ``Precision.HIGHEST`` (true float32 on
every backend; on CPU it is what XLA does anyway, so nothing gets slower).
``tests/test_precision.py`` traces the public kernels and fails on any
``dot_general`` that does not state this precision.

Bayes decisions are an argmin over such a product, computed the same way
(:func:`argmin_of_products`).  A ``precision="fast"`` mode (a bfloat16
tensor-core product, an error bound, and a float32 recomputation of the
samples within it) was removed: :func:`check_precision` refuses it and
points to ``"exact"``.  Two reasons, both measured:

* it could not keep its promise, the decisions of the exact product.  Where
  the two best expected costs of a sample lie within float32 rounding of
  each other (``~K 2^-24 max|c|``) the exact product's own decision depends
  on its summation order, which the backend picks (cuBLAS at ``HIGHEST`` on a
  GPU, Eigen on a CPU, another order for each shape).  A bound can find these
  samples but cannot tell which way the exact product rounded: any repair by
  a second product in another order differs there.  On an H100 it did at one
  of 60 cost matrices of CIFAR-10 scores (an EC 1.1e-4 off), and
  ``tests/test_precision.py`` shows two float32 orders disagreeing inside that
  band on adversarial near ties;
* it was not faster: 1.23 s against 7.3 ms for ``10^4 x 100`` posteriors
  and 1,000 cost matrices on an H100.  At ``K = 100`` the exact product is
  bound by writing and reducing its ``N B D`` float32 outputs, not by its
  multiply-adds, so a bfloat16 product, which writes the same outputs and
  needs a second reduction for the near ties, has no 3x to gain.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v

EXACT = jax.lax.Precision.HIGHEST


def matmul(a: ArrayLike, b: ArrayLike) -> jax.Array:
    """``a @ b`` in float32 on every backend (``Precision.HIGHEST``)."""
    return jnp.matmul(a, b, precision=EXACT)


def einsum(subscripts: str, *operands: ArrayLike) -> jax.Array:
    """``jnp.einsum`` in float32 on every backend (``Precision.HIGHEST``)."""
    return jnp.einsum(subscripts, *operands, precision=EXACT)


def argmin_of_products(x: jax.Array, y: jax.Array, *, precision: str = "exact") -> jax.Array:
    """``argmin_j (x @ y)[..., n, j]``: Bayes-decision style argmins of a batched float32 product.

    Args:
      x: ``(..., N, K)`` (posteriors).
      y: ``(..., K, D)``; batch axes broadcast with those of ``x``.
      precision: ``"exact"``, the only mode (``"fast"`` was removed: see
        the module docstring).

    Returns:
      ``(..., N)`` int32; ties go to the lowest index.
    """
    check_precision(precision)
    return jnp.argmin(matmul(x, y), axis=-1).astype(jnp.int32)


def check_precision(precision: str) -> str:
    """``precision`` if it is ``"exact"``; :class:`InputError` otherwise (``"fast"``: removed, use ``"exact"``)."""
    return v.check_precision(precision)


def broadcast_contract(a: jax.Array, b: jax.Array, num_axes: int) -> jax.Array:
    """``sum(a * b)`` over the last ``num_axes`` axes, the other axes broadcast, as one float32 product.

    ``jnp.einsum("...ij,...ij->...")`` with broadcast axes materializes the
    broadcast operands (or loops over them); here an axis that only ``b``
    has (size 1 in ``a``) becomes a column of one matrix product, one that
    only ``a`` has a row, and one both have a batch axis.  Many cost
    matrices against a few systems' rates is then ``(B, K D) @ (K D, S)``:
    one read of the costs.  Same result as the broadcast sum up to float32
    summation order; ``Precision.HIGHEST``.
    """
    lead = len(jnp.broadcast_shapes(a.shape[:-num_axes], b.shape[:-num_axes]))
    a = a.reshape((1,) * (lead + num_axes - a.ndim) + a.shape)
    b = b.reshape((1,) * (lead + num_axes - b.ndim) + b.shape)
    both = [i for i in range(lead) if a.shape[i] > 1 and b.shape[i] > 1]
    a_only = [i for i in range(lead) if a.shape[i] > 1 and b.shape[i] == 1]
    b_only = [i for i in range(lead) if b.shape[i] > 1 and a.shape[i] == 1]
    neither = [i for i in range(lead) if a.shape[i] == 1 and b.shape[i] == 1]
    contract = list(range(lead, lead + num_axes))
    if not a_only and not b_only:  # no matrix product to form: the plain sum, as the elementwise kernels take it
        return jnp.sum(a * b, axis=tuple(contract)).reshape(jnp.broadcast_shapes(a.shape[:lead], b.shape[:lead]))
    # Drop the size-1 axes of each side, flatten the contracted ones, and put the larger operand first: its
    # free axes then lead the product, which XLA computes without transposing the large operand.
    def matrix(x, free):
        return jnp.transpose(x, both + free + [i for i in range(lead) if i not in both + free] + contract).reshape(
            [x.shape[i] for i in both + free] + [math.prod(x.shape[lead:])])

    first, second = (b_only, a_only) if b.size >= a.size else (a_only, b_only)
    x, y = (b, a) if b.size >= a.size else (a, b)
    nb = len(both)
    dims = (((nb + len(first),), (nb + len(second),)), (tuple(range(nb)), tuple(range(nb))))
    out = jax.lax.dot_general(matrix(x, first), matrix(y, second), dims, precision=(EXACT, EXACT))
    order = both + first + second + neither  # the axes of `out` (then size-1 axes for `neither`)
    out = out.reshape(out.shape + (1,) * len(neither))
    return jnp.transpose(out, [order.index(i) for i in range(lead)])
