#pragma once
/// @file exec/resize.hpp
/// Binding and launching of a resize group (ops/resize.hpp; kernel
/// kernels::resize_rows): its operand addressed by input indices, the sink
/// and epilogue by output indices. Host: an OpenMP loop over the outputs;
/// CUDA: one thread per output (256-thread blocks, grid-stride).
#include <fusor/exec/row_binding.hpp>
#include <fusor/kernels/resize.hpp>

namespace fusor::exec {

template <class K>
void launch_resize(const host_executor& ex, const K& k) {
  count_launches(ex);
  if (rehearsing()) return;
  const index_t n = k.space.outputs;
#if defined(_OPENMP)
  const int threads = ex.threads > 0 ? ex.threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) if (n > (index_t(1) << 14)) num_threads(threads)
#endif
  for (index_t o = 0; o < n; ++o) k.run_output(o);
  (void)ex;
}

#if defined(__CUDACC__)
template <class K>
__global__ void __launch_bounds__(256) fused_resize(K k) {
  for (index_t o = index_t(blockIdx.x) * blockDim.x + threadIdx.x; o < k.space.outputs; o += index_t(gridDim.x) * blockDim.x)
    k.run_output(o);
}
template <class K>
void launch_resize(const cuda_executor& ex, const K& k) {
  count_launches(ex);
  if (rehearsing()) return;
  if (k.space.outputs == 0) return;
  const index_t blocks = std::min<index_t>((k.space.outputs + 255) / 256, index_t(1) << 20);
  fused_resize<<<unsigned(blocks), 256, 0, ex.stream>>>(k);
  check_cuda(cudaGetLastError(), "launch of kernel fused_resize");
}
#else
template <class K>
void launch_resize(const cuda_executor&, const K&) {
  static_assert(sizeof(K) == 0, "fusor: run(cuda(stream)): CUDA kernels can only be launched from a translation unit "
                                "compiled by nvcc (a .cu file)");
}
#endif

/// Binds resize group e (resize node `rz` under an optional elementwise
/// epilogue of its result's shape) to output `o` and runs it.
template <class Ex, class E, class Rz, class O>
void run_resize(const Ex& ex, const E& e, const Rz& rz, const O& o) {
  constexpr int R = 4;
  const auto& x = fusor::get<0>(rz.args);
  const shape<R> in = shape_of(x), os = shape_of(rz);
  kernels::resize_space<R> space;
  for (int d = 0; d < R; ++d) {
    space.out_extent[d] = os[d];
    space.outputs *= os[d];
  }
  space.hd = rz.op.h_dim();
  for (int d = 0; d < 2; ++d) {
    space.in[d] = in[space.hd + d];
    space.out[d] = os[space.hd + d];
    space.scale[d] = rz.op.coordinate_scale(d, in[space.hd + d]);
  }
  space.mode = rz.op.params.mode;
  space.coordinates = rz.op.params.coordinates;
  space.rounding = rz.op.params.rounding;
  auto xo = make_row_operand<R>(x);
  const cuda::std::array<bool, R> none{};
  auto sink = make_row_sink<R>(o, none, true);
  if constexpr (is_resize_node_v<E>) {
    using Out = kernels::row_output<R, decltype(sink)>;
    launch_resize(ex, kernels::resize_rows<R, decltype(xo), Out>{space, xo, Out{sink}});
  } else {
    using T = value_t<Rz>;
    auto ep = make_row_epilogue<R, R>(
        epilogue_detail::replace_spine_root<epilogue_detail::reduction_spine>(e, accumulator_leaf<T, R>{}), none, true);
    using Out = kernels::row_epilogue_output<R, T, decltype(sink), decltype(ep)>;
    launch_resize(ex, kernels::resize_rows<R, decltype(xo), Out>{space, xo, Out{sink, ep}});
  }
}

}  // namespace fusor::exec
