// nvcc: every family instantiated for cuda() (host and device passes), -Werror all-warnings and
// -Xcompiler=-Wall,-Wextra,-Werror (not -Wpedantic: nvcc's generated host code uses GNU line markers).
#include "warnings_usage.hpp"

std::size_t fusor_warnings_usage_cuda(float* out, const float* in) {
  const auto view = [](auto* p, auto... n) { return fusor::device_view(p, n...); };
  return fusor_warnings_usage(fusor::cuda(), view, out, in);
}
