// Compile-time tests of the planner: kernel counts, matched rules, vertical
// and horizontal groups, user rules.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

using namespace fusor;
using namespace fusor::literals;

namespace {
struct X;
struct Z;
using xv = tensor_view<float, dextents<1>, host_space, X>;
using zv = tensor_view<float, dextents<1>, host_space, Z>;
xv x{};
zv z{};
}  // namespace

TEST_CASE("an elementwise chain is one kernel", "[static][plan]") {
  using chain6 = decltype(relu(gelu(x * 2.0f + z) - sigmoid(x)) * z);
  STATIC_REQUIRE(kernel_count<chain6> == 1);
  STATIC_REQUIRE(unfused_kernel_count<chain6> == 7);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<chain6>, rule::elementwise_chain>);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<chain6, unfused_policy>, rule::single_op>);
  // Canonicalization runs before planning: x*sigmoid(x) is one op, silu.
  STATIC_REQUIRE(unfused_kernel_count<decltype(x * sigmoid(x))> == 1);
  STATIC_REQUIRE(unfused_kernel_count<decltype(relu(relu(x)))> == 1);
}

TEST_CASE("siblings sharing an input are one multi-output kernel", "[static][plan]") {
  using s = decltype(siblings(silu(x), sigmoid(x) * z));
  STATIC_REQUIRE(kernel_count<s> == 1);
  STATIC_REQUIRE(unfused_kernel_count<s> == 3);
  STATIC_REQUIRE(is_node_v<std::tuple_element_t<0, decltype(plan_t<s>{}.exprs)>>);
  // Different ranks cannot share one kernel: two groups.
  using t = decltype(siblings(silu(x), relu(tensor_view<float, dextents<2>>{})));
  STATIC_REQUIRE(kernel_count<t> == 2);
}

namespace {
// A user rule placed in front of the library: refuses to absorb exp, so exp
// gets its own kernel (e.g. to keep an expensive producer materialized).
struct no_exp_fusion {
  static constexpr const char* name = "no_exp_fusion";
  using kernel = kernel_family::elementwise;
  template <class E>
  static constexpr bool matches = is_elementwise_node_v<E>;
  template <class P>
  static constexpr bool absorbs = is_elementwise_node_v<P> && !matches_v<node<op::exp, _1>, P>;
};
}  // namespace

TEST_CASE("user rules go before the library and change the plan", "[static][plan]") {
  using e = decltype(relu(exp(x) + z));
  STATIC_REQUIRE(kernel_count<e> == 1);
  STATIC_REQUIRE(kernel_count<e, with_rules<no_exp_fusion>> == 2);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<e, with_rules<no_exp_fusion>>, no_exp_fusion>);
}

TEST_CASE("explain names rewrites, groups and kernel counts", "[plan]") {
  float a[8] = {}, c[8] = {};
  auto xa = host_view(a, 8).with_id<X>();
  auto zc = host_view(c, 8).with_id<Z>();
  const std::string s = explain(relu(xa * sigmoid(xa) + zc));
  CHECK_THAT(s, Catch::Contains("x * sigmoid(x) -> silu(x)"));
  CHECK_THAT(s, Catch::Contains("kernel 1: elementwise_chain"));
  CHECK_THAT(s, Catch::Contains("3 unfused -> 1 fused"));
  const std::string t = explain(siblings(silu(xa), sigmoid(xa) * zc));
  CHECK_THAT(t, Catch::Contains("horizontal, 2 outputs"));
}

TEST_CASE("shared-producer search: the first (largest) repeated subtree in pre-order", "[static][plan]") {
  // detail::repeated lists a group's subtrees in pre-order and picks the first
  // provably identical one that occurs twice (a flat base list and one
  // ambiguous-base conversion check per candidate since the compile-time work
  // of docs/compile_time.md).
  using ex = decltype(exp(x));
  using big = decltype(sigmoid(exp(x) * z));
  using E1 = decltype(exp(x) + (exp(x) * z));  // exp(x) twice
  STATIC_REQUIRE(std::is_same_v<fusor::detail::repeated<E1>::type, ex>);
  STATIC_REQUIRE(fusor::detail::repeated<E1>::index == 1);
  using E2 = decltype(sigmoid(exp(x) * z) - tanh(sigmoid(exp(x) * z)));  // the larger subtree first
  STATIC_REQUIRE(std::is_same_v<fusor::detail::repeated<E2>::type, big>);
  using E3 = decltype(exp(x) * tanh(z));  // nothing repeated
  STATIC_REQUIRE(std::is_void_v<fusor::detail::repeated<E3>::type>);
  using E4 = decltype(exp(x) * tanh(tensor_view<float, dextents<1>>{}) + tanh(tensor_view<float, dextents<1>>{}));
  STATIC_REQUIRE(std::is_void_v<fusor::detail::repeated<E4>::type>);  // untagged: not provably identical
  // Floating-point constants in the subtree types (g++ 12 crashed deducing against them).
  using half_x = decltype(exp(x * constant<0.5>{}));
  using E5 = decltype(half_x{} + tanh(half_x{} * constant<0.25>{}));
  STATIC_REQUIRE(std::is_same_v<fusor::detail::repeated<E5>::type, half_x>);
}
