/// @file bench/reduction_bench.cpp
/// Host benchmark of fused reductions and normalizations at transformer
/// shapes: softmax, softmax written out, layer_norm (gamma, beta), layer_norm +
/// residual add, rms_norm (gamma), rms_norm written out, mse_loss (mean); see
/// bench/reduction_cases.hpp for the formulas and the byte model. Each case as
///   fused    fusor::run(..., fusor::host())     (kernels: 1; written-out
///            softmax 4, written-out rms_norm 2)
///   unfused  fusor::run(..., fusor::unfused())  one kernel per op, temporaries
///            allocated by the executor on every run
/// for rows in {4096, 16384, 65536} x cols in {768, 4096, 8192}, f32 and f16
/// (f16 operands and output; fusor computes in f32).
///
/// Roofline: "bytes" is the byte-count model (every operand read once, the
/// output written once; reduction_cases.hpp), gbps = bytes / seconds, and
/// roofline_fraction = gbps / the STREAM-triad bandwidth measured at startup
/// in this run (fusor_bench::measure_triad_bandwidth: 3 x 128 MiB arrays, best
/// of 5; 12 bytes per element). A fraction near 1 means the case runs at
/// memory speed with no extra traffic.
///
/// Timing: per case, the first fused and unfused runs are the warmup and the
/// check; then --repeats rounds each time both variants once
/// (std::chrono::steady_clock, interleaved so load bursts hit both); "seconds"
/// is the median, "seconds_min" the minimum.
///
/// Check (every case, every shape, before timing): fused vs unfused element
/// by element, |f - u| <= atol + rtol |u| (NaN only where both are NaN), with
/// f32: rtol 1e-5, atol 1e-6; f16: rtol 2^-10, atol 2^-24. The two evaluate
/// the same functors in the same order with f32 temporaries, so they are
/// expected to be equal bit for bit (bitwise_mismatches is reported), except
/// the written-out softmax / rms_norm, which the fused planner runs as the
/// fused op (another summation order); the
/// tolerance only admits a different accumulation order: f32 a few ulps after
/// an accurate row reduction, f16 one ulp (a last-bit f32 difference can flip
/// the f16 rounding); atol covers softmax values that underflow. Any failure
/// exits with status 1 (after printing the failing check line), and so does
/// a kernel count other than red::expected_host_kernels (fused 1, or 2 for a
/// split mse_loss; unfused one per op).
///
/// Memory: x, r and the fused and unfused outputs are allocated per shape
/// (4 R C elements) plus, per case, an upper bound on the unfused executor's
/// temporaries (reduction_cases.hpp); shapes or cases above --max-gib (default
/// 12, for a 24 GiB machine) print a "not_run" line instead.
///
/// Output: JSON lines: the measured bandwidth, then per shape, dtype and case
/// one "check" line and one line per variant:
///   {bench, op, rows, cols, dtype, variant, seconds, seconds_min, bytes, gbps,
///    roofline_fraction, kernels, threads, repeats[, speedup_vs_unfused]}
///
/// Usage: bench_reduction [--quick] [--repeats R] [--rows LIST] [--cols LIST]
///                        [--dtypes f32,f16] [--ops LIST] [--max-gib G]
#include "bench_common.hpp"
#include "reduction_cases.hpp"

#include <fusor/fusor.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

using fusor::index_t;
using fusor_bench::json;
namespace red = fusor_bench::reduction;

struct variant {
  const char* name;
  std::function<std::size_t()> run;  // returns the kernels launched
  double best = std::numeric_limits<double>::infinity();
  std::size_t kernels = 0;
  std::vector<double> samples{};
};

struct options {
  bool quick = false;
  int repeats = 5;
  std::vector<index_t> rows{4096, 16384, 65536};
  std::vector<index_t> cols{768, 4096, 8192};
  std::vector<std::string> dtypes{"f32", "f16"};
  std::vector<red::op_id> ops{red::all_ops.begin(), red::all_ops.end()};
  double max_gib = 12;
};

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--quick] [--repeats R] [--rows LIST] [--cols LIST] [--dtypes LIST] [--ops LIST] "
               "[--max-gib G]\n"
               "  --quick       rows 5,128 x cols 768,1031, one repeat: checks fused == unfused (a smoke test)\n"
               "  --repeats R   timed rounds after the warmup/check run; the median is reported (default 5)\n"
               "  --rows LIST   comma-separated (default 4096,16384,65536)\n"
               "  --cols LIST   comma-separated (default 768,4096,8192)\n"
               "  --dtypes LIST f32,f16 (default both)\n"
               "  --ops LIST    of softmax, softmax_decomposed, layer_norm, layer_norm_residual, rms_norm,\n"
               "                rms_norm_decomposed, mse_loss (default all)\n"
               "  --max-gib G   skip shapes/cases whose buffers could exceed G GiB (default 12)\n"
               "threads: OMP_NUM_THREADS\n",
               argv0);
  std::exit(status);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

options parse(int argc, char** argv) {
  options o;
  bool rows_set = false, cols_set = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage(argv[0], 0);
    if (arg == "--quick") {
      o.quick = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: unknown or incomplete option '%s'\n", argv[0], arg.c_str());
      usage(argv[0], 2);
    }
    const std::string val = argv[++i];
    auto ints = [&] {
      std::vector<index_t> v;
      for (const auto& s : split(val)) {
        const long long n = fusor_bench::parse_positive(s.c_str());
        if (n <= 0) usage(argv[0], 2);
        v.push_back(index_t(n));
      }
      if (v.empty()) usage(argv[0], 2);
      return v;
    };
    if (arg == "--repeats") {
      const long long n = fusor_bench::parse_positive(val.c_str());
      if (n <= 0) usage(argv[0], 2);
      o.repeats = int(std::min<long long>(n, 100000));
    } else if (arg == "--rows") {
      o.rows = ints();
      rows_set = true;
    } else if (arg == "--cols") {
      o.cols = ints();
      cols_set = true;
    } else if (arg == "--dtypes") {
      o.dtypes = split(val);
      for (const auto& d : o.dtypes)
        if (d != "f32" && d != "f16") usage(argv[0], 2);
    } else if (arg == "--ops") {
      o.ops.clear();
      for (const auto& s : split(val)) {
        const auto it = std::find_if(red::all_ops.begin(), red::all_ops.end(), [&](red::op_id op) { return s == red::name(op); });
        if (it == red::all_ops.end()) usage(argv[0], 2);
        o.ops.push_back(*it);
      }
    } else if (arg == "--max-gib") {
      char* end = nullptr;
      o.max_gib = std::strtod(val.c_str(), &end);
      if (end == val.c_str() || *end != '\0' || !(o.max_gib > 0)) usage(argv[0], 2);
    } else {
      std::fprintf(stderr, "%s: unknown option '%s'\n", argv[0], arg.c_str());
      usage(argv[0], 2);
    }
  }
  if (o.quick) {
    if (!rows_set) o.rows = {5, 128};
    if (!cols_set) o.cols = {768, 1031};
    o.repeats = 1;
  }
  return o;
}

template <class T>
float to_float(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else return v;
}
template <class T>
T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else return v;
}

/// The tolerance of the fused-vs-unfused check (see the file comment).
template <class T>
constexpr double rtol = std::is_same_v<T, __half> ? 0x1p-10 : 1e-5;
template <class T>
constexpr double atol = std::is_same_v<T, __half> ? 0x1p-24 : 1e-6;

/// One shape and dtype: allocates and fills the operands, then checks and
/// times every case. Returns false when a check failed.
template <class T>
bool bench_shape(const options& o, const char* dtype, index_t rows, index_t cols, double triad_bw, int threads) {
  const std::int64_t n = std::int64_t(rows) * cols;
  const double array_gib = double(n) * sizeof(T) / double(1 << 30);
  const json where{{"bench", "reduction"}, {"rows", rows}, {"cols", cols}, {"dtype", dtype}};
  if (4 * array_gib > o.max_gib) {
    json j = where;
    j["not_run"] = "x, r and two outputs need " + std::to_string(4 * array_gib) + " GiB > --max-gib";
    std::cout << j.dump() << std::endl;
    return true;
  }
  auto x = fusor_bench::allocate<T>(n), r = fusor_bench::allocate<T>(n);
  auto yf = fusor_bench::allocate<T>(n), yu = fusor_bench::allocate<T>(n);
  auto g = fusor_bench::allocate<T>(cols), b = fusor_bench::allocate<T>(cols);
  T *px = x.get(), *pr = r.get(), *pf = yf.get(), *pu = yu.get();
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::int64_t i = 0; i < n; ++i) {  // first touch by the threads that use the data
    px[i] = from_float<T>(red::input_at(0, std::uint64_t(i), cols));
    pr[i] = from_float<T>(red::input_at(1, std::uint64_t(i), cols));
    pf[i] = pu[i] = from_float<T>(0.0f);
  }
  for (index_t j = 0; j < cols; ++j) {
    g[j] = from_float<T>(red::input_at(2, std::uint64_t(j), cols));
    b[j] = from_float<T>(red::input_at(3, std::uint64_t(j), cols));
  }
  const red::operands<T> in{px, pr, g.get(), b.get(), rows, cols};
  const auto fused_ex = fusor::host();
  const auto unfused_ex = fusor::unfused();
  bool ok = true;

  for (const red::op_id op : o.ops) {
    json base = where;
    base["op"] = red::name(op);
    const int temps = red::unfused_temporaries_bound(op);
    if ((4 + temps) * array_gib > o.max_gib) {
      json j = base;
      j["not_run"] = "with up to " + std::to_string(temps) + " unfused temporaries it could need " +
                     std::to_string((4 + temps) * array_gib) + " GiB > --max-gib";
      std::cout << j.dump() << std::endl;
      continue;
    }
    std::vector<variant> vs{{"fused", [&] { return red::run_case<fusor::host_space>(op, in, pf, fused_ex); }},
                            {"unfused", [&] { return red::run_case<fusor::host_space>(op, in, pu, unfused_ex); }}};
    // warmup + check
    for (auto& v : vs) v.kernels = v.run();
    const std::int64_t m = red::scalar_output(op) ? 1 : n;
    std::int64_t failures = 0, bitwise = 0, first = -1;
    double max_abs = 0;
    for (std::int64_t i = 0; i < m; ++i) {
      const double f = to_float(pf[i]), u = to_float(pu[i]);
      bitwise += std::memcmp(&pf[i], &pu[i], sizeof(T)) != 0;
      const bool same = (std::isnan(f) && std::isnan(u)) || std::fabs(f - u) <= atol<T> + rtol<T> * std::fabs(u);
      if (!same && first < 0) first = i;
      failures += !same;
      if (std::isfinite(f) && std::isfinite(u)) max_abs = std::max(max_abs, std::fabs(f - u));
    }
    json check = base;
    check["check"] = "fused_vs_unfused";
    check["elements"] = m;
    check["rtol"] = rtol<T>;
    check["atol"] = atol<T>;
    check["max_abs_diff"] = max_abs;
    check["failures"] = failures;
    check["bitwise_mismatches"] = bitwise;
    check["kernels_fused"] = vs[0].kernels;
    check["kernels_unfused"] = vs[1].kernels;
    if (first >= 0) check["first_failure"] = {{"index", first}, {"fused", to_float(pf[first])}, {"unfused", to_float(pu[first])}};
    const std::size_t want_fused = red::expected_host_kernels(op, true, rows, cols),
                      want_unfused = red::expected_host_kernels(op, false, rows, cols);
    const bool kernels_ok = vs[0].kernels == want_fused && vs[1].kernels == want_unfused;
    if (!kernels_ok) check["kernels_expected"] = {want_fused, want_unfused};
    check["pass"] = failures == 0 && kernels_ok;
    std::cout << check.dump() << std::endl;
    if (failures != 0 || !kernels_ok) {
      ok = false;
      continue;
    }

    fusor_bench::time_interleaved(vs, o.repeats, /*warmup=*/false);
    const double bytes = red::min_bytes(op, rows, cols, double(sizeof(T)));
    const double t_unfused = fusor_bench::median(vs[1].samples);
    for (const auto& v : vs) {
      const double t = fusor_bench::median(v.samples);
      json j = base;
      j["variant"] = v.name;
      j["seconds"] = t;
      j["seconds_min"] = v.best;
      j["bytes"] = bytes;
      j["gbps"] = bytes / t / 1e9;
      j["roofline_fraction"] = bytes / t / triad_bw;
      j["kernels"] = v.kernels;
      j["threads"] = threads;
      j["repeats"] = o.repeats;
      if (v.name == std::string("fused")) j["speedup_vs_unfused"] = t_unfused / t;
      std::cout << j.dump() << std::endl;
    }
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) try {
  const options o = parse(argc, argv);
  const int threads = fusor_bench::max_threads();
  // quick: 3 x 16 MiB arrays (only the smoke test's run time matters)
  const std::int64_t triad_n = o.quick ? std::int64_t(1) << 22 : std::int64_t(1) << 25;
  const double triad_bw = fusor_bench::measure_triad_bandwidth(triad_n);
  std::cout << json{{"bench", "reduction"},
                    {"name", "host_bandwidth"},
                    {"gbps", triad_bw / 1e9},
                    {"method", "STREAM triad a[i] = b[i] + s * c[i], OpenMP, 3 arrays of " + std::to_string(triad_n) +
                                   " floats, 12 bytes per element, best of 5"},
                    {"threads", threads},
                    {"loadavg_1min", fusor_bench::load_average()}}
                   .dump()
            << std::endl;
  bool ok = true;
  for (const auto& dtype : o.dtypes)
    for (const index_t rows : o.rows)
      for (const index_t cols : o.cols)
        ok = (dtype == "f32" ? bench_shape<float>(o, "f32", rows, cols, triad_bw, threads)
                             : bench_shape<__half>(o, "f16", rows, cols, triad_bw, threads)) &&
             ok;
  std::cout << json{{"bench", "reduction"}, {"name", "done"}, {"loadavg_1min", fusor_bench::load_average()}, {"pass", ok}}.dump()
            << std::endl;
  if (!ok) {
    std::cerr << "bench_reduction: fused and unfused disagree (see the check lines)\n";
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_reduction: " << e.what() << "\n";
  return 1;
}
