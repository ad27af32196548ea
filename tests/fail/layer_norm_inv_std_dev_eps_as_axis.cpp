// must not compile: layer_norm_inv_std_dev's 2nd argument is the axis, eps the 3rd.
#include <fusor/fusor.hpp>
int main() {
  float a[16];
  auto e = fusor::layer_norm_inv_std_dev(fusor::host_view(a, 4, 4), 1e-5f);
  (void)e;
}
