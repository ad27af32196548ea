// must not compile: concat joins inputs of one dtype (float with int32 here).
#include <fusor/fusor.hpp>
#include <cstdint>
int main() {
  float a[6];
  std::int32_t b[6];
  auto e = fusor::concat(0, fusor::host_view(a, 2, 3), fusor::host_view(b, 2, 3));
  (void)e;
}
