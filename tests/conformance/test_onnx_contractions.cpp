// ONNX conformance of the contraction family and its companions: every case
// of Gemm, MatMul, Conv, BatchNormalization, GlobalAveragePool and
// InstanceNormalization in
// tests/data/onnx (index.json), on host() (fused) and unfused(), compared as
// numpy.isclose(rtol, atol of the case, equal_nan) like the other drivers.
//
//  - Gemm: attributes alpha, beta, transA, transB; C absent, a 0-d tensor
//    (run both as a rank-0 view and as a C++ scalar), [N], [1, N] or [M, N].
//  - MatMul: operands at their own ranks (2, 3 or 4 here, broadcast batch
//    dims); a 1-D operand unsqueezed as NumPy promotes it.
//  - Conv: kernel_shape (checked against W), pads (ONNX order {x1_begin,
//    x2_begin, x1_end, x2_end} = fusor's {top, left, bottom, right}),
//    strides, dilations, group; auto_pad (NOTSET, SAME_UPPER, SAME_LOWER,
//    VALID: conv2d_params::auto_pad). NCHW.
//  - BatchNormalization (inference, training_mode 0): fusor::batch_norm.
//  - GlobalAveragePool: fusor::mean over axes {2, 3}, keepdims -> [N, C, 1, 1].
//  - InstanceNormalization: fusor::instance_norm(x, scale, bias, epsilon).
//    (Planned as a WARN-skip while instance_norm was missing; it landed in
//    975aac5, so the cases run. test_onnx_reductions.cpp runs them too.)
// Each run must launch exactly one kernel on host() and on unfused() (each of
// these ops is one op; Gemm's C and Conv's bias are part of the op).
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/npy.hpp"
#include "support/onnx_case.hpp"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {
namespace ft = fusor::testing;
using i64 = std::int64_t;

bool close(double got, double want, double rtol, double atol) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}

template <int R>
auto view(std::vector<float>& v, const std::vector<i64>& s) {
  if (s.size() != std::size_t(R)) throw std::runtime_error("rank " + std::to_string(s.size()) + ", expected " + std::to_string(R));
  return [&]<std::size_t... D>(std::index_sequence<D...>) { return fusor::host_view(v.data(), s[D]...); }(std::make_index_sequence<std::size_t(R)>{});
}

void expect_attributes(const ft::onnx_node& n, std::initializer_list<const char*> known) {
  for (const auto& [key, v] : n.attributes.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) FAIL("attribute " << key << " = " << v.dump() << " not handled");
  }
}

const std::vector<std::string> op_types = {"Gemm", "MatMul", "Conv", "BatchNormalization", "GlobalAveragePool",
                                           "InstanceNormalization"};

void run_case(const std::string& name) {
  const ft::onnx_case c = ft::load_onnx_case(ft::onnx_data_dir() / name);
  const ft::onnx_node& n = c.node();
  INFO("case " << name << ", op " << n.op_type << ", attributes " << n.attributes.dump() << ", opset " << c.opset);
  const std::string& op = n.op_type;
  for (int k = 0; k < c.data_sets; ++k) {
    auto named = c.named_inputs(k);
    auto input = [&](std::size_t i) -> const ft::npy_array* {
      if (i >= n.inputs.size() || n.inputs[i].empty()) return nullptr;
      const ft::npy_array& a = named.at(n.inputs[i]);
      REQUIRE(a.dtype == ft::npy_dtype::f32);
      return &a;
    };
    std::vector<std::vector<float>> vals;  // input values (stable addresses: reserved)
    vals.reserve(n.inputs.size());
    std::vector<std::vector<i64>> shapes;
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const ft::npy_array* a = input(i);
      vals.push_back(a ? a->as<float>() : std::vector<float>{});
      shapes.push_back(a ? a->shape : std::vector<i64>{});
    }
    const ft::npy_array want_a = c.set_outputs(k).at(0);
    REQUIRE(want_a.dtype == ft::npy_dtype::f32);
    const std::vector<float> want = want_a.as<float>();
    const std::vector<i64>& os = want_a.shape;

    std::size_t variants = 0;
    // Runs e into shape s (rank R; the expected output's elements in the
    // same order) on both executors and compares.
    auto check_in = [&]<int R>(std::integral_constant<int, R>, const std::vector<i64>& s, const auto& e,
                               const char* variant) {
      ++variants;
      INFO("variant: " << variant);
      std::vector<float> got_h(want.size(), std::numeric_limits<float>::quiet_NaN()), got_u = got_h;
      const auto rh = fusor::run(view<R>(got_h, s), e, fusor::host());
      const auto ru = fusor::run(view<R>(got_u, s), e, fusor::unfused());
      CHECK(rh.kernels == 1);
      CHECK(ru.kernels == 1);
      std::size_t bad_h = 0, bad_u = 0;
      for (std::size_t i = 0; i < want.size(); ++i) {
        if (!close(got_h[i], want[i], c.rtol, c.atol) && bad_h++ < 3)
          UNSCOPED_INFO("host() at " << i << ": got " << got_h[i] << ", want " << want[i]);
        if (!close(got_u[i], want[i], c.rtol, c.atol) && bad_u++ < 3)
          UNSCOPED_INFO("unfused() at " << i << ": got " << got_u[i] << ", want " << want[i]);
      }
      CHECK(bad_h == 0);
      CHECK(bad_u == 0);
    };
    // ... into the expected output's shape.
    auto check = [&]<int R>(std::integral_constant<int, R> r, const auto& e, const char* variant) {
      check_in(r, os, e, variant);
    };
    constexpr std::integral_constant<int, 2> r2{};
    constexpr std::integral_constant<int, 3> r3{};
    constexpr std::integral_constant<int, 4> r4{};

    if (op == "Gemm") {
      expect_attributes(n, {"alpha", "beta", "transA", "transB"});
      const fusor::gemm_params p{n.attr_f("alpha", 1.0f), n.attr_f("beta", 1.0f), n.attr_i("transA", 0) != 0,
                                 n.attr_i("transB", 0) != 0};
      const auto A = view<2>(vals[0], shapes[0]);
      const auto B = view<2>(vals[1], shapes[1]);
      if (!input(2)) {
        check(r2, fusor::gemm(A, B, nullptr, p), "no C");
      } else {
        switch (shapes[2].size()) {
          case 0:
            check(r2, fusor::gemm(A, B, fusor::host_view(vals[2].data()), p), "C: rank-0 view");
            check(r2, fusor::gemm(A, B, vals[2][0], p), "C: scalar");
            break;
          case 1: check(r2, fusor::gemm(A, B, view<1>(vals[2], shapes[2]), p), "C: rank 1"); break;
          case 2: check(r2, fusor::gemm(A, B, view<2>(vals[2], shapes[2]), p), "C: rank 2"); break;
          default: FAIL("C of rank " << shapes[2].size());
        }
      }
    } else if (op == "MatMul") {
      expect_attributes(n, {});
      const std::size_t ra = shapes[0].size(), rb = shapes[1].size();
      if (ra == 2 && rb == 2) check(r2, fusor::matmul(view<2>(vals[0], shapes[0]), view<2>(vals[1], shapes[1])), "2 x 2");
      else if (ra == 3 && rb == 3) check(r3, fusor::matmul(view<3>(vals[0], shapes[0]), view<3>(vals[1], shapes[1])), "3 x 3");
      else if (ra == 4 && rb == 4) check(r4, fusor::matmul(view<4>(vals[0], shapes[0]), view<4>(vals[1], shapes[1])), "4 x 4");
      // 1-D operands (fusor::matmul takes ranks >= 2): as NumPy promotes
      // them, unsqueezed views ([K] -> [1, K] on the left, [K, 1] on the
      // right), the result computed at the promoted rank; its elements are
      // the expected output's (whose promoted dims ONNX drops).
      else if (ra == 1 && rb == 3)
        check_in(r3, {shapes[1][0], 1, shapes[1][2]},
                 fusor::matmul(fusor::unsqueeze(view<1>(vals[0], shapes[0]), 0), view<3>(vals[1], shapes[1])), "1-D x 3");
      else if (ra == 4 && rb == 1)
        check_in(r4, {shapes[0][0], shapes[0][1], shapes[0][2], 1},
                 fusor::matmul(view<4>(vals[0], shapes[0]), fusor::unsqueeze(view<1>(vals[1], shapes[1]), 1)), "4 x 1-D");
      else if (ra == 1 && rb == 1)
        check_in(r2, {1, 1},
                 fusor::matmul(fusor::unsqueeze(view<1>(vals[0], shapes[0]), 0),
                               fusor::unsqueeze(view<1>(vals[1], shapes[1]), 1)), "1-D x 1-D");
      else FAIL("MatMul of ranks " << ra << " x " << rb << " not handled");
    } else if (op == "Conv") {
      expect_attributes(n, {"kernel_shape", "pads", "strides", "dilations", "group", "auto_pad"});
      const std::string mode = n.attr_s("auto_pad", "NOTSET");
      const auto ks = n.attr_ints("kernel_shape", {shapes[1].at(2), shapes[1].at(3)});
      REQUIRE(ks == std::vector<i64>{shapes[1].at(2), shapes[1].at(3)});
      const auto pads = n.attr_ints("pads", {0, 0, 0, 0}), strides = n.attr_ints("strides", {1, 1}),
                 dil = n.attr_ints("dilations", {1, 1});
      REQUIRE(pads.size() == 4);
      fusor::conv2d_params p;
      for (int d = 0; d < 2; ++d) p.stride[d] = strides.at(std::size_t(d)), p.dilation[d] = dil.at(std::size_t(d));
      for (int d = 0; d < 4; ++d) p.padding[d] = pads[std::size_t(d)];
      p.groups = n.attr_i("group", 1);
      if (mode == "SAME_UPPER") p.auto_pad = fusor::auto_pad_mode::same_upper;
      else if (mode == "SAME_LOWER") p.auto_pad = fusor::auto_pad_mode::same_lower;
      else if (mode == "VALID") p.auto_pad = fusor::auto_pad_mode::valid;
      else REQUIRE(mode == "NOTSET");
      const auto X = view<4>(vals[0], shapes[0]);
      const auto W = view<4>(vals[1], shapes[1]);
      if (input(2)) check(r4, fusor::conv2d(X, W, view<1>(vals[2], shapes[2]), p), "bias");
      else check(r4, fusor::conv2d(X, W, nullptr, p), "no bias");
    } else if (op == "BatchNormalization") {
      expect_attributes(n, {"epsilon", "momentum", "training_mode"});
      REQUIRE(n.attr_i("training_mode", 0) == 0);
      REQUIRE(shapes[0].size() == 4);
      const fusor::batch_norm_params bn{view<1>(vals[1], shapes[1]), view<1>(vals[2], shapes[2]), view<1>(vals[3], shapes[3]),
                                        view<1>(vals[4], shapes[4])};
      check(r4, fusor::batch_norm(view<4>(vals[0], shapes[0]), bn, n.attr_f("epsilon", 1e-5f)), "NCHW");
    } else if (op == "InstanceNormalization") {
      expect_attributes(n, {"epsilon"});
      REQUIRE(shapes[0].size() == 4);
      check(r4, fusor::instance_norm(view<4>(vals[0], shapes[0]), view<1>(vals[1], shapes[1]), view<1>(vals[2], shapes[2]),
                                     n.attr_f("epsilon", 1e-5f)),
            "NCHW");
    } else if (op == "GlobalAveragePool") {
      expect_attributes(n, {});
      check(r4, fusor::mean(view<4>(vals[0], shapes[0]), {2, 3}), "mean over {2, 3}");
    } else {
      FAIL("op " << op << " not mapped");
    }
    CHECK(variants >= 1);
  }
}
}  // namespace

TEST_CASE("ONNX Gemm, MatMul, Conv, BatchNormalization, GlobalAveragePool, InstanceNormalization on host() and unfused()",
          "[conformance][onnx][contraction]") {
  std::size_t count = 0;
  for (const auto& t : op_types) {
    const auto names = ft::onnx_cases_of({t});
    CHECK(!names.empty());
    for (const auto& name : names) {
      ++count;
      DYNAMIC_SECTION(name) { run_case(name); }
    }
  }
  // index.json today: 11 Gemm + 7 MatMul + 6 Conv + 2 BatchNormalization + 2 GlobalAveragePool
  // + 2 InstanceNormalization.
  CHECK(count == 11 + 7 + 6 + 2 + 2 + 2);
}
