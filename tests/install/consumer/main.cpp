// Compiles and runs against an installed or add_subdirectory()'d fusor.
// run_consumer.cmake checks that the output contains "fusor <version>".
#include <fusor/fusor.hpp>

// What fusor's headers include from its dependencies must be reachable through
// fusor::fusor's usage requirements alone (the consumer adds no include dirs).
#include <cuda/std/mdspan>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>

// fusor::fusor carries cxx_std_20; the consumer does not ask for it itself.
static_assert(__cplusplus >= 202002L, "fusor::fusor should bring C++20");

int main() {
  std::printf("fusor %s\n", FUSOR_VERSION_STRING);
  return 0;
}
