"""The factory and medical stories of Dyrland et al. (2022, §0-1), with ecjax.

Two classifiers, A and B, with the published confusion matrices (1)-(2).  Popular
metrics prefer B.  What the factory earns (utility yield, eq. 10) says A under the
gains (4) and B under (5); in the medical version (6), A gives patients more than six
months' longer expected remaining life.  Finally, the whole binary utility space of
Fig. 1 (eq. 13): for which utility matrices does each classifier win?

    python examples/factory_and_medical.py
"""

import numpy as np

import ecjax
from ecjax import costs
from ecjax.demo import FACTORY_COUNTS, FACTORY_UTILITIES, FACTORY_UTILITIES_ALT

# Matrix (6): expected remaining life in months, rows = true class (transposed from the paper).
MEDICAL_UTILITIES = np.array([[350.0, 300.0], [0.0, 500.0]])

names = ["A", "B"]
for title, u in [("factory, gains (4), EUR/component", FACTORY_UTILITIES),
                 ("factory, gains (5), EUR/component", FACTORY_UTILITIES_ALT),
                 ("medical, remaining life (6), months", MEDICAL_UTILITIES)]:
    y = np.asarray(ecjax.utility_yield(FACTORY_COUNTS, u))
    x_, y_ = costs.xy_from_utility(u)
    print(f"{title:38s} yield A = {y[0]:7.2f}  B = {y[1]:7.2f}  -> {names[int(np.argmax(y))]}"
          f"   (utility-space point x = {float(x_):+.2f}, y = {float(y_):+.2f})")

print("\nPopular metrics do not depend on the utilities at all (positive class 0, as in the paper's Table 1):")
for name, fn in [("accuracy", ecjax.accuracy), ("F1", lambda c: ecjax.f1_score(c, pos_label=0)),
                 ("MCC", ecjax.matthews_corrcoef)]:
    v = np.asarray(fn(FACTORY_COUNTS))
    print(f"  {name:9s} A = {v[0]:.2f}  B = {v[1]:.2f}")

# Sweep the utility space of Dyrland et al. (2022) Fig. 1: a grid of (x, y), keep the admissible hexagon |x - y| <= 1.
grid = np.linspace(-1, 1, 201)
xx, yy = np.meshgrid(grid, grid)
inside = np.abs(xx - yy) <= 1
u_grid = costs.utility_from_xy(xx[inside], yy[inside])  # (P, 2, 2)
yields = np.asarray(ecjax.utility_yield(FACTORY_COUNTS[:, None], u_grid[None]))  # (2, P)
a_wins = yields[0] > yields[1]
print(f"\nOver the utility space of Fig. 1 ({inside.sum()} matrices), A wins for {100 * a_wins.mean():.1f} % "
      f"and B for {100 * (~a_wins).mean():.1f} %: neither is better for every application.")
print("At the centre (x, y) = (0, 0) the yield is the accuracy: "
      f"B wins ({float(ecjax.utility_yield(FACTORY_COUNTS[1], costs.utility_from_xy(0.0, 0.0))):.2f} vs "
      f"{float(ecjax.utility_yield(FACTORY_COUNTS[0], costs.utility_from_xy(0.0, 0.0))):.2f}).")
