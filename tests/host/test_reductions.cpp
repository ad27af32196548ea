// Reductions, softmax and norms on the host executor, against float64
// references computed here (independent of fusor's kernels) and against the
// unfused executor.
//
// Tolerances: fusor accumulates in fp32 with 256 lane partials merged in a
// pairwise tree, so a sum of n terms has error about (n/256 + log2 256) * eps
// * sum|x|; we allow 1e-5 relative to sum|x| for n <= 8193 (about 4x that
// bound). softmax/layer_norm elements: 1e-5 relative + 1e-6 absolute (a few
// fp32 operations per element after an accurate reduction).
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {
using fusor::host_view;
const float inf = std::numeric_limits<float>::infinity();
const float qnan = std::numeric_limits<float>::quiet_NaN();

std::vector<float> random_vec(std::size_t n, unsigned seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}
}  // namespace

TEST_CASE("sum/mean/max/min/sum_square/l2/logsumexp over one row of many sizes", "[reduction]") {
  for (int n : {1, 31, 32, 33, 1023, 1024, 1025, 8191, 8192, 8193}) {
    INFO("n = " << n);
    const auto v = random_vec(std::size_t(n), unsigned(n));
    double s = 0, sa = 0, sq = 0, mx = -1e300, mn = 1e300, mlse = -1e300;
    for (float x : v) {
      s += x; sa += std::abs(x); sq += double(x) * x;
      mx = std::max(mx, double(x)); mn = std::min(mn, double(x));
    }
    mlse = mx;
    double se = 0;
    for (float x : v) se += std::exp(double(x) - mlse);
    const auto x = host_view(v.data(), n);
    float out = qnan;
    auto o = host_view(&out, 1);
    const double tol = 1e-5 * sa + 1e-7;
    fusor::run(o, fusor::sum(x, {0}), fusor::host());
    CHECK(std::abs(out - s) <= tol);
    fusor::run(o, fusor::mean(x, {0}), fusor::host());
    CHECK(std::abs(out - s / n) <= tol / n);
    fusor::run(o, fusor::max_reduce(x), fusor::host());
    CHECK(out == float(mx));
    fusor::run(o, fusor::min_reduce(x, {-1}), fusor::host());
    CHECK(out == float(mn));
    fusor::run(o, fusor::sum_square(x, {0}), fusor::host());
    CHECK(std::abs(out - sq) <= 1e-5 * sq);
    fusor::run(o, fusor::l2_norm(x, {0}), fusor::host());
    CHECK(std::abs(out - std::sqrt(sq)) <= 1e-5 * std::sqrt(sq));
    fusor::run(o, fusor::logsumexp(x, {0}), fusor::host());
    CHECK(std::abs(out - (mlse + std::log(se))) <= 1e-5 * (1 + std::abs(mlse + std::log(se))));
  }
}

TEST_CASE("reductions over axis sets, keepdims and dropped dims, negative axes, strided input", "[reduction]") {
  const int A = 3, B = 5, C = 7;
  const auto v = random_vec(A * B * C, 7);
  const auto x = host_view(v.data(), A, B, C);
  auto at = [&](int a, int b, int c) { return double(v[(a * B + b) * C + c]); };
  SECTION("axes {0, 2} keepdims -> [1, B, 1]") {
    std::vector<float> out(B, qnan);
    const auto r = fusor::run(host_view(out.data(), 1, B, 1), fusor::sum(x, {0, -1}), fusor::host());
    CHECK(r.kernels == 1);
    for (int b = 0; b < B; ++b) {
      double s = 0;
      for (int a = 0; a < A; ++a) for (int c = 0; c < C; ++c) s += at(a, b, c);
      CHECK(out[b] == Approx(s).margin(1e-5));
    }
  }
  SECTION("axis {1} without keepdims -> [A, C]") {
    std::vector<float> out(A * C, qnan);
    fusor::run(host_view(out.data(), A, C), fusor::max_reduce<2>(x, {1}, false), fusor::host());
    for (int a = 0; a < A; ++a)
      for (int c = 0; c < C; ++c) {
        double m = -1e300;
        for (int b = 0; b < B; ++b) m = std::max(m, at(a, b, c));
        CHECK(out[a * C + c] == float(m));
      }
  }
  SECTION("all axes without keepdims -> rank 0") {
    float out = qnan;
    fusor::run(host_view(&out, fusor::extents<>{}), fusor::mean<0>(x, {}, false), fusor::host());
    double s = 0;
    for (float f : v) s += f;
    CHECK(out == Approx(s / (A * B * C)).margin(1e-6));
  }
  SECTION("a transposed (strided) input view") {
    // x viewed as [C, B, A] through strides: reduce over its dim 0 (c).
    const auto xt = host_view(v.data(), fusor::dextents<3>(C, B, A), fusor::shape<3>{1, C, B * C});
    std::vector<float> out(B * A, qnan);
    fusor::run(host_view(out.data(), 1, B, A), fusor::sum(xt, {0}), fusor::host());
    for (int b = 0; b < B; ++b)
      for (int a = 0; a < A; ++a) {
        double s = 0;
        for (int c = 0; c < C; ++c) s += at(a, b, c);
        CHECK(out[b * A + a] == Approx(s).margin(1e-5));
      }
  }
  SECTION("errors: wrong static rank, bad axis, duplicate axis") {
    std::vector<float> out(A * C);
    CHECK_THROWS_AS(fusor::run(host_view(out.data(), A, C), fusor::sum<2>(x, {1, 2}, false), fusor::host()),
                    fusor::shape_error);
    CHECK_THROWS_AS(fusor::run(host_view(out.data(), A, 1, C), fusor::sum(x, {3}), fusor::host()), fusor::shape_error);
    CHECK_THROWS_AS(fusor::run(host_view(out.data(), A, 1, C), fusor::sum(x, {1, -2}), fusor::host()), fusor::shape_error);
  }
}

TEST_CASE("max/min: -0.0 and NaN", "[reduction]") {
  std::vector<float> z(33, -0.0f);
  float out = 1;
  fusor::run(host_view(&out, 1), fusor::max_reduce(host_view(z.data(), 33)), fusor::host());
  CHECK(out == 0.0f);
  CHECK(std::signbit(out));
  fusor::run(host_view(&out, 1), fusor::sum(host_view(z.data(), 33)), fusor::host());
  CHECK(std::signbit(out));
  z[17] = qnan;
  z[3] = inf;
  fusor::run(host_view(&out, 1), fusor::max_reduce(host_view(z.data(), 33)), fusor::host());
  CHECK(std::isnan(out));
  fusor::run(host_view(&out, 1), fusor::min_reduce(host_view(z.data(), 33)), fusor::host());
  CHECK(std::isnan(out));
  fusor::run(host_view(&out, 1), fusor::sum(host_view(z.data(), 33)), fusor::host());
  CHECK(std::isnan(out));
  fusor::run(host_view(&out, 1), fusor::logsumexp(host_view(z.data(), 33)), fusor::host());
  CHECK(std::isnan(out));
}

TEST_CASE("softmax and log_softmax: -inf entries, all -inf rows, huge values", "[reduction][softmax]") {
  const int R = 4, N = 1025;
  std::vector<float> v = random_vec(R * N, 11);
  for (int j = 0; j < N; j += 3) v[j] = -inf;            // row 0: some -inf
  for (int j = 0; j < N; ++j) v[N + j] = -inf;             // row 1: all -inf
  for (int j = 0; j < N; ++j) v[2 * N + j] = 1e30f * float(j % 5) / 4.0f;  // row 2: huge
  const auto x = host_view(v.data(), R, N);
  std::vector<float> sm(R * N, qnan), lsm(R * N, qnan), ref(R * N, qnan);
  const auto r = fusor::run(host_view(sm.data(), R, N), fusor::softmax(x, -1), fusor::host());
  CHECK(r.kernels == 1);
  fusor::run(host_view(lsm.data(), R, N), fusor::log_softmax(x, 1), fusor::host());
  for (int i = 0; i < R; ++i) {
    INFO("row " << i);
    double m = -INFINITY;
    for (int j = 0; j < N; ++j) m = std::max(m, double(v[i * N + j]));
    double s = 0;
    for (int j = 0; j < N; ++j) s += std::exp(double(v[i * N + j]) - m);
    for (int j = 0; j < N; ++j) {
      const double d = double(v[i * N + j]) - m;  // NaN for an all -inf row
      const double want = std::exp(d) / s, lwant = d - std::log(s);
      const float got = sm[i * N + j], lgot = lsm[i * N + j];
      if (std::isnan(want)) {
        CHECK(std::isnan(got));
        CHECK(std::isnan(lgot));
      } else {
        CHECK(std::abs(got - want) <= 1e-5 * want + 1e-7);
        if (std::isinf(lwant)) CHECK(lgot == float(lwant));
        else CHECK(std::abs(lgot - lwant) <= 1e-5 * std::abs(lwant) + 1e-5);
      }
    }
  }
  // the all -inf row is NaN, as the unfused textbook formula gives
  CHECK(std::isnan(sm[N]));
}

TEST_CASE("prologue fusion: mean(square(a - b)) is one kernel and reads a and b in it", "[reduction][fusion]") {
  const int R = 8, N = 1000;
  const auto a = random_vec(R * N, 1), b = random_vec(R * N, 2);
  const auto va = host_view(a.data(), R, N), vb = host_view(b.data(), R, N);
  const auto e = fusor::mean(fusor::square(va - vb), {1});
  std::vector<float> f(R, qnan), u(R, qnan);
  const auto rf = fusor::run(host_view(f.data(), R, 1), e, fusor::host());
  const auto ru = fusor::run(host_view(u.data(), R, 1), e, fusor::unfused());
  CHECK(rf.kernels == 1);
  CHECK(ru.kernels == 3);
  // temporaries in compute precision: fused and unfused agree bitwise
  CHECK(std::memcmp(f.data(), u.data(), sizeof(float) * R) == 0);
  for (int i = 0; i < R; ++i) {
    double s = 0;
    for (int j = 0; j < N; ++j) s += (double(a[i * N + j]) - b[i * N + j]) * (double(a[i * N + j]) - b[i * N + j]);
    CHECK(f[i] == Approx(s / N).epsilon(1e-5));
  }
  // scalar work on the reduced value is the reduction's epilogue
  std::vector<float> g(R, qnan);
  const auto rg = fusor::run(host_view(g.data(), R, 1), fusor::sqrt(e), fusor::host());
  CHECK(rg.kernels == 1);
  for (int i = 0; i < R; ++i) CHECK(g[i] == std::sqrt(f[i]));
}

TEST_CASE("layer_norm: large common offset vs a float64 reference; gamma and beta", "[reduction][norm]") {
  const int R = 5, N = 1023;
  auto v = random_vec(R * N, 3, -1.0f, 1.0f);
  for (int i = 0; i < R * N; ++i) v[i] += 1.0e4f;  // offset 1e4: a naive E[x^2]-E[x]^2 loses all digits
  const auto g = random_vec(N, 4, 0.5f, 1.5f), bb = random_vec(N, 5);
  const auto x = host_view(v.data(), R, N);
  std::vector<float> y(R * N, qnan), yu(R * N, qnan);
  const float eps = 1e-5f;
  const auto e = fusor::layer_norm(x, host_view(g.data(), N), host_view(bb.data(), N), -1, eps);
  CHECK(fusor::run(host_view(y.data(), R, N), e, fusor::host()).kernels == 1);
  fusor::run(host_view(yu.data(), R, N), e, fusor::unfused());
  CHECK(std::memcmp(y.data(), yu.data(), sizeof(float) * y.size()) == 0);
  for (int i = 0; i < R; ++i) {
    double m = 0, var = 0;
    for (int j = 0; j < N; ++j) m += v[i * N + j];
    m /= N;
    for (int j = 0; j < N; ++j) var += (v[i * N + j] - m) * (v[i * N + j] - m);
    var /= N;
    for (int j = 0; j < N; ++j) {
      const double want = (v[i * N + j] - m) / std::sqrt(var + eps) * g[j] + bb[j];
      // fp32 cannot hold the mean closer than half an ulp of 1e4 (4.9e-4);
      // divided by the std (~0.58) and times gamma (<= 1.5) that is 1.3e-3
      // on y. A one-pass E[x^2] - E[x]^2 in fp32 would be off by O(1) here.
      CHECK(std::abs(y[i * N + j] - want) <= 1.5e-3);
    }
  }
}

TEST_CASE("rms_norm with fp16 inputs whose squares overflow fp16", "[reduction][norm]") {
  const int N = 64;
  std::vector<__half> h(N);
  std::vector<float> hf(N);
  for (int j = 0; j < N; ++j) {
    hf[j] = float(j % 2 ? 300 + j : -(400 + j));  // 300^2 = 9e4 > 65504 (fp16 max)
    h[j] = __float2half(hf[j]);
    hf[j] = __half2float(h[j]);
  }
  std::vector<__half> y(N);
  const auto e = fusor::rms_norm(host_view(h.data(), 1, N), nullptr, 1e-6f);
  fusor::run(host_view(y.data(), 1, N), e, fusor::host());
  double ss = 0;
  for (float f : hf) ss += double(f) * f;
  const double inv = 1 / std::sqrt(ss / N + 1e-6);
  for (int j = 0; j < N; ++j) {
    const float got = __half2float(y[j]);
    CHECK(std::isfinite(got));
    CHECK(std::abs(got - hf[j] * inv) <= 2e-3 * std::abs(hf[j] * inv) + 1e-3);  // fp16 output rounding
  }
}

TEST_CASE("reduction epilogues: one kernel, bitwise equal to the unfused reference", "[reduction][epilogue]") {
  const int M = 37, N = 300;
  std::vector<float> x(M * N), r(M * N), g(N), b(N);
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, 2.0f);
  for (auto* v : {&x, &r, &g, &b})
    for (auto& e : *v) e = d(rng);
  x[5] = std::numeric_limits<float>::quiet_NaN();                  // row 0 becomes NaN in both
  x[N + 7] = std::numeric_limits<float>::infinity();               // row 1: softmax NaN/0 like unfused
  const auto X = host_view(x.data(), M, N);
  const auto R = host_view(r.data(), M, N);
  const auto G = host_view(g.data(), N);
  const auto B = host_view(b.data(), N);
  std::vector<float> f(M * N), u(M * N);
  const auto F = host_view(f.data(), M, N);
  const auto U = host_view(u.data(), M, N);
  auto same = [&](const std::vector<float>& a, const std::vector<float>& c) {
    // Same functors, same order: bitwise (NaNs compared as NaN).
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!(std::memcmp(&a[i], &c[i], sizeof(float)) == 0 || (std::isnan(a[i]) && std::isnan(c[i])))) return false;
    return true;
  };
  SECTION("layer_norm + residual") {
    const auto e = fusor::layer_norm(X, G, B) + R;
    CHECK(fusor::run(F, e, fusor::host()).kernels == 1);
    CHECK(fusor::run(U, e, fusor::unfused()).kernels == 2);
    CHECK(same(f, u));
    CHECK(std::isnan(f[0]));
  }
  SECTION("relu(softmax) * 2 and rms_norm * w") {
    const auto e = fusor::relu(fusor::softmax(X)) * 2.0f;
    CHECK(fusor::run(F, e, fusor::host()).kernels == 1);
    fusor::run(U, e, fusor::unfused());
    CHECK(same(f, u));
    const auto e2 = fusor::rms_norm(X, nullptr) * G;
    CHECK(fusor::run(F, e2, fusor::host()).kernels == 1);
    fusor::run(U, e2, fusor::unfused());
    CHECK(same(f, u));
  }
  SECTION("sqrt(mean(x^2) + eps) per row; x - max(x) is two kernels") {
    std::vector<float> fr(M), ur(M);
    const auto e = fusor::sqrt(fusor::mean(fusor::square(X), {1}) + 1e-5f);
    CHECK(fusor::run(host_view(fr.data(), M, 1), e, fusor::host()).kernels == 1);
    CHECK(fusor::run(host_view(ur.data(), M, 1), e, fusor::unfused()).kernels == 4);
    CHECK(same(fr, ur));
    const auto e2 = X - fusor::max_reduce(X, {1});
    CHECK(fusor::run(F, e2, fusor::host()).kernels == 2);
    fusor::run(U, e2, fusor::unfused());
    CHECK(same(f, u));
  }
  SECTION("an epilogue operand larger than the normalized tensor: normalization first, then the rest") {
    std::vector<float> big(2 * M * N), fb(2 * M * N), ub(2 * M * N);
    for (auto& e : big) e = d(rng);
    const auto e = fusor::layer_norm(X, G, B) + host_view(big.data(), 2, M, N);
    CHECK(fusor::run(host_view(fb.data(), 2, M, N), e, fusor::host()).kernels == 2);
    fusor::run(host_view(ub.data(), 2, M, N), e, fusor::unfused());
    CHECK(same(fb, ub));
  }
}

TEST_CASE("instance_norm and mse_loss", "[reduction][norm]") {
  const int N = 2, C = 3, H = 4, W = 5;
  std::vector<float> x(N * C * H * W), s{1, 2, 3}, b{0.5f, -1, 0}, y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i) * 0.7f) * 3 + float(i % 7) + 1e3f;
  const auto e = fusor::instance_norm(host_view(x.data(), N, C, H, W), host_view(s.data(), C), host_view(b.data(), C), 1e-5f);
  CHECK(fusor::run(host_view(y.data(), N, C, H, W), e, fusor::host()).kernels == 1);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) {
      double m = 0, v = 0;
      for (int i = 0; i < H * W; ++i) m += x[(n * C + c) * H * W + i];
      m /= H * W;
      for (int i = 0; i < H * W; ++i) v += (x[(n * C + c) * H * W + i] - m) * (x[(n * C + c) * H * W + i] - m);
      v /= H * W;
      for (int i = 0; i < H * W; ++i) {
        const double want = (x[(n * C + c) * H * W + i] - m) / std::sqrt(v + 1e-5) * s[c] + b[c];
        // Inputs near 1e3: fp32 holds them to 6e-5; the two-pass variance keeps
        // that relative to the spread (~2), times scale <= 3: 1e-4 with margin.
        CHECK(std::abs(y[(n * C + c) * H * W + i] - want) <= 5e-4);
      }
    }
  std::vector<float> a{1, 2, 3, 4}, t{2, 2, 2, 6};
  float out = 0;
  const auto A = host_view(a.data(), 4);
  const auto T = host_view(t.data(), 4);
  CHECK(fusor::run(host_view(&out, fusor::extents<>{}), fusor::mse_loss(A, T), fusor::host()).kernels == 1);
  CHECK(out == (1.0f + 0 + 1 + 4) / 4);
  fusor::run(host_view(&out, fusor::extents<>{}), fusor::mse_loss<fusor::loss_reduction::sum>(A, T), fusor::host());
  CHECK(out == 6.0f);
  std::vector<float> none(4);
  fusor::run(host_view(none.data(), 4), fusor::mse_loss<fusor::loss_reduction::none>(A, T), fusor::host());
  CHECK(none == std::vector<float>{1, 0, 1, 4});
}

// ------------------------------------------------------------------------
// Decomposed forms (recognize/decomposed.hpp). The recognised expression IS the
// fused op with the written axis and eps, so its result is bitwise the op's.
// Against the written form on the unfused executor the difference is the
// fused op's summation order and formula (x * rsqrt vs / sqrt): elements
// within 1e-5 relative + 1e-6 absolute (the same bound as the tests above:
// a few fp32 roundings per element after an fp32 reduction); NaN positions
// and infinities equal.
namespace {
template <class E, class Op>
void check_recognized(const E& written, const Op& fused_op, int rows, int cols, std::size_t unfused_kernels) {
  std::vector<float> a(rows * cols, qnan), b(rows * cols, qnan), c(rows * cols, qnan);
  const auto r = fusor::run(host_view(a.data(), rows, cols), written, fusor::host());
  CHECK(r.kernels == 1);
  fusor::run(host_view(b.data(), rows, cols), fused_op, fusor::host());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  const auto u = fusor::run(host_view(c.data(), rows, cols), written, fusor::unfused());
  CHECK(u.kernels == unfused_kernels);
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i << ": fused " << a[i] << " written " << c[i]);
    if (std::isnan(c[i])) CHECK(std::isnan(a[i]));
    else if (std::isinf(c[i])) CHECK(a[i] == c[i]);
    else CHECK(std::abs(a[i] - c[i]) <= 1e-5 * std::abs(c[i]) + 1e-6);
  }
}
}  // namespace

TEST_CASE("decomposed softmax / log_softmax / layer_norm / rms_norm run the fused op", "[reduction][decomposed]") {
  for (int cols : {1, 33, 1025}) {
    const int rows = 5;
    INFO("cols " << cols);
    std::vector<float> v = random_vec(rows * cols, 100 + cols, -4.0f, 4.0f);
    for (int j = 0; j < cols; j += 4) v[j] = -inf;      // row 0: -inf entries
    for (int j = 0; j < cols; ++j) v[cols + j] = -inf;  // row 1: all -inf (NaN out)
    v[2 * cols] = qnan;                                 // row 2: a NaN
    const auto x = host_view(v.data(), rows, cols);
    const auto sh = x - fusor::max_reduce(x, {-1});
    SECTION("softmax") {
      check_recognized(fusor::exp(sh) / fusor::sum(fusor::exp(sh), {1}), fusor::softmax(x, 1), rows, cols, 8);
    }
    SECTION("log_softmax, both forms") {
      check_recognized(x - fusor::logsumexp(x, {-1}), fusor::log_softmax(x, -1), rows, cols, 2);
      check_recognized(-fusor::logsumexp(x, {1}) + x, fusor::log_softmax(x, 1), rows, cols, 3);  // x + (-lse) is x - lse
      check_recognized(sh - fusor::log(fusor::sum(fusor::exp(sh), {-1})), fusor::log_softmax(x, -1), rows, cols, 8);
    }
    std::vector<float> w = random_vec(rows * cols, 7 + cols, 1e4f - 1.0f, 1e4f + 1.0f);  // large common offset
    const auto y = host_view(w.data(), rows, cols);
    const auto c = y - fusor::mean(y, {-1});
    SECTION("layer_norm, / sqrt and * rsqrt") {
      check_recognized(c / fusor::sqrt(fusor::mean(fusor::square(c), {-1}) + 1e-5f),
                       fusor::layer_norm(y, nullptr, nullptr, -1, 1e-5f), rows, cols, 9);
      check_recognized(fusor::rsqrt(fusor::mean(c * c, {1}) + 1e-3) * c, fusor::layer_norm(y, nullptr, nullptr, 1, 1e-3f),
                       rows, cols, 11);
    }
    SECTION("ONNX's function bodies: reciprocal(sqrt(...)), pow(d, 2), e * reciprocal(sum(e))") {
      check_recognized(c * fusor::reciprocal(fusor::sqrt(fusor::mean(c * c, {-1}) + 1e-5f)),
                       fusor::layer_norm(y, nullptr, nullptr, -1, 1e-5f), rows, cols, 12);
      check_recognized(fusor::reciprocal(fusor::sqrt(fusor::mean(fusor::pow(c, 2.0f), {-1}) + 1e-5f)) * c,
                       fusor::layer_norm(y, nullptr, nullptr, -1, 1e-5f), rows, cols, 10);
      check_recognized(x * fusor::reciprocal(fusor::sqrt(fusor::mean(fusor::pow(x, 2.0f), {-1}) + 1e-6f)),
                       fusor::rms_norm(x, nullptr, 1e-6f), rows, cols, 6);
      check_recognized(fusor::exp(sh) * fusor::reciprocal(fusor::sum(fusor::exp(sh), {1})), fusor::softmax(x, 1), rows,
                       cols, 9);
    }
    SECTION("rms_norm, both forms") {
      check_recognized(x * fusor::rsqrt(fusor::mean(fusor::square(x), {-1}) + 1e-6f), fusor::rms_norm(x, nullptr, 1e-6f),
                       rows, cols, 5);
      check_recognized(y / fusor::sqrt(1e-6 + fusor::mean(y * y, {-1})), fusor::rms_norm(y, nullptr, 1e-6f), rows, cols, 5);
    }
  }
}

TEST_CASE("decomposed forms: over trailing axes of rank 3, strided and tagged inputs, fp16", "[reduction][decomposed]") {
  const int B = 3, S = 4, D = 40;
  std::vector<float> v = random_vec(B * S * D, 5);
  const auto x3 = host_view(v.data(), B, S, D);
  const auto c = x3 - fusor::mean(x3, {1, 2});
  std::vector<float> a(B * S * D), b(B * S * D);
  auto r = fusor::run(host_view(a.data(), B, S, D), c / fusor::sqrt(fusor::mean(fusor::square(c), {-2, -1}) + 1e-5f),
                      fusor::host());
  CHECK(r.kernels == 1);  // axes {1, 2} and {-2, -1} are the same trailing set: layer_norm(axis 1)
  fusor::run(host_view(b.data(), B, S, D), fusor::layer_norm(x3, nullptr, nullptr, 1, 1e-5f), fusor::host());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);

  // a strided (every other column) and identity-tagged operand
  struct X {};
  const auto xs = host_view(v.data(), fusor::dextents<2>(B * S, D / 2), fusor::shape<2>{D, 2}).with_id<X>();
  const auto sh = xs - fusor::max_reduce(xs, {1});
  std::vector<float> p(B * S * D / 2), q(B * S * D / 2);
  r = fusor::run(host_view(p.data(), B * S, D / 2), fusor::exp(sh) / fusor::sum(fusor::exp(sh), {1}), fusor::host());
  CHECK(r.kernels == 1);
  fusor::run(host_view(q.data(), B * S, D / 2), fusor::softmax(xs, 1), fusor::host());
  CHECK(std::memcmp(p.data(), q.data(), p.size() * sizeof(float)) == 0);

  // fp16 input (computed in fp32 either way)
  std::vector<__half> h(B * S * D);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = __float2half(v[i] * 3);
  const auto xh = host_view(h.data(), B * S, D);
  std::vector<__half> hp(h.size()), hq(h.size());
  r = fusor::run(host_view(hp.data(), B * S, D), xh * fusor::rsqrt(fusor::mean(fusor::square(xh), {1}) + 1e-5f), fusor::host());
  CHECK(r.kernels == 1);
  fusor::run(host_view(hq.data(), B * S, D), fusor::rms_norm(xh, nullptr, 1e-5f), fusor::host());
  CHECK(std::memcmp(hp.data(), hq.data(), hp.size() * sizeof(__half)) == 0);
}

TEST_CASE("lookalikes of decomposed forms run as written", "[reduction][decomposed]") {
  const int R = 6, N = 50;
  std::vector<float> v = random_vec(R * N, 21), v2 = random_vec(R * N, 22);
  const auto x = host_view(v.data(), R, N);
  const auto x2 = host_view(v2.data(), R, N);  // same view type, other tensor
  auto same_as_unfused = [&](const auto& e, const char* what) {
    INFO(what);
    std::vector<float> a(R * N, qnan), b(R * N, qnan);
    const auto r = fusor::run(host_view(a.data(), R, N), e, fusor::host());
    CHECK(r.kernels > 1);  // not one fused op
    fusor::run(host_view(b.data(), R, N), e, fusor::unfused());
    for (int i = 0; i < R * N; ++i) CHECK(std::abs(a[i] - b[i]) <= 1e-5 * std::abs(b[i]) + 1e-6);
    CHECK(fusor::explain<fusor::host_policy>(e).find("kept as written") != std::string::npos);
  };
  same_as_unfused(fusor::exp(x - fusor::max_reduce(x, {0})) / fusor::sum(fusor::exp(x - fusor::max_reduce(x, {0})), {1}),
                  "softmax: max over axis 0, sum over axis 1");
  same_as_unfused(fusor::exp(x - fusor::max_reduce(x2, {1})) / fusor::sum(fusor::exp(x - fusor::max_reduce(x2, {1})), {1}),
                  "softmax: the max of another tensor");
  same_as_unfused(x - fusor::logsumexp(x2, {1}), "log_softmax: logsumexp of another tensor");
  const auto c0 = x - fusor::mean(x, {0});
  same_as_unfused(c0 / fusor::sqrt(fusor::mean(fusor::square(c0), {0}) + 1e-5f), "layer_norm over a leading axis");
  const auto c1 = x - fusor::mean(x, {1});
  same_as_unfused(c1 / fusor::sqrt(fusor::mean(fusor::square(c1), {1, 0}) + 1e-5f),
                  "centered over axis 1, normalized over both");
  same_as_unfused(x * fusor::rsqrt(fusor::mean(fusor::square(x2), {1}) + 1e-5f), "rms of another tensor");
  same_as_unfused(x * fusor::reciprocal(fusor::sqrt(fusor::mean(fusor::pow(x, 4.0f), {1}) + 1e-5f)),
                  "a mean of fourth powers, not of squares");
}

// Split rows (kernels::row_chunks): few very long rows are reduced by several
// blocks per row and a finalize pass, on the host exactly as on the GPU.
// Tolerance: the sum bound of the file header, 1e-5 * sum|x|, still holds
// (each chunk is a 256-lane block reduction, the partials merge pairwise).
TEST_CASE("split rows: few very long rows reduced by chunks and a finalize", "[reduction][split]") {
  using fusor::kernels::row_chunks;
  STATIC_REQUIRE(row_chunks(1, 8193) == 1);
  STATIC_REQUIRE(row_chunks(1, 2 * fusor::kernels::reduce_chunk_min) == 2);
  STATIC_REQUIRE(row_chunks(4096, 1 << 24) == 1);  // enough rows: one block per row
  STATIC_REQUIRE(row_chunks(1, std::int64_t(1) << 30) == fusor::kernels::reduce_target_blocks);
  for (int rows : {1, 3}) {
    for (int n : {1 << 15, (1 << 17) + 3}) {
      INFO("rows " << rows << ", n " << n);
      REQUIRE(row_chunks(rows, n) > 1);
      std::vector<float> v = random_vec(std::size_t(rows) * n, unsigned(n + rows));
      v[std::size_t(rows - 1) * n + n - 1] = 7.5f;  // the maximum, in the last chunk of the last row
      const auto x = host_view(v.data(), rows, n);
      std::vector<float> out(rows, qnan), ref(rows, qnan);
      const auto o = host_view(out.data(), rows);
      const auto r = fusor::run(o, fusor::sum<1>(x, {1}, false), fusor::host());
      CHECK(r.kernels == 2);  // pass 1 + finalize
      fusor::run(host_view(ref.data(), rows), fusor::sum<1>(x, {1}, false), fusor::unfused());
      CHECK(std::memcmp(out.data(), ref.data(), rows * sizeof(float)) == 0);  // same algorithm
      std::vector<float> mxo(rows), lseo(rows);
      fusor::run(host_view(mxo.data(), rows), fusor::max_reduce<1>(x, {1}, false), fusor::host());
      fusor::run(host_view(lseo.data(), rows), fusor::logsumexp<1>(x, {-1}, false), fusor::host());
      for (int i = 0; i < rows; ++i) {
        double s = 0, sa = 0, mx = -1e300, se = 0;
        for (int j = 0; j < n; ++j) {
          const double t = v[std::size_t(i) * n + j];
          s += t; sa += std::abs(t); mx = std::max(mx, t);
        }
        for (int j = 0; j < n; ++j) se += std::exp(double(v[std::size_t(i) * n + j]) - mx);
        CHECK(std::abs(out[i] - s) <= 1e-5 * sa);
        CHECK(mxo[i] == float(mx));
        CHECK(std::abs(lseo[i] - (mx + std::log(se))) <= 1e-5 * (mx + std::log(se)));
      }
      // NaN in one chunk of row 0 propagates; max over all -0.0 is -0.0
      v[n / 2 + 5] = qnan;
      fusor::run(o, fusor::max_reduce<1>(x, {1}, false), fusor::host());
      CHECK(std::isnan(out[0]));
      fusor::run(o, fusor::sum<1>(x, {1}, false), fusor::host());
      CHECK(std::isnan(out[0]));
      std::fill(v.begin(), v.end(), -0.0f);
      fusor::run(o, fusor::max_reduce<1>(x, {1}, false), fusor::host());
      CHECK(std::signbit(out[0]));
      fusor::run(o, fusor::sum<1>(x, {1}, false), fusor::host());
      CHECK((out[0] == 0.0f && std::signbit(out[0])));
    }
  }
}

TEST_CASE("split rows: mse_loss and an epilogue on a long full reduction", "[reduction][split]") {
  const int n = (1 << 18) + 17;
  const auto a = random_vec(n, 1), b = random_vec(n, 2);
  double s = 0, sa = 0;
  for (int i = 0; i < n; ++i) {
    const double d = double(a[i]) - b[i];
    s += d * d;
  }
  sa = s;
  float out = qnan, ref = qnan;
  const auto x = host_view(a.data(), n), y = host_view(b.data(), n);
  auto r = fusor::run(host_view(&out, 1), fusor::mean<1>(fusor::square(x - y), {0}), fusor::host());
  CHECK(r.kernels == 2);
  CHECK(std::abs(out - s / n) <= 1e-5 * sa / n);
  // rank-0 mse_loss (all axes) and sqrt(mse + eps) as the finalize's epilogue
  auto o0 = fusor::host_view(&out, fusor::extents<>{});
  r = fusor::run(o0, fusor::mse_loss(x, y), fusor::host());
  CHECK(r.kernels == 2);
  CHECK(std::abs(out - s / n) <= 1e-5 * sa / n);
  r = fusor::run(o0, fusor::sqrt(fusor::mse_loss(x, y) + 1e-6f), fusor::host());
  CHECK(r.kernels == 2);
  fusor::run(fusor::host_view(&ref, fusor::extents<>{}), fusor::sqrt(fusor::mse_loss(x, y) + 1e-6f), fusor::unfused());
  CHECK(out == ref);
  CHECK(std::abs(out - std::sqrt(s / n + 1e-6)) <= 1e-5 * std::sqrt(s / n));
}

// Vector reads (exec::enable_row_vectors): on for contiguous rows aligned
// at every row start, off (element reads, same values to rounding) for a
// misaligned pointer, a row stride that breaks alignment, a strided row.
TEST_CASE("row kernels read contiguous aligned rows as vectors, others element by element", "[reduction][vector]") {
  std::vector<float> buf(4 * 64 + 8);
  float* p = buf.data();
  while (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) ++p;
  for (std::size_t i = 0; i < 4 * 64 + 4; ++i) p[i] = float(int(i % 13) - 6) * 0.25f;
  auto vector_rows = [](const auto& x, std::initializer_list<int> axes) {
    const auto space = fusor::exec::make_row_space<2>(fusor::shape_of(x), fusor::reduced_mask<2>(axes, false, "sum"));
    auto xo = fusor::exec::make_row_operand<2>(x);
    fusor::exec::enable_row_vectors<2>(xo, space);
    return xo.vector_rows;
  };
  CHECK(vector_rows(host_view(p, 4, 64), {1}));
  CHECK(vector_rows(host_view(p, 4, 64) * 2.0f + host_view(p, 1, 64), {1}));   // a broadcast row: one unit source
  CHECK(vector_rows(host_view(p, 4, 64) + host_view(p, 4, 1), {1}));           // constant along the row
  CHECK_FALSE(vector_rows(host_view(p + 1, 4, 64), {1}));                      // misaligned
  CHECK_FALSE(vector_rows(host_view(p, 4, 63), {1}));                          // rows 2.. start misaligned
  CHECK_FALSE(vector_rows(host_view(p, 64, 4), {0}));                          // the row is a column: strided
  CHECK_FALSE(vector_rows(host_view(p, 4, 2), {1}));                           // shorter than a vector
  // explain's "memory access" line describes elementwise kernels: none here
  CHECK(fusor::explain<fusor::host_policy>(fusor::layer_norm(host_view(p + 1, 4, 64), nullptr, nullptr))
            .find("memory access") == std::string::npos);
  CHECK(fusor::explain<fusor::host_policy>(fusor::relu(host_view(p + 1, 4, 64))).find("memory access") != std::string::npos);
  // vector and element reads take the same order: bitwise equal results
  {
    std::vector<float> r(4 * 64 + 8);
    float* a = r.data();
    while (reinterpret_cast<std::uintptr_t>(a) % 16 != 0) ++a;
    const auto vals = random_vec(4 * 64, 9);
    std::copy(vals.begin(), vals.end(), a);
    float got[2][4];
    fusor::run(host_view(got[0], 4), fusor::sum<1>(host_view(a, 4, 64), {1}, false), fusor::host());
    std::copy(vals.begin(), vals.end(), a + 1);  // the same values, misaligned
    fusor::run(host_view(got[1], 4), fusor::sum<1>(host_view(a + 1, 4, 64), {1}, false), fusor::host());
    CHECK(std::memcmp(got[0], got[1], sizeof got[0]) == 0);
  }
  // the values: vector and element reads agree with a float64 reference
  for (float* q : {p, p + 1}) {
    float out[4];
    fusor::run(host_view(out, 4), fusor::sum<1>(host_view(q, 4, 64), {1}, false), fusor::host());
    for (int i = 0; i < 4; ++i) {
      double s = 0;
      for (int j = 0; j < 64; ++j) s += q[i * 64 + j];
      CHECK(out[i] == float(s));  // quarter-integers: every partial sum is exact
    }
  }
}

// Found by a new-user tryout (2026-11-29): integer inputs of the floating
// ops computed in integer arithmetic (mean truncated) or did not compile.
TEST_CASE("integer inputs: mean, l2_norm, logsumexp, softmax and the norms compute in f32", "[reduction][int]") {
  const std::vector<std::int32_t> v{1, 2, 3, 4, -7, 0, 5, 9};
  const auto x = host_view(v.data(), 2, 4);
  std::vector<float> out(8, qnan);
  const auto o1 = host_view(out.data(), 2);
  fusor::run(o1, fusor::mean<1>(x, {1}, false), fusor::host());
  CHECK(out[0] == 2.5f);   // not 2
  CHECK(out[1] == 1.75f);  // (-7 + 0 + 5 + 9) / 4
  fusor::run(o1, fusor::l2_norm<1>(x, {1}, false), fusor::host());
  CHECK(std::abs(out[0] - std::sqrt(30.0f)) <= 1e-6f * std::sqrt(30.0f));
  fusor::run(o1, fusor::logsumexp<1>(x, {1}, false), fusor::host());
  const double lse0 = 4 + std::log(std::exp(-3.0) + std::exp(-2.0) + std::exp(-1.0) + 1.0);
  CHECK(std::abs(out[0] - lse0) <= 1e-6 * lse0);
  const auto o2 = host_view(out.data(), 2, 4);
  fusor::run(o2, fusor::softmax(x, 1), fusor::host());
  CHECK(std::abs(out[3] - 1.0 / (std::exp(-3.0) + std::exp(-2.0) + std::exp(-1.0) + 1.0)) <= 1e-6);
  fusor::run(o2, fusor::layer_norm(x, nullptr, nullptr), fusor::host());
  CHECK(std::abs(out[0] - (1 - 2.5) / std::sqrt(1.25 + 1e-5)) <= 1e-5);
  fusor::run(o2, fusor::rms_norm(x, nullptr, 1e-5f), fusor::host());
  CHECK(std::abs(out[3] - 4 / std::sqrt(7.5 + 1e-5)) <= 1e-5);
  std::vector<float> ref(8, qnan);
  fusor::run(host_view(ref.data(), 2), fusor::mean<1>(x, {1}, false), fusor::unfused());
  CHECK(ref[0] == 2.5f);
}

// layer_norm's statistics (Welford): an outlier at the row's start must not
// cost the rest of the row its accuracy (a shift by the first element did:
// 3x the bound below for 1e7 among U(-1, 1)). Reference in float64; bound
// 1e-5 relative + 1e-6 absolute per element, as above.
TEST_CASE("layer_norm: an outlier first or anywhere in the row, and a large common offset", "[reduction][norm]") {
  const int N = 4096;
  for (float outlier : {1e3f, 1e5f, 1e7f}) {
    for (int at : {0, 7, N - 1}) {
      INFO("outlier " << outlier << " at " << at);
      std::vector<float> v = random_vec(N, 77, -1.0f, 1.0f), y(N, qnan);
      v[at] = outlier;
      fusor::run(host_view(y.data(), 1, N), fusor::layer_norm(host_view(v.data(), 1, N), nullptr, nullptr), fusor::host());
      double m = 0, var = 0;
      for (float t : v) m += t;
      m /= N;
      for (float t : v) var += (t - m) * (t - m);
      var /= N;
      int bad = 0;
      for (int j = 0; j < N; ++j) {
        const double want = (v[j] - m) / std::sqrt(var + 1e-5);
        const bool off = !(std::abs(y[j] - want) <= 1e-5 * std::abs(want) + 1e-6);
        if (off && bad == 0) UNSCOPED_INFO("first off: element " << j << ": " << y[j] << " vs " << want);
        bad += off ? 1 : 0;
      }
      CHECK(bad == 0);
    }
  }
}
