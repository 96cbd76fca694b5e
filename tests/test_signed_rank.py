"""The Bayesian signed-rank test (``ecjax._src.prob.signed_rank``).

References: baycomp 1.0.3's ``SignedRankTest`` (its probabilities, each a
Monte Carlo estimate: compared within 5 combined standard errors), and a
closed form: when every difference exceeds ``2 rope`` the only atom pairs
outside the right region are ``(d_0, d_0)``, so ``theta_right = 1 - w_0^2``
with ``w_0 ~ Beta(s, n)`` and ``P(theta_right largest) = P(w_0 < 1/sqrt 2)``.
"""

import numpy as np
import pytest
from scipy import stats

import jax

import ecjax
from ecjax._src.prob.signed_rank import signed_rank_test
from conftest import DATASETS, load_dataset

baycomp = pytest.importorskip("baycomp")

KEY = jax.random.key(7)
DRAWS = 20_000


def _baycomp_probabilities(x, y, rope, prior=0.5, seed=0, draws=DRAWS):
    ref = baycomp.SignedRankTest.probs(np.asarray(x), np.asarray(y), rope=rope, prior=prior, nsamples=draws,
                                       random_state=seed)
    return np.array(ref if rope > 0 else (ref[0], 0.0, ref[1]))


def _assert_close(p, num_draws, ref, ref_draws):
    """Within 5 standard errors of the difference of two independent Monte Carlo estimates."""
    p = np.asarray(p, np.float64)
    error = np.sqrt(p * (1 - p) / num_draws + ref * (1 - ref) / ref_draws)
    np.testing.assert_array_less(np.abs(p - ref), 5 * error + 1e-12)


def _assert_matches_baycomp(x, y, rope, prior=0.5, seed=0):
    ours = signed_rank_test(x, y, rope=rope, prior_strength=prior, key=jax.random.fold_in(KEY, seed),
                            num_draws=DRAWS)
    _assert_close(ours.probabilities, DRAWS, _baycomp_probabilities(x, y, rope, prior, seed), DRAWS)
    return np.asarray(ours.probabilities)


@pytest.mark.parametrize("rope", [0.0, 0.005, 0.01])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_baycomp_on_synthetic_results(seed, rope):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.7, 0.9, 7)  # n = 7 in most tests: one compilation
    y = x + rng.normal(0.006, 0.015, 7)
    p = _assert_matches_baycomp(x, y, rope, seed=seed)
    assert 0.02 < max(p) < 0.98 or rope == 0.0  # an undecided case, where the Monte Carlo error matters


def test_matches_baycomp_with_ties_and_a_strong_prior():
    # Differences of exactly +-rope (sums on the ROPE's edge count 1/2) and zeros (the pseudo-observation's value).
    x = np.array([0.80, 0.75, 0.90, 0.70, 0.85, 0.60, 0.65])
    y = x + np.array([0.01, -0.01, 0.0, 0.02, 0.01, 0.0, 0.03])
    _assert_matches_baycomp(x, y, 0.01, prior=2.0, seed=3)
    _assert_matches_baycomp(x, y, 0.0, prior=2.0, seed=4)


# Two baycomp runs of 20,000 Python-loop draws and a compilation for n = 24; synthetic inputs of every kind are
# checked against baycomp in the default lane.
@pytest.mark.slow
def test_matches_baycomp_on_real_classifier_outputs():
    # 24 "data sets": four disjoint quarters of each real test set; a = accuracy, b = balanced accuracy of the
    # argmax decisions (does balancing the classes change the score across data sets?).

    a, b = [], []
    for name in sorted(DATASETS):
        targets, scores, _ = load_dataset(name)
        for part in np.array_split(np.arange(len(targets)), 4):
            t, d = targets[part], np.argmax(scores[part], -1)
            a.append(np.mean(d == t))
            b.append(np.mean([np.mean(d[t == k] == k) for k in np.unique(t)]))
    for rope, seed in ((0.0, 5), (0.01, 6)):
        _assert_matches_baycomp(np.array(a), np.array(b), rope, seed=seed)


@pytest.mark.parametrize("prior, spread", [(0.5, 0.05), (1.0, 0.1), (3.0, 0.2)])
def test_closed_form_when_every_difference_is_beyond_the_rope(prior, spread):
    n = 7  # one shape: one compilation
    d = np.linspace(0.03, 0.03 + spread, n)
    res = signed_rank_test(d, rope=0.01, prior_strength=prior, key=KEY, num_draws=DRAWS)
    expected = stats.beta.cdf(1 / np.sqrt(2), prior, n)
    p = float(res.p_right)
    assert abs(p - expected) < 5 * np.sqrt(expected * (1 - expected) / DRAWS)
    assert float(res.p_left) == 0.0
    # theta_rope is w_0^2 on every draw
    draws = np.asarray(res.draws)
    np.testing.assert_allclose(draws[:, 1] + draws[:, 2], 1.0, atol=1e-5)
    np.testing.assert_allclose(np.mean(draws[:, 1]), stats.beta.moment(2, prior, n),
                               atol=5 * np.std(draws[:, 1]) / np.sqrt(DRAWS))


def test_batched_rows_and_jit_agree_with_one_row_at_a_time():
    rng = np.random.default_rng(11)
    d = rng.normal(0.005, 0.02, (2, 3, 7))
    res = signed_rank_test(d, rope=0.01, key=KEY, num_draws=2000)
    assert res.probabilities.shape == (2, 3, 3) and res.draws.shape == (2000, 2, 3, 3)
    np.testing.assert_allclose(np.asarray(res.probabilities).sum(-1), 1.0, atol=1e-6)

    def probabilities(x):
        return signed_rank_test(x, rope=0.01, key=KEY, num_draws=2000).probabilities

    np.testing.assert_allclose(jax.jit(probabilities)(d), res.probabilities, atol=1e-6)
    # each row against baycomp
    for seed, index in enumerate(np.ndindex(2, 3)):
        ref = _baycomp_probabilities(np.zeros(7), d[index], 0.01, seed=seed, draws=4000)
        _assert_close(res.probabilities[index], 2000, ref, 4000)


@pytest.mark.parametrize("kwargs, match", [
    ({"rope": -0.1}, "rope"),
    ({"prior_strength": 0.0}, "prior_strength"),
    ({"num_draws": 0}, "num_draws"),
])
def test_bad_arguments_raise_input_error(kwargs, match):
    with pytest.raises(ecjax.InputError, match=match):
        signed_rank_test([0.1, 0.2, 0.3], **{"key": KEY, **kwargs})


def test_bad_results_raise_input_error():
    with pytest.raises(ecjax.InputError, match="same shape"):
        signed_rank_test([0.1, 0.2, 0.3], [0.1, 0.2], key=KEY)
    with pytest.raises(ecjax.InputError, match="differences"):
        signed_rank_test([0.1, np.nan, 0.3], key=KEY)
    with pytest.raises(ecjax.InputError, match="key"):
        signed_rank_test([0.1, 0.2, 0.3], key=None)


# ---------------------------------------------------------------------------------------------------------------------
# ecjax compare-folds --test signed-rank


def _write_folds(path, names, datasets, results):
    """``results`` (M, q, n): one row per (data set, fold)."""
    rows = [",".join(["dataset", *names])]
    for d, name in enumerate(datasets):
        rows += [",".join([name, *(f"{results[m, d, f]:.6f}" for m in range(len(names)))])
                 for f in range(results.shape[2])]
    path.write_text("\n".join(rows) + "\n")


def test_cli_signed_rank_over_data_sets_matches_baycomp(tmp_path):
    import json

    from conftest import run_cli

    rng = np.random.default_rng(21)
    level = rng.uniform(0.7, 0.9, (1, 8, 1))
    results = np.round(level + np.array([0.0, 0.008, -0.02])[:, None, None] + rng.normal(0, 0.01, (3, 8, 5)), 6)
    _write_folds(tmp_path / "r.csv", ["A", "B", "C"], [f"set{d}" for d in range(8)], results)
    code, out, err = run_cli("compare-folds", "r.csv", "--test", "signed-rank", "--rope", "0.005", "--json",
                             cwd=tmp_path)
    assert code == 0, err
    rec = json.loads(out)
    means = results.mean(-1)
    for a, b in ((0, 1), (0, 2), (1, 2)):
        p = np.array(rec["pairwise"]["ABC"[a]]["ABC"[b]])
        ref = _baycomp_probabilities(means[a], means[b], 0.005, seed=a + b, draws=DRAWS)
        _assert_close(p, 50_000, ref, DRAWS)
    np.testing.assert_allclose(rec["dataset_means"]["B"], means[1], atol=1e-9)


def test_cli_signed_rank_needs_data_sets_and_no_rank_diagram(tmp_path):
    from conftest import run_cli

    (tmp_path / "one.csv").write_text("A,B\n0.8,0.81\n0.79,0.8\n0.82,0.84\n")
    code, _, err = run_cli("compare-folds", "one.csv", "--test", "signed-rank", cwd=tmp_path)
    assert code == 2 and "one.csv" in err and "at least 2 data sets" in err and "--test t-test" in err
    # the option rule, said before the (missing) file is read
    code, _, err = run_cli("compare-folds", "missing.csv", "--test", "signed-rank", "--rank-diagram", "cd.png",
                           cwd=tmp_path)
    assert code == 2 and "--rank-diagram: not with --test signed-rank" in err and "missing.csv" not in err, err
    assert not (tmp_path / "cd.png").exists()
