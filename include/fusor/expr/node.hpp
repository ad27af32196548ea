#pragma once
/// @file expr/node.hpp
/// The expression tree: one generic node template over (op tag, operands),
/// run-time scalars and compile-time constants. Patterns, the cost model and
/// the planner all see this one shape.
#include <fusor/core/tuple.hpp>
#include <fusor/core/type_list.hpp>
#include <fusor/expr/view.hpp>

#include <concepts>
#include <tuple>
#include <type_traits>

namespace fusor {

/// TVM's operator classification; it decides which fusion rules may apply.
enum class op_kind { elementwise, broadcast, injective, reduction, contraction, opaque };

/// A run-time scalar operand, e.g. the 0.5f in `x * 0.5f`. It is "weakly
/// typed" (as in NumPy 2 and JAX): it takes the type of the tensor it meets,
/// so `half_tensor * 0.5` computes in fp32, not fp64.
template <class T>
struct scalar {
  T value;
};

/// A compile-time constant operand. Rewrites can see its value, so write
/// `0.5_c * x` (or `constant<0.5>{}`) where a rule should recognise a formula.
/// Weakly typed like scalar.
template <auto V>
struct constant {
  static constexpr auto value = V;
};

/// An operator application: `Op` is an op tag (it may carry attributes such as
/// leaky_relu's alpha), `Args` its operands (views, scalars, constants, nodes).
/// Operand I is `fusor::get<I>(n.args)` (a fusor::tuple, core/tuple.hpp:
/// cheaper to instantiate than std::tuple, one per node type).
template <class Op, class... Args>
struct node {
  using op_type = Op;
  Op op;
  tuple<Args...> args;
};

/// Builds a node without checks (planner-internal: operands may be groups).
template <class Op, class... A>
node<Op, A...> make_node_unchecked(const Op& op, const A&... a) {
  return {op, {a...}};
}

/// Several expressions computed together: `run(outputs(y1, y2), siblings(e1, e2), ex)`.
/// With equal shapes they run as one multi-output kernel that reads shared
/// (identity-tagged) inputs once.
template <class... E>
struct siblings_expr {
  std::tuple<E...> exprs;
};

/// True for a siblings(...) set (any cv-ref qualification).
template <class S>
inline constexpr bool is_siblings_v = false;
template <class... E>
inline constexpr bool is_siblings_v<siblings_expr<E...>> = true;
template <class S>
  requires(!std::is_same_v<S, std::remove_cvref_t<S>>)
inline constexpr bool is_siblings_v<S> = is_siblings_v<std::remove_cvref_t<S>>;

template <class E>
inline constexpr bool is_node_v = false;
template <class Op, class... A>
inline constexpr bool is_node_v<node<Op, A...>> = true;
template <class E>
inline constexpr bool is_scalar_v = false;
template <class T>
inline constexpr bool is_scalar_v<scalar<T>> = true;
template <class E>
inline constexpr bool is_constant_v = false;
template <auto V>
inline constexpr bool is_constant_v<constant<V>> = true;

/// Anything that can be an operand: a tensor_view, scalar, constant or node.
template <class E>
concept expression = is_view_v<std::remove_cvref_t<E>> || is_node_v<std::remove_cvref_t<E>> ||
                     is_scalar_v<std::remove_cvref_t<E>> || is_constant_v<std::remove_cvref_t<E>>;

/// Operands accepted by the operator factories: expressions and C++ arithmetic values.
template <class E>
concept operand = expression<E> || std::is_arithmetic_v<std::remove_cvref_t<E>>;

/// Groups expressions that are computed together (see siblings_expr).
template <expression... E>
siblings_expr<std::remove_cvref_t<E>...> siblings(E&&... e) {
  return {{std::forward<E>(e)...}};
}

/// Wraps a C++ arithmetic value as a scalar; passes expressions through.
template <class E>
constexpr auto as_expr(E&& e) {
  using D = std::remove_cvref_t<E>;
  if constexpr (std::is_arithmetic_v<D>) {
    if constexpr (std::is_same_v<D, bool>) return scalar<bool>{e};
    else if constexpr (std::is_floating_point_v<D>) return scalar<D>{e};
    else return scalar<cuda::std::int64_t>{cuda::std::int64_t(e)};
  } else {
    return D(std::forward<E>(e));
  }
}

// ---------------------------------------------------------------------------
// Value types: the compute type each expression produces.

template <class E>
struct expr_traits;

/// Compute type of an expression's values.
template <class E>
using value_t = typename expr_traits<std::remove_cvref_t<E>>::value_type;
/// True for scalars, constants and nodes of only those (weakly typed).
template <class E>
inline constexpr bool is_weak_v = expr_traits<std::remove_cvref_t<E>>::weak;
/// Static extents of an expression (fusor::extents, dynamic where unknown).
template <class E>
using static_extents_t = typename expr_traits<std::remove_cvref_t<E>>::extents_type;
/// Rank of an expression's result.
template <class E>
inline constexpr int rank_v = int(static_extents_t<E>::rank());

template <class T, class X, class S, class I>
struct expr_traits<tensor_view<T, X, S, I>> {
  using value_type = compute_t<T>;
  using extents_type = X;
  static constexpr bool weak = false;
};
template <class T>
struct expr_traits<scalar<T>> {
  using value_type = T;
  using extents_type = extents<>;
  static constexpr bool weak = true;
};
template <auto V>
struct expr_traits<constant<V>> {
  using value_type = std::conditional_t<std::is_floating_point_v<decltype(V)>, double, cuda::std::int64_t>;
  using extents_type = extents<>;
  static constexpr bool weak = true;
};

namespace detail {
template <class... E>
struct promote_operands;
template <class E>
struct promote_operands<E> {
  using type = value_t<E>;
  static constexpr bool weak = is_weak_v<E>;
};
template <class E, class... Rest>
struct promote_operands<E, Rest...> {
  using R = promote_operands<Rest...>;
  using A = value_t<E>;
  using B = typename R::type;
  static constexpr bool wa = is_weak_v<E>, wb = R::weak;
  static constexpr bool weak = wa && wb;
  // A weak operand yields to a strong one, unless it would lose its
  // floating-point nature (int_tensor * 0.5 computes in f32).
  template <class Weak, class Strong>
  using yield = std::conditional_t<std::is_floating_point_v<Weak> && !std::is_floating_point_v<Strong>, float, Strong>;
  using type = std::conditional_t<wa == wb, promote_t<A, B>, std::conditional_t<wa, yield<A, B>, yield<B, A>>>;
};
}  // namespace detail

/// Common compute type of operands under weak-scalar promotion.
template <class... E>
using promoted_t = typename detail::promote_operands<E...>::type;
/// promoted_t, widened to f32 when integral (for exp, log, sigmoid, ...).
template <class... E>
using floating_t = std::conditional_t<std::is_floating_point_v<promoted_t<E...>>, promoted_t<E...>, float>;

namespace detail {
template <class... E>
struct broadcast_all;
template <>
struct broadcast_all<> {
  using type = extents<>;
};
template <class E, class... Rest>
struct broadcast_all<E, Rest...> {
  using type = broadcast_extents_t<static_extents_t<E>, typename broadcast_all<Rest...>::type>;
};
}  // namespace detail

/// The static extents of the broadcast of all operands.
template <class... E>
using broadcast_all_t = typename detail::broadcast_all<E...>::type;

/// Every op tag names its operand-wise result type through `result<Args...>`
/// and its kind; shape inference is broadcasting for elementwise ops.
template <class Op, class... A>
struct expr_traits<node<Op, A...>> {
  using value_type = typename Op::template result<A...>;
  using extents_type = typename Op::template static_extents<A...>;
  static constexpr bool weak = (is_weak_v<A> && ...);
};

}  // namespace fusor
