#!/bin/sh
# ctest's wrapper of fuzz_gpu (fuzz.gpu, fuzz.gpu_can_fail):
#   sh fuzz_gpu_test.sh PATH/TO/fuzz_gpu [ARGS...]
# skips (exit 77, ctest SKIP_RETURN_CODE) when the target was not built:
# with -DFUSOR_BUILD_GPU_FUZZER=OFF it is not part of the default build.
exe=$1
shift
if [ ! -x "$exe" ]; then
  echo "fuzz_gpu: not built (FUSOR_BUILD_GPU_FUZZER=OFF; cmake --build BUILD --target fuzz_gpu), skipped"
  exit 77
fi
exec "$exe" "$@"
