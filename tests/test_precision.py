"""Matrix products are exact float32 on every backend, and the fast argmin changes no decision.

On NVIDIA GPUs XLA runs a float32 product in TF32 unless the product states
its precision; the CPU ignores the setting, so a CPU run cannot show the
error itself.  These tests guard it on the CPU instead:

* every ``dot_general`` that a representative run of the public API compiles
  (read from the StableHLO that JAX dumps with ``JAX_DUMP_IR_TO``) states
  ``precision = [HIGHEST, HIGHEST]``, unless its operands are integers or the
  deliberately rounded bfloat16 factors of the fast path; the same check is
  shown to fail on a product that forgets it;
* no source file of ``ecjax/`` calls ``jnp.matmul``/``einsum``/``dot``/``@``
  except through :mod:`ecjax.precision`;
* ``precision="fast"`` (bfloat16 products plus the exact repair of near
  ties) gives exactly the decisions of float32 on adversarial near ties,
  where the bfloat16 product alone gets many wrong.  The reference is a
  float64 numpy computation in the test.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from ecjax import InputError, bayes_decisions, bayes_expected_cost
from ecjax.decisions import bayes_decisions_kernel
from ecjax.precision import argmin_and_near_ties, argmin_of_products, fast_error_bound, fast_matmul

ROOT = Path(__file__).resolve().parents[1]

_DOT = re.compile(r"stablehlo\.(dot_general|dot)\b(?P<rest>.*)")
_OPERAND_TYPES = re.compile(r":\s*\((tensor<[^>]*>),\s*(tensor<[^>]*>)\)")


def imprecise_products(mlir_text: str) -> list[str]:
    """The float32 products of a StableHLO module that do not ask for HIGHEST precision."""
    bad = []
    for line in mlir_text.splitlines():
        m = _DOT.search(line)
        if not m:
            continue
        types = _OPERAND_TYPES.search(m.group("rest"))
        elems = [t.rsplit("x", 1)[-1].rstrip(">") for t in types.groups()] if types else ["?"]
        if all(e.startswith(("i", "ui")) for e in elems) or all(e == "bf16" for e in elems):
            continue  # integer products are exact; bf16 factors are the fast path's deliberate rounding
        if "precision = [HIGHEST, HIGHEST]" not in line:
            bad.append(line.strip())
    return bad


_WORKLOAD = textwrap.dedent(
    """
    import numpy as np, jax, jax.numpy as jnp
    import ecjax
    from ecjax import prob, calibration, costs as C
    from ecjax.sweep import grids, metric_reliability, sweep_counts, sweep_scores

    rng = np.random.default_rng(0)
    n, k = 300, 4
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(2, n, k)) + 2 * np.eye(k)[labels]
    cost = rng.uniform(0.1, 3.0, size=(5, k, k)) * (1 - np.eye(k))
    ecjax.bayes_decisions(logits, cost[0], score_type="logits")
    ecjax.bayes_decisions(logits, cost[0], score_type="logits", precision="fast")
    ecjax.bayes_expected_cost(labels, logits, cost, score_type="logits", normalize=True)
    ecjax.bayes_expected_cost(labels, logits, cost, score_type="logits", precision="fast")
    ecjax.naive_decision(cost[0], np.full(k, 1 / k))
    counts = ecjax.confusion_matrix(labels, rng.integers(0, k, n), num_classes=k)
    ecjax.expected_cost(counts, cost[0]); ecjax.normalized_expected_cost(counts, cost[0])
    calibration.fit(logits[0], labels, method="matrix", score_type="logits",
                    settings=calibration.FitSettings(max_iter=5))
    calibration.fit(logits[0], labels, method="affine", score_type="logits",
                    settings=calibration.FitSettings(max_iter=5))
    b = labels % 2
    llr = rng.normal(size=(2, n)) + 2 * b
    sweep_scores(b, llr, np.array([[0., 1.], [1., 0.]]), priors=grids.effective_priors(0.1, 0.9, 9),
                 score_type="llr")
    sweep_counts(np.stack([counts, counts.T]), grids.cost_ratios(0.1, 10, 9) if k == 2 else cost,
                 priors=np.full((3, k), 1 / k))
    metric_reliability(jax.random.key(0), num_pairs=2000)
    prior = prob.utility_priors.intervals(np.full((k, k), -2.0) * (1 - np.eye(k)), np.zeros((k, k)))
    settings = prob.MonteCarloSettings(num_draws=300)
    prob.compare(prob.Systems(labels, scores=logits, score_type="logits"), utilities=prior, key=jax.random.key(1),
                 settings=settings)
    prob.compare(prob.Systems(labels, rng.integers(0, k, (2, n))), utilities=prior, key=jax.random.key(2),
                 settings=settings)
    print("workload done")
    """
)


@pytest.fixture(scope="module")
def dumped_modules(tmp_path_factory):
    out = tmp_path_factory.mktemp("ir")
    env = dict(os.environ, JAX_DUMP_IR_TO=str(out), JAX_DUMP_IR_MODES="stablehlo", JAX_PLATFORMS="cpu",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, "-c", _WORKLOAD], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "workload done" in run.stdout
    modules = {p.name: p.read_text() for p in out.glob("*.mlir")}
    assert modules, "JAX_DUMP_IR_TO wrote no StableHLO modules"
    return modules


def test_every_compiled_product_asks_for_highest_precision(dumped_modules):
    products = sum(len(_DOT.findall(t)) for t in dumped_modules.values())
    assert products >= 10, f"the workload compiled only {products} products: it no longer covers the kernels"
    bad = {name: imprecise_products(text) for name, text in dumped_modules.items()}
    bad = {name: lines for name, lines in bad.items() if lines}
    assert not bad, "products without precision=HIGHEST (TF32 on GPUs):\n" + "\n".join(
        f"{name}: {lines[0]}" for name, lines in bad.items()
    )


def test_the_workload_reaches_the_bayes_and_sweep_kernels(dumped_modules):
    names = " ".join(dumped_modules)
    for kernel in ("_bayes_ec", "_bayes_decisions_jit", "_step", "_fit_kernel"):
        assert kernel in names, f"{kernel} was not compiled by the workload"


def test_the_dump_check_fails_on_a_product_that_forgets_its_precision():
    f32 = jax.ShapeDtypeStruct((8, 8), jnp.float32)
    forgetful = jax.jit(lambda a, b: a @ b).lower(f32, f32).as_text()
    careful = jax.jit(lambda a, b: jnp.matmul(a, b, precision="highest")).lower(f32, f32).as_text()
    bf16 = jax.jit(fast_matmul).lower(f32, f32).as_text()
    i32 = jax.ShapeDtypeStruct((8, 8), jnp.int32)
    ints = jax.jit(lambda a, b: a @ b).lower(i32, i32).as_text()
    assert len(imprecise_products(forgetful)) == 1
    assert imprecise_products(careful) == [] and imprecise_products(bf16) == [] and imprecise_products(ints) == []


_PRODUCTS = {"matmul", "einsum", "dot", "tensordot", "inner", "vdot", "dot_general", "matvec", "vecdot", "outer"}


def test_no_source_product_bypasses_ecjax_precision():
    offenders = []
    for path in sorted((ROOT / "ecjax").rglob("*.py")):
        if path.name == "precision.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: '@'")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _PRODUCTS:
                base = ast.unparse(node.func.value)
                if base in ("jnp", "jax.numpy", "lax", "jax.lax", "jnp.linalg"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node.func)}")
    assert not offenders, "use ecjax.precision.matmul/einsum:\n" + "\n".join(offenders)


# ------------------------------------------------------------ fast argmin


def _near_tie_posteriors(rng, n, k, costs, gaps):
    """Posteriors whose two best expected costs (float64) differ by ``gaps`` (relative to max|c|).

    Start from a random posterior, then move mass between two classes along
    the direction that closes the gap between the two best decisions.
    """
    p = rng.dirichlet(np.full(k, 0.5), size=n)
    scale = np.abs(costs).max()
    for _ in range(3):  # a few Newton steps on the (piecewise linear) gap
        e = p @ costs
        order = np.argsort(e, axis=1)
        a, b = order[:, 0], order[:, 1]
        diff = costs[:, b] - costs[:, a]  # (K, n): d gap / d p_i, gap = e_b - e_a
        i = np.argmax(diff.T, axis=1)
        j = np.argmin(diff.T, axis=1)
        slope = diff.T[np.arange(n), i] - diff.T[np.arange(n), j]
        target = gaps * scale
        gap = e[np.arange(n), b] - e[np.arange(n), a]
        t = np.clip((target - gap) / np.where(slope != 0, slope, 1), -p[np.arange(n), i], p[np.arange(n), j])
        p[np.arange(n), i] += t
        p[np.arange(n), j] -= t
        p = np.clip(p, 1e-9, None)  # strictly positive: log-posteriors stay finite
        p /= p.sum(1, keepdims=True)
    return p


def _margins64(p, costs):
    e = np.sort(p.astype(np.float64) @ costs.astype(np.float64), axis=1)
    return (e[:, 1] - e[:, 0]) / np.abs(costs).max()


@pytest.mark.parametrize("k,d", [(10, 10), (40, 41)])
def test_fast_decisions_equal_float64_on_adversarial_near_ties(k, d):
    rng = np.random.default_rng(k)
    costs = rng.uniform(0.0, 5.0, size=(k, d))
    n = 4000
    # Relative gaps from 3e-5 (well above float32 rounding, ~k * 6e-8) to 3e-3 (inside the bf16 error).
    p = _near_tie_posteriors(rng, n, k, costs, 10 ** rng.uniform(-4.5, -2.5, n))
    p32, c32 = p.astype(np.float32), costs.astype(np.float32)
    p32 /= p32.sum(1, keepdims=True)
    margin = _margins64(p32, c32)
    clear = margin > 1e-5  # not ties at float32 resolution
    assert clear.mean() > 0.9
    reference = np.argmin(p32.astype(np.float64) @ c32.astype(np.float64), axis=1)

    unrepaired = np.asarray(jnp.argmin(fast_matmul(jnp.asarray(p32), jnp.asarray(c32)), axis=-1))
    assert np.sum(unrepaired[clear] != reference[clear]) > 20  # the bf16 product alone is wrong here

    log_post = jnp.log(jnp.asarray(p32))
    fast = np.asarray(bayes_decisions(log_post, c32, precision="fast"))
    exact = np.asarray(bayes_decisions(log_post, c32))
    np.testing.assert_array_equal(fast[clear], reference[clear])
    np.testing.assert_array_equal(exact[clear], reference[clear])
    # Where float64 itself is within float32 rounding the two may pick either of the tied decisions.
    differ = fast != exact
    assert np.all(_margins64(p32, c32)[differ] <= 4 * k * 2.0**-24)


def test_fast_decisions_keep_exact_ties_on_the_lowest_index_and_many_refinement_rounds():
    rng = np.random.default_rng(1)
    k = 64
    costs = rng.uniform(size=(k, k - 1)).astype(np.float32)
    costs = np.concatenate([costs, costs[:, 5:6]], 1)  # decision 63 duplicates decision 5: exact ties
    p = np.clip(rng.dirichlet(np.full(k, 0.05), size=6000), 1e-9, None).astype(np.float32)
    log_post = jnp.log(jnp.asarray(p / p.sum(1, keepdims=True)))
    exact = np.asarray(bayes_decisions_kernel(log_post, costs))
    fast = np.asarray(bayes_decisions_kernel(log_post, costs, "fast"))
    np.testing.assert_array_equal(fast, exact)
    assert not np.any(exact == k - 1)  # ties go to the lowest index
    assert np.sum(exact == 5) > 50  # ... which the exact tie made a real contest
    # More near ties than one refinement round holds (2^21 floats / (k*k + k) per row): several rounds ran.
    _, near = argmin_and_near_ties(fast_matmul(jnp.exp(log_post), jnp.asarray(costs)),
                                   fast_error_bound(k, np.abs(costs).max()), -1)
    assert int(near.sum()) > 2 * ((1 << 21) // (k * k + k))


def test_fast_path_under_jit_and_vmap_and_with_batched_costs():
    rng = np.random.default_rng(2)
    k, d = 6, 7
    costs = rng.uniform(size=(3, k, d)).astype(np.float32)
    p = rng.dirichlet(np.ones(k), size=(3, 500)).astype(np.float32)
    log_post = jnp.log(jnp.asarray(p))
    ref = np.argmin(np.einsum("bnk,bkd->bnd", p.astype(np.float64), costs.astype(np.float64)), -1)
    vm = jax.vmap(lambda lp, c: bayes_decisions_kernel(lp, c, "fast"))(log_post, costs)
    jt = jax.jit(lambda lp, c: argmin_of_products(jnp.exp(lp), c, precision="fast"))(log_post, costs)
    margin = np.sort(np.einsum("bnk,bkd->bnd", p.astype(np.float64), costs.astype(np.float64)), -1)
    clear = (margin[..., 1] - margin[..., 0]) > 1e-5
    np.testing.assert_array_equal(np.asarray(vm)[clear], ref[clear])
    np.testing.assert_array_equal(np.asarray(jt), np.asarray(vm))


def test_fast_bayes_expected_cost_equals_exact_on_real_scores():
    from conftest import load_dataset

    targets, scores, score_type = load_dataset("cifar10_resnet-20")
    rng = np.random.default_rng(3)
    costs = rng.uniform(0.0, 10.0, size=(60, 10, 10)) * (1 - np.eye(10))
    exact = np.asarray(bayes_expected_cost(targets, scores, costs, score_type=score_type))
    fast = np.asarray(bayes_expected_cost(targets, scores, costs, score_type=score_type, precision="fast"))
    # Same decisions, then the same sums: equal to the last bit.
    np.testing.assert_array_equal(fast, exact)
    chunked = np.asarray(bayes_expected_cost(targets, scores, costs, score_type=score_type, precision="fast",
                                             batch_size=7))
    np.testing.assert_allclose(chunked, exact, rtol=2e-7)  # other chunks: other summation shapes, same decisions
    # And both equal a float64 numpy evaluation of the same rule.
    post = np.exp(scores - scores.max(1, keepdims=True))
    post /= post.sum(1, keepdims=True)
    for b in range(0, 60, 13):
        dec = np.argmin(post @ costs[b], axis=1)
        np.testing.assert_allclose(exact[b], costs[b][targets, dec].mean(), rtol=2e-6)


def test_bad_precision_names_the_argument():
    with pytest.raises(InputError, match="precision"):
        bayes_decisions(np.zeros((3, 2)), np.eye(2), precision="tf32")
    with pytest.raises(InputError, match="precision"):
        bayes_expected_cost([0, 1, 1], np.zeros((3, 2)), np.eye(2), precision=None)
