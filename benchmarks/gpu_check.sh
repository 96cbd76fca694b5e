#!/usr/bin/env bash
# One command for a lent GPU (issue 34): the default test lane in parallel, the accuracy checks against float64,
# and the benchmarks' GPU rows, in about 6 minutes on an H100 with 16 cores; one report.
#
#   bash benchmarks/gpu_check.sh OUT_DIR          # from the repository root
#   GPU_CHECK_TINY=1 bash benchmarks/gpu_check.sh OUT_DIR   # no test suite, every step at its tiny size:
#                                                           # proves the script itself works (on a busy CPU add
#                                                           # GPU_CHECK_LIMIT_SCALE=4: every time limit x4)
#
# Data: ECJAX_DATA_DIR, else .gpu_data/ (git-ignored) if it exists, else ../shared/data.  Writes OUT_DIR/report.txt
# (device, versions, each step's exit status, time and numbers), one log per step, the tests' durations.log and,
# when a test fails, failures.log (at most 8 files, one folder).
# Every step runs under `timeout`, so one hang costs its own slot only.
set -u
OUT=${1:-gpu_check_out}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export XLA_PYTHON_CLIENT_PREALLOCATE=${XLA_PYTHON_CLIENT_PREALLOCATE:-false}
if [ -z "${ECJAX_DATA_DIR:-}" ] && [ -d "$ROOT/.gpu_data" ]; then export ECJAX_DATA_DIR="$ROOT/.gpu_data"; fi
# The benchmarks run from benchmarks/: a relative data folder is made absolute first.
if [ -n "${ECJAX_DATA_DIR:-}" ]; then export ECJAX_DATA_DIR=$(cd "$ECJAX_DATA_DIR" && pwd); fi
TINY=${GPU_CHECK_TINY:-0}
# A second, shorter run on a device whose time is nearly spent: skip the background --tiny benchmarks and the chunk
# benchmark (GPU_CHECK_SHORT=1), and give the suite GPU_CHECK_PYTEST_LIMIT seconds (default 300: on an H200 with 15
# workers the 1,870 tests of 2026-11-27 were 95 % done at 250 s).
SHORT=${GPU_CHECK_SHORT:-0}
PYTEST_LIMIT=${GPU_CHECK_PYTEST_LIMIT:-300}
PYTEST_WORKERS=${GPU_CHECK_WORKERS:-12}
SCALE=${GPU_CHECK_LIMIT_SCALE:-1}  # multiplies every step's time limit (a loaded CPU machine running the tiny check)
PY=${PYTHON:-python}
command -v "$PY" > /dev/null || PY=python3
REPORT="$OUT/report.txt"
START=$(date +%s)
: > "$REPORT"

say() { echo "$*" | tee -a "$REPORT"; }

# step NAME LOG SECONDS COMMAND...: run under timeout, append "rc, seconds" to the report.
step() {
  local name=$1 log=$2 limit=$(( $3 * SCALE )); shift 3
  local t0=$(date +%s)
  echo "=== $name: $*" >> "$log"
  (cd benchmarks 2>/dev/null && timeout --kill-after=10 "$limit" "$@") >> "$log" 2>&1
  local rc=$?
  say "--- $name: rc $rc in $(( $(date +%s) - t0 )) s (limit $limit s)$([ $rc -eq 124 ] && echo ': TIMED OUT')"
}

say "gpu_check $(date -u +%FT%TZ) tiny=$TINY data=${ECJAX_DATA_DIR:-../shared/data} commit $(git rev-parse --short HEAD 2>/dev/null)"
{
  nvidia-smi -L 2>&1 || echo "no nvidia-smi"
  echo "cores: $(nproc)"
  $PY -c "import jax, numpy, numpyro, optax, sklearn; print('jax', jax.__version__, 'numpy', numpy.__version__,
'numpyro', numpyro.__version__, 'optax', optax.__version__, 'sklearn', sklearn.__version__); print(jax.devices())" 2>&1
  for m in expected_cost psrcal baycomp confidence_intervals hypothesis xdist matplotlib_inline; do
    $PY -c "import $m" 2>/dev/null && echo "has $m" || echo "MISSING $m"
  done
} > "$OUT/env.log" 2>&1
cat "$OUT/env.log" >> "$REPORT"

# Benchmarks whose rows mean little at a short size run at --tiny, in the background while the suite runs:
# they show that every benchmark runs on the device; the timed ones run alone afterwards.
TINY_LOG="$OUT/bench_tiny.log"
(
  [ "$SHORT" = "1" ] && exit 0
  for b in bench_sweep bench_ranking bench_calibration bench_bootstrap_metric bench_rate_draws bench_interactive \
           bench_draws; do
    step "$b --tiny" "$TINY_LOG" 45 "$PY" "$b.py" --tiny
  done
) &
TINY_PID=$!

if [ "$TINY" = "1" ]; then
  say "--- pytest: skipped (GPU_CHECK_TINY=1)"
else
  t0=$(date +%s)
  # -v: each failure is named as it happens, so a run stopped at its time limit still says which tests failed.
  # ECJAX_FAILURE_LOG: tests/conftest.py appends each failure's traceback as it happens (kept if the limit stops pytest).
  # ECJAX_DURATION_LOG: each test phase's seconds as it ends (where the time went, also in a stopped run).
  ECJAX_FAILURE_LOG="$OUT/failures.log" ECJAX_DURATION_LOG="$OUT/durations.log" timeout --kill-after=15 "$PYTEST_LIMIT" $PY -m pytest -n "$PYTEST_WORKERS" --dist worksteal -v -p no:cacheprovider -rf --tb=short \
    -k "not notebook_executes" tests > "$OUT/pytest.log" 2>&1
  rc=$?
  say "--- pytest -n $PYTEST_WORKERS (default lane): rc $rc in $(( $(date +%s) - t0 )) s (limit $PYTEST_LIMIT s)$([ $rc -eq 124 ] && echo ': TIMED OUT')"
  grep -E "(FAILED|ERROR) tests/" "$OUT/pytest.log" | sort -u | tee -a "$REPORT" > /dev/null
  echo "tests passed (as reported): $(grep -cE 'PASSED tests/' "$OUT/pytest.log")" >> "$REPORT"
  [ -s "$OUT/failures.log" ] && { echo "--- failures (failures.log, first 200 lines)"; head -n 200 "$OUT/failures.log"; } >> "$REPORT"
  tail -n 1 "$OUT/pytest.log" >> "$REPORT"
  [ -s "$OUT/durations.log" ] && { echo "--- the 25 longest test phases (durations.log)"; sort -rn "$OUT/durations.log" | head -n 25; } >> "$REPORT"
fi

wait "$TINY_PID"
SIZE=small; [ "$TINY" = "1" ] && SIZE=tiny
step "gpu_accuracy --size $SIZE" "$OUT/accuracy.log" 60 "$PY" gpu_accuracy.py --size "$SIZE"
grep -E "^(ok|FAIL)|checks pass|Error" "$OUT/accuracy.log" >> "$REPORT"
step "bench_core --size $SIZE" "$OUT/bench_timed.log" 60 "$PY" bench_core.py --size "$SIZE" --repeats 3
[ "$SHORT" = "1" ] || step "bench_chunks --size $SIZE" "$OUT/bench_timed.log" 45 "$PY" bench_chunks.py --size "$SIZE"
# Issue 34.3: compare's per-draw decisions against the bare decision kernel (10^4 x 100 on an accelerator).
DRAWS=4000; [ "$TINY" = "1" ] && DRAWS=200
step "bench_draws --ratio --draws $DRAWS" "$OUT/bench_timed.log" 100 "$PY" bench_draws.py --ratio --draws "$DRAWS"
# Where a per-draw draw goes: each step of a block, blocks grouped into one program or one a program, and a
# jax.profiler trace of one compare call summarized (the device's idle gaps and what the host did meanwhile).
PROFILE_ARGS="--draws 1000"; [ "$TINY" = "1" ] && PROFILE_ARGS="--shape 200 5 --draws 128 --block 16"
step "profile_per_draw $PROFILE_ARGS --trace" "$OUT/bench_timed.log" 150 "$PY" profile_per_draw.py $PROFILE_ARGS \
  --trace "${TMPDIR:-/tmp}/ecjax_per_draw_trace"
say "=== timed benchmarks (bench_timed.log)"
cat "$OUT/bench_timed.log" >> "$REPORT"
say "=== tiny benchmarks (bench_tiny.log): the rows and ratio lines"
grep -E "^(===|machine|\|)|ratio|total|Error|Traceback" "$TINY_LOG" >> "$REPORT"
say "gpu_check done in $(( $(date +%s) - START )) s"
