// must not compile: transpose(e) swaps the last two dims, so e needs rank
// >= 2 (transpose(e, a, b) names the dims; a 1-D expression has one).
#include <fusor/fusor.hpp>
int main() {
  float a[8];
  auto x = fusor::host_view(a, 8);
  auto e = fusor::transpose(fusor::softmax(x));
  (void)e;
}
