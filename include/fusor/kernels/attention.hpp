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
#include <fusor/kernels/contraction.hpp>
#include <fusor/ops/attention.hpp>

namespace fusor::kernels {

/// Query rows per block, threads per row, keys per K/V tile, and the largest
/// head_dim the kernel supports (registers and shared memory are sized by it).
inline constexpr int attn_rows = 64, attn_lanes = 4, attn_keys = 32, attn_max_dim = 128;
inline constexpr int attn_threads = attn_rows * attn_lanes;
inline constexpr int attn_per_lane = attn_max_dim / attn_lanes;

/// Maps (b, h, s, d) to an operand index for the layout.
template <int R>
struct attention_indexer {
  attention_layout layout = attention_layout::bhsd;
  index_t dim = 0;  ///< head_dim of the operand (packed layout: h * dim + d)
  FUSOR_HOST_DEVICE index_array<R> at(index_t b, index_t h, index_t s, index_t d) const {
    if constexpr (R == 3) {
      return index_array<3>{b, s, h * dim + d};
    } else {
      return layout == attention_layout::bshd ? index_array<4>{b, s, h, d} : index_array<4>{b, h, s, d};
    }
  }
};

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

  /// The host twin of one block.
  void run_block_host(index_t blk) const {
    const block_id id = locate(blk);
    static thread_local T ks[attn_keys * attn_max_dim], vs[attn_keys * attn_max_dim];
    static thread_local lane_state st[attn_rows][attn_lanes];
    for (int r = 0; r < attn_rows; ++r)
      for (int lane = 0; lane < attn_lanes; ++lane) init_lane(st[r][lane], id, id.i0 + r, lane);
    const index_t last_row = id.i0 + attn_rows - 1;
    for (index_t j0 = 0; j0 < sk; j0 += attn_keys) {
      if (causal && j0 > last_row) break;  // every key of this and later tiles is masked for the whole block
      load_tile(ks, vs, id, j0, 0, 1);
      const int n = tile_keys(j0);
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
  /// One block on the device: thread t handles row t / attn_lanes, lane t % attn_lanes.
  __device__ void run_block_device(index_t blk) const {
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
#endif
};

}  // namespace fusor::kernels
