// must not compile: x [?, 768] and W [3072, 512] (W is [N, K]) disagree on K.
#include <fusor/fusor.hpp>
int main() {
  float* a = nullptr;
  float* b = nullptr;
  auto x = fusor::host_view(a, fusor::extents<fusor::dyn, 768>(4));
  auto w = fusor::host_view(b, fusor::extents<3072, 512>{});
  auto e = fusor::linear(x, w);
  (void)e;
}
