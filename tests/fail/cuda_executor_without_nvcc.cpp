// must not compile: the CUDA executor launches kernels only from nvcc TUs.
#include <fusor/fusor.hpp>
int main() {
  float* a = nullptr;
  float* o = nullptr;
  fusor::run(fusor::device_view(o, 4), fusor::relu(fusor::device_view(a, 4)), fusor::cuda());
}
