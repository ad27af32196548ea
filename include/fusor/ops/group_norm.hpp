#pragma once
/// @file ops/group_norm.hpp
/// Group normalization (Wu & He 2018; ONNX GroupNormalization, opset 21;
/// PyTorch F.group_norm):
///   y[n, c, ...] = (x - mean[n, g]) / sqrt(var[n, g] + eps) * scale[c] + bias[c]
/// with g = c / (C / groups), mean and (biased) variance over the C / groups
/// channels of group g and all spatial dims. The channel dim is split into
/// (groups, C / groups), a change of strides only, so each (n, g) is one row
/// of the row-normalization kernel (Welford mean + a correction pass, fp32
/// accumulation; kernels/reduction.hpp) with its prologue and epilogue
/// fusion, as layer_norm and instance_norm (groups = C) have.
#include <fusor/ops/batch_norm.hpp>
#include <fusor/ops/reduction.hpp>

#include <string>

namespace fusor {
namespace op {

/// group_norm over x [N, C, D1, ...]: operands x and the per-channel scale
/// and bias, already [C, 1, ..., 1] (detail::channel_operand) or scalars.
struct group_norm : reduction_base {
  static constexpr int arity = 3;
  static constexpr const char* name = "group_norm";
  static constexpr double flops = 8;
  static constexpr int passes = 3;  ///< reads of x per element (Welford mean, correction, output)
  index_t groups = 1;
  float eps = 1e-5f;
  bool has_scale = true, has_bias = true;
  template <class X, class S, class B>
  using result = floating_t<X>;
  template <class X, class S, class B>
  using operand_types = type_list<result<X, S, B>, result<X, S, B>, result<X, S, B>>;
  template <class X, class S, class B>
  using static_extents = static_extents_t<X>;
  template <int R, int RS, int RB>
  static shape<R> output_shape(const group_norm& op, const shape<R>& in, const shape<RS>& s, const shape<RB>& b) {
    static_assert(R >= 3, "fusor: group_norm: x must be [N, C, spatial...] (rank >= 3)");
    if (op.groups < 1 || in[1] % op.groups != 0)
      throw shape_error("fusor: group_norm: " + std::to_string(op.groups) + " groups do not divide the " +
                        std::to_string(in[1]) + " channels of x " + to_string<R>(in));
    check<R, RS>(in, s, "scale");
    check<R, RB>(in, b, "bias");
    return in;
  }

 private:
  template <int R, int RP>
  static void check(const shape<R>& x, const shape<RP>& p, const char* what) {
    static_assert(RP <= R, "fusor: group_norm: a parameter has a higher rank than x");
    if constexpr (RP > 0) {
      bool ok = RP == R - 1 && (p[0] == x[1] || p[0] == 1);
      for (int d = 1; d < RP; ++d) ok = ok && p[d] == 1;
      if (!ok)
        throw shape_error(std::string("fusor: group_norm: ") + what + " " + to_string<RP>(p) +
                          " is not per channel of x " + to_string<R>(x) + " (want [" + std::to_string(x[1]) + "])");
    }
  }
};

}  // namespace op

template <class E>
inline constexpr bool is_group_norm_node_v = false;
template <class X, class S, class B>
inline constexpr bool is_group_norm_node_v<node<op::group_norm, X, S, B>> = true;

/// group_norm(x, groups, scale, bias, eps): x [N, C, D1, ...] (rank >= 3,
/// NCHW-style: channels on axis 1), any floating dtype (fp32 statistics for
/// 16-bit inputs); scale and bias 1-D views [C] (ONNX opset 21, PyTorch), or
/// scalars, or nullptr for 1 and 0. The result has x's shape and dtype.
/// @throws shape_error (when shapes are checked: shape_of, run) naming
///         group_norm and the shapes, when groups does not divide C or a
///         parameter is not [C] or [1].
template <expression X, class S, class B>
  requires(diagnostic::operands_fit<X, index_t, S, B>("e.nn"))
auto group_norm(X&& x, index_t groups, const S& scale, const B& bias, float eps = 1e-5f) {
  constexpr int R = rank_v<X>;
  static_assert(R >= 3, "fusor: group_norm: x must be [N, C, spatial...] (rank >= 3)");
  auto param = [](const auto& p) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(p)>, std::nullptr_t>) return scalar<float>{0.0f};
    else return detail::channel_operand<R - 1>(p);
  };
  constexpr bool has_s = !std::is_same_v<S, std::nullptr_t>, has_b = !std::is_same_v<B, std::nullptr_t>;
  return make_node(op::group_norm{{}, groups, eps, has_s, has_b}, std::forward<X>(x), param(scale), param(bias));
}
FUSOR_OPERAND_FALLBACK(group_norm, "e.nn", "group_norm(x, groups, scale, bias, eps): x is an expression, scale and "
                                           "bias expressions, numbers or nullptr")

}  // namespace fusor
