#pragma once
/// @file kernels/pooling.hpp
/// The pooling kernels of the row-reduction family (ops/pooling.hpp):
/// max_pool2d, avg_pool2d and max_pool2d_indices as a reduction over each
/// output's window, the prologue evaluated at the window's input indices.
/// On the device one output per thread (pool_windows::run_output); on the
/// host an output row at a time (pool_windows::run_output_row).
#include <fusor/kernels/parts/arg_acc.hpp>
#include <fusor/kernels/parts/host_rows.hpp>
#include <fusor/kernels/parts/rows.hpp>

#include <cstring>

namespace fusor::kernels {

// ----------------------------------------------------------------- pooling
/// The window geometry of a 2-D pooling (ops/pooling.hpp) over a rank-R
/// input: the output's extents, the dims holding H and W (hd, hd + 1) and,
/// per spatial dim, the input extent, kernel, stride, dilation and padding.
template <int R>
struct pool_space {
  index_array<R> out_extent{};
  index_t outputs = 1;  ///< product of out_extent
  int hd = 2;
  index_t in[2]{}, kernel[2]{}, stride[2]{}, dilation[2]{}, pad_lo[2]{}, pad_hi[2]{};
  bool count_include_pad = false;
  index_array<R> in_extent{};  ///< the input's extents (max_pool2d_indices' flat index)
  bool column_major = false;   ///< max_pool2d_indices: H and W swapped in the flat index

  /// Row-major flat index of input index `at`.
  FUSOR_HOST_DEVICE index_t flat(const index_array<R>& at) const {
    index_t f = 0;
    for (int d = 0; d < R; ++d) f = f * in_extent[d] + at[d];
    return f;
  }
  /// Row-major flat index f in the order the indices output uses: itself,
  /// or with the H and W dims swapped (ONNX storage_order = 1).
  FUSOR_HOST_DEVICE index_t reported(index_t f) const {
    if (!column_major || f < 0) return f;
    const index_t w = f % in[1], h = (f / in[1]) % in[0], plane = f / (in[1] * in[0]);
    return (plane * in[1] + w) * in[0] + h;
  }

  /// Window positions along spatial dim d whose input index lies in [lo, hi).
  FUSOR_HOST_DEVICE index_t positions(int d, index_t first, index_t lo, index_t hi) const {
    index_t n = 0;
    for (index_t k = 0; k < kernel[d]; ++k) {
      const index_t i = first + k * dilation[d];
      n += (i >= lo && i < hi) ? 1 : 0;
    }
    return n;
  }
};

/// max_pool2d (Avg = false) / avg_pool2d (Avg = true): one output element
/// per call (a thread on the device). Its window's elements are the prologue
/// operand x evaluated at input indices, in row-major window order, padded
/// positions skipped (so the sum and max are those of the positions inside
/// x, exactly: no padding value enters the accumulator). avg divides the
/// sum by the count of positions inside x, or inside the padded input with
/// count_include_pad (ONNX AveragePool; 0 / 0 = NaN for a window wholly in
/// the padding, which PyTorch refuses and ONNX leaves undefined); max of
/// such a window is the accumulator's identity (-inf).
/// Indices (max only): the window's maximum as its flat index into x
/// (space.flat, ties to the first in window order, a NaN wins, -1 for no
/// position), reported in space's storage order.
template <int R, bool Avg, class X, class Out, bool Indices = false>
struct pool_windows {
  static constexpr int rank = R;
  pool_space<R> space;
  X x;
  Out out;  ///< addressed by output indices
  using T = row_compute_t<decltype(x.at(index_array<R>{})), Avg>;
  using Acc = cuda::std::conditional_t<Indices, arg_acc<T, true>, cuda::std::conditional_t<Avg, sum_acc<T>, max_acc<T>>>;

  FUSOR_HOST_DEVICE void run_output(index_t o) const {
    index_array<R> idx{};
    for (int d = R - 1; d >= 0; --d) {
      idx[d] = o % space.out_extent[d];
      o /= space.out_extent[d];
    }
    const int hd = space.hd, wd = space.hd + 1;
    const index_t h0 = idx[hd] * space.stride[0] - space.pad_lo[0];
    const index_t w0 = idx[wd] * space.stride[1] - space.pad_lo[1];
    index_array<R> at = idx;
    Acc a = Acc::identity();
    for (index_t kh = 0; kh < space.kernel[0]; ++kh) {
      const index_t ih = h0 + kh * space.dilation[0];
      if (ih < 0 || ih >= space.in[0]) continue;
      at[hd] = ih;
      for (index_t kw = 0; kw < space.kernel[1]; ++kw) {
        const index_t iw = w0 + kw * space.dilation[1];
        if (iw < 0 || iw >= space.in[1]) continue;
        at[wd] = iw;
        if constexpr (Indices) a.push(Acc{static_cast<T>(x.at(at)), space.flat(at), false});
        else a.push(static_cast<T>(x.at(at)));
      }
    }
    finish(idx, h0, w0, a);
  }

  /// Host: the outputs of one output row (idx: every index but the W dim's),
  /// each element of x evaluated once per window row into `rows` (space.kernel[0]
  /// rows of space.in[1] values, a thread's scratch) instead of once per
  /// window that holds it, then the window positions pushed position by
  /// position over the whole row of accumulators `acc` (space.out_extent of
  /// the W dim of them): every output's accumulator sees its positions in
  /// run_output's order, so the results are run_output's bit for bit, and the
  /// inner loop (one position, all outputs) has no loop-carried dependency.
  void run_output_row(index_array<R> idx, T* rows, Acc* acc) const {
    const int hd = space.hd, wd = space.hd + 1;
    const index_t h0 = idx[hd] * space.stride[0] - space.pad_lo[0];
    const index_t ow_n = space.out_extent[wd], W = space.in[1], sw = space.stride[1];
    // The input columns any window of the row reads.
    const index_t lo = space.pad_lo[1] > 0 ? index_t(0) : -space.pad_lo[1];
    const index_t reach = (ow_n - 1) * sw - space.pad_lo[1] + (space.kernel[1] - 1) * space.dilation[1] + 1;
    const index_t hi = reach < W ? reach : W;
    index_array<R> at = idx;
    for (index_t kh = 0; kh < space.kernel[0]; ++kh) {
      const index_t ih = h0 + kh * space.dilation[0];
      if (ih < 0 || ih >= space.in[0]) continue;
      at[hd] = ih;
      T* const row = rows + kh * W;
#if FUSOR_HOST_PACKETS
      constexpr int P = host_pack_lanes;  // (the row on SIMD packs: kernels/parts/host_rows.hpp)
      for (index_t iw = lo; iw < hi; iw += P) {
        const int n = hi - iw < P ? int(hi - iw) : P;
        at[wd] = iw;
        const auto p = to_lanes<T, P>(run_pack<P, R>(x, at, wd, n));
        if (n == P) {
          std::memcpy(row + iw, p.data(), sizeof(T) * P);
        } else {
          for (int l = 0; l < n; ++l) row[iw + l] = p.v[l];
        }
      }
#else
      for (index_t iw = lo; iw < hi; ++iw) {
        at[wd] = iw;
        row[iw] = static_cast<T>(x.at(at));
      }
#endif
    }
    for (index_t ow = 0; ow < ow_n; ++ow) acc[ow] = Acc::identity();
    for (index_t kh = 0; kh < space.kernel[0]; ++kh) {
      const index_t ih = h0 + kh * space.dilation[0];
      if (ih < 0 || ih >= space.in[0]) continue;
      const T* const row = rows + kh * W;
      at[hd] = ih;
      for (index_t kw = 0; kw < space.kernel[1]; ++kw) {
        // outputs whose position kw lands inside x: 0 <= ow * sw + off < W
        const index_t off = kw * space.dilation[1] - space.pad_lo[1];
        const index_t first = off >= 0 ? 0 : (-off + sw - 1) / sw;
        const index_t reached = W - off <= 0 ? 0 : (W - off + sw - 1) / sw;
        const index_t last = reached < ow_n ? reached : ow_n;
        for (index_t ow = first; ow < last; ++ow) {
          const index_t iw = ow * sw + off;
          if constexpr (Indices) {
            at[wd] = iw;
            acc[ow].push(Acc{row[iw], space.flat(at), false});
          } else {
            acc[ow].push(row[iw]);
          }
        }
      }
    }
    for (index_t ow = 0; ow < ow_n; ++ow) {
      idx[wd] = ow;
      finish(idx, h0, ow * sw - space.pad_lo[1], acc[ow]);
    }
  }

 private:
  FUSOR_HOST_DEVICE void finish(const index_array<R>& idx, index_t h0, index_t w0, const Acc& a) const {
    if constexpr (Avg) {
      const bool all = space.count_include_pad;
      const index_t n = space.positions(0, h0, all ? -space.pad_lo[0] : 0, space.in[0] + (all ? space.pad_hi[0] : 0)) *
                        space.positions(1, w0, all ? -space.pad_lo[1] : 0, space.in[1] + (all ? space.pad_hi[1] : 0));
      out.put(idx, math::div(a.v, T(n)));
    } else if constexpr (Indices) {
      out.put(idx, space.reported(a.i));
    } else {
      out.put(idx, a.v);
    }
  }
};

}  // namespace fusor::kernels
