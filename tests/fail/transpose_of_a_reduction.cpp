// must not compile: transpose is a zero-copy index map; it is pushed through
// views and elementwise expressions, not through a reduction (softmax).
#include <fusor/fusor.hpp>
int main() {
  float a[32];
  auto x = fusor::host_view(a, 4, 8);
  auto e = fusor::transpose(fusor::softmax(x));
  (void)e;
}
