// CUDA executor tests: fusor::cuda(stream) over device memory against
// fusor::host() over the same inputs. This is fusor's only nvcc test
// translation unit (keep it one: CI compiles nvcc TUs sparingly). main() is in
// test_cuda_main.cpp: it skips the whole executable (exit code 77) when no
// CUDA device is present.
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
      if (err / allowed > worst) worst = err / allowed;
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

}  // namespace

// ============================================================================

TEST_CASE("cuda: float 7-op chain with gelu/sigmoid matches host within a few ulp", "[cuda][chain]") {
  const std::size_t n = GENERATE(std::size_t(1), std::size_t(1023), std::size_t(1025), (std::size_t(1) << 20) + 3);
  CAPTURE(n);
  const inputs3<float> in(n, 11);
  const auto r = run_host_and_cuda<float>(gelu_chain, in);
  CHECK(r.device_kernels == 1);
  CHECK(r.device_launches == 1);
  CHECK(r.host_kernels == 1);
  require_close(r.device, r.host, f32_rtol, f32_atol);
}

TEST_CASE("cuda: float 7-op IEEE-exact chain matches host bit for bit", "[cuda][chain]") {
  // (1 << 23) + 5: more vector steps than the grid has threads (the launch
  // caps blocks at 32 per SM), so the grid-stride loop runs several times.
  const std::size_t n = GENERATE(std::size_t(1), std::size_t(1023), std::size_t(1025), (std::size_t(1) << 20) + 3,
                                 (std::size_t(1) << 23) + 5);
  CAPTURE(n);
  const inputs3<float> in(n, 21);
  const auto r = run_host_and_cuda<float>(exact_chain, in);
  CHECK(r.device_kernels == 1);
  require_bitwise(r.device, r.host);
}

// One chain per 16-bit type (each 16-bit kernel is 8 elements wide and costs
// several seconds of nvcc time): f16 with exact ops (bitwise), bf16 with
// transcendentals (one bf16 ulp).
TEST_CASE("cuda: f16 chain of exact ops matches host bit for bit", "[cuda][chain][f16]") {
  const std::size_t n = GENERATE(std::size_t(1), std::size_t(1023), std::size_t(1025), (std::size_t(1) << 20) + 3);
  CAPTURE(n);
  const inputs3<__half> in(n, 31);
  const auto r = run_host_and_cuda<__half>(exact_chain16, in);
  CHECK(r.device_kernels == 1);
  require_bitwise(r.device, r.host);
}

TEST_CASE("cuda: bf16 chain with silu/tanh matches host within one bf16 ulp", "[cuda][chain][bf16]") {
  const std::size_t n = GENERATE(std::size_t(1), std::size_t(1023), std::size_t(1025), (std::size_t(1) << 20) + 3);
  CAPTURE(n);
  const inputs3<__nv_bfloat16> in(n, 32);
  const auto r = run_host_and_cuda<__nv_bfloat16>(transcendental_chain16, in);
  CHECK(r.device_kernels == 1);
  require_close(r.device, r.host, rtol_of<__nv_bfloat16>, f32_atol);
}

TEST_CASE("cuda: broadcasting a row vector and a column over a matrix", "[cuda][broadcast]") {
  const std::size_t rows = 37, cols = 1029;
  const auto m = random_vector<float>(rows * cols, 41);
  const auto row = random_vector<float>(cols, 42);  // shape [cols]: broadcast over rows
  const auto col = random_vector<float>(rows, 43);  // shape [rows, 1]: broadcast over columns
  const auto make = [](const auto& m_, const auto& row_, const auto& col_) { return fusor::relu(m_ * col_ + row_); };

  std::vector<float> host(rows * cols, -1.0f);
  const auto hr = fusor::run(fusor::host_view(host.data(), rows, cols),
                             make(fusor::host_view(m.data(), rows, cols), fusor::host_view(row.data(), cols),
                                  fusor::host_view(col.data(), rows, 1)),
                             fusor::host());
  CHECK(hr.kernels == 1);
  // The host result itself, against plain loops.
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) {
      const float v = m[i * cols + j] * col[i] + row[j];
      REQUIRE(host[i * cols + j] == (v > 0 ? v : 0.0f));
    }

  stream_guard stream;
  device_buffer<float> dm(rows * cols), drow(cols), dcol(rows), dout(rows * cols);
  dm.upload(m);
  drow.upload(row);
  dcol.upload(col);
  const auto r = fusor::run(fusor::device_view(dout.ptr, rows, cols),
                            make(fusor::device_view(static_cast<const float*>(dm.ptr), rows, cols),
                                 fusor::device_view(static_cast<const float*>(drow.ptr), cols),
                                 fusor::device_view(static_cast<const float*>(dcol.ptr), rows, 1)),
                            fusor::cuda(stream.s));
  CHECK(r.kernels == 1);
  stream.sync();
  require_bitwise(dout.download(rows * cols), host);
}

TEST_CASE("cuda: strided (transposed) input and output views", "[cuda][strided]") {
  const fusor::index_t rows = 67, cols = 131;
  const std::size_t n = std::size_t(rows * cols);
  // a holds a [cols, rows] row-major matrix: viewed with strides {1, rows} it is its [rows, cols] transpose.
  const auto a = random_vector<float>(n, 51);
  const auto b = random_vector<float>(n, 52);
  const fusor::shape<2> row_major{cols, 1}, transposed{1, rows};
  const auto ext = fusor::dextents<2>(rows, cols);
  const auto make = [](const auto& at, const auto& b_) {
    const auto t = fusor::tag<x_tag>(at);
    return fusor::relu(t - b_) * t + b_;
  };
  // Plain-loop reference: element (i, j) of the transpose is a[j * rows + i].
  std::vector<float> expect(n);
  for (fusor::index_t i = 0; i < rows; ++i)
    for (fusor::index_t j = 0; j < cols; ++j) {
      const float t = a[std::size_t(j * rows + i)], v = b[std::size_t(i * cols + j)];
      const float d = t - v;
      expect[std::size_t(i * cols + j)] = (d > 0 ? d : 0.0f) * t + v;
    }

  stream_guard stream;
  device_buffer<float> da(n), db(n), dout(n);
  da.upload(a);
  db.upload(b);
  const auto dav = fusor::device_view(static_cast<const float*>(da.ptr), ext, transposed);
  const auto dbv = fusor::device_view(static_cast<const float*>(db.ptr), ext, row_major);
  const auto hav = fusor::host_view(a.data(), ext, transposed);
  const auto hbv = fusor::host_view(b.data(), ext, row_major);

  SECTION("transposed input, row-major output") {
    std::vector<float> host(n, -1.0f);
    CHECK(fusor::run(fusor::host_view(host.data(), ext, row_major), make(hav, hbv), fusor::host()).kernels == 1);
    require_bitwise(host, expect);
    CHECK(fusor::run(fusor::device_view(dout.ptr, ext, row_major), make(dav, dbv), fusor::cuda(stream.s)).kernels == 1);
    stream.sync();
    require_bitwise(dout.download(n), host);
  }
  SECTION("transposed input, transposed output") {
    std::vector<float> host(n, -1.0f);
    CHECK(fusor::run(fusor::host_view(host.data(), ext, transposed), make(hav, hbv), fusor::host()).kernels == 1);
    CHECK(fusor::run(fusor::device_view(dout.ptr, ext, transposed), make(dav, dbv), fusor::cuda(stream.s)).kernels == 1);
    stream.sync();
    const auto device = dout.download(n);
    require_bitwise(device, host);
    // Output element (i, j) lives at j * rows + i.
    for (fusor::index_t i = 0; i < rows; ++i)
      for (fusor::index_t j = 0; j < cols; ++j)
        REQUIRE(device[std::size_t(j * rows + i)] == expect[std::size_t(i * cols + j)]);
  }
}

TEST_CASE("cuda: misaligned pointers take the scalar path and match host bit for bit", "[cuda][misaligned]") {
  const std::size_t n = GENERATE(std::size_t(1023), std::size_t(1025), (std::size_t(1) << 20) + 3);
  CAPTURE(n);
  const inputs3<float> in(n, 61);
  // cudaMalloc returns 256-byte aligned memory: offsets of 1-3 floats break the
  // 16-byte alignment the vectorized path needs (and mix alignments).
  const offsets off{1, 2, 3, 1};
  {
    // The precondition, checked on the same views the run uses: the kernel
    // fusor builds for them does not take the vectorized path.
    device_buffer<float> buf(n, 4);
    const auto v = [&](std::size_t o) { return fusor::device_view(static_cast<const float*>(buf.ptr + o), n); };
    const auto k = fusor::exec::make_elementwise_kernel<1>(fusor::shape<1>{fusor::index_t(n)},
                                                           std::make_tuple(fusor::device_view(buf.ptr + off.out, n)),
                                                           exact_chain(v(off.x), v(off.y), v(off.z)));
    CHECK(k.path == fusor::kernels::access::contiguous);
  }
  const auto r = run_host_and_cuda<float>(exact_chain, in, off);
  CHECK(r.device_kernels == 1);
  require_bitwise(r.device, r.host);
  // And the aligned run gives the same bits.
  require_bitwise(run_host_and_cuda<float>(exact_chain, in).device, r.device);
}

TEST_CASE("cuda: sibling expressions run as one two-output kernel", "[cuda][siblings]") {
  const std::size_t n = GENERATE(std::size_t(1), std::size_t(1025), (std::size_t(1) << 20) + 3);
  CAPTURE(n);
  const inputs3<float> in(n, 71);
  const auto make = [](const auto& x, const auto& z) {
    const auto xt = fusor::tag<x_tag>(x);
    return fusor::siblings(fusor::silu(xt), fusor::sigmoid(xt) * z);
  };
  std::vector<float> h1(n, -1.0f), h2(n, -1.0f);
  const auto hr = fusor::run(fusor::outputs(fusor::host_view(h1.data(), n), fusor::host_view(h2.data(), n)),
                             make(fusor::host_view(in.x.data(), n), fusor::host_view(in.z.data(), n)), fusor::host());
  CHECK(hr.kernels == 1);

  stream_guard stream;
  device_buffer<float> dx(n), dz(n), d1(n), d2(n);
  dx.upload(in.x);
  dz.upload(in.z);
  const auto ex = fusor::cuda(stream.s);
  const auto r = fusor::run(fusor::outputs(fusor::device_view(d1.ptr, n), fusor::device_view(d2.ptr, n)),
                            make(fusor::device_view(static_cast<const float*>(dx.ptr), n),
                                 fusor::device_view(static_cast<const float*>(dz.ptr), n)),
                            ex);
  CHECK(r.kernels == 1);
  CHECK(ex.launches == 1);
  stream.sync();
  require_close(d1.download(n), h1, f32_rtol, f32_atol);
  require_close(d2.download(n), h2, f32_rtol, f32_atol);
}

TEST_CASE("cuda: unfused(cuda(stream)) launches one kernel per op, bitwise equal to the fused run",
          "[cuda][unfused]") {
  const std::size_t n = GENERATE(std::size_t(1), std::size_t(1025), (std::size_t(1) << 20) + 3);
  CAPTURE(n);
  const inputs3<float> in(n, 81);
  stream_guard stream;
  device_buffer<float> dx(n), dy(n), dz(n), fused(n), unfused(n);
  dx.upload(in.x);
  dy.upload(in.y);
  dz.upload(in.z);
  const auto x = fusor::device_view(static_cast<const float*>(dx.ptr), n);
  const auto y = fusor::device_view(static_cast<const float*>(dy.ptr), n);
  const auto z = fusor::device_view(static_cast<const float*>(dz.ptr), n);

  // add/mul/relu only: 5 ops, so 5 launches unfused (3 distinct kernels: the
  // two muls and the two adds are one instantiation each), 1 fused. Every op
  // rounds once either way, so the results are equal bit for bit.
  using E = decltype(add_mul_relu_chain(x, y, z));
  STATIC_REQUIRE(fusor::kernel_count<E> == 1);
  STATIC_REQUIRE(fusor::unfused_kernel_count<E> == 5);
  const auto fex = fusor::cuda(stream.s);
  const auto fr = fusor::run(fusor::device_view(fused.ptr, n), add_mul_relu_chain(x, y, z), fex);
  const auto uex = fusor::unfused(fusor::cuda(stream.s));
  const auto ur = fusor::run(fusor::device_view(unfused.ptr, n), add_mul_relu_chain(x, y, z), uex);
  CHECK(fr.kernels == 1);
  CHECK(fex.launches == 1);
  CHECK(ur.kernels == 5);
  CHECK(uex.launches == 5);
  stream.sync();
  const auto f = fused.download(n), u = unfused.download(n);
  require_bitwise(u, f);
  require_bitwise(f, run_host_and_cuda<float>(add_mul_relu_chain, in).host);
}

TEST_CASE("cuda: host memory given to the CUDA executor throws device_error, output untouched", "[cuda][errors]") {
  const std::size_t n = 1025;
  const inputs3<float> in(n, 91);
  stream_guard stream;
  device_buffer<float> dx(n), dy(n), dz(n), dout(n);
  dx.upload(in.x);
  dy.upload(in.y);
  dz.upload(in.z);
  dout.fill_bytes(0x7f);
  const auto sentinel = dout.download(n);
  const auto x = fusor::device_view(static_cast<const float*>(dx.ptr), n);
  const auto y = fusor::device_view(static_cast<const float*>(dy.ptr), n);
  const auto z = fusor::device_view(static_cast<const float*>(dz.ptr), n);

  SECTION("an input in host memory (std::vector data)") {
    const auto host_y = fusor::device_view(in.y.data(), n);  // a lie: this is pageable host memory
    const auto ex = fusor::cuda(stream.s);
    CHECK_THROWS_AS(fusor::run(fusor::device_view(dout.ptr, n), exact_chain(x, host_y, z), ex), fusor::device_error);
    CHECK_THROWS_WITH(fusor::run(fusor::device_view(dout.ptr, n), exact_chain(x, host_y, z), ex),
                      Catch::Contains("host memory"));
    CHECK(ex.launches == 0);
    stream.sync();
    require_bitwise(dout.download(n), sentinel);
  }
  SECTION("the output in host memory") {
    std::vector<float> host_out(n, -3.0f);
    const auto before = host_out;
    const auto ex = fusor::cuda(stream.s);
    CHECK_THROWS_AS(fusor::run(fusor::device_view(host_out.data(), n), exact_chain(x, y, z), ex), fusor::device_error);
    CHECK(ex.launches == 0);
    stream.sync();
    require_bitwise(host_out, before);
  }
  SECTION("the unfused CUDA executor checks too, before any launch") {
    const auto host_x = fusor::device_view(in.x.data(), n);
    const auto uex = fusor::unfused(fusor::cuda(stream.s));
    CHECK_THROWS_AS(fusor::run(fusor::device_view(dout.ptr, n), add_mul_relu_chain(host_x, y, z), uex),
                    fusor::device_error);
    CHECK(uex.launches == 0);
    stream.sync();
    require_bitwise(dout.download(n), sentinel);
  }
}

TEST_CASE("cuda: a failed temporary allocation is an allocation_error; every output untouched", "[cuda][errors]") {
  // Issue 24: run() rehearses the plan (every cudaMallocAsync first), so the
  // n-th allocation failing (injected: fusor::testing::fail_allocation)
  // leaves both sibling outputs as they were, for every n.
  const std::size_t rows = 64, cols = 48, n = rows * cols;
  const inputs3<float> in(n, 17);
  stream_guard stream;
  device_buffer<float> dx(n), dy(n), da(n), db(rows);
  dx.upload(in.x);
  dy.upload(in.y);
  const auto x = fusor::device_view(static_cast<const float*>(dx.ptr), rows, cols);
  const auto y = fusor::device_view(static_cast<const float*>(dy.ptr), rows, cols);
  const auto e1 = fusor::relu(fusor::materialize(fusor::softmax(x, 1)) + y);
  const auto e2 = fusor::sum<1>(fusor::materialize(fusor::exp(x)) * y, {1}, false);
  const auto ex = fusor::cuda(stream.s);
  int failed = 0;
  for (long k = 1; k < 64; ++k) {
    da.fill_bytes(0x7f);
    db.fill_bytes(0x7f);
    const auto sa = da.download(n), sb = db.download(rows);
    fusor::testing::fail_allocation(k);
    bool threw = false;
    try {
      fusor::run(fusor::outputs(fusor::device_view(da.ptr, rows, cols), fusor::device_view(db.ptr, rows)),
                 fusor::siblings(e1, e2), ex);
    } catch (const fusor::allocation_error& e) {
      threw = true;
      CHECK_THAT(e.what(), Catch::Contains("bytes of device memory"));
    }
    fusor::testing::fail_allocation(0);
    stream.sync();
    if (!threw) break;
    ++failed;
    require_bitwise(da.download(n), sa);
    require_bitwise(db.download(rows), sb);
  }
  CHECK(failed >= 2);
}

TEST_CASE("cuda: device memory given to the host executor throws device_error; managed and pinned memory run",
          "[cuda][errors]") {
  const std::size_t n = 257;
  const inputs3<float> in(n, 93);
  device_buffer<float> dx(n);
  dx.upload(in.x);
  std::vector<float> out(n, -3.0f);
  const auto before = out;
  const auto y = fusor::host_view(static_cast<const float*>(in.y.data()), n);
  const auto z = fusor::host_view(static_cast<const float*>(in.z.data()), n);

  SECTION("an input in device memory") {
    const auto dev_x = fusor::host_view(static_cast<const float*>(dx.ptr), n);  // a lie: cudaMalloc'd memory
    const auto ex = fusor::host();
    CHECK_THROWS_AS(fusor::run(fusor::host_view(out.data(), n), exact_chain(dev_x, y, z), ex), fusor::device_error);
    CHECK_THROWS_WITH(fusor::run(fusor::host_view(out.data(), n), exact_chain(dev_x, y, z), ex),
                      Catch::Contains("input") && Catch::Contains("is CUDA device memory"));
    CHECK(ex.launches == 0);
    require_bitwise(out, before);
  }
  SECTION("the output in device memory, also with unfused()") {
    device_buffer<float> dout(n);
    dout.fill_bytes(0x7f);
    const auto sentinel = dout.download(n);
    const auto x = fusor::host_view(static_cast<const float*>(in.x.data()), n);
    CHECK_THROWS_WITH(fusor::run(fusor::host_view(dout.ptr, n), exact_chain(x, y, z), fusor::host()),
                      Catch::Contains("output 0") && Catch::Contains("is CUDA device memory"));
    CHECK_THROWS_AS(fusor::run(fusor::host_view(dout.ptr, n), exact_chain(x, y, z), fusor::unfused()),
                    fusor::device_error);
    require_bitwise(dout.download(n), sentinel);
  }
  SECTION("managed and pinned memory are host-readable: no error") {
    float* managed = nullptr;
    float* pinned = nullptr;
    CUDA_OK(cudaMallocManaged(&managed, n * sizeof(float)));
    CUDA_OK(cudaMallocHost(&pinned, n * sizeof(float)));
    CUDA_OK(cudaDeviceSynchronize());
    std::copy(in.x.begin(), in.x.end(), managed);
    std::copy(in.x.begin(), in.x.end(), pinned);
    std::vector<float> ref(n), a(n), b(n);
    const auto x = fusor::host_view(static_cast<const float*>(in.x.data()), n);
    fusor::run(fusor::host_view(ref.data(), n), exact_chain(x, y, z), fusor::host());
    fusor::run(fusor::host_view(a.data(), n), exact_chain(fusor::host_view(static_cast<const float*>(managed), n), y, z),
               fusor::host());
    fusor::run(fusor::host_view(b.data(), n), exact_chain(fusor::host_view(static_cast<const float*>(pinned), n), y, z),
               fusor::host());
    require_bitwise(a, ref);
    require_bitwise(b, ref);
    cudaFree(managed);
    cudaFreeHost(pinned);
  }
}

TEST_CASE("cuda: a failed launch throws device_error naming the kernel", "[cuda][errors]") {
  // A reliable launch failure: while a blocking stream is capturing, a
  // launch on the legacy default stream (cuda(nullptr)) fails with
  // cudaErrorStreamCaptureImplicit ("would make the legacy stream depend on
  // a capturing blocking stream", CUDA Runtime API, cudaStreamBeginCapture).
  // The error is returned by the launch itself (not sticky): the exec layer's
  // cudaGetLastError() after the launch reports it with the kernel's name.
  const std::size_t n = 1000;
  const inputs3<float> in(n, 93);
  device_buffer<float> dx(n), dy(n), dz(n), dout(n);
  dx.upload(in.x);
  dy.upload(in.y);
  dz.upload(in.z);
  dout.fill_bytes(0x7f);
  const auto sentinel = dout.download(n);
  const auto x = fusor::device_view(static_cast<const float*>(dx.ptr), n);
  const auto y = fusor::device_view(static_cast<const float*>(dy.ptr), n);
  const auto z = fusor::device_view(static_cast<const float*>(dz.ptr), n);
  cudaStream_t capturing = nullptr;
  CUDA_OK(cudaStreamCreate(&capturing));  // a blocking stream
  CUDA_OK(cudaStreamBeginCapture(capturing, cudaStreamCaptureModeRelaxed));  // relaxed: fusor's pointer queries stay legal
  std::string message;
  bool device_err = false;
  try {
    fusor::run(fusor::device_view(dout.ptr, n), fusor::relu(x + y) * z, fusor::cuda(nullptr));
  } catch (const fusor::device_error& e) {
    device_err = true;
    message = e.what();
  } catch (const std::exception& e) {
    message = e.what();
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(capturing, &graph);  // invalidated by the failed launch
  if (graph) cudaGraphDestroy(graph);
  (void)end;
  (void)cudaGetLastError();
  CUDA_OK(cudaStreamDestroy(capturing));
  INFO("message: " << message);
  CHECK(device_err);
  CHECK(message.rfind("fusor: ", 0) == 0);
  CHECK(message.find("launch of kernel fused_elementwise") != std::string::npos);
  CHECK(message.find("relu") != std::string::npos);
  CHECK(message.find("cudaErrorStreamCaptureImplicit") != std::string::npos);
  CUDA_OK(cudaDeviceSynchronize());
  require_bitwise(dout.download(n), sentinel);  // the kernel never ran
  // The device is usable afterwards.
  fusor::run(fusor::device_view(dout.ptr, n), fusor::relu(x + y) * z, fusor::cuda(nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  CHECK(dout.download(n) != sentinel);
}

// ============================================================================
// Contractions (kernels/contraction.hpp): cuda() against host() on the same
// inputs. Tolerances: both sides accumulate in fp32, but the device may
// contract a*b+c into an FMA (SIMT path) or sum the products in the tensor
// core's order (f16/bf16: WMMA), while the host twin adds k ascending without
// FMA. Each side's fp32 sum of K products errs by at most about K * eps/2 *
// S with S = sum_k |a_k b_k| (Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., eq. 3.5), so they differ by at most K * eps * S; the
// bound used is (K + 16) * FLT_EPSILON * S * 1.25 (the 1.25 covers GELU's
// slope, at most 1.13, and the epilogue's own few ulp), plus one ulp of a
// 16-bit result (its rounding may flip) and the f32 chain tolerance above.
// Convolutions use a normwise bound (S of the largest output).

namespace {

template <class T>
std::unique_ptr<device_buffer<T>> on_device(const std::vector<T>& h) {
  auto d = std::make_unique<device_buffer<T>>(h.size());
  d->upload(h);
  return d;
}

/// Row-major views over host or device pointers (the same builders serve both).
constexpr auto host_v = [](auto* p, auto... n) { return fusor::host_view(p, fusor::index_t(n)...); };
constexpr auto dev_v = [](auto* p, auto... n) { return fusor::device_view(p, fusor::index_t(n)...); };

/// |device - host| <= rtol16 * |host| + (K + 16) * eps * S * 1.25 + tiny, per
/// element, with S[i] the element's sum of |products| (see above).
template <class T>
void require_gemm_close(const std::vector<T>& device, const std::vector<T>& host, const std::vector<double>& S,
                        std::int64_t K) {
  REQUIRE(device.size() == host.size());
  REQUIRE(S.size() == host.size());
  const double rtol = (std::is_same_v<T, float> ? 0.0 : rtol_of<T>) + f32_rtol;
  std::size_t bad = 0, first = 0;
  double worst = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    const double d = as_float(device[i]), h = as_float(host[i]);
    const double allowed = rtol * std::fabs(h) + double(K + 16) * double(FLT_EPSILON) * S[i] * 1.25 + 0x1p-24 + f32_atol * 1e-3;
    const double err = std::fabs(d - h);
    const bool ok = std::isfinite(d) && std::isfinite(h) && err <= allowed;
    if (err / allowed > worst) worst = err / allowed;
    if (!ok && bad++ == 0) first = i;
  }
  const std::string what = bad == 0 ? std::string("all within tolerance")
                                    : std::to_string(bad) + " of " + std::to_string(host.size()) +
                                          " elements out of tolerance; first " + describe_at(device, host, first);
  INFO(what);
  INFO("largest error / allowed = " << worst);
  REQUIRE(bad == 0);
}

/// Normwise: |device - host| <= rtol16 * |host| + tol * max|host| everywhere.
template <class T>
void require_normwise_close(const std::vector<T>& device, const std::vector<T>& host, double tol) {
  REQUIRE(device.size() == host.size());
  double scale = 0;
  for (const auto& h : host) scale = std::max(scale, std::fabs(double(as_float(h))));
  const double rtol = (std::is_same_v<T, float> ? 0.0 : rtol_of<T>) + f32_rtol;
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    const double d = as_float(device[i]), h = as_float(host[i]);
    const bool ok = std::isfinite(d) && std::fabs(d - h) <= rtol * std::fabs(h) + tol * (scale + 1e-30) + 0x1p-24;
    if (!ok && bad++ == 0) first = i;
  }
  const std::string what = bad == 0 ? std::string("all within tolerance")
                                    : std::to_string(bad) + " of " + std::to_string(host.size()) +
                                          " elements out of tolerance; first " + describe_at(device, host, first);
  INFO(what);
  REQUIRE(bad == 0);
}

/// S[i, j] = sum_k |x[i, k]| |W[j, k]| (+ |b[j]|): linear's scale.
template <class T>
std::vector<double> linear_scale(const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>& b,
                                 std::int64_t M, std::int64_t N, std::int64_t K) {
  std::vector<double> S(std::size_t(M * N));
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double s = b.empty() ? 0.0 : std::fabs(double(as_float(b[std::size_t(j)])));
      for (std::int64_t k = 0; k < K; ++k)
        s += std::fabs(double(as_float(x[std::size_t(i * K + k)]))) * std::fabs(double(as_float(w[std::size_t(j * K + k)])));
      S[std::size_t(i * N + j)] = s;
    }
  return S;
}

struct gemm_size {
  std::int64_t M, N, K;
};

/// gelu(linear(x, W, b)) of dtype T on host() and cuda(): one kernel each.
template <class T>
void check_linear_gelu(gemm_size sz, unsigned seed) {
  const auto [M, N, K] = sz;
  CAPTURE(M, N, K);
  const auto x = random_vector<T>(std::size_t(M * K), seed), w = random_vector<T>(std::size_t(N * K), seed + 1),
             b = random_vector<T>(std::size_t(N), seed + 2);
  const auto make = [&](auto view, const T* px, const T* pw, const T* pb) {
    return fusor::gelu(fusor::linear(view(px, M, K), view(pw, N, K), view(pb, N)));
  };
  std::vector<T> host(std::size_t(M * N));
  CHECK(fusor::run(host_v(host.data(), M, N), make(host_v, x.data(), w.data(), b.data()), fusor::host()).kernels == 1);
  stream_guard stream;
  auto dx = on_device(x), dw = on_device(w), db = on_device(b);
  device_buffer<T> dy(std::size_t(M * N));
  const auto ex = fusor::cuda(stream.s);
  CHECK(fusor::run(dev_v(dy.ptr, M, N), make(dev_v, static_cast<const T*>(dx->ptr), static_cast<const T*>(dw->ptr),
                                             static_cast<const T*>(db->ptr)),
                   ex)
            .kernels == 1);
  CHECK(ex.launches == 1);
  stream.sync();
  require_gemm_close(dy.download(std::size_t(M * N)), host, linear_scale(x, w, b, M, N, K), K);
}

const gemm_size edge_sizes[] = {{1, 1, 1},     {1, 65, 63},   {63, 1, 129}, {65, 129, 1},
                                {129, 63, 65}, {64, 64, 64},  {63, 65, 129}, {130, 200, 768}};

}  // namespace

TEST_CASE("cuda: gelu(linear(x, W, b)) f32 matches host, edge sizes 1/63/65/129", "[cuda][contraction]") {
  const auto sz = GENERATE(from_range(std::begin(edge_sizes), std::end(edge_sizes)));
  check_linear_gelu<float>(sz, 101);
}

TEST_CASE("cuda: gelu(linear(x, W, b)) f16 on tensor cores matches host", "[cuda][contraction][f16]") {
  const auto sz = GENERATE(from_range(std::begin(edge_sizes), std::end(edge_sizes)));
  check_linear_gelu<__half>(sz, 111);
}

TEST_CASE("cuda: gelu(linear(x, W, b)) bf16 on tensor cores matches host", "[cuda][contraction][bf16]") {
  const auto sz = GENERATE(gemm_size{65, 129, 63}, gemm_size{129, 63, 65}, gemm_size{130, 200, 768});
  check_linear_gelu<__nv_bfloat16>(sz, 121);
}

TEST_CASE("cuda: batched matmul with a broadcast batch, f32 and f16 (row-major B)", "[cuda][contraction]") {
  const std::int64_t B = 3, M = GENERATE(1, 65), K = GENERATE(63, 129), N = 65;
  const std::int64_t Bb = GENERATE(3, 1);  // b's batch: 1 broadcasts over a's
  CAPTURE(M, K, Bb);
  auto check = [&]<class T>(T, unsigned seed) {
    const auto a = random_vector<T>(std::size_t(B * M * K), seed), b = random_vector<T>(std::size_t(Bb * K * N), seed + 1);
    const auto make = [&](auto view, const T* pa, const T* pb) { return fusor::matmul(view(pa, B, M, K), view(pb, Bb, K, N)); };
    std::vector<T> host(std::size_t(B * M * N));
    fusor::run(host_v(host.data(), B, M, N), make(host_v, a.data(), b.data()), fusor::host());
    stream_guard stream;
    auto da = on_device(a), dbm = on_device(b);
    device_buffer<T> dy(host.size());
    const auto r = fusor::run(dev_v(dy.ptr, B, M, N),
                              make(dev_v, static_cast<const T*>(da->ptr), static_cast<const T*>(dbm->ptr)), fusor::cuda(stream.s));
    CHECK(r.kernels == 1);
    stream.sync();
    std::vector<double> S(host.size());
    for (std::int64_t z = 0; z < B; ++z)
      for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (std::int64_t k = 0; k < K; ++k)
            s += std::fabs(double(as_float(a[std::size_t((z * M + i) * K + k)]))) *
                 std::fabs(double(as_float(b[std::size_t(((Bb == 1 ? 0 : z) * K + k) * N + j)])));
          S[std::size_t((z * M + i) * N + j)] = s;
        }
    require_gemm_close(dy.download(host.size()), host, S, K);
  };
  SECTION("f32") { check(float{}, 131); }
  SECTION("f16") { check(__half{}, 141); }
}

TEST_CASE("cuda: linear(layer_norm(x), W, b) matches host (last dim and [S, K])", "[cuda][contraction][layer_norm]") {
  SECTION("over the last dim") {
    const auto sz = GENERATE(gemm_size{1, 65, 63}, gemm_size{65, 63, 129}, gemm_size{129, 1, 65}, gemm_size{130, 200, 768});
    const auto [M, N, K] = sz;
    CAPTURE(M, N, K);
    const auto x = random_vector<float>(std::size_t(M * K), 151, -2.0f, 6.0f), g = random_vector<float>(std::size_t(K), 152),
               be = random_vector<float>(std::size_t(K), 153), w = random_vector<float>(std::size_t(N * K), 154),
               b = random_vector<float>(std::size_t(N), 155);
    const auto make = [&](auto view, const float* px, const float* pg, const float* pbe, const float* pw, const float* pb) {
      return fusor::linear(fusor::layer_norm(view(px, M, K), view(pg, K), view(pbe, K)), view(pw, N, K), view(pb, N));
    };
    std::vector<float> host(std::size_t(M * N));
    fusor::run(host_v(host.data(), M, N), make(host_v, x.data(), g.data(), be.data(), w.data(), b.data()), fusor::host());
    stream_guard stream;
    auto dx = on_device(x), dg = on_device(g), dbe = on_device(be), dw = on_device(w), db = on_device(b);
    device_buffer<float> dy(host.size());
    const auto r = fusor::run(dev_v(dy.ptr, M, N), make(dev_v, dx->ptr, dg->ptr, dbe->ptr, dw->ptr, db->ptr), fusor::cuda(stream.s));
    CHECK(r.kernels == 1);
    stream.sync();
    // The normalized rows (|value| <= a few) enter the scale: recompute them
    // on the host in double for S.
    std::vector<float> xn(x.size());
    for (std::int64_t i = 0; i < M; ++i) {
      double mean = 0, var = 0;
      for (std::int64_t k = 0; k < K; ++k) mean += x[std::size_t(i * K + k)];
      mean /= double(K);
      for (std::int64_t k = 0; k < K; ++k) var += (x[std::size_t(i * K + k)] - mean) * (x[std::size_t(i * K + k)] - mean);
      var /= double(K);
      for (std::int64_t k = 0; k < K; ++k)
        xn[std::size_t(i * K + k)] = float((x[std::size_t(i * K + k)] - mean) / std::sqrt(var + 1e-5) * g[std::size_t(k)] + be[std::size_t(k)]);
    }
    require_gemm_close(dy.download(host.size()), host, linear_scale(xn, w, b, M, N, K), K + 64);
  }
  SECTION("over [S, K] (axis -2): rows of one sequence share their statistics") {
    const std::int64_t B = 3, Sq = 37, K = 65, N = 63;
    const auto x = random_vector<float>(std::size_t(B * Sq * K), 161), g = random_vector<float>(std::size_t(Sq * K), 162),
               be = random_vector<float>(std::size_t(Sq * K), 163), w = random_vector<float>(std::size_t(N * K), 164);
    const auto make = [&](auto view, const float* px, const float* pg, const float* pbe, const float* pw) {
      return fusor::linear(fusor::layer_norm(view(px, B, Sq, K), view(pg, Sq, K), view(pbe, Sq, K), -2), view(pw, N, K));
    };
    std::vector<float> host(std::size_t(B * Sq * N));
    CHECK(fusor::run(host_v(host.data(), B, Sq, N), make(host_v, x.data(), g.data(), be.data(), w.data()), fusor::host()).kernels == 1);
    stream_guard stream;
    auto dx = on_device(x), dg = on_device(g), dbe = on_device(be), dw = on_device(w);
    device_buffer<float> dy(host.size());
    const auto r = fusor::run(dev_v(dy.ptr, B, Sq, N), make(dev_v, dx->ptr, dg->ptr, dbe->ptr, dw->ptr), fusor::cuda(stream.s));
    CHECK(r.kernels == 1);
    stream.sync();
    // |normalized| * |gamma| + |beta| <= ~12 for these inputs: normwise.
    require_normwise_close(dy.download(host.size()), host, double(K + 64) * double(FLT_EPSILON) * 4);
  }
}

TEST_CASE("cuda: relu(batch_norm(conv2d(x, w, b))) f32 matches host; BN folded once", "[cuda][contraction][conv]") {
  struct conv_case {
    std::int64_t n, c, h, w, cout, stride;
  };
  const auto cc = GENERATE(conv_case{2, 5, 9, 9, 7, 1}, conv_case{2, 5, 9, 9, 7, 2}, conv_case{1, 16, 33, 33, 65, 1},
                           conv_case{1, 3, 1, 1, 1, 1});
  CAPTURE(cc.n, cc.c, cc.h, cc.w, cc.cout, cc.stride);
  const std::int64_t ho = (cc.h + 2 - 3) / cc.stride + 1, wo = (cc.w + 2 - 3) / cc.stride + 1;
  const auto x = random_vector<float>(std::size_t(cc.n * cc.c * cc.h * cc.w), 171),
             w = random_vector<float>(std::size_t(cc.cout * cc.c * 9), 172), b = random_vector<float>(std::size_t(cc.cout), 173),
             gamma = random_vector<float>(std::size_t(cc.cout), 174), beta = random_vector<float>(std::size_t(cc.cout), 175),
             mean = random_vector<float>(std::size_t(cc.cout), 176),
             var = random_vector<float>(std::size_t(cc.cout), 177, 0.5f, 2.0f);
  const fusor::conv2d_params params{.stride = {cc.stride, cc.stride}, .padding = {1, 1, 1, 1}};
  const auto make = [&](auto view, const float* px, const float* pw, const float* pb, const float* pg, const float* pbe,
                        const float* pm, const float* pv) {
    return fusor::relu(fusor::batch_norm(fusor::conv2d(view(px, cc.n, cc.c, cc.h, cc.w), view(pw, cc.cout, cc.c, 3, 3),
                                                       view(pb, cc.cout), params),
                                         fusor::batch_norm_params{view(pg, cc.cout), view(pbe, cc.cout), view(pm, cc.cout),
                                                                  view(pv, cc.cout)}));
  };
  const std::size_t count = std::size_t(cc.n * cc.cout * ho * wo);
  std::vector<float> host(count);
  CHECK(fusor::run(host_v(host.data(), cc.n, cc.cout, ho, wo),
                   make(host_v, x.data(), w.data(), b.data(), gamma.data(), beta.data(), mean.data(), var.data()), fusor::host())
            .kernels == 3);
  stream_guard stream;
  auto dx = on_device(x), dw = on_device(w), db = on_device(b), dg = on_device(gamma), dbe = on_device(beta),
       dm = on_device(mean), dv = on_device(var);
  device_buffer<float> dy(count);
  const auto ex = fusor::cuda(stream.s);
  const auto e = make(dev_v, dx->ptr, dw->ptr, db->ptr, dg->ptr, dbe->ptr, dm->ptr, dv->ptr);
  CHECK(fusor::run(dev_v(dy.ptr, cc.n, cc.cout, ho, wo), e, ex).kernels == 3);  // + folded weight and bias
  stream.sync();
  const auto first = dy.download(count);
  CHECK(fusor::run(dev_v(dy.ptr, cc.n, cc.cout, ho, wo), e, ex).kernels == 1);  // prepared weights cached
  stream.sync();
  require_bitwise(dy.download(count), first);
  require_normwise_close(first, host, double(cc.c * 9 + 16) * double(FLT_EPSILON) * 8);
}

TEST_CASE("cuda: relu(conv2d(x, w, b)) f16 on tensor cores, NCHW and NHWC", "[cuda][contraction][conv][f16]") {
  const std::int64_t n = 2, c = 8, h = 17, wd = 17, cout = GENERATE(1, 65);
  const auto layout = GENERATE(fusor::layout::nchw, fusor::layout::nhwc);
  const bool nhwc = layout == fusor::layout::nhwc;
  CAPTURE(cout, nhwc);
  const auto x = random_vector<__half>(std::size_t(n * c * h * wd), 181), w = random_vector<__half>(std::size_t(cout * c * 9), 182),
             b = random_vector<__half>(std::size_t(cout), 183);
  const fusor::conv2d_params params{.padding = {1, 1, 1, 1}, .layout = layout};
  const auto make = [&](auto view, const __half* px, const __half* pw, const __half* pb) {
    const auto xv = nhwc ? view(px, n, h, wd, c) : view(px, n, c, h, wd);
    return fusor::relu(fusor::conv2d(xv, view(pw, cout, c, 3, 3), view(pb, cout), params));
  };
  const std::size_t count = std::size_t(n * cout * h * wd);
  std::vector<__half> host(count);
  const auto out = [&](auto view, __half* p) { return nhwc ? view(p, n, h, wd, cout) : view(p, n, cout, h, wd); };
  fusor::run(out(host_v, host.data()), make(host_v, x.data(), w.data(), b.data()), fusor::host());
  stream_guard stream;
  auto dx = on_device(x), dw = on_device(w), db = on_device(b);
  device_buffer<__half> dy(count);
  CHECK(fusor::run(out(dev_v, dy.ptr), make(dev_v, static_cast<const __half*>(dx->ptr), static_cast<const __half*>(dw->ptr),
                                            static_cast<const __half*>(db->ptr)),
                   fusor::cuda(stream.s))
            .kernels == 1);
  stream.sync();
  require_normwise_close(dy.download(count), host, double(c * 9 + 16) * double(FLT_EPSILON) * 8);
}

TEST_CASE("cuda: depthwise -> BN -> ReLU6 -> pointwise (one kernel) matches host", "[cuda][contraction][conv]") {
  const std::int64_t n = 2, c = 6, h = 11, wd = 11, cout = 5, stride = GENERATE(1, 2);
  CAPTURE(stride);
  const std::int64_t ho = (h + 2 - 3) / stride + 1, wo = (wd + 2 - 3) / stride + 1;
  const auto x = random_vector<float>(std::size_t(n * c * h * wd), 191), wdw = random_vector<float>(std::size_t(c * 9), 192),
             gamma = random_vector<float>(std::size_t(c), 193), beta = random_vector<float>(std::size_t(c), 194),
             mean = random_vector<float>(std::size_t(c), 195), var = random_vector<float>(std::size_t(c), 196, 0.5f, 2.0f),
             wpw = random_vector<float>(std::size_t(cout * c), 197), bpw = random_vector<float>(std::size_t(cout), 198);
  const auto make = [&](auto view, const float* px, const float* pd, const float* pg, const float* pbe, const float* pm,
                        const float* pv, const float* pp, const float* pb) {
    const auto dw = fusor::depthwise_conv2d(view(px, n, c, h, wd), view(pd, c, 1, 3, 3), nullptr,
                                            {.stride = {stride, stride}, .padding = {1, 1, 1, 1}});
    const auto bn = fusor::batch_norm(dw, fusor::batch_norm_params{view(pg, c), view(pbe, c), view(pm, c), view(pv, c)});
    return fusor::conv2d(fusor::clip(bn, 0.0f, 6.0f), view(pp, cout, c, 1, 1), view(pb, cout));
  };
  const std::size_t count = std::size_t(n * cout * ho * wo);
  std::vector<float> host(count);
  fusor::run(host_v(host.data(), n, cout, ho, wo),
             make(host_v, x.data(), wdw.data(), gamma.data(), beta.data(), mean.data(), var.data(), wpw.data(), bpw.data()),
             fusor::host());
  stream_guard stream;
  auto dx = on_device(x), dd = on_device(wdw), dg = on_device(gamma), dbe = on_device(beta), dm = on_device(mean),
       dv = on_device(var), dp = on_device(wpw), dbp = on_device(bpw);
  device_buffer<float> dy(count);
  const auto ex = fusor::cuda(stream.s);
  const auto e = make(dev_v, dx->ptr, dd->ptr, dg->ptr, dbe->ptr, dm->ptr, dv->ptr, dp->ptr, dbp->ptr);
  STATIC_REQUIRE(fusor::kernel_count<std::remove_cvref_t<decltype(e)>> == 1);
  CHECK(fusor::run(dev_v(dy.ptr, n, cout, ho, wo), e, ex).kernels == 3);  // + folded depthwise weight and bias
  CHECK(fusor::run(dev_v(dy.ptr, n, cout, ho, wo), e, ex).kernels == 1);
  stream.sync();
  require_normwise_close(dy.download(count), host, double(9 + c + 16) * double(FLT_EPSILON) * 16);
}

// ============================================================================
// Attention (kernels/attention.hpp): cuda() against host() on the same inputs
// (host() runs the FlashAttention-2 block's host twin). f32 operands take the
// SIMT block on the device, f16/bf16 operands the tensor-core block.
//
// Tolerances (u = 2^-24; u16 = 2^-11 for half, 2^-8 for bf16). A float64
// evaluation from the stored (rounded) inputs gives, per query row, the
// scores s_j, the weights p_j = exp(s_j - m) / l and o_d = sum_j p_j v_jd,
// and bounds each executor's fp32 error to first order as
// tests/host/test_attention.cpp does:
//   E_d = 2 eps pv_d + (2 Sk + 4 tiles + 8) u pv_d + 2u |o_d|,  pv_d = sum_j p_j |v_jd|,
//   eps = max_j [(D + 2) u scale sum_d |q_d k_jd| + u (3 |s_j| + |mask_j| + |s_j - m|) + 4u]
// (the D-term dot product, Higham eq. 3.5; the scale multiply, mask add and
// subtraction s_j - m; exp, <= 2 ulp in CUDA's libdevice and in glibc: a
// relative error eps of every weight moves o_d by <= eps (pv_d + |o_d|) <=
// 2 eps pv_d; the Sk-term sums l and acc, rescaled once per 32-key tile; the
// division). FMA contraction on the device only removes roundings.
//   f32 (SIMT on both sides): |device - host| <= 2 E_d.
//   16-bit q, k, v: the tensor cores sum q . k and p . v in fp32 in their own
// order, and NVIDIA does not document the accumulator's rounding (truncation
// errs by <= 2u per addition, not u), so the device gets 2 E_d: 3 E_d in
// all. The device rounds P to the 16-bit type before P V (as FlashAttention-2;
// l sums the unrounded weights), which moves o_d by <= u16 pv_d; and each
// side rounds its fp32 output to the 16-bit type (<= u16 |o_d| each, plus
// half's subnormal spacing 2^-24): + u16 pv_d + 2 u16 |o_d| + 2^-24.
// Inputs that themselves differ between the executors (the multi-head
// block's projections, bounds eq, ek, ev per element) add, to first order,
// sum_j p_j (D_j + sum_k p_k D_k) |v_jd| + sum_j p_j ev_jd with D_j = scale
// sum_d (eq_d |k_jd| + |q_d| ek_jd + eq_d ek_jd) (each normalized weight moves
// by a factor exp(+-(D_j + mean D)); times exp(2 max D_j) for the second order).
// A row whose every key is masked is NaN on both sides.

namespace {

using i64 = std::int64_t;

struct attn_geom {
  i64 B, Hq, Hkv, Sq, Sk, D, Dv;
};

/// One attention problem in float64: q(b, h, i, d), k(b, hk, j, d),
/// v(b, hk, j, d), mask(b, h, i, j) (null: none), and bounds on the inputs'
/// differences between the executors (null: exact inputs).
struct attn_problem {
  attn_geom g;
  double scale = 0;
  bool causal = false;
  std::function<double(i64, i64, i64, i64)> q, k, v, mask, eq, ek, ev;
};

/// The reference output [B, Hq, Sq, Dv] (bhsd order; NaN: a fully masked
/// row) and the allowed |device - host| per element (see above): c_fp32 = 2
/// (f32) or 3 (tensor cores), u16 = 0 (f32 results, no P rounding) or the
/// 16-bit unit roundoff.
struct attn_reference {
  std::vector<double> val, tol;
};

attn_reference attention_bound(const attn_problem& P, double c_fp32, double u16) {
  const auto& g = P.g;
  const double u = 0x1p-24;
  const i64 tiles = (g.Sk + 31) / 32;
  attn_reference r{std::vector<double>(std::size_t(g.B * g.Hq * g.Sq * g.Dv)), {}};
  r.tol.resize(r.val.size());
  std::vector<double> s(std::size_t(g.Sk)), sabs(std::size_t(g.Sk)), p(std::size_t(g.Sk)), din(std::size_t(g.Sk));
  for (i64 b = 0; b < g.B; ++b)
    for (i64 h = 0; h < g.Hq; ++h) {
      const i64 hk = h / (g.Hq / g.Hkv);
      for (i64 i = 0; i < g.Sq; ++i) {
        double m = -INFINITY, eps = 0;  // eps: max_j eps_j (see above)
        for (i64 j = 0; j < g.Sk; ++j) {
          double dot = 0, dabs = 0, dd = 0;
          for (i64 c = 0; c < g.D; ++c) {
            const double x = P.q(b, h, i, c), y = P.k(b, hk, j, c);
            dot += x * y;
            dabs += std::fabs(x * y);
            if (P.eq) {
              const double ex = P.eq(b, h, i, c), ey = P.ek(b, hk, j, c);
              dd += ex * std::fabs(y) + std::fabs(x) * ey + ex * ey;
            }
          }
          const double mk = P.mask ? P.mask(b, h, i, j) : 0.0;
          double sj = dot * P.scale + mk;
          if (P.causal && j > i) sj = -INFINITY;
          s[std::size_t(j)] = sj;
          sabs[std::size_t(j)] = std::fabs(P.scale) * dabs;
          din[std::size_t(j)] = std::fabs(P.scale) * dd;
          m = std::max(m, sj);
        }
        double l = 0, dmax = 0;
        for (i64 j = 0; j < g.Sk; ++j) {
          const double sj = s[std::size_t(j)];
          p[std::size_t(j)] = sj == -INFINITY ? 0.0 : std::exp(sj - m);
          l += p[std::size_t(j)];
          if (sj != -INFINITY) {
            const double mk = P.mask ? std::fabs(P.mask(b, h, i, j)) : 0.0;
            eps = std::max(eps, (double(g.D) + 2) * u * sabs[std::size_t(j)] + u * (3 * std::fabs(sj) + mk + std::fabs(sj - m)) + 4 * u);
            dmax = std::max(dmax, din[std::size_t(j)]);
          }
        }
        double dmean = 0;
        if (l > 0)
          for (i64 j = 0; j < g.Sk; ++j) dmean += p[std::size_t(j)] / l * din[std::size_t(j)];
        for (i64 c = 0; c < g.Dv; ++c) {
          const std::size_t at = std::size_t(((b * g.Hq + h) * g.Sq + i) * g.Dv + c);
          if (g.Sk > 0 && l == 0) {  // every key masked: 0 / 0
            r.val[at] = std::nan("");
            continue;
          }
          double o = 0, pv = 0, in = 0;
          for (i64 j = 0; j < g.Sk; ++j) {
            const double pj = p[std::size_t(j)] / l, vj = P.v(b, hk, j, c);
            o += pj * vj;
            pv += pj * std::fabs(vj);
            if (P.ev) in += pj * ((din[std::size_t(j)] + dmean) * std::fabs(vj) + P.ev(b, hk, j, c));
          }
          r.val[at] = o;
          r.tol[at] = c_fp32 * (2 * eps * pv + (2 * double(g.Sk) + 4 * double(tiles) + 8) * u * pv + 2 * u * std::fabs(o)) +
                      in * std::exp(2 * dmax) + u16 * pv + 2 * u16 * std::fabs(o) + (u16 > 0 ? 0x1p-24 : 0.0);
        }
      }
    }
  return r;
}

/// |device - host| <= ref.tol elementwise; NaN exactly where ref.val is NaN.
template <class T>
void require_attention_close(const std::vector<T>& device, const std::vector<T>& host, const attn_reference& ref) {
  REQUIRE(device.size() == host.size());
  REQUIRE(ref.val.size() == host.size());
  std::size_t bad = 0, first = 0, nans = 0;
  double worst = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    const double d = as_float(device[i]), h = as_float(host[i]);
    bool ok;
    if (std::isnan(ref.val[i])) {
      ok = std::isnan(d) && std::isnan(h);
      ++nans;
    } else {
      const double err = std::fabs(d - h);
      ok = std::isfinite(d) && std::isfinite(h) && err <= ref.tol[i];
      if (ref.tol[i] > 0) worst = std::max(worst, err / ref.tol[i]);
    }
    if (!ok && bad++ == 0) first = i;
  }
  const std::string what = bad == 0 ? std::string("all within tolerance")
                                    : std::to_string(bad) + " of " + std::to_string(host.size()) +
                                          " elements out of tolerance; first " + describe_at(device, host, first) +
                                          ", allowed " + std::to_string(ref.tol[first]);
  INFO(what);
  INFO("largest error / allowed = " << worst << "; " << nans << " elements of fully masked rows (NaN)");
  REQUIRE(bad == 0);
}

/// scaled_dot_product_attention over bhsd operands of dtype T (K/V with Hkv
/// heads: grouped-query when Hkv < Hq), optionally with an additive f32 mask
/// [B, 1, Sq, Sk] (random bias, -inf on the keys j with (7 j + i) % 5 == 1,
/// and batch 0's query row 2 masked everywhere: NaN), on host() and cuda().
template <class T, bool Masked>
void check_attention(attn_geom g, bool causal, unsigned seed) {
  CAPTURE(g.B, g.Hq, g.Hkv, g.Sq, g.Sk, g.D, g.Dv, causal, Masked);
  const auto q = random_vector<T>(std::size_t(g.B * g.Hq * g.Sq * g.D), seed),
             k = random_vector<T>(std::size_t(g.B * g.Hkv * g.Sk * g.D), seed + 1),
             v = random_vector<T>(std::size_t(g.B * g.Hkv * g.Sk * g.Dv), seed + 2);
  std::vector<float> mask;
  if (Masked) {
    mask = random_vector<float>(std::size_t(g.B * g.Sq * g.Sk), seed + 3, -1.0f, 1.0f);
    for (i64 b = 0; b < g.B; ++b)
      for (i64 i = 0; i < g.Sq; ++i)
        for (i64 j = 0; j < g.Sk; ++j)
          if ((7 * j + i) % 5 == 1 || (b == 0 && i == 2)) mask[std::size_t((b * g.Sq + i) * g.Sk + j)] = -INFINITY;
  }
  fusor::attention_params p{};
  p.causal = causal;
  const auto make = [&](auto view, const T* pq, const T* pk, const T* pv, const float* pm) {
    const auto Q = view(pq, g.B, g.Hq, g.Sq, g.D), K = view(pk, g.B, g.Hkv, g.Sk, g.D), V = view(pv, g.B, g.Hkv, g.Sk, g.Dv);
    if constexpr (Masked) return fusor::scaled_dot_product_attention(Q, K, V, p, view(pm, g.B, 1, g.Sq, g.Sk));
    else return fusor::scaled_dot_product_attention(Q, K, V, p);
  };
  const std::size_t count = std::size_t(g.B * g.Hq * g.Sq * g.Dv);
  std::vector<T> host(count, fusor::from_compute<T>(-777.0f));
  CHECK(fusor::run(host_v(host.data(), g.B, g.Hq, g.Sq, g.Dv), make(host_v, q.data(), k.data(), v.data(), mask.data()),
                   fusor::host())
            .kernels == 1);
  stream_guard stream;
  auto dq = on_device(q), dk = on_device(k), dv = on_device(v);
  auto dm = on_device(Masked ? mask : std::vector<float>(1));
  device_buffer<T> dout(count);
  const auto ex = fusor::cuda(stream.s);
  CHECK(fusor::run(dev_v(dout.ptr, g.B, g.Hq, g.Sq, g.Dv),
                   make(dev_v, static_cast<const T*>(dq->ptr), static_cast<const T*>(dk->ptr),
                        static_cast<const T*>(dv->ptr), static_cast<const float*>(dm->ptr)),
                   ex)
            .kernels == 1);
  CHECK(ex.launches == 1);
  stream.sync();

  attn_problem P{g, 1.0 / std::sqrt(double(g.D)), causal, {}, {}, {}, {}, {}, {}, {}};
  P.q = [&](i64 b, i64 h, i64 i, i64 d) { return double(as_float(q[std::size_t(((b * g.Hq + h) * g.Sq + i) * g.D + d)])); };
  P.k = [&](i64 b, i64 h, i64 j, i64 d) { return double(as_float(k[std::size_t(((b * g.Hkv + h) * g.Sk + j) * g.D + d)])); };
  P.v = [&](i64 b, i64 h, i64 j, i64 d) { return double(as_float(v[std::size_t(((b * g.Hkv + h) * g.Sk + j) * g.Dv + d)])); };
  if (Masked) P.mask = [&](i64 b, i64, i64 i, i64 j) { return double(mask[std::size_t((b * g.Sq + i) * g.Sk + j)]); };
  constexpr bool sixteen = !std::is_same_v<T, float>;
  const auto ref = attention_bound(P, sixteen ? 3.0 : 2.0, sixteen ? rtol_of<T> / 2 : 0.0);
  require_attention_close(dout.download(count), host, ref);
}

const i64 attn_lengths[] = {1, 33, 65, 129};

}  // namespace

TEST_CASE("cuda: scaled_dot_product_attention f32 (SIMT) matches host: lengths 1/33/65/129, head_dim 64/80, "
          "causal, grouped-query",
          "[cuda][attention]") {
  const i64 L = GENERATE(from_range(std::begin(attn_lengths), std::end(attn_lengths)));
  const i64 D = GENERATE(64, 80);
  const bool causal = GENERATE(false, true);
  check_attention<float, false>({2, 4, 2, L, L, D, D}, causal, unsigned(201 + L + D));
}

TEST_CASE("cuda: scaled_dot_product_attention f32 with a -inf mask (a fully masked row is NaN) and Sq != Sk",
          "[cuda][attention][mask]") {
  const bool causal = GENERATE(false, true);
  const attn_geom g = GENERATE(attn_geom{2, 4, 2, 33, 33, 64, 64}, attn_geom{2, 4, 2, 129, 129, 80, 80},
                               attn_geom{1, 2, 1, 65, 129, 64, 80}, attn_geom{1, 2, 2, 130, 33, 80, 64});
  check_attention<float, true>(g, causal, 211);
}

TEST_CASE("cuda: scaled_dot_product_attention f16 on tensor cores matches host: lengths 1/33/65/129, head_dim "
          "64/80, causal, grouped-query",
          "[cuda][attention][f16]") {
  const i64 L = GENERATE(from_range(std::begin(attn_lengths), std::end(attn_lengths)));
  const i64 D = GENERATE(64, 80);
  const bool causal = GENERATE(false, true);
  check_attention<__half, false>({2, 4, 2, L, L, D, D}, causal, unsigned(221 + L + D));
}

TEST_CASE("cuda: scaled_dot_product_attention f16 on tensor cores: -inf mask, Sq != Sk, head dims padded to 16",
          "[cuda][attention][f16][mask]") {
  const bool causal = GENERATE(false, true);
  // head_dim 40 / 24 / 8: not multiples of 16 (zero-padded in shared memory); 128: the largest.
  const attn_geom g = GENERATE(attn_geom{2, 4, 2, 33, 33, 64, 64}, attn_geom{2, 4, 2, 129, 129, 80, 80},
                               attn_geom{1, 2, 1, 70, 130, 40, 24}, attn_geom{1, 2, 2, 130, 33, 8, 128},
                               attn_geom{1, 3, 1, 64, 200, 128, 128});
  check_attention<__half, true>(g, causal, 231);
}

TEST_CASE("cuda: scaled_dot_product_attention bf16 on tensor cores matches host", "[cuda][attention][bf16]") {
  const bool causal = GENERATE(false, true);
  const attn_geom g = GENERATE(attn_geom{2, 4, 2, 33, 33, 64, 64}, attn_geom{2, 4, 1, 129, 129, 80, 80},
                               attn_geom{1, 2, 2, 65, 1, 128, 128});
  check_attention<__nv_bfloat16, false>(g, causal, 241);
}

namespace {

/// y = a W^T + b over rows of a [rows, K] (W [N, K], f16), with the bound on
/// |device - host| after both round y to f16: 3 (K + 2) u (sum |a w| + |b|)
/// (the fp32 sums; tensor cores on the device, see above) + sum_k ea_k |w|
/// (the inputs' own bound) + 2 u16 |y| + 2^-24 (the two roundings).
void linear_bound(const std::vector<double>& a, const std::vector<double>* ea, i64 rows, i64 K, const std::vector<__half>& w,
                  const std::vector<__half>& b, i64 N, std::vector<double>& val, std::vector<double>& tol) {
  const double u = 0x1p-24, u16 = 0x1p-11;
  val.assign(std::size_t(rows * N), 0.0);
  tol.assign(val.size(), 0.0);
  for (i64 r = 0; r < rows; ++r)
    for (i64 n = 0; n < N; ++n) {
      const double bn = as_float(b[std::size_t(n)]);
      double y = bn, sabs = std::fabs(bn), prop = 0;
      for (i64 kk = 0; kk < K; ++kk) {
        const double x = a[std::size_t(r * K + kk)], wv = as_float(w[std::size_t(n * K + kk)]);
        y += x * wv;
        sabs += std::fabs(x * wv);
        if (ea) prop += (*ea)[std::size_t(r * K + kk)] * std::fabs(wv);
      }
      val[std::size_t(r * N + n)] = y;
      tol[std::size_t(r * N + n)] = 3 * double(K + 2) * u * sabs + prop + 2 * u16 * std::fabs(y) + 0x1p-24;
    }
}

}  // namespace

TEST_CASE("cuda: multi_head_attention + residual, f16: 3 kernels (Q/K/V GEMM, packed flash attention, "
          "out-projection) match host",
          "[cuda][attention][mha][f16]") {
  const i64 B = 2, E = 128, H = 2, D = E / H;
  const i64 S = GENERATE(1, 65);
  const bool causal = GENERATE(false, true);
  CAPTURE(S, causal);
  const auto x = random_vector<__half>(std::size_t(B * S * E), 251, -1.0f, 1.0f);
  const auto wq = random_vector<__half>(std::size_t(E * E), 252, -0.1f, 0.1f),
             wk = random_vector<__half>(std::size_t(E * E), 253, -0.1f, 0.1f),
             wv = random_vector<__half>(std::size_t(E * E), 254, -0.1f, 0.1f),
             wo = random_vector<__half>(std::size_t(E * E), 255, -0.1f, 0.1f);
  const auto bq = random_vector<__half>(std::size_t(E), 256, -0.5f, 0.5f), bk = random_vector<__half>(std::size_t(E), 257, -0.5f, 0.5f),
             bv = random_vector<__half>(std::size_t(E), 258, -0.5f, 0.5f), bo = random_vector<__half>(std::size_t(E), 259, -0.5f, 0.5f);
  fusor::attention_params p{};
  p.causal = causal;
  p.heads = int(H);
  const auto make = [&](auto view, const auto&... ptr) {
    const __half* px[] = {ptr...};  // x, wq, wk, wv, wo, bq, bk, bv, bo
    const auto X = view(px[0], B, S, E);
    const auto w = fusor::attention_weights{view(px[1], E, E), view(px[2], E, E), view(px[3], E, E), view(px[4], E, E),
                                            view(px[5], E),    view(px[6], E),    view(px[7], E),    view(px[8], E)};
    return X + fusor::multi_head_attention(X, w, p);
  };
  const std::size_t count = std::size_t(B * S * E);
  std::vector<__half> host(count);
  const auto he = make(host_v, x.data(), wq.data(), wk.data(), wv.data(), wo.data(), bq.data(), bk.data(), bv.data(), bo.data());
  STATIC_REQUIRE(fusor::kernel_count<std::remove_cvref_t<decltype(he)>> == 3);
  CHECK(fusor::run(host_v(host.data(), B, S, E), he, fusor::host()).kernels == 3);
  stream_guard stream;
  auto dx = on_device(x), dwq = on_device(wq), dwk = on_device(wk), dwv = on_device(wv), dwo = on_device(wo),
       dbq = on_device(bq), dbk = on_device(bk), dbv = on_device(bv), dbo = on_device(bo);
  const auto c = [](const auto& buf) { return static_cast<const __half*>(buf->ptr); };
  device_buffer<__half> dy(count);
  const auto ex = fusor::cuda(stream.s);
  CHECK(fusor::run(dev_v(dy.ptr, B, S, E),
                   make(dev_v, c(dx), c(dwq), c(dwk), c(dwv), c(dwo), c(dbq), c(dbk), c(dbv), c(dbo)), ex)
            .kernels == 3);
  stream.sync();

  // The bound, propagated stage by stage (file comment of this section):
  // projections (f16), attention over them (tensor cores, inputs within the
  // projections' bounds), out-projection (rounded to f16), + x (rounded again).
  std::vector<double> xd(count);
  for (std::size_t i = 0; i < count; ++i) xd[i] = as_float(x[i]);
  std::vector<double> q, qt, k, kt, v, vt;
  linear_bound(xd, nullptr, B * S, E, wq, bq, E, q, qt);
  linear_bound(xd, nullptr, B * S, E, wk, bk, E, k, kt);
  linear_bound(xd, nullptr, B * S, E, wv, bv, E, v, vt);
  // Packed [B, S, H * D]: element (b, h, s, d) at (b S + s) E + h D + d.
  const auto at = [&](const std::vector<double>& t) {
    return [&t, S, E, D](i64 b, i64 h, i64 s, i64 d) { return t[std::size_t((b * S + s) * E + h * D + d)]; };
  };
  attn_problem P{{B, H, H, S, S, D, D}, 1.0 / std::sqrt(double(D)), causal, at(q), at(k), at(v), {}, at(qt), at(kt), at(vt)};
  const auto ra = attention_bound(P, 3.0, 0x1p-11);
  std::vector<double> a(count), at_(count);
  for (i64 b = 0; b < B; ++b)
    for (i64 h = 0; h < H; ++h)
      for (i64 s = 0; s < S; ++s)
        for (i64 d = 0; d < D; ++d) {
          a[std::size_t((b * S + s) * E + h * D + d)] = ra.val[std::size_t(((b * H + h) * S + s) * D + d)];
          at_[std::size_t((b * S + s) * E + h * D + d)] = ra.tol[std::size_t(((b * H + h) * S + s) * D + d)];
        }
  attn_reference ry;
  linear_bound(a, &at_, B * S, E, wo, bo, E, ry.val, ry.tol);
  for (std::size_t i = 0; i < count; ++i) {
    ry.val[i] += xd[i];
    ry.tol[i] += 2 * 0x1p-11 * std::fabs(ry.val[i]) + 0x1p-24;
  }
  require_attention_close(dy.download(count), host, ry);
}

// ------------------------------------------------------------- reductions
// The row-reduction family on the GPU against the host twin. Device and
// host merge the 256 lane partials in different orders (cub::BlockReduce's
// warp-shuffle tree vs a pairwise tree), so they agree to rounding: sums
// within 1e-5 relative to sum|x| (test_reductions.cpp's bound), normalized
// elements within 1e-5 relative + 1e-6 absolute; NaN positions equal.

TEST_CASE("cuda: softmax, log_softmax, layer_norm + residual, rms_norm match host; row lengths 1..4097",
          "[cuda][reduction]") {
  const std::int64_t rows = GENERATE(1, 7, 300), cols = GENERATE(1, 33, 1025, 4097);
  CAPTURE(rows, cols);
  auto x = random_vector<float>(std::size_t(rows * cols), unsigned(rows * 7 + cols), -6.0f, 6.0f);
  if (rows > 1) {
    for (std::int64_t j = 0; j < cols; ++j) x[std::size_t(cols + j)] = -INFINITY;  // an all -inf row: NaN
    x[0] = NAN;
  }
  const auto g = random_vector<float>(std::size_t(cols), 3), b = random_vector<float>(std::size_t(cols), 4),
             res = random_vector<float>(std::size_t(rows * cols), 5);
  auto dx = on_device(x), dg = on_device(g), db = on_device(b), dr = on_device(res);
  stream_guard stream;
  device_buffer<float> dy(x.size());
  std::vector<float> host(x.size());
  const auto check = [&](auto make, std::size_t kernels) {
    fusor::run(host_v(host.data(), rows, cols), make(host_v, x.data(), g.data(), b.data(), res.data()), fusor::host());
    const auto r = fusor::run(dev_v(dy.ptr, rows, cols), make(dev_v, dx->ptr, dg->ptr, db->ptr, dr->ptr), fusor::cuda(stream.s));
    CHECK(r.kernels == kernels);
    stream.sync();
    require_close(dy.download(x.size()), host, 1e-5, 1e-6, nan_match::any);
  };
  check([&](auto v, auto* px, auto*, auto*, auto*) { return fusor::softmax(v(px, rows, cols), -1); }, 1);
  check([&](auto v, auto* px, auto*, auto*, auto*) { return fusor::log_softmax(v(px, rows, cols), 1); }, 1);
  check([&](auto v, auto* px, auto* pg, auto* pb, auto* pr) {
    return fusor::layer_norm(v(px, rows, cols), v(pg, cols), v(pb, cols)) + v(pr, rows, cols);
  }, 1);
  check([&](auto v, auto* px, auto* pg, auto*, auto*) { return fusor::rms_norm(v(px, rows, cols), v(pg, cols), 1e-6f); }, 1);
  // the decomposed softmax runs the softmax kernel
  check([&](auto v, auto* px, auto*, auto*, auto*) {
    const auto xv = v(px, rows, cols);
    const auto sh = xv - fusor::max_reduce(xv, {-1});
    return fusor::exp(sh) / fusor::sum(fusor::exp(sh), {-1});
  }, 1);
}

TEST_CASE("cuda: sum/max/logsumexp over axis sets and a split long row (mse_loss) match host", "[cuda][reduction]") {
  stream_guard stream;
  SECTION("rank 3 over axes {0, 2}, keepdims") {
    const std::int64_t A = 5, B = 33, C = 257;
    const auto x = random_vector<float>(std::size_t(A * B * C), 21);
    auto dx = on_device(x);
    device_buffer<float> dy{std::size_t(B)};
    std::vector<float> host(static_cast<std::size_t>(B));
    auto make = [&](auto v, const float* p) { return fusor::sum(fusor::relu(v(p, A, B, C)) * 2.0f, {0, -1}); };
    fusor::run(host_v(host.data(), 1, B, 1), make(host_v, x.data()), fusor::host());
    CHECK(fusor::run(dev_v(dy.ptr, 1, B, 1), make(dev_v, dx->ptr), fusor::cuda(stream.s)).kernels == 1);
    stream.sync();
    require_close(dy.download(std::size_t(B)), host, 1e-5, 1e-4, nan_match::any);
  }
  SECTION("mse_loss over 2^22 + 5 elements: split into chunks + a finalize") {
    const std::int64_t n = (std::int64_t(1) << 22) + 5;
    const auto a = random_vector<float>(std::size_t(n), 31), b = random_vector<float>(std::size_t(n), 32);
    auto da = on_device(a), db = on_device(b);
    device_buffer<float> dy(1);
    float host = 0;
    fusor::run(fusor::host_view(&host, fusor::extents<>{}), fusor::mse_loss(host_v(a.data(), n), host_v(b.data(), n)),
               fusor::host());
    const auto r = fusor::run(fusor::device_view(dy.ptr, fusor::extents<>{}),
                              fusor::mse_loss(dev_v(da->ptr, n), dev_v(db->ptr, n)), fusor::cuda(stream.s));
    CHECK(r.kernels == 2);
    stream.sync();
    require_close(dy.download(1), {host}, 1e-5, 0, nan_match::any);
  }
}
