// Compile-time tests that fusor's diagnostic fallback overloads
// (expr/operand_diagnostics.hpp) never take a valid call: fusor's own
// factories with attributes and optional operands, the standard library's
// math under `using namespace`, and a user's functions that share a name
// with a fusor factory (found by the using-directive or by argument-dependent
// lookup through a fusor type). The must-fail side is
// tests/fail/operand_diagnostics.cpp.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <complex>
#include <cstdlib>
#include <type_traits>
#include <valarray>
#include <vector>

namespace user {
// A user's library with names fusor also uses, taking its own types.
struct Matrix {};
inline Matrix transpose(const Matrix& m) { return m; }
inline Matrix matmul(const Matrix& a, const Matrix&) { return a; }
inline float sum(const std::vector<float>& v) { return v.empty() ? 0.0f : v[0]; }
inline float gelu(float v) { return v; }
inline float clip(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }
inline int run(const Matrix&, double, int) { return 1; }
// A generic function found by ADL through a fusor template argument.
template <class T>
int count(const std::vector<T>& v) { return int(v.size()); }
}  // namespace user

namespace {
using namespace fusor;
using namespace fusor::literals;
using namespace user;
template <class E>
constexpr bool builds_node = is_node_v<std::remove_cvref_t<E>>;
float data[4096];
auto x = host_view(data, 4, 8);
auto w = host_view(data, 8, 8);
auto g = host_view(data, 8);
auto img = host_view(data, 1, 2, 4, 4);
auto kernel = host_view(data, 2, 2, 3, 3);
auto cvec = host_view(data, 2);
auto q = host_view(data, 1, 2, 4, 8);
auto mask = host_view(data, 4, 4);
struct Id;
}  // namespace

TEST_CASE("fallbacks leave the standard library's math alone", "[static][diagnostics]") {
  std::complex<double> z{1, 2};
  std::valarray<float> va(4);
  int i = 1, j = 2;
  STATIC_REQUIRE(std::is_same_v<decltype(std::sqrt(z)), decltype(sqrt(z))>);
  STATIC_REQUIRE(std::is_same_v<decltype(abs(std::complex<float>{})), float>);
  STATIC_REQUIRE(std::is_same_v<decltype(exp(va)), decltype(std::exp(va))>);
  {
    using namespace std;  // fusor's and std's max, min and pow both visible
    STATIC_REQUIRE(std::is_same_v<std::remove_cvref_t<decltype(max(&i, &j))>, int*>);
    STATIC_REQUIRE(std::is_same_v<std::remove_cvref_t<decltype(min(i, j))>, int>);
    STATIC_REQUIRE(std::is_same_v<decltype(pow(2.0, 3)), double>);
    STATIC_REQUIRE(std::is_same_v<decltype(sqrt(2.0f)), float>);
    STATIC_REQUIRE(std::is_same_v<decltype(abs(-3)), int>);
  }
  REQUIRE(sqrt(z) == std::sqrt(z));
}

TEST_CASE("fallbacks leave a user's functions of the same name alone", "[static][diagnostics]") {
  Matrix m;
  const Matrix cm{};
  std::vector<float> v(4);
  const double d = 0.5;
  STATIC_REQUIRE(std::is_same_v<decltype(transpose(m)), Matrix>);
  STATIC_REQUIRE(std::is_same_v<decltype(transpose(cm)), Matrix>);
  STATIC_REQUIRE(std::is_same_v<decltype(matmul(m, m)), Matrix>);
  STATIC_REQUIRE(std::is_same_v<decltype(sum(v)), float>);
  STATIC_REQUIRE(std::is_same_v<decltype(gelu(d)), float>);          // a double converted: still the user's
  STATIC_REQUIRE(std::is_same_v<decltype(clip(d, 0, 1)), float>);
  STATIC_REQUIRE(std::is_same_v<decltype(run(m, 1.0f, 2)), int>);
  std::vector<decltype(x)> views(3);
  STATIC_REQUIRE(std::is_same_v<decltype(count(views)), int>);       // ADL through tensor_view
  REQUIRE(count(views) == 3);
}

TEST_CASE("fallbacks leave fusor's valid calls to the factories", "[static][diagnostics]") {
  STATIC_REQUIRE(builds_node<decltype(softmax(x, 1))>);
  STATIC_REQUIRE(builds_node<decltype(layer_norm(x, g, g, -1, 1e-5f))>);
  STATIC_REQUIRE(builds_node<decltype(layer_norm(x, nullptr, nullptr))>);
  STATIC_REQUIRE(builds_node<decltype(layer_norm(x, 1.0f, 0.0f, 1))>);
  STATIC_REQUIRE(builds_node<decltype(rms_norm(x, g, 1e-6f, -1))>);
  STATIC_REQUIRE(builds_node<decltype(linear(x, w))>);
  STATIC_REQUIRE(builds_node<decltype(linear(x, w, nullptr))>);
  STATIC_REQUIRE(builds_node<decltype(conv2d(img, kernel, nullptr, {.stride = {2, 2}}))>);
  STATIC_REQUIRE(builds_node<decltype(conv2d(img, kernel, cvec))>);
  STATIC_REQUIRE(builds_node<decltype(gemm(x, w, g, {.trans_b = true}))>);
  STATIC_REQUIRE(builds_node<decltype(scaled_dot_product_attention(q, q, q, {.causal = true}, mask))>);
  STATIC_REQUIRE(builds_node<decltype(scaled_dot_product_attention(q, q, q, {}, 0.0f))>);
  STATIC_REQUIRE(builds_node<decltype(batch_norm<-3>(img, batch_norm_params{cvec, 1.0f, 0.0f, cvec}))>);
  STATIC_REQUIRE(builds_node<decltype(instance_norm(img, nullptr, nullptr))>);
  STATIC_REQUIRE(builds_node<decltype(multi_head_attention(host_view(data, 1, 4, 8),
                                                    attention_weights{w, w, w, w, nullptr, nullptr, nullptr, nullptr},
                                                    {.heads = 2}))>);
  STATIC_REQUIRE(builds_node<decltype(mean<1>(x, {1}, false))>);
  STATIC_REQUIRE(builds_node<decltype(mse_loss<loss_reduction::sum>(x, x + 1.0f))>);
  STATIC_REQUIRE(builds_node<decltype(clip(x, 0.0f, 6))>);
  STATIC_REQUIRE(builds_node<decltype(where(x, 1.0f, x))>);
  STATIC_REQUIRE(builds_node<decltype(tag<Id>(x + 1.0f))>);
  STATIC_REQUIRE(is_view_v<decltype(tag<Id>(x))>);
  STATIC_REQUIRE(builds_node<decltype(pow(x, 2.0_c) * 0.5_c)>);
  STATIC_REQUIRE(builds_node<decltype(fusor::max(x, 0.0f))>);
  STATIC_REQUIRE(is_view_v<decltype(host_view(data, fusor::extents<4, 8>{}, shape<2>{8, 1}))>);
  const auto both = siblings(x + 1.0f, x * 2.0f);
  STATIC_REQUIRE(kernel_count<decltype(both), host_policy> == 1);
  std::vector<float> out(64);
  auto o1 = host_view(out.data(), 4, 8), o2 = host_view(out.data() + 32, 4, 8);
  REQUIRE(run(outputs(o1, o2), both, host()).kernels == 1);
  REQUIRE(!explain(both).empty());
}

// `_c` parses a decimal literal to the double the compiler gives the same
// spelling, bit for bit (ops/functions.hpp: 19 digits exactly, a power of
// ten in long double, one rounding to double), and an integer to its int64.
template <class C>
constexpr bool same_bits_as(double d) {
  return std::bit_cast<std::uint64_t>(double(C::value)) == std::bit_cast<std::uint64_t>(d);
}
TEST_CASE("_c literals are the compiler's own values, long and extreme ones included", "[static][literals]") {
  using namespace fusor::literals;
  STATIC_REQUIRE(same_bits_as<decltype(0.5_c)>(0.5));
  STATIC_REQUIRE(same_bits_as<decltype(0.044715_c)>(0.044715));
  STATIC_REQUIRE(same_bits_as<decltype(0.7071067811865476_c)>(0.7071067811865476));
  STATIC_REQUIRE(same_bits_as<decltype(0.1_c)>(0.1));
  STATIC_REQUIRE(same_bits_as<decltype(1e-5_c)>(1e-5));
  STATIC_REQUIRE(same_bits_as<decltype(3.14159265358979323846_c)>(3.14159265358979323846));  // 21 digits
  STATIC_REQUIRE(same_bits_as<decltype(0.30000000000000004_c)>(0.30000000000000004));
  STATIC_REQUIRE(same_bits_as<decltype(9007199254740993.0_c)>(9007199254740993.0));  // a tie: to even
  STATIC_REQUIRE(same_bits_as<decltype(1e23_c)>(1e23));
  STATIC_REQUIRE(same_bits_as<decltype(1e300_c)>(1e300));
  STATIC_REQUIRE(same_bits_as<decltype(1.7976931348623157e308_c)>(1.7976931348623157e308));  // DBL_MAX
  STATIC_REQUIRE(same_bits_as<decltype(2.2250738585072014e-308_c)>(2.2250738585072014e-308));  // DBL_MIN
  STATIC_REQUIRE(same_bits_as<decltype(1e-320_c)>(1e-320));                                  // subnormal
  STATIC_REQUIRE(same_bits_as<decltype(5e-324_c)>(5e-324));
  STATIC_REQUIRE(same_bits_as<decltype(00.5_c)>(00.5));  // leading zeros of a decimal literal
  STATIC_REQUIRE(same_bits_as<decltype(1234567890123456789012345.0_c)>(1234567890123456789012345.0));
  STATIC_REQUIRE(decltype(123456789012345678_c)::value == 123456789012345678);  // not through double
  STATIC_REQUIRE(decltype(9223372036854775807_c)::value == 9223372036854775807);
  STATIC_REQUIRE(std::is_same_v<std::remove_cv_t<decltype(decltype(2_c)::value)>, cuda::std::int64_t>);
}
