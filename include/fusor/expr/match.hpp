#pragma once
/// @file expr/match.hpp
/// Structural matching of expression types against patterns, shared by
/// canonicalization (rewrite rules) and the pattern library (fusion rules).
///
/// A pattern is an expression type whose leaves may be placeholders:
///   node<op::relu, node<op::relu, _1>>                 relu(relu(x))
///   node<op::mul, _1, node<op::sigmoid, _1>>           x * sigmoid(x)
///   node<op::mul, _1, const_<1.0>>                     x * 1
/// `_N` captures any subexpression; a placeholder used twice matches only the
/// same subexpression, which must be provably identical at compile time
/// (tagged views, constants and attribute-free ops over them). `const_<V>`
/// matches the constant V exactly (bit for bit: 0.0 is not -0.0). Ops marked
/// `commutative` also match with their two operands swapped.
#include <fusor/expr/node.hpp>

#include <bit>
#include <cstdint>

namespace fusor {

/// Placeholder N of a pattern.
template <int N>
struct placeholder {};
using _1 = placeholder<1>;
using _2 = placeholder<2>;
using _3 = placeholder<3>;
using _4 = placeholder<4>;

/// Pattern leaf matching the compile-time constant V bit for bit.
template <double V>
struct const_ {};

/// Placeholder N restricted to expressions E with Pred<E>::value.
template <int N, template <class> class Pred>
struct placeholder_if {};

/// An op that names its operand's value (op::tagged<Id>, from fusor::tag<Id>(e)).
template <class Op>
concept value_naming_op = requires { requires Op::names_value; };

/// True when E denotes the same values wherever it appears: a tagged view, a
/// constant, an attribute-free op applied to such operands, or a tagged
/// expression (the tag vouches for its attributes; checked at run time).
template <class E>
inline constexpr bool statically_identical_v = false;
template <class T, class X, class S, class I>
inline constexpr bool statically_identical_v<tensor_view<T, X, S, I>> = !std::is_void_v<I>;
template <auto V>
inline constexpr bool statically_identical_v<constant<V>> = true;
template <class Op, class... A>
inline constexpr bool statically_identical_v<node<Op, A...>> =
    value_naming_op<Op> || (std::is_empty_v<Op> && (statically_identical_v<A> && ...));

template <class Op>
concept commutative_op = requires { requires Op::commutative; };

namespace detail {

template <int N, class E>
struct capture {};
template <class... C>
struct captures {};

template <int N, class Caps>
struct lookup {
  using type = void;
};
template <int N, class E, class... Rest>
struct lookup<N, captures<capture<N, E>, Rest...>> {
  using type = E;
};
template <int N, int M, class E, class... Rest>
struct lookup<N, captures<capture<M, E>, Rest...>> : lookup<N, captures<Rest...>> {};

template <class Caps, class C>
struct append;
template <class... C, class X>
struct append<captures<C...>, X> {
  using type = captures<C..., X>;
};

/// Result of matching pattern P against expression E given earlier captures.
template <class P, class E, class Caps>
struct match {
  static constexpr bool ok = false;
  using caps = Caps;
};

template <int N, class E, class Caps, bool Allowed>
struct match_placeholder {
  using prev = typename lookup<N, Caps>::type;
  static constexpr bool ok =
      Allowed && (std::is_void_v<prev> || (std::is_same_v<prev, E> && statically_identical_v<E>));
  using caps = std::conditional_t<std::is_void_v<prev>, typename append<Caps, capture<N, E>>::type, Caps>;
};
template <int N, class E, class Caps>
struct match<placeholder<N>, E, Caps> : match_placeholder<N, E, Caps, true> {};
template <int N, template <class> class Pred, class E, class Caps>
struct match<placeholder_if<N, Pred>, E, Caps> : match_placeholder<N, E, Caps, bool(Pred<E>::value)> {};

template <double V, auto W, class Caps>
struct match<const_<V>, constant<W>, Caps> {
  static constexpr bool ok = std::bit_cast<std::uint64_t>(V) == std::bit_cast<std::uint64_t>(double(W));
  using caps = Caps;
};

/// Matches operand patterns P... against operands E... in order, threading captures.
template <class Ps, class Es, class Caps>
struct match_seq {
  static constexpr bool ok = false;
  using caps = Caps;
};
template <class Caps>
struct match_seq<type_list<>, type_list<>, Caps> {
  static constexpr bool ok = true;
  using caps = Caps;
};
template <class P, class... Ps, class E, class... Es, class Caps>
struct match_seq<type_list<P, Ps...>, type_list<E, Es...>, Caps> {
  using head = match<P, E, Caps>;
  using tail = std::conditional_t<head::ok, match_seq<type_list<Ps...>, type_list<Es...>, typename head::caps>,
                                  match<void, void, Caps>>;
  static constexpr bool ok = head::ok && tail::ok;
  using caps = typename tail::caps;
};

template <class Op, class... P, class... E, class Caps>
  requires(sizeof...(P) == sizeof...(E))
struct match<node<Op, P...>, node<Op, E...>, Caps> {
  using direct = match_seq<type_list<P...>, type_list<E...>, Caps>;
  static constexpr bool swap_possible = commutative_op<Op> && sizeof...(P) == 2 && !direct::ok;
  template <bool Try, class L>
  struct swapped_of {
    using type = match<void, void, Caps>;
  };
  template <class A, class B>
  struct swapped_of<true, type_list<A, B>> {
    using type = match_seq<type_list<P...>, type_list<B, A>, Caps>;
  };
  using swapped = typename swapped_of<swap_possible, type_list<E...>>::type;
  /// True when the operands matched in swapped order.
  static constexpr bool is_swapped = !direct::ok && swapped::ok;
  static constexpr bool ok = direct::ok || swapped::ok;
  using caps = std::conditional_t<direct::ok, typename direct::caps, typename swapped::caps>;
};

// Run-time extraction of the subexpression captured by placeholder N, walking
// the pattern and the expression together (same decisions as `match`).
template <int N, class P, class E>
struct extractor {
  static constexpr bool found = false;
};
template <int N, class E>
struct extractor<N, placeholder<N>, E> {
  static constexpr bool found = true;
  static const E& get(const E& e) { return e; }
};
template <int N, template <class> class Pred, class E>
struct extractor<N, placeholder_if<N, Pred>, E> : extractor<N, placeholder<N>, E> {};

template <int N, class Op, class... P, class... E>
  requires(sizeof...(P) == sizeof...(E))
struct extractor<N, node<Op, P...>, node<Op, E...>> {
  using M = match<node<Op, P...>, node<Op, E...>, captures<>>;
  template <std::size_t... I>
  static constexpr int find(std::index_sequence<I...>) {
    // index of the first operand pattern containing placeholder N
    int r = -1;
    ((r < 0 && extractor<N, type_at_t<I, type_list<P...>>,
                         type_at_t<(M::is_swapped ? sizeof...(E) - 1 - I : I), type_list<E...>>>::found
          ? (r = int(I))
          : 0),
     ...);
    return r;
  }
  static constexpr int at = find(std::index_sequence_for<P...>{});
  static constexpr bool found = at >= 0;
  static decltype(auto) get(const node<Op, E...>& e) {
    constexpr std::size_t pi = std::size_t(at);
    constexpr std::size_t ei = M::is_swapped ? sizeof...(E) - 1 - pi : pi;
    using Pi = type_at_t<pi, type_list<P...>>;
    using Ei = type_at_t<ei, type_list<E...>>;
    return extractor<N, Pi, Ei>::get(fusor::get<ei>(e.args));
  }
};

}  // namespace detail

/// True when expression type E matches pattern P.
template <class P, class E>
inline constexpr bool matches_v = detail::match<P, std::remove_cvref_t<E>, detail::captures<>>::ok;

/// The type captured by placeholder N when E matches P (void if none).
template <int N, class P, class E>
using captured_t = typename detail::lookup<N, typename detail::match<P, E, detail::captures<>>::caps>::type;

/// The subexpression of `e` captured by placeholder N of pattern P
/// (precondition: matches_v<P, E>).
template <int N, class P, class E>
decltype(auto) capture(const E& e) {
  static_assert(matches_v<P, E>, "fusor: capture: the expression does not match the pattern");
  return detail::extractor<N, P, E>::get(e);
}

/// The op object (with its attributes) at the root of e.
template <class Op, class... A>
const Op& root_op(const node<Op, A...>& e) {
  return e.op;
}

}  // namespace fusor
