#pragma once
/// @file plan/attention_projections.hpp
/// Horizontal fusion of an attention block's Q/K/V projections into one
/// multi-output GEMM.
#include <fusor/plan/contraction_groups.hpp>
#include <fusor/recognize/same_value.hpp>

namespace fusor::detail {

// Horizontal fusion of an attention block's projections: when q, k and v
// are each a linear over the same input expression x (their own groups; x a
// view, or the GEMM's prologue such as rms_norm(x, g) or layer_norm), one
// multi-output GEMM computes all three (x read, and its prologue computed,
// once per row) and the attention kernel reads its three outputs. The type
// says the three inputs CAN be one value; whether they ARE (same tensors,
// same attributes: detail::same_value) is checked when the plan is built
// (plan_guard::shared_projection_input), and if not the three GEMMs run one
// after the other (rule::separate_projections; issue 18, item 2).
template <class G>
struct projection_of {
  static constexpr bool ok = false;
  using input = void;
};
template <class R, class X, class W, class B>
struct projection_of<group<R, node<op::linear, X, W, B>>> {
  static constexpr bool ok = true;
  using input = X;
};
/// Do planned groups G... compute linears over one input type (so that one
/// multi-output GEMM can compute them)?
template <class G0, class... G>
inline constexpr bool shared_projection_input_v =
    projection_of<G0>::ok && ((projection_of<G>::ok && ...)) &&
    (std::is_same_v<typename projection_of<G0>::input, typename projection_of<G>::input> && ...);

/// The three linear group expressions x0, x1, x2 as one multi-output GEMM
/// when their inputs are one value at run time (detail::same_value), else
/// as one GEMM after another: a guarded plan whose branches write the three
/// outputs (plan_guard::shared_projection_input).
template <class X0, class X1, class X2>
auto projection_plan(const X0& x0, const X1& x1, const X2& x2) {
  using SG = sibling_group<rule::contraction, X0, X1, X2>;
  using SG3 = sibling_group<rule::separate_projections<rule::contraction>, X0, X1, X2>;
  const bool shared = same_value(fusor::get<0>(x0.args), fusor::get<0>(x1.args), same_shared_attributes{}) &&
                      same_value(fusor::get<0>(x0.args), fusor::get<0>(x2.args), same_shared_attributes{});
  return guarded_plan<SG, SG3>{SG{{x0, x1, x2}}, SG3{{x0, x1, x2}}, shared, plan_guard::shared_projection_input};
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
    using SG3 = std::remove_cvref_t<decltype(plan.written)>;
    auto output = [&]<std::size_t I>(std::integral_constant<std::size_t, I>) {
      return guarded_plan<sibling_output<I, SG>, sibling_output<I, SG3>>{
          {plan.recognized}, {plan.written}, plan.holds, plan_guard::shared_projection_input};
    };
    return make_node_unchecked(n.op, output(std::integral_constant<std::size_t, 0>{}),
                               output(std::integral_constant<std::size_t, 1>{}),
                               output(std::integral_constant<std::size_t, 2>{}), fusor::get<3>(n.args));
  } else {
    return n;
  }
}

/// Three sibling roots, each a linear over the same input expression
/// (`siblings(linear(n, wq), linear(n, wk), linear(n, wv))` with n =
/// rms_norm(x, g)): one multi-output GEMM writing the three outputs, n
/// computed once per row (issue 18, item 2: horizontal GEMMs outside
/// attention), guarded as above.
template <class Policy, class E0, class E1, class E2>
inline constexpr bool root_projections_v =
    shared_projection_input_v<decltype(plan_expr<Policy>(std::declval<const E0&>())),
                              decltype(plan_expr<Policy>(std::declval<const E1&>())),
                              decltype(plan_expr<Policy>(std::declval<const E2&>()))>;
/// root_projections_v of a siblings set (plan/plan.hpp plans such a set
/// without sharing the repeated input by value: the GEMM computes it once).
template <class Policy, class S>
inline constexpr bool root_projection_set_v = false;
template <class Policy, class E0, class E1, class E2>
inline constexpr bool root_projection_set_v<Policy, siblings_expr<E0, E1, E2>> =
    Policy::horizontal && root_projections_v<Policy, E0, E1, E2>;

template <class Policy, class E0, class E1, class E2>
auto fuse_root_projections(const E0& e0, const E1& e1, const E2& e2) {
  return projection_plan(plan_expr<Policy>(e0).expr, plan_expr<Policy>(e1).expr, plan_expr<Policy>(e2).expr);
}

}  // namespace fusor::detail
