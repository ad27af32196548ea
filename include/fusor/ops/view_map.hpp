#pragma once
/// @file ops/view_map.hpp
/// A shape op over a value that a kernel of its own computes: a reduction,
/// normalization, contraction, attention or tag, e.g.
/// `permute(log_softmax(x, 1), {0, 2, 1})` or `squeeze(sum(x, {1}, keepdims), 1)`
/// (issue 21, item 1).
///
/// Such a value has no view to re-stride until its kernel has written it,
/// so `node<op::view_map<F>, X>` keeps the view op F beside X: the planner
/// computes X into a temporary as its own group (as it does for any
/// reduction read by a consumer of another shape, plan/absorb.hpp), and
/// when the consumer's operands are materialized (exec/materialize.hpp) the
/// node becomes F(temporary view): an index map inside the consumer's
/// kernel, no copy, no extra kernel. The values are bitwise those of running
/// X into a buffer and applying the view op to it. A view_map at the root of
/// a run writes X into the output viewed through the inverse view op where
/// there is one (exec/root_view_map.hpp), else it is one copy kernel.
///
/// The functors below hold a view op's arguments by value (they live in the
/// expression until the run) and apply it to any view; `rank<R>` is the
/// result's rank for an operand of rank R. Errors are the view ops' own
/// (expr/view_ops.hpp), thrown when the expression's shape is first checked
/// (by `shape_of`, and before anything runs).
#include <fusor/expr/node.hpp>
#include <fusor/expr/view_ops.hpp>

#include <cstddef>
#include <utility>

namespace fusor {

/// The view ops as value functors (arguments as index_t: no padding, so an
/// op's bytes are its cache key, pattern/plan_key.hpp).
namespace view_fn {
struct permute {
  static constexpr const char* name = "permute";
  template <int R> static constexpr int rank = R;
  perm_list perm;
  template <class V> auto operator()(const V& v) const { return fusor::permute(v, perm); }
};
struct transpose {
  static constexpr const char* name = "transpose";
  template <int R> static constexpr int rank = R;
  index_t a = 0, b = 0;
  template <class V> auto operator()(const V& v) const { return fusor::transpose(v, int(a), int(b)); }
};
struct slice {
  static constexpr const char* name = "slice";
  template <int R> static constexpr int rank = R;
  index_t axis = 0, start = 0, stop = 0, step = 1;
  template <class V> auto operator()(const V& v) const { return fusor::slice(v, int(axis), start, stop, step); }
};
struct unsqueeze {
  static constexpr const char* name = "unsqueeze";
  template <int R> static constexpr int rank = R + 1;
  index_t axis = 0;
  template <class V> auto operator()(const V& v) const { return fusor::unsqueeze(v, int(axis)); }
};
struct squeeze {
  static constexpr const char* name = "squeeze";
  template <int R> static constexpr int rank = R - 1;
  index_t axis = 0;
  template <class V> auto operator()(const V& v) const { return fusor::squeeze(v, int(axis)); }
};
template <int N>
struct expand {
  static constexpr const char* name = "expand";
  template <int R> static constexpr int rank = N > R ? N : R;
  cuda::std::array<index_t, N> to{};
  template <class V> auto operator()(const V& v) const { return fusor::expand(v, to); }
};
template <int N>
struct reshape {
  static constexpr const char* name = "reshape";
  template <int R> static constexpr int rank = N;
  cuda::std::array<index_t, N> to{};
  template <class V> auto operator()(const V& v) const { return fusor::reshape(v, to); }
};
struct flatten {
  static constexpr const char* name = "flatten";
  template <int R> static constexpr int rank = 2;
  index_t axis = 1;
  template <class V> auto operator()(const V& v) const { return fusor::flatten(v, int(axis)); }
};
/// F applied to an operand first broadcast to `full` (rank RF): how a shape
/// op over a whole expression reaches one operand of it (ops/shape_ops.hpp).
template <int RF, class F>
struct broadcast_then {
  static constexpr const char* name = F::name;
  template <int R> static constexpr int rank = F::template rank<RF>;
  shape<RF> full{};
  F f;
  template <class V> auto operator()(const V& v) const { return f(fusor::expand(v, full)); }
};
/// Second after First: two shape ops over the same computed value.
template <class First, class Second>
struct chain {
  static constexpr const char* name = Second::name;
  template <int R> static constexpr int rank = Second::template rank<First::template rank<R>>;
  First first;
  Second second;
  template <class V> auto operator()(const V& v) const { return second(first(v)); }
};
}  // namespace view_fn

namespace op {
/// The view op F over a computed operand (see the file comment).
template <class F>
struct view_map {
  static constexpr const char* name = F::name;
  static constexpr op_kind kind = op_kind::injective;
  static constexpr int arity = 1;
  static constexpr bool has_output_shape = true;
  static constexpr double flops = 0;
  F f;
  template <class X>
  using result = value_t<X>;
  template <class X>
  using static_extents = dextents<F::template rank<rank_v<X>>>;
  /// The view op's result shape (and its errors) on a row-major operand of
  /// shape `in`: the layout of the temporary the operand is computed into.
  template <int R>
  static auto output_shape(const view_map& op, const shape<R>& in) {
    static const float anchor = 0;  // (a real address: the view ops offset it, never read it)
    const auto v = make_view<host_space>(&anchor, [&]<std::size_t... D>(std::index_sequence<D...>) {
      return dextents<R>(in[D]...);
    }(std::make_index_sequence<std::size_t(R)>{}));
    return op.f(v).shape();
  }
};
}  // namespace op

/// True for a node<op::view_map<F>, X>.
template <class E>
inline constexpr bool is_view_map_node_v = false;
template <class F, class X>
inline constexpr bool is_view_map_node_v<node<op::view_map<F>, X>> = true;

/// view_map(f, x): the node that applies view functor f to x's computed value.
template <class F, class X>
auto make_view_map(const F& f, const X& x) {
  return node<op::view_map<F>, X>{op::view_map<F>{f}, {x}};
}

}  // namespace fusor
