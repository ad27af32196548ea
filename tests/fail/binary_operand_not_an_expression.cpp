// must not compile: a pointer is neither a fusor expression nor a number.
#include <fusor/fusor.hpp>
int main() {
  float a[4];
  auto x = fusor::host_view(a, 4);
  auto e = fusor::max(x, &a[0]);
  (void)e;
}
