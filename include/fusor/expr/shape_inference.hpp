#pragma once
/// @file expr/shape_inference.hpp
/// Run-time shape inference: NumPy/ONNX broadcasting through every node, or
/// the op's own `output_shape` (reductions, see ops/reduction.hpp).
#include <fusor/expr/node.hpp>

#include <string>

namespace fusor {

namespace detail {
/// Broadcasts shape s (rank RS) into acc (rank R) in place; false when an
/// extent pair is neither equal nor 1.
template <int R, int RS>
bool broadcast_into(shape<R>& acc, const shape<RS>& s) {
  for (int d = 0; d < RS; ++d) {
    const int da = d + (R - RS);
    if (acc[da] == s[d] || s[d] == 1) continue;
    if (acc[da] != 1) return false;
    acc[da] = s[d];
  }
  return true;
}
}  // namespace detail

/// Run-time shape of an expression (groups: pattern/plan_tree.hpp); throws shape_error
/// naming the op whose operands do not broadcast.
template <class E>
shape<rank_v<E>> shape_of(const E& e) {
  if constexpr (is_view_v<E>) {
    return e.shape();
  } else if constexpr (is_scalar_v<E> || is_constant_v<E>) {
    return {};
  } else if constexpr (is_node_v<E> && requires { std::remove_cvref_t<decltype(e.op)>::has_output_shape; }) {
    // An op with its own shape rule (reductions, normalizations): a static
    // `output_shape(op, operand shapes...)` that throws shape_error.
    using Op = std::remove_cvref_t<decltype(e.op)>;
    return fusor::apply([&](const auto&... a) {
      return Op::template output_shape<rank_v<decltype(a)>...>(e.op, shape_of(a)...);
    }, e.args);
  } else if constexpr (is_node_v<E>) {
    using Op = std::remove_cvref_t<decltype(e.op)>;
    constexpr int R = rank_v<E>;
    shape<R> acc{};
    for (int d = 0; d < R; ++d) acc[d] = 1;
    int bad = -1, k = 0;  // the first operand that does not fit the ones before it
    fusor::apply([&](const auto&... a) {
      ((bad = (bad < 0 && !detail::broadcast_into<R, rank_v<decltype(a)>>(acc, shape_of(a))) ? k : bad, ++k), ...);
    }, e.args);
    if (bad >= 0) {
      // Name every operand with its own shape (not padded to the result's rank).
      std::string text, culprit;
      int i = 0;
      fusor::apply([&](const auto&... a) {
        auto one = [&](const auto& x) {
          const std::string t = to_string<rank_v<decltype(x)>>(shape_of(x));
          text += (text.empty() ? "" : " and ") + t;
          if (i++ == bad) culprit = t;
        };
        (one(a), ...);
      }, e.args);
      // With two operands the culprit is obvious; with more, say which one.
      if (k > 2) culprit = "; the first that does not fit the operands before it: " + culprit + " (operand " +
                           std::to_string(bad) + ")";
      else culprit.clear();
      throw shape_error(std::string("fusor: ") + Op::name + ": operand shapes " + text +
                        " do not broadcast (NumPy/ONNX rules: right-aligned, each pair of extents equal or 1)" + culprit);
    }
    return acc;
  } else {
    // Plan nodes (groups, sibling outputs) have their own overloads, found
    // by argument-dependent lookup (pattern/plan_tree.hpp).
    static_assert(is_node_v<E>, "fusor: internal: shape_of of a type that is neither an expression nor a plan node");
    return {};
  }
}

/// Number of elements of expression e's result.
template <class E>
index_t element_count_of(const E& e) {
  return element_count<rank_v<E>>(shape_of(e), "expression");
}

}  // namespace fusor
