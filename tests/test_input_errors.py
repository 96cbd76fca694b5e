"""Bad input raises ``ecjax.InputError`` (a ``ValueError``) naming the argument.

One test per case of bad input, each asserting that the message names
the offending argument.  Where an input is valid but a quantity is degenerate
(a class absent from the test data with data priors) the value is checked
against a hand computation instead.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import jax.numpy as jnp

from ecjax import InputError, costs, metrics
from ecjax._src import inputs
from ecjax.confusion import confusion_matrix, joint_outcome_table
from ecjax.decisions import bayes_decisions, log_posteriors, naive_decision
from ecjax.scores import bayes_expected_cost, optimal_threshold_expected_cost

COUNTS = np.array([[3, 1], [2, 4]])
C01 = np.array([[0.0, 1.0], [1.0, 0.0]])
LOG_POST = np.log(np.array([[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]]))
LABELS = np.array([0, 1, 1])


def test_input_error_is_value_error():
    assert issubclass(InputError, ValueError)


# ------------------------------------------------------------ labels/decisions

@pytest.mark.parametrize(
    "labels, decisions, kwargs, name",
    [
        ([0, 1, 2], [0, 1, 1], dict(num_classes=2), "labels"),          # label out of range
        ([0, -1, 1], [0, 1, 1], {}, "labels"),                          # negative label
        ([0, 1, 1], [0, 1, 3], dict(num_decisions=3), "decisions"),     # decision out of range
        ([0, 1, 1], [0, -2, 1], {}, "decisions"),
        ([0, 1.5, 1], [0, 1, 1], {}, "labels"),                         # non-integer
        ([0, 1, 1], [0.0, 0.25, 1.0], {}, "decisions"),
        (["a", "b", "a"], [0, 1, 1], {}, "labels"),                     # not numeric
        ([0, np.nan, 1], [0, 1, 1], {}, "labels"),
        ([0, 1, 1], [0, 1], {}, "labels"),                              # lengths differ
        ([], [], {}, "labels"),                                         # empty
        ([0, 1, 1], [0, 1, 1], dict(num_classes=0), "num_classes"),
        ([0, 1, 1], [0, 1, 1], dict(num_decisions=2.5), "num_decisions"),
    ],
)
def test_confusion_matrix_bad_labels_or_decisions(labels, decisions, kwargs, name):
    with pytest.raises(InputError, match=f"`{name}`"):
        confusion_matrix(labels, decisions, **kwargs)


def test_confusion_matrix_bad_weights_and_batch_axes():
    with pytest.raises(InputError, match="`sample_weight`"):
        confusion_matrix([0, 1, 1], [0, 1, 1], sample_weight=[1.0, -1.0, 1.0])
    with pytest.raises(InputError, match="`sample_weight`"):
        confusion_matrix([0, 1, 1], [0, 1, 1], sample_weight=[1.0, np.inf, 1.0])
    with pytest.raises(InputError, match="`sample_weight`"):
        confusion_matrix([0, 1, 1], [0, 1, 1], sample_weight=[1.0, 1.0])
    with pytest.raises(InputError, match="`labels`.*`decisions`"):
        confusion_matrix(np.zeros((2, 4), int), np.zeros((3, 4), int))


def test_joint_outcome_table_bad_shapes():
    with pytest.raises(InputError, match="`labels`"):
        joint_outcome_table(np.zeros((2, 4), int), np.zeros((2, 4), int))
    with pytest.raises(InputError, match="`decisions`"):
        joint_outcome_table([0, 1, 1, 0], [0, 1, 1, 0])
    with pytest.raises(InputError, match="`labels`.*`decisions`"):
        joint_outcome_table([0, 1, 1], np.zeros((2, 4), int))
    with pytest.raises(InputError, match="`decisions`"):
        joint_outcome_table([0, 1, 1], [[0, 1, 5], [0, 0, 0]], num_decisions=2)


# ---------------------------------------------------------------- counts/costs

@pytest.mark.parametrize(
    "counts, name",
    [
        (np.array([[3, -1], [2, 4]]), "counts"),           # negative count
        (np.array([[3, np.nan], [2, 4]]), "counts"),
        (np.zeros((2, 2), int), "counts"),                 # no samples
        (np.zeros((0, 2), int), "counts"),                 # empty
        (np.array([1, 2]), "counts"),                      # not a matrix
    ],
)
def test_bad_counts(counts, name):
    with pytest.raises(InputError, match=f"`{name}`"):
        metrics.expected_cost(counts, C01)


@pytest.mark.parametrize(
    "bad_costs",
    [
        np.array([[0.0, np.nan], [1.0, 0.0]]),
        np.array([[0.0, np.inf], [1.0, 0.0]]),
        np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.5]]),     # K x D shape differs from the counts
        np.ones((3, 2)),
        np.array([0.0, 1.0]),
    ],
)
def test_bad_costs_for_counts(bad_costs):
    for fn in (metrics.expected_cost, metrics.normalized_expected_cost):
        with pytest.raises(InputError, match="`costs`"):
            fn(COUNTS, bad_costs)
    with pytest.raises(InputError, match="`utilities`"):
        metrics.utility_yield(COUNTS, bad_costs)


def test_batch_axes_of_counts_and_costs_must_broadcast():
    counts = np.stack([COUNTS] * 3)
    with pytest.raises(InputError, match="`counts`.*`costs`"):
        metrics.expected_cost(counts, np.stack([C01] * 4))
    with pytest.raises(InputError, match="`counts`.*`utilities`"):
        metrics.utility_yield(counts, np.stack([C01] * 2))
    # (3, 1, K, D) counts with (4, K, D) costs broadcast to (3, 4).
    assert metrics.expected_cost(counts[:, None], np.stack([C01] * 4)).shape == (3, 4)


def test_bad_costs_for_scores():
    with pytest.raises(InputError, match="`costs`"):
        bayes_decisions(LOG_POST, np.ones((3, 3)))              # K rows differ from the scores
    with pytest.raises(InputError, match="`costs`"):
        bayes_decisions(LOG_POST, np.array([[0.0, np.nan], [1.0, 0.0]]))
    with pytest.raises(InputError, match="`costs`"):
        bayes_expected_cost(LABELS, LOG_POST, np.ones((3, 2)))
    with pytest.raises(InputError, match="`costs`"):
        optimal_threshold_expected_cost(LABELS, LOG_POST, np.ones((2, 3)))


def test_nec_undefined_when_a_decision_is_free():
    free = np.array([[0.0, 1.0], [0.0, 1.0]])  # decision 0 costs nothing for every class
    with pytest.raises(InputError, match="NEC is undefined"):
        metrics.normalized_expected_cost(COUNTS, free)
    with pytest.raises(InputError, match="NEC is undefined"):
        bayes_expected_cost(LABELS, LOG_POST, free, normalize=True)


# ---------------------------------------------------------------------- priors

@pytest.mark.parametrize("priors", [[-0.2, 1.2], [0.3, 0.3], [0.5, 0.6], [0.5, np.nan], [0.2, 0.3, 0.5], [[]]])
def test_bad_priors(priors):
    with pytest.raises(InputError, match="`priors`"):
        metrics.expected_cost(COUNTS, C01, priors=priors)
    with pytest.raises(InputError, match="`priors`"):
        bayes_decisions(LOG_POST[:, 1] - LOG_POST[:, 0], C01, priors=priors, score_type="llr")


def test_priors_and_score_type_combinations():
    # Posterior-type scores already carry their priors: passing priors is refused, not ignored.
    with pytest.raises(InputError, match="`priors`"):
        bayes_decisions(LOG_POST, C01, priors=[0.5, 0.5])
    # Likelihood-type scores need priors.
    with pytest.raises(InputError, match="`priors`"):
        bayes_decisions(LOG_POST, C01, score_type="log_likelihoods")
    with pytest.raises(InputError, match="`priors`"):
        log_posteriors(np.array([0.1, -2.0]), score_type="llr")


def test_absent_class_with_deployment_priors_is_an_error():
    counts = np.array([[3, 1, 0], [2, 4, 0], [0, 0, 0]])   # class 2 has no test samples
    c = 1.0 - np.eye(3)
    with pytest.raises(InputError, match="`priors`"):
        metrics.expected_cost(counts, c, priors=[0.3, 0.3, 0.4])
    with pytest.raises(InputError, match="`priors`"):
        metrics.normalized_expected_cost(counts, c, priors=[0.3, 0.3, 0.4])
    with pytest.raises(InputError, match="`priors`"):
        bayes_expected_cost([0, 1, 1], np.log(np.full((3, 3), 1 / 3)), c, priors=[0.3, 0.3, 0.4])


def test_absent_class_with_data_priors_has_weight_zero():
    """With data priors an absent class has P_i = 0: EC = sum_i P_i sum_j c_ij R_ij over present classes."""
    counts = np.array([[3, 1, 0], [2, 4, 0], [0, 0, 0]])
    c = 1.0 - np.eye(3)
    # By hand: P = (4/10, 6/10, 0); R_01 = 1/4, R_10 = 2/6: EC = 0.4/4 + 0.6 * 2/6 = 0.3.
    np.testing.assert_allclose(float(metrics.expected_cost(counts, c)), 0.3, rtol=1e-6)
    # Naive EC: min_d sum_i c_id P_i = min(0.6, 0.4, 1.0) = 0.4, so NEC = 0.75.
    np.testing.assert_allclose(float(metrics.normalized_expected_cost(counts, c)), 0.75, rtol=1e-6)
    # A deployment prior of 0 on the absent class is accepted: 0.5/4 + 0.5 * 2/6.
    np.testing.assert_allclose(float(metrics.expected_cost(counts, c, priors=[0.5, 0.5, 0.0])),
                               0.5 / 4 + 0.5 * 2 / 6, rtol=1e-6)
    # Balanced accuracy leaves the absent class out of the mean: (3/4 + 4/6) / 2.
    np.testing.assert_allclose(float(metrics.balanced_accuracy(counts)), (3 / 4 + 4 / 6) / 2, rtol=1e-6)
    # The same through scores: labels never contain class 2.
    log_post = np.log(np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1]]))
    # Decisions 0, 1, 0, 1 on labels 0, 1, 1, 1: one error of class 1: EC = P_1 * 1/3 = 0.75/3.
    np.testing.assert_allclose(float(bayes_expected_cost([0, 1, 1, 1], log_post, c)), 0.25, rtol=1e-6)


# ---------------------------------------------------------------------- scores

@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_scores(bad):
    s = LOG_POST.copy()
    s[1, 0] = bad
    with pytest.raises(InputError, match="`scores`"):
        bayes_decisions(s, C01)
    with pytest.raises(InputError, match="`scores`"):
        bayes_expected_cost(LABELS, s, C01)
    with pytest.raises(InputError, match="`scores`"):
        optimal_threshold_expected_cost(LABELS, s, C01)


def test_bad_scores_shapes():
    with pytest.raises(InputError, match="`scores`"):
        bayes_decisions(np.zeros((0, 2)), C01)                     # empty
    with pytest.raises(InputError, match="`scores`"):
        bayes_decisions(np.zeros((3, 1)), np.zeros((1, 1)))        # a single class
    with pytest.raises(InputError, match="`scores`"):
        bayes_decisions(np.array([0.0, 0.0]), C01)                 # not (N, K)
    with pytest.raises(InputError, match="`labels`.*`scores`"):
        bayes_expected_cost([0, 1], LOG_POST, C01)                 # N differs
    with pytest.raises(InputError, match="`labels`"):
        bayes_expected_cost([0, 1, 2], LOG_POST, C01)              # label >= K
    with pytest.raises(InputError, match="`labels`"):
        optimal_threshold_expected_cost([0, 1, 0.5], LOG_POST, C01)


def test_unnormalized_log_posteriors_suggest_logits():
    with pytest.raises(InputError, match="`scores`.*logits"):
        bayes_decisions(np.array([[2.0, 1.0], [0.0, 3.0]]), C01)
    # The same numbers are fine as logits.
    np.testing.assert_array_equal(np.asarray(bayes_decisions(np.array([[2.0, 1.0], [0.0, 3.0]]), C01,
                                                             score_type="logits")), [0, 1])


@pytest.mark.parametrize("score_type", ["posteriors", "log_likelihood_ratios", "LOGITS", None])
def test_unknown_score_type(score_type):
    with pytest.raises(InputError, match="`score_type`"):
        bayes_decisions(LOG_POST, C01, score_type=score_type)
    with pytest.raises(InputError, match="`score_type`"):
        log_posteriors(LOG_POST, score_type=score_type)
    with pytest.raises(InputError, match="`score_type`"):
        bayes_expected_cost(LABELS, LOG_POST, C01, score_type=score_type)


def test_optimal_threshold_needs_binary_scores():
    s = np.log(np.full((3, 3), 1 / 3))
    with pytest.raises(InputError, match="binary"):
        optimal_threshold_expected_cost([0, 1, 2], s, 1 - np.eye(3))


# ------------------------------------------------------------- cost matrices

def test_rescale_unit_of_constant_utilities():
    with pytest.raises(InputError, match="`utilities`"):
        costs.rescale_unit(np.full((2, 2), 3.0))
    with pytest.raises(InputError, match="`utilities`"):
        costs.xy_from_utility(np.full((2, 2), -1.0))
    with pytest.raises(InputError, match="`utilities`"):
        costs.rescale_unit(np.stack([np.eye(2), np.ones((2, 2))]))   # one constant matrix in a batch


def test_bad_cost_constructor_arguments():
    with pytest.raises(InputError, match="`num_classes`"):
        costs.zero_one(1)
    with pytest.raises(InputError, match="`num_classes`"):
        costs.zero_one(2.0)
    with pytest.raises(InputError, match="`abstain`"):
        costs.zero_one(3, abstain=-0.1)
    with pytest.raises(InputError, match="`abstain`"):
        costs.zero_one(3, abstain=np.nan)
    with pytest.raises(InputError, match="`priors`"):
        costs.balanced([0.0, 1.0])
    with pytest.raises(InputError, match="`priors`"):
        costs.balanced([0.4, 0.4])
    for beta in (0.0, -1.0, np.inf):
        with pytest.raises(InputError, match="`beta`"):
            costs.f_beta(beta)
    for p in (0.0, 1.0, 1.5):
        with pytest.raises(InputError, match="`threshold_probability`"):
            costs.net_benefit(p)
    with pytest.raises(InputError, match="`x`"):
        costs.utility_from_xy(np.nan, 0.0)
    with pytest.raises(InputError, match="`x`, `y`"):
        costs.utility_from_xy(0.8, -0.8)                                # outside the hexagon (|x - y| > 1)
    with pytest.raises(InputError, match="`costs`"):
        costs.normalize_rows(np.array([[0.0, np.inf], [1.0, 0.0]]))
    with pytest.raises(InputError, match="`costs`"):
        naive_decision(np.array([[0.0, np.nan], [1.0, 0.0]]), [0.5, 0.5])
    with pytest.raises(InputError, match="`priors`"):
        naive_decision(C01, [0.5, 0.6])


# --------------------------------------------------------- classical metrics

def test_bad_metric_options():
    with pytest.raises(InputError, match="`average`"):
        metrics.precision(COUNTS, average="weighted")
    with pytest.raises(InputError, match="`pos_label`"):
        metrics.recall(COUNTS, pos_label=2)
    with pytest.raises(InputError, match="`pos_label`"):
        metrics.net_benefit(COUNTS, threshold_probability=0.2, pos_label=5)
    with pytest.raises(InputError, match="`pos_label`"):
        metrics.positive_likelihood_ratio(COUNTS, pos_label=-1)
    with pytest.raises(InputError, match="`beta`"):
        metrics.f_beta_score(COUNTS, beta=0.0)
    with pytest.raises(InputError, match="`threshold_probability`"):
        metrics.net_benefit(COUNTS, threshold_probability=1.0)
    with pytest.raises(InputError, match="`counts`"):
        metrics.f1_score(np.ones((2, 3)))                              # needs square counts
    with pytest.raises(InputError, match="likelihood ratios"):
        metrics.positive_likelihood_ratio(np.array([[3, 1], [0, 0]]))  # no positive samples
    with pytest.raises(InputError, match="`values`"):
        metrics.general_performance_score([0.5])
    with pytest.raises(InputError, match="`values`"):
        metrics.general_performance_score([0.5, -0.1])
    with pytest.raises(InputError, match="`values`"):
        metrics.general_performance_score([0.5, np.nan])


def test_traced_labels_need_num_classes():
    import jax
    with pytest.raises(InputError, match="`num_classes`"):
        jax.jit(lambda y, d: confusion_matrix(y, d))(jnp.array([0, 1]), jnp.array([0, 1]))


def test_an_input_error_carries_its_argument_problem_and_mentions():
    # Issue 32.2: what a front end needs to say an error in its own names, as fields; str(err) as before. Reference:
    # the messages as the library wrote them before the fields.
    from ecjax._src import inputs as v

    p = np.random.default_rng(0).dirichlet(np.ones(3), size=10)
    with pytest.raises(InputError) as info:
        v.as_scores(p, "scores", score_type="logits")
    err = info.value
    assert str(err).startswith("`scores` rows look like probabilities") and err.argument == "scores"
    assert err.mentions == {"probabilities": ("score_type", "probabilities")}
    assert err.problem_said(lambda a, value: f"<{a}:{value}>").endswith("not log-domain scores: pass "
                                                                       "<score_type:probabilities>")
    with pytest.raises(InputError) as info:
        v.check_posterior_type("llr", "training_priors")
    assert str(info.value) == ("`training_priors` is for posterior-type scores (log_posteriors, logits, "
                               "probabilities), got score_type='llr'") and info.value.argument == "training_priors"
    with pytest.raises(InputError) as info:
        v.check_same_length("labels", np.zeros(3), "scores", np.zeros(4))
    assert str(info.value) == "`labels` and `scores` must have the same number of samples, got 3 and 4"
    assert info.value.problem_said(lambda a, value: a.upper()) == "LABELS and SCORES must have the same number of " \
                                                                  "samples, got 3 and 4"
    with pytest.raises(InputError) as info:  # free text with braces stays literal
        v.check_classes_present(np.array([0, 0]), None, 2, why="see {this}")
    assert str(info.value) == "`labels` has no sample of class 1: see {this}"
    assert info.value.problem_said(lambda a, value: "Y") == "Y has no sample of class 1: see {this}"
    plain = InputError("`x` must be 1")
    assert (plain.argument, plain.problem, plain.template, plain.mentions) == (None, None, None, {})


def test_the_shared_class_and_weight_checks_say_which_class_and_why():
    # One check each for "a class without samples", "all weights 0" and "a prior on a class without samples",
    # which the score functions, curves, bootstrap, comparisons and the command line all call.
    from ecjax._src import inputs as v

    y = np.array([0, 0, 2, 2])
    with pytest.raises(InputError, match=r"`labels` has no sample of class 1: because"):
        v.check_classes_present(y, None, 3, why="because")
    with pytest.raises(InputError, match=r"`labels` has no sample of classes 1, 3: x"):
        v.check_classes_present(y, None, 4, why="x")
    w = np.array([1.0, 2.0, 0.0, 0.0])
    with pytest.raises(InputError, match=r"`sample_weight` is 0 for every sample of class 2: x"):
        v.check_classes_present(y, w, 3, classes=[0, 2], why="x")
    v.check_classes_present(y, w, 3, classes=[0], why="x")  # only the classes asked for
    # Batched labels: a row without the class fails.
    with pytest.raises(InputError, match="class 1"):
        v.check_classes_present(np.array([[0, 1, 1], [0, 0, 0]]), None, 2, why="x")
    with pytest.raises(InputError, match=r"`sample_weight` is 0 for every sample \(system 1\)"):
        v.check_some_weight(np.zeros(4), " (system 1)")
    v.check_some_weight(np.array([0.0, 1e-30]))
    v.check_some_weight(None)
    with pytest.raises(InputError, match="class 'b' has no test samples of non-zero `sample_weight` but a non-zero"):
        v.check_priors_cover(np.array([3.0, 0.0]), np.array([0.5, 0.5]), weighted=True, class_names=["a", "b"])
    with pytest.raises(InputError, match="class 1 has no test samples but"):  # any row of several systems
        v.check_priors_cover(np.array([[3, 2], [4, 0]]), np.array([0.5, 0.5]))
    v.check_priors_cover(np.array([3, 0]), np.array([1.0, 0.0]))  # no prior on the absent class
    v.check_priors_cover(np.array([3, 0]), None)  # data priors: an absent class has weight 0


# One check of bounds serves the utility priors, the prior intervals and the cost-specification files.
@pytest.mark.parametrize("check, message", [
    (lambda: inputs.check_bounds(3.0, 1.0), "low <= high, but low > high: 3.0 > 1.0"),
    (lambda: inputs.check_bounds([0, 2, 5], [1, 1, 1]), "low > high at entry 1: 2 > 1"),
    (lambda: inputs.check_bounds(np.zeros((2, 2)), [[1, 1], [-1, 1]], "the [uncertainty] intervals"),
     r"the \[uncertainty\] intervals must satisfy low <= high, but low > high at entry \(1, 0\)"),
    (lambda: inputs.check_inside([[0, 5]], 0, [[1, 4]], "`nominal`"),
     r"`nominal` must lie inside \[low, high\] at entry \(0, 1\): 5 is outside \[0, 4\]"),
    (lambda: inputs.check_prior_intervals([0.5, 0.6], [0.4, 0.7]), "low > high at entry 0: 0.5 > 0.4"),
    (lambda: inputs.check_prior_intervals([-0.1, 0.1], [0.9, 1.0]), r"within \[0, 1\]"),
    (lambda: inputs.check_prior_intervals([0.1, 0.1], [0.2, 0.2]), "sum\\(low\\) = 0.2 and sum\\(high\\) = 0.4"),
])
def test_bounds_checks_name_the_first_bad_entry(check, message):
    with pytest.raises(InputError, match=message):
        check()


def test_bounds_checks_pass_valid_bounds():
    inputs.check_bounds([0, 1], [0, 2])  # equal bounds are an interval of one point
    inputs.check_inside([0.5, 1.0], [0, 1], [1, 1], "`x`")
    inputs.check_prior_intervals([0.2, 0.3], [0.7, 0.8])


# --------------------------------------------------- generic validators: priors > 0, strings, names, groups

def test_as_positive_priors_returns_the_priors_and_names_a_row_with_a_zero():
    np.testing.assert_allclose(np.asarray(inputs.as_positive_priors([0.25, 0.75])), [0.25, 0.75])
    np.testing.assert_allclose(np.asarray(inputs.as_positive_priors([[0.5, 0.5], [0.1, 0.9]])),
                               [[0.5, 0.5], [0.1, 0.9]])
    with pytest.raises(InputError, match=r"^`priors` must be > 0 for every class \(they divide\), got \[0\.0, 1\.0\]$"):
        inputs.as_positive_priors([[0.5, 0.5], [0.0, 1.0]], why=" (they divide)")
    with pytest.raises(InputError, match=r"^`training_priors` must be > 0 for every class, got \[1\.0, 0\.0\]$"):
        inputs.as_positive_priors([1.0, 0.0], "training_priors")
    with pytest.raises(InputError, match="`priors` must sum to 1"):  # the checks of as_priors come first
        inputs.as_positive_priors([0.5, 0.6])
    with pytest.raises(InputError, match="`priors` must have 3 entries"):
        inputs.as_positive_priors([0.5, 0.5], num_classes=3)


def test_as_positive_priors_leaves_traced_priors_to_the_nan_contract():
    import jax

    out = jax.jit(lambda p: inputs.as_positive_priors(p))(jnp.array([0.0, 1.0]))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 1.0])


def test_as_optional_str():
    assert inputs.as_optional_str("a title", "title") == "a title"
    assert inputs.as_optional_str("", "title") == ""
    assert inputs.as_optional_str(None, "title") is None
    for bad in (3, b"bytes", ["y"]):
        with pytest.raises(InputError, match=rf"^`Frame\.xlabel` must be a string or None, got {re.escape(repr(bad))}$"):
            inputs.as_optional_str(bad, "Frame.xlabel")


def test_as_names():
    assert inputs.as_names(["no", "yes"], "class_names") == ("no", "yes")
    assert inputs.as_names(iter(("a",)), "class_names") == ("a",)
    assert inputs.as_names((), "class_names") == ()
    for bad in ("ab", b"ab", 2, (0, 1), ["a", None]):
        with pytest.raises(InputError, match=rf"^`class_names` must be a sequence of strings, got {re.escape(repr(bad))}$"):
            inputs.as_names(bad, "class_names")


def test_as_group_index():
    ids, which = inputs.as_group_index(np.array(["b", "a", "b", "c"]), 4)
    assert ids.tolist() == ["a", "b", "c"] and which.tolist() == [1, 0, 1, 2]
    ids, which = inputs.as_group_index([7, 7, 3], 3)
    assert ids.tolist() == [3, 7] and which.tolist() == [1, 1, 0]
    ids, which = inputs.as_group_index([0.5, 2.0, 0.5], 3)  # float ids are ids too, when finite
    assert ids.tolist() == [0.5, 2.0] and which.tolist() == [0, 1, 0]
    with pytest.raises(InputError, match=r"`groups` must be a vector with one id per sample \(3\), got shape \(2,\)"):
        inputs.as_group_index([1, 2], 3)
    with pytest.raises(InputError, match="`groups` must be integer or string ids, got dtype object"):
        inputs.as_group_index(np.array([None, None], dtype=object), 2)
    with pytest.raises(InputError, match="`groups` contains NaN; all entries must be finite"):
        inputs.as_group_index([0.0, np.nan], 2)
    with pytest.raises(InputError, match="`groups` contains inf"):
        inputs.as_group_index([0.0, np.inf], 2)


def test_check_type():
    import os
    from pathlib import Path

    assert inputs.check_type("out.png", (str, os.PathLike), "Frame.path", "a file path") == "out.png"
    p = Path("out.png")
    assert inputs.check_type(p, (str, os.PathLike), "Frame.path", "a file path") is p
    with pytest.raises(InputError, match=r"^`Frame\.path` must be a file path \(str or os\.PathLike\), got float$"):
        inputs.check_type(3.5, (str, os.PathLike), "Frame.path", "a file path (str or os.PathLike)")
    with pytest.raises(InputError, match=r"^`ax` must be a list, got tuple$"):
        inputs.check_type((1,), list, "ax", "a list")


def test_check_numbers_between_bounds():
    def between(x, name, low, high):
        return inputs.check_numbers(x, name, low=low, high=high, strict=True)

    assert between(0.5, "p", 0.0, 1.0) == 0.5
    x = np.array([0.1, 0.9])
    assert between(x, "p", 0.0, 1.0) is x
    between([[-0.5, 2.5]], "x", -1.0, 3.0)
    for bad, got in ((0.0, "0.0"), (1.0, "1.0"), (np.nan, "nan"), (np.inf, "inf")):  # open: the ends are out
        with pytest.raises(InputError, match=rf"^`p` must be in \(0, 1\), got {got}$"):
            between(bad, "p", 0.0, 1.0)
    with pytest.raises(InputError, match=r"^`p` must be in \(0, 0\.5\), got 0\.7 at entry \(1, 0\)$"):
        between([[0.1, 0.2], [0.7, 0.9]], "p", 0.0, 0.5)
    with pytest.raises(InputError, match=r"^`p` must be in \[0, 1\], got 1\.5 at entry \(1,\)$"):  # closed ends
        inputs.check_numbers([1.0, 1.5], "p", low=0.0, high=1.0)
    assert inputs.check_numbers([0.0, 1.0], "p", low=0.0, high=1.0) == [0.0, 1.0]
    with pytest.raises(InputError, match="^`p` must be numeric, got dtype <U3$"):  # strings: not numbers
        between(["0.5"], "p", 0.0, 1.0)
    import jax

    out = jax.jit(lambda p: between(p, "p", 0.0, 1.0))(jnp.array([2.0]))  # traced: the NaN contract
    np.testing.assert_array_equal(np.asarray(out), [2.0])


def test_check_axis_at_least():
    x = np.zeros((3, 2))
    assert inputs.check_axis_at_least(x, "values", 2, "metrics (last axis)") is x
    inputs.check_axis_at_least(x, "values", 3, "systems (first axis)", axis=0)
    with pytest.raises(InputError, match=r"^`values` needs at least 2 metrics \(last axis\), got shape \(3, 1\)$"):
        inputs.check_axis_at_least(np.zeros((3, 1)), "values", 2, "metrics (last axis)")
    with pytest.raises(InputError, match=r"^`values` needs at least 4 systems \(first axis\), got shape \(3, 2\)$"):
        inputs.check_axis_at_least(x, "values", 4, "systems (first axis)", axis=0)
    with pytest.raises(InputError, match=r"^`values` needs at least 1 entries, got shape \(\)$"):  # a scalar has none
        inputs.check_axis_at_least(1.0, "values", 1, "entries")
    import jax

    jax.jit(lambda a: inputs.check_axis_at_least(a, "values", 2, "metrics"))(jnp.zeros(2))  # a static check
    with pytest.raises(InputError, match="needs at least 3 metrics"):
        jax.jit(lambda a: inputs.check_axis_at_least(a, "values", 3, "metrics"))(jnp.zeros(2))


# ============================================================ the generic checks of ecjax/inputs.py

@pytest.mark.parametrize("shape, forms, sizes, ok", [
    ((2, 3), ("(K, D)", "(M, K, D)"), None, True),
    ((4, 2, 3), ("(K, D)", "(M, K, D)"), {"K": 2}, True),
    ((4, 3, 3), ("(K, D)", "(M, K, D)"), {"K": 2}, False),      # K pinned
    ((3, 3, 3, 3), ("(K, D)", "(M, K, D)"), None, False),        # no form of 4 axes
    ((3, 3), ("(K, K)",), None, True),
    ((2, 3), ("(K, K)",), None, False),                           # a repeated letter is one size
    ((2, 2), ("(2, 2)",), None, True),
    ((2, 3), ("(2, 2)",), None, False),                           # a number is exact
    ((5,), ("(N,)",), None, True),
    ((5, 1), ("(N,)",), None, False),
])
def test_check_shape_accepts_exactly_the_forms(shape, forms, sizes, ok):
    from ecjax._src.inputs import check_shape

    x = np.zeros(shape)
    if ok:
        assert check_shape(x, "x", *forms, sizes=sizes) is x
        return
    with pytest.raises(InputError) as info:
        check_shape(x, "x", *forms, sizes=sizes, why=" (a reason)")
    pinned = "".join(f" with {k} = {v}" for k, v in (sizes or {}).items())
    assert str(info.value) == f"`x` must be {' or '.join(forms)}{pinned} (a reason), got shape {shape}"


def test_check_exclusive_check_binary_as_flag_and_a_nonnegative_scalar():
    from ecjax._src.inputs import as_flag, as_scalar, check_binary, check_exclusive

    check_exclusive({"a": 1, "b": None})
    check_exclusive({"a": None, "b": None}, required=False)
    for given, required, said in [({"a": 1, "b": 2}, True, "give exactly one of `a` and `b`"),
                                  ({"a": None, "b": None}, True, "give exactly one of `a` and `b`"),
                                  ({"a": 1, "b": 2}, False, "give `a` or `b`, not both")]:
        with pytest.raises(InputError) as info:
            check_exclusive(given, required=required)
        assert str(info.value) == said
    check_binary(2, "a curve")
    with pytest.raises(InputError) as info:
        check_binary(3, "a curve")
    assert str(info.value) == "a curve needs binary scores (K = 2), got 3 classes"
    assert info.value.problem == "needs binary scores (K = 2), got 3 classes"
    assert as_flag(np.bool_(True), "f") is True and as_flag(False, "f") is False
    for bad in (1, 0, "True", None):
        with pytest.raises(InputError, match="`f` must be True or False"):
            as_flag(bad, "f")
    assert as_scalar(0, "r", low=0) == 0.0 and as_scalar(np.float32(2.5), "r", low=0) == 2.5
    for bad, said in [(-1e-9, "`r` must be a non-negative finite number"), (np.inf, "`r` must be finite"),
                      ("1", "`r` must be a number")]:
        with pytest.raises(InputError, match=said):
            as_scalar(bad, "r", low=0)


def test_check_choice_refuses_arrays_and_lists_with_an_input_error():
    # `x in choices` compares an array elementwise (numpy raises a plain ValueError): none of them is a choice.
    from ecjax._src.inputs import check_choice

    assert check_choice("fast", "precision", ("exact", "fast")) == "fast"
    for bad in (np.array(["exact", "fast"]), np.array("exact"), ["exact"], None, 1):
        with pytest.raises(InputError, match=r"`precision` must be one of \('exact', 'fast'\)"):
            check_choice(bad, "precision", ("exact", "fast"))


def test_system_names_are_one_per_system_distinct_and_non_empty():
    # Results are keyed by name (p_best, the CLI's records): two systems of one name would collapse into one entry.
    from ecjax._src.inputs import system_names
    from ecjax.prob import Systems

    assert system_names(["a", "b"], None, 2) == ("a", "b")
    assert system_names(None, ("x", "y"), 2) == ("x", "y") and system_names(None, None, 2) == ("system 0", "system 1")
    for given, said in [(["a"], "`names` names 1 systems, but there are 2"),
                        (["a", "a"], "`names` must give each system its own non-empty name, got ['a', 'a']"),
                        (["a", " "], "`names` must give each system its own non-empty name, got ['a', ' ']")]:
        with pytest.raises(InputError) as info:
            system_names(given, None, 2, "names")
        assert str(info.value) == said
    with pytest.raises(InputError, match="own non-empty name"):
        Systems(np.array([0, 1, 1]), decisions=np.array([[0, 1, 1], [1, 1, 0]]), names=["m", "m"])


@pytest.mark.parametrize("paired", ["false", "False", 0, 1, None, np.array([True])])
def test_systems_paired_must_be_a_boolean(paired):
    # Issue 30, item 10: paired="false" was read as True (a non-empty string).
    from ecjax.prob import Systems

    with pytest.raises(InputError, match="`paired` must be True or False"):
        Systems(np.array([0, 1, 1]), decisions=np.array([[0, 1, 1], [1, 1, 0]]), paired=paired)


def test_systems_from_a_mapping_whose_keys_print_alike_are_refused():
    # {1: ..., "1": ...} gave two systems both named "1": results keyed by name collapsed into one.
    from ecjax.prob import Systems
    from ecjax._src.prob.inputs import as_named_counts

    with pytest.raises(InputError, match=r"the keys of `decisions` must name each system once, but \['1'\]"):
        Systems(np.array([0, 1, 1]), decisions={1: np.array([0, 1, 1]), "1": np.array([1, 1, 0])})
    with pytest.raises(InputError, match="the keys of `scores`"):
        Systems(np.array([0, 1]), scores={2.0: LOG_POST[:2], "2.0": LOG_POST[:2]})
    with pytest.raises(InputError, match="the keys of `counts`"):
        as_named_counts({1: COUNTS, "1": COUNTS})
    assert Systems(np.array([0, 1, 1]), decisions={1: np.array([0, 1, 1]), "2": np.array([1, 1, 0])}).names == (
        "1", "2")


@pytest.mark.parametrize("groups, said", [(np.array([0.0, np.nan, 1.0]), "`groups` contains NaN"),
                                          (np.array([0.0, 1.0, np.inf]), "`groups` contains inf"),
                                          (np.array(["a", float("nan"), "b"], dtype=object), "`groups` must be")])
def test_nan_group_ids_are_refused(groups, said):
    # A NaN id is not equal to itself: the NaN samples formed a cluster np.unique made up.
    from ecjax.prob import Systems

    with pytest.raises(InputError, match=said):
        Systems(np.array([0, 1, 1]), decisions=np.array([[0, 1, 1], [1, 1, 0]]), groups=groups)
    ok = Systems(np.array([0, 1, 1]), decisions=np.array([[0, 1, 1], [1, 1, 0]]), groups=np.array([0.0, 2.5, 2.5]))
    assert ok.groups is not None


def test_positive_priors_problem_and_posterior_type():
    # `problem` says every failure of the priors the one way a front end asks for them.
    from ecjax._src.inputs import as_positive_priors, check_posterior_type

    for given, said in [([0.5, 0.6], "`p` must sum to 1"), ([1.0, 0.0], "`p` must be > 0 for every class"),
                        ([0.5, 0.25, 0.25], "`p` must have 2 entries (one per class)")]:
        with pytest.raises(InputError, match=re.escape(said)) as info:
            as_positive_priors(given, "p", num_classes=2)
        assert info.value.problem == f"2 positive numbers summing to 1, got {given}"
    np.testing.assert_allclose(np.asarray(as_positive_priors([0.25, 0.75], "p", num_classes=2)), [0.25, 0.75])
    for st in ("log_posteriors", "logits", "probabilities"):
        assert check_posterior_type(st, "training_priors") == st
    with pytest.raises(InputError) as info:
        check_posterior_type("llr", "training_priors", why=": pass the deployment `priors` only")
    assert str(info.value) == ("`training_priors` is for posterior-type scores (log_posteriors, logits, "
                               "probabilities), got score_type='llr': pass the deployment `priors` only")
