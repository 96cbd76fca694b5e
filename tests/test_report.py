"""The report table (``ecjax.report``: metric columns, disagreements, the formatted table), checked on the demo's
factory counts against Dyrland et al. (2022) §0 and hand computations."""

import numpy as np

from ecjax import demo
from ecjax.report import metric_columns
from ecjax._src.report import disagreements, format_table


def test_factory_yields_match_seed_004():
    # Dyrland et al. (2022) eq. (3): A earns 3.5 EUR/component, B loses 3.5; with matrix (5): 4.7 and 7.3 (§1 (a)).
    cols = {c.name: c.values for c in metric_columns(demo.FACTORY_COUNTS, utilities=demo.FACTORY_UTILITIES, pos_label=0)}
    np.testing.assert_allclose(cols["utility_yield"], [3.5, -3.5], atol=1e-5)
    alt = {c.name: c.values for c in metric_columns(demo.FACTORY_COUNTS, utilities=demo.FACTORY_UTILITIES_ALT, pos_label=0)}
    np.testing.assert_allclose(alt["utility_yield"], [4.7, 7.3], atol=1e-5)
    # Dyrland et al. (2022) Table 1 (positive class 0), printed to 2 decimals.
    table1 = {"accuracy": (0.62, 0.75), "precision": (0.64, 0.70), "F1": (0.59, 0.77), "MCC": (0.24, 0.51),
              "fowlkes_mallows": (0.59, 0.78), "recall": (0.54, 0.86), "specificity": (0.70, 0.64)}
    for name, printed in table1.items():
        assert np.all(np.abs(cols[name] - np.array(printed)) <= 0.005 + 1e-9), (name, cols[name])


def test_factory_nec_against_always_deciding_one():
    # Row-normalized costs of utilities (4): [[0, 50], [500, 0]]; always deciding 1 costs 0.5 * 50 = 25 per component,
    # classifier A costs 0.23 * 50 + 0.15 * 500 = 86.5 (hand computation from Dyrland et al. (2022) eq. (1)).
    cols = {c.name: c.values for c in metric_columns(demo.FACTORY_COUNTS, utilities=demo.FACTORY_UTILITIES)}
    np.testing.assert_allclose(cols["EC"], [86.5, 93.5], rtol=1e-6)
    np.testing.assert_allclose(cols["NEC"], [86.5 / 25, 93.5 / 25], rtol=1e-6)


def test_disagreements_mark_metrics_that_prefer_the_other_system():
    cols = metric_columns(demo.FACTORY_COUNTS, utilities=demo.FACTORY_UTILITIES, pos_label=0)
    off = disagreements(cols)
    # Dyrland et al. (2022) §0: only the true-negative rate (specificity, positive class 0) favours A.
    assert "specificity" not in off and {"accuracy", "F1", "MCC", "precision"} <= set(off)
    table = format_table(cols, ["A", "B"])
    assert "accuracy!" in table and "specificity!" not in table
