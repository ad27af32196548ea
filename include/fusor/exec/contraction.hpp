#pragma once
/// @file exec/contraction.hpp
/// Binding and launching of the contraction kernel family
/// (kernels/contraction.hpp): its launcher (exec/launcher.hpp).
///
/// A contraction group's expression (operand groups already materialized as
/// views) is an epilogue tree over exactly one contraction node C reached
/// through elementwise ops. Binding:
///  1. the epilogue: the group's tree with C replaced by C's own epilogue
///     (linear/conv bias, gemm's alpha * acc + beta * C) over an accumulator
///     leaf, lowered like an elementwise kernel at the output index;
///  2. the operands of C: elementwise trees (k_operand), a layer_norm/rms_norm
///     over A's last dim (norm_operand), or a conv reached through
///     elementwise ops (conv_operand, the depthwise conv of a MobileNet block);
///  3. the problem (gemm_problem or conv_problem) and the tile kernel, run
///     by OpenMP over tiles on the host or one CUDA block per tile.
/// Where a fused form cannot apply at run time (the epilogue broadcasts C's
/// result to a larger shape; a norm over more than A's last dim), the
/// offending part is computed into a temporary first: same values, one
/// more kernel.
#include <fusor/exec/contraction_problem.hpp>
#include <fusor/exec/cuda_gemm.hpp>
#include <fusor/exec/host_gemm.hpp>
#include <fusor/recognize/same_value.hpp>

namespace fusor::exec {

/// Runs kernel k on the host: with the host GEMM engine when it applies
/// (exec/host_gemm.hpp), else its tiles (each the host twin of one block),
/// or in direct mode a conv's output rows (the device twin: its output
/// elements in chunks).
template <class K>
void launch_tiles(const host_executor& ex, const K& k) {
  count_launches(ex);
  if (rehearsing()) return;
  if (run_host_gemm_engine(ex, k)) return;  // OpenBLAS blocks + fused epilogue (exec/host_gemm.hpp)
#if defined(_OPENMP)
  const int threads = ex.threads > 0 ? ex.threads : omp_get_max_threads();
#endif
  if constexpr (kernels::is_conv_problem_v<std::remove_cvref_t<decltype(k.p)>>) {
    if (k.direct && ex.gemm_engine != host_gemm_engine::device_twin) {
      // An output row at a time, the row's outputs in SIMD lanes
      // (kernels/parts/conv_runs.hpp; the same bits as direct_at).
      const index_t rows = kernels::conv_direct_row_count(k.p);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (k.direct_size() > 4096) num_threads(threads)
#endif
      for (index_t r = 0; r < rows; ++r) kernels::conv_direct_row(k.p, r);
      return;
    }
  }
  if (k.direct) {
    const index_t n = k.direct_size(), chunk = 4096, chunks = (n + chunk - 1) / chunk;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (chunks > 1) num_threads(threads)
#endif
    for (index_t c = 0; c < chunks; ++c)
      for (index_t e = c * chunk; e < std::min(n, (c + 1) * chunk); ++e) k.direct_at(e);
  } else {
    const index_t tiles = k.tiles();
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic) if (tiles > 1) num_threads(threads)
#endif
    for (index_t t = 0; t < tiles; ++t) k.run_tile_host(t);
  }
  (void)ex;
}

#if defined(__CUDACC__)
/// One block of kernels::gemm_threads threads per output tile (grid-stride).
template <class K>
__global__ void __launch_bounds__(kernels::gemm_threads) fused_gemm(K k) {
  if (k.direct) {
    for (index_t e = index_t(blockIdx.x) * blockDim.x + threadIdx.x; e < k.direct_size(); e += index_t(gridDim.x) * blockDim.x)
      k.direct_at(e);
    return;
  }
  for (index_t t = blockIdx.x; t < k.tiles(); t += gridDim.x) {
    k.run_tile_device(t);
    __syncthreads();  // shared tiles are reused by the next tile
  }
}
template <class K>
void launch_tiles(const cuda_executor& ex, const K& k) {
  count_launches(ex);
  // cuBLASLt + fusor's epilogue where it applies (exec/cuda_gemm.hpp; it
  // takes its buffers in the rehearsal too)
  if (run_cuda_gemm_engine(ex, k)) return;
  if (rehearsing()) return;
  const index_t work = k.direct ? (k.direct_size() + kernels::gemm_threads - 1) / kernels::gemm_threads : k.tiles();
  if (work == 0) return;
  const index_t blocks = std::min<index_t>(work, index_t(1) << 20);
  fused_gemm<<<unsigned(blocks), kernels::gemm_threads, 0, ex.stream>>>(k);
  check_cuda(cudaGetLastError(), "launch of kernel fused_gemm (GEMM/conv tiles)");
}
#else
template <class K>
void launch_tiles(const cuda_executor&, const K&) {
  static_assert(sizeof(K) == 0, "fusor: run(cuda(stream)): CUDA kernels can only be launched from a translation unit "
                                "compiled by nvcc (a .cu file)");
}

#endif

template <class Ex, class E, class Outs>
void run_contraction(const Ex& ex, const E& e, const Outs& outs);

/// Binds and runs one contraction group's expression e into outs.
template <class Ex, class E, class Outs>
void run_contraction(const Ex& ex, const E& e, const Outs& outs) {
  static_assert(std::tuple_size_v<Outs> == 1, "fusor: a contraction group has one output");
  const auto& o = std::get<0>(outs);
  const auto& c = contraction_detail::spine_contraction(e);
  using C = std::remove_cvref_t<decltype(c)>;
  using Op = typename C::op_type;
  using T = value_t<C>;
  constexpr int RO = rank_v<E>;
  constexpr int RC = rank_v<C>;

  // An epilogue that broadcasts C's result up (a larger output) is split by
  // the planner (plan/plan_expr.hpp, guard_broadcast_epilogue): the group
  // here writes at C's shape.
  static_assert(RO == RC, "fusor: internal: a contraction group whose epilogue changes the rank (plan/plan_expr.hpp)");
  if constexpr (contraction_detail::may_broadcast_up_v<E>) {
    if (shape_of(c) != shape_of(e))
      throw shape_error("fusor: internal: a contraction group's epilogue broadcasts its result to " +
                        to_string<RO>(shape_of(e)) + " (the plan should have split it)");
  }
  {
    // gemm with trans_a and a norm prologue (A's normalized rows are not the
    // GEMM's rows) is planned with A normalized first (plan/plan_expr.hpp,
    // guard_contraction_prologue).
    if constexpr (std::is_same_v<Op, op::gemm> &&
                  fusor::detail::is_norm_node_v<std::remove_cvref_t<decltype(fusor::get<0>(c.args))>>) {
      if (c.op.trans_a)
        throw argument_error("fusor: internal: gemm with trans_a and a norm prologue (the plan should have split it)");
    }
    contraction_detail::check_operand_aliasing(o, c);
    if constexpr (is_conv_op_v<Op>) {
      using A0 = std::remove_cvref_t<decltype(fusor::get<0>(c.args))>;
      using W0 = static_extents_t<std::remove_cvref_t<decltype(fusor::get<1>(c.args))>>;
      // (A weight with static extents [.., .., 1, 1] is 1x1 by its type: no
      // materialization path is instantiated, one kernel entry.)
      if constexpr (spine_contractions_v<A0> > 0 && !(W0::static_extent(2) == 1 && W0::static_extent(3) == 1)) {
        // A depthwise conv read by a conv that is not 1x1 (it would be
        // recomputed kh * kw times per element) is planned to run first
        // (plan/plan_expr.hpp, guard_contraction_prologue).
        const auto ws = shape_of(fusor::get<1>(c.args));
        if (ws[2] * ws[3] != 1)
          throw argument_error("fusor: internal: a depthwise conv inside a conv that is not 1x1 (the plan should have "
                               "split it)");
      }
      auto ep = contraction_detail::make_epilogue<RO>(
          contraction_detail::replace_spine(e, contraction_detail::own_epilogue(c, accumulator_leaf<T, RO>{})));
      auto sink = make_sink<RO>(o);
      using A = std::remove_cvref_t<decltype(fusor::get<0>(c.args))>;
      auto a = [&] {
        if constexpr (spine_contractions_v<A> > 0) return contraction_detail::make_conv_operand(fusor::get<0>(c.args));
        else return contraction_detail::make_plain<4>(fusor::get<0>(c.args));
      }();
      auto b = contraction_detail::make_plain<4>(fusor::get<1>(c.args));
      kernels::conv_problem<decltype(a), decltype(b), decltype(ep), decltype(sink)> p{a, b, ep, sink};
      contraction_detail::setup_conv(p, c.op, shape_of(fusor::get<0>(c.args)), shape_of(fusor::get<1>(c.args)));
      kernels::gemm_kernel<decltype(p)> k{p, (p.M + kernels::gemm_bm - 1) / kernels::gemm_bm,
                                          (p.N + kernels::gemm_bn - 1) / kernels::gemm_bn};
      // Fewer than 16 output channels per group (depthwise): tiles of 64
      // columns would be mostly idle; one element per step instead.
      k.direct = p.N < 16;
      launch_tiles(ex, k);
    } else {
      auto p = contraction_detail::make_gemm_problem(e, o);
      kernels::gemm_kernel<decltype(p)> k{p, (p.M + kernels::gemm_bm - 1) / kernels::gemm_bm,
                                          (p.N + kernels::gemm_bn - 1) / kernels::gemm_bn};
      launch_tiles(ex, k);
    }
  }
}

/// Runs linear group expressions sharing input x (attention's Q, K, V
/// projections; two or more sibling linears) as one multi-output GEMM; when
/// the plan found their inputs different at run time
/// (rule::separate_projections, plan_guard::shared_projection_input), as one
/// GEMM each (each launch counts itself). Separate is the rule's, known at
/// compile time: the merged GEMM is instantiated only for a group that runs
/// it.
template <bool Separate, class Ex, class... X, class Outs>
void run_contraction_siblings(const Ex& ex, const std::tuple<X...>& xs, const Outs& outs) {
  constexpr std::size_t n = sizeof...(X);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (contraction_detail::check_operand_aliasing(std::get<I>(outs),
                                                contraction_detail::spine_contraction(std::get<I>(xs))),
     ...);
    using P0 = decltype(contraction_detail::make_gemm_problem(std::get<0>(xs), std::get<0>(outs)));
    if constexpr (Separate) {
      if constexpr ((std::is_same_v<P0, decltype(contraction_detail::make_gemm_problem(std::get<I>(xs),
                                                                                       std::get<I>(outs)))> &&
                     ...)) {
        // One launch per projection of the same multi-output kernel, each
        // with one non-empty part (no second kernel type is instantiated).
        const P0 ps[n] = {contraction_detail::make_gemm_problem(std::get<I>(xs), std::get<I>(outs))...};
        for (std::size_t i = 0; i < n; ++i) {
          P0 empty = ps[i];
          empty.N = 0;
          kernels::concat_n_problem<std::conditional_t<(I < n), P0, void>...> p{{(I == i ? ps[i] : empty)...}};
          p.M = ps[i].M;
          p.K = ps[i].K;
          p.N = ps[i].N;
          kernels::gemm_kernel<decltype(p)> k{p, (p.M + kernels::gemm_bm - 1) / kernels::gemm_bm,
                                              (p.N + kernels::gemm_bn - 1) / kernels::gemm_bn};
          launch_tiles(ex, k);
        }
      } else {
        (run_contraction(ex, std::get<I>(xs), std::make_tuple(std::get<I>(outs))), ...);
      }
    } else {
      auto p = kernels::concat_n_problem<decltype(contraction_detail::make_gemm_problem(std::get<I>(xs),
                                                                                        std::get<I>(outs)))...>{
          {contraction_detail::make_gemm_problem(std::get<I>(xs), std::get<I>(outs))...}};
      p.M = fusor::get<0>(p.parts).M;
      p.K = fusor::get<0>(p.parts).K;
      p.N = (index_t(0) + ... + fusor::get<I>(p.parts).N);
      kernels::gemm_kernel<decltype(p)> k{p, (p.M + kernels::gemm_bm - 1) / kernels::gemm_bm,
                                          (p.N + kernels::gemm_bn - 1) / kernels::gemm_bn};
      launch_tiles(ex, k);
    }
  }(std::make_index_sequence<n>{});
}

}  // namespace fusor::exec

namespace fusor::exec {
/// The contraction family's launcher (exec/launcher.hpp): one GEMM / conv
/// group, or linears over one input (attention's Q/K/V projections, sibling
/// linears) as one multi-output GEMM.
template <>
struct launcher<kernel_family::contraction> {
  static constexpr bool rehearses = true;
  template <class Ex, class G, class E, class Outs>
  static void run(const Ex& ex, const G&, const E& e, const Outs& outs) {
    run_contraction(ex, e, outs);
  }
  template <class Ex, class G, class... X, class Outs>
  static void run_siblings(const Ex& ex, const G&, const std::tuple<X...>& xs, const Outs& outs) {
    static_assert(sizeof...(X) >= 2, "fusor: internal: a multi-output contraction group has two or more outputs");
    constexpr bool separate = requires { group_rule_t<G>::projections_separate; };
    run_contraction_siblings<separate>(ex, xs, outs);
  }
};
}  // namespace fusor::exec
