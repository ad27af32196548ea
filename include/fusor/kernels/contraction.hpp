#pragma once
/// @file kernels/contraction.hpp
/// The contraction kernel family: a tiled GEMM whose operand loads evaluate
/// a prologue and whose stores evaluate an epilogue, used for matmul, linear,
/// gemm and (implicit GEMM) conv2d. Written once as FUSOR_HOST_DEVICE code:
/// the CUDA kernel and the host twin run the same tile algorithm.
///
/// A problem P describes one (batched) GEMM C[b](M x N) = A[b](M x K) B[b](K x N):
///   - `batches, M, N, K`;
///   - `prepare(b, i)`: per-row statistics of A (the LayerNorm prologue);
///     block-cooperative on the device;
///   - `a(b, i, k, stats)`, `bmat(b, k, j)`: operand elements, computed by
///     evaluating the operand's elementwise tree (prologue) at the element's
///     index; for conv2d the implicit-GEMM index map, 0 in the padding;
///   - `store(b, i, j, acc)`: rounds the accumulator to the contraction's
///     result type and evaluates the epilogue tree (bias, activation,
///     residual, batch norm, ... written by the user) at the output index:
///     the epilogue is CUTLASS's epilogue visitor tree, built by binding
///     (exec/contraction.hpp) from the matched expression; its operands are
///     bound by the views they name, not by position.
///
/// Tile algorithm (block of gemm_threads threads): for each K tile of BK,
/// every thread loads its share of the BM x BK A tile and the BK x BN B tile
/// into shared memory (phase 1), then accumulates its TM x TN micro-tile
/// with k ascending (phase 2). The host twin runs the phases for every
/// "thread" in turn, so each output element sees the same sequence of
/// multiply-adds as on the device (nvcc may contract them to FMA: host and
/// device agree to rounding, host fused and host unfused bitwise).
/// Accumulation is in fp32 for half/bf16/fp32 operands, fp64 for fp64. All
/// index arithmetic is 64-bit.
#include <fusor/kernels/reduction.hpp>

namespace fusor::kernels {

/// Accumulator type for operand compute type T.
template <class T>
using accum_t = cuda::std::conditional_t<cuda::std::is_same_v<T, double>, double, float>;

/// Tile shape of the GEMM kernel.
inline constexpr int gemm_bm = 64, gemm_bn = 64, gemm_bk = 16, gemm_tm = 4, gemm_tn = 4;
/// Threads per block (= (BM / TM) * (BN / TN)).
inline constexpr int gemm_threads = (gemm_bm / gemm_tm) * (gemm_bn / gemm_tn);
static_assert(gemm_threads == reduce_block, "the LayerNorm prologue reuses the row-reduction block size");

/// Leaf of an epilogue tree: the contraction's value at the output index,
/// appended as the last loaded value.
struct k_acc {
  template <class V>
  FUSOR_HOST_DEVICE auto eval(const V& vals) const {
    return cuda::std::get<cuda::std::tuple_size<V>::value - 1>(vals);
  }
};

/// An elementwise tree over its sources and the contraction's value, at an
/// index of rank R (the epilogue, or a depthwise conv's BN/activation inside
/// the pointwise conv's prologue).
template <int R, class Sources, class Tree>
struct k_epilogue {
  Sources sources;
  Tree tree;
  template <class Acc>
  FUSOR_HOST_DEVICE auto at(const index_array<R>& idx, Acc acc) const {
    auto vals = cuda::std::apply(
        [&](const auto&... s) {
          return cuda::std::make_tuple(to_compute(s.data[dot<R>(idx, s.stride)])..., acc);
        },
        sources);
    return tree.eval(vals);
  }
};

/// No per-row statistics (every prologue but LayerNorm/RMSNorm).
struct no_stats {};

/// An A/B operand that is an elementwise tree at a rank-R index (k_operand).
template <class Op>
struct plain_operand {
  Op op;
  using stats = no_stats;
  template <class F>
  FUSOR_HOST_DEVICE stats prepare(const F&, index_t) const { return {}; }
  template <int R>
  FUSOR_HOST_DEVICE auto at(const index_array<R>& idx, const stats&) const { return op.at(idx); }
};

/// An A operand that is layer_norm (Rms = false) or rms_norm (true) over its
/// last dim of an elementwise tree: the row statistics are computed per tile
/// row (row_norm_stats, the standalone norm kernel's code), then each loaded
/// element is normalized, rounded to the norm's result type Out.
template <bool Rms, class Out, class X, class G, class B>
struct norm_operand {
  X x;
  G gamma;
  B beta;
  float eps;
  bool has_gamma, has_beta;
  using T = decltype(x.at(index_array<X::rank>{}));
  using stats = norm_stats<T>;
  /// `row_value(k)` reads element k of the row, `len` elements.
  template <class F>
  FUSOR_HOST_DEVICE stats prepare(const F& row_value, index_t len) const {
    return row_norm_stats<Rms, T>(row_value, len, eps);
  }
  template <int R>
  FUSOR_HOST_DEVICE auto at(const index_array<R>& idx, const stats& s) const {
    const T y = apply_norm<Rms>(T(x.at(idx)), s, T(gamma.at(idx)), Rms ? T(0) : T(beta.at(idx)), has_gamma, has_beta);
    return to_compute(from_compute<Out>(y));
  }
};

/// matmul / linear / gemm as one batched GEMM. Output rank RO; NB leading
/// batch dims (broadcast over A's and B's batch dims), then NM = RO - NB - 1
/// dims flattened into M (linear's leading dims), then N. A is read at a
/// rank-RO index [batch..., m..., k] ([k, m] when trans_a); B at a rank
/// NB + 2 index [batch..., k, j] ([batch..., j, k] when trans_b: linear's W).
template <int RO, int NB, class A, class B, class Ep, class Sink>
struct gemm_problem {
  static constexpr int NM = RO - NB - 1;
  static_assert(NM >= 1);
  A a_op;
  B b_op;
  Ep ep;
  Sink sink;
  index_array<RO> out_extent;  ///< [batch..., m..., n]
  index_t batches = 1, M = 0, N = 0, K = 0;
  bool trans_a = false, trans_b = false;
  using stats = typename A::stats;
  using T = accum_t<decltype(a_op.template at<RO>(index_array<RO>{}, stats{}))>;

  FUSOR_HOST_DEVICE void batch_index(index_t b, index_array<RO>& idx) const {
    for (int d = NB - 1; d >= 0; --d) {
      idx[d] = b % out_extent[d];
      b /= out_extent[d];
    }
  }
  FUSOR_HOST_DEVICE void row_index(index_t i, index_array<RO>& idx) const {
    for (int d = NB + NM - 1; d >= NB; --d) {
      idx[d] = i % out_extent[d];
      i /= out_extent[d];
    }
  }
  FUSOR_HOST_DEVICE index_array<RO> a_index(index_t b, index_t i, index_t k) const {
    index_array<RO> idx{};
    batch_index(b, idx);
    row_index(i, idx);
    idx[RO - 1] = k;
    if (trans_a) {
      idx[RO - 1] = idx[RO - 2];
      idx[RO - 2] = k;
    }
    return idx;
  }
  FUSOR_HOST_DEVICE stats prepare(index_t b, index_t i) const {
    if constexpr (cuda::std::is_same_v<stats, no_stats>) {
      return {};
    } else {
      const auto value = [&](index_t k) { return a_op.x.at(a_index(b, i, k)); };
      return a_op.prepare(value, K);
    }
  }
  FUSOR_HOST_DEVICE T a(index_t b, index_t i, index_t k, const stats& s) const {
    return T(a_op.template at<RO>(a_index(b, i, k), s));
  }
  FUSOR_HOST_DEVICE T bmat(index_t b, index_t k, index_t j) const {
    index_array<NB + 2> idx{};
    for (int d = NB - 1; d >= 0; --d) {
      idx[d] = b % out_extent[d];
      b /= out_extent[d];
    }
    idx[NB] = trans_b ? j : k;
    idx[NB + 1] = trans_b ? k : j;
    return T(b_op.template at<NB + 2>(idx, no_stats{}));
  }
  template <class Acc>
  FUSOR_HOST_DEVICE void store(index_t b, index_t i, index_t j, Acc acc) const {
    index_array<RO> idx{};
    batch_index(b, idx);
    row_index(i, idx);
    idx[RO - 1] = j;
    sink.data[dot<RO>(idx, sink.stride)] = from_compute<typename Sink::value_type>(ep.at(idx, acc));
  }
};

/// conv2d as implicit GEMM, one GEMM per group (batch = group):
/// M = N * Ho * Wo, GEMM-N = Cout / groups, K = (C / groups) * kh * kw.
/// A(i = (n, oh, ow), k = (c, r, s)) = x[n, g * Cg + c, oh * sh - pt + r * dh,
/// ow * sw - pl + s * dw] (0 in the padding: the prologue is NOT applied to
/// padding, as in the unfused conv of a materialized prologue);
/// B(k, j) = w[g * Cog + j, c, r, s].
template <class A, class B, class Ep, class Sink>
struct conv_problem {
  A a_op;
  B b_op;
  Ep ep;
  Sink sink;
  index_t n = 0, c = 0, h = 0, w = 0, cout = 0, kh = 0, kw = 0, ho = 0, wo = 0;
  index_t stride[2] = {1, 1}, pad[2] = {0, 0}, dilation[2] = {1, 1}, groups = 1;
  bool nhwc = false;
  index_t batches = 1, M = 0, N = 0, K = 0;
  using stats = no_stats;
  using T = accum_t<decltype(a_op.template at<4>(index_array<4>{}, stats{}))>;

  FUSOR_HOST_DEVICE stats prepare(index_t, index_t) const { return {}; }
  FUSOR_HOST_DEVICE index_array<4> x_index(index_t nn, index_t ch, index_t ih, index_t iw) const {
    return nhwc ? index_array<4>{nn, ih, iw, ch} : index_array<4>{nn, ch, ih, iw};
  }
  FUSOR_HOST_DEVICE T a(index_t g, index_t i, index_t k, const stats& st) const {
    const index_t ow = i % wo, oh = (i / wo) % ho, nn = i / (wo * ho);
    const index_t s = k % kw, r = (k / kw) % kh, cc = k / (kw * kh);
    const index_t ih = oh * stride[0] - pad[0] + r * dilation[0];
    const index_t iw = ow * stride[1] - pad[1] + s * dilation[1];
    if (ih < 0 || ih >= h || iw < 0 || iw >= w) return T(0);
    return T(a_op.template at<4>(x_index(nn, g * (c / groups) + cc, ih, iw), st));
  }
  FUSOR_HOST_DEVICE T bmat(index_t g, index_t k, index_t j) const {
    const index_t s = k % kw, r = (k / kw) % kh, cc = k / (kw * kh);
    return T(b_op.template at<4>(index_array<4>{g * N + j, cc, r, s}, no_stats{}));
  }
  FUSOR_HOST_DEVICE index_array<4> out_index(index_t g, index_t i, index_t j) const {
    const index_t ow = i % wo, oh = (i / wo) % ho, nn = i / (wo * ho);
    const index_t co = g * N + j;
    return nhwc ? index_array<4>{nn, oh, ow, co} : index_array<4>{nn, co, oh, ow};
  }
  template <class Acc>
  FUSOR_HOST_DEVICE void store(index_t g, index_t i, index_t j, Acc acc) const {
    const auto idx = out_index(g, i, j);
    sink.data[dot<4>(idx, sink.stride)] = from_compute<typename Sink::value_type>(ep.at(idx, acc));
  }
  /// The whole convolution at one output index (direct summation, k
  /// ascending): how a fused consumer reads a depthwise conv kept on chip.
  FUSOR_HOST_DEVICE T direct(const index_array<4>& out_idx) const {
    const index_t co = nhwc ? out_idx[3] : out_idx[1];
    const index_t oh = nhwc ? out_idx[1] : out_idx[2], ow = nhwc ? out_idx[2] : out_idx[3];
    const index_t g = co / N, j = co % N, i = (out_idx[0] * ho + oh) * wo + ow;
    T acc = T(0);
    for (index_t k = 0; k < K; ++k) acc += a(g, i, k, no_stats{}) * bmat(g, k, j);
    return acc;
  }
};

/// An operand whose value is a convolution computed at the read index and
/// then an elementwise epilogue (BN, ReLU6): the depthwise conv inside the
/// pointwise conv's prologue (MobileNet), never written to memory.
template <class Conv, class Ep, class Out>
struct conv_operand {
  Conv conv;
  Ep ep;
  using stats = no_stats;
  template <class F>
  FUSOR_HOST_DEVICE stats prepare(const F&, index_t) const { return {}; }
  template <int R>
  FUSOR_HOST_DEVICE auto at(const index_array<R>& idx, const stats&) const {
    static_assert(R == 4);
    const auto v = to_compute(from_compute<Out>(conv.direct(idx)));
    return to_compute(from_compute<Out>(ep.at(idx, v)));
  }
};

/// The tile algorithm (see the file comment), shared by the CUDA kernel and
/// the host twin.
template <class P>
struct gemm_kernel {
  using T = typename P::T;
  using stats = typename P::stats;
  P p;
  index_t tiles_m = 0, tiles_n = 0;

  FUSOR_HOST_DEVICE index_t tiles() const { return p.batches * tiles_m * tiles_n; }

  struct tile_id {
    index_t b, i0, j0;
  };
  FUSOR_HOST_DEVICE tile_id locate(index_t t) const {
    const index_t tn = t % tiles_n, tm = (t / tiles_n) % tiles_m, b = t / (tiles_n * tiles_m);
    return {b, tm * gemm_bm, tn * gemm_bn};
  }

  /// Phase 1 for thread `tid`: its share of the A and B tiles at k0.
  FUSOR_HOST_DEVICE void load(T* as, T* bs, const stats* st, const tile_id& t, index_t k0, int tid) const {
    for (int e = tid; e < gemm_bm * gemm_bk; e += gemm_threads) {
      const int kk = e / gemm_bm, ii = e % gemm_bm;
      const index_t i = t.i0 + ii, k = k0 + kk;
      as[kk * gemm_bm + ii] = (i < p.M && k < p.K) ? p.a(t.b, i, k, st[ii]) : T(0);
    }
    for (int e = tid; e < gemm_bk * gemm_bn; e += gemm_threads) {
      const int kk = e / gemm_bn, jj = e % gemm_bn;
      const index_t j = t.j0 + jj, k = k0 + kk;
      bs[kk * gemm_bn + jj] = (j < p.N && k < p.K) ? p.bmat(t.b, k, j) : T(0);
    }
  }

  /// Phase 2 for thread `tid`: its TM x TN micro-tile over one K tile.
  FUSOR_HOST_DEVICE void multiply(const T* as, const T* bs, T (&c)[gemm_tm][gemm_tn], int tid) const {
    const int row = (tid / (gemm_bn / gemm_tn)) * gemm_tm, col = (tid % (gemm_bn / gemm_tn)) * gemm_tn;
    FUSOR_UNROLL
    for (int kk = 0; kk < gemm_bk; ++kk) {
      T av[gemm_tm], bv[gemm_tn];
      FUSOR_UNROLL
      for (int m = 0; m < gemm_tm; ++m) av[m] = as[kk * gemm_bm + row + m];
      FUSOR_UNROLL
      for (int n = 0; n < gemm_tn; ++n) bv[n] = bs[kk * gemm_bn + col + n];
      FUSOR_UNROLL
      for (int m = 0; m < gemm_tm; ++m) {
        FUSOR_UNROLL
        for (int n = 0; n < gemm_tn; ++n) c[m][n] += av[m] * bv[n];
      }
    }
  }

  /// Phase 3 for thread `tid`: the epilogue of its micro-tile.
  FUSOR_HOST_DEVICE void store(const T (&c)[gemm_tm][gemm_tn], const tile_id& t, int tid) const {
    const int row = (tid / (gemm_bn / gemm_tn)) * gemm_tm, col = (tid % (gemm_bn / gemm_tn)) * gemm_tn;
    for (int m = 0; m < gemm_tm; ++m) {
      const index_t i = t.i0 + row + m;
      if (i >= p.M) break;
      for (int n = 0; n < gemm_tn; ++n) {
        const index_t j = t.j0 + col + n;
        if (j < p.N) p.store(t.b, i, j, c[m][n]);
      }
    }
  }

  /// The host twin of one block: every phase for all threads in turn.
  void run_tile_host(index_t tile) const {
    const tile_id t = locate(tile);
    T as[gemm_bk * gemm_bm], bs[gemm_bk * gemm_bn];
    stats st[gemm_bm];
    for (int r = 0; r < gemm_bm; ++r)
      if (t.i0 + r < p.M) st[r] = p.prepare(t.b, t.i0 + r);
    T c[gemm_threads][gemm_tm][gemm_tn] = {};
    for (index_t k0 = 0; k0 < p.K; k0 += gemm_bk) {
      for (int tid = 0; tid < gemm_threads; ++tid) load(as, bs, st, t, k0, tid);
      for (int tid = 0; tid < gemm_threads; ++tid) multiply(as, bs, c[tid], tid);
    }
    for (int tid = 0; tid < gemm_threads; ++tid) store(c[tid], t, tid);
  }

#if defined(__CUDA_ARCH__)
  /// One block's tile on the device.
  __device__ void run_tile_device(index_t tile) const {
    __shared__ T as[gemm_bk * gemm_bm], bs[gemm_bk * gemm_bn];
    __shared__ stats st[gemm_bm];
    const tile_id t = locate(tile);
    const int tid = int(threadIdx.x);
    if constexpr (!cuda::std::is_same_v<stats, no_stats>) {
      // Block-cooperative row statistics (every thread takes part in each).
      for (int r = 0; r < gemm_bm && t.i0 + r < p.M; ++r) {
        const stats s = p.prepare(t.b, t.i0 + r);
        if (tid == 0) st[r] = s;
      }
      __syncthreads();
    }
    T c[gemm_tm][gemm_tn] = {};
    for (index_t k0 = 0; k0 < p.K; k0 += gemm_bk) {
      load(as, bs, st, t, k0, tid);
      __syncthreads();
      multiply(as, bs, c, tid);
      __syncthreads();
    }
    store(c, t, tid);
  }
#endif
};

}  // namespace fusor::kernels
