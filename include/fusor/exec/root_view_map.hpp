#pragma once
/// @file exec/root_view_map.hpp
/// A shape op over a computed value at the root of a run,
/// `run(out, reshape(softmax(x, 1), s), ex)`: the value is written straight
/// into `out` viewed through the inverse shape op, so no copy kernel follows
/// the value's own (issue 21, item 1). The inverse exists for the shape ops
/// that move no element out of reach: permute, transpose, and the reshapes
/// (reshape, flatten, squeeze, unsqueeze) where out's strides can express
/// the operand's shape (NumPy's no-copy rule, expr/view_ops.hpp). slice and
/// expand have none (a slice's result does not cover its operand; an
/// expand's covers elements several times), nor do shape ops over
/// elementwise expressions, which are index maps already (ops/shape_ops.hpp).
///
/// The run rewritten this way is the same kernels minus the copy, bitwise
/// the same values. It is taken only when out is a valid output of the
/// root's shape (otherwise the run reports the error on the expression as
/// written) and shares no element with any input (in place, the value's
/// temporary is what keeps the inputs intact). `explain(e)` describes the
/// plan with the copy, since it does not see the output's strides.
#include <fusor/exec/validate.hpp>
#include <fusor/ops/view_map.hpp>

#include <optional>
#include <type_traits>

namespace fusor::exec {

namespace root_view_map_detail {
/// The shape ops that only regroup dims (the same elements in the same order).
template <class F>
inline constexpr bool is_reshape_v = std::is_same_v<F, view_fn::squeeze> || std::is_same_v<F, view_fn::unsqueeze> ||
                                     std::is_same_v<F, view_fn::flatten>;
template <int N>
inline constexpr bool is_reshape_v<view_fn::reshape<N>> = true;

/// The permutation q with q[p[d]] = d (p already checked by permute).
template <int R>
perm_list inverse(const perm_list& p) {
  perm_list q;
  q.count = R;
  for (int d = 0; d < R; ++d) q.axis[(p.axis[d] % R + R) % R] = d;
  return q;
}

/// out (the shape op's result shape) viewed with the operand's shape `in`
/// through the inverse of f; nullopt where f has none or out's strides
/// cannot express it.
template <int R, class F, class O>
auto through_inverse(const F& f, const O& out, const shape<R>& in) {
  using T = typename O::value_type;
  using V = tensor_view<T, dextents<R>, typename O::space>;
  using result = std::optional<V>;
  constexpr int RO = O::rank;
  if constexpr (std::is_same_v<F, view_fn::permute> && R == RO) {
    return result(V(fusor::permute(out, inverse<R>(f.perm))));
  } else if constexpr (std::is_same_v<F, view_fn::transpose> && R == RO) {
    return result(V(fusor::transpose(out, int(f.a), int(f.b))));
  } else if constexpr (is_reshape_v<F>) {
    shape<R> s = row_major_strides<R>(in);
    index_t n = 1;
    for (int d = 0; d < R; ++d) n *= in[d];
    if (n != 0 && !view_ops_detail::nocopy_strides<RO, R>(out.shape(), out.strides(), in, s)) return result();
    return result(view_ops_detail::build<T, R, typename O::space>(out.data(), in, s));
  } else if constexpr (requires { f.first; f.second; }) {
    // second(first(x)): out through second's inverse (first's result shape), then first's
    using First = decltype(f.first);
    constexpr int RM = First::template rank<R>;
    const shape<RM> mid = op::view_map<First>::template output_shape<R>(op::view_map<First>{f.first}, in);
    const auto m = through_inverse<RM>(f.second, out, mid);
    if (!m) return result();
    return through_inverse<R>(f.first, *m, in);
  } else {
    return result();
  }
}

/// output_through_inverse for an output of the root's rank.
template <class V, class O, class F, class X>
std::optional<V> through_inverse_checked(const O& out, const node<op::view_map<F>, X>& e, const X& x) {
  constexpr int RX = rank_v<X>;
  const auto want = shape_of(e);  // (the shape op's own errors, as the written run would throw them)
  bool valid = out.data() != nullptr && out.shape() == want;
  for (int d = 0; d < O::rank; ++d) valid = valid && !(out.stride(d) == 0 && out.extent(d) > 1);
  if (!valid || self_overlapping<O::rank>(out.shape(), out.strides())) return std::optional<V>();
  const view_layout w = view_layout_of(out);
  bool shares = false;
  detail::for_each_view(x, [&](const auto& v, const char*, int) { shares = shares || may_share_elements(w, view_layout_of(v)); });
  if (shares) return std::optional<V>();
  return through_inverse<RX>(e.op.f, out, shape_of(x));
}
}  // namespace root_view_map_detail

/// out viewed through the inverse of root e's shape op (see the file
/// comment), or nullopt: then the run goes as written (a copy kernel).
template <class O, class F, class X>
auto output_through_inverse(const O& out, const node<op::view_map<F>, X>& e) {
  const auto& x = fusor::get<0>(e.args);
  constexpr int RX = rank_v<X>;
  using V = tensor_view<typename O::value_type, dextents<RX>, typename O::space>;
  if constexpr (O::rank != rank_v<node<op::view_map<F>, X>>) {
    return std::optional<V>();  // (run's static_assert names the rank mismatch)
  } else {
    return root_view_map_detail::through_inverse_checked<V>(out, e, x);
  }
}

}  // namespace fusor::exec
