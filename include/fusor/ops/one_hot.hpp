#pragma once
/// @file ops/one_hot.hpp
/// one_hot (ONNX OneHot, opset 11; PyTorch F.one_hot with an axis):
///   y[..., d, ...] = (indices[...] == d) ? on : off,  d in [0, depth)
/// with the new dim at `axis` (default -1: last), negative indices in
/// [-depth, -1] counted from the end, and any other index (out of range,
/// NaN, or a non-integer float truncated toward zero first) giving a row of
/// `off` (ONNX's rule). One output element per thread (kernels/gather.hpp,
/// one_hot_rows); elementwise producers of the indices and elementwise
/// consumers of the result's shape are fused (label smoothing:
/// `one_hot(labels, K) * (1 - e) + e / K` is one kernel).
#include <fusor/ops/reduction.hpp>

#include <string>

namespace fusor {
namespace op {

/// one_hot with result dtype T over indices of rank RI: rank RI + 1.
template <class T>
struct one_hot : reduction_base {
  static constexpr int arity = 1;
  static constexpr const char* name = "one_hot";
  static constexpr double flops = 1;
  index_t depth = 0;
  int axis = -1;
  double off = 0, on = 1;
  template <class I>
  using result = T;
  template <class I>
  using operand_types = type_list<value_t<I>>;
  template <class I>
  using static_extents = dextents<std::size_t(rank_v<I> + 1)>;

  /// The new dim's position in the rank-(RI + 1) result.
  template <int RI>
  int out_axis() const {
    const int a = axis < 0 ? axis + RI + 1 : axis;
    if (a < 0 || a > RI)
      throw shape_error("fusor: one_hot: axis " + std::to_string(axis) + " is out of range for a result of rank " +
                        std::to_string(RI + 1));
    return a;
  }
  template <int RI>
  static auto output_shape(const one_hot& op, const shape<RI>& idx) {
    const int a = op.template out_axis<RI>();
    if (op.depth < 1) throw shape_error("fusor: one_hot: depth " + std::to_string(op.depth) + " (want >= 1)");
    shape<RI + 1> out{};
    for (int d = 0, k = 0; d <= RI; ++d) out[d] = d == a ? op.depth : idx[k++];
    return out;
  }
};

}  // namespace op

template <class E>
inline constexpr bool is_one_hot_node_v = false;
template <class T, class I>
inline constexpr bool is_one_hot_node_v<node<op::one_hot<T>, I>> = true;

/// one_hot<T>(indices, depth, axis, off, on): indices any integer or
/// floating expression; the result has dtype T (float by default) and the
/// indices' shape with `depth` inserted at `axis`.
/// @throws shape_error (when shapes are checked) for depth < 1 or an axis
///         out of range, naming one_hot.
template <class T = float, expression I>
auto one_hot(I&& indices, index_t depth, int axis = -1, double off = 0, double on = 1) {
  static_assert(dtype<T>, "fusor: one_hot: the result type T must be a fusor dtype");
  return make_node(op::one_hot<T>{{}, depth, axis, off, on}, std::forward<I>(indices));
}
FUSOR_OPERAND_FALLBACK(one_hot, "e", "one_hot<T>(indices, depth, axis, off, on): indices is an expression")

}  // namespace fusor
