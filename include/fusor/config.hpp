#pragma once
/// @file config.hpp
/// Execution-space spelling and library-wide switches. Every other header spells
/// host/device qualifiers through these macros, never raw `__host__ __device__`.

#if defined(__CUDACC__)
#  define FUSOR_HOST_DEVICE __host__ __device__ __forceinline__
#  define FUSOR_DEVICE __device__ __forceinline__
#  define FUSOR_GLOBAL __global__
#else
#  define FUSOR_HOST_DEVICE inline
#  define FUSOR_DEVICE inline
#endif

/// Host-only code that must be inlined into its caller: the pack
/// operations (core/pack.hpp, ops/math.hpp) and expression-tree evaluation,
/// whose SIMD code exists only once the whole tree is in one function (GCC's
/// size limits otherwise leave some calls out of line: measured 6x slower on
/// a six-op chain).
#if defined(__GNUC__) || defined(__clang__)
#  define FUSOR_HOST_INLINE inline __attribute__((always_inline))
#else
#  define FUSOR_HOST_INLINE inline
#endif
/// After a lambda's parameter list: the lambda is always inlined by GCC and
/// Clang outside nvcc (lambdas that run once per pack of elements).
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#  define FUSOR_LAMBDA_INLINE __attribute__((always_inline))
#else
#  define FUSOR_LAMBDA_INLINE
#endif
/// FUSOR_HOST_DEVICE code that is inlined on the host too (tree evaluation).
#if defined(__CUDACC__)
#  define FUSOR_HOST_DEVICE_INLINE __host__ __device__ __forceinline__
#else
#  define FUSOR_HOST_DEVICE_INLINE FUSOR_HOST_INLINE
#endif

/// True while compiling device code (nvcc's device pass).
#if defined(__CUDA_ARCH__)
#  define FUSOR_DEVICE_PASS 1
#else
#  define FUSOR_DEVICE_PASS 0
#endif

// Loop unrolling: `#pragma unroll` in nvcc's device pass and for clang;
// GCC's own spelling elsewhere, including nvcc's host pass (there a plain
// `#pragma unroll` reached g++ as an unknown pragma: -Wunknown-pragmas in
// every .cu file of a -Wall build).
#if defined(__CUDA_ARCH__) || defined(__clang__)
#  define FUSOR_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#  define FUSOR_UNROLL
#elif defined(__GNUC__)
#  define FUSOR_UNROLL _Pragma("GCC unroll 16")
#else
#  define FUSOR_UNROLL
#endif

/// FUSOR_FAST_MATH: when defined to 1, fused kernels may contract a*b+c into an
/// FMA and canonicalization may apply value-changing rewrites. Off by default:
/// fused results then equal the unfused reference bit for bit on the host.
#ifndef FUSOR_FAST_MATH
#  define FUSOR_FAST_MATH 0
#endif

/// FUSOR_HAS_CLEAR_PADDING: defined where the compiler has
/// __builtin_clear_padding, so op attributes (small structs with float
/// members and padding) can be compared bit for bit: the value checks of
/// tags (exec/validate.hpp) and of shared subexpressions
/// (recognize/shared_by_value.hpp).
#if defined(__has_builtin)
#  if __has_builtin(__builtin_clear_padding)
#    define FUSOR_HAS_CLEAR_PADDING 1
#  endif
#endif
