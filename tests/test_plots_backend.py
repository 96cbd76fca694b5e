"""ecjax.plots never changes the user's matplotlib backend, and works headless without being told to.

Each case runs in a fresh interpreter: the backend is process-wide state that this test process has already set.
"""

import os
import subprocess
import sys
import textwrap

import pytest

DRAW = """
import numpy as np
from ecjax import plots
t = np.linspace(-3, 3, 20)
plots.bayes_risk_curves(t, t**2 / 9 + 0.3, t**2 / 9 + 0.1)
plots.reliability_diagram(([0.2, 0.7], [0.3, 0.6], [10, 20]))
plots.roc_with_iso_utility(np.linspace(0, 1, 5), np.linspace(0, 1, 5) ** 0.5, utilities=[[0, -1], [-2, 0]],
                           priors=[0.5, 0.5])
"""


def _run(*chunks, env):
    code = "\n".join(textwrap.dedent(c) for c in chunks)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _env_without_display():
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "DISPLAY", "WAYLAND_DISPLAY")}
    env["JAX_PLATFORMS"] = "cpu"
    return env


def test_plots_keep_jupyters_inline_backend():
    # The backend Jupyter's kernel selects; the figures must reach it, not an Agg canvas that shows nothing.
    # Skipped only where Jupyter is not installed (the test extra installs it; the H100 image of 2026-11-27 had no
    # IPython, which matplotlib_inline imports): there is no inline backend to keep.
    pytest.importorskip("matplotlib_inline.backend_inline", reason="no Jupyter (IPython) in this environment")
    out = _run("""
        import matplotlib
        matplotlib.use("module://matplotlib_inline.backend_inline")
        """, DRAW, """
        import matplotlib.pyplot as plt
        print(matplotlib.get_backend(), len(plt.get_fignums()))
        """, env=_env_without_display())
    assert out.split() == ["module://matplotlib_inline.backend_inline", "3"]


def test_plots_save_headless_with_no_backend_configured(tmp_path):
    out = _run("import matplotlib", DRAW, f"""
        fig = plots.winner_map(np.linspace(-1, 1, 5), np.linspace(-1, 1, 5), np.zeros((5, 5), int),
                               frame=plots.Frame(path={str(tmp_path / "w.png")!r}))
        print(matplotlib.get_backend().lower())
        """, env=_env_without_display())
    assert out.strip() == "agg"  # pyplot's own fallback without a display
    assert (tmp_path / "w.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
