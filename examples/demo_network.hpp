// The digits CNN of fusor_demo as fusor expressions, over host or device
// memory (Space = fusor::host_space or fusor::device_space): one expression
// per block, each writing a buffer the next block reads. Shared by
// fusor_demo.cpp (host) and fusor_demo_cuda.cu (the --backend cuda path).
#pragma once
#include <fusor/fusor.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace demo {

inline constexpr int kSide = 8, kPixels = 64, kClasses = 10;

/// The model's parameters by safetensors name: pointers into host or device
/// memory, and element counts.
struct params {
  std::map<std::string, const float*> ptr;
  std::map<std::string, std::size_t> size;
  const float* operator[](const std::string& name) const { return ptr.at(name); }
};

/// One batch's intermediate tensors and outputs (host or device memory).
struct buffers {
  float *a1, *a2, *pooled, *logits, *probs;  // [n,16,8,8] [n,32,8,8] [n,32] [n,10] [n,10]
};

template <class Space>
struct network {
  const params& w;
  fusor::index_t n;  // batch

  template <class T, class... I>
  static auto view(T* p, I... d) {
    return fusor::make_view<Space>(p, fusor::dextents<sizeof...(I)>(fusor::index_t(d)...));
  }
  auto vec(const std::string& name) const { return view(w[name], w.size.at(name)); }
  auto bn(const std::string& p) const {
    return fusor::batch_norm_params{vec(p + ".weight"), vec(p + ".bias"), vec(p + ".running_mean"),
                                    vec(p + ".running_var")};
  }
  static constexpr fusor::conv2d_params same3x3{.padding = {1, 1, 1, 1}};

  // conv3x3(1->16, pad 1) -> BN -> ReLU. The planner folds bn1 into conv1's
  // weights and bias (2 preparation kernels, first run only), then one
  // kernel: the conv with a ReLU epilogue.
  auto stem(const float* x) const {
    auto X = view(x, n, 1, kSide, kSide);
    auto W = view(w["conv1.weight"], 16, 1, 3, 3);
    return fusor::relu(fusor::batch_norm(fusor::conv2d(X, W, nullptr, same3x3), bn("bn1")));
  }
  // MobileNet-style block: depthwise 3x3 -> BN -> ReLU6 -> pointwise 1x1 ->
  // BN -> ReLU: one kernel, the depthwise conv computed inside the pointwise
  // conv's operand loads (never written to memory).
  auto mbconv(const float* a1) const {
    auto A = view(a1, n, 16, kSide, kSide);
    auto DW = view(w["dw.weight"], 16, 1, 3, 3);
    auto PW = view(w["pw.weight"], 32, 16, 1, 1);
    auto dw = fusor::batch_norm(fusor::depthwise_conv2d(A, DW, nullptr, same3x3), bn("bn2"));
    return fusor::relu(fusor::batch_norm(fusor::conv2d(fusor::clip(dw, 0.0f, 6.0f), PW), bn("bn3")));
  }
  // Global average pool over the 8x8 positions: [n, 32, 8, 8] -> [n, 32].
  auto pool(const float* a2) const { return fusor::mean<2>(view(a2, n, 32, kSide, kSide), {2, 3}, false); }
  // linear(32->64) -> GELU (erf) -> linear(64->10): the logits. Two
  // contractions: two kernels (GELU is fc1's epilogue).
  auto head(const float* pooled) const {
    auto P = view(pooled, n, 32);
    auto F1 = view(w["fc1.weight"], 64, 32);
    auto F2 = view(w["fc2.weight"], 10, 64);
    return fusor::linear(fusor::gelu(fusor::linear(P, F1, vec("fc1.bias"))), F2, vec("fc2.bias"));
  }
  auto probabilities(const float* logits) const { return fusor::softmax(view(logits, n, kClasses), 1); }

  /// Runs the whole network on batch x with executor ex; returns the kernels launched.
  template <class Ex>
  std::size_t run(const float* x, const buffers& a, const Ex& ex) const {
    std::size_t k = 0;
    k += fusor::run(view(a.a1, n, 16, kSide, kSide), stem(x), ex).kernels;
    k += fusor::run(view(a.a2, n, 32, kSide, kSide), mbconv(a.a1), ex).kernels;
    k += fusor::run(view(a.pooled, n, 32), pool(a.a2), ex).kernels;
    k += fusor::run(view(a.logits, n, kClasses), head(a.pooled), ex).kernels;
    k += fusor::run(view(a.probs, n, kClasses), probabilities(a.logits), ex).kernels;
    return k;
  }
};

/// What the CUDA backend returns: logits and probabilities of both runs
/// (copied back to the host), kernels launched and median seconds.
struct cuda_result {
  std::vector<float> fused_logits, fused_probs, unfused_logits, unfused_probs;
  std::size_t kernels_first = 0, kernels_fused = 0, kernels_unfused = 0;
  double seconds_fused = 0, seconds_unfused = 0;
};

/// Runs the network on the CUDA device (fused = fusor::cuda(), reference =
/// fusor::unfused(fusor::cuda())), `repeat` timed runs each. Defined in
/// fusor_demo_cuda.cu when the demo is built with nvcc; throws
/// no_cuda_device when no CUDA device is present.
struct no_cuda_device : std::runtime_error {
  using std::runtime_error::runtime_error;
};
cuda_result run_cuda(const params& host_weights, const float* x_host, fusor::index_t n, int repeat);
/// True when this binary has the CUDA backend.
bool cuda_backend_built();

}  // namespace demo
