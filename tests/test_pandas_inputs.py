"""pandas inputs and class names: Series and DataFrames (columns = classes), categoricals, ``class_indices(labels,
classes=)``, and ``--classes`` at the command line.

References: scikit-learn's metrics fed the string labels themselves (``log_loss(..., labels=)``,
``confusion_matrix(..., labels=)``, ``roc_auc_score``), a numpy Brier score, and each public function's result
for the same data given as numpy integer indices (the form every function is tested against its anchors with).
"""

import inspect
import json

import numpy as np
import pytest
from conftest import run_cli as run, same_across_runs

import jax

import ecjax
import ecjax._src.scores.calibration_errors
import ecjax._src.scores.ranking_curves
from ecjax import InputError, class_indices
from ecjax import scores as S

pd = pytest.importorskip("pandas")

CLASSES = np.array(["bird", "cat", "dog"])


@pytest.fixture(scope="module")
def three_classes():
    rng = np.random.default_rng(0)
    n = 120
    y = rng.integers(0, 3, n)
    p = rng.dirichlet(np.ones(3), n) * 0.5 + 0.5 * np.eye(3)[y]
    return y, p


def test_names_through_the_class_list_match_sklearn_on_the_names(three_classes):
    from sklearn.metrics import confusion_matrix, log_loss

    y, p = three_classes
    names = pd.Series(CLASSES[y][::-1].copy()[::-1])  # a pandas Series of strings
    frame = pd.DataFrame(p, columns=CLASSES)
    y_idx = class_indices(names, classes=frame.columns)
    np.testing.assert_array_equal(y_idx, y)
    xe = float(S.cross_entropy(y_idx, frame, score_type="probabilities"))
    assert xe == pytest.approx(log_loss(CLASSES[y], p, labels=CLASSES), rel=1e-5)
    brier_sum = np.mean(np.sum((p - np.eye(3)[y]) ** 2, 1))  # data priors: each class weighs its frequency
    assert float(S.brier(y_idx, frame, score_type="probabilities", over_classes="sum")) == pytest.approx(
        brier_sum, rel=1e-5)
    decided = CLASSES[np.argmax(p, 1)]
    cm = ecjax.confusion_matrix(y_idx, class_indices(decided, CLASSES), num_classes=3)
    np.testing.assert_array_equal(np.asarray(cm), confusion_matrix(CLASSES[y], decided, labels=CLASSES))


def test_a_categorical_carries_its_class_list(three_classes):
    from sklearn.metrics import log_loss

    y, p = three_classes
    frame = pd.DataFrame(p, columns=CLASSES)
    labels = pd.Series(pd.Categorical(CLASSES[y], categories=CLASSES))  # codes: positions in the categories
    assert float(S.cross_entropy(labels, frame, score_type="probabilities")) == pytest.approx(
        log_loss(CLASSES[y], p, labels=CLASSES), rel=1e-5)
    # Categories in another order are other indices: the order of the categories is the order of the columns.
    other = pd.Categorical(CLASSES[y], categories=CLASSES[::-1])
    assert float(S.cross_entropy(other, frame[CLASSES[::-1]], score_type="probabilities")) == pytest.approx(
        log_loss(CLASSES[y], p, labels=CLASSES), rel=1e-5)


def test_binary_series_and_weights_match_sklearn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    n = 200
    y = rng.integers(0, 2, n)
    llr = 2.0 * y - 1.0 + rng.normal(size=n)
    w = pd.Series(rng.uniform(0.5, 2.0, n), name="weight")
    labels = pd.Series(pd.Categorical(np.array(["neg", "pos"])[y], categories=["neg", "pos"]))
    assert float(S.auc(labels, pd.Series(llr), score_type="llr", sample_weight=w)) == pytest.approx(
        roc_auc_score(y, llr, sample_weight=w.to_numpy()), abs=1e-6)


def _public_functions_of_labels_and_scores():
    """Every public function of ecjax whose first arguments are ``labels, scores``."""
    found = {}
    for module in (ecjax, ecjax.scores, ecjax._src.scores.ranking_curves, ecjax._src.scores.calibration_errors):
        for name in dir(module):
            f = getattr(module, name)
            if name.startswith("_") or isinstance(f, type) or not callable(f):
                continue
            try:
                params = list(inspect.signature(f).parameters)
            except (TypeError, ValueError):
                continue
            if params[:2] == ["labels", "scores"]:
                found[name] = f
    return found


_EXTRA = {"sensitivity": 0.9, "threshold_probabilities": np.array([0.2, 0.5]), "costs": np.array([[0, 1], [4, 0.0]])}


def _leaves(x):
    return [np.asarray(leaf, np.float64) for leaf in jax.tree_util.tree_leaves(x) if hasattr(leaf, "dtype")]


# The default lane reads pandas through a few functions; every function's compilation takes ~2 s on two loaded
# cores, ~1 min in all: the rest runs in the slow lane (all read labels and scores through ecjax._src.inputs.as_array).
_DEFAULT_LANE = ("cross_entropy", "auc", "ece", "bayes_expected_cost")


def _takes_labels_and_scores_alone(name):
    # A function that also needs a calibration protocol (calibrated_metric_threshold) is called differently; it reads
    # labels and scores through the same ecjax._src.inputs.as_array, and its own tests call it.
    return "protocol" not in inspect.signature(_public_functions_of_labels_and_scores()[name]).parameters


@pytest.mark.parametrize("name", [pytest.param(name, marks=() if name in _DEFAULT_LANE else pytest.mark.slow)
                                  for name in sorted(_public_functions_of_labels_and_scores())
                                  if _takes_labels_and_scores_alone(name)])
def test_every_function_of_labels_and_scores_takes_pandas(name):
    f = _public_functions_of_labels_and_scores()[name]
    params = inspect.signature(f).parameters
    rng = np.random.default_rng(2)
    n = 80
    y = rng.integers(0, 2, n)
    llr = 2.0 * y - 1.0 + rng.normal(size=n)
    one_column = name == "bayes_risk_curve"  # scores of one column: an LLR per sample
    scores = llr if one_column else np.stack([-np.logaddexp(0, llr), -np.logaddexp(0, -llr)], 1)
    kw = {k: v for k, v in _EXTRA.items() if k in params and params[k].default is inspect.Parameter.empty}
    if one_column:
        kw["score_type"] = "llr"
    frame = pd.Series(scores) if one_column else pd.DataFrame(scores, columns=["neg", "pos"])
    labels = pd.Series(pd.Categorical(np.array(["neg", "pos"])[y], categories=["neg", "pos"]))
    expected, got = _leaves(f(y, scores, **kw)), _leaves(f(labels, frame, **kw))
    assert len(got) == len(expected) > 0
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    if "sample_weight" in params:
        w = rng.uniform(0.5, 2.0, n)
        weighted = _leaves(f(pd.Series(y), frame, sample_weight=pd.Series(w), **kw))
        for a, b in zip(weighted, _leaves(f(y, scores, sample_weight=w, **kw))):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("labels", [
    ["cat", "dog", "cat"], np.array(["cat", "dog", "cat"]), pd.Series(["cat", "dog", "cat"]),
    pd.Series(["cat", "dog", "cat"], dtype=object)])
def test_names_without_a_class_list_say_how_to_give_one(labels):
    scores = np.log([[0.6, 0.4], [0.3, 0.7], [0.5, 0.5]])
    for f in (S.cross_entropy, S.auc):
        with pytest.raises(InputError, match=r"`labels` holds class names \('cat', 'dog'\).*class_indices\(labels, "
                                             r"classes=\[\.\.\.\]\).*Categorical"):
            f(labels, scores)


def test_class_list_errors_name_the_label_or_the_list():
    with pytest.raises(InputError, match=r"holds \['cow'\].*not among the classes \['cat', 'dog'\]"):
        class_indices(["cat", "cow"], classes=["cat", "dog"])
    with pytest.raises(InputError, match=r"`classes` must name each class once, but \['cat'\] appear twice"):
        class_indices(["cat"], classes=["cat", "cat"])
    with pytest.raises(InputError, match="`classes` must be a sequence of class names"):
        class_indices(["cat"], classes="cat,dog")
    with pytest.raises(InputError, match=r"`labels` has a missing value \(NaN\) at entry 1"):
        ecjax.confusion_matrix(pd.Categorical(["cat", None, "dog"]), [0, 1, 0])
    with pytest.raises(InputError, match="`scores` must be numeric"):  # a text column among the scores
        S.cross_entropy([0, 1], pd.DataFrame({"a": [0.5, 0.5], "b": ["x", "y"]}))


@pytest.fixture()
def name_files(tmp_path):
    rng = np.random.default_rng(3)
    n = 300  # the size of test_output_formats.py's files: the same compiled programs
    y = rng.integers(0, 2, n)
    llr = 2.0 * y - 1.0 + rng.normal(size=n)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "s.npy", np.stack([-np.logaddexp(0, llr), -np.logaddexp(0, -llr)], 1))
    names = np.array(["healthy", "sick"])[y]
    (tmp_path / "names.csv").write_text("diagnosis\n" + "\n".join(names) + "\n")
    np.save(tmp_path / "names.npy", names)
    (tmp_path / "bad.csv").write_text("healthy\nsick\nunknown\n")
    return tmp_path


def test_label_files_of_class_names_with_classes(name_files):
    d = name_files
    code, out, err = run("metrics", "--labels", "y.npy", "--scores", "s.npy", "--json", cwd=d)
    assert code == 0, err
    by_index = json.loads(out)
    for f in ("names.csv", "names.npy"):
        code, out, err = run("metrics", "--labels", f, "--scores", "s.npy", "--classes", "healthy,sick", "--json",
                             cwd=d)
        assert code == 0, err
        rec = json.loads(out)
        # Separate runs: exactly equal on a CPU, to float32 rounding on a GPU (conftest.same_across_runs).
        assert same_across_runs(rec["metrics"], by_index["metrics"]) and rec["classes"] == ["healthy", "sick"]
    # Without --classes, the hint gives the option to add.
    code, _, err = run("metrics", "--labels", "names.csv", "--scores", "s.npy", cwd=d)
    assert code == 2 and "--classes healthy,sick" in err, err


@pytest.mark.parametrize("argv, said", [
    (["--labels", "bad.csv", "--classes", "healthy,sick"],
     "bad.csv: holds ['unknown'] (first ones shown), which are not among the classes ['healthy', 'sick']"),
    (["--labels", "names.csv", "--classes", "healthy,sick,other"],
     "--classes: names 3 classes, but the scores have 2"),
    (["--labels", "names.csv", "--classes", "sick,sick"], "--classes: must name each class once"),
    # The cost rows are the classes of c.toml's order: another order of --classes would swap them silently.
    (["--labels", "names.csv", "--classes", "sick,healthy", "--costs", "c.toml"],
     "--classes: names the classes ['sick', 'healthy'], but c.toml names them ['healthy', 'sick'] (its rows"),
])
def test_classes_option_errors(name_files, argv, said):
    (name_files / "c.toml").write_text('classes = ["healthy", "sick"]\ncosts = [[0, 1], [5, 0]]\n')
    code, _, err = run("metrics", "--scores", "s.npy", *argv, cwd=name_files)
    assert code == 2 and said in err, err


def test_calibrate_reads_class_names_with_classes(name_files):
    d = name_files
    outputs = {}
    for labels, extra in (("y.npy", ()), ("names.csv", ("--classes", "healthy,sick"))):
        code, outputs[labels], err = run("calibrate", "--labels", labels, "--scores", "s.npy", "--output",
                                         f"out_{labels}.npy", "--json", *extra, cwd=d)
        assert code == 0, err
    by_index, by_name = json.loads(outputs["y.npy"]), json.loads(outputs["names.csv"])
    assert by_name["cross_entropy"] == by_index["cross_entropy"] and by_name["brier"] == by_index["brier"]
    np.testing.assert_array_equal(np.load(d / "out_names.csv.npy"), np.load(d / "out_y.npy.npy"))
    code, _, err = run("calibrate", "--calibrator", "c.json", "--scores", "s.npy", "--output", "o.npy",
                       "--classes", "healthy,sick", cwd=d)
    assert code == 2 and "--classes: needs --labels or --train-labels" in err, err
