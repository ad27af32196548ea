#pragma once
/// @file exec/cuda_backend.hpp
/// The CUDA executor: launches fused kernels on a stream. The executor type
/// exists in every translation unit; launching needs nvcc (a .cu file), and
/// using it from a g++ translation unit is a compile-time error that says so.
#include <fusor/core/error.hpp>
#include <fusor/exec/executors.hpp>
#include <fusor/exec/memory_space.hpp>
#include <fusor/exec/run_state.hpp>
#include <fusor/kernels/elementwise.hpp>
#include <fusor/kernels/tuning/elementwise.hpp>

#include <cuda_runtime_api.h>

/// FUSOR_NVTX (default 1; define it the same in every translation unit of a
/// program): the CUDA executor marks each fused group it
/// launches with an NVTX range named after the group, so Nsight Systems and
/// Nsight Compute show fusor's groups by name. Define it to 0 to compile the
/// ranges out (NVTX is header-only and costs a few ns per range without a
/// profiler attached; the group's name is built only when it is on).
#ifndef FUSOR_NVTX
#  define FUSOR_NVTX 1
#endif
#if FUSOR_NVTX
#  include <nvtx3/nvToolsExt.h>
#endif

#include <algorithm>
#include <memory>
#include <string>

namespace fusor {

/// Which mainloop the CUDA executor runs for GEMM groups (matmul / linear /
/// gemm; exec/cuda_gemm.hpp).
enum class cuda_gemm_engine : int {
  /// cuBLASLt per row panel, then fusor's epilogue kernel, where the
  /// operands are plain views and cuBLASLt loads; otherwise fusor_tiles.
  automatic = 0,
  /// fusor's own tile kernel (kernels/contraction.hpp) for every GEMM: tests
  /// use it to check that algorithm on the device.
  fusor_tiles = 1,
};

/// Runs fused kernels on CUDA stream `stream` (0 = the legacy default stream).
/// Launches are asynchronous; errors of the launch itself are reported as
/// device_error naming the kernel.
struct cuda_executor {
  using space = device_space;
  using policy = fused_policy;
  cudaStream_t stream = nullptr;
  mutable launch_counter launches{};  ///< kernels launched so far (atomic: the executor may be shared by threads)
  std::shared_ptr<prepared_cache> prepared = std::make_shared<prepared_cache>();
  /// The GEMM mainloop (see cuda_gemm_engine).
  cuda_gemm_engine gemm_engine = cuda_gemm_engine::automatic;
  /// Forgets prepared (folded) weights: call after changing weights in place.
  void clear_prepared() const {
    std::lock_guard<std::mutex> lock(prepared->mutex);
    prepared->entries.clear();
  }
};

/// The CUDA executor on `stream`.
inline cuda_executor cuda(cudaStream_t stream = nullptr) { return {stream}; }

namespace exec {

/// An NVTX range (push on construction, pop on destruction); an empty name
/// pushes nothing. Compiled out with FUSOR_NVTX=0.
class nvtx_range {
 public:
  explicit nvtx_range(const std::string& name) {
#if FUSOR_NVTX
    if (!name.empty()) {
      nvtxRangePushA(name.c_str());
      pushed_ = true;
    }
#else
    (void)name;
#endif
  }
  ~nvtx_range() {
#if FUSOR_NVTX
    if (pushed_) nvtxRangePop();
#endif
  }
  nvtx_range(const nvtx_range&) = delete;
  nvtx_range& operator=(const nvtx_range&) = delete;

 private:
  bool pushed_ = false;
};

/// Throws device_error("fusor: <what>: <CUDA error text>") unless e is cudaSuccess.
inline void check_cuda(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw device_error("fusor: " + what + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

#if defined(__CUDACC__)
/// The fused elementwise kernel: a grid-stride loop over output elements
/// (vector_width elements per step on the vectorized path). One entry per
/// fused group; the access path is a uniform run-time branch.
template <class K>
__global__ void __launch_bounds__(kernels::elementwise_threads) fused_elementwise(K k) {
  const index_t step = (k.path == kernels::access::vectorized) ? K::vector_width : 1;
  const index_t first = (index_t(blockIdx.x) * blockDim.x + threadIdx.x) * step;
  const index_t stride = index_t(gridDim.x) * blockDim.x * step;
  for (index_t i = first; i < k.size; i += stride) k.run_range(i, i + step < k.size ? i + step : k.size);
}

/// Launches an elementwise kernel on ex.stream; `name` names it in errors.
template <class K>
void launch(const cuda_executor& ex, const K& k, const std::string& name) {
  count_launches(ex);  // (an empty group counts too, as on the host: kernel_count)
  if (rehearsing()) return;
  if (k.size == 0) return;
  int device = 0, sms = 0;
  check_cuda(cudaGetDevice(&device), "launch of " + name);
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "launch of " + name);
  const index_t step = (k.path == kernels::access::vectorized) ? K::vector_width : 1;
  const index_t work = (k.size + step - 1) / step;
  const index_t blocks = kernels::grid_stride_blocks(work, sms);
  fused_elementwise<<<unsigned(blocks), kernels::elementwise_threads, 0, ex.stream>>>(k);
  check_cuda(cudaGetLastError(), "launch of kernel fused_elementwise (" + name + ")");
}
#else
template <class K>
void launch(const cuda_executor&, const K&, const std::string&) {
  static_assert(sizeof(K) == 0, "fusor: run(cuda(stream)): CUDA kernels can only be launched from a translation unit "
                                "compiled by nvcc (a .cu file)");
}
#endif

/// A device temporary of n elements of T, freed in stream order, taken from
/// this run's rehearsal when there is one (exec/run_state.hpp). what() names
/// the op, the operand and the shape for the errors.
/// @throws shape_error      the byte count overflows
/// @throws allocation_error cudaMallocAsync ran out of memory
/// @throws device_error     any other CUDA failure
template <class T, class What>
std::shared_ptr<T> allocate(const cuda_executor& ex, index_t n, const What& what) {
  const std::size_t bytes = temporary_bytes<T>(n, what);
  return run_allocation<T>(bytes, [&] {
    void* p = nullptr;
    const cudaError_t e = injected_allocation_failure() ? cudaErrorMemoryAllocation : cudaMallocAsync(&p, bytes, ex.stream);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky: clear it so a later launch check does not report it
      throw allocation_error("fusor: " + what() + ": cannot allocate " + std::to_string(bytes) + " bytes of device memory");
    }
    check_cuda(e, what() + ": allocation of " + std::to_string(bytes) + " bytes");
    cudaStream_t s = ex.stream;
    try {
      return std::shared_ptr<T>(static_cast<T*>(p), [s](T* q) { cudaFreeAsync(q, s); });
    } catch (const std::bad_alloc&) {
      throw allocation_error("fusor: " + what() + ": cannot allocate a host control block");
    }
  });
}

}  // namespace exec
}  // namespace fusor
