#pragma once
/// @file kernels/parts/attention_operands.hpp
/// Attention operands (kernels/attention.hpp has the algorithm): their stored
/// dtype, the tensor-core operand type of q/k/v, and the (b, h, s, d) index
/// map of each layout.
#include <fusor/kernels/parts/mma.hpp>
#include <fusor/kernels/parts/rows.hpp>
#include <fusor/ops/attention.hpp>

namespace fusor::kernels {

/// The stored dtype of an attention operand (a k_operand: an elementwise
/// tree over views): its views' common value type (scalars and constants in
/// the tree adapt, as storage_t in exec/contraction.hpp), void when they
/// differ or there is no view.
template <class Op>
struct attention_operand_storage {
  using type = void;
};
template <int R, class Src0, class... Src, class Tree>
struct attention_operand_storage<k_operand<R, fusor::tuple<Src0, Src...>, Tree>> {
  using first = cuda::std::remove_cv_t<typename Src0::value_type>;
  using type = cuda::std::conditional_t<(cuda::std::is_same_v<first, cuda::std::remove_cv_t<typename Src::value_type>> && ...),
                                        first, void>;
};
/// __half or __nv_bfloat16 when q, k and v are all stored in that 16-bit
/// type (the tensor-core path of the device block), void otherwise.
template <class Q, class K, class V>
using attention_mma_t = cuda::std::conditional_t<
    cuda::std::is_same_v<mma_operand_t<typename attention_operand_storage<Q>::type,
                                       typename attention_operand_storage<K>::type>,
                         typename attention_operand_storage<V>::type>,
    mma_operand_t<typename attention_operand_storage<Q>::type, typename attention_operand_storage<K>::type>, void>;

/// Maps (b, h, s, d) to an operand index for the layout.
template <int R>
struct attention_indexer {
  attention_layout layout = attention_layout::bhsd;
  index_t dim = 0;  ///< head_dim of the operand (packed layout: h * dim + d)
  FUSOR_HOST_DEVICE index_array<R> at(index_t b, index_t h, index_t s, index_t d) const {
    if constexpr (R == 3) {
      return index_array<3>{b, s, h * dim + d};
    } else {
      return layout == attention_layout::bshd ? index_array<4>{b, s, h, d} : index_array<4>{b, h, s, d};
    }
  }
};

}  // namespace fusor::kernels
