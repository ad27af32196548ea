#include "odr_common.hpp"

#include <cstdio>
#include <cstring>

std::vector<float> odr::run_in_a(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> out(a.size());
  fusor::run(fusor::host_view(out.data(), fusor::index_t(out.size())), chain(a.data(), b.data(), fusor::index_t(a.size())),
             fusor::host());
  return out;
}

int main() {
  std::vector<float> a(1000), b(1000);
  for (int i = 0; i < 1000; ++i) a[i] = 0.01f * float(i - 500), b[i] = 0.002f * float(i);
  const auto ra = odr::run_in_a(a, b), rb = odr::run_in_b(a, b);
  const bool same = std::memcmp(ra.data(), rb.data(), ra.size() * sizeof(float)) == 0;
  std::printf("two translation units agree: %s\n", same ? "yes" : "NO");
  return same ? 0 : 1;
}
