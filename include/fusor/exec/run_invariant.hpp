#pragma once
/// @file exec/run_invariant.hpp
/// Loop-invariant code motion for the host's strided elementwise loop
/// (exec/host_packets.hpp): the subtrees of a kernel's expression trees that
/// read only sources constant along a run (stride 0 on the last dim: a
/// per-channel parameter of an NCHW tensor, a scalar) are evaluated once per
/// run instead of once per pack of W elements.
///
/// Which sources are constant along a run is known from their static
/// extents (kernels::k_source's run_invariant flag, set by exec/bind.hpp for
/// a view whose last extent is a static 1, as batch_norm's [C, 1, 1]
/// parameters are). A hoisted subtree is evaluated on scalars (the sources'
/// values at the run's first element) and broadcast to a pack; every lane of
/// a pack computes what the scalar code computes (core/pack.hpp), so the
/// values are the same bit for bit as evaluating the subtree per pack.
///
/// The same machinery, with the row mask, hoists subtrees that read only
/// sources constant along every dim but the last (NHWC's per-channel
/// parameters): evaluated once per position along the last dim, on packs,
/// into a buffer that each run reads.
///
/// The m-th hoisted subtree becomes the leaf k_input<N + m> (N: the kernel's
/// source count, then the run-hoisted count), read from the values tuple the
/// loop builds.
#include <fusor/kernels/parts/expression.hpp>

#include <cstdint>
#include <tuple>
#include <type_traits>

namespace fusor::exec::run_invariant {

/// Is tree T constant along a run when the sources in Mask (bit K: source K)
/// are? Leaves other than inputs and scalars (a contraction's accumulator)
/// are not.
template <class T, std::uint64_t Mask>
inline constexpr bool invariant_v = false;
template <int K, std::uint64_t Mask>
inline constexpr bool invariant_v<kernels::k_input<K>, Mask> = K < 64 && ((Mask >> (K % 64)) & 1u) != 0;
template <class V, std::uint64_t Mask>
inline constexpr bool invariant_v<kernels::k_scalar<V>, Mask> = true;
template <class Op, class R, class O, class... Kids, std::uint64_t Mask>
inline constexpr bool invariant_v<kernels::k_node<Op, R, O, Kids...>, Mask> =
    sizeof...(Kids) > 0 && (invariant_v<Kids, Mask> && ...);

/// Is T an op node worth evaluating once per run: invariant, with a number
/// result (a bool would be a lane mask on packs, not a broadcast pack).
template <class T, std::uint64_t Mask>
inline constexpr bool hoisted_v = false;
template <class Op, class R, class O, class... Kids, std::uint64_t Mask>
inline constexpr bool hoisted_v<kernels::k_node<Op, R, O, Kids...>, Mask> =
    invariant_v<kernels::k_node<Op, R, O, Kids...>, Mask> && std::is_arithmetic_v<R> && !std::is_same_v<R, bool>;

/// Number of maximal hoisted subtrees in T.
template <class T, std::uint64_t Mask>
inline constexpr int count_v = 0;
template <class Op, class R, class O, class... Kids, std::uint64_t Mask>
inline constexpr int count_v<kernels::k_node<Op, R, O, Kids...>, Mask> =
    hoisted_v<kernels::k_node<Op, R, O, Kids...>, Mask> ? 1 : (0 + ... + count_v<Kids, Mask>);
template <class... T, std::uint64_t Mask>
inline constexpr int count_v<fusor::tuple<T...>, Mask> = (0 + ... + count_v<T, Mask>);

template <std::uint64_t Mask, int N, class... T>
auto rewrite_each(const fusor::tuple<T...>& items);

/// Op node Node with its kids replaced by the types of NewKids.
template <class Node, class NewKids>
struct with_kids;
template <class Op, class R, class O, class... Kids, class... New>
struct with_kids<kernels::k_node<Op, R, O, Kids...>, fusor::tuple<New...>> {
  using type = kernels::k_node<Op, R, O, New...>;
};

/// t with its maximal hoisted subtrees replaced by k_input<N>, k_input<N + 1>, ...
/// in left-to-right order.
template <std::uint64_t Mask, int N, class T>
auto rewrite(const T& t) {
  if constexpr (hoisted_v<T, Mask>) {
    return kernels::k_input<N>{};
  } else if constexpr (count_v<T, Mask> == 0) {
    return t;
  } else {
    auto kids = rewrite_each<Mask, N>(t.kids);
    return typename with_kids<T, decltype(kids)>::type{t.op, kids};
  }
}

/// Each item of a fusor::tuple of trees (an op node's kids, or a kernel's
/// roots) rewritten, item i numbering its hoisted subtrees after those of
/// items 0 .. i - 1.
template <std::uint64_t Mask, int N, class... T>
auto rewrite_each(const fusor::tuple<T...>& items) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    constexpr int counts[] = {count_v<T, Mask>..., 0};
    constexpr auto before = [counts](std::size_t i) {
      int s = 0;
      for (std::size_t j = 0; j < i; ++j) s += counts[j];
      return s;
    };
    return fusor::make_tuple(rewrite<Mask, N + before(I)>(fusor::get<I>(items))...);
  }(std::index_sequence_for<T...>{});
}

/// The roots of a kernel (a fusor::tuple of trees), rewritten with the
/// hoisted subtrees numbered from N, root by root.
template <std::uint64_t Mask, int N, class... T>
auto rewrite_roots(const fusor::tuple<T...>& roots) {
  return rewrite_each<Mask, N>(roots);
}

/// The maximal hoisted subtrees of t, in the order rewrite numbers them (a
/// std::tuple of trees).
template <std::uint64_t Mask, class T>
auto collect(const T& t) {
  if constexpr (hoisted_v<T, Mask>) {
    return std::tuple<T>(t);
  } else if constexpr (count_v<T, Mask> == 0) {
    return std::tuple<>();
  } else if constexpr (is_tuple_v<T>) {
    return fusor::apply([](const auto&... r) { return std::tuple_cat(collect<Mask>(r)...); }, t);
  } else {
    return fusor::apply([](const auto&... k) { return std::tuple_cat(collect<Mask>(k)...); }, t.kids);
  }
}

/// The mask with bit j set for each true flags[j] (j < 64: sources past
/// the 64th are never hoisted). flags ends with one extra false, so that an
/// empty source list still spells an array.
template <std::size_t N>
constexpr std::uint64_t mask_of(const bool (&flags)[N]) {
  std::uint64_t m = 0;
  for (std::size_t j = 0; j < N && j < 64; ++j)
    if (flags[j]) m |= std::uint64_t(1) << j;
  return m;
}

/// Mask of the sources flagged run_invariant in a fusor::tuple of k_sources.
template <class Sources>
inline constexpr std::uint64_t source_mask_v = 0;
template <class... S>
inline constexpr std::uint64_t source_mask_v<fusor::tuple<S...>> = mask_of({S::run_invariant..., false});

/// Mask of the sources flagged row_invariant (constant along every dim but
/// the last): subtrees over these are computed once per position along the
/// last dim into a buffer the run loop reads (exec/host_packets.hpp).
template <class Sources>
inline constexpr std::uint64_t row_mask_v = 0;
template <class... S>
inline constexpr std::uint64_t row_mask_v<fusor::tuple<S...>> = mask_of({S::row_invariant..., false});

}  // namespace fusor::exec::run_invariant
