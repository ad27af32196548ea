#pragma once
/// @file pattern/spine.hpp
/// The spine of an epilogue group: the one producer (a contraction or a
/// reduction) reached from the group's root through elementwise ops only.
/// The planner splits at it (a broadcast-up epilogue) and the launchers
/// replace it by their accumulator.
#include <fusor/pattern/rules.hpp>

namespace fusor::detail {

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

}  // namespace fusor::detail
