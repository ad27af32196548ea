#pragma once
/// @file kernels/parts/mma.hpp
/// Tensor-core helpers shared by the GEMM and attention kernels: whether the
/// architecture being compiled has WMMA for a 16-bit operand type, the
/// accumulator type, the 16-bit operand type of a problem.
#include <fusor/core/dtype.hpp>

#include <cuda/std/type_traits>

namespace fusor::kernels {

#if defined(__CUDA_ARCH__)
/// True when the architecture being compiled has WMMA for 16-bit operand
/// type Mma (half: sm_70, bf16: sm_80). Shared by the GEMM and attention
/// kernels' choice between tensor cores and the SIMT algorithm.
template <class Mma>
__device__ constexpr bool arch_has_mma() {
#if __CUDA_ARCH__ >= 800
  return !cuda::std::is_void_v<Mma>;
#elif __CUDA_ARCH__ >= 700
  return cuda::std::is_same_v<Mma, __half>;
#else
  return false;
#endif
}
#endif

/// Accumulator type for operand compute type T.
template <class T>
using accum_t = cuda::std::conditional_t<cuda::std::is_same_v<T, double>, double, float>;

/// The 16-bit type both GEMM operands are stored in (tensor cores), or void.
template <class A, class B>
using mma_operand_t =
    cuda::std::conditional_t<cuda::std::is_same_v<A, B> &&
                                 (cuda::std::is_same_v<A, __half> || cuda::std::is_same_v<A, __nv_bfloat16>),
                             A, void>;

}  // namespace fusor::kernels
