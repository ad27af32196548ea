#pragma once
/// @file ops/math.hpp
/// Scalar math shared by the host and device paths. Products and sums go
/// through mul/add/sub/div, which on the device use the `__f*_rn` intrinsics:
/// nvcc never contracts those into FMAs, so a fused kernel rounds exactly like
/// the unfused one (CUDA C++ Programming Guide, "Floating-Point Standard").
/// Host builds rely on -ffp-contract=off, which fusor's CMake target sets.
///
/// Every function also takes host packs (core/pack.hpp) lane by lane, with
/// the same bits per lane as the scalar call: exp, expm1, log, log1p, tanh,
/// erf, sin, cos, tan, asin, acos, atan, sinh, cosh and pow through SLEEF's
/// vector variants on the host
/// (ops/vector_math.hpp), sqrt through the IEEE vector square root, the rest
/// through loops the compiler vectorizes. select(c, a, b) is `c ? a : b`
/// for scalars and lane-wise for packs: op functors use it instead of `?:`
/// so one body serves both (both operands are computed; functors are pure).
#include <fusor/config.hpp>
#include <fusor/core/pack.hpp>
#include <fusor/ops/vector_math.hpp>

#include <cstring>

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#if !FUSOR_DEVICE_PASS
#include <cmath>
#endif

namespace fusor::math {

template <class T>
FUSOR_HOST_DEVICE_INLINE bool isnan(T x) {
  if constexpr (cuda::std::is_floating_point_v<T>) return x != x;
  else return false;
}

/// Sign bit of a float (true for -0.0 and negative values); false for integers.
template <class T>
FUSOR_HOST_DEVICE_INLINE bool signbit(T x) {
  if constexpr (cuda::std::is_same_v<T, float>) return (__builtin_bit_cast(cuda::std::uint32_t, x) >> 31) != 0;
  else if constexpr (cuda::std::is_same_v<T, double>) return (__builtin_bit_cast(cuda::std::uint64_t, x) >> 63) != 0;
  else return false;
}

#if FUSOR_DEVICE_PASS && !FUSOR_FAST_MATH
FUSOR_HOST_DEVICE_INLINE float add(float a, float b) { return __fadd_rn(a, b); }
FUSOR_HOST_DEVICE_INLINE float sub(float a, float b) { return __fsub_rn(a, b); }
FUSOR_HOST_DEVICE_INLINE float mul(float a, float b) { return __fmul_rn(a, b); }
FUSOR_HOST_DEVICE_INLINE float div(float a, float b) { return __fdiv_rn(a, b); }
FUSOR_HOST_DEVICE_INLINE double add(double a, double b) { return __dadd_rn(a, b); }
FUSOR_HOST_DEVICE_INLINE double sub(double a, double b) { return __dsub_rn(a, b); }
FUSOR_HOST_DEVICE_INLINE double mul(double a, double b) { return __dmul_rn(a, b); }
FUSOR_HOST_DEVICE_INLINE double div(double a, double b) { return __ddiv_rn(a, b); }
#else
FUSOR_HOST_DEVICE_INLINE float add(float a, float b) { return a + b; }
FUSOR_HOST_DEVICE_INLINE float sub(float a, float b) { return a - b; }
FUSOR_HOST_DEVICE_INLINE float mul(float a, float b) { return a * b; }
FUSOR_HOST_DEVICE_INLINE float div(float a, float b) { return a / b; }
FUSOR_HOST_DEVICE_INLINE double add(double a, double b) { return a + b; }
FUSOR_HOST_DEVICE_INLINE double sub(double a, double b) { return a - b; }
FUSOR_HOST_DEVICE_INLINE double mul(double a, double b) { return a * b; }
FUSOR_HOST_DEVICE_INLINE double div(double a, double b) { return a / b; }
#endif
// Integers: wrap-around is defined via unsigned arithmetic; x / 0 is 0 (C++
// leaves it undefined; fusor documents 0 rather than crash a kernel).
template <class T>
  requires cuda::std::is_integral_v<T>
FUSOR_HOST_DEVICE_INLINE T add(T a, T b) {
  if constexpr (cuda::std::is_same_v<T, bool>) return a || b;
  else return T(cuda::std::make_unsigned_t<T>(a) + cuda::std::make_unsigned_t<T>(b));
}
template <class T>
  requires cuda::std::is_integral_v<T>
FUSOR_HOST_DEVICE_INLINE T sub(T a, T b) {
  if constexpr (cuda::std::is_same_v<T, bool>) return a != b;
  else return T(cuda::std::make_unsigned_t<T>(a) - cuda::std::make_unsigned_t<T>(b));
}
template <class T>
  requires cuda::std::is_integral_v<T>
FUSOR_HOST_DEVICE_INLINE T mul(T a, T b) {
  if constexpr (cuda::std::is_same_v<T, bool>) return a && b;
  else return T(cuda::std::make_unsigned_t<T>(a) * cuda::std::make_unsigned_t<T>(b));
}
template <class T>
  requires cuda::std::is_integral_v<T>
FUSOR_HOST_DEVICE_INLINE T div(T a, T b) {
  if constexpr (cuda::std::is_same_v<T, bool>) return b ? a : false;
  else if constexpr (cuda::std::is_signed_v<T>) return b == 0 ? T(0) : (b == -1 ? sub(T(0), a) : a / b);
  else return b == 0 ? T(0) : a / b;
}

#define FUSOR_MATH_UNARY(NAME, F32, F64)                        \
  FUSOR_HOST_DEVICE float NAME(float x) { return ::F32(x); }  \
  FUSOR_HOST_DEVICE double NAME(double x) { return ::F64(x); }
FUSOR_MATH_UNARY(sqrt, sqrtf, sqrt)
FUSOR_MATH_UNARY(fabs, fabsf, fabs)
#undef FUSOR_MATH_UNARY
// The host's transcendental functions: SLEEF where fusor was built with it
// (ops/vector_math.hpp), the device's and the C library's otherwise.
#if FUSOR_HAS_SLEEF && !FUSOR_DEVICE_PASS
#  define FUSOR_MATH_UNARY(NAME, F32, F64)                                                 \
    FUSOR_HOST_DEVICE float NAME(float x) { return sleef::NAME##_f(x); }                  \
    FUSOR_HOST_DEVICE double NAME(double x) { return sleef::NAME##_d(x); }
#else
#  define FUSOR_MATH_UNARY(NAME, F32, F64)                        \
    FUSOR_HOST_DEVICE float NAME(float x) { return ::F32(x); }  \
    FUSOR_HOST_DEVICE double NAME(double x) { return ::F64(x); }
#endif
FUSOR_MATH_UNARY(exp, expf, exp)
FUSOR_MATH_UNARY(expm1, expm1f, expm1)
FUSOR_MATH_UNARY(log, logf, log)
FUSOR_MATH_UNARY(log1p, log1pf, log1p)
FUSOR_MATH_UNARY(tanh, tanhf, tanh)
FUSOR_MATH_UNARY(erf, erff, erf)
#undef FUSOR_MATH_UNARY
// The trigonometric functions: SLEEF's scalar and vector variants differ in
// the last bit for some inputs, so where packs use the vector variant
// (FUSOR_SLEEF_VECTOR) one element takes it too, on a broadcast register.
#if FUSOR_SLEEF_VECTOR
#  define FUSOR_MATH_UNARY(NAME, F32, F64)                                                       \
    inline float NAME(float x) { return sleef::first(sleef::NAME##_vf(sleef::broadcast(x))); }   \
    inline double NAME(double x) { return sleef::first(sleef::NAME##_vd(sleef::broadcast(x))); }
#elif FUSOR_HAS_SLEEF && !FUSOR_DEVICE_PASS
#  define FUSOR_MATH_UNARY(NAME, F32, F64)                                                 \
    FUSOR_HOST_DEVICE float NAME(float x) { return sleef::NAME##_f(x); }                  \
    FUSOR_HOST_DEVICE double NAME(double x) { return sleef::NAME##_d(x); }
#else
#  define FUSOR_MATH_UNARY(NAME, F32, F64)                        \
    FUSOR_HOST_DEVICE float NAME(float x) { return ::F32(x); }  \
    FUSOR_HOST_DEVICE double NAME(double x) { return ::F64(x); }
#endif
FUSOR_MATH_UNARY(sin, sinf, sin)
FUSOR_MATH_UNARY(cos, cosf, cos)
FUSOR_MATH_UNARY(tan, tanf, tan)
FUSOR_MATH_UNARY(asin, asinf, asin)
FUSOR_MATH_UNARY(acos, acosf, acos)
FUSOR_MATH_UNARY(atan, atanf, atan)
#undef FUSOR_MATH_UNARY
// sinh and cosh: SLEEF's f32 variants overflow to Inf from |x| = 88.7, below
// the f32 overflow threshold (89.4), so the host computes f32 through SLEEF's
// f64 variants (the result rounded once: within 0.5 ulp + 2^-29 ulp).
#if FUSOR_SLEEF_VECTOR
inline double sinh(double x) { return sleef::first(sleef::sinh_vd(sleef::broadcast(x))); }
inline double cosh(double x) { return sleef::first(sleef::cosh_vd(sleef::broadcast(x))); }
inline float sinh(float x) { return float(sinh(double(x))); }
inline float cosh(float x) { return float(cosh(double(x))); }
#elif FUSOR_HAS_SLEEF && !FUSOR_DEVICE_PASS
FUSOR_HOST_DEVICE double sinh(double x) { return sleef::sinh_d(x); }
FUSOR_HOST_DEVICE double cosh(double x) { return sleef::cosh_d(x); }
FUSOR_HOST_DEVICE float sinh(float x) { return float(sleef::sinh_d(double(x))); }
FUSOR_HOST_DEVICE float cosh(float x) { return float(sleef::cosh_d(double(x))); }
#else
FUSOR_HOST_DEVICE double sinh(double x) { return ::sinh(x); }
FUSOR_HOST_DEVICE double cosh(double x) { return ::cosh(x); }
FUSOR_HOST_DEVICE float sinh(float x) { return ::sinhf(x); }
FUSOR_HOST_DEVICE float cosh(float x) { return ::coshf(x); }
#endif
// Rounding to an integer value (exact: the same on the host and the device).
// round is half to even (ONNX Round, numpy.round): rint in the default
// rounding mode, which fusor never changes.
#define FUSOR_MATH_UNARY(NAME, F32, F64)                        \
  FUSOR_HOST_DEVICE float NAME(float x) { return ::F32(x); }  \
  FUSOR_HOST_DEVICE double NAME(double x) { return ::F64(x); }
FUSOR_MATH_UNARY(floor, floorf, floor)
FUSOR_MATH_UNARY(ceil, ceilf, ceil)
FUSOR_MATH_UNARY(round_half_even, rintf, rint)
#undef FUSOR_MATH_UNARY
/// C's fmod: a - trunc(a / b) * b, exactly (the sign of a; NaN for b = 0).
FUSOR_HOST_DEVICE float fmod(float a, float b) { return ::fmodf(a, b); }
FUSOR_HOST_DEVICE double fmod(double a, double b) { return ::fmod(a, b); }
#if FUSOR_HAS_SLEEF && !FUSOR_DEVICE_PASS
FUSOR_HOST_DEVICE float pow(float a, float b) { return sleef::pow_f(a, b); }
FUSOR_HOST_DEVICE double pow(double a, double b) { return sleef::pow_d(a, b); }
#else
FUSOR_HOST_DEVICE float pow(float a, float b) { return ::powf(a, b); }
FUSOR_HOST_DEVICE double pow(double a, double b) { return ::pow(a, b); }
#endif

/// c ? a : b (no branch: compilers emit a select).
template <class T>
  requires(!is_pack_v<T>)
FUSOR_HOST_DEVICE_INLINE T select(bool c, T a, T b) {
  return c ? a : b;
}

// ----------------------------------------------------------------- packs
// (host only; see file comment)
/// mask ? a : b per lane (mask from comparing packs of T).
template <class T, int W>
FUSOR_HOST_INLINE pack<T, W> select(const lane_mask<int(sizeof(T)), W>& c, const pack<T, W>& a, const pack<T, W>& b) {
  pack<T, W> r;
  if constexpr (detail::vector_storage_v<T, W>) r.v = c.v ? a.v : b.v;
  else
    for (int l = 0; l < W; ++l) r.v[l] = c.v[l] ? a.v[l] : b.v[l];
  return r;
}
/// c ? a : b per lane (c a pack of bools: a where's condition tensor).
template <class T, int W>
FUSOR_HOST_INLINE pack<T, W> select(const pack<bool, W>& c, const pack<T, W>& a, const pack<T, W>& b) {
  pack<T, W> r;
  for (int l = 0; l < W; ++l) r.v[l] = c.v[l] ? a.v[l] : b.v[l];
  return r;
}
template <class T, int W>
FUSOR_HOST_INLINE lane_mask<int(sizeof(T)), W> isnan(const pack<T, W>& x) {
  if constexpr (cuda::std::is_floating_point_v<T>) return x != x;
  else return lane_mask<int(sizeof(T)), W>{};
}
template <class T, int W>
FUSOR_HOST_INLINE lane_mask<int(sizeof(T)), W> signbit(const pack<T, W>& x) {
  using I = detail::mask_int_t<int(sizeof(T))>;
  lane_mask<int(sizeof(T)), W> m{};
  if constexpr (cuda::std::is_floating_point_v<T> && detail::vector_storage_v<T, W>) {
    typename detail::lanes_storage<I, W>::type bits;
    std::memcpy(&bits, &x.v, sizeof(bits));
    m.v = bits < 0;
  } else if constexpr (cuda::std::is_floating_point_v<T>) {
    for (int l = 0; l < W; ++l) m.v[l] = math::signbit(x.v[l]) ? I(-1) : I(0);
  }
  return m;
}
#define FUSOR_PACK_ARITHMETIC(NAME, OP)                                                        \
  template <class T, int W>                                                                    \
  FUSOR_HOST_INLINE pack<T, W> NAME(const pack<T, W>& a, const pack<T, W>& b) {                \
    if constexpr (cuda::std::is_floating_point_v<T> && detail::vector_storage_v<T, W>) {       \
      pack<T, W> r;                                                                            \
      r.v = a.v OP b.v;                                                                        \
      return r;                                                                                \
    } else {                                                                                   \
      return lanewise([](T x, T y) { return math::NAME(x, y); }, a, b);                        \
    }                                                                                          \
  }
FUSOR_PACK_ARITHMETIC(add, +)
FUSOR_PACK_ARITHMETIC(sub, -)
FUSOR_PACK_ARITHMETIC(mul, *)
FUSOR_PACK_ARITHMETIC(div, /)
#undef FUSOR_PACK_ARITHMETIC
/// |x|: the sign bit cleared (as fabs: -0 -> +0, NaN keeps its payload).
template <class T, int W>
  requires cuda::std::is_floating_point_v<T>
FUSOR_HOST_INLINE pack<T, W> fabs(const pack<T, W>& x) {
  if constexpr (detail::vector_storage_v<T, W>) {
    using I = detail::mask_int_t<int(sizeof(T))>;
    typename detail::lanes_storage<I, W>::type bits;
    std::memcpy(&bits, &x.v, sizeof(bits));
    bits &= ~(I(1) << (8 * sizeof(T) - 1));
    pack<T, W> r;
    std::memcpy(&r.v, &bits, sizeof(bits));
    return r;
  } else {
    return lanewise([](T e) { return math::fabs(e); }, x);
  }
}

namespace detail {
/// f applied per vector register to the W lanes of x (W a multiple of the
/// register's lanes), else g (the scalar function) lane by lane.
template <class T, int W, class F, class G>
FUSOR_HOST_INLINE pack<T, W> per_register(const pack<T, W>& x, F f, G g) {
#if FUSOR_SLEEF_VECTOR
  constexpr int V = cuda::std::is_same_v<T, float> ? sleef::f_lanes : sleef::d_lanes;
  if constexpr (W % V == 0) {
    pack<T, W> r;
    for (int l = 0; l < W; l += V) sleef::store(r.data() + l, f(sleef::load(x.data() + l)));
    return r;
  } else
#endif
  {
    (void)f;
    return lanewise(g, x);
  }
}
template <class T, int W, class F, class G>
FUSOR_HOST_INLINE pack<T, W> per_register(const pack<T, W>& x, const pack<T, W>& y, F f, G g) {
#if FUSOR_SLEEF_VECTOR
  constexpr int V = cuda::std::is_same_v<T, float> ? sleef::f_lanes : sleef::d_lanes;
  if constexpr (W % V == 0) {
    pack<T, W> r;
    for (int l = 0; l < W; l += V) sleef::store(r.data() + l, f(sleef::load(x.data() + l), sleef::load(y.data() + l)));
    return r;
  } else
#endif
  {
    (void)f;
    return lanewise(g, x, y);
  }
}
}  // namespace detail

#if FUSOR_SLEEF_VECTOR
#  define FUSOR_PACK_SLEEF(NAME)                                                                                  \
    template <int W>                                                                                              \
    FUSOR_HOST_INLINE pack<float, W> NAME(const pack<float, W>& x) {                                                                \
      return detail::per_register(x, [](sleef::vf v) { return sleef::NAME##_vf(v); },                             \
                                  [](float e) { return math::NAME(e); });                                         \
    }                                                                                                             \
    template <int W>                                                                                              \
    FUSOR_HOST_INLINE pack<double, W> NAME(const pack<double, W>& x) {                                                              \
      return detail::per_register(x, [](sleef::vd v) { return sleef::NAME##_vd(v); },                             \
                                  [](double e) { return math::NAME(e); });                                        \
    }
#else
#  define FUSOR_PACK_SLEEF(NAME)                                    \
    template <class T, int W>                                       \
    FUSOR_HOST_INLINE pack<T, W> NAME(const pack<T, W>& x) {        \
      return lanewise([](T e) { return math::NAME(e); }, x);        \
    }
#endif
FUSOR_PACK_SLEEF(exp)
FUSOR_PACK_SLEEF(expm1)
FUSOR_PACK_SLEEF(log)
FUSOR_PACK_SLEEF(log1p)
FUSOR_PACK_SLEEF(tanh)
FUSOR_PACK_SLEEF(erf)
FUSOR_PACK_SLEEF(asin)
FUSOR_PACK_SLEEF(acos)
FUSOR_PACK_SLEEF(atan)
#undef FUSOR_PACK_SLEEF

// sin, cos, tan: SLEEF's vector variants take one argument-reduction path
// for the whole register, chosen by its largest lane (the fast path below
// |x| = 125 in f32, 15 in f64), so a lane's bits could depend on its
// neighbours. A pack whose lanes are all below trig_fast_limit (inside the
// fast path) is one vector call; any other pack is computed lane by lane,
// each lane on its own broadcast register, as the scalar function is: lanes
// stay independent and equal to the scalar call.
template <class T>
inline constexpr T trig_fast_limit = sizeof(T) == 4 ? T(64) : T(8);
#if FUSOR_SLEEF_VECTOR
#  define FUSOR_PACK_TRIG(NAME)                                                                     \
    template <class T, int W>                                                                       \
      requires cuda::std::is_floating_point_v<T>                                                    \
    FUSOR_HOST_INLINE pack<T, W> NAME(const pack<T, W>& x) {                                        \
      bool small = true;                                                                            \
      for (int l = 0; l < W; ++l) small &= (x.v[l] < trig_fast_limit<T>) & (x.v[l] > -trig_fast_limit<T>); \
      if (!small) return lanewise([](T e) { return math::NAME(e); }, x);                           \
      if constexpr (cuda::std::is_same_v<T, float>)                                                 \
        return detail::per_register(x, [](sleef::vf v) { return sleef::NAME##_vf(v); },            \
                                    [](float e) { return math::NAME(e); });                         \
      else                                                                                          \
        return detail::per_register(x, [](sleef::vd v) { return sleef::NAME##_vd(v); },            \
                                    [](double e) { return math::NAME(e); });                        \
    }
#else
#  define FUSOR_PACK_TRIG(NAME)                                     \
    template <class T, int W>                                       \
    FUSOR_HOST_INLINE pack<T, W> NAME(const pack<T, W>& x) {        \
      return lanewise([](T e) { return math::NAME(e); }, x);        \
    }
#endif
FUSOR_PACK_TRIG(sin)
FUSOR_PACK_TRIG(cos)
FUSOR_PACK_TRIG(tan)
#undef FUSOR_PACK_TRIG
#if FUSOR_SLEEF_VECTOR
#  define FUSOR_PACK_VIA_DOUBLE(NAME)                                                              \
    template <int W>                                                                               \
    FUSOR_HOST_INLINE pack<double, W> NAME(const pack<double, W>& x) {                             \
      return detail::per_register(x, [](sleef::vd v) { return sleef::NAME##_vd(v); },              \
                                  [](double e) { return math::NAME(e); });                         \
    }                                                                                              \
    /* f32 through f64, as the scalar (see sinh above) */                                          \
    template <int W>                                                                               \
    FUSOR_HOST_INLINE pack<float, W> NAME(const pack<float, W>& x) {                               \
      return to_lanes<float, W>(NAME(to_lanes<double, W>(x)));                                     \
    }
#else
#  define FUSOR_PACK_VIA_DOUBLE(NAME)                               \
    template <class T, int W>                                       \
    FUSOR_HOST_INLINE pack<T, W> NAME(const pack<T, W>& x) {        \
      return lanewise([](T e) { return math::NAME(e); }, x);        \
    }
#endif
FUSOR_PACK_VIA_DOUBLE(sinh)
FUSOR_PACK_VIA_DOUBLE(cosh)
#undef FUSOR_PACK_VIA_DOUBLE

#define FUSOR_PACK_LANEWISE(NAME)                                   \
  template <class T, int W>                                         \
    requires cuda::std::is_floating_point_v<T>                      \
  FUSOR_HOST_INLINE pack<T, W> NAME(const pack<T, W>& x) {          \
    return lanewise([](T e) { return math::NAME(e); }, x);          \
  }
FUSOR_PACK_LANEWISE(floor)
FUSOR_PACK_LANEWISE(ceil)
FUSOR_PACK_LANEWISE(round_half_even)
#undef FUSOR_PACK_LANEWISE
template <class T, int W>
  requires cuda::std::is_floating_point_v<T>
FUSOR_HOST_INLINE pack<T, W> fmod(const pack<T, W>& a, const pack<T, W>& b) {
  return lanewise([](T x, T y) { return math::fmod(x, y); }, a, b);
}

template <class T, int W>
  requires cuda::std::is_floating_point_v<T>
FUSOR_HOST_INLINE pack<T, W> sqrt(const pack<T, W>& x) {
#if FUSOR_SLEEF_VECTOR
  return detail::per_register(x, [](auto v) { return sleef::vsqrt(v); }, [](T e) { return math::sqrt(e); });
#else
  return lanewise([](T e) { return math::sqrt(e); }, x);
#endif
}
template <class T, int W>
  requires cuda::std::is_floating_point_v<T>
FUSOR_HOST_INLINE pack<T, W> pow(const pack<T, W>& a, const pack<T, W>& b) {
#if FUSOR_SLEEF_VECTOR
  if constexpr (cuda::std::is_same_v<T, float>)
    return detail::per_register(a, b, [](sleef::vf x, sleef::vf y) { return sleef::pow_vf(x, y); },
                                [](float x, float y) { return math::pow(x, y); });
  else
    return detail::per_register(a, b, [](sleef::vd x, sleef::vd y) { return sleef::pow_vd(x, y); },
                                [](double x, double y) { return math::pow(x, y); });
#else
  return lanewise([](T x, T y) { return math::pow(x, y); }, a, b);
#endif
}

}  // namespace fusor::math
