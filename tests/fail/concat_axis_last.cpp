// must not compile: concat takes its axis first (torch.cat's order, axis last, is caught with a fusor: line).
#include <fusor/fusor.hpp>
int main() {
  float a[6], b[6];
  auto e = fusor::concat(fusor::host_view(a, 2, 3), fusor::host_view(b, 2, 3), 1);
  (void)e;
}
