#pragma once
/// @file kernels/parts/expression.hpp
/// The device-side expression trees every kernel family evaluates: leaves
/// (loaded inputs, scalars), op nodes, sources and sinks.
#include <fusor/core/dtype.hpp>
#include <fusor/core/pack.hpp>
#include <fusor/core/shape.hpp>
#include <fusor/expr/node.hpp>

#include <cuda/std/array>
#include <fusor/core/tuple.hpp>
#include <cuda/std/utility>

namespace fusor::kernels {

/// Leaf reading loaded input K.
template <int K>
struct k_input {
  template <class V>
  FUSOR_HOST_DEVICE_INLINE auto eval(const V& vals) const {
    return fusor::get<K>(vals);
  }
};

/// Leaf holding a scalar operand.
template <class T>
struct k_scalar {
  T value;
  template <class V>
  FUSOR_HOST_DEVICE_INLINE T eval(const V&) const {
    return value;
  }
};

/// Lanes of the loaded values a tree is evaluated on: 0 for scalars (a
/// device thread, or one host element), W for host packs (core/pack.hpp).
template <class V>
inline constexpr int value_lanes_v = 0;
template <class... E>
inline constexpr int value_lanes_v<fusor::tuple<E...>> = (0 | ... | lanes_of_v<E>);

/// Does Op's functor take packs (elementwise_op's PacketAccess)?
template <class Op>
constexpr bool packet_access_of() {
  if constexpr (requires { Op::packet_access; }) return Op::packet_access;
  else return false;
}
template <class Op>
inline constexpr bool packet_access_v = packet_access_of<Op>();

using fusor::lane_of;

/// op on host packs of W lanes (operands converted to O..., the result to
/// R): one call when the functor takes packs, else one call per lane.
template <class R, int W, class... O, class Op, class... X>
FUSOR_HOST_INLINE auto apply_lanes(type_list<O...>, const Op& op, const X&... x) {
  if constexpr (packet_access_v<Op>) {
    return to_lanes<R, W>(op(to_lanes<O, W>(x)...));
  } else {
    pack<R, W> r;
    for (int l = 0; l < W; ++l) r.v[l] = static_cast<R>(op(static_cast<O>(lane_of(x, l))...));
    return r;
  }
}

/// An op applied to operand trees: each operand is converted to the op's
/// operand type, the functor runs, the result is converted to R. On host
/// packs (value_lanes_v<V> = W) the same per lane: apply_lanes.
template <class Op, class R, class Operands, class... Kids>
struct k_node;
template <class Op, class R, class... O, class... Kids>
struct k_node<Op, R, type_list<O...>, Kids...> {
  Op op;
  fusor::tuple<Kids...> kids;
  template <class V, cuda::std::size_t... I>
  FUSOR_HOST_DEVICE_INLINE auto eval_impl(const V& vals, cuda::std::index_sequence<I...>) const {
    if constexpr (value_lanes_v<V> == 0) return static_cast<R>(op(static_cast<O>(fusor::get<I>(kids).eval(vals))...));
    else return apply_lanes<R, value_lanes_v<V>>(type_list<O...>{}, op, fusor::get<I>(kids).eval(vals)...);
  }
  // Unary and binary nodes evaluate their operands here, not through
  // eval_impl: nvcc instantiates a kernel tree's eval functions nested, one
  // level per expression level, and its front end stops at about 256 nested
  // instantiations (a 128-op chain did not compile, docs/compile_time.md).
  template <class V>
  FUSOR_HOST_DEVICE_INLINE auto eval(const V& vals) const {
    constexpr int W = value_lanes_v<V>;
    if constexpr (W == 0 && sizeof...(Kids) == 1) {
      return static_cast<R>(op(static_cast<O>(fusor::get<0>(kids).eval(vals))...));
    } else if constexpr (W == 0 && sizeof...(Kids) == 2) {
      using O0 = type_at_t<0, type_list<O...>>;
      using O1 = type_at_t<1, type_list<O...>>;
      return static_cast<R>(op(static_cast<O0>(fusor::get<0>(kids).eval(vals)),
                               static_cast<O1>(fusor::get<1>(kids).eval(vals))));
    } else if constexpr (sizeof...(Kids) == 1) {
      return apply_lanes<R, W>(type_list<O...>{}, op, fusor::get<0>(kids).eval(vals));
    } else if constexpr (sizeof...(Kids) == 2) {
      return apply_lanes<R, W>(type_list<O...>{}, op, fusor::get<0>(kids).eval(vals), fusor::get<1>(kids).eval(vals));
    } else {
      return eval_impl(vals, cuda::std::index_sequence_for<Kids...>{});
    }
  }
};

/// An input operand: data and the strides (elements) with which it is read at
/// each output index (0 on broadcast dimensions). Known from its static
/// extents (elementwise kernels only, exec/bind.hpp), so that the host hoists
/// what reads only such sources out of its loops (exec/run_invariant.hpp):
/// RunInvariant, constant along the output's last dim (a static 1 last
/// extent: NCHW's per-channel [C, 1, 1]); RowInvariant, constant along every
/// dim but the last (static 1s before the last extent, or rank 1: NHWC's
/// per-channel [C]).
template <class T, int R, bool RunInvariant = false, bool RowInvariant = false>
struct k_source {
  using value_type = T;
  static constexpr bool run_invariant = RunInvariant;
  static constexpr bool row_invariant = RowInvariant;
  const T* data;
  cuda::std::array<index_t, (R > 0 ? R : 1)> stride;
};

/// An output operand.
template <class T, int R>
struct k_sink {
  using value_type = T;
  T* data;
  cuda::std::array<index_t, (R > 0 ? R : 1)> stride;
};

/// How a launch walks memory (see file comment).
enum class access : int { strided = 0, contiguous = 1, vectorized = 2 };

/// N elements of T, aligned for vector memory instructions (16 bytes at most:
/// wider vectors are moved as several 16-byte pieces).
template <class T, int N>
struct alignas(sizeof(T) * N < 16 ? sizeof(T) * N : 16) vec {
  T v[N];
};

template <class T>
inline constexpr cuda::std::size_t storage_size = sizeof(T);

}  // namespace fusor::kernels
