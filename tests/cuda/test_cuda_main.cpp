// main() of test_cuda (compiled by the host compiler; the tests are in
// tests/cuda/test_cuda_*.cu). Without a usable CUDA device the executable prints why and
// exits with 77, which CTest reports as "skipped" (SKIP_RETURN_CODE).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <fusor/exec/cuda_backend.hpp>

#include <cstdio>

#ifndef FUSOR_TEST_CUDA_ARCHS
#define FUSOR_TEST_CUDA_ARCHS "sm_90"
#endif

int main(int argc, char** argv) {
  if (!fusor::cuda_device_available()) {
    std::printf("SKIPPED: no CUDA device present; test_cuda compiled for %s but not run\n", FUSOR_TEST_CUDA_ARCHS);
    std::fflush(stdout);
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
