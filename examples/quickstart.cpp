// quickstart: fuse an elementwise chain and compare it with the unfused path.
// Build: part of fusor's examples (FUSOR_BUILD_EXAMPLES); run: ./quickstart
#include <fusor/fusor.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

int main() {
  using namespace fusor::literals;
  const int n = 1 << 20;
  std::vector<float> xs(n), zs(n), fused(n), unfused(n);
  for (int i = 0; i < n; ++i) {
    xs[i] = std::sin(0.001f * float(i)) * 4.0f;
    zs[i] = std::cos(0.002f * float(i));
  }
  // example-begin quickstart
  struct X;  // identity tag: x is used twice, so the kernel loads it once
  auto x = fusor::host_view(xs.data(), n).with_id<X>();
  auto z = fusor::host_view(zs.data(), n);
  auto y = fusor::relu(x * fusor::sigmoid(x) + z) * 2.0f;  // x*sigmoid(x) is recognised as silu(x)
  static_assert(fusor::kernel_count<decltype(y)> == 1);
  auto r = fusor::run(fusor::host_view(fused.data(), n), y, fusor::host());
  // example-end quickstart
  auto u = fusor::run(fusor::host_view(unfused.data(), n), y, fusor::unfused());
  std::fputs(fusor::explain(y).c_str(), stdout);
  const bool same = std::memcmp(fused.data(), unfused.data(), sizeof(float) * n) == 0;
  std::printf("kernels: fused %zu, unfused %zu; results bitwise equal: %s\n", r.kernels, u.kernels, same ? "yes" : "NO");
  return same ? 0 : 1;
}
