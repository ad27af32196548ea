/// @file bench/gpu_common.cuh
/// Helpers shared by fusor's CUDA benchmarks (bench/gpu_*.cu): CUDA error
/// checks, a typed device buffer, fp16 / bf16 random inputs, cudaEvent batch timing,
/// the device's nominal memory bandwidth and dense FP16 tensor-core peak, the
/// "no CUDA device" skip (exit status 77), the memory pool setting of the
/// unfused executor's temporaries, and the --only / --budget-s options that
/// bench/gpu_suite.sh uses to bound each program's time. Host-side helpers (JSON, ...) come from
/// bench_common.hpp. Everything lives in namespace fusor_bench.
#pragma once

#include "bench_common.hpp"

#include <fusor/fusor.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace fusor_bench {

/// Throws std::runtime_error naming `what` and the CUDA error unless `e` is
/// cudaSuccess.
inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

/// `count` elements of T in device memory (cudaMalloc; at least one element
/// is allocated so that `p` is never null), freed on destruction.
template <class T>
struct device_buffer {
  T* p = nullptr;
  std::size_t n = 0;
  explicit device_buffer(std::size_t count) : n(count) { check(cudaMalloc(&p, (count > 0 ? count : 1) * sizeof(T)), "cudaMalloc"); }
  ~device_buffer() { cudaFree(p); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  /// Copies h (h.size() <= n elements) to the start of the buffer (synchronous).
  void upload(const std::vector<T>& h) { check(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), "upload"); }
  /// The whole buffer, copied back (synchronous).
  std::vector<T> download() const {
    std::vector<T> h(n);
    check(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return h;
  }
};

/// `n` halves: floats uniform in [lo, hi) from std::mt19937(seed), rounded to
/// nearest.
inline std::vector<__half> random_half(std::size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<__half> v(n);
  for (auto& e : v) e = __float2half_rn(dist(gen));
  return v;
}

/// 16-bit floats <-> float on the host, one spelling for both types.
inline float to_float(__half h) { return __half2float(h); }
inline float to_float(__nv_bfloat16 h) { return __bfloat162float(h); }
template <class T>
T from_float(float f) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(f);
  else return __float2bfloat16_rn(f);
}
/// "f16" / "bf16": the short dtype name in JSON lines (`precision`).
template <class T>
constexpr const char* dtype_name() {
  return std::is_same_v<T, __half> ? "f16" : "bf16";
}

/// `n` values of T (__half or __nv_bfloat16): floats uniform in [lo, hi)
/// from std::mt19937(seed), rounded to nearest (the same draws as random_half).
template <class T>
std::vector<T> random_16(std::size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& e : v) e = from_float<T>(dist(gen));
  return v;
}

/// Seconds since the program started (steady clock; first call at start of
/// main), for --budget-s.
inline double elapsed_s() {
  static const auto start = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// --only LIST (comma-separated substrings; empty: every case) and
/// --budget-s S (no new case starts after S seconds). bench/gpu_suite.sh
/// uses --only to give `ncu` one kernel per family and --budget-s so that a
/// program ends on its own, printing `not_run` lines, before its timeout.
struct case_selection {
  std::vector<std::string> only;
  double budget_s = 1e30;
  /// Parses "--only" / "--budget-s" at argv[i] (advancing i); false when
  /// argv[i] is neither; exits 2 on a bad value.
  bool parse(int argc, char** argv, int& i) {
    const std::string a = argv[i];
    if ((a != "--only" && a != "--budget-s") || i + 1 >= argc) return false;
    const std::string v = argv[++i];
    if (a == "--only") {
      std::size_t p = 0;
      while (p <= v.size()) {
        const std::size_t q = std::min(v.find(',', p), v.size());
        if (q > p) only.push_back(v.substr(p, q - p));
        p = q + 1;
      }
    } else {
      char* end = nullptr;
      budget_s = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(budget_s > 0)) {
        std::fprintf(stderr, "--budget-s: expected a positive number of seconds, got '%s'\n", v.c_str());
        std::exit(2);
      }
    }
    return true;
  }
  bool selected(const std::string& id) const {
    if (only.empty()) return true;
    for (const auto& s : only)
      if (id.find(s) != std::string::npos) return true;
    return false;
  }
  bool over_budget() const { return elapsed_s() > budget_s; }
  /// The JSON line of a case not run because the budget was spent.
  json not_run(const std::string& name, const std::string& id) const {
    return json{{"name", name}, {"case", id}, {"backend", "cuda"},
                {"not_run", "time budget (--budget-s " + std::to_string(budget_s) + ") spent"}};
  }
  static constexpr const char* usage =
      "  --only LIST   only the cases whose id contains one of these comma-separated substrings\n"
      "  --budget-s S  start no new case after S seconds (those print not_run lines)\n";
};

/// Two cudaEvents, created and destroyed with the object.
struct event_pair {
  cudaEvent_t start{}, stop{};
  event_pair() {
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~event_pair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  event_pair(const event_pair&) = delete;
  event_pair& operator=(const event_pair&) = delete;
};

/// Runs per timed batch of best_seconds / batch_seconds.
inline constexpr int batch = 4;

/// Seconds per run of f on `stream`, one value per timed batch: one warmup
/// run, then `repeats` batches of `batch` back-to-back runs between two
/// cudaEvents, each divided by `batch`: the steady-state time per run, in
/// which run()'s host-side work (validation, launch) overlaps the previous
/// run's kernels, as in a real model.
template <class F>
std::vector<double> batch_seconds(cudaStream_t stream, int repeats, F&& f) {
  event_pair ev;
  f();
  check(cudaStreamSynchronize(stream), "warmup");
  std::vector<double> out;
  out.reserve(std::size_t(std::max(repeats, 0)));
  for (int r = 0; r < repeats; ++r) {
    check(cudaEventRecord(ev.start, stream), "cudaEventRecord");
    for (int k = 0; k < batch; ++k) f();
    check(cudaEventRecord(ev.stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(ev.stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, ev.start, ev.stop), "cudaEventElapsedTime");
    out.push_back(double(ms) * 1e-3 / batch);
  }
  return out;
}

/// The minimum of batch_seconds (see there): best seconds per run.
template <class F>
double best_seconds(cudaStream_t stream, int repeats, F&& f) {
  const auto s = batch_seconds(stream, repeats, std::forward<F>(f));
  double best = std::numeric_limits<double>::infinity();
  for (double t : s) best = std::min(best, t);
  return best;
}

/// Theoretical DRAM bandwidth (bytes/s) of `device`, and where it came from:
/// 2 x memory clock x bus width from cudaDeviceGetAttribute (CUDA 13 removed
/// cudaDeviceProp::memoryClockRate but kept the attribute); else the H200
/// datasheet's 4.8 TB/s for an H200; else 0 ("unknown").
inline std::pair<double, std::string> peak_bandwidth(int device, const cudaDeviceProp& prop) {
  int clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess && clock_khz > 0 &&
      bus_bits > 0)
    return {2.0 * double(clock_khz) * 1e3 * double(bus_bits) / 8.0, "2 x cudaDevAttrMemoryClockRate x cudaDevAttrGlobalMemoryBusWidth"};
  (void)cudaGetLastError();
  // NVIDIA H200 Tensor Core GPU datasheet: 4.8 TB/s GPU memory bandwidth (HBM3e).
  if (std::strstr(prop.name, "H200") != nullptr) return {4.8e12, "constant: NVIDIA H200 datasheet, 4.8 TB/s"};
  return {0.0, "unknown"};
}

/// The datasheet memory bandwidth (bytes/s) for devices whose datasheet this
/// file knows (H200: 4.8 TB/s HBM3e; H100 SXM5: 3.35 TB/s), else 0. Reported
/// next to peak_bandwidth (the clock x bus-width number, which for HBM parts
/// can differ from the marketing figure).
inline double nominal_bandwidth(const cudaDeviceProp& prop) {
  const std::string name = prop.name;
  if (name.find("H200") != std::string::npos) return 4.8e12;
  if (name.find("H100") != std::string::npos && name.find("SXM") != std::string::npos) return 3.35e12;
  return 0.0;
}

/// The dense FP16 tensor-core peak (FLOP/s) and its source.
inline std::pair<double, std::string> fp16_peak(int device, const cudaDeviceProp& prop) {
  const std::string name = prop.name;
  if (name.find("H200") != std::string::npos)
    return {989.4e12, "NVIDIA H200 datasheet: FP16 Tensor Core 1979 TFLOP/s with sparsity, 989.4 dense"};
  if (name.find("H100") != std::string::npos) {
    if (name.find("PCIe") != std::string::npos) return {756.5e12, "NVIDIA H100 PCIe datasheet: 756.5 TFLOP/s dense FP16"};
    if (name.find("NVL") != std::string::npos) return {835.5e12, "NVIDIA H100 NVL datasheet: 835.5 TFLOP/s dense FP16"};
    return {989.4e12, "NVIDIA H100 SXM5 datasheet: FP16 Tensor Core 1979 TFLOP/s with sparsity, 989.4 dense"};
  }
  int clock_khz = 0;
  if (prop.major == 9 && prop.minor == 0 && cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device) == cudaSuccess &&
      clock_khz > 0)
    return {double(prop.multiProcessorCount) * double(clock_khz) * 1e3 * 4096.0,
            "estimate: SMs x cudaDevAttrClockRate x 4096 FLOP/clock/SM (sm_90 dense FP16)"};
  (void)cudaGetLastError();
  return {0.0, "unknown for this device"};
}

/// Exit status of a benchmark that found no CUDA device (ctest's and
/// automake's "skipped").
inline constexpr int exit_skipped = 77;

/// True when there is no usable CUDA device; then it has printed one JSON line
/// {"name": name, "backend": "cuda", "skipped": "no CUDA device"} and the
/// caller returns exit_skipped.
inline bool skip_without_device(const char* name) {
  if (fusor::cuda_device_available()) return false;
  (void)cudaGetLastError();
  std::cout << json{{"name", name}, {"backend", "cuda"}, {"skipped", "no CUDA device"}}.dump() << std::endl;
  return true;
}

/// The unfused executor allocates its temporaries with cudaMallocAsync on
/// every run; keep freed memory in `device`'s default pool (release threshold
/// UINT64_MAX) so that timed runs do not remap it.
inline void keep_pool_memory(int device) {
  cudaMemPool_t pool{};
  check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
  std::uint64_t keep = std::numeric_limits<std::uint64_t>::max();
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
}

}  // namespace fusor_bench
