// conv_transpose2d on the host executor (the GEMM engine's phase
// decomposition, and the direct device algorithm): against a scatter loop written
// here (each input pixel adds its kernel footprint into the output, as
// ONNX's col2im reference and PyTorch's definition do; float64), over
// strides, padding, output_padding, dilation, groups and a bias; fused
// with producers and consumers (bitwise the unfused values); f16; the
// output_size / auto_pad rules; errors. The ONNX cases
// (tests/conformance/test_onnx_conv_transpose.cpp) check ONNX's own data.
//
// Tolerance: fp32 accumulation of at most C_in / groups * kH * kW products,
// in another order than the float64 reference: |got - want| <= 1e-5 *
// sum |x * w| (+ |b|), well above the ~n * 2^-24 bound for these sizes.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
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

struct reference {
  std::vector<double> y, mag;  // value and sum of |terms| per output
  index_t oh = 0, ow = 0;
};

/// The scatter form: y[n, g * cpg + o, ih * s - pad + kh * d, ...] += x[n, ic, ih, iw] * w[ic, o, kh, kw].
reference scatter(const std::vector<float>& x, const std::vector<float>& w, const float* b, index_t N, index_t C,
                  index_t H, index_t W, index_t cpg, index_t KH, index_t KW, const fusor::conv_transpose2d_params& p) {
  reference r;
  r.oh = p.stride[0] * (H - 1) + p.output_padding[0] + (KH - 1) * p.dilation[0] + 1 - p.padding[0] - p.padding[2];
  r.ow = p.stride[1] * (W - 1) + p.output_padding[1] + (KW - 1) * p.dilation[1] + 1 - p.padding[1] - p.padding[3];
  const index_t CO = cpg * p.groups, cin_g = C / p.groups;
  r.y.assign(std::size_t(N * CO * r.oh * r.ow), 0.0);
  r.mag = r.y;
  for (index_t n = 0; n < N; ++n)
    for (index_t ic = 0; ic < C; ++ic)
      for (index_t ih = 0; ih < H; ++ih)
        for (index_t iw = 0; iw < W; ++iw)
          for (index_t o = 0; o < cpg; ++o)
            for (index_t kh = 0; kh < KH; ++kh)
              for (index_t kw = 0; kw < KW; ++kw) {
                const index_t yh = ih * p.stride[0] - p.padding[0] + kh * p.dilation[0];
                const index_t yw = iw * p.stride[1] - p.padding[1] + kw * p.dilation[1];
                if (yh < 0 || yh >= r.oh || yw < 0 || yw >= r.ow) continue;
                const index_t oc = (ic / cin_g) * cpg + o;
                const double t = double(x[std::size_t(((n * C + ic) * H + ih) * W + iw)]) *
                                 double(w[std::size_t(((ic * cpg + o) * KH + kh) * KW + kw)]);
                const std::size_t at = std::size_t(((n * CO + oc) * r.oh + yh) * r.ow + yw);
                r.y[at] += t;
                r.mag[at] += std::abs(t);
              }
  if (b)
    for (std::size_t i = 0; i < r.y.size(); ++i) {
      const index_t oc = index_t(i / std::size_t(r.oh * r.ow)) % CO;
      r.y[i] += b[oc];
      r.mag[i] += std::abs(b[oc]);
    }
  return r;
}
}  // namespace

TEST_CASE("conv_transpose2d against a scatter loop: strides, padding, output_padding, dilation, groups, bias",
          "[conv_transpose]") {
  struct shape_case {
    index_t N, C, H, W, cpg, KH, KW;
    fusor::conv_transpose2d_params p;
  };
  const shape_case cases[] = {
      {1, 1, 3, 3, 2, 3, 3, {}},                                                    // ONNX's first example
      {2, 4, 5, 4, 3, 4, 4, {.stride = {2, 2}, .padding = {1, 1, 1, 1}}},           // DCGAN's 2x upsampling
      {1, 3, 4, 5, 2, 3, 3, {.stride = {3, 2}, .output_padding = {1, 1}}},
      {2, 6, 3, 4, 2, 3, 2, {.stride = {2, 1}, .padding = {0, 1, 2, 0}, .dilation = {2, 3}, .groups = 3}},
      {1, 4, 6, 6, 1, 2, 2, {.stride = {2, 2}, .groups = 4}},                       // depthwise
      {1, 2, 3, 3, 2, 1, 1, {.stride = {3, 2}, .output_padding = {2, 1}}},          // phases no tap reaches: bias only
      {2, 8, 20, 20, 4, 3, 3, {.stride = {2, 2}, .padding = {1, 1, 1, 1}}},         // several row blocks per phase
  };
  for (const auto& c : cases) {
    for (const bool with_bias : {false, true}) {
      CAPTURE(c.N, c.C, c.H, c.W, c.cpg, c.KH, c.KW, c.p.groups, with_bias);
      const auto x = random_vec(std::size_t(c.N * c.C * c.H * c.W), 1), w = random_vec(std::size_t(c.C * c.cpg * c.KH * c.KW), 2);
      const auto b = random_vec(std::size_t(c.cpg * c.p.groups), 3);
      const auto ref = scatter(x, w, with_bias ? b.data() : nullptr, c.N, c.C, c.H, c.W, c.cpg, c.KH, c.KW, c.p);
      const auto xv = host_view(x.data(), c.N, c.C, c.H, c.W);
      const auto wv = host_view(w.data(), c.C, c.cpg, c.KH, c.KW);
      const index_t CO = c.cpg * c.p.groups;
      std::vector<float> got(ref.y.size(), -99.0f);
      const auto out = host_view(got.data(), c.N, CO, ref.oh, ref.ow);
      if (with_bias) {
        const auto e = fusor::conv_transpose2d(xv, wv, host_view(b.data(), CO), c.p);
        const auto s = fusor::shape_of(e);
        REQUIRE((s[0] == c.N && s[1] == CO && s[2] == ref.oh && s[3] == ref.ow));
        CHECK(fusor::run(out, e, fusor::host()).kernels == 1);
      } else {
        CHECK(fusor::run(out, fusor::conv_transpose2d(xv, wv, c.p), fusor::host()).kernels == 1);
      }
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(std::abs(double(got[i]) - ref.y[i]) <= 1e-5 * ref.mag[i] + 1e-30);
      // the device algorithm (one output per thread; gemm_engine = device_twin)
      // against the same reference: the host GEMM engine's phase decomposition
      // (exec/host_conv_transpose.hpp) sums in another order, not other terms
      auto twin = fusor::host();
      twin.gemm_engine = fusor::host_gemm_engine::device_twin;
      std::vector<float> direct(ref.y.size(), -99.0f);
      const auto dout = host_view(direct.data(), c.N, CO, ref.oh, ref.ow);
      if (with_bias) fusor::run(dout, fusor::conv_transpose2d(xv, wv, host_view(b.data(), CO), c.p), twin);
      else fusor::run(dout, fusor::conv_transpose2d(xv, wv, c.p), twin);
      for (std::size_t i = 0; i < direct.size(); ++i)
        CHECK(std::abs(double(direct[i]) - ref.y[i]) <= 1e-5 * ref.mag[i] + 1e-30);
    }
  }
}

TEST_CASE("conv_transpose2d: an Inf weight propagates as in the direct kernel (no 0 * Inf from taps outside the input)",
          "[conv_transpose]") {
  // x [1, 1, 2, 2] of ones, w [1, 1, 3, 3] of ones with w[.., 2, 2] = +Inf, stride 1: output (0, 0) is reached
  // by tap (0, 0) alone (= 1); the outputs tap (2, 2) reaches are +Inf; none is NaN
  const std::vector<float> x(4, 1.0f);
  std::vector<float> w(9, 1.0f);
  w[8] = std::numeric_limits<float>::infinity();
  const auto e = fusor::conv_transpose2d(host_view(x.data(), 1, 1, 2, 2), host_view(w.data(), 1, 1, 3, 3));
  std::vector<float> got(16, -99.0f), direct(16, -99.0f);
  fusor::run(host_view(got.data(), 1, 1, 4, 4), e, fusor::host());
  auto twin = fusor::host();
  twin.gemm_engine = fusor::host_gemm_engine::device_twin;
  fusor::run(host_view(direct.data(), 1, 1, 4, 4), e, twin);
  CHECK(got[0] == 1.0f);
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK(!std::isnan(got[i]));
    CHECK(got[i] == direct[i]);
  }
  CHECK(std::isinf(got[15]));
}

TEST_CASE("conv_transpose2d fuses its producers and consumers; f16; output_size and auto_pad", "[conv_transpose]") {
  const index_t N = 2, C = 4, H = 5, W = 6, CO = 3;
  const auto x = random_vec(std::size_t(N * C * H * W), 4), w = random_vec(std::size_t(C * CO * 4 * 4), 5);
  const auto b = random_vec(std::size_t(CO), 6), s = random_vec(std::size_t(C), 7);
  const auto xv = host_view(x.data(), N, C, H, W);
  const auto wv = host_view(w.data(), C, CO, 4, 4);
  const auto sv = host_view(s.data(), C, 1, 1);
  const fusor::conv_transpose2d_params p{.stride = {2, 2}, .padding = {1, 1, 1, 1}};
  // a GAN generator step: relu(conv_transpose2d(relu(x * s), w, b)) - 0.5: one kernel
  const auto e = fusor::relu(fusor::conv_transpose2d(fusor::relu(xv * sv), wv, host_view(b.data(), CO), p)) - 0.5f;
  STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
  std::vector<float> fused(std::size_t(N * CO * 2 * H * 2 * W)), unfused(fused.size());
  CHECK(fusor::run(host_view(fused.data(), N, CO, 2 * H, 2 * W), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(host_view(unfused.data(), N, CO, 2 * H, 2 * W), e, fusor::unfused()).kernels > 1);
  CHECK(std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)) == 0);
  // explain names the host's algorithm for the group
  CHECK(fusor::explain<fusor::host_policy>(e).find("host conv_transpose2d: ") != std::string::npos);

  // f16 in, fp32 accumulation, one rounding: equal to the f32 computation on the same (f16) values rounded once
  std::vector<__half> xh(x.size()), wh(w.size()), yh(fused.size());
  std::vector<float> xr(x.size()), wr(w.size()), yr(fused.size());
  for (std::size_t i = 0; i < x.size(); ++i) xr[i] = __half2float(xh[i] = __float2half(x[i]));
  for (std::size_t i = 0; i < w.size(); ++i) wr[i] = __half2float(wh[i] = __float2half(w[i]));
  fusor::run(host_view(yh.data(), N, CO, 2 * H, 2 * W),
             fusor::conv_transpose2d(host_view(xh.data(), N, C, H, W), host_view(wh.data(), C, CO, 4, 4), p), fusor::host());
  fusor::run(host_view(yr.data(), N, CO, 2 * H, 2 * W),
             fusor::conv_transpose2d(host_view(xr.data(), N, C, H, W), host_view(wr.data(), C, CO, 4, 4), p), fusor::host());
  for (std::size_t i = 0; i < yr.size(); ++i) CHECK(__half2float(yh[i]) == __half2float(__float2half(yr[i])));

  // output_size (ONNX output_shape) and SAME_UPPER fix the output extent; the padding follows ONNX's rule
  const auto sz = fusor::shape_of(fusor::conv_transpose2d(xv, wv, {.stride = {2, 2}, .output_size = {11, 13}}));
  CHECK((sz[2] == 11 && sz[3] == 13));
  const auto same = fusor::shape_of(fusor::conv_transpose2d(xv, wv, {.stride = {3, 2}, .auto_pad = fusor::auto_pad_mode::same_upper}));
  CHECK((same[2] == 3 * H && same[3] == 2 * W));
}

TEST_CASE("conv_transpose2d: mismatched shapes are errors naming conv_transpose2d; outputs untouched", "[conv_transpose][errors]") {
  std::vector<float> x(2 * 4 * 3 * 3, 1.0f), w(4 * 2 * 3 * 3, 1.0f), b(5, 0.0f), y(400, -7.0f);
  const auto xv = host_view(x.data(), 2, 4, 3, 3);
  // w's C_in (3) is not x's (4)
  CHECK_THROWS_WITH(fusor::run(host_view(y.data(), 2, 2, 5, 5), fusor::conv_transpose2d(xv, host_view(w.data(), 3, 2, 3, 3)), fusor::host()),
                    Catch::Contains("fusor: conv_transpose2d: x [2, 4, 3, 3], w [3, 2, 3, 3]"));
  // groups 3 does not divide C_in 4
  CHECK_THROWS_AS(fusor::run(host_view(y.data(), 2, 6, 5, 5),
                             fusor::conv_transpose2d(xv, host_view(w.data(), 4, 2, 3, 3), {.groups = 3}), fusor::host()),
                  fusor::shape_error);
  // a bias of the wrong length
  CHECK_THROWS_WITH(fusor::run(host_view(y.data(), 2, 2, 5, 5),
                               fusor::conv_transpose2d(xv, host_view(w.data(), 4, 2, 3, 3), host_view(b.data(), 5)), fusor::host()),
                    Catch::Contains("the bias must be [C_out] = [2]"));
  // padding that removes every row
  CHECK_THROWS_AS(fusor::run(host_view(y.data(), 2, 2, 1, 1),
                             fusor::conv_transpose2d(xv, host_view(w.data(), 4, 2, 3, 3), {.padding = {3, 3, 3, 3}}), fusor::host()),
                  fusor::shape_error);
  CHECK(y == std::vector<float>(400, -7.0f));
}

// Review fixes: static extents of x, w and b need not broadcast; output_size
// with VALID is refused (both fix the output extent).
TEST_CASE("conv_transpose2d with static extents; output_size with VALID is an argument_error", "[conv_transpose]") {
  std::vector<float> x(3 * 4 * 4, 1.0f), w(3 * 2 * 3 * 3, 0.5f), b = {1.0f, -1.0f}, y(2 * 6 * 6);
  const auto e = fusor::conv_transpose2d(host_view(x.data(), fusor::extents<1, 3, 4, 4>{}), host_view(w.data(), fusor::extents<3, 2, 3, 3>{}),
                                         host_view(b.data(), fusor::extents<2>{}));
  fusor::run(host_view(y.data(), 1, 2, 6, 6), e, fusor::host());
  CHECK(y[0] == 3 * 0.5f + 1.0f);                // the corner: one tap per input channel
  CHECK(y[std::size_t(6 * 6 + 2 * 6 + 2)] == 3 * 9 * 0.5f - 1.0f);  // an interior pixel of channel 1: all 9 taps
  CHECK_THROWS_AS(fusor::conv_transpose2d(host_view(x.data(), 1, 3, 4, 4), host_view(w.data(), 3, 2, 3, 3),
                                          {.output_size = {9, 9}, .auto_pad = fusor::auto_pad_mode::valid}),
                  fusor::argument_error);
}
