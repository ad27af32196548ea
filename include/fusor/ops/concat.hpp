#pragma once
/// @file ops/concat.hpp
/// concat (ONNX Concat, opset 13; torch.cat; np.concatenate): inputs of one
/// rank and dtype joined along `axis`, every other extent equal. One output
/// element per thread (kernels/concat.hpp): the output index along the axis
/// picks the input and the index inside it, so each input's elementwise
/// producers are evaluated where they are read and elementwise consumers of
/// the result's shape run before the store: `relu(concat(1, a * s, b + t))`
/// is one kernel and no input is copied into a joined buffer (DenseNet and
/// U-Net skip connections, the two halves of rotary embeddings, KV-cache
/// appends).
#include <fusor/ops/reduction.hpp>

#include <string>
#include <tuple>
#include <type_traits>

namespace fusor {
namespace op {

/// concat of N inputs of rank R along dim `axis` (normalized, 0 <= axis < R).
struct concat : reduction_base {
  static constexpr const char* name = "concat";
  static constexpr double flops = 0;
  /// Reads its inputs at other positions than it writes: no in-place run (exec/validate.hpp).
  static constexpr bool reads_other_positions = true;
  int axis = 0;
  template <class X, class...>
  using result = value_t<X>;
  template <class... X>
  using operand_types = type_list<value_t<X>...>;
  template <class X, class...>
  using static_extents = dextents<std::size_t(rank_v<X>)>;

  template <int R, int... Rs>
  static shape<R> output_shape(const concat& op, const shape<R>& first, const shape<Rs>&... rest) {
    shape<R> out = first;
    const auto names = [&] {
      std::string s = to_string<R>(first);
      ((s += ", " + to_string<Rs>(rest)), ...);
      return s;
    };
    const auto add = [&](const auto& in) {
      for (int d = 0; d < R; ++d)
        if (d != op.axis && in[d] != first[d])
          throw shape_error("fusor: concat: inputs " + names() + " differ in dim " + std::to_string(d) +
                            " (all but the concat axis " + std::to_string(op.axis) + " must be equal)");
      out[op.axis] += in[op.axis];
    };
    (add(rest), ...);
    (void)add;  // (unused with one input)
    return out;
  }
};

}  // namespace op

template <class E>
inline constexpr bool is_concat_node_v = false;
template <class... X>
inline constexpr bool is_concat_node_v<node<op::concat, X...>> = true;

/// concat(axis, xs...): one or more expressions of one rank (>= 1) and one
/// dtype, joined along `axis` (negative counted from the end); the result
/// has their dtype and their extents, the axis's extent being the sum.
/// Example: `concat(1, x, relu(y))` for NCHW x [N, C1, H, W], y [N, C2, H, W]
/// gives [N, C1 + C2, H, W].
/// @throws argument_error (here) for an axis out of range; shape_error
///         (when shapes are checked) when another extent differs, naming
///         concat and every input's shape. Mixed ranks or dtypes do not
///         compile (a `fusor: concat:` message; cast<T> first).
template <expression X, expression... Xs>
auto concat(int axis, X&& x, Xs&&... xs) {
  constexpr int R = rank_v<X>;
  static_assert(R >= 1, "fusor: concat: the inputs need rank >= 1");
  static_assert(((rank_v<Xs> == R) && ...), "fusor: concat: every input must have the same rank");
  static_assert((std::is_same_v<value_t<X>, value_t<Xs>> && ...),
                "fusor: concat: every input must have the same dtype (cast<T> one of them first)");
  const int a = axis < 0 ? axis + R : axis;
  if (a < 0 || a >= R)
    throw argument_error("fusor: concat: axis " + std::to_string(axis) + " is out of range for inputs of rank " +
                         std::to_string(R));
  op::concat c{};
  c.axis = a;
  // (make_node_unchecked: the inputs' extents differ along the axis; output_shape checks the others)
  return make_node_unchecked(c, std::remove_cvref_t<X>(std::forward<X>(x)), std::remove_cvref_t<Xs>(std::forward<Xs>(xs))...);
}
// (claims a call whose first argument is an expression too: torch.cat's
// order, `concat(x, y, 1)`, gets this line instead of "no matching function")
FUSOR_OPERAND_FALLBACK_WHEN(concat,
                            (sizeof...(A) >= 2 &&
                             (::fusor::expression<std::tuple_element_t<0, std::tuple<A...>>> ||
                              ::fusor::diagnostic::some_operand_misfits<A...>(".eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"))),
                            "concat(axis, xs...): the axis (an integer) comes first, then each x, an expression")

}  // namespace fusor
