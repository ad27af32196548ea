// dot_demo: writes the Graphviz DOT plan of an expression with a forced
// kernel boundary (docs/images/plan_materialize.dot/png).
#include <fusor/fusor.hpp>
#include <cstdio>
struct X; struct Z;
int main(){ float a[8], b[8];
  auto x = fusor::host_view(a, 8).with_id<X>(); auto z = fusor::host_view(b, 8).with_id<Z>();
  std::fputs(fusor::to_dot(fusor::relu(fusor::materialize(fusor::gelu(x * 2.0f + z))) * fusor::sigmoid(x) + z).c_str(), stdout); }
