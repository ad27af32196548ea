// PTX check: a shape op over a computed value (ops/view_map.hpp) is no kernel
// of its own: relu(permute(softmax(x, 1), {0, 2, 1}) + y) is the softmax's
// row kernel, then one elementwise kernel reading the softmax's temporary
// transposed (2 entries; compiled, never called).
#include <fusor/fusor.hpp>

static_assert(fusor::kernel_count<decltype(fusor::relu(
                  fusor::permute(fusor::softmax(fusor::device_view((const float*)nullptr, 2, 3, 4), 1), {0, 2, 1}) +
                  fusor::device_view((const float*)nullptr, 2, 4, 3)))> == 2);

void launch_view_map(cudaStream_t s, const float* x, const float* y, float* out, long n, long c, long l) {
  const auto e = fusor::relu(fusor::permute(fusor::softmax(fusor::device_view(x, n, c, l), 1), {0, 2, 1}) +
                             fusor::device_view(y, n, l, c));
  fusor::run(fusor::device_view(out, n, l, c), e, fusor::cuda(s));
}
