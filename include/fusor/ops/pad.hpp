#pragma once
/// @file ops/pad.hpp
/// pad (ONNX Pad, opset 19+: modes constant, reflect, edge, wrap, the axes
/// input; NumPy np.pad; PyTorch F.pad). One output element per thread
/// (kernels/pad.hpp): each output index maps back to an input index per dim
/// (or to the constant), so elementwise producers are evaluated at the
/// element read and elementwise consumers of the result's shape run before
/// the store: `pad(relu(x), p) * s` is one kernel, no padded copy.
///
/// Negative pads remove elements (ONNX): along a dim with begin b and end e,
/// the input is first cropped by max(0, -b) at the start and max(0, -e) at
/// the end, then padded by max(0, b) and max(0, e) by the mode's rule over
/// the cropped extent.
#include <fusor/ops/reduction.hpp>

#include <initializer_list>
#include <string>

namespace fusor {

/// How pad fills the new elements (ONNX Pad's `mode`, np.pad's names).
///  - constant: the value given.
///  - reflect: mirrored about the edge element, which is not repeated
///    ([1 2 3] padded by 2: 3 2 | 1 2 3 | 2 1); periodic with period
///    2 (n - 1) past that (np.pad's result for pads longer than the dim).
///  - edge: the edge element repeated.
///  - wrap: the dim continued periodically (2 3 | 1 2 3 | 1 2).
enum class pad_mode { constant, reflect, edge, wrap };

/// The pads of a pad: ONNX's order, all begins then all ends
/// ([x1_begin, x2_begin, ..., x1_end, x2_end, ...]), one pair per axis
/// (every dim when no axes are given). From a braced list or any range of
/// integers (std::vector<int64_t>, std::span, std::array).
struct pad_list {
  static constexpr int max_count = 2 * max_reduce_rank;
  int count = 0;
  index_t pad[max_count] = {};
  pad_list() = default;
  pad_list(std::initializer_list<index_t> p) {
    for (index_t x : p) push(x);
  }
  template <class Range>
    requires requires(const Range& r) {
      r.begin();
      r.end();
      requires std::is_integral_v<std::remove_cvref_t<decltype(*r.begin())>>;
    }
  pad_list(const Range& r) {
    for (auto x : r) push(index_t(x));
  }
  void push(index_t x) {
    if (count == max_count) throw argument_error("fusor: pad: more than 16 pads (rank 8 at most)");
    pad[count++] = x;
  }
};

namespace op {

/// pad of a rank-R operand: begin[d] / end[d] per dim (negative: cropped).
struct pad : reduction_base {
  static constexpr int arity = 1;
  static constexpr const char* name = "pad";
  static constexpr double flops = 1;
  /// Reads its input at other positions than it writes: no in-place run (exec/validate.hpp).
  static constexpr bool reads_other_positions = true;
  index_t begin[max_reduce_rank] = {};
  index_t end[max_reduce_rank] = {};
  pad_mode mode = pad_mode::constant;
  double value = 0;
  template <class X>
  using result = value_t<X>;
  template <class X>
  using operand_types = type_list<value_t<X>>;
  template <class X>
  using static_extents = dextents<std::size_t(rank_v<X>)>;

  /// Extent of dim d's input left after the negative pads.
  index_t kept(int d, index_t in) const {
    return in - (begin[d] < 0 ? -begin[d] : 0) - (end[d] < 0 ? -end[d] : 0);
  }
  template <int R>
  static shape<R> output_shape(const pad& op, const shape<R>& in) {
    shape<R> out = in;
    for (int d = 0; d < R; ++d) {
      const index_t kept = op.kept(d, in[d]);
      index_t grown = 0;
      if (__builtin_add_overflow(in[d], op.begin[d], &grown) || __builtin_add_overflow(grown, op.end[d], &out[d]))
        throw shape_error("fusor: pad: x " + to_string<R>(in) + " padded by (" + std::to_string(op.begin[d]) + ", " +
                          std::to_string(op.end[d]) + ") along dim " + std::to_string(d) + ": the extent overflows");
      const auto where = [&] {
        return "fusor: pad: x " + to_string<R>(in) + " padded by (" + std::to_string(op.begin[d]) + ", " +
               std::to_string(op.end[d]) + ") along dim " + std::to_string(d);
      };
      if (kept < 0) throw shape_error(where() + " removes more elements than the dim has");
      if (op.mode != pad_mode::constant && kept == 0 && out[d] > 0)
        throw shape_error(where() + ": a " + std::string(op.mode == pad_mode::reflect ? "reflect" : op.mode == pad_mode::edge ? "edge" : "wrap") +
                          " pad needs at least one element to repeat");
    }
    return out;
  }
};

}  // namespace op

template <class E>
inline constexpr bool is_pad_node_v = false;
template <class X>
inline constexpr bool is_pad_node_v<node<op::pad, X>> = true;

/// pad(x, pads, mode, value, axes): x of any rank (1 to 8) and dtype; the
/// result has x's dtype and extent in + begin + end along each dim.
/// `pads` in ONNX's order (all begins, then all ends) for the dims in
/// `axes` (negative counted from the end; default: every dim in order);
/// `value` (constant mode only) is converted to x's dtype as fusor stores
/// values (integers saturate, NaN gives 0; a double holds integers exactly
/// up to 2^53 only). Examples:
/// `pad(x, {0, 0, 1, 1, 0, 0, 1, 1})` (zero border of 1 around H and W of
/// an NCHW x), `pad(x, {2, 2}, pad_mode::reflect, 0, {-1})`.
/// @throws argument_error (here) when pads is not two per axis or an axis
///         is out of range or repeated; shape_error (when shapes are
///         checked) when a negative pad removes more than a dim holds, or a
///         reflect / edge / wrap pad has nothing to repeat.
template <expression X>
auto pad(X&& x, pad_list pads, pad_mode mode = pad_mode::constant, double value = 0, axis_list axes = {}) {
  constexpr int R = rank_v<X>;
  static_assert(R >= 1 && R <= max_reduce_rank, "fusor: pad: x must have rank 1 to 8");
  op::pad p{};
  p.mode = mode;
  p.value = value;
  int dims[max_reduce_rank] = {};
  const int n = axes.count == 0 ? R : axes.count;
  for (int k = 0; k < n; ++k) {
    const int a = axes.count == 0 ? k : (axes.axis[k] < 0 ? axes.axis[k] + R : axes.axis[k]);
    if (a < 0 || a >= R)
      throw argument_error("fusor: pad: axis " + std::to_string(axes.axis[k]) + " is out of range for x of rank " +
                           std::to_string(R));
    for (int j = 0; j < k; ++j)
      if (dims[j] == a) throw argument_error("fusor: pad: axis " + std::to_string(a) + " given twice");
    dims[k] = a;
  }
  if (pads.count != 2 * n)
    throw argument_error("fusor: pad: " + std::to_string(pads.count) + " pads for " + std::to_string(n) +
                         " axes (want 2 per axis: all begins, then all ends)");
  for (int k = 0; k < n; ++k) {
    p.begin[dims[k]] = pads.pad[k];
    p.end[dims[k]] = pads.pad[n + k];
  }
  return make_node(p, std::forward<X>(x));
}
// (pads is a braced list, which a pack cannot deduce: written out)
template <class X>
  requires(diagnostic::some_operand_misfits<X>("e"))
auto pad(const X&, pad_list = {}, pad_mode = pad_mode::constant, double = 0, axis_list = {}) {
  static_assert(diagnostic::always_false<X>, "fusor: pad: an operand is not a fusor expression; pad(x, pads, mode, "
                                             "value, axes): x is an expression; " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}

}  // namespace fusor
