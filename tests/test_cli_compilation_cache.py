"""The command line's persistent compilation cache: a second run of the same command loads its compiled programs
instead of compiling them again, the cache can be switched off, and a folder given by the user is used.

Reference: JAX's own monitoring events (``/jax/compilation_cache/cache_hits``), counted in a fresh process.
"""

import os
import subprocess
import sys

import numpy as np

# A fresh process runs the command and prints how many compiled programs it loaded from the persistent cache and
# how many it had to compile (JAX counts every program that asks the cache, and every one found there).
_COUNT_HITS = """
import sys, jax.monitoring
hits, requests = [], []
jax.monitoring.register_event_listener(
    lambda event, **kw: hits.append(event) if event == "/jax/compilation_cache/cache_hits" else None)
jax.monitoring.register_event_listener(
    lambda event, **kw: requests.append(event)
    if event == "/jax/compilation_cache/compile_requests_use_cache" else None)
from ecjax.cli import main
rc = main(sys.argv[1:])
print("HITS", len(hits), "COMPILED", len(requests) - len(hits), file=sys.stderr)
sys.exit(rc)
"""


def _files(tmp_path):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "a.npy", np.where(rng.random(200) < 0.8, y, 1 - y))
    np.save(tmp_path / "b.npy", np.where(rng.random(200) < 0.7, y, 1 - y))
    return ["metrics", "--labels", "y.npy", "--decisions", "a.npy", "b.npy", "--json"]


def _run(args, cwd, **env):
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ECJAX_", "JAX_COMPILATION"))}
    environ.update(env)
    proc = subprocess.run([sys.executable, "-c", _COUNT_HITS, *args], capture_output=True, text=True, cwd=cwd,
                          env=environ, timeout=300)
    assert proc.returncode == 0, proc.stderr
    counts = proc.stderr.split("HITS")[-1].split()
    _run.compiled = int(counts[2])
    return int(counts[0]), proc.stdout


def test_second_run_loads_what_the_first_compiled(tmp_path):
    args = _files(tmp_path)
    cache = tmp_path / "cache"
    hits_first, out_first = _run(args, tmp_path, ECJAX_COMPILATION_CACHE_DIR=str(cache))
    assert any(cache.iterdir())
    compiled_first = _run.compiled
    hits_second, out_second = _run(args, tmp_path, ECJAX_COMPILATION_CACHE_DIR=str(cache))
    assert hits_first == 0 and compiled_first >= 10
    # The second run compiles nothing: every program of the first one, however small, is loaded.
    assert _run.compiled == 0 and hits_second == compiled_first
    assert out_second == out_first  # same numbers from the cached programs


def test_default_folder_and_switching_it_off(tmp_path):
    args = _files(tmp_path)
    home_cache = tmp_path / "xdg"
    _run(args, tmp_path, XDG_CACHE_HOME=str(home_cache), HOME=str(tmp_path))
    assert any((home_cache / "ecjax" / "jax-compilation-cache").iterdir())
    off = tmp_path / "off"
    hits, _ = _run(args, tmp_path, XDG_CACHE_HOME=str(off), HOME=str(tmp_path), ECJAX_NO_COMPILATION_CACHE="1")
    assert hits == 0 and not off.exists()
