"""`ecjax demo` (``ecjax.demo``): every section printed, the Bayes system's EC against numpy, and the command.

The report table the demo prints is tested in ``test_report.py``."""

import re
import subprocess
import sys

import numpy as np

from ecjax._src import demo


def _run_demo() -> str:
    import io

    buf = io.StringIO()
    demo.run(buf)
    return buf.getvalue()


def test_demo_prints_every_section_and_flags():
    out = _run_demo()
    for title in ("1a. A factory", "1b. The same classifiers", "2. Screening"):
        assert title in out
    assert "always deciding 1 beats them all" in out
    # The Bayes system's EC, recomputed in numpy: treat iff 20 P(sick|x) > P(healthy|x), i.e. P(sick|x) > 1/21.
    import jax

    labels, log_post = demo.screening_problem(jax.random.key(0))
    labels = np.asarray(labels)
    p_sick = np.exp(np.asarray(log_post[0], np.float64)[:, 1])
    treat = p_sick > 1 / 21
    ec = (np.sum(~treat & (labels == 1)) * 20 + np.sum(treat & (labels == 0))) / len(labels)
    line = next(l for l in out.splitlines() if l.startswith("bayes-calibrated"))
    printed_ec = float(re.findall(r"[-\d.]+", line.split()[2])[0])
    assert abs(printed_ec - ec) <= 5e-4 * ec


def test_demo_command_runs_in_a_subprocess():
    proc = subprocess.run([sys.executable, "-m", "ecjax.cli", "demo"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "utility_yield" in proc.stdout
