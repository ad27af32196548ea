#pragma once
/// @file plan/plan.hpp
/// The planner: turns a canonical expression into a planned tree whose
/// `group<Rule, E>` nodes are the kernels to launch. Inside a group, operands
/// that are themselves groups are materialized by their own kernel first; all
/// other nodes are computed in registers. The plan is a type, so kernel counts
/// and matched rules are compile-time constants; where the best plan depends
/// on run-time extents it is a runtime_choice of two instantiated plans.
///
/// Steps at each group root (cost/decision.hpp gives the reasons):
///  1. the first matching fusion rule roots a group and absorbs the producers
///     it accepts (vertical fusion); fusor::materialize(e) is never absorbed;
///  2. budgets: while the group's register or parameter estimate exceeds the
///     device model's limit, its largest operand subtree is split off;
///  3. shared producers: a provably identical subexpression used several times
///     is either recomputed per use or materialized once, whichever the model
///     estimates faster (decided at compile time with static extents);
///  4. siblings with one rule and equal ranks share one multi-output kernel
///     (horizontal fusion).
#include <fusor/plan/roots.hpp>

namespace fusor {

/// The planned tree of canonical expression e under Policy.
template <class Policy = fused_policy, class E>
auto plan(const E& e) {
  // Decomposed norms are recognised first (their repeated means are part of
  // the pattern); untagged repeats left over are shared by value after.
  const auto root = [](const auto& x) {
    if constexpr (Policy::fold_batch_norm)
      return detail::plan_shared_by_value(x, [](const auto& y) { return detail::plan_root<Policy>(y); });
    else return detail::plan_root<Policy>(x);
  };
  if constexpr (Policy::fold_batch_norm && detail::has_decomposed_v<E>) return detail::plan_recognized<Policy>(e, root);
  else return root(e);
}

/// Plans several root expressions. With Policy::horizontal and one shared rule,
/// the roots become one sibling_group (one multi-output kernel). Decomposed
/// normalizations are recognised in a single root only.
template <class Policy = fused_policy, class... E>
auto plan(const siblings_expr<E...>& s) {
  const auto roots = [](const auto& x) {  // x: a siblings set
    // (three linears over one input: one GEMM computes the input once, no
    // sharing by value needed; plan/attention_projections.hpp)
    if constexpr (Policy::fold_batch_norm && !detail::root_projection_set_v<Policy, std::remove_cvref_t<decltype(x)>>)
      return detail::plan_shared_by_value(x, [](const auto& y) { return detail::plan_roots<Policy>(y); });
    else return detail::plan_roots<Policy>(x);
  };
  if constexpr (sizeof...(E) == 1 && Policy::fold_batch_norm && (detail::has_decomposed_v<E> && ...))
    return detail::plan_recognized<Policy>(std::get<0>(s.exprs), [&](const auto& x) {
      return roots(siblings_expr<std::remove_cvref_t<decltype(x)>>{{x}});
    });
  else return roots(s);
}

/// Planned tree type of expression type E (canonicalized first).
template <class E, class Policy = fused_policy>
using plan_t = decltype(plan<Policy>(canonicalize(std::declval<const E&>())));

/// Number of kernels a planned tree launches (-1: decided at run time).
template <class P>
inline constexpr int group_count_v = detail::group_count<std::remove_cvref_t<P>>;

/// Number of kernels the fused plan of E launches per run (the type of
/// run_result::kernels). A static_assert explains when the plan is chosen at
/// run time (dynamic extents and a shared producer).
template <class E, class Policy = fused_policy>
inline constexpr std::size_t kernel_count = [] {
  if constexpr (!(expression<E> || is_siblings_v<E>)) {
    static_assert(diagnostic::always_false<E>,
                  "fusor: kernel_count<E>: E is not the type of a fusor expression (nor of a siblings(...) set); "
                  FUSOR_WHAT_IS_AN_EXPRESSION);
    return std::size_t(0);
  } else {
    constexpr int n = group_count_v<plan_t<E, Policy>>;
    static_assert(n >= 0, "fusor: kernel_count: this expression's plan is chosen at run time (dynamic extents and a "
                          "shared producer); use static extents, fusor::fuse/materialize, or explain(e)");
    return std::size_t(n);
  }
}();

/// Number of kernels the unfused executor launches for E (one per op).
template <class E>
inline constexpr std::size_t unfused_kernel_count = std::size_t(group_count_v<plan_t<E, unfused_policy>>);

/// True when E's plan under Policy is chosen at run time.
template <class E, class Policy = fused_policy>
inline constexpr bool plan_is_dynamic_v = group_count_v<plan_t<E, Policy>> < 0;

namespace detail {
// group_rule (pattern/group.hpp) for a group or sibling group; void otherwise.
template <class P>
struct root_rule {
  using type = void;
};
template <class P>
  requires requires { typename group_rule<P>::type; }
struct root_rule<P> : group_rule<P> {};
template <class F, class S>
struct root_rule<guarded_plan<F, S>> : root_rule<F> {};
}  // namespace detail

/// The rule of the group that computes E's result (void for a plan_sequence).
template <class E, class Policy = fused_policy>
using root_rule_t = typename detail::root_rule<plan_t<E, Policy>>::type;

}  // namespace fusor
