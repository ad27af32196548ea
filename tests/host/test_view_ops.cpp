// Shape operations on views (expr/view_ops.hpp; issue 21, item 1 for views):
// each result is compared element by element with the index arithmetic it
// stands for (NumPy's semantics), used as a fused operand (no copy: the
// data pointer is the original's), and each misuse throws the documented
// error.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <numeric>
#include <vector>

namespace {
using fusor::index_t;
std::vector<float> iota_vec(std::size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}
template <class V>
float at(const V& v, std::initializer_list<index_t> idx) {
  index_t off = 0;
  int d = 0;
  for (index_t i : idx) off += i * v.stride(d++);
  return v.data()[off];
}
}  // namespace

TEST_CASE("permute and transpose(v, a, b) swap strides", "[view_ops]") {
  const auto x = iota_vec(2 * 3 * 4);
  const auto X = fusor::host_view(x.data(), 2, 3, 4);
  const auto P = fusor::permute(X, {2, 0, 1});
  CHECK(P.shape() == fusor::shape<3>{4, 2, 3});
  for (index_t a = 0; a < 4; ++a)
    for (index_t b = 0; b < 2; ++b)
      for (index_t c = 0; c < 3; ++c) REQUIRE(at(P, {a, b, c}) == x[std::size_t((b * 3 + c) * 4 + a)]);
  const auto T = fusor::transpose(X, 0, -1);
  CHECK(T.shape() == fusor::shape<3>{4, 3, 2});
  CHECK(at(T, {3, 1, 1}) == x[std::size_t((1 * 3 + 1) * 4 + 3)]);
  // as a fused operand: relu(permute(x) - 10) in one kernel over the permuted reads
  std::vector<float> y(24);
  const auto r = fusor::run(fusor::host_view(y.data(), 4, 2, 3), fusor::relu(P - 10.0f), fusor::host());
  CHECK(r.kernels == 1);
  for (index_t a = 0; a < 4; ++a)
    for (index_t b = 0; b < 2; ++b)
      for (index_t c = 0; c < 3; ++c)
        REQUIRE(y[std::size_t((a * 2 + b) * 3 + c)] == std::max(0.0f, x[std::size_t((b * 3 + c) * 4 + a)] - 10.0f));
  CHECK_THROWS_AS(fusor::permute(X, {0, 0, 1}), fusor::argument_error);
  CHECK_THROWS_AS(fusor::permute(X, {0, 1}), fusor::argument_error);
  CHECK_THROWS_AS(fusor::transpose(X, 0, 3), fusor::argument_error);
}

TEST_CASE("slice: ONNX start/stop clamping, negative indices, steps", "[view_ops]") {
  const auto x = iota_vec(10 * 3);
  const auto X = fusor::host_view(x.data(), 10, 3);
  const auto S = fusor::slice(X, 0, 2, 9, 3);  // rows 2, 5, 8
  CHECK(S.shape() == fusor::shape<2>{3, 3});
  CHECK(at(S, {2, 1}) == x[8 * 3 + 1]);
  const auto N = fusor::slice(X, 0, -3, 1000);  // last three rows (stop clamped)
  CHECK(N.shape() == fusor::shape<2>{3, 3});
  CHECK(at(N, {0, 0}) == x[7 * 3]);
  const auto C = fusor::slice(X, -1, 1, 2);  // the middle column
  CHECK(C.shape() == fusor::shape<2>{10, 1});
  CHECK(at(C, {4, 0}) == x[4 * 3 + 1]);
  CHECK(fusor::slice(X, 0, 5, 2).shape() == fusor::shape<2>{0, 3});  // empty
  CHECK_THROWS_AS(fusor::slice(X, 0, 0, 5, 0), fusor::argument_error);
  CHECK_THROWS_AS(fusor::slice(X, 0, 5, 0, -1), fusor::argument_error);
  // a sliced operand in a fused sum: even rows + odd rows
  std::vector<float> y(15);
  fusor::run(fusor::host_view(y.data(), 5, 3), fusor::slice(X, 0, 0, 10, 2) + fusor::slice(X, 0, 1, 10, 2), fusor::host());
  for (index_t i = 0; i < 5; ++i)
    for (index_t j = 0; j < 3; ++j) REQUIRE(y[std::size_t(i * 3 + j)] == x[std::size_t(2 * i * 3 + j)] + x[std::size_t((2 * i + 1) * 3 + j)]);
}

TEST_CASE("unsqueeze, squeeze, expand: [N, C] -> [N, C, 1, 1] broadcasting over an image", "[view_ops]") {
  const auto s = iota_vec(2 * 3);
  const auto img = iota_vec(2 * 3 * 2 * 2);
  const auto Sv = fusor::host_view(s.data(), 2, 3);
  const auto S4 = fusor::unsqueeze(fusor::unsqueeze(Sv, -1), -1);
  CHECK(S4.shape() == fusor::shape<4>{2, 3, 1, 1});
  std::vector<float> y(24);
  fusor::run(fusor::host_view(y.data(), 2, 3, 2, 2), fusor::host_view(img.data(), 2, 3, 2, 2) * S4, fusor::host());
  for (std::size_t i = 0; i < 24; ++i) REQUIRE(y[i] == img[i] * s[i / 4]);
  CHECK(fusor::squeeze(S4, 3).shape() == fusor::shape<3>{2, 3, 1});
  CHECK_THROWS_AS(fusor::squeeze(S4, 1), fusor::shape_error);
  CHECK_THROWS_AS(fusor::unsqueeze(Sv, 3), fusor::argument_error);
  const auto E = fusor::expand(fusor::host_view(s.data(), 3), fusor::shape<2>{4, 3});
  CHECK(E.shape() == fusor::shape<2>{4, 3});
  CHECK(at(E, {3, 2}) == s[2]);
  CHECK(E.stride(0) == 0);
  CHECK_THROWS_AS(fusor::expand(Sv, fusor::shape<2>{2, 4}), fusor::shape_error);
}

TEST_CASE("reshape and flatten without a copy, and the strides that forbid it", "[view_ops]") {
  const auto x = iota_vec(2 * 3 * 4);
  const auto X = fusor::host_view(x.data(), 2, 3, 4);
  const auto R = fusor::reshape(X, fusor::shape<2>{6, 4});
  CHECK(R.data() == x.data());
  CHECK(at(R, {5, 3}) == x[5 * 4 + 3]);
  const auto R2 = fusor::reshape(X, fusor::shape<4>{2, -1, 2, 1});  // -1: inferred (6)
  CHECK(R2.shape() == fusor::shape<4>{2, 6, 2, 1});
  CHECK(at(R2, {1, 4, 1, 0}) == x[((1 * 6 + 4) * 2 + 1)]);
  const auto F = fusor::flatten(X);
  CHECK(F.shape() == fusor::shape<2>{2, 12});
  CHECK(at(F, {1, 7}) == x[12 + 7]);
  CHECK(fusor::flatten(X, 0).shape() == fusor::shape<2>{1, 24});
  // a sliced view keeps whole rows contiguous: [10 rows of 3] sliced to rows 2..8 reshapes to [2, 9]
  const auto y = iota_vec(30);
  const auto Y = fusor::slice(fusor::host_view(y.data(), 10, 3), 0, 2, 8);
  const auto Y2 = fusor::reshape(Y, fusor::shape<2>{2, 9});
  CHECK(at(Y2, {1, 4}) == y[(2 + 4) * 3 + 1]);  // flat 13 of the slice: its row 4, column 1
  // a permuted view cannot be flattened without a copy
  CHECK_THROWS_AS(fusor::reshape(fusor::permute(X, {1, 0, 2}), fusor::shape<1>{24}), fusor::shape_error);
  CHECK_THROWS_AS(fusor::reshape(X, fusor::shape<2>{5, 5}), fusor::shape_error);
  // every other column of a [4, 6] buffer ([4, 3], strides [6, 2]) is all
  // even elements: it flattens to one stride-2 dim
  const auto z = iota_vec(24);
  const auto Z = fusor::slice(fusor::host_view(z.data(), 4, 6), 1, 0, 6, 2);
  const auto Z1 = fusor::reshape(Z, fusor::shape<1>{12});
  CHECK(at(Z1, {7}) == z[14]);
  const auto Z3 = fusor::reshape(Z, fusor::shape<3>{2, 2, 3});
  CHECK(at(Z3, {1, 1, 2}) == z[3 * 6 + 4]);
  // columns 0 and 2 only ([4, 2], strides [6, 2]): rows split but do not merge
  const auto W = fusor::slice(fusor::host_view(z.data(), 4, 6), 1, 0, 4, 2);
  CHECK_THROWS_AS(fusor::reshape(W, fusor::shape<1>{8}), fusor::shape_error);
  CHECK(at(fusor::reshape(W, fusor::shape<3>{2, 2, 2}), {1, 0, 1}) == z[2 * 6 + 2]);
}

TEST_CASE("reshape, brute force: every view it returns reads the source in row-major order", "[view_ops]") {
  // Sources: permutations and slices of a [4, 6, 2] buffer; targets: every
  // rank-2 and rank-3 factorization of the element count. A reshape may
  // refuse (a copy would be needed); when it returns a view, that view must
  // hold the source's elements in row-major order.
  const auto buf = iota_vec(4 * 6 * 2);
  const auto B = fusor::host_view(buf.data(), 4, 6, 2);
  int returned = 0, refused = 0;
  const auto check = [&](const auto& src) {
    const auto s = src.shape();
    const index_t n = s[0] * s[1] * s[2];
    std::vector<float> flat;
    for (index_t i = 0; i < s[0]; ++i)
      for (index_t j = 0; j < s[1]; ++j)
        for (index_t k = 0; k < s[2]; ++k) flat.push_back(at(src, {i, j, k}));
    for (index_t a = 1; a <= n; ++a) {
      if (n % a) continue;
      for (index_t b = 1; b <= n / a; ++b) {
        if ((n / a) % b) continue;
        const index_t c = n / a / b;
        try {
          const auto r = fusor::reshape(src, fusor::shape<3>{a, b, c});
          ++returned;
          for (index_t i = 0; i < a; ++i)
            for (index_t j = 0; j < b; ++j)
              for (index_t k = 0; k < c; ++k) REQUIRE(at(r, {i, j, k}) == flat[std::size_t((i * b + j) * c + k)]);
        } catch (const fusor::shape_error&) {
          ++refused;
        }
      }
    }
  };
  for (auto perm : {std::initializer_list<int>{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}})
    check(fusor::permute(B, perm));
  check(fusor::slice(B, 0, 1, 3));
  check(fusor::slice(B, 1, 0, 6, 2));
  check(fusor::slice(B, 1, 1, 5));
  check(fusor::slice(B, 2, 0, 1));
  CHECK(returned > 0);
  CHECK(refused > 0);
}
