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
using namespace fusor::literals;

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

// The plan tree (pattern/plan_tree.hpp): every kind of plan node through
// every walker: explain, to_dot, kernel_count and run. Regressions of issue
// 16: to_dot of a recognised (guarded) softmax drew no node, and to_dot of
// attention over a multi-output Q/K/V GEMM (sibling_output) drew garbage ids.
namespace {
struct P;
struct Q;
struct Sx;
std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t k = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++k;
  return k;
}
// A DOT text whose edges name only nodes it declares, with `clusters` kernels.
void check_dot(const std::string& dot, std::size_t clusters) {
  INFO(dot);
  CHECK(count_of(dot, "subgraph cluster_") == clusters);
  CHECK(count_of(dot, "n-") == 0);
  const std::regex edge("n([0-9]+) -> n([0-9]+);");
  std::size_t edges = 0;
  for (auto it = std::sregex_iterator(dot.begin(), dot.end(), edge); it != std::sregex_iterator(); ++it, ++edges) {
    CHECK_THAT(dot, Catch::Contains("n" + (*it)[1].str() + " [") && Catch::Contains("n" + (*it)[2].str() + " ["));
  }
  CHECK(edges > 0);
}
}  // namespace

TEST_CASE("plan_kind_v names every plan-node kind", "[static][plan]") {
  using V = tensor_view<const float, dextents<1>>;
  using N = node<op::relu, V>;
  using G = group<rule::elementwise_chain, N>;
  using SG = sibling_group<rule::elementwise_chain, N, N>;
  STATIC_REQUIRE(plan_kind_v<V> == plan_kind::view);
  STATIC_REQUIRE(plan_kind_v<const V&> == plan_kind::view);
  STATIC_REQUIRE(plan_kind_v<scalar<float>> == plan_kind::scalar);
  STATIC_REQUIRE(plan_kind_v<constant<2.0>> == plan_kind::constant);
  STATIC_REQUIRE(plan_kind_v<N> == plan_kind::node);
  STATIC_REQUIRE(plan_kind_v<G> == plan_kind::group);
  STATIC_REQUIRE(plan_kind_v<SG> == plan_kind::sibling_group);
  STATIC_REQUIRE(plan_kind_v<sibling_output<1, SG>> == plan_kind::sibling_output);
  STATIC_REQUIRE(plan_kind_v<plan_sequence<G, V>> == plan_kind::sequence);
  STATIC_REQUIRE(plan_kind_v<runtime_choice<G, G>> == plan_kind::runtime_choice);
  STATIC_REQUIRE(plan_kind_v<guarded_plan<G, G>> == plan_kind::guarded);
  STATIC_REQUIRE(plan_kind_v<siblings_expr<N, V>> == plan_kind::roots);
  STATIC_REQUIRE(is_plan_leaf_v<V> && is_plan_leaf_v<scalar<float>> && is_plan_leaf_v<constant<2.0>> && !is_plan_leaf_v<N>);
  STATIC_REQUIRE(is_kernel_operand_v<G> && is_kernel_operand_v<sibling_output<0, SG>> && !is_kernel_operand_v<SG>);
  // A bare view written to an output is one copy kernel; so is each bare view
  // in a sequence of roots.
  STATIC_REQUIRE(kernel_count<V> == 1);
  STATIC_REQUIRE(plan_kind_v<plan_t<V>> == plan_kind::group);
}

TEST_CASE("every plan kind goes through explain, to_dot, kernel_count and run", "[host][plan]") {
  auto xs = ramp(24), ys = ramp(7);
  auto x = host_view(xs.data(), 4, 6).with_id<P>();
  auto y = host_view(ys.data(), 7).with_id<Q>();
  std::vector<float> o1(24, -1), o2(24, -1), o3(7, -1), ref(24, -2), ref3(7, -2);
  auto out = host_view(o1.data(), 4, 6);

  SECTION("view (a copy kernel) and a transposed view") {
    CHECK(run(out, x, host()).kernels == kernel_count<decltype(x)>);
    CHECK(same_bits(o1, xs));
    check_dot(to_dot(x + 0.0f), 1);
    CHECK_THAT(explain<host_policy>(x), Catch::Contains("kernel 1:"));
    auto t = host_view(o2.data(), 6, 4);
    CHECK(run(t, transpose(x), host()).kernels == 1);
    CHECK(o2[1] == xs[6]);
    CHECK_THAT(explain<host_policy>(transpose(x)), Catch::Contains("kernel 1:"));
  }
  SECTION("node, scalar and constant inside a group") {
    auto e = relu(x * 2.0f + 1.0_c);
    CHECK(run(out, e, host()).kernels == kernel_count<decltype(e)>);
    run(host_view(ref.data(), 4, 6), e, unfused());
    CHECK(same_bits(o1, ref));
    check_dot(to_dot(e), 1);
    const std::string s = explain<host_policy>(e);
    CHECK(count_of(s, "  kernel ") == 1);
  }
  SECTION("sibling group (one multi-output kernel) and a sequence (shapes differ)") {
    auto two = siblings(relu(x), sigmoid(x));
    using Two = decltype(two);
    STATIC_REQUIRE(plan_kind_v<plan_t<Two>> == plan_kind::sibling_group);
    CHECK(run(outputs(out, host_view(o2.data(), 4, 6)), two, host()).kernels == kernel_count<Two>);
    CHECK(kernel_count<Two> == 1);
    check_dot(to_dot(two), 1);
    CHECK_THAT(explain<host_policy>(two), Catch::Contains("horizontal, 2 outputs"));

    auto seq = siblings(relu(x), exp(y));
    using Seq = decltype(seq);
    STATIC_REQUIRE(plan_kind_v<plan_t<Seq>> == plan_kind::sequence);
    CHECK(run(outputs(out, host_view(o3.data(), 7)), seq, host()).kernels == kernel_count<Seq>);
    CHECK(kernel_count<Seq> == 2);
    run(host_view(ref3.data(), 7), exp(y), unfused());
    CHECK(same_bits(o3, ref3));
    check_dot(to_dot(seq), 2);
    CHECK(count_of(explain<host_policy>(seq), "  kernel ") == 2);
  }
  SECTION("runtime choice (dynamic extents, a shared producer)") {
    auto e = shared_use(x);
    STATIC_REQUIRE(plan_kind_v<plan_t<decltype(e), host_policy>> == plan_kind::runtime_choice);
    CHECK(run(out, e, host()).kernels == 1);  // (24 elements: recompute)
    CHECK(kernels_planned<host_policy>(e).per_run == 1);
    check_dot(to_dot<host_policy>(e), 1);
    CHECK_THAT(explain<host_policy>(e), Catch::Contains("-> recompute"));
  }
  SECTION("guarded plan: softmax written out (issue 16: to_dot drew no node)") {
    auto m = max_reduce(x, {1});
    auto e = exp(x - m) / sum(exp(x - m), {1});
    STATIC_REQUIRE(plan_kind_v<plan_t<decltype(e)>> == plan_kind::guarded);
    CHECK(kernel_count<decltype(e)> == 1);
    CHECK(run(out, e, host()).kernels == kernel_count<decltype(e)>);
    run(host_view(ref.data(), 4, 6), softmax(x, 1), unfused());
    for (std::size_t i = 0; i < ref.size(); ++i) CHECK(o1[i] == Approx(ref[i]).epsilon(1e-6));  // (stated: a few ulps)
    const std::string dot = to_dot(e);
    check_dot(dot, 1);
    CHECK_THAT(dot, Catch::Contains("softmax"));
    CHECK_THAT(explain<host_policy>(e), Catch::Contains("decomposed normalizations: recognised"));
  }
  SECTION("sibling output: attention over three linears of one input (issue 16: garbage ids)") {
    std::vector<float> xa = ramp(32), w = ramp(3 * 64), oa(32, -1), ra(32, -2);
    for (auto& v : w) v *= 0.1f;
    auto xi = host_view(xa.data(), 1, 4, 8).with_id<Sx>();
    // three weights of one view type (one W for all three would be one
    // value, shared by value: one GEMM, recognize/shared_by_value.hpp)
    auto W = host_view(w.data(), 8, 8), Wk = host_view(w.data() + 64, 8, 8), Wv = host_view(w.data() + 128, 8, 8);
    attention_params p;
    p.heads = 2;
    auto e = scaled_dot_product_attention(linear(xi, W), linear(xi, Wk), linear(xi, Wv), p);
    CHECK(kernel_count<decltype(e)> == 2);
    CHECK(run(host_view(oa.data(), 1, 4, 8), e, host()).kernels == kernel_count<decltype(e)>);
    CHECK(kernels_planned<host_policy>(e).per_run == 2);
    run(host_view(ra.data(), 1, 4, 8), e, unfused());
    for (std::size_t i = 0; i < ra.size(); ++i) CHECK(oa[i] == Approx(ra[i]).epsilon(1e-5).margin(1e-6));
    const std::string dot = to_dot(e);
    check_dot(dot, 2);
    CHECK_THAT(dot, Catch::Contains("horizontal, 3 outputs"));
    CHECK(count_of(explain(e), "  kernel ") == 2);

    // Untagged views of one type that are different tensors at run time: the
    // multi-output GEMM runs as three GEMMs (its launcher says so).
    std::vector<float> xb = ramp(32);
    auto u = host_view(xa.data(), 1, 4, 8);
    auto v = host_view(xb.data(), 1, 4, 8);
    auto cross = scaled_dot_product_attention(linear(u, W), linear(v, W), linear(v, W), p);
    CHECK(kernel_count<decltype(cross)> == 2);
    CHECK(kernels_planned(cross).per_run == 4);
    CHECK(run(host_view(oa.data(), 1, 4, 8), cross, host()).kernels == 4);
    // The decision is a plan node (plan_guard::shared_projection_input):
    // explain shows the check and the three launches.
    const std::string sc = explain<host_policy>(cross);
    CHECK_THAT(sc, Catch::Contains("check: projections (Q/K/V, sibling linears): their inputs differ at run time"));
    CHECK_THAT(sc, Catch::Contains("one GEMM per projection, 3 launches"));
    CHECK_THAT(sc, Catch::Contains("-> 4 fused"));
    CHECK_THAT(explain<host_policy>(e), Catch::Contains("check: projections (Q/K/V, sibling linears): one input at run time"));
    check_dot(to_dot(cross), 2);
  }
}

// Issue 16, item 9: contraction, convolution and attention groups carry
// their work (cost/shaped_estimate.hpp), not "1 FLOP/elem".
TEST_CASE("explain prices GEMMs, convolutions and attention at their shapes", "[host][plan][cost]") {
  std::vector<float> a(64 * 128), w(256 * 128);
  auto x = host_view(a.data(), 64, 128);
  auto W = host_view(w.data(), 256, 128);
  // relu(linear(x, W)): 2K = 256 FLOPs per output element, + 1 for relu.
  const std::string gemm = explain(relu(linear(x, W)));
  CHECK_THAT(gemm, Catch::Contains("257 FLOP/elem"));
  // Bytes: x, W and the output once each, per output element:
  // (64*128 + 256*128 + 64*256) * 4 / (64*256) = 14.
  CHECK_THAT(gemm, Catch::Contains("14 B/elem"));
  const auto e = relu(linear(x, W));
  const auto planned = plan<fused_policy>(canonicalize(e));
  const cost::estimate est = cost::plan_estimate_at(fused_policy::model, planned, 64.0 * 256);
  CHECK(est.flops == Approx(64.0 * 256 * 257));
  CHECK(est.launches == 1);

  // conv2d 3x3, C = 8 -> 16, groups 2: 2 * (8 / 2) * 3 * 3 = 72 FLOPs per output element (+ relu).
  std::vector<float> xi(1 * 8 * 10 * 10), wk(16 * 4 * 3 * 3);
  auto img = host_view(xi.data(), 1, 8, 10, 10);
  auto wt = host_view(wk.data(), 16, 4, 3, 3);
  const conv2d_params cp{.padding = {1, 1, 1, 1}, .groups = 2};
  CHECK_THAT(explain(relu(conv2d(img, wt, nullptr, cp))), Catch::Contains("73 FLOP/elem"));

  // attention [B, H, S, D] = [1, 2, 16, 8]: 4 S_kv = 64 FLOPs per output element; causal half.
  std::vector<float> qs(1 * 2 * 16 * 8);
  auto q = host_view(qs.data(), 1, 2, 16, 8);
  attention_params p;
  CHECK_THAT(explain(scaled_dot_product_attention(q, q, q, p)), Catch::Contains(" 64 FLOP/elem"));
  p.causal = true;
  CHECK_THAT(explain(scaled_dot_product_attention(q, q, q, p)), Catch::Contains(" 32 FLOP/elem"));
}

// Issue 16, item 2: planned == launched. An epilogue that broadcasts its
// producer's result up to a larger shape used to be split by the launcher at
// run time (kernel_count 1, run 2); the plan now holds both forms behind the
// run-time shape check (a guarded plan), and explain, to_dot and
// kernels_planned follow the branch taken.
TEST_CASE("planned == launched: a broadcast-up epilogue is a guarded plan", "[host][plan]") {
  std::vector<float> xs = ramp(40), ws = ramp(64), rs = ramp(40), o(40, -1), ref(40, -2);
  auto W = host_view(ws.data(), 8, 8);
  auto r = host_view(rs.data(), 5, 8);
  auto out = host_view(o.data(), 5, 8);

  SECTION("contraction: linear(x[1, 8], W) + r[5, 8] broadcasts the GEMM's rows") {
    auto x = host_view(xs.data(), 1, 8);
    auto e = linear(x, W) + r;
    using E = decltype(e);
    STATIC_REQUIRE(plan_kind_v<plan_t<E, host_policy>> == plan_kind::guarded);
    STATIC_REQUIRE(kernel_count<E, host_policy> == 1);  // (the fused branch)
    const auto k = kernels_planned<host_policy>(e);
    CHECK(k.per_run == 2);
    CHECK(run(out, e, host()).kernels == k.per_run);
    run(host_view(ref.data(), 5, 8), e, unfused());
    CHECK(same_bits(o, ref));
    const std::string s = explain<host_policy>(e);
    CHECK_THAT(s, Catch::Contains("check: the epilogue broadcasts"));
    CHECK(count_of(s, "  kernel ") == 2);
    check_dot(to_dot<host_policy>(e), 2);

    // The same expression at equal shapes: one kernel.
    auto x5 = host_view(xs.data(), 5, 8);
    auto e5 = linear(x5, W) + r;
    CHECK(kernels_planned<host_policy>(e5).per_run == 1);
    CHECK(run(out, e5, host()).kernels == 1);
    run(host_view(ref.data(), 5, 8), e5, unfused());
    CHECK(same_bits(o, ref));
    CHECK_THAT(explain<host_policy>(e5), Catch::Contains("check: epilogue at the producer's shape"));
  }
  SECTION("contraction: a rank-growing epilogue is split at compile time") {
    auto x = host_view(xs.data(), 5, 8);
    std::vector<float> r3s = ramp(80), o3(80, -1), ref3(80, -2);
    auto r3 = host_view(r3s.data(), 2, 5, 8);
    auto e = linear(x, W) + r3;
    STATIC_REQUIRE(kernel_count<decltype(e), host_policy> == 2);
    CHECK(run(host_view(o3.data(), 2, 5, 8), e, host()).kernels == 2);
    run(host_view(ref3.data(), 2, 5, 8), e, unfused());
    CHECK(same_bits(o3, ref3));
  }
  SECTION("reduction: few very long rows are split (partials, then a finalize)") {
    // kernels::row_chunks decides from the run-time shape and axes; the plan
    // holds both forms (plan_guard::whole_rows), the split one a group of
    // rule::split_rows (two launches).
    const std::int64_t n = 4 * kernels::reduce_chunk_min;
    std::vector<float> big = ramp(std::size_t(2 * n)), o2(2, -1), r2(2, -2);
    auto xl = host_view(big.data(), 2, n);
    auto e = sqrt(sum<1>(xl, {1}, false) + 1.0f);
    STATIC_REQUIRE(plan_kind_v<plan_t<decltype(e), host_policy>> == plan_kind::guarded);
    STATIC_REQUIRE(kernel_count<decltype(e), host_policy> == 1);  // (the whole-rows branch)
    const auto k = kernels_planned<host_policy>(e);
    CHECK(k.per_run == 2);
    CHECK(run(host_view(o2.data(), 2), e, host()).kernels == 2);
    CHECK(run(host_view(r2.data(), 2), e, unfused()).kernels == 4);  // split sum (2), add, sqrt
    CHECK(same_bits(o2, r2));
    const std::string s = explain<host_policy>(e);
    CHECK_THAT(s, Catch::Contains("check: reduction rows: few, very long rows"));
    CHECK_THAT(s, Catch::Contains("split rows: partials, then a finalize, 2 launches"));
    CHECK_THAT(s, Catch::Contains("kernels:     4 unfused -> 2 fused"));
    check_dot(to_dot<host_policy>(e), 1);
    // Many short rows of the same tensor: one kernel.
    auto xs8 = host_view(big.data(), 2 * n / 8, 8);
    std::vector<float> o8(std::size_t(2 * n / 8));
    auto e8 = sum<1>(xs8, {1}, false);
    CHECK(kernels_planned<host_policy>(e8).per_run == 1);
    CHECK(run(host_view(o8.data(), 2 * n / 8), e8, host()).kernels == 1);
    CHECK_THAT(explain<host_policy>(e8), Catch::Contains("check: reduction rows: enough rows"));
  }
  SECTION("reduction: layer_norm(x[1, 8]) + r[5, 8]") {
    auto x = host_view(xs.data(), 1, 8);
    auto e = layer_norm(x, nullptr, nullptr, -1) + r;
    const auto k = kernels_planned<host_policy>(e);
    CHECK(run(out, e, host()).kernels == k.per_run);
    CHECK(k.per_run == 2);
    run(host_view(ref.data(), 5, 8), e, unfused());
    CHECK(same_bits(o, ref));
    CHECK_THAT(explain<host_policy>(e), Catch::Contains("check: the epilogue broadcasts"));
  }
}
