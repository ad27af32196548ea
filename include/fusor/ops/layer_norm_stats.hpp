#pragma once
/// @file ops/layer_norm_stats.hpp
/// ONNX LayerNormalization's optional outputs Mean and InvStdDev:
///   layer_norm_mean(x, axis)            = mean over dims axis..R-1
///   layer_norm_inv_std_dev(x, axis, eps) = 1 / sqrt(var + eps), var biased
/// with the reduced dims kept as 1 (ONNX's shape [d0, .., d_{axis-1}, 1, .., 1]).
/// Computed by layer_norm's own statistics (kernels/parts/norm_stats.hpp:
/// Welford mean and a correction pass), in the same lanes, so they are bit
/// for bit the mean and inverse deviation layer_norm(x, ..., axis, eps)
/// normalizes with. A row kernel each (kernels/reduction.hpp,
/// norm_stat_rows); run with the normalization as
/// `fusor::siblings(layer_norm(x, g, b, axis, eps), layer_norm_mean(x, axis),
/// layer_norm_inv_std_dev(x, axis, eps))` (three kernels). fp32 for 16-bit
/// inputs (ONNX's stash_type float), f64 for double.
#include <fusor/ops/reduction.hpp>

#include <concepts>

namespace fusor {
namespace op {

/// Mean (Inv = false) or InvStdDev (Inv = true) of layer_norm over dims axis..R-1.
template <bool Inv>
struct layer_norm_stat : reduction_base {
  static constexpr int arity = 1;
  static constexpr bool inv_std_dev = Inv;
  static constexpr const char* name = Inv ? "layer_norm_inv_std_dev" : "layer_norm_mean";
  static constexpr double flops = Inv ? 6 : 4;
  /// A reduction over axes: an epilogue takes scalar operands only (pattern/rules.hpp).
  static constexpr bool reduces_axes = true;
  int axis = -1;
  float eps = 1e-5f;
  template <class X>
  using result = floating_t<X>;
  template <class X>
  using operand_types = type_list<floating_t<X>>;
  template <class X>
  using static_extents = dextents<std::size_t(rank_v<X>)>;

  template <int R>
  static shape<R> output_shape(const layer_norm_stat& op, const shape<R>& in) {
    const auto m = trailing_mask<R>(op.axis, name, &in);
    shape<R> out = in;
    for (int d = 0; d < R; ++d)
      if (m[d]) out[d] = 1;
    return out;
  }
  template <int R>
  auto mask() const { return trailing_mask<R>(axis, name); }
};

}  // namespace op

template <class E>
inline constexpr bool is_layer_norm_stat_node_v = false;
template <bool Inv, class X>
inline constexpr bool is_layer_norm_stat_node_v<node<op::layer_norm_stat<Inv>, X>> = true;

/// layer_norm_mean(x, axis): ONNX LayerNormalization's Mean output, the
/// mean of x over dims axis..R-1 as layer_norm computes it; x's shape with
/// those dims 1; floating (f32 for integer and 16-bit inputs).
/// @throws shape_error (when shapes are checked) for an axis out of range.
template <expression X>
auto layer_norm_mean(X&& x, int axis = -1) {
  return make_node(op::layer_norm_stat<false>{{}, axis, 0.0f}, std::forward<X>(x));
}
FUSOR_OPERAND_FALLBACK(layer_norm_mean, "e", "layer_norm_mean(x, axis): x is an expression")
/// Catches layer_norm_mean(x, eps): the 2nd argument is the axis.
template <expression X, std::floating_point A>
auto layer_norm_mean(X&&, A) {
  static_assert(diagnostic::always_false<X, A>, "fusor: layer_norm_mean: the 2nd argument is the axis (an integer); "
                                                "the mean takes no eps");
  return 0;
}

/// layer_norm_inv_std_dev(x, axis, eps): ONNX LayerNormalization's
/// InvStdDev output, 1 / sqrt(var + eps) with the biased variance of x over
/// dims axis..R-1 as layer_norm computes it; shape and dtype as layer_norm_mean.
/// @throws shape_error (when shapes are checked) for an axis out of range.
template <expression X>
auto layer_norm_inv_std_dev(X&& x, int axis = -1, float eps = 1e-5f) {
  return make_node(op::layer_norm_stat<true>{{}, axis, eps}, std::forward<X>(x));
}
FUSOR_OPERAND_FALLBACK(layer_norm_inv_std_dev, "e", "layer_norm_inv_std_dev(x, axis, eps): x is an expression")
/// Catches layer_norm_inv_std_dev(x, eps): the 2nd argument is the axis.
template <expression X, std::floating_point A, class... Rest>
auto layer_norm_inv_std_dev(X&&, A, Rest...) {
  static_assert(diagnostic::always_false<X, A>, "fusor: layer_norm_inv_std_dev: the 2nd argument is the axis (an "
                                                "integer), eps the 3rd: layer_norm_inv_std_dev(x, -1, 1e-5f)");
  return 0;
}

}  // namespace fusor
