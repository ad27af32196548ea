#pragma once
/// @file bench/chain6.hpp
/// The benchmarked elementwise chains, shared by the host and CUDA benchmarks:
///
///   chain6      y = (gelu(x * a + b) - sigmoid(x)) * c        (namespace chain6)
///   chain6_mem  y = max(relu(x * a + b) * c - x, b)           (namespace chain6_mem)
///
/// chain6 has two transcendental ops: on the host it is compute-bound (scalar
/// libm erff/expf). chain6_mem has only IEEE-exact cheap ops (mul, add, relu,
/// mul, sub, max): memory-bound everywhere, the test of the fused kernel's
/// memory path. Both read the same inputs x, b, c (defined here, in chain6).
///
/// x, b, c: float tensors of n elements; a: a run-time float scalar; gelu is
/// the erf form. Six ops: mul, add, gelu, sigmoid, sub, mul. x is read by two
/// ops; it carries an identity tag so that the fused kernel loads it once.
///
/// Byte-counting convention (STREAM's): compulsory traffic only, every array
/// element read counts once, every element written counts once, no
/// write-allocate (read-for-ownership) traffic and no cache effects.
///  - fused:   x, b, c read + y written                  = 16 B/element
///  - unfused: each op reads its tensor operands and writes its own result
///             (the scalar a is free):
///               t1 = x * a          read 1, write 1 ->  8
///               t2 = t1 + b         read 2, write 1 -> 12
///               t3 = gelu(t2)       read 1, write 1 ->  8
///               t4 = sigmoid(x)     read 1, write 1 ->  8
///               t5 = t3 - t4        read 2, write 1 -> 12
///               y  = t5 * c         read 2, write 1 -> 12
///                                                   = 60 B/element
///  - copy:    a[i] = b[i]                             =  8 B/element
///  - triad:   a[i] = b[i] + s * c[i]                  = 12 B/element
#include "bench_common.hpp"

#include <fusor/fusor.hpp>

#include <cstddef>
#include <cstdint>

namespace chain6 {

inline constexpr const char* name = "chain6";
inline constexpr const char* formula = "y = (gelu(x * a + b) - sigmoid(x)) * c";
inline constexpr int ops = 6;
inline constexpr double fused_bytes_per_element = 16;
inline constexpr double unfused_bytes_per_element = 8 + 12 + 8 + 8 + 12 + 12;
inline constexpr double copy_bytes_per_element = 8;
inline constexpr double triad_bytes_per_element = 12;

inline constexpr float a = 0.75f;

/// Identity tag of x (read by mul and by sigmoid).
struct x_id {};

/// The chain over views x, b, c (host_view or device_view of const float).
template <class X, class B, class C>
auto expression(const X& x, const B& b, const C& c, float scalar_a) {
  const auto xt = fusor::tag<x_id>(x);
  return (fusor::gelu(xt * scalar_a + b) - fusor::sigmoid(xt)) * c;
}

/// Deterministic input values (any thread may fill any index): bench_common.hpp.
using fusor_bench::mix;
using fusor_bench::uniform;
inline float x_at(std::uint64_t i) { return uniform(1, i, -4.0f, 4.0f); }
inline float b_at(std::uint64_t i) { return uniform(2, i, -1.0f, 1.0f); }
inline float c_at(std::uint64_t i) { return uniform(3, i, 0.5f, 1.5f); }

}  // namespace chain6

/// The memory-bound chain: y = max(relu(x * a + b) * c - x, b).
///
/// Six ops: mul, add, relu, mul, sub, max; every one exact under IEEE-754
/// (one rounding each, no libm), so every backend and Eigen must agree bit for
/// bit up to the sign of zero. x and b are each read by two ops and carry
/// identity tags, so the fused kernel loads each once. Same inputs as chain6.
/// Bytes (same convention as chain6):
///  - fused:   x, b, c read + y written                  = 16 B/element
///  - unfused:   t1 = x * a          read 1, write 1 ->  8
///               t2 = t1 + b         read 2, write 1 -> 12
///               t3 = relu(t2)       read 1, write 1 ->  8
///               t4 = t3 * c         read 2, write 1 -> 12
///               t5 = t4 - x         read 2, write 1 -> 12
///               y  = max(t5, b)     read 2, write 1 -> 12
///                                                   = 64 B/element
namespace chain6_mem {

inline constexpr const char* name = "chain6_mem";
inline constexpr const char* formula = "y = max(relu(x * a + b) * c - x, b)";
inline constexpr int ops = 6;
inline constexpr double fused_bytes_per_element = 16;
inline constexpr double unfused_bytes_per_element = 8 + 12 + 8 + 12 + 12 + 12;
inline constexpr float a = chain6::a;

/// Identity tags of x and b (each read by two ops).
struct x_id {};
struct b_id {};

/// The chain over views x, b, c (host_view or device_view of const float).
template <class X, class B, class C>
auto expression(const X& x, const B& b, const C& c, float scalar_a) {
  const auto xt = fusor::tag<x_id>(x);
  const auto bt = fusor::tag<b_id>(b);
  return fusor::max(fusor::relu(xt * scalar_a + bt) * c - xt, bt);
}

/// The formula as scalar code with fusor's op semantics (ops/elementwise.hpp:
/// relu(NaN) = NaN, relu(-0) = +0; max propagates NaN, max(-0, +0) = +0), for
/// the handwritten loop (host) and kernel (CUDA). Equal to the fused result bit
/// for bit: on the host it is compiled without FMA contraction (fusor's target
/// adds -ffp-contract=off), on the device it rounds every mul/add/sub
/// separately (__f*_rn), as fusor's ops do.
#if defined(__CUDACC__)
__host__ __device__
#endif
inline float scalar(float x, float b, float c, float scalar_a) {
#if defined(__CUDA_ARCH__)
  const float t = __fadd_rn(__fmul_rn(x, scalar_a), b);
  const float r = (t > 0.0f || t != t) ? t : 0.0f;
  const float u = __fsub_rn(__fmul_rn(r, c), x);
#else
  const float t = x * scalar_a + b;
  const float r = (t > 0.0f || t != t) ? t : 0.0f;
  const float u = r * c - x;
#endif
  if (u != u) return u;
  if (b != b) return b;
  if (u == b) return (u == 0.0f && (__builtin_bit_cast(std::uint32_t, u) >> 31) != 0) ? b : u;
  return u > b ? u : b;
}

}  // namespace chain6_mem
