// must not compile: run() writes its output; a view of const elements cannot be one.
#include <fusor/fusor.hpp>
int main() {
  float a[8];
  const float* out = a;
  fusor::run(fusor::host_view(out, 8), fusor::relu(fusor::host_view(a, 8)), fusor::host());
}
