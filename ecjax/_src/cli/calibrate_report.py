"""What ``calibrate`` reports of --scores with --labels: proper scores and calibration errors before and after
calibration, and reliability diagrams."""

from __future__ import annotations

from pathlib import Path

from ecjax._src.cli.files import Run
from ecjax._src.inputs import LIKELIHOOD_TYPES, canonical_scores
from ecjax._src.scores.inputs import class_frequencies


def before_after(args, run: Run, st, out_type, test, out, labels, record, out_dir, weights):
    """Cross-entropy and Brier score of --scores before and after calibration, and reliability diagrams.

    ``test``: the canonical scores of --scores (:class:`ecjax.inputs.Scores`, checked once); ``out``, the calibrated
    scores, is made canonical here, once, for every measure of the report."""
    from ecjax._src import plots
    from ecjax._src.scores import brier, cross_entropy
    from ecjax._src.scores.smooth_calibration_error import smooth_ece

    # Likelihood-type scores need priors to become posteriors: the labels' class frequencies, for both sides.
    data_priors = class_frequencies(labels, test.num_classes, weights)
    sides = {"before": (test, st), "after": (canonical_scores(out, score_type=out_type), out_type)}
    prior = {t: data_priors if t in LIKELIHOOD_TYPES else None for t in (st, out_type)}
    scores = {}
    for name, fn in (("xe", cross_entropy), ("brier", brier)):
        scores[name] = {side: float(fn(labels, s, priors=prior[t], score_type=t, sample_weight=weights))
                        for side, (s, t) in sides.items()}
        before, after = scores[name]["before"], scores[name]["after"]
        scores[name]["loss"] = before - after
        scores[name]["refinement"] = after  # what calibration cannot remove (Ferrer & Ramos 2025)
        scores[name]["relative_loss_percent"] = 100.0 * (before - after) / before if before > 0 else 0.0
    record["cross_entropy"], record["brier"] = scores["xe"], scores["brier"]
    if args.calibration_errors:
        record["calibration_errors"] = _calibration_errors(sides, labels, prior, weights)
    record["relative_calibration_loss_percent"] = {m: scores[m]["relative_loss_percent"] for m in ("xe", "brier")}
    if out_dir is not None:
        for side, (s, t) in sides.items():
            fig = plots.reliability_diagram(labels=labels, scores=s, priors=prior[t], score_type=t,
                                            sample_weight=weights,
                                            frame=plots.Frame(title=f"{Path(args.scores).name}: {side} calibration"))
            record.setdefault("files", []).append(run.save_figure(fig, out_dir / f"reliability_{side}.png"))
            if args.calibration_errors:  # the smooth ECE's diagram, beside the binned one
                fig = plots.smooth_reliability_diagram(
                    smooth_ece(labels, s, priors=prior[t], score_type=t, sample_weight=weights),
                    frame=plots.Frame(title=f"{Path(args.scores).name}: {side} calibration (smooth)"))
                record["files"].append(run.save_figure(fig, out_dir / f"smooth_reliability_{side}.png"))
    return scores


# (name, norm, variant, binning) of the binned calibration errors of --calibration-errors (15 bins each).
CALIBRATION_ERRORS = (("ECE", "l1", "auto", "equal_width"), ("MCE", "max", "auto", "equal_width"),
                      ("RMS", "l2", "auto", "equal_width"), ("classwise ECE", "l1", "classwise", "equal_width"),
                      ("adaptive (ACE)", "l1", "classwise", "equal_mass"))


def _calibration_errors(sides, labels, prior, weights):
    """``{name: {"before": x, "after": y}}`` for :data:`CALIBRATION_ERRORS` and the smooth ECE."""
    from ecjax._src.scores.calibration_errors import binned_calibration_error
    from ecjax._src.scores.smooth_calibration_error import smooth_ece

    errors = {name: {side: float(binned_calibration_error(labels, s, norm=norm, variant=variant, binning=binning,
                                                          priors=prior[t], score_type=t, sample_weight=weights))
                     for side, (s, t) in sides.items()}
              for name, norm, variant, binning in CALIBRATION_ERRORS}
    # No bins: the kernel's bandwidth is set by the data (Blasiok & Nakkiran 2024).
    errors["smooth ECE"] = {side: float(smooth_ece(labels, s, priors=prior[t], score_type=t,
                                                   sample_weight=weights).ece) for side, (s, t) in sides.items()}
    return errors
