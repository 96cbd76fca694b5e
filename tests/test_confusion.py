"""Confusion matrices, rates and joint outcome tables against numpy,
scikit-learn and pure Python.

``confusion_matrix`` is compared with ``numpy.bincount`` and
``sklearn.metrics.confusion_matrix`` (rows = true class, columns = decision),
with and without sample weights, batched over systems, for short and long
inputs and many classes.  The joint
outcome table is compared with a ``collections.Counter`` of the tuples
(true class, decision of system 1, ..., decision of system M).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix as sk_confusion_matrix

import jax
import jax.numpy as jnp

from ecjax.confusion import confusion_matrix, data_priors, joint_outcome_table, rates
from ecjax._src.confusion import class_counts, confusion_counts


def _bincount(y, d, k, n_dec, w=None):
    return np.bincount(np.asarray(y) * n_dec + np.asarray(d), weights=w, minlength=k * n_dec).reshape(k, n_dec)


@pytest.mark.parametrize("n", [1, 37, 5000])
@pytest.mark.parametrize("k, n_dec", [(2, 2), (3, 4), (10, 10), (100, 101)])
def test_confusion_matrix_against_bincount_and_sklearn(n, k, n_dec):
    rng = np.random.default_rng(n + 10 * k)
    y = rng.integers(0, k, n)
    d = rng.integers(0, n_dec, n)
    got = confusion_matrix(y, d, num_classes=k, num_decisions=n_dec)
    assert got.dtype == jnp.int32 and got.shape == (k, n_dec)
    np.testing.assert_array_equal(np.asarray(got), _bincount(y, d, k, n_dec))
    if k == n_dec:
        np.testing.assert_array_equal(np.asarray(got), sk_confusion_matrix(y, d, labels=np.arange(k)))


@pytest.mark.parametrize("n", [50, 5000])
def test_weighted_confusion_matrix(n):
    rng = np.random.default_rng(n)
    k = 3
    y = rng.integers(0, k, n)
    d = rng.integers(0, k, n)
    w = rng.uniform(0, 2, n)
    got = confusion_matrix(y, d, num_classes=k, sample_weight=w)
    assert jnp.issubdtype(got.dtype, jnp.floating)
    np.testing.assert_allclose(np.asarray(got), _bincount(y, d, k, k, w), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got), sk_confusion_matrix(y, d, labels=np.arange(k), sample_weight=w),
                               rtol=1e-5)
    # Integer weights give the counts of the repeated samples.
    wi = rng.integers(0, 4, n)
    np.testing.assert_allclose(np.asarray(confusion_matrix(y, d, num_classes=k, sample_weight=wi)),
                               np.asarray(confusion_matrix(np.repeat(y, wi), np.repeat(d, wi), num_classes=k)))


@pytest.mark.parametrize("n", [60, 4500])
def test_batched_confusion_matrices(n):
    rng = np.random.default_rng(2)
    k, m = 4, 3
    y = rng.integers(0, k, n)
    dec = rng.integers(0, k, (m, n))
    # One label vector shared by M systems.
    got = np.asarray(confusion_matrix(y, dec, num_classes=k))
    assert got.shape == (m, k, k)
    for i in range(m):
        np.testing.assert_array_equal(got[i], sk_confusion_matrix(y, dec[i], labels=np.arange(k)))
    # Labels with their own batch axis (different test sets), and broadcasting (2, 1, N) x (3, N).
    ys = rng.integers(0, k, (m, n))
    got = np.asarray(confusion_matrix(ys, dec, num_classes=k))
    for i in range(m):
        np.testing.assert_array_equal(got[i], _bincount(ys[i], dec[i], k, k))
    y2 = rng.integers(0, k, (2, 1, n))
    got = np.asarray(confusion_matrix(y2, dec, num_classes=k))
    assert got.shape == (2, m, k, k)
    for a in range(2):
        for i in range(m):
            np.testing.assert_array_equal(got[a, i], _bincount(y2[a, 0], dec[i], k, k))
    # Weighted and batched.
    w = rng.uniform(0, 1, n)
    got = np.asarray(confusion_matrix(y, dec, num_classes=k, sample_weight=w))
    for i in range(m):
        np.testing.assert_allclose(got[i], _bincount(y, dec[i], k, k, w), rtol=1e-5)


def test_default_sizes():
    # K = max(label) + 1; D = K, or max(decision) + 1 when larger (an abstention column).
    np.testing.assert_array_equal(np.asarray(confusion_matrix([0, 1, 1], [0, 1, 0])), [[1, 0], [1, 1]])
    got = confusion_matrix([0, 1, 1, 0], [0, 2, 1, 2])
    np.testing.assert_array_equal(np.asarray(got), [[1, 0, 1], [0, 1, 1]])
    # Classes or decisions never seen still get their row/column when the sizes are given.
    got = confusion_matrix([0, 0], [1, 1], num_classes=3, num_decisions=4)
    np.testing.assert_array_equal(np.asarray(got), _bincount([0, 0], [1, 1], 3, 4))
    # Boolean and whole-number float inputs are accepted as indices.
    np.testing.assert_array_equal(np.asarray(confusion_matrix(np.array([True, False]), np.array([1.0, 0.0]))),
                                  [[1, 0], [0, 1]])


def test_confusion_matrix_under_jit_and_vmap():
    rng = np.random.default_rng(3)
    y = jnp.asarray(rng.integers(0, 3, 40))
    dec = jnp.asarray(rng.integers(0, 3, (5, 40)))
    eager = np.asarray(confusion_matrix(y, dec, num_classes=3))
    jitted = jax.jit(lambda a, b: confusion_matrix(a, b, num_classes=3))(y, dec)
    vmapped = jax.vmap(lambda b: confusion_matrix(y, b, num_classes=3))(dec)
    np.testing.assert_array_equal(np.asarray(jitted), eager)
    np.testing.assert_array_equal(np.asarray(vmapped), eager)
    np.testing.assert_array_equal(
        np.asarray(confusion_counts(y, dec, num_classes=3, num_decisions=3)), eager)


def test_rates_class_counts_and_priors():
    counts = np.array([[[3, 1, 0], [2, 4, 2], [0, 0, 0]], [[1, 1, 1], [0, 5, 0], [2, 0, 2]]])
    r = np.asarray(rates(counts))
    n_i = counts.sum(-1)
    with np.errstate(invalid="ignore"):
        want = np.nan_to_num(counts / n_i[..., None])       # a class with no samples: rates 0
    np.testing.assert_allclose(r, want, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(class_counts(counts)), n_i)
    np.testing.assert_allclose(np.asarray(data_priors(counts)), n_i / n_i.sum(-1, keepdims=True), rtol=1e-6)
    # Rows of present classes sum to 1.
    np.testing.assert_allclose(r.sum(-1)[n_i > 0], 1.0, rtol=1e-6)


# ------------------------------------------------------------- joint outcomes

def _counter_table(y, dec, w=None):
    counter = Counter()
    for n, key in enumerate(zip(y, *dec)):
        counter[tuple(int(v) for v in key)] += 1 if w is None else w[n]
    return counter


@pytest.mark.parametrize("m, k, n_dec, n", [(1, 2, 2, 30), (2, 2, 2, 1821), (3, 3, 4, 500), (4, 10, 10, 200)])
def test_joint_outcome_table_against_counter(m, k, n_dec, n):
    rng = np.random.default_rng(m * 100 + k)
    y = rng.integers(0, k, n)
    dec = rng.integers(0, n_dec, (m, n))
    table = joint_outcome_table(y, dec, num_classes=k, num_decisions=n_dec)
    cells = np.asarray(table.cells)
    counts = np.asarray(table.counts)
    assert cells.shape == (len(counts), 1 + m) and table.num_systems == m
    assert (table.num_classes, table.num_decisions) == (k, n_dec)
    want = _counter_table(y, dec)
    assert {tuple(c): int(v) for c, v in zip(cells.tolist(), counts)} == dict(want)
    assert len(set(map(tuple, cells.tolist()))) == len(cells)      # occupied cells, each once
    assert np.all(counts > 0) and counts.sum() == n
    # Marginals: each system's confusion matrix.
    marg = np.asarray(table.confusion_matrices())
    assert marg.shape == (m, k, n_dec)
    for i in range(m):
        np.testing.assert_array_equal(marg[i], _bincount(y, dec[i], k, n_dec))


def test_weighted_joint_outcome_table():
    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, 300)
    dec = rng.integers(0, 3, (2, 300))
    w = rng.uniform(0, 1, 300)
    table = joint_outcome_table(y, dec, num_decisions=3, sample_weight=w)
    want = _counter_table(y, dec, w)
    got = {tuple(c): float(v) for c, v in zip(np.asarray(table.cells).tolist(), np.asarray(table.counts))}
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5)
    marg = np.asarray(table.confusion_matrices())
    for i in range(2):
        np.testing.assert_allclose(marg[i], _bincount(y, dec[i], 2, 3, w), rtol=1e-5)


def test_joint_outcome_table_on_real_scores(data_dir):
    """Two decision rules applied to the same real scores (SST-2, GPT-2 zero-shot)
    are paired by construction: argmax and the Bayes rule of costs c01 = 1, c10 = 4
    (decide class 1 when P(1|x) > 1/5, Ferrer (2025) App. A eq. 19)."""
    y = np.load(data_dir / "sst2_gpt2" / "targets.npy", allow_pickle=False)
    s = np.load(data_dir / "sst2_gpt2" / "scores.npy", allow_pickle=False).astype(np.float64)
    post1 = np.exp(s[:, 1] - np.logaddexp(s[:, 0], s[:, 1]))
    dec = np.stack([np.argmax(s, 1), (post1 > 0.2).astype(int)])
    table = joint_outcome_table(y, dec)
    assert {tuple(c): int(v) for c, v in zip(np.asarray(table.cells).tolist(), np.asarray(table.counts))} \
        == dict(_counter_table(y, dec))
    assert len(table.counts) <= 2 * 2 * 2
    marg = np.asarray(table.confusion_matrices())
    for i in range(2):
        np.testing.assert_array_equal(marg[i], sk_confusion_matrix(y, dec[i]))
