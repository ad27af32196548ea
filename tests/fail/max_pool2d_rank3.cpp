// must not compile: max_pool2d needs x = [N, C, H, W] or [N, H, W, C] (rank 4).
#include <fusor/fusor.hpp>
int main() {
  float a[48];
  auto x = fusor::host_view(a, 3, 4, 4);
  auto e = fusor::max_pool2d(x, {.kernel = {2, 2}});
  (void)e;
}
