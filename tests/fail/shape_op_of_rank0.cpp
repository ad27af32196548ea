// must not compile: squeeze (or permute, transpose, slice, flatten) of an
// expression of rank 0 (a reduction over every axis without keepdims) has
// no dim to move or drop. (unsqueeze, expand and reshape of it compile: they
// add dims to the value's temporary, ops/shape_ops.hpp.)
#include <fusor/fusor.hpp>
int main() {
  float a[8];
  auto x = fusor::host_view(a, 2, 4);
  auto e = fusor::squeeze(fusor::sum<0>(x, {0, 1}, false), 0);
  (void)e;
}
