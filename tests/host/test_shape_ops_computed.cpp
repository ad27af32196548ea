// Shape ops over computed values (ops/view_map.hpp, issue 21 item 1):
// a reduction, normalization, contraction or tag computed into a temporary
// by its own kernel and read through the view op by its consumer. Each case
// is checked bit for bit against computing the value into a buffer and
// applying the view op to that buffer (the same kernels run on the same
// elements), on host() and unfused(), with its kernel count.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include "support/view_elements.hpp"

#include <array>
#include <utility>
#include <vector>

using fusor::index_t;

namespace {
using fusor::testing::dense;
/// Runs e on ex into a fresh buffer of e's shape; the view of the buffer.
template <class E, class Ex>
auto computed(const E& e, std::vector<float>& buf, const Ex& ex, int* kernels = nullptr) {
  constexpr int R = fusor::rank_v<E>;
  const auto s = fusor::shape_of(e);
  index_t n = 1;
  for (int d = 0; d < R; ++d) n *= s[d];
  buf.assign(std::size_t(n), -7.0f);
  const auto ext = [&]<std::size_t... D>(std::index_sequence<D...>) {
    return fusor::dextents<R>(s[D]...);
  }(std::make_index_sequence<std::size_t(R)>{});  // (rank 0 included)
  const auto v = fusor::make_view<fusor::host_space>(buf.data(), ext, fusor::row_major_strides<R>(s));
  const auto r = fusor::run(v, e, ex);
  if (kernels) *kernels = int(r.kernels);
  return v;
}
std::vector<float> data(std::size_t n, int seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = float(int((i + 3) * std::size_t(seed) % 29) - 14) * 0.125f;
  return v;
}
/// fused on host() with `kernels` kernels, and on unfused(), equal bit for bit to `reference`.
template <class E, class Ref>
void same(const E& e, const Ref& reference, int kernels) {
  std::vector<float> a, b;
  int k = 0;
  const auto v = computed(e, a, fusor::host(), &k);
  CHECK(k == kernels);
  REQUIRE(v.shape() == reference.shape());
  CHECK(dense(v) == dense(reference));
  const auto u = computed(e, b, fusor::unfused());
  CHECK(dense(u) == dense(reference));
}
}  // namespace

TEST_CASE("shape ops over computed values read their temporary through the view op", "[shape_ops][view_map]") {
  auto x = data(2 * 3 * 4, 7), y = data(2 * 4 * 3, 11), w = data(4 * 5, 5);
  const auto X = fusor::host_view(x.data(), 2, 3, 4);
  const auto Y = fusor::host_view(y.data(), 2, 4, 3);
  const auto W = fusor::host_view(w.data(), 4, 5);
  std::vector<float> b1, b2, b3, b4;
  const auto S = computed(fusor::softmax(X, 1), b1, fusor::host());   // [2, 3, 4]
  const auto M = computed(fusor::sum(X, {1}), b2, fusor::host());     // [2, 1, 4]
  const auto P = computed(fusor::matmul(X, W), b3, fusor::host());    // [2, 3, 5]
  const auto L = computed(fusor::log_softmax(X, 2), b4, fusor::host());

  SECTION("a consumer reads the value permuted: two kernels") {
    same(fusor::permute(fusor::softmax(X, 1), {0, 2, 1}) * 2.0f + Y,
         [&] {
           static std::vector<float> r;
           return computed(fusor::permute(S, {0, 2, 1}) * 2.0f + Y, r, fusor::host());
         }(),
         2);
  }
  SECTION("at the root: the value written through the inverse view op, no copy kernel") {
    same(fusor::permute(fusor::softmax(X, 1), {2, 0, 1}), fusor::permute(S, {2, 0, 1}), 1);
    same(fusor::squeeze(fusor::sum(X, {1}), 1), fusor::squeeze(M, 1), 1);
    same(fusor::transpose(fusor::matmul(X, W)), fusor::transpose(P, -2, -1), 1);
    same(fusor::flatten(fusor::log_softmax(X, 2), 2), fusor::flatten(L, 2), 1);
    same(fusor::reshape(fusor::softmax(X, 1), fusor::shape<2>{6, -1}), fusor::reshape(S, fusor::shape<2>{6, 4}), 1);
    same(fusor::unsqueeze(fusor::reshape(fusor::softmax(X, 1), {6, -1}), 0), fusor::reshape(S, {1, 6, 4}), 1);
    // a slice has no inverse (its result does not cover the value): the copy
    same(fusor::slice(fusor::matmul(X, W), 2, 4, -6, -2), fusor::slice(P, 2, 4, -6, -2), 2);
  }
  SECTION("at the root, an output whose strides cannot express the value's shape: the copy kernel") {
    // [4, 6] column-major (strides 1, 4) cannot be viewed as softmax's [2, 3, 4]
    std::vector<float> o(24, -7.0f), want(24, -7.0f);
    const auto O = fusor::make_view<fusor::host_space>(o.data(), fusor::dextents<2>(4, 6), fusor::shape<2>{1, 4});
    const auto Want = fusor::make_view<fusor::host_space>(want.data(), fusor::dextents<2>(4, 6), fusor::shape<2>{1, 4});
    CHECK(fusor::run(O, fusor::reshape(fusor::softmax(X, 1), {4, 6}), fusor::host()).kernels == 2);
    fusor::run(Want, fusor::reshape(S, {4, 6}), fusor::unfused());
    CHECK(o == want);
    // a row-major output of that shape: one kernel, the same values
    std::vector<float> r(24, -7.0f);
    CHECK(fusor::run(fusor::host_view(r.data(), 4, 6), fusor::reshape(fusor::softmax(X, 1), {4, 6}), fusor::host())
              .kernels == 1);
    CHECK(dense(fusor::host_view(r.data(), 4, 6)) == dense(fusor::reshape(S, {4, 6})));
  }
  SECTION("an elementwise expression holding a computed value: views re-strided, the value mapped") {
    // permute(softmax(x) + x): softmax's temporary and x both read permuted
    same(fusor::permute(fusor::softmax(X, 1) + X, {0, 2, 1}),
         [&] {
           static std::vector<float> r;
           return computed(fusor::permute(S, {0, 2, 1}) + fusor::permute(X, {0, 2, 1}), r, fusor::host());
         }(),
         2);
    // a reduced value broadcast before the shape op: expand's stride 0 on the temporary
    same(fusor::unsqueeze(X - fusor::mean(X, {1}), 0),
         [&] {
           static std::vector<float> m, r;
           const auto Mean = computed(fusor::mean(X, {1}), m, fusor::host());
           return computed(fusor::unsqueeze(X - Mean, 0), r, fusor::host());
         }(),
         2);
  }
  SECTION("elementwise ops over computed values only: the whole value mapped, its epilogue fused") {
    // transpose(relu(matmul)): relu stays matmul's epilogue; at the root one
    // kernel (written through the transposed output), under a consumer two
    std::vector<float> r1;
    const auto R = computed(fusor::relu(fusor::matmul(X, W)), r1, fusor::host());
    same(fusor::transpose(fusor::relu(fusor::matmul(X, W))), fusor::transpose(R, -2, -1), 1);
    same(fusor::transpose(fusor::relu(fusor::matmul(X, W))) + 1.0f, [&] {
      static std::vector<float> r;
      return computed(fusor::transpose(R, -2, -1) + 1.0f, r, fusor::host());
    }(), 2);
  }
  SECTION("shape ops of shape ops over one value: one map") {
    const auto e = fusor::unsqueeze(fusor::transpose(fusor::permute(fusor::softmax(X, 1), {2, 0, 1}), 0, 2), 1);
    same(e, fusor::unsqueeze(fusor::transpose(fusor::permute(S, {2, 0, 1}), 0, 2), 1), 1);  // at the root: inverted
    same(e + 1.0f, [&] {
      static std::vector<float> r;
      return computed(fusor::unsqueeze(fusor::transpose(fusor::permute(S, {2, 0, 1}), 0, 2), 1) + 1.0f, r, fusor::host());
    }(), 2);
  }
  SECTION("the mapped value as a reduction's prologue and as a contraction's operand") {
    same(fusor::sum(fusor::permute(fusor::softmax(X, 1), {0, 2, 1}), {2}),
         [&] {
           static std::vector<float> r;
           return computed(fusor::sum(fusor::permute(S, {0, 2, 1}), {2}), r, fusor::host());
         }(),
         2);
    same(fusor::matmul(fusor::transpose(fusor::softmax(X, 1)), fusor::slice(fusor::permute(P, {0, 1, 2}), 2, 0, 3)),
         [&] {
           static std::vector<float> r;
           return computed(fusor::matmul(fusor::transpose(S, 1, 2), fusor::slice(P, 2, 0, 3)), r, fusor::host());
         }(),
         2);  // softmax, then the GEMM reading its temporary transposed (plan/contraction_groups.hpp)
  }
  SECTION("a tagged value and a repeated value: computed once") {
    const auto t = fusor::tag<struct shape_ops_computed_t>(fusor::softmax(X, 1));
    same(fusor::permute(t, {0, 2, 1}) * fusor::permute(t, {0, 2, 1}),
         [&] {
           static std::vector<float> r;
           return computed(fusor::permute(S, {0, 2, 1}) * fusor::permute(S, {0, 2, 1}), r, fusor::host());
         }(),
         2);
    // read directly and through a shape op: still one value, computed once
    auto q = data(2 * 3 * 3, 17);
    const auto Q = fusor::host_view(q.data(), 2, 3, 3);
    const auto tq = fusor::tag<struct shape_ops_computed_q>(fusor::softmax(Q, 1));
    same(tq * fusor::transpose(tq, 1, 2),
         [&] {
           static std::vector<float> s, r;
           const auto SQ = computed(fusor::softmax(Q, 1), s, fusor::host());
           return computed(SQ * fusor::transpose(SQ, 1, 2), r, fusor::host());
         }(),
         2);
    same(fusor::permute(fusor::softmax(X, 1), {0, 2, 1}) - fusor::permute(fusor::softmax(X, 1), {0, 2, 1}) + Y,
         [&] {
           static std::vector<float> r;
           return computed(fusor::permute(S, {0, 2, 1}) - fusor::permute(S, {0, 2, 1}) + Y, r, fusor::host());
         }(),
         2);
  }
  SECTION("a transposed view leaf (matmul's transpose(v)) under a shape op: re-strided, no kernel for it") {
    same(fusor::permute(fusor::transpose(W), {1, 0}) * 2.0f,
         [&] {
           static std::vector<float> r;
           return computed(W * 2.0f, r, fusor::host());
         }(),
         1);
  }
  SECTION("explain names the split") {
    const std::string text = fusor::explain(fusor::permute(fusor::softmax(X, 1), {0, 2, 1}) + Y);
    CHECK_THAT(text, Catch::Contains("read through a shape op"));
    CHECK_THAT(text, Catch::Contains("permute("));
  }
  SECTION("errors: the view op's, thrown by the shape op itself") {
    CHECK_THROWS_WITH(fusor::permute(fusor::softmax(X, 1), {0, 0, 1}), Catch::Contains("fusor: permute: axis 0 appears twice"));
    CHECK_THROWS_WITH(fusor::squeeze(fusor::softmax(X, 1), 1), Catch::Contains("fusor: squeeze: dim 1"));
    CHECK_THROWS_AS(fusor::reshape(fusor::sum(X, {1}), fusor::shape<2>{3, 3}), fusor::shape_error);
    CHECK_THROWS_AS(fusor::transpose(fusor::matmul(X, W), 0, 3), fusor::argument_error);
  }
}

TEST_CASE("contiguous(e): a row-major temporary that any reshape can view", "[shape_ops][view_map]") {
  auto x = data(2 * 3 * 4, 13);
  const auto X = fusor::host_view(x.data(), 2, 3, 4);
  std::vector<float> t;
  // permute(x) as [2, 4, 3]: its strides cannot be viewed as [8, 3] (NumPy's
  // reshape would copy): a shape_error for the view, the copy with contiguous
  const auto P = fusor::permute(X, {0, 2, 1});
  CHECK_THROWS_WITH(fusor::reshape(P, fusor::shape<2>{8, 3}), Catch::Contains("without a copy"));
  const auto T = computed(P * 1.0f, t, fusor::host());  // the permuted elements, row-major
  // at the root: the copy into the output viewed as [2, 4, 3], one kernel
  same(fusor::reshape(fusor::contiguous(P), fusor::shape<2>{8, 3}), fusor::reshape(T, fusor::shape<2>{8, 3}), 1);
  // the copy kernel, then the consumer reading it reshaped
  same(fusor::reshape(fusor::contiguous(P), fusor::shape<2>{8, 3}) + 1.0f,
       [&] {
         static std::vector<float> r;
         return computed(fusor::reshape(T, fusor::shape<2>{8, 3}) + 1.0f, r, fusor::host());
       }(),
       2);
  // of an expression: computed once into the temporary
  same(fusor::flatten(fusor::contiguous(fusor::permute(X * 2.0f, {2, 1, 0})), 1),
       [&] {
         static std::vector<float> a, r;
         const auto Q = computed(fusor::permute(X * 2.0f, {2, 1, 0}), a, fusor::host());
         return fusor::flatten(Q, 1);
       }(),
       1);
  // in place: the copy reads every element of x before the output is written,
  // so an output over x's own memory is not an overlap (two kernels: the
  // output shares elements with an input, so the root is not inverted)
  {
    auto q = data(3 * 4, 19);
    const auto before = q;
    const auto Q = fusor::host_view(q.data(), 3, 4);
    CHECK(fusor::run(fusor::host_view(q.data(), 12), fusor::reshape(fusor::contiguous(fusor::transpose(Q)), {12}),
                     fusor::host())
              .kernels == 2);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) CHECK(q[std::size_t(j * 3 + i)] == before[std::size_t(i * 4 + j)]);
    // without the hint, the same run would read overwritten elements: refused, nothing written
    auto q2 = before;
    const auto Q2 = fusor::host_view(q2.data(), 3, 4);
    CHECK_THROWS_WITH(fusor::run(fusor::host_view(q2.data(), 4, 3), fusor::transpose(Q2) * 1.0f, fusor::host()),
                      Catch::Contains("partially overlaps"));
    CHECK(q2 == before);
    // a square transpose in place is no exact alias either (it was taken for
    // one: the check compared the untransposed view, and the run corrupted q)
    std::vector<float> sq(16), sq0;
    for (std::size_t i = 0; i < 16; ++i) sq[i] = float(i);
    sq0 = sq;
    const auto S4 = fusor::host_view(sq.data(), 4, 4);
    CHECK_THROWS_WITH(fusor::run(S4, fusor::transpose(S4) * 1.0f, fusor::host()), Catch::Contains("partially overlaps"));
    CHECK_THROWS_WITH(fusor::run(S4, fusor::materialize(fusor::contiguous(fusor::transpose(S4))) * 1.0f, fusor::host()),
                      Catch::Contains("partially overlaps"));  // (both hints read the view in place)
    CHECK(sq == sq0);
    // materialize(e) is e's own plan: where e canonicalizes to the
    // transposed view (x * 1_c is x) it is read in place, so it is checked
    // as read (a new-user run found this corrupting q when it was trusted)
    using namespace fusor::literals;
    CHECK_THROWS_WITH(fusor::run(S4, fusor::materialize(fusor::transpose(S4) * 1.0_c) * 2.0f, fusor::host()),
                      Catch::Contains("partially overlaps"));
    CHECK_THROWS_WITH(fusor::run(S4, fusor::materialize(fusor::transpose(S4) * 1.0f) * 2.0f, fusor::host()),
                      Catch::Contains("partially overlaps"));
    CHECK(sq == sq0);
  }
  const std::string text = fusor::explain(fusor::reshape(fusor::contiguous(P), fusor::shape<2>{8, 3}) + 1.0f);
  CHECK_THAT(text, Catch::Contains("forced by fusor::contiguous"));
}

TEST_CASE("unsqueeze, expand and reshape of a rank-0 computed value; braced target shapes", "[shape_ops][view_map]") {
  auto x = data(3 * 4, 23);
  const auto X = fusor::host_view(x.data(), 3, 4);
  const auto total = fusor::sum<0>(X, {0, 1}, false);  // rank 0
  STATIC_REQUIRE(fusor::rank_v<decltype(total)> == 0);
  std::vector<float> b;
  const auto T = computed(total, b, fusor::host());
  same(fusor::unsqueeze(total, 0), fusor::unsqueeze(T, 0), 1);
  same(fusor::reshape(total, {1, 1}), fusor::reshape(T, {1, 1}), 1);
  same(fusor::expand(total, {2, 3}) + 1.0f, [&] {
    static std::vector<float> r;
    return computed(fusor::expand(T, {2, 3}) + 1.0f, r, fusor::host());
  }(), 2);
  // braced shapes on views and elementwise expressions, as fusor::shape<N>
  same(fusor::reshape(X * 2.0f, {4, -1}), [&] {
    static std::vector<float> r;
    return computed(fusor::reshape(X * 2.0f, fusor::shape<2>{4, 3}), r, fusor::host());
  }(), 1);
  CHECK(fusor::reshape(X, {-1}).shape() == fusor::shape<1>{12});
  CHECK(fusor::expand(fusor::slice(X, 0, 0, 1), {2, 3, 4}).shape() == fusor::shape<3>{2, 3, 4});
  CHECK_THROWS_WITH(fusor::reshape(X, {5, -1}), Catch::Contains("the target [5, -1] cannot hold them"));
  CHECK_THROWS_WITH(fusor::reshape(X, {0, -1}), Catch::Contains("the target [0, -1] cannot hold them"));
  // ONNX Expand aligns a shorter shape on the right: the view's rank stays
  CHECK(fusor::expand(X, {1}).shape() == fusor::shape<2>{3, 4});
  CHECK(fusor::expand(fusor::slice(X, 0, 0, 1), {4}).shape() == fusor::shape<2>{1, 4});
  same(fusor::expand(fusor::unsqueeze(total, 0), {1}) + 0.0f, [&] {
    static std::vector<float> r;
    return computed(fusor::unsqueeze(T, 0) + 0.0f, r, fusor::host());
  }(), 2);
}
