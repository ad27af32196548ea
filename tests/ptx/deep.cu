// PTX inspection, deep expressions: nvcc's front end stops at about 256
// nested instantiations of functions with deduced return types, and fusor's
// recursive walks (planning, binding, the kernel tree's eval) nest a few
// per expression level (docs/compile_time.md, "nvcc"). This file must
// compile: a 128-op elementwise chain (one kernel: the register estimate
// counts live values, not ops) and eight transformer-like blocks
// (linear, gelu, residual, mean-centering, softmax, layer_norm, tanh) in one
// expression, 64 levels deep. Before the fix both failed to compile.
//
// Only compiled to PTX (nvcc -ptx); the host functions are never called.
#include <fusor/fusor.hpp>

namespace {
struct x_id;
struct y_id;
struct w_id;
struct b_id;
struct g_id;

// 4 ops per step: tanh(exp(e) * x + y).
template <int Steps, class E, class X, class Y>
auto long_chain(const E& e, const X& x, const Y& y) {
  if constexpr (Steps == 0) return e;
  else return long_chain<Steps - 1>(fusor::tanh(fusor::exp(e) * x + y), x, y);
}

// 8 ops per block, as in bench/compile/compile_bench.py's "net" shape.
template <int Blocks, class H, class X, class Y, class W, class B, class G>
auto blocks(const H& h, const X& x, const Y& y, const W& w, const B& b, const G& g) {
  if constexpr (Blocks == 0) {
    return h;
  } else {
    auto c = (fusor::gelu(fusor::linear(h, w, b)) + x) - fusor::mean(y, {-1});
    return blocks<Blocks - 1>(fusor::tanh(fusor::layer_norm(fusor::softmax(c), g, b)), x, y, w, b, g);
  }
}
}  // namespace

void fusor_ptx_deep_chain(float* out, const float* x, const float* y, long long n, cudaStream_t stream) {
  const auto X = fusor::device_view(x, n).with_id<x_id>();
  const auto Y = fusor::device_view(y, n).with_id<y_id>();
  const auto e = long_chain<32>(X, X, Y);  // 128 ops, 128 levels
  static_assert(fusor::kernel_count<decltype(e)> == 1, "a 128-op chain plans to one kernel on the H100 model");
  fusor::run(fusor::device_view(out, n), e, fusor::cuda(stream));
}

void fusor_ptx_deep_blocks(float* out, const float* x, const float* y, const float* w, const float* p,
                           cudaStream_t stream) {
  const auto X = fusor::device_view(x, 8, 64).with_id<x_id>();
  const auto Y = fusor::device_view(y, 8, 64).with_id<y_id>();
  const auto W = fusor::device_view(w, 64, 64).with_id<w_id>();
  const auto B = fusor::device_view(p, 64).with_id<b_id>();
  const auto G = fusor::device_view(p + 64, 64).with_id<g_id>();
  const auto e = blocks<8>(X, X, Y, W, B, G);  // 64 ops, 64 levels
  fusor::run(fusor::device_view(out, 8, 64), e, fusor::cuda(stream));
}
