// gather and embedding on the host executor against a direct loop written
// here (NumPy take semantics), and against the unfused executor. Gathering
// copies values: results must be equal, bit for bit.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {
using fusor::host_view;
using fusor::index_t;
using i64 = std::int64_t;

std::vector<float> random_vec(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}
}  // namespace

TEST_CASE("gather along every axis of a rank-3 tensor, 2-D and negative indices", "[gather]") {
  const index_t A = 4, B = 5, C = 3;
  const auto x = random_vec(std::size_t(A * B * C), 1);
  const auto xv = host_view(x.data(), A, B, C);
  const std::vector<i64> idx = {2, -1, 0, 1, 1, -4};  // as [2, 3]
  const index_t ext[3] = {A, B, C};
  for (int axis = 0; axis < 3; ++axis) {
    INFO("axis " << axis);
    std::vector<i64> id = idx;
    for (auto& i : id) i = i < 0 ? std::max<i64>(i, -ext[axis]) : i % ext[axis];  // in range for this axis
    const auto iv = host_view(id.data(), 2, 3);
    const auto e = fusor::gather(xv, iv, axis);
    STATIC_REQUIRE(fusor::rank_v<decltype(e)> == 4);
    const auto s = fusor::shape_of(e);
    const std::size_t n = std::size_t(s[0] * s[1] * s[2] * s[3]);
    std::vector<float> fused(n), unfused(n);
    CHECK(fusor::run(host_view(fused.data(), s[0], s[1], s[2], s[3]), e, fusor::host()).kernels == 1);
    CHECK(fusor::run(host_view(unfused.data(), s[0], s[1], s[2], s[3]), e, fusor::unfused()).kernels == 1);
    CHECK(std::memcmp(fused.data(), unfused.data(), n * sizeof(float)) == 0);
    // the reference: out[..., j0, j1, ...] = x[..., id[j0, j1], ...]
    std::size_t o = 0;
    for (index_t a = 0; a < s[0]; ++a)
      for (index_t b = 0; b < s[1]; ++b)
        for (index_t c = 0; c < s[2]; ++c)
          for (index_t d = 0; d < s[3]; ++d, ++o) {
            index_t p[3];
            if (axis == 0) p[0] = id[std::size_t(a * 3 + b)], p[1] = c, p[2] = d;
            else if (axis == 1) p[0] = a, p[1] = id[std::size_t(b * 3 + c)], p[2] = d;
            else p[0] = a, p[1] = b, p[2] = id[std::size_t(c * 3 + d)];
            for (int k = 0; k < 3; ++k) p[k] = p[k] < 0 ? p[k] + ext[k] : p[k];
            CHECK(fused[o] == x[std::size_t((p[0] * B + p[1]) * C + p[2])]);
          }
  }
}

TEST_CASE("embedding lookups fuse with their consumers and index producers", "[gather]") {
  const index_t V = 50, D = 16, Bt = 2, S = 7;
  const auto w = random_vec(std::size_t(V * D), 11), pos = random_vec(std::size_t(S * D), 12);
  std::vector<std::int32_t> ids(std::size_t(Bt * S));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::int32_t((i * 17 + 3) % std::size_t(V));
  const auto wv = host_view(w.data(), V, D);
  const auto iv = host_view(ids.data(), Bt, S);
  const auto pv = host_view(pos.data(), S, D);
  // token embedding * sqrt(D) + positional embedding (BERT / the original Transformer): one kernel
  const auto e = fusor::embedding(iv, wv) * 4.0f + pv;
  STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
  std::vector<float> fused(std::size_t(Bt * S * D)), unfused(fused.size());
  CHECK(fusor::run(host_view(fused.data(), Bt, S, D), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(host_view(unfused.data(), Bt, S, D), e, fusor::unfused()).kernels == 3);
  CHECK(std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)) == 0);
  for (index_t b = 0; b < Bt; ++b)
    for (index_t s = 0; s < S; ++s)
      for (index_t d = 0; d < D; ++d)
        CHECK(fused[std::size_t((b * S + s) * D + d)] ==
              w[std::size_t(ids[std::size_t(b * S + s)] * D + d)] * 4.0f + pos[std::size_t(s * D + d)]);
  // an index producer (ids shifted by one vocabulary slot) and a data producer (relu(W)) are computed while loading
  const auto shifted = fusor::gather(fusor::relu(wv), iv + std::int32_t(1), 0);
  std::vector<float> y(fused.size());
  CHECK(fusor::run(host_view(y.data(), Bt, S, D), shifted, fusor::host()).kernels == 1);
  for (index_t i = 0; i < Bt * S; ++i)
    for (index_t d = 0; d < D; ++d)
      CHECK(y[std::size_t(i * D + d)] == std::max(0.0f, w[std::size_t((ids[std::size_t(i)] + 1) * D + d)]));
  // a layer_norm after the lookup (BERT's embedding block): the gather, then the norm with its epilogue
  std::vector<float> g(std::size_t(D), 1.5f), bb(std::size_t(D), 0.25f), ln(fused.size()), lnu(fused.size());
  const auto block = fusor::layer_norm(fusor::embedding(iv, wv) + pv, host_view(g.data(), D), host_view(bb.data(), D));
  CHECK(fusor::run(host_view(ln.data(), Bt, S, D), block, fusor::host()).kernels == 2);
  fusor::run(host_view(lnu.data(), Bt, S, D), block, fusor::unfused());
  CHECK(std::memcmp(ln.data(), lnu.data(), ln.size() * sizeof(float)) == 0);
}

TEST_CASE("gather: a scalar-shaped index, strided data, int64 data", "[gather]") {
  std::vector<i64> data = {10, 11, 12, 13, 14, 15};
  std::vector<i64> one = {-2};
  std::vector<i64> y(2);
  // data [3, 2] transposed to [2, 3] (strided), gather column -2 of each row with a [1] index: [2, 1]
  const auto dv = fusor::transpose(host_view(data.data(), 3, 2));
  fusor::run(host_view(y.data(), 2, 1), fusor::gather(dv, host_view(one.data(), 1), 1), fusor::host());
  CHECK(y == std::vector<i64>{12, 13});  // [[10, 12, 14], [11, 13, 15]][:, 1]
}

TEST_CASE("gather: an index out of range is an argument_error before anything is written", "[gather][errors]") {
  const auto w = random_vec(20, 3);
  std::vector<i64> ids = {0, 4, 5};
  std::vector<float> y(12, -3.0f);
  const auto e = fusor::embedding(host_view(ids.data(), 3), host_view(w.data(), 5, 4));
  CHECK_THROWS_WITH(fusor::run(host_view(y.data(), 3, 4), e, fusor::host()),
                    Catch::Contains("gather: index 5 at [2] of indices is out of range for axis 0 of data [5, 4] (want -5 .. 4)"));
  ids[2] = -6;
  CHECK_THROWS_WITH(fusor::run(host_view(y.data(), 3, 4), e, fusor::host()), Catch::Contains("gather: index -6 at [2]"));
  for (float v : y) CHECK(v == -3.0f);
  CHECK_THROWS_WITH(fusor::shape_of(fusor::gather(host_view(w.data(), 5, 4), host_view(ids.data(), 3), 2)),
                    Catch::Contains("gather: axis 2 is out of range for data of rank 2"));
  // an empty output still checks its indices (data [5, 0]: NumPy's take refuses index 9 too) ...
  std::vector<i64> far = {9, -100};
  std::vector<float> empty(1);
  CHECK_THROWS_WITH(fusor::run(host_view(empty.data(), 2, 0), fusor::gather(host_view(w.data(), 5, 0), host_view(far.data(), 2), 0),
                               fusor::host()),
                    Catch::Contains("gather: index 9 at [0]"));
  // ... and an empty axis with no index is fine: [0, 3]
  std::vector<i64> no_ids(1);
  const auto e0 = fusor::gather(host_view(w.data(), 0, 3), host_view(no_ids.data(), 0), 0);
  CHECK(fusor::shape_of(e0) == fusor::shape<2>{0, 3});
  CHECK(fusor::run(host_view(empty.data(), 0, 3), e0, fusor::host()).kernels == 1);
  // a permutation of rows written in place would read rows already overwritten: refused
  std::vector<float> t(12, 1.0f);
  std::vector<i64> perm = {2, 0, 1};
  const auto tv = host_view(t.data(), 3, 4);
  CHECK_THROWS_WITH(fusor::run(tv, fusor::gather(tv, host_view(perm.data(), 3), 0), fusor::host()),
                    Catch::Contains("reads at other positions than it writes"));
}

TEST_CASE("gather_elements along every axis of a rank-3 tensor (torch.gather), fused, negative indices", "[gather]") {
  const index_t A = 4, B = 5, C = 3;
  const auto x = random_vec(std::size_t(A * B * C), 11);
  const auto xv = host_view(x.data(), A, B, C);
  std::mt19937 g(12);
  for (int axis = 0; axis < 3; ++axis) {
    CAPTURE(axis);
    const index_t ext[3] = {A, B, C};
    // indices smaller than data in the other dims, larger along the axis (allowed: any count of picks)
    index_t ie[3] = {A - 1, B - 2, C - 1};
    ie[axis] = 7;
    std::uniform_int_distribution<i64> pick(-ext[axis], ext[axis] - 1);
    std::vector<i64> idx(std::size_t(ie[0] * ie[1] * ie[2]));
    for (auto& i : idx) i = pick(g);
    std::vector<float> want(idx.size()), got(idx.size(), -99.0f), unf(idx.size(), -99.0f);
    for (index_t a = 0; a < ie[0]; ++a)
      for (index_t b = 0; b < ie[1]; ++b)
        for (index_t c = 0; c < ie[2]; ++c) {
          const std::size_t o = std::size_t((a * ie[1] + b) * ie[2] + c);
          index_t at[3] = {a, b, c};
          at[axis] = idx[o] < 0 ? idx[o] + ext[axis] : idx[o];
          want[o] = std::max(x[std::size_t((at[0] * B + at[1]) * C + at[2])], 0.0f) * 2.0f + 1.0f;
        }
    const auto iv = host_view(idx.data(), ie[0], ie[1], ie[2]);
    const auto e = fusor::gather_elements(fusor::relu(xv), iv, axis - 3) * 2.0f + 1.0f;  // negative axis
    STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
    CHECK(fusor::run(host_view(got.data(), ie[0], ie[1], ie[2]), e, fusor::host()).kernels == 1);
    fusor::run(host_view(unf.data(), ie[0], ie[1], ie[2]), e, fusor::unfused());
    CHECK(got == want);
    CHECK(unf == want);
  }
}

TEST_CASE("gather_elements: bad indices and shapes are errors naming gather_elements; outputs untouched", "[gather][errors]") {
  std::vector<float> x(12, 1.0f), y(12, -7.0f);
  std::vector<std::int32_t> idx = {0, 1, 2, 3, 0, 1};  // 3 is out of range for an axis of 3
  const auto xv = host_view(x.data(), 4, 3);
  CHECK_THROWS_WITH(fusor::run(host_view(y.data(), 2, 3), fusor::gather_elements(xv, host_view(idx.data(), 2, 3), 1), fusor::host()),
                    Catch::Contains("fusor: gather_elements: index 3 at [1, 0] of indices is out of range for axis 1 of data [4, 3]"));
  CHECK(y == std::vector<float>(12, -7.0f));
  // indices larger than data outside the axis
  std::vector<std::int32_t> big(15, 0);
  CHECK_THROWS_WITH(fusor::run(host_view(y.data(), 5, 3), fusor::gather_elements(xv, host_view(big.data(), 5, 3), 1), fusor::host()),
                    Catch::Contains("fusor: gather_elements: indices [5, 3] are larger than data [4, 3] in dim 0"));
  CHECK(y == std::vector<float>(12, -7.0f));
}

// Review fixes: static extents of data and indices need not broadcast; a
// uint64 index past 2^63 is no class for one_hot (it wrapped negative and
// was counted from the end).
TEST_CASE("gather / gather_elements with static extents; one_hot of uint64 indices", "[gather]") {
  std::vector<float> d = {1, 2, 3, 4, 5, 6};
  std::vector<i64> i = {2, 0, 1, 1};
  std::vector<float> y(4), z(3 * 2);
  fusor::run(host_view(y.data(), 2, 2),
             fusor::gather_elements(host_view(d.data(), fusor::extents<2, 3>{}), host_view(i.data(), fusor::extents<2, 2>{}), 1),
             fusor::host());
  CHECK(y == std::vector<float>{3, 1, 5, 5});
  fusor::run(host_view(z.data(), 3, 2), fusor::gather(host_view(d.data(), fusor::extents<3, 2>{}), host_view(i.data(), fusor::extents<3>{}), 0),
             fusor::host());
  CHECK(z == std::vector<float>{5, 6, 1, 2, 3, 4});
  std::vector<std::uint64_t> big = {0, ~std::uint64_t(0)};
  std::vector<float> oh(4, -1.0f);
  fusor::run(host_view(oh.data(), 2, 2), fusor::one_hot(host_view(big.data(), 2), 2), fusor::host());
  CHECK(oh == std::vector<float>{1, 0, 0, 0});
}
