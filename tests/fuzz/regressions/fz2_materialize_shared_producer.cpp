// FZ-2 (tests/fuzz/README.md): fusor::materialize(e) does not compile when e
// contains a shared producer (a provably identical subexpression used twice)
// and has dynamic extents: plan_inside's materialize branch expects plan_expr
// to return a group<R, X>, but it returns a runtime_choice<F, S>.
// This file must compile; ctest fuzz.regression.FZ-2 expects the current
// error until the planner is fixed (then make it an ordinary compile test).
#include <fusor/fusor.hpp>

#include <vector>

struct X;

int main() {
  const int n = 16;
  std::vector<float> a(n, 1.0f), out(n);
  const auto x = fusor::host_view(a.data(), n).with_id<X>();
  const auto e = fusor::relu(fusor::materialize(fusor::exp(x) + fusor::exp(x)));
  fusor::run(fusor::host_view(out.data(), n), e, fusor::host());
  return out[0] == out[0] ? 0 : 1;
}
