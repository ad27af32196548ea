#!/usr/bin/env bash
# fusor's GPU check: runs a bundle made by tools/gpu_bundle.sh on a machine
# with one GPU, in at most 8 minutes of wall time, and writes at most 8 files.
#
#   bench/gpu_suite.sh [--dry-run] BUNDLE OUTDIR
#
# Steps, in this order, each under `timeout` with its own budget (the table
# below), none started past the deadline, so a slow step cannot starve the
# next and the whole run ends within TOTAL_S + a few seconds:
#   bundle     manifest.json vs the files (sizes, sha256): the copy is complete;
#              the gzip-compressed binaries unpacked to a temporary folder and
#              checked against the sha256 of the binaries built
#   probe      every binary starts (its libraries resolve, --help runs)
#   rebuild    only for binaries that did not start: configure src.tar.gz
#              (with its deps/ prefix) and build just those targets
#   facts      nvidia-smi -q and bench_gpu_ceilings: device facts, measured
#              device-to-device copy bandwidth, cuBLASLt bf16/f16 GEMM TFLOP/s;
#              GPU clocks are logged (nvidia-smi, every 0.5 s) from here to
#              the end of the benchmarks
#   benchmarks bench_gpu_elementwise, _reduction, _contraction (cuBLASLt
#              epilogue, cuBLASLt + separate GELU, cuDNN), _attention, each
#              with --budget-s below its timeout; then peers: PyTorch eager,
#              torch.compile and scaled_dot_product_attention's flash / cuDNN /
#              efficient backends (bench/peers/torch_baselines.py)
#   tests      test_cuda, fusor_demo --backend cuda (its ctest check script),
#              fuzz.gpu_can_fail (a perturbed GPU result must be reported)
#   fuzz       fuzz_gpu's CI mode (fixed seeds), then random draws for a fixed time
#   memcheck   compute-sanitizer memcheck on a subset of test_cuda
#   racecheck  compute-sanitizer racecheck on a subset of test_cuda
#   ncu        Nsight Compute, --clock-control none, the first kernel of each
#              family (elementwise, rows, gemm, attention) in its benchmark
#
# OUTDIR receives (each under 16 MB; nothing else):
#   summary.md       the step table and the headline numbers (also printed)
#   suite.json       steps (status, exit code, seconds, budget), bundle, host
#   results.jsonl    every JSON line of the programs, each with "program"
#   clocks.csv       nvidia-smi clock / power / temperature log
#   suite.log        every step's output (long ones cut in the middle)
#   ncu.txt, ncu.csv the ncu details pages and raw metrics
#   ncu_reports.tar.gz  the .ncu-rep files (ncu-ui opens them)
# tools/gpu_report.py OUTDIR turns them into the docs' GPU tables.
#
# --dry-run (a machine without a GPU, e.g. CI): the bundle check, the probe,
# and every step's real command line up to the device check: each program
# must exit 77 ("no CUDA device"); tools this machine lacks (nvidia-smi,
# compute-sanitizer, ncu) are reported, and the command they wrap is run.
# Exit status: 0 when every step is ok (or, in a dry run, started as
# expected), 1 otherwise, 2 for bad arguments.
set -euo pipefail

# ---- time budgets: step, seconds (wall clock), what ----------------------------
# The sum of the budgets (rebuild aside: it runs only when a binary does not
# start, and then takes its time from the last steps) stays under TOTAL_S.
TOTAL_S=465
BUDGET_TABLE='
bundle                  10  manifest vs files, sha256; binaries unpacked
probe                   15  ldd and --help of every binary
rebuild                150  only when a binary did not start
facts                   25  nvidia-smi -q, bench_gpu_ceilings
bench_gpu_elementwise   20  two 6-op chains, fused vs unfused vs handwritten vs copy
bench_gpu_reduction     45  softmax / norms / mse_loss, f32 and f16 (--budget-s 37)
bench_gpu_contraction   45  linear+GELU f16/bf16 BERT/LLM/decode vs cuBLASLt; conv vs cuDNN (--budget-s 35)
bench_gpu_attention     50  flash attention f16/bf16, square, LLM prefill, decode (--budget-s 40)
peers                   70  PyTorch eager, torch.compile, SDPA flash/cuDNN/efficient (--budget-s 62)
tests                   45  test_cuda, fusor_demo --backend cuda, fuzz.gpu_can_fail
fuzz                    40  fuzz_gpu CI mode (<= 20 s), then random draws
memcheck                30  compute-sanitizer memcheck, test_cuda subset
racecheck               25  compute-sanitizer racecheck, test_cuda subset
ncu                     45  ncu --clock-control none, one kernel per family
'
declare -A BUDGET=()
while read -r step secs _; do
  [[ -n "$step" ]] && BUDGET[$step]=$secs
done <<<"$BUDGET_TABLE"

usage() {
  sed -n '2,/^set -euo pipefail/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}
DRY=0
ARGS=()
while (($#)); do
  case "$1" in
    --dry-run) DRY=1; shift ;;
    -h | --help) usage 0 ;;
    -*) echo "gpu_suite: unknown option '$1' (--help: usage)" >&2; exit 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
((${#ARGS[@]} == 2)) || { echo "gpu_suite: expected BUNDLE and OUTDIR (--help: usage)" >&2; exit 2; }
[[ -f "${ARGS[0]}/manifest.json" ]] || { echo "gpu_suite: ${ARGS[0]}: no manifest.json (make one with tools/gpu_bundle.sh)" >&2; exit 2; }
BUNDLE="$(cd "${ARGS[0]}" && pwd)"
mkdir -p "${ARGS[1]}"
OUT="$(cd "${ARGS[1]}" && pwd)"
OUT_FILES=(summary.md suite.json results.jsonl clocks.csv suite.log ncu.txt ncu.csv ncu_reports.tar.gz)
for f in "${OUT_FILES[@]}"; do rm -f "$OUT/$f"; done
WORK="$(mktemp -d "${TMPDIR:-/tmp}/fusor-gpu-suite.XXXXXX")"
mkdir -p "$WORK/logs" "$WORK/json" "$WORK/ncu"
CLOCK_PID=""
cleanup() {
  [[ -n "$CLOCK_PID" ]] && kill "$CLOCK_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
START_EPOCH="$(date +%s)"
SECONDS=0
STEPS="$WORK/steps.tsv"
: >"$STEPS"
FAILED=0

note() { printf '[gpu_suite %3ds] %s\n' "$SECONDS" "$*"; }
# limit_of STEP: the step's budget, cut to what is left before the deadline
limit_of() {
  local b=${BUDGET[$1]:?"no budget for $1"} left=$((TOTAL_S - SECONDS))
  ((left < b)) && b=$left
  echo "$b"
}
# record STEP STATUS RC STARTED_AT(SECONDS) LIMIT DETAIL: one row of the step table
record() {
  local detail="${6//$'\t'/ }"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$((START_EPOCH + $4))" "$((SECONDS - $4))" "$5" \
    "${detail//$'\n'/ }" >>"$STEPS"
  [[ "$2" == FAILED || "$2" == TIMEOUT ]] && FAILED=1
  note "$1: $2${6:+ ($6)}"
  return 0
}
# timed LIMIT STDOUT STDERR CMD...: runs CMD under timeout; sets RC (124/137:
# timed out). STDERR "=" means with stdout.
timed() {
  local limit=$1 so=$2 se=$3
  shift 3
  RC=0
  if [[ "$se" == "=" ]]; then
    timeout --kill-after=5 "$limit" "$@" >>"$so" 2>&1 || RC=$?
  else
    timeout --kill-after=5 "$limit" "$@" >>"$so" 2>>"$se" || RC=$?
  fi
}
is_timeout() { ((RC == 124 || RC == 137)); }
# too_late STEP: true (and recorded) when no time is left for STEP
too_late() {
  if (($(limit_of "$1") < 3)); then
    record "$1" TIMEOUT - "$SECONDS" 0 "not started: the ${TOTAL_S}s deadline has passed"
    return 0
  fi
  return 1
}
log_of() { echo "$WORK/logs/$1.log"; }
# dry_expect_skip STEP LOG T0 LIMIT: a dry run's verdict: the command must have
# stopped at its device check (exit 77)
dry_expect_skip() {
  if ((RC == 77)); then
    record "$1" ok 77 "$3" "$4" "dry run: started, exit 77 at the device check"
  else
    record "$1" FAILED "$RC" "$3" "$4" "dry run: expected exit 77 (no CUDA device), got $RC: $(tail -c 300 "$2" | tr '\n' ' ')"
  fi
}
find_tool() {  # find_tool NAME: its path on PATH or in the CUDA toolkit / Nsight folders, or nothing
  local c
  c="$(command -v "$1" 2>/dev/null || true)"
  if [[ -z "$c" ]]; then
    for c in "${CUDA_HOME:-/usr/local/cuda}/bin/$1" "/usr/local/cuda/bin/$1" "/usr/local/cuda/$1/$1" \
      /opt/nvidia/nsight-compute/*/"$1"; do
      [[ -x "$c" ]] && break
      c=""
    done
  fi
  echo "$c"
}

S="$BUNDLE/scripts"
declare -A BIN=()
PY="$(command -v python3 || true)"
[[ -n "$PY" ]] || { echo "gpu_suite: python3 is needed" >&2; exit 2; }
note "bundle $BUNDLE -> $OUT ($([[ $DRY == 1 ]] && echo 'dry run' || echo 'GPU run'), deadline ${TOTAL_S}s)"

# Shared libraries for fusor's binaries: the toolkit's, then the
# pip-installed NVIDIA ones next to PyTorch (on the GPU machine cuDNN may
# exist only there). PyTorch itself runs with the caller's LD_LIBRARY_PATH:
# the toolkit's libcublas ahead of its own could break it.
if [[ -n "${LD_LIBRARY_PATH+set}" ]]; then CALLER_LD=(env "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"); else CALLER_LD=(env -u LD_LIBRARY_PATH); fi
libdirs=()
for d in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [[ -d "$d" ]] && libdirs+=("$d")
done
while IFS= read -r d; do [[ -d "$d" ]] && libdirs+=("$d"); done < <(
  "$PY" - <<'EOF' 2>/dev/null || true
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
for r in roots:
    for d in sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib")) + glob.glob(os.path.join(r, "nvidia", "*", "lib64"))):
        print(d)
EOF
)
# last: the bundle's own copies of libraries the image may lack (libsleef)
[[ -d "$BUNDLE/lib" ]] && libdirs+=("$BUNDLE/lib")
if ((${#libdirs[@]})); then
  mapfile -t libdirs < <(printf '%s\n' "${libdirs[@]}" | awk '!seen[$0]++')
  LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(IFS=:; echo "${libdirs[*]}")"
  export LD_LIBRARY_PATH
fi

# ---- bundle: manifest vs files; the binaries unpacked into WORK/bin -------------
t0=$SECONDS
LOG="$(log_of bundle)"
timed "$(limit_of bundle)" "$LOG" = "$PY" - "$BUNDLE" "$WORK/bin" <<'EOF'
import gzip, hashlib, json, os, shutil, sys
b, bindir = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(b, "manifest.json")))
bad, listed = [], set()
def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
os.makedirs(bindir, exist_ok=True)
for f in m["files"]:
    p = os.path.join(b, f["path"])
    listed.add(f["path"])
    if not os.path.isfile(p):
        bad.append(f"missing: {f['path']}")
        continue
    if os.path.getsize(p) != f["bytes"]:
        bad.append(f"size differs: {f['path']} ({os.path.getsize(p)} != {f['bytes']})")
        continue
    if sha256(p) != f["sha256"]:
        bad.append(f"sha256 differs: {f['path']}")
        continue
    if f["kind"] == "binary":
        u = f["unpacked"]
        dst = os.path.join(bindir, u["name"])
        with gzip.open(p, "rb") as src, open(dst, "wb") as out:
            shutil.copyfileobj(src, out)
        os.chmod(dst, 0o755)
        if os.path.getsize(dst) != u["bytes"] or sha256(dst) != u["sha256"]:
            bad.append(f"unpacked binary differs from the one built: {u['name']}")
            os.remove(dst)
for root, _, names in os.walk(b):
    for n in names:
        rel = os.path.relpath(os.path.join(root, n), b)
        if rel != "manifest.json" and rel not in listed:
            bad.append(f"not in the manifest: {rel}")
need = {"bin/test_cuda.gz", "bin/fuzz_gpu.gz", "bin/bench_gpu_ceilings.gz", "bin/bench_gpu_elementwise.gz",
        "bin/bench_gpu_reduction.gz", "bin/bench_gpu_contraction.gz", "bin/bench_gpu_attention.gz", "scripts/gpu_suite.sh", "scripts/torch_baselines.py",
        "scripts/gpu_report.py", "scripts/fusor_demo_check.cmake", "src.tar.gz"}
bad += [f"required but absent: {n}" for n in sorted(need - listed)]
print(f"commit {m['commit']}{' + uncommitted changes' if m.get('uncommitted_changes') else ''}, {m['nvcc']}, "
      f"architectures {m['cuda_architectures']} {' '.join(m.get('nvcc_arch_flags', []))}, CUDA runtime {m['cuda_runtime']}, "
      f"{len(m['files'])} files, {m['total_bytes'] / 1e6:.1f} MB")
for x in bad:
    print("BUNDLE:", x)
sys.exit(1 if bad else 0)
EOF
if ((RC == 0)); then
  record bundle ok 0 "$t0" "${BUDGET[bundle]}" "$(head -1 "$LOG")"
else
  record bundle FAILED "$RC" "$t0" "${BUDGET[bundle]}" "$(grep -m3 '^BUNDLE:' "$LOG" | tr '\n' ';')"
fi
for f in "$WORK"/bin/*; do [[ -f "$f" ]] && BIN[$(basename "$f")]="$f"; done
# a required binary the bundle lacks (or that failed its check) is a path
# that does not exist: its steps then fail with exit 127, and the probe
# sends it to the rebuild
for name in test_cuda fuzz_gpu bench_gpu_ceilings bench_gpu_elementwise bench_gpu_reduction bench_gpu_contraction \
  bench_gpu_attention; do
  [[ -n "${BIN[$name]:-}" ]] || BIN[$name]="$WORK/missing/$name"
done

# ---- probe: does every binary start? --------------------------------------------
# "Starts": the dynamic loader resolves it (ldd finds every library) and
# `--help` exits 0 (or 77: test_cuda checks for the device before parsing).
# A loader failure (127), a missing library or a signal means it does not.
t0=$SECONDS
LOG="$(log_of probe)"
NOSTART=()
WHY=()
for name in "${!BIN[@]}"; do
  exe="${BIN[$name]}"
  missing="$(ldd "$exe" 2>&1 | grep -E 'not found|version .* not found' || true)"
  RC=0
  # 60 s: a cold start maps cuBLASLt and cuDNN (about 0.8 GB). With 10 s, a
  # loaded CI machine's probe took 11 s and reported bench_gpu_contraction as
  # not starting (its exit status was not recorded then; now it is)
  timeout 60 "$exe" --help >>"$LOG" 2>&1 || RC=$?
  echo "$name: --help exit $RC${missing:+; ldd: $missing}" >>"$LOG"
  if [[ -n "$missing" ]] || ((RC != 0 && RC != 77)); then
    NOSTART+=("$name")
    WHY+=("$name: exit $RC${missing:+, ldd: $missing}")
  fi
done
if ((${#NOSTART[@]} == 0)); then
  record probe ok 0 "$t0" "${BUDGET[probe]}" "${#BIN[@]} binaries start"
else
  # on the GPU machine the rebuild step decides (a failed rebuild fails the run)
  ((DRY)) && st=FAILED || st=warn
  record probe "$st" 1 "$t0" "${BUDGET[probe]}" "do not start: $(IFS=';'; echo "${WHY[*]}" | head -c 300)"
fi

# ---- rebuild what does not start, from the bundled sources ---------------------------
t0=$SECONDS
LOG="$(log_of rebuild)"
if ((${#NOSTART[@]} == 0)); then
  record rebuild skipped - "$t0" 0 "not needed"
elif ((DRY)); then
  record rebuild FAILED 1 "$t0" 0 "dry run: would rebuild ${NOSTART[*]} (they must start here: CI built them)"
elif ! too_late rebuild; then
  NVCC="$(find_tool nvcc)"
  # this GPU's architecture from nvidia-smi (9.0 -> 90-real), else CMake's
  # own detection ("native")
  arch=native
  NVSMI="$(find_tool nvidia-smi)"
  cap="$([[ -n "$NVSMI" ]] && "$NVSMI" --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .' || true)"
  [[ "$cap" =~ ^[0-9]+$ ]] && arch="$cap-real"
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  timed "$(limit_of rebuild)" "$LOG" = bash -c '
    set -euo pipefail
    tar -xzf "$1/src.tar.gz" -C "$2"
    cmake -S "$2/fusor" -B "$2/build" "${@:6}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=$5" \
      -DCMAKE_PREFIX_PATH="$2/fusor/deps" -DCMAKE_CUDA_COMPILER="$3" -DFUSOR_BUILD_GPU_FUZZER=ON
    cmake --build "$2/build" -j "$(nproc)" --target $4' rebuild "$BUNDLE" "$WORK" "${NVCC:-nvcc}" "${NOSTART[*]}" "$arch" \
    ${gen[@]+"${gen[@]}"}
  rebuilt=()
  for name in "${NOSTART[@]}"; do
    p="$(find "$WORK/build" -type f -name "$name" -perm -u+x 2>/dev/null | head -1)"
    if [[ -n "$p" ]] && timeout 10 "$p" --help >/dev/null 2>&1; then
      BIN[$name]="$p"
      rebuilt+=("$name")
    fi
  done
  if ((${#rebuilt[@]} == ${#NOSTART[@]})); then
    record rebuild ok "$RC" "$t0" "${BUDGET[rebuild]}" "rebuilt here: ${rebuilt[*]}"
  else
    is_timeout && st=TIMEOUT || st=FAILED
    record rebuild "$st" "$RC" "$t0" "${BUDGET[rebuild]}" "rebuilt ${rebuilt[*]:-nothing} of ${NOSTART[*]}: $(tail -c 300 "$LOG" | tr '\n' ' ')"
  fi
fi

# ---- facts + clock log -------------------------------------------------------------
NVSMI="$(find_tool nvidia-smi)"
CLOCK_FIELDS=""
if [[ -n "$NVSMI" ]]; then
  for fields in timestamp,pstate,clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active \
    timestamp,pstate,clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu,utilization.gpu,clocks_throttle_reasons.active \
    timestamp,clocks.sm,clocks.mem; do
    if "$NVSMI" --query-gpu="$fields" --format=csv,noheader >/dev/null 2>&1; then
      CLOCK_FIELDS=$fields
      break
    fi
  done
fi
if [[ -n "$CLOCK_FIELDS" ]]; then
  # in the background until the benchmarks end (stopped below; killed at exit)
  "$NVSMI" --query-gpu="$CLOCK_FIELDS" --format=csv -lms 500 >"$OUT/clocks.csv" 2>/dev/null &
  CLOCK_PID=$!
fi
stop_clock_log() {
  if [[ -n "$CLOCK_PID" ]]; then
    kill "$CLOCK_PID" 2>/dev/null || true
    wait "$CLOCK_PID" 2>/dev/null || true
    CLOCK_PID=""
  fi
}

# facts_line FILE: one line from the JSON of bench_gpu_ceilings
facts_line() {
  "$PY" - "$1" <<'EOF' 2>&1 | tail -1
import json, sys
d = {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    d.setdefault(o.get("name"), []).append(o)
dev, cp, g = d["device"][0], d["d2d_copy"][0], {o["precision"]: o for o in d["gemm_peak"]}
v = dev['driver_version']
print(f"{dev['device']}, {dev['sm_count']} SMs, L2 {dev['l2_bytes'] / 2**20:.0f} MiB, CUDA driver API {v // 1000}.{v % 1000 // 10}; "
      f"copy {cp['gb_per_s']:.0f} GB/s; bf16 GEMM {g['bf16']['tflop_per_s']:.0f} TFLOP/s")
EOF
}
t0=$SECONDS
LOG="$(log_of facts)"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); host: $(uname -srm), $(nproc) cores"
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  if [[ -n "$NVSMI" ]]; then timeout 15 "$NVSMI" -q 2>&1 || true; else echo "nvidia-smi: not found"; fi
} >"$LOG" 2>&1
timed "$(limit_of facts)" "$WORK/json/bench_gpu_ceilings.jsonl" "$LOG" "${BIN[bench_gpu_ceilings]}"
if ((DRY)); then
  dry_expect_skip facts "$LOG" "$t0" "$(limit_of facts)"
  [[ -z "$NVSMI" ]] && note "facts: nvidia-smi not on this machine (the GPU machine has it)"
elif ((RC == 0)) && grep -q '"gemm_peak"' "$WORK/json/bench_gpu_ceilings.jsonl"; then
  record facts ok 0 "$t0" "${BUDGET[facts]}" "$(facts_line "$WORK/json/bench_gpu_ceilings.jsonl")"
else
  is_timeout && st=TIMEOUT || st=FAILED
  record facts "$st" "$RC" "$t0" "${BUDGET[facts]}" "bench_gpu_ceilings: $(tail -c 300 "$LOG" | tr '\n' ' ')"
fi

# ---- benchmarks ----------------------------------------------------------------------
# bench_json FILE: "N lines: C checks passed, F failed, K not_run, S skipped, E
# errors" and exit 1 when a check failed, a line is not JSON or nothing ran.
bench_json() {
  "$PY" - "$1" <<'EOF'
import json, sys
n = checks = failed = not_run = skipped = errors = timed = 0
bad = []
for i, line in enumerate(open(sys.argv[1]), 1):
    if not line.strip():
        continue
    n += 1
    try:
        o = json.loads(line)
    except ValueError:
        bad.append(f"line {i} is not JSON")
        continue
    if not isinstance(o, dict):
        bad.append(f"line {i} is not an object")
        continue
    if "pass" in o:
        checks += 1
        failed += o["pass"] is False
    not_run += "not_run" in o
    skipped += "skipped" in o
    errors += "error" in o
    timed += "seconds" in o
print(f"{n} lines: {timed} timings, {checks - failed} checks passed, {failed} failed, {not_run} not_run, "
      f"{skipped} skipped, {errors} errors" + ("; " + "; ".join(bad[:3]) if bad else ""))
sys.exit(1 if failed or bad or timed == 0 else 0)
EOF
}
# run_bench STEP EXE ARGS...: one benchmark program, JSON to json/STEP.jsonl
run_bench() {
  local step=$1 exe=$2
  shift 2
  local t0=$SECONDS log json summary lim
  log="$(log_of "$step")"
  json="$WORK/json/$step.jsonl"
  too_late "$step" && return 0
  lim="$(limit_of "$step")"
  if [[ -z "$exe" ]]; then
    record "$step" FAILED - "$t0" "$lim" "not in the bundle"
    return 0
  fi
  note "$step (limit ${lim}s)"
  timed "$lim" "$json" "$log" "$exe" "$@"
  if ((DRY)); then
    dry_expect_skip "$step" "$log" "$t0" "$lim"
    return 0
  fi
  summary="$(bench_json "$json" 2>&1)" && local jrc=0 || local jrc=$?
  if ((RC == 0 && jrc == 0)); then
    record "$step" ok 0 "$t0" "$lim" "$summary"
  elif is_timeout; then
    record "$step" TIMEOUT "$RC" "$t0" "$lim" "killed at ${lim}s, partial results kept: $summary"
  else
    record "$step" FAILED "$RC" "$t0" "$lim" "$summary; stderr: $(tail -c 200 "$log" | tr '\n' ' ')"
  fi
}
run_bench bench_gpu_elementwise "${BIN[bench_gpu_elementwise]:-}"
run_bench bench_gpu_reduction "${BIN[bench_gpu_reduction]:-}" --budget-s $((${BUDGET[bench_gpu_reduction]} - 8))
run_bench bench_gpu_contraction "${BIN[bench_gpu_contraction]:-}" --budget-s $((${BUDGET[bench_gpu_contraction]} - 10))
run_bench bench_gpu_attention "${BIN[bench_gpu_attention]:-}" --budget-s $((${BUDGET[bench_gpu_attention]} - 10))

# peers: PyTorch (optional on the GPU machine: a missing torch is "skipped")
t0=$SECONDS
LOG="$(log_of peers)"
if ! too_late peers; then
  lim="$(limit_of peers)"
  note "peers (limit ${lim}s)"
  timed "$lim" "$WORK/json/torch_baselines.jsonl" "$LOG" "${CALLER_LD[@]}" PYTHONUNBUFFERED=1 "$PY" "$S/torch_baselines.py" \
    --budget-s $((${BUDGET[peers]} - 8)) --compile-budget-s $((${BUDGET[peers]} - 30))
  if ((DRY)); then
    dry_expect_skip peers "$LOG" "$t0" "$lim"
  elif ((RC == 77)); then
    record peers skipped 77 "$t0" "$lim" "$(head -c 200 "$WORK/json/torch_baselines.jsonl")"
  else
    summary="$(bench_json "$WORK/json/torch_baselines.jsonl" 2>&1)" && jrc=0 || jrc=$?
    if ((RC == 0 && jrc == 0)); then record peers ok 0 "$t0" "$lim" "$summary"
    elif is_timeout; then record peers TIMEOUT "$RC" "$t0" "$lim" "partial results kept: $summary"
    else record peers FAILED "$RC" "$t0" "$lim" "$summary; $(tail -c 200 "$LOG" | tr '\n' ' ')"
    fi
  fi
fi
stop_clock_log

# ---- CUDA tests (the ctest tests labeled cuda, as ctest runs them) ---------------------
t0=$SECONDS
LOG="$(log_of tests)"
if ! too_late tests; then
  lim="$(limit_of tests)"
  deadline=$((SECONDS + lim))
  problems=()
  tmo=0
  echo "=== test_cuda" >>"$LOG"
  # (the two short checks after it keep 12 s)
  l=$((lim - 12)); ((l < 5)) && l=5
  timed "$l" "$LOG" = "${BIN[test_cuda]}" --durations yes
  is_timeout && tmo=1
  if ((DRY)); then ((RC == 77)) || problems+=("test_cuda exit $RC, expected 77"); else ((RC == 0)) || problems+=("test_cuda exit $RC"); fi
  if [[ -n "${BIN[fusor_demo]:-}" ]]; then
    echo "=== example.fusor_demo.cuda_backend" >>"$LOG"
    CMAKE="$(command -v cmake || true)"
    if [[ -z "$CMAKE" ]]; then
      problems+=("cmake not found: fusor_demo's check not run")
    else
      l=$((deadline - SECONDS)); ((l < 1)) && l=1
      timed "$l" "$LOG" = "$CMAKE" "-DDEMO=${BIN[fusor_demo]}" "-DDATA=$BUNDLE/data/demo" -DMODE=json "-DARGS=--backend;cuda" \
        -P "$S/fusor_demo_check.cmake"
      is_timeout && tmo=1
      skipped_demo=0
      tail -5 "$LOG" | grep -q "SKIPPED: no CUDA device" && skipped_demo=1
      if ((DRY)); then ((RC == 0 && skipped_demo)) || problems+=("fusor_demo check: exit $RC, expected its SKIPPED line")
      elif ((skipped_demo)); then problems+=("fusor_demo --backend cuda: skipped, no device")
      else ((RC == 0)) || problems+=("fusor_demo --backend cuda: check failed, exit $RC"); fi
    fi
  fi
  echo "=== fuzz.gpu_can_fail" >>"$LOG"
  l=$((deadline - SECONDS)); ((l < 1)) && l=1
  cf="$WORK/logs/can_fail.out"
  timed "$l" "$cf" = "${BIN[fuzz_gpu]}" --inject --draws 3 --max-failures 1
  is_timeout && tmo=1
  cat "$cf" >>"$LOG"
  if ((DRY)); then ((RC == 77)) || problems+=("fuzz_gpu --inject exit $RC, expected 77")
  else grep -Eq 'FUZZ MISMATCH: case [0-9]+ seed 0x' "$cf" || problems+=("fuzz_gpu --inject reported no mismatch (exit $RC)"); fi
  if ((${#problems[@]} == 0)); then
    record tests ok 0 "$t0" "$lim" "$( ((DRY)) && echo 'dry run: all stopped at the device check' || echo 'test_cuda, fusor_demo cuda, fuzz.gpu_can_fail passed')"
  else
    ((tmo)) && st=TIMEOUT || st=FAILED
    record tests "$st" "$RC" "$t0" "$lim" "$(IFS=';'; echo "${problems[*]}")"
  fi
fi

# ---- GPU fuzzer: fixed seeds, then random draws for the rest of its budget -------------
t0=$SECONDS
LOG="$(log_of fuzz)"
if ! too_late fuzz; then
  lim="$(limit_of fuzz)"
  ci=$((lim / 2)); ((ci > 20)) && ci=20
  timed "$ci" "$LOG" = "${BIN[fuzz_gpu]}"
  rc_ci=$RC
  if ((DRY)); then
    dry_expect_skip fuzz "$LOG" "$t0" "$lim"
  else
    seed="$(date +%s)"
    rest=$((t0 + lim - SECONDS - 5))
    rc_rand=0
    if ((rest >= 5)); then
      echo "=== random draws: --seconds $rest --master-seed $seed --negative-strides" >>"$LOG"
      timed $((rest + 10)) "$LOG" = "${BIN[fuzz_gpu]}" --seconds "$rest" --master-seed "$seed" --negative-strides
      rc_rand=$RC
    fi
    last="$(grep -E 'draws|FUZZ' "$LOG" | tail -2 | tr '\n' ' ' | head -c 250)"
    if ((rc_ci == 0 && rc_rand == 0)); then
      record fuzz ok 0 "$t0" "$lim" "CI mode + random (master seed $seed): $last"
    elif ((rc_ci == 124 || rc_ci == 137)); then
      record fuzz TIMEOUT "$rc_ci" "$t0" "$lim" "CI mode did not finish in ${ci}s: $last"
    else
      record fuzz FAILED "$rc_ci/$rc_rand" "$t0" "$lim" "exit $rc_ci (CI mode) / $rc_rand (random, master seed $seed): $last"
    fi
  fi
fi

# ---- compute-sanitizer on a subset of test_cuda ----------------------------------------
SANITIZER="$(find_tool compute-sanitizer)"
# Catch2 test specs: "," is OR, "[a][b]" is AND. memcheck: the edge cases of
# every family (misaligned views, 16-bit tensor-core GEMM and attention,
# reductions); racecheck: the shared-memory kernels (bf16 tile GEMM and
# attention, row reductions).
declare -A SUBSET=(
  [memcheck]="[misaligned],[reduction],[contraction][f16],[attention][f16]"
  [racecheck]="[reduction],[contraction][bf16],[attention][bf16]"
)
for tool in memcheck racecheck; do
  t0=$SECONDS
  LOG="$(log_of "$tool")"
  too_late "$tool" && continue
  lim="$(limit_of "$tool")"
  extra=()
  [[ $tool == racecheck ]] && extra=(--racecheck-report all)
  if ((DRY)); then
    # without a device the sanitizer's own behaviour is not the point: it
    # must start, and the command it wraps must reach its device check
    sane=1
    if [[ -n "$SANITIZER" ]]; then
      timed 10 "$LOG" = "$SANITIZER" --version
      ((RC == 0)) || sane=0
    else
      note "$tool: compute-sanitizer not on this machine: the command it wraps is run alone"
    fi
    timed "$lim" "$LOG" = "${BIN[test_cuda]}" "${SUBSET[$tool]}" --durations yes
    if ((sane)); then dry_expect_skip "$tool" "$LOG" "$t0" "$lim"
    else record "$tool" FAILED 1 "$t0" "$lim" "compute-sanitizer --version failed"; fi
    continue
  fi
  if [[ -z "$SANITIZER" ]]; then
    record "$tool" FAILED - "$t0" "$lim" "compute-sanitizer not found (PATH, CUDA toolkit)"
    continue
  fi
  timed "$lim" "$LOG" = "$SANITIZER" --tool "$tool" --error-exitcode 99 --print-limit 50 ${extra[@]+"${extra[@]}"} \
    "${BIN[test_cuda]}" "${SUBSET[$tool]}" --durations yes
  if ((RC == 0)); then
    record "$tool" ok 0 "$t0" "$lim" "$(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOG" || echo 'no errors')"
  elif ((RC == 99)); then
    record "$tool" FAILED 99 "$t0" "$lim" "$(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOG"); first: $(grep -m1 -E '^========= (Invalid|Race|Error|Program hit)' "$LOG" | head -c 200)"
  elif is_timeout; then
    record "$tool" TIMEOUT "$RC" "$t0" "$lim" "subset not finished in ${lim}s; last test: $(grep -E ' s: ' "$LOG" | tail -1 | head -c 150)"
  else
    record "$tool" FAILED "$RC" "$t0" "$lim" "$(tail -c 250 "$LOG" | tr '\n' ' ')"
  fi
done

# ---- ncu: the first kernel of each family, in its benchmark ------------------------------
# family kernel-regex step args...: the benchmark runs only the selected case
# (whose first fused kernel is the one profiled) with one timed batch.
NCU_FAMILIES=(
  "elementwise|fused_elementwise|bench_gpu_elementwise|--elements 16777216 --repeats 1"
  "rows|fused_rows|bench_gpu_reduction|--only reduction/f16/layer_norm_residual/16384x4096 --skip-reference-check --repeats 1"
  "gemm|gemm_engine_epilogue|bench_gpu_contraction|--only linear_bias_gelu/bf16/llm --repeats 1"
  "attention|fused_attention|bench_gpu_attention|--only attention/bf16/llm --repeats 1"
)
NCU="$(find_tool ncu)"
t0=$SECONDS
LOG="$(log_of ncu)"
if ! too_late ncu; then
  lim="$(limit_of ncu)"
  end=$((SECONDS + lim))
  ncu_opts=(--clock-control none --target-processes all --launch-count 1)
  if [[ -n "$NCU" ]] && ((!DRY)); then
    # the sections this ncu has, of those wanted (a missing name would stop it)
    have="$("$NCU" --list-sections 2>/dev/null || true)"
    for sec in SpeedOfLight LaunchStats Occupancy MemoryWorkloadAnalysis ComputeWorkloadAnalysis WarpStateStats; do
      grep -qw "$sec" <<<"$have" && ncu_opts+=(--section "$sec")
    done
    # stop the program once its kernel is profiled, where this ncu can
    "$NCU" --help 2>/dev/null | grep -q -- '--kill' && ncu_opts+=(--kill 1)
  fi
  done_fams=()
  problems=()
  left=${#NCU_FAMILIES[@]}
  for entry in "${NCU_FAMILIES[@]}"; do
    IFS='|' read -r fam kernel step args <<<"$entry"
    read -r -a argv <<<"$args"
    l=$(((end - SECONDS) / left))
    left=$((left - 1))
    ((l < 3)) && { problems+=("$fam: no time left"); continue; }
    echo "=== $fam: $kernel in $step $args (limit ${l}s)" >>"$LOG"
    if [[ -z "$NCU" ]]; then
      timed "$l" "$LOG" = "${BIN[$step]}" "${argv[@]}"
      if ((DRY)); then ((RC == 77)) || problems+=("$fam: exit $RC, expected 77"); else problems+=("ncu not found"); break; fi
      continue
    fi
    if ((DRY)); then
      timed 10 "$LOG" = "$NCU" --version
      ((RC == 0)) || problems+=("ncu --version: exit $RC")
      timed "$l" "$LOG" = "${BIN[$step]}" "${argv[@]}"
      ((RC == 77)) || problems+=("$fam: exit $RC, expected 77")
      continue
    fi
    timed "$l" "$LOG" = "$NCU" "${ncu_opts[@]}" -k "regex:$kernel" -f -o "$WORK/ncu/$fam" "${BIN[$step]}" "${argv[@]}"
    if [[ -f "$WORK/ncu/$fam.ncu-rep" ]]; then
      done_fams+=("$fam")
      { echo "=== $fam ($kernel in $step $args)"; "$NCU" -i "$WORK/ncu/$fam.ncu-rep" --page details 2>&1; } >>"$WORK/ncu.txt"
      { echo "# $fam"; "$NCU" -i "$WORK/ncu/$fam.ncu-rep" --page raw --csv 2>&1; } >>"$WORK/ncu.csv"
    else
      problems+=("$fam: no report (exit $RC)")
    fi
  done
  if ((DRY)); then
    if ((${#problems[@]} == 0)); then
      record ncu ok 77 "$t0" "$lim" "dry run: the profiled commands stop at the device check; $([[ -n "$NCU" ]] && echo "ncu starts" || echo "ncu not on this machine")"
    else
      record ncu FAILED 1 "$t0" "$lim" "$(IFS=';'; echo "${problems[*]}")"
    fi
  elif ((${#problems[@]} == 0)); then
    record ncu ok 0 "$t0" "$lim" "profiled: ${done_fams[*]}"
  else
    record ncu FAILED 1 "$t0" "$lim" "profiled: ${done_fams[*]:-none}; $(IFS=';'; echo "${problems[*]}")"
  fi
fi

# ---- OUTDIR: at most 8 files, each under 16 MB ---------------------------------------------
[[ -f "$WORK/ncu.txt" ]] && cp "$WORK/ncu.txt" "$OUT/ncu.txt"
[[ -f "$WORK/ncu.csv" ]] && cp "$WORK/ncu.csv" "$OUT/ncu.csv"
if compgen -G "$WORK/ncu/*.ncu-rep" >/dev/null; then
  tar -C "$WORK/ncu" -czf "$OUT/ncu_reports.tar.gz" .
fi
"$PY" - "$WORK" "$OUT" "$BUNDLE" "$DRY" "$TOTAL_S" "$BUDGET_TABLE" <<'EOF'
import json, os, platform, sys
work, out, bundle, dry, total_s, table = sys.argv[1:7]
LIMIT = 15 * 1000 * 1000  # under the 16 MB a file may have
# results.jsonl: every program's JSON lines, tagged with the program
with open(os.path.join(out, "results.jsonl"), "w") as res:
    jdir = os.path.join(work, "json")
    for name in sorted(os.listdir(jdir)):
        program = name[:-len(".jsonl")]
        for line in open(os.path.join(jdir, name), errors="replace"):
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if isinstance(o, dict):
                o.setdefault("program", program)
                res.write(json.dumps(o) + "\n")
# suite.log: every step's log, a long one cut in the middle
order = ["bundle", "probe", "rebuild", "facts", "bench_gpu_elementwise", "bench_gpu_reduction", "bench_gpu_contraction",
         "bench_gpu_attention", "peers", "tests", "fuzz", "memcheck", "racecheck", "ncu"]
logs = os.path.join(work, "logs")
per_log = 1_500_000
with open(os.path.join(out, "suite.log"), "wb") as f:
    for n in order + sorted(set(x[:-4] for x in os.listdir(logs)) - set(order)):
        p = os.path.join(logs, n + ".log")
        if not os.path.isfile(p):
            continue
        data = open(p, "rb").read()
        if len(data) > per_log:
            cut = len(data) - per_log
            data = data[:per_log // 3] + f"\n[... {cut} bytes cut ...]\n".encode() + data[-2 * per_log // 3:]
        f.write(f"\n===== {n} =====\n".encode() + data)
steps = []
for row in open(os.path.join(work, "steps.tsv")):
    name, status, rc, start, secs, limit, detail = row.rstrip("\n").split("\t")
    steps.append({"step": name, "status": status, "exit": rc, "start_unix": int(start), "seconds": int(secs),
                  "limit_s": int(limit), "detail": detail})
budgets = {l.split()[0]: int(l.split()[1]) for l in table.strip().splitlines()}
manifest = json.load(open(os.path.join(bundle, "manifest.json")))
suite = {"dry_run": dry == "1", "deadline_s": int(total_s), "budgets_s": budgets, "steps": steps,
         "result": "FAILED" if any(s["status"] in ("FAILED", "TIMEOUT") for s in steps) else "ok",
         "host": f"{platform.node()} {platform.system()} {platform.release()} {platform.machine()}",
         "bundle": {k: manifest.get(k) for k in ("commit", "uncommitted_changes", "created_utc", "nvcc", "cuda_architectures",
                                                 "nvcc_arch_flags", "cuda_runtime", "total_bytes", "mode")}}
with open(os.path.join(out, "suite.json"), "w") as f:
    json.dump(suite, f, indent=1)
# sizes: cut a log, drop a report archive, never exceed the limit
for name in sorted(os.listdir(out)):
    p = os.path.join(out, name)
    if os.path.getsize(p) > LIMIT:
        if name.endswith((".log", ".txt", ".csv", ".jsonl")):
            with open(p, "r+b") as f:
                f.truncate(LIMIT - 100)
                f.seek(0, 2)
                f.write(b"\n[... truncated by gpu_suite.sh to stay under 16 MB]\n")
        else:
            os.remove(p)
EOF
# summary.md: the step table and the headline numbers (tools/gpu_report.py)
{
  "$PY" "$S/gpu_report.py" "$OUT" --summary 2>&1 || echo "(gpu_report.py --summary failed)"
} >"$OUT/summary.md"
stray="$(ls -A "$OUT" | grep -vxF -f <(printf '%s\n' "${OUT_FILES[@]}") || true)"
[[ -n "$stray" ]] && note "note: OUTDIR also holds files this run did not write: $(echo $stray)"
cat "$OUT/summary.md"
note "done in ${SECONDS}s (deadline ${TOTAL_S}s); files: $(cd "$OUT" && ls | tr '\n' ' ')"
exit "$FAILED"
