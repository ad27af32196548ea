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
#include <fusor/kernels/parts/concat_problem.hpp>
#include <fusor/kernels/parts/conv_runs.hpp>
#include <fusor/kernels/parts/gemm_problems.hpp>
#include <fusor/kernels/tuning/contraction.hpp>

#if defined(__CUDACC__)
#include <mma.h>
#endif

namespace fusor::kernels {

// Tile shape (gemm_bm, gemm_bn, gemm_bk, gemm_tm, gemm_tn, gemm_threads,
// gemm_tc_bk): kernels/tuning/contraction.hpp.
static_assert(gemm_threads == reduce_block, "the LayerNorm prologue reuses the row-reduction block size");

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
