#pragma once
// CUDA executor tests: fusor::cuda(stream) over device memory against
// fusor::host() over the same inputs, one nvcc translation unit per kernel
// family (test_cuda_<family>.cu, each well under 1.5 GB and 60 s of nvcc:
// issue 16) sharing these helpers. main() is in test_cuda_main.cpp: it skips
// the whole executable (exit code 77) when no CUDA device is present.
//
// Tolerances
// ----------
// Both executors run the same FUSOR_HOST_DEVICE kernel body. add/sub/mul/div
// are IEEE round-to-nearest on both sides (__f*_rn intrinsics on the device,
// which nvcc never contracts into FMAs; no contraction on the host, which is
// built with -ffp-contract=off) and relu/max/min/abs/neg are exact, so chains
// of only those ops must agree BIT FOR BIT (require_bitwise), in float and in
// 16-bit types (computed in fp32, rounded once on store by the same
// round-to-nearest-even conversion on both sides).
//
// Transcendentals come from different libraries: CUDA's libdevice on the
// device (maximum error expf 2 ulp, erff 2 ulp, tanhf 2 ulp: CUDA C++
// Programming Guide, appendix "Mathematical Functions", single precision)
// and glibc's libm on the host (a few ulp at most, glibc manual "Known Maximum
// Errors in Math Functions"). sigmoid = 1/(1+exp(-x)) and
// gelu = 0.5x(1+erf(x/sqrt2)) therefore differ by a few ulp of their value,
// and a later subtraction (gelu(a) - sigmoid(x)) can cancel, so an error
// relative to the *result* is not bounded near zero. The bound used is
//     |device - host| <= rtol * |host| + atol
// with, for fp32 results, rtol = 8 ulp (8 * FLT_EPSILON) and atol = 8 ulp at
// the chain's largest intermediate magnitude (inputs are in [-2, 2], so
// |gelu(2x + y)| <= 6 and |result| <= 12: atol = 8 * FLT_EPSILON * 16). For
// 16-bit results the fp32 values above are then rounded to the 16-bit type,
// which can turn any tiny difference into one unit of the 16-bit type:
// rtol = 2^-10 (f16) or 2^-7 (bf16), i.e. one 16-bit ulp, plus the same atol.
#include <catch2/catch.hpp>
#include <fusor/fusor.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

// ------------------------------------------------------------------ helpers

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) FAIL(what << ": " << cudaGetErrorName(e) << ": " << cudaGetErrorString(e));
}
#define CUDA_OK(call) cuda_ok((call), #call)

struct stream_guard {
  cudaStream_t s = nullptr;
  stream_guard() { CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~stream_guard() { cudaStreamDestroy(s); }
  stream_guard(const stream_guard&) = delete;
  stream_guard& operator=(const stream_guard&) = delete;
  void sync() const { CUDA_OK(cudaStreamSynchronize(s)); }
};

/// cudaMalloc'd array of n elements of T (plus `pad` extra elements, so that
/// data + offset stays in bounds for misaligned views).
template <class T>
struct device_buffer {
  T* ptr = nullptr;
  std::size_t n = 0;
  explicit device_buffer(std::size_t count, std::size_t pad = 0) : n(count + pad) {
    CUDA_OK(cudaMalloc(&ptr, (n > 0 ? n : 1) * sizeof(T)));
  }
  ~device_buffer() { cudaFree(ptr); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  void upload(const std::vector<T>& h, std::size_t offset = 0) {
    REQUIRE(offset + h.size() <= n);
    CUDA_OK(cudaMemcpy(ptr + offset, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download(std::size_t count, std::size_t offset = 0) const {
    std::vector<T> h(count);
    CUDA_OK(cudaMemcpy(h.data(), ptr + offset, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  /// Fills the whole allocation with byte pattern `byte` (a sentinel).
  void fill_bytes(int byte) { CUDA_OK(cudaMemset(ptr, byte, (n > 0 ? n : 1) * sizeof(T))); }
};

template <class T>
float as_float(T v) {
  return float(fusor::to_compute(v));
}
/// The value in double without first rounding to float (f64 results).
template <class T>
double as_double(T v) {
  return double(fusor::to_compute(v));
}

/// n values uniform in [lo, hi], rounded to T; deterministic per seed.
template <class T>
std::vector<T> random_vector(std::size_t n, unsigned seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& e : v) e = fusor::from_compute<T>(dist(gen));
  return v;
}

template <class T>
std::string describe_at(const std::vector<T>& device, const std::vector<T>& host, std::size_t i) {
  std::ostringstream os;
  os.precision(9);
  os << "at index " << i << ": device " << as_float(device[i]) << ", host " << as_float(host[i]);
  return os.str();
}

/// device == host bit for bit.
template <class T>
void require_bitwise(const std::vector<T>& device, const std::vector<T>& host) {
  REQUIRE(device.size() == host.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    if (std::memcmp(&device[i], &host[i], sizeof(T)) != 0) {
      if (bad++ == 0) first = i;
    }
  }
  // (INFO is scoped: it must live in the REQUIRE's scope, not in an if.)
  const std::string what = bad == 0 ? std::string("all equal")
                                    : std::to_string(bad) + " of " + std::to_string(host.size()) +
                                          " elements differ; first " + describe_at(device, host, first);
  INFO(what);
  REQUIRE(bad == 0);
}

/// How NaNs compare in require_close: the same bits (elementwise kernels run
/// the host's functors), or any NaN for a NaN (reductions: which NaN of a row
/// survives the merge, and so its payload, depends on the merge order).
enum class nan_match { bitwise, any };

/// |device - host| <= rtol * |host| + atol everywhere (see the file comment);
/// infinities must match exactly, NaNs as `nans` says.
template <class T>
void require_close(const std::vector<T>& device, const std::vector<T>& host, double rtol, double atol,
                   nan_match nans = nan_match::bitwise) {
  REQUIRE(device.size() == host.size());
  std::size_t bad = 0, first = 0;
  double worst = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    const double d = as_float(device[i]), h = as_float(host[i]);
    bool ok;
    if (nans == nan_match::any && std::isnan(h)) {
      ok = std::isnan(d);
    } else if (std::isnan(h) || std::isinf(h) || std::isnan(d) || std::isinf(d)) {
      ok = std::memcmp(&device[i], &host[i], sizeof(T)) == 0;
    } else {
      const double err = std::fabs(d - h), allowed = rtol * std::fabs(h) + atol;
      ok = err <= allowed;
      if (allowed > 0 && err / allowed > worst) worst = err / allowed;
    }
    if (!ok && bad++ == 0) first = i;
  }
  const std::string what = bad == 0 ? std::string("all within tolerance")
                                    : std::to_string(bad) + " of " + std::to_string(host.size()) +
                                          " elements out of tolerance; first " + describe_at(device, host, first);
  INFO(what);
  INFO("largest error / allowed (finite elements) = " << worst);
  REQUIRE(bad == 0);
}

constexpr double f32_rtol = 8 * double(FLT_EPSILON);
constexpr double f32_atol = 8 * double(FLT_EPSILON) * 16;
template <class T>
constexpr double rtol_of = std::is_same_v<T, __half> ? 0x1p-10 : std::is_same_v<T, __nv_bfloat16> ? 0x1p-7 : f32_rtol;

// --------------------------------------------------------------- expressions
// Namespace-scope builders, so that tests reusing one get one kernel
// instantiation. Each takes views (host or device) and returns an expression.

struct x_tag;  // identity tag: x is read twice, loaded once

/// 7 ops with transcendentals: mul, add, gelu, sigmoid, sub, relu, mul.
constexpr auto gelu_chain = [](const auto& x, const auto& y, const auto& z) {
  const auto xt = fusor::tag<x_tag>(x);
  return fusor::relu(fusor::gelu(xt * 2.0f + y) - fusor::sigmoid(xt)) * z;
};
/// 7 IEEE-exact ops: mul, add, max, div, sub, relu, min.
constexpr auto exact_chain = [](const auto& x, const auto& y, const auto& z) {
  const auto xt = fusor::tag<x_tag>(x);
  return fusor::min(fusor::relu(fusor::max(xt * y + z, xt) - y / z), 3.0f);
};
/// 5 ops of add/mul/relu only: mul, add, relu, mul, add.
constexpr auto add_mul_relu_chain = [](const auto& x, const auto& y, const auto& z) {
  const auto xt = fusor::tag<x_tag>(x);
  return fusor::relu(xt * y + z) * z + xt;
};
/// 16-bit chains (computed in fp32): exact (7 ops) and transcendental (5 ops).
struct y_tag;
struct z_tag;
constexpr auto exact_chain16 = [](const auto& x, const auto& y, const auto& z) {
  const auto xt = fusor::tag<x_tag>(x);
  const auto yt = fusor::tag<y_tag>(y);
  const auto zt = fusor::tag<z_tag>(z);
  return fusor::relu(fusor::max(xt * yt + zt, xt) - yt / (fusor::abs(zt) + 1.0f));
};
constexpr auto transcendental_chain16 = [](const auto& x, const auto& y, const auto& z) {
  const auto xt = fusor::tag<x_tag>(x);
  return fusor::silu(xt * y + z) - fusor::tanh(xt);
};

template <class T>
struct inputs3 {
  std::vector<T> x, y, z;
  inputs3(std::size_t n, unsigned seed)
      : x(random_vector<T>(n, seed)), y(random_vector<T>(n, seed + 1)), z(random_vector<T>(n, seed + 2)) {}
};

/// Host and CUDA results of one expression over the same three inputs.
template <class Out>
struct results {
  std::vector<Out> host, device;
  std::size_t host_kernels = 0, device_kernels = 0, device_launches = 0;
};

/// Offsets (elements) of x, y, z and the output from their allocation start
/// on the device; non-zero offsets make pointers misaligned for 16-byte vectors.
struct offsets {
  std::size_t x = 0, y = 0, z = 0, out = 0;
};

/// Runs make(x, y, z) on host() over host vectors and on cuda(stream) over
/// device copies (at offsets `off`), into an output of type Out.
template <class Out, class T, class Make>
results<Out> run_host_and_cuda(Make make, const inputs3<T>& in, offsets off = {}) {
  const std::size_t n = in.x.size();
  results<Out> res;
  res.host.assign(n, fusor::from_compute<Out>(-777.0f));
  {
    const auto x = fusor::host_view(in.x.data(), n), y = fusor::host_view(in.y.data(), n),
               z = fusor::host_view(in.z.data(), n);
    res.host_kernels = fusor::run(fusor::host_view(res.host.data(), n), make(x, y, z), fusor::host()).kernels;
  }
  stream_guard stream;
  device_buffer<T> dx(n, off.x), dy(n, off.y), dz(n, off.z);
  device_buffer<Out> dout(n, off.out);
  dx.upload(in.x, off.x);
  dy.upload(in.y, off.y);
  dz.upload(in.z, off.z);
  const auto x = fusor::device_view(static_cast<const T*>(dx.ptr + off.x), n);
  const auto y = fusor::device_view(static_cast<const T*>(dy.ptr + off.y), n);
  const auto z = fusor::device_view(static_cast<const T*>(dz.ptr + off.z), n);
  const auto ex = fusor::cuda(stream.s);
  res.device_kernels = fusor::run(fusor::device_view(dout.ptr + off.out, n), make(x, y, z), ex).kernels;
  res.device_launches = ex.launches;
  stream.sync();
  res.device = dout.download(n, off.out);
  return res;
}

// (shared by the contraction, attention and reduction tests)
template <class T>
std::unique_ptr<device_buffer<T>> on_device(const std::vector<T>& h) {
  auto d = std::make_unique<device_buffer<T>>(h.size());
  d->upload(h);
  return d;
}

/// Row-major views over host or device pointers (the same builders serve both).
constexpr auto host_v = [](auto* p, auto... n) { return fusor::host_view(p, fusor::index_t(n)...); };
constexpr auto dev_v = [](auto* p, auto... n) { return fusor::device_view(p, fusor::index_t(n)...); };

}  // namespace

