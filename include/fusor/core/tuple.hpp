#pragma once
/// @file core/tuple.hpp
/// fusor::tuple: a lean product type for expression operands and kernel
/// trees, usable in host and device code (FUSOR_HOST_DEVICE).
///
/// Why not std::tuple / cuda::std::tuple: every distinct expression node
/// instantiates one tuple type, and a 64-node expression has ~64 of them.
/// libstdc++'s tuple is a recursive chain of _Tuple_impl bases with a dozen
/// constrained constructors each; instantiating it dominated the cost of
/// building an expression (docs/compile_time.md). fusor::tuple is a plain
/// aggregate with one data member per element (arities 0 to 8 spelled out;
/// longer tuples keep 8 members and a nested tuple for the rest), so an
/// instantiation costs one class with no constructors, and get<I> is an
/// `if constexpr` on I instead of a base-class conversion.
///
/// Interface (the subset fusor uses): aggregate initialization
/// `tuple<A, B>{a, b}` (and CTAD `tuple{a, b}`), fusor::make_tuple(a, b),
/// fusor::get<I>(t) (any
/// value category, result like std::get), fusor::apply(f, t),
/// fusor::tuple_size_v<Tup>, and std::tuple_size / std::tuple_element
/// specializations (so structured bindings and std::tuple_size_v work).
/// Empty element types (op tags, constants, input leaves) take one byte, as
/// plain members do: no [[no_unique_address]]. nvcc's front end honours that
/// attribute (sizeof agrees with g++) but its device code generation lays
/// such members out as if it were absent, so a kernel parameter built on the
/// host was read at other offsets on the device (wrong pointers: illegal and
/// misaligned addresses on the first GPU run, 2026-12-04; the ctest
/// `layout.host_device` compares both layouts through the PTX).
/// Not provided: comparisons, conversions between tuple types, tuple_cat.
#include <fusor/config.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

// get/apply/make_tuple are __host__ __device__ and also serve host-only code
// (host lambdas, host-only copy constructors): like CCCL, switch off nvcc's
// execution-space check for these forwarding templates.
#if defined(__CUDACC__)
#  define FUSOR_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#  define FUSOR_EXEC_CHECK_DISABLE
#endif

namespace fusor {

/// Aggregate tuple (see file comment).
template <class... T>
struct tuple;

template <>
struct tuple<> {};
template <class T0>
struct tuple<T0> {
  T0 m0;
};
template <class T0, class T1>
struct tuple<T0, T1> {
  T0 m0;
  T1 m1;
};
template <class T0, class T1, class T2>
struct tuple<T0, T1, T2> {
  T0 m0;
  T1 m1;
  T2 m2;
};
template <class T0, class T1, class T2, class T3>
struct tuple<T0, T1, T2, T3> {
  T0 m0;
  T1 m1;
  T2 m2;
  T3 m3;
};
template <class T0, class T1, class T2, class T3, class T4>
struct tuple<T0, T1, T2, T3, T4> {
  T0 m0;
  T1 m1;
  T2 m2;
  T3 m3;
  T4 m4;
};
template <class T0, class T1, class T2, class T3, class T4, class T5>
struct tuple<T0, T1, T2, T3, T4, T5> {
  T0 m0;
  T1 m1;
  T2 m2;
  T3 m3;
  T4 m4;
  T5 m5;
};
template <class T0, class T1, class T2, class T3, class T4, class T5, class T6>
struct tuple<T0, T1, T2, T3, T4, T5, T6> {
  T0 m0;
  T1 m1;
  T2 m2;
  T3 m3;
  T4 m4;
  T5 m5;
  T6 m6;
};
template <class T0, class T1, class T2, class T3, class T4, class T5, class T6, class T7>
struct tuple<T0, T1, T2, T3, T4, T5, T6, T7> {
  T0 m0;
  T1 m1;
  T2 m2;
  T3 m3;
  T4 m4;
  T5 m5;
  T6 m6;
  T7 m7;
};
/// Nine or more elements: the first eight, then a tuple of the rest
/// (aggregate brace elision keeps `tuple<...>{a0, ..., a9}` flat).
template <class T0, class T1, class T2, class T3, class T4, class T5, class T6, class T7, class T8, class... R>
struct tuple<T0, T1, T2, T3, T4, T5, T6, T7, T8, R...> {
  T0 m0;
  T1 m1;
  T2 m2;
  T3 m3;
  T4 m4;
  T5 m5;
  T6 m6;
  T7 m7;
  tuple<T8, R...> rest;
};

template <class... T>
tuple(T...) -> tuple<T...>;

template <class T>
inline constexpr bool is_tuple_v = false;
template <class... T>
inline constexpr bool is_tuple_v<tuple<T...>> = true;

template <class Tup>
inline constexpr std::size_t tuple_size_v = 0;
template <class... T>
inline constexpr std::size_t tuple_size_v<tuple<T...>> = sizeof...(T);

/// Element I of tuple t, with t's value category and constness (like std::get).
FUSOR_EXEC_CHECK_DISABLE
template <std::size_t I, class Tup>
  requires is_tuple_v<std::remove_cvref_t<Tup>>
FUSOR_HOST_DEVICE constexpr decltype(auto) get(Tup&& t) noexcept {
  static_assert(I < tuple_size_v<std::remove_cvref_t<Tup>>, "fusor: get<I>: index out of range");
  if constexpr (I == 0) return (static_cast<Tup&&>(t).m0);
  else if constexpr (I == 1) return (static_cast<Tup&&>(t).m1);
  else if constexpr (I == 2) return (static_cast<Tup&&>(t).m2);
  else if constexpr (I == 3) return (static_cast<Tup&&>(t).m3);
  else if constexpr (I == 4) return (static_cast<Tup&&>(t).m4);
  else if constexpr (I == 5) return (static_cast<Tup&&>(t).m5);
  else if constexpr (I == 6) return (static_cast<Tup&&>(t).m6);
  else if constexpr (I == 7) return (static_cast<Tup&&>(t).m7);
  else return fusor::get<I - 8>(static_cast<Tup&&>(t).rest);
}

/// tuple<T...>{t...}: the elements by value (like std::make_tuple, without
/// reference_wrapper unwrapping).
FUSOR_EXEC_CHECK_DISABLE
template <class... T>
FUSOR_HOST_DEVICE constexpr tuple<T...> make_tuple(T... t) {
  return {static_cast<T&&>(t)...};
}

namespace detail {
FUSOR_EXEC_CHECK_DISABLE
template <class F, class Tup, std::size_t... I>
FUSOR_HOST_DEVICE constexpr decltype(auto) apply_impl(F&& f, Tup&& t, std::index_sequence<I...>) {
  return static_cast<F&&>(f)(fusor::get<I>(static_cast<Tup&&>(t))...);
}
}  // namespace detail

/// f(get<0>(t), ..., get<N-1>(t)) (like std::apply).
FUSOR_EXEC_CHECK_DISABLE
template <class F, class Tup>
  requires is_tuple_v<std::remove_cvref_t<Tup>>
FUSOR_HOST_DEVICE constexpr decltype(auto) apply(F&& f, Tup&& t) {
  constexpr std::size_t n = tuple_size_v<std::remove_cvref_t<Tup>>;
  // Short arities spelled out: no index_sequence instantiation per call site.
  if constexpr (n == 0) return static_cast<F&&>(f)();
  else if constexpr (n == 1) return static_cast<F&&>(f)(static_cast<Tup&&>(t).m0);
  else if constexpr (n == 2) return static_cast<F&&>(f)(static_cast<Tup&&>(t).m0, static_cast<Tup&&>(t).m1);
  else if constexpr (n == 3)
    return static_cast<F&&>(f)(static_cast<Tup&&>(t).m0, static_cast<Tup&&>(t).m1, static_cast<Tup&&>(t).m2);
  else return detail::apply_impl(static_cast<F&&>(f), static_cast<Tup&&>(t), std::make_index_sequence<n>{});
}

/// The I-th type of tuple Tup.
template <std::size_t I, class Tup>
using tuple_element_t = std::remove_cvref_t<decltype(fusor::get<I>(std::declval<Tup&>()))>;

}  // namespace fusor

template <class... T>
struct std::tuple_size<fusor::tuple<T...>> : std::integral_constant<std::size_t, sizeof...(T)> {};
template <std::size_t I, class... T>
struct std::tuple_element<I, fusor::tuple<T...>> {
  using type = fusor::tuple_element_t<I, fusor::tuple<T...>>;
};
