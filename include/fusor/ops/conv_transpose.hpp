#pragma once
/// @file ops/conv_transpose.hpp
/// conv_transpose2d (ONNX ConvTranspose, opset 11+; PyTorch
/// nn.ConvTranspose2d; the "deconvolution" of U-Net decoders, GAN
/// generators and FPN upsampling): the adjoint of conv2d, computed as one
/// output element per thread (kernels/conv_transpose.hpp), gathering
///   y[n, oc, oh, ow] = b[oc] + sum over ic in oc's group, kh, kw with
///                      oh = ih * s_h - pad_top + kh * d_h (ow likewise)
///                      of x[n, ic, ih, iw] * w[ic, oc mod (C_out / g), kh, kw]
/// (ONNX's col2im reference scatters the same products). fp32 accumulation
/// (f64 for double). Elementwise producers of x are evaluated at the
/// elements read and elementwise consumers of the result's shape run
/// before the store: `relu(batch_norm(conv_transpose2d(relu(x), w), bn))`
/// is one kernel. This is a direct kernel in the row family, not on the
/// GEMM engine (docs/status.md).
#include <fusor/ops/contraction.hpp>
#include <fusor/ops/reduction.hpp>

#include <string>

namespace fusor {

/// conv_transpose2d attributes (ONNX ConvTranspose). Padding is {top, left,
/// bottom, right} and removes output rows / columns (PyTorch's `padding`);
/// output_padding adds rows / columns at the bottom / right (PyTorch's
/// `output_padding`, ONNX's). Output extent per spatial dim:
///   stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - pad_begin - pad_end.
/// ONNX's output_shape (`output_size` here) and auto_pad SAME_UPPER /
/// SAME_LOWER (output = in * stride) instead fix the output extent and
/// derive the padding from it (ONNX's rule: total = stride * (in - 1) +
/// output_padding + (kernel - 1) * dilation + 1 - output; SAME_UPPER puts
/// floor(total / 2) at the beginning, the others the rest at the beginning);
/// resolved when the node is built. VALID means no padding.
struct conv_transpose2d_params {
  index_t stride[2] = {1, 1};
  index_t padding[4] = {0, 0, 0, 0};
  index_t output_padding[2] = {0, 0};
  index_t dilation[2] = {1, 1};
  index_t groups = 1;
  index_t output_size[2] = {0, 0};  ///< ONNX output_shape (H, W); 0: computed from padding
  fusor::auto_pad_mode auto_pad = fusor::auto_pad_mode::notset;
};

namespace detail {
/// Python's floor division (ONNX's reference splits a negative total padding with it).
inline index_t floor_div2(index_t t) { return t >= 0 ? t / 2 : -((-t + 1) / 2); }
/// p with output_size / auto_pad resolved into padding for input spatial
/// extents in[2] and kernel extents k[2] (the rule in conv_transpose2d_params).
inline conv_transpose2d_params resolve_output_size(conv_transpose2d_params p, const index_t in[2], const index_t k[2]) {
  const bool same = p.auto_pad == auto_pad_mode::same_upper || p.auto_pad == auto_pad_mode::same_lower;
  for (int d = 0; d < 2; ++d) {
    if (p.auto_pad == auto_pad_mode::valid) {
      p.padding[d] = p.padding[d + 2] = 0;
      continue;
    }
    index_t out = p.output_size[d];
    if (out <= 0 && same) out = in[d] * p.stride[d];
    if (out <= 0) continue;
    const index_t total = p.stride[d] * (in[d] - 1) + p.output_padding[d] + (k[d] - 1) * p.dilation[d] + 1 - out;
    const index_t half = floor_div2(total);
    p.padding[d] = p.auto_pad == auto_pad_mode::same_upper ? half : total - half;
    p.padding[d + 2] = total - p.padding[d];
  }
  p.auto_pad = auto_pad_mode::notset;
  p.output_size[0] = p.output_size[1] = 0;
  return p;
}
}  // namespace detail

namespace op {

/// conv_transpose2d of x [N, C_in, H, W] with w [C_in, C_out / groups, kH, kW]
/// and a bias [C_out] (or none).
struct conv_transpose2d : reduction_base {
  static constexpr int arity = 3;
  static constexpr const char* name = "conv_transpose2d";
  static constexpr double flops = 2;  // (per output and product; priced at its shapes below)
  /// Reads its input at other positions than it writes: no in-place run (exec/validate.hpp).
  static constexpr bool reads_other_positions = true;
  conv_transpose2d_params params;
  bool has_bias = false;
  template <class X, class W, class B>
  using result = value_t<X>;
  template <class X, class W, class B>
  using operand_types = type_list<value_t<X>, value_t<W>, value_t<B>>;
  template <class X, class W, class B>
  using static_extents = dextents<4>;

  /// FLOPs per output element: a multiply-add per input channel of the
  /// group and kernel tap, of which 1 / (stride_h * stride_w) land on it on average.
  template <int RX, int RW, int RB>
  static double flops_per_output(const conv_transpose2d& op, const shape<RX>& x, const shape<RW>& w, const shape<RB>&) {
    const auto& p = op.params;
    const double taps = double(w[2]) * double(w[3]) / double(p.stride[0] * p.stride[1]);
    return 2.0 * double(x[1]) / double(p.groups > 0 ? p.groups : 1) * (taps < 1 ? 1 : taps) + (op.has_bias ? 1 : 0);
  }

  template <int RX, int RW, int RB>
  static shape<4> output_shape(const conv_transpose2d& op, const shape<RX>& x, const shape<RW>& w, const shape<RB>& b) {
    const auto& p = op.params;
    const auto where = [&] {
      return "fusor: conv_transpose2d: x " + to_string<RX>(x) + ", w " + to_string<RW>(w) +
             (op.has_bias ? ", b " + to_string<RB>(b) : std::string());
    };
    if (p.groups < 1 || x[1] % p.groups != 0)
      throw shape_error(where() + ": groups " + std::to_string(p.groups) + " must divide C_in");
    if (w[0] != x[1])
      throw shape_error(where() + ": w must be [C_in, C_out / groups, kH, kW] with C_in = x's " + std::to_string(x[1]));
    for (int d = 0; d < 2; ++d)
      if (p.stride[d] < 1 || p.dilation[d] < 1 || p.output_padding[d] < 0)
        throw shape_error(where() + ": stride and dilation must be >= 1 and output_padding >= 0");
    const index_t c_out = w[1] * p.groups;
    if constexpr (RB == 1) {
      if (op.has_bias && b[0] != c_out)
        throw shape_error(where() + ": the bias must be [C_out] = [" + std::to_string(c_out) + "]");
    }
    shape<4> out{x[0], c_out, 0, 0};
    for (int d = 0; d < 2; ++d) {
      out[2 + d] = p.stride[d] * (x[2 + d] - 1) + p.output_padding[d] + (w[2 + d] - 1) * p.dilation[d] + 1 -
                   p.padding[d] - p.padding[d + 2];
      if (out[2 + d] < 1)
        throw shape_error(where() + ": the output would have " + std::to_string(out[2 + d]) + " rows / columns along dim " +
                          std::to_string(2 + d) + " (the padding removes them all)");
    }
    return out;
  }
};

}  // namespace op

template <class E>
inline constexpr bool is_conv_transpose2d_node_v = false;
template <class X, class W, class B>
inline constexpr bool is_conv_transpose2d_node_v<node<op::conv_transpose2d, X, W, B>> = true;

/// conv_transpose2d(x, w, b, params): x [N, C_in, H, W] (NCHW), w
/// [C_in, C_out / groups, kH, kW] (ONNX's and PyTorch's layout), b [C_out]
/// or nullptr; float, double, half or bfloat16 (accumulated in fp32, f64
/// for double); result [N, C_out, OH, OW] of x's dtype (extents in
/// conv_transpose2d_params).
/// @throws shape_error (when shapes are checked) naming conv_transpose2d and
///         the shapes: C_in not x's channels or not divisible by groups, a
///         bias of another length, a stride or dilation < 1, an output
///         extent < 1.
template <expression X, expression W, class B = std::nullptr_t>
  requires(operand<B> || std::is_same_v<std::remove_cvref_t<B>, std::nullptr_t>)
auto conv_transpose2d(X&& x, W&& w, B&& b = nullptr, conv_transpose2d_params p = {}) {
  static_assert(rank_v<X> == 4, "fusor: conv_transpose2d: x must be [N, C_in, H, W] (rank 4)");
  static_assert(rank_v<W> == 4, "fusor: conv_transpose2d: w must be [C_in, C_out / groups, kH, kW] (rank 4)");
  static_assert(std::is_floating_point_v<value_t<X>> && std::is_floating_point_v<value_t<W>>,
                "fusor: conv_transpose2d: x and w must be floating (float, double, half or bfloat16; cast<float> integers first)");
  if (p.auto_pad == auto_pad_mode::valid && (p.output_size[0] > 0 || p.output_size[1] > 0))
    throw argument_error("fusor: conv_transpose2d: output_size and auto_pad VALID both fix the output extent: give one");
  if (p.output_size[0] > 0 || p.output_size[1] > 0 || p.auto_pad != auto_pad_mode::notset) {
    const auto xs = shape_of(x), ws = shape_of(w);
    const index_t in[2] = {xs[2], xs[3]}, k[2] = {ws[2], ws[3]};
    p = detail::resolve_output_size(p, in, k);
  }
  auto bias = detail::bias_operand(std::forward<B>(b));
  static_assert(!detail::has_bias_v<B> || rank_v<decltype(bias)> <= 1, "fusor: conv_transpose2d: the bias must be [C_out] (rank 1)");
  // (make_node_unchecked: x, w and b do not broadcast against each other; output_shape checks them)
  return make_node_unchecked(op::conv_transpose2d{{}, p, detail::has_bias_v<B>}, std::remove_cvref_t<X>(std::forward<X>(x)),
                             std::remove_cvref_t<W>(std::forward<W>(w)), bias);
}

/// conv_transpose2d(x, w, params): no bias.
template <expression X, expression W>
auto conv_transpose2d(X&& x, W&& w, conv_transpose2d_params p) {
  return conv_transpose2d(std::forward<X>(x), std::forward<W>(w), nullptr, p);
}

// (params may be a braced list, which a pack cannot deduce: written out)
template <class X, class W, class B = std::nullptr_t>
  requires(diagnostic::some_operand_misfits<X, W, B>("een") &&
           !(expression<X> && expression<W> && std::is_same_v<B, conv_transpose2d_params>))
auto conv_transpose2d(const X&, const W&, const B& = nullptr, conv_transpose2d_params = {}) {
  static_assert(diagnostic::always_false<X, W, B>,
                "fusor: conv_transpose2d: an operand is not a fusor expression; conv_transpose2d(x, w, b, params): x "
                "and w are expressions, b an expression, a number or nullptr; " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}

}  // namespace fusor
