#pragma once
/// @file cost/decision.hpp
/// Fusion decisions the planner asks for. Elementwise producers always fuse
/// into elementwise consumers: that removes one write and one read of the
/// intermediate per element and one launch, and never adds memory traffic
/// (XLA and TVM apply the same shortcut).
#include <fusor/pattern/rules.hpp>

namespace fusor {

/// True when Rule's group rooted at Consumer should compute Producer inline.
template <class Rule, class Producer, class Consumer>
inline constexpr bool fuse_producer_v = Rule::template absorbs<Producer>;

/// True when root expressions E... may share one multi-output kernel: equal
/// static ranks (run-time extents are checked before launch).
template <class... E>
inline constexpr bool fuse_siblings_v = ((rank_v<E> == rank_v<std::tuple_element_t<0, std::tuple<E...>>>) && ...);

}  // namespace fusor
