"""Reading user files: arrays (``.npy``, ``.npz``, ``.csv``) and cost specifications.

Arrays are loaded without pickle: a pickled ``.npy`` is refused with a clear
:class:`~ecjax.InputError`, never executed.  Every error names the file.  The
size an array declares in its header (``.npy``, or each member of a ``.npz``,
whose compression can hide 200M labels in 190 KB) is checked against
``max_bytes`` *before* anything is loaded (default :data:`DEFAULT_MAX_BYTES`,
``--max-input-mb`` on the command line).

CSV files are read by the standard library's :mod:`csv` (UTF-8, with or
without a byte-order mark; quoted cells) under one header rule
(:func:`csv_first_row`): a first row that may be pandas' header ``0`` or a
first sample is settled by the other files of the same samples
(:func:`load_arrays`).  Cells are decimal numbers: ``1_0`` is refused.

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
import csv
import errno
import io as _io
import json
import os
import re
import secrets
import shutil
import string
import tomllib
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ecjax._src.inputs import (
    InputError,
    as_class_indices,
    check_bounds,
    check_exclusive,
    check_finite,
    check_inside,
    check_prior_intervals,
    check_shape,
    check_table,
    literal,
    mentioning,
)

# Largest array a file may declare before it is loaded (``max_bytes``); 1 GiB.
DEFAULT_MAX_BYTES = 2**30


@contextlib.contextmanager
def said_of(source: object, files: dict[str, object] | None = None):
    """Errors of the checks inside, said of ``source`` (a file, an option): ``"<source>: <problem>"``, with each
    argument named in ``files`` (argument name -> what the user knows it as) said by that name, from the error's
    fields only (:class:`InputError`: its ``argument`` and ``problem``, or the arguments its ``template``
    mentions); the text of a message is never edited.  The error keeps the mentions ``files`` does not name, for
    a front end to say its way."""
    try:
        yield
    except InputError as err:  # the problem without the library's subject, where it has one
        if err.template is not None:  # the arguments it mentions, each said by its name in `files` where given
            template, mentions = _known_as(err.template, err.mentions, files or {})
            said = mentioning(f"{literal(source)}: {template}", **mentions)
            raise InputError(said["problem"], **said) from None
        known_as = (files or {}).get(err.argument) if err.argument is not None else None
        if known_as is not None and err.problem is not None:  # its subject, by the name the user knows it by
            raise InputError(f"{source}: {known_as} {err.problem}") from None
        raise InputError(f"{source}: {err.problem or err}") from None


def _known_as(template, mentions, files):
    """``template`` with each mention of an argument itself (value ``None``) that ``files`` names written as that
    name, and the mentions left."""
    parts, left = [], {}
    for text, name, _, _ in string.Formatter().parse(template):
        parts.append(literal(text))
        if name is None:
            continue
        argument, value = mentions[name]
        if value is None and argument in files:
            parts.append(literal(files[argument]))
        else:
            parts.append(f"{{{name}}}")
            left[name] = mentions[name]
    return "".join(parts), left


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
               max_bytes: int = DEFAULT_MAX_BYTES, rows: int | None = None) -> np.ndarray:
    """Load one numeric array from ``.npy``, ``.npz`` (first or ``key`` entry) or ``.csv`` (``.txt``).

    CSV: comma-separated numbers, read by the standard library's :mod:`csv`
    (UTF-8, with or without a byte-order mark; quoted cells), one row per
    sample; one column gives a vector.  The first row is a header under the
    rule of :func:`csv_first_row`; a first row that may be pandas' header or
    a sample is settled by ``rows``, the number of samples the other files
    of the same samples hold (:func:`load_arrays` does that), and refused
    without it.  An array declaring more than ``max_bytes`` in its header (a
    ``.csv`` file larger than that) is refused before it is read.
    """
    return _settled(_load_one(path, key, max_bytes), rows)


def load_arrays(paths: Sequence[str | os.PathLike[str]], *,
                max_bytes: int = DEFAULT_MAX_BYTES) -> list[np.ndarray]:
    """:func:`load_array` of files that hold the same samples (the labels, scores, weights of one test set).

    A CSV whose first row may be pandas' header or a sample (see
    :func:`csv_first_row`) is settled by the others: a header if the file
    has one row more than they have samples, a sample otherwise.  Where no
    other file says how many samples there are, it is refused.
    """
    loaded = {str(p): _load_one(p, None, max_bytes) for p in paths}
    lengths = {a.array.shape[0] for a in loaded.values() if a.first_line is None and a.array.ndim}
    if len(lengths) > 1:  # the caller's sample-count check names the files; undecided first rows stay samples
        return [loaded[str(p)].array for p in paths]
    return [_settled(loaded[str(p)], next(iter(lengths), None)) for p in paths]


@dataclass(frozen=True)
class _Loaded:
    array: np.ndarray
    first_line: str | None = None  # the first line of a CSV, where it may be a header or a sample
    source: str = ""


def _settled(loaded: _Loaded, rows: int | None) -> np.ndarray:
    """The array of ``loaded``, its undecided first row a header when the file has ``rows + 1`` rows."""
    arr, first = loaded.array, loaded.first_line
    if first is None:
        return arr
    if rows is None:
        raise InputError(
            f"{loaded.source}: the first line {first!r} may be the header pandas writes for unnamed columns "
            f"(pd.Series(y).to_csv(index=False) writes `0`) or a first sample, and no other file says how many "
            f"samples there are: name the column(s) (pd.Series(y, name=\"label\")), or save a .npy file (np.save)")
    return arr[1:] if arr.shape[0] == rows + 1 else arr


def load_class_names(path: str | os.PathLike[str], classes: Sequence[str], *,
                     max_bytes: int = DEFAULT_MAX_BYTES) -> np.ndarray:
    """A label file of class names as the class indices of the library: each name's position in ``classes``
    (the command line's ``--classes``, in the order of the score columns).

    CSV: one column of names (read as :func:`csv_rows` reads), one row per
    sample; a first row that is none of ``classes`` is its header (``label``).
    ``.npy`` / ``.npz``: a vector of strings (NumPy's text dtype, saved
    without pickle); numbers are read as the names they spell (``--classes
    0,1`` for a file of 0s and 1s).  A name that is not one of ``classes``
    is refused, naming it (:func:`~ecjax._src.inputs.as_class_indices`).
    """
    p = _existing_file(path)
    if p.suffix.lower() in (".csv", ".txt"):
        _check_text_size(p, max_bytes)
        rows = csv_rows(p)
        wide = next(((line, len(cells)) for line, cells in rows if len(cells) != 1), None)
        if wide is not None:
            raise InputError(f"{p}: line {wide[0]} has {wide[1]} columns; a label file holds one class name per row")
        names = [cells[0] for _, cells in rows]
        if names and names[0] not in classes:
            names = names[1:]  # a header naming the column
        values = np.asarray(names, dtype=str)
    else:
        values = _load_one(p, None, max_bytes, text=True).array.astype(str)
    if values.ndim != 1 or values.size == 0:
        raise InputError(f"{p}: must hold one class name per sample (a vector), got shape {values.shape}")
    with said_of(p):
        return as_class_indices(values, np.asarray(classes, dtype=str))


def _check_text_size(p: Path, max_bytes: int) -> None:
    if p.stat().st_size > max_bytes:
        raise InputError(f"{p}: {p.stat().st_size / 2**20:,.0f} MiB of text, over the input limit of "
                         f"{max_bytes / 2**20:,.0f} MiB (raise it with --max-input-mb, or max_bytes=)")


def _load_one(path, key, max_bytes, text=False) -> _Loaded:
    """One array of ``path``: numbers, or with ``text`` a ``.npy`` / ``.npz`` array of strings too."""
    p = _existing_file(path)
    suffix = p.suffix.lower()
    first_line = None
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
            _check_text_size(p, max_bytes)
            arr, first_line = _load_csv(p)
        else:
            raise InputError(f"{p}: unsupported file type {suffix!r} (use .npy, .npz or .csv)")
    except InputError:
        raise
    except ValueError as err:  # pickled arrays never get here: their header is refused first
        raise InputError(f"{p}: could not be read as a numeric array ({err})") from None
    except (OSError, zipfile.BadZipFile, EOFError, zipfile.LargeZipFile) as err:
        raise InputError(f"{p}: could not be read ({err})") from None
    if arr.dtype.kind not in ("biufUS" if text else "biuf"):
        raise InputError(f"{p}: must hold numbers, got dtype {arr.dtype}")
    return _Loaded(arr, first_line, str(p))


def _read_text(p: Path) -> str:
    """The text of ``p``: UTF-8, a byte-order mark (Excel's "CSV UTF-8") left out."""
    try:
        return p.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(f"{p}: is not UTF-8 text (invalid byte at offset {err.start})") from None
    except OSError as err:
        raise InputError(f"{p}: could not be read ({err.strerror or err})") from None


# A number in a CSV cell: decimal digits with an optional point and exponent, or inf / infinity / nan (any case).
# Python's float() also takes "1_0" (10) and other scripts' digits: a cell like that is refused, not guessed.
_NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)", re.IGNORECASE)
_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")


def _is_number(cell: str) -> bool:
    return _NUMBER.fullmatch(cell) is not None


def _all_match(pattern: re.Pattern, cells: list[str]) -> bool:
    """Every one of ``cells`` matches ``pattern``: one run of the regex over the cells joined by newlines (a
    million cells in a fraction of a second), exact because a cell holding a newline makes the count differ."""
    joined = "\n".join(cells)
    if joined.count("\n") != len(cells) - 1:
        return all(pattern.fullmatch(c) for c in cells)
    return re.fullmatch(f"(?:{pattern.pattern})(?:\n(?:{pattern.pattern}))*", joined, pattern.flags) is not None


def _python_number(cell: str) -> bool:
    """``cell`` is a number to Python's ``float()`` (``1_0``, ``١``), if not to :data:`_NUMBER`."""
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _column_numbers(cells: list[str]) -> bool:
    """``cells`` are ``0, 1, ..., C-1``: the names pandas gives unnamed columns."""
    return cells == [str(j) for j in range(len(cells))]


def csv_rows(path: str | os.PathLike[str]) -> list[tuple[int, list[str]]]:
    """``[(line number, cells)]`` of the non-blank rows of a CSV file, each cell stripped of spaces.

    Read by the standard library's :mod:`csv` (its quoting: ``"a,b"`` is one
    cell, ``a``), from UTF-8 text with or without a byte-order mark.  There
    are no comment lines: a first line ``#,A,B`` is a header like any other.
    """
    p = Path(path)
    reader = csv.reader(_io.StringIO(_read_text(p), newline=""), skipinitialspace=True, strict=True)
    rows = []
    try:
        for row in reader:
            cells = list(map(str.strip, row))
            if any(cells):
                rows.append((reader.line_num, cells))
    except csv.Error as err:
        raise InputError(f"{p}: line {reader.line_num} is not valid CSV ({err})") from None
    return rows


def csv_first_row(rows: list[tuple[int, list[str]]]) -> str:
    """Whether the first of the ``rows`` of a CSV file of numbers is a ``"header"``, a ``"sample"``, or
    ``"either"`` (to be settled by the number of samples of the other files).

    One rule: the first row is a header when one of its cells is a name (not
    empty, not a number), or when its cells are ``0, 1, ..., C-1``, the names
    pandas writes for unnamed columns (``,0,1,...`` with the index column),
    above rows that hold a number with a point or an exponent (floats, as
    pandas, NumPy and Python write them).  Above rows of whole numbers only
    (a label file written by ``pd.Series(y).to_csv(index=False)``, or one
    whose first label is 0) the row ``0, ..., C-1`` is ``"either"``.
    """
    first = rows[0][1]
    if any(c and not _is_number(c) for c in first) or (first[0] == "" and _column_numbers(first[1:])):
        return "header"
    if len(rows) > 1 and _column_numbers(first):
        whole = _all_match(_WHOLE_NUMBER, [c for _, cells in rows[1:] for c in cells])
        return "either" if whole else "header"
    return "sample"


def _load_csv(p: Path) -> tuple[np.ndarray, str | None]:
    """The numbers of a CSV file (:func:`csv_rows`, :func:`csv_first_row`) and, where its first row may be a
    header or a sample, that row's line (the array then holds it as a sample)."""
    rows = csv_rows(p)
    if not rows:
        raise InputError(f"{p}: the file is empty")
    kind = csv_first_row(rows)
    header, body = (rows[0][1], rows[1:]) if kind == "header" else (None, rows)
    if not body:
        raise InputError(f"{p}: holds a header (line {rows[0][0]}) but no rows of numbers")
    if header is not None and header[0] == "":  # an unnamed first column: the row index pandas and R write
        header, body = header[1:], [(line, cells[1:]) for line, cells in body]
    width = len(header) if header is not None else len(body[0][1])
    for line, cells in body:
        if len(cells) != width:
            raise InputError(f"{p}: line {line} has {len(cells)} columns, "
                             + (f"the header {width}" if header is not None else f"line {body[0][0]} {width}"))
    flat = [c for _, cells in body for c in cells]
    if not _all_match(_NUMBER, flat):
        line, j = next((line, j) for line, cells in body for j, c in enumerate(cells) if not _is_number(c))
        raise InputError(f"{p}: " + _not_a_number(header, body, line, j))
    arr = np.fromiter(map(float, flat), dtype=np.float64, count=len(flat)).reshape(len(body), width)
    if arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim == 1 and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)
    return arr, (",".join(rows[0][1]) if kind == "either" else None)


def _not_a_number(header, body, line, j) -> str:
    """Why the cell of ``line`` in column ``j`` is refused: a class name (with the indices to write instead), an
    empty cell, or text that is not a number."""
    cell = next(cells[j] for ln, cells in body if ln == line)
    column = [cells[j] for _, cells in body]
    if len(body[0][1]) == 1 and not any(_is_number(c) or _python_number(c) for c in column):
        names = column + ([header[0]] if header is not None and header[0] in column else [])
        classes = sorted(set(names))
        mapping = ", ".join(f"{c!r}: {i}" for i, c in enumerate(classes[:10])) + (", ..." if len(classes) > 10 else "")
        return (f"holds class names ({len(classes)} distinct), not class indices: give the classes in the order of "
                f"the score columns with --classes (e.g. --classes {','.join(classes[:10])}: sorted, the order of "
                f"scikit-learn's LabelEncoder and of its classifiers' classes_), or write each class as its index "
                f"0..K-1, e.g. {{{mapping}}}")
    if not cell:
        return f"line {line}, column {j + 1} is empty"
    why = " (write numbers without `_` separators)" if "_" in cell else ""
    return f"line {line}, column {j + 1} is not a number: {cell[:40]!r}{why}"


@dataclass(frozen=True)
class ResultsTable:
    """Per-fold (or per-run) results of several systems, from :func:`load_results_table`."""

    systems: list[str]
    scores: np.ndarray | list  # (M, n); (M, q, n) with data sets; a list of q (M, n_d) if their folds differ
    datasets: list[str] | None = None


# Columns of a results file that are not systems (names compared without case): the data set of each row, and the
# number of its fold or run (an unnamed first column, pandas' index, too).
DATASET_COLUMNS = ("dataset", "data set", "data_set")
FOLD_COLUMNS = ("fold", "folds", "run", "repeat", "repetition", "split", "iteration", "#", "index")


def results_columns(header: list[str]) -> tuple[int | None, list[int]]:
    """``(dataset column or None, system columns)`` of the header of a results file: a column named in
    :data:`DATASET_COLUMNS` groups the rows, one named in :data:`FOLD_COLUMNS` (or an unnamed first column,
    pandas' index) numbers them; every other column is a system."""
    named = [h.lower() for h in header]
    if any(not h for h in header[1:]) or len(set(named)) != len(named):
        raise InputError(f"the header must name every column once, got {','.join(header)[:80]!r}")
    datasets = [j for j, h in enumerate(named) if h in DATASET_COLUMNS]
    if len(datasets) > 1:
        raise InputError(f"two data set columns ({', '.join(header[j] for j in datasets)}): keep one")
    systems = [j for j, h in enumerate(named) if h not in DATASET_COLUMNS + FOLD_COLUMNS and h]
    if not systems:
        raise InputError(f"no system column besides `dataset` and the fold numbers, got {','.join(header)[:80]!r}")
    return (datasets[0] if datasets else None), systems


def load_results_table(path: str | os.PathLike[str]) -> ResultsTable:
    """A CSV of results: a header naming the columns, one row per fold (higher is better).

    Every column is a system, except an optional ``dataset`` column that
    groups the rows by data set (``dataset,A,B`` / ``iris,0.93,0.95`` / ...)
    and a ``fold`` column (or ``run``, ``#``, pandas' unnamed index; see
    :func:`results_columns`) that numbers them.  Read as :func:`csv_rows`
    reads (UTF-8 with or without a byte-order mark, quoted names); the first
    line is the header, and one of numbers only is refused (a header is
    missing) unless it is pandas' ``0,1,...``.  ``scores`` is ``(M, q, n)``
    when every data set has ``n`` folds, else a list of ``q`` ``(M, n_d)``
    arrays (the input of :func:`ecjax.prob.hierarchical_compare_results`).
    """
    p = _existing_file(path)
    rows = csv_rows(p)
    if len(rows) < 2:
        raise InputError(f"{p}: needs a header naming the systems and at least one row of results")
    (_, header), body = rows[0], rows[1:]
    if all(_is_number(h) for h in header) and not _column_numbers(header):
        raise InputError(f"{p}: the first line must be a header naming the columns (`A,B,C`, or `dataset,A,B`), "
                         f"got numbers: {','.join(header)[:80]!r}")
    with said_of(p):
        by, columns = results_columns(header)
    for line, cells in body:
        if len(cells) != len(header):
            raise InputError(f"{p}: line {line} has {len(cells)} columns, the header {len(header)}")
        for j in columns:
            if not _is_number(cells[j]):
                raise InputError(f"{p}: every result must be a number: line {line}, column {header[j]!r} holds "
                                 f"{cells[j][:40]!r} (names belong in the `dataset` column)")
    systems = [header[j] for j in columns]
    values = np.array([[float(cells[j]) for j in columns] for _, cells in body])
    if not np.all(np.isfinite(values)):
        raise InputError(f"{p}: results contain NaN or inf")
    if by is None:
        return ResultsTable(systems, values.T)
    names = list(dict.fromkeys(cells[by] for _, cells in body))
    groups = [values[[cells[by] == d for _, cells in body]] for d in names]
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
        check_table(data, "cost specification", _SPEC_KEYS)
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
                raw = [check_table(raw, "priors", classes, required=classes, keys="class(es)")[name] for name in classes]
            priors = _numbers(raw, "priors", f"({k},)", " (one per class)")
            if np.any(priors < 0) or abs(priors.sum() - 1) > 1e-6:
                raise InputError("`priors` must be non-negative and sum to 1")
        low = high = p_low = p_high = None
        unc = data.get("uncertainty")
        if unc is not None:
            check_table(unc, "uncertainty", _UNCERTAINTY_KEYS, pairs=(("low", "high"), ("priors_low", "priors_high")))
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


def load_document(path: str | os.PathLike[str], what: str) -> Any:
    """The data of a ``.json`` (else TOML) file holding ``what`` (a cost specification, a calibrator), as
    :mod:`json` / :mod:`tomllib` read it; a missing file, text that is not UTF-8 or a syntax error is refused
    naming the file."""
    p = _existing_file(path)
    text = _read_text(p)
    try:
        if p.suffix.lower() == ".json":
            return json.loads(text)
        return tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"{p}: syntax error: {err}") from None
    except RecursionError:
        raise InputError(f"{p}: nested too deeply to be {what}") from None


def load_cost_spec(path: str | os.PathLike[str]) -> CostSpec:
    """Read a cost specification from a ``.toml`` or ``.json`` file."""
    return parse_cost_spec(load_document(path, "a cost specification"), source=str(Path(path)))


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


def array_file_format(path: str | os.PathLike[str]) -> str:
    """``"npy"`` or ``"csv"``: the format an array written to ``path`` takes from its suffix (``.npy``; ``.csv`` or
    ``.txt``); any other suffix is refused, so that a file never holds another format than its name says."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".npy", ".csv", ".txt"):
        raise InputError(f"{path}: an array is written as .npy (NumPy) or .csv (text); got the suffix {suffix!r}")
    return "npy" if suffix == ".npy" else "csv"


def array_file_bytes(path: str | os.PathLike[str], array: np.ndarray) -> bytes:
    """The bytes of ``array`` in the format of ``path`` (:func:`array_file_format`): NumPy's ``.npy``, or CSV
    with one row per sample and no header, each number as Python writes a float (``0.0``, ``-inf``: the shortest
    text that reads back to the same float64), so :func:`load_array` reads it back exactly."""
    arr = np.asarray(array, dtype=np.float64)
    if array_file_format(path) == "npy":
        buffer = _io.BytesIO()
        np.save(buffer, arr, allow_pickle=False)
        return buffer.getvalue()
    rows = arr.reshape(arr.shape[0], -1)
    return "".join(",".join(repr(float(x)) for x in row) + "\n" for row in rows).encode("ascii")


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
