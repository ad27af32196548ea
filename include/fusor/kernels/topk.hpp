#pragma once
/// @file kernels/topk.hpp
/// The topk row kernel (ops/topk.hpp): one lane walks a row k times, each
/// time picking the first element, in ONNX's total order, that comes after
/// the previous pick; so no buffer of k elements is kept (any k, any row
/// length) and host and device pick the same elements (comparisons only).
#include <fusor/kernels/parts/rows.hpp>
#include <fusor/ops/topk.hpp>

#include <cuda/std/cmath>
#include <cuda/std/type_traits>

namespace fusor::kernels {

/// topk over the reduced dim of row space `space`: output position j along
/// the axis gets the j-th element (Indices: its int64 index).
template <int R, bool Indices, class X, class Out>
struct topk_rows {
  row_space<R> space;
  X x;
  Out out;
  index_t k = 1;
  bool largest = true;
  using T = row_compute_t<decltype(x.at(index_array<R>{})), false>;

  /// True when (a, ia) comes before (b, ib): by value (NaN above +inf),
  /// then by the lower index.
  FUSOR_HOST_DEVICE bool before(T a, index_t ia, T b, index_t ib) const {
    if constexpr (cuda::std::is_floating_point_v<T>) {
      const bool na = a != a, nb = b != b;
      if (na || nb) {
        if (na && nb) return ia < ib;
        return largest ? na : nb;
      }
    }
    if (a != b) return largest ? a > b : a < b;
    return ia < ib;
  }

  FUSOR_HOST_DEVICE void run_row(index_t r) const {
    if (row_lane(space.lanes > 0 ? space.lanes : 1) != 0) return;
    index_array<R> base{};
    space.set_row(r, base);
    const auto value = [&](index_t j) {
      index_array<R> idx = base;
      space.set_elem(j, idx);
      return static_cast<T>(x.at(idx));
    };
    T prev{};
    index_t prev_i = -1;
    for (index_t j = 0; j < k; ++j) {
      T best{};
      index_t best_i = -1;
      for (index_t i = 0; i < space.len; ++i) {
        const T v = value(i);
        if (prev_i >= 0 && !before(prev, prev_i, v, i)) continue;  // taken already
        if (best_i < 0 || before(v, i, best, best_i)) best = v, best_i = i;
      }
      index_array<R> at = base;
      space.set_elem(j, at);
      if constexpr (Indices) out.put(at, cuda::std::int64_t(best_i));
      else out.put(at, best);
      prev = best, prev_i = best_i;
    }
  }
};

}  // namespace fusor::kernels
