#pragma once
/// @file exec/epilogue.hpp
/// What the contraction and reduction kernel families share to fuse an
/// epilogue: the accumulator leaf that stands for the producer's value in
/// the consumer's elementwise tree, per-channel leaves, and the "spine" of an
/// epilogue group (the one producer reached from the root through
/// elementwise ops only).
#include <fusor/exec/bind.hpp>

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

/// Spine predicates: what roots a spine, and how many roots E reaches.
struct contraction_spine {
  template <class E>
  static constexpr bool root = is_contraction_node_v<E>;
  template <class E>
  static constexpr int count = spine_contractions_v<E>;
};
struct reduction_spine {
  template <class E>
  static constexpr bool root = is_reduction_node_v<E>;
  template <class E>
  static constexpr int count = spine_reductions_v<E>;
};

/// The producer node on E's spine (the first operand that reaches one).
template <class Spine, class E>
const auto& spine_root(const E& e) {
  if constexpr (Spine::template root<E>) {
    return e;
  } else {
    constexpr std::size_t k = []<class... A>(std::type_identity<fusor::tuple<A...>>) {
      constexpr int s[] = {Spine::template count<A>..., 1};
      std::size_t i = 0;
      while (i < sizeof...(A) && s[i] == 0) ++i;
      return i;
    }(std::type_identity<std::remove_cvref_t<decltype(e.args)>>{});
    return spine_root<Spine>(fusor::get<k>(e.args));
  }
}

/// E with its spine producer replaced by `r`.
template <class Spine, class E, class Rep>
auto replace_spine_root(const E& e, const Rep& r) {
  if constexpr (Spine::template root<E>) {
    return r;
  } else {
    return fusor::apply([&](const auto&... a) {
      auto one = [&](const auto& x) {
        using X = std::remove_cvref_t<decltype(x)>;
        if constexpr (Spine::template count<X> > 0) return replace_spine_root<Spine>(x, r);
        else return x;
      };
      return make_node_unchecked(e.op, one(a)...);
    }, e.args);
  }
}

/// Lowers epilogue expression e (with an accumulator leaf) at rank R.
template <int R, class E>
auto make_epilogue(const E& e) {
  auto l = lower(e, std::tuple<>{});
  auto sources = std::apply([](const auto&... v) { return fusor::make_tuple(make_source<R>(v)...); }, l.slots);
  return kernels::k_epilogue<R, decltype(sources), decltype(l.tree)>{sources, l.tree};
}

}  // namespace fusor::exec::epilogue_detail
