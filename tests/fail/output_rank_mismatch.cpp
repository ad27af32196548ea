// must not compile: a rank-1 output for a rank-2 expression.
#include <fusor/fusor.hpp>
int main() {
  float a[6], o[6];
  fusor::run(fusor::host_view(o, 6), fusor::relu(fusor::host_view(a, 2, 3)), fusor::host());
}
