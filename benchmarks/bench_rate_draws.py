"""Per-draw decisions shared by several rate draws: the variance decomposition, and the time it saves.

With ``decision_rule="per_draw"`` each utility draw makes ``M N`` Bayes decisions, while the rates given those
decisions are a cheap Dirichlet draw.  ``prob.PerDraw(rate_draws=r)`` makes ``S / r`` utility draws and ``r``
rate draws for each (two-stage sampling).  For an average with between-group variance ``s_b^2`` (due to the
costs) and within-group variance ``s_w^2`` (due to the rates given the costs), the cost of a given precision
is least at ``r* = sqrt((c_U / c_R) (s_w^2 / s_b^2))`` (Cochran 1977, eq. 10.8).

For each data set this prints

* the decomposition measured on a run with ``r = 16`` (``info["variance_between_cost_draws"]`` and
  ``..._within_...``): for the recommendation's best-indicator (P(best)) and for its yield (E[yield]);
* time and Monte Carlo errors of ``S`` draws with ``r = 1`` (every draw decides) and with the default ``r``,
  each run twice in one process (the second, compiled, run is timed), and the ratio of the two costs at equal
  precision, ``(t_1 e_1^2) / (t_r e_r^2)`` (time times variance: the work per unit of precision).

There is no anchor (no other package draws per-draw Bayes decisions).  The data sets are those of
``../shared/data``: the three CIFAR-10 networks (unpaired, the README's uncertain costs), the two SST-2 GPT-2
systems (unpaired, a cost ratio between 1 and 10), and PneumoniaMNIST raw against temperature-2 scores (paired).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

import jax  # noqa: E402

from ecjax import io, prob  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def problems(tiny: bool):
    cut = 500 if tiny else None
    cifar = [_common.load(f"cifar10_{n}") for n in ("resnet-20", "repvgg_a2", "vgg19_bn")]
    spec = io.load_cost_spec(EXAMPLES / "cifar10_costs.toml")
    yield ("CIFAR-10, 3 nets, unpaired", dict(
        labels=[t[:cut] for _, t in cifar], scores=[log_softmax(s[:cut]) for s, _ in cifar], paired=False,
        costs=prob.intervals(spec.costs_low, spec.costs_high, kind="cost")))
    sst = [_common.load(n) for n in ("sst2_gpt2", "sst2_gpt2_4shot")]
    yield ("SST-2, 2 GPT-2 systems, unpaired", dict(
        labels=[t[:cut] for _, t in sst], scores=[s[:cut] for s, _ in sst], paired=False,
        costs=prob.cost_ratio(1, 10)))
    s, t = _common.load("pneumoniamnist_resnet50")
    yield ("PneumoniaMNIST, raw vs T=2, paired", dict(
        labels=t[:cut], scores=np.stack([s[:cut], log_softmax(s[:cut] / 2)]), paired=True,
        costs=prob.cost_ratio(1, 10)))


def systems(kw, rule):
    """The problem's systems, deciding by ``rule``."""
    return prob.Systems(kw["labels"], scores=kw["scores"], paired=kw["paired"], decision_rule=rule)


def timed(kw, rule, num_draws):
    run = lambda: prob.compare(systems(kw, rule), costs=kw["costs"], key=jax.random.key(0),  # noqa: E731
                               decompose=False, settings=prob.MonteCarloSettings(num_draws=num_draws))
    run()
    t0 = time.perf_counter()
    res = run()
    return time.perf_counter() - t0, res


def main() -> None:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=20_000)
    args = p.parse_args()
    draws = 2000 if args.tiny else args.draws
    print(f"# {_common.machine()}; S = {draws} draws, per-draw decisions")
    for name, kw in problems(args.tiny):
        probe = prob.compare(systems(kw, prob.PerDraw(16)), costs=kw["costs"], key=jax.random.key(1),
                             decompose=False, settings=prob.MonteCarloSettings(num_draws=draws))
        between, within = probe.info["variance_between_cost_draws"], probe.info["variance_within_cost_draws"]
        rec = probe.systems[probe.recommendation]
        print(f"\n## {name} (recommendation {rec})")
        for what in ("p_best", "yield"):
            ratio = within[what] / between[what] if between[what] > 0 else float("inf")
            print(f"  {what:7s} s_b^2 = {between[what]:.3g}  s_w^2 = {within[what]:.3g}  s_w^2/s_b^2 = {ratio:.3g}  "
                  f"r* = {probe.info['efficient_rate_draws'][what]:.3g}")
        t1, one = timed(kw, prob.PerDraw(1), draws)
        td, dflt = timed(kw, "per_draw", draws)
        r = dflt.info["rate_draws_per_cost_draw"]
        i = one.recommendation
        for label, t, res in ((" r = 1", t1, one), (f" r = {r} (default)", td, dflt)):
            print(f"  {label:18s} {t:7.2f} s  P(best) {res.p_best[i]:.4f} ± {res.errors['p_best'][i]:.2g}  "
                  f"E[yield] {res.expected_yield[i]:.4f} ± {res.errors['expected_yield'][i]:.2g}")
        for what, key in (("P(best)", "p_best"), ("E[yield]", "expected_yield")):
            e1, er = one.errors[key][i], dflt.errors[key][i]
            gain = (t1 * e1**2) / (td * er**2) if er > 0 else float("nan")
            print(f"  ratio of work per unit precision of {what} (r = 1 over the default): {gain:.2f}x")


if __name__ == "__main__":
    main()
