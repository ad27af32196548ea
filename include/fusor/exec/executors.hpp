#pragma once
/// @file exec/executors.hpp
/// Executors: where and how a planned expression runs.
///  - host():          fused kernels on the CPU (OpenMP threads when enabled).
///  - cuda(stream):    fused kernels on a CUDA stream (nvcc translation units).
///  - unfused(inner):  every op its own kernel into temporaries, on inner's
///                     device: the numerical reference in tests and the
///                     baseline in benchmarks.
/// Every executor counts the kernels it launches (`launches`), so tests can
/// assert how many kernels an expression really took.
#include <fusor/plan/plan.hpp>

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace fusor {

/// A count of launched kernels that several threads may bump at once
/// (atomic). Copies take the value, as a plain integer would; it converts to
/// std::size_t wherever a number is expected.
class launch_counter {
 public:
  launch_counter() = default;
  launch_counter(const launch_counter& o) noexcept : n_(o.n_.load(std::memory_order_relaxed)) {}
  launch_counter& operator=(const launch_counter& o) noexcept {
    n_.store(o.n_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }
  launch_counter& operator=(std::size_t v) noexcept {
    n_.store(v, std::memory_order_relaxed);
    return *this;
  }
  launch_counter& operator+=(std::size_t k) noexcept {
    n_.fetch_add(k, std::memory_order_relaxed);
    return *this;
  }
  launch_counter& operator++() noexcept { return *this += 1; }
  operator std::size_t() const noexcept { return n_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::size_t> n_{0};
};

/// Results of preparation kernels (batch-norm folded into conv weights),
/// keyed by the prepared expression's type (dtypes, static extents), its op
/// attributes (bit for bit) and the addresses, shapes, strides and scalar
/// values it reads. Shared by copies of an executor, safe to use from
/// several threads: a run holds an owning reference to every entry it reads,
/// so an insert by another thread or clear_prepared() never frees weights a
/// running kernel reads. The key holds addresses, not contents: after
/// changing weights in place, call the executor's clear_prepared().
struct prepared_cache {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<void>> entries;
};

/// Which inner loop the host runs for GEMM and implicit-GEMM conv tiles.
enum class host_gemm_engine : int {
  /// OpenBLAS sgemm/dgemm per output block, fusor's prologue packed before
  /// and its epilogue applied to the block while it is in cache
  /// (exec/host_gemm.hpp), when fusor was built with OpenBLAS
  /// (FUSOR_WITH_OPENBLAS); otherwise device_twin.
  automatic = 0,
  /// The host twin of the CUDA tile algorithm (kernels/contraction.hpp):
  /// the device's multiply-adds in the device's order, for tests that check
  /// the device algorithm on the host. Slow.
  device_twin = 1,
};

/// How the host runs the row kernels (reductions, softmax, norms).
enum class host_row_engine : int {
  /// Packs of W elements with SIMD math (kernels/parts/host_rows.hpp): each
  /// row reduced in W lanes, then a pairwise merge. In nvcc translation
  /// units: device_twin.
  automatic = 0,
  /// The device's algorithm (32 or 256 lanes per row, one element at a
  /// time): tests that check the device's order on the host. Slow.
  device_twin = 1,
};

/// Runs fused kernels on the host. `threads` = 0 uses OpenMP's default.
/// An executor and its copies may be used by several threads at once
/// (docs/guarantees.md, "Threads").
struct host_executor {
  using space = host_space;
  using policy = host_policy;
  int threads = 0;
  mutable launch_counter launches{};  ///< kernels launched through this object so far (atomic; a copy counts on its own)
  std::shared_ptr<prepared_cache> prepared = std::make_shared<prepared_cache>();
  /// Keys per K/V tile of the host attention kernel (1..32; 0 = 32, the
  /// device's). Only the summation order changes; tests use it to check the
  /// flash algorithm at several tile sizes.
  int attention_key_tile = 0;
  /// The GEMM inner loop (see host_gemm_engine).
  host_gemm_engine gemm_engine = host_gemm_engine::automatic;
  /// The row kernels' algorithm (see host_row_engine).
  host_row_engine row_engine = host_row_engine::automatic;
  /// Forgets prepared (folded) weights: call after changing weights in place.
  void clear_prepared() const {
    std::lock_guard<std::mutex> lock(prepared->mutex);
    prepared->entries.clear();
  }
};

/// Runs every op as its own kernel, with temporaries in compute precision
/// (fp32 for 16-bit inputs), on Inner's device.
template <class Inner>
struct unfused_executor {
  using space = typename Inner::space;
  using policy = unfused_policy;
  Inner inner;
  mutable launch_counter launches{};  ///< kernels launched so far
};

/// Inner executor planning with Policy instead of its own (another device
/// model, user rules): `fusor::with_policy<fusor::with_rules<MyRule>>(fusor::host())`.
template <class Policy, class Inner>
struct policy_executor {
  using space = typename Inner::space;
  using policy = Policy;
  Inner inner;
  mutable launch_counter launches{};  ///< kernels launched so far
};
template <class Policy, class Inner>
policy_executor<Policy, Inner> with_policy(Inner inner) {
  return {inner};
}

/// What run() accepts as its executor: host(), cuda(stream), unfused(...),
/// with_policy<P>(...) (a memory space, a planning policy, a launch count).
template <class Ex>
concept executor = requires(const Ex& ex) {
  typename Ex::space;
  typename Ex::policy;
  ex.launches;
};

/// Host executor with an optional OpenMP thread count (0 = default).
inline host_executor host(int threads = 0) { return {threads}; }

/// The unfused reference executor on top of `inner` (host() by default).
template <class Inner = host_executor>
unfused_executor<Inner> unfused(Inner inner = {}) {
  return {inner};
}

}  // namespace fusor
