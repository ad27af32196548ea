#pragma once
// Block fuzzer (fuzz_blocks): fused host() vs unfused() around reductions,
// normalizations, contractions and attention. Non-template declarations
// shared by the case translation units (fuzz_blocks_part*.cpp, through
// fuzz_blocks_driver.hpp) and fuzz_blocks_main.cpp (geometry, values,
// comparison, main). The machinery of fuzz_support.hpp (random generator,
// layouts, buffers, collect, value text) is shared with fuzz_elementwise.
#include "fuzz_support.hpp"

#include <string>
#include <vector>

namespace fz {

/// The core op of a case; selects the geometry the driver draws and how
/// results are compared (fuzz_blocks_main.cpp).
enum class family {
  reduce,         ///< sum/mean/max/min/sum_square/l2/logsumexp over run-time axes; Aux: -1 keepdims, -2 keepdims
                  ///< and broadcast back against x, n > 0: n axes dropped
  softmax,        ///< softmax / log_softmax over a run-time axis
  layer_norm,     ///< layer_norm over the dims from a run-time axis
  rms_norm,       ///< rms_norm over the dims from a run-time axis
  instance_norm,  ///< instance_norm, x [N, C, ...]
  batch_norm,     ///< inference batch_norm (elementwise); Aux: channel axis (1 or -1)
  matmul,         ///< matmul with broadcast batch dims (w: b, or wt: b stored transposed)
  linear,         ///< linear(x, W, b) or matmul(x, transpose(W)) + b
  gemm,           ///< ONNX Gemm with run-time trans_a/trans_b, alpha, beta
  conv2d,         ///< conv2d, run-time stride/padding/dilation/groups/layout
  depthwise,      ///< depthwise_conv2d
  conv_bn,        ///< batch_norm(conv2d(...)): folded by host(); Aux: 0 nchw, 1 nhwc. Compared with a bound
  sdpa,           ///< scaled_dot_product_attention (bhsd, bshd, packed; GQA, causal, mask)
  attn_hand,      ///< matmul(softmax(matmul(q, transpose(k)) * s [+ mask]), v): recognised by host(). With a bound
  norm_linear,    ///< linear(layer_norm / rms_norm(x, ..., axis), W, b): the norm computed while loading A
  swiglu,         ///< silu(linear(x, W, b)) * linear(x, W3): two contractions
  linear_norm,    ///< layer_norm(linear(x, W, b) + r, g): GEMM + epilogue, then the row reduction
  dwpw,           ///< conv2d(clip(depthwise_conv2d(x, dw), 0, 6), pw 1x1): depthwise computed in pw's loads
  mha,            ///< multi_head_attention(x, weights, params) + x (packed heads, GQA)
  reduce_chain    ///< a reduction of softmax / of a sum, layer_norm of exp(x - max_reduce(x)): axes and axis drawn
};
const char* family_name(family f);

/// How an input's shape derives from the draw's geometry.
enum class role {
  x,         ///< the main operand (reduction/norm input, matmul a, linear x, gemm A, conv x, attention q)
  w,         ///< the second operand (matmul b, linear/conv W, gemm B, attention k, mha Wq)
  w2,        ///< a second weight (swiglu W3 [N, K], pointwise conv [P, C, 1, 1], mha Wo [E, E])
  wkv,       ///< mha Wk / Wv [Hkv * D, E]
  wt,        ///< matmul b stored transposed ([..., N, K]), used as fusor::transpose(w)
  v,         ///< attention v
  bias,      ///< linear [N] / conv [Cout] / mha [E] bias
  bias_kv,   ///< mha k/v bias [Hkv * D]
  gamma,     ///< layer/rms norm parameter: x's trailing dims, some 1
  chan,      ///< per-channel 1-D parameter [C] (batch/instance norm)
  var,       ///< per-channel running variance (values >= 0)
  like_x,    ///< broadcasts to x's shape (prologue operand)
  like_w,    ///< broadcasts to w's shape
  like_out,  ///< broadcasts to the core op's result (epilogue operand, gemm C)
  mask       ///< broadcasts to [B, Hq, Sq, Sk] (attention mask)
};

/// An input view type of a block case and its role.
template <class T, class Extents, role R>
struct bin {
  using type = T;
  using extents = Extents;
  static constexpr role which = R;
};
/// The static description of a block case: family, output element type, the
/// family's static parameter, the inputs.
template <family F, class Out, int Aux, class... In>
struct bcfg {
  static constexpr family fam = F;
  using out = Out;
  static constexpr int aux = Aux;
  using inputs = std::tuple<In...>;
};

/// Identity tag of the value `twice` shares.
struct tag_twice;
/// e used twice through a tag (fusor::tag): e's value is computed once, with
/// the reduction, contraction or attention inside it, and read by both
/// operands of the sum.
template <class E>
auto twice(const E& e) {
  const auto t = fusor::tag<tag_twice>(e);
  return t + fusor::abs(t);
}

/// Run-time attributes of one draw, read by the generated expressions.
struct battrs {
  fusor::axis_list axes;  ///< reduce
  bool keepdims = true, noop = false;
  int axis = -1;  ///< softmax / layer_norm / rms_norm
  float eps = 1e-5f;
  fusor::conv2d_params conv;
  fusor::conv2d_params conv2;  ///< the pointwise conv of dwpw (layout only)
  fusor::gemm_params gemm;
  fusor::attention_params att;
  float scale = 1.0f;  ///< hand-written attention
};

/// One draw of a block case.
struct block_draw : draw {
  family fam = family::reduce;
  int aux = 0;
  std::vector<role> roles;
  battrs at;
  std::string geometry;  ///< the drawn problem, for reports
  bool bounded = false;  ///< compared with an error bound (conv_bn, attn_hand), else bitwise
  /// Geometry the bounds need (conv: n, c, h, w, cout, kh, kw; attention: b, hq, hkv, sq, sk, d, dv).
  std::int64_t g[8] = {};
  using draw::draw;
};

/// Draws the geometry, the attributes, the input shapes, layouts and values.
void plan_block(block_draw& d, const options& o);
/// Draws the output view (layout, sentinel) for the result's type and shape.
void plan_block_output(block_draw& d, dt type, const std::vector<std::int64_t>& shape, const options& o);
/// Compares fused and unfused (and, for BN folding, the second fused run on
/// the same executor: `again`, else null); prints a report on failure.
bool judge_block(block_draw& d, run_outcome& fused, run_outcome& unfused, run_outcome* again,
                 const std::string& describe, const options& o);

void register_blocks_part0(registry& r);
void register_blocks_part1(registry& r);
void register_blocks_part2(registry& r);

}  // namespace fz
