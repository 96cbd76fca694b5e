"""prob.Systems: the data of compare and bootstrap_metric, checked once when made.

References: the same systems given in each accepted form (stacked arrays, lists, mappings) must give the same
canonical fields and the same comparison, draw for draw; the fields are compared with the numpy arrays the test
built; every bad input raises InputError naming what is wrong.
"""

import numpy as np
import pytest

import jax

import ecjax
from ecjax import prob

KEY = jax.random.key(5)


def _data(n=40, m=2, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    decisions = np.stack([np.where(rng.random(n) < acc, labels, 1 - labels) for acc in (0.85, 0.7)[:m]])
    logits = rng.normal(size=(m, n, 2)) + 2.0 * np.eye(2)[labels]
    scores = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
    return labels, decisions, scores


def test_every_form_gives_the_same_fields():
    labels, decisions, _ = _data()
    stacked = prob.Systems(labels, decisions, names=["a", "b"])
    listed = prob.Systems([labels, labels], [decisions[0], decisions[1]], names=["a", "b"])
    mapped = prob.Systems({"a": labels, "b": labels}, {"a": decisions[0], "b": decisions[1]})
    for s in (stacked, listed, mapped):
        assert s.names == ("a", "b") and s.num_systems == 2 and s.paired and s.shared
        assert s.scores is None and s.score_type == "log_posteriors" and s.decision_rule == "expected_utility"
        for m in range(2):
            np.testing.assert_array_equal(np.asarray(s.labels[m]), labels)
            np.testing.assert_array_equal(np.asarray(s.decisions[m]), decisions[m])
    assert prob.Systems(labels, decisions).names == ("system 0", "system 1")


def test_weights_are_split_per_system_as_float64_and_groups_kept():
    labels, decisions, _ = _data()
    w = np.arange(40) % 3
    s = prob.Systems(labels, decisions, sample_weight=w, groups=np.arange(40) // 4)
    assert len(s.sample_weight) == 2 and all(x.dtype == np.float64 for x in s.sample_weight)
    np.testing.assert_array_equal(s.sample_weight[1], w.astype(float))
    np.testing.assert_array_equal(s.groups, np.arange(40) // 4)
    unpaired = prob.Systems([labels, labels[:30]], [decisions[0], decisions[1][:30]], paired=False,
                            sample_weight=[w, w[:30]])
    assert not unpaired.shared and [x.shape for x in unpaired.sample_weight] == [(40,), (30,)]


def test_the_systems_object_is_frozen():
    labels, decisions, _ = _data()
    s = prob.Systems(labels, decisions)
    with pytest.raises(AttributeError):
        s.paired = False


def test_compare_reads_every_form_alike():
    # Same systems, same key: the same draws, whichever form the data came in.
    labels, _, scores = _data(n=60, seed=1)
    settings = prob.MonteCarloSettings(num_draws=2000)
    costs = prob.cost_ratio(1, 5)
    a = prob.compare(prob.Systems(labels, scores=scores, names=["x", "y"]), costs=costs, key=KEY, settings=settings)
    b = prob.compare(prob.Systems({"x": labels, "y": labels}, scores={"x": scores[0], "y": scores[1]}), costs=costs,
                     key=KEY, settings=settings)
    np.testing.assert_array_equal(np.asarray(a.yields), np.asarray(b.yields))
    assert a.systems == b.systems == ("x", "y")
    # Probabilities in, log-posteriors out: the same decisions and the same numbers.
    c = prob.compare(prob.Systems(labels, scores=np.exp(scores), score_type="probabilities", names=["x", "y"]),
                     costs=costs, key=KEY, settings=settings)
    np.testing.assert_allclose(np.asarray(c.yields), np.asarray(a.yields), rtol=1e-6)


@pytest.mark.parametrize("make, message", [
    (lambda y, d, s: prob.Systems(y), "exactly one of `decisions` and `scores`"),
    (lambda y, d, s: prob.Systems(y, d, scores=s), "exactly one of `decisions` and `scores`"),
    (lambda y, d, s: prob.Systems(y, d, decision_rule="each_draw"), "decision_rule"),
    (lambda y, d, s: prob.Systems(y, scores=s, score_type="odds"), "score_type"),
    (lambda y, d, s: prob.Systems(y[:-1], d), "`labels` of system 0 has 39 entries, but its decisions have 40"),
    (lambda y, d, s: prob.Systems(y, scores=s[:, :-1]), "`labels` of system 0 has 40 entries, but its scores have 39"),
    (lambda y, d, s: prob.Systems(np.stack([y, y, y]), d), "3 label vectors for 2 systems"),
    (lambda y, d, s: prob.Systems(y, d, names=["a"]), "`names` names 1 systems, but there are 2"),
    (lambda y, d, s: prob.Systems(y, d.astype(float) + 0.5), "decisions"),
    (lambda y, d, s: prob.Systems(y, np.zeros((2, 40, 2), int)), r"\(N,\) or \(M, N\)"),
    (lambda y, d, s: prob.Systems(y, {}), "`decisions` is empty"),
    (lambda y, d, s: prob.Systems([y, 1 - y], d), "paired systems must share their labels"),
    (lambda y, d, s: prob.Systems(y, d, sample_weight=-np.ones(40)), "non-negative"),
    (lambda y, d, s: prob.Systems(y, d, sample_weight=np.ones((2, 40)) * [[1], [2]]), "must share `sample_weight`"),
    (lambda y, d, s: prob.Systems(y, d, groups=np.arange(39)), "`groups`"),
    (lambda y, d, s: prob.Systems([y, y], [d[0], d[1]], paired=False, groups=np.arange(40)), "needs paired systems"),
])
def test_bad_systems_name_what_is_wrong(make, message):
    labels, decisions, scores = _data()
    with pytest.raises(ecjax.InputError, match=message):
        make(labels, decisions, scores)


def test_functions_refuse_anything_but_a_systems_object():
    labels, decisions, _ = _data()
    with pytest.raises(ecjax.InputError, match="`systems` must be an ecjax.prob.Systems"):
        prob.compare(labels, costs=prob.cost_ratio(1, 5), key=KEY)
    with pytest.raises(ecjax.InputError, match="`systems` must be an ecjax.prob.Systems"):
        prob.bootstrap_metric(labels, "auc", key=KEY)


def test_bootstrap_metric_takes_paired_scores_only():
    labels, decisions, scores = _data()
    with pytest.raises(ecjax.InputError, match="holds decisions"):
        prob.bootstrap_metric(prob.Systems(labels, decisions), "auc", key=KEY)
    unpaired = prob.Systems([labels, labels], scores=[scores[0], scores[1]], paired=False)
    with pytest.raises(ecjax.InputError, match="must be paired"):
        prob.bootstrap_metric(unpaired, "auc", key=KEY)
    with pytest.raises(ecjax.InputError, match="decision_rule"):
        prob.bootstrap_metric(prob.Systems(labels, scores=scores, decision_rule="per_draw"), "auc", key=KEY)
    # (settings.mc_error is taken since the bootstrap draws until precise: tests/test_bootstrap_real_sizes.py; so is
    # settings.progress since it reports through the chunked runner: tests/test_draw_runner.py.)


def test_the_systems_say_what_they_hold():
    labels, decisions, scores = _data()
    assert repr(prob.Systems(labels, decisions, names=["a", "b"])) == "Systems(['a', 'b'], decisions, N = 40, paired)"
    unpaired = prob.Systems([labels, labels[:30]], scores=[scores[0], scores[1][:30]], paired=False,
                            sample_weight=[np.ones(40), np.ones(30)])
    assert repr(unpaired) == "Systems(['system 0', 'system 1'], scores (log_posteriors), N = [30, 40], unpaired, weighted)"
    assert prob.Systems(labels, decisions) != prob.Systems(labels, decisions)  # arrays inside: compared by identity


# ------------------------------------------------------------------ the canonical forms of ecjax._src.prob.inputs

from ecjax._src.prob import inputs as pin  # noqa: E402


def test_paired_scores_stack_the_systems_of_one_test_set():
    labels, _, scores = _data()
    w = np.arange(40, dtype=float) % 3
    groups = np.arange(40) // 4
    got = pin.paired_scores(prob.Systems(labels, scores={"a": scores[0], "b": scores[1]}, groups=groups,
                                         sample_weight=w))
    np.testing.assert_array_equal(np.asarray(got.labels), labels)
    assert got.scores.shape == (2, 40, 2)
    np.testing.assert_array_equal(got.scores, np.stack([scores[0], scores[1]]))
    np.testing.assert_array_equal(got.sample_weight, w)
    np.testing.assert_array_equal(got.groups, groups)
    assert got.names == ("a", "b") and got.score_type == "log_posteriors"
    assert pin.paired_scores(prob.Systems(labels, scores=scores)).sample_weight is None


def test_paired_scores_refuse_what_a_reweighting_cannot_evaluate():
    labels, decisions, scores = _data()
    three = np.log(np.full((40, 3), 1 / 3))
    for systems, message in [
        (prob.Systems(labels, decisions), "`systems` holds decisions"),
        (prob.Systems([labels, labels], scores=[scores[0], scores[1]], paired=False), "`systems` must be paired"),
        (prob.Systems(labels, scores=scores, decision_rule="per_draw"), "`systems.decision_rule` does not apply"),
        (prob.Systems(labels, scores=[scores[0], three]),
         r"`scores` systems must have the same shape, got \[\(40, 2\), \(40, 3\)\]"),
        (labels, "`systems` must be an ecjax.prob.Systems"),
    ]:
        with pytest.raises(ecjax.InputError, match=message):
            pin.paired_scores(systems)


def test_systems_make_their_scores_canonical_once_and_take_canonical_values_as_they_are():
    from ecjax import inputs

    rng = np.random.default_rng(3)
    labels = rng.integers(0, 3, 30)
    probs = [rng.dirichlet(np.ones(3), 30) for _ in range(2)]
    systems = prob.Systems(labels, scores=probs, score_type="probabilities")
    canonical = systems.canonical
    assert systems.canonical is canonical  # made once, then kept
    for got, p in zip(canonical, probs):
        # Probabilities in the log domain (numpy's float64 log, cast as the library casts: float32).
        np.testing.assert_allclose(np.asarray(got.values), np.log(p), rtol=1e-6)
        assert (got.num_classes, got.score_type) == (3, "probabilities")
    stacked = pin.stacked_scores(systems)
    np.testing.assert_allclose(np.asarray(stacked.values), np.log(np.stack(probs)), rtol=1e-6)
    # Values made canonical already (the command line's) are kept as they are, not checked again.
    again = prob.Systems(labels, scores=list(canonical), score_type="probabilities")
    assert all(a is b for a, b in zip(again.canonical, canonical))
    unnormalized = prob.Systems(labels, scores=np.zeros((2, 30, 2)))  # made: the scores are checked when used
    with pytest.raises(ecjax.InputError, match=r"`scores\[0\]` rows do not normalize as log-posteriors"):
        _ = unnormalized.canonical
    with pytest.raises(ecjax.InputError, match="`score_type` is 'logits', but the scores were made canonical as "
                                               "'probabilities'"):
        _ = prob.Systems(labels, scores=list(canonical), score_type="logits").canonical
    llr = inputs.canonical_scores(rng.normal(size=30), score_type="llr")
    assert (llr.score_type, llr.num_classes) == ("llr", 2)
    assert prob.Systems(labels, decisions=np.zeros((2, 30), int)).canonical is None


class _Kind:
    def __init__(self, higher_is_better, binary, options):
        self.higher_is_better, self.binary, self.options = higher_is_better, binary, options


BUILTINS = {"xe": _Kind(False, False, ("priors",)), "auc": _Kind(True, True, ()),
            "nec": _Kind(False, True, ("priors", "costs"))}


def test_metric_spec_of_built_in_and_user_metrics():
    def f(labels, log_posteriors, weights):
        return 0.0

    spec = pin.as_metric_spec
    assert spec("auc", None, builtins=BUILTINS, score_type="logits") == pin.MetricSpec("auc", True, True, ())
    assert spec("auc", True, builtins=BUILTINS, score_type="logits") == pin.MetricSpec("auc", True, True, ())
    assert spec("nec", None, builtins=BUILTINS, score_type="log_posteriors", priors=[0.5, 0.5],
                costs=np.eye(2)) == pin.MetricSpec("nec", False, True, ("priors", "costs"))
    assert spec(f, np.bool_(False), builtins=BUILTINS, score_type="logits") == pin.MetricSpec(f, False, False, ())
    # Likelihood scores need priors to become posteriors, whatever the metric.
    assert spec("auc", None, builtins=BUILTINS, score_type="llr", priors=[0.5, 0.5]).options == ()


def test_metric_spec_refuses_unknown_metrics_and_unused_options():
    def f(labels, log_posteriors, weights):
        return 0.0

    for args, kwargs, message in [
        (("accuracy", None), {}, r"`metric` must be one of \('xe', 'auc', 'nec'\), got 'accuracy'"),
        ((42, True), {}, r"`metric` must be one of \('xe', 'auc', 'nec'\) or a function .* got 42"),
        (("auc", False), {}, "`higher_is_better`: metric 'auc' is higher is better"),
        ((f, None), {}, r"`higher_is_better` must be True or False for a user metric .* got None"),
        ((f, 1), {}, "`higher_is_better` must be True or False for a user metric"),
        (("auc", None), dict(priors=[0.5, 0.5]),
         r"`priors` are not used by metric 'auc' .*only \('xe', 'nec'\) take evaluation priors"),
        ((f, True), dict(priors=[0.5, 0.5]), "`priors` are not used by metric a user function"),
        (("xe", None), dict(costs=np.eye(2)), "`costs` are only used by metric 'nec', got metric='xe'"),
        (("auc", None), dict(score_type="odds"), "`score_type` must be one of"),
    ]:
        kwargs = {"score_type": "logits", **kwargs}
        with pytest.raises(ecjax.InputError, match=message):
            pin.as_metric_spec(*args, builtins=BUILTINS, **kwargs)


def test_class_support_of_counts_and_of_weight_totals():
    check = pin.check_class_support
    check(np.array([3, 2]), None, both_classes_for="auc")
    check(np.array([3, 0, 2]), np.array([0.5, 0.0, 0.5]), both_classes_for=None)
    check(np.array([3, 0]), None, both_classes_for=None)  # one class is enough for a mean
    for args, kwargs, message in [
        ((np.array([4, 0]), None), dict(both_classes_for="auc"),
         "`labels` has a single class: metric 'auc' needs samples of both classes"),
        ((np.array([0.0, 2.5]), None), dict(both_classes_for="eer", weighted=True),
         "`sample_weight` leaves a single class: metric 'eer' needs samples of both classes"),
        ((np.array([3, 0, 2]), np.array([0.4, 0.2, 0.4])), dict(both_classes_for=None),
         "`priors` give weight to a class with no sample in `labels`: its average is undefined"),
        ((np.array([3.0, 0.0, 2.0]), np.array([0.4, 0.2, 0.4])), dict(both_classes_for=None, weighted=True),
         "`priors` give weight to a class whose samples all have `sample_weight` 0: its average is undefined"),
    ]:
        with pytest.raises(ecjax.InputError, match=message):
            check(*args, **kwargs)


def test_fold_results_are_float64_host_arrays_with_two_folds():
    got = pin.as_fold_results([[1, 2], [3, 4]], "scores", min_ndim=2)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    np.testing.assert_array_equal(got, [[1.0, 2.0], [3.0, 4.0]])
    for x, message in [([[1.0], [2.0]], r"`scores` needs at least 2 folds \(last axis\), got shape \(2, 1\)"),
                       ([1.0, 2.0], "`scores` must have at least 2 dimension"),
                       ([[1.0, np.nan]], "`scores` contains NaN")]:
        with pytest.raises(ecjax.InputError, match=message):
            pin.as_fold_results(x, "scores", min_ndim=2)


def test_fold_differences_are_b_minus_a_or_the_differences_given():
    a, b = [0.8, 0.7, 0.9], [0.85, 0.7, 0.95]
    got = pin.fold_differences(a, b, min_ndim=1)
    np.testing.assert_allclose(got.values, np.array(b) - np.array(a), rtol=0, atol=1e-15)
    assert got.name == "differences (scores_b - scores_a)"
    values, name, _ = pin.fold_differences([0.1, -0.2], None, min_ndim=1)
    np.testing.assert_array_equal(values, [0.1, -0.2])
    assert name == "differences"
    with pytest.raises(ecjax.InputError, match=r"`scores_a` and `scores_b` must have the same shape, got \(3,\) and "
                                               r"\(2,\)"):
        pin.fold_differences(a, b[:2], min_ndim=1)


def test_fold_spread_refuses_a_constant_non_zero_difference_only():
    pin.check_fold_spread(np.array([[0.0, 0.0, 0.0], [0.1, 0.2, 0.1]]), "differences")  # identical systems: fine
    with pytest.raises(ecjax.InputError, match=r"`differences` is the same non-zero number on every fold "
                                               r"\(at batch index \(1,\)\): zero variance"):
        pin.check_fold_spread(np.array([[0.1, 0.2, 0.1], [0.3, 0.3, 0.3]]), "differences")
    with pytest.raises(ecjax.InputError, match="`d` is the same non-zero number on every fold: zero variance"):
        pin.check_fold_spread(np.array([-0.5, -0.5]), "d")
    with pytest.raises(ecjax.InputError, match="`scores`: c - a is the same non-zero number on every fold:"):
        pin.check_fold_spread(np.array([[0.1, 0.2], [0.2, 0.2]]), "scores", rows=["b - a", "c - a"])


def test_results_per_dataset_split_the_data_sets():
    x = np.arange(2 * 3 * 4, dtype=float).reshape(2, 3, 4)
    got = pin.results_per_dataset(x)
    assert isinstance(got, tuple) and len(got) == 3
    for d in range(3):
        np.testing.assert_array_equal(got[d], x[:, d])
    listed = pin.results_per_dataset([x[:, 0], x[:, 1, :2]])
    assert [r.shape for r in listed] == [(2, 4), (2, 2)] and all(r.dtype == np.float64 for r in listed)
    for scores, message in [
        ([], "`scores` holds no data set"),
        ([x[:, 0], x[:1, 1]], r"`scores\[1\]` must be \(M, n_d\) with the M = 2 systems of `scores\[0\]`, got shape"),
        (x[:, 0], r"`scores` must be \(M, q, n\): .*\(one data set: use compare_results\), got shape \(2, 4\)"),
        (x[:1], "`scores` must hold at least 2 systems, got 1"),
        (x[:, :1], "`scores` must hold at least 2 data sets for a population of data sets, got 1"),
    ]:
        with pytest.raises(ecjax.InputError, match=message):
            pin.results_per_dataset(scores)
