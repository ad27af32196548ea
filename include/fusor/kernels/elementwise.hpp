#pragma once
/// @file kernels/elementwise.hpp
/// The elementwise kernel family: one thread per output element evaluates a
/// whole fusion group (any number of elementwise ops, several outputs) with
/// every intermediate in registers. Written once as FUSOR_HOST_DEVICE code:
/// the CUDA kernel and the host (OpenMP) executor call the same functions, so
/// host tests check the device algorithm. Plain structs, fusor::tuple
/// (core/tuple.hpp: cheap to instantiate, one per tree node) and cuda::std only
/// (no Hana: it does not support nvcc).
///
/// Three access paths, chosen at run time per launch (one kernel entry):
///  - vectorized: every operand dense, unbroadcast and aligned: N elements per
///    step through 16-byte loads/stores (N = 16 / smallest element size);
///  - contiguous: every operand dense and unbroadcast: linear index;
///  - strided: anything else (broadcasting, transposes, slices): the output
///    multi-index is decomposed once and dotted with each operand's strides.
/// All index arithmetic is 64-bit.
#include <fusor/kernels/parts/expression.hpp>

namespace fusor::kernels {

/// A fused elementwise group ready to run: sources, one expression tree per
/// output, sinks, and the output extents.
template <int R, class Sources, class Roots, class Sinks>
struct elementwise_kernel;

template <int R, class... S, class... Roots, class... O>
struct elementwise_kernel<R, fusor::tuple<S...>, fusor::tuple<Roots...>, fusor::tuple<O...>> {
  static_assert(sizeof...(Roots) == sizeof...(O));
  fusor::tuple<S...> sources;
  fusor::tuple<Roots...> roots;
  fusor::tuple<O...> sinks;
  cuda::std::array<index_t, (R > 0 ? R : 1)> extent;
  index_t size;
  access path;

  static constexpr cuda::std::size_t min_bytes = [] {
    cuda::std::size_t m = 16;
    ((m = storage_size<typename S::value_type> < m ? storage_size<typename S::value_type> : m), ...);
    ((m = storage_size<typename O::value_type> < m ? storage_size<typename O::value_type> : m), ...);
    return m;
  }();
  /// Elements per vectorized step.
  static constexpr int vector_width = int(16 / min_bytes);

  template <class T>
  static constexpr cuda::std::size_t vector_alignment = sizeof(T) * vector_width < 16 ? sizeof(T) * vector_width : 16;

  /// Evaluates every root on loaded values and stores through `store(k, value)`.
  template <class Vals, class Store, cuda::std::size_t... K>
  FUSOR_HOST_DEVICE void eval_store(const Vals& vals, Store&& store, cuda::std::index_sequence<K...>) const {
    // All roots are computed before any store, so an output may alias an
    // input exactly (in-place) without changing results.
    auto results = fusor::make_tuple(fusor::get<K>(roots).eval(vals)...);
    (store(cuda::std::integral_constant<cuda::std::size_t, K>{}, fusor::get<K>(results)), ...);
  }

  using multi_index = cuda::std::array<index_t, (R > 0 ? R : 1)>;

  /// The row-major multi-index of linear output index i.
  FUSOR_HOST_DEVICE multi_index decompose(index_t i) const {
    multi_index idx{};
    for (int d = R - 1; d >= 0; --d) {
      idx[d] = i % extent[d];
      i /= extent[d];
    }
    return idx;
  }

  /// Advances idx to the next row-major index (carry from the last dim).
  FUSOR_HOST_DEVICE void advance(multi_index& idx) const {
    for (int d = R - 1; d >= 0; --d) {
      if (++idx[d] < extent[d]) return;
      idx[d] = 0;
    }
  }

  /// Output element at multi-index idx, any strides.
  FUSOR_HOST_DEVICE void strided_at_index(const multi_index& idx) const {
    auto offset = [&](const auto& stride) {
      index_t off = 0;
      for (int d = 0; d < R; ++d) off += idx[d] * stride[d];
      return off;
    };
    auto load = [&](const auto& s) { return to_compute(s.data[offset(s.stride)]); };
    auto vals = fusor::apply([&](const auto&... s) { return fusor::make_tuple(load(s)...); }, sources);
    eval_store(vals, [&](auto k, auto v) {
      auto& o = fusor::get<decltype(k)::value>(sinks);
      o.data[offset(o.stride)] = from_compute<typename cuda::std::remove_cvref_t<decltype(o)>::value_type>(v);
    }, cuda::std::index_sequence_for<O...>{});
  }

  /// Output element at linear (row-major) index i, any strides.
  FUSOR_HOST_DEVICE void strided_at(index_t i) const { strided_at_index(decompose(i)); }

  /// Output element i when every operand is dense and unbroadcast.
  FUSOR_HOST_DEVICE void contiguous_at(index_t i) const {
    auto vals = fusor::apply([&](const auto&... s) { return fusor::make_tuple(to_compute(s.data[i])...); }, sources);
    eval_store(vals, [&](auto k, auto v) {
      auto& o = fusor::get<decltype(k)::value>(sinks);
      o.data[i] = from_compute<typename cuda::std::remove_cvref_t<decltype(o)>::value_type>(v);
    }, cuda::std::index_sequence_for<O...>{});
  }

  /// vector_width output elements from i (i a multiple of vector_width; every
  /// operand dense, unbroadcast and aligned).
  FUSOR_HOST_DEVICE void vector_at(index_t i) const {
    constexpr int N = vector_width;
    auto loaded = fusor::apply(
        [&](const auto&... s) {
          return fusor::make_tuple(
              *reinterpret_cast<const vec<typename cuda::std::remove_cvref_t<decltype(s)>::value_type, N>*>(s.data + i)...);
        },
        sources);
    fusor::tuple<vec<typename O::value_type, N>...> out{};
    FUSOR_UNROLL
    for (int lane = 0; lane < N; ++lane) {
      auto vals = fusor::apply([&](const auto&... v) { return fusor::make_tuple(to_compute(v.v[lane])...); }, loaded);
      eval_store(vals, [&](auto k, auto v) {
        auto& o = fusor::get<decltype(k)::value>(out);
        using T = cuda::std::remove_cvref_t<decltype(o.v[0])>;
        o.v[lane] = from_compute<T>(v);
      }, cuda::std::index_sequence_for<O...>{});
    }
    store_vectors(out, i, cuda::std::index_sequence_for<O...>{});
  }

  template <class Out, cuda::std::size_t... K>
  FUSOR_HOST_DEVICE void store_vectors(const Out& out, index_t i, cuda::std::index_sequence<K...>) const {
    ((*reinterpret_cast<cuda::std::remove_cvref_t<decltype(fusor::get<K>(out))>*>(fusor::get<K>(sinks).data + i) =
          fusor::get<K>(out)),
     ...);
  }

  /// Runs output elements [begin, end) with this launch's access path: the
  /// unit of work of one CUDA thread step or one host chunk. For the
  /// vectorized path, begin must be a multiple of vector_width.
  FUSOR_HOST_DEVICE void run_range(index_t begin, index_t end) const {
    if (path == access::vectorized) {
      index_t i = begin;
      for (; i + vector_width <= end; i += vector_width) vector_at(i);
      for (; i < end; ++i) contiguous_at(i);
    } else if (path == access::contiguous) {
      for (index_t i = begin; i < end; ++i) contiguous_at(i);
    } else if (begin < end) {
      // Divide once per range, then step the multi-index: a long range (a
      // host chunk) pays no per-element division.
      multi_index idx = decompose(begin);
      for (index_t i = begin; i < end; ++i) {
        strided_at_index(idx);
        advance(idx);
      }
    }
  }
};

}  // namespace fusor::kernels
