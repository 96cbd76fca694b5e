"""One family of ranked results: a common base, and ``to_dict()`` / ``to_frame()`` / ``to_arviz()`` on every result.

Every frame is read against the result's dict (the JSON record of the command line) and against the arrays, with
independent numpy (or scikit-learn) computations where the numbers can be made again; every ``to_arviz()`` against
the draws it holds, and ``arviz.hdi`` (an independent implementation of the same rule) against ecjax's HDI.
"""

import sys

import numpy as np
import pytest

import jax

from ecjax import prob
from ecjax._src.prob.from_results import compare_results, hierarchical_compare_results, hierarchical_test
from ecjax._src.prob.ranking import RankedResult

pd = pytest.importorskip("pandas")
az = pytest.importorskip("arviz")

KEY = jax.random.key(5)
NAMES = ("a", "b", "c")


@pytest.fixture(scope="module")
def comparison():
    from ecjax.demo import FACTORY_COUNTS, FACTORY_UTILITIES

    u = FACTORY_UTILITIES
    res = prob.compare_counts(FACTORY_COUNTS, utilities=prob.intervals(u - 5, u + 5), key=KEY, rope=1.0, decompose=False,
                              settings=prob.MonteCarloSettings(num_draws=2000))
    return res


@pytest.fixture(scope="module")
def bootstrap():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 120)
    logits = np.stack([(2 * y - 1) * s + rng.normal(size=120) for s in (0.5, 1.0, 1.5)])  # (M, N) log odds
    scores = np.stack([-np.logaddexp(0, logits), -np.logaddexp(0, -logits)], -1)  # log posteriors
    systems = prob.Systems(y, scores={n: s for n, s in zip(NAMES, scores)})
    return y, logits, prob.bootstrap_metric(systems, "auc", key=KEY, rope=0.02,
                                            settings=prob.MonteCarloSettings(num_draws=400))


@pytest.fixture(scope="module")
def fold_results():
    rng = np.random.default_rng(1)
    scores = 0.8 + np.array([0.0, 0.01, 0.03])[:, None] + 0.02 * rng.normal(size=(3, 10))
    return scores, compare_results(scores, rope=0.005, key=KEY, num_draws=4000, systems=NAMES)


# ---------------------------------------------------------------------------------------------------------- the base

def test_every_ranked_result_shares_the_base_and_its_names(comparison, bootstrap, fold_results):
    _, _, post = bootstrap
    scores, res = fold_results
    for result in (comparison, post, res):
        assert isinstance(result, RankedResult)
    # One name for the centre, the old ones kept.
    np.testing.assert_array_equal(comparison.posterior_mean, np.asarray(comparison.expected_yield, np.float64))
    np.testing.assert_array_equal(post.posterior_mean, np.asarray(post.mean, np.float64))
    np.testing.assert_allclose(res.posterior_mean, scores.mean(-1), rtol=1e-12)
    # draws and num_draws everywhere; the recommendation of the fold results is the best mean result.
    assert comparison.draws is comparison.yields and comparison.num_draws == 2000
    assert post.num_draws == 400 and res.num_draws == 4000
    assert res.recommendation == int(np.argmax(scores.mean(-1))) and res.best == NAMES[res.recommendation]


# ---------------------------------------------------------------------------------------------------------- frames

def _check_system_frame(frame, record, centre_key, systems):
    """The per-system frame against the JSON record, cell by cell."""
    assert list(frame.index) == list(systems) and frame.index.name == "system"
    for name in systems:
        assert frame.loc[name, "posterior_mean"] == pytest.approx(record[centre_key][name], rel=1e-12)
        assert frame.loc[name, "p_best"] == pytest.approx(record["p_best"][name], rel=1e-12)
        assert [frame.loc[name, "hdi_low"], frame.loc[name, "hdi_high"]] == pytest.approx(record["hdi"][name],
                                                                                          rel=1e-12)


def test_comparison_frames_against_its_dict_and_draws(comparison):
    d = comparison.to_dict()
    frame = comparison.to_frame()
    _check_system_frame(frame, d, "expected_yield", comparison.systems)
    np.testing.assert_allclose(frame.filter(like="p_rank_").to_numpy(), np.asarray(d["rank_probabilities"]))
    np.testing.assert_allclose(frame["p_best_error"], [d["monte_carlo_errors"]["p_best"][n]
                                                       for n in comparison.systems])
    pairs = comparison.to_frame("pairs")
    y = np.asarray(comparison.yields, np.float64)
    m = len(comparison.systems)
    assert len(pairs) == m * (m - 1)
    for (a, b), row in pairs.iterrows():
        i, j = comparison.systems.index(a), comparison.systems.index(b)
        assert row["p_better"] == pytest.approx(np.mean(y[:, i] > y[:, j]), abs=1e-6)  # numpy, not ecjax
        diff = y[:, i] - y[:, j]
        assert row["p_within_rope"] == pytest.approx(np.mean(np.abs(diff) <= 1.0), abs=1e-6)
        assert [row["p_better_by_more_than_rope"], row["p_within_rope"],
                row["p_other_better_by_more_than_rope"]] == pytest.approx(d["rope_probabilities"][i][j], abs=1e-12)


def test_bootstrap_frames_against_its_dict_and_draws(bootstrap):
    from sklearn.metrics import roc_auc_score

    y, logits, post = bootstrap
    d = post.to_dict()
    assert d["metric"] == "auc" and d["higher_is_better"] is True and d["num_draws"] == 400
    frame = post.to_frame()
    _check_system_frame(frame, d, "mean", NAMES)
    # The estimate is the AUC on the data (uniform weights), by scikit-learn.
    np.testing.assert_allclose(frame["estimate"], [roc_auc_score(y, s) for s in logits], rtol=1e-5)
    np.testing.assert_allclose(frame[["equal_tailed_low", "equal_tailed_high"]].to_numpy(),
                               np.quantile(np.asarray(post.draws, np.float64), [0.05, 0.95], axis=0).T, rtol=1e-12)
    draws = np.asarray(post.draws, np.float64)
    pairs = post.to_frame("pairs")
    for (a, b), row in pairs.iterrows():
        i, j = NAMES.index(a), NAMES.index(b)
        assert row["p_better"] == pytest.approx(np.mean(draws[:, i] > draws[:, j]), abs=1e-6)
        assert row["p_better"] == pytest.approx(d["pairwise"][a][b], abs=1e-12)


def test_fold_results_frames_against_its_dict(fold_results):
    _, res = fold_results
    d = res.to_dict()
    assert d["systems"] == list(NAMES) and d["rope"] == 0.005
    _check_system_frame(res.to_frame(), d, "mean", NAMES)
    pairs = res.to_frame("pairs")
    for (a, b), row in pairs.iterrows():
        assert row[["p_better_by_more_than_rope", "p_within_rope", "p_other_better_by_more_than_rope"]].tolist() \
            == pytest.approx(d["pairwise"][a][b], abs=1e-12)
    # P(best) by numpy from the draws (continuous draws: no ties), within the Monte Carlo error of 4000 draws.
    draws = np.asarray(res.draws)
    wins = np.bincount(np.argmax(draws, 1), minlength=3) / draws.shape[0]
    np.testing.assert_allclose(res.to_frame()["p_best"], wins, atol=2e-3)


def test_metric_table_frame_against_sklearn_and_its_dict():
    from sklearn.metrics import accuracy_score, balanced_accuracy_score

    from ecjax.confusion import confusion_matrix
    from ecjax.report import metric_columns

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    decisions = [np.where(rng.random(200) < q, y, 1 - y) for q in (0.7, 0.8, 0.9)]
    counts = np.stack([np.asarray(confusion_matrix(y, dm, num_classes=2)) for dm in decisions])
    table = metric_columns(counts, costs=1 - np.eye(2))
    frame, d = table.to_frame(NAMES), table.to_dict(NAMES)
    assert list(frame.columns) == [c.name for c in table] and list(frame.index) == list(NAMES)
    np.testing.assert_allclose(frame["accuracy"], [accuracy_score(y, dm) for dm in decisions], rtol=1e-6)
    np.testing.assert_allclose(frame["balanced_accuracy"], [balanced_accuracy_score(y, dm) for dm in decisions],
                               rtol=1e-6)
    assert {c: frame[c].to_dict() for c in frame.columns} == d
    assert list(table.to_frame().index) == ["system 0", "system 1", "system 2"]


def test_sweep_frames_against_its_dict_and_values():
    from ecjax import sweep

    rng = np.random.default_rng(4)
    counts = rng.integers(5, 50, size=(3, 2, 2)).astype(float)
    res = sweep.sweep_counts(counts, sweep.grids.cost_ratios(0.1, 10.0, 31), normalize=True,
                             settings=sweep.SweepSettings(return_values=True))
    d = res.to_dict(NAMES)
    points = res.to_frame(systems=NAMES)
    values = np.asarray(res.values, np.float64)
    np.testing.assert_allclose(points["axis_0"], np.asarray(res.coords[0]))
    for i, n in enumerate(NAMES):
        np.testing.assert_array_equal(points[n], values[:, i])
        assert points[n].tolist() == pytest.approx(d["values"][n], rel=1e-12)
    assert points["winner"].tolist() == d["winners"]
    # The winner of each point by numpy: the lowest NEC, "tie" when shared.
    best = values.min(1, keepdims=True)
    expect = [NAMES[int(np.argmin(v))] if np.sum(v == b) == 1 else "tie" for v, b in zip(values, best)]
    assert points["winner"].tolist() == expect
    summary = res.to_frame("systems", NAMES)
    np.testing.assert_allclose(summary["win_fraction"], [expect.count(n) / len(expect) for n in NAMES])
    np.testing.assert_allclose(summary[["minimum", "maximum"]].to_numpy(),
                               np.stack([values.min(0), values.max(0)], -1), rtol=1e-6)


def test_utility_space_frame_counts_the_win_fraction():
    from ecjax import sweep

    rng = np.random.default_rng(6)
    counts = rng.integers(5, 50, size=(2, 2, 2)).astype(float)
    m = sweep.utility_space_map(counts, resolution=21, settings=sweep.SweepSettings(return_values=True))
    frame = m.to_frame(["a", "b"])
    assert np.all(np.abs(frame["x"] - frame["y"]) <= 1 + 1e-9)  # the hexagon only
    np.testing.assert_allclose([np.mean(frame["winner"] == n) for n in ("a", "b")], m.win_fraction, rtol=1e-6)


def test_to_frame_without_pandas_says_how_to_install_it(monkeypatch, fold_results):
    _, res = fold_results
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError
    with pytest.raises(ImportError, match=r'pip install "ecjax\[pandas\]"'):
        res.to_frame()


def test_to_frame_refuses_an_unknown_table(fold_results):
    import ecjax

    with pytest.raises(ecjax.InputError, match="table"):
        fold_results[1].to_frame("rows")


# ---------------------------------------------------------------------------------------------------------- arviz

def _draws_back(idata, name):
    """``(chain, draw, ...)`` -> ``(S, ...)``, the chains one after another."""
    x = idata.posterior[name].to_numpy()
    return x.reshape((-1,) + x.shape[2:])


@pytest.mark.parametrize("which", ["bootstrap", "fold_results"])
def test_to_arviz_holds_the_draws_and_arviz_hdi_agrees(which, request):
    res = request.getfixturevalue(which)[-1]
    idata = res.to_arviz()
    name = "auc" if which == "bootstrap" else "mean_result"
    assert idata.posterior[name].dims == ("chain", "draw", "system")
    assert list(idata.posterior.coords["system"].values) == list(NAMES)
    np.testing.assert_array_equal(_draws_back(idata, name), np.asarray(res.draws, np.float64))
    # arviz.hdi pools the chains and takes the narrowest interval holding floor(0.9 S) + 1 sorted draws: the rule of
    # ranking.hdi, computed in float32 there (one float32 rounding of the draws' spread).
    ref = az.hdi(idata, hdi_prob=res.hdi_prob)[name].to_numpy()
    spread = np.ptp(np.asarray(res.draws, np.float64), axis=0)[:, None]
    assert np.all(np.abs(res.hdi - ref) <= 1e-6 * spread)
    assert az.summary(idata)["r_hat"].max() < 1.05  # independent draws in 4 chains


def _synthetic_nuts_result(rng, chains, draws, datasets=4):
    """A HierarchicalResultsComparison of made-up draws and a run's InferenceData with made-up sample stats: what
    to_arviz does with the chains and the statistics, without a NUTS fit."""
    from ecjax._src.prob.from_results import HierarchicalResultsComparison

    s, m = chains * draws, len(NAMES)
    effect = rng.normal(size=(s, m))
    run = az.from_dict(posterior={"delta0": rng.normal(size=(chains, draws, m - 1))},
                       sample_stats={"diverging": rng.random((chains, draws)) < 0.05,
                                     "energy": rng.normal(size=(chains, draws))})
    p3 = np.full((m, m, 3), 1 / 3)
    res = HierarchicalResultsComparison(
        systems=NAMES, effects=effect.mean(0), draws=effect, p_best=np.full(m, 1 / m),
        rank_probabilities=np.full((m, m), 1 / m), pairwise=p3, next_dataset=p3, next_dataset_predictive=p3,
        spreads=np.abs(rng.normal(size=(s, m))), nu=1 + rng.exponential(size=s),
        dataset_effects=rng.normal(size=(s, datasets, m)), rope=0.0, rho=np.full(datasets, 0.1),
        within_prior="correlated", hdi_prob=0.9, hdi=np.zeros((m, 2)),
        num_divergences=int(run.sample_stats["diverging"].sum()), inference_data=run)
    return res, run


def test_nuts_to_arviz_splits_the_draws_by_chain_and_keeps_the_sample_stats():
    rng = np.random.default_rng(8)
    res, run = _synthetic_nuts_result(rng, chains=3, draws=50)
    idata = res.to_arviz()
    assert idata.posterior.sizes["chain"] == 3 and idata.posterior.sizes["draw"] == 50
    # Draw i of chain c is row c * 50 + i of the result's arrays (NumPyro's get_samples() order).
    np.testing.assert_array_equal(idata.posterior["effect"].to_numpy()[1, 7], res.draws[57])
    np.testing.assert_array_equal(idata.posterior["dataset_effect"].to_numpy()[2, 0], res.dataset_effects[100])
    assert idata.posterior["dataset_effect"].dims == ("chain", "draw", "dataset", "system")
    np.testing.assert_array_equal(idata.sample_stats["energy"].to_numpy(), run.sample_stats["energy"].to_numpy())
    assert int(idata.sample_stats["diverging"].sum()) == res.num_divergences
    # ArviZ's diagnostics run on it: the E-BFMI of each chain's energies, by numpy (Betancourt 2016, "Diagnosing
    # suboptimal cotangent disintegrations in Hamiltonian Monte Carlo": sum (E_n - E_n-1)^2 / sum (E_n - mean E)^2).
    e = run.sample_stats["energy"].to_numpy()
    bfmi = np.sum(np.diff(e, axis=1) ** 2, 1) / np.sum((e - e.mean(1, keepdims=True)) ** 2, 1)
    np.testing.assert_allclose(az.bfmi(idata), bfmi, rtol=1e-10)
    d = res.to_dict()
    assert d["num_divergences"] == res.num_divergences and d["effect"]["b"] == pytest.approx(res.effects[1])


def test_test_sets_comparison_to_arviz_by_chain(comparison):
    # compare_test_sets' result wraps a Comparison of NUTS draws: here the 2000 draws of the fixture as 4 chains.
    from ecjax._src.prob.hierarchical import HierarchicalComparison

    rng = np.random.default_rng(13)
    run = az.from_dict(posterior={"dispersion": rng.normal(size=(4, 500))},
                       sample_stats={"diverging": rng.random((4, 500)) < 0.01, "energy": rng.normal(size=(4, 500))})
    res = HierarchicalComparison(comparison=comparison, diagnostics=None, samples={}, inference_data=run,
                                 num_divergences=int(run.sample_stats["diverging"].sum()))
    idata = res.to_arviz()
    y = np.asarray(comparison.yields, np.float64)
    np.testing.assert_array_equal(idata.posterior["utility_yield"].to_numpy()[3], y[1500:])  # the fourth chain
    assert int(idata.sample_stats["diverging"].sum()) == res.num_divergences
    d = res.to_dict()
    assert d["num_divergences"] == res.num_divergences and d["p_best"] == comparison.to_dict()["p_best"]
    np.testing.assert_array_equal(res.to_frame()["p_best"], np.asarray(comparison.p_best, np.float64))


def test_hierarchical_test_frame_dict_and_arviz_without_a_fit():
    # Two systems on several data sets (baycomp's test): made-up draws of 2 chains, baycomp's shares by numpy.
    from ecjax._src.prob.from_results import HierarchicalTTest

    rng = np.random.default_rng(12)
    per_draw = rng.dirichlet([1, 1, 1], 400)
    shares = np.bincount(per_draw.argmax(1), minlength=3) / 400
    run = az.from_dict(posterior={"delta0": rng.normal(size=(2, 200))},
                       sample_stats={"diverging": np.zeros((2, 200), bool), "energy": rng.normal(size=(2, 200))})
    res = HierarchicalTTest(p_left=shares[0], p_rope=shares[1], p_right=shares[2], predictive=per_draw.mean(0),
                            per_draw=per_draw, delta0=rng.normal(size=400), std0=np.ones(400), nu=np.full(400, 5.0),
                            delta=rng.normal(size=(400, 3)), sigma=np.ones((400, 3)), rope=0.01, rho=0.1,
                            errors={"baycomp": np.full(3, 0.02)}, inference_data=run)
    frame, d = res.to_frame(), res.to_dict()
    assert list(frame.index) == ["left", "rope", "right"]
    np.testing.assert_allclose(frame["p"], shares)
    np.testing.assert_allclose(frame["p_error"], 0.02)
    np.testing.assert_allclose(frame["predictive"], d["predictive"], rtol=1e-15)
    assert [d["p_left"], d["p_rope"], d["p_right"]] == pytest.approx(shares.tolist(), abs=0)
    idata = res.to_arviz()
    np.testing.assert_array_equal(idata.posterior["delta"].to_numpy()[1], res.delta[200:])  # the second chain
    assert idata.posterior["delta0"].dims == ("chain", "draw") and "energy" in idata.sample_stats


@pytest.mark.slow  # two NUTS fits: ~110 s on the shared two cores; the mechanics are in the test above
def test_nuts_results_to_arviz_keep_the_chains_and_the_sample_stats():
    rng = np.random.default_rng(7)
    scores = 0.8 + np.array([0.0, 0.01, 0.02])[:, None, None] + 0.02 * rng.normal(size=(3, 3, 6))
    nuts = prob.NUTSSettings(num_warmup=60, num_samples=60, num_chains=2)
    res = hierarchical_compare_results(scores, key=KEY, systems=NAMES, nuts=nuts, hdi_prob=0.8)
    assert isinstance(res, RankedResult)
    np.testing.assert_array_equal(res.posterior_mean, res.effects)
    idata = res.to_arviz()
    assert idata.posterior.sizes["chain"] == 2 and idata.posterior.sizes["draw"] == 60
    np.testing.assert_array_equal(_draws_back(idata, "effect"), res.draws)
    np.testing.assert_array_equal(_draws_back(idata, "dataset_effect"), res.dataset_effects)
    # The run's own sample statistics, over the same (chain, draw): divergences and energy.
    stats = idata.sample_stats
    assert int(stats["diverging"].sum()) == res.num_divergences
    assert stats["energy"].shape == (2, 60) and np.all(np.isfinite(az.bfmi(idata)))
    ref = az.hdi(idata, hdi_prob=0.8)["effect"].to_numpy()
    spread = np.ptp(res.draws, axis=0)[:, None]
    assert np.all(np.abs(res.hdi - ref) <= 1e-6 * spread)
    d = res.to_dict()
    assert d["max_rhat"] == res.max_rhat and d["num_divergences"] == res.num_divergences
    _check_system_frame(res.to_frame(), d, "effect", NAMES)
    pairs = res.to_frame("pairs")
    assert pairs.loc[("a", "b"), ["next_dataset_p_better_by_more_than_rope", "next_dataset_p_within_rope",
                                  "next_dataset_p_other_better_by_more_than_rope"]].tolist() \
        == pytest.approx(d["next_dataset"]["a"]["b"], abs=1e-12)

    # Two systems: baycomp's test, its per-data-set draws by chain.
    test = hierarchical_test(scores[0], scores[2], key=KEY, nuts=nuts)
    idata = test.to_arviz()
    np.testing.assert_array_equal(_draws_back(idata, "delta"), test.delta)
    assert int(idata.sample_stats["diverging"].sum()) == test.num_divergences
    frame = test.to_frame()
    np.testing.assert_allclose(frame["p"], [test.p_left, test.p_rope, test.p_right])
    np.testing.assert_allclose(frame["p_error"], test.errors["baycomp"])
    d = test.to_dict()
    assert frame["predictive"].tolist() == pytest.approx(d["predictive"], abs=1e-12)


# ---------------------------------------------------------------------------------------------------------- the CLI

def test_compare_folds_writes_the_results_to_dict(tmp_path):
    # The command line's JSON record is the library result's to_dict() (with the command's own fields around it),
    # and its pairs are baycomp's correlated t-test (an independent reference for the numbers).
    import json

    import baycomp
    from conftest import run_cli

    rng = np.random.default_rng(9)
    scores = np.round(0.8 + np.array([0.0, 0.01, 0.02])[:, None] + 0.02 * rng.normal(size=(3, 8)), 4)
    (tmp_path / "f.csv").write_text("A,B,C\n" + "\n".join(",".join(str(x) for x in row) for row in scores.T) + "\n")
    code, out, err = run_cli("compare-folds", "f.csv", "--rope", "0.01", "--seed", "3", "--json", cwd=tmp_path)
    assert code == 0, err
    rec = json.loads(out)
    from ecjax._src import random_bits

    res = compare_results(scores, rope=0.01, key=random_bits.key(3), systems=("A", "B", "C"))
    # The same keys and numbers, up to the last bit of a mean (the file's table is summed as a strided view).
    def leaves(x):
        if isinstance(x, dict):
            return [(k, *rest) for k, v in x.items() for rest in leaves(v)]
        if isinstance(x, (list, tuple)):
            return [(i, *rest) for i, v in enumerate(x) for rest in leaves(v)]
        return [(x,)]

    ours, theirs = leaves(res.to_dict()), leaves({k: rec[k] for k in res.to_dict()})
    assert [p[:-1] for p in ours] == [p[:-1] for p in theirs]
    numbers = [(a[-1], b[-1]) for a, b in zip(ours, theirs) if isinstance(a[-1], float)]
    assert [a[-1] for a, b in zip(ours, theirs) if not isinstance(a[-1], float)] == \
        [b[-1] for a, b in zip(ours, theirs) if not isinstance(a[-1], float)]
    np.testing.assert_allclose(*np.array(numbers).T, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(rec["pairwise"]["A"]["C"], baycomp.CorrelatedTTest.probs(scores[0], scores[2],
                                                                                       rope=0.01), atol=1e-6)
