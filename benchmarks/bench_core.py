"""Core benchmarks (DESIGN.md table, rows 1-3), ecjax vs the `expected-cost` loop.

1. NEC of the 3 CIFAR-10 systems (N = 10^4, K = 10) over 10^5 random cost matrices.
2. EC of Bayes decisions for 10^3 cost matrices on 10^4 x 10 scores (CIFAR-10 ResNet-20).
3. The same with 10^4 x 100 scores (synthetic logits).

The anchor loops call expected-cost once per cost matrix (and system), as a
user of that package would; where the full loop would take minutes it is
timed on a slice and scaled linearly (the row says so).

    python benchmarks/bench_core.py          # full size
    python benchmarks/bench_core.py --size small  # the same sizes, anchors timed on shorter slices
    python benchmarks/bench_core.py --tiny   # CI smoke run
"""

from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp

import ecjax
from expected_cost import ec as ec_ref

from _common import HEADER, block, load, machine, parser, row, time_call, time_jax


def random_costs(rng, b, k, d=None):
    d = d or k
    c = rng.uniform(0.1, 10.0, (b, k, d))
    c[:, np.arange(k), np.arange(k)] = 0.0
    return c


def log_softmax(s):
    s = s - s.max(1, keepdims=True)
    return s - np.log(np.exp(s).sum(1, keepdims=True))


def bench_nec(rng, num_costs, anchor_slice, repeats):
    systems = ["cifar10_resnet-20", "cifar10_repvgg_a2", "cifar10_vgg19_bn"]
    data = [load(s) for s in systems]
    k = data[0][0].shape[1]
    costs = random_costs(rng, num_costs, k)
    # Each system has its own test order (see shared/data/README): one count matrix each.
    counts = jnp.stack([ecjax.confusion_matrix(t, s.argmax(1), num_classes=k) for s, t in data])

    nec = jax.jit(lambda c, cm: ecjax.normalized_expected_cost(cm[:, None], c[None]))
    costs_j = jnp.asarray(costs, jnp.float32)
    first, steady, out = time_jax(nec, costs_j, counts, repeats=repeats)
    # The memory-bound floor: one read of the cost matrices (what a single fused pass over them would cost).
    _, floor, _ = time_jax(jax.jit(jnp.sum), costs_j, repeats=repeats)

    def anchor(cs):
        res = np.empty((len(data), len(cs)))
        for m, (s, t) in enumerate(data):
            dec = s.argmax(1)
            for b, c in enumerate(cs):
                res[m, b] = ec_ref.average_cost(t, dec, ec_ref.CostMatrix(c), adjusted=True)
        return res

    n = min(anchor_slice, num_costs)
    t_anchor, ref = time_call(anchor, costs[:n])
    err = np.max(np.abs(np.asarray(out)[:, :n] - ref) / np.abs(ref))
    scaled = t_anchor * num_costs / n
    note = (f"anchor timed on {n} matrices, scaled x{num_costs / n:g}; max rel. diff {err:.1e}; "
            f"one read of the {costs_j.nbytes / 1e6:.3g} MB of costs (jnp.sum) {floor * 1e6:.0f} us: NEC / read = "
            f"{steady / floor:.1f}x (target <= 10x)")
    return row(f"NEC, 3 systems x {num_costs:.0e} cost matrices, N=10^4, K={k}", scaled, first, steady, note)


def bench_bayes(rng, scores, targets, num_costs, anchor_slice, repeats, label, score_type):
    k = scores.shape[1]
    costs = random_costs(rng, num_costs, k)
    # The public function, validation included: what a user calls.
    public = lambda s, c: ecjax.bayes_expected_cost(targets, s, c, score_type=score_type)
    s_j, c_j = jnp.asarray(scores, jnp.float32), jnp.asarray(costs, jnp.float32)
    first, steady, out = time_jax(public, s_j, c_j, repeats=repeats)

    lp = log_softmax(scores.astype(np.float64))

    def anchor(cs):
        return np.array([ec_ref.average_cost_for_bayes_decisions(targets, lp, ec_ref.CostMatrix(c))[0] for c in cs])

    n = min(anchor_slice, num_costs)
    t_anchor, ref = time_call(anchor, costs[:n])
    err = np.max(np.abs(np.asarray(out)[:n] - ref) / np.abs(ref))
    scaled = t_anchor * num_costs / n
    note = f"anchor timed on {n} matrices, scaled x{num_costs / n:g}; max rel. diff {err:.1e}"
    return row(f"EC of Bayes decisions, {num_costs:.0e} cost matrices, {label}", scaled, first, steady, note)


def main():
    args = parser(__doc__.splitlines()[0]).parse_args()
    rng = np.random.default_rng(0)
    num_nec, num_bayes = (1000, 20) if args.tiny else (100_000, 1000)
    print(f"machine: {machine()}")
    print(HEADER)
    # small: the same ecjax sizes, the anchor loops timed on shorter slices (~20 s in all on a GPU).
    print(bench_nec(rng, num_nec, 20 if args.tiny else (200 if args.small else 2000), args.repeats), flush=True)
    scores, targets = load("cifar10_resnet-20")
    print(bench_bayes(rng, scores, targets, num_bayes, 10 if args.tiny else 100, args.repeats,
                      "10^4 x 10 scores (CIFAR-10 ResNet-20)", "logits"), flush=True)
    n100 = 1000 if args.tiny else 10_000
    logits100 = rng.normal(size=(n100, 100)) * 3.0
    targets100 = np.argmax(logits100 + rng.gumbel(size=logits100.shape), 1)
    print(bench_bayes(np.random.default_rng(1), logits100, targets100, num_bayes, 5 if args.tiny else 50,
                      args.repeats, f"{n100:.0e} x 100 scores (synthetic)", "logits"), flush=True)


if __name__ == "__main__":
    main()
