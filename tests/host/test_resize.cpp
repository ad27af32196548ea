// resize on the host executor: against direct formulas written here (2x
// nearest upsampling is a pixel repeat; bilinear with align_corners at
// known points), fused with producers and consumers (bitwise the unfused
// values), NHWC equal to NCHW, integers, errors. The ONNX cases
// (tests/conformance/test_onnx_resize.cpp) check every coordinate mode.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cuda_fp16.h>

#include <cmath>
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
}  // namespace

TEST_CASE("resize: nearest 2x upsampling repeats pixels (PyTorch's nearest), every coordinate mode", "[resize]") {
  const index_t N = 2, C = 3, H = 5, W = 4;
  const auto x = random_vec(std::size_t(N * C * H * W), 1);
  const auto xv = host_view(x.data(), N, C, H, W);
  std::vector<float> y(std::size_t(N * C * 4 * H * W));
  // asymmetric + floor is PyTorch's 'nearest'; half_pixel + round_prefer_floor agrees at scale 2
  for (const auto coords : {fusor::resize_coordinates::asymmetric, fusor::resize_coordinates::half_pixel}) {
    const auto rounding = coords == fusor::resize_coordinates::asymmetric ? fusor::resize_rounding::floor
                                                                          : fusor::resize_rounding::round_prefer_floor;
    fusor::run(host_view(y.data(), N, C, 2 * H, 2 * W),
               fusor::resize(xv, {.scale = {2, 2}, .coordinates = coords, .rounding = rounding}), fusor::host());
    for (index_t p = 0; p < N * C; ++p)
      for (index_t h = 0; h < 2 * H; ++h)
        for (index_t w = 0; w < 2 * W; ++w)
          CHECK(y[std::size_t((p * 2 * H + h) * 2 * W + w)] == x[std::size_t((p * H + h / 2) * W + w / 2)]);
  }
}

TEST_CASE("resize: bilinear with align_corners hits the corners and mixes linearly between", "[resize]") {
  std::vector<float> x = {0, 10, 20, 30};  // [1, 1, 2, 2]
  std::vector<float> y(9);
  fusor::run(host_view(y.data(), 1, 1, 3, 3),
             fusor::resize(host_view(x.data(), 1, 1, 2, 2),
                           {.size = {3, 3}, .mode = fusor::resize_mode::linear, .coordinates = fusor::resize_coordinates::align_corners}),
             fusor::host());
  CHECK(y == std::vector<float>{0, 5, 10, 10, 15, 20, 20, 25, 30});
  // half_pixel (PyTorch bilinear, align_corners = False) at 2x: the first output pixel samples -0.25, clamped to the edge
  std::vector<float> z(16);
  fusor::run(host_view(z.data(), 1, 1, 4, 4),
             fusor::resize(host_view(x.data(), 1, 1, 2, 2), {.scale = {2, 2}, .mode = fusor::resize_mode::linear}), fusor::host());
  CHECK(z[0] == 0.0f);
  CHECK(z[1] == 2.5f);   // x = 0.25: 0.75 * 0 + 0.25 * 10
  CHECK(z[5] == 7.5f);   // (0.25, 0.25): 0.1875 * 10 + 0.1875 * 20 + 0.0625 * 30
  CHECK(z[15] == 30.0f);
}

TEST_CASE("resize fuses its producers and consumers; NHWC; integers; errors", "[resize]") {
  const index_t N = 1, C = 4, H = 6, W = 5;
  const auto x = random_vec(std::size_t(N * C * H * W), 2), skip = random_vec(std::size_t(N * C * 12 * 10), 3);
  const auto xv = host_view(x.data(), N, C, H, W);
  const fusor::resize_params p{.scale = {2, 2}, .mode = fusor::resize_mode::linear};
  // a U-Net / FPN decoder step: upsample(relu(x)) + skip, one kernel
  const auto e = fusor::resize(fusor::relu(xv), p) + host_view(skip.data(), N, C, 12, 10);
  STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
  std::vector<float> fused(skip.size()), unfused(skip.size());
  CHECK(fusor::run(host_view(fused.data(), N, C, 12, 10), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(host_view(unfused.data(), N, C, 12, 10), e, fusor::unfused()).kernels == 3);
  CHECK(std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)) == 0);
  // NHWC: the same values, transposed
  std::vector<float> xn(x.size()), yn(skip.size()), yc(skip.size());
  for (index_t c = 0; c < C; ++c)
    for (index_t i = 0; i < H * W; ++i) xn[std::size_t(i * C + c)] = x[std::size_t(c * H * W + i)];
  auto q = p;
  q.layout = fusor::layout::nhwc;
  fusor::run(host_view(yn.data(), N, 12, 10, C), fusor::resize(host_view(xn.data(), N, H, W, C), q), fusor::host());
  fusor::run(host_view(yc.data(), N, C, 12, 10), fusor::resize(xv, p), fusor::host());
  for (index_t c = 0; c < C; ++c)
    for (index_t i = 0; i < 120; ++i) CHECK(yn[std::size_t(i * C + c)] == yc[std::size_t(c * 120 + i)]);
  // integers: nearest copies, linear rounds to the nearest after the mix (saturating)
  std::vector<std::int32_t> xi = {0, 10, 20, 30}, yi(16);
  fusor::run(host_view(yi.data(), 1, 1, 4, 4), fusor::resize(host_view(xi.data(), 1, 1, 2, 2), {.size = {4, 4}}), fusor::host());
  CHECK(yi[5] == 0);
  CHECK(yi[15] == 30);
  // half: the bilinear mix (double) is rounded once, to half (ONNX's reference casts its float64 mix once)
  std::vector<__half> hx(16 * 16), hy(37 * 41);
  for (std::size_t i = 0; i < hx.size(); ++i) hx[i] = __float2half(std::sin(float(i) * 0.37f));
  fusor::run(host_view(hy.data(), 1, 1, 37, 41),
             fusor::resize(host_view(hx.data(), 1, 1, 16, 16), {.size = {37, 41}, .mode = fusor::resize_mode::linear}), fusor::host());
  auto at = [&](index_t h, index_t w) {
    h = std::min<index_t>(std::max<index_t>(h, 0), 15), w = std::min<index_t>(std::max<index_t>(w, 0), 15);
    return double(__half2float(hx[std::size_t(h * 16 + w)]));
  };
  for (index_t oh = 0; oh < 37; ++oh)
    for (index_t ow = 0; ow < 41; ++ow) {
      const double yh = (double(oh) + 0.5) / (37.0 / 16.0) - 0.5, yw = (double(ow) + 0.5) / (41.0 / 16.0) - 0.5;
      const double fh0 = std::floor(yh), fw0 = std::floor(yw), fh = yh - fh0, fw = yw - fw0;
      const index_t h0 = index_t(fh0), w0 = index_t(fw0);
      const double top = at(h0, w0) * (1 - fw) + at(h0, w0 + 1) * fw, bottom = at(h0 + 1, w0) * (1 - fw) + at(h0 + 1, w0 + 1) * fw;
      CHECK(__half2float(hy[std::size_t(oh * 41 + ow)]) == __half2float(__double2half(top * (1 - fh) + bottom * fh)));
    }
  // errors
  CHECK_THROWS_WITH(fusor::resize(xv, {}), Catch::Contains("resize: give size[0] > 0 or scale[0] > 0"));
  CHECK_THROWS_WITH(fusor::shape_of(fusor::resize(xv, {.scale = {0.1, 1}})), Catch::Contains("resize: x [1, 4, 6, 5] resized to 0"));
}
