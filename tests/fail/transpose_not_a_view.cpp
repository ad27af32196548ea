// must not compile: transpose is a zero-copy view operation; relu(x) is not a view.
#include <fusor/fusor.hpp>
int main() {
  float a[32];
  auto x = fusor::host_view(a, 4, 8);
  auto e = fusor::transpose(fusor::relu(x));
  (void)e;
}
