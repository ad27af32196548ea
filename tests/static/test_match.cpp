// Compile-time tests of the pattern matcher: placeholders, repeated
// placeholders, constants, commutative matching and captures.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

using namespace fusor;
using namespace fusor::literals;

namespace {
struct X;
struct Y;
using xv = tensor_view<float, dextents<2>, host_space, X>;
using yv = tensor_view<float, dextents<2>, host_space, Y>;
using uv = tensor_view<float, dextents<2>>;
template <class E>
struct is_view_pred : std::bool_constant<is_view_v<E>> {};
}  // namespace

TEST_CASE("placeholders capture subexpressions", "[static][match]") {
  using e = node<op::relu, node<op::add, xv, yv>>;
  STATIC_REQUIRE(matches_v<node<op::relu, _1>, e>);
  STATIC_REQUIRE(std::is_same_v<captured_t<1, node<op::relu, _1>, e>, node<op::add, xv, yv>>);
  STATIC_REQUIRE(matches_v<node<op::relu, node<op::add, _1, _2>>, e>);
  STATIC_REQUIRE(std::is_same_v<captured_t<2, node<op::relu, node<op::add, _1, _2>>, e>, yv>);
  STATIC_REQUIRE(!matches_v<node<op::sigmoid, _1>, e>);
  STATIC_REQUIRE(!matches_v<node<op::relu, node<op::mul, _1, _2>>, e>);
}

TEST_CASE("a repeated placeholder needs one provably identical subexpression", "[static][match]") {
  using p = node<op::mul, _1, _1>;
  STATIC_REQUIRE(matches_v<p, node<op::mul, xv, xv>>);
  STATIC_REQUIRE(!matches_v<p, node<op::mul, xv, yv>>);
  STATIC_REQUIRE(!matches_v<p, node<op::mul, uv, uv>>);  // untagged: may differ at run time
  STATIC_REQUIRE(!matches_v<p, node<op::mul, scalar<float>, scalar<float>>>);
  STATIC_REQUIRE(matches_v<p, node<op::mul, node<op::exp, xv>, node<op::exp, xv>>>);
  // ops with run-time attributes are not provably identical
  STATIC_REQUIRE(!matches_v<p, node<op::mul, node<op::leaky_relu, xv>, node<op::leaky_relu, xv>>>);
}

TEST_CASE("commutative ops match either operand order", "[static][match]") {
  using p = node<op::mul, _1, node<op::sigmoid, _1>>;
  STATIC_REQUIRE(matches_v<p, node<op::mul, xv, node<op::sigmoid, xv>>>);
  STATIC_REQUIRE(matches_v<p, node<op::mul, node<op::sigmoid, xv>, xv>>);
  // sub is not commutative
  STATIC_REQUIRE(matches_v<node<op::sub, _1, const_<1.0>>, node<op::sub, xv, constant<1.0>>>);
  STATIC_REQUIRE(!matches_v<node<op::sub, _1, const_<1.0>>, node<op::sub, constant<1.0>, xv>>);
}

TEST_CASE("constants match bit for bit", "[static][match]") {
  STATIC_REQUIRE(matches_v<const_<0.5>, constant<0.5>>);
  STATIC_REQUIRE(!matches_v<const_<0.0>, constant<-0.0>>);
  STATIC_REQUIRE(!matches_v<const_<0.5>, scalar<float>>);
  STATIC_REQUIRE(matches_v<placeholder_if<1, is_view_pred>, xv>);
  STATIC_REQUIRE(!matches_v<placeholder_if<1, is_view_pred>, node<op::exp, xv>>);
}

TEST_CASE("capture extracts the run-time subexpression", "[static][match]") {
  float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
  auto xa = host_view(a, 2, 2).with_id<X>();
  auto yb = host_view(b, 2, 2).with_id<Y>();
  auto e = sigmoid(yb) * xa;  // pattern written with the operands the other way round
  using p = node<op::mul, _1, node<op::sigmoid, _2>>;
  STATIC_REQUIRE(matches_v<p, decltype(e)>);
  REQUIRE(capture<1, p>(e).data() == a);
  REQUIRE(capture<2, p>(e).data() == b);
}
