"""Fitted calibrators on disk without pickle: a JSON description and a ``.npz`` of its parameter arrays.

A calibrator saved as ``cal.json`` is two files written together (all or nothing,
:func:`ecjax.io.write_files_atomic`):

- ``cal.json``: ``{"format": "ecjax-calibrator", "version": 1, "method", "num_classes", "input_type",
  "loss_name", "parameters": {name: {"shape": [...], "dtype": "float32"}}, "fit": {"num_iterations",
  "grad_norm", "loss", "converged"}}``;
- ``cal.npz``: one array per parameter (``np.savez``), read back with ``allow_pickle=False``.

Loading checks the JSON against that schema and the arrays against the JSON (unknown or missing keys, wrong
types, a method's parameter names, shapes and dtypes) and raises :class:`ecjax.InputError` naming the file and
the key.  Nothing in either file is executed: a file from elsewhere is as safe to load as a ``.npy``.

Example:
  >>> import numpy as np, tempfile, os
  >>> from ecjax import calibration
  >>> logits = np.array([[2.0, 0.0], [0.5, 0.2], [-1.0, 1.0], [0.0, 3.0]] * 5)
  >>> cal = calibration.fit(logits, [0, 1, 1, 1] * 5, method="affine", score_type="logits")
  >>> path = os.path.join(tempfile.mkdtemp(), "cal.json")
  >>> _ = save_calibrator(cal, path)
  >>> bool(np.allclose(load_calibrator(path).apply(logits), cal.apply(logits)))
  True
"""

from __future__ import annotations

import io as _io
import json
import math
import os
from pathlib import Path

import numpy as np

import jax.numpy as jnp

from ecjax._src import inputs as v
from ecjax._src.calibration import CALIBRATORS, LOSSES, METHODS, Calibrator
from ecjax._src.io import DEFAULT_MAX_BYTES, load_array, load_document, said_of, write_files_atomic

FORMAT = "ecjax-calibrator"
VERSION = 1
DTYPES = ("float32", "float64")
# The parameters of each method and their shapes (letters as in ecjax._src.inputs.check_shape: K classes, M knots or
# bins, the same M within one calibrator): the rows of ecjax.calibration.CALIBRATORS.
PARAMETER_SHAPES: dict[str, dict[str, str]] = {name: row.parameters for name, row in CALIBRATORS.items()}
_KEYS = ("format", "version", "method", "num_classes", "input_type", "loss_name", "parameters", "fit")
_FIT_KEYS = ("num_iterations", "grad_norm", "loss", "converged")


def arrays_path(path: str | os.PathLike[str]) -> Path:
    """The ``.npz`` file that goes with the calibrator description ``path`` (``cal.json`` -> ``cal.npz``)."""
    return Path(path).with_suffix(".npz")


def check_calibrator_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`~pathlib.Path` if it names a ``.json`` file (so that its ``.npz`` partner is never the
    file itself)."""
    v.check_choice(Path(path).suffix.lower(), "the calibrator file's suffix", (".json",))
    return Path(path)


def calibrator_record(calibrator: Calibrator) -> tuple[dict, dict[str, np.ndarray]]:
    """``(description, arrays)`` of a fitted calibrator: the JSON object of the module docstring and its
    parameter arrays.  A calibrator of several folds (:func:`ecjax.calibration.calibrate_cross_validated`) is
    refused by the shape check: save one fold's (``jax.tree_util.tree_map(lambda p: p[f], cal)``)."""
    v.check_instance(calibrator, Calibrator, "calibrator", "ecjax.calibration.Calibrator")
    arrays = {name: np.asarray(p) for name, p in calibrator.params.items()}
    _check_parameters(calibrator.method, calibrator.num_classes, arrays)
    fit = {"num_iterations": int(np.asarray(calibrator.num_iterations)),
           "grad_norm": float(np.asarray(calibrator.grad_norm)), "loss": float(np.asarray(calibrator.loss)),
           "converged": bool(np.asarray(calibrator.converged))}
    description = {"format": FORMAT, "version": VERSION, "method": calibrator.method,
                   "num_classes": int(calibrator.num_classes), "input_type": calibrator.input_type,
                   "loss_name": calibrator.loss_name,
                   "parameters": {name: {"shape": list(a.shape), "dtype": str(a.dtype)} for name, a in arrays.items()},
                   "fit": fit}
    return description, arrays


def calibrator_file_contents(calibrator: Calibrator, path: str | os.PathLike[str]) -> list[tuple[Path, str | bytes]]:
    """``[(path, JSON text), (arrays_path(path), .npz bytes)]``: the two files of ``calibrator``, not written."""
    with said_of(path):
        check_calibrator_path(path)
        description, arrays = calibrator_record(calibrator)
    buffer = _io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    # Non-finite fit statistics (a diverged fit's NaN gradient norm) are written as JSON's null.
    text = json.dumps(_finite_or_none(description), indent=2, allow_nan=False) + "\n"
    return [(Path(path), text), (arrays_path(path), buffer.getvalue())]


def save_calibrator(calibrator: Calibrator, path: str | os.PathLike[str], *, force: bool = False) -> list[Path]:
    """Write ``calibrator`` as ``path`` (``.json``) and :func:`arrays_path` (``.npz``), all or nothing
    (:func:`ecjax.io.write_files_atomic`).  Refuses existing files unless ``force``.  Returns the two paths."""
    return write_files_atomic(calibrator_file_contents(calibrator, path), force=force)


def _finite_or_none(description):
    fit = {k: (None if isinstance(x, float) and not math.isfinite(x) else x) for k, x in description["fit"].items()}
    return {**description, "fit": fit}


def load_calibrator(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> Calibrator:
    """The calibrator saved by :func:`save_calibrator` as ``path`` (and its ``.npz``), checked.

    Raises :class:`ecjax.InputError` naming the file and the key for a file that is not such a description
    (unknown or missing keys, a wrong type or value, a method's parameters missing or extra) or an array that
    disagrees with it (shape, dtype), or a file that cannot be read (truncated, not JSON, not a zip archive).
    """
    with said_of(path):
        check_calibrator_path(path)
        description = load_document(path, "a calibrator")
        method, k = _check_description(description)
    npz = arrays_path(path)
    arrays = {name: load_array(npz, key=name, max_bytes=max_bytes) for name in PARAMETER_SHAPES[method]}
    with said_of(npz):
        _check_no_other_arrays(npz, arrays)
        for name, spec in description["parameters"].items():
            v.check_choice(str(arrays[name].dtype), f"{name}.dtype (the JSON says {spec['dtype']})", (spec["dtype"],))
            v.check_shape(arrays[name], name, f"({', '.join(map(str, spec['shape']))})",
                          why=f" (the shape {Path(path).name} gives it)")
        _check_parameters(method, k, arrays)
    fit = description["fit"]
    stat = {key: jnp.asarray(np.nan if fit[key] is None else fit[key], jnp.float32) for key in ("grad_norm", "loss")}
    return Calibrator({name: jnp.asarray(a) for name, a in arrays.items()},
                      jnp.asarray(fit["num_iterations"], jnp.int32), stat["grad_norm"], stat["loss"],
                      jnp.asarray(fit["converged"]), method, k, description["input_type"], description["loss_name"])


def _check_description(d: object) -> tuple[str, int]:
    """``(method, num_classes)`` of a valid description; :class:`InputError` naming the key otherwise."""
    table = v.check_table(d, "calibrator description", _KEYS, required=_KEYS)
    v.check_choice(table["format"], "format", (FORMAT,))
    v.check_choice(table["version"], "version", (VERSION,))
    method = v.check_choice(table["method"], "method", METHODS)
    v.check_type(table["num_classes"], int, "num_classes", "an integer")
    k = v.as_scalar(table["num_classes"], "num_classes", integer=True, low=2)
    v.check_choice(table["input_type"], "input_type", v.SCORE_TYPES)
    v.check_choice(table["loss_name"], "loss_name", LOSSES)
    names = tuple(PARAMETER_SHAPES[method])
    params = v.check_table(table["parameters"], f"parameters (of method {method!r})", names, required=names)
    for name, spec in params.items():
        spec = v.check_table(spec, f"parameters.{name}", ("shape", "dtype"), required=("shape", "dtype"))
        v.check_choice(spec["dtype"], f"parameters.{name}.dtype", DTYPES)
        v.check_type(spec["shape"], list, f"parameters.{name}.shape", "a list of sizes")
        for size in spec["shape"]:
            v.check_type(size, int, f"parameters.{name}.shape", "a list of integer sizes")
            v.as_scalar(size, f"parameters.{name}.shape", integer=True, low=0)
    fit = v.check_table(table["fit"], "fit", _FIT_KEYS, required=_FIT_KEYS)
    v.check_type(fit["num_iterations"], int, "fit.num_iterations", "an integer")
    v.check_type(fit["converged"], bool, "fit.converged", "true or false")
    for key in ("grad_norm", "loss"):
        v.check_type(fit[key], (int, float, type(None)), f"fit.{key}", "a number or null")
    return method, k


def _check_no_other_arrays(npz: Path, arrays: dict[str, np.ndarray]) -> None:
    """The archive holds the method's arrays and nothing else (read after :func:`load_array` opened it)."""
    import zipfile

    with zipfile.ZipFile(npz) as zf:
        held = {n[:-4]: None for n in zf.namelist()}
    v.check_table(held, "arrays", tuple(arrays), required=tuple(arrays), keys="array(s)")


def _check_parameters(method: str, k: int, arrays: dict[str, np.ndarray]) -> None:
    """Each parameter of ``method`` has its shape (:data:`PARAMETER_SHAPES`) for ``k`` classes, float and finite
    where a fitted calibrator is (the bin edges' last ``+inf`` aside)."""
    sizes: dict[str, int] = {"K": k}
    shapes = CALIBRATORS[method].parameter_shapes(k)
    for name, form in shapes.items():
        a = arrays[name]
        v.check_shape(a, name, form, sizes=sizes)
        letters = form.strip("()").replace(" ", "").split(",")
        if "M" in letters:
            sizes["M"] = a.shape[letters.index("M")]
        v.check_choice(str(a.dtype), f"{name}.dtype", DTYPES)
        v.check_numbers(a[:-1] if name == "upper_log_edges" else a, name)
