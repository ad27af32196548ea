#pragma once
/// @file ops/elementwise.hpp
/// Elementwise op tags. Each tag is a functor on compute-type values that
/// runs unchanged on the host and the device, plus traits: name, kind, arity,
/// FLOPs per output element, result typing and (from its base) shape
/// inference by broadcasting. Math follows the ONNX operator docs
/// (https://onnx.ai/onnx/operators/) unless noted.
#include <fusor/expr/node.hpp>
#include <fusor/ops/math.hpp>
#include <fusor/ops/math_inverse_hyperbolic.hpp>

#include <cuda/std/cmath>

namespace fusor {

namespace detail {
/// Is T bool or a pack of bools? max and min of bools are then logical or
/// and logical and (ONNX ReduceMax / ReduceMin on bool, NumPy's maximum).
template <class T>
inline constexpr bool is_bool_lanes_v = cuda::std::is_same_v<T, bool>;
template <int W>
inline constexpr bool is_bool_lanes_v<pack<bool, W>> = true;
/// a || b (Or) or a && b, lane by lane.
template <bool Or, class T>
FUSOR_HOST_DEVICE_INLINE T bool_lanes(T a, T b) {
  if constexpr (cuda::std::is_same_v<T, bool>) {
    return Or ? (a || b) : (a && b);
  } else {
    T r = a;
    for (int l = 0; l < int(sizeof(a.v) / sizeof(a.v[0])); ++l) r.v[l] = Or ? (a.v[l] || b.v[l]) : (a.v[l] && b.v[l]);
    return r;
  }
}
}  // namespace detail

namespace op {

/// Base of elementwise tags. Typing: the result is the promoted operand type
/// (`floating == true`: widened to f32 when integral); every operand is
/// converted to the result type before the functor sees it.
///
/// PacketAccess: the functor also takes host packs (core/pack.hpp; `?:`
/// spelled math::select), so the host evaluates W elements per call; an op
/// without it is called lane by lane (kernels/parts/expression.hpp). Off by
/// default, so a user's op whose body branches still compiles.
template <int Arity, bool Floating = false, bool PacketAccess = false>
struct elementwise_op {
  static constexpr op_kind kind = op_kind::elementwise;
  static constexpr int arity = Arity;
  static constexpr bool packet_access = PacketAccess;
  template <class... A>
  using result = std::conditional_t<Floating, floating_t<A...>, promoted_t<A...>>;
  template <class... A>
  using operand_types = type_list<std::conditional_t<true, result<A...>, A>...>;
  template <class... A>
  using static_extents = broadcast_all_t<A...>;
};

#define FUSOR_OP_NAME(N, FLOPS)               \
  static constexpr const char* name = N;      \
  static constexpr double flops = FLOPS;

// ----------------------------------------------------------------- binary
/// a + b (IEEE; integers wrap).
struct add : elementwise_op<2, false, true> {
  FUSOR_OP_NAME("add", 1)
  static constexpr bool commutative = true;
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T a, T b) const { return math::add(a, b); }
};
/// a - b.
struct sub : elementwise_op<2, false, true> {
  FUSOR_OP_NAME("sub", 1)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T a, T b) const { return math::sub(a, b); }
};
/// a * b.
struct mul : elementwise_op<2, false, true> {
  FUSOR_OP_NAME("mul", 1)
  static constexpr bool commutative = true;
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T a, T b) const { return math::mul(a, b); }
};
/// a / b (integer division truncates; integer x / 0 is 0).
struct div : elementwise_op<2, false, true> {
  FUSOR_OP_NAME("div", 1)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T a, T b) const { return math::div(a, b); }
};
/// max(a, b); NaN if either is NaN (like torch.maximum, numpy.maximum);
/// max(-0, +0) = +0.
struct max : elementwise_op<2, false, true> {
  FUSOR_OP_NAME("max", 1)
  static constexpr bool commutative = true;
  // Written as selects, not branches, so compilers emit blends/cmov (data-
  // dependent branches mispredict on real data and block vectorization).
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T a, T b) const {
    if constexpr (detail::is_bool_lanes_v<T>) return detail::bool_lanes<true>(a, b);
    else {
    T m = math::select(a > b, a, b);
    m = math::select(a == b, math::select(math::signbit(a), b, a), m);  // max(-0, +0) = max(+0, -0) = +0
    m = math::select(math::isnan(b), b, m);
    return math::select(math::isnan(a), a, m);
    }
  }
};
/// min(a, b); NaN if either is NaN; min(-0, +0) = -0.
struct min : elementwise_op<2, false, true> {
  FUSOR_OP_NAME("min", 1)
  static constexpr bool commutative = true;
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T a, T b) const {
    if constexpr (detail::is_bool_lanes_v<T>) return detail::bool_lanes<false>(a, b);
    else {
    T m = math::select(a < b, a, b);
    m = math::select(a == b, math::select(math::signbit(a), a, b), m);  // min(-0, +0) = min(+0, -0) = -0
    m = math::select(math::isnan(b), b, m);
    return math::select(math::isnan(a), a, m);
    }
  }
};
/// pow(base, exponent). ONNX Pow: the result has the base's type; mixed
/// integer/float operands compute in floating point; an exponent of 2 is
/// base * base (NumPy's and PyTorch's value).
struct pow {
  FUSOR_OP_NAME("pow", 8)
  static constexpr op_kind kind = op_kind::elementwise;
  static constexpr int arity = 2;
  template <class B, class E>
  using result = std::conditional_t<is_weak_v<B> && !is_weak_v<E>, promoted_t<B, E>, value_t<B>>;
  // A weak (scalar) exponent takes a floating base's type: pow(f32, 0.3)
  // computes powf(x, 0.3f), like every other op with a scalar operand.
  template <class B, class E>
  using operand_types =
      type_list<value_t<B>, std::conditional_t<is_weak_v<E> && std::is_floating_point_v<value_t<B>>, value_t<B>, value_t<E>>>;
  template <class B, class E>
  using static_extents = broadcast_all_t<B, E>;
  template <class B, class E> FUSOR_HOST_DEVICE_INLINE auto operator()(B b, E e) const {
    if constexpr (cuda::std::is_integral_v<B> && cuda::std::is_integral_v<E>) {
      if (e < 0) return B(b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0));
      B r = 1, base = b;
      for (E k = e; k > 0; k >>= 1) {
        if (k & 1) r = math::mul(r, base);
        base = math::mul(base, base);
      }
      return r;
    } else if constexpr (cuda::std::is_same_v<B, float> && !cuda::std::is_same_v<E, double>) {
      // an exponent of 2 is b * b, as NumPy and PyTorch compute it (exactly
      // rounded; powf may differ in the last bit)
      const float ef = float(e);
      return ef == 2.0f ? math::mul(b, b) : math::pow(b, ef);
    } else {
      const double ed = double(e);
      return B(ed == 2.0 ? math::mul(double(b), double(b)) : math::pow(double(b), ed));
    }
  }
};
/// prelu(x, slope) = x < 0 ? slope * x : x (slope broadcasts; ONNX PRelu).
struct prelu : elementwise_op<2, false, true> {
  FUSOR_OP_NAME("prelu", 2)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x, T s) const { return math::select(x < T(0), math::mul(s, x), x); }
};

// ----------------------------------------------------------------- ternary
/// where(cond, x, y) = cond ? x : y (ONNX Where).
struct where {
  FUSOR_OP_NAME("where", 1)
  static constexpr op_kind kind = op_kind::elementwise;
  static constexpr int arity = 3;
  template <class C, class X, class Y>
  using result = promoted_t<X, Y>;
  template <class C, class X, class Y>
  using operand_types = type_list<bool, result<C, X, Y>, result<C, X, Y>>;
  template <class... A>
  using static_extents = broadcast_all_t<A...>;
  static constexpr bool packet_access = true;
  template <class C, class T> FUSOR_HOST_DEVICE_INLINE T operator()(C c, T x, T y) const { return math::select(c, x, y); }
};
/// clip(x, lo, hi) = min(max(x, lo), hi), in that order (so hi wins when
/// lo > hi, as numpy.clip and torch.clamp); NaN stays NaN (ONNX Clip).
struct clip : elementwise_op<3, false, true> {
  FUSOR_OP_NAME("clip", 2)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x, T lo, T hi) const {
    const T m = math::select(x < lo, lo, x);
    return math::select(math::isnan(x), x, math::select(m > hi, hi, m));
  }
};

// ----------------------------------------------------------------- unary
/// identity(x) = x (a copy; used to write a bare view into an output).
struct identity : elementwise_op<1, false, true> {
  FUSOR_OP_NAME("identity", 0)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const { return x; }
};
/// Planner hint (identity on values): the operand gets a kernel of its own;
/// it is never computed inside its consumers' kernel (see fusor::materialize).
struct materialize : elementwise_op<1, false, true> {
  FUSOR_OP_NAME("materialize", 0)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const { return x; }
};
/// Planner hint (identity on values): a row-major temporary, a copy kernel
/// even for a bare view; shape ops read it (fusor::contiguous).
struct contiguous : elementwise_op<1, false, true> {
  FUSOR_OP_NAME("contiguous", 0)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const { return x; }
};
/// Planner-internal hint (identity on values): like materialize, and the
/// executor caches the result per weight set (folded batch-norm weights).
struct cache_weights : elementwise_op<1, false, true> {
  FUSOR_OP_NAME("cache_weights", 0)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const { return x; }
};
/// Identity that names its operand's value (fusor::tag<Id>(e)): every node
/// tagged Id in one run is the same value, so the planner may compute it once
/// and share it (like a tagged view; checked at run time, exec/validate.hpp).
template <class Id>
struct tagged : elementwise_op<1, false, true> {
  FUSOR_OP_NAME("tag", 0)
  static constexpr bool names_value = true;
  using id = Id;
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const { return x; }
};
/// Planner hint (identity on values): the operand fuses into its consumer
/// regardless of budgets and cost (see fusor::fuse).
struct fuse : elementwise_op<1, false, true> {
  FUSOR_OP_NAME("fuse", 0)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const { return x; }
};
/// -x.
struct neg : elementwise_op<1, false, true> {
  FUSOR_OP_NAME("neg", 1)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const {
    if constexpr (cuda::std::is_integral_v<scalar_of_t<T>>) return math::sub(T(0), x);
    else return -x;
  }
};
/// x * x (one operand read: mean(square(a - b)) evaluates a - b once).
struct square : elementwise_op<1, false, true> {
  FUSOR_OP_NAME("square", 1)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const { return math::mul(x, x); }
};
/// |x|.
struct abs : elementwise_op<1, false, true> {
  FUSOR_OP_NAME("abs", 1)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const {
    if constexpr (cuda::std::is_floating_point_v<scalar_of_t<T>>) return math::fabs(x);
    else return math::select(x < T(0), math::sub(T(0), x), x);
  }
};
/// relu(x) = max(0, x); relu(NaN) = NaN, relu(-0) = +0 (as torch.relu).
struct relu : elementwise_op<1, false, true> {
  FUSOR_OP_NAME("relu", 1)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const {
    // !(x <= 0) holds for x > 0 and for NaN (unordered): one compare and one
    // select (not branches, see max) give x there and +0 elsewhere, -0 included.
    return math::select(!(x <= T(0)), x, T(0));
  }
};

#define FUSOR_FLOAT_UNARY(NAME, FLOPS, BODY)                       \
  struct NAME : elementwise_op<1, true, true> {                          \
    FUSOR_OP_NAME(#NAME, FLOPS)                                    \
    template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const { BODY } \
  };
/// e^x
FUSOR_FLOAT_UNARY(exp, 4, return math::exp(x);)
/// natural logarithm
FUSOR_FLOAT_UNARY(log, 4, return math::log(x);)
/// square root (IEEE correctly rounded)
FUSOR_FLOAT_UNARY(sqrt, 4, return math::sqrt(x);)
/// 1 / sqrt(x) (correctly rounded steps; not the approximate rsqrtf)
FUSOR_FLOAT_UNARY(rsqrt, 5, return math::div(T(1), math::sqrt(x));)
/// 1 / x
FUSOR_FLOAT_UNARY(reciprocal, 1, return math::div(T(1), x);)
/// hyperbolic tangent
FUSOR_FLOAT_UNARY(tanh, 6, return math::tanh(x);)
/// Gauss error function
FUSOR_FLOAT_UNARY(erf, 8, return math::erf(x);)
/// 1 / (1 + e^-x)
FUSOR_FLOAT_UNARY(sigmoid, 6, return math::div(T(1), math::add(T(1), math::exp(-x)));)
/// x * sigmoid(x) (Elfwing et al. 2017; Hendrycks & Gimpel 2016)
FUSOR_FLOAT_UNARY(silu, 7, return math::mul(x, math::div(T(1), math::add(T(1), math::exp(-x))));)
/// x / (1 + |x|)
FUSOR_FLOAT_UNARY(softsign, 3, return math::div(x, math::add(T(1), math::fabs(x)));)
/// log(1 + e^x); computed as log1p(exp(x)) and x itself above 20 (as torch.nn.Softplus) so it never overflows
FUSOR_FLOAT_UNARY(softplus, 6, return math::select(x > T(20), x, math::log1p(math::exp(x)));)
/// sine, cosine, tangent (radians; ONNX Sin, Cos, Tan)
FUSOR_FLOAT_UNARY(sin, 8, return math::sin(x);)
FUSOR_FLOAT_UNARY(cos, 8, return math::cos(x);)
FUSOR_FLOAT_UNARY(tan, 10, return math::tan(x);)
/// inverse sine, cosine (NaN outside [-1, 1]) and tangent (ONNX Asin, Acos, Atan)
FUSOR_FLOAT_UNARY(asin, 8, return math::asin(x);)
FUSOR_FLOAT_UNARY(acos, 8, return math::acos(x);)
FUSOR_FLOAT_UNARY(atan, 8, return math::atan(x);)
/// hyperbolic sine and cosine (ONNX Sinh, Cosh)
FUSOR_FLOAT_UNARY(sinh, 6, return math::sinh(x);)
FUSOR_FLOAT_UNARY(cosh, 6, return math::cosh(x);)
/// inverse hyperbolic sine, cosine (NaN below 1) and tangent (NaN outside
/// [-1, 1], ±Inf at ±1) (ONNX Asinh, Acosh, Atanh; ops/math_inverse_hyperbolic.hpp)
FUSOR_FLOAT_UNARY(asinh, 8, return math::asinh(x);)
FUSOR_FLOAT_UNARY(acosh, 8, return math::acosh(x);)
FUSOR_FLOAT_UNARY(atanh, 8, return math::atanh(x);)
/// largest integer value <= x, smallest >= x (exact; NaN, ±Inf, ±0 kept)
FUSOR_FLOAT_UNARY(floor, 1, return math::floor(x);)
FUSOR_FLOAT_UNARY(ceil, 1, return math::ceil(x);)
/// nearest integer value, halves to even (ONNX Round, numpy.round: 2.5 -> 2)
FUSOR_FLOAT_UNARY(round, 1, return math::round_half_even(x);)
/// x * max(0, min(1, x / 6 + 1 / 2)) (ONNX HardSwish)
FUSOR_FLOAT_UNARY(hardswish, 4, { T h = math::add(math::mul(x, T(1.0 / 6.0)), T(0.5));
                    h = math::select(math::isnan(h), h, math::select(h < T(0), T(0), math::select(h > T(1), T(1), h)));
                    return math::mul(x, h); })
#undef FUSOR_FLOAT_UNARY

/// sign(x) = 1 for x > 0, -1 for x < 0, x itself for ±0 and NaN (ONNX Sign).
struct sign : elementwise_op<1, false, true> {
  FUSOR_OP_NAME("sign", 2)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const {
    return math::select(x > T(0), T(1), math::select(x < T(0), T(-1), x));
  }
};
/// fmod(a, b): C's remainder, the sign of a (ONNX Mod with fmod = 1;
/// floats: exact, NaN for b = 0; integers: truncated, x fmod 0 = 0).
struct fmod : elementwise_op<2, false, false> {
  FUSOR_OP_NAME("fmod", 4)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T a, T b) const {
    if constexpr (cuda::std::is_floating_point_v<T>) return math::fmod(a, b);
    else if constexpr (cuda::std::is_same_v<T, bool>) return b ? false : a;
    else return b == T(0) ? T(0) : math::sub(a, math::mul(math::div(a, b), b));
  }
};
/// mod(a, b): the remainder with the sign of b (Python's %, numpy.mod,
/// torch.remainder; ONNX Mod with fmod = 0): fmod(a, b), plus b when that is
/// nonzero and its sign differs from b's; integer x mod 0 = 0.
struct mod : elementwise_op<2, false, false> {
  FUSOR_OP_NAME("mod", 5)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T a, T b) const {
    const T r = fmod{}(a, b);
    if constexpr (cuda::std::is_same_v<T, bool>) return r;
    else return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? math::add(r, b) : r;
  }
};

/// cast_to<T>: x rounded to dtype T (ONNX Cast). To f16/bf16: round to
/// nearest even; floating -> integer: truncation toward zero, saturated at
/// T's limits (CUDA's cvt.rzi.sat, the same on the host; ONNX leaves
/// out-of-range values undefined); NaN -> integer is an argument_error on
/// the host before anything is written (exec/cast_check.hpp; 0 where it is
/// not checked: on CUDA, or of a reduction's result); -> bool: nonzero (NaN
/// too) is true. The result stays in T's compute type (f32 for 16-bit floats) until
/// it is stored, so `cast<__half>(x) * y` multiplies the rounded value.
template <class T>
struct cast_to {
  FUSOR_OP_NAME("cast", 1)
  using target = T;
  static constexpr op_kind kind = op_kind::elementwise;
  static constexpr int arity = 1;
  template <class A>
  using result = compute_t<T>;
  template <class A>
  using operand_types = type_list<value_t<A>>;
  template <class A>
  using static_extents = broadcast_all_t<A>;
  template <class X> FUSOR_HOST_DEVICE_INLINE compute_t<T> operator()(X x) const {
    return static_cast<compute_t<T>>(to_compute(from_compute<T>(x)));
  }
};

/// leaky_relu(x) = x < 0 ? alpha * x : x (ONNX LeakyRelu, alpha = 0.01).
struct leaky_relu : elementwise_op<1, true, true> {
  FUSOR_OP_NAME("leaky_relu", 2)
  float alpha = 0.01f;
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const { return math::select(x < T(0), math::mul(T(alpha), x), x); }
};
/// elu(x) = x < 0 ? alpha * (e^x - 1) : x (Clevert et al. 2015; ONNX Elu).
struct elu : elementwise_op<1, true, true> {
  FUSOR_OP_NAME("elu", 5)
  float alpha = 1.0f;
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const {
    return math::select(x < T(0), math::mul(T(alpha), math::expm1(x)), x);
  }
};
/// selu(x) = gamma * (x > 0 ? x : alpha * e^x - alpha) (Klambauer et al. 2017;
/// ONNX Selu defaults alpha = 1.67326319, gamma = 1.05070102).
struct selu : elementwise_op<1, true, true> {
  FUSOR_OP_NAME("selu", 6)
  float alpha = 1.67326319217681884765625f;
  float gamma = 1.05070102214813232421875f;
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const {
    return math::select(x > T(0), math::mul(T(gamma), x),
                        math::mul(T(gamma), math::sub(math::mul(T(alpha), math::exp(x)), T(alpha))));
  }
};
/// celu(x) = max(0, x) + min(0, alpha * (e^(x / alpha) - 1)) (Barron 2017; ONNX Celu).
struct celu : elementwise_op<1, true, true> {
  FUSOR_OP_NAME("celu", 6)
  float alpha = 1.0f;
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const {
    const T neg = math::mul(T(alpha), math::expm1(math::div(x, T(alpha))));
    return math::select(math::isnan(x), x, math::select(x > T(0), x, neg));
  }
};
/// hardsigmoid(x) = max(0, min(1, alpha * x + beta)) (ONNX HardSigmoid: 0.2, 0.5).
struct hardsigmoid : elementwise_op<1, true, true> {
  FUSOR_OP_NAME("hardsigmoid", 3)
  float alpha = 0.2f, beta = 0.5f;
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const {
    T h = math::add(math::mul(T(alpha), x), T(beta));
    return math::select(math::isnan(h), h, math::select(h < T(0), T(0), math::select(h > T(1), T(1), h)));
  }
};
/// thresholded_relu(x) = x > alpha ? x : 0 (ONNX ThresholdedRelu, alpha = 1).
struct thresholded_relu : elementwise_op<1, true, true> {
  FUSOR_OP_NAME("thresholded_relu", 1)
  float alpha = 1.0f;
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const {
    return math::select(x > T(alpha) || math::isnan(x), x, T(0));
  }
};

/// Which written formula a gelu came from; its functor evaluates exactly that
/// formula, so recognising it never changes a bit of the result.
enum class gelu_form : int {
  erf_mul,  ///< (0.5 * x) * (1 + erf(x * (1/sqrt 2)))  (the default)
  erf_div,  ///< (0.5 * x) * (1 + erf(x / sqrt 2))
};

/// GELU, exact erf form: x * Phi(x) (Hendrycks & Gimpel 2016; ONNX Gelu).
/// The form is part of the type, so two gelus of one tensor are provably
/// identical (no run-time attribute).
template <gelu_form Form = gelu_form::erf_mul>
struct gelu_of : elementwise_op<1, true, true> {
  FUSOR_OP_NAME("gelu", 14)
  static constexpr gelu_form form = Form;
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const {
    const T arg = Form == gelu_form::erf_div ? math::div(x, T(1.4142135623730951))
                                             : math::mul(x, T(0.70710678118654752));
    return math::mul(math::mul(T(0.5), x), math::add(T(1), math::erf(arg)));
  }
};
/// GELU as users write it: the default (x * 1/sqrt 2) form.
using gelu = gelu_of<>;
/// GELU, tanh approximation (Hendrycks & Gimpel 2016, eq. 2; ONNX Gelu
/// approximate="tanh"): (0.5 * x) * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * ((x * x) * x)))).
struct gelu_tanh : elementwise_op<1, true, true> {
  FUSOR_OP_NAME("gelu_tanh", 18)
  template <class T> FUSOR_HOST_DEVICE_INLINE T operator()(T x) const {
    const T cube = math::mul(math::mul(x, x), x);
    const T inner = math::mul(T(0.7978845608028654), math::add(x, math::mul(T(0.044715), cube)));
    return math::mul(math::mul(T(0.5), x), math::add(T(1), math::tanh(inner)));
  }
};
#undef FUSOR_OP_NAME

}  // namespace op
}  // namespace fusor
