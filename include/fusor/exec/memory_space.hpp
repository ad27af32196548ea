#pragma once
/// @file exec/memory_space.hpp
/// Run-time checks that a view's data lives where its executor runs: device
/// (or managed) memory for cuda(stream), host (or managed, or pinned) memory
/// for host(). The memory space is also part of a view's type (host_view /
/// device_view), so mixing the two view kinds does not compile; these checks
/// catch a view built over the wrong kind of pointer.
#include <fusor/core/error.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#if __has_include(<dlfcn.h>)
#include <dlfcn.h>
#define FUSOR_HAS_DLOPEN 1
#endif

#include <cstdlib>
#include <string>

namespace fusor {

/// True when a CUDA device is usable in this process (needs the CUDA runtime
/// linked: call it from CUDA code or tests only).
inline bool cuda_device_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

namespace exec {

/// Throws device_error unless p (with elements) is device or managed memory.
/// `operand` names the operand, e.g. "input 1 of add (f32[1025])".
inline void check_device_pointer(const void* p, const std::string& operand) {
  if (p == nullptr) return;
  cudaPointerAttributes attr{};
  const cudaError_t e = cudaPointerGetAttributes(&attr, p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw device_error("fusor: run(cuda): cannot query " + operand + ": " + cudaGetErrorString(e));
  }
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
    throw device_error("fusor: run(cuda): " + operand +
                       " is host memory; the CUDA executor needs device or managed memory (device_view over cudaMalloc'd data)");
}

namespace detail {

/// The CUDA driver's pointer query, loaded at run time from libcuda.so.1.
/// Why the driver and dlopen: host-only builds link neither the CUDA runtime
/// nor the driver, and a machine without a GPU has no driver; the same code
/// must check in every translation unit (g++ or nvcc) or the host executor's
/// checks would differ between them (an ODR violation). The driver call
/// needs no current context, so a host-only program never creates one; the
/// only one-time cost is cuInit where a driver is installed.
struct driver_pointer_query {
  using init_fn = CUresult (*)(unsigned);
  // cuPointerGetAttributes (plural), not cuPointerGetAttribute: for memory
  // CUDA does not know (pageable host memory) the singular call fails with
  // CUDA_ERROR_INVALID_VALUE, which compute-sanitizer reports as an API
  // error on every host run; the plural one succeeds and leaves defaults.
  using attribute_fn = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
  attribute_fn attribute = nullptr;  ///< null: no usable driver, nothing can be device memory

  static const driver_pointer_query& instance() {
    static const driver_pointer_query q = load();
    return q;
  }

 private:
  static driver_pointer_query load() {
    driver_pointer_query q;
#if defined(FUSOR_HAS_DLOPEN)
    // Opt-out: cuInit has process-wide effects (a forked child of a process
    // that initialised CUDA cannot use CUDA itself); host-only programs that
    // fork workers can set FUSOR_HOST_POINTER_CHECK=0.
    if (const char* v = std::getenv("FUSOR_HOST_POINTER_CHECK"); v != nullptr && std::string(v) == "0") return q;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return q;  // no driver installed: no device memory can exist
    const auto init = reinterpret_cast<init_fn>(dlsym(lib, "cuInit"));
    const auto attribute = reinterpret_cast<attribute_fn>(dlsym(lib, "cuPointerGetAttributes"));
    if (init != nullptr && attribute != nullptr && init(0) == CUDA_SUCCESS) q.attribute = attribute;
    // lib stays loaded for the life of the process (the pointers above point into it).
#endif
    return q;
  }
};

}  // namespace detail

/// Throws device_error when p is CUDA device memory (not managed memory),
/// which the host executor cannot read: it would fault, or on systems with
/// address translation read the wrong data. Pageable, pinned and managed
/// memory pass. Where no CUDA driver is installed (or no <dlfcn.h>), or the
/// environment sets FUSOR_HOST_POINTER_CHECK=0 (read once, at the first host
/// run of the process), this is a no-op. Only the view's data
/// pointer is queried (one allocation holds a whole view).
/// `operand` names the operand, e.g. "input 1 of add (f32[1025])".
inline void check_host_pointer(const void* p, const std::string& operand) {
  if (p == nullptr) return;
  const auto& query = detail::driver_pointer_query::instance();
  if (query.attribute == nullptr) return;
  const auto address = reinterpret_cast<CUdeviceptr>(p);
  unsigned type = 0;  // 0: memory CUDA does not know (pageable host memory)
  int managed = 0;
  CUpointer_attribute names[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
  void* values[] = {&type, &managed};
  if (query.attribute(2, names, values, address) != CUDA_SUCCESS) return;
  if (type != CU_MEMORYTYPE_DEVICE || managed != 0) return;
  throw device_error("fusor: run(host): " + operand +
                     " is CUDA device memory; the host executor needs host, pinned or managed memory "
                     "(use device_view and cuda(stream), or copy the data to the host)");
}

}  // namespace exec
}  // namespace fusor
