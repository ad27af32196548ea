#pragma once
/// @file pattern/group.hpp
/// What a matched fusion rule produces: groups of the expression tree that
/// one kernel computes. The planner builds them; the cost model prices them.
#include <fusor/expr/shape_inference.hpp>
#include <fusor/pattern/rules.hpp>

namespace fusor {

/// A fusion group: one kernel computing `expr`, chosen by `Rule`.
template <class Rule, class E>
struct group {
  E expr;
};

template <class Rule, class E>
struct expr_traits<group<Rule, E>> : expr_traits<E> {};

template <class Rule, class E>
inline constexpr bool statically_identical_v<group<Rule, E>> = statically_identical_v<E>;

/// Several groups that share one output shape, launched as one multi-output
/// kernel (horizontal fusion).
template <class Rule, class... E>
struct sibling_group {
  std::tuple<E...> exprs;
};

/// Output I of sibling group SG used as an operand: the Q, K and V
/// projections of an attention block computed by one multi-output GEMM
/// (x read once), each read by the attention kernel.
template <std::size_t I, class SG>
struct sibling_output {
  static constexpr std::size_t index = I;
  SG set;
};
template <std::size_t I, class R, class... X>
struct expr_traits<sibling_output<I, sibling_group<R, X...>>> : expr_traits<std::tuple_element_t<I, std::tuple<X...>>> {};

/// Several independent plans launched one after the other.
template <class... P>
struct plan_sequence {
  std::tuple<P...> parts;
};

/// Two plans for one expression whose choice depends on the run-time element
/// count: `first` recomputes shared producers in each use, `second`
/// materializes them. The executor asks the cost model once per run.
template <class First, class Second>
struct runtime_choice {
  First first;
  Second second;
};

/// The plan of an expression in which the fused planner recognised
/// decomposed normalizations (plan/decomposed.hpp): `recognized` (the fused
/// ops) runs when the run-time check `holds` (the repeated operands are the
/// same tensors, the axes agree), `written` (the expression as written)
/// otherwise. kernels_of_t and kernel counts describe `recognized`.
template <class Recognized, class Written>
struct guarded_plan {
  Recognized recognized;
  Written written;
  bool holds;
};

/// The rule of a group or sibling group.
template <class G>
struct group_rule;
template <class R, class X>
struct group_rule<group<R, X>> {
  using type = R;
};
template <class R, class... X>
struct group_rule<sibling_group<R, X...>> {
  using type = R;
};
template <class G>
using group_rule_t = typename group_rule<G>::type;

/// A kernel's entry in kernels_of_t when its group is not provably identical
/// to another one (each occurrence is its own kernel).
template <class G, int K>
struct distinct_kernel {};

namespace detail {
template <class P, class Acc>
struct collect_kernels {
  using type = Acc;
};
template <class L>
inline constexpr int list_length = 0;
template <class... K>
inline constexpr int list_length<type_list<K...>> = int(sizeof...(K));
template <class Key, class L>
inline constexpr bool list_contains = false;
template <class Key, class... K>
inline constexpr bool list_contains<Key, type_list<K...>> = (std::is_same_v<Key, K> || ...);

template <class Acc, class... P>
struct collect_all {
  using type = Acc;
};
template <class Acc, class P, class... Rest>
struct collect_all<Acc, P, Rest...> {
  using type = typename collect_all<typename collect_kernels<P, Acc>::type, Rest...>::type;
};
template <class Op, class... A, class Acc>
struct collect_kernels<node<Op, A...>, Acc> {
  using type = typename collect_all<Acc, A...>::type;
};
template <class R>
inline constexpr bool is_cached_rule_v = [] {
  if constexpr (requires { R::cached; }) return R::cached;
  else return false;
}();
template <class R, class X, class Acc>
  requires is_cached_rule_v<R>
struct collect_kernels<group<R, X>, Acc> {
  using type = typename collect_kernels<X, Acc>::type;  // prepared once per weight set, not per run
};
template <class R, class X, class Acc, bool Seen = statically_identical_v<group<R, X>> && list_contains<group<R, X>, Acc>>
struct collect_group {
  using inner = typename collect_kernels<X, Acc>::type;
  using key = std::conditional_t<statically_identical_v<group<R, X>>, group<R, X>,
                                 distinct_kernel<group<R, X>, list_length<inner>>>;
  using type = std::conditional_t<list_contains<key, inner>, inner, typename concat_lists<inner, type_list<key>>::type>;
};
/// A provably identical group seen before runs once per run (the executor
/// memoizes it), and so do the groups it reads.
template <class R, class X, class Acc>
struct collect_group<R, X, Acc, true> {
  using type = Acc;
};
template <class R, class X, class Acc>
struct collect_kernels<group<R, X>, Acc> : collect_group<R, X, Acc> {};
template <class R, class... X, class Acc>
struct collect_kernels<sibling_group<R, X...>, Acc> {
  using inner = typename collect_all<Acc, X...>::type;
  using type = typename concat_lists<inner, type_list<distinct_kernel<sibling_group<R, X...>, list_length<inner>>>>::type;
};
template <std::size_t I, class R, class... X, class Acc>
struct collect_kernels<sibling_output<I, sibling_group<R, X...>>, Acc> {
  // One kernel for all outputs of the set, listed where it is first read.
  using inner = typename collect_all<Acc, X...>::type;
  using key = sibling_group<R, X...>;
  using type = std::conditional_t<list_contains<key, inner>, inner, typename concat_lists<inner, type_list<key>>::type>;
};
template <class F, class S, class Acc>
struct collect_kernels<guarded_plan<F, S>, Acc> : collect_kernels<F, Acc> {};
template <class... P, class Acc>
struct collect_kernels<plan_sequence<P...>, Acc> {
  using type = typename collect_all<Acc, P...>::type;
};
}  // namespace detail

/// The kernels a planned tree launches, in launch order (producers first); a
/// provably identical group used several times is one kernel.
template <class P>
using kernels_of_t = typename detail::collect_kernels<std::remove_cvref_t<P>, type_list<>>::type;

/// The group type behind an entry of kernels_of_t.
template <class K>
struct kernel_group {
  using type = K;
};
template <class G, int N>
struct kernel_group<distinct_kernel<G, N>> {
  using type = G;
};

/// The I-th kernel (launch order) of planned tree P, as its group type.
template <std::size_t I, class P>
using kernel_t = typename kernel_group<type_at_t<I, kernels_of_t<P>>>::type;

}  // namespace fusor
