// PTX check: two reduction groups, each one kernel entry: a softmax over the
// last axis, and sum(relu(x) * 2) over axis 1 with its elementwise prologue
// fused in (compiled, never called).
#include <fusor/fusor.hpp>

static_assert(fusor::kernel_count<decltype(fusor::softmax(fusor::device_view((const float*)nullptr, 2, 3), -1))> == 1);
static_assert(fusor::kernel_count<decltype(fusor::sum(fusor::relu(fusor::device_view((const float*)nullptr, 2, 3)) * 2.0f,
                                                      {1}, true))> == 1);

void launch_reductions(cudaStream_t s, const float* x, float* y, long rows, long cols) {
  auto xv = fusor::device_view(x, rows, cols);
  fusor::run(fusor::device_view(y, rows, cols), fusor::softmax(xv, -1), fusor::cuda(s));
  fusor::run(fusor::device_view(y, rows, 1), fusor::sum(fusor::relu(xv) * 2.0f, {1}, true), fusor::cuda(s));
}
