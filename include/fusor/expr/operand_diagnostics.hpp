#pragma once
/// @file expr/operand_diagnostics.hpp
/// Why passing something that is not a fusor expression to a factory stops
/// with one `fusor:` line instead of a page of unsatisfied constraints: each
/// factory has a fallback overload that is viable exactly when an argument
/// does not fit its position, and whose body is a static_assert naming the
/// op, its parameters and what each accepts (FUSOR_OPERAND_FALLBACK). The
/// argument types are in the compiler's "In instantiation of" line just
/// above the message. Valid calls never reach a fallback: it claims only
/// calls with an argument that is neither what its position accepts nor a
/// number (numbers, and same-named functions of other libraries, are left
/// to their own overloads; tests/static/test_overloads.cpp).
#include <fusor/expr/node.hpp>

#include <cstddef>
#include <type_traits>

namespace fusor::diagnostic {

/// False for every T; a static_assert on it fires only when instantiated.
template <class... T>
inline constexpr bool always_false = false;

/// What one argument position of a factory accepts:
///   'e'  a fusor expression (tensor_view, node, scalar, constant);
///   'o'  an operand: an expression or a C++ number;
///   'n'  an operand or nullptr (an absent bias, gamma, beta or mask);
///   '.'  anything (an attribute: axis, eps, params; checked by the factory).
template <class T>
constexpr bool fits_slot(char kind) {
  switch (kind) {
    case 'e': return expression<T>;
    case 'o': return operand<T>;
    case 'n': return operand<T> || std::is_null_pointer_v<std::remove_cvref_t<T>>;
    default: return true;
  }
}

/// True when each argument type A fits its position in `slots` (a string of
/// the kinds above; positions past its end are not checked).
template <class... A>
constexpr bool operands_fit(const char* slots) {
  bool ok = true;
  ((ok = ok && (*slots == '\0' || fits_slot<A>(*slots)), slots += (*slots != '\0')), ...);
  return ok;
}

/// True when some argument A does not fit its position in `slots` and is
/// not a number: the calls a fallback claims. Numbers are left to other
/// overloads (a user's `float gelu(float)` called with a double under
/// `using namespace fusor` must still be found).
template <class... A>
constexpr bool some_operand_misfits(const char* slots) {
  bool misfit = false;
  ((misfit = misfit || (*slots != '\0' && !fits_slot<A>(*slots) && !std::is_arithmetic_v<std::remove_cvref_t<A>>),
    slots += (*slots != '\0')),
   ...);
  return misfit;
}

}  // namespace fusor::diagnostic

/// The second half of every operand diagnostic: what an expression is.
#define FUSOR_WHAT_IS_AN_EXPRESSION                                                                           \
  "a fusor expression is a tensor_view (fusor::host_view / fusor::device_view over a pointer), a node built " \
  "by fusor's functions, a fusor::scalar or a constant such as 0.5_c; C++ numbers are accepted where an "     \
  "operand may be a scalar"

/// Declares the fallback overload of factory NAME (see the file comment):
/// viable when an argument that is not a number does not fit its position
/// in SLOTS, it stops with "fusor: NAME: an operand is not a fusor
/// expression; USAGE; ...". Its parameters are `const A&...`, so on a tie a
/// user's or the standard library's function of the same name wins (a
/// non-template, or a more specialized template such as std::sqrt of a
/// complex). For factories whose trailing parameters take braced lists
/// (`{.stride = 2}`, `{1}`), which a pack cannot deduce, and for binary
/// functions (ops/functions.hpp), the fallback is written out instead.
#define FUSOR_OPERAND_FALLBACK(NAME, SLOTS, USAGE) \
  FUSOR_OPERAND_FALLBACK_WHEN(NAME, ::fusor::diagnostic::some_operand_misfits<A...>(SLOTS), USAGE)
/// The same with any condition WHEN on the argument types A...
#define FUSOR_OPERAND_FALLBACK_WHEN(NAME, WHEN, USAGE)                                                      \
  template <class... A>                                                                                       \
    requires(WHEN)                                                                                            \
  auto NAME(const A&...) {                                                                                    \
    static_assert(::fusor::diagnostic::always_false<A...>,                                                    \
                  "fusor: " #NAME ": an operand is not a fusor expression; " USAGE "; " FUSOR_WHAT_IS_AN_EXPRESSION); \
    return 0;                                                                                                 \
  }

/// The fallback condition of a factory over expressions and numbers of which
/// at least one must be an expression (where): only calls that involve an
/// expression are claimed.
#define FUSOR_SOME_OPERAND_IS_NOT(SLOTS) \
  ((::fusor::expression<A> || ...) && ::fusor::diagnostic::some_operand_misfits<A...>(SLOTS))

namespace fusor {
/// siblings(e...) with an argument that is not an expression.
FUSOR_OPERAND_FALLBACK(siblings, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", "siblings(e1, e2, ...) groups expressions")
}  // namespace fusor
