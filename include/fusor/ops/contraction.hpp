#pragma once
/// @file ops/contraction.hpp
/// Contraction ops, continued (ops/matmul.hpp has the file comment): conv2d and
/// depthwise_conv2d, transpose, and the factories of every contraction.
#include <fusor/ops/matmul.hpp>
#include <fusor/ops/shape_ops.hpp>

namespace fusor {
namespace op {

/// conv2d(x, w, b) (ONNX Conv, PyTorch conv2d): x [N, C, H, W] (nchw) or
/// [N, H, W, C] (nhwc), w [Cout, C / groups, kh, kw], b [Cout] (or absent)
/// -> [N, Cout, Ho, Wo] (nchw) or [N, Ho, Wo, Cout] (nhwc), with
/// Ho = (H + pad_top + pad_bottom - dilation_h * (kh - 1) - 1) / stride_h + 1.
/// Zero padding. Depthwise: groups == C; pointwise: kh = kw = 1.
/// At run: argument_error for stride or dilation < 1, negative padding, a
/// kernel of spatial extent 0, or padding/dilation that overflow int64 in the
/// output extent (the message names the attribute and its value);
/// shape_error for channels, groups, bias or a kernel larger than the input.
struct conv2d : contraction_base {
  static constexpr const char* name = "conv2d";
  static constexpr int arity = 3;
  conv2d_params p;
  bool has_bias = true;
  /// Set by batch-norm folding: the rank of the folded parameters' views (3:
  /// [C, 1, 1], channel axis 1, needs nchw; 1: [C], channel last, needs
  /// nhwc; 0: nothing to check). Checked at run time against the layout.
  int folded_bn_rank = 0;
  template <class X, class W, class B>
  using result = contraction_result<X, W, B>;
  template <class X, class W, class B>
  struct extents_of {
    using XX = static_extents_t<X>;
    using XW = static_extents_t<W>;
    static_assert(diagnostic::check_contraction<XX::rank() == 4, conv2d, diagnostic::input_rank_is_not_4, XX, XW>::value);
    static_assert(diagnostic::check_contraction<XW::rank() == 4, conv2d, diagnostic::weight_rank_is_not_4, XX, XW>::value);
    // Layout is a run-time attribute: only N and (for nchw-looking extents) nothing else is static.
    using type = extents<detail::static_dim<XX, 0>(), dyn, dyn, dyn>;
  };
  template <class X, class W, class B>
  using static_extents = typename extents_of<X, W, B>::type;

  /// Output spatial extent for input extent `in`, kernel `k` along dim d (0 = H, 1 = W),
  /// in checked int64 arithmetic: an attribute that overflows it is an
  /// argument_error naming the attribute and its value (`shapes` ends the
  /// message). Call after the attribute range checks of output_shape.
  index_t out_extent(int d, index_t in, index_t k, const std::string& shapes = std::string()) const {
    const char* axis = d == 0 ? "H" : "W";
    const index_t dil = p.dilation[d], lo = p.padding[d], hi = p.padding[d + 2];
    if (k - 1 > (INT64_MAX - 1) / dil)
      throw argument_error("fusor: conv2d: dilation[" + std::to_string(d) + "] = " + std::to_string(dil) +
                           " with kernel extent " + std::to_string(k) + " along " + axis +
                           " overflows int64 (dilation * (kernel - 1) + 1)" + shapes);
    const index_t span = dil * (k - 1) + 1;
    if (lo > INT64_MAX - in || hi > INT64_MAX - in - lo)
      throw argument_error("fusor: conv2d: padding along " + std::string(axis) + " (" + std::to_string(lo) + ", " +
                           std::to_string(hi) + ") with input extent " + std::to_string(in) + " overflows int64" +
                           shapes);
    const index_t padded = in + lo + hi;
    return padded < span ? 0 : (padded - span) / p.stride[d] + 1;
  }

  template <int RX, int RW, int RB>
  static shape<4> output_shape(const conv2d& op, const shape<RX>& x, const shape<RW>& w, const shape<RB>& b) {
    const bool nhwc = op.p.layout == layout::nhwc;
    const index_t n = x[0], c = nhwc ? x[3] : x[1], h = nhwc ? x[1] : x[2], wd = nhwc ? x[2] : x[3];
    const std::string shapes = " (x " + to_string<RX>(x) + (nhwc ? " NHWC" : " NCHW") + ", w " + to_string<RW>(w) + ")";
    for (int d = 0; d < 2; ++d) {
      if (op.p.stride[d] < 1)
        throw argument_error("fusor: conv2d: stride[" + std::to_string(d) + "] = " + std::to_string(op.p.stride[d]) +
                             " must be >= 1" + shapes);
      if (op.p.dilation[d] < 1)
        throw argument_error("fusor: conv2d: dilation[" + std::to_string(d) + "] = " +
                             std::to_string(op.p.dilation[d]) + " must be >= 1" + shapes);
    }
    for (int d = 0; d < 4; ++d)
      if (op.p.padding[d] < 0)
        throw argument_error("fusor: conv2d: padding[" + std::to_string(d) + "] = " + std::to_string(op.p.padding[d]) +
                             " must be >= 0" + shapes);
    if (w[2] < 1 || w[3] < 1)
      throw argument_error("fusor: conv2d: the kernel's spatial extents (" + std::to_string(w[2]) + ", " +
                           std::to_string(w[3]) + ") must be >= 1 (a 0-size kernel has no output; PyTorch rejects it)" +
                           shapes);
    if (op.p.groups < 1 || c % op.p.groups != 0 || w[0] % op.p.groups != 0)
      throw shape_error("fusor: conv2d: groups = " + std::to_string(op.p.groups) +
                        " must divide the input channels and the output channels" + shapes);
    if (w[1] * op.p.groups != c)
      throw shape_error("fusor: conv2d: input channels " + std::to_string(c) + " != weight channels " +
                        std::to_string(w[1]) + " * groups " + std::to_string(op.p.groups) + shapes);
    if constexpr (RB > 0) {
      if (RB > 1 || (b[0] != w[0] && b[0] != 1))
        throw shape_error("fusor: conv2d: bias " + to_string<RB>(b) + " is not [Cout] with Cout = " +
                          std::to_string(w[0]) + shapes);
    }
    const index_t ho = op.out_extent(0, h, w[2], shapes), wo = op.out_extent(1, wd, w[3], shapes);
    if (ho < 1 || wo < 1)
      throw shape_error("fusor: conv2d: the kernel (dilated) is larger than the padded input" + shapes);
    return nhwc ? shape<4>{n, ho, wo, w[0]} : shape<4>{n, w[0], ho, wo};
  }
  /// 2 C KH KW / groups FLOPs per output element (w is [Cout, C / groups,
  /// KH, KW]; padding taps counted), plus the bias add.
  template <int RX, int RW, int RB>
  static double flops_per_output(const conv2d& op, const shape<RX>&, const shape<RW>& w, const shape<RB>&) {
    return 2.0 * double(w[1]) * double(w[2]) * double(w[3]) + (op.has_bias ? 1.0 : 0.0);
  }
};

/// conv2d declared depthwise (groups == input channels): the same op, a
/// distinct tag so that the planner knows, by type, that a consumer conv may
/// recompute it while loading (depthwise -> pointwise fusion: kh * kw
/// multiply-adds per element).
struct depthwise_conv2d : conv2d {
  static constexpr const char* name = "depthwise_conv2d";
};

/// transpose(v): a view with its last two dims swapped (no copy). As an
/// operand of matmul it selects the transposed access; matmul(x,
/// transpose(W)) + b canonicalizes to linear(x, W, b).
struct transpose {
  static constexpr const char* name = "transpose";
  static constexpr op_kind kind = op_kind::injective;
  static constexpr int arity = 1;
  static constexpr bool has_output_shape = true;
  static constexpr double flops = 0;
  template <class X>
  using result = value_t<X>;
  template <class X>
  using static_extents = typename detail::swap_last_two<static_extents_t<X>>::type;
  template <int R>
  static shape<R> output_shape(const transpose&, const shape<R>& x) {
    shape<R> out = x;
    out[R - 1] = x[R - 2];
    out[R - 2] = x[R - 1];
    return out;
  }
};

}  // namespace op

/// True for conv2d and depthwise_conv2d tags.
template <class Op>
inline constexpr bool is_conv_op_v = std::is_base_of_v<op::conv2d, Op>;
template <class E>
inline constexpr bool is_depthwise_node_v = false;
template <class... A>
inline constexpr bool is_depthwise_node_v<node<op::depthwise_conv2d, A...>> = true;

template <class E>
inline constexpr bool is_contraction_node_v = false;
template <class Op, class... A>
inline constexpr bool is_contraction_node_v<node<Op, A...>> = Op::kind == op_kind::contraction;

/// The view `v` with its last two dims swapped (strides swapped, no copy).
template <class T, class X, class S, class I>
auto transposed_view(const tensor_view<T, X, S, I>& v) {
  constexpr int R = int(X::rank());
  static_assert(R >= 2, "fusor: transpose: the view needs rank >= 2");
  using Y = static_extents_t<node<op::transpose, tensor_view<T, X, S, I>>>;
  shape<R> ext = v.shape(), st = v.strides();
  std::swap(ext[R - 1], ext[R - 2]);
  std::swap(st[R - 1], st[R - 2]);
  cuda::std::array<index_t, R> e{}, s{};
  for (int d = 0; d < R; ++d) e[d] = ext[d], s[d] = st[d];
  return tensor_view<T, Y, S, I>{typename tensor_view<T, Y, S, I>::mdspan_type(
      v.data(), cuda::std::layout_stride::mapping<Y>(Y(e), s))};
}

namespace detail {
template <class B>
auto bias_operand(B&& b) {
  // The "absent" marker: a compile-time 0 the kernels skip (a user's scalar
  // bias stays a scalar).
  if constexpr (std::is_same_v<std::remove_cvref_t<B>, std::nullptr_t>) return constant<0.0>{};
  else return as_expr(std::forward<B>(b));
}
template <class B>
inline constexpr bool has_bias_v = !std::is_same_v<std::remove_cvref_t<B>, std::nullptr_t>;
}  // namespace detail

/// matmul(a, b): a [..., M, K] x b [..., K, N] -> [..., M, N] (batch dims broadcast).
/// @throws shape_error (at run) when K or the batch dims disagree.
template <expression A, expression B>
auto matmul(A&& a, B&& b) {
  using N = node<op::matmul, std::remove_cvref_t<A>, std::remove_cvref_t<B>>;
  (void)sizeof(static_extents_t<N>);
  return N{{}, {std::forward<A>(a), std::forward<B>(b)}};
}
FUSOR_OPERAND_FALLBACK(matmul, "ee", "matmul(a, b): a and b are expressions")

/// linear(x, W, b) = x W^T + b: x [..., K], W [N, K], b [N] or nullptr -> [..., N].
template <expression X, expression W, class B = std::nullptr_t>
  requires(operand<B> || std::is_same_v<std::remove_cvref_t<B>, std::nullptr_t>)
auto linear(X&& x, W&& w, B&& b = nullptr) {
  auto bias = detail::bias_operand(std::forward<B>(b));
  using N = node<op::linear, std::remove_cvref_t<X>, std::remove_cvref_t<W>, decltype(bias)>;
  (void)sizeof(static_extents_t<N>);
  return N{op::linear{{}, detail::has_bias_v<B>}, {std::forward<X>(x), std::forward<W>(w), bias}};
}
FUSOR_OPERAND_FALLBACK(linear, "een", "linear(x, W, b): x and W are expressions, b an expression, a number or nullptr")

/// ONNX Gemm attributes.
struct gemm_params {
  float alpha = 1.0f, beta = 1.0f;
  bool trans_a = false, trans_b = false;
};
/// gemm(A, B, C, {alpha, beta, trans_a, trans_b}) = alpha * op(A) op(B) + beta * C
/// (ONNX Gemm); C broadcasts to [M, N]; pass nullptr for no C.
template <expression A, expression B, class C = std::nullptr_t>
  requires(operand<C> || std::is_same_v<std::remove_cvref_t<C>, std::nullptr_t>)
auto gemm(A&& a, B&& b, C&& c = nullptr, gemm_params p = {}) {
  auto cc = detail::bias_operand(std::forward<C>(c));
  using N = node<op::gemm, std::remove_cvref_t<A>, std::remove_cvref_t<B>, decltype(cc)>;
  return N{op::gemm{{}, p.alpha, detail::has_bias_v<C> ? p.beta : 0.0f, p.trans_a, p.trans_b},
           {std::forward<A>(a), std::forward<B>(b), cc}};
}
template <class A, class B, class C = std::nullptr_t>
  requires(diagnostic::some_operand_misfits<A, B, C>("een"))
auto gemm(const A&, const B&, const C& = nullptr, gemm_params = {}) {
  static_assert(diagnostic::always_false<A, B, C>,
                "fusor: gemm: an operand is not a fusor expression; gemm(A, B, C, params): A and B are expressions, C "
                "an expression, a number or nullptr; " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}

/// conv2d(x, w, b, params): see op::conv2d for shapes; b [Cout] or nullptr.
template <expression X, expression W, class B = std::nullptr_t>
  requires(operand<B> || std::is_same_v<std::remove_cvref_t<B>, std::nullptr_t>)
auto conv2d(X&& x, W&& w, B&& b = nullptr, conv2d_params p = {}) {
  auto bias = detail::bias_operand(std::forward<B>(b));
  using N = node<op::conv2d, std::remove_cvref_t<X>, std::remove_cvref_t<W>, decltype(bias)>;
  (void)sizeof(static_extents_t<N>);
  if constexpr (rank_v<X> == 4 && rank_v<W> == 4) p = detail::resolve_auto_pad(p, x, w);
  return N{op::conv2d{{}, p, detail::has_bias_v<B>}, {std::forward<X>(x), std::forward<W>(w), bias}};
}

/// conv2d(x, w, params): no bias (`conv2d(x, w, conv2d_params{...})`, or a
/// braced list of its fields).
template <expression X, expression W>
auto conv2d(X&& x, W&& w, conv2d_params p) {
  return conv2d(std::forward<X>(x), std::forward<W>(w), nullptr, p);
}

// conv2d / depthwise_conv2d with an argument that is not an expression (the
// params may be a braced list, which a pack cannot deduce: written out).
#define FUSOR_CONV_FALLBACK(NAME)                                                                          \
  template <class X, class W, class B = std::nullptr_t>                                                    \
    requires(diagnostic::some_operand_misfits<X, W, B>("een") &&                                           \
             !(expression<X> && expression<W> && std::is_same_v<B, conv2d_params>))                      \
  auto NAME(const X&, const W&, const B& = nullptr, conv2d_params = {}) {                                  \
    static_assert(diagnostic::always_false<X, W, B>,                                                       \
                  "fusor: " #NAME ": an operand is not a fusor expression; " #NAME "(x, w, b, params): x and w " \
                  "are expressions, b an expression, a number or nullptr; " FUSOR_WHAT_IS_AN_EXPRESSION); \
    return 0;                                                                                              \
  }
FUSOR_CONV_FALLBACK(conv2d)

/// depthwise_conv2d: conv2d with groups = input channels (w [C * multiplier,
/// 1, kh, kw]); the group count is taken from x's channel extent. A conv2d
/// consuming it through elementwise ops (BN, ReLU6) computes it while
/// loading when that conv is 1x1 (MobileNet's depthwise -> pointwise).
template <expression X, expression W, class B = std::nullptr_t>
  requires(operand<B> || std::is_same_v<std::remove_cvref_t<B>, std::nullptr_t>)
auto depthwise_conv2d(X&& x, W&& w, B&& b = nullptr, conv2d_params p = {}) {
  const auto s = shape_of(x);
  p.groups = p.layout == layout::nhwc ? s[3] : s[1];
  if constexpr (rank_v<X> == 4 && rank_v<W> == 4) p = detail::resolve_auto_pad(p, x, w);
  auto bias = detail::bias_operand(std::forward<B>(b));
  using N = node<op::depthwise_conv2d, std::remove_cvref_t<X>, std::remove_cvref_t<W>, decltype(bias)>;
  (void)sizeof(static_extents_t<N>);
  return N{op::depthwise_conv2d{{{}, p, detail::has_bias_v<B>}}, {std::forward<X>(x), std::forward<W>(w), bias}};
}
FUSOR_CONV_FALLBACK(depthwise_conv2d)
#undef FUSOR_CONV_FALLBACK
/// depthwise_conv2d(x, w, params): no bias.
template <expression X, expression W>
auto depthwise_conv2d(X&& x, W&& w, conv2d_params p) {
  return depthwise_conv2d(std::forward<X>(x), std::forward<W>(w), nullptr, p);
}

/// transpose(v): view v with its last two dims swapped, as an expression
/// (matmul(x, transpose(W)) + b is recognised as linear(x, W, b)).
template <class T, class X, class S, class I>
auto transpose(const tensor_view<T, X, S, I>& v) {
  return node<op::transpose, tensor_view<T, X, S, I>>{{}, {v}};
}
/// transpose(e) of an expression (rank >= 2): e with its last two dims
/// swapped, transpose(e, -2, -1) (ops/shape_ops.hpp): pushed down to the
/// views of an elementwise expression, an index map over the temporary of a
/// computed value (a reduction, contraction, ...).
template <expression E>
  requires(!is_view_v<std::remove_cvref_t<E>>)
auto transpose(E&& e) {
  static_assert(rank_v<std::remove_cvref_t<E>> >= 2,
                "fusor: transpose: transpose(e) swaps the last two dims: e needs rank >= 2");
  return transpose(e, -2, -1);
}
FUSOR_OPERAND_FALLBACK(transpose, "e", "transpose(v): v is a tensor view")

}  // namespace fusor
