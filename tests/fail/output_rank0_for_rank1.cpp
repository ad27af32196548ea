// must not compile: a rank-0 output for a rank-1 expression (was accepted and
// wrote every result to one element; regression test).
#include <fusor/fusor.hpp>
int main() {
  float a[5], o;
  fusor::run(fusor::host_view(&o, fusor::extents<>{}), fusor::relu(fusor::host_view(a, 5)), fusor::host());
}
