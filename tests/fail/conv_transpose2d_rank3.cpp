// must not compile: conv_transpose2d needs x = [N, C_in, H, W] (rank 4).
#include <fusor/fusor.hpp>
int main() {
  float a[48], w[36];
  auto e = fusor::conv_transpose2d(fusor::host_view(a, 3, 4, 4), fusor::host_view(w, 4, 1, 3, 3));
  (void)e;
}
