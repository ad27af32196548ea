#pragma once
/// @file exec/run_state.hpp
/// What one run() on one thread keeps while it executes a plan: the kernels
/// it launched (counted per run, so a shared executor's run_result stays
/// right under concurrency) and the buffers of its rehearsal.
///
/// Why a rehearsal: a plan with several kernels allocates temporaries on the
/// way (producer groups, split-row partials, prepared weights). If the n-th
/// allocation failed after an earlier kernel had written an output, the
/// caller would see a half-written result. run() therefore walks the plan
/// twice: the rehearsal makes every allocation and launches nothing; the real
/// pass takes the same buffers back in the same order (the walk is a pure
/// function of the plan, the shapes and the prepared-weights sites, which the
/// rehearsal also resolves) and launches. Only the rehearsal can fail to
/// allocate, and it writes nothing.
#include <fusor/core/error.hpp>
#include <fusor/core/shape.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fusor::exec {

/// The state of the run() executing on this thread (see the file comment).
struct run_state {
  bool rehearsal = false;     ///< allocate, launch nothing
  std::size_t launched = 0;   ///< kernels this run launched
  struct reserved_buffer {
    std::size_t bytes;
    std::shared_ptr<void> buffer;
  };
  std::vector<reserved_buffer> reserved;  ///< the rehearsal's buffers, in order
  std::size_t next = 0;                   ///< the next one the real pass takes
  /// One entry per prepared-weights site, in order: the cache entry found by
  /// the rehearsal (owning, so a concurrent insert or clear_prepared() cannot
  /// free it), or null where the real pass computes the weights itself.
  std::vector<std::shared_ptr<void>> prepared;
  std::size_t next_prepared = 0;
};

/// The run_state of the run() on this thread, or null outside run().
inline run_state*& current_run() noexcept {
  static thread_local run_state* state = nullptr;
  return state;
}

/// Makes `s` the current run_state for its lifetime (nested runs restore).
class run_scope {
 public:
  explicit run_scope(run_state& s) noexcept : previous_(current_run()) { current_run() = &s; }
  ~run_scope() { current_run() = previous_; }
  run_scope(const run_scope&) = delete;
  run_scope& operator=(const run_scope&) = delete;

 private:
  run_state* previous_;
};

/// True while run() rehearses a plan on this thread: launch functions return
/// at once.
inline bool rehearsing() noexcept {
  const run_state* s = current_run();
  return s != nullptr && s->rehearsal;
}

/// Counts n kernels launched on device executor ex (atomic) and in this
/// thread's run; nothing while rehearsing. Every launch function calls it.
template <class Ex>
void count_launches(const Ex& ex, std::size_t n = 1) {
  if (rehearsing()) return;
  ex.launches += n;
  if (run_state* s = current_run()) s->launched += n;
}

/// The allocations left before an injected failure on this thread (0: none
/// injected). See fusor::testing::fail_allocation.
inline long& allocation_countdown() noexcept {
  static thread_local long n = 0;
  return n;
}

/// True when the injected failure is due at this allocation.
inline bool injected_allocation_failure() noexcept {
  long& n = allocation_countdown();
  if (n <= 0) return false;
  return --n == 0;
}

/// Element count of a temporary of shape s; an overflow of int64 is a
/// shape_error naming what() (the op, the operand and the shape).
template <int R, class What>
index_t temporary_elements(const shape<R>& s, const What& what) {
  try {
    return element_count<R>(s, "temporary");
  } catch (const shape_error&) {
    throw shape_error("fusor: " + what() + ": the element count overflows int64");
  }
}

/// a * b for a workspace size; an overflow of int64 is a shape_error naming what().
template <class What>
index_t checked_product(index_t a, index_t b, const What& what) {
  if (a < 0 || b < 0 || (a != 0 && b > INT64_MAX / a))
    throw shape_error("fusor: " + what() + ": the element count " + std::to_string(a) + " * " + std::to_string(b) +
                      " overflows int64");
  return a * b;
}

/// Bytes of n elements of T (at least one element, so every temporary has an
/// address); a count whose bytes pass PTRDIFF_MAX (or wrap size_t) is a
/// shape_error naming what(), raised before anything is allocated.
template <class T, class What>
std::size_t temporary_bytes(index_t n, const What& what) {
  if (n < 0) throw shape_error("fusor: " + what() + ": negative element count " + std::to_string(n));
  const std::size_t count = std::size_t(n > 0 ? n : 1);
  if (count > std::size_t(PTRDIFF_MAX) / sizeof(T))
    throw shape_error("fusor: " + what() + ": " + std::to_string(n) + " elements of " + std::to_string(sizeof(T)) +
                      " bytes overflow the byte count (more than PTRDIFF_MAX bytes)");
  return count * sizeof(T);
}

/// A buffer of `bytes` through this thread's run: the rehearsal records what
/// alloc() returns; the real pass takes the recorded buffer of the same size
/// back (alloc() only when none is left, which a deterministic plan walk
/// never needs).
template <class T, class Alloc>
std::shared_ptr<T> run_allocation(std::size_t bytes, Alloc&& alloc) {
  run_state* s = current_run();
  if (s != nullptr && !s->rehearsal && s->next < s->reserved.size() && s->reserved[s->next].bytes == bytes)
    return std::static_pointer_cast<T>(s->reserved[s->next++].buffer);
  std::shared_ptr<T> p = alloc();
  if (s != nullptr && s->rehearsal) s->reserved.push_back({bytes, p});
  return p;
}

}  // namespace fusor::exec

namespace fusor::testing {
/// Makes the n-th allocation of a temporary from now on this thread fail
/// with allocation_error (n >= 1; 0 turns it off). For tests of the promise
/// that a failed allocation leaves outputs untouched.
inline void fail_allocation(long n) noexcept { exec::allocation_countdown() = n; }
}  // namespace fusor::testing
