#!/usr/bin/env bash
# Configures, builds (2 jobs) and runs fusor's whole test suite with ctest:
# the numerics, error, reliability, planner and conformance tests and the
# examples built with -fsanitize=address,undefined (issues 8 and 24), the
# rest optimized, and test_reliability once more with -fsanitize=thread.
# FUSOR_SKIP_SANITIZE=1 skips the sanitizer builds and runs everything
# optimized instead.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
build=${FUSOR_BUILD_DIR:-build}
# ASan + UBSan (below): the numerics tests of the reduction, contraction and
# attention kernels, test_host (elementwise ops, fusion, every error path),
# test_reliability (threads, cache keys, sizes, allocation failures), the
# planner's run-time tests, the ONNX conformance tests of reductions,
# shape ops and contractions, and the examples.
# These are built and run only with the sanitizers (unless
# FUSOR_SKIP_SANITIZE=1): their optimized twins took ~1400 s of the main
# build's ~4700 s of compile CPU and check nothing the sanitized run does not
# (the fuzzers and every other test still run optimized).
# test_conformance_expanded (304 ONNX function bodies in two translation
# units of ~6 GB each) runs optimized: built with ASan it took 10 min of the
# two cores (and passed, 2026-12-05), at -O1 4 min. So does test_conformance
# (the ONNX elementwise node cases: 276 cases over 11 dtypes, the same
# elementwise kernels test_host runs under ASan, checked for values): its
# ASan build took ~8.5 min of one core, -O1 3.5 min (CI was at 58 of its
# 60 minutes, 2026-12-05).
targets=(test_reductions test_contractions test_attention test_host test_reliability test_planner_runtime
         test_conformance_reductions test_conformance_contractions
         quickstart explain_demo custom_pattern dot_demo guide_snippets)
tests=(test_reductions test_contractions test_attention test_host test_reliability test_planner_runtime
       test_conformance_reductions test_conformance_contractions
       example.quickstart example.explain_demo example.custom_pattern example.dot_demo example.guide_snippets)
regex="^($(IFS='|'; echo "${tests[*]}"))\$"
sanitize=1
[[ "${FUSOR_SKIP_SANITIZE:-0}" == 1 ]] && sanitize=0

# FUSOR_BUILD_GPU_FUZZER=ON: CI compiles the GPU fuzzer (nvcc, ~5 min of CPU)
# so it cannot rot; it runs only where a GPU is present (bench/gpu_suite.sh).
if [[ $sanitize == 1 ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DFUSOR_BUILD_GPU_FUZZER=ON \
    "-DFUSOR_EXCLUDE_FROM_ALL=$(IFS=';'; echo "${targets[*]}")"
  cmake --build "$build" -j2
  ctest --test-dir "$build" --output-on-failure -j2 -E "$regex"
else
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DFUSOR_BUILD_GPU_FUZZER=ON -DFUSOR_EXCLUDE_FROM_ALL=
  cmake --build "$build" -j2
  ctest --test-dir "$build" --output-on-failure -j2
fi

if [[ $sanitize == 1 ]]; then
  san="${build}-sanitize"
  # (-O0: with ASan + UBSan, -O1 doubles the compile time of these
  # template-heavy TUs, 27 s against 15 s for tests/host/test_pad.cpp, while
  # -O0 runs them in seconds still; the sanitizers check the same code.)
  # One aggregate target (FUSOR_TARGET_SET): the listed targets build in
  # parallel (as separate --target goals they would build one by one).
  cmake -S . -B "$san" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG" -DFUSOR_SANITIZE=ON \
    -DFUSOR_ENABLE_CUDA=OFF -DFUSOR_BUILD_BENCH=OFF "-DFUSOR_TARGET_SET=$(IFS=';'; echo "${targets[*]}")"
  cmake --build "$san" -j2 --target fusor_target_set
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$san" -R "$regex" --output-on-failure -j2

  # ThreadSanitizer: one executor shared by 8 threads (test_reliability), in
  # a build without OpenMP (TSan does not instrument libgomp and would report
  # its barriers).
  tsan="${build}-tsan"
  cmake -S . -B "$tsan" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG" -DFUSOR_SANITIZE_THREAD=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON -DFUSOR_ENABLE_CUDA=OFF -DFUSOR_BUILD_EXAMPLES=OFF -DFUSOR_BUILD_BENCH=OFF
  cmake --build "$tsan" -j2 --target test_reliability
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --test-dir "$tsan" -R '^test_reliability$' --output-on-failure
fi
