"""Bayesian signed-rank test: two systems compared over many data sets (Benavoli et al. 2014; baycomp).

Each data set contributes one number per system (its mean result, from any
sampling method); ``d_i = b_i - a_i``, ``i = 1..n``, are the differences.
The Bayesian Wilcoxon signed-rank test of Benavoli, Corani, Mangili, Zaffalon
& Ruggeri (2014, "A Bayesian Wilcoxon signed-rank test based on the
Dirichlet process", ICML) puts a Dirichlet process prior on the
distribution of ``d`` whose base measure is a point mass at ``d_0 = 0`` of
strength ``s`` (the prior pseudo-observation).  The posterior of that
distribution is the Dirichlet process with atoms ``d_0, d_1, ..., d_n`` and
weights ``w ~ Dirichlet(s, 1, ..., 1)``.  For two independent draws
``Z, Z'`` of it, the signed-rank events have posterior probabilities::

    theta_right = P(Z + Z' > 2 rope)  = sum_ij w_i w_j H(d_i + d_j - 2 rope)
    theta_left  = P(Z + Z' < -2 rope) = sum_ij w_i w_j H(-d_i - d_j - 2 rope)
    theta_rope  = 1 - theta_left - theta_right

with ``H(x) = 1{x > 0} + 1/2 1{x = 0}`` (baycomp's ``heaviside``).  The
reported ``(p_left, p_rope, p_right)`` are baycomp's: the share of the
posterior draws of ``w`` in which each ``theta`` is the largest.  An exact tie
between regions is split evenly between them: with every difference 0 and
``rope = 0`` every sum is 0, so ``theta_left = theta_right = 1/2`` in every
draw, and identical systems get ``p_left = p_right = 1/2`` (NumPy's
``argmax``, as in baycomp, gave the leftmost region all of it: ``a``
better with probability 1).  Draws are made with an explicit
``jax.random`` key; they are batched over any leading axes of the inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.precision import einsum
from ecjax._src.prob import ranking
from ecjax._src.prob.inputs import check_draws_fit, fold_differences

# baycomp's defaults: the strength of the pseudo-observation at 0, and the number of posterior draws.
DEFAULT_PRIOR_STRENGTH = 0.5
DEFAULT_DRAWS = 50_000


class SignedRankTest(NamedTuple):
    """Posterior of the Bayesian signed-rank test (every ``p_*`` has the batch shape of the input).

    Attributes:
      p_left: share of the draws in which ``theta_left`` (``a`` better by more than ``rope``) is the largest.
      p_rope: the same for ``theta_rope`` (0 with ``rope = 0``).
      p_right: the same for ``theta_right`` (``b`` better by more than ``rope``).
      draws: ``(num_draws, ..., 3)`` posterior draws of ``(theta_left, theta_rope, theta_right)``.
      rope: the ROPE half-width; prior_strength: the weight of the pseudo-observation at 0.
    """

    p_left: jax.Array
    p_rope: jax.Array
    p_right: jax.Array
    draws: jax.Array
    rope: float
    prior_strength: float

    @property
    def probabilities(self) -> jax.Array:
        """``(..., 3)``: ``(p_left, p_rope, p_right)``, baycomp's triple."""
        return jnp.stack([self.p_left, self.p_rope, self.p_right], -1)

    @property
    def errors(self) -> jax.Array:
        """``(..., 3)`` Monte Carlo standard errors of :attr:`probabilities`, ``sqrt(p (1 - p) / S)`` (independent
        draws)."""
        p = self.probabilities
        return jnp.sqrt(p * (1 - p) / self.draws.shape[0])

    def summary(self, names: Sequence[str] = ("a", "b")) -> str:
        """One line per comparison: the three probabilities."""
        a, b = names
        p = np.asarray(self.probabilities)
        lines = []
        for index in np.ndindex(p.shape[:-1]):
            at = "" if not index else f"[{', '.join(map(str, index))}] "
            pl, pr_, pg = p[index]
            lines.append(f"{at}signed-rank test over data sets, {b} - {a}: P({a} better by > {self.rope:g}) = "
                         f"{pl:.3f}, P(equivalent within {self.rope:g}) = {pr_:.3f}, "
                         f"P({b} better by > {self.rope:g}) = {pg:.3f}")
        return "\n".join(lines)


def signed_rank_indicators(differences: ArrayLike, rope: ArrayLike) -> tuple:
    """``(below, above)``, each ``(..., n + 1, n + 1)``: ``H(-s_ij - 2 rope)`` and ``H(s_ij - 2 rope)`` for the
    pairwise sums ``s_ij = d_i + d_j`` of the atoms ``(0, d_1, ..., d_n)``, ``H(x) = 1{x > 0} + 1/2 1{x = 0}``.

    Concrete differences are compared in float64 on the host (a sum equal to ``2 rope`` is a tie, as in
    baycomp); traced ones in the default float type.
    """
    xp = jnp if v.is_tracer(differences) or v.is_tracer(rope) else np
    d = xp.asarray(differences)
    atoms = xp.concatenate([xp.zeros(d.shape[:-1] + (1,), d.dtype), d], -1)
    sums = atoms[..., :, None] + atoms[..., None, :]

    def heaviside(x):
        return (x > 0).astype(x.dtype) + 0.5 * (x == 0).astype(x.dtype)

    return heaviside(-sums - 2 * rope), heaviside(sums - 2 * rope)


@partial(jax.jit, static_argnames=("num_draws",))
def signed_rank_draws(key: jax.Array, below: jax.Array, above: jax.Array, prior_strength: ArrayLike, *,
                      num_draws: int) -> jax.Array:
    """``(num_draws, ..., 3)`` posterior draws of ``(theta_left, theta_rope, theta_right)`` (module docstring)
    from :func:`signed_rank_indicators`: ``theta = w^T H w`` with ``w ~ Dirichlet(prior_strength, 1, ..., 1)``."""
    f = jnp.result_type(float)
    below, above = jnp.asarray(below, f), jnp.asarray(above, f)
    n = below.shape[-1] - 1
    concentration = jnp.concatenate([jnp.full((1,), prior_strength, f), jnp.ones(n, f)])
    w = jax.random.dirichlet(key, concentration, shape=(num_draws,) + below.shape[:-2], dtype=f)
    left = einsum("s...i,...ij,s...j->s...", w, below, w)
    right = einsum("s...i,...ij,s...j->s...", w, above, w)
    return jnp.stack([left, 1 - left - right, right], -1)


@jax.jit
def region_shares(draws: jax.Array) -> jax.Array:
    """``(..., 3)``: the share of ``(S, ..., 3)`` draws in which each region has the largest probability, a draw
    whose largest probability several regions share counting ``1 / (their number)`` for each (module docstring)."""
    at_top = (draws == jnp.max(draws, -1, keepdims=True)).astype(draws.dtype)
    return jnp.mean(at_top / jnp.sum(at_top, -1, keepdims=True), axis=0)


def signed_rank_test(scores_a: ArrayLike, scores_b: ArrayLike | None = None, *, rope: float = 0.0,
                     prior_strength: float = DEFAULT_PRIOR_STRENGTH, key: jax.Array,
                     num_draws: int = DEFAULT_DRAWS) -> SignedRankTest:
    """Bayesian signed-rank test of two systems over ``n`` data sets (baycomp's ``SignedRankTest``).

    ``signed_rank_test(scores_a, scores_b)`` compares ``(..., n)`` results,
    one per data set (e.g. each data set's mean over its folds);
    ``signed_rank_test(d)`` takes the differences ``d = scores_b - scores_a``.
    The model and the probabilities are in the module docstring (Benavoli et
    al. 2014): ``p_left`` is about ``a`` being better (``b - a < -rope``),
    ``p_right`` about ``b``.

    Args:
      scores_a, scores_b: ``(..., n)`` results, ``n >= 2`` data sets; leading axes are batch axes.
      rope: half-width of the region of practical equivalence (>= 0), in the units of the results.
      prior_strength: weight ``s > 0`` of the prior pseudo-observation at 0 (baycomp's ``prior``, 0.5).
      key: ``jax.random`` key of the Dirichlet draws.
      num_draws: posterior draws (baycomp's ``nsamples``, 50,000).

    Returns:
      :class:`SignedRankTest`; the Monte Carlo error of each probability is
      :attr:`SignedRankTest.errors`.

    Example::

        >>> import jax
        >>> res = signed_rank_test([0.81, 0.79, 0.83, 0.80, 0.82], [0.84, 0.80, 0.85, 0.83, 0.83], rope=0.01,
        ...                        key=jax.random.key(0))
        >>> res.probabilities.shape
        (3,)
    """
    differences, _, _ = fold_differences(scores_a, scores_b, min_ndim=1)
    rope = ranking.check_rope(rope, optional=False)
    prior_strength = v.as_scalar(prior_strength, "prior_strength", low=0.0, strict=True)
    key = v.as_key(key)
    num_draws = v.as_scalar(num_draws, "num_draws", integer=True, low=1)
    batch = int(np.prod(differences.shape[:-1]))
    check_draws_fit(num_draws, 4 * batch * (differences.shape[-1] + 8))  # the weights, two sums and the triple
    below, above = signed_rank_indicators(differences, rope)
    draws = signed_rank_draws(key, below, above, prior_strength, num_draws=num_draws)
    shares = region_shares(draws)
    return SignedRankTest(p_left=shares[..., 0], p_rope=shares[..., 1], p_right=shares[..., 2], draws=draws,
                          rope=rope, prior_strength=prior_strength)
