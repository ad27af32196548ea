#pragma once
/// @file kernels/parts/host_rows.hpp
/// The row kernels on host packs (a row's lanes = 0, set by the host
/// executor): W SIMD lanes (core/pack.hpp) read W consecutive elements of a
/// row at a time, evaluating the operand's prologue tree once per pack, and
/// accumulate them; transcendental functions run as SLEEF vector calls.
///
/// Order of a reduction (host_reduce_range): a row longer than 512
/// elements is split in two, the first part the largest power of two times
/// 512 below the length, recursively, and the halves' accumulators merge
/// (pairwise summation, as NumPy's: the error grows with the log of the
/// length). A leaf of at most 512 elements is read in packs of W, pack q
/// going to pack accumulator q mod 4 (4W lanes, independent add chains);
/// the 4 merge pairwise, the remaining elements j go to lane j mod W one by
/// one, then the W lanes merge pairwise (0+1, 2+3, ..., then 0+2, ...).
/// Deterministic for a given W (the instruction set the translation unit is
/// built for, core/pack.hpp), and the same in every row kernel, so a
/// reduction fused into one kernel equals its unfused reduction kernel bit
/// for bit, as on the device twin.
///
/// Host only (FUSOR_HOST_PACKETS): nvcc translation units and the
/// host_executor::row_engine = device_twin policy keep the device's lane
/// order (kernels/parts/row_reduce.hpp).
#include <fusor/kernels/parts/rows.hpp>

#include <cstring>
#include <type_traits>
#include <utility>

namespace fusor::kernels {

/// Acc<T> as Acc<U> (an accumulator over packs of its element type).
template <class Acc, class U>
struct rebind_acc;
template <template <class> class A, class T, class U>
struct rebind_acc<A<T>, U> {
  using type = A<U>;
  using element = T;
};

/// v converted to T (a scalar, or a pack lane by lane).
template <class T>
struct to_type {
  template <class V>
  FUSOR_HOST_DEVICE_INLINE auto operator()(V v) const {
    if constexpr (is_pack_v<V>) return to_lanes<T, V::lanes>(v);
    else return T(v);
  }
};

#if FUSOR_HOST_PACKETS
template <class F>
inline constexpr bool is_row_reader_v = false;
template <int R, class X, class F>
inline constexpr bool is_row_reader_v<row_reader<R, X, F>> = true;

namespace host_rows_detail {
/// Elements j .. j + W - 1 of a row of source s (see operand_pack).
template <int W, int R, class S>
FUSOR_HOST_INLINE auto source_pack(const S& s, bool unit, bool constant, const row_space<R>& space,
                                   const index_array<R>& row, index_t j) {
  using E = typename S::value_type;
  using C = decltype(to_compute(cuda::std::declval<E>()));
  pack<C, W> p;
  const index_t base = dot<R>(row, s.stride);
  if (unit) {
    const E* src = s.data + base + j;
    if constexpr (std::is_same_v<C, E>) std::memcpy(p.data(), src, sizeof(E) * W);
    else
      for (int l = 0; l < W; ++l) p.v[l] = to_compute(src[l]);
  } else if (constant) {
    p = pack<C, W>(to_compute(s.data[base]));
  } else {
    for (int l = 0; l < W; ++l) {
      index_array<R> idx = row;
      space.set_elem(j + l, idx);
      p.v[l] = to_compute(s.data[dot<R>(idx, s.stride)]);
    }
  }
  return p;
}

/// f applied to a pack: in one call when f takes packs, else per lane.
template <class F, class P>
FUSOR_HOST_INLINE auto apply_to_pack(const F& f, const P& p) {
  if constexpr (std::is_same_v<F, identity_value>) return p;
  else if constexpr (std::is_invocable_v<const F&, const P&>) return f(p);
  else return lanewise(f, p);
}
}  // namespace host_rows_detail

/// Elements j .. j + W - 1 of row `row` of operand x as a pack: W
/// consecutive loads from a source that is contiguous along the row, a
/// broadcast from one that is constant along it, W gathers from any other;
/// the operand's tree is evaluated once, on the packs.
namespace host_rows_detail {
// (a function, not a lambda: lambdas are not always_inline, and a call per
// pack costs more than the pack's arithmetic)
template <int W, int R, class X, std::size_t... I>
FUSOR_HOST_INLINE auto operand_pack(const X& x, const row_space<R>& space, const index_array<R>& row, index_t j,
                                    std::index_sequence<I...>) {
  (void)space, (void)row, (void)j;  // (no sources: a tree of scalars)
  return to_lanes<typename X::value_type, W>(x.tree.eval(
      fusor::make_tuple(source_pack<W>(fusor::get<I>(x.sources), x.row_unit[I], x.row_constant[I], space, row, j)...)));
}
}  // namespace host_rows_detail
template <int W, int R, class X>
FUSOR_HOST_INLINE auto operand_pack(const X& x, const row_space<R>& space, const index_array<R>& row, index_t j) {
  return host_rows_detail::operand_pack<W>(x, space, row, j, std::make_index_sequence<std::size_t(X::nsources)>{});
}

namespace host_rows_detail {
/// Lanes [0, n) of source s from index `at` along dim `dim` (see run_pack).
template <int W, int R, class S>
FUSOR_HOST_INLINE auto source_run_pack(const S& s, const index_array<R>& at, int dim, int n) {
  using E = typename S::value_type;
  using C = decltype(to_compute(cuda::std::declval<E>()));
  const index_t base = dot<R>(at, s.stride), step = s.stride[dim];
  if (step == 0) return pack<C, W>(to_compute(s.data[base]));
  pack<C, W> p;
  if (step == 1 && n == W && std::is_same_v<C, E>) {
    std::memcpy(p.data(), s.data + base, sizeof(E) * W);
  } else {
    for (int l = 0; l < W; ++l) p.v[l] = to_compute(s.data[base + index_t(l < n ? l : n - 1) * step]);
  }
  return p;
}
template <int W, int R, class X, std::size_t... I>
FUSOR_HOST_INLINE auto run_pack(const X& x, const index_array<R>& at, int dim, int n, std::index_sequence<I...>) {
  (void)at, (void)dim, (void)n;  // (no sources: a tree of scalars)
  return to_lanes<typename X::value_type, W>(
      x.tree.eval(fusor::make_tuple(source_run_pack<W, R>(fusor::get<I>(x.sources), at, dim, n)...)));
}
}  // namespace host_rows_detail
/// Operand x at indices at, at + e_dim, ..., at + (n - 1) e_dim (n <= W;
/// lanes past n repeat lane n - 1) as a pack: each source loaded from its
/// offset at `at` stepping by its stride along dim (consecutive loads for
/// a unit stride, one broadcast load for stride 0), the tree evaluated
/// once on the packs; lane l is x.at(at + l e_dim) bit for bit.
template <int W, int R, class X>
FUSOR_HOST_INLINE auto run_pack(const X& x, const index_array<R>& at, int dim, int n) {
  return host_rows_detail::run_pack<W, R>(x, at, dim, n, std::make_index_sequence<std::size_t(X::nsources)>{});
}

/// Elements j .. j + W - 1 of a row reader's row (or of any callable
/// value(j)) as a pack.
template <int W, class F>
FUSOR_HOST_INLINE auto load_row_pack(const F& value, index_t j) {
  if constexpr (is_row_reader_v<F>) {
    return host_rows_detail::apply_to_pack(value.f, operand_pack<W>(*value.x, *value.space, value.row, value.begin + j));
  } else {
    pack<decltype(value(j)), W> p;
    for (int l = 0; l < W; ++l) p.v[l] = value(j + l);
    return p;
  }
}

/// The row's last n < W elements from j as a pack (lanes n .. W - 1 repeat
/// element j + n - 1).
template <int W, class F>
FUSOR_HOST_INLINE auto load_row_pack_tail(const F& value, index_t j, int n) {
  pack<decltype(value(j)), W> p;
  for (int l = 0; l < W; ++l) p.v[l] = value(j + (l < n ? l : n - 1));
  return p;
}

/// Elements per leaf of host_reduce_row's pairwise tree (a power of two).
inline constexpr index_t host_row_leaf = 512;
/// Pack accumulators per leaf: 4 * W lanes, independent add chains.
inline constexpr int host_row_accumulators = 4;

namespace host_rows_detail {
/// Packs j0 + k W (k < n, k among K...) pushed into accumulator k.
template <class E, int W, class PA, class F, int... K>
FUSOR_HOST_INLINE void push_packs(PA* pa, const F& value, index_t j0, int n, std::integer_sequence<int, K...>) {
  ((K < n ? pa[K].push(to_lanes<E, W>(load_row_pack<W>(value, j0 + index_t(K) * W))) : void()), ...);
}
}  // namespace host_rows_detail

/// The accumulator of elements [begin, end) of a row (see host_reduce_row).
template <class Acc, class F>
Acc host_reduce_range(const F& value, index_t begin, index_t end) {
  constexpr int W = host_pack_lanes, K = host_row_accumulators;
  if (end - begin > host_row_leaf) {
    // halves, the first a multiple of the leaf size: a pairwise tree
    index_t half = host_row_leaf;
    while (2 * half < end - begin) half *= 2;
    return Acc::merge(host_reduce_range<Acc>(value, begin, begin + half), host_reduce_range<Acc>(value, begin + half, end));
  }
  using E = typename rebind_acc<Acc, float>::element;
  using PackAcc = typename rebind_acc<Acc, pack<E, W>>::type;
  PackAcc pa[K];
  for (int k = 0; k < K; ++k) pa[k] = PackAcc::identity();
  const index_t packs = (end - begin) / W;
  // pack q to accumulator q mod K, the K indices constant (the accumulators
  // stay in registers; no lambdas here: they are not always inlined)
  index_t q = 0;
  for (; q + K <= packs; q += K)
    host_rows_detail::push_packs<E, W>(pa, value, begin + q * W, K, std::make_integer_sequence<int, K>{});
  host_rows_detail::push_packs<E, W>(pa, value, begin + q * W, int(packs - q), std::make_integer_sequence<int, K - 1>{});
  for (int s = 1; s < K; s *= 2)
    for (int t = 0; t + s < K; t += 2 * s) pa[t] = PackAcc::merge(pa[t], pa[t + s]);
  Acc part[W];
  for (int l = 0; l < W; ++l) part[l] = pa[0].lane(l);
  for (index_t j = begin + packs * W; j < end; ++j) part[(j - begin) % W].push(E(value(j)));
  for (int s = 1; s < W; s *= 2)
    for (int t = 0; t + s < W; t += 2 * s) part[t] = Acc::merge(part[t], part[t + s]);
  return part[0];
}

/// The row's accumulator Acc over its len elements value(0 .. len - 1), in
/// the order of the file comment.
template <class Acc, class F>
Acc host_reduce_row(const F& value, index_t len) {
  return host_reduce_range<Acc>(value, 0, len);
}

/// Stores lanes [0, n) of y as elements j .. j + n - 1 of row `row` of out:
/// one contiguous store where out is a plain row output with unit stride
/// along the row, one element at a time otherwise.
template <int W, int R, class Out, class P>
FUSOR_HOST_INLINE void store_row_pack(const Out& out, const row_space<R>& space, const index_array<R>& row, index_t j,
                                      const P& y, int n) {
  if constexpr (requires { out.sink; } && !requires { out.ep; }) {
    using T = typename decltype(out.sink)::value_type;
    if (space.nred == 1 && out.sink.stride[space.red[0]] == 1) {
      T* dst = out.sink.data + dot<R>(row, out.sink.stride) + j;
      if constexpr (std::is_same_v<T, typename P::value_type>) {
        if (n == W) {
          std::memcpy(dst, y.data(), sizeof(T) * W);
          return;
        }
      }
      for (int l = 0; l < n; ++l) dst[l] = from_compute<T>(y.v[l]);
      return;
    }
  }
  for (int l = 0; l < n; ++l) {
    index_array<R> idx = row;
    space.set_elem(j + l, idx);
    out.put(idx, lane_of(y, l));
  }
}
#endif  // FUSOR_HOST_PACKETS

}  // namespace fusor::kernels
