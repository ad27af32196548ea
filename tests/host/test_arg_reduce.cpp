// argmax / argmin on the host executor (its packs policy and the device
// twin, which splits rows over 32 or 256 lanes as the GPU does) against a
// reference written here (a scan of each row: first best, or last with
// select_last_index; the first NaN wins), and against the unfused executor.
// Indices are exact: every comparison is exact, so results must be equal.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {
using fusor::host_view;
using fusor::index_t;
using i64 = std::int64_t;

/// Reference over dense x [A, L, B] reducing the middle dim.
template <class T>
std::vector<i64> ref_arg(const std::vector<T>& x, index_t A, index_t L, index_t B, bool max, bool last) {
  std::vector<i64> y(std::size_t(A * B));
  for (index_t a = 0; a < A; ++a)
    for (index_t b = 0; b < B; ++b) {
      i64 best = -1;
      double bv = 0;
      bool bnan = false;
      for (index_t l = 0; l < L; ++l) {
        const double v = double(x[std::size_t((a * L + l) * B + b)]);
        const bool n = std::isnan(v);
        bool take = false;
        if (best < 0) take = true;
        else if (bnan) take = n && last;
        else if (n) take = true;
        else if (v == bv) take = last;
        else take = max ? v > bv : v < bv;
        if (take) best = l, bv = v, bnan = n;
      }
      y[std::size_t(a * B + b)] = best;
    }
  return y;
}
}  // namespace

TEST_CASE("argmax / argmin over every axis, ties, select_last_index, keepdims", "[arg_reduce]") {
  const index_t A = 3, L = 37, B = 5;
  std::mt19937 g(7);
  std::uniform_int_distribution<int> u(-4, 4);  // few values: many ties
  std::vector<float> x(std::size_t(A * L * B));
  for (auto& v : x) v = float(u(g));
  const auto xv = host_view(x.data(), A, L, B);
  auto twin = fusor::host();
  twin.row_engine = fusor::host_row_engine::device_twin;
  for (bool max : {true, false})
    for (bool last : {false, true}) {
      INFO("max " << max << ", last " << last);
      const auto want = ref_arg(x, A, L, B, max, last);
      std::vector<i64> h(want.size()), t(want.size()), n(want.size());
      const auto run = [&](auto& out, const auto& ex) {
        const auto o = host_view(out.data(), A, 1, B);
        return max ? fusor::run(o, fusor::argmax(xv, 1, true, last), ex).kernels
                   : fusor::run(o, fusor::argmin(xv, -2, true, last), ex).kernels;
      };
      CHECK(run(h, fusor::host()) == 1);
      CHECK(run(t, twin) == 1);
      CHECK(run(n, fusor::unfused()) == 1);
      CHECK(h == want);
      CHECK(t == want);
      CHECK(n == want);
    }
  // without keepdims, the other axes, and the ONNX default axis 0
  std::vector<i64> y0(std::size_t(L * B)), y2(std::size_t(A * L));
  fusor::run(host_view(y0.data(), L, B), fusor::argmax<2>(xv, 0, false), fusor::host());
  fusor::run(host_view(y2.data(), A, L), fusor::argmin<2>(xv, 2, false), fusor::host());
  for (index_t l = 0; l < L; ++l)
    for (index_t b = 0; b < B; ++b) {
      i64 best = 0;
      for (index_t a = 1; a < A; ++a)
        if (x[std::size_t((a * L + l) * B + b)] > x[std::size_t((best * L + l) * B + b)]) best = a;
      CHECK(y0[std::size_t(l * B + b)] == best);
    }
  for (index_t a = 0; a < A; ++a)
    for (index_t l = 0; l < L; ++l) {
      i64 best = 0;
      for (index_t b = 1; b < B; ++b)
        if (x[std::size_t((a * L + l) * B + b)] < x[std::size_t((a * L + l) * B + best)]) best = b;
      CHECK(y2[std::size_t(a * L + l)] == best);
    }
}

TEST_CASE("argmax: long rows on every lane split, NaN, infinities, integers, half", "[arg_reduce]") {
  SECTION("rows of 1 .. 5000 elements: packs, warp and block lanes agree with the scan") {
    auto twin = fusor::host();
    twin.row_engine = fusor::host_row_engine::device_twin;
    for (index_t L : {1, 2, 31, 33, 1024, 1025, 5000}) {
      INFO("L = " << L);
      std::vector<float> x(std::size_t(4 * L));
      std::mt19937 g(static_cast<unsigned>(L));
      std::uniform_real_distribution<float> u(-1, 1);
      for (auto& v : x) v = u(g);
      if (L > 3) x[std::size_t(L + L / 2)] = x[std::size_t(L + 1)] = 7.0f;  // a tie in row 1
      if (L > 3) x[std::size_t(2 * L + L - 1)] = std::numeric_limits<float>::quiet_NaN();  // NaN last in row 2
      const auto xv = host_view(x.data(), 4, L, 1);
      for (bool last : {false, true}) {
        const auto want = ref_arg(x, 4, L, 1, true, last);
        std::vector<i64> h(4, -1), t(4, -1);
        fusor::run(host_view(h.data(), 4, 1, 1), fusor::argmax(xv, 1, true, last), fusor::host());
        fusor::run(host_view(t.data(), 4, 1, 1), fusor::argmax(xv, 1, true, last), twin);
        CHECK(h == want);
        CHECK(t == want);
      }
    }
  }
  SECTION("NaN beats every number for argmin too; -inf and +inf") {
    const float inf = std::numeric_limits<float>::infinity(), qnan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> x = {3, -inf, qnan, 2, qnan, inf};
    std::vector<i64> y(1);
    fusor::run(host_view(y.data(), 1), fusor::argmin<1>(host_view(x.data(), 1, 6), 1, false), fusor::host());
    CHECK(y[0] == 2);
    fusor::run(host_view(y.data(), 1), fusor::argmax<1>(host_view(x.data(), 1, 6), 1, false, true), fusor::host());
    CHECK(y[0] == 4);
    std::vector<float> z = {3, -inf, 2, inf};
    fusor::run(host_view(y.data(), 1), fusor::argmin<1>(host_view(z.data(), 1, 4), 1, false), fusor::host());
    CHECK(y[0] == 1);
    fusor::run(host_view(y.data(), 1), fusor::argmax<1>(host_view(z.data(), 1, 4), 1, false), fusor::host());
    CHECK(y[0] == 3);
  }
  SECTION("int32 and half inputs; an int32 output view") {
    std::vector<std::int32_t> xi = {5, -7, 5, 9, 9, -7};
    std::vector<std::int32_t> yi(2);
    fusor::run(host_view(yi.data(), 2), fusor::argmax<1>(host_view(xi.data(), 2, 3), 1, false), fusor::host());
    CHECK(yi == std::vector<std::int32_t>{0, 0});
    fusor::run(host_view(yi.data(), 2), fusor::argmin<1>(host_view(xi.data(), 2, 3), 1, false, true), fusor::host());
    CHECK(yi == std::vector<std::int32_t>{1, 2});
    std::vector<__half> xh = {__float2half(0.1f), __float2half(0.3f), __float2half(0.2f)};
    std::vector<i64> yh(1);
    fusor::run(host_view(yh.data(), 1), fusor::argmax<1>(host_view(xh.data(), 1, 3), 1, false), fusor::host());
    CHECK(yh[0] == 1);
  }
}

TEST_CASE("argmax fuses its elementwise producers; a scalar epilogue stays in the kernel", "[arg_reduce]") {
  const index_t N = 6, K = 10;
  std::vector<float> logits(static_cast<std::size_t>(N * K)), bias(static_cast<std::size_t>(K));
  std::mt19937 g(3);
  std::uniform_real_distribution<float> u(-3, 3);
  for (auto& v : logits) v = u(g);
  for (auto& v : bias) v = u(g);
  const auto lv = host_view(logits.data(), N, K);
  const auto bv = host_view(bias.data(), K);
  // the predicted class of a linear layer's output plus a bias, as an index + 1 (1-based labels)
  const auto e = fusor::argmax<1>(lv * 0.5f + bv, -1, false) + std::int64_t(1);
  STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
  std::vector<i64> fused(static_cast<std::size_t>(N)), unfused(static_cast<std::size_t>(N));
  CHECK(fusor::run(host_view(fused.data(), N), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(host_view(unfused.data(), N), e, fusor::unfused()).kernels == 4);
  CHECK(fused == unfused);
  for (index_t n = 0; n < N; ++n) {
    i64 best = 0;
    for (index_t k = 1; k < K; ++k) {
      const float a = logits[std::size_t(n * K + k)] * 0.5f + bias[std::size_t(k)];
      const float b = logits[std::size_t(n * K + best)] * 0.5f + bias[std::size_t(best)];
      if (a > b) best = k;
    }
    CHECK(fused[std::size_t(n)] == best + 1);
  }
}

TEST_CASE("argmax: a bad axis or an empty axis is a shape_error naming argmax", "[arg_reduce][errors]") {
  std::vector<float> x(6);
  std::vector<i64> y(3, -5);
  CHECK_THROWS_WITH(fusor::run(host_view(y.data(), 3, 1), fusor::argmax(host_view(x.data(), 3, 2), 2), fusor::host()),
                    Catch::Contains("argmax: axis 2 is out of range for rank 2"));
  CHECK_THROWS_WITH(fusor::run(host_view(y.data(), 3, 1), fusor::argmin(host_view(x.data(), 3, 0), 1), fusor::host()),
                    Catch::Contains("argmin: the axis of x [3, 0] is empty"));
  for (i64 v : y) CHECK(v == -5);
}
