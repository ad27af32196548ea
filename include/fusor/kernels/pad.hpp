#pragma once
/// @file kernels/pad.hpp
/// The pad kernel (ops/pad.hpp): one output element per call (a CUDA
/// thread; an OpenMP iteration on the host), over the row family's operands
/// (kernels/parts/rows.hpp). Each dim maps its output index back to an input
/// index by the mode's rule; a constant pad outside the input stores the
/// value without reading.
#include <fusor/kernels/parts/rows.hpp>
#include <fusor/ops/pad.hpp>

namespace fusor::kernels {

/// The output's extents and, per dim, where the kept input starts (`lo`),
/// its extent (`kept`) and the padding before it (`before`).
template <int R>
struct pad_space {
  index_array<R> out_extent{};
  index_t outputs = 1;  ///< product of out_extent
  index_array<R> lo{}, kept{}, before{};
  pad_mode mode = pad_mode::constant;

  /// The kept-input index of position j (j = output index - before) along
  /// dim d, by the mode's rule when j is outside [0, kept); -1: the constant.
  FUSOR_HOST_DEVICE index_t source(int d, index_t j) const {
    const index_t n = kept[d];
    if (j >= 0 && j < n) return j;
    switch (mode) {
      case pad_mode::edge: return j < 0 ? 0 : n - 1;
      case pad_mode::wrap: {
        const index_t m = j % n;
        return m < 0 ? m + n : m;
      }
      case pad_mode::reflect: {
        if (n == 1) return 0;
        const index_t period = 2 * (n - 1);
        index_t m = j % period;
        if (m < 0) m += period;
        return m < n ? m : period - m;
      }
      default: return -1;  // constant
    }
  }
};

/// pad of operand x into T (x's dtype): each output element is x at the
/// mapped index, or `value` where a constant pad has no source.
template <int R, class T, class X, class Out>
struct pad_rows {
  pad_space<R> space;
  X x;
  Out out;  ///< addressed by output indices
  T value;

  FUSOR_HOST_DEVICE void run_output(index_t o) const {
    index_array<R> oi{};
    for (int d = R - 1; d >= 0; --d) {
      oi[d] = o % space.out_extent[d];
      o /= space.out_extent[d];
    }
    index_array<R> at{};
    for (int d = 0; d < R; ++d) {
      const index_t j = space.source(d, oi[d] - space.before[d]);
      if (j < 0) {
        out.put(oi, value);
        return;
      }
      at[d] = space.lo[d] + j;
    }
    out.put(oi, x.at(at));
  }
};

}  // namespace fusor::kernels
