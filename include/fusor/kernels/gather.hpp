#pragma once
/// @file kernels/gather.hpp
/// The gather kernel (ops/gather.hpp): one output element per call (a CUDA
/// thread; an OpenMP iteration on the host). Written once as
/// FUSOR_HOST_DEVICE code over the row family's operands
/// (kernels/parts/rows.hpp): the index operand is evaluated at the output's
/// index dims, then the data operand at the gathered position.
#include <fusor/kernels/parts/rows.hpp>

namespace fusor::kernels {

/// The output's extents and where the indices sit in it: output dims
/// [axis, axis + RI) index the indices; the data's extent along axis.
template <int RO>
struct gather_space {
  index_array<RO> out_extent{};
  index_t outputs = 1;  ///< product of out_extent
  int axis = 0;
  index_t extent = 0;
};

/// gather of data operand x (rank RD) at index operand idx (rank RI). An
/// index outside [-extent, extent) is never dereferenced: the kernel stores
/// 0, and sets *bad (device; the host checks every index before it runs).
template <int RD, int RI, class X, class Idx, class Out>
struct gather_rows {
  static constexpr int RO = RD + RI - 1;
  static constexpr int index_rank = RI;
  static constexpr const char* name = "gather";
  gather_space<RO> space;
  X x;
  Idx idx;
  Out out;  ///< addressed by output indices
  int* bad = nullptr;

  /// The first output dim that addresses the indices (output dims
  /// [axis, axis + RI) index them).
  static constexpr int index_dim0(int axis) { return axis; }
  /// The index at output index `o` (negative ones counted from the end; out
  /// of range stays out of range).
  FUSOR_HOST_DEVICE index_t index_at(const index_array<RO>& o) const {
    index_array<RI> i{};
    for (int q = 0; q < RI; ++q) i[q] = o[space.axis + q];
    index_t k = static_cast<index_t>(idx.at(i));
    return k < 0 ? k + space.extent : k;
  }

  FUSOR_HOST_DEVICE void run_output(index_t o) const {
    index_array<RO> oi{};
    for (int d = RO - 1; d >= 0; --d) {
      oi[d] = o % space.out_extent[d];
      o /= space.out_extent[d];
    }
    const index_t k = index_at(oi);
    using V = decltype(x.at(index_array<RD>{}));
    if (k < 0 || k >= space.extent) {
      if (bad) *bad = 1;
      out.put(oi, V(0));
      return;
    }
    index_array<RD> di{};
    for (int d = 0; d < space.axis; ++d) di[d] = oi[d];
    di[space.axis] = k;
    for (int d = space.axis + 1; d < RD; ++d) di[d] = oi[d + RI - 1];
    out.put(oi, x.at(di));
  }
};

/// gather_elements of data operand x at index operand idx, both rank R:
/// output index o reads x at o with dim `axis` replaced by idx at o. An
/// index out of range is handled as in gather_rows.
template <int R, class X, class Idx, class Out>
struct gather_elements_rows {
  static constexpr int RO = R;
  static constexpr int index_rank = R;
  static constexpr const char* name = "gather_elements";
  gather_space<R> space;
  X x;
  Idx idx;
  Out out;  ///< addressed by output indices
  int* bad = nullptr;

  /// The index at output index `o` (negative ones counted from the end).
  FUSOR_HOST_DEVICE index_t index_at(const index_array<R>& o) const {
    index_t k = static_cast<index_t>(idx.at(o));
    return k < 0 ? k + space.extent : k;
  }
  /// The output dims that address the indices: all of them.
  static constexpr int index_dim0(int) { return 0; }

  FUSOR_HOST_DEVICE void run_output(index_t o) const {
    index_array<R> oi{};
    for (int d = R - 1; d >= 0; --d) {
      oi[d] = o % space.out_extent[d];
      o /= space.out_extent[d];
    }
    const index_t k = index_at(oi);
    using V = decltype(x.at(index_array<R>{}));
    if (k < 0 || k >= space.extent) {
      if (bad) *bad = 1;
      out.put(oi, V(0));
      return;
    }
    index_array<R> di = oi;
    di[space.axis] = k;
    out.put(oi, x.at(di));
  }
};

/// one_hot (ops/one_hot.hpp) of index operand idx (rank RI) into dtype T:
/// output dim `axis` (of the rank RI + 1 result) is the class.
template <int RI, class T, class Idx, class Out>
struct one_hot_rows {
  static constexpr int RO = RI + 1;
  gather_space<RO> space;  ///< extent = depth; axis = the class dim
  Idx idx;
  Out out;
  T off, on;

  FUSOR_HOST_DEVICE void run_output(index_t o) const {
    index_array<RO> oi{};
    for (int d = RO - 1; d >= 0; --d) {
      oi[d] = o % space.out_extent[d];
      o /= space.out_extent[d];
    }
    index_array<RI> ii{};
    for (int d = 0, k = 0; d < RO; ++d)
      if (d != space.axis) ii[k++] = oi[d];
    const auto raw = idx.at(ii);
    const index_t depth = space.extent;
    bool valid = true;  // false: no class, a row of off
    index_t k = 0;
    if constexpr (cuda::std::is_floating_point_v<decltype(raw)>) {
      valid = raw > -double(depth) - 1 && raw < double(depth);  // NaN fails both
      if (valid) k = index_t(raw);                              // truncated toward zero
    } else if constexpr (cuda::std::is_unsigned_v<decltype(raw)>) {
      valid = cuda::std::uint64_t(raw) < cuda::std::uint64_t(depth);  // (a uint64 past 2^63 must not wrap negative)
      if (valid) k = index_t(raw);
    } else {
      k = index_t(raw);
    }
    if (k < 0) k += depth;
    out.put(oi, (valid && k >= 0 && k < depth && k == oi[space.axis]) ? on : off);
  }
};

}  // namespace fusor::kernels
