#pragma once
/// @file kernels/tuning/attention.hpp
/// Tile shape of the attention family's flash kernel (kernels/attention.hpp).
/// Keyed by the device model (kernels/tuning/model.hpp).
#include <fusor/kernels/tuning/model.hpp>

namespace fusor::kernels {

/// Query rows per block, threads per query row, keys per K/V tile and the
/// largest head dimension (registers and shared memory are sized by it).
struct attention_tuning {
  int rows, lanes, keys, max_dim;
  /// Threads per block.
  constexpr int threads() const { return rows * lanes; }
};

/// Primary: 64 query rows per block, as FlashAttention-2's forward kernel
/// uses for head dimensions up to 128 (Dao, "FlashAttention-2", 2023,
/// section 3.3: Br = 64 or 128); 4 threads per row (256 threads, each holding
/// 32 of the 128 output columns in registers); K/V tiles of 32 keys, so Q,
/// K, V and S fit in 43 KB of static shared memory (under the 48 KB static
/// limit) and two blocks fit an SM. A head dimension above 128 is an
/// `unsupported_error` from run's check (exec/attention.hpp). Not measured on a GPU yet.
template <class Model>
struct attention_tuning_for {
  static constexpr attention_tuning value{64, 4, 32, 128};
};

/// The values the kernels of this program use.
inline constexpr attention_tuning attention_tile = attention_tuning_for<tuned_model>::value;
/// Query rows per block, threads per row, keys per K/V tile, largest head_dim.
inline constexpr int attn_rows = attention_tile.rows, attn_lanes = attention_tile.lanes, attn_keys = attention_tile.keys,
                     attn_max_dim = attention_tile.max_dim;
/// Threads per block.
inline constexpr int attn_threads = attention_tile.threads();
/// Output columns each thread holds.
inline constexpr int attn_per_lane = attn_max_dim / attn_lanes;

static_assert(attn_max_dim % attn_lanes == 0 && attn_max_dim % 16 == 0 && attn_keys % 16 == 0,
              "attention tuning: whole columns per lane and 16 x 16 WMMA fragments");

}  // namespace fusor::kernels
