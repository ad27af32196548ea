#pragma once
/// @file plan/shared_producers.hpp
/// Planning step 3: a provably identical subexpression used several times is
/// recomputed per use or materialized once, whichever the model estimates
/// faster (at compile time with static extents, else a runtime_choice).
#include <fusor/expr/subtrees.hpp>
#include <fusor/plan/budgets.hpp>

namespace fusor::detail {

// Step 3: shared producers (subtree lists: expr/subtrees.hpp).
template <class N>
inline constexpr bool shareable = false;
template <class Op, class... A>
inline constexpr bool shareable<node<Op, A...>> =
    !__is_same(Op, op::fuse) && statically_identical_v<node<Op, A...>> && !is_weak_v<node<Op, A...>>;  // FZ-1

/// The first (so largest) node of X, in pre-order, that is provably identical
/// and occurs at least twice (void if none).
template <class X, class L = typename subtrees<X>::type>
struct repeated;
template <class X, class... S>
struct repeated<X, type_list<S...>> {
  static constexpr int index = [] {
    using Set = subtree_set<std::index_sequence_for<S...>, S...>;
    constexpr bool hit[] = {false, (shareable<S> && !once_in<S, Set>)...};
    for (std::size_t i = 1; i < sizeof(hit); ++i)
      if (hit[i]) return int(i) - 1;
    return -1;
  }();
  template <int I, class = void>
  struct pick {
    using type = type_at_t<std::size_t(I), type_list<S...>>;
  };
  template <class V>
  struct pick<-1, V> {
    using type = void;
  };
  using type = typename pick<index>::type;
};

template <class S, class G, class E>
auto replace_all(const E& e, const G& g) {
  if constexpr (std::is_same_v<E, S>) {
    return g;
  } else if constexpr (is_node_v<E>) {
    return fusor::apply([&](const auto&... a) { return make_node_unchecked(e.op, replace_all<S>(a, g)...); }, e.args);
  } else {
    return e;
  }
}

template <class S, class E>
const S* find_ptr(const E& e) {
  if constexpr (std::is_same_v<E, S>) {
    return &e;
  } else if constexpr (is_node_v<E>) {
    const S* found = nullptr;
    fusor::apply([&](const auto&... a) { ((found = found ? found : find_ptr<S>(a)), ...); }, e.args);
    return found;
  } else {
    return nullptr;
  }
}
template <class S, class E>
const S& find_first(const E& e) {
  return *find_ptr<S>(e);
}

/// Plan with every shared producer materialized once.
template <class Policy, class R, class X>
auto materialize_shared(const group<R, X>& g) {
  using S = typename repeated<X>::type;
  if constexpr (std::is_void_v<S>) {
    return g;
  } else {
    // X holds S somewhere; find one occurrence to copy its value.
    const S& s = find_first<S>(g.expr);
    // An elementwise producer shared inside a reduction-family group (a
    // tagged relu(x) read twice by a sum's prologue or by a concat) is an
    // elementwise kernel of its own, not one of the consumer's family.
    using RS = std::conditional_t<contains_expensive_v<S>, R, rule::elementwise_chain>;
    auto producer = enforce_budgets<Policy>(group<split_off<reason::materialize_shared, RS>, S>{s});
    auto rest = replace_all<S>(g.expr, producer);
    return materialize_shared<Policy>(group<R, decltype(rest)>{rest});
  }
}

/// materialize_shared, then budgets on the consumer group.
template <class Policy, class R, class X>
auto materialize_shared_within_budget(const group<R, X>& g) {
  auto m = materialize_shared<Policy>(g);
  if constexpr (std::is_same_v<decltype(m), group<R, X>>) {
    return m;
  } else {
    return enforce_budgets<Policy>(m);
  }
}

template <class E>
inline constexpr bool all_static_v = [] {
  using X = static_extents_t<E>;
  for (std::size_t d = 0; d < X::rank(); ++d)
    if (X::static_extent(d) == dyn) return false;
  return true;
}();
template <class E>
inline constexpr double static_elements_v = [] {
  using X = static_extents_t<E>;
  double n = 1;
  for (std::size_t d = 0; d < X::rank(); ++d) n *= double(X::static_extent(d));
  return n;
}();

template <class Policy, class R, class X>
auto decide_shared(const group<R, X>& g) {
  auto split = materialize_shared_within_budget<Policy>(g);
  auto fused = enforce_budgets<Policy>(g);
  using F = decltype(fused);
  using S = decltype(split);
  if constexpr (std::is_same_v<S, group<R, X>>) {
    return fused;
  } else if constexpr (all_static_v<X>) {
    constexpr comparison c = compare_plans<F, S>(Policy::model, static_elements_v<X>);
    if constexpr (c.first_wins) return fused;
    else return split;
  } else {
    return runtime_choice<F, S>{fused, split};
  }
}

}  // namespace fusor::detail
