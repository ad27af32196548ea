// must not compile: the output's rank (3) differs from the root's, a
// flatten of a computed value (rank 2). The root's inverse-view path
// (exec/root_view_map.hpp) leaves the rank check to run's own message.
#include <fusor/fusor.hpp>
int main() {
  float x[24], o[24];
  auto X = fusor::host_view(x, 2, 3, 4);
  fusor::run(fusor::host_view(o, 2, 3, 4), fusor::flatten(fusor::softmax(X, 1), 1), fusor::host());
}
