#!/usr/bin/env bash
# fusor's GPU suite, for a machine with a CUDA GPU and the CUDA toolkit.
#
#   bench/gpu_suite.sh OUTDIR
#
# 1. configures a Release build for this machine's GPU
#    (-DCMAKE_CUDA_ARCHITECTURES=native) in OUTDIR/build and builds, with all
#    cores, what the GPU steps run: the executables of the tests labeled
#    `cuda`, bench/bench_gpu_* and examples/fusor_demo (the whole tree with
#    FUSOR_SUITE_BUILD_ALL=1; host-only targets are not needed here and
#    building all of them can take minutes);
#    (with -DFUSOR_BUILD_GPU_FUZZER=ON, so tests/fuzz/fuzz_gpu is one of them);
# 2. runs `ctest -L cuda --output-on-failure` except fuzz.gpu (step 2b)
#                                                     -> OUTDIR/ctest_cuda.log
# 2b. runs the GPU fuzzer in its CI mode (fuzz_gpu: cuda() vs host() on the
#    host fuzzers' fixed-seed draws; ctest's fuzz.gpu) -> OUTDIR/fuzz_gpu.log
# 3. runs compute-sanitizer (memcheck), if installed, on tests/cuda/test_cuda
#                                                     -> OUTDIR/compute_sanitizer.log
# 4. runs every GPU benchmark (bench/bench_gpu_*)     -> OUTDIR/<name>.json (+ .log)
# 5. runs examples/fusor_demo --backend cuda --json, if that target exists
#                                                     -> OUTDIR/fusor_demo.json
# and prints a summary (also OUTDIR/summary.txt). Every step runs even when
# an earlier one failed (as far as its inputs exist); the exit status is 1 if
# any step failed, 0 otherwise.
#
# Designed to finish within 8 minutes on one H200: every step runs under
# `timeout`, capped by what is left of a total budget.
#
# Environment (optional):
#   FUSOR_SUITE_BUDGET_S    total seconds (default 480)
#   FUSOR_SUITE_JOBS        build parallelism (default: nproc)
#   FUSOR_SUITE_CUDA_ARCHS  CMAKE_CUDA_ARCHITECTURES (default native; e.g. 90
#                           to dry-run the build on a machine without a GPU)
#   FUSOR_SUITE_CMAKE_ARGS  extra configure arguments (word-split)
#   FUSOR_SUITE_SRC         source tree (default: this script's repository)
#   FUSOR_SUITE_BUILD_ALL   1: build every target, not only the GPU ones
set -euo pipefail

if [[ $# -ne 1 || "$1" == -h || "$1" == --help ]]; then
  sed -n '2,/^set -euo pipefail/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -eq 1 ]] && exit 0 || exit 2
fi

SRC="${FUSOR_SUITE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
mkdir -p "$1"
OUT="$(cd "$1" && pwd)"
BUILD="$OUT/build"
BUDGET="${FUSOR_SUITE_BUDGET_S:-480}"
JOBS="${FUSOR_SUITE_JOBS:-$(nproc 2>/dev/null || echo 4)}"
ARCHS="${FUSOR_SUITE_CUDA_ARCHS:-native}"
read -r -a EXTRA_ARGS <<<"${FUSOR_SUITE_CMAKE_ARGS:-}"
START=$SECONDS

declare -a SUMMARY=()
FAILED=0

note() { printf '[gpu_suite %4ds] %s\n' "$((SECONDS - START))" "$*"; }

# remaining_s CAP: seconds left in the budget, at most CAP (at least 1)
remaining_s() {
  local left=$((BUDGET - (SECONDS - START)))
  ((left > $1)) && left=$1
  ((left < 1)) && left=1
  echo "$left"
}

record() {  # record STATUS NAME DETAIL
  SUMMARY+=("$(printf '%-8s %-34s %s' "$1" "$2" "$3")")
  [[ "$1" == FAILED ]] && FAILED=1
  return 0
}

# run_timed NAME CAP_S LOG CMD...: runs CMD under timeout, stdout and stderr
# to LOG; sets RC (exit status; 124/137: timed out), DT (seconds), LIMIT.
run_timed() {
  local name=$1 cap=$2 log=$3
  shift 3
  LIMIT=$(remaining_s "$cap")
  note "$name (limit ${LIMIT}s) -> ${log#"$OUT"/}"
  local t0=$SECONDS
  RC=0
  timeout --kill-after=10 "$LIMIT" "$@" >"$log" 2>&1 || RC=$?
  DT=$((SECONDS - t0))
}

# outcome NAME LOG: records ok / FAILED from RC, DT, LIMIT of run_timed.
outcome() {
  if ((RC == 0)); then
    record ok "$1" "${DT}s"
  elif ((RC == 124 || RC == 137)); then
    record FAILED "$1" "timed out after ${LIMIT}s (log: ${2#"$OUT"/})"
  else
    record FAILED "$1" "exit $RC after ${DT}s (log: ${2#"$OUT"/})"
  fi
}

# step NAME CAP_S LOG CMD...: run_timed + outcome; returns CMD's status.
step() {
  run_timed "$@"
  outcome "$1" "$3"
  return "$RC"
}

have_target() {  # have_target NAME: the configured build defines target NAME
  [[ -f "$BUILD/CMakeCache.txt" ]] || return 1
  # (not piped into grep -q: with pipefail, grep's early exit would fail the pipe)
  local targets
  targets="$(cmake --build "$BUILD" --target help 2>/dev/null || true)"
  # Makefiles list "... NAME", Ninja "NAME: phony"
  grep -Eq "^(\.\.\. $1( |\$)|$1: )" <<<"$targets"
}

# --- 0. machine -----------------------------------------------------------
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "source: $SRC ($(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'))"
  echo "host: $(uname -srm), $(nproc) cores"
  echo "--- nvidia-smi"; nvidia-smi 2>&1 || true
  echo "--- nvcc"; nvcc --version 2>&1 || "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" --version 2>&1 || true
  echo "--- cmake"; cmake --version 2>&1 | head -1 || true
} >"$OUT/machine.txt" 2>&1
if nvidia-smi -L >/dev/null 2>&1; then
  record ok "gpu present" "$(nvidia-smi -L 2>/dev/null | head -1)"
else
  record FAILED "gpu present" "nvidia-smi finds no GPU: CUDA steps will skip or fail"
fi

# --- 1. configure + build ---------------------------------------------------
configured=0
if step "configure" 90 "$OUT/configure.log" \
  cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=$ARCHS" \
  -DFUSOR_ENABLE_CUDA=ON -DFUSOR_BUILD_TESTS=ON -DFUSOR_BUILD_BENCH=ON -DFUSOR_BUILD_GPU_FUZZER=ON ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}; then
  configured=1
  grep -q "^CMAKE_CUDA_COMPILER:.*nvcc" "$BUILD/CMakeCache.txt" ||
    record FAILED "nvcc found by CMake" "no CUDA compiler in $BUILD/CMakeCache.txt: no CUDA targets"
fi

# gpu_targets: the targets behind the tests labeled cuda (read from the
# generated CTestTestfile.cmake files: `ctest --show-only` omits commands whose
# executable is not built yet), fuzz_gpu (its tests run it through a wrapper
# that skips when it was not built), every bench_gpu_* target and fusor_demo;
# one per line, only names the build really defines.
gpu_targets() {
  local targets
  targets="$(cmake --build "$BUILD" --target help 2>/dev/null || true)"
  {
    python3 - "$BUILD" <<'EOF' || true
import os, re, sys
build = os.path.realpath(sys.argv[1])
add = re.compile(r'^add_test\(\[=\[(.*?)\]=\] "([^"]*)"', re.M)
props = re.compile(r'^set_tests_properties\(\[=\[(.*?)\]=\] PROPERTIES (.*)\)$', re.M)
for root, _, files in os.walk(build):
    if "CTestTestfile.cmake" not in files:
        continue
    text = open(os.path.join(root, "CTestTestfile.cmake")).read()
    exe = {m.group(1): m.group(2) for m in add.finditer(text)}
    for m in props.finditer(text):
        labels = re.search(r'LABELS "([^"]*)"', m.group(2))
        path = exe.get(m.group(1), "")
        if labels and "cuda" in labels.group(1).split(";") and os.path.realpath(path).startswith(build + os.sep):
            print(os.path.basename(path))
EOF
    sed -nE 's/^(\.\.\. )?(bench_gpu_[A-Za-z0-9_]+)(: .*| .*)?$/\2/p' <<<"$targets"
    echo fuzz_gpu
    echo fusor_demo
  } | sort -u | while read -r t; do
    if grep -Eq "^(\.\.\. $t( |\$)|$t: )" <<<"$targets"; then echo "$t"; fi
  done
  return 0
}

if ((configured)); then
  if [[ "${FUSOR_SUITE_BUILD_ALL:-0}" == 1 ]] || ! command -v python3 >/dev/null; then
    step "build (all, -j$JOBS)" 360 "$OUT/build.log" cmake --build "$BUILD" -j "$JOBS" || true
  else
    mapfile -t TARGETS < <(gpu_targets)
    if ((${#TARGETS[@]} == 0)); then
      record FAILED "build" "no GPU targets found (tests labeled cuda, bench_gpu_*, fusor_demo)"
    elif ! step "build ${TARGETS[*]} (-j$JOBS)" 360 "$OUT/build.log" \
      cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}"; then
      # one by one, so that one broken target does not hide the others' results
      for t in "${TARGETS[@]}"; do
        step "build $t" 120 "$OUT/build_$t.log" cmake --build "$BUILD" -j "$JOBS" --target "$t" || true
      done
    fi
  fi
else
  record skipped "build" "configure failed"
fi

# --- 2. ctest -L cuda -------------------------------------------------------
if ((configured)); then
  run_timed "ctest -L cuda" 120 "$OUT/ctest_cuda.log" \
    ctest --test-dir "$BUILD" -L cuda -E '^fuzz\.gpu$' --output-on-failure --no-tests=error --timeout 100
  if ((RC == 0)) && grep -q "(Skipped)" "$OUT/ctest_cuda.log"; then
    # CUDA tests skip themselves without a device: here that is a failure
    record FAILED "ctest -L cuda" "passed, but skipped: $(grep -c '(Skipped)' "$OUT/ctest_cuda.log") test(s) (no device?)"
  else
    outcome "ctest -L cuda" "$OUT/ctest_cuda.log"
  fi
else
  record skipped "ctest -L cuda" "configure failed"
fi

# --- 2b. the GPU fuzzer (CI mode: fixed seeds) ----------------------------------
FUZZ_GPU="$BUILD/tests/fuzz/fuzz_gpu"
if [[ ! -x "$FUZZ_GPU" ]]; then
  if ((configured)) && have_target fuzz_gpu; then
    record FAILED "fuzz_gpu" "tests/fuzz/fuzz_gpu was not built"
  else
    record skipped "fuzz_gpu" "no fuzz_gpu target (CUDA not enabled?)"
  fi
else
  run_timed "fuzz_gpu (CI mode)" 150 "$OUT/fuzz_gpu.log" "$FUZZ_GPU"
  if ((RC == 77)); then  # fuzz_gpu's "no CUDA device" exit: a skip
    record FAILED "fuzz_gpu" "found no CUDA device (exit 77)"
  else
    outcome "fuzz_gpu" "$OUT/fuzz_gpu.log"
  fi
fi

# --- 3. compute-sanitizer on the CUDA test binary ----------------------------
SANITIZER="$(command -v compute-sanitizer 2>/dev/null || true)"
for c in "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" \
  "${CUDA_HOME:-/usr/local/cuda}/compute-sanitizer/compute-sanitizer"; do
  [[ -z "$SANITIZER" && -x "$c" ]] && SANITIZER="$c"
done
TEST_CUDA="$BUILD/tests/cuda/test_cuda"
if [[ -z "$SANITIZER" ]]; then
  record skipped "compute-sanitizer" "not installed"
elif [[ ! -x "$TEST_CUDA" ]]; then
  record FAILED "compute-sanitizer" "tests/cuda/test_cuda was not built"
else
  run_timed "compute-sanitizer memcheck" 150 "$OUT/compute_sanitizer.log" \
    "$SANITIZER" --tool memcheck --error-exitcode 99 --leak-check full "$TEST_CUDA"
  if ((RC == 77)); then  # test_cuda's "no CUDA device" exit: a skip
    record FAILED "compute-sanitizer memcheck" "test_cuda found no CUDA device (exit 77)"
  else
    outcome "compute-sanitizer memcheck" "$OUT/compute_sanitizer.log"
  fi
fi

# --- 4. GPU benchmarks ------------------------------------------------------
# validate_json FILE: every line is a JSON object; none says "skipped" and
# none has "pass": false (a GPU suite that skips has measured nothing).
validate_json() {
  python3 - "$1" <<'EOF'
import json, sys
bad = []
lines = [l for l in open(sys.argv[1]) if l.strip()]
if not lines:
    bad.append("no output")
for n, line in enumerate(lines, 1):
    try:
        o = json.loads(line)
    except ValueError as e:
        bad.append(f"line {n}: not JSON ({e})")
        continue
    if not isinstance(o, dict):
        bad.append(f"line {n}: not an object")
    elif "skipped" in o:
        bad.append(f"line {n}: skipped: {o['skipped']}")
    elif o.get("pass") is False:
        bad.append(f"line {n}: check failed: {line.strip()}")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
EOF
}

shopt -s nullglob
benches=("$BUILD"/bench/bench_gpu_*)
shopt -u nullglob
if ((${#benches[@]} == 0)); then
  record FAILED "gpu benchmarks" "none built (expected $BUILD/bench/bench_gpu_*)"
fi
for exe in "${benches[@]}"; do
  [[ -x "$exe" && -f "$exe" ]] || continue
  name="$(basename "$exe")"
  LIMIT=$(remaining_s 90)
  note "$name (limit ${LIMIT}s) -> $name.json"
  t0=$SECONDS
  RC=0
  timeout --kill-after=10 "$LIMIT" "$exe" >"$OUT/$name.json" 2>"$OUT/$name.log" || RC=$?
  DT=$((SECONDS - t0))
  if ((RC != 0)); then
    outcome "$name" "$OUT/$name.log"
  elif ! command -v python3 >/dev/null; then
    record ok "$name" "${DT}s (JSON not validated: no python3)"
  elif problems="$(validate_json "$OUT/$name.json")"; then
    record ok "$name" "${DT}s"
  else
    record FAILED "$name" "$(echo "$problems" | head -1)"
  fi
done

# --- 5. demo ------------------------------------------------------------------
DEMO="$BUILD/examples/fusor_demo"
if [[ -x "$DEMO" ]]; then
  LIMIT=$(remaining_s 60)
  note "fusor_demo --backend cuda --json (limit ${LIMIT}s) -> fusor_demo.json"
  t0=$SECONDS
  RC=0
  timeout --kill-after=10 "$LIMIT" "$DEMO" --backend cuda --json >"$OUT/fusor_demo.json" 2>"$OUT/fusor_demo.log" || RC=$?
  DT=$((SECONDS - t0))
  outcome "fusor_demo --backend cuda" "$OUT/fusor_demo.log"
elif ((configured)) && have_target fusor_demo; then
  record FAILED "fusor_demo --backend cuda" "target exists but was not built"
else
  record skipped "fusor_demo --backend cuda" "no fusor_demo target in this tree yet"
fi

# --- summary --------------------------------------------------------------------
{
  echo "fusor GPU suite: $OUT ($((SECONDS - START))s of a ${BUDGET}s budget)"
  printf '%s\n' "${SUMMARY[@]}"
  if ((FAILED)); then echo "RESULT: FAILED"; else echo "RESULT: ok"; fi
} | tee "$OUT/summary.txt"
exit "$FAILED"
