#pragma once
/// @file exec/pooling.hpp
/// Binding and launching of a pooling group (ops/pooling.hpp; the kernel is
/// kernels::pool_windows, kernels/pooling.hpp): its prologue operand
/// addressed by input indices, its sink and epilogue by output indices. On
/// the host an OpenMP loop over output rows (launch_pool); on the device one
/// thread per output element (256-thread blocks, grid-stride).
#include <fusor/exec/row_binding.hpp>
#include <fusor/kernels/pooling.hpp>
#include <fusor/ops/pooling.hpp>

#include <memory>
#include <new>
#include <string>

namespace fusor::exec {

/// The window geometry of pooling op `p` over an input of shape `in`
/// (result shape `out`).
template <int R, bool Avg, bool Indices>
kernels::pool_space<R> make_pool_space(const op::pool2d<Avg, Indices>& p, const shape<R>& in, const shape<R>& out) {
  kernels::pool_space<R> s;
  for (int d = 0; d < R; ++d) {
    s.out_extent[d] = out[d];
    s.outputs *= out[d];
    s.in_extent[d] = in[d];
  }
  s.column_major = p.params.storage_order == 1;
  s.hd = p.h_dim();
  for (int d = 0; d < 2; ++d) {
    s.in[d] = in[s.hd + d];
    s.kernel[d] = p.params.kernel[d];
    s.stride[d] = p.params.stride[d];
    s.dilation[d] = p.params.dilation[d];
    s.pad_lo[d] = p.params.padding[d];
    s.pad_hi[d] = p.params.padding[d + 2];
  }
  s.count_include_pad = p.params.count_include_pad;
  return s;
}

/// Runs pooling kernel k on the host: an output row (the W dim) at a time
/// (kernels::pool_windows::run_output_row: the prologue evaluated once per
/// input element of each window row, not once per window; bench_layers'
/// ResNet stem pool), rows in parallel when the windows hold enough work to
/// pay for a parallel region.
template <class K>
void launch_pool(const host_executor& ex, const K& k) {
  count_launches(ex);
  if (rehearsing()) return;
  const auto& s = k.space;
  const index_t n = s.outputs;
  if (n == 0) return;
  constexpr int R = K::rank;
  const int wd = s.hd + 1;
  const index_t rows = n / s.out_extent[wd];
  using T = typename K::T;
  const std::size_t scratch = std::size_t(s.kernel[0] * s.in[1]);
#if defined(_OPENMP)
  const index_t work = n * s.kernel[0] * s.kernel[1];
  const int threads = rows > 1 && work > (index_t(1) << 14) ? (ex.threads > 0 ? ex.threads : omp_get_max_threads()) : 1;
#else
  const int threads = 1;
#endif
  using Acc = typename K::Acc;
  const std::size_t accs = std::size_t(s.out_extent[wd]);
  std::unique_ptr<T[]> scratch_all;
  std::unique_ptr<Acc[]> acc_all;
  try {
    scratch_all.reset(new T[std::size_t(threads) * scratch]);
    acc_all.reset(new Acc[std::size_t(threads) * accs]);
  } catch (const std::bad_alloc&) {
    throw allocation_error("fusor: max_pool2d / avg_pool2d: cannot allocate " +
                           std::to_string(std::size_t(threads) * (scratch * sizeof(T) + accs * sizeof(Acc))) +
                           " bytes of window rows");
  }
#if defined(_OPENMP)
#pragma omp parallel num_threads(threads) if (threads > 1)
#endif
  {
#if defined(_OPENMP)
    const std::size_t me = std::size_t(omp_get_thread_num());
#else
    const std::size_t me = 0;
#endif
    T* const buf = scratch_all.get() + me * scratch;
    Acc* const acc = acc_all.get() + me * accs;
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
    for (index_t r = 0; r < rows; ++r) {
      kernels::index_array<R> idx{};
      index_t rest = r;
      for (int d = R - 1; d >= 0; --d) {
        if (d == wd) continue;
        idx[d] = rest % s.out_extent[d];
        rest /= s.out_extent[d];
      }
      k.run_output_row(idx, buf, acc);
    }
  }
  (void)ex;
}

#if defined(__CUDACC__)
template <class K>
__global__ void __launch_bounds__(kernels::reduce_block) fused_pool(K k) {
  for (index_t o = index_t(blockIdx.x) * blockDim.x + threadIdx.x; o < k.space.outputs; o += index_t(gridDim.x) * blockDim.x)
    k.run_output(o);
}
template <class K>
void launch_pool(const cuda_executor& ex, const K& k) {
  count_launches(ex);
  if (rehearsing()) return;
  if (k.space.outputs == 0) return;
  const index_t blocks =
      std::min<index_t>((k.space.outputs + kernels::reduce_block - 1) / kernels::reduce_block, index_t(1) << 20);
  fused_pool<<<unsigned(blocks), kernels::reduce_block, 0, ex.stream>>>(k);
  check_cuda(cudaGetLastError(), "launch of kernel fused_pool (max_pool2d / avg_pool2d / max_pool2d_indices)");
}
#else
template <class K>
void launch_pool(const cuda_executor&, const K&) {
  static_assert(sizeof(K) == 0, "fusor: run(cuda(stream)): CUDA kernels can only be launched from a translation unit "
                                "compiled by nvcc (a .cu file)");
}
#endif

/// Binds pooling group e (pooling node `pool` under an optional elementwise
/// epilogue of its result's shape; its operand an elementwise subtree over
/// views) to output `o` and runs it.
template <class Ex, class E, class Pool, class O>
void run_pooling(const Ex& ex, const E& e, const Pool& pool, const O& o) {
  using Op = typename Pool::op_type;
  constexpr int R = 4;
  const auto& x = fusor::get<0>(pool.args);
  const shape<R> in = shape_of(x), out = shape_of(pool);
  const auto space = make_pool_space<R>(pool.op, in, out);
  auto xo = make_row_operand<R>(x);
  auto writer = make_output_writer<R, value_t<Pool>, is_pool_node_v<E>>(e, o);  // (outputs addressed by output indices)
  kernels::pool_windows<R, Op::average, decltype(xo), decltype(writer), Op::indices> k{space, xo, writer};
  launch_pool(ex, k);
}

}  // namespace fusor::exec
