"""The critical-difference-style rank diagram, the smooth reliability diagram and the risk-coverage figure.

What is drawn is checked on the figure objects: positions against expected ranks computed here from the
posterior draws, rank intervals against the CDF of the rank probabilities, and bars against the correlated
t-test's ROPE probabilities computed with scipy.
"""

import types

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from scipy import stats

import jax

import ecjax
from ecjax import plots
from ecjax.prob import compare_results


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _drawn(ax):
    """``(positions (M,), rows (M,), intervals {i: (lo, hi)}, bars {(a, b): (x0, x1)})`` read off the axes."""
    points = next(c for c in ax.collections if c.get_gid() == "expected ranks").get_offsets()
    intervals = {int(line.get_gid().split()[-1]): tuple(line.get_xdata())
                 for line in ax.lines if (line.get_gid() or "").startswith("rank interval")}
    bars = {tuple(int(i) for i in line.get_gid().split()[1:]): tuple(line.get_xdata())
            for line in ax.lines if (line.get_gid() or "").startswith("equivalent")}
    return np.asarray(points[:, 0]), np.asarray(points[:, 1]), intervals, bars


def _rope_probability(x, a, b, rho, rope):
    """The correlated t-test's P(|mu| <= rope) for scores[b] - scores[a] (Corani & Benavoli 2015), with scipy."""
    d = x[b] - x[a]
    n = d.size
    scale = np.sqrt((1 / n + rho / (1 - rho)) * np.var(d, ddof=1))
    t = stats.t(n - 1, loc=d.mean(), scale=scale)
    return t.cdf(rope) - t.cdf(-rope)


def test_rank_diagram_of_compare_results():
    rng = np.random.default_rng(3)
    level = 0.8 + rng.normal(0, 0.02, 10)  # the folds' level, shared by the systems
    x = np.stack([level + shift + rng.normal(0, 0.004, 10) for shift in (0.0, 0.001, 0.02, 0.0215, -0.03)])
    res = compare_results(x, rope=0.01, key=jax.random.key(0), num_draws=4000,
                          systems=["a", "b", "c", "d", "e"])
    fig = plots.rank_diagram(res, equivalence_prob=0.9, rank_prob=0.8)
    positions, rows, intervals, bars = _drawn(fig.axes[0])
    # positions: the posterior mean rank of each system, from the draws themselves (no ties in continuous draws)
    ranks = 1 + np.argsort(np.argsort(-res.draws, axis=1), axis=1)
    np.testing.assert_allclose(positions, ranks.mean(0), rtol=1e-6)  # the rank probabilities are float32
    assert list(np.argsort(-rows)) == list(np.argsort(positions, kind="stable"))  # best on top
    # intervals: the 10% and 90% quantiles of each system's rank over the draws
    for i in range(5):
        assert intervals[i] == tuple(np.quantile(ranks[:, i], [0.1, 0.9], method="inverted_cdf"))
    # bars: exactly the pairs whose ROPE probability is at least 0.9, each joining the two positions
    expected = {(a, b) for a in range(5) for b in range(a + 1, 5) if _rope_probability(x, a, b, 0.1, 0.01) >= 0.9}
    assert set(bars) == expected and {(0, 1), (2, 3)} <= expected
    for (a, b), ends in bars.items():
        np.testing.assert_allclose(ends, positions[[a, b]])


def test_rank_diagram_of_a_given_matrix_and_no_bars_without_a_rope(tmp_path):
    p = np.array([[0.6, 0.3, 0.1], [0.3, 0.4, 0.3], [0.1, 0.3, 0.6]])
    pairwise = np.zeros((3, 3, 3))
    pairwise[0, 1] = (0.02, 0.97, 0.01)
    pairwise[1, 2] = (0.05, 0.949, 0.001)
    result = types.SimpleNamespace(systems=("x", "y", "z"), rank_probabilities=p, pairwise=pairwise, rope=0.01)
    fig = plots.rank_diagram(result, frame=plots.Frame(path=tmp_path / "cd.png"))
    assert (tmp_path / "cd.png").stat().st_size > 0
    positions, _, intervals, bars = _drawn(fig.axes[0])
    np.testing.assert_allclose(positions, [1 * 0.6 + 2 * 0.3 + 3 * 0.1, 2.0, 1 * 0.1 + 2 * 0.3 + 3 * 0.6])
    assert intervals == {0: (1, 3), 1: (1, 3), 2: (1, 3)}  # 5% and 95% of each rank's CDF
    assert set(bars) == {(0, 1)}  # 0.949 < 0.95
    fig = plots.rank_diagram(result, rank_prob=0.2)
    # the 40% and 60% quantiles: z's CDF (0.1, 0.4, 1) reaches 0.4 at rank 2
    assert _drawn(fig.axes[0])[2] == {0: (1, 1), 1: (2, 2), 2: (2, 3)}
    with pytest.raises(ecjax.InputError, match="equivalence_prob"):
        plots.rank_diagram(result, equivalence_prob=1.0)


def test_smooth_reliability_and_risk_coverage_figures(tmp_path):
    rng = np.random.default_rng(0)
    f = rng.uniform(0.05, 0.95, 400)
    y = (rng.uniform(size=400) < f ** 1.5).astype(int)
    lp = np.log(np.stack([1 - f, f], -1))
    smooth = ecjax.smooth_ece(y, lp)
    fig = plots.smooth_reliability_diagram(smooth, frame=plots.Frame(path=tmp_path / "smooth.png"))
    line = next(x for x in fig.axes[0].lines if x.get_gid() == "smooth curve 0")
    np.testing.assert_allclose(line.get_ydata(), smooth.curve[0])
    assert f"smECE {float(smooth.ece):.4f}" in line.get_label()
    curve = ecjax.risk_coverage_curve(y, np.stack([lp, lp[:, ::-1]]))
    fig = plots.risk_coverage(curve, names=["kept", "flipped"], frame=plots.Frame(path=tmp_path / "rc.png"))
    drawn = [x for x in fig.axes[0].lines if (x.get_gid() or "").startswith("risk coverage")]
    assert len(drawn) == 2
    np.testing.assert_allclose(drawn[1].get_xdata(), curve.coverage[1])
    np.testing.assert_allclose(drawn[1].get_ydata(), curve.risk[1])
    assert drawn[0].get_label() == f"kept (AURC {float(curve.aurc[0]):.4f})"


def test_cli_compare_folds_writes_the_rank_diagram(tmp_path):
    import json

    from conftest import run_cli

    rng = np.random.default_rng(2)
    a = 0.8 + 0.02 * rng.normal(size=10)
    x = np.round(np.stack([a, a + 0.001 + 0.002 * rng.normal(size=10), a - 0.03 + 0.005 * rng.normal(size=10)]), 5)
    (tmp_path / "f.csv").write_text("A,B,C\n" + "\n".join(",".join(map(str, r)) for r in x.T) + "\n")
    code, out, err = run_cli("compare-folds", "f.csv", "--rope", "0.01", "--rank-diagram", "cd.png", "--json",
                             cwd=tmp_path)
    assert code == 0, err
    assert json.loads(out)["files"] == ["cd.png"] and (tmp_path / "cd.png").stat().st_size > 1000
    code, _, err = run_cli("compare-folds", "f.csv", "--rank-diagram", "cd.png", cwd=tmp_path)
    assert code == 2 and "cd.png" in err  # exists: --force overwrites
    code, _, err = run_cli("compare-folds", "f.csv", "--rank-diagram", "cd.png", "--force", cwd=tmp_path)
    assert code == 0, err
