#pragma once
/// @file ops/shape_ops.hpp
/// Shape operations on elementwise expressions (ONNX Transpose, Slice,
/// Unsqueeze, Squeeze, Expand, Reshape, Flatten; issue 21, item 1):
/// `permute(relu(x) + b, {0, 2, 1})`, `unsqueeze(x * s, -1)`, ...
///
/// An elementwise op is applied per element, so it commutes with any index
/// map: permute(f(a, b)) = f(permute(a'), permute(b')), where a' and b' are a
/// and b broadcast to f's shape (stride 0 on broadcast dims). These overloads
/// push the shape op down to the leaves in this way (each view leaf gets the
/// view op of expr/view_ops.hpp) and rebuild the expression over the new
/// views. The shape op is then an index map inside whatever kernel computes
/// the expression: no copy, no temporary, no extra kernel, and the values are
/// those of the expression computed first and reshaped afterwards (bitwise:
/// the same ops run on the same elements).
///
/// Which expressions: views, scalars, constants and elementwise ops
/// (arithmetic, activations, comparisons, casts, where, materialize/fuse
/// hints). An operand that holds a reduction, a normalization, a contraction,
/// attention or a tag (`fusor::tag`, a named value of one shape) is a
/// compile error naming the op: compute it into a buffer first (`fusor::run`
/// into a view, then the view ops). Keep-dims reductions already give the
/// [N, C, 1, 1] shapes a broadcast needs.
///
/// Results have dynamic extents and no identity tags (expr/view_ops.hpp).
/// Errors are those of the view ops, thrown when the shape op is called:
/// `argument_error` (a bad axis or permutation, step 0), `shape_error`
/// (operands that do not broadcast, a squeezed dim that is not 1, a reshape
/// that changes the element count, or a reshape that an operand's strides
/// cannot express: a broadcast operand such as the b of x[2, 3] + b[3] cannot
/// be flattened to [6] without a copy).
#include <fusor/expr/shape_inference.hpp>
#include <fusor/expr/operand_diagnostics.hpp>
#include <fusor/expr/view_ops.hpp>
#include <fusor/ops/elementwise.hpp>

#include <initializer_list>
#include <type_traits>

namespace fusor {

/// True for expressions a shape op can be pushed through (see file comment).
template <class E>
inline constexpr bool is_index_mappable_v = is_view_v<E> || is_scalar_v<E> || is_constant_v<E>;
template <class Op, class... A>
inline constexpr bool is_index_mappable_v<node<Op, A...>> =
    (Op::kind == op_kind::elementwise || Op::kind == op_kind::broadcast) && !requires { Op::names_value; } &&
    !std::is_same_v<Op, op::cache_weights> && (is_index_mappable_v<A> && ...);

namespace shape_ops_detail {
/// Does E read at least one view (otherwise it has rank 0 and no leaf to map)?
template <class E>
inline constexpr bool has_view_v = is_view_v<E>;
template <class Op, class... A>
inline constexpr bool has_view_v<node<Op, A...>> = (has_view_v<A> || ...);

/// e with f applied to every view leaf, each first broadcast to `full`.
template <int R, class E, class F>
auto map_leaves(const E& e, const shape<R>& full, const F& f) {
  if constexpr (is_view_v<E>) {
    return f(expand(e, full));
  } else if constexpr (is_node_v<E>) {
    return fusor::apply([&](const auto&... a) { return make_node_unchecked(e.op, map_leaves<R>(a, full, f)...); },
                        e.args);
  } else {
    return e;
  }
}

template <class E>
inline constexpr bool usable_v = is_node_v<E> && is_index_mappable_v<E> && has_view_v<E> && (rank_v<E> >= 1);

template <class E, class F>
auto push_down(const E& e, const F& f) {
  return map_leaves<rank_v<E>>(e, shape_of(e), f);
}
}  // namespace shape_ops_detail

// One message per shape op for an expression it cannot be pushed through.
#define FUSOR_SHAPE_OP_CHECK(NAME, E)                                                                            \
  static_assert(is_index_mappable_v<E>,                                                                         \
                "fusor: " NAME ": shape ops fuse through views and elementwise expressions only; this operand "  \
                "holds a reduction, normalization, contraction, attention or tag: compute it into a buffer "      \
                "first (fusor::run into a view), then " NAME " the view");                                       \
  static_assert(!is_index_mappable_v<E> || (shape_ops_detail::has_view_v<E> && rank_v<E> >= 1),                \
                "fusor: " NAME ": the expression reads no tensor view (rank 0): nothing to reshape")

/// permute(e, {p0, ..., p(R-1)}) of an elementwise expression e: dim d of
/// the result is dim p[d] of e (ONNX Transpose). Fuses as an index map.
/// @throws argument_error perm is not a permutation of e's dims;
///         shape_error e's operands do not broadcast
template <expression E>
  requires(is_node_v<E>)
auto permute(const E& e, std::initializer_list<int> perm) {
  FUSOR_SHAPE_OP_CHECK("permute", E);
  if constexpr (shape_ops_detail::usable_v<E>)
    return shape_ops_detail::push_down(e, [&](const auto& v) { return permute(v, perm); });
}

/// transpose(e, a, b) of an elementwise expression e: dims a and b swapped
/// (torch.transpose). Fuses as an index map.
/// @throws argument_error an axis is out of range
template <expression E>
  requires(is_node_v<E>)
auto transpose(const E& e, int a, int b) {
  FUSOR_SHAPE_OP_CHECK("transpose", E);
  if constexpr (shape_ops_detail::usable_v<E>)
    return shape_ops_detail::push_down(e, [&](const auto& v) { return transpose(v, a, b); });
}

/// slice(e, axis, start, stop, step = 1) of an elementwise expression e
/// (ONNX Slice for one axis, same clamping as the view op). Only the sliced
/// elements are computed.
/// @throws argument_error the axis is out of range, or step is 0
template <expression E>
  requires(is_node_v<E>)
auto slice(const E& e, int axis, index_t start, index_t stop, index_t step = 1) {
  FUSOR_SHAPE_OP_CHECK("slice", E);
  if constexpr (shape_ops_detail::usable_v<E>)
    return shape_ops_detail::push_down(e, [&](const auto& v) { return slice(v, axis, start, stop, step); });
}

/// unsqueeze(e, axis): e with a new dim of extent 1 at `axis` (ONNX
/// Unsqueeze, one axis; axis in [-(R+1), R]). Rank R + 1.
/// @throws argument_error the axis is out of range
template <expression E>
  requires(is_node_v<E>)
auto unsqueeze(const E& e, int axis) {
  FUSOR_SHAPE_OP_CHECK("unsqueeze", E);
  if constexpr (shape_ops_detail::usable_v<E>)
    return shape_ops_detail::push_down(e, [&](const auto& v) { return unsqueeze(v, axis); });
}

/// squeeze(e, axis): e without dim `axis`, whose extent must be 1 (ONNX
/// Squeeze, one axis). Rank R - 1.
/// @throws shape_error the dim's extent is not 1
template <expression E>
  requires(is_node_v<E>)
auto squeeze(const E& e, int axis) {
  FUSOR_SHAPE_OP_CHECK("squeeze", E);
  if constexpr (shape_ops_detail::usable_v<E>)
    return shape_ops_detail::push_down(e, [&](const auto& v) { return squeeze(v, axis); });
}

/// expand(e, shape): e broadcast to `shape` (a fusor::shape<R2>, R2 >= R;
/// ONNX Expand). Each element of e is computed once per result element
/// that reads it (an expand is a broadcast read, not a copy).
/// @throws shape_error e's shape does not broadcast to `shape`
template <expression E, std::size_t N>
  requires(is_node_v<E>)
auto expand(const E& e, const cuda::std::array<index_t, N>& to) {
  FUSOR_SHAPE_OP_CHECK("expand", E);
  if constexpr (shape_ops_detail::usable_v<E>)
    return shape_ops_detail::push_down(e, [&](const auto& v) { return expand(v, to); });
}

/// reshape(e, shape) of an elementwise expression: the same elements in
/// row-major order with another shape (one -1 inferred). Every view operand,
/// broadcast to e's shape, must be expressible with the new shape by
/// strides (NumPy's no-copy rule, expr/view_ops.hpp): contiguous operands
/// and operands broadcast along whole merged runs are; x[2, 3] + b[3]
/// reshaped to [6] is not (b would need a copy).
/// @throws shape_error the element counts differ, or an operand's strides
///         cannot express the new shape
template <expression E, std::size_t N>
  requires(is_node_v<E>)
auto reshape(const E& e, const cuda::std::array<index_t, N>& to) {
  FUSOR_SHAPE_OP_CHECK("reshape", E);
  if constexpr (shape_ops_detail::usable_v<E>)
    return shape_ops_detail::push_down(e, [&](const auto& v) { return reshape(v, to); });
}

/// flatten(e, axis = 1): e as [e[0] * ... * e[axis-1], e[axis] * ... ]
/// (ONNX Flatten). Same conditions as reshape.
/// @throws argument_error axis out of [-R, R]; shape_error as reshape
template <expression E>
  requires(is_node_v<E>)
auto flatten(const E& e, int axis = 1) {
  FUSOR_SHAPE_OP_CHECK("flatten", E);
  if constexpr (shape_ops_detail::usable_v<E>)
    return shape_ops_detail::push_down(e, [&](const auto& v) { return flatten(v, axis); });
}

#undef FUSOR_SHAPE_OP_CHECK

// A first argument that is neither a view nor an expression (a std::vector,
// a pointer) stops with a `fusor: <op>:` line (expr/operand_diagnostics.hpp);
// transpose's is in ops/contraction.hpp. permute's list is braced, which a
// pack cannot deduce, so its fallback is written out.
FUSOR_OPERAND_FALLBACK(slice, "e", "slice(x, axis, start, stop, step): x is a view or an expression")
FUSOR_OPERAND_FALLBACK(unsqueeze, "e", "unsqueeze(x, axis): x is a view or an expression")
FUSOR_OPERAND_FALLBACK(squeeze, "e", "squeeze(x, axis): x is a view or an expression")
FUSOR_OPERAND_FALLBACK(expand, "e", "expand(x, shape): x is a view or an expression")
FUSOR_OPERAND_FALLBACK(reshape, "e", "reshape(x, shape): x is a view or an expression")
FUSOR_OPERAND_FALLBACK(flatten, "e", "flatten(x, axis): x is a view or an expression")
template <class X>
  requires(!operand<X>)
auto permute(const X&, std::initializer_list<int>) {
  static_assert(diagnostic::always_false<X>, "fusor: permute: an operand is not a fusor expression; permute(x, {p0, "
                                             "p1, ...}): x is a view or an expression; " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}

}  // namespace fusor
