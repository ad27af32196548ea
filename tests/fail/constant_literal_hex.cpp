// must not compile: `_c` reads decimal digits only; a hexadecimal literal
// would otherwise be read as another number.
#include <fusor/fusor.hpp>
using namespace fusor::literals;
int main() {
  float a[4];
  auto x = fusor::host_view(a, 4);
  auto e = x * 0x1p-3_c;
  (void)e;
}
