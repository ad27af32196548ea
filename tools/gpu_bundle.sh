#!/usr/bin/env bash
# Builds, on a machine without a GPU, everything bench/gpu_suite.sh runs on a
# GPU machine, and puts it into one folder (the bundle) with a manifest.
#
#   tools/gpu_bundle.sh [--build-dir DIR] [--archs LIST] [--jobs N] [--out BUNDLE] [--max-mb N]
#   tools/gpu_bundle.sh --reuse BUILD_DIR [--out BUNDLE] [--max-mb N]
#
# Build mode (default): configures DIR (default build-bundle) as Release for
# CMAKE_CUDA_ARCHITECTURES LIST (default "90a-real;90-virtual": sm_90a
# machine code, which an H100/H200 runs directly, plus compute_90 PTX the
# driver can compile should that code not load), with the CUDA runtime linked
# statically (CMAKE_CUDA_RUNTIME_LIBRARY=Static, and CUDA::cudart pointed at
# libcudart_static.a, since the targets also name CUDA::cudart), so the
# binaries need no libcudart.so on the GPU machine; then builds only the GPU
# targets (nice -n 19, -j N, default 2): the executables of the tests labeled
# `cuda` (test_cuda, fuzz_gpu, fusor_demo when built), every bench_gpu_*.
# --reuse: takes those executables from an existing build (CI's), no
# configure, no build: for the dry run (ctest gpu_suite.dry_run).
#
# The bundle (default DIR/gpu-bundle, at most --max-mb MB, default 60):
#   bin/NAME.gz   the executables, gzip-compressed (a third of their size:
#                 fuzz_gpu alone is ~39 MB, mostly host code and symbol names;
#                 gpu_suite.sh unpacks them and checks their sha256)
#   lib/          shared libraries the binaries need beyond the C/C++ runtime
#                 and CUDA's (libsleef.so.3), which the GPU image lacks
#   scripts/      gpu_suite.sh, torch_baselines.py, gpu_report.py,
#                 fusor_demo_check.cmake (the suite runs from these copies)
#   data/demo/    the demo's input files
#   src.tar.gz    the source tree the binaries were built from (tracked and
#                 untracked-not-ignored files) plus deps/, a CMake prefix with
#                 the headers and package files of Catch2 and nlohmann_json:
#                 enough to rebuild a binary on the bare
#                 GPU machine when it does not start there (gpu_suite.sh does)
#   manifest.json names, sizes and sha256 of all of the above; the commit
#                 (and whether the tree had uncommitted changes), the nvcc
#                 version, the CUDA architectures compiled, the CUDA runtime
#                 linkage and each binary's needed shared libraries
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$REPO/build-bundle"
REUSE=0
OUT=""
ARCHS="90a-real;90-virtual"
JOBS=2
MAX_MB=60
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"

usage() {
  sed -n '2,/^set -euo pipefail/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}
die() {
  echo "gpu_bundle: $*" >&2
  exit 1
}
while (($#)); do
  case "$1" in
    --build-dir) BUILD="${2:?--build-dir needs a directory}"; shift 2 ;;
    --reuse) BUILD="${2:?--reuse needs a build directory}"; REUSE=1; shift 2 ;;
    --out) OUT="${2:?--out needs a directory}"; shift 2 ;;
    --archs) ARCHS="${2:?--archs needs a list}"; shift 2 ;;
    --jobs) JOBS="${2:?--jobs needs a number}"; shift 2 ;;
    --max-mb) MAX_MB="${2:?--max-mb needs a number}"; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "gpu_bundle: unknown argument '$1' (--help: usage)" >&2; exit 2 ;;
  esac
done
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "--jobs: expected a positive integer, got '$JOBS'"
[[ "$MAX_MB" =~ ^[1-9][0-9]*$ ]] || die "--max-mb: expected a positive integer, got '$MAX_MB'"
command -v python3 >/dev/null || die "python3 is needed (manifest, sha256)"
((REUSE)) || mkdir -p "$BUILD"
[[ -d "$BUILD" ]] || die "--reuse $BUILD: no such directory"
BUILD="$(cd "$BUILD" && pwd)"
OUT="${OUT:-$BUILD/gpu-bundle}"

if ((REUSE)); then
  [[ -f "$BUILD/CMakeCache.txt" ]] || die "--reuse $BUILD: no CMakeCache.txt (not a configured build)"
else
  NVCC="$(command -v nvcc || true)"
  [[ -n "$NVCC" ]] || NVCC="$CUDA_HOME/bin/nvcc"
  [[ -x "$NVCC" ]] || die "nvcc not found (PATH, $CUDA_HOME/bin)"
  CUDART_STATIC="$(dirname "$NVCC")/../lib64/libcudart_static.a"
  [[ -f "$CUDART_STATIC" ]] || CUDART_STATIC="$CUDA_HOME/lib64/libcudart_static.a"
  [[ -f "$CUDART_STATIC" ]] || die "libcudart_static.a not found next to $NVCC"
  echo "gpu_bundle: configuring $BUILD (CUDA architectures $ARCHS)"
  nice -n 19 cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DFUSOR_BUILD_TESTS=ON -DFUSOR_BUILD_BENCH=ON \
    -DFUSOR_BUILD_EXAMPLES=ON -DFUSOR_ENABLE_CUDA=ON -DFUSOR_BUILD_GPU_FUZZER=ON "-DCMAKE_CUDA_COMPILER=$NVCC" \
    "-DCMAKE_CUDA_ARCHITECTURES=$ARCHS" -DCMAKE_CUDA_RUNTIME_LIBRARY=Static \
    "-DCUDA_cudart_LIBRARY=$(cd "$(dirname "$CUDART_STATIC")" && pwd)/libcudart_static.a" >"$BUILD/gpu_bundle_configure.log" ||
    die "configure failed: $BUILD/gpu_bundle_configure.log"
fi

# The bundle's binaries, one "target<TAB>path" per line: the executables
# inside the build that the tests labeled `cuda` run (read from the generated
# CTestTestfile.cmake files, so a new CUDA test is picked up), and every
# bench_gpu_* target. --build: names only, from the configured tree.
list_binaries() {
  python3 - "$BUILD" "$1" <<'EOF'
import os, re, sys
build, mode = os.path.realpath(sys.argv[1]), sys.argv[2]
found = {}
add = re.compile(r'^add_test\(\[=\[(.*?)\]=\] (.*)\)$', re.M)
props = re.compile(r'^set_tests_properties\(\[=\[(.*?)\]=\] PROPERTIES (.*)\)$', re.M)
for root, _, files in os.walk(build):
    if "CTestTestfile.cmake" not in files:
        continue
    text = open(os.path.join(root, "CTestTestfile.cmake")).read()
    cmds = {m.group(1): m.group(2) for m in add.finditer(text)}
    for m in props.finditer(text):
        labels = re.search(r'LABELS "([^"]*)"', m.group(2))
        if not labels or "cuda" not in labels.group(1).split(";"):
            continue
        for arg in re.findall(r'"([^"]*)"', cmds.get(m.group(1), "")):
            arg = arg.split("=", 1)[1] if re.match(r"^-D\w+=", arg) else arg  # cmake -DDEMO=<exe> -P ...
            p = os.path.realpath(arg)
            if p.startswith(build + os.sep) and not p.endswith((".sh", ".cmake")):
                found[os.path.basename(p)] = p
bench = os.path.join(build, "bench")
text = open(os.path.join(build, "CMakeCache.txt")).read()
src = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", text, re.M).group(1)
for name in re.findall(r"fusor_gpu_bench\((bench_gpu_\w+)", open(os.path.join(src, "bench", "CMakeLists.txt")).read()):
    found[name] = os.path.join(bench, name)
for name, path in sorted(found.items()):
    if mode == "--built" and not os.path.isfile(path):
        continue
    print(f"{name}\t{path}")
EOF
}

mapfile -t ENTRIES < <(list_binaries --all)
((${#ENTRIES[@]})) || die "no GPU targets found in $BUILD (CUDA not enabled there?)"
if ((!REUSE)); then
  TARGETS=()
  for e in "${ENTRIES[@]}"; do TARGETS+=("${e%%$'\t'*}"); done
  echo "gpu_bundle: building ${TARGETS[*]} (-j$JOBS, log: $BUILD/gpu_bundle_build.log)"
  nice -n 19 cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" >"$BUILD/gpu_bundle_build.log" 2>&1 ||
    die "build failed: tail of $BUILD/gpu_bundle_build.log:
$(tail -20 "$BUILD/gpu_bundle_build.log")"
fi
mapfile -t BUILT < <(list_binaries --built)
for need in test_cuda fuzz_gpu bench_gpu_ceilings bench_gpu_elementwise bench_gpu_contraction bench_gpu_attention \
  bench_gpu_reduction; do
  printf '%s\n' "${BUILT[@]}" | grep -q "^$need"$'\t' ||
    die "$need is not built in $BUILD (reuse a build made with -DFUSOR_BUILD_GPU_FUZZER=ON and CUDA, or drop --reuse)"
done

SRC="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt")"
[[ -d "$SRC" ]] || die "source directory of $BUILD not found ($SRC)"
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
# (rm -rf only on an earlier bundle or an empty folder)
if [[ -e "$OUT" && ! -f "$OUT/manifest.json" && -n "$(ls -A "$OUT" 2>/dev/null)" ]]; then
  die "--out $OUT exists and is not an earlier bundle (no manifest.json): not overwriting it"
fi
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/scripts" "$OUT/data/demo"
: >"$STAGE/binaries.tsv"
for e in "${BUILT[@]}"; do
  gzip -6 -n -c "${e#*$'\t'}" >"$OUT/bin/${e%%$'\t'*}.gz"
  printf '%s\n' "$e" >>"$STAGE/binaries.tsv"
done
# lib/: shared libraries the binaries need that the GPU machine's image
# lacks (the first GPU run found no libsleef.so.3 there and had to rebuild
# four binaries: 125 of its 465 s). Everything but the C/C++ runtime and
# CUDA's own libraries (the toolkit or PyTorch's wheels provide those) is
# copied as ldd resolves it here; gpu_suite.sh puts lib/ last on
# LD_LIBRARY_PATH, so the machine's own copy wins where it has one.
mkdir -p "$OUT/lib"
for e in "${BUILT[@]}"; do
  ldd "${e#*$'\t'}" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r soname path; do
  case "$soname" in
    linux-vdso* | ld-linux* | libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | libstdc++.so* | \
      libgcc_s.so* | libgomp.so* | libz.so* | libcuda.so* | libcudart* | libcublas* | libcudnn* | libnvrtc* | \
      libnvJitLink* | libcufft* | libcurand* | libcusparse* | libcusolver*) ;;
    # seen resolving on the GPU image (2026-12-04), and 40 MB: not copied
    libopenblas.so* | libgfortran.so* | libquadmath.so*) ;;
    *) cp -L "$path" "$OUT/lib/$soname" ;;
  esac
done
cp -p "$SRC/bench/gpu_suite.sh" "$SRC/bench/peers/torch_baselines.py" "$SRC/tools/gpu_report.py" \
  "$SRC/examples/fusor_demo_check.cmake" "$OUT/scripts/"
cp -p "$SRC"/examples/data/digits.csv.gz "$SRC"/examples/data/digits_cnn.safetensors \
  "$SRC"/examples/data/digits_torch_logits.bin "$OUT/data/demo/"

# src.tar.gz: the tree as built (git's view of it when it is a checkout) and
# deps/, the CMake packages the configure needs, copied with their layout
# below their install prefix (their config files find headers relative to
# themselves).
mkdir -p "$STAGE/fusor"
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$SRC" && git ls-files -co --exclude-standard -z | xargs -0 -r sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh |
    tar --null -T - -cf - | tar -xf - -C "$STAGE/fusor")
else
  tar -C "$SRC" --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$STAGE/fusor"
fi
python3 - "$BUILD/CMakeCache.txt" "$STAGE/fusor/deps" <<'EOF'
import os, re, shutil, sys
cache, deps = open(sys.argv[1]).read(), sys.argv[2]
def copy(src, dst):
    if os.path.isdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True)
    elif os.path.isfile(src):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)
prefixes = set()
for var in ("Catch2_DIR", "nlohmann_json_DIR"):
    m = re.search(rf"^{var}:PATH=(.*)$", cache, re.M)
    if not m or m.group(1).endswith("-NOTFOUND"):
        continue
    d = os.path.realpath(m.group(1))
    # the install prefix: the part before /lib/ or /share/
    cut = min((d.find(s) for s in ("/lib/", "/share/") if d.find(s) > 0), default=-1)
    if cut < 0:
        sys.exit(f"gpu_bundle: cannot place {var}={d} under a prefix")
    prefix = d[:cut]
    prefixes.add(prefix)
    copy(d, os.path.join(deps, os.path.relpath(d, prefix)))
    # the files its targets import (Catch2's libCatch2WithMain.a); headers below
    for f in os.listdir(d):
        if f.endswith(".cmake"):
            for rel in re.findall(r"\$\{_IMPORT_PREFIX\}/([^\";\s]+)", open(os.path.join(d, f)).read()):
                if not rel.startswith("include") and os.path.isfile(os.path.join(prefix, rel)):
                    copy(os.path.join(prefix, rel), os.path.join(deps, rel))
for prefix in prefixes:
    for h in ("catch2", "nlohmann"):
        copy(os.path.join(prefix, "include", h), os.path.join(deps, "include", h))
os.makedirs(os.path.join(deps, "include"), exist_ok=True)
EOF
tar -C "$STAGE" -czf "$OUT/src.tar.gz" fusor

# manifest.json
COMMIT="$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)"
DIRTY="$(git -C "$SRC" status --porcelain 2>/dev/null | head -1 || true)"  # untracked files count: they are built
NVCC_VERSION="$( ("$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")" --version 2>/dev/null || true) | tail -2 | tr '\n' ' ')"
python3 - "$OUT" "$BUILD" "$COMMIT" "${DIRTY:+1}" "$NVCC_VERSION" "$MAX_MB" "$REUSE" "$STAGE/binaries.tsv" <<'EOF'
import datetime, hashlib, json, os, platform, re, subprocess, sys
out, build, commit, dirty, nvcc, max_mb, reuse, binaries = sys.argv[1:9]
originals = dict(line.rstrip("\n").split("\t", 1) for line in open(binaries) if line.strip())
cache = open(os.path.join(build, "CMakeCache.txt")).read()
def cache_var(name):
    m = re.search(rf"^{name}:[A-Z]+=(.*)$", cache, re.M)
    return m.group(1) if m else None
# the architectures really compiled: nvcc's -gencode / -arch flags of the build
gencode = set()
for root, _, files in os.walk(build):
    for f in files:
        if f in ("flags.make", "build.ninja"):
            text = open(os.path.join(root, f), errors="replace").read()
            gencode.update(re.findall(r"--generate-code=arch=\w+,code=\[[^\]]+\]", text))
            gencode.update(re.findall(r"(?<![\w-])-arch=(?:sm|compute)_\w+", text))
def needed(path):
    try:
        dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
files, total = [], 0
for root, _, names in sorted(os.walk(out)):
    for n in sorted(names):
        p = os.path.join(root, n)
        rel = os.path.relpath(p, out)
        if rel == "manifest.json":
            continue
        size = os.path.getsize(p)
        total += size
        kind = rel.split("/", 1)[0] if "/" in rel else "source"
        entry = {"path": rel, "bytes": size, "sha256": sha256(p), "kind": {"bin": "binary", "scripts": "script",
                 "data": "data", "lib": "library"}.get(kind, "source")}
        if entry["kind"] == "binary":
            name = n[:-3] if n.endswith(".gz") else n
            orig = originals[name]
            entry["unpacked"] = {"name": name, "bytes": os.path.getsize(orig), "sha256": sha256(orig), "needed": needed(orig),
                                 "built_at": orig}
        files.append(entry)
runtime = sorted({("shared" if any(l.startswith("libcudart") for l in (f["unpacked"].get("needed") or [])) else "static")
                  for f in files if f["kind"] == "binary"})
manifest = {
    "format": 1,
    "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "commit": commit,
    "uncommitted_changes": bool(dirty),
    "mode": "reuse" if reuse == "1" else "build",
    "build_dir": build,
    "build_type": cache_var("CMAKE_BUILD_TYPE"),
    "nvcc": nvcc.strip(),
    "cuda_architectures": cache_var("CMAKE_CUDA_ARCHITECTURES") or cache_var("FUSOR_CUDA_ARCHITECTURES"),
    "nvcc_arch_flags": sorted(gencode),
    "cuda_runtime": runtime[0] if len(runtime) == 1 else "mixed",
    "host": f"{platform.system()} {platform.release()} {platform.machine()}",
    "glibc": " ".join(platform.libc_ver()),
    "cxx_compiler": cache_var("CMAKE_CXX_COMPILER"),
    "total_bytes": total,
    "files": files,
}
with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
    f.write("\n")
limit = int(max_mb) * 1000 * 1000
print(f"gpu_bundle: {out}: {len(files)} files, {total / 1e6:.1f} MB (limit {max_mb} MB), commit {commit[:12]}"
      f"{' + uncommitted changes' if dirty else ''}, {nvcc.strip()}, arch flags: {' '.join(sorted(gencode)) or '?'}, "
      f"CUDA runtime {manifest['cuda_runtime']}")
if total > limit:
    sys.exit(f"gpu_bundle: the bundle is {total / 1e6:.1f} MB, over --max-mb {max_mb}")
EOF
