#pragma once
/// @file ops/lp_normalization.hpp
/// Lp normalization along one axis (ONNX LpNormalization, p = 1 or 2):
///   y = x / ||x||_p over `axis`, and 0 where the norm is 0
/// (onnx.reference: `np.where(norm == 0, 0, x / norm)`; torch's
/// F.normalize clamps the norm with an eps instead). A composite like
/// mse_loss: the norm is fusor's l1_norm / l2_norm reduction (keepdims), the
/// division and the zero test its consumer; the norm's two uses are one value
/// (recognize/shared_by_value.hpp).
#include <fusor/ops/comparison.hpp>
#include <fusor/ops/reduction.hpp>

#include <string>

namespace fusor {

/// lp_normalization<P>(x, axis): x an expression of rank >= 1 (float,
/// double, 16-bit floats accumulated in f32; integers computed in f32),
/// P = 1 (sum of |x|) or 2 (square root of the sum of squares, the
/// default), axis in [-rank, rank). Result: x's shape, the norm's dtype. Two
/// kernels: the norm, then the division (the norm's value shared). The norm
/// is computed in that dtype, as ONNX's reference does: NaN and Inf
/// propagate as in x / norm (a NaN makes its row NaN; an Inf gives the row's
/// finite elements 0 and itself NaN, Inf / Inf); a sum of squares that
/// overflows gives Inf and so 0s (f32 [1e30, 1e30]); one that underflows to
/// 0 takes the zero-norm rule and gives 0s (f32 [1e-30, 1e-30]), as a zero
/// row does.
/// @throws argument_error (here) for an axis out of range, naming
///         lp_normalization, the axis and the rank.
template <int P = 2, expression X>
auto lp_normalization(X&& x, int axis = -1) {
  static_assert(P == 1 || P == 2, "fusor: lp_normalization: p is 1 or 2 (ONNX LpNormalization)");
  constexpr int R = rank_v<X>;
  static_assert(R >= 1, "fusor: lp_normalization: x must have rank >= 1");
  if (axis < -R || axis >= R)
    throw argument_error("fusor: lp_normalization: axis " + std::to_string(axis) + " is out of range for x of rank " +
                         std::to_string(R));
  const auto norm = [&] {
    if constexpr (P == 2) return l2_norm(x, axis);
    else return l1_norm(x, axis);
  }();
  return where(norm == 0.0, 0.0, std::forward<X>(x) / norm);
}
template <int P = 2, class X>
  requires(diagnostic::some_operand_misfits<X>("e"))
auto lp_normalization(const X&, int = -1) {
  static_assert(diagnostic::always_false<X>, "fusor: lp_normalization: an operand is not a fusor expression; "
                                             "lp_normalization<p>(x, axis): x is an expression; " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}

}  // namespace fusor
