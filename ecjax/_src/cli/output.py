"""What a command prints: its record as strict JSON, its text table, or its main table as CSV or markdown; and
the exit code of a standard output that cannot be written."""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np

from ecjax._src.cli.files import Run

JSON_SCHEMA_VERSION = 1
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader has gone (`yes | head`)


def json_safe(x):
    """Strict JSON: +-inf as the strings "inf" / "-inf", NaN as null (documented in the README's schema)."""
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, (float, np.floating)):
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def dumps(record):
    return json.dumps(json_safe(record), indent=2, allow_nan=False)


class StdoutFailed(Exception):
    """Standard output could not be written (its reader has gone, its device is full): the user's setup, not a
    bug in ecjax."""

    def __init__(self, error: OSError):
        super().__init__(str(error))
        self.error = error


def say(text=""):
    """``text`` on standard output, flushed at once, so that a failure to write it is seen (and said) here."""
    try:
        print(text, flush=True)
    except OSError as err:
        raise StdoutFailed(err) from err


def flush_stdout():
    try:
        sys.stdout.flush()
    except OSError as err:
        raise StdoutFailed(err) from err


def stdout_failed(command, error):
    """The exit code of a run whose standard output failed: 141 and nothing said when its reader has gone (a
    closed pipe, as a Unix tool stopped by SIGPIPE), else 2 with the reason."""
    try:  # the rest of the output goes nowhere, so that Python's own flush at exit fails no more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor (captured output)
        pass
    if isinstance(error, BrokenPipeError):
        return EXIT_CLOSED_PIPE
    print(f"ecjax {command}: error: cannot write to standard output: {error.strerror or error}", file=sys.stderr)
    return 2


def output_format(args):
    """The format of standard output (:mod:`~ecjax._src.formats`): --format, or json for --json, else the text table."""
    return "json" if args.json else getattr(args, "format", None) or "table"


def emit(args, run: Run, record, table_text, out_dir):
    """Write the queued files, then print the ``record`` in the --format asked: the text ``table_text`` (and the
    files written), the JSON record, or its main table as CSV or markdown (:mod:`~ecjax._src.formats`)."""
    if out_dir is not None:
        record.setdefault("files", []).append(str(out_dir / f"{args.command}.json"))
        run.defer(out_dir / f"{args.command}.json", dumps(record))
    run.commit()
    fmt = output_format(args)
    if fmt == "json":
        say(dumps(record))
    elif fmt == "table":
        say("\n".join([table_text, *(f"wrote {f}" for f in record.get("files", []))]))
    else:
        from ecjax._src.formats import command_table, render

        say(render(command_table(record), fmt))


def float_dict(names, values):
    """``{name: value}`` of one number per system, as Python floats (for the JSON record)."""
    return {n: float(v) for n, v in zip(names, np.asarray(values).ravel())}
