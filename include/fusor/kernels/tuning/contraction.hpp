#pragma once
/// @file kernels/tuning/contraction.hpp
/// Tile shape of the contraction family's GEMM kernel (kernels/contraction.hpp:
/// matmul, linear, gemm, implicit-GEMM conv2d). Keyed by the device model
/// (kernels/tuning/model.hpp).
#include <fusor/kernels/tuning/model.hpp>

namespace fusor::kernels {

/// Block tile BM x BN x BK, thread tile TM x TN, and the K tile of the
/// tensor-core (WMMA) path.
struct gemm_tuning {
  int bm, bn, bk, tm, tn;
  int tc_bk;
  /// Threads per block: (BM / TM) * (BN / TN).
  constexpr int threads() const { return (bm / tm) * (bn / tn); }
};

/// Primary: the classic SIMT tile of 64 x 64 outputs per block, 4 x 4 per
/// thread (256 threads; 16 accumulators per thread keep the register count
/// under 128 so two blocks fit an SM), K in steps of 16 (two 8 KB
/// shared-memory panels). It equals the row family's block so the
/// LayerNorm / RMSNorm prologue computes a row's statistics with the same
/// block (kernels/parts/gemm_problems.hpp). The tensor-core path takes K in
/// steps of 32: two m16n16k16 WMMA steps per shared-memory fill (CUDA C++
/// Programming Guide, "Warp Matrix Functions"). This is the tile of a
/// fallback: the GPU engines of issue 4 (CUTLASS / cuBLASLt mainloops) take
/// over the large shapes. Not measured on a GPU yet.
template <class Model>
struct gemm_tuning_for {
  static constexpr gemm_tuning value{64, 64, 16, 4, 4, 32};
};

/// The values the kernels of this program use.
inline constexpr gemm_tuning gemm_tile = gemm_tuning_for<tuned_model>::value;
/// Tile shape of the GEMM kernel.
inline constexpr int gemm_bm = gemm_tile.bm, gemm_bn = gemm_tile.bn, gemm_bk = gemm_tile.bk, gemm_tm = gemm_tile.tm,
                     gemm_tn = gemm_tile.tn;
/// Threads per block (= (BM / TM) * (BN / TN)).
inline constexpr int gemm_threads = gemm_tile.threads();
/// K tile of the tensor-core path.
inline constexpr int gemm_tc_bk = gemm_tile.tc_bk;

static_assert(gemm_bm % gemm_tm == 0 && gemm_bn % gemm_tn == 0, "gemm tuning: thread tiles divide the block tile");
static_assert(gemm_bm % 16 == 0 && gemm_bn % 16 == 0 && gemm_tc_bk % 16 == 0, "gemm tuning: WMMA works on 16 x 16 x 16 fragments");

}  // namespace fusor::kernels
