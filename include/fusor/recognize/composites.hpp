#pragma once
/// @file recognize/composites.hpp
/// The fusion-only, value-changing rewrites of the fused policies, applied
/// to a root before planning: batch-norm folding and attention recognition
/// (decomposed normalizations: recognize/decomposed.hpp, guarded at run time).
#include <fusor/recognize/attention.hpp>
#include <fusor/recognize/batch_norm_folding.hpp>

namespace fusor::detail {

/// True when E contains a node fuse_composites rewrites (hand-written
/// attention, batch_norm over a conv). Anywhere else the pass would rebuild
/// the subtree unchanged, at several function instantiations per node (about
/// 0.5 s of g++ time for a 128-node expression), so it returns it as is.
template <class E>
inline constexpr bool has_composite_v = false;
template <class Op, class... A>
inline constexpr bool has_composite_v<node<Op, A...>> =
    attention_form<node<Op, A...>>::ok || bn_over_conv_v<node<Op, A...>> || (has_composite_v<A> || ...);

/// Fusion-only rewrites of the fused policies (never the unfused
/// reference's): batch-norm folding and attention recognition.
template <class Unfoldable, class E>
auto fuse_composites_kids(const E& e) {
  if constexpr (!is_node_v<E>) return e;
  else
    return rebuild(e, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
      return fuse_composites<Unfoldable>(k);
    });
}
template <class Unfoldable, class E>
auto fuse_composites(const E& e) {
  if constexpr (!has_composite_v<E>) return e;
  else if constexpr (attention_form<E>::ok) return fuse_composites_kids<Unfoldable>(recognize_attention(e));
  else if constexpr (bn_over_conv_v<E>) return fold_batch_norms<Unfoldable>(e);
  else return fuse_composites_kids<Unfoldable>(e);
}

/// Whether fuse_composites changes root E (false without computing the
/// unfoldable-conv list when E has no composite).
template <class E>
constexpr bool composites_change() {
  if constexpr (!has_composite_v<E>) return false;
  else return !std::is_same_v<E, decltype(fuse_composites<unfoldable_convs_t<E>>(std::declval<const E&>()))>;
}

}  // namespace fusor::detail
