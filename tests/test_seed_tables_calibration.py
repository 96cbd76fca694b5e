"""Ferrer (2022b) Tables 3-5 and Ferrer (2025) Table 1, reproduced with ecjax.simulate,
Bayes decisions, the PSRs and the calibrators.

Tolerances (fixed in advance, never widened): two-decimal entries within 0.015,
three-decimal entries within 0.003, Ferrer (2025)'s Cimb column within 0.04,
Ferrer (2022b) Table 5 within 1.5 percentage points.  Percentages printed with one
decimal (Table 3's "Abs") are three-decimal fractions (within 0.3 points);
whole percentages (Ferrer (2025)'s "abs") are two-decimal fractions (within 1.5
points).

Two kinds of sample.
- A JAX-keyed sample of the simulator (``calibration_study``, ``ec_study``),
  N = 10^5 as in the seeds.  Sampling noise is part of the comparison: every
  entry whose sampling sd is well below its tolerance is checked on it.
- The seeds' own sample: their code (``expected_cost.data``) draws the
  features with numpy's global seed 0; feeding those features to
  ``calibration_study_from_features`` (steps 4-7 in ecjax) must give the
  printed Table 3 exactly.  This is how the three-decimal NEC entries of
  Table 3 are checked: their sampling sd at N = 10^5 is about 0.007 (NEC =
  EC / 0.1), above the 0.003 tolerance, and the printed values lie 1-2 sd
  below the population values (e.g. NEC of LR-cal at alpha = 1: printed
  0.467, population 0.4748 by numerical integration), so no other sample can
  be expected to match them.

Parameters: the printed feature "standard deviations" (0.15 in Ferrer (2022b),
0.20 in Ferrer (2025)) are variances, and Ferrer (2022b)'s mc2 scale is 0.2 (not the
seeds' code default of 5); see the ecjax.simulate docstring for the evidence.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax

from ecjax import bayes_decisions
from ecjax import scores as S
from ecjax.calibration import calibrate_cross_validated
from ecjax.simulate import calibration_study, calibration_study_from_features, ec_study
from expected_cost.data import draw_data_for_gaussian_model

ALPHAS = np.array([0.01, 0.1, 0.2, 0.4, 0.6, 1.0])

# Ferrer (2022b) Table 3: alpha | LR-mc1: EC NEC Abs% | LR-cal: EC NEC Abs%.
TABLE3 = np.array([
    [0.010, 0.006, 0.638, 61.5, 0.005, 0.534, 41.1],
    [0.100, 0.030, 0.299, 12.3, 0.025, 0.249, 14.1],
    [0.200, 0.052, 0.521, 6.7, 0.035, 0.355, 8.2],
    [0.400, 0.076, 0.756, 2.0, 0.046, 0.456, 2.3],
    [0.600, 0.079, 0.786, 0.0, 0.047, 0.467, 0.0],
    [1.000, 0.079, 0.786, 0.0, 0.047, 0.467, 0.0],
])

ROWS = ["Datap", "Datap-temcal", "Datap-affcal", "Mismp", "Mismp-temcal", "Mismp-affcal"]
COLS = ["cal", "mc1", "mc2"]
# Ferrer (2022b) Table 4: per row, NEC | NEC with abs | cross-entropy | Brier, each for cal mc1 mc2.
TABLE4 = {
    "Datap":        [0.25, 0.29, 0.25, 0.14, 0.17, 0.93, 0.13, 0.17, 0.57, 0.21, 0.26, 0.70],
    "Datap-temcal": [0.25, 0.29, 0.25, 0.14, 0.17, 0.14, 0.13, 0.17, 0.13, 0.21, 0.26, 0.21],
    "Datap-affcal": [0.25, 0.25, 0.25, 0.14, 0.14, 0.14, 0.13, 0.13, 0.13, 0.21, 0.21, 0.21],
    "Mismp":        [1.11, 0.70, 1.11, 0.52, 0.61, 1.00, 0.50, 0.48, 0.99, 0.86, 0.70, 1.58],
    "Mismp-temcal": [1.11, 0.70, 1.11, 0.51, 0.39, 0.51, 0.50, 0.40, 0.50, 0.86, 0.58, 0.86],
    "Mismp-affcal": [0.25, 0.25, 0.25, 0.14, 0.14, 0.14, 0.13, 0.13, 0.13, 0.21, 0.21, 0.21],
}
# Ferrer (2022b) Table 5 (percent): cal-loss XE | cal-loss Brier | ECEmc (15 bins), each for cal mc1 mc2.
TABLE5 = {
    "Datap":        [0, 23, 77, 0, 20, 71, 0, 2, 22],
    "Datap-temcal": [0, 23, 0, 0, 20, 0, 0, 2, 0],
    "Datap-affcal": [0, 0, 0, 0, 0, 0, 0, 0, 0],
    "Mismp":        [74, 73, 87, 76, 71, 87, 2, 9, 28],
    "Mismp-temcal": [74, 68, 74, 76, 65, 76, 1, 1, 1],
    "Mismp-affcal": [0, 0, 0, 0, 0, 0, 0, 0, 0],
}


def _abstention_costs(alphas, k=2):
    """``[1 - I | alpha 1]`` (Ferrer 2022b, eq. 69, Ferrer (2025) eq. 21), rows = true class."""
    return np.stack([np.c_[1 - np.eye(k), np.full(k, a)] for a in alphas])


def _seeds_own_features(num_classes, first_prior, variance, n=100_000):
    """Steps 1-3 as the seeds' code draws them: numpy's global seed 0 (expected_cost.data)."""
    priors = np.array([first_prior] + [(1 - first_prior) / (num_classes - 1)] * (num_classes - 1))
    counts = np.array(priors * n, dtype=int)
    state = np.random.get_state()
    np.random.seed(0)
    try:
        feats, targets = draw_data_for_gaussian_model(np.arange(num_classes), variance, counts)
    finally:
        np.random.set_state(state)
    return feats, targets


def _table3(study):
    costs = _abstention_costs(ALPHAS)
    out = {}
    for name in ("mc1", "cal"):
        llr = study.llr[name]
        ec = np.asarray(S.bayes_expected_cost(study.labels, llr, costs, priors=study.data_priors, score_type="llr"))
        nec = np.asarray(S.bayes_expected_cost(study.labels, llr, costs, priors=study.data_priors, score_type="llr",
                                               normalize=True))
        dec = np.asarray(bayes_decisions(llr, costs, priors=study.data_priors, score_type="llr"))  # (6, N)
        out[name] = (ec, nec, 100 * np.mean(dec == 2, axis=1))
    return out


def _check(computed, printed, tol, what):
    computed, printed = np.asarray(computed, float), np.asarray(printed, float)
    bad = np.abs(computed - printed) > tol + 1e-9
    assert not bad.any(), f"{what}: computed {np.round(computed[bad], 4)} vs printed {printed[bad]} (tol {tol})"


# ---------------------------------------------------------------- Table 3

def test_seed002_table3_on_the_seeds_own_sample_is_exact():
    feats, labels = _seeds_own_features(2, 0.9, 0.15)
    t3 = _table3(calibration_study_from_features(feats, labels, 2))
    for j, name in enumerate(("mc1", "cal")):
        ec, nec, abstain = t3[name]
        _check(ec, TABLE3[:, 1 + 3 * j], 0.003, f"Table 3 EC LR-{name}")
        _check(nec, TABLE3[:, 2 + 3 * j], 0.003, f"Table 3 NEC LR-{name}")
        _check(abstain, TABLE3[:, 3 + 3 * j], 0.3, f"Table 3 Abs% LR-{name}")


def test_seed002_table3_on_a_keyed_sample():
    t3 = _table3(calibration_study(jax.random.key(0), 2))
    for j, name in enumerate(("mc1", "cal")):
        ec, nec, abstain = t3[name]
        _check(ec, TABLE3[:, 1 + 3 * j], 0.003, f"Table 3 EC LR-{name}")
        _check(abstain, TABLE3[:, 3 + 3 * j], 0.3, f"Table 3 Abs% LR-{name}")
        # NEC (three decimals) is not checked on this sample: its sampling sd (~0.007) exceeds the 0.003
        # tolerance (see the module docstring); the seeds' own sample above checks it exactly.
        # NEC = EC / naive EC, the naive EC being min(P1, P2, alpha) (Ferrer 2022b, §4.8.2):
        np.testing.assert_allclose(nec, ec / np.minimum(0.1, ALPHAS), rtol=1e-5)


# ------------------------------------------------------- Tables 4 and 5

def _tables45(study, key):
    """Table 4 and 5 entries for the 18 systems of Ferrer (2022b) §4.8.3 (5-fold CV calibration)."""
    y = study.labels
    k = 10
    c01 = 1 - np.eye(k)
    cabs = np.c_[c01, np.full(k, 0.1)]
    t4, t5, psr = {}, {}, {}
    for block in ("Datap", "Mismp"):
        for col in COLS:
            raw = study.posteriors[(block, col)]
            systems = {block: raw}
            for suffix, method in (("-temcal", "temperature"), ("-affcal", "affine")):
                systems[block + suffix] = calibrate_cross_validated(raw, y, key=key, method=method).scores
            for row, lp in systems.items():
                nec = float(S.bayes_expected_cost(y, lp, c01, normalize=True))
                nec_abs = float(S.bayes_expected_cost(y, lp, cabs, normalize=True))
                xe = float(S.cross_entropy(y, lp, normalize=True))
                br = float(S.brier(y, lp, normalize=True))
                ece = 100 * float(S.ece(y, lp, num_bins=15, variant="top_label"))
                t4[(row, col)] = [nec, nec_abs, xe, br]
                psr[(row, col)] = (xe, br, ece)
    for block in ("Datap", "Mismp"):
        for col in COLS:
            xe_min, br_min, _ = psr[(block + "-affcal", col)]
            for row in (block, block + "-temcal", block + "-affcal"):
                xe, br, ece = psr[(row, col)]
                # Eq. 60 with EPSRemin = the affcal value of the same block and column.
                t5[(row, col)] = [100 * (xe - xe_min) / xe, 100 * (br - br_min) / br, ece]
    return t4, t5


@pytest.fixture(scope="module")
def keyed_tables45():
    return _tables45(calibration_study(jax.random.key(0), 10), jax.random.key(1))


def _compare_tables(t4, t5):
    for row in ROWS:
        for c, col in enumerate(COLS):
            printed4 = [TABLE4[row][m * 3 + c] for m in range(4)]
            _check(t4[(row, col)], printed4, 0.015, f"Table 4 {row} {col} (NEC, NEC abs, XE, Brier)")
            printed5 = [TABLE5[row][m * 3 + c] for m in range(3)]
            _check(t5[(row, col)], printed5, 1.5, f"Table 5 {row} {col} (cal-loss XE, Brier, ECEmc %)")


def test_seed002_tables4_and_5_on_a_keyed_sample(keyed_tables45):
    _compare_tables(*keyed_tables45)


@pytest.mark.slow
def test_seed002_tables4_and_5_on_the_seeds_own_sample():
    feats, labels = _seeds_own_features(10, 0.9, 0.15)
    _compare_tables(*_tables45(calibration_study_from_features(feats, labels, 10), jax.random.key(1)))


# ------------------------------------------------------- Ferrer (2025) Table 1

# EC, NEC for C01, CinvP, Cimb; EC, NEC, abs% for Cabs1, Cabs2.
TABLE1_001 = {
    "Naive":  [0.20, 1.00, 0.90, 1.00, 0.98, 1.00, 0.05, 1.00, 100, 0.20, 1.00, 0],
    "Argmax": [0.06, 0.32, 0.28, 0.31, 0.36, 0.37, 0.06, 1.29, 0, 0.06, 0.32, 0],
    "Bayes":  [0.06, 0.32, 0.23, 0.26, 0.08, 0.08, 0.02, 0.35, 25, 0.06, 0.28, 7],
}


def test_seed001_table1_on_a_keyed_sample():
    """Ferrer (2025) Table 1 with N = 10^6 samples instead of the seed's 10^5.

    At N = 10^5 the Argmax row's Cabs1 NEC (the error rate divided by 0.05)
    has a sampling sd of about 0.0155, the size of its 0.015 tolerance (the
    seeds' own numpy-seed-0 sample gives 1.27 against the printed 1.29, a
    key-0 sample 1.31).  The population value is 1.294 (numerical
    integration), and with 10^6 samples (sd 0.005) every entry of the printed
    table is met; the sample size changes no expected value.
    """
    study = ec_study(jax.random.key(0), 10, num_samples=1_000_000)
    y, lp = study.labels, study.log_posteriors
    k = 10
    p = np.bincount(np.asarray(y), minlength=k) / y.shape[0]
    c01 = 1 - np.eye(k)
    cinvp = c01 / (k * p[:, None])  # c_ij = 1 / (K P_i), i != j
    cimb = c01.copy()
    cimb[-1] *= 100
    cabs1, cabs2 = np.c_[c01, np.full(k, 0.05)], np.c_[c01, np.full(k, 0.3)]
    matrices = [c01, cinvp, cimb, cabs1, cabs2]
    argmax = np.argmax(np.asarray(lp), 1)
    got = {"Naive": [], "Argmax": [], "Bayes": []}
    for c in matrices:
        naive = np.min(p @ c)
        naive_dec = np.argmin(p @ c)
        bayes = np.asarray(bayes_decisions(lp, c))
        for row, dec in (("Naive", np.full(y.shape[0], naive_dec)), ("Argmax", argmax), ("Bayes", bayes)):
            ec = float(np.mean(c[np.asarray(y), dec]))
            got[row] += [ec, ec / naive]
            if c.shape[1] > k:
                got[row].append(100 * np.mean(dec == k))
        # The EC of Bayes decisions from ecjax's scores module agrees with the decisions above, up to
        # float32 near-ties (a few of the 10^6 samples at an exact decision boundary, ~1e-6 each).
        np.testing.assert_allclose(float(S.bayes_expected_cost(y, lp, c)), got["Bayes"][-3 if c.shape[1] > k else -2],
                                   atol=1e-5)
    # Column tolerances: 0.015 (two decimals); Cimb (columns 4-5) 0.04; abs% 1.5 points.
    tol = np.array([0.015] * 4 + [0.04] * 2 + [0.015, 0.015, 1.5, 0.015, 0.015, 1.5])
    for row, printed in TABLE1_001.items():
        computed = np.asarray(got[row])
        bad = np.abs(computed - np.asarray(printed, float)) > tol + 1e-9
        assert not bad.any(), f"Ferrer (2025) Table 1 {row}: computed {np.round(computed, 3)} vs printed {printed}"
