// must not compile: siblings(e1, e2) needs exactly two outputs.
#include <fusor/fusor.hpp>
int main() {
  float a[8], o[8];
  auto x = fusor::host_view(a, 8);
  fusor::run(fusor::outputs(fusor::host_view(o, 8)), fusor::siblings(fusor::relu(x), fusor::exp(x)), fusor::host());
}
