"""`ecjax compare-folds RESULTS.csv`: per-fold results of several systems, compared by the Bayesian correlated
t-test (reference: baycomp on the same vectors) and refused with a clear message where the file is wrong."""
import json

import baycomp
import numpy as np
import pytest
from conftest import run_cli

from ecjax.io import load_results_table


def _write(path, header, rows):
    path.write_text(",".join(header) + "\n" + "\n".join(",".join(str(x) for x in r) for r in rows) + "\n")


def test_pairs_match_baycomp_correlated_t_test(tmp_path):
    rng = np.random.default_rng(0)
    a = 0.8 + 0.02 * rng.normal(size=10)
    scores = np.round(np.stack([a, a + 0.01 + 0.01 * rng.normal(size=10), a - 0.005 + 0.01 * rng.normal(size=10)]), 4)
    _write(tmp_path / "folds.csv", ["A", "B", "C"], scores.T)
    code, out, err = run_cli("compare-folds", "folds.csv", "--rope", "0.005", "--runs", "2", "--json", cwd=tmp_path)
    assert code == 0, err
    rec = json.loads(out)
    names = ["A", "B", "C"]
    for i in range(3):
        for j in range(3):
            if i != j:
                ref = baycomp.CorrelatedTTest.probs(scores[i], scores[j], rope=0.005, runs=2)
                # baycomp's left is its first argument better (higher results), as ecjax's [a better, ...].
                np.testing.assert_allclose(rec["pairwise"][names[i]][names[j]], ref, atol=1e-6)
    assert rec["mean"] == pytest.approx(dict(zip(names, scores.mean(1))), abs=1e-6)
    assert max(rec["p_best"], key=rec["p_best"].get) == "B"


def test_a_spreadsheet_header_with_a_fold_column(tmp_path):
    # Excel's byte-order mark, a `fold` column and quoted names (issue 30): before, `\ufefffold` was ranked as a
    # system and the names kept their quotes. Only the two systems are compared, as baycomp compares them.
    rng = np.random.default_rng(1)
    a = np.round(0.8 + 0.02 * rng.normal(size=10), 4)
    b = np.round(a + 0.01 + 0.01 * rng.normal(size=10), 4)
    rows = "".join(f"{i + 1},{x},{y}\r\n" for i, (x, y) in enumerate(zip(a, b)))
    (tmp_path / "r.csv").write_bytes(('\ufeff"fold","sys A","sys, B"\r\n' + rows).encode("utf-8"))
    code, out, err = run_cli("compare-folds", "r.csv", "--rope", "0.005", "--json", cwd=tmp_path)
    assert code == 0, err
    rec = json.loads(out)
    assert rec["systems"] == ["sys A", "sys, B"]
    ref = baycomp.CorrelatedTTest.probs(a, b, rope=0.005, runs=1)
    np.testing.assert_allclose(rec["pairwise"]["sys A"]["sys, B"], ref, atol=1e-6)


@pytest.mark.parametrize("content, message", [
    ("A,B\n", "at least one row"),
    ("A,A\n0.1,0.2\n", "name every column once"),
    ("A,B\n0.1\n", "line 2 has 1 columns"),
    ("A,B\n0.1,x\n", "must be a number"),
    ("A,B\n0.1,nan\n", "NaN or inf"),
    ("dataset,A,B\nd1,0.1,0.2\nd1,0.2,0.3\nd2,0.1,0.2\n", "needs at least 2 folds"),
    ("dataset,A,B,C\nd1,0.1,0.2,0.3\nd2,0.2,0.3,0.1\n", "needs at least 2 folds"),
])
def test_bad_results_files_are_refused_by_name(tmp_path, content, message):
    (tmp_path / "r.csv").write_text(content)
    code, _, err = run_cli("compare-folds", "r.csv", cwd=tmp_path)
    assert code == 2 and "r.csv" in err and message in err, err


def test_data_sets_are_grouped_by_their_column(tmp_path):
    (tmp_path / "r.csv").write_text("A,dataset,B\n1,x,2\n3,y,4\n5,x,6\n7,y,8\n")
    table = load_results_table(tmp_path / "r.csv")
    assert table.systems == ["A", "B"] and table.datasets == ["x", "y"]
    # (M, q, n): system A on data set x has folds 1 and 5.
    np.testing.assert_array_equal(table.scores, [[[1, 5], [3, 7]], [[2, 6], [4, 8]]])


@pytest.mark.slow  # NUTS on the joint model (about a minute on two cores); the library tests check its numbers
def test_three_systems_over_data_sets_with_different_folds_use_the_joint_model(tmp_path):
    # C is better than A and B by 0.03 on every data set (fold noise 0.005): the joint hierarchical model must rank
    # it first, and its JSON must carry the library's own numbers for the same table.
    from ecjax.prob import hierarchical_compare_results

    rng = np.random.default_rng(4)
    rows = []
    for d, folds in enumerate([8, 10, 8, 10]):
        base = 0.7 + 0.05 * d + 0.01 * rng.normal(size=folds)
        for f in range(folds):
            rows.append([f"d{d}", *np.round(base[f] + np.array([0.0, 0.002, 0.03]) + 0.005 * rng.normal(size=3), 4)])
    _write(tmp_path / "folds.csv", ["dataset", "A", "B", "C"], rows)
    code, out, err = run_cli("compare-folds", "folds.csv", "--json", "--seed", "3", cwd=tmp_path)
    assert code == 0, err
    rec = json.loads(out)
    assert rec["model"].startswith("hierarchical over data sets, all systems")
    assert rec["p_best"]["C"] > 0.95
    table = load_results_table(tmp_path / "folds.csv")
    assert isinstance(table.scores, list) and [s.shape for s in table.scores] == [(3, 8), (3, 10), (3, 8), (3, 10)]
    import jax

    res = hierarchical_compare_results(table.scores, key=jax.random.key(3), systems=table.systems)
    assert rec["p_best"] == pytest.approx(dict(zip(table.systems, np.asarray(res.p_best, float))), abs=1e-9)
