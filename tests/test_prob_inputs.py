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
    for field, value in (("progress", True), ("mc_error", 0.01)):
        with pytest.raises(ecjax.InputError, match=f"settings.{field}"):
            prob.bootstrap_metric(prob.Systems(labels, scores=scores), "auc", key=KEY,
                                  settings=prob.MonteCarloSettings(**{field: value}))


def test_the_systems_say_what_they_hold():
    labels, decisions, scores = _data()
    assert repr(prob.Systems(labels, decisions, names=["a", "b"])) == "Systems(['a', 'b'], decisions, N = 40, paired)"
    unpaired = prob.Systems([labels, labels[:30]], scores=[scores[0], scores[1][:30]], paired=False,
                            sample_weight=[np.ones(40), np.ones(30)])
    assert repr(unpaired) == "Systems(['system 0', 'system 1'], scores (log_posteriors), N = [30, 40], unpaired, weighted)"
    assert prob.Systems(labels, decisions) != prob.Systems(labels, decisions)  # arrays inside: compared by identity
