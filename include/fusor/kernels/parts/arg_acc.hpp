#pragma once
/// @file kernels/parts/arg_acc.hpp
/// The accumulator of argmax / argmin and of max_pool2d's Indices output
/// (kernels/reduction.hpp's arg_rows, kernels/pooling.hpp's pool_windows).
#include <fusor/kernels/parts/rows.hpp>

namespace fusor::kernels {

/// The running answer of argmax (Max) / argmin over a row: the best value
/// seen and its element index (-1: none yet, the identity). Ties go to the
/// smaller index, or the larger with `last` (ONNX select_last_index); a NaN
/// beats every number (NumPy's argmax and argmin return the first NaN). The
/// result does not depend on the order of pushes and merges, so every lane
/// split (host, warp, block) gives the same index.
template <class T, bool Max>
struct arg_acc {
  T v;
  index_t i;
  bool last;
  FUSOR_HOST_DEVICE static arg_acc identity() { return {T(0), -1, false}; }
  FUSOR_HOST_DEVICE static arg_acc merge(const arg_acc& a, const arg_acc& b) {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    const bool an = !(a.v == a.v), bn = !(b.v == b.v);
    if (an != bn) return an ? a : b;
    if (!an && a.v != b.v) return (Max ? a.v > b.v : a.v < b.v) ? a : b;
    return (a.last ? a.i > b.i : a.i < b.i) ? a : b;
  }
  FUSOR_HOST_DEVICE void push(const arg_acc& x) { *this = merge(*this, x); }
};

}  // namespace fusor::kernels
