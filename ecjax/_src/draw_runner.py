"""The one chunked runner behind every long computation: blocks, chunks, one progress protocol, a measured duration.

:func:`~ecjax.prob.compare`'s posterior draws, :func:`~ecjax.prob.bootstrap_metric`'s bootstrap draws,
:func:`~ecjax.prob.compare_results`' draws of the mean results and the sweeps' points
(:func:`ecjax.sweep.engine.map_reduce`) are all made the same way:

* the work is cut into **blocks** of ``plan.block`` draws (or points): one jitted call each, the same shape every
  time, so one program compiles; block ``b`` holds draws ``b * block`` to ``(b + 1) * block - 1``, and whatever
  randomness it needs comes from its index, so no number depends on how blocks are grouped;
* the blocks are grouped into **chunks** of ``plan.blocks_per_chunk``: :func:`run_blocks` dispatches the blocks of
  a chunk one after the other (asynchronously: on an accelerator they queue up), then copies their per-draw outputs
  to the host, adds their per-block sums in float64 in block order (the same sum for every chunk size) and reports
  progress, so device memory holds one chunk's outputs whatever the number of draws;
* **progress** is one protocol (:class:`Progress`): ``progress=True`` (a ``tqdm`` bar) or a callable ``total ->
  reporter`` called with the number of chunks, whose reporter has ``update(n)`` (``n`` chunks done) and
  ``close()``, and may have ``time_left(seconds)`` and ``draws_done(done, draws)``; :class:`ProgressLines` is such
  a reporter that writes plain lines (a log file, a batch job), not only for terminals;
* the **duration** is measured on the machine: block 0 compiles, block 1 runs as every later one does, so
  ``time_left`` gets ``(num_blocks - 2)`` times the measured time of block 1 (:func:`block_seconds_left`).

Inside one block, :func:`padded_map` maps a function over batches of the block's draws with :func:`jax.lax.map`
(the last batch padded with copies of the first row), so a block's intermediates stay bounded too.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, TextIO

import numpy as np

import jax
import jax.numpy as jnp


class DrawPlan(NamedTuple):
    """How ``num_draws`` draws (or points) are made: ``num_chunks`` chunks of ``blocks_per_chunk`` blocks.

    Block ``b`` holds draws ``b * block`` to ``(b + 1) * block - 1``; the
    draws past ``num_draws`` in the last block are computed and dropped.
    The last chunk may hold fewer blocks.
    """

    num_draws: int
    block: int
    blocks_per_chunk: int
    num_chunks: int

    @property
    def num_blocks(self) -> int:
        return -(-self.num_draws // self.block)

    @property
    def chunk(self) -> int:
        return self.block * self.blocks_per_chunk


def plan_blocks(num_draws: int, block: int, blocks_per_chunk: int = 1) -> DrawPlan:
    """The :class:`DrawPlan` of ``num_draws`` draws in blocks of ``block``, ``blocks_per_chunk`` blocks a chunk
    (both at least 1; the chunk holds at most all the blocks)."""
    num_blocks = -(-num_draws // block)
    per_chunk = max(1, min(num_blocks, blocks_per_chunk))
    return DrawPlan(num_draws, block, per_chunk, -(-num_blocks // per_chunk))


def block_seconds_left(block_seconds: float, plan: DrawPlan) -> float:
    """The duration of the draws after the first two blocks: ``(num_blocks - 2) * block_seconds``.

    ``block_seconds``: the measured time of the second block (the first one
    compiles the programs every block runs; the last one, shorter or not,
    is computed whole).  Measured on the machine itself, so it holds on any
    backend, unlike a duration from constant rates.
    """
    return float(max(0, plan.num_blocks - 2) * block_seconds)


# ------------------------------------------------------------------------------------------- the progress protocol

class Progress(Protocol):
    """What a ``progress=`` factory returns (called with the number of chunks of the run).

    Required: ``update(n)``, ``n`` more chunks done, and ``close()``, the run
    is over (also when it fails).  Optional, called when the reporter has
    them (:class:`Reporter` looks once): ``time_left(seconds)``, the measured
    duration of the rest of the run (after its second block), and
    ``draws_done(done, draws)``, after every chunk the number of draws (or
    points) done and the draws so far (``(done, ...)``, the output the caller
    shows, e.g. :func:`~ecjax.prob.compare`'s yields; ``None`` where it keeps
    none).  A ``tqdm`` bar is one.
    """

    def update(self, n: int) -> None: ...

    def close(self) -> None: ...


class Reporter:
    """A :class:`Progress` with every optional method: the runner calls this, never the user's reporter directly.

    The optional methods the user's reporter lacks do nothing: they are
    looked up once, here.
    """

    def __init__(self, reporter: Progress):
        self.reporter = reporter
        self._time_left: Callable[[float], Any] | None = getattr(reporter, "time_left", None)
        self._draws_done: Callable[[int, Any], Any] | None = getattr(reporter, "draws_done", None)

    def update(self, n: int) -> None:
        self.reporter.update(n)

    def time_left(self, seconds: float) -> None:
        if self._time_left is not None:
            self._time_left(seconds)

    def draws_done(self, done: int, draws: Any) -> None:
        if self._draws_done is not None:
            self._draws_done(done, draws)

    def close(self) -> None:
        self.reporter.close()


ProgressOption = bool | Callable[[int], Any]


def reporter(progress: ProgressOption, total: int) -> Reporter | None:
    """The :class:`Reporter` of a ``progress=`` option for a run of ``total`` chunks (``None``: no progress).

    ``True``: a ``tqdm`` bar over the chunks (a warning and no bar where
    ``tqdm`` is not installed); a callable: ``progress(total)``.
    """
    if not progress:
        return None
    if callable(progress):
        return Reporter(progress(total))
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is optional
        import warnings

        warnings.warn("progress=True needs tqdm (pip install tqdm); continuing without a progress bar", stacklevel=3)
        return None
    return Reporter(tqdm(total=total, unit="chunk"))


class ProgressLines:
    """A ``progress=`` reporter for scripts, logs and batch jobs: a plain line on ``stream`` every ``every`` seconds.

    ``progress=ProgressLines()`` writes to standard error, at most once every
    ``every`` seconds (5 by default), lines such as ``bootstrap_metric: 3,000
    of 20,000 draws, 12 s, about 40 s left`` (the time left measured on the
    machine, :func:`block_seconds_left`), and a last line with the duration
    if the run lasted ``every`` seconds or more.  Nothing is rewritten in
    place: every line stays readable in a file.  ``clock``: seconds (for
    tests; :func:`time.monotonic` by default).
    """

    def __init__(self, what: str = "ecjax", *, every: float = 5.0, stream: TextIO | None = None,
                 clock: Callable[[], float] | None = None):
        self.what, self.every, self.stream = what, float(every), stream
        self.clock = time.monotonic if clock is None else clock

    def __call__(self, total: int) -> ProgressLines:
        self.total, self.chunks = total, 0
        self.start = self.last = self.clock()
        self.done: int | None = None
        self.left: tuple[float, float] | None = None
        return self

    def _say(self, text: str) -> None:
        stream = sys.stderr if self.stream is None else self.stream
        stream.write(f"{self.what}: {text}\n")
        stream.flush()

    def _line(self, now: float) -> str:
        what = (f"{self.chunks} of {self.total} chunks" if self.done is None else f"{self.done:,} draws, "
                f"chunk {self.chunks} of {self.total}")
        left = "" if self.left is None else f", about {max(0.0, self.left[0] - (now - self.left[1])):.0f} s left"
        return f"{what}, {now - self.start:.0f} s{left}"

    def time_left(self, seconds: float) -> None:
        self.left = (float(seconds), self.clock())

    def draws_done(self, done: int, draws: Any) -> None:
        self.done = int(done)

    def update(self, n: int) -> None:
        self.chunks += n
        now = self.clock()
        if now - self.last >= self.every:
            self.last = now
            self._say(self._line(now))

    def close(self) -> None:
        elapsed = self.clock() - self.start
        if elapsed >= self.every:
            done = f"{self.done:,} draws" if self.done is not None else f"{self.chunks} chunks"
            self._say(f"done, {done} in {elapsed:.0f} s")


# ------------------------------------------------------------------------------------------------------ the runner

class Block(NamedTuple):
    """What one block returns to :func:`run_blocks`.

    ``draws``: per-draw outputs, a pytree whose leaves have the block's
    draws on their leading axis (rows past ``num_draws`` are dropped), or
    ``None``; ``sums``: per-block totals, added on the host in float64 in
    block order, or ``None``; ``state``: anything else the block computed
    on the device (an accumulator), waited for when the block is timed.
    """

    draws: Any = None
    sums: Any = None
    state: Any = None


class BlockResults(NamedTuple):
    """What :func:`run_blocks` returns: the ``(num_draws, ...)`` host draws (or ``None``) and the float64 sums."""

    draws: Any
    sums: Any


def to_host(x: jax.Array) -> np.ndarray:
    """``x`` as a numpy array, gathered from every process when the computation spans several."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(x)


def run_blocks(block: Callable[[int], Block], plan: DrawPlan, *, progress: ProgressOption = False,
               shown: Callable[[Any], Any] | None = None) -> BlockResults:
    """The host loop: ``block(b)`` for every block, in chunks; per-draw outputs copied to the host, sums added.

    Args:
      block: ``b -> Block``, block ``b``'s outputs (a jitted call: it
        returns at once and the device works on).
      plan: the blocks and chunks (:class:`DrawPlan`).
      progress: the ``progress=`` option (:func:`reporter`): a run of
        ``plan.num_chunks`` chunks; ``time_left`` after block 1 when there
        are more than two blocks; after each chunk ``draws_done`` (when
        there are draws to show), then ``update(1)``.
      shown: host draws so far ``->`` what ``draws_done`` gets (default:
        the host draws themselves; ``None``: nothing to show, no call).

    The blocks of a chunk are dispatched one after the other and their
    outputs copied when the chunk is done, so the device holds one chunk's
    outputs.  A reported run waits for blocks 0 and 1 to time block 1.
    """
    bar = reporter(progress, plan.num_chunks)
    timed = bar is not None and plan.num_blocks > 2
    leaves: list[np.ndarray] | None = None
    treedef = None
    sums = None
    try:
        for c in range(plan.num_chunks):
            pending = []
            for b in range(c * plan.blocks_per_chunk, min((c + 1) * plan.blocks_per_chunk, plan.num_blocks)):
                started = time.perf_counter()
                pending.append((b, block(b)))
                if timed and b < 2:
                    # Block 0 compiles; block 1 runs as every later one does (the same programs and shapes): from
                    # its dispatch to its end, not counting what the host did with block 0's outputs.
                    jax.block_until_ready(pending[-1][1])
                    if b == 1 and bar is not None:
                        bar.time_left(block_seconds_left(time.perf_counter() - started, plan))
            for b, out in pending:
                start = b * plan.block
                stop = min(start + plan.block, plan.num_draws)
                if out.draws is not None:
                    flat, treedef = jax.tree_util.tree_flatten(out.draws)
                    if leaves is None:
                        leaves = [np.empty((plan.num_draws,) + x.shape[1:], x.dtype) for x in flat]
                    for h, x in zip(leaves, flat):
                        h[start:stop] = to_host(x)[: stop - start]
                if out.sums is not None:
                    # Block by block in a fixed order, in float64: the same sum for every chunk size.
                    part = jax.tree_util.tree_map(lambda x: to_host(x).astype(np.float64), out.sums)
                    sums = part if sums is None else jax.tree_util.tree_map(np.add, sums, part)
            if bar is not None:
                done = min((c + 1) * plan.chunk, plan.num_draws)
                if leaves is not None:
                    host = jax.tree_util.tree_unflatten(treedef, [h[:done] for h in leaves])
                    show = host if shown is None else shown(host)
                    if show is not None:
                        bar.draws_done(done, show)
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    draws = None if leaves is None else jax.tree_util.tree_unflatten(treedef, leaves)
    return BlockResults(draws, sums)


# ----------------------------------------------------------------------------------------- inside one block

def padded_map(fn: Callable[[Any], Any], xs: Any, batch: int) -> Any:
    """``fn`` over the leading axis of the pytree ``xs``, ``batch`` rows at a time (:func:`jax.lax.map`).

    ``S`` rows are padded with copies of row 0 to a multiple of ``batch``
    (a copy of real data: no NaN or division by zero in the padding),
    mapped in ``ceil(S / batch)`` batches and cut back to ``S``.  ``fn``
    takes and returns batches (leading axis ``batch``); each row's result
    must depend on its row only, so ``batch`` bounds memory and changes no
    number beyond float rounding.  Traceable (for use inside ``jax.jit``).
    """
    leaves = jax.tree_util.tree_leaves(xs)
    s = leaves[0].shape[0]
    pad = (-s) % batch

    def padded(x):
        x = jnp.concatenate([x, jnp.broadcast_to(x[:1], (pad,) + x.shape[1:])]) if pad else x
        return x.reshape((-1, batch) + x.shape[1:])

    out = jax.lax.map(fn, jax.tree_util.tree_map(padded, xs))
    return jax.tree_util.tree_map(lambda o: o.reshape((-1,) + o.shape[2:])[:s], out)

