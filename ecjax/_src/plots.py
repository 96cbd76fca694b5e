"""Figures (matplotlib).

Every function draws one figure and returns the ``matplotlib.figure.Figure``;
given ``Frame(path=...)`` it also saves it (PNG by suffix).  As scikit-learn's and
ArviZ's displays do, each takes

* the result object that ecjax computes (a :class:`~ecjax.scores.BayesRiskCurve`,
  the tuple of :func:`~ecjax.roc_curve`, :class:`~ecjax.scores.ReliabilityBins`,
  a :class:`~ecjax.prob.Comparison`, a :class:`~ecjax.sweep.SweepResult` or
  :class:`~ecjax.sweep.UtilitySpaceMap`) or the plain arrays it holds, and
* ``frame=``: a :class:`Frame` with what is not data: the title and axis
  labels (``None`` keeps each function's own), the class names, ``ax`` (draw
  into these axes, of the caller's figure, which is returned and left as laid
  out, instead of a new figure) and ``path``.  A function given a field it
  has no use for (class names to a plot that names no classes) raises
  :class:`~ecjax.InputError`.

The matplotlib backend is never chosen here: figures go wherever the
caller's pyplot sends them (inline in Jupyter), and without a display pyplot
falls back to a headless backend by itself, so saving works on a server.
matplotlib is an optional dependency (``pip install "ecjax[plots]"``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from jax.typing import ArrayLike

from ecjax._src import inputs as v

if TYPE_CHECKING:  # matplotlib stays an optional import until a figure is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ecjax._src.scores.calibration_errors import ReliabilityBands
    from ecjax._src.scores import ReliabilityBins

YSCALES = ("auto", "linear", "symlog", "log")
# "auto" y-scale: values beyond this many times the naive level (NEC 1) would flatten the useful range [0, 1]
# into a sliver, so the axis turns logarithmic above the naive level.
EXPLODES_AT = 4.0
# Below this many systems a rank correlation takes only a handful of values (two systems: always +-1).
MIN_POINTS_FOR_RANK_CORRELATION = 5
# One equal-width bin holding more than this share of the samples: the scores are skewed, equal-mass bins show more.
SKEWED_BIN_SHARE = 0.25


@dataclasses.dataclass(frozen=True)
class Frame:
    """Where a figure is drawn and what its text says: everything of a plot that is not its data.

    Every function of :mod:`ecjax.plots` takes one as ``frame=``; the default ``Frame()`` keeps each function's own
    title and axis labels and draws a new figure.

    Attributes:
      title: the axes title; ``None``: the function's own (an empty string: no title).
      xlabel, ylabel: the axis labels; ``None``: the function's own.  A y-scale note (of a logarithmic part) is
        still appended to the y label.
      class_names: ``(negative, positive)`` names of the two classes, for the plots that name classes
        (:func:`reliability_diagram`, :func:`roc_with_iso_utility`, :func:`winner_map`); default "class 0",
        "class 1".  The other plots raise :class:`~ecjax.InputError` when given them.
      ax: a matplotlib ``Axes`` to draw into, of the caller's figure (returned, its layout left alone), instead
        of a new figure.
      path: save the figure there (the format from the suffix).
    """

    title: str | None = None
    xlabel: str | None = None
    ylabel: str | None = None
    class_names: Sequence[str] | None = None
    ax: Axes | None = None
    path: str | os.PathLike[str] | None = None

    def __post_init__(self):
        for name in ("title", "xlabel", "ylabel"):
            v.as_optional_str(getattr(self, name), f"Frame.{name}")
        if self.class_names is not None:
            object.__setattr__(self, "class_names", v.as_names(self.class_names, "Frame.class_names"))
        if self.ax is not None:
            from matplotlib.axes import Axes  # only reached with an ax, i.e. with matplotlib in use

            v.check_type(self.ax, Axes, "Frame.ax", "a matplotlib Axes")
        if self.path is not None:
            v.check_type(self.path, (str, os.PathLike), "Frame.path", "a file path (str or os.PathLike)")


def _check_frame(frame: object, function: str, *, names_classes: bool = False) -> Frame:
    """``frame`` if it is a :class:`Frame` (checked when it was made) that ``function`` can use all of."""
    frame = v.check_instance(frame, Frame, "frame", "ecjax.plots.Frame")
    if not names_classes and frame.class_names is not None:
        raise v.InputError(f"{function} does not use `Frame.class_names`: its figure names no classes")
    return frame


def _or(value, default):
    """A :class:`Frame` field, or the function's own ``default`` where it is ``None``."""
    return default if value is None else value


def _plt():
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - exercised only without matplotlib
        raise ImportError('ecjax.plots needs matplotlib: pip install "ecjax[plots]"') from err
    return plt


def _figure_and_axes(ax, figsize):
    """``(figure, axes)``: the caller's axes and their root figure, or a new pyplot figure."""
    if ax is not None:
        fig = ax.figure
        # A subfigure's axes: the figure to save and return is the root one.
        while getattr(fig, "figure", fig) is not fig:
            fig = fig.figure
        return fig, ax
    # Constrained layout makes room for legends placed beside the axes; a caller's figure keeps its own layout.
    fig, ax = _plt().subplots(figsize=figsize, layout="constrained")
    return fig, ax


def _finish(fig, path):
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def _colors(n):
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _class_names(class_names):
    if class_names is None:
        return "class 0", "class 1"
    if len(class_names) != 2:
        raise v.InputError(f"`Frame.class_names` must name the two classes (negative, positive), got {class_names!r}")
    return str(class_names[0]), str(class_names[1])


def _apply_yscale(ax, values, naive_level, yscale):
    """Set the y-scale; ``"auto"`` is symlog (linear up to the naive level, logarithmic above) when values explode.

    Returns the scale used."""
    v.check_choice(yscale, "yscale", YSCALES)
    if yscale == "auto":
        finite = np.asarray(values, float)
        finite = finite[np.isfinite(finite)]
        explodes = naive_level > 0 and finite.size > 0 and finite.max() > EXPLODES_AT * naive_level
        yscale = "symlog" if explodes else "linear"
    if yscale == "symlog":
        level = naive_level if naive_level > 0 else 1.0
        ax.set_yscale("symlog", linthresh=level)
        ax.set_ylim(bottom=0.0)
        # Plain numbers on both parts of the axis: quarters of the naive level, then 1-2-5 steps above it.
        top = ax.get_ylim()[1]
        steps = [level * q for q in (0.0, 0.25, 0.5, 0.75)]
        decade = level
        while decade <= top:
            steps += [decade * k for k in (1, 2, 5) if decade * k <= top]
            decade *= 10
        ax.set_yticks(steps, [f"{t:.3g}" for t in steps])
    elif yscale == "log":
        ax.set_yscale("log")
    return yscale


def _finish_cost_axes(fig, ax, values, naive_level, yscale, normalized, frame, *, title, xlabel, cost_label):
    """Y-scale, labels, title and legend of an (N)EC plot (``frame``'s where given), then :func:`_finish`."""
    scale = _apply_yscale(ax, values, naive_level, yscale)
    ax.set_xlabel(_or(frame.xlabel, xlabel))
    ax.set_ylabel(_or(frame.ylabel, "normalized expected cost" if normalized else cost_label)
                  + _scale_note(scale, naive_level, normalized))
    ax.set_title(_or(frame.title, title))
    ax.legend(fontsize=8)
    return _finish(fig, frame.path)


def _scale_note(scale, naive_level, normalized):
    if scale != "symlog":
        return ""
    where = "1 (naive)" if normalized else f"{naive_level:.3g} (naive)"
    return f"\n(linear up to {where}, logarithmic above)"


# ---------------------------------------------------------------- reliability

def _wilson_interval(hits, n, z):
    """Wilson score interval of a binomial proportion: it stays inside [0, 1] and is sane for small bins."""
    p = hits / n
    denom = 1.0 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denom
    half = z / denom * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return centre - half, centre + half


def _reliability_from_scores(labels, scores, score_type, num_bins, binning, variant, priors, sample_weight):
    from ecjax._src.scores import reliability_bins

    kw = dict(num_bins=num_bins, variant=variant, priors=priors, score_type=score_type, sample_weight=sample_weight)
    if binning != "auto":
        return reliability_bins(labels, scores, binning=binning, **kw), binning
    b = reliability_bins(labels, scores, binning="equal_width", **kw)
    if b.count.max() > SKEWED_BIN_SHARE * b.count.sum():
        return reliability_bins(labels, scores, binning="equal_mass", **kw), "equal_mass"
    return b, "equal_width"


def _binned_ece(confidence, frequency, count) -> float:
    """The count-weighted mean gap of the bins (:func:`ecjax.ece` of these bins); NaN without samples."""
    n = np.asarray(count, float)
    gap = np.abs(np.asarray(frequency, float) - np.asarray(confidence, float))
    return float(np.sum(np.where(n > 0, n * gap, 0.0)) / np.sum(n)) if np.sum(n) > 0 else float("nan")


def _ece_lines(ece: float, bins_text: str, equal_width_ece: float | None, num_bins: int) -> str:
    """The ECE as the metric tables print it (a fraction, 4 significant digits), with its binning; where the figure
    shows other bins than the tables' equal-width ones, the tables' ECE too, so that one run never shows two
    unnamed ECEs of one system."""
    text = f"ECE = {ece:.4g} ({bins_text})"
    if equal_width_ece is not None:
        text += f"\nECE = {equal_width_ece:.4g} ({num_bins} equal-width bins, as the tables)"
    return text


def _bin_arrays(bins):
    """``(confidence, frequency, count)``: the three ``(B,)`` arrays of a tuple of them, else an InputError."""
    if isinstance(bins, (str, bytes)) or not hasattr(bins, "__len__") or len(bins) != 3:
        raise v.InputError("`bins` must be a ReliabilityBins, a ReliabilityBands or a (confidence, frequency, count) "
                           f"tuple of (B,) arrays, got {type(bins).__name__}")
    arrays = [np.asarray(a) for a in bins]
    length = {"B": arrays[0].shape[0]} if arrays[0].ndim == 1 else {}
    for part, a in zip(("confidence", "frequency", "count"), arrays):
        v.check_shape(a, "bins", "(B,)", sizes=length, why=f" ({part} of the (confidence, frequency, count) tuple)")
    return arrays


def reliability_diagram(bins: ReliabilityBins | ReliabilityBands | Sequence[ArrayLike] | None = None, *,
                        labels: ArrayLike | None = None, scores: ArrayLike | None = None,
                        score_type: str = "log_posteriors", num_bins: int = 15, binning: str = "auto",
                        variant: str = "auto", priors: ArrayLike | None = None,
                        sample_weight: ArrayLike | None = None, frame: Frame = Frame()) -> Figure:
    """Observed frequency against predicted probability per bin, with 95 % intervals and the ECE.

    Drawn: the diagonal of perfect calibration; each non-empty bin's observed
    frequency (binary: of class 1; multiclass: the accuracy of the decided
    class) at its mean predicted probability, with a 95 % Wilson interval
    for the frequency of a bin of that many samples; the ECE (the
    count-weighted mean gap between the two, as :func:`ecjax.ece`) written
    on the axes with the binning; and, in a new figure, the samples per bin
    below.  With ``Frame(ax=...)`` only the upper panel is drawn, into ``ax``.

    Three ways to call it:

    * ``reliability_diagram(labels=y, scores=s)``: the bins are computed here
      (:func:`ecjax.scores.reliability_bins`).  ``binning="auto"`` (default)
      takes equal-mass bins when the scores are skewed (one equal-width bin
      would hold more than a quarter of the samples, as for an accurate
      multiclass system whose confidences crowd near 1), else equal-width.
    * ``reliability_diagram(bins)`` with a :class:`~ecjax.scores.ReliabilityBins`,
      or with a :class:`~ecjax.scores.ReliabilityBands`: its
      intervals of each bin's true frequency (its ``interval``) are
      drawn as a shaded band instead of the Wilson intervals.
    * ``reliability_diagram((confidence, frequency, count))`` with ``(B,)`` arrays.

    Args:
      bins: a :class:`~ecjax.scores.ReliabilityBins`, a
        :class:`~ecjax.scores.ReliabilityBands` or a
        ``(confidence, frequency, count)`` tuple of ``(B,)`` arrays; or
        ``None`` with ``labels`` and ``scores``.
      variant: ``"binary"`` (posterior of class 1), ``"top_label"`` (confidence
        of the decided class) or ``"auto"`` (binary for two classes); with
        precomputed bins it only sets the axis labels.
      num_bins, binning, priors, score_type, sample_weight: as in
        :func:`ecjax.ece`, plus ``"auto"`` binning (with ``labels`` and
        ``scores``; bin counts are then weighted counts).
      frame: :class:`Frame` (title, axis labels, class names, ``ax``, ``path``);
        the class names are the ``(negative, positive)`` names of the binary labels.
    """
    frame = _check_frame(frame, "reliability_diagram", names_classes=True)
    v.check_choice(binning, "binning", ("auto", "equal_width", "equal_mass"))
    v.check_choice(variant, "variant", ("auto", "binary", "top_label"))
    binning_used = None
    equal_width_ece = None  # the ECE of the tables' bins, where the figure draws others
    band: Any = None  # a ReliabilityBands: its band is drawn
    if (labels is None) != (scores is None) or (bins is None) == (labels is None):
        raise v.InputError("give the bins (a ReliabilityBins, a ReliabilityBands or a (confidence, frequency, count) "
                           "tuple) or `labels` and `scores` together, not both")
    if labels is not None and scores is not None:
        k = 2 if score_type == "llr" else int(np.shape(scores)[-1])
        if variant == "auto":
            variant = "binary" if k == 2 else "top_label"
        computed, binning_used = _reliability_from_scores(labels, scores, score_type, num_bins, binning, variant,
                                                          priors, sample_weight)
        if binning_used == "equal_mass":  # the tables' ECE uses equal-width bins: name both
            from ecjax._src.scores import reliability_bins

            width = reliability_bins(labels, scores, num_bins=num_bins, binning="equal_width", variant=variant,
                                     priors=priors, score_type=score_type, sample_weight=sample_weight)
            equal_width_ece = _binned_ece(width.confidence, width.frequency, width.count)
        conf, acc, n = computed.confidence, computed.frequency, computed.count
    elif sample_weight is not None:
        raise v.InputError("`sample_weight` goes with `labels` and `scores`; precomputed bins already hold their weights")
    elif bins is not None and hasattr(bins, "confidence") and hasattr(bins, "frequency") and hasattr(bins, "count"):
        conf, acc, n = bins.confidence, bins.frequency, bins.count
        band = bins if hasattr(bins, "low") else None
    else:
        conf, acc, n = _bin_arrays(bins)
    conf, acc, n = (np.asarray(a, float) for a in (conf, acc, n))
    keep = n > 0
    conf, acc, n = conf[keep], acc[keep], n[keep]
    if band is not None:
        band_low, band_high = np.asarray(band.low, float)[keep], np.asarray(band.high, float)[keep]
    ece = _binned_ece(conf, acc, n)
    lo, hi = _wilson_interval(acc * n, n, 1.959963984540054)  # z of a two-sided 95 % interval

    neg, pos = _class_names(frame.class_names)
    if variant == "binary":
        default_x, ylabel = f"predicted probability of {pos}", f"observed frequency of {pos}"
    elif variant == "top_label":
        default_x, ylabel = "confidence: predicted probability of the decided class", "accuracy of the decided class"
    else:
        default_x, ylabel = "predicted probability (binary: of class 1; else of the decided class)", "observed frequency"
    xlabel = _or(frame.xlabel, default_x)
    owned = frame.ax is None
    if owned:
        fig, (ax, ax_n) = _plt().subplots(2, 1, figsize=(5, 6), gridspec_kw={"height_ratios": [3, 1]}, sharex=True,
                                          layout="constrained")
    else:
        fig, ax = _figure_and_axes(frame.ax, None)
    ax.plot([0, 1], [0, 1], ls="--", color="gray", label="perfect calibration")
    ax.plot(conf, acc, marker="o", label="observed")
    if band is None:
        ax.vlines(conf, lo, hi, color="C0", alpha=0.6, label="95 % interval (Wilson)")
    else:
        what = {"jeffreys": "interval (Jeffreys, Brown-Cai-DasGupta)", "hdi": "credible HDI (uniform prior)"}.get(
            band.interval, "credible interval (uniform prior)")
        ax.fill_between(conf, band_low, band_high, color="C0", alpha=0.25, step=None,
                        label=f"{100 * band.prob:g} % {what}")
    bins_text = f"{int(keep.sum())} non-empty bins" if binning_used is None else \
        f"{num_bins} {binning_used.replace('_', '-')} bins"
    ax.text(0.97, 0.03, _ece_lines(ece, bins_text, equal_width_ece, num_bins), transform=ax.transAxes, ha="right",
            va="bottom")
    ax.set_ylabel(_or(frame.ylabel, ylabel))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(_or(frame.title, "Reliability diagram"))
    ax.legend(loc="upper left", fontsize=8)
    if owned:
        ax_n.vlines(conf, 0, n, color="gray", lw=3)
        ax_n.set_xlabel(xlabel)
        ax_n.set_ylabel("samples")
        ax_n.set_ylim(bottom=0)
    else:
        ax.set_xlabel(xlabel)
    return _finish(fig, frame.path)


# ----------------------------------------------------------- binary thresholds

def cost_vs_threshold(thresholds: Any, ec: ArrayLike | None = None, *, bayes_threshold: float | None = None,
                      optimal_threshold: float | None = None, normalized: bool = True, yscale: str = "auto",
                      frame: Frame = Frame()) -> Figure:
    """EC (or NEC) of "decide class 1 iff log-odds > threshold", with the Bayes and the optimal thresholds marked.

    Drawn: the cost at every threshold (``thresholds`` may be the
    ``(thresholds, ec)`` result of :func:`ecjax.scores.expected_cost_vs_threshold`;
    infinite thresholds are left out), vertical lines at the given thresholds,
    and the naive level (NEC 1).  With ``yscale="auto"`` the y-axis is linear
    up to the naive level and logarithmic above when the curve rises beyond
    ``EXPLODES_AT`` times that level (the naive level of an unnormalized curve
    is the cheaper of its two ends, where every sample gets the same decision).

    Args:
      frame: :class:`Frame` (title, axis labels, ``ax``, ``path``; no class names).
    """
    frame = _check_frame(frame, "cost_vs_threshold")
    if ec is None:
        thresholds, ec = thresholds
    t, e = np.asarray(thresholds, float), np.asarray(ec, float)
    naive_level = 1.0 if normalized else float(np.nanmin(e[[0, -1]])) if e.size else 0.0
    finite = np.isfinite(t) & np.isfinite(e)
    t, e = t[finite], e[finite]
    fig, ax = _figure_and_axes(frame.ax, (6, 4))
    ax.plot(t, e, color="C0", label="NEC" if normalized else "EC")
    if bayes_threshold is not None:
        ax.axvline(bayes_threshold, color="C1", ls="--", label=f"Bayes threshold {bayes_threshold:.3g}")
    if optimal_threshold is not None:
        ax.axvline(optimal_threshold, color="C2", ls=":", label=f"optimal threshold {optimal_threshold:.3g}")
    if naive_level > 0:
        ax.axhline(naive_level, color="gray", lw=0.8, label="naive decision (no scores)")
    return _finish_cost_axes(fig, ax, e, naive_level, yscale, normalized, frame,
                             title="Expected cost against threshold", xlabel="threshold on the log-odds score",
                             cost_label="expected cost")


def _curves(prior_log_odds, actual, minimum):
    """``[(x, actual, minimum, naive)]`` from BayesRiskCurve objects or from arrays."""
    if actual is None:
        items = [prior_log_odds] if hasattr(prior_log_odds, "actual") else list(prior_log_odds)
        return [tuple(np.asarray(getattr(c, f), float) for f in ("prior_log_odds", "actual", "minimum", "naive"))
                for c in items]
    x = np.asarray(prior_log_odds, float)
    return [(x, np.asarray(a, float), np.asarray(m, float), np.ones_like(x))
            for a, m in zip(np.atleast_2d(actual), np.atleast_2d(minimum))]


def bayes_risk_curves(prior_log_odds: Any, actual: ArrayLike | None = None, minimum: ArrayLike | None = None, *,
                      names: Sequence[str] | None = None, yscale: str = "auto", frame: Frame = Frame()) -> Figure:
    """Normalized EC of Bayes decisions (solid) and of the best threshold (dashed) against the effective prior log-odds.

    Drawn: for each system, the actual risk of its Bayes decisions and the
    minimum risk at the best threshold for each effective prior (the gap is
    what calibration could recover), and the naive risk (1 when normalized).
    With ``yscale="auto"`` the y-axis is linear up to the naive level and
    logarithmic above when a curve rises beyond ``EXPLODES_AT`` times it
    (badly calibrated scores at extreme priors).

    Args:
      prior_log_odds: ``(P,)`` effective prior log-odds, or a
        :class:`~ecjax.scores.BayesRiskCurve` (:func:`ecjax.bayes_risk_curve`)
        or a list of them (then ``actual`` and ``minimum`` are not given).
      actual, minimum: ``(P,)`` or ``(M, P)`` normalized ECs.
      frame: :class:`Frame` (title, axis labels, ``ax``, ``path``; no class names).
    """
    frame = _check_frame(frame, "bayes_risk_curves")
    curves = _curves(prior_log_odds, actual, minimum)
    names = names or [f"system {i}" for i in range(len(curves))]
    normalized = all(np.allclose(c[3], 1.0) for c in curves)
    naive_level = 1.0 if normalized else float(max(np.max(c[3]) for c in curves))
    fig, ax = _figure_and_axes(frame.ax, (6, 4))
    for (x, a, m, _), name, c in zip(curves, names, _colors(len(curves))):
        ax.plot(x, a, color=c, label=f"{name} (actual)")
        ax.plot(x, m, color=c, ls="--", label=f"{name} (minimum)")
    if normalized:
        ax.axhline(1.0, color="gray", lw=0.8, label="naive decision (no scores)")
    else:
        ax.plot(curves[0][0], curves[0][3], color="gray", lw=0.8, label="naive decision (no scores)")
    return _finish_cost_axes(fig, ax, np.concatenate([np.r_[c[1], c[2]] for c in curves]), naive_level, yscale,
                             normalized, frame, title="Bayes-risk curves", xlabel="effective prior log-odds of class 1",
                             cost_label="expected cost (0-1 costs)")


# The name used in scikit-learn/ArviZ-style calls: ``plots.bayes_risk(curve, frame=Frame(ax=ax))``.
bayes_risk = bayes_risk_curves


# ------------------------------------------------------------------------ ROC

def _roc_inputs(fpr, tpr):
    if tpr is None:
        # One (fpr, tpr[, thresholds]) result of ecjax.roc_curve, or a list of them.
        results = list(fpr) if isinstance(fpr[0], (tuple, list)) else [fpr]
        return [np.asarray(r[0], float) for r in results], [np.asarray(r[1], float) for r in results]
    fprs = [np.asarray(fpr, float)] if np.ndim(fpr[0]) == 0 else [np.asarray(f, float) for f in fpr]
    tprs = [np.asarray(tpr, float)] if np.ndim(tpr[0]) == 0 else [np.asarray(t, float) for t in tpr]
    return fprs, tprs


# Above this AUC (every curve) a linear ROC hugs its axes: roc_with_iso_utility's "auto" FPR axis turns logarithmic.
NEAR_PERFECT_AUC = 0.99


def _trapezoid_auc(fpr, tpr) -> float:
    """Area under the (fpr, tpr) polyline, the points sorted by fpr then tpr."""
    order = np.lexsort((tpr, fpr))
    f, t = np.asarray(fpr, float)[order], np.asarray(tpr, float)[order]
    return float(np.sum(np.diff(f) * (t[1:] + t[:-1]) / 2))


_DET_TICKS = np.array([1e-4, 1e-3, 5e-3, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 0.95])


def _probit_axes(ax, lo, hi):
    """Normal-deviate (probit) scales on both axes, as in DET plots: binormal ROCs become straight lines."""
    from scipy.special import ndtr, ndtri

    def forward(p):
        # Rates of exactly 0 or 1 lie at infinity: park them far outside the visible range.
        return ndtri(np.clip(p, 1e-12, 1 - 1e-12))

    ticks = _DET_TICKS[(_DET_TICKS >= lo) & (_DET_TICKS <= hi)]
    for set_scale, set_lim, set_ticks in ((ax.set_xscale, ax.set_xlim, ax.set_xticks),
                                          (ax.set_yscale, ax.set_ylim, ax.set_yticks)):
        set_scale("function", functions=(forward, ndtr))
        set_lim(lo, hi)
        set_ticks(ticks, [f"{100 * t:g}" for t in ticks])


def roc_with_iso_utility(fpr: Any, tpr: ArrayLike | Sequence[ArrayLike] | None = None, *,
                         utilities: ArrayLike | None = None, costs: ArrayLike | None = None,
                         priors: ArrayLike | None = None, names: Sequence[str] | None = None, tangents: str = "all",
                         det: bool = False, fpr_scale: str = "auto", frame: Frame = Frame()) -> Figure:
    """ROC (or DET) curves; with utilities or costs, each system's best operating point and iso-utility tangent.

    The utility yield is linear in (FPR, TPR) (the ROC tangent criterion of
    Dyrland, Lundervold and Porta Mana, eqs. 20-25):
    ``P0 (U00 (1 - FPR) + U01 FPR) + P1 (U10 (1 - TPR) + U11 TPR)``, so its
    level sets are lines of slope ``P0 (U00 - U01) / (P1 (U11 - U10))``,
    i.e. ``P0 c01 / (P1 c10)`` for costs with a zero diagonal.  Drawn: each
    curve, its point of highest yield (a dot) and, with ``tangents="all"``
    (default), the iso-utility line through that point in the curve's
    colour (it touches the curve without crossing it); ``tangents="best"``
    draws the line of the best system only, and the legend says whose.
    Class 1 is the positive class: the axis labels and title name it.

    Args:
      fpr, tpr: ``(T,)`` arrays or lists of them, one per system; or, with
        ``tpr`` left out, the ``(fpr, tpr, thresholds)`` result of
        :func:`ecjax.roc_curve` or a list of such results.
      utilities: ``(2, 2)`` utility matrix, rows = true class; or ``costs``
        (its negation; the legend then gives expected costs).
      priors: ``(2,)`` class priors (required with ``utilities``/``costs``).
      det: draw a DET plot instead: miss rate (1 - TPR) against FPR on
        normal-deviate axes; the iso-utility lines are then curves.
      fpr_scale: the ROC's false-positive axis: ``"linear"``, ``"log"`` or
        ``"auto"`` (default): logarithmic when every curve's AUC is at least
        :data:`NEAR_PERFECT_AUC`, where a linear ROC hugs the axes and hides
        the operating points and iso-utility lines (a speaker-verification
        system of AUC 0.99999).  Not used with ``det``.
      frame: :class:`Frame` (title, axis labels, class names, ``ax``, ``path``);
        the class names are ``(negative, positive)`` (default "class 0", "class 1").

    A system's point is called best only if its yield beats every other
    system's by more than float32 rounding (:data:`~ecjax._src.report.TIE_RTOL`):
    equal expected costs are a tie, said as such.
    """
    frame = _check_frame(frame, "roc_with_iso_utility", names_classes=True)
    v.check_choice(tangents, "tangents", ("all", "best"))
    v.check_choice(fpr_scale, "fpr_scale", ("auto", "linear", "log"))
    v.check_exclusive({"utilities": utilities, "costs": costs}, required=False)
    as_cost = costs is not None
    u = None if utilities is None and costs is None else \
        (-np.asarray(costs, float) if as_cost else np.asarray(utilities, float))
    if u is not None and priors is None:
        raise v.InputError("`priors` are needed with `utilities` or `costs` (the iso-utility slope depends on them)")
    fprs, tprs = _roc_inputs(fpr, tpr)
    names = names or [f"system {i}" for i in range(len(fprs))]
    neg, pos = _class_names(frame.class_names)
    fig, ax = _figure_and_axes(frame.ax, (5, 5))

    if det:
        rates = np.concatenate([np.r_[f, 1 - t] for f, t in zip(fprs, tprs)])
        positive = rates[rates > 0]
        lo = max(1e-4, 0.5 * positive.min()) if positive.size else 1e-3
        hi = 0.95
        from scipy.special import ndtr, ndtri

        grid = ndtr(np.linspace(ndtri(lo), ndtri(hi), 400))  # even steps on the probit axis

        def to_y(t):
            return 1 - t
    else:
        positive_fpr = np.concatenate([f[f > 0] for f in fprs])
        if fpr_scale == "auto":
            near_perfect = all(_trapezoid_auc(f, t) >= NEAR_PERFECT_AUC for f, t in zip(fprs, tprs))
            fpr_scale = "log" if near_perfect and positive_fpr.size else "linear"
        fpr_lo = max(1e-6, 0.5 * positive_fpr.min()) if positive_fpr.size else 1e-4
        grid = np.geomspace(fpr_lo, 1, 400) if fpr_scale == "log" else np.linspace(0, 1, 400)

        def to_y(t):
            return t
    ax.plot(grid, to_y(grid), color="gray", lw=0.8, ls=":", label="chance")

    best_points = []
    for f, t, name, c in zip(fprs, tprs, names, _colors(len(fprs))):
        ax.plot(f, to_y(t), color=c, label=name)
        if u is not None:
            p = np.asarray(priors, float)
            y = p[0] * (u[0, 0] * (1 - f) + u[0, 1] * f) + p[1] * (u[1, 0] * (1 - t) + u[1, 1] * t)
            i = int(np.argmax(y))
            ax.plot(f[i], to_y(t[i]), "o", color=c)
            best_points.append((y[i], f[i], t[i], name, c))
    if best_points:
        assert u is not None, "best points are found only with utilities or costs"
        p = np.asarray(priors, float)
        num, den = p[0] * (u[0, 0] - u[0, 1]), p[1] * (u[1, 1] - u[1, 0])
        top = max(range(len(best_points)), key=lambda j: best_points[j][0])
        from ecjax._src.report import TIE_RTOL

        best_yield = best_points[top][0]
        tied = sum(y >= best_yield - TIE_RTOL * max(abs(best_yield), 1e-30) for y, *_ in best_points) > 1
        if num > 0 and den > 0:
            slope = num / den
            for j, (y, f0, t0, name, c) in enumerate(best_points):
                if tangents == "best" and j != top:
                    continue
                value = f"expected cost {-y:.3g}" if as_cost else f"yield {y:.3g}"
                mark = ", best" if j == top and len(best_points) > 1 and not tied else ""
                if tied and best_points[j][0] >= best_yield - TIE_RTOL * max(abs(best_yield), 1e-30):
                    mark = ", tied for best"
                label = f"iso-utility line: {name} ({value}{mark})"
                if det:
                    line = t0 + slope * (grid - f0)
                    ax.plot(grid, np.where((line >= 0) & (line <= 1), 1 - line, np.nan), color=c, ls="--",
                            lw=1, label=label)
                elif fpr_scale == "log":  # a straight line of the ROC is a curve on a log axis: draw it by points
                    line = t0 + slope * (grid - f0)
                    ax.plot(grid, np.where((line >= 0) & (line <= 1), line, np.nan), color=c, ls="--", lw=1,
                            label=label)
                else:
                    x_lo, x_hi = max(0.0, f0 - t0 / slope), min(1.0, f0 + (1 - t0) / slope)
                    ax.plot([x_lo, x_hi], [t0 + slope * (x_lo - f0), t0 + slope * (x_hi - f0)], color=c, ls="--",
                            lw=1, label=label)
        else:
            ax.plot([], [], " ", label="no iso-utility line: these utilities do not reward correct decisions")
    if det:
        _probit_axes(ax, lo, hi)
        ax.set_xlabel(_or(frame.xlabel, f"false-positive rate (%): {neg} decided {pos}"))
        ax.set_ylabel(_or(frame.ylabel, f"miss rate (%): {pos} decided {neg}"))
        # Above the chance line, where no better-than-chance system draws (good systems crowd the lower left).
        ax.legend(loc="upper right", fontsize=8)
    elif fpr_scale == "log":
        ax.set_xscale("log")
        ax.set_xlim(fpr_lo, 1)
        tpr_lo = min(float(np.min(t[f >= fpr_lo])) if np.any(f >= fpr_lo) else 0.0 for f, t in zip(fprs, tprs))
        ax.set_ylim(max(0.0, tpr_lo - 0.05 * (1 - tpr_lo)), 1.0 + 0.02 * (1 - tpr_lo))
        ax.set_xlabel(_or(frame.xlabel, f"false-positive rate (log scale): {neg} decided {pos}"))
        ax.set_ylabel(_or(frame.ylabel, f"true-positive rate: {pos} decided {pos}"))
        ax.legend(loc="lower right", fontsize=8)
    else:
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel(_or(frame.xlabel, f"false-positive rate: {neg} decided {pos}"))
        ax.set_ylabel(_or(frame.ylabel, f"true-positive rate: {pos} decided {pos}"))
        ax.legend(loc="lower right", fontsize=8)
    ax.set_title(_or(frame.title, f"{'DET' if det else 'ROC'} (positive class: {pos})"))
    return _finish(fig, frame.path)


# ------------------------------------------------------------------ posteriors

def curve_bands(bands: Any, *, names: Sequence[str] | None = None, frame: Frame = Frame()) -> Figure:
    """ROC or precision-recall curves with their credible bands (:func:`ecjax.prob.curve_band`).

    Each :class:`~ecjax.prob.CurveBand` (one, or a list of the same curve) is drawn as its estimate, the pointwise
    band (darker) and the simultaneous band (lighter: a share ``level`` of the posterior curves lies wholly in it).

    Args:
      bands: a :class:`~ecjax.prob.CurveBand` or a list of them, all ROC or all precision-recall.
      names: a name per band, for the legend.
      frame: :class:`Frame` (title, axis labels, ``ax``, ``path``; no class names).
    """
    frame = _check_frame(frame, "curve_bands")
    bands = [bands] if hasattr(bands, "simultaneous_lower") else list(bands)
    for b in bands:  # one kind of curve on one pair of axes
        v.check_choice(b.curve, "bands[i].curve", (bands[0].curve,))
    roc = bands[0].curve == "roc"
    fig, ax = _figure_and_axes(frame.ax, (5, 4.5))
    for b, color, name in zip(bands, _colors(len(bands)), list(names) if names else [None] * len(bands)):
        g = np.asarray(b.grid)
        ax.fill_between(g, np.asarray(b.simultaneous_lower), np.asarray(b.simultaneous_upper), color=color,
                        alpha=0.15, linewidth=0)
        ax.fill_between(g, np.asarray(b.pointwise_lower), np.asarray(b.pointwise_upper), color=color, alpha=0.35,
                        linewidth=0)
        ax.plot(g, np.asarray(b.estimate), color=color, label=name)
    if roc:
        ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=0.8)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.01)
    ax.set_xlabel(_or(frame.xlabel, "false-alarm rate (FPR)" if roc else "recall (TPR)"))
    ax.set_ylabel(_or(frame.ylabel, "true-positive rate (TPR)" if roc else "precision"))
    level = f"{bands[0].level:.0%}"
    ax.set_title(_or(frame.title, f"{'ROC' if roc else 'precision-recall'}: {level} bands, pointwise (dark) and "
                                  "simultaneous (light)"), fontsize=9)
    if names:
        ax.legend(loc="lower right" if roc else "lower left", fontsize=8)
    return _finish(fig, frame.path)


def yield_posteriors(yields: Any, *, names: Sequence[str] | None = None, p_best: ArrayLike | None = None,
                     hdi: ArrayLike | None = None, hdi_prob: float = 0.9, frame: Frame = Frame()) -> Figure:
    """Histograms of posterior draws of each system's utility yield, with P(best) and highest-density intervals.

    Drawn: one density histogram per system, labelled with P(best) when
    known, and below the histograms one bar per system spanning its HDI
    (the narrowest interval holding ``hdi_prob`` of the draws); the legend
    beside the axes.  With two or more systems (and no ``Frame(ax=...)``) a
    second panel shows the posterior of the leader's yield minus each other
    system's, draw by draw, with ``P(> 0)``: for paired systems (the same
    test samples) the marginals overlap while the differences do not.

    Args:
      yields: ``(draws, M)`` posterior draws, or a :class:`~ecjax.prob.Comparison`
        (its draws, system names, P(best) and HDIs are used).
      p_best: ``(M,)`` probability that each system is the best.
      hdi: ``(M, 2)`` intervals to mark; by default computed from the draws
        with :func:`ecjax.prob.hdi` at ``hdi_prob``.
      frame: :class:`Frame` (title, axis labels, ``ax``, ``path``; no class names).
    """
    frame = _check_frame(frame, "yield_posteriors")
    if hasattr(yields, "yields") and hasattr(yields, "p_best"):
        result = yields
        yields = result.yields
        names = names or list(result.systems)
        p_best = result.p_best if p_best is None else p_best
        if hdi is None:
            hdi, hdi_prob = result.hdi, result.hdi_prob
    y = np.asarray(yields, float)
    m = y.shape[1]
    if hdi is None:
        from ecjax._src.prob import hdi as highest_density_interval

        hdi = highest_density_interval(y, hdi_prob)
    hdi = np.asarray(hdi, float)
    names = names or [f"system {i}" for i in range(m)]
    ax_diff = None
    if frame.ax is None and m >= 2:  # a second panel for the draw-by-draw differences
        fig, (ax, ax_diff) = _plt().subplots(2, 1, figsize=(6.5, 8), layout="constrained")
    else:
        fig, ax = _figure_and_axes(frame.ax, (6, 4))
    bins = np.linspace(y.min(), y.max(), 60)
    colors = _colors(m)
    best = None if p_best is None else np.asarray(p_best, float)
    for i, c in enumerate(colors):
        label = names[i] + (f"  P(best) = {float(best[i]):.3f}" if best is not None else "")
        # matplotlib's stub lists sequences for `bins`, not the arrays that hist documents and accepts.
        ax.hist(y[:, i], bins=bins, density=True, alpha=0.5, color=c, label=label)  # type: ignore[arg-type]
    top = ax.get_ylim()[1]
    step = 0.05 * top
    for i, c in enumerate(colors):
        bar, = ax.plot(hdi[i], [-(i + 1) * step] * 2, color=c, lw=4, solid_capstyle="butt")
        bar.set_gid(f"hdi:{names[i]}")
    ax.plot([], [], color="gray", lw=4, label=f"{100 * hdi_prob:g} % highest-density interval")
    ax.set_ylim(-(m + 1) * step, top)
    ax.set_yticks([t for t in ax.get_yticks() if 0 <= t <= top])
    ax.set_xlabel(_or(frame.xlabel, "utility yield"))
    ax.set_ylabel(_or(frame.ylabel, "posterior density"))
    ax.set_title(_or(frame.title, "Posterior of the utility yield"))
    _legend_below(ax)  # never over a peak (it covered the winner's)
    if ax_diff is not None:
        _difference_panel(ax_diff, y, names, colors)
    return _finish(fig, frame.path)


def _difference_panel(ax, y, names, colors):
    """A second panel: the posterior of the leader's yield minus each other system's, draw by draw.

    Where systems share their test samples (paired) their marginal posteriors overlap although one is better in
    nearly every draw: P(best) comes from these differences, which the marginal histograms cannot show."""
    leader = int(np.argmax(y.mean(0)))
    diffs = [(j, y[:, leader] - y[:, j]) for j in range(y.shape[1]) if j != leader]
    lo, hi = min(float(d.min()) for _, d in diffs), max(float(d.max()) for _, d in diffs)
    bins = np.linspace(min(lo, 0.0), max(hi, 0.0), 60)
    for j, d in diffs:
        label = f"{names[leader]} - {names[j]}: P(> 0) = {float(np.mean(d > 0)):.3f}"
        ax.hist(d, bins=bins, density=True, alpha=0.5, color=colors[j], label=label)  # type: ignore[arg-type]
    ax.axvline(0.0, color="gray", lw=1, ls="--")
    ax.set_xlabel("utility yield of the leader minus each other system, draw by draw")
    ax.set_ylabel("posterior density")
    _legend_below(ax)


def _legend_below(ax):
    """The legend under the axes' x label, outside the data (constrained layout makes room for it)."""
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22), borderaxespad=0.0)


def rank_probabilities(matrix: Any, *, names: Sequence[str] | None = None, frame: Frame = Frame()) -> Figure:
    """Heat map of ``P(system i has rank r)`` (rows: systems, columns: rank 1 = best), annotated.

    Args:
      matrix: ``(M, M)`` probabilities, or a :class:`~ecjax.prob.Comparison`.
      frame: :class:`Frame` (title, axis labels, ``ax``, ``path``; no class names); the y axis has no label
        by default (the systems name its ticks).
    """
    frame = _check_frame(frame, "rank_probabilities")
    if hasattr(matrix, "rank_probabilities"):
        names = names or list(matrix.systems)
        matrix = matrix.rank_probabilities
    p = np.asarray(matrix, float)
    m = p.shape[0]
    names = names or [f"system {i}" for i in range(m)]
    fig, ax = _figure_and_axes(frame.ax, (1.2 * m + 2, 0.8 * m + 1.5))
    ax.imshow(p, vmin=0, vmax=1, cmap="Blues")
    for i in range(m):
        for r in range(p.shape[1]):
            ax.text(r, i, f"{p[i, r]:.2f}", ha="center", va="center", color="white" if p[i, r] > 0.6 else "black")
    ax.set_xticks(range(p.shape[1]), [str(r + 1) for r in range(p.shape[1])])
    ax.set_yticks(range(m), names)
    ax.set_xlabel(_or(frame.xlabel, "rank (1 = best)"))
    if frame.ylabel is not None:
        ax.set_ylabel(frame.ylabel)
    ax.set_title(_or(frame.title, "Rank probabilities"))
    return _finish(fig, frame.path)


def _expected_ranks(rank_probabilities: ArrayLike) -> np.ndarray:
    """``(M,)``: ``E[rank] = sum_r r P(rank = r)`` with ranks ``1..M`` (1 = best) from an ``(M, M)`` matrix."""
    p = np.asarray(rank_probabilities, np.float64)
    return np.sum(p * np.arange(1, p.shape[1] + 1), axis=1)


def _rank_intervals(rank_probabilities: ArrayLike, prob: float) -> np.ndarray:
    """``(M, 2)`` central credible intervals of each system's rank (1 = best): the smallest ranks whose
    cumulative probability reaches ``(1 - prob) / 2`` and ``(1 + prob) / 2``."""
    cdf = np.cumsum(np.asarray(rank_probabilities, np.float64), axis=1)
    tails = np.array([(1 - prob) / 2, (1 + prob) / 2])
    # a small tolerance: the probabilities are shares of draws, and a CDF of 0.95 - 1e-16 reaches 0.95
    return 1 + np.stack([np.argmax(cdf >= t - 1e-12, axis=1) for t in tails], -1)


def _equivalent_pairs(pairwise: ArrayLike, prob: float) -> list[tuple[int, int]]:
    """``(a, b)``, ``a < b``, whose ``P(|difference| <= rope)`` (``pairwise[a, b, 1]``) is at least ``prob``."""
    p = np.asarray(pairwise, np.float64)[..., 1]
    return [(a, b) for a in range(p.shape[0]) for b in range(a + 1, p.shape[0]) if p[a, b] >= prob]


def rank_diagram(result: Any, *, equivalence_prob: float = 0.95, rank_prob: float = 0.9,
                 frame: Frame = Frame()) -> Figure:
    """Critical-difference-style diagram of a Bayesian ranking: expected ranks, their intervals, ROPE bars.

    Drawn: each system at its posterior expected rank ``E[rank] = sum_r r
    P(rank = r)`` (1 = best, from the result's ``rank_probabilities``), on a
    row of its own ordered by that rank, with the central ``rank_prob``
    credible interval of its rank (from the rank's CDF: the smallest ranks
    reaching ``(1 - rank_prob) / 2`` and ``(1 + rank_prob) / 2``) as a line; and
    below the systems one bar for each pair whose difference lies inside the
    ROPE with posterior probability at least ``equivalence_prob``
    (``pairwise[a, b, 1] >= equivalence_prob``),
    joining the two systems' expected ranks: the pairs that are practically
    equivalent.  Unlike Demšar's critical difference, no bar means "not
    shown equivalent", not "different": with ``rope = 0`` there are no bars.

    Args:
      result: a :class:`~ecjax.prob.ResultsComparison` (:func:`~ecjax.prob.compare_results`) or a
        :class:`~ecjax.prob.HierarchicalResultsComparison` (:func:`~ecjax.prob.hierarchical_compare_results`):
        anything with ``systems``, ``rank_probabilities`` ``(M, M)``, ``pairwise`` ``(M, M, 3)`` and ``rope``.
      equivalence_prob: the posterior probability of the ROPE that draws a bar, in ``(0, 1)``.
      rank_prob: mass of the rank intervals, in ``(0, 1)``.
      frame: :class:`Frame` (title, axis labels, ``ax``, ``path``; no class names).
    """
    frame = _check_frame(frame, "rank_diagram")
    equivalence_prob = v.as_scalar(equivalence_prob, "equivalence_prob", low=0.0, high=1.0, strict=True)
    rank_prob = v.as_scalar(rank_prob, "rank_prob", low=0.0, high=1.0, strict=True)
    names = list(result.systems)
    ranks = _expected_ranks(result.rank_probabilities)
    intervals = _rank_intervals(result.rank_probabilities, rank_prob)
    pairs = _equivalent_pairs(result.pairwise, equivalence_prob)
    m = len(names)
    row = np.empty(m, int)
    row[np.argsort(ranks, kind="stable")] = np.arange(m)[::-1]
    fig, ax = _figure_and_axes(frame.ax, (7, 0.45 * (m + len(pairs)) + 1.5))
    for i, c in enumerate(_colors(m)):
        ax.plot(intervals[i], [row[i], row[i]], color=c, lw=2, alpha=0.5, gid=f"rank interval {i}")
        ax.annotate(f"{names[i]} ({ranks[i]:.2f})", (ranks[i], row[i]), xytext=(0, 6), textcoords="offset points",
                    ha="center", fontsize=8)
    ax.scatter(ranks, row, c=_colors(m), zorder=3, gid="expected ranks")
    for j, (a, b) in enumerate(pairs):
        ax.plot([ranks[a], ranks[b]], [-1 - 0.6 * j] * 2, color="black", lw=4, solid_capstyle="round",
                gid=f"equivalent {a} {b}", label=f"P(|difference| <= {result.rope:g}) >= {equivalence_prob:g}"
                if j == 0 else None)
    ax.set_xlim(m + 0.5, 0.5)  # rank 1 on the right, as in critical-difference diagrams
    ax.set_xticks(range(1, m + 1))
    ax.set_yticks([])
    ax.set_ylim(-1 - 0.6 * max(len(pairs), 1), m)
    ax.set_xlabel(_or(frame.xlabel, f"expected rank (1 = best), {int(round(100 * rank_prob))}% rank intervals"))
    if frame.ylabel is not None:
        ax.set_ylabel(frame.ylabel)
    if pairs:
        ax.legend(fontsize=8, loc="lower left")
    ax.set_title(_or(frame.title, "Ranks and practically equivalent pairs"))
    return _finish(fig, frame.path)


def smooth_reliability_diagram(result: Any, *, names: Sequence[str] | None = None,
                               frame: Frame = Frame()) -> Figure:
    """The smooth reliability diagram (Błasiok & Nakkiran 2024): the smoothed outcome against the confidence.

    Drawn: the diagonal; for each system (each class for ``"classwise"``), the
    kernel regression of the outcome on the confidence at the smooth ECE's
    bandwidth (:attr:`~ecjax.SmoothECE.curve`), the smoothed density of the
    confidences as a shaded strip along the bottom, and the smooth ECE in
    the legend.

    Args:
      result: a :class:`~ecjax.SmoothECE` (:func:`ecjax.smooth_ece`).
      names: one per system (or per class, for ``"classwise"``).
      frame: :class:`Frame` (title, axis labels, ``ax``, ``path``; no class names).
    """
    frame = _check_frame(frame, "smooth_reliability_diagram")
    t = np.asarray(result.grid, float)
    curves = np.asarray(result.curve, float).reshape(-1, t.size)
    density = np.asarray(result.density, float).reshape(-1, t.size)
    ece = np.broadcast_to(np.asarray(result.ece, float)[..., None], np.shape(result.bandwidth)).reshape(-1)
    sigma = np.asarray(result.bandwidth, float).reshape(-1)
    names = names or ([""] if len(curves) == 1 else [f"system {i}" for i in range(len(curves))])
    fig, ax = _figure_and_axes(frame.ax, (5, 5))
    ax.plot([0, 1], [0, 1], color="gray", ls="--", lw=0.8)
    for i, c in enumerate(_colors(len(curves))):
        label = f"{names[i]} smECE {ece[i]:.4f} (bandwidth {sigma[i]:.3f})".strip()
        ax.plot(t, curves[i], color=c, lw=1, label=label, gid=f"smooth curve {i}")
        # the density of the confidences, scaled to a strip along the bottom (where the curve is well estimated)
        ax.fill_between(t, 0, 0.15 * density[i] / max(density[i].max(), 1e-300), color=c, alpha=0.25, lw=0)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel(_or(frame.xlabel, "confidence"))
    ax.set_ylabel(_or(frame.ylabel, "smoothed observed frequency"))
    ax.set_title(_or(frame.title, "Smooth reliability diagram"))
    ax.legend(fontsize=8, loc="upper left")
    return _finish(fig, frame.path)


def risk_coverage(result: Any, *, names: Sequence[str] | None = None, frame: Frame = Frame()) -> Figure:
    """Risk-coverage curves of abstention: the selective risk against the coverage, with the AURC.

    Args:
      result: a :class:`~ecjax.RiskCoverageCurve` (:func:`ecjax.risk_coverage_curve`), one curve per system.
      names: one per system.
      frame: :class:`Frame` (title, axis labels, ``ax``, ``path``; no class names).
    """
    frame = _check_frame(frame, "risk_coverage")
    coverage = np.asarray(result.coverage, float).reshape(-1, np.shape(result.coverage)[-1])
    risk = np.asarray(result.risk, float).reshape(coverage.shape)
    aurc = np.asarray(result.aurc, float).reshape(-1)
    names = names or [f"system {i}" for i in range(len(coverage))]
    fig, ax = _figure_and_axes(frame.ax, (6, 4))
    for i, c in enumerate(_colors(len(coverage))):
        ax.step(coverage[i], risk[i], where="post", color=c, label=f"{names[i]} (AURC {aurc[i]:.4f})",
                gid=f"risk coverage {i}")
    ax.set_xlim(0, 1)
    ax.set_xlabel(_or(frame.xlabel, "coverage (share of samples decided)"))
    ax.set_ylabel(_or(frame.ylabel, "selective risk (error rate of the decided)"))
    ax.set_title(_or(frame.title, "Risk-coverage curves"))
    ax.legend(fontsize=8)
    return _finish(fig, frame.path)


# ---------------------------------------------------------------------- sweeps

# The two corners of [-1, 1]^2 outside the hexagon |x - y| <= 1 (see winner_map).
INFEASIBLE_CORNERS = (((0.0, -1.0), (1.0, -1.0), (1.0, 0.0)), ((-1.0, 0.0), (-1.0, 1.0), (0.0, 1.0)))


def winner_map(x: Any, y: ArrayLike | None = None, winners: ArrayLike | None = None, *,
               names: Sequence[str] | None = None, frame: Frame = Frame()) -> Figure:
    """Every binary evaluation problem as a point, coloured by the system of highest utility yield there.

    After the yield-preserving rescaling of a binary utility matrix to
    ``[0, 1]``, two numbers are left (the plane of Dyrland, Lundervold and
    Porta Mana, Fig. 1 and eq. 13, with rows = true class):

    * ``x = U11 - U00``: how much more a correct class-1 decision is worth
      than a correct class-0 one (right: class 1 matters more);
    * ``y = U10 - U01``: the worth of a missed class 1 minus that of a false
      alarm on class 0 (up: misses hurt less than false alarms).

    ``(0, 0)`` is accuracy.  Drawn: the winner at each grid point (grey where
    several systems tie, typically all making the same naive decision), the
    share of the feasible area each wins in the legend, and the two hatched
    corners ``|x - y| > 1``, which are no utility matrix: there an error
    would be worth more than a correct decision.

    Args:
      x, y: ``(nx,)`` and ``(ny,)`` grid coordinates, or ``x`` a
        :class:`~ecjax.sweep.UtilitySpaceMap` (then ``y``, ``winners`` are not given).
      winners: ``(ny, nx)`` index of the winning system; ``-2`` where the
        best value is shared (a tie); ``-1`` outside the feasible hexagon.
      frame: :class:`Frame` (title, axis labels, class names, ``ax``, ``path``);
        the class names are ``(class 0, class 1)``, for the axis labels.
    """
    frame = _check_frame(frame, "winner_map", names_classes=True)
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Polygon

    if y is None and winners is None:
        x, y, winners = x.x, x.y, x.winners
        if winners is None:
            raise v.InputError("this UtilitySpaceMap kept no per-point winners: nothing to draw")
    x, y, w = np.asarray(x, float), np.asarray(y, float), np.asarray(winners)
    m = int(w.max()) + 1 if names is None else len(names)
    names = names or [f"system {i}" for i in range(m)]
    neg, pos = _class_names(frame.class_names)
    colors = _colors(m)
    tie_colour = (0.75, 0.75, 0.75, 1.0)
    # Shift so that ties (-2) map to colour 0 and system i to colour i + 1; outside (-1) is masked.
    img = np.ma.masked_where(w == -1, np.where(w == -2, 0, w + 1))
    fig, ax = _figure_and_axes(frame.ax, (5.5, 6.5))
    # Grid points are pixel centres: the image reaches half a step beyond the first and last.
    dx = (x[-1] - x[0]) / max(len(x) - 1, 1) / 2
    dy = (y[-1] - y[0]) / max(len(y) - 1, 1) / 2
    ax.imshow(img, origin="lower", extent=(x[0] - dx, x[-1] + dx, y[0] - dy, y[-1] + dy),
              cmap=ListedColormap([tie_colour] + colors), vmin=-0.5, vmax=m + 0.5, interpolation="nearest",
              aspect="equal")
    inside = w != -1
    for i, c in enumerate(colors):
        share = np.mean(w[inside] == i) if np.any(inside) else 0.0
        ax.plot([], [], "s", color=c, label=f"{names[i]} ({100 * share:.1f} %)")
    if np.any(w == -2):
        ax.plot([], [], "s", color=tie_colour, label=f"tie ({100 * np.mean(w[inside] == -2):.1f} %)")
    for j, corner in enumerate(INFEASIBLE_CORNERS):
        ax.add_patch(Polygon(corner, closed=True, facecolor="none", edgecolor="0.5", hatch="//", lw=0.5,
                             label="not a utility matrix: an error worth\nmore than a correct decision"
                             if j == 0 else None))
    ax.plot(0, 0, "k+", label="accuracy (equal utilities)")
    ax.set_xlim(x[0] - dx, x[-1] + dx)
    ax.set_ylim(y[0] - dy, y[-1] + dy)
    ax.set_xlabel(_or(frame.xlabel, f"x: worth of a correct {pos} decision\nminus that of a correct {neg} one"))
    ax.set_ylabel(_or(frame.ylabel, f"y: worth of a missed {pos}\nminus that of a false alarm"))
    ax.set_title(_or(frame.title, "Winner over the utility space"))
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    return _finish(fig, frame.path)


def metric_vs_yield(yields: ArrayLike, metric_values: ArrayLike, *, metric_name: str = "metric",
                    labels: Sequence[str] | None = None, frame: Frame = Frame()) -> Figure:
    """Scatter of a popular metric against the utility yield (Dyrland, Lundervold and Porta Mana, Figs. 2 and 6).

    Points where the two order pairs differently are what the paper warns
    about.  With ``MIN_POINTS_FOR_RANK_CORRELATION`` points or more the
    Spearman rank correlation (ties at their average rank) is shown in the
    title; below that it is omitted (with two systems it is always +-1 and
    says nothing).  ``labels`` names the points (systems), if few.

    Args:
      frame: :class:`Frame` (title, axis labels, ``ax``, ``path``; no class names); by default the y label is
        ``metric_name`` and the title names it.
    """
    frame = _check_frame(frame, "metric_vs_yield")
    a, b = np.asarray(yields, float).ravel(), np.asarray(metric_values, float).ravel()
    fig, ax = _figure_and_axes(frame.ax, (5, 4))
    ax.scatter(a, b, s=6 if labels is None else 30, alpha=0.5 if labels is None else 0.9)
    middle = (np.nanmin(a) + np.nanmax(a)) / 2 if a.size else 0.0
    for name, xa, yb in zip(labels or [], a, b):
        # Labels point towards the middle, so that a long name at the right edge is not cut off by the figure.
        right = xa > middle
        ax.annotate(str(name), (xa, yb), textcoords="offset points", xytext=(-4 if right else 4, 4), fontsize=8,
                    ha="right" if right else "left")
    if labels:
        ax.margins(x=0.15, y=0.12)
    ax.set_xlabel(_or(frame.xlabel, "utility yield"))
    ax.set_ylabel(_or(frame.ylabel, metric_name))
    title = frame.title
    if title is None:
        title = f"{metric_name} vs utility yield"
        if len(a) >= MIN_POINTS_FOR_RANK_CORRELATION:
            from scipy.stats import rankdata  # ties at their average rank

            rho = np.corrcoef(rankdata(a), rankdata(b))[0, 1]
            title += f" (Spearman {rho:.2f})"
    ax.set_title(title)
    return _finish(fig, frame.path)


def sweep_curves(x: Any, values: ArrayLike | None = None, *, names: Sequence[str] | None = None,
                 log_x: bool = False, flips: Sequence[float] | None = None, yscale: str = "auto",
                 frame: Frame = Frame()) -> Figure:
    """Each system's metric along a one-dimensional sweep, with the points where rankings flip marked.

    Drawn: one curve per system, a dotted vertical line at each flip, and for
    NECs (a ``SweepResult`` of NECs, or a y label that names the NEC) the
    naive level 1.  With ``yscale="auto"`` NEC curves that rise beyond
    ``EXPLODES_AT`` get a y-axis linear up to 1 and logarithmic above.

    Args:
      x: ``(P,)`` swept coordinate (a cost ratio, an effective prior, ...), or
        a one-dimensional :class:`~ecjax.sweep.SweepResult` kept with its
        values (its coordinates, values and, unless ``flips`` is given,
        flip points are used).
      values: ``(P, M)`` metric of each system at each point.
      flips: x positions where the order of two systems reverses (vertical lines).
      frame: :class:`Frame` (title, axis labels, ``ax``, ``path``; no class names); the default x label is
        "swept parameter", the default y label "NEC".
    """
    frame = _check_frame(frame, "sweep_curves")
    ylabel = _or(frame.ylabel, "NEC")
    is_nec = "NEC" in ylabel
    if values is None:
        result = x
        if result.values is None or not result.coords or result.coords[0] is None or len(result.shape) != 1:
            raise v.InputError("sweep_curves needs a one-dimensional SweepResult with its values and coordinates")
        x, values, is_nec = np.asarray(result.coords[0]), result.values, result.metric == "nec"
        if flips is None:
            s = np.shape(values)[1]
            flips = [float(x[i[0]]) for a in range(s) for b in range(a + 1, s) for i in result.flip_points(a, b)]
    xs, vals = np.asarray(x, float), np.asarray(values, float)
    names = names or [f"system {i}" for i in range(vals.shape[1])]
    fig, ax = _figure_and_axes(frame.ax, (6, 4))
    for i, c in enumerate(_colors(vals.shape[1])):
        ax.plot(xs, vals[:, i], color=c, label=names[i])
    for j, f in enumerate(flips or ()):
        ax.axvline(f, color="gray", ls=":", lw=0.8, label="ranking flips" if j == 0 else None)
    if is_nec:
        ax.axhline(1.0, color="gray", lw=0.8, label="naive decision (no scores)")
    scale = _apply_yscale(ax, vals, 1.0 if is_nec else 0.0, yscale)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(_or(frame.xlabel, "swept parameter"))
    ax.set_ylabel(ylabel + (_scale_note(scale, 1.0, True) if is_nec else ""))
    ax.set_title(_or(frame.title, "Sensitivity sweep"))
    ax.legend(fontsize=8)
    return _finish(fig, frame.path)
