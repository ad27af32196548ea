#pragma once
/// @file ops/comparison.hpp
/// Elementwise ops with bool results or bool/integer operands: comparisons
/// (ONNX Equal, Less, LessOrEqual, Greater, GreaterOrEqual), logical and /
/// or / xor / not (ONNX And, Or, Xor, Not), isnan / isinf (ONNX IsNaN,
/// IsInf) and bitwise ops on integers (ONNX BitwiseAnd, BitwiseOr,
/// BitwiseXor, BitwiseNot). A bool result feeds `where` as its condition, or
/// converts to 1 / 0 in arithmetic (`mask * x`), or is stored to a bool view.
///
/// IEEE: a comparison with a NaN operand is false, except not_equal (true);
/// -0 == +0.
#include <fusor/ops/elementwise.hpp>

#include <cuda/std/limits>

namespace fusor {
namespace op {

/// Base of comparisons: both operands converted to their promoted type
/// (int vs float compares in float), a bool result, broadcasting.
struct comparison_op {
  static constexpr op_kind kind = op_kind::elementwise;
  static constexpr int arity = 2;
  static constexpr bool packet_access = true;
  template <class... A>
  using result = bool;
  template <class... A>
  using operand_types = type_list<std::conditional_t<true, promoted_t<A...>, A>...>;
  template <class... A>
  using static_extents = broadcast_all_t<A...>;
};

/// Base of ops whose operands are all converted to bool (logical ops).
template <int Arity>
struct logical_op {
  static constexpr op_kind kind = op_kind::elementwise;
  static constexpr int arity = Arity;
  template <class... A>
  using result = bool;
  template <class... A>
  using operand_types = type_list<std::conditional_t<true, bool, A>...>;
  template <class... A>
  using static_extents = broadcast_all_t<A...>;
};

namespace comparison_detail {
/// a OP b for scalars, lane by lane on host packs (a lane mask; packs of
/// bool compare per lane).
template <class T, class F>
FUSOR_HOST_DEVICE_INLINE auto compare(const T& a, const T& b, F f) {
  if constexpr (is_pack_v<T>) {
    if constexpr (cuda::std::is_same_v<scalar_of_t<T>, bool>) return lanewise(f, a, b);
    else return f(a, b);
  } else {
    return bool(f(a, b));
  }
}
}  // namespace comparison_detail

// equal: a == b (false when either is NaN); not_equal: a != b (true when
// either is NaN); less, less_equal, greater, greater_equal: <, <=, >, >=.
#define FUSOR_COMPARISON(NAME, OP)                                                                  \
  struct NAME : comparison_op {                                                                     \
    static constexpr const char* name = #NAME;                                                      \
    static constexpr double flops = 1;                                                              \
    template <class T> FUSOR_HOST_DEVICE_INLINE auto operator()(T a, T b) const {                   \
      return comparison_detail::compare(a, b, [](const auto& x, const auto& y) { return x OP y; });            \
    }                                                                                               \
  };
FUSOR_COMPARISON(equal, ==)
FUSOR_COMPARISON(not_equal, !=)
FUSOR_COMPARISON(less, <)
FUSOR_COMPARISON(less_equal, <=)
FUSOR_COMPARISON(greater, >)
FUSOR_COMPARISON(greater_equal, >=)
#undef FUSOR_COMPARISON

/// a && b, a || b, a != b (xor), !a on operands converted to bool (ONNX
/// And, Or, Xor, Not).
struct logical_and : logical_op<2> {
  static constexpr const char* name = "logical_and";
  static constexpr double flops = 1;
  FUSOR_HOST_DEVICE_INLINE bool operator()(bool a, bool b) const { return a && b; }
};
struct logical_or : logical_op<2> {
  static constexpr const char* name = "logical_or";
  static constexpr double flops = 1;
  FUSOR_HOST_DEVICE_INLINE bool operator()(bool a, bool b) const { return a || b; }
};
struct logical_xor : logical_op<2> {
  static constexpr const char* name = "logical_xor";
  static constexpr double flops = 1;
  FUSOR_HOST_DEVICE_INLINE bool operator()(bool a, bool b) const { return a != b; }
};
struct logical_not : logical_op<1> {
  static constexpr const char* name = "logical_not";
  static constexpr double flops = 1;
  FUSOR_HOST_DEVICE_INLINE bool operator()(bool a) const { return !a; }
};

/// isnan(x), isinf(x) (either infinity; ONNX IsInf with both directions):
/// bool; false for integers.
struct isnan : elementwise_op<1> {
  static constexpr const char* name = "isnan";
  static constexpr double flops = 1;
  template <class... A>
  using result = bool;
  template <class T> FUSOR_HOST_DEVICE_INLINE bool operator()(T x) const { return math::isnan(x); }
};
struct isinf : elementwise_op<1> {
  static constexpr const char* name = "isinf";
  static constexpr double flops = 1;
  template <class... A>
  using result = bool;
  template <class T> FUSOR_HOST_DEVICE_INLINE bool operator()(T x) const {
    if constexpr (cuda::std::is_floating_point_v<T>) return x == cuda::std::numeric_limits<T>::infinity() || x == -cuda::std::numeric_limits<T>::infinity();
    else return false;
  }
};

/// Bitwise and / or / xor / not of integers (ONNX BitwiseAnd, BitwiseOr,
/// BitwiseXor, BitwiseNot); a floating operand is a compile-time error.
#define FUSOR_BITWISE(NAME, ARITY, EXPR)                                                        \
  struct NAME : elementwise_op<ARITY> {                                                         \
    static constexpr const char* name = #NAME;                                                  \
    static constexpr double flops = 1;                                                          \
    template <class T, class... U> FUSOR_HOST_DEVICE_INLINE T operator()(T a, U... b) const {   \
      static_assert(cuda::std::is_integral_v<T> && !cuda::std::is_same_v<T, bool>,                  \
                    "fusor: " #NAME ": integer operands only (use logical_* for bool)");    \
      return T(EXPR);                                                                           \
    }                                                                                           \
  };
FUSOR_BITWISE(bitwise_and, 2, (a & ... & b))
FUSOR_BITWISE(bitwise_or, 2, (a | ... | b))
FUSOR_BITWISE(bitwise_xor, 2, (a ^ ... ^ b))
FUSOR_BITWISE(bitwise_not, 1, ~a)
#undef FUSOR_BITWISE

}  // namespace op
}  // namespace fusor
