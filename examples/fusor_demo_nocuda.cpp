// fusor_demo without its CUDA backend (fusor's CUDA support disabled or nvcc
// absent): --backend cuda reports that it was not built.
#include "demo_network.hpp"

#include <stdexcept>

namespace demo {
bool cuda_backend_built() { return false; }
cuda_result run_cuda(const params&, const float*, fusor::index_t, int) {
  throw std::logic_error("cuda backend not built");
}
}  // namespace demo
