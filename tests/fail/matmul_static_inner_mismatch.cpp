// must not compile: static inner dimensions K = 7 and K = 8 cannot match.
#include <fusor/fusor.hpp>
int main() {
  float a[28], b[40];
  auto x = fusor::host_view(a, fusor::extents<4, 7>{});
  auto w = fusor::host_view(b, fusor::extents<8, 5>{});
  auto e = fusor::matmul(x, w);
  (void)e;
}
