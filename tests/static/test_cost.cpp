// Compile-time tests of the cost model and the decisions it drives: device
// models, estimates, register/parameter budgets, shared producers, user
// overrides, and plans that differ between device models.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

using namespace fusor;

namespace {
struct X;
struct Z;
using xv = tensor_view<float, dextents<1>, host_space, X>;
using zv = tensor_view<float, dextents<1>, host_space, Z>;
template <std::size_t N>
using xs = tensor_view<float, extents<N>, host_space, X>;  // static extents
xv x{};
zv z{};

// A GPU with a tiny register file per thread, to exercise the budget.
struct tiny_gpu {
  static constexpr device_model model{"tiny GPU", true, 1, 65536, 30, 2048, 32, 0, 1e6, 1e12, 0.9, 1e13, 1e14,
                                      3e-6, 1e-6, 4096};
};
// A GPU with a tiny kernel parameter space.
struct few_params_gpu {
  static constexpr device_model model{"few-params GPU", true, 1, 65536, 255, 2048, 32, 0, 1e6, 1e12, 0.9, 1e13, 1e14,
                                      3e-6, 1e-6, 150};
};
using tiny = for_model<fused_policy, tiny_gpu>;
using few_params = for_model<fused_policy, few_params_gpu>;

// An expensive producer used three times.
template <class V>
auto heavy(const V& v) {
  return gelu(tanh(gelu(v)));
}
template <class V>
auto shared_use(const V& v) {
  auto g = heavy(v);
  return g * g + sqrt(g);
}
}  // namespace

TEST_CASE("device models carry their datasheet numbers", "[static][cost]") {
  STATIC_REQUIRE(models::h100_sxm::model.sm_count == 132);
  STATIC_REQUIRE(models::h200::model.hbm_bytes_per_s == 4.8e12);
  STATIC_REQUIRE(models::a100::model.sm_count == 108);
  STATIC_REQUIRE(!models::generic_cpu::model.gpu);
}

TEST_CASE("group estimates count distinct inputs once and follow the formula", "[static][cost]") {
  using E = decltype(relu(x * 2.0f + z) * x);  // x used twice, tagged: read once
  constexpr cost::element_stats s = cost::group_stats<canonical_t<E>>();
  STATIC_REQUIRE(s.sources == 2);
  STATIC_REQUIRE(s.bytes_read == 8.0);
  STATIC_REQUIRE(s.bytes_written == 4.0);
  STATIC_REQUIRE(s.nodes == 4);
  constexpr auto& m = models::h100_sxm::model;
  constexpr double n = 1 << 24;
  constexpr cost::estimate e = cost::group_estimate<canonical_t<E>>(m, n);
  STATIC_REQUIRE(e.bytes == 12.0 * n);
  // launch + t_mem + t_comp - 0.95 min(t_mem, t_comp); here memory-bound
  constexpr double t_mem = 12.0 * n / (m.hbm_bytes_per_s * m.hbm_efficiency);
  constexpr double t_comp = e.flops / m.fp32_flops;
  STATIC_REQUIRE(e.seconds - (m.launch_seconds + t_mem + 0.05 * t_comp) < 1e-12);
  // Fused beats unfused: fewer bytes and launches.
  STATIC_REQUIRE(cost::plan_estimate<plan_t<E>>(m, n).seconds < cost::plan_estimate<plan_t<E, unfused_policy>>(m, n).seconds);
  STATIC_REQUIRE(cost::plan_estimate<plan_t<E, unfused_policy>>(m, n).launches == 4);
}

TEST_CASE("register budget: the model refuses a group too big for a thread", "[static][cost]") {
  using E = decltype(exp(tanh(exp(tanh(x)))) + exp(tanh(exp(tanh(z)))));
  STATIC_REQUIRE(kernel_count<E> == 1);                // H100: fits in 255 registers
  // 16 + 2 per source + 2 per live value: each chain keeps 5 values live
  // (one operand + 4 of transcendental scratch), the sum 6: 32 registers.
  STATIC_REQUIRE(cost::register_estimate(cost::group_stats<canonical_t<E>>()) == 32);
  STATIC_REQUIRE(kernel_count<E, tiny> >= 2);          // 30 registers: split
  STATIC_REQUIRE(group_rule_t<kernel_t<0, plan_t<E, tiny>>>::why == reason::register_budget);
  // fusor::fuse overrides the budget.
  using F = decltype(fuse(exp(tanh(exp(tanh(x))))) + fuse(exp(tanh(exp(tanh(z))))));
  STATIC_REQUIRE(kernel_count<F, tiny> == 1);
}

namespace {
template <int N, class X>
auto long_chain(const X& e) {
  if constexpr (N == 0) return e;
  else return long_chain<N - 1>(tanh(exp(e) * x + z));
}
}  // namespace

TEST_CASE("register budget: values die when consumed, so a chain of any length fits", "[static][cost]") {
  // Sethi-Ullman: a chain needs the registers of one step, a balanced tree of
  // n leaves log2(n) more values. Counting ops instead split a 64-op chain
  // into 22 kernels on the H100 model (compile_bench's chain shape).
  using C8 = decltype(long_chain<2>(x));
  using C128 = decltype(long_chain<32>(x));
  STATIC_REQUIRE(cost::detail::live_v<canonical_t<C8>> == cost::detail::live_v<canonical_t<C128>>);
  STATIC_REQUIRE(kernel_count<C128> == 1);
  using T4 = decltype((x + z) * (x - z));
  using T8 = decltype(((x + z) * (x - z)) + ((x * z) - (z / x)));
  STATIC_REQUIRE(cost::detail::live_v<canonical_t<T4>> == 3);
  STATIC_REQUIRE(cost::detail::live_v<canonical_t<T8>> == 4);
}

TEST_CASE("parameter budget: too many operands split the group", "[static][cost]") {
  struct A; struct B; struct C; struct D;
  using a = tensor_view<float, dextents<1>, host_space, A>;
  using b = tensor_view<float, dextents<1>, host_space, B>;
  using c = tensor_view<float, dextents<1>, host_space, C>;
  using d = tensor_view<float, dextents<1>, host_space, D>;
  using E = decltype((a{} + b{}) * (c{} + d{}) + (x + z));
  STATIC_REQUIRE(kernel_count<E> == 1);
  STATIC_REQUIRE(kernel_count<E, few_params> >= 2);
}

TEST_CASE("shared producer: recompute for small static sizes, materialize for large", "[static][cost]") {
  using small = decltype(shared_use(std::declval<xs<64>>()));
  using large = decltype(shared_use(std::declval<xs<(1u << 26)>>()));
  using cpu = host_policy;
  STATIC_REQUIRE(kernel_count<small, cpu> == 1);  // launch overhead dominates: recompute
  STATIC_REQUIRE(kernel_count<large, cpu> == 2);  // recomputing ~34 FLOP/elem twice more costs more than 8 B/elem
  STATIC_REQUIRE(group_rule_t<kernel_t<0, plan_t<large, cpu>>>::why == reason::materialize_shared);
  // Dynamic extents: the choice is left to run time.
  STATIC_REQUIRE(plan_is_dynamic_v<decltype(shared_use(x)), cpu>);
  STATIC_REQUIRE(!plan_is_dynamic_v<large, cpu>);
}

TEST_CASE("the same expression plans differently on different device models", "[static][cost]") {
  // 2^20 elements: on the host CPU (96 GFLOP/s vs 20 GB/s) recomputing the
  // shared producer costs more than a round trip through memory; on an H100
  // (67 TFLOP/s vs 3.35 TB/s, and 3 us per extra launch) recomputing wins.
  using E = decltype(shared_use(std::declval<xs<(1u << 20)>>()));
  STATIC_REQUIRE(kernel_count<E, host_policy> == 2);
  STATIC_REQUIRE(kernel_count<E, fused_policy> == 1);
}

TEST_CASE("fusor::materialize forces a kernel boundary, with its reason", "[static][cost]") {
  using E = decltype(relu(materialize(gelu(x * 2.0f + z))) * sigmoid(x));
  STATIC_REQUIRE(kernel_count<E> == 2);
  STATIC_REQUIRE(group_rule_t<kernel_t<0, plan_t<E>>>::why == reason::forced_materialize);
  STATIC_REQUIRE(std::is_same_v<group_rule_t<kernel_t<1, plan_t<E>>>, rule::elementwise_chain>);
}

TEST_CASE("a reduction broadcast back into a tensor consumer is refused with its reason", "[static][cost]") {
  // A sum over an axis combined with a tensor is (usually) broadcast back:
  // each reduced value would be recomputed for many consumer elements, so
  // the sum keeps a kernel of its own, with the relu on it as its epilogue
  // (computed once per sum, not once per consumer element: issue 18).
  using V = tensor_view<float, dextents<2>, host_space, X>;
  using E = decltype(relu(sum(V{}, {1}, true)) * V{});
  STATIC_REQUIRE(kernel_count<E> == 2);
  STATIC_REQUIRE(group_rule_t<kernel_t<0, plan_t<E>>>::why == reason::producer_epilogue);
  STATIC_REQUIRE(std::is_base_of_v<rule::reduction, group_rule_t<kernel_t<0, plan_t<E>>>>);
  STATIC_REQUIRE(std::is_same_v<group_rule_t<kernel_t<1, plan_t<E>>>, rule::elementwise_chain>);
  // The bare sum feeding the tensor consumer: split as an expensive producer.
  using G = decltype(sum(V{}, {1}, true) * V{});
  STATIC_REQUIRE(kernel_count<G> == 2);
  STATIC_REQUIRE(group_rule_t<kernel_t<0, plan_t<G>>>::why == reason::expensive_producer);
  // Scalar work on the reduced value is its epilogue: one kernel.
  using F = decltype(relu(sum(V{}, {1}, true)) * 2.0f);
  STATIC_REQUIRE(kernel_count<F> == 1);
  STATIC_REQUIRE(std::is_same_v<root_rule_t<F>, rule::reduction>);
}
