"""Progress on stderr for a person watching: compare's draws and measured duration, a sweep's chunks, and the
seconds so far of a long library call."""

from __future__ import annotations

import math
import sys

import numpy as np
from jax.typing import ArrayLike

from ecjax._src.cli.output import output_format


LONG_RUN_SECONDS = 60.0


PROGRESS_SECONDS = 2.0  # shorter runs answer before a progress line would help


class RunClock:
    """``compare``'s reporter in the command line: the measured duration, and progress lines when asked.

    ``time_left(seconds)`` (the library's measured estimate, after its second block of draws): past
    :data:`LONG_RUN_SECONDS`, one line on ``stream`` says how long and how to make the run shorter.  With
    ``every`` (``--progress``), a plain line every ``every`` seconds or more (draws done, seconds so far, the
    estimate of what is left): lines a log file or a batch job keeps, not only a terminal.  ``inner``: the
    terminal's :class:`DrawProgress` (or ``False``), called as before.
    """

    def __init__(self, inner, stream, *, num_draws, advice, every=None, clock=None):
        import time

        self.inner, self.stream, self.num_draws, self.advice, self.every = inner, stream, num_draws, advice, every
        self.clock = time.monotonic if clock is None else clock
        self.left, self.warned = None, False

    def __call__(self, total):
        self.bar = self.inner(total) if self.inner else None
        self.start = self.last = self.clock()
        self.shown_at = -math.inf
        return self

    def _say(self, text):
        self.stream.write(f"ecjax compare: {text}\n")
        self.stream.flush()

    def time_left(self, seconds: float) -> None:
        self.left, self.left_at = seconds, self.clock()
        if seconds > LONG_RUN_SECONDS and not self.warned:  # on stderr, so --json output stays clean
            self.warned = True
            self._say(f"this run may take about {max(1, round(seconds / 60))} min more ({self.num_draws:,} draws; "
                      f"measured on this machine); for a shorter one use {self.advice}")

    def update(self, n: int) -> None:
        if self.bar:
            self.bar.update(n)

    def draws_done(self, done: int, yields) -> None:
        now = self.clock()
        if self.bar and hasattr(self.bar, "draws_done") and (self.every is None or now - self.shown_at >= 1.0):
            # With --progress the chunks are single blocks: the terminal's P(best) over all draws so far is
            # recomputed at most once a second, not after every block (that would be quadratic in the draws).
            self.shown_at = now
            self.bar.draws_done(done, yields)
        if self.every is not None and now - self.last >= self.every:
            self.last = now
            left = "" if self.left is None else f", about {max(0.0, self.left - (now - self.left_at)):.0f} s left"
            self._say(f"{done:,} of {self.num_draws:,} draws, {now - self.start:.0f} s{left}")

    def close(self) -> None:
        if self.bar:
            self.bar.close()


class ProgressLine:
    """One line of progress on ``stream``, rewritten in place (``show``) and ended by ``close`` if it was shown."""

    def __init__(self, stream):
        self.stream, self.shown = stream, False

    def show(self, text):
        self.stream.write(f"\r  {text}   ")
        self.stream.flush()
        self.shown = True

    def close(self):
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


class DrawProgress(ProgressLine):
    """Progress of ``compare`` on stderr: draws done and the current leader's P(best) with its Monte Carlo error.

    Called with the number of chunks (``compare``'s ``progress=`` factory convention); rewrites one line.
    """

    def __init__(self, names, stream):
        super().__init__(stream)
        self.names = list(names)

    def __call__(self, total):
        return self

    def update(self, n: int) -> None:
        pass

    def draws_done(self, done: int, yields: ArrayLike) -> None:
        from ecjax._src.prob.ranking import batch_means_error, with_error

        yields = np.asarray(yields)
        leader = int(np.argmax(yields.mean(0)))
        is_best = np.argmax(yields, 1) == leader
        p = with_error(float(is_best.mean()), float(batch_means_error(is_best)), 3)
        self.show(f"{done:,} draws: P(best) {self.names[leader]} {p}")


class ChunkProgress(ProgressLine):
    """Progress of a sweep on stderr: chunks done and seconds so far, once the run has lasted ``after`` seconds.

    A sweep's duration is not estimated beforehand, so the line waits: a run that answers within ``after``
    seconds prints nothing.  Called with the number of chunks (the sweeps' ``progress=`` factory convention).
    """

    def __init__(self, what, stream, *, after=PROGRESS_SECONDS, clock=None):
        import time

        super().__init__(stream)
        self.what, self.after = what, after
        self.clock = time.monotonic if clock is None else clock

    def __call__(self, total):
        self.total, self.done, self.start = total, 0, self.clock()
        return self

    def update(self, n: int) -> None:
        self.done += n
        elapsed = self.clock() - self.start
        if elapsed >= self.after:
            self.show(f"{self.what}: {self.done} of {self.total} chunks, {elapsed:.0f} s")


class Heartbeat(ProgressLine):
    """Seconds so far of one long library call that has no progress hook (a calibrator's fit, its folds).

    A context manager: once the call has lasted ``after`` seconds, a background thread rewrites
    ``what, t s`` every ``every`` seconds until the call returns.  A call that answers sooner prints nothing.
    """

    def __init__(self, what, stream, *, after=PROGRESS_SECONDS, every=1.0):
        import threading

        super().__init__(stream)
        self.what, self.after, self.every = what, after, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self):
        import time

        start = time.monotonic()
        if self._stop.wait(self.after):
            return
        while True:
            self.show(f"{self.what}, {time.monotonic() - start:.0f} s")
            if self._stop.wait(self.every):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.close()
        return False


def _watching(args):
    """A person watches stderr: it is a terminal, the output is the text table (not --json, --format json, csv or
    markdown), and --quiet was not given."""
    return output_format(args) == "table" and not getattr(args, "quiet", False) and stderr_is_terminal()


def stderr_is_terminal():
    return sys.stderr.isatty()


def sweep_progress(args):
    """``--progress`` lines (:class:`ecjax.prob.ProgressLines`); else a :class:`ChunkProgress` for a person
    watching (:func:`_watching`); else ``False``."""
    lines = progress_lines(args, "ecjax sweep")
    if lines is not None:
        return lines
    return ChunkProgress("sweep", sys.stderr) if _watching(args) else False


def progress_lines(args, what):
    """``--progress [SECONDS]`` as a reporter of plain lines on stderr (``what``: their prefix), or None."""
    if getattr(args, "progress", None) is None:
        return None
    from ecjax._src.draw_runner import ProgressLines  # not ecjax.prob: the sweep's path imports no NumPyro

    return ProgressLines(what, every=args.progress)


def heartbeat(args, what):
    """A :class:`Heartbeat` for a person watching (:func:`_watching`); else a context that does nothing."""
    import contextlib

    return Heartbeat(what, sys.stderr, after=PROGRESS_SECONDS) if _watching(args) else contextlib.nullcontext()


def compare_progress(args, names, seconds):
    """A :class:`DrawProgress` when a person watches (:func:`_watching`) a run that takes a while (the estimate
    exceeds a couple of seconds); else ``False``."""
    if seconds < PROGRESS_SECONDS or not _watching(args):
        return False
    return DrawProgress(names, sys.stderr)
