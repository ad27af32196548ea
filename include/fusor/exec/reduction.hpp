#pragma once
/// @file exec/reduction.hpp
/// Binding and launching of the row-reduction kernel family
/// (kernels/reduction.hpp): its launcher (exec/launcher.hpp) for the
/// host executor (OpenMP over rows) and, in nvcc translation units, the CUDA
/// executor (256-thread blocks, grid-stride over rows: one warp per row of
/// at most 1024 elements, the block per longer row; ReduceX over few very
/// long rows: several blocks per row and a finalize kernel).
#include <fusor/exec/concat.hpp>
#include <fusor/exec/conv_transpose.hpp>
#include <fusor/exec/gather.hpp>
#include <fusor/exec/pad.hpp>
#include <fusor/exec/pooling.hpp>
#include <fusor/exec/resize.hpp>
#include <fusor/exec/row_binding.hpp>
#include <fusor/kernels/topk.hpp>
#include <fusor/ops/arg_reduce.hpp>
#include <fusor/ops/cumsum.hpp>
#include <fusor/ops/group_norm.hpp>
#include <fusor/ops/layer_norm_stats.hpp>

namespace fusor::exec {

/// Runs kernel k's rows on the host (the same run_row the CUDA block runs).
template <class K>
void launch_rows(const host_executor& ex, const K& k) {
  count_launches(ex);
  if (rehearsing()) return;
  K local = k;
  // lanes = 0: the rows on host packs (kernels/parts/host_rows.hpp)
  if (FUSOR_HOST_PACKETS && ex.row_engine == host_row_engine::automatic) local.space.lanes = 0;
  const index_t rows = local.space.rows;
#if defined(_OPENMP)
  const int threads = ex.threads > 0 ? ex.threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) if (rows > 1 && rows * local.space.len > (index_t(1) << 14)) num_threads(threads)
#endif
  for (index_t r = 0; r < rows; ++r) local.run_row(r);
  (void)ex;
}

/// ReduceX rows on the host: the same loop as any row kernel (the CUDA
/// overload launches fused_reduce, whose entry also serves split rows).
template <class K>
void launch_reduce_rows(const host_executor& ex, const K& k) {
  launch_rows(ex, k);  // (counts it)
}

/// Split rows on the host (kernels::row_chunks): pass 1 over (row, chunk)
/// pairs, pass 2 merges each row's partials; `partial` holds rows * chunks.
template <class K>
void launch_row_chunks(const host_executor& ex, const K& k, typename K::Acc* partial, index_t chunks) {
  count_launches(ex, 2);  // partials, finalize
  if (rehearsing()) return;
  const index_t rows = k.space.rows, chunk = kernels::row_chunk_len(k.space.len, chunks);
#if defined(_OPENMP)
  const int threads = ex.threads > 0 ? ex.threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(threads)
#endif
  for (index_t b = 0; b < rows * chunks; ++b) k.run_chunk(b / chunks, b % chunks, chunks, chunk, partial);
  for (index_t r = 0; r < rows; ++r) k.finish_row(r, partial, chunks);
  (void)ex;
}

#if defined(__CUDACC__)
/// Rows per block: 8 short rows (one per warp) or one long row.
template <class K>
__host__ __device__ index_t rows_per_block(const K& k) { return kernels::reduce_block / k.space.lanes; }
/// Grid-stride over rows: one warp per short row, the block per long row
/// (k.space.lanes; warps of a block never synchronize in the warp case).
template <class K>
__device__ void run_rows(const K& k) {
  const index_t per_block = rows_per_block(k), sub = threadIdx.x / unsigned(k.space.lanes);
  for (index_t r = index_t(blockIdx.x) * per_block + sub; r < k.space.rows; r += index_t(gridDim.x) * per_block) k.run_row(r);
}
template <class K>
__global__ void __launch_bounds__(kernels::reduce_block) fused_rows(K k) { run_rows(k); }
/// ReduceX: one block per row (chunks == 1), or split rows, pass 1: one
/// block per (row, chunk). One entry for both, so a reduction group is one
/// kernel plus, when split, the finalize below.
template <class K>
__global__ void __launch_bounds__(kernels::reduce_block) fused_reduce(K k, typename K::Acc* partial, index_t chunks,
                                                                      index_t chunk) {
  if (chunks == 1) {
    run_rows(k);
    return;
  }
  for (index_t b = blockIdx.x; b < k.space.rows * chunks; b += gridDim.x) k.run_chunk(b / chunks, b % chunks, chunks, chunk, partial);
}
/// Split rows, pass 2: one thread per row merges its partials.
template <class K>
__global__ void fused_row_finish(K k, typename K::Acc* partial, index_t chunks) {
  for (index_t r = index_t(blockIdx.x) * blockDim.x + threadIdx.x; r < k.space.rows; r += index_t(gridDim.x) * blockDim.x)
    k.finish_row(r, partial, chunks);
}
template <class K>
void launch_rows(const cuda_executor& ex, const K& k) {
  count_launches(ex);
  if (rehearsing()) return;
  if (k.space.rows == 0) return;
  const index_t blocks = std::min<index_t>((k.space.rows + rows_per_block(k) - 1) / rows_per_block(k), index_t(1) << 20);
  fused_rows<<<unsigned(blocks), kernels::reduce_block, 0, ex.stream>>>(k);
  check_cuda(cudaGetLastError(), "launch of kernel fused_rows (row reduction/normalization)");
}
template <class K>
void launch_reduce_rows(const cuda_executor& ex, const K& k) {
  count_launches(ex);
  if (rehearsing()) return;
  if (k.space.rows == 0) return;
  const index_t blocks = std::min<index_t>((k.space.rows + rows_per_block(k) - 1) / rows_per_block(k), index_t(1) << 20);
  fused_reduce<<<unsigned(blocks), kernels::reduce_block, 0, ex.stream>>>(k, nullptr, 1, k.space.len);
  check_cuda(cudaGetLastError(), "launch of a row-reduction kernel");
}
template <class K>
void launch_row_chunks(const cuda_executor& ex, const K& k, typename K::Acc* partial, index_t chunks) {
  count_launches(ex, 2);  // partials, finalize
  if (rehearsing()) return;
  const index_t chunk = kernels::row_chunk_len(k.space.len, chunks);
  fused_reduce<<<unsigned(k.space.rows * chunks), kernels::reduce_block, 0, ex.stream>>>(k, partial, chunks, chunk);
  check_cuda(cudaGetLastError(), "launch of a split row-reduction kernel (pass 1)");
  fused_row_finish<<<unsigned((k.space.rows + kernels::row_tile.finish_threads - 1) / kernels::row_tile.finish_threads),
                     kernels::row_tile.finish_threads, 0, ex.stream>>>(k, partial, chunks);
  check_cuda(cudaGetLastError(), "launch of a split row-reduction kernel (finalize)");
}
#else
template <class K>
void launch_rows(const cuda_executor&, const K&) {
  static_assert(sizeof(K) == 0, "fusor: run(cuda(stream)): CUDA kernels can only be launched from a translation unit "
                                "compiled by nvcc (a .cu file)");
}
template <class K>
void launch_reduce_rows(const cuda_executor&, const K&) {
  static_assert(sizeof(K) == 0, "fusor: run(cuda(stream)): CUDA kernels can only be launched from a translation unit "
                                "compiled by nvcc (a .cu file)");
}
template <class K, class P>
void launch_row_chunks(const cuda_executor&, const K&, P*, index_t) {
  static_assert(sizeof(K) == 0, "fusor: run(cuda(stream)): CUDA kernels can only be launched from a translation unit "
                                "compiled by nvcc (a .cu file)");
}
#endif

/// A ReduceX kernel: one block per row, or, when the plan split its rows
/// (rule::split_rows: few, very long rows, kernels::row_chunks), two
/// launches (partials, then a finalize).
template <class Ex, class K>
void launch_reduce(const Ex& ex, const K& k, bool split_rows) {
  if (!split_rows) {
    launch_reduce_rows(ex, k);
    return;
  }
  const index_t chunks = kernels::row_chunks(k.space.rows, k.space.len);
  if (chunks <= 1)
    throw argument_error("fusor: internal: a reduction planned as split rows over " + std::to_string(k.space.rows) +
                         " rows of " + std::to_string(k.space.len) + " (plan_guard::whole_rows)");
  const auto what = [&] {
    return "run: split-row partials of a reduction (" + std::to_string(k.space.rows) + " rows x " +
           std::to_string(chunks) + " chunks)";
  };
  auto partial = allocate<typename K::Acc>(ex, checked_product(k.space.rows, chunks, what), what);
  launch_row_chunks(ex, k, partial.get(), chunks);
}

/// A group_norm group (ops/group_norm.hpp): the row-normalization kernel
/// over x with its channel dim split into (groups, channels per group), so
/// each (n, group) is one row of the dims from the split on; every operand,
/// the sink and the epilogue are read through the same split (strides only).
template <class Ex, class E, class Red, class O>
void run_group_norm(const Ex& ex, const E& e, const Red& red, const O& o) {
  const auto& x = fusor::get<0>(red.args);
  constexpr int R = rank_v<decltype(x)>;
  static_assert(R + 1 <= max_reduce_rank, "fusor: group_norm supports rank <= 7 (x has more dims)");
  const shape<R> in = shape_of(x);
  // (groups divides C: checked by shape_of; C = 0 leaves no row, any inner will do)
  const index_t inner = in[1] / red.op.groups > 0 ? in[1] / red.op.groups : 1;
  cuda::std::array<bool, R + 1> mask{};
  for (int d = 2; d <= R; ++d) mask[d] = true;
  const auto space = make_row_space<R + 1>(split_dim<R>(in, 1, inner), mask);
  auto split = [&](const auto& operand) {
    auto s = split_dim<R>(make_row_operand<R>(operand), 1, inner);
    enable_row_vectors<R + 1>(s, space);
    return s;
  };
  auto xo = split(x);
  auto g = split(fusor::get<1>(red.args));
  auto b = split(fusor::get<2>(red.args));
  const cuda::std::array<bool, R> none{};
  auto sink = split_dim<R>(make_row_sink<R>(o, none, true), 1, inner);
  auto out = [&] {
    if constexpr (is_reduction_node_v<E>) {
      return kernels::row_output<R + 1, decltype(sink)>{sink};
    } else {
      using T = value_t<Red>;
      auto ep = split_dim<R>(make_row_epilogue<R, R>(epilogue_detail::replace_spine_root<epilogue_detail::reduction_spine>(
                                                         e, accumulator_leaf<T, R>{}),
                                                     none, true),
                             1, inner);
      return kernels::row_epilogue_output<R + 1, T, decltype(sink), decltype(ep)>{sink, ep};
    }
  }();
  kernels::norm_rows<R + 1, false, decltype(xo), decltype(g), decltype(b), decltype(out)> k{
      space, xo, g, b, out, red.op.eps, red.op.has_scale, red.op.has_bias};
  launch_rows(ex, k);
}

/// The row kernels of reduction group e (not pooling): see run_reduction.
template <class Ex, class E, class Red, class O>
void run_rows_group(const Ex& ex, const E& e, const Red& red, const O& o, bool split_rows) {
  using Op = typename Red::op_type;
  const auto& x = fusor::get<0>(red.args);
  constexpr int R = rank_v<decltype(x)>;
  constexpr int RO = rank_v<E>;
  static_assert(R <= max_reduce_rank, "fusor: reductions support rank <= 8 (sum, mean, max_reduce, softmax, layer_norm, ...: x has more dims)");
  const shape<R> in = shape_of(x);
  const auto mask = red.op.template mask<R>();
  const auto space = make_row_space<R>(in, mask);
  constexpr bool full = !requires { Op::which; } && !requires { Op::reduces_axes; };
  auto xo = make_row_operand<R>(x);
  enable_row_vectors<R>(xo, space);
  auto sink = make_row_sink<R>(o, mask, full);
  auto out = [&] {
    if constexpr (is_reduction_node_v<E> || RO != rank_v<Red>) {
      return kernels::row_output<R, decltype(sink)>{sink};  // (RO != rank: handled above, never reached)
    } else {
      using T = value_t<Red>;
      auto ep = make_row_epilogue<R, RO>(
          epilogue_detail::replace_spine_root<epilogue_detail::reduction_spine>(e, accumulator_leaf<T, RO>{}), mask, full);
      return kernels::row_epilogue_output<R, T, decltype(sink), decltype(ep)>{sink, ep};
    }
  }();
  using Out = decltype(out);
  if constexpr (is_cumsum_node_v<Red>) {
    kernels::scan_rows<R, decltype(xo), Out> k{space, xo, out, red.op.exclusive, red.op.reverse};
    launch_rows(ex, k);
  } else if constexpr (is_layer_norm_stat_node_v<Red>) {
    kernels::norm_stat_rows<R, Op::inv_std_dev, decltype(xo), Out> k{space, xo, out, red.op.eps};
    launch_rows(ex, k);
  } else if constexpr (is_topk_node_v<Red>) {
    kernels::topk_rows<R, Op::returns_indices, decltype(xo), Out> k{space, xo, out, red.op.k, red.op.largest};
    launch_rows(ex, k);
  } else if constexpr (is_arg_reduce_node_v<Red>) {
    kernels::arg_rows<R, Op::is_max, decltype(xo), Out> k{space, xo, out, red.op.select_last_index};
    launch_rows(ex, k);
  } else if constexpr (requires { Op::which; }) {
    kernels::reduce_rows<R, Op::which, decltype(xo), Out> k{space, xo, out};
    launch_reduce(ex, k, split_rows);
  } else if constexpr (std::is_same_v<Op, op::softmax> || std::is_same_v<Op, op::log_softmax>) {
    kernels::softmax_rows<R, std::is_same_v<Op, op::log_softmax>, decltype(xo), Out> k{space, xo, out};
    launch_rows(ex, k);
  } else if constexpr (std::is_same_v<Op, op::layer_norm>) {
    auto g = make_row_operand<R>(fusor::get<1>(red.args));
    auto b = make_row_operand<R>(fusor::get<2>(red.args));
    enable_row_vectors<R>(g, space);
    enable_row_vectors<R>(b, space);
    kernels::norm_rows<R, false, decltype(xo), decltype(g), decltype(b), Out> k{
        space, xo, g, b, out, red.op.eps, red.op.has_gamma, red.op.has_beta};
    launch_rows(ex, k);
  } else {
    static_assert(std::is_same_v<Op, op::rms_norm>, "fusor: not a reduction-family op");
    auto g = make_row_operand<R>(fusor::get<1>(red.args));
    enable_row_vectors<R>(g, space);
    kernels::norm_rows<R, true, decltype(xo), decltype(g), decltype(g), Out> k{
        space, xo, g, g, out, red.op.eps, red.op.has_gamma, false};
    launch_rows(ex, k);
  }
}

/// Binds reduction-family expression e (a reduction/normalization node whose
/// operands are elementwise subtrees over views, optionally under an
/// elementwise epilogue) to its kernel and runs it; a ReduceX in split rows
/// when its plan says so (rule::split_rows).
template <class Ex, class E, class Outs>
void run_reduction(const Ex& ex, const E& e, const Outs& outs, bool split_rows = false) {
  static_assert(std::tuple_size_v<Outs> == 1, "fusor: a reduction group has one output");
  const auto& o = std::get<0>(outs);
  const auto& red = epilogue_detail::spine_root<epilogue_detail::reduction_spine>(e);
  using Red = std::remove_cvref_t<decltype(red)>;
  constexpr int RO = rank_v<E>;
  if constexpr (!is_reduction_node_v<E>) {
    // An epilogue operand that broadcasts the result up (layer_norm(x) + r
    // with r larger than x) is split by the planner (plan/plan_expr.hpp,
    // guard_broadcast_epilogue): the group here writes at the result's shape.
    static_assert(RO == rank_v<Red>, "fusor: internal: a reduction group whose epilogue changes the rank (plan/plan_expr.hpp)");
    // (rank 0: nothing to compare; shape<0> is a 1-element array whose
    // padding element differs between the reduce and broadcast paths)
    if constexpr (RO > 0) {
      if (shape_of(e) != shape_of(red))
        throw shape_error("fusor: internal: a reduction group's epilogue broadcasts its result to " +
                          to_string<RO>(shape_of(e)) + " (the plan should have split it)");
    }
  }
  if constexpr (is_pool_node_v<Red>) {
    run_pooling(ex, e, red, o);
  } else if constexpr (is_group_norm_node_v<Red>) {
    run_group_norm(ex, e, red, o);
  } else if constexpr (is_gather_node_v<Red>) {
    run_gather(ex, e, red, o);
  } else if constexpr (is_resize_node_v<Red>) {
    run_resize(ex, e, red, o);
  } else if constexpr (is_one_hot_node_v<Red>) {
    run_one_hot(ex, e, red, o);
  } else if constexpr (is_gather_elements_node_v<Red>) {
    run_gather_elements(ex, e, red, o);
  } else if constexpr (is_conv_transpose2d_node_v<Red>) {
    run_conv_transpose(ex, e, red, o);
  } else if constexpr (is_pad_node_v<Red>) {
    run_pad(ex, e, red, o);
  } else if constexpr (is_concat_node_v<Red>) {
    run_concat(ex, e, red, o);
  } else {
    run_rows_group(ex, e, red, o, split_rows);
  }
}

}  // namespace fusor::exec

namespace fusor::exec {
/// The row-reduction family's launcher (exec/launcher.hpp): it runs in the
/// rehearsal too (split-row partials and temporaries are reserved then).
template <>
struct launcher<kernel_family::reduction> {
  static constexpr bool rehearses = true;
  template <class Ex, class G, class E, class Outs>
  static void run(const Ex& ex, const G&, const E& e, const Outs& outs) {
    run_reduction(ex, e, outs, requires { group_rule_t<G>::rows_split; });
  }
};
}  // namespace fusor::exec
