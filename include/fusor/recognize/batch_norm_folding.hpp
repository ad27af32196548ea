#pragma once
/// @file recognize/batch_norm_folding.hpp
/// Batch-norm folding into the conv before it (a fusion-only rewrite of the
/// fused policies; the unfused reference never folds).
#include <fusor/expr/subtrees.hpp>
#include <fusor/ops/batch_norm.hpp>
#include <fusor/ops/contraction.hpp>
#include <fusor/recognize/decomposed.hpp>

namespace fusor::detail {

// Batch-norm folding (Ioffe & Szegedy 2015, inference form): directly after
// conv2d, batch_norm(conv2d(x, W, b)) == conv2d(x, W * k, (b - mean) * k + beta)
// with k = gamma / sqrt(var + eps) per output channel. The folded weights and
// bias are computed by their own kernels, marked cache_weights, so executors
// compute them once per weight set. Folding is skipped when the conv's result
// is provably used elsewhere (a shared, identity-tagged subexpression), when
// a parameter is not a per-channel view or scalar, and never crosses another
// op (batch_norm(relu(conv)) keeps its order). Values change by rounding only
// (documented tolerance; the unfused executor never folds).
template <int Rank, class P>
auto out_channel_operand(const P& p) {
  if constexpr (is_view_v<P>) {
    using X = typename channel_extents<P::extents_type::static_extent(0), Rank>::type;
    cuda::std::array<index_t, Rank> e{}, st{};
    for (int d = 0; d < Rank; ++d) e[d] = d == 0 ? p.extent(0) : 1;
    st[0] = p.stride(0);
    using Out = tensor_view<typename P::element_type, X, typename P::space, typename P::id>;
    return Out{typename Out::mdspan_type(p.data(), cuda::std::layout_stride::mapping<X>(X(e), st))};
  } else {
    return p;
  }
}
template <class P>
inline constexpr bool channel_param_v = is_scalar_v<P> || is_constant_v<P>;
template <class T, class X, class S, class I>
inline constexpr bool channel_param_v<tensor_view<T, X, S, I>> = X::rank() == 1 || X::rank() == 3;
template <class P>
inline constexpr int channel_param_rank = 0;
template <class T, class X, class S, class I>
inline constexpr int channel_param_rank<tensor_view<T, X, S, I>> = int(X::rank());

template <class E>
inline constexpr bool bn_over_conv_v = false;
template <class Op, class X, class W, class B, class G, class Be, class M, class V>
inline constexpr bool bn_over_conv_v<node<op::batch_norm, node<Op, X, W, B>, G, Be, M, V>> =
    is_conv_op_v<Op> && channel_param_v<G> && channel_param_v<Be> && channel_param_v<M> && channel_param_v<V>;

/// A subtree whose every tensor is identity-tagged (op attributes aside):
/// two occurrences of its type are most likely the same computation, so a
/// batch norm is not folded into it (folding one occurrence would compute
/// the conv twice).
template <class E>
inline constexpr bool tagged_tree_v = is_scalar_v<E> || is_constant_v<E>;
template <class T, class X, class S, class I>
inline constexpr bool tagged_tree_v<tensor_view<T, X, S, I>> = !std::is_void_v<I>;
template <class Op, class... A>
inline constexpr bool tagged_tree_v<node<Op, A...>> = (tagged_tree_v<A> && ...);

/// The conv under a batch_norm-over-conv node N (void for other nodes).
template <class N>
struct bn_conv {
  using type = void;
};
template <class Op, class C, class... P>
struct bn_conv<node<Op, C, P...>> {
  using type = std::conditional_t<bn_over_conv_v<node<Op, C, P...>>, C, void>;
};

/// The convs of Root that a batch norm must not be folded into: tagged convs
/// under a batch_norm that occur at least twice in Root. Computed once per
/// root and passed down fuse_composites as this (usually empty) list instead
/// of Root itself: a template argument the size of the whole expression at
/// every level made the pass quadratic in compile time (docs/compile_time.md).
template <class L>
struct unfoldable_convs_of;
template <class... S>
struct unfoldable_convs_of<type_list<S...>> {
  template <class X>
  static constexpr bool picked = !std::is_void_v<typename bn_conv<X>::type> && tagged_tree_v<typename bn_conv<X>::type> &&
                                 count_in<typename bn_conv<X>::type, type_list<S...>> >= 2;
  static constexpr std::size_t count = (std::size_t(0) + ... + std::size_t(picked<S>));
  struct indices {
    std::size_t v[count > 0 ? count : 1];
  };
  static constexpr indices index = [] {
    const bool pick[] = {false, picked<S>...};
    indices a{};
    std::size_t k = 0;
    for (std::size_t i = 0; i < sizeof...(S); ++i)
      if (pick[i + 1]) a.v[k++] = i;
    return a;
  }();
  template <std::size_t... K>
  static auto make(std::index_sequence<K...>) -> type_list<typename bn_conv<type_at_t<index.v[K], type_list<S...>>>::type...>;
  using type = decltype(make(std::make_index_sequence<count>{}));
};
template <class Root>
using unfoldable_convs_t = typename unfoldable_convs_of<typename subtrees<Root>::type>::type;

template <class Unfoldable, class E>
auto fuse_composites(const E& e);

template <class Unfoldable, class E>
auto fold_batch_norms(const E& e) {
  if constexpr (!is_node_v<E>) {
    return e;
  } else if constexpr (bn_over_conv_v<E>) {
    using Conv = std::remove_cvref_t<decltype(fusor::get<0>(e.args))>;
    constexpr bool shared = list_contains<Conv, Unfoldable>;
    if constexpr (shared) {
      return rebuild(e, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
        return fuse_composites<Unfoldable>(k);
      });
    } else {
      const auto& conv = fusor::get<0>(e.args);
      const auto& [g, beta, mean, var] = [&] {
        return std::tie(fusor::get<1>(e.args), fusor::get<2>(e.args), fusor::get<3>(e.args), fusor::get<4>(e.args));
      }();
      const scalar<float> eps{e.op.eps};
      auto scale = [&]<int Rank>(std::integral_constant<int, Rank>) {
        return make_node(op::div{}, out_channel_operand<Rank>(g),
                         make_node(op::sqrt{}, make_node(op::add{}, out_channel_operand<Rank>(var), eps)));
      };
      auto w = make_node(op::cache_weights{},
                         make_node(op::mul{}, fuse_composites<Unfoldable>(fusor::get<1>(conv.args)), scale(std::integral_constant<int, 4>{})));
      auto b = make_node(op::cache_weights{},
                         make_node(op::add{},
                                   make_node(op::mul{}, make_node(op::sub{}, fuse_composites<Unfoldable>(fusor::get<2>(conv.args)),
                                                                  out_channel_operand<1>(mean)),
                                             scale(std::integral_constant<int, 1>{})),
                                   out_channel_operand<1>(beta)));
      auto folded = conv.op;
      folded.has_bias = true;
      using Params = type_list<std::remove_cvref_t<decltype(g)>, std::remove_cvref_t<decltype(beta)>,
                               std::remove_cvref_t<decltype(mean)>, std::remove_cvref_t<decltype(var)>>;
      folded.folded_bn_rank = []<class... P>(type_list<P...>) {
        int r = 0;
        ((r = channel_param_rank<P> ? channel_param_rank<P> : r), ...);
        return r;
      }(Params{});
      return make_node_unchecked(folded, fuse_composites<Unfoldable>(fusor::get<0>(conv.args)), w, b);
    }
  } else {
    return rebuild(e, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
      return fuse_composites<Unfoldable>(k);
    });
  }
}

}  // namespace fusor::detail
