// must not compile: gather's indices must be integers.
#include <fusor/fusor.hpp>
int main() {
  float a[16], i[2];
  auto e = fusor::gather(fusor::host_view(a, 4, 4), fusor::host_view(i, 2), 0);
  (void)e;
}
