// A CUDA translation unit using fusor, built by nvcc through fusor::fusor's
// usage requirements alone (C++20 included: the consumer sets no standard).
// run_consumer.cmake builds and links it; running it needs a GPU, so the
// install tests only build it. docs/user_guide.md, "Building a CUDA
// translation unit", shows these CMake lines.
#include <fusor/fusor.hpp>

#include <cuda_runtime.h>

#include <cstdio>

static_assert(__cplusplus >= 202002L, "fusor::fusor should bring C++20 to nvcc");

int main() {
  constexpr int n = 1 << 20;
  float *x = nullptr, *y = nullptr;
  if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess || cudaMalloc(&y, n * sizeof(float)) != cudaSuccess) {
    std::puts("no CUDA device: built, not run");
    return 0;
  }
  cudaMemset(x, 0, n * sizeof(float));
  const auto xv = fusor::device_view(static_cast<const float*>(x), n);
  const auto e = fusor::gelu(xv * 2.0f + 1.0f);
  static_assert(fusor::kernel_count<decltype(e)> == 1);  // one fused kernel
  const auto r = fusor::run(fusor::device_view(y, n), e, fusor::cuda());
  cudaDeviceSynchronize();
  std::printf("fusor %s (cuda): %zu kernel\n", FUSOR_VERSION_STRING, r.kernels);
  cudaFree(x);
  cudaFree(y);
  return 0;
}
