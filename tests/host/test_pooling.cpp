// max_pool2d, avg_pool2d, global_average_pool and global_max_pool on the host
// executor, against a float64 reference written here (a direct loop over
// each window, independent of fusor's kernels) and against the unfused
// executor.
//
// Tolerances: max pooling is exact (a max of floats rounds nothing), so it
// is compared bitwise. avg_pool2d sums at most 25 floats in fp32 and divides
// once: error <= (n + 1) * 2^-24 * sum|x| / n, below 2e-6 * max|x| for the
// inputs here (|x| <= 2); we allow 1e-5 absolute. Fused and unfused run the
// same kernel on the same values: bitwise equal.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
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

/// Output extent by ONNX's formula (with PyTorch's last-window rule for ceil_mode).
index_t out_extent(index_t in, index_t k, index_t s, index_t d, index_t lo, index_t hi, bool ceil_mode) {
  const double span = double((k - 1) * d + 1);
  const double q = (double(in + lo + hi) - span) / double(s);
  index_t out = index_t(ceil_mode ? std::ceil(q) : std::floor(q)) + 1;
  if (ceil_mode && (out - 1) * s >= in + lo) --out;
  return out;
}

/// The reference: x is NCHW (or NHWC when p.layout says so), dense.
std::vector<double> ref_pool(const std::vector<float>& x, index_t N, index_t C, index_t H, index_t W,
                             const fusor::pool2d_params& p, bool avg, index_t& OH, index_t& OW) {
  const bool nhwc = p.layout == fusor::layout::nhwc;
  OH = out_extent(H, p.kernel[0], p.stride[0], p.dilation[0], p.padding[0], p.padding[2], p.ceil_mode);
  OW = out_extent(W, p.kernel[1], p.stride[1], p.dilation[1], p.padding[1], p.padding[3], p.ceil_mode);
  auto at = [&](index_t n, index_t c, index_t h, index_t w) {
    return double(x[std::size_t(nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w)]);
  };
  std::vector<double> y(std::size_t(N * C * OH * OW));
  for (index_t n = 0; n < N; ++n)
    for (index_t c = 0; c < C; ++c)
      for (index_t oh = 0; oh < OH; ++oh)
        for (index_t ow = 0; ow < OW; ++ow) {
          double acc = avg ? 0.0 : -INFINITY;
          index_t inside = 0, padded = 0;
          for (index_t kh = 0; kh < p.kernel[0]; ++kh)
            for (index_t kw = 0; kw < p.kernel[1]; ++kw) {
              const index_t h = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
              const index_t w = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
              if (h >= -p.padding[0] && h < H + p.padding[2] && w >= -p.padding[1] && w < W + p.padding[3]) ++padded;
              if (h < 0 || h >= H || w < 0 || w >= W) continue;
              ++inside;
              const double v = at(n, c, h, w);
              acc = avg ? acc + v : (std::isnan(v) || std::isnan(acc) ? NAN : std::max(acc, v));
            }
          if (avg) acc /= double(p.count_include_pad ? padded : inside);
          const std::size_t o = std::size_t(nhwc ? ((n * OH + oh) * OW + ow) * C + c : ((n * C + c) * OH + oh) * OW + ow);
          y[o] = acc;
        }
  return y;
}

template <bool Avg>
auto pool(const auto& x, const fusor::pool2d_params& p) {
  if constexpr (Avg) return fusor::avg_pool2d(x, p);
  else return fusor::max_pool2d(x, p);
}

/// Runs pooling of a dense [N, C, H, W] (or NHWC) input on host() and
/// unfused(), checks both against ref_pool and each other.
template <bool Avg>
void check_pool(index_t N, index_t C, index_t H, index_t W, fusor::pool2d_params p, unsigned seed) {
  const auto x = random_vec(std::size_t(N * C * H * W), seed);
  index_t OH = 0, OW = 0;
  const auto want = ref_pool(x, N, C, H, W, p, Avg, OH, OW);
  const bool nhwc = p.layout == fusor::layout::nhwc;
  const auto xv = nhwc ? host_view(x.data(), N, H, W, C) : host_view(x.data(), N, C, H, W);
  std::vector<float> fused(want.size(), -7.0f), unfused(want.size(), -7.0f);
  auto ov = [&](std::vector<float>& v) { return nhwc ? host_view(v.data(), N, OH, OW, C) : host_view(v.data(), N, C, OH, OW); };
  const auto e = pool<Avg>(xv, p);
  CHECK(fusor::shape_of(e) == fusor::shape_of(ov(fused)));
  CHECK(fusor::run(ov(fused), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(ov(unfused), e, fusor::unfused()).kernels == 1);
  CHECK(std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)) == 0);
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << " of " << want.size());
    if (Avg) CHECK(std::abs(double(fused[i]) - want[i]) <= 1e-5);
    else CHECK(double(fused[i]) == want[i]);
  }
}
}  // namespace

TEST_CASE("max_pool2d and avg_pool2d against a float64 reference", "[pooling]") {
  using P = fusor::pool2d_params;
  const std::vector<P> cases = {
      {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}},  // ResNet's stem
      {.kernel = {2, 2}, .stride = {2, 2}},
      {.kernel = {3, 3}},
      {.kernel = {3, 2}, .stride = {2, 1}, .padding = {0, 1, 2, 1}},  // asymmetric
      {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}, .ceil_mode = true},
      {.kernel = {2, 2}, .stride = {3, 3}, .ceil_mode = true},
      {.kernel = {3, 3}, .stride = {1, 2}, .padding = {2, 2, 2, 2}, .dilation = {2, 2}},
      {.kernel = {5, 5}, .stride = {2, 2}, .padding = {2, 2, 2, 2}, .count_include_pad = true},
      {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}, .ceil_mode = true, .count_include_pad = true},
      {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}, .layout = fusor::layout::nhwc},
      {.kernel = {2, 3}, .stride = {1, 2}, .padding = {1, 0, 0, 2}, .layout = fusor::layout::nhwc, .ceil_mode = true},
  };
  unsigned seed = 1;
  for (const auto& p : cases) {
    INFO("kernel " << p.kernel[0] << "x" << p.kernel[1] << " stride " << p.stride[0] << "x" << p.stride[1] << " pads "
                   << p.padding[0] << p.padding[1] << p.padding[2] << p.padding[3] << " ceil " << p.ceil_mode);
    for (auto [h, w] : {std::pair<index_t, index_t>{7, 9}, {8, 8}, {5, 12}}) {
      check_pool<false>(2, 3, h, w, p, seed++);
      check_pool<true>(2, 3, h, w, p, seed++);
    }
  }
}

TEST_CASE("pooling fuses its elementwise producers and consumers", "[pooling]") {
  const index_t N = 2, C = 4, H = 9, W = 9;
  const auto x = random_vec(std::size_t(N * C * H * W), 11);
  const auto r = random_vec(std::size_t(N * C * 5 * 5), 12);
  std::vector<float> scale{0.5f, -1.0f, 2.0f, 1.5f}, shift{0.1f, 0.2f, -0.3f, 0.0f};
  const auto xv = host_view(x.data(), N, C, H, W);
  const auto sv = host_view(scale.data(), C, 1, 1), bv = host_view(shift.data(), C, 1, 1);
  const auto rv = host_view(r.data(), N, C, 5, 5);
  const fusor::pool2d_params p{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}};
  // (batch_norm's affine form) -> relu -> max_pool2d -> + residual, in one kernel
  const auto e = fusor::max_pool2d(fusor::relu(xv * sv + bv), p) + rv;
  STATIC_REQUIRE(fusor::kernel_count<decltype(e)> == 1);
  std::vector<float> fused(r.size()), unfused(r.size());
  CHECK(fusor::run(host_view(fused.data(), N, C, 5, 5), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(host_view(unfused.data(), N, C, 5, 5), e, fusor::unfused()).kernels == 5);
  CHECK(std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)) == 0);
  // against the reference on the materialized producer
  std::vector<float> act(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t c = (i / std::size_t(H * W)) % std::size_t(C);
    act[i] = std::max(0.0f, x[i] * scale[c] + shift[c]);
  }
  index_t OH = 0, OW = 0;
  const auto want = ref_pool(act, N, C, H, W, p, false, OH, OW);
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(fused[i] == float(want[i] + double(r[i])));
  // a consumer that broadcasts the pooled value up is split off (2 kernels)
  const auto up = fusor::avg_pool2d(xv, {.kernel = {9, 9}}) * xv;
  std::vector<float> f2(x.size()), u2(x.size());
  const auto k2 = fusor::run(host_view(f2.data(), N, C, H, W), up, fusor::host()).kernels;
  CHECK(k2 == 2);
  fusor::run(host_view(u2.data(), N, C, H, W), up, fusor::unfused());
  CHECK(std::memcmp(f2.data(), u2.data(), f2.size() * sizeof(float)) == 0);
}

TEST_CASE("conv2d -> batch_norm -> relu -> max_pool2d (the ResNet stem)", "[pooling]") {
  const index_t N = 1, C = 3, K = 8, H = 16, W = 16;
  const auto x = random_vec(std::size_t(N * C * H * W), 21);
  const auto w = random_vec(std::size_t(K * C * 7 * 7), 22);
  std::vector<float> g(K, 1.5f), b(K, 0.25f), m(K, 0.1f), v(K, 2.0f);
  const auto xv = host_view(x.data(), N, C, H, W);
  const auto wv = host_view(w.data(), K, C, index_t(7), index_t(7));
  const auto e = fusor::max_pool2d(
      fusor::relu(fusor::batch_norm(fusor::conv2d(xv, wv, {.stride = {2, 2}, .padding = {3, 3, 3, 3}}), host_view(g.data(), K),
                                    host_view(b.data(), K), host_view(m.data(), K), host_view(v.data(), K))),
      {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}});
  std::vector<float> fused(std::size_t(N * K * 4 * 4)), unfused(fused.size());
  const auto ex = fusor::host();
  fusor::run(host_view(fused.data(), N, K, 4, 4), e, ex);  // (the first run also folds BN into the weights)
  CHECK(fusor::run(host_view(fused.data(), N, K, 4, 4), e, ex).kernels == 2);  // conv + BN + relu (one GEMM), the pool
  fusor::run(host_view(unfused.data(), N, K, 4, 4), e, fusor::unfused());
  // conv sums 147 products: fused (BN folded into the weights) and unfused
  // (BN after the conv) round differently; 1e-4 relative to the values' scale.
  for (std::size_t i = 0; i < fused.size(); ++i) CHECK(std::abs(fused[i] - unfused[i]) <= 1e-4f * (1 + std::abs(unfused[i])));
}

TEST_CASE("pooling: NaN, infinities, strided inputs, half and integers", "[pooling]") {
  const float inf = std::numeric_limits<float>::infinity(), qnan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {1, 2, qnan, 4, -inf, -inf, 7, inf, 9};
  std::vector<float> y(4);
  const auto xv = host_view(x.data(), 1, 1, 3, 3);
  fusor::run(host_view(y.data(), 1, 1, 2, 2), fusor::max_pool2d(xv, {.kernel = {2, 2}}), fusor::host());
  CHECK(y[0] == 4);
  CHECK(std::isnan(y[1]));
  CHECK(y[2] == inf);
  CHECK(y[3] == inf);
  fusor::run(host_view(y.data(), 1, 1, 2, 2), fusor::avg_pool2d(xv, {.kernel = {2, 2}}), fusor::host());
  CHECK(y[0] == -inf);
  CHECK(std::isnan(y[1]));
  CHECK(std::isnan(y[3]));  // -inf + inf
  std::vector<float> all_neg_inf(4, -inf), one(1);
  fusor::run(host_view(one.data(), 1, 1, 1, 1), fusor::max_pool2d(host_view(all_neg_inf.data(), 1, 1, 2, 2), {.kernel = {2, 2}}),
             fusor::host());
  CHECK(one[0] == -inf);

  // a strided input: NHWC memory read as NCHW through permute
  const index_t N = 2, C = 3, H = 6, W = 5;
  const auto d = random_vec(std::size_t(N * H * W * C), 31);
  const auto nhwc = host_view(d.data(), N, H, W, C);
  const fusor::pool2d_params p{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}};
  std::vector<float> a(std::size_t(N * C * 3 * 3)), b(a.size());
  fusor::run(host_view(a.data(), N, C, 3, 3), fusor::avg_pool2d(fusor::permute(nhwc, {0, 3, 1, 2}), p), fusor::host());
  auto q = p;
  q.layout = fusor::layout::nhwc;
  std::vector<float> bn(a.size());
  fusor::run(host_view(bn.data(), N, 3, 3, C), fusor::avg_pool2d(nhwc, q), fusor::host());
  for (index_t n = 0; n < N; ++n)
    for (index_t c = 0; c < C; ++c)
      for (index_t i = 0; i < 9; ++i) CHECK(a[std::size_t((n * C + c) * 9 + i)] == bn[std::size_t((n * 9 + i) * C + c)]);

  // half: max is exact, avg accumulates in fp32 and rounds once
  std::vector<__half> h(16), hy(4);
  for (int i = 0; i < 16; ++i) h[std::size_t(i)] = __float2half(0.1f * float(i) - 0.7f);
  fusor::run(host_view(hy.data(), 1, 1, 2, 2), fusor::max_pool2d(host_view(h.data(), 1, 1, 4, 4), {.kernel = {2, 2}, .stride = {2, 2}}),
             fusor::host());
  CHECK(__half2float(hy[0]) == __half2float(h[5]));
  CHECK(__half2float(hy[3]) == __half2float(h[15]));
  fusor::run(host_view(hy.data(), 1, 1, 2, 2), fusor::avg_pool2d(host_view(h.data(), 1, 1, 4, 4), {.kernel = {2, 2}, .stride = {2, 2}}),
             fusor::host());
  const float s0 = __half2float(h[0]) + __half2float(h[1]) + __half2float(h[4]) + __half2float(h[5]);
  CHECK(__half2float(hy[0]) == __half2float(__float2half(s0 / 4.0f)));

  // integers: max keeps the type, avg is f32
  std::vector<std::int32_t> iv = {1, -5, 3, 8};
  std::vector<std::int32_t> im(1);
  std::vector<float> fm(1);
  fusor::run(host_view(im.data(), 1, 1, 1, 1), fusor::max_pool2d(host_view(iv.data(), 1, 1, 2, 2), {.kernel = {2, 2}}), fusor::host());
  CHECK(im[0] == 8);
  fusor::run(host_view(fm.data(), 1, 1, 1, 1), fusor::avg_pool2d(host_view(iv.data(), 1, 1, 2, 2), {.kernel = {2, 2}}), fusor::host());
  CHECK(fm[0] == 1.75f);
}

TEST_CASE("pooling: auto_pad and global pooling", "[pooling]") {
  const index_t N = 2, C = 3, H = 7, W = 6;
  const auto x = random_vec(std::size_t(N * C * H * W), 41);
  const auto xv = host_view(x.data(), N, C, H, W);
  // SAME_UPPER with stride 2: output ceil(7 / 2) x ceil(6 / 2) = 4 x 3; pads (h: total 2 -> 1, 1; w: total 1 -> 0, 1)
  const auto same = fusor::max_pool2d(xv, {.kernel = {3, 3}, .stride = {2, 2}, .auto_pad = fusor::auto_pad_mode::same_upper});
  const auto expl = fusor::max_pool2d(xv, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 0, 1, 1}});
  CHECK(fusor::shape_of(same) == fusor::shape<4>{N, C, 4, 3});
  std::vector<float> a(std::size_t(N * C * 12)), b(a.size());
  fusor::run(host_view(a.data(), N, C, 4, 3), same, fusor::host());
  fusor::run(host_view(b.data(), N, C, 4, 3), expl, fusor::host());
  CHECK(a == b);
  // SAME_LOWER puts the odd pixel first
  const auto lower = fusor::avg_pool2d(xv, {.kernel = {2, 2}, .auto_pad = fusor::auto_pad_mode::same_lower});
  const auto lower_expl = fusor::avg_pool2d(xv, {.kernel = {2, 2}, .padding = {1, 1, 0, 0}});
  std::vector<float> c(x.size()), d(x.size());
  fusor::run(host_view(c.data(), N, C, H, W), lower, fusor::host());
  fusor::run(host_view(d.data(), N, C, H, W), lower_expl, fusor::host());
  CHECK(c == d);

  // global pooling: mean / max over H and W, kept as 1 x 1
  std::vector<float> gm(std::size_t(N * C)), gx(gm.size()), mm(gm.size());
  fusor::run(host_view(gm.data(), N, C, 1, 1), fusor::global_average_pool(xv), fusor::host());
  fusor::run(host_view(mm.data(), N, C, 1, 1), fusor::mean(xv, {2, 3}), fusor::host());
  CHECK(gm == mm);
  fusor::run(host_view(gx.data(), N, C, 1, 1), fusor::global_max_pool(xv), fusor::host());
  for (index_t i = 0; i < N * C; ++i) {
    float m = -INFINITY;
    for (index_t j = 0; j < H * W; ++j) m = std::max(m, x[std::size_t(i * H * W + j)]);
    CHECK(gx[std::size_t(i)] == m);
  }
  // NHWC global pooling
  std::vector<float> gn(std::size_t(N * C));
  fusor::run(host_view(gn.data(), N, 1, 1, C), fusor::global_average_pool(host_view(x.data(), N, H, W, C), fusor::layout::nhwc),
             fusor::host());
  std::vector<float> mn(gn.size());
  fusor::run(host_view(mn.data(), N, 1, 1, C), fusor::mean(host_view(x.data(), N, H, W, C), {1, 2}), fusor::host());
  CHECK(gn == mn);
}

TEST_CASE("pooling: bad parameters and shapes are errors, outputs untouched", "[pooling][errors]") {
  std::vector<float> x(2 * 3 * 4 * 4, 1.0f), y(2 * 3 * 2 * 2, -3.0f);
  const auto xv = host_view(x.data(), 2, 3, 4, 4);
  CHECK_THROWS_AS(fusor::max_pool2d(xv, {}), fusor::argument_error);  // no kernel
  CHECK_THROWS_WITH(fusor::max_pool2d(xv, {.kernel = {2, 2}, .stride = {0, 1}}), Catch::Contains("max_pool2d: stride[0] = 0"));
  CHECK_THROWS_WITH(fusor::avg_pool2d(xv, {.kernel = {2, 2}, .padding = {-1, 0, 0, 0}}), Catch::Contains("avg_pool2d: padding[0] = -1"));
  // a window larger than the padded input: no output
  CHECK_THROWS_WITH(fusor::shape_of(fusor::max_pool2d(xv, {.kernel = {5, 5}})), Catch::Contains("max_pool2d: the window"));
  CHECK_THROWS_AS(fusor::run(host_view(y.data(), 2, 3, 2, 2), fusor::max_pool2d(xv, {.kernel = {5, 5}}), fusor::host()),
                  fusor::shape_error);
  // an output of the wrong shape
  CHECK_THROWS_AS(fusor::run(host_view(y.data(), 2, 3, 2, 2), fusor::max_pool2d(xv, {.kernel = {2, 2}}), fusor::host()),
                  fusor::shape_error);
  for (float v : y) CHECK(v == -3.0f);
  // in place: a 3x3 window with stride 1 and padding 1 keeps the shape, but
  // reads neighbours a previous element may have overwritten: refused
  std::vector<float> z(2 * 3 * 4 * 4, 1.0f);
  const auto zv = host_view(z.data(), 2, 3, 4, 4);
  CHECK_THROWS_WITH(fusor::run(zv, fusor::max_pool2d(fusor::relu(zv), {.kernel = {3, 3}, .padding = {1, 1, 1, 1}}), fusor::host()),
                    Catch::Contains("reads at other positions than it writes"));
}

namespace {
/// The reference of max_pool2d_indices: per window, the first position (row
/// by row) holding the maximum (a NaN beats every number), as the flat index
/// of x's logical shape, row-major or with H and W swapped (column_major).
std::vector<std::int64_t> ref_indices(const std::vector<float>& x, index_t N, index_t C, index_t H, index_t W,
                                      const fusor::pool2d_params& p, bool column_major, index_t& OH, index_t& OW) {
  const bool nhwc = p.layout == fusor::layout::nhwc;
  OH = out_extent(H, p.kernel[0], p.stride[0], p.dilation[0], p.padding[0], p.padding[2], p.ceil_mode);
  OW = out_extent(W, p.kernel[1], p.stride[1], p.dilation[1], p.padding[1], p.padding[3], p.ceil_mode);
  const auto flat = [&](index_t n, index_t c, index_t h, index_t w) {
    if (nhwc) return ((n * H + h) * W + w) * C + c;
    return column_major ? ((n * C + c) * W + w) * H + h : ((n * C + c) * H + h) * W + w;
  };
  std::vector<std::int64_t> y(std::size_t(N * C * OH * OW));
  for (index_t n = 0; n < N; ++n)
    for (index_t c = 0; c < C; ++c)
      for (index_t oh = 0; oh < OH; ++oh)
        for (index_t ow = 0; ow < OW; ++ow) {
          std::int64_t best = -1;
          float bv = 0;
          for (index_t kh = 0; kh < p.kernel[0]; ++kh)
            for (index_t kw = 0; kw < p.kernel[1]; ++kw) {
              const index_t h = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
              const index_t w = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
              if (h < 0 || h >= H || w < 0 || w >= W) continue;
              const float v = x[std::size_t(nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w)];
              const bool take = best < 0 || (std::isnan(v) && !std::isnan(bv)) || (!std::isnan(bv) && v > bv);
              if (take) best = flat(n, c, h, w), bv = v;
            }
          const std::size_t o = std::size_t(nhwc ? ((n * OH + oh) * OW + ow) * C + c : ((n * C + c) * OH + oh) * OW + ow);
          y[o] = best;
        }
  return y;
}
}  // namespace

TEST_CASE("max_pool2d_indices: ONNX MaxPool's Indices (row- and column-major), ties, NaN, fused producers",
          "[pooling][indices]") {
  const index_t N = 2, C = 3, H = 9, W = 8;
  auto x = random_vec(std::size_t(N * C * H * W), 71);
  // Ties: a plateau of equal values (the first position in window order wins).
  for (index_t w = 0; w < W; ++w) x[std::size_t(2 * W + w)] = 1.5f;
  x[std::size_t(5 * W + 3)] = std::numeric_limits<float>::quiet_NaN();  // a NaN is the maximum of its windows
  const fusor::pool2d_params cases[] = {
      {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}},
      {.kernel = {2, 3}, .stride = {1, 2}, .padding = {0, 1, 1, 0}, .dilation = {2, 1}, .ceil_mode = true},
      {.kernel = {2, 2}, .stride = {2, 2}, .storage_order = 1},
      {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0, 1, 1}, .layout = fusor::layout::nhwc},
  };
  for (const auto& p : cases) {
    const bool nhwc = p.layout == fusor::layout::nhwc;
    CAPTURE(p.kernel[0], p.kernel[1], p.stride[0], p.stride[1], p.storage_order, nhwc);
    index_t OH = 0, OW = 0;
    const auto want = ref_indices(x, N, C, H, W, p, p.storage_order == 1, OH, OW);
    const auto X = nhwc ? host_view(x.data(), N, H, W, C) : host_view(x.data(), N, C, H, W);
    const auto e = fusor::max_pool2d_indices(X, p);
    STATIC_REQUIRE(std::is_same_v<fusor::value_t<decltype(e)>, std::int64_t>);
    std::vector<std::int64_t> got(want.size(), -7), got_u(want.size(), -7);
    const auto out = [&](std::vector<std::int64_t>& v) {
      return nhwc ? host_view(v.data(), N, OH, OW, C) : host_view(v.data(), N, C, OH, OW);
    };
    CHECK(fusor::run(out(got), e, fusor::host()).kernels == 1);
    CHECK(fusor::run(out(got_u), e, fusor::unfused()).kernels == 1);
    CHECK(got == want);
    CHECK(got_u == want);
    // The value at each index is max_pool2d's value (bitwise).
    std::vector<float> vals(want.size());
    fusor::run(nhwc ? host_view(vals.data(), N, OH, OW, C) : host_view(vals.data(), N, C, OH, OW), fusor::max_pool2d(X, p),
               fusor::host());
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (p.storage_order == 1) continue;  // (the column-major index is not an offset into x)
      const float at = x[std::size_t(got[i])];
      CHECK(std::memcmp(&at, &vals[i], sizeof at) == 0);
    }
  }
  SECTION("an elementwise producer is evaluated in the window loads: one kernel") {
    const fusor::pool2d_params p{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1, 1, 1}};
    std::vector<float> nx(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) nx[i] = -x[i];
    index_t OH = 0, OW = 0;
    const auto want = ref_indices(nx, N, C, H, W, p, false, OH, OW);
    std::vector<std::int64_t> got(want.size(), -7);
    CHECK(fusor::run(host_view(got.data(), N, C, OH, OW), fusor::max_pool2d_indices(-host_view(x.data(), N, C, H, W), p),
                     fusor::host())
              .kernels == 1);
    CHECK(got == want);
  }
  SECTION("storage_order other than 0, or 1 with nhwc, or any in avg_pool2d is an argument_error") {
    const auto X = host_view(x.data(), N, C, H, W);
    CHECK_THROWS_AS(fusor::max_pool2d_indices(X, {.kernel = {2, 2}, .storage_order = 2}), fusor::argument_error);
    CHECK_THROWS_AS(fusor::max_pool2d_indices(host_view(x.data(), N, H, W, C),
                                              {.kernel = {2, 2}, .layout = fusor::layout::nhwc, .storage_order = 1}),
                    fusor::argument_error);
    CHECK_NOTHROW(fusor::max_pool2d(X, {.kernel = {2, 2}, .storage_order = 1}));  // (ignored: it orders Indices)
    CHECK_THROWS_AS(fusor::avg_pool2d(X, {.kernel = {2, 2}, .storage_order = 1}), fusor::argument_error);
  }
}
