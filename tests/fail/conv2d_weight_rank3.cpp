// must not compile: conv2d's weight must be OIHW (rank 4).
#include <fusor/fusor.hpp>
int main() {
  float a[64], b[72];
  auto x = fusor::host_view(a, 1, 4, 4, 4);
  auto w = fusor::host_view(b, 8, 3, 3);
  auto e = fusor::conv2d(x, w);
  (void)e;
}
