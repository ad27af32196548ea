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
/// Per row, the algorithm is the one of a 256-thread block: lane t
/// accumulates elements t, t + 256, ... (lane_accumulate), then the 256
/// partial accumulators are merged. On the device the merge is
/// cub::BlockReduce; on the host (block_reduce_row below) a pairwise tree over
/// the lanes. Both use the same accumulators (push/merge/finalize), so the
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
/// the unfused textbook formula. layer_norm uses two passes over shifted
/// data (mean of x - x0 with x0 the row's first element, then the mean of
/// squared deviations from the mean), accurate even for a large common
/// offset; rms_norm one pass of squares.
#include <fusor/kernels/elementwise.hpp>
#include <fusor/ops/reduction.hpp>

#include <cuda/std/limits>

#if defined(__CUDACC__)
#include <cub/block/block_reduce.cuh>
#endif

namespace fusor::kernels {

/// Threads per row (CUDA block size) and lanes of the host twin.
inline constexpr int reduce_block = 256;

template <int R>
using index_array = cuda::std::array<index_t, (R > 0 ? R : 1)>;

template <int R>
FUSOR_HOST_DEVICE index_t dot(const index_array<R>& idx, const index_array<R>& stride) {
  index_t off = 0;
  for (int d = 0; d < R; ++d) off += idx[d] * stride[d];
  return off;
}

/// Kept and reduced dims of a rank-R input.
template <int R>
struct row_space {
  static constexpr int N = R > 0 ? R : 1;
  cuda::std::array<index_t, N> extent{};
  cuda::std::array<int, N> kept{}, red{};
  int nkept = 0, nred = 0;
  index_t rows = 1;  ///< product of kept extents
  index_t len = 1;   ///< product of reduced extents (elements per row)

  FUSOR_HOST_DEVICE void set_row(index_t r, index_array<R>& idx) const {
    for (int k = nkept - 1; k >= 0; --k) {
      const int d = kept[k];
      idx[d] = r % extent[d];
      r /= extent[d];
    }
  }
  FUSOR_HOST_DEVICE void set_elem(index_t j, index_array<R>& idx) const {
    for (int k = nred - 1; k >= 0; --k) {
      const int d = red[k];
      idx[d] = j % extent[d];
      j /= extent[d];
    }
  }
};

/// One operand of a row kernel: an elementwise tree over its own sources
/// (strides broadcast to the input's rank), evaluated at an input index.
template <int R, class Sources, class Tree>
struct k_operand {
  static constexpr int rank = R;
  Sources sources;
  Tree tree;
  FUSOR_HOST_DEVICE auto at(const index_array<R>& idx) const {
    auto vals = fusor::apply(
        [&](const auto&... s) { return fusor::make_tuple(to_compute(s.data[dot<R>(idx, s.stride)])...); }, sources);
    return tree.eval(vals);
  }
};

/// Where a row kernel writes: an output addressed by input indices (strides
/// in input index space, 0 on reduced dims of a reduction's output).
template <int R, class Sink>
struct row_output {
  Sink sink;
  template <class V>
  FUSOR_HOST_DEVICE void put(const index_array<R>& idx, V v) const {
    sink.data[dot<R>(idx, sink.stride)] = from_compute<typename Sink::value_type>(v);
  }
};

/// A row output through an epilogue: elementwise work on the reduced or
/// normalized value (its operands also addressed by input indices), done
/// before the store, so the value never goes through memory. The value is
/// first rounded to the reduction's result type Res, as the unfused path
/// stores it.
template <int R, class Res, class Sink, class Ep>
struct row_epilogue_output {
  Sink sink;
  Ep ep;
  template <class V>
  FUSOR_HOST_DEVICE void put(const index_array<R>& idx, V v) const {
    const auto rounded = to_compute(from_compute<Res>(v));
    sink.data[dot<R>(idx, sink.stride)] = from_compute<typename Sink::value_type>(ep.at(idx, rounded));
  }
};

// ----------------------------------------------------------------- accumulators
template <class T>
FUSOR_HOST_DEVICE constexpr T lowest_value() {
  if constexpr (cuda::std::numeric_limits<T>::has_infinity) return -cuda::std::numeric_limits<T>::infinity();
  else return cuda::std::numeric_limits<T>::lowest();
}
template <class T>
FUSOR_HOST_DEVICE constexpr T highest_value() {
  if constexpr (cuda::std::numeric_limits<T>::has_infinity) return cuda::std::numeric_limits<T>::infinity();
  else return cuda::std::numeric_limits<T>::max();
}

/// sum (identity -0.0: -0.0 + x == x for every x, so sum of -0.0s is -0.0).
template <class T>
struct sum_acc {
  T v;
  FUSOR_HOST_DEVICE static sum_acc identity() { return {T(-0.0)}; }
  FUSOR_HOST_DEVICE void push(T x) { v = math::add(v, x); }
  FUSOR_HOST_DEVICE static sum_acc merge(sum_acc a, sum_acc b) { return {math::add(a.v, b.v)}; }
};
/// sum of squares.
template <class T>
struct sumsq_acc : sum_acc<T> {
  FUSOR_HOST_DEVICE static sumsq_acc identity() { return {{T(0)}}; }
  FUSOR_HOST_DEVICE void push(T x) { this->v = math::add(this->v, math::mul(x, x)); }
  FUSOR_HOST_DEVICE static sumsq_acc merge(sumsq_acc a, sumsq_acc b) { return {{math::add(a.v, b.v)}}; }
};
/// max with NaN propagation and max(-0, +0) = +0 (op::max).
template <class T>
struct max_acc {
  T v;
  FUSOR_HOST_DEVICE static max_acc identity() { return {lowest_value<T>()}; }
  FUSOR_HOST_DEVICE void push(T x) { v = op::max{}(v, x); }
  FUSOR_HOST_DEVICE static max_acc merge(max_acc a, max_acc b) { return {op::max{}(a.v, b.v)}; }
};
/// min with NaN propagation.
template <class T>
struct min_acc {
  T v;
  FUSOR_HOST_DEVICE static min_acc identity() { return {highest_value<T>()}; }
  FUSOR_HOST_DEVICE void push(T x) { v = op::min{}(v, x); }
  FUSOR_HOST_DEVICE static min_acc merge(min_acc a, min_acc b) { return {op::min{}(a.v, b.v)}; }
};
/// Online (max, sum of exp(x - max)): logsumexp and softmax. While every
/// element so far is -inf, s is 0 (no exp(-inf - -inf) = NaN).
template <class T>
struct lse_acc {
  T m, s;
  FUSOR_HOST_DEVICE static lse_acc identity() { return {lowest_value<T>(), T(0)}; }
  FUSOR_HOST_DEVICE static lse_acc merge(lse_acc a, lse_acc b) {
    const T m = op::max{}(a.m, b.m);
    if (m == lowest_value<T>()) return {m, T(0)};
    const T sa = a.s == T(0) ? T(0) : math::mul(a.s, math::exp(math::sub(a.m, m)));
    const T sb = b.s == T(0) ? T(0) : math::mul(b.s, math::exp(math::sub(b.m, m)));
    return {m, math::add(sa, sb)};
  }
  FUSOR_HOST_DEVICE void push(T x) { *this = merge(*this, {x, T(1)}); }
  /// log(sum(exp(x))); +-inf max gives +-inf (log of an infinite/zero sum).
  FUSOR_HOST_DEVICE T logsumexp() const {
    if (!(m > lowest_value<T>() && m < highest_value<T>())) return m;
    return math::add(m, math::log(s));
  }
};

/// Lane t of `lanes` accumulates elements t, t + lanes, ... of a row.
template <class Acc, class F>
FUSOR_HOST_DEVICE Acc lane_accumulate(const F& value, index_t len, index_t lane, index_t lanes) {
  Acc a = Acc::identity();
  for (index_t j = lane; j < len; j += lanes) a.push(value(j));
  return a;
}

#if defined(__CUDA_ARCH__)
FUSOR_HOST_DEVICE index_t row_lane() { return threadIdx.x; }
FUSOR_HOST_DEVICE index_t row_lanes() { return blockDim.x; }
struct merge_fn {
  template <class A>
  __device__ A operator()(const A& a, const A& b) const { return A::merge(a, b); }
};
#else
inline index_t row_lane() { return 0; }
inline index_t row_lanes() { return 1; }
#endif

/// The whole row's accumulator, in every thread of the block (device) or on
/// the calling thread (host twin: 256 lanes, then a pairwise tree).
template <class Acc, class F>
FUSOR_HOST_DEVICE Acc block_reduce_row(const F& value, index_t len) {
#if defined(__CUDA_ARCH__)
  using BR = cub::BlockReduce<Acc, reduce_block>;
  __shared__ typename BR::TempStorage temp;
  __shared__ Acc total;
  const Acc mine = lane_accumulate<Acc>(value, len, threadIdx.x, reduce_block);
  const Acc all = BR(temp).Reduce(mine, merge_fn{});
  if (threadIdx.x == 0) total = all;
  __syncthreads();
  const Acc out = total;
  __syncthreads();  // temp and total are reused by the next call
  return out;
#else
  Acc part[reduce_block];
  const int lanes = len < reduce_block ? int(len > 0 ? len : 1) : reduce_block;
  for (int t = 0; t < lanes; ++t) part[t] = lane_accumulate<Acc>(value, len, t, reduce_block);
  for (int s = 1; s < lanes; s *= 2)
    for (int t = 0; t + s < lanes; t += 2 * s) part[t] = Acc::merge(part[t], part[t + s]);
  return part[0];
#endif
}

// ----------------------------------------------------------------- kernels
/// ReduceX: one output element per row.
template <int R, reduce_kind K, class X, class Out>
struct reduce_rows {
  row_space<R> space;
  X x;
  Out out;  ///< strides in input index space (0 on reduced dims)
  using T = decltype(x.at(index_array<R>{}));
  using Acc = cuda::std::conditional_t<
      K == reduce_kind::max, max_acc<T>,
      cuda::std::conditional_t<K == reduce_kind::min, min_acc<T>,
                               cuda::std::conditional_t<K == reduce_kind::logsumexp, lse_acc<T>,
                                                        cuda::std::conditional_t<K == reduce_kind::sum_square || K == reduce_kind::l2,
                                                                                 sumsq_acc<T>, sum_acc<T>>>>>;

  FUSOR_HOST_DEVICE void run_row(index_t r) const {
    index_array<R> base{};
    space.set_row(r, base);
    const auto value = [&](index_t j) {
      index_array<R> idx = base;
      space.set_elem(j, idx);
      return x.at(idx);
    };
    const Acc a = block_reduce_row<Acc>(value, space.len);
    if (row_lane() != 0) return;
    T v;
    if constexpr (K == reduce_kind::logsumexp) v = a.logsumexp();
    else if constexpr (K == reduce_kind::mean) v = math::div(a.v, T(space.len));
    else if constexpr (K == reduce_kind::l2) v = math::sqrt(a.v);
    else v = a.v;
    out.put(base, v);
  }
};

/// softmax / log_softmax over the reduced dim.
template <int R, bool Log, class X, class Out>
struct softmax_rows {
  row_space<R> space;
  X x;
  Out out;
  using T = decltype(x.at(index_array<R>{}));
  FUSOR_HOST_DEVICE void run_row(index_t r) const {
    index_array<R> base{};
    space.set_row(r, base);
    const auto value = [&](index_t j) {
      index_array<R> idx = base;
      space.set_elem(j, idx);
      return x.at(idx);
    };
    const lse_acc<T> a = block_reduce_row<lse_acc<T>>(value, space.len);
    const T log_s = math::log(a.s);
    for (index_t j = row_lane(); j < space.len; j += row_lanes()) {
      index_array<R> idx = base;
      space.set_elem(j, idx);
      const T d = math::sub(x.at(idx), a.m);
      const T y = Log ? math::sub(d, log_s) : math::div(math::exp(d), a.s);
      out.put(idx, y);
    }
  }
};

/// The statistics of one normalized row: its mean (0 for rms_norm) and
/// 1 / sqrt(variance + eps) (variance = mean of squares for rms_norm).
template <class T>
struct norm_stats {
  T mean, inv;
};

/// norm_stats of the row whose element j is value(j), len elements, computed
/// by the whole block (every thread gets the result). layer_norm uses two
/// passes (mean, then the mean of squared deviations), rms_norm one pass of
/// squares. The one implementation of this math: the layer_norm/rms_norm
/// row kernel below and the LayerNorm -> GEMM prologue
/// (kernels/contraction.hpp) both call it.
template <bool Rms, class T, class F>
FUSOR_HOST_DEVICE norm_stats<T> row_norm_stats(const F& value, index_t len, float eps) {
  const T n = T(len);
  T mean = T(0), var;
  if constexpr (Rms) {
    var = math::div(block_reduce_row<sumsq_acc<T>>(value, len).v, n);
  } else {
    // Shifted data (pivot = the row's first element): the sum of x - pivot
    // stays small for a large common offset, so the mean is accurate to
    // about half an ulp of the offset instead of the sum's rounding.
    const T pivot = len > 0 ? value(0) : T(0);
    const auto shifted = [&](index_t j) { return math::sub(value(j), pivot); };
    mean = math::add(pivot, math::div(block_reduce_row<sum_acc<T>>(shifted, len).v, n));
    const auto dev = [&](index_t j) { return math::sub(value(j), mean); };
    var = math::div(block_reduce_row<sumsq_acc<T>>(dev, len).v, n);
  }
  return {mean, math::div(T(1), math::sqrt(math::add(var, T(eps))))};
}

/// One normalized element: (x - mean) * inv [* gamma] [+ beta].
template <bool Rms, class T>
FUSOR_HOST_DEVICE T apply_norm(T x, const norm_stats<T>& s, T gamma, T beta, bool has_gamma, bool has_beta) {
  T y = math::mul(math::sub(x, s.mean), s.inv);
  if (has_gamma) y = math::mul(y, gamma);
  if constexpr (!Rms) {
    if (has_beta) y = math::add(y, beta);
  }
  return y;
}

/// layer_norm (Rms = false: two passes, mean then variance) and rms_norm.
template <int R, bool Rms, class X, class G, class B, class Out>
struct norm_rows {
  row_space<R> space;
  X x;
  G gamma;
  B beta;
  Out out;
  float eps;
  bool has_gamma, has_beta;
  using T = decltype(x.at(index_array<R>{}));
  FUSOR_HOST_DEVICE void run_row(index_t r) const {
    index_array<R> base{};
    space.set_row(r, base);
    const auto value = [&](index_t j) {
      index_array<R> idx = base;
      space.set_elem(j, idx);
      return x.at(idx);
    };
    const norm_stats<T> st = row_norm_stats<Rms, T>(value, space.len, eps);
    for (index_t j = row_lane(); j < space.len; j += row_lanes()) {
      index_array<R> idx = base;
      space.set_elem(j, idx);
      const T y = apply_norm<Rms>(x.at(idx), st, T(gamma.at(idx)), Rms ? T(0) : T(beta.at(idx)), has_gamma, has_beta);
      out.put(idx, y);
    }
  }
};

}  // namespace fusor::kernels
