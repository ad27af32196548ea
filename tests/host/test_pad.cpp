// pad on the host executor: against np.pad's values written out here
// (every mode, pads longer than the dim), against a reference loop over a
// rank-3 tensor, negative pads as ONNX's crop, fused with producers and
// consumers (bitwise the unfused values), f16 and int32, and its errors.
// The ONNX cases (tests/conformance/test_onnx_pad.cpp) check ONNX's own data.
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
using fusor::pad_mode;

std::vector<float> random_vec(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

/// The source indices of one dim's outputs, by mirrors and shifts applied
/// until the position is inside the kept range (not the kernel's modulo
/// formula): reflect mirrors about the first / last element, wrap shifts by
/// the kept extent, edge clamps; -1: the constant.
std::vector<index_t> source_indices(index_t in, index_t b, index_t e, pad_mode m) {
  const index_t lo = b < 0 ? -b : 0, kept = in - lo - (e < 0 ? -e : 0);
  const index_t before = b > 0 ? b : 0, out = in + b + e;
  std::vector<index_t> all;
  for (index_t o = 0; o < out; ++o) {
    index_t j = o - before;
    if (j < 0 || j >= kept) {
      if (m == pad_mode::constant) {
        all.push_back(-1);
        continue;
      }
      while (j < 0 || j >= kept) {
        if (m == pad_mode::edge) j = j < 0 ? 0 : kept - 1;
        else if (m == pad_mode::wrap) j += j < 0 ? kept : -kept;
        else if (kept == 1) j = 0;
        else j = j < 0 ? -j : 2 * (kept - 1) - j;
      }
    }
    all.push_back(lo + j);
  }
  return all;
}
}  // namespace

TEST_CASE("pad: every mode matches np.pad, pads longer than the dim included", "[pad]") {
  std::vector<float> x = {1, 2, 3}, y(12);
  const auto xv = host_view(x.data(), 3);
  const auto run = [&](pad_mode m, double value = 0) {
    fusor::run(host_view(y.data(), 12), fusor::pad(xv, {5, 4}, m, value), fusor::host());
    return y;
  };
  // np.pad([1, 2, 3], (5, 4), mode)
  CHECK(run(pad_mode::reflect) == std::vector<float>{2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3});
  CHECK(run(pad_mode::wrap) == std::vector<float>{2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1});
  CHECK(run(pad_mode::edge) == std::vector<float>{1, 1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3});
  CHECK(run(pad_mode::constant, 1.5) == std::vector<float>{1.5, 1.5, 1.5, 1.5, 1.5, 1, 2, 3, 1.5, 1.5, 1.5, 1.5});
  // np.pad([7], (2, 3), 'reflect') and np.pad([1, 2], (3, 3), 'reflect')
  std::vector<float> one = {7}, six(6), two = {1, 2}, eight(8);
  fusor::run(host_view(six.data(), 6), fusor::pad(host_view(one.data(), 1), {2, 3}, pad_mode::reflect), fusor::host());
  CHECK(six == std::vector<float>(6, 7.0f));
  fusor::run(host_view(eight.data(), 8), fusor::pad(host_view(two.data(), 2), {3, 3}, pad_mode::reflect), fusor::host());
  CHECK(eight == std::vector<float>{2, 1, 2, 1, 2, 1, 2, 1});
}

TEST_CASE("pad: rank 3 against a reference loop, every mode, negative pads crop (ONNX)", "[pad]") {
  const index_t A = 3, B = 4, C = 5;
  const auto x = random_vec(std::size_t(A * B * C), 1);
  const auto xv = host_view(x.data(), A, B, C);
  const index_t pads[][6] = {{1, 2, 3, 0, 2, 4}, {0, -1, 2, 1, 1, -2}, {-1, 0, 0, -1, 0, 0}, {4, 7, 9, 5, 6, 11}};
  for (const auto m : {pad_mode::constant, pad_mode::reflect, pad_mode::edge, pad_mode::wrap}) {
    for (const auto& p : pads) {
      INFO("mode " << int(m) << ", pads " << p[0] << " " << p[1] << " " << p[2] << " " << p[3] << " " << p[4] << " " << p[5]);
      const index_t in[3] = {A, B, C};
      std::vector<index_t> src[3];
      for (int d = 0; d < 3; ++d) src[d] = source_indices(in[d], p[d], p[3 + d], m);
      const index_t oa = index_t(src[0].size()), ob = index_t(src[1].size()), oc = index_t(src[2].size());
      std::vector<float> want(std::size_t(oa * ob * oc)), got(want.size(), -99.0f);
      for (index_t a = 0; a < oa; ++a)
        for (index_t b = 0; b < ob; ++b)
          for (index_t c = 0; c < oc; ++c) {
            const index_t i = src[0][std::size_t(a)], j = src[1][std::size_t(b)], k = src[2][std::size_t(c)];
            want[std::size_t((a * ob + b) * oc + c)] = (i < 0 || j < 0 || k < 0) ? -0.5f : x[std::size_t((i * B + j) * C + k)];
          }
      const auto e = fusor::pad(xv, {p[0], p[1], p[2], p[3], p[4], p[5]}, m, -0.5);
      const auto s = fusor::shape_of(e);
      REQUIRE((s[0] == oa && s[1] == ob && s[2] == oc));
      CHECK(fusor::run(host_view(got.data(), oa, ob, oc), e, fusor::host()).kernels == 1);
      CHECK(got == want);
    }
  }
}

TEST_CASE("pad fuses its producers and consumers; axes; f16 and int32", "[pad]") {
  const index_t N = 2, C = 3, H = 5, W = 6;
  const auto x = random_vec(std::size_t(N * C * H * W), 2), r = random_vec(std::size_t(N * C * 7 * 8), 3);
  const auto xv = host_view(x.data(), N, C, H, W);
  const auto rv = host_view(r.data(), N, C, 7, 8);
  // a reflection-padded conv input (StyleGAN, CycleGAN): pad(relu(x * 2 + 1)) * 0.5 + r, one kernel
  const auto e = fusor::pad(fusor::relu(xv * 2.0f + 1.0f), {1, 1, 1, 1}, pad_mode::reflect, 0, {2, 3}) * 0.5f + rv;
  STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
  std::vector<float> fused(r.size()), unfused(r.size());
  CHECK(fusor::run(host_view(fused.data(), N, C, 7, 8), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(host_view(unfused.data(), N, C, 7, 8), e, fusor::unfused()).kernels > 1);
  CHECK(std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)) == 0);
  // the same pads through all four dims equal the axes form
  std::vector<float> all(r.size());
  fusor::run(host_view(all.data(), N, C, 7, 8),
             fusor::pad(fusor::relu(xv * 2.0f + 1.0f), {0, 0, 1, 1, 0, 0, 1, 1}, pad_mode::reflect) * 0.5f + rv,
             fusor::host());
  CHECK(all == fused);
  // axes given as a std::vector, pads as a std::vector<int64_t>
  std::vector<float> last(std::size_t(N * C * H * (W + 3)));
  fusor::run(host_view(last.data(), N, C, H, W + 3),
             fusor::pad(xv, std::vector<std::int64_t>{1, 2}, pad_mode::constant, 0, std::vector<int>{-1}), fusor::host());
  CHECK(last[0] == 0.0f);
  CHECK(last[1] == x[0]);
  CHECK(last[std::size_t(W + 1)] == 0.0f);

  // f16: the values copied exactly, the constant rounded once to f16
  std::vector<__half> h(6), hy(10);
  for (int i = 0; i < 6; ++i) h[std::size_t(i)] = __float2half(0.1f * float(i));
  fusor::run(host_view(hy.data(), 2, 5), fusor::pad(host_view(h.data(), 2, 3), {0, 1, 0, 1}, pad_mode::constant, 0.1),
             fusor::host());
  CHECK(__half2float(hy[0]) == __half2float(__float2half(0.1f)));
  for (int i = 0; i < 3; ++i) CHECK(__half2float(hy[std::size_t(1 + i)]) == __half2float(h[std::size_t(i)]));
  // int32 (ONNX's edge / reflect / wrap cases are int32)
  std::vector<std::int32_t> iv = {1, 2, 3, 4}, io(8);
  fusor::run(host_view(io.data(), 8), fusor::pad(host_view(iv.data(), 4), {2, 2}, pad_mode::wrap), fusor::host());
  CHECK(io == std::vector<std::int32_t>{3, 4, 1, 2, 3, 4, 1, 2});
}

TEST_CASE("pad: bad pads and axes are errors naming pad; outputs untouched", "[pad][errors]") {
  std::vector<float> x(12, 1.0f), y(40, -7.0f);
  const auto xv = host_view(x.data(), 3, 4);
  CHECK_THROWS_AS(fusor::pad(xv, {1, 1}), fusor::argument_error);                 // 2 pads for 2 axes
  CHECK_THROWS_AS(fusor::pad(xv, {1, 1}, pad_mode::edge, 0, {2}), fusor::argument_error);  // axis out of range
  CHECK_THROWS_AS(fusor::pad(xv, {1, 1, 1, 1}, pad_mode::edge, 0, {1, -1}), fusor::argument_error);  // repeated
  CHECK_THROWS_WITH(fusor::pad(xv, {1, 2, 3}), Catch::Contains("fusor: pad:"));
  // crop more than the dim: a shape_error naming pad and the shapes
  CHECK_THROWS_WITH(fusor::run(host_view(y.data(), 1, 1), fusor::pad(xv, {-2, 0, -2, 0}), fusor::host()),
                    Catch::Contains("fusor: pad: x [3, 4]"));
  // a reflect pad of a dim cropped to nothing has nothing to repeat
  CHECK_THROWS_AS(fusor::run(host_view(y.data(), 2, 4), fusor::pad(xv, {-3, 0, 2, 0}, pad_mode::reflect), fusor::host()),
                  fusor::shape_error);
  // a wrong output shape
  CHECK_THROWS_AS(fusor::run(host_view(y.data(), 5, 5), fusor::pad(xv, {1, 0, 1, 0}), fusor::host()), fusor::shape_error);
  CHECK(y == std::vector<float>(40, -7.0f));
  // in place: pad reads other positions than it writes
  std::vector<float> z(9, 1.0f);
  const auto zv = host_view(z.data(), 9);
  CHECK_THROWS_AS(fusor::run(zv, fusor::pad(fusor::slice(zv, 0, 0, 7), {1, 1}, pad_mode::edge), fusor::host()),
                  fusor::argument_error);
}

// Review fixes: the constant is converted as fusor stores values (integers
// saturate), and an extent that overflows is a shape_error.
TEST_CASE("pad: the constant saturates to integer dtypes; an overflowing extent is an error", "[pad][errors]") {
  std::vector<std::uint8_t> u = {1, 2, 250}, uo(4);
  fusor::run(host_view(uo.data(), 4), fusor::pad(host_view(u.data(), 3), {1, 0}, pad_mode::constant, 300), fusor::host());
  CHECK(uo == std::vector<std::uint8_t>{255, 1, 2, 250});
  std::vector<std::int8_t> s = {5}, so(2);
  fusor::run(host_view(so.data(), 2), fusor::pad(host_view(s.data(), 1), {0, 1}, pad_mode::constant, -129), fusor::host());
  CHECK(so == std::vector<std::int8_t>{5, -128});
  std::vector<float> x(6);
  CHECK_THROWS_WITH(fusor::shape_of(fusor::pad(host_view(x.data(), 2, 3), {0, 9223372036854775000, 0, 9223372036854775000})),
                    Catch::Contains("the extent overflows"));
}
