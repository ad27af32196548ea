// explain_demo: prints fusor::explain for a chain, a written-out GELU and a
// sibling group (the text shown in docs/explain.md).
#include <fusor/fusor.hpp>
#include <cstdio>
#include <vector>
struct X; struct Z;
int main(){
  using namespace fusor::literals;
  std::vector<float> a(8), b(8);
  auto x = fusor::host_view(a.data(), 8).with_id<X>(); auto z = fusor::host_view(b.data(), 8).with_id<Z>();
  std::fputs(fusor::explain(fusor::relu(fusor::gelu(x * 2.0f + z) - fusor::sigmoid(x)) * z).c_str(), stdout);
  std::puts("----");
  std::fputs(fusor::explain(0.5_c * x * (1.0_c + fusor::erf(x * 0.7071067811865476_c)) + z).c_str(), stdout);
  std::puts("----");
  std::fputs(fusor::explain(fusor::siblings(fusor::silu(x), fusor::sigmoid(x) * z)).c_str(), stdout);
}
