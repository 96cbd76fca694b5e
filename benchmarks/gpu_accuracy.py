"""Accuracy with the default settings on whatever backend JAX sees, against float64 numpy (benchmarks/gpu_check.sh).

Each check prints ``ok``/``FAIL``, what it compared and the largest error; the last line counts the checks that
pass, and the exit status is 1 when one fails.

1. Bayes decisions of the three CIFAR-10 systems for 3 random cost matrices: no disagreement with float64 outside
   the float32 tie band (two best expected costs within ``2 K 2^-24 max|c|``, where float32 in any summation
   order may pick either);
2. the EC of Bayes decisions over many cost matrices (CIFAR-10 ResNet-20, and synthetic 100-class logits):
   relative error against float64 decisions, which in the tie band are taken to be ecjax's own;
3. the NEC of the 3 systems over many cost matrices (broadcast);
4. ``sweep_counts`` over the same user cost matrices: the NEC and the winner counts.

    python benchmarks/gpu_accuracy.py [--size tiny|small|full]
"""

from __future__ import annotations

import sys

import numpy as np

import jax

import ecjax
from ecjax.sweep import SweepSettings, sweep_counts

from _common import load, machine, parser

SYSTEMS = ["cifar10_resnet-20", "cifar10_repvgg_a2", "cifar10_vgg19_bn"]


def posteriors64(logits):
    z = logits.astype(np.float64)
    z = np.exp(z - z.max(1, keepdims=True))
    return z / z.sum(1, keepdims=True)


def random_costs(rng, b, k):
    return rng.uniform(0.1, 10.0, (b, k, k)) * (1 - np.eye(k))


def ties_and_decisions64(post, costs):
    """``(tie, decision)``: float64 Bayes decisions and the samples inside the float32 tie band."""
    e = post @ costs
    part = np.sort(e, axis=1)
    band = 2 * costs.shape[0] * 2.0**-24 * np.abs(costs).max()
    return part[:, 1] - part[:, 0] <= band, np.argmin(e, axis=1)


def report(ok, text, results):
    results.append(bool(ok))
    print(f"{'ok  ' if ok else 'FAIL'} {text}", flush=True)


def check_decisions(rng, results):
    for name in SYSTEMS:
        scores, targets = load(name)
        post = posteriors64(scores)
        costs = random_costs(rng, 3, scores.shape[1])
        dec = np.asarray(ecjax.bayes_decisions(scores.astype(np.float32), costs.astype(np.float32),
                                               score_type="logits"))
        bad = ties = 0
        for b in range(3):
            tie, ref = ties_and_decisions64(post, costs[b])
            bad += int(np.sum((dec[b] != ref) & ~tie))
            ties += int(tie.sum())
        report(bad == 0, f"{name} Bayes decisions (3 cost matrices): {bad} disagreements with float64 outside "
                         f"the float32 tie band ({ties} samples in it)", results)


def check_bayes_ec(label, scores, targets, costs, results):
    """EC of Bayes decisions against float64, like with like: the float64 decisions everywhere except in the float32
    tie band, where either decision is right and the reference takes ecjax's (at 100 classes nearly every cost
    matrix has such a sample, so leaving those matrices out would leave nothing to compare)."""
    post = posteriors64(scores)
    s32, c32 = scores.astype(np.float32), costs.astype(np.float32)
    ec = np.asarray(ecjax.bayes_expected_cost(targets, s32, c32, score_type="logits"))
    dec = np.asarray(ecjax.bayes_decisions(s32, c32, score_type="logits"))
    errs, bad, in_band = [], 0, 0
    for b in range(len(costs)):
        tie, ref = ties_and_decisions64(post, costs[b])
        bad += int(np.sum((dec[b] != ref) & ~tie))
        in_band += int(tie.sum())
        ref = np.where(tie, dec[b], ref)
        ref_ec = np.mean(costs[b][targets, ref])  # data priors: the average cost
        errs.append(abs(ec[b] - ref_ec) / abs(ref_ec))
    worst = max(errs)
    report(worst <= 1e-5 and bad == 0, f"{label} EC of Bayes decisions, {len(costs)} cost matrices: max rel err "
                                       f"{worst:.2e}; {bad} decisions off float64 outside the tie band ({in_band} "
                                       "sample-matrix pairs in it, compared with ecjax's own decision)", results)


def check_nec(rng, num_costs, results):
    data = [load(s) for s in SYSTEMS]
    k = data[0][0].shape[1]
    costs = random_costs(rng, num_costs, k)
    counts = np.stack([np.asarray(ecjax.confusion_matrix(t, s.argmax(1), num_classes=k)) for s, t in data])
    nec = np.asarray(ecjax.normalized_expected_cost(counts[:, None], costs.astype(np.float32)[None]))
    c64 = counts.astype(np.float64)
    p = c64.sum(-1) / c64.sum((-2, -1))[:, None]
    r = c64 / c64.sum(-1, keepdims=True)
    ec = np.einsum("si,sij,bij->sb", p, r, costs)
    naive = np.min(np.einsum("si,bij->sbj", p, costs), axis=-1)
    ref = ec / naive
    err = np.max(np.abs(nec - ref) / np.abs(ref))
    report(err <= 1e-5, f"NEC, 3 systems x {num_costs} cost matrices (broadcast): max rel err {err:.2e}", results)
    res = sweep_counts(counts, costs.astype(np.float32), normalize=True, settings=SweepSettings(return_values=True))
    values = np.asarray(res.values)
    values = values if values.shape == ref.shape else values.T
    err_s = np.max(np.abs(values - ref) / np.abs(ref))
    wins = np.bincount(np.argmin(ref, axis=0), minlength=3)
    got = np.bincount(np.argmin(values, axis=0), minlength=3)
    report(err_s <= 1e-5 and np.array_equal(wins, got),
           f"sweep_counts NEC over {num_costs} user matrices: max rel err {err_s:.2e}; winners {got} vs {wins}",
           results)


def main():
    args = parser(__doc__.splitlines()[0]).parse_args()
    print(f"gpu-accuracy on {machine()}; backend {jax.default_backend()}", flush=True)
    rng = np.random.default_rng(0)
    num_ec, num_nec = (10, 500) if args.tiny else (200, 20_000)
    results: list[bool] = []
    check_decisions(rng, results)
    scores, targets = load("cifar10_resnet-20")
    check_bayes_ec("cifar10_resnet-20", scores, targets, random_costs(rng, num_ec, 10), results)
    n = 1000 if args.tiny else 10_000
    logits = rng.normal(size=(n, 100)) * 3.0
    labels = np.argmax(logits + rng.gumbel(size=logits.shape), 1)
    check_bayes_ec(f"synthetic {n} x 100 logits", logits, labels, random_costs(rng, num_ec // 4 or 1, 100), results)
    check_nec(rng, num_nec, results)
    print(f"gpu-accuracy: {sum(results)}/{len(results)} checks pass", flush=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
