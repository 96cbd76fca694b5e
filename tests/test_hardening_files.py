"""Hardening, files: hostile inputs (bombs, bad text, bad numbers) and outputs never lost or clobbered.

Library-level cases (``ecjax.io``); each asserts ``ecjax.InputError`` and that
the message names the file (or the key of the cost specification).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import zipfile

import numpy as np
import pytest

from ecjax import InputError
from ecjax._src import io as eio


def raises(name, fn, *args, **kwargs):
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    assert type(info.value) is InputError
    assert str(name) in str(info.value), str(info.value)
    return str(info.value)


def _npy_header(shape, dtype="<i8"):
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    text = repr(header).encode()
    pad = 64 - (10 + len(text) + 1) % 64
    text = text + b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text


# =============================================================== size bombs

def test_npz_bomb_refused_from_its_header(tmp_path):
    # 200M int64 labels declared (1.6 GB), a few hundred bytes on disk: refused before any decompression.
    p = tmp_path / "bomb.npz"
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("labels.npy", _npy_header((200_000_000,)) + b"\x00" * 4096)
    msg = raises(p, eio.load_array, p)
    assert "--max-input-mb" in msg and "MiB" in msg


def test_real_compressed_npz_over_a_lowered_limit(tmp_path):
    p = tmp_path / "zeros.npz"
    np.savez_compressed(p, y=np.zeros(300_000, np.int64))  # 2.3 MiB declared, a few KB on disk
    raises(p, eio.load_array, p, max_bytes=2**20)
    assert eio.load_array(p, max_bytes=4 * 2**20).shape == (300_000,)


def test_npy_declaring_more_than_the_limit(tmp_path):
    p = tmp_path / "big.npy"
    p.write_bytes(_npy_header((10**6, 1000), "<f8") + b"\x00" * 64)
    raises(p, eio.load_array, p)


def test_npz_member_chosen_by_key_is_checked(tmp_path):
    p = tmp_path / "two.npz"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("small.npy", _npy_header((3,)) + np.arange(3, dtype="<i8").tobytes())
        z.writestr("huge.npy", _npy_header((10**10,)))
    assert eio.load_array(p, key="small").tolist() == [0, 1, 2]
    raises("huge", eio.load_array, p, key="huge")


def test_pickled_npy_refused(tmp_path):
    p = tmp_path / "obj.npy"
    # The test writes the hostile file a user might hand us (an object array needs pickle); ecjax must refuse to
    # load it, never unpickle it.
    np.save(p, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    raises(p, eio.load_array, p)


def test_csv_larger_than_the_limit(tmp_path):
    p = tmp_path / "y.csv"
    p.write_text("0\n1\n" * 1000)
    raises(p, eio.load_array, p, max_bytes=100)


def test_corrupt_npz(tmp_path):
    p = tmp_path / "bad.npz"
    p.write_bytes(b"PK\x03\x04garbage")
    raises(p, eio.load_array, p)


# ============================================================ cost specifications

@pytest.mark.parametrize("spec, name", [
    ({"costs": [["0", "1"], ["10", "0"]]}, "`costs`"),              # "10" was read as 10
    ({"costs": [[0, True], [1, 0]]}, "`costs`"),                    # true was read as 1
    ({"costs": [[0, 1], [10**400, 0]]}, "`costs`"),                 # was an OverflowError (exit 1)
    ({"costs": [[0, 1], [float("inf"), 0]]}, "`costs`"),
    ({"costs": [[0, 1], [1]]}, "`costs`"),                          # ragged
    ({"utilities": [[0, "x"], [1, 0]]}, "`utilities`"),
    ({"costs": [[0, 1], [1, 0]], "priors": ["0.5", "0.5"]}, "`priors`"),
    ({"costs": [[0, 1], [1, 0]], "priors": [True, False]}, "`priors`"),
    ({"costs": [[0, 1], [1, 0]], "priors": {"0": "0.5", "1": 0.5}}, "`priors`"),
    ({"costs": [[0, 1], [1, 0]], "priors": [float("nan"), 1.0]}, "`priors`"),
    ({"costs": [[0, 1], [1, 0]], "uncertainty": {"low": [[0, 1], ["1", 0]], "high": [[0, 1], [2, 0]]}},
     "`uncertainty.low`"),
    ({"costs": [[0, 1], [1, 0]], "uncertainty": {"low": [[0, 1], [1, 0]], "high": [[0, 1], [2, 0]],
                                                 "priors_low": [False, 0.2], "priors_high": [1, 0.8]}},
     "`uncertainty.priors_low`"),
    ({"costs": [[0, 1], [1, 0]], "classes": "ab"}, "`classes`"),
    ({"costs": [[0, 1], [1, 0]], "classes": [1, 2]}, "`classes`"),
    ({"costs": [[0, 1], [1, 0]], "decisions": [None, "x"]}, "`decisions`"),
])
def test_cost_spec_numbers_must_be_numbers(spec, name):
    msg = raises(name, eio.parse_cost_spec, spec, source="spec.toml")
    assert "spec.toml" in msg


def test_cost_file_invalid_utf8(tmp_path):
    p = tmp_path / "c.toml"
    p.write_bytes(b'costs = [[0, 1], [4, 0]]\nname = "\xff\xfe"\n')
    msg = raises(p, eio.load_cost_spec, p)
    assert "UTF-8" in msg


def test_cost_file_huge_integer(tmp_path):
    p = tmp_path / "c.json"
    p.write_text('{"costs": [[0, 1], [' + "1" + "0" * 400 + ', 0]]}')
    raises(p, eio.load_cost_spec, p)


def test_cost_file_toml_string_and_boolean(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('costs = [[0, "1"], [true, 0]]\n')
    raises(p, eio.load_cost_spec, p)


def test_cost_file_nested_too_deeply(tmp_path):
    p = tmp_path / "c.json"
    p.write_text("[" * 100_000 + "]" * 100_000)
    raises(p, eio.load_cost_spec, p)


def test_csv_invalid_utf8(tmp_path):
    p = tmp_path / "y.csv"
    p.write_bytes(b"0\n1\n\xff\n")
    raises(p, eio.load_array, p)


# ================================================= CSV as users write it: one header rule (issue 30, helper H1)
# The files below are the bytes pandas 3.1 writes (checked by test_the_files_below_are_what_pandas_writes where
# pandas is installed): `pd.Series(y).to_csv(p, index=False)` writes the header `0`, a DataFrame `0,1`, and with
# its index (the default) an unnamed first column.

Y = np.array([1, 0, 1, 1, 0, 0, 1])
S = np.array([[-1.25, -0.34], [-0.5, -0.9375], [-2.0, -0.125], [-0.0, -np.inf], [-0.75, -0.625], [-0.1, -2.3],
              [-3.5, -0.03]])


def _pandas_series(y, index=False):
    head = ",0\n" if index else "0\n"
    return head + "".join((f"{i}," if index else "") + f"{v}\n" for i, v in enumerate(y))


def _pandas_frame(s, index=False):
    head = ("," if index else "") + ",".join(str(j) for j in range(s.shape[1])) + "\n"
    return head + "".join((f"{i}," if index else "") + ",".join(repr(float(x)) for x in row) + "\n"
                          for i, row in enumerate(s))


def test_the_files_below_are_what_pandas_writes():
    pd = pytest.importorskip("pandas")
    assert pd.Series(Y).to_csv(index=False) == _pandas_series(Y)
    assert pd.Series(Y).to_csv() == _pandas_series(Y, index=True)
    assert pd.DataFrame(S).to_csv(index=False) == _pandas_frame(S)
    assert pd.DataFrame(S).to_csv() == _pandas_frame(S, index=True)


@pytest.mark.parametrize("index", [False, True])
def test_pandas_headers_are_headers(tmp_path, index):
    # Before: the header `0,1` was a sample (N + 1 rows), and the index column a class (K = 3).
    (tmp_path / "s.csv").write_text(_pandas_frame(S, index))
    (tmp_path / "y.csv").write_text(_pandas_series(Y, index))
    np.testing.assert_array_equal(eio.load_array(tmp_path / "s.csv"), S)
    y, s = eio.load_arrays([tmp_path / "y.csv", tmp_path / "s.csv"])
    np.testing.assert_array_equal(y, Y)
    np.testing.assert_array_equal(s, S)


def test_a_first_row_that_may_be_a_header_or_a_sample(tmp_path):
    # `0` above whole numbers: pandas' header of an unnamed label column, or a first label 0. The other files of
    # the same samples settle it; alone it is refused with the ways to make it unambiguous (before: a sample).
    p = tmp_path / "y.csv"
    p.write_text(_pandas_series(Y))
    msg = raises(p, eio.load_array, p)
    assert "pandas" in msg and "name the column" in msg and ".npy" in msg
    np.testing.assert_array_equal(eio.load_array(p, rows=len(Y)), Y)
    np.testing.assert_array_equal(eio.load_array(p, rows=len(Y) + 1), np.r_[0, Y])
    np.save(tmp_path / "s.npy", S)  # the other file has one sample less than y.csv has rows: `0` is a header
    np.testing.assert_array_equal(eio.load_arrays([p, tmp_path / "s.npy"])[0], Y)
    np.save(tmp_path / "s.npy", np.r_[S, S[:1]])  # as many samples as rows: the `0` is a label
    np.testing.assert_array_equal(eio.load_arrays([p, tmp_path / "s.npy"])[0], np.r_[0, Y])
    (tmp_path / "label.csv").write_text("label\n" + "".join(f"{v}\n" for v in Y))  # named: never ambiguous
    np.testing.assert_array_equal(eio.load_array(tmp_path / "label.csv"), Y)


def test_a_byte_order_mark_does_not_drop_the_first_sample(tmp_path):
    # Excel's "CSV UTF-8" starts with EF BB BF; before, the first row failed to parse and was dropped as a header.
    p = tmp_path / "s.csv"
    p.write_bytes(b"\xef\xbb\xbf" + "".join(",".join(repr(float(x)) for x in r) + "\r\n" for r in S).encode())
    np.testing.assert_array_equal(eio.load_array(p), S)
    (tmp_path / "y.csv").write_bytes(b"\xef\xbb\xbflabel\r\n1\r\n0\r\n")
    np.testing.assert_array_equal(eio.load_array(tmp_path / "y.csv"), [1, 0])


def test_quoted_cells_are_read_by_the_csv_module(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text('"a","b, c"\n"0.25", 0.75\n0.5, "0.5"\n')  # before: '"0.25"' was not a number
    np.testing.assert_array_equal(eio.load_array(p), [[0.25, 0.75], [0.5, 0.5]])


@pytest.mark.parametrize("read, text, words", [
    ("load_array", "label\n1\n1_0\n", ["line 3, column 1 is not a number: '1_0'", "without `_`"]),  # float(): 10
    ("load_array", "label\n1\n\u0661\n", ["line 3, column 1 is not a number"]),  # float() reads Arabic-Indic 1
    ("load_array", "0.5,0.5\n0.25,\n", ["line 2, column 2 is empty"]),
    ("load_array", "0.5,0.5\n0.25\n", ["line 2 has 1 columns, line 1 2"]),
    ("load_array", "label\n", ["holds a header (line 1) but no rows of numbers"]),  # before: IndexError
    ("load_array", "a,b\n", ["holds a header (line 1) but no rows of numbers"]),
    ("load_array", "\n\n", ["the file is empty"]),
    ("load_array", 'label\n"1\n', ["line 2"]),  # an unclosed quote
    ("load_array", 'label\n1\n"1\n2"\n', ["line 4, column 1 is not a number: '1\\n2'"]),  # a newline in a cell
    ("load_results_table", "0.81,0.83\n0.80,0.82\n", ["must be a header naming the columns", "got numbers"]),
    ("load_results_table", "dataset,Dataset,A\nx,x,0.1\n", ["the header must name every column once"]),
    ("load_results_table", "A,,B\n0.1,0.2,0.3\n", ["the header must name every column once"]),
    ("load_results_table", "fold,dataset\n1,x\n", ["no system column"]),
    ("load_results_table", "A,B\n0.1,1_0\n", ["every result must be a number", "'1_0'"]),
])
def test_csv_cells_that_are_not_numbers(tmp_path, read, text, words):
    p = tmp_path / "r.csv"
    p.write_text(text)
    msg = raises(p, getattr(eio, read), p)
    for w in words:
        assert w in msg, msg


@pytest.mark.parametrize("text", ["neg\npos\nneg\n", "label\nneg\npos\nneg\n"])
def test_class_names_get_the_indices_to_write(tmp_path, text):
    # Before: "line 2 is not a row of numbers: 'pos'". The indices offered are the sorted names (LabelEncoder's).
    from sklearn.preprocessing import LabelEncoder

    p = tmp_path / "y.csv"
    p.write_text(text)
    msg = raises(p, eio.load_array, p)
    enc = LabelEncoder().fit(["neg", "pos", "neg"])
    assert "{" + ", ".join(f"{str(c)!r}: {i}" for i, c in enumerate(enc.classes_)) + "}" in msg, msg


def test_arrays_written_as_csv_read_back_exactly(tmp_path):
    # `ecjax calibrate --output out.csv` wrote NPY bytes; now the suffix says the format (NumPy's own reader is the
    # reference for the text), and 0.0 / -inf as the first value stay samples, never a header.
    for arr in (S, S[:, 1].copy(), np.array([0.0, 1.0, 0.1 + 0.2])):
        p = tmp_path / "out.csv"
        p.write_bytes(eio.array_file_bytes(p, arr))
        np.testing.assert_array_equal(np.loadtxt(p, delimiter=","), arr)
        np.testing.assert_array_equal(eio.load_array(p), arr)
        q = tmp_path / "out.npy"
        q.write_bytes(eio.array_file_bytes(q, arr))
        np.testing.assert_array_equal(np.load(q), arr)
    raises("out.bin", eio.array_file_format, tmp_path / "out.bin")


# ------------------------------------------------------------- results tables (`ecjax compare-folds`)

@pytest.mark.parametrize("text, systems, datasets", [
    ("\ufeffdataset,A,B\nx,0.1,0.2\ny,0.3,0.4\nx,0.5,0.6\ny,0.7,0.8\n", ["A", "B"], ["x", "y"]),  # BOM
    ("Dataset,fold,A,B\nx,0,0.1,0.2\ny,0,0.3,0.4\nx,1,0.5,0.6\ny,1,0.7,0.8\n", ["A", "B"], ["x", "y"]),
    ("#,A,B\n0,0.1,0.2\n1,0.3,0.4\n", ["A", "B"], None),  # before: the header was skipped as a comment
    ('"fold","sys, one","B"\n1,0.1,0.2\n2,0.3,0.4\n', ["sys, one", "B"], None),  # before: quotes kept
    (",A,B\n0,0.1,0.2\n1,0.3,0.4\n", ["A", "B"], None),  # pandas' index column
    ("Run,A,B\n1,0.1,0.2\n2,0.3,0.4\n", ["A", "B"], None),
])
def test_results_table_headers(tmp_path, text, systems, datasets):
    p = tmp_path / "r.csv"
    p.write_text(text, encoding="utf-8")
    table = eio.load_results_table(p)
    assert table.systems == systems and table.datasets == datasets
    # A's results, by reading the file's numbers independently: the column after the data set / fold ones.
    lines = [ln.split(",") for ln in text.lstrip("\ufeff").splitlines()[1:]]
    a = np.array([float(ln[-2]) for ln in lines])
    got = np.asarray(table.scores if datasets is None else np.stack(table.scores))[0]
    np.testing.assert_array_equal(np.sort(np.ravel(got)), np.sort(a))


# ==================================================================== write_atomic

def test_write_atomic_refuses_existing_file(tmp_path):
    p = tmp_path / "out.json"
    eio.write_atomic(p, "1")
    raises(p, eio.write_atomic, p, "2")
    assert p.read_text() == "1"
    eio.write_atomic(p, "3", force=True)
    assert p.read_text() == "3"


@pytest.mark.parametrize("anonymous", [True, False])
def test_concurrent_writers_exactly_one_wins(tmp_path, monkeypatch, anonymous):
    # The existence check and the rename used to be two steps: both writers succeeded, the last one won.
    monkeypatch.setitem(eio._ANONYMOUS, "works", anonymous)
    for round_ in range(15):
        p = tmp_path / f"race{round_}.bin"
        barrier = threading.Barrier(4)
        results = []

        def writer(i):
            barrier.wait()
            try:
                eio.write_atomic(p, f"writer {i}".encode())
                results.append(i)
            except InputError as err:
                assert "already exists" in str(err)

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(results) == 1
        assert p.read_bytes() == f"writer {results[0]}".encode()
    assert not list(tmp_path.glob(".ecjax-*"))


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_outputs_follow_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        p = eio.write_atomic(tmp_path / "f.bin", b"x")
        q = eio.write_atomic(tmp_path / "f.bin", b"y", force=True)
    finally:
        os.umask(old)
    assert os.stat(p).st_mode & 0o777 == mode  # was 0600 whatever the umask
    assert os.stat(q).st_mode & 0o777 == mode


@pytest.mark.parametrize("anonymous", [True, False])
@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, OSError])
def test_no_temp_file_left_on_failure(tmp_path, monkeypatch, anonymous, exc):
    monkeypatch.setitem(eio._ANONYMOUS, "works", anonymous)

    def boom(fd, payload):
        os.write(fd, payload[:10])
        raise exc(errno.EIO, "injected") if exc is OSError else exc()

    monkeypatch.setattr(eio, "_write_all", boom)
    with pytest.raises(InputError if exc is OSError else exc):
        eio.write_atomic(tmp_path / "big.npy", b"x" * 1_000_000)
    assert sorted(os.listdir(tmp_path)) == []


@pytest.mark.parametrize("err, text", [(errno.ENOSPC, "No space"), (errno.EROFS, "Read-only"),
                                       (errno.EACCES, "Permission"), (errno.EDQUOT, "quota")])
def test_file_system_errors_name_the_file(tmp_path, monkeypatch, err, text):
    def fail(fd, payload):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(eio, "_write_all", fail)
    msg = raises(tmp_path / "o.json", eio.write_atomic, tmp_path / "o.json", "{}")
    assert "cannot write" in msg
    assert not (tmp_path / "o.json").exists() and not list(tmp_path.glob(".ecjax-*"))


def test_file_name_too_long(tmp_path):
    raises("cannot write", eio.write_atomic, tmp_path / ("n" * 300 + ".png"), b"x")


def test_output_folder_under_proc():
    raises("/proc/ecjax_nowhere", eio.write_atomic, "/proc/ecjax_nowhere/o.json", "{}")


def test_stale_temp_files_of_dead_processes_are_removed(tmp_path, monkeypatch):
    monkeypatch.setitem(eio._ANONYMOUS, "works", False)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".ecjax-{int(dead.stdout)}-abcdef.tmp"
    stale.write_bytes(b"x" * 1000)
    mine = tmp_path / f".ecjax-{os.getpid()}-012345.tmp"  # a live process's temp file stays
    mine.write_bytes(b"y")
    eio.write_atomic(tmp_path / "o.bin", b"z")
    assert not stale.exists() and mine.exists()


_SIGTERM_SCRIPT = r"""
import os, sys, time
from ecjax._src import io as eio
from ecjax._src import cli
import signal
signal.signal(signal.SIGTERM, cli._on_sigterm)
eio._ANONYMOUS["works"] = {anonymous}
real = eio._write_all
def slow(fd, payload):
    os.write(fd, payload[: len(payload) // 2])
    open(sys.argv[2], "w").close()   # tell the parent we are mid-write
    time.sleep(60)
eio._write_all = slow
try:
    eio.write_atomic(sys.argv[1], b"x" * 20_000_000)
except cli._Terminated:
    sys.exit(143)
"""


@pytest.mark.parametrize("anonymous", [True, False])
def test_sigterm_during_a_write_leaves_no_temp_file(tmp_path, anonymous):
    target, ready = tmp_path / "out" / "scores.npy", tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", _SIGTERM_SCRIPT.format(anonymous=anonymous),
                             str(target), str(ready)])
    try:
        for _ in range(600):
            if ready.exists():
                break
            if proc.poll() is not None:
                pytest.fail(f"writer exited early with {proc.returncode}")
            import time

            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not target.exists() and os.listdir(target.parent) == []  # was a 4-50 MB .name.XXXX.tmp


def test_sigkill_during_a_write_leaves_nothing_after_the_next_write(tmp_path):
    # SIGKILL cannot be caught: with O_TMPFILE nothing is ever visible; with named temp files the next
    # write into the folder removes the dead process's file.
    target, ready = tmp_path / "out" / "scores.npy", tmp_path / "ready"
    script = _SIGTERM_SCRIPT.format(anonymous=False)
    proc = subprocess.Popen([sys.executable, "-c", script, str(target), str(ready)])
    try:
        for _ in range(600):
            if ready.exists() or proc.poll() is not None:
                break
            import time

            time.sleep(0.05)
        proc.kill()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not target.exists()
    saved = dict(eio._ANONYMOUS)
    eio._ANONYMOUS["works"] = False
    try:
        eio.write_atomic(target.parent / "next.json", "{}")
    finally:
        eio._ANONYMOUS.update(saved)
    assert os.listdir(target.parent) == ["next.json"]


def test_strict_json_of_infinities():
    from ecjax._src.cli.output import dumps

    text = dumps({"threshold": float("-inf"), "x": [float("inf"), float("nan"), np.float32(1.5)]})

    def refuse(name):
        raise ValueError(name)

    rec = json.loads(text, parse_constant=refuse)  # strict parsers reject -Infinity / NaN
    assert rec == {"threshold": "-inf", "x": ["inf", None, 1.5]}


# ============================================================ one schema, one output check, one way to say it

@pytest.mark.parametrize("spec, words", [
    ({"costs": [[0, 1], [1, 0]], "utilities": [[0, 1], [1, 0]]}, ["exactly one of `costs` and `utilities`"]),
    ({}, ["exactly one of `costs` and `utilities`"]),
    ({"costs": [[0, 1], [1, 0]], "cost": 1}, ["`cost specification`", "unknown key(s) ['cost']"]),
    ({"costs": [[0, 1], [1, 0]], "uncertainty": {"low": [[0, 1], [1, 0]]}}, ["`uncertainty`", "no value for ['high']"]),
    ({"costs": [[0, 1], [1, 0]], "uncertainty": {"priors_high": [0.6, 0.6]}},
     ["`uncertainty`", "no value for ['priors_low']"]),
    ({"costs": [[0, 1], [1, 0]], "uncertainty": {"lo": 1}}, ["`uncertainty`", "unknown key(s) ['lo']"]),
    ({"costs": [[0, 1], [1, 0]], "uncertainty": [1, 2]}, ["`uncertainty` must be a table/object, got list"]),
    ({"costs": [[0, 1], [1, 0]], "classes": ["a", "b"], "priors": {"a": 1.0}}, ["`priors`", "no value for ['b']"]),
    ({"costs": [[0, 1], [1, 0]], "classes": ["a", "b", "c"]}, ["`classes` must be a list of 2 names"]),
    ({"costs": [[0, 1, 1], [1, 0, 1]], "decisions": ["x", "y"]}, ["`decisions` must be a list of 3 names"]),
    ({"costs": [[0, 1], [1, 0]], "priors": [0.2, 0.3, 0.5]}, ["`priors` must be (2,) (one per class), got shape (3,)"]),
    ({"costs": [[0, 1], [1, 0]], "uncertainty": {"low": [[0, 1]], "high": [[0, 1], [1, 0]]}},
     ["`uncertainty.low` must be (2, 2), got shape (1, 2)"]),
    ({"costs": [[]]}, ["`costs` must be a non-empty matrix"]),
    ({"costs": [0, 1]}, ["`costs` must be (K, D), got shape (2,)"]),
])
def test_cost_spec_schema_errors_name_the_key_and_the_file(spec, words):
    # Each key of the schema in the module docstring, broken one way; the message says the file, then the key.
    msg = raises("spec.toml: ", eio.parse_cost_spec, spec, source="spec.toml")
    for w in words:
        assert w in msg, msg


def test_cost_spec_schema_accepts_what_it_documents():
    spec = eio.parse_cost_spec({"classes": ["h", "s"], "costs": [[0, 1], [20, 0]], "priors": {"s": 0.05, "h": 0.95},
                                "uncertainty": {"low": [[0, 1], [10, 0]], "high": [[0, 1], [50, 0]],
                                                "priors_low": [0.9, 0.02], "priors_high": [0.98, 0.1]}})
    assert spec.classes == ["h", "s"] and spec.decisions == ["h", "s"]
    np.testing.assert_array_equal(spec.priors, [0.95, 0.05])
    np.testing.assert_array_equal(spec.costs_high, [[0, 1], [50, 0]])
    rect = eio.parse_cost_spec({"utilities": [[1, 0, 0.5], [0, 1, 0.5]]})
    assert rect.decisions == ["0", "1", "2"] and rect.given_as_utilities
    np.testing.assert_array_equal(rect.costs, [[-1, 0, -0.5], [0, -1, -0.5]])


def test_said_of_says_the_problem_of_the_source_in_its_names():
    from ecjax._src.inputs import check_same_length

    with pytest.raises(InputError) as info:
        with eio.said_of("w.npy", {"labels": "y.npy"}):
            check_same_length("labels", np.zeros(3), "sample_weight", np.zeros(4))
    assert str(info.value) == ("w.npy: y.npy and `sample_weight` must have the same number of samples, got 3 and 4")
    with pytest.raises(InputError) as info:  # a message with a `problem` is said without its subject
        with eio.said_of("--x"):
            raise InputError("`x` must be 1: it is 2", problem="must be 1: it is 2")
    assert str(info.value) == "--x: must be 1: it is 2"
    with eio.said_of("unused"):  # nothing raised: nothing said
        pass


def test_said_of_names_the_files_from_the_fields_only():
    from ecjax._src.inputs import as_group_ids

    with pytest.raises(InputError) as info:  # the subject (`argument`) said by its file, before the `problem`
        with eio.said_of("g.npy", {"groups": "--groups"}):
            as_group_ids(np.zeros(2), 3)
    assert str(info.value) == "g.npy: --groups must be a vector with one id per sample (3), got shape (2,)"
    with pytest.raises(InputError) as info:  # a message without fields is said as it is: its text is not edited
        with eio.said_of("w.npy", {"labels": "y.npy"}):
            raise InputError("`labels` and `sample_weight` differ")
    assert str(info.value) == "w.npy: `labels` and `sample_weight` differ"
    with pytest.raises(InputError) as info:  # an argument `files` does not name: the problem, said of the source
        with eio.said_of("--x", {"labels": "y.npy"}):
            raise InputError("`x` must be 1, got `labels`", argument="x", problem="must be 1, got `labels`")
    assert str(info.value) == "--x: must be 1, got `labels`"


def test_said_of_keeps_the_mentions_it_does_not_name():
    # A templated problem (InputError.mentions): the arguments `files` names are said by their files, the others
    # stay mentions for the front end (the command line says them as its options); a source with braces is text.
    from ecjax._src.inputs import check_same_length

    with pytest.raises(InputError) as info:
        with eio.said_of("w{1}.npy", {"labels": "y.npy"}):
            check_same_length("labels", np.zeros(3), "sample_weight", np.zeros(4))
    err = info.value
    assert str(err) == "w{1}.npy: y.npy and `sample_weight` must have the same number of samples, got 3 and 4"
    assert err.mentions == {"b": ("sample_weight", None)}
    assert err.problem_said(lambda a, value: "--weights") == ("w{1}.npy: y.npy and --weights must have the same "
                                                              "number of samples, got 3 and 4")


def test_check_output_path(tmp_path):
    assert eio.check_output_path(tmp_path / "new" / "deeper" / "a.json") == tmp_path / "new" / "deeper" / "a.json"
    (tmp_path / "a.json").write_text("{}")
    raises("already exists (use --force to overwrite)", eio.check_output_path, tmp_path / "a.json")
    assert eio.check_output_path(tmp_path / "a.json", force=True) == tmp_path / "a.json"
    raises("the file name is too long", eio.check_output_path, tmp_path / ("n" * 256))
    raises(f"{tmp_path / 'a.json'}: not a directory", eio.check_output_path, tmp_path / "a.json" / "b.json")
    if os.geteuid() != 0:  # root writes into read-only folders
        (tmp_path / "ro").mkdir()
        os.chmod(tmp_path / "ro", 0o500)
        try:
            raises("the folder is not writable", eio.check_output_path, tmp_path / "ro" / "b.json")
        finally:
            os.chmod(tmp_path / "ro", 0o700)
