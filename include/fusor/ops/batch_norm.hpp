#pragma once
/// @file ops/batch_norm.hpp
/// Inference batch normalization (Ioffe & Szegedy 2015; ONNX
/// BatchNormalization, training_mode = 0):
///   y = (x - running_mean) * (gamma / sqrt(running_var + eps)) + beta
/// per channel: the per-channel scale gamma / sqrt(var + eps) is one value
/// per channel, computed once per run of a channel on the host
/// (exec/run_invariant.hpp), as ONNX Runtime and PyTorch's CPU kernels
/// compute a scale per channel; x - mean is subtracted first (no
/// cancellation between x * scale and mean * scale). It differs from ONNX's
/// (x - mean) / sqrt(var + eps) * gamma + beta by rounding only (one
/// rounding moved: about 1 ulp of (x - mean) * scale).
///
/// It is an elementwise op over x and the four per-channel
/// parameters broadcast along the channel axis, so it fuses like any other
/// elementwise op (into a conv/GEMM epilogue, a reduction prologue, a chain);
/// directly after conv2d the fused planner folds it into the conv's weights
/// instead (plan/fold_batch_norm.hpp).
#include <fusor/ops/contraction.hpp>

namespace fusor {

namespace op {
/// (x, gamma, beta, mean, var) -> (x - mean) * (gamma / sqrt(var + eps)) + beta.
/// The kernels evaluate it as these primitive ops in this order
/// (exec/bind.hpp, lowered_batch_norm): keep the two in step.
struct batch_norm : elementwise_op<5, true, true> {
  static constexpr const char* name = "batch_norm";
  static constexpr double flops = 6;
  static constexpr bool has_output_shape = true;
  float eps = 1e-5f;
  template <class T>
  FUSOR_HOST_DEVICE_INLINE T operator()(T x, T gamma, T beta, T mean, T var) const {
    return math::add(math::mul(math::sub(x, mean), math::div(gamma, math::sqrt(math::add(var, T(eps))))), beta);
  }
  /// x's shape. Each parameter is a scalar or has exactly C elements, C = x's
  /// extent on the channel axis (ONNX BatchNormalization: inputs of shape
  /// [C]); a parameter of another length, even 1, is a shape_error naming it.
  /// The parameters arrive as [C, 1, ..., 1] (detail::channel_operand), so
  /// their rank tells the channel axis: rank(x) - rank(parameter).
  template <int RX, int RG, int RB, int RM, int RV>
  static shape<RX> output_shape(const batch_norm&, const shape<RX>& x, const shape<RG>& gamma, const shape<RB>& beta,
                                const shape<RM>& mean, const shape<RV>& var) {
    check_parameter<RX, RG>(x, gamma, "gamma");
    check_parameter<RX, RB>(x, beta, "beta");
    check_parameter<RX, RM>(x, mean, "running_mean");
    check_parameter<RX, RV>(x, var, "running_var");
    return x;
  }

 private:
  /// Throws shape_error unless parameter p (shape [C, 1, ..., 1] after
  /// channel_operand, or a scalar) has x's channel count C.
  template <int RX, int RP>
  static void check_parameter(const shape<RX>& x, const shape<RP>& p, const char* name) {
    static_assert(RP <= RX, "fusor: batch_norm: a parameter has a higher rank than x");
    if constexpr (RP > 0) {
      const int axis = RX - RP;
      bool trailing_ones = true;
      for (int d = 1; d < RP; ++d) trailing_ones = trailing_ones && p[d] == 1;
      if (p[0] != x[axis] || !trailing_ones) {
        // A 1-D view arrives as [C, 1, ..., 1]: name its length, else its shape.
        const std::string what = trailing_ones ? " has " + std::to_string(p[0]) + " elements" : " " + to_string<RP>(p) + " is not [C]";
        throw shape_error(std::string("fusor: batch_norm: ") + name + what + "; x " + to_string<RX>(x) + " has C = " +
                          std::to_string(x[axis]) + " on channel axis " + std::to_string(axis) +
                          " (parameters are 1-D views [C] or scalars)");
      }
    }
  }
};
}  // namespace op

/// The four per-channel parameters of batch_norm: 1-D views of C elements
/// (or scalars). `batch_norm_params{gamma, beta, mean, var}`.
template <class G, class B, class M, class V>
struct batch_norm_params {
  G gamma;
  B beta;
  M running_mean;
  V running_var;
};
template <class G, class B, class M, class V>
batch_norm_params(G, B, M, V) -> batch_norm_params<G, B, M, V>;

namespace detail {
/// A 1-D per-channel view reshaped to rank Rank = [C, 1, ..., 1] (stride 0
/// on the trailing ones) so that it broadcasts along the channel axis of a
/// tensor whose channel axis is Rank dims from the end. Scalars pass through.
template <int Rank, class P>
auto channel_operand(const P& p) {
  if constexpr (is_view_v<P>) {
    static_assert(P::rank == 1,
                  "fusor: batch_norm: gamma, beta, running_mean and running_var must be 1-D views [C] (or scalars)");
    using X = typename detail::channel_extents<P::extents_type::static_extent(0), Rank>::type;
    cuda::std::array<index_t, Rank> e{}, s{};
    for (int d = 0; d < Rank; ++d) e[d] = d == 0 ? p.extent(0) : 1;
    s[0] = p.stride(0);
    using T = typename P::element_type;
    using Out = tensor_view<T, X, typename P::space, typename P::id>;
    return Out{typename Out::mdspan_type(p.data(), cuda::std::layout_stride::mapping<X>(X(e), s))};
  } else {
    return as_expr(p);
  }
}
}  // namespace detail

/// batch_norm(x, batch_norm_params{gamma, beta, mean, var}, eps): inference batch norm over
/// channel axis ChannelAxis of x (1 = NCHW, the default; -1 or rank - 1 =
/// NHWC). Parameters are 1-D views [C] (any dtype) or scalars; the result has
/// x's shape and the promoted floating type.
/// @throws shape_error (at run) when a parameter's length is not C.
template <int ChannelAxis = 1, expression X, class G, class B, class M, class V>
  requires(diagnostic::operands_fit<G, B, M, V>("oooo"))
auto batch_norm(X&& x, const batch_norm_params<G, B, M, V>& p, float eps = 1e-5f) {
  constexpr int R = rank_v<X>;
  constexpr int axis = ChannelAxis < 0 ? ChannelAxis + R : ChannelAxis;
  static_assert(axis >= 0 && axis < R, "fusor: batch_norm: the channel axis is out of range for x's rank");
  constexpr int PR = R - axis;
  return make_node(op::batch_norm{{}, eps}, std::forward<X>(x), detail::channel_operand<PR>(p.gamma),
                   detail::channel_operand<PR>(p.beta), detail::channel_operand<PR>(p.running_mean),
                   detail::channel_operand<PR>(p.running_var));
}
/// batch_norm(x, gamma, beta, mean, var, eps): the parameters positionally,
/// in ONNX BatchNormalization's input order (the same op as the
/// batch_norm_params form).
template <int ChannelAxis = 1, expression X, class G, class B, class M, class V>
  requires(diagnostic::operands_fit<G, B, M, V>("oooo"))
auto batch_norm(X&& x, const G& gamma, const B& beta, const M& mean, const V& var, float eps = 1e-5f) {
  return batch_norm<ChannelAxis>(std::forward<X>(x), batch_norm_params<G, B, M, V>{gamma, beta, mean, var}, eps);
}
namespace detail {
template <class P>
inline constexpr bool is_batch_norm_params_v = false;
template <class G, class B, class M, class V>
inline constexpr bool is_batch_norm_params_v<batch_norm_params<G, B, M, V>> = true;
template <class P>
inline constexpr bool batch_norm_params_fit = false;
template <class G, class B, class M, class V>
inline constexpr bool batch_norm_params_fit<batch_norm_params<G, B, M, V>> =
    diagnostic::operands_fit<G, B, M, V>("oooo");
}  // namespace detail
template <int ChannelAxis = 1, class X, class P>
  requires((!operand<X> && detail::is_batch_norm_params_v<P>) || (expression<X> && !detail::batch_norm_params_fit<P>))
auto batch_norm(const X&, const P&, float = 1e-5f) {
  static_assert(diagnostic::always_false<X, P>,
                "fusor: batch_norm: an operand is not a fusor expression; batch_norm(x, batch_norm_params{gamma, "
                "beta, running_mean, running_var}, eps): x is an expression, each parameter a 1-D view [C], an "
                "expression or a number; " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}

}  // namespace fusor
