#pragma once
/// @file kernels/attention.hpp
/// The attention kernel family: FlashAttention-2 (Dao 2023) forward, written
/// once as FUSOR_HOST_DEVICE pieces.
///
/// A block owns attn_rows query rows of one (batch, head); each row is
/// handled by attn_lanes threads, lane l holding the head dims d with
/// d % attn_lanes == l of the query row and of the output accumulator. K/V
/// are streamed in tiles of attn_keys keys through shared memory. Per tile
/// and row: scores s_j = (q . k_j) * scale + mask (the dot summed per lane,
/// then across lanes as (l0 + l1) + (l2 + l3), a butterfly), -inf above
/// the diagonal when causal; then the online softmax update
///   m' = max(m, max_j s_j),  alpha = exp(m - m'),  p_j = exp(s_j - m'),
///   l' = l * alpha + sum_j p_j,  acc' = acc * alpha + sum_j p_j v_j,
/// and finally out = acc / l. While every score so far is -inf the row
/// stays (m = -inf, l = 0, acc = 0) instead of computing exp(-inf - -inf),
/// so a row masked in its first tiles is still exact later; a row masked
/// everywhere ends as 0 / 0 = NaN, as the unfused softmax gives (with no
/// keys at all, Sk = 0, the output is the empty sum 0, as unfused). NaN scores
/// propagate through max. Memory: O(tile), never [Sq, Sk].
///
/// The host twin runs the same steps for every row and lane of a block in
/// turn (the cross-lane sum in the same butterfly order), so host tests check
/// the device algorithm; nvcc may contract multiply-adds into FMA, so host
/// and device agree to rounding.
///
/// Tensor cores (device only, compile-time choice as for the GEMM in
/// kernels/contraction.hpp: q, k and v all stored as __half (sm_70+) or all
/// as __nv_bfloat16 (sm_80+), see attention_mma_t): the same block (64 query
/// rows, 256 threads, key tiles of 32, the same early stop of causal
/// blocks), with the Q tile (64 x D) and each K/V tile (32 x D) in shared
/// memory as the 16-bit type (exact for plain views; a prologue's fp32 value
/// is rounded once, as if materialized in that dtype) and head dims padded
/// with zeros to a multiple of 16 (80 is one; any d <= 128 works). Per tile:
/// S = Q K^T by WMMA m16n16k16 with fp32 accumulators (warp w: rows
/// 16 (w / 2), keys 16 (w % 2)) into a shared fp32 tile; then the SAME
/// per-row step as the SIMT path, `score` and `online_update` on the row's
/// fp32 scores (one thread per row), so scale, mask, causal, the -inf guards
/// and NaN propagation are identical; P is rounded to the 16-bit type for
/// the P V product, as FlashAttention-2 does (l sums the unrounded fp32 p);
/// then O = alpha O + P V by WMMA, O held in fp32 accumulator fragments
/// (warp w: rows 16 (w / 2), column blocks w % 2, w % 2 + 2, ...), alpha
/// applied per row through a fragment of row indices (loaded once from a
/// row-index table, so no fragment layout is assumed). Finally out = O / l
/// as in `store`. Shared memory: 43 KB static (Q 17 KB, K 8.5 KB with P
/// aliasing it, V 8.5 KB, S 9 KB). The host twin stays the SIMT algorithm:
/// on this path q . k and p . v are summed in the tensor core's order and P
/// is rounded to 16 bits, so host and device agree to that rounding (about
/// 2^-11 relative per weight for half, 2^-8 for bf16), not bitwise.
#include <fusor/kernels/parts/attention_operands.hpp>
#include <fusor/kernels/tuning/attention.hpp>

namespace fusor::kernels {

// Tile shape (attn_rows, attn_lanes, attn_keys, attn_max_dim, attn_threads):
// kernels/tuning/attention.hpp.

/// One flash-attention launch: operands are elementwise trees (k_operand)
/// at rank-R indices, the mask a tree at [B, H, Sq, Sk] (or absent).
template <int R, class Q, class K, class V, class M, bool HasMask, class Sink>
struct attention_kernel {
  Q q;
  K k;
  V v;
  M mask;
  Sink sink;
  attention_indexer<R> qi, ki, vi, oi;
  index_t batch = 0, hq = 0, hkv = 0, sq = 0, sk = 0, d = 0, dv = 0;
  float scale = 1.0f;
  bool causal = false;
  using T = accum_t<decltype(q.at(index_array<R>{}))>;
  /// The 16-bit operand type of the tensor-core path, or void (SIMT only).
  using mma_type = attention_mma_t<Q, K, V>;
  static constexpr bool tensor_cores = !cuda::std::is_void_v<mma_type> && cuda::std::is_same_v<T, float>;

  FUSOR_HOST_DEVICE index_t q_tiles() const { return (sq + attn_rows - 1) / attn_rows; }
  FUSOR_HOST_DEVICE index_t blocks() const { return batch * hq * q_tiles(); }

  struct block_id {
    index_t b, h, hk, i0;
  };
  FUSOR_HOST_DEVICE block_id locate(index_t blk) const {
    const index_t t = blk % q_tiles(), h = (blk / q_tiles()) % hq, b = blk / (q_tiles() * hq);
    return {b, h, h / (hq / hkv), t * attn_rows};
  }

  /// Per-row state of one lane.
  struct lane_state {
    T qv[attn_per_lane];
    T acc[attn_per_lane];
    T m, l;
  };

  FUSOR_HOST_DEVICE void init_lane(lane_state& st, const block_id& id, index_t i, int lane) const {
    st.m = lowest_value<T>();
    st.l = T(0);
    for (int t = 0; t < attn_per_lane; ++t) {
      const index_t dd = lane + index_t(t) * attn_lanes;
      st.qv[t] = (i < sq && dd < d) ? T(q.at(qi.at(id.b, id.h, i, dd))) : T(0);
      st.acc[t] = T(0);
    }
  }

  /// Loads key/value tile j0 (this thread's share) into shared arrays.
  FUSOR_HOST_DEVICE void load_tile(T* ks, T* vs, const block_id& id, index_t j0, int tid, int threads) const {
    for (int e = tid; e < attn_keys * attn_max_dim; e += threads) {
      const int jj = e / attn_max_dim, dd = e % attn_max_dim;
      const index_t j = j0 + jj;
      ks[e] = (j < sk && dd < d) ? T(k.at(ki.at(id.b, id.hk, j, dd))) : T(0);
      vs[e] = (j < sk && dd < dv) ? T(v.at(vi.at(id.b, id.hk, j, dd))) : T(0);
    }
  }

  /// This lane's part of q_i . k_j.
  FUSOR_HOST_DEVICE T partial_dot(const lane_state& st, const T* ks, int jj, int lane) const {
    T s = T(0);
    for (int t = 0; t < attn_per_lane; ++t) {
      const int dd = lane + t * attn_lanes;
      if (dd < d) s += st.qv[t] * ks[jj * attn_max_dim + dd];
    }
    return s;
  }

  /// The full score from the dot product: scale, mask, causal.
  FUSOR_HOST_DEVICE T score(T dot, const block_id& id, index_t i, index_t j) const {
    T s = math::mul(dot, T(scale));
    if constexpr (HasMask) s = math::add(s, T(mask.at(index_array<4>{id.b, id.h, i < sq ? i : 0, j})));
    if (causal && j > i) s = lowest_value<T>();
    return s;
  }

  /// The online softmax update of one row with scores s[0, n) (see the file
  /// comment); returns the factor alpha for the accumulator and writes p.
  FUSOR_HOST_DEVICE static T online_update(T& m, T& l, const T* s, T* p, int n) {
    T mt = lowest_value<T>();
    for (int jj = 0; jj < n; ++jj) mt = op::max{}(mt, s[jj]);
    const T mn = op::max{}(m, mt);
    if (mn == lowest_value<T>()) {  // every score so far is -inf: nothing to add yet
      for (int jj = 0; jj < n; ++jj) p[jj] = T(0);
      return T(1);
    }
    const T alpha = m == lowest_value<T>() ? T(0) : math::exp(math::sub(m, mn));
    T sum = T(0);
    for (int jj = 0; jj < n; ++jj) {
      p[jj] = math::exp(math::sub(s[jj], mn));
      sum += p[jj];
    }
    m = mn;
    l = math::add(math::mul(l, alpha), sum);
    return alpha;
  }

  FUSOR_HOST_DEVICE void accumulate(lane_state& st, const T* vs, const T* p, T alpha, int n, int lane) const {
    for (int t = 0; t < attn_per_lane; ++t) {
      const int dd = lane + t * attn_lanes;
      if (dd >= dv) break;
      T a = st.acc[t] * alpha;
      for (int jj = 0; jj < n; ++jj) a += p[jj] * vs[jj * attn_max_dim + dd];
      st.acc[t] = a;
    }
  }

  FUSOR_HOST_DEVICE void store(const lane_state& st, const block_id& id, index_t i, int lane) const {
    if (i >= sq) return;
    for (int t = 0; t < attn_per_lane; ++t) {
      const index_t dd = lane + index_t(t) * attn_lanes;
      if (dd >= dv) break;
      // No keys at all (Sk = 0): an empty sum, 0, as softmax(q k^T) v gives unfused (not 0 / 0).
      sink.data[dot<R>(oi.at(id.b, id.h, i, dd), sink.stride)] =
          from_compute<typename Sink::value_type>(sk == 0 ? T(0) : math::div(st.acc[t], st.l));
    }
  }

  /// Keys of tile j0 a query row can see at all (causal: up to the block's last row).
  FUSOR_HOST_DEVICE int tile_keys(index_t j0) const { return int(sk - j0 < attn_keys ? sk - j0 : attn_keys); }

  /// Keys per K/V tile of the host twin (1..attn_keys): the device uses
  /// attn_keys; tests run the same algorithm at several tile sizes.
  int host_keys = attn_keys;

  /// The host twin of one block.
  void run_block_host(index_t blk) const {
    const block_id id = locate(blk);
    static thread_local T ks[attn_keys * attn_max_dim], vs[attn_keys * attn_max_dim];
    static thread_local lane_state st[attn_rows][attn_lanes];
    for (int r = 0; r < attn_rows; ++r)
      for (int lane = 0; lane < attn_lanes; ++lane) init_lane(st[r][lane], id, id.i0 + r, lane);
    const index_t last_row = id.i0 + attn_rows - 1;
    const int kt = host_keys >= 1 && host_keys <= attn_keys ? host_keys : attn_keys;
    for (index_t j0 = 0; j0 < sk; j0 += kt) {
      if (causal && j0 > last_row) break;  // every key of this and later tiles is masked for the whole block
      load_tile(ks, vs, id, j0, 0, 1);
      const int n = int(sk - j0 < kt ? sk - j0 : kt);
      for (int r = 0; r < attn_rows; ++r) {
        const index_t i = id.i0 + r;
        T s[attn_keys], p[attn_keys];
        for (int jj = 0; jj < n; ++jj) {
          T part[attn_lanes];
          for (int lane = 0; lane < attn_lanes; ++lane) part[lane] = partial_dot(st[r][lane], ks, jj, lane);
          s[jj] = score((part[0] + part[1]) + (part[2] + part[3]), id, i, j0 + jj);
        }
        T m = st[r][0].m, l = st[r][0].l;
        const T alpha = online_update(m, l, s, p, n);
        for (int lane = 0; lane < attn_lanes; ++lane) {
          st[r][lane].m = m;
          st[r][lane].l = l;
          accumulate(st[r][lane], vs, p, alpha, n, lane);
        }
      }
    }
    for (int r = 0; r < attn_rows; ++r)
      for (int lane = 0; lane < attn_lanes; ++lane) store(st[r][lane], id, id.i0 + r, lane);
  }

#if defined(__CUDA_ARCH__)
  /// One block on the device: tensor cores when q, k, v are 16-bit and the
  /// architecture has them (half: sm_70, bf16: sm_80), the SIMT algorithm of
  /// the host twin otherwise.
  __device__ void run_block_device(index_t blk) const {
    constexpr bool tc = tensor_cores && arch_has_mma<mma_type>();
    if constexpr (tc) {
#if __CUDA_ARCH__ >= 700
      run_block_device_tc(blk);
#endif
    } else {
      run_block_device_simt(blk);
    }
  }

  /// The SIMT block (the host twin's algorithm): thread t handles row
  /// t / attn_lanes, lane t % attn_lanes.
  __device__ void run_block_device_simt(index_t blk) const {
    __shared__ T ks[attn_keys * attn_max_dim], vs[attn_keys * attn_max_dim];
    const block_id id = locate(blk);
    const int tid = int(threadIdx.x), lane = tid % attn_lanes;
    const index_t i = id.i0 + tid / attn_lanes;
    lane_state st;
    init_lane(st, id, i, lane);
    const index_t last_row = id.i0 + attn_rows - 1;
    for (index_t j0 = 0; j0 < sk; j0 += attn_keys) {
      if (causal && j0 > last_row) break;
      __syncthreads();
      load_tile(ks, vs, id, j0, tid, attn_threads);
      __syncthreads();
      const int n = tile_keys(j0);
      T s[attn_keys], p[attn_keys];
      for (int jj = 0; jj < n; ++jj) {
        T part = partial_dot(st, ks, jj, lane);
        part += __shfl_xor_sync(0xffffffffu, part, 1);
        part += __shfl_xor_sync(0xffffffffu, part, 2);
        s[jj] = score(part, id, i, j0 + jj);
      }
      const T alpha = online_update(st.m, st.l, s, p, n);
      accumulate(st, vs, p, alpha, n, lane);
    }
    store(st, id, i, lane);
  }

#if __CUDA_ARCH__ >= 700
  // Tensor-core block (see the file comment). Shared-memory layouts
  // (elements): Q [64][tc_ld] and K, V [32][tc_ld] of the 16-bit type
  // (d-fastest, columns >= the padded head dim unused; the padding of 8
  // keeps WMMA's 32-byte alignment and spreads rows over banks); S fp32
  // [64][tc_lds]: columns 0..31 the tile's q . k, column 32 the row's alpha,
  // 33 its final l; P [64][tc_ldp] of the 16-bit type in K's space (K is
  // dead once S is computed). After the last tile the output fragments are
  // staged per warp (16 x 16 fp32) in K's and V's space.
  static constexpr int tc_ld = attn_max_dim + 8, tc_lds = attn_keys + 4, tc_ldp = attn_keys + 8;
  static constexpr int tc_q_bytes = attn_rows * tc_ld * 2, tc_kv_bytes = attn_keys * tc_ld * 2;
  static constexpr int tc_s_bytes = attn_rows * tc_lds * 4;
  static constexpr int tc_smem_bytes = tc_q_bytes + 2 * tc_kv_bytes + tc_s_bytes;
  static constexpr int tc_warps = attn_threads / 32, tc_out_frags = attn_max_dim / 16 / 2;
  static_assert(tc_smem_bytes <= 48 * 1024, "static shared memory is limited to 48 KB");
  static_assert(attn_rows * tc_ldp * 2 <= tc_kv_bytes, "P must fit in K's space");
  static_assert(tc_warps * 16 * 16 * 4 <= 2 * tc_kv_bytes, "the output staging must fit in K's and V's space");
  static_assert(attn_rows == 64 && attn_keys == 32 && tc_warps == 8,
                "warp w computes S rows 16 (w / 2), keys 16 (w % 2): 4 x 2 fragments of a 64 x 32 tile");
  static_assert(tc_q_bytes % 32 == 0 && tc_kv_bytes % 32 == 0, "tiles must start 32-byte aligned (WMMA)");

  /// The SIMT path's per-row step on the tensor-core path: row r's scores
  /// (S column jj < n) through `score` and `online_update`, P (16-bit, 0 past
  /// the tile's keys) and alpha written back. N > 0: n == N at compile time
  /// (a full tile: the loops unroll). online_update writes p in place of s
  /// (it reads s[jj] before writing p[jj], and s only before that loop),
  /// which halves the registers of the row.
  template <int N, class S>
  __device__ void softmax_row_tc(float* ss, S* ps, const block_id& id, index_t i, int r, index_t j0, int n_run, T& m,
                                 T& l) const {
    const int n = N > 0 ? N : n_run;
    T sp[attn_keys];
    FUSOR_UNROLL
    for (int jj = 0; jj < attn_keys; ++jj)
      if (jj < n) sp[jj] = score(ss[r * tc_lds + jj], id, i, j0 + jj);
    const T alpha = online_update(m, l, sp, sp, n);
    FUSOR_UNROLL
    for (int jj = 0; jj < attn_keys; ++jj) ps[r * tc_ldp + jj] = from_compute<S>(jj < n ? sp[jj] : T(0));
    ss[r * tc_lds + attn_keys] = alpha;
  }

  /// Calls f(row, col) for thread tid's share of a rows x cols tile, in
  /// row-major order (consecutive threads on consecutive columns: coalesced
  /// for d-contiguous operands), with no division per element.
  template <class F>
  __device__ static void tc_tile_loop(int rows, int cols, int tid, F&& f) {
    if (cols <= 0) return;
    int rr = tid / cols, c = tid % cols;
    const int drr = attn_threads / cols, dc = attn_threads % cols;
    while (rr < rows) {
      f(rr, c);
      rr += drr;
      c += dc;
      if (c >= cols) {
        c -= cols;
        ++rr;
      }
    }
  }

  /// One block on tensor cores (see the file comment).
  __device__ void run_block_device_tc(index_t blk) const {
    namespace wmma = nvcuda::wmma;
    using S = mma_type;
    using acc_frag = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
    constexpr int ne = acc_frag::num_elements;
    __shared__ alignas(128) unsigned char smem[tc_smem_bytes];
    S* const qs = reinterpret_cast<S*>(smem);
    S* const ks = reinterpret_cast<S*>(smem + tc_q_bytes);
    S* const vs = reinterpret_cast<S*>(smem + tc_q_bytes + tc_kv_bytes);
    float* const ss = reinterpret_cast<float*>(smem + tc_q_bytes + 2 * tc_kv_bytes);
    S* const ps = ks;

    const block_id id = locate(blk);
    const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32;
    // Head dims padded to a multiple of 16 (d, dv <= attn_max_dim: checked by the binding).
    const int dp = int((d + 15) / 16) * 16, dvp = int((dv + 15) / 16) * 16, nfo = dvp / 16;
    const int wr = (warp / 2) * 16, wc = (warp % 2) * 16;
    // The row thread of row r = 16 w + l is lane l < 16 of warp w < 4.
    const bool row_thread = warp < 4 && lane < 16;
    const int r = warp * 16 + lane;
    const index_t i = id.i0 + r;

    // The Q tile (zeros past Sq and past d), and a 16 x 16 table of row
    // indices in S's space, loaded as an accumulator fragment: element t of
    // any accumulator fragment of this warp (rows wr .. wr + 15) lies in the
    // block's row rowi[t].
    tc_tile_loop(attn_rows, dp, tid, [&](int rr, int c) {
      const index_t ii = id.i0 + rr;
      qs[rr * tc_ld + c] = from_compute<S>((ii < sq && c < d) ? T(q.at(qi.at(id.b, id.h, ii, c))) : T(0));
    });
    for (int e = tid; e < 16 * 16; e += attn_threads) ss[(e / 16) * tc_lds + e % 16] = float(e / 16);
    __syncthreads();
    int rowi[ne];
    {
      acc_frag rows;
      wmma::load_matrix_sync(rows, ss, tc_lds, wmma::mem_row_major);
      FUSOR_UNROLL
      for (int t = 0; t < ne; ++t) rowi[t] = wr + int(rows.x[t]);
    }
    acc_frag o[tc_out_frags];  // column block f = warp % 2 + 2 c of this warp's 16 rows
    FUSOR_UNROLL
    for (int c = 0; c < tc_out_frags; ++c) wmma::fill_fragment(o[c], 0.0f);
    T m = lowest_value<T>(), l = T(0);  // the row thread's state

    const index_t last_row = id.i0 + attn_rows - 1;
    for (index_t j0 = 0; j0 < sk; j0 += attn_keys) {
      if (causal && j0 > last_row) break;
      __syncthreads();  // the previous tile's P and V (and the row table) are read
      tc_tile_loop(attn_keys, dp, tid, [&](int jj, int c) {
        const index_t j = j0 + jj;
        ks[jj * tc_ld + c] = from_compute<S>((j < sk && c < d) ? T(k.at(ki.at(id.b, id.hk, j, c))) : T(0));
      });
      tc_tile_loop(attn_keys, dvp, tid, [&](int jj, int c) {
        const index_t j = j0 + jj;
        vs[jj * tc_ld + c] = from_compute<S>((j < sk && c < dv) ? T(v.at(vi.at(id.b, id.hk, j, c))) : T(0));
      });
      __syncthreads();
      {  // S = Q K^T (K^T: K's rows read column-major)
        acc_frag sacc;
        wmma::fill_fragment(sacc, 0.0f);
        for (int kk = 0; kk < dp; kk += 16) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, S, wmma::row_major> fq;
          wmma::fragment<wmma::matrix_b, 16, 16, 16, S, wmma::col_major> fk;
          wmma::load_matrix_sync(fq, qs + wr * tc_ld + kk, tc_ld);
          wmma::load_matrix_sync(fk, ks + wc * tc_ld + kk, tc_ld);
          wmma::mma_sync(sacc, fq, fk, sacc);
        }
        wmma::store_matrix_sync(ss + wr * tc_lds + wc, sacc, tc_lds, wmma::mem_row_major);
      }
      __syncthreads();
      const int n = tile_keys(j0);
      if (row_thread) {
        if (n == attn_keys) softmax_row_tc<attn_keys>(ss, ps, id, i, r, j0, n, m, l);
        else softmax_row_tc<0>(ss, ps, id, i, r, j0, n, m, l);
      }
      __syncthreads();
      {  // O = alpha O + P V
        float alpha[ne];
        FUSOR_UNROLL
        for (int t = 0; t < ne; ++t) alpha[t] = ss[rowi[t] * tc_lds + attn_keys];
        FUSOR_UNROLL
        for (int c = 0; c < tc_out_frags; ++c) {
          if (warp % 2 + 2 * c >= nfo) break;
          FUSOR_UNROLL
          for (int t = 0; t < ne; ++t) o[c].x[t] = o[c].x[t] * alpha[t];
        }
        FUSOR_UNROLL
        for (int kk = 0; kk < attn_keys; kk += 16) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, S, wmma::row_major> fp;
          wmma::load_matrix_sync(fp, ps + wr * tc_ldp + kk, tc_ldp);
          FUSOR_UNROLL
          for (int c = 0; c < tc_out_frags; ++c) {
            const int f = warp % 2 + 2 * c;
            if (f >= nfo) break;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, S, wmma::row_major> fv;
            wmma::load_matrix_sync(fv, vs + kk * tc_ld + 16 * f, tc_ld);
            wmma::mma_sync(o[c], fp, fv, o[c]);
          }
        }
      }
    }
    __syncthreads();  // P and V are read: the staging below reuses their space
    if (row_thread) ss[r * tc_lds + attn_keys + 1] = l;
    __syncthreads();
    // out = O / l, as `store` (no keys at all: the empty sum 0), each
    // fragment staged through shared memory to find its elements' places.
    float* const stage = reinterpret_cast<float*>(smem + tc_q_bytes) + warp * 256;
    FUSOR_UNROLL
    for (int c = 0; c < tc_out_frags; ++c) {
      const int f = warp % 2 + 2 * c;
      if (f >= nfo) break;
      wmma::store_matrix_sync(stage, o[c], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32) {
        const int rr = wr + e / 16, dd = 16 * f + e % 16;
        const index_t ii = id.i0 + rr;
        if (ii < sq && dd < dv)
          sink.data[dot<R>(oi.at(id.b, id.h, ii, dd), sink.stride)] = from_compute<typename Sink::value_type>(
              sk == 0 ? T(0) : math::div(T(stage[e]), T(ss[rr * tc_lds + attn_keys + 1])));
      }
      __syncwarp();
    }
  }
#endif
#endif
};

}  // namespace fusor::kernels
