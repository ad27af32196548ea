// The host executor refuses device memory behind a host_view
// (exec/memory_space.hpp): run here against a stand-in CUDA driver
// (fake_driver/fake_libcuda.cpp, on LD_LIBRARY_PATH), so the check is tested
// without a GPU. tests/cuda/test_cuda_*.cu checks the same against a real device.
#include <fusor/fusor.hpp>

#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace {

/// The stand-in driver's test hooks (loaded by fusor's first host run).
struct fake_driver {
  void (*set_range)(const void*, unsigned long, int) = nullptr;
  long (*queries)() = nullptr;
  fake_driver() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    REQUIRE(lib != nullptr);
    set_range = reinterpret_cast<void (*)(const void*, unsigned long, int)>(dlsym(lib, "fake_cuda_set_range"));
    queries = reinterpret_cast<long (*)()>(dlsym(lib, "fake_cuda_queries"));
    REQUIRE(set_range != nullptr);  // the stand-in, not a real driver, is loaded
    REQUIRE(queries != nullptr);
  }
};

constexpr auto chain = [](const auto& x, const auto& y) { return fusor::relu(x * y) + y; };

}  // namespace

TEST_CASE("memory space: device memory behind a host_view is a device_error naming the operand; output untouched",
          "[errors][memory_space]") {
  fake_driver drv;
  const std::size_t n = 100;
  std::vector<float> x(n, 1.5f), y(n, -2.0f), fake_device(n, 7.0f), out(n, -3.0f);
  const auto before = out;
  drv.set_range(fake_device.data(), n * sizeof(float), /*managed=*/0);
  const auto hx = fusor::host_view(static_cast<const float*>(x.data()), n);
  const auto hy = fusor::host_view(static_cast<const float*>(y.data()), n);
  const auto dev = fusor::host_view(static_cast<const float*>(fake_device.data()), n);

  SECTION("an input, fused and unfused") {
    const long q0 = drv.queries();
    CHECK_THROWS_AS(fusor::run(fusor::host_view(out.data(), n), chain(hx, dev), fusor::host()), fusor::device_error);
    CHECK(drv.queries() > q0);
    CHECK_THROWS_WITH(fusor::run(fusor::host_view(out.data(), n), chain(hx, dev), fusor::host()),
                      Catch::Contains("fusor: run(host): input") && Catch::Contains("f32[100]") &&
                          Catch::Contains("is CUDA device memory"));
    CHECK_THROWS_AS(fusor::run(fusor::host_view(out.data(), n), chain(hx, dev), fusor::unfused()),
                    fusor::device_error);
    CHECK(out == before);
  }
  SECTION("the output") {
    const auto dev_out = fusor::host_view(fake_device.data(), n);
    const auto pristine = fake_device;
    CHECK_THROWS_WITH(fusor::run(dev_out, chain(hx, hy), fusor::host()),
                      Catch::Contains("output 0") && Catch::Contains("is CUDA device memory"));
    CHECK(fake_device == pristine);
  }
  SECTION("a reduction's and a contraction's operands") {
    std::vector<float> row(10, 0.0f);
    const auto dev2 = fusor::host_view(static_cast<const float*>(fake_device.data()), 10, 10);
    CHECK_THROWS_AS(fusor::run(fusor::host_view(row.data(), 10, 1), fusor::sum(dev2, {1}), fusor::host()),
                    fusor::device_error);
    std::vector<float> mm(100, 0.0f);
    const auto hx2 = fusor::host_view(static_cast<const float*>(x.data()), 10, 10);
    CHECK_THROWS_AS(fusor::run(fusor::host_view(mm.data(), 10, 10), fusor::matmul(hx2, dev2), fusor::host()),
                    fusor::device_error);
    CHECK(row == std::vector<float>(10, 0.0f));
  }
  SECTION("managed memory and unknown (pageable) memory run") {
    drv.set_range(fake_device.data(), n * sizeof(float), /*managed=*/1);
    drv.set_range(nullptr, 0, /*managed=*/0);
    std::vector<float> ref(n);
    fusor::run(fusor::host_view(ref.data(), n), chain(hx, hy), fusor::unfused());
    fusor::run(fusor::host_view(out.data(), n), chain(hx, hy), fusor::host());
    CHECK(out == ref);
    fusor::run(fusor::host_view(out.data(), n), chain(hx, dev), fusor::host());
    CHECK(out[0] == 7.0f * 1.5f + 7.0f);
  }
  drv.set_range(nullptr, 0, 0);
  drv.set_range(nullptr, 0, 1);
}

// Run by ctest test_memory_space.opt_out with FUSOR_HOST_POINTER_CHECK=0 in
// the environment (hidden otherwise): the check is off, the driver never asked.
TEST_CASE("memory space: FUSOR_HOST_POINTER_CHECK=0 turns the host check off", "[.][opt_out]") {
  const char* v = std::getenv("FUSOR_HOST_POINTER_CHECK");
  REQUIRE(v != nullptr);
  REQUIRE(std::string(v) == "0");
  fake_driver drv;
  const std::size_t n = 16;
  std::vector<float> fake_device(n, 2.0f), out(n, 0.0f);
  drv.set_range(fake_device.data(), n * sizeof(float), /*managed=*/0);
  const auto dev = fusor::host_view(static_cast<const float*>(fake_device.data()), n);
  CHECK_NOTHROW(fusor::run(fusor::host_view(out.data(), n), chain(dev, dev), fusor::host()));
  CHECK(drv.queries() == 0);
  CHECK(out[0] == 6.0f);  // relu(2 * 2) + 2
  drv.set_range(nullptr, 0, 0);
}
