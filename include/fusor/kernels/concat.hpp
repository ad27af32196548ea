#pragma once
/// @file kernels/concat.hpp
/// The concat kernel (ops/concat.hpp): one output element per call (a CUDA
/// thread; an OpenMP iteration on the host), over the row family's operands
/// (kernels/parts/rows.hpp), one per input.
#include <fusor/core/tuple.hpp>
#include <fusor/kernels/parts/rows.hpp>
#include <fusor/ops/concat.hpp>

#include <utility>

namespace fusor::kernels {

/// The output's extents and where each of the N inputs starts along the axis.
template <int R, int N>
struct concat_space {
  index_array<R> out_extent{};
  index_t outputs = 1;  ///< product of out_extent
  int axis = 0;
  index_t start[N + 1] = {};  ///< input k covers [start[k], start[k + 1]) along axis
};

/// concat of operands xs (a fusor::tuple of N row operands): output index i
/// along the axis reads input k with start[k] <= i < start[k + 1], at i - start[k].
template <int R, int N, class Xs, class Out>
struct concat_rows {
  concat_space<R, N> space;
  Xs xs;
  Out out;  ///< addressed by output indices

  FUSOR_HOST_DEVICE void run_output(index_t o) const {
    index_array<R> oi{};
    for (int d = R - 1; d >= 0; --d) {
      oi[d] = o % space.out_extent[d];
      o /= space.out_extent[d];
    }
    const index_t i = oi[space.axis];
    int k = 0;
    while (k + 1 < N && i >= space.start[k + 1]) ++k;  // N is small: a linear walk
    index_array<R> at = oi;
    at[space.axis] = i - space.start[k];
    put_from(k, oi, at, std::make_index_sequence<N>{});
  }

 private:
  template <std::size_t... K>
  FUSOR_HOST_DEVICE void put_from(int k, const index_array<R>& oi, const index_array<R>& at,
                                  std::index_sequence<K...>) const {
    (void)((int(K) == k ? (out.put(oi, fusor::get<K>(xs).at(at)), true) : false) || ...);
  }
};

}  // namespace fusor::kernels
