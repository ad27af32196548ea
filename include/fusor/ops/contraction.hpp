#pragma once
/// @file ops/contraction.hpp
/// Contraction op tags (op_kind::contraction) and their factories: matmul
/// (NumPy/ONNX MatMul with broadcast batch dims), linear (PyTorch
/// y = x W^T + b), gemm (ONNX Gemm: alpha * op(A) op(B) + beta * C) and
/// conv2d (ONNX Conv / PyTorch conv2d: NCHW or NHWC activations, OIHW
/// weights, stride, asymmetric padding, dilation, groups, optional bias),
/// plus transpose(view), the zero-copy operand form matmul(x, transpose(W))
/// that canonicalization turns into linear.
///
/// All of them accumulate in fp32 for half/bf16/fp32 operands (fp64 for
/// fp64) and produce the promoted operand type. Static extents that cannot
/// match (inner dimensions, channels) fail with a static_assert naming the op
/// and both extents; run-time mismatches throw shape_error naming the op,
/// the operand and the shapes.
#include <fusor/core/error.hpp>
#include <fusor/expr/shape_inference.hpp>
#include <fusor/ops/functions.hpp>

#include <string>

namespace fusor {

/// Activation layout of conv2d: channels second (PyTorch, ONNX) or last
/// (TensorFlow, cuDNN's fast path). Weights are OIHW in both.
enum class layout { nchw, nhwc };

/// conv2d attributes (ONNX Conv). Padding is {top, left, bottom, right}
/// (asymmetric allowed; ONNX's pads order is {top, left, bottom, right} too).
struct conv2d_params {
  index_t stride[2] = {1, 1};
  index_t padding[4] = {0, 0, 0, 0};
  index_t dilation[2] = {1, 1};
  index_t groups = 1;
  fusor::layout layout = fusor::layout::nchw;
};

namespace detail {
template <class X, int D>
constexpr std::size_t static_dim() {
  constexpr int r = int(X::rank());
  constexpr int d = D < 0 ? D + r : D;
  if constexpr (d < 0 || d >= r) return dyn;
  else return X::static_extent(std::size_t(d));
}
constexpr bool static_mismatch(std::size_t a, std::size_t b) { return a != dyn && b != dyn && a != b; }
/// extents<X's static extents at Off + I...>.
template <class X, std::size_t Off, class Seq>
struct sub_extents;
template <class X, std::size_t Off, std::size_t... I>
struct sub_extents<X, Off, std::index_sequence<I...>> {
  using type = extents<X::static_extent(Off + I)...>;
};
/// extents<Lead..., Tail...>.
template <class Lead, std::size_t... Tail>
struct append_extents;
template <std::size_t... L, std::size_t... Tail>
struct append_extents<cuda::std::extents<index_t, L...>, Tail...> {
  using type = extents<L..., Tail...>;
};
/// X with its last two extents swapped.
template <class X, class Seq = std::make_index_sequence<X::rank()>>
struct swap_last_two;
template <class X, std::size_t... I>
struct swap_last_two<X, std::index_sequence<I...>> {
  static constexpr std::size_t r = X::rank();
  using type = extents<X::static_extent(I == r - 1 ? r - 2 : I == r - 2 ? r - 1 : I)...>;
};
/// extents<C, 1, ..., 1> (Rank dims).
template <std::size_t C, int Rank, class Seq = std::make_index_sequence<std::size_t(Rank - 1)>>
struct channel_extents;
template <std::size_t C, int Rank, std::size_t... I>
struct channel_extents<C, Rank, std::index_sequence<I...>> {
  using type = extents<C, std::size_t(I * 0 + 1)...>;  // (no comma operator: nvcc warns #174 on it)
};
}  // namespace detail

namespace op {
struct matmul;
struct linear;
}  // namespace op

namespace diagnostic {
/// Names for contraction_extents_mismatch's What.
struct inner_dimension {};
struct input_channels {};
struct weight_rank_is_not_4 {};
struct input_rank_is_not_4 {};
struct linear_weight_rank_is_not_2 {};
/// Instantiated when two static extents of a contraction cannot agree; the
/// compiler prints the op, what disagrees and both operands' extents (the
/// template arguments), and the static_assert text names the op (the
/// specializations below).
template <class Op, class What, class ExtentsA, class ExtentsB>
struct contraction_extents_mismatch {
  static_assert(sizeof(Op) == 0,
                "fusor: contraction: static extents do not match (matmul/linear/gemm: inner dimensions K; conv2d: "
                "input channels vs weight channels * groups); the op, what disagrees and both operands' extents are the "
                "template arguments of fusor::diagnostic::contraction_extents_mismatch<Op, What, ExtentsA, ExtentsB>");
};
template <class A, class B>
struct contraction_extents_mismatch<op::matmul, inner_dimension, A, B> {
  static_assert(sizeof(A) == 0,
                "fusor: contraction: static extents do not match: matmul: a [..., M, K] and b [..., K, N] have "
                "different static K (a's last extent, b's second-to-last); both operands' extents are the last two "
                "template arguments of fusor::diagnostic::contraction_extents_mismatch<Op, What, ExtentsA, ExtentsB>");
};
template <class A, class B>
struct contraction_extents_mismatch<op::linear, inner_dimension, A, B> {
  static_assert(sizeof(A) == 0,
                "fusor: contraction: static extents do not match: linear: x [..., K] and W [N, K] have different "
                "static K (x's last extent, W's second); both operands' extents are the last two template arguments "
                "of fusor::diagnostic::contraction_extents_mismatch<Op, What, ExtentsA, ExtentsB>");
};
template <class Op, class A, class B>
struct contraction_extents_mismatch<Op, linear_weight_rank_is_not_2, A, B> {
  static_assert(sizeof(A) == 0,
                "fusor: linear: W must have rank 2 ([N, K], the PyTorch nn.Linear layout); x's and W's extents are the "
                "last two template arguments of fusor::diagnostic::contraction_extents_mismatch<Op, What, ExtentsA, "
                "ExtentsB>");
};
template <class Op, class A, class B>
struct contraction_extents_mismatch<Op, input_rank_is_not_4, A, B> {
  static_assert(sizeof(A) == 0,
                "fusor: conv2d: x must have rank 4 ([N, C, H, W] for layout::nchw, [N, H, W, C] for layout::nhwc); "
                "x's and w's extents are the last two template arguments of "
                "fusor::diagnostic::contraction_extents_mismatch<Op, What, ExtentsA, ExtentsB>");
};
template <class Op, class A, class B>
struct contraction_extents_mismatch<Op, weight_rank_is_not_4, A, B> {
  static_assert(sizeof(A) == 0,
                "fusor: conv2d: the weight w must have rank 4 (OIHW [Cout, C / groups, kh, kw], for both layouts); "
                "x's and w's extents are the last two template arguments of "
                "fusor::diagnostic::contraction_extents_mismatch<Op, What, ExtentsA, ExtentsB>");
};
template <bool Ok, class Op, class What, class A, class B>
struct check_contraction {
  static constexpr bool value = true;
};
template <class Op, class What, class A, class B>
struct check_contraction<false, Op, What, A, B> {
  static constexpr bool value = sizeof(contraction_extents_mismatch<Op, What, A, B>) > 0;
};
}  // namespace diagnostic

namespace op {

/// Base of contraction tags. `output_shape(op, operand shapes...)` throws
/// shape_error. `flops` (per output element, from types alone) is 0: the
/// work depends on run-time extents, so each contraction prices itself with
/// `flops_per_output(op, operand shapes...)` (2K for a GEMM, 2 C KH KW /
/// groups for a convolution; cost/shaped_estimate.hpp).
struct contraction_base {
  static constexpr op_kind kind = op_kind::contraction;
  static constexpr bool has_output_shape = true;
  static constexpr double flops = 0;
};

template <class... A>
using contraction_result = std::conditional_t<std::is_floating_point_v<promoted_t<A...>> ||
                                                  !std::is_arithmetic_v<promoted_t<A...>>,
                                              promoted_t<A...>, float>;

/// matmul(a, b) (ONNX MatMul, numpy.matmul) for ranks >= 2: a [..., M, K],
/// b [..., K, N] -> [broadcast(...), M, N]; batch dims broadcast (NumPy).
struct matmul : contraction_base {
  static constexpr const char* name = "matmul";
  static constexpr int arity = 2;
  template <class A, class B>
  using result = contraction_result<A, B>;
  template <class A, class B>
  struct extents_of {
    using XA = static_extents_t<A>;
    using XB = static_extents_t<B>;
    static constexpr int ra = int(XA::rank()), rb = int(XB::rank()), r = ra > rb ? ra : rb;
    static_assert(ra >= 2 && rb >= 2, "fusor: matmul: both operands need rank >= 2 (a [..., M, K], b [..., K, N])");
    static constexpr bool ok = !detail::static_mismatch(detail::static_dim<XA, -1>(), detail::static_dim<XB, -2>());
    static_assert(diagnostic::check_contraction<ok, matmul, diagnostic::inner_dimension, XA, XB>::value);
    using batch_a = typename detail::sub_extents<XA, 0, std::make_index_sequence<std::size_t(ra - 2)>>::type;
    using batch_b = typename detail::sub_extents<XB, 0, std::make_index_sequence<std::size_t(rb - 2)>>::type;
    using batch = broadcast_extents_t<batch_a, batch_b>;
    using type = typename detail::append_extents<batch, XA::static_extent(std::size_t(ra - 2)),
                                                 XB::static_extent(std::size_t(rb - 1))>::type;
  };
  template <class A, class B>
  using static_extents = typename extents_of<A, B>::type;

  template <int RA, int RB>
  static auto output_shape(const matmul&, const shape<RA>& a, const shape<RB>& b) {
    constexpr int R = RA > RB ? RA : RB;
    if (a[RA - 1] != b[RB - 2])
      throw shape_error("fusor: matmul: inner dimensions differ: a " + to_string<RA>(a) + " has K = " +
                        std::to_string(a[RA - 1]) + ", b " + to_string<RB>(b) + " has K = " + std::to_string(b[RB - 2]));
    shape<R> out{};
    for (int d = 0; d < R - 2; ++d) {
      const int da = d - (R - RA), db = d - (R - RB);
      const index_t x = da >= 0 ? a[da] : 1, y = db >= 0 ? b[db] : 1;
      if (x != y && x != 1 && y != 1)
        throw shape_error("fusor: matmul: batch dimensions of a " + to_string<RA>(a) + " and b " + to_string<RB>(b) +
                          " do not broadcast");
      out[d] = x == 1 ? y : x;
    }
    out[R - 2] = a[RA - 2];
    out[R - 1] = b[RB - 1];
    return out;
  }
  /// 2K FLOPs per output element (one multiply and one add per k).
  template <int RA, int RB>
  static double flops_per_output(const matmul&, const shape<RA>& a, const shape<RB>&) {
    return 2.0 * double(a[RA - 1]);
  }
};

/// linear(x, W, b) = x W^T + b (PyTorch nn.Linear): x [..., K], W [N, K],
/// b [N] (or a scalar; 0 when absent) -> [..., N].
struct linear : contraction_base {
  static constexpr const char* name = "linear";
  static constexpr int arity = 3;
  bool has_bias = true;
  template <class X, class W, class B>
  using result = contraction_result<X, W, B>;
  template <class X, class W, class B>
  struct extents_of {
    using XX = static_extents_t<X>;
    using XW = static_extents_t<W>;
    static constexpr int r = int(XX::rank());
    static_assert(r >= 1, "fusor: linear: x needs rank >= 1 (x [..., K])");
    static_assert(diagnostic::check_contraction<XW::rank() == 2, linear, diagnostic::linear_weight_rank_is_not_2, XX,
                                                XW>::value);
    static constexpr bool ok = !detail::static_mismatch(detail::static_dim<XX, -1>(), detail::static_dim<XW, 1>());
    static_assert(diagnostic::check_contraction<ok, linear, diagnostic::inner_dimension, XX, XW>::value);
    using lead = typename detail::sub_extents<XX, 0, std::make_index_sequence<std::size_t(r - 1)>>::type;
    using type = typename detail::append_extents<lead, detail::static_dim<XW, 0>()>::type;
  };
  template <class X, class W, class B>
  using static_extents = typename extents_of<X, W, B>::type;

  template <int RX, int RW, int RB>
  static shape<RX> output_shape(const linear&, const shape<RX>& x, const shape<RW>& w, const shape<RB>& b) {
    if (x[RX - 1] != w[1])
      throw shape_error("fusor: linear: x " + to_string<RX>(x) + " has K = " + std::to_string(x[RX - 1]) +
                        " but W " + to_string<RW>(w) + " (W is [N, K]) has K = " + std::to_string(w[1]));
    if constexpr (RB > 0) {
      if (RB > 1 || (b[0] != w[0] && b[0] != 1))
        throw shape_error("fusor: linear: bias " + to_string<RB>(b) + " is not [N] with N = " + std::to_string(w[0]));
    }
    shape<RX> out = x;
    out[RX - 1] = w[0];
    return out;
  }
  /// 2K FLOPs per output element, plus the bias add.
  template <int RX, int RW, int RB>
  static double flops_per_output(const linear& op, const shape<RX>& x, const shape<RW>&, const shape<RB>&) {
    return 2.0 * double(x[RX - 1]) + (op.has_bias ? 1.0 : 0.0);
  }
};

/// gemm(A, B, C) = alpha * op(A) op(B) + beta * C (ONNX Gemm): op(A) [M, K]
/// (A^T when trans_a), op(B) [K, N]; C broadcasts to [M, N] (a scalar 0 when
/// absent).
struct gemm : contraction_base {
  static constexpr const char* name = "gemm";
  static constexpr int arity = 3;
  float alpha = 1.0f, beta = 1.0f;
  bool trans_a = false, trans_b = false;
  template <class A, class B, class C>
  using result = contraction_result<A, B, C>;
  template <class A, class B, class C>
  using static_extents = dextents<2>;  // which dims are M, N, K is a run-time attribute

  template <int RA, int RB, int RC>
  static shape<2> output_shape(const gemm& op, const shape<RA>& a, const shape<RB>& b, const shape<RC>& c) {
    static_assert(RA == 2 && RB == 2, "fusor: gemm: A and B must have rank 2");
    static_assert(RC <= 2, "fusor: gemm: C must have rank <= 2");
    const index_t m = op.trans_a ? a[1] : a[0], ka = op.trans_a ? a[0] : a[1];
    const index_t kb = op.trans_b ? b[1] : b[0], n = op.trans_b ? b[0] : b[1];
    if (ka != kb)
      throw shape_error("fusor: gemm: inner dimensions differ: A " + to_string<2>(a) + (op.trans_a ? " (transposed)" : "") +
                        " has K = " + std::to_string(ka) + ", B " + to_string<2>(b) + (op.trans_b ? " (transposed)" : "") +
                        " has K = " + std::to_string(kb));
    shape<2> out{m, n};
    if constexpr (RC > 0) {
      for (int d = 0; d < RC; ++d)
        if (c[d] != 1 && c[d] != out[d + 2 - RC])
          throw shape_error("fusor: gemm: C " + to_string<RC>(c) + " does not broadcast to [M, N] = " + to_string<2>(out));
    }
    return out;
  }
  /// 2K FLOPs per output element, plus alpha * acc + beta * C (3).
  template <int RA, int RB, int RC>
  static double flops_per_output(const gemm& op, const shape<RA>& a, const shape<RB>&, const shape<RC>&) {
    return 2.0 * double(op.trans_a ? a[0] : a[1]) + 3.0;
  }
};

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
  return N{op::conv2d{{}, p, detail::has_bias_v<B>}, {std::forward<X>(x), std::forward<W>(w), bias}};
}

// conv2d / depthwise_conv2d with an argument that is not an expression (the
// params may be a braced list, which a pack cannot deduce: written out).
#define FUSOR_CONV_FALLBACK(NAME)                                                                          \
  template <class X, class W, class B = std::nullptr_t>                                                    \
    requires(diagnostic::some_operand_misfits<X, W, B>("een"))                                             \
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
  auto bias = detail::bias_operand(std::forward<B>(b));
  using N = node<op::depthwise_conv2d, std::remove_cvref_t<X>, std::remove_cvref_t<W>, decltype(bias)>;
  (void)sizeof(static_extents_t<N>);
  return N{op::depthwise_conv2d{{{}, p, detail::has_bias_v<B>}}, {std::forward<X>(x), std::forward<W>(w), bias}};
}
FUSOR_CONV_FALLBACK(depthwise_conv2d)
#undef FUSOR_CONV_FALLBACK

/// transpose(v): view v with its last two dims swapped, as an expression
/// (matmul(x, transpose(W)) + b is recognised as linear(x, W, b)).
template <class T, class X, class S, class I>
auto transpose(const tensor_view<T, X, S, I>& v) {
  return node<op::transpose, tensor_view<T, X, S, I>>{{}, {v}};
}
template <expression E>
  requires(!is_view_v<std::remove_cvref_t<E>>)
auto transpose(E&&) {
  static_assert(diagnostic::always_false<E>,
                "fusor: transpose: only a tensor view can be transposed (zero-copy); materialize the expression into "
                "a buffer first, or use gemm(..., {.trans_b = true})");
}
FUSOR_OPERAND_FALLBACK(transpose, "e", "transpose(v): v is a tensor view")

}  // namespace fusor
