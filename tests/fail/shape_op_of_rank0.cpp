// must not compile: a shape op over an expression of rank 0 (a reduction
// over every axis without keepdims) has no dim to move or drop.
#include <fusor/fusor.hpp>
int main() {
  float a[8];
  auto x = fusor::host_view(a, 2, 4);
  auto e = fusor::unsqueeze(fusor::sum<0>(x, {0, 1}, false), 0);
  (void)e;
}
