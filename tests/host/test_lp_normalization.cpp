// lp_normalization (ONNX LpNormalization): values against a float64
// reference, zero / NaN / Inf rows as ONNX's reference (x / norm, 0 where
// the norm is 0), both axes, p = 1 and 2, the plan (the norm once).
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {
constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float qnan = std::numeric_limits<float>::quiet_NaN();

// y[i, j] = x[i, j] / ||x[i, :]||_p (axis 1) or / ||x[:, j]||_p (axis 0), 0 where the norm is 0
std::vector<double> reference(const std::vector<float>& x, int rows, int cols, int axis, int p) {
  std::vector<double> y(x.size());
  const int outer = axis == 1 ? rows : cols, inner = axis == 1 ? cols : rows;
  for (int o = 0; o < outer; ++o) {
    auto at = [&](int k) { return axis == 1 ? o * cols + k : k * cols + o; };
    double n = 0;
    for (int k = 0; k < inner; ++k) n += p == 1 ? std::abs(double(x[at(k)])) : double(x[at(k)]) * x[at(k)];
    if (p == 2) n = std::sqrt(n);
    for (int k = 0; k < inner; ++k) y[at(k)] = n == 0 ? 0.0 : x[at(k)] / n;
  }
  return y;
}
}  // namespace

TEST_CASE("lp_normalization: p = 1 and 2 over either axis, zero / NaN / Inf rows as ONNX", "[reduction][lp_normalization]") {
  const int rows = 5, cols = 7;
  std::vector<float> x(rows * cols);
  for (int i = 0; i < rows * cols; ++i) x[i] = float(std::sin(0.7 * i) * 3);
  for (int j = 0; j < cols; ++j) x[cols + j] = 0.0f;  // row 1: zeros -> 0, not NaN
  x[2 * cols + 3] = qnan;                               // row 2: NaN everywhere
  x[3 * cols + 1] = inf;                               // row 3: 0 and NaN (Inf / Inf)
  const auto v = fusor::host_view(x.data(), rows, cols);
  for (int axis : {0, 1}) {
    for (int p : {1, 2}) {
      INFO("axis " << axis << ", p " << p);
      std::vector<float> got(x.size(), -7.0f), un(x.size(), -7.0f);
      auto run = [&](const auto& e) {
        const auto r = fusor::run(fusor::host_view(got.data(), rows, cols), e, fusor::host());
        const auto u = fusor::run(fusor::host_view(un.data(), rows, cols), e, fusor::unfused());
        CHECK(r.kernels == 2);  // the norm (computed once), then the division
        CHECK(u.kernels == 5);
      };
      if (p == 1) run(fusor::lp_normalization<1>(v, axis));
      else run(fusor::lp_normalization(v, axis - 2));  // p = 2 by default; a negative axis
      const auto want = reference(x, rows, cols, axis, p);
      for (std::size_t i = 0; i < x.size(); ++i) {
        INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
        if (std::isnan(want[i])) CHECK(std::isnan(got[i]));
        else CHECK(std::abs(got[i] - want[i]) <= 1e-6 * std::abs(want[i]));  // 8 f32 ulp: the norm sums up to 7 terms in f32
        CHECK(std::memcmp(&got[i], &un[i], sizeof(float)) == 0);  // fused == unfused
      }
    }
  }
}

TEST_CASE("lp_normalization: an axis out of range is an argument_error naming the op, before anything runs", "[reduction][lp_normalization]") {
  std::vector<float> x(12, 1.0f);
  const auto v = fusor::host_view(x.data(), 4, 3);
  for (int axis : {2, -3, 100}) {
    INFO("axis " << axis);
    try {
      (void)fusor::lp_normalization(v, axis);
      FAIL("no error");
    } catch (const fusor::argument_error& e) {
      CHECK(std::string(e.what()).find("fusor: lp_normalization: axis " + std::to_string(axis)) == 0);
    }
  }
}
