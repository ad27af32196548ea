/// @file bench/gpu_ceilings.cu
/// The first step of bench/gpu_suite.sh: what the device is and what it can
/// do, measured in the same session as the benchmarks, so that their
/// fractions are against this machine's ceilings rather than datasheets.
///
///   device     one line of facts: name, compute capability, SMs, clocks
///              (cudaDevAttrClockRate / MemoryClockRate: the maximum, not the
///              current clock; gpu_suite.sh logs those with nvidia-smi), bus
///              width, L2 and persisting-L2 sizes, shared memory and registers
///              per SM, memory total and free, driver and runtime versions, ECC,
///              PCI bus id, and the nominal bandwidth / FP16 peak that the
///              benchmarks use (gpu_common.cuh)
///   d2d_copy   cudaMemcpyAsync device-to-device of --copy-mib MiB (default
///              1024), read + write counted (as the benchmarks' rooflines),
///              best of --repeats batches of 4
///   gemm_peak  cuBLASLt C = A B, N x N x N (--gemm N, default 8192), bf16 and
///              f16 operands and output, fp32 compute, the first heuristic
///              algorithm, 32 MiB workspace, on random data (uniform [-1, 1):
///              zeros run faster, KINDS.md saw 894 vs 788 TFLOP/s), 2 N^3 FLOP
///              per product, best of --repeats batches of 4 after 3 warmups
///
/// JSON lines ({"name": "device" | "d2d_copy" | "gemm_peak", ...}). Without a
/// CUDA device it prints a "skipped" line and exits 77, like every bench_gpu_*.
///
/// Usage: bench_gpu_ceilings [--repeats R] [--gemm N] [--copy-mib M]
#include "gpu_common.cuh"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>

namespace {

using fusor_bench::check;
using fusor_bench::json;

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}

/// p[i] = uniform [-1, 1) from the benchmarks' hash (fusor_bench::uniform).
template <class T>
__global__ void fill_uniform(T* p, std::size_t n, std::uint64_t stream) {
  const std::size_t step = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    p[i] = T(fusor_bench::uniform(stream, i, -1.0f, 1.0f));
}

int attribute(cudaDeviceAttr a, int device) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, a, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return v;
}

json device_facts(int device, const cudaDeviceProp& prop) {
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  std::size_t free_b = 0, total_b = 0;
  check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  char pci[32] = {};
  if (cudaDeviceGetPCIBusId(pci, sizeof pci, device) != cudaSuccess) (void)cudaGetLastError();
  const auto [attr_bw, attr_source] = fusor_bench::peak_bandwidth(device, prop);
  const auto [fp16, fp16_source] = fusor_bench::fp16_peak(device, prop);
  return json{{"name", "device"},
              {"backend", "cuda"},
              {"device", prop.name},
              {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
              {"sm_count", prop.multiProcessorCount},
              {"sm_clock_max_mhz", attribute(cudaDevAttrClockRate, device) / 1000.0},
              {"memory_clock_max_mhz", attribute(cudaDevAttrMemoryClockRate, device) / 1000.0},
              {"memory_bus_bits", attribute(cudaDevAttrGlobalMemoryBusWidth, device)},
              {"l2_bytes", prop.l2CacheSize},
              {"persisting_l2_max_bytes", prop.persistingL2CacheMaxSize},
              {"shared_per_sm_bytes", prop.sharedMemPerMultiprocessor},
              {"shared_per_block_optin_bytes", prop.sharedMemPerBlockOptin},
              {"registers_per_sm", prop.regsPerMultiprocessor},
              {"max_threads_per_sm", prop.maxThreadsPerMultiProcessor},
              {"memory_total_bytes", total_b},
              {"memory_free_bytes", free_b},
              {"ecc", prop.ECCEnabled != 0},
              {"pci_bus_id", pci},
              {"driver_version", driver},
              {"runtime_version", runtime},
              {"nominal_bandwidth_gbps", fusor_bench::nominal_bandwidth(prop) / 1e9},
              {"attribute_bandwidth_gbps", attr_bw / 1e9},
              {"attribute_bandwidth_source", attr_source},
              {"fp16_peak_tflop_per_s", fp16 / 1e12},
              {"fp16_peak_source", fp16_source}};
}

/// Best seconds per device-to-device copy of `bytes`.
double copy_seconds(cudaStream_t stream, std::size_t bytes, int repeats) {
  fusor_bench::device_buffer<unsigned char> a(bytes), b(bytes);
  check(cudaMemsetAsync(a.p, 1, bytes, stream), "cudaMemsetAsync");
  return fusor_bench::best_seconds(stream, repeats, [&] {
    check(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  });
}

/// Best seconds per N x N x N product C = A B in T (column-major, no
/// transposes: square, so the layout does not matter for the rate).
template <class T>
double gemm_seconds(cudaStream_t stream, cublasLtHandle_t lt, cudaDataType_t type, std::int64_t n, int repeats,
                    std::string& algo_note) {
  const std::size_t count = std::size_t(n) * std::size_t(n);
  fusor_bench::device_buffer<T> a(count), b(count), c(count);
  fill_uniform<T><<<4096, 256, 0, stream>>>(a.p, count, 21);
  fill_uniform<T><<<4096, 256, 0, stream>>>(b.p, count, 22);
  check(cudaGetLastError(), "fill_uniform");
  const std::size_t ws_bytes = std::size_t(32) << 20;
  fusor_bench::device_buffer<unsigned char> ws(ws_bytes);
  cublasLtMatmulDesc_t op{};
  check_lt(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  cublasLtMatrixLayout_t l{};
  check_lt(cublasLtMatrixLayoutCreate(&l, type, std::uint64_t(n), std::uint64_t(n), n), "cublasLtMatrixLayoutCreate");
  cublasLtMatmulPreference_t pref{};
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const std::uint64_t wsb = ws_bytes;
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb),
           "MAX_WORKSPACE_BYTES");
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  check_lt(cublasLtMatmulAlgoGetHeuristic(lt, op, l, l, l, l, pref, 1, &heur, &found), "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) throw std::runtime_error("cuBLASLt: no algorithm for the square GEMM");
  algo_note = "first heuristic algorithm, workspace " + std::to_string(heur.workspaceSize) + " bytes";
  const float alpha = 1.0f, beta = 0.0f;
  const auto run = [&] {
    check_lt(cublasLtMatmul(lt, op, &alpha, a.p, l, b.p, l, &beta, c.p, l, c.p, l, &heur.algo, ws.p, ws_bytes, stream),
             "cublasLtMatmul");
  };
  for (int i = 0; i < 2; ++i) run();  // + the warmup of best_seconds: 3
  const double t = fusor_bench::best_seconds(stream, repeats, run);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulDescDestroy(op);
  return t;
}

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--repeats R] [--gemm N] [--copy-mib M]\n"
               "  --repeats R   timed batches of 4 (default 10)\n"
               "  --gemm N      square GEMM size (default 8192)\n"
               "  --copy-mib M  device-to-device copy size in MiB (default 1024)\n",
               argv0);
  std::exit(status);
}

}  // namespace

int main(int argc, char** argv) try {
  int repeats = 10;
  long long gemm_n = 8192, copy_mib = 1024;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage(argv[0], 0);
    long long* target = arg == "--repeats" ? nullptr : arg == "--gemm" ? &gemm_n : arg == "--copy-mib" ? &copy_mib : nullptr;
    if ((arg == "--repeats" || target) && i + 1 < argc) {
      const long long v = fusor_bench::parse_positive(argv[++i]);
      if (v <= 0) usage(argv[0], 2);
      if (target) *target = v;
      else repeats = int(std::min<long long>(v, 100000));
    } else {
      std::fprintf(stderr, "%s: unknown or incomplete option '%s'\n", argv[0], arg.c_str());
      usage(argv[0], 2);
    }
  }
  if (fusor_bench::skip_without_device("ceilings")) return fusor_bench::exit_skipped;
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  std::cout << device_facts(device, prop).dump() << std::endl;

  cudaStream_t stream{};
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const std::size_t bytes = std::size_t(copy_mib) << 20;
  const double tc = copy_seconds(stream, bytes, repeats);
  const double nominal = fusor_bench::nominal_bandwidth(prop);
  std::cout << json{{"name", "d2d_copy"},
                    {"backend", "cuda"},
                    {"method", "cudaMemcpyAsync device-to-device, read + write counted, best of " +
                                   std::to_string(repeats) + " batches of 4"},
                    {"bytes_moved", 2.0 * double(bytes)},
                    {"seconds", tc},
                    {"gb_per_s", 2.0 * double(bytes) / tc / 1e9},
                    {"nominal_fraction", nominal > 0 ? json(2.0 * double(bytes) / tc / nominal) : json(nullptr)},
                    {"device", prop.name}}
                   .dump()
            << std::endl;

  cublasLtHandle_t lt{};
  check_lt(cublasLtCreate(&lt), "cublasLtCreate");
  const auto [fp16, fp16_source] = fusor_bench::fp16_peak(device, prop);
  const double flops = 2.0 * double(gemm_n) * double(gemm_n) * double(gemm_n);
  for (const char* dt : {"bf16", "f16"}) {
    std::string note;
    const bool bf = std::string(dt) == "bf16";
    const double t = bf ? gemm_seconds<__nv_bfloat16>(stream, lt, CUDA_R_16BF, gemm_n, repeats, note)
                        : gemm_seconds<__half>(stream, lt, CUDA_R_16F, gemm_n, repeats, note);
    std::cout << json{{"name", "gemm_peak"},
                      {"backend", "cuda"},
                      {"precision", dt},
                      {"library", "cuBLASLt"},
                      {"method", std::string(dt) + " A, B, C; fp32 compute; random uniform [-1, 1); " + note},
                      {"shape", json{{"m", gemm_n}, {"n", gemm_n}, {"k", gemm_n}}},
                      {"flops", flops},
                      {"seconds", t},
                      {"tflop_per_s", flops / t / 1e12},
                      {"datasheet_fraction", fp16 > 0 ? json(flops / t / fp16) : json(nullptr)},
                      {"datasheet_source", fp16_source},
                      {"device", prop.name}}
                     .dump()
              << std::endl;
  }
  cublasLtDestroy(lt);
  cudaStreamDestroy(stream);
  return 0;
} catch (const std::exception& ex) {
  std::cerr << "bench_gpu_ceilings: " << ex.what() << "\n";
  return 1;
}
