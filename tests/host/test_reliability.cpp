// Issue 24 (reliability), on the host executor: a shared executor is safe
// from several threads, cache and memo keys cover everything that changes a
// value, sizes cannot wrap, a failed allocation is a fusor::error that leaves
// outputs untouched, identity tags check dtypes, recognised norms keep the
// written form's NaN/Inf pattern near FLT_MAX, conv/attention geometry is
// checked, and the promises of docs/guarantees.md that were unclear.
//
// [threads] runs under ThreadSanitizer in CI (tools/run-tests.sh, a build
// without OpenMP: libgomp is not instrumented).
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using fusor::host_view;
using fusor::index_t;

namespace {

constexpr float sentinel = -4242.0f;

std::vector<float> random_vec(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool untouched(const std::vector<float>& v) {
  for (float x : v)
    if (std::memcmp(&x, &sentinel, sizeof x) != 0) return false;
  return true;
}

/// |a - b| <= rel * |b| + abs elementwise, NaN where b is NaN, equal infinities.
void check_near(const std::vector<float>& a, const std::vector<float>& b, double rel, double abs) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i << ": " << a[i] << " vs " << b[i]);
    if (std::isnan(b[i])) REQUIRE(std::isnan(a[i]));
    else if (std::isinf(b[i])) REQUIRE(a[i] == b[i]);
    else REQUIRE(std::abs(double(a[i]) - double(b[i])) <= rel * std::abs(double(b[i])) + abs);
  }
}

// One conv + batch-norm problem (NCHW), small enough for many runs.
struct conv_bn {
  index_t n = 2, c = 3, h = 9, w = 9, co = 4, k = 3;
  std::vector<float> x = random_vec(std::size_t(n * c * h * w), 1);
  std::vector<float> wt = random_vec(std::size_t(co * c * k * k), 2);
  std::vector<float> wt2 = random_vec(std::size_t(co * c * k * k), 22);
  std::vector<float> gam = random_vec(std::size_t(co), 3, 0.5f, 1.5f), bet = random_vec(std::size_t(co), 4),
                     mean = random_vec(std::size_t(co), 5), var = random_vec(std::size_t(co), 6, 0.5f, 2.0f);
  fusor::conv2d_params p() const {
    fusor::conv2d_params q;
    q.padding[0] = q.padding[1] = q.padding[2] = q.padding[3] = 1;
    return q;
  }
  auto X() const { return host_view(x.data(), n, c, h, w); }
  auto W() const { return host_view(wt.data(), co, c, k, k); }
  auto bn() const {
    return fusor::batch_norm_params{host_view(gam.data(), co), host_view(bet.data(), co), host_view(mean.data(), co),
                                    host_view(var.data(), co)};
  }
  std::size_t out_size() const { return std::size_t(n * co * h * w); }
  auto out(std::vector<float>& o) const { return host_view(o.data(), n, co, h, w); }
};

// Folding rounds W*k and (b - mean)*k + beta (test_contractions.cpp's bound):
// for these magnitudes (|x|, |w| <= 1, K = 27, k <= 1.5) 1e-5 relative +
// 2e-6 absolute holds with margin.
constexpr double fold_rel = 1e-5, fold_abs = 2e-6;

}  // namespace

// ---------------------------------------------------------------- threads

TEST_CASE("one executor shared by 8 threads: folded conv, attention with shared projections, reductions",
          "[reliability][threads]") {
  const conv_bn cb;
  const auto conv_e = fusor::relu(fusor::batch_norm(fusor::conv2d(cb.X(), cb.W(), nullptr, cb.p()), cb.bn(), 1e-5f));
  const auto conv_e2 = fusor::relu(fusor::batch_norm(
      fusor::conv2d(cb.X(), host_view(cb.wt2.data(), cb.co, cb.c, cb.k, cb.k), nullptr, cb.p()), cb.bn(), 1e-3f));

  const index_t B = 2, S = 8, E = 16;
  const auto xs = random_vec(std::size_t(B * S * E), 7);
  const auto ws = random_vec(std::size_t(E * E), 8, -0.3f, 0.3f);
  struct In;
  const auto Xa = host_view(xs.data(), B, S, E).with_id<In>();
  const auto Wv = host_view(ws.data(), E, E);
  fusor::attention_params ap;
  ap.heads = 2;
  const auto attn_e = fusor::scaled_dot_product_attention(fusor::linear(Xa, Wv), fusor::linear(Xa, fusor::leaky_relu(Wv, 0.5f)),
                                                          fusor::linear(Xa, Wv * 0.5f), ap);
  const auto rs = random_vec(std::size_t(64 * 96), 9, -4.0f, 4.0f);
  const auto R = host_view(rs.data(), 64, 96);
  const auto red_e = fusor::softmax(R, 1) * fusor::sum(fusor::exp(R), {1});

  // Reference results: one thread, a fresh executor each.
  std::vector<float> conv_ref(cb.out_size()), conv_ref2(cb.out_size()), attn_ref(xs.size()), red_ref(rs.size());
  fusor::run(cb.out(conv_ref), conv_e, fusor::host(1));
  fusor::run(cb.out(conv_ref2), conv_e2, fusor::host(1));
  fusor::run(host_view(attn_ref.data(), B, S, E), attn_e, fusor::host(1));
  fusor::run(host_view(red_ref.data(), 64, 96), red_e, fusor::host(1));
  {  // ... which follow unfused
    std::vector<float> u(cb.out_size()), ua(xs.size()), ur(rs.size());
    fusor::run(cb.out(u), conv_e, fusor::unfused());
    check_near(conv_ref, u, fold_rel, fold_abs);
    fusor::run(host_view(ua.data(), B, S, E), attn_e, fusor::unfused());
    check_near(attn_ref, ua, 1e-5, 1e-6);
    fusor::run(host_view(ur.data(), 64, 96), red_e, fusor::unfused());
    check_near(red_ref, ur, 1e-5, 1e-6);
  }

  const auto shared = fusor::host(1);
  const std::size_t before = shared.launches;
  std::atomic<std::size_t> kernels{0};
  std::atomic<int> wrong{0};
  std::mutex report_mutex;
  std::string report;
  constexpr int threads = 8, rounds = 12;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const auto ex = (t % 2) ? shared : fusor::host_executor(shared);  // the object itself, or a copy (one cache)
      const auto& use = (t % 2) ? shared : ex;
      std::vector<float> o(cb.out_size()), oa(xs.size()), orr(rs.size());
      for (int i = 0; i < rounds; ++i) {
        if (t == 0 && i % 4 == 0) use.clear_prepared();  // fresh caches under the others' feet
        // Folded conv: 3 kernels on a cache miss (folded weights, folded
        // bias, conv), 1 on a hit, 2 when clear_prepared() falls between the
        // lookups of the two prepared values.
        const int which = (t + i) % 4;
        std::size_t k = 0;
        bool ok = true;
        if (which == 0) {
          k = fusor::run(cb.out(o), conv_e, use).kernels;
          ok = same_bits(o, conv_ref) && k >= 1 && k <= 3;
        } else if (which == 1) {
          k = fusor::run(cb.out(o), conv_e2, use).kernels;
          ok = same_bits(o, conv_ref2) && k >= 1 && k <= 3;
        } else if (which == 2) {
          k = fusor::run(host_view(oa.data(), B, S, E), attn_e, use).kernels;
          ok = same_bits(oa, attn_ref);
        } else {
          k = fusor::run(host_view(orr.data(), 64, 96), red_e, use).kernels;
          ok = same_bits(orr, red_ref);
        }
        if (!ok) {
          ++wrong;
          std::lock_guard<std::mutex> lock(report_mutex);
          report += "thread " + std::to_string(t) + " round " + std::to_string(i) + ": expression " +
                    std::to_string(which) + ", " + std::to_string(k) + " kernels\n";
        }
        if (&use == &shared) kernels += k;
      }
    });
  }
  for (auto& th : pool) th.join();
  INFO(report);
  CHECK(wrong == 0);
  // The shared object's counter is atomic: it saw exactly what its runs reported.
  CHECK(shared.launches - before == kernels.load());
}

// ---------------------------------------------------------------- keys

TEST_CASE("prepared-weights cache key: change one component, the result follows unfused", "[reliability][keys]") {
  conv_bn cb;
  const auto ex = fusor::host();
  // Absolute term 1e-5 here (not fold_abs): the scaled weights (x3) and eps
  // 0.5 change |k| and the magnitudes; a wrong cache hit differs by O(1)
  // (issue 24: 5.19), so the test still separates right from wrong by 5 orders.
  auto check = [&](const auto& e, const char* what) {
    INFO(what);
    std::vector<float> o(cb.out_size(), sentinel), u(cb.out_size(), sentinel);
    fusor::run(cb.out(o), e, ex);
    fusor::run(cb.out(u), e, fusor::unfused());
    check_near(o, u, fold_rel, 1e-5);
  };
  const auto conv = [&](const auto& w, float eps) {
    return fusor::relu(fusor::batch_norm(fusor::conv2d(cb.X(), w, nullptr, cb.p()), cb.bn(), eps));
  };
  // The weights pass through an op with an attribute, so the folded
  // expression holds it: issue 24 found 0.9 reusing the 0.01 result.
  check(conv(fusor::leaky_relu(cb.W(), 0.01f), 1e-5f), "attribute: leaky_relu 0.01");
  check(conv(fusor::leaky_relu(cb.W(), 0.9f), 1e-5f), "attribute: leaky_relu 0.9");
  check(conv(cb.W(), 1e-5f), "attribute: eps 1e-5");
  check(conv(cb.W(), 0.5f), "attribute: eps 0.5");
  check(conv(cb.W() * 2.0f, 1e-5f), "scalar: 2");
  check(conv(cb.W() * 3.0f, 1e-5f), "scalar: 3");
  check(conv(host_view(cb.wt2.data(), cb.co, cb.c, cb.k, cb.k), 1e-5f), "data pointer");
  // Same pointer, other strides: w read transposed in its last two dims.
  check(conv(host_view(cb.wt.data(), fusor::dextents<4>(cb.co, cb.c, cb.k, cb.k), {cb.c * 9, 9, 1, 3}), 1e-5f),
        "strides");
  // Same pointer and strides, fewer input channels (x's first 2 channels).
  {
    std::vector<float> o(std::size_t(cb.n * cb.co * cb.h * cb.w)), u(o.size());
    const auto X2 = host_view(cb.x.data(), fusor::dextents<4>(cb.n, 2, cb.h, cb.w), {cb.c * 81, 81, 9, 1});
    const auto W2 = host_view(cb.wt.data(), fusor::dextents<4>(cb.co, 2, cb.k, cb.k), {cb.c * 9, 9, 3, 1});
    const auto e = fusor::relu(fusor::batch_norm(fusor::conv2d(X2, W2, nullptr, cb.p()), cb.bn(), 1e-5f));
    fusor::run(cb.out(o), e, ex);
    fusor::run(cb.out(u), e, fusor::unfused());
    check_near(o, u, fold_rel, 1e-5);
  }
  // Contents changed in place: the key holds addresses; clear_prepared() is the invalidation.
  const auto e = conv(cb.W(), 1e-5f);
  std::vector<float> stale(cb.out_size()), fresh(cb.out_size()), u(cb.out_size());
  fusor::run(cb.out(stale), e, ex);
  for (auto& v : cb.wt) v = -v;
  ex.clear_prepared();
  CHECK(fusor::run(cb.out(fresh), e, ex).kernels == 3);
  fusor::run(cb.out(u), e, fusor::unfused());
  check_near(fresh, u, fold_rel, 1e-5);
}

TEST_CASE("shared Q/K/V projection memo: blocks differing only in an attribute are not shared",
          "[reliability][keys]") {
  const index_t B = 2, S = 6, E = 8;
  const auto xs = random_vec(std::size_t(B * S * E), 11);
  const auto ws = random_vec(std::size_t(E * E), 12, -0.5f, 0.5f);
  struct In;
  const auto X = host_view(xs.data(), B, S, E).with_id<In>();
  const auto W = host_view(ws.data(), E, E);
  fusor::attention_params ap;
  ap.heads = 2;
  auto block = [&](float a) {
    const auto w = fusor::leaky_relu(W, a);
    return fusor::scaled_dot_product_attention(fusor::linear(X, w), fusor::linear(X, w), fusor::linear(X, w), ap);
  };
  const auto both = block(0.01f) + block(0.9f);
  std::vector<float> o(xs.size(), sentinel), u(xs.size(), sentinel), a(xs.size()), b(xs.size()), sum(xs.size());
  fusor::run(host_view(o.data(), B, S, E), both, fusor::host());
  fusor::run(host_view(u.data(), B, S, E), both, fusor::unfused());
  fusor::run(host_view(a.data(), B, S, E), block(0.01f), fusor::host());
  fusor::run(host_view(b.data(), B, S, E), block(0.9f), fusor::host());
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = a[i] + b[i];
  CHECK(same_bits(o, sum));
  check_near(o, u, 1e-5, 1e-6);
}

// ---------------------------------------------------------------- sizes

TEST_CASE("sizes cannot wrap: temporaries of 2^61, 2^62 and 2^63 elements through stride-0 views",
          "[reliability][sizes]") {
  float one = 1.0f;
  for (int lg : {61, 62, 63}) {
    INFO("2^" << lg << " elements");
    // [2^(lg-31), 2^31] with all strides 0: one float broadcast.
    const index_t rows = index_t(1) << (lg - 31), cols = index_t(1) << 31;
    const auto x = host_view(&one, fusor::dextents<2>(rows, cols), {0, 0});
    std::vector<float> out(1, sentinel);
    const auto o = host_view(out.data(), index_t(1), index_t(1));
    for (int k = 0; k < 2; ++k) {
      const auto run = [&] {
        if (k == 0) return fusor::run(o, fusor::sum(fusor::materialize(x * 2.0f)), fusor::host());
        return fusor::run(o, fusor::sum(fusor::materialize(fusor::softmax(x, 1))), fusor::host());
      };
      try {
        run();
        FAIL("no error");
      } catch (const fusor::shape_error& e) {
        CHECK_THAT(e.what(), StartsWith("fusor: ") && Contains("overflow"));
        CHECK_THAT(e.what(), Contains(lg == 63 ? "input" : "temporary"));
      } catch (const fusor::allocation_error& e) {
        CHECK_THAT(e.what(), StartsWith("fusor: run: temporary for ") && Contains("bytes"));
      }
      CHECK(untouched(out));
    }
  }
}

TEST_CASE("the split-row workspace of a long reduction is sized with checked arithmetic", "[reliability][sizes]") {
  // rows * chunks stays small here; the check is the same code the overflow hits.
  std::vector<float> v(1 << 20, 1.0f), out(1, sentinel);
  CHECK(fusor::run(host_view(out.data(), index_t(1)), fusor::sum(host_view(v.data(), index_t(1 << 20)), {0}),
                   fusor::host())
            .kernels >= 1);
  CHECK(out[0] == float(1 << 20));
}

// ---------------------------------------------------------------- allocation failures

namespace {
/// Runs run_once() with the n-th allocation failing for every n until a run
/// succeeds; each failing run must throw allocation_error (a fusor::error)
/// with outputs untouched. Returns the number of allocations of the plan.
template <class Run, class Outs>
long fail_each_allocation(const Run& run_once, Outs& outs) {
  long n = 1;
  for (;; ++n) {
    for (auto* o : outs) std::fill(o->begin(), o->end(), sentinel);
    fusor::testing::fail_allocation(n);
    bool threw = false;
    try {
      run_once();
    } catch (const fusor::allocation_error& e) {
      threw = true;
      CHECK_THAT(e.what(), StartsWith("fusor: run: ") && Contains("cannot allocate"));
    }
    fusor::testing::fail_allocation(0);
    if (!threw) break;
    for (auto* o : outs) CHECK(untouched(*o));
    REQUIRE(n < 64);
  }
  return n - 1;
}
}  // namespace

TEST_CASE("a failed allocation is an allocation_error and leaves every output untouched", "[reliability][alloc]") {
  const auto xs = random_vec(64 * 48, 21, -3.0f, 3.0f), ys = random_vec(64 * 48, 22);
  const auto x = host_view(xs.data(), 64, 48), y = host_view(ys.data(), 64, 48);
  std::vector<float> a(64 * 48), b(64), ra(a.size()), rb(b.size());
  std::vector<std::vector<float>*> outs{&a, &b};
  // Siblings planned as several kernels, with temporaries between them.
  const auto e1 = fusor::relu(fusor::materialize(fusor::softmax(x, 1)) + y);
  const auto e2 = fusor::sum<1>(fusor::materialize(fusor::exp(x)) * y, {1}, false);
  const auto run_once = [&] {
    return fusor::run(fusor::outputs(host_view(a.data(), 64, 48), host_view(b.data(), index_t(64))),
                      fusor::siblings(e1, e2), fusor::host());
  };
  const long allocations = fail_each_allocation(run_once, outs);
  CHECK(allocations >= 2);
  fusor::run(fusor::outputs(host_view(ra.data(), 64, 48), host_view(rb.data(), index_t(64))), fusor::siblings(e1, e2),
             fusor::unfused());
  check_near(a, ra, 1e-5, 1e-6);
  check_near(b, rb, 1e-5, 1e-5);

  // Folded batch norm (prepared weights) on a fresh cache, and a broadcast-up
  // reduction epilogue (a temporary inside the family's launcher).
  const conv_bn cb;
  std::vector<float> c(cb.out_size());
  std::vector<std::vector<float>*> couts{&c};
  const auto ce = fusor::relu(fusor::batch_norm(fusor::conv2d(cb.X(), cb.W(), nullptr, cb.p()), cb.bn(), 1e-5f));
  CHECK(fail_each_allocation([&] { return fusor::run(cb.out(c), ce, fusor::host()); }, couts) >= 1);
  std::vector<float> big(4 * 64 * 48);
  std::vector<std::vector<float>*> bouts{&big};
  const auto be = fusor::layer_norm(x, nullptr, nullptr) + host_view(xs.data(), fusor::dextents<3>(4, 64, 48), {0, 48, 1});
  CHECK(fail_each_allocation([&] { return fusor::run(host_view(big.data(), 4, 64, 48), be, fusor::host()); }, bouts) >= 1);
}

// ---------------------------------------------------------------- tags

TEST_CASE("one identity tag on views of different dtypes is an argument_error", "[reliability][tags]") {
  std::vector<float> f(16, 1.5f), out(16, sentinel);
  struct X;
  const auto xf = host_view(f.data(), 16).with_id<X>();
  const auto xi = host_view(reinterpret_cast<const std::int32_t*>(f.data()), 16).with_id<X>();
  CHECK_THROWS_AS(fusor::run(host_view(out.data(), 16), xf + xi, fusor::host()), fusor::argument_error);
  CHECK_THROWS_WITH(fusor::run(host_view(out.data(), 16), xf + xi, fusor::host()),
                    Contains("same identity tag") && Contains("dtype"));
  CHECK(untouched(out));
}

// ---------------------------------------------------------------- extremes

namespace {
/// Where the written form (unfused) is finite, the fused result is finite;
/// where it is +-inf, the fused result is the same infinity. Where it is NaN
/// because an intermediate sum overflowed (a row of +-FLT_MAX/2 halves), the
/// fused op, whose accumulation does not overflow, may be finite: the
/// promise is one-way (docs/guarantees.md). Finite values are not compared:
/// at these magnitudes the written form loses to absorption what the fused
/// op keeps (x - logsumexp(x) with four maxima of 3e38 is 0 written, -log 4
/// fused).
template <class E>
void same_pattern(const E& e, int rows, int cols, const char* what) {
  INFO(what);
  std::vector<float> a(std::size_t(rows * cols), sentinel), c(a.size(), sentinel);
  fusor::run(host_view(a.data(), rows, cols), e, fusor::host());
  fusor::run(host_view(c.data(), rows, cols), e, fusor::unfused());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i << " (row " << i / std::size_t(cols) << "): fused " << a[i] << ", written " << c[i]);
    if (std::isnan(c[i])) continue;
    REQUIRE(!std::isnan(a[i]));
    if (std::isinf(c[i]) || std::isinf(a[i])) REQUIRE(a[i] == c[i]);
  }
}
}  // namespace

TEST_CASE("recognised norms and softmax keep the written form's NaN/Inf pattern up to FLT_MAX",
          "[reliability][extremes]") {
  const float big = std::numeric_limits<float>::max(), den = std::numeric_limits<float>::denorm_min();
  for (int cols : {2, 8, 33, 1025}) {
    INFO("cols " << cols);
    const int rows = 6;
    std::vector<float> v(std::size_t(rows * cols));
    for (int j = 0; j < cols; ++j) {
      const float s = (j % 2) ? -1.0f : 1.0f;
      v[std::size_t(j)] = s * 3e38f;                         // issue 24's row: fused NaN, written 0
      v[std::size_t(cols + j)] = s * big;                     // +-FLT_MAX
      v[std::size_t(2 * cols + j)] = s * big / 2;             // +-FLT_MAX/2
      v[std::size_t(3 * cols + j)] = float(j % 5) * den;      // denormals
      v[std::size_t(4 * cols + j)] = j == 0 ? big : 1.0f;     // one huge outlier
      v[std::size_t(5 * cols + j)] = (j < cols / 2) ? big / 2 : -big / 2;  // halves (sums overflow in both)
    }
    const auto x = host_view(v.data(), rows, cols);
    const auto c = x - fusor::mean(x, {-1});
    const auto sh = x - fusor::max_reduce(x, {-1});
    same_pattern(c / fusor::sqrt(fusor::mean(fusor::square(c), {-1}) + 1e-5f), rows, cols, "layer_norm, / sqrt");
    same_pattern(fusor::rsqrt(fusor::mean(c * c, {1}) + 1e-3) * c, rows, cols, "layer_norm, * rsqrt");
    same_pattern(x * fusor::rsqrt(fusor::mean(fusor::square(x), {-1}) + 1e-6f), rows, cols, "rms_norm");
    same_pattern(fusor::exp(sh) / fusor::sum(fusor::exp(sh), {1}), rows, cols, "softmax");
    same_pattern(x - fusor::logsumexp(x, {-1}), rows, cols, "log_softmax");
    same_pattern(fusor::layer_norm(x, nullptr, nullptr), rows, cols, "layer_norm op");
    same_pattern(fusor::rms_norm(x, nullptr), rows, cols, "rms_norm op");
    same_pattern(fusor::softmax(x), rows, cols, "softmax op");
  }
}

// ---------------------------------------------------------------- geometry

TEST_CASE("conv2d geometry: checked arithmetic, argument_error naming the attribute", "[reliability][geometry]") {
  std::vector<float> xs(2 * 3 * 8 * 8, 1.0f), ws(4 * 3 * 3 * 3, 1.0f), out(2 * 4 * 8 * 8, sentinel);
  const auto X = host_view(xs.data(), 2, 3, 8, 8);
  const auto W = host_view(ws.data(), 4, 3, 3, 3);
  const auto O = host_view(out.data(), 2, 4, 8, 8);
  auto fails = [&](fusor::conv2d_params p, const char* attribute) {
    INFO(attribute);
    try {
      fusor::run(O, fusor::conv2d(X, W, nullptr, p), fusor::host());
      FAIL("no error");
    } catch (const fusor::argument_error& e) {
      CHECK_THAT(e.what(), StartsWith("fusor: conv2d: ") && Contains(attribute));
    }
    CHECK(untouched(out));
  };
  const index_t huge = std::numeric_limits<index_t>::max() / 2 + 7;
  {
    fusor::conv2d_params p;
    p.padding[0] = p.padding[2] = huge;
    fails(p, "padding");
  }
  {
    fusor::conv2d_params p;
    p.dilation[1] = huge;
    fails(p, "dilation");
  }
  {
    fusor::conv2d_params p;
    p.dilation[0] = 0;
    fails(p, "dilation");
  }
  {
    fusor::conv2d_params p;
    p.stride[1] = -2;
    fails(p, "stride");
  }
  {
    fusor::conv2d_params p;
    p.padding[3] = -1;
    fails(p, "padding");
  }
  // A kernel of extent 0 is an argument_error (PyTorch rejects it; fusor returned the bias).
  std::vector<float> none(1);
  try {
    fusor::run(O, fusor::conv2d(X, host_view(none.data(), 4, 3, 0, 3), nullptr, {}), fusor::host());
    FAIL("no error");
  } catch (const fusor::argument_error& e) {
    CHECK_THAT(e.what(), Contains("kernel"));
  }
  CHECK(untouched(out));
}

TEST_CASE("attention with head_dim 0 is an argument_error", "[reliability][geometry]") {
  std::vector<float> q(8), out(8, sentinel);
  const auto Q = host_view(q.data(), 1, 1, 4, 0);
  try {
    fusor::run(host_view(out.data(), 1, 1, 4, 0), fusor::scaled_dot_product_attention(Q, Q, Q), fusor::host());
    FAIL("no error");
  } catch (const fusor::argument_error& e) {
    CHECK_THAT(e.what(), StartsWith("fusor: attention: ") && Contains("head_dim"));
  }
}

// ---------------------------------------------------------------- promises

TEST_CASE("guarantees.md promises: overlapping output strides, ONNX Cast conversions, +0.0 empty sums, negative strides",
          "[reliability][promises]") {
  std::vector<float> xs(16, 2.0f), out(16, sentinel);
  const auto x = host_view(xs.data(), 4, 4);
  SECTION("an output whose strides make two elements share an address is refused") {
    const auto o = host_view(out.data(), fusor::dextents<2>(4, 4), {1, 1});
    CHECK_THROWS_AS(fusor::run(o, fusor::relu(x), fusor::host()), fusor::argument_error);
    CHECK_THROWS_WITH(fusor::run(o, fusor::relu(x), fusor::host()), Contains("output 0") && Contains("overlap"));
    CHECK(untouched(out));
    // Non-overlapping permuted and padded strides are fine.
    std::vector<float> wide(64, sentinel);
    CHECK_NOTHROW(fusor::run(host_view(wide.data(), fusor::dextents<2>(4, 4), {1, 8}), fusor::relu(x), fusor::host()));
    CHECK(wide[8] == 2.0f);
  }
  SECTION("integer to integer conversions wrap (ONNX Cast); float to integer saturates, NaN -> 0") {
    std::vector<std::int64_t> big{std::int64_t(1) << 32 | 5, -(std::int64_t(1) << 33) - 3, 2147483648LL, 7};
    std::vector<std::int32_t> o32(4);
    fusor::run(host_view(o32.data(), 4), host_view(big.data(), 4), fusor::host());
    CHECK(o32 == std::vector<std::int32_t>{5, -3, std::numeric_limits<std::int32_t>::min(), 7});
    std::vector<float> f{3e9f, -3e9f, std::numeric_limits<float>::quiet_NaN(), -2.7f};
    fusor::run(host_view(o32.data(), 4), host_view(f.data(), 4), fusor::host());
    CHECK(o32 == std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::max(), std::numeric_limits<std::int32_t>::min(), 0, -2});
  }
  SECTION("a sum over an empty axis is +0.0 (ONNX, NumPy)") {
    std::vector<float> o(4, sentinel);
    const auto empty = host_view(xs.data(), 4, 0);
    fusor::run(host_view(o.data(), 4, 1), fusor::sum(empty, {1}), fusor::host());
    for (float v : o) CHECK((v == 0.0f && !std::signbit(v)));
    std::fill(o.begin(), o.end(), sentinel);
    fusor::run(host_view(o.data(), 4, 1), fusor::sum(empty, {1}), fusor::unfused());
    for (float v : o) CHECK((v == 0.0f && !std::signbit(v)));
  }
  SECTION("negative strides read and write reversed") {
    std::vector<float> r{1, 2, 3, 4};
    const auto rev = host_view(r.data() + 3, fusor::dextents<1>(4), {-1});
    std::vector<float> o(4, sentinel);
    fusor::run(host_view(o.data(), 4), rev * 2.0f, fusor::host());
    CHECK(o == std::vector<float>{8, 6, 4, 2});
    fusor::run(host_view(o.data() + 3, fusor::dextents<1>(4), {-1}), host_view(r.data(), 4) + 0.5f, fusor::host());
    CHECK(o == std::vector<float>{4.5f, 3.5f, 2.5f, 1.5f});
  }
}

// Issue 18, item 5: outputs and inputs overlap by elements, not by address
// ranges. Interleaved views that share no element are accepted; real
// overlaps are still refused before anything is written.
TEST_CASE("overlap by elements: interleaved outputs, in-place halves; real overlaps refused", "[reliability][overlap]") {
  SECTION("even and odd columns of one buffer as two sibling outputs") {
    std::vector<float> x = random_vec(32, 91), buf(32, sentinel);
    const auto xe = host_view(static_cast<const float*>(x.data()), fusor::dextents<2>(4, 4), {8, 2});
    const auto xo = host_view(static_cast<const float*>(x.data()) + 1, fusor::dextents<2>(4, 4), {8, 2});
    const auto even = host_view(buf.data(), fusor::dextents<2>(4, 4), {8, 2});
    const auto odd = host_view(buf.data() + 1, fusor::dextents<2>(4, 4), {8, 2});
    fusor::run(fusor::outputs(even, odd), fusor::siblings(xe * 2.0f, xo + 100.0f), fusor::host());
    for (int i = 0; i < 32; ++i) CHECK(buf[std::size_t(i)] == (i % 2 ? x[std::size_t(i)] + 100.0f : x[std::size_t(i)] * 2.0f));
  }
  SECTION("rotary (half-split) in place: each half written from both halves") {
    std::vector<float> r = random_vec(48, 92), want(48);
    for (int row = 0; row < 6; ++row)
      for (int j = 0; j < 4; ++j) {
        const float a = r[std::size_t(row * 8 + j)], b = r[std::size_t(row * 8 + 4 + j)];
        want[std::size_t(row * 8 + j)] = a * 0.5f - b * 0.25f;
        want[std::size_t(row * 8 + 4 + j)] = b * 0.5f + a * 0.25f;
      }
    struct A {};
    struct B {};
    const auto a = host_view(static_cast<const float*>(r.data()), fusor::dextents<2>(6, 4), {8, 1}).with_id<A>();
    const auto b = host_view(static_cast<const float*>(r.data()) + 4, fusor::dextents<2>(6, 4), {8, 1}).with_id<B>();
    const auto ya = host_view(r.data(), fusor::dextents<2>(6, 4), {8, 1});
    const auto yb = host_view(r.data() + 4, fusor::dextents<2>(6, 4), {8, 1});
    fusor::run(fusor::outputs(ya, yb), fusor::siblings(a * 0.5f - b * 0.25f, b * 0.5f + a * 0.25f), fusor::host());
    CHECK(r == want);
  }
  SECTION("shifted by one element, or by one row: refused, nothing written") {
    std::vector<float> z(40, 1.0f);
    const auto in = host_view(static_cast<const float*>(z.data()), 4, 8);
    CHECK_THROWS_WITH(fusor::run(host_view(z.data() + 1, 4, 8), in * 2.0f, fusor::host()), Contains("partially overlaps"));
    CHECK_THROWS_WITH(fusor::run(host_view(z.data() + 8, 4, 8), in * 2.0f, fusor::host()), Contains("partially overlaps"));
    // even columns written from odd columns shifted by two elements: elements shared
    const auto odd = host_view(static_cast<const float*>(z.data()) + 1, fusor::dextents<2>(4, 4), {8, 2});
    CHECK_THROWS_WITH(fusor::run(host_view(z.data() + 3, fusor::dextents<2>(4, 4), {8, 2}), odd * 2.0f, fusor::host()),
                      Contains("partially overlaps"));
    for (float v : z) CHECK(v == 1.0f);
  }
  SECTION("the element-set test against brute force on random small layouts") {
    // Whenever two layouts share an element, the test must say so; for two
    // views of one layout (and for a relative offset the strides' gcd does
    // not divide) it must be exact.
    std::mt19937 g(93);
    int exact_disjoint = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      const int rank = 1 + int(g() % 3);
      std::vector<index_t> ext(static_cast<std::size_t>(rank), 0), st(static_cast<std::size_t>(rank), 0);
      index_t reach = 1;
      for (int d = rank - 1; d >= 0; --d) {  // nested strides, with padding and gaps
        ext[std::size_t(d)] = 1 + index_t(g() % 4);
        st[std::size_t(d)] = reach * index_t(1 + g() % 3);
        reach = st[std::size_t(d)] * ext[std::size_t(d)];
      }
      const bool same_layout = g() % 2 == 0;
      std::vector<index_t> ext2 = ext, st2 = st;
      if (!same_layout)
        for (int d = 0; d < rank; ++d) ext2[std::size_t(d)] = 1 + index_t(g() % 4);
      const index_t shift = index_t(g() % 24);
      std::vector<float> mem(512);
      auto addresses = [&](const std::vector<index_t>& e, const std::vector<index_t>& s, index_t off) {
        std::vector<index_t> out{off};
        for (int d = 0; d < rank; ++d) {
          std::vector<index_t> next;
          for (index_t base : out)
            for (index_t i = 0; i < e[std::size_t(d)]; ++i) next.push_back(base + i * s[std::size_t(d)]);
          out = next;
        }
        return out;
      };
      const auto pa = addresses(ext, st, 0), pb = addresses(ext2, st2, shift);
      bool share = false;
      for (index_t p : pa)
        for (index_t q : pb) share = share || p == q;
      fusor::exec::view_layout la{reinterpret_cast<std::uintptr_t>(mem.data()), 4, ext, st, {}};
      fusor::exec::view_layout lb{reinterpret_cast<std::uintptr_t>(mem.data() + shift), 4, ext2, st2, {}};
      // byte ranges from the element offsets (relative to mem.data())
      auto range = [&](const std::vector<index_t>& p) {
        const auto [lo, hi] = std::minmax_element(p.begin(), p.end());
        const auto base = reinterpret_cast<std::uintptr_t>(mem.data());
        return fusor::exec::byte_range{base + std::uintptr_t(*lo * 4), base + std::uintptr_t((*hi + 1) * 4)};
      };
      la.range = range(pa);
      lb.range = range(pb);
      const bool said = fusor::exec::may_share_elements(la, lb);
      INFO("trial " << trial);
      if (share) CHECK(said);
      if (!share && same_layout) {
        CHECK(!said);
        ++exact_disjoint;
      }
    }
    CHECK(exact_disjoint > 100);
  }
}
