#pragma once
/// @file ops/math_inverse_hyperbolic.hpp
/// asinh, acosh, atanh (ONNX Asinh, Acosh, Atanh) for scalars and host packs.
///
/// On the host they come from SLEEF's 1-ulp f64 variants, also for f32
/// (rounded once to f32: within 0.5 ulp + 2^-29 ulp). Why through f64:
/// SLEEF's f32 asinhf and acoshf return Inf from |x| = 1.84e19 on (their
/// documented range; measured: asinhf(2e19) = Inf, the value is 45.1), and
/// lose a second ulp near that bound. The f64 variants have the same limit
/// at 1.34e154, so an f64 |x| above 2^500 takes the identity
/// asinh(x) = sign(x) (log|x| + ln 2) (acosh alike), exact to double
/// rounding there since the neglected term is 1 / (4 x^2) < 2^-1000; within
/// 2 ulp. As for sin and cos (ops/math.hpp), one element is computed by the
/// vector variant on a broadcast register, so a lane does not depend on
/// whether it was computed alone or in a pack. The device and builds
/// without SLEEF use the C library's / CUDA's functions.
#include <fusor/ops/math.hpp>

namespace fusor::math {

namespace inverse_hyperbolic_detail {
/// Above this |x| the f64 SLEEF variants of asinh / acosh overflow: the
/// log identity takes over.
inline constexpr double large = 0x1p500;
inline constexpr double ln2 = 0x1.62e42fefa39efp-1;
}  // namespace inverse_hyperbolic_detail

#if FUSOR_HAS_SLEEF && !FUSOR_DEVICE_PASS
#  if FUSOR_SLEEF_VECTOR
#    define FUSOR_SLEEF_F64(NAME, x) sleef::first(sleef::NAME##_vd(sleef::broadcast(x)))
#  else
#    define FUSOR_SLEEF_F64(NAME, x) sleef::NAME##_d(x)
#  endif
inline double asinh(double x) {
  const double a = x < 0 ? -x : x;
  if (a > inverse_hyperbolic_detail::large && a <= 0x1.fffffffffffffp+1023)
    return std::copysign(math::log(a) + inverse_hyperbolic_detail::ln2, x);
  return FUSOR_SLEEF_F64(asinh, x);
}
inline double acosh(double x) {
  if (x > inverse_hyperbolic_detail::large && x <= 0x1.fffffffffffffp+1023)
    return math::log(x) + inverse_hyperbolic_detail::ln2;
  return FUSOR_SLEEF_F64(acosh, x);
}
inline double atanh(double x) { return FUSOR_SLEEF_F64(atanh, x); }
#  undef FUSOR_SLEEF_F64
inline float asinh(float x) { return float(asinh(double(x))); }
inline float acosh(float x) { return float(acosh(double(x))); }
inline float atanh(float x) { return float(atanh(double(x))); }
#else
FUSOR_HOST_DEVICE double asinh(double x) { return ::asinh(x); }
FUSOR_HOST_DEVICE double acosh(double x) { return ::acosh(x); }
FUSOR_HOST_DEVICE double atanh(double x) { return ::atanh(x); }
FUSOR_HOST_DEVICE float asinh(float x) { return ::asinhf(x); }
FUSOR_HOST_DEVICE float acosh(float x) { return ::acoshf(x); }
FUSOR_HOST_DEVICE float atanh(float x) { return ::atanhf(x); }
#endif

// Packs: f64 registers through SLEEF's vector variant unless a lane is past
// the overflow bound (then lane by lane, as the scalar); f32 through f64.
#if FUSOR_SLEEF_VECTOR
#  define FUSOR_PACK_INVERSE_HYPERBOLIC(NAME)                                                        \
    template <int W>                                                                                 \
    FUSOR_HOST_INLINE pack<double, W> NAME(const pack<double, W>& x) {                               \
      bool in_range = true;                                                                          \
      for (int l = 0; l < W; ++l)                                                                    \
        in_range &= !(x.v[l] > inverse_hyperbolic_detail::large) & !(x.v[l] < -inverse_hyperbolic_detail::large); \
      if (!in_range) return lanewise([](double e) { return math::NAME(e); }, x);                     \
      return detail::per_register(x, [](sleef::vd v) { return sleef::NAME##_vd(v); },                \
                                  [](double e) { return math::NAME(e); });                           \
    }                                                                                                \
    template <int W>                                                                                 \
    FUSOR_HOST_INLINE pack<float, W> NAME(const pack<float, W>& x) {                                 \
      return to_lanes<float, W>(NAME(to_lanes<double, W>(x)));                                       \
    }
#else
#  define FUSOR_PACK_INVERSE_HYPERBOLIC(NAME)                       \
    template <class T, int W>                                       \
    FUSOR_HOST_INLINE pack<T, W> NAME(const pack<T, W>& x) {        \
      return lanewise([](T e) { return math::NAME(e); }, x);        \
    }
#endif
FUSOR_PACK_INVERSE_HYPERBOLIC(asinh)
FUSOR_PACK_INVERSE_HYPERBOLIC(acosh)
FUSOR_PACK_INVERSE_HYPERBOLIC(atanh)
#undef FUSOR_PACK_INVERSE_HYPERBOLIC

}  // namespace fusor::math
