#!/usr/bin/env bash
# Configures, builds (2 jobs) and runs fusor's whole test suite with ctest,
# then builds the reduction, contraction, attention and host (errors) tests again
# with -fsanitize=address,undefined and runs them (issue 8: sanitizers in CI). FUSOR_SKIP_SANITIZE=1 skips the
# second part.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
build=${FUSOR_BUILD_DIR:-build}
# FUSOR_BUILD_GPU_FUZZER=ON: CI compiles the GPU fuzzer (nvcc, ~5 min of CPU)
# so it cannot rot; it runs only where a GPU is present (bench/gpu_suite.sh).
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DFUSOR_BUILD_GPU_FUZZER=ON
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure -j2

if [[ "${FUSOR_SKIP_SANITIZE:-0}" != 1 ]]; then
  san="${build}-sanitize"
  # The numerics tests of the reduction, contraction and attention kernels,
  # and test_host (elementwise ops, fusion, every error path)
  # (one translation unit each, to keep CI within its time budget; -O1
  # compiles faster and still runs them in seconds).
  targets=(test_reductions test_contractions test_attention test_host)
  cmake -S . -B "$san" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" -DFUSOR_SANITIZE=ON \
    -DFUSOR_ENABLE_CUDA=OFF -DFUSOR_BUILD_EXAMPLES=OFF -DFUSOR_BUILD_BENCH=OFF
  cmake --build "$san" -j2 --target "${targets[@]}"
  regex="^($(IFS='|'; echo "${targets[*]}"))\$"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$san" -R "$regex" --output-on-failure -j2
fi
