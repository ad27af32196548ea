// Shape operations on views (expr/view_ops.hpp; issue 21, item 1 for views):
// each result is compared element by element with the index arithmetic it
// stands for (NumPy's semantics), used as a fused operand (no copy: the
// data pointer is the original's), and each misuse throws the documented
// error.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/view_elements.hpp"

#include <array>
#include <limits>
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
  // negative steps walk down (ONNX: start clamped to [0, n - 1], stop to [-1, n - 1])
  const auto D = fusor::slice(X, 0, 5, 0, -1);  // rows 5, 4, 3, 2, 1
  CHECK(D.shape() == fusor::shape<2>{5, 3});
  CHECK(at(D, {0, 2}) == x[5 * 3 + 2]);
  CHECK(at(D, {4, 0}) == x[1 * 3]);
  const auto All = fusor::slice(X, 0, -1, std::numeric_limits<fusor::index_t>::min(), -3);  // rows 9, 6, 3, 0
  CHECK(All.shape() == fusor::shape<2>{4, 3});
  CHECK(at(All, {3, 1}) == x[1]);
  CHECK(fusor::slice(X, 0, 1000, 8, -1).shape() == fusor::shape<2>{1, 3});  // start clamped to row 9
  CHECK(fusor::slice(X, 0, 2, 5, -1).shape() == fusor::shape<2>{0, 3});     // empty
  {
    // a reversed operand in a fused kernel, and written through a reversed output
    std::vector<float> y(30), z(30);
    fusor::run(fusor::host_view(y.data(), 10, 3), fusor::slice(X, 0, 9, -11, -1) * 2.0f, fusor::host());
    fusor::run(fusor::slice(fusor::host_view(z.data(), 10, 3), 1, 2, -4, -1), X + 1.0f, fusor::host());
    for (index_t i = 0; i < 10; ++i)
      for (index_t j = 0; j < 3; ++j) {
        REQUIRE(y[std::size_t(i * 3 + j)] == x[std::size_t((9 - i) * 3 + j)] * 2.0f);
        REQUIRE(z[std::size_t(i * 3 + 2 - j)] == x[std::size_t(i * 3 + j)] + 1.0f);
      }
  }
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

// ---------------------------------------------------------------------------
// Shape ops on elementwise expressions (ops/shape_ops.hpp): pushed down to
// the views, so the result is one kernel whose values equal the expression
// computed into a buffer and then given the same view op. Bitwise: the same
// ops run on the same elements.

namespace {
using fusor::testing::dense;
/// Runs e into a fresh buffer of e's shape; returns the buffer and its view.
template <class E>
auto computed(const E& e, std::vector<float>& buf, int* kernels = nullptr) {
  constexpr int R = fusor::rank_v<E>;
  const auto s = fusor::shape_of(e);
  index_t n = 1;
  for (int d = 0; d < R; ++d) n *= s[d];
  buf.assign(std::size_t(n), -1.0f);
  const auto v = fusor::make_view<fusor::host_space>(buf.data(), fusor::dextents<R>(s), fusor::row_major_strides<R>(s));
  const auto r = fusor::run(v, e, fusor::host());
  if (kernels) *kernels = int(r.kernels);
  return v;
}
}  // namespace

TEST_CASE("shape ops on elementwise expressions fuse as index maps", "[view_ops][shape_ops]") {
  std::vector<float> x(2 * 3 * 4), b(4), y(2 * 5 * 3 * 4);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7 % 23) - 11) * 0.75f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = 0.25f * float(i) - 0.5f;
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = float(i % 13) * 0.125f;
  const auto X = fusor::host_view(x.data(), 2, 3, 4);
  const auto B = fusor::host_view(b.data(), 4);
  const auto Y = fusor::host_view(y.data(), 2, 5, 3, 4);
  const auto e = fusor::relu(X - 1.0f) * B + 0.5f;  // [2, 3, 4], b broadcast along dims 0 and 1
  std::vector<float> ebuf;
  const auto E = computed(e, ebuf);

  STATIC_REQUIRE(fusor::is_index_mappable_v<std::remove_cvref_t<decltype(e)>>);
  STATIC_REQUIRE(fusor::is_index_mappable_v<decltype(fusor::where(X > 0.0f, X, B))>);
  STATIC_REQUIRE(!fusor::is_index_mappable_v<decltype(fusor::sum(X, {1}))>);
  STATIC_REQUIRE(!fusor::is_index_mappable_v<decltype(fusor::relu(fusor::softmax(X)))>);
  STATIC_REQUIRE(!fusor::is_index_mappable_v<decltype(fusor::tag<struct shape_ops_t>(X * 2.0f))>);

  // each case: the fused result (one kernel) against the view op on E
  const auto same = [&](const auto& fused, const auto& reference) {
    std::vector<float> buf;
    int kernels = 0;
    const auto v = computed(fused, buf, &kernels);
    CHECK(kernels == 1);
    REQUIRE(v.shape() == reference.shape());
    REQUIRE(dense(v) == dense(reference));
  };
  same(fusor::permute(e, {2, 0, 1}), fusor::permute(E, {2, 0, 1}));
  same(fusor::transpose(e, 0, 1), fusor::transpose(E, 0, 1));
  same(fusor::transpose(e), fusor::transpose(E, -2, -1));  // one argument: the last two dims
  same(fusor::slice(e, 1, -2, 3), fusor::slice(E, 1, -2, 3));
  same(fusor::slice(e, 2, 0, 4, 2), fusor::slice(E, 2, 0, 4, 2));
  same(fusor::unsqueeze(e, 1), fusor::unsqueeze(E, 1));
  same(fusor::squeeze(fusor::unsqueeze(e, 0), 0), E);
  same(fusor::expand(fusor::unsqueeze(e, 0), fusor::shape<4>{3, 2, 3, 4}),
       fusor::expand(fusor::unsqueeze(E, 0), fusor::shape<4>{3, 2, 3, 4}));
  same(fusor::reshape(e, fusor::shape<2>{6, 4}), fusor::reshape(E, fusor::shape<2>{6, 4}));
  same(fusor::flatten(e, 2), fusor::flatten(E, 2));
  same(fusor::reshape(X * 2.0f + 1.0f, fusor::shape<1>{-1}), [&] {
    static std::vector<float> ref;
    ref.clear();
    for (float v : x) ref.push_back(v * 2.0f + 1.0f);
    return fusor::host_view(ref.data(), 24);
  }());
  same(fusor::permute(fusor::where(X > 0.0f, X, B), {1, 2, 0}),
       [&] {
         static std::vector<float> buf;
         return fusor::permute(computed(fusor::where(X > 0.0f, X, B), buf), {1, 2, 0});
       }());

  // a fused consumer of a shape op: y + unsqueeze(e, 1) broadcast over y's dim 1, one kernel
  {
    std::vector<float> buf;
    int kernels = 0;
    const auto v = computed(Y + fusor::unsqueeze(e, 1), buf, &kernels);
    CHECK(kernels == 1);
    CHECK(v.shape() == fusor::shape<4>{2, 5, 3, 4});
    for (index_t n = 0; n < 2; ++n)
      for (index_t k = 0; k < 5; ++k)
        for (index_t c = 0; c < 3; ++c)
          for (index_t w = 0; w < 4; ++w)
            REQUIRE(buf[std::size_t(((n * 5 + k) * 3 + c) * 4 + w)] ==
                    y[std::size_t(((n * 5 + k) * 3 + c) * 4 + w)] + ebuf[std::size_t((n * 3 + c) * 4 + w)]);
  }
  // a reduction over a permuted expression: the prologue reads through the
  // new strides (the summation order is the reduction kernel's own, so the
  // check is to float rounding: 4 terms, |terms| <= 10, 1e-5 absolute)
  {
    std::vector<float> out(4 * 3);
    const auto r = fusor::run(fusor::host_view(out.data(), 4, 3, 1), fusor::sum(fusor::permute(e, {2, 1, 0}), {2}),
                              fusor::host());
    CHECK(r.kernels == 1);
    for (index_t w = 0; w < 4; ++w)
      for (index_t c = 0; c < 3; ++c)
        REQUIRE(out[std::size_t(w * 3 + c)] ==
                Approx(ebuf[std::size_t(c * 4 + w)] + ebuf[std::size_t((3 + c) * 4 + w)]).margin(1e-5));
  }

  // errors: those of the view ops, thrown by the shape op itself
  CHECK_THROWS_AS(fusor::permute(e, {0, 0, 1}), fusor::argument_error);
  CHECK_THROWS_AS(fusor::transpose(e, 0, 3), fusor::argument_error);
  CHECK_THROWS_AS(fusor::squeeze(e, 0), fusor::shape_error);
  CHECK_THROWS_AS(fusor::slice(e, 0, 0, 2, 0), fusor::argument_error);
  CHECK_THROWS_AS(fusor::reshape(e, fusor::shape<2>{5, 5}), fusor::shape_error);
  // b broadcast over [2, 3] cannot be flattened with dim 2 (it would need a copy)
  CHECK_THROWS_WITH(fusor::reshape(e, fusor::shape<1>{24}), Catch::Contains("fusor: reshape:"));
  // operands that do not broadcast: the shape op computes e's shape first
  std::vector<float> z(5);
  CHECK_THROWS_AS(fusor::permute(X + fusor::host_view(z.data(), 5), {2, 0, 1}), fusor::shape_error);
}
