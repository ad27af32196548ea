#pragma once
/// @file recognize/attention.hpp
/// Attention written by hand, recognised as scaled_dot_product_attention (a
/// fusion-only rewrite of the fused policies).
#include <fusor/ops/attention.hpp>
#include <fusor/ops/contraction.hpp>
#include <fusor/ops/reduction.hpp>
#include <fusor/recognize/decomposed.hpp>

namespace fusor::detail {

// Attention written by hand, matmul(softmax(S), v) with S one of
//   matmul(q, transpose(k)) [* s | / s] [+ mask]   (s a scalar or constant),
// becomes scaled_dot_product_attention(q, k, v, {scale}, mask): one flash
// kernel instead of three kernels and an [Sq, Sk] matrix. Rank-4 operands
// are bhsd, rank-3 are one head (packed, heads = 1). A scale applied to q
// stays in q (a prologue). The result equals the unfused expression up to
// summation order (the flash algorithm sums in tiles; / s becomes * (1 / s)).
template <class E>
struct attention_scores {
  static constexpr bool ok = false;
};
template <class Q, class K>
struct attention_scores<node<op::matmul, Q, node<op::transpose, K>>> {
  static constexpr bool ok = is_view_v<K> && (rank_v<Q> == 3 || rank_v<Q> == 4) && rank_v<Q> == rank_v<K>;
  template <class E>
  static const auto& product(const E& e) { return e; }
  template <class E>
  static float scale(const E&) { return 1.0f; }
};
template <class S>
constexpr bool scale_operand_v = (is_scalar_v<S> || is_constant_v<S>);
template <class S>
float scale_value(const S& s) {
  if constexpr (is_scalar_v<S>) return float(s.value);
  else return float(S::value);
}
template <class P, class S>
  requires(attention_scores<P>::ok && scale_operand_v<S>)
struct attention_scores<node<op::mul, P, S>> {
  static constexpr bool ok = true;
  template <class E>
  static const auto& product(const E& e) { return fusor::get<0>(e.args); }
  template <class E>
  static float scale(const E& e) { return scale_value(fusor::get<1>(e.args)); }
};
template <class P, class S>
  requires(attention_scores<P>::ok && scale_operand_v<S>)
struct attention_scores<node<op::mul, S, P>> {
  static constexpr bool ok = true;
  template <class E>
  static const auto& product(const E& e) { return fusor::get<1>(e.args); }
  template <class E>
  static float scale(const E& e) { return scale_value(fusor::get<0>(e.args)); }
};
template <class P, class S>
  requires(attention_scores<P>::ok && scale_operand_v<S>)
struct attention_scores<node<op::div, P, S>> {
  static constexpr bool ok = true;
  template <class E>
  static const auto& product(const E& e) { return fusor::get<0>(e.args); }
  template <class E>
  static float scale(const E& e) { return float(1.0 / double(scale_value(fusor::get<1>(e.args)))); }
};

template <class E>
struct attention_form {
  static constexpr bool ok = false;
};
template <class S, class V>
  requires(attention_scores<S>::ok)
struct attention_form<node<op::matmul, node<op::softmax, S>, V>> {
  static constexpr bool ok = rank_v<V> == rank_v<S>;
  static constexpr bool masked = false;
};
template <class S, class M, class V>
  requires(attention_scores<S>::ok)
struct attention_form<node<op::matmul, node<op::softmax, node<op::add, S, M>>, V>> {
  static constexpr bool ok = rank_v<V> == rank_v<S> && rank_v<M> <= 4;
  static constexpr bool masked = true;
  static constexpr int scores = 0;
};
template <class S, class M, class V>
  requires(attention_scores<S>::ok && !attention_scores<M>::ok)
struct attention_form<node<op::matmul, node<op::softmax, node<op::add, M, S>>, V>> {
  static constexpr bool ok = rank_v<V> == rank_v<S> && rank_v<M> <= 4;
  static constexpr bool masked = true;
  static constexpr int scores = 1;
};

template <class E>
auto recognize_attention(const E& e) {
  const auto& sm = fusor::get<0>(e.args);
  const auto& v = fusor::get<1>(e.args);
  const auto& inner = fusor::get<0>(sm.args);
  auto build = [&](const auto& scores, const auto& mask) {
    using S = std::remove_cvref_t<decltype(scores)>;
    const auto& prod = attention_scores<S>::product(scores);
    const auto& q = fusor::get<0>(prod.args);
    const auto& k = fusor::get<0>(fusor::get<1>(prod.args).args);
    attention_params p{};
    p.scale = attention_scores<S>::scale(scores);
    if constexpr (rank_v<decltype(q)> == 3) p.heads = p.kv_heads = 1;
    auto n = scaled_dot_product_attention(q, k, v, p, mask);
    constexpr int R = rank_v<decltype(q)>;
    const int a = sm.op.axis < 0 ? sm.op.axis + R : sm.op.axis;
    n.op.softmax_axis = a == R - 1 ? -1 : a;  // checked by the kernel binding
    return n;
  };
  if constexpr (attention_form<E>::masked) {
    constexpr int k = attention_form<E>::scores;
    return build(fusor::get<k>(inner.args), fusor::get<1 - k>(inner.args));
  }
  else return build(inner, nullptr);
}

}  // namespace fusor::detail
