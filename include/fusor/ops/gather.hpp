#pragma once
/// @file ops/gather.hpp
/// gather (ONNX Gather, opset 13; NumPy take) and embedding (PyTorch
/// F.embedding): elements of `data` at indices along one axis:
///   y[i_0 .. i_{a-1}, j_0 .. j_{q-1}, i_{a+1} ..] = data[i_0 .. i_{a-1}, indices[j_0 .. j_{q-1}], i_{a+1} ..]
/// with negative indices counted from the end. One output element per
/// thread (kernels/reduction.hpp, gather_rows): the index is read, then the
/// data element; elementwise producers of data and of the indices are
/// evaluated at the element read, and elementwise consumers of the result's
/// shape run before the store (embedding(ids, W) * scale + pos: one kernel).
#include <fusor/ops/reduction.hpp>

#include <cstdint>
#include <string>

namespace fusor {
namespace op {

/// gather over `axis` of data (rank RD) with indices of rank RI: the result
/// has rank RD + RI - 1.
struct gather : reduction_base {
  static constexpr int arity = 2;
  static constexpr const char* name = "gather";
  static constexpr double flops = 0;
  /// Reads its input at other positions than it writes: no in-place run (exec/validate.hpp).
  static constexpr bool reads_other_positions = true;
  int axis = 0;
  template <class D, class I>
  using result = value_t<D>;
  template <class D, class I>
  using operand_types = type_list<value_t<D>, value_t<I>>;
  template <class D, class I>
  using static_extents = dextents<std::size_t(rank_v<D> + rank_v<I> - 1)>;

  /// The normalized axis of a rank-R data operand.
  /// @throws shape_error when it is out of range.
  template <int R>
  static int data_axis(int axis, const shape<R>* in = nullptr, const char* op = "gather") {
    const int a = axis < 0 ? axis + R : axis;
    if (a < 0 || a >= R)
      throw shape_error("fusor: " + std::string(op) + ": axis " + std::to_string(axis) + " is out of range for data of rank " +
                        std::to_string(R) + (in ? " (data " + to_string<R>(*in) + ")" : std::string()));
    return a;
  }
  template <int RD, int RI>
  static auto output_shape(const gather& op, const shape<RD>& data, const shape<RI>& idx) {
    static_assert(RD >= 1, "fusor: gather: data must have rank >= 1");
    const int a = data_axis<RD>(op.axis, &data);
    index_t indices = 1;
    for (int d = 0; d < RI; ++d) indices *= idx[d];
    if (data[a] == 0 && indices > 0)
      throw shape_error("fusor: gather: axis " + std::to_string(op.axis) + " of data " + to_string<RD>(data) +
                        " is empty: no index is in range");
    shape<RD + RI - 1> out{};
    int k = 0;
    for (int d = 0; d < a; ++d) out[k++] = data[d];
    for (int d = 0; d < RI; ++d) out[k++] = idx[d];
    for (int d = a + 1; d < RD; ++d) out[k++] = data[d];
    if constexpr (RD + RI - 1 == 0) out[0] = 1;
    return out;
  }
};

}  // namespace op

template <class E>
inline constexpr bool is_gather_node_v = false;
template <class D, class I>
inline constexpr bool is_gather_node_v<node<op::gather, D, I>> = true;

/// gather(data, indices, axis): data any dtype and rank >= 1; indices an
/// integer expression (int32 or int64 views, or elementwise work on them)
/// of any rank, each in [-n, n) for n = data's extent on `axis` (negative
/// counts from the end, ONNX). Result: data's dtype, shape data[:axis] +
/// indices' shape + data[axis + 1:].
/// @throws shape_error for an axis out of range (when shapes are checked);
///         argument_error at run time on the host, before the group writes,
///         naming gather, the index, its position and the extent, for an
///         index out of range; device_error on the CUDA executor (the kernel
///         flags it, the executor synchronizes the stream to report it).
template <expression D, expression I>
auto gather(D&& data, I&& indices, int axis = 0) {
  static_assert(std::is_integral_v<value_t<I>> && !std::is_same_v<value_t<I>, bool>,
                "fusor: gather: indices must be integers (int32 or int64)");
  static_assert(!std::is_same_v<value_t<I>, std::uint64_t>,
                "fusor: gather: uint64 indices are not supported (values past 2^63 do not fit an index; use int64)");
  // (make_node_unchecked: data and indices do not broadcast against each other)
  return make_node_unchecked(op::gather{{}, axis}, std::remove_cvref_t<D>(std::forward<D>(data)),
                             std::remove_cvref_t<I>(std::forward<I>(indices)));
}
FUSOR_OPERAND_FALLBACK(gather, "ee", "gather(data, indices, axis): data and indices are expressions")

namespace op {
/// gather_elements over `axis` of data and indices of one rank R: the
/// result has indices' shape.
struct gather_elements : reduction_base {
  static constexpr int arity = 2;
  static constexpr const char* name = "gather_elements";
  static constexpr double flops = 0;
  /// Reads its input at other positions than it writes: no in-place run (exec/validate.hpp).
  static constexpr bool reads_other_positions = true;
  int axis = 0;
  template <class D, class I>
  using result = value_t<D>;
  template <class D, class I>
  using operand_types = type_list<value_t<D>, value_t<I>>;
  template <class D, class I>
  using static_extents = dextents<std::size_t(rank_v<I>)>;

  template <int R, int RI>
  static shape<R> output_shape(const gather_elements& op, const shape<R>& data, const shape<RI>& idx) {
    static_assert(R == RI, "fusor: gather_elements: data and indices must have the same rank (>= 1)");
    const int a = gather::data_axis<R>(op.axis, &data, name);
    for (int d = 0; d < R; ++d) {
      if (d != a && idx[d] > data[d])
        throw shape_error("fusor: gather_elements: indices " + to_string<R>(idx) + " are larger than data " +
                          to_string<R>(data) + " in dim " + std::to_string(d) +
                          " (each dim but the axis must be at most data's)");
    }
    index_t indices = 1;
    for (int d = 0; d < R; ++d) indices *= idx[d];
    if (data[a] == 0 && indices > 0)
      throw shape_error("fusor: gather_elements: axis " + std::to_string(op.axis) + " of data " + to_string<R>(data) +
                        " is empty: no index is in range");
    return idx;
  }
};
}  // namespace op

template <class E>
inline constexpr bool is_gather_elements_node_v = false;
template <class D, class I>
inline constexpr bool is_gather_elements_node_v<node<op::gather_elements, D, I>> = true;

/// gather_elements(data, indices, axis) (ONNX GatherElements, opset 13;
/// torch.gather; np.take_along_axis): data any dtype, indices an integer
/// expression of the same rank, no larger than data in any dim but `axis`;
/// y[i_0, .., i_{R-1}] = data[i_0, .., indices[i_0, .., i_{R-1}], .., i_{R-1}]
/// (the index replacing dim `axis`, negative counted from the end). Result:
/// data's dtype, indices' shape. Fused like gather: producers of data and
/// indices are evaluated at the elements read, consumers before the store.
/// @throws shape_error for an axis out of range or indices larger than data
///         (when shapes are checked); argument_error on the host before the
///         group writes for an index out of range (naming it, its position
///         and the extent); device_error on the CUDA executor.
template <expression D, expression I>
auto gather_elements(D&& data, I&& indices, int axis = 0) {
  static_assert(std::is_integral_v<value_t<I>> && !std::is_same_v<value_t<I>, bool>,
                "fusor: gather_elements: indices must be integers (int32 or int64)");
  static_assert(!std::is_same_v<value_t<I>, std::uint64_t>,
                "fusor: gather_elements: uint64 indices are not supported (values past 2^63 do not fit an index; use int64)");
  static_assert(rank_v<D> == rank_v<I> && rank_v<D> >= 1,
                "fusor: gather_elements: data and indices must have the same rank (>= 1)");
  // (make_node_unchecked: indices may be smaller than data; output_shape checks them)
  return make_node_unchecked(op::gather_elements{{}, axis}, std::remove_cvref_t<D>(std::forward<D>(data)),
                             std::remove_cvref_t<I>(std::forward<I>(indices)));
}
FUSOR_OPERAND_FALLBACK(gather_elements, "ee", "gather_elements(data, indices, axis): data and indices are expressions")

/// embedding(indices, weight): rows of weight [V, D] at indices [...]
/// (PyTorch F.embedding(input, weight)): gather(weight, indices, 0), shape
/// indices' shape + [D].
template <expression I, expression W>
auto embedding(I&& indices, W&& weight) {
  static_assert(rank_v<W> == 2, "fusor: embedding: weight must be [num_embeddings, embedding_dim] (rank 2)");
  return gather(std::forward<W>(weight), std::forward<I>(indices), 0);
}
FUSOR_OPERAND_FALLBACK(embedding, "ee", "embedding(indices, weight): indices and weight are expressions")

}  // namespace fusor
