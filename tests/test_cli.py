"""The `ecjax` command, run in this process (``cli.main``, as the console script calls it; the tests of signals,
exit codes of the interpreter and fresh-process behaviour start real processes elsewhere): outputs checked
against independent computations,
bad input giving exit code 2 and a one-line message naming the file."""

import json
import pickle

import numpy as np
import pytest

from conftest import run_cli as run


@pytest.fixture()
def files(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    y = rng.integers(0, 2, n)
    llr_a = 2.0 * (y - 0.5) * 2 + rng.normal(size=n)
    llr_b = 1.0 * (y - 0.5) * 2 + rng.normal(size=n)

    def logpost(llr):  # equal priors: log-odds = llr
        return np.stack([-np.logaddexp(0, llr), -np.logaddexp(0, -llr)], 1)

    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "a.npy", logpost(llr_a))
    np.save(tmp_path / "b.npy", logpost(llr_b))
    np.savetxt(tmp_path / "y.csv", y, fmt="%d", header="label", comments="")
    (tmp_path / "c.toml").write_text('classes = ["neg", "pos"]\ncosts = [[0, 1], [4, 0]]\n')
    return tmp_path, y, logpost(llr_a), logpost(llr_b)


def test_metrics_json_matches_numpy(files):
    d, y, a, b = files
    rc, out, err = run("metrics", "--labels", "y.npy", "--scores", "a.npy", "b.npy", "--names", "A", "B",
                       "--costs", "c.toml", "--json", cwd=d)
    assert rc == 0, err
    rec = json.loads(out)
    assert rec["systems"] == ["A", "B"] and rec["classes"] == ["neg", "pos"]
    # Independent: Bayes decision for costs [[0,1],[4,0]]: decide pos iff 4 P(pos|x) > P(neg|x).
    for name, s in (("A", a), ("B", b)):
        p = np.exp(s)
        dec = (4 * p[:, 1] > p[:, 0]).astype(int)
        ec = (np.sum((y == 0) & (dec == 1)) * 1 + np.sum((y == 1) & (dec == 0)) * 4) / len(y)
        acc = np.mean(dec == y)
        assert rec["metrics"]["EC"][name] == pytest.approx(ec, rel=1e-5)
        assert rec["metrics"]["accuracy"][name] == pytest.approx(acc, rel=1e-6)
        assert rec["metrics"]["utility_yield"][name] == pytest.approx(-ec, rel=1e-5)
    assert rec["best"]["EC"] == "A"


def test_priors_by_class_name(files):
    d, y, a, _ = files
    (d / "named.toml").write_text('classes = ["neg", "pos"]\ncosts = [[0, 1], [4, 0]]\npriors = {pos = 0.3, neg = 0.7}\n')
    rc, out, err = run("metrics", "--labels", "y.npy", "--scores", "a.npy", "--costs", "named.toml", "--json", cwd=d)
    assert rc == 0, err
    rec = json.loads(out)
    assert rec["priors"] == [0.7, 0.3]
    # The posteriors are re-weighted from the labels' class frequencies to the deployment priors before deciding.
    w = np.exp(a) * np.array([0.7, 0.3]) / (np.bincount(y) / len(y))
    dec = (4 * w[:, 1] > w[:, 0]).astype(int)
    ec = 0.7 * np.mean(dec[y == 0] == 1) + 0.3 * 4 * np.mean(dec[y == 1] == 0)  # Ferrer (2022a) eq. 2
    assert rec["metrics"]["EC"]["a"] == pytest.approx(ec, rel=1e-5)


def test_metrics_csv_labels_and_decisions(files):
    d, y, a, _ = files
    np.savetxt(d / "dec.csv", a.argmax(1), fmt="%d")
    rc, out, err = run("metrics", "--labels", "y.csv", "--decisions", "dec.csv", "--json", cwd=d)
    assert rc == 0, err
    rec = json.loads(out)
    assert rec["metrics"]["accuracy"]["dec"] == pytest.approx(np.mean(a.argmax(1) == y))


def test_metrics_out_dir_and_force(files):
    d, *_ = files
    args = ("metrics", "--labels", "y.npy", "--scores", "a.npy", "b.npy", "--costs", "c.toml", "--out", "res")
    rc, out, err = run(*args, cwd=d)
    assert rc == 0, err
    rec = json.loads((d / "res" / "metrics.json").read_text())
    for name in ("roc.png", "bayes_risk.png", "nec_threshold_a.png", "nec_threshold_b.png", "reliability_a.png",
                 "reliability_b.png", "metric_vs_yield.png"):
        assert (d / "res" / name).is_file() and str(d.name) not in name
        assert any(f.endswith(name) for f in rec["files"])
    # The optimal-threshold NEC of the JSON record, recomputed by brute force over every threshold.
    y = np.load(d / "y.npy")
    lo = np.load(d / "a.npy") @ np.array([-1.0, 1.0])
    c = np.array([[0.0, 1.0], [4.0, 0.0]])
    p0, p1 = np.mean(y == 0), np.mean(y == 1)
    ecs = [p0 * np.mean(lo[y == 0] > t) + 4 * p1 * np.mean(lo[y == 1] <= t) for t in np.r_[-np.inf, np.sort(lo)]]
    assert rec["optimal_threshold"]["a"]["nec"] == pytest.approx(min(ecs) / min(p0, 4 * p1), rel=1e-5)
    rc, _, err = run(*args, cwd=d)
    assert rc == 2 and "already exists" in err and len(err.strip().splitlines()) == 1
    rc, _, err = run(*args, "--force", cwd=d)
    assert rc == 0, err


@pytest.mark.parametrize("case", ["missing", "shape", "dtype", "pickle", "length", "syntax", "matrix", "names",
                                  "unknown_class", "label_range"])
def test_bad_input_exit_code_2_one_line(files, case):
    d, y, a, _ = files
    args = ["metrics", "--labels", "y.npy", "--scores", "a.npy"]
    expect = None
    if case == "missing":
        args[4] = "nope.npy"
        expect = "nope.npy"
    elif case == "shape":
        np.save(d / "s3.npy", np.zeros((len(y), 2, 2)))
        args[4] = "s3.npy"
        expect = "s3.npy"
    elif case == "dtype":
        np.save(d / "str.npy", np.array(["a"] * len(y)))
        args[4] = "str.npy"
        expect = "str.npy"
    elif case == "pickle":
        # Deliberately write a pickled object array in .npy format: the command must refuse to load it.
        with open(d / "obj.npy", "wb") as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "|O", "fortran_order": False, "shape": (len(y),)})
            pickle.dump(np.array([{"x": 1}] * len(y), dtype=object), f, protocol=3)
        args[4] = "obj.npy"
        expect = "pickled"
    elif case == "length":
        np.save(d / "short.npy", a[:-5])
        args[4] = "short.npy"
        expect = "short.npy"
    elif case == "syntax":
        (d / "bad.toml").write_text("costs = [[0, 1], [4, 0]\n")
        args += ["--costs", "bad.toml"]
        expect = "syntax error"
    elif case == "matrix":
        (d / "bad.json").write_text(json.dumps({"costs": [[0, 1, 2], [1, 0, 2], [1, 1, 0]]}))
        args += ["--costs", "bad.json"]
        expect = "bad.json"
    elif case == "names":
        (d / "names.toml").write_text('classes = ["a", "b", "c"]\ncosts = [[0, 1], [1, 0]]\n')
        args += ["--costs", "names.toml"]
        expect = "classes"
    elif case == "unknown_class":
        (d / "unk.toml").write_text('classes = ["neg", "pos"]\ncosts = [[0, 1], [1, 0]]\npriors = {neg = 0.9, sick = 0.1}\n')
        args += ["--costs", "unk.toml"]
        expect = "unknown class(es) ['sick']"
    elif case == "label_range":
        np.save(d / "y3.npy", np.where(y == 1, 2, 0))
        args[2] = "y3.npy"
        expect = "y3.npy"
    rc, out, err = run(*args, cwd=d)
    assert rc == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert expect in lines[0], lines[0]


def test_calibrate_matches_scipy_logistic_regression(files):
    """Affine calibration of binary log-posteriors is logistic regression on the log-odds: fit it with scipy."""
    from scipy.optimize import minimize

    d, _, _, _ = files
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    x = rng.normal(size=300) + (y - 0.5)  # unit-variance classes at -0.5 and 0.5: the true LLR is x
    lo = 3.0 * x  # three times overconfident
    mis = np.stack([-np.logaddexp(0, lo), -np.logaddexp(0, -lo)], 1)
    np.save(d / "tr.npy", mis[:200]), np.save(d / "ytr.npy", y[:200]), np.save(d / "te.npy", mis[200:])
    np.save(d / "yte.npy", y[200:])
    rc, out, err = run("calibrate", "--train-scores", "tr.npy", "--train-labels", "ytr.npy", "--scores", "te.npy",
                       "--labels", "yte.npy", "--output", "cal.npy", "--json", cwd=d)
    assert rc == 0, err
    rec = json.loads(out)
    got = np.load(d / "cal.npy", allow_pickle=False)

    lo_tr = mis[:200, 1] - mis[:200, 0]

    def nll(w):
        z = w[0] * lo_tr + w[1]
        return np.mean(np.logaddexp(0, -z) * (y[:200] == 1) + np.logaddexp(0, z) * (y[:200] == 0))

    w = minimize(nll, [1.0, 0.0], method="BFGS", options={"gtol": 1e-10}).x
    z = w[0] * (mis[200:, 1] - mis[200:, 0]) + w[1]
    ref = np.stack([-np.logaddexp(0, z), -np.logaddexp(0, -z)], 1)
    np.testing.assert_allclose(got, ref, atol=2e-3)
    assert rec["converged"] and rec["output_type"] == "log_posteriors"
    # Overconfident scores: calibration removes a large part of the cross-entropy.
    assert rec["relative_calibration_loss_percent"]["xe"] > 10
    rc, _, err = run("calibrate", "--train-scores", "tr.npy", "--train-labels", "ytr.npy", "--scores", "te.npy",
                     "--output", "cal.npy", cwd=d)
    assert rc == 2 and "already exists" in err


def test_calibrate_bad_lengths(files):
    d, y, a, _ = files
    np.save(d / "ytr.npy", y[:10])
    rc, _, err = run("calibrate", "--train-scores", "a.npy", "--train-labels", "ytr.npy", "--scores", "a.npy",
                     "--output", "o.npy", cwd=d)
    assert rc == 2 and "a.npy" in err and len(err.strip().splitlines()) == 1


def test_compare_dominant_system_and_expected_utility_matrix(files):
    d, y, a, _ = files
    rng = np.random.default_rng(2)
    np.save(d / "perfect.npy", y)
    np.save(d / "noisy.npy", np.where(rng.uniform(size=len(y)) < 0.3, 1 - y, y))
    (d / "u.toml").write_text('costs = [[0, 1], [4, 0]]\n[uncertainty]\nlow = [[0, 1], [2, 0]]\nhigh = [[0, 1], [8, 0]]\n')
    rc, out, err = run("compare", "--labels", "y.npy", "--decisions", "perfect.npy", "noisy.npy", "--costs", "u.toml",
                       "--draws", "2000", "--json", "--out", "cmp", cwd=d)
    assert rc == 0, err
    rec = json.loads(out)
    # With non-negative costs a system without errors costs 0 in every draw: it is the best with probability 1.
    assert rec["paired"] and rec["p_best"]["perfect"] == 1.0 and rec["recommendation"] == "perfect"
    # Interval prior on costs: the expected utility matrix is minus the interval midpoints (Dyrland et al. 2022, eq. 18).
    np.testing.assert_allclose(rec["expected_utility_matrix"], -np.array([[0, 1], [5, 0]]), atol=1e-6)
    np.testing.assert_allclose(np.sum(rec["rank_probabilities"], axis=1), 1.0, atol=1e-6)
    assert (d / "cmp" / "yield_posteriors.png").is_file() and (d / "cmp" / "rank_probabilities.png").is_file()


def test_compare_unpaired_per_system_labels_and_errors(files):
    d, y, a, b = files
    np.save(d / "y_short.npy", y[:200])
    np.save(d / "b_short.npy", b[:200])
    rc, out, err = run("compare", "--labels", "y.npy", "y_short.npy", "--scores", "a.npy", "b_short.npy",
                       "--costs", "c.toml", "--draws", "2000", "--json", cwd=d)
    assert rc == 0, err
    assert json.loads(out)["paired"] is False
    rc, _, err = run("compare", "--labels", "y.npy", "y_short.npy", "--scores", "a.npy", "b.npy",
                     "--costs", "c.toml", cwd=d)
    assert rc == 2 and "b.npy" in err and len(err.strip().splitlines()) == 1
    (d / "inv.toml").write_text('costs = [[0, 1], [4, 0]]\n[uncertainty]\nlow = [[0, 1], [5, 0]]\nhigh = [[0, 1], [2, 0]]\n')
    rc, _, err = run("compare", "--labels", "y.npy", "--scores", "a.npy", "b.npy", "--costs", "inv.toml", cwd=d)
    assert rc == 2 and "low > high" in err


def test_sweep_utility_space_and_cost_ratio_against_brute_force(files):
    d, *_ = files
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 400)
    # A rarely misses class 1 but raises false alarms; B the other way round.
    dec_a = np.where(y == 1, rng.uniform(size=400) > 0.05, rng.uniform(size=400) < 0.3).astype(int)
    dec_b = np.where(y == 1, rng.uniform(size=400) > 0.35, rng.uniform(size=400) < 0.05).astype(int)
    np.save(d / "ys.npy", y), np.save(d / "A.npy", dec_a), np.save(d / "B.npy", dec_b)
    rc, out, err = run("sweep", "--labels", "ys.npy", "--decisions", "A.npy", "B.npy", "--resolution", "41",
                       "--json", "--out", "sw", cwd=d)
    assert rc == 0, err
    rec = json.loads(out)
    # Brute force over the same grid: yield = sum_ij U_ij C_ij with C the joint frequencies (Dyrland et al. 2022, eq. 10).
    g = np.linspace(-1, 1, 41)
    wins = np.zeros(2)
    total = 0
    joint = [np.array([[np.mean((y == i) & (dd == j)) for j in range(2)] for i in range(2)]) for dd in (dec_a, dec_b)]
    for yy in g:
        for xx in g:
            if abs(xx - yy) > 1 + 1e-9:
                continue
            u = np.array([[1 - max(xx, 0), max(-yy, 0)], [max(yy, 0), 1 - max(-xx, 0)]])
            ya, yb = (np.sum(u * c) for c in joint)
            total += 1
            if not np.isclose(ya, yb, rtol=0, atol=1e-6):
                wins[int(yb > ya)] += 1
    np.testing.assert_allclose([rec["win_fraction"]["A"], rec["win_fraction"]["B"]], wins / total, atol=2.5 / total)
    assert (d / "sw" / "winner_map.png").is_file()

    rc, out, err = run("sweep", "--labels", "ys.npy", "--decisions", "A.npy", "B.npy", "--over", "cost-ratio",
                       "--lo", "0.1", "--hi", "10", "--resolution", "201", "--json", cwd=d)
    assert rc == 0, err
    rec = json.loads(out)
    # EC(r) = P0 R01 + r P1 R10 for costs [[0, 1], [r, 0]]: the two lines cross at
    # r* = P0 (R01_B - R01_A) / (P1 (R10_A - R10_B)).
    p0, p1 = np.mean(y == 0), np.mean(y == 1)
    r01 = [np.mean(dd[y == 0] == 1) for dd in (dec_a, dec_b)]
    r10 = [np.mean(dd[y == 1] == 0) for dd in (dec_a, dec_b)]
    r_star = p0 * (r01[1] - r01[0]) / (p1 * (r10[0] - r10[1]))
    grid = np.logspace(-1, 1, 201)
    (flip,) = rec["flips_at_cost_ratio"]["A / B"]
    assert flip == pytest.approx(grid[np.searchsorted(grid, r_star)], rel=1e-6)


def test_metrics_takes_labels_per_system_like_compare_and_sweep(files):
    # Two systems scored on the samples in different orders: each is evaluated against its own labels
    # (before, metrics took the first --labels only and scored B against A's order).
    from sklearn.metrics import accuracy_score, roc_auc_score

    d, y, a, b = files
    order = np.random.default_rng(1).permutation(len(y))
    np.save(d / "y_b.npy", y[order])
    np.save(d / "b_shuffled.npy", b[order])
    rc, out, err = run("metrics", "--labels", "y.npy", "y_b.npy", "--scores", "a.npy", "b_shuffled.npy",
                       "--names", "A", "B", "--costs", "c.toml", "--json", cwd=d)
    assert rc == 0, err
    rec = json.loads(out)
    rc, out, err = run("metrics", "--labels", "y.npy", "--scores", "a.npy", "b.npy", "--names", "A", "B",
                       "--costs", "c.toml", "--json", cwd=d)
    assert rc == 0, err
    same_order = json.loads(out)
    # Counts do not depend on the order of the samples; score averages (XE, Brier, ECE, AUC) are float32 sums,
    # equal up to the rounding of a different summation order.
    scores_cols = {"XE", "Brier", "ECE", "AUC"}
    assert {n: v for n, v in rec["metrics"].items() if n not in scores_cols} == \
        {n: v for n, v in same_order["metrics"].items() if n not in scores_cols}
    for name in scores_cols:
        assert rec["metrics"][name] == pytest.approx(same_order["metrics"][name], rel=1e-5), name
    assert rec["optimal_threshold"] == same_order["optimal_threshold"]
    # Independent check of B against its own labels: Bayes decision for costs [[0, 1], [4, 0]].
    p = np.exp(b[order])
    dec = (4 * p[:, 1] > p[:, 0]).astype(int)
    assert rec["metrics"]["accuracy"]["B"] == pytest.approx(accuracy_score(y[order], dec), abs=1e-6)
    assert roc_auc_score(y[order], b[order][:, 1]) > 0.7  # B is informative: a wrong pairing would show
    rc, out, err = run("metrics", "--labels", "y.npy", "y_b.npy", "y.npy", "--scores", "a.npy", "b.npy", cwd=d)
    assert rc == 2 and "--labels" in err and "one per system" in err


def test_default_names_come_from_folders_when_the_file_names_collide(files):
    d, y, a, b = files
    for sub, s in (("zero_shot", a), ("four_shot", b)):
        (d / sub).mkdir()
        np.save(d / sub / "scores.npy", s)
    rc, out, err = run("metrics", "--labels", "y.npy", "--scores", "zero_shot/scores.npy", "four_shot/scores.npy",
                       "--json", cwd=d)
    assert rc == 0, err
    rec = json.loads(out)
    assert rec["systems"] == ["zero_shot/scores", "four_shot/scores"]
    # Both systems are in the record, with their own values (before, the second overwrote the first).
    assert rec["metrics"]["accuracy"]["zero_shot/scores"] != rec["metrics"]["accuracy"]["four_shot/scores"]
    rc, out, err = run("metrics", "--labels", "y.npy", "--scores", "a.npy", "a.npy", cwd=d)
    assert rc == 2 and "the same file is given twice" in err and "--names" in err


def test_version_help_defaults_and_the_naive_decision_warning(files):
    d, y, a, b = files
    from ecjax import __version__

    rc, out, err = run("--version", cwd=d)
    assert rc == 0 and out.strip() == f"ecjax {__version__}"
    rc, out, err = run("compare", "--help", cwd=d)
    assert rc == 0 and "(default: log_posteriors)" in " ".join(out.split())
    # A system that swaps the classes: its NEC, recomputed here, is above 1.
    np.save(d / "swapped.npy", a[:, ::-1])
    rc, out, err = run("metrics", "--labels", "y.npy", "--scores", "a.npy", "swapped.npy", "--json", cwd=d)
    assert rc == 0, err
    rec = json.loads(out)
    dec = np.argmax(a[:, ::-1], 1)  # 0-1 costs: the Bayes decision is the argmax
    p1 = y.mean()
    nec_swapped = np.mean(dec != y) / min(p1, 1 - p1)  # naive cost: min over decisions of the error rate
    assert rec["metrics"]["NEC"]["swapped"] == pytest.approx(nec_swapped, rel=1e-5) and nec_swapped > 1
    assert rec["no_better_than_naive"] == ["swapped"]
    rc, out, err = run("metrics", "--labels", "y.npy", "--scores", "a.npy", "swapped.npy", cwd=d)
    assert "! NEC >= 1 for swapped: no better than the naive decision" in out
    assert "NEC >= 1 for a" not in out


def _numpy_ec(labels, decisions, costs, priors):
    rates = np.array([[np.mean(decisions[labels == i] == j) for j in range(2)] for i in range(2)])
    return float(np.sum(np.asarray(priors)[:, None] * rates * np.asarray(costs)))


def test_metrics_reweights_posteriors_to_the_deployment_priors(tmp_path):
    # The README's PneumoniaMNIST example: posteriors trained at other priors, deployment priors 0.8 / 0.2.
    from conftest import load_dataset

    y, s, _ = load_dataset("pneumoniamnist_resnet50")
    np.save(tmp_path / "labels.npy", y)
    np.save(tmp_path / "resnet50.npy", s)
    (tmp_path / "pneumonia.toml").write_text('classes = ["normal", "pneumonia"]\ncosts = [[0, 1], [10, 0]]\n'
                                             'priors = [0.8, 0.2]\n')
    costs, deploy = np.array([[0, 1], [10, 0]]), np.array([0.8, 0.2])
    p = np.exp(s.astype(np.float64))

    def bayes(train):  # Bayes' rule in numpy: re-weight, then the decision of least expected cost
        w = p if train is None else p * deploy / np.asarray(train)
        return (w @ costs).argmin(1)

    argmax_ec = _numpy_ec(y, p.argmax(1), costs, deploy)
    for option, train, loses in (([], np.bincount(y) / len(y), True), (["--training-priors", "none"], None, True),
                                 (["--training-priors", "0.258,0.742"], [0.258, 0.742], False)):
        rc, out, err = run("metrics", "--labels", "labels.npy", "--scores", "resnet50.npy", "--costs", "pneumonia.toml",
                           "--json", *option, cwd=tmp_path)
        assert rc == 0, err
        rec = json.loads(out)
        ec = _numpy_ec(y, bayes(train), costs, deploy)
        assert rec["metrics"]["EC"]["resnet50"] == pytest.approx(ec / 1.0, rel=1e-5)  # rows already min 0
        assert (ec > argmax_ec) == loses and rec["lose_to_argmax"] == (["resnet50"] if loses else [])
        if train is None:
            assert rec["training_priors"] is None and "not re-weighted" in rec["decisions_made_by"]
        else:
            np.testing.assert_allclose(rec["training_priors"]["resnet50"], train)
            assert "re-weighted" in rec["decisions_made_by"]
    # The numbers the README prints.
    assert round(_numpy_ec(y, bayes(np.bincount(y) / len(y)), costs, deploy), 4) == 0.2479
    assert round(_numpy_ec(y, bayes(None), costs, deploy), 4) == 0.2957
    assert round(_numpy_ec(y, bayes([0.258, 0.742]), costs, deploy), 4) == 0.2359 and round(argmax_ec, 4) == 0.2393


@pytest.mark.parametrize("option, message", [
    ("0.5,0.6", "2 positive numbers summing to 1"),
    ("abc", "'data', 'none' or 2 comma-separated numbers"),
    ("1,0", "2 positive numbers summing to 1"),
])
def test_training_priors_errors(files, option, message):
    d, *_ = files
    (d / "p.toml").write_text('classes = ["neg", "pos"]\ncosts = [[0, 1], [4, 0]]\npriors = [0.7, 0.3]\n')
    rc, out, err = run("metrics", "--labels", "y.npy", "--scores", "a.npy", "--costs", "p.toml",
                       "--training-priors", option, cwd=d)
    assert rc == 2 and "--training-priors" in err and message in err
    rc, out, err = run("metrics", "--labels", "y.npy", "--scores", "a.npy", "--training-priors", "0.5,0.5", cwd=d)
    assert rc == 2 and "gives no deployment priors" in err


def test_compare_reweights_posteriors_to_the_deployment_priors(files):
    # Fixed 0-1 costs and deployment priors 0.9 / 0.1 on posteriors from equal training priors: the decisions
    # compared are those of the re-weighted posteriors, whose counts the expected yield is the closed form of.
    d, y, a, b = files
    (d / "p.toml").write_text('classes = ["neg", "pos"]\ncosts = [[0, 1], [1, 0]]\npriors = [0.9, 0.1]\n')
    rc, out, err = run("compare", "--labels", "y.npy", "--scores", "a.npy", "b.npy", "--names", "A", "B",
                       "--costs", "p.toml", "--training-priors", "0.5,0.5", "--draws", "2000", "--json", cwd=d)
    assert rc == 0, err
    rec = json.loads(out)
    assert rec["training_priors"] == {"A": [0.5, 0.5], "B": [0.5, 0.5]}
    # Independent: decide 1 iff the posterior log-odds exceed log(0.9 / 0.1); the closed-form expected yield of
    # fixed decisions is -sum_i P_i E[R_i,wrong] with E[R_ij] = (n_ij + a) / (n_i + 2 a), a = 2 / (K D) = 0.5 per
    # cell (the default prior, ecjax._src.prob.rates; paired or not, the within-class proportions have this mean).
    alpha = 0.5
    for name, s in (("A", a), ("B", b)):
        dec = (s[:, 1] - s[:, 0] > np.log(9.0)).astype(int)
        n = np.array([[np.sum((y == i) & (dec == j)) for j in range(2)] for i in range(2)])
        rates = (n + alpha) / (n.sum(1, keepdims=True) + 2 * alpha)
        assert rec["expected_yield"][name] == pytest.approx(-(0.9 * rates[0, 1] + 0.1 * rates[1, 0]), rel=1e-4)
    rc, out, err = run("compare", "--labels", "y.npy", "--scores", "a.npy", "--costs", "p.toml", "--draws", "500",
                       cwd=d)
    assert rc == 0 and "re-weighted to the deployment priors from the training priors of each system's label" in out


# Each option rule broken once, on files that do not exist: the rule is said before any file is read, naming the
# option and what it needs or excludes. Written out by hand (not generated from cli.OPTION_RULES).
_CAL = ["calibrate", "--scores", "missing.npy", "--output", "o.npy"]
_MET = ["metrics", "--labels", "missing.npy", "--decisions", "missing.npy"]


@pytest.mark.parametrize("argv, said", [
    (_MET + ["--metric-thresholds"], "--metric-thresholds: needs --scores"),
    (_MET + ["--curves"], "--curves: needs --scores"),
    (_MET[:3] + ["--scores", "s.npy", "--curve-bands"], "--curve-bands: needs --curves"),
    (_MET + ["--bootstrap", "auc"], "--bootstrap: needs --scores"),
    (_MET + ["--progress"], "--progress: needs --bootstrap"),
    (_CAL + ["--labels", "y.npy", "--cv", "3", "--train-scores", "t.npy"], "--train-scores: not with --cv"),
    (_CAL + ["--labels", "y.npy", "--cv", "3", "--train-labels", "t.npy"], "--train-labels: not with --cv"),
    (_CAL + ["--cv", "3"], "--cv: needs --labels"),
    (_CAL + ["--labels", "y.npy", "--groups", "g.npy"], "--groups: needs --cv"),
    (_CAL + ["--train-scores", "t.npy"], "--train-scores: needs --train-labels"),
    (_CAL + ["--train-labels", "t.npy", "--labels", "y.npy"], "--train-labels: needs --train-scores"),
    (_CAL, "--train-scores or --labels or --calibrator: give --train-scores or --labels or --calibrator"),
    (_CAL + ["--train-scores", "t.npy", "--train-labels", "u.npy", "--sample-weight", "w.npy"],
     "--sample-weight: weighs the samples of --scores, and needs --labels"),
    (_CAL + ["--labels", "y.npy", "--train-sample-weight", "w.npy"],
     "--train-sample-weight: weighs the samples of --train-scores, and needs --train-scores"),
    (["compare", "--labels", "missing.npy", "--decisions", "missing.npy"], "--costs: give --costs"),
    (["compare", "--labels", "missing.npy", "--decisions", "missing.npy", "--costs", "c.toml", "--rate-draws", "4"],
     "--rate-draws: needs --decision-rule per_draw"),
    (["compare", "--labels", "missing.npy", "--scores", "missing.npy", "--costs", "c.toml", "--sample-costs", "m.npz",
      "--deployment-scores", "d.npy"], "--deployment-scores: not with --sample-costs"),
    # sweep's rules were a second "sweep" key of the table, which the later one (--json with --format) replaced.
    (["sweep", "--labels", "missing.npy", "--decisions", "missing.npy", "--sample-cost-scale", "0", "2"],
     "--sample-cost-scale: needs --sample-costs"),
    (["sweep", "--labels", "missing.npy", "--decisions", "missing.npy", "--json", "--format", "csv"],
     "--json: not with --format table or --format csv or --format markdown"),
])
def test_option_rules_are_said_before_any_file_is_read(tmp_path, argv, said):
    code, _, err = run(*argv, cwd=tmp_path)
    assert code == 2 and said in err and "missing.npy" not in err, err


def test_option_rules_let_every_valid_combination_through(tmp_path):
    from ecjax import cli

    for argv in (_CAL + ["--labels", "y.npy", "--cv", "3", "--groups", "g.npy", "--sample-weight", "w.npy"],
                 _CAL + ["--train-scores", "t.npy", "--train-labels", "u.npy", "--train-sample-weight", "w.npy"],
                 _MET[:3] + ["--scores", "s.npy", "--metric-thresholds", "--curves", "--bootstrap", "auc"],
                 ["compare", "--labels", "y.npy", "--scores", "s.npy", "--costs", "c.toml", "--decision-rule",
                  "per_draw", "--rate-draws", "4"]):
        cli.check_option_rules(cli.build_parser().parse_args(argv))  # no error


def test_cost_ratio_range_is_the_library_check_said_of_the_options(files):
    d, *_ = files
    rc, _, err = run("sweep", "--labels", "y.npy", "--scores", "a.npy", "--over", "cost-ratio", "--lo", "5",
                     "--hi", "1", cwd=d)
    assert rc == 2 and "--lo/--hi: `cost_ratios` range must have lo <= hi, got (5.0, 1.0)" in err, err


def test_training_priors_say_the_library_checks_of_the_option(tmp_path):
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(10, int), np.ones(10, int)]  # no sample of class 2
    np.save(tmp_path / "y3.npy", y)
    np.save(tmp_path / "s3.npy", np.log(rng.dirichlet(np.ones(3), 20)))
    np.save(tmp_path / "llr.npy", rng.normal(size=20))
    # Deployment priors of 0 for the absent class: its rates are not needed, but its training prior is.
    (tmp_path / "c3.toml").write_text("costs = [[0, 1, 1], [1, 0, 1], [1, 1, 0]]\npriors = [0.6, 0.4, 0.0]\n")
    (tmp_path / "c2.toml").write_text("costs = [[0, 1], [1, 0]]\npriors = [0.5, 0.5]\n")
    rc, _, err = run("metrics", "--labels", "y3.npy", "--scores", "s3.npy", "--costs", "c3.toml", "--training-priors",
                     "data", cwd=tmp_path)
    assert rc == 2 and err.strip().endswith(
        "--training-priors data: y3.npy has no sample of class 2: its frequency is no training prior to re-weight "
        "by: give the training priors as numbers"), err
    rc, _, err = run("metrics", "--labels", "y3.npy", "--scores", "llr.npy", "--score-type", "llr", "--costs",
                     "c2.toml", "--training-priors", "0.5,0.5", cwd=tmp_path)
    assert rc == 2 and "--training-priors: is for posterior-type scores (log_posteriors, logits, probabilities), " \
                       "got --score-type llr" in err, err
    rc, _, err = run("metrics", "--labels", "y3.npy", "--scores", "s3.npy", "--costs", "c3.toml", "--training-priors",
                     "0.2,0.3,0.6", cwd=tmp_path)
    assert rc == 2 and "--training-priors: 3 positive numbers summing to 1, got [0.2, 0.3, 0.6]" in err, err


@pytest.mark.parametrize("over", ["matrices", "cost-ratio"])
def test_sweep_refuses_costs_whose_nec_is_undefined_everywhere(files, over):
    # Deployment priors on class 0 alone: deciding 0 is free for every swept matrix (their costs stay below the
    # upper ends of their intervals, or are [[0, 1], [r, 0]]), so the NEC is undefined at every point.
    d, *_ = files
    (d / "p.toml").write_text("costs = [[0, 1], [4, 0]]\npriors = [1.0, 0.0]\n")
    rc, _, err = run("sweep", "--labels", "y.npy", "--scores", "a.npy", "--over", over, "--costs", "p.toml", cwd=d)
    assert rc == 2 and "p.toml: the best naive system has zero expected cost" in err and "NEC" in err, err


def test_compare_draws_until_precise_by_default_and_exactly_the_draws_asked(files):
    # Issue 33: the command's default is the library's precision target (1000 draws, more until every reported
    # probability has a Monte Carlo standard error of at most 0.005, at most 20,000), not a fixed 20,000.
    # References: the library's own constants, and the errors the record reports against the target.
    from ecjax._src.cli import options
    from ecjax._src.prob import adaptive_draws

    assert (options.FIRST_DRAWS, options.DEFAULT_MC_ERROR, options.DEFAULT_MAX_DRAWS) == (
        adaptive_draws.FIRST_DRAWS, adaptive_draws.DEFAULT_MC_ERROR, adaptive_draws.DEFAULT_MAX_DRAWS)
    d, y, a, b = files
    (d / "u.toml").write_text('classes = ["neg", "pos"]\ncosts = [[0, 1], [4, 0]]\n'
                              '[uncertainty]\nlow = [[0, 0.5], [2, 0]]\nhigh = [[0, 2], [8, 0]]\n')
    rc, out, err = run("compare", "--labels", "y.npy", "--scores", "a.npy", "b.npy", "--names", "A", "B",
                       "--costs", "u.toml", "--json", cwd=d)
    assert rc == 0, err
    rec = json.loads(out)
    # A is clearly the better system here: P(best) is precise after the first 1000 draws (20,000 before).
    assert rec["num_draws"] == 1000 and rec["p_best"]["A"] > 0.99
    assert max(rec["monte_carlo_errors"]["p_best"].values()) <= 0.005
    rc, out, err = run("compare", "--labels", "y.npy", "--scores", "a.npy", "b.npy", "--costs", "u.toml",
                       "--draws", "700", "--json", cwd=d)
    assert rc == 0, err
    assert json.loads(out)["num_draws"] == 700
