#pragma once
/// @file core/dtype.hpp
/// Element types fusor accepts and the precision it computes in.
///
/// | storage          | compute  | name  |
/// |------------------|----------|-------|
/// | float            | float    | f32   |
/// | double           | double   | f64   |
/// | __half           | float    | f16   |
/// | __nv_bfloat16    | float    | bf16  |
/// | int8_t           | int8_t   | i8    |
/// | uint8_t          | uint8_t  | u8    |
/// | int16_t          | int16_t  | i16   |
/// | uint16_t         | uint16_t | u16   |
/// | int32_t          | int32_t  | i32   |
/// | uint32_t         | uint32_t | u32   |
/// | int64_t          | int64_t  | i64   |
/// | uint64_t         | uint64_t | u64   |
/// | bool             | bool     | bool  |
///
/// 16-bit floats are widened to fp32 on load and rounded (nearest-even) on
/// store, so a fused chain rounds once where an fp16 framework rounds per op.
/// Integers compute in their own type, wrapping as ONNX's integer ops do
/// (math::add etc.), so a fused chain of 8-bit ops wraps where the unfused
/// one does.
#include <fusor/config.hpp>

#include <cuda/std/cstdint>
#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace fusor {

/// dtype_traits<T>: compute type, short name and size of a storage type T.
template <class T>
struct dtype_traits;  // undefined: T is not a fusor dtype

#define FUSOR_DTYPE(T, C, NAME, FLOATING)                       \
  template <>                                                   \
  struct dtype_traits<T> {                                      \
    using compute_type = C;                                     \
    static constexpr const char* name = NAME;                   \
    static constexpr bool is_floating = FLOATING;               \
  };
FUSOR_DTYPE(float, float, "f32", true)
FUSOR_DTYPE(double, double, "f64", true)
FUSOR_DTYPE(__half, float, "f16", true)
FUSOR_DTYPE(__nv_bfloat16, float, "bf16", true)
FUSOR_DTYPE(cuda::std::int8_t, cuda::std::int8_t, "i8", false)
FUSOR_DTYPE(cuda::std::uint8_t, cuda::std::uint8_t, "u8", false)
FUSOR_DTYPE(cuda::std::int16_t, cuda::std::int16_t, "i16", false)
FUSOR_DTYPE(cuda::std::uint16_t, cuda::std::uint16_t, "u16", false)
FUSOR_DTYPE(cuda::std::int32_t, cuda::std::int32_t, "i32", false)
FUSOR_DTYPE(cuda::std::uint32_t, cuda::std::uint32_t, "u32", false)
FUSOR_DTYPE(cuda::std::int64_t, cuda::std::int64_t, "i64", false)
FUSOR_DTYPE(cuda::std::uint64_t, cuda::std::uint64_t, "u64", false)
FUSOR_DTYPE(bool, bool, "bool", false)
#undef FUSOR_DTYPE

/// True for the storage types listed above (const-qualified or not).
template <class T>
concept dtype = requires { typename dtype_traits<cuda::std::remove_cv_t<T>>::compute_type; };

/// The type fusor computes in for storage type T.
template <class T>
using compute_t = typename dtype_traits<cuda::std::remove_cv_t<T>>::compute_type;

/// Widens a stored value to its compute type.
template <class T>
FUSOR_HOST_DEVICE compute_t<T> to_compute(T v) {
  using S = cuda::std::remove_cv_t<T>;
  if constexpr (cuda::std::is_same_v<S, __half>) return __half2float(v);
  else if constexpr (cuda::std::is_same_v<S, __nv_bfloat16>) return __bfloat162float(v);
  else return v;
}

/// Converts a computed value to storage type T (round to nearest even for
/// 16-bit floats; C++ conversion rules otherwise).
///
/// Floating values stored to integer types saturate and NaN becomes 0 (what
/// CUDA's cvt.rzi.sat does), so the host and the device agree and no
/// conversion is undefined behaviour. f64 values are rounded to 16-bit floats
/// once (not via f32).
template <class T, class C>
FUSOR_HOST_DEVICE T from_compute(C v) {
  if constexpr (cuda::std::is_same_v<T, __half>) {
    if constexpr (cuda::std::is_same_v<C, double>) return __double2half(v);
    else return __float2half_rn(static_cast<float>(v));
  } else if constexpr (cuda::std::is_same_v<T, __nv_bfloat16>) {
    if constexpr (cuda::std::is_same_v<C, double>) return __double2bfloat16(v);
    else return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (cuda::std::is_integral_v<T> && !cuda::std::is_same_v<T, bool> &&
                       cuda::std::is_floating_point_v<C>) {
    if (v != v) return T(0);
    constexpr C lo = C(cuda::std::numeric_limits<T>::min());
    constexpr C hi = C(cuda::std::numeric_limits<T>::max());  // may round up: compare with >=
    if (v <= lo) return cuda::std::numeric_limits<T>::min();
    if (v >= hi) return cuda::std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

/// Rank used to promote compute types of two tensor operands: bool < u8 <
/// i8 < u16 < i16 < u32 < i32 < u64 < i64 < f32 < f64 (NumPy-like, without
/// widening: mixing signed and unsigned of one width takes the signed type,
/// where NumPy would widen; ONNX's ops take one type anyway).
template <class C>
inline constexpr int promotion_rank =
    cuda::std::is_same_v<C, bool>                  ? 0
    : cuda::std::is_same_v<C, cuda::std::uint8_t>  ? 1
    : cuda::std::is_same_v<C, cuda::std::int8_t>   ? 2
    : cuda::std::is_same_v<C, cuda::std::uint16_t> ? 3
    : cuda::std::is_same_v<C, cuda::std::int16_t>  ? 4
    : cuda::std::is_same_v<C, cuda::std::uint32_t> ? 5
    : cuda::std::is_same_v<C, cuda::std::int32_t>  ? 6
    : cuda::std::is_same_v<C, cuda::std::uint64_t> ? 7
    : cuda::std::is_same_v<C, cuda::std::int64_t>  ? 8
    : cuda::std::is_same_v<C, float>               ? 9
                                                   : 10;

/// The common compute type of two tensor operands.
template <class A, class B>
using promote_t = cuda::std::conditional_t<(promotion_rank<A> >= promotion_rank<B>), A, B>;

}  // namespace fusor
