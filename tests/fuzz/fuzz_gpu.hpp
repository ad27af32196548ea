#pragma once
// GPU mode of the differential fuzzers (fuzz_gpu): the same draws as
// fuzz_elementwise and fuzz_blocks (same seeds -> same inputs, layouts and
// scalars), run with fusor::cuda() on a device mirror of every draw buffer
// and with fusor::host() on the host buffers, then compared within stated
// tolerances (README.md, "GPU mode"). Non-template declarations: the device
// mirror and the comparison (fuzz_gpu_support.cpp, g++), the case parts
// (fuzz_gpu_part*.cu, fuzz_gpu_blocks_part*.cu, nvcc).
#include "fuzz_support.hpp"

#include <string>
#include <vector>

namespace fz {

/// Device copies of a draw's buffers with the same byte layout: buffer b's
/// element e is at dev[b] + e * size on the device. cudaMalloc returns
/// 256-byte aligned memory and host buffers are 64-byte aligned, so every
/// view's address % 16 is the same on both sides (the same vectorized or
/// scalar access path is chosen). Freed on destruction.
struct device_mirror {
  std::vector<unsigned char*> dev;
  device_mirror() = default;
  device_mirror(const device_mirror&) = delete;
  device_mirror& operator=(const device_mirror&) = delete;
  ~device_mirror();
  /// Allocates device memory for the buffers added since the last call
  /// (throws std::runtime_error on a CUDA error).
  void allocate(const draw& d);
  /// Host buffers (their current content, normally pristine) -> device.
  void upload(const draw& d);
  /// Device -> host buffers (`mem`), so that collect() sees the device results.
  void download(draw& d);
  /// Device data pointer of a view (nullptr for null views).
  void* data(const draw& d, const view_layout& l) const;
};

/// Synchronizes the device; an asynchronous CUDA error becomes r.error.
void sync_device(run_outcome& r);

/// Where fuzz_gpu runs a draw: the CUDA executor on a device mirror. (The
/// driver is a template over this so that its logic can also be checked
/// without a GPU, against a host mirror and host(): README.md, "GPU mode".)
struct on_cuda {
  using mirror = device_mirror;
  using space = fusor::device_space;
  static auto executor() { return fusor::cuda(); }
  static void sync(run_outcome& r) { sync_device(r); }
};

/// The run of one draw on Target's mirror: restores and uploads the buffers,
/// calls `launch()` (fusor::run on the mirror's views; exceptions are the
/// run's error), synchronizes (an asynchronous CUDA error is the run's
/// error), downloads and collects the outputs and any stray write (collect()).
template <class Target, class Launch>
void execute_on(draw& d, typename Target::mirror& m, run_outcome& r, Launch&& launch);

/// Which family a draw belongs to (selects reports and tolerances).
enum class gpu_family { elementwise, blocks };

/// Compares the CUDA outcome with the host() reference (README.md, "GPU
/// mode"): both throw or neither; no write outside the outputs; per element
/// NaN where the host has NaN, the same infinities, otherwise |gpu - host| <=
/// atol + rtol |host| for the output's dtype (bitwise for elementwise cases
/// made only of exactly rounded ops); a case with inexact ops may have a
/// stated fraction of elements outside that (printed, never silent).
/// Prints a report with a replay line on failure; returns false then.
/// Program name in the replay lines of judge_gpu's reports.
extern const char* g_gpu_program;
bool judge_gpu(draw& d, gpu_family fam, run_outcome& gpu, run_outcome& host, const std::string& describe,
               const options& o);

/// Copies each host case's reference_fn and one-kernel flag (host_fuzzer's
/// registry, from the host case TUs) into the GPU registry of the same
/// family. Prints the problem and returns false when the registries do not
/// match (a case without a reference, different case counts).
bool attach_host_references(registry& gpu, const registry& host);

/// Prints what the GPU draws covered (after a CI or long run).
void print_gpu_summary_elementwise();
void print_gpu_summary_blocks();

void register_gpu_part0(registry& r);
void register_gpu_part1(registry& r);
void register_gpu_part2(registry& r);
void register_gpu_blocks_part0(registry& r);
void register_gpu_blocks_part1(registry& r);
void register_gpu_blocks_part2(registry& r);

template <class Target, class Launch>
void execute_on(draw& d, typename Target::mirror& m, run_outcome& r, Launch&& launch) {
  restore(d);
  try {
    m.upload(d);
    r.kernels = launch();
  } catch (const std::exception& x) {
    r.error = x.what();
  }
  Target::sync(r);
  try {
    m.download(d);
  } catch (const std::exception& x) {
    if (r.error.empty()) r.error = x.what();
  }
  collect(d, d.out, r);
}

}  // namespace fz
