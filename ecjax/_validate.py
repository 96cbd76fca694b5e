"""All input checks of ecjax, in one place.

Public entry points call these on concrete (non-traced) inputs before any
kernel runs; kernels never validate.  Every check raises :class:`InputError`
naming the argument, the expected form and what was received.  Checks on
values are skipped when an input is a JAX tracer (inside ``jit``/``vmap``),
so public functions stay composable; shapes are always checked.
"""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp

SCORE_TYPES = ("log_posteriors", "logits", "llr", "log_likelihoods")

# Relative tolerance used to accept priors and log-posterior rows as
# normalized: loose enough for float32 round-off, tight enough to catch
# unnormalized inputs.
_SUM_TOL = 1e-4


class InputError(ValueError):
    """An argument of a public ecjax function is not of the expected form."""


def _is_tracer(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def _describe(x) -> str:
    arr = np.asarray(x)
    return f"an array of shape {arr.shape} and dtype {arr.dtype}"


def as_array(x, name: str, *, min_ndim: int = 0, dtype=None):
    """Convert ``x`` to an array, raising :class:`InputError` if impossible."""
    if x is None:
        raise InputError(f"`{name}` is required, got None")
    if _is_tracer(x):
        arr = x
    else:
        try:
            arr = np.asarray(x) if not isinstance(x, jax.Array) else x
        except Exception as err:  # noqa: BLE001 - anything unconvertible
            raise InputError(f"`{name}` could not be read as an array: {err}") from None
        if arr.dtype == object:
            raise InputError(f"`{name}` must be numeric, got an object array (ragged or mixed input)")
    if arr.ndim < min_ndim:
        raise InputError(f"`{name}` must have at least {min_ndim} dimension(s), got {_describe(arr)}")
    if dtype is not None:
        arr = jnp.asarray(arr, dtype=dtype)
    return arr


def as_index_array(x, name: str, *, upper: int | None = None, min_ndim: int = 1):
    """Integer class or decision indices in ``[0, upper)``.

    Floats holding whole numbers (``1.0``) are accepted; ``1.5`` is not.
    """
    arr = as_array(x, name, min_ndim=min_ndim)
    if arr.shape[-1] == 0:
        raise InputError(f"`{name}` is empty: at least one sample is needed")
    if _is_tracer(arr):
        return arr.astype(jnp.int32)
    arr = np.asarray(arr)
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int32)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise InputError(f"`{name}` contains NaN or inf; expected integer indices")
        if np.any(arr != np.round(arr)):
            raise InputError(f"`{name}` must hold integer indices, got non-integer values such as {arr[arr != np.round(arr)].flat[0]}")
    elif arr.dtype.kind not in "iu":
        raise InputError(f"`{name}` must hold integer indices, got dtype {arr.dtype}")
    if arr.size and arr.min() < 0:
        raise InputError(f"`{name}` must be >= 0, got minimum {arr.min()}")
    if upper is not None and arr.size and arr.max() >= upper:
        raise InputError(f"`{name}` must be < {upper}, got maximum {int(arr.max())}")
    return jnp.asarray(arr.astype(np.int32))


def check_finite(arr, name: str):
    """Reject NaN and +/-inf (skipped for tracers)."""
    if _is_tracer(arr):
        return arr
    a = np.asarray(arr)
    if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
        bad = "NaN" if np.any(np.isnan(a)) else "inf"
        raise InputError(f"`{name}` contains {bad}; all entries must be finite")
    return arr


def as_matrix(x, name: str, *, shape: tuple[int | None, int | None] | None = None):
    """A finite float matrix of shape ``(..., K, D)`` (cost or utility)."""
    arr = as_array(x, name, min_ndim=2)
    if not _is_tracer(arr) and np.asarray(arr).dtype.kind not in "fiub":
        raise InputError(f"`{name}` must be numeric, got dtype {np.asarray(arr).dtype}")
    check_finite(arr, name)
    if shape is not None:
        k, d = shape
        if (k is not None and arr.shape[-2] != k) or (d is not None and arr.shape[-1] != d):
            want = f"({'K' if k is None else k}, {'D' if d is None else d})"
            raise InputError(f"`{name}` must have trailing shape {want}, got shape {tuple(arr.shape)}")
    return jnp.asarray(arr, dtype=jnp.result_type(float))


def as_priors(x, name: str = "priors", *, num_classes: int | None = None):
    """Probability vector(s) ``(..., K)``: non-negative, summing to one."""
    arr = as_array(x, name, min_ndim=1)
    check_finite(arr, name)
    if num_classes is not None and arr.shape[-1] != num_classes:
        raise InputError(f"`{name}` must have {num_classes} entries (one per class), got shape {tuple(arr.shape)}")
    if not _is_tracer(arr):
        a = np.asarray(arr, dtype=np.float64)
        if np.any(a < 0):
            raise InputError(f"`{name}` must be non-negative, got {a.min()}")
        sums = a.sum(-1)
        if np.any(np.abs(sums - 1.0) > _SUM_TOL):
            raise InputError(f"`{name}` must sum to 1, got sum(s) {np.unique(np.round(sums, 6))[:3]}")
    return jnp.asarray(arr, dtype=jnp.result_type(float))


def check_score_type(score_type: str) -> str:
    if score_type not in SCORE_TYPES:
        raise InputError(f"`score_type` must be one of {SCORE_TYPES}, got {score_type!r}")
    return score_type


def as_scores(x, name: str = "scores", *, score_type: str):
    """Scores ``(..., N, K)`` or, for ``llr``, ``(..., N)``; finite floats.

    Log-posteriors must normalize per row (``logsumexp == 0``); the error
    suggests ``score_type="logits"`` otherwise.
    """
    check_score_type(score_type)
    arr = as_array(x, name, min_ndim=1 if score_type == "llr" else 2)
    if not _is_tracer(arr) and np.asarray(arr).dtype.kind not in "fiu":
        raise InputError(f"`{name}` must be numeric, got dtype {np.asarray(arr).dtype}")
    if arr.shape[-1] == 0 or (score_type != "llr" and arr.shape[-2] == 0):
        raise InputError(f"`{name}` is empty, got shape {tuple(arr.shape)}")
    if score_type != "llr" and arr.shape[-1] < 2:
        raise InputError(f"`{name}` must have at least 2 classes in its last axis, got shape {tuple(arr.shape)}")
    check_finite(arr, name)
    arr = jnp.asarray(arr, dtype=jnp.result_type(float))
    if score_type == "log_posteriors" and not _is_tracer(arr):
        a = np.asarray(arr, dtype=np.float64)
        norm = np.log(np.exp(a - a.max(-1, keepdims=True)).sum(-1)) + a.max(-1)
        if np.max(np.abs(norm)) > 1e-3:
            raise InputError(
                f"`{name}` rows do not normalize as log-posteriors (max |logsumexp| = "
                f"{np.max(np.abs(norm)):.3g}); if these are unnormalized logits, pass score_type=\"logits\""
            )
    return arr


def check_same_length(name_a: str, a, name_b: str, b, *, axis_a: int = -1, axis_b: int = -1):
    if a.shape[axis_a] != b.shape[axis_b]:
        raise InputError(
            f"`{name_a}` and `{name_b}` must have the same number of samples, got "
            f"{a.shape[axis_a]} and {b.shape[axis_b]}"
        )


def as_positive_int(x, name: str, *, minimum: int = 1) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise InputError(f"`{name}` must be an integer, got {x!r}")
    if x < minimum:
        raise InputError(f"`{name}` must be >= {minimum}, got {x}")
    return int(x)


def check_choice(x, name: str, choices):
    if x not in choices:
        raise InputError(f"`{name}` must be one of {tuple(choices)}, got {x!r}")
    return x
