"""Tables of metrics for several systems, and where the popular metrics disagree.

Presentation only: every number comes from :mod:`ecjax.metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecjax import _validate as v
from ecjax import metrics as m
from ecjax.costs import normalize_rows


@dataclass(frozen=True)
class Column:
    name: str
    higher_is_better: bool
    values: np.ndarray  # (M,)


def metric_columns(counts, *, costs=None, utilities=None, priors=None, pos_label=1):
    """All decision metrics for ``M`` systems, as named columns.

    Args:
      counts: ``(M, K, D)`` confusion counts.
      costs / utilities: the application's matrix (give one; the other is
        its negation).  Gives the utility yield of ``U = -c``, and the EC and
        NEC of the row-normalized costs ``c_ij - min_j c_ij``.
      priors: deployment priors (default: data priors).
      pos_label: positive class of the binary metrics.

    The classical metrics need square counts (``D = K``); with abstention
    (``D > K``) only the decision-theoretic columns are returned.
    """
    counts = np.asarray(counts)
    if (costs is None) == (utilities is None):
        raise v.InputError("give exactly one of `costs` or `utilities`")
    costs = -np.asarray(utilities, float) if costs is None else np.asarray(costs, float)
    # EC and NEC need non-negative costs (seed 001 §2): shift each row by its minimum,
    # which changes every system's EC by the same constant and keeps the ranking.
    normalized = np.asarray(normalize_rows(costs))
    cols = [
        Column("utility_yield", True, np.asarray(m.utility_yield(counts, -costs, priors=priors))),
        Column("EC", False, np.asarray(m.expected_cost(counts, normalized, priors=priors))),
        Column("NEC", False, np.asarray(m.normalized_expected_cost(counts, normalized, priors=priors))),
    ]
    k, d = counts.shape[-2:]
    if k != d:
        return cols
    cols += [
        Column("accuracy", True, np.asarray(m.accuracy(counts))),
        Column("balanced_accuracy", True, np.asarray(m.balanced_accuracy(counts))),
        Column("MCC", True, np.asarray(m.matthews_corrcoef(counts))),
        Column("kappa", True, np.asarray(m.cohen_kappa(counts))),
    ]
    avg = "binary" if k == 2 else "macro"
    cols += [
        Column("precision", True, np.asarray(m.precision(counts, pos_label=pos_label, average=avg))),
        Column("recall", True, np.asarray(m.recall(counts, pos_label=pos_label, average=avg))),
        Column("F1", True, np.asarray(m.f1_score(counts, pos_label=pos_label, average=avg))),
    ]
    if k == 2:
        cols += [
            Column("specificity", True, np.asarray(m.specificity(counts, pos_label=pos_label))),
            Column("fowlkes_mallows", True, np.asarray(m.fowlkes_mallows(counts, pos_label=pos_label))),
        ]
    return cols


def winner(column: Column) -> int:
    vals = column.values if column.higher_is_better else -column.values
    return int(np.argmax(vals))


def disagreements(columns, reference: str = "utility_yield"):
    """Names of the columns whose best system differs from ``reference``'s."""
    ref = next(c for c in columns if c.name == reference)
    best = winner(ref)
    return [c.name for c in columns if winner(c) != best]


def format_table(columns, names, *, reference: str = "utility_yield") -> str:
    """A plain-text table: systems as rows; ``*`` marks each column's winner,
    ``!`` marks columns whose winner differs from the reference column's."""
    disagree = set(disagreements(columns, reference))
    heads = ["system"] + [c.name + ("!" if c.name in disagree else "") for c in columns]
    rows = []
    for i, name in enumerate(names):
        cells = [name]
        for c in columns:
            cells.append(f"{c.values[i]:.4g}" + ("*" if winner(c) == i else " "))
        rows.append(cells)
    widths = [max(len(r[j]) for r in [heads] + rows) for j in range(len(heads))]
    line = lambda cells: "  ".join(s.rjust(w) if j else s.ljust(w) for j, (s, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(heads), line(["-" * w for w in widths])] + [line(r) for r in rows])
