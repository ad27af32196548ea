#pragma once
/// @file canon/operand_order.hpp
/// A total, structural order on expression types, used to put the operands of
/// commutative ops in one deterministic order. It looks only at structure
/// (kind, op names, dtypes, ranks, constant values), never at compiler-specific
/// type names, so g++ and nvcc agree on every canonical form.
#include <fusor/expr/match.hpp>

#include <string_view>

namespace fusor::canon {

namespace detail {
template <class E>
inline constexpr int category = 3;  // nodes last
template <auto V>
inline constexpr int category<constant<V>> = 0;
template <class T>
inline constexpr int category<scalar<T>> = 1;
template <class T, class X, class S, class I>
inline constexpr int category<tensor_view<T, X, S, I>> = 2;

constexpr int cmp(std::string_view a, std::string_view b) { return a < b ? -1 : (b < a ? 1 : 0); }
constexpr int cmp(double a, double b) { return a < b ? -1 : (b < a ? 1 : 0); }

template <class A, class B>
struct order {
  static constexpr int value = category<A> < category<B> ? -1 : (category<A> > category<B> ? 1 : 0);
};
template <auto V, auto W>
struct order<constant<V>, constant<W>> {
  static constexpr int value = cmp(double(V), double(W));
};
template <class T, class X, class S, class I, class U, class Y, class S2, class J>
struct order<tensor_view<T, X, S, I>, tensor_view<U, Y, S2, J>> {
  static constexpr int value = X::rank() != Y::rank() ? (X::rank() < Y::rank() ? -1 : 1)
                               : cmp(dtype_traits<std::remove_cv_t<T>>::name, dtype_traits<std::remove_cv_t<U>>::name);
};
template <class OpA, class... A, class OpB, class... B>
struct order<node<OpA, A...>, node<OpB, B...>> {
  static constexpr int children() {
    if constexpr (sizeof...(A) != sizeof...(B)) {
      return sizeof...(A) < sizeof...(B) ? -1 : 1;
    } else {
      int r = 0;
      ((r = r != 0 ? r : order<A, B>::value), ...);
      return r;
    }
  }
  static constexpr int value = cmp(OpA::name, OpB::name) != 0 ? cmp(OpA::name, OpB::name) : children();
};
}  // namespace detail

/// -1, 0 or 1: the structural order of expression types A and B (0 = tie).
template <class A, class B>
inline constexpr int operand_order_v = detail::order<A, B>::value;

}  // namespace fusor::canon
