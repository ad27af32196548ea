#pragma once
/// @file pattern/plan_tree.hpp
/// The plan tree: every kind of node a planned expression is made of, the
/// kind trait `plan_kind_v<P>` and the one `visit(walker, p)`.
///
/// A plan is a type built from expression leaves and nodes (expr/) and the
/// kernel-level nodes below. Walkers (run, validate, explain, to_dot, shape_of,
/// kernel counting, cache keys) dispatch on `plan_kind_v`, never on member
/// names: a type that is not a plan node is a compile error naming it, and
/// `visit` calls the walker's handler named after the kind, so a walker that
/// does not handle a kind it meets does not compile (tests/static/
/// test_plan_tree.cpp pushes every kind through every walker).
///
/// The kinds live at the pattern stage (DESIGN.md puts them in plan/tree.hpp):
/// cost/, a stage below plan/, prices these nodes.
#include <fusor/expr/shape_inference.hpp>
#include <fusor/ops/view_map.hpp>
#include <fusor/pattern/rules.hpp>

#include <tuple>

namespace fusor {

/// A fusion group: one kernel computing `expr`, chosen by `Rule`.
template <class Rule, class E>
struct group {
  E expr;
};

/// Several groups that share one output shape, launched as one multi-output
/// kernel (horizontal fusion).
template <class Rule, class... E>
struct sibling_group {
  std::tuple<E...> exprs;
};

/// Output I of sibling group SG used as an operand: the Q, K and V
/// projections of an attention block computed by one multi-output GEMM
/// (x read once), each read by the attention kernel.
template <std::size_t I, class SG>
struct sibling_output {
  static constexpr std::size_t index = I;
  SG set;
};

/// Several independent plans launched one after the other (the roots of a
/// siblings set that do not share a kernel).
template <class... P>
struct plan_sequence {
  std::tuple<P...> parts;
};

/// Two plans for one expression whose choice depends on the run-time element
/// count: `first` recomputes shared producers in each use, `second`
/// materializes them. The executor asks the cost model once per run.
template <class First, class Second>
struct runtime_choice {
  First first;
  Second second;
};

/// What a guarded plan's run-time check decides.
enum class plan_guard {
  /// Decomposed normalizations (recognize/decomposed.hpp): the repeated
  /// operands are the same tensors and the axes agree.
  decomposed_norms,
  /// The epilogue of a contraction or reduction group keeps the producer's
  /// shape; when it broadcasts the result up to a larger shape, the producer
  /// runs first into a temporary and the epilogue after it (one more kernel).
  epilogue_keeps_shape,
  /// A norm prologue of gemm normalizes A's rows: not with trans_a (then A
  /// is normalized into a temporary first).
  norm_prologue_rows,
  /// Untagged repeats of an expensive subexpression (recognize/
  /// shared_by_value.hpp) are different values: each computed as written.
  /// (The written form comes first, so kernel_count counts it: an upper
  /// bound; when the repeats are one value the shared form runs, fewer
  /// kernels.)
  distinct_subexpressions,
  /// A depthwise conv is computed inside a consumer conv's loads when that
  /// conv is 1x1 (run-time weight extents); otherwise it runs first.
  pointwise_consumer,
  /// A ReduceX (sum, mean, max_reduce, ...) runs one block per row unless
  /// its rows are few and very long (kernels::row_chunks, a function of the
  /// run-time shape and axes); then each row is split into chunks: partials,
  /// then a finalize (two launches, rule::split_rows).
  whole_rows,
  /// Linears over one input (an attention block's Q/K/V projections,
  /// sibling linears) are one multi-output GEMM when their inputs are one
  /// value at run time (the same tensors and attributes); otherwise one GEMM
  /// each (one launch per projection, rule::separate_projections).
  shared_projection_input,
};

/// Text of a guard's decision, as explain() prints it.
constexpr const char* to_string(plan_guard g, bool holds) {
  switch (g) {
    case plan_guard::decomposed_norms:
      return holds ? "decomposed normalizations: recognised (repeated operands are the same tensors, the axes agree)"
                     " -> fused ops"
                   : "decomposed normalizations: kept as written (repeated operands or axes differ at run time)";
    case plan_guard::epilogue_keeps_shape:
      return holds ? "epilogue at the producer's shape -> one kernel"
                   : "the epilogue broadcasts the producer's result to a larger shape -> the producer into a "
                     "temporary, then the epilogue (one more kernel)";
    case plan_guard::norm_prologue_rows:
      return holds ? "gemm without trans_a: the norm prologue runs in the GEMM's loads -> one kernel"
                   : "gemm with trans_a: A is normalized into a temporary first (one more kernel)";
    case plan_guard::distinct_subexpressions:
      return holds ? "repeated subexpressions: kept as written (their tensors or attributes differ at run time)"
                   : "repeated subexpressions: the same tensors and attributes at every occurrence -> computed once "
                     "and shared";
    case plan_guard::pointwise_consumer:
      return holds ? "1x1 consumer conv: the depthwise conv runs in its loads -> one kernel"
                   : "the consumer conv is not 1x1: the depthwise conv runs first into a temporary (one more kernel)";
    case plan_guard::whole_rows:
      return holds ? "reduction rows: enough rows to fill the device -> one block per row, one kernel"
                   : "reduction rows: few, very long rows -> each split into chunks: partials, then a finalize (two "
                     "launches)";
    case plan_guard::shared_projection_input:
      return holds ? "projections (Q/K/V, sibling linears): one input at run time -> one multi-output GEMM"
                   : "projections (Q/K/V, sibling linears): their inputs differ at run time -> one GEMM each (one "
                     "launch per projection)";
  }
  return "?";
}

/// Two plans of one value, chosen by a run-time check made when the plan is
/// built (values, not types): `recognized` (the fused form) runs when `holds`,
/// `written` (the fallback) otherwise; `why` says what was checked. At a root
/// or as an operand of another group (then both forms have the same value
/// type and rank). kernels_of_t and kernel_count describe `recognized`; the
/// executor, explain and to_dot follow the branch taken.
template <class Recognized, class Written>
struct guarded_plan {
  Recognized recognized;
  Written written;
  bool holds;
  plan_guard why = plan_guard::decomposed_norms;
};

/// The kinds of plan node. Leaves and `node` are expressions (expr/);
/// `roots` is a siblings(...) set before planning.
enum class plan_kind {
  view,            ///< tensor_view: an input or a materialized temporary
  scalar,          ///< scalar<T>: a run-time value
  constant,        ///< constant<V>: a compile-time value
  node,            ///< node<Op, A...>: an op computed inside its group's kernel
  group,           ///< group<Rule, E>: one kernel
  sibling_group,   ///< sibling_group<Rule, E...>: one multi-output kernel
  sibling_output,  ///< sibling_output<I, SG>: output I of a multi-output kernel, as an operand
  sequence,        ///< plan_sequence<P...>: independent plans, one after another
  runtime_choice,  ///< runtime_choice<F, S>: picked by the cost model per run
  guarded,         ///< guarded_plan<R, W>: recognised form when a run-time check holds
  roots,           ///< siblings_expr<E...>: expressions computed together
};

/// The kind of plan node P; a type that is not one is a compile error.
template <class P>
struct plan_kind_of {
  static_assert(diagnostic::always_false<P>, "fusor: internal: this type is not a plan node (pattern/plan_tree.hpp)");
  static constexpr plan_kind value = plan_kind::view;
};
template <class T, class X, class S, class I>
struct plan_kind_of<tensor_view<T, X, S, I>> : std::integral_constant<plan_kind, plan_kind::view> {};
template <class T>
struct plan_kind_of<scalar<T>> : std::integral_constant<plan_kind, plan_kind::scalar> {};
template <auto V>
struct plan_kind_of<constant<V>> : std::integral_constant<plan_kind, plan_kind::constant> {};
template <class Op, class... A>
struct plan_kind_of<node<Op, A...>> : std::integral_constant<plan_kind, plan_kind::node> {};
template <class R, class E>
struct plan_kind_of<group<R, E>> : std::integral_constant<plan_kind, plan_kind::group> {};
template <class R, class... E>
struct plan_kind_of<sibling_group<R, E...>> : std::integral_constant<plan_kind, plan_kind::sibling_group> {};
template <std::size_t I, class SG>
struct plan_kind_of<sibling_output<I, SG>> : std::integral_constant<plan_kind, plan_kind::sibling_output> {};
template <class... P>
struct plan_kind_of<plan_sequence<P...>> : std::integral_constant<plan_kind, plan_kind::sequence> {};
template <class F, class S>
struct plan_kind_of<runtime_choice<F, S>> : std::integral_constant<plan_kind, plan_kind::runtime_choice> {};
template <class R, class W>
struct plan_kind_of<guarded_plan<R, W>> : std::integral_constant<plan_kind, plan_kind::guarded> {};
template <class... E>
struct plan_kind_of<siblings_expr<E...>> : std::integral_constant<plan_kind, plan_kind::roots> {};

/// plan_kind_of<P>::value for P without cv-ref qualifiers.
template <class P>
inline constexpr plan_kind plan_kind_v = plan_kind_of<std::remove_cvref_t<P>>::value;

/// True for the leaves: views, scalars and constants.
template <class P>
inline constexpr bool is_plan_leaf_v =
    plan_kind_v<P> == plan_kind::view || plan_kind_v<P> == plan_kind::scalar || plan_kind_v<P> == plan_kind::constant;

/// True for a node that a kernel of its own computes before its reader runs
/// (a group or an output of a sibling group used as an operand).
template <class P>
inline constexpr bool is_kernel_operand_v = plan_kind_v<P> == plan_kind::group ||
                                            plan_kind_v<P> == plan_kind::sibling_output ||
                                            plan_kind_v<P> == plan_kind::guarded;

/// True when planned expression E holds a kernel operand, or a shape op over
/// a computed value (ops/view_map.hpp), which reads one. (The executor
/// walks only such subtrees to materialize their operands: walking the
/// others would nest three instantiations per level, and nvcc's front end
/// gives up on a chain of about 85 levels, "cannot deduce the return type";
/// compile_bench chain 128.)
template <class E>
inline constexpr bool has_kernel_operand_v = is_kernel_operand_v<E>;
template <class Op, class... A>
inline constexpr bool has_kernel_operand_v<node<Op, A...>> =
    is_view_map_node_v<node<Op, A...>> || (has_kernel_operand_v<A> || ...);

/// Calls the handler of walker w named after p's kind: w.view(p),
/// w.scalar(p), w.constant(p) (or w.leaf(p) for all three when w has it),
/// w.node(p), w.group(p), w.sibling_group(p), w.sibling_output(p),
/// w.sequence(p), w.runtime_choice(p), w.guarded(p), w.roots(p). A walker
/// without the handler of a kind it meets does not compile. Handlers recurse
/// by calling visit on children; their return types should be declared (not
/// deduced), which keeps nvcc's nested-instantiation depth per level at one.
template <class W, class P>
constexpr decltype(auto) visit(W&& w, const P& p) {
  constexpr plan_kind k = plan_kind_v<P>;
  if constexpr (k == plan_kind::view || k == plan_kind::scalar || k == plan_kind::constant) {
    if constexpr (requires { w.leaf(p); }) return w.leaf(p);
    else if constexpr (k == plan_kind::view) return w.view(p);
    else if constexpr (k == plan_kind::scalar) return w.scalar(p);
    else return w.constant(p);
  } else if constexpr (k == plan_kind::node) {
    return w.node(p);
  } else if constexpr (k == plan_kind::group) {
    return w.group(p);
  } else if constexpr (k == plan_kind::sibling_group) {
    return w.sibling_group(p);
  } else if constexpr (k == plan_kind::sibling_output) {
    return w.sibling_output(p);
  } else if constexpr (k == plan_kind::sequence) {
    return w.sequence(p);
  } else if constexpr (k == plan_kind::runtime_choice) {
    return w.runtime_choice(p);
  } else if constexpr (k == plan_kind::guarded) {
    return w.guarded(p);
  } else {
    static_assert(k == plan_kind::roots);
    return w.roots(p);
  }
}

/// The children of a plan node in order, each passed to f: a node's
/// operands, a group's expression, a sibling group's roots, a sibling
/// output's group, a sequence's parts, both variants of a run-time choice or
/// guarded plan (recognised first), a siblings set's expressions. Leaves have
/// none. For walkers to which every kind is a container of its children.
template <class P, class F>
constexpr void for_each_child(const P& p, F&& f) {
  constexpr plan_kind k = plan_kind_v<P>;
  if constexpr (k == plan_kind::node) fusor::apply([&](const auto&... a) { (f(a), ...); }, p.args);
  else if constexpr (k == plan_kind::group) f(p.expr);
  else if constexpr (k == plan_kind::sibling_group) std::apply([&](const auto&... a) { (f(a), ...); }, p.exprs);
  else if constexpr (k == plan_kind::sibling_output) f(p.set);
  else if constexpr (k == plan_kind::sequence) std::apply([&](const auto&... a) { (f(a), ...); }, p.parts);
  else if constexpr (k == plan_kind::runtime_choice) f(p.first), f(p.second);
  else if constexpr (k == plan_kind::guarded) f(p.recognized), f(p.written);
  else if constexpr (k == plan_kind::roots) std::apply([&](const auto&... a) { (f(a), ...); }, p.exprs);
  else static_assert(is_plan_leaf_v<P>);
}

template <class Rule, class E>
struct expr_traits<group<Rule, E>> : expr_traits<E> {};
template <std::size_t I, class R, class... X>
struct expr_traits<sibling_output<I, sibling_group<R, X...>>> : expr_traits<std::tuple_element_t<I, std::tuple<X...>>> {};
template <class F, class S>
struct expr_traits<guarded_plan<F, S>> : expr_traits<F> {};

template <class Rule, class E>
inline constexpr bool statically_identical_v<group<Rule, E>> = statically_identical_v<E>;

/// Result extents of a group: its expression's (found by shape_of through
/// argument-dependent lookup, so expr/shape_inference.hpp needs no plan kinds).
template <class Rule, class E>
shape<rank_v<E>> shape_of(const group<Rule, E>& g) {
  return shape_of(g.expr);
}
/// Result extents of a guarded plan: those of the branch its check chose.
template <class F, class S>
shape<rank_v<F>> shape_of(const guarded_plan<F, S>& g) {
  if (g.holds) return shape_of(g.recognized);
  return shape_of(g.written);
}
/// Result extents of output I of a multi-output group.
template <std::size_t I, class SG>
shape<rank_v<sibling_output<I, SG>>> shape_of(const sibling_output<I, SG>& o) {
  return shape_of(std::get<I>(o.set.exprs));
}

/// The rule of a group or sibling group.
template <class G>
struct group_rule;
template <class R, class X>
struct group_rule<group<R, X>> {
  using type = R;
};
template <class R, class... X>
struct group_rule<sibling_group<R, X...>> {
  using type = R;
};
template <class G>
using group_rule_t = typename group_rule<G>::type;

/// Launches of one group of rule R: 1, or R::launches for a group whose
/// plan splits it (plan/policy.hpp: rule::split_rows,
/// rule::separate_projections). kernel_count counts a group once (its kernel
/// list names kernels, not launches); run_result::kernels,
/// kernels_planned and explain count launches.
template <class R>
inline constexpr int rule_launches_v = [] {
  if constexpr (requires { R::launches; }) return int(R::launches);
  else return 1;
}();

}  // namespace fusor
