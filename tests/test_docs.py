"""The documentation's promises: docstring examples run, and the papers are cited by author and year.

The examples (``>>>``) of every module run as doctests here, in the default suite: a docstring example that no
longer runs, or prints something else, fails CI.  The three modules whose examples compile large programs (4-7 s
each) are marked slow; ``.ci/run`` runs them too (``-m slow`` on this file), after the documentation build.
"""

from __future__ import annotations

import doctest
import importlib
import pathlib
import pkgutil
import re

import pytest

import ecjax

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ecjax"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
# Modules whose examples compile large programs (the Monte Carlo comparison, the bootstrap, the 10^5-pair
# reliability study): 4-7 s each on two cores.
SLOW_DOCTESTS = {"ecjax._src.prob.bootstrap", "ecjax.prob.compare", "ecjax._src.sweep.reliability"}


def _modules_with_examples() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(ecjax.__path__, "ecjax."):
        path = PACKAGE.joinpath(*info.name.split(".")[1:])
        source = path / "__init__.py" if info.ispkg else path.with_suffix(".py")
        if ">>>" in source.read_text(encoding="utf-8"):
            names.append(info.name)
    return sorted(names)


MODULES = _modules_with_examples()


def test_the_package_has_docstring_examples() -> None:
    # The discovery above must see the examples the docstrings carry (a broken walk would pass every test below).
    assert {"ecjax._src.metrics", "ecjax._src.calibration", "ecjax._src.sklearn"} <= set(MODULES)


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.slow(reason="compiles a large program")) if n in SLOW_DOCTESTS else n
    for n in MODULES])
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    attempted = 0
    for test in finder.find(module, name):
        if test.lineno is None or not test.filename or pathlib.Path(test.filename).resolve() != \
                pathlib.Path(module.__file__ or "").resolve():
            continue  # examples of objects imported from other modules run with those modules
        result = runner.run(test, out=report.append)
        attempted += result.attempted
    assert attempted > 0, f"{name}: no example found although its source has one"
    assert runner.failures == 0, "".join(report)


# ----------------------------------------------------------------------------------------------- citations

SEED_NUMBER = re.compile(r"\bseeds?\s+(?:#\s*)?00\d", re.IGNORECASE)  # also across a line break
# "Ferrer (2022b)", "(Ferrer 2022b, eq. 60)", "Dyrland et al. (2022)", "De Diego et al. 2022".
CITATION = re.compile(r"\b(Ferrer|Dyrland et al\.|De Diego et al\.) \(?(\d{4}[a-z]?)\b")


def _package_sources() -> list[pathlib.Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _references_section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme[readme.index("\n## References\n"):]


def test_docstrings_cite_papers_by_author_and_year_not_by_seed_number() -> None:
    offenders = [f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}: {match.group(0)!r}"
                 for path in _package_sources() + [ROOT / "README.md"]
                 for text in [path.read_text(encoding="utf-8")]
                 for match in SEED_NUMBER.finditer(text)]
    assert not offenders, "cite the paper by author and year (README, References):\n" + "\n".join(offenders)


def test_every_cited_paper_is_in_the_references() -> None:
    references = _references_section()
    listed = {f"{author} ({year})" for author, year in re.findall(r"\*\*(.+?) \((\d{4}[a-z]?)\)\*\*", references)}
    assert len(listed) == 5, listed
    cited = {f"{author} ({year})"
             for path in _package_sources() + [ROOT / "README.md"]
             for author, year in CITATION.findall(path.read_text(encoding="utf-8"))}
    assert cited, "no author-year citation found: the pattern no longer matches the docstrings"
    assert cited <= listed, f"cited but not in the README's References: {sorted(cited - listed)}"
    # Every reference names where to read it: an arXiv, DOI or OpenReview address.
    for entry in re.split(r"\n- ", references)[1:]:
        assert re.search(r"arxiv\.org/abs/|doi\.org/|openreview\.net/", entry), entry


# ----------------------------------------------------------------------------------------------- the site


def test_the_documentation_pages_find_the_readme_sections_they_include() -> None:
    # docs/*.md take the README's sections by their headings (MyST {include} with :start-after: / :end-before:);
    # a renamed heading fails the Sphinx build of .ci/run: this says so in the default suite, and which one.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    markers = [(page.name, text) for page in sorted((ROOT / "docs").glob("*.md"))
               for text in re.findall(r'^:(?:start-after|end-before): "(.+)"$', page.read_text(encoding="utf-8"),
                                      flags=re.MULTILINE)]
    assert len(markers) >= 10, markers
    missing = [(page, text) for page, text in markers if text not in readme]
    assert not missing, f"README headings the documentation includes by name are gone: {missing}"
