// layer_norm_mean / layer_norm_inv_std_dev (ONNX LayerNormalization's Mean
// and InvStdDev): against float64 formulas written here, bitwise equal to
// the statistics layer_norm normalizes with (y = (x - mean) * inv per
// element), fused with a prologue, f16 inputs (fp32 results), and errors.
//
// Tolerance vs float64: the mean within 1e-6 relative to mean |x| and the
// inverse deviation within 1e-5 relative (fp32 Welford mean plus a
// correction pass: a few ulp for rows of a few hundred elements).
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cuda_fp16.h>

#include <cmath>
#include <random>
#include <vector>

namespace {
using fusor::host_view;
using fusor::index_t;
}  // namespace

TEST_CASE("layer_norm_mean and layer_norm_inv_std_dev: float64 formulas, layer_norm's own statistics", "[layer_norm]") {
  const index_t A = 3, B = 5, C = 67;
  std::mt19937 g(3);
  std::normal_distribution<float> nd(2.0f, 3.0f);
  std::vector<float> x(std::size_t(A * B * C));
  for (auto& v : x) v = nd(g);
  const auto xv = host_view(x.data(), A, B, C);
  const float eps = 1e-3f;
  for (const int axis : {1, 2, -1}) {
    CAPTURE(axis);
    const int a = axis < 0 ? axis + 3 : axis;
    const index_t rows = a == 1 ? A : A * B, len = A * B * C / rows;
    std::vector<float> mean(static_cast<std::size_t>(rows)), inv(static_cast<std::size_t>(rows)), y(x.size());
    const auto stat = [&](std::vector<float>& v) { return a == 1 ? host_view(v.data(), A, 1, 1) : host_view(v.data(), A, B, 1); };
    CHECK(fusor::run(stat(mean), fusor::layer_norm_mean(xv, axis), fusor::host()).kernels == 1);
    CHECK(fusor::run(stat(inv), fusor::layer_norm_inv_std_dev(xv, axis, eps), fusor::host()).kernels == 1);
    fusor::run(host_view(y.data(), A, B, C), fusor::layer_norm(xv, nullptr, nullptr, axis, eps), fusor::host());
    for (index_t r = 0; r < rows; ++r) {
      double s = 0, sa = 0, q = 0;
      for (index_t j = 0; j < len; ++j) s += x[std::size_t(r * len + j)], sa += std::abs(x[std::size_t(r * len + j)]);
      const double m = s / double(len);
      for (index_t j = 0; j < len; ++j) q += (x[std::size_t(r * len + j)] - m) * (x[std::size_t(r * len + j)] - m);
      const double iv = 1.0 / std::sqrt(q / double(len) + double(eps));
      CHECK(std::abs(mean[std::size_t(r)] - m) <= 1e-6 * sa / double(len));
      CHECK(std::abs(inv[std::size_t(r)] - iv) <= 1e-5 * iv);
      // layer_norm's output is (x - mean) * inv with exactly these statistics
      for (index_t j = 0; j < len; ++j) {
        const float want = (x[std::size_t(r * len + j)] - mean[std::size_t(r)]) * inv[std::size_t(r)];
        CHECK(y[std::size_t(r * len + j)] == want);
      }
    }
  }
}

TEST_CASE("layer_norm statistics: a fused prologue, f16 inputs, siblings, errors", "[layer_norm]") {
  std::vector<float> x = {1, 2, 3, 4, -1, -2, -3, -4};
  const auto xv = host_view(x.data(), 2, 4);
  std::vector<float> m(2), mu(2);
  const auto e = fusor::layer_norm_mean(fusor::relu(xv) * 2.0f, -1) + 1.0f;
  STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
  CHECK(fusor::run(host_view(m.data(), 2, 1), e, fusor::host()).kernels == 1);
  fusor::run(host_view(mu.data(), 2, 1), e, fusor::unfused());
  CHECK(m == std::vector<float>{6.0f, 1.0f});
  CHECK(mu == m);
  // f16 input: fp32 statistics (ONNX's stash_type float)
  std::vector<__half> h(8);
  for (std::size_t i = 0; i < 8; ++i) h[i] = __float2half(x[i]);
  STATIC_REQUIRE(std::is_same_v<fusor::value_t<decltype(fusor::layer_norm_mean(host_view(h.data(), 2, 4)))>, float>);
  std::vector<float> hm(2);
  fusor::run(host_view(hm.data(), 2, 1), fusor::layer_norm_mean(host_view(h.data(), 2, 4)), fusor::host());
  CHECK(hm == std::vector<float>{2.5f, -2.5f});
  // all three ONNX outputs at once: three kernels
  std::vector<float> y(8), mean(2), inv(2);
  const auto r = fusor::run(fusor::outputs(host_view(y.data(), 2, 4), host_view(mean.data(), 2, 1), host_view(inv.data(), 2, 1)),
                            fusor::siblings(fusor::layer_norm(xv, nullptr, nullptr), fusor::layer_norm_mean(xv),
                                            fusor::layer_norm_inv_std_dev(xv)),
                            fusor::host());
  CHECK(r.kernels == 3);
  CHECK(mean == std::vector<float>{2.5f, -2.5f});
  CHECK(y[0] == (1.0f - 2.5f) * inv[0]);
  // an axis out of range: a shape_error naming the op; the output untouched
  std::vector<float> out(2, -7.0f);
  CHECK_THROWS_WITH(fusor::run(host_view(out.data(), 2, 1), fusor::layer_norm_inv_std_dev(xv, 2), fusor::host()),
                    Catch::Contains("fusor: layer_norm_inv_std_dev:"));
  CHECK(out == std::vector<float>(2, -7.0f));
}
