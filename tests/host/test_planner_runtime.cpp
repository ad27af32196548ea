// Run-time behaviour of the planner and cost model on the host executor:
// plans chosen at run time flip with the element count, every plan computes
// the same bits as the unfused reference, user overrides and other device
// models change kernel counts but not results, explain and DOT say why.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cmath>
#include <cstring>
#include <regex>
#include <vector>

using namespace fusor;

namespace {
struct X;
struct Z;

template <class V>
auto shared_use(const V& v) {
  auto g = gelu(tanh(gelu(v)));  // an expensive producer used three times
  return g * g + sqrt(g);
}

std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(0.37f * float(i)) * 3.0f;
  return v;
}

// A GPU with a tiny register file per thread, to exercise the budget: 30
// registers, below the 32 that relu(gelu(x * 2 + z)) * sigmoid(x) needs
// (16 + 2 per source + 2 per live value: 6 live at the final mul, whose
// operands each hold 5 while their gelu / sigmoid run).
struct tiny_gpu {
  static constexpr device_model model{"tiny GPU", true, 1, 65536, 30, 2048, 32, 0, 1e6, 1e12, 0.9, 1e13, 1e14,
                                      3e-6, 1e-6, 4096};
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
}  // namespace

TEST_CASE("a dynamic-shape plan flips from recompute to materialize with size", "[host][plan]") {
  // generic CPU model: launch overhead (5 us) dominates small sizes, the
  // recomputed FLOPs dominate large ones (see tests/static/test_cost.cpp).
  for (const std::size_t n : {std::size_t(1000), std::size_t(1) << 22}) {
    auto xs = ramp(n);
    std::vector<float> fused(n, -1), unfused_out(n, -2);
    auto x = host_view(xs.data(), n).with_id<X>();
    auto e = shared_use(x);
    STATIC_REQUIRE(plan_is_dynamic_v<decltype(e), host_policy>);
    const run_result r = run(host_view(fused.data(), n), e, host());
    const run_result u = run(host_view(unfused_out.data(), n), e, unfused());
    CHECK(r.kernels == (n < 100000 ? 1u : 2u));
    CHECK(u.kernels > r.kernels);
    CHECK(same_bits(fused, unfused_out));  // either plan: the same bits
    const std::string s = explain<host_policy>(e);
    CHECK_THAT(s, Catch::Contains("plan chosen at run time"));
    CHECK_THAT(s, Catch::Contains(n < 100000 ? "-> recompute" : "-> materialize"));
  }
}

TEST_CASE("overrides and other device models change plans, never values", "[host][plan]") {
  const std::size_t n = 4099;
  auto xs = ramp(n), zs = ramp(n + 7);
  zs.resize(n);
  auto x = host_view(xs.data(), n).with_id<X>();
  auto z = host_view(zs.data(), n).with_id<Z>();
  std::vector<float> ref(n), out(n);
  auto plain = relu(gelu(x * 2.0f + z)) * sigmoid(x);
  run(host_view(ref.data(), n), plain, unfused());

  auto forced = relu(materialize(gelu(x * 2.0f + z))) * sigmoid(x);
  CHECK(run(host_view(out.data(), n), forced, host()).kernels == 2);
  CHECK(same_bits(out, ref));
  CHECK_THAT(explain<host_policy>(forced), Catch::Contains("forced by fusor::materialize"));

  using tiny = for_model<host_policy, tiny_gpu>;
  const auto r = run(host_view(out.data(), n), plain, with_policy<tiny>(host()));
  CHECK(r.kernels >= 2);
  CHECK(same_bits(out, ref));
  CHECK_THAT(explain<tiny>(plain), Catch::Contains("register budget exceeded"));
}

TEST_CASE("to_dot draws one cluster per kernel", "[host][plan]") {
  float a[16] = {}, c[16] = {};
  auto x = host_view(a, 16).with_id<X>();
  auto z = host_view(c, 16).with_id<Z>();
  auto count = [](const std::string& s, const std::string& what) {
    std::size_t k = 0;
    for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++k;
    return k;
  };
  const std::string one = to_dot(relu(gelu(x * 2.0f + z)) * sigmoid(x));
  CHECK(count(one, "subgraph cluster_") == 1);
  CHECK(count(one, "[label=\"") == 6);  // ops: mul, add, gelu, relu, sigmoid, mul
  CHECK(one.rfind("digraph fusor {", 0) == 0);
  const std::string two = to_dot(relu(materialize(gelu(x * 2.0f + z))) * sigmoid(x));
  CHECK(count(two, "subgraph cluster_") == 2);
  CHECK_THAT(two, Catch::Contains("forced by fusor::materialize"));
  const std::string unf = to_dot<unfused_policy>(relu(gelu(x * 2.0f + z)) * sigmoid(x));
  CHECK(count(unf, "subgraph cluster_") == 6);
}
