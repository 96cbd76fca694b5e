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
* ``precision="fast"`` is refused, pointing to ``"exact"``; the reason it
  was removed is shown here: on adversarial near ties two float32
  evaluations of the same product in different summation orders pick
  different decisions, always inside the float32 tie band (float64 margin
  ``<= 2 K 2^-24 max|c|``), so no repair by a second product can promise
  the exact product's decisions.  The reference is float64 numpy.
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

import ecjax
from ecjax import InputError, bayes_decisions, bayes_expected_cost
from ecjax._src.decisions import bayes_decisions_kernel
from ecjax._src.precision import argmin_of_products, matmul

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
        if all(e.startswith(("i", "ui")) for e in elems):
            continue  # integer products are exact
        if "precision = [HIGHEST, HIGHEST]" not in line:
            bad.append(line.strip())
    return bad


_WORKLOAD = textwrap.dedent(
    """
    import numpy as np, jax, jax.numpy as jnp
    import ecjax
    from ecjax import calibration, costs as C
    from ecjax._src import prob
    from ecjax.sweep import grids, metric_reliability, sweep_counts, sweep_scores

    rng = np.random.default_rng(0)
    n, k = 300, 4
    labels = rng.integers(0, k, n)
    logits = rng.normal(size=(2, n, k)) + 2 * np.eye(k)[labels]
    cost = rng.uniform(0.1, 3.0, size=(5, k, k)) * (1 - np.eye(k))
    ecjax.bayes_decisions(logits, cost[0], score_type="logits")
    ecjax.bayes_expected_cost(labels, logits, cost, score_type="logits", normalize=True)
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
    bf16 = jax.jit(lambda a, b: jnp.matmul(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16),
                                           preferred_element_type=jnp.float32)).lower(f32, f32).as_text()
    i32 = jax.ShapeDtypeStruct((8, 8), jnp.int32)
    ints = jax.jit(lambda a, b: a @ b).lower(i32, i32).as_text()
    assert len(imprecise_products(forgetful)) == 1
    assert len(imprecise_products(bf16)) == 1  # no product is deliberately rounded any more
    assert imprecise_products(careful) == [] and imprecise_products(ints) == []


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
    assert not offenders, "use the matmul/einsum of ecjax._src.precision:\n" + "\n".join(offenders)


# ------------------------------------------------------------ no "fast" argmin, and why


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
def test_two_float32_orders_disagree_only_inside_the_float32_tie_band(k, d):
    # Why "fast" went: its repair recomputed near ties with a second float32 product in another summation order.
    # Here the exact product (one GEMM) and the same product summed in two halves (another order, as a repair or
    # another backend would sum it) decide adversarial near ties at the float32 rounding level.
    rng = np.random.default_rng(k)
    costs = rng.uniform(0.0, 5.0, size=(k, d)).astype(np.float32)
    n = 20_000
    p = _near_tie_posteriors(rng, n, k, costs.astype(np.float64), 10 ** rng.uniform(-8.5, -5.5, n))
    p32 = p.astype(np.float32)
    exact = np.asarray(argmin_of_products(jnp.asarray(p32), jnp.asarray(costs)))
    h = k // 2
    halves = matmul(p32[:, :h], costs[:h]) + matmul(p32[:, h:], costs[h:])
    other = np.asarray(jnp.argmin(halves, axis=-1))
    reference = np.argmin(p32.astype(np.float64) @ costs.astype(np.float64), axis=1)
    margin = _margins64(p32, costs)  # relative to max|c|
    band = 2 * k * 2.0**-24 * p32.astype(np.float64).sum(1).max()  # two float32 evaluations' rounding, relative
    differ = exact != other
    assert differ.sum() > 0  # the exact product's own decision depends on its summation order ...
    assert np.all(margin[differ] <= band)  # ... only inside the float32 tie band
    outside = margin > band
    assert outside.sum() > n // 10
    np.testing.assert_array_equal(exact[outside], reference[outside])  # and outside it both equal float64
    np.testing.assert_array_equal(other[outside], reference[outside])


def test_fast_precision_is_refused_pointing_to_exact():
    scores, costs = np.log(np.full((3, 2), 0.5)), 1 - np.eye(2)
    for call in (lambda: bayes_decisions(scores, costs, precision="fast"),
                 lambda: bayes_expected_cost([0, 1, 1], scores, costs, precision="fast"),
                 lambda: bayes_decisions_kernel(jnp.asarray(scores), jnp.asarray(costs), "fast")):
        with pytest.raises(InputError, match=r'precision="fast"` was removed.*precision="exact"'):
            call()
    np.testing.assert_array_equal(np.asarray(bayes_decisions(scores, costs, precision="exact")), [0, 0, 0])


def test_bayes_expected_cost_on_real_scores_equals_float64():
    from conftest import load_dataset

    targets, scores, score_type = load_dataset("cifar10_resnet-20")
    rng = np.random.default_rng(3)
    costs = rng.uniform(0.0, 10.0, size=(60, 10, 10)) * (1 - np.eye(10))
    exact = np.asarray(bayes_expected_cost(targets, scores, costs, score_type=score_type))
    chunked = np.asarray(bayes_expected_cost(targets, scores, costs, score_type=score_type, batch_size=7))
    # Other chunks: other programs, the same decisions, the same N = 10^4 float32 terms summed in another order.
    # Two orders of a tree (pairwise) reduction each lie within ceil(log2 N) u of the exact sum; the H100 gave
    # 2.2e-7 (2 ulps) at one of 60 matrices, the CPU agrees to the last bit.
    tree_bound = 2 * np.ceil(np.log2(len(targets))) * 2.0**-24
    np.testing.assert_allclose(chunked, exact, rtol=tree_bound)
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


# ------------------------------------------------------------ many matrices against a few systems: one product


@pytest.mark.parametrize("sa,sb,axes", [((3, 1, 4, 5), (1, 7, 4, 5), 2), ((1, 70, 4, 5), (3, 1, 4, 5), 2),
                                        ((4, 5), (6, 4, 5), 2), ((2, 3, 1, 4), (2, 1, 6, 4), 1),
                                        ((3, 4, 5), (3, 4, 5), 2), ((2, 9, 1, 1, 3), (2, 1, 5, 1, 3), 1)])
def test_broadcast_contract_equals_the_float64_broadcast_sum(sa, sb, axes):
    from ecjax._src.precision import broadcast_contract

    rng = np.random.default_rng(len(sa) + sum(sb))
    a, b = rng.normal(size=sa).astype(np.float32), rng.normal(size=sb).astype(np.float32)
    ref = (a.astype(np.float64) * b).sum(axis=tuple(range(-axes, 0)))
    out = np.asarray(broadcast_contract(jnp.asarray(a), jnp.asarray(b), axes))
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=0, atol=2e-6 * np.abs(a).max() * np.abs(b).max() * np.prod(sa[-axes:]))


def test_nec_over_many_cost_matrices_is_one_product_without_a_copy_of_the_costs():
    # Issue 34, item 4: the NEC of a few systems over many cost matrices reads the costs once, as one matrix
    # product.  It used to broadcast them against every system and transpose them for the naive EC: a temporary
    # as large as the costs (40 MB here), which XLA's memory analysis of the compiled program shows.
    b, k = 100_000, 10
    costs = jax.ShapeDtypeStruct((b, k, k), jnp.float32)
    counts = jax.ShapeDtypeStruct((3, k, k), jnp.int32)
    nec = jax.jit(lambda c, cm: ecjax.normalized_expected_cost(cm[:, None], c[None]))
    lowered = nec.lower(costs, counts)
    products = [line for line in lowered.as_text().splitlines() if "stablehlo.dot_general" in line]
    assert len(products) == 1 and "(tensor<100000x100xf32>, tensor<3x11x100xf32>)" in products[0]  # (B, K K) @ ...
    if jax.default_backend() == "cpu":  # a GPU's memory analysis counts its GEMM library's workspace as well
        assert lowered.compile().memory_analysis().temp_size_in_bytes < b * k * k * 4
    # ... and the values are the float64 NEC (Ferrer 2022a, eqs. 2-4) of each system and matrix.
    rng = np.random.default_rng(0)
    c = rng.uniform(0.1, 10.0, (2000, k, k)) * (1 - np.eye(k))
    cm = rng.integers(0, 50, (3, k, k))
    out = np.asarray(nec(jnp.asarray(c, jnp.float32), jnp.asarray(cm)))
    p = cm.sum(-1) / cm.sum((-2, -1))[:, None]
    r = cm / cm.sum(-1, keepdims=True)
    ref = np.einsum("si,sij,bij->sb", p, r, c) / np.min(np.einsum("si,bij->sbj", p, c), -1)
    np.testing.assert_allclose(out, ref, rtol=2e-6)
    expected = np.asarray(ecjax.expected_cost(cm[:, None], c[None].astype(np.float32)))
    np.testing.assert_allclose(expected, np.einsum("si,sij,bij->sb", p, r, c), rtol=2e-6)
