// must not compile: batch_norm's channel axis (a template argument) must name a dim of x.
#include <fusor/fusor.hpp>
int main() {
  float a[64], g[4];
  auto x = fusor::host_view(a, 4, 4, 4);
  auto c = fusor::host_view(g, 4);
  auto e = fusor::batch_norm<3>(x, fusor::batch_norm_params{c, c, c, c});
  (void)e;
}
