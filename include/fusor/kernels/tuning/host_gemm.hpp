#pragma once
/// @file kernels/tuning/host_gemm.hpp
/// Block sizes of the host GEMM engine (exec/host_gemm.hpp: OpenBLAS per
/// output block under fusor's packed prologue and in-cache epilogue). Keyed
/// by the device model of the host (kernels/tuning/model.hpp's key is the
/// GPU's; the host executor plans for models::generic_cpu, plan/policy.hpp).
#include <fusor/core/shape.hpp>
#include <fusor/kernels/tuning/model.hpp>

#include <cstddef>

namespace fusor::kernels {

/// Output block of one engine call, the matrix-vector cut-off and the packed
/// prologue's memory per thread.
struct host_gemm_tuning {
  index_t mc;                ///< rows of one output block
  index_t nc;                ///< columns of one engine call
  index_t gemv_max_rows;     ///< problems with at most this many rows take a GEMV per row
  std::size_t pack_bytes;    ///< bytes of packed A per thread at most
};

/// Primary: 256 x 512 f32 accumulators = 512 KiB, inside a 1 MiB L2 per core
/// (so the epilogue reads the block while it is in cache: issue 17's "CPU
/// analogue of a GEMM epilogue"); M <= 4 rows take sgemv per row
/// (bench_contraction's M = 1 case: the engine's GEMM pads small M, GEMV does
/// not); 32 MiB of packed A per thread bounds the prologue's temporary.
template <class Model>
struct host_gemm_tuning_for {
  static constexpr host_gemm_tuning value{256, 512, 4, std::size_t(32) << 20};
};

/// The values the host GEMM engine uses (keyed by the host's model).
inline constexpr host_gemm_tuning host_gemm_tile = host_gemm_tuning_for<models::generic_cpu>::value;

}  // namespace fusor::kernels
