"""The ``ecjax`` command.

Exit codes: 0 success; 2 usage or input error (one line on stderr naming the
file or option and the problem, no traceback), including an output folder
that is read-only, full or cannot hold the file name, and a standard output
that cannot be written (``> /dev/full``); 130 interrupted (Ctrl-C), 143
terminated (SIGTERM), each with one line; 141 (128 + SIGPIPE, as a shell
reports ``yes | head``), quietly, when the reader of standard output has gone
(``ecjax ... --json | head``); 1 a calibrator fit that failed (not converged,
or non-finite outputs: ``calibrate`` says why and writes nothing) or an internal
error.

Outputs: everything is validated and computed first, then every file is
written, all or none (see :func:`ecjax.io.write_files_atomic`); existing
files are never overwritten without ``--force``, and if one write fails
(a full disk, a file-size limit) the folder is left as it was, the files
of an earlier run included.  JSON is strict (RFC 8259): an
infinite number is written as the string ``"inf"`` or ``"-inf"`` and NaN as
``null``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from ecjax._src.cli.calibrate import cmd_calibrate
from ecjax._src.cli.compare import cmd_compare
from ecjax._src.cli.compare_folds import cmd_compare_folds
from ecjax._src.cli.files import Run
from ecjax._src.cli.metrics import cmd_metrics
from ecjax._src.cli.output import EXIT_CLOSED_PIPE, StdoutFailed, flush_stdout, stdout_failed
from ecjax._src.cli.parser import build_parser
from ecjax._src.cli.rules import OPTION_RULES, check_option_rules, said
from ecjax._src.cli.sweep import cmd_sweep
from ecjax._src.inputs import InputError

__all__ = ["COMMANDS", "EXIT_CLOSED_PIPE", "OPTION_RULES", "build_parser", "check_option_rules",
           "compilation_cache_dir", "main"]


def cmd_demo(args: argparse.Namespace, run: Run) -> int:
    """``ecjax demo``: the main job on data the package carries or generates."""
    from ecjax._src import demo

    demo.run(seed=args.seed)
    return 0


# Each command takes the parsed options and the run's context (its input limit and queued outputs): main() makes
# one Run per call, so nothing is kept between calls.
COMMANDS = {"demo": cmd_demo, "metrics": cmd_metrics, "calibrate": cmd_calibrate, "compare": cmd_compare,
            "compare-folds": cmd_compare_folds, "sweep": cmd_sweep}


class _Terminated(BaseException):
    """SIGTERM, raised as an exception so that temporary files are removed on the way out."""


def _on_sigterm(signum, frame):
    raise _Terminated()


# The command line keeps JAX's compiled programs between runs, so a second run of a similar command skips most of
# its compilation. Off with ECJAX_NO_COMPILATION_CACHE=1; elsewhere with ECJAX_COMPILATION_CACHE_DIR; a cache dir
# the user gave JAX (JAX_COMPILATION_CACHE_DIR) wins. Bounded and file-locked, so concurrent runs share it safely.
# The bound is small on purpose: with a bound, each write of JAX's cache scans every entry of the folder under the
# lock (about 23 us an entry here: 0.145 s at 6,400 entries), and the command line keeps every program. `ecjax
# demo` writes 65 entries, 280 KB: under the former 1 GiB a folder grew for ever (10^4 entries: a cold demo would
# scan for about 15 s), under 4 MiB it holds the programs of a dozen or so commands, least recently used first out,
# and a write scans at most about 1,000 entries (~0.02 s). Sized on a CPU; an accelerator's programs carry their
# device code (larger entries, not measured here), so it gets 16 times the bytes for about as many entries, and no
# program of its own is refused as larger than the whole cache.
COMPILATION_CACHE_BYTES = 2**22
_ACCELERATOR_CACHE_BYTES = 2**26


def compilation_cache_bytes(backend: str | None = None) -> int:
    """The bound of the command line's compilation cache on ``backend`` (default: this one)."""
    from ecjax._src.backends import on_accelerator

    return _ACCELERATOR_CACHE_BYTES if on_accelerator(backend) else COMPILATION_CACHE_BYTES


def compilation_cache_dir() -> str | None:
    """The folder of the command line's compilation cache, or ``None`` when it is switched off."""
    if os.environ.get("ECJAX_NO_COMPILATION_CACHE", "").strip() not in ("", "0"):
        return None
    explicit = os.environ.get("ECJAX_COMPILATION_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ecjax", "jax-compilation-cache")


def _use_compilation_cache():
    path = compilation_cache_dir()
    if path is None:
        return
    import jax

    if jax.config.jax_compilation_cache_dir:
        return  # the user's own JAX setting
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return  # no writable cache folder: run without one
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_compilation_cache_max_size", compilation_cache_bytes())  # LRU eviction, file-locked
    # Every program: a warm run otherwise still spends ~2.5 s compiling dozens of small ones (measured).
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ecjax`` with the arguments ``argv`` (default: the process's); the exit code (see the module's)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (one line, exit 2) and --help (exit 0)
        return exc.code if isinstance(exc.code, int) else 2
    # What this run carries from step to step: its input limit, its --force and its queued outputs.
    run = Run(max_bytes=getattr(args, "max_input_mb", 1024) * 2**20, force=getattr(args, "force", False))
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: leave signals alone
        previous = None
    try:
        _use_compilation_cache()
        check_option_rules(args)
        code = COMMANDS[args.command](args, run)
        flush_stdout()  # what print() left in the buffer: a full device fails here, not at exit
        return code
    except StdoutFailed as failed:
        return stdout_failed(args.command, failed.error)
    except BrokenPipeError as err:  # printed elsewhere (the demo) into a closed pipe
        return stdout_failed(args.command, err)
    except InputError as err:
        print(f"ecjax {args.command}: error: {' '.join(said(err).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"ecjax {args.command}: interrupted", file=sys.stderr)
        return 130
    except _Terminated:
        print(f"ecjax {args.command}: terminated", file=sys.stderr)
        return 143
    except Exception as err:  # noqa: BLE001 - the last line of defence
        if os.environ.get("ECJAX_DEBUG"):
            raise
        msg = " ".join(f"{type(err).__name__}: {err}".split())
        print(f"ecjax {args.command}: internal error: {msg} (set ECJAX_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1
    finally:
        run.pending.clear()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
