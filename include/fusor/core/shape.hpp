#pragma once
/// @file core/shape.hpp
/// Extents, run-time shapes and NumPy/ONNX multidirectional broadcasting
/// (https://github.com/onnx/onnx/blob/main/docs/Broadcasting.md): shapes are
/// right-aligned; each pair of extents must be equal or one of them 1.
#include <fusor/config.hpp>
#include <fusor/core/error.hpp>

#include <cuda/std/array>
#include <cuda/std/cstddef>
#include <cuda/std/cstdint>
#include <cuda/std/mdspan>
#include <cuda/std/utility>

#include <string>

namespace fusor {

/// Index type of every extent, stride and offset: 64-bit, so tensors past
/// 2^31 elements index correctly.
using index_t = cuda::std::int64_t;

/// Marks an extent known only at run time.
inline constexpr cuda::std::size_t dyn = cuda::std::dynamic_extent;

/// Static/dynamic extents: `fusor::extents<2, fusor::dyn>` is 2 x n.
template <cuda::std::size_t... E>
using extents = cuda::std::extents<index_t, E...>;

/// All-dynamic extents of rank R.
template <cuda::std::size_t R>
using dextents = cuda::std::dextents<index_t, R>;

/// The largest rank fusor supports.
inline constexpr int max_rank = 8;

/// A run-time shape of static rank R (extents in elements).
template <int R>
using shape = cuda::std::array<index_t, (R > 0 ? R : 1)>;

/// Number of elements of a shape; throws shape_error naming `what` when the
/// product overflows int64.
template <int R>
inline index_t element_count(const shape<R>& s, const char* what = "tensor") {
  index_t n = 1;
  for (int d = 0; d < R; ++d) {
    if (s[d] < 0) throw shape_error(std::string("fusor: ") + what + ": negative extent");
    if (s[d] != 0 && n > INT64_MAX / s[d])
      throw shape_error(std::string("fusor: ") + what + ": element count overflows int64");
    n *= s[d];
  }
  for (int d = 0; d < R; ++d)
    if (s[d] == 0) return 0;
  return n;
}

/// "[2, 3]" for a shape.
template <int R>
std::string to_string(const shape<R>& s) {
  std::string out = "[";
  for (int d = 0; d < R; ++d) out += (d ? ", " : "") + std::to_string(s[d]);
  return out + "]";
}

/// Run-time shape of an extents object.
template <class E>
shape<int(E::rank())> shape_of_extents(const E& e) {
  shape<int(E::rank())> s{};
  for (int d = 0; d < int(E::rank()); ++d) s[d] = e.extent(d);  // (int: no unsigned d < 0 warning at rank 0)
  return s;
}

namespace detail {

/// Static part of broadcasting two extents types; ok == false when two static
/// extents can never broadcast.
template <class A, class B>
struct static_broadcast {
  static constexpr int rank = int(A::rank() > B::rank() ? A::rank() : B::rank());
  struct result {
    cuda::std::array<cuda::std::size_t, (rank > 0 ? rank : 1)> ext{};
    bool ok = true;
  };
  static constexpr result compute() {
    result r;
    for (int d = 0; d < rank; ++d) {
      const int da = d - (rank - int(A::rank())), db = d - (rank - int(B::rank()));
      const cuda::std::size_t a = da >= 0 ? A::static_extent(da) : 1;
      const cuda::std::size_t b = db >= 0 ? B::static_extent(db) : 1;
      if (a == dyn && b == dyn) r.ext[d] = dyn;
      else if (a == dyn) r.ext[d] = b == 1 ? dyn : b;
      else if (b == dyn) r.ext[d] = a == 1 ? dyn : a;
      else if (a == b || b == 1) r.ext[d] = a;
      else if (a == 1) r.ext[d] = b;
      else r.ok = false;
    }
    return r;
  }
  static constexpr result value = compute();
  template <cuda::std::size_t... I>
  static auto make(cuda::std::index_sequence<I...>) -> extents<value.ext[I]...>;
  using type = decltype(make(cuda::std::make_index_sequence<rank>{}));
};

}  // namespace detail

/// Extents type of the broadcast of A and B (dynamic where unknown).
template <class A, class B>
using broadcast_extents_t = typename detail::static_broadcast<A, B>::type;

/// False when static extents A and B can never broadcast.
template <class A, class B>
inline constexpr bool statically_broadcastable = detail::static_broadcast<A, B>::value.ok;

/// Broadcasts run-time shapes a (rank RA) and b (rank RB) into `out` (rank R).
/// Throws shape_error naming `op` and both shapes when they do not broadcast.
template <int R, int RA, int RB>
inline shape<R> broadcast_shapes(const shape<RA>& a, const shape<RB>& b, const char* op) {
  static_assert(R >= RA && R >= RB);
  shape<R> out{};
  for (int d = 0; d < R; ++d) {
    const int da = d - (R - RA), db = d - (R - RB);
    const index_t x = da >= 0 ? a[da] : 1, y = db >= 0 ? b[db] : 1;
    if (x == y || y == 1) out[d] = x;
    else if (x == 1) out[d] = y;
    else
      throw shape_error(std::string("fusor: ") + op + ": operand shapes " + to_string<RA>(a) + " and " +
                        to_string<RB>(b) + " do not broadcast (dimension " + std::to_string(d) + ": " +
                        std::to_string(x) + " vs " + std::to_string(y) + ")");
  }
  return out;
}

/// Broadcast strides: the strides (in elements) with which an operand of shape
/// `s`, strides `st` is read at each index of an output of rank R; 0 where the
/// operand is broadcast.
template <int R, int RA>
FUSOR_HOST_DEVICE cuda::std::array<index_t, (R > 0 ? R : 1)> broadcast_strides(const shape<RA>& s,
                                                                               const shape<RA>& st) {
  cuda::std::array<index_t, (R > 0 ? R : 1)> out{};
  for (int d = 0; d < R; ++d) {
    const int da = d - (R - RA);
    out[d] = (da >= 0 && s[da] != 1) ? st[da] : 0;
  }
  return out;
}

}  // namespace fusor
