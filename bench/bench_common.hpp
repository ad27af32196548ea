/// @file bench/bench_common.hpp
/// Helpers shared by fusor's host benchmarks (bench/*_bench.cpp), and by the
/// host halves of the CUDA benchmarks: JSON type, thread count, load average,
/// deterministic random inputs, 64-byte aligned buffers, option parsing,
/// interleaved wall-clock timing and STREAM-style bandwidth loops.
/// Everything lives in namespace fusor_bench; nothing here is part of fusor.
#pragma once

#include <nlohmann/json.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

/// Marks the few helpers that CUDA benchmarks also call in device code
/// (input generation on the device); nothing for a host compiler.
#if defined(__CUDACC__)
#define FUSOR_BENCH_HD __host__ __device__
#else
#define FUSOR_BENCH_HD
#endif

namespace fusor_bench {

/// JSON objects keep their keys in insertion order (readable output lines).
using json = nlohmann::ordered_json;

/// OpenMP's thread count (OMP_NUM_THREADS), or the hardware threads without
/// OpenMP (at least 1).
inline int max_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? int(n) : 1;
#endif
}

/// The 1-minute load average (Linux /proc/loadavg), or null: other processes
/// on the machine make host timings noisy, so the outputs record it.
inline json load_average() {
  std::ifstream f("/proc/loadavg");
  double l = 0;
  if (f >> l) return l;
  return nullptr;
}

/// `n` floats uniform in [lo, hi) from std::mt19937(seed): the same inputs on
/// every run and machine.
inline std::vector<float> random_vector(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& e : v) e = dist(gen);
  return v;
}

/// SplitMix64's finalizer (Steele, Lea, Flood 2014): a well-mixed 64-bit
/// hash of z.
FUSOR_BENCH_HD inline std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/// Deterministic input values: uniform in [lo, hi) (24 random bits), element
/// i of stream s. A pure function of (s, i), so any thread may fill any index
/// (parallel first touch, or a CUDA kernel) and every run sees the same inputs.
FUSOR_BENCH_HD inline float uniform(std::uint64_t s, std::uint64_t i, float lo, float hi) {
  const float u = float(mix(s * 0x100000001b3ull ^ i) >> 40) * (1.0f / 16777216.0f);
  return lo + (hi - lo) * u;
}

/// Deleter of aligned_buffer.
template <class T>
struct aligned_delete {
  void operator()(T* p) const { ::operator delete(p, std::align_val_t(64)); }
};
/// An uninitialized array of T on a 64-byte boundary (a cache line), so that
/// first touch (by the threads that use it) decides its pages' placement.
template <class T>
using aligned_buffer = std::unique_ptr<T[], aligned_delete<T>>;

/// `n` uninitialized elements of T, 64-byte aligned (T trivially constructible).
/// Throws std::bad_alloc.
template <class T = float>
aligned_buffer<T> allocate(std::int64_t n) {
  static_assert(std::is_trivially_default_constructible_v<T>, "allocate: T must be trivially constructible");
  return aligned_buffer<T>(static_cast<T*>(::operator new(std::size_t(n > 0 ? n : 1) * sizeof(T), std::align_val_t(64))));
}

/// `s` as a positive integer (decimal, 0x hex or 0 octal), or -1 when it is
/// not one (empty, trailing characters, zero, negative).
inline long long parse_positive(const char* s) {
  char* end = nullptr;
  const long long v = std::strtoll(s, &end, 0);
  if (end == s || *end != '\0' || v <= 0) return -1;
  return v;
}

/// Wall-clock seconds of one call of f (std::chrono::steady_clock).
template <class F>
double seconds_of_call(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Interleaved timing of benchmark variants. `Variant` has `run` (callable;
/// when it returns a value, that is stored in `kernels`, the kernels run()
/// launched) and `best` (seconds, starts at +inf). With `warmup`, every variant
/// runs once untimed first; then `repeats` rounds each time every variant once,
/// so a burst of load from other processes hits all variants alike; `best`
/// keeps each variant's minimum. When `Variant` has `samples`
/// (std::vector<double>), every timing is appended there too (for medians).
template <class Variant>
void time_interleaved(std::vector<Variant>& vs, int repeats, bool warmup = true) {
  if (warmup)
    for (auto& v : vs) v.run();
  for (int r = 0; r < repeats; ++r)
    for (auto& v : vs) {
      const auto t0 = std::chrono::steady_clock::now();
      if constexpr (std::is_void_v<decltype(v.run())>) {
        v.run();
      } else {
        v.kernels = v.run();
      }
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      v.best = std::min(v.best, t);
      if constexpr (requires { v.samples.push_back(t); }) v.samples.push_back(t);
    }
}

/// The measured fp32 multiply+add throughput of all threads, in FLOP/s: an
/// OpenMP microkernel, 16 independent 4-wide multiply+add chains per thread
/// (v = v * m + a, compiled like the including benchmark: -O3, its
/// instruction set, no FMA contraction): the best of 3 trials (other processes on the
/// machine only ever make a trial slower). `seconds_out`: the best trial's.
inline double measure_peak(double& seconds_out) {
  constexpr int lanes = 64;  // 16 SSE vectors of independent chains per thread
  const std::int64_t iters = 8'000'000;
  const int threads = max_threads();
  std::vector<float> sink(std::size_t(threads), 0.0f);
  double best = std::numeric_limits<double>::infinity();
  for (int trial = 0; trial < 3; ++trial) {
    const auto t0 = std::chrono::steady_clock::now();
#if defined(_OPENMP)
#pragma omp parallel num_threads(threads)
#endif
    {
#if defined(_OPENMP)
      const int t = omp_get_thread_num();
#else
      const int t = 0;
#endif
      alignas(64) float v[lanes];
      for (int j = 0; j < lanes; ++j) v[j] = 1.0f + float(j) * 1e-3f + float(t) * 1e-4f + float(trial) * 1e-5f;
      const float m = 0.999999f, a = 1e-7f;
      for (std::int64_t i = 0; i < iters; ++i)
        for (int j = 0; j < lanes; ++j) v[j] = v[j] * m + a;
      float s = 0;
      for (int j = 0; j < lanes; ++j) s += v[j];
      sink[std::size_t(t)] += s;
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  volatile float keep = 0;
  for (float s : sink) keep = keep + s;
  (void)keep;
  seconds_out = best;
  return 2.0 * lanes * double(iters) * threads / best;
}

/// The median of `xs` (the mean of the two middle values for an even count);
/// NaN when empty.
inline double median(std::vector<double> xs) {
  if (xs.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(xs.begin(), xs.end());
  const std::size_t m = xs.size() / 2;
  return xs.size() % 2 ? xs[m] : 0.5 * (xs[m - 1] + xs[m]);
}

/// STREAM copy: dst[i] = src[i], OpenMP static schedule. Counted as 8 bytes
/// per element (one read, one write; no write-allocate counted, as STREAM).
inline void stream_copy(float* __restrict dst, const float* __restrict src, std::int64_t n) {
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

/// STREAM triad: dst[i] = a[i] + s * b[i], OpenMP static schedule. Counted as
/// 12 bytes per element (two reads, one write).
inline void stream_triad(float* __restrict dst, const float* __restrict a, const float* __restrict b, float s,
                         std::int64_t n) {
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::int64_t i = 0; i < n; ++i) dst[i] = a[i] + s * b[i];
}

/// This machine's memory bandwidth, measured now: STREAM triad on three
/// arrays of `n` floats (first touched in parallel), one untimed run, then the
/// best of `trials`, in bytes per second (12 bytes per element). `n` should
/// exceed the last-level cache several times (2^25 floats = 128 MiB per array
/// is the default). Other processes only ever make a trial slower.
inline double measure_triad_bandwidth(std::int64_t n = std::int64_t(1) << 25, int trials = 5) {
  auto a = allocate<float>(n), b = allocate<float>(n), c = allocate<float>(n);
  float *pa = a.get(), *pb = b.get(), *pc = c.get();
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::int64_t i = 0; i < n; ++i) {
    pa[i] = 1.0f + float(i % 7);
    pb[i] = 2.0f;
    pc[i] = 0.0f;
  }
  stream_triad(pc, pa, pb, 3.0f, n);
  double best = std::numeric_limits<double>::infinity();
  for (int t = 0; t < trials; ++t) best = std::min(best, seconds_of_call([&] { stream_triad(pc, pa, pb, 3.0f, n); }));
  volatile float keep = pc[n / 2];
  (void)keep;
  return 12.0 * double(n) / best;
}

}  // namespace fusor_bench
