// More than 2^31 elements on the host: 64-bit indexing end to end. The input
// is a broadcast view (stride 0) of a few bytes; the output is 2^31 + 7 fp16
// values (4 GiB). Label `large`; CI runs it (a few seconds on 2 cores).
#include <fusor/fusor.hpp>

#include <cstdio>
#include <cstdint>
#include <memory>
#include <new>

int main() {
  const std::int64_t n = (std::int64_t(1) << 31) + 7;
  float ramp[2] = {0.5f, -3.0f};
  // Broadcast views: every element reads ramp[0] / ramp[1].
  auto a = fusor::host_view(&ramp[0], fusor::extents<fusor::dyn>(n), fusor::shape<1>{0});
  auto b = fusor::host_view(&ramp[1], fusor::extents<fusor::dyn>(n), fusor::shape<1>{0});
  std::unique_ptr<__half[]> out(new (std::nothrow) __half[std::size_t(n)]);
  if (!out) {
    std::puts("SKIPPED: cannot allocate 4 GiB for the output");
    return 77;
  }
  // Sentinels at both ends, beyond index 2^31.
  out[0] = __float2half(-1.0f);
  out[std::size_t(n - 1)] = __float2half(-1.0f);
  auto y = fusor::relu(a * 4.0f + b) + 1.0f;  // relu(2 - 3) + 1 = 1
  const auto r = fusor::run(fusor::host_view(out.get(), n), y, fusor::host());
  const std::int64_t probes[] = {0, (std::int64_t(1) << 31) - 1, std::int64_t(1) << 31, n - 1};
  for (std::int64_t i : probes) {
    const float v = __half2float(out[std::size_t(i)]);
    if (v != 1.0f) {
      std::printf("FAILED: out[%lld] = %g, expected 1\n", (long long)i, double(v));
      return 1;
    }
  }
  std::printf("%lld elements in %zu kernel: 64-bit indexing ok\n", (long long)n, r.kernels);
  return 0;
}
