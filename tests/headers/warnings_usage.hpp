// Instantiates every kernel family's run path (elementwise, row reduction,
// GEMM/conv with a fused epilogue, attention, siblings) for one executor, so
// that the warnings test (tests/headers/CMakeLists.txt) sees fusor's
// templates instantiated, not only declared. Compiled with -Werror; never run.
#pragma once
#include <fusor/fusor.hpp>

#include <cstdint>

template <class Executor, class View>
std::size_t fusor_warnings_usage(const Executor& ex, View view, float* out, const float* in) {
  const auto x = view(in, 8, 16);
  const auto w = view(in, 32, 16);
  std::size_t k = 0;
  k += fusor::run(view(out, 8, 16), fusor::gelu(x * 2.0f + 1.0f), ex).kernels;
  k += fusor::run(view(out, 8, 16), fusor::layer_norm(x, nullptr, nullptr), ex).kernels;
  k += fusor::run(view(out, 8, 1), fusor::sum(fusor::exp(x), {1}), ex).kernels;
  k += fusor::run(view(out, 8, 32), fusor::relu(fusor::linear(x, w)), ex).kernels;
  const auto q = view(in, 1, 2, 8, 16);
  k += fusor::run(view(out, 1, 2, 8, 16), fusor::scaled_dot_product_attention(q, q, q), ex).kernels;
  const auto xc = view(in, 1, 4, 6, 6);
  const auto wc = view(in, 4, 4, 3, 3);
  k += fusor::run(view(out, 1, 4, 4, 4), fusor::relu(fusor::conv2d(xc, wc)), ex).kernels;
  k += fusor::run(fusor::outputs(view(out, 8, 16), view(out + 128, 8, 16)),
                  fusor::siblings(fusor::relu(x), fusor::sigmoid(x)), ex).kernels;
  // the row family's other kernels: pooling, group_norm, argmax, gather, resize, cumsum, one_hot, pad, concat
  k += fusor::run(view(out, 1, 4, 3, 3), fusor::max_pool2d(fusor::relu(xc), {.kernel = {2, 2}, .stride = {2, 2}}) * 2.0f, ex).kernels;
  k += fusor::run(view(out, 1, 4, 3, 3), fusor::avg_pool2d(xc, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}}), ex).kernels;
  k += fusor::run(view(out, 1, 4, 6, 6), fusor::silu(fusor::group_norm(xc, 2, nullptr, nullptr)), ex).kernels;
  k += fusor::run(view(out, 8, 1), fusor::argmax(x, 1) + 1.0f, ex).kernels;
  const auto ids = view(reinterpret_cast<const std::int32_t*>(in), 3);
  k += fusor::run(view(out, 3, 16), fusor::gather(x, ids, 0) * 2.0f, ex).kernels;
  const auto ids2 = view(reinterpret_cast<const std::int32_t*>(in), 8, 2);
  k += fusor::run(view(out, 8, 2), fusor::gather_elements(x, ids2, 1), ex).kernels;
  k += fusor::run(view(out, 1, 4, 12, 12), fusor::resize(xc, {.scale = {2, 2}, .mode = fusor::resize_mode::linear}), ex).kernels;
  k += fusor::run(view(out, 8, 16), fusor::cumsum(x, 1, true, true) * 2.0f, ex).kernels;
  k += fusor::run(view(out, 3, 5), fusor::one_hot(ids, 5) * 0.5f, ex).kernels;
  k += fusor::run(view(out, 1, 4, 8, 8), fusor::pad(xc, {1, 1, 1, 1}, fusor::pad_mode::reflect, 0, {2, 3}), ex).kernels;
  k += fusor::run(view(out, 16, 16), fusor::concat(0, x, fusor::relu(x)), ex).kernels;
  k += fusor::run(view(out, 8, 3), fusor::topk(x, 3) * 2.0f, ex).kernels;
  k += fusor::run(view(out, 8, 1), fusor::layer_norm_inv_std_dev(x, -1, 1e-5f), ex).kernels;
  k += fusor::run(view(out, 1, 4, 12, 12), fusor::relu(fusor::conv_transpose2d(xc, wc, nullptr, {.stride = {2, 2}, .padding = {1, 1, 1, 1}, .output_padding = {1, 1}})), ex).kernels;
  return k;
}
