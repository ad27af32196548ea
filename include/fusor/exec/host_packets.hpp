#pragma once
/// @file exec/host_packets.hpp
/// The host's inner loop for the elementwise family: the group's expression
/// trees evaluated on packs of W elements (core/pack.hpp), so every op runs
/// as SIMD instructions (transcendental ones through SLEEF's vector
/// functions, ops/math.hpp) instead of once per element.
///
/// Same values as the one-element-per-thread algorithm of the device
/// (kernels/elementwise.hpp), bit for bit: lanes are independent and each
/// lane computes what the scalar code computes (ops/math.hpp's packs agree
/// with its scalars). Each pack's sources are loaded and all its outputs
/// computed before any store, as kernels/elementwise.hpp does per element,
/// so an output may alias an input exactly (in place).
///
/// Access: contiguous operands (the kernel's contiguous and vectorized
/// paths) load W consecutive elements; any other layout (broadcasts,
/// transposes, slices) walks runs along the last dim: per run one dot of the
/// multi-index with each operand's strides, then a unit-stride operand loads
/// W consecutive elements, a stride-0 one (a per-channel parameter) one
/// element for all lanes, any other gathers base + j * stride; a last dim
/// shorter than W gathers each lane through its multi-index, stepped once
/// per element (no division). A tail shorter than W repeats its last
/// element in the unused lanes and stores only the lanes it has.
///
/// nvcc translation units keep the per-element loop on the host (the same
/// bits; nvcc's front end is not asked to compile the packs).
#include <fusor/kernels/elementwise.hpp>

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace fusor::exec {

namespace host_packets_detail {

template <class S>
using compute_of_t = decltype(to_compute(cuda::std::declval<typename S::value_type>()));

/// Lanes [0, n) of source s at element offsets off[l] (l >= n repeat lane n - 1).
template <int W, class S>
FUSOR_HOST_INLINE pack<compute_of_t<S>, W> gather(const S& s, const index_t (&off)[W]) {
  pack<compute_of_t<S>, W> p;
  for (int l = 0; l < W; ++l) p.v[l] = to_compute(s.data[off[l]]);
  return p;
}

/// W consecutive elements of s from element i.
template <int W, class S>
FUSOR_HOST_INLINE pack<compute_of_t<S>, W> load(const S& s, index_t i) {
  using C = compute_of_t<S>;
  pack<C, W> p;
  const auto* src = s.data + i;
  if constexpr (std::is_same_v<C, typename S::value_type>) std::memcpy(p.data(), src, sizeof(C) * W);
  else for (int l = 0; l < W; ++l) p.v[l] = to_compute(src[l]);
  return p;
}

/// Lanes [0, n) of r (a pack or a scalar, broadcast) stored as T at dst.
template <class T, int W, class X>
FUSOR_HOST_INLINE void store(T* dst, const X& r, int n) {
  if constexpr (is_pack_v<X> && std::is_same_v<typename X::value_type, T>) {
    if (n == W) {
      std::memcpy(dst, r.data(), sizeof(T) * W);
      return;
    }
  }
  for (int l = 0; l < n; ++l) dst[l] = from_compute<T>(kernels::lane_of(r, l));
}

}  // namespace host_packets_detail

/// Runs output elements [begin, end) of elementwise kernel k on packs of W
/// lanes (see file comment). begin need not be aligned.
template <int W, int R, class... S, class... Roots, class... O>
void run_packets(const kernels::elementwise_kernel<R, fusor::tuple<S...>, fusor::tuple<Roots...>, fusor::tuple<O...>>& k,
                 index_t begin, index_t end) {
  namespace d = host_packets_detail;
  constexpr std::size_t NO = sizeof...(O);
  // Computes every root on the loaded values, then stores lanes [0, n) of
  // each output: W consecutive elements from `base` when `dense`, else at
  // offsets out_off[K][l].
  const auto eval_store = [&](const auto& vals, int n, bool dense, index_t base, const index_t (*out_off)[W]) {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      const auto results = fusor::make_tuple(fusor::get<K>(k.roots).eval(vals)...);
      (
          [&] {
            const auto& o = fusor::get<K>(k.sinks);
            using T = typename std::remove_cvref_t<decltype(o)>::value_type;
            const auto& r = fusor::get<K>(results);
            if (dense) {
              d::store<T, W>(o.data + base, r, n);
            } else {
              for (int l = 0; l < n; ++l) o.data[out_off[K][l]] = from_compute<T>(kernels::lane_of(r, l));
            }
          }(),
          ...);
    }(std::make_index_sequence<NO>{});
  };

  if (k.path != kernels::access::strided) {
    index_t i = begin;
    for (; i + W <= end; i += W) {
      const auto vals = fusor::apply([&](const auto&... s) { return fusor::make_tuple(d::load<W>(s, i)...); }, k.sources);
      eval_store(vals, W, true, i, nullptr);
    }
    if (i < end) {
      const int n = int(end - i);
      index_t off[W];
      for (int l = 0; l < W; ++l) off[l] = i + std::min(l, n - 1);
      const auto vals = fusor::apply([&](const auto&... s) { return fusor::make_tuple(d::gather<W>(s, off)...); }, k.sources);
      eval_store(vals, n, true, i, nullptr);
    }
    return;
  }

  // Strided: the range in runs along the last dim (a run ends where the
  // last index wraps). Within a run an operand's offsets step by its last
  // stride: unit stride loads W consecutive elements, stride 0 (a broadcast
  // such as a per-channel parameter) one element for all lanes, any other
  // stride gathers base + j * stride; only the run's first index is dotted
  // with the strides. Runs shorter than W (a last dim of a few elements)
  // take each lane's multi-index, stepped without division.
  using multi_index = typename std::remove_cvref_t<decltype(k)>::multi_index;
  const index_t row_len = R > 0 ? k.extent[R > 0 ? R - 1 : 0] : 1;
  multi_index idx = k.decompose(begin);
  if (R > 0 && row_len >= W) {
    constexpr int last = R > 0 ? R - 1 : 0;
    const auto dot = [&](const auto& stride) {
      index_t o = 0;
      for (int dd = 0; dd < R; ++dd) o += idx[dd] * stride[dd];
      return o;
    };
    for (index_t i = begin; i < end;) {
      const index_t run = std::min<index_t>(row_len - idx[last], end - i);
      index_t src_base[sizeof...(S) > 0 ? sizeof...(S) : 1]{}, out_base[NO]{};
      [&]<std::size_t... J>(std::index_sequence<J...>) {
        ((src_base[J] = dot(fusor::get<J>(k.sources).stride)), ...);
      }(std::make_index_sequence<sizeof...(S)>{});
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        ((out_base[K] = dot(fusor::get<K>(k.sinks).stride)), ...);
      }(std::make_index_sequence<NO>{});
      for (index_t j = 0; j < run; j += W) {
        const int n = int(std::min<index_t>(W, run - j));
        const auto vals = [&]<std::size_t... J>(std::index_sequence<J...>) {
          const auto one = [&](const auto& src, index_t base) {
            const index_t step = src.stride[last];
            using C = d::compute_of_t<std::remove_cvref_t<decltype(src)>>;
            if (step == 0) return pack<C, W>(to_compute(src.data[base]));
            if (step == 1 && n == W) return d::load<W>(src, base + j);
            index_t off[W];
            for (int l = 0; l < W; ++l) off[l] = base + (j + std::min(l, n - 1)) * step;
            return d::gather<W>(src, off);
          };
          return fusor::make_tuple(one(fusor::get<J>(k.sources), src_base[J])...);
        }(std::make_index_sequence<sizeof...(S)>{});
        bool dense = true;
        index_t out_off[NO][W];
        [&]<std::size_t... K>(std::index_sequence<K...>) {
          (
              [&] {
                const index_t step = fusor::get<K>(k.sinks).stride[last];
                dense = dense && step == 1 && out_base[K] == out_base[0];
                for (int l = 0; l < W; ++l) out_off[K][l] = out_base[K] + (j + l) * step;
              }(),
              ...);
        }(std::make_index_sequence<NO>{});
        eval_store(vals, n, dense, out_base[0] + j, out_off);
      }
      i += run;
      idx[last] += run - 1;
      k.advance(idx);
    }
    return;
  }
  const auto offsets = [](const multi_index (&lanes)[W], const auto& stride, index_t (&off)[W]) {
    for (int l = 0; l < W; ++l) {
      index_t o = 0;
      for (int dd = 0; dd < R; ++dd) o += lanes[l][dd] * stride[dd];
      off[l] = o;
    }
  };
  multi_index lanes[W];
  index_t out_off[NO][W];
  for (index_t i = begin; i < end; i += W) {
    const int n = int(std::min<index_t>(W, end - i));
    for (int l = 0; l < n; ++l) {
      lanes[l] = idx;
      k.advance(idx);
    }
    for (int l = n; l < W; ++l) lanes[l] = lanes[n - 1];
    const auto vals = fusor::apply(
        [&](const auto&... s) {
          const auto one = [&](const auto& src) {
            index_t off[W];
            offsets(lanes, src.stride, off);
            return d::gather<W>(src, off);
          };
          return fusor::make_tuple(one(s)...);
        },
        k.sources);
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (offsets(lanes, fusor::get<K>(k.sinks).stride, out_off[K]), ...);
    }(std::make_index_sequence<NO>{});
    eval_store(vals, n, false, 0, out_off);
  }
}

/// Runs elements [begin, end) of the elementwise kernel k on the host: packs
/// in host translation units, the device's per-element loop under nvcc.
template <class K>
void run_host_range(const K& k, index_t begin, index_t end) {
#if FUSOR_HOST_PACKETS
  run_packets<host_pack_lanes>(k, begin, end);
#else
  k.run_range(begin, end);
#endif
}

}  // namespace fusor::exec
