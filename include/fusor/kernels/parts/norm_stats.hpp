#pragma once
/// @file kernels/parts/norm_stats.hpp
/// The statistics of a layer_norm / rms_norm row and one normalized element:
/// the one implementation of this math (the norm row kernel and the
/// LayerNorm -> GEMM prologue both call it).
#include <fusor/kernels/parts/row_reduce.hpp>

namespace fusor::kernels {

/// The statistics of one normalized row: its mean (0 for rms_norm) and
/// 1 / sqrt(variance + eps) (variance = mean of squares for rms_norm).
template <class T>
struct norm_stats {
  T mean, inv;
};

/// norm_stats of the row whose element j is value(j), len elements, computed
/// by the row's lanes (every lane gets the result). layer_norm: Welford's
/// mean c (welford_acc, robust to outliers anywhere in the row), then a
/// correction pass over the small deviations d = x - c (mean = c + mean(d),
/// var = mean(d^2) - mean(d)^2: the corrected two-pass algorithm, accurate
/// to about half an ulp of a large common offset); rms_norm: one pass of
/// squares. The one implementation of this math: the layer_norm/rms_norm
/// row kernel below and the LayerNorm -> GEMM prologue
/// (kernels/contraction.hpp) both call it.
template <bool Rms, class T, class F>
FUSOR_HOST_DEVICE norm_stats<T> row_norm_stats(const F& value, index_t len, float eps, int lanes) {
  const T n = T(len);
  T mean = T(0), var;
  if constexpr (Rms) {
    var = math::div(block_reduce_row<sumsq_acc<T>>(value, len, lanes).v, n);
  } else {
    const T c = block_reduce_row<welford_acc<T>>(value, len, lanes).mean;
    const auto dev = map_row(value, [c](auto v) FUSOR_LAMBDA_INLINE { return math::sub(v, decltype(v)(c)); });  // (packs too)
    const moments_acc<T> m = block_reduce_row<moments_acc<T>>(dev, len, lanes);
    // A deviation that overflowed (finite inputs near FLT_MAX of both signs:
    // c is finite, s1 is not) makes the correction meaningless: keep c, as
    // the written form keeps its mean, and var = inf below (s2 is inf).
    const T d = (math::sub(m.s1, m.s1) == T(0) || !(math::sub(c, c) == T(0))) ? math::div(m.s1, n) : T(0);
    mean = math::add(c, d);
    const T ms = math::div(m.s2, n);
    // ms = inf (a deviation squared overflowed, as in the written form's
    // mean(square(x - mean))) keeps var = inf: d * d may overflow too, and
    // inf - inf would be NaN where the written form gives 0 (issue 24).
    var = math::sub(ms, ms) == T(0) ? math::sub(ms, math::mul(d, d)) : ms;
    var = var < T(0) ? T(0) : var;  // (rounding can make it -0.000...1; NaN stays NaN)
  }
  return {mean, math::div(T(1), math::sqrt(math::add(var, T(eps))))};
}

/// One normalized element: (x - mean) * inv [* gamma] [+ beta].
template <bool Rms, class T>
FUSOR_HOST_DEVICE_INLINE T apply_norm(T x, const norm_stats<T>& s, T gamma, T beta, bool has_gamma, bool has_beta) {
  T y = math::mul(math::sub(x, s.mean), s.inv);
  if (has_gamma) y = math::mul(y, gamma);
  if constexpr (!Rms) {
    if (has_beta) y = math::add(y, beta);
  }
  return y;
}

}  // namespace fusor::kernels
