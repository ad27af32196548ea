// must not compile: topk's 3rd argument is the axis; a bool there is largest misplaced.
#include <fusor/fusor.hpp>
int main() {
  float a[16];
  auto e = fusor::topk(fusor::host_view(a, 4, 4), 2, false);
  (void)e;
}
