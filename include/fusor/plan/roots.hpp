#pragma once
/// @file plan/roots.hpp
/// Planning of roots: fusion-only rewrites first (recognize/), a copy group
/// for a bare view, step 4 (siblings with one rule share a multi-output
/// kernel: horizontal fusion; linears over one input, one multi-output
/// GEMM) and the guarded plan of recognised decomposed
/// normalizations.
#include <fusor/plan/attention_projections.hpp>
#include <fusor/plan/plan_expr.hpp>
#include <fusor/recognize/composites.hpp>
#include <fusor/recognize/decomposed.hpp>
#include <fusor/recognize/shared_by_value.hpp>

namespace fusor::detail {

/// The plan of a root written to an output: a bare view, scalar, constant or
/// transposed view becomes a one-op copy group, so that the plan lists the
/// copy kernel that run() launches (kernel_count, explain, to_dot).
template <class P>
auto as_output_plan(const P& p) {
  if constexpr (is_plan_leaf_v<P> || is_transpose_leaf_v<P>)
    return group<rule::single_op, node<op::identity, P>>{make_node_unchecked(op::identity{}, p)};
  else return p;
}

template <class Policy, class E>
auto plan_root(const E& e) {
  if constexpr (Policy::fold_batch_norm && has_composite_v<E>)
    return as_output_plan(plan_expr<Policy>(fuse_composites<unfoldable_convs_t<E>>(e)));
  else return as_output_plan(plan_expr<Policy>(e));
}

template <class Policy, class... E>
auto plan_roots(const siblings_expr<E...>& s) {
  using Rules = typename Policy::rules;
  if constexpr (Policy::fold_batch_norm && (composites_change<E>() || ...)) {
    // Fusion-only rewrites in each root first (see fuse_composites).
    return plan_roots<Policy>(std::apply([](const auto&... e) {
      return siblings_expr<decltype(fuse_composites<unfoldable_convs_t<std::remove_cvref_t<decltype(e)>>>(e))...>{
          {fuse_composites<unfoldable_convs_t<std::remove_cvref_t<decltype(e)>>>(e)...}};
    }, s.exprs));
  } else return std::apply(
      [](const auto&... e) {
        using Rs = type_list<matching_rule_t<std::remove_cvref_t<decltype(e)>, Rules>...>;
        constexpr bool one_rule = []<class R0, class... R>(type_list<R0, R...>) {
          return (std::is_same_v<R0, R> && ...) && !std::is_void_v<R0>;
        }(Rs{});
        using R0 = matching_rule_t<std::tuple_element_t<0, std::tuple<E...>>, Rules>;
        // Only the elementwise kernel family writes several outputs; siblings of
        // any other family (a user kernel) run as separate groups.
        constexpr bool multi_output = [] {
          if constexpr (std::is_void_v<R0>) return false;
          else return std::is_same_v<typename R0::kernel, kernel_family::elementwise>;
        }();
        // Linears over one input expression: one multi-output GEMM
        // (plan/attention_projections.hpp), guarded by a run-time check.
        if constexpr (root_projection_set_v<Policy, siblings_expr<E...>>) {
          return fuse_root_projections<Policy>(e...);
        } else if constexpr (Policy::horizontal && one_rule && multi_output && sizeof...(E) > 1 && fuse_siblings_v<E...>) {
          return sibling_group<R0, decltype(detail::plan_inside<Policy, R0>(e))...>{
              {detail::plan_inside<Policy, R0>(e)...}};
        } else {
          return plan_sequence<decltype(as_output_plan(detail::plan_expr<Policy>(e)))...>{
              {as_output_plan(detail::plan_expr<Policy>(e))...}};
        }
      },
      s.exprs);
}

/// A fused policy's plan of e where e contains decomposed normalizations
/// (recognize/decomposed.hpp): both the recognised and the written form, chosen
/// at run time by the same-tensor / same-axes check.
template <class Policy, class E, class PlanFn>
auto plan_recognized(const E& e, PlanFn&& plan_of) {
  bool holds = true;
  const auto r = recognize_decomposed(e, holds);
  auto pr = plan_of(r);
  auto pw = plan_of(e);
  return guarded_plan<decltype(pr), decltype(pw)>{pr, pw, holds};
}

/// A fused policy's plan of e where e repeats an expensive subtree without
/// a tag (recognize/shared_by_value.hpp): the shared form when the
/// occurrences are one value at run time, the written form otherwise
/// (plan_of plans either). The written form is the guarded plan's first
/// branch, so the static descriptions (kernel_count, root_rule_t) are
/// those of the written form: the most kernels a run can launch.
template <class E, class PlanFn>
auto plan_shared_by_value(const E& e, const PlanFn& plan_of) {
  if constexpr (has_shared_by_value_v<E>) {
    using Set = subtree_set_t<E>;
    bool holds = true;
    std::vector<std::pair<const std::type_info*, const void*>> first;
    check_repeats<Set>(e, first, holds);
    auto shared = plan_of(tag_repeats<Set>(e));
    auto written = plan_of(e);
    return guarded_plan<decltype(written), decltype(shared)>{written, shared, !holds,
                                                              plan_guard::distinct_subexpressions};
  } else {
    return plan_of(e);
  }
}

}  // namespace fusor::detail
