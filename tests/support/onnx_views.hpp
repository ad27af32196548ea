// fusor test support: ONNX shapes as fusor extents.
//
// The conformance tests view every tensor at one static rank (4): ONNX
// broadcasting is right-aligned, so a shape left-padded with 1s is
// equivalent, and one rank keeps instantiations (and compile time) small.
#pragma once

#include <fusor/fusor.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fusor::testing {

/// The ONNX shape s left-padded with 1s to rank R. Throws
/// std::runtime_error when s has more than R dims.
template <int R = 4>
fusor::dextents<R> padded_extents(const std::vector<std::int64_t>& s) {
  if (s.size() > std::size_t(R)) throw std::runtime_error("rank > " + std::to_string(R) + " not handled by this test");
  cuda::std::array<std::int64_t, R> e{};
  e.fill(1);
  std::copy(s.begin(), s.end(), e.begin() + (R - std::int64_t(s.size())));
  return fusor::dextents<R>(e);
}

}  // namespace fusor::testing
