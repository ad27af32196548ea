#pragma once
/// @file ops/matmul.hpp
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
/// (This header: the attributes, diagnostics and the GEMM-shaped tags matmul,
/// linear and gemm; conv2d, transpose and the factories: ops/contraction.hpp.)
#include <fusor/core/error.hpp>
#include <fusor/expr/shape_inference.hpp>
#include <fusor/ops/functions.hpp>

#include <algorithm>
#include <string>

namespace fusor {

/// Activation layout of conv2d: channels second (PyTorch, ONNX) or last
/// (TensorFlow, cuDNN's fast path). Weights are OIHW in both.
enum class layout { nchw, nhwc };

/// ONNX Conv's auto_pad (conv2d_params::auto_pad): NOTSET (explicit
/// padding), SAME_UPPER, SAME_LOWER, VALID.
enum class auto_pad_mode { notset, same_upper, same_lower, valid };

/// conv2d attributes (ONNX Conv). Padding is {top, left, bottom, right}
/// (asymmetric allowed; ONNX's pads order is {top, left, bottom, right} too).
struct conv2d_params {
  index_t stride[2] = {1, 1};
  index_t padding[4] = {0, 0, 0, 0};
  index_t dilation[2] = {1, 1};
  index_t groups = 1;
  fusor::layout layout = fusor::layout::nchw;
  /// ONNX auto_pad: notset uses `padding`; same_upper / same_lower pad so
  /// that the output extent is ceil(input / stride), the odd pixel at the
  /// end / at the beginning; valid means no padding. Resolved into
  /// `padding` when the conv2d node is built (from x's and w's shapes).
  fusor::auto_pad_mode auto_pad = fusor::auto_pad_mode::notset;
};

namespace detail {
/// p with auto_pad resolved into padding for input spatial extents (h, w)
/// and kernel extents (kh, kw) (ONNX Conv: total = max(0, (ceil(in / s) - 1)
/// * s + (k - 1) * d + 1 - in), split total / 2 and the rest, the rest at
/// the end for SAME_UPPER and at the beginning for SAME_LOWER).
/// @throws argument_error a stride or dilation < 1 with a SAME mode
inline conv2d_params resolve_auto_pad(conv2d_params p, index_t h, index_t w, index_t kh, index_t kw) {
  if (p.auto_pad == auto_pad_mode::notset) return p;
  const index_t in[2] = {h, w}, k[2] = {kh, kw};
  for (int d = 0; d < 2; ++d) {
    index_t lo = 0, hi = 0;
    if (p.auto_pad != auto_pad_mode::valid) {
      if (p.stride[d] < 1 || p.dilation[d] < 1)
        throw argument_error("fusor: conv2d: auto_pad SAME needs stride and dilation >= 1 (stride[" +
                             std::to_string(d) + "] = " + std::to_string(p.stride[d]) + ", dilation[" +
                             std::to_string(d) + "] = " + std::to_string(p.dilation[d]) + ")");
      const index_t out = (in[d] + p.stride[d] - 1) / p.stride[d];
      const index_t span = (k[d] - 1) * p.dilation[d] + 1;
      const index_t total = std::max<index_t>(0, (out - 1) * p.stride[d] + span - in[d]);
      const index_t small = total / 2, large = total - small;
      lo = p.auto_pad == auto_pad_mode::same_upper ? small : large;
      hi = total - lo;
    }
    p.padding[d] = lo;
    p.padding[d + 2] = hi;
  }
  p.auto_pad = auto_pad_mode::notset;
  return p;
}
/// resolve_auto_pad from conv2d's operands x (NCHW or NHWC, p.layout) and w (OIHW).
template <class X, class W>
conv2d_params resolve_auto_pad(const conv2d_params& p, const X& x, const W& w) {
  if (p.auto_pad == auto_pad_mode::notset) return p;
  const auto xs = shape_of(x), ws = shape_of(w);
  const bool nhwc = p.layout == layout::nhwc;
  return resolve_auto_pad(p, nhwc ? xs[1] : xs[2], nhwc ? xs[2] : xs[3], ws[2], ws[3]);
}
}  // namespace detail

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

}  // namespace op
}  // namespace fusor
