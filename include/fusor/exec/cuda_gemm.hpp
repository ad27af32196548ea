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

template <class P>
struct gemm_problem_traits {
  static constexpr bool is_gemm = false;
};
template <int RO, int NB, class A, class B, class Ep, class Sink>
struct gemm_problem_traits<kernels::gemm_problem<RO, NB, A, B, Ep, Sink>> {
  static constexpr bool is_gemm = true;
  using S = kernels::single_view_storage_t<A>;
  using SB = kernels::single_view_storage_t<B>;
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
/// The epilogue over one call's accumulators: `batches` panels of rows x N
/// (row-major, ld N, one after the other); element (z, i, j) is stored as
/// p.store(b0 + z, i0 + i, j, acc). Work is cut into units of one row's
/// `width` consecutive columns (`chunks` units per row); `lanes` threads (a
/// power of two, 32 to elementwise_threads) share a unit, so the row's
/// index (the divisions) is computed once per unit, not per element, a
/// warp's loads and stores are consecutive, and a few long rows (decode,
/// M = 1) still spread over many blocks.
template <class P, class T>
__global__ void __launch_bounds__(kernels::elementwise_threads)
    gemm_engine_epilogue(P p, const T* acc, index_t b0, index_t batches, index_t i0, index_t rows, int lanes,
                         index_t width, index_t chunks) {
  const index_t n = p.N, units = batches * rows * chunks;
  const int per_block = kernels::elementwise_threads / lanes, lane = int(threadIdx.x) % lanes;
  for (index_t unit = index_t(blockIdx.x) * per_block + int(threadIdx.x) / lanes; unit < units;
       unit += index_t(gridDim.x) * per_block) {
    const index_t row = unit / chunks, j0 = (unit - row * chunks) * width;
    const index_t z = row / rows, i = row - z * rows;
    const auto idx = p.out_row_index(b0 + z, i0 + i);
    const T* a = acc + row * n;
    const index_t j1 = j0 + width < n ? j0 + width : n;
    for (index_t j = j0 + lane; j < j1; j += lanes) p.store_at(idx, j, a[j]);
  }
}

/// Threads per unit of gemm_engine_epilogue for rows of n elements.
inline int epilogue_lanes(index_t n) {
  int lanes = 32;
  while (lanes < kernels::elementwise_threads && lanes < n) lanes *= 2;
  return lanes;
}
/// Elements per thread of one unit (a unit is lanes x this many columns),
/// or 1 where that would leave fewer than 2 units per SM (a few long rows:
/// decode).
inline index_t epilogue_unit_steps(index_t rows, index_t n, int lanes, int sms) {
  const index_t wide = rows * ((n + lanes * 8 - 1) / (lanes * 8));
  return wide >= 2 * index_t(sms) ? 8 : 1;
}

/// How one part runs: the views' layouts for cuBLASLt, and the calls:
/// `batch_step` batches per call (a strided-batched matmul, when A's and
/// B's batches are equally spaced: batch_a / batch_b elements apart, 0 for
/// a broadcast batch) of `panel` rows each.
struct part_plan {
  bool usable = false;
  host_gemm_detail::blas_layout la, lb;
  bool strided = false;
  std::int64_t batch_a = 0, batch_b = 0;
  index_t batch_step = 1, panel = 0;
};

/// Calls with more batches than this, unequally spaced, are left to the
/// tiles (one launch for all batches) rather than run one call each.
inline constexpr index_t cuda_gemm_max_unstrided_batches = 4;

template <class P>
part_plan plan_part(const P& p) {
  using S = typename gemm_problem_traits<P>::S;
  using T = typename P::T;
  part_plan r;
  if (p.M <= 0 || p.N <= 0 || p.K <= 0 || p.batches <= 0) return r;
  const auto a0 = p.template a_matrix<S>(0);
  const auto b0 = p.template b_matrix<S>(0);
  r.la = host_gemm_detail::layout_of(a0, p.M, p.K);
  r.lb = host_gemm_detail::layout_of(b0, p.K, p.N);
  if (!r.la.usable || !r.lb.usable) return r;
  if (p.batches > 1) {
    r.batch_a = p.template a_matrix<S>(1).data - a0.data;
    r.batch_b = p.template b_matrix<S>(1).data - b0.data;
    r.strided = true;
    for (index_t b = 2; b < p.batches && r.strided; ++b)
      r.strided = p.template a_matrix<S>(b).data == a0.data + b * r.batch_a &&
                  p.template b_matrix<S>(b).data == b0.data + b * r.batch_b;
    if (!r.strided && p.batches > cuda_gemm_max_unstrided_batches) return r;
  }
  // Panels of whole rows, at most cuda_gemm_panel_bytes of accumulators (at
  // least cuda_gemm_min_panel_rows rows), of equal height in multiples of
  // 128 rows (the engine's tiles); small strided batches several per call.
  const std::size_t per_batch = sizeof(T) * std::size_t(p.M) * std::size_t(p.N);
  if (r.strided && 2 * per_batch <= cuda_gemm_panel_bytes) {
    r.panel = p.M;
    r.batch_step = std::min<index_t>(p.batches, index_t(cuda_gemm_panel_bytes / per_batch));
  } else {
    const index_t most = std::max<index_t>(
        cuda_gemm_min_panel_rows, index_t(cuda_gemm_panel_bytes / (sizeof(T) * std::size_t(p.N))) / 128 * 128);
    const index_t panels = (p.M + most - 1) / most;
    r.panel = std::min(p.M, ((p.M + panels - 1) / panels + 127) / 128 * 128);
  }
  r.usable = true;
  return r;
}

/// Accumulator elements one call of part plan r writes at most.
template <class P>
index_t accumulators_of(const P& p, const part_plan& r) {
  return r.batch_step * r.panel * p.N;
}

/// One call's matmul: batches [b, b + count), rows [i0, i0 + rows). Row-major
/// C (rows x N) = A (rows x K) B (K x N) is column-major C^T (N x rows) =
/// B^T A^T: cuBLASLt's A is our B, its B our A. B stored row-major
/// ((k, j) at k ld + j) is column-major N x K: op N; transposed (linear's W)
/// it is column-major K x N: op T. A row-major is column-major K x rows:
/// op N; transposed (gemm's trans_a) it is column-major rows x K: op T.
template <class P>
matmul_key call_key(int device, const P& p, const part_plan& r, index_t b, index_t count, index_t i0, index_t rows,
                    const void*& a_ptr, const void*& b_ptr) {
  using S = typename gemm_problem_traits<P>::S;
  const auto am = p.template a_matrix<S>(b);
  const auto bm = p.template b_matrix<S>(b);
  const S* a = am.data + (r.la.transposed ? i0 : i0 * std::int64_t(r.la.ld));
  a_ptr = a;
  b_ptr = bm.data;
  const std::int64_t batches = count > 1 ? count : 1;
  // every batch's pointer must have the alignment cuBLASLt is told
  const std::uint32_t align_b = std::min(alignment_of(bm.data), alignment_of_bytes(r.batch_b * std::int64_t(sizeof(S))));
  const std::uint32_t align_a = std::min(alignment_of(a), alignment_of_bytes(r.batch_a * std::int64_t(sizeof(S))));
  return matmul_key{device,
                    cuda_type<S>(),
                    cuda_type<typename P::T>(),
                    r.lb.transposed,
                    r.la.transposed,
                    p.N,
                    rows,
                    p.K,
                    r.lb.ld,
                    r.la.ld,
                    p.N,
                    align_b,
                    align_a,
                    batches,
                    batches > 1 ? r.batch_b : 0,
                    batches > 1 ? r.batch_a : 0,
                    batches > 1 ? std::int64_t(rows) * p.N : 0};
}

/// Calls f(b, count, i0, rows) for every call of part p.
template <class P, class F>
void for_each_call(const P& p, const part_plan& r, F&& f) {
  for (index_t b = 0; b < p.batches; b += r.batch_step)
    for (index_t i0 = 0; i0 < p.M; i0 += r.panel)
      f(b, std::min(r.batch_step, p.batches - b), i0, std::min(r.panel, p.M - i0));
}

/// Has cuBLASLt an algorithm for every call of part p? (Asked before
/// anything is launched, so that a problem it cannot run goes to the tiles
/// whole, and run_part cannot fail half-way for want of one.)
template <class P>
bool has_algorithms(const lt_api& api, cublasLtHandle_t h, int device, const P& p, const part_plan& r) {
  bool ok = true;
  for_each_call(p, r, [&](index_t b, index_t count, index_t i0, index_t rows) {
    if (!ok) return;
    const void *a = nullptr, *bb = nullptr;
    cublasLtMatmulAlgo_t algo{};
    ok = find_algorithm(api, h, call_key(device, p, r, b, count, i0, rows, a, bb), algo);
  });
  return ok;
}

/// Runs part p with cuBLASLt + the epilogue kernel, accumulators in acc
/// (accumulators_of(p, r) elements), workspace ws.
template <class P>
void run_part(const cuda_executor& ex, const lt_api& api, cublasLtHandle_t h, int device, int sms, const P& p,
              const part_plan& r, typename P::T* acc, void* ws) {
  using T = typename P::T;
  const T one = T(1), zero = T(0);
  for_each_call(p, r, [&](index_t b, index_t count, index_t i0, index_t rows) {
    const void *a = nullptr, *bb = nullptr;
    const matmul_key key = call_key(device, p, r, b, count, i0, rows, a, bb);
    cublasLtMatmulAlgo_t algo{};
    if (!find_algorithm(api, h, key, algo))  // (has_algorithms said yes: cached)
      throw device_error("fusor: internal: CUDA GEMM engine: cuBLASLt lost its algorithm");
    lt_matmul mm(api);
    describe(api, key, mm);
    check_lt(api,
             api.matmul(h, mm.desc, &one, bb, mm.a, a, mm.b, &zero, acc, mm.c, acc, mm.c, &algo, ws,
                        cuda_gemm_workspace_bytes, ex.stream),
             "cublasLtMatmul");
    const int lanes = epilogue_lanes(p.N);
    const index_t width = lanes * epilogue_unit_steps(count * rows, p.N, lanes, sms);
    const index_t chunks = (p.N + width - 1) / width;
    const index_t blocks = kernels::grid_stride_blocks(count * rows * chunks * lanes, sms);
    gemm_engine_epilogue<<<unsigned(blocks), kernels::elementwise_threads, 0, ex.stream>>>(p, acc, b, count, i0, rows,
                                                                                           lanes, width, chunks);
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
    d::part_plan plans[NP];
    bool usable = true;
    index_t most = 1;
    host_gemm_detail::for_each_column_part(k.p, [&]<int Q>(const auto& pq) {
      plans[Q] = d::plan_part(pq);
      usable = usable && plans[Q].usable;
      if (plans[Q].usable) most = std::max(most, d::accumulators_of(pq, plans[Q]));
    });
    if (!usable) return false;
    int device = 0, sms = 0;
    check_cuda(cudaGetDevice(&device), "CUDA GEMM engine");
    check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "CUDA GEMM engine");
    const cublasLtHandle_t h = d::lt_handle(api, device);
    host_gemm_detail::for_each_column_part(k.p, [&]<int Q>(const auto& pq) {
      usable = usable && d::has_algorithms(api, h, device, pq, plans[Q]);
    });
    if (!usable) return false;
    const auto what = [] { return std::string("CUDA GEMM engine (cuBLASLt)"); };
    std::shared_ptr<T> acc = allocate<T>(ex, most, what);
    std::shared_ptr<float> ws = allocate<float>(ex, index_t(cuda_gemm_workspace_bytes / sizeof(float)), what);
    if (rehearsing()) return true;
    host_gemm_detail::for_each_column_part(k.p, [&]<int Q>(const auto& pq) {
      d::run_part(ex, api, h, device, sms, pq, plans[Q], acc.get(), ws.get());
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
