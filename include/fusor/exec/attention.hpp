#pragma once
/// @file exec/attention.hpp
/// Binding and launching of the flash-attention kernel family
/// (kernels/attention.hpp): its launcher (exec/launcher.hpp).
#include <fusor/exec/contraction.hpp>
#include <fusor/kernels/attention.hpp>

#include <cmath>

namespace fusor::exec {

/// Runs attention kernel k's blocks on the host (OpenMP over blocks).
template <class K>
void launch_attention(const host_executor& ex, const K& k) {
  count_launches(ex);
  if (rehearsing()) return;
  const index_t blocks = k.blocks();
#if defined(_OPENMP)
  const int threads = ex.threads > 0 ? ex.threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic) if (blocks > 1) num_threads(threads)
#endif
  for (index_t b = 0; b < blocks; ++b) k.run_block_host(b);
  (void)ex;
}

#if defined(__CUDACC__)
template <class K>
__global__ void __launch_bounds__(kernels::attn_threads) fused_attention(K k) {
  for (index_t b = blockIdx.x; b < k.blocks(); b += gridDim.x) {
    k.run_block_device(b);
    __syncthreads();
  }
}
/// The same for tensor-core kernels (K::tensor_cores: 16-bit q, k, v),
/// compiled for two resident blocks per SM (at most 128 registers per
/// thread, no spills on sm_90; 43 KB of static shared memory each), so that
/// one block's softmax and tile loads overlap the other's matrix products.
template <class K>
__global__ void __launch_bounds__(kernels::attn_threads, 2) fused_attention_tc(K k) {
  for (index_t b = blockIdx.x; b < k.blocks(); b += gridDim.x) {
    k.run_block_device(b);
    __syncthreads();
  }
}
template <class K>
void launch_attention(const cuda_executor& ex, const K& k) {
  count_launches(ex);
  if (rehearsing()) return;
  if (k.blocks() == 0) return;
  const index_t blocks = std::min<index_t>(k.blocks(), index_t(1) << 20);
  if constexpr (K::tensor_cores) fused_attention_tc<<<unsigned(blocks), kernels::attn_threads, 0, ex.stream>>>(k);
  else fused_attention<<<unsigned(blocks), kernels::attn_threads, 0, ex.stream>>>(k);
  check_cuda(cudaGetLastError(), K::tensor_cores ? "launch of kernel fused_attention_tc (flash attention, tensor cores)"
                                                 : "launch of kernel fused_attention (flash attention)");
}
#else
template <class K>
void launch_attention(const cuda_executor&, const K&) {
  static_assert(sizeof(K) == 0, "fusor: run(cuda(stream)): CUDA kernels can only be launched from a translation unit "
                                "compiled by nvcc (a .cu file)");
}
#endif

/// Throws unsupported_error when attention node e cannot run on the flash
/// kernel: softmax over another axis than the keys, head_dim (of q/k or v)
/// > kernels::attn_max_dim. run() calls it for every attention node of the
/// plan before the first kernel launches.
template <class Q, class K, class V, class M>
void check_attention_supported(const node<op::attention, Q, K, V, M>& e) {
  constexpr int R = rank_v<Q>;
  const auto& op = e.op;
  const auto g = op.template geometry<R>(shape_of(fusor::get<0>(e.args)), shape_of(fusor::get<1>(e.args)),
                                          shape_of(fusor::get<2>(e.args)));
  if (op.softmax_axis != -1)
    throw unsupported_error("fusor: attention: softmax(matmul(q, transpose(k))) over axis " +
                            std::to_string(op.softmax_axis) + " is not attention (softmax over the keys, axis -1); wrap "
                            "the scores in fusor::materialize(...) to run it as written");
  if (g.d > kernels::attn_max_dim || g.dv > kernels::attn_max_dim)
    throw unsupported_error("fusor: attention: head_dim " + std::to_string(g.d > g.dv ? g.d : g.dv) +
                            " is larger than the kernel's maximum " + std::to_string(kernels::attn_max_dim) + " (q " +
                            to_string<R>(shape_of(fusor::get<0>(e.args))) + ", k " + to_string<R>(shape_of(fusor::get<1>(e.args))) +
                            ", v " + to_string<R>(shape_of(fusor::get<2>(e.args))) + ")");
}

/// Binds attention expression e (operands: elementwise trees over views)
/// and runs it into outs.
/// @throws unsupported_error for head_dim > kernels::attn_max_dim.
template <class Ex, class Q, class K, class V, class M, class Outs>
void run_attention(const Ex& ex, const node<op::attention, Q, K, V, M>& e, const Outs& outs) {
  static_assert(std::tuple_size_v<Outs> == 1, "fusor: an attention group has one output");
  constexpr int R = rank_v<Q>;
  const auto& o = std::get<0>(outs);
  const auto& op = e.op;
  check_attention_supported(e);
  const auto g = op.template geometry<R>(shape_of(fusor::get<0>(e.args)), shape_of(fusor::get<1>(e.args)),
                                          shape_of(fusor::get<2>(e.args)));
  // The output must not overlap q, k or v: other blocks still read them.
  contraction_detail::check_operand_aliasing<4>(o, e);
  auto q = make_row_operand<R>(fusor::get<0>(e.args));
  auto k = make_row_operand<R>(fusor::get<1>(e.args));
  auto v = make_row_operand<R>(fusor::get<2>(e.args));
  constexpr bool has_mask = !contraction_detail::is_absent_v<M>;
  auto mask = [&] {
    if constexpr (has_mask) return make_row_operand<4>(fusor::get<3>(e.args));
    else return 0;
  }();
  auto sink = make_sink<R>(o);
  kernels::attention_kernel<R, decltype(q), decltype(k), decltype(v), decltype(mask), has_mask, decltype(sink)> kern{
      q, k, v, mask, sink, {}, {}, {}, {}};
  kern.qi = {op.p.layout, g.d};
  kern.ki = {op.p.layout, g.d};
  kern.vi = {op.p.layout, g.dv};
  kern.oi = {op.p.layout, g.dv};
  kern.batch = g.b;
  kern.hq = g.hq;
  kern.hkv = g.hkv;
  kern.sq = g.sq;
  kern.sk = g.sk;
  kern.d = g.d;
  kern.dv = g.dv;
  kern.scale = std::isnan(op.p.scale) ? float(1.0 / std::sqrt(double(g.d))) : op.p.scale;
  kern.causal = op.p.causal;
  if constexpr (std::is_same_v<Ex, host_executor>) {
    if (ex.attention_key_tile > 0) kern.host_keys = std::min(ex.attention_key_tile, kernels::attn_keys);
  }
  launch_attention(ex, kern);
}

}  // namespace fusor::exec

namespace fusor::exec {
/// The attention family's launcher (exec/launcher.hpp).
template <>
struct launcher<kernel_family::attention> {
  static constexpr bool rehearses = true;
  template <class Ex, class G, class E, class Outs>
  static void run(const Ex& ex, const G&, const E& e, const Outs& outs) {
    run_attention(ex, e, outs);
  }
};
}  // namespace fusor::exec
