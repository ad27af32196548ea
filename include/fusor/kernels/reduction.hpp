#pragma once
/// @file kernels/reduction.hpp
/// The row-reduction kernel family: reductions over any axis set, softmax,
/// log_softmax, layer_norm and rms_norm. Written once as FUSOR_HOST_DEVICE
/// code; plain structs and cuda::std (and CUB on the device) only.
///
/// Decomposition: the input's dims split into kept dims (they index a "row",
/// one output element of a reduction, or one normalized slice) and reduced
/// dims (they index the row's elements). A row's element j is the elementwise
/// prologue tree evaluated at the input multi-index (row dims, j dims), so
/// the producers of a reduction are never written to memory.
///
/// Per row, the algorithm is the one of L lanes (a warp, L = 32, for rows
/// of at most 1024 elements, 8 rows per 256-thread block; else the block,
/// L = 256; row_lanes_for): lane t accumulates elements t, t + L, ...
/// (lane_accumulate), then the L partial accumulators are merged. On the
/// device the merge is cub::WarpReduce / cub::BlockReduce; on the host
/// (block_reduce_row below) a pairwise tree over the lanes. Both use the same accumulators (push/merge/finalize), so the
/// host backend tests the device algorithm; the merge ORDER differs (CUB's
/// warp-shuffle tree vs the host's pairwise tree), so device and host agree
/// to rounding, not bitwise.
///
/// Accumulators compute in the prologue's compute type (fp32 for half and
/// bf16 inputs). NaN propagates through max/min/logsumexp/softmax; sum's
/// identity is -0.0 so a sum of -0.0s is -0.0; max's identity is -inf so
/// max of all -0.0 is -0.0. Softmax is numerically stable: an online
/// (max, sum of exp(x - max)) pair (Milakov & Gimelshein 2018) and then
/// exp(x - max) / sum; a row of all -inf gives NaN (exp(-inf - -inf)), like
/// the unfused textbook formula. layer_norm's statistics: a Welford mean,
/// then a correction pass over the deviations from it (row_norm_stats),
/// accurate for a large common offset and for outliers; rms_norm one pass
/// of squares.
/// Integer operands of floating ops (mean, l2, logsumexp, softmax, norms)
/// are computed in f32.
#include <fusor/kernels/parts/arg_acc.hpp>
#include <fusor/kernels/parts/norm_stats.hpp>
#include <fusor/kernels/parts/row_reduce.hpp>
#include <fusor/ops/reduction.hpp>

namespace fusor::kernels {

// ----------------------------------------------------------------- kernels
/// ReduceX: one output element per row.
template <int R, reduce_kind K, class X, class Out>
struct reduce_rows {
  row_space<R> space;
  X x;
  Out out;  ///< strides in input index space (0 on reduced dims)
  using Reducer = reducer<K>;  // (ops/reducers.hpp)
  using T = row_compute_t<decltype(x.at(index_array<R>{})), Reducer::floating>;
  using Acc = typename Reducer::template accumulator<T>;

  /// One block per row.
  FUSOR_HOST_DEVICE void run_row(index_t r) const {
    index_array<R> base{};
    space.set_row(r, base);
    const Acc a = block_reduce_row<Acc>(row_value(base, 0), space.len, space.lanes);
    if (row_lane(space.lanes) == 0) finish(base, a);
  }

  /// Split rows (few, very long rows; see row_chunks), pass 1: block (r, c)
  /// reduces elements [c * chunk, (c + 1) * chunk) of row r into
  /// partial[r * chunks + c].
  FUSOR_HOST_DEVICE void run_chunk(index_t r, index_t c, index_t chunks, index_t chunk, Acc* partial) const {
    index_array<R> base{};
    space.set_row(r, base);
    const index_t begin = c * chunk;
    const index_t n = begin < space.len ? (space.len - begin < chunk ? space.len - begin : chunk) : 0;
    const Acc a = block_reduce_row<Acc>(row_value(base, begin), n, reduce_block);
    if (row_lane(reduce_block) == 0) partial[r * chunks + c] = a;
  }
  /// Split rows, pass 2 (one thread per row): the row's partials merged in a
  /// pairwise tree (a fixed order: the result does not depend on timing),
  /// then the row's value as in run_row.
  FUSOR_HOST_DEVICE void finish_row(index_t r, Acc* partial, index_t chunks) const {
    index_array<R> base{};
    space.set_row(r, base);
    Acc* p = partial + r * chunks;
    for (index_t s = 1; s < chunks; s *= 2)
      for (index_t t = 0; t + s < chunks; t += 2 * s) p[t] = Acc::merge(p[t], p[t + s]);
    finish(base, chunks > 0 ? p[0] : Acc::identity());
  }

 private:
  FUSOR_HOST_DEVICE auto row_value(const index_array<R>& base, index_t begin) const { return read_row(x, space, base, begin); }
  FUSOR_HOST_DEVICE void finish(const index_array<R>& base, const Acc& a) const {
    out.put(base, Reducer::template finalize<T>(a, space.len));
  }
};

// row_chunks, row_chunk_len: kernels/tuning/rows.hpp (the planner decides the split).

/// softmax / log_softmax over the reduced dim.
template <int R, bool Log, class X, class Out>
struct softmax_rows {
  row_space<R> space;
  X x;
  Out out;
  using T = row_compute_t<decltype(x.at(index_array<R>{})), true>;
  FUSOR_HOST_DEVICE void run_row(index_t r) const {
    index_array<R> base{};
    space.set_row(r, base);
#if FUSOR_HOST_PACKETS
    if (space.lanes == 0) return run_row_packs(base);
#endif
    const lse_acc<T> a = block_reduce_row<lse_acc<T>>(read_row(x, space, base), space.len, space.lanes);
    const T log_s = math::log(a.s);
    for (index_t j = row_lane(space.lanes); j < space.len; j += row_lanes(space.lanes)) {
      index_array<R> idx = base;
      space.set_elem(j, idx);
      const T d = math::sub(T(x.at(idx)), a.m);
      const T y = Log ? math::sub(d, log_s) : math::div(math::exp(d), a.s);
      out.put(idx, y);
    }
  }
#if FUSOR_HOST_PACKETS
  /// Host packs (kernels/parts/host_rows.hpp): the written formula's three
  /// passes, m = max(x), s = sum(exp(x - m)), then exp(x - m) / s (or
  /// x - m - log(s)): one exp per element per pass instead of the online
  /// pair's two (vector exps are the cost on the host), and bitwise what the
  /// unfused max, sub, exp, sum and div kernels give on the host.
  void run_row_packs(const index_array<R>& base) const {
    constexpr int W = host_pack_lanes;
    using V = pack<T, W>;
    const auto v = read_row(x, space, base).then(to_type<T>{});
    const T m = host_reduce_row<max_acc<T>>(v, space.len).v;
    const auto e = v.then([m](auto u) FUSOR_LAMBDA_INLINE { return math::exp(math::sub(u, decltype(u)(m))); });
    const T s = host_reduce_row<sum_acc<T>>(e, space.len).v;
    const V vm(m), vs(s), vlog_s(math::log(s));
    for (index_t j = 0; j < space.len; j += W) {
      const int n = space.len - j < W ? int(space.len - j) : W;
      const V d = math::sub(n == W ? load_row_pack<W>(v, j) : load_row_pack_tail<W>(v, j, n), vm);
      const V y = Log ? math::sub(d, vlog_s) : math::div(math::exp(d), vs);
      store_row_pack<W>(out, space, base, j, y, n);
    }
  }
#endif
};

/// layer_norm (Rms = false: Welford mean, correction pass, output pass) and rms_norm.
template <int R, bool Rms, class X, class G, class B, class Out>
struct norm_rows {
  row_space<R> space;
  X x;
  G gamma;
  B beta;
  Out out;
  float eps;
  bool has_gamma, has_beta;
  using T = row_compute_t<decltype(x.at(index_array<R>{})), true>;
  FUSOR_HOST_DEVICE void run_row(index_t r) const {
    index_array<R> base{};
    space.set_row(r, base);
#if FUSOR_HOST_PACKETS
    if (space.lanes == 0) return run_row_packs(base);
#endif
    const norm_stats<T> st = row_norm_stats<Rms, T>(read_row(x, space, base), space.len, eps, space.lanes);
    for (index_t j = row_lane(space.lanes); j < space.len; j += row_lanes(space.lanes)) {
      index_array<R> idx = base;
      space.set_elem(j, idx);
      const T y = apply_norm<Rms>(T(x.at(idx)), st, T(gamma.at(idx)), Rms ? T(0) : T(beta.at(idx)), has_gamma, has_beta);
      out.put(idx, y);
    }
  }
#if FUSOR_HOST_PACKETS
  /// Host packs (kernels/parts/host_rows.hpp): the same statistics and
  /// per-element formula, W elements at a time.
  void run_row_packs(const index_array<R>& base) const {
    constexpr int W = host_pack_lanes;
    using V = pack<T, W>;
    const auto v = read_row(x, space, base).then(to_type<T>{});
    const norm_stats<T> st = row_norm_stats<Rms, T>(v, space.len, eps, 0);
    const norm_stats<V> sv{V(st.mean), V(st.inv)};
    const auto g = read_row(gamma, space, base).then(to_type<T>{});
    const auto b = read_row(beta, space, base).then(to_type<T>{});
    for (index_t j = 0; j < space.len; j += W) {
      const int n = space.len - j < W ? int(space.len - j) : W;
      const auto load = [&](const auto& u) FUSOR_LAMBDA_INLINE {
        return n == W ? load_row_pack<W>(u, j) : load_row_pack_tail<W>(u, j, n);
      };
      const V gv = has_gamma ? load(g) : V(0), bv = (!Rms && has_beta) ? load(b) : V(0);
      store_row_pack<W>(out, space, base, j, apply_norm<Rms>(load(v), sv, gv, bv, has_gamma, has_beta), n);
    }
  }
#endif
};

/// layer_norm's statistics of each row (ops/layer_norm_stats.hpp): its mean
/// (Inv = false) or 1 / sqrt(var + eps) (Inv = true), computed as norm_rows
/// computes them (the same reads and lanes, so bitwise what layer_norm
/// normalizes with), written once per row.
template <int R, bool Inv, class X, class Out>
struct norm_stat_rows {
  row_space<R> space;
  X x;
  Out out;
  float eps;
  using T = row_compute_t<decltype(x.at(index_array<R>{})), true>;
  FUSOR_HOST_DEVICE void run_row(index_t r) const {
    index_array<R> base{};
    space.set_row(r, base);
    norm_stats<T> st;
#if FUSOR_HOST_PACKETS
    if (space.lanes == 0) st = row_norm_stats<false, T>(read_row(x, space, base).then(to_type<T>{}), space.len, eps, 0);
    else
#endif
      st = row_norm_stats<false, T>(read_row(x, space, base), space.len, eps, space.lanes);
    if (row_lane(space.lanes > 0 ? space.lanes : 1) == 0) out.put(base, Inv ? st.inv : st.mean);
  }
};

// ----------------------------------------------------------------- argmax / argmin
/// argmax (Max) / argmin over the reduced dim: one int64 index per row.
template <int R, bool Max, class X, class Out>
struct arg_rows {
  row_space<R> space;
  X x;
  Out out;
  bool last = false;  ///< select_last_index
  using T = row_compute_t<decltype(x.at(index_array<R>{})), false>;
  using Acc = arg_acc<T, Max>;

  FUSOR_HOST_DEVICE void run_row(index_t r) const {
    index_array<R> base{};
    space.set_row(r, base);
    const auto value = [&](index_t j) {
      index_array<R> idx = base;
      space.set_elem(j, idx);
      return Acc{static_cast<T>(x.at(idx)), j, last};
    };
#if defined(__CUDA_ARCH__)
    const Acc a = block_reduce_row<Acc>(value, space.len, space.lanes);
    if (row_lane(space.lanes) == 0) out.put(base, cuda::std::int64_t(a.i));
#else
    // The device's lanes one after the other (one lane under the host packs
    // policy, lanes = 0): comparisons only, so any split gives the same index.
    const index_t lanes = space.lanes > 0 ? space.lanes : 1;
    Acc a = Acc::identity();
    for (index_t t = 0; t < lanes && t < space.len; ++t) a = Acc::merge(a, lane_accumulate<Acc>(value, space.len, t, lanes));
    out.put(base, cuda::std::int64_t(a.i));
#endif
  }
};

// ----------------------------------------------------------------- cumsum
/// cumsum over the reduced dim (ops/cumsum.hpp): one lane walks the row in
/// order (from the end with `reverse`), so the sums are NumPy's sequential
/// ones, bit for bit, on the host and the device alike. (A row is one lane's
/// work on the device: a block scan is future work for very long rows.)
template <int R, class X, class Out>
struct scan_rows {
  row_space<R> space;
  X x;
  Out out;
  bool exclusive = false, reverse = false;
  using T = row_compute_t<decltype(x.at(index_array<R>{})), false>;

  FUSOR_HOST_DEVICE void run_row(index_t r) const {
    if (row_lane(space.lanes > 0 ? space.lanes : 1) != 0) return;
    index_array<R> base{};
    space.set_row(r, base);
    T acc = T(0);
    for (index_t k = 0; k < space.len; ++k) {
      index_array<R> idx = base;
      space.set_elem(reverse ? space.len - 1 - k : k, idx);
      const T v = static_cast<T>(x.at(idx));
      if (exclusive) {
        out.put(idx, acc);
        acc = op::add{}(acc, v);
      } else {
        acc = op::add{}(acc, v);
        out.put(idx, acc);
      }
    }
  }
};

}  // namespace fusor::kernels
