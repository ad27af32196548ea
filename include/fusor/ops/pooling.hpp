#pragma once
/// @file ops/pooling.hpp
/// 2-D pooling: max_pool2d and avg_pool2d (ONNX MaxPool / AveragePool,
/// PyTorch nn.MaxPool2d / nn.AvgPool2d), max_pool2d_indices (MaxPool's
/// second output, Indices), global_average_pool and global_max_pool (ONNX
/// GlobalAveragePool / GlobalMaxPool).
///
/// A pooling op is a reduction over a window of its input: it runs in the
/// row-reduction family (kernels/reduction.hpp, pool_windows), one output
/// element per thread, its elementwise producers evaluated at each window
/// element while loading (relu(batch_norm(x)) -> max_pool2d is one kernel)
/// and its elementwise consumers applied before the store. Global pooling is
/// a mean / max over the spatial dims (ops/reduction.hpp).
#include <fusor/ops/matmul.hpp>
#include <fusor/ops/reduction.hpp>

#include <string>

namespace fusor {

/// The window of a 2-D pooling: extents and steps in elements of the input's
/// spatial dims (H, W). ONNX's attributes; PyTorch's `stride` default (the
/// kernel) is not ONNX's (1): write `.stride` when porting PyTorch code.
struct pool2d_params {
  index_t kernel[2] = {0, 0};  ///< window extents (kh, kw); required, >= 1
  index_t stride[2] = {1, 1};
  /// (top, left, bottom, right), as ONNX's pads (h_begin, w_begin, h_end, w_end).
  /// Padded positions are skipped: max ignores them; avg_pool2d divides by
  /// the positions inside the input unless count_include_pad.
  index_t padding[4] = {0, 0, 0, 0};
  index_t dilation[2] = {1, 1};
  fusor::layout layout = fusor::layout::nchw;
  /// ONNX auto_pad (as conv2d): resolved into `padding` when the node is built.
  fusor::auto_pad_mode auto_pad = fusor::auto_pad_mode::notset;
  /// Output extent ceil(...) instead of floor(...); a last window that would
  /// start inside the end padding is dropped (PyTorch, ONNX >= 1.16).
  bool ceil_mode = false;
  /// avg_pool2d only: divide by the window positions inside the padded input
  /// (ONNX count_include_pad = 1) instead of those inside the input.
  bool count_include_pad = false;
  /// max_pool2d_indices (ONNX MaxPool storage_order): 0 = the index of the
  /// maximum in x flattened row-major; 1 = with H and W swapped in the
  /// flattening (ONNX's column-major order; nchw only). max_pool2d accepts
  /// and ignores it; avg_pool2d refuses a value other than 0.
  int storage_order = 0;
};

namespace detail {
/// Output extent of one spatial dim (PyTorch's pooling_output_shape, which
/// ONNX's reference follows since onnx 1.16).
inline index_t pool_out_extent(index_t in, index_t k, index_t s, index_t d, index_t lo, index_t hi, bool ceil_mode) {
  const index_t span = (k - 1) * d + 1, room = in + lo + hi - span;
  if (room < 0) return 0;
  index_t out = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + lo) --out;  // the last window would start in the end padding
  return out;
}
/// p's attributes checked (argument_error naming op).
inline void check_pool_params(const pool2d_params& p, const char* op) {
  auto bad = [&](const char* what, index_t v) {
    throw argument_error(std::string("fusor: ") + op + ": " + what + " = " + std::to_string(v) + " (want >= " +
                         (std::string(what).rfind("padding", 0) == 0 ? "0" : "1") + ")");
  };
  for (int d = 0; d < 2; ++d) {
    if (p.kernel[d] < 1) bad(d == 0 ? "kernel[0]" : "kernel[1]", p.kernel[d]);
    if (p.stride[d] < 1) bad(d == 0 ? "stride[0]" : "stride[1]", p.stride[d]);
    if (p.dilation[d] < 1) bad(d == 0 ? "dilation[0]" : "dilation[1]", p.dilation[d]);
  }
  static const char* pads[4] = {"padding[0]", "padding[1]", "padding[2]", "padding[3]"};
  for (int d = 0; d < 4; ++d)
    if (p.padding[d] < 0) bad(pads[d], p.padding[d]);
}
}  // namespace detail

namespace op {

/// max_pool2d (Avg = false) or avg_pool2d (Avg = true) over x [N, C, H, W]
/// (nchw) or [N, H, W, C] (nhwc): y[n, c, oh, ow] = max / average of
/// x[n, c, oh * s - pad_top + kh * d, ow * s - pad_left + kw * d] over the
/// window positions inside x. The result is [N, C, OH, OW] (or
/// [N, OH, OW, C]) with OH = floor or ceil((H + pads - (kh - 1) * d - 1) / s) + 1.
/// Indices = true (max only): the int64 flat index into x of each window's
/// maximum instead of its value (max_pool2d_indices).
template <bool Avg, bool Indices = false>
struct pool2d : reduction_base {
  static_assert(!(Avg && Indices), "fusor: pooling indices exist for max_pool2d only");
  static constexpr int arity = 1;
  static constexpr bool average = Avg;
  static constexpr bool indices = Indices;
  static constexpr const char* name = Indices ? "max_pool2d_indices" : Avg ? "avg_pool2d" : "max_pool2d";
  static constexpr double flops = 1;  ///< per window element
  /// Reads its input at other positions than it writes: no in-place run (exec/validate.hpp).
  static constexpr bool reads_other_positions = true;
  pool2d_params params;

  template <class X>
  using result = std::conditional_t<Indices, std::int64_t, std::conditional_t<Avg, floating_t<X>, value_t<X>>>;
  template <class X>
  using operand_types = type_list<std::conditional_t<Indices, value_t<X>, result<X>>>;
  template <class X>
  using static_extents = dextents<4>;

  /// The input dims holding H and W.
  constexpr int h_dim() const { return params.layout == layout::nhwc ? 1 : 2; }
  constexpr int w_dim() const { return h_dim() + 1; }

  template <int R>
  static shape<R> output_shape(const pool2d& op, const shape<R>& in) {
    static_assert(R == 4, "fusor: max_pool2d / avg_pool2d: x must be [N, C, H, W] or [N, H, W, C] (rank 4)");
    const auto& p = op.params;
    shape<R> out = in;
    for (int d = 0; d < 2; ++d) {
      const int dim = op.h_dim() + d;
      out[dim] = detail::pool_out_extent(in[dim], p.kernel[d], p.stride[d], p.dilation[d], p.padding[d],
                                         p.padding[d + 2], p.ceil_mode);
      if (out[dim] < 1)
        throw shape_error(std::string("fusor: ") + name + ": the window (kernel " + std::to_string(p.kernel[0]) + "x" +
                          std::to_string(p.kernel[1]) + ", dilation " + std::to_string(p.dilation[0]) + "x" +
                          std::to_string(p.dilation[1]) + ") does not fit x " + to_string<R>(in) +
                          " with its padding: no output");
    }
    return out;
  }
};
using max_pool2d = pool2d<false>;
using avg_pool2d = pool2d<true>;

}  // namespace op

template <class E>
inline constexpr bool is_pool_node_v = false;
template <bool Avg, bool Indices, class X>
inline constexpr bool is_pool_node_v<node<op::pool2d<Avg, Indices>, X>> = true;

namespace detail {
template <bool Avg, bool Indices = false, class X>
auto make_pool2d(X&& x, pool2d_params p) {
  static_assert(rank_v<X> == 4, "fusor: max_pool2d / avg_pool2d: x must be [N, C, H, W] or [N, H, W, C] (rank 4)");
  constexpr const char* name = op::pool2d<Avg, Indices>::name;
  check_pool_params(p, name);
  // (max_pool2d accepts ONNX MaxPool's storage_order and ignores it: it
  // orders Indices only, so a node's attributes can be passed whole.)
  if (p.storage_order != 0 && (Avg || p.storage_order != 1 || p.layout != layout::nchw))
    throw argument_error(std::string("fusor: ") + name + ": storage_order = " + std::to_string(p.storage_order) +
                         (Avg ? " (an attribute of max pooling only)" : " (want 0, or 1 with layout nchw)"));
  if (p.auto_pad != auto_pad_mode::notset) {
    conv2d_params c;
    for (int d = 0; d < 2; ++d) {
      c.stride[d] = p.stride[d];
      c.dilation[d] = p.dilation[d];
    }
    c.auto_pad = p.auto_pad;
    const auto xs = shape_of(x);
    const int h = p.layout == layout::nhwc ? 1 : 2;
    c = resolve_auto_pad(c, xs[h], xs[h + 1], p.kernel[0], p.kernel[1]);
    for (int d = 0; d < 4; ++d) p.padding[d] = c.padding[d];
    p.auto_pad = auto_pad_mode::notset;
  }
  return make_node(op::pool2d<Avg, Indices>{{}, p}, std::forward<X>(x));
}
}  // namespace detail

/// max_pool2d(x, params): the maximum over each window of x [N, C, H, W]
/// (params.layout = nchw) or [N, H, W, C] (nhwc), any dtype; NaN propagates,
/// padded positions are skipped (ONNX MaxPool output Y; PyTorch MaxPool2d).
/// Example: ResNet's stem `max_pool2d(x, {.kernel = {3, 3}, .stride = {2, 2},
/// .padding = {1, 1, 1, 1}})`.
/// @throws argument_error a kernel, stride or dilation < 1, or a padding < 0
///         (here); shape_error when the window does not fit (no output).
template <expression X>
auto max_pool2d(X&& x, pool2d_params p) { return detail::make_pool2d<false>(std::forward<X>(x), p); }
// (params is a braced list, which a pack cannot deduce: written out)
#define FUSOR_POOL_FALLBACK(NAME)                                                                            \
  template <class X>                                                                                         \
    requires(diagnostic::some_operand_misfits<X>("e"))                                                       \
  auto NAME(const X&, pool2d_params = {}) {                                                                  \
    static_assert(diagnostic::always_false<X>, "fusor: " #NAME ": an operand is not a fusor expression; " #NAME \
                                               "(x, pool2d_params): x is an expression; " FUSOR_WHAT_IS_AN_EXPRESSION); \
    return 0;                                                                                                \
  }
FUSOR_POOL_FALLBACK(max_pool2d)

/// max_pool2d_indices(x, params): where max_pool2d(x, params) takes each
/// window's maximum, as an int64 index into x flattened row-major over its
/// logical shape ((n * C + c) * H + h) * W + w for nchw (ONNX MaxPool's
/// Indices output; PyTorch's return_indices counts within one (n, c) plane
/// instead: subtract (n * C + c) * H * W). With params.storage_order = 1
/// (nchw only) H and W swap in the flattening: ((n * C + c) * W + w) * H + h
/// (ONNX's column-major order). Ties go to the first position in row-major
/// window order (ONNX's reference); a NaN is the maximum (as max_pool2d
/// returns it); a window wholly in the padding gives -1.
/// @throws argument_error as max_pool2d, and storage_order not 0 or 1 (1 needs
///         nchw; max_pool2d checks the same).
template <expression X>
auto max_pool2d_indices(X&& x, pool2d_params p) { return detail::make_pool2d<false, true>(std::forward<X>(x), p); }
FUSOR_POOL_FALLBACK(max_pool2d_indices)

/// avg_pool2d(x, params): the mean over each window (ONNX AveragePool,
/// PyTorch AvgPool2d): the sum of the positions inside x (fp32 for 16-bit
/// inputs) divided by their count, or with count_include_pad by the
/// positions inside the padded input. Result f32 for integer inputs.
/// @throws argument_error, shape_error as max_pool2d.
template <expression X>
auto avg_pool2d(X&& x, pool2d_params p) { return detail::make_pool2d<true>(std::forward<X>(x), p); }
FUSOR_POOL_FALLBACK(avg_pool2d)
#undef FUSOR_POOL_FALLBACK

namespace detail {
/// The spatial axes of a rank-R input in layout l: 2 .. R - 1 (nchw) or
/// 1 .. R - 2 (nhwc).
template <int R>
axis_list spatial_axes(layout l) {
  static_assert(R >= 3, "fusor: global pooling: x must be [N, C, spatial...] (rank >= 3)");
  axis_list a;
  for (int d = 0; d < R - 2; ++d) a.push(l == layout::nhwc ? 1 + d : 2 + d);
  return a;
}
}  // namespace detail

/// global_average_pool(x): the mean over the spatial dims of x [N, C, D1,
/// ...] (or [N, D1, ..., C] with layout::nhwc), kept as extents 1 (ONNX
/// GlobalAveragePool: [N, C, 1, 1] for an image). A reduction: its
/// elementwise producers and consumers fuse with it.
template <expression X>
auto global_average_pool(X&& x, layout l = layout::nchw) {
  return mean(std::forward<X>(x), detail::spatial_axes<rank_v<X>>(l), true);
}
FUSOR_OPERAND_FALLBACK(global_average_pool, "e", "global_average_pool(x, layout): x is an expression")
/// global_max_pool(x): the maximum over the spatial dims, kept as extents 1
/// (ONNX GlobalMaxPool); NaN propagates.
template <expression X>
auto global_max_pool(X&& x, layout l = layout::nchw) {
  return max_reduce(std::forward<X>(x), detail::spatial_axes<rank_v<X>>(l), true);
}
FUSOR_OPERAND_FALLBACK(global_max_pool, "e", "global_max_pool(x, layout): x is an expression")

}  // namespace fusor
