/// @file bench/math_bench.cpp
/// The host's transcendental functions side by side: fusor's (SLEEF's 1-ulp
/// variants on packs, ops/vector_math.hpp), Eigen's packet math and glibc's
/// scalar functions, at the instruction set this benchmark is built for
/// (-march=native unless FUSOR_BENCH_NATIVE=OFF). The measurement behind
/// fusor's choice of SLEEF (docs/benchmarks.md, "Host math").
///
/// Per function (exp, log, tanh, erf) and engine: throughput on 4096 floats
/// in L1 (best of 30 rounds of 50 calls, one thread: ns per element), the
/// maximum error in ulps of float64's result over 2^22 inputs spread over
/// the function's useful range, and the number of 16 special inputs (NaN,
/// +-inf, +-0, denormals, overflow and underflow arguments) whose result is
/// off by more than 4 ulps or has the wrong class (NaN, inf).
///
/// Output: one JSON line per (function, engine):
///   {bench: "math", fn, engine, lanes, ns_per_element, max_ulp, specials_off}
#include "bench_common.hpp"

#include <fusor/fusor.hpp>

#if FUSOR_BENCH_HAS_EIGEN
#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using fusor_bench::json;
using kernel = std::function<void(const float*, float*, int)>;

double ns_per_element(const kernel& f, const std::vector<float>& x, std::vector<float>& y) {
  double best = 1e30;
  for (int r = 0; r < 30; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int rep = 0; rep < 50; ++rep) f(x.data(), y.data(), int(x.size()));
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / (50.0 * double(x.size())));
  }
  return best;
}

/// |got - ref| in ulps of the float nearest ref (0 when both are the same
/// NaN / infinity; a large number for a wrong class).
double ulps(float got, double ref) {
  if (std::isnan(ref)) return std::isnan(got) ? 0 : 1e9;
  if (std::isinf(ref)) return double(got) == ref ? 0 : 1e9;
  const float r = float(ref);
  if (std::isinf(r)) return got == r ? 0 : 1e9;  // (beyond FLT_MAX: the float result is infinite)
  if (std::isnan(got) || std::isinf(got)) return 1e9;
  double u = double(std::nextafter(std::fabs(r), std::numeric_limits<float>::infinity())) - double(std::fabs(r));
  if (r == 0) u = double(std::numeric_limits<float>::denorm_min());
  return std::fabs(double(got) - ref) / u;
}

template <class F>
kernel fusor_kernel(F f) {
  return [f](const float* x, float* y, int n) {
    constexpr int W = fusor::host_pack_lanes;
    int i = 0;
    for (; i + W <= n; i += W) {
      fusor::pack<float, W> p;
      std::memcpy(p.data(), x + i, sizeof(float) * W);
      const auto r = f(p);
      std::memcpy(y + i, r.data(), sizeof(float) * W);
    }
    for (; i < n; ++i) y[i] = f(x[i]);
  };
}

#if FUSOR_BENCH_HAS_EIGEN
template <class F>
kernel eigen_kernel(F f) {
  return [f](const float* x, float* y, int n) {
    using P = typename Eigen::internal::packet_traits<float>::type;
    constexpr int V = Eigen::internal::unpacket_traits<P>::size;
    int i = 0;
    for (; i + V <= n; i += V) Eigen::internal::pstoreu(y + i, f(Eigen::internal::ploadu<P>(x + i)));
    for (; i < n; ++i) y[i] = Eigen::internal::pfirst(f(Eigen::internal::pset1<P>(x[i])));
  };
}
#endif

struct function_case {
  const char* fn;
  double (*ref)(double);
  float lo, hi;
  bool log_scale;
  std::vector<std::pair<const char*, kernel>> engines;
};

}  // namespace

int main() {
#define FUSOR_LIBM(F) [](const float* x, float* y, int n) { for (int i = 0; i < n; ++i) y[i] = F(x[i]); }
  std::vector<function_case> cases = {
      {"exp", [](double v) { return std::exp(v); }, -87, 88, false, {}},
      {"log", [](double v) { return std::log(v); }, 1e-30f, 1e30f, true, {}},
      {"tanh", [](double v) { return std::tanh(v); }, -10, 10, false, {}},
      {"erf", [](double v) { return std::erf(v); }, -5, 5, false, {}},
  };
  cases[0].engines = {{"glibc", FUSOR_LIBM(::expf)}, {"fusor_sleef_u10", fusor_kernel([](auto v) { return fusor::math::exp(v); })}};
  cases[1].engines = {{"glibc", FUSOR_LIBM(::logf)}, {"fusor_sleef_u10", fusor_kernel([](auto v) { return fusor::math::log(v); })}};
  cases[2].engines = {{"glibc", FUSOR_LIBM(::tanhf)}, {"fusor_sleef_u10", fusor_kernel([](auto v) { return fusor::math::tanh(v); })}};
  cases[3].engines = {{"glibc", FUSOR_LIBM(::erff)}, {"fusor_sleef_u10", fusor_kernel([](auto v) { return fusor::math::erf(v); })}};
#undef FUSOR_LIBM
#if FUSOR_BENCH_HAS_EIGEN
  namespace ei = Eigen::internal;
  cases[0].engines.push_back({"eigen", eigen_kernel([](auto p) { return ei::pexp(p); })});
  cases[1].engines.push_back({"eigen", eigen_kernel([](auto p) { return ei::plog(p); })});
  cases[2].engines.push_back({"eigen", eigen_kernel([](auto p) { return ei::ptanh(p); })});
  cases[3].engines.push_back({"eigen", eigen_kernel([](auto p) { return ei::perf(p); })});
#endif
  const float specials[16] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), 0.0f, -0.0f, 1e-45f, -1e-45f, 1e-38f,
                              100.0f, -100.0f, 1e30f, -1e30f, 88.8f, -104.0f, 3.4e38f, -3.4e38f};
  std::vector<float> x(4096), y(4096), xs(std::size_t(1) << 22), ys(xs.size());
  for (const auto& c : cases) {
    std::mt19937 g(1);
    std::uniform_real_distribution<float> d(c.log_scale ? std::log(c.lo) : c.lo, c.log_scale ? std::log(c.hi) : c.hi);
    auto draw = [&] { const float v = d(g); return c.log_scale ? std::exp(v) : v; };
    for (auto& e : x) e = draw();
    for (auto& e : xs) e = draw();
    for (int i = 0; i < 16; ++i) xs[std::size_t(i)] = specials[i];
    for (const auto& [engine, f] : c.engines) {
      const double ns = ns_per_element(f, x, y);
      f(xs.data(), ys.data(), int(xs.size()));
      double worst = 0;
      int off = 0;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const double u = ulps(ys[i], c.ref(double(xs[i])));
        if (i < 16) off += u > 4;
        else worst = std::max(worst, u);
      }
      std::cout << json{{"bench", "math"}, {"fn", c.fn}, {"engine", engine}, {"lanes", fusor::host_pack_lanes},
                        {"ns_per_element", ns}, {"max_ulp", worst}, {"specials_off", off}}
                       .dump()
                << std::endl;
    }
  }
}
