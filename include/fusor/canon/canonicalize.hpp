#pragma once
/// @file canon/canonicalize.hpp
/// canonicalize(e): the normal form every later stage sees. Bottom-up, each
/// node's operands are canonicalized, commutative operands are put in
/// operand_order, then the first applicable rule rewrites the node and the
/// result is canonicalized again, until no rule applies (a fixpoint; every
/// rule removes nodes, so it terminates).
#include <fusor/canon/rules.hpp>

namespace fusor::canon {

/// The result of canonicalizing: the expression and the rules applied (in order).
template <class E, class Trace>
struct traced {
  E expr;
  using trace = Trace;
};

namespace detail {
// Cheap pre-filter: a rule is asked only at nodes whose op is the root op of
// its pattern, so most nodes cost one type comparison per rule instead of a
// pattern match over a large expression type (compile time, issue-tested in
// bench/compile).
template <class P>
struct root_op_of {
  using type = void;
};
template <class Op, class... A>
struct root_op_of<node<Op, A...>> {
  using type = Op;
};
/// The rules of Rules whose pattern's root op is Op, in list order: computed
/// once per op, so a node walks only its own op's rules (usually none)
/// instead of instantiating a test for every rule.
template <class Op, class Rules>
struct rules_rooted_at;
template <class Op, class... R>
struct rules_rooted_at<Op, type_list<R...>> {
  using type = typename concat_lists<
      std::conditional_t<__is_same(typename root_op_of<typename R::pattern>::type, Op), type_list<R>, type_list<>>...>::type;
};

template <class E, class Rules>
struct first_applicable {
  using type = void;
};
template <class E, class R, class... Rs>
struct first_applicable<E, type_list<R, Rs...>> {
  using type = std::conditional_t<R::template applies<E>, R, typename first_applicable<E, type_list<Rs...>>::type>;
};
/// The first rule of Rules that applies to E (void if none).
template <class E, class Rules>
struct first_rule : first_applicable<E, typename rules_rooted_at<typename root_op_of<E>::type, Rules>::type> {};

template <class Rules, class E>
auto canonicalize_impl(const E& e);

template <class Op, class A, class B>
auto order_operands(const node<Op, A, B>& n) {
  if constexpr (commutative_op<Op> && operand_order_v<B, A> < 0) return node<Op, B, A>{n.op, {fusor::get<1>(n.args), fusor::get<0>(n.args)}};
  else return n;
}
template <class N>
auto order_operands(const N& n) {
  return n;
}

/// Node `op` over canonicalized operands `kids` (traced): operands ordered,
/// then the first applicable rule, if any, and the result canonicalized.
template <class Rules, class Op, class... K>
auto canonical_node(const Op& op, const K&... kids) {
  using kid_trace = typename concat_lists<typename K::trace...>::type;
  auto rebuilt = order_operands(node<Op, decltype(kids.expr)...>{op, {kids.expr...}});
  using N = decltype(rebuilt);
  using R = typename first_rule<N, Rules>::type;
  if constexpr (std::is_void_v<R>) {
    return traced<N, kid_trace>{rebuilt};
  } else {
    auto again = canonicalize_impl<Rules>(R::rewrite(rebuilt));
    using T = typename concat_lists<kid_trace, type_list<R>, typename decltype(again)::trace>::type;
    return traced<decltype(again.expr), T>{again.expr};
  }
}

/// Whether order_operands swaps the operands of node N.
template <class N>
inline constexpr bool swaps_operands_v = false;
template <class Op, class A, class B>
inline constexpr bool swaps_operands_v<node<Op, A, B>> = commutative_op<Op> && operand_order_v<B, A> < 0;

/// True when canonicalize_impl<Rules>(e) is e itself with an empty trace: no
/// rule applies and no operands are swapped anywhere in E. Such a subtree
/// (most of a large expression) is copied as it is instead of rebuilt level
/// by level: fewer instantiations, and none of the code that copied every
/// subtree once per level, whose -O2 optimization took time quadratic in the
/// depth (docs/compile_time.md).
template <class Rules, class E>
inline constexpr bool unchanged_v = true;
template <class Rules, class Op, class... A>
inline constexpr bool unchanged_v<Rules, node<Op, A...>> =
    (unchanged_v<Rules, A> && ...) && !swaps_operands_v<node<Op, A...>> &&
    std::is_void_v<typename first_rule<node<Op, A...>, Rules>::type>;

template <class Rules, class Op, class... A, std::size_t... I>
auto canonicalize_node(const node<Op, A...>& n, std::index_sequence<I...>) {
  auto kids = fusor::tuple{canonicalize_impl<Rules>(fusor::get<I>(n.args))...};
  return canonical_node<Rules>(n.op, fusor::get<I>(kids)...);
}

// Unary and binary nodes canonicalize their operands here, not through
// canonicalize_node: one nested instantiation per expression level instead
// of two (nvcc's front end stops at about 256 nested instantiations of
// functions with deduced return types; docs/compile_time.md, "nvcc").
template <class Rules, class E>
auto canonicalize_impl(const E& e) {
  if constexpr (unchanged_v<Rules, E>) {
    return traced<E, type_list<>>{e};
  } else if constexpr (is_node_v<E>) {
    constexpr std::size_t arity = std::tuple_size_v<std::remove_cvref_t<decltype(e.args)>>;
    if constexpr (arity == 1) {
      const auto k0 = canonicalize_impl<Rules>(fusor::get<0>(e.args));
      return canonical_node<Rules>(e.op, k0);
    } else if constexpr (arity == 2) {
      const auto k0 = canonicalize_impl<Rules>(fusor::get<0>(e.args));
      const auto k1 = canonicalize_impl<Rules>(fusor::get<1>(e.args));
      return canonical_node<Rules>(e.op, k0, k1);
    } else {
      return canonicalize_node<Rules>(e, std::make_index_sequence<arity>{});
    }
  } else {
    return traced<E, type_list<>>{e};
  }
}
}  // namespace detail

/// The canonical form of expression e under rule list Rules (default: the
/// built-in IEEE-exact rules), with the applied rules in `.trace`.
template <class Rules = default_rules, class E>
auto canonicalize_traced(const E& e) {
  return detail::canonicalize_impl<Rules>(e);
}

}  // namespace fusor::canon

namespace fusor {
/// canonicalize(e): e in canonical form (same values, bit for bit).
template <expression E>
auto canonicalize(const E& e) {
  return canon::canonicalize_traced(e).expr;
}
template <class E>
  requires(!expression<E>)
auto canonicalize(const E&) {
  static_assert(diagnostic::always_false<E>, "fusor: canonicalize: the argument is not a fusor expression (nor a "
                                             "siblings(...) set); " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}
/// Canonicalizes every expression of a siblings set.
template <class... E>
auto canonicalize(const siblings_expr<E...>& s) {
  return std::apply([](const auto&... e) { return siblings_expr<decltype(canonicalize(e))...>{{canonicalize(e)...}}; },
                    s.exprs);
}
/// The canonical form of expression type E.
template <class E>
using canonical_t = decltype(canonicalize(std::declval<const E&>()));
/// The rewrite rules applied to E, in order (a fusor::type_list).
template <class E>
using canonical_trace_t = typename decltype(canon::canonicalize_traced(std::declval<const E&>()))::trace;
}  // namespace fusor
