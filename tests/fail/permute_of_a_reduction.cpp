// must not compile: shape ops are pushed down to the views of an elementwise
// expression; a reduction's result is not a view (compute it into a buffer first).
#include <fusor/fusor.hpp>
int main() {
  float a[32];
  auto x = fusor::host_view(a, 2, 4, 4);
  auto e = fusor::permute(fusor::relu(fusor::mean(x, {2})), {2, 0, 1});
  (void)e;
}
