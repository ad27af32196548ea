#pragma once
/// @file plan/absorb.hpp
/// Planning step 1: a matched rule roots a group and absorbs the producers it
/// accepts (vertical fusion); hints (materialize, cache_weights, fuse) and
/// the marks on split-off groups.
#include <fusor/plan/policy.hpp>

namespace fusor::detail {


template <class E>
inline constexpr int node_count = 0;
template <class Op, class... A>
inline constexpr int node_count<node<Op, A...>> = 1 + (0 + ... + node_count<A>);

template <class E>
inline constexpr bool is_hint_v = false;
template <class X>
inline constexpr bool is_hint_v<node<op::materialize, X>> = true;
template <class X>
inline constexpr bool is_hint_v<node<op::cache_weights, X>> = true;
template <class X>
inline constexpr bool is_hint_v<node<op::contiguous, X>> = true;
template <class E>
inline constexpr reason hint_reason = reason::forced_materialize;
template <class X>
inline constexpr reason hint_reason<node<op::cache_weights, X>> = reason::folded_weights;
template <class X>
inline constexpr reason hint_reason<node<op::contiguous, X>> = reason::forced_contiguous;
template <class E>
inline constexpr bool is_fuse_hint_v = false;
template <class X>
inline constexpr bool is_fuse_hint_v<node<op::fuse, X>> = true;

template <class Policy, class E>
auto plan_expr(const E& e);

// is_expensive_node_v, contains_expensive_v, is_named_expensive_v: pattern/rules.hpp

/// Records `Why` on a group split off from its consumer (other plans as they are).
template <reason Why, class P>
auto mark_split(const P& p) {
  constexpr plan_kind k = plan_kind_v<P>;
  if constexpr (k == plan_kind::runtime_choice) {
    // A run-time choice nested inside another group is not supported yet: keep
    // its first (recompute) variant, a valid plan with the same values.
    return mark_split<Why>(p.first);
  } else if constexpr (k == plan_kind::group) {
    return [&]<class R, class X>(const group<R, X>& g) {
      if constexpr (requires { R::why; }) return g;
      else return group<split_off<Why, R>, X>{g.expr};
    }(p);
  } else if constexpr (k == plan_kind::guarded) {
    return guarded_plan<decltype(mark_split<Why>(p.recognized)), decltype(mark_split<Why>(p.written))>{
        mark_split<Why>(p.recognized), mark_split<Why>(p.written), p.holds, p.why};
  } else {
    // Leaves, nodes, sibling groups and outputs: nothing to mark (a sequence
    // and a siblings set are roots, never operands).
    static_assert(k != plan_kind::sequence && k != plan_kind::roots);
    return p;
  }
}

/// The plan of hint h's operand: its own plan, or for contiguous(view) a copy
/// group (the view's elements into a row-major temporary).
template <class Policy, class H>
auto planned_hint_operand(const H& h) {
  auto p = plan_expr<Policy>(fusor::get<0>(h.args));
  using P = decltype(p);
  if constexpr (std::is_same_v<typename H::op_type, op::contiguous> && (is_plan_leaf_v<P> || is_transpose_leaf_v<P>))
    return group<rule::single_op, node<op::identity, P>>{make_node_unchecked(op::identity{}, p)};
  else return p;
}

/// A shape op over a computed value (ops/view_map.hpp): the value is its own
/// group, written to a temporary; the node stays, and becomes the view op of
/// that temporary when its consumer's operands are materialized.
template <class Policy, class F, class X>
auto plan_view_map(const node<op::view_map<F>, X>& n) {
  using X0 = std::remove_cvref_t<decltype(fusor::get<0>(n.args))>;
  if constexpr (is_hint_v<X0>)
    return make_node_unchecked(n.op, mark_split<hint_reason<X0>>(planned_hint_operand<Policy>(fusor::get<0>(n.args))));
  else if constexpr (is_named_expensive_v<X0>)
    // (the reason plan_inside gives the same value read directly: one group
    // type, so a tag read both ways is computed once, exec/materialize.hpp)
    return make_node_unchecked(n.op, mark_split<reason::expensive_producer>(plan_expr<Policy>(fusor::get<0>(n.args))));
  else
    return make_node_unchecked(n.op, mark_split<reason::shape_op_operand>(plan_expr<Policy>(fusor::get<0>(n.args))));
}

// Step 1: absorb producers the rule accepts.

/// True when plan_inside<Policy, Rule>(n) is n itself (a whole elementwise
/// chain, a reduction's plain prologue): then n is copied instead of rebuilt
/// level by level, which cost several function instantiations per node and
/// code that copies every subtree once per level (compile time,
/// docs/compile_time.md).
template <class Rule, class N>
inline constexpr bool inside_unchanged_v = false;
/// Whether plan_inside keeps operand Kid of Parent as it is (the branches of
/// plan_inside's `kid`, in the same order): a leaf, a weakly typed node,
/// a transpose leaf, or an absorbed producer whose own operands are all kept.
template <class Rule, class Kid, class Parent>
constexpr bool kid_unchanged() {
  if constexpr (!is_node_v<Kid>) return true;
  else if constexpr (is_weak_v<Kid>) return true;
  else if constexpr (is_hint_v<Kid>) return false;
  else if constexpr (is_view_map_node_v<Kid>) return false;
  else if constexpr (is_named_expensive_v<Kid>) return false;
  else if constexpr (is_producer_epilogue_v<Kid> && !is_producer_epilogue_v<Parent>) return false;
  else if constexpr (fuse_producer_v<Rule, Kid, Parent>) return inside_unchanged_v<Rule, Kid>;
  else if constexpr (is_expensive_node_v<Kid>) return false;
  else return is_transpose_leaf_v<Kid>;
}
template <class Rule, class Op, class... A>
inline constexpr bool inside_unchanged_v<Rule, node<Op, A...>> = (kid_unchanged<Rule, A, node<Op, A...>>() && ...);

// One function, not a check plus a helper: plan_inside recurses once per
// expression level, and every nested instantiation counts against nvcc's
// limit of about 256 (see rebuild in recognize/decomposed.hpp).
template <class Policy, class Rule, class Op, class... A>
auto plan_inside(const node<Op, A...>& n) {
  if constexpr (inside_unchanged_v<Rule, node<Op, A...>>) {
    return n;
  } else {
    auto kid = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
      using Kid = type_at_t<K, type_list<A...>>;
      const Kid& k = fusor::get<K>(n.args);
      if constexpr (is_node_v<Kid> && is_weak_v<Kid>) {
        // Scalars and constants only: weakly typed, it takes the consumer's
        // operand type, so it is computed inside the consumer's kernel, never
        // in its own (a kernel would store it at its own strong type and change
        // the consumer's promotion: regression FZ-1 of tests/fuzz). Hints on
        // it are identities on values and are ignored.
        return k;
      } else if constexpr (is_hint_v<Kid>) {
        // The operand's own plan, its group(s) marked as forced (a plan chosen
        // at run time keeps its variants; regression FZ-2 of tests/fuzz).
        return mark_split<hint_reason<Kid>>(planned_hint_operand<Policy>(k));
      } else if constexpr (is_view_map_node_v<Kid>) {
        return plan_view_map<Policy>(k);
      } else if constexpr (is_named_expensive_v<Kid>) {
        return mark_split<reason::expensive_producer>(plan_expr<Policy>(k));
      } else if constexpr (is_producer_epilogue_v<Kid> && !is_producer_epilogue_v<node<Op, A...>>) {
        // f(reduction) into a consumer of another shape: f with its producer,
        // once per produced element (pattern/rules.hpp); inside such an f
        // itself (same shape) its parts stay together
        return mark_split<reason::producer_epilogue>(plan_expr<Policy>(k));
      } else if constexpr (is_node_v<Kid> && fuse_producer_v<Rule, Kid, node<Op, A...>>) {
        return plan_inside<Policy, Rule>(k);
      } else if constexpr (is_expensive_node_v<Kid>) {
        // A reduction or contraction feeding an elementwise consumer: the
        // consumer reads each of its results many times (broadcast back), so
        // computing it inline would repeat the whole reduction per element.
        return mark_split<reason::expensive_producer>(plan_expr<Policy>(k));
      } else {
        return plan_expr<Policy>(k);
      }
    };
    // Arities 1 to 3 spelled out, not an index lambda: one nested
    // instantiation less per expression level (see rebuild).
    using I0 = std::integral_constant<std::size_t, 0>;
    using I1 = std::integral_constant<std::size_t, 1>;
    using I2 = std::integral_constant<std::size_t, 2>;
    if constexpr (sizeof...(A) == 1) {
      return make_node_unchecked(n.op, kid(I0{}));
    } else if constexpr (sizeof...(A) == 2) {
      return make_node_unchecked(n.op, kid(I0{}), kid(I1{}));
    } else if constexpr (sizeof...(A) == 3) {
      return make_node_unchecked(n.op, kid(I0{}), kid(I1{}), kid(I2{}));
    } else {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return make_node_unchecked(n.op, kid(std::integral_constant<std::size_t, I>{})...);
      }(std::index_sequence_for<A...>{});
    }
  }
}

}  // namespace fusor::detail
