// Compile-time plans of reductions: kernel counts, rules, static extents.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

using namespace fusor;
namespace {
using V = tensor_view<float, dextents<2>>;
using S = tensor_view<float, extents<4, 1024>>;
const V& v = *static_cast<const V*>(nullptr);  // only used in decltype
const S& s = *static_cast<const S*>(nullptr);
}  // namespace

TEST_CASE("softmax is one kernel, by rule reduction", "[static][reduction]") {
  using E = decltype(softmax(v, -1));
  STATIC_REQUIRE(kernel_count<E> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<E>, rule::reduction>);
  STATIC_REQUIRE(unfused_kernel_count<E> == 1);
  STATIC_REQUIRE(std::is_same_v<static_extents_t<decltype(softmax(s))>, extents<4, 1024>>);
  STATIC_REQUIRE(kernel_count<decltype(log_softmax(exp(v) * 2.0f))> == 1);
}

TEST_CASE("mean(square(a - b)): one kernel; unfused: three", "[static][reduction]") {
  using E = decltype(mean(square(v - v), {1}));
  STATIC_REQUIRE(kernel_count<E> == 1);
  STATIC_REQUIRE(unfused_kernel_count<E> == 3);
  STATIC_REQUIRE(std::is_same_v<value_t<E>, float>);
  STATIC_REQUIRE(rank_v<E> == 2);
  STATIC_REQUIRE(rank_v<decltype(mean<1>(square(v - v), {1}, false))> == 1);
}

TEST_CASE("reduction epilogues fuse; reductions of reductions are separate kernels", "[static][reduction]") {
  // Epilogues: scalar work on a reduced value, any elementwise consumer of a
  // normalization (same shape as its input).
  STATIC_REQUIRE(kernel_count<decltype(sqrt(mean(v, {1})))> == 1);
  STATIC_REQUIRE(kernel_count<decltype(sqrt(mean(square(v), {1}) + 1e-5f))> == 1);
  STATIC_REQUIRE(kernel_count<decltype(layer_norm(v, nullptr, nullptr) + v)> == 1);
  STATIC_REQUIRE(kernel_count<decltype(relu(softmax(v)) * 2.0f)> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<decltype(layer_norm(v, nullptr, nullptr) + v)>, rule::reduction>);
  STATIC_REQUIRE(unfused_kernel_count<decltype(layer_norm(v, nullptr, nullptr) + v)> == 2);
  // Not epilogues: a reduced value combined with a tensor (broadcast back),
  // a reduction of a reduction.
  STATIC_REQUIRE(kernel_count<decltype(v - max_reduce(v, {1}))> == 2);
  STATIC_REQUIRE(kernel_count<decltype(sum(softmax(v), {1}))> == 2);
  STATIC_REQUIRE(kernel_count<decltype(layer_norm(v + 1.0f, nullptr, nullptr))> == 1);
  STATIC_REQUIRE(kernel_count<decltype(rms_norm(v, v))> == 1);
  STATIC_REQUIRE(op::reduce<reduce_kind::sum>::kind == op_kind::reduction);
}

TEST_CASE("reduction result types: fp32 accumulation for half", "[static][reduction]") {
  using H = tensor_view<__half, dextents<2>>;
  STATIC_REQUIRE(std::is_same_v<value_t<decltype(sum(std::declval<H>()))>, float>);
  STATIC_REQUIRE(std::is_same_v<value_t<decltype(softmax(std::declval<H>()))>, float>);
  using I = tensor_view<std::int64_t, dextents<1>>;
  STATIC_REQUIRE(std::is_same_v<value_t<decltype(sum(std::declval<I>()))>, std::int64_t>);
  STATIC_REQUIRE(std::is_same_v<value_t<decltype(mean(std::declval<I>()))>, float>);
}
