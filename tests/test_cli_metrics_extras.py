"""`ecjax metrics --metric-thresholds --curves --bootstrap`, run in this process (``cli.main``): the numbers
against scikit-learn, a brute force and closed forms written here, and the flags refused where they mean nothing."""
import json

import numpy as np
import pytest
from sklearn import metrics as skm

from ecjax import cli


def _run(capsys, *args):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def binary(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    n = 400
    y = rng.integers(0, 2, n)
    llr = 2.5 * (y - 0.5) + rng.normal(size=n)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "llr.npy", llr)
    monkeypatch.chdir(tmp_path)
    return y, llr


def test_metric_thresholds_and_curves_match_scikit_learn(binary, capsys):
    y, llr = binary
    code, out, err = _run(capsys, "metrics", "--labels", "y.npy", "--scores", "llr.npy", "--score-type", "llr",
                          "--names", "A", "--metric-thresholds", "--curves", "--json")
    assert code == 0, err
    rec = json.loads(out)
    # Brute force over every cut between distinct scores (and the two trivial cuts), with scikit-learn's metrics.
    s = np.sort(np.unique(llr))
    cuts = np.r_[-np.inf, (s[:-1] + s[1:]) / 2, np.inf]
    best = {"f1": max(skm.f1_score(y, llr > t, zero_division=0) for t in cuts),
            "mcc": max(skm.matthews_corrcoef(y, llr > t) for t in cuts),
            "youden": max(np.mean(llr[y == 1] > t) - np.mean(llr[y == 0] > t) for t in cuts)}
    p1 = y.mean()
    for metric, value in best.items():
        row = rec["metric_thresholds"]["A"][metric]
        assert row["value"] == pytest.approx(value, abs=1e-6)
        # The threshold is the Bayes threshold of a miss costing r false alarms: for LLRs with the data's priors,
        # decide 1 iff llr > log(P0 / (P1 r)).
        assert row["threshold"] == pytest.approx(np.log((1 - p1) / (p1 * row["implied_cost_ratio"])), abs=1e-5)
    curves = rec["curves"]["A"]
    assert curves["average_precision"] == pytest.approx(skm.average_precision_score(y, llr), abs=1e-6)
    prec, rec_, _ = skm.precision_recall_curve(y, llr)
    np.testing.assert_allclose(curves["precision_recall"]["precision"], prec, atol=1e-6)
    np.testing.assert_allclose(curves["precision_recall"]["recall"], rec_, atol=1e-6)
    fpr, fnr, _ = skm.det_curve(y, llr)
    np.testing.assert_allclose(curves["det"]["false_positive_rate"], fpr, atol=1e-6)
    np.testing.assert_allclose(curves["det"]["false_negative_rate"], fnr, atol=1e-6)
    # Net benefit (Vickers & Elkin 2006) of treating when P(1 | x) >= p_t, the posterior from the LLR and the
    # data's priors: NB = TP/N - FP/N p_t / (1 - p_t).
    dc = curves["decision_curve"]
    pt = np.asarray(dc["threshold_probabilities"])
    post = 1 / (1 + np.exp(-(llr + np.log(p1 / (1 - p1)))))
    treat = post[None, :] >= pt[:, None]
    nb = ((treat & (y == 1)).sum(1) - (treat & (y == 0)).sum(1) * pt / (1 - pt)) / len(y)
    near = np.abs(post[None, :] - pt[:, None]).min(1) > 1e-6  # rounding cannot move a decision there
    # float32 odds p_t / (1 - p_t): 1 - p_t rounds to a relative 2^-24 / (1 - p_t), so the error grows with them.
    tol = 1e-6 * (1 + pt / (1 - pt))
    assert np.all(np.abs(np.asarray(dc["net_benefit"]) - nb)[near] <= tol[near])
    assert np.all(np.abs(np.asarray(dc["treat_all"]) - (p1 - (1 - p1) * pt / (1 - pt))) <= tol)


def test_curves_of_multiclass_scores_give_the_one_vs_one_auc(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(4)
    n, k = 300, 3
    y = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k)) + 1.5 * np.eye(k)[y]
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "s.npy", logits)
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, "metrics", "--labels", "y.npy", "--scores", "s.npy", "--score-type", "logits",
                          "--curves", "--json")
    assert code == 0, err
    post = np.exp(logits - logits.max(1, keepdims=True))
    post /= post.sum(1, keepdims=True)
    ref = skm.roc_auc_score(y, post, multi_class="ovo")
    assert json.loads(out)["curves"]["s"]["auc_one_vs_one"] == pytest.approx(ref, abs=1e-6)
    code, _, err = _run(capsys, "metrics", "--labels", "y.npy", "--scores", "s.npy", "--score-type", "logits",
                        "--metric-thresholds")
    assert code == 2 and "--metric-thresholds: needs binary scores (K = 2), got 3 classes" in err


def test_thresholds_curves_and_bootstrap_need_scores(binary, capsys):
    y, llr = binary
    np.save("d.npy", (llr > 0).astype(int))
    for flag in ("--metric-thresholds", "--curves", "--bootstrap=auc"):
        code, _, err = _run(capsys, "metrics", "--labels", "y.npy", "--decisions", "d.npy", flag)
        assert code == 2 and f"{flag.split('=')[0]}: needs --scores" in err


def test_bootstrap_cross_entropy_matches_rubins_closed_form(binary, capsys):
    # Under Dirichlet(1, ..., 1) weights a weighted mean has mean xbar and variance sum (x - xbar)^2 / (N (N + 1))
    # (Rubin 1981); the cross-entropy with the data's priors is the mean of -log P(true class | x).
    y, llr = binary
    p1 = y.mean()
    z = llr + np.log(p1 / (1 - p1))  # class-1 log-odds of the posteriors
    np.save("b.npy", llr / 4)  # the true LLR is 2.5 llr: B is further from it than A, so worse
    code, out, err = _run(capsys, "metrics", "--labels", "y.npy", "--scores", "llr.npy", "b.npy", "--names", "A",
                          "B", "--score-type", "llr", "--bootstrap", "cross_entropy", "--bootstrap-draws", "4000",
                          "--json")
    assert code == 0, err
    boot = json.loads(out)["bootstrap"]
    assert boot["metric"] == "cross_entropy" and boot["num_draws"] == 4000 and not boot["higher_is_better"]
    x = np.logaddexp(0, np.where(y == 1, -z, z))  # -log P(true class | x)
    n = len(x)
    sd = np.sqrt(np.sum((x - x.mean()) ** 2) / (n * (n + 1)))
    assert boot["estimate"]["A"] == pytest.approx(x.mean(), rel=1e-5)
    assert abs(boot["mean"]["A"] - x.mean()) < 4 * sd / np.sqrt(4000)
    low, high = boot["hdi"]["A"]
    assert (high - low) == pytest.approx(2 * 1.6449 * sd, rel=0.1)  # nearly normal at N = 400
    assert boot["p_best"]["A"] > 0.99 and boot["pairwise"]["A"]["B"] > 0.99


def test_bootstrap_calibration_loss_matches_a_scikit_learn_calibration(binary, capsys):
    # The estimate is the relative cross-entropy calibration loss (Ferrer 2022b, eq. 60) of the affine calibrator fitted
    # on the data: for LLRs with the data's priors, a logistic regression on the posterior log-odds.
    from sklearn.linear_model import LogisticRegression

    y, llr = binary
    p1 = y.mean()
    z = llr + np.log(p1 / (1 - p1))
    code, out, err = _run(capsys, "metrics", "--labels", "y.npy", "--scores", "llr.npy", "--names", "A",
                          "--score-type", "llr", "--bootstrap", "calibration_loss", "--bootstrap-draws", "200", "--json")
    assert code == 0, err
    boot = json.loads(out)["bootstrap"]
    fit = LogisticRegression(penalty=None, tol=1e-10).fit(z[:, None], y)
    zc = fit.decision_function(z[:, None])
    raw, calibrated = (np.mean(np.logaddexp(0, np.where(y == 1, -t, t))) for t in (z, zc))
    assert boot["metric"] == "calibration_loss" and not boot["higher_is_better"]
    assert boot["estimate"]["A"] == pytest.approx(100 * (raw - calibrated) / raw, rel=1e-4)
