#pragma once
/// @file kernels/parts/gemm_problems.hpp
/// The GEMM view of a contraction group (kernels/contraction.hpp has the
/// algorithm): epilogue trees over the accumulator, A/B operands (plain, or
/// a layer_norm / rms_norm prologue), the problems of matmul/linear/gemm
/// (gemm_problem) and implicit-GEMM conv2d (conv_problem, conv_operand); the
/// Q/K/V projections as one GEMM are kernels/parts/concat_problem.hpp.
#include <fusor/kernels/parts/host_epilogue.hpp>
#include <fusor/kernels/parts/mma.hpp>
#include <fusor/kernels/parts/norm_stats.hpp>
#include <fusor/kernels/parts/rows.hpp>

namespace fusor::kernels {

/// Leaf of an epilogue tree: the contraction's value at the output index,
/// appended as the last loaded value.
struct k_acc {
  template <class V>
  FUSOR_HOST_DEVICE_INLINE auto eval(const V& vals) const {
    return fusor::get<fusor::tuple_size_v<V> - 1>(vals);
  }
};

/// An elementwise tree over its sources and the contraction's value, at an
/// index of rank R (the epilogue, or a depthwise conv's BN/activation inside
/// the pointwise conv's prologue).
template <int R, class Sources, class Tree>
struct k_epilogue {
  Sources sources;
  Tree tree;
  template <class Acc>
  FUSOR_HOST_DEVICE auto at(const index_array<R>& idx, Acc acc) const {
    auto vals = fusor::apply(
        [&](const auto&... s) {
          return fusor::make_tuple(to_compute(s.data[dot<R>(idx, s.stride)])..., acc);
        },
        sources);
    return tree.eval(vals);
  }
};

/// No per-row statistics (every prologue but LayerNorm/RMSNorm).
struct no_stats {};

/// An A/B operand that is an elementwise tree at a rank-R index (k_operand);
/// Storage is the tree's result dtype (void: unknown).
template <class Op, class Storage = void>
struct plain_operand {
  Op op;
  using stats = no_stats;
  using storage = Storage;
  template <class F>
  FUSOR_HOST_DEVICE stats prepare(const F&, index_t) const { return {}; }
  template <int R>
  FUSOR_HOST_DEVICE auto at(const index_array<R>& idx, const stats&) const { return op.at(idx); }
};

/// A matrix operand as it lies in memory: element (r, c) at
/// data[r * row_stride + c * col_stride] (elements). A null data means the
/// operand is not a plain view of the problem's compute type T: the host
/// GEMM engine (exec/host_gemm.hpp) then packs it through `a` / `bmat`.
template <class T>
struct strided_matrix {
  const T* data = nullptr;
  index_t row_stride = 0, col_stride = 0;
};

/// The element type of a plain operand whose tree is one view read as is
/// (no prologue, no conversion), else void.
template <class Operand>
struct single_view_storage {
  using type = void;
};
template <int R, class S, class Storage>
struct single_view_storage<plain_operand<k_operand<R, fusor::tuple<k_source<S, R>>, k_input<0>>, Storage>> {
  using type = S;
};
template <class Operand>
using single_view_storage_t = typename single_view_storage<Operand>::type;

/// Is Operand one view of T read as is? Then it can be handed to a GEMM
/// engine in place.
template <class T, class Operand>
inline constexpr bool is_single_view_operand_v =
    !std::is_void_v<T> && std::is_same_v<single_view_storage_t<Operand>, T>;

/// An A operand that is layer_norm (Rms = false) or rms_norm (true) over its
/// last dim of an elementwise tree: the row statistics are computed per tile
/// row (row_norm_stats, the standalone norm kernel's code), then each loaded
/// element is normalized, rounded to the norm's result type Out.
template <bool Rms, class Out, class X, class G, class B, class Storage = Out>
struct norm_operand {
  X x;
  G gamma;
  B beta;
  float eps;
  bool has_gamma, has_beta;
  using T = row_compute_t<decltype(x.at(index_array<X::rank>{})), true>;
  using stats = norm_stats<T>;
  using storage = Storage;
  /// `row_value(k)` reads element k of the row, `len` elements.
  template <class F>
  FUSOR_HOST_DEVICE stats prepare(const F& row_value, index_t len) const {
#if defined(__CUDA_ARCH__)
    return row_norm_stats<Rms, T>(row_value, len, eps, reduce_block);  // the GEMM block works on one row at a time
#else
    // the standalone norm kernel's lanes on the host (packs, or the device's
    // count in nvcc translation units): the fused LayerNorm -> GEMM
    // normalizes bitwise like the unfused norm kernel
    return row_norm_stats<Rms, T>(row_value, len, eps, FUSOR_HOST_PACKETS ? 0 : row_lanes_for(len));
#endif
  }
  template <int R>
  FUSOR_HOST_DEVICE auto at(const index_array<R>& idx, const stats& s) const {
    const T y = apply_norm<Rms>(T(x.at(idx)), s, T(gamma.at(idx)), Rms ? T(0) : T(beta.at(idx)), has_gamma, has_beta);
    return to_compute(from_compute<Out>(y));
  }
};

/// matmul / linear / gemm as one batched GEMM. Output rank RO; NB leading
/// batch dims (broadcast over A's and B's batch dims), then NM = RO - NB - 1
/// dims flattened into M (linear's leading dims), then N. A is read at a
/// rank-RO index [batch..., m..., k] ([k, m] when trans_a); B at a rank
/// NB + 2 index [batch..., k, j] ([batch..., j, k] when trans_b: linear's W).
/// A norm prologue normalizes over A's dims norm_first..RO-1 (in the rank-RO
/// index; A's last dim only: norm_first = RO - 1), norm_len elements of
/// extents norm_extent[norm_first..RO-1] (A's own extents: 1 on a broadcast
/// batch dim); never with trans_a (the binder normalizes into a temporary).
template <int RO, int NB, class A, class B, class Ep, class Sink>
struct gemm_problem {
  static constexpr int NM = RO - NB - 1;  // 0: linear of a rank-1 x [K] (one row, M = 1)
  static_assert(NM >= 0);
  A a_op;
  B b_op;
  Ep ep;
  Sink sink;
  index_array<RO> out_extent;  ///< [batch..., m..., n]
  index_t batches = 1, M = 0, N = 0, K = 0;
  bool trans_a = false, trans_b = false;
  int norm_first = RO - 1;
  index_array<RO> norm_extent{};
  index_t norm_len = 0;
  using stats = typename A::stats;
  using T = accum_t<decltype(a_op.template at<RO>(index_array<RO>{}, stats{}))>;
  using mma_type = mma_operand_t<typename A::storage, typename B::storage>;
  /// Tensor-core path layouts: A is loaded k-fastest (row-major A, the
  /// common case, reads consecutive addresses); B k-fastest when trans_b.
  static constexpr bool a_k_fastest = true;
  FUSOR_HOST_DEVICE bool b_k_fastest() const { return trans_b; }
  FUSOR_HOST_DEVICE bool out_m_fastest() const { return false; }

  // (The outermost dim takes the rest of the flat index: no division; the
  // callers pass b < batches and i < M.)
  FUSOR_HOST_DEVICE void batch_index(index_t b, index_array<RO>& idx) const {
    if constexpr (NB > 0) {
      for (int d = NB - 1; d > 0; --d) {
        idx[d] = b % out_extent[d];
        b /= out_extent[d];
      }
      idx[0] = b;
    }
  }
  FUSOR_HOST_DEVICE void row_index(index_t i, index_array<RO>& idx) const {
    if constexpr (NM > 0) {
      for (int d = NB + NM - 1; d > NB; --d) {
        idx[d] = i % out_extent[d];
        i /= out_extent[d];
      }
      idx[NB] = i;
    } else {
      (void)i;  // no M dims: the only row is i == 0
      (void)idx;
    }
  }
  FUSOR_HOST_DEVICE index_array<RO> a_index(index_t b, index_t i, index_t k) const {
    index_array<RO> idx{};
    batch_index(b, idx);
    row_index(i, idx);
    idx[RO - 1] = k;
    if constexpr (RO >= 2) {  // trans_a: gemm only (rank 2)
      if (trans_a) {
        idx[RO - 1] = idx[RO - 2];
        idx[RO - 2] = k;
      }
    }
    return idx;
  }
  FUSOR_HOST_DEVICE stats prepare(index_t b, index_t i) const {
    if constexpr (cuda::std::is_same_v<stats, no_stats>) {
      return {};
    } else {
      const index_array<RO> base = a_index(b, i, 0);
      const int first = norm_first;
      const auto value = [&](index_t t) {
        index_array<RO> idx = base;
        if (first == RO - 1) {
          idx[RO - 1] = t;
        } else {
          for (int d = RO - 1; d >= first; --d) {
            idx[d] = t % norm_extent[d];
            t /= norm_extent[d];
          }
        }
        return a_op.x.at(idx);
      };
      return a_op.prepare(value, norm_len);
    }
  }
  /// Rows i and prev normalize over the same elements (same stats).
  FUSOR_HOST_DEVICE bool shares_stats(index_t b, index_t i, index_t prev) const {
    if (norm_first >= RO - 1) return false;
    const index_array<RO> x = a_index(b, i, 0), y = a_index(b, prev, 0);
    for (int d = 0; d < norm_first; ++d)
      if (x[d] != y[d]) return false;
    return true;
  }
  FUSOR_HOST_DEVICE T a(index_t b, index_t i, index_t k, const stats& s) const {
    return T(a_op.template at<RO>(a_index(b, i, k), s));
  }
  /// B's index [batch..., 0, 0] for batch b.
  FUSOR_HOST_DEVICE index_array<NB + 2> b_batch_index(index_t b) const {
    index_array<NB + 2> idx{};
    if constexpr (NB > 0) {
      for (int d = NB - 1; d > 0; --d) {
        idx[d] = b % out_extent[d];
        b /= out_extent[d];
      }
      idx[0] = b;
    }
    return idx;
  }
  FUSOR_HOST_DEVICE T bmat(index_t b, index_t k, index_t j) const {
    index_array<NB + 2> idx = b_batch_index(b);
    idx[NB] = trans_b ? j : k;
    idx[NB + 1] = trans_b ? k : j;
    return T(b_op.template at<NB + 2>(idx, no_stats{}));
  }
  /// A of batch b as a strided M x K matrix when it is a plain view of S
  /// (default: the compute type T) whose M dims merge into one stride (else
  /// null: packed). The CUDA GEMM engine asks for the 16-bit storage type.
  template <class S = T>
  strided_matrix<S> a_matrix(index_t b) const {
    if constexpr (is_single_view_operand_v<S, A>) {
      const auto& s = fusor::get<0>(a_op.op.sources);
      index_t m_stride = 0;  // M = 1 when NM == 0: any stride
      if constexpr (NM > 0) {
        m_stride = s.stride[RO - 2];
        for (int d = RO - 3; d >= NB; --d)  // the flattened M dims, row-major
          if (s.stride[d] != s.stride[d + 1] * out_extent[d + 1]) return {};
      }
      index_t k_stride = s.stride[RO - 1];
      if constexpr (RO >= 2)
        if (trans_a) {  // gemm, rank 2: A is read at [k, i]
          m_stride = s.stride[RO - 1];
          k_stride = s.stride[RO - 2];
        }
      return {s.data + dot<RO>(a_index(b, 0, 0), s.stride), m_stride, k_stride};
    } else {
      (void)b;
      return {};
    }
  }
  /// B of batch b as a strided K x N matrix when it is a plain view of S.
  template <class S = T>
  strided_matrix<S> b_matrix(index_t b) const {
    if constexpr (is_single_view_operand_v<S, B>) {
      const auto& s = fusor::get<0>(b_op.op.sources);
      const index_array<NB + 2> idx = b_batch_index(b);
      const index_t k_stride = s.stride[trans_b ? NB + 1 : NB], j_stride = s.stride[trans_b ? NB : NB + 1];
      return {s.data + dot<NB + 2>(idx, s.stride), k_stride, j_stride};
    } else {
      (void)b;
      return {};
    }
  }
  /// The output index of row i of batch b (its last dim 0): computed once
  /// per row by the CUDA GEMM engine's epilogue (exec/cuda_gemm.hpp).
  FUSOR_HOST_DEVICE index_array<RO> out_row_index(index_t b, index_t i) const {
    index_array<RO> idx{};
    batch_index(b, idx);
    row_index(i, idx);
    return idx;
  }
  /// store(b, i, j, acc) given out_row_index(b, i).
  template <class Acc>
  FUSOR_HOST_DEVICE void store_at(index_array<RO> idx, index_t j, Acc acc) const {
    idx[RO - 1] = j;
    sink.data[dot<RO>(idx, sink.stride)] = from_compute<typename Sink::value_type>(ep.at(idx, acc));
  }
  template <class Acc>
  FUSOR_HOST_DEVICE void store(index_t b, index_t i, index_t j, Acc acc) const {
    store_at(out_row_index(b, i), j, acc);
  }
  /// store(b, i, j0 + c, acc[c]) for c < n, the row's index computed once
  /// (the host GEMM engine's epilogue over a block row), on packs where the
  /// host has them (kernels/parts/host_epilogue.hpp).
  template <class Acc>
  void store_row(index_t b, index_t i, index_t j0, const Acc* acc, index_t n) const {
    index_array<RO> idx{};
    batch_index(b, idx);
    row_index(i, idx);
    idx[RO - 1] = j0;
    index_t c = 0;
#if FUSOR_HOST_PACKETS
    c = store_epilogue_packs<host_pack_lanes, RO - 1, RO>(ep, sink, idx, acc, n);
#endif
    for (; c < n; ++c) {
      idx[RO - 1] = j0 + c;
      sink.data[dot<RO>(idx, sink.stride)] = from_compute<typename Sink::value_type>(ep.at(idx, acc[c]));
    }
  }
};

/// conv2d as implicit GEMM, one GEMM per group (batch = group):
/// M = N * Ho * Wo, GEMM-N = Cout / groups, K = (C / groups) * kh * kw.
/// A(i = (n, oh, ow), k = (c, r, s)) = x[n, g * Cg + c, oh * sh - pt + r * dh,
/// ow * sw - pl + s * dw] (0 in the padding: the prologue is NOT applied to
/// padding, as in the unfused conv of a materialized prologue);
/// B(k, j) = w[g * Cog + j, c, r, s].
template <class A, class B, class Ep, class Sink>
struct conv_problem {
  A a_op;
  B b_op;
  Ep ep;
  Sink sink;
  index_t n = 0, c = 0, h = 0, w = 0, cout = 0, kh = 0, kw = 0, ho = 0, wo = 0;
  index_t stride[2] = {1, 1}, pad[2] = {0, 0}, dilation[2] = {1, 1}, groups = 1;
  bool nhwc = false;
  index_t batches = 1, M = 0, N = 0, K = 0;
  using stats = no_stats;
  using T = accum_t<decltype(a_op.template at<4>(index_array<4>{}, stats{}))>;
  using mma_type = mma_operand_t<typename A::storage, typename B::storage>;
  /// Tensor-core path layouts: A is loaded i-fastest (consecutive output
  /// columns read consecutive input columns in NCHW), B k-fastest (OIHW
  /// weights are contiguous in k); NCHW outputs are stored i-fastest.
  static constexpr bool a_k_fastest = false;
  FUSOR_HOST_DEVICE bool b_k_fastest() const { return true; }
  FUSOR_HOST_DEVICE bool out_m_fastest() const { return !nhwc; }

  FUSOR_HOST_DEVICE stats prepare(index_t, index_t) const { return {}; }
  FUSOR_HOST_DEVICE bool shares_stats(index_t, index_t, index_t) const { return false; }
  FUSOR_HOST_DEVICE index_array<4> x_index(index_t nn, index_t ch, index_t ih, index_t iw) const {
    return nhwc ? index_array<4>{nn, ih, iw, ch} : index_array<4>{nn, ch, ih, iw};
  }
  FUSOR_HOST_DEVICE T a(index_t g, index_t i, index_t k, const stats& st) const {
    const index_t ow = i % wo, oh = (i / wo) % ho, nn = i / (wo * ho);
    const index_t s = k % kw, r = (k / kw) % kh, cc = k / (kw * kh);
    const index_t ih = oh * stride[0] - pad[0] + r * dilation[0];
    const index_t iw = ow * stride[1] - pad[1] + s * dilation[1];
    if (ih < 0 || ih >= h || iw < 0 || iw >= w) return T(0);
    return T(a_op.template at<4>(x_index(nn, g * (c / groups) + cc, ih, iw), st));
  }
  // The host GEMM engine packs A with conv_pack_a, and a direct conv runs
  // on the host a row at a time (kernels/parts/conv_runs.hpp).
  FUSOR_HOST_DEVICE T bmat(index_t g, index_t k, index_t j) const {
    const index_t s = k % kw, r = (k / kw) % kh, cc = k / (kw * kh);
    return T(b_op.template at<4>(index_array<4>{g * N + j, cc, r, s}, no_stats{}));
  }
  FUSOR_HOST_DEVICE index_array<4> out_index(index_t g, index_t i, index_t j) const {
    const index_t ow = i % wo, oh = (i / wo) % ho, nn = i / (wo * ho);
    const index_t co = g * N + j;
    return nhwc ? index_array<4>{nn, oh, ow, co} : index_array<4>{nn, co, oh, ow};
  }
  template <class Acc>
  FUSOR_HOST_DEVICE void store(index_t g, index_t i, index_t j, Acc acc) const {
    const auto idx = out_index(g, i, j);
    sink.data[dot<4>(idx, sink.stride)] = from_compute<typename Sink::value_type>(ep.at(idx, acc));
  }
  /// store(g, i, j0 + c, acc[c]) for c < n (the host GEMM engine's
  /// epilogue over a block row: output channels j0 .., packs on the host).
  template <class Acc>
  void store_row(index_t g, index_t i, index_t j0, const Acc* acc, index_t n) const {
    index_t c = 0;
#if FUSOR_HOST_PACKETS
    if (nhwc) c = store_epilogue_packs<host_pack_lanes, 3, 4>(ep, sink, out_index(g, i, j0), acc, n);
    else c = store_epilogue_packs<host_pack_lanes, 1, 4>(ep, sink, out_index(g, i, j0), acc, n);
#endif
    for (; c < n; ++c) store(g, i, j0 + c, acc[c]);
  }
  /// The whole convolution at one output index (direct summation, k
  /// ascending): how a fused consumer reads a depthwise conv kept on chip.
  /// The same terms in the same order as a(g, i, k) * bmat(g, k, j) over k,
  /// with k walked as (channel, kernel row, kernel column) instead of
  /// divided out of k twice per term (the MobileNet prologue evaluates this
  /// once per element of the pointwise conv's A).
  FUSOR_HOST_DEVICE T direct(const index_array<4>& out_idx) const {
    const index_t co = nhwc ? out_idx[3] : out_idx[1];
    const index_t oh = nhwc ? out_idx[1] : out_idx[2], ow = nhwc ? out_idx[2] : out_idx[3];
    const index_t g = co / N, j = co % N, nn = out_idx[0], cpg = c / groups;
    T acc = T(0);
    for (index_t cc = 0; cc < cpg; ++cc)
      for (index_t r = 0; r < kh; ++r) {
        const index_t ih = oh * stride[0] - pad[0] + r * dilation[0];
        for (index_t s = 0; s < kw; ++s) {
          const index_t iw = ow * stride[1] - pad[1] + s * dilation[1];
          const T av = (ih < 0 || ih >= h || iw < 0 || iw >= w)
                           ? T(0)
                           : T(a_op.template at<4>(x_index(nn, g * cpg + cc, ih, iw), no_stats{}));
          acc += av * T(b_op.template at<4>(index_array<4>{g * N + j, cc, r, s}, no_stats{}));
        }
      }
    return acc;
  }
};

/// An operand whose value is a convolution computed at the read index and
/// then an elementwise epilogue (BN, ReLU6): the depthwise conv inside the
/// pointwise conv's prologue (MobileNet), never written to memory.
template <class Conv, class Ep, class Out, class Storage = Out>
struct conv_operand {
  Conv conv;
  Ep ep;
  using stats = no_stats;
  using storage = Storage;
  template <class F>
  FUSOR_HOST_DEVICE stats prepare(const F&, index_t) const { return {}; }
  template <int R>
  FUSOR_HOST_DEVICE auto at(const index_array<R>& idx, const stats&) const {
    static_assert(R == 4);
    return finish(idx, conv.direct(idx));
  }
  /// The value at idx given the convolution's sum there (rounded to Out,
  /// then the epilogue, rounded to Out): at() and the host's pixel runs
  /// (kernels/parts/conv_runs.hpp) share it.
  template <class Acc>
  FUSOR_HOST_DEVICE auto finish(const index_array<4>& idx, Acc acc) const {
    const auto v = to_compute(from_compute<Out>(acc));
    return to_compute(from_compute<Out>(ep.at(idx, v)));
  }
};

/// P::mma_type, or void for a problem without one.
template <class P, class = void>
struct problem_mma {
  using type = void;
};
template <class P>
struct problem_mma<P, cuda::std::void_t<typename P::mma_type>> {
  using type = typename P::mma_type;
};

}  // namespace fusor::kernels
