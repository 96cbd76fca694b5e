"""Bad input to the score functions (the checks of ``ecjax._src.scores.inputs`` and of each function's own options):
each raises ``InputError`` with a message naming the problem."""

from __future__ import annotations

import numpy as np
import pytest

from ecjax import InputError
from ecjax import scores as S


def test_bad_inputs_raise_input_error():
    lp = np.log(np.array([[0.3, 0.7], [0.6, 0.4], [0.5, 0.5]]))
    y = np.array([1, 0, 1])
    with pytest.raises(InputError, match="NaN"):
        S.cross_entropy(y, np.where(np.eye(3, 2) > 0, np.nan, lp))
    with pytest.raises(InputError, match=r"\+inf"):
        S.brier(y, np.where(np.eye(3, 2) > 0, np.inf, lp))
    with pytest.raises(InputError, match="logits"):
        S.cross_entropy(y, lp + 1.0)  # rows do not normalize
    with pytest.raises(InputError, match="labels"):
        S.cross_entropy([0, 2, 1], lp)  # label out of range
    with pytest.raises(InputError, match="same number"):
        S.brier([0, 1], lp)
    with pytest.raises(InputError, match="single class|one class"):
        S.cross_entropy([1, 1, 1], lp, normalize=True)
    with pytest.raises(InputError, match="single class"):
        S.auc([1, 1, 1], lp)
    with pytest.raises(InputError, match="single class"):
        S.eer([0, 0, 0], lp)
    with pytest.raises(InputError, match="score_type"):
        S.cross_entropy(y, lp, score_type="probabilities")
    with pytest.raises(InputError, match="binning"):
        S.ece(y, lp, binning="quantile")
    with pytest.raises(InputError, match="variant"):
        S.ece(y, lp, variant="classwise")
    with pytest.raises(InputError, match="K = 2"):
        S.auc([0, 1, 2], np.log(np.full((3, 3), 1 / 3)))
    with pytest.raises(InputError, match="priors"):
        S.cross_entropy(y, np.array([0.1, -0.3, 2.0]), score_type="llr")  # LLRs need priors
    with pytest.raises(InputError, match="sensitivity"):
        S.specificity_at_sensitivity(y, lp, 1.5)


def test_resolved_variant_resolves_auto_and_refuses_binary_beyond_two_classes():
    from ecjax._src.scores.inputs import resolved_variant

    choices = ("auto", "binary", "top_label", "classwise")
    assert resolved_variant("auto", 2, choices) == "binary"
    assert resolved_variant("auto", 3, choices) == "top_label"
    assert [resolved_variant(c, 2, choices) for c in choices[1:]] == ["binary", "top_label", "classwise"]
    assert resolved_variant("top_label", 5, choices) == "top_label"
    with pytest.raises(InputError, match=r"^variant='binary' needs K = 2 classes, got K = 3; use "
                                         r"variant='top_label' or 'classwise'$"):
        resolved_variant("binary", 3, choices)
    # The remedy offers only the variants of the caller: the ECE has no classwise form.
    with pytest.raises(InputError, match=r"^variant='binary' needs K = 2 classes, got K = 4; use variant='top_label'$"):
        resolved_variant("binary", 4, S.ECE_VARIANTS)


def test_epsr_metric_names_a_scoring_rule_with_what_it_needs():
    from ecjax._src.scores.inputs import EPSR_METRICS, epsr_metric

    assert EPSR_METRICS == ("xe", "brier", "bayes_ec")
    assert epsr_metric("xe", None) == "xe" and epsr_metric("brier", np.eye(2)) == "brier"
    assert epsr_metric("bayes_ec", 1.0 - np.eye(2)) == "bayes_ec"
    with pytest.raises(InputError, match=r"^`metric` must be one of \('xe', 'brier', 'bayes_ec'\), got 'ece'$"):
        epsr_metric("ece", None)
    with pytest.raises(InputError, match=r"^metric='bayes_ec' needs `costs` \(the cost matrix of the Bayes "
                                         r"decisions\)$"):
        epsr_metric("bayes_ec", None)


def test_the_priors_the_score_functions_are_given():
    # Reference: numpy's class counts over their total, and the rule written out: likelihoods get priors (the
    # deployment priors, else the test set's frequencies), posteriors keep theirs (issue 32.2: moved from the command
    # line into the library).
    from ecjax._src.inputs import LIKELIHOOD_TYPES, SCORE_TYPES
    from ecjax._src.scores.inputs import class_frequencies, likelihood_priors, priors_or_frequencies, score_priors

    y = np.array([0, 2, 2, 1, 2, 0])
    w = np.array([1.0, 0.5, 2.0, 0.0, 1.0, 3.0])
    np.testing.assert_allclose(class_frequencies(y, 4), [2 / 6, 1 / 6, 3 / 6, 0.0])
    np.testing.assert_allclose(class_frequencies(y, 3, w), np.array([4.0, 0.0, 3.5]) / 7.5)
    deployment = np.array([0.2, 0.3, 0.5])
    assert priors_or_frequencies(deployment, y, 3) is deployment
    for st in SCORE_TYPES:
        got = likelihood_priors(st, None, y, 3, w)
        if st in LIKELIHOOD_TYPES:
            np.testing.assert_allclose(got, class_frequencies(y, 3, w))
            assert likelihood_priors(st, deployment, y, 3) is deployment
            np.testing.assert_allclose(score_priors(st, None, y, 3, w), class_frequencies(y, 3, w))
        else:
            assert got is None and score_priors(st, None, y, 3) is None
            assert score_priors(st, deployment, y, 3) is deployment


def test_binary_ranking_measures_share_one_input_check():
    # Issue 32.8: ROC/AUC/EER and the PR/DET curves took binary labels through two sets of helpers (scores/inputs.py
    # and ranking_curves.py) that said the same problem differently; one check now serves both, naming the measure.
    lp = np.log(np.array([[0.3, 0.7], [0.6, 0.4], [0.5, 0.5]]))
    for f, what in [(S.auc, "ROC, AUC or EER"), (S.eer, "ROC, AUC or EER"),
                    (S.precision_recall_curve, "a precision-recall curve"), (S.det_curve, "a DET curve"),
                    (S.average_precision, "average precision")]:
        with pytest.raises(InputError, match=rf"^`labels` has no sample of class 0: {what} needs samples of both "
                                             r"classes \(a single class has nothing to rank\)$"):
            f([1, 1, 1], lp)
        with pytest.raises(InputError, match=rf"^`sample_weight` is 0 for every sample of class 1: {what} needs "
                                             "weight in both classes$"):
            f([1, 0, 1], lp, sample_weight=[0.0, 1.0, 0.0])
    # The decision curve shares the check; one class is not enough for another reason, which it gives.
    with pytest.raises(InputError, match=r"^`labels` has no sample of class 1: a decision curve needs samples of "
                                         r"both classes \(its net benefit weighs the true-positive rate, among "
                                         r"class 1, against the false-positive rate, among class 0\)$"):
        S.decision_curve([0, 0, 0], lp, threshold_probabilities=0.5)


def test_stacked_canonical_scores_have_the_values_of_the_stacked_files():
    # `ecjax sweep` stacks the files' canonical scores instead of checking the stacked files again: the values must
    # be those of the stacked array, where a float64 file promotes a float32 one (logits less their row maximum in
    # float64, probabilities logged in float64) -- stacking the per-file float32 values would differ in the last bits.
    from ecjax.inputs import canonical_scores, stack_scores

    rng = np.random.default_rng(0)
    l64 = 1e3 + rng.normal(size=(50, 3))
    l32 = (1e3 + rng.normal(size=(50, 3))).astype(np.float32)
    stacked = stack_scores([canonical_scores(a, score_type="logits") for a in (l64, l32)])
    a = np.stack([l64, l32])  # float64, as numpy stacks them
    np.testing.assert_array_equal(stacked.values, (a - a.max(-1, keepdims=True)).astype(np.float32))
    same = stack_scores([canonical_scores(a, score_type="logits") for a in (l32, l32 + 1)])
    np.testing.assert_array_equal(same.values, np.stack([l32, l32 + 1]))  # float32 files: cast only, no shift
    p64 = rng.dirichlet(np.ones(3), 50)
    p64[0] = [0.0, 0.5, 0.5]
    p32 = rng.dirichlet(np.ones(3), 50).astype(np.float32)
    stacked = stack_scores([canonical_scores(p, score_type="probabilities") for p in (p64, p32)])
    p = np.stack([p64, p32])
    with np.errstate(divide="ignore"):
        expected = np.log(np.maximum(p, np.finfo(np.float64).tiny)).astype(np.float32)
    np.testing.assert_array_equal(stacked.values, expected)
    np.testing.assert_array_equal(stacked.exact_zeros, p == 0)
    with pytest.raises(InputError, match="same number of samples"):
        stack_scores([canonical_scores(p, score_type="probabilities") for p in (p64, p32[:40])])
