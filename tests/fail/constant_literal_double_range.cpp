// must not compile: a floating `_c` literal beyond the range of double.
#include <fusor/fusor.hpp>
using namespace fusor::literals;
int main() {
  auto c = 1e309_c;
  (void)c;
}
