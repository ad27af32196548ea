// fusor test support: the elements of a strided view, in row-major order of
// its shape (how the shape-op tests compare a re-strided result with a
// reference view).
#pragma once

#include <fusor/fusor.hpp>

#include <array>
#include <vector>

namespace fusor::testing {

/// The elements of view v (any rank, any strides) in row-major order of its shape.
template <class V>
std::vector<typename V::value_type> dense(const V& v) {
  constexpr int R = int(V::extents_type::rank());
  const auto s = v.shape();
  std::vector<typename V::value_type> out;
  std::array<index_t, R> i{};
  index_t n = 1;
  for (int d = 0; d < R; ++d) n *= s[d];
  for (index_t k = 0; k < n; ++k) {
    index_t off = 0;
    for (int d = 0; d < R; ++d) off += i[std::size_t(d)] * v.stride(d);
    out.push_back(v.data()[off]);
    for (int d = R - 1; d >= 0; --d) {
      if (++i[std::size_t(d)] < s[d]) break;
      i[std::size_t(d)] = 0;
    }
  }
  return out;
}

}  // namespace fusor::testing
