#pragma once
/// @file exec/host_backend.hpp
/// Launches kernels on the host: the same FUSOR_HOST_DEVICE kernel bodies the
/// CUDA path runs, split into chunks over OpenMP threads; elementwise groups
/// evaluate packs of elements (exec/host_packets.hpp).
#include <fusor/exec/executors.hpp>
#include <fusor/exec/host_packets.hpp>
#include <fusor/exec/run_state.hpp>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace fusor::exec {

/// Elements per host work item: large enough to amortize scheduling, a
/// multiple of every vector width.
inline constexpr index_t host_chunk = index_t(1) << 15;

/// Runs an elementwise kernel over all its elements on the host.
template <class K>
void launch(const host_executor& ex, const K& k, const std::string& /*name*/) {
  count_launches(ex);
  if (rehearsing()) return;
  const index_t n = k.size;
  const index_t chunks = (n + host_chunk - 1) / host_chunk;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (chunks > 1) num_threads(ex.threads > 0 ? ex.threads : omp_get_max_threads())
#endif
  for (index_t c = 0; c < chunks; ++c) {
    const K local = k;  // a thread-local copy: the compiler keeps its fields in registers
    run_host_range(local, c * host_chunk, std::min(n, (c + 1) * host_chunk));
  }
}

/// A host temporary of n elements of T (uninitialized, 64-byte aligned),
/// taken from this run's rehearsal when there is one (exec/run_state.hpp).
/// what() names the op, the operand and the shape for the errors.
/// @throws shape_error      the byte count overflows
/// @throws allocation_error operator new failed (std::bad_alloc never escapes)
template <class T, class What>
std::shared_ptr<T> allocate(const host_executor&, index_t n, const What& what) {
  const std::size_t bytes = temporary_bytes<T>(n, what);
  return run_allocation<T>(bytes, [&] {
    try {
      if (injected_allocation_failure()) throw std::bad_alloc();
      void* p = ::operator new(bytes, std::align_val_t(64));
      // (if the control block cannot be allocated, shared_ptr frees p itself)
      return std::shared_ptr<T>(static_cast<T*>(p), [](T* q) { ::operator delete(q, std::align_val_t(64)); });
    } catch (const std::bad_alloc&) {
      throw allocation_error("fusor: " + what() + ": cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    }
  });
}

}  // namespace fusor::exec
