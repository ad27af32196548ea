#pragma once
/// @file plan/plan_expr.hpp
/// plan_expr: the planner's recursion over an expression (steps 1-3 at each
/// group root) and the kernel count of a planned tree.
#include <fusor/plan/shared_producers.hpp>

namespace fusor::detail {

template <class Policy, class E>
auto plan_expr(const E& e) {
  if constexpr (!is_node_v<E>) {
    return e;
  } else if constexpr (is_hint_v<E>) {
    return plan_expr<Policy>(fusor::get<0>(e.args));  // a root is materialized anyway
  } else if constexpr (is_transpose_leaf_v<E>) {
    return e;  // a zero-copy view
  } else {
    using R = matching_rule_t<E, typename Policy::rules>;
    static_assert(!std::is_void_v<R>, "fusor: plan: no fusion rule matches this op (see the expression type below)");
    if constexpr (requires { R::custom_group; }) {
      // A contraction group: its tile kernel recomputes nothing per element,
      // so budgets and shared-producer decisions do not apply.
      auto inner = plan_epilogue<Policy>(e);
      return group<R, decltype(inner)>{inner};
    } else if constexpr (requires { R::reduction_epilogue; } && !is_reduction_node_v<E>) {
      auto inner = plan_reduction_epilogue<Policy>(e);
      return group<R, decltype(inner)>{inner};
    } else if constexpr (is_attention_node_v<E> && Policy::horizontal) {
      auto inner = fuse_attention_projections(plan_inside<Policy, R>(e));
      return group<R, decltype(inner)>{inner};
    } else {
      auto inner = plan_inside<Policy, R>(e);
      return decide_shared<Policy>(group<R, decltype(inner)>{inner});
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
