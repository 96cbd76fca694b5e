"""Tables of metrics for several systems, and where the popular metrics disagree.

Presentation only: every number comes from :mod:`ecjax.metrics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src import metrics as m
from ecjax._src import result_formats
from ecjax._src.costs import normalize_rows


# The binning of every ECE the tables print (ecjax.ece's default); figures that draw other bins name both.
ECE_BINS = 15
# What the JSON records say of their units and conventions (``"conventions"``), in the averaging line's words.
CONVENTIONS = {
    "utility_yield": "in the cost file's units per sample (higher is better)",
    "EC": "in the cost file's units per sample, of the row-normalized costs (lower is better)",
    "Brier": "mean over the K classes of (p_k - [y = k])^2, psrcal's convention (and scikit-learn's for two "
             "classes); multiply by K for the sum over the classes (Brier 1950; scikit-learn >= 1.7 for three or more "
             "classes; ecjax.brier(..., over_classes='sum'))",
    "ECE": f"a fraction, {ECE_BINS} equal-width bins (binary: class-1 posterior; multiclass: top-label confidence)",
}


@dataclass(frozen=True)
class Column:
    name: str  # the key of the JSON record
    higher_is_better: bool
    values: np.ndarray  # (M,)
    header: str | None = None  # the table's heading where it names a convention (default: ``name``)


class MetricTable(list[Column]):
    """The columns of :func:`metric_columns` / :func:`score_columns` (a list of :class:`Column`), with the exports
    every result has: ``table += score_columns(...)`` keeps it one table."""

    def to_dict(self, systems: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
        """``{metric: {system: value}}``: the ``"metrics"`` of ``ecjax metrics --json`` (``systems`` default
        ``"system 0"``, ...)."""
        names = self._names(systems)
        return {c.name: {n: float(x) for n, x in zip(names, np.asarray(c.values).ravel())} for c in self}

    def to_frame(self, systems: Sequence[str] | None = None) -> Any:
        """A pandas ``DataFrame``: one row per system (index ``"system"``), one column per metric (its JSON name);
        pandas is optional (``pip install "ecjax[pandas]"``)."""
        return result_formats.system_frame(self._names(systems), {c.name: np.asarray(c.values) for c in self})

    def _names(self, systems):
        return v.system_names(systems, None, len(self[0].values) if self else 0)


def metric_columns(counts: ArrayLike, *, costs: ArrayLike | None = None, utilities: ArrayLike | None = None,
                   priors: ArrayLike | None = None, pos_label: int = 1) -> MetricTable:
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
    # EC and NEC need non-negative costs (Ferrer 2025, §2): shift each row by its minimum,
    # which changes every system's EC by the same constant and keeps the ranking.
    normalized = np.asarray(normalize_rows(costs))
    cols = MetricTable([
        Column("utility_yield", True, np.asarray(m.utility_yield(counts, -costs, priors=priors))),
        Column("EC", False, np.asarray(m.expected_cost(counts, normalized, priors=priors))),
        Column("NEC", False, np.asarray(m.normalized_expected_cost(counts, normalized, priors=priors))),
    ])
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
                  sample_weight: Sequence[ArrayLike | None] | None = None) -> MetricTable:
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
    from ecjax._src import scores as sc  # the score rules sit above the counts in the data flow

    k = 2 if score_type == "llr" else int(np.shape(scores[0])[-1])
    likelihood = score_type in v.LIKELIHOOD_TYPES

    weights = [None] * len(labels) if sample_weight is None else sample_weight

    def column(fn):
        return np.asarray([float(fn(y, s, p, w)) for y, s, p, w in zip(labels, scores, priors, weights)])

    cols = MetricTable([
        Column("XE", False, column(lambda y, s, p, w: sc.cross_entropy(y, s, priors=p, score_type=score_type,
                                                                       sample_weight=w))),
        # The heading names the convention: psrcal's mean over the K classes, 1/K of scikit-learn >= 1.7's sum.
        Column("Brier", False, column(lambda y, s, p, w: sc.brier(y, s, priors=p, score_type=score_type,
                                                                  sample_weight=w)), header="Brier/K"),
        Column("ECE", False, column(lambda y, s, p, w: sc.ece(y, s, priors=p if likelihood else None,
                                                             num_bins=ECE_BINS, score_type=score_type,
                                                             sample_weight=w))),
    ])
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
    parts.append("utility yield and EC are in the cost file's units per sample")
    if with_scores:
        parts.append("XE and Brier average each class's samples, weighted by the priors")
        # scikit-learn >= 1.7 sums over three or more classes; for two its default halves the sum (our mean).
        sklearn = "scikit-learn's for two classes; " if num_classes == 2 else "scikit-learn >= 1.7, "
        parts.append(f"Brier/K is the Brier score's mean over the {num_classes} classes of (p_k - [y = k])^2 "
                     f"(psrcal's convention, and {sklearn}Brier (1950) and most papers sum over the classes: "
                     f"{num_classes} x this)")
        parts.append(f"ECE is a fraction over {ECE_BINS} equal-width bins of the class-1 posterior" if num_classes == 2
                     else f"ECE is a fraction over {ECE_BINS} equal-width bins of the confidence of the most probable "
                     "class (top-label)")
        if num_classes > 2:
            parts.append("AUC_ovr is the macro average of the one-vs-rest AUCs")
    return "; ".join(parts)


# Metrics are float32 sums: values closer than this (relative) are equal up to their rounding, and no
# rounding of the table may crown one of them (a speaker-verification table showed AUC `1*` against `1`).
TIE_RTOL = 1e-6
# Significant digits of a table cell: at least MIN_DIGITS, more (up to MAX_DIGITS, float32's resolution) where the
# winner would otherwise print equal to another system.
MIN_DIGITS = 4
MAX_DIGITS = 7


def no_better_than_naive(nec: ArrayLike) -> np.ndarray:
    """``NEC >= 1`` up to float32 rounding (:data:`TIE_RTOL`): a system whose Bayes decisions are the naive
    decision for every sample has NEC exactly 1, which float32 may compute as 1 - 1 ulp (an H100 did)."""
    return np.asarray(nec, np.float64) >= 1.0 - TIE_RTOL


def winners(column: Column) -> list[int]:
    """Indices of the best systems of ``column``: every system within :data:`TIE_RTOL` of the best value (a tie
    returns several)."""
    vals = np.asarray(column.values, float) if column.higher_is_better else -np.asarray(column.values, float)
    top = float(np.max(vals))
    scale = max(abs(top), float(np.finfo(np.float32).tiny))
    return [int(i) for i in np.flatnonzero(vals >= top - TIE_RTOL * scale)]


def winner(column: Column) -> int | None:
    """Index of the single best system of ``column``; ``None`` where the best value is tied (:func:`winners`)."""
    best = winners(column)
    return best[0] if len(best) == 1 else None


def disagreements(columns: Sequence[Column], reference: str = "utility_yield") -> list[str]:
    """Names of the columns whose best systems exclude every best system of ``reference``.

    A column tied at the top (:func:`winners`) disagrees only if none of its tied systems is a best system of the
    reference: a tie picks no different winner."""
    ref = set(winners(next(c for c in columns if c.name == reference)))
    return [c.name for c in columns if not ref & set(winners(c))]


def cell_digits(values: ArrayLike, best: Sequence[int]) -> int:
    """Significant digits that print every system of ``best`` apart from every other system.

    :data:`MIN_DIGITS` unless the winner would print equal to a loser (AUC 0.9999955 against 0.9999950), then
    the fewest up to :data:`MAX_DIGITS` that show the difference.  Ties (several ``best``) need no more digits:
    they are equal as far as the metric's rounding can tell."""
    vals = np.asarray(values, float)
    if len(best) != 1 or vals.size < 2:
        return MIN_DIGITS
    others = np.delete(vals, best[0])
    for digits in range(MIN_DIGITS, MAX_DIGITS + 1):
        if all(f"{vals[best[0]]:.{digits}g}" != f"{x:.{digits}g}" for x in others):
            return digits
    return MAX_DIGITS


def apart(*values: float) -> list[str]:
    """``values`` printed with the same significant digits, the fewest (at least :data:`MIN_DIGITS`, at most
    :data:`MAX_DIGITS`) that print different numbers differently: "Brier 0.004453 before, 0.004312 after", not
    "0.0045 before, 0.0043 after"."""
    vals = [float(x) for x in values]
    digits = next((p for p in range(MIN_DIGITS, MAX_DIGITS + 1)
                   if all(f"{a:.{p}g}" != f"{b:.{p}g}" for i, a in enumerate(vals) for b in vals[i + 1:] if a != b)),
                  MAX_DIGITS)
    return [f"{x:.{digits}g}" for x in vals]


def format_table(columns: Sequence[Column], names: Sequence[str], *, reference: str = "utility_yield") -> str:
    """A plain-text table: systems as rows; ``*`` marks each column's winner, ``=`` the systems tied for best
    (:func:`winners`), ``!`` marks columns whose winner differs from the reference column's (neither for a single
    system).  Each column prints with the digits that show its winner apart (:func:`cell_digits`)."""
    several = len(names) > 1  # one system wins nothing
    disagree = set(disagreements(columns, reference)) if several else set()
    heads = ["system"] + [(c.header or c.name) + ("!" if c.name in disagree else "") for c in columns]
    rows = []
    marks = [_marks(c, len(names)) if several else [""] * len(names) for c in columns]
    digits = [cell_digits(c.values, winners(c)) for c in columns]
    for i, name in enumerate(names):
        rows.append([name] + [f"{c.values[i]:.{p}g}" + m[i] for c, m, p in zip(columns, marks, digits)])
    widths = [max(len(r[j]) for r in [heads] + rows) for j in range(len(heads))]
    return "\n".join(aligned([heads, ["-" * w for w in widths]] + rows))


def _marks(column: Column, num_systems: int) -> list[str]:
    best = winners(column)
    mark = "*" if len(best) == 1 else "="
    return [mark if i in best else " " for i in range(num_systems)]


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as lines: the first column left-aligned, the others right-aligned, for any cell width."""
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    return ["  ".join(s.rjust(w) if j else s.ljust(w) for j, (s, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]
