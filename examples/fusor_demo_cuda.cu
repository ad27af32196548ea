// fusor_demo's --backend cuda: the same network (demo_network.hpp) over
// device memory, run with fusor::cuda() and fusor::unfused(fusor::cuda()).
// Built (nvcc) only when fusor's CUDA support is enabled; otherwise
// fusor_demo_nocuda.cpp provides a stub that reports it.
#include "demo_network.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <vector>

namespace demo {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("cuda backend: ") + what + ": " + cudaGetErrorString(e));
}

struct device_buffer {
  float* p = nullptr;
  explicit device_buffer(std::size_t n) { check(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(float)), "cudaMalloc"); }
  ~device_buffer() { cudaFree(p); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
};

template <class F>
double median_seconds(int repeat, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    check(cudaDeviceSynchronize(), "synchronize");
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
}

}  // namespace

bool cuda_backend_built() { return true; }

cuda_result run_cuda(const params& hw, const float* x_host, fusor::index_t n, int repeat) {
  if (!fusor::cuda_device_available()) throw no_cuda_device("cuda backend: no CUDA device is available");
  std::vector<std::unique_ptr<device_buffer>> keep;
  params dw;
  auto upload = [&](const float* src, std::size_t count) {
    keep.push_back(std::make_unique<device_buffer>(count));
    check(cudaMemcpy(keep.back()->p, src, count * sizeof(float), cudaMemcpyHostToDevice), "upload");
    return keep.back()->p;
  };
  for (const auto& [name, p] : hw.ptr) {
    dw.ptr[name] = upload(p, hw.size.at(name));
    dw.size[name] = hw.size.at(name);
  }
  const float* x = upload(x_host, std::size_t(n) * kPixels);
  auto make = [&]() {
    auto alloc = [&](std::size_t c) {
      keep.push_back(std::make_unique<device_buffer>(c));
      return keep.back()->p;
    };
    return buffers{alloc(std::size_t(n) * 16 * kPixels), alloc(std::size_t(n) * 32 * kPixels), alloc(std::size_t(n) * 32),
                   alloc(std::size_t(n) * kClasses), alloc(std::size_t(n) * kClasses)};
  };
  const buffers fused = make(), ref = make();
  const network<fusor::device_space> net{dw, n};
  cuda_result r;
  const auto ex = fusor::cuda();
  r.kernels_first = net.run(x, fused, ex);
  r.seconds_fused = median_seconds(repeat, [&] { r.kernels_fused = net.run(x, fused, ex); });
  const auto unfused = fusor::unfused(fusor::cuda());
  r.seconds_unfused = median_seconds(repeat, [&] { r.kernels_unfused = net.run(x, ref, unfused); });
  auto download = [&](const float* src) {
    std::vector<float> v(std::size_t(n) * kClasses);
    check(cudaMemcpy(v.data(), src, v.size() * sizeof(float), cudaMemcpyDeviceToHost), "download");
    return v;
  };
  r.fused_logits = download(fused.logits);
  r.fused_probs = download(fused.probs);
  r.unfused_logits = download(ref.logits);
  r.unfused_probs = download(ref.probs);
  return r;
}

}  // namespace demo
