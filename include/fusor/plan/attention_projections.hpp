#pragma once
/// @file plan/attention_projections.hpp
/// Horizontal fusion of an attention block's Q/K/V projections into one
/// multi-output GEMM.
#include <fusor/plan/contraction_groups.hpp>

namespace fusor::detail {

// Horizontal fusion of an attention block's projections: when q, k and v
// are each a linear over the same input expression x (their own groups; x a
// view, or the GEMM's prologue such as rms_norm(x, g) or layer_norm), one
// multi-output GEMM computes all three (x read, and its prologue computed,
// once per row) and the attention kernel reads its three outputs. The type
// says the three inputs CAN be one value; whether they ARE (same tensors,
// same attributes: detail::same_value) is checked at run time, and if not
// the GEMMs run one after the other (issue 18, item 2).
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
      using SG = sibling_group<rule::contraction, decltype(fusor::get<0>(n.args).expr), decltype(fusor::get<1>(n.args).expr),
                               decltype(fusor::get<2>(n.args).expr)>;
      const SG set{{fusor::get<0>(n.args).expr, fusor::get<1>(n.args).expr, fusor::get<2>(n.args).expr}};
      return make_node_unchecked(n.op, sibling_output<0, SG>{set}, sibling_output<1, SG>{set}, sibling_output<2, SG>{set},
                                 fusor::get<3>(n.args));
    } else {
      return n;
    }
  } else {
    return n;
  }
}

}  // namespace fusor::detail
