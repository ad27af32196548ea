// Compile-time tests of canonicalization: each rewrite rule, its IEEE-exact
// refusals, commutative operand order, and the fixpoint.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

using namespace fusor;
using namespace fusor::literals;

namespace {
struct X;
struct Y;
using xv = tensor_view<float, dextents<1>, host_space, X>;
using yv = tensor_view<float, dextents<1>, host_space, Y>;
using uv = tensor_view<float, dextents<1>>;  // untagged
using iv = tensor_view<cuda::std::int32_t, dextents<1>, host_space, X>;
xv x{};
yv y{};
uv u{};
iv xi{};
template <class E>
using canon_t = canonical_t<E>;
}  // namespace

TEST_CASE("identity elimination only where IEEE-exact", "[static][canon]") {
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(x * 1.0_c)>, xv>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(1.0_c * x)>, xv>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(x / 1.0_c)>, xv>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(x - 0.0_c)>, xv>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(x + (-0.0_c))>, xv>);
  // Refused: -0.0 + 0.0 is +0.0, so x + 0 is not x.
  STATIC_REQUIRE(!std::is_same_v<canon_t<decltype(x + 0.0_c)>, xv>);
  // Refused: 1 / x is not x / 1; 0 - x is not x.
  STATIC_REQUIRE(!std::is_same_v<canon_t<decltype(1.0_c / x)>, xv>);
  STATIC_REQUIRE(!std::is_same_v<canon_t<decltype(0.0_c - x)>, xv>);
  // Refused: int * 1.0 is f32, not the int tensor itself.
  STATIC_REQUIRE(!std::is_same_v<canon_t<decltype(xi * 1.0_c)>, iv>);
  STATIC_REQUIRE(std::is_same_v<value_t<canon_t<decltype(xi * 1.0_c)>>, float>);
  // Run-time scalars are not compile-time constants: never rewritten.
  STATIC_REQUIRE(!std::is_same_v<canon_t<decltype(x * 1.0f)>, xv>);
}

TEST_CASE("relu(relu(x)) -> relu(x), to a fixpoint", "[static][canon]") {
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(relu(relu(x)))>, node<op::relu, xv>>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(relu(relu(relu(relu(x)))))>, node<op::relu, xv>>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(relu(relu(x * 1.0_c)))>, node<op::relu, xv>>);
  STATIC_REQUIRE(std::is_same_v<canonical_trace_t<decltype(relu(relu(x)))>, type_list<fusor::canon::relu_idempotent>>);
  // Not a rule: relu(leaky_relu(x)) stays.
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(relu(leaky_relu(x)))>, node<op::relu, node<op::leaky_relu, xv>>>);
}

TEST_CASE("pow(x, 2) with a compile-time 2 is square(x) (ONNX bodies square with Pow)", "[static][canon]") {
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(fusor::pow(x, 2.0_c))>, node<op::square, xv>>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(fusor::pow(x, 2_c))>, node<op::square, xv>>);  // an int64 2 too
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(fusor::pow(x + y, constant<2.0>{}))>, node<op::square, node<op::add, xv, yv>>>);
  // not rewritten: another exponent, a run-time 2 (its value is not in the type), an integer base
  STATIC_REQUIRE(!std::is_same_v<canon_t<decltype(fusor::pow(x, 3.0_c))>, node<op::square, xv>>);
  STATIC_REQUIRE(!std::is_same_v<canon_t<decltype(fusor::pow(x, 2.0f))>, node<op::square, xv>>);
  STATIC_REQUIRE(!std::is_same_v<canon_t<decltype(fusor::pow(xi, 2_c))>, node<op::square, iv>>);
}

TEST_CASE("x * sigmoid(x) -> silu(x) needs a provably identical x", "[static][canon]") {
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(x * sigmoid(x))>, node<op::silu, xv>>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(sigmoid(x) * x)>, node<op::silu, xv>>);
  // Different tensors: no rewrite.
  STATIC_REQUIRE(!std::is_same_v<canon_t<decltype(x * sigmoid(y))>, node<op::silu, xv>>);
  // Untagged views might be different tensors: no rewrite.
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(u * sigmoid(u))>, node<op::mul, uv, node<op::sigmoid, uv>>>);
  // A composite operand made of tagged leaves and attribute-free ops is identical too.
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype((x + y) * sigmoid(x + y))>, node<op::silu, node<op::add, xv, yv>>>);
}

TEST_CASE("GELU written out is recognised in its erf and tanh forms", "[static][canon]") {
  using g = node<op::gelu, xv>;
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(0.5_c * x * (1.0_c + erf(x * 0.7071067811865476_c)))>, g>);
  // The division form is a gelu too, evaluating x / sqrt(2) exactly as written.
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(0.5_c * x * (1.0_c + erf(x / 1.4142135623730951_c)))>,
                                node<op::gelu_of<op::gelu_form::erf_div>, xv>>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(x * 0.5_c * (erf(0.7071067811865476_c * x) + 1.0_c))>, g>);
  STATIC_REQUIRE(std::is_same_v<
                 canon_t<decltype(0.5_c * x * (1.0_c + tanh(0.7978845608028654_c * (x + 0.044715_c * (x * x * x)))))>,
                 node<op::gelu_tanh, xv>>);
  // A different constant is a different function: not GELU.
  STATIC_REQUIRE(!std::is_same_v<canon_t<decltype(0.5_c * x * (1.0_c + erf(x * 0.7_c)))>, g>);
  // Run-time scalars: not recognised (their values are unknown at compile time).
  STATIC_REQUIRE(!std::is_same_v<canon_t<decltype(0.5f * x * (1.0f + erf(x * 0.7071067811865476f)))>, g>);
}

TEST_CASE("IEEE: log(exp(x)) and x - x are never simplified", "[static][canon]") {
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(log(exp(x)))>, node<op::log, node<op::exp, xv>>>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(x - x)>, node<op::sub, xv, xv>>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(x / x)>, node<op::div, xv, xv>>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(x * 0.0_c)>, node<op::mul, constant<0.0>, xv>>);
}

TEST_CASE("commutative operands get one deterministic order", "[static][canon]") {
  // constants < scalars < views < nodes; nodes by op name
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(x + 2.0_c)>, canon_t<decltype(2.0_c + x)>>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(x * 2.0f)>, node<op::mul, scalar<float>, xv>>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(exp(x) + tanh(x))>, canon_t<decltype(tanh(x) + exp(x))>>);
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(max(exp(x), x))>, node<op::max, xv, node<op::exp, xv>>>);
  // Non-commutative ops keep their order.
  STATIC_REQUIRE(std::is_same_v<canon_t<decltype(exp(x) - x)>, node<op::sub, node<op::exp, xv>, xv>>);
  // Canonicalization is idempotent.
  using c1 = canon_t<decltype(relu(exp(x) * 3.0f + x * sigmoid(x)))>;
  STATIC_REQUIRE(std::is_same_v<canonical_t<c1>, c1>);
}
