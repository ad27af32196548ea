// must not compile: reductions take inputs of rank <= 8.
#include <fusor/fusor.hpp>
int main() {
  float a[1] = {0}, o[1];
  auto x = fusor::host_view(a, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  fusor::run(fusor::host_view(o, 1, 1, 1, 1, 1, 1, 1, 1, 1), fusor::sum(x, {0}), fusor::host());
}
