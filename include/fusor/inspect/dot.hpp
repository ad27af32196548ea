#pragma once
/// @file inspect/dot.hpp
/// to_dot(e): a Graphviz DOT picture of an expression's plan: one node per op
/// and input, edges from producers to consumers, and one cluster per fusion
/// group (kernel). Render with `dot -Tpng plan.dot -o plan.png`.
#include <fusor/plan/describe.hpp>

#include <string>
#include <typeinfo>
#include <vector>

namespace fusor {

namespace detail {
/// The DOT writer: a walker for visit (pattern/plan_tree.hpp); each handler
/// emits its node and returns its DOT node id (-1: a node with no value of
/// its own, a sequence).
struct dot_writer {
  std::string body;           // statements of the cluster being written
  std::string clusters_text;  // finished clusters, producers first
  std::string indent = "  ";
  int next_id = 0, clusters = 0;
  describe_context names;  // numbers identity tags like describe()
  std::vector<std::pair<const std::type_info*, int>> shared;  // provably identical groups, drawn once
  // Multi-output kernels read through sibling_output, drawn once: their
  // outputs' node ids.
  std::vector<std::pair<const std::type_info*, std::vector<int>>> sibling_sets;

  template <class E>
  int operator()(const E& e) {
    return visit(*this, e);
  }
  template <class V>
  int view(const V& e) {
    const int id = next_id++;
    describe_context d;
    d.tags = names.tags;
    describe_into(d, e);
    names.tags = d.tags;
    body += indent + "n" + std::to_string(id) + " [shape=box, label=\"" + d.text + "\"];\n";
    return id;
  }
  template <class S>
  int scalar(const S& e) {
    const int id = next_id++;
    describe_context d;
    describe_into(d, e);
    body += indent + "n" + std::to_string(id) + " [shape=plaintext, label=\"" + d.text + "\"];\n";
    return id;
  }
  template <class C>
  int constant(const C& e) {
    return scalar(e);
  }
  template <class N>
  int node(const N& e) {
    std::vector<int> kids;
    fusor::apply([&](const auto&... a) { (kids.push_back((*this)(a)), ...); }, e.args);
    const int id = next_id++;
    body += indent + "n" + std::to_string(id) + " [label=\"" + std::remove_cvref_t<decltype(e.op)>::name + "\"];\n";
    for (int k : kids) body += indent + "n" + std::to_string(k) + " -> n" + std::to_string(id) + ";\n";
    return id;
  }
  // Runs f() with an empty body at cluster indentation, then wraps what it
  // wrote in a cluster labelled label(c) (c: the cluster's number). Producer
  // kernels met inside are finished, and numbered, first.
  template <class F, class L>
  auto in_cluster(F&& f, L&& label) {
    std::string outer, outer_indent = indent;
    outer.swap(body);
    indent = "    ";
    auto r = f();
    const int c = clusters++;
    clusters_text += "  subgraph cluster_" + std::to_string(c) + " {\n    label=\"" + label(c) + "\";\n" + body + "  }\n";
    body.swap(outer);
    indent = outer_indent;
    return r;
  }
  template <class R, class X>
  int group(const fusor::group<R, X>& e) {
    using E = fusor::group<R, X>;
    if constexpr (statically_identical_v<E>) {
      for (const auto& [t, id] : shared)
        if (*t == typeid(E)) return id;
    }
    const int id = in_cluster([&] { return (*this)(e.expr); }, [](int c) {
      std::string label = std::string("kernel ") + std::to_string(c + 1) + ": " + R::name;
      if constexpr (requires { R::why; }) label += std::string("\\n(") + to_string(R::why) + ")";
      return label;
    });
    if constexpr (statically_identical_v<E>) shared.emplace_back(&typeid(E), id);
    return id;
  }
  template <class R, class... X>
  std::vector<int> sibling_outputs(const fusor::sibling_group<R, X...>& e) {
    return in_cluster([&] {
      std::vector<int> ids;
      std::apply([&](const auto&... a) { (ids.push_back((*this)(a)), ...); }, e.exprs);
      return ids;
    }, [](int c) {
      return "kernel " + std::to_string(c + 1) + ": " + R::name + ", horizontal, " + std::to_string(sizeof...(X)) +
             " outputs";
    });
  }
  template <class R, class... X>
  int sibling_group(const fusor::sibling_group<R, X...>& e) {
    sibling_outputs(e);
    return -1;
  }
  /// Output I of a multi-output kernel: the kernel is drawn once, where it
  /// is first read; each reader's edge starts at output I's root.
  template <std::size_t I, class SG>
  int sibling_output(const fusor::sibling_output<I, SG>& e) {
    for (const auto& [t, ids] : sibling_sets)
      if (*t == typeid(SG)) return ids[I];
    auto ids = sibling_outputs(e.set);
    sibling_sets.emplace_back(&typeid(SG), ids);
    return ids[I];
  }
  template <class... P>
  int sequence(const plan_sequence<P...>& e) {
    std::apply([&](const auto&... a) { ((*this)(a), ...); }, e.parts);
    return -1;
  }
  /// A plan chosen at run time: the recompute variant (no size is given).
  template <class F, class S>
  int runtime_choice(const fusor::runtime_choice<F, S>& e) {
    return (*this)(e.first);
  }
  /// Recognised decomposed normalizations: the plan that runs for these
  /// tensors (the recognised form when the run-time check holds).
  template <class F, class S>
  int guarded(const guarded_plan<F, S>& e) {
    return e.holds ? (*this)(e.recognized) : (*this)(e.written);
  }
  template <class... E>
  int roots(const siblings_expr<E...>&) {
    static_assert(diagnostic::always_false<E...>, "fusor: internal: to_dot: an unplanned siblings set");
    return -1;
  }
};
}  // namespace detail

/// Graphviz DOT text of the plan of e under Policy: clusters are kernels.
/// For a plan chosen at run time, the recompute variant is drawn; for
/// recognised decomposed normalizations, the form that runs for e's tensors.
template <class Policy = fused_policy, class E>
std::string to_dot(const E& e) {
  const auto planned = plan<Policy>(canonicalize(e));
  detail::dot_writer w;
  w(planned);
  return "digraph fusor {\n  rankdir=BT;\n  node [fontname=\"Helvetica\"];\n" + w.clusters_text + w.body + "}\n";
}

}  // namespace fusor
