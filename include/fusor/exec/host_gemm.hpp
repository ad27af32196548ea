#pragma once
/// @file exec/host_gemm.hpp
/// The host GEMM engine under fused prologues and epilogues: OpenBLAS owns
/// the inner loop, fusor owns what happens around it (issue 17, "fusor owns
/// the fusion; proven engines own the inner loops").
///
/// For a contraction kernel whose problem P computes in float or double
/// (16-bit operands compute in float), per batch b (batch dims, conv groups):
///  1. B (K x N): read in place when it is a plain view of T with a unit
///     stride along k or j (P::b_matrix: linear's W, matmul's B); otherwise
///     packed once per batch by evaluating `p.bmat` (its prologue, the
///     implicit-GEMM weight map, 16-bit -> fp32) into a K x N buffer;
///  2. the output in blocks of host_gemm_mc rows: A's rows read in place
///     (P::a_matrix) or packed once per block through `p.a`, with the
///     block's LayerNorm/RMSNorm row statistics (`p.prepare`), so A's
///     prologue is evaluated once per element (all of A at once, shared by
///     the threads, when they split a row block's columns);
///  3. per column block (at most host_gemm_nc columns, the blocks of a part
///     of equal width: column_block_width): one single-threaded sgemm/dgemm
///     call into a block of at most mc x nc accumulators (512 KiB of f32:
///     L2-resident), then the epilogue (bias, activation, residual, batch
///     norm) on every element of the block, a block row at a time on SIMD
///     packs (`p.store_row`, kernels/parts/host_epilogue.hpp), before the
///     next block overwrites it.
/// Blocks are spread over the executor's OpenMP threads (rows, and columns
/// too when there are fewer row blocks than threads). OpenBLAS's own
/// threads are set to 1 while any fused GEMM runs (openblas_set_num_threads,
/// restored afterwards): nested pools on top of fusor's threads cost a third
/// of the throughput on a 2-core machine (bench/bench_contraction).
///
/// Numerics: each output element is one engine dot product over all of K
/// (fp32 accumulation for f32/f16/bf16, fp64 for f64), then the same
/// epilogue as the device. An engine's result for a column can depend on
/// where its call's edges are (OpenBLAS's edge micro-kernels sum in another
/// order), so calls are cut the same way for a problem wherever it appears:
/// row blocks of mc from row 0 and column blocks whose width depends only
/// on the projection's N, from each projection's first column (a multi-output Q/K/V GEMM calls the engine
/// per projection). The fused and unfused host paths thus make the same
/// engine calls and agree bitwise; against the device twin they agree to
/// fp32 rounding of a K-term sum (the engine's FMA order).
///
/// Without OpenBLAS (FUSOR_WITH_OPENBLAS undefined or 0), or with
/// host_executor::gemm_engine = device_twin, or for shapes the engine's
/// 32-bit sizes cannot express, the host runs the device twin.
#include <fusor/exec/executors.hpp>
#include <fusor/kernels/contraction.hpp>
#include <fusor/kernels/tuning/host_gemm.hpp>

#include <algorithm>
#include <climits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#if defined(_OPENMP)
#include <omp.h>
#endif

#if !defined(FUSOR_WITH_OPENBLAS)
#define FUSOR_WITH_OPENBLAS 0
#endif
#if FUSOR_WITH_OPENBLAS
#include <cblas.h>
#endif

namespace fusor::exec {

// Block sizes: kernels/tuning/host_gemm.hpp (the reasons are there).
/// Rows of one output block of the host GEMM engine.
inline constexpr index_t host_gemm_mc = kernels::host_gemm_tile.mc;
/// Columns of one engine call (mc x nc accumulators).
inline constexpr index_t host_gemm_nc = kernels::host_gemm_tile.nc;
/// Problems with at most this many rows (M, per batch) take the engine's
/// matrix-vector product per row (engine_gemm).
inline constexpr index_t host_gemv_max_rows = kernels::host_gemm_tile.gemv_max_rows;
/// Bytes of packed A per thread at most.
inline constexpr std::size_t host_gemm_pack_bytes = kernels::host_gemm_tile.pack_bytes;

/// Is the host GEMM engine compiled in (fusor found OpenBLAS)?
inline constexpr bool host_gemm_engine_available = FUSOR_WITH_OPENBLAS != 0;

/// The name of the engine a host contraction kernel runs with `ex`, for explain.
inline const char* host_gemm_engine_name(const host_executor& ex) {
  if (ex.gemm_engine == host_gemm_engine::device_twin) return "fusor device-twin tiles (gemm_engine = device_twin)";
  return host_gemm_engine_available
             ? "OpenBLAS gemm per 256 x 512 block, epilogue in cache; depthwise convs: output rows on SIMD lanes"
             : "fusor device-twin tiles (built without OpenBLAS); depthwise convs: output rows on SIMD lanes";
}

namespace host_gemm_detail {

/// How the engine reads a strided matrix of rows x cols: row-major
/// (col_stride 1) or transposed (row_stride 1), with its leading dimension.
struct blas_layout {
  bool usable = false, transposed = false;
  int ld = 0;
};
template <class T>
blas_layout layout_of(const kernels::strided_matrix<T>& m, index_t rows, index_t cols) {
  if (m.data == nullptr) return {};
  const auto fits = [](index_t v) { return v >= 1 && v <= INT_MAX; };
  if (m.col_stride == 1 || cols == 1) {  // row-major, ld = row stride
    const index_t ld = rows == 1 ? std::max<index_t>(cols, 1) : m.row_stride;
    if (fits(ld) && ld >= cols) return {true, false, int(ld)};
  }
  if (m.row_stride == 1 || rows == 1) {  // column-major: the transpose is row-major
    const index_t ld = cols == 1 ? std::max<index_t>(rows, 1) : m.col_stride;
    if (fits(ld) && ld >= rows) return {true, true, int(ld)};
  }
  return {};
}

#if FUSOR_WITH_OPENBLAS
/// OpenBLAS single-threaded while any fused GEMM runs (process-wide count).
class blas_single_thread {
 public:
  blas_single_thread() {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (state().depth++ == 0) {
      state().saved = openblas_get_num_threads();
      if (state().saved != 1) openblas_set_num_threads(1);
    }
  }
  ~blas_single_thread() {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (--state().depth == 0 && state().saved != 1) openblas_set_num_threads(state().saved);
  }
  blas_single_thread(const blas_single_thread&) = delete;
  blas_single_thread& operator=(const blas_single_thread&) = delete;

 private:
  struct shared {
    std::mutex mutex;
    int depth = 0, saved = 1;
  };
  static shared& state() {
    static shared s;
    return s;
  }
};

/// C (m x n, row-major, ldc) = A (m x k) * B (k x n). With few rows
/// (m <= host_gemv_max_rows for the whole problem: `gemv`), one matrix-vector
/// product per row instead: sgemm packs all of B for every call, which for
/// one row costs more than the product (bench_contraction, M = 1).
template <class T>
void engine_gemm(int m, int n, int k, const T* a, const blas_layout& la, const T* b, const blas_layout& lb, T* c,
                 int ldc, bool gemv) {
  if (gemv) {
    // row r of C = B^T a_r: B (k x n) row-major is "Trans" of a row-major
    // k x n matrix; B transposed (n x k row-major, linear's W) is "NoTrans"
    const auto tb = lb.transposed ? CblasNoTrans : CblasTrans;
    const int rows_b = lb.transposed ? n : k, cols_b = lb.transposed ? k : n;
    for (int r = 0; r < m; ++r) {
      // element kk of row r of A: a[r * lda + kk], or a[kk * lda + r] transposed
      const T* ar = la.transposed ? a + r : a + std::size_t(r) * std::size_t(la.ld);
      const int inc = la.transposed ? la.ld : 1;
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemv(CblasRowMajor, tb, rows_b, cols_b, 1.0f, b, lb.ld, ar, inc, 0.0f, c + std::size_t(r) * ldc, 1);
      else
        cblas_dgemv(CblasRowMajor, tb, rows_b, cols_b, 1.0, b, lb.ld, ar, inc, 0.0, c + std::size_t(r) * ldc, 1);
    }
    return;
  }
  const auto ta = la.transposed ? CblasTrans : CblasNoTrans, tb = lb.transposed ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, la.ld, b, lb.ld, 0.0f, c, ldc);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, la.ld, b, lb.ld, 0.0, c, ldc);
}
#endif

/// P's A / B of batch b in memory (null: P does not say, packed).
template <class P>
auto a_matrix_of(const P& p, index_t b) {
  if constexpr (requires { p.a_matrix(b); }) return p.a_matrix(b);
  else return kernels::strided_matrix<typename P::T>{};
}
template <class P>
auto b_matrix_of(const P& p, index_t b) {
  if constexpr (requires { p.b_matrix(b); }) return p.b_matrix(b);
  else return kernels::strided_matrix<typename P::T>{};
}

/// Column parts of a problem: the projections of a multi-output GEMM
/// (kernels::concat_n_problem), else the problem itself.
template <class P>
inline constexpr int column_parts_v = 1;
template <class P>
  requires requires { P::column_parts; }
inline constexpr int column_parts_v<P> = P::column_parts;

/// f.template operator()<Q>(part Q) for each column part of p.
template <class P, class F>
void for_each_column_part(const P& p, F&& f) {
  if constexpr (column_parts_v<P> == 1) {
    f.template operator()<0>(p);
  } else {
    [&]<int... Q>(std::integer_sequence<int, Q...>) {
      (f.template operator()<Q>(p.template part<Q>()), ...);
    }(std::make_integer_sequence<int, column_parts_v<P>>{});
  }
}

/// Columns [j0, j0 + cols) of column part `part`.
struct column_block {
  int part = 0;
  index_t j0 = 0, cols = 0;
};

/// Width of the column blocks of a part of n columns: the fewest blocks of
/// at most host_gemm_nc, made equal (rounded up to 16 columns), so threads
/// that split the columns get equal work (768 = 384 + 384, not 512 + 256).
/// A function of n alone: a projection is blocked the same in a
/// multi-output GEMM and alone.
inline index_t column_block_width(index_t n) {
  if (n <= 0) return host_gemm_nc;  // (an empty part: no blocks)
  const index_t count = (n + host_gemm_nc - 1) / host_gemm_nc;
  const index_t even = (n + count - 1) / count;
  return std::min<index_t>(host_gemm_nc, (even + 15) / 16 * 16);
}

template <class T>
std::unique_ptr<T[]> buffer(std::size_t n) {
  try {
    return std::unique_ptr<T[]>(new T[n]);
  } catch (const std::bad_alloc&) {
    throw allocation_error("fusor: host GEMM engine: cannot allocate " + std::to_string(n * sizeof(T)) +
                           " bytes of packing buffers");
  }
}

}  // namespace host_gemm_detail

/// Runs the tile kernel k (kernels::gemm_kernel, tile mode) with the host
/// GEMM engine; false when the engine does not apply (see the file comment)
/// and the caller runs the device twin.
/// @throws allocation_error the packing buffers cannot be allocated
template <class K>
bool run_host_gemm_engine(const host_executor& ex, const K& k) {
#if !FUSOR_WITH_OPENBLAS
  (void)ex;
  (void)k;
  return false;
#else
  using P = std::remove_cvref_t<decltype(k.p)>;
  using T = typename P::T;
  if constexpr (!(std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    (void)ex;
    (void)k;
    return false;
  } else {
    namespace d = host_gemm_detail;
    const P& p = k.p;
    if (k.direct || ex.gemm_engine == host_gemm_engine::device_twin) return false;
    if (p.M <= 0 || p.N <= 0 || p.batches <= 0) return true;
    if (p.K > INT_MAX || p.N > INT_MAX || p.K <= 0) return false;  // (K = 0: the twin stores zeros)
    const index_t M = p.M, KK = p.K;
    const index_t nc = host_gemm_nc;
#if defined(_OPENMP)
    const int threads = ex.threads > 0 ? ex.threads : omp_get_max_threads();
#else
    const int threads = 1;
#endif
    // The output's columns in parts (the Q/K/V projections of one
    // multi-output GEMM, or the one problem), each in blocks of nc from the
    // part's first column: every engine call covers columns of one part
    // only, so a projection computes exactly as it does alone (the engine's
    // result for a column depends on where the call's edges are).
    constexpr int NP = d::column_parts_v<P>;
    index_t part_n[NP], part_col_stride[NP], part_pack_offset[NP];
    d::blas_layout lb_view[NP];
    index_t nblocks = 0, pack_elems = 0;
    d::for_each_column_part(p, [&]<int Q>(const auto& pq) {
      const auto b0 = d::b_matrix_of(pq, 0);
      part_n[Q] = pq.N;
      lb_view[Q] = d::layout_of(b0, KK, pq.N);
      part_col_stride[Q] = b0.col_stride;
      part_pack_offset[Q] = pack_elems;
      if (!lb_view[Q].usable) pack_elems += KK * pq.N;
      nblocks += (pq.N + d::column_block_width(pq.N) - 1) / d::column_block_width(pq.N);
    });
    // (A's reading is the same for every batch: strides do not depend on b.)
    const d::blas_layout la_view = d::layout_of(d::a_matrix_of(p, 0), M, KK);
    // Packing memory stays bounded: a packed A block is at most
    // host_gemm_pack_bytes per thread (fewer rows for a long K), and a B that
    // would need more than 16 times that is left to the twin.
    if (double(pack_elems) * sizeof(T) > 16.0 * double(host_gemm_pack_bytes)) return false;
    const index_t mc =
        la_view.usable ? host_gemm_mc
                       : std::clamp<index_t>(index_t(host_gemm_pack_bytes / (std::size_t(KK) * sizeof(T))), 1, host_gemm_mc);
    const index_t mblocks = (M + mc - 1) / mc;
    const index_t nsplit = mblocks >= threads ? 1 : std::min<index_t>(nblocks, (threads + mblocks - 1) / mblocks);
    const index_t tasks = mblocks * nsplit;
    const index_t blocks_per_split = (nblocks + nsplit - 1) / nsplit;
    // Column block c -> (part, first column).
    std::unique_ptr<d::column_block[]> blocks = d::buffer<d::column_block>(std::size_t(nblocks));
    for (index_t q = 0, c = 0; q < NP; ++q) {
      const index_t width = d::column_block_width(part_n[q]);
      for (index_t j0 = 0; j0 < part_n[q]; j0 += width)
        blocks[std::size_t(c++)] = {int(q), j0, std::min(width, part_n[q] - j0)};
    }

    const d::blas_layout la_pack{true, false, int(KK)};
    std::unique_ptr<T[]> bpack = pack_elems > 0 ? d::buffer<T>(std::size_t(pack_elems)) : nullptr;
    const int team = int(std::min<index_t>(threads, std::max<index_t>(tasks, 1)));
    // A packed by the task that uses it, or, when tasks split a row block's
    // columns (nsplit > 1: M < threads * mc), all of A once, shared, so no
    // row is packed (and its norm statistics computed) twice.
    const bool shared_a = !la_view.usable && nsplit > 1;
    // (Shared A is packed in runs of this many rows: a conv's pixel runs.)
    constexpr index_t shared_pack_rows = 64;
    std::unique_ptr<T[]> apack =
        la_view.usable ? nullptr : d::buffer<T>(shared_a ? std::size_t(M * KK) : std::size_t(team) * std::size_t(mc * KK));
    std::unique_ptr<T[]> cblock = d::buffer<T>(std::size_t(team) * std::size_t(mc * nc));
    using stats = typename P::stats;
    std::unique_ptr<stats[]> st = d::buffer<stats>(std::size_t(team) * std::size_t(mc));

    d::blas_single_thread one_engine_thread;
#if defined(_OPENMP)
#pragma omp parallel num_threads(team) if (team > 1)
#endif
    {
#if defined(_OPENMP)
      const int me = omp_get_thread_num();
#else
      const int me = 0;
#endif
      T* const my_a = apack && !shared_a ? apack.get() + std::size_t(me) * std::size_t(mc * KK) : nullptr;
      T* const my_c = cblock.get() + std::size_t(me) * std::size_t(mc * nc);
      stats* const my_st = st.get() + std::size_t(me) * std::size_t(mc);
      for (index_t b = 0; b < p.batches; ++b) {
        const T* bdata[NP];
        d::for_each_column_part(p, [&]<int Q>(const auto& pq) {
          if (lb_view[Q].usable) {
            bdata[Q] = d::b_matrix_of(pq, b).data;
            return;
          }
          T* const dst = bpack.get() + part_pack_offset[Q];
          const index_t n = part_n[Q];
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
          for (index_t kk = 0; kk < KK; ++kk)
            for (index_t j = 0; j < n; ++j) dst[std::size_t(kk * n + j)] = T(pq.bmat(b, kk, j));
          bdata[Q] = dst;
        });
        if (shared_a) {
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
          for (index_t q = 0; q < (M + shared_pack_rows - 1) / shared_pack_rows; ++q) {
            const index_t i0 = q * shared_pack_rows, rows = std::min(shared_pack_rows, M - i0);
            if constexpr (kernels::is_conv_problem_v<P>) {
              kernels::conv_pack_a(p, b, i0, rows, apack.get() + std::size_t(i0 * KK));
            } else {
              for (index_t i = i0; i < i0 + rows; ++i) {
                const auto row_stats = p.prepare(b, i);
                for (index_t kk = 0; kk < KK; ++kk) apack[std::size_t(i * KK + kk)] = p.a(b, i, kk, row_stats);
              }
            }
          }
        }
#if defined(_OPENMP)
#pragma omp for schedule(dynamic)
#endif
        for (index_t t = 0; t < tasks; ++t) {
          const index_t i0 = (t / nsplit) * mc, rows = std::min(mc, M - i0);
          const index_t clo = (t % nsplit) * blocks_per_split, chi = std::min(nblocks, clo + blocks_per_split);
          if (clo >= chi) continue;
          const T* adata;
          if (la_view.usable) {
            const auto am = d::a_matrix_of(p, b);
            adata = am.data + i0 * am.row_stride;
          } else if (shared_a) {
            adata = apack.get() + std::size_t(i0 * KK);
          } else if constexpr (kernels::is_conv_problem_v<P>) {
            kernels::conv_pack_a(p, b, i0, rows, my_a);  // (kernels/parts/conv_runs.hpp)
            adata = my_a;
          } else {
            for (index_t r = 0; r < rows; ++r)
              my_st[r] = (r > 0 && p.shares_stats(b, i0 + r, i0 + r - 1)) ? my_st[r - 1] : p.prepare(b, i0 + r);
            for (index_t r = 0; r < rows; ++r)
              for (index_t kk = 0; kk < KK; ++kk) my_a[r * KK + kk] = p.a(b, i0 + r, kk, my_st[r]);
            adata = my_a;
          }
          const d::blas_layout& la = la_view.usable ? la_view : la_pack;
          for (index_t c = clo; c < chi; ++c) {
            const d::column_block blk = blocks[std::size_t(c)];
            d::for_each_column_part(p, [&]<int Q>(const auto& pq) {
              if (Q != blk.part) return;
              const index_t j0 = blk.j0, cols = blk.cols;
              const d::blas_layout lb = lb_view[Q].usable ? lb_view[Q] : d::blas_layout{true, false, int(part_n[Q])};
              const T* const bcols = bdata[Q] + j0 * (lb_view[Q].usable ? part_col_stride[Q] : 1);
              d::engine_gemm<T>(int(rows), int(cols), int(KK), adata, la, bcols, lb, my_c, int(cols),
                                M <= host_gemv_max_rows);
              for (index_t r = 0; r < rows; ++r) {
                if constexpr (requires { pq.store_row(b, i0, j0, my_c, cols); }) {
                  pq.store_row(b, i0 + r, j0, my_c + r * cols, cols);
                } else {
                  for (index_t cc = 0; cc < cols; ++cc) pq.store(b, i0 + r, j0 + cc, my_c[r * cols + cc]);
                }
              }
            });
          }
        }
      }
    }
    return true;
  }
#endif
}

}  // namespace fusor::exec
