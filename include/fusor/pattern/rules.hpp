#pragma once
/// @file pattern/rules.hpp
/// Fusion rules: which subgraph of a canonical expression one kernel computes.
///
/// A fusion rule is a type with
///   - `name`: shown by explain();
///   - `template <class E> static constexpr bool matches`: can E root a group?
///   - `template <class Producer> static constexpr bool absorbs`: is operand
///     Producer computed inside the group (vertical fusion) rather than by a
///     kernel of its own whose result the group reads?
///   - `kernel`: the kernel family tag that executes the group.
/// The planner tries rules in list order (larger patterns first) at every
/// node; users put their own rules in front of the default list.
#include <fusor/canon/canonicalize.hpp>
#include <fusor/ops/attention.hpp>
#include <fusor/ops/batch_norm.hpp>
#include <fusor/ops/reduction.hpp>

namespace fusor {

/// Kernel family tags (what executes a group): names only; each family's
/// launcher is exec::launcher<Family> (exec/launcher.hpp).
namespace kernel_family {
/// One thread per output element evaluating the whole group's expression
/// (kernels/elementwise.hpp).
struct elementwise {
  static constexpr const char* name = "elementwise";
};
/// Row reductions and normalizations (kernels/reduction.hpp): one CUDA block
/// (one host loop iteration) per output row, the elementwise prologue
/// evaluated per element read.
struct reduction {
  static constexpr const char* name = "row_reduction";
};
/// Tiled GEMM / implicit-GEMM convolution with a fused prologue (operand
/// loads evaluate elementwise producers, a LayerNorm/RMSNorm of the A rows,
/// or a depthwise conv kept on chip) and epilogue (kernels/contraction.hpp).
struct contraction {
  static constexpr const char* name = "gemm";
};
/// Flash attention (kernels/attention.hpp).
struct attention {
  static constexpr const char* name = "flash_attention";
};
}  // namespace kernel_family

template <class E>
inline constexpr bool is_elementwise_node_v = false;
template <class Op, class... A>
inline constexpr bool is_elementwise_node_v<node<Op, A...>> =
    Op::kind == op_kind::elementwise || Op::kind == op_kind::broadcast;

/// transpose(view): a zero-copy leaf (a view with swapped strides).
template <class E>
inline constexpr bool is_transpose_leaf_v = false;
template <class V>
inline constexpr bool is_transpose_leaf_v<node<op::transpose, V>> = is_view_v<V>;

template <class E>
inline constexpr bool is_expensive_node_v = false;
template <class Op, class... A>
inline constexpr bool is_expensive_node_v<node<Op, A...>> =
    Op::kind == op_kind::reduction || Op::kind == op_kind::contraction || Op::kind == op_kind::opaque;

template <class E>
inline constexpr bool contains_expensive_v = false;
template <class Op, class... A>
inline constexpr bool contains_expensive_v<node<Op, A...>> =
    is_expensive_node_v<node<Op, A...>> || (contains_expensive_v<A> || ...);
/// A tagged expression (fusor::tag) holding a reduction, contraction or
/// attention: planned as a producer of its own, the tag inside the producer's
/// group (e.g. the epilogue of a row reduction), so that group is one named
/// value: computed once and read by every occurrence. Absorbed into each
/// consumer instead, the expensive node inside would be split off (and run)
/// once per occurrence.
template <class E>
inline constexpr bool is_named_expensive_v = false;
template <class Id, class A>
inline constexpr bool is_named_expensive_v<node<op::tagged<Id>, A>> = contains_expensive_v<A>;

/// The expensive value an elementwise subtree E is computed from, when it is
/// computed from one only: a reduction or contraction with nothing but
/// scalars and constants beside it on the way up (sigmoid(mean(x) * 2)), or
/// one named value (fusor::tag) used several times (tanh(m) + erf(m)); void
/// otherwise. Hints and tags end the walk (their own rules apply).
template <class E>
struct epilogue_source {
  using type = void;
};
namespace epilogue_walk {
struct none {};   // no operand that is not weak yet
struct mixed {};  // two sources, or an operand computed from something else
/// Acc joined with operand A's source.
template <class Acc, class A>
using join = std::conditional_t<
    is_weak_v<A>, Acc,
    std::conditional_t<std::is_void_v<typename epilogue_source<A>::type> || std::is_same_v<Acc, mixed>, mixed,
                       std::conditional_t<std::is_same_v<Acc, none>, typename epilogue_source<A>::type,
                                          std::conditional_t<std::is_same_v<Acc, typename epilogue_source<A>::type> &&
                                                                 is_named_expensive_v<Acc>,
                                                             Acc, mixed>>>>;
template <class Acc, class... A>
struct fold {
  using type = Acc;
};
template <class Acc, class A, class... Rest>
struct fold<Acc, A, Rest...> {
  using type = typename fold<join<Acc, A>, Rest...>::type;
};
template <class Op>
inline constexpr bool walkable_v = (Op::kind == op_kind::elementwise || Op::kind == op_kind::broadcast) &&
                                   !requires { Op::names_value; } && !std::is_same_v<Op, op::materialize> &&
                                   !std::is_same_v<Op, op::cache_weights> && !std::is_same_v<Op, op::fuse>;
}  // namespace epilogue_walk
template <class Op, class... A>
struct epilogue_source<node<Op, A...>> {
  using folded = typename epilogue_walk::fold<epilogue_walk::none, A...>::type;
  using type = std::conditional_t<
      is_named_expensive_v<node<Op, A...>> || is_expensive_node_v<node<Op, A...>>, node<Op, A...>,
      std::conditional_t<epilogue_walk::walkable_v<Op> && !std::is_same_v<folded, epilogue_walk::none> &&
                             !std::is_same_v<folded, epilogue_walk::mixed>,
                         folded, void>>;
};

/// E is elementwise ops computed from one expensive value only
/// (epilogue_source), e.g. sigmoid(mean(x, {2, 3}) * 2): a value of that
/// producer's shape. Computed with its producer (in its kernel, or in a
/// small kernel of that shape after a named value) it costs little;
/// computed inside a consumer that broadcasts it up (x * sigmoid(...)) it
/// would run once per element the consumer reads it at, so the planner
/// splits it off (reason::producer_epilogue; XLA's rule: never duplicate an
/// expensive producer into a multi-read consumer).
///
/// One exception: a cheap f (at most cheap_epilogue_flops per element:
/// square(m), m * 2, m + eps) on a named value (fusor::tag, or a repeat
/// shared by value) stays in its consumer. A named value is computed by a
/// kernel of its own, so splitting f off would cost one more kernel and a
/// round trip through memory, while recomputing a FLOP or two per element
/// of a memory-bound consumer is free (elementwise kernels do well under
/// one FLOP per byte; the host and GPU ridge points are above 2).
template <class E>
inline constexpr bool is_producer_epilogue_v = false;
inline constexpr double cheap_epilogue_flops = 2;
/// FLOPs per element of E's elementwise ops above the subtree Src.
template <class E, class Src>
inline constexpr double epilogue_flops_v = 0;
template <class Op, class... A, class Src>
inline constexpr double epilogue_flops_v<node<Op, A...>, Src> =
    std::is_same_v<node<Op, A...>, Src>
        ? 0.0
        : ([] {
            if constexpr (requires { Op::flops; }) return double(Op::flops);
            else return 1.0;
          }() + (0.0 + ... + epilogue_flops_v<A, Src>));
template <class Op, class... A>
inline constexpr bool is_producer_epilogue_v<node<Op, A...>> = [] {
  using Src = typename epilogue_source<node<Op, A...>>::type;
  if constexpr (!epilogue_walk::walkable_v<Op> || std::is_void_v<Src>) return false;
  else if constexpr (is_named_expensive_v<Src>) return epilogue_flops_v<node<Op, A...>, Src> > cheap_epilogue_flops;
  else return true;
}();

/// Number of contractions reachable from E through elementwise nodes only
/// (the candidates for an epilogue rooted at E).
/// A named expensive value (fusor::tag) is a producer of its own: it adds
/// nothing to its consumer's spine (each occurrence would compute it again);
/// as a group's root it is the spine's top (its tag an epilogue).
template <class E>
inline constexpr int spine_contractions_v = 0;
template <class A>
inline constexpr int operand_spine_contractions_v = is_named_expensive_v<A> ? 0 : spine_contractions_v<A>;
template <class Op, class... A>
inline constexpr int spine_contractions_v<node<Op, A...>> =
    Op::kind == op_kind::contraction ? 1
    : (Op::kind == op_kind::elementwise || Op::kind == op_kind::broadcast) ? (0 + ... + operand_spine_contractions_v<A>)
                                                                           : 0;
template <class X>
inline constexpr int spine_contractions_v<node<op::materialize, X>> = 0;

/// Number of reductions reachable from E through elementwise nodes only.
template <class E>
inline constexpr int spine_reductions_v = 0;
template <class A>
inline constexpr int operand_spine_reductions_v = is_named_expensive_v<A> ? 0 : spine_reductions_v<A>;
template <class Op, class... A>
inline constexpr int spine_reductions_v<node<Op, A...>> =
    Op::kind == op_kind::reduction ? 1
    : (Op::kind == op_kind::elementwise || Op::kind == op_kind::broadcast) ? (0 + ... + operand_spine_reductions_v<A>)
                                                                           : 0;
template <class X>
inline constexpr int spine_reductions_v<node<op::materialize, X>> = 0;

/// True for the reductions whose result has their input's shape (softmax,
/// log_softmax, layer_norm, rms_norm): any elementwise consumer can be their
/// epilogue. A reduction over axes (sum, mean, ...) takes an epilogue only of
/// scalar operands (sqrt(mean(x^2) + eps)); a tensor operand would usually
/// broadcast the reduced value back up (x - mean(x)), which is not an
/// epilogue.
template <class E>
inline constexpr bool full_shape_reduction_v = false;
template <class Op, class... A>
inline constexpr bool full_shape_reduction_v<node<Op, A...>> =
    Op::kind == op_kind::reduction && !requires { Op::which; } && !requires { Op::reduces_axes; };

template <class E>
inline constexpr bool spine_full_v = false;
template <class Op, class... A>
inline constexpr bool spine_full_v<node<Op, A...>> =
    Op::kind == op_kind::reduction ? full_shape_reduction_v<node<Op, A...>> : (spine_full_v<A> || ...);

template <class E>
inline constexpr bool reduction_epilogue_ok_v = false;
template <class Op, class... A>
inline constexpr bool reduction_epilogue_ok_v<node<Op, A...>> = [] {
  if constexpr (Op::kind == op_kind::reduction) {
    return true;
  } else if constexpr (Op::kind == op_kind::elementwise || Op::kind == op_kind::broadcast) {
    // The spine operand must be fine itself; the others: weak (scalars), or
    // anything when the spine ends in a full-shape reduction.
    constexpr bool full = []<class... B>(type_list<B...>) {
      bool f = false;
      ((f = f || (spine_reductions_v<B> > 0 && spine_full_v<B>)), ...);
      return f;
    }(type_list<A...>{});
    return ((spine_reductions_v<A> > 0 ? reduction_epilogue_ok_v<A> : (full || is_weak_v<A>)) && ...);
  } else {
    return false;
  }
}();

namespace rule {

/// Any connected elementwise/broadcast subgraph becomes one kernel: every
/// elementwise producer is absorbed, so intermediates stay in registers.
struct elementwise_chain {
  static constexpr const char* name = "elementwise_chain";
  using kernel = kernel_family::elementwise;
  template <class E>
  static constexpr bool matches = is_elementwise_node_v<E>;
  // An elementwise producer over a contraction is that contraction's epilogue
  // (its own group), not part of this chain.
  template <class Producer>
  static constexpr bool absorbs = is_elementwise_node_v<Producer> && spine_contractions_v<Producer> == 0;
};

/// A reduction or normalization with its elementwise prologue: the
/// elementwise subgraph feeding it is evaluated inside the reduction kernel
/// (mean(square(a - b)) reads a and b once, writes only the result).
/// Its elementwise consumers are its epilogue when they keep its shape (see
/// reduction_epilogue_ok_v): layer_norm(x) * w + r, sqrt(mean(x * x) + eps).
struct reduction {
  static constexpr const char* name = "reduction";
  using kernel = kernel_family::reduction;
  /// Rooted at an elementwise node over one reduction: the elementwise ops
  /// above it are its epilogue (plan/plan.hpp, plan_reduction_epilogue).
  static constexpr bool reduction_epilogue = true;
  template <class E>
  static constexpr bool matches =
      is_reduction_node_v<E> || (is_elementwise_node_v<E> && spine_contractions_v<E> == 0 && spine_reductions_v<E> == 1 &&
                                 reduction_epilogue_ok_v<E>);
  template <class Producer>
  static constexpr bool absorbs = is_elementwise_node_v<Producer> && spine_contractions_v<Producer> == 0;
};

/// A contraction (matmul, linear, gemm, conv2d) with its epilogue and
/// prologue: rooted at an elementwise node over (at least) one contraction,
/// the elementwise ops above the first such contraction become its epilogue,
/// evaluated on the accumulator before the store (bias, activation,
/// residual add, batch norm); further contractions are split off. Inside the
/// contraction, elementwise producers of its operands are evaluated while
/// loading (prologue), a layer_norm/rms_norm over K of linear/matmul's A
/// operand is applied while loading A (LayerNorm -> Linear), and a conv2d
/// feeding conv2d through elementwise ops (depthwise -> BN -> ReLU6 ->
/// pointwise) is computed inside the consumer's loads, never written.
/// Group formation is custom (plan/plan.hpp, plan_contraction_group).
struct contraction {
  static constexpr const char* name = "contraction_epilogue";
  using kernel = kernel_family::contraction;
  static constexpr bool custom_group = true;
  template <class E>
  static constexpr bool matches = spine_contractions_v<E> > 0;
  template <class Producer>
  static constexpr bool absorbs = is_elementwise_node_v<Producer>;
};

/// Scaled dot-product attention in one kernel (FlashAttention-2): Q.K^T,
/// scale, mask, softmax and .V, the score matrix never in memory;
/// elementwise producers of q, k, v and the mask are evaluated while loading.
struct attention {
  static constexpr const char* name = "attention";
  using kernel = kernel_family::attention;
  template <class E>
  static constexpr bool matches = is_attention_node_v<E>;
  template <class Producer>
  static constexpr bool absorbs = is_elementwise_node_v<Producer> && spine_contractions_v<Producer> == 0;
};

/// Attention alone, its operands materialized (the unfused executor: the
/// attention kernel itself has no unfused decomposition here).
struct single_attention {
  static constexpr const char* name = "single_attention";
  using kernel = kernel_family::attention;
  template <class E>
  static constexpr bool matches = is_attention_node_v<E>;
  template <class Producer>
  static constexpr bool absorbs = false;
};

/// A contraction alone, its operands and consumers separate kernels (the
/// unfused executor).
struct single_contraction {
  static constexpr const char* name = "single_contraction";
  using kernel = kernel_family::contraction;
  template <class E>
  static constexpr bool matches = is_contraction_node_v<E>;
  template <class Producer>
  static constexpr bool absorbs = false;
};

/// A reduction alone, its operands materialized (the unfused executor).
struct single_reduction {
  static constexpr const char* name = "single_reduction";
  using kernel = kernel_family::reduction;
  template <class E>
  static constexpr bool matches = is_reduction_node_v<E>;
  template <class Producer>
  static constexpr bool absorbs = false;
};

/// One op per kernel, no producer absorbed: how the unfused executor runs.
struct single_op {
  static constexpr const char* name = "single_op";
  using kernel = kernel_family::elementwise;
  template <class E>
  static constexpr bool matches = is_elementwise_node_v<E>;
  template <class Producer>
  static constexpr bool absorbs = false;
};

}  // namespace rule

/// The interface every fusion rule provides (see the file comment). Probed on
/// a simple elementwise node.
template <class R>
concept fusion_rule = requires {
  { R::name } -> std::convertible_to<const char*>;
  typename R::kernel;
  { R::kernel::name } -> std::convertible_to<const char*>;
  { R::template matches<node<op::relu, tensor_view<float, dextents<1>>>> } -> std::convertible_to<bool>;
  { R::template absorbs<node<op::relu, tensor_view<float, dextents<1>>>> } -> std::convertible_to<bool>;
};

namespace diagnostic {
/// Instantiated for a user rule that lacks part of the rule interface.
template <class Rule>
struct check_fusion_rule {
  static_assert(fusion_rule<Rule>,
                "fusor: a fusion rule does not fit the rule interface: it needs `static constexpr const char* name`, "
                "`using kernel = <kernel family with a name>`, `template <class E> static constexpr bool matches` and "
                "`template <class P> static constexpr bool absorbs` (see fusor::rule::elementwise_chain)");
  static constexpr bool value = true;
};
}  // namespace diagnostic

/// The built-in pattern library, largest patterns first.
using default_fusion_rules = type_list<rule::attention, rule::contraction, rule::reduction, rule::elementwise_chain>;
/// The rule list that evaluates every node as its own kernel.
using unfused_rules = type_list<rule::single_attention, rule::single_contraction, rule::single_reduction, rule::single_op>;

namespace detail {
template <class E, class Rules>
struct first_fusion_rule {
  using type = void;
};
template <class E, class R, class... Rs>
struct first_fusion_rule<E, type_list<R, Rs...>> {
  using type = std::conditional_t<R::template matches<E>, R, typename first_fusion_rule<E, type_list<Rs...>>::type>;
};
}  // namespace detail

/// The first rule of Rules that matches expression type E (void if none).
template <class E, class Rules = default_fusion_rules>
using matching_rule_t = typename detail::first_fusion_rule<E, Rules>::type;

}  // namespace fusor
