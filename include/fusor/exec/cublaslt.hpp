#pragma once
/// @file exec/cublaslt.hpp
/// cuBLASLt for the CUDA GEMM engine (exec/cuda_gemm.hpp): the library loaded
/// at run time, one handle per device, matmul descriptors and the algorithm
/// cache. Only in nvcc translation units with FUSOR_WITH_CUBLASLT (default 1).
///
/// Why dlopen: fusor is header-only and links nothing; a program built
/// without cuBLASLt, or run where it is absent, still runs (the tile
/// kernel). The library of the same major version as the cuBLAS headers
/// fusor was compiled with is loaded (libcublasLt.so.<CUBLAS_VER_MAJOR>);
/// another major's ABI is not assumed.
///
/// Threads and streams: one handle per device, shared by every thread and
/// stream (cuBLAS is thread-safe with a shared handle; a cuBLASLt handle has
/// no per-stream state, the stream is an argument of each call); every call
/// gets its own stream-ordered workspace, which also keeps results
/// reproducible across concurrent streams (cuBLAS documentation, "Thread
/// Safety" and "Results Reproducibility").
#include <fusor/exec/cuda_backend.hpp>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

/// FUSOR_WITH_CUBLASLT (default 1 in nvcc translation units): let the CUDA
/// executor run GEMM mainloops with cuBLASLt (loaded at run time). 0 compiles
/// the route out (every CUDA GEMM runs fusor's tile kernel).
#if !defined(FUSOR_WITH_CUBLASLT)
#  define FUSOR_WITH_CUBLASLT 1
#endif
#if FUSOR_WITH_CUBLASLT && defined(__CUDACC__)
#  include <cublasLt.h>
#  include <dlfcn.h>
#  define FUSOR_CUDA_GEMM_ENGINE 1
#else
#  define FUSOR_CUDA_GEMM_ENGINE 0
#endif

namespace fusor::exec {

/// cuBLASLt's workspace per call (NVIDIA recommends 32 MiB on Hopper).
inline constexpr std::size_t cuda_gemm_workspace_bytes = std::size_t(32) << 20;

#if FUSOR_CUDA_GEMM_ENGINE
namespace cuda_gemm_detail {

/// cuBLASLt's entry points, from dlopen (null `matmul`: not available).
struct lt_api {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  decltype(&cublasLtGetStatusString) status_string = nullptr;

  /// Calls f(member, symbol name) for every entry point: the one list that
  /// loading and the all-found check walk.
  template <class F>
  void for_each_entry(F&& f) {
    f(create, "cublasLtCreate");
    f(desc_create, "cublasLtMatmulDescCreate");
    f(desc_destroy, "cublasLtMatmulDescDestroy");
    f(desc_set, "cublasLtMatmulDescSetAttribute");
    f(layout_create, "cublasLtMatrixLayoutCreate");
    f(layout_destroy, "cublasLtMatrixLayoutDestroy");
    f(layout_set, "cublasLtMatrixLayoutSetAttribute");
    f(pref_create, "cublasLtMatmulPreferenceCreate");
    f(pref_destroy, "cublasLtMatmulPreferenceDestroy");
    f(pref_set, "cublasLtMatmulPreferenceSetAttribute");
    f(heuristic, "cublasLtMatmulAlgoGetHeuristic");
    f(status_string, "cublasLtGetStatusString");
    f(matmul, "cublasLtMatmul");
  }

  /// The process's one copy (loaded on first use; stays loaded). The
  /// environment variable FUSOR_CUBLASLT=0 leaves it unloaded (every CUDA
  /// GEMM then runs fusor's tiles, as with gemm_engine = fusor_tiles).
  /// `matmul` is null unless every entry point was found.
  static const lt_api& get() {
    static const lt_api api = [] {
      lt_api a;
      if (const char* v = std::getenv("FUSOR_CUBLASLT"); v != nullptr && std::string(v) == "0") return a;
      // The major version of the headers fusor was compiled with: another
      // major's ABI is not assumed.
      const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
      void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) return a;
      bool all = true;
      a.for_each_entry([&](auto& f, const char* s) {
        f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(lib, s));
        all = all && f != nullptr;
      });
      if (!all) a.matmul = nullptr;
      return a;
    }();
    return api;
  }
};

inline void check_lt(const lt_api& api, cublasStatus_t s, const std::string& what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw device_error("fusor: " + what + ": cuBLASLt: " + (api.status_string ? api.status_string(s) : "error") +
                       " (" + std::to_string(int(s)) + ")");
}

/// One cuBLASLt handle per device (created on first use; kept for the life
/// of the process: destroying it at exit could run after CUDA's teardown).
inline cublasLtHandle_t lt_handle(const lt_api& api, int device) {
  static std::mutex m;
  static std::map<int, cublasLtHandle_t> handles;
  std::lock_guard<std::mutex> lock(m);
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasLtHandle_t h = nullptr;
  check_lt(api, api.create(&h), "cublasLtCreate");
  handles.emplace(device, h);
  return h;
}

template <class S>
constexpr cudaDataType_t cuda_type() {
  if constexpr (std::is_same_v<S, float>) return CUDA_R_32F;
  else if constexpr (std::is_same_v<S, double>) return CUDA_R_64F;
  else if constexpr (std::is_same_v<S, __half>) return CUDA_R_16F;
  else return CUDA_R_16BF;
}

/// The largest power of two (at most 16) dividing a byte offset (0: 16).
inline std::uint32_t alignment_of_bytes(std::int64_t bytes) {
  const std::uint64_t v = bytes < 0 ? std::uint64_t(-bytes) : std::uint64_t(bytes);
  std::uint32_t a = 16;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}
/// The same for a pointer: the alignment cuBLASLt may assume (a view may
/// start anywhere in its buffer).
inline std::uint32_t alignment_of(const void* p) {
  return alignment_of_bytes(std::int64_t(reinterpret_cast<std::uintptr_t>(p) % 16));
}

/// One matmul's shape, layouts and alignments: the key of the algorithm cache.
struct matmul_key {
  int device;
  cudaDataType_t storage, compute_type;
  bool trans_a, trans_b;  // cuBLASLt's (column-major) op(A), op(B)
  std::int64_t m, n, k, lda, ldb, ldc;
  std::uint32_t align_a, align_b;
  /// A strided-batched matmul of `batches` (1: one product); elements between
  /// consecutive batches of A, B (0: the same matrix for all) and C.
  std::int64_t batches, stride_a, stride_b, stride_c;
  auto tie() const {
    return std::tie(device, storage, compute_type, trans_a, trans_b, m, n, k, lda, ldb, ldc, align_a, align_b, batches,
                    stride_a, stride_b, stride_c);
  }
  bool operator<(const matmul_key& o) const { return tie() < o.tie(); }
};

/// RAII holders of cuBLASLt descriptors.
struct lt_matmul {
  const lt_api& api;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  ~lt_matmul() {
    if (c) api.layout_destroy(c);
    if (b) api.layout_destroy(b);
    if (a) api.layout_destroy(a);
    if (desc) api.desc_destroy(desc);
  }
  lt_matmul(const lt_api& x) : api(x) {}
  lt_matmul(const lt_matmul&) = delete;
  lt_matmul& operator=(const lt_matmul&) = delete;
};

/// Describes key's matmul: D (m x n, column-major, ldc, compute type) =
/// op(A) op(B), A and B of the storage type.
inline void describe(const lt_api& api, const matmul_key& key, lt_matmul& mm) {
  const bool f64 = key.compute_type == CUDA_R_64F;
  check_lt(api, api.desc_create(&mm.desc, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, key.compute_type),
           "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_lt(api, api.desc_set(mm.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "cublasLtMatmulDescSetAttribute");
  check_lt(api, api.desc_set(mm.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "cublasLtMatmulDescSetAttribute");
  // stored shapes: op(A) is m x k, op(B) is k x n
  check_lt(api,
           api.layout_create(&mm.a, key.storage, std::uint64_t(key.trans_a ? key.k : key.m),
                             std::uint64_t(key.trans_a ? key.m : key.k), key.lda),
           "cublasLtMatrixLayoutCreate");
  check_lt(api,
           api.layout_create(&mm.b, key.storage, std::uint64_t(key.trans_b ? key.n : key.k),
                             std::uint64_t(key.trans_b ? key.k : key.n), key.ldb),
           "cublasLtMatrixLayoutCreate");
  check_lt(api, api.layout_create(&mm.c, key.compute_type, std::uint64_t(key.m), std::uint64_t(key.n), key.ldc),
           "cublasLtMatrixLayoutCreate");
  if (key.batches > 1) {
    const std::int32_t count = std::int32_t(key.batches);
    const std::pair<cublasLtMatrixLayout_t, std::int64_t> layouts[] = {
        {mm.a, key.stride_a}, {mm.b, key.stride_b}, {mm.c, key.stride_c}};
    for (const auto& [layout, stride] : layouts) {
      check_lt(api, api.layout_set(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
               "cublasLtMatrixLayoutSetAttribute");
      check_lt(api, api.layout_set(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
               "cublasLtMatrixLayoutSetAttribute");
    }
  }
}

/// cuBLASLt's first heuristic algorithm for key (cached per key); false
/// when it has none (the caller runs fusor's tiles).
inline bool find_algorithm(const lt_api& api, cublasLtHandle_t h, const matmul_key& key, cublasLtMatmulAlgo_t& algo) {
  static std::mutex m;
  static std::map<matmul_key, std::pair<bool, cublasLtMatmulAlgo_t>> cache;
  {
    std::lock_guard<std::mutex> lock(m);
    auto it = cache.find(key);
    if (it != cache.end()) {
      algo = it->second.second;
      return it->second.first;
    }
  }
  lt_matmul mm(api);
  describe(api, key, mm);
  cublasLtMatmulPreference_t pref = nullptr;
  check_lt(api, api.pref_create(&pref), "cublasLtMatmulPreferenceCreate");
  struct pref_guard {
    const lt_api& api;
    cublasLtMatmulPreference_t p;
    ~pref_guard() { api.pref_destroy(p); }
  } guard{api, pref};
  const std::uint64_t ws = cuda_gemm_workspace_bytes;
  check_lt(api, api.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
           "cublasLtMatmulPreferenceSetAttribute");
  const std::uint32_t aa = key.align_a, ab = key.align_b, ac = 16;
  check_lt(api, api.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof(aa)),
           "cublasLtMatmulPreferenceSetAttribute");
  check_lt(api, api.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof(ab)),
           "cublasLtMatmulPreferenceSetAttribute");
  check_lt(api, api.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof(ac)),
           "cublasLtMatmulPreferenceSetAttribute");
  check_lt(api, api.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof(ac)),
           "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s = api.heuristic(h, mm.desc, mm.a, mm.b, mm.c, mm.c, pref, 1, &result, &found);
  const bool ok = s == CUBLAS_STATUS_SUCCESS && found > 0;
  if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED) check_lt(api, s, "cublasLtMatmulAlgoGetHeuristic");
  std::lock_guard<std::mutex> lock(m);
  cache[key] = {ok, result.algo};
  algo = result.algo;
  return ok;
}


}  // namespace cuda_gemm_detail
#endif  // FUSOR_CUDA_GEMM_ENGINE

}  // namespace fusor::exec
