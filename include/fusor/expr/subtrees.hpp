#pragma once
/// @file expr/subtrees.hpp
/// Type-level lists of an expression's subtrees and counts over them: what
/// the planner's shared-producer step and batch-norm folding use to find a
/// subexpression that occurs more than once.
#include <fusor/expr/node.hpp>

namespace fusor::detail {

/// All node subtrees of E in pre-order, as one flat list; a candidate is
/// counted against the list with the __is_same builtin (no template
/// instantiation per pair), so finding repeats costs O(n) instantiations
/// for an n-node expression.
template <class E>
struct subtrees {
  using type = type_list<>;
};
template <class Op, class... A>
struct subtrees<node<Op, A...>> {
  using type = typename concat_lists<type_list<node<Op, A...>>, typename subtrees<A>::type...>::type;
};

template <class N, class L>
inline constexpr int count_in = 0;
// A flat array and a loop, not a fold expression: g++ takes time quadratic
// in n for one n-term fold, so n counts of this kind were cubic
// (docs/compile_time.md).
template <class N, class... S>
inline constexpr int count_in<N, type_list<S...>> = [] {
  constexpr bool same[] = {false, __is_same(N, S)...};
  int c = 0;
  for (bool b : same) c += b ? 1 : 0;
  return c;
}();

/// The subtree list as one class: a slot per position, each slot derived
/// from the key of its subtree type. A subtree type at two positions makes
/// its key an ambiguous base, so `const Set*` no longer converts to a
/// pointer to it: one conversion check per candidate finds the repeats, no
/// instantiation per pair (and no deduction against the subtree types:
/// g++ 12 crashes unifying types with floating-point constants).
template <class S>
struct subtree_key {};
template <std::size_t I, class S>
struct subtree_slot : subtree_key<S> {};
template <class Seq, class... S>
struct subtree_set;
template <std::size_t... I, class... S>
struct subtree_set<std::index_sequence<I...>, S...> : subtree_slot<I, S>... {};
/// Whether subtree type S occurs at one position of Set only.
template <class S, class Set>
inline constexpr bool once_in = std::is_convertible_v<const Set*, const subtree_key<S>*>;

}  // namespace fusor::detail
