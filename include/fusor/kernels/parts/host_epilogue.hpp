#pragma once
/// @file kernels/parts/host_epilogue.hpp
/// A GEMM epilogue on host packs: the host GEMM engine (exec/host_gemm.hpp)
/// hands each problem a cache-resident block row of accumulators, and the
/// epilogue tree (bias, activation, residual, batch norm) is evaluated on W
/// of them at a time, so gelu's erf or silu's exp run as SLEEF vector calls
/// instead of once per element.
///
/// Same bits as the per-element `k_epilogue::at` (lanes are independent and
/// ops/math.hpp's packs agree with its scalars), so a fused epilogue still
/// equals the unfused elementwise kernel after the unfused GEMM.
///
/// Host only (FUSOR_HOST_PACKETS); nvcc translation units keep the
/// per-element store.
#include <fusor/core/pack.hpp>
#include <fusor/kernels/parts/rows.hpp>

#include <cstring>
#include <type_traits>

namespace fusor::kernels {

#if FUSOR_HOST_PACKETS
namespace host_epilogue_detail {
/// W elements of source s from element offset `at`, `step` elements apart
/// (1: one contiguous load, 0: one broadcast, else W gathers).
template <int W, class S>
FUSOR_HOST_INLINE auto line_pack(const S& s, index_t at, index_t step) {
  using E = typename S::value_type;
  using C = decltype(to_compute(cuda::std::declval<E>()));
  pack<C, W> p;
  const E* src = s.data + at;
  if (step == 1) {
    if constexpr (std::is_same_v<C, E>) std::memcpy(p.data(), src, sizeof(E) * W);
    else
      for (int l = 0; l < W; ++l) p.v[l] = to_compute(src[l]);
  } else if (step == 0) {
    p = pack<C, W>(to_compute(*src));
  } else {
    for (int l = 0; l < W; ++l) p.v[l] = to_compute(src[l * step]);
  }
  return p;
}

template <int W, class Ep, class Acc, std::size_t... I>
FUSOR_HOST_INLINE auto eval_pack(const Ep& ep, const index_t (&at)[sizeof...(I) + 1], const index_t (&step)[sizeof...(I) + 1],
                                 index_t c, const Acc* acc, std::index_sequence<I...>) {
  pack<Acc, W> a;
  std::memcpy(a.data(), acc + c, sizeof(Acc) * W);
  return ep.tree.eval(fusor::make_tuple(line_pack<W>(fusor::get<I>(ep.sources), at[I] + c * step[I], step[I])..., a));
}
}  // namespace host_epilogue_detail

/// Stores the epilogue `ep` (a k_epilogue of rank R) of output elements idx, idx + e_D, ..., (n elements
/// along dim D from idx) in packs of W: element c takes accumulator acc[c].
/// Returns how many it stored (a multiple of W); the caller stores the
/// remaining n % W one at a time.
template <int W, int D, int R, class Ep, class Sink, class Acc>
FUSOR_HOST_INLINE index_t store_epilogue_packs(const Ep& ep, const Sink& sink, const index_array<R>& idx, const Acc* acc,
                                               index_t n) {
  static_assert(std::is_arithmetic_v<Acc>);
  constexpr std::size_t NS = fusor::tuple_size_v<decltype(ep.sources)>;
  index_t at[NS + 1] = {}, step[NS + 1] = {};  // (+1: never a zero-size array)
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((at[I] = dot<R>(idx, fusor::get<I>(ep.sources).stride), step[I] = fusor::get<I>(ep.sources).stride[D]), ...);
  }(std::make_index_sequence<NS>{});
  using T = typename Sink::value_type;
  T* const out = sink.data + dot<R>(idx, sink.stride);
  const index_t out_step = sink.stride[D];
  index_t c = 0;
  for (; c + W <= n; c += W) {
    const auto r = host_epilogue_detail::eval_pack<W>(ep, at, step, c, acc, std::make_index_sequence<NS>{});
    using P = std::remove_cvref_t<decltype(r)>;
    if constexpr (is_pack_v<P> && std::is_same_v<typename P::value_type, T>) {
      if (out_step == 1) {
        std::memcpy(out + c, r.data(), sizeof(T) * W);
        continue;
      }
    }
    for (int l = 0; l < W; ++l) out[(c + l) * out_step] = from_compute<T>(lane_of(r, l));
  }
  return c;
}
#endif  // FUSOR_HOST_PACKETS

}  // namespace fusor::kernels
