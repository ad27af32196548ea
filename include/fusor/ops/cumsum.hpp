#pragma once
/// @file ops/cumsum.hpp
/// cumsum along one axis (ONNX CumSum, opset 14; NumPy cumsum; PyTorch
/// torch.cumsum): y[..., i, ...] = x[..., 0, ...] + ... + x[..., i, ...],
/// summed in order (the first element first), or from the end with
/// `reverse`, or without the element itself with `exclusive` (the first
/// output is 0). A row kernel (kernels/reduction.hpp, scan_rows) with the
/// row family's prologue and epilogue fusion; fp32 accumulation for 16-bit
/// inputs, the input type otherwise (integers wrap as op::add does).
#include <fusor/ops/reduction.hpp>

#include <string>

namespace fusor {
namespace op {

struct cumsum : reduction_base {
  static constexpr int arity = 1;
  static constexpr const char* name = "cumsum";
  static constexpr double flops = 1;
  int axis = 0;
  bool exclusive = false;
  bool reverse = false;
  template <class X>
  using result = value_t<X>;
  template <class X>
  using operand_types = type_list<value_t<X>>;
  template <class X>
  using static_extents = static_extents_t<X>;
  template <int R>
  static shape<R> output_shape(const cumsum& op, const shape<R>& in) {
    static_assert(R >= 1, "fusor: cumsum: x must have rank >= 1");
    (void)single_mask<R>(op.axis, name, &in);
    return in;
  }
  template <int R>
  auto mask() const { return single_mask<R>(axis, name); }
};

}  // namespace op

template <class E>
inline constexpr bool is_cumsum_node_v = false;
template <class X>
inline constexpr bool is_cumsum_node_v<node<op::cumsum, X>> = true;

/// cumsum(x, axis, exclusive, reverse): x any dtype, rank >= 1; the result
/// has x's shape and dtype.
/// @throws shape_error (when shapes are checked) for an axis out of range,
///         naming cumsum and x's shape.
template <expression X>
auto cumsum(X&& x, int axis, bool exclusive = false, bool reverse = false) {
  return make_node(op::cumsum{{}, axis, exclusive, reverse}, std::forward<X>(x));
}
FUSOR_OPERAND_FALLBACK(cumsum, "e", "cumsum(x, axis, exclusive, reverse): x is an expression")

}  // namespace fusor
