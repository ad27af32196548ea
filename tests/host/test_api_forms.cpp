// The call forms a user writes (issue 21, item 5): an integer axis or a
// container of axes in a reduction, variadic max / min / sum / mean (ONNX
// Max, Min, Sum, Mean), conv2d / depthwise_conv2d without a bias, batch_norm
// with positional parameters, fusor::shape_of. Each form is checked against
// the long form it stands for: same values bit for bit, same kernel count.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace {
using fusor::index_t;

std::vector<float> iota(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * float(int(i % 17) - 8);
  return v;
}

template <class E, class O>
std::vector<float> eval(const E& e, O make_out, std::size_t n) {
  std::vector<float> y(n, -1.0f);
  fusor::run(make_out(y.data()), e, fusor::host());
  return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
template <class X, class A>
concept sum_callable = requires(const X& x, const A& a) { fusor::sum(x, a); };
}  // namespace

TEST_CASE("reductions take an integer axis or any range of axes", "[api][reduction]") {
  using V = fusor::tensor_view<const float, fusor::dextents<3>>;
  STATIC_REQUIRE(sum_callable<V, int>);
  STATIC_REQUIRE(sum_callable<V, std::int64_t>);
  STATIC_REQUIRE(sum_callable<V, std::vector<int>>);
  STATIC_REQUIRE(!sum_callable<V, float>);  // an eps where the axes go
  STATIC_REQUIRE(!sum_callable<V, bool>);   // a keepdims where the axes go
  // sum(x, std::vector<float>) stops with "fusor: sum: an operand is not a
  // fusor expression" (the misuse line of ONNX Sum's variadic form in
  // ops/registry.hpp, checked by fail.operand_diagnostics).
  const auto x = iota(2 * 3 * 4, 0.25f);
  const auto X = fusor::host_view(x.data(), 2, 3, 4);
  const auto last = [](float* p) { return fusor::host_view(p, 2, 3, 1); };
  CHECK(same_bits(eval(fusor::sum(X, -1), last, 6), eval(fusor::sum(X, {-1}), last, 6)));
  CHECK(same_bits(eval(fusor::mean(X, 2), last, 6), eval(fusor::mean(X, {2}), last, 6)));
  const auto mid = [](float* p) { return fusor::host_view(p, 1, 3, 1); };
  const std::vector<std::int64_t> v64{0, 2};
  const std::array<int, 2> arr{0, -1};
  const std::vector<int> vi{2, 0};
  const auto want = eval(fusor::sum(X, {0, 2}), mid, 3);
  CHECK(same_bits(eval(fusor::sum(X, v64), mid, 3), want));
  CHECK(same_bits(eval(fusor::sum(X, std::span<const int>(arr)), mid, 3), want));
  CHECK(same_bits(eval(fusor::sum(X, vi), mid, 3), want));
  CHECK(want[0] == x[0] + x[1] + x[2] + x[3] + x[12] + x[13] + x[14] + x[15]);
  // the axes are still checked at run time
  std::vector<float> y(6);
  CHECK_THROWS_AS(fusor::run(fusor::host_view(y.data(), 2, 3, 1), fusor::sum(X, 3), fusor::host()), fusor::shape_error);
}

TEST_CASE("variadic max, min, sum, mean fold left in one kernel", "[api][variadic]") {
  const auto a = iota(24, 0.5f), b = iota(24, -0.25f), c = iota(24, 1.5f);
  const auto A = fusor::host_view(a.data(), 24), B = fusor::host_view(b.data(), 24), C = fusor::host_view(c.data(), 24);
  const auto out = [](float* p) { return fusor::host_view(p, 24); };
  CHECK(same_bits(eval(fusor::max(A, B, C, 1.0f), out, 24), eval(fusor::max(fusor::max(fusor::max(A, B), C), 1.0f), out, 24)));
  CHECK(same_bits(eval(fusor::min(A, B, C), out, 24), eval(fusor::min(fusor::min(A, B), C), out, 24)));
  CHECK(same_bits(eval(fusor::sum(A, B, C), out, 24), eval(A + B + C, out, 24)));
  CHECK(same_bits(eval(fusor::mean(A, B, C), out, 24), eval((A + B + C) / 3.0f, out, 24)));
  STATIC_REQUIRE(fusor::kernel_count<decltype(fusor::max(A, B, C, 1.0f))> == 1);
  STATIC_REQUIRE(fusor::kernel_count<decltype(fusor::mean(A, B, C))> == 1);
}

TEST_CASE("conv2d and depthwise_conv2d without a bias; batch_norm with positional parameters", "[api][conv]") {
  const auto x = iota(1 * 3 * 5 * 6, 0.125f), w = iota(4 * 3 * 3 * 3, 0.0625f), dw = iota(3 * 1 * 3 * 3, 0.25f);
  const auto g = iota(4, 0.5f), be = iota(4, 0.25f), mu = iota(4, 0.125f);
  const std::vector<float> var{1.0f, 2.0f, 0.5f, 4.0f};
  const auto X = fusor::host_view(x.data(), 1, 3, 5, 6);
  const auto W = fusor::host_view(w.data(), 4, 3, 3, 3);
  const auto DW = fusor::host_view(dw.data(), 3, 1, 3, 3);
  const fusor::conv2d_params p{.padding = {1, 1, 1, 1}};
  const auto shape = fusor::shape_of(fusor::conv2d(X, W, p));
  CHECK(shape == fusor::shape<4>{1, 4, 5, 6});
  const auto out4 = [](float* q) { return fusor::host_view(q, 1, 4, 5, 6); };
  CHECK(same_bits(eval(fusor::conv2d(X, W, p), out4, 120), eval(fusor::conv2d(X, W, nullptr, p), out4, 120)));
  const auto out3 = [](float* q) { return fusor::host_view(q, 1, 3, 5, 6); };
  CHECK(same_bits(eval(fusor::depthwise_conv2d(X, DW, p), out3, 90),
                  eval(fusor::depthwise_conv2d(X, DW, nullptr, p), out3, 90)));
  const auto G = fusor::host_view(g.data(), 4), B = fusor::host_view(be.data(), 4), M = fusor::host_view(mu.data(), 4),
             V = fusor::host_view(var.data(), 4);
  const auto positional = fusor::relu(fusor::batch_norm(fusor::conv2d(X, W, p), G, B, M, V, 1e-3f));
  const auto params = fusor::relu(fusor::batch_norm(fusor::conv2d(X, W, p), fusor::batch_norm_params{G, B, M, V}, 1e-3f));
  STATIC_REQUIRE(std::is_same_v<decltype(positional), decltype(params)>);
  CHECK(same_bits(eval(positional, out4, 120), eval(params, out4, 120)));
}

TEST_CASE("conv2d auto_pad: SAME_UPPER, SAME_LOWER and VALID resolve into explicit padding (ONNX Conv)",
          "[api_forms][conv2d]") {
  // x [1, 2, 7, 6], w [3, 2, 4, 3]: along H (k 4, stride 2) the output is
  // ceil(7 / 2) = 4 and the total padding (4 - 1) * 2 + 4 - 7 = 3 (odd: the
  // extra row at the end for SAME_UPPER, at the beginning for SAME_LOWER);
  // along W (k 3, stride 1) 6 outputs and 2 = 1 + 1.
  std::vector<float> x(1 * 2 * 7 * 6), w(3 * 2 * 4 * 3);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 5 % 17) - 8) * 0.25f;
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 3 % 11) - 5) * 0.125f;
  const auto X = fusor::host_view(x.data(), 1, 2, 7, 6);
  const auto W = fusor::host_view(w.data(), 3, 2, 4, 3);
  const auto same = [&](fusor::auto_pad_mode mode, fusor::conv2d_params explicit_pads) {
    fusor::conv2d_params p;
    p.stride[0] = 2;
    p.auto_pad = mode;
    const auto e = fusor::conv2d(X, W, p);
    CHECK(fusor::shape_of(e) == fusor::shape_of(fusor::conv2d(X, W, explicit_pads)));
    std::vector<float> a(std::size_t(fusor::element_count_of(e))), b(a.size());
    fusor::run(fusor::make_view<fusor::host_space>(a.data(), fusor::dextents<4>(fusor::shape_of(e)),
                                                   fusor::row_major_strides<4>(fusor::shape_of(e))),
               e, fusor::host());
    fusor::run(fusor::make_view<fusor::host_space>(b.data(), fusor::dextents<4>(fusor::shape_of(e)),
                                                   fusor::row_major_strides<4>(fusor::shape_of(e))),
               fusor::conv2d(X, W, explicit_pads), fusor::host());
    REQUIRE(a == b);
  };
  same(fusor::auto_pad_mode::same_upper, {.stride = {2, 1}, .padding = {1, 1, 2, 1}});
  same(fusor::auto_pad_mode::same_lower, {.stride = {2, 1}, .padding = {2, 1, 1, 1}});
  same(fusor::auto_pad_mode::valid, {.stride = {2, 1}});
  {
    fusor::conv2d_params p;
    p.stride[0] = 2;
    p.auto_pad = fusor::auto_pad_mode::same_upper;
    CHECK(fusor::shape_of(fusor::conv2d(X, W, p)) == fusor::shape<4>{1, 3, 4, 6});
    p.stride[1] = 0;
    CHECK_THROWS_AS(fusor::conv2d(X, W, p), fusor::argument_error);
  }
}
