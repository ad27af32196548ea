// PTX inspection, case 3: the chain of chain.cu run through the unfused
// reference executor on CUDA: every op is its own kernel, so the PTX holds one
// entry per op (7). The ops of this chain all differ in op or operand kinds,
// so no two of their kernels are the same template instantiation (identical
// instantiations would share one entry).
//
// Only compiled to PTX; the host function is never called.
#include <fusor/fusor.hpp>

namespace {
struct x_id;
}

void fusor_ptx_unfused(float* out, const float* x, const float* y, const float* z, long long n, cudaStream_t stream) {
  const auto X = fusor::device_view(x, n).with_id<x_id>();
  const auto Y = fusor::device_view(y, n);
  const auto Z = fusor::device_view(z, n);
  // 7 ops: mul, add, gelu, sigmoid, sub, relu, mul (keep FUSOR_PTX_UNFUSED_OPS in CMakeLists.txt equal)
  const auto e = fusor::relu(fusor::gelu(X * 2.0f + Y) - fusor::sigmoid(X)) * Z;
  static_assert(fusor::unfused_kernel_count<decltype(e)> == 7, "unfused: one kernel per op");
  fusor::run(fusor::device_view(out, n), e, fusor::unfused(fusor::cuda(stream)));
}
