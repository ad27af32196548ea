#pragma once
/// @file ops/vector_math.hpp
/// The host's transcendental functions come from SLEEF (Shibata & Petrogalli,
/// "SLEEF: A Portable Vectorized Library of C Standard Mathematical
/// Functions", IEEE TPDS 2020; https://sleef.org), the library PyTorch's CPU
/// kernels use for the same functions: the 1.0-ULP ("u10") variants, whose
/// special values (NaN, ±Inf, ±0, overflow, underflow) follow C99 Annex F.
/// Why SLEEF and not Eigen's packet math, measured: docs/benchmarks.md,
/// "Host math" (bench/bench_math.cpp).
///
/// fusor calls the variant for the instruction set the translation unit is
/// compiled for, chosen at compile time (no run-time dispatch):
///   AVX-512F: 16 floats / 8 doubles per call   (the FMA family)
///   AVX2:      8 floats / 4 doubles             (the FMA family)
///   AVX:       8 floats / 4 doubles             (the no-FMA family)
///   SSE4.1 / SSE2: 4 floats / 2 doubles         (the no-FMA family)
/// and for one element the portable C variant of the same family
/// (`purecfma` with AVX2 or AVX-512, else `purec`). Within a family SLEEF's
/// scalar and vector variants give the same bits for exp, expm1, log,
/// log1p, tanh, erf and pow (checked exhaustively for exp, log, tanh and
/// erf over all 2^32 floats, and on 2^26 random inputs for the rest and
/// both families; tests/host/test_packs.cpp keeps a sampled check), so a
/// value does not depend on whether the host computed it alone or in a
/// pack. sin and cos differ between the two in the last bit for some inputs
/// (and sin, cos, tan pick one argument reduction per register), so for
/// them, and for asin, acos, atan, sinh and cosh (not checked that way), one
/// element is computed by the vector variant too, on a broadcast register
/// (lane 0); test_packs checks all eight lane against scalar.
///
/// SLEEF is used when FUSOR_HAS_SLEEF is 1 (fusor's CMake target sets it
/// when it finds libsleef, and links it); otherwise the C library's
/// functions, one lane at a time. nvcc translation units call the scalar
/// variants lane by lane on the host (same bits; nvcc's front end is not
/// given SLEEF's intrinsics header).
#include <fusor/config.hpp>

#if !defined(FUSOR_HAS_SLEEF)
#  define FUSOR_HAS_SLEEF 0
#endif

/// FUSOR_SLEEF_FMA: the family of SLEEF variants in use (see file comment).
#if defined(__AVX2__) || defined(__AVX512F__)
#  define FUSOR_SLEEF_FMA 1
#else
#  define FUSOR_SLEEF_FMA 0
#endif

/// FUSOR_SLEEF_VECTOR: vector variants are called (a host compiler that is
/// not nvcc's front end, on x86-64).
#if FUSOR_HAS_SLEEF && !defined(__CUDACC__) && defined(__x86_64__) && defined(__SSE2__)
#  define FUSOR_SLEEF_VECTOR 1
#else
#  define FUSOR_SLEEF_VECTOR 0
#endif

// SLEEF's functions are declared here under fusor's own names, bound to
// SLEEF's symbols with asm labels: sleef.h is not included (it defines the
// macros CONST and IMPORT and declares the FMA variants only for AVX2
// builds), and a user's own #include <sleef.h> does not clash with these.
#define FUSOR_SLEEF_STR2(x) #x
#define FUSOR_SLEEF_STR(x) FUSOR_SLEEF_STR2(x)
#if FUSOR_SLEEF_FMA
#  define FUSOR_SLEEF_SCALAR_SUFFIX u10purecfma
#else
#  define FUSOR_SLEEF_SCALAR_SUFFIX u10purec
#endif
#define FUSOR_SLEEF_CAT3_(a, b, c) a##b##c
#define FUSOR_SLEEF_CAT3(a, b, c) FUSOR_SLEEF_CAT3_(a, b, c)
/// "Sleef_<f><type><suffix>", e.g. "Sleef_expf16_u10avx512f".
#define FUSOR_SLEEF_SYMBOL(f, type, suffix) FUSOR_SLEEF_STR(FUSOR_SLEEF_CAT3(Sleef_##f, type, suffix))

#if FUSOR_HAS_SLEEF && !FUSOR_DEVICE_PASS
namespace fusor::math::sleef {
#  define FUSOR_SLEEF_DECLARE(f)                                                         \
    float f##_f(float) __asm__(FUSOR_SLEEF_SYMBOL(f, f1_, FUSOR_SLEEF_SCALAR_SUFFIX));   \
    double f##_d(double) __asm__(FUSOR_SLEEF_SYMBOL(f, d1_, FUSOR_SLEEF_SCALAR_SUFFIX));
FUSOR_SLEEF_DECLARE(exp)
FUSOR_SLEEF_DECLARE(expm1)
FUSOR_SLEEF_DECLARE(log)
FUSOR_SLEEF_DECLARE(log1p)
FUSOR_SLEEF_DECLARE(tanh)
FUSOR_SLEEF_DECLARE(erf)
FUSOR_SLEEF_DECLARE(sin)
FUSOR_SLEEF_DECLARE(cos)
FUSOR_SLEEF_DECLARE(tan)
FUSOR_SLEEF_DECLARE(asin)
FUSOR_SLEEF_DECLARE(acos)
FUSOR_SLEEF_DECLARE(atan)
FUSOR_SLEEF_DECLARE(sinh)
FUSOR_SLEEF_DECLARE(cosh)
FUSOR_SLEEF_DECLARE(asinh)
FUSOR_SLEEF_DECLARE(acosh)
FUSOR_SLEEF_DECLARE(atanh)
#  undef FUSOR_SLEEF_DECLARE
float pow_f(float, float) __asm__(FUSOR_SLEEF_SYMBOL(pow, f1_, FUSOR_SLEEF_SCALAR_SUFFIX));
double pow_d(double, double) __asm__(FUSOR_SLEEF_SYMBOL(pow, d1_, FUSOR_SLEEF_SCALAR_SUFFIX));
}  // namespace fusor::math::sleef
#endif

#if FUSOR_SLEEF_VECTOR
#  include <immintrin.h>
namespace fusor::math::sleef {
#  if defined(__AVX512F__)
#    define FUSOR_SLEEF_VECTOR_SUFFIX u10avx512f
using vf = __m512;
using vd = __m512d;
inline constexpr int f_lanes = 16, d_lanes = 8;
#    define FUSOR_SLEEF_FTYPE f16_
#    define FUSOR_SLEEF_DTYPE d8_
inline vf load(const float* p) { return _mm512_loadu_ps(p); }
inline vd load(const double* p) { return _mm512_loadu_pd(p); }
inline void store(float* p, vf v) { _mm512_storeu_ps(p, v); }
inline void store(double* p, vd v) { _mm512_storeu_pd(p, v); }
// (the masked forms: _mm512_sqrt_ps trips GCC 12's -Wuninitialized in its own header)
inline vf vsqrt(vf v) { return _mm512_maskz_sqrt_ps(__mmask16(0xffff), v); }
inline vd vsqrt(vd v) { return _mm512_maskz_sqrt_pd(__mmask8(0xff), v); }
inline vf broadcast(float x) { return _mm512_set1_ps(x); }
inline vd broadcast(double x) { return _mm512_set1_pd(x); }
inline float first(vf v) { return _mm512_cvtss_f32(v); }
inline double first(vd v) { return _mm512_cvtsd_f64(v); }
#  elif defined(__AVX__)
#    if defined(__AVX2__)
#      define FUSOR_SLEEF_VECTOR_SUFFIX u10avx2
#    else
#      define FUSOR_SLEEF_VECTOR_SUFFIX u10avx
#    endif
using vf = __m256;
using vd = __m256d;
inline constexpr int f_lanes = 8, d_lanes = 4;
#    define FUSOR_SLEEF_FTYPE f8_
#    define FUSOR_SLEEF_DTYPE d4_
inline vf load(const float* p) { return _mm256_loadu_ps(p); }
inline vd load(const double* p) { return _mm256_loadu_pd(p); }
inline void store(float* p, vf v) { _mm256_storeu_ps(p, v); }
inline void store(double* p, vd v) { _mm256_storeu_pd(p, v); }
inline vf vsqrt(vf v) { return _mm256_sqrt_ps(v); }
inline vd vsqrt(vd v) { return _mm256_sqrt_pd(v); }
inline vf broadcast(float x) { return _mm256_set1_ps(x); }
inline vd broadcast(double x) { return _mm256_set1_pd(x); }
inline float first(vf v) { return _mm256_cvtss_f32(v); }
inline double first(vd v) { return _mm256_cvtsd_f64(v); }
#  else
#    if defined(__SSE4_1__)
#      define FUSOR_SLEEF_VECTOR_SUFFIX u10sse4
#    else
#      define FUSOR_SLEEF_VECTOR_SUFFIX u10sse2
#    endif
using vf = __m128;
using vd = __m128d;
inline constexpr int f_lanes = 4, d_lanes = 2;
#    define FUSOR_SLEEF_FTYPE f4_
#    define FUSOR_SLEEF_DTYPE d2_
inline vf load(const float* p) { return _mm_loadu_ps(p); }
inline vd load(const double* p) { return _mm_loadu_pd(p); }
inline void store(float* p, vf v) { _mm_storeu_ps(p, v); }
inline void store(double* p, vd v) { _mm_storeu_pd(p, v); }
inline vf vsqrt(vf v) { return _mm_sqrt_ps(v); }
inline vd vsqrt(vd v) { return _mm_sqrt_pd(v); }
inline vf broadcast(float x) { return _mm_set1_ps(x); }
inline vd broadcast(double x) { return _mm_set1_pd(x); }
inline float first(vf v) { return _mm_cvtss_f32(v); }
inline double first(vd v) { return _mm_cvtsd_f64(v); }
#  endif
#  define FUSOR_SLEEF_DECLARE(f)                                                        \
    vf f##_vf(vf) __asm__(FUSOR_SLEEF_SYMBOL(f, FUSOR_SLEEF_FTYPE, FUSOR_SLEEF_VECTOR_SUFFIX)); \
    vd f##_vd(vd) __asm__(FUSOR_SLEEF_SYMBOL(f, FUSOR_SLEEF_DTYPE, FUSOR_SLEEF_VECTOR_SUFFIX));
FUSOR_SLEEF_DECLARE(exp)
FUSOR_SLEEF_DECLARE(expm1)
FUSOR_SLEEF_DECLARE(log)
FUSOR_SLEEF_DECLARE(log1p)
FUSOR_SLEEF_DECLARE(tanh)
FUSOR_SLEEF_DECLARE(erf)
FUSOR_SLEEF_DECLARE(sin)
FUSOR_SLEEF_DECLARE(cos)
FUSOR_SLEEF_DECLARE(tan)
FUSOR_SLEEF_DECLARE(asin)
FUSOR_SLEEF_DECLARE(acos)
FUSOR_SLEEF_DECLARE(atan)
FUSOR_SLEEF_DECLARE(sinh)
FUSOR_SLEEF_DECLARE(cosh)
FUSOR_SLEEF_DECLARE(asinh)
FUSOR_SLEEF_DECLARE(acosh)
FUSOR_SLEEF_DECLARE(atanh)
#  undef FUSOR_SLEEF_DECLARE
vf pow_vf(vf, vf) __asm__(FUSOR_SLEEF_SYMBOL(pow, FUSOR_SLEEF_FTYPE, FUSOR_SLEEF_VECTOR_SUFFIX));
vd pow_vd(vd, vd) __asm__(FUSOR_SLEEF_SYMBOL(pow, FUSOR_SLEEF_DTYPE, FUSOR_SLEEF_VECTOR_SUFFIX));
}  // namespace fusor::math::sleef
#endif
