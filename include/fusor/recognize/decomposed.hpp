#pragma once
/// @file recognize/decomposed.hpp
/// Recognition of normalizations written out op by op (issue 5): the fused
/// planner runs them as the fused reduction op, one kernel, instead of the
/// three to five kernels (and [rows, cols] temporaries) of the written form.
///
///   exp(x - max_reduce(x, {a})) / sum(exp(x - max_reduce(x, {a})), {a})  -> softmax(x, a)
///   x - logsumexp(x, {a}), x + -logsumexp(x, {a})                       -> log_softmax(x, a)
///   (x - m) - log(sum(exp(x - m), {a})),  m = max_reduce(x, {a})        -> log_softmax(x, a)
///   c / sqrt(mean(square(c), A) + eps),   c = x - mean(x, A)            -> layer_norm(x, -, -, a, eps)
///   x / sqrt(mean(square(x), A) + eps)                                  -> rms_norm(x, -, eps, a)
/// with `* rsqrt(...)` or `* reciprocal(sqrt(...))` for `/ sqrt(...)`,
/// `c * c` or `pow(c, 2)` for `square(c)`, `* reciprocal(sum(...))` for
/// softmax's `/ sum(...)` (ONNX's function bodies spell them so), the
/// operands of `+` and `*` in either order, A = the trailing axes {a, ..., R-1}
/// (layer_norm, rms_norm) and keepdims reductions. Scale and shift stay
/// elementwise ops above the norm; the reduction rule fuses them as its
/// epilogue (still one kernel). mse_loss needs no recognition: mse_loss(a, b)
/// IS mean(square(a - b)) (ops/reduction.hpp), which runs as one kernel.
///
/// Why here and not in canon/: every canon/ rewrite is bit-exact, and these
/// are not. The fused ops sum in another order (and layer_norm's statistics
/// come from a Welford mean and a correction pass in fp32), so results
/// differ from the
/// written form by rounding:
/// a few ulp (tests/host/test_reductions.cpp states the bounds). Like
/// attention recognition (plan/plan.hpp), this is a fusion-only rewrite: the
/// unfused reference executor always runs the expression as written. NaN and
/// Inf propagate as in the written form (max subtraction is in both).
///
/// Types decide what CAN be rewritten; values decide what IS: the repeated
/// occurrences of x must be the same computation (same data pointers, extents
/// and strides, same op attributes, same scalar bits) and the reductions must
/// name one axis (softmax) or the same trailing axes (norms). That check runs
/// on the run-time values (plan time, before any launch); when it fails the
/// plan falls back to the written form (a guarded_plan, pattern/group.hpp),
/// so a lookalike (softmax over another axis's maximum, two different tensors
/// of one view type) computes exactly what it says.
#include <fusor/ops/reduction.hpp>
#include <fusor/recognize/same_value.hpp>

#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

namespace fusor::detail {

/// Rebuilds node n with f(kid, integral_constant<I>) for each operand.
/// Arities 1 to 4 are spelled out: the planner recurses through rebuild once
/// per expression level, and an index lambda here would add one nested
/// instantiation per level; nvcc's front end stops at about 256 nested
/// instantiations of functions with deduced return types
/// (docs/compile_time.md, "nvcc").
template <class Op, class... A, class F>
auto rebuild(const node<Op, A...>& n, F&& f) {
  using I0 = std::integral_constant<std::size_t, 0>;
  using I1 = std::integral_constant<std::size_t, 1>;
  using I2 = std::integral_constant<std::size_t, 2>;
  using I3 = std::integral_constant<std::size_t, 3>;
  const auto& a = n.args;
  if constexpr (sizeof...(A) == 1) {
    return make_node_unchecked(n.op, f(fusor::get<0>(a), I0{}));
  } else if constexpr (sizeof...(A) == 2) {
    return make_node_unchecked(n.op, f(fusor::get<0>(a), I0{}), f(fusor::get<1>(a), I1{}));
  } else if constexpr (sizeof...(A) == 3) {
    return make_node_unchecked(n.op, f(fusor::get<0>(a), I0{}), f(fusor::get<1>(a), I1{}), f(fusor::get<2>(a), I2{}));
  } else if constexpr (sizeof...(A) == 4) {
    return make_node_unchecked(n.op, f(fusor::get<0>(a), I0{}), f(fusor::get<1>(a), I1{}), f(fusor::get<2>(a), I2{}),
                               f(fusor::get<3>(a), I3{}));
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return make_node_unchecked(n.op, f(fusor::get<I>(a), std::integral_constant<std::size_t, I>{})...);
    }(std::index_sequence_for<A...>{});
  }
}

// -------------------------------------------------------- axis conditions
/// The one axis a keepdims reduction of a rank-R operand reduces, or -1.
template <int R, class Op>
int single_reduced_axis(const Op& op) {
  if (!op.keepdims || op.noop_with_empty_axes) return -1;
  if (op.axes.count == 0) return R == 1 ? 0 : -1;  // all axes of a rank-1 operand
  if (op.axes.count != 1) return -1;
  const int a = op.axes.axis[0] < 0 ? op.axes.axis[0] + R : op.axes.axis[0];
  return a >= 0 && a < R ? a : -1;
}
/// The first axis a when a keepdims reduction reduces exactly {a, ..., R-1}, or -1.
template <int R, class Op>
int trailing_reduced_axis(const Op& op) {
  bool m[max_reduce_rank];
  if (!op.keepdims || R == 0 || !reduced_dims<R>(op, m)) return -1;
  int first = R;
  while (first > 0 && m[first - 1]) --first;
  for (int d = 0; d < first; ++d)
    if (m[d]) return -1;
  return first < R ? first : -1;
}

template <class S>
constexpr bool eps_operand_v = is_scalar_v<S> || is_constant_v<S>;
/// eps as the norm ops store it (float), or NaN when that changes the value
/// the written form adds: a weak eps meets an f32 (or 16-bit, computed in
/// f32) variance as float(eps), but an f64 variance as the exact double.
template <class T, class S>
float eps_value(const S& s) {
  const double v = [&] {
    if constexpr (is_scalar_v<S>) return double(s.value);
    else return double(S::value);
  }();
  if constexpr (std::is_same_v<T, double>) return double(float(v)) == v ? float(v) : __builtin_nanf("");
  else return float(v);
}

template <class X>
constexpr bool floating_operand_v = [] {
  if constexpr (requires { typename value_t<X>; }) return std::is_floating_point_v<value_t<X>>;
  else return false;
}();

template <reduce_kind K>
using keep_reduce = op::reduce<K, -1>;
template <class X>
using max_of = node<keep_reduce<reduce_kind::max>, X>;
template <class X>
using mean_of = node<keep_reduce<reduce_kind::mean>, X>;
template <class X>
using shifted = node<op::sub, X, max_of<X>>;  // x - max(x)

template <class E>
auto recognize_decomposed(const E& e, bool& holds);

// ----------------------------------------------------------------- softmax
template <class E>
struct softmax_form {
  static constexpr bool ok = false;
};
/// exp(x - m) / sum(exp(x - m)) (Den = 0), or exp(x - m) times
/// reciprocal(sum(exp(x - m))) in either order (ONNX Softmax's function
/// body; NumIndex = the exp's position, Den = 1: the sum under reciprocal).
template <class X, int NumIndex, int Den>
struct softmax_form_of {
  static constexpr bool ok = floating_operand_v<X> && rank_v<X> >= 1;
  template <class E>
  static auto rewrite(const E& e, bool& holds) {
    constexpr int R = rank_v<X>;
    const auto& num = fusor::get<NumIndex>(e.args);
    const auto& den = [&]() -> const auto& {
      if constexpr (Den == 0) return fusor::get<1 - NumIndex>(e.args);
      else return fusor::get<0>(fusor::get<1 - NumIndex>(e.args).args);
    }();
    const auto& sub = fusor::get<0>(num.args);
    const auto& x = fusor::get<0>(sub.args);
    const auto& m = fusor::get<1>(sub.args);
    const int a = single_reduced_axis<R>(m.op);
    const bool same = a >= 0 && single_reduced_axis<R>(den.op) == a && same_value(num, fusor::get<0>(den.args)) &&
                      same_value(x, fusor::get<0>(m.args));
    holds = holds && same;
    return softmax(recognize_decomposed(x, holds), same ? a : -1);
  }
};
template <class X>
using exp_shifted = node<op::exp, shifted<X>>;
template <class X>
using sum_exp_shifted = node<keep_reduce<reduce_kind::sum>, exp_shifted<X>>;
template <class X>
struct softmax_form<node<op::div, exp_shifted<X>, sum_exp_shifted<X>>> : softmax_form_of<X, 0, 0> {};
template <class X>
struct softmax_form<node<op::mul, exp_shifted<X>, node<op::reciprocal, sum_exp_shifted<X>>>> : softmax_form_of<X, 0, 1> {};
template <class X>
struct softmax_form<node<op::mul, node<op::reciprocal, sum_exp_shifted<X>>, exp_shifted<X>>> : softmax_form_of<X, 1, 1> {};

// ------------------------------------------------------------- log_softmax
template <class E>
struct log_softmax_form {
  static constexpr bool ok = false;
};
template <class X>
struct log_softmax_form<node<op::sub, X, node<keep_reduce<reduce_kind::logsumexp>, X>>> {
  static constexpr bool ok = floating_operand_v<X> && rank_v<X> >= 1;
  template <class E>
  static auto rewrite(const E& e, bool& holds) {
    const auto& x = fusor::get<0>(e.args);
    const auto& lse = fusor::get<1>(e.args);
    const int a = single_reduced_axis<rank_v<X>>(lse.op);
    const bool same = a >= 0 && same_value(x, fusor::get<0>(lse.args));
    holds = holds && same;
    return log_softmax(recognize_decomposed(x, holds), same ? a : -1);
  }
};
// x + -logsumexp(x) (either operand order): IEEE x - y is x + (-y), so
// this is the form above.
template <class X>
using neg_lse = node<op::neg, node<keep_reduce<reduce_kind::logsumexp>, X>>;
template <class X, int N>
struct log_softmax_plus_neg {
  static constexpr bool ok = floating_operand_v<X> && rank_v<X> >= 1;
  template <class E>
  static auto rewrite(const E& e, bool& holds) {
    const auto& x = fusor::get<N>(e.args);
    const auto& lse = fusor::get<0>(fusor::get<1 - N>(e.args).args);
    const int a = single_reduced_axis<rank_v<X>>(lse.op);
    const bool same = a >= 0 && same_value(x, fusor::get<0>(lse.args));
    holds = holds && same;
    return log_softmax(recognize_decomposed(x, holds), same ? a : -1);
  }
};
template <class X>
struct log_softmax_form<node<op::add, X, neg_lse<X>>> : log_softmax_plus_neg<X, 0> {};
template <class X>
struct log_softmax_form<node<op::add, neg_lse<X>, X>> : log_softmax_plus_neg<X, 1> {};

template <class X>
struct log_softmax_form<
    node<op::sub, shifted<X>, node<op::log, node<keep_reduce<reduce_kind::sum>, node<op::exp, shifted<X>>>>>> {
  static constexpr bool ok = floating_operand_v<X> && rank_v<X> >= 1;
  template <class E>
  static auto rewrite(const E& e, bool& holds) {
    constexpr int R = rank_v<X>;
    const auto& sub = fusor::get<0>(e.args);
    const auto& s = fusor::get<0>(fusor::get<1>(e.args).args);
    const auto& x = fusor::get<0>(sub.args);
    const auto& m = fusor::get<1>(sub.args);
    const int a = single_reduced_axis<R>(m.op);
    const bool same = a >= 0 && single_reduced_axis<R>(s.op) == a && same_value(sub, fusor::get<0>(fusor::get<0>(s.args).args)) &&
                      same_value(x, fusor::get<0>(m.args));
    holds = holds && same;
    return log_softmax(recognize_decomposed(x, holds), same ? a : -1);
  }
};

// -------------------------------------------------- layer_norm / rms_norm
// mean(square(c)) or mean(c * c)
template <class V, class C>
inline constexpr bool mean_square_of_v = false;
template <class C>
inline constexpr bool mean_square_of_v<mean_of<node<op::square, C>>, C> = true;
template <class C>
inline constexpr bool mean_square_of_v<mean_of<node<op::mul, C, C>>, C> = true;
// pow(c, e) with a scalar or constant e: its value must be 2 (checked at run
// time, exponent_is_two)
template <class C, class S>
  requires eps_operand_v<S>
inline constexpr bool mean_square_of_v<mean_of<node<op::pow, C, S>>, C> = true;
/// The squaring node's exponent is 2 (true for square(c) and c * c).
template <class Sq>
bool exponent_is_two(const Sq& sq) {
  if constexpr (std::is_same_v<typename Sq::op_type, op::pow>) {
    const auto& s = fusor::get<1>(sq.args);
    if constexpr (is_scalar_v<std::remove_cvref_t<decltype(s)>>) return double(s.value) == 2.0;
    else return double(std::remove_cvref_t<decltype(s)>::value) == 2.0;
  } else {
    return true;
  }
}

// eps + v or v + eps (canonical order puts the scalar first, but accept both)
template <class A, class C>
struct eps_plus_mean_square {
  static constexpr bool ok = false;
};
template <class S, class V, class C>
  requires(eps_operand_v<S> && mean_square_of_v<V, C>)
struct eps_plus_mean_square<node<op::add, S, V>, C> {
  static constexpr bool ok = true;
  static constexpr int eps_index = 0;
};
template <class S, class V, class C>
  requires(eps_operand_v<S> && mean_square_of_v<V, C>)
struct eps_plus_mean_square<node<op::add, V, S>, C> {
  static constexpr bool ok = true;
  static constexpr int eps_index = 1;
};

// c / sqrt(eps + ms), c * rsqrt(eps + ms), rsqrt(eps + ms) * c
template <class E>
struct norm_division {
  static constexpr bool ok = false;
};
/// A recognised division: centered (or plain) operand C, `eps + mean(C^2)` A,
/// C's position among the node's arguments, and how many unary nodes
/// (sqrt, rsqrt, reciprocal) lie between the other argument and A.
template <class C, class A, int CIndex, int Depth = 1>
struct norm_division_of {
  static constexpr bool ok = true;
  using centered = C;
  using sum = A;
  static constexpr int c_index = CIndex;
  /// A in the node (the denominator's argument).
  template <class E>
  static const auto& sum_of(const E& e) {
    const auto& d = fusor::get<1 - CIndex>(e.args);
    if constexpr (Depth == 1) return fusor::get<0>(d.args);
    else return fusor::get<0>(fusor::get<0>(d.args).args);
  }
};
template <class C, class A>
  requires(eps_plus_mean_square<A, C>::ok)
struct norm_division<node<op::div, C, node<op::sqrt, A>>> : norm_division_of<C, A, 0> {};
template <class C, class A>
  requires(eps_plus_mean_square<A, C>::ok)
struct norm_division<node<op::mul, C, node<op::rsqrt, A>>> : norm_division_of<C, A, 0> {};
template <class C, class A>
  requires(eps_plus_mean_square<A, C>::ok)
struct norm_division<node<op::mul, node<op::rsqrt, A>, C>> : norm_division_of<C, A, 1> {};
// c * reciprocal(sqrt(eps + ms)) in either order (ONNX LayerNormalization's
// and RMSNormalization's function bodies)
template <class C, class A>
  requires(eps_plus_mean_square<A, C>::ok)
struct norm_division<node<op::mul, C, node<op::reciprocal, node<op::sqrt, A>>>> : norm_division_of<C, A, 0, 2> {};
template <class C, class A>
  requires(eps_plus_mean_square<A, C>::ok)
struct norm_division<node<op::mul, node<op::reciprocal, node<op::sqrt, A>>, C>> : norm_division_of<C, A, 1, 2> {};

template <class C>
inline constexpr bool is_centered_v = false;  // x - mean(x)
template <class X>
inline constexpr bool is_centered_v<node<op::sub, X, mean_of<X>>> = true;

template <class E>
struct norm_form {
  static constexpr bool ok = false;
};
template <class E>
  requires(norm_division<E>::ok)
struct norm_form<E> {
  using D = norm_division<E>;
  using C = typename D::centered;
  static constexpr bool ok = floating_operand_v<C> && rank_v<C> >= 1;
  static auto rewrite(const E& e, bool& holds) {
    constexpr int R = rank_v<C>;
    using P = eps_plus_mean_square<typename D::sum, C>;
    const auto& c = fusor::get<D::c_index>(e.args);
    const auto& sum = D::sum_of(e);
    const auto& ms = fusor::get<1 - P::eps_index>(sum.args);
    const auto& sq = fusor::get<0>(ms.args);
    const float eps = eps_value<value_t<C>>(fusor::get<P::eps_index>(sum.args));
    const int a = trailing_reduced_axis<R>(ms.op);
    bool same = a >= 0 && eps == eps && same_value(c, fusor::get<0>(sq.args)) && exponent_is_two(sq);
    if constexpr (std::is_same_v<typename std::remove_cvref_t<decltype(sq)>::op_type, op::mul>)
      same = same && same_value(c, fusor::get<1>(sq.args));
    if constexpr (is_centered_v<C>) {
      // (x - mean(x)) normalized by its own RMS over the same axes: layer_norm.
      const auto& x = fusor::get<0>(c.args);
      const auto& mu = fusor::get<1>(c.args);
      same = same && trailing_reduced_axis<R>(mu.op) == a &&
             same_value(x, fusor::get<0>(mu.args));
      holds = holds && same;
      return layer_norm(recognize_decomposed(x, holds), nullptr, nullptr, same ? a : -1, same ? eps : 1e-5f);
    } else {
      holds = holds && same;
      return rms_norm(recognize_decomposed(c, holds), nullptr, same ? eps : 1e-5f, same ? a : -1);
    }
  }
};

// ------------------------------------------------------------------ driver
template <class E>
inline constexpr int decomposed_form_test = softmax_form<E>::ok ? 1 : log_softmax_form<E>::ok ? 2 : norm_form<E>::ok ? 3 : 0;
/// Which form E is (0: none). Every form is rooted at div, mul, sub or add:
/// nodes of other ops skip the form tests (one fewer set of class
/// instantiations per node, compile time).
template <class E>
inline constexpr int decomposed_form_at = 0;
template <class... A>
inline constexpr int decomposed_form_at<node<op::div, A...>> = decomposed_form_test<node<op::div, A...>>;
template <class... A>
inline constexpr int decomposed_form_at<node<op::mul, A...>> = decomposed_form_test<node<op::mul, A...>>;
template <class... A>
inline constexpr int decomposed_form_at<node<op::sub, A...>> = decomposed_form_test<node<op::sub, A...>>;
template <class... A>
inline constexpr int decomposed_form_at<node<op::add, A...>> = decomposed_form_test<node<op::add, A...>>;

template <class E>
inline constexpr bool has_decomposed_v = false;
template <class Op, class... A>
inline constexpr bool has_decomposed_v<node<Op, A...>> =
    decomposed_form_at<node<Op, A...>> != 0 || (has_decomposed_v<A> || ...);

/// e with every recognised decomposed form replaced by its fused op; `holds`
/// is cleared when an occurrence's run-time values do not qualify (the
/// caller then runs e as written).
template <class E>
auto recognize_decomposed(const E& e, bool& holds) {
  constexpr int form = decomposed_form_at<E>;
  if constexpr (!has_decomposed_v<E>) return e;
  else if constexpr (form == 1) return softmax_form<E>::rewrite(e, holds);
  else if constexpr (form == 2) return log_softmax_form<E>::rewrite(e, holds);
  else if constexpr (form == 3) return norm_form<E>::rewrite(e, holds);
  else
    return rebuild(e, [&]<class K, std::size_t I>(const K& k, std::integral_constant<std::size_t, I>) {
      return recognize_decomposed(k, holds);
    });
}

}  // namespace fusor::detail

namespace fusor {
/// The expression the fused planner runs for canonical expression type E
/// when its decomposed normalizations qualify at run time (E itself when it
/// has none). Compile-time tests use it: `recognized_t<canonical_t<E>>`.
template <class E>
using recognized_t = decltype(detail::recognize_decomposed(std::declval<const E&>(), std::declval<bool&>()));
}  // namespace fusor
