// PTX inspection, case 2: two sibling expressions over one identity-tagged
// input, written to two outputs, must compile to exactly one (multi-output)
// kernel entry (horizontal fusion).
//
// Only compiled to PTX; the host function is never called.
#include <fusor/fusor.hpp>

namespace {
struct x_id;
}

void fusor_ptx_siblings(float* o1, float* o2, const float* x, const float* z, long long n, cudaStream_t stream) {
  const auto X = fusor::device_view(x, n).with_id<x_id>();
  const auto Z = fusor::device_view(z, n);
  fusor::run(fusor::outputs(fusor::device_view(o1, n), fusor::device_view(o2, n)),
             fusor::siblings(fusor::silu(X), fusor::sigmoid(X) * Z), fusor::cuda(stream));
}
