// must not compile: instance_norm needs x = [N, C, spatial...] (rank >= 3).
#include <fusor/fusor.hpp>
int main() {
  float a[16], s[4];
  auto x = fusor::host_view(a, 4, 4);
  auto e = fusor::instance_norm(x, fusor::host_view(s, 4), fusor::host_view(s, 4));
  (void)e;
}
