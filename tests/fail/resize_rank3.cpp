// must not compile: resize needs x = [N, C, H, W] or [N, H, W, C] (rank 4).
#include <fusor/fusor.hpp>
int main() {
  float a[48];
  auto e = fusor::resize(fusor::host_view(a, 3, 4, 4), {.scale = {2, 2}});
  (void)e;
}
