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

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax import inputs as v

EXACT = jax.lax.Precision.HIGHEST
PRECISIONS = ("exact",)

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
