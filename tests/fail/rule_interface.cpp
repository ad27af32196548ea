// must not compile: a user rule without `absorbs`.
#include <fusor/fusor.hpp>
struct incomplete_rule {
  static constexpr const char* name = "incomplete";
  using kernel = fusor::kernel_family::elementwise;
  template <class E>
  static constexpr bool matches = true;
};
int main() {
  constexpr int n = fusor::kernel_count<decltype(fusor::relu(fusor::host_view((float*)nullptr, 4))),
                                        fusor::with_rules<incomplete_rule>>;
  (void)n;
}
