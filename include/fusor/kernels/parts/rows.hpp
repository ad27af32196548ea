#pragma once
/// @file kernels/parts/rows.hpp
/// Row decomposition, operands (k_operand: an elementwise tree over its
/// sources), row readers and outputs, and the row accumulators: shared by
/// the row-reduction, contraction (norm prologue) and attention families.
/// How a row's lanes reduce it: kernels/parts/row_reduce.hpp.
#include <fusor/kernels/parts/expression.hpp>
#include <fusor/kernels/tuning/rows.hpp>
#include <fusor/ops/reduction.hpp>

#include <cuda/std/limits>

namespace fusor::kernels {

// Block size and lanes (reduce_block, warp_lanes, warp_row_max):
// kernels/tuning/rows.hpp.
/// Lanes that reduce a row of `len` elements: a warp for short rows, the
/// whole block for long ones (the host twin accumulates in as many lanes).
FUSOR_HOST_DEVICE constexpr int row_lanes_for(index_t len) { return len <= warp_row_max ? warp_lanes : reduce_block; }

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
  int lanes = reduce_block;  ///< lanes per row: row_lanes_for(len)

  FUSOR_HOST_DEVICE void set_row(index_t r, index_array<R>& idx) const {
    for (int k = nkept - 1; k >= 0; --k) {
      const int d = kept[k];
      idx[d] = r % extent[d];
      r /= extent[d];
    }
  }
  FUSOR_HOST_DEVICE void set_elem(index_t j, index_array<R>& idx) const {
    if (nred == 1) {  // the common case (one reduced dim, j < its extent): no division
      idx[red[0]] = j;
      return;
    }
    for (int k = nred - 1; k >= 0; --k) {
      const int d = red[k];
      idx[d] = j % extent[d];
      j /= extent[d];
    }
  }
};

/// One operand of a row kernel: an elementwise tree over its own sources
/// (strides broadcast to the input's rank), evaluated at an input index.
/// Elements per vector read of the row kernels (16 bytes of f32, 8 of f16).
inline constexpr int row_vec = 4;

template <int R, class Sources, class Tree>
struct k_operand {
  static constexpr int rank = R;
  static constexpr int nsources = int(fusor::tuple_size_v<Sources>);
  Sources sources;
  Tree tree;
  /// Vector reads allowed (set by the binder, exec::enable_row_vectors): every
  /// source is contiguous along the row (row_unit) or constant along it, and
  /// each contiguous one is aligned for a row_vec-element vector at every
  /// row start.
  bool vector_rows = false;
  cuda::std::array<bool, (nsources > 0 ? nsources : 1)> row_unit{};
  /// Sources constant along the row (stride 0 on every reduced dim): one
  /// load per pack on the host (kernels/parts/host_rows.hpp).
  cuda::std::array<bool, (nsources > 0 ? nsources : 1)> row_constant{};

  FUSOR_HOST_DEVICE auto at(const index_array<R>& idx) const {
    auto vals = fusor::apply(
        [&](const auto&... s) { return fusor::make_tuple(to_compute(s.data[dot<R>(idx, s.stride)])...); }, sources);
    return tree.eval(vals);
  }
  using value_type = decltype(cuda::std::declval<const k_operand&>().at(index_array<R>{}));

  /// Elements j .. j + row_vec - 1 of the row that starts at index `row`
  /// (only when vector_rows; j a multiple of row_vec): one vector load per source.
  FUSOR_HOST_DEVICE void at_vec(const index_array<R>& row, index_t j, value_type (&out)[row_vec]) const {
    at_vec_impl(row, j, out, cuda::std::make_index_sequence<cuda::std::size_t(nsources)>{});
  }

 private:
  template <class S>
  FUSOR_HOST_DEVICE static vec<typename S::value_type, row_vec> load(const S& s, bool unit, index_t off) {
    using E = typename S::value_type;
    vec<E, row_vec> v;
    if (unit) {
      v = *reinterpret_cast<const vec<E, row_vec>*>(s.data + off);
    } else {
      for (int k = 0; k < row_vec; ++k) v.v[k] = s.data[off];
    }
    return v;
  }
  template <cuda::std::size_t... I>
  FUSOR_HOST_DEVICE void at_vec_impl(const index_array<R>& row, index_t j, value_type (&out)[row_vec],
                                     cuda::std::index_sequence<I...>) const {
    const auto loaded = fusor::make_tuple(
        load(fusor::get<I>(sources), row_unit[I], dot<R>(row, fusor::get<I>(sources).stride) + (row_unit[I] ? j : 0))...);
    for (int k = 0; k < row_vec; ++k)
      out[k] = tree.eval(fusor::make_tuple(to_compute(fusor::get<I>(loaded).v[k])...));
  }
};

/// Element j of a row (one row of operand X, from element `begin` on), and
/// with X::vector_rows vectors of row_vec elements, each value passed through F:
/// what the accumulation passes of the row kernels read.
template <int R, class X, class F>
struct row_reader {
  const X* x;
  const row_space<R>* space;
  index_array<R> row;  ///< the row's index, reduced dims 0
  index_t begin;
  F f;
  using value_type = decltype(cuda::std::declval<const F&>()(cuda::std::declval<typename X::value_type>()));
  FUSOR_HOST_DEVICE bool vec() const { return x->vector_rows && begin % row_vec == 0; }
  FUSOR_HOST_DEVICE value_type operator()(index_t j) const {
    index_array<R> idx = row;
    space->set_elem(begin + j, idx);
    return f(x->at(idx));
  }
  FUSOR_HOST_DEVICE void load(index_t j, value_type (&out)[row_vec]) const {
    typename X::value_type v[row_vec];
    x->at_vec(row, begin + j, v);
    for (int k = 0; k < row_vec; ++k) out[k] = f(v[k]);
  }
  /// The same row with g applied after f.
  template <class G>
  FUSOR_HOST_DEVICE auto then(G g) const {
    auto h = [f = f, g](auto v) FUSOR_LAMBDA_INLINE { return g(f(v)); };
    return row_reader<R, X, decltype(h)>{x, space, row, begin, h};
  }
};
struct identity_value {
  template <class T>
  FUSOR_HOST_DEVICE T operator()(T v) const { return v; }
};
/// value with g applied to each element: a row_reader stays one (it keeps
/// its vector reads), any other callable is wrapped.
template <class F, class G>
FUSOR_HOST_DEVICE auto map_row(const F& value, G g) {
  if constexpr (requires { value.then(g); }) return value.then(g);
  else return [&value, g](index_t j) { return g(value(j)); };
}

/// The reader of row `row` of operand x from element `begin`.
template <int R, class X>
FUSOR_HOST_DEVICE row_reader<R, X, identity_value> read_row(const X& x, const row_space<R>& space, const index_array<R>& row,
                                                          index_t begin = 0) {
  return {&x, &space, row, begin, {}};
}


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
// (value-only accumulators: ops/reducers.hpp)
using reducers::highest_value;
using reducers::lowest_value;
using reducers::lse_acc;
using reducers::max_acc;
using reducers::min_acc;
using reducers::sum_acc;
using reducers::sumsq_acc;

/// Welford's running (count, mean, sum of squared deviations) with Chan,
/// Golub & LeVeque's pairwise merge (1979): the layer_norm statistics in one
/// pass, accurate for a large common offset AND for an outlier anywhere in
/// the row (a shift by the first element is not: an outlier first loses the
/// rest of the row).
template <class T>
struct welford_acc {
  index_t n;  ///< (one count for every lane of a pack: lanes push together)
  T mean, m2;
  FUSOR_HOST_DEVICE static welford_acc identity() { return {0, T(0), T(0)}; }
  FUSOR_HOST_DEVICE void push(T x) {
    ++n;
    const T d = math::sub(x, mean);
    if constexpr (is_pack_v<T>) {  // (the same per lane, with selects)
      const auto of = overflowed(d, x, mean);
      const T h = math::sub(math::mul(x, T(0.5)), math::mul(mean, T(0.5)));
      const T next = math::select(of, math::add(mean, math::mul(math::div(h, T(n)), T(2))), math::add(mean, math::div(d, T(n))));
      m2 = math::select(of, math::add(m2, math::mul(d, d)), math::add(m2, math::mul(d, math::sub(x, next))));
      mean = next;
      return;
    } else {
      if (overflowed(d, x, mean)) {
        // x - mean overflowed although both are finite (|x|, |mean| near
        // FLT_MAX, opposite signs): step by half the difference, which cannot
        // overflow, so the mean stays finite where the written form's does
        // (issue 24: [3e38, -3e38, ...] gave NaN). m2 is inf then, as the
        // written form's variance is.
        const T h = math::sub(math::mul(x, T(0.5)), math::mul(mean, T(0.5)));
        mean = math::add(mean, math::mul(math::div(h, T(n)), T(2)));
        m2 = math::add(m2, math::mul(d, d));
        return;
      }
      mean = math::add(mean, math::div(d, T(n)));
      m2 = math::add(m2, math::mul(d, math::sub(x, mean)));
    }
  }
  FUSOR_HOST_DEVICE static welford_acc merge(welford_acc a, welford_acc b) {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const index_t n = a.n + b.n;
    const T d = math::sub(b.mean, a.mean), wb = math::div(T(b.n), T(n));
    if constexpr (is_pack_v<T>) {
      const T wa = math::div(T(a.n), T(n));
      const auto of = overflowed(d, b.mean, a.mean);
      return {n, math::select(of, math::add(math::mul(a.mean, wa), math::mul(b.mean, wb)), math::add(a.mean, math::mul(d, wb))),
              math::select(of, math::add(math::add(a.m2, b.m2), math::mul(d, d)),
                           math::add(math::add(a.m2, b.m2), math::mul(math::mul(d, d), math::mul(T(a.n), wb))))};
    } else {
      if (overflowed(d, b.mean, a.mean)) {
        // (as in push: the weighted average of two finite means is finite)
        const T wa = math::div(T(a.n), T(n));
        return {n, math::add(math::mul(a.mean, wa), math::mul(b.mean, wb)), math::add(math::add(a.m2, b.m2), math::mul(d, d))};
      }
      return {n, math::add(a.mean, math::mul(d, wb)),
              math::add(math::add(a.m2, b.m2), math::mul(math::mul(d, d), math::mul(T(a.n), wb)))};
    }
  }
  welford_acc<scalar_of_t<T>> lane(int l) const { return {n, lane_of(mean, l), lane_of(m2, l)}; }

 private:
  /// d = x - y is not finite while x and y are (v - v == 0 exactly for finite v).
  FUSOR_HOST_DEVICE static auto overflowed(T d, T x, T y) {
    return !(math::sub(d, d) == T(0)) && math::sub(x, x) == T(0) && math::sub(y, y) == T(0);
  }
};

/// Sums of d and d^2 (deviations from an estimate of the mean): the
/// correction pass of layer_norm's statistics.
template <class T>
struct moments_acc {
  T s1, s2;
  FUSOR_HOST_DEVICE static moments_acc identity() { return {T(-0.0), T(-0.0)}; }
  FUSOR_HOST_DEVICE void push(T d) {
    s1 = math::add(s1, d);
    s2 = math::add(s2, math::mul(d, d));
  }
  FUSOR_HOST_DEVICE static moments_acc merge(moments_acc a, moments_acc b) {
    return {math::add(a.s1, b.s1), math::add(a.s2, b.s2)};
  }
  moments_acc<scalar_of_t<T>> lane(int l) const { return {lane_of(s1, l), lane_of(s2, l)}; }
};

/// The type a row kernel computes in for operand values of type In: In for
/// floating types (f16/bf16 operands are read as f32 already), else f32 when
/// the op's result is floating (mean, l2, logsumexp, softmax, norms of
/// integer inputs), else In.
template <class In, bool Floating>
using row_compute_t = cuda::std::conditional_t<Floating && !cuda::std::is_floating_point_v<In>, float, In>;

}  // namespace fusor::kernels
