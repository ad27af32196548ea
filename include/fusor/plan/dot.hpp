#pragma once
/// @file plan/dot.hpp
/// to_dot(e): a Graphviz DOT picture of an expression's plan: one node per op
/// and input, edges from producers to consumers, and one cluster per fusion
/// group (kernel). Render with `dot -Tpng plan.dot -o plan.png`.
#include <fusor/plan/describe.hpp>

#include <string>
#include <typeinfo>
#include <vector>

namespace fusor {

namespace detail {
struct dot_writer {
  std::string body;      // statements of the cluster being written
  std::string clusters_text;  // finished clusters, producers first
  int next_id = 0, clusters = 0;
  describe_context names;  // numbers identity tags like describe()
  std::vector<std::pair<const std::type_info*, int>> shared;  // provably identical groups, drawn once

  // Emits e and returns its DOT node id.
  template <class E>
  int emit(const E& e, const std::string& indent) {
    if constexpr (is_view_v<E>) {
      const int id = next_id++;
      describe_context d;
      d.tags = names.tags;
      describe_into(d, e);
      names.tags = d.tags;
      body += indent + "n" + std::to_string(id) + " [shape=box, label=\"" + d.text + "\"];\n";
      return id;
    } else if constexpr (is_scalar_v<E> || is_constant_v<E>) {
      const int id = next_id++;
      describe_context d;
      describe_into(d, e);
      body += indent + "n" + std::to_string(id) + " [shape=plaintext, label=\"" + d.text + "\"];\n";
      return id;
    } else if constexpr (is_node_v<E>) {
      std::vector<int> kids;
      fusor::apply([&](const auto&... a) { (kids.push_back(emit(a, indent)), ...); }, e.args);
      const int id = next_id++;
      body += indent + "n" + std::to_string(id) + " [label=\"" + std::remove_cvref_t<decltype(e.op)>::name + "\"];\n";
      for (int k : kids) body += indent + "n" + std::to_string(k) + " -> n" + std::to_string(id) + ";\n";
      return id;
    } else if constexpr (requires { e.expr; }) {
      if constexpr (statically_identical_v<E>) {
        for (const auto& [t, id] : shared)
          if (*t == typeid(E)) return id;
      }
      // Each kernel is its own top-level cluster; producer kernels (emitted
      // while walking e.expr) are finished, and numbered, first.
      std::string outer;
      outer.swap(body);
      const int id = emit(e.expr, "    ");
      const int c = clusters++;
      [&]<class R, class X>(const group<R, X>&) {
        std::string label = std::string("kernel ") + std::to_string(c + 1) + ": " + R::name;
        if constexpr (requires { R::why; }) label += std::string("\\n(") + to_string(R::why) + ")";
        clusters_text += "  subgraph cluster_" + std::to_string(c) + " {\n    label=\"" + label + "\";\n" + body + "  }\n";
      }(e);
      body.swap(outer);
      if constexpr (statically_identical_v<E>) shared.emplace_back(&typeid(E), id);
      return id;
    } else if constexpr (requires { e.exprs; }) {  // sibling_group
      std::string outer;
      outer.swap(body);
      std::apply([&](const auto&... a) { (emit(a, "    "), ...); }, e.exprs);
      const int c = clusters++;
      clusters_text += "  subgraph cluster_" + std::to_string(c) + " {\n    label=\"kernel " + std::to_string(c + 1) +
                       ": horizontal, " + std::to_string(std::tuple_size_v<decltype(e.exprs)>) + " outputs\";\n" + body +
                       "  }\n";
      body.swap(outer);
      return -1;
    } else if constexpr (requires { e.parts; }) {
      std::apply([&](const auto&... a) { (emit(a, indent), ...); }, e.parts);
      return -1;
    } else if constexpr (requires { e.first; }) {
      return emit(e.first, indent);  // the recompute variant (no size given)
    }
  }
};
}  // namespace detail

/// Graphviz DOT text of the plan of e under Policy: clusters are kernels.
/// For a plan chosen at run time, the recompute variant is drawn.
template <class Policy = fused_policy, class E>
std::string to_dot(const E& e) {
  const auto planned = plan<Policy>(canonicalize(e));
  detail::dot_writer w;
  w.emit(planned, "  ");
  return "digraph fusor {\n  rankdir=BT;\n  node [fontname=\"Helvetica\"];\n" + w.clusters_text + w.body + "}\n";
}

}  // namespace fusor
