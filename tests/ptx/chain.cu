// PTX inspection, case 1: a 6+ op elementwise chain must compile to exactly
// one kernel entry (one fused group), with 64-bit index arithmetic.
//
// This file is only compiled to PTX (nvcc -ptx); the host function below is
// never called. Its only purpose is to instantiate fusor::run on the CUDA
// executor, which instantiates the __global__ kernel(s) the plan launches.
#include <fusor/fusor.hpp>

namespace {
struct x_id;  // x appears twice: one tensor, one load per element
}

void fusor_ptx_chain(float* out, const float* x, const float* y, const float* z, long long n, cudaStream_t stream) {
  const auto X = fusor::device_view(x, n).with_id<x_id>();
  const auto Y = fusor::device_view(y, n);
  const auto Z = fusor::device_view(z, n);
  // 7 ops: mul, add, gelu, sigmoid, sub, relu, mul
  const auto e = fusor::relu(fusor::gelu(X * 2.0f + Y) - fusor::sigmoid(X)) * Z;
  static_assert(fusor::kernel_count<decltype(e)> == 1, "the chain must plan to one fused kernel");
  fusor::run(fusor::device_view(out, n), e, fusor::cuda(stream));
}
