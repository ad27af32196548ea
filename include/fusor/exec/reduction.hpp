#pragma once
/// @file exec/reduction.hpp
/// Binding and launching of the row-reduction kernel family
/// (kernels/reduction.hpp): defines kernel_family::reduction::run for the
/// host executor (OpenMP over rows) and, in nvcc translation units, the CUDA
/// executor (one 256-thread block per row, grid-stride over rows).
#include <fusor/exec/bind.hpp>
#include <fusor/exec/epilogue.hpp>
#include <fusor/exec/cuda_backend.hpp>
#include <fusor/exec/host_backend.hpp>
#include <fusor/kernels/reduction.hpp>

namespace fusor::exec {

/// The row space of a rank-R input of shape `in` with reduced dims `mask`.
template <int R, class Mask>
kernels::row_space<R> make_row_space(const shape<R>& in, const Mask& mask) {
  kernels::row_space<R> s;
  for (int d = 0; d < R; ++d) {
    s.extent[d] = in[d];
    if (mask[d]) {
      s.red[s.nred++] = d;
      s.len *= in[d];
    } else {
      s.kept[s.nkept++] = d;
      s.rows *= in[d];
    }
  }
  return s;
}

/// An operand subtree (the prologue) evaluated at rank-R input indices.
template <int R, class E>
auto make_row_operand(const E& e) {
  auto l = lower(e, std::tuple<>{});
  auto sources = std::apply([](const auto&... v) { return cuda::std::make_tuple(make_source<R>(v)...); }, l.slots);
  return kernels::k_operand<R, decltype(sources), decltype(l.tree)>{sources, l.tree};
}

/// The output sink addressed by input indices. Normalizations (`full`) write
/// the input's shape. Reductions: a same-rank output (keepdims) uses its
/// strides on kept dims (reduced dims are 1, stride 0); a lower-rank output
/// maps kept dim k to its dim k.
template <int R, class V, class Mask>
auto make_row_sink(const V& v, const Mask& mask, bool full) {
  static_assert(!std::is_const_v<typename V::element_type>, "fusor: run: an output view must not be const");
  kernels::k_sink<typename V::value_type, R> s{v.data(), {}};
  for (int d = 0, k = 0; d < R; ++d) {
    if constexpr (V::rank == R) {
      s.stride[d] = (mask[d] && !full) ? 0 : v.stride(d);
    } else {
      if (!mask[d]) s.stride[d] = v.stride(k++);
    }
  }
  return s;
}

/// Runs kernel k's rows on the host (the same run_row the CUDA block runs).
template <class K>
void launch_rows(const host_executor& ex, const K& k) {
  const index_t rows = k.space.rows;
#if defined(_OPENMP)
  const int threads = ex.threads > 0 ? ex.threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) if (rows > 1 && rows * k.space.len > (index_t(1) << 14)) num_threads(threads)
#endif
  for (index_t r = 0; r < rows; ++r) k.run_row(r);
  (void)ex;
}

#if defined(__CUDACC__)
/// One block of kernels::reduce_block threads per row (grid-stride over rows).
template <class K>
__global__ void __launch_bounds__(kernels::reduce_block) fused_rows(K k) {
  for (index_t r = blockIdx.x; r < k.space.rows; r += gridDim.x) k.run_row(r);
}
template <class K>
void launch_rows(const cuda_executor& ex, const K& k) {
  if (k.space.rows == 0) return;
  const index_t blocks = std::min<index_t>(k.space.rows, index_t(1) << 20);
  fused_rows<<<unsigned(blocks), kernels::reduce_block, 0, ex.stream>>>(k);
  check_cuda(cudaGetLastError(), "launch of kernel fused_rows (row reduction/normalization)");
}
#else
template <class K>
void launch_rows(const cuda_executor&, const K&) {
  static_assert(sizeof(K) == 0, "fusor: run(cuda(stream)): CUDA kernels can only be launched from a translation unit "
                                "compiled by nvcc (a .cu file)");
}
#endif

/// The epilogue of a reduction group: expression `ep` (the group's tree with
/// the reduction replaced by an accumulator leaf) with its sources addressed
/// by rank-R INPUT indices, like the output (see make_row_sink): an operand
/// of the output's shape (rank RO) is first broadcast to RO, then mapped to
/// the input's dims.
template <int R, int RO, class E, class Mask>
auto make_row_epilogue(const E& ep, const Mask& mask, bool full) {
  auto l = lower(ep, std::tuple<>{});
  auto map = [&](const auto& v) {
    using V = std::remove_cvref_t<decltype(v)>;
    const auto st = broadcast_strides<RO, V::rank>(v.shape(), v.strides());
    kernels::k_source<typename V::value_type, R> src{v.data(), {}};
    for (int d = 0, k = 0; d < R; ++d) {
      if constexpr (RO == R) {
        src.stride[d] = (mask[d] && !full) ? 0 : st[d];
      } else {
        if (!mask[d]) src.stride[d] = st[k++];
      }
    }
    return src;
  };
  auto sources = std::apply([&](const auto&... v) { return cuda::std::make_tuple(map(v)...); }, l.slots);
  return kernels::k_epilogue<R, decltype(sources), decltype(l.tree)>{sources, l.tree};
}

/// Binds reduction-family expression e (a reduction/normalization node whose
/// operands are elementwise subtrees over views, optionally under an
/// elementwise epilogue) to its kernel and runs it.
template <class Ex, class E, class Outs>
void run_reduction(const Ex& ex, const E& e, const Outs& outs) {
  static_assert(std::tuple_size_v<Outs> == 1, "fusor: a reduction group has one output");
  const auto& o = std::get<0>(outs);
  const auto& red = epilogue_detail::spine_root<epilogue_detail::reduction_spine>(e);
  using Red = std::remove_cvref_t<decltype(red)>;
  using Op = typename Red::op_type;
  const auto& x = std::get<0>(red.args);
  constexpr int R = rank_v<decltype(x)>;
  constexpr int RO = rank_v<E>;
  if constexpr (!is_reduction_node_v<E>) {
    // An epilogue operand broadcasts the result up (layer_norm(x) + r with r
    // larger than x): the reduction first, then the elementwise rest.
    constexpr int RR = rank_v<Red>;
    bool split = RO != RR;
    if constexpr (RO == RR) split = shape_of(e) != shape_of(red);
    if (split) {
      using T = value_t<Red>;
      const auto s = shape_of(red);
      auto buffer = allocate<T>(ex, element_count<RR>(s, "temporary"));
      dextents<RR> ext = [&]<std::size_t... D>(std::index_sequence<D...>) { return dextents<RR>(s[D]...); }(
          std::make_index_sequence<RR>{});
      const auto view = make_view<typename Ex::space>(buffer.get(), ext);
      run_reduction(ex, red, std::make_tuple(view));
      const auto rest = epilogue_detail::replace_spine_root<epilogue_detail::reduction_spine>(e, view);
      const auto k = make_elementwise_kernel<RO>(shape_of(rest), outs, rest);
      launch(ex, k, "epilogue of a broadcast reduction");
      return;
    }
  }
  static_assert(R <= max_reduce_rank, "fusor: reductions support rank <= 8");
  const shape<R> in = shape_of(x);
  const auto mask = red.op.template mask<R>();
  const auto space = make_row_space<R>(in, mask);
  constexpr bool full = !requires { Op::which; };
  auto xo = make_row_operand<R>(x);
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
  if constexpr (requires { Op::which; }) {
    kernels::reduce_rows<R, Op::which, decltype(xo), Out> k{space, xo, out};
    launch_rows(ex, k);
  } else if constexpr (std::is_same_v<Op, op::softmax> || std::is_same_v<Op, op::log_softmax>) {
    kernels::softmax_rows<R, std::is_same_v<Op, op::log_softmax>, decltype(xo), Out> k{space, xo, out};
    launch_rows(ex, k);
  } else if constexpr (std::is_same_v<Op, op::layer_norm>) {
    auto g = make_row_operand<R>(std::get<1>(red.args));
    auto b = make_row_operand<R>(std::get<2>(red.args));
    kernels::norm_rows<R, false, decltype(xo), decltype(g), decltype(b), Out> k{
        space, xo, g, b, out, red.op.eps, red.op.has_gamma, red.op.has_beta};
    launch_rows(ex, k);
  } else {
    static_assert(std::is_same_v<Op, op::rms_norm>, "fusor: not a reduction-family op");
    auto g = make_row_operand<R>(std::get<1>(red.args));
    kernels::norm_rows<R, true, decltype(xo), decltype(g), decltype(g), Out> k{
        space, xo, g, g, out, red.op.eps, red.op.has_gamma, false};
    launch_rows(ex, k);
  }
}

}  // namespace fusor::exec

namespace fusor {
template <class Ex, class E, class Outs>
void kernel_family::reduction::run(const Ex& ex, const E& e, const Outs& outs) {
  exec::run_reduction(ex, e, outs);
}
}  // namespace fusor
