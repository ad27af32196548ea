#pragma once
/// @file core/pack.hpp
/// pack<T, W>: W lanes of T that the host executor evaluates together, so
/// one expression tree is evaluated once per W elements and each op is a
/// SIMD instruction (Eigen's packets, with fusor's op functors written once
/// for scalars and packs: ops/elementwise.hpp).
///
/// Lanes are independent: every operation on a pack is the scalar
/// operation on each lane, bit for bit (ops/math.hpp gives transcendental
/// functions whose vector and scalar forms agree bitwise), so a value is the
/// same whether the host computed it in a pack or alone, and fused results
/// equal unfused ones as for scalar code.
///
/// Storage: with GCC or Clang (outside nvcc) a pack of a number type holds a
/// GCC vector (`vector_size`), so its arithmetic, comparisons and selects
/// are vector instructions whatever the optimizer decides; elsewhere (and
/// for bool) an array, operated on lane by lane. Either way `p.v[l]` is lane
/// l. Comparisons give lane_mask<sizeof(T), W> (all-ones / zero lanes, as
/// SIMD compares do); `math::select(mask, a, b)` is the lane-wise
/// `mask ? a : b` (ops/math.hpp).
///
/// Host code only: device code never instantiates a pack (the CUDA thread is
/// the lane there).
#include <fusor/config.hpp>

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <cstring>

namespace fusor {

/// Lanes of a host pack: one vector register of 4-byte elements for the
/// instruction set the translation unit is compiled for (16 with AVX-512,
/// 8 with AVX/AVX2, 4 with SSE2), so W floats fill one register. Doubles
/// take two registers per pack.
inline constexpr int host_pack_lanes =
#if defined(__AVX512F__)
    16;
#elif defined(__AVX__)
    8;
#else
    4;
#endif

/// FUSOR_PACK_VECTORS: packs of number types are GCC vectors (file comment).
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#  define FUSOR_PACK_VECTORS 1
#else
#  define FUSOR_PACK_VECTORS 0
#endif

/// FUSOR_HOST_PACKETS: the host executor evaluates kernels on packs
/// (exec/host_packets.hpp, kernels/parts/host_rows.hpp); nvcc translation
/// units keep the device's per-element algorithm on the host (same bits for
/// elementwise groups; the device's reduction order for rows).
#if !defined(__CUDACC__)
#  define FUSOR_HOST_PACKETS 1
#else
#  define FUSOR_HOST_PACKETS 0
#endif

namespace detail {
/// W lanes of T are a GCC vector: a number type (not bool) on GCC/Clang
/// outside nvcc, at most one vector register wide (wider ones, such as 16
/// doubles, would change how they are passed: GCC's -Wpsabi notes).
template <class T, int W>
inline constexpr bool vector_storage_v = FUSOR_PACK_VECTORS && cuda::std::is_arithmetic_v<T> &&
                                         !cuda::std::is_same_v<T, bool> && sizeof(T) * W <= 4 * host_pack_lanes;
/// The storage of W lanes of T (see file comment).
template <class T, int W>
struct lanes_storage {
  using type = T[W];
};
#if FUSOR_PACK_VECTORS
template <class T, int W>
  requires vector_storage_v<T, W>
struct lanes_storage<T, W> {
  using type __attribute__((vector_size(sizeof(T) * W))) = T;
};
#endif
/// The signed integer of N bytes (a mask lane).
template <int N>
using mask_int_t = cuda::std::conditional_t<
    N == 1, cuda::std::int8_t,
    cuda::std::conditional_t<N == 2, cuda::std::int16_t, cuda::std::conditional_t<N == 4, cuda::std::int32_t, cuda::std::int64_t>>>;
}  // namespace detail

/// W lanes of T (see file comment). `pack<T, W>(s)` broadcasts s.
template <class T, int W>
struct pack {
  using value_type = T;
  static constexpr int lanes = W;
  typename detail::lanes_storage<T, W>::type v;

  pack() = default;
  /// Every lane = T(s).
  template <class U>
    requires cuda::std::is_arithmetic_v<U>
  FUSOR_HOST_INLINE constexpr explicit pack(U s) : v{} {
    if constexpr (detail::vector_storage_v<T, W>) {
      // a broadcast: s - (+0) is s for every s, -0.0 included (0 + s would
      // give +0.0); GCC emits one broadcast instruction (a lane loop came
      // out as W masked broadcasts per use)
      v = static_cast<T>(s) - v;
    } else {
      for (int l = 0; l < W; ++l) v[l] = static_cast<T>(s);
    }
  }
  /// The lanes as an array of W T (lane l at data()[l]).
  FUSOR_HOST_INLINE T* data() { return reinterpret_cast<T*>(&v); }
  FUSOR_HOST_INLINE const T* data() const { return reinterpret_cast<const T*>(&v); }
};

/// The result of comparing two pack<T, W> with sizeof(T) == Bytes: per lane
/// all ones (true) or zero (false), as SIMD compare instructions give.
template <int Bytes, int W>
struct lane_mask {
  using lane_type = detail::mask_int_t<Bytes>;
  static constexpr int lanes = W;
  typename detail::lanes_storage<lane_type, W>::type v;
  /// Lane l as a bool.
  FUSOR_HOST_INLINE constexpr bool operator[](int l) const { return v[l] != 0; }
};

template <class T>
inline constexpr bool is_pack_v = false;
template <class T, int W>
inline constexpr bool is_pack_v<pack<T, W>> = true;

template <class T>
inline constexpr bool is_lane_mask_v = false;
template <int B, int W>
inline constexpr bool is_lane_mask_v<lane_mask<B, W>> = true;

/// The element type: T for a scalar T, T for pack<T, W>.
template <class T>
struct scalar_of {
  using type = T;
};
template <class T, int W>
struct scalar_of<pack<T, W>> {
  using type = T;
};
template <class T>
using scalar_of_t = typename scalar_of<T>::type;

/// Lanes of a pack type, 0 for a scalar.
template <class T>
inline constexpr int lanes_of_v = 0;
template <class T, int W>
inline constexpr int lanes_of_v<pack<T, W>> = W;
template <int B, int W>
inline constexpr int lanes_of_v<lane_mask<B, W>> = W;

namespace detail {
/// Lane l of x: x.v[l] for a pack, x[l] (a bool) for a mask.
template <class X>
FUSOR_HOST_INLINE constexpr auto lane(const X& x, int l) {
  if constexpr (is_lane_mask_v<X>) return x[l];
  else return x.v[l];
}
template <class F, class... P>
FUSOR_HOST_INLINE constexpr auto lanewise(F f, const P&... p) {
  constexpr int W = (lanes_of_v<P> | ...);
  using R = decltype(f(detail::lane(p, 0)...));
  pack<R, W> r;
  for (int l = 0; l < W; ++l) r.v[l] = f(detail::lane(p, l)...);
  return r;
}
}  // namespace detail

/// Lane l of x: x.v[l] for a pack, a bool for a mask, x itself for a scalar.
template <class X>
FUSOR_HOST_INLINE constexpr auto lane_of(const X& x, int l) {
  if constexpr (is_pack_v<X> || is_lane_mask_v<X>) return detail::lane(x, l);
  else return x;
}

/// `f` applied to each lane of packs or masks `p...` (all of one width).
template <class F, class... P>
  requires((is_pack_v<P> || is_lane_mask_v<P>) && ...)
FUSOR_HOST_INLINE constexpr auto lanewise(F f, const P&... p) {
  return detail::lanewise(f, p...);
}

/// x converted to pack<To, W>: a pack lane by lane (static_cast), a scalar
/// broadcast, a mask to 0/1; W = 0 leaves a scalar a static_cast scalar.
template <class To, int W, class X>
FUSOR_HOST_INLINE constexpr auto to_lanes(const X& x) {
  if constexpr (W == 0) {
    return static_cast<To>(x);
  } else if constexpr (is_pack_v<X>) {
    using From = typename X::value_type;
    if constexpr (cuda::std::is_same_v<From, To>) {
      return x;
    } else {
#if FUSOR_PACK_VECTORS
      if constexpr (detail::vector_storage_v<From, W> && detail::vector_storage_v<To, W>) {
        pack<To, W> r;
        r.v = __builtin_convertvector(x.v, typename detail::lanes_storage<To, W>::type);
        return r;
      } else
#endif
      {
        return detail::lanewise([](From e) { return static_cast<To>(e); }, x);
      }
    }
  } else if constexpr (is_lane_mask_v<X>) {
    return detail::lanewise([](bool e) { return static_cast<To>(e); }, x);
  } else {
    return pack<To, W>(static_cast<To>(x));
  }
}

// Lane-wise operators for the comparisons, negation and logic that op
// functors spell with operators (arithmetic goes through math::add, ...).
#define FUSOR_PACK_COMPARE(OP)                                                                    \
  template <class T, int W>                                                                       \
    requires(!cuda::std::is_same_v<T, bool>)                                                      \
  FUSOR_HOST_INLINE lane_mask<int(sizeof(T)), W> operator OP(const pack<T, W>& a, const pack<T, W>& b) { \
    lane_mask<int(sizeof(T)), W> m;                                                               \
    if constexpr (detail::vector_storage_v<T, W>) {                                               \
      m.v = (a.v OP b.v);                                                                         \
    } else {                                                                                      \
      for (int l = 0; l < W; ++l) m.v[l] = (a.v[l] OP b.v[l]) ? -1 : 0;                          \
    }                                                                                             \
    return m;                                                                                     \
  }
#define FUSOR_PACK_COMPARE_SCALAR(OP)                                                             \
  FUSOR_PACK_COMPARE(OP)                                                                          \
  template <class T, int W, class U>                                                              \
    requires cuda::std::is_arithmetic_v<U>                                                        \
  FUSOR_HOST_INLINE auto operator OP(const pack<T, W>& a, U b) {                                  \
    return a OP pack<T, W>(b);                                                                    \
  }                                                                                               \
  template <class T, int W, class U>                                                              \
    requires cuda::std::is_arithmetic_v<U>                                                        \
  FUSOR_HOST_INLINE auto operator OP(U a, const pack<T, W>& b) {                                  \
    return pack<T, W>(a) OP b;                                                                    \
  }
FUSOR_PACK_COMPARE_SCALAR(<)
FUSOR_PACK_COMPARE_SCALAR(>)
FUSOR_PACK_COMPARE_SCALAR(<=)
FUSOR_PACK_COMPARE_SCALAR(>=)
FUSOR_PACK_COMPARE_SCALAR(==)
FUSOR_PACK_COMPARE_SCALAR(!=)
#undef FUSOR_PACK_COMPARE_SCALAR
#undef FUSOR_PACK_COMPARE

// Masks combine bitwise (all-ones / zero lanes): && is &, || is |, ! is ~.
template <int B, int W>
FUSOR_HOST_INLINE lane_mask<B, W> operator&&(const lane_mask<B, W>& a, const lane_mask<B, W>& b) {
  lane_mask<B, W> m;
  if constexpr (detail::vector_storage_v<detail::mask_int_t<B>, W>) m.v = a.v & b.v;
  else
    for (int l = 0; l < W; ++l) m.v[l] = a.v[l] & b.v[l];
  return m;
}
template <int B, int W>
FUSOR_HOST_INLINE lane_mask<B, W> operator||(const lane_mask<B, W>& a, const lane_mask<B, W>& b) {
  lane_mask<B, W> m;
  if constexpr (detail::vector_storage_v<detail::mask_int_t<B>, W>) m.v = a.v | b.v;
  else
    for (int l = 0; l < W; ++l) m.v[l] = a.v[l] | b.v[l];
  return m;
}
template <int B, int W>
FUSOR_HOST_INLINE lane_mask<B, W> operator!(const lane_mask<B, W>& a) {
  lane_mask<B, W> m;
  if constexpr (detail::vector_storage_v<detail::mask_int_t<B>, W>) m.v = ~a.v;
  else
    for (int l = 0; l < W; ++l) m.v[l] = ~a.v[l];
  return m;
}

template <class T, int W>
FUSOR_HOST_INLINE pack<T, W> operator-(const pack<T, W>& a) {
  if constexpr (cuda::std::is_floating_point_v<T> && detail::vector_storage_v<T, W>) {
    pack<T, W> r;
    r.v = -a.v;
    return r;
  } else {
    return detail::lanewise([](T x) { return T(-x); }, a);
  }
}

}  // namespace fusor
