#pragma once
/// @file ops/topk.hpp
/// topk along one axis (ONNX TopK, opset 11; torch.topk): the k largest (or
/// smallest) elements of each row, in order, and their indices. ONNX's
/// order: by value (largest first, or smallest first), equal values by the
/// lower index first; NaN ranks above +inf (first among the largest, last
/// among the smallest), as NumPy's sort that ONNX's reference uses. Values
/// and indices are two ops over the same row kernel (kernels/topk.hpp): run
/// both with `fusor::siblings(topk(x, k), topk_indices(x, k))` (two kernels)
/// or either alone. The row kernel selects k times over the row (k * L
/// comparisons per row): meant for small k (classification top-5, beam
/// search, MoE routing); elementwise producers and consumers are fused.
#include <fusor/ops/reduction.hpp>

#include <concepts>
#include <cstdint>
#include <string>

namespace fusor {
namespace op {

/// topk over `axis`: the values (Indices = false, x's dtype) or their int64
/// indices (Indices = true); the result is x's shape with k along the axis.
template <bool Indices>
struct topk : reduction_base {
  static constexpr int arity = 1;
  static constexpr bool returns_indices = Indices;
  static constexpr const char* name = Indices ? "topk_indices" : "topk";
  static constexpr double flops = 4;
  /// Writes a position along the axis from elements read at others: no in-place run (exec/validate.hpp).
  static constexpr bool reads_other_positions = true;
  index_t k = 1;
  int axis = -1;
  bool largest = true;
  template <class X>
  using result = std::conditional_t<Indices, std::int64_t, value_t<X>>;
  template <class X>
  using operand_types = type_list<value_t<X>>;
  template <class X>
  using static_extents = dextents<std::size_t(rank_v<X>)>;

  template <int R>
  static shape<R> output_shape(const topk& op, const shape<R>& in) {
    static_assert(R >= 1, "fusor: topk: x must have rank >= 1");
    const auto m = single_mask<R>(op.axis, name, &in);
    shape<R> out = in;
    for (int d = 0; d < R; ++d)
      if (m[d]) {
        if (op.k < 0 || op.k > in[d])
          throw shape_error(std::string("fusor: ") + name + ": k = " + std::to_string(op.k) + " for x " + to_string<R>(in) +
                            " (want 0 <= k <= " + std::to_string(in[d]) + ", the axis's extent)");
        out[d] = op.k;
      }
    return out;
  }
  template <int R>
  auto mask() const { return single_mask<R>(axis, name); }
};

}  // namespace op

template <class E>
inline constexpr bool is_topk_node_v = false;
template <bool I, class X>
inline constexpr bool is_topk_node_v<node<op::topk<I>, X>> = true;

/// topk(x, k, axis, largest): the k largest (largest = false: smallest)
/// elements of x along `axis` (default -1), in ONNX's order (see the file
/// comment); x any dtype, the result x's dtype and shape with k along the axis.
/// @throws shape_error (when shapes are checked) for an axis out of range or
///         k outside [0, extent], naming topk and x's shape.
template <expression X>
auto topk(X&& x, index_t k, int axis = -1, bool largest = true) {
  static_assert(rank_v<X> >= 1, "fusor: topk: x must have rank >= 1");
  return make_node(op::topk<false>{{}, k, axis, largest}, std::forward<X>(x));
}
FUSOR_OPERAND_FALLBACK(topk, "e", "topk(x, k, axis, largest): x is an expression")
/// Catches topk(x, k, largest): the 3rd argument is the axis.
template <expression X, std::same_as<bool> B, class... Rest>
auto topk(X&&, index_t, B, Rest...) {
  static_assert(diagnostic::always_false<X, B>, "fusor: topk: the 3rd argument is the axis (an integer), largest the "
                                                "4th: topk(x, k, -1, false)");
  return 0;
}

/// topk_indices(x, k, axis, largest): the int64 indices along `axis` of the
/// elements topk(x, k, axis, largest) returns, in the same order.
/// @throws as topk, naming topk_indices.
template <expression X>
auto topk_indices(X&& x, index_t k, int axis = -1, bool largest = true) {
  static_assert(rank_v<X> >= 1, "fusor: topk_indices: x must have rank >= 1");
  return make_node(op::topk<true>{{}, k, axis, largest}, std::forward<X>(x));
}
FUSOR_OPERAND_FALLBACK(topk_indices, "e", "topk_indices(x, k, axis, largest): x is an expression")
/// Catches topk_indices(x, k, largest): the 3rd argument is the axis.
template <expression X, std::same_as<bool> B, class... Rest>
auto topk_indices(X&&, index_t, B, Rest...) {
  static_assert(diagnostic::always_false<X, B>, "fusor: topk_indices: the 3rd argument is the axis (an integer), "
                                                "largest the 4th: topk_indices(x, k, -1, false)");
  return 0;
}

}  // namespace fusor
