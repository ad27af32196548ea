// CUDA tests of the contraction family (GEMM, conv).
// (helpers and tolerances: test_cuda_common.cuh)
#include "test_cuda_common.cuh"

// ============================================================================
// Contractions (kernels/contraction.hpp): cuda() against host() on the same
// inputs. Tolerances: both sides accumulate in fp32, but the device may
// contract a*b+c into an FMA (SIMT path) or sum the products in the tensor
// core's order (f16/bf16: WMMA), while the host twin adds k ascending without
// FMA. Each side's fp32 sum of K products errs by at most about K * eps/2 *
// S with S = sum_k |a_k b_k| (Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., eq. 3.5), so they differ by at most K * eps * S; the
// bound used is (K + 16) * FLT_EPSILON * S * 1.25 (the 1.25 covers GELU's
// slope, at most 1.13, and the epilogue's own few ulp), plus one ulp of a
// 16-bit result (its rounding may flip) and the f32 chain tolerance above.
// Convolutions use a normwise bound (S of the largest output).

namespace {


/// |device - host| <= rtol16 * |host| + (K + 16) * eps * S * 1.25 + tiny, per
/// element, with S[i] the element's sum of |products| (see above).
template <class T>
void require_gemm_close(const std::vector<T>& device, const std::vector<T>& host, const std::vector<double>& S,
                        std::int64_t K) {
  REQUIRE(device.size() == host.size());
  REQUIRE(S.size() == host.size());
  // f64 sums in f64 (DBL_EPSILON, no f32 chain term); the rest in f32.
  constexpr bool f64 = std::is_same_v<T, double>;
  const double rtol = f64 ? 0.0 : (std::is_same_v<T, float> ? 0.0 : rtol_of<T>) + f32_rtol;
  const double eps = f64 ? DBL_EPSILON : double(FLT_EPSILON);
  const double tiny = f64 ? 0x1p-53 : 0x1p-24 + f32_atol * 1e-3;
  std::size_t bad = 0, first = 0;
  double worst = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    const double d = as_double(device[i]), h = as_double(host[i]);
    const double allowed = rtol * std::fabs(h) + double(K + 16) * eps * S[i] * 1.25 + tiny;
    const double err = std::fabs(d - h);
    const bool ok = std::isfinite(d) && std::isfinite(h) && err <= allowed;
    if (err / allowed > worst) worst = err / allowed;
    if (!ok && bad++ == 0) first = i;
  }
  const std::string what = bad == 0 ? std::string("all within tolerance")
                                    : std::to_string(bad) + " of " + std::to_string(host.size()) +
                                          " elements out of tolerance; first " + describe_at(device, host, first);
  INFO(what);
  INFO("largest error / allowed = " << worst);
  REQUIRE(bad == 0);
}

/// Normwise: |device - host| <= rtol16 * |host| + tol * max|host| everywhere.
template <class T>
void require_normwise_close(const std::vector<T>& device, const std::vector<T>& host, double tol) {
  REQUIRE(device.size() == host.size());
  double scale = 0;
  for (const auto& h : host) scale = std::max(scale, std::fabs(double(as_float(h))));
  const double rtol = (std::is_same_v<T, float> ? 0.0 : rtol_of<T>) + f32_rtol;
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    const double d = as_float(device[i]), h = as_float(host[i]);
    const bool ok = std::isfinite(d) && std::fabs(d - h) <= rtol * std::fabs(h) + tol * (scale + 1e-30) + 0x1p-24;
    if (!ok && bad++ == 0) first = i;
  }
  const std::string what = bad == 0 ? std::string("all within tolerance")
                                    : std::to_string(bad) + " of " + std::to_string(host.size()) +
                                          " elements out of tolerance; first " + describe_at(device, host, first);
  INFO(what);
  REQUIRE(bad == 0);
}

/// S[i, j] = sum_k |x[i, k]| |W[j, k]| (+ |b[j]|): linear's scale.
template <class T>
std::vector<double> linear_scale(const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>& b,
                                 std::int64_t M, std::int64_t N, std::int64_t K) {
  std::vector<double> S(std::size_t(M * N));
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double s = b.empty() ? 0.0 : std::fabs(double(as_float(b[std::size_t(j)])));
      for (std::int64_t k = 0; k < K; ++k)
        s += std::fabs(double(as_float(x[std::size_t(i * K + k)]))) * std::fabs(double(as_float(w[std::size_t(j * K + k)])));
      S[std::size_t(i * N + j)] = s;
    }
  return S;
}

struct gemm_size {
  std::int64_t M, N, K;
};

/// gelu(linear(x, W, b)) of dtype T on host() and cuda(): one kernel each.
template <class T>
void check_linear_gelu(gemm_size sz, unsigned seed) {
  const auto [M, N, K] = sz;
  CAPTURE(M, N, K);
  const auto x = random_vector<T>(std::size_t(M * K), seed), w = random_vector<T>(std::size_t(N * K), seed + 1),
             b = random_vector<T>(std::size_t(N), seed + 2);
  const auto make = [&](auto view, const T* px, const T* pw, const T* pb) {
    return fusor::gelu(fusor::linear(view(px, M, K), view(pw, N, K), view(pb, N)));
  };
  std::vector<T> host(std::size_t(M * N));
  CHECK(fusor::run(host_v(host.data(), M, N), make(host_v, x.data(), w.data(), b.data()), fusor::host()).kernels == 1);
  stream_guard stream;
  auto dx = on_device(x), dw = on_device(w), db = on_device(b);
  device_buffer<T> dy(std::size_t(M * N));
  const auto ex = fusor::cuda(stream.s);
  CHECK(fusor::run(dev_v(dy.ptr, M, N), make(dev_v, static_cast<const T*>(dx->ptr), static_cast<const T*>(dw->ptr),
                                             static_cast<const T*>(db->ptr)),
                   ex)
            .kernels == 1);
  CHECK(ex.launches == 1);
  stream.sync();
  require_gemm_close(dy.download(std::size_t(M * N)), host, linear_scale(x, w, b, M, N, K), K);
}

const gemm_size edge_sizes[] = {{1, 1, 1},     {1, 65, 63},   {63, 1, 129}, {65, 129, 1},
                                {129, 63, 65}, {64, 64, 64},  {63, 65, 129}, {130, 200, 768}};

}  // namespace

TEST_CASE("cuda: gelu(linear(x, W, b)) f32 matches host, edge sizes 1/63/65/129", "[cuda][contraction]") {
  const auto sz = GENERATE(from_range(std::begin(edge_sizes), std::end(edge_sizes)));
  check_linear_gelu<float>(sz, 101);
}

TEST_CASE("cuda: gelu(linear(x, W, b)) f16 on tensor cores matches host", "[cuda][contraction][f16]") {
  const auto sz = GENERATE(from_range(std::begin(edge_sizes), std::end(edge_sizes)));
  check_linear_gelu<__half>(sz, 111);
}

TEST_CASE("cuda: gelu(linear(x, W, b)) bf16 on tensor cores matches host", "[cuda][contraction][bf16]") {
  const auto sz = GENERATE(gemm_size{65, 129, 63}, gemm_size{129, 63, 65}, gemm_size{130, 200, 768});
  check_linear_gelu<__nv_bfloat16>(sz, 121);
}

TEST_CASE("cuda: batched matmul with a broadcast batch, f32 and f16 (row-major B)", "[cuda][contraction]") {
  const std::int64_t B = 3, M = GENERATE(1, 65), K = GENERATE(63, 129), N = 65;
  const std::int64_t Bb = GENERATE(3, 1);  // b's batch: 1 broadcasts over a's
  CAPTURE(M, K, Bb);
  auto check = [&]<class T>(T, unsigned seed) {
    const auto a = random_vector<T>(std::size_t(B * M * K), seed), b = random_vector<T>(std::size_t(Bb * K * N), seed + 1);
    const auto make = [&](auto view, const T* pa, const T* pb) { return fusor::matmul(view(pa, B, M, K), view(pb, Bb, K, N)); };
    std::vector<T> host(std::size_t(B * M * N));
    fusor::run(host_v(host.data(), B, M, N), make(host_v, a.data(), b.data()), fusor::host());
    stream_guard stream;
    auto da = on_device(a), dbm = on_device(b);
    device_buffer<T> dy(host.size());
    const auto r = fusor::run(dev_v(dy.ptr, B, M, N),
                              make(dev_v, static_cast<const T*>(da->ptr), static_cast<const T*>(dbm->ptr)), fusor::cuda(stream.s));
    CHECK(r.kernels == 1);
    stream.sync();
    std::vector<double> S(host.size());
    for (std::int64_t z = 0; z < B; ++z)
      for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (std::int64_t k = 0; k < K; ++k)
            s += std::fabs(double(as_float(a[std::size_t((z * M + i) * K + k)]))) *
                 std::fabs(double(as_float(b[std::size_t(((Bb == 1 ? 0 : z) * K + k) * N + j)])));
          S[std::size_t((z * M + i) * N + j)] = s;
        }
    require_gemm_close(dy.download(host.size()), host, S, K);
  };
  SECTION("f32") { check(float{}, 131); }
  SECTION("f16") { check(__half{}, 141); }
}

TEST_CASE("cuda: linear(layer_norm(x), W, b) matches host (last dim and [S, K])", "[cuda][contraction][layer_norm]") {
  SECTION("over the last dim") {
    const auto sz = GENERATE(gemm_size{1, 65, 63}, gemm_size{65, 63, 129}, gemm_size{129, 1, 65}, gemm_size{130, 200, 768});
    const auto [M, N, K] = sz;
    CAPTURE(M, N, K);
    const auto x = random_vector<float>(std::size_t(M * K), 151, -2.0f, 6.0f), g = random_vector<float>(std::size_t(K), 152),
               be = random_vector<float>(std::size_t(K), 153), w = random_vector<float>(std::size_t(N * K), 154),
               b = random_vector<float>(std::size_t(N), 155);
    const auto make = [&](auto view, const float* px, const float* pg, const float* pbe, const float* pw, const float* pb) {
      return fusor::linear(fusor::layer_norm(view(px, M, K), view(pg, K), view(pbe, K)), view(pw, N, K), view(pb, N));
    };
    std::vector<float> host(std::size_t(M * N));
    fusor::run(host_v(host.data(), M, N), make(host_v, x.data(), g.data(), be.data(), w.data(), b.data()), fusor::host());
    stream_guard stream;
    auto dx = on_device(x), dg = on_device(g), dbe = on_device(be), dw = on_device(w), db = on_device(b);
    device_buffer<float> dy(host.size());
    const auto r = fusor::run(dev_v(dy.ptr, M, N), make(dev_v, dx->ptr, dg->ptr, dbe->ptr, dw->ptr, db->ptr), fusor::cuda(stream.s));
    CHECK(r.kernels == 1);
    stream.sync();
    // The normalized rows (|value| <= a few) enter the scale: recompute them
    // on the host in double for S.
    std::vector<float> xn(x.size());
    for (std::int64_t i = 0; i < M; ++i) {
      double mean = 0, var = 0;
      for (std::int64_t k = 0; k < K; ++k) mean += x[std::size_t(i * K + k)];
      mean /= double(K);
      for (std::int64_t k = 0; k < K; ++k) var += (x[std::size_t(i * K + k)] - mean) * (x[std::size_t(i * K + k)] - mean);
      var /= double(K);
      for (std::int64_t k = 0; k < K; ++k)
        xn[std::size_t(i * K + k)] = float((x[std::size_t(i * K + k)] - mean) / std::sqrt(var + 1e-5) * g[std::size_t(k)] + be[std::size_t(k)]);
    }
    require_gemm_close(dy.download(host.size()), host, linear_scale(xn, w, b, M, N, K), K + 64);
  }
  SECTION("over [S, K] (axis -2): rows of one sequence share their statistics") {
    const std::int64_t B = 3, Sq = 37, K = 65, N = 63;
    const auto x = random_vector<float>(std::size_t(B * Sq * K), 161), g = random_vector<float>(std::size_t(Sq * K), 162),
               be = random_vector<float>(std::size_t(Sq * K), 163), w = random_vector<float>(std::size_t(N * K), 164);
    const auto make = [&](auto view, const float* px, const float* pg, const float* pbe, const float* pw) {
      return fusor::linear(fusor::layer_norm(view(px, B, Sq, K), view(pg, Sq, K), view(pbe, Sq, K), -2), view(pw, N, K));
    };
    std::vector<float> host(std::size_t(B * Sq * N));
    CHECK(fusor::run(host_v(host.data(), B, Sq, N), make(host_v, x.data(), g.data(), be.data(), w.data()), fusor::host()).kernels == 1);
    stream_guard stream;
    auto dx = on_device(x), dg = on_device(g), dbe = on_device(be), dw = on_device(w);
    device_buffer<float> dy(host.size());
    const auto r = fusor::run(dev_v(dy.ptr, B, Sq, N), make(dev_v, dx->ptr, dg->ptr, dbe->ptr, dw->ptr), fusor::cuda(stream.s));
    CHECK(r.kernels == 1);
    stream.sync();
    // |normalized| * |gamma| + |beta| <= ~12 for these inputs: normwise.
    require_normwise_close(dy.download(host.size()), host, double(K + 64) * double(FLT_EPSILON) * 4);
  }
}

TEST_CASE("cuda: three sibling linears over layer_norm(x): one multi-output GEMM, each output matches host",
          "[cuda][contraction][layer_norm][horizontal]") {
  // siblings(linear(n, wq), linear(n, wk), linear(n, wv)) (issue 18 item 2
  // outside attention): one kernel on the device, the norm its prologue;
  // three with different inputs. Bound as the single linear(layer_norm) above.
  const std::int64_t M = 65, K = 129, N = 63, NK = 32;
  const auto x = random_vector<float>(std::size_t(M * K), 171, -2.0f, 6.0f), g = random_vector<float>(std::size_t(K), 172),
             be = random_vector<float>(std::size_t(K), 173), wq = random_vector<float>(std::size_t(N * K), 174),
             wk = random_vector<float>(std::size_t(NK * K), 175), wv = random_vector<float>(std::size_t(NK * K), 176);
  const auto make = [&](auto view, const float* px, const float* px2, const float* pg, const float* pbe, const float* pq,
                        const float* pk, const float* pv) {
    const auto n = fusor::layer_norm(view(px, M, K), view(pg, K), view(pbe, K));
    const auto n2 = fusor::layer_norm(view(px2, M, K), view(pg, K), view(pbe, K));
    return fusor::siblings(fusor::linear(n, view(pq, N, K)), fusor::linear(n2, view(pk, NK, K)),
                           fusor::linear(n, view(pv, NK, K)));
  };
  std::vector<float> hq(std::size_t(M * N)), hk(std::size_t(M * NK)), hv(std::size_t(M * NK));
  const auto hs = make(host_v, x.data(), x.data(), g.data(), be.data(), wq.data(), wk.data(), wv.data());
  CHECK(fusor::run(fusor::outputs(host_v(hq.data(), M, N), host_v(hk.data(), M, NK), host_v(hv.data(), M, NK)), hs,
                   fusor::host())
            .kernels == 1);
  stream_guard stream;
  auto dx = on_device(x), dx2 = on_device(x), dg = on_device(g), dbe = on_device(be), dq = on_device(wq),
       dk = on_device(wk), dv = on_device(wv);
  device_buffer<float> oq(hq.size()), ok(hk.size()), ov(hv.size());
  const auto outs = fusor::outputs(dev_v(oq.ptr, M, N), dev_v(ok.ptr, M, NK), dev_v(ov.ptr, M, NK));
  SECTION("one input: one kernel") {
    CHECK(fusor::run(outs, make(dev_v, dx->ptr, dx->ptr, dg->ptr, dbe->ptr, dq->ptr, dk->ptr, dv->ptr),
                     fusor::cuda(stream.s))
              .kernels == 1);
  }
  SECTION("two inputs with equal values: three GEMMs") {
    CHECK(fusor::run(outs, make(dev_v, dx->ptr, dx2->ptr, dg->ptr, dbe->ptr, dq->ptr, dk->ptr, dv->ptr),
                     fusor::cuda(stream.s))
              .kernels == 3);
  }
  stream.sync();
  const double tol = double(K + 64) * double(FLT_EPSILON) * 4;
  require_normwise_close(oq.download(hq.size()), hq, tol);
  require_normwise_close(ok.download(hk.size()), hk, tol);
  require_normwise_close(ov.download(hv.size()), hv, tol);
}

TEST_CASE("cuda: SwiGLU's two sibling linears over layer_norm(x): one multi-output GEMM, each output matches host",
          "[cuda][contraction][layer_norm][horizontal]") {
  // siblings(linear(n, w1, b1), linear(n, w3)) (issue 18 item 2): one kernel
  // on the device, two with different inputs. Bound as above.
  const std::int64_t M = 65, K = 129, F = 70;
  const auto x = random_vector<float>(std::size_t(M * K), 181, -2.0f, 6.0f), g = random_vector<float>(std::size_t(K), 182),
             be = random_vector<float>(std::size_t(K), 183), w1 = random_vector<float>(std::size_t(F * K), 184),
             w3 = random_vector<float>(std::size_t(F * K), 185), b1 = random_vector<float>(std::size_t(F), 186);
  const auto make = [&](auto view, const float* px, const float* px2, const float* pg, const float* pbe, const float* p1,
                        const float* pb1, const float* p3) {
    const auto n = fusor::layer_norm(view(px, M, K), view(pg, K), view(pbe, K));
    const auto n2 = fusor::layer_norm(view(px2, M, K), view(pg, K), view(pbe, K));
    return fusor::siblings(fusor::linear(n, view(p1, F, K), view(pb1, F)), fusor::linear(n2, view(p3, F, K)));
  };
  std::vector<float> ha(std::size_t(M * F)), hb(std::size_t(M * F));
  CHECK(fusor::run(fusor::outputs(host_v(ha.data(), M, F), host_v(hb.data(), M, F)),
                   make(host_v, x.data(), x.data(), g.data(), be.data(), w1.data(), b1.data(), w3.data()), fusor::host())
            .kernels == 1);
  stream_guard stream;
  auto dx = on_device(x), dx2 = on_device(x), dg = on_device(g), dbe = on_device(be), d1 = on_device(w1),
       db1 = on_device(b1), d3 = on_device(w3);
  device_buffer<float> oa(ha.size()), ob(hb.size());
  const auto outs = fusor::outputs(dev_v(oa.ptr, M, F), dev_v(ob.ptr, M, F));
  SECTION("one input: one kernel") {
    CHECK(fusor::run(outs, make(dev_v, dx->ptr, dx->ptr, dg->ptr, dbe->ptr, d1->ptr, db1->ptr, d3->ptr),
                     fusor::cuda(stream.s))
              .kernels == 1);
  }
  SECTION("two inputs with equal values: two GEMMs") {
    CHECK(fusor::run(outs, make(dev_v, dx->ptr, dx2->ptr, dg->ptr, dbe->ptr, d1->ptr, db1->ptr, d3->ptr),
                     fusor::cuda(stream.s))
              .kernels == 2);
  }
  stream.sync();
  const double tol = double(K + 64) * double(FLT_EPSILON) * 4;
  require_normwise_close(oa.download(ha.size()), ha, tol);
  require_normwise_close(ob.download(hb.size()), hb, tol);
}

TEST_CASE("cuda: relu(batch_norm(conv2d(x, w, b))) f32 matches host; BN folded once", "[cuda][contraction][conv]") {
  struct conv_case {
    std::int64_t n, c, h, w, cout, stride;
  };
  const auto cc = GENERATE(conv_case{2, 5, 9, 9, 7, 1}, conv_case{2, 5, 9, 9, 7, 2}, conv_case{1, 16, 33, 33, 65, 1},
                           conv_case{1, 3, 1, 1, 1, 1});
  CAPTURE(cc.n, cc.c, cc.h, cc.w, cc.cout, cc.stride);
  const std::int64_t ho = (cc.h + 2 - 3) / cc.stride + 1, wo = (cc.w + 2 - 3) / cc.stride + 1;
  const auto x = random_vector<float>(std::size_t(cc.n * cc.c * cc.h * cc.w), 171),
             w = random_vector<float>(std::size_t(cc.cout * cc.c * 9), 172), b = random_vector<float>(std::size_t(cc.cout), 173),
             gamma = random_vector<float>(std::size_t(cc.cout), 174), beta = random_vector<float>(std::size_t(cc.cout), 175),
             mean = random_vector<float>(std::size_t(cc.cout), 176),
             var = random_vector<float>(std::size_t(cc.cout), 177, 0.5f, 2.0f);
  const fusor::conv2d_params params{.stride = {cc.stride, cc.stride}, .padding = {1, 1, 1, 1}};
  const auto make = [&](auto view, const float* px, const float* pw, const float* pb, const float* pg, const float* pbe,
                        const float* pm, const float* pv) {
    return fusor::relu(fusor::batch_norm(fusor::conv2d(view(px, cc.n, cc.c, cc.h, cc.w), view(pw, cc.cout, cc.c, 3, 3),
                                                       view(pb, cc.cout), params),
                                         fusor::batch_norm_params{view(pg, cc.cout), view(pbe, cc.cout), view(pm, cc.cout),
                                                                  view(pv, cc.cout)}));
  };
  const std::size_t count = std::size_t(cc.n * cc.cout * ho * wo);
  std::vector<float> host(count);
  CHECK(fusor::run(host_v(host.data(), cc.n, cc.cout, ho, wo),
                   make(host_v, x.data(), w.data(), b.data(), gamma.data(), beta.data(), mean.data(), var.data()), fusor::host())
            .kernels == 3);
  stream_guard stream;
  auto dx = on_device(x), dw = on_device(w), db = on_device(b), dg = on_device(gamma), dbe = on_device(beta),
       dm = on_device(mean), dv = on_device(var);
  device_buffer<float> dy(count);
  const auto ex = fusor::cuda(stream.s);
  const auto e = make(dev_v, dx->ptr, dw->ptr, db->ptr, dg->ptr, dbe->ptr, dm->ptr, dv->ptr);
  CHECK(fusor::run(dev_v(dy.ptr, cc.n, cc.cout, ho, wo), e, ex).kernels == 3);  // + folded weight and bias
  stream.sync();
  const auto first = dy.download(count);
  CHECK(fusor::run(dev_v(dy.ptr, cc.n, cc.cout, ho, wo), e, ex).kernels == 1);  // prepared weights cached
  stream.sync();
  require_bitwise(dy.download(count), first);
  require_normwise_close(first, host, double(cc.c * 9 + 16) * double(FLT_EPSILON) * 8);
}

TEST_CASE("cuda: relu(conv2d(x, w, b)) f16 on tensor cores, NCHW and NHWC", "[cuda][contraction][conv][f16]") {
  const std::int64_t n = 2, c = 8, h = 17, wd = 17, cout = GENERATE(1, 65);
  const auto layout = GENERATE(fusor::layout::nchw, fusor::layout::nhwc);
  const bool nhwc = layout == fusor::layout::nhwc;
  CAPTURE(cout, nhwc);
  const auto x = random_vector<__half>(std::size_t(n * c * h * wd), 181), w = random_vector<__half>(std::size_t(cout * c * 9), 182),
             b = random_vector<__half>(std::size_t(cout), 183);
  const fusor::conv2d_params params{.padding = {1, 1, 1, 1}, .layout = layout};
  const auto make = [&](auto view, const __half* px, const __half* pw, const __half* pb) {
    const auto xv = nhwc ? view(px, n, h, wd, c) : view(px, n, c, h, wd);
    return fusor::relu(fusor::conv2d(xv, view(pw, cout, c, 3, 3), view(pb, cout), params));
  };
  const std::size_t count = std::size_t(n * cout * h * wd);
  std::vector<__half> host(count);
  const auto out = [&](auto view, __half* p) { return nhwc ? view(p, n, h, wd, cout) : view(p, n, cout, h, wd); };
  fusor::run(out(host_v, host.data()), make(host_v, x.data(), w.data(), b.data()), fusor::host());
  stream_guard stream;
  auto dx = on_device(x), dw = on_device(w), db = on_device(b);
  device_buffer<__half> dy(count);
  CHECK(fusor::run(out(dev_v, dy.ptr), make(dev_v, static_cast<const __half*>(dx->ptr), static_cast<const __half*>(dw->ptr),
                                            static_cast<const __half*>(db->ptr)),
                   fusor::cuda(stream.s))
            .kernels == 1);
  stream.sync();
  require_normwise_close(dy.download(count), host, double(c * 9 + 16) * double(FLT_EPSILON) * 8);
}

TEST_CASE("cuda: depthwise -> BN -> ReLU6 -> pointwise (one kernel) matches host", "[cuda][contraction][conv]") {
  const std::int64_t n = 2, c = 6, h = 11, wd = 11, cout = 5, stride = GENERATE(1, 2);
  CAPTURE(stride);
  const std::int64_t ho = (h + 2 - 3) / stride + 1, wo = (wd + 2 - 3) / stride + 1;
  const auto x = random_vector<float>(std::size_t(n * c * h * wd), 191), wdw = random_vector<float>(std::size_t(c * 9), 192),
             gamma = random_vector<float>(std::size_t(c), 193), beta = random_vector<float>(std::size_t(c), 194),
             mean = random_vector<float>(std::size_t(c), 195), var = random_vector<float>(std::size_t(c), 196, 0.5f, 2.0f),
             wpw = random_vector<float>(std::size_t(cout * c), 197), bpw = random_vector<float>(std::size_t(cout), 198);
  const auto make = [&](auto view, const float* px, const float* pd, const float* pg, const float* pbe, const float* pm,
                        const float* pv, const float* pp, const float* pb) {
    const auto dw = fusor::depthwise_conv2d(view(px, n, c, h, wd), view(pd, c, 1, 3, 3), nullptr,
                                            {.stride = {stride, stride}, .padding = {1, 1, 1, 1}});
    const auto bn = fusor::batch_norm(dw, fusor::batch_norm_params{view(pg, c), view(pbe, c), view(pm, c), view(pv, c)});
    return fusor::conv2d(fusor::clip(bn, 0.0f, 6.0f), view(pp, cout, c, 1, 1), view(pb, cout));
  };
  const std::size_t count = std::size_t(n * cout * ho * wo);
  std::vector<float> host(count);
  fusor::run(host_v(host.data(), n, cout, ho, wo),
             make(host_v, x.data(), wdw.data(), gamma.data(), beta.data(), mean.data(), var.data(), wpw.data(), bpw.data()),
             fusor::host());
  stream_guard stream;
  auto dx = on_device(x), dd = on_device(wdw), dg = on_device(gamma), dbe = on_device(beta), dm = on_device(mean),
       dv = on_device(var), dp = on_device(wpw), dbp = on_device(bpw);
  device_buffer<float> dy(count);
  const auto ex = fusor::cuda(stream.s);
  const auto e = make(dev_v, dx->ptr, dd->ptr, dg->ptr, dbe->ptr, dm->ptr, dv->ptr, dp->ptr, dbp->ptr);
  STATIC_REQUIRE(fusor::kernel_count<std::remove_cvref_t<decltype(e)>> == 1);
  CHECK(fusor::run(dev_v(dy.ptr, n, cout, ho, wo), e, ex).kernels == 3);  // + folded depthwise weight and bias
  CHECK(fusor::run(dev_v(dy.ptr, n, cout, ho, wo), e, ex).kernels == 1);
  stream.sync();
  require_normwise_close(dy.download(count), host, double(9 + c + 16) * double(FLT_EPSILON) * 16);
}


// ----------------------------------------------------------------------------
// The CUDA GEMM engine (exec/cuda_gemm.hpp): cuBLASLt mainloop per row panel,
// fusor's epilogue kernel. Checked against the host (the same bound as
// above: any summation order of a K-term fp32 sum) and against fusor's own
// tiles on the device (gemm_engine = fusor_tiles), with shapes that take
// several panels (M N * 4 bytes > 32 MiB), a transposed A, a broadcast
// batch, f64 and bf16; one planned kernel either way.

namespace {
/// The engine's and the tiles' results of the same expression, one planned
/// kernel each; whether cuBLASLt loaded is printed (without it both runs are
/// the tiles and the test still checks them against the host).
template <class T, class Make>
void check_engine_against_tiles(std::int64_t rows, std::int64_t cols, std::int64_t K, const std::vector<T>& host,
                                const std::vector<double>& S, Make&& make) {
  stream_guard stream;
  device_buffer<T> d_engine(host.size()), d_tiles(host.size());
  auto ex = fusor::cuda(stream.s);
  CHECK(fusor::run(dev_v(d_engine.ptr, rows, cols), make(), ex).kernels == 1);
  auto tiles = fusor::cuda(stream.s);
  tiles.gemm_engine = fusor::cuda_gemm_engine::fusor_tiles;
  CHECK(fusor::run(dev_v(d_tiles.ptr, rows, cols), make(), tiles).kernels == 1);
  stream.sync();
  INFO("engine: " << fusor::exec::cuda_gemm_engine_name(ex));
  require_gemm_close(d_engine.download(host.size()), host, S, K);
  require_gemm_close(d_tiles.download(host.size()), host, S, K);
}
}  // namespace

TEST_CASE("cuda: the cuBLASLt GEMM engine under a fused epilogue matches host and fusor's tiles",
          "[cuda][contraction][engine]") {
  SECTION("relu(linear(x, W, b) + r), f32, 3 row panels (2300 x 4100 accumulators > 32 MiB)") {
    const std::int64_t M = 2300, N = 4100, K = 96;
    const auto x = random_vector<float>(std::size_t(M * K), 171), w = random_vector<float>(std::size_t(N * K), 172),
               b = random_vector<float>(std::size_t(N), 173), r = random_vector<float>(std::size_t(M * N), 174);
    const auto make = [&](auto view, const float* px, const float* pw, const float* pb, const float* pr) {
      return fusor::relu(fusor::linear(view(px, M, K), view(pw, N, K), view(pb, N)) + view(pr, M, N));
    };
    std::vector<float> host(std::size_t(M * N));
    fusor::run(host_v(host.data(), M, N), make(host_v, x.data(), w.data(), b.data(), r.data()), fusor::host());
    auto dx = on_device(x), dw = on_device(w), db = on_device(b), dr = on_device(r);
    std::vector<double> S = linear_scale(x, w, b, M, N, K);
    for (std::size_t i = 0; i < S.size(); ++i) S[i] += std::fabs(r[i]);
    check_engine_against_tiles<float>(M, N, K, host, S, [&] { return make(dev_v, dx->ptr, dw->ptr, db->ptr, dr->ptr); });
  }
  SECTION("gemm with trans_a (A stored K x M), bf16 -> bf16, alpha and beta") {
    const std::int64_t M = 300, N = 257, K = 130;
    using T = __nv_bfloat16;
    const auto a = random_vector<T>(std::size_t(K * M), 181), bm = random_vector<T>(std::size_t(K * N), 182),
               c = random_vector<T>(std::size_t(M * N), 183);
    const auto make = [&](auto view, const T* pa, const T* pb, const T* pc) {
      return fusor::gemm(view(pa, K, M), view(pb, K, N), view(pc, M, N), {.alpha = 0.5f, .beta = 2.0f, .trans_a = true});
    };
    std::vector<T> host(std::size_t(M * N));
    fusor::run(host_v(host.data(), M, N), make(host_v, a.data(), bm.data(), c.data()), fusor::host());
    auto da = on_device(a), dbm = on_device(bm), dc = on_device(c);
    std::vector<double> S(host.size());
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (std::int64_t k = 0; k < K; ++k)
          s += std::fabs(double(as_float(a[std::size_t(k * M + i)]))) * std::fabs(double(as_float(bm[std::size_t(k * N + j)])));
        S[std::size_t(i * N + j)] = 0.5 * s + 2.0 * std::fabs(double(as_float(c[std::size_t(i * N + j)])));
      }
    check_engine_against_tiles<T>(M, N, K, host, S, [&] {
      return make(dev_v, static_cast<const T*>(da->ptr), static_cast<const T*>(dbm->ptr), static_cast<const T*>(dc->ptr));
    });
  }
  SECTION("batched matmul: 128 equally spaced batches (strided-batched calls) and 6 unevenly spaced ones (tiles)") {
    const std::int64_t M = 33, K = 40, N = 17;
    const bool uneven = GENERATE(false, true);
    // uneven: b [1, 3, K, N] broadcast over a [2, 3, M, K]: b's batches are
    // 0, 1, 2, 0, 1, 2 apart, not a strided batch (the tiles run it)
    const std::int64_t B0 = uneven ? 2 : 8, B1 = uneven ? 3 : 16, Bb0 = uneven ? 1 : B0;
    CAPTURE(uneven);
    const auto a = random_vector<float>(std::size_t(B0 * B1 * M * K), 195),
               bm = random_vector<float>(std::size_t(Bb0 * B1 * K * N), 196);
    const auto make = [&](auto view, const float* pa, const float* pb) {
      return fusor::tanh(fusor::matmul(view(pa, B0, B1, M, K), view(pb, Bb0, B1, K, N)));
    };
    std::vector<float> host(std::size_t(B0 * B1 * M * N));
    fusor::run(host_v(host.data(), B0, B1, M, N), make(host_v, a.data(), bm.data()), fusor::host());
    auto da = on_device(a), dbm = on_device(bm);
    std::vector<double> S(host.size());
    for (std::int64_t z = 0; z < B0 * B1; ++z)
      for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
          const std::int64_t zb = uneven ? z % B1 : z;
          double s = 0;
          for (std::int64_t k = 0; k < K; ++k)
            s += std::fabs(double(a[std::size_t((z * M + i) * K + k)])) * std::fabs(double(bm[std::size_t((zb * K + k) * N + j)]));
          S[std::size_t((z * M + i) * N + j)] = s;
        }
    stream_guard stream;
    device_buffer<float> d_engine(host.size()), d_tiles(host.size());
    CHECK(fusor::run(dev_v(d_engine.ptr, B0, B1, M, N), make(dev_v, da->ptr, dbm->ptr), fusor::cuda(stream.s)).kernels == 1);
    auto tiles = fusor::cuda(stream.s);
    tiles.gemm_engine = fusor::cuda_gemm_engine::fusor_tiles;
    CHECK(fusor::run(dev_v(d_tiles.ptr, B0, B1, M, N), make(dev_v, da->ptr, dbm->ptr), tiles).kernels == 1);
    stream.sync();
    require_gemm_close(d_engine.download(host.size()), host, S, K);
    require_gemm_close(d_tiles.download(host.size()), host, S, K);
  }
  SECTION("f64 linear without bias, M = 1 (decode)") {
    const std::int64_t M = 1, N = 1000, K = 777;
    const auto x = random_vector<double>(std::size_t(M * K), 191), w = random_vector<double>(std::size_t(N * K), 192);
    const auto make = [&](auto view, const double* px, const double* pw) {
      return fusor::linear(view(px, M, K), view(pw, N, K));
    };
    std::vector<double> host(std::size_t(M * N));
    fusor::run(host_v(host.data(), M, N), make(host_v, x.data(), w.data()), fusor::host());
    auto dx = on_device(x), dw = on_device(w);
    std::vector<double> S(host.size());
    for (std::int64_t j = 0; j < N; ++j)
      for (std::int64_t k = 0; k < K; ++k) S[std::size_t(j)] += std::fabs(x[std::size_t(k)] * w[std::size_t(j * K + k)]);
    check_engine_against_tiles<double>(M, N, K, host, S, [&] { return make(dev_v, dx->ptr, dw->ptr); });
  }
}
