// cumsum on the host executor (its packs policy and the device twin) against
// a sequential loop written here in the same type (NumPy's order: bitwise),
// fused with producers and consumers, and against the unfused executor.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cuda_fp16.h>

#include <cstdint>
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

/// Sequential cumsum of dense x [A, L, B] over the middle dim.
template <class T>
std::vector<T> ref_cumsum(const std::vector<T>& x, index_t A, index_t L, index_t B, bool exclusive, bool reverse) {
  std::vector<T> y(x.size());
  for (index_t a = 0; a < A; ++a)
    for (index_t b = 0; b < B; ++b) {
      T acc = T(0);
      for (index_t k = 0; k < L; ++k) {
        const index_t l = reverse ? L - 1 - k : k;
        const std::size_t i = std::size_t((a * L + l) * B + b);
        if (exclusive) y[i] = acc, acc = T(acc + x[i]);
        else acc = T(acc + x[i]), y[i] = acc;
      }
    }
  return y;
}
}  // namespace

TEST_CASE("cumsum over each axis, exclusive and reverse, host packs and device twin, bitwise", "[cumsum]") {
  const index_t A = 3, L = 1500, B = 2;
  const auto x = random_vec(std::size_t(A * L * B), 1);
  const auto xv = host_view(x.data(), A, L, B);
  auto twin = fusor::host();
  twin.row_engine = fusor::host_row_engine::device_twin;
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true}) {
      INFO("exclusive " << exclusive << ", reverse " << reverse);
      const auto want = ref_cumsum(x, A, L, B, exclusive, reverse);
      std::vector<float> h(x.size()), t(x.size()), u(x.size());
      const auto e = fusor::cumsum(xv, -2, exclusive, reverse);
      CHECK(fusor::run(host_view(h.data(), A, L, B), e, fusor::host()).kernels == 1);
      CHECK(fusor::run(host_view(t.data(), A, L, B), e, twin).kernels == 1);
      CHECK(fusor::run(host_view(u.data(), A, L, B), e, fusor::unfused()).kernels == 1);
      CHECK(h == want);
      CHECK(t == want);
      CHECK(u == want);
    }
  // the other axes: [A * L, B] rows of 2 over axis 1 and [A, L * B] columns over axis 0
  std::vector<float> y(x.size());
  fusor::run(host_view(y.data(), A * L, B), fusor::cumsum(host_view(x.data(), A * L, B), 1), fusor::host());
  CHECK(y == ref_cumsum(x, A * L, B, 1, false, false));
  fusor::run(host_view(y.data(), A, L * B), fusor::cumsum(host_view(x.data(), A, L * B), 0), fusor::host());
  CHECK(y == ref_cumsum(x, 1, A, L * B, false, false));
}

TEST_CASE("cumsum fuses its prologue and full-shape epilogue; int32 and half", "[cumsum]") {
  const index_t R = 4, L = 50;
  const auto x = random_vec(std::size_t(R * L), 2), w = random_vec(std::size_t(R * L), 3);
  const auto xv = host_view(x.data(), R, L), wv = host_view(w.data(), R, L);
  const auto e = fusor::cumsum(fusor::relu(xv) * 0.5f, 1) * wv + 1.0f;
  STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
  std::vector<float> fused(x.size()), unfused(x.size());
  CHECK(fusor::run(host_view(fused.data(), R, L), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(host_view(unfused.data(), R, L), e, fusor::unfused()).kernels == 5);
  CHECK(std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)) == 0);
  std::vector<std::int32_t> xi = {1, 2, 3, 4, 5, 6}, yi(6);
  fusor::run(host_view(yi.data(), 2, 3), fusor::cumsum(host_view(xi.data(), 2, 3), 1, true), fusor::host());
  CHECK(yi == std::vector<std::int32_t>{0, 1, 3, 0, 4, 9});
  std::vector<__half> h(100), hy(100);
  float acc = 0;
  for (int i = 0; i < 100; ++i) h[std::size_t(i)] = __float2half(0.01f * float(i));
  fusor::run(host_view(hy.data(), 100), fusor::cumsum(host_view(h.data(), 100), 0), fusor::host());
  for (int i = 0; i < 100; ++i) {
    acc += __half2float(h[std::size_t(i)]);  // fp32 accumulation, one rounding per output
    CHECK(__half2float(hy[std::size_t(i)]) == __half2float(__float2half(acc)));
  }
  CHECK_THROWS_WITH(fusor::shape_of(fusor::cumsum(xv, 2)), Catch::Contains("cumsum: axis 2 is out of range for rank 2"));
}
