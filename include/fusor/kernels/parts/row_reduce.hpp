#pragma once
/// @file kernels/parts/row_reduce.hpp
/// The reduction of one row by its lanes: block_reduce_row, the one entry
/// every row kernel (and the LayerNorm -> GEMM prologue) reduces through.
/// Three implementations of one contract (the row's accumulator):
///  - device: each lane accumulates a strided share of the row
///    (lane_accumulate), then cub::WarpReduce / cub::BlockReduce merge;
///  - host twin (lanes = 32 or 256, the device's lane count): the same
///    lanes one after the other, then a pairwise tree: host tests check the
///    device algorithm's order (up to CUB's merge order);
///  - host packs (lanes = 0, set by the host executor; kernels/parts/host_rows.hpp):
///    W SIMD lanes accumulate elements l, l + W, ..., then a pairwise tree.
#include <fusor/kernels/parts/host_rows.hpp>

#if defined(__CUDACC__)
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>
#endif

namespace fusor::kernels {

/// Lane t of `lanes` accumulates the row's blocks of row_vec elements t,
/// t + lanes, ... (elements 4q .. 4q + 3 of block q, in order), then the
/// tail elements after the last full block: t, t + lanes, ... The order is
/// the same whether a block is one vector load (a row_reader whose vec()
/// holds: contiguous, aligned rows) or row_vec element loads, so aligned,
/// misaligned and strided rows give the same bits, on the host twin as on
/// the device (up to the merge order of the lanes, see block_reduce_row).
template <class Acc, class F>
FUSOR_HOST_DEVICE Acc lane_accumulate(const F& value, index_t len, index_t lane, index_t lanes) {
  Acc a = Acc::identity();
  const index_t nv = len / row_vec;
  bool vec = false;
  if constexpr (requires { value.vec(); }) vec = value.vec();
  for (index_t q = lane; q < nv; q += lanes) {
    decltype(value(0)) v[row_vec];
    if constexpr (requires { value.vec(); }) {
      if (vec) value.load(q * row_vec, v);
      else
        for (int k = 0; k < row_vec; ++k) v[k] = value(q * row_vec + k);
    } else {
      for (int k = 0; k < row_vec; ++k) v[k] = value(q * row_vec + k);
    }
    for (int k = 0; k < row_vec; ++k) a.push(v[k]);
  }
  for (index_t j = nv * row_vec + lane; j < len; j += lanes) a.push(value(j));
  return a;
}

// This thread's lane in its row and the lanes per row (`lanes` is 32: a
// warp per row, or reduce_block: the block); the host twin's one thread
// walks the whole row.
#if defined(__CUDA_ARCH__)
FUSOR_HOST_DEVICE index_t row_lane(int lanes) { return threadIdx.x % unsigned(lanes); }
FUSOR_HOST_DEVICE index_t row_lanes(int lanes) { return lanes; }
struct merge_fn {
  template <class A>
  __device__ A operator()(const A& a, const A& b) const { return A::merge(a, b); }
};
#else
inline index_t row_lane(int) { return 0; }
inline index_t row_lanes(int) { return 1; }
#endif

/// The whole row's accumulator, in every lane of the row (device: a warp
/// with cub::WarpReduce when lanes == warp_lanes, else the block with
/// cub::BlockReduce) or on the calling thread (host twin: `lanes` lane
/// accumulators, then a pairwise tree). `lanes` must be uniform in a block.
template <class Acc, class F>
FUSOR_HOST_DEVICE Acc block_reduce_row(const F& value, index_t len, int lanes = reduce_block) {
#if defined(__CUDA_ARCH__)
  if (lanes == warp_lanes) {
    using WR = cub::WarpReduce<Acc>;
    constexpr int warps = reduce_block / warp_lanes;
    __shared__ typename WR::TempStorage wtemp[warps];
    __shared__ Acc wtotal[warps];
    const int w = int(threadIdx.x) / warp_lanes, l = int(threadIdx.x) % warp_lanes;
    const Acc all = WR(wtemp[w]).Reduce(lane_accumulate<Acc>(value, len, l, warp_lanes), merge_fn{});
    if (l == 0) wtotal[w] = all;
    __syncwarp();
    const Acc out = wtotal[w];
    __syncwarp();  // wtemp and wtotal are reused by the next call
    return out;
  }
  using BR = cub::BlockReduce<Acc, reduce_block>;
  __shared__ typename BR::TempStorage temp;
  __shared__ Acc total;
  const Acc mine = lane_accumulate<Acc>(value, len, threadIdx.x, reduce_block);
  const Acc all = BR(temp).Reduce(mine, merge_fn{});
  if (threadIdx.x == 0) total = all;
  __syncthreads();
  const Acc out = total;
  __syncthreads();  // temp and total are reused by the next call
  return out;
#else
#  if FUSOR_HOST_PACKETS
  if (lanes == 0) return host_reduce_row<Acc>(value, len);
#  endif
  Acc part[reduce_block];
  const int n = len < lanes ? int(len > 0 ? len : 1) : lanes;
  for (int t = 0; t < n; ++t) part[t] = lane_accumulate<Acc>(value, len, t, lanes);
  for (int s = 1; s < n; s *= 2)
    for (int t = 0; t + s < n; t += 2 * s) part[t] = Acc::merge(part[t], part[t + s]);
  return part[0];
#endif
}

}  // namespace fusor::kernels
