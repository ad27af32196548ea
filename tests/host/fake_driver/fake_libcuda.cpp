// A stand-in for the CUDA driver (built as libcuda.so.1 in its own folder, put
// on LD_LIBRARY_PATH by test_memory_space only), so the host executor's check
// for device memory (exec/memory_space.hpp, which dlopens libcuda.so.1) runs on
// machines without a GPU. It implements the two entry points the check uses.
// Which addresses count as device or managed memory is set by the test through
// fake_cuda_set_range; every other address answers like pageable host memory
// does on a real driver's cuPointerGetAttributes: CUDA_SUCCESS with the
// attributes left at their defaults (memory type 0, not managed).
#include <cuda.h>

#include <cstdint>

namespace {
struct range {
  std::uintptr_t first = 0, last = 0;  // [first, last)
  bool contains(CUdeviceptr p) const { return std::uintptr_t(p) >= first && std::uintptr_t(p) < last; }
};
range g_device, g_managed;
long g_queries = 0;
}  // namespace

extern "C" {

/// Test hook: marks [p, p + bytes) as device memory (managed == 0) or managed memory (managed != 0).
__attribute__((visibility("default"))) void fake_cuda_set_range(const void* p, unsigned long bytes, int managed) {
  range& r = managed != 0 ? g_managed : g_device;
  r.first = reinterpret_cast<std::uintptr_t>(p);
  r.last = r.first + bytes;
}

/// Test hook: cuPointerGetAttributes calls so far (proves the check ran).
__attribute__((visibility("default"))) long fake_cuda_queries() { return g_queries; }

__attribute__((visibility("default"))) CUresult cuInit(unsigned) { return CUDA_SUCCESS; }

__attribute__((visibility("default"))) CUresult cuPointerGetAttributes(unsigned count, CUpointer_attribute* attributes,
                                                                       void** data, CUdeviceptr ptr) {
  ++g_queries;
  const bool device = g_device.contains(ptr), managed = g_managed.contains(ptr);
  for (unsigned i = 0; i < count; ++i) {
    switch (attributes[i]) {
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned*>(data[i]) = (device || managed) ? unsigned(CU_MEMORYTYPE_DEVICE) : 0u;
        break;
      case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<int*>(data[i]) = managed ? 1 : 0; break;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
