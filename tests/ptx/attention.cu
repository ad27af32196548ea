// PTX inspection of the attention kernel family (kernels/attention.hpp), one
// nvcc -ptx run; tests/ptx/CMakeLists.txt counts the entries by name:
//
//   scaled_dot_product_attention(q, k, v, {.causal = true})   1 entry
//   the same over __half q, k, v                              1 entry, on
//       tensor cores (WMMA: mma.sync in the PTX)
//   multi_head_attention(x, w, {.heads = 8}) + x              3 entries: the
//       Q/K/V projections as one multi-output GEMM (concat_n_problem), the
//       flash attention, the output projection with bias + residual epilogue
//   the same over rms_norm(x, g)                              the Q/K/V GEMM
//       with the norm as its prologue (1 entry more)
//
// plus the out-projection's run-time alternative for an epilogue that would
// broadcast the product up (2 entries; see tests/ptx/CMakeLists.txt). This
// file is only compiled to PTX; the host functions are never called.
#include <fusor/fusor.hpp>

namespace {
using fusor::index_t;
}

void fusor_ptx_attention(float* o, const float* q, const float* k, const float* v, index_t b, index_t h, index_t s,
                         index_t d, cudaStream_t st) {
  const auto e = fusor::scaled_dot_product_attention(fusor::device_view(q, b, h, s, d), fusor::device_view(k, b, h, s, d),
                                                     fusor::device_view(v, b, h, s, d), {.causal = true});
  static_assert(fusor::kernel_count<decltype(e)> == 1);
  fusor::run(fusor::device_view(o, b, h, s, d), e, fusor::cuda(st));
}

void fusor_ptx_attention_f16(__half* o, const __half* q, const __half* k, const __half* v, index_t b, index_t h,
                             index_t s, index_t d, cudaStream_t st) {
  const auto e = fusor::scaled_dot_product_attention(fusor::device_view(q, b, h, s, d), fusor::device_view(k, b, h, s, d),
                                                     fusor::device_view(v, b, h, s, d), {.causal = true});
  static_assert(fusor::kernel_count<decltype(e)> == 1);
  fusor::run(fusor::device_view(o, b, h, s, d), e, fusor::cuda(st));
}

struct X;
void fusor_ptx_mha(float* y, const float* x, const float* wq, const float* wk, const float* wv, const float* wo,
                   const float* bq, const float* bk, const float* bv, const float* bo, index_t b, index_t s, index_t e,
                   cudaStream_t st) {
  const auto xv = fusor::device_view(x, b, s, e).with_id<X>();
  const auto W = [&](const float* p) { return fusor::device_view(p, e, e); };
  const auto B = [&](const float* p) { return fusor::device_view(p, e); };
  const auto w = fusor::attention_weights{W(wq), W(wk), W(wv), W(wo), B(bq), B(bk), B(bv), B(bo)};
  const auto expr = fusor::multi_head_attention(xv, w, {.heads = 8}) + xv;
  static_assert(fusor::kernel_count<decltype(expr)> == 3);
  fusor::run(fusor::device_view(y, b, s, e), expr, fusor::cuda(st));
}

// Llama / pre-LN form: the projections read rms_norm(x, g), not x. The three
// norms are one type, so Q/K/V stay one multi-output GEMM whose prologue is
// the norm (kernels::concat_n_problem over gemm problems with norm
// statistics), computed once per row of a tile (issue 18, item 2).
void fusor_ptx_mha_rms_norm(float* y, const float* x, const float* g, const float* wq, const float* wk, const float* wv,
                            const float* wo, const float* bq, const float* bk, const float* bv, const float* bo,
                            index_t b, index_t s, index_t e, cudaStream_t st) {
  const auto xv = fusor::device_view(x, b, s, e).with_id<X>();
  const auto W = [&](const float* p) { return fusor::device_view(p, e, e); };
  const auto B = [&](const float* p) { return fusor::device_view(p, e); };
  const auto w = fusor::attention_weights{W(wq), W(wk), W(wv), W(wo), B(bq), B(bk), B(bv), B(bo)};
  const auto expr = fusor::multi_head_attention(fusor::rms_norm(xv, fusor::device_view(g, e), 1e-6f), w, {.heads = 8}) + xv;
  static_assert(fusor::kernel_count<decltype(expr)> == 3);
  fusor::run(fusor::device_view(y, b, s, e), expr, fusor::cuda(st));
}
