#pragma once
/// @file exec/row_binding.hpp
/// How a row-family group (kernels/reduction.hpp) is bound to memory: its
/// row space, its prologue operands (elementwise trees over sources addressed
/// by input indices), its sink and its epilogue. Shared by the row
/// reductions (exec/reduction.hpp) and pooling (exec/pooling.hpp).
#include <fusor/exec/bind.hpp>
#include <fusor/exec/epilogue.hpp>
#include <fusor/exec/cuda_backend.hpp>
#include <fusor/exec/host_backend.hpp>
#include <fusor/exec/launcher.hpp>
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
  s.lanes = kernels::row_lanes_for(s.len);
  return s;
}

/// An operand subtree (the prologue) evaluated at rank-R input indices.
template <int R, class E>
auto make_row_operand(const E& e) {
  auto l = lower(e, std::tuple<>{});
  auto sources = std::apply([](const auto&... v) { return fusor::make_tuple(make_source<R>(v)...); }, l.slots);
  return kernels::k_operand<R, decltype(sources), decltype(l.tree)>{sources, l.tree};
}

/// Turns on vector reads of row operand `xo` (kernels::k_operand::vector_rows) when
/// every source is contiguous along the row (its reduced dims, flattened
/// with the last one fastest, have unit stride) or constant along it (stride
/// 0), and each contiguous source is aligned for a vector at every row
/// start (data pointer and kept-dim strides). Otherwise the kernel reads
/// element by element: misaligned or strided rows are a slower path, never
/// an error.
template <int R, class X>
void enable_row_vectors(X& xo, const kernels::row_space<R>& space) {
  bool ok = space.len >= kernels::row_vec;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ([&](const auto& src, bool& unit) {
      using E = typename std::remove_cvref_t<decltype(src)>::value_type;
      constexpr std::size_t align = alignof(kernels::vec<E, kernels::row_vec>);
      bool contiguous = true, constant = true;
      index_t expect = 1;
      for (int k = space.nred - 1; k >= 0; --k) {
        const int d = space.red[k];
        if (space.extent[d] == 1) continue;
        contiguous = contiguous && src.stride[d] == expect;
        constant = constant && src.stride[d] == 0;
        expect *= space.extent[d];
      }
      unit = contiguous && !constant;
      xo.row_constant[I] = constant;
      if (unit) {
        bool aligned = reinterpret_cast<std::uintptr_t>(src.data) % align == 0;
        for (int k = 0; k < space.nkept; ++k) {
          const int d = space.kept[k];
          if (space.extent[d] > 1) aligned = aligned && (std::size_t(src.stride[d]) * sizeof(E)) % align == 0;
        }
        ok = ok && aligned;
      } else {
        ok = ok && constant;
      }
    }(fusor::get<I>(xo.sources), xo.row_unit[I]), ...);
  }(std::make_index_sequence<std::size_t(X::nsources)>{});
  xo.vector_rows = ok;
}

/// The output sink addressed by input indices. Normalizations (`full`) write
/// the input's shape. Reductions: a same-rank output (keepdims) uses its
/// strides on kept dims (reduced dims are 1, stride 0); a lower-rank output
/// maps kept dim k to its dim k.
template <int R, class V, class Mask>
auto make_row_sink(const V& v, const Mask& mask, bool full) {
  static_assert(!std::is_const_v<typename V::element_type>, "fusor: run: an output view must not be const");
  kernels::k_sink<typename V::value_type, R> s{v.data(), {}};
  [[maybe_unused]] int k = 0;  // the next output dim (lower-rank output only)
  for (int d = 0; d < R; ++d) {
    if constexpr (V::rank == R) {
      s.stride[d] = (mask[d] && !full) ? 0 : v.stride(d);
    } else {
      if (!mask[d]) s.stride[d] = v.stride(k++);
    }
  }
  return s;
}

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
    [[maybe_unused]] int k = 0;  // the next output dim (lower-rank output only)
    for (int d = 0; d < R; ++d) {
      if constexpr (RO == R) {
        src.stride[d] = (mask[d] && !full) ? 0 : st[d];
      } else {
        if (!mask[d]) src.stride[d] = st[k++];
      }
    }
    return src;
  };
  auto sources = std::apply([&](const auto&... v) { return fusor::make_tuple(map(v)...); }, l.slots);
  return kernels::k_epilogue<R, decltype(sources), decltype(l.tree)>{sources, l.tree};
}

/// The output of a one-output-per-thread row kernel (pad, concat, resize,
/// gather, gather_elements, one_hot, conv_transpose2d, pooling) writing view
/// `o` of rank R, addressed by output indices: the plain sink when the group
/// is the op alone (`Bare`), else the sink behind the group's elementwise
/// epilogue `e` (the group's tree with the op replaced by its value of type
/// T), evaluated per output before the store.
template <int R, class T, bool Bare, class E, class O>
auto make_output_writer(const E& e, const O& o) {
  const cuda::std::array<bool, (R > 0 ? R : 1)> none{};  // no reduced dims
  auto sink = make_row_sink<R>(o, none, true);
  if constexpr (Bare) {
    return kernels::row_output<R, decltype(sink)>{sink};
  } else {
    auto ep = make_row_epilogue<R, R>(
        epilogue_detail::replace_spine_root<epilogue_detail::reduction_spine>(e, accumulator_leaf<T, R>{}), none, true);
    return kernels::row_epilogue_output<R, T, decltype(sink), decltype(ep)>{sink, ep};
  }
}

/// A source or sink (kernels::k_source / k_sink, rank-R strides) with dim
/// `axis` split into (extent / inner, inner): rank R + 1, the same elements
/// (group_norm's channels as (groups, channels per group)). Any strided
/// operand splits: the outer dim steps inner times the old stride.
template <int R, class S>
  requires requires(const S& s) { s.data; s.stride; }
auto split_dim(const S& s, int axis, index_t inner) {
  // a source or sink of rank R + 1 (without k_source's hoisting flags: only
  // elementwise kernels carry them)
  using T = typename S::value_type;
  using Out = std::conditional_t<std::is_same_v<S, kernels::k_sink<T, R>>, kernels::k_sink<T, R + 1>,
                                 kernels::k_source<T, R + 1>>;
  Out o{s.data, {}};
  for (int d = 0, k = 0; d < R; ++d) {
    if (d == axis) {
      o.stride[k++] = s.stride[d] * inner;
      o.stride[k++] = s.stride[d];
    } else {
      o.stride[k++] = s.stride[d];
    }
  }
  return o;
}
/// A row operand or an epilogue (kernels::k_operand / k_epilogue over rank-R
/// sources) with dim `axis` split as split_dim does; the tree is unchanged.
template <int R, class Sources, class Tree>
auto split_dim(const kernels::k_operand<R, Sources, Tree>& x, int axis, index_t inner) {
  auto src = fusor::apply([&](const auto&... s) { return fusor::make_tuple(split_dim<R>(s, axis, inner)...); }, x.sources);
  return kernels::k_operand<R + 1, decltype(src), Tree>{src, x.tree};
}
template <int R, class Sources, class Tree>
auto split_dim(const kernels::k_epilogue<R, Sources, Tree>& x, int axis, index_t inner) {
  auto src = fusor::apply([&](const auto&... s) { return fusor::make_tuple(split_dim<R>(s, axis, inner)...); }, x.sources);
  return kernels::k_epilogue<R + 1, decltype(src), Tree>{src, x.tree};
}
/// Shape `in` with dim `axis` split into (in[axis] / inner, inner).
template <int R>
shape<R + 1> split_dim(const shape<R>& in, int axis, index_t inner) {
  shape<R + 1> o{};
  for (int d = 0, k = 0; d < R; ++d) {
    if (d == axis) {
      o[k++] = in[d] / inner;
      o[k++] = inner;
    } else {
      o[k++] = in[d];
    }
  }
  return o;
}

/// Runs kernel k's outputs (k.run_output(o) for o < k.space.outputs: the
/// one-output-per-thread kernels, resize and one_hot) on the host: an OpenMP
/// loop when there are enough of them.
template <class K>
void launch_outputs(const host_executor& ex, const K& k, const char*) {
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
__global__ void __launch_bounds__(kernels::elementwise_threads) fused_outputs(K k) {
  for (index_t o = index_t(blockIdx.x) * blockDim.x + threadIdx.x; o < k.space.outputs; o += index_t(gridDim.x) * blockDim.x)
    k.run_output(o);
}
/// ... and on the device: one thread per output (kernels::elementwise_threads
/// per block, grid-stride).
template <class K>
void launch_outputs(const cuda_executor& ex, const K& k, const char* what) {
  count_launches(ex);
  if (rehearsing()) return;
  if (k.space.outputs == 0) return;
  const index_t blocks = kernels::grid_stride_blocks(k.space.outputs);
  fused_outputs<<<unsigned(blocks), kernels::elementwise_threads, 0, ex.stream>>>(k);
  check_cuda(cudaGetLastError(), std::string("launch of kernel fused_outputs (") + what + ")");
}
#else
template <class K>
void launch_outputs(const cuda_executor&, const K&, const char*) {
  static_assert(sizeof(K) == 0, "fusor: run(cuda(stream)): CUDA kernels can only be launched from a translation unit "
                                "compiled by nvcc (a .cu file)");
}
#endif

}  // namespace fusor::exec
