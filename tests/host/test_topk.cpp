// topk / topk_indices on the host executor: against a stable sort written
// here (ONNX's order: by value, ties by the lower index, NaN above +inf),
// both directions, every axis, fused with producers and consumers
// (bitwise the unfused values), integers, and errors. The ONNX cases
// (tests/conformance/test_onnx_topk.cpp) check ONNX's own data.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace {
using fusor::host_view;
using fusor::index_t;
using i64 = std::int64_t;

/// ONNX's order over one row: std::stable_sort of the indices by value
/// (NaN ranked above every number), descending for largest.
std::vector<i64> order(const std::vector<float>& row, bool largest) {
  std::vector<i64> ix(row.size());
  std::iota(ix.begin(), ix.end(), 0);
  const auto rank = [&](i64 i) { return std::isnan(row[std::size_t(i)]) ? INFINITY : row[std::size_t(i)]; };
  std::stable_sort(ix.begin(), ix.end(), [&](i64 a, i64 b) {
    const bool na = std::isnan(row[std::size_t(a)]), nb = std::isnan(row[std::size_t(b)]);
    if (na != nb) return largest ? na : nb;  // NaN first among the largest, last among the smallest
    if (na) return false;
    return largest ? rank(a) > rank(b) : rank(a) < rank(b);
  });
  return ix;
}
}  // namespace

TEST_CASE("topk and topk_indices follow ONNX's order along every axis, with ties, NaN and infinities", "[topk]") {
  const index_t A = 3, B = 7, C = 4;
  std::mt19937 g(5);
  std::uniform_int_distribution<int> small(-3, 3);  // many ties
  std::vector<float> x(std::size_t(A * B * C));
  for (auto& v : x) v = float(small(g)) * 0.5f;
  x[2] = NAN, x[9] = INFINITY, x[17] = -INFINITY, x[40] = NAN, x[41] = NAN;
  const index_t ext[3] = {A, B, C};
  for (int axis = 0; axis < 3; ++axis)
    for (const bool largest : {true, false}) {
      const index_t k = ext[axis] - 1;
      CAPTURE(axis, largest, k);
      index_t oe[3] = {A, B, C};
      oe[axis] = k;
      std::vector<float> vals(std::size_t(oe[0] * oe[1] * oe[2]), -99.0f);
      std::vector<i64> idx(vals.size(), -99);
      const auto xv = host_view(x.data(), A, B, C);
      const auto r = fusor::run(fusor::outputs(host_view(vals.data(), oe[0], oe[1], oe[2]), host_view(idx.data(), oe[0], oe[1], oe[2])),
                                fusor::siblings(fusor::topk(xv, k, axis, largest), fusor::topk_indices(xv, k, axis - 3, largest)),
                                fusor::host());
      CHECK(r.kernels == 2);
      // every row along the axis
      for (index_t p = 0; p < A * B * C / ext[axis]; ++p) {
        index_t at[3] = {0, 0, 0};
        index_t q = p;
        for (int d = 2; d >= 0; --d)
          if (d != axis) at[d] = q % ext[d], q /= ext[d];
        std::vector<float> row(std::size_t(ext[axis]));
        for (index_t i = 0; i < ext[axis]; ++i) {
          index_t s[3] = {at[0], at[1], at[2]};
          s[axis] = i;
          row[std::size_t(i)] = x[std::size_t((s[0] * B + s[1]) * C + s[2])];
        }
        const auto want = order(row, largest);
        for (index_t j = 0; j < k; ++j) {
          index_t o[3] = {at[0], at[1], at[2]};
          o[axis] = j;
          const std::size_t oi = std::size_t((o[0] * oe[1] + o[1]) * oe[2] + o[2]);
          CHECK(idx[oi] == want[std::size_t(j)]);
          const float w = row[std::size_t(want[std::size_t(j)])];
          CHECK(((std::isnan(w) && std::isnan(vals[oi])) || vals[oi] == w));
        }
      }
    }
}

TEST_CASE("topk fuses its producer and consumer; integers; k = 0; errors", "[topk]") {
  std::vector<float> x = {1, -5, 3, 2, 0, -1, 4, 4};  // [2, 4]
  const auto xv = host_view(x.data(), 2, 4);
  // softmax-style scores: top-2 of relu(x) * 2, then + 1
  const auto e = fusor::topk(fusor::relu(xv) * 2.0f, 2) + 1.0f;
  STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
  std::vector<float> y(4), yu(4);
  CHECK(fusor::run(host_view(y.data(), 2, 2), e, fusor::host()).kernels == 1);
  fusor::run(host_view(yu.data(), 2, 2), e, fusor::unfused());
  CHECK(y == std::vector<float>{7, 5, 9, 9});
  CHECK(yu == y);
  // int32, smallest, ties by index
  std::vector<std::int32_t> iv = {3, 1, 1, 2}, iy(3);
  std::vector<i64> ii(3);
  fusor::run(host_view(iy.data(), 3), fusor::topk(host_view(iv.data(), 4), 3, 0, false), fusor::host());
  fusor::run(host_view(ii.data(), 3), fusor::topk_indices(host_view(iv.data(), 4), 3, 0, false), fusor::host());
  CHECK(iy == std::vector<std::int32_t>{1, 1, 2});
  CHECK(ii == std::vector<i64>{1, 2, 3});
  // k = 0: an empty result
  CHECK(fusor::shape_of(fusor::topk(xv, 0))[1] == 0);
  // k past the axis: a shape_error naming topk; outputs untouched
  std::vector<float> out(10, -7.0f);
  CHECK_THROWS_WITH(fusor::run(host_view(out.data(), 2, 5), fusor::topk(xv, 5), fusor::host()),
                    Catch::Contains("fusor: topk: k = 5 for x [2, 4] (want 0 <= k <= 4"));
  CHECK_THROWS_AS(fusor::run(host_view(out.data(), 2, 2), fusor::topk_indices(xv, 2, 2), fusor::host()), fusor::shape_error);
  CHECK(out == std::vector<float>(10, -7.0f));
}
