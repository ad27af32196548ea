// PTX inspection of the contraction kernel family (kernels/contraction.hpp):
// five fused contraction groups on the CUDA executor, all in this one file
// (one nvcc -ptx run); tests/ptx/CMakeLists.txt counts the kernel entries per
// group by their (mangled) names with check_ptx.cmake's MATCH option:
//
//   gelu(linear(x, W, b))                 f32    1 entry (bias + GELU epilogue)
//   relu(batch_norm(conv2d(x, w, b)))     f32    3 entries: the conv with the
//       ReLU epilogue, plus the 2 "prepared" elementwise kernels that fold the
//       batch norm into the conv's weight and bias (run on the first run()
//       only and cached by the executor; kernel_count<E> == 1 does not count
//       them, but they are instantiated, so they are in the PTX)
//   linear(layer_norm(x, g, beta), W, b)  f32    1 entry (LayerNorm prologue)
//   conv2d(clip(depthwise_conv2d(x, wd, bd), 0, 6), wp, bp)
//                                         f32    1 entry (the depthwise conv
//       computed inside the pointwise conv's loads; wp is 1x1 by its static
//       extents; no batch norm here, which would be folded into the depthwise
//       weights: 2 prepared kernels more)
//   gelu(linear(x, W, b))                 f16    1 entry, on tensor cores
//       (the PTX holds wmma.mma.sync)
//   siblings(linear(n, Wq), linear(n, Wk), linear(n, Wv)), n = rms_norm(x, g)
//                                         f32    1 entry: one multi-output
//       GEMM (concat_n_problem over norm-operand problems); its run-time
//       fallback, three GEMMs, launches that same entry three times
//
// A conv group's run-time "direct" mode (fewer than 16 output channels per
// conv group) is a branch inside its one fused_gemm entry. So 8 entries in
// all: 6 fused_gemm (one per group) and 2 fused_elementwise (the batch-norm
// folding), plus the engine's epilogue kernels (tests/ptx/CMakeLists.txt). This file is only compiled to PTX; the host functions are never
// called.
#include <fusor/fusor.hpp>

namespace {
using fusor::index_t;
}

void fusor_ptx_linear_gelu_f32(float* y, const float* x, const float* w, const float* b, index_t m, index_t n,
                               index_t k, cudaStream_t s) {
  const auto e = fusor::gelu(fusor::linear(fusor::device_view(x, m, k), fusor::device_view(w, n, k),
                                           fusor::device_view(b, n)));
  static_assert(fusor::kernel_count<decltype(e)> == 1);
  fusor::run(fusor::device_view(y, m, n), e, fusor::cuda(s));
}

void fusor_ptx_conv_bn_relu_f32(float* y, const float* x, const float* w, const float* b, const float* gamma,
                                const float* beta, const float* mean, const float* var, index_t n, index_t c,
                                index_t h, index_t wd, index_t cout, cudaStream_t s) {
  const auto cv = [&](const float* p) { return fusor::device_view(p, cout); };
  const auto e = fusor::relu(fusor::batch_norm(
      fusor::conv2d(fusor::device_view(x, n, c, h, wd), fusor::device_view(w, cout, c, 3, 3), cv(b),
                    {.padding = {1, 1, 1, 1}}),
      fusor::batch_norm_params{cv(gamma), cv(beta), cv(mean), cv(var)}));
  static_assert(fusor::kernel_count<decltype(e)> == 1);  // the folded weights are prepared, not counted
  fusor::run(fusor::device_view(y, n, cout, h, wd), e, fusor::cuda(s));
}

void fusor_ptx_layer_norm_linear_f32(float* y, const float* x, const float* g, const float* beta, const float* w,
                                     const float* b, index_t m, index_t n, index_t k, cudaStream_t s) {
  const auto e = fusor::linear(
      fusor::layer_norm(fusor::device_view(x, m, k), fusor::device_view(g, k), fusor::device_view(beta, k)),
      fusor::device_view(w, n, k), fusor::device_view(b, n));
  static_assert(fusor::kernel_count<decltype(e)> == 1);
  fusor::run(fusor::device_view(y, m, n), e, fusor::cuda(s));
}

void fusor_ptx_depthwise_pointwise_f32(float* y, const float* x, const float* wd, const float* bd, const float* wp,
                                       const float* bp, index_t n, index_t c, index_t h, index_t wdt, index_t cout,
                                       cudaStream_t s) {
  const auto dw = fusor::depthwise_conv2d(fusor::device_view(x, n, c, h, wdt), fusor::device_view(wd, c, 1, 3, 3),
                                          fusor::device_view(bd, c), {.padding = {1, 1, 1, 1}});
  // The pointwise weight is 1x1 by its type (static extents): a depthwise
  // conv under a conv that is not 1x1 is materialized first (2 more kernels,
  // chosen at run time for dynamic extents, so then also in the PTX).
  const auto wpv = fusor::device_view(wp, fusor::extents<fusor::dyn, fusor::dyn, 1, 1>(cout, c));
  const auto e = fusor::conv2d(fusor::clip(dw, 0.0f, 6.0f), wpv, fusor::device_view(bp, cout));
  static_assert(fusor::kernel_count<decltype(e)> == 1);
  fusor::run(fusor::device_view(y, n, cout, h, wdt), e, fusor::cuda(s));
}

void fusor_ptx_linear_gelu_f16(__half* y, const __half* x, const __half* w, const __half* b, index_t m, index_t n,
                               index_t k, cudaStream_t s) {
  const auto e = fusor::gelu(fusor::linear(fusor::device_view(x, m, k), fusor::device_view(w, n, k),
                                           fusor::device_view(b, n)));
  static_assert(fusor::kernel_count<decltype(e)> == 1);
  fusor::run(fusor::device_view(y, m, n), e, fusor::cuda(s));
}

void fusor_ptx_sibling_linears_rms_norm(float* q, float* k, float* v, const float* x, const float* g, const float* wq,
                                        const float* wk, const float* wv, index_t m, index_t n, index_t nkv, index_t d,
                                        cudaStream_t s) {
  const auto nx = fusor::rms_norm(fusor::device_view(x, m, d), fusor::device_view(g, d), 1e-6f);
  const auto set = fusor::siblings(fusor::linear(nx, fusor::device_view(wq, n, d)),
                                   fusor::linear(nx, fusor::device_view(wk, nkv, d)),
                                   fusor::linear(nx, fusor::device_view(wv, nkv, d)));
  fusor::run(fusor::outputs(fusor::device_view(q, m, n), fusor::device_view(k, m, nkv), fusor::device_view(v, m, nkv)),
             set, fusor::cuda(s));
}

void fusor_ptx_sibling_linears_swiglu(float* a, float* b, const float* x, const float* g, const float* w1,
                                      const float* w3, index_t m, index_t f, index_t d, cudaStream_t s) {
  const auto nx = fusor::rms_norm(fusor::device_view(x, m, d), fusor::device_view(g, d), 1e-6f);
  const auto set = fusor::siblings(fusor::linear(nx, fusor::device_view(w1, f, d)),
                                   fusor::linear(nx, fusor::device_view(w3, f, d)));
  fusor::run(fusor::outputs(fusor::device_view(a, m, f), fusor::device_view(b, m, f)), set, fusor::cuda(s));
}
