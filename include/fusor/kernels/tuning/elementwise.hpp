#pragma once
/// @file kernels/tuning/elementwise.hpp
/// Launch shape of the one-output-per-thread kernels: the elementwise family
/// (exec/cuda_backend.hpp) and the index-mapping row kernels that write one
/// output per thread (pad, concat, resize, gather, one_hot, conv_transpose2d,
/// pooling: exec/row_binding.hpp, exec/gather.hpp, exec/pooling.hpp).
/// Keyed by the device model (kernels/tuning/model.hpp).
#include <fusor/core/shape.hpp>
#include <fusor/kernels/tuning/model.hpp>

namespace fusor::kernels {

/// Threads per block and the grid's size limits of a grid-stride kernel.
struct elementwise_tuning {
  int block_threads;    ///< threads per block
  int blocks_per_sm;    ///< elementwise grid: at most this many blocks per SM (then grid-stride)
  index_t max_blocks;   ///< one-output-per-thread grids: at most this many blocks
};

/// Primary: 256 threads per block, the size NVIDIA's CUDA C++ Best Practices
/// Guide ("Thread and Block Heuristics") recommends starting from (a multiple
/// of 32 between 128 and 256; 8 such blocks fill the 2,048 threads of a
/// Hopper or Ampere SM). 32 blocks per SM at most: 4x the resident blocks, so
/// a grid-stride loop keeps every SM busy through the tail without relaunch
/// overhead (the "grid-stride loop" pattern of NVIDIA's developer blog, 2013).
/// 2^20 blocks: far above any resident count, below the 2^31 - 1 grid limit.
/// Not measured on a GPU yet (docs/status.md, "What has run on a GPU").
template <class Model>
struct elementwise_tuning_for {
  static constexpr elementwise_tuning value{256, 32, index_t(1) << 20};
};

/// The values the kernels of this program use.
inline constexpr elementwise_tuning elementwise_tile = elementwise_tuning_for<tuned_model>::value;
/// Threads per block of the elementwise and one-output-per-thread kernels.
inline constexpr int elementwise_threads = elementwise_tile.block_threads;

/// Blocks of a grid-stride launch over `work` items, one per thread, on a
/// device with `sms` SMs (0 = no per-SM cap): at most max_blocks.
constexpr index_t grid_stride_blocks(index_t work, index_t sms = 0) {
  index_t blocks = (work + elementwise_threads - 1) / elementwise_threads;
  if (sms > 0 && blocks > sms * elementwise_tile.blocks_per_sm) blocks = sms * elementwise_tile.blocks_per_sm;
  return blocks < elementwise_tile.max_blocks ? blocks : elementwise_tile.max_blocks;
}

}  // namespace fusor::kernels
