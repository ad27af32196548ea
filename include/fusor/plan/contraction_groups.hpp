#pragma once
/// @file plan/contraction_groups.hpp
/// Group formation of the contraction family: an epilogue region above the
/// first spine contraction, the contraction, prologue regions in its operands;
/// the epilogue region of a reduction group.
#include <fusor/plan/absorb.hpp>

namespace fusor::detail {

// Contraction groups (rule::contraction): an epilogue region above the
// first spine contraction, the contraction, and prologue regions in its
// operands (see rule::contraction).
template <class E>
inline constexpr bool is_norm_node_v = false;
template <class X, class G, class B>
inline constexpr bool is_norm_node_v<node<op::layer_norm, X, G, B>> = true;
template <class X, class G>
inline constexpr bool is_norm_node_v<node<op::rms_norm, X, G>> = true;
template <class E>
inline constexpr bool is_conv_node_v = false;
template <class Op, class... A>
inline constexpr bool is_conv_node_v<node<Op, A...>> = is_conv_op_v<Op>;
template <class Op>
inline constexpr bool takes_norm_prologue_v =
    std::is_same_v<Op, op::linear> || std::is_same_v<Op, op::matmul> || std::is_same_v<Op, op::gemm>;

/// Depthwise convs reachable through elementwise nodes only (a consumer conv
/// may compute them while loading).
template <class E>
inline constexpr int spine_convs_v = 0;
template <class Op, class... A>
inline constexpr int spine_convs_v<node<Op, A...>> =
    std::is_same_v<Op, op::depthwise_conv2d> ? 1
    : is_contraction_node_v<node<Op, A...>>   ? 0
    : (is_elementwise_node_v<node<Op, A...>> ? (0 + ... + (is_named_expensive_v<A> ? 0 : spine_convs_v<A>)) : 0);
template <class X>
inline constexpr int spine_convs_v<node<op::materialize, X>> = 0;
template <class X>
inline constexpr int spine_convs_v<node<op::cache_weights, X>> = 0;

template <class Policy, bool AllowConv, class C>
auto plan_contraction_core(const C& c);

/// An operand of a contraction: elementwise producers are absorbed (its
/// loads evaluate them); with AllowConv a conv reached through elementwise
/// ops is computed inside the loads (depthwise -> pointwise); anything else
/// gets its own kernel.
template <class Policy, bool AllowConv, class E>
auto plan_prologue(const E& e) {
  if constexpr (!is_node_v<E> || is_transpose_leaf_v<E>) {
    return e;
  } else if constexpr (is_hint_v<E>) {
    return mark_split<hint_reason<E>>(plan_expr<Policy>(fusor::get<0>(e.args)));
  } else if constexpr (is_view_map_node_v<E>) {
    // a shape op of a computed value: the value's temporary read re-strided
    // by the contraction's loads (no copy kernel)
    return plan_view_map<Policy>(e);
  } else if constexpr (is_named_expensive_v<E>) {
    return mark_split<reason::expensive_producer>(plan_expr<Policy>(e));
  } else if constexpr (is_producer_epilogue_v<E> && !(AllowConv && spine_convs_v<E> == 1)) {
    return mark_split<reason::producer_epilogue>(plan_expr<Policy>(e));
  } else if constexpr (AllowConv && is_depthwise_node_v<E>) {
    return plan_contraction_core<Policy, false>(e);
  } else if constexpr (AllowConv && is_elementwise_node_v<E> && spine_contractions_v<E> == 1 && spine_convs_v<E> == 1) {
    return rebuild(e, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
      if constexpr (spine_convs_v<K> == 1) return plan_prologue<Policy, true>(k);
      else return plan_prologue<Policy, false>(k);
    });
  } else if constexpr (is_elementwise_node_v<E> && spine_contractions_v<E> == 0) {
    return plan_inside<Policy, rule::elementwise_chain>(e);
  } else if constexpr (is_elementwise_node_v<E> || is_expensive_node_v<E>) {
    return mark_split<reason::expensive_producer>(plan_expr<Policy>(e));
  } else {
    return plan_expr<Policy>(e);
  }
}

/// The contraction node itself: A may carry a norm (linear/matmul/gemm) or,
/// with AllowConv, a conv (conv2d consumer); other operands are plain.
template <class Policy, bool AllowConv, class C>
auto plan_contraction_core(const C& c) {
  using Op = typename C::op_type;
  return rebuild(c, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
    if constexpr (I == 0 && is_norm_node_v<K> && takes_norm_prologue_v<Op>) {
      return rebuild(k, [&]<class KK, std::size_t J>(const KK& kk, std::integral_constant<std::size_t, J>) {
        return plan_prologue<Policy, false>(kk);
      });
    } else {
      return plan_prologue<Policy, I == 0 && AllowConv && is_conv_op_v<Op>>(k);
    }
  });
}

/// Index of the first operand of node E whose spine holds a contraction
/// (Reductions = false) or a reduction (true); the arity when none does.
template <class E, bool Reductions>
inline constexpr int first_spine_operand_v = 0;
template <class Op, class... A, bool Reductions>
inline constexpr int first_spine_operand_v<node<Op, A...>, Reductions> = [] {
  constexpr int spines[] = {(Reductions ? operand_spine_reductions_v<A> : operand_spine_contractions_v<A>)..., 1};
  int i = 0;
  while (i < int(sizeof...(A)) && spines[i] == 0) ++i;
  return i;
}();

/// The epilogue region: elementwise ops down to the first spine contraction.
template <class Policy, class E>
auto plan_epilogue(const E& e) {
  if constexpr (is_contraction_node_v<E>) {
    return plan_contraction_core<Policy, true>(e);
  } else {
    constexpr int first = first_spine_operand_v<E, false>;
    return rebuild(e, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
      if constexpr (int(I) == first && !is_hint_v<K>) return plan_epilogue<Policy>(k);
      else return plan_prologue<Policy, false>(k);
    });
  }
}

/// The epilogue region of a reduction group: elementwise ops down to the
/// spine reduction, which keeps its own elementwise prologue.
template <class Policy, class E>
auto plan_reduction_epilogue(const E& e) {
  if constexpr (is_reduction_node_v<E>) {
    return plan_inside<Policy, rule::reduction>(e);
  } else {
    constexpr int first = first_spine_operand_v<E, true>;
    return rebuild(e, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
      if constexpr (int(I) == first && !is_hint_v<K>) return plan_reduction_epilogue<Policy>(k);
      else return plan_prologue<Policy, false>(k);
    });
  }
}

}  // namespace fusor::detail
