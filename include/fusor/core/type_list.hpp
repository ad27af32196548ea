#pragma once
/// @file core/type_list.hpp
/// fusor's one set of type-list helpers: type_list, concat_lists, type_at_t,
/// list_length, list_contains (the planner, the cost model and the kernel
/// lists all use these).
#include <cstddef>
#include <type_traits>
#include <utility>

namespace fusor {

/// A compile-time list of types.
template <class... T>
struct type_list {};

/// Concatenation of type_lists.
template <class... L>
struct concat_lists {
  using type = type_list<>;
};
template <class... A>
struct concat_lists<type_list<A...>> {
  using type = type_list<A...>;
};
template <class... A, class... B, class... Rest>
struct concat_lists<type_list<A...>, type_list<B...>, Rest...> {
  using type = typename concat_lists<type_list<A..., B...>, Rest...>::type;
};

namespace detail {
template <std::size_t I, class T>
struct indexed_type {
  using type = T;
};
template <class Seq, class... T>
struct indexed_types;
template <std::size_t... I, class... T>
struct indexed_types<std::index_sequence<I...>, T...> : indexed_type<I, T>... {};
template <std::size_t I, class T>
indexed_type<I, T> select_indexed(const indexed_type<I, T>&);
}  // namespace detail

/// The I-th type of a type_list (one overload resolution over a flat base
/// list: no recursion, no std::tuple instantiation).
template <std::size_t I, class L>
struct type_at;
template <std::size_t I, class... T>
struct type_at<I, type_list<T...>> {
  using type = typename decltype(detail::select_indexed<I>(
      std::declval<const detail::indexed_types<std::index_sequence_for<T...>, T...>&>()))::type;
};
template <std::size_t I, class L>
using type_at_t = typename type_at<I, L>::type;

/// Number of types in a type_list.
template <class L>
inline constexpr int list_length = 0;
template <class... K>
inline constexpr int list_length<type_list<K...>> = int(sizeof...(K));
/// True when type_list L holds Key.
template <class Key, class L>
inline constexpr bool list_contains = false;
template <class Key, class... K>
inline constexpr bool list_contains<Key, type_list<K...>> = (std::is_same_v<Key, K> || ...);

}  // namespace fusor
