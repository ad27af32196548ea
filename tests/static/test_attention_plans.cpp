// Compile-time plans of attention: scaled_dot_product_attention alone, the
// hand-written forms the fused planner recognises (matmul(softmax(q k^T
// [* s | / s | q-scaled] [+ mask]), v)), multi_head_attention with its
// horizontally fused Q/K/V projections, and cross attention (projections over
// different inputs: no horizontal fusion). Only types are inspected; nothing
// runs.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <type_traits>

using namespace fusor;

namespace {
using T4 = tensor_view<const float, dextents<4>>;  // [B, H, S, D] / [B, S, H, D] / masks [B, H, Sq, Sk]
using T3 = tensor_view<const float, dextents<3>>;  // [B, S, E] activations, packed heads
using T2 = tensor_view<const float, dextents<2>>;  // [out, in] weights, [Sq, Sk] masks
using T1 = tensor_view<const float, dextents<1>>;  // biases
const T4& q = *static_cast<const T4*>(nullptr);    // only used in decltype
const T4& k = *static_cast<const T4*>(nullptr);
const T4& v = *static_cast<const T4*>(nullptr);
const T4& m4 = *static_cast<const T4*>(nullptr);
const T3& x = *static_cast<const T3*>(nullptr);
const T3& q3 = *static_cast<const T3*>(nullptr);
const T2& W = *static_cast<const T2*>(nullptr);
const T2& m2 = *static_cast<const T2*>(nullptr);
const T1& b = *static_cast<const T1*>(nullptr);

// Cross attention: queries from x, keys and values from another tensor (the
// encoder output). Identity tags make "another tensor" a type-level fact.
struct Dec;
struct Enc;
using TX = tensor_view<const float, dextents<3>, host_space, Dec>;
using TY = tensor_view<const float, dextents<3>, host_space, Enc>;
const TX& xd = *static_cast<const TX*>(nullptr);
const TY& ye = *static_cast<const TY*>(nullptr);

const attention_params p{};
const float s = 0.125f;

template <class E>
using kernels = kernels_of_t<plan_t<E>>;
template <std::size_t I, class E, class Policy = fused_policy>
using kernel_rule = group_rule_t<kernel_t<I, plan_t<E, Policy>>>;
/// Rule R, or R as the rule of a group split off from its consumer (split_off<why, R>).
template <class X, class R>
inline constexpr bool is_rule_v = std::is_base_of_v<R, X>;

/// Does planned tree P contain a node of op Op (outside or inside groups)?
template <class Op, class P>
inline constexpr bool has_op = false;
template <class Op, class O, class... A>
inline constexpr bool has_op<Op, node<O, A...>> = std::is_same_v<Op, O> || (has_op<Op, A> || ...);
template <class Op, class R, class X>
inline constexpr bool has_op<Op, group<R, X>> = has_op<Op, X>;
template <class Op, class R, class... X>
inline constexpr bool has_op<Op, sibling_group<R, X...>> = (has_op<Op, X> || ...);

/// Number of operands of planned tree P read from a multi-output kernel
/// (sibling_output): 3 when the Q/K/V projections share one GEMM.
template <class P>
inline constexpr int sibling_outputs = 0;
template <class O, class... A>
inline constexpr int sibling_outputs<node<O, A...>> = (0 + ... + sibling_outputs<A>);
template <class R, class X>
inline constexpr int sibling_outputs<group<R, X>> = sibling_outputs<X>;
template <std::size_t I, class R, class... X>
inline constexpr int sibling_outputs<sibling_output<I, sibling_group<R, X...>>> = 1;
// (the fused form of a guarded plan: a residual add may broadcast, plan/plan_expr.hpp)
template <class F, class S>
inline constexpr int sibling_outputs<guarded_plan<F, S>> = sibling_outputs<F>;
}  // namespace

TEST_CASE("scaled_dot_product_attention is one flash-attention kernel", "[static][attention]") {
  using plain = decltype(scaled_dot_product_attention(q, k, v, p));
  STATIC_REQUIRE(kernel_count<plain> == 1);
  STATIC_REQUIRE(kernel_count<plain, host_policy> == 1);
  STATIC_REQUIRE(unfused_kernel_count<plain> == 1);  // the unfused executor runs the op as one kernel too
  STATIC_REQUIRE(std::is_same_v<root_rule_t<plain>, rule::attention>);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<plain, unfused_policy>, rule::single_attention>);

  using masked = decltype(scaled_dot_product_attention(q, k, v, p, m4));
  STATIC_REQUIRE(kernel_count<masked> == 1);
  using masked2 = decltype(scaled_dot_product_attention(q, k, v, p, m2));
  STATIC_REQUIRE(kernel_count<masked2> == 1);
  using packed = decltype(scaled_dot_product_attention(q3, q3, q3, p));
  STATIC_REQUIRE(kernel_count<packed> == 1);

  // Elementwise producers of the operands are loaded inside the kernel.
  using pro = decltype(scaled_dot_product_attention(q * 2.0f, k, v + 1.0f, p, m4 * 0.5f));
  STATIC_REQUIRE(kernel_count<pro> == 1);
  STATIC_REQUIRE(unfused_kernel_count<pro> == 4);
  // An elementwise consumer is its own kernel (attention has no epilogue).
  using epi = decltype(relu(scaled_dot_product_attention(q, k, v, p)));
  STATIC_REQUIRE(kernel_count<epi> == 2);
}

TEST_CASE("hand-written attention is recognised: one kernel fused, four or five unfused", "[static][attention]") {
  using mul = decltype(matmul(softmax(matmul(q, transpose(k)) * s, -1), v));
  STATIC_REQUIRE(kernel_count<mul> == 1);
  STATIC_REQUIRE(kernel_count<mul, host_policy> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<mul>, rule::attention>);
  STATIC_REQUIRE(unfused_kernel_count<mul> == 4);  // matmul, mul, softmax, matmul
  STATIC_REQUIRE(!has_op<op::attention, plan_t<mul, unfused_policy>>);  // never recognised by the reference

  using mul_left = decltype(matmul(softmax(s * matmul(q, transpose(k)), -1), v));
  STATIC_REQUIRE(kernel_count<mul_left> == 1);
  STATIC_REQUIRE(unfused_kernel_count<mul_left> == 4);

  using div = decltype(matmul(softmax(matmul(q, transpose(k)) / 8.0f, -1), v));
  STATIC_REQUIRE(kernel_count<div> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<div>, rule::attention>);
  STATIC_REQUIRE(unfused_kernel_count<div> == 4);

  using neg = decltype(matmul(softmax(matmul(q, transpose(k)) * -0.125f, -1), v));
  STATIC_REQUIRE(kernel_count<neg> == 1);

  using unscaled = decltype(matmul(softmax(matmul(q, transpose(k)), -1), v));
  STATIC_REQUIRE(kernel_count<unscaled> == 1);
  STATIC_REQUIRE(unfused_kernel_count<unscaled> == 3);  // matmul, softmax, matmul

  // The scale applied to q stays in q: an elementwise prologue of the kernel.
  using q_scaled = decltype(matmul(softmax(matmul(q * s, transpose(k)), -1), v));
  STATIC_REQUIRE(kernel_count<q_scaled> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<q_scaled>, rule::attention>);
  STATIC_REQUIRE(unfused_kernel_count<q_scaled> == 4);  // mul, matmul, softmax, matmul

  using masked = decltype(matmul(softmax(matmul(q, transpose(k)) * s + m4, -1), v));
  STATIC_REQUIRE(kernel_count<masked> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<masked>, rule::attention>);
  STATIC_REQUIRE(unfused_kernel_count<masked> == 5);  // matmul, mul, add, softmax, matmul

  using mask_first = decltype(matmul(softmax(m4 + matmul(q, transpose(k)) * s, -1), v));
  STATIC_REQUIRE(kernel_count<mask_first> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<mask_first>, rule::attention>);
  STATIC_REQUIRE(unfused_kernel_count<mask_first> == 5);

  using mask2 = decltype(matmul(softmax(matmul(q, transpose(k)) / 8.0f + m2, -1), v));
  STATIC_REQUIRE(kernel_count<mask2> == 1);
  STATIC_REQUIRE(unfused_kernel_count<mask2> == 5);

  // Rank 3 ([B, S, D]): one head.
  using one_head = decltype(matmul(softmax(matmul(q3, transpose(q3)) * s, -1), q3));
  STATIC_REQUIRE(kernel_count<one_head> == 1);
  STATIC_REQUIRE(unfused_kernel_count<one_head> == 4);

  // Positive last axis: still attention.
  using axis3 = decltype(matmul(softmax(matmul(q, transpose(k)) * s, 3), v));
  STATIC_REQUIRE(kernel_count<axis3> == 1);
}

TEST_CASE("multi_head_attention: Q/K/V in one multi-output GEMM, flash attention, out-projection (+ residual)",
          "[static][attention]") {
  const auto w = attention_weights{W, W, W, W, b, b, b, b};
  using mha = decltype(multi_head_attention(x, w, p));
  STATIC_REQUIRE(kernel_count<mha> == 3);
  STATIC_REQUIRE(kernel_count<mha, host_policy> == 3);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<mha>, rule::contraction>);
  STATIC_REQUIRE(std::is_same_v<kernel_rule<0, mha>, rule::contraction>);  // the Q/K/V GEMM (one sibling group)
  STATIC_REQUIRE(is_rule_v<kernel_rule<1, mha>, rule::attention>);
  STATIC_REQUIRE(std::is_same_v<kernel_rule<2, mha>, rule::contraction>);  // out-projection + bias
  STATIC_REQUIRE(sibling_outputs<plan_t<mha>> == 3);
  STATIC_REQUIRE(unfused_kernel_count<mha> == 5);  // q, k, v, attention, out
  STATIC_REQUIRE(sibling_outputs<plan_t<mha, unfused_policy>> == 0);

  using residual = decltype(x + multi_head_attention(x, w, p));
  STATIC_REQUIRE(kernel_count<residual> == 3);  // the residual add is the out-projection's epilogue
  STATIC_REQUIRE(std::is_same_v<root_rule_t<residual>, rule::contraction>);
  STATIC_REQUIRE(unfused_kernel_count<residual> == 6);

  // Without biases (nullptr): the same three kernels.
  const auto wn = attention_weights{W, W, W, W, nullptr, nullptr, nullptr, nullptr};
  using nobias = decltype(x + multi_head_attention(x, wn, p));
  STATIC_REQUIRE(kernel_count<nobias> == 3);

  // Written out by hand with linear(): the same plan.
  using by_hand = decltype(x + linear(scaled_dot_product_attention(linear(x, W, b), linear(x, W, b), linear(x, W, b), p),
                                      W, b));
  STATIC_REQUIRE(kernel_count<by_hand> == 3);
  STATIC_REQUIRE(sibling_outputs<plan_t<by_hand>> == 3);
}

TEST_CASE("Q/K/V after rms_norm or layer_norm: one multi-output GEMM with the norm as its prologue (issue 18, item 2)",
          "[static][attention]") {
  // Llama / pre-LN BERT: the projections read a normalization of x, not x.
  // The three inputs are one type, so they can be one value: one GEMM with
  // three outputs computes the norm once per row (the run-time check that
  // they are one value, and the fallback, are in tests/host/test_attention.cpp).
  const auto wn = attention_weights{W, W, W, W, nullptr, nullptr, nullptr, nullptr};
  using rms = decltype(x + multi_head_attention(rms_norm(x, b, 1e-6f), wn, p));
  STATIC_REQUIRE(kernel_count<rms> == 3);  // Q/K/V GEMM (rms_norm prologue), attention, out-projection + residual
  STATIC_REQUIRE(sibling_outputs<plan_t<rms>> == 3);
  STATIC_REQUIRE(std::is_same_v<kernel_rule<0, rms>, rule::contraction>);
  STATIC_REQUIRE(has_op<op::rms_norm, kernel_t<0, plan_t<rms>>>);
  STATIC_REQUIRE(unfused_kernel_count<rms> == 9);  // 3 norms, 3 GEMMs, attention, out-projection, add
  using ln = decltype(x + multi_head_attention(layer_norm(x, b, b), wn, p));
  STATIC_REQUIRE(kernel_count<ln> == 3);
  STATIC_REQUIRE(sibling_outputs<plan_t<ln>> == 3);
  // Different prologue types (rms_norm for q, layer_norm for k and v) are
  // never one value: three GEMMs.
  using mixed = decltype(linear(scaled_dot_product_attention(linear(rms_norm(x, b), W), linear(layer_norm(x, b, b), W),
                                                             linear(layer_norm(x, b, b), W), p),
                                W));
  STATIC_REQUIRE(kernel_count<mixed> == 5);
  STATIC_REQUIRE(sibling_outputs<plan_t<mixed>> == 0);
}

TEST_CASE("cross attention: projections over different inputs are not fused horizontally", "[static][attention]") {
  // q from the decoder stream, k and v from the encoder output.
  using cross = decltype(linear(scaled_dot_product_attention(linear(xd, W, b), linear(ye, W, b), linear(ye, W, b), p), W, b));
  STATIC_REQUIRE(kernel_count<cross> == 5);  // q, k, v GEMMs + attention + out-projection
  STATIC_REQUIRE(sibling_outputs<plan_t<cross>> == 0);
  STATIC_REQUIRE(is_rule_v<kernel_rule<3, cross>, rule::attention>);
  using cross_res = decltype(xd + linear(scaled_dot_product_attention(linear(xd, W, b), linear(ye, W, b), linear(ye, W, b), p),
                                         W, b));
  STATIC_REQUIRE(kernel_count<cross_res> == 5);

  // The projections over one input but different weights still fuse (one GEMM, three outputs).
  using self = decltype(linear(scaled_dot_product_attention(linear(xd, W, b), linear(xd, W, b), linear(xd, W, b), p), W, b));
  STATIC_REQUIRE(kernel_count<self> == 3);

  // Untagged views of one type cannot be told apart at compile time: the plan
  // keeps the multi-output GEMM (kernel_count 3) and the executor checks at
  // run time whether the three inputs are the same tensor; if not, it runs the
  // three GEMMs one after the other and run() reports 5 kernels
  // (tests/host/test_attention.cpp checks that).
  using untagged = decltype(linear(scaled_dot_product_attention(linear(x, W, b), linear(q3, W, b), linear(q3, W, b), p), W, b));
  STATIC_REQUIRE(kernel_count<untagged> == 3);
  STATIC_REQUIRE(sibling_outputs<plan_t<untagged>> == 3);
}
