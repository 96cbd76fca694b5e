"""Cross-validated calibration with groups of dependent samples (expected-cost's ``condition_ids``).

References are independent: the folds are checked for the property that matters (no group on both sides
of a split) and every calibrated sample is compared with an affine calibrator fitted by scipy on exactly
the samples outside its fold.
"""

import jax
import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_softmax

from ecjax import InputError
from ecjax import calibration as C


def _grouped_data(seed=0, num_groups=40, k=3):
    """Groups of 1..20 samples whose scores share a group offset (dependent samples), K classes."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 21, num_groups)
    groups = np.repeat(rng.permutation(1000)[:num_groups], sizes)  # arbitrary, non-contiguous ids
    n = len(groups)
    labels = rng.integers(0, k, n)
    offset = rng.normal(size=(num_groups, k))[np.repeat(np.arange(num_groups), sizes)]
    logits = 2.5 * np.eye(k)[labels] + offset + rng.normal(size=(n, k))
    return labels, 3.0 * logits, groups  # three times overconfident


def scipy_affine(lp, labels):
    """The affine calibrator ``log_softmax(a s + b)`` minimizing the mean cross-entropy, fitted with BFGS."""
    k = lp.shape[1]

    def nll(w):
        z = log_softmax(w[0] * lp + w[1:], axis=1)
        return -np.mean(z[np.arange(len(labels)), labels])

    w = minimize(nll, np.r_[1.0, np.zeros(k)], method="BFGS", options={"gtol": 1e-10}).x
    return lambda s: log_softmax(w[0] * s + w[1:], axis=1)


def test_grouped_folds_keep_groups_whole_and_are_keyed():
    labels, _, groups = _grouped_data()
    folds = C.grouped_folds(jax.random.key(0), labels, groups, 4)
    for g in np.unique(groups):
        assert len(np.unique(folds[groups == g])) == 1, g
    assert set(np.unique(folds)) == {0, 1, 2, 3}
    np.testing.assert_array_equal(folds, C.grouped_folds(jax.random.key(0), labels, groups, 4))
    assert np.any(folds != C.grouped_folds(jax.random.key(1), labels, groups, 4))
    # String ids (speaker names, say) are groups too.
    by_name = C.grouped_folds(jax.random.key(0), labels, np.char.add("speaker-", groups.astype(str)), 4)
    assert all(len(np.unique(by_name[groups == g])) == 1 for g in np.unique(groups))


def test_grouped_folds_stay_stratified_with_many_small_groups():
    rng = np.random.default_rng(5)
    labels = np.repeat([0, 1, 2], [600, 300, 100])
    groups = rng.permutation(np.arange(1000) // 2)  # 500 pairs of samples, mixed classes
    folds = C.grouped_folds(jax.random.key(2), labels, groups, 5)
    overall = np.bincount(labels) / len(labels)
    sizes = np.bincount(folds, minlength=5)
    assert sizes.min() >= 0.8 * len(labels) / 5
    for f in range(5):
        np.testing.assert_allclose(np.bincount(labels[folds == f], minlength=3) / sizes[f], overall, atol=0.05)


def test_no_fold_left_empty_with_as_many_groups_as_folds():
    # Two large one-class groups and two tiny ones: each fold must still get a group.
    labels = np.r_[np.zeros(50, int), np.ones(50, int), [0, 1]]
    groups = np.r_[np.zeros(50, int), np.ones(50, int), [2, 3]]
    for seed in range(5):
        folds = C.grouped_folds(jax.random.key(seed), labels, groups, 4)
        assert sorted(np.unique(folds)) == [0, 1, 2, 3]


def test_each_sample_calibrated_by_a_model_that_never_saw_its_group():
    labels, logits, groups = _grouped_data(seed=1)
    res = C.calibrate_cross_validated(logits, labels, key=jax.random.key(3), num_folds=4, score_type="logits",
                                      groups=groups)
    folds = np.asarray(res.folds)
    out = np.asarray(res.scores, np.float64)
    lp = log_softmax(logits, axis=1)
    for f in range(4):
        test = folds == f
        assert not set(groups[test]) & set(groups[~test])
        ref = scipy_affine(lp[~test], labels[~test])(lp[test])
        np.testing.assert_allclose(np.exp(out[test]), np.exp(ref), atol=2e-3)
    # Without groups the folds split groups (the optimistic protocol the groups exist to avoid).
    plain = np.asarray(C.calibrate_cross_validated(logits, labels, key=jax.random.key(3), num_folds=4,
                                                   score_type="logits").folds)
    assert any(len(np.unique(plain[groups == g])) > 1 for g in np.unique(groups))


@pytest.mark.parametrize("groups, num_folds, match", [
    (np.arange(10), 2, "`groups`"),                       # wrong length
    (np.r_[np.zeros(59), np.nan], 2, "`groups`"),           # NaN id
    (np.repeat([0, 1, 2], 20), 4, "number of groups"),      # 3 groups for 4 folds
    (np.full(60, None, dtype=object), 2, "`groups`"),       # not ids
])
def test_bad_groups_are_named(groups, num_folds, match):
    labels = np.tile([0, 1], 30)
    lp = log_softmax(np.random.default_rng(0).normal(size=(60, 2)), axis=1)
    with pytest.raises(InputError, match=match):
        C.calibrate_cross_validated(lp, labels, key=jax.random.key(0), num_folds=num_folds, groups=groups)


def test_a_class_confined_to_one_group_is_a_clear_error():
    labels = np.r_[np.zeros(30, int), np.ones(30, int), np.full(5, 2)]
    groups = np.r_[np.arange(60) // 3, np.full(5, 99)]  # every class-2 sample in group 99
    lp = log_softmax(np.random.default_rng(1).normal(size=(65, 3)), axis=1)
    with pytest.raises(InputError, match="class 2 has no samples"):
        C.calibrate_cross_validated(lp, labels, key=jax.random.key(0), num_folds=3, groups=groups)


@pytest.mark.parametrize("field, value, match", [
    ("tol", 0.0, r"^`tol` must be a positive finite number, got 0\.0$"),
    ("tol", float("inf"), r"^`tol` must be finite, got inf$"),
    ("tol", "1e-5", r"^`tol` must be a number, got '1e-5'$"),
    ("l2", -1e-3, r"^`l2` must be a non-negative finite number, got -0\.001$"),
    ("l2", None, r"^`l2` must be a number, got None$"),
])
def test_fit_settings_refuse_a_bad_tolerance_or_l2_naming_it(field, value, match):
    with pytest.raises(InputError, match=match):
        C.FitSettings(**{field: value})


def test_fit_settings_keep_tolerance_and_l2_as_floats():
    s = C.FitSettings(tol=1, l2=0)
    assert (s.tol, s.l2) == (1.0, 0.0) and isinstance(s.tol, float) and isinstance(s.l2, float)
    assert C.FitSettings(l2=np.float32(0.5)).l2 == 0.5


def test_more_folds_than_samples_is_refused_naming_num_folds():
    with pytest.raises(InputError, match=r"^`num_folds` must be <= 4, got 5$"):
        C.stratified_folds(jax.random.key(0), np.array([0, 1, 0, 1]), 5)
