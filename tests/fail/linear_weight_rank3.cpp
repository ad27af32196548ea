// must not compile: linear's W must be [N, K].
#include <fusor/fusor.hpp>
int main() {
  float a[32], b[64];
  auto x = fusor::host_view(a, 4, 8);
  auto w = fusor::host_view(b, 2, 4, 8);
  auto e = fusor::linear(x, w);
  (void)e;
}
