#pragma once
/// @file plan/plan_expr.hpp
/// plan_expr: the planner's recursion over an expression (steps 1-3 at each
/// group root) and the kernel count of a planned tree.
#include <fusor/kernels/tuning/rows.hpp>
#include <fusor/plan/shared_producers.hpp>

namespace fusor::detail {

template <class Policy, class E>
auto plan_expr(const E& e);

/// The producer on epilogue E's spine, found as plan_epilogue /
/// plan_reduction_epilogue find it (first_spine_operand_v): a contraction
/// (Reductions = false) or a reduction.
template <bool Reductions, class E>
const auto& planned_spine_root(const E& e) {
  if constexpr (Reductions ? is_reduction_node_v<E> : is_contraction_node_v<E>) return e;
  else return planned_spine_root<Reductions>(fusor::get<std::size_t(first_spine_operand_v<E, Reductions>)>(e.args));
}
/// E with that producer replaced by r.
template <bool Reductions, class E, class Rep>
auto replace_planned_spine(const E& e, const Rep& r) {
  if constexpr (Reductions ? is_reduction_node_v<E> : is_contraction_node_v<E>) {
    return r;
  } else {
    constexpr int first = first_spine_operand_v<E, Reductions>;
    return rebuild(e, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
      if constexpr (int(I) == first) return replace_planned_spine<Reductions>(k, r);
      else return k;
    });
  }
}
/// True when an operand of epilogue E beside its spine may broadcast the
/// producer's result up to a larger shape (a non-scalar), which only the
/// run-time shapes decide.
template <bool Reductions, class E>
constexpr bool epilogue_may_broadcast_up() {
  if constexpr (Reductions ? is_reduction_node_v<E> : is_contraction_node_v<E>) {
    return false;
  } else {
    constexpr int first = first_spine_operand_v<E, Reductions>;
    return []<class Op, class... A>(std::type_identity<node<Op, A...>>) {
      return []<std::size_t... I>(std::index_sequence<I...>) {
        return ([] {
          using K = type_at_t<I, type_list<A...>>;
          if constexpr (int(I) == first) return epilogue_may_broadcast_up<Reductions, K>();
          else return !(is_scalar_v<K> || is_constant_v<K>);
        }() || ...);
      }(std::index_sequence_for<A...>{});
    }(std::type_identity<E>{});
  }
}

/// Contraction group `fused` (expression `inner`, planned from e), guarded
/// where its prologue fits only for some run-time attributes: a gemm norm
/// prologue (not with trans_a) and a depthwise conv inside a consumer conv's
/// loads (only when that conv is 1x1). The fallback computes A first, as its
/// own group.
template <class Policy, class R, class E, class X>
auto guard_contraction_prologue(const E& e, const X& inner) {
  const group<R, X> fused{inner};
  const auto& pc = planned_spine_root<false>(inner);
  using PC = std::remove_cvref_t<decltype(pc)>;
  using Op = typename PC::op_type;
  using PA = std::remove_cvref_t<decltype(fusor::get<0>(pc.args))>;
  auto split_a = [&]<reason Why>(std::integral_constant<reason, Why>) {
    const auto& c = planned_spine_root<false>(e);
    auto ag = mark_split<Why>(plan_expr<Policy>(fusor::get<0>(c.args)));
    auto c2 = fusor::apply([&](const auto&, const auto&... rest) { return make_node_unchecked(c.op, ag, rest...); }, c.args);
    auto inner2 = plan_epilogue<Policy>(replace_planned_spine<false>(e, c2));
    return group<R, decltype(inner2)>{inner2};
  };
  if constexpr (std::is_same_v<Op, op::gemm> && is_norm_node_v<PA>) {
    auto alt = split_a(std::integral_constant<reason, reason::transposed_norm_prologue>{});
    return guarded_plan<group<R, X>, decltype(alt)>{fused, alt, !pc.op.trans_a, plan_guard::norm_prologue_rows};
  } else if constexpr (is_conv_op_v<Op> && spine_contractions_v<PA> > 0) {
    using W = static_extents_t<std::remove_cvref_t<decltype(fusor::get<1>(pc.args))>>;
    if constexpr (W::static_extent(2) == 1 && W::static_extent(3) == 1) {
      return fused;  // 1x1 by its type
    } else {
      const auto ws = shape_of(fusor::get<1>(pc.args));
      auto alt = split_a(std::integral_constant<reason, reason::spatial_conv_prologue>{});
      return guarded_plan<group<R, X>, decltype(alt)>{fused, alt, ws[2] * ws[3] == 1, plan_guard::pointwise_consumer};
    }
  } else {
    return fused;
  }
}

/// The largest subtree on E's spine that keeps the spine producer's shape:
/// the topmost spine node with nothing but scalars and constants beside the
/// spine below it (f(mean(x)) in x * f(mean(x))).
template <bool Reductions, class E>
const auto& shape_keeping_root(const E& e) {
  if constexpr (!epilogue_may_broadcast_up<Reductions, E>()) return e;
  else return shape_keeping_root<Reductions>(fusor::get<std::size_t(first_spine_operand_v<E, Reductions>)>(e.args));
}
/// E with that subtree replaced by r.
template <bool Reductions, class E, class Rep>
auto replace_shape_keeping_root(const E& e, const Rep& r) {
  if constexpr (!epilogue_may_broadcast_up<Reductions, E>()) {
    return r;
  } else {
    constexpr int first = first_spine_operand_v<E, Reductions>;
    return rebuild(e, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
      if constexpr (int(I) == first) return replace_shape_keeping_root<Reductions>(k, r);
      else return k;
    });
  }
}

/// An epilogue group whose epilogue broadcasts its spine producer's result
/// up to a larger shape, split: the producer with the part of the epilogue
/// that keeps its shape (shape_keeping_root: computed once per produced
/// element, not per element of the consumer) as its own group, then the rest
/// as an elementwise group reading it (the same values; one more kernel).
template <class Policy, bool Reductions, class E>
auto plan_broadcast_split(const E& e) {
  auto pg = mark_split<reason::broadcast_epilogue>(plan_expr<Policy>(shape_keeping_root<Reductions>(e)));
  auto rest = replace_shape_keeping_root<Reductions>(e, pg);
  auto inner = plan_inside<Policy, rule::elementwise_chain>(rest);
  return group<rule::elementwise_chain, decltype(inner)>{inner};
}

/// Fused epilogue group `fused` of e, guarded where the run-time shapes
/// decide whether its epilogue keeps the producer's shape (the launcher
/// writes the epilogue at the producer's index): planned == launched.
template <class Policy, bool Reductions, class E, class G>
auto guard_broadcast_epilogue(const E& e, const G& fused) {
  const auto& producer = planned_spine_root<Reductions>(e);
  constexpr int RO = rank_v<E>, RP = rank_v<std::remove_cvref_t<decltype(producer)>>;
  if constexpr (RO != RP) {
    return plan_broadcast_split<Policy, Reductions>(e);
  } else if constexpr (!epilogue_may_broadcast_up<Reductions, E>()) {
    return fused;
  } else {
    // (rank 0: nothing to compare)
    const bool holds = RO == 0 || shape_of(producer) == shape_of(e);
    auto split = plan_broadcast_split<Policy, Reductions>(e);
    return guarded_plan<G, decltype(split)>{fused, split, holds, plan_guard::epilogue_keeps_shape};
  }
}

/// Plan p with its root group(s) run as split rows (rule::split_rows).
template <class P>
auto as_split_rows(const P& p) {
  constexpr plan_kind k = plan_kind_v<P>;
  if constexpr (k == plan_kind::group) {
    return [&]<class R, class X>(const group<R, X>& g) { return group<rule::split_rows<R>, X>{g.expr}; }(p);
  } else if constexpr (k == plan_kind::runtime_choice) {
    return runtime_choice<decltype(as_split_rows(p.first)), decltype(as_split_rows(p.second))>{as_split_rows(p.first),
                                                                                                as_split_rows(p.second)};
  } else {
    static_assert(k == plan_kind::guarded, "fusor: internal: as_split_rows: not a row-reduction plan");
    return guarded_plan<decltype(as_split_rows(p.recognized)), decltype(as_split_rows(p.written))>{
        as_split_rows(p.recognized), as_split_rows(p.written), p.holds, p.why};
  }
}

/// Plan p of row-family group rule R over e, guarded where its spine root is
/// a ReduceX (sum, mean, max_reduce, ...): one block per row when the rows
/// fill the device, else each row split into chunks (partials, then a
/// finalize: kernels::row_chunks of the run-time shape and axes, the same on
/// every executor). Decided here so that planned == launched.
template <class R, class E, class P>
auto guard_split_rows(const E& e, const P& p) {
  if constexpr (!std::is_same_v<typename R::kernel, kernel_family::reduction>) {
    return p;
  } else {
    const auto& red = planned_spine_root<true>(e);
    using Op = typename std::remove_cvref_t<decltype(red)>::op_type;
    using X = std::remove_cvref_t<decltype(fusor::get<0>(red.args))>;
    constexpr int RX = rank_v<X>;
    if constexpr (!requires { Op::which; } || RX == 0) {
      return p;
    } else {
      (void)shape_of(red);  // (a bad axis throws here, naming the input's shape)
      const shape<RX> in = shape_of(fusor::get<0>(red.args));
      const auto mask = red.op.template mask<RX>();
      index_t rows = 1, len = 1;
      for (int d = 0; d < RX; ++d) (mask[d] ? len : rows) *= in[d];
      const bool whole = kernels::row_chunks(rows, len) <= 1;
      auto split = as_split_rows(p);
      return guarded_plan<P, decltype(split)>{p, split, whole, plan_guard::whole_rows};
    }
  }
}

template <class Policy, class E>
auto plan_expr(const E& e) {
  if constexpr (!is_node_v<E>) {
    return e;
  } else if constexpr (is_hint_v<E>) {
    return plan_expr<Policy>(fusor::get<0>(e.args));  // a root is materialized anyway
  } else if constexpr (is_transpose_leaf_v<E>) {
    return e;  // a zero-copy view
  } else if constexpr (is_view_map_node_v<E>) {
    // A shape op over a computed value as a group's root: a copy kernel
    // reading the value's temporary through the view op.
    auto inner = plan_view_map<Policy>(e);
    return group<rule::elementwise_chain, decltype(inner)>{inner};
  } else {
    using R = matching_rule_t<E, typename Policy::rules>;
    static_assert(!std::is_void_v<R>, "fusor: plan: no fusion rule matches this op (see the expression type below)");
    if constexpr (requires { R::custom_group; }) {
      // A contraction group: its tile kernel recomputes nothing per element,
      // so budgets and shared-producer decisions do not apply.
      auto inner = plan_epilogue<Policy>(e);
      return guard_broadcast_epilogue<Policy, false>(e, guard_contraction_prologue<Policy, R>(e, inner));
    } else if constexpr (requires { R::reduction_epilogue; } && !is_reduction_node_v<E>) {
      auto inner = plan_reduction_epilogue<Policy>(e);
      return guard_broadcast_epilogue<Policy, true>(e, guard_split_rows<R>(e, group<R, decltype(inner)>{inner}));
    } else if constexpr (is_attention_node_v<E> && Policy::horizontal) {
      auto inner = fuse_attention_projections(plan_inside<Policy, R>(e));
      return group<R, decltype(inner)>{inner};
    } else {
      auto inner = plan_inside<Policy, R>(e);
      return guard_split_rows<R>(e, decide_shared<Policy>(group<R, decltype(inner)>{inner}));
    }
  }
}

// Kernels a plan launches per run: its kernel list (a bare view written to
// an output is a copy group, see as_output_plan); -1 when a run-time choice
// decides it.
template <class E, plan_kind K = plan_kind_v<E>>
inline constexpr int group_count = list_length<kernels_of_t<E>>;
template <class E>
inline constexpr int group_count<E, plan_kind::runtime_choice> = -1;
template <class F, class S>
inline constexpr int group_count<guarded_plan<F, S>, plan_kind::guarded> = group_count<F>;
template <class... P>
inline constexpr int group_count<plan_sequence<P...>, plan_kind::sequence> =
    ((group_count<P> < 0) || ...) ? -1 : list_length<kernels_of_t<plan_sequence<P...>>>;

}  // namespace fusor::detail
