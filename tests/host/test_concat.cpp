// concat on the host executor: against np.concatenate's values written out
// here and a reference loop (every axis, three inputs, strided and
// broadcast inputs), fused with producers and consumers (bitwise the
// unfused values), f16 and int64, and its errors. The ONNX cases
// (tests/conformance/test_onnx_concat.cpp) check ONNX's own data.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cuda_fp16.h>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

namespace {
using fusor::host_view;
using fusor::index_t;

std::vector<float> random_vec(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}
}  // namespace

TEST_CASE("concat: np.concatenate's values, 1-D and 2-D, both axes", "[concat]") {
  std::vector<float> a = {1, 2, 3, 4}, b = {5, 6}, y(6);
  fusor::run(host_view(y.data(), 6), fusor::concat(0, host_view(a.data(), 4), host_view(b.data(), 2)), fusor::host());
  CHECK(y == std::vector<float>{1, 2, 3, 4, 5, 6});
  // [[1, 2], [3, 4]] with [[5], [6]] along axis 1 (-1): [[1, 2, 5], [3, 4, 6]]
  fusor::run(host_view(y.data(), 2, 3), fusor::concat(-1, host_view(a.data(), 2, 2), host_view(b.data(), 2, 1)), fusor::host());
  CHECK(y == std::vector<float>{1, 2, 5, 3, 4, 6});
  // along axis 0: [[1, 2], [3, 4], [5, 6]]
  fusor::run(host_view(y.data(), 3, 2), fusor::concat(0, host_view(a.data(), 2, 2), host_view(b.data(), 1, 2)), fusor::host());
  CHECK(y == std::vector<float>{1, 2, 3, 4, 5, 6});
  // one input: a copy
  fusor::run(host_view(y.data(), 2), fusor::concat(0, host_view(b.data(), 2)), fusor::host());
  CHECK((y[0] == 5 && y[1] == 6));
}

TEST_CASE("concat: three rank-3 inputs along every axis against a reference loop; strided and broadcast inputs", "[concat]") {
  const index_t A = 2, B = 3, C = 4;
  for (int axis = 0; axis < 3; ++axis) {
    CAPTURE(axis);
    index_t ext[3][3] = {{A, B, C}, {A, B, C}, {A, B, C}};
    ext[0][axis] = 1, ext[1][axis] = 3, ext[2][axis] = 2;
    std::vector<float> in[3];
    for (int k = 0; k < 3; ++k) in[k] = random_vec(std::size_t(ext[k][0] * ext[k][1] * ext[k][2]), unsigned(10 * axis + k));
    index_t out[3] = {A, B, C};
    out[axis] = 6;
    std::vector<float> want(std::size_t(out[0] * out[1] * out[2])), got(want.size(), -99.0f);
    for (index_t i = 0; i < out[0]; ++i)
      for (index_t j = 0; j < out[1]; ++j)
        for (index_t l = 0; l < out[2]; ++l) {
          index_t at[3] = {i, j, l};
          int k = 0;
          while (at[axis] >= ext[k][axis]) at[axis] -= ext[k++][axis];
          want[std::size_t((i * out[1] + j) * out[2] + l)] = in[k][std::size_t((at[0] * ext[k][1] + at[1]) * ext[k][2] + at[2])];
        }
    const auto v = [&](int k) { return host_view(in[k].data(), ext[k][0], ext[k][1], ext[k][2]); };
    const auto e = fusor::concat(axis, v(0), v(1), v(2));
    const auto s = fusor::shape_of(e);
    REQUIRE((s[0] == out[0] && s[1] == out[1] && s[2] == out[2]));
    CHECK(fusor::run(host_view(got.data(), out[0], out[1], out[2]), e, fusor::host()).kernels == 1);
    CHECK(got == want);
  }
  // a transposed view and a broadcast row (an expression of [2, 3]) concatenated along axis 0
  std::vector<float> m = {1, 2, 3, 4, 5, 6}, r = {10, 20, 30}, y(12);
  const auto mt = fusor::transpose(host_view(m.data(), 3, 2));  // [[1, 3, 5], [2, 4, 6]]
  std::vector<float> zero(6, 0.0f);
  fusor::run(host_view(y.data(), 4, 3), fusor::concat(0, mt, host_view(r.data(), 3) + host_view(zero.data(), 2, 3)), fusor::host());
  CHECK(y == std::vector<float>{1, 3, 5, 2, 4, 6, 10, 20, 30, 10, 20, 30});
}

TEST_CASE("concat fuses its producers and consumers; f16 and int64", "[concat]") {
  const index_t N = 2, C1 = 3, C2 = 5, H = 4, W = 6;
  const auto a = random_vec(std::size_t(N * C1 * H * W), 1), b = random_vec(std::size_t(N * C2 * H * W), 2);
  const auto s = random_vec(std::size_t(C2), 3);
  const auto av = host_view(a.data(), N, C1, H, W), bv = host_view(b.data(), N, C2, H, W);
  const auto sv = host_view(s.data(), C2, 1, 1);
  // a DenseNet / U-Net join: relu(concat(a * 2, b * s + 1)) - 0.5, one kernel, no joined buffer
  const auto e = fusor::relu(fusor::concat(1, av * 2.0f, bv * sv + 1.0f)) - 0.5f;
  STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
  std::vector<float> fused(std::size_t(N * (C1 + C2) * H * W)), unfused(fused.size());
  CHECK(fusor::run(host_view(fused.data(), N, C1 + C2, H, W), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(host_view(unfused.data(), N, C1 + C2, H, W), e, fusor::unfused()).kernels > 1);
  CHECK(std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)) == 0);
  CHECK(fused[0] == std::max(a[0] * 2.0f, 0.0f) - 0.5f);
  // f16 and int64 copy exactly
  std::vector<__half> h1(4), h2(2), hy(6);
  for (int i = 0; i < 4; ++i) h1[std::size_t(i)] = __float2half(0.3f * float(i));
  for (int i = 0; i < 2; ++i) h2[std::size_t(i)] = __float2half(-0.7f * float(i));
  fusor::run(host_view(hy.data(), 2, 3), fusor::concat(1, host_view(h1.data(), 2, 2), host_view(h2.data(), 2, 1)), fusor::host());
  CHECK(std::memcmp(&hy[0], &h1[0], 2 * sizeof(__half)) == 0);
  CHECK(std::memcmp(&hy[2], &h2[0], sizeof(__half)) == 0);
  std::vector<std::int64_t> i1 = {1, 2}, i2 = {3}, iy(3);
  fusor::run(host_view(iy.data(), 3), fusor::concat(0, host_view(i1.data(), 2), host_view(i2.data(), 1)), fusor::host());
  CHECK(iy == std::vector<std::int64_t>{1, 2, 3});
}

TEST_CASE("concat: mismatched extents and bad axes are errors naming concat; outputs untouched", "[concat][errors]") {
  std::vector<float> a(12, 1.0f), b(10, 2.0f), y(40, -7.0f);
  const auto av = host_view(a.data(), 3, 4), bv = host_view(b.data(), 2, 5);
  CHECK_THROWS_AS(fusor::concat(2, av, bv), fusor::argument_error);
  CHECK_THROWS_AS(fusor::concat(-3, av, bv), fusor::argument_error);
  CHECK_THROWS_WITH(fusor::run(host_view(y.data(), 5, 4), fusor::concat(0, av, bv), fusor::host()),
                    Catch::Contains("fusor: concat: inputs [3, 4], [2, 5] differ in dim 1"));
  CHECK_THROWS_AS(fusor::run(host_view(y.data(), 3, 5), fusor::concat(1, av, av), fusor::host()), fusor::shape_error);
  CHECK(y == std::vector<float>(40, -7.0f));
  // in place: the output is one of the inputs, read at other positions
  std::vector<float> z(8, 1.0f);
  const auto zv = host_view(z.data(), 8);
  CHECK_THROWS_AS(fusor::run(zv, fusor::concat(0, fusor::slice(zv, 0, 4, 8), fusor::slice(zv, 0, 0, 4)), fusor::host()),
                  fusor::argument_error);
}

// A tagged elementwise value read twice inside a row-family group was
// materialized as a group of the consumer's family (a compile error in
// exec/reduction.hpp); it is an elementwise kernel of its own now
// (plan/shared_producers.hpp), or recomputed where the model prefers.
TEST_CASE("concat and sum of a tagged elementwise value read twice", "[concat][tags]") {
  struct relu_x {};
  const auto x = random_vec(32, 7);
  const auto xv = host_view(x.data(), 4, 8);
  const auto t = fusor::tag<relu_x>(fusor::relu(xv));
  std::vector<float> fused(64), unfused(64);
  fusor::run(host_view(fused.data(), 4, 16), fusor::concat(1, t, t * 2.0f), fusor::host());
  fusor::run(host_view(unfused.data(), 4, 16), fusor::concat(1, t, t * 2.0f), fusor::unfused());
  CHECK(fused == unfused);
  CHECK(fused[8] == 2.0f * std::max(x[0], 0.0f));
  std::vector<float> s(4), su(4);
  fusor::run(host_view(s.data(), 4, 1), fusor::sum(t * t, {1}), fusor::host());
  fusor::run(host_view(su.data(), 4, 1), fusor::sum(t * t, {1}), fusor::unfused());
  for (int r = 0; r < 4; ++r) {
    double want = 0;
    for (int c = 0; c < 8; ++c) want += double(std::max(x[std::size_t(r * 8 + c)], 0.0f)) * std::max(x[std::size_t(r * 8 + c)], 0.0f);
    CHECK(s[std::size_t(r)] == Approx(want).epsilon(1e-6));  // fp32 sum of 8 terms: a few ulp
    CHECK(su[std::size_t(r)] == Approx(want).epsilon(1e-6));
  }
}

// Static extents that differ along the axis (review: the elementwise
// broadcast check refused them at compile time).
TEST_CASE("concat of views with static extents", "[concat]") {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10}, y(10);
  const auto e = fusor::concat(1, host_view(a.data(), fusor::extents<2, 3>{}), host_view(b.data(), fusor::extents<2, 2>{}));
  fusor::run(host_view(y.data(), 2, 5), e, fusor::host());
  CHECK(y == std::vector<float>{1, 2, 3, 7, 8, 4, 5, 6, 9, 10});
}
