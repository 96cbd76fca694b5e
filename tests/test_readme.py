"""The README's Python runs as written and prints what the README says it prints.

The tour is ``examples/api_tour.py`` shown verbatim; the other programs are run from their code blocks.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_script

ROOT = Path(__file__).resolve().parents[1]
# The README's programs and its tour read ../shared/data beside the project, as written for users, whatever
# ECJAX_DATA_DIR says (a GPU run of 2026-11-27 had the data elsewhere, and the tour failed instead of skipping).
README_DATA = ROOT.parent / "shared" / "data"


def _readme_tour():
    """The README's tour: ``(code, printed)``, its python block and the text block of what it prints."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## A five-minute tour of the API", 1)[1].split("\n## ", 1)[0]
    blocks = dict((lang, body) for lang, body in re.findall(r"```(python|text)\n(.*?)```", section, flags=re.S))
    return blocks["python"], blocks["text"]


def _readme_programs():
    """Every python block of the README followed by "It prints:" and a text block (the tour aside)."""
    readme = (ROOT / "README.md").read_text().split("## A five-minute tour of the API", 1)
    rest = readme[0] + readme[1].split("\n## ", 1)[1]
    return re.findall(r"```python\n(.*?)```\s*It prints:\s*```text\n(.*?)```", rest, flags=re.S)


def test_readme_has_programs_with_output():
    assert len(_readme_programs()) >= 1


# ~45 s on two cores: two 20,000-draw comparisons on the real data whose numbers the default lane tests against
# references (test_prob_compare, test_cli); this checks only that the README still prints today's digits.
@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(_readme_programs())))
def test_readme_program_prints_what_the_readme_says(index):
    if not README_DATA.is_dir():
        pytest.skip(f"the README's programs read ../shared/data, absent at {README_DATA}")
    code, printed = _readme_programs()[index]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout == printed


def test_readme_tour_is_the_example_file():
    # The README shows examples/api_tour.py as it is (below its docstring), so the tour runs as written.
    source = (ROOT / "examples" / "api_tour.py").read_text()
    assert _readme_tour()[0] == source.split('"""', 2)[2].lstrip("\n")


def test_tour_prints_what_the_readme_says():
    if not README_DATA.is_dir():
        pytest.skip(f"the tour reads ../shared/data, absent at {README_DATA}")
    # In this process (conftest.run_script): kernels the suite compiled are reused, no interpreter starts (alone,
    # ~37 CPU s either way), and no wall-clock timeout fails it on a loaded machine (120 s ran out at load 16).
    # Monte Carlo digits included: the keys are fixed.
    assert run_script(ROOT / "examples" / "api_tour.py", cwd=ROOT) == _readme_tour()[1]
