// must not compile: batch_norm's per-channel parameters are 1-D views [C].
#include <fusor/fusor.hpp>
int main() {
  float a[64], g[4];
  auto x = fusor::host_view(a, 1, 4, 4, 4);
  auto gamma = fusor::host_view(g, 2, 2);
  auto e = fusor::batch_norm(x, fusor::batch_norm_params{gamma, gamma, gamma, gamma});
  (void)e;
}
