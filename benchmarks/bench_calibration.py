"""Calibration benchmark (DESIGN.md table, row 4): 5-fold cross-validated affine calibration.

ecjax (`ecjax.calibration.calibrate_cross_validated`: optax L-BFGS, all folds
in one compiled, vmapped function) against psrcal through
`expected_cost.calibration.calibration_with_crossval` (scipy L-BFGS-B on torch,
one fold after the other), in one process, on the same scores:

1. 10^4 x 100 simulated log-posteriors (ecjax.simulate.calibration_study,
   K = 100, the miscalibrated "Datap-mc1" posteriors);
2. the three CIFAR-10 systems of ../shared/data (10^4 x 10 logits each).

The folds differ (sklearn's StratifiedKFold vs ecjax's keyed folds), so the
script also prints the cross-entropy of both calibrated outputs: they must
agree closely.  ecjax's first call (compilation included) and its steady
state (median of --repeats runs) are reported separately.

    python benchmarks/bench_calibration.py          # full size
    python benchmarks/bench_calibration.py --tiny   # CI smoke run
"""

from __future__ import annotations

import numpy as np

import jax

from ecjax import simulate
from ecjax.calibration import calibrate_cross_validated
from ecjax.scores import cross_entropy
from expected_cost.calibration import calibration_with_crossval

from _common import DATA, HEADER, load, machine, parser, row, time_call, time_jax


def log_softmax(s):
    s = s - s.max(1, keepdims=True)
    return s - np.log(np.exp(s).sum(1, keepdims=True))


def bench(name, logpost, labels, repeats, key):
    def ours(lp):
        return calibrate_cross_validated(lp, labels, key=key, num_folds=5, method="affine").scores

    first, steady, out = time_jax(ours, logpost, repeats=repeats)
    anchor_s, ref = time_call(lambda: calibration_with_crossval(logpost, labels, seed=0, nfolds=5))
    xe_ours = float(cross_entropy(labels, np.asarray(out, np.float64)))
    xe_ref = float(cross_entropy(labels, ref))
    note = f"XE after calibration: ecjax {xe_ours:.5f}, psrcal {xe_ref:.5f}"
    return row(name, anchor_s, first, steady, note)


def main():
    args = parser(__doc__.splitlines()[0]).parse_args()
    n, k = (500, 10) if args.tiny else (10_000, 100)
    key = jax.random.key(0)
    study = simulate.calibration_study(jax.random.key(1), k, num_samples=n)
    rows = []
    lp = np.asarray(study.posteriors[("Datap", "mc1")], np.float32)
    rows.append(bench(f"5-fold CV affine calibration, {n} x {k} simulated", lp, np.asarray(study.labels),
                      args.repeats, key))
    systems = ["cifar10_resnet-20"] if args.tiny else ["cifar10_resnet-20", "cifar10_repvgg_a2", "cifar10_vgg19_bn"]
    for system in systems:
        if not (DATA / system).is_dir():
            print(f"(skipping {system}: {DATA / system} not found)")
            continue
        scores, targets = load(system)
        if args.tiny:
            scores, targets = scores[:1000], targets[:1000]
        lp = log_softmax(scores.astype(np.float64)).astype(np.float32)
        rows.append(bench(f"5-fold CV affine calibration, {system} ({lp.shape[0]} x {lp.shape[1]})", lp,
                          targets.astype(np.int64), args.repeats, key))
    print(f"machine: {machine()}")
    print(HEADER)
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
