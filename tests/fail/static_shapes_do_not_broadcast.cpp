// must not compile: static extents 2x3 and 4 cannot broadcast.
#include <fusor/fusor.hpp>
int main() {
  float a[6], b[4];
  auto x = fusor::host_view(a, fusor::extents<2, 3>{});
  auto y = fusor::host_view(b, fusor::extents<4>{});
  auto e = x + y;
  (void)e;
}
