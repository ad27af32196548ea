#pragma once
/// @file recognize/shared_by_value.hpp
/// Common subexpressions by value (issue 18, item 3): an expensive
/// subexpression (a reduction, normalization, contraction or attention)
/// written twice without a tag, as in
///
///   auto m = mean(x, {1});
///   auto y = (x - m) * (x - m) + m;          // m occurs three times
///
/// is one value when every occurrence reads the same tensors with the same
/// attributes. The type says where this CAN hold (the same subtree type at
/// several positions); the values say whether it DOES (same data pointers,
/// extents, strides, scalar bits and op attributes: two different tensors of
/// one view type are one type). So the fused plan is a guarded plan
/// (pattern/plan_tree.hpp): the expression as written, chosen when the
/// occurrences differ at run time, and otherwise the expression with each
/// repeated expensive subtree wrapped in an automatic tag
/// (`op::tagged<by_value<S>>`, which the planner computes once and shares,
/// as a user's `fusor::tag`).
/// Values are identical either way (the shared value is the value of each
/// occurrence); `explain` says which form ran. The static descriptions
/// (kernel_count) count the written form: an upper bound.
///
/// An occurrence inside a user's tag is left to that tag. The unfused
/// reference executor runs the expression as written. The guarded plan is
/// built by plan/roots.hpp (plan_shared_by_value).
#include <fusor/config.hpp>
#include <fusor/recognize/same_value.hpp>
#include <fusor/recognize/decomposed.hpp>
#include <fusor/expr/subtrees.hpp>
#include <fusor/expr/match.hpp>

#include <cstring>
#include <tuple>
#include <typeinfo>
#include <utility>
#include <vector>

namespace fusor {

/// The identity of an automatic tag: the subtree type it names.
template <class S>
struct by_value {};

namespace detail {

template <class L>
struct subtree_set_of;
template <class... S>
struct subtree_set_of<type_list<S...>> {
  using type = subtree_set<std::index_sequence_for<S...>, S...>;
};
template <class E>
struct all_subtrees : subtrees<E> {};
template <class... E>
struct all_subtrees<siblings_expr<E...>> : concat_lists<type_list<>, typename subtrees<E>::type...> {};
/// The positions of all node subtrees of E (of every root of a siblings
/// set), for once_in.
template <class E>
using subtree_set_t = typename subtree_set_of<typename all_subtrees<E>::type>::type;

/// Reductions, normalizations, contractions, attention: worth sharing
/// (pattern/rules.hpp's is_expensive_node_v, which a later stage defines).
template <class N>
inline constexpr bool costly_node_v = false;
template <class Op, class... A>
inline constexpr bool costly_node_v<node<Op, A...>> =
    Op::kind == op_kind::reduction || Op::kind == op_kind::contraction || Op::kind == op_kind::opaque;

/// Is node N an expensive subtree that occurs at more than one position of
/// Set, and not already one value by its type (statically_identical_v:
/// tagged views, attribute-free ops), which the planner shares itself (and
/// there keeps the elementwise work on it inside the producer's kernel)?
template <class N, class Set>
inline constexpr bool repeated_expensive_v = costly_node_v<N> && !statically_identical_v<N> && !once_in<N, Set>;

/// Does E (outside user tags) hold a repeated expensive subtree?
template <class E, class Set>
inline constexpr bool has_repeat_v = false;
template <class Op, class... A, class Set>
inline constexpr bool has_repeat_v<node<Op, A...>, Set> =
    !value_naming_op<Op> && (repeated_expensive_v<node<Op, A...>, Set> || (has_repeat_v<A, Set> || ...));

template <class E, class Set>
inline constexpr bool roots_repeat_v = has_repeat_v<E, Set>;
template <class... E, class Set>
inline constexpr bool roots_repeat_v<siblings_expr<E...>, Set> = (has_repeat_v<E, Set> || ...);
/// Largest expression (node subtrees, all roots) whose repeats are shared by
/// value. The guarded plan holds two forms that share no group type, and
/// their instantiations grow faster than the expression: the fused `net`
/// TU of bench/compile took 25 s without sharing and 65 s with it at 48
/// nodes, 168 s and 5.3 GB at 56 (docs/compile_time.md). Above the bound the
/// written form is planned alone (as before issue 18, item 3); a fusor::tag
/// shares a repeated value in an expression of any size.
#ifndef FUSOR_MAX_SHARED_BY_VALUE_NODES
#define FUSOR_MAX_SHARED_BY_VALUE_NODES 40
#endif
template <class E>
inline constexpr int subtree_count_v = list_length<typename all_subtrees<E>::type>;

/// True when E's fused plan shares repeated expensive subtrees by value (E
/// an expression or a siblings set: repeats across roots count) and E has at
/// most FUSOR_MAX_SHARED_BY_VALUE_NODES node subtrees.
template <class E>
inline constexpr bool has_shared_by_value_v = [] {
  if constexpr (subtree_count_v<E> > FUSOR_MAX_SHARED_BY_VALUE_NODES) return false;
  else return roots_repeat_v<E, subtree_set_t<E>>;
}();

/// e with every repeated expensive subtree S (outside user tags) wrapped in
/// op::tagged<by_value<S>>; the inside of S is rewritten too (a repeat
/// nested in S that also occurs outside it is shared as well).
template <class Set, class E>
auto tag_repeats(const E& e) {
  if constexpr (is_siblings_v<E>) {
    return std::apply([](const auto&... x) { return siblings_expr<decltype(tag_repeats<Set>(x))...>{{tag_repeats<Set>(x)...}}; },
                      e.exprs);
  } else if constexpr (!is_node_v<E>) {
    return e;
  } else if constexpr (value_naming_op<typename E::op_type>) {
    return e;
  } else {
    auto inner = rebuild(e, [](const auto& a, auto) { return tag_repeats<Set>(a); });
    if constexpr (repeated_expensive_v<E, Set>) return make_node_unchecked(op::tagged<by_value<E>>{}, inner);
    else return inner;
  }
}

/// Does every repeated expensive subtree of e (outside user tags) have the
/// same value at each of its positions?
template <class Set, class E>
void check_repeats(const E& e, std::vector<std::pair<const std::type_info*, const void*>>& first, bool& holds) {
  if constexpr (is_siblings_v<E>) {
    std::apply([&](const auto&... x) { (check_repeats<Set>(x, first, holds), ...); }, e.exprs);
  } else if constexpr (is_node_v<E>) {
    if constexpr (!value_naming_op<typename E::op_type>) {
      if constexpr (repeated_expensive_v<E, Set>) {
        bool seen = false;
        for (const auto& f : first)
          if (*f.first == typeid(E)) {
            seen = true;
            if (holds && !same_value(*static_cast<const E*>(f.second), e, same_shared_attributes{})) holds = false;
          }
        if (!seen) first.push_back({&typeid(E), static_cast<const void*>(&e)});
      }
      fusor::apply([&](const auto&... a) { (check_repeats<Set>(a, first, holds), ...); }, e.args);
    }
  }
}

}  // namespace detail
}  // namespace fusor
