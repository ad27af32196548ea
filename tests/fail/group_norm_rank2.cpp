// must not compile: group_norm needs x = [N, C, spatial...] (rank >= 3).
#include <fusor/fusor.hpp>
int main() {
  float a[16];
  auto x = fusor::host_view(a, 4, 4);
  auto e = fusor::group_norm(x, 2, nullptr, nullptr);
  (void)e;
}
