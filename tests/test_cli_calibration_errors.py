"""`ecjax calibrate --method isotonic|beta --calibration-errors`, run in this process (``cli.main``): the calibrated
scores against scikit-learn, the calibration errors against numpy written here."""
import dataclasses
import json

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from ecjax import cli


def _binary_files(tmp_path, rng, name, n):
    y = rng.integers(0, 2, n)
    log_odds = 3.0 * (y - 0.5) + rng.normal(size=n)  # overconfident: the class-1 log-odds are 3 per unit
    np.save(tmp_path / f"{name}_y.npy", y)
    np.save(tmp_path / f"{name}_s.npy", np.stack([-np.logaddexp(0, log_odds), -np.logaddexp(0, -log_odds)], 1))
    return y, log_odds


def test_held_out_isotonic_matches_scikit_learn_and_errors_match_numpy(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(6)
    y_tr, z_tr = _binary_files(tmp_path, rng, "train", 500)
    y_te, z_te = _binary_files(tmp_path, rng, "test", 300)
    monkeypatch.chdir(tmp_path)
    code = cli.main(["calibrate", "--train-scores", "train_s.npy", "--train-labels", "train_y.npy", "--scores",
                     "test_s.npy", "--labels", "test_y.npy", "--method", "isotonic", "--output", "out.npy",
                     "--calibration-errors", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rec = json.loads(out)
    # Isotonic regression of the labels on the class-1 log-odds, predictions interpolated and clipped at the ends;
    # ecjax clips the probabilities to [1e-6, 1 - 1e-6] (a log needs them away from 0 and 1).
    ref = IsotonicRegression(out_of_bounds="clip").fit(z_tr, y_tr).predict(z_te)
    got = np.exp(np.load("out.npy")[:, 1])
    np.testing.assert_allclose(got, np.clip(ref, 1e-6, 1 - 1e-6), atol=2e-6)
    # ECE and MCE before calibration: 15 equal-width bins of the class-1 posterior (upper edges closed).
    p = 1 / (1 + np.exp(-z_te))
    b = np.clip(np.ceil(p * 15).astype(int) - 1, 0, 14)
    gaps = [(np.sum(b == m), abs(np.mean(y_te[b == m]) - np.mean(p[b == m]))) for m in range(15) if np.any(b == m)]
    ece = sum(c * g for c, g in gaps) / len(p)
    errors = rec["calibration_errors"]
    assert errors["ECE"]["before"] == pytest.approx(ece, abs=1e-6)
    assert errors["MCE"]["before"] == pytest.approx(max(g for _, g in gaps), abs=1e-6)
    assert errors["RMS"]["before"] == pytest.approx(np.sqrt(sum(c * g * g for c, g in gaps) / len(p)), abs=1e-6)
    assert set(errors) == {"ECE", "MCE", "RMS", "classwise ECE", "adaptive (ACE)", "smooth ECE"}


def test_beta_calibration_is_offered_and_reports_its_iterations(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(7)
    _binary_files(tmp_path, rng, "d", 300)
    monkeypatch.chdir(tmp_path)
    code = cli.main(["calibrate", "--scores", "d_s.npy", "--labels", "d_y.npy", "--method", "beta",
                     "--output", "out.npy"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "fitted beta calibrator" in out and "L-BFGS iterations" in out
    assert "ECE" not in out  # only with --calibration-errors


def test_a_class_absent_from_the_training_labels_is_refused_by_the_library_check(tmp_path, monkeypatch, capsys):
    # The library's condition (calibration.class_totals_to_calibrate), said of the training labels file, before
    # anything is fitted or written.
    rng = np.random.default_rng(8)
    _binary_files(tmp_path, rng, "test", 100)
    np.save(tmp_path / "train_y.npy", np.zeros(80, int))  # class 1 never occurs
    np.save(tmp_path / "train_s.npy", np.log(np.full((80, 2), 0.5)))
    monkeypatch.chdir(tmp_path)
    code = cli.main(["calibrate", "--train-scores", "train_s.npy", "--train-labels", "train_y.npy", "--scores",
                     "test_s.npy", "--labels", "test_y.npy", "--output", "out.npy"])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "out.npy").exists()
    assert "train_y.npy: class 1 has no samples in the training data: a calibrator cannot be fitted" in err


# Issue 30 item 7: a calibrator that fails writes no file (it wrote one, exit 0, with "NOT converged" beside it), and
# the histogram's bins of one class no longer write -inf (145 of 1821 SST-2 rows with --cv 5).
def test_a_fit_that_does_not_converge_writes_nothing(tmp_path, monkeypatch, capsys):
    from ecjax._src import calibration

    _binary_files(tmp_path, np.random.default_rng(3), "d", 200)
    monkeypatch.chdir(tmp_path)
    @dataclasses.dataclass(frozen=True)
    class OneStep(calibration.FitSettings):  # the command's settings, but one L-BFGS step
        max_iter: int = 1

    monkeypatch.setattr(calibration, "FitSettings", OneStep)
    code = cli.main(["calibrate", "--scores", "d_s.npy", "--labels", "d_y.npy", "--method", "beta", "--cv", "3",
                     "--output", "out.npy"])
    out, err = capsys.readouterr()
    assert code == 1 and "did not converge" in err and "nothing written to out.npy" in err, (code, out, err)
    assert not (tmp_path / "out.npy").exists()


def test_histogram_cross_validation_on_sst2_writes_finite_log_posteriors(tmp_path, monkeypatch, capsys):
    from conftest import load_dataset

    labels, scores, _ = load_dataset("sst2_gpt2")
    np.save(tmp_path / "y.npy", labels), np.save(tmp_path / "s.npy", scores)
    monkeypatch.chdir(tmp_path)
    code = cli.main(["calibrate", "--scores", "s.npy", "--labels", "y.npy", "--method", "histogram", "--cv", "5",
                     "--output", "out.npy", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    written = np.load("out.npy")
    assert written.shape == scores.shape and np.all(np.isfinite(written)), int(np.sum(~np.isfinite(written)))
    np.testing.assert_allclose(np.exp(written).sum(1), 1.0, rtol=1e-5)
