// fusor::tuple (core/tuple.hpp): the aggregate tuple behind node operands
// and kernel trees. Element access, value categories, apply, arities past
// the eight spelled-out members (nested rest), structured bindings, and the
// empty-member layout that kernel parameter structs rely on.
#include <fusor/core/tuple.hpp>

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace {
struct empty_a {};
struct empty_b {};
}  // namespace

TEST_CASE("fusor::tuple: get and apply are constant expressions at every arity", "[tuple]") {
  constexpr fusor::tuple<int, double, char> t{1, 2.5, 'c'};
  STATIC_REQUIRE(fusor::get<0>(t) == 1);
  STATIC_REQUIRE(fusor::get<1>(t) == 2.5);
  STATIC_REQUIRE(fusor::get<2>(t) == 'c');
  STATIC_REQUIRE(fusor::apply([](int a, double b, char c) { return a + b + c; }, t) == 1 + 2.5 + 'c');
  STATIC_REQUIRE(fusor::apply([] { return 7; }, fusor::tuple<>{}) == 7);

  // 11 elements: members 0..7 and a nested tuple of 3, still initialized flat.
  constexpr auto big = fusor::make_tuple(0, 1, 2, 3, 4, 5, 6, 7, 8, 9.5f, 10L);
  STATIC_REQUIRE(fusor::tuple_size_v<std::remove_cvref_t<decltype(big)>> == 11);
  STATIC_REQUIRE(std::tuple_size_v<std::remove_cvref_t<decltype(big)>> == 11);
  STATIC_REQUIRE(fusor::get<8>(big) == 8);
  STATIC_REQUIRE(fusor::get<9>(big) == 9.5f);
  STATIC_REQUIRE(fusor::get<10>(big) == 10L);
  STATIC_REQUIRE(std::is_same_v<std::tuple_element_t<9, std::remove_cvref_t<decltype(big)>>, float>);
  STATIC_REQUIRE(std::is_same_v<std::tuple_element_t<10, std::remove_cvref_t<decltype(big)>>, long>);
  STATIC_REQUIRE(fusor::apply([](auto... v) { return (0.0 + ... + double(v)); }, big) == 55.5);
  // 17 elements: two levels of nesting.
  constexpr auto bigger = fusor::make_tuple(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
  STATIC_REQUIRE(fusor::get<16>(bigger) == 16);
  STATIC_REQUIRE(fusor::apply([](auto... v) { return (0 + ... + v); }, bigger) == 136);
}

TEST_CASE("fusor::tuple: get keeps the tuple's value category and constness (like std::get)", "[tuple]") {
  using T = fusor::tuple<int, std::string>;
  T t{1, "abc"};
  STATIC_REQUIRE(std::is_same_v<decltype(fusor::get<0>(t)), int&>);
  STATIC_REQUIRE(std::is_same_v<decltype(fusor::get<0>(std::as_const(t))), const int&>);
  STATIC_REQUIRE(std::is_same_v<decltype(fusor::get<1>(std::move(t))), std::string&&>);
  fusor::get<0>(t) = 5;
  CHECK(fusor::get<0>(t) == 5);
  // A moved-out element leaves the tuple (move-only elements work too).
  std::string s = fusor::get<1>(std::move(t));
  CHECK(s == "abc");
  fusor::tuple<std::unique_ptr<int>> u{std::make_unique<int>(3)};
  auto p = fusor::apply([](std::unique_ptr<int>&& q) { return std::move(q); }, std::move(u));
  REQUIRE(p != nullptr);
  CHECK(*p == 3);
  CHECK(fusor::get<0>(u) == nullptr);
}

TEST_CASE("fusor::tuple: structured bindings and CTAD", "[tuple]") {
  fusor::tuple t{1, 2.0, 'x'};
  STATIC_REQUIRE(std::is_same_v<decltype(t), fusor::tuple<int, double, char>>);
  auto& [a, b, c] = t;
  a = 4;
  CHECK(fusor::get<0>(t) == 4);
  CHECK(b == 2.0);
  CHECK(c == 'x');
}

TEST_CASE("fusor::tuple: laid out as a plain struct (no [[no_unique_address]])", "[tuple]") {
  // Kernel parameters are built on the host and read by nvcc's device code:
  // their layout must be the one every compiler agrees on, that of a plain
  // struct with one member per element (core/tuple.hpp; ctest ptx.layout
  // compares host and device layouts). Empty elements take a byte each.
  struct plain2 {
    empty_a a;
    float f;
  };
  struct plain3 {
    empty_a a;
    empty_b b;
    float f;
  };
  STATIC_REQUIRE(sizeof(fusor::tuple<empty_a, float>) == sizeof(plain2));
  STATIC_REQUIRE(sizeof(fusor::tuple<empty_a, empty_b, float>) == sizeof(plain3));
  STATIC_REQUIRE(sizeof(fusor::tuple<float, empty_a, float>) == 3 * sizeof(float));
  STATIC_REQUIRE(std::is_standard_layout_v<fusor::tuple<empty_a, float, const float*>>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<fusor::tuple<empty_a, float, const float*>>);
  STATIC_REQUIRE(std::is_empty_v<fusor::tuple<>>);
}
