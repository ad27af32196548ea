// The op registry (include/fusor/ops/registry.hpp) tells the truth about
// the ops it lists: the fuzzer, the operand-diagnostics test and the ONNX
// index trust its columns (tools/op_registry.py), so each elementwise line
// is checked here against the op tag it names.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace {
enum class result_kind { same, floating, boolean };
constexpr result_kind same = result_kind::same;
constexpr result_kind floating = result_kind::floating;
constexpr result_kind boolean = result_kind::boolean;

/// The result column's dtype for operands of dtype T.
template <class T, result_kind R>
using expected_result = std::conditional_t<R == result_kind::boolean, bool,
                                           std::conditional_t<R == result_kind::floating, float, T>>;

using ints = fusor::tensor_view<std::int32_t, fusor::dextents<1>, fusor::host_space>;
using floats = fusor::tensor_view<float, fusor::dextents<1>, fusor::host_space>;

template <class F, std::size_t... I>
constexpr bool callable_with_attributes(std::index_sequence<I...>) {
  return requires(F f) { f(floats{}, (float(I) + 0.5f)...); };
}
}  // namespace

TEST_CASE("registry: each unary line names its op tag and states its result dtype", "[static][registry]") {
#define FUSOR_CHECK_UNARY(NAME, ONNX, RESULT)                                                              \
  STATIC_REQUIRE(std::string_view(fusor::op::NAME::name) == #NAME);                                        \
  STATIC_REQUIRE(fusor::op::NAME::arity == 1);                                                             \
  STATIC_REQUIRE(std::is_same_v<typename fusor::op::NAME::template result<ints>,                          \
                                expected_result<std::int32_t, RESULT>>);                                   \
  STATIC_REQUIRE(std::is_same_v<std::remove_cvref_t<decltype(fusor::NAME(ints{}))>,                         \
                                fusor::node<fusor::op::NAME, ints>>);
  FUSOR_UNARY_OPS(FUSOR_CHECK_UNARY)
#undef FUSOR_CHECK_UNARY
}

TEST_CASE("registry: each binary line names its op tag and states its result dtype", "[static][registry]") {
#define FUSOR_CHECK_BINARY(NAME, ONNX, RESULT)                                                             \
  STATIC_REQUIRE(std::string_view(fusor::op::NAME::name) == #NAME);                                        \
  STATIC_REQUIRE(fusor::op::NAME::arity == 2);                                                             \
  STATIC_REQUIRE(std::is_same_v<typename fusor::op::NAME::template result<ints, ints>,     \
                                expected_result<std::int32_t, RESULT>>);                                   \
  STATIC_REQUIRE(std::is_same_v<std::remove_cvref_t<decltype(fusor::NAME(ints{}, ints{}))>,                 \
                                fusor::node<fusor::op::NAME, ints, ints>>);
  FUSOR_BINARY_OPS(FUSOR_CHECK_BINARY)
#undef FUSOR_CHECK_BINARY
}

TEST_CASE("registry: each attribute op takes exactly its number of float attributes", "[static][registry]") {
#define FUSOR_CHECK_ATTRIBUTES(NAME, ONNX, N)                                                              \
  {                                                                                                        \
    constexpr auto call = [](const auto&... a) -> decltype(fusor::NAME(a...)) { return fusor::NAME(a...); }; \
    using F = decltype(call);                                                                              \
    STATIC_REQUIRE(std::string_view(fusor::op::NAME::name) == #NAME);                                      \
    /* the fuzzer treats attribute ops as floating (f32 for integer inputs) */                             \
    STATIC_REQUIRE(std::is_same_v<typename fusor::op::NAME::template result<ints>, float>);                \
    STATIC_REQUIRE(callable_with_attributes<F>(std::make_index_sequence<N>{}));                            \
    STATIC_REQUIRE(!callable_with_attributes<F>(std::make_index_sequence<N + 1>{}));                       \
  }
  FUSOR_ATTRIBUTE_OPS(FUSOR_CHECK_ATTRIBUTES)
#undef FUSOR_CHECK_ATTRIBUTES
}

TEST_CASE("registry: each reduction line is the factory of its reducer", "[static][registry]") {
#define FUSOR_CHECK_REDUCTION(NAME, KIND, ONNX)                                                            \
  STATIC_REQUIRE(std::is_same_v<typename std::remove_cvref_t<decltype(fusor::NAME(floats{}, {0}))>::op_type, \
                                fusor::op::reduce<fusor::reduce_kind::KIND, -1>>);
  FUSOR_REDUCTION_OPS(FUSOR_CHECK_REDUCTION)
#undef FUSOR_CHECK_REDUCTION
}
