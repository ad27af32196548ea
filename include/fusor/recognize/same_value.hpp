#pragma once
/// @file recognize/same_value.hpp
/// Whether two occurrences of one expression type compute the same values at
/// run time (same data pointers, extents, strides, op attributes and scalar
/// bits): the value check behind the recognitions of recognize/ (decomposed
/// norms, attention), sharing by value, the Q/K/V projections' shared input
/// (exec/contraction.hpp) and their guarded plans.
#include <fusor/config.hpp>
#include <fusor/ops/reduction.hpp>

#include <concepts>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

namespace fusor::detail {

// ------------------------------------------------ run-time "same computation"
/// Op attributes compared bit for bit (floats too: -0.0 and 0.0 differ, a
/// NaN equals itself), padding cleared where the compiler can
/// (FUSOR_HAS_CLEAR_PADDING): 1 equal, 0 different, -1 not comparable (not
/// trivially copyable, or padding that cannot be cleared). Each caller says
/// what -1 means: tags trust it (exec/validate.hpp), sharing by value does
/// not (recognize/shared_by_value.hpp).
template <class Op>
int attribute_bits_equal(const Op& a, const Op& b) {
  if constexpr (std::is_empty_v<Op>) {
    return 1;
  } else if constexpr (!std::is_trivially_copyable_v<Op>) {
    return -1;
  } else if constexpr (std::has_unique_object_representations_v<Op>) {
    return std::memcmp(static_cast<const void*>(&a), static_cast<const void*>(&b), sizeof(Op)) == 0 ? 1 : 0;
  } else {
#if defined(FUSOR_HAS_CLEAR_PADDING)
    Op x = a, y = b;
    __builtin_clear_padding(&x);
    __builtin_clear_padding(&y);
    return std::memcmp(static_cast<const void*>(&x), static_cast<const void*>(&y), sizeof(Op)) == 0 ? 1 : 0;
#else
    return -1;
#endif
  }
}

template <class Op>
bool same_op(const Op& a, const Op& b) {
  if constexpr (std::is_empty_v<Op>) return true;
  else if constexpr (requires { { a == b } -> std::convertible_to<bool>; }) return bool(a == b);
  else return false;  // attributes we do not compare: not provably the same
}
/// The dims a reduction of a rank-R operand reduces, without throwing
/// (false for an invalid axis list).
template <int R, class Op>
bool reduced_dims(const Op& op, bool (&m)[max_reduce_rank]) {
  for (int d = 0; d < max_reduce_rank; ++d) m[d] = op.axes.count == 0 && !op.noop_with_empty_axes && d < R;
  for (int k = 0; k < op.axes.count; ++k) {
    const int a = op.axes.axis[k] < 0 ? op.axes.axis[k] + R : op.axes.axis[k];
    if (a < 0 || a >= R || m[a]) return false;
    m[a] = true;
  }
  return true;
}
/// Two reductions of rank-R operands that reduce the same dims ({1} and {-1} alike).
template <int R, reduce_kind K, int O>
bool same_reduction(const op::reduce<K, O>& a, const op::reduce<K, O>& b) {
  bool ma[max_reduce_rank], mb[max_reduce_rank];
  if (!reduced_dims<R>(a, ma) || !reduced_dims<R>(b, mb) || a.keepdims != b.keepdims) return false;
  for (int d = 0; d < max_reduce_rank; ++d)
    if (ma[d] != mb[d]) return false;
  return true;
}
template <bool Log>
bool same_op(const op::softmax_of<Log>& a, const op::softmax_of<Log>& b) { return a.axis == b.axis; }

template <class Op>
inline constexpr bool is_reduce_op_v = false;
template <reduce_kind K, int O>
inline constexpr bool is_reduce_op_v<op::reduce<K, O>> = true;

/// The attribute check of same_value for decomposed forms: reductions by the
/// dims they reduce (`axes {-1}` and `{1}` of a rank-2 operand are the same),
/// other ops by same_op.
struct same_recognized_attributes {
  template <class N>
  bool operator()(const N& a, const N& b) const {
    if constexpr (is_reduce_op_v<typename N::op_type>)
      return same_reduction<rank_v<std::tuple_element_t<0, decltype(a.args)>>>(a.op, b.op);
    else return same_op(a.op, b.op);
  }
};

/// Rank of the first operand of a node's operand tuple (0 for none).
template <class Args>
inline constexpr int first_operand_rank_v = 0;
template <class A0, class... A>
inline constexpr int first_operand_rank_v<fusor::tuple<A0, A...>> = rank_v<A0>;

/// Same attributes for sharing: reductions by the dims they reduce, norms
/// over trailing dims by their first dim (`axis` -1 and R - 1 alike) and
/// their other attributes, other ops by their operator==, else bit for bit
/// (floats too: -0.0 and 0.0 differ, a NaN eps equals itself) with padding
/// cleared; an op whose bytes cannot be compared is not provably equal (then
/// the written form runs).
struct same_shared_attributes {
  template <class N>
  bool operator()(const N& a, const N& b) const {
    using Op = typename N::op_type;
    constexpr int R = first_operand_rank_v<std::remove_cvref_t<decltype(a.args)>>;
    if constexpr (is_reduce_op_v<Op>) {
      return same_reduction<R>(a.op, b.op);
    } else if constexpr (requires {
                           a.op.template mask<R>();
                           { a.op.axis } -> std::same_as<const int&>;
                         }) {
      // A norm over the trailing dims from `axis` (layer_norm, rms_norm):
      // axis -1 and R - 1 of a rank-R operand are the same dims.
      auto at = [](int axis) { return axis < 0 ? axis + R : axis; };
      if (at(a.op.axis) != at(b.op.axis)) return false;
      auto bo = b.op;
      bo.axis = a.op.axis;
      if constexpr (requires { { a.op == bo } -> std::convertible_to<bool>; }) return bool(a.op == bo);
      else return attribute_bits_equal(a.op, bo) == 1;
    } else if constexpr (requires { { a.op == b.op } -> std::convertible_to<bool>; }) {
      return bool(a.op == b.op);
    } else {
      return attribute_bits_equal(a.op, b.op) == 1;  // not comparable: not provably equal
    }
  }
};

/// True when two occurrences of one expression type compute the same values:
/// views with equal data pointers, extents and strides; scalars with equal
/// bits; nodes whose attributes `same_attributes(node_a, node_b)` accepts and
/// whose operands are the same values.
template <class E, class SameAttributes = same_recognized_attributes>
bool same_value(const E& a, const E& b, const SameAttributes& same_attributes = {}) {
  if constexpr (is_view_v<E>) {
    if (a.data() != b.data()) return false;
    for (int d = 0; d < rank_v<E>; ++d)
      if (a.extent(d) != b.extent(d) || (a.extent(d) != 1 && a.stride(d) != b.stride(d))) return false;
    return true;
  } else if constexpr (is_scalar_v<E>) {
    return std::memcmp(&a.value, &b.value, sizeof a.value) == 0;
  } else if constexpr (is_constant_v<E>) {
    return true;
  } else if constexpr (is_node_v<E>) {
    return same_attributes(a, b) && [&]<std::size_t... I>(std::index_sequence<I...>) {
      return (same_value(fusor::get<I>(a.args), fusor::get<I>(b.args), same_attributes) && ...);
    }(std::make_index_sequence<std::tuple_size_v<decltype(a.args)>>{});
  } else {
    return false;
  }
}

}  // namespace fusor::detail
