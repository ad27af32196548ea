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
///     block-cooperative on the device; `shares_stats(b, i, prev)`: row i
///     normalizes over the same elements as row prev (a norm over more than
///     A's last dim), so its statistics are prev's;
///   - `a(b, i, k, stats)`, `bmat(b, k, j)`: operand elements, computed by
///     evaluating the operand's elementwise tree (prologue) at the element's
///     index; for conv2d the implicit-GEMM index map, 0 in the padding;
///   - `store(b, i, j, acc)`: rounds the accumulator to the contraction's
///     result type and evaluates the epilogue tree (bias, activation,
///     residual, batch norm, ... written by the user) at the output index:
///     the epilogue is CUTLASS's epilogue visitor tree, built by binding
///     (exec/contraction.hpp) from the matched expression; its operands are
///     bound by the views they name, not by position;
///   - `mma_type`: __half or __nv_bfloat16 when both operands' dtypes (the
///     views, or the result type of the prologue) are that 16-bit type, void
///     otherwise: selects the tensor-core tile path on the device (below).
///
/// Tile algorithm (block of gemm_threads threads): for each K tile of BK,
/// every thread loads its share of the BM x BK A tile and the BK x BN B tile
/// into shared memory (phase 1), then accumulates its TM x TN micro-tile
/// with k ascending (phase 2). The host twin runs the phases for every
/// "thread" in turn, so each output element sees the same sequence of
/// multiply-adds as on the device (nvcc may contract them to FMA: host and
/// device agree to rounding, host fused and host unfused bitwise).
/// Accumulation is in fp32 for half/bf16/fp32 operands, fp64 for fp64. All
/// index arithmetic is 64-bit (a thread's position inside its 64 x 64 tile,
/// < 256, is a 32-bit int).
///
/// Tensor cores (device only, compile-time choice: P::mma_type is __half on
/// sm_70+ or __nv_bfloat16 on sm_80+): the same 64 x 64 tile and load phase
/// with BK = gemm_tc_bk (32), the loaded operand values rounded to the 16-bit
/// operand dtype in shared memory (exact for a plain view; a prologue's fp32
/// value is rounded once, as if it had been materialized in that dtype), then
/// WMMA m16n16k16 with fp32 accumulators (8 warps, each 16 x 32 of the
/// tile), the accumulators stored to a shared fp32 tile, and the same
/// epilogue `p.store` per element. The host twin stays the SIMT algorithm:
/// on this path the order (and internal rounding) of the products' sum
/// within a K tile is the tensor core's, not k ascending, so host and device
/// agree to rounding (fp32 accumulation of 16-bit products), not bitwise.
#include <fusor/kernels/parts/mma.hpp>
#include <fusor/kernels/parts/norm_stats.hpp>
#include <fusor/kernels/parts/rows.hpp>

#if defined(__CUDACC__)
#include <mma.h>
#endif

namespace fusor::kernels {

/// Tile shape of the GEMM kernel.
inline constexpr int gemm_bm = 64, gemm_bn = 64, gemm_bk = 16, gemm_tm = 4, gemm_tn = 4;
/// Threads per block (= (BM / TM) * (BN / TN)).
inline constexpr int gemm_threads = (gemm_bm / gemm_tm) * (gemm_bn / gemm_tn);
static_assert(gemm_threads == reduce_block, "the LayerNorm prologue reuses the row-reduction block size");
/// K tile of the tensor-core path (two m16n16k16 steps per shared-memory fill).
inline constexpr int gemm_tc_bk = 32;

/// Leaf of an epilogue tree: the contraction's value at the output index,
/// appended as the last loaded value.
struct k_acc {
  template <class V>
  FUSOR_HOST_DEVICE auto eval(const V& vals) const {
    return fusor::get<fusor::tuple_size_v<V> - 1>(vals);
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
    auto vals = fusor::apply(
        [&](const auto&... s) {
          return fusor::make_tuple(to_compute(s.data[dot<R>(idx, s.stride)])..., acc);
        },
        sources);
    return tree.eval(vals);
  }
};

/// No per-row statistics (every prologue but LayerNorm/RMSNorm).
struct no_stats {};

/// An A/B operand that is an elementwise tree at a rank-R index (k_operand);
/// Storage is the tree's result dtype (void: unknown).
template <class Op, class Storage = void>
struct plain_operand {
  Op op;
  using stats = no_stats;
  using storage = Storage;
  template <class F>
  FUSOR_HOST_DEVICE stats prepare(const F&, index_t) const { return {}; }
  template <int R>
  FUSOR_HOST_DEVICE auto at(const index_array<R>& idx, const stats&) const { return op.at(idx); }
};

/// An A operand that is layer_norm (Rms = false) or rms_norm (true) over its
/// last dim of an elementwise tree: the row statistics are computed per tile
/// row (row_norm_stats, the standalone norm kernel's code), then each loaded
/// element is normalized, rounded to the norm's result type Out.
template <bool Rms, class Out, class X, class G, class B, class Storage = Out>
struct norm_operand {
  X x;
  G gamma;
  B beta;
  float eps;
  bool has_gamma, has_beta;
  using T = row_compute_t<decltype(x.at(index_array<X::rank>{})), true>;
  using stats = norm_stats<T>;
  using storage = Storage;
  /// `row_value(k)` reads element k of the row, `len` elements.
  template <class F>
  FUSOR_HOST_DEVICE stats prepare(const F& row_value, index_t len) const {
#if defined(__CUDA_ARCH__)
    return row_norm_stats<Rms, T>(row_value, len, eps, reduce_block);  // the GEMM block works on one row at a time
#else
    // the standalone norm kernel's lane count: on the host the fused
    // LayerNorm -> GEMM normalizes bitwise like the unfused norm kernel
    return row_norm_stats<Rms, T>(row_value, len, eps, row_lanes_for(len));
#endif
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
/// A norm prologue normalizes over A's dims norm_first..RO-1 (in the rank-RO
/// index; A's last dim only: norm_first = RO - 1), norm_len elements of
/// extents norm_extent[norm_first..RO-1] (A's own extents: 1 on a broadcast
/// batch dim); never with trans_a (the binder normalizes into a temporary).
template <int RO, int NB, class A, class B, class Ep, class Sink>
struct gemm_problem {
  static constexpr int NM = RO - NB - 1;  // 0: linear of a rank-1 x [K] (one row, M = 1)
  static_assert(NM >= 0);
  A a_op;
  B b_op;
  Ep ep;
  Sink sink;
  index_array<RO> out_extent;  ///< [batch..., m..., n]
  index_t batches = 1, M = 0, N = 0, K = 0;
  bool trans_a = false, trans_b = false;
  int norm_first = RO - 1;
  index_array<RO> norm_extent{};
  index_t norm_len = 0;
  using stats = typename A::stats;
  using T = accum_t<decltype(a_op.template at<RO>(index_array<RO>{}, stats{}))>;
  using mma_type = mma_operand_t<typename A::storage, typename B::storage>;
  /// Tensor-core path layouts: A is loaded k-fastest (row-major A, the
  /// common case, reads consecutive addresses); B k-fastest when trans_b.
  static constexpr bool a_k_fastest = true;
  FUSOR_HOST_DEVICE bool b_k_fastest() const { return trans_b; }
  FUSOR_HOST_DEVICE bool out_m_fastest() const { return false; }

  // (The outermost dim takes the rest of the flat index: no division; the
  // callers pass b < batches and i < M.)
  FUSOR_HOST_DEVICE void batch_index(index_t b, index_array<RO>& idx) const {
    if constexpr (NB > 0) {
      for (int d = NB - 1; d > 0; --d) {
        idx[d] = b % out_extent[d];
        b /= out_extent[d];
      }
      idx[0] = b;
    }
  }
  FUSOR_HOST_DEVICE void row_index(index_t i, index_array<RO>& idx) const {
    if constexpr (NM > 0) {
      for (int d = NB + NM - 1; d > NB; --d) {
        idx[d] = i % out_extent[d];
        i /= out_extent[d];
      }
      idx[NB] = i;
    } else {
      (void)i;  // no M dims: the only row is i == 0
      (void)idx;
    }
  }
  FUSOR_HOST_DEVICE index_array<RO> a_index(index_t b, index_t i, index_t k) const {
    index_array<RO> idx{};
    batch_index(b, idx);
    row_index(i, idx);
    idx[RO - 1] = k;
    if constexpr (RO >= 2) {  // trans_a: gemm only (rank 2)
      if (trans_a) {
        idx[RO - 1] = idx[RO - 2];
        idx[RO - 2] = k;
      }
    }
    return idx;
  }
  FUSOR_HOST_DEVICE stats prepare(index_t b, index_t i) const {
    if constexpr (cuda::std::is_same_v<stats, no_stats>) {
      return {};
    } else {
      const index_array<RO> base = a_index(b, i, 0);
      const int first = norm_first;
      const auto value = [&](index_t t) {
        index_array<RO> idx = base;
        if (first == RO - 1) {
          idx[RO - 1] = t;
        } else {
          for (int d = RO - 1; d >= first; --d) {
            idx[d] = t % norm_extent[d];
            t /= norm_extent[d];
          }
        }
        return a_op.x.at(idx);
      };
      return a_op.prepare(value, norm_len);
    }
  }
  /// Rows i and prev normalize over the same elements (same stats).
  FUSOR_HOST_DEVICE bool shares_stats(index_t b, index_t i, index_t prev) const {
    if (norm_first >= RO - 1) return false;
    const index_array<RO> x = a_index(b, i, 0), y = a_index(b, prev, 0);
    for (int d = 0; d < norm_first; ++d)
      if (x[d] != y[d]) return false;
    return true;
  }
  FUSOR_HOST_DEVICE T a(index_t b, index_t i, index_t k, const stats& s) const {
    return T(a_op.template at<RO>(a_index(b, i, k), s));
  }
  FUSOR_HOST_DEVICE T bmat(index_t b, index_t k, index_t j) const {
    index_array<NB + 2> idx{};
    if constexpr (NB > 0) {
      for (int d = NB - 1; d > 0; --d) {
        idx[d] = b % out_extent[d];
        b /= out_extent[d];
      }
      idx[0] = b;
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
  using mma_type = mma_operand_t<typename A::storage, typename B::storage>;
  /// Tensor-core path layouts: A is loaded i-fastest (consecutive output
  /// columns read consecutive input columns in NCHW), B k-fastest (OIHW
  /// weights are contiguous in k); NCHW outputs are stored i-fastest.
  static constexpr bool a_k_fastest = false;
  FUSOR_HOST_DEVICE bool b_k_fastest() const { return true; }
  FUSOR_HOST_DEVICE bool out_m_fastest() const { return !nhwc; }

  FUSOR_HOST_DEVICE stats prepare(index_t, index_t) const { return {}; }
  FUSOR_HOST_DEVICE bool shares_stats(index_t, index_t, index_t) const { return false; }
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
template <class Conv, class Ep, class Out, class Storage = Out>
struct conv_operand {
  Conv conv;
  Ep ep;
  using stats = no_stats;
  using storage = Storage;
  template <class F>
  FUSOR_HOST_DEVICE stats prepare(const F&, index_t) const { return {}; }
  template <int R>
  FUSOR_HOST_DEVICE auto at(const index_array<R>& idx, const stats&) const {
    static_assert(R == 4);
    const auto v = to_compute(from_compute<Out>(conv.direct(idx)));
    return to_compute(from_compute<Out>(ep.at(idx, v)));
  }
};

/// P::mma_type, or void for a problem without one.
template <class P, class = void>
struct problem_mma {
  using type = void;
};
template <class P>
struct problem_mma<P, cuda::std::void_t<typename P::mma_type>> {
  using type = typename P::mma_type;
};

/// Three GEMMs sharing A (the Q, K, V projections of attention) as one GEMM
/// with N = N0 + N1 + N2: B columns and stores dispatch on j's range, so A
/// is read once per tile and every output gets its own epilogue.
template <class P0, class P1, class P2>
struct concat_n_problem {
  P0 p0;
  P1 p1;
  P2 p2;
  index_t batches = 1, M = 0, N = 0, K = 0;
  using stats = typename P0::stats;
  using T = typename P0::T;
  /// Tensor cores when all three problems have the same 16-bit operands.
  using mma_type = cuda::std::conditional_t<cuda::std::is_same_v<typename P0::mma_type, typename P1::mma_type> &&
                                                cuda::std::is_same_v<typename P0::mma_type, typename P2::mma_type>,
                                            typename P0::mma_type, void>;
  static constexpr bool a_k_fastest = P0::a_k_fastest;
  FUSOR_HOST_DEVICE bool b_k_fastest() const { return p0.b_k_fastest() && p1.b_k_fastest() && p2.b_k_fastest(); }
  FUSOR_HOST_DEVICE bool out_m_fastest() const { return false; }
  FUSOR_HOST_DEVICE stats prepare(index_t b, index_t i) const { return p0.prepare(b, i); }
  FUSOR_HOST_DEVICE bool shares_stats(index_t b, index_t i, index_t prev) const { return p0.shares_stats(b, i, prev); }
  FUSOR_HOST_DEVICE T a(index_t b, index_t i, index_t k, const stats& s) const { return p0.a(b, i, k, s); }
  FUSOR_HOST_DEVICE T bmat(index_t b, index_t k, index_t j) const {
    if (j < p0.N) return T(p0.bmat(b, k, j));
    if (j < p0.N + p1.N) return T(p1.bmat(b, k, j - p0.N));
    return T(p2.bmat(b, k, j - p0.N - p1.N));
  }
  template <class Acc>
  FUSOR_HOST_DEVICE void store(index_t b, index_t i, index_t j, Acc acc) const {
    if (j < p0.N) p0.store(b, i, j, acc);
    else if (j < p0.N + p1.N) p1.store(b, i, j - p0.N, acc);
    else p2.store(b, i, j - p0.N - p1.N, acc);
  }
};

/// The tile algorithm (see the file comment), shared by the CUDA kernel and
/// the host twin.
template <class P>
struct gemm_kernel {
  using T = typename P::T;
  using stats = typename P::stats;
  /// The 16-bit operand type of the tensor-core path, or void (SIMT only).
  using mma_type = typename problem_mma<P>::type;
  static constexpr bool tensor_cores = !cuda::std::is_void_v<mma_type> && cuda::std::is_same_v<T, float>;
  P p;
  index_t tiles_m = 0, tiles_n = 0;
  /// Direct mode (chosen per launch, one kernel entry either way): one
  /// output element per thread step, its K products summed in ascending k
  /// like the tiles (the same multiply-adds in the same order: the same bits
  /// on the host), for convs whose per-group GEMM is too thin for 64-column
  /// tiles (depthwise: GEMM-N = channel multiplier). Steps walk M (output
  /// pixels) first, so NCHW stores are contiguous.
  bool direct = false;

  FUSOR_HOST_DEVICE index_t tiles() const { return p.batches * tiles_m * tiles_n; }
  FUSOR_HOST_DEVICE index_t direct_size() const { return p.batches * p.M * p.N; }
  FUSOR_HOST_DEVICE void direct_at(index_t e) const {
    const index_t i = e % p.M, j = (e / p.M) % p.N, g = e / (p.M * p.N);
    T acc = T(0);
    for (index_t k = 0; k < p.K; ++k) acc += p.a(g, i, k, stats{}) * p.bmat(g, k, j);
    p.store(g, i, j, acc);
  }

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
    for (int r = 0; r < gemm_bm && t.i0 + r < p.M; ++r)
      st[r] = (r > 0 && p.shares_stats(t.b, t.i0 + r, t.i0 + r - 1)) ? st[r - 1] : p.prepare(t.b, t.i0 + r);
    T c[gemm_threads][gemm_tm][gemm_tn] = {};
    for (index_t k0 = 0; k0 < p.K; k0 += gemm_bk) {
      for (int tid = 0; tid < gemm_threads; ++tid) load(as, bs, st, t, k0, tid);
      for (int tid = 0; tid < gemm_threads; ++tid) multiply(as, bs, c[tid], tid);
    }
    for (int tid = 0; tid < gemm_threads; ++tid) store(c[tid], t, tid);
  }

#if defined(__CUDA_ARCH__)
  /// Block-cooperative row statistics of the tile's rows into st (every
  /// thread takes part in each row; rows sharing a norm group copy).
  __device__ void prepare_rows(stats* st, const tile_id& t, int tid) const {
    if constexpr (!cuda::std::is_same_v<stats, no_stats>) {
      for (int r = 0; r < gemm_bm && t.i0 + r < p.M; ++r) {
        if (r > 0 && p.shares_stats(t.b, t.i0 + r, t.i0 + r - 1)) {
          if (tid == 0) st[r] = st[r - 1];
        } else {
          const stats s = p.prepare(t.b, t.i0 + r);
          if (tid == 0) st[r] = s;
        }
      }
      __syncthreads();
    }
  }

  /// One block's tile on the device: tensor cores when P's operands are
  /// 16-bit and the architecture has them (half: sm_70, bf16: sm_80), the
  /// SIMT algorithm of the host twin otherwise.
  __device__ void run_tile_device(index_t tile) const {
    constexpr bool tc = tensor_cores && arch_has_mma<mma_type>();
    if constexpr (tc) {
#if __CUDA_ARCH__ >= 700
      run_tile_device_tc(tile);
#endif
    } else {
      run_tile_device_simt(tile);
    }
  }

  /// The SIMT tile (the host twin's algorithm).
  __device__ void run_tile_device_simt(index_t tile) const {
    __shared__ T as[gemm_bk * gemm_bm], bs[gemm_bk * gemm_bn];
    __shared__ stats st[gemm_bm];
    const tile_id t = locate(tile);
    const int tid = int(threadIdx.x);
    prepare_rows(st, t, tid);
    T c[gemm_tm][gemm_tn] = {};
    for (index_t k0 = 0; k0 < p.K; k0 += gemm_bk) {
      load(as, bs, st, t, k0, tid);
      __syncthreads();
      multiply(as, bs, c, tid);
      __syncthreads();
    }
    store(c, t, tid);
  }

#if __CUDA_ARCH__ >= 700
  // Tensor-core tile: shared-memory layouts (elements). A: k-fastest
  // row-major [BM][BK + 8] (P::a_k_fastest) or col-major [BK][BM + 8]; B:
  // k-fastest col-major [BN][BK + 8] (p.b_k_fastest()) or row-major
  // [BK][BN + 8]; the padding keeps WMMA's 32-byte alignment and spreads
  // rows over banks. C: fp32 row-major [BM][BN + 4], aliasing A and B.
  static constexpr int tc_lda_k = gemm_tc_bk + 8, tc_lda_m = gemm_bm + 8;
  static constexpr int tc_ldb_k = gemm_tc_bk + 8, tc_ldb_n = gemm_bn + 8;
  static constexpr int tc_ldc = gemm_bn + 4;
  static constexpr int tc_a_elems = gemm_bm * tc_lda_k > gemm_tc_bk * tc_lda_m ? gemm_bm * tc_lda_k : gemm_tc_bk * tc_lda_m;
  static constexpr int tc_b_elems = gemm_bn * tc_ldb_k > gemm_tc_bk * tc_ldb_n ? gemm_bn * tc_ldb_k : gemm_tc_bk * tc_ldb_n;
  static constexpr int tc_ab_bytes = (tc_a_elems + tc_b_elems) * 2;
  static constexpr int tc_c_bytes = gemm_bm * tc_ldc * 4;
  static constexpr int tc_smem_bytes = tc_ab_bytes > tc_c_bytes ? tc_ab_bytes : tc_c_bytes;
  static_assert(tc_a_elems * 2 % 32 == 0, "B's tile must start 32-byte aligned (WMMA)");

  /// Loads the A and B tiles at k0 (rounded to S = mma_type) in the layouts
  /// above; BKF: B k-fastest.
  template <bool BKF, class S>
  __device__ void load_tc(S* as, S* bs, const stats* st, const tile_id& t, index_t k0, int tid) const {
    constexpr int BK = gemm_tc_bk;
    for (int e = tid; e < gemm_bm * BK; e += gemm_threads) {
      int ii, kk;
      if constexpr (P::a_k_fastest) {
        ii = e / BK;
        kk = e % BK;
      } else {
        kk = e / gemm_bm;
        ii = e % gemm_bm;
      }
      const index_t i = t.i0 + ii, k = k0 + kk;
      const S v = from_compute<S>((i < p.M && k < p.K) ? p.a(t.b, i, k, st[ii]) : T(0));
      if constexpr (P::a_k_fastest) as[ii * tc_lda_k + kk] = v;
      else as[kk * tc_lda_m + ii] = v;
    }
    for (int e = tid; e < BK * gemm_bn; e += gemm_threads) {
      int jj, kk;
      if constexpr (BKF) {
        jj = e / BK;
        kk = e % BK;
      } else {
        kk = e / gemm_bn;
        jj = e % gemm_bn;
      }
      const index_t j = t.j0 + jj, k = k0 + kk;
      const S v = from_compute<S>((j < p.N && k < p.K) ? p.bmat(t.b, k, j) : T(0));
      if constexpr (BKF) bs[jj * tc_ldb_k + kk] = v;
      else bs[kk * tc_ldb_n + jj] = v;
    }
  }

  /// The K loop of the tensor-core tile: warp w accumulates rows
  /// 16 * (w / 2) .. + 15, columns 32 * (w % 2) .. + 31 (two fragments).
  template <bool BKF, class S, class Acc>
  __device__ void mainloop_tc(S* as, S* bs, const stats* st, const tile_id& t, int tid, Acc (&acc)[2]) const {
    namespace wmma = nvcuda::wmma;
    using a_layout = cuda::std::conditional_t<P::a_k_fastest, wmma::row_major, wmma::col_major>;
    using b_layout = cuda::std::conditional_t<BKF, wmma::col_major, wmma::row_major>;
    const int warp = tid / 32, wr = (warp / 2) * 16, wc = (warp % 2) * 32;
    for (index_t k0 = 0; k0 < p.K; k0 += gemm_tc_bk) {
      load_tc<BKF>(as, bs, st, t, k0, tid);
      __syncthreads();
      FUSOR_UNROLL
      for (int kk = 0; kk < gemm_tc_bk; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, S, a_layout> fa;
        if constexpr (P::a_k_fastest) wmma::load_matrix_sync(fa, as + wr * tc_lda_k + kk, tc_lda_k);
        else wmma::load_matrix_sync(fa, as + kk * tc_lda_m + wr, tc_lda_m);
        FUSOR_UNROLL
        for (int n = 0; n < 2; ++n) {
          wmma::fragment<wmma::matrix_b, 16, 16, 16, S, b_layout> fb;
          const int col = wc + 16 * n;
          if constexpr (BKF) wmma::load_matrix_sync(fb, bs + col * tc_ldb_k + kk, tc_ldb_k);
          else wmma::load_matrix_sync(fb, bs + kk * tc_ldb_n + col, tc_ldb_n);
          wmma::mma_sync(acc[n], fa, fb, acc[n]);
        }
      }
      __syncthreads();
    }
  }

  /// One block's tile on tensor cores (see the file comment).
  __device__ void run_tile_device_tc(index_t tile) const {
    namespace wmma = nvcuda::wmma;
    using S = mma_type;
    __shared__ alignas(128) unsigned char smem[tc_smem_bytes];
    __shared__ stats st[gemm_bm];
    S* const as = reinterpret_cast<S*>(smem);
    S* const bs = as + tc_a_elems;
    float* const cs = reinterpret_cast<float*>(smem);  // after the K loop
    const tile_id t = locate(tile);
    const int tid = int(threadIdx.x);
    prepare_rows(st, t, tid);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
    wmma::fill_fragment(acc[0], 0.0f);
    wmma::fill_fragment(acc[1], 0.0f);
    if (p.b_k_fastest()) mainloop_tc<true>(as, bs, st, t, tid, acc);
    else mainloop_tc<false>(as, bs, st, t, tid, acc);
    // (the K loop ends with __syncthreads: A and B are no longer read)
    const int warp = tid / 32, wr = (warp / 2) * 16, wc = (warp % 2) * 32;
    wmma::store_matrix_sync(cs + wr * tc_ldc + wc, acc[0], tc_ldc, wmma::mem_row_major);
    wmma::store_matrix_sync(cs + wr * tc_ldc + wc + 16, acc[1], tc_ldc, wmma::mem_row_major);
    __syncthreads();
    // The epilogue, one element per thread per step, consecutive threads on
    // consecutive output addresses (j for row-major GEMM and NHWC outputs,
    // i for NCHW).
    const bool m_fastest = p.out_m_fastest();
    for (int e = tid; e < gemm_bm * gemm_bn; e += gemm_threads) {
      const int ii = m_fastest ? e % gemm_bm : e / gemm_bn, jj = m_fastest ? e / gemm_bm : e % gemm_bn;
      const index_t i = t.i0 + ii, j = t.j0 + jj;
      if (i < p.M && j < p.N) p.store(t.b, i, j, cs[ii * tc_ldc + jj]);
    }
  }
#endif
#endif
};

}  // namespace fusor::kernels
