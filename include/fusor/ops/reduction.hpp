#pragma once
/// @file ops/reduction.hpp
/// Reduction and normalization op tags (op_kind::reduction) and their
/// factories: sum, mean, max_reduce, min_reduce, sum_square, l2_norm,
/// logsumexp over any set of axes (ONNX ReduceX semantics), softmax and
/// log_softmax over one axis, layer_norm and rms_norm over the trailing axes
/// from `axis`.
///
/// Design choice: axes, keepdims, axis and eps are RUN-TIME attributes
/// carried by the tag (one instantiation serves every axis set). The output
/// RANK must be static, so it is a template parameter of the tag: by default
/// the input rank (keepdims); without keepdims the caller names it,
/// `fusor::sum<1>(x, {1, 2}, false)`, and run() checks it against the axes.
/// Static extents of a reduction's result are therefore dynamic (the reduced
/// axes are known only at run time); softmax and the norms keep their
/// input's static extents.
#include <fusor/core/error.hpp>
#include <fusor/ops/functions.hpp>
#include <fusor/ops/reducers.hpp>
#include <fusor/ops/registry.hpp>

#include <concepts>
#include <initializer_list>
#include <string>

namespace fusor {

/// Most axes a reduction names (and the highest rank it supports).
inline constexpr int max_reduce_rank = 8;

/// A run-time list of axes (negative = counted from the end, ONNX). Empty
/// means "all axes" unless noop_with_empty_axes.
struct axis_list {
  int count = 0;
  int axis[max_reduce_rank] = {};
  axis_list() = default;
  /// One axis: `sum(x, -1)`. Integers only: a float or a bool given where
  /// the axes go (an eps, a keepdims) does not compile.
  template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
  axis_list(I a) {
    push(int(a));
  }
  axis_list(std::initializer_list<int> a) {
    for (int x : a) push(x);
  }
  /// Any range of integers: `sum(x, std::vector<std::int64_t>{0, 2})`, a
  /// std::span, a std::array.
  template <class Range>
    requires requires(const Range& r) {
      r.begin();
      r.end();
      requires std::is_integral_v<std::remove_cvref_t<decltype(*r.begin())>>;
    }
  axis_list(const Range& r) {
    for (auto x : r) push(int(x));
  }
  void push(int x) {
    if (count == max_reduce_rank) throw argument_error("fusor: reduction: more than 8 axes");
    axis[count++] = x;
  }
};

/// " (x [4, 5])" when the input's shape is known, else "".
template <int R>
std::string input_shape_note(const shape<R>* in) {
  return in ? " (x " + to_string<R>(*in) + ")" : std::string();
}

/// Which dims of a rank-R input are reduced: axes normalized (negatives),
/// range-checked and de-duplicated; empty axes = all (or none with `noop`).
/// @throws shape_error naming op, the axis and (given `in`) the input shape.
template <int R>
cuda::std::array<bool, (R > 0 ? R : 1)> reduced_mask(const axis_list& a, bool noop, const char* op,
                                                      const shape<R>* in = nullptr) {
  cuda::std::array<bool, (R > 0 ? R : 1)> m{};
  if (a.count == 0) {
    for (int d = 0; d < R; ++d) m[d] = !noop;
    return m;
  }
  for (int k = 0; k < a.count; ++k) {
    const int d = a.axis[k] < 0 ? a.axis[k] + R : a.axis[k];
    if (d < 0 || d >= R)
      throw shape_error(std::string("fusor: ") + op + ": axis " + std::to_string(a.axis[k]) + " is out of range for rank " +
                        std::to_string(R) + input_shape_note<R>(in));
    if (m[d])
      throw shape_error(std::string("fusor: ") + op + ": axis " + std::to_string(a.axis[k]) + " given twice" +
                        input_shape_note<R>(in));
    m[d] = true;
  }
  return m;
}

/// Mask of the dims from `axis` (negative counts from the end) to the last.
template <int R>
cuda::std::array<bool, (R > 0 ? R : 1)> trailing_mask(int axis, const char* op, const shape<R>* in = nullptr) {
  const int a = axis < 0 ? axis + R : axis;
  if (a < 0 || a >= R || R == 0)
    throw shape_error(std::string("fusor: ") + op + ": axis " + std::to_string(axis) + " is out of range for rank " +
                      std::to_string(R) + input_shape_note<R>(in));
  cuda::std::array<bool, (R > 0 ? R : 1)> m{};
  for (int d = a; d < R; ++d) m[d] = true;
  return m;
}
/// Mask of the single dim `axis`.
template <int R>
cuda::std::array<bool, (R > 0 ? R : 1)> single_mask(int axis, const char* op, const shape<R>* in = nullptr) {
  auto m = trailing_mask<R>(axis, op, in);
  const int a = axis < 0 ? axis + R : axis;
  for (int d = a + 1; d < R; ++d) m[d] = false;
  return m;
}

namespace op {

/// Base of the reduction-kind tags.
/// `output_shape<operand ranks...>(op, operand shapes...)` gives the result
/// shape (expr/shape_inference.hpp calls it; it throws shape_error);
/// `mask<R>()` the dims a row kernel reduces.
struct reduction_base {
  static constexpr op_kind kind = op_kind::reduction;
  static constexpr bool has_output_shape = true;
};

/// Reduce over `axes` (ONNX ReduceSum/Mean/Max/Min/SumSquare/L2/LogSumExp).
/// OutRank < 0: the input's rank (keepdims must be true).
template <reduce_kind K, int OutRank = -1>
struct reduce : reduction_base {
  static constexpr reduce_kind which = K;
  static constexpr int arity = 1;
  using reducer_type = reducer<K>;  ///< name, FLOPs, accumulator, finalize (ops/reducers.hpp)
  static constexpr const char* name = reducer_type::name;
  static constexpr double flops = reducer_type::flops;
  static constexpr bool floating = reducer_type::floating;
  axis_list axes;
  bool keepdims = true;
  bool noop_with_empty_axes = false;

  template <class X>
  using result = std::conditional_t<floating, floating_t<X>, value_t<X>>;
  template <class X>
  using operand_types = type_list<result<X>>;
  template <class X>
  using static_extents = dextents<std::size_t(OutRank < 0 ? rank_v<X> : OutRank)>;

  template <int R>
  static auto output_shape(const reduce& op, const shape<R>& in) {
    constexpr int O = OutRank < 0 ? R : OutRank;
    const auto m = reduced_mask<R>(op.axes, op.noop_with_empty_axes, name, &in);
    int kept = 0;
    for (int d = 0; d < R; ++d) kept += m[d] ? 0 : 1;
    const int want = op.keepdims ? R : kept;
    if (want != O)
      throw shape_error(std::string("fusor: ") + name + ": the result has rank " + std::to_string(want) +
                        input_shape_note<R>(&in) + " but the expression's static rank is " + std::to_string(O) +
                        " (without keepdims write fusor::" + name + "<rank>(x, axes, false))");
    shape<O> out{};
    out[0] = 1;
    for (int d = 0, k = 0; d < R; ++d) {
      if (op.keepdims) out[d] = m[d] ? 1 : in[d];
      else if (!m[d]) out[k++] = in[d];
    }
    return out;
  }
  template <int R>
  auto mask() const { return reduced_mask<R>(axes, noop_with_empty_axes, name); }
};

/// softmax (Log = false) or log_softmax (Log = true) over `axis` (ONNX >= 13).
template <bool Log>
struct softmax_of : reduction_base {
  static constexpr int arity = 1;
  static constexpr const char* name = Log ? "log_softmax" : "softmax";
  static constexpr double flops = 12;
  static constexpr int passes = 2;  ///< reads of x per element (max/sum, then output)
  int axis = -1;
  template <class X>
  using result = floating_t<X>;
  template <class X>
  using operand_types = type_list<result<X>>;
  template <class X>
  using static_extents = static_extents_t<X>;
  template <int R>
  static shape<R> output_shape(const softmax_of& op, const shape<R>& in) {
    (void)single_mask<R>(op.axis, name, &in);
    return in;
  }
  template <int R>
  auto mask() const { return single_mask<R>(axis, name); }
};
using softmax = softmax_of<false>;
using log_softmax = softmax_of<true>;

/// Gamma/beta must broadcast INTO x's shape (ONNX: the normalized shape).
template <int R, int RG>
void check_param_shape(const shape<R>& x, const shape<RG>& g, const char* op, const char* what) {
  static_assert(RG <= R, "fusor: norm: gamma/beta has a higher rank than x");
  for (int d = 0; d < RG; ++d) {
    const index_t e = g[d], want = x[d + (R - RG)];
    if (e != want && e != 1)
      throw shape_error(std::string("fusor: ") + op + ": " + what + " " + to_string<RG>(g) +
                        " does not broadcast to x " + to_string<R>(x));
  }
}

/// layer_norm(x, gamma, beta): (x - mean) / sqrt(var + eps) * gamma + beta,
/// mean and (biased) variance over the dims from `axis` to the last (ONNX
/// LayerNormalization, output Y; Ba et al. 2016). Mean and variance: a
/// Welford mean, then a correction pass (kernels/reduction.hpp).
struct layer_norm : reduction_base {
  static constexpr int arity = 3;
  static constexpr const char* name = "layer_norm";
  static constexpr double flops = 8;
  static constexpr int passes = 3;  ///< reads of x per element (Welford mean, correction, output)
  int axis = -1;
  float eps = 1e-5f;
  bool has_gamma = true, has_beta = true;
  template <class X, class G, class B>
  using result = floating_t<X>;
  template <class X, class G, class B>
  using operand_types = type_list<result<X, G, B>, result<X, G, B>, result<X, G, B>>;
  template <class X, class G, class B>
  using static_extents = static_extents_t<X>;
  template <int R, int RG, int RB>
  static shape<R> output_shape(const layer_norm& op, const shape<R>& in, const shape<RG>& g, const shape<RB>& b) {
    (void)trailing_mask<R>(op.axis, name, &in);
    check_param_shape<R, RG>(in, g, name, "gamma");
    check_param_shape<R, RB>(in, b, name, "beta");
    return in;
  }
  template <int R>
  auto mask() const { return trailing_mask<R>(axis, name); }
};

/// rms_norm(x, gamma) = x / sqrt(mean(x^2) + eps) * gamma over the dims from
/// `axis` to the last (ONNX RMSNormalization; Zhang & Sennrich 2019).
struct rms_norm : reduction_base {
  static constexpr int arity = 2;
  static constexpr const char* name = "rms_norm";
  static constexpr double flops = 5;
  static constexpr int passes = 2;  ///< reads of x per element (mean square, output)
  int axis = -1;
  float eps = 1e-5f;
  bool has_gamma = true;
  template <class X, class G>
  using result = floating_t<X>;
  template <class X, class G>
  using operand_types = type_list<result<X, G>, result<X, G>>;
  template <class X, class G>
  using static_extents = static_extents_t<X>;
  template <int R, int RG>
  static shape<R> output_shape(const rms_norm& op, const shape<R>& in, const shape<RG>& g) {
    (void)trailing_mask<R>(op.axis, name, &in);
    check_param_shape<R, RG>(in, g, name, "gamma");
    return in;
  }
  template <int R>
  auto mask() const { return trailing_mask<R>(axis, name); }
};

}  // namespace op

template <class E>
inline constexpr bool is_reduction_node_v = false;
template <class Op, class... A>
inline constexpr bool is_reduction_node_v<node<Op, A...>> = Op::kind == op_kind::reduction;

// ----------------------------------------------------------------- factories
#define FUSOR_REDUCE_FN(NAME, KIND)                                                                  \
  template <int OutRank = -1, expression X>                                                          \
  auto NAME(X&& x, axis_list axes = {}, bool keepdims = true, bool noop_with_empty_axes = false) {  \
    return make_node(op::reduce<reduce_kind::KIND, OutRank>{{}, axes, keepdims, noop_with_empty_axes}, \
                     std::forward<X>(x));                                                            \
  }                                                                                                  \
  template <int OutRank = -1, class X>                                                               \
    requires(!operand<X>)                                                                            \
  auto NAME(const X&, axis_list = {}, bool = true, bool = false) {                                   \
    static_assert(diagnostic::always_false<X>, "fusor: " #NAME ": an operand is not a fusor expression; " \
                  #NAME "(x, axes, keepdims): x is an expression; " FUSOR_WHAT_IS_AN_EXPRESSION);     \
    return 0;                                                                                        \
  }
/// One factory per line of FUSOR_REDUCTION_OPS (ops/registry.hpp): sum,
/// mean, max_reduce, min_reduce (NaN propagates; max(-0, -0) = -0),
/// sum_square, l2_norm (sqrt of the sum of squares), logsumexp (stable: max
/// subtraction), prod, l1_norm (sum of |x|), log_sum (log of the sum), over
/// `axes` (all when empty); `sum<R>(x, axes, false)` drops them. Math: one
/// reducer per kind (ops/reducers.hpp).
#define FUSOR_REGISTERED_REDUCTION(NAME, KIND, ONNX) FUSOR_REDUCE_FN(NAME, KIND)
FUSOR_REDUCTION_OPS(FUSOR_REGISTERED_REDUCTION)
#undef FUSOR_REGISTERED_REDUCTION
#undef FUSOR_REDUCE_FN

/// sum(a, b, ...) of two or more expressions (ONNX Sum): the elementwise
/// a + b + ..., added left to right (broadcasting). (`sum(x, axes)` with
/// axes, not an expression, is the reduction above.)
template <expression A, expression B, expression... R>
auto sum(A&& a, B&& b, R&&... r) {
  if constexpr (sizeof...(R) == 0) return add(std::forward<A>(a), std::forward<B>(b));
  else return sum(add(std::forward<A>(a), std::forward<B>(b)), std::forward<R>(r)...);
}
/// mean(a, b, ...) of two or more expressions (ONNX Mean): their sum, left
/// to right, divided by the count.
template <expression A, expression B, expression... R>
auto mean(A&& a, B&& b, R&&... r) {
  return div(sum(std::forward<A>(a), std::forward<B>(b), std::forward<R>(r)...), float(2 + sizeof...(R)));
}
/// The variadic forms given something that is not an expression (and not
/// axes: those are the reduction's) stop with a `fusor:` line.
#define FUSOR_VARIADIC_FALLBACK(NAME)                                                                          \
  template <class A, class B, class... R>                                                                      \
    requires((expression<A> || expression<B> || (expression<R> || ...)) &&                                      \
             !std::is_convertible_v<const B&, axis_list> &&                                                    \
             diagnostic::some_operand_misfits<A, B, R...>("eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"))                 \
  auto NAME(const A&, const B&, const R&...) {                                                                 \
    static_assert(diagnostic::always_false<A, B>, "fusor: " #NAME ": an operand is not a fusor expression; " #NAME \
                                                  "(a, b, ...) of expressions (ONNX " #NAME "), or " #NAME         \
                                                  "(x, axes, keepdims) over axes; " FUSOR_WHAT_IS_AN_EXPRESSION);  \
    return 0;                                                                                                  \
  }
FUSOR_VARIADIC_FALLBACK(sum)
FUSOR_VARIADIC_FALLBACK(mean)
#undef FUSOR_VARIADIC_FALLBACK

/// softmax over `axis` (stable: max subtraction).
template <expression X>
auto softmax(X&& x, int axis = -1) { return make_node(op::softmax{{}, axis}, std::forward<X>(x)); }
FUSOR_OPERAND_FALLBACK(softmax, "e", "softmax(x, axis): x is an expression")
/// log_softmax over `axis`.
template <expression X>
auto log_softmax(X&& x, int axis = -1) { return make_node(op::log_softmax{{}, axis}, std::forward<X>(x)); }
FUSOR_OPERAND_FALLBACK(log_softmax, "e", "log_softmax(x, axis): x is an expression")

/// The reduction of mse_loss (PyTorch's `reduction` argument).
enum class loss_reduction { mean, sum, none };

/// mse_loss(a, b): the mean (or sum, or elementwise without reduction) of
/// (a - b)^2 over every element (PyTorch mse_loss). mean and sum give a
/// rank-0 result; `none` gives the broadcast shape of a and b. One kernel:
/// the difference and the square are the reduction's prologue.
template <loss_reduction Reduction = loss_reduction::mean, expression A, expression B>
auto mse_loss(A&& a, B&& b) {
  auto d = square(std::forward<A>(a) - std::forward<B>(b));
  if constexpr (Reduction == loss_reduction::mean) return mean<0>(d, {}, false);
  else if constexpr (Reduction == loss_reduction::sum) return sum<0>(d, {}, false);
  else return d;
}
template <loss_reduction Reduction = loss_reduction::mean, class A, class B>
  requires(diagnostic::some_operand_misfits<A, B>("ee"))
auto mse_loss(const A&, const B&) {
  static_assert(diagnostic::always_false<A, B>, "fusor: mse_loss: an operand is not a fusor expression; "
                                                "mse_loss(a, b): a and b are expressions; " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}

namespace detail {
template <class P>
auto norm_param(P&& p, float absent) {
  if constexpr (std::is_same_v<std::remove_cvref_t<P>, std::nullptr_t>) return scalar<float>{absent};
  else return as_expr(std::forward<P>(p));
}
}  // namespace detail

/// layer_norm(x, gamma, beta, axis, eps); pass nullptr for an absent gamma or beta.
template <expression X, class G, class B>
  requires(diagnostic::operands_fit<X, G, B>("enn"))
auto layer_norm(X&& x, G&& gamma, B&& beta, int axis = -1, float eps = 1e-5f) {
  constexpr bool hg = !std::is_same_v<std::remove_cvref_t<G>, std::nullptr_t>;
  constexpr bool hb = !std::is_same_v<std::remove_cvref_t<B>, std::nullptr_t>;
  auto g = detail::norm_param(std::forward<G>(gamma), 1.0f);
  auto b = detail::norm_param(std::forward<B>(beta), 0.0f);
  static_assert(rank_v<decltype(g)> <= rank_v<X> && rank_v<decltype(b)> <= rank_v<X>,
                "fusor: layer_norm: gamma or beta has a higher rank than x (it must broadcast into x's shape)");
  using N = node<op::layer_norm, std::remove_cvref_t<X>, decltype(g), decltype(b)>;
  return N{op::layer_norm{{}, axis, eps, hg, hb}, {std::forward<X>(x), g, b}};
}
/// Catches layer_norm(x, gamma, beta, eps): the 4th argument is the axis.
template <expression X, class G, class B, std::floating_point A, class... Rest>
  requires(diagnostic::operands_fit<X, G, B>("enn"))
auto layer_norm(X&&, G&&, B&&, A, Rest...) {
  static_assert(!std::is_floating_point_v<A>,
                "fusor: layer_norm(x, gamma, beta, axis, eps): the 4th argument is the axis (an integer) and eps comes "
                "5th, e.g. layer_norm(x, gamma, beta, -1, 1e-6f) (rms_norm takes eps 3rd and the axis 4th)");
}
/// Catches layer_norm(x) and layer_norm(x, axis): gamma and beta are not
/// optional trailing arguments (a number there would be a constant gamma).
template <expression X, class... Rest>
  requires(sizeof...(Rest) < 2 && !diagnostic::some_operand_misfits<X, Rest...>("enn"))
auto layer_norm(X&&, Rest&&...) {
  static_assert(diagnostic::always_false<X, Rest...>,
                "fusor: layer_norm(x, gamma, beta, axis, eps): gamma and beta come 2nd and 3rd (nullptr for an absent "
                "one), e.g. layer_norm(x, nullptr, nullptr, -1) for no affine parameters");
  return 0;
}
FUSOR_OPERAND_FALLBACK(layer_norm, "enn",
                       "layer_norm(x, gamma, beta, axis, eps): x is an expression, gamma and beta expressions, "
                       "numbers or nullptr")

/// rms_norm(x, gamma, eps, axis); pass nullptr for an absent gamma.
template <expression X, class G>
  requires(diagnostic::operands_fit<X, G>("en"))
auto rms_norm(X&& x, G&& gamma, float eps = 1e-5f, int axis = -1) {
  constexpr bool hg = !std::is_same_v<std::remove_cvref_t<G>, std::nullptr_t>;
  auto g = detail::norm_param(std::forward<G>(gamma), 1.0f);
  static_assert(rank_v<decltype(g)> <= rank_v<X>,
                "fusor: rms_norm: gamma has a higher rank than x (it must broadcast into x's shape)");
  using N = node<op::rms_norm, std::remove_cvref_t<X>, decltype(g)>;
  return N{op::rms_norm{{}, axis, eps, hg}, {std::forward<X>(x), g}};
}
/// Catches rms_norm(x): gamma is not an optional trailing argument.
template <expression X>
auto rms_norm(X&&) {
  static_assert(diagnostic::always_false<X>,
                "fusor: rms_norm(x, gamma, eps, axis): gamma comes 2nd (nullptr for none), e.g. rms_norm(x, nullptr)");
  return 0;
}
/// Catches rms_norm(x, gamma, axis): the 3rd argument is eps.
template <expression X, class G, std::integral E, class... Rest>
  requires(diagnostic::operands_fit<X, G>("en"))
auto rms_norm(X&&, G&&, E, Rest...) {
  static_assert(!std::is_integral_v<E>,
                "fusor: rms_norm(x, gamma, eps, axis): the 3rd argument is eps (floating point) and the axis comes "
                "4th, e.g. rms_norm(x, gamma, 1e-6f, -1) (layer_norm takes the axis 4th and eps 5th)");
}
FUSOR_OPERAND_FALLBACK(rms_norm, "en", "rms_norm(x, gamma, eps, axis): x is an expression, gamma an expression, "
                                       "a number or nullptr")

}  // namespace fusor
