// PTX inspection (ctest ptx.layout): the device-side layout of elementwise
// kernel objects. probe<Id> writes sizeof(K) and the byte offset of every
// member (layout_probe.hpp's walk_kernel) to o[0], o[1], ...; nvcc folds
// them to constants, so the PTX holds the device layout, which
// check_layout.py compares with what layout_host prints for the host.
// Compiled only to PTX; the host function is never called.
#include "layout_probe.hpp"

template <int Id, class K>
__global__ void layout_probe_kernel(K k, long long* o) {
  const char* base = reinterpret_cast<const char*>(&k);
  int i = 0;
  o[i++] = static_cast<long long>(sizeof(K));
  auto record = [&](const void* p) { o[i++] = static_cast<const char*>(p) - base; };
  layout_probe::walk_kernel(k, record);
}

void fusor_ptx_layout(long long* o) {
  layout_probe::for_each_kernel([&](auto id, const auto& k) {
    layout_probe_kernel<decltype(id)::value><<<1, 1>>>(k, o);
  });
}
