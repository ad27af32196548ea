#pragma once
/// @file plan/plan.hpp
/// The planner: turns a canonical expression into a planned tree whose
/// `group<Rule, E>` nodes are the kernels to launch. Inside a group, operands
/// that are themselves groups are materialized by their own kernel first; all
/// other nodes are computed in registers. The plan is a type, so kernel counts
/// and matched rules are compile-time constants.
#include <fusor/cost/decision.hpp>

namespace fusor {

/// A fusion group: one kernel computing `expr`, chosen by `Rule`.
template <class Rule, class E>
struct group {
  E expr;
};

template <class Rule, class E>
struct expr_traits<group<Rule, E>> : expr_traits<E> {};

/// Several groups that share one output shape, launched as one multi-output
/// kernel (horizontal fusion).
template <class Rule, class... E>
struct sibling_group {
  std::tuple<E...> exprs;
};

/// Several independent plans launched one after the other.
template <class... P>
struct plan_sequence {
  std::tuple<P...> parts;
};

namespace detail {
template <class E>
inline constexpr int group_count = 0;
template <class Op, class... A>
inline constexpr int group_count<node<Op, A...>> = (0 + ... + group_count<A>);
template <class R, class E>
inline constexpr int group_count<group<R, E>> = 1 + group_count<E>;
template <class R, class... E>
inline constexpr int group_count<sibling_group<R, E...>> = 1 + (0 + ... + group_count<E>);
template <class... P>
inline constexpr int group_count<plan_sequence<P...>> = (0 + ... + group_count<P>);

template <class Rules, class E>
auto plan_expr(const E& e);

template <class Rules, class Rule, class Op, class... A, std::size_t... I>
auto plan_inside(const node<Op, A...>& n, std::index_sequence<I...>) {
  auto kid = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
    using Kid = std::tuple_element_t<K, std::tuple<A...>>;
    if constexpr (is_node_v<Kid> && fuse_producer_v<Rule, Kid, node<Op, A...>>)
      return plan_inside<Rules, Rule>(std::get<K>(n.args), std::make_index_sequence<std::tuple_size_v<decltype(std::get<K>(n.args).args)>>{});
    else
      return plan_expr<Rules>(std::get<K>(n.args));
  };
  return make_node_unchecked(n.op, kid(std::integral_constant<std::size_t, I>{})...);
}

template <class Rules, class E>
auto plan_expr(const E& e) {
  if constexpr (!is_node_v<E>) {
    return e;
  } else {
    using R = matching_rule_t<E, Rules>;
    static_assert(!std::is_void_v<R>, "fusor: plan: no fusion rule matches this op (see the expression type below)");
    auto inner = plan_inside<Rules, R>(e, std::make_index_sequence<std::tuple_size_v<decltype(e.args)>>{});
    return group<R, decltype(inner)>{inner};
  }
}
}  // namespace detail

/// How to plan: a fusion rule list and whether siblings may share a kernel.
template <class Rules, bool Horizontal>
struct planning_policy {
  using rules = Rules;
  static constexpr bool horizontal = Horizontal;
};
/// fusor's default: the built-in pattern library, horizontal fusion on.
using fused_policy = planning_policy<default_fusion_rules, true>;
/// Every op its own kernel (the unfused executor).
using unfused_policy = planning_policy<unfused_rules, false>;
/// fusor's default library with user rules tried first.
template <class... UserRules>
using with_rules = planning_policy<type_list<UserRules..., rule::elementwise_chain>, true>;

/// The planned tree of canonical expression e under Policy.
template <class Policy = fused_policy, class E>
auto plan(const E& e) {
  return detail::plan_expr<typename Policy::rules>(e);
}

/// Plans several root expressions. With Policy::horizontal and one shared rule,
/// the roots become one sibling_group (one multi-output kernel).
template <class Policy = fused_policy, class... E>
auto plan(const siblings_expr<E...>& s) {
  using Rules = typename Policy::rules;
  constexpr bool Horizontal = Policy::horizontal;
  return std::apply(
      [](const auto&... e) {
        using Rs = type_list<matching_rule_t<std::remove_cvref_t<decltype(e)>, Rules>...>;
        constexpr bool one_rule = []<class R0, class... R>(type_list<R0, R...>) {
          return (std::is_same_v<R0, R> && ...) && !std::is_void_v<R0>;
        }(Rs{});
        if constexpr (Horizontal && one_rule && sizeof...(E) > 1 && fuse_siblings_v<E...>) {
          using R0 = matching_rule_t<std::tuple_element_t<0, std::tuple<E...>>, Rules>;
          auto one = [](const auto& x) {
            return detail::plan_inside<Rules, R0>(x, std::make_index_sequence<std::tuple_size_v<decltype(x.args)>>{});
          };
          return sibling_group<R0, decltype(one(e))...>{{one(e)...}};
        } else {
          return plan_sequence<decltype(detail::plan_expr<Rules>(e))...>{{detail::plan_expr<Rules>(e)...}};
        }
      },
      s.exprs);
}

/// Planned tree type of expression type E (canonicalized first).
template <class E, class Policy = fused_policy>
using plan_t = decltype(plan<Policy>(canonicalize(std::declval<const E&>())));

/// Number of kernels a planned tree launches.
template <class P>
inline constexpr int group_count_v = detail::group_count<std::remove_cvref_t<P>>;

/// Number of kernels the fused plan of E launches.
template <class E, class Policy = fused_policy>
inline constexpr int kernel_count = detail::group_count<plan_t<E, Policy>>;

/// Number of kernels the unfused executor launches for E (one per op).
template <class E>
inline constexpr int unfused_kernel_count = detail::group_count<plan_t<E, unfused_policy>>;

namespace detail {
template <class P>
struct root_rule {
  using type = void;
};
template <class R, class E>
struct root_rule<group<R, E>> {
  using type = R;
};
template <class R, class... E>
struct root_rule<sibling_group<R, E...>> {
  using type = R;
};
}  // namespace detail

/// The rule of the group that computes E's result (void for a plan_sequence).
template <class E, class Policy = fused_policy>
using root_rule_t = typename detail::root_rule<plan_t<E, Policy>>::type;

}  // namespace fusor
