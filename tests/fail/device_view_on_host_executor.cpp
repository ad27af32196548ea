// must not compile: a device view given to the host executor.
#include <fusor/fusor.hpp>
int main() {
  float a[4], o[4];
  auto x = fusor::device_view(a, 4);
  fusor::run(fusor::host_view(o, 4), fusor::relu(x), fusor::host());
}
