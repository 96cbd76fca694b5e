"""The output formats of the command line: one table of results as CSV or as a markdown table.

Every command prints a table (``--format table``, the default: aligned text
for a person, with the notes below it) or its JSON record (``--format json``,
alias ``--json``: everything, for programs).  ``--format csv`` and ``--format
markdown`` print the main table of the record alone, one row per system (per
measure for ``calibrate``), in the record's own names: its columns are the
record's keys, and a numeric interval ``[low, high]`` (an HDI) is two columns,
``<key>_low`` and ``<key>_high``.  CSV keeps every digit (Python's shortest
round-trip repr, so a number reads back equal to the JSON's; ``inf``,
``-inf`` and ``nan`` as Python's ``float()`` reads them); markdown rounds to 6
significant digits, for reading.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

FORMATS = ("table", "json", "csv", "markdown")
# Significant digits of a number in a markdown table: for reading, not for reading back (CSV keeps them all).
MARKDOWN_DIGITS = 6


@dataclass(frozen=True)
class Table:
    """Rows of cells under a header: the first column names the row (a system, a measure)."""

    header: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


def _is_interval(x: Any) -> bool:
    return (isinstance(x, (list, tuple)) and len(x) == 2
            and all(isinstance(_scalar(e), (int, float)) and not isinstance(_scalar(e), bool) for e in x))


def table_of(rows: Mapping[str, Mapping[str, Any]], first: str) -> Table:
    """The table of ``rows`` (row name -> {column: value}): the columns in their order of first appearance, a
    cell absent from a row left empty (``None``), and a column of intervals ``[low, high]`` split in two,
    ``<column>_low`` and ``<column>_high``."""
    columns: dict[str, None] = {}
    intervals: set[str] = set()
    for cells in rows.values():
        for name, value in cells.items():
            columns.setdefault(name)
            if _is_interval(value):
                intervals.add(name)
    header = [first]
    for name in columns:
        header += [f"{name}_low", f"{name}_high"] if name in intervals else [name]
    body = []
    for row, cells in rows.items():
        line: list[Any] = [row]
        for name in columns:
            value = cells.get(name)
            if name in intervals:
                line += list(value) if value is not None and _is_interval(value) else [None, None]
            else:
                line.append(value)
        body.append(tuple(line))
    return Table(tuple(header), tuple(body))


def system_table(systems: Sequence[str], columns: Mapping[str, Mapping[str, Any]]) -> Table:
    """One row per system of ``systems``, one column per entry of ``columns`` (a record's ``{key: {system:
    value}}``, as the JSON of ``metrics`` holds its metrics)."""
    return table_of({s: {key: values.get(s) for key, values in columns.items()} for s in systems}, "system")


def _metrics_table(record: Mapping[str, Any]) -> Table:
    """``metrics``: each system's metrics (the record's ``metrics``), and with ``--bootstrap`` its posterior."""
    columns = dict(record["metrics"])
    if "bootstrap" in record:
        boot = record["bootstrap"]
        columns.update({f"bootstrap_{boot['metric']}_{key}": boot[key] for key in ("estimate", "mean", "hdi", "p_best")})
    return system_table(record["systems"], columns)


def _compare_table(record: Mapping[str, Any]) -> Table:
    """``compare``: each system's expected yield, its HDI and P(best), with their Monte Carlo errors."""
    errors = record["monte_carlo_errors"]
    return system_table(record["systems"], {
        "expected_yield": record["expected_yield"], "hdi": record["hdi"], "p_best": record["p_best"],
        "expected_yield_mc_error": errors["expected_yield"], "p_best_mc_error": errors["p_best"]})


def _compare_folds_table(record: Mapping[str, Any]) -> Table:
    """``compare-folds``: each system's mean (or effect), P(best) and HDI; for baycomp's test of two systems on
    several data sets, its one row of probabilities."""
    if "p_left" in record:
        a, b = record["systems"]
        return table_of({f"{a} vs {b}": {k: record[k] for k in ("p_left", "p_rope", "p_right")}}, "comparison")
    return system_table(record["systems"], {k: record[k] for k in ("mean", "effect", "p_best", "hdi") if k in record})


def _sweep_table(record: Mapping[str, Any]) -> Table:
    """``sweep``: the share of the points each system wins and, over cost ratios or matrices, its NEC's range."""
    columns: dict[str, Mapping[str, Any]] = {"win_fraction": record["win_fraction"]}
    if "values" in record:
        columns["nec_min"] = {s: float(np.min(v)) for s, v in record["values"].items()}
        columns["nec_max"] = {s: float(np.max(v)) for s, v in record["values"].items()}
    return system_table(record["systems"], columns)


def _calibrate_table(record: Mapping[str, Any]) -> Table:
    """``calibrate`` (with labels): each measure before and after calibration, and the calibration loss."""
    rows = {name: record[name] for name in ("cross_entropy", "brier")}
    rows.update(record.get("calibration_errors", {}))
    return table_of(rows, "measure")


COMMAND_TABLES = {"metrics": _metrics_table, "compare": _compare_table, "compare-folds": _compare_folds_table,
                  "sweep": _sweep_table, "calibrate": _calibrate_table}


def command_table(record: Mapping[str, Any]) -> Table:
    """The main table of a command's JSON ``record`` (its ``"command"`` says which)."""
    return COMMAND_TABLES[record["command"]](record)


def _scalar(x: Any) -> Any:
    """A numpy scalar as the Python number it holds (a float32 cell reads back as the same float64)."""
    return x.item() if isinstance(x, np.generic) else x


def _csv_cell(x: Any) -> str:
    x = _scalar(x)
    if x is None:
        return ""
    if isinstance(x, float):
        return repr(x)  # the shortest string that reads back as the same float; 'inf', '-inf', 'nan'
    return str(x)


def csv_text(table: Table) -> str:
    """``table`` as CSV (RFC 4180, written by the :mod:`csv` module): a header line, then one line per row."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.header)
    writer.writerows([_csv_cell(x) for x in row] for row in table.rows)
    return out.getvalue().rstrip("\n")


def _markdown_cell(x: Any) -> str:
    x = _scalar(x)
    if x is None:
        return ""
    if isinstance(x, float):
        return str(x) if not math.isfinite(x) else f"{x:.{MARKDOWN_DIGITS}g}"
    return str(x).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown_text(table: Table) -> str:
    """``table`` as a markdown (GitHub) pipe table: the first column left-aligned, the others right-aligned."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    rule = [":---"] + ["---:"] * (len(table.header) - 1)
    return "\n".join([line([_markdown_cell(h) for h in table.header]), line(rule),
                      *(line([_markdown_cell(x) for x in row]) for row in table.rows)])


def render(table: Table, fmt: str) -> str:
    """``table`` in the format ``fmt``: ``"csv"`` or ``"markdown"`` (the text table and the JSON record are the
    command's own)."""
    return {"csv": csv_text, "markdown": markdown_text}[fmt](table)
