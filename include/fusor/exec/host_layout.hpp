#pragma once
/// @file exec/host_layout.hpp
/// Layout analysis for the host's strided elementwise loop
/// (exec/host_packets.hpp): which dims of a kernel's index space every
/// operand walks as one (coalesce_dims), and whether a range of the output
/// can be walked flat, as one run across rows (dense_across_rows).
#include <fusor/kernels/elementwise.hpp>

#include <type_traits>

namespace fusor::exec {

/// Longest last dim whose row-invariant subtrees the host buffers per
/// position (exec/host_packets.hpp): the buffers stay in L1.
inline constexpr index_t host_row_buffer_max = 4096;
/// Fewest rows in a range for a flat walk (exec/host_packets.hpp): the
/// per-row set-up it saves must outweigh building one buffer per parameter
/// (x * s[N] + b[N] over 2^22 floats, one thread, 2026-12-04: N = 16 0.71 ms
/// flat against 1.58 per row, N = 64 and 256 0.79-0.93 against 0.82-0.97;
/// flat lost from N = 1024 on, a 2^15-element chunk holding 32 rows).
inline constexpr index_t host_flat_rows_min = 64;

/// Merges adjacent dims of k that every operand walks as one (stride of the
/// outer = stride of the inner * inner extent; a stride-0 broadcast on both
/// merges too), innermost first, so runs along the last dim are as long as
/// the layout allows: relu(batch_norm(x)) over NCHW runs over H * W, not W.
/// The output's linear order is unchanged; merged-away dims become leading
/// dims of extent 1. A source flagged run_invariant keeps stride 0 on the
/// last dim. Returns whether anything merged.
template <class K>
bool coalesce_dims(K& k) {
  constexpr int R = int(sizeof(k.extent) / sizeof(k.extent[0]));
  bool merged = false;
  const auto each_stride = [&](auto&& f) {
    fusor::apply([&](auto&... s) { (f(s.stride), ...); }, k.sources);
    fusor::apply([&](auto&... o) { (f(o.stride), ...); }, k.sinks);
  };
  int inner = R - 1;  // the dim being grown; dims (inner, R) are final
  for (int d = R - 2; d >= 0; --d) {
    if (k.extent[d] == 1) continue;
    bool fits = true;
    if (k.extent[inner] == 1) {
      // The last dim (extent 1) is replaced by d, unless a source known to
      // be constant along the last dim (k_source::run_invariant) is not
      // constant along d: the host hoists what it reads per run.
      fusor::apply([&](const auto&... s) {
        ((fits = fits && (!std::remove_cvref_t<decltype(s)>::run_invariant || s.stride[d] == 0)), ...);
      }, k.sources);
      if (fits) each_stride([&](auto& st) { st[inner] = st[d]; });
    } else {
      each_stride([&](const auto& st) { fits = fits && st[d] == st[inner] * k.extent[inner]; });
    }
    if (fits) {
      k.extent[inner] *= k.extent[d];
      k.extent[d] = 1;
      merged = true;
    } else {
      --inner;
      if (inner != d) {
        k.extent[inner] = k.extent[d];
        k.extent[d] = 1;
        each_stride([&](auto& st) { st[inner] = st[d]; });
      }
    }
  }
  return merged;
}

/// Can the host walk kernel k's index space flat, as if it were one run:
/// every output and every source not flagged row_invariant dense in
/// row-major order over k's extents (dims of extent 1 ignored), and every
/// row_invariant source (a per-position parameter along the last dim, NHWC's
/// [C]) constant along every other dim. Then element i of the range is at
/// offset base + i of each dense operand and at position
/// i mod extent[R - 1] of each parameter.
template <class K>
bool dense_across_rows(const K& k) {
  constexpr int R = int(sizeof(k.extent) / sizeof(k.extent[0]));
  const auto dense = [&](const auto& stride) {
    index_t expect = 1;
    for (int d = R - 1; d >= 0; --d) {
      if (k.extent[d] == 1) continue;
      if (stride[d] != expect) return false;
      expect *= k.extent[d];
    }
    return true;
  };
  const auto per_position = [&](const auto& stride) {
    for (int d = 0; d + 1 < R; ++d)
      if (k.extent[d] != 1 && stride[d] != 0) return false;
    return true;
  };
  bool ok = true;
  fusor::apply([&](const auto&... s) {
    ((ok = ok && (std::remove_cvref_t<decltype(s)>::row_invariant ? per_position(s.stride) : dense(s.stride))), ...);
  }, k.sources);
  fusor::apply([&](const auto&... o) { ((ok = ok && dense(o.stride)), ...); }, k.sinks);
  return ok;
}

}  // namespace fusor::exec
