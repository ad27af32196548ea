/// @file bench/gpu_elementwise.cu
/// CUDA benchmark of the two 6-op elementwise chains (see chain6.hpp), in one run:
///   chain6      y = (gelu(x * a + b) - sigmoid(x)) * c
///   chain6_mem  y = max(relu(x * a + b) * c - x, b)     (exact ops, memory-bound)
/// each as
///   fused    fusor::run(..., fusor::cuda(stream))                   one kernel
///   unfused  fusor::run(..., fusor::unfused(fusor::cuda(stream)))   one kernel per op,
///            temporaries from cudaMallocAsync (the default pool keeps its memory
///            between runs here: release threshold set to UINT64_MAX)
///   handwritten  chain6_mem only: a plain one-element-per-thread CUDA kernel
///            of the same formula (chain6_mem::scalar), what a user would write
///   copy     cudaMemcpyAsync device-to-device: the measured roofline; bytes
///            counted as read + write (2 x size, as NVIDIA's bandwidthTest does);
///            measured once, reported under both chains' names
///
/// Timing: cudaEvents on the benchmark stream around a batch of `batch` (4)
/// back-to-back runs, divided by the batch size: the steady-state time per run,
/// in which run()'s host-side work (validation, cudaPointerGetAttributes,
/// launch) overlaps the previous run's kernels, as in a real model. One warmup
/// run, then --repeats timed batches; the minimum is reported. Output: JSON lines with
/// the host benchmark's schema (backend "cuda"); roofline_fraction is against
/// the measured copy bandwidth, peak_fraction against the device's theoretical
/// peak (2 x memory clock x bus width, from cudaDeviceGetAttribute; CUDA 13
/// removed cudaDeviceProp::memoryClockRate but kept the attribute).
/// Without a CUDA device it prints one "skipped" line and exits 77 (skip).
///
/// Checks before timing: fused == unfused bit for bit on the device, and the
/// device result within a tolerance of fusor::host() (chain6: CUDA's erff/expf
/// are not glibc's; chain6_mem: exact ops, bitwise differences from the host
/// are counted and reported but only the tolerance decides); for chain6_mem
/// also fused == handwritten bit for bit. A disagreement exits with status 1.
///
/// Usage: bench_gpu_elementwise [--elements N] [--repeats R]
#include "chain6.hpp"
#include "gpu_common.cuh"

#include <fusor/fusor.hpp>
#include <nlohmann/json.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using fusor_bench::batch;
using fusor_bench::best_seconds;
using fusor_bench::check;
using fusor_bench::json;
using fusor_bench::peak_bandwidth;
using device_buffer = fusor_bench::device_buffer<float>;

/// chain6_mem as a plain CUDA kernel: one element per thread.
__global__ void chain6_mem_handwritten(float* __restrict__ y, const float* __restrict__ x,
                                       const float* __restrict__ b, const float* __restrict__ c, float a,
                                       std::int64_t n) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = chain6_mem::scalar(x[i], b[i], c[i], a);
}

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--elements N] [--repeats R]\n"
               "  --elements N  floats per array (default 67108864 = 2^26)\n"
               "  --repeats R   timed batches of 4 back-to-back runs per variant, after one warmup;\n"
               "                the minimum per run is reported (default 20)\n",
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

int main(int argc, char** argv) try {
  std::int64_t n = std::int64_t(1) << 26;
  int repeats = 20;
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

  if (fusor_bench::skip_without_device(chain6::name)) return fusor_bench::exit_skipped;

  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  const auto [peak_bw, peak_source] = peak_bandwidth(device, prop);

  fusor_bench::keep_pool_memory(device);  // the unfused executor's temporaries

  cudaStream_t stream{};
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  // Inputs on the host (also the host reference's inputs), copied once.
  const auto count = static_cast<std::size_t>(n);
  std::vector<float> hx(count), hb(count), hc(count);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::int64_t i = 0; i < n; ++i) {
    hx[std::size_t(i)] = chain6::x_at(std::uint64_t(i));
    hb[std::size_t(i)] = chain6::b_at(std::uint64_t(i));
    hc[std::size_t(i)] = chain6::c_at(std::uint64_t(i));
  }
  const std::size_t bytes = std::size_t(n) * sizeof(float);
  device_buffer x(count), b(count), c(count), y_fused(count), y_unfused(count), scratch(count);
  check(cudaMemcpy(x.p, hx.data(), bytes, cudaMemcpyHostToDevice), "copy x");
  check(cudaMemcpy(b.p, hb.data(), bytes, cudaMemcpyHostToDevice), "copy b");
  check(cudaMemcpy(c.p, hc.data(), bytes, cudaMemcpyHostToDevice), "copy c");
  check(cudaMemset(y_fused.p, 0, bytes), "memset");
  check(cudaMemset(y_unfused.p, 0, bytes), "memset");
  // cudaMemset is asynchronous on the legacy stream, which a non-blocking
  // stream does not wait for
  check(cudaDeviceSynchronize(), "setup");

  const auto dx = fusor::device_view(static_cast<const float*>(x.p), n);
  const auto db = fusor::device_view(static_cast<const float*>(b.p), n);
  const auto dc = fusor::device_view(static_cast<const float*>(c.p), n);
  const auto hxv = fusor::host_view(static_cast<const float*>(hx.data()), n);
  const auto hbv = fusor::host_view(static_cast<const float*>(hb.data()), n);
  const auto hcv = fusor::host_view(static_cast<const float*>(hc.data()), n);
  const auto e = chain6::expression(dx, db, dc, chain6::a);
  static_assert(fusor::kernel_count<decltype(e)> == 1, "chain6 should fuse into one kernel");
  const auto e_mem = chain6_mem::expression(dx, db, dc, chain6_mem::a);
  static_assert(fusor::kernel_count<decltype(e_mem)> == 1, "chain6_mem should fuse into one kernel");
  const auto fused_ex = fusor::cuda(stream);
  const auto unfused_ex = fusor::unfused(fusor::cuda(stream));
  const auto out_fused = fusor::device_view(y_fused.p, n);
  const auto out_unfused = fusor::device_view(y_unfused.p, n);
  auto run_mem_handwritten = [&] {
    constexpr int threads = 256;
    const auto blocks = static_cast<unsigned>((n + threads - 1) / threads);
    chain6_mem_handwritten<<<blocks, threads, 0, stream>>>(scratch.p, x.p, b.p, c.p, chain6_mem::a, n);
    check(cudaGetLastError(), "chain6_mem_handwritten launch");
  };

  // --- correctness, once, before any timing --------------------------------
  // Runs fused and unfused on the device (and handwritten, if given, into
  // scratch) and the host reference; returns the kernel counts, or nothing
  // if a check fails.
  std::vector<float> df(count), du(count), dh(count), href(count);
  auto check_chain = [&](const char* name, int ops, const auto& expr, const auto& host_expr, const auto* handwritten)
      -> std::optional<std::pair<std::size_t, std::size_t>> {
    const auto launched_fused = fusor::run(out_fused, expr, fused_ex).kernels;
    const auto launched_unfused = fusor::run(out_unfused, expr, unfused_ex).kernels;
    if (handwritten) (*handwritten)();
    check(cudaStreamSynchronize(stream), "first runs");
    check(cudaMemcpy(df.data(), y_fused.p, bytes, cudaMemcpyDeviceToHost), "copy back");
    check(cudaMemcpy(du.data(), y_unfused.p, bytes, cudaMemcpyDeviceToHost), "copy back");
    if (handwritten) check(cudaMemcpy(dh.data(), scratch.p, bytes, cudaMemcpyDeviceToHost), "copy back");
    fusor::run(fusor::host_view(href.data(), n), host_expr, fusor::host());
    std::int64_t mismatches = 0, mismatches_hand = 0, bitwise_host = 0, failures = 0;
    double max_abs = 0;
    constexpr double rtol = 1e-5, atol = 1e-5;
    for (std::size_t i = 0; i < std::size_t(n); ++i) {
      if (std::memcmp(&df[i], &du[i], sizeof(float)) != 0) ++mismatches;
      if (handwritten && std::memcmp(&df[i], &dh[i], sizeof(float)) != 0) ++mismatches_hand;
      if (std::memcmp(&df[i], &href[i], sizeof(float)) != 0) ++bitwise_host;
      const double d = std::fabs(double(df[i]) - double(href[i]));
      if (!(d <= atol + rtol * std::fabs(double(href[i])))) ++failures;
      if (!(d <= max_abs)) max_abs = d;
    }
    const bool pass = mismatches == 0 && mismatches_hand == 0 && failures == 0 && launched_fused == 1 &&
                      launched_unfused == std::size_t(ops);
    json j{{"name", name},
           {"check", "cuda_fused_vs_unfused_bitwise_and_vs_host"},
           {"backend", "cuda"},
           {"elements", n},
           {"mismatches_vs_unfused", mismatches}};
    if (handwritten) j["mismatches_vs_handwritten"] = mismatches_hand;
    j["failures_vs_host"] = failures;
    j["max_abs_diff_vs_host"] = max_abs;
    j["bitwise_mismatches_vs_host"] = bitwise_host;
    j["rtol"] = rtol;
    j["atol"] = atol;
    j["kernels_fused"] = launched_fused;
    j["kernels_unfused"] = launched_unfused;
    j["pass"] = pass;
    std::cout << j.dump() << std::endl;
    if (!pass) return std::nullopt;
    return std::pair{launched_fused, launched_unfused};
  };
  const auto counts = check_chain(chain6::name, chain6::ops, e, chain6::expression(hxv, hbv, hcv, chain6::a),
                                  static_cast<const decltype(run_mem_handwritten)*>(nullptr));
  const auto counts_mem = check_chain(chain6_mem::name, chain6_mem::ops, e_mem,
                                      chain6_mem::expression(hxv, hbv, hcv, chain6_mem::a), &run_mem_handwritten);
  if (!counts || !counts_mem) {
    std::cerr << "bench_gpu_elementwise: results disagree, no timings reported\n";
    return 1;
  }

  // --- timings --------------------------------------------------------------
  const double t_copy = best_seconds(stream, repeats, [&] {
    check(cudaMemcpyAsync(scratch.p, x.p, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  });
  const double t_fused = best_seconds(stream, repeats, [&] { fusor::run(out_fused, e, fused_ex); });
  const double t_unfused = best_seconds(stream, repeats, [&] { fusor::run(out_unfused, e, unfused_ex); });
  const double t_mem_fused = best_seconds(stream, repeats, [&] { fusor::run(out_fused, e_mem, fused_ex); });
  const double t_mem_unfused = best_seconds(stream, repeats, [&] { fusor::run(out_unfused, e_mem, unfused_ex); });
  const double t_mem_handwritten = best_seconds(stream, repeats, run_mem_handwritten);
  const double copy_bw = chain6::copy_bytes_per_element * double(n) / t_copy;

  auto record = [&](const char* name, const char* variant, double bytes_per_element, double seconds,
                    std::size_t kernels) {
    const double moved = bytes_per_element * double(n);
    json j{{"name", name},
           {"variant", variant},
           {"backend", "cuda"},
           {"elements", n},
           {"bytes_moved", moved},
           {"seconds", seconds},
           {"gb_per_s", moved / seconds / 1e9},
           {"roofline_fraction", moved / seconds / copy_bw},
           {"peak_fraction", peak_bw > 0 ? json(moved / seconds / peak_bw) : json(nullptr)},
           {"device", prop.name},
           {"repeats", repeats},
           {"runs_per_timed_batch", batch}};
    if (kernels > 0) j["kernels"] = kernels;
    std::cout << j.dump() << std::endl;
  };
  auto summary = [&](const char* name, const char* formula, double fused_bpe, double t_f, double t_u,
                     double t_hand) {
    json j{{"name", name},
           {"summary", true},
           {"backend", "cuda"},
           {"formula", formula},
           {"elements", n},
           {"device", prop.name},
           {"sm_count", prop.multiProcessorCount},
           {"copy_gb_per_s", copy_bw / 1e9},
           {"peak_gb_per_s", peak_bw > 0 ? json(peak_bw / 1e9) : json(nullptr)},
           {"peak_source", peak_source},
           {"fused_roofline_fraction", fused_bpe * double(n) / t_f / copy_bw},
           {"fused_peak_fraction", peak_bw > 0 ? json(fused_bpe * double(n) / t_f / peak_bw) : json(nullptr)},
           {"speedup_fused_vs_unfused", t_u / t_f}};
    if (t_hand > 0) j["speedup_fused_vs_handwritten"] = t_hand / t_f;
    std::cout << j.dump() << std::endl;
  };
  record(chain6::name, "fused", chain6::fused_bytes_per_element, t_fused, counts->first);
  record(chain6::name, "unfused", chain6::unfused_bytes_per_element, t_unfused, counts->second);
  record(chain6::name, "copy", chain6::copy_bytes_per_element, t_copy, 0);
  summary(chain6::name, chain6::formula, chain6::fused_bytes_per_element, t_fused, t_unfused, 0);
  record(chain6_mem::name, "fused", chain6_mem::fused_bytes_per_element, t_mem_fused, counts_mem->first);
  record(chain6_mem::name, "unfused", chain6_mem::unfused_bytes_per_element, t_mem_unfused, counts_mem->second);
  record(chain6_mem::name, "handwritten", chain6_mem::fused_bytes_per_element, t_mem_handwritten, 0);
  record(chain6_mem::name, "copy", chain6::copy_bytes_per_element, t_copy, 0);
  summary(chain6_mem::name, chain6_mem::formula, chain6_mem::fused_bytes_per_element, t_mem_fused, t_mem_unfused,
          t_mem_handwritten);
  cudaStreamDestroy(stream);
  return 0;
} catch (const std::exception& ex) {
  std::cerr << "bench_gpu_elementwise: " << ex.what() << "\n";
  return 1;
}
