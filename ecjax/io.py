"""Reading user files: arrays (``.npy``, ``.npz``, ``.csv``) and cost specifications.

Arrays are loaded without pickle: a pickled ``.npy`` is refused with a clear
:class:`~ecjax.InputError`, never executed.  Every error names the file.

Cost specification (TOML or JSON), all keys but one matrix optional::

    classes = ["healthy", "sick"]            # K names (rows)
    decisions = ["send home", "treat"]       # D names (columns); default: the classes
    costs = [[0, 1], [20, 0]]                # nominal cost matrix c[true, decision] ...
    # utilities = [[...]]                    # ... or a utility matrix (U = -c)
    priors = [0.95, 0.05]                    # deployment priors (default: the data's), or by name:
    # priors = {healthy = 0.95, sick = 0.05}

    [uncertainty]                            # optional, for `ecjax compare`
    low = [[0, 1], [10, 0]]                  # per-entry intervals of the same kind of matrix
    high = [[0, 1], [50, 0]]
    priors_low = [0.93, 0.02]                # optional interval for the deployment priors
    priors_high = [0.98, 0.07]
"""

from __future__ import annotations

import json
import os
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ecjax._validate import InputError


def load_array(path, *, key: str | None = None) -> np.ndarray:
    """Load one numeric array from ``.npy``, ``.npz`` (first or ``key`` entry) or ``.csv``.

    CSV: comma-separated numbers, an optional header line of names is skipped;
    one column gives a vector.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: file not found")
    suffix = p.suffix.lower()
    try:
        if suffix == ".npy":
            arr = np.load(p, allow_pickle=False)
        elif suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                names = list(z.keys())
                if not names:
                    raise InputError(f"{p}: the .npz archive holds no arrays")
                if key is not None and key not in names:
                    raise InputError(f"{p}: no array named {key!r} (has {', '.join(names)})")
                arr = z[key or names[0]]
        elif suffix in (".csv", ".txt"):
            arr = _load_csv(p)
        else:
            raise InputError(f"{p}: unsupported file type {suffix!r} (use .npy, .npz or .csv)")
    except InputError:
        raise
    except ValueError as err:
        if "allow_pickle" in str(err) or "pickle" in str(err).lower():
            raise InputError(f"{p}: holds pickled Python objects; ecjax loads only plain numeric arrays") from None
        raise InputError(f"{p}: could not be read as a numeric array ({err})") from None
    except (OSError, zipfile.BadZipFile, EOFError) as err:
        raise InputError(f"{p}: could not be read ({err})") from None
    if arr.dtype.kind not in "biuf":
        raise InputError(f"{p}: must hold numbers, got dtype {arr.dtype}")
    return arr


def _load_csv(p: Path) -> np.ndarray:
    lines = [ln.strip() for ln in p.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise InputError(f"{p}: the file is empty")
    try:
        [float(x) for x in lines[0].split(",")]
    except ValueError:
        lines = lines[1:]  # header of names
    rows = []
    for i, ln in enumerate(lines):
        try:
            rows.append([float(x) for x in ln.split(",")])
        except ValueError:
            raise InputError(f"{p}: line {i + 1} is not a row of numbers: {ln[:60]!r}") from None
    if len({len(r) for r in rows}) > 1:
        raise InputError(f"{p}: rows have different numbers of columns")
    arr = np.array(rows)
    if arr.shape[1] == 1:
        arr = arr[:, 0]
    if np.all(arr == np.round(arr)) and np.all(np.isfinite(arr)):
        arr = arr.astype(np.int64) if arr.ndim == 1 else arr
    return arr


@dataclass(frozen=True)
class CostSpec:
    """A parsed cost specification (see the module docstring)."""

    costs: np.ndarray  # (K, D) nominal costs
    classes: list[str]
    decisions: list[str]
    priors: np.ndarray | None = None
    costs_low: np.ndarray | None = None  # (K, D) interval of the costs, if uncertain
    costs_high: np.ndarray | None = None
    priors_low: np.ndarray | None = None
    priors_high: np.ndarray | None = None
    given_as_utilities: bool = False
    source: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def utilities(self) -> np.ndarray:
        return -self.costs

    @property
    def uncertain(self) -> bool:
        return self.costs_low is not None


def _matrix(obj, name, path, shape=None):
    try:
        m = np.asarray(obj, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{path}: `{name}` must be a matrix of numbers") from None
    if m.ndim != 2 or 0 in m.shape:
        raise InputError(f"{path}: `{name}` must be a non-empty 2-D matrix (rows = true class), got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise InputError(f"{path}: `{name}` contains NaN or inf")
    if shape is not None and m.shape != shape:
        raise InputError(f"{path}: `{name}` must have shape {shape}, got {m.shape}")
    return m


def _vector(obj, name, path, size):
    try:
        p = np.asarray(obj, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{path}: `{name}` must be a list of numbers") from None
    if p.shape != (size,):
        raise InputError(f"{path}: `{name}` must have {size} entries (one per class), got shape {p.shape}")
    return p


def parse_cost_spec(data: dict, *, source: str = "<spec>") -> CostSpec:
    """Build a :class:`CostSpec` from a parsed TOML/JSON mapping."""
    if not isinstance(data, dict):
        raise InputError(f"{source}: the cost specification must be a table/object")
    known = {"classes", "decisions", "costs", "utilities", "priors", "uncertainty", "name", "description"}
    unknown = set(data) - known
    if unknown:
        raise InputError(f"{source}: unknown key(s) {sorted(unknown)}; known keys: {sorted(known)}")
    if ("costs" in data) == ("utilities" in data):
        raise InputError(f"{source}: give exactly one of `costs` or `utilities`")
    as_utilities = "utilities" in data
    nominal = _matrix(data["utilities" if as_utilities else "costs"], "utilities" if as_utilities else "costs", source)
    k, d = nominal.shape
    classes = [str(c) for c in data.get("classes", [str(i) for i in range(k)])]
    decisions = [str(c) for c in data.get("decisions", classes if d == k else [str(j) for j in range(d)])]
    if len(classes) != k:
        raise InputError(f"{source}: `classes` names {len(classes)} classes but the matrix has {k} rows")
    if len(decisions) != d:
        raise InputError(f"{source}: `decisions` names {len(decisions)} decisions but the matrix has {d} columns")
    sign = -1.0 if as_utilities else 1.0
    priors = None
    if "priors" in data:
        raw = data["priors"]
        if isinstance(raw, dict):
            unknown = [name for name in raw if name not in classes]
            if unknown:
                raise InputError(f"{source}: `priors` names unknown class(es) {unknown}; classes are {classes}")
            missing = [name for name in classes if name not in raw]
            if missing:
                raise InputError(f"{source}: `priors` gives no value for class(es) {missing}")
            raw = [raw[name] for name in classes]
        priors = _vector(raw, "priors", source, k)
        if np.any(priors < 0) or abs(priors.sum() - 1) > 1e-6:
            raise InputError(f"{source}: `priors` must be non-negative and sum to 1")
    low = high = p_low = p_high = None
    unc = data.get("uncertainty")
    if unc is not None:
        if not isinstance(unc, dict):
            raise InputError(f"{source}: `uncertainty` must be a table")
        bad = set(unc) - {"low", "high", "priors_low", "priors_high"}
        if bad:
            raise InputError(f"{source}: unknown key(s) {sorted(bad)} in [uncertainty]")
        if ("low" in unc) != ("high" in unc):
            raise InputError(f"{source}: [uncertainty] needs both `low` and `high`")
        if "low" in unc:
            lo = _matrix(unc["low"], "uncertainty.low", source, (k, d))
            hi = _matrix(unc["high"], "uncertainty.high", source, (k, d))
            if np.any(lo > hi):
                raise InputError(f"{source}: [uncertainty] has entries with low > high")
            if np.any(nominal < lo) or np.any(nominal > hi):
                raise InputError(f"{source}: the nominal matrix lies outside the [uncertainty] intervals")
            low, high = (sign * lo, sign * hi) if sign > 0 else (sign * hi, sign * lo)
        if ("priors_low" in unc) != ("priors_high" in unc):
            raise InputError(f"{source}: [uncertainty] needs both `priors_low` and `priors_high`")
        if "priors_low" in unc:
            p_low = _vector(unc["priors_low"], "uncertainty.priors_low", source, k)
            p_high = _vector(unc["priors_high"], "uncertainty.priors_high", source, k)
            if np.any(p_low > p_high) or np.any(p_low < 0) or np.any(p_high > 1):
                raise InputError(f"{source}: prior intervals must satisfy 0 <= low <= high <= 1")
            if p_low.sum() > 1 or p_high.sum() < 1:
                raise InputError(f"{source}: no prior vector summing to 1 lies inside the prior intervals")
    return CostSpec(sign * nominal, classes, decisions, priors, low, high, p_low, p_high, as_utilities, source)


def load_cost_spec(path) -> CostSpec:
    """Read a cost specification from a ``.toml`` or ``.json`` file."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: file not found")
    text = p.read_text()
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"{p}: syntax error: {err}") from None
    return parse_cost_spec(data, source=str(p))


def write_atomic(path, data: bytes | str, *, force: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically (temp file + rename).

    Refuses to overwrite an existing file unless ``force``.
    """
    p = Path(path)
    if p.exists() and not force:
        raise InputError(f"{p}: already exists (use --force to overwrite)")
    p.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as f:
            f.write(data)
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return p
