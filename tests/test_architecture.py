"""The house rules of ``ecjax/`` that a reader relies on: what one module uses of another is public.

A name with a leading underscore is private to the module that defines it; when another module needs it, it is
made public (and documented) where it belongs, so that a change inside one module cannot silently break another.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "ecjax"
SRC = ROOT / "_src"  # the implementation (issue 32.7): the house rules below are of its modules


def _modules():
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.parent == SRC and path.name == "__init__.py":
            continue
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_part(part):
    """A private part of a module path (``ecjax._src`` itself is the implementation, not a private name)."""
    return _private(part) and part != "_src"


def private_names_crossing(modules):
    """``[(module, what, line)]``: private names one ecjax module takes from another."""
    found = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        aliases = {}  # local name -> ecjax module it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ecjax":
                for alias in node.names:
                    if _private(alias.name) or any(_private_part(part) for part in node.module.split(".")):
                        found.append((name, f"from {node.module} import {alias.name}", node.lineno))
                    if f"{node.module}.{alias.name}" in modules:
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "ecjax":
                        if any(_private_part(part) for part in alias.name.split(".")):
                            found.append((name, f"import {alias.name}", node.lineno))
                        if alias.asname:
                            aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and _private(node.attr)):
                found.append((name, f"{aliases[node.value.id]}.{node.attr}", node.lineno))
    return found


def test_no_private_name_crosses_a_module_boundary():
    assert private_names_crossing(_modules()) == []


def test_the_check_finds_a_crossing(tmp_path):
    # The rule above must be able to fail: a module reaching into another's private helper is caught, in each form.
    pkg = tmp_path / "ecjax"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "inputs.py").write_text("def _helper():\n    return 1\n")
    (pkg / "sub" / "_hidden.py").write_text("X = 1\n")
    (pkg / "user.py").write_text(
        "from ecjax.inputs import _helper\n"
        "from ecjax import inputs as v\n"
        "from ecjax.sub._hidden import X\n"
        "y = v._helper()\n"
    )
    modules = {"ecjax": pkg / "__init__.py", "ecjax.inputs": pkg / "inputs.py", "ecjax.sub": pkg / "sub" / "__init__.py",
               "ecjax.sub._hidden": pkg / "sub" / "_hidden.py", "ecjax.user": pkg / "user.py"}
    found = {what for _, what, _ in private_names_crossing(modules)}
    assert found == {"from ecjax.inputs import _helper", "from ecjax.sub._hidden import X", "ecjax.inputs._helper"}


def test_comparing_from_the_command_line_path_imports_neither_numpyro_nor_optax():
    # `ecjax compare` with interval costs (the README's command) draws everything with ecjax's own samplers, so
    # NumPyro (about 0.45 s to import, with the scipy it pulls in) and optax stay unloaded; the lazy names of
    # `ecjax.prob` still load their modules on first use.
    import subprocess
    import sys

    code = """
import sys
import numpy as np, jax
import ecjax.cli
from ecjax import prob
y = np.array([0, 1, 1, 0, 1, 0, 1, 1])
d = np.array([[0, 1, 0, 0, 1, 1, 1, 1], [0, 1, 1, 0, 0, 0, 1, 1]])
res = prob.compare(prob.Systems(y, d), costs=prob.intervals([[0, 1], [2, 0]], [[0, 2], [8, 0]], kind="cost"),
                   key=jax.random.key(0), settings=prob.MonteCarloSettings(num_draws=200))
assert np.isfinite(res.p_best).all()
loaded = [m for m in ("numpyro", "optax") if m in sys.modules]
assert not loaded, loaded
prob.bootstrap_metric, prob.hierarchical_test, prob.TruncatedStandardNormal
assert "numpyro" in sys.modules and "optax" in sys.modules
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_every_name_ecjax_prob_exports_resolves():
    # ecjax.prob loads some modules on first use (PEP 562): each exported name, eager or lazy, must resolve to the
    # object its module defines.
    import importlib

    import ecjax.prob as prob

    for name in prob.__all__:
        value = getattr(prob, name)
        module = importlib.import_module(getattr(value, "__module__", None) or "ecjax.prob")
        if module.__name__.startswith("ecjax._src.prob."):
            assert getattr(module, name) is value, name
    assert set(prob.__all__) <= set(dir(prob))


# Validation lives in the input layer: these modules hold the checks that every other module calls.
VALIDATOR_MODULES = {"ecjax._src.inputs", "ecjax._src.scores.inputs", "ecjax._src.sweep.inputs", "ecjax._src.prob.inputs"}
# Half of the 278 sites outside the input layer when the house rules were written (issue 14).
MAX_RAISE_SITES_OUTSIDE_THE_INPUT_LAYER = 139


def input_error_raises(path):
    """The number of ``raise InputError(...)`` / ``raise v.InputError(...)`` statements in the file ``path``."""
    count = 0
    for node in ast.walk(ast.parse(Path(path).read_text())):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            f = node.exc.func
            count += (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")) == "InputError"
    return count


def wide_public_functions(path, limit=10):
    """``[(name, parameters)]``: public functions and public methods of public classes of ``path`` that take more
    than ``limit`` parameters (``self``/``cls`` not counted)."""
    found = []
    for node in ast.parse(Path(path).read_text()).body:
        members = node.body if isinstance(node, ast.ClassDef) and not _private(node.name) else []
        for fn in [node, *members]:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _private(fn.name):
                a = fn.args
                params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]
                n = len(params) - (bool(a.args) and a.args[0].arg in ("self", "cls"))
                if n > limit:
                    found.append((fn.name, n))
    return found


def test_input_checks_live_in_the_input_layer():
    outside = {name: input_error_raises(path) for name, path in _modules().items() if name not in VALIDATOR_MODULES}
    assert sum(outside.values()) <= MAX_RAISE_SITES_OUTSIDE_THE_INPUT_LAYER, sorted(
        outside.items(), key=lambda kv: -kv[1])[:10]


def test_no_public_function_takes_more_than_ten_parameters():
    assert {name: found for name, path in _modules().items() if (found := wide_public_functions(path))} == {}


def test_the_counts_can_fail(tmp_path):
    # Both rules above must be able to fail, on a module written to break them.
    p = tmp_path / "m.py"
    p.write_text("from ecjax import inputs as v\nfrom ecjax.inputs import InputError\n\n"
                 "def f(x):\n    if x:\n        raise InputError('x')\n    raise v.InputError('y')\n\n"
                 "def wide(a, b, c, d, e, f, g, h, i, j, *, k):\n    raise ValueError\n\n"
                 "class C:\n    def m(self, a, b, c, d, e, f, g, h, i, j):\n        pass\n\n"
                 "    def n(self, a, b, c, d, e, f, g, h, i, j, k):\n        pass\n\n"
                 "def _private(a, b, c, d, e, f, g, h, i, j, k):\n    pass\n")
    assert input_error_raises(p) == 2
    assert wide_public_functions(p) == [("wide", 11), ("n", 11)]


# ------------------------------------------------------------------ one scalar check

# ``ecjax.inputs.as_scalar`` is the one check of one number (issue 32.7: it replaced as_real, as_number_between,
# as_positive_real, as_nonnegative_real, as_positive_int, check_zero_division and scores' target_sensitivity;
# check_at_least and check_between became the bounds of ``check_numbers``, its form for every entry of an array).
# Names that promise one number and are not as_scalar:
SCALAR_CHECK_NAME = re.compile(r"(as|check)_(real|number|float|int|integer|scalar|probability|fraction|between|"
                               r"at_least|at_most|zero_division|(positive|nonnegative|non_negative|negative)_"
                               r"(real|int|integer|number|float))")
# Input-layer functions that pass an argument through float() or int() and raise, each with why it is not one
# number checked within bounds (as_scalar's job).  An entry whose function is gone fails the test.
NOT_SCALAR_CHECKS = {
    "as_scalar": "the one scalar check",
    "as_range": "two numbers, lo <= hi (an axis' or a grid's range), said as a range",
    "as_pos_label": "a class index, in [0, K): its message says so",
    "inferred_size": "the number of classes a data set's largest index implies, against a memory cap",
    "check_dense_fits": "the memory of a K x D build",
}


def scalar_checks(path):
    """``[(function, why)]``: the functions of ``path`` besides ``as_scalar`` that check one number: a name that
    says so (:data:`SCALAR_CHECK_NAME`), a wrapper whose body (at most two statements) ends returning
    ``as_scalar(...)`` (renamed options), or a check by hand (an argument through ``float()``/``int()`` and a
    ``raise``) not in :data:`NOT_SCALAR_CHECKS`."""
    found = []
    for fn in ast.parse(Path(path).read_text()).body:
        if not isinstance(fn, ast.FunctionDef) or fn.name == "as_scalar":
            continue
        body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        last = body[-1].value if body and isinstance(body[-1], ast.Return) else None
        wraps = isinstance(last, ast.Call) and ast.unparse(last.func).split(".")[-1] == "as_scalar"
        a = fn.args
        params = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
        by_hand = any(isinstance(c, ast.Raise) for c in ast.walk(fn)) and any(
            isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in ("float", "int") and c.args
            and isinstance(c.args[0], ast.Name) and c.args[0].id in params for c in ast.walk(fn))
        if SCALAR_CHECK_NAME.fullmatch(fn.name.lstrip("_")):
            found.append((fn.name, "its name"))
        elif wraps and len(body) <= 2:
            found.append((fn.name, "a wrapper of as_scalar"))
        elif by_hand and fn.name not in NOT_SCALAR_CHECKS:
            found.append((fn.name, "by hand"))
    return found


def test_one_scalar_check_in_the_input_layer():
    layer = {name: path for name, path in _modules().items() if name in VALIDATOR_MODULES}
    assert {name: found for name, path in layer.items() if (found := scalar_checks(path))} == {}
    defined = {fn.name for path in layer.values() for fn in ast.parse(path.read_text()).body
               if isinstance(fn, ast.FunctionDef)}
    assert set(NOT_SCALAR_CHECKS) <= defined, set(NOT_SCALAR_CHECKS) - defined  # no stale reason


def test_the_scalar_check_rule_can_fail(tmp_path):
    # The checks this rule replaced, each caught: a name, a wrapper (with a traced pass), a check by hand; a
    # function that calls as_scalar and adds a rule of its own is no second check.
    p = tmp_path / "inputs.py"
    p.write_text('def as_positive_int(x, name, *, minimum=1):\n'
                 '    """One integer >= minimum."""\n'
                 '    return check(x, name, minimum)\n\n'
                 'def level_of(z, name="level"):\n'
                 '    if is_tracer(z):\n'
                 '        return z\n'
                 '    return v.as_scalar(z, name, low=0, high=1)\n\n'
                 'def target_sensitivity(sensitivity):\n'
                 '    target = float(sensitivity)\n'
                 '    if not 0.0 <= target <= 1.0:\n'
                 '        raise InputError("`sensitivity` must be in [0, 1]")\n'
                 '    return target\n\n'
                 'def as_scalar(x, name):\n'
                 '    return float(x)\n\n'
                 'def checked_beta(beta, metric):\n'
                 '    b = as_scalar(beta, "beta")\n'
                 '    if metric != "f_beta" and b != 1.0:\n'
                 '        raise InputError("beta")\n'
                 '    return b\n')
    assert scalar_checks(p) == [("as_positive_int", "its name"), ("level_of", "a wrapper of as_scalar"),
                                ("target_sensitivity", "by hand")]


# ------------------------------------------------------------------ calibrators: rows of one table

def calibrator_method_branches(path, methods):
    """``[(line, comparison)]``: where ``path`` compares a calibrator's method (a name ``method``, an attribute
    ``.method`` or ``.get("method")``) with a method's name, a tuple of names or a ``*METHODS`` constant.

    What differs between calibrators is a field of their row in ``ecjax.calibrators.CALIBRATORS`` (fit, apply,
    parameters, inputs, output type; issue 32.8), not a branch on the name: 22 such branches in 6 modules before.
    """
    def is_method(n):
        get = (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and n.args
               and isinstance(n.args[0], ast.Constant) and n.args[0].value == "method")
        return get or (isinstance(n, ast.Name) and n.id == "method") or (
            isinstance(n, ast.Attribute) and n.attr == "method")

    def names_a_method(n):
        words = {c.value for c in ast.walk(n) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
        return bool(words & set(methods)) or (isinstance(n, ast.Name) and n.id.endswith("METHODS"))

    return [(node.lineno, ast.unparse(node)) for node in ast.walk(ast.parse(Path(path).read_text()))
            if isinstance(node, ast.Compare) and any(map(is_method, ops := [node.left, *node.comparators]))
            and any(map(names_a_method, ops))]


def test_no_module_branches_on_the_calibrator_method():
    from ecjax.calibration import METHODS

    assert {name: found for name, path in _modules().items()
            if (found := calibrator_method_branches(path, METHODS))} == {}


def test_the_calibrator_branch_check_can_fail(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("def f(cal, method, kw):\n"
                 "    if cal.method == 'isotonic' or method in ('llr', 'beta') or method in NON_ITERATIVE_METHODS:\n"
                 "        return kw.get('method', 'affine') != 'llr'\n"
                 "    return method == 'threshold'\n")  # not a calibrator's name: another kind of method
    assert [line for line, _ in calibrator_method_branches(p, ("isotonic", "llr", "beta", "affine"))] == [2, 2, 2, 3]


# ------------------------------------------------------------------ module size

MAX_MODULE_LINES = 600
# The modules over MAX_MODULE_LINES, each with the reason it is still one file.  A module that grows past the limit
# fails the test until it is split or its reason is written here; a reason whose module has shrunk below the limit
# fails too, as does a reason for a module that no longer exists, so the list stays true.
LARGE_MODULES = {
    "ecjax/_src/prob/from_results.py": "four models of per-fold results (correlated t, hierarchical t, joint-t draws, "
                                       "hierarchical results) with their result types and the rounds that draw them "
                                       "until precise; a module per model, as prob/draw_models/ holds compare's, is "
                                       "not done",
    "ecjax/_src/prob/compare.py": "compare() and compare_counts() with their documentation (about 250 lines: the "
                                  "module docstring states the comparison's statistics), the canonical systems, and "
                                  "the orchestration of the draw models, which live one per module in "
                                  "prob/draw_models/",
    "ecjax/_src/calibration.py": "the public API over the table of calibrators (ecjax/_src/calibrators/): the "
                                 "Calibrator, FitSettings, fit, the three protocols with their folds (stratified, "
                                 "grouped), the calibration loss and diagnose; the folds could move to a module of "
                                 "their own",
    "ecjax/_src/inputs.py": "the input layer: every check the library starts from, in one module so that the count of "
                            "raise sites outside it (below) means something",
    "ecjax/_src/plots.py": "one function per figure (reliability, thresholds, ROC, posteriors, sweeps) sharing Frame "
                           "and the axis helpers; a split by figure kind is possible and not yet done",
    "ecjax/_src/prob/bootstrap.py": "the weighted kernels of the built-in metrics (the public kernel mapped over draws "
                                    "where one exists) and the bootstrap's blocks on the chunked-draw runner "
                                    "(ecjax/_src/draw_runner.py)",
    "ecjax/_src/io.py": "every file the library reads or writes (arrays, class names, results tables, cost "
                        "specifications, atomic writes), each with the checks of its contents",
    "ecjax/_src/prob/ranking.py": "the one family of ranked results (issue 32.6) and the ranking statistics they share "
                                  "(ranks, HDI, ROPE, batch-means errors, doubt)",
    "ecjax/_src/sweep/sweeps.py": "the sweep result, its reductions and the point kinds of the three problems (user "
                                  "map, counts, scores)",
    "ecjax/_src/scores/roc.py": "the ranking alone (issue 32.5): rates at every cut, ROC, the binary, one-vs-rest and "
                                "one-vs-one AUCs together, EER and operating points, sharing one sort and its kernels",
    "ecjax/_src/metrics.py": "EC, NEC, utility yield and about twenty classical metrics of counts, each a short "
                             "formula",
    "ecjax/_src/prob/utility_priors.py": "the NumPyro utility-prior models and the UtilityPrior constructors that wrap "
                                         "them, one pair per prior",
    "ecjax/_src/prob/inputs.py": "the prob package's input layer (systems, metric specs, per-fold results)",
}


def oversized_modules(paths, reasons, limit=MAX_MODULE_LINES):
    """``[(path, problem)]``: modules (``{relative path: file}``) over ``limit`` lines with no reason in ``reasons``,
    and reasons for modules that are no longer over it."""
    lines = {rel: len(path.read_text().splitlines()) for rel, path in paths.items()}
    found = [(rel, f"{n} lines, no reason in LARGE_MODULES") for rel, n in lines.items()
             if n > limit and rel not in reasons]
    return found + [(rel, f"{lines[rel]} lines: drop its reason" if rel in lines else "no such module: drop its reason")
                    for rel in reasons if rel not in lines or lines[rel] <= limit]


def test_no_module_over_600_lines_without_a_reason():
    paths = {str(path.relative_to(ROOT.parent)): path for path in _modules().values()}
    assert oversized_modules(paths, LARGE_MODULES) == []


def test_the_size_check_can_fail(tmp_path):
    big, small = tmp_path / "big.py", tmp_path / "small.py"
    big.write_text("x = 1\n" * 4)
    small.write_text("x = 1\n" * 3)
    assert oversized_modules({"big.py": big, "small.py": small}, {}, limit=3) == [
        ("big.py", "4 lines, no reason in LARGE_MODULES")]
    assert oversized_modules({"big.py": big, "small.py": small}, {"big.py": "why", "small.py": "why",
                                                                  "gone.py": "why"}, limit=3) == [
        ("small.py", "3 lines: drop its reason"), ("gone.py", "no such module: drop its reason")]


# ------------------------------------------------------------------ the README's layout is the import graph

README = ROOT.parent / "README.md"


def readme_layout(text):
    """``[entry]`` of the README's layout block, in order: ``"ecjax.x"`` for a module, ``"ecjax.pkg"`` for a
    package (the code block after "## Layout", one ``ecjax/...`` path at the start of a line)."""
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    entries = []
    for line in block.splitlines():
        if line.startswith("ecjax/"):
            path = line.split()[0].rstrip("/")
            entries.append(path.removesuffix(".py").replace("/", "."))
    return entries


def implementation(entry):
    """The module of ``ecjax/_src/`` a README entry ``ecjax.x`` names."""
    return "ecjax._src." + entry.removeprefix("ecjax.")


def layering_violations(entries, imports_of):
    """``[(module, imported, why)]``: imports of a later entry, and modules the layout does not name."""
    position = {entry: i for i, entry in enumerate(entries)}

    def entry_of(module):
        while module not in position and "." in module:
            module = module.rsplit(".", 1)[0]
        return module if module in position else None

    found = []
    for module, imported in imports_of.items():
        here = entry_of(module)
        if here is None:
            found.append((module, "", "not in the README's layout"))
            continue
        for name in imported:
            there = entry_of(name)
            if there is not None and there != here and position[there] > position[here]:
                found.append((module, name, f"{there} is listed after {here}"))
    return found


def ecjax_imports(path, package):
    """The ``ecjax`` modules (or packages) ``path`` imports, at any depth of the file (lazy imports included)."""
    out = set()
    for node in ast.walk(ast.parse(Path(path).read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("ecjax")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing package
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if base.startswith("ecjax"):
                for a in node.names:  # `from ecjax import calibration` imports the module ecjax.calibration
                    out.add(f"{base}.{a.name}" if (ROOT.parent / f"{base}.{a.name}".replace(".", "/")).with_suffix(
                        ".py").exists() or (ROOT.parent / f"{base}.{a.name}".replace(".", "/")).is_dir() else base)
    return out


def _imports_of_every_module():
    out = {}
    for name, path in _modules().items():
        if path.name == "__init__.py":  # a package's __init__ re-exports its own modules (and ecjax's, all)
            continue
        package = name.rsplit(".", 1)[0]
        out[name] = {m for m in ecjax_imports(path, package) if m != "ecjax"}
    return out


def test_the_readme_layout_is_the_import_graph():
    # The README lists the implementation modules by their path under ecjax/_src/ without the _src.
    entries = [implementation(e) for e in readme_layout(README.read_text())]
    assert len(entries) == len(set(entries)) >= 20, entries
    assert layering_violations(entries, _imports_of_every_module()) == []


def test_the_layout_check_can_fail():
    entries = ["ecjax.inputs", "ecjax.metrics", "ecjax.prob"]
    imports = {"ecjax.inputs": set(), "ecjax.metrics": {"ecjax.prob.compare"}, "ecjax.prob.compare": {"ecjax.inputs"},
               "ecjax.extra": set()}
    assert layering_violations(entries, imports) == [
        ("ecjax.metrics", "ecjax.prob.compare", "ecjax.prob is listed after ecjax.metrics"),
        ("ecjax.extra", "", "not in the README's layout")]
    assert readme_layout("## Layout\n\ntext\n\n```\necjax/a.py   x\n    y\necjax/b/    z\n```\n") == ["ecjax.a",
                                                                                                     "ecjax.b"]


def readme_package_orders(text):
    """``{package: [module, ...]}``: the order the README's layout gives inside a package entry, as ``a → b → c``
    (the words beside the arrows, parenthesized remarks left out), for each package entry that has one."""
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    entries, current = {}, None
    for line in block.splitlines():
        if line.startswith("ecjax/"):
            current = line.split()[0]
            entries[current] = line[len(current):]
        elif current is not None:
            entries[current] += " " + line.strip()
    orders = {}
    for path, description in entries.items():
        plain = re.sub(r"\([^()]*\)", "", description)
        if path.endswith("/") and "→" in plain:  # each name stands before an arrow, the last one after it
            orders[path.rstrip("/").replace("/", ".")] = (re.findall(r"(\w+)\s*→", plain)
                                                          + re.findall(r"→\s*(\w+)", plain)[-1:])
    return orders


def package_order_violations(package, order, imports_of):
    """``[(module, imported, why)]``: modules of ``package`` that import a module of it listed later (or the package
    itself), and modules of it the order does not name."""
    position = {f"{package}.{name}": i for i, name in enumerate(order)}
    found = []
    for module, imported in imports_of.items():
        if not module.startswith(package + "."):
            continue
        if module not in position:
            found.append((module, "", f"not in the README's order of {package}"))
            continue
        for name in imported:
            if name == package:
                found.append((module, name, "imports its own package (its __init__ imports every module)"))
            elif name in position and position[name] > position[module]:
                found.append((module, name, f"{name} is listed after {module}"))
    return found


def test_the_readme_order_inside_a_package_is_its_import_graph():
    orders = {implementation(pkg): order for pkg, order in readme_package_orders(README.read_text()).items()}
    assert len(orders["ecjax._src.scores"]) >= 8, orders
    imports = _imports_of_every_module()
    found = {pkg: package_order_violations(pkg, order, imports) for pkg, order in orders.items()}
    assert {pkg: problems for pkg, problems in found.items() if problems} == {}


def test_the_package_order_check_can_fail():
    text = "## Layout\n\n```\necjax/p/    things: a (first, x) → b\n    (second) → c\necjax/q.py   y\n```\n"
    assert readme_package_orders(text) == {"ecjax.p": ["a", "b", "c"]}
    imports = {"ecjax.p.a": {"ecjax.p.b"}, "ecjax.p.b": {"ecjax.p"}, "ecjax.p.c": {"ecjax.p.a"}, "ecjax.p.d": set()}
    assert package_order_violations("ecjax.p", ["a", "b", "c"], imports) == [
        ("ecjax.p.a", "ecjax.p.b", "ecjax.p.b is listed after ecjax.p.a"),
        ("ecjax.p.b", "ecjax.p", "imports its own package (its __init__ imports every module)"),
        ("ecjax.p.d", "", "not in the README's order of ecjax.p")]


def ranked_results_outside_the_family(classes):
    """The public classes among ``classes`` that hold a ``p_best`` (a field, an annotation or a property) without
    deriving from the one base of ranked results, :class:`ecjax.prob.ranking.RankedResult`."""
    from ecjax._src.prob.ranking import RankedResult

    def has_p_best(cls):
        return any("p_best" in vars(k) or "p_best" in getattr(k, "__annotations__", {}) for k in cls.__mro__)

    return sorted(c.__qualname__ for c in classes
                  if not _private(c.__name__) and has_p_best(c) and not issubclass(c, RankedResult))


def test_one_result_base():
    # Every public result with a P(best) shares the base (its centre, draws, HDI, ranks, pairs, ROPE, to_dict,
    # to_frame, to_arviz): a new ranked result that does not is caught here.
    import importlib
    import inspect

    classes = []
    for name in _modules():
        module = importlib.import_module(name)
        classes += [c for _, c in inspect.getmembers(module, inspect.isclass) if c.__module__ == name]
    assert ranked_results_outside_the_family(classes) == []
    assert {"Comparison", "MetricPosterior", "ResultsComparison", "HierarchicalResultsComparison"} <= {
        c.__name__ for c in classes if hasattr(c, "to_dict") and "p_best" in getattr(c, "__dataclass_fields__", {})}


def test_the_result_base_check_can_fail():
    from dataclasses import dataclass

    import numpy as np

    @dataclass(frozen=True)
    class NewRanking:
        p_best: np.ndarray

    assert ranked_results_outside_the_family([NewRanking]) == ["test_the_result_base_check_can_fail.<locals>.NewRanking"]


# ------------------------------------------------------------------ scores: made canonical once

def score_checks(run):
    """How many times ``run()`` checks scores: the calls of :func:`ecjax.inputs.as_scores` on scores that are not
    canonical yet (a :class:`ecjax.inputs.Scores` value passes through unchecked).  Counted by code object, so a
    check imported under another name (``from ecjax.inputs import as_scores``) counts too."""
    import sys

    from ecjax._src import inputs

    code, calls = inputs.as_scores.__code__, []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code and not isinstance(frame.f_locals.get("x"), inputs.Scores):
            calls.append(frame.f_locals.get("name"))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return len(calls)


def score_files(folder, num_samples=60):
    """Two systems' 3-class probabilities, their labels and 0-1 costs written to ``folder``: ``(labels,
    probabilities, argv)`` with ``argv`` the ``ecjax compare`` command line of the files (its options to add)."""
    import numpy as np

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, num_samples)
    probs = [rng.dirichlet(np.ones(3), num_samples) for _ in range(2)]
    np.save(folder / "y.npy", y)
    for name, p in zip("ab", probs):
        np.save(folder / f"{name}.npy", p)
    (folder / "c.toml").write_text("costs = [[0, 1, 1], [1, 0, 1], [1, 1, 0]]\n")
    argv = ["compare", "--labels", str(folder / "y.npy"), "--scores", str(folder / "a.npy"), str(folder / "b.npy"),
            "--score-type", "probabilities", "--costs", str(folder / "c.toml"), "--json"]
    return y, probs, argv


def test_scores_are_checked_once_from_the_command_line_to_the_kernels(tmp_path):
    # Issue 32.1: the command line has the library check each score file once (said of the file) and keeps the
    # canonical value; Systems, compare and bootstrap_metric take it as it is (Systems makes its own canonical once,
    # when first used).  Before: 2 checks per file in
    # `ecjax compare` (the command line's result was thrown away and compare checked again).
    import contextlib
    import io

    import jax

    from ecjax import prob
    from ecjax.cli import main
    from ecjax._src.prob.bootstrap import bootstrap_metric

    y, probs, argv = score_files(tmp_path)
    codes = []
    for rule in ("nominal", "expected_utility"):  # scores decided once by the command line, or by compare
        run = argv + ["--decision-rule", rule, "--draws", "200"]
        with contextlib.redirect_stdout(io.StringIO()):
            assert score_checks(lambda: codes.append(main(run))) == 2, rule
    assert codes == [0, 0]
    # The runs above went through Systems and compare; the bootstrap takes the Systems' canonical scores too.
    systems = []
    assert score_checks(lambda: systems.append(prob.Systems(y, scores=probs, score_type="probabilities"))) == 0
    assert score_checks(lambda: systems[0].canonical) == 2  # checked when first used, once
    assert score_checks(lambda: bootstrap_metric(systems[0], "cross_entropy", key=jax.random.key(0),
                                                 settings=prob.MonteCarloSettings(num_draws=200))) == 0


def test_calibrate_checks_each_score_file_once(tmp_path):
    # Issue 32.1: `ecjax calibrate` has the library check --scores and --train-scores once each (said of the file)
    # and fits, applies and reports on the kept value; the calibrated output, a new array, is made canonical once
    # for the report.  Before (the command line's check thrown away, then the fit, the calibrator and each measure
    # of the report checking again): 7, 4, 8 and 6 checks for the runs below.
    import contextlib
    import io

    import numpy as np

    from ecjax.cli import main

    y, probs, _ = score_files(tmp_path)
    probs[1][0] = [0.0, 0.5, 0.5]  # an exact zero, which the canonical value keeps for the report
    np.save(tmp_path / "b.npy", probs[1])
    f = {name: str(tmp_path / f"{name}.npy") for name in ("a", "b", "y")}
    common = ["calibrate", "--score-type", "probabilities", "--method", "temperature", "--force", "--quiet"]
    runs = {"in sample": (["--scores", f["a"], "--labels", f["y"]], 1 + 1),
            "unlabelled": (["--scores", f["a"], "--train-scores", f["b"], "--train-labels", f["y"]], 2),
            "held out": (["--scores", f["a"], "--labels", f["y"], "--train-scores", f["b"], "--train-labels", f["y"]],
                         2 + 1),
            "cross-validated": (["--scores", f["b"], "--labels", f["y"], "--cv", "3"], 1 + 1)}
    for name, (argv, checks) in runs.items():
        out = tmp_path / f"{name}.npy"
        codes = []
        with contextlib.redirect_stdout(io.StringIO()):
            assert score_checks(lambda: codes.append(main(common + argv + ["--output", str(out)]))) == checks, name
        assert codes == [0], name


# ~4 s of CPU each (compiling): the binary metrics and sweep runs stay in the default lane, the others are slow.
CHECKED_ONCE_RUNS = {"metrics llr": ["metrics", "binary"], "sweep llr": ["sweep", "binary", "--over", "cost-ratio",
                                                                      "--resolution", "11"],
                     "metrics curves": ["metrics", "binary", "--curves"], "metrics 3 classes": ["metrics", "ternary"],
                     "sweep 3 classes": ["sweep", "ternary", "--over", "matrices", "--resolution", "20"]}


@pytest.mark.parametrize("run", [r if r.endswith("llr") else pytest.param(r, marks=pytest.mark.slow)
                                 for r in CHECKED_ONCE_RUNS])
def test_metrics_and_sweep_check_each_score_file_once(tmp_path, run):
    # Issue 32.1: `ecjax metrics` and `ecjax sweep` (without --bootstrap) pass the files' canonical scores to the
    # library, which takes them unchecked.  Before: 14, 3, 24, 12 and 3 checks for the runs above (XE, Brier, ECE, AUC
    # and the Bayes decisions each checked every file again; the sweeps checked the stacked files again).  The
    # binary files are float64 LLRs with a common offset of 1e4 and a float32 copy: AUC and EER rank the float64
    # ones centred before the cast, and the two dtypes stack as one array would.
    import contextlib
    import io
    import json

    import numpy as np
    from sklearn.metrics import roc_auc_score

    from ecjax.cli import main

    _, _, compare = score_files(tmp_path)
    rng = np.random.default_rng(1)
    y2 = rng.integers(0, 2, 60)
    llr = 1e4 + rng.normal(0, 1e-3, 60) + 1e-3 * y2
    np.save(tmp_path / "y2.npy", y2)
    np.save(tmp_path / "l64.npy", llr)
    np.save(tmp_path / "l32.npy", (llr - 1e4).astype(np.float32))
    files = {"ternary": compare[compare.index("--labels"):compare.index("--json")],
             "binary": ["--labels", str(tmp_path / "y2.npy"), "--scores", str(tmp_path / "l64.npy"),
                        str(tmp_path / "l32.npy"), "--score-type", "llr"]}
    command, data, *options = CHECKED_ONCE_RUNS[run]
    codes = []
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert score_checks(lambda: codes.append(main([command, *files[data], *options, "--json", "--quiet"]))) == 2
    assert codes == [0]
    if command == "metrics" and data == "binary":  # the canonical float64 LLRs ranked as the file's
        auc = json.loads(out.getvalue())["metrics"]["AUC"]
        np.testing.assert_allclose([auc["l64"], auc["l32"]], roc_auc_score(y2, llr), rtol=0, atol=1e-6)


def test_the_score_check_count_can_fail():
    import numpy as np

    from ecjax._src import inputs

    s = np.log(np.full((4, 2), 0.5))

    def twice():
        inputs.as_scores(s, score_type="log_posteriors")
        inputs.canonical_scores(s, score_type="log_posteriors")  # checks through as_scores

    assert score_checks(twice) == 2
    canonical = inputs.canonical_scores(s, score_type="log_posteriors")
    assert score_checks(lambda: inputs.as_scores(canonical, score_type="log_posteriors")) == 0


# ------------------------------------------------------------------ the command line: thin commands

CLI = SRC / "cli"
MAX_CLI_MODULE_LINES = 300  # issue 32.2: one module per command that only orchestrates


def long_cli_modules(folder, limit=MAX_CLI_MODULE_LINES):
    """``{module file: lines}`` of the modules of the command-line package ``folder`` longer than ``limit``."""
    return {p.name: n for p in sorted(Path(folder).glob("*.py")) if (n := len(p.read_text().splitlines())) > limit}


def message_surgery(path):
    """``[(line, what)]``: where ``path`` rewrites text with a regular expression (``re.sub``, ``re.subn``) or
    rewrites an exception's message (``.replace`` on ``str(err)``, ``err.problem`` or a name bound by
    ``except ... as err``, or on a parameter named ``message``/``problem``).  A front end says the library's errors
    from their fields (:class:`ecjax.InputError`'s ``argument`` and ``problem``), not by editing their text."""
    tree = ast.parse(Path(path).read_text())
    caught = {h.name for h in ast.walk(tree) if isinstance(h, ast.ExceptHandler) and h.name}
    texts = caught | {"message", "problem", "msg"}

    def is_message(node):
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        attrs = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
        return bool(names & texts) or bool(attrs & {"problem", "args"})

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if isinstance(f.value, ast.Name) and f.value.id == "re" and f.attr in ("sub", "subn"):
                found.append((node.lineno, f"re.{f.attr}"))
            elif f.attr == "replace" and is_message(f.value):
                found.append((node.lineno, f"{ast.unparse(f.value)}.replace"))
    return found


def test_the_command_line_is_a_package_of_thin_modules():
    assert CLI.is_dir() and not (SRC / "cli.py").exists()
    assert long_cli_modules(CLI) == {}


def test_the_command_line_does_not_rewrite_library_messages():
    assert {p.name: found for p in sorted(CLI.glob("*.py")) if (found := message_surgery(p))} == {}
    # Nor does io.said_of, which says the library's errors of a file or an option: from the fields only.
    assert message_surgery(ROOT / "io.py") == []


def test_the_command_line_checks_can_fail(tmp_path):
    # Both rules above must be able to fail: a long module, and the message rewriting the command line once did.
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_CLI_MODULE_LINES + 1))
    (tmp_path / "short.py").write_text("x = 1\n" * MAX_CLI_MODULE_LINES)
    assert long_cli_modules(tmp_path) == {"long.py": MAX_CLI_MODULE_LINES + 1}
    p = tmp_path / "main.py"
    p.write_text("import re\n\n"
                 "def as_options(message):\n"
                 "    message = re.sub(r'score_type=([a-z_]+)', r'--score-type \\1', message)\n"
                 "    return message.replace('`score_type`', '--score-type')\n\n"
                 "def say(f):\n"
                 "    try:\n"
                 "        f()\n"
                 "    except ValueError as err:\n"
                 "        print(str(err).replace('`scores`', '--scores'), err.problem.replace('a', 'b'))\n"
                 "    return 'a-b'.replace('-', '_')\n")
    assert sorted(message_surgery(p)) == [(4, "re.sub"), (5, "message.replace"), (11, "err.problem.replace"),
                                          (11, "str(err).replace")]


# ------------------------------------------------------------------ the public surface: facades over ecjax._src

PUBLIC_ROOT = ROOT  # the public modules: every module of ecjax/ outside ecjax/_src/, the root package aside


def public_modules(root=PUBLIC_ROOT):
    """``{module: file}`` of the public facades under ``root`` (an ``ecjax`` folder): its modules outside ``_src``."""
    out = {}
    for path in sorted(Path(root).rglob("*.py")):
        parts = path.relative_to(Path(root).parent).with_suffix("").parts
        if "_src" in parts or parts == ("ecjax", "__init__") or parts[-1] == "__main__":
            continue
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def facade_problems(path):
    """``[(line, what)]``: what a public module does besides a docstring, imports, ``__all__``, a ``TYPE_CHECKING``
    block of imports and the lazy ``__getattr__``/``__dir__`` that load names on first use.  Everything else
    belongs in ``ecjax/_src/``."""
    tree = ast.parse(Path(path).read_text())
    found = []
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]:
            continue
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING" and not node.orelse and all(
                isinstance(n, (ast.Import, ast.ImportFrom)) for n in node.body):
            continue
        if isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__dir__"):
            continue
        found.append((node.lineno, ast.unparse(node).splitlines()[0]))
    if literal_all_of(tree) is None:
        found.append((0, "no __all__"))
    return found


def literal_all_of(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]:
            return ast.literal_eval(node.value)
    return None


def unresolved_names(module):
    """``[name]`` of ``module.__all__`` that the module cannot give (lazy names included)."""
    return [name for name in module.__all__ if not hasattr(module, name)]


def test_every_public_module_is_a_facade_with_an_all():
    modules = public_modules()
    assert {"ecjax.metrics", "ecjax.prob", "ecjax.scores", "ecjax.cli"} <= set(modules), sorted(modules)
    assert {name: found for name, path in modules.items() if (found := facade_problems(path))} == {}


def test_every_name_of_every_public_all_resolves():
    import importlib

    assert {name: bad for name in public_modules()
            if (bad := unresolved_names(importlib.import_module(name)))} == {}


def test_the_facade_checks_can_fail(tmp_path):
    import types

    pkg = tmp_path / "ecjax"
    (pkg / "_src").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_src" / "impl.py").write_text("def f():\n    return 1\n")
    (pkg / "good.py").write_text('"""Doc."""\n\nfrom ecjax._src.impl import f\n\n__all__ = ["f"]\n')
    (pkg / "bad.py").write_text('"""Doc."""\n\nfrom ecjax._src.impl import f\n\n\ndef g():\n    return f()\n')
    assert set(public_modules(pkg)) == {"ecjax.good", "ecjax.bad"}
    assert facade_problems(pkg / "good.py") == []
    assert facade_problems(pkg / "bad.py") == [(6, "def g():"), (0, "no __all__")]
    fake = types.ModuleType("fake")
    fake.__all__ = ["here", "gone"]
    fake.here = 1
    assert unresolved_names(fake) == ["gone"]


def private_layer_mentions(texts):
    """``[(file, line)]``: where a user-facing text (``{file: text}``) names the private layer ``_src``."""
    return [(name, i) for name, text in texts.items() for i, line in enumerate(text.splitlines(), 1) if "_src" in line]


def user_facing_texts():
    """The README outside its "Layout" section (which lists the implementation modules), the examples and the
    code and text of the notebooks: what users copy from."""
    import json

    readme = README.read_text()
    start = readme.index("## Layout")
    end = readme.index("\n## ", start + 1)
    texts = {"README.md": readme[:start] + readme[end:]}
    for path in sorted((ROOT.parent / "examples").glob("*")):
        if path.is_file():  # not a __pycache__ folder left by a run
            texts[f"examples/{path.name}"] = path.read_text()
    for path in sorted((ROOT.parent / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        texts[f"notebooks/{path.name}"] = "\n".join("".join(c["source"]) for c in cells)
    return texts


def test_users_are_never_shown_the_private_layer():
    texts = user_facing_texts()
    assert len(texts) >= 5 and any(name.startswith("notebooks/") for name in texts)
    assert private_layer_mentions(texts) == []


def test_the_command_runs_as_a_module():
    # The console script's entry point, `ecjax.cli:main`, is public; so are `python -m ecjax.cli` and `python -m ecjax`.
    import subprocess
    import sys

    for module in ("ecjax", "ecjax.cli"):
        proc = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0 and proc.stdout.startswith("ecjax "), (module, proc.stdout, proc.stderr[-2000:])


def unresolved_dotted_names(texts):
    """``[(text, name)]``: the dotted ``ecjax.`` names of ``texts`` that no import and attribute lookup finds (a
    module moved under ``ecjax._src`` or a name left out of its facade's ``__all__``)."""
    import importlib
    import re

    def resolves(name):
        parts = name.split(".")
        for i in range(len(parts), 0, -1):  # the longest importable module, then attributes
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ModuleNotFoundError:
                continue
            for attribute in parts[i:]:
                if not hasattr(obj, attribute):
                    return False
                obj = getattr(obj, attribute)
            return True
        return False

    names = {(text, m.group(1)) for text, body in texts.items()
             for m in re.finditer(r"(?<![\w.])(ecjax(?:\.\w+)+)", body)}
    return sorted((text, name) for text, name in names if not resolves(name))


def test_every_ecjax_name_users_are_shown_resolves():
    assert unresolved_dotted_names(user_facing_texts()) == []


def test_the_name_check_can_fail():
    texts = {"a.md": "`ecjax.metrics.expected_cost` and `ecjax.precision.matmul`, `ecjax.nope`.",
             "b.py": "import ecjax\necjax.prob.compare(x)\necjax.prob.no_such_name\n"}
    assert unresolved_dotted_names(texts) == [("a.md", "ecjax.nope"), ("a.md", "ecjax.precision.matmul"),
                                              ("b.py", "ecjax.prob.no_such_name")]


def docstrings_and_comments(path):
    """One text of a module's docstrings (every string statement: those of the module, its classes, functions and
    attributes) and its comments: where the library cites its own names, for a reader and for Sphinx."""
    import io
    import tokenize

    source = path.read_text()
    strings = [node.value.value for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Expr)
               and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)]
    comments = [token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
                if token.type == tokenize.COMMENT]
    return "\n".join(strings + comments)


def unresolved_citations(paths):
    """``[(file, name)]``: the dotted ``ecjax.`` names of the docstrings and comments of ``paths`` (``{file: path}``)
    that do not resolve.  Only the files where such a name occurs at all are tokenized (parsing all of ``ecjax/``
    takes seconds)."""
    anywhere = {file for file, _ in unresolved_dotted_names({file: path.read_text() for file, path in paths.items()})}
    return unresolved_dotted_names({file: docstrings_and_comments(paths[file]) for file in anywhere})


def test_every_ecjax_name_the_library_cites_resolves():
    # The README's convention (Layout, "Public and private"): a public name where the object is public, else its
    # path under ecjax._src; a path that moved (as every module did under ecjax/_src/) fails here.
    paths = {path.relative_to(ROOT).as_posix(): path for path in sorted(ROOT.rglob("*.py"))}
    assert len(paths) > 100
    assert unresolved_citations(paths) == []


def test_the_citation_check_can_fail(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""From :func:`~ecjax.prob.adaptive_draws.first_draws` (moved), :func:`~ecjax.prob.compare`."""\n'
                      "# ecjax.draw_runner.run_blocks moved too.\n"
                      'NAMES = ("ecjax.exe",)  # not a citation: code is left to the tests of the code\n'
                      "def f():\n"
                      '    """:func:`~ecjax._src.prob.adaptive_draws.first_draws`, :class:`~ecjax.scores.Nope`."""\n')
    assert unresolved_citations({"m.py": module}) == [
        ("m.py", "ecjax.draw_runner.run_blocks"), ("m.py", "ecjax.prob.adaptive_draws.first_draws"),
        ("m.py", "ecjax.scores.Nope")]


def test_the_private_layer_check_can_fail():
    assert private_layer_mentions({"a.py": "import ecjax\nfrom ecjax._src.metrics import x\n",
                                   "b.md": "no mention"}) == [("a.py", 2)]
