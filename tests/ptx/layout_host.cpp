// Host side of ctest ptx.layout (layout.cu has the device side): prints, for
// each probed kernel, "probe <Id>: <sizeof> <offset> <offset> ..." in the
// order layout.cu's kernel stores them.
#include "layout_probe.hpp"

#include <cstdio>

int main() {
  layout_probe::for_each_kernel([](auto id, const auto& k) {
    const char* base = reinterpret_cast<const char*>(&k);
    std::printf("probe %d: %zu", int(decltype(id)::value), sizeof(k));
    auto record = [&](const void* p) { std::printf(" %td", static_cast<const char*>(p) - base); };
    layout_probe::walk_kernel(k, record);
    std::printf("\n");
  });
}
