#pragma once
/// @file plan/plan.hpp
/// The planner: turns a canonical expression into a planned tree whose
/// `group<Rule, E>` nodes are the kernels to launch. Inside a group, operands
/// that are themselves groups are materialized by their own kernel first; all
/// other nodes are computed in registers. The plan is a type, so kernel counts
/// and matched rules are compile-time constants; where the best plan depends
/// on run-time extents it is a runtime_choice of two instantiated plans.
///
/// Steps at each group root (cost/decision.hpp gives the reasons):
///  1. the first matching fusion rule roots a group and absorbs the producers
///     it accepts (vertical fusion); fusor::materialize(e) is never absorbed;
///  2. budgets: while the group's register or parameter estimate exceeds the
///     device model's limit, its largest operand subtree is split off;
///  3. shared producers: a provably identical subexpression used several times
///     is either recomputed per use or materialized once, whichever the model
///     estimates faster (decided at compile time with static extents);
///  4. siblings with one rule and equal ranks share one multi-output kernel
///     (horizontal fusion).
#include <fusor/cost/decision.hpp>
#include <fusor/plan/decomposed.hpp>

namespace fusor {

/// How to plan: a fusion rule list, whether siblings may share a kernel, and
/// the device model (a type with `static constexpr device_model model`).
template <class Rules, bool Horizontal, class Model = models::h100_sxm>
struct planning_policy {
  using rules = Rules;
  using model_type = Model;
  static constexpr bool horizontal = Horizontal;
  static constexpr const device_model& model = Model::model;
  /// Inference batch_norm directly after conv2d is folded into the conv's
  /// weights and bias (every policy but the unfused reference's).
  static constexpr bool fold_batch_norm = !std::is_same_v<Rules, unfused_rules>;
};
/// fusor's default: the built-in pattern library, horizontal fusion, H100.
using fused_policy = planning_policy<default_fusion_rules, true, models::h100_sxm>;
/// The default library planned for a generic host CPU (the host executor).
using host_policy = planning_policy<default_fusion_rules, true, models::generic_cpu>;
/// Every op its own kernel (the unfused executor).
using unfused_policy = planning_policy<unfused_rules, false, models::generic_cpu>;
/// fusor's default library with user rules tried first (each rule checked
/// against the rule interface, with a "fusor:" message when it does not fit).
template <class... UserRules>
  requires(diagnostic::check_fusion_rule<UserRules>::value && ...)
using with_rules =
    planning_policy<type_list<UserRules..., rule::attention, rule::contraction, rule::reduction, rule::elementwise_chain>,
                    true, models::h100_sxm>;
/// A policy planned for another device model.
template <class Policy, class Model>
using for_model = planning_policy<typename Policy::rules, Policy::horizontal, Model>;

/// A group split off from its consumer's group for `why`; behaves as Rule.
template <reason Why, class Rule>
struct split_off : Rule {
  static constexpr reason why = Why;
  /// Computed once per weight set and cached by the executor, so it is not
  /// counted among the kernels of a run (kernels_of_t, kernel_count).
  static constexpr bool cached = Why == reason::folded_weights;
};

namespace detail {

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
template <class E>
inline constexpr reason hint_reason = reason::forced_materialize;
template <class X>
inline constexpr reason hint_reason<node<op::cache_weights, X>> = reason::folded_weights;
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
        mark_split<Why>(p.recognized), mark_split<Why>(p.written), p.holds};
  } else {
    // Leaves, nodes, sibling groups and outputs: nothing to mark (a sequence
    // and a siblings set are roots, never operands).
    static_assert(k != plan_kind::sequence && k != plan_kind::roots);
    return p;
  }
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
  else if constexpr (is_named_expensive_v<Kid>) return false;
  else if constexpr (fuse_producer_v<Rule, Kid, Parent>) return inside_unchanged_v<Rule, Kid>;
  else if constexpr (is_expensive_node_v<Kid>) return false;
  else return is_transpose_leaf_v<Kid>;
}
template <class Rule, class Op, class... A>
inline constexpr bool inside_unchanged_v<Rule, node<Op, A...>> = (kid_unchanged<Rule, A, node<Op, A...>>() && ...);

// One function, not a check plus a helper: plan_inside recurses once per
// expression level, and every nested instantiation counts against nvcc's
// limit of about 256 (see rebuild in plan/decomposed.hpp).
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
        return mark_split<hint_reason<Kid>>(plan_expr<Policy>(fusor::get<0>(k.args)));
      } else if constexpr (is_named_expensive_v<Kid>) {
        return mark_split<reason::expensive_producer>(plan_expr<Policy>(k));
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

// Contraction groups (rule::contraction): an epilogue region above the
// first spine contraction, the contraction, and prologue regions in its
// operands (see rule::contraction).
template <class E>
inline constexpr bool is_norm_node_v = false;
template <class X, class G, class B>
inline constexpr bool is_norm_node_v<node<op::layer_norm, X, G, B>> = true;
template <class X, class G>
inline constexpr bool is_norm_node_v<node<op::rms_norm, X, G>> = true;
template <class E>
inline constexpr bool is_conv_node_v = false;
template <class Op, class... A>
inline constexpr bool is_conv_node_v<node<Op, A...>> = is_conv_op_v<Op>;
template <class Op>
inline constexpr bool takes_norm_prologue_v =
    std::is_same_v<Op, op::linear> || std::is_same_v<Op, op::matmul> || std::is_same_v<Op, op::gemm>;

/// Depthwise convs reachable through elementwise nodes only (a consumer conv
/// may compute them while loading).
template <class E>
inline constexpr int spine_convs_v = 0;
template <class Op, class... A>
inline constexpr int spine_convs_v<node<Op, A...>> =
    std::is_same_v<Op, op::depthwise_conv2d> ? 1
    : is_contraction_node_v<node<Op, A...>>   ? 0
    : (is_elementwise_node_v<node<Op, A...>> ? (0 + ... + (is_named_expensive_v<A> ? 0 : spine_convs_v<A>)) : 0);
template <class X>
inline constexpr int spine_convs_v<node<op::materialize, X>> = 0;
template <class X>
inline constexpr int spine_convs_v<node<op::cache_weights, X>> = 0;

template <class Policy, bool AllowConv, class C>
auto plan_contraction_core(const C& c);

/// An operand of a contraction: elementwise producers are absorbed (its
/// loads evaluate them); with AllowConv a conv reached through elementwise
/// ops is computed inside the loads (depthwise -> pointwise); anything else
/// gets its own kernel.
template <class Policy, bool AllowConv, class E>
auto plan_prologue(const E& e) {
  if constexpr (!is_node_v<E> || is_transpose_leaf_v<E>) {
    return e;
  } else if constexpr (is_hint_v<E>) {
    return mark_split<hint_reason<E>>(plan_expr<Policy>(fusor::get<0>(e.args)));
  } else if constexpr (is_named_expensive_v<E>) {
    return mark_split<reason::expensive_producer>(plan_expr<Policy>(e));
  } else if constexpr (AllowConv && is_depthwise_node_v<E>) {
    return plan_contraction_core<Policy, false>(e);
  } else if constexpr (AllowConv && is_elementwise_node_v<E> && spine_contractions_v<E> == 1 && spine_convs_v<E> == 1) {
    return rebuild(e, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
      if constexpr (spine_convs_v<K> == 1) return plan_prologue<Policy, true>(k);
      else return plan_prologue<Policy, false>(k);
    });
  } else if constexpr (is_elementwise_node_v<E> && spine_contractions_v<E> == 0) {
    return plan_inside<Policy, rule::elementwise_chain>(e);
  } else if constexpr (is_elementwise_node_v<E> || is_expensive_node_v<E>) {
    return mark_split<reason::expensive_producer>(plan_expr<Policy>(e));
  } else {
    return plan_expr<Policy>(e);
  }
}

/// The contraction node itself: A may carry a norm (linear/matmul/gemm) or,
/// with AllowConv, a conv (conv2d consumer); other operands are plain.
template <class Policy, bool AllowConv, class C>
auto plan_contraction_core(const C& c) {
  using Op = typename C::op_type;
  return rebuild(c, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
    if constexpr (I == 0 && is_norm_node_v<K> && takes_norm_prologue_v<Op>) {
      return rebuild(k, [&]<class KK, std::size_t J>(const KK& kk, std::integral_constant<std::size_t, J>) {
        return plan_prologue<Policy, false>(kk);
      });
    } else {
      return plan_prologue<Policy, I == 0 && AllowConv && is_conv_op_v<Op>>(k);
    }
  });
}

/// Index of the first operand of node E whose spine holds a contraction
/// (Reductions = false) or a reduction (true); the arity when none does.
template <class E, bool Reductions>
inline constexpr int first_spine_operand_v = 0;
template <class Op, class... A, bool Reductions>
inline constexpr int first_spine_operand_v<node<Op, A...>, Reductions> = [] {
  constexpr int spines[] = {(Reductions ? operand_spine_reductions_v<A> : operand_spine_contractions_v<A>)..., 1};
  int i = 0;
  while (i < int(sizeof...(A)) && spines[i] == 0) ++i;
  return i;
}();

/// The epilogue region: elementwise ops down to the first spine contraction.
template <class Policy, class E>
auto plan_epilogue(const E& e) {
  if constexpr (is_contraction_node_v<E>) {
    return plan_contraction_core<Policy, true>(e);
  } else {
    constexpr int first = first_spine_operand_v<E, false>;
    return rebuild(e, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
      if constexpr (int(I) == first && !is_hint_v<K>) return plan_epilogue<Policy>(k);
      else return plan_prologue<Policy, false>(k);
    });
  }
}

/// The epilogue region of a reduction group: elementwise ops down to the
/// spine reduction, which keeps its own elementwise prologue.
template <class Policy, class E>
auto plan_reduction_epilogue(const E& e) {
  if constexpr (is_reduction_node_v<E>) {
    return plan_inside<Policy, rule::reduction>(e);
  } else {
    constexpr int first = first_spine_operand_v<E, true>;
    return rebuild(e, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
      if constexpr (int(I) == first && !is_hint_v<K>) return plan_reduction_epilogue<Policy>(k);
      else return plan_prologue<Policy, false>(k);
    });
  }
}

// Horizontal fusion of an attention block's projections: when q, k and v
// are each a linear over the same input x (their own groups), one
// multi-output GEMM computes all three (x read once) and the attention kernel
// reads its three outputs. (Whether the three x are the same tensor is
// checked at run time; if not, the GEMMs run one after the other.)
template <class G>
struct projection_of {
  static constexpr bool ok = false;
};
template <class R, class X, class W, class B>
struct projection_of<group<R, node<op::linear, X, W, B>>> {
  static constexpr bool ok = is_view_v<X>;
  using input = X;
};
template <class N>
auto fuse_attention_projections(const N& n) {
  using A = std::remove_cvref_t<decltype(n.args)>;
  using G0 = std::tuple_element_t<0, A>;
  using G1 = std::tuple_element_t<1, A>;
  using G2 = std::tuple_element_t<2, A>;
  if constexpr (projection_of<G0>::ok && projection_of<G1>::ok && projection_of<G2>::ok) {
    if constexpr (std::is_same_v<typename projection_of<G0>::input, typename projection_of<G1>::input> &&
                  std::is_same_v<typename projection_of<G0>::input, typename projection_of<G2>::input>) {
      using SG = sibling_group<rule::contraction, decltype(fusor::get<0>(n.args).expr), decltype(fusor::get<1>(n.args).expr),
                               decltype(fusor::get<2>(n.args).expr)>;
      const SG set{{fusor::get<0>(n.args).expr, fusor::get<1>(n.args).expr, fusor::get<2>(n.args).expr}};
      return make_node_unchecked(n.op, sibling_output<0, SG>{set}, sibling_output<1, SG>{set}, sibling_output<2, SG>{set},
                                 fusor::get<3>(n.args));
    } else {
      return n;
    }
  } else {
    return n;
  }
}

// Step 2: split the largest operand subtree while a budget is exceeded.
template <class X>
constexpr int largest_operand() {
  if constexpr (!is_node_v<X>) {
    return -1;
  } else {
    return []<class Op, class... A>(std::type_identity<node<Op, A...>>) {
      if constexpr (std::is_same_v<Op, op::fuse>) {
        return -1;  // the user forced this subtree into its consumer
      } else {
        int best = -1, size = 0, i = 0;
        ((node_count<A> > size && !is_fuse_hint_v<A> ? (best = i, size = node_count<A>) : 0, ++i), ...);
        return best;
      }
    }(std::type_identity<X>{});
  }
}

template <class Policy, class R, class X>
auto enforce_budgets(const group<R, X>& g) {
  constexpr bool regs_ok = within_register_budget<X>(Policy::model);
  constexpr bool params_ok = within_parameter_budget<X>(Policy::model);
  constexpr int cut = largest_operand<X>();
  if constexpr ((regs_ok && params_ok) || cut < 0) {
    return g;
  } else {
    constexpr reason why = regs_ok ? reason::parameter_budget : reason::register_budget;
    auto split = [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto one = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
        const auto& k = fusor::get<K>(g.expr.args);
        if constexpr (int(K) == cut) {
          using Kid = std::remove_cvref_t<decltype(k)>;
          return enforce_budgets<Policy>(group<split_off<why, R>, Kid>{k});
        } else {
          return k;
        }
      };
      return make_node_unchecked(g.expr.op, one(std::integral_constant<std::size_t, I>{})...);
    }(std::make_index_sequence<std::tuple_size_v<decltype(g.expr.args)>>{});
    return enforce_budgets<Policy>(group<R, decltype(split)>{split});
  }
}

// Step 3: shared producers. All node subtrees of a group in pre-order, as one
// flat list; a candidate is counted against the list with the __is_same
// builtin (no template instantiation per pair), so finding repeats costs
// O(n) instantiations for an n-node group.
template <class E>
struct subtrees {
  using type = type_list<>;
};
template <class Op, class... A>
struct subtrees<node<Op, A...>> {
  using type = typename concat_lists<type_list<node<Op, A...>>, typename subtrees<A>::type...>::type;
};

template <class N, class L>
inline constexpr int count_in = 0;
// A flat array and a loop, not a fold expression: g++ takes time quadratic
// in n for one n-term fold, so n counts of this kind were cubic
// (docs/compile_time.md).
template <class N, class... S>
inline constexpr int count_in<N, type_list<S...>> = [] {
  constexpr bool same[] = {false, __is_same(N, S)...};
  int c = 0;
  for (bool b : same) c += b ? 1 : 0;
  return c;
}();

template <class N>
inline constexpr bool shareable = false;
template <class Op, class... A>
inline constexpr bool shareable<node<Op, A...>> =
    !__is_same(Op, op::fuse) && statically_identical_v<node<Op, A...>> && !is_weak_v<node<Op, A...>>;  // FZ-1

/// The subtree list as one class: a slot per position, each slot derived
/// from the key of its subtree type. A subtree type at two positions makes
/// its key an ambiguous base, so `const Set*` no longer converts to a
/// pointer to it: one conversion check per candidate finds the repeats, no
/// instantiation per pair (and no deduction against the subtree types:
/// g++ 12 crashes unifying types with floating-point constants).
template <class S>
struct subtree_key {};
template <std::size_t I, class S>
struct subtree_slot : subtree_key<S> {};
template <class Seq, class... S>
struct subtree_set;
template <std::size_t... I, class... S>
struct subtree_set<std::index_sequence<I...>, S...> : subtree_slot<I, S>... {};
/// Whether subtree type S occurs at one position of Set only.
template <class S, class Set>
inline constexpr bool once_in = std::is_convertible_v<const Set*, const subtree_key<S>*>;

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
    auto producer = enforce_budgets<Policy>(group<split_off<reason::materialize_shared, R>, S>{s});
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

template <class Policy, class E>
auto plan_expr(const E& e) {
  if constexpr (!is_node_v<E>) {
    return e;
  } else if constexpr (is_hint_v<E>) {
    return plan_expr<Policy>(fusor::get<0>(e.args));  // a root is materialized anyway
  } else if constexpr (is_transpose_leaf_v<E>) {
    return e;  // a zero-copy view
  } else {
    using R = matching_rule_t<E, typename Policy::rules>;
    static_assert(!std::is_void_v<R>, "fusor: plan: no fusion rule matches this op (see the expression type below)");
    if constexpr (requires { R::custom_group; }) {
      // A contraction group: its tile kernel recomputes nothing per element,
      // so budgets and shared-producer decisions do not apply.
      auto inner = plan_epilogue<Policy>(e);
      return group<R, decltype(inner)>{inner};
    } else if constexpr (requires { R::reduction_epilogue; } && !is_reduction_node_v<E>) {
      auto inner = plan_reduction_epilogue<Policy>(e);
      return group<R, decltype(inner)>{inner};
    } else if constexpr (is_attention_node_v<E> && Policy::horizontal) {
      auto inner = fuse_attention_projections(plan_inside<Policy, R>(e));
      return group<R, decltype(inner)>{inner};
    } else {
      auto inner = plan_inside<Policy, R>(e);
      return decide_shared<Policy>(group<R, decltype(inner)>{inner});
    }
  }
}

// Kernels a plan launches per run: its kernel list (a bare view written to
// an output is a copy group, see as_output_plan); -1 when a run-time choice
// decides it.
template <class E, plan_kind K = plan_kind_v<E>>
inline constexpr int group_count = list_length<kernels_of_t<E>>;
template <class E>
inline constexpr int group_count<E, plan_kind::runtime_choice> = -1;
template <class F, class S>
inline constexpr int group_count<guarded_plan<F, S>, plan_kind::guarded> = group_count<F>;
template <class... P>
inline constexpr int group_count<plan_sequence<P...>, plan_kind::sequence> =
    ((group_count<P> < 0) || ...) ? -1 : list_length<kernels_of_t<plan_sequence<P...>>>;
}  // namespace detail

namespace detail {
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
}  // namespace detail

namespace detail {
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

/// The plan of a root written to an output: a bare view, scalar, constant or
/// transposed view becomes a one-op copy group, so that the plan lists the
/// copy kernel that run() launches (kernel_count, explain, to_dot).
template <class P>
auto as_output_plan(const P& p) {
  if constexpr (is_plan_leaf_v<P> || is_transpose_leaf_v<P>)
    return group<rule::single_op, node<op::identity, P>>{make_node_unchecked(op::identity{}, p)};
  else return p;
}

template <class Policy, class E>
auto plan_root(const E& e) {
  if constexpr (Policy::fold_batch_norm && has_composite_v<E>)
    return as_output_plan(plan_expr<Policy>(fuse_composites<unfoldable_convs_t<E>>(e)));
  else return as_output_plan(plan_expr<Policy>(e));
}

/// Whether fuse_composites changes root E (false without computing the
/// unfoldable-conv list when E has no composite).
template <class E>
constexpr bool composites_change() {
  if constexpr (!has_composite_v<E>) return false;
  else return !std::is_same_v<E, decltype(fuse_composites<unfoldable_convs_t<E>>(std::declval<const E&>()))>;
}

template <class Policy, class... E>
auto plan_roots(const siblings_expr<E...>& s) {
  using Rules = typename Policy::rules;
  if constexpr (Policy::fold_batch_norm && (composites_change<E>() || ...)) {
    // Fusion-only rewrites in each root first (see fuse_composites).
    return plan_roots<Policy>(std::apply([](const auto&... e) {
      return siblings_expr<decltype(fuse_composites<unfoldable_convs_t<std::remove_cvref_t<decltype(e)>>>(e))...>{
          {fuse_composites<unfoldable_convs_t<std::remove_cvref_t<decltype(e)>>>(e)...}};
    }, s.exprs));
  } else return std::apply(
      [](const auto&... e) {
        using Rs = type_list<matching_rule_t<std::remove_cvref_t<decltype(e)>, Rules>...>;
        constexpr bool one_rule = []<class R0, class... R>(type_list<R0, R...>) {
          return (std::is_same_v<R0, R> && ...) && !std::is_void_v<R0>;
        }(Rs{});
        using R0 = matching_rule_t<std::tuple_element_t<0, std::tuple<E...>>, Rules>;
        // Only the elementwise kernel family writes several outputs; siblings of
        // any other family (a user kernel) run as separate groups.
        constexpr bool multi_output = [] {
          if constexpr (std::is_void_v<R0>) return false;
          else return std::is_same_v<typename R0::kernel, kernel_family::elementwise>;
        }();
        if constexpr (Policy::horizontal && one_rule && multi_output && sizeof...(E) > 1 && fuse_siblings_v<E...>) {
          return sibling_group<R0, decltype(detail::plan_inside<Policy, R0>(e))...>{
              {detail::plan_inside<Policy, R0>(e)...}};
        } else {
          return plan_sequence<decltype(as_output_plan(detail::plan_expr<Policy>(e)))...>{
              {as_output_plan(detail::plan_expr<Policy>(e))...}};
        }
      },
      s.exprs);
}

/// A fused policy's plan of e where e contains decomposed normalizations
/// (plan/decomposed.hpp): both the recognised and the written form, chosen
/// at run time by the same-tensor / same-axes check.
template <class Policy, class E, class PlanFn>
auto plan_recognized(const E& e, PlanFn&& plan_of) {
  bool holds = true;
  const auto r = recognize_decomposed(e, holds);
  auto pr = plan_of(r);
  auto pw = plan_of(e);
  return guarded_plan<decltype(pr), decltype(pw)>{pr, pw, holds};
}
}  // namespace detail

/// The planned tree of canonical expression e under Policy.
template <class Policy = fused_policy, class E>
auto plan(const E& e) {
  if constexpr (Policy::fold_batch_norm && detail::has_decomposed_v<E>)
    return detail::plan_recognized<Policy>(e, [](const auto& x) { return detail::plan_root<Policy>(x); });
  else return detail::plan_root<Policy>(e);
}

/// Plans several root expressions. With Policy::horizontal and one shared rule,
/// the roots become one sibling_group (one multi-output kernel). Decomposed
/// normalizations are recognised in a single root only.
template <class Policy = fused_policy, class... E>
auto plan(const siblings_expr<E...>& s) {
  if constexpr (sizeof...(E) == 1 && Policy::fold_batch_norm && (detail::has_decomposed_v<E> && ...))
    return detail::plan_recognized<Policy>(std::get<0>(s.exprs), [](const auto& x) {
      return detail::plan_roots<Policy>(siblings_expr<std::remove_cvref_t<decltype(x)>>{{x}});
    });
  else return detail::plan_roots<Policy>(s);
}

/// Planned tree type of expression type E (canonicalized first).
template <class E, class Policy = fused_policy>
using plan_t = decltype(plan<Policy>(canonicalize(std::declval<const E&>())));

/// Number of kernels a planned tree launches (-1: decided at run time).
template <class P>
inline constexpr int group_count_v = detail::group_count<std::remove_cvref_t<P>>;

/// Number of kernels the fused plan of E launches per run (the type of
/// run_result::kernels). A static_assert explains when the plan is chosen at
/// run time (dynamic extents and a shared producer).
template <class E, class Policy = fused_policy>
inline constexpr std::size_t kernel_count = [] {
  if constexpr (!(expression<E> || is_siblings_v<E>)) {
    static_assert(diagnostic::always_false<E>,
                  "fusor: kernel_count<E>: E is not the type of a fusor expression (nor of a siblings(...) set); "
                  FUSOR_WHAT_IS_AN_EXPRESSION);
    return std::size_t(0);
  } else {
    constexpr int n = group_count_v<plan_t<E, Policy>>;
    static_assert(n >= 0, "fusor: kernel_count: this expression's plan is chosen at run time (dynamic extents and a "
                          "shared producer); use static extents, fusor::fuse/materialize, or explain(e)");
    return std::size_t(n);
  }
}();

/// Number of kernels the unfused executor launches for E (one per op).
template <class E>
inline constexpr std::size_t unfused_kernel_count = std::size_t(group_count_v<plan_t<E, unfused_policy>>);

/// True when E's plan under Policy is chosen at run time.
template <class E, class Policy = fused_policy>
inline constexpr bool plan_is_dynamic_v = group_count_v<plan_t<E, Policy>> < 0;

namespace detail {
// group_rule (pattern/group.hpp) for a group or sibling group; void otherwise.
template <class P>
struct root_rule {
  using type = void;
};
template <class P>
  requires requires { typename group_rule<P>::type; }
struct root_rule<P> : group_rule<P> {};
template <class F, class S>
struct root_rule<guarded_plan<F, S>> : root_rule<F> {};
}  // namespace detail

/// The rule of the group that computes E's result (void for a plan_sequence).
template <class E, class Policy = fused_policy>
using root_rule_t = typename detail::root_rule<plan_t<E, Policy>>::type;

}  // namespace fusor
