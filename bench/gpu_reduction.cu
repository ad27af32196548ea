/// @file bench/gpu_reduction.cu
/// CUDA benchmark of fused reductions and normalizations at transformer
/// shapes: the cases of bench/reduction_cases.hpp (softmax, softmax written
/// out, layer_norm, layer_norm + residual, rms_norm, rms_norm written out,
/// mse_loss), each as
///   fused    fusor::run(..., fusor::cuda(stream))
///   unfused  fusor::run(..., fusor::unfused(fusor::cuda(stream))): one kernel
///            per op, temporaries from cudaMallocAsync (the default pool keeps
///            its memory between runs: release threshold UINT64_MAX)
/// for rows in {4096, 16384, 65536} x cols in {768, 4096, 8192}, f32 and f16.
///
/// Roofline: "bytes" is the byte-count model of reduction_cases.hpp (every
/// operand read once, the output written once); gbps = bytes / seconds;
/// roofline_fraction = gbps / the device-to-device cudaMemcpyAsync bandwidth
/// measured at startup in this run (1 GiB, read + write counted, as NVIDIA's
/// bandwidthTest; the best of --repeats batches); nominal_fraction = gbps /
/// the datasheet bandwidth (H200: 4.8 TB/s; other devices: 2 x memory clock x
/// bus width from cudaDeviceGetAttribute, null when unknown).
///
/// Timing: cudaEvents around batches of 4 back-to-back runs on one stream
/// (gpu_common.cuh: fusor_bench::batch_seconds), after one warmup run;
/// "seconds" is the median over the timed batches, "seconds_min" the
/// minimum, "repeats" their number: --repeats (default 10), fewer for a
/// variant whose first run was slow (about 0.5 s of timed runs at most: a
/// full reduction such as mse_loss runs as one row, one thread block). Cases
/// reached after --budget-s seconds (default 75; bench/gpu_suite.sh passes
/// its own, below the step's timeout) print a "not_run" line instead.
///
/// Checks, before any timing; a failure exits with status 1:
///  1. on small shapes (5 x 768, 128 x 1031, 64 x 8192), every case and dtype:
///     the device's fused result vs a float64 reference computed on the host
///     from the same inputs (copied back from the device; the formulas written
///     out here, independent of fusor's kernels), |d - ref| <= atol + rtol |ref|,
///     f32: rtol 1e-4, atol 2e-6; f16: rtol 2^-9, atol 2e-6. f32: CUDA's expf
///     / sqrtf and fp32 row sums are a few ulps off (rtol ~ 800 ulps leaves
///     margin for the 8192-term sums); atol is ~4 ulps of the largest terms of
///     a layer_norm output (|x - mean| rstd g + |b| <= ~6.5) where the output
///     cancels to near 0. f16: the output's rounding (half an ulp, 2^-11
///     relative) plus the f32 error, which may cross a rounding boundary: one
///     ulp, 2^-10 relative at a binade's bottom, doubled; atol as f32 (the
///     f16 subnormal spacing 6e-8 is below it).
///  2. every timed shape: fused vs unfused on the device (a compare kernel),
///     tolerance as bench/reduction_bench.cpp (f32: rtol 1e-5, atol 1e-6;
///     f16: rtol 2^-10, atol 2^-24; expected bitwise equal, reported).
///
/// Memory: inputs are generated on the device (the hash of bench_common.hpp);
/// x, r and the fused and unfused outputs are allocated once at the largest
/// shape; cases whose unfused temporaries could exceed --max-gib (default 64)
/// print a "not_run" line (none at the default shapes).
///
/// Output: JSON lines: the bandwidths, the checks, then per shape, dtype and
/// case one line per variant:
///   {bench, op, rows, cols, dtype, variant, seconds, seconds_min, bytes, gbps,
///    roofline_fraction, nominal_fraction, kernels, device, repeats
///    [, speedup_vs_unfused]}
/// Without a CUDA device it prints one "skipped" line and exits 77.
///
/// Every timed line has a `case` id, reduction/DTYPE/OP/ROWSxCOLS; --only
/// selects cases by substring, --skip-reference-check skips check 1 (so that
/// a profiler's first fused kernel is the selected case's).
///
/// Usage: bench_gpu_reduction [--quick] [--repeats R] [--max-gib G] [--budget-s S]
///                            [--only LIST] [--skip-reference-check]
///   --quick   rows 1024 x cols 768, 4096 only, 3 repeats
#include "gpu_common.cuh"
#include "reduction_cases.hpp"

#include <fusor/fusor.hpp>

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cuda/std/bit>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using fusor::index_t;
using fusor_bench::check;
using fusor_bench::json;
namespace red = fusor_bench::reduction;

__host__ __device__ inline float to_f(float v) { return v; }
__host__ __device__ inline float to_f(__half v) { return __half2float(v); }
template <class T>
__host__ __device__ inline T from_f(float v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else return v;
}
/// The bits of v (for bitwise comparison).
__host__ __device__ inline unsigned bits(float v) { return cuda::std::bit_cast<unsigned>(v); }
__host__ __device__ inline unsigned bits(__half v) { return cuda::std::bit_cast<unsigned short>(v); }

/// Fills p[0, n) with red::input_at(which, i, cols).
template <class T>
__global__ void fill(T* p, std::int64_t n, int which, index_t cols) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    p[i] = from_f<T>(red::input_at(which, std::uint64_t(i), cols));
}

/// counts[0] += elements outside |a - b| <= atol + rtol |b| (NaN only where
/// both are NaN), counts[1] += bitwise differences; *max_abs_bits = max of
/// the finite |a - b| (as float bits: ordered like the values, all >= 0).
template <class T>
__global__ void compare(const T* a, const T* b, std::int64_t n, float rtol, float atol, unsigned long long* counts,
                        unsigned* max_abs_bits) {
  unsigned long long fail = 0, diff = 0;
  float worst = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    const float x = to_f(a[i]), y = to_f(b[i]);
    diff += bits(a[i]) != bits(b[i]);
    const float d = fabsf(x - y);
    const bool same = (isnan(x) && isnan(y)) || d <= atol + rtol * fabsf(y);
    fail += !same;
    if (isfinite(d)) worst = fmaxf(worst, d);
  }
  if (fail) atomicAdd(&counts[0], fail);
  if (diff) atomicAdd(&counts[1], diff);
  if (worst > 0) atomicMax(max_abs_bits, __float_as_uint(worst));
}

constexpr unsigned grid_for(std::int64_t n) {
  const std::int64_t blocks = (n + 255) / 256;
  return unsigned(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

struct options {
  bool quick = false;
  int repeats = 10;
  double max_gib = 64;
  double budget_s = 75;
  fusor_bench::case_selection sel;  // --only (its budget_s is unused: budget_s above)
  bool reference_check = true;      // --skip-reference-check: off (for profiling one case)
};

/// Seconds of wall-clock time since the program started (for --budget-s).
double elapsed_s() {
  static const auto start = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Timed batches for a variant whose first run took `first_s`: --repeats,
/// but at most about 0.5 s of timed runs (at least 1 batch). Full reductions
/// (mse_loss) run as one row, i.e. one thread block, and can take a second
/// per run at the largest shapes.
int repeats_for(const options& o, double first_s) {
  const double per_batch = fusor_bench::batch * std::max(first_s, 1e-9);
  return std::clamp(int(0.5 / per_batch), 1, o.repeats);
}

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--quick] [--repeats R] [--max-gib G] [--budget-s S] [--only LIST] [--skip-reference-check]\n"
               "  --quick      rows 1024 x cols 768,4096, 3 repeats\n"
               "  --repeats R  timed batches of 4 back-to-back runs per variant, after one warmup;\n"
               "               the median per run is reported (default 10)\n"
               "  --max-gib G  skip cases whose buffers could exceed G GiB of device memory (default 64)\n"
               "  --budget-s S stop timing new cases after S seconds (default 75; the rest print not_run)\n"
               "  --only LIST  time only the cases whose id (reduction/DTYPE/OP/ROWSxCOLS) contains one of\n"
               "               these comma-separated substrings\n"
               "  --skip-reference-check  skip check 1 (small shapes vs float64): for a profiler run of one\n"
               "               case whose first fused kernel must be the timed case's\n",
               argv0);
  std::exit(status);
}

struct context {
  cudaStream_t stream;
  options opt;
  double copy_bw;     // measured, bytes/s
  double nominal_bw;  // bytes/s, 0 if unknown
  std::string device;
  void* x;  // device buffers of the largest shape (bytes: 4 per element)
  void* r;
  void* yf;
  void* yu;
  void* g;
  void* b;
  unsigned long long* counts;  // device: [2]
  unsigned* max_abs;           // device: [1]
};

/// Fills the operands of a rows x cols shape on the device.
template <class T>
red::operands<T> make_inputs(const context& cx, index_t rows, index_t cols) {
  const std::int64_t n = std::int64_t(rows) * cols;
  T *x = static_cast<T*>(cx.x), *r = static_cast<T*>(cx.r), *g = static_cast<T*>(cx.g), *b = static_cast<T*>(cx.b);
  fill<T><<<grid_for(n), 256, 0, cx.stream>>>(x, n, 0, cols);
  fill<T><<<grid_for(n), 256, 0, cx.stream>>>(r, n, 1, cols);
  fill<T><<<grid_for(cols), 256, 0, cx.stream>>>(g, cols, 2, cols);
  fill<T><<<grid_for(cols), 256, 0, cx.stream>>>(b, cols, 3, cols);
  check(cudaGetLastError(), "fill");
  return {x, r, g, b, rows, cols};
}

template <class T>
std::vector<T> download(const void* p, std::int64_t n, cudaStream_t stream) {
  std::vector<T> h(std::size_t(n > 0 ? n : 1));
  check(cudaStreamSynchronize(stream), "sync");
  check(cudaMemcpy(h.data(), p, std::size_t(n) * sizeof(T), cudaMemcpyDeviceToHost), "download");
  return h;
}

/// The float64 reference of case `op` on host copies of the operands (the
/// formulas of reduction_cases.hpp, written out here independently of fusor):
/// rows * cols values, or one for mse_loss.
template <class T>
std::vector<double> reference(red::op_id op, const std::vector<T>& x, const std::vector<T>& r, const std::vector<T>& g,
                              const std::vector<T>& b, index_t rows, index_t cols) {
  const double eps = double(1e-5f);  // fusor's default eps and the written-out rms_norm's, as float
  const auto at = [](const std::vector<T>& v, std::int64_t i) { return double(to_f(v[std::size_t(i)])); };
  if (op == red::op_id::mse_loss) {
    double s = 0;
    for (std::int64_t i = 0; i < std::int64_t(rows) * cols; ++i) s += (at(x, i) - at(r, i)) * (at(x, i) - at(r, i));
    return {s / (double(rows) * double(cols))};
  }
  std::vector<double> y(std::size_t(rows * cols));
  for (index_t i = 0; i < rows; ++i) {
    const std::int64_t o = std::int64_t(i) * cols;
    double m = -std::numeric_limits<double>::infinity(), mean = 0, sq = 0;
    for (index_t j = 0; j < cols; ++j) {
      m = std::max(m, at(x, o + j));
      mean += at(x, o + j);
      sq += at(x, o + j) * at(x, o + j);
    }
    mean /= double(cols);
    double var = 0, se = 0;
    for (index_t j = 0; j < cols; ++j) {
      var += (at(x, o + j) - mean) * (at(x, o + j) - mean);
      se += std::exp(at(x, o + j) - m);
    }
    var /= double(cols);
    for (index_t j = 0; j < cols; ++j) {
      const double v = at(x, o + j);
      double out = 0;
      switch (op) {
        case red::op_id::softmax:
        case red::op_id::softmax_decomposed: out = std::exp(v - m) / se; break;
        case red::op_id::layer_norm: out = (v - mean) / std::sqrt(var + eps) * at(g, j) + at(b, j); break;
        case red::op_id::layer_norm_residual:
          out = (v - mean) / std::sqrt(var + eps) * at(g, j) + at(b, j) + at(r, o + j);
          break;
        case red::op_id::rms_norm:
        case red::op_id::rms_norm_decomposed: out = v / std::sqrt(sq / double(cols) + eps) * at(g, j); break;
        case red::op_id::mse_loss: break;
      }
      y[std::size_t(o + j)] = out;
    }
  }
  return y;
}

/// Check 1 (see the file comment): the device's fused results vs a float64
/// reference on small shapes. Returns false on a failure.
template <class T>
bool check_vs_reference(const context& cx, const char* dtype) {
  constexpr double rtol = std::is_same_v<T, __half> ? 0x1p-9 : 1e-4;
  constexpr double atol = 2e-6;
  const auto ex = fusor::cuda(cx.stream);
  bool ok = true;
  constexpr std::pair<index_t, index_t> shapes[] = {{5, 768}, {128, 1031}, {64, 8192}};
  for (const auto& [rows, cols] : shapes) {
    const std::int64_t n = std::int64_t(rows) * cols;
    const auto in = make_inputs<T>(cx, rows, cols);
    const auto hx = download<T>(in.x, n, cx.stream), hr = download<T>(in.r, n, cx.stream);
    const auto hg = download<T>(in.g, cols, cx.stream), hb = download<T>(in.b, cols, cx.stream);
    for (const red::op_id op : red::all_ops) {
      const std::size_t kernels = red::run_case<fusor::device_space>(op, in, static_cast<T*>(cx.yf), ex);
      const auto ref = reference(op, hx, hr, hg, hb, rows, cols);
      const std::int64_t m = red::scalar_output(op) ? 1 : n;
      const auto dev = download<T>(cx.yf, m, cx.stream);
      std::int64_t failures = 0;
      double max_abs = 0;
      for (std::int64_t i = 0; i < m; ++i) {
        const double d = to_f(dev[std::size_t(i)]), h = ref[std::size_t(i)];
        const double err = std::fabs(d - h);
        failures += !(err <= atol + rtol * std::fabs(h));  // NaN fails: the inputs give finite results
        if (std::isfinite(err)) max_abs = std::max(max_abs, err);
      }
      const bool pass = failures == 0;
      ok = ok && pass;
      std::cout << json{{"bench", "reduction"}, {"op", red::name(op)}, {"rows", rows}, {"cols", cols}, {"dtype", dtype},
                        {"check", "cuda_fused_vs_f64_reference"}, {"backend", "cuda"}, {"elements", m}, {"rtol", rtol},
                        {"atol", atol}, {"max_abs_diff", max_abs}, {"failures", failures},
                        {"kernels_fused", kernels}, {"pass", pass}}
                       .dump()
                << std::endl;
    }
  }
  return ok;
}

/// One timed shape and dtype: check 2, then timings. False on a failure.
template <class T>
bool bench_shape(const context& cx, const char* dtype, index_t rows, index_t cols) {
  const auto case_id = [&](red::op_id op) {
    return std::string("reduction/") + dtype + "/" + red::name(op) + "/" + std::to_string(rows) + "x" + std::to_string(cols);
  };
  // with --only, a shape none of whose cases is selected costs nothing (no input fill)
  if (std::none_of(std::begin(red::all_ops), std::end(red::all_ops),
                   [&](red::op_id op) { return cx.opt.sel.selected(case_id(op)); }))
    return true;
  constexpr float rtol = std::is_same_v<T, __half> ? 0x1p-10f : 1e-5f;
  constexpr float atol = std::is_same_v<T, __half> ? 0x1p-24f : 1e-6f;
  const std::int64_t n = std::int64_t(rows) * cols;
  const double array_gib = double(n) * sizeof(T) / double(1 << 30);
  const auto in = make_inputs<T>(cx, rows, cols);
  T* const yf = static_cast<T*>(cx.yf);
  T* const yu = static_cast<T*>(cx.yu);
  const auto fused_ex = fusor::cuda(cx.stream);
  const auto unfused_ex = fusor::unfused(fusor::cuda(cx.stream));
  bool ok = true;
  for (const red::op_id op : red::all_ops) {
    const std::string id = case_id(op);
    if (!cx.opt.sel.selected(id)) continue;
    const json base{{"bench", "reduction"}, {"case", id}, {"op", red::name(op)}, {"rows", rows}, {"cols", cols}, {"dtype", dtype}};
    const int temps = red::unfused_temporaries_bound(op);
    if ((4 + temps) * array_gib > cx.opt.max_gib) {
      json j = base;
      j["not_run"] = "with up to " + std::to_string(temps) + " unfused temporaries it could need " +
                     std::to_string((4 + temps) * array_gib) + " GiB > --max-gib";
      std::cout << j.dump() << std::endl;
      continue;
    }
    if (elapsed_s() > cx.opt.budget_s) {
      json j = base;
      j["not_run"] = "time budget (--budget-s " + std::to_string(cx.opt.budget_s) + ") spent";
      std::cout << j.dump() << std::endl;
      continue;
    }
    check(cudaStreamSynchronize(cx.stream), "inputs");
    auto t0 = std::chrono::steady_clock::now();
    const std::size_t k_fused = red::run_case<fusor::device_space>(op, in, yf, fused_ex);
    check(cudaStreamSynchronize(cx.stream), "fused run");
    const double first_fused = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t0 = std::chrono::steady_clock::now();
    const std::size_t k_unfused = red::run_case<fusor::device_space>(op, in, yu, unfused_ex);
    check(cudaStreamSynchronize(cx.stream), "unfused run");
    const double first_unfused = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::int64_t m = red::scalar_output(op) ? 1 : n;
    check(cudaMemsetAsync(cx.counts, 0, 2 * sizeof(unsigned long long), cx.stream), "memset");
    check(cudaMemsetAsync(cx.max_abs, 0, sizeof(unsigned), cx.stream), "memset");
    compare<T><<<grid_for(m), 256, 0, cx.stream>>>(yf, yu, m, rtol, atol, cx.counts, cx.max_abs);
    check(cudaGetLastError(), "compare");
    unsigned long long counts[2] = {0, 0};
    unsigned max_bits = 0;
    check(cudaStreamSynchronize(cx.stream), "check runs");
    check(cudaMemcpy(counts, cx.counts, sizeof counts, cudaMemcpyDeviceToHost), "download counts");
    check(cudaMemcpy(&max_bits, cx.max_abs, sizeof max_bits, cudaMemcpyDeviceToHost), "download max");
    float max_abs = 0;
    std::memcpy(&max_abs, &max_bits, sizeof max_abs);
    const bool pass = counts[0] == 0;
    json c = base;
    c["check"] = "cuda_fused_vs_unfused";
    c["backend"] = "cuda";
    c["elements"] = m;
    c["rtol"] = rtol;
    c["atol"] = atol;
    c["max_abs_diff"] = max_abs;
    c["failures"] = counts[0];
    c["bitwise_mismatches"] = counts[1];
    c["kernels_fused"] = k_fused;
    c["kernels_unfused"] = k_unfused;
    c["pass"] = pass;
    std::cout << c.dump() << std::endl;
    if (!pass) {
      ok = false;
      continue;
    }
    const auto sf = fusor_bench::batch_seconds(cx.stream, repeats_for(cx.opt, first_fused),
                                               [&] { red::run_case<fusor::device_space>(op, in, yf, fused_ex); });
    const auto su = fusor_bench::batch_seconds(cx.stream, repeats_for(cx.opt, first_unfused),
                                               [&] { red::run_case<fusor::device_space>(op, in, yu, unfused_ex); });
    const double bytes = red::min_bytes(op, rows, cols, double(sizeof(T)));
    const double t_unfused = fusor_bench::median(su);
    for (const auto& [variant, samples, kernels] :
         {std::tuple{"fused", &sf, k_fused}, std::tuple{"unfused", &su, k_unfused}}) {
      const double t = fusor_bench::median(*samples);
      json j = base;
      j["variant"] = variant;
      j["backend"] = "cuda";
      j["seconds"] = t;
      j["seconds_min"] = *std::min_element(samples->begin(), samples->end());
      j["bytes"] = bytes;
      j["gbps"] = bytes / t / 1e9;
      j["roofline_fraction"] = bytes / t / cx.copy_bw;
      j["nominal_fraction"] = cx.nominal_bw > 0 ? json(bytes / t / cx.nominal_bw) : json(nullptr);
      j["kernels"] = kernels;
      j["device"] = cx.device;
      j["repeats"] = samples->size();
      j["runs_per_timed_batch"] = fusor_bench::batch;
      if (std::string(variant) == "fused") j["speedup_vs_unfused"] = t_unfused / t;
      std::cout << j.dump() << std::endl;
    }
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) try {
  (void)elapsed_s();  // starts the clock
  options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage(argv[0], 0);
    if (arg == "--quick") {
      opt.quick = true;
    } else if (arg == "--repeats" && i + 1 < argc) {
      const long long v = fusor_bench::parse_positive(argv[++i]);
      if (v <= 0) usage(argv[0], 2);
      opt.repeats = int(std::min<long long>(v, 100000));
    } else if (arg == "--budget-s" && i + 1 < argc) {
      char* end = nullptr;
      opt.budget_s = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(opt.budget_s > 0)) usage(argv[0], 2);
    } else if (arg == "--skip-reference-check") {
      opt.reference_check = false;
    } else if (opt.sel.parse(argc, argv, i)) {
    } else if (arg == "--max-gib" && i + 1 < argc) {
      char* end = nullptr;
      opt.max_gib = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(opt.max_gib > 0)) usage(argv[0], 2);
    } else {
      std::fprintf(stderr, "%s: unknown or incomplete option '%s'\n", argv[0], arg.c_str());
      usage(argv[0], 2);
    }
  }
  if (opt.quick) opt.repeats = std::min(opt.repeats, 3);
  if (fusor_bench::skip_without_device("reduction")) return fusor_bench::exit_skipped;

  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  const auto [attr_bw, attr_source] = fusor_bench::peak_bandwidth(device, prop);
  const double datasheet_bw = fusor_bench::nominal_bandwidth(prop);
  fusor_bench::keep_pool_memory(device);  // the unfused executor's temporaries

  const std::vector<index_t> rows_list = opt.quick ? std::vector<index_t>{1024} : std::vector<index_t>{4096, 16384, 65536};
  const std::vector<index_t> cols_list = opt.quick ? std::vector<index_t>{768, 4096} : std::vector<index_t>{768, 4096, 8192};
  const std::int64_t max_n = std::int64_t(*std::max_element(rows_list.begin(), rows_list.end())) *
                             *std::max_element(cols_list.begin(), cols_list.end());
  const index_t max_cols = std::max<index_t>(8192, *std::max_element(cols_list.begin(), cols_list.end()));
  const std::size_t big = std::size_t(std::max<std::int64_t>(max_n, 128 * 1031)) * sizeof(float);
  fusor_bench::device_buffer<unsigned char> x(big), r(big), yf(big), yu(big);
  fusor_bench::device_buffer<float> g(static_cast<std::size_t>(max_cols)), b(static_cast<std::size_t>(max_cols));
  fusor_bench::device_buffer<unsigned long long> counts(2);
  fusor_bench::device_buffer<unsigned> max_abs(1);

  cudaStream_t stream{};
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  // Measured roofline: device-to-device copy of 1 GiB (or the buffers' size).
  const std::size_t copy_bytes = std::min<std::size_t>(big, std::size_t(1) << 30);
  check(cudaMemsetAsync(x.p, 0, copy_bytes, stream), "memset");
  const auto copy_samples = fusor_bench::batch_seconds(stream, opt.repeats, [&] {
    check(cudaMemcpyAsync(yf.p, x.p, copy_bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  });
  const double t_copy = *std::min_element(copy_samples.begin(), copy_samples.end());
  const double copy_bw = 2.0 * double(copy_bytes) / t_copy;
  const double nominal_bw = datasheet_bw > 0 ? datasheet_bw : attr_bw;
  std::cout << json{{"bench", "reduction"},
                    {"name", "device_bandwidth"},
                    {"backend", "cuda"},
                    {"device", prop.name},
                    {"sm_count", prop.multiProcessorCount},
                    {"copy_gbps", copy_bw / 1e9},
                    {"copy_method", "cudaMemcpyAsync device-to-device, " + std::to_string(copy_bytes) +
                                        " bytes, read + write counted, best of " + std::to_string(opt.repeats) +
                                        " batches of 4"},
                    {"nominal_gbps", nominal_bw > 0 ? json(nominal_bw / 1e9) : json(nullptr)},
                    {"nominal_source", datasheet_bw > 0 ? std::string("datasheet (H200: 4.8 TB/s HBM3e)") : attr_source},
                    {"attribute_gbps", attr_bw > 0 ? json(attr_bw / 1e9) : json(nullptr)},
                    {"attribute_source", attr_source}}
                   .dump()
            << std::endl;

  const context cx{stream, opt, copy_bw, nominal_bw, prop.name, x.p, r.p, yf.p, yu.p, g.p, b.p, counts.p, max_abs.p};
  bool ok = true;
  if (opt.reference_check) {
    ok = check_vs_reference<float>(cx, "f32");
    ok = check_vs_reference<__half>(cx, "f16") && ok;
  } else {
    std::cout << json{{"bench", "reduction"}, {"check", "reference"}, {"not_run", "--skip-reference-check"}}.dump() << std::endl;
  }
  if (!ok) {
    std::cerr << "bench_gpu_reduction: device results disagree with the float64 reference, no timings reported\n";
    return 1;
  }
  // smallest shapes first, both dtypes each: should --budget-s run out, the
  // largest shapes are the ones left out
  for (const index_t rows : rows_list)
    for (const index_t cols : cols_list)
      for (const char* dtype : {"f32", "f16"})
        ok = (std::string(dtype) == "f32" ? bench_shape<float>(cx, dtype, rows, cols)
                                          : bench_shape<__half>(cx, dtype, rows, cols)) &&
             ok;
  cudaStreamDestroy(stream);
  if (!ok) {
    std::cerr << "bench_gpu_reduction: fused and unfused disagree (see the check lines)\n";
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_gpu_reduction: " << e.what() << "\n";
  return 1;
}
