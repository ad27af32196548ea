// g++: every family instantiated for host() and unfused(), -Wall -Wextra -Wpedantic -Werror.
#include "warnings_usage.hpp"

std::size_t fusor_warnings_usage_host(float* out, const float* in) {
  const auto view = [](auto* p, auto... n) { return fusor::host_view(p, n...); };
  return fusor_warnings_usage(fusor::host(), view, out, in) + fusor_warnings_usage(fusor::unfused(), view, out, in);
}
