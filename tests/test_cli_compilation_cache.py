"""The command line's persistent compilation cache: a second run of the same command loads its compiled programs
instead of compiling them again, the cache can be switched off, and a folder given by the user is used.

Reference: JAX's own monitoring events (``/jax/compilation_cache/cache_hits``), counted in a fresh process.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

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
    # JAX's own cache class fills the folder as earlier runs would have (a private module: skipped, saying so, if a
    # JAX release moves it).
    LRUCache = pytest.importorskip("jax._src.lru_cache", reason="JAX moved its LRU cache module").LRUCache

    from ecjax._src.cli import compilation_cache_bytes

    # The bounds the README states: 4 MiB on a CPU, 64 MiB on an accelerator.
    assert compilation_cache_bytes("cpu") == 4 * 2**20
    assert compilation_cache_bytes("gpu") == compilation_cache_bytes("tpu") == 64 * 2**20
    bound = compilation_cache_bytes()  # this machine's
    args = _files(tmp_path)
    cache = tmp_path / "cache"
    # A folder that earlier runs filled past the bound, written through JAX's own cache (its entries and their
    # access times): the run evicts the least recently used, so the folder stays within the bound's bytes (and a
    # write's scan within its entries).
    old = LRUCache(str(cache), max_size=2**40)
    for i in range(65):  # few large entries: each write of the filling scans the folder too
        old.put(f"old-{i:05d}", bytes(bound // 64))
    hits_first, out_first = _run(args, tmp_path, ECJAX_COMPILATION_CACHE_DIR=str(cache))
    entries = list(cache.glob("*-cache"))
    assert sum(e.stat().st_size for e in entries) <= bound
    assert not (cache / "old-00000-cache").exists()  # the oldest went first
    assert any(not e.name.startswith("old-") for e in entries)
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


def _score_files(tmp_path, n, tag):
    """Two systems' log-posteriors on ``n`` shared samples, and a cost file with uncertain costs."""
    rng = np.random.default_rng(n)
    y = rng.integers(0, 3, n)
    np.save(tmp_path / f"y{tag}.npy", y)
    for name, noise in (("a", 1.0), ("b", 1.2)):
        s = 2.0 * np.eye(3)[y] + rng.normal(0, noise, (n, 3))
        np.save(tmp_path / f"{name}{tag}.npy", s - np.log(np.exp(s).sum(1, keepdims=True)))
    (tmp_path / "c.toml").write_text("costs = [[0, 1, 2], [1, 0, 1], [4, 1, 0]]\n[uncertainty]\n"
                                     "low = [[0, 0.5, 1], [0.5, 0, 0.5], [2, 0.5, 0]]\n"
                                     "high = [[0, 2, 4], [2, 0, 2], [8, 2, 0]]\n")
    return ["compare", "--labels", f"y{tag}.npy", "--scores", f"a{tag}.npy", f"b{tag}.npy", "--costs", "c.toml",
            "--draws", "2000", "--json"]


@pytest.mark.slow  # ~32 s (two cold CLI runs); the default lane keeps test_second_run_loads_what_the_first_compiled
def test_a_run_on_data_of_a_similar_size_compiles_nothing(tmp_path):
    # The samples reach the compiled programs padded to a power of two (prob.compare.bucket_size): after a run on
    # 1000 samples, a run on 900 (paired, then unpaired) loads every program from the cache.
    cache = str(tmp_path / "cache")
    for extra in ([], ["--unpaired"]):
        hits_big, _ = _run(_score_files(tmp_path, 1000, "big") + extra, tmp_path, ECJAX_COMPILATION_CACHE_DIR=cache)
        programs_big = hits_big + _run.compiled
        hits, out = _run(_score_files(tmp_path, 900, "small") + extra, tmp_path, ECJAX_COMPILATION_CACHE_DIR=cache)
        # The run on 900 samples asks for the same programs as the run on 1000, and finds every one of them.
        assert _run.compiled == 0 and hits == programs_big > 0, (extra, _run.compiled, hits, programs_big)
        assert json.loads(out)["paired"] == (extra == [])


def test_a_cold_comparison_compiles_few_programs(tmp_path):
    # Each compiled program costs about 0.1 s on a cold start and 0.03-0.05 s to load on every later run (two CPU
    # cores): the README's kind of comparison (scores, uncertain costs, unpaired) was 68 programs, now 8. The bound
    # guards that the count stays small; JAX's own monitoring events count them.
    _run(_score_files(tmp_path, 1000, "cold") + ["--unpaired"], tmp_path,
         ECJAX_COMPILATION_CACHE_DIR=str(tmp_path / "cache"))
    assert 0 < _run.compiled <= 8, _run.compiled
