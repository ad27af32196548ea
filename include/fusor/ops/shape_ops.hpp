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
/// The leaves a shape op reaches are views (re-strided as above), scalars
/// and constants (unchanged), and computed values: an operand that holds a
/// reduction, normalization, contraction, attention or tag (`fusor::tag`, a
/// named value of one shape). Such a value gets the view op through a
/// view_map node (ops/view_map.hpp): it is computed into a temporary by its
/// own kernel (it would be anyway, read by a consumer of another shape) and
/// read through the view op there, so `relu(permute(softmax(x, 1), {0, 2, 1}))`
/// is two kernels (softmax, then relu reading its result transposed) and
/// bitwise `permute` of the computed softmax. Elementwise ops over computed
/// values only (`transpose(relu(matmul(a, b)))`) are mapped whole: relu
/// stays matmul's epilogue. Keep-dims reductions already
/// give the [N, C, 1, 1] shapes a broadcast needs.
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
#include <fusor/ops/view_map.hpp>

#include <cstddef>
#include <initializer_list>
#include <type_traits>
#include <utility>

namespace fusor {

/// True for expressions a shape op maps at their views alone (no computed
/// value read through a view_map: see the file comment).
template <class E>
inline constexpr bool is_index_mappable_v = is_view_v<E> || is_scalar_v<E> || is_constant_v<E>;
template <class Op, class... A>
inline constexpr bool is_index_mappable_v<node<Op, A...>> =
    (Op::kind == op_kind::elementwise || Op::kind == op_kind::broadcast) && !requires { Op::names_value; } &&
    !std::is_same_v<Op, op::cache_weights> && !std::is_same_v<Op, op::contiguous> && (is_index_mappable_v<A> && ...);

namespace shape_ops_detail {
/// Does E read at least one view (otherwise it has rank 0 and no leaf to map)?
template <class E>
inline constexpr bool has_view_v = is_view_v<E>;
template <class Op, class... A>
inline constexpr bool has_view_v<node<Op, A...>> = (has_view_v<A> || ...);

/// An elementwise node a shape op is pushed through to its operands (not a
/// tag: a named value keeps its shape; not prepared weights).
template <class E>
inline constexpr bool walks_through_v = false;
template <class Op, class... A>
inline constexpr bool walks_through_v<node<Op, A...>> =
    (Op::kind == op_kind::elementwise || Op::kind == op_kind::broadcast) && !requires { Op::names_value; } &&
    !std::is_same_v<Op, op::cache_weights> && !std::is_same_v<Op, op::contiguous>;

/// node n, its shape computed once here so that the view op's errors are
/// thrown by the shape op itself (as for views), not later by run().
template <class N>
N checked(N n) {
  (void)shape_of(n);
  return n;
}

/// e with view functor f applied to every leaf, each first broadcast to
/// `full`: views directly, computed values (reductions, contractions, tags,
/// other nodes) through a view_map node (ops/view_map.hpp).
template <int R, class E, class F>
auto map_leaves(const E& e, const shape<R>& full, const F& f) {
  if constexpr (is_view_v<E>) {
    return f(expand(e, full));
  } else if constexpr (is_view_map_node_v<E>) {
    // a shape op of a shape op over one computed value: one map, both ops
    using G = view_fn::chain<decltype(e.op.f), view_fn::broadcast_then<R, F>>;
    return checked(make_view_map(G{e.op.f, {full, f}}, fusor::get<0>(e.args)));
  } else if constexpr (walks_through_v<E>) {
    return fusor::apply([&](const auto&... a) { return make_node_unchecked(e.op, map_leaves<R>(a, full, f)...); },
                        e.args);
  } else if constexpr (is_node_v<E>) {
    return checked(make_view_map(view_fn::broadcast_then<R, F>{full, f}, e));
  } else {
    return e;  // scalars and constants: the same at every index
  }
}

template <class E>
inline constexpr bool usable_v = is_node_v<E> && has_view_v<E> && (rank_v<E> >= 1);
/// For the ops that only add dims (unsqueeze, expand, reshape): a computed
/// value of rank 0 (`sum<0>(x, axes, false)`) has its temporary to map too.
template <class E>
inline constexpr bool growable_v = usable_v<E> || (is_node_v<E> && has_view_v<E> && !walks_through_v<E>);

template <std::size_t N, std::size_t... I>
shape<int(N)> to_shape(const index_t (&to)[N], std::index_sequence<I...>) {
  return {to[I]...};
}

/// Does E read a view other than through a computed value (a view the
/// shape op can re-stride)?
template <class E>
inline constexpr bool reads_view_directly_v = is_view_v<E>;
template <class Op, class... A>
inline constexpr bool reads_view_directly_v<node<Op, A...>> =
    walks_through_v<node<Op, A...>> && (reads_view_directly_v<A> || ...);

template <class E, class F>
auto push_down(const E& e, const F& f) {
  if constexpr (is_view_map_node_v<E>) {
    return checked(make_view_map(view_fn::chain<decltype(e.op.f), F>{e.op.f, f}, fusor::get<0>(e.args)));
  } else if constexpr (!walks_through_v<E> || !reads_view_directly_v<E>) {
    // A computed value at the top (its own shape, nothing to broadcast), or
    // elementwise ops over computed values only (relu(matmul(a, b))): the
    // whole value mapped, so its elementwise part stays the producer's
    // epilogue and, at a run's root, the value is written through the
    // inverse view (exec/root_view_map.hpp) in one kernel.
    return checked(make_view_map(f, e));
  } else {
    return map_leaves<rank_v<E>>(e, shape_of(e), f);
  }
}
}  // namespace shape_ops_detail

// One message per shape op for an expression with nothing to reshape.
#define FUSOR_SHAPE_OP_CHECK(NAME, E)                                                             \
  static_assert(shape_ops_detail::has_view_v<E> && rank_v<E> >= 1,                                \
                "fusor: " NAME ": the expression has rank 0 (or reads no tensor view): no dim to map")
#define FUSOR_GROWING_SHAPE_OP_CHECK(NAME, E)                                                     \
  static_assert(shape_ops_detail::growable_v<E>,                                                  \
                "fusor: " NAME ": the expression has rank 0 and is elementwise (or reads no tensor view): "   \
                "no dim to map (a rank-0 reduction or other computed value can be " NAME "d)")

/// permute(e, {p0, ..., p(R-1)}) of an elementwise expression e: dim d of
/// the result is dim p[d] of e (ONNX Transpose). Fuses as an index map.
/// @throws argument_error perm is not a permutation of e's dims;
///         shape_error e's operands do not broadcast
template <expression E>
  requires(is_node_v<E>)
auto permute(const E& e, const perm_list& perm) {
  FUSOR_SHAPE_OP_CHECK("permute", E);
  if constexpr (shape_ops_detail::usable_v<E>)
    return shape_ops_detail::push_down(e, view_fn::permute{perm});
}

/// transpose(e, a, b) of an elementwise expression e: dims a and b swapped
/// (torch.transpose). Fuses as an index map.
/// @throws argument_error an axis is out of range
template <expression E>
  requires(is_node_v<E>)
auto transpose(const E& e, int a, int b) {
  FUSOR_SHAPE_OP_CHECK("transpose", E);
  if constexpr (shape_ops_detail::usable_v<E>)
    return shape_ops_detail::push_down(e, view_fn::transpose{a, b});
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
    return shape_ops_detail::push_down(e, view_fn::slice{axis, start, stop, step});
}

/// unsqueeze(e, axis): e with a new dim of extent 1 at `axis` (ONNX
/// Unsqueeze, one axis; axis in [-(R+1), R]). Rank R + 1.
/// @throws argument_error the axis is out of range
template <expression E>
  requires(is_node_v<E>)
auto unsqueeze(const E& e, int axis) {
  FUSOR_GROWING_SHAPE_OP_CHECK("unsqueeze", E);
  if constexpr (shape_ops_detail::growable_v<E>)
    return shape_ops_detail::push_down(e, view_fn::unsqueeze{axis});
}

/// squeeze(e, axis): e without dim `axis`, whose extent must be 1 (ONNX
/// Squeeze, one axis). Rank R - 1.
/// @throws shape_error the dim's extent is not 1
template <expression E>
  requires(is_node_v<E>)
auto squeeze(const E& e, int axis) {
  FUSOR_SHAPE_OP_CHECK("squeeze", E);
  if constexpr (shape_ops_detail::usable_v<E>)
    return shape_ops_detail::push_down(e, view_fn::squeeze{axis});
}

/// expand(e, shape): e broadcast to `shape` (a fusor::shape<R2>, R2 >= R;
/// ONNX Expand). Each element of e is computed once per result element
/// that reads it (an expand is a broadcast read, not a copy).
/// @throws shape_error e's shape does not broadcast to `shape`
template <expression E, std::size_t N>
  requires(is_node_v<E>)
auto expand(const E& e, const cuda::std::array<index_t, N>& to) {
  FUSOR_GROWING_SHAPE_OP_CHECK("expand", E);
  if constexpr (shape_ops_detail::growable_v<E>)
    return shape_ops_detail::push_down(e, view_fn::expand<int(N)>{to});
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
  FUSOR_GROWING_SHAPE_OP_CHECK("reshape", E);
  if constexpr (shape_ops_detail::growable_v<E>)
    return shape_ops_detail::push_down(e, view_fn::reshape<int(N)>{to});
}

/// flatten(e, axis = 1): e as [e[0] * ... * e[axis-1], e[axis] * ... ]
/// (ONNX Flatten). Same conditions as reshape.
/// @throws argument_error axis out of [-R, R]; shape_error as reshape
template <expression E>
  requires(is_node_v<E>)
auto flatten(const E& e, int axis = 1) {
  FUSOR_SHAPE_OP_CHECK("flatten", E);
  if constexpr (shape_ops_detail::usable_v<E>)
    return shape_ops_detail::push_down(e, view_fn::flatten{axis});
}

#undef FUSOR_SHAPE_OP_CHECK
#undef FUSOR_GROWING_SHAPE_OP_CHECK

/// expand(x, {d0, d1, ...}) and reshape(x, {d0, d1, ...}): the braced forms
/// of expand(x, fusor::shape<N>{...}) and reshape(x, fusor::shape<N>{...})
/// for a view or an expression x (a braced list cannot deduce the rank of a
/// fusor::shape). Same shapes, results and errors.
template <class X, std::size_t N>
  requires(is_view_v<X> || is_node_v<X>)
auto expand(const X& x, const index_t (&to)[N]) {
  return expand(x, shape_ops_detail::to_shape(to, std::make_index_sequence<N>{}));
}
template <class X, std::size_t N>
  requires(is_view_v<X> || is_node_v<X>)
auto reshape(const X& x, const index_t (&to)[N]) {
  return reshape(x, shape_ops_detail::to_shape(to, std::make_index_sequence<N>{}));
}

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
auto permute(const X&, const perm_list&) {
  static_assert(diagnostic::always_false<X>, "fusor: permute: an operand is not a fusor expression; permute(x, {p0, "
                                             "p1, ...}): x is a view or an expression; " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}

}  // namespace fusor
