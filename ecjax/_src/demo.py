"""``ecjax demo``: the main job on data the package carries or generates.

Two stories:

1. The factory of Dyrland et al. (2022) §0: two classifiers with published confusion
   matrices (1)-(2), judged by the utility matrices (4) and (5).  Most popular
   metrics prefer B; the utility yield (what the factory earns) prefers A
   under (4) and B under (5).
2. A screening problem generated here (keyed, reproducible): disease
   prevalence 10 %, a missed case costs 20 times a false alarm.  Three
   classifiers: one that makes Bayes decisions for these costs from
   calibrated scores, one with sharper scores thresholded at posterior 0.5
   (the default of most toolkits), and one with overconfident scores.
"""

from __future__ import annotations

import sys
from typing import TextIO

import numpy as np

import jax
import jax.numpy as jnp

from ecjax._src.confusion import confusion_matrix, data_priors
from ecjax._src.decisions import bayes_decisions, naive_decision
from ecjax._src.report import disagreements, format_table, metric_columns, no_better_than_naive

# Dyrland et al. (2022) eqs. (1)-(2): joint frequencies, transposed to rows = true class.
FACTORY_COUNTS = np.array(
    [
        [[27, 23], [15, 35]],  # classifier A
        [[43, 7], [18, 32]],  # classifier B
    ]
)
# Dyrland et al. (2022) eqs. (4) and (5), EUR per component, transposed to rows = true class.
FACTORY_UTILITIES = np.array([[15.0, -35.0], [-335.0, 165.0]])
FACTORY_UTILITIES_ALT = np.array([[45.0, -65.0], [-335.0, 165.0]])

SCREENING_COSTS = np.array([[0.0, 1.0], [20.0, 0.0]])  # rows: healthy, sick; columns: send home, treat
SCREENING_PREVALENCE = 0.1


def screening_problem(key: jax.Array, num_samples: int = 2000) -> tuple[jax.Array, jax.Array]:
    """Labels and the log-posteriors of three classifiers for the screening story.

    Class-conditional scores are Gaussian with separation ``d'`` and unit
    variance, so the true LLR is ``d' x`` and the calibrated log-posterior
    odds are ``d' x + log(P1 / P0)``.
    """
    k_lab, k_x = jax.random.split(key)
    labels = jax.random.bernoulli(k_lab, SCREENING_PREVALENCE, (num_samples,)).astype(jnp.int32)
    log_prior_odds = jnp.log(SCREENING_PREVALENCE / (1 - SCREENING_PREVALENCE))
    systems = []
    for i, (d_prime, scale) in enumerate([(2.0, 1.0), (2.5, 1.0), (2.2, 3.0)]):
        x = jax.random.normal(jax.random.fold_in(k_x, i), (num_samples,)) + d_prime * (labels - 0.5)
        log_odds = scale * (d_prime * x + log_prior_odds)
        systems.append(jnp.stack([jax.nn.log_sigmoid(-log_odds), jax.nn.log_sigmoid(log_odds)], -1))
    return labels, jnp.stack(systems)


def _section(title, counts, names, out, *, pos_label=1, **matrix):
    cols = metric_columns(counts, pos_label=pos_label, **matrix)
    print(title, file=out)
    print(format_table(cols, names), file=out)
    off = disagreements(cols)
    if off:
        print(f"  ! these metrics pick a different winner than the utility yield: {', '.join(off)}", file=out)
    nec = next(c for c in cols if c.name == "NEC").values
    if np.all(no_better_than_naive(nec)):
        costs = matrix.get("costs", -np.asarray(matrix.get("utilities", 0.0)))
        best = int(naive_decision(costs, np.asarray(data_priors(counts[0]))))
        print(f"  ! NEC >= 1 for every system: always deciding {best} beats them all", file=out)
    print(file=out)


def run(out: TextIO | None = None, *, seed: int = 0) -> None:
    """Print the demo's tables to ``out`` (default: stdout)."""
    out = out or sys.stdout
    print("ecjax demo: classifiers judged by the consequences of their decisions", file=out)
    print("(* = best system in the column; rows of every matrix = true class)\n", file=out)
    names = ["A", "B"]
    # Dyrland et al. (2022) Table 1 takes class 0 as the positive class.
    _section("1a. A factory's quality check (Dyrland et al.), utilities in EUR per component (positive class 0):", FACTORY_COUNTS,
             names, out, utilities=FACTORY_UTILITIES, pos_label=0)
    _section("1b. The same classifiers under the factory's other utilities:", FACTORY_COUNTS, names, out,
             utilities=FACTORY_UTILITIES_ALT, pos_label=0)

    labels, log_post = screening_problem(jax.random.key(seed))
    bayes = bayes_decisions(log_post[0], SCREENING_COSTS)
    default = jnp.argmax(log_post[1], -1)  # threshold at posterior 0.5: ignores the costs
    overconfident = bayes_decisions(log_post[2], SCREENING_COSTS)
    decisions = jnp.stack([bayes, default, overconfident])
    counts = confusion_matrix(labels, decisions, num_classes=2)
    _section(
        "2. Screening (prevalence 10 %, a missed case costs 20 false alarms), costs [[0, 1], [20, 0]]:",
        counts, ["bayes-calibrated", "sharper-argmax", "overconfident"], out, costs=SCREENING_COSTS,
    )
    print("utility_yield = sum_ij U_ij P_i R_ij (higher is better). EC = expected cost of the\n"
          "row-normalized costs c_ij - min_j c_ij (lower is better; same ranking as the yield). NEC = EC / EC of the\n"
          "best fixed decision: >= 1 means no better than ignoring the input.", file=out)
