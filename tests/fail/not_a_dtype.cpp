// must not compile: char is not a fusor dtype.
#include <fusor/fusor.hpp>
int main() {
  char a[4];
  auto x = fusor::host_view(a, 4);
  (void)x;
}
