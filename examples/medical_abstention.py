"""A medical decision with an abstention option (Ferrer 2025, App. B, Ferrer (2022b) §4.8.2), with ecjax.

A binary test: 90 % of patients are healthy (class 0), 10 % sick (class 1).  A wrong
diagnosis costs 1; sending the patient for more tests ("abstain") costs alpha whatever
the truth.  Bayes decisions abstain exactly when the expected cost of both diagnoses
exceeds alpha.  They are only as good as the posteriors they are made from: the
miscalibrated LLRs (LR-mc1 of Ferrer (2022b) §4.8) abstain too often or too rarely and cost more
than the calibrated ones, and a cross-validated LLR calibration (optax L-BFGS) recovers most of the gap.

    python examples/medical_abstention.py
"""

import jax
import numpy as np

import ecjax
from ecjax import calibration, costs, simulate

study = simulate.calibration_study(jax.random.key(0), 2, num_samples=20_000)
labels = np.asarray(study.labels)
priors = np.asarray(study.data_priors)
calibrated_mc1 = calibration.calibrate_cross_validated(
    study.llr["mc1"], labels, key=jax.random.key(1), method="llr", score_type="llr").scores

systems = {"LR-cal (calibrated)": study.llr["cal"], "LR-mc1 (miscalibrated)": study.llr["mc1"],
           "LR-mc1 after 5-fold LLR calibration": calibrated_mc1}
print(f"{'alpha':>5}  {'system':38s} {'EC':>7} {'NEC':>6} {'abstained':>9}")
for alpha in (0.01, 0.05, 0.1, 0.3, 0.5):
    c = costs.zero_one(2, abstain=alpha)  # columns: healthy, sick, more tests
    for name, llr in systems.items():
        dec = ecjax.bayes_decisions(llr, c, priors=priors, score_type="llr")
        counts = ecjax.confusion_matrix(labels, dec, num_classes=2, num_decisions=3)
        ec = float(ecjax.expected_cost(counts, c))
        nec = float(ecjax.normalized_expected_cost(counts, c))
        print(f"{alpha:5.2f}  {name:38s} {ec:7.4f} {nec:6.3f} {100 * np.mean(np.asarray(dec) == 2):8.1f}%")
    print()
print("The naive system (always the cheapest fixed decision) costs min(P0, P1, alpha): NEC = 1.")
