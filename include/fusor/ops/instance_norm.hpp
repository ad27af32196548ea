#pragma once
/// @file ops/instance_norm.hpp
/// Instance normalization (Ulyanov et al. 2016; ONNX InstanceNormalization):
///   y[n, c, ...] = (x - mean) / sqrt(var + eps) * scale[c] + bias[c]
/// with mean and (biased) variance over the spatial dims of each (n, c).
/// It is layer_norm over the dims from 2 with per-channel scale and bias
/// broadcast along axis 1, so it runs the row-normalization kernel (Welford
/// mean + a correction pass, fp32 accumulation) with its prologue and
/// epilogue fusion.
#include <fusor/ops/batch_norm.hpp>
#include <fusor/ops/reduction.hpp>

namespace fusor {

/// instance_norm(x, scale, bias, eps): x [N, C, D1, ...] (rank >= 3),
/// scale and bias 1-D views [C] (or scalars, or nullptr for 1 and 0).
/// @throws shape_error (here, naming instance_norm, the parameter and both
///         shapes) when a scale or bias view is not [C] or [1].
template <expression X, class S, class B>
  requires(diagnostic::operands_fit<X, S, B>("enn"))
auto instance_norm(X&& x, const S& scale, const B& bias, float eps = 1e-5f) {
  constexpr int R = rank_v<X>;
  static_assert(R >= 3, "fusor: instance_norm: x must be [N, C, spatial...] (rank >= 3)");
  auto param = [&](const auto& p, const char* what) {
    using P = std::remove_cvref_t<decltype(p)>;
    if constexpr (std::is_same_v<P, std::nullptr_t>) {
      return nullptr;
    } else {
      if constexpr (is_view_v<P>) {
        const auto xs = shape_of(x);
        if (p.extent(0) != xs[1] && p.extent(0) != 1)
          throw shape_error(std::string("fusor: instance_norm: ") + what + " " + to_string<P::rank>(p.shape()) +
                            " does not match the channels of x " + to_string<R>(xs) + " (want [" +
                            std::to_string(xs[1]) + "])");
      }
      return detail::channel_operand<R - 1>(p);
    }
  };
  return layer_norm(std::forward<X>(x), param(scale, "scale"), param(bias, "bias"), 2, eps);
}
FUSOR_OPERAND_FALLBACK(instance_norm, "enn", "instance_norm(x, scale, bias, eps): x is an expression, scale and bias "
                                             "expressions, numbers or nullptr")


}  // namespace fusor
