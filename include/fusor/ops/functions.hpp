#pragma once
/// @file ops/functions.hpp
/// The user-facing factories: `fusor::relu(x)`, `x + y`, `fusor::gelu(x)`, ...
/// Each builds a node; nothing is computed until `fusor::run`. Operands are
/// views, other expressions, C++ numbers (weakly typed scalars) or
/// compile-time constants (`0.5_c`).
#include <fusor/expr/operand_diagnostics.hpp>
#include <fusor/ops/comparison.hpp>
#include <fusor/ops/elementwise.hpp>
#include <fusor/ops/registry.hpp>

#include <utility>

namespace fusor {

namespace diagnostic {
/// Instantiated only when two operands' static extents cannot broadcast; the
/// compiler prints this template's arguments: the op and both extents.
template <class Op, class ExtentsA, class ExtentsB>
struct operands_do_not_broadcast {
  static_assert(sizeof(Op) == 0,
                "fusor: operand extents do not broadcast (NumPy/ONNX rules: right-aligned, each pair equal or 1); "
                "the op and both static extents are the template arguments of "
                "fusor::diagnostic::operands_do_not_broadcast<Op, ExtentsA, ExtentsB> in this error");
};

template <class Op, class... A>
struct check_static_broadcast;
template <class Op>
struct check_static_broadcast<Op> {
  using extents_type = extents<>;
};
template <class Op, class A, class... Rest>
struct check_static_broadcast<Op, A, Rest...> {
  using rest = typename check_static_broadcast<Op, Rest...>::extents_type;
  using mine = static_extents_t<A>;
  static constexpr bool ok = statically_broadcastable<mine, rest>;
  using extents_type = typename std::conditional_t<ok, std::type_identity<broadcast_extents_t<mine, rest>>,
                                                   operands_do_not_broadcast<Op, mine, rest>>::type;
};
}  // namespace diagnostic

/// Builds node<Op, operands...> after checking static extents.
template <class Op, class... A>
  requires(operand<A> && ...)
auto make_node(Op op, A&&... a) {
  using N = node<Op, decltype(as_expr(std::forward<A>(a)))...>;
  (void)sizeof(typename diagnostic::check_static_broadcast<Op, decltype(as_expr(std::forward<A>(a)))...>::extents_type);
  return N{op, {as_expr(std::forward<A>(a))...}};
}

// Each factory has a fallback overload for operands that are not fusor
// expressions (expr/operand_diagnostics.hpp), so the error says so in its
// first line instead of listing unsatisfied constraints.
// A number given to a unary function is left to other overloads (with
// `using namespace fusor`, `sqrt(2.0f)` must still find ::sqrt), so its
// fallback takes only non-numbers.
#define FUSOR_UNARY_FN(NAME)                                                     \
  template <expression X>                                                        \
  auto NAME(X&& x) {                                                             \
    return make_node(op::NAME{}, std::forward<X>(x));                            \
  }                                                                              \
  FUSOR_OPERAND_FALLBACK(NAME, "o", #NAME "(x): x is an expression")
#define FUSOR_BINARY_FN(NAME)                                                    \
  template <operand A, operand B>                                                \
    requires(expression<A> || expression<B>)                                     \
  auto NAME(A&& a, B&& b) {                                                      \
    return make_node(op::NAME{}, std::forward<A>(a), std::forward<B>(b));        \
  }                                                                              \
  /* two parameters, not a pack: with a pack, nvcc 13's front end fails to */  \
  /* find the literal operator of 0.5_c in templates that also call pow     */  \
  /* ("user-defined literal operator not found"; a fuzz case of 2026-11)  */  \
  template <class A, class B>                                                    \
    requires((expression<A> || expression<B>) && !(operand<A> && operand<B>))     \
  auto NAME(const A&, const B&) {                                                \
    static_assert(diagnostic::always_false<A, B>,                                \
                  "fusor: " #NAME ": an operand is not a fusor expression; " #NAME \
                  "(a, b): a and b are expressions or numbers, at least one an expression; " \
                  FUSOR_WHAT_IS_AN_EXPRESSION);                                  \
    return 0;                                                                    \
  }

/// Elementwise functions over any expression x, one per line of
/// FUSOR_UNARY_OPS in ops/registry.hpp: `fusor::relu(x)`, `fusor::sin(x)`,
/// ... (shape: x's; dtype: x's, f32 for integer inputs of floating
/// functions, bool for isnan / isinf / logical_not (x converted to bool);
/// bitwise_not of integers). Math: the op tags (ops/elementwise.hpp,
/// ops/comparison.hpp).
#define FUSOR_REGISTERED_UNARY(NAME, ONNX, RESULT) FUSOR_UNARY_FN(NAME)
FUSOR_UNARY_OPS(FUSOR_REGISTERED_UNARY)
#undef FUSOR_REGISTERED_UNARY

/// Binary functions, one per line of FUSOR_BINARY_OPS: `fusor::add(a, b)`,
/// `fusor::less(a, b)`, ...; operands broadcast (NumPy/ONNX rules).
/// Comparisons give bool (operands promoted to a common type); logical ops
/// convert to bool; bitwise ops take integers (ops/comparison.hpp).
#define FUSOR_REGISTERED_BINARY(NAME, ONNX, RESULT) FUSOR_BINARY_FN(NAME)
FUSOR_BINARY_OPS(FUSOR_REGISTERED_BINARY)
#undef FUSOR_REGISTERED_BINARY
#undef FUSOR_UNARY_FN
#undef FUSOR_BINARY_FN

/// Variadic max / min of three or more operands (ONNX Max, Min): a left
/// fold, max(max(a, b), c), ..., fused into one kernel.
template <operand A, operand B, operand C, operand... R>
  requires(expression<A> || expression<B> || expression<C> || (expression<R> || ...))
auto max(A&& a, B&& b, C&& c, R&&... r) {
  if constexpr (sizeof...(R) == 0) return max(max(std::forward<A>(a), std::forward<B>(b)), std::forward<C>(c));
  else return max(max(std::forward<A>(a), std::forward<B>(b)), std::forward<C>(c), std::forward<R>(r)...);
}
template <operand A, operand B, operand C, operand... R>
  requires(expression<A> || expression<B> || expression<C> || (expression<R> || ...))
auto min(A&& a, B&& b, C&& c, R&&... r) {
  if constexpr (sizeof...(R) == 0) return min(min(std::forward<A>(a), std::forward<B>(b)), std::forward<C>(c));
  else return min(min(std::forward<A>(a), std::forward<B>(b)), std::forward<C>(c), std::forward<R>(r)...);
}
/// max / min of three or more operands, one of them not an expression or a number.
#define FUSOR_VARIADIC_FALLBACK(NAME)                                                                          \
  template <class A, class B, class C, class... R>                                                             \
    requires((expression<A> || expression<B> || expression<C> || (expression<R> || ...)) &&                    \
             diagnostic::some_operand_misfits<A, B, C, R...>("oooooooooooooooooooooooooooooooo"))              \
  auto NAME(const A&, const B&, const C&, const R&...) {                                                       \
    static_assert(diagnostic::always_false<A, B>, "fusor: " #NAME ": an operand is not a fusor expression; " #NAME \
                                                  "(a, b, c, ...): expressions or numbers, at least one an "       \
                                                  "expression; " FUSOR_WHAT_IS_AN_EXPRESSION);                     \
    return 0;                                                                                                  \
  }
FUSOR_VARIADIC_FALLBACK(max)
FUSOR_VARIADIC_FALLBACK(min)
#undef FUSOR_VARIADIC_FALLBACK

/// cast<T>(x): x converted to dtype T (float, double, __half,
/// __nv_bfloat16, std::int32_t, std::int64_t, bool) with ONNX Cast's
/// rounding; float -> integer saturates and maps NaN to 0 (op::cast_to).
template <class T, expression X>
auto cast(X&& x) {
  return make_node(op::cast_to<T>{}, std::forward<X>(x));
}
template <class T, class X>
  requires(!operand<X>)
auto cast(const X&) {
  static_assert(diagnostic::always_false<X>, "fusor: cast: an operand is not a fusor expression; cast<T>(x): x is an "
                                             "expression; " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}

/// Overrides the cost model for one subexpression: `materialize(e)` computes e
/// in a kernel of its own (its result goes through memory); values unchanged.
template <expression X>
auto materialize(X&& x) { return make_node(op::materialize{}, std::forward<X>(x)); }
FUSOR_OPERAND_FALLBACK(materialize, "e", "materialize(e): e is an expression")
/// `contiguous(e)`: e computed into a row-major temporary by a kernel of its
/// own (a copy when e is a view; torch's .contiguous()), values unchanged.
/// A shape op over it reads that temporary, so
/// `reshape(contiguous(permute(x, {0, 2, 1})), s)` works where the permuted
/// strides cannot express the new shape (ONNX Reshape, NumPy's reshape copy).
template <expression X>
auto contiguous(X&& x) { return make_node(op::contiguous{}, std::forward<X>(x)); }
FUSOR_OPERAND_FALLBACK(contiguous, "e", "contiguous(e): e is an expression")
/// Overrides the cost model for one subexpression: `fuse(e)` computes e inside
/// its consumer's kernel even past register/parameter budgets or when the
/// model prefers materializing a shared producer; values unchanged.
template <expression X>
auto fuse(X&& x) { return make_node(op::fuse{}, std::forward<X>(x)); }
FUSOR_OPERAND_FALLBACK(fuse, "e", "fuse(e): e is an expression")

/// `tag<Id>(e)`: expression e named Id (values unchanged). Every occurrence of
/// a tagged expression in one run is one value, so the planner computes it
/// once and shares it, or recomputes it where the cost model says that is
/// cheaper. Untagged, only tagged views, constants and attribute-free ops
/// are shared: two copies of `layer_norm(x, ...)`, `linear(x, W)` or an
/// attention are computed twice, since their attributes (eps, axis, ...)
/// could differ. For a view, the same as `v.with_id<Id>()`.
/// @throws argument_error (at run) when two occurrences of Id are different
///   expressions: other types, other tensors (data, extents, strides), other
///   scalars or other op attributes (bit for bit, padding ignored).
template <class Id, expression X>
  requires(!is_view_v<std::remove_cvref_t<X>>)
auto tag(X&& x) {
  return make_node(op::tagged<Id>{}, std::forward<X>(x));
}
template <class Id, class X>
  requires(!operand<X>)
auto tag(const X&) {
  static_assert(diagnostic::always_false<X>, "fusor: tag: an operand is not a fusor expression; tag<Id>(e): e is an "
                                             "expression; " FUSOR_WHAT_IS_AN_EXPRESSION);
  return 0;
}

/// GELU, erf form (Hendrycks & Gimpel 2016).
template <expression X>
auto gelu(X&& x) { return make_node(op::gelu{}, std::forward<X>(x)); }
FUSOR_OPERAND_FALLBACK(gelu, "e", "gelu(x): x is an expression")
/// leaky_relu(x, alpha = 0.01).
template <expression X>
auto leaky_relu(X&& x, float alpha = 0.01f) { return make_node(op::leaky_relu{{}, alpha}, std::forward<X>(x)); }
FUSOR_OPERAND_FALLBACK(leaky_relu, "e", "leaky_relu(x, alpha): x is an expression")
/// elu(x, alpha = 1).
template <expression X>
auto elu(X&& x, float alpha = 1.0f) { return make_node(op::elu{{}, alpha}, std::forward<X>(x)); }
FUSOR_OPERAND_FALLBACK(elu, "e", "elu(x, alpha): x is an expression")
/// selu(x, alpha = 1.67326..., gamma = 1.05070...).
template <expression X>
auto selu(X&& x, float alpha = op::selu{}.alpha, float gamma = op::selu{}.gamma) {
  return make_node(op::selu{{}, alpha, gamma}, std::forward<X>(x));
}
FUSOR_OPERAND_FALLBACK(selu, "e", "selu(x, alpha, gamma): x is an expression")
/// celu(x, alpha = 1).
template <expression X>
auto celu(X&& x, float alpha = 1.0f) { return make_node(op::celu{{}, alpha}, std::forward<X>(x)); }
FUSOR_OPERAND_FALLBACK(celu, "e", "celu(x, alpha): x is an expression")
/// hardsigmoid(x, alpha = 0.2, beta = 0.5).
template <expression X>
auto hardsigmoid(X&& x, float alpha = 0.2f, float beta = 0.5f) {
  return make_node(op::hardsigmoid{{}, alpha, beta}, std::forward<X>(x));
}
FUSOR_OPERAND_FALLBACK(hardsigmoid, "e", "hardsigmoid(x, alpha, beta): x is an expression")
/// thresholded_relu(x, alpha = 1).
template <expression X>
auto thresholded_relu(X&& x, float alpha = 1.0f) {
  return make_node(op::thresholded_relu{{}, alpha}, std::forward<X>(x));
}
FUSOR_OPERAND_FALLBACK(thresholded_relu, "e", "thresholded_relu(x, alpha): x is an expression")
/// clip(x, lo, hi): lo and hi are scalars or tensors that broadcast with x.
template <expression X, operand L, operand H>
auto clip(X&& x, L&& lo, H&& hi) {
  return make_node(op::clip{}, std::forward<X>(x), std::forward<L>(lo), std::forward<H>(hi));
}
FUSOR_OPERAND_FALLBACK(clip, "eoo", "clip(x, lo, hi): x is an expression, lo and hi expressions or numbers")
/// where(cond, x, y): cond is converted to bool; all three broadcast.
template <operand C, operand X, operand Y>
  requires(expression<C> || expression<X> || expression<Y>)
auto where(C&& c, X&& x, Y&& y) {
  return make_node(op::where{}, std::forward<C>(c), std::forward<X>(x), std::forward<Y>(y));
}
FUSOR_OPERAND_FALLBACK_WHEN(where, FUSOR_SOME_OPERAND_IS_NOT("ooo"),
                            "where(cond, x, y): each an expression or a number, at least one an expression")

/// C++ operators on expressions (at least one operand must be a fusor expression).
template <operand A, operand B>
  requires(expression<A> || expression<B>)
auto operator+(A&& a, B&& b) { return add(std::forward<A>(a), std::forward<B>(b)); }
template <operand A, operand B>
  requires(expression<A> || expression<B>)
auto operator-(A&& a, B&& b) { return sub(std::forward<A>(a), std::forward<B>(b)); }
template <operand A, operand B>
  requires(expression<A> || expression<B>)
auto operator*(A&& a, B&& b) { return mul(std::forward<A>(a), std::forward<B>(b)); }
template <operand A, operand B>
  requires(expression<A> || expression<B>)
auto operator/(A&& a, B&& b) { return div(std::forward<A>(a), std::forward<B>(b)); }
/// Comparison operators on expressions: bool expressions (equal, not_equal,
/// less, less_equal, greater, greater_equal), e.g. `where(x > 0, x, 0.1 * x)`.
#define FUSOR_COMPARISON_OPERATOR(OP, NAME)                                   \
  template <operand A, operand B>                                             \
    requires(expression<A> || expression<B>)                                  \
  auto operator OP(A&& a, B&& b) {                                            \
    return NAME(std::forward<A>(a), std::forward<B>(b));                      \
  }
FUSOR_COMPARISON_OPERATOR(==, equal)
FUSOR_COMPARISON_OPERATOR(!=, not_equal)
FUSOR_COMPARISON_OPERATOR(<, less)
FUSOR_COMPARISON_OPERATOR(<=, less_equal)
FUSOR_COMPARISON_OPERATOR(>, greater)
FUSOR_COMPARISON_OPERATOR(>=, greater_equal)
#undef FUSOR_COMPARISON_OPERATOR
/// !x: logical_not(x).
template <expression A>
auto operator!(A&& a) { return logical_not(std::forward<A>(a)); }
// An expression combined with something that is neither an expression nor a
// number (a std::vector, a pointer, a __half value): one `fusor:` line.
#define FUSOR_OPERATOR_FALLBACK(OP, NAME)                                                                  \
  template <class A, class B>                                                                               \
    requires((expression<A> || expression<B>) && !(operand<A> && operand<B>))                               \
  auto operator OP(const A&, const B&) {                                                                    \
    static_assert(diagnostic::always_false<A, B>,                                                           \
                  "fusor: operator" #OP " (" #NAME "): an operand is not a fusor expression or a number; "   \
                  "a " #OP " b needs both to be expressions or numbers (float, int, ...), at least one an "  \
                  "expression; " FUSOR_WHAT_IS_AN_EXPRESSION);                                              \
    return 0;                                                                                               \
  }
FUSOR_OPERATOR_FALLBACK(+, add)
FUSOR_OPERATOR_FALLBACK(-, sub)
FUSOR_OPERATOR_FALLBACK(*, mul)
FUSOR_OPERATOR_FALLBACK(/, div)
FUSOR_OPERATOR_FALLBACK(==, equal)
FUSOR_OPERATOR_FALLBACK(!=, not_equal)
FUSOR_OPERATOR_FALLBACK(<, less)
FUSOR_OPERATOR_FALLBACK(<=, less_equal)
FUSOR_OPERATOR_FALLBACK(>, greater)
FUSOR_OPERATOR_FALLBACK(>=, greater_equal)
#undef FUSOR_OPERATOR_FALLBACK
template <expression A>
auto operator-(A&& a) { return neg(std::forward<A>(a)); }
/// -constant<V> is the constant -V (so `-0.0_c` is negative zero, not neg(0)).
template <auto V>
constexpr constant<-V> operator-(constant<V>) { return {}; }

namespace literals {
namespace detail {
/// 10^n in long double by squaring (exact up to 10^27 on x86's 64-bit
/// mantissa; a few roundings of 2^-64 relative beyond).
constexpr long double pow10(int n) {
  long double r = 1, b = 10;
  for (; n > 0; n >>= 1, b *= b)
    if (n & 1) r *= b;
  return r;
}
/// A decimal integer literal's value; -1 when it does not fit in int64.
template <char... C>
constexpr long long parse_integer() {
  constexpr char s[] = {C..., '\0'};
  unsigned long long v = 0;
  for (int i = 0; s[i]; ++i) {
    if (s[i] == '\'') continue;
    const unsigned d = unsigned(s[i] - '0');
    if (v > (0x7fffffffffffffffull - d) / 10) return -1;
    v = v * 10 + d;
  }
  return (long long)v;
}
/// A decimal floating literal's value ("0.5", "1e-3", "3.14159265358979323846"):
/// the first 19 significant digits exactly in an integer (the rest dropped:
/// a relative error below 10^-18), scaled by a power of ten in long double
/// and rounded once to double by the caller. The result is the correctly
/// rounded double except within about 2^-7 ulp of a halfway point
/// (the same as the compiler's own parse in every literal tested,
/// tests/static/test_overloads.cpp).
template <char... C>
constexpr long double parse() {
  constexpr char s[] = {C..., '\0'};
  unsigned long long mant = 0;
  int exp10 = 0, digits = 0, i = 0;
  bool frac = false;
  for (; s[i] && s[i] != 'e' && s[i] != 'E'; ++i) {
    if (s[i] == '.') { frac = true; continue; }
    if (s[i] == '\'') continue;
    const unsigned d = unsigned(s[i] - '0');
    if (digits == 0 && d == 0) { if (frac) --exp10; continue; }  // leading zeros
    if (digits < 19) {
      mant = mant * 10 + d;
      ++digits;
      if (frac) --exp10;
    } else if (!frac) {
      ++exp10;  // an integer digit past the 19th: dropped, scales by 10
    }
  }
  if (s[i]) {
    ++i;
    const bool negative = s[i] == '-';
    if (s[i] == '-' || s[i] == '+') ++i;
    int e = 0;
    for (; s[i]; ++i) e = e < 100000 ? e * 10 + (s[i] - '0') : e;  // (saturates: out of range anyway)
    exp10 += negative ? -e : e;
  }
  if (mant == 0) return 0.0L;
  return exp10 < 0 ? (long double)mant / pow10(-exp10) : (long double)mant * pow10(exp10);
}
}  // namespace detail
/// `0.5_c`: a compile-time constant (see fusor::constant). An integer literal
/// (`2_c`) is an int64 constant, so `int_tensor * 2_c` stays integral.
/// Decimal spellings only (a hexadecimal, binary or octal literal is a
/// compile error naming the alternative, `fusor::constant<0x1p-3>{}`).
template <char... C>
constexpr auto operator""_c() {
  constexpr char s[] = {C..., '\0'};
  constexpr bool integral = [&] {
    for (char ch : s)
      if (ch == '.' || ch == 'e' || ch == 'E' || ch == 'x' || ch == 'X') return false;
    return true;
  }();
  // The parser reads decimal digits only: a hexadecimal, binary or octal
  // spelling would be read as another number.
  constexpr bool decimal = [&] {
    for (char ch : s)
      if (ch == 'x' || ch == 'X' || ch == 'b' || ch == 'B') return false;
    return !(integral && s[0] == '0' && s[1] >= '0' && s[1] <= '9');  // 017 is octal; 00.5 is decimal
  }();
  static_assert(decimal, "fusor: _c: write the constant in decimal (0.125_c, 3_c); for a hexadecimal value use "
                         "fusor::constant<0x1p-3>{}");
  if constexpr (!decimal) {
    return constant<0.0>{};
  } else if constexpr (integral) {
    constexpr long long v = detail::parse_integer<C...>();
    static_assert(v >= 0, "fusor: _c: an integer constant must fit in int64 (write it as a floating literal)");
    return constant<cuda::std::int64_t(v)>{};
  } else {
    constexpr long double v = detail::parse<C...>();
    static_assert(v <= 1.7976931348623157e308L, "fusor: _c: the constant is outside the range of double");
    return constant<double(v)>{};
  }
}
}  // namespace literals

}  // namespace fusor
