"""Exact, vectorized samplers shared by the models of :mod:`ecjax.prob`.

``jax.random.gamma`` splits one key per element and runs a per-element
rejection loop; on CPU that makes ``10^7`` variates take tens of seconds.
The Dirichlet posteriors of confusion rates need that many for every
ranking, so this module has its own exact sampler: the Marsaglia-Tsang
method (ACM TOMS 26(3), 2000) vectorized over the whole array, with the
rare rejected proposals retried on a compacted buffer instead of redrawing
the full array.  It is exact: every accepted proposal has the Gamma
distribution; only the order of the random numbers differs from
``jax.random.gamma``.

(The faster ``rbg`` bit generator was tried and dropped: under ``vmap``,
keys derived inside the retry loop made the loop hang with jax 0.10.2.)
"""

from __future__ import annotations

from functools import partial

import numpy as np

import jax
import jax.numpy as jnp

from ecjax._random import uniform


def _mt_constants(shape):
    # Marsaglia-Tsang needs a >= 1; a < 1 is boosted to a + 1 and corrected by U^(1/a).
    boosted = jnp.where(shape < 1.0, shape + 1.0, shape)
    d = boosted - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)
    return d, c


def _log1p_tail(t):
    """``S(t) = log1p(t) - t + t^2/2 - t^3/3 = sum_{k >= 4} (-1)^(k+1) t^k / k``, accurate in float32.

    The series (Horner form, 12 terms) for ``|t| < 0.2``, where its
    truncation error is below 1e-9 relative; the direct formula otherwise,
    which only occurs for shapes below ~100, where it loses nothing.
    """
    small = jnp.abs(t) < 0.2
    ts = jnp.where(small, t, 0.0)
    series = jnp.zeros_like(t)
    for k in range(15, 3, -1):
        series = series * ts + ((-1.0) ** (k + 1) / k)
    t2 = ts * ts
    series = series * t2 * t2
    tl = jnp.where(small, 0.5, t)  # keep log1p's argument valid in the unused branch
    direct = jnp.log1p(tl) - tl + tl * tl / 2.0 - tl ** 3 / 3.0
    return jnp.where(small, series, direct)


def _mt_propose(key, d, c):
    """One Marsaglia-Tsang proposal per element.

    With ``x ~ N(0, 1)``, ``t = c x`` and ``v = (1 + t)^3``, the proposal
    ``d v`` is accepted when ``log u < 0.5 x^2 + d - d v + d log v``.  Since
    ``c^2 = 1 / (9 d)``, that bound equals ``3 d S(t)`` with
    ``S(t) = log1p(t) - t + t^2/2 - t^3/3``: the textbook form subtracts
    numbers of size ``d`` and loses all precision in float32 for shapes of
    ``10^5`` and more (confusion counts of large test sets), this one does
    not.

    Returns (accepted, value ``d v``, free uniform).  The free uniform is
    ``u / exp(h)``: given ``x`` and acceptance (``u < exp(h)``), ``u`` is
    uniform on ``(0, exp(h))``, so the ratio is a fresh ``U(0, 1)``
    independent of the accepted value; it serves the ``a < 1`` correction
    without drawing another uniform.
    """
    # One call to the bit generator for both variates (each call site costs compile time).
    both = uniform(key, (2,) + d.shape, d.dtype)
    u = jnp.maximum(both[0], jnp.finfo(d.dtype).tiny)
    # x ~ N(0, 1) by inversion, as jax.random.normal does: keep 2v - 1 inside (-1, 1).
    x = jnp.sqrt(2.0).astype(d.dtype) * jax.lax.erf_inv(jnp.maximum(2.0 * both[1] - 1.0, jnp.nextafter(
        jnp.array(-1.0, d.dtype), jnp.array(0.0, d.dtype))))
    t = c * x
    positive = t > -1.0
    h = 3.0 * d * _log1p_tail(jnp.where(positive, t, 0.0))
    log_u = jnp.log(u)
    accepted = positive & (log_u < h)
    one_plus = 1.0 + t
    free_uniform = jnp.exp(jnp.minimum(log_u - h, 0.0))
    return accepted, d * one_plus * one_plus * one_plus, free_uniform


def _gamma_block(key, shape, *, boost):
    n = shape.shape[0]
    d, c = _mt_constants(shape)
    key_first, key_rest = jax.random.split(key)
    accepted, value, free = _mt_propose(key_first, d, c)
    # Acceptance is >= 95 % for every shape, so the retries fit in a buffer of n/8.
    buffer = int(min(n, max(64, n // 8)))

    def outer_cond(state):
        return ~jnp.all(state[0])

    def outer_body(state):
        accepted, value, free, key = state
        key, key_inner = jax.random.split(key)
        idx = jnp.nonzero(~accepted, size=buffer, fill_value=n)[0]
        valid = idx < n
        safe = jnp.where(valid, idx, 0)
        bd, bc = d[safe], c[safe]

        def inner_cond(s):
            return ~jnp.all(s[0])

        def inner_body(s):
            ok, val, fr, k = s
            k, sub = jax.random.split(k)
            ok2, val2, fr2 = _mt_propose(sub, bd, bc)
            take = ~ok & ok2
            return ok | ok2, jnp.where(take, val2, val), jnp.where(take, fr2, fr), k

        init = (~valid, jnp.zeros_like(bd), jnp.ones_like(bd), key_inner)
        ok, val, fr, _ = jax.lax.while_loop(inner_cond, inner_body, init)
        del ok
        # Out-of-range fill indices are dropped by the scatter.
        accepted = accepted.at[idx].set(True, mode="drop")
        value = value.at[idx].set(val, mode="drop")
        free = free.at[idx].set(fr, mode="drop")
        return accepted, value, free, key

    accepted, value, free, _ = jax.lax.while_loop(outer_cond, outer_body, (accepted, value, free, key_rest))
    if boost:
        small = shape < 1.0
        value = jnp.where(small, value * free ** (1.0 / jnp.where(small, shape, 1.0)), value)
    # Shape 0 is the degenerate Gamma(0) = 0 (an empty cell of a Bayesian bootstrap).
    return jnp.where(shape > 0.0, value, 0.0)


# Large inputs are drawn in blocks of this many variates: the working set of one block (shapes,
# constants, proposals, flags) stays in cache, and the retry scan runs over one block at a time.
_BLOCK = 1 << 18


@partial(jax.jit, static_argnames=("boost",))
def _gamma_flat(key, shape, *, boost):
    n = shape.shape[0]
    if n <= 2 * _BLOCK:
        return _gamma_block(key, shape, boost=boost)
    num_blocks = -(-n // _BLOCK)
    padded = jnp.concatenate([shape, jnp.ones(num_blocks * _BLOCK - n, shape.dtype)]).reshape(num_blocks, _BLOCK)
    keys = jax.random.split(key, num_blocks)
    out = jax.lax.map(lambda args: _gamma_block(args[0], args[1], boost=boost), (keys, padded))
    return out.reshape(-1)[:n]


def gamma(key, shape, *, small_shapes: bool = True):
    """Exact ``Gamma(a, 1)`` variates for an array of shapes ``a >= 0``.

    ``a = 0`` gives 0 (the degenerate limit).  ``small_shapes=False`` promises
    that no shape lies in ``(0, 1)`` and skips the ``U^(1/a)`` correction.
    Kernel: no validation.
    """
    shape = jnp.asarray(shape, dtype=jnp.result_type(float))
    flat = shape.reshape(-1)
    if flat.shape[0] == 0:
        return shape
    return _gamma_flat(key, flat, boost=bool(small_shapes)).reshape(shape.shape)


def dirichlet(key, concentration, *, small_shapes: bool = True):
    """Exact ``Dirichlet(alpha)`` draws over the last axis, from normalized gammas.

    Rows whose concentrations are all 0 return all zeros (they carry no
    probability and are never used with a non-zero weight).  Kernel.
    """
    g = gamma(key, concentration, small_shapes=small_shapes)
    total = g.sum(-1, keepdims=True)
    return jnp.where(total > 0, g / jnp.where(total > 0, total, 1.0), 0.0)


def rejection_sample(draw_batch, accept, key, num_draws: int, *, max_rounds: int = 200, what: str = "prior"):
    """Fill ``num_draws`` accepted draws by repeated batches of ``num_draws``.

    ``draw_batch(key, n) -> pytree`` of arrays with leading axis ``n``;
    ``accept(pytree) -> (n,) bool``.  Raises :class:`ecjax.InputError` when
    no draw of the first batch is accepted (the constraints leave no support)
    or when the acceptance rate is too low to finish within ``max_rounds``
    batches, instead of looping forever.
    """
    from ecjax._validate import InputError

    kept, have, rounds = [], 0, 0
    while have < num_draws:
        key, sub = jax.random.split(key)
        batch = draw_batch(sub, num_draws)
        mask = np.asarray(accept(batch))
        rate = mask.mean()
        rounds += 1
        if rounds == 1:
            if rate == 0:
                raise InputError(
                    f"the constraints of this {what} leave no support: 0 of {num_draws} draws satisfied them"
                )
            if rate * max_rounds < 1.0:
                raise InputError(
                    f"the constraints of this {what} leave almost no support: only {mask.sum()} of {num_draws} "
                    f"draws satisfied them (acceptance {rate:.2g}); widen the ranges or drop a constraint"
                )
        elif rounds > max_rounds:
            raise InputError(f"the constraints of this {what} accept too few draws ({have} after {max_rounds} batches)")
        idx = np.nonzero(mask)[0]
        kept.append(jax.tree_util.tree_map(lambda a: a[idx], batch))
        have += len(idx)
    out = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs)[:num_draws], *kept)
    return out
