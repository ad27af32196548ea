#pragma once
/// @file plan/explain.hpp
/// explain(e): what fusor will do with an expression, as text: the expression,
/// its canonical form and the rewrites that produced it, the fusion groups
/// (rule and kernel family of each) and the kernel counts fused vs unfused.
#include <fusor/plan/describe.hpp>

#include <string>

namespace fusor {

namespace detail {
template <class... R>
std::string rule_names(type_list<R...>) {
  std::string s;
  ((s += std::string("  - ") + R::name + "\n"), ...);
  return s.empty() ? "  (none)\n" : s;
}

template <class P>
void list_groups(std::string& out, const P& p, int& n) {
  if constexpr (is_node_v<P>) {
    std::apply([&](const auto&... a) { (list_groups(out, a, n), ...); }, p.args);
  } else if constexpr (requires { p.parts; }) {
    std::apply([&](const auto&... a) { (list_groups(out, a, n), ...); }, p.parts);
  } else if constexpr (requires { p.expr; }) {
    list_groups(out, p.expr, n);  // producers' kernels first
    using R = decltype([]<class Rr, class X>(const group<Rr, X>&) { return std::type_identity<Rr>{}; }(p));
    out += "  kernel " + std::to_string(++n) + ": " + R::type::name + " (" + R::type::kernel::name + ") computes " +
           describe(p.expr) + "\n";
  } else if constexpr (requires { p.exprs; }) {
    std::apply([&](const auto&... a) { (list_groups(out, a, n), ...); }, p.exprs);
    using R = decltype([]<class Rr, class... X>(const sibling_group<Rr, X...>&) { return std::type_identity<Rr>{}; }(p));
    out += "  kernel " + std::to_string(++n) + ": " + R::type::name + " (" + R::type::kernel::name +
           ", horizontal, " + std::to_string(std::tuple_size_v<decltype(p.exprs)>) + " outputs) computes " +
           describe(p) + "\n";
  }
}
}  // namespace detail

/// A readable account of how fusor runs expression (or siblings set) e with
/// planning policy Policy. Pure host code; no kernel runs.
template <class Policy = fused_policy, class E>
std::string explain(const E& e) {
  const auto traced = [&] {
    if constexpr (requires { e.exprs; }) return canonicalize(e);
    else return canon::canonicalize_traced(e).expr;
  }();
  std::string out = "expression:  " + describe(e) + "\n";
  out += "canonical:   " + describe(traced) + "\n";
  out += "rewrites:\n";
  if constexpr (requires { e.exprs; }) {
    std::apply([&](const auto&... x) {
      ((out += detail::rule_names(typename decltype(canon::canonicalize_traced(x))::trace{})), ...);
    }, e.exprs);
  } else {
    out += detail::rule_names(typename decltype(canon::canonicalize_traced(e))::trace{});
  }
  const auto planned = plan<Policy>(traced);
  const auto unplanned = plan<unfused_policy>(traced);
  out += "fusion groups:\n";
  int n = 0;
  detail::list_groups(out, planned, n);
  out += "kernels:     " + std::to_string(group_count_v<decltype(unplanned)>) + " unfused -> " +
         std::to_string(group_count_v<decltype(planned)>) + " fused\n";
  return out;
}

}  // namespace fusor
