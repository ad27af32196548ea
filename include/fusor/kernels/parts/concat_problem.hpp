#pragma once
/// @file kernels/parts/concat_problem.hpp
/// Several GEMM problems (kernels/parts/gemm_problems.hpp) sharing A as one
/// multi-output GEMM: attention's Q/K/V projections, sibling linears over
/// one input (concat_n_problem).
#include <fusor/core/tuple.hpp>
#include <fusor/kernels/parts/gemm_problems.hpp>

namespace fusor::kernels {

/// GEMMs sharing A (attention's Q, K, V projections; two or more sibling
/// linears over one input) as one GEMM with N = N0 + N1 + ...: B columns
/// and stores dispatch on j's range, so A is read (and its prologue
/// computed) once per tile and every output gets its own epilogue. Every
/// part has the same M, K and batches (the planner's same-input check).
template <class P0, class... P>
struct concat_n_problem {
  fusor::tuple<P0, P...> parts;
  index_t batches = 1, M = 0, N = 0, K = 0;
  using stats = typename P0::stats;
  using T = typename P0::T;
  /// The projections one by one (the host GEMM engine calls its inner loop
  /// per projection, so each computes exactly as it would alone).
  static constexpr int column_parts = 1 + int(sizeof...(P));
  /// Tensor cores when every part has the same 16-bit operands.
  using mma_type = cuda::std::conditional_t<(cuda::std::is_same_v<typename P0::mma_type, typename P::mma_type> && ...),
                                            typename P0::mma_type, void>;
  static constexpr bool a_k_fastest = P0::a_k_fastest;
  template <int Q>
  FUSOR_HOST_DEVICE const auto& part() const {
    return fusor::get<Q>(parts);
  }
  FUSOR_HOST_DEVICE bool b_k_fastest() const { return b_k_fastest_from<0>(); }
  FUSOR_HOST_DEVICE bool out_m_fastest() const { return false; }
  FUSOR_HOST_DEVICE stats prepare(index_t b, index_t i) const { return part<0>().prepare(b, i); }
  FUSOR_HOST_DEVICE bool shares_stats(index_t b, index_t i, index_t prev) const {
    return part<0>().shares_stats(b, i, prev);
  }
  FUSOR_HOST_DEVICE T a(index_t b, index_t i, index_t k, const stats& s) const { return part<0>().a(b, i, k, s); }
  FUSOR_HOST_DEVICE T bmat(index_t b, index_t k, index_t j) const { return bmat_from<0>(b, k, j); }
  template <class Acc>
  FUSOR_HOST_DEVICE void store(index_t b, index_t i, index_t j, Acc acc) const {
    store_from<0>(b, i, j, acc);
  }

 private:
  // Part Q holds columns [0, N_Q) of what is left after the parts before
  // it; the last part takes the rest.
  template <int Q>
  FUSOR_HOST_DEVICE bool b_k_fastest_from() const {
    if constexpr (Q + 1 == column_parts) return part<Q>().b_k_fastest();
    else return part<Q>().b_k_fastest() && b_k_fastest_from<Q + 1>();
  }
  template <int Q>
  FUSOR_HOST_DEVICE T bmat_from(index_t b, index_t k, index_t j) const {
    if constexpr (Q + 1 == column_parts) {
      return T(part<Q>().bmat(b, k, j));
    } else {
      if (j < part<Q>().N) return T(part<Q>().bmat(b, k, j));
      return bmat_from<Q + 1>(b, k, j - part<Q>().N);
    }
  }
  template <int Q, class Acc>
  FUSOR_HOST_DEVICE void store_from(index_t b, index_t i, index_t j, Acc acc) const {
    if constexpr (Q + 1 == column_parts) {
      part<Q>().store(b, i, j, acc);
    } else {
      if (j < part<Q>().N) part<Q>().store(b, i, j, acc);
      else store_from<Q + 1>(b, i, j - part<Q>().N, acc);
    }
  }
};

}  // namespace fusor::kernels
