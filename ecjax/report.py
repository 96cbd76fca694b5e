"""Tables of metrics for several systems, and where the popular metrics disagree.

Presentation only: every number comes from :mod:`ecjax.metrics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from jax.typing import ArrayLike

from ecjax import inputs as v
from ecjax import metrics as m
from ecjax.costs import normalize_rows


@dataclass(frozen=True)
class Column:
    name: str
    higher_is_better: bool
    values: np.ndarray  # (M,)


def metric_columns(counts: ArrayLike, *, costs: ArrayLike | None = None, utilities: ArrayLike | None = None,
                   priors: ArrayLike | None = None, pos_label: int = 1) -> list[Column]:
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
    v.check_exclusive({"costs": costs, "utilities": utilities})
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


def score_columns(labels: Sequence[ArrayLike], scores: Sequence[ArrayLike], *, priors: Sequence[ArrayLike | None],
                  score_type: str = "log_posteriors",
                  sample_weight: Sequence[ArrayLike | None] | None = None) -> list[Column]:
    """The score-based metrics of ``M`` systems, as named columns (lower is better except AUC).

    Args:
      labels: ``M`` label vectors (each system against its own).
      scores: ``M`` ``(N_m, K)`` score arrays (``(N_m,)`` for ``"llr"``).
      priors: one entry per system: the evaluation priors of the
        cross-entropy and Brier score (``None``: that system's data
        priors); for likelihood-type scores also the priors that make them
        posteriors (required then).
      score_type: as everywhere.
      sample_weight: ``None`` or one entry per system: ``None`` or the
        ``(N_m,)`` frequency weights of its samples.

    Columns: ``XE`` (cross-entropy, nats), ``Brier``, ``ECE`` (15 equal-width
    bins; binary for ``K = 2``, top-label otherwise) and ``AUC`` (binary) or
    ``AUC_ovr`` (the macro average of the one-vs-rest AUCs for ``K > 2``).
    """
    from ecjax import scores as sc  # the score rules sit above the counts in the data flow

    k = 2 if score_type == "llr" else int(np.shape(scores[0])[-1])
    likelihood = score_type in v.LIKELIHOOD_TYPES

    weights = [None] * len(labels) if sample_weight is None else sample_weight

    def column(fn):
        return np.asarray([float(fn(y, s, p, w)) for y, s, p, w in zip(labels, scores, priors, weights)])

    cols = [
        Column("XE", False, column(lambda y, s, p, w: sc.cross_entropy(y, s, priors=p, score_type=score_type,
                                                                       sample_weight=w))),
        Column("Brier", False, column(lambda y, s, p, w: sc.brier(y, s, priors=p, score_type=score_type,
                                                                  sample_weight=w))),
        Column("ECE", False, column(lambda y, s, p, w: sc.ece(y, s, priors=p if likelihood else None,
                                                             score_type=score_type, sample_weight=w))),
    ]
    if k == 2:
        cols.append(Column("AUC", True, column(lambda y, s, p, w: sc.auc(y, s, score_type=score_type,
                                                                         sample_weight=w))))
    else:
        cols.append(Column("AUC_ovr", True, column(lambda y, s, p, w: sc.auc_one_vs_rest(
            y, s, priors=p if likelihood else None, score_type=score_type, sample_weight=w))))
    return cols


def averaging_note(num_classes: int, num_decisions: int, pos_label: int, with_scores: bool) -> str:
    """One line that says how the columns of :func:`metric_columns` and :func:`score_columns` average."""
    if num_classes != num_decisions:
        parts = [f"{num_decisions} decisions for {num_classes} classes: only the utility yield, EC and NEC apply"]
    elif num_classes == 2:
        parts = [f"precision, recall, F1, specificity and Fowlkes-Mallows of class {pos_label} as the positive class"]
    else:
        parts = [f"precision, recall and F1 are macro averages over the {num_classes} classes"]
    if with_scores:
        parts.append("XE and Brier average each class's samples, weighted by the priors")
        parts.append("ECE bins the class-1 posterior" if num_classes == 2 else
                     "ECE bins the confidence of the most probable class (top-label)")
        if num_classes > 2:
            parts.append("AUC_ovr is the macro average of the one-vs-rest AUCs")
    return "; ".join(parts)


def winner(column: Column) -> int:
    vals = column.values if column.higher_is_better else -column.values
    return int(np.argmax(vals))


def disagreements(columns: Sequence[Column], reference: str = "utility_yield") -> list[str]:
    """Names of the columns whose best system differs from ``reference``'s."""
    ref = next(c for c in columns if c.name == reference)
    best = winner(ref)
    return [c.name for c in columns if winner(c) != best]


def format_table(columns: Sequence[Column], names: Sequence[str], *, reference: str = "utility_yield") -> str:
    """A plain-text table: systems as rows; ``*`` marks each column's winner,
    ``!`` marks columns whose winner differs from the reference column's (neither for a single system)."""
    several = len(names) > 1  # one system wins nothing
    disagree = set(disagreements(columns, reference)) if several else set()
    heads = ["system"] + [c.name + ("!" if c.name in disagree else "") for c in columns]
    rows = []
    for i, name in enumerate(names):
        cells = [name]
        for c in columns:
            cells.append(f"{c.values[i]:.4g}" + ("*" if several and winner(c) == i else " " if several else ""))
        rows.append(cells)
    widths = [max(len(r[j]) for r in [heads] + rows) for j in range(len(heads))]
    return "\n".join(aligned([heads, ["-" * w for w in widths]] + rows))


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as lines: the first column left-aligned, the others right-aligned, for any cell width."""
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    return ["  ".join(s.rjust(w) if j else s.ljust(w) for j, (s, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]
