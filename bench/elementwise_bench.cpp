/// @file bench/elementwise_bench.cpp
/// Host benchmark of two 6-op elementwise chains (see chain6.hpp), in one run:
///   chain6      y = (gelu(x * a + b) - sigmoid(x)) * c   (host: compute-bound, libm)
///   chain6_mem  y = max(relu(x * a + b) * c - x, b)      (memory-bound, exact ops)
/// each as
///   fused    fusor::run(..., fusor::host())               one kernel
///   unfused  fusor::run(..., fusor::unfused())            one kernel per op,
///            temporaries allocated by the executor on every run
///   eigen    the same chain as Eigen Tensor expressions (TensorMap), evaluated
///            on an Eigen::ThreadPoolDevice with omp_get_max_threads() threads
///   handwritten  diagnostic: the same scalar formula as a plain OpenMP loop
///            (chain6: calling glibc's erff/expf), i.e. what a compiler makes of
///            the chain without fusor (it must equal fused bit for bit)
///   copy, triad  STREAM-style OpenMP loops: this machine's bandwidth (measured
///            once, reported under both chains' names)
///
/// Timing: every variant runs once as warmup; then --repeats rounds, each
/// timing every variant once (std::chrono::steady_clock), so that a burst of
/// load from other processes hits all variants alike; each variant's minimum
/// is reported. Output: one JSON object per line (checks, then per chain one
/// line per variant and one summary line). Results are checked before timing:
/// fused must equal unfused and handwritten bit for bit, and Eigen lie within a
/// tolerance (chain6: its erf and logistic are its own polynomial
/// approximations; chain6_mem: exact ops, expected equal); any disagreement
/// exits with status 1.
///
/// Usage: bench_elementwise [--elements N] [--repeats R]
#include "bench_common.hpp"
#include "chain6.hpp"

#include <fusor/fusor.hpp>
#include <nlohmann/json.hpp>

#if FUSOR_BENCH_HAS_EIGEN
#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/Tensor>
#endif

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using fusor_bench::json;
using fusor_bench::load_average;
using fusor_bench::max_threads;
using fusor_bench::time_interleaved;
using buffer = fusor_bench::aligned_buffer<float>;
using fusor_bench::allocate;

struct variant {
  const char* name;
  std::function<void()> run;
  double best = std::numeric_limits<double>::infinity();
};

double seconds_of(const std::vector<variant>& vs, const std::string& name) {
  for (const auto& v : vs)
    if (name == v.name) return v.best;
  return std::numeric_limits<double>::quiet_NaN();
}

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--elements N] [--repeats R]\n"
               "  --elements N  floats per array (default 67108864 = 2^26)\n"
               "  --repeats R   timed rounds after one warmup run of each variant; a round times every\n"
               "                variant once; each variant's minimum is reported (default 10)\n"
               "threads: OMP_NUM_THREADS (fusor::host(), the loops, and Eigen's thread pool)\n",
               argv0);
  std::exit(status);
}

std::int64_t parse_positive(const char* argv0, const char* opt, const char* s) {
  const long long v = fusor_bench::parse_positive(s);
  if (v <= 0) {
    std::fprintf(stderr, "%s: %s needs a positive integer, got '%s'\n", argv0, opt, s);
    usage(argv0, 2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t n = std::int64_t(1) << 26;
  int repeats = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage(argv[0], 0);
    if ((arg == "--elements" || arg == "--repeats") && i + 1 < argc) {
      const std::int64_t v = parse_positive(argv[0], arg.c_str(), argv[++i]);
      if (arg == "--elements") n = v;
      else repeats = int(std::min<std::int64_t>(v, 1000000));
    } else {
      std::fprintf(stderr, "%s: unknown or incomplete option '%s'\n", argv[0], arg.c_str());
      usage(argv[0], 2);
    }
  }
  const int threads = max_threads();

  // Inputs and outputs, first touched by the threads that use them.
  buffer x = allocate(n), b = allocate(n), c = allocate(n);
  buffer y_fused = allocate(n), y_unfused = allocate(n), y_eigen = allocate(n), scratch = allocate(n);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] = chain6::x_at(std::uint64_t(i));
    b[i] = chain6::b_at(std::uint64_t(i));
    c[i] = chain6::c_at(std::uint64_t(i));
    y_fused[i] = y_unfused[i] = y_eigen[i] = scratch[i] = 0.0f;
  }

  const auto xv = fusor::host_view(static_cast<const float*>(x.get()), n);
  const auto bv = fusor::host_view(static_cast<const float*>(b.get()), n);
  const auto cv = fusor::host_view(static_cast<const float*>(c.get()), n);
  const auto e = chain6::expression(xv, bv, cv, chain6::a);
  static_assert(fusor::kernel_count<decltype(e)> == 1, "chain6 should fuse into one kernel");
  static_assert(fusor::unfused_kernel_count<decltype(e)> == chain6::ops, "chain6 should be six unfused kernels");

  const auto fused_ex = fusor::host();
  const auto unfused_ex = fusor::unfused();
  auto run_fused = [&] { fusor::run(fusor::host_view(y_fused.get(), n), e, fused_ex); };
  auto run_unfused = [&] { fusor::run(fusor::host_view(y_unfused.get(), n), e, unfused_ex); };

  // The chain as a compiler sees it without fusor; same operations in the same
  // order as fusor's ops (ops/elementwise.hpp), so results are bitwise equal.
  float* const y_hand = scratch.get();
  auto run_handwritten = [&, px = x.get(), pb = b.get(), pc = c.get()] {
    const float a = chain6::a;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (std::int64_t i = 0; i < n; ++i) {
      const float t = px[i] * a + pb[i];
      const float gelu = (0.5f * t) * (1.0f + std::erf(t * 0.70710678118654752f));
      const float sigmoid = 1.0f / (1.0f + std::exp(-px[i]));
      y_hand[i] = (gelu - sigmoid) * pc[i];
    }
  };

#if FUSOR_BENCH_HAS_EIGEN
  Eigen::ThreadPool pool(threads);
  Eigen::ThreadPoolDevice device(&pool, threads);
  using map_in = Eigen::TensorMap<Eigen::Tensor<const float, 1, Eigen::RowMajor, std::int64_t>, Eigen::Aligned64>;
  using map_out = Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor, std::int64_t>, Eigen::Aligned64>;
  const map_in xm(x.get(), n), bm(b.get(), n), cm(c.get(), n);
  map_out ym(y_eigen.get(), n);
  auto run_eigen = [&] {
    const float a = chain6::a;
    const auto t = xm * a + bm;  // an expression: re-evaluated where used, never stored
    const auto gelu = (t * 0.5f) * ((t * 0.70710678118654752f).erf() + 1.0f);
    ym.device(device) = (gelu - xm.sigmoid()) * cm;
  };
#endif

  // --- the memory-bound chain, same inputs ---------------------------------
  const auto e_mem = chain6_mem::expression(xv, bv, cv, chain6_mem::a);
  static_assert(fusor::kernel_count<decltype(e_mem)> == 1, "chain6_mem should fuse into one kernel");
  static_assert(fusor::unfused_kernel_count<decltype(e_mem)> == chain6_mem::ops,
                "chain6_mem should be six unfused kernels");
  // Outputs: the same buffers as chain6 (checked one chain after the other;
  // timed runs only overwrite them).
  auto run_mem_fused = [&] { fusor::run(fusor::host_view(y_fused.get(), n), e_mem, fused_ex); };
  auto run_mem_unfused = [&] { fusor::run(fusor::host_view(y_unfused.get(), n), e_mem, unfused_ex); };
  auto run_mem_handwritten = [&, px = x.get(), pb = b.get(), pc = c.get()] {
    const float a = chain6_mem::a;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (std::int64_t i = 0; i < n; ++i) y_hand[i] = chain6_mem::scalar(px[i], pb[i], pc[i], a);
  };
#if FUSOR_BENCH_HAS_EIGEN
  auto run_mem_eigen = [&] {
    const float a = chain6_mem::a;
    ym.device(device) = ((xm * a + bm).cwiseMax(0.0f) * cm - xm).cwiseMax(bm);
  };
#endif

  // --- correctness, once, before any timing --------------------------------
  bool ok = true;
  // fused vs unfused and vs handwritten, bit for bit; Eigen within a tolerance.
  // Returns the kernel counts of the fused and the unfused run.
  auto check_chain = [&](const char* name, int ops, const auto& fused, const auto& unfused, const auto& handwritten,
                         [[maybe_unused]] const auto& eigen, double rtol, double atol) {
    const auto launched_fused = fused();
    const auto launched_unfused = unfused();
    {
      std::int64_t mismatches = 0, first = -1;
      for (std::int64_t i = 0; i < n; ++i)
        if (std::bit_cast<std::uint32_t>(y_fused[i]) != std::bit_cast<std::uint32_t>(y_unfused[i])) {
          if (first < 0) first = i;
          ++mismatches;
        }
      json check{{"name", name}, {"check", "fused_vs_unfused_bitwise"}, {"elements", n},
                 {"mismatches", mismatches}, {"kernels_fused", launched_fused}, {"kernels_unfused", launched_unfused}};
      if (first >= 0) check["first_mismatch"] = {{"index", first}, {"fused", y_fused[first]}, {"unfused", y_unfused[first]}};
      const bool pass = mismatches == 0 && launched_fused == 1 && launched_unfused == std::size_t(ops);
      check["pass"] = pass;
      ok = ok && pass;
      std::cout << check.dump() << std::endl;
    }
    handwritten();
    {
      // chain6's loop calls glibc's erff/expf, fusor SLEEF's (both within 1
      // ulp): bitwise only where both use the same math (chain6_mem).
      std::int64_t mismatches = 0, failures = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        mismatches += std::bit_cast<std::uint32_t>(y_fused[i]) != std::bit_cast<std::uint32_t>(y_hand[i]);
        const double d = std::fabs(double(y_hand[i]) - double(y_fused[i]));
        failures += !(d <= atol + rtol * std::fabs(double(y_fused[i])));
      }
      const bool bitwise = std::string(name) == chain6_mem::name;
      const bool pass = bitwise ? mismatches == 0 : failures == 0;
      std::cout << json{{"name", name}, {"check", bitwise ? "fused_vs_handwritten_bitwise" : "fused_vs_handwritten_tolerance"},
                        {"elements", n}, {"mismatches", mismatches}, {"failures", failures}, {"pass", pass}}
                       .dump()
                << std::endl;
      ok = ok && pass;
    }
#if FUSOR_BENCH_HAS_EIGEN
    eigen();
    {
      double max_abs = 0;
      std::int64_t failures = 0, worst = 0, bitwise = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        const double d = std::fabs(double(y_eigen[i]) - double(y_fused[i]));
        if (!(d <= atol + rtol * std::fabs(double(y_fused[i])))) ++failures;
        if (!(d <= max_abs)) {
          max_abs = d;
          worst = i;
        }
        bitwise += std::bit_cast<std::uint32_t>(y_fused[i]) != std::bit_cast<std::uint32_t>(y_eigen[i]);
      }
      json check{{"name", name}, {"check", "fused_vs_eigen_tolerance"}, {"elements", n}, {"rtol", rtol},
                 {"atol", atol}, {"max_abs_diff", max_abs}, {"worst_index", worst}, {"failures", failures},
                 {"bitwise_mismatches", bitwise}, {"pass", failures == 0}};
      ok = ok && failures == 0;
      std::cout << check.dump() << std::endl;
    }
#else
    std::cout << json{{"name", name}, {"variant", "eigen"}, {"backend", "host"},
                      {"skipped", "Eigen3 not found at configure time"}}.dump()
              << std::endl;
#endif
    return std::pair{launched_fused, launched_unfused};
  };
#if FUSOR_BENCH_HAS_EIGEN
  const auto& eigen_chain6 = run_eigen;
  const auto& eigen_mem = run_mem_eigen;
#else
  const auto eigen_chain6 = [] {}, eigen_mem = [] {};
#endif
  // chain6: |eigen - fused| <= atol + rtol * |fused|, with atol covering the
  // cancellation in gelu(t) - sigmoid(x): the terms are O(1) before scaling.
  const auto [launched_fused, launched_unfused] = check_chain(
      chain6::name, chain6::ops, [&] { return fusor::run(fusor::host_view(y_fused.get(), n), e, fused_ex).kernels; },
      [&] { return fusor::run(fusor::host_view(y_unfused.get(), n), e, unfused_ex).kernels; }, run_handwritten,
      eigen_chain6, 1e-5, 1e-5);
  // chain6_mem: exact ops, so Eigen is expected to match bit for bit up to the
  // sign of zero (bitwise_mismatches reports it); the tolerance only admits
  // FMA contraction, should Eigen be built for an ISA with FMA.
  const auto [launched_mem_fused, launched_mem_unfused] = check_chain(
      chain6_mem::name, chain6_mem::ops,
      [&] { return fusor::run(fusor::host_view(y_fused.get(), n), e_mem, fused_ex).kernels; },
      [&] { return fusor::run(fusor::host_view(y_unfused.get(), n), e_mem, unfused_ex).kernels; },
      run_mem_handwritten, eigen_mem, 1e-5, 1e-5);
  if (!ok) {
    std::cerr << "bench_elementwise: results disagree, no timings reported\n";
    return 1;
  }

  // --- timings --------------------------------------------------------------
  float* const dst = scratch.get();
  const float* const src1 = x.get();
  const float* const src2 = b.get();
  const float s = 3.0f;
  auto run_copy = [&] { fusor_bench::stream_copy(dst, src1, n); };
  auto run_triad = [&] { fusor_bench::stream_triad(dst, src1, src2, s, n); };

  const json load_before = load_average();
  std::vector<variant> variants{{"copy", run_copy},
                                {"triad", run_triad},
                                {"fused", run_fused},
                                {"unfused", run_unfused},
                                {"handwritten", run_handwritten},
                                {"mem_fused", run_mem_fused},
                                {"mem_unfused", run_mem_unfused},
                                {"mem_handwritten", run_mem_handwritten}};
#if FUSOR_BENCH_HAS_EIGEN
  variants.push_back({"eigen", run_eigen});
  variants.push_back({"mem_eigen", run_mem_eigen});
#endif
  time_interleaved(variants, repeats);
  const json load_after = load_average();
  const double t_copy = seconds_of(variants, "copy");
  const double t_triad = seconds_of(variants, "triad");
  const double triad_bw = chain6::triad_bytes_per_element * double(n) / t_triad;  // bytes per second

  auto report = [&](const char* name, const char* formula, const char* prefix, double fused_bpe, double unfused_bpe,
                    std::size_t kernels_fused, std::size_t kernels_unfused) {
    const auto t = [&](const char* v) { return seconds_of(variants, std::string(prefix) + v); };
    auto record = [&](const char* variant, double bytes_per_element, double seconds) {
      const double bytes = bytes_per_element * double(n);
      json j{{"name", name},
             {"variant", variant},
             {"backend", "host"},
             {"elements", n},
             {"bytes_moved", bytes},
             {"seconds", seconds},
             {"gb_per_s", bytes / seconds / 1e9},
             {"roofline_fraction", bytes / seconds / triad_bw},
             {"threads", threads},
             {"repeats", repeats}};
      if (std::string(variant) == "fused") j["kernels"] = kernels_fused;
      if (std::string(variant) == "unfused") j["kernels"] = kernels_unfused;
      std::cout << j.dump() << std::endl;
    };
    const double t_fused = t("fused"), t_unfused = t("unfused"), t_handwritten = t("handwritten");
    record("fused", fused_bpe, t_fused);
    record("unfused", unfused_bpe, t_unfused);
#if FUSOR_BENCH_HAS_EIGEN
    const double t_eigen = t("eigen");
    record("eigen", fused_bpe, t_eigen);
#endif
    record("handwritten", fused_bpe, t_handwritten);
    record("copy", chain6::copy_bytes_per_element, t_copy);
    record("triad", chain6::triad_bytes_per_element, t_triad);

    json summary{{"name", name},
                 {"summary", true},
                 {"backend", "host"},
                 {"formula", formula},
                 {"elements", n},
                 {"threads", threads},
                 {"triad_gb_per_s", triad_bw / 1e9},
                 {"fused_roofline_fraction", fused_bpe * double(n) / t_fused / triad_bw},
                 {"speedup_fused_vs_unfused", t_unfused / t_fused},
                 {"speedup_fused_vs_handwritten", t_handwritten / t_fused},
                 {"loadavg_1min_before", load_before},
                 {"loadavg_1min_after", load_after}};
#if FUSOR_BENCH_HAS_EIGEN
    summary["speedup_fused_vs_eigen"] = t_eigen / t_fused;
    summary["eigen_device"] = "Eigen::ThreadPoolDevice";
    summary["eigen_threads"] = threads;
#else
    summary["speedup_fused_vs_eigen"] = nullptr;
#endif
    std::cout << summary.dump() << std::endl;
  };
  report(chain6::name, chain6::formula, "", chain6::fused_bytes_per_element, chain6::unfused_bytes_per_element,
         launched_fused, launched_unfused);
  report(chain6_mem::name, chain6_mem::formula, "mem_", chain6_mem::fused_bytes_per_element,
         chain6_mem::unfused_bytes_per_element, launched_mem_fused, launched_mem_unfused);
  return 0;
}
