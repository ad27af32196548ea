#pragma once
/// @file kernels/parts/concat_problem.hpp
/// Several GEMM problems (kernels/parts/gemm_problems.hpp) sharing A as one
/// multi-output GEMM: the Q/K/V projections of attention (concat_n_problem).
#include <fusor/kernels/parts/gemm_problems.hpp>

namespace fusor::kernels {

/// Three GEMMs sharing A (the Q, K, V projections of attention) as one GEMM
/// with N = N0 + N1 + N2: B columns and stores dispatch on j's range, so A
/// is read once per tile and every output gets its own epilogue.
template <class P0, class P1, class P2>
struct concat_n_problem {
  P0 p0;
  P1 p1;
  P2 p2;
  index_t batches = 1, M = 0, N = 0, K = 0;
  using stats = typename P0::stats;
  using T = typename P0::T;
  /// Tensor cores when all three problems have the same 16-bit operands.
  using mma_type = cuda::std::conditional_t<cuda::std::is_same_v<typename P0::mma_type, typename P1::mma_type> &&
                                                cuda::std::is_same_v<typename P0::mma_type, typename P2::mma_type>,
                                            typename P0::mma_type, void>;
  static constexpr bool a_k_fastest = P0::a_k_fastest;
  FUSOR_HOST_DEVICE bool b_k_fastest() const { return p0.b_k_fastest() && p1.b_k_fastest() && p2.b_k_fastest(); }
  FUSOR_HOST_DEVICE bool out_m_fastest() const { return false; }
  FUSOR_HOST_DEVICE stats prepare(index_t b, index_t i) const { return p0.prepare(b, i); }
  FUSOR_HOST_DEVICE bool shares_stats(index_t b, index_t i, index_t prev) const { return p0.shares_stats(b, i, prev); }
  FUSOR_HOST_DEVICE T a(index_t b, index_t i, index_t k, const stats& s) const { return p0.a(b, i, k, s); }
  FUSOR_HOST_DEVICE T bmat(index_t b, index_t k, index_t j) const {
    if (j < p0.N) return T(p0.bmat(b, k, j));
    if (j < p0.N + p1.N) return T(p1.bmat(b, k, j - p0.N));
    return T(p2.bmat(b, k, j - p0.N - p1.N));
  }
  template <class Acc>
  FUSOR_HOST_DEVICE void store(index_t b, index_t i, index_t j, Acc acc) const {
    if (j < p0.N) p0.store(b, i, j, acc);
    else if (j < p0.N + p1.N) p1.store(b, i, j - p0.N, acc);
    else p2.store(b, i, j - p0.N - p1.N, acc);
  }
  /// The projections one by one (the host GEMM engine calls its inner loop
  /// per projection, so each computes exactly as it would alone).
  static constexpr int column_parts = 3;
  template <int Q>
  const auto& part() const {
    if constexpr (Q == 0) return p0;
    else if constexpr (Q == 1) return p1;
    else return p2;
  }
};

}  // namespace fusor::kernels
