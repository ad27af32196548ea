#pragma once
/// @file ops/resize.hpp
/// resize of an image's spatial dims (ONNX Resize, opset 19, modes nearest
/// and linear; PyTorch F.interpolate nearest / bilinear; upsampling in
/// U-Net, FPN and YOLO necks). One output element per thread
/// (kernels/resize.hpp): its source coordinate by ONNX's
/// coordinate_transformation_mode, then the nearest element or the bilinear
/// mix of four (edge elements repeated past the border, as ONNX's
/// reference pads); elementwise producers are evaluated at the elements
/// read and elementwise consumers of the result's shape run before the store.
#include <fusor/ops/matmul.hpp>
#include <fusor/ops/reduction.hpp>

#include <cmath>
#include <string>

namespace fusor {

/// How an output pixel is computed from its source coordinate.
enum class resize_mode { nearest, linear };
/// ONNX coordinate_transformation_mode: where output pixel x samples the
/// input (x_original as a function of x, the scale and both lengths).
enum class resize_coordinates { half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric };
/// ONNX nearest_mode: how a fractional x_original picks its pixel.
enum class resize_rounding { round_prefer_floor, round_prefer_ceil, floor, ceil };

/// The output size of a resize and how it samples. Give `size` (output
/// extents of H and W), or `scale` (output = floor(input * scale)), or both
/// (ONNX keep_aspect_ratio_policy: the size computed outside, the scale used
/// for the coordinates). Without `scale`, the coordinates use output / input.
struct resize_params {
  index_t size[2] = {0, 0};
  double scale[2] = {0, 0};
  resize_mode mode = resize_mode::nearest;
  resize_coordinates coordinates = resize_coordinates::half_pixel;
  resize_rounding rounding = resize_rounding::round_prefer_floor;
  fusor::layout layout = fusor::layout::nchw;
};

namespace op {

/// resize over x [N, C, H, W] (nchw) or [N, H, W, C] (nhwc).
struct resize : reduction_base {
  static constexpr int arity = 1;
  static constexpr const char* name = "resize";
  static constexpr double flops = 8;
  /// Reads its input at other positions than it writes: no in-place run (exec/validate.hpp).
  static constexpr bool reads_other_positions = true;
  resize_params params;
  template <class X>
  using result = value_t<X>;
  template <class X>
  using operand_types = type_list<value_t<X>>;
  template <class X>
  using static_extents = dextents<4>;

  constexpr int h_dim() const { return params.layout == layout::nhwc ? 1 : 2; }
  /// Output extent of spatial dim d (0: H, 1: W) for input extent `in`.
  index_t out_extent(int d, index_t in) const {
    if (params.size[d] > 0) return params.size[d];
    return index_t(std::floor(double(in) * params.scale[d]));
  }
  /// The scale the coordinates use along spatial dim d.
  double coordinate_scale(int d, index_t in) const {
    return params.scale[d] > 0 ? params.scale[d] : double(out_extent(d, in)) / double(in);
  }
  template <int R>
  static shape<R> output_shape(const resize& op, const shape<R>& in) {
    static_assert(R == 4, "fusor: resize: x must be [N, C, H, W] or [N, H, W, C] (rank 4)");
    shape<R> out = in;
    for (int d = 0; d < 2; ++d) {
      const int dim = op.h_dim() + d;
      out[dim] = op.out_extent(d, in[dim]);
      if (out[dim] < 1 || in[dim] < 1)
        throw shape_error("fusor: resize: x " + to_string<R>(in) + " resized to " + std::to_string(out[dim]) +
                          " along dim " + std::to_string(dim) + ": every extent must be >= 1");
    }
    return out;
  }
};

}  // namespace op

template <class E>
inline constexpr bool is_resize_node_v = false;
template <class X>
inline constexpr bool is_resize_node_v<node<op::resize, X>> = true;

/// resize(x, params): x [N, C, H, W] (params.layout = nchw) or [N, H, W, C],
/// any dtype; the result has x's dtype (linear mixes in fp32 or f64 and
/// rounds once). Examples: `resize(x, {.scale = {2, 2}})` (nearest, 2x
/// upsample), `resize(x, {.size = {56, 56}, .mode = resize_mode::linear,
/// .coordinates = resize_coordinates::align_corners})`.
/// @throws argument_error (here) when neither size nor scale is given for a
///         dim, or one is negative; shape_error when an extent would be 0.
template <expression X>
auto resize(X&& x, resize_params p) {
  static_assert(rank_v<X> == 4, "fusor: resize: x must be [N, C, H, W] or [N, H, W, C] (rank 4)");
  for (int d = 0; d < 2; ++d)
    if ((p.size[d] <= 0 && !(p.scale[d] > 0)) || p.size[d] < 0 || p.scale[d] < 0)
      throw argument_error("fusor: resize: give size[" + std::to_string(d) + "] > 0 or scale[" + std::to_string(d) +
                           "] > 0 (size " + std::to_string(p.size[d]) + ", scale " + std::to_string(p.scale[d]) + ")");
  return make_node(op::resize{{}, p}, std::forward<X>(x));
}
// (params is a braced list, which a pack cannot deduce: written out)
template <class X>
  requires(diagnostic::some_operand_misfits<X>("e"))
auto resize(const X&, resize_params = {}) {
  static_assert(diagnostic::always_false<X>, "fusor: resize: an operand is not a fusor expression; resize(x, "
                                             "resize_params): x is an expression; " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}

}  // namespace fusor
