#pragma once
/// @file kernels/tuning/rows.hpp
/// Block size, lanes per row and the split of long rows for the row family
/// (reductions, softmax, norms: kernels/reduction.hpp, kernels/parts/rows.hpp,
/// kernels/parts/row_reduce.hpp) and the norm prologue of the contraction
/// family. Keyed by the device model (kernels/tuning/model.hpp).
///
/// These values also fix the host twin's summation order (it accumulates in
/// as many lanes and splits rows the same way), so changing one changes the
/// rounding of reductions on both executors, never the IEEE behaviour.
#include <fusor/core/shape.hpp>
#include <fusor/kernels/tuning/model.hpp>

namespace fusor::kernels {

/// The row family's launch and split parameters.
struct row_tuning {
  int block_threads;       ///< threads per block, and lanes of a long row
  index_t warp_row_max;    ///< longest row one warp reduces
  index_t chunk_min;       ///< fewest elements in one chunk of a split row
  index_t target_blocks;   ///< blocks a split ReduceX aims for in all
  int finish_threads;      ///< threads per block of the split-row finalize
};

/// Largest power of two not above `n` (n >= 1).
constexpr index_t floor_pow2(index_t n) {
  index_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

/// Primary: 256 threads (8 warps; the block size of CUB's own DeviceReduce
/// policies for sm_50 and sm_60+, Policy500 / Policy600 in
/// cub/device/dispatch/tuning/tuning_reduce.cuh, and 8 resident blocks fill
/// a 2,048-thread SM). A row of at most 1,024 elements goes to one warp (32
/// elements per lane: fewer would leave lanes idle in the shuffle tree, more
/// would leave the other 7 warps of the block idle; 8 rows per block). A row
/// is split only into chunks of at least 2^14 elements (64 per thread, enough
/// to hide the latency of the partial's store and the finalize launch), for
/// about 8 resident blocks on each SM: the largest power of two not above
/// 8 x sm_count (1,024 for the 132 SMs of H100/H200; 512 for the 108 of
/// A100). A power of two so that, for the power-of-two row counts and
/// lengths of most models, the chunk count divides the row into equal,
/// vector-aligned chunks with no short tail. The finalize reads one
/// partial per chunk: 128 threads, as it is tiny.
/// Not measured on a GPU yet (docs/status.md, "What has run on a GPU").
template <class Model>
struct row_tuning_for {
  static constexpr row_tuning value{256, 1024, index_t(1) << 14,
                                    floor_pow2(index_t(8) * (Model::model.sm_count > 0 ? Model::model.sm_count : 1)), 128};
};

/// The values the kernels of this program use.
inline constexpr row_tuning row_tile = row_tuning_for<tuned_model>::value;

/// Threads per CUDA block of the row kernels, and lanes of a long row.
inline constexpr int reduce_block = row_tile.block_threads;
/// Lanes of a short row: one warp per row, 8 rows per block.
inline constexpr int warp_lanes = 32;
/// Longest row that one warp reduces (32 elements per lane at most).
inline constexpr index_t warp_row_max = row_tile.warp_row_max;
/// Fewest elements in one chunk of a split row.
inline constexpr index_t reduce_chunk_min = row_tile.chunk_min;
/// Blocks a split ReduceX aims for in all.
inline constexpr index_t reduce_target_blocks = row_tile.target_blocks;

/// Blocks per row of a ReduceX over `rows` rows of `len` elements: 1 (one
/// block per row) unless the rows are too few to fill a GPU and long enough
/// to split; then enough chunks of at least reduce_chunk_min elements (64 per
/// thread) for about reduce_target_blocks blocks in all, plus one finalize
/// launch. A pure function of the shape (the planner decides the split with
/// it: plan_guard::whole_rows): the host twin splits the same way,
/// so host tests check the split algorithm and its merge order.
FUSOR_HOST_DEVICE constexpr index_t row_chunks(index_t rows, index_t len) {
  if (rows <= 0 || rows >= reduce_target_blocks / 2 || len < 2 * reduce_chunk_min) return 1;
  const index_t by_len = len / reduce_chunk_min;
  const index_t by_fill = (reduce_target_blocks + rows - 1) / rows;
  return by_len < by_fill ? by_len : by_fill;
}
/// Elements per chunk when a row of `len` is split in `chunks`: rounded up to
/// a multiple of 64, so every chunk starts on a vector boundary (row_vec).
/// The last chunks may be short or empty.
FUSOR_HOST_DEVICE constexpr index_t row_chunk_len(index_t len, index_t chunks) {
  return ((len + chunks - 1) / chunks + 63) / 64 * 64;
}

static_assert(reduce_block % warp_lanes == 0 && reduce_block <= 1024, "row tuning: whole warps, at most 1024 threads");
static_assert(warp_row_max <= 32 * warp_lanes, "row tuning: a warp's row holds at most 32 elements per lane");

}  // namespace fusor::kernels
