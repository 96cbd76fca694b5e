"""What ``ecjax sweep`` reports of a sweep over cost ratios or random cost matrices: the priors it used, where
rankings flip, who wins where, and the figure of each system's sorted NEC."""

from __future__ import annotations

import numpy as np


def priors_line(priors, source, classes):
    """One line when every system uses the same priors, else one per system."""
    def fmt(p):
        return ", ".join(f"{c}: {float(x):.3g}" for c, x in zip(classes, p))

    rows = list(priors.values())
    if all(np.allclose(p, rows[0], rtol=0, atol=1e-12) for p in rows):
        return [f"priors ({source}): {fmt(rows[0])}"]
    return [f"priors ({source}):"] + [f"  {n}: {fmt(p)}" for n, p in priors.items()]


def winner_name(w, names):
    from ecjax._src.sweep import TIE

    return names[w] if w >= 0 else "tie" if w == TIE else None


def cost_ratio_report(res, ratios, names, spec, lo, hi, record, lines):
    """Who wins on each stretch of cost ratios, and the grid that resolves the boundaries."""
    n = len(ratios)
    step = 100 * ((hi / lo) ** (1 / (n - 1)) - 1)
    neg, pos = spec.classes[0], spec.classes[1]
    lines.insert(0, f"cost ratio r = c10 / c01: the cost of deciding {spec.decisions[0]!r} for a true {pos!r}, "
                    f"over that of deciding {spec.decisions[1]!r} for a true {neg!r}")
    lines.insert(1, f"grid: {n} values of r from {lo:g} to {hi:g}, evenly spaced on a log scale "
                    f"(each {step:.3g} % above the previous)")
    runs = res.winner_runs()
    lines.append("who wins where (each boundary lies between the two grid values shown around it):")
    for first, last, w in runs:
        lines.append(f"  r from {ratios[first]:.4g} to {ratios[last]:.4g}: "
                     + (names[w] if w >= 0 else "tie (same NEC: often all make the naive decision)"))
    record["grid"] = {"parameter": "cost_ratio", "lo": lo, "hi": hi, "num_points": n, "spacing": "log",
                      "values": ratios.tolist()}
    record["winner_intervals"] = [{"from": float(ratios[a]), "to": float(ratios[b]),
                                   "winner": winner_name(w, names)} for a, b, w in runs]


def cost_ratio_flips(args, run, s, res, record, lines, out_dir):
    """--over cost-ratio: where each pair's ranking flips and who wins where, into ``record`` and ``lines``."""
    from ecjax._src import plots

    names = s.names
    ratios = np.asarray(res.coords[0], dtype=np.float64)
    flips = {}
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            idx = res.flip_points(a, b)
            if len(idx):
                flips[f"{names[a]} / {names[b]}"] = [float(ratios[i[0]]) for i in idx]
    record["flips_at_cost_ratio"] = flips
    for pair, at in flips.items():
        lines.append(f"  ranking of {pair} flips at cost ratio " + ", ".join(f"{r:.3g}" for r in at))
    cost_ratio_report(res, ratios, names, s.spec, args.lo, args.hi, record, lines)
    if out_dir is not None:
        fig = plots.sweep_curves(ratios, res.values, names=names, log_x=True,
                                 flips=[r for at in flips.values() for r in at], frame=plots.Frame(
                                     xlabel=f"cost of a missed {s.spec.classes[1]} / cost of a false alarm",
                                     ylabel="NEC"))
        record.setdefault("files", []).append(run.save_figure(fig, out_dir / "sweep_cost_ratio.png"))


def sorted_nec_figure(s, res):
    """--over matrices: each system's NEC sorted over the draws (its quantile curve): lower is better everywhere;
    who wins on the same matrix is in the legend, since sorting separates the pairs."""
    from ecjax._src import plots

    values = np.sort(np.asarray(res.values, dtype=np.float64), axis=0)
    return plots.sweep_curves((np.arange(s.resolution) + 0.5) / s.resolution, values,
                              names=[f"{n} (best on {100 * float(w):.1f} % of the matrices)"
                                     for n, w in zip(s.names, res.win_fraction)],
                              frame=plots.Frame(xlabel="fraction of the drawn cost matrices (each system's NEC sorted)",
                                                ylabel="NEC (lower is better)",
                                                title=f"NEC over {s.resolution} random cost matrices"))
