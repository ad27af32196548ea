#pragma once
/// @file cost/shaped_estimate.hpp
/// Estimates of kernels and plans at the run-time shapes of their operands,
/// for what types alone cannot price: a contraction's, convolution's or
/// attention's work depends on its extents (GEMM 2K FLOPs per output
/// element, conv 2 C KH KW / groups, attention 4 S_kv D per query row, half
/// for causal: each op's `flops_per_output`). A group holding such an op is
/// priced here from its operands' real sizes:
///   bytes = sum over distinct sources (views by address, operand groups) of
///           their elements * element size, + the outputs
///   flops = sum over its nodes of (FLOPs per output element of the node) *
///           (the node's output elements)
/// and timed with kernel_seconds (cost/estimate.hpp). Every other group keeps
/// its type-level estimate (cost/estimate.hpp). explain() prints these.
#include <fusor/cost/decision.hpp>
#include <fusor/pattern/plan_key.hpp>

#include <string>
#include <typeinfo>
#include <vector>

namespace fusor::cost {

namespace detail {
/// True for an op that prices itself from operand shapes.
template <class Op, class... A>
concept prices_itself = requires(const Op& op, const shape<rank_v<A>>&... s) {
  { Op::template flops_per_output<rank_v<A>...>(op, s...) } -> std::convertible_to<double>;
};
/// True when E, within one group (operand groups are sources), holds such an op.
template <class E>
inline constexpr bool has_priced_node_v = false;
template <class Op, class... A>
inline constexpr bool has_priced_node_v<node<Op, A...>> = prices_itself<Op, A...> || (has_priced_node_v<A> || ...);
/// True when kernel G (a group or sibling group) holds such an op.
template <class G>
inline constexpr bool kernel_has_priced_node_v = false;
template <class R, class X>
inline constexpr bool kernel_has_priced_node_v<group<R, X>> = has_priced_node_v<X>;
template <class R, class... X>
inline constexpr bool kernel_has_priced_node_v<sibling_group<R, X...>> = (has_priced_node_v<X> || ...);

/// Bytes and FLOPs of one kernel at run-time shapes (see the file comment).
struct shaped_totals {
  double bytes = 0, flops = 0;
  std::vector<const void*> views;  // distinct view addresses read
  std::vector<const std::type_info*> groups;  // distinct (provably identical) operand groups read

  template <class E>
  void add(const E& e) {
    constexpr plan_kind k = plan_kind_v<E>;
    if constexpr (k == plan_kind::view) {
      const void* d = e.data();
      for (const void* v : views)
        if (v == d) return;
      views.push_back(d);
      bytes += double(element_count<E::rank>(e.shape(), "view")) * double(sizeof(typename E::value_type));
    } else if constexpr (k == plan_kind::group || k == plan_kind::sibling_output || k == plan_kind::guarded) {
      if constexpr (statically_identical_v<E>) {
        for (const auto* t : groups)
          if (*t == typeid(E)) return;
        groups.push_back(&typeid(E));
      }
      bytes += double(element_count_of(e)) * double(sizeof(value_t<E>));  // a temporary, read once
    } else if constexpr (k == plan_kind::node) {
      using Op = typename E::op_type;
      const double out = double(element_count_of(e));
      fusor::apply([&](const auto&... a) {
        if constexpr (prices_itself<Op, std::remove_cvref_t<decltype(a)>...>)
          flops += out * double(Op::template flops_per_output<rank_v<decltype(a)>...>(e.op, shape_of(a)...));
        else flops += out * double(Op::flops);
        (add(a), ...);
      }, e.args);
    } else {
      static_assert(k == plan_kind::scalar || k == plan_kind::constant,
                    "fusor: internal: shaped estimate: a plan root inside a group's expression");
    }
  }
};
}  // namespace detail

/// Estimate of kernel G (a group or sibling group) given its value: at
/// run-time shapes when it holds an op that prices itself, otherwise the
/// type-level estimate at n elements (cost/estimate.hpp); as many launches
/// as G's rule says (rule_launches_v: split rows and separate Q/K/V
/// projections run one group's work in several launches).
template <class G>
estimate kernel_estimate_at(const device_model& m, const G& g, double n) {
  constexpr int launches = rule_launches_v<group_rule_t<G>>;
  estimate typed = detail::kernel_estimate<G>::of(m, n);
  typed.launches = launches;
  if constexpr (!detail::kernel_has_priced_node_v<G>) {
    return typed;
  } else {
    detail::shaped_totals t;
    if constexpr (plan_kind_v<G> == plan_kind::group) {
      t.add(g.expr);
      t.bytes += double(element_count_of(g)) * double(sizeof(value_t<G>));
    } else {
      std::apply([&](const auto&... x) {
        (t.add(x), ...);
        ((t.bytes += double(element_count_of(x)) * double(sizeof(value_t<decltype(x)>))), ...);
      }, g.exprs);
    }
    return {launches, t.bytes, t.flops, typed.registers, kernel_seconds(m, t.bytes, t.flops, typed.registers)};
  }
}

namespace detail {
/// The walker behind for_each_kernel (visit, pattern/plan_tree.hpp).
template <class F>
struct kernel_walker {
  const device_model& m;
  double n;
  F& f;
  std::vector<const std::type_info*> seen;
  std::vector<std::string> seen_sets;  // prepared_key of the sibling groups counted
  std::string* notes = nullptr;  // when set: one line per run-time check met (explain)

  template <class P>
  void operator()(const P& p) {
    visit(*this, p);
  }
  template <class P>
  bool first_time() {
    for (const auto* t : seen)
      if (*t == typeid(P)) return false;
    seen.push_back(&typeid(P));
    return true;
  }
  template <class L>
  void leaf(const L&) {}
  template <class N>
  void node(const N& p) {
    fusor::apply([&](const auto&... a) { ((*this)(a), ...); }, p.args);
  }
  template <class R, class X>
  void group(const fusor::group<R, X>& g) {
    if constexpr (statically_identical_v<fusor::group<R, X>>)
      if (!first_time<fusor::group<R, X>>()) return;
    (*this)(g.expr);
    f(g);
  }
  template <class R, class... X>
  void sibling_group(const fusor::sibling_group<R, X...>& g) {
    std::apply([&](const auto&... a) { ((*this)(a), ...); }, g.exprs);
    f(g);
  }
  /// A sibling group runs once per value, as the executor memoizes it
  /// (fusor::detail::prepared_key; an empty key: at every use).
  template <class SO>
  void sibling_output(const SO& o) {
    const std::string key = fusor::detail::prepared_key(o.set);
    if (!key.empty()) {
      for (const auto& k : seen_sets)
        if (k == key) return;
      seen_sets.push_back(key);
    }
    (*this)(o.set);
  }
  template <class... P>
  void sequence(const plan_sequence<P...>& s) {
    std::apply([&](const auto&... a) { ((*this)(a), ...); }, s.parts);
  }
  template <class A, class B>
  void runtime_choice(const fusor::runtime_choice<A, B>& c) {
    // (at the choice's own element count, as the executor decides it)
    if (compare_plans<A, B>(m, double(element_count_of(c.first))).first_wins) (*this)(c.first);
    else (*this)(c.second);
  }
  template <class A, class B>
  void guarded(const guarded_plan<A, B>& g) {
    if (notes != nullptr) *notes += std::string("  check: ") + to_string(g.why, g.holds) + "\n";
    if (g.holds) (*this)(g.recognized);
    else (*this)(g.written);
  }
  template <class... E>
  void roots(const siblings_expr<E...>&) {
    static_assert(diagnostic::always_false<E...>, "fusor: internal: for_each_kernel: an unplanned siblings set");
  }
};
}  // namespace detail

/// Calls f(kernel) for each kernel of plan p in launch order (producers
/// first), each provably identical group once, as kernels_of_t lists them;
/// a run-time choice resolved as the executor resolves it (at its element
/// count on model m), a guarded plan by its check; n prices the kernels. Groups of prepared (cached) weights are included: they run on
/// the first use of a weight set (detail::is_cached_rule_v tells them apart).
template <class P, class F>
void for_each_kernel(const device_model& m, double n, const P& p, F&& f, std::string* notes = nullptr) {
  detail::kernel_walker<std::remove_reference_t<F>> w{m, n, f, {}, {}, notes};
  w(p);
}

/// Estimate of plan p at its run-time shapes: the sum over the kernels a run
/// launches (prepared weights excluded, as in kernels_of_t).
template <class P>
estimate plan_estimate_at(const device_model& m, const P& p, double n) {
  estimate total{};
  for_each_kernel(m, n, p, [&](const auto& k) {
    using K = std::remove_cvref_t<decltype(k)>;
    if constexpr (!fusor::detail::is_cached_rule_v<group_rule_t<K>>) total = total + kernel_estimate_at(m, k, n);
  });
  return total;
}

}  // namespace fusor::cost

namespace fusor {

/// The kernels a run of plan p launches (kernels_planned, inspect/; a run
/// checks it under FUSOR_CHECK_LAUNCHES): `per_run`, the plan's kernels on
/// the branches its run-time checks and choices take, each as many launches
/// as its rule says (rule_launches_v: two for split rows, three for separate
/// Q/K/V projections), and `prepared`, the kernels that prepare cached
/// weights (folded batch norm), which only a run that does not find them in
/// the executor's cache adds.
struct planned_kernels {
  std::size_t per_run = 0;
  std::size_t prepared = 0;
};
/// planned_kernels of plan p, planned under Policy (n prices run-time
/// choices as the executor does: the element count of the first root).
template <class Policy, class P>
planned_kernels kernels_of_plan(const P& p, double n) {
  planned_kernels k;
  cost::for_each_kernel(Policy::model, n, p, [&](const auto& g) {
    using G = std::remove_cvref_t<decltype(g)>;
    constexpr std::size_t launches = std::size_t(rule_launches_v<group_rule_t<G>>);
    if constexpr (fusor::detail::is_cached_rule_v<group_rule_t<G>>) k.prepared += launches;
    else k.per_run += launches;
  });
  return k;
}

}  // namespace fusor
