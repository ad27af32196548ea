#pragma once
/// @file plan/attention_projections.hpp
/// Horizontal fusion of linears over one input into one multi-output GEMM:
/// an attention block's Q/K/V projections, sibling linears at a run's roots.
#include <fusor/pattern/spine.hpp>
#include <fusor/plan/contraction_groups.hpp>
#include <fusor/recognize/same_value.hpp>

namespace fusor::detail {

// Horizontal fusion of an attention block's projections: when q, k and v
// are each a linear (or a matmul of matrices) over the same input
// expression x (their own groups; x a view, or the GEMM's prologue such as
// rms_norm(x, g) or layer_norm), one multi-output GEMM computes all three
// (x read, and its prologue computed, once per row) and the attention
// kernel reads its three outputs. The type
// says the three inputs CAN be one value; whether they ARE (same tensors,
// same attributes: detail::same_value) is checked when the plan is built
// (plan_guard::shared_projection_input), and if not the three GEMMs run one
// after the other (rule::separate_projections; issue 18, item 2).
template <class C>
struct projection_contraction {
  static constexpr bool ok = false;
  using input = void;
};
// The input must be the GEMM's own prologue (a view, elementwise ops, a
// norm): one that reads a value a kernel of its own computes first
// (`linear(softmax(x), w)`) is a temporary per occurrence, which the
// same-input check cannot equate; such siblings are planned one by one,
// where the repeated producer is shared by value.
template <class X, class W, class B>
struct projection_contraction<node<op::linear, X, W, B>> {
  static constexpr bool ok = !has_kernel_operand_v<X>;
  using input = X;
};
// A matrix product of two matrices (no batch dims: every part then has the
// same M rows of the one A, whatever its B).
template <class X, class W>
struct projection_contraction<node<op::matmul, X, W>> {
  static constexpr bool ok = !has_kernel_operand_v<X> && rank_v<X> == 2 && rank_v<W> == 2;
  using input = X;
};
/// The spine contraction of contraction group expression E.
template <class E>
using spine_contraction_t = std::remove_cvref_t<decltype(spine_root<contraction_spine>(std::declval<const E&>()))>;
/// Is planned group G a contraction group whose spine is a linear (or a
/// matmul of matrices), with any epilogue (`relu(linear(n, w)) * s`: each
/// part of a multi-output GEMM keeps its own), and over which input? Not a
/// tagged value (a user's tag, or a repeat shared by value): it is computed
/// once and read by its name wherever it occurs, which a part of a
/// multi-output GEMM is not.
template <class G>
struct projection_of {
  static constexpr bool ok = false;
  using input = void;
};
template <class R, class E>
  requires(std::is_same_v<typename R::kernel, kernel_family::contraction> && spine_contractions_v<E> == 1 &&
           !value_naming_op<typename E::op_type>)
struct projection_of<group<R, E>> : projection_contraction<spine_contraction_t<E>> {};
/// The input (A operand) of projection group expression x.
template <class X>
const auto& projection_input(const X& x) {
  return fusor::get<0>(spine_root<contraction_spine>(x).args);
}
/// Do planned groups G... compute linears over one input type (so that one
/// multi-output GEMM can compute them)?
template <class G0, class... G>
inline constexpr bool shared_projection_input_v =
    projection_of<G0>::ok && ((projection_of<G>::ok && ...)) &&
    (std::is_same_v<typename projection_of<G0>::input, typename projection_of<G>::input> && ...);

/// The linear group expressions x0, x... as one multi-output GEMM when
/// their inputs are one value at run time (detail::same_value), else as one
/// GEMM after another: a guarded plan whose branches write every output
/// (plan_guard::shared_projection_input).
template <class X0, class... X>
auto projection_plan(const X0& x0, const X&... x) {
  constexpr int n = 1 + int(sizeof...(X));
  using SG = sibling_group<rule::contraction, X0, X...>;
  using SGn = sibling_group<rule::separate_projections<rule::contraction, n>, X0, X...>;
  const bool shared =
      (same_value(projection_input(x0), projection_input(x), same_shared_attributes{}) && ...);
  return guarded_plan<SG, SGn>{SG{{x0, x...}}, SGn{{x0, x...}}, shared, plan_guard::shared_projection_input};
}

template <class N>
auto fuse_attention_projections(const N& n) {
  using A = std::remove_cvref_t<decltype(n.args)>;
  using G0 = std::tuple_element_t<0, A>;
  using G1 = std::tuple_element_t<1, A>;
  using G2 = std::tuple_element_t<2, A>;
  if constexpr (shared_projection_input_v<G0, G1, G2>) {
    const auto plan = projection_plan(fusor::get<0>(n.args).expr, fusor::get<1>(n.args).expr, fusor::get<2>(n.args).expr);
    using SG = std::remove_cvref_t<decltype(plan.recognized)>;
    using SGn = std::remove_cvref_t<decltype(plan.written)>;
    auto output = [&]<std::size_t I>(std::integral_constant<std::size_t, I>) {
      return guarded_plan<sibling_output<I, SG>, sibling_output<I, SGn>>{
          {plan.recognized}, {plan.written}, plan.holds, plan_guard::shared_projection_input};
    };
    return make_node_unchecked(n.op, output(std::integral_constant<std::size_t, 0>{}),
                               output(std::integral_constant<std::size_t, 1>{}),
                               output(std::integral_constant<std::size_t, 2>{}), fusor::get<3>(n.args));
  } else {
    return n;
  }
}

/// Two or more sibling roots, each a linear (with any epilogue) over the
/// same input expression
/// (`siblings(linear(n, wq), linear(n, wk), linear(n, wv))` with n =
/// rms_norm(x, g); SwiGLU's `siblings(linear(n, w1), linear(n, w3))`): one
/// multi-output GEMM writing every output, n computed once per row (issue
/// 18, item 2: horizontal GEMMs outside attention), guarded as above.
template <class Policy, class... E>
inline constexpr bool root_projections_v =
    sizeof...(E) >= 2 && shared_projection_input_v<decltype(plan_expr<Policy>(std::declval<const E&>()))...>;
/// root_projections_v of a siblings set (plan/roots.hpp plans such a set as
/// fuse_root_projections; plan/plan.hpp plans it without sharing the
/// repeated input by value: the GEMM computes it once).
template <class Policy, class S>
inline constexpr bool root_projection_set_v = false;
template <class Policy, class... E>
inline constexpr bool root_projection_set_v<Policy, siblings_expr<E...>> =
    Policy::horizontal && root_projections_v<Policy, E...>;

template <class Policy, class... E>
auto fuse_root_projections(const E&... e) {
  return projection_plan(plan_expr<Policy>(e).expr...);
}

}  // namespace fusor::detail
