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
};
template <class R, class X, class W, class B>
struct projection_of<group<R, node<op::linear, X, W, B>>> {
  static constexpr bool ok = true;
  using input = X;
};
template <class N>
auto fuse_attention_projections(const N& n) {
  using A = std::remove_cvref_t<decltype(n.args)>;
  using G0 = std::tuple_element_t<0, A>;
  using G1 = std::tuple_element_t<1, A>;
  using G2 = std::tuple_element_t<2, A>;
  if constexpr (projection_of<G0>::ok && projection_of<G1>::ok && projection_of<G2>::ok) {
    if constexpr (std::is_same_v<typename projection_of<G0>::input, typename projection_of<G1>::input> &&
                  std::is_same_v<typename projection_of<G0>::input, typename projection_of<G2>::input>) {
      const auto& x0 = fusor::get<0>(n.args).expr;
      const auto& x1 = fusor::get<1>(n.args).expr;
      const auto& x2 = fusor::get<2>(n.args).expr;
      using SG = sibling_group<rule::contraction, std::remove_cvref_t<decltype(x0)>, std::remove_cvref_t<decltype(x1)>,
                               std::remove_cvref_t<decltype(x2)>>;
      using SG3 = sibling_group<rule::separate_projections<rule::contraction>, std::remove_cvref_t<decltype(x0)>,
                                std::remove_cvref_t<decltype(x1)>, std::remove_cvref_t<decltype(x2)>>;
      const SG set{{x0, x1, x2}};
      const SG3 separate{{x0, x1, x2}};
      const bool shared = same_value(fusor::get<0>(x0.args), fusor::get<0>(x1.args), same_shared_attributes{}) &&
                          same_value(fusor::get<0>(x0.args), fusor::get<0>(x2.args), same_shared_attributes{});
      auto output = [&]<std::size_t I>(std::integral_constant<std::size_t, I>) {
        return guarded_plan<sibling_output<I, SG>, sibling_output<I, SG3>>{
            {set}, {separate}, shared, plan_guard::shared_projection_input};
      };
      return make_node_unchecked(n.op, output(std::integral_constant<std::size_t, 0>{}),
                                 output(std::integral_constant<std::size_t, 1>{}),
                                 output(std::integral_constant<std::size_t, 2>{}), fusor::get<3>(n.args));
    } else {
      return n;
    }
  } else {
    return n;
  }
}

}  // namespace fusor::detail
