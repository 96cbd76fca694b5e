"""Input handling shared by the sweeps: swept or fixed matrices and priors, systems' scores, the devices a sweep
runs on and the options of the reliability study."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.sweep.grids import Axis, product, take


def matrix_source(costs: ArrayLike | Axis | None, utilities: ArrayLike | Axis | None, k: int,
                  d: int | None) -> tuple[str, jax.Array | None, Axis | None]:
    """(kind, fixed matrix or None, axis or None) from exactly one of costs/utilities."""
    if (costs is None) == (utilities is None):
        raise v.InputError("give exactly one of `costs` (EC/NEC) or `utilities` (utility yield)")
    name = "costs" if costs is not None else "utilities"
    m = costs if costs is not None else utilities
    if isinstance(m, Axis):
        first = m.values(np.array([0]))
        shape = getattr(first, "shape", None)
        if shape is None or len(shape) != 3 or shape[1] != k or (d is not None and shape[2] != d):
            want = f"({k}, {'D' if d is None else d})"
            raise v.InputError(f"the `{name}` axis must produce {want} matrices, got values of shape "
                               f"{None if shape is None else shape[1:]}")
        if not np.all(np.isfinite(first)):
            raise v.InputError(f"`{name}` contains NaN or inf")
        return name, None, m
    arr = v.as_matrix(m, name, shape=(k, d))
    if arr.ndim == 2:
        return name, arr, None
    if arr.ndim != 3:
        raise v.InputError(f"`{name}` must be one ({k}, D) matrix or a (B, {k}, D) grid, got shape {tuple(arr.shape)}")
    v.check_leading_axis([arr], name)
    return name, None, Axis((arr.shape[0],), take, arr, (None,))  # validated above: no second pass


def prior_source(priors: ArrayLike | Axis | None, k: int) -> tuple[jax.Array | None, Axis | None]:
    if priors is None:
        return None, None
    if isinstance(priors, Axis):
        first = np.asarray(priors.values(np.array([0])))
        if first.ndim != 2 or first.shape[-1] != k:
            raise v.InputError(f"the `priors` axis must produce ({k},) vectors, got shape {first.shape[1:]}")
        v.as_priors(first, num_classes=k)
        return None, priors
    arr = v.as_array(priors, "priors", min_ndim=1)
    if arr.ndim == 2:
        v.check_leading_axis([arr], "priors")
    p = v.as_priors(arr, num_classes=k)
    if p.ndim == 1:
        return p, None
    if p.ndim != 2:
        raise v.InputError(f"`priors` must be ({k},) or a (B, {k}) grid, got shape {tuple(p.shape)}")
    return None, Axis((p.shape[0],), take, p, (None,))


def check_absent_classes(n_i: ArrayLike, fixed_p: ArrayLike | None, p_axis: Axis | None) -> None:
    """A class with no test samples for some system cannot get prior mass (its rates are unknown)."""
    absent = np.any(np.asarray(n_i) == 0, axis=0)  # (K,)
    if not absent.any():
        return
    cls = int(np.nonzero(absent)[0][0])
    v.check_priors_cover(n_i, fixed_p)
    if p_axis is not None:
        if p_axis.fn is take:
            pv = np.asarray(p_axis.data)
            if np.any(pv[:, absent] > 0):
                raise v.InputError(f"class {cls} has no test samples (for some system) but a non-zero prior "
                                   "at some point of the `priors` grid")
        else:
            raise v.InputError(f"class {cls} has no test samples (for some system): sweeping priors needs samples "
                               "of every class")


def combined_axis(m_axis: Axis | None, p_axis: Axis | None) -> tuple[Axis, str]:
    """The swept axis and how to split its values: product when both are swept (costs outer)."""
    if m_axis is not None and p_axis is not None:
        return product(m_axis, p_axis), "both"
    if m_axis is not None:
        return m_axis, "matrix"
    if p_axis is not None:
        return p_axis, "priors"
    return Axis((1,), _no_values, (), (None,)), "none"


def _no_values(data, idx):
    return ()


def split_point_values(vals: Any, layout: str, fixed_m: jax.Array | None,
                       fixed_p: jax.Array | None) -> tuple[Any, Any]:
    if layout == "both":
        m, p = vals
    elif layout == "matrix":
        m, p = vals, fixed_p
    elif layout == "priors":
        m, p = fixed_m, vals
    else:
        m, p = fixed_m, fixed_p
    return m, p


def check_values_kept(kept: Any, what: str) -> None:
    """``what`` needs the per-point values and winners of a sweep, which ``kept`` (``SweepResult.winners``) is
    ``None`` without ``SweepSettings(return_values=True)``."""
    if kept is None:
        raise v.InputError(f"{what} needs the per-point winners: run the sweep with "
                           "SweepSettings(return_values=True)")


def systems_scores(labels: ArrayLike | Sequence[ArrayLike], scores: Any,
                   score_type: str) -> tuple[jax.Array, jax.Array, int]:
    """Validated ``(S, N)`` labels and ``(S, N, K)`` (or ``(S, N)`` llr) scores: an array, a sequence of arrays,
    or of :class:`ecjax.inputs.Scores` values (checked once already: stacked, not checked again)."""
    if isinstance(scores, (list, tuple)) and scores and all(isinstance(s, v.Scores) for s in scores):
        scores = v.stack_scores(scores)  # checked once, each: stacked as one array would be, not checked again
    elif isinstance(scores, (list, tuple)):
        try:
            scores = np.stack([np.asarray(s) for s in scores])
        except ValueError:
            raise v.InputError("the systems in `scores` must have the same number of samples") from None
    sc = v.as_scores(scores, score_type=score_type)
    base = 1 if score_type == "llr" else 2
    if sc.ndim == base:
        sc = sc[None]
    if sc.ndim != base + 1:
        raise v.InputError(f"`scores` may have at most one batch axis (systems), got shape {tuple(sc.shape)}")
    k = 2 if score_type == "llr" else sc.shape[-1]
    if isinstance(labels, (list, tuple)) and len(labels) and np.ndim(labels[0]) == 1:
        labels = np.stack([np.asarray(x) for x in labels])
    y = v.as_index_array(labels, "labels", upper=k)
    if y.ndim == 1:
        y = jnp.broadcast_to(y, (sc.shape[0], y.shape[0]))
    if y.ndim != 2 or y.shape[0] != sc.shape[0]:
        raise v.InputError(f"`labels` must be (N,) or (S, N) with S = {sc.shape[0]} systems, got shape "
                           f"{tuple(y.shape)}")
    v.check_same_length("labels", y, "scores", sc, axis_b=1)
    return y, sc, k


def per_class_counts(labels: jax.Array, k: int) -> jax.Array:
    return jnp.stack([jnp.sum(labels == i, -1) for i in range(k)], -1).astype(jnp.int32)  # (S, K)


def sorted_by_class(labels: ArrayLike, s: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """Per system, the log odds of each class sorted ascending and padded with +inf."""
    labels = np.asarray(labels)
    s = np.asarray(s, np.float32)
    out = []
    for cls in (0, 1):
        rows = [np.sort(s[i][labels[i] == cls]) for i in range(s.shape[0])]
        width = max(1, max(len(r) for r in rows))
        out.append(np.stack([np.concatenate([r, np.full(width - len(r), np.inf, np.float32)]) for r in rows]))
    return jnp.asarray(out[0]), jnp.asarray(out[1])


def resolve_devices(devices: int | Sequence[jax.Device] | None = None) -> tuple[jax.Device, ...]:
    """The devices to shard over: all visible devices (``None``), the first ``n``, or a given sequence of devices
    from :func:`jax.devices` (of any platform JAX has, all of one platform).

    Raises :class:`InputError` when more devices are requested than exist.
    """
    available = jax.devices()
    if devices is None:
        return tuple(available)
    if isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        n = v.as_scalar(devices, "devices", integer=True, low=1)
        if n > len(available):
            raise v.InputError(
                f"`devices` asks for {n} devices but only {len(available)} are visible to JAX "
                f"({available[0].platform}); on CPU set XLA_FLAGS=--xla_force_host_platform_device_count=N "
                "before importing jax to simulate more"
            )
        return tuple(available[:n])
    try:
        if isinstance(devices, bool):  # not iterable: the same error as any other non-sequence
            raise TypeError
        chosen = tuple(devices)
    except TypeError:
        raise v.InputError(f"`devices` must be None, a positive int or a sequence of jax devices, got {devices!r}") from None
    if not chosen:
        raise v.InputError("`devices` is empty: at least one device is needed")
    for d in chosen:
        # Devices of any platform JAX has (e.g. jax.devices("cpu") on a GPU machine), all of one platform.
        if not isinstance(d, jax.Device) or d not in jax.devices(d.platform):
            raise v.InputError(f"`devices` must hold devices from jax.devices(), got {d!r}")
    if len({d.platform for d in chosen}) > 1:
        raise v.InputError(f"`devices` must all be of one platform, got {sorted({d.platform for d in chosen})}")
    return chosen


def check_correct_dominates(utilities: Any, name: str, why: str = "") -> Any:
    """``(..., 2, 2)`` binary utility matrices (rows = true class) in which each correct decision is worth at least
    as much as the wrong one; ``why`` says what relies on it."""
    u = np.asarray(utilities)
    if np.any(u[..., 0, 0] < u[..., 0, 1]) or np.any(u[..., 1, 1] < u[..., 1, 0]):
        raise v.InputError(f"`{name}` must value each correct decision at least as much as the wrong one{why}")
    return utilities


def as_error_levels(utility_error_sd: float | Sequence[float]) -> tuple[np.ndarray, bool]:
    """``(sds, scalar)``: the utility-assessment error levels of the reliability study as a ``(E,)`` float64 vector
    (one number, or a non-empty sequence of them, each finite and >= 0) and whether one number was given."""
    sds = np.atleast_1d(np.asarray(utility_error_sd, dtype=np.float64))
    v.check_shape(sds, "utility_error_sd", "(E,)", why=" (a number or a 1-D sequence)")
    v.check_leading_axis([sds], "utility_error_sd")
    return v.check_numbers(sds, "utility_error_sd", low=0.0), np.ndim(utility_error_sd) == 0


def as_utility_distribution(distribution: Any) -> Any:
    """``"uniform"``, ``"gaussian"``, or a callable ``sample(key, n)`` whose draws, probed once, are ``(n, 2, 2)``
    finite utility matrices in ``[0, 1]`` valuing each correct decision at least as much as the wrong one."""
    if not callable(distribution):
        return v.check_choice(distribution, "utility_distribution", ("uniform", "gaussian"))
    name = "utility_distribution(key, 16)"
    probe = np.asarray(distribution(jax.random.key(0), 16))
    v.check_shape(probe, name, "(16, 2, 2)")
    v.check_finite(probe, name)
    v.check_inside(probe, 0.0, 1.0, f"`{name}`")
    check_correct_dominates(probe, name)
    return distribution
