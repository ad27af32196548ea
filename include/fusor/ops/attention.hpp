#pragma once
/// @file ops/attention.hpp
/// Scaled dot-product attention (Vaswani et al. 2017; PyTorch
/// scaled_dot_product_attention semantics):
///   out = softmax(q k^T * scale + mask [causal: -inf above the diagonal]) v
/// over each (batch, head), computed by the FlashAttention-2 algorithm
/// (Dao 2023: K/V tiles streamed, online softmax with running max and sum,
/// fp32 accumulation), so the [Sq, Sk] score matrix never exists in memory.
///
/// Layouts (run-time attribute for rank 4, heads attribute for rank 3):
///   bhsd:   q [B, Hq, Sq, D],  k [B, Hkv, Sk, D],  v [B, Hkv, Sk, Dv] -> [B, Hq, Sq, Dv]
///   bshd:   q [B, Sq, Hq, D],  k [B, Sk, Hkv, D],  v [B, Sk, Hkv, Dv] -> [B, Sq, Hq, Dv]
///   packed: q [B, Sq, Hq * D], k [B, Sk, Hkv * D], v [B, Sk, Hkv * Dv] -> [B, Sq, Hq * Dv]
///           (rank 3: what a projection GEMM writes; `heads` = Hq, `kv_heads` = Hkv)
/// Grouped-query attention: Hq a multiple of Hkv (query head h reads K/V head
/// h / (Hq / Hkv)). The additive mask broadcasts to [B, Hq, Sq, Sk]. Causal
/// masking is top-left aligned like PyTorch's is_causal (key j is visible to
/// query i when j <= i). A row whose every score is -inf gives NaN, as the
/// unfused softmax does.
#include <fusor/ops/contraction.hpp>

#include <limits>

namespace fusor {

/// Memory layout of attention operands (see the file comment).
enum class attention_layout { bhsd, bshd };

/// Attributes of scaled_dot_product_attention.
struct attention_params {
  /// Multiplies q k^T; NaN means 1 / sqrt(head_dim) (PyTorch's default).
  float scale = std::numeric_limits<float>::quiet_NaN();
  bool causal = false;
  attention_layout layout = attention_layout::bhsd;
  /// Rank-3 (packed) operands only: query heads and key/value heads (0 = heads).
  int heads = 0, kv_heads = 0;
};

namespace op {
/// scaled_dot_product_attention(q, k, v, mask): see the file comment.
struct attention {
  static constexpr const char* name = "attention";
  static constexpr op_kind kind = op_kind::opaque;
  static constexpr int arity = 4;
  static constexpr bool has_output_shape = true;
  static constexpr double flops = 0;
  attention_params p;
  bool has_mask = false;
  /// Set when recognised from softmax(q k^T ...) v: the softmax's axis,
  /// which must be the last one (checked at run time).
  int softmax_axis = -1;
  template <class Q, class K, class V, class M>
  using result = contraction_result<Q, K, V>;
  template <class Q, class K, class V, class M>
  using static_extents = dextents<std::size_t(rank_v<Q>)>;

  /// Geometry of one call, from the operand shapes.
  struct dims {
    index_t b, hq, hkv, sq, sk, d, dv;
  };
  template <int R>
  dims geometry(const shape<R>& q, const shape<R>& k, const shape<R>& v) const {
    const std::string shapes = " (q " + to_string<R>(q) + ", k " + to_string<R>(k) + ", v " + to_string<R>(v) + ")";
    dims g{};
    if constexpr (R == 3) {
      const index_t h = p.heads, hk = p.kv_heads > 0 ? p.kv_heads : p.heads;
      if (h <= 0) throw shape_error("fusor: attention: packed (rank-3) operands need params.heads > 0" + shapes);
      if (q[2] % h != 0 || k[2] % hk != 0 || v[2] % hk != 0)
        throw shape_error("fusor: attention: the last dims must be heads * head_dim" + shapes);
      g = {q[0], h, hk, q[1], k[1], q[2] / h, v[2] / hk};
      if (k[2] / hk != g.d) throw shape_error("fusor: attention: q and k head_dim differ" + shapes);
    } else {
      static_assert(R == 4, "fusor: attention: operands must have rank 4 ([B, H, S, D] or [B, S, H, D]) or 3 (packed)");
      const bool bshd = p.layout == attention_layout::bshd;
      const int hd = bshd ? 2 : 1, sd = bshd ? 1 : 2;
      g = {q[0], q[hd], k[hd], q[sd], k[sd], q[3], v[3]};
      if (k[3] != g.d) throw shape_error("fusor: attention: q and k head_dim differ" + shapes);
      if (v[hd] != g.hkv || v[sd] != g.sk) throw shape_error("fusor: attention: k and v disagree on heads or length" + shapes);
    }
    if (k[0] != g.b || v[0] != g.b) throw shape_error("fusor: attention: batch sizes differ" + shapes);
    if constexpr (R == 3) {
      if (v[1] != g.sk) throw shape_error("fusor: attention: k and v lengths differ" + shapes);
    }
    if (g.hkv <= 0 || g.hq % g.hkv != 0)
      throw shape_error("fusor: attention: query heads must be a multiple of key/value heads (grouped-query)" + shapes);
    if (g.d < 1 || g.dv < 1)
      throw argument_error("fusor: attention: head_dim " + std::to_string(g.d < 1 ? g.d : g.dv) +
                           " must be >= 1 (softmax(q k^T / sqrt(head_dim)) is undefined for an empty head)" + shapes);
    return g;
  }
  template <int R, int RK, int RV, int RM>
  static shape<R> output_shape(const attention& op, const shape<R>& q, const shape<RK>& k, const shape<RV>& v,
                               const shape<RM>& m) {
    static_assert(R == RK && R == RV, "fusor: attention: q, k and v must have the same rank");
    const dims g = op.geometry<R>(q, k, v);
    if constexpr (RM > 0) {
      static_assert(RM <= 4, "fusor: attention: the mask must broadcast to [B, H, Sq, Sk]");
      const shape<4> full{g.b, g.hq, g.sq, g.sk};
      for (int d = 0; d < RM; ++d)
        if (m[d] != 1 && m[d] != full[d + 4 - RM])
          throw shape_error("fusor: attention: mask " + to_string<RM>(m) + " does not broadcast to [B, H, Sq, Sk] = " +
                            to_string<4>(full));
    }
    shape<R> out = q;
    if constexpr (R == 3) out[2] = g.hq * g.dv;
    else out[3] = g.dv;
    return out;
  }
  /// FLOPs per output element: a query row computes q k^T (2 S_kv D) and
  /// P v (2 S_kv Dv) for its Dv outputs, so 2 S_kv (D + Dv) / Dv (4 S_kv
  /// when D = Dv); half with a causal mask (on average a query sees half the
  /// keys). The softmax between the products is not counted
  /// (FlashAttention's convention: Dao et al. 2022, section 4).
  template <int R, int RK, int RV, int RM>
  static double flops_per_output(const attention& op, const shape<R>& q, const shape<RK>& k, const shape<RV>& v,
                                 const shape<RM>&) {
    const dims g = op.geometry<R>(q, k, v);
    const double per = 2.0 * double(g.sk) * double(g.d + g.dv) / double(g.dv);
    return op.p.causal ? per / 2 : per;
  }
};
}  // namespace op

template <class E>
inline constexpr bool is_attention_node_v = false;
template <class... A>
inline constexpr bool is_attention_node_v<node<op::attention, A...>> = true;

/// scaled_dot_product_attention(q, k, v, params, mask = nullptr): see the
/// file comment for layouts, GQA, masking and numerics.
/// @throws shape_error (at run) for inconsistent heads, lengths or head_dim;
///         argument_error (at run) for head_dim 0.
template <expression Q, expression K, expression V, class M = std::nullptr_t>
  requires(operand<M> || std::is_same_v<std::remove_cvref_t<M>, std::nullptr_t>)
auto scaled_dot_product_attention(Q&& q, K&& k, V&& v, attention_params p = {}, M&& mask = nullptr) {
  static_assert(rank_v<Q> == rank_v<K> && rank_v<Q> == rank_v<V> && (rank_v<Q> == 3 || rank_v<Q> == 4),
                "fusor: scaled_dot_product_attention: q, k, v must all have rank 4 ([B, H, S, D] / [B, S, H, D]) or "
                "all rank 3 (packed [B, S, H * D])");
  auto m = detail::bias_operand(std::forward<M>(mask));
  using N = node<op::attention, std::remove_cvref_t<Q>, std::remove_cvref_t<K>, std::remove_cvref_t<V>, decltype(m)>;
  return N{op::attention{p, detail::has_bias_v<M>}, {std::forward<Q>(q), std::forward<K>(k), std::forward<V>(v), m}};
}
template <class Q, class K, class V, class M = std::nullptr_t>
  requires(diagnostic::some_operand_misfits<Q, K, V, M>("eeen"))
auto scaled_dot_product_attention(const Q&, const K&, const V&, attention_params = {}, const M& = nullptr) {
  static_assert(diagnostic::always_false<Q, K, V, M>,
                "fusor: scaled_dot_product_attention: an operand is not a fusor expression; "
                "scaled_dot_product_attention(q, k, v, params, mask): q, k and v are expressions, mask an "
                "expression, a number or nullptr; " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}

/// Weights of multi_head_attention (PyTorch nn.MultiheadAttention's
/// in_proj split in three, out_proj): W* [E, E] (or [Hkv * D, E] for k/v
/// with GQA), b* [E] or nullptr.
template <class WQ, class WK, class WV, class WO, class BQ, class BK, class BV, class BO>
struct attention_weights {
  WQ wq;
  WK wk;
  WV wv;
  WO wo;
  BQ bq;
  BK bk;
  BV bv;
  BO bo;
};
template <class WQ, class WK, class WV, class WO, class BQ, class BK, class BV, class BO>
attention_weights(WQ, WK, WV, WO, BQ, BK, BV, BO) -> attention_weights<WQ, WK, WV, WO, BQ, BK, BV, BO>;

/// multi_head_attention(x, weights, params): the whole block
///   linear(attention(linear(x, Wq, bq), linear(x, Wk, bk), linear(x, Wv, bv)), Wo, bo)
/// over x [B, S, E] with packed heads (params.heads required). The planner
/// computes the three projections as one GEMM (x read once, three outputs),
/// then the flash-attention kernel, then the output projection with its
/// bias (and any elementwise epilogue, e.g. a residual add): 3 kernels.
template <expression X, class WQ, class WK, class WV, class WO, class BQ, class BK, class BV, class BO>
  requires(diagnostic::operands_fit<WQ, WK, WV, WO, BQ, BK, BV, BO>("eeeennnn"))
auto multi_head_attention(X&& x, const attention_weights<WQ, WK, WV, WO, BQ, BK, BV, BO>& w, attention_params p) {
  static_assert(rank_v<X> == 3, "fusor: multi_head_attention: x must be [B, S, E]");
  const auto& xx = x;
  return linear(scaled_dot_product_attention(linear(xx, w.wq, w.bq), linear(xx, w.wk, w.bk), linear(xx, w.wv, w.bv), p),
                w.wo, w.bo);
}
namespace detail {
template <class W>
inline constexpr bool attention_weights_fit = false;
template <class WQ, class WK, class WV, class WO, class BQ, class BK, class BV, class BO>
inline constexpr bool attention_weights_fit<attention_weights<WQ, WK, WV, WO, BQ, BK, BV, BO>> =
    diagnostic::operands_fit<WQ, WK, WV, WO, BQ, BK, BV, BO>("eeeennnn");
template <class W>
inline constexpr bool is_attention_weights_v = false;
template <class WQ, class WK, class WV, class WO, class BQ, class BK, class BV, class BO>
inline constexpr bool is_attention_weights_v<attention_weights<WQ, WK, WV, WO, BQ, BK, BV, BO>> = true;
}  // namespace detail
template <class X, class W>
  requires((!operand<X> && detail::is_attention_weights_v<W>) || (expression<X> && !detail::attention_weights_fit<W>))
auto multi_head_attention(const X&, const W&, attention_params) {
  static_assert(diagnostic::always_false<X, W>,
                "fusor: multi_head_attention: an operand is not a fusor expression; multi_head_attention(x, "
                "attention_weights{wq, wk, wv, wo, bq, bk, bv, bo}, params): x [B, S, E] and the w* are expressions, "
                "the b* expressions, numbers or nullptr; " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}

}  // namespace fusor
