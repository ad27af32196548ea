#pragma once
/// @file canon/rules.hpp
/// The built-in rewrite rules. Each is a (pattern -> expression) pair applied
/// by canonicalize() until nothing changes. Every rule here is IEEE-exact:
/// the rewritten expression produces the same bits as the original for every
/// input, NaN, Inf, -0.0 and overflow included. Rules that would not be exact
/// are absent on purpose, e.g. x + 0 -> x (wrong for x = -0.0) and
/// log(exp(x)) -> x (wrong when exp overflows).
#include <fusor/canon/operand_order.hpp>
#include <fusor/ops/batch_norm.hpp>
#include <fusor/ops/functions.hpp>

namespace fusor::canon {

/// Base of rules whose result must keep the original's value type (x * 1.0
/// over an int tensor is f32, so it must not become x).
template <class P>
struct same_type_identity {
  using pattern = P;
  template <class E>
  static constexpr bool applies = [] {
    if constexpr (matches_v<P, E>)
      return std::is_same_v<value_t<captured_t<1, P, E>>, value_t<E>> &&
             std::is_same_v<static_extents_t<captured_t<1, P, E>>, static_extents_t<E>>;
    else
      return false;
  }();
  template <class E>
  static auto rewrite(const E& e) {
    return capture<1, P>(e);
  }
};

/// x * 1 -> x (exact: IEEE multiplication by one returns x, NaN and -0.0 included).
struct mul_one : same_type_identity<node<op::mul, _1, const_<1.0>>> {
  static constexpr const char* name = "x * 1 -> x";
};
/// x / 1 -> x (exact).
struct div_one : same_type_identity<node<op::div, _1, const_<1.0>>> {
  static constexpr const char* name = "x / 1 -> x";
};
/// x - 0 -> x (exact: -0.0 - 0.0 is -0.0).
struct sub_zero : same_type_identity<node<op::sub, _1, const_<0.0>>> {
  static constexpr const char* name = "x - 0 -> x";
};
/// x + (-0) -> x (exact). Note x + 0 is NOT rewritten: -0.0 + 0.0 is +0.0.
struct add_negative_zero : same_type_identity<node<op::add, _1, const_<-0.0>>> {
  static constexpr const char* name = "x + (-0) -> x";
};

/// relu(relu(x)) -> relu(x) (relu is idempotent, NaN and -0.0 included).
struct relu_idempotent {
  static constexpr const char* name = "relu(relu(x)) -> relu(x)";
  using pattern = node<op::relu, node<op::relu, _1>>;
  template <class E>
  static constexpr bool applies = matches_v<pattern, E>;
  template <class E>
  static auto rewrite(const E& e) {
    return fusor::get<0>(e.args);
  }
};

/// pow(x, 2) -> square(x) for a compile-time exponent 2 (`2_c`,
/// `constant<2.0>`: ONNX function bodies square with Pow), x float or double.
/// Exact: op::pow evaluates an exponent of 2 as x * x in x's type, the
/// operation square performs; and square is what the pattern library and the
/// cost model know as one multiply (pow is priced as a transcendental).
struct pow_two_to_square {
  static constexpr const char* name = "pow(x, 2) -> square(x)";
  using pattern = node<op::pow, _1, const_<2.0>>;
  template <class E>
  static constexpr bool applies = [] {
    if constexpr (matches_v<pattern, E>)
      return std::is_floating_point_v<value_t<E>> && std::is_same_v<value_t<captured_t<1, pattern, E>>, value_t<E>>;
    else
      return false;
  }();
  template <class E>
  static auto rewrite(const E& e) {
    return square(capture<1, pattern>(e));
  }
};

/// x * sigmoid(x) -> silu(x). op::silu evaluates exactly x * (1 / (1 + e^-x)),
/// the same operations in the same order, so the bits do not change.
struct silu_from_sigmoid {
  static constexpr const char* name = "x * sigmoid(x) -> silu(x)";
  using pattern = node<op::mul, _1, node<op::sigmoid, _1>>;
  template <class E>
  static constexpr bool applies = [] {
    if constexpr (matches_v<pattern, E>) return std::is_same_v<value_t<captured_t<1, pattern, E>>, value_t<E>>;
    else return false;
  }();
  template <class E>
  static auto rewrite(const E& e) {
    return silu(capture<1, pattern>(e));
  }
};

/// (0.5 * x) * (1 + erf(x * 0.7071067811865476)) -> gelu(x), and the form
/// with x / 1.4142135623730951. op::gelu records which form it came from and
/// evaluates exactly that formula (Hendrycks & Gimpel 2016).
struct gelu_from_erf {
  static constexpr const char* name = "0.5*x*(1+erf(x/sqrt(2))) -> gelu(x)";
  template <class Arg>
  using form = node<op::mul, node<op::mul, const_<0.5>, _1>, node<op::add, const_<1.0>, node<op::erf, Arg>>>;
  using mul_form = form<node<op::mul, _1, const_<0.7071067811865476>>>;
  using div_form = form<node<op::div, _1, const_<1.4142135623730951>>>;
  using pattern = mul_form;  // both forms have root op mul
  template <class E>
  static constexpr bool applies = (matches_v<mul_form, E> || matches_v<div_form, E>) &&
                                  std::is_floating_point_v<value_t<E>>;
  template <class E>
  static auto rewrite(const E& e) {
    if constexpr (matches_v<mul_form, E>) {
      return make_node(op::gelu{}, capture<1, mul_form>(e));
    } else {
      return make_node(op::gelu_of<op::gelu_form::erf_div>{}, capture<1, div_form>(e));
    }
  }
};

/// (0.5 * x) * (1 + tanh(0.7978845608028654 * (x + 0.044715 * ((x * x) * x))))
/// -> gelu_tanh(x) (Hendrycks & Gimpel 2016, eq. 2; same arithmetic as op::gelu_tanh).
struct gelu_tanh_from_formula {
  static constexpr const char* name = "0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))) -> gelu_tanh(x)";
  using cube = node<op::mul, node<op::mul, _1, _1>, _1>;
  using inner = node<op::mul, const_<0.7978845608028654>, node<op::add, _1, node<op::mul, const_<0.044715>, cube>>>;
  using pattern = node<op::mul, node<op::mul, const_<0.5>, _1>, node<op::add, const_<1.0>, node<op::tanh, inner>>>;
  template <class E>
  static constexpr bool applies = matches_v<pattern, E> && std::is_floating_point_v<value_t<E>>;
  template <class E>
  static auto rewrite(const E& e) {
    return gelu_tanh(capture<1, pattern>(e));
  }
};

/// linear(x, W) + b -> linear(x, W, b) for b a scalar or a 1-D bias of the
/// same value type. Exact: linear adds its bias to the rounded product, the
/// same operation as the separate add.
struct linear_bias_from_add {
  static constexpr const char* name = "linear(x, W) + b -> linear(x, W, b)";
  using product = node<op::linear, _1, _2, const_<0.0>>;
  using pattern = node<op::add, product, _3>;
  using pattern_swapped = node<op::add, _3, product>;
  template <class P, class E>
  static constexpr bool fits = [] {
    if constexpr (matches_v<P, E>) {
      using B = captured_t<3, P, E>;
      return rank_v<B> <= 1 && !std::is_same_v<B, constant<0.0>> &&
             std::is_same_v<value_t<E>, value_t<node<op::linear, captured_t<1, P, E>, captured_t<2, P, E>, B>>> &&
             std::is_same_v<value_t<E>, value_t<node<op::linear, captured_t<1, P, E>, captured_t<2, P, E>, constant<0.0>>>>;
    } else {
      return false;
    }
  }();
  template <class E>
  static constexpr bool applies = fits<pattern, E> || fits<pattern_swapped, E>;
  template <class E>
  static auto rewrite(const E& e) {
    using P = std::conditional_t<fits<pattern, E>, pattern, pattern_swapped>;
    return linear(capture<1, P>(e), capture<2, P>(e), capture<3, P>(e));
  }
};

/// matmul(x, transpose(W)) -> linear(x, W) for W a 2-D view (with
/// linear_bias_from_add: matmul(x, transpose(W)) + b -> linear(x, W, b)).
/// Exact: both read B(k, j) = W[j, k] and accumulate k ascending; linear is
/// the form the pattern library (and its LayerNorm prologue) is written for.
struct linear_from_bare_matmul {
  static constexpr const char* name = "matmul(x, transpose(W)) -> linear(x, W)";
  using pattern = node<op::matmul, _1, node<op::transpose, _2>>;
  template <class E>
  static constexpr bool applies = [] {
    if constexpr (matches_v<pattern, E>) return is_view_v<captured_t<2, pattern, E>> && rank_v<captured_t<2, pattern, E>> == 2;
    else return false;
  }();
  template <class E>
  static auto rewrite(const E& e) {
    return linear(capture<1, pattern>(e), capture<2, pattern>(e));
  }
};

/// The built-in rules, tried in this order at every node.
using default_rules = type_list<relu_idempotent, pow_two_to_square, mul_one, div_one, sub_zero, add_negative_zero, silu_from_sigmoid,
                                gelu_from_erf, gelu_tanh_from_formula, linear_from_bare_matmul, linear_bias_from_add>;

}  // namespace fusor::canon
