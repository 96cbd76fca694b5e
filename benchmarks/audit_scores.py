"""How often scores are validated and how far ``score_type`` travels (issue 32.1), measured by running the code.

    python benchmarks/audit_scores.py

Three measures:

* **validations per score array**: the calls of :func:`~ecjax._src.inputs.as_scores` (the score check) while one
  ``ecjax compare``, ``ecjax metrics`` or ``ecjax sweep`` run of two score files, one :class:`ecjax.prob.Systems`
  of two systems made and compared
  (:func:`ecjax.prob.compare`) or bootstrapped (:func:`~ecjax.prob.bootstrap_metric`), divided by the
  number of arrays (2; 3 for ``ecjax calibrate`` of a held-out file with labels: the two score files and the
  calibrated scores its report measures); a :class:`ecjax.inputs.Scores` value passed through unchecked is not a check;
* **hops of score_type**: the longest chain of nested calls each holding a ``score_type`` argument, from the
  command line (or the public function) down to the kernel;
* **branch sites**: the lines of ``ecjax/`` that compare ``score_type`` (``==``, ``!=``, ``in``, ``not in``), and
  the files they lie in.

Calls are counted by code object (``sys.setprofile``), so a check imported under another name counts too.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

import jax

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ecjax import prob
from ecjax._src import inputs  # noqa: E402
from ecjax.cli import main  # noqa: E402
from ecjax._src.prob.bootstrap import bootstrap_metric  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from test_architecture import score_files  # noqa: E402


class CallAudit:
    """Counts the calls of ``watched`` and the longest chain of nested frames that hold a ``score_type`` local."""

    def __init__(self, watched):
        self.code = watched.__code__
        self.calls = 0
        self.depth = {}
        self.hops = 0
        self.chain = ()

    def __call__(self, frame, event, arg):
        if event == "return":  # a finished frame's id may be reused by the next one
            self.depth.pop(id(frame), None)
        if event != "call":
            return
        if frame.f_code is self.code and not isinstance(frame.f_locals.get("x"), inputs.Scores):
            self.calls += 1  # a check run (a Scores value, canonical already, is passed through unchecked)
        if "score_type" in frame.f_code.co_varnames[:frame.f_code.co_argcount + frame.f_code.co_kwonlyargcount]:
            parent = frame.f_back
            while parent is not None and id(parent) not in self.depth:
                parent = parent.f_back
            chain = (self.depth[id(parent)] if parent is not None else ()) + (frame.f_code.co_qualname,)
            self.depth[id(frame)] = chain
            if len(chain) > self.hops:
                self.hops, self.chain = len(chain), chain

    @contextlib.contextmanager
    def running(self):
        sys.setprofile(self)
        try:
            yield self
        finally:
            sys.setprofile(None)


def measure() -> dict[str, tuple[float, int]]:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        y, probs, argv = score_files(d, 300)  # the architecture test's files
        for rule in ("nominal", "expected_utility"):
            with CallAudit(inputs.as_scores).running() as audit, contextlib.redirect_stdout(io.StringIO()):
                assert main(argv + ["--draws", "200", "--decision-rule", rule]) == 0
            out[f"ecjax compare ({rule})"] = (audit.calls / 2, audit.hops)
            print(f"longest score_type chain of `ecjax compare --decision-rule {rule}`:", " -> ".join(audit.chain))
        given = argv[argv.index("--labels"):argv.index("--json")]  # the two files, their labels and costs
        for what, run in {"ecjax metrics": ["metrics", *given, "--json"],
                          "ecjax sweep (matrices)": ["sweep", *given, "--over", "matrices", "--json"]}.items():
            with CallAudit(inputs.as_scores).running() as audit, contextlib.redirect_stdout(io.StringIO()):
                assert main(run + ["--quiet"]) == 0
            out[what] = (audit.calls / 2, audit.hops)
        files = [str(d / f"{name}.npy") for name in ("a", "y", "b", "y")]
        calibrate = ["calibrate", "--score-type", "probabilities", "--method", "temperature", "--quiet", "--output",
                     str(d / "calibrated.npy"), *[x for pair in zip(("--scores", "--labels", "--train-scores",
                                                                      "--train-labels"), files) for x in pair]]
        with CallAudit(inputs.as_scores).running() as audit, contextlib.redirect_stdout(io.StringIO()):
            assert main(calibrate) == 0
        out["ecjax calibrate (held out)"] = (audit.calls / 3, audit.hops)  # two files and the calibrated output
        with CallAudit(inputs.as_scores).running() as audit:
            systems = prob.Systems(y, scores=probs, score_type="probabilities")
            prob.compare(systems, costs=1 - np.eye(3), key=jax.random.key(0),
                         settings=prob.MonteCarloSettings(num_draws=200))
        out["Systems + prob.compare"] = (audit.calls / 2, audit.hops)
        with CallAudit(inputs.as_scores).running() as audit:
            systems = prob.Systems(y, scores=probs, score_type="probabilities")
            bootstrap_metric(systems, "cross_entropy", key=jax.random.key(0),
                             settings=prob.MonteCarloSettings(num_draws=200))
        out["Systems + bootstrap"] = (audit.calls / 2, audit.hops)
    return out


def branch_sites() -> tuple[int, int]:
    pattern = re.compile(r"score_type\s*(==|!=|not in|in)\s")
    per_file = {p: sum(1 for line in p.read_text().splitlines() if pattern.search(line))
                for p in (ROOT / "ecjax").rglob("*.py")}
    return sum(per_file.values()), sum(1 for n in per_file.values() if n)


if __name__ == "__main__":
    for what, (calls, hops) in measure().items():
        print(f"{what:32s} score validations per array: {calls:g}   hops of score_type: {hops}")
    sites, files = branch_sites()
    print(f"score_type branch sites in ecjax/: {sites} in {files} files")
