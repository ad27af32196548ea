// Contractions (matmul, linear, gemm, conv2d, transpose) and their fused
// prologues/epilogues on the host executor, checked three ways:
//   1. fused host() against the unfused() reference executor (bitwise where
//      no batch-norm folding is involved: both run the same tile algorithm
//      with k ascending and the same fp32 epilogue arithmetic);
//   2. against plain float64 loops written here (independent of fusor);
//   3. kernel counts: the compile-time plan and what run() reports.
//
// Tolerances (u = 2^-24, the fp32 unit roundoff; every bound is per element):
//  - DOT: a K-term dot product accumulated in fp32 (products rounded too)
//    errs by at most gamma_K * sum|a_k b_k| ~= K * u * sum|a_k b_k| (Higham,
//    Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 3.5). We
//    allow (K + 2) * u * sum|a_k b_k|: the +2 covers the bias add and alpha.
//  - EPI: an elementwise epilogue op rounds once (relu, scaling, residual,
//    clip: <= 1 ulp) or a few times (gelu, gelu_tanh, silu through erf, tanh,
//    exp: libm <= 4 ulp each); those errors are bounded by 16 u times the
//    magnitudes flowing through the epilogue, and an activation f propagates
//    the accumulator's error multiplied by sup|f'| <= 1.13 (GELU's maximum
//    slope 1.129; silu 1.1; relu 1).
//  - BN: folding computes W * k and (b - mean) * k + beta in fp32 (k = gamma
//    / sqrt(var + eps) rounded ~3 times), so each product term gets ~5 more
//    roundings: (K + 8) * u * |k| * sum|x w| + 16 u (|mean k| + |beta| + |y|).
//  - 16-bit inputs: operands are exact in fp32 (the reference reads the same
//    rounded inputs), accumulation is fp32 (DOT), then one rounding to the
//    output type: u16 * |y| with u16 = 2^-11 (half) or 2^-8 (bf16), plus,
//    in case the pre-activation z is rounded to 16 bits before the epilogue,
//    1.13 * u16 * |z|, plus the smallest subnormal step (half: 2^-24).
//  - Chains (LayerNorm -> linear, depthwise -> BN -> ReLU6 -> conv): the fp32
//    intermediate's own bound (LayerNorm: 16 u (|xhat gamma| + |beta|), as in
//    test_reductions.cpp; depthwise + BN: the BN bound above) is carried
//    through the consumer's dot product with weight |w|, plus DOT.
//  Worst errors / tolerance ratios are printed when FUSOR_TEST_REPORT is set.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using fusor::host_view;
using i64 = std::int64_t;
constexpr double u32 = 0x1p-24;
constexpr float sentinel = -12345.0f;
const float qnan = std::numeric_limits<float>::quiet_NaN();
const float inf = std::numeric_limits<float>::infinity();

// Worst error/tolerance ratio per check, printed at exit with FUSOR_TEST_REPORT=1.
struct error_report {
  std::map<std::string, std::pair<double, double>> worst;  // what -> (ratio, abs error)
  ~error_report() {
    if (!std::getenv("FUSOR_TEST_REPORT")) return;
    for (const auto& [what, r] : worst) std::fprintf(stderr, "%-60s max err/tol %.3g  max |err| %.3g\n", what.c_str(), r.first, r.second);
  }
  void note(const std::string& what, double ratio, double err) {
    auto& w = worst[what];
    w.first = std::max(w.first, ratio);
    w.second = std::max(w.second, err);
  }
};
error_report report;

std::vector<float> rnd(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

// A float64 reference value and the tolerance allowed for fusor's fp32 result.
struct reference {
  std::vector<double> val, tol;
};

float to_f(float x) { return x; }
double to_f(double x) { return x; }
float to_f(__half x) { return __half2float(x); }
float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }

// got vs ref: NaN where ref is NaN, the same infinity where ref is infinite,
// |got - ref| <= tol elsewhere. Reports the worst element.
template <class T>
void check_close(const std::string& what, const std::vector<T>& got_t, const reference& ref) {
  INFO(what);
  REQUIRE(got_t.size() == ref.val.size());
  std::size_t bad = 0, worst = 0;
  double worst_ratio = 0, worst_err = 0;
  for (std::size_t i = 0; i < got_t.size(); ++i) {
    const double got = to_f(got_t[i]), want = ref.val[i];
    bool ok;
    if (std::isnan(want)) {
      ok = std::isnan(got);
    } else if (std::isinf(want)) {
      ok = got == want;
    } else {
      const double err = std::abs(got - want);
      ok = err <= ref.tol[i];
      const double ratio = err == 0 ? 0 : (ref.tol[i] > 0 && !std::isnan(err) ? err / ref.tol[i] : INFINITY);
      if (!(ratio <= worst_ratio)) worst_ratio = ratio, worst = i;
      worst_err = std::max(worst_err, std::isnan(err) ? INFINITY : err);
    }
    if (!ok) {
      if (bad < 3) UNSCOPED_INFO("element " << i << ": got " << got << ", float64 reference " << want << ", tol " << ref.tol[i]);
      ++bad;
    }
  }
  INFO("worst element " << worst << ": err/tol = " << worst_ratio);
  CHECK(bad == 0);
  report.note(what, worst_ratio, worst_err);
}

// Same bits, or both NaN.
template <class T>
bool same_value(T a, T b) {
  const float fa = to_f(a), fb = to_f(b);
  if (std::isnan(fa) || std::isnan(fb)) return std::isnan(fa) && std::isnan(fb);
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}
template <class T>
void check_bitwise(const std::string& what, const std::vector<T>& a, const std::vector<T>& b) {
  INFO(what);
  REQUIRE(a.size() == b.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_value(a[i], b[i])) {
      if (bad < 3) UNSCOPED_INFO("element " << i << ": " << to_f(a[i]) << " vs " << to_f(b[i]));
      ++bad;
    }
  CHECK(bad == 0);
}
// |a - b| <= tol[i] (two fp32 results that may differ by rounding).
void check_near(const std::string& what, const std::vector<float>& a, const std::vector<float>& b, const std::vector<double>& tol) {
  INFO(what);
  REQUIRE(a.size() == b.size());
  std::size_t bad = 0;
  double worst = 0, worst_err = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double e = std::abs(double(a[i]) - double(b[i]));
    if (!(e <= tol[i]) && !(std::isnan(a[i]) && std::isnan(b[i]))) {
      if (bad < 3) UNSCOPED_INFO("element " << i << ": " << a[i] << " vs " << b[i] << ", tol " << tol[i]);
      ++bad;
    }
    if (tol[i] > 0) worst = std::max(worst, e / tol[i]);
    if (!std::isnan(e)) worst_err = std::max(worst_err, e);
  }
  CHECK(bad == 0);
  report.note(what, worst, worst_err);
}

// ---------------------------------------------------------------- float64 references
// C[b, i, j] = sum_k A(b, i, k) B(b, k, j); mag = sum_k |A B|.
struct dot_ref {
  i64 K = 0;
  std::vector<double> val, mag;
};
template <class FA, class FB>
dot_ref gemm_ref(i64 batches, i64 M, i64 N, i64 K, FA a, FB b) {
  dot_ref r;
  r.K = K;
  r.val.resize(std::size_t(batches * M * N));
  r.mag.resize(r.val.size());
  for (i64 bb = 0; bb < batches; ++bb)
    for (i64 i = 0; i < M; ++i)
      for (i64 j = 0; j < N; ++j) {
        double s = 0, m = 0;
        for (i64 k = 0; k < K; ++k) {
          const double t = double(a(bb, i, k)) * double(b(bb, k, j));
          s += t;
          m += std::abs(t);
        }
        r.val[std::size_t((bb * M + i) * N + j)] = s;
        r.mag[std::size_t((bb * M + i) * N + j)] = m;
      }
  return r;
}
double dot_tol(const dot_ref& r, std::size_t i) { return double(r.K + 2) * u32 * r.mag[i]; }

double relu_d(double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }
double gelu_d(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_d(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
double silu_d(double x) { return x / (1.0 + std::exp(-x)); }

// Conv2d geometry (NCHW logical order; weights OIHW).
struct conv_geom {
  i64 n, c, h, w, cout, kh, kw;
  i64 sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, dh = 1, dw = 1, groups = 1;
  i64 ho() const { return (h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  i64 wo() const { return (w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
  i64 x_size() const { return n * c * h * w; }
  i64 w_size() const { return cout * (c / groups) * kh * kw; }
  i64 out_size() const { return n * cout * ho() * wo(); }
  i64 K() const { return (c / groups) * kh * kw; }
  fusor::conv2d_params params(fusor::layout l = fusor::layout::nchw) const {
    fusor::conv2d_params p;
    p.stride[0] = sh, p.stride[1] = sw;
    p.padding[0] = pt, p.padding[1] = pl, p.padding[2] = pb, p.padding[3] = pr;
    p.dilation[0] = dh, p.dilation[1] = dw;
    p.groups = groups;
    p.layout = l;
    return p;
  }
};
// NCHW output without bias; x NCHW (any value type convertible to double).
template <class X, class W>
dot_ref conv_ref(const conv_geom& g, const std::vector<X>& x, const std::vector<W>& w) {
  dot_ref r;
  r.K = g.K();
  const i64 ho = g.ho(), wo = g.wo(), cg = g.c / g.groups, og = g.cout / g.groups;
  r.val.assign(std::size_t(g.out_size()), 0.0);
  r.mag.assign(r.val.size(), 0.0);
  for (i64 nn = 0; nn < g.n; ++nn)
    for (i64 co = 0; co < g.cout; ++co)
      for (i64 oh = 0; oh < ho; ++oh)
        for (i64 ow = 0; ow < wo; ++ow) {
          double s = 0, m = 0;
          const i64 grp = co / og;
          for (i64 ci = 0; ci < cg; ++ci)
            for (i64 r0 = 0; r0 < g.kh; ++r0)
              for (i64 s0 = 0; s0 < g.kw; ++s0) {
                const i64 ih = oh * g.sh - g.pt + r0 * g.dh, iw = ow * g.sw - g.pl + s0 * g.dw;
                if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                const double t = double(to_f(x[std::size_t(((nn * g.c + grp * cg + ci) * g.h + ih) * g.w + iw)])) *
                                 double(to_f(w[std::size_t(((co * cg + ci) * g.kh + r0) * g.kw + s0)]));
                s += t;
                m += std::abs(t);
              }
          const std::size_t o = std::size_t(((nn * g.cout + co) * ho + oh) * wo + ow);
          r.val[o] = s;
          r.mag[o] = m;
        }
  return r;
}
template <class T>
std::vector<T> nchw_to_nhwc(const std::vector<T>& v, i64 n, i64 c, i64 h, i64 w) {
  std::vector<T> o(v.size());
  for (i64 a = 0; a < n; ++a)
    for (i64 b = 0; b < c; ++b)
      for (i64 y = 0; y < h; ++y)
        for (i64 x = 0; x < w; ++x) o[std::size_t(((a * h + y) * w + x) * c + b)] = v[std::size_t(((a * c + b) * h + y) * w + x)];
  return o;
}
template <class T>
std::vector<T> nhwc_to_nchw(const std::vector<T>& v, i64 n, i64 c, i64 h, i64 w) {
  std::vector<T> o(v.size());
  for (i64 a = 0; a < n; ++a)
    for (i64 b = 0; b < c; ++b)
      for (i64 y = 0; y < h; ++y)
        for (i64 x = 0; x < w; ++x) o[std::size_t(((a * c + b) * h + y) * w + x)] = v[std::size_t(((a * h + y) * w + x) * c + b)];
  return o;
}

// Runs e into fresh outputs (filled with `sentinel`) on host() and unfused().
struct both {
  std::vector<float> fused, unfused;
  std::size_t kf = 0, ku = 0;
};
template <class E, class... I>
both run_both(const E& e, I... dims) {
  const std::size_t n = (std::size_t(dims) * ... * std::size_t(1));
  both r{std::vector<float>(n, sentinel), std::vector<float>(n, sentinel)};
  r.kf = fusor::run(host_view(r.fused.data(), dims...), e, fusor::host()).kernels;
  r.ku = fusor::run(host_view(r.unfused.data(), dims...), e, fusor::unfused()).kernels;
  return r;
}

// Reference from a dot_ref through an elementwise epilogue f(z) (z = dot +
// bias), Lipschitz constant L, with the EPI tolerance.
template <class Bias, class F>
reference epilogue_ref(const dot_ref& d, Bias bias, F f, double L) {
  reference r;
  for (std::size_t i = 0; i < d.val.size(); ++i) {
    const double z = d.val[i] + bias(i);
    const double y = f(z, i);
    r.val.push_back(y);
    r.tol.push_back(L * dot_tol(d, i) + 16 * u32 * (std::abs(z) + std::abs(y)));
  }
  return r;
}
auto no_bias = [](std::size_t) { return 0.0; };
auto identity = [](double z, std::size_t) { return z; };

}  // namespace

// =====================================================================================
TEST_CASE("matmul 2-D: sizes around the 64x64 output tile and the 16-deep K tile", "[contraction][matmul]") {
  for (i64 M : {1, 63, 64, 65})
    for (i64 N : {1, 63, 64, 65})
      for (i64 K : {1, 15, 16, 17, 33}) {
        INFO("M " << M << " N " << N << " K " << K);
        const auto a = rnd(std::size_t(M * K), unsigned(M * 1000 + K)), b = rnd(std::size_t(K * N), unsigned(N * 7 + K));
        const auto A = host_view(a.data(), M, K);
        const auto B = host_view(b.data(), K, N);
        const auto e = fusor::matmul(A, B);
        const both r = run_both(e, M, N);
        CHECK(r.kf == 1);
        CHECK(r.ku == 1);
        check_bitwise("matmul fused vs unfused", r.fused, r.unfused);
        const auto d = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return a[std::size_t(i * K + k)]; },
                                [&](i64, i64 k, i64 j) { return b[std::size_t(k * N + j)]; });
        check_close("matmul 2-D vs float64", r.fused, epilogue_ref(d, no_bias, identity, 1.0));
      }
  STATIC_REQUIRE(fusor::kernel_count<decltype(fusor::matmul(host_view((float*)nullptr, 1, 1), host_view((float*)nullptr, 1, 1))),
                                     fusor::host_policy> == 1);
}

TEST_CASE("matmul: 1x1, 1xK row vector and a long K", "[contraction][matmul]") {
  for (auto [M, K, N] : {std::array<i64, 3>{1, 1, 1}, {1, 300, 1}, {1, 37, 70}, {70, 1, 3}, {3, 1000, 5}}) {
    INFO("M " << M << " K " << K << " N " << N);
    const auto a = rnd(std::size_t(M * K), 11), b = rnd(std::size_t(K * N), 12);
    const both r = run_both(fusor::matmul(host_view(a.data(), M, K), host_view(b.data(), K, N)), M, N);
    check_bitwise("matmul small fused vs unfused", r.fused, r.unfused);
    const auto d = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return a[std::size_t(i * K + k)]; },
                            [&](i64, i64 k, i64 j) { return b[std::size_t(k * N + j)]; });
    check_close("matmul small vs float64", r.fused, epilogue_ref(d, no_bias, identity, 1.0));
  }
}

TEST_CASE("batched matmul with broadcast batch dims", "[contraction][matmul]") {
  SECTION("[2,1,5,7] @ [3,7,4] -> [2,3,5,4]") {
    const auto a = rnd(2 * 5 * 7, 1), b = rnd(3 * 7 * 4, 2);
    const auto e = fusor::matmul(host_view(a.data(), 2, 1, 5, 7), host_view(b.data(), 3, 7, 4));
    const both r = run_both(e, 2, 3, 5, 4);
    CHECK(r.kf == 1);
    check_bitwise("bmm fused vs unfused", r.fused, r.unfused);
    const auto d = gemm_ref(6, 5, 4, 7, [&](i64 bb, i64 i, i64 k) { return a[std::size_t(((bb / 3) * 5 + i) * 7 + k)]; },
                            [&](i64 bb, i64 k, i64 j) { return b[std::size_t(((bb % 3) * 7 + k) * 4 + j)]; });
    check_close("bmm [2,1,5,7]@[3,7,4] vs float64", r.fused, epilogue_ref(d, no_bias, identity, 1.0));
  }
  SECTION("[4,3,65,17] @ [17,66] (rank 4 x rank 2)") {
    const auto a = rnd(4 * 3 * 65 * 17, 3), b = rnd(17 * 66, 4);
    const both r = run_both(fusor::matmul(host_view(a.data(), 4, 3, 65, 17), host_view(b.data(), 17, 66)), 4, 3, 65, 66);
    check_bitwise("bmm rank4 x rank2 fused vs unfused", r.fused, r.unfused);
    const auto d = gemm_ref(12, 65, 66, 17, [&](i64 bb, i64 i, i64 k) { return a[std::size_t((bb * 65 + i) * 17 + k)]; },
                            [&](i64, i64 k, i64 j) { return b[std::size_t(k * 66 + j)]; });
    check_close("bmm [4,3,65,17]@[17,66] vs float64", r.fused, epilogue_ref(d, no_bias, identity, 1.0));
  }
  SECTION("[5,7] @ [2,1,7,3] -> [2,1,5,3] and [1,3,4,5] @ [2,1,5,6] -> [2,3,4,6]") {
    const auto a = rnd(5 * 7, 5), b = rnd(2 * 7 * 3, 6);
    const both r = run_both(fusor::matmul(host_view(a.data(), 5, 7), host_view(b.data(), 2, 1, 7, 3)), 2, 1, 5, 3);
    check_bitwise("bmm rank2 x rank4 fused vs unfused", r.fused, r.unfused);
    const auto d = gemm_ref(2, 5, 3, 7, [&](i64, i64 i, i64 k) { return a[std::size_t(i * 7 + k)]; },
                            [&](i64 bb, i64 k, i64 j) { return b[std::size_t((bb * 7 + k) * 3 + j)]; });
    check_close("bmm [5,7]@[2,1,7,3] vs float64", r.fused, epilogue_ref(d, no_bias, identity, 1.0));

    const auto a2 = rnd(3 * 4 * 5, 7), b2 = rnd(2 * 5 * 6, 8);
    const both r2 = run_both(fusor::matmul(host_view(a2.data(), 1, 3, 4, 5), host_view(b2.data(), 2, 1, 5, 6)), 2, 3, 4, 6);
    check_bitwise("bmm both broadcast fused vs unfused", r2.fused, r2.unfused);
    const auto d2 = gemm_ref(6, 4, 6, 5, [&](i64 bb, i64 i, i64 k) { return a2[std::size_t(((bb % 3) * 4 + i) * 5 + k)]; },
                             [&](i64 bb, i64 k, i64 j) { return b2[std::size_t(((bb / 3) * 5 + k) * 6 + j)]; });
    check_close("bmm [1,3,4,5]@[2,1,5,6] vs float64", r2.fused, epilogue_ref(d2, no_bias, identity, 1.0));
  }
}

TEST_CASE("matmul with transpose(view) and with strided (non-contiguous) views", "[contraction][matmul]") {
  const i64 M = 67, K = 19, N = 65;
  const auto x = rnd(std::size_t(M * K), 21), wt = rnd(std::size_t(N * K), 22), at = rnd(std::size_t(K * M), 23);
  const auto ref_xw = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return x[std::size_t(i * K + k)]; },
                               [&](i64, i64 k, i64 j) { return wt[std::size_t(j * K + k)]; });
  SECTION("matmul(x, transpose(W)) (W [N, K], the linear form)") {
    const auto e = fusor::matmul(host_view(x.data(), M, K), fusor::transpose(host_view(wt.data(), N, K)));
    STATIC_REQUIRE(fusor::kernel_count<decltype(e), fusor::host_policy> == 1);
    const both r = run_both(e, M, N);
    CHECK(r.kf == 1);
    CHECK(r.ku == 1);
    check_bitwise("matmul(x, transpose(W)) fused vs unfused", r.fused, r.unfused);
    check_close("matmul(x, transpose(W)) vs float64", r.fused, epilogue_ref(ref_xw, no_bias, identity, 1.0));
    // ... and + b: the bias add is part of the kernel.
    const auto bias = rnd(std::size_t(N), 24);
    const auto e2 = fusor::matmul(host_view(x.data(), M, K), fusor::transpose(host_view(wt.data(), N, K))) + host_view(bias.data(), N);
    const both r2 = run_both(e2, M, N);
    CHECK(r2.kf == 1);
    check_bitwise("matmul(x, transpose(W)) + b fused vs unfused", r2.fused, r2.unfused);
    check_close("matmul(x, transpose(W)) + b vs float64", r2.fused,
                epilogue_ref(ref_xw, [&](std::size_t i) { return double(bias[i % std::size_t(N)]); }, identity, 1.0));
  }
  SECTION("matmul(transpose(At), B) and matmul(transpose(At), transpose(W))") {
    const auto b = rnd(std::size_t(K * N), 25);
    const both r = run_both(fusor::matmul(fusor::transpose(host_view(at.data(), K, M)), host_view(b.data(), K, N)), M, N);
    check_bitwise("matmul(transpose(At), B) fused vs unfused", r.fused, r.unfused);
    const auto d = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return at[std::size_t(k * M + i)]; },
                            [&](i64, i64 k, i64 j) { return b[std::size_t(k * N + j)]; });
    check_close("matmul(transpose(At), B) vs float64", r.fused, epilogue_ref(d, no_bias, identity, 1.0));
    const both r2 = run_both(
        fusor::matmul(fusor::transpose(host_view(at.data(), K, M)), fusor::transpose(host_view(wt.data(), N, K))), M, N);
    check_bitwise("matmul(transpose, transpose) fused vs unfused", r2.fused, r2.unfused);
    const auto d2 = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return at[std::size_t(k * M + i)]; },
                             [&](i64, i64 k, i64 j) { return wt[std::size_t(j * K + k)]; });
    check_close("matmul(transpose, transpose) vs float64", r2.fused, epilogue_ref(d2, no_bias, identity, 1.0));
  }
  SECTION("batched transpose: [3, M, K] @ transpose([3, N, K])") {
    const i64 Bt = 3, m = 9, k = 17, n = 66;
    const auto a = rnd(std::size_t(Bt * m * k), 26), w = rnd(std::size_t(Bt * n * k), 27);
    const both r = run_both(fusor::matmul(host_view(a.data(), Bt, m, k), fusor::transpose(host_view(w.data(), Bt, n, k))), Bt, m, n);
    check_bitwise("batched transpose fused vs unfused", r.fused, r.unfused);
    const auto d = gemm_ref(Bt, m, n, k, [&](i64 bb, i64 i, i64 kk) { return a[std::size_t((bb * m + i) * k + kk)]; },
                            [&](i64 bb, i64 kk, i64 j) { return w[std::size_t((bb * n + j) * k + kk)]; });
    check_close("batched transpose vs float64", r.fused, epilogue_ref(d, no_bias, identity, 1.0));
  }
  SECTION("strided views: a column block of a wider matrix, column-major B, every other row") {
    const i64 lda = K + 5;  // A is columns [3, 3 + K) of a [M, K + 5] buffer
    std::vector<float> abuf = rnd(std::size_t(M * lda), 28);
    const auto A = host_view(abuf.data() + 3, fusor::dextents<2>(M, K), fusor::shape<2>{lda, 1});
    std::vector<float> bcm = rnd(std::size_t(K * N), 29);  // B column-major: B(k, j) = bcm[j * K + k]
    const auto B = host_view(bcm.data(), fusor::dextents<2>(K, N), fusor::shape<2>{1, K});
    CHECK(!A.is_contiguous());
    CHECK(!B.is_contiguous());
    const both r = run_both(fusor::matmul(A, B), M, N);
    check_bitwise("strided matmul fused vs unfused", r.fused, r.unfused);
    const auto d = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return abuf[std::size_t(i * lda + 3 + k)]; },
                            [&](i64, i64 k, i64 j) { return bcm[std::size_t(j * K + k)]; });
    check_close("strided matmul vs float64", r.fused, epilogue_ref(d, no_bias, identity, 1.0));

    // Every other row of a [2M, K] buffer, and a strided output (every other column of [M, 2N]).
    std::vector<float> rows = rnd(std::size_t(2 * M * K), 30);
    const auto A2 = host_view(rows.data(), fusor::dextents<2>(M, K), fusor::shape<2>{2 * K, 1});
    const auto bb = rnd(std::size_t(K * N), 31);
    std::vector<float> out(std::size_t(M * 2 * N), sentinel), outu(out);
    const auto O = host_view(out.data(), fusor::dextents<2>(M, N), fusor::shape<2>{2 * N, 2});
    const auto OU = host_view(outu.data(), fusor::dextents<2>(M, N), fusor::shape<2>{2 * N, 2});
    CHECK(fusor::run(O, fusor::relu(fusor::matmul(A2, host_view(bb.data(), K, N))), fusor::host()).kernels == 1);
    fusor::run(OU, fusor::relu(fusor::matmul(A2, host_view(bb.data(), K, N))), fusor::unfused());
    check_bitwise("row-strided A, column-strided output: fused vs unfused", out, outu);
    const auto d2 = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return rows[std::size_t(i * 2 * K + k)]; },
                             [&](i64, i64 k, i64 j) { return bb[std::size_t(k * N + j)]; });
    const reference ref = epilogue_ref(d2, no_bias, [](double z, std::size_t) { return relu_d(z); }, 1.0);
    std::vector<float> picked, gaps_ok;
    std::size_t gaps_touched = 0;
    for (i64 i = 0; i < M; ++i)
      for (i64 j = 0; j < 2 * N; ++j) {
        if (j % 2 == 0) picked.push_back(out[std::size_t(i * 2 * N + j)]);
        else gaps_touched += out[std::size_t(i * 2 * N + j)] != sentinel;
      }
    CHECK(gaps_touched == 0);  // elements between the output's strides are not written
    check_close("row-strided A, strided output vs float64", picked, ref);
  }
}

TEST_CASE("linear: 3-D input, with and without bias", "[contraction][linear]") {
  const i64 B0 = 2, S = 5, K = 19, N = 23;
  const auto x = rnd(std::size_t(B0 * S * K), 41), w = rnd(std::size_t(N * K), 42), b = rnd(std::size_t(N), 43);
  const auto X = host_view(x.data(), B0, S, K);
  const auto W = host_view(w.data(), N, K);
  const auto Bv = host_view(b.data(), N);
  const auto d = gemm_ref(1, B0 * S, N, K, [&](i64, i64 i, i64 k) { return x[std::size_t(i * K + k)]; },
                          [&](i64, i64 k, i64 j) { return w[std::size_t(j * K + k)]; });
  {
    const auto e = fusor::linear(X, W, Bv);
    STATIC_REQUIRE(fusor::kernel_count<decltype(e), fusor::host_policy> == 1);
    STATIC_REQUIRE(fusor::unfused_kernel_count<decltype(e)> == 1);
    const both r = run_both(e, B0, S, N);
    CHECK(r.kf == 1);
    CHECK(r.ku == 1);
    check_bitwise("linear 3-D + bias fused vs unfused", r.fused, r.unfused);
    check_close("linear 3-D + bias vs float64", r.fused, epilogue_ref(d, [&](std::size_t i) { return double(b[i % std::size_t(N)]); }, identity, 1.0));
  }
  {
    const both r = run_both(fusor::linear(X, W), B0, S, N);
    CHECK(r.kf == 1);
    check_bitwise("linear 3-D no bias fused vs unfused", r.fused, r.unfused);
    check_close("linear 3-D no bias vs float64", r.fused, epilogue_ref(d, no_bias, identity, 1.0));
  }
  {  // 4-D input, rows crossing the 64-row tile, N crossing the 64-column tile
    const i64 a0 = 2, a1 = 3, a2 = 11, k = 33, n = 70;
    const auto x4 = rnd(std::size_t(a0 * a1 * a2 * k), 44), w4 = rnd(std::size_t(n * k), 45), b4 = rnd(std::size_t(n), 46);
    const both r = run_both(fusor::linear(host_view(x4.data(), a0, a1, a2, k), host_view(w4.data(), n, k), host_view(b4.data(), n)),
                            a0, a1, a2, n);
    check_bitwise("linear 4-D fused vs unfused", r.fused, r.unfused);
    const auto d4 = gemm_ref(1, a0 * a1 * a2, n, k, [&](i64, i64 i, i64 kk) { return x4[std::size_t(i * k + kk)]; },
                             [&](i64, i64 kk, i64 j) { return w4[std::size_t(j * k + kk)]; });
    check_close("linear 4-D vs float64", r.fused, epilogue_ref(d4, [&](std::size_t i) { return double(b4[i % std::size_t(n)]); }, identity, 1.0));
  }
}

TEST_CASE("gemm: every trans_a/trans_b, alpha/beta, C absent/scalar/[N]/[1,N]/[M,1]/[M,N]", "[contraction][gemm]") {
  for (auto [M, K, N] : {std::array<i64, 3>{13, 11, 10}, {70, 17, 65}}) {
    const auto a = rnd(std::size_t(M * K), 51), b = rnd(std::size_t(K * N), 52), cmn = rnd(std::size_t(M * N), 53),
               cn = rnd(std::size_t(N), 54), cm = rnd(std::size_t(M), 55);
    const float cs = 0.625f;
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (auto [alpha, beta] : {std::pair<float, float>{1.0f, 1.0f}, {0.5f, 2.0f}, {-1.25f, 0.0f}, {0.0f, 0.75f}}) {
          // A stored [M,K] or [K,M]; B stored [K,N] or [N,K]; same logical op(A), op(B).
          std::vector<float> as(a.size()), bs(b.size());
          for (i64 i = 0; i < M; ++i)
            for (i64 k = 0; k < K; ++k) as[std::size_t(ta ? k * M + i : i * K + k)] = a[std::size_t(i * K + k)];
          for (i64 k = 0; k < K; ++k)
            for (i64 j = 0; j < N; ++j) bs[std::size_t(tb ? j * K + k : k * N + j)] = b[std::size_t(k * N + j)];
          const auto A = ta ? host_view(as.data(), K, M) : host_view(as.data(), M, K);
          const auto B = tb ? host_view(bs.data(), N, K) : host_view(bs.data(), K, N);
          const fusor::gemm_params p{alpha, beta, ta, tb};
          const auto d = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return a[std::size_t(i * K + k)]; },
                                  [&](i64, i64 k, i64 j) { return b[std::size_t(k * N + j)]; });
          auto check_c = [&](const char* cname, const auto& e, auto c_at) {
            INFO("M " << M << " K " << K << " N " << N << " trans_a " << ta << " trans_b " << tb << " alpha " << alpha
                      << " beta " << beta << " C " << cname);
            const both r = run_both(e, M, N);
            CHECK(r.kf == 1);
            CHECK(r.ku == 1);
            check_bitwise("gemm fused vs unfused", r.fused, r.unfused);
            reference ref;
            for (std::size_t i = 0; i < d.val.size(); ++i) {
              const double bc = double(beta) * c_at(i), v = double(alpha) * d.val[i] + bc;
              ref.val.push_back(v);
              // DOT scaled by |alpha|, then alpha*acc, beta*C and the add: 3 roundings.
              ref.tol.push_back(std::abs(alpha) * dot_tol(d, i) + 4 * u32 * (std::abs(alpha * d.val[i]) + std::abs(bc) + std::abs(v)));
            }
            check_close("gemm vs float64", r.fused, ref);
          };
          const std::size_t n = std::size_t(N);
          check_c("absent", fusor::gemm(A, B, nullptr, p), [&](std::size_t) { return 0.0; });
          // (A scalar C was silently ignored at 1b5bb45 -- the absent-C marker was scalar<float> -- fixed in 3aa6b5f.)
          check_c("scalar", fusor::gemm(A, B, cs, p), [&](std::size_t) { return double(cs); });
          check_c("[N]", fusor::gemm(A, B, host_view(cn.data(), N), p), [&](std::size_t i) { return double(cn[i % n]); });
          check_c("[1,N]", fusor::gemm(A, B, host_view(cn.data(), 1, N), p), [&](std::size_t i) { return double(cn[i % n]); });
          check_c("[M,1]", fusor::gemm(A, B, host_view(cm.data(), M, 1), p), [&](std::size_t i) { return double(cm[i / n]); });
          check_c("[M,N]", fusor::gemm(A, B, host_view(cmn.data(), M, N), p), [&](std::size_t i) { return double(cmn[i]); });
        }
  }
}

// =====================================================================================
namespace {
// Runs conv2d(x, w, b, g) in NCHW and NHWC on host() and unfused(): all four
// results must be bitwise equal (same k order in both layouts), and equal to
// the float64 reference within DOT.
template <class BiasArg>
void conv_layouts(const std::string& what, const conv_geom& g, unsigned seed, BiasArg) {
  INFO(what);
  const auto x = rnd(std::size_t(g.x_size()), seed), w = rnd(std::size_t(g.w_size()), seed + 1),
             b = rnd(std::size_t(g.cout), seed + 2);
  const auto xh = nchw_to_nhwc(x, g.n, g.c, g.h, g.w);
  const i64 ho = g.ho(), wo = g.wo();
  const auto W = host_view(w.data(), g.cout, g.c / g.groups, g.kh, g.kw);
  const auto Xc = host_view(x.data(), g.n, g.c, g.h, g.w);
  const auto Xh = host_view(xh.data(), g.n, g.h, g.w, g.c);
  both nchw, nhwc;
  if constexpr (BiasArg::value) {
    const auto Bv = host_view(b.data(), g.cout);
    nchw = run_both(fusor::conv2d(Xc, W, Bv, g.params()), g.n, g.cout, ho, wo);
    nhwc = run_both(fusor::conv2d(Xh, W, Bv, g.params(fusor::layout::nhwc)), g.n, ho, wo, g.cout);
  } else {
    nchw = run_both(fusor::conv2d(Xc, W, nullptr, g.params()), g.n, g.cout, ho, wo);
    nhwc = run_both(fusor::conv2d(Xh, W, nullptr, g.params(fusor::layout::nhwc)), g.n, ho, wo, g.cout);
  }
  CHECK(nchw.kf == 1);
  CHECK(nchw.ku == 1);
  CHECK(nhwc.kf == 1);
  check_bitwise("conv2d NCHW fused vs unfused", nchw.fused, nchw.unfused);
  check_bitwise("conv2d NHWC fused vs unfused", nhwc.fused, nhwc.unfused);
  check_bitwise("conv2d NCHW vs NHWC (permuted back)", nchw.fused, nhwc_to_nchw(nhwc.fused, g.n, g.cout, ho, wo));
  const auto d = conv_ref(g, x, w);
  const std::size_t plane = std::size_t(ho * wo);
  check_close("conv2d vs float64", nchw.fused,
              epilogue_ref(d, [&](std::size_t i) { return BiasArg::value ? double(b[(i / plane) % std::size_t(g.cout)]) : 0.0; }, identity, 1.0));
}
}  // namespace

TEST_CASE("conv2d NCHW and NHWC: stride, asymmetric padding, dilation, groups, bias, 1x1, depthwise", "[contraction][conv]") {
  SECTION("groups 4, stride (2,1), padding {1,0,2,1}, bias") {
    conv_geom g{2, 8, 9, 7, 12, 3, 3};
    g.sh = 2, g.sw = 1, g.pt = 1, g.pl = 0, g.pb = 2, g.pr = 1, g.groups = 4;
    conv_layouts("grouped asymmetric", g, 100, std::true_type{});
    conv_layouts("grouped asymmetric, no bias", g, 110, std::false_type{});
  }
  SECTION("dilation 2, padding 2") {
    conv_geom g{1, 6, 11, 10, 5, 3, 3};
    g.dh = g.dw = 2, g.pt = g.pl = g.pb = g.pr = 2;
    conv_layouts("dilated", g, 120, std::true_type{});
  }
  SECTION("dilation (2,1), stride 2, groups 2, no bias, 2x3 kernel") {
    conv_geom g{2, 4, 10, 9, 6, 2, 3};
    g.dh = 2, g.dw = 1, g.sh = g.sw = 2, g.pt = 0, g.pl = 1, g.pb = 1, g.pr = 0, g.groups = 2;
    conv_layouts("dilated grouped", g, 130, std::false_type{});
  }
  SECTION("1x1 pointwise crossing the M, N and K tiles") {
    conv_geom g{2, 33, 6, 7, 70, 1, 1};
    conv_layouts("pointwise", g, 140, std::true_type{});
  }
  SECTION("3x3 crossing all tiles (M = 162, Cout = 70, K = 144)") {
    conv_geom g{2, 16, 9, 9, 70, 3, 3};
    g.pt = g.pl = g.pb = g.pr = 1;
    conv_layouts("3x3 large", g, 150, std::true_type{});
  }
  SECTION("size-1 image and 1x1 everything") {
    conv_layouts("1x1x1x1", conv_geom{1, 1, 1, 1, 1, 1, 1}, 160, std::true_type{});
    conv_geom g{1, 3, 1, 1, 2, 3, 3};
    g.pt = g.pl = g.pb = g.pr = 1;  // only the kernel centre sees data
    conv_layouts("1x1 image, 3x3 kernel, padding 1", g, 170, std::true_type{});
  }
}

TEST_CASE("depthwise_conv2d: groups == C, channel multiplier 2, its own bias, both layouts", "[contraction][conv]") {
  conv_geom g{1, 6, 13, 11, 12, 5, 5};
  g.sh = g.sw = 2, g.pt = g.pl = g.pb = g.pr = 2, g.groups = 6;
  const auto x = rnd(std::size_t(g.x_size()), 200), w = rnd(std::size_t(g.w_size()), 201), b = rnd(12, 202);
  const auto xh = nchw_to_nhwc(x, g.n, g.c, g.h, g.w);
  const i64 ho = g.ho(), wo = g.wo();
  const auto W = host_view(w.data(), 12, 1, 5, 5);
  const auto Bv = host_view(b.data(), 12);
  const auto e = fusor::depthwise_conv2d(host_view(x.data(), 1, 6, 13, 11), W, Bv, g.params());
  const both r = run_both(e, 1, 12, ho, wo);
  CHECK(r.kf == 1);
  check_bitwise("depthwise NCHW fused vs unfused", r.fused, r.unfused);
  const both rh = run_both(fusor::depthwise_conv2d(host_view(xh.data(), 1, 13, 11, 6), W, Bv, g.params(fusor::layout::nhwc)), 1, ho, wo, 12);
  check_bitwise("depthwise NHWC fused vs unfused", rh.fused, rh.unfused);
  check_bitwise("depthwise NCHW vs NHWC", r.fused, nhwc_to_nchw(rh.fused, 1, 12, ho, wo));
  const auto d = conv_ref(g, x, w);
  const std::size_t plane = std::size_t(ho * wo);
  check_close("depthwise vs float64", r.fused, epilogue_ref(d, [&](std::size_t i) { return double(b[(i / plane) % 12]); }, identity, 1.0));
}

// =====================================================================================
TEST_CASE("epilogues: bias + relu/gelu/gelu_tanh/silu, scaling, residual add", "[contraction][epilogue]") {
  const i64 M = 70, K = 40, N = 66;
  const auto x = rnd(std::size_t(M * K), 300, -2, 2), w = rnd(std::size_t(N * K), 301), b = rnd(std::size_t(N), 302),
             res = rnd(std::size_t(M * N), 303);
  const auto X = host_view(x.data(), M, K);
  const auto W = host_view(w.data(), N, K);
  const auto Bv = host_view(b.data(), N);
  const auto R = host_view(res.data(), M, N);
  const auto d = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return x[std::size_t(i * K + k)]; },
                          [&](i64, i64 k, i64 j) { return w[std::size_t(j * K + k)]; });
  auto bias = [&](std::size_t i) { return double(b[i % std::size_t(N)]); };
  auto check = [&](const char* what, const auto& e, std::size_t unfused_kernels, auto f, double L) {
    INFO(what);
    STATIC_REQUIRE(fusor::kernel_count<std::remove_cvref_t<decltype(e)>, fusor::host_policy> == 1);
    CHECK(fusor::unfused_kernel_count<std::remove_cvref_t<decltype(e)>> == std::size_t(unfused_kernels));
    const both r = run_both(e, M, N);
    CHECK(r.kf == 1);
    CHECK(r.ku == unfused_kernels);
    check_bitwise(std::string(what) + ": fused vs unfused", r.fused, r.unfused);
    check_close(std::string(what) + " vs float64", r.fused, epilogue_ref(d, bias, f, L));
  };
  check("relu(linear)", fusor::relu(fusor::linear(X, W, Bv)), 2, [](double z, std::size_t) { return relu_d(z); }, 1.0);
  check("gelu(linear)", fusor::gelu(fusor::linear(X, W, Bv)), 2, [](double z, std::size_t) { return gelu_d(z); }, 1.13);
  check("gelu_tanh(linear)", fusor::gelu_tanh(fusor::linear(X, W, Bv)), 2, [](double z, std::size_t) { return gelu_tanh_d(z); }, 1.13);
  check("silu(linear)", fusor::silu(fusor::linear(X, W, Bv)), 2, [](double z, std::size_t) { return silu_d(z); }, 1.1);
  check("linear * 0.5", fusor::linear(X, W, Bv) * 0.5f, 2, [](double z, std::size_t) { return 0.5 * z; }, 0.5);
  check("2 * gelu(linear)", 2.0f * fusor::gelu(fusor::linear(X, W, Bv)), 3, [](double z, std::size_t) { return 2 * gelu_d(z); }, 2.26);
  check("linear + residual", fusor::linear(X, W, Bv) + R, 2,
        [&](double z, std::size_t i) { return z + double(res[i]); }, 1.0);
  check("relu(linear * 0.25 + residual)", fusor::relu(fusor::linear(X, W, Bv) * 0.25f + R), 4,
        [&](double z, std::size_t i) { return relu_d(0.25 * z + double(res[i])); }, 1.0);
  // Canonicalized to linear(x, W, b) (exact) before planning, for unfused() too: 1 kernel each.
  check("linear(x, W) + b (bias as an add)", fusor::linear(X, W) + Bv, 1, [](double z, std::size_t) { return z; }, 1.0);
}

TEST_CASE("conv epilogues: bias + activation, residual, batch_norm epilogue vs folded, prepared cache", "[contraction][epilogue][conv]") {
  conv_geom g{2, 8, 10, 9, 16, 3, 3};
  g.pt = g.pl = g.pb = g.pr = 1;
  g.sh = 2;
  const i64 ho = g.ho(), wo = g.wo(), C = g.cout;
  const std::size_t plane = std::size_t(ho * wo);
  const auto x = rnd(std::size_t(g.x_size()), 400), w = rnd(std::size_t(g.w_size()), 401), b = rnd(std::size_t(C), 402),
             res = rnd(std::size_t(g.out_size()), 403);
  const auto gam = rnd(std::size_t(C), 404, 0.8f, 1.2f), bet = rnd(std::size_t(C), 405, -0.1f, 0.1f),
             mean = rnd(std::size_t(C), 406, -0.1f, 0.1f), var = rnd(std::size_t(C), 407, 0.5f, 1.5f);
  const auto X = host_view(x.data(), g.n, g.c, g.h, g.w);
  const auto W = host_view(w.data(), C, g.c, g.kh, g.kw);
  const auto Bv = host_view(b.data(), C);
  const auto R = host_view(res.data(), g.n, C, ho, wo);
  const fusor::batch_norm_params bn{host_view(gam.data(), C), host_view(bet.data(), C), host_view(mean.data(), C),
                                    host_view(var.data(), C)};
  const float eps = 1e-5f;
  const auto d = conv_ref(g, x, w);
  auto ch = [&](std::size_t i) { return (i / plane) % std::size_t(C); };
  auto bias = [&](std::size_t i) { return double(b[ch(i)]); };
  auto bn_d = [&](double v, std::size_t c) {
    return (v - double(mean[c])) / std::sqrt(double(var[c]) + double(eps)) * double(gam[c]) + double(bet[c]);
  };
  const auto p = g.params();

  SECTION("bias + activations, scaling and a residual tensor") {
    auto check = [&](const char* what, const auto& e, std::size_t unfused_kernels, auto f, double L) {
      INFO(what);
      STATIC_REQUIRE(fusor::kernel_count<std::remove_cvref_t<decltype(e)>, fusor::host_policy> == 1);
      const both r = run_both(e, g.n, C, ho, wo);
      CHECK(r.kf == 1);
      CHECK(r.ku == unfused_kernels);
      check_bitwise(std::string(what) + ": fused vs unfused", r.fused, r.unfused);
      check_close(std::string(what) + " vs float64", r.fused, epilogue_ref(d, bias, f, L));
    };
    check("relu(conv)", fusor::relu(fusor::conv2d(X, W, Bv, p)), 2, [](double z, std::size_t) { return relu_d(z); }, 1.0);
    check("gelu(conv)", fusor::gelu(fusor::conv2d(X, W, Bv, p)), 2, [](double z, std::size_t) { return gelu_d(z); }, 1.13);
    check("gelu_tanh(conv)", fusor::gelu_tanh(fusor::conv2d(X, W, Bv, p)), 2, [](double z, std::size_t) { return gelu_tanh_d(z); }, 1.13);
    check("silu(conv)", fusor::silu(fusor::conv2d(X, W, Bv, p)), 2, [](double z, std::size_t) { return silu_d(z); }, 1.1);
    check("relu(conv * 0.5 + residual)", fusor::relu(fusor::conv2d(X, W, Bv, p) * 0.5f + R), 4,
          [&](double z, std::size_t i) { return relu_d(0.5 * z + double(res[i])); }, 1.0);
  }

  SECTION("batch_norm(relu(conv)): an epilogue, never folded, 1 kernel every run") {
    const auto e = fusor::batch_norm(fusor::relu(fusor::conv2d(X, W, Bv, p)), bn, eps);
    STATIC_REQUIRE(fusor::kernel_count<decltype(e), fusor::host_policy> == 1);
    STATIC_REQUIRE(fusor::unfused_kernel_count<decltype(e)> == 3);
    const auto ex = fusor::host();
    std::vector<float> out(std::size_t(g.out_size()), sentinel), outu(out);
    const auto O = host_view(out.data(), g.n, C, ho, wo);
    CHECK(fusor::run(O, e, ex).kernels == 1);
    CHECK(fusor::run(O, e, ex).kernels == 1);
    CHECK(fusor::run(host_view(outu.data(), g.n, C, ho, wo), e, fusor::unfused()).kernels == 3);
    check_bitwise("bn(relu(conv)) fused vs unfused", out, outu);
    reference ref;
    for (std::size_t i = 0; i < d.val.size(); ++i) {
      const std::size_t c = ch(i);
      const double k = double(gam[c]) / std::sqrt(double(var[c]) + eps);
      const double z = relu_d(d.val[i] + bias(i)), y = bn_d(z, c);
      ref.val.push_back(y);
      ref.tol.push_back(std::abs(k) * (dot_tol(d, i) + 16 * u32 * (std::abs(z) + std::abs(mean[c]))) + 16 * u32 * (std::abs(y) + std::abs(bet[c])));
    }
    check_close("bn(relu(conv)) vs float64", out, ref);
  }

  SECTION("relu(batch_norm(conv)): folded; 3 kernels on the first run, then 1; clear_prepared() -> 3") {
    const auto e = fusor::relu(fusor::batch_norm(fusor::conv2d(X, W, Bv, p), bn, eps));
    STATIC_REQUIRE(fusor::kernel_count<decltype(e), fusor::host_policy> == 1);
    STATIC_REQUIRE(fusor::unfused_kernel_count<decltype(e)> == 3);
    const auto ex = fusor::host();
    std::vector<float> out(std::size_t(g.out_size()), sentinel), out2(out), outu(out);
    const auto O = host_view(out.data(), g.n, C, ho, wo);
    CHECK(fusor::run(O, e, ex).kernels == 3);
    CHECK(fusor::run(host_view(out2.data(), g.n, C, ho, wo), e, ex).kernels == 1);
    check_bitwise("folded: first run vs cached run", out, out2);
    const auto copy = ex;  // copies share the cache
    CHECK(fusor::run(O, e, copy).kernels == 1);
    ex.clear_prepared();
    CHECK(fusor::run(O, e, ex).kernels == 3);
    CHECK(fusor::run(O, e, ex).kernels == 1);
    CHECK(fusor::run(O, e, fusor::host()).kernels == 3);  // a new executor has its own (empty) cache
    CHECK(fusor::run(host_view(outu.data(), g.n, C, ho, wo), e, fusor::unfused()).kernels == 3);
    CHECK(fusor::run(host_view(outu.data(), g.n, C, ho, wo), e, fusor::unfused()).kernels == 3);  // never folds
    reference ref;
    std::vector<double> tol_fu;
    for (std::size_t i = 0; i < d.val.size(); ++i) {
      const std::size_t c = ch(i);
      const double k = double(gam[c]) / std::sqrt(double(var[c]) + eps);
      const double y = relu_d(bn_d(d.val[i] + bias(i), c));
      ref.val.push_back(y);
      // BN tolerance (file comment): folding rounds W*k and (b - mean)*k + beta.
      ref.tol.push_back(double(d.K + 8) * u32 * std::abs(k) * d.mag[i] +
                        16 * u32 * (std::abs(k) * (std::abs(bias(i)) + std::abs(mean[c])) + std::abs(bet[c]) + std::abs(y)));
      tol_fu.push_back(2 * ref.tol.back());  // both within tol of the exact value
    }
    check_close("relu(bn(conv)) folded vs float64", out, ref);
    check_close("relu(bn(conv)) unfused vs float64", outu, ref);
    check_near("relu(bn(conv)) folded vs unfused", out, outu, tol_fu);

    // Weights changed in place: clear_prepared() makes the next run fold the new ones.
    std::vector<float> w2 = w;
    const auto W2 = host_view(w2.data(), C, g.c, g.kh, g.kw);
    const auto e2 = fusor::relu(fusor::batch_norm(fusor::conv2d(X, W2, Bv, p), bn, eps));
    std::vector<float> o_before(out.size()), o_after(out.size()), o_ref(out.size());
    fusor::run(host_view(o_before.data(), g.n, C, ho, wo), e2, ex);
    for (auto& v : w2) v = -v;
    ex.clear_prepared();
    CHECK(fusor::run(host_view(o_after.data(), g.n, C, ho, wo), e2, ex).kernels == 3);
    fusor::run(host_view(o_ref.data(), g.n, C, ho, wo), e2, fusor::unfused());
    check_near("after clear_prepared: new weights folded", o_after, o_ref, tol_fu);
  }

  SECTION("NHWC: relu(batch_norm<-1>(conv)) folded equals NCHW folded") {
    const auto xh = nchw_to_nhwc(x, g.n, g.c, g.h, g.w);
    const auto e_c = fusor::relu(fusor::batch_norm(fusor::conv2d(X, W, Bv, p), bn, eps));
    const auto e_h = fusor::relu(fusor::batch_norm<-1>(
        fusor::conv2d(host_view(xh.data(), g.n, g.h, g.w, g.c), W, Bv, g.params(fusor::layout::nhwc)), bn, eps));
    STATIC_REQUIRE(fusor::kernel_count<decltype(e_h), fusor::host_policy> == 1);
    const both rc = run_both(e_c, g.n, C, ho, wo);
    const both rh = run_both(e_h, g.n, ho, wo, C);
    CHECK(rh.kf == 3);  // first run on a fresh executor: 2 prepared kernels + the conv
    check_bitwise("folded BN: NHWC vs NCHW", rc.fused, nhwc_to_nchw(rh.fused, g.n, C, ho, wo));
    check_bitwise("unfused BN: NHWC vs NCHW", rc.unfused, nhwc_to_nchw(rh.unfused, g.n, C, ho, wo));
  }

  SECTION("mismatched BN axis after a folded conv is an error, not wrong numbers") {
    // batch_norm over axis 1 of an NHWC conv (channel count differs from dim 1 here).
    const auto xh = nchw_to_nhwc(x, g.n, g.c, g.h, g.w);
    const auto e = fusor::relu(fusor::batch_norm(
        fusor::conv2d(host_view(xh.data(), g.n, g.h, g.w, g.c), W, Bv, g.params(fusor::layout::nhwc)), bn, eps));
    std::vector<float> out(std::size_t(g.out_size()), sentinel);
    CHECK_THROWS_AS(fusor::run(host_view(out.data(), g.n, ho, wo, C), e, fusor::host()), fusor::shape_error);
    CHECK(std::all_of(out.begin(), out.end(), [](float v) { return v == sentinel; }));
  }
}

// Regression guard: at 10aa126..98ee1d4 the GEMM binder (make_gemm_problem)
// no longer set the norm prologue's row length (norm_len stayed 0), so every
// fused LayerNorm/RMSNorm -> linear output was NaN while unfused() was right.
TEST_CASE("LayerNorm -> linear and RMSNorm -> linear: one kernel, equal to unfused", "[contraction][prologue]") {
  const i64 M = 67, K = 48, N = 65;
  const auto x = rnd(std::size_t(M * K), 500, -2, 3), w = rnd(std::size_t(N * K), 501), b = rnd(std::size_t(N), 502),
             gam = rnd(std::size_t(K), 503, 0.8f, 1.2f), bet = rnd(std::size_t(K), 504, -0.1f, 0.1f);
  const auto X = host_view(x.data(), M, K);
  const auto W = host_view(w.data(), N, K);
  const auto Bv = host_view(b.data(), N);
  const auto G = host_view(gam.data(), K);
  const auto Be = host_view(bet.data(), K);
  const float eps = 1e-5f;
  // float64 normalized rows; their fp32 values err by ~16 u * (|xhat| * |gamma| + |beta|) (the norm's own error,
  // as in tests/host/test_reductions.cpp), which the dot product carries with weight |w|.
  auto check = [&](const char* what, const auto& e, bool rms, auto act, double L) {
    INFO(what);
    STATIC_REQUIRE(fusor::kernel_count<std::remove_cvref_t<decltype(e)>, fusor::host_policy> == 1);
    const both r = run_both(e, M, N);
    CHECK(r.kf == 1);
    CHECK(r.ku >= 2);
    check_bitwise(std::string(what) + ": fused vs unfused", r.fused, r.unfused);
    std::vector<double> xn(std::size_t(M * K)), xerr(xn.size());
    for (i64 i = 0; i < M; ++i) {
      double mu = 0, ss = 0;
      for (i64 k = 0; k < K; ++k) mu += x[std::size_t(i * K + k)];
      mu = rms ? 0.0 : mu / double(K);
      for (i64 k = 0; k < K; ++k) ss += (x[std::size_t(i * K + k)] - mu) * (x[std::size_t(i * K + k)] - mu);
      const double inv = 1.0 / std::sqrt(ss / double(K) + eps);
      for (i64 k = 0; k < K; ++k) {
        const std::size_t o = std::size_t(i * K + k);
        const double xh = (x[o] - mu) * inv;
        xn[o] = xh * gam[std::size_t(k)] + (rms ? 0.0 : double(bet[std::size_t(k)]));
        xerr[o] = 16 * u32 * (std::abs(xh * gam[std::size_t(k)]) + std::abs(bet[std::size_t(k)]) + 1e-3);
      }
    }
    const auto d = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return xn[std::size_t(i * K + k)]; },
                            [&](i64, i64 k, i64 j) { return w[std::size_t(j * K + k)]; });
    reference ref;
    for (i64 i = 0; i < M; ++i)
      for (i64 j = 0; j < N; ++j) {
        const std::size_t o = std::size_t(i * N + j);
        double carried = 0;
        for (i64 k = 0; k < K; ++k) carried += xerr[std::size_t(i * K + k)] * std::abs(w[std::size_t(j * K + k)]);
        const double z = d.val[o] + b[std::size_t(j)], y = act(z);
        ref.val.push_back(y);
        ref.tol.push_back(L * (dot_tol(d, o) + carried) + 16 * u32 * (std::abs(z) + std::abs(y)));
      }
    check_close(std::string(what) + " vs float64", r.fused, ref);
  };
  check("linear(layer_norm(x))", fusor::linear(fusor::layer_norm(X, G, Be, -1, eps), W, Bv), false, [](double z) { return z; }, 1.0);
  check("gelu(linear(layer_norm(x)))", fusor::gelu(fusor::linear(fusor::layer_norm(X, G, Be, -1, eps), W, Bv)), false,
        [](double z) { return gelu_d(z); }, 1.13);
  check("linear(rms_norm(x))", fusor::linear(fusor::rms_norm(X, G, eps), W, Bv), true, [](double z) { return z; }, 1.0);
  check("matmul(layer_norm(x), transpose(W)) + b", fusor::matmul(fusor::layer_norm(X, G, Be, -1, eps), fusor::transpose(W)) + Bv,
        false, [](double z) { return z; }, 1.0);
}

namespace {
// depthwise_conv2d (channel multiplier `mult`, stride `stride`) -> BN ->
// clip(0, 6) -> conv2d with a k2 x k2 kernel (padding k2 / 2). With k2 == 1
// the depthwise conv is computed inside the pointwise conv's loads: 1
// kernel; otherwise it is materialized first (the consumer would recompute
// it k2 * k2 times per element): 2 kernels, same values.
void dw_bn_relu6_conv(i64 mult, i64 stride, i64 k2, std::size_t expect_kernels) {
  INFO("multiplier " << mult << ", stride " << stride << ", consumer kernel " << k2 << "x" << k2);
  const i64 C = 12, Cm = C * mult, Co = 20;
  conv_geom gd{1, C, 9, 8, Cm, 3, 3};
  gd.pt = gd.pl = gd.pb = gd.pr = 1, gd.groups = C, gd.sh = gd.sw = stride;
  const i64 ho = gd.ho(), wo = gd.wo();
  conv_geom g2{1, Cm, ho, wo, Co, k2, k2};
  g2.pt = g2.pl = g2.pb = g2.pr = k2 / 2;
  const auto x = rnd(std::size_t(gd.x_size()), 600, -6, 6), wd = rnd(std::size_t(gd.w_size()), 601),
             wp = rnd(std::size_t(g2.w_size()), 602, -0.3f, 0.3f), bp = rnd(std::size_t(Co), 603);
  const auto gam = rnd(std::size_t(Cm), 604, 0.8f, 1.2f), bet = rnd(std::size_t(Cm), 605, -0.1f, 0.1f),
             mean = rnd(std::size_t(Cm), 606, -0.1f, 0.1f), var = rnd(std::size_t(Cm), 607, 0.5f, 1.5f);
  const fusor::batch_norm_params bn{host_view(gam.data(), Cm), host_view(bet.data(), Cm), host_view(mean.data(), Cm),
                                    host_view(var.data(), Cm)};
  const auto X = host_view(x.data(), 1, C, gd.h, gd.w);
  const auto e = fusor::conv2d(
      fusor::clip(fusor::batch_norm(fusor::depthwise_conv2d(X, host_view(wd.data(), Cm, 1, 3, 3), nullptr, gd.params()), bn), 0.0f, 6.0f),
      host_view(wp.data(), Co, Cm, k2, k2), host_view(bp.data(), Co), g2.params());
  STATIC_REQUIRE(fusor::kernel_count<decltype(e), fusor::host_policy> == 1);
  const auto ex = fusor::host();
  const i64 ho2 = g2.ho(), wo2 = g2.wo();
  std::vector<float> out(std::size_t(g2.out_size()), sentinel), outu(out);
  const auto O = host_view(out.data(), 1, Co, ho2, wo2);
  CHECK(fusor::run(O, e, ex).kernels == expect_kernels + 2);  // + the BN folding's 2 prepared kernels
  CHECK(fusor::run(O, e, ex).kernels == expect_kernels);
  CHECK(fusor::run(host_view(outu.data(), 1, Co, ho2, wo2), e, fusor::unfused()).kernels == 4);
  // float64: depthwise, BN, clip, then the consumer conv; the fp32 intermediate's error (BN tolerance) is
  // carried with weight |w2|.
  const auto dd = conv_ref(gd, x, wd);
  std::vector<double> mid(dd.val.size()), mid_err(dd.val.size());
  const std::size_t plane = std::size_t(ho * wo);
  for (std::size_t i = 0; i < dd.val.size(); ++i) {
    const std::size_t c = i / plane;
    const double k = double(gam[c]) / std::sqrt(double(var[c]) + 1e-5);
    const double y = (dd.val[i] - mean[c]) * k + bet[c];
    mid[i] = std::min(std::max(y, 0.0), 6.0);
    mid_err[i] = double(dd.K + 8) * u32 * std::abs(k) * dd.mag[i] + 16 * u32 * (std::abs(k * mean[c]) + std::abs(bet[c]) + std::abs(y));
  }
  std::vector<double> wabs(wp.begin(), wp.end());
  for (auto& v : wabs) v = std::abs(v);
  const auto d2 = conv_ref(g2, mid, wp), carried = conv_ref(g2, mid_err, wabs);
  const std::size_t plane2 = std::size_t(ho2 * wo2);
  reference ref;
  for (std::size_t i = 0; i < d2.val.size(); ++i) {
    const double v = d2.val[i] + bp[i / plane2];
    ref.val.push_back(v);
    ref.tol.push_back(carried.val[i] + dot_tol(d2, i) + 4 * u32 * std::abs(v));
  }
  check_close("dw->bn->clip->conv fused vs float64", out, ref);
  check_close("dw->bn->clip->conv unfused vs float64", outu, ref);
  std::vector<double> tol2(ref.tol.size());
  for (std::size_t i = 0; i < tol2.size(); ++i) tol2[i] = 2 * ref.tol[i];
  check_near("dw->bn->clip->conv fused vs unfused", out, outu, tol2);
}
}  // namespace

TEST_CASE("depthwise -> BN -> clip(0, 6) -> pointwise: one kernel; -> 3x3 conv: depthwise materialized", "[contraction][prologue][conv]") {
  dw_bn_relu6_conv(1, 1, 1, 1);
  dw_bn_relu6_conv(2, 2, 1, 1);  // channel multiplier 2, stride 2
  dw_bn_relu6_conv(1, 1, 3, 2);
}

// =====================================================================================
namespace {
template <class T>
T to_t(float v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else return __float2bfloat16_rn(v);
}
template <class T>
constexpr double unit_roundoff() {
  return std::is_same_v<T, __half> ? 0x1p-11 : 0x1p-8;
}
template <class T>
constexpr double min_step() {  // spacing of the smallest subnormals
  return std::is_same_v<T, __half> ? 0x1p-24 : 0x1p-133;
}
template <class T>
std::vector<T> to_vec(const std::vector<float>& v) {
  std::vector<T> o(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) o[i] = to_t<T>(v[i]);
  return o;
}

template <class T>
void half_linear_gelu(const char* name) {
  INFO(name);
  const i64 M = 66, K = 50, N = 65;
  const auto x = to_vec<T>(rnd(std::size_t(M * K), 700, -2, 2)), w = to_vec<T>(rnd(std::size_t(N * K), 701)),
             b = to_vec<T>(rnd(std::size_t(N), 702));
  const auto e = fusor::gelu(fusor::linear(host_view(x.data(), M, K), host_view(w.data(), N, K), host_view(b.data(), N)));
  std::vector<T> out(std::size_t(M * N), to_t<T>(sentinel)), outu(out);
  CHECK(fusor::run(host_view(out.data(), M, N), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(host_view(outu.data(), M, N), e, fusor::unfused()).kernels == 2);
  check_bitwise(std::string(name) + " linear+gelu fused vs unfused", out, outu);
  const auto d = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return to_f(x[std::size_t(i * K + k)]); },
                          [&](i64, i64 k, i64 j) { return to_f(w[std::size_t(j * K + k)]); });
  reference ref;
  const double uh = unit_roundoff<T>();
  for (std::size_t i = 0; i < d.val.size(); ++i) {
    const double z = d.val[i] + to_f(b[i % std::size_t(N)]), y = gelu_d(z);
    ref.val.push_back(y);
    ref.tol.push_back(uh * std::abs(y) + 1.13 * (uh * std::abs(z) + dot_tol(d, i)) + 16 * u32 * std::abs(z) + min_step<T>());
  }
  check_close(std::string(name) + " linear+gelu vs float64", out, ref);
}

template <class T>
void half_conv(const char* name) {
  INFO(name);
  conv_geom g{2, 6, 9, 8, 10, 3, 3};
  g.pt = 1, g.pl = 0, g.pb = 2, g.pr = 1, g.sh = 2, g.groups = 2;
  const auto x = to_vec<T>(rnd(std::size_t(g.x_size()), 710, -2, 2)), w = to_vec<T>(rnd(std::size_t(g.w_size()), 711)),
             b = to_vec<T>(rnd(std::size_t(g.cout), 712));
  const i64 ho = g.ho(), wo = g.wo();
  const auto e = fusor::relu(fusor::conv2d(host_view(x.data(), g.n, g.c, g.h, g.w), host_view(w.data(), g.cout, g.c / g.groups, 3, 3),
                                           host_view(b.data(), g.cout), g.params()));
  std::vector<T> out(std::size_t(g.out_size()), to_t<T>(sentinel)), outu(out);
  CHECK(fusor::run(host_view(out.data(), g.n, g.cout, ho, wo), e, fusor::host()).kernels == 1);
  CHECK(fusor::run(host_view(outu.data(), g.n, g.cout, ho, wo), e, fusor::unfused()).kernels == 2);
  check_bitwise(std::string(name) + " conv+relu fused vs unfused", out, outu);
  const auto d = conv_ref(g, x, w);
  const std::size_t plane = std::size_t(ho * wo);
  reference ref;
  const double uh = unit_roundoff<T>();
  for (std::size_t i = 0; i < d.val.size(); ++i) {
    const double z = d.val[i] + to_f(b[(i / plane) % std::size_t(g.cout)]), y = relu_d(z);
    ref.val.push_back(y);
    ref.tol.push_back(uh * std::abs(y) + uh * std::abs(z) + dot_tol(d, i) + min_step<T>());
  }
  check_close(std::string(name) + " conv+relu vs float64", out, ref);
}
}  // namespace

TEST_CASE("half and bfloat16 inputs: linear+gelu and conv2d, fp32 accumulation", "[contraction][f16]") {
  half_linear_gelu<__half>("f16");
  half_linear_gelu<__nv_bfloat16>("bf16");
  half_conv<__half>("f16");
  half_conv<__nv_bfloat16>("bf16");
}

// =====================================================================================
TEST_CASE("NaN and Inf in an input propagate like the unfused reference", "[contraction][nan]") {
  const i64 M = 7, K = 20, N = 66;
  auto x = rnd(std::size_t(M * K), 800);
  const auto w = rnd(std::size_t(N * K), 801, 0.1f, 1.0f), b = rnd(std::size_t(N), 802);  // w > 0: no 0 * Inf
  x[std::size_t(1 * K + 3)] = qnan;
  x[std::size_t(2 * K + 5)] = inf;
  x[std::size_t(3 * K + 0)] = -inf;
  x[std::size_t(4 * K + 1)] = inf;
  x[std::size_t(4 * K + 2)] = -inf;  // +Inf + -Inf = NaN
  const auto X = host_view(x.data(), M, K);
  const auto W = host_view(w.data(), N, K);
  const auto Bv = host_view(b.data(), N);
  const auto d = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return x[std::size_t(i * K + k)]; },
                          [&](i64, i64 k, i64 j) { return w[std::size_t(j * K + k)]; });
  {
    const both r = run_both(fusor::relu(fusor::linear(X, W, Bv)), M, N);
    check_bitwise("relu(linear) with NaN/Inf: fused vs unfused", r.fused, r.unfused);
    reference ref = epilogue_ref(d, [&](std::size_t i) { return double(b[i % std::size_t(N)]); },
                                 [](double z, std::size_t) { return relu_d(z); }, 1.0);
    for (auto& t : ref.tol) t = std::isfinite(t) ? t : 0;
    check_close("relu(linear) with NaN/Inf vs float64", r.fused, ref);
    CHECK(std::isnan(r.fused[std::size_t(1 * N)]));
    CHECK(r.fused[std::size_t(2 * N)] == inf);
    CHECK(r.fused[std::size_t(3 * N)] == 0.0f);  // relu(-Inf)
    CHECK(std::isnan(r.fused[std::size_t(4 * N)]));
  }
  {  // conv: only the outputs whose window covers the NaN/Inf
    conv_geom g{1, 2, 6, 6, 3, 3, 3};
    g.pt = g.pl = g.pb = g.pr = 1;
    auto xc = rnd(std::size_t(g.x_size()), 810);
    const auto wc = rnd(std::size_t(g.w_size()), 811, 0.1f, 1.0f);
    xc[std::size_t(0 * 36 + 2 * 6 + 2)] = qnan;
    xc[std::size_t(1 * 36 + 5 * 6 + 5)] = inf;
    const both r = run_both(fusor::conv2d(host_view(xc.data(), 1, 2, 6, 6), host_view(wc.data(), 3, 2, 3, 3), nullptr, g.params()), 1, 3, 6, 6);
    check_bitwise("conv with NaN/Inf: fused vs unfused", r.fused, r.unfused);
    const auto dc = conv_ref(g, xc, wc);
    reference ref = epilogue_ref(dc, no_bias, identity, 1.0);
    for (auto& t : ref.tol) t = std::isfinite(t) ? t : 0;
    check_close("conv with NaN/Inf vs float64", r.fused, ref);
    std::size_t nans = 0, infs = 0;
    for (float v : r.fused) nans += std::isnan(v), infs += std::isinf(v);
    CHECK(nans == 3 * 9);  // 3x3 window around (2, 2), every output channel
    CHECK(infs == 3 * 4);  // corner (5, 5): 2x2 outputs see it
  }
}

TEST_CASE("size-1 and empty cases", "[contraction][edge]") {
  SECTION("0 rows: linear [0, K] -> [0, N], matmul [3, 0, K] batch, conv with N = 0") {
    const i64 K = 5, N = 4;
    std::vector<float> x, w = rnd(std::size_t(N * K), 900), b = rnd(std::size_t(N), 901), out;
    CHECK(fusor::run(host_view(out.data(), 0, N), fusor::relu(fusor::linear(host_view(x.data(), 0, K), host_view(w.data(), N, K), host_view(b.data(), N))),
                     fusor::host()).kernels <= 1);
    fusor::run(host_view(out.data(), 0, N), fusor::relu(fusor::linear(host_view(x.data(), 0, K), host_view(w.data(), N, K), host_view(b.data(), N))),
               fusor::unfused());
    std::vector<float> bm = rnd(std::size_t(K * N), 902);
    fusor::run(host_view(out.data(), 3, 0, N), fusor::matmul(host_view(x.data(), 3, 0, K), host_view(bm.data(), K, N)), fusor::host());
    fusor::run(host_view(out.data(), 3, 0, N), fusor::matmul(host_view(x.data(), 3, 0, K), host_view(bm.data(), K, N)), fusor::unfused());
    std::vector<float> wc = rnd(2 * 3 * 3 * 3, 903);
    fusor::run(host_view(out.data(), 0, 2, 4, 4), fusor::conv2d(host_view(x.data(), 0, 3, 4, 4), host_view(wc.data(), 2, 3, 3, 3), nullptr, {.padding = {1, 1, 1, 1}}),
               fusor::host());
    SUCCEED("no crash, nothing written");
  }
  SECTION("K = 0: the empty sum is 0, so linear gives its bias and gemm gives beta * C") {
    const i64 M = 3, N = 4;
    std::vector<float> x, w, b = rnd(std::size_t(N), 910), c = rnd(std::size_t(M * N), 911);
    const both r = run_both(fusor::linear(host_view(x.data(), M, 0), host_view(w.data(), N, 0), host_view(b.data(), N)), M, N);
    check_bitwise("K = 0 linear fused vs unfused", r.fused, r.unfused);
    for (i64 i = 0; i < M * N; ++i) CHECK(r.fused[std::size_t(i)] == b[std::size_t(i % N)]);
    const both r2 = run_both(fusor::gemm(host_view(x.data(), M, 0), host_view(w.data(), 0, N), host_view(c.data(), M, N), {2.0f, 0.5f}), M, N);
    check_bitwise("K = 0 gemm fused vs unfused", r2.fused, r2.unfused);
    for (i64 i = 0; i < M * N; ++i) CHECK(r2.fused[std::size_t(i)] == 0.5f * c[std::size_t(i)]);
  }
  SECTION("size 1: [1,1] @ [1,1], linear with N = 1, gemm 1x1x1") {
    float a = 1.5f, b = -2.25f, bias = 0.125f, c = 3.0f;
    const both r = run_both(fusor::matmul(host_view(&a, 1, 1), host_view(&b, 1, 1)), 1, 1);
    CHECK(r.fused[0] == 1.5f * -2.25f);
    CHECK(r.unfused[0] == 1.5f * -2.25f);
    const both r2 = run_both(fusor::relu(fusor::linear(host_view(&a, 1, 1, 1), host_view(&b, 1, 1), host_view(&bias, 1))), 1, 1, 1);
    CHECK(r2.fused[0] == 0.0f);
    const both r3 = run_both(fusor::gemm(host_view(&a, 1, 1), host_view(&b, 1, 1), host_view(&c, 1, 1), {2.0f, -1.0f, true, true}), 1, 1);
    CHECK(r3.fused[0] == 2.0f * (1.5f * -2.25f) - 3.0f);
    CHECK(r3.unfused[0] == r3.fused[0]);
  }
}

// =====================================================================================
namespace {
bool untouched(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return x == sentinel; });
}
// Expects run(out, e, ex) to throw Err whose message contains every string of
// `parts`, on host() and unfused(), leaving `out` (filled with the sentinel) unchanged.
template <class Err, class E, class... I>
void expect_error(const E& e, std::initializer_list<const char*> parts, I... dims) {
  std::vector<float> out((std::size_t(dims) * ... * std::size_t(1)), sentinel);
  const auto O = host_view(out.data(), dims...);
  std::string msg_h, msg_u;
  try {
    fusor::run(O, e, fusor::host());
  } catch (const Err& err) {
    msg_h = err.what();
  }
  try {
    fusor::run(O, e, fusor::unfused());
  } catch (const Err& err) {
    msg_u = err.what();
  }
  INFO("host message: " << msg_h);
  INFO("unfused message: " << msg_u);
  CHECK(!msg_h.empty());
  CHECK(!msg_u.empty());
  CHECK(msg_h.rfind("fusor: ", 0) == 0);
  for (const char* p : parts) {
    CHECK(msg_h.find(p) != std::string::npos);
    CHECK(msg_u.find(p) != std::string::npos);
  }
  CHECK(untouched(out));
}
}  // namespace

TEST_CASE("errors: shapes, channels, groups, bias length; nothing written", "[contraction][errors]") {
  const auto a = rnd(64, 1000), b = rnd(64, 1001), c = rnd(200, 1002);
  SECTION("K mismatch names the op and both shapes") {
    expect_error<fusor::shape_error>(fusor::matmul(host_view(a.data(), 3, 4), host_view(b.data(), 5, 6)), {"matmul", "[3, 4]", "[5, 6]"}, 3, 6);
    expect_error<fusor::shape_error>(fusor::relu(fusor::matmul(host_view(a.data(), 2, 3, 4), host_view(b.data(), 2, 5, 6))),
                                     {"matmul", "[2, 3, 4]", "[2, 5, 6]"}, 2, 3, 6);
    expect_error<fusor::shape_error>(fusor::matmul(host_view(a.data(), 2, 3, 4), host_view(b.data(), 3, 4, 6)),
                                     {"matmul", "[2, 3, 4]", "[3, 4, 6]", "broadcast"}, 3, 3, 6);
    expect_error<fusor::shape_error>(fusor::linear(host_view(a.data(), 2, 7), host_view(b.data(), 5, 6)), {"linear", "[2, 7]", "[5, 6]"}, 2, 5);
    expect_error<fusor::shape_error>(fusor::gemm(host_view(a.data(), 3, 4), host_view(b.data(), 3, 5), nullptr, {1.0f, 1.0f, false, true}),
                                     {"gemm", "[3, 4]", "[3, 5]"}, 3, 3);
    expect_error<fusor::shape_error>(fusor::gemm(host_view(a.data(), 3, 4), host_view(b.data(), 4, 5), host_view(c.data(), 2, 5)),
                                     {"gemm", "[2, 5]"}, 3, 5);
  }
  SECTION("conv channels and groups") {
    const auto x = rnd(1 * 6 * 5 * 5, 1003), w = rnd(4 * 4 * 3 * 3, 1004);
    expect_error<fusor::shape_error>(fusor::conv2d(host_view(x.data(), 1, 6, 5, 5), host_view(w.data(), 4, 4, 3, 3)),
                                     {"conv2d", "channels", "[1, 6, 5, 5]", "[4, 4, 3, 3]"}, 1, 4, 3, 3);
    fusor::conv2d_params p;
    p.groups = 4;  // does not divide 6 input channels
    expect_error<fusor::shape_error>(fusor::conv2d(host_view(x.data(), 1, 6, 5, 5), host_view(w.data(), 4, 1, 3, 3), nullptr, p),
                                     {"conv2d", "groups"}, 1, 4, 3, 3);
    p.groups = 3;  // divides C = 6 but not Cout = 4
    expect_error<fusor::shape_error>(fusor::conv2d(host_view(x.data(), 1, 6, 5, 5), host_view(w.data(), 4, 2, 3, 3), nullptr, p),
                                     {"conv2d", "groups"}, 1, 4, 3, 3);
    p.groups = 1;
    p.layout = fusor::layout::nhwc;  // x read as [N, H, W, C] = [1, 6, 5, 5]: C = 5 != 4
    expect_error<fusor::shape_error>(fusor::conv2d(host_view(x.data(), 1, 6, 5, 5), host_view(w.data(), 4, 4, 3, 3), nullptr, p),
                                     {"conv2d", "NHWC"}, 1, 4, 3, 4);
  }
  SECTION("bias of the wrong length") {
    expect_error<fusor::shape_error>(fusor::linear(host_view(a.data(), 2, 6), host_view(b.data(), 5, 6), host_view(c.data(), 6)),
                                     {"linear", "bias", "[6]"}, 2, 5);
    const auto x = rnd(1 * 4 * 5 * 5, 1005), w = rnd(3 * 4 * 3 * 3, 1006);
    expect_error<fusor::shape_error>(fusor::relu(fusor::conv2d(host_view(x.data(), 1, 4, 5, 5), host_view(w.data(), 3, 4, 3, 3), host_view(c.data(), 4))),
                                     {"conv2d", "bias", "[4]"}, 1, 3, 3, 3);
  }
}

TEST_CASE("errors: an output overlapping an input of the GEMM is an argument_error; nothing written", "[contraction][errors]") {
  const i64 n = 8;
  SECTION("out is A (in place)") {
    auto a = rnd(std::size_t(n * n), 1100);
    const auto b = rnd(std::size_t(n * n), 1101);
    const auto before = a;
    const auto A = host_view(a.data(), n, n);
    CHECK_THROWS_AS(fusor::run(A, fusor::matmul(A, host_view(b.data(), n, n)), fusor::host()), fusor::argument_error);
    CHECK(a == before);
    CHECK_THROWS_AS(fusor::run(A, fusor::matmul(A, host_view(b.data(), n, n)), fusor::unfused()), fusor::argument_error);
    CHECK(a == before);
    CHECK_THROWS_AS(fusor::run(A, fusor::relu(fusor::matmul(A, host_view(b.data(), n, n))), fusor::host()), fusor::argument_error);
    CHECK(a == before);
    // The unfused executor writes matmul(A, B) to a temporary and only relu's
    // own kernel writes A (an exact alias, allowed for elementwise ops), so
    // there it is legal and computes the out-of-place result.
    std::vector<float> expect(a.size());
    fusor::run(host_view(expect.data(), n, n), fusor::relu(fusor::matmul(A, host_view(b.data(), n, n))), fusor::unfused());
    CHECK(fusor::run(A, fusor::relu(fusor::matmul(A, host_view(b.data(), n, n))), fusor::unfused()).kernels == 2);
    check_bitwise("unfused relu(matmul(A, B)) into A", a, expect);
    a = before;
    try {
      fusor::run(A, fusor::matmul(A, host_view(b.data(), n, n)), fusor::host());
    } catch (const fusor::argument_error& e) {
      CHECK(std::string(e.what()).find("overlaps") != std::string::npos);
      CHECK(std::string(e.what()).find("matmul") != std::string::npos);
    }
  }
  SECTION("out overlaps B partially (shifted by one row), and W of linear through a prologue") {
    std::vector<float> buf = rnd(std::size_t(2 * n * n), 1102);
    const auto a = rnd(std::size_t(n * n), 1103);
    const auto before = buf;
    const auto B = host_view(buf.data(), n, n);
    const auto O = host_view(buf.data() + n, n, n);
    CHECK_THROWS_AS(fusor::run(O, fusor::matmul(host_view(a.data(), n, n), B), fusor::host()), fusor::argument_error);
    CHECK(buf == before);
    CHECK_THROWS_AS(fusor::run(O, fusor::linear(fusor::relu(host_view(a.data(), n, n)), B), fusor::host()), fusor::argument_error);
    CHECK(buf == before);
    CHECK_THROWS_AS(fusor::run(B, fusor::gemm(host_view(a.data(), n, n), B, nullptr, {1.0f, 0.0f, false, true}), fusor::host()),
                    fusor::argument_error);
    CHECK(buf == before);
  }
  SECTION("conv: out over x") {
    std::vector<float> x = rnd(2 * 4 * 6 * 6, 1104);
    const auto w = rnd(4 * 4 * 3 * 3, 1105);
    const auto before = x;
    fusor::conv2d_params p;
    p.padding[0] = p.padding[1] = p.padding[2] = p.padding[3] = 1;
    const auto X = host_view(x.data(), 2, 4, 6, 6);
    CHECK_THROWS_AS(fusor::run(X, fusor::conv2d(X, host_view(w.data(), 4, 4, 3, 3), nullptr, p), fusor::host()), fusor::argument_error);
    CHECK(x == before);
  }
  SECTION("an epilogue operand may alias the output exactly (in-place residual)") {
    const i64 M = 9, K = 7, N = 10;
    const auto x = rnd(std::size_t(M * K), 1106), w = rnd(std::size_t(N * K), 1107);
    std::vector<float> r = rnd(std::size_t(M * N), 1108), ru = r;
    const auto e = fusor::linear(host_view(x.data(), M, K), host_view(w.data(), N, K)) + host_view(r.data(), M, N);
    std::vector<float> expect(r.size());
    fusor::run(host_view(expect.data(), M, N), e, fusor::host());
    CHECK(fusor::run(host_view(r.data(), M, N), e, fusor::host()).kernels == 1);
    check_bitwise("in-place residual", r, expect);
    const auto eu = fusor::linear(host_view(x.data(), M, K), host_view(w.data(), N, K)) + host_view(ru.data(), M, N);
    fusor::run(host_view(ru.data(), M, N), eu, fusor::unfused());
    check_bitwise("in-place residual unfused", ru, expect);
  }
}

// =====================================================================================
// The host GEMM engine (exec/host_gemm.hpp: OpenBLAS per 256 x 512 output
// block, fusor's prologue packed, its epilogue applied in cache) against the
// device twin (host_gemm_engine::device_twin) and float64, on shapes that
// take every route through it: several row blocks and column blocks, column
// splits when there are fewer row blocks than threads (M = 1, 5), operands
// read in place (contiguous, transposed, merged leading dims, row strides)
// or packed (a permuted view, a prologue, 16-bit inputs, conv's implicit
// GEMM), batches with broadcast batch dims, and fp64 (dgemm). Without
// OpenBLAS both executors run the twin and the checks still hold.
namespace {
template <class E, class... I>
both run_engine_and_twin(const E& e, int threads, I... dims) {
  const std::size_t n = (std::size_t(dims) * ... * std::size_t(1));
  both r{std::vector<float>(n, sentinel), std::vector<float>(n, sentinel)};
  auto twin = fusor::host(threads);
  twin.gemm_engine = fusor::host_gemm_engine::device_twin;
  r.kf = fusor::run(host_view(r.fused.data(), dims...), e, fusor::host(threads)).kernels;
  r.ku = fusor::run(host_view(r.unfused.data(), dims...), e, twin).kernels;
  return r;
}
}  // namespace

TEST_CASE("host GEMM engine: row/column blocks, splits, in-place and packed operands, vs the device twin", "[contraction][engine]") {
  CHECK(fusor::exec::host_gemm_engine_available == (FUSOR_WITH_OPENBLAS != 0));
  {  // explain names the engine for a plan with a GEMM, and only then
    std::vector<float> a(12), b2(12);
    const auto X = host_view(a.data(), 3, 4);
    const std::string with = fusor::explain<fusor::host_policy>(fusor::relu(fusor::linear(X, host_view(b2.data(), 3, 4))));
    const std::string without = fusor::explain<fusor::host_policy>(fusor::relu(X));
    CHECK(with.find(std::string("host GEMM engine: ") + fusor::exec::host_gemm_engine_name(fusor::host()) + "\n") !=
          std::string::npos);
    CHECK(without.find("host GEMM engine") == std::string::npos);
    CHECK(std::string(fusor::exec::host_gemm_engine_name(fusor::host())).find(FUSOR_WITH_OPENBLAS ? "OpenBLAS" : "without OpenBLAS") !=
          std::string::npos);
  }
  const auto gelu = [](double z, std::size_t) { return gelu_d(z); };
  for (const int threads : {1, 2, 3}) {
    for (const i64 M : {i64(1), i64(5), i64(130), i64(300)}) {
      const i64 K = 70, N = 600;  // N: 3 column blocks of 256 (the last partial)
      INFO("threads " << threads << ", M " << M);
      const auto x = rnd(std::size_t(M * K), 900), w = rnd(std::size_t(N * K), 901), b = rnd(std::size_t(N), 902);
      const auto e = fusor::gelu(fusor::linear(host_view(x.data(), M, K), host_view(w.data(), N, K), host_view(b.data(), N)));
      const both r = run_engine_and_twin(e, threads, M, N);
      CHECK(r.kf == 1);
      CHECK(r.ku == 1);
      const auto d = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return x[std::size_t(i * K + k)]; },
                              [&](i64, i64 k, i64 j) { return w[std::size_t(j * K + k)]; });
      const reference ref = epilogue_ref(d, [&](std::size_t i) { return double(b[i % std::size_t(N)]); }, gelu, 1.13);
      check_close("engine: gelu(linear) vs float64", r.fused, ref);
      check_close("twin: gelu(linear) vs float64", r.unfused, ref);
    }
  }
  SECTION("3-D input (merged M dims in place) and a permuted input (packed)") {
    const i64 B0 = 3, S = 70, K = 33, N = 300;
    const auto x = rnd(std::size_t(B0 * S * K), 910), w = rnd(std::size_t(N * K), 911);
    const auto d = gemm_ref(1, B0 * S, N, K, [&](i64, i64 i, i64 k) { return x[std::size_t(i * K + k)]; },
                            [&](i64, i64 k, i64 j) { return w[std::size_t(j * K + k)]; });
    const both r = run_engine_and_twin(fusor::linear(host_view(x.data(), B0, S, K), host_view(w.data(), N, K)), 2, B0, S, N);
    check_close("engine: 3-D linear vs float64", r.fused, epilogue_ref(d, no_bias, identity, 1.0));
    // x stored as [S, B0, K], read as [B0, S, K]: the leading dims do not merge.
    std::vector<float> xp(x.size());
    for (i64 bb = 0; bb < B0; ++bb)
      for (i64 s = 0; s < S; ++s)
        for (i64 k = 0; k < K; ++k) xp[std::size_t((s * B0 + bb) * K + k)] = x[std::size_t((bb * S + s) * K + k)];
    const auto XP = host_view(xp.data(), fusor::dextents<3>(B0, S, K), fusor::shape<3>{K, B0 * K, 1});
    const both rp = run_engine_and_twin(fusor::linear(XP, host_view(w.data(), N, K)), 2, B0, S, N);
    check_close("engine: permuted 3-D linear vs float64", rp.fused, epilogue_ref(d, no_bias, identity, 1.0));
    check_close("twin: permuted 3-D linear vs float64", rp.unfused, epilogue_ref(d, no_bias, identity, 1.0));
  }
  SECTION("batched matmul with broadcast batch dims; gemm trans_a/trans_b/alpha/beta") {
    const i64 M = 140, K = 20, N = 270;
    const auto a = rnd(std::size_t(2 * M * K), 920), bm = rnd(std::size_t(3 * K * N), 921);
    const auto e = fusor::matmul(host_view(a.data(), 2, 1, M, K), host_view(bm.data(), 1, 3, K, N));
    const both r = run_engine_and_twin(e, 2, 2, 3, M, N);
    const auto d = gemm_ref(6, M, N, K, [&](i64 bb, i64 i, i64 k) { return a[std::size_t(((bb / 3) * M + i) * K + k)]; },
                            [&](i64 bb, i64 k, i64 j) { return bm[std::size_t(((bb % 3) * K + k) * N + j)]; });
    check_close("engine: broadcast batched matmul vs float64", r.fused, epilogue_ref(d, no_bias, identity, 1.0));
    const auto c = rnd(std::size_t(M * N), 922);
    const auto ge = fusor::gemm(host_view(a.data(), K, M), host_view(bm.data(), N, K), host_view(c.data(), M, N),
                                {.alpha = 0.5f, .beta = 2.0f, .trans_a = true, .trans_b = true});
    const both rg = run_engine_and_twin(ge, 2, M, N);
    const auto dg = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return a[std::size_t(k * M + i)]; },
                             [&](i64, i64 k, i64 j) { return bm[std::size_t(j * K + k)]; });
    reference rf;
    for (std::size_t i = 0; i < dg.val.size(); ++i) {
      rf.val.push_back(0.5 * dg.val[i] + 2.0 * c[i]);
      rf.tol.push_back(0.5 * dot_tol(dg, i) + 16 * u32 * (std::abs(2.0 * c[i]) + std::abs(rf.val.back())));
    }
    check_close("engine: gemm trans_a trans_b alpha beta vs float64", rg.fused, rf);
    check_close("twin: gemm trans_a trans_b alpha beta vs float64", rg.unfused, rf);
  }
  SECTION("LayerNorm prologue over several row blocks (packed with row statistics)") {
    const i64 M = 260, K = 48, N = 270;
    const auto x = rnd(std::size_t(M * K), 930, -2, 3), w = rnd(std::size_t(N * K), 931), g = rnd(std::size_t(K), 932);
    const auto e = fusor::linear(fusor::layer_norm(host_view(x.data(), M, K), host_view(g.data(), K), nullptr),
                                 host_view(w.data(), N, K));
    const both r = run_engine_and_twin(e, 2, M, N);
    CHECK(r.kf == 1);
    std::vector<float> unf(std::size_t(M * N));
    fusor::run(host_view(unf.data(), M, N), e, fusor::unfused(fusor::host(2)));
    check_bitwise("engine: LayerNorm -> linear fused vs unfused", r.fused, unf);
    // engine vs twin: the same fp32 normalized rows (the same norm code), dot
    // products summed in different orders: each within (K + 2) u sum|a w| of
    // the exact dot of those rows (DOT), so apart by at most twice that; the
    // magnitudes from float64 normalized rows.
    std::vector<double> tol(unf.size());
    for (i64 i = 0; i < M; ++i) {
      double mu = 0, ss = 0;
      for (i64 k = 0; k < K; ++k) mu += x[std::size_t(i * K + k)];
      mu /= double(K);
      for (i64 k = 0; k < K; ++k) ss += (x[std::size_t(i * K + k)] - mu) * (x[std::size_t(i * K + k)] - mu);
      const double inv = 1.0 / std::sqrt(ss / double(K) + 1e-5);
      for (i64 j = 0; j < N; ++j) {
        double mag = 0;
        for (i64 k = 0; k < K; ++k)
          mag += std::abs((x[std::size_t(i * K + k)] - mu) * inv * g[std::size_t(k)] * w[std::size_t(j * K + k)]);
        tol[std::size_t(i * N + j)] = 2.0 * double(K + 2) * u32 * mag * 1.01;  // (1%: fp32 vs float64 rows)
      }
    }
    check_near("engine vs twin: LayerNorm -> linear", r.fused, r.unfused, tol);
  }
  SECTION("conv2d NHWC with groups (implicit GEMM: A and B packed), half inputs, fp64") {
    conv_geom g{2, 8, 13, 11, 12, 3, 3};
    g.pt = g.pl = g.pb = g.pr = 1;
    g.groups = 2;
    const auto x = rnd(std::size_t(g.x_size()), 940), w = rnd(std::size_t(g.w_size()), 941);
    const auto xh = nchw_to_nhwc(x, g.n, g.c, g.h, g.w);
    const auto e = fusor::relu(fusor::conv2d(host_view(xh.data(), g.n, g.h, g.w, g.c), host_view(w.data(), g.cout, g.c / 2, 3, 3),
                                             nullptr, g.params(fusor::layout::nhwc)));
    const both r = run_engine_and_twin(e, 2, g.n, g.ho(), g.wo(), g.cout);
    const dot_ref d = conv_ref(g, x, w);
    const auto ref = epilogue_ref(d, no_bias, [](double z, std::size_t) { return relu_d(z); }, 1.0);
    check_close("engine: grouped NHWC conv vs float64", nhwc_to_nchw(r.fused, g.n, g.cout, g.ho(), g.wo()), ref);
    check_close("twin: grouped NHWC conv vs float64", nhwc_to_nchw(r.unfused, g.n, g.cout, g.ho(), g.wo()), ref);
  }
  SECTION("half inputs (converted per block, fp32 accumulation) and fp64 (dgemm)") {
    const i64 M = 150, K = 40, N = 260;
    const auto x = rnd(std::size_t(M * K), 950), w = rnd(std::size_t(N * K), 951);
    std::vector<__half> xh(x.size()), wh(w.size());
    for (std::size_t i = 0; i < x.size(); ++i) xh[i] = __float2half(x[i]);
    for (std::size_t i = 0; i < w.size(); ++i) wh[i] = __float2half(w[i]);
    const auto d = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return __half2float(xh[std::size_t(i * K + k)]); },
                            [&](i64, i64 k, i64 j) { return __half2float(wh[std::size_t(j * K + k)]); });
    const both r = run_engine_and_twin(fusor::linear(host_view(xh.data(), M, K), host_view(wh.data(), N, K)), 2, M, N);
    // (the halves are exact in fp32 and the output is f32: the DOT bound alone)
    const reference ref = epilogue_ref(d, no_bias, identity, 1.0);
    check_close("engine: half linear vs float64", r.fused, ref);
    std::vector<double> xd(x.begin(), x.end()), wd(w.begin(), w.end()), yd(std::size_t(M * N)), yt(yd.size());
    const auto ed = fusor::linear(host_view(xd.data(), M, K), host_view(wd.data(), N, K));
    auto twin = fusor::host(2);
    twin.gemm_engine = fusor::host_gemm_engine::device_twin;
    fusor::run(host_view(yd.data(), M, N), ed, fusor::host(2));
    fusor::run(host_view(yt.data(), M, N), ed, twin);
    const auto dd = gemm_ref(1, M, N, K, [&](i64, i64 i, i64 k) { return xd[std::size_t(i * K + k)]; },
                             [&](i64, i64 k, i64 j) { return wd[std::size_t(j * K + k)]; });
    double worst = 0;
    for (std::size_t i = 0; i < yd.size(); ++i)
      worst = std::max({worst, std::abs(yd[i] - dd.val[i]) / (double(K + 2) * 0x1p-53 * dd.mag[i] + 1e-300),
                        std::abs(yt[i] - dd.val[i]) / (double(K + 2) * 0x1p-53 * dd.mag[i] + 1e-300)});
    CHECK(worst <= 1.0);  // fp64 accumulation: (K + 2) u64 sum|x w|
  }
}

// Depthwise convs on the host run an output row at a time, the row's outputs
// in SIMD lanes, and a 1x1 conv over a depthwise conv packs its A a pixel run
// at a time (kernels/parts/conv_runs.hpp). Each output gets the device
// twin's terms in the twin's order, so the bits are the same: checked on
// widths of several runs (64 outputs each) with a partial last run, strides,
// dilation, asymmetric padding, a channel multiplier, both layouts, a
// prologue read through the operand's index map, and Inf/NaN inputs.
TEST_CASE("host depthwise rows and the 1x1-over-depthwise pack vs the device twin", "[contraction][engine][conv]") {
  conv_geom g{2, 5, 9, 400, 10, 3, 5};
  g.sh = 2, g.sw = 3, g.dw = 2, g.pt = 1, g.pl = 4, g.pb = 2, g.pr = 0, g.groups = 5;
  const i64 ho = g.ho(), wo = g.wo(), C2 = 10;
  REQUIRE(wo > 128);
  auto x = rnd(std::size_t(g.x_size()), 1500, -2, 2);
  x[17] = std::numeric_limits<float>::infinity();
  x[4000] = std::numeric_limits<float>::quiet_NaN();
  x[12345] = -std::numeric_limits<float>::infinity();
  const auto w = rnd(std::size_t(g.w_size()), 1501), b = rnd(std::size_t(C2), 1502);
  const auto W = host_view(w.data(), C2, 1, 3, 5);
  const auto Bv = host_view(b.data(), C2);
  const auto xh = nchw_to_nhwc(x, g.n, g.c, g.h, g.w);
  const auto X = host_view(x.data(), g.n, g.c, g.h, g.w);
  const auto XH = host_view(xh.data(), g.n, g.h, g.w, g.c);
  for (const int threads : {1, 2}) {
    INFO("threads " << threads);
    const both r = run_engine_and_twin(fusor::relu(fusor::depthwise_conv2d(X, W, Bv, g.params())), threads, g.n, C2, ho, wo);
    CHECK(r.kf == 1);
    check_bitwise("depthwise NCHW: rows vs twin", r.fused, r.unfused);
    const both rh = run_engine_and_twin(fusor::relu(fusor::depthwise_conv2d(XH, W, Bv, g.params(fusor::layout::nhwc))),
                                        threads, g.n, ho, wo, C2);
    check_bitwise("depthwise NHWC: rows vs twin", rh.fused, rh.unfused);
    check_bitwise("depthwise: NCHW rows vs NHWC rows", r.fused, nhwc_to_nchw(rh.fused, g.n, C2, ho, wo));
    const both rp = run_engine_and_twin(fusor::depthwise_conv2d(fusor::tanh(X), W, nullptr, g.params()), threads, g.n, C2, ho, wo);
    CHECK(rp.kf == 1);
    check_bitwise("depthwise of tanh(x): rows vs twin", rp.fused, rp.unfused);
  }
  SECTION("1x1 conv over clip(depthwise): the pack's pixel runs vs the twin") {
    // Small integers: every sum is exact in fp32, so the engine's GEMM
    // (another order than the twin's) gives the same bits, and any wrong
    // pixel or channel in the pack would show.
    auto ints = [](std::size_t n, unsigned seed, float lo, float hi) {
      auto v = rnd(n, seed, lo, hi);
      for (auto& e : v) e = std::round(e);
      return v;
    };
    const i64 Co = 7;
    auto xi = ints(std::size_t(g.x_size()), 1510, -3, 3);
    xi[999] = std::numeric_limits<float>::quiet_NaN();
    const auto wi = ints(std::size_t(g.w_size()), 1511, -2, 2), wp = ints(std::size_t(Co * C2), 1512, -2, 2),
               bd = ints(std::size_t(C2), 1513, -2, 2);
    const auto xih = nchw_to_nhwc(xi, g.n, g.c, g.h, g.w);
    const auto WI = host_view(wi.data(), C2, 1, 3, 5);
    const auto BD = host_view(bd.data(), C2);
    const auto e = fusor::conv2d(fusor::clip(fusor::depthwise_conv2d(host_view(xi.data(), g.n, g.c, g.h, g.w), WI, BD, g.params()), 0.0f, 6.0f),
                                 host_view(wp.data(), Co, C2, 1, 1));
    STATIC_REQUIRE(fusor::kernel_count<decltype(e), fusor::host_policy> == 1);
    fusor::conv2d_params pw;
    pw.layout = fusor::layout::nhwc;
    const auto eh = fusor::conv2d(
        fusor::clip(fusor::depthwise_conv2d(host_view(xih.data(), g.n, g.h, g.w, g.c), WI, BD, g.params(fusor::layout::nhwc)), 0.0f, 6.0f),
        host_view(wp.data(), Co, C2, 1, 1), nullptr, pw);
    for (const int threads : {1, 2}) {
      INFO("threads " << threads);
      const both r = run_engine_and_twin(e, threads, g.n, Co, ho, wo);
      CHECK(r.kf == 1);
      check_bitwise("1x1 over depthwise NCHW: engine vs twin", r.fused, r.unfused);
      std::size_t nans = 0;
      for (const float v : r.fused) nans += std::isnan(v) ? 1 : 0;
      CHECK(nans > 0);  // the NaN input reached the outputs whose window holds it
      CHECK(nans < r.fused.size() / 100);
      const both rh = run_engine_and_twin(eh, threads, g.n, ho, wo, Co);
      check_bitwise("1x1 over depthwise NHWC: engine vs twin", rh.fused, rh.unfused);
      check_bitwise("1x1 over depthwise: NCHW vs NHWC", r.fused, nhwc_to_nchw(rh.fused, g.n, Co, ho, wo));
    }
  }
}

TEST_CASE("three sibling linears over one input expression: one multi-output GEMM, the norm computed once",
          "[contraction][prologue][horizontal]") {
  // siblings(linear(n, wq), linear(n, wk), linear(n, wv)) with n = rms_norm(x, g)
  // (issue 18 item 2 outside attention): one kernel whose prologue normalizes
  // each row once for the three products (plan/attention_projections.hpp);
  // each output bitwise what its linear computes alone, and the unfused
  // executor's values (norm first, then three GEMMs) bit for bit.
  const i64 M = 37, K = 40, N = 24, NK = 8;  // (GQA-like: K and V narrower than Q)
  const auto x = rnd(std::size_t(M * K), 610, -2, 3), g = rnd(std::size_t(K), 611, 0.8f, 1.2f),
             wq = rnd(std::size_t(N * K), 612), wk = rnd(std::size_t(NK * K), 613), wv = rnd(std::size_t(NK * K), 614);
  const auto X = host_view(x.data(), M, K);
  const auto G = host_view(g.data(), K);
  const auto Wq = host_view(wq.data(), N, K);
  const auto Wk = host_view(wk.data(), NK, K);
  const auto Wv = host_view(wv.data(), NK, K);
  const auto n = fusor::rms_norm(X, G, 1e-5f);
  const auto set = fusor::siblings(fusor::linear(n, Wq), fusor::linear(n, Wk), fusor::linear(n, Wv));
  using P = fusor::plan_t<std::remove_cvref_t<decltype(set)>, fusor::host_policy>;
  STATIC_REQUIRE(fusor::plan_kind_v<P> == fusor::plan_kind::guarded);
  STATIC_REQUIRE(fusor::plan_kind_v<decltype(P::recognized)> == fusor::plan_kind::sibling_group);
  std::vector<float> q(std::size_t(M * N), -7), k(std::size_t(M * NK), -7), v(std::size_t(M * NK), -7);
  const auto outs = fusor::outputs(host_view(q.data(), M, N), host_view(k.data(), M, NK), host_view(v.data(), M, NK));
  CHECK(fusor::run(outs, set, fusor::host()).kernels == 1);
  CHECK_THAT(fusor::explain(set), Catch::Contains("one multi-output GEMM"));
  auto alone = [&](const auto& e, i64 cols) {
    std::vector<float> r(std::size_t(M * cols), -9);
    fusor::run(host_view(r.data(), M, cols), e, fusor::host());
    return r;
  };
  CHECK(q == alone(fusor::linear(n, Wq), N));
  CHECK(k == alone(fusor::linear(n, Wk), NK));
  CHECK(v == alone(fusor::linear(n, Wv), NK));
  std::vector<float> qu(q.size()), ku(k.size()), vu(v.size());
  fusor::run(fusor::outputs(host_view(qu.data(), M, N), host_view(ku.data(), M, NK), host_view(vu.data(), M, NK)), set,
             fusor::unfused());
  CHECK(q == qu);
  CHECK(k == ku);
  CHECK(v == vu);
  SECTION("inputs that differ at run time: three GEMMs, each its own input") {
    auto x2 = x;
    x2[5] += 1.0f;
    const auto n2 = fusor::rms_norm(host_view(x2.data(), M, K), G, 1e-5f);
    const auto mixed = fusor::siblings(fusor::linear(n, Wq), fusor::linear(n2, Wk), fusor::linear(n, Wv));
    CHECK(fusor::run(outs, mixed, fusor::host()).kernels == 3);
    CHECK(q == alone(fusor::linear(n, Wq), N));
    CHECK(k == alone(fusor::linear(n2, Wk), NK));
    CHECK(v == alone(fusor::linear(n, Wv), NK));
  }
  SECTION("a plain view as the shared input") {
    const auto plain = fusor::siblings(fusor::linear(X, Wq), fusor::linear(X, Wk), fusor::linear(X, Wv));
    CHECK(fusor::run(outs, plain, fusor::host()).kernels == 1);
    CHECK(q == alone(fusor::linear(X, Wq), N));
    CHECK(v == alone(fusor::linear(X, Wv), NK));
  }
}

TEST_CASE("two and four sibling linears over one input expression: one multi-output GEMM each",
          "[contraction][prologue][horizontal]") {
  // SwiGLU's gate and up projections siblings(linear(n, w1, b1), linear(n,
  // w3)) over n = layer_norm(x) (issue 18 item 2: W1 and W3 as one GEMM),
  // with epilogues, four linears over a plain view, matmuls: one kernel
  // each, every output bitwise its linear alone and the unfused executor's;
  // N GEMMs when the inputs differ at run time.
  const i64 M = 33, K = 24, F = 40;
  const auto x = rnd(std::size_t(M * K), 620, -2, 3), g = rnd(std::size_t(K), 621, 0.8f, 1.2f),
             be = rnd(std::size_t(K), 622), w1 = rnd(std::size_t(F * K), 623), w3 = rnd(std::size_t(F * K), 624),
             b1 = rnd(std::size_t(F), 625);
  const auto X = host_view(x.data(), M, K);
  const auto W1 = host_view(w1.data(), F, K);
  const auto W3 = host_view(w3.data(), F, K);
  const auto B1 = host_view(b1.data(), F);
  const auto n = fusor::layer_norm(X, host_view(g.data(), K), host_view(be.data(), K));
  auto alone = [&](const auto& e, i64 cols) {
    std::vector<float> r(std::size_t(M * cols), -9);
    fusor::run(host_view(r.data(), M, cols), e, fusor::host());
    return r;
  };
  std::vector<float> a(std::size_t(M * F), -7), b(std::size_t(M * F), -7);
  const auto outs = fusor::outputs(host_view(a.data(), M, F), host_view(b.data(), M, F));
  SECTION("two: SwiGLU's W1 (with a bias) and W3") {
    const auto set = fusor::siblings(fusor::linear(n, W1, B1), fusor::linear(n, W3));
    using P = fusor::plan_t<std::remove_cvref_t<decltype(set)>, fusor::host_policy>;
    STATIC_REQUIRE(fusor::plan_kind_v<P> == fusor::plan_kind::guarded);
    STATIC_REQUIRE(fusor::plan_kind_v<decltype(P::recognized)> == fusor::plan_kind::sibling_group);
    STATIC_REQUIRE(fusor::rule_launches_v<fusor::group_rule_t<decltype(P::written)>> == 2);
    CHECK(fusor::run(outs, set, fusor::host()).kernels == 1);
    CHECK(a == alone(fusor::linear(n, W1, B1), F));
    CHECK(b == alone(fusor::linear(n, W3), F));
    std::vector<float> au(a.size()), bu(b.size());
    fusor::run(fusor::outputs(host_view(au.data(), M, F), host_view(bu.data(), M, F)), set, fusor::unfused());
    CHECK(a == au);
    CHECK(b == bu);
    auto x2 = x;
    const auto n2 = fusor::layer_norm(host_view(x2.data(), M, K), host_view(g.data(), K), host_view(be.data(), K));
    const auto mixed = fusor::siblings(fusor::linear(n, W1, B1), fusor::linear(n2, W3));
    CHECK(fusor::run(outs, mixed, fusor::host()).kernels == 2);  // equal values, other tensors: two GEMMs
    CHECK(a == au);
    CHECK(b == bu);
    // layer_norm over axis 1 of a rank-2 x is layer_norm over axis -1: one input.
    const auto n1 = fusor::layer_norm(X, host_view(g.data(), K), host_view(be.data(), K), 1, 1e-5f);
    CHECK(fusor::run(outs, fusor::siblings(fusor::linear(n, W1, B1), fusor::linear(n1, W3)), fusor::host()).kernels == 1);
    CHECK(a == au);
    CHECK(b == bu);
  }
  SECTION("four over a plain view; five with one input differing") {
    std::vector<float> c(std::size_t(M * F), -7), d(std::size_t(M * 8), -7), e5(std::size_t(M * F), -7);
    const auto Wd = host_view(w3.data(), 8, K);
    const auto set = fusor::siblings(fusor::linear(X, W1), fusor::linear(X, W3, B1), fusor::linear(X, W1, B1),
                                     fusor::linear(X, Wd));
    const auto outs4 = fusor::outputs(host_view(a.data(), M, F), host_view(b.data(), M, F),
                                      host_view(c.data(), M, F), host_view(d.data(), M, 8));
    CHECK(fusor::run(outs4, set, fusor::host()).kernels == 1);
    CHECK(a == alone(fusor::linear(X, W1), F));
    CHECK(b == alone(fusor::linear(X, W3, B1), F));
    CHECK(c == alone(fusor::linear(X, W1, B1), F));
    CHECK(d == alone(fusor::linear(X, Wd), 8));
    auto x2 = x;
    x2[3] = -x2[3];
    const auto X2 = host_view(x2.data(), M, K);
    const auto set5 = fusor::siblings(fusor::linear(X, W1), fusor::linear(X, W3, B1), fusor::linear(X, W1, B1),
                                      fusor::linear(X, Wd), fusor::linear(X2, W3));
    CHECK(fusor::run(fusor::outputs(host_view(a.data(), M, F), host_view(b.data(), M, F), host_view(c.data(), M, F),
                                    host_view(d.data(), M, 8), host_view(e5.data(), M, F)),
                     set5, fusor::host())
              .kernels == 5);
    CHECK(e5 == alone(fusor::linear(X2, W3), F));
    CHECK(a == alone(fusor::linear(X, W1), F));
    CHECK(d == alone(fusor::linear(X, Wd), 8));
  }
  SECTION("epilogues: silu(linear(n, w1, b1)) and linear(n, w3) * s, each its own") {
    // (An epilogue reading a broadcast operand, `linear(n, w) * s + r` with r
    // of shape [F], is a guarded plan of its own (epilogue at the producer's
    // shape) and keeps its siblings apart: 2 kernels.)
    const auto set = fusor::siblings(fusor::silu(fusor::linear(n, W1, B1)), fusor::linear(n, W3) * 0.5f);
    CHECK(fusor::run(outs, set, fusor::host()).kernels == 1);
    CHECK(a == alone(fusor::silu(fusor::linear(n, W1, B1)), F));
    CHECK(b == alone(fusor::linear(n, W3) * 0.5f, F));
    std::vector<float> au(a.size()), bu(b.size());
    fusor::run(fusor::outputs(host_view(au.data(), M, F), host_view(bu.data(), M, F)), set, fusor::unfused());
    CHECK(a == au);
    CHECK(b == bu);
    // (`linear(n, w3) + b1` is linear(n, w3, b1): canonicalization moves the add into its bias.)
    const auto broadcast = fusor::siblings(fusor::silu(fusor::linear(n, W1)), fusor::linear(n, W3) * 0.5f + B1);
    CHECK(fusor::run(outs, broadcast, fusor::host()).kernels == 2);
    CHECK(b == alone(fusor::linear(n, W3) * 0.5f + B1, F));
  }
  SECTION("an input a kernel of its own computes (softmax): not one GEMM; the producer shared by value") {
    auto w3m = w3;
    const auto W3c = host_view(w3m.data(), F, K);  // float, not const float: the linears do not repeat
    const auto set = fusor::siblings(fusor::linear(fusor::softmax(X, -1), W1), fusor::linear(fusor::softmax(X, -1), W3c));
    CHECK(fusor::run(outs, set, fusor::host()).kernels == 3);  // the softmax once, then two GEMMs
    CHECK(a == alone(fusor::linear(fusor::softmax(X, -1), W1), F));
    CHECK(b == alone(fusor::linear(fusor::softmax(X, -1), W3c), F));
  }
  SECTION("matmuls of matrices, and a linear, over one rms_norm") {
    // w1 and w3 read as [K, F] matrices (matmul's B), w1 also as linear's [F, K].
    const auto nr = fusor::rms_norm(X, host_view(g.data(), K), 1e-5f);
    const auto Kt1 = host_view(w1.data(), K, F);
    const auto Kt3 = host_view(w3.data(), K, F);
    const auto set = fusor::siblings(fusor::matmul(nr, Kt1), fusor::matmul(nr, Kt3), fusor::linear(nr, W1));
    std::vector<float> c(std::size_t(M * F), -7);
    CHECK(fusor::run(fusor::outputs(host_view(a.data(), M, F), host_view(b.data(), M, F), host_view(c.data(), M, F)),
                     set, fusor::host())
              .kernels == 1);
    CHECK(a == alone(fusor::matmul(nr, Kt1), F));
    CHECK(b == alone(fusor::matmul(nr, Kt3), F));
    CHECK(c == alone(fusor::linear(nr, W1), F));
  }
}
