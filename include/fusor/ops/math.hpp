#pragma once
/// @file ops/math.hpp
/// Scalar math shared by the host and device paths. Products and sums go
/// through mul/add/sub/div, which on the device use the `__f*_rn` intrinsics:
/// nvcc never contracts those into FMAs, so a fused kernel rounds exactly like
/// the unfused one (CUDA C++ Programming Guide, "Floating-Point Standard").
/// Host builds rely on -ffp-contract=off, which fusor's CMake target sets.
#include <fusor/config.hpp>

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#if !FUSOR_DEVICE_PASS
#include <cmath>
#endif

namespace fusor::math {

template <class T>
FUSOR_HOST_DEVICE bool isnan(T x) {
  if constexpr (cuda::std::is_floating_point_v<T>) return x != x;
  else return false;
}

/// Sign bit of a float (true for -0.0 and negative values); false for integers.
template <class T>
FUSOR_HOST_DEVICE bool signbit(T x) {
  if constexpr (cuda::std::is_same_v<T, float>) return (__builtin_bit_cast(cuda::std::uint32_t, x) >> 31) != 0;
  else if constexpr (cuda::std::is_same_v<T, double>) return (__builtin_bit_cast(cuda::std::uint64_t, x) >> 63) != 0;
  else return false;
}

#if FUSOR_DEVICE_PASS && !FUSOR_FAST_MATH
FUSOR_HOST_DEVICE float add(float a, float b) { return __fadd_rn(a, b); }
FUSOR_HOST_DEVICE float sub(float a, float b) { return __fsub_rn(a, b); }
FUSOR_HOST_DEVICE float mul(float a, float b) { return __fmul_rn(a, b); }
FUSOR_HOST_DEVICE float div(float a, float b) { return __fdiv_rn(a, b); }
FUSOR_HOST_DEVICE double add(double a, double b) { return __dadd_rn(a, b); }
FUSOR_HOST_DEVICE double sub(double a, double b) { return __dsub_rn(a, b); }
FUSOR_HOST_DEVICE double mul(double a, double b) { return __dmul_rn(a, b); }
FUSOR_HOST_DEVICE double div(double a, double b) { return __ddiv_rn(a, b); }
#else
FUSOR_HOST_DEVICE float add(float a, float b) { return a + b; }
FUSOR_HOST_DEVICE float sub(float a, float b) { return a - b; }
FUSOR_HOST_DEVICE float mul(float a, float b) { return a * b; }
FUSOR_HOST_DEVICE float div(float a, float b) { return a / b; }
FUSOR_HOST_DEVICE double add(double a, double b) { return a + b; }
FUSOR_HOST_DEVICE double sub(double a, double b) { return a - b; }
FUSOR_HOST_DEVICE double mul(double a, double b) { return a * b; }
FUSOR_HOST_DEVICE double div(double a, double b) { return a / b; }
#endif
// Integers: wrap-around is defined via unsigned arithmetic; x / 0 is 0 (C++
// leaves it undefined; fusor documents 0 rather than crash a kernel).
template <class T>
  requires cuda::std::is_integral_v<T>
FUSOR_HOST_DEVICE T add(T a, T b) {
  if constexpr (cuda::std::is_same_v<T, bool>) return a || b;
  else return T(cuda::std::make_unsigned_t<T>(a) + cuda::std::make_unsigned_t<T>(b));
}
template <class T>
  requires cuda::std::is_integral_v<T>
FUSOR_HOST_DEVICE T sub(T a, T b) {
  if constexpr (cuda::std::is_same_v<T, bool>) return a != b;
  else return T(cuda::std::make_unsigned_t<T>(a) - cuda::std::make_unsigned_t<T>(b));
}
template <class T>
  requires cuda::std::is_integral_v<T>
FUSOR_HOST_DEVICE T mul(T a, T b) {
  if constexpr (cuda::std::is_same_v<T, bool>) return a && b;
  else return T(cuda::std::make_unsigned_t<T>(a) * cuda::std::make_unsigned_t<T>(b));
}
template <class T>
  requires cuda::std::is_integral_v<T>
FUSOR_HOST_DEVICE T div(T a, T b) {
  if constexpr (cuda::std::is_same_v<T, bool>) return b ? a : false;
  else if constexpr (cuda::std::is_signed_v<T>) return b == 0 ? T(0) : (b == -1 ? sub(T(0), a) : a / b);
  else return b == 0 ? T(0) : a / b;
}

#define FUSOR_MATH_UNARY(NAME, F32, F64)                        \
  FUSOR_HOST_DEVICE float NAME(float x) { return ::F32(x); }  \
  FUSOR_HOST_DEVICE double NAME(double x) { return ::F64(x); }
FUSOR_MATH_UNARY(exp, expf, exp)
FUSOR_MATH_UNARY(expm1, expm1f, expm1)
FUSOR_MATH_UNARY(log, logf, log)
FUSOR_MATH_UNARY(log1p, log1pf, log1p)
FUSOR_MATH_UNARY(sqrt, sqrtf, sqrt)
FUSOR_MATH_UNARY(tanh, tanhf, tanh)
FUSOR_MATH_UNARY(erf, erff, erf)
FUSOR_MATH_UNARY(fabs, fabsf, fabs)
#undef FUSOR_MATH_UNARY
FUSOR_HOST_DEVICE float pow(float a, float b) { return ::powf(a, b); }
FUSOR_HOST_DEVICE double pow(double a, double b) { return ::pow(a, b); }

}  // namespace fusor::math
