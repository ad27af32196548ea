// must not compile: an integer `_c` literal is an int64 constant; one past
// INT64_MAX would wrap.
#include <fusor/fusor.hpp>
using namespace fusor::literals;
int main() {
  auto c = 9223372036854775808_c;
  (void)c;
}
