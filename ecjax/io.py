"""Reading user files: arrays (``.npy``, ``.npz``, ``.csv``) and cost specifications.

Arrays are loaded without pickle: a pickled ``.npy`` is refused with a clear
:class:`~ecjax.InputError`, never executed.  Every error names the file.  The
size an array declares in its header (``.npy``, or each member of a ``.npz``,
whose compression can hide 200M labels in 190 KB) is checked against
``max_bytes`` *before* anything is loaded (default :data:`DEFAULT_MAX_BYTES`,
``--max-input-mb`` on the command line).

Numbers in a cost specification must be numbers: strings (``"10"``) and
booleans (``true``) are refused, as are integers too large for a float.

Outputs are written by :func:`write_atomic`: all or nothing, never over an
existing file without ``force`` (refused atomically, even against a
concurrent writer), with the permissions of the umask.  The outputs of one
run are written together by :func:`write_files_atomic`: all of them or none,
so a run that overwrites an earlier one (``force``) never leaves the two
mixed.

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

import contextlib
import errno
import json
import os
import secrets
import shutil
import tomllib
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ecjax.inputs import (
    InputError,
    check_bounds,
    check_exclusive,
    check_finite,
    check_inside,
    check_prior_intervals,
    check_shape,
)

# Largest array a file may declare before it is loaded (``max_bytes``); 1 GiB.
DEFAULT_MAX_BYTES = 2**30


@contextlib.contextmanager
def said_of(source: object, files: dict[str, object] | None = None):
    """Errors of the checks inside, said of ``source`` (a file, an option): ``"<source>: <problem>"``, with each
    argument named in ``files`` (argument name -> what the user knows it as) said by that name."""
    try:
        yield
    except InputError as err:  # the problem without the library's subject, where it has one
        problem = err.problem or str(err)
        for argument, known_as in (files or {}).items():
            problem = problem.replace(f"`{argument}`", str(known_as))
        raise InputError(f"{source}: {problem}") from None


def _existing_file(path) -> Path:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: file not found")
    return p


def _check_declared_size(p, stream, max_bytes, member=""):
    """Read a ``.npy`` header from ``stream`` and refuse it if it declares more than ``max_bytes``."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(stream)
        if version == (1, 0):
            shape, _, dtype = fmt.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, _, dtype = fmt.read_array_header_2_0(stream)
        else:
            shape, _, dtype = fmt._read_array_header(stream, version)
    except ValueError as err:
        raise InputError(f"{p}{member}: not a valid .npy array ({err})") from None
    if dtype.hasobject:
        raise InputError(f"{p}{member}: holds pickled Python objects; ecjax loads only plain numeric arrays")
    nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if nbytes > max_bytes:
        raise InputError(
            f"{p}{member}: declares an array of shape {tuple(shape)} and dtype {dtype} ({nbytes / 2**20:,.0f} MiB), "
            f"over the input limit of {max_bytes / 2**20:,.0f} MiB (raise it with --max-input-mb, or max_bytes=)"
        )


def load_array(path: str | os.PathLike[str], *, key: str | None = None,
               max_bytes: int = DEFAULT_MAX_BYTES) -> np.ndarray:
    """Load one numeric array from ``.npy``, ``.npz`` (first or ``key`` entry) or ``.csv``.

    CSV: comma-separated numbers, an optional header line of names is skipped;
    one column gives a vector.  An array declaring more than ``max_bytes``
    in its header (a ``.csv`` file larger than that) is refused before it
    is read.
    """
    p = _existing_file(path)
    suffix = p.suffix.lower()
    try:
        if suffix == ".npy":
            with open(p, "rb") as f:
                _check_declared_size(p, f, max_bytes)
            arr = np.load(p, allow_pickle=False)
        elif suffix == ".npz":
            with zipfile.ZipFile(p) as zf:
                members = [n for n in zf.namelist() if n.endswith(".npy")]
                names = [n[:-4] for n in members]
                if not names:
                    raise InputError(f"{p}: the .npz archive holds no arrays")
                if key is not None and key not in names:
                    raise InputError(f"{p}: no array named {key!r} (has {', '.join(names)})")
                name = key or names[0]
                with zf.open(name + ".npy") as f:
                    _check_declared_size(p, f, max_bytes, member=f"[{name}]")
            with np.load(p, allow_pickle=False) as z:
                arr = z[name]
        elif suffix in (".csv", ".txt"):
            if p.stat().st_size > max_bytes:
                raise InputError(f"{p}: {p.stat().st_size / 2**20:,.0f} MiB of text, over the input limit of "
                                 f"{max_bytes / 2**20:,.0f} MiB (raise it with --max-input-mb, or max_bytes=)")
            arr = _load_csv(p)
        else:
            raise InputError(f"{p}: unsupported file type {suffix!r} (use .npy, .npz or .csv)")
    except InputError:
        raise
    except ValueError as err:  # pickled arrays never get here: their header is refused first
        raise InputError(f"{p}: could not be read as a numeric array ({err})") from None
    except (OSError, zipfile.BadZipFile, EOFError, zipfile.LargeZipFile) as err:
        raise InputError(f"{p}: could not be read ({err})") from None
    if arr.dtype.kind not in "biuf":
        raise InputError(f"{p}: must hold numbers, got dtype {arr.dtype}")
    return arr


def _read_text(p: Path) -> str:
    try:
        return p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{p}: is not UTF-8 text (invalid byte at offset {err.start})") from None
    except OSError as err:
        raise InputError(f"{p}: could not be read ({err.strerror or err})") from None


def _load_csv(p: Path) -> np.ndarray:
    lines = [ln.strip() for ln in _read_text(p).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
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
class ResultsTable:
    """Per-fold (or per-run) results of several systems, from :func:`load_results_table`."""

    systems: list[str]
    scores: np.ndarray | list  # (M, n); (M, q, n) with data sets; a list of q (M, n_d) if their folds differ
    datasets: list[str] | None = None


def load_results_table(path: str | os.PathLike[str]) -> ResultsTable:
    """A CSV of results: a header naming the columns, one row per fold (higher is better).

    Every column is a system, except an optional ``dataset`` column that
    groups the rows by data set: ``dataset,A,B`` / ``iris,0.93,0.95`` / ...
    ``scores`` is ``(M, q, n)`` when every data set has ``n`` folds, else a
    list of ``q`` ``(M, n_d)`` arrays (the input of
    :func:`ecjax.prob.hierarchical_compare_results`).
    """
    p = _existing_file(path)
    lines = [ln.strip() for ln in _read_text(p).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if len(lines) < 2:
        raise InputError(f"{p}: needs a header naming the systems and at least one row of results")
    header = [h.strip() for h in lines[0].split(",")]
    if len(set(header)) != len(header) or not all(header):
        raise InputError(f"{p}: the header must name every column once, got {lines[0][:80]!r}")
    cells = [[c.strip() for c in ln.split(",")] for ln in lines[1:]]
    for i, row in enumerate(cells):
        if len(row) != len(header):
            raise InputError(f"{p}: line {i + 2} has {len(row)} columns, the header {len(header)}")
    by = header.index("dataset") if "dataset" in header else None
    systems = [h for j, h in enumerate(header) if j != by]
    if not systems:
        raise InputError(f"{p}: no system column besides `dataset`")
    try:
        values = np.array([[float(c) for j, c in enumerate(row) if j != by] for row in cells])
    except ValueError:
        raise InputError(f"{p}: every result must be a number") from None
    if not np.all(np.isfinite(values)):
        raise InputError(f"{p}: results contain NaN or inf")
    if by is None:
        return ResultsTable(systems, values.T)
    names = list(dict.fromkeys(row[by] for row in cells))
    groups = [values[[row[by] == d for row in cells]] for d in names]
    if len({len(g) for g in groups}) != 1:
        return ResultsTable(systems, [g.T for g in groups], names)
    return ResultsTable(systems, np.stack(groups, 1).transpose(2, 1, 0), names)


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


def _strict_numbers(obj, name, what):
    """Nested lists of real numbers as float64: strings, booleans and huge integers are refused."""
    def walk(x):
        if isinstance(x, (list, tuple)):
            return [walk(e) for e in x]
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise InputError(f"`{name}` must be {what}, got {type(x).__name__} {x!r}"[:300])
        try:
            return float(x)
        except OverflowError:
            raise InputError(f"`{name}` holds an integer too large for a number ({len(str(x))} digits)") from None

    try:
        return np.asarray(walk(obj), dtype=float)
    except ValueError:
        raise InputError(f"`{name}` must be {what} (rows of equal length)") from None


def _numbers(obj, name, form, why=""):
    """A finite matrix or vector of shape ``form`` ("(K, D)", "(2, 2)", "(3,)") from nested lists of numbers."""
    arr = _strict_numbers(obj, name, "a matrix of numbers" if "," in form.strip("(,)") else "a list of numbers")
    return check_finite(check_shape(arr, name, form, why=why), name)


# The tables of a cost specification: their keys, the keys each needs, and the pairs that go together.
_SPEC_KEYS = ("classes", "decisions", "costs", "utilities", "priors", "uncertainty", "name", "description")
_UNCERTAINTY_KEYS = ("low", "high", "priors_low", "priors_high")


def _check_table(table, name, known, *, required=(), pairs=(), keys="key(s)"):
    """``table`` (the TOML table / JSON object ``name``) has only the keys ``known``, every key of ``required``,
    and both or neither key of each pair of ``pairs``."""
    if not isinstance(table, dict):
        raise InputError(f"`{name}` must be a table/object, got {type(table).__name__}")
    unknown = sorted(set(table) - set(known))
    missing = [key for key in required if key not in table]
    missing += [b if a in table else a for a, b in pairs if (a in table) != (b in table)]
    if unknown or missing:
        raise InputError(f"`{name}`: " + "; ".join(
            ([f"unknown {keys} {unknown}; known: {list(known)}"] if unknown else [])
            + ([f"no value for {missing}"] if missing else [])))
    return table


def _names(data, key, default, axis):
    """The names ``data[key]`` (else ``default``): one string per ``axis`` of the matrix, as many as ``default``."""
    names = data.get(key, default)
    if not isinstance(names, list) or not all(isinstance(c, str) for c in names) or len(names) != len(default):
        raise InputError(f"`{key}` must be a list of {len(default)} names (strings), one per {axis} of the matrix, "
                         f"got {names!r}"[:300])
    return list(names)


def parse_cost_spec(data: dict, *, source: str = "<spec>") -> CostSpec:
    """Build a :class:`CostSpec` from a parsed TOML/JSON mapping (the schema of the module docstring)."""
    with said_of(source):
        _check_table(data, "cost specification", _SPEC_KEYS)
        check_exclusive({"costs": data.get("costs"), "utilities": data.get("utilities")})
        as_utilities = "utilities" in data
        nominal = _numbers(data["utilities" if as_utilities else "costs"], "utilities" if as_utilities else "costs",
                           "(K, D)")
        k, d = nominal.shape
        if 0 in nominal.shape:
            raise InputError(f"`{'utilities' if as_utilities else 'costs'}` must be a non-empty matrix (rows = "
                             f"true class), got shape {nominal.shape}")
        classes = _names(data, "classes", [str(i) for i in range(k)], "row")
        # The decisions default to the classes when the matrix is square.
        decisions = _names(data, "decisions", classes if d == k else [str(j) for j in range(d)], "column")
        sign = -1.0 if as_utilities else 1.0
        priors = None
        if "priors" in data:
            raw = data["priors"]
            if isinstance(raw, dict):
                raw = [_check_table(raw, "priors", classes, required=classes, keys="class(es)")[name] for name in classes]
            priors = _numbers(raw, "priors", f"({k},)", " (one per class)")
            if np.any(priors < 0) or abs(priors.sum() - 1) > 1e-6:
                raise InputError("`priors` must be non-negative and sum to 1")
        low = high = p_low = p_high = None
        unc = data.get("uncertainty")
        if unc is not None:
            _check_table(unc, "uncertainty", _UNCERTAINTY_KEYS, pairs=(("low", "high"), ("priors_low", "priors_high")))
            if "low" in unc:
                lo, hi = (_numbers(unc[key], f"uncertainty.{key}", f"({k}, {d})") for key in ("low", "high"))
                check_bounds(lo, hi, "the [uncertainty] intervals")
                check_inside(nominal, lo, hi, "the nominal matrix")
                low, high = (sign * lo, sign * hi) if sign > 0 else (sign * hi, sign * lo)
            if "priors_low" in unc:
                p_low, p_high = (_numbers(unc[key], f"uncertainty.{key}", f"({k},)", " (one per class)")
                                 for key in ("priors_low", "priors_high"))
                check_prior_intervals(p_low, p_high, "the prior intervals")
    return CostSpec(sign * nominal, classes, decisions, priors, low, high, p_low, p_high, as_utilities, source)


def load_cost_spec(path: str | os.PathLike[str]) -> CostSpec:
    """Read a cost specification from a ``.toml`` or ``.json`` file."""
    p = _existing_file(path)
    text = _read_text(p)
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"{p}: syntax error: {err}") from None
    except RecursionError:
        raise InputError(f"{p}: nested too deeply to be a cost specification") from None
    return parse_cost_spec(data, source=str(p))


def check_output_path(path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """``path`` as a :class:`~pathlib.Path`, checked before any work is done: refused if it exists (without
    ``force``), if its name is too long for the file system, or if its nearest existing folder is not a
    directory this process may write into."""
    p = Path(path)
    if len(os.fsencode(p.name)) > 255:
        raise InputError(f"{p}: cannot write: the file name is too long")
    if not force and os.path.lexists(p):
        raise InputError(f"{p}: already exists (use --force to overwrite)")
    folder = p.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise InputError(f"{folder}: not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{folder}: the folder is not writable")
    return p


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, force: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically: readers see the old file or the whole new one.

    Without ``force``, an existing ``path`` is refused, atomically: the new
    file is hard-linked into place, which fails if the name exists, so of two
    processes writing the same path at once exactly one succeeds.  On Linux
    the data go first into an anonymous ``O_TMPFILE`` (nothing is left behind
    if the process is killed, even by SIGKILL); elsewhere into a hidden
    ``.ecjax-<pid>-<random>.tmp`` beside the target, removed on any exception
    (and by the next write into that folder if the process was killed).  The
    file's permissions follow the umask (``0o666 & ~umask``).  Errors of the
    file system (read-only, full, name too long) raise :class:`InputError`
    naming the path.
    """
    p = check_output_path(path, force=force)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"{p.parent}: cannot create the output folder ({err.strerror or err})") from None
    try:
        _write_linked(p, payload, force)
    except FileExistsError:
        raise InputError(f"{p}: already exists (use --force to overwrite)") from None
    except OSError as err:
        raise InputError(f"{p}: cannot write ({err.strerror or err})") from None
    return p


_TMP_PREFIX = ".ecjax-"


def write_files_atomic(files: Sequence[tuple[str | os.PathLike[str], bytes | str]], *,
                       force: bool = False) -> list[Path]:
    """Write the files ``[(path, data), ...]`` of one run all or nothing.

    Every file's data first go into a hidden temporary file beside its
    target, so a full disk, a quota or a file-size limit fails before any
    target is touched; then each temporary file is moved into place.  If a
    move fails, the targets already placed are put back: a file this run
    replaced (``force``) gets its old content again, one it created is
    removed, and so are the folders it created.  An earlier run's outputs
    are never left beside some of the new run's.  Without ``force`` an
    existing target is refused, atomically, as by :func:`write_atomic`.
    Errors of the file system raise :class:`InputError` naming the path.
    """
    targets = [(check_output_path(path, force=force), _as_bytes(data)) for path, data in files]
    folders: list[Path] = []
    staged: list[tuple[Path, Path]] = []
    try:
        for p, payload in targets:
            folders += _make_folder(p.parent)
            with _cannot_write(p):
                staged.append((p, _stage(p, payload)))
        _place_all(staged, force)
    except BaseException:
        for folder in reversed(folders):  # only the empty folders this run created
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    finally:
        for _, tmp in staged:
            _unlink_quietly(tmp)
    return [p for p, _ in targets]


def _as_bytes(data: bytes | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def _make_folder(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; the ones created, outermost first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    try:
        for f in reversed(missing):
            f.mkdir(exist_ok=True)
    except OSError as err:
        raise InputError(f"{f}: cannot create the output folder ({err.strerror or err})") from None
    return missing[::-1]


@contextlib.contextmanager
def _cannot_write(p: Path):
    """Errors of the file system while writing ``p``, as :class:`InputError` naming it."""
    try:
        yield
    except FileExistsError:
        raise InputError(f"{p}: already exists (use --force to overwrite)") from None
    except OSError as err:
        raise InputError(f"{p}: cannot write ({err.strerror or err})") from None


def _temp_name(folder: Path) -> Path:
    return folder / f"{_TMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}.tmp"


def _stage(p: Path, payload: bytes) -> Path:
    """``payload`` in a new hidden temporary file beside ``p``, synced to disk; its path."""
    _remove_stale_temps(p.parent)
    tmp = _temp_name(p.parent)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        _write_all(fd, payload)
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp)
        raise
    os.close(fd)
    return tmp


def _place_all(staged: list[tuple[Path, Path]], force: bool):
    """Move each staged ``(target, temporary)`` file into place; on a failure put back the targets already placed."""
    placed: list[tuple[Path, Path | None]] = []  # (target, a link to its old file, or None: it is new)
    try:
        for p, tmp in staged:
            with _cannot_write(p):
                old = _link_old(p) if force else None
                try:
                    _move_into_place(tmp, p, force)
                except BaseException:
                    if old is not None:
                        _unlink_quietly(old)
                    raise
            placed.append((p, old))
    except BaseException:
        for p, old in reversed(placed):
            with contextlib.suppress(OSError):
                if old is None:
                    os.unlink(p)
                else:
                    os.replace(old, p)
        raise
    for _, old in placed:
        if old is not None:
            _unlink_quietly(old)


def _link_old(p: Path) -> Path | None:
    """A second name (hard link) for the file ``p`` is about to replace, to put it back; ``None`` if there is none."""
    if not os.path.lexists(p):
        return None
    old = _temp_name(p.parent)
    try:
        os.link(p, old, follow_symlinks=False)
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        shutil.copy2(p, old, follow_symlinks=False)  # no hard links on this file system: a copy
    return old


def _move_into_place(tmp: Path, p: Path, force: bool):
    """Give the file ``tmp`` the name ``p``: over an existing file only with ``force``."""
    if force:
        os.replace(tmp, p)
        return
    try:
        os.link(tmp, p)  # fails if p exists: no check-then-write race
    except FileExistsError:
        raise
    except OSError:
        # No hard links here: reserve the name with O_EXCL, then rename over the reservation.
        os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        os.replace(tmp, p)



def _write_all(fd, payload):
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


_ANONYMOUS = {"works": True}  # False once linking an O_TMPFILE failed here (some sandboxes refuse it)


def _write_linked(p: Path, payload: bytes, force: bool):
    fd = _open_anonymous(p.parent) if _ANONYMOUS["works"] else None
    if fd is None:
        return _write_named(p, payload, force)
    try:
        _write_all(fd, payload)
        target = p if not force else _temp_name(p.parent)
        try:
            os.link(f"/proc/self/fd/{fd}", target, follow_symlinks=True)
        except FileExistsError:
            raise
        except OSError as err:
            if err.errno in (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.ENAMETOOLONG, errno.EDQUOT):
                raise
            _ANONYMOUS["works"] = False  # e.g. EXDEV from /proc links in a sandbox: use named temp files
            return _write_named(p, payload, force)
        if force:
            try:
                os.replace(target, p)
            except BaseException:
                _unlink_quietly(target)
                raise
    finally:
        os.close(fd)


def _open_anonymous(folder: Path):
    """An unnamed file in ``folder`` (Linux ``O_TMPFILE``), or None where unsupported."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.exists("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as err:
        if err.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOTSUP):
            return None
        raise


def _write_named(p: Path, payload: bytes, force: bool):
    """Fallback without ``O_TMPFILE``: a named hidden temp file, linked (or renamed) into place."""
    tmp = _stage(p, payload)
    try:
        _move_into_place(tmp, p, force)
    finally:
        _unlink_quietly(tmp)


def _remove_stale_temps(folder: Path):
    """Remove temp files of ecjax processes that no longer run (killed while writing)."""
    try:
        entries = list(folder.glob(f"{_TMP_PREFIX}*.tmp"))
    except OSError:
        return
    for f in entries:
        try:
            pid = int(f.name[len(_TMP_PREFIX):].split("-")[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            _unlink_quietly(f)
        except (ValueError, PermissionError, OSError):
            pass


def _unlink_quietly(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
