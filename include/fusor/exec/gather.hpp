#pragma once
/// @file exec/gather.hpp
/// Binding and launching of a gather group (ops/gather.hpp; kernel
/// kernels::gather_rows): data and index operands addressed by their own
/// indices, the sink and epilogue by output indices. Host: every index is
/// checked before the kernel runs (argument_error naming the first bad one),
/// then an OpenMP loop over the outputs. CUDA: one thread per output; a bad
/// index sets a device flag, and the executor synchronizes the stream after
/// the launch to report it (device_error).
#include <fusor/exec/row_binding.hpp>
#include <fusor/kernels/gather.hpp>
#include <fusor/ops/gather.hpp>
#include <fusor/ops/one_hot.hpp>

#include <string>

namespace fusor::exec {

/// Throws argument_error for the first index of kernel k outside
/// [-extent, extent) (host memory only: it reads the index operand here).
template <class K>
void check_gather_indices(const K& k, const std::string& data_shape) {
  constexpr int RO = K::RO, RI = K::index_rank;
  const int d0 = K::index_dim0(k.space.axis);  // output dims [d0, d0 + RI) address the indices
  index_t count = 1;
  for (int q = 0; q < RI; ++q) count *= k.space.out_extent[d0 + q];
  // (also when the output is empty because data has an empty dim elsewhere:
  // NumPy's take refuses those indices too)
  for (index_t p = 0; p < count; ++p) {
    kernels::index_array<RO> oi{};
    index_t r = p;
    for (int q = RI - 1; q >= 0; --q) {
      oi[d0 + q] = r % k.space.out_extent[d0 + q];
      r /= k.space.out_extent[d0 + q];
    }
    const index_t i = k.index_at(oi);
    if (i < 0 || i >= k.space.extent) {
      std::string at = "[";
      for (int q = 0; q < RI; ++q) at += (q ? ", " : "") + std::to_string(oi[d0 + q]);
      throw argument_error("fusor: " + std::string(K::name) + ": index " +
                           std::to_string(i < 0 ? i - k.space.extent : i) + " at " + at +
                           "] of indices is out of range for axis " + std::to_string(k.space.axis) + " of data " +
                           data_shape + " (want -" + std::to_string(k.space.extent) + " .. " +
                           std::to_string(k.space.extent - 1) + ")");
    }
  }
}

template <class K>
void launch_gather(const host_executor& ex, const K& k, const std::string& data_shape) {
  if (!rehearsing()) check_gather_indices(k, data_shape);  // before anything is written
  launch_outputs(ex, k, K::name);
}

#if defined(__CUDACC__)
template <class K>
__global__ void __launch_bounds__(kernels::elementwise_threads) fused_gather(K k) {
  for (index_t o = index_t(blockIdx.x) * blockDim.x + threadIdx.x; o < k.space.outputs; o += index_t(gridDim.x) * blockDim.x)
    k.run_output(o);
}
template <class K>
void launch_gather(const cuda_executor& ex, K k, const std::string& data_shape) {
  const auto what = [] { return "run: " + std::string(K::name) + "'s index check flag"; };
  auto flag = allocate<int>(ex, 1, what);
  count_launches(ex);
  if (rehearsing()) return;
  if (k.space.outputs == 0) return;
  k.bad = flag.get();
  check_cuda(cudaMemsetAsync(k.bad, 0, sizeof(int), ex.stream), "gather: clearing the index check flag");  // (gather and gather_elements)
  const index_t blocks = kernels::grid_stride_blocks(k.space.outputs);
  fused_gather<<<unsigned(blocks), kernels::elementwise_threads, 0, ex.stream>>>(k);
  check_cuda(cudaGetLastError(), "launch of kernel fused_gather");
  int bad = 0;
  check_cuda(cudaMemcpyAsync(&bad, k.bad, sizeof(int), cudaMemcpyDeviceToHost, ex.stream), "gather: reading the index check flag");
  check_cuda(cudaStreamSynchronize(ex.stream), "gather: waiting for the index check");
  if (bad)
    throw device_error("fusor: " + std::string(K::name) + ": an index is out of range for axis " + std::to_string(k.space.axis) + " of data " +
                       data_shape + " (want -" + std::to_string(k.space.extent) + " .. " +
                       std::to_string(k.space.extent - 1) + "); the output's elements for it hold 0");
}
#else
template <class K>
void launch_gather(const cuda_executor&, const K&, const std::string&) {
  static_assert(sizeof(K) == 0, "fusor: run(cuda(stream)): CUDA kernels can only be launched from a translation unit "
                                "compiled by nvcc (a .cu file)");
}
#endif

/// Binds gather group e (gather node `g` under an optional elementwise
/// epilogue of its result's shape) to output `o` and runs it.
template <class Ex, class E, class G, class O>
void run_gather(const Ex& ex, const E& e, const G& g, const O& o) {
  const auto& data = fusor::get<0>(g.args);
  const auto& idx = fusor::get<1>(g.args);
  constexpr int RD = rank_v<decltype(data)>, RI = rank_v<decltype(idx)>, RO = RD + RI - 1;
  const shape<RD> ds = shape_of(data);
  const shape<RO> os = shape_of(g);
  kernels::gather_space<RO> space;
  for (int d = 0; d < RO; ++d) {
    space.out_extent[d] = os[d];
    space.outputs *= os[d];
  }
  if constexpr (RO == 0) space.out_extent[0] = 1;
  space.axis = op::gather::data_axis<RD>(g.op.axis);
  space.extent = ds[space.axis];
  auto xo = make_row_operand<RD>(data);
  auto io = make_row_operand<RI>(idx);
  auto out = make_output_writer<RO, value_t<G>, is_gather_node_v<E>>(e, o);
  kernels::gather_rows<RD, RI, decltype(xo), decltype(io), decltype(out)> k{space, xo, io, out};
  launch_gather(ex, k, to_string<RD>(ds));
}

/// Binds gather_elements group e (node `g` under an optional elementwise
/// epilogue of its result's shape) to output `o` and runs it.
template <class Ex, class E, class G, class O>
void run_gather_elements(const Ex& ex, const E& e, const G& g, const O& o) {
  const auto& data = fusor::get<0>(g.args);
  const auto& idx = fusor::get<1>(g.args);
  constexpr int R = rank_v<decltype(data)>;
  const shape<R> ds = shape_of(data), os = shape_of(g);
  kernels::gather_space<R> space;
  for (int d = 0; d < R; ++d) {
    space.out_extent[d] = os[d];
    space.outputs *= os[d];
  }
  space.axis = op::gather::data_axis<R>(g.op.axis);
  space.extent = ds[space.axis];
  auto xo = make_row_operand<R>(data);
  auto io = make_row_operand<R>(idx);
  auto out = make_output_writer<R, value_t<G>, is_gather_elements_node_v<E>>(e, o);
  kernels::gather_elements_rows<R, decltype(xo), decltype(io), decltype(out)> k{space, xo, io, out};
  launch_gather(ex, k, to_string<R>(ds));
}

/// Binds one_hot group e (one_hot node `oh` under an optional elementwise
/// epilogue of its result's shape) to output `o` and runs it
/// (launch_outputs: one output per thread; out-of-range indices are a row of
/// `off`, ONNX's rule, not an error).
template <class Ex, class E, class OH, class O>
void run_one_hot(const Ex& ex, const E& e, const OH& oh, const O& o) {
  const auto& idx = fusor::get<0>(oh.args);
  constexpr int RI = rank_v<decltype(idx)>, RO = RI + 1;
  using T = value_t<OH>;
  const shape<RO> os = shape_of(oh);
  kernels::gather_space<RO> space;
  for (int d = 0; d < RO; ++d) {
    space.out_extent[d] = os[d];
    space.outputs *= os[d];
  }
  space.axis = oh.op.template out_axis<RI>();
  space.extent = oh.op.depth;
  auto io = make_row_operand<RI>(idx);
  const T off = from_compute<T>(oh.op.off), on = from_compute<T>(oh.op.on);
  auto out = make_output_writer<RO, T, is_one_hot_node_v<E>>(e, o);
  launch_outputs(ex, kernels::one_hot_rows<RI, T, decltype(io), decltype(out)>{space, io, out, off, on}, "one_hot");
}

}  // namespace fusor::exec
