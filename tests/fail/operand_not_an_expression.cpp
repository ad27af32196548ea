// must not compile: a std::vector is not a fusor expression.
#include <fusor/fusor.hpp>
#include <vector>
int main() {
  std::vector<float> v(4);
  auto e = fusor::relu(v);
  (void)e;
}
