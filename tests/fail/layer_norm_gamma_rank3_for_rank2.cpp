// must not compile: layer_norm's gamma must broadcast into x; a higher rank never does.
#include <fusor/fusor.hpp>
int main() {
  float a[20], g[20], o[20];
  auto x = fusor::host_view(a, 4, 5);
  auto gamma = fusor::host_view(g, 1, 4, 5);
  fusor::run(fusor::host_view(o, 4, 5), fusor::layer_norm(x, gamma, nullptr), fusor::host());
}
