// Tests for tests/support/npy.hpp: the committed ONNX data (values checked
// against numpy.load) and hand-built files for the formats and errors the
// committed data does not exercise. Catch2 v2; main() lives in another TU.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "support/npy.hpp"

namespace fs = std::filesystem;
using fusor::testing::load_npy;
using fusor::testing::npy_array;
using fusor::testing::npy_dtype;
using Catch::Matchers::Contains;

namespace {

fs::path onnx_file(const std::string& test_case, const std::string& file) {
  return fs::path(FUSOR_TEST_DATA_DIR) / "onnx" / test_case / file;
}

// A fresh directory under the system temp dir, removed with everything in it.
struct temp_dir {
  fs::path path;
  temp_dir() {
    static std::atomic<int> counter{0};
    // random_device keeps concurrent test processes apart, the counter the
    // temp dirs of one process.
    path = fs::temp_directory_path() /
           ("fusor_test_npy_" + std::to_string(std::random_device{}()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};

std::vector<unsigned char> le_bytes(std::uint64_t v, int n) {
  std::vector<unsigned char> out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
  return out;
}

// Builds a .npy file the way numpy.lib.format does: magic, version, header
// length (2 bytes for 1.0, 4 for 2.0/3.0), the dict padded with spaces and a
// final '\n' so the data starts on a 64-byte boundary, then `data`.
std::vector<unsigned char> npy_bytes(int major, const std::string& dict, const std::vector<unsigned char>& data) {
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((6 + 2 + len_bytes + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::vector<unsigned char> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(major), 0};
  for (unsigned char b : le_bytes(header.size(), static_cast<int>(len_bytes))) out.push_back(b);
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

fs::path write_file(const fs::path& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
  return path;
}

template <class T>
std::vector<unsigned char> raw(std::initializer_list<T> values) {
  std::vector<unsigned char> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

}  // namespace

// Expected numbers below were printed with numpy 1.24 from the same files.

TEST_CASE("load_npy reads float32 data and its broadcast relation (test_add_bcast)", "[npy]") {
  const npy_array a = load_npy(onnx_file("test_add_bcast", "set0_input_0.npy"));
  const npy_array b = load_npy(onnx_file("test_add_bcast", "set0_input_1.npy"));
  const npy_array y = load_npy(onnx_file("test_add_bcast", "set0_output_0.npy"));
  CHECK(a.dtype == npy_dtype::f32);
  CHECK(a.shape == std::vector<std::int64_t>{3, 4, 5});
  CHECK(a.size() == 60);
  CHECK(a.data.size() == 240);
  CHECK(b.shape == std::vector<std::int64_t>{5});
  CHECK(y.shape == a.shape);

  const auto av = a.as<float>(), bv = b.as<float>(), yv = y.as<float>();
  CHECK(av[0] == 1.764052391052246f);
  CHECK(av[1 * 20 + 2 * 5 + 3] == -1.980796456336975f);  // a[1,2,3]: C order, last axis fastest
  CHECK(av[59] == -0.3627411723136902f);                 // a[2,3,4]
  CHECK(bv == std::vector<float>{-0.6724604368209839f, -0.35955315828323364f, -0.8131462931632996f,
                                 -1.7262825965881348f, 0.17742614448070526f});
  CHECK(yv[0] == 1.0915919542312622f);
  CHECK(yv[59] == -0.18531502783298492f);
  // numpy computed y in float32, so float addition reproduces it bit for bit.
  for (std::size_t i = 0; i < yv.size(); ++i) CHECK(yv[i] == av[i] + bv[i % 5]);

  const auto ad = a.as<double>();  // widening is exact
  CHECK(ad[0] == static_cast<double>(av[0]));
}

TEST_CASE("load_npy reads int64 data (test_max_int64)", "[npy]") {
  const npy_array x0 = load_npy(onnx_file("test_max_int64", "set0_input_0.npy"));
  const npy_array x1 = load_npy(onnx_file("test_max_int64", "set0_input_1.npy"));
  const npy_array y = load_npy(onnx_file("test_max_int64", "set0_output_0.npy"));
  CHECK(x0.dtype == npy_dtype::i64);
  CHECK(x0.shape == std::vector<std::int64_t>{3});
  CHECK(x0.as<std::int64_t>() == std::vector<std::int64_t>{3, 2, 1});
  CHECK(x1.as<std::int64_t>() == std::vector<std::int64_t>{1, 4, 4});
  CHECK(y.as<std::int64_t>() == std::vector<std::int64_t>{3, 4, 4});
  CHECK(y.as<float>() == std::vector<float>{3.f, 4.f, 4.f});  // int -> float conversion
}

TEST_CASE("load_npy reads bool data (test_where_example)", "[npy]") {
  const npy_array cond = load_npy(onnx_file("test_where_example", "set0_input_0.npy"));
  CHECK(cond.dtype == npy_dtype::b1);
  CHECK(cond.shape == std::vector<std::int64_t>{2, 2});
  CHECK(cond.as<bool>() == std::vector<bool>{true, false, true, true});
  CHECK(cond.as<int>() == std::vector<int>{1, 0, 1, 1});

  const auto x = load_npy(onnx_file("test_where_example", "set0_input_1.npy")).as<float>();
  const auto y = load_npy(onnx_file("test_where_example", "set0_input_2.npy")).as<float>();
  const auto out = load_npy(onnx_file("test_where_example", "set0_output_0.npy")).as<float>();
  CHECK(out == std::vector<float>{1.f, 8.f, 3.f, 4.f});
  const auto c = cond.as<bool>();
  for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == (c[i] ? x[i] : y[i]));
}

TEST_CASE("load_npy reads 0-d and empty arrays", "[npy]") {
  // Gemm's scalar bias C is a 0-d array: shape (), one element.
  const npy_array c = load_npy(onnx_file("test_gemm_default_scalar_bias", "set0_input_2.npy"));
  CHECK(c.shape.empty());
  CHECK(c.size() == 1);
  CHECK(c.as<float>() == std::vector<float>{3.140000104904175f});

  // ReduceSum's empty axes input: int64, shape (0,), no data bytes.
  const npy_array axes = load_npy(onnx_file("test_reduce_sum_default_axes_keepdims_example", "set0_input_1.npy"));
  CHECK(axes.dtype == npy_dtype::i64);
  CHECK(axes.shape == std::vector<std::int64_t>{0});
  CHECK(axes.size() == 0);
  CHECK(axes.data.empty());
  CHECK(axes.as<std::int64_t>().empty());
}

TEST_CASE("load_npy reads format versions 2.0 and 3.0", "[npy]") {
  temp_dir tmp;
  const auto data = raw<float>({1.5f, -2.f, 0.25f, 8.f, 3.f, -0.5f});
  for (int major : {1, 2, 3}) {
    CAPTURE(major);
    const auto p = write_file(tmp.path / ("v" + std::to_string(major) + ".npy"),
                              npy_bytes(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data));
    const npy_array a = load_npy(p);
    CHECK(a.shape == std::vector<std::int64_t>{2, 3});
    CHECK(a.as<float>() == std::vector<float>{1.5f, -2.f, 0.25f, 8.f, 3.f, -0.5f});
  }
}

TEST_CASE("load_npy transposes Fortran-ordered data to C order", "[npy]") {
  temp_dir tmp;
  // np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)) stores 0 3 1 4 2 5.
  const auto p = write_file(tmp.path / "f.npy", npy_bytes(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }",
                                                          raw<std::int32_t>({0, 3, 1, 4, 2, 5})));
  const npy_array a = load_npy(p);
  CHECK(a.dtype == npy_dtype::i32);
  CHECK(a.shape == std::vector<std::int64_t>{2, 3});
  CHECK(a.as<std::int32_t>() == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5});

  // Rank 3, shape (2, 3, 2): Fortran offset of [i, j, k] is i + 2 j + 6 k.
  std::vector<std::int32_t> fortran(12);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t k = 0; k < 2; ++k) fortran[i + 2 * j + 6 * k] = static_cast<std::int32_t>(100 * i + 10 * j + k);
  std::vector<unsigned char> bytes(fortran.size() * 4);
  std::memcpy(bytes.data(), fortran.data(), bytes.size());
  const auto p3 = write_file(tmp.path / "f3.npy",
                             npy_bytes(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 2), }", bytes));
  CHECK(load_npy(p3).as<int>() == std::vector<int>{0, 1, 10, 11, 20, 21, 100, 101, 110, 111, 120, 121});
}

TEST_CASE("load_npy reads every supported dtype", "[npy]") {
  temp_dir tmp;
  auto load = [&](const std::string& descr, const std::vector<unsigned char>& data, int n) {
    const auto p = write_file(tmp.path / "t.npy", npy_bytes(1, "{'descr': '" + descr +
                                                                     "', 'fortran_order': False, 'shape': (" +
                                                                     std::to_string(n) + ",), }",
                                                            data));
    return load_npy(p);
  };
  SECTION("float16, decoded exactly") {
    // 1, -2.5, 65504 (max half), 2^-24 (min subnormal), inf, nan: bits from numpy.
    const npy_array a = load("<f2", raw<std::uint16_t>({0x3c00, 0xc100, 0x7bff, 0x0001, 0x7c00, 0x7e00}), 6);
    CHECK(a.dtype == npy_dtype::f16);
    const auto v = a.as<float>();
    CHECK(v[0] == 1.f);
    CHECK(v[1] == -2.5f);
    CHECK(v[2] == 65504.f);
    CHECK(v[3] == std::ldexp(1.f, -24));
    CHECK(std::isinf(v[4]));
    CHECK(v[4] > 0);
    CHECK(std::isnan(v[5]));
  }
  SECTION("float64") {
    const npy_array a = load("<f8", raw<double>({0.1, -1e300}), 2);
    CHECK(a.dtype == npy_dtype::f64);
    CHECK(a.as<double>() == std::vector<double>{0.1, -1e300});
    CHECK(a.as<float>()[0] == 0.1f);  // narrowing rounds like static_cast
  }
  SECTION("int32") { CHECK(load("<i4", raw<std::int32_t>({-7, 2147483647}), 2).as<std::int64_t>() == std::vector<std::int64_t>{-7, 2147483647}); }
  SECTION("int8 with either byte-order mark") {
    CHECK(load("|i1", raw<std::int8_t>({-128, 5}), 2).as<int>() == std::vector<int>{-128, 5});
    CHECK(load("<i1", raw<std::int8_t>({-1}), 1).dtype == npy_dtype::i8);
  }
  SECTION("int16, uint16, uint32, uint64 (ONNX's comparison cases)") {
    CHECK(load("<i2", raw<std::int16_t>({-32768, 7}), 2).as<std::int16_t>() == std::vector<std::int16_t>{-32768, 7});
    CHECK(load("<u2", raw<std::uint16_t>({65535, 1}), 2).as<std::uint16_t>() == std::vector<std::uint16_t>{65535, 1});
    CHECK(load("<u4", raw<std::uint32_t>({4294967295u}), 1).as<std::uint32_t>() == std::vector<std::uint32_t>{4294967295u});
    CHECK(load("<u8", raw<std::uint64_t>({18446744073709551615ull}), 1).as<std::uint64_t>() ==
          std::vector<std::uint64_t>{18446744073709551615ull});
    CHECK(load("<u2", raw<std::uint16_t>({0x3c00}), 1).as<float>() == std::vector<float>{15360.f});  // an integer, not a half
  }
  SECTION("uint8 with either byte-order mark") {
    CHECK(load("|u1", raw<std::uint8_t>({255, 0}), 2).as<int>() == std::vector<int>{255, 0});
    CHECK(load("<u1", raw<std::uint8_t>({7}), 1).as<float>() == std::vector<float>{7.f});
  }
  SECTION("float to integer conversion refuses NaN and out-of-range values") {
    CHECK(load("<f4", raw<float>({-3.75f, 2.5f}), 2).as<int>() == std::vector<int>{-3, 2});  // truncates
    CHECK_THROWS_WITH(load("<f4", raw<float>({NAN}), 1).as<int>(), Contains("does not fit"));
    CHECK_THROWS_WITH(load("<f4", raw<float>({300.f}), 1).as<std::uint8_t>(), Contains("does not fit"));
    CHECK_THROWS_WITH(load("<f4", raw<float>({-1.f}), 1).as<unsigned>(), Contains("does not fit"));
  }
}

TEST_CASE("load_npy errors name the file and the problem", "[npy][errors]") {
  temp_dir tmp;
  const auto good = npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", raw<float>({1, 2, 3, 4}));
  auto throws_with = [&](const fs::path& p, const std::string& problem) {
    CAPTURE(p, problem);
    CHECK_THROWS_AS(load_npy(p), std::runtime_error);
    CHECK_THROWS_WITH(load_npy(p), Contains(p.string()) && Contains(problem));
  };

  SECTION("missing file") { throws_with(tmp.path / "absent.npy", "no such file"); }
  SECTION("directory") { throws_with(tmp.path, "is a directory"); }
  SECTION("bad magic") {
    auto bytes = good;
    bytes[1] = 'X';
    throws_with(write_file(tmp.path / "magic.npy", bytes), "bad magic");
    throws_with(write_file(tmp.path / "empty.npy", {}), "bad magic");
  }
  SECTION("truncated data") {
    auto bytes = good;
    bytes.resize(bytes.size() - 3);
    throws_with(write_file(tmp.path / "short.npy", bytes), "truncated data");
  }
  SECTION("truncated header") {
    auto bytes = good;
    bytes.resize(40);
    throws_with(write_file(tmp.path / "short_header.npy", bytes), "truncated header");
  }
  SECTION("trailing bytes") {
    auto bytes = good;
    bytes.push_back(0);
    throws_with(write_file(tmp.path / "long.npy", bytes), "trailing bytes");
  }
  SECTION("unsupported version") {
    auto bytes = good;
    bytes[6] = 4;
    throws_with(write_file(tmp.path / "v4.npy", bytes), "unsupported format version 4.0");
  }
  SECTION("unsupported dtypes") {
    auto with_descr = [&](const std::string& name, const std::string& descr) {
      return write_file(tmp.path / name,
                        npy_bytes(1, "{'descr': " + descr + ", 'fortran_order': False, 'shape': (1,), }",
                                  std::vector<unsigned char>(8, 0)));
    };
    throws_with(with_descr("be.npy", "'>f4'"), "unsupported dtype '>f4' (big-endian");
    throws_with(with_descr("c8.npy", "'<c8'"), "unsupported dtype '<c8'");
    throws_with(with_descr("m8.npy", "'<m8'"), "unsupported dtype '<m8'");
    throws_with(with_descr("struct.npy", "[('a', '<f4')]"), "unsupported dtype");
  }
  SECTION("malformed header") {
    throws_with(write_file(tmp.path / "nokey.npy", npy_bytes(1, "{'descr': '<f4', 'shape': (1,), }", raw<float>({1}))),
                "malformed header");
    throws_with(write_file(tmp.path / "negative.npy",
                           npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", raw<float>({1}))),
                "malformed header");
  }
}
