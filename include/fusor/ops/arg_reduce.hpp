#pragma once
/// @file ops/arg_reduce.hpp
/// argmax / argmin over one axis (ONNX ArgMax / ArgMin, opset 13; NumPy
/// argmax): the int64 index of the largest / smallest element along the
/// axis, the first one on ties (the last with select_last_index), the first
/// NaN when the row holds one (NaN compares above every number, as NumPy's
/// argmax and argmin both treat it). A reduction over the axis: its
/// elementwise producers are evaluated while loading
/// (`argmax(x * t + b, -1)` is one kernel), and scalar-only
/// elementwise consumers run before the store (kernels/reduction.hpp,
/// arg_rows).
#include <fusor/ops/reduction.hpp>

#include <cstdint>
#include <string>

namespace fusor {
namespace op {

/// argmax (Max = true) or argmin over `axis`; OutRank < 0: the input's rank
/// (keepdims must be true).
template <bool Max, int OutRank = -1>
struct arg_reduce : reduction_base {
  static constexpr int arity = 1;
  static constexpr bool is_max = Max;
  static constexpr const char* name = Max ? "argmax" : "argmin";
  static constexpr double flops = 1;
  /// A reduction over axes (its result is smaller than its input), as
  /// op::reduce: an epilogue takes scalar operands only (pattern/rules.hpp).
  static constexpr bool reduces_axes = true;
  int axis = 0;
  bool keepdims = true;
  bool select_last_index = false;

  template <class X>
  using result = std::int64_t;
  template <class X>
  using operand_types = type_list<value_t<X>>;
  template <class X>
  using static_extents = dextents<std::size_t(OutRank < 0 ? rank_v<X> : OutRank)>;

  template <int R>
  static auto output_shape(const arg_reduce& op, const shape<R>& in) {
    constexpr int O = OutRank < 0 ? R : OutRank;
    const auto m = single_mask<R>(op.axis, name, &in);
    const int want = op.keepdims ? R : R - 1;
    if (want != O)
      throw shape_error(std::string("fusor: ") + name + ": the result has rank " + std::to_string(want) +
                        input_shape_note<R>(&in) + " but the expression's static rank is " + std::to_string(O) +
                        " (without keepdims write fusor::" + name + "<rank>(x, axis, false))");
    shape<O> out{};
    out[0] = 1;
    for (int d = 0, k = 0; d < R; ++d) {
      if (op.keepdims) out[d] = m[d] ? 1 : in[d];
      else if (!m[d]) out[k++] = in[d];
    }
    if (in[op.axis < 0 ? op.axis + R : op.axis] == 0)
      throw shape_error(std::string("fusor: ") + name + ": the axis of x " + to_string<R>(in) +
                        " is empty (no element to index)");
    return out;
  }
  template <int R>
  auto mask() const { return single_mask<R>(axis, name); }
};

}  // namespace op

template <class E>
inline constexpr bool is_arg_reduce_node_v = false;
template <bool Max, int O, class X>
inline constexpr bool is_arg_reduce_node_v<node<op::arg_reduce<Max, O>, X>> = true;

/// argmax(x, axis, keepdims, select_last_index): int64 indices [..., 1, ...]
/// (keepdims) or, as `argmax<R - 1>(x, axis, false)`, without the axis. ONNX
/// defaults: axis 0, keepdims true. x any dtype.
/// @throws shape_error (when shapes are checked) for an axis out of range or
///         an empty axis, naming argmax and x's shape.
template <int OutRank = -1, expression X>
auto argmax(X&& x, int axis = 0, bool keepdims = true, bool select_last_index = false) {
  return make_node(op::arg_reduce<true, OutRank>{{}, axis, keepdims, select_last_index}, std::forward<X>(x));
}
FUSOR_OPERAND_FALLBACK(argmax, "e", "argmax(x, axis, keepdims, select_last_index): x is an expression")
/// argmin(x, axis, keepdims, select_last_index): as argmax, the smallest.
template <int OutRank = -1, expression X>
auto argmin(X&& x, int axis = 0, bool keepdims = true, bool select_last_index = false) {
  return make_node(op::arg_reduce<false, OutRank>{{}, axis, keepdims, select_last_index}, std::forward<X>(x));
}
FUSOR_OPERAND_FALLBACK(argmin, "e", "argmin(x, axis, keepdims, select_last_index): x is an expression")

}  // namespace fusor
