// one_hot on the host executor: against a direct loop written here, fused
// with its consumers (label smoothing), integer results, and ONNX's rules
// for negative, out-of-range and fractional indices.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace {
using fusor::host_view;
using fusor::index_t;
}  // namespace

TEST_CASE("one_hot: every axis, negative and out-of-range indices, fractional floats", "[one_hot]") {
  std::vector<std::int64_t> ids = {0, 3, -1, 4, -5, 5, 2, -6};  // as [2, 4], depth 5
  const auto iv = host_view(ids.data(), 2, 4);
  const index_t depth = 5;
  for (int axis : {0, 1, 2, -1, -3}) {
    INFO("axis " << axis);
    const auto e = fusor::one_hot(iv, depth, axis);
    const auto s = fusor::shape_of(e);
    std::vector<float> y(std::size_t(s[0] * s[1] * s[2]), -7.0f), u(y.size(), -7.0f);
    CHECK(fusor::run(host_view(y.data(), s[0], s[1], s[2]), e, fusor::host()).kernels == 1);
    CHECK(fusor::run(host_view(u.data(), s[0], s[1], s[2]), e, fusor::unfused()).kernels == 1);
    CHECK(y == u);
    const int a = axis < 0 ? axis + 3 : axis;
    for (index_t i = 0; i < 2; ++i)
      for (index_t j = 0; j < 4; ++j)
        for (index_t d = 0; d < depth; ++d) {
          const std::int64_t k = ids[std::size_t(i * 4 + j)];
          const std::int64_t c = k < 0 ? k + depth : k;
          const float want = (c >= 0 && c < depth && c == d) ? 1.0f : 0.0f;
          index_t at[3];
          if (a == 0) at[0] = d, at[1] = i, at[2] = j;
          else if (a == 1) at[0] = i, at[1] = d, at[2] = j;
          else at[0] = i, at[1] = j, at[2] = d;
          CHECK(y[std::size_t((at[0] * s[1] + at[1]) * s[2] + at[2])] == want);
        }
  }
  // float indices: truncated toward zero; NaN and out-of-range give a row of off
  std::vector<float> fi = {1.9f, -0.5f, std::numeric_limits<float>::quiet_NaN(), 7.0f, -3.2f};
  std::vector<std::int32_t> yi(15, -1);
  fusor::run(host_view(yi.data(), 5, 3), fusor::one_hot<std::int32_t>(host_view(fi.data(), 5), 3, -1, -1, 9), fusor::host());
  CHECK(yi == std::vector<std::int32_t>{-1, 9, -1, /* -0.5 -> 0 */ 9, -1, -1, /* NaN */ -1, -1, -1, /* 7 */ -1, -1, -1,
                                        /* -3.2 -> -3 -> 0 */ 9, -1, -1});
}

TEST_CASE("one_hot fuses its consumers: label smoothing in one kernel", "[one_hot]") {
  const index_t N = 6, K = 10;
  std::vector<std::int32_t> labels = {0, 9, 3, 3, 7, 1};
  const auto lv = host_view(labels.data(), N);
  const float eps = 0.1f;
  const auto e = fusor::one_hot(lv, K) * (1.0f - eps) + eps / float(K);
  STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
  std::vector<float> fused(std::size_t(N * K)), unfused(fused.size());
  CHECK(fusor::run(host_view(fused.data(), N, K), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(host_view(unfused.data(), N, K), e, fusor::unfused()).kernels == 3);
  CHECK(std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)) == 0);
  for (index_t n = 0; n < N; ++n)
    for (index_t k = 0; k < K; ++k)
      CHECK(fused[std::size_t(n * K + k)] == (labels[std::size_t(n)] == k ? 1.0f : 0.0f) * (1.0f - eps) + eps / float(K));
  CHECK_THROWS_WITH(fusor::shape_of(fusor::one_hot(lv, 0)), Catch::Contains("one_hot: depth 0"));
  CHECK_THROWS_WITH(fusor::shape_of(fusor::one_hot(lv, 4, 2)), Catch::Contains("one_hot: axis 2 is out of range"));
}
