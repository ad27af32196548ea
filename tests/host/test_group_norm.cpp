// group_norm on the host executor against a float64 reference written here
// (mean and biased variance of each (n, group) summed in double) and against
// the unfused executor.
//
// Tolerance: the kernel's statistics are fp32 (Welford mean and a correction
// pass over at most 420 elements per group here): the mean's and variance's
// relative errors are a few ulp, so each normalized element is within
// 1e-5 relative + 1e-5 absolute of the float64 value for |y| <= 10 (the
// tests' values); fused and unfused run the same kernel: bitwise equal.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {
using fusor::host_view;
using fusor::index_t;

std::vector<float> random_vec(std::size_t n, unsigned seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

/// Reference over dense x [N, C, S] (S = product of the spatial extents).
std::vector<double> ref_group_norm(const std::vector<float>& x, index_t N, index_t C, index_t S, index_t G,
                                   const std::vector<float>& scale, const std::vector<float>& bias, double eps) {
  std::vector<double> y(x.size());
  const index_t per = C / G * S;
  for (index_t n = 0; n < N; ++n)
    for (index_t g = 0; g < G; ++g) {
      const std::size_t base = std::size_t((n * C + g * (C / G)) * S);
      double m = 0, v = 0;
      for (index_t i = 0; i < per; ++i) m += x[base + std::size_t(i)];
      m /= double(per);
      for (index_t i = 0; i < per; ++i) v += (x[base + std::size_t(i)] - m) * (x[base + std::size_t(i)] - m);
      v /= double(per);
      for (index_t i = 0; i < per; ++i) {
        const index_t c = g * (C / G) + i / S;
        y[base + std::size_t(i)] = (x[base + std::size_t(i)] - m) / std::sqrt(v + eps) * scale[std::size_t(c)] + bias[std::size_t(c)];
      }
    }
  return y;
}
}  // namespace

TEST_CASE("group_norm against a float64 reference, every group count", "[group_norm]") {
  const index_t N = 2, C = 6, H = 5, W = 7;
  const auto x = random_vec(std::size_t(N * C * H * W), 1);
  const auto s = random_vec(std::size_t(C), 2), b = random_vec(std::size_t(C), 3);
  const auto xv = host_view(x.data(), N, C, H, W);
  for (index_t G : {1, 2, 3, 6}) {
    INFO("groups = " << G);
    const auto e = fusor::group_norm(xv, G, host_view(s.data(), C), host_view(b.data(), C), 1e-5f);
    STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
    std::vector<float> fused(x.size()), unfused(x.size());
    CHECK(fusor::run(host_view(fused.data(), N, C, H, W), e, fusor::host()).kernels == 1);
    CHECK(fusor::run(host_view(unfused.data(), N, C, H, W), e, fusor::unfused()).kernels == 1);
    CHECK(std::memcmp(fused.data(), unfused.data(), x.size() * sizeof(float)) == 0);
    const auto want = ref_group_norm(x, N, C, H * W, G, s, b, 1e-5);
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::abs(fused[i] - want[i]) <= 1e-5 + 1e-5 * std::abs(want[i]));
  }
  // groups = C is instance_norm (the same rows, in the same order): bitwise
  std::vector<float> gn(x.size()), in(x.size());
  fusor::run(host_view(gn.data(), N, C, H, W), fusor::group_norm(xv, C, host_view(s.data(), C), host_view(b.data(), C)),
             fusor::host());
  fusor::run(host_view(in.data(), N, C, H, W), fusor::instance_norm(xv, host_view(s.data(), C), host_view(b.data(), C)),
             fusor::host());
  CHECK(gn == in);
}

TEST_CASE("group_norm fuses its producers and consumers; ranks 3 and 5; strided, half, absent parameters", "[group_norm]") {
  const index_t N = 2, C = 8, H = 4, W = 6, G = 4;
  const auto x = random_vec(std::size_t(N * C * H * W), 11);
  const auto r = random_vec(x.size(), 12);
  const auto s = random_vec(std::size_t(C), 13), b = random_vec(std::size_t(C), 14);
  const auto xv = host_view(x.data(), N, C, H, W);
  const auto sv = host_view(s.data(), C), bv = host_view(b.data(), C);
  SECTION("silu(group_norm(x * 2 + 1)) + r: one kernel, bitwise the unfused values") {
    const auto e = fusor::silu(fusor::group_norm(xv * 2.0f + 1.0f, G, sv, bv)) + host_view(r.data(), N, C, H, W);
    STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
    std::vector<float> fused(x.size()), unfused(x.size());
    CHECK(fusor::run(host_view(fused.data(), N, C, H, W), e, fusor::host()).kernels == 1);
    CHECK(fusor::run(host_view(unfused.data(), N, C, H, W), e, fusor::unfused()).kernels == 5);
    CHECK(std::memcmp(fused.data(), unfused.data(), x.size() * sizeof(float)) == 0);
  }
  SECTION("conv2d -> group_norm -> silu (a diffusion U-Net block): 2 kernels") {
    const auto w = random_vec(std::size_t(C * C * 9), 15);
    const auto e = fusor::silu(fusor::group_norm(fusor::conv2d(xv, host_view(w.data(), C, C, index_t(3), index_t(3)),
                                                               {.padding = {1, 1, 1, 1}}),
                                                 G, sv, bv));
    std::vector<float> fused(x.size()), unfused(x.size());
    CHECK(fusor::run(host_view(fused.data(), N, C, H, W), e, fusor::host()).kernels == 2);
    fusor::run(host_view(unfused.data(), N, C, H, W), e, fusor::unfused());
    // (the conv's engine sums 72 products in its own order on each path)
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::abs(fused[i] - unfused[i]) <= 1e-4f);
  }
  SECTION("rank 3 [N, C, L] and rank 5 [N, C, D, H, W]") {
    std::vector<float> y3(x.size()), y5(x.size());
    fusor::run(host_view(y3.data(), N, C, H * W), fusor::group_norm(host_view(x.data(), N, C, H * W), G, sv, bv), fusor::host());
    fusor::run(host_view(y5.data(), N, C, 2, H / 2, W), fusor::group_norm(host_view(x.data(), N, C, 2, H / 2, W), G, sv, bv),
               fusor::host());
    const auto want = ref_group_norm(x, N, C, H * W, G, s, b, 1e-5);
    for (std::size_t i = 0; i < x.size(); ++i) {
      CHECK(std::abs(y3[i] - want[i]) <= 1e-5 + 1e-5 * std::abs(want[i]));
      CHECK(y5[i] == y3[i]);  // the same rows
    }
  }
  SECTION("a strided input (NHWC memory read as NCHW) and absent scale / bias") {
    std::vector<float> nhwc(x.size());
    for (index_t n = 0; n < N; ++n)
      for (index_t c = 0; c < C; ++c)
        for (index_t i = 0; i < H * W; ++i) nhwc[std::size_t((n * H * W + i) * C + c)] = x[std::size_t((n * C + c) * H * W + i)];
    const auto perm = fusor::permute(host_view(nhwc.data(), N, H, W, C), {0, 3, 1, 2});
    std::vector<float> a(x.size()), d(x.size());
    fusor::run(host_view(a.data(), N, C, H, W), fusor::group_norm(perm, G, nullptr, nullptr), fusor::host());
    fusor::run(host_view(d.data(), N, C, H, W), fusor::group_norm(xv, G, nullptr, nullptr), fusor::host());
    CHECK(a == d);  // the same elements in the same order
    const std::vector<float> ones(std::size_t(C), 1.0f), zeros(std::size_t(C), 0.0f);
    const auto want = ref_group_norm(x, N, C, H * W, G, ones, zeros, 1e-5);
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::abs(a[i] - want[i]) <= 1e-5 + 1e-5 * std::abs(want[i]));
  }
  SECTION("half: fp32 statistics, one rounding") {
    std::vector<__half> h(x.size()), hy(x.size());
    std::vector<float> hx(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) h[i] = __float2half(x[i]), hx[i] = __half2float(h[i]);
    fusor::run(host_view(hy.data(), N, C, H, W), fusor::group_norm(host_view(h.data(), N, C, H, W), G, sv, bv), fusor::host());
    const auto want = ref_group_norm(hx, N, C, H * W, G, s, b, 1e-5);
    // one f16 rounding of the result: 2^-11 relative, plus the fp32 error
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::abs(__half2float(hy[i]) - want[i]) <= 1e-4 + 1e-3 * std::abs(want[i]));
  }
}

TEST_CASE("group_norm: bad groups and parameters are shape errors, outputs untouched", "[group_norm][errors]") {
  std::vector<float> x(2 * 6 * 3 * 3, 1.0f), y(x.size(), -3.0f), s(6, 1.0f), s5(5, 1.0f);
  const auto xv = host_view(x.data(), 2, 6, 3, 3);
  const auto out = host_view(y.data(), 2, 6, 3, 3);
  CHECK_THROWS_WITH(fusor::run(out, fusor::group_norm(xv, 4, host_view(s.data(), 6), nullptr), fusor::host()),
                    Catch::Contains("group_norm: 4 groups do not divide the 6 channels"));
  CHECK_THROWS_WITH(fusor::run(out, fusor::group_norm(xv, 0, nullptr, nullptr), fusor::host()),
                    Catch::Contains("group_norm: 0 groups"));
  CHECK_THROWS_WITH(fusor::run(out, fusor::group_norm(xv, 3, host_view(s5.data(), 5), nullptr), fusor::host()),
                    Catch::Contains("group_norm: scale [5, 1, 1] is not per channel"));
  for (float v : y) CHECK(v == -3.0f);
  // no channels: nothing to normalize, no error (was a division by zero)
  std::vector<float> none(1);
  CHECK(fusor::run(host_view(none.data(), 1, 0, 4), fusor::group_norm(host_view(x.data(), 1, 0, 4), 2, nullptr, nullptr),
                   fusor::host()).kernels == 1);
}
