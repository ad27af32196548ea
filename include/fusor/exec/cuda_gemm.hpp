#pragma once
/// @file exec/cuda_gemm.hpp
/// The CUDA GEMM engine under fused epilogues: cuBLASLt owns the mainloop,
/// fusor owns the epilogue ("fusor owns the fusion; proven engines own the
/// inner loops"; the host counterpart is exec/host_gemm.hpp).
///
/// For a contraction kernel over a matmul / linear / gemm problem whose A and
/// B are plain views of one storage type S (f32, f64, f16, bf16) with a unit
/// stride along one of their two matrix dims, per batch b and per panel of
/// output rows:
///  1. cublasLtMatmul computes the panel's accumulators, A x B, into a
///     device buffer of the compute type (fp32 for f32/f16/bf16, fp64 for
///     f64; CUBLAS_COMPUTE_32F / _64F: no TF32, no 16-bit accumulation);
///  2. fusor's epilogue kernel (gemm_engine_epilogue) reads each accumulator
///     once and stores `ep.at(idx, acc)` (bias, activation, residual, batch
///     norm, the dtype conversion) through the group's sink.
/// A panel is at most cuda_gemm_panel_bytes of accumulators (32 MiB, within
/// the L2 of an H100, 50 MiB, or an H200, 60 MiB), so the epilogue mostly reads what the
/// GEMM has just written from L2: the accumulators make one round trip to
/// L2, not to HBM, and the output is written once, in its own dtype. The
/// group stays one node of the plan (kernel_count counts it once).
///
/// Numerics: each element is one cuBLASLt dot product over all of K in the
/// compute type, then the same epilogue code as the tile path; fused and
/// unfused runs make the same engine calls for the same problem. Against the
/// host (OpenBLAS) they agree to the rounding of a K-term sum.
///
/// cuBLASLt is loaded at run time (exec/cublaslt.hpp), so fusor stays
/// header-only and links nothing: where
/// the library is absent, the problem does not qualify (operands with a
/// prologue, conv2d, non-unit strides on both dims, a 16-bit problem with
/// mixed storage types), FUSOR_WITH_CUBLASLT is 0, or
/// cuda_executor::gemm_engine is fusor_tiles, the CUDA tile kernel of
/// kernels/contraction.hpp runs instead.
#include <fusor/exec/cublaslt.hpp>
#include <fusor/exec/host_gemm.hpp>
#include <fusor/kernels/contraction.hpp>

#include <string>

namespace fusor::exec {

/// Accumulator bytes of one engine panel (rows x N of the compute type) at
/// most; a panel has at least cuda_gemm_min_panel_rows rows.
inline constexpr std::size_t cuda_gemm_panel_bytes = std::size_t(32) << 20;
/// Rows of a panel at least (so that the GEMM of one panel fills the GPU).
inline constexpr index_t cuda_gemm_min_panel_rows = 256;

/// The name of the engine a CUDA contraction kernel runs with `ex`, for
/// explain. (The same text in every translation unit, g++ or nvcc: no
/// macro-dependent body, no ODR violation.)
inline const char* cuda_gemm_engine_name(const cuda_executor& ex) {
  if (ex.gemm_engine == cuda_gemm_engine::fusor_tiles) return "fusor tiles (gemm_engine = fusor_tiles)";
  return "cuBLASLt per row panel + fusor's epilogue kernel where the operands are plain views and libcublasLt "
         "loads (FUSOR_WITH_CUBLASLT, FUSOR_CUBLASLT); else fusor tiles";
}

namespace cuda_gemm_detail {

/// The storage type of a plain single-view operand, or void.
template <class Operand>
struct view_storage {
  using type = void;
};
template <int R, class S, class Storage>
struct view_storage<kernels::plain_operand<kernels::k_operand<R, fusor::tuple<kernels::k_source<S, R>>, kernels::k_input<0>>,
                                           Storage>> {
  using type = S;
};

template <class P>
struct gemm_problem_traits {
  static constexpr bool is_gemm = false;
};
template <int RO, int NB, class A, class B, class Ep, class Sink>
struct gemm_problem_traits<kernels::gemm_problem<RO, NB, A, B, Ep, Sink>> {
  static constexpr bool is_gemm = true;
  using S = typename view_storage<A>::type;
  using SB = typename view_storage<B>::type;
};

/// Does problem P qualify by its type: a gemm_problem over plain views of one
/// storage type the engine takes, accumulating in its compute type?
template <class P>
constexpr bool engine_problem() {
  using G = gemm_problem_traits<P>;
  if constexpr (!G::is_gemm) {
    return false;
  } else {
    using S = typename G::S;
    using T = typename P::T;
    if constexpr (!std::is_same_v<S, typename G::SB>) return false;
    else if constexpr (std::is_same_v<S, float> || std::is_same_v<S, __half> || std::is_same_v<S, __nv_bfloat16>)
      return std::is_same_v<T, float>;
    else if constexpr (std::is_same_v<S, double>) return std::is_same_v<T, double>;
    else return false;
  }
}

/// Every column part of P (the Q/K/V projections of a multi-output GEMM, or
/// P itself) qualifies.
template <class P>
constexpr bool engine_parts() {
  if constexpr (host_gemm_detail::column_parts_v<P> == 1) {
    return engine_problem<P>();
  } else {
    return []<int... Q>(std::integer_sequence<int, Q...>) {
      return (engine_problem<std::remove_cvref_t<decltype(std::declval<const P&>().template part<Q>())>>() && ...);
    }(std::make_integer_sequence<int, host_gemm_detail::column_parts_v<P>>{});
  }
}

#if FUSOR_CUDA_GEMM_ENGINE
/// The epilogue over one panel: element (i, j) of the rows x N panel of
/// accumulators (row-major, ld N) is stored as p.store(b, i0 + i, j, acc).
template <class P, class T>
__global__ void __launch_bounds__(kernels::elementwise_threads)
    gemm_engine_epilogue(P p, const T* acc, index_t b, index_t i0, index_t rows) {
  const index_t n = p.N, total = rows * n;
  for (index_t e = index_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += index_t(gridDim.x) * blockDim.x) {
    const index_t i = e / n;
    p.store(b, i0 + i, e - i * n, acc[e]);
  }
}

/// One part's plan: the views' layouts for cuBLASLt, or unusable.
struct part_layout {
  bool usable = false;
  host_gemm_detail::blas_layout la, lb;
};

template <class P>
part_layout layout_part(const P& p) {
  using S = typename gemm_problem_traits<P>::S;
  part_layout r;
  if (p.M <= 0 || p.N <= 0 || p.K <= 0 || p.batches <= 0) return r;
  r.la = host_gemm_detail::layout_of(p.template a_matrix<S>(0), p.M, p.K);
  r.lb = host_gemm_detail::layout_of(p.template b_matrix<S>(0), p.K, p.N);
  r.usable = r.la.usable && r.lb.usable;
  return r;
}

/// The matmul of rows [i0, i0 + rows) of batch b of part p. Row-major C
/// (rows x N) = A (rows x K) B (K x N) is column-major C^T (N x rows) =
/// B^T A^T: cuBLASLt's A is our B, its B our A. B stored row-major
/// ((k, j) at k ld + j) is column-major N x K: op N; transposed (linear's W)
/// it is column-major K x N: op T. A row-major is column-major K x rows:
/// op N; transposed (gemm's trans_a) it is column-major rows x K: op T.
template <class P>
matmul_key panel_key(int device, const P& p, const part_layout& lay, index_t b, index_t i0, index_t rows,
                     const void*& a_ptr, const void*& b_ptr) {
  using S = typename gemm_problem_traits<P>::S;
  const auto am = p.template a_matrix<S>(b);
  const auto bm = p.template b_matrix<S>(b);
  const S* a = am.data + (lay.la.transposed ? i0 : i0 * std::int64_t(lay.la.ld));
  a_ptr = a;
  b_ptr = bm.data;
  return matmul_key{device,    cuda_type<S>(), cuda_type<typename P::T>(), lay.lb.transposed, lay.la.transposed,
                    p.N,       rows,           p.K,                         lay.lb.ld,         lay.la.ld,
                    p.N,       alignment_of(bm.data), alignment_of(a)};
}

/// Calls f(b, i0, rows) for every panel of part p.
template <class P, class F>
void for_each_panel(const P& p, index_t panel_rows, F&& f) {
  for (index_t b = 0; b < p.batches; ++b)
    for (index_t i0 = 0; i0 < p.M; i0 += panel_rows) f(b, i0, std::min(panel_rows, p.M - i0));
}

/// Has cuBLASLt an algorithm for every panel of part p? (Asked before
/// anything is launched, so that a problem it cannot run goes to the tiles
/// whole, and run_part cannot fail half-way for want of one.)
template <class P>
bool has_algorithms(const lt_api& api, cublasLtHandle_t h, int device, const P& p, const part_layout& lay,
                    index_t panel_rows) {
  bool ok = true;
  for_each_panel(p, panel_rows, [&](index_t b, index_t i0, index_t rows) {
    if (!ok) return;
    const void *a = nullptr, *bb = nullptr;
    cublasLtMatmulAlgo_t algo{};
    ok = find_algorithm(api, h, panel_key(device, p, lay, b, i0, rows, a, bb), algo);
  });
  return ok;
}

/// Runs part p (batches, panels of rows) with cuBLASLt + the epilogue
/// kernel, accumulators in acc (panel_rows x p.N), workspace ws.
template <class P>
void run_part(const cuda_executor& ex, const lt_api& api, cublasLtHandle_t h, int device, int sms, const P& p,
              const part_layout& lay, index_t panel_rows, typename P::T* acc, void* ws) {
  using T = typename P::T;
  const T one = T(1), zero = T(0);
  for_each_panel(p, panel_rows, [&](index_t b, index_t i0, index_t rows) {
    const void *a = nullptr, *bb = nullptr;
    const matmul_key key = panel_key(device, p, lay, b, i0, rows, a, bb);
    cublasLtMatmulAlgo_t algo{};
    if (!find_algorithm(api, h, key, algo))  // (has_algorithms said yes: cached)
      throw device_error("fusor: internal: CUDA GEMM engine: cuBLASLt lost its algorithm");
    lt_matmul mm(api);
    describe(api, key, mm);
    check_lt(api,
             api.matmul(h, mm.desc, &one, bb, mm.a, a, mm.b, &zero, acc, mm.c, acc, mm.c, &algo, ws,
                        cuda_gemm_workspace_bytes, ex.stream),
             "cublasLtMatmul");
    const index_t blocks = kernels::grid_stride_blocks(rows * p.N, sms);
    gemm_engine_epilogue<<<unsigned(blocks), kernels::elementwise_threads, 0, ex.stream>>>(p, acc, b, i0, rows);
    check_cuda(cudaGetLastError(), "launch of kernel gemm_engine_epilogue (the CUDA GEMM engine's epilogue)");
  });
}
#endif  // FUSOR_CUDA_GEMM_ENGINE

}  // namespace cuda_gemm_detail

/// Runs the tile kernel k (kernels::gemm_kernel) with the CUDA GEMM engine;
/// false when the engine does not apply (see the file comment) and the
/// caller launches the tile kernel. In a rehearsal (exec/run_state.hpp) it
/// allocates its buffers and launches nothing.
/// @throws allocation_error the panel or the workspace cannot be allocated
/// @throws device_error     cuBLASLt or the epilogue launch failed
template <class K>
bool run_cuda_gemm_engine(const cuda_executor& ex, const K& k) {
#if FUSOR_CUDA_GEMM_ENGINE
  using P = std::remove_cvref_t<decltype(k.p)>;
  if constexpr (cuda_gemm_detail::engine_parts<P>()) {
    namespace d = cuda_gemm_detail;
    using T = typename P::T;
    if (k.direct || ex.gemm_engine == cuda_gemm_engine::fusor_tiles) return false;
    const d::lt_api& api = d::lt_api::get();
    if (api.matmul == nullptr) return false;
    constexpr int NP = host_gemm_detail::column_parts_v<P>;
    d::part_layout lay[NP];
    bool usable = true;
    index_t widest = 1;
    host_gemm_detail::for_each_column_part(k.p, [&]<int Q>(const auto& pq) {
      lay[Q] = d::layout_part(pq);
      usable = usable && lay[Q].usable;
      widest = std::max(widest, pq.N);
    });
    if (!usable) return false;
    // Panels of whole rows, at most cuda_gemm_panel_bytes of accumulators
    // (at least cuda_gemm_min_panel_rows rows), of equal height in
    // multiples of 128 rows (the engine's tiles).
    const index_t most = std::max<index_t>(
        cuda_gemm_min_panel_rows, index_t(cuda_gemm_panel_bytes / (sizeof(T) * std::size_t(widest))) / 128 * 128);
    const index_t panels = (k.p.M + most - 1) / most;
    const index_t panel = std::min(k.p.M, ((k.p.M + panels - 1) / panels + 127) / 128 * 128);
    int device = 0, sms = 0;
    check_cuda(cudaGetDevice(&device), "CUDA GEMM engine");
    check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "CUDA GEMM engine");
    const cublasLtHandle_t h = d::lt_handle(api, device);
    host_gemm_detail::for_each_column_part(k.p, [&]<int Q>(const auto& pq) {
      usable = usable && d::has_algorithms(api, h, device, pq, lay[Q], panel);
    });
    if (!usable) return false;
    const auto what = [] { return std::string("CUDA GEMM engine (cuBLASLt)"); };
    std::shared_ptr<T> acc = allocate<T>(ex, panel * widest, what);
    std::shared_ptr<float> ws = allocate<float>(ex, index_t(cuda_gemm_workspace_bytes / sizeof(float)), what);
    if (rehearsing()) return true;
    host_gemm_detail::for_each_column_part(k.p, [&]<int Q>(const auto& pq) {
      d::run_part(ex, api, h, device, sms, pq, lay[Q], panel, acc.get(), ws.get());
    });
    return true;
  } else {
    (void)ex;
    (void)k;
    return false;
  }
#else
  (void)ex;
  (void)k;
  return false;
#endif
}

}  // namespace fusor::exec
