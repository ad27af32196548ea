#pragma once
/// @file kernels/parts/conv_runs.hpp
/// Host-only pieces of conv_problem (kernels/parts/gemm_problems.hpp) that
/// work on runs of output pixels instead of one element at a time:
///  - conv_direct_run: conv_problem::direct for up to conv_run_max
///    consecutive output columns of one output row. Each output gets the
///    same terms in the same order as direct() (k as channel, kernel row,
///    kernel column; a tap in the padding adds 0 * w), so the same bits;
///    only the loops are swapped (taps outside, the run's outputs inside),
///    which lets the compiler put the run's outputs in SIMD lanes.
///  - conv_direct_row: one output row of a standalone direct conv
///    (depthwise: the per-group GEMM is one or two columns wide), replacing
///    the device twin's one element per step (gemm_kernel::direct_at).
///  - conv_pack_a: the implicit-GEMM rows of A for the host GEMM engine
///    (exec/host_gemm.hpp), without an integer division per element; when A
///    is a conv_operand (MobileNet: the depthwise conv inside a pointwise
///    conv's prologue) and the outer conv is a plain 1x1, A's columns are
///    filled a pixel run at a time with conv_direct_run.
/// The device keeps the per-element algorithms; tests compare these with
/// the device twin (host_gemm_engine::device_twin) bit for bit.
#include <fusor/kernels/parts/gemm_problems.hpp>

#include <algorithm>

namespace fusor::kernels {

/// Output columns per run: one run's accumulators live on the stack.
inline constexpr index_t conv_run_max = 64;

/// Is P a conv_problem?
template <class P>
inline constexpr bool is_conv_problem_v = false;
template <class A, class B, class Ep, class Sink>
inline constexpr bool is_conv_problem_v<conv_problem<A, B, Ep, Sink>> = true;

/// Is Op a conv_operand (a convolution read inside another conv's A)?
template <class Op>
inline constexpr bool is_conv_operand_v = false;
template <class Conv, class Ep, class Out, class Storage>
inline constexpr bool is_conv_operand_v<conv_operand<Conv, Ep, Out, Storage>> = true;

namespace conv_run_detail {
/// floor(a / b) for b > 0 and any sign of a.
inline index_t floor_div(index_t a, index_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
}  // namespace conv_run_detail

/// acc[t] = conv.direct(the output at batch nn, channel co, row oh, column
/// ow0 + t) for t < n (n <= conv_run_max), bitwise.
template <class P>
void conv_direct_run(const P& conv, index_t nn, index_t co, index_t oh, index_t ow0, index_t n,
                     typename P::T* acc) {
  using T = typename P::T;
  using A = std::remove_cvref_t<decltype(conv.a_op)>;
  const index_t g = co / conv.N, j = co % conv.N, cpg = conv.c / conv.groups, sw = conv.stride[1];
  for (index_t t = 0; t < n; ++t) acc[t] = T(0);
  for (index_t cc = 0; cc < cpg; ++cc) {
    const index_t ch = g * cpg + cc;
    for (index_t r = 0; r < conv.kh; ++r) {
      const index_t ih = oh * conv.stride[0] - conv.pad[0] + r * conv.dilation[0];
      const bool row_inside = ih >= 0 && ih < conv.h;
      for (index_t s = 0; s < conv.kw; ++s) {
        const T wv = T(conv.b_op.template at<4>(index_array<4>{g * conv.N + j, cc, r, s}, no_stats{}));
        // Input column of output t: (ow0 + t) * sw + off, inside [0, w)
        // exactly for t in [lo, hi).
        const index_t off = s * conv.dilation[1] - conv.pad[1];
        index_t lo = n, hi = n;
        if (row_inside) {
          lo = std::clamp<index_t>(-conv_run_detail::floor_div(off, sw) - ow0, 0, n);
          hi = std::clamp<index_t>(conv_run_detail::floor_div(conv.w - 1 - off, sw) + 1 - ow0, lo, n);
        }
        const T padding_term = T(0) * wv;  // direct()'s term for a tap in the padding
        for (index_t t = 0; t < lo; ++t) acc[t] += padding_term;
        if constexpr (is_single_view_operand_v<T, A>) {
          if (lo < hi) {  // (else no pointer into the input is formed)
            const auto& src = fusor::get<0>(conv.a_op.op.sources);
            const index_t xs = src.stride[conv.nhwc ? 2 : 3], step = sw * xs;
            const T* const x = src.data + dot<4>(conv.x_index(nn, ch, ih, (ow0 + lo) * sw + off), src.stride);
            if (step == 1) {
              for (index_t t = lo; t < hi; ++t) acc[t] += x[t - lo] * wv;
            } else {
              for (index_t t = lo; t < hi; ++t) acc[t] += x[(t - lo) * step] * wv;
            }
          }
        } else {
          for (index_t t = lo; t < hi; ++t)
            acc[t] += T(conv.a_op.template at<4>(conv.x_index(nn, ch, ih, (ow0 + t) * sw + off), no_stats{})) * wv;
        }
        for (index_t t = hi; t < n; ++t) acc[t] += padding_term;
      }
    }
  }
}

/// Output rows of a direct conv: batches (conv groups) x N (channels per
/// group) x n x ho rows of wo outputs each.
template <class P>
index_t conv_direct_row_count(const P& p) {
  return p.batches * p.N * p.n * p.ho;
}

/// Computes and stores output row `row` (< conv_direct_row_count(p)) of a
/// direct conv: what gemm_kernel::direct_at stores for its elements, bitwise.
template <class P>
void conv_direct_row(const P& p, index_t row) {
  using T = typename P::T;
  const index_t oh = row % p.ho, nn = (row / p.ho) % p.n, j = (row / (p.ho * p.n)) % p.N,
                g = row / (p.ho * p.n * p.N);
  const index_t co = g * p.N + j;
  T acc[conv_run_max];
  for (index_t ow0 = 0; ow0 < p.wo; ow0 += conv_run_max) {
    const index_t len = std::min(conv_run_max, p.wo - ow0);
    conv_direct_run(p, nn, co, oh, ow0, len, acc);
    // What p.store(g, i, j, acc) stores, with the output index stepped
    // along the row instead of divided out of i per element, the epilogue on
    // packs where the host has them (kernels/parts/host_epilogue.hpp).
    index_array<4> idx = p.nhwc ? index_array<4>{nn, oh, ow0, co} : index_array<4>{nn, co, oh, ow0};
    constexpr int ow_dim_nchw = 3, ow_dim_nhwc = 2;
    const int d = p.nhwc ? ow_dim_nhwc : ow_dim_nchw;
    index_t t = 0;
#if FUSOR_HOST_PACKETS
    t = p.nhwc ? store_epilogue_packs<host_pack_lanes, ow_dim_nhwc, 4>(p.ep, p.sink, idx, acc, len)
               : store_epilogue_packs<host_pack_lanes, ow_dim_nchw, 4>(p.ep, p.sink, idx, acc, len);
#endif
    using Out = typename std::remove_cvref_t<decltype(p.sink)>::value_type;
    for (; t < len; ++t) {
      idx[d] = ow0 + t;
      p.sink.data[dot<4>(idx, p.sink.stride)] = from_compute<Out>(p.ep.at(idx, acc[t]));
    }
  }
}

/// Host GEMM engine: rows i0 .. i0 + rows - 1 of conv p's A for conv group
/// g into dst (row-major, K per row), equal to p.a(g, i, k) for each.
template <class P>
  requires is_conv_problem_v<P>
void conv_pack_a(const P& p, index_t g, index_t i0, index_t rows, typename P::T* dst) {
  using T = typename P::T;
  using A = std::remove_cvref_t<decltype(p.a_op)>;
  if constexpr (is_conv_operand_v<A>) {
    // A plain 1x1 conv (no stride, padding or groups) over a conv computed
    // at the read index: A's column k is channel k of the inner conv's
    // output at the row's pixel, so the inner conv runs along pixel runs.
    if (p.kh == 1 && p.kw == 1 && p.stride[0] == 1 && p.stride[1] == 1 && p.pad[0] == 0 && p.pad[1] == 0 &&
        p.groups == 1 && p.ho == p.h && p.wo == p.w && p.a_op.conv.nhwc == p.nhwc) {
      using CT = typename std::remove_cvref_t<decltype(p.a_op.conv)>::T;
      CT acc[conv_run_max];
      for (index_t r = 0; r < rows;) {
        const index_t i = i0 + r, ow = i % p.wo, oh = (i / p.wo) % p.ho, nn = i / (p.wo * p.ho);
        const index_t len = std::min({conv_run_max, p.wo - ow, rows - r});
        for (index_t cc = 0; cc < p.K; ++cc) {
          conv_direct_run(p.a_op.conv, nn, cc, oh, ow, len, acc);
          for (index_t t = 0; t < len; ++t)
            dst[(r + t) * p.K + cc] = T(p.a_op.finish(p.x_index(nn, cc, oh, ow + t), acc[t]));
        }
        r += len;
      }
      return;
    }
  }
  index_t ow = i0 % p.wo, oh = (i0 / p.wo) % p.ho, nn = i0 / (p.wo * p.ho);
  const index_t cpg = p.c / p.groups;
  for (index_t r = 0; r < rows; ++r) {
    T* out = dst + r * p.K;
    for (index_t cc = 0; cc < cpg; ++cc)
      for (index_t y = 0; y < p.kh; ++y) {
        const index_t ih = oh * p.stride[0] - p.pad[0] + y * p.dilation[0];
        for (index_t x = 0; x < p.kw; ++x) {
          const index_t iw = ow * p.stride[1] - p.pad[1] + x * p.dilation[1];
          *out++ = (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w)
                       ? T(0)
                       : T(p.a_op.template at<4>(p.x_index(nn, g * cpg + cc, ih, iw), no_stats{}));
        }
      }
    if (++ow == p.wo) {
      ow = 0;
      if (++oh == p.ho) {
        oh = 0;
        ++nn;
      }
    }
  }
}

}  // namespace fusor::kernels
