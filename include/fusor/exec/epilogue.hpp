#pragma once
/// @file exec/epilogue.hpp
/// What the contraction and reduction kernel families share to fuse an
/// epilogue: the accumulator leaf that stands for the producer's value in
/// the consumer's elementwise tree, per-channel leaves, and the "spine" of an
/// epilogue group (the one producer reached from the root through
/// elementwise ops only).
#include <fusor/exec/bind.hpp>
#include <fusor/pattern/spine.hpp>

namespace fusor::exec {

/// The producer's value (GEMM accumulator, reduced or normalized value) in
/// an epilogue tree (compute type T, rank R).
template <class T, int R>
struct accumulator_leaf {
  static constexpr bool is_accumulator = true;
};

/// A 1-D per-channel view read along `axis` of the output (conv2d's bias
/// in NCHW: [Cout] on axis 1).
template <class V>
struct channel_leaf {
  static constexpr bool is_channel_leaf = true;
  using view_type = V;
  V v;
  int axis;
};

}  // namespace fusor::exec

namespace fusor {
template <class T, int R>
struct expr_traits<exec::accumulator_leaf<T, R>> {
  using value_type = T;
  using extents_type = dextents<std::size_t(R)>;
  static constexpr bool weak = false;
};
template <class V>
struct expr_traits<exec::channel_leaf<V>> {
  using value_type = compute_t<typename V::value_type>;
  using extents_type = dextents<1>;
  static constexpr bool weak = false;
};
}  // namespace fusor


namespace fusor::exec::epilogue_detail {
// The spine helpers live at the pattern stage (the planner uses them too).
using fusor::detail::contraction_spine;
using fusor::detail::reduction_spine;
using fusor::detail::replace_spine_root;
using fusor::detail::spine_root;

/// Lowers epilogue expression e (with an accumulator leaf) at rank R.
template <int R, class E>
auto make_epilogue(const E& e) {
  auto l = lower(e, std::tuple<>{});
  auto sources = std::apply([](const auto&... v) { return fusor::make_tuple(make_source<R>(v)...); }, l.slots);
  return kernels::k_epilogue<R, decltype(sources), decltype(l.tree)>{sources, l.tree};
}

}  // namespace fusor::exec::epilogue_detail
