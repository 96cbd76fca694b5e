"""Figures (matplotlib, headless).

Each function draws from arrays that other ecjax modules compute, returns the
``matplotlib.figure.Figure`` and, given ``path``, also saves it (PNG by
suffix).  Import cost is paid only here: matplotlib is an optional
dependency (``pip install "ecjax[plots]"``).
"""

from __future__ import annotations

import numpy as np


def _plt():
    try:
        import matplotlib
    except ImportError as err:  # pragma: no cover - exercised only without matplotlib
        raise ImportError('ecjax.plots needs matplotlib: pip install "ecjax[plots]"') from err
    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "ps", "cairo"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _finish(fig, path):
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def _colors(n):
    plt = _plt()
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def reliability_diagram(bin_confidence, bin_accuracy, bin_count, *, title="Reliability diagram",
                        xlabel="confidence (binary: posterior of class 1)", path=None):
    """Accuracy against confidence per bin, with the diagonal of perfect calibration.

    Args:
      bin_confidence, bin_accuracy, bin_count: ``(B,)`` mean confidence,
        observed frequency and number of samples of each bin (empty bins are
        skipped), as computed for the ECE (seed 002 eqs. 62-63).
    """
    plt = _plt()
    conf, acc, n = (np.asarray(a, float) for a in (bin_confidence, bin_accuracy, bin_count))
    keep = n > 0
    fig, (ax, ax_n) = plt.subplots(2, 1, figsize=(5, 6), gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    ax.plot([0, 1], [0, 1], ls="--", color="gray", label="perfect calibration")
    ax.plot(conf[keep], acc[keep], marker="o", label="observed")
    ax.set_ylabel("observed frequency")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(loc="upper left")
    ax_n.bar(conf[keep], n[keep], width=0.9 / max(1, keep.sum()), color="gray")
    ax_n.set_xlabel(xlabel)
    ax_n.set_ylabel("samples")
    return _finish(fig, path)


def cost_vs_threshold(thresholds, ec, *, bayes_threshold=None, optimal_threshold=None, normalized=True,
                      title="Expected cost against threshold", path=None):
    """EC (or NEC) of thresholded binary scores, with the Bayes and the optimal thresholds marked (seed 002 Fig. 3)."""
    plt = _plt()
    t, e = np.asarray(thresholds, float), np.asarray(ec, float)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(t, e, color="C0", label="NEC" if normalized else "EC")
    if bayes_threshold is not None:
        ax.axvline(bayes_threshold, color="C1", ls="--", label=f"Bayes threshold {bayes_threshold:.3g}")
    if optimal_threshold is not None:
        ax.axvline(optimal_threshold, color="C2", ls=":", label=f"optimal threshold {optimal_threshold:.3g}")
    if normalized:
        ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_xlabel("threshold on the log-odds score")
    ax.set_ylabel("normalized expected cost" if normalized else "expected cost")
    ax.set_title(title)
    ax.legend()
    return _finish(fig, path)


def bayes_risk_curves(prior_log_odds, actual, minimum, *, names=None, title="Bayes-risk curves", path=None):
    """Normalized EC of Bayes decisions (solid) and of the best threshold (dashed) against the effective prior log-odds.

    Args:
      prior_log_odds: ``(P,)`` effective prior log-odds.
      actual, minimum: ``(P,)`` or ``(M, P)`` normalized ECs.
    """
    plt = _plt()
    x = np.asarray(prior_log_odds, float)
    act, mn = np.atleast_2d(actual), np.atleast_2d(minimum)
    names = names or [f"system {i}" for i in range(act.shape[0])]
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, (a, m, c) in enumerate(zip(act, mn, _colors(len(act)))):
        ax.plot(x, a, color=c, label=f"{names[i]} (actual)")
        ax.plot(x, m, color=c, ls="--", label=f"{names[i]} (minimum)")
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_xlabel("effective prior log-odds")
    ax.set_ylabel("normalized expected cost")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _finish(fig, path)


def roc_with_iso_utility(fpr, tpr, *, utilities=None, priors=None, names=None, title="ROC", path=None):
    """ROC curves; with a utility matrix, the iso-utility line tangent to the best curve (seed 004 Fig. 8).

    The utility yield is linear in (FPR, TPR) (seed 004 eqs. 20-25):
    ``P0 (U00 (1 - FPR) + U01 FPR) + P1 (U10 (1 - TPR) + U11 TPR)``, so its
    level sets are lines of slope ``P0 (U00 - U01) / (P1 (U11 - U10))``.
    Each curve is marked at its point of highest yield, and the iso-utility
    line through the best of those points is drawn.

    Args:
      fpr, tpr: ``(T,)`` arrays or lists of them, one per system.
      utilities: ``(2, 2)`` utility matrix, rows = true class.
      priors: ``(2,)`` class priors (required with ``utilities``).
    """
    plt = _plt()
    fprs = [np.asarray(fpr, float)] if np.ndim(fpr[0]) == 0 else [np.asarray(f, float) for f in fpr]
    tprs = [np.asarray(tpr, float)] if np.ndim(tpr[0]) == 0 else [np.asarray(t, float) for t in tpr]
    names = names or [f"system {i}" for i in range(len(fprs))]
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], color="gray", lw=0.8, ls=":")
    best = None
    for f, t, name, c in zip(fprs, tprs, names, _colors(len(fprs))):
        ax.plot(f, t, color=c, label=name)
        if utilities is not None:
            u, p = np.asarray(utilities, float), np.asarray(priors, float)
            y = p[0] * (u[0, 0] * (1 - f) + u[0, 1] * f) + p[1] * (u[1, 0] * (1 - t) + u[1, 1] * t)
            i = int(np.argmax(y))
            ax.plot(f[i], t[i], "o", color=c)
            if best is None or y[i] > best[0]:
                best = (y[i], f[i], t[i])
    if utilities is not None and best is not None:
        u, p = np.asarray(utilities, float), np.asarray(priors, float)
        slope = p[0] * (u[0, 0] - u[0, 1]) / (p[1] * (u[1, 1] - u[1, 0]))
        xs = np.linspace(0, 1, 50)
        ax.plot(xs, best[2] + slope * (xs - best[1]), color="k", ls="--", lw=1,
                label=f"iso-utility line (yield {best[0]:.3g})")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("false-positive rate")
    ax.set_ylabel("true-positive rate")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    return _finish(fig, path)


def yield_posteriors(yields, *, names=None, p_best=None, title="Posterior of the utility yield", path=None):
    """Histograms of posterior draws of each system's utility yield, labelled with P(best).

    Args:
      yields: ``(draws, M)`` posterior draws.
      p_best: ``(M,)`` probability that each system is the best.
    """
    plt = _plt()
    y = np.asarray(yields, float)
    m = y.shape[1]
    names = names or [f"system {i}" for i in range(m)]
    fig, ax = plt.subplots(figsize=(6, 4))
    bins = np.linspace(y.min(), y.max(), 60)
    for i, c in enumerate(_colors(m)):
        label = names[i] + (f"  P(best) = {float(p_best[i]):.3f}" if p_best is not None else "")
        ax.hist(y[:, i], bins=bins, density=True, alpha=0.5, color=c, label=label)
    ax.set_xlabel("utility yield")
    ax.set_ylabel("posterior density")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _finish(fig, path)


def rank_probabilities(matrix, *, names=None, title="Rank probabilities", path=None):
    """Heat map of ``P(system i has rank r)`` (rows: systems, columns: rank 1 = best), annotated."""
    plt = _plt()
    p = np.asarray(matrix, float)
    m = p.shape[0]
    names = names or [f"system {i}" for i in range(m)]
    fig, ax = plt.subplots(figsize=(1.2 * m + 2, 0.8 * m + 1.5))
    ax.imshow(p, vmin=0, vmax=1, cmap="Blues")
    for i in range(m):
        for r in range(p.shape[1]):
            ax.text(r, i, f"{p[i, r]:.2f}", ha="center", va="center", color="white" if p[i, r] > 0.6 else "black")
    ax.set_xticks(range(p.shape[1]), [str(r + 1) for r in range(p.shape[1])])
    ax.set_yticks(range(m), names)
    ax.set_xlabel("rank (1 = best)")
    ax.set_title(title)
    return _finish(fig, path)


def winner_map(x, y, winners, *, names=None, title="Winner over the utility space", path=None):
    """Utility-space map (seed 004 Fig. 1 coordinates): each point coloured by the winning system.

    Args:
      x, y: ``(nx,)`` and ``(ny,)`` grid coordinates (seed 004 eq. 13).
      winners: ``(ny, nx)`` index of the winning system; ``-2`` where the
        best value is shared (a tie, drawn grey: typically every system makes
        the naive decision there); ``-1`` outside the admissible hexagon
        ``|x - y| <= 1`` (left blank).
    """
    plt = _plt()
    from matplotlib.colors import ListedColormap

    w = np.asarray(winners)
    m = int(w.max()) + 1 if names is None else len(names)
    names = names or [f"system {i}" for i in range(m)]
    colors = _colors(m)
    tie_colour = (0.75, 0.75, 0.75, 1.0)
    # Shift so that ties (-2) map to colour 0 and system i to colour i + 1; outside (-1) is masked.
    img = np.ma.masked_where(w == -1, np.where(w == -2, 0, w + 1))
    fig, ax = plt.subplots(figsize=(5.5, 5))
    ax.imshow(img, origin="lower", extent=(x[0], x[-1], y[0], y[-1]), cmap=ListedColormap([tie_colour] + colors),
              vmin=-0.5, vmax=m + 0.5, interpolation="nearest", aspect="equal")
    inside = w != -1
    for i, c in enumerate(colors):
        share = np.mean(w[inside] == i) if np.any(inside) else 0.0
        ax.plot([], [], "s", color=c, label=f"{names[i]} ({100 * share:.1f} %)")
    if np.any(w == -2):
        ax.plot([], [], "s", color=tie_colour, label=f"tie ({100 * np.mean(w[inside] == -2):.1f} %)")
    ax.plot(0, 0, "k+", label="accuracy (identity utilities)")
    ax.set_xlabel("x (seed 004 eq. 13)")
    ax.set_ylabel("y (seed 004 eq. 13)")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left")
    return _finish(fig, path)


def metric_vs_yield(yields, metric_values, *, metric_name="metric", labels=None, title=None, path=None):
    """Scatter of a popular metric against the utility yield (seed 004 Figs. 2 and 6).

    Points where the two rank pairs differently are what the seed warns about;
    the Spearman rank correlation is shown in the title.  ``labels`` names
    the points (systems), if few.
    """
    plt = _plt()
    a, b = np.asarray(yields, float).ravel(), np.asarray(metric_values, float).ravel()
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    rho = np.corrcoef(ra, rb)[0, 1] if len(a) > 1 else np.nan
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.scatter(a, b, s=6 if labels is None else 30, alpha=0.5 if labels is None else 0.9)
    for name, xa, yb in zip(labels or [], a, b):
        ax.annotate(str(name), (xa, yb), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel("utility yield")
    ax.set_ylabel(metric_name)
    ax.set_title(title or f"{metric_name} vs utility yield (Spearman {rho:.2f})")
    return _finish(fig, path)


def sweep_curves(x, values, *, names=None, xlabel="swept parameter", ylabel="NEC", log_x=False, flips=(),
                 title="Sensitivity sweep", path=None):
    """Each system's metric along a one-dimensional sweep, with the points where rankings flip marked.

    Args:
      x: ``(P,)`` swept coordinate (a cost ratio, an effective prior, ...).
      values: ``(P, M)`` metric of each system at each point.
      flips: x positions where the order of two systems reverses (vertical lines).
    """
    plt = _plt()
    xs, vals = np.asarray(x, float), np.asarray(values, float)
    names = names or [f"system {i}" for i in range(vals.shape[1])]
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, c in enumerate(_colors(vals.shape[1])):
        ax.plot(xs, vals[:, i], color=c, label=names[i])
    for j, f in enumerate(flips):
        ax.axvline(f, color="gray", ls=":", lw=0.8, label="ranking flips" if j == 0 else None)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _finish(fig, path)
