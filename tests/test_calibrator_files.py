"""Calibrators saved without pickle (ecjax.calibrator_files, `ecjax calibrate --save-calibrator/--calibrator`):
round trips for every method, and hostile or careless files refused with InputError naming the file and key."""

from __future__ import annotations

import json
import pickle

import jax
import numpy as np
import pytest

from ecjax import InputError, calibration
from ecjax.calibrator_files import save_calibrator
from ecjax._src.calibrator_files import PARAMETER_SHAPES, arrays_path, load_calibrator
from ecjax.cli import main


def _data(k=2, n=120, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    s = rng.normal(size=(n, k))
    s[np.arange(n), y] += 1.2
    return 2.0 * s, y


def _fitted(method):
    s, y = _data(3 if method in ("affine", "temperature", "bias", "vector", "matrix", "dirichlet") else 2)
    if method == "llr":
        return calibration.fit(s[:, 1] - s[:, 0], y, method="llr", score_type="llr"), s[:, 1] - s[:, 0]
    return calibration.fit(s, y, method=method, score_type="logits"), s


def test_every_method_has_a_file_form():
    assert set(PARAMETER_SHAPES) == set(calibration.METHODS)


# A fit compiles per method (seconds each): three in the default lane (a multiclass L-BFGS one, the LLR one, a
# counted binary one), every method in the slow lane.
DEFAULT_LANE_METHODS = ("affine", "llr", "isotonic")


@pytest.mark.parametrize("method", [m if m in DEFAULT_LANE_METHODS else pytest.param(m, marks=pytest.mark.slow)
                                    for m in calibration.METHODS])
def test_round_trip_applies_the_same(tmp_path, method):
    cal, s = _fitted(method)
    written = save_calibrator(cal, tmp_path / "cal.json")
    assert [p.name for p in written] == ["cal.json", "cal.npz"]
    back = load_calibrator(tmp_path / "cal.json")
    np.testing.assert_array_equal(np.asarray(back.apply(s)), np.asarray(cal.apply(s)))
    assert (back.method, back.num_classes, back.input_type, back.loss_name) == (
        cal.method, cal.num_classes, cal.input_type, cal.loss_name)
    assert int(back.num_iterations) == int(cal.num_iterations) and bool(back.converged) == bool(cal.converged)
    with np.load(tmp_path / "cal.npz", allow_pickle=False) as z:  # plain arrays, readable without ecjax
        assert sorted(z.files) == sorted(cal.params)


@pytest.fixture
def saved(tmp_path):
    cal, s = _fitted("affine")
    save_calibrator(cal, tmp_path / "cal.json")
    return tmp_path / "cal.json", cal, s


def _edit(path, change):
    d = json.loads(path.read_text())
    change(d)
    path.write_text(json.dumps(d))


@pytest.mark.parametrize("change, match", [
    (lambda d: d.update(extra=1), r"unknown key\(s\) \['extra'\]"),
    (lambda d: d.pop("fit"), r"no value for \['fit'\]"),
    (lambda d: d.update(method="platt"), "`method` must be one of"),
    (lambda d: d.update(method="matrix"), "parameters \\(of method 'matrix'\\)"),
    (lambda d: d.update(method="vector"), "`scale` must be \\(K,\\)"),  # same names, other shapes
    (lambda d: d.update(format="pickle"), "`format` must be one of"),
    (lambda d: d.update(version=2), "`version` must be one of"),
    (lambda d: d.update(num_classes="3"), "`num_classes` must be an integer"),
    (lambda d: d.update(num_classes=1), "num_classes"),
    (lambda d: d.update(input_type="scores"), "`input_type` must be one of"),
    (lambda d: d["parameters"]["bias"].update(dtype="object"), "parameters.bias.dtype"),
    (lambda d: d["parameters"]["bias"].update(shape="3"), "parameters.bias.shape"),
    (lambda d: d["parameters"]["bias"].update(shape=[-3]), "parameters.bias.shape"),
    (lambda d: d["parameters"]["bias"].update(code="import os"), r"parameters.bias`: unknown key"),
    (lambda d: d["fit"].update(converged="yes"), "fit.converged"),
])
def test_bad_descriptions_are_refused_naming_the_file_and_key(saved, change, match):
    path, _, _ = saved
    _edit(path, change)
    with pytest.raises(InputError, match=match) as err:
        load_calibrator(path)
    assert str(path.with_suffix("")) in str(err.value)  # cal.json, or cal.npz where the arrays disagree


def test_arrays_that_disagree_with_the_description_are_refused(saved, tmp_path):
    path, cal, _ = saved
    npz = arrays_path(path)
    # JSON and arrays both say bias (3,), but num_classes says 4
    _edit(path, lambda d: d.update(num_classes=4))
    with pytest.raises(InputError, match=r"`bias` must be \(K,\) with K = 4"):
        load_calibrator(path)
    _edit(path, lambda d: d.update(num_classes=3))
    # the JSON gives a shape the array does not have
    _edit(path, lambda d: d["parameters"]["bias"].update(shape=[2]))
    with pytest.raises(InputError, match=str(npz)):
        load_calibrator(path)
    _edit(path, lambda d: d["parameters"]["bias"].update(shape=[3]))
    # a dtype other than the JSON's
    np.savez(npz, scale=np.float64(1.0), bias=np.zeros(3, np.float32))
    with pytest.raises(InputError, match="scale.dtype"):
        load_calibrator(path)
    # a non-finite parameter
    np.savez(npz, scale=np.float32(np.nan), bias=np.zeros(3, np.float32))
    with pytest.raises(InputError, match="scale"):
        load_calibrator(path)
    # an array more than the method has
    np.savez(npz, scale=np.float32(1.0), bias=np.zeros(3, np.float32), payload=np.zeros(2))
    with pytest.raises(InputError, match=r"unknown array\(s\) \['payload'\]"):
        load_calibrator(path)
    # a pickled object array is never unpickled
    np.savez(npz, scale=np.array([{"a": 1}], dtype=object), bias=np.zeros(3, np.float32))
    with pytest.raises(InputError, match=str(npz)):
        load_calibrator(path)


def test_unreadable_files_are_refused(saved):
    path, _, _ = saved
    npz = arrays_path(path)
    npz.write_bytes(npz.read_bytes()[:-40])  # truncated
    with pytest.raises(InputError, match=str(npz)):
        load_calibrator(path)
    npz.unlink()
    with pytest.raises(InputError, match="file not found"):
        load_calibrator(path)
    path.write_text('{"format": ')
    with pytest.raises(InputError, match="syntax error"):
        load_calibrator(path)
    path.write_bytes(pickle.dumps({"method": "affine"}))
    with pytest.raises(InputError, match="not UTF-8|syntax error"):
        load_calibrator(path)
    with pytest.raises(InputError, match="suffix"):
        load_calibrator(path.with_suffix(".pkl"))


def test_saving_refuses_what_it_cannot_write_honestly(saved, tmp_path):
    path, cal, _ = saved
    with pytest.raises(InputError, match="already exists"):
        save_calibrator(cal, path)
    save_calibrator(cal, path, force=True)
    with pytest.raises(InputError, match="suffix"):
        save_calibrator(cal, tmp_path / "cal.npz")
    # calibrate_cross_validated's calibrator holds one set of parameters per fold (a leading axis)
    folds = jax.tree_util.tree_map(lambda a: np.stack([a, a]), cal)
    with pytest.raises(InputError, match="`scale` must be \\(\\)"):  # one calibrator per fold: say which
        save_calibrator(folds, tmp_path / "folds.json")
    with pytest.raises(InputError, match="calibrator"):
        save_calibrator({"scale": 1.0}, tmp_path / "x.json")


# ----------------------------------------------------------------- command line

@pytest.fixture
def files(tmp_path):
    s, y = _data(3, n=90, seed=1)
    np.save(tmp_path / "s.npy", s)
    np.save(tmp_path / "y.npy", y)
    return tmp_path


def _run(*argv):
    return main(["calibrate", "--quiet", *map(str, argv)])


def test_cli_saves_and_applies_a_calibrator(files, capsys):
    d = files
    assert _run("--scores", d / "s.npy", "--labels", d / "y.npy", "--score-type", "logits", "--method", "vector",
                "--output", d / "fit.npy", "--save-calibrator", d / "cal.json") == 0
    assert _run("--scores", d / "s.npy", "--score-type", "logits", "--calibrator", d / "cal.json",
                "--output", d / "applied.npy") == 0
    out = capsys.readouterr().out
    assert "applied the saved vector calibrator" in out
    np.testing.assert_array_equal(np.load(d / "applied.npy"), np.load(d / "fit.npy"))
    # the saved calibrator is the one the library fits on the same data
    ref = calibration.fit(np.load(d / "s.npy"), np.load(d / "y.npy"), method="vector", score_type="logits")
    np.testing.assert_allclose(np.load(d / "applied.npy"), np.asarray(ref.apply(np.load(d / "s.npy"))),
                               rtol=1e-6, atol=1e-6)
    # with --labels the before/after report runs on the applied calibrator
    assert _run("--scores", d / "s.npy", "--labels", d / "y.npy", "--score-type", "logits", "--calibrator",
                d / "cal.json", "--output", d / "applied2.npy", "--json") == 0
    record = json.loads(capsys.readouterr().out)
    assert record["protocol"] == "saved" and record["method"] == "vector"


@pytest.mark.parametrize("extra, match", [
    (("--cv", "3", "--save-calibrator", "c.json"), "--save-calibrator: not with --cv"),
    (("--save-calibrator", "c.npz"), "--save-calibrator"),
    (("--calibrator", "c.json", "--cv", "3"), "--calibrator: not with"),
    (("--calibrator", "missing.json"), "file not found"),
])
def test_cli_refuses_bad_calibrator_options(files, capsys, monkeypatch, extra, match):
    monkeypatch.chdir(files)
    assert _run("--scores", "s.npy", "--labels", "y.npy", "--score-type", "logits", "--output", "o.npy",
                *extra) == 2
    assert match in capsys.readouterr().err
    assert not (files / "o.npy").exists()


def test_cli_refuses_a_calibrator_of_other_scores(files, capsys):
    d = files
    two = calibration.Calibrator({"scale": np.float32(2.0), "bias": np.zeros(2, np.float32)}, 0, 0.0, 0.0, True,
                                 "affine", 2, "logits", "xe")  # a binary calibrator, made without a fit
    save_calibrator(two, d / "two.json")
    assert _run("--scores", d / "s.npy", "--score-type", "logits", "--calibrator", d / "two.json",
                "--output", d / "o.npy") == 2
    assert "the number of classes of --scores" in capsys.readouterr().err
    assert _run("--scores", d / "s.npy", "--score-type", "log_likelihoods", "--calibrator", d / "two.json",
                "--output", d / "o.npy") == 2
    assert f"{d / 'two.json'}" in capsys.readouterr().err
