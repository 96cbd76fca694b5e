"""Inputs: the checks and canonical forms every public function of ecjax starts from.

Public entry points call these on concrete (non-traced) inputs before any
kernel runs; kernels never validate.  Canonical forms: scores become
finite float arrays in the log domain (probabilities are logged here) with
the log-priors that make them posteriors (:func:`scores_and_log_priors`),
priors become probability vectors, indices and counts become exact integer
arrays.  Every check raises :class:`InputError`
naming the argument, the expected form and what was received.  Shapes are
always checked.

Value checks under ``jax.jit`` / ``jax.vmap`` (the NaN contract).  A traced
value cannot raise, so inside traced code the check becomes a mask instead:

* a public function whose float result a concrete call would refuse with
  :class:`InputError` returns ``NaN`` in the affected entries (every entry of
  that batch element), never a plausible number (:func:`nan_where_invalid`);
* an integer result (class or decision indices) uses the sentinel ``-1``
  (:data:`INVALID_INDEX`), and an invalid count matrix has every cell ``-1``;
  every public function fed a ``-1`` index or a negative count returns
  ``NaN`` / ``-1`` in turn, so the mark propagates to the end.

Concrete calls (outside ``jit``) never return these marks for bad input:
they raise.  Bounds that depend on shapes (``K``, ``D``, number of samples)
are static and raise under ``jit`` too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, SupportsFloat, TypeVar, overload

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike, DTypeLike

if TYPE_CHECKING:
    from typing_extensions import TypeIs

# An array passed through unchanged by a check (host or device).
_Arr = TypeVar("_Arr", bound=jax.Array | np.ndarray)
_T = TypeVar("_T")

SCORE_TYPES = ("log_posteriors", "logits", "probabilities", "llr", "log_likelihoods")
# Scores that already hold the training priors (posteriors), and scores that need priors to become posteriors.
POSTERIOR_TYPES = ("log_posteriors", "logits", "probabilities")
LIKELIHOOD_TYPES = ("llr", "log_likelihoods")
# What canonical scores are, whatever they were given as: the kinds the kernels branch on.  Log-softmax of a
# "posterior" row gives the posteriors (log-posteriors, logits, logged probabilities); "likelihood" rows need the
# log-priors added first; an "llr" is one binary log-likelihood ratio per sample.
SCORE_KINDS = ("posterior", "likelihood", "llr")
# The kind of each score type (a kind is its own kind), looked up by the kernels (which never validate).
KIND_OF_SCORE_TYPE = {"log_posteriors": "posterior", "logits": "posterior", "probabilities": "posterior",
                      "log_likelihoods": "likelihood", "llr": "llr", **{kind: kind for kind in SCORE_KINDS}}

# Tolerance on the row sums of probabilities: float32 softmax outputs and text files with 6 significant
# digits are off by up to ~1e-5 at K = 100; rows off by more are not probability vectors.
_PROBABILITY_SUM_TOL = 1e-3

# Relative tolerance used to accept priors and log-posterior rows as
# normalized: loose enough for float32 round-off, tight enough to catch
# unnormalized inputs.
SUM_TOL = 1e-4

INT32_MAX = 2**31 - 1
# The sentinel of an invalid class/decision index (or count) under jit/vmap.
INVALID_INDEX = -1
# K (or D) inferred from the data (max index + 1) beyond this is refused: a
# stray label 20000 would otherwise build 20001 x 20001 matrices.  Pass
# ``num_classes`` / ``num_decisions`` explicitly for more.
MAX_INFERRED_CLASSES = 10_000
# K * D of any matrix ecjax builds: the flat cell index must fit int32.
MAX_CELLS = INT32_MAX


class InputError(ValueError):
    """An argument of a public ecjax function is not of the expected form.

    ``str(err)`` names the arguments as the function's signature does.  A front end that knows them by other
    names (the command line: its options and files) says the error from its fields instead, without editing its
    text; each is ``None`` where the check does not give it:

    - ``argument``: the argument the error is about, the subject of the message (``"scores"``);
    - ``problem``: the message without that subject (``"the rows look like probabilities ..."`` rather than
      ``"`scores` rows look like probabilities ..."``);
    - ``template`` and ``mentions``: ``problem`` with each argument it names as a field ``{field}``, and
      ``mentions[field] = (argument, value)``, the value it asks for (``("score_type", "probabilities")``) or
      ``None`` for the argument itself; :meth:`problem_said` says them the front end's way
      (``--score-type probabilities``), ``problem`` the library's (:func:`library_spelling`).
    """

    def __init__(self, message: str, *, argument: str | None = None, problem: str | None = None,
                 template: str | None = None, mentions: Mapping[str, tuple[str, object]] | None = None) -> None:
        super().__init__(message)
        self.argument, self.problem = argument, problem
        self.template, self.mentions = template, dict(mentions or {})

    def problem_said(self, spelling: Callable[[str, object], str]) -> str | None:
        """``problem`` with every argument it mentions said by ``spelling(argument, value)``."""
        if self.template is None:
            return self.problem
        return self.template.format_map({f: spelling(a, value) for f, (a, value) in self.mentions.items()})


def library_spelling(argument: str, value: object = None) -> str:
    """How the library's messages name an argument (`` `labels` ``) or a value of it (``score_type='llr'``)."""
    return f"`{argument}`" if value is None else f"{argument}={value!r}"


def mentioning(template: str, **mentions: tuple[str, object]) -> dict[str, Any]:
    """The ``problem``, ``template`` and ``mentions`` of an :class:`InputError` whose problem names other
    arguments (each a field ``{field}`` of ``template``, ``mentions[field] = (argument, value)``), the ``problem``
    said the library's way."""
    problem = template.format_map({f: library_spelling(a, value) for f, (a, value) in mentions.items()})
    return {"problem": problem, "template": template, "mentions": mentions}


def literal(text: object) -> str:
    """``text`` as literal text of an :class:`InputError` template (its braces doubled)."""
    return str(text).replace("{", "{{").replace("}", "}}")


def is_tracer(x: object) -> TypeIs[jax.core.Tracer]:
    return isinstance(x, jax.core.Tracer)


def _describe(x) -> str:
    arr = np.asarray(x)
    return f"an array of shape {arr.shape} and dtype {arr.dtype}"


def to_device(x: ArrayLike, dtype: DTypeLike | None = None) -> jax.Array:
    """``jnp.asarray(x, dtype)``, without compiling anything for a host array.

    JAX (0.10) stages a host array into a small compiled program per new
    shape and dtype; ``device_put`` of the numpy cast copies it instead, so
    data of a new size compile nothing on their way in (the values are the
    same: numpy and XLA round float casts to nearest).
    """
    if isinstance(x, jax.Array) or is_tracer(x):
        return jnp.asarray(x, dtype=dtype)
    return jax.device_put(np.asarray(x, dtype=dtype))


def bucket_length(n: int, minimum: int = 1) -> int:
    """The next power of two ``>= max(n, minimum)``: the padded length of ``n`` rows.

    Arrays padded to it reach compiled programs in a few shapes only, so
    data of a similar size reuse what was compiled (or cached) for earlier
    data instead of compiling anew; the padding at most doubles the rows.
    """
    return max(int(minimum), 1 << max(0, int(n) - 1).bit_length())


def pad_to_bucket(x: ArrayLike, *, axis: int = 0, minimum: int = 1, dtype: DTypeLike | None = None) -> np.ndarray:
    """Host array ``x`` (cast to ``dtype``) padded with zeros along ``axis`` to :func:`bucket_length`."""
    x = np.asarray(x, dtype=dtype)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, bucket_length(x.shape[axis], minimum) - x.shape[axis])
    return np.pad(x, pad)


def _categorical(x: object) -> Any:
    """The pandas ``Categorical`` of ``x`` (a categorical Series' ``.cat``, or ``x`` itself), else ``None``."""
    try:
        cat = getattr(x, "cat", x)  # a Series of another dtype raises AttributeError here
    except AttributeError:
        return None
    return cat if hasattr(cat, "codes") and hasattr(cat, "categories") else None


def host_values(x: object, name: str) -> object:
    """``x`` as an array-like: a pandas (or any data frame library's) Series or DataFrame as its values
    (``.to_numpy()``: a DataFrame's columns are the classes, in their order), a pandas ``Categorical`` (or
    categorical Series) as its class indices, the positions of its values in its ``categories`` (a missing
    value is refused); anything else as it is.  Values are read by position (a Series' index is not used: labels
    and scores must list the samples in one order).  pandas is never imported: it is read by its methods."""
    if isinstance(x, (jax.Array, np.ndarray)) or is_tracer(x) or not hasattr(x, "to_numpy"):
        return x
    cat = _categorical(x)
    if cat is None:
        return x.to_numpy()  # type: ignore[attr-defined]
    codes = np.asarray(cat.codes)
    if np.any(codes < 0):
        raise InputError(f"`{name}` has a missing value (NaN) at entry {int(np.argmax(codes < 0))}: each entry must "
                         f"be one of its categories {list(cat.categories)[:20]}")
    return codes.astype(np.int64)


def check_not_class_names(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` if it does not hold text; text (class names: ``"cat"``, ``"dog"``) is refused with how to give
    class indices instead: :func:`class_indices` with the class list, or a pandas ``Categorical``."""
    text = arr.dtype.kind in "US" or (arr.dtype == object and arr.size > 0
                                      and all(isinstance(e, (str, bytes)) for e in arr.flat))
    if text:
        distinct = np.unique(arr.astype(str))
        shown = ", ".join(repr(e) for e in distinct[:5].tolist()) + (", ..." if len(distinct) > 5 else "")
        raise InputError(
            f"`{name}` holds class names ({shown}), not class indices (it must be numeric): give the class list, in "
            f"the order of the score columns (a classifier's classes_, a scores DataFrame's columns), as "
            f"ecjax.class_indices({name}, classes=[...]), or pass a pandas Categorical whose categories are the "
            f"classes")
    return arr


def as_array(x: object, name: str, *, min_ndim: int = 0, dtype: DTypeLike | None = None) -> jax.Array | np.ndarray:
    """Convert ``x`` to an array, raising :class:`InputError` if impossible.

    pandas Series and DataFrames are read by their values, pandas categoricals by their class indices
    (:func:`host_values`)."""
    if x is None:
        raise InputError(f"`{name}` is required, got None")
    if getattr(x, "structured_costs", False):
        problem = ("are structured costs (ecjax.costs.StructuredCosts), and this takes a dense (K, D) matrix: give "
                   "`.dense()` of them (where it fits in memory)")
        raise InputError(f"`{name}` {problem}", problem=problem)
    x = host_values(x, name)
    arr: jax.Array | np.ndarray
    if is_tracer(x):
        arr = x
    else:
        try:
            arr = np.asarray(x) if not isinstance(x, jax.Array) else x
        except Exception as err:  # noqa: BLE001 - anything unconvertible
            raise InputError(f"`{name}` could not be read as an array: {err}") from None
        if isinstance(arr, np.ndarray):
            check_not_class_names(arr, name)
        if arr.dtype == object:
            raise InputError(f"`{name}` must be numeric, got an object array (ragged or mixed input)")
    if arr.ndim < min_ndim:
        raise InputError(f"`{name}` must have at least {min_ndim} dimension(s), got {_describe(arr)}")
    if dtype is not None:
        arr = jnp.asarray(arr, dtype=dtype)
    return arr


def as_index_array(x: object, name: str, *, upper: int | None = None, min_ndim: int = 1,
                   upper_is: str = "") -> jax.Array:
    """Integer class or decision indices in ``[0, upper)``, as ``int32``.

    Floats holding whole numbers (``1.0``) are accepted; ``1.5`` is not.
    Every value is checked on the host *before* the cast to ``int32``, so an
    index past ``2**31 - 1`` is refused instead of wrapping.  Traced input
    (inside ``jit``/``vmap``) cannot raise: invalid entries (negative,
    ``>= upper``, non-integer or NaN) become :data:`INVALID_INDEX` (``-1``),
    which the counting kernels turn into an invalid count matrix.
    ``upper_is`` says in the error what ``upper`` is (``"the utility
    matrix's columns"``).
    """
    arr = as_array(x, name, min_ndim=min_ndim)
    if arr.shape[-1] == 0:
        raise InputError(f"`{name}` is empty: at least one sample is needed")
    if is_tracer(arr):
        if arr.dtype == jnp.bool_:
            return arr.astype(jnp.int32)
        if not jnp.issubdtype(arr.dtype, jnp.integer) and not jnp.issubdtype(arr.dtype, jnp.floating):
            raise InputError(f"`{name}` must hold integer indices, got dtype {arr.dtype}")
        ok = arr >= 0
        if jnp.issubdtype(arr.dtype, jnp.floating):
            ok = ok & jnp.isfinite(arr) & (arr == jnp.round(arr)) & (arr <= INT32_MAX)
        if upper is not None:
            ok = ok & (arr < upper)
        return jnp.where(ok, arr, INVALID_INDEX).astype(jnp.int32)
    arr = np.asarray(arr)
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int8)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise InputError(f"`{name}` contains NaN or inf; expected integer indices")
        if np.any(arr != np.round(arr)):
            raise InputError(f"`{name}` must hold integers (indices), got non-integer values such as "
                             f"{arr[arr != np.round(arr)].flat[0]}")
    elif arr.dtype.kind not in "iu":
        raise InputError(f"`{name}` must hold integer indices, got dtype {arr.dtype}")
    if arr.size and arr.min() < 0:
        raise InputError(f"`{name}` must be >= 0, got minimum {arr.min()}")
    top = int(arr.max()) if arr.size else 0
    if upper is not None and top >= upper:
        # Indices 1..upper are one class too many and none of class 0: counted from 1 (R, MATLAB, a spreadsheet).
        one_based = f"; they run from 1 to {top}: they look 1-based (classes count from 0: subtract 1)" if (
            top == upper and arr.min() == 1) else ""
        raise InputError(f"`{name}` must be < {upper}{f' ({upper_is})' if upper_is else ''}, got maximum {top}"
                         + one_based)
    if top > INT32_MAX:
        raise InputError(f"`{name}` holds the index {top}, past the largest supported index 2**31 - 1")
    return to_device(arr.astype(np.int32))


def as_label_vector(labels: object, *, num_classes: int, scores: jax.Array | np.ndarray | None = None,
                    sample_axis: int = -2, upper_is: str = "") -> jax.Array:
    """``labels``: one ``(N,)`` vector of class indices in ``[0, num_classes)`` (:func:`as_index_array`) and, given
    ``scores``, one label per sample of its ``sample_axis``."""
    y = as_index_array(labels, "labels", upper=num_classes, upper_is=upper_is)
    if y.ndim != 1:
        raise InputError(f"`labels` must be one vector of N classes, got shape {tuple(y.shape)}")
    if scores is not None:
        check_same_length("labels", y, "scores", scores, axis_b=sample_axis)
    return y


def class_indices(labels: ArrayLike | Sequence[Hashable], classes: ArrayLike | Sequence[Hashable]) -> np.ndarray:
    """Class names as the class indices every ecjax function takes: the position of each label in ``classes``.

    ``classes`` is the class list, in the order of the score columns: a
    classifier's ``classes_`` (scikit-learn), a scores DataFrame's
    ``columns``, or any sequence of distinct names (strings, numbers, any
    hashable values of one sortable kind).  ``labels`` (a list, an array, a
    pandas Series) holds one name per sample; a name not in ``classes`` is
    refused, naming it.  A pandas ``Categorical`` needs no class list: every
    ecjax function reads it as the positions in its ``categories``.

    Returns:
      ``(N,)`` int64 class indices.

    Example:
      >>> class_indices(["dog", "cat", "dog"], classes=["cat", "dog"]).tolist()
      [1, 0, 1]
    """
    names = as_class_list(classes)
    return as_class_indices(np.asarray(host_values(labels, "labels")), names)


def as_class_list(classes: object, name: str = "classes", *, num_classes: int | None = None) -> np.ndarray:
    """``classes``, a list of class names (a pandas Index or any sequence), as a 1-D array: at least two, each
    once, and ``num_classes`` of them when given (one per score column)."""
    def refuse(problem: str) -> InputError:
        return InputError(f"`{name}` {problem}", argument=name, problem=problem)

    if classes is None or isinstance(classes, (str, bytes)):
        raise refuse(f"must be a sequence of class names (one per score column), got {classes!r}")
    names = np.asarray(host_values(classes, name))
    if names.ndim != 1 or len(names) < 2:
        raise refuse(f"must be one sequence of at least 2 class names, got {names.tolist()!r}")
    if len(set(names.tolist())) != len(names):
        twice = sorted({str(c) for c in names.tolist() if names.tolist().count(c) > 1})
        raise refuse(f"must name each class once, but {twice} appear twice")
    if num_classes is not None and len(names) != num_classes:
        raise refuse(f"names {len(names)} classes, but the scores have {num_classes} (one name per score column, in "
                     "order)")
    return names


def check_same_classes(classes: Sequence[str], named: Sequence[str], source: str) -> None:
    """``classes`` (the class list labels were read by) and ``named`` (the classes ``source`` names: a cost file's
    rows) are one list in one order, so that row ``i`` is the class of index ``i``; ``named`` left at the default
    ``"0", "1", ...`` names nothing, and agrees with any list."""
    if list(named) != [str(i) for i in range(len(named))] and list(classes) != list(named):
        problem = (f"names the classes {list(classes)}, but {source} names them {list(named)} (its rows, in order): "
                   "give the same classes in the same order")
        raise InputError(f"`classes` {problem}", argument="classes", problem=problem)


def as_class_indices(values: ArrayLike, classes: ArrayLike, name: str = "labels") -> np.ndarray:
    """The ``(N,)`` int64 positions of ``values`` in ``classes`` (class names of any sortable kind: numbers,
    strings), as scikit-learn maps ``y`` through an estimator's ``classes_``; a value that is not one of
    ``classes`` is refused, naming it."""
    known, wanted = np.asarray(classes), np.asarray(values)
    order = np.argsort(known, kind="stable")
    pos = np.clip(np.searchsorted(known[order], wanted), 0, max(len(known) - 1, 0))
    found = known[order][pos] == wanted if len(known) else np.zeros(wanted.shape, bool)
    if not np.all(found):
        unknown = np.unique(wanted[~found])[:5].tolist()
        problem = f"holds {unknown} (first ones shown), which are not among the classes {known[:20].tolist()}"
        raise InputError(f"`{name}` {problem}", argument=name, problem=problem)
    return order[pos].astype(np.int64)


def check_one_system(scores: _Arr, ndim: int, name: str = "scores") -> _Arr:
    """``scores`` of one system: ``ndim`` axes (1 for log-odds or LLRs, 2 for ``(N, K)`` rows), no batch axis."""
    if scores.ndim != ndim:
        raise InputError(f"`{name}` must be the scores of one system, got shape {tuple(scores.shape)}")
    return scores


def inferred_size(max_index: int, name: str, *, argument: str) -> int:
    """``max_index + 1`` as the number of classes/decisions, bounded by :data:`MAX_INFERRED_CLASSES`."""
    size = int(max_index) + 1
    if size > MAX_INFERRED_CLASSES:
        said = mentioning(f"holds the index {int(max_index)}, which would make {size} classes/decisions; more than "
                          f"{MAX_INFERRED_CLASSES} are only built when {{given}} is given explicitly",
                          given=(argument, None))
        raise InputError(f"`{name}` {said['problem']}", argument=name, **said)
    return size


def available_memory_bytes() -> int:
    """The memory the operating system can still give this process (Linux ``MemAvailable``; elsewhere the free
    physical pages), in bytes."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 1 << 62  # unknown: only the int32 cell limit applies


# A dense matrix may take at most this share of the available memory: its products and copies need as much again.
DENSE_MEMORY_SHARE = 0.5


def check_dense_fits(k: int, d: int, name: str, *, what: str, batch: int = 1, itemsize: int = 4) -> None:
    """Refuse to build ``batch`` dense ``K x D`` matrices (``what``: cost matrix, counts) that cannot be held: more
    than 2**31 - 1 cells, or more bytes than :data:`DENSE_MEMORY_SHARE` of :func:`available_memory_bytes`.  The fix
    is said: costs that depend only on the class and on whether the decision is right, and counts of the occupied
    cells, never build the matrix."""
    need = int(batch) * int(k) * int(d) * int(itemsize)
    available = available_memory_bytes()
    limit = int(available * DENSE_MEMORY_SHARE)
    if k * d <= MAX_CELLS and need <= limit:
        return
    size = f"a dense {k} x {d} {what}{f' (x {batch})' if batch > 1 else ''} takes {need / 2**30:.1f} GiB"
    why = (f"{size} and {k * d} cells, more than the 2**31 - 1 cells a matrix may have" if k * d > MAX_CELLS else
           f"{size}, more than the {limit / 2**30:.1f} GiB one matrix may take ({DENSE_MEMORY_SHARE:.0%} of the "
           f"{available / 2**30:.1f} GiB of available memory)")
    problem = (f"{why}: use structured costs (ecjax.costs.zero_one(K, dense=False), "
               "ecjax.costs.class_costs(wrong, correct=, abstain=): memory O(K)) with sparse counts "
               "(ecjax.sparse_confusion_matrix: memory O(occupied cells))")
    raise InputError(f"`{name}`: {problem}", problem=problem)


def check_cost_size(costs_k: int, costs_d: int, k: int, d: int, name: str = "costs", *,
                    against: str = "the counts") -> None:
    """Structured costs of ``costs_k`` classes and ``costs_d`` decisions for ``against`` (counts, scores) of ``k``
    classes and ``d`` decisions (``costs_d = costs_k + 1`` with an abstain decision)."""
    if (costs_k, costs_d) != (k, d):
        problem = (f"are for {costs_k} classes and {costs_d} decisions, {against} have {k} classes and {d} "
                   "decisions (an abstain decision is the column K)")
        raise InputError(f"`{name}` {problem}", problem=problem)


def as_class_cost_fields(correct: object, wrong: object, abstain: object, name: str = "costs"
                         ) -> tuple[jax.Array, jax.Array, jax.Array | None]:
    """The ``(..., K)`` fields of structured costs (:class:`ecjax.costs.StructuredCosts`): finite numbers, a
    scalar broadcast to the others' shape, ``K >= 2`` classes; ``abstain`` may be ``None`` (no abstain decision)."""
    given = {"correct": correct, "wrong": wrong, "abstain": abstain}
    arrays = {}
    for field, x in given.items():
        if x is not None:
            arrays[field] = check_numbers(np.asarray(as_array(x, f"{name}.{field}"), np.float64), f"{name}.{field}")
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError:
        raise InputError(f"`{name}`: the fields correct / wrong / abstain must broadcast to one (..., K) shape, got "
                         f"shapes {[tuple(a.shape) for a in arrays.values()]}") from None
    if len(shape) == 0 or shape[-1] < 2:
        raise InputError(f"`{name}`: structured costs need one entry per class along the last axis, K >= 2, got "
                         f"shape {shape} (give at least one field as a (K,) vector)")
    f = jnp.result_type(float)
    out = {field: to_device(np.broadcast_to(a, shape), f) for field, a in arrays.items()}
    return out["correct"], out["wrong"], out.get("abstain")


@overload
def as_scalar(x: object, name: str, *, integer: Literal[True], low: float | None = None, high: float | None = None,
              strict: bool = False, finite: bool = True, traced: Literal[False] = False) -> int: ...


@overload
def as_scalar(x: object, name: str, *, integer: Literal[False] = False, low: float | None = None,
              high: float | None = None, strict: bool = False, finite: bool = True,
              traced: Literal[False] = False) -> float: ...


@overload
def as_scalar(x: object, name: str, *, integer: bool = False, low: float | None = None, high: float | None = None,
              strict: bool = False, finite: bool = True, traced: Literal[True]) -> Any: ...


def as_scalar(x: object, name: str, *, integer: bool = False, low: float | None = None, high: float | None = None,
              strict: bool = False, finite: bool = True, traced: bool = False) -> Any:
    """The one check of one number (Python or numpy scalar, or a 0-d array for a real), within bounds.

    ``integer``: a Python or numpy integer (a count, a size), returned as ``int``; else a real number, returned as
    ``float`` (strings, booleans and ``None`` are refused either way; ``finite=False`` lets a real be ``nan`` or
    ``+/-inf``).  ``low``/``high``: bounds, inclusive, or exclusive with ``strict`` (``low=0, strict=True``: a
    positive number; ``low=0, high=1, strict=True``: a probability in ``(0, 1)``).  ``traced``: a traced ``x``
    (inside ``jit``) is returned as it is, for the NaN contract to mark.  The error names the argument
    (:attr:`InputError.argument`) and the bound it broke.  :func:`check_numbers` is its form for every entry of an
    array.
    """
    if traced and is_tracer(x):
        return x
    if integer:
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
            raise InputError(f"`{name}` must be an integer, got {x!r}", argument=name)
        count = int(x)
        if low is not None and (count <= low if strict else count < low):
            raise InputError(f"`{name}` must be {'>' if strict else '>='} {low}, got {count}", argument=name)
        if high is not None and (count >= high if strict else count > high):
            raise InputError(f"`{name}` must be {'<' if strict else '<='} {high}, got {count}", argument=name)
        return count
    if isinstance(x, (bool, np.bool_, str, bytes)) or x is None:
        raise InputError(f"`{name}` must be a number, got {x!r}", argument=name)
    try:
        arr = np.asarray(x)
        if arr.shape != () or arr.dtype.kind not in "iuf":
            raise TypeError
        value = float(arr)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"`{name}` must be a number, got {x!r}", argument=name) from None
    if finite and not np.isfinite(value):
        raise InputError(f"`{name}` must be finite, got {x!r}", argument=name)
    if not np.all(_within(value, low, high, strict)):
        raise InputError(f"`{name}` must be {_range_words(low, high, strict)}, got {x!r}", argument=name)
    return value


def _within(a, low, high, strict):
    """Where ``a`` (a number or an array) lies within the bounds of :func:`as_scalar` (NaN nowhere)."""
    above = True if low is None else (a > low if strict else a >= low)
    below = True if high is None else (a < high if strict else a <= high)
    return np.logical_and(above, below)


def _range_words(low, high, strict, entries=False):
    """What :func:`as_scalar` asks of a real (``in (0, 1)``, ``a positive finite number``, ``>= 2``), and
    :func:`check_numbers` of every entry (``in (0, 1)``, ``finite and > 0``)."""
    if low is not None and high is not None:
        return f"in {'(' if strict else '['}{low:g}, {high:g}{')' if strict else ']'}"
    if high is None and low == 0 and not entries:
        return "a positive finite number" if strict else "a non-negative finite number"
    bound = f"{'>' if strict else '>='} {low:g}" if high is None else f"{'<' if strict else '<='} {high:g}"
    return f"finite and {bound}" if entries else bound


def as_group_ids(groups: ArrayLike | Sequence[Any], num_samples: int) -> np.ndarray:
    """Cluster ids: one hashable id per sample (a ``(N,)`` array), kept on the host."""
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] != num_samples:
        problem = f"must be a vector with one id per sample ({num_samples}), got shape {g.shape}"
        raise InputError(f"`groups` {problem}", argument="groups", problem=problem)
    return g


def check_binary_scores(scores: _Arr, score_type: str) -> _Arr:
    """Scores of two classes: ``(..., N, 2)`` rows, or any ``llr`` (already one log-ratio per sample)."""
    if score_type != "llr" and scores.shape[-1] != 2:
        raise InputError(f"`scores` must be binary (K = 2 in the last axis), got shape {tuple(scores.shape)}")
    return scores


def check_score_columns(num_columns: int, num_classes: int, score_type: str) -> None:
    """The columns of a calibrator's input ``X`` (scikit-learn's ``(N, F)``) read as scores of ``num_classes``
    classes: one column per class (``F == K``, not for ``"llr"``), or for a binary problem one class-1 column
    (``F == 1``: a probability, a log-odds as ``"logits"``, a log-posterior, or an LLR)."""
    if num_classes < 2:
        raise InputError(f"`y` must hold at least 2 classes to calibrate, got {num_classes} class")
    per_class = num_columns == num_classes and score_type != "llr"
    class_one = num_classes == 2 and num_columns == 1 and score_type != "log_likelihoods"
    if not (per_class or class_one):
        raise InputError(
            f"`X` holds the scores of one system: one column per class ({num_classes} here), or for a binary "
            f"problem one column of class-1 scores (not for score_type='log_likelihoods'; the only form for "
            f"score_type='llr'); got {num_columns} column(s) with score_type={score_type!r}")


def check_naive_cost_positive(naive: ArrayLike) -> None:
    """The NEC (Ferrer 2022a, eq. 4) divides by the best naive system's expected cost: every one must be > 0."""
    if not is_tracer(naive) and np.any(np.asarray(naive) <= 0):
        raise InputError("the best naive system has zero expected cost for these `costs` and priors: NEC is undefined")


def as_key(key: Any, name: str = "key") -> jax.Array:
    """A JAX PRNG key: a typed key (``jax.random.key``) or a raw ``uint32`` one (``jax.random.PRNGKey``)."""
    if key is None:
        raise InputError(f"`{name}` is required: pass a jax.random key, e.g. jax.random.key(0)")
    dtype = getattr(key, "dtype", None)
    if isinstance(key, (jax.Array, np.ndarray)) or is_tracer(key):
        if dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key):
            assert isinstance(key, jax.Array), "only JAX arrays hold typed keys"
            return key
        if dtype == np.uint32 and key.ndim >= 1 and key.shape[-1] in (2, 4):
            return jnp.asarray(key)
    got = f"an array of shape {tuple(key.shape)} and dtype {dtype}" if dtype is not None else repr(key)[:60]
    raise InputError(f"`{name}` must be a jax.random key (e.g. jax.random.key(0)), got {got}")


def nan_where_invalid(out: Any, ok: ArrayLike, *, extra_axes: int = 0) -> Any:
    """The NaN contract for traced input: ``out`` where ``ok``, else NaN (floats) or -1 (integers).

    ``ok`` is a boolean with the batch shape of ``out`` without its last
    ``extra_axes`` axes (it broadcasts against it).  ``out`` may be a pytree.
    """
    ok = jnp.asarray(ok)
    mask = ok.reshape(ok.shape + (1,) * extra_axes)

    def one(x):
        x = jnp.asarray(x)
        bad = jnp.nan if jnp.issubdtype(x.dtype, jnp.inexact) else INVALID_INDEX
        return jnp.where(mask, x, jnp.asarray(bad, x.dtype))

    return jax.tree_util.tree_map(one, out)


def any_traced(*xs: Any) -> bool:
    return any(is_tracer(x) for x in jax.tree_util.tree_leaves(xs))


def check_host_only(function: str, **arrays: Any) -> None:
    """``function`` computes on the host (scipy, numpy): traced ``arrays`` (inside ``jit``/``vmap``) are refused."""
    traced = [name for name, x in arrays.items() if any_traced(x)]
    if traced:
        raise InputError(f"`{traced[0]}` is traced (inside jax.jit or jax.vmap), but {function} computes its result on "
                         "the host (scipy quantiles): call it outside jit, on concrete arrays")


def check_finite(arr: _T, name: str) -> _T:
    """Reject NaN and +/-inf (skipped for tracers)."""
    if is_tracer(arr):
        return arr
    a = np.asarray(arr)
    if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
        bad = "NaN" if np.any(np.isnan(a)) else "inf"
        raise InputError(f"`{name}` contains {bad}; all entries must be finite")
    return arr


def check_numbers(arr: _T, name: str, *, booleans: bool = False, finite: bool = True, low: float | None = None,
                  high: float | None = None, strict: bool = False) -> _T:
    """Integers or floats (and booleans when ``booleans``), none NaN or inf when ``finite``; with ``low``/``high``,
    every entry finite and within them (:func:`as_scalar`'s bounds, entry by entry: concentrations, scales,
    threshold probabilities), the message showing the first entry that is not.  Traced ``arr`` passes (the NaN
    contract)."""
    if is_tracer(arr):
        return arr
    a = np.asarray(arr)
    if a.dtype.kind not in ("iufb" if booleans else "iuf"):
        raise InputError(f"`{name}` must be numeric, got dtype {a.dtype}", argument=name)
    if low is None and high is None:
        return check_finite(arr, name) if finite else arr
    a = a.astype(np.float64)
    ok = np.isfinite(a) & _within(a, low, high, strict)
    if not np.all(ok):
        got = repr(arr) if a.ndim == 0 else f"{a[~ok].flat[0]} at entry {_first(~ok)}"
        raise InputError(f"`{name}` must be {_range_words(low, high, strict, entries=True)}, got {got}",
                         argument=name)
    return arr


def as_matrix(x: object, name: str, *, shape: tuple[int | None, ...] | None = None,
              batched: bool = True) -> jax.Array:
    """A finite float matrix of shape ``(..., K, D)`` (cost or utility); exactly ``(K, D)`` unless ``batched``."""
    arr = check_numbers(as_array(x, name, min_ndim=2), name, booleans=True)
    if not batched and arr.ndim != 2:
        want = "(K, D)" if shape is None else f"({', '.join('?' if s is None else str(s) for s in shape)})"
        raise InputError(f"`{name}` must be one {want} matrix, got shape {tuple(arr.shape)}")
    if shape is not None:
        k, d = shape
        if (k is not None and arr.shape[-2] != k) or (d is not None and arr.shape[-1] != d):
            want = f"({'K' if k is None else k}, {'D' if d is None else d})"
            raise InputError(f"`{name}` must have trailing shape {want}, got shape {tuple(arr.shape)}")
    return to_device(arr, dtype=jnp.result_type(float))


def as_priors(x: object, name: str = "priors", *, num_classes: int | None = None) -> jax.Array:
    """Probability vector(s) ``(..., K)``: non-negative, summing to one."""
    arr = as_array(x, name, min_ndim=1)
    check_finite(arr, name)
    if num_classes is not None and arr.shape[-1] != num_classes:
        raise InputError(f"`{name}` must have {num_classes} entries (one per class), got shape {tuple(arr.shape)}")
    if not is_tracer(arr):
        a = np.asarray(arr, dtype=np.float64)
        if np.any(a < 0):
            raise InputError(f"`{name}` must be non-negative, got {a.min()}")
        sums = a.sum(-1)
        if np.any(np.abs(sums - 1.0) > SUM_TOL):
            raise InputError(f"`{name}` must sum to 1, got sum(s) {np.unique(np.round(sums, 6))[:3]}")
    return jnp.asarray(arr, dtype=jnp.result_type(float))


def check_score_type(score_type: str) -> str:
    if score_type not in SCORE_TYPES:
        raise InputError(f"`score_type` must be one of {SCORE_TYPES}, got {score_type!r}")
    return score_type


@dataclass(frozen=True, eq=False)
class Scores:
    """Scores made canonical once (:func:`canonical_scores`): what every consumer takes instead of re-checking.

    ``values``: finite float scores in the log domain, ``(..., N, K)`` (``(..., N)`` for an LLR), probabilities
    logged; ``num_classes``: ``K`` (2 for an LLR); ``score_type``: what they were given as (the kernels branch on
    its kind, :data:`KIND_OF_SCORE_TYPE`; messages and records say it); ``exact_zeros``: for probabilities, where
    they were exactly 0 (a host mask of ``values``' shape, ``None`` when none was or the scores were traced), which
    ``values`` floor (:func:`as_scores`) and the proper scoring rules read as ``-inf`` (:func:`as_log_domain_scores`);
    ``given``: the concrete host array as given (``None`` when traced), for what depends on its digits beyond
    ``values``' float32: AUC and EER rank float64 LLRs centred before the cast (:func:`ranking_llr_values`), and
    systems of different dtypes stack as one array would (:func:`stack_scores`).
    """

    values: jax.Array
    num_classes: int
    score_type: str
    exact_zeros: np.ndarray | None = None
    given: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of ``values`` (what ``np.shape`` reads): consumers size their work by it alone."""
        return tuple(self.values.shape)


def canonical_scores(x: object, name: str = "scores", *, score_type: str) -> Scores:
    """``x`` checked once by :func:`as_scores` and kept as a :class:`Scores` value (a :class:`Scores` given is
    returned as it is, if it was made as ``score_type``)."""
    if isinstance(x, Scores):
        return _same_score_type(x, score_type)
    values = as_scores(x, name, score_type=score_type)
    given = None if is_tracer(x) else np.asarray(x)
    return Scores(values, 2 if score_type == "llr" else int(values.shape[-1]), score_type,
                  _exact_zeros(given) if score_type == "probabilities" else None, given)


def _exact_zeros(probabilities: np.ndarray | None) -> np.ndarray | None:
    """Where checked concrete probabilities are exactly 0 (``None`` if nowhere, or traced)."""
    if probabilities is None:
        return None
    zeros = probabilities == 0
    return zeros if zeros.any() else None


def stack_scores(systems: Sequence[Scores]) -> Scores:
    """The :class:`Scores` of systems scored on the same samples, stacked on a leading axis, with the values that
    checking the stacked arrays would give: ``values`` stacked where the given dtypes agree (every step of
    :func:`as_scores` acts on one row), else made again from the given arrays stacked in their common dtype (a
    float64 file promotes a float32 one, as ``np.stack`` does).  Nothing is checked again."""
    first = systems[0]
    for s in systems:
        _same_score_type(s, first.score_type)
    if len({s.shape for s in systems}) > 1:
        raise InputError("the systems in `scores` must have the same number of samples")
    givens = [s.given for s in systems if s.given is not None]
    if len(givens) < len(systems):  # traced: stacked as they are
        return Scores(jnp.stack([s.values for s in systems]), first.num_classes, first.score_type)
    given = np.stack(givens)
    if len({g.dtype for g in givens}) == 1:
        return Scores(jnp.stack([s.values for s in systems]), first.num_classes, first.score_type,
                      _stacked_zeros(systems), given)
    return Scores(_canonical_values(given, first.score_type), first.num_classes, first.score_type,
                  _stacked_zeros(systems), given)


def _stacked_zeros(systems: Sequence[Scores]) -> np.ndarray | None:
    if all(s.exact_zeros is None for s in systems):
        return None
    return np.stack([np.zeros(s.shape, bool) if s.exact_zeros is None else s.exact_zeros for s in systems])


def ranking_llr_values(scores: Scores) -> jax.Array:
    """The LLRs of ``scores`` as AUC and EER rank them: concrete float64 ones less their median, in float64, before
    the float32 cast (:func:`centred_llr`); otherwise ``values``."""
    if scores.given is None or scores.given.dtype != np.float64:
        return scores.values
    return to_device(centred_llr(scores.given, None), dtype=jnp.result_type(float))


def centred_llr(a: Any, neg_inf: Any) -> Any:
    """Concrete float64 LLRs less their median, in float64: the same order, and no common offset to cast.

    A common offset of ``1e4`` leaves float32 a resolution of ``1e-3``, which merges nearby LLRs into ties
    (AUC 0.746 for 0.769); AUC and EER depend only on the order, so removing it first changes nothing else.
    ``neg_inf`` marks entries that stand for ``-inf`` (left out of the median).
    """
    if not isinstance(a, np.ndarray) or a.dtype != np.float64:
        return a
    finite = a if neg_inf is None else a[~neg_inf]
    return a - np.median(finite) if finite.size else a


def _same_score_type(x: Scores, score_type: str) -> Scores:
    # Equal to the (valid) type the value was made as, ``score_type`` is valid: checked only when it differs.
    if score_type != x.score_type and x.score_type != check_score_type(score_type):
        raise InputError(f"`score_type` is {score_type!r}, but the scores were made canonical as {x.score_type!r}")
    return x


def looks_like_probabilities(arr: ArrayLike) -> bool:
    """Every row in ``[0, 1]`` and summing to 1 (to float32 rounding): probabilities, not log-domain scores."""
    a = np.asarray(arr)
    if a.ndim < 2 or a.shape[-1] < 2 or a.dtype.kind != "f" or a.min() < 0 or a.max() > 1:
        return False
    return bool(np.all(np.abs(a.astype(np.float64).sum(-1) - 1.0) < 1e-4))


def as_scores(x: object, name: str = "scores", *, score_type: str) -> jax.Array:
    """Scores ``(..., N, K)`` or, for ``llr``, ``(..., N)``; finite floats.

    Log-posteriors must normalize per row (``logsumexp == 0``); the error
    suggests ``score_type="logits"`` otherwise.  Rows in ``[0, 1]`` that sum
    to 1, given as logits or log-posteriors, are refused: they are
    probabilities, and read as log-domain scores they would give wrong
    posteriors without any sign.

    ``score_type="probabilities"`` takes rows in ``[0, 1]`` summing to 1 and
    returns their logarithm, so every caller works in the log domain (where
    ``"probabilities"`` then behaves as ``"log_posteriors"``).  A probability
    of exactly 0 becomes the log of the smallest positive normal number of
    its dtype (-87.3 for float32, -708.4 for float64): stored zeros are
    almost always a softmax that underflowed, the true value lies below that
    number, and a finite log keeps decisions, calibration and sweeps defined.
    The proper scoring rules keep the exact reading instead (a zero on the
    true class gives an infinite cross-entropy).

    A :class:`Scores` value (from :func:`canonical_scores`) was checked once
    already: its values are returned as they are.
    """
    if isinstance(x, Scores):  # checked once already (canonical_scores): taken as it is
        return _same_score_type(x, score_type).values
    check_score_type(score_type)
    if score_type == "probabilities":
        return _log_of_probabilities(x, name)
    arr = check_numbers(as_array(x, name, min_ndim=1 if score_type == "llr" else 2), name, finite=False)
    if arr.shape[-1] == 0 or (score_type != "llr" and arr.shape[-2] == 0):
        raise InputError(f"`{name}` is empty, got shape {tuple(arr.shape)}")
    if score_type != "llr" and arr.shape[-1] < 2:
        raise InputError(f"`{name}` must have at least 2 classes in its last axis, got shape {tuple(arr.shape)}")
    check_finite(arr, name)
    if score_type in ("log_posteriors", "logits") and not is_tracer(arr) and looks_like_probabilities(arr):
        # Read as logits, probabilities give wrong posteriors without any sign (softmax of p, not p).
        said = mentioning("the rows look like probabilities (in [0, 1], summing to 1), not log-domain scores: pass "
                          "{probabilities}", probabilities=("score_type", "probabilities"))
        raise InputError(
            f"`{name}` rows look like probabilities (in [0, 1], summing to 1), not log-domain scores: pass "
            "score_type='probabilities' (logits that happen to look like this can be shifted by a constant per "
            "row, which leaves their posteriors unchanged)", argument=name, **said)
    arr = _canonical_values(arr, score_type)
    if score_type == "log_posteriors" and not is_tracer(arr):
        a = np.asarray(arr, dtype=np.float64)
        norm = np.log(np.exp(a - a.max(-1, keepdims=True)).sum(-1)) + a.max(-1)
        if np.max(np.abs(norm)) > 1e-3:
            said = mentioning(f"{{name}} rows do not normalize as log-posteriors (max |logsumexp| = "
                              f"{np.max(np.abs(norm)):.3g}); if these are unnormalized logits, pass {{logits}}",
                              name=(name, None), logits=("score_type", "logits"))
            raise InputError(said["problem"], **said)
    return arr


def _log_of_probabilities(x, name: str):
    """``log`` of probability rows ``(..., N, K)``, zeros floored at the dtype's smallest normal (see as_scores)."""
    arr = as_array(x, name, min_ndim=2)
    if is_tracer(arr):
        return jnp.log(jnp.maximum(arr, jnp.finfo(arr.dtype).tiny))
    a = check_numbers(np.asarray(arr), name, finite=False)
    if a.shape[-1] < 2 or a.shape[-2] == 0:
        raise InputError(f"`{name}` must be (N, K) probabilities with N >= 1 and K >= 2, got shape {tuple(a.shape)}")
    check_finite(a, name)
    if a.min() < 0 or a.max() > 1:
        said = mentioning(f"{{name}} are probabilities ({{given}}) and must lie in [0, 1], got values from "
                          f"{a.min():.4g} to {a.max():.4g}; for log-domain scores pass {{posteriors}} or {{logits}}",
                          name=(name, None), given=("score_type", "probabilities"),
                          posteriors=("score_type", "log_posteriors"), logits=("score_type", "logits"))
        raise InputError(said["problem"], **said)
    sums = a.astype(np.float64).sum(-1)
    if np.max(np.abs(sums - 1.0)) > _PROBABILITY_SUM_TOL:
        worst = sums.reshape(-1)[np.argmax(np.abs(sums - 1.0))]
        raise InputError(f"`{name}` rows must sum to 1 (probabilities of the K classes), got a row summing to "
                         f"{worst:.6g}")
    return _canonical_values(a, "probabilities")


def _canonical_values(arr: Any, score_type: str) -> jax.Array:
    """The values of checked scores (:func:`as_scores`, which documents each step; traced ones only cast; nothing
    is checked): probabilities logged, float64 logits and log-likelihoods less their row maximum, then cast."""
    if is_tracer(arr):
        return to_device(arr, dtype=jnp.result_type(float))
    a = np.asarray(arr)
    if score_type == "probabilities":
        a = a.astype(np.float64 if a.dtype.itemsize > 4 or a.dtype.kind != "f" else np.float32)
        with np.errstate(divide="ignore"):
            log_p = np.log(np.maximum(a, np.finfo(a.dtype).tiny))
        return jnp.asarray(log_p, dtype=jnp.result_type(float))
    if score_type in ("logits", "log_likelihoods") and (
            a.dtype.kind in "iu" or (a.dtype.kind == "f" and a.dtype.itemsize > 4)):
        # Adding a constant to a row leaves its posteriors (and every log-odds) unchanged.
        # Removing the row maximum here, exactly in float64, keeps the float32 cast below
        # from rounding away the digits that matter (a common offset of 1e7 would
        # otherwise leave ~1 of absolute precision).
        a = a.astype(np.float64)
        return to_device(a - a.max(-1, keepdims=True), dtype=jnp.result_type(float))
    return to_device(arr, dtype=jnp.result_type(float))


def as_counts(counts: object, name: str = "counts", *, square: bool = False, nonzero: bool = False) -> jax.Array:
    """Confusion counts ``(..., K, D)``: non-negative and finite, integers or weighted (fractional) counts, as floats.

    Every sum over them is then a float sum that cannot wrap: host integers go through float64 (exact up to
    ``2**53``) before the device cast, since ``jnp.asarray`` of an int64 past ``2**31 - 1`` would wrap.
    ``nonzero``: every matrix must hold a sample.  ``square``: ``K == D`` (the metrics of a square table).
    Traced counts are not checked (the NaN contract of the kernels applies).
    """
    c = as_array(counts, name, min_ndim=2)
    if not is_tracer(c):
        if isinstance(c, np.ndarray) and c.dtype.kind in "iu":
            c = c.astype(np.float64)
        a = check_numbers(np.asarray(c), name)
        if np.any(a < 0):
            raise InputError(f"`{name}` must be non-negative")
        if a.shape[-1] == 0 or a.shape[-2] == 0:
            raise InputError(f"`{name}` is empty, got shape {a.shape}")
        if nonzero and np.any(a.sum((-2, -1)) == 0):
            raise InputError(f"`{name}` has a matrix with no samples")
    if square and c.shape[-1] != c.shape[-2]:
        raise InputError(f"`{name}` must be square (K, K) for this metric, got shape {tuple(c.shape)}")
    c = jnp.asarray(c)
    return c.astype(jnp.promote_types(c.dtype, jnp.result_type(float)))


def as_pos_label(pos_label: object, num_classes: int) -> int:
    """The positive class of a one-vs-rest metric: an integer index in ``[0, K)``."""
    if isinstance(pos_label, bool) or not isinstance(pos_label, (int, np.integer)) or not 0 <= pos_label < num_classes:
        raise InputError(f"`pos_label` must be a class index in [0, {num_classes}), got {pos_label!r}")
    return int(pos_label)


def check_bounds(low: ArrayLike, high: ArrayLike, what: str = "interval bounds") -> None:
    """``low <= high`` entry by entry (arrays of one shape), else :class:`InputError` naming the first entry that
    breaks it; ``what`` says whose bounds they are (``"the [uncertainty] intervals"``)."""
    lo, hi = np.broadcast_arrays(np.asarray(low), np.asarray(high))
    bad = lo > hi
    if np.any(bad):
        at = _first(bad)
        raise InputError(f"{what} must satisfy low <= high, but low > high{_at(at)}: {lo[at]} > {hi[at]}")


def check_inside(x: ArrayLike, low: ArrayLike, high: ArrayLike, name: str) -> None:
    """Every entry of ``x`` inside its ``[low, high]``, else :class:`InputError` naming ``name`` and the entry."""
    a, lo, hi = np.broadcast_arrays(np.asarray(x), np.asarray(low), np.asarray(high))
    bad = (a < lo) | (a > hi)
    if np.any(bad):
        at = _first(bad)
        raise InputError(f"{name} must lie inside [low, high]{_at(at)}: {a[at]} is outside [{lo[at]}, {hi[at]}]")


def _first(mask: np.ndarray) -> tuple[int, ...]:
    """The index of the first true entry of ``mask`` (``()`` for a scalar)."""
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))


def _at(index: tuple[int, ...]) -> str:
    """`` at entry i`` / `` at entry (i, j)`` for a message; empty for a scalar."""
    return "" if not index else f" at entry {index[0] if len(index) == 1 else index}"


def check_prior_intervals(low: ArrayLike, high: ArrayLike, what: str = "prior intervals") -> None:
    """Intervals ``[low_i, high_i]`` of class priors: within ``[0, 1]``, ordered, and holding a prior vector
    (some ``P`` with ``low <= P <= high`` sums to 1: ``sum(low) <= 1 <= sum(high)``)."""
    lo, hi = np.asarray(low, np.float64), np.asarray(high, np.float64)
    check_bounds(lo, hi, what)
    if np.any(lo < 0) or np.any(hi > 1):
        raise InputError(f"{what} must lie within [0, 1]")
    if lo.sum() > 1 + 1e-12 or hi.sum() < 1 - 1e-12:
        raise InputError(f"{what} leave no support: priors must sum to 1 but sum(low) = {lo.sum():g} and "
                         f"sum(high) = {hi.sum():g}")


def check_prior_acceptance(rate: float, minimum: float, tried: int, what: str = "prior intervals") -> None:
    """A rejection sampler of priors must accept at least ``minimum`` of its draws to finish in reasonable time."""
    if rate < minimum:
        raise InputError(f"{what} leave almost no support: the best proposal accepted {rate * tried:.0f} of {tried} "
                         f"draws (under {minimum:.1%}); widen the intervals")


def as_sample_weight(sample_weight: object, labels: jax.Array | np.ndarray, *,
                     batched: bool = False) -> jax.Array | None:
    """Validated float sample weights (``None`` stays ``None``), on the device.

    scikit-learn's ``sample_weight``: one finite, non-negative weight per
    sample, each sample's contribution multiplied by it (an integer weight
    ``k`` is the same as ``k`` copies of the sample, 0 the same as leaving it
    out).  Shape ``(N,)`` matching ``labels``; ``(..., N)`` with ``batched``.
    """
    if sample_weight is None:
        return None
    w = as_array(sample_weight, "sample_weight", min_ndim=1)
    if (w.ndim != 1 and not batched) or w.shape[-1] != labels.shape[-1]:
        said = mentioning(f"one weight per sample of {{labels}} ({labels.shape[-1]}), got shape {tuple(w.shape)}",
                          labels=("labels", None))
        raise InputError(f"`labels` and `sample_weight` must have the same number of samples: {said['problem']}",
                         argument="sample_weight", **said)
    if is_tracer(w):
        return jnp.asarray(w, dtype=jnp.result_type(float))
    a = check_numbers(np.asarray(w), "sample_weight", booleans=True)
    if np.any(a < 0):
        raise InputError(f"`sample_weight` must be non-negative, got {a.min()}")
    return to_device(a, jnp.result_type(float))


def as_per_sample_costs(costs: object, num_samples: int, num_classes: int | None, name: str = "costs") -> jax.Array:
    """A dense per-sample cost tensor: finite floats of shape ``(N, K, D)``, ``c[n, i, j]`` the cost of deciding
    ``j`` for sample ``n`` of true class ``i`` (:mod:`ecjax.scores.sample_costs`)."""
    c = check_numbers(as_array(costs, name, min_ndim=3), name, booleans=True)
    if c.ndim != 3 or c.shape[0] != num_samples or num_classes not in (None, c.shape[1]):
        raise InputError(f"`{name}` must be one cost matrix per sample, shape (N, K, D) = ({num_samples}, "
                         f"{num_classes or 'K'}, D), got shape {tuple(c.shape)}")
    return to_device(c, dtype=jnp.result_type(float))


def as_sample_cost_parts(base: object, amount: object, scale: object, *, num_samples: int | None = None,
                         num_classes: int | None = None) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(base (K, D), amount (N, M), scale (M, K, D))`` of costs ``c_n = base + sum_m amount[n, m] scale[m]``.

    ``amount`` may be ``(N,)`` (one amount per sample, ``M = 1``) and ``scale``
    ``(K, D)`` then.  Each part finite (amounts of any sign: a gain that grows
    with the amount is a negative cost).  ``num_samples`` / ``num_classes``,
    when given, are checked against ``N`` and ``K``.
    """
    b = as_matrix(base, "base", batched=False)
    a = check_numbers(as_array(amount, "amount", min_ndim=1), "amount", booleans=True)
    s = check_numbers(as_array(scale, "scale", min_ndim=2), "scale", booleans=True)
    given = f"`amount` {tuple(a.shape)} and `scale` {tuple(s.shape)}"
    a = a[:, None] if a.ndim == 1 else a
    s = s[None] if s.ndim == 2 else s
    if a.ndim != 2 or s.ndim != 3:
        raise InputError(f"`amount` must be (N,) or (N, M) and `scale` (K, D) or (M, K, D), got {given}")
    if s.shape[1:] != b.shape or a.shape[1] != s.shape[0]:
        raise InputError(f"`scale` must have shape (M, K, D) = ({a.shape[1]}, {b.shape[0]}, {b.shape[1]}) for "
                         f"`base` {tuple(b.shape)}, got {given}")
    if num_samples is not None and a.shape[0] != num_samples:
        raise InputError(f"`amount` must hold one value per sample of `labels` ({num_samples}), got "
                         f"{a.shape[0]}")
    if num_classes is not None and b.shape[0] != num_classes:
        raise InputError(f"`base` must have one row per class ({num_classes}), got shape {tuple(b.shape)}")
    dtype = jnp.result_type(float)
    return b, to_device(a, dtype=dtype), to_device(s, dtype=dtype)


def check_one_sample_set(label_files: Sequence[object], what: str) -> None:
    """``what`` (per-sample costs: a row per sample) belongs to one set of samples: one ``labels`` file for all
    systems, so that row ``n`` is the same sample for each."""
    if len({str(f) for f in label_files}) > 1:
        raise InputError(f"{what} gives a row per sample of one test set: give one `labels` file shared by the "
                         f"systems, got {len(set(map(str, label_files)))}")


def check_some_weight(sample_weight: ArrayLike | None, where: str = "") -> None:
    """Concrete weights must leave something to evaluate: not 0 for every sample.

    ``where`` names the part checked in the message (``" (system 1)"``,
    ``" of test set 0"``).  ``None`` and traced weights pass (under ``jit``
    the kernels return NaN instead: the NaN contract above).
    """
    if sample_weight is None or is_tracer(sample_weight):
        return
    if not np.sum(np.asarray(sample_weight, np.float64)) > 0:
        raise InputError(f"`sample_weight` is 0 for every sample{where}: there is nothing to evaluate")


def check_priors_cover(class_counts: ArrayLike, priors: ArrayLike | None, *, weighted: bool = False,
                       class_names: Any = None) -> None:
    """Deployment priors may not weigh a class without test samples: its rates would be unknown.

    ``class_counts`` ``(..., K)`` (every row is checked: a class absent for
    any system fails); ``priors`` ``(..., K)`` broadcasting with it.  With
    data priors (``priors=None``) an absent class simply has weight 0, so
    nothing is checked.  ``weighted``: the counts are weight totals.
    Concrete input only (traced input passes: the NaN contract).
    """
    if priors is None or any_traced(class_counts, priors):
        return
    n, p = np.asarray(class_counts), np.asarray(priors)
    missing = (n == 0) & (p > 0)
    if missing.any():
        cls = int(np.nonzero(missing)[-1][0])
        name = cls if class_names is None else repr(class_names[cls])
        raise InputError(f"class {name} has no test samples{' of non-zero `sample_weight`' if weighted else ''} but a "
                         "non-zero prior in `priors`: its rates are unknown. With data priors (priors=None) an "
                         "absent class simply has weight 0")


def _class_list(classes) -> str:
    return f"class {classes[0]}" if len(classes) == 1 else f"classes {', '.join(map(str, classes))}"


def check_classes_present(labels: ArrayLike, sample_weight: ArrayLike | None, num_classes: int, *, why: str,
                          classes: Any = None) -> None:
    """Concrete input: each class in ``classes`` (default: all ``num_classes``) has a sample of non-zero weight.

    The one check behind "a class with no test samples" everywhere: the
    message says whether the class has no sample in ``labels`` or only
    samples of weight 0, then ``why`` it matters.  ``labels`` may be batched
    ``(..., N)`` (every row is checked); ``sample_weight`` is ``(N,)`` or
    ``None``.  Traced input passes (the NaN contract).
    """
    if any_traced(labels, sample_weight):
        return
    y = np.asarray(labels)
    wanted = range(num_classes) if classes is None else [int(c) for c in classes]
    present = [c for c in wanted if np.all(np.any(y == c, axis=-1))]
    absent = [c for c in wanted if c not in present]
    if absent:
        said = mentioning(f"{{labels}} has no sample of {literal(_class_list(absent))}: {literal(why)}",
                          labels=("labels", None))
        raise InputError(said["problem"], **said)
    if sample_weight is None:
        return
    w = np.asarray(sample_weight, np.float64)
    zero = [c for c in wanted if np.any(np.sum(np.where(y == c, w, 0.0), axis=-1) <= 0)]
    if zero:
        raise InputError(f"`sample_weight` is 0 for every sample of {_class_list(zero)}: {why}")


def as_log_domain_scores(scores: object, score_type: str) -> tuple[jax.Array | np.ndarray | Scores,
                                                                              jax.Array | np.ndarray | None]:
    """Scores that may hold a zero probability: ``(array, where)`` with ``-inf`` replaced by a finite stand-in.

    ``-inf`` in log-domain scores (an exact zero posterior) is a legitimate
    value: it ranks below everything (ROC, PR, DET curves) and gives an
    infinite cross-entropy to its class (Ferrer 2022b, §4.1.2); NaN and ``+inf``
    are refused.  :func:`as_scores` then checks the finite stand-in (shape,
    normalization) and :func:`restore_neg_inf` puts ``-inf`` back.  For
    probabilities, ``where`` marks the exact zeros (which :func:`as_scores`
    floors to keep decisions finite) so that their logarithm is ``-inf``
    again.  ``where`` is ``None`` when there is nothing to put back (and for
    traced scores).  A :class:`Scores` value is returned as it is, with the zeros it keeps.
    """
    if isinstance(scores, Scores):  # checked once already: its values, and the zeros its probabilities had
        return _same_score_type(scores, score_type), scores.exact_zeros
    check_score_type(score_type)
    arr = as_array(scores, "scores", min_ndim=1 if score_type == "llr" else 2)
    if is_tracer(arr):
        return arr, None
    a = np.asarray(arr)
    if score_type == "probabilities":
        zeros = a == 0
        return a, zeros if zeros.any() else None
    if a.dtype.kind != "f":
        return a, None
    if np.any(np.isnan(a)):
        raise InputError("`scores` contains NaN; all entries must be numbers (-inf, a zero probability, is allowed)")
    if np.any(a == np.inf):
        raise InputError("`scores` contains +inf; log-domain scores must be < +inf (use a large finite value)")
    neg_inf = np.isneginf(a)
    if not neg_inf.any():
        return a, None
    if score_type != "llr" and np.any(np.all(neg_inf, axis=-1)):
        raise InputError("`scores` has a row that is -inf for every class: it is not a distribution")
    return np.where(neg_inf, np.finfo(np.float32).min / 4, a), neg_inf


def restore_neg_inf(s: _Arr, where: ArrayLike | None) -> _Arr | jax.Array:
    """``s`` with ``-inf`` at ``where`` (from :func:`as_log_domain_scores`); on the host, as eager device
    operations would compile a program for every new shape."""
    if where is None:
        return s
    a = np.asarray(s)
    return to_device(np.where(where, np.asarray(-np.inf, a.dtype), a))


def scores_and_log_priors(scores: object, priors: ArrayLike | None,
                          score_type: str) -> tuple[jax.Array, jax.Array]:
    """Validated scores and the log-priors that turn them into posteriors: ``(scores, log_priors)``.

    Likelihood-type scores (``llr``, ``log_likelihoods``) need ``priors``;
    posterior-type scores refuse them (they already hold the training priors)
    and get zeros, which the posterior kernel ignores.
    """
    scores = as_scores(scores, score_type=score_type)
    k = 2 if score_type == "llr" else scores.shape[-1]
    if score_type in LIKELIHOOD_TYPES:
        if priors is None:
            raise InputError(
                f"`priors` is required with score_type={score_type!r}: likelihoods become posteriors only given priors"
            )
        p = as_priors(priors, num_classes=k)
        with jax.numpy_dtype_promotion("standard"):
            log_p = jnp.log(p)
    else:
        if priors is not None:
            raise InputError(
                f"`priors` cannot be combined with score_type={score_type!r}: posteriors already contain "
                "the training priors. To shift them to deployment priors, also pass `training_priors` (the "
                "priors they were trained with)"
            )
        log_p = to_device(np.zeros(k), jnp.result_type(float))  # no program to compile, as jnp.zeros would
    return scores, log_p


def check_same_length(name_a: str, a: jax.Array | np.ndarray, name_b: str, b: jax.Array | np.ndarray, *,
                      axis_a: int = -1, axis_b: int = -1) -> None:
    if a.shape[axis_a] != b.shape[axis_b]:
        said = mentioning(f"{{a}} and {{b}} must have the same number of samples, got {a.shape[axis_a]} and "
                          f"{b.shape[axis_b]}", a=(name_a, None), b=(name_b, None))
        raise InputError(said["problem"], **said)


def check_batch_axes_broadcast(name_a: str, shape_a: tuple[int, ...], batch_a: tuple[int, ...], name_b: str,
                               shape_b: tuple[int, ...], batch_b: tuple[int, ...]) -> tuple[int, ...]:
    """The leading (batch) axes ``batch_a`` of ``name_a`` and ``batch_b`` of ``name_b`` broadcast: their shape."""
    try:
        return np.broadcast_shapes(tuple(batch_a), tuple(batch_b))
    except ValueError:
        raise InputError(f"batch axes of `{name_a}` {tuple(shape_a)} and `{name_b}` {tuple(shape_b)} do not "
                         "broadcast") from None


def check_instance(x: Any, cls: type[_T], name: str, public_name: str) -> _T:
    """``x`` if it is a ``cls`` (a settings object, a result type), else :class:`InputError` naming ``name`` and
    the class by its public path ``public_name``."""
    return check_type(x, cls, name, f"an {public_name}")


def check_choice(x: _T, name: str, choices: Collection[Any]) -> _T:
    """``x`` if it is one of ``choices``; an unhashable ``x`` (an array, a list) is none of them."""
    if not isinstance(x, Hashable) or x not in choices:
        raise InputError(f"`{name}` must be one of {tuple(choices)}, got {x!r}")
    return x


def check_precision(precision: Any) -> str:
    """``precision`` if it is ``"exact"``; ``"fast"`` (removed: see :mod:`ecjax.precision`) and others refused."""
    if isinstance(precision, str) and precision == "fast":
        raise InputError('`precision="fast"` was removed: near float32 ties no second product can reproduce the '
                         'exact product\'s decisions, and on a GPU it was slower; use precision="exact" (the default)')
    return check_choice(precision, "precision", ("exact",))


def _shape_form(form: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in form.strip("()").split(",") if t.strip())


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(np.shape(x))  # static: the shape of a tracer too


def check_shape(x: _T, name: str, *forms: str, sizes: dict[str, int] | None = None, why: str = "") -> _T:
    """``x`` has one of the shapes ``forms``, each written as in the docstrings: ``"(K, D)"``, ``"(M, N)"``,
    ``"(2, 2)"``.  A number is an exact size; a letter is any size, the same size wherever it repeats within a
    form, and the size ``sizes[letter]`` when given.  The message names the forms, ``sizes`` and ``why``."""
    shape = _shape(x)
    pinned = dict(sizes or {})
    for form in map(_shape_form, forms):
        if len(form) != len(shape):
            continue
        seen = dict(pinned)
        if all((int(t) == s) if t.isdigit() else (seen.setdefault(t, s) == s) for t, s in zip(form, shape)):
            return x
    fixed = f" with {', '.join(f'{k} = {v}' for k, v in pinned.items())}" if pinned else ""
    raise InputError(f"`{name}` must be {' or '.join(forms)}{fixed}{why}, got shape {shape}")


def check_exclusive(arguments: dict[str, object], *, required: bool = True) -> None:
    """At most one of ``arguments`` (name -> value) is not ``None``; exactly one when ``required``."""
    given = [k for k, v in arguments.items() if v is not None]
    names = [f"`{k}`" for k in arguments]
    if len(given) > 1 or (required and not given):
        listed = " and ".join(names) if len(names) == 2 else ", ".join(names)
        raise InputError(f"give exactly one of {listed}" if required else f"give {' or '.join(names)}, not both")


def check_table(table: object, name: str, known: Collection[str], *, required: Collection[str] = (),
                pairs: Collection[tuple[str, str]] = (), keys: str = "key(s)") -> dict:
    """``table`` (a TOML table / JSON object ``name``) has only the keys ``known``, every key of ``required``,
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


def check_binary(num_classes: int, what: str) -> None:
    """``what`` (a curve, a threshold, a criterion) is defined for binary scores only."""
    if num_classes != 2:
        problem = f"needs binary scores (K = 2), got {num_classes} classes"
        raise InputError(f"{what} {problem}", problem=problem)


def as_flag(x: object, name: str) -> bool:
    """``True`` or ``False`` (numpy booleans too); ``0``/``1``, strings and ``None`` are refused."""
    if not isinstance(x, (bool, np.bool_)):
        raise InputError(f"`{name}` must be True or False, got {x!r}")
    return bool(x)


def as_positive_priors(x: object, name: str = "priors", *, num_classes: int | None = None,
                       why: str = "") -> jax.Array:
    """Priors (:func:`as_priors`) with every class possible, ``> 0``: those that something divides by or takes
    the log of; ``why`` says what in the message.  Traced priors are not checked (the NaN contract).

    Whatever fails, :attr:`InputError.problem` says it the way a front end asks for the numbers: ``"2 positive
    numbers summing to 1, got [0.5, 0.6]"``."""
    def problem() -> str:
        values = x if is_tracer(x) else np.asarray(x).tolist()
        return f"{num_classes or 'K'} positive numbers summing to 1{why}, got {values}"

    try:
        p = as_priors(x, name, num_classes=num_classes)
    except InputError as err:
        raise InputError(str(err), argument=name, problem=problem()) from None
    if not is_tracer(p):
        a = np.asarray(p).reshape(-1, p.shape[-1])
        bad = np.any(a <= 0, axis=-1)
        if bad.any():
            raise InputError(f"`{name}` must be > 0 for every class{why}, got {a[np.argmax(bad)].tolist()}",
                             argument=name, problem=problem())
    return p


def check_posterior_type(score_type: str, name: str, why: str = "") -> str:
    """``score_type`` if it is a posterior type (:data:`POSTERIOR_TYPES`): ``name`` (training priors, the priors
    of a posterior) has no meaning for likelihood-type scores; ``why`` says what to do instead."""
    if score_type not in POSTERIOR_TYPES:
        said = mentioning(f"is for posterior-type scores ({', '.join(POSTERIOR_TYPES)}), got {{given}}{literal(why)}",
                          given=("score_type", score_type))
        raise InputError(f"`{name}` {said['problem']}", argument=name, **said)
    return score_type


def as_optional_str(x: object, name: str) -> str | None:
    """A string or ``None`` (a title, a label): anything else, bytes included, is refused."""
    if x is not None and not isinstance(x, str):
        raise InputError(f"`{name}` must be a string or None, got {x!r}")
    return x


def as_names(x: object, name: str) -> tuple[str, ...]:
    """A sequence of strings (class or system names) as a tuple; one string is not a sequence of names."""
    names = None if isinstance(x, (str, bytes)) or not hasattr(x, "__iter__") else tuple(x)  # type: ignore[arg-type]
    if names is None or not all(isinstance(n, str) for n in names):
        raise InputError(f"`{name}` must be a sequence of strings, got {x!r}")
    return names


def as_group_index(groups: ArrayLike | Sequence[Any], num_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """Cluster ids (:func:`as_group_ids`) as ``(ids, which)``: the distinct ids and each sample's index into them.

    Ids are numbers or strings (no NaN or inf); on the host.
    """
    g = as_group_ids(groups, num_samples)
    if g.dtype.kind not in "biufUS":
        raise InputError(f"`groups` must be integer or string ids, got dtype {g.dtype}")
    check_finite(g, "groups")
    return np.unique(g, return_inverse=True)


def as_range(lo: SupportsFloat | str, hi: SupportsFloat | str, name: str, *, minimum: float | None = None,
             maximum: float | None = None, exclusive: bool = False, why: str = "") -> tuple[float, float]:
    """The range ``(lo, hi)`` of ``name`` (an axis, a grid) as two finite floats with ``lo <= hi``, ``lo >= minimum``
    and ``hi <= maximum`` where given (``>`` and ``<`` when ``exclusive``); ``why`` explains the bounds."""
    try:
        lo_f, hi_f = float(lo), float(hi)
    except (TypeError, ValueError):
        raise InputError(f"`{name}` range must be two numbers, got ({lo!r}, {hi!r})", argument=name) from None
    if not (np.isfinite(lo_f) and np.isfinite(hi_f)):
        raise InputError(f"`{name}` range must be finite, got ({lo!r}, {hi!r})", argument=name)
    if hi_f < lo_f:
        raise InputError(f"`{name}` range must have lo <= hi, got ({lo_f}, {hi_f})", argument=name)
    above = minimum is None or (lo_f > minimum if exclusive else lo_f >= minimum)
    below = maximum is None or (hi_f < maximum if exclusive else hi_f <= maximum)
    if not (above and below):
        need = ([f"lo {'>' if exclusive else '>='} {minimum:g}"] if minimum is not None else []) + (
            [f"hi {'<' if exclusive else '<='} {maximum:g}"] if maximum is not None else [])
        raise InputError(f"`{name}` range must have {' and '.join(need)}{why}, got ({lo_f}, {hi_f})", argument=name)
    return lo_f, hi_f


def check_leading_axis(arrays: Sequence[Any], name: str) -> int:
    """The length of the leading axis that every array of ``arrays`` (the leaves of a swept pytree, a batch) shares:
    at least 1 (an empty batch, or no arrays at all, is refused)."""
    sizes = sorted({int(np.shape(a)[0]) for a in arrays})
    if not sizes or sizes[0] == 0:
        raise InputError(f"`{name}` is empty: its leading (batch or swept) axis has length 0")
    if len(sizes) > 1:
        raise InputError(f"all leaves of `{name}` must share the leading (batch or swept) axis, got lengths {sizes}")
    return sizes[0]


def check_callable(x: _T, name: str, what: str) -> _T:
    """``x`` if it is callable, else :class:`InputError` saying ``what`` it should be (``"a NumPyro model (a
    callable)"``, ``"a callable sample(key, n)"``)."""
    if not callable(x):
        raise InputError(f"`{name}` must be {what}, got {type(x).__name__}")
    return x


def check_class_vector(x: _Arr, name: str, *, num_classes: int | None = None) -> _Arr:
    """``x`` if it is one vector with an entry per class: ``(K,)`` with ``K = num_classes`` when given, else any
    ``K >= 2`` (priors, a Dirichlet's concentration, per-class bounds)."""
    shape = _shape(x)
    size_ok = len(shape) == 1 and (shape[0] == num_classes if num_classes is not None else shape[0] >= 2)
    if not size_ok:
        want = "K >= 2" if num_classes is None else str(num_classes)
        raise InputError(f"`{name}` must be one vector of {want} entries (one per class), got shape {shape}")
    return x


def as_broadcast(x: object, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """``x`` (a number or an array) as float64 broadcast to ``shape``; NaN is refused, ``+/-inf`` allowed (an
    unbounded side of a truncation, a scale)."""
    a = np.asarray(as_array(x, name), dtype=np.float64)
    if np.any(np.isnan(a)):
        raise InputError(f"`{name}` contains NaN")
    try:
        return np.broadcast_to(a, shape)
    except ValueError:
        raise InputError(f"`{name}` must be a scalar or broadcast to {shape}, got shape {a.shape}") from None


def check_type(x: _T, types: type | tuple[type, ...], name: str, what: str) -> _T:
    """``x`` if it is an instance of ``types``, else :class:`InputError` saying ``what`` it should be (``"a
    matplotlib Axes"``) and the type it is."""
    if not isinstance(x, types):
        raise InputError(f"`{name}` must be {what}, got {type(x).__name__}")
    return x


def check_axis_at_least(x: _T, name: str, minimum: int, what: str, *, axis: int = -1) -> _T:
    """``x`` if its ``axis`` holds at least ``minimum`` entries, else :class:`InputError` saying ``what`` they are
    (``"metrics (last axis)"``, ``"folds (last axis)"``) and the shape received; static, so checked under ``jit``."""
    shape = _shape(x)
    if not shape or shape[axis] < minimum:
        raise InputError(f"`{name}` needs at least {minimum} {what}, got shape {shape}")
    return x


def check_distinct_keys(mapping: Mapping[Any, Any], name: str) -> list[str]:
    """The keys of a mapping of systems, as names (``str``): two keys with the same name (``1`` and ``"1"``) refused."""
    keys = [str(k) for k in mapping]
    if len(set(keys)) != len(keys):
        same = sorted({k for k in keys if keys.count(k) > 1})
        raise InputError(f"the keys of `{name}` must name each system once, but {same} name two: "
                         f"{[k for k in mapping]}")
    return keys


def system_names(systems: Iterable[Any] | None, names: Iterable[str] | None, num_systems: int,
                 argument: str = "systems") -> tuple:
    """Names of ``num_systems`` systems: ``systems`` given by the user (checked; the error calls them
    ``argument``), else ``names`` taken from the inputs (a mapping's keys), else ``"system 0"``, ``"system 1"``,
    ..."""
    if systems is not None:
        systems = tuple(str(s) for s in systems)
        if len(systems) != num_systems:
            raise InputError(f"`{argument}` names {len(systems)} systems, but there are {num_systems}")
        if len(set(systems)) != num_systems or not all(s.strip() for s in systems):  # results are keyed by name
            raise InputError(f"`{argument}` must give each system its own non-empty name, got {list(systems)}")
        return systems
    return tuple(names) if names is not None else tuple(f"system {m}" for m in range(num_systems))
