// Shared by odr_a.cpp and odr_b.cpp: the same expressions, instantiated in
// two translation units that are linked into one program.
#pragma once
#include <fusor/fusor.hpp>

#include <vector>

namespace odr {
struct X;
inline auto chain(const float* a, const float* b, fusor::index_t n) {
  auto x = fusor::host_view(a, n).with_id<X>();
  auto z = fusor::host_view(b, n);
  return fusor::relu(x * fusor::sigmoid(x) + z) * 2.0f;
}
std::vector<float> run_in_a(const std::vector<float>& a, const std::vector<float>& b);
std::vector<float> run_in_b(const std::vector<float>& a, const std::vector<float>& b);
}  // namespace odr
