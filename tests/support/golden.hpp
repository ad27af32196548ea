// fusor test support: PyTorch golden cases for realistic contraction blocks.
//
// A case is a directory tests/data/torch/<case>/ (see its README.md) holding
//   manifest.json   tensors (shape, seed, scale, offset), attributes,
//                   outputs (file, shape, formula) and probes;
//   out_NAME.npy    the expected value of output NAME (float32, C order).
// Inputs and weights are not stored: generate() recomputes them from the
// manifest with the generator below, which tools/gen_golden.py implements
// identically in NumPy. Probes are each tensor's first 8 generated values,
// to check the two generators agree bitwise.
//
// Generator, element i (row-major) of a tensor with seed s:
//   u     = double(splitmix64(s * 0x100000001B3 + i) >> 40) * 2^-24 * 2 - 1   (exact, in [-1, 1))
//   value = float(offset + scale * u)      (double arithmetic, then one rounding to float)
//
// Test-only code: needs nlohmann-json and, for load_golden() and
// golden_data_dir(), the macro FUSOR_TEST_DATA_DIR (a string literal: the
// tests/data directory).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "npy.hpp"

namespace fusor::testing {

// The splitmix64 finalizer (Vigna), all arithmetic mod 2^64.
// splitmix64(0) == 0xE220A8397B1DCDAF.
constexpr std::uint64_t splitmix64(std::uint64_t z) noexcept {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// How a generated tensor is made: its manifest entry.
struct tensor_spec {
  std::string name;                  // for messages
  std::vector<std::int64_t> shape;   // PyTorch layout (NCHW, [Cout, Cin/groups, kh, kw], [out, in])
  std::uint64_t seed = 0;
  double scale = 1.0;
  double offset = 0.0;

  // Number of elements: the product of `shape` (1 for a 0-d tensor).
  std::int64_t size() const noexcept {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    return n;
  }
};

// Element i (row-major) of the tensor with the given seed, scale and offset.
inline float generate_element(std::uint64_t seed, double scale, double offset, std::uint64_t i) noexcept {
  const std::uint64_t bits = splitmix64(seed * 0x100000001B3ull + i) >> 40;  // 24 bits
  const double u = static_cast<double>(bits) * 0x1p-24 * 2.0 - 1.0;         // exact
  // Two separate double roundings, as NumPy does. The volatile store keeps a
  // compiler from contracting scale * u + offset into one FMA (one rounding),
  // which would change the last bit of some values whatever -ffp-contract says.
  volatile double product = scale * u;
  return static_cast<float>(offset + product);
}

// All elements of `spec`'s tensor, row-major.
inline std::vector<float> generate(const tensor_spec& spec) {
  const auto n = static_cast<std::size_t>(spec.size());
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = generate_element(spec.seed, spec.scale, spec.offset, i);
  return out;
}

// A tensor with its values: a generated input/weight or a stored output.
struct golden_tensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> data;  // row-major, size() elements

  std::int64_t size() const noexcept {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    return n;
  }
};

// An output's manifest entry.
struct output_spec {
  std::string name;
  std::string file;      // relative to the case directory, e.g. "out_stage1.npy"
  std::vector<std::int64_t> shape;
  std::string formula;   // the PyTorch expression that produced it, for humans
};

// One case: the parsed manifest; tensor() and output() produce the values.
struct golden_case {
  std::string name;
  std::string description;
  std::string torch_version;
  std::filesystem::path dir;
  std::map<std::string, tensor_spec> tensors;    // by name, e.g. "conv1.weight"
  std::map<std::string, output_spec> outputs;    // by name, e.g. "stage1"
  std::map<std::string, std::vector<float>> probes;  // tensor name -> first values generated
  nlohmann::json attributes;                     // object: stage name -> object (stride, padding, eps, ...)

  // The manifest entry of tensor `tensor_name`. Throws std::runtime_error
  // naming the case and the tensor when there is none.
  const tensor_spec& spec(const std::string& tensor_name) const {
    const auto it = tensors.find(tensor_name);
    if (it == tensors.end())
      throw std::runtime_error("golden case " + name + ": no tensor '" + tensor_name + "' in " +
                               (dir / "manifest.json").string());
    return it->second;
  }

  // Generated tensor `tensor_name` (shape + values). Same error as spec().
  golden_tensor tensor(const std::string& tensor_name) const {
    const tensor_spec& s = spec(tensor_name);
    return golden_tensor{s.name, s.shape, generate(s)};
  }

  // Expected output `output_name`, read from its .npy file. Throws
  // std::runtime_error naming the case, the output and the file when the
  // output is not in the manifest, the file is missing or malformed (from
  // load_npy), is not float32, or its shape differs from the manifest's.
  golden_tensor output(const std::string& output_name) const {
    const auto it = outputs.find(output_name);
    if (it == outputs.end())
      throw std::runtime_error("golden case " + name + ": no output '" + output_name + "' in " +
                               (dir / "manifest.json").string());
    const output_spec& o = it->second;
    const auto file = dir / o.file;
    const std::string where = "golden case " + name + ", output '" + output_name + "' (" + file.string() + "): ";
    npy_array a;
    try {
      a = load_npy(file);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(where + e.what());
    }
    if (a.dtype != npy_dtype::f32)
      throw std::runtime_error(where + "dtype " + npy_dtype_name(a.dtype) + ", expected float32");
    if (a.shape != o.shape)
      throw std::runtime_error(where + "shape " + shape_string(a.shape) + " differs from the manifest's " +
                               shape_string(o.shape));
    return golden_tensor{o.name, o.shape, a.as<float>()};
  }

  // attributes[stage], e.g. attr("conv1").at("stride"). Throws
  // std::runtime_error naming the case when the stage has no attributes.
  const nlohmann::json& attr(const std::string& stage) const {
    if (!attributes.is_object() || !attributes.contains(stage))
      throw std::runtime_error("golden case " + name + ": no attributes for '" + stage + "' in " +
                               (dir / "manifest.json").string());
    return attributes.at(stage);
  }

  static std::string shape_string(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }
};

namespace detail {

inline nlohmann::json golden_read_json(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) throw std::runtime_error(file.string() + ": no such file");
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot open file");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.string() + ": invalid JSON: " + e.what());
  }
}

inline std::vector<std::int64_t> golden_shape(const nlohmann::json& j) {
  auto shape = j.get<std::vector<std::int64_t>>();
  for (std::int64_t d : shape)
    if (d < 0) throw std::runtime_error("negative extent " + std::to_string(d));
  return shape;
}

}  // namespace detail

// Reads dir/manifest.json (no .npy file is read here; output() reads them on
// demand). Throws std::runtime_error naming the file, and the tensor or
// output concerned, when the manifest is missing, is not valid JSON or lacks
// a required field (case, tensors with shape/seed/scale/offset, outputs with
// file/shape).
inline golden_case load_golden_case(const std::filesystem::path& dir) {
  const auto file = dir / "manifest.json";
  const nlohmann::json j = detail::golden_read_json(file);
  golden_case c;
  c.dir = dir;
  std::string where = "";  // the entry being parsed, for messages
  try {
    c.name = j.at("case").get<std::string>();
    c.description = j.value("description", std::string{});
    c.torch_version = j.value("torch_version", std::string{});
    for (const auto& [tname, t] : j.at("tensors").items()) {
      where = "tensor '" + tname + "': ";
      tensor_spec s;
      s.name = tname;
      s.shape = detail::golden_shape(t.at("shape"));
      s.seed = t.at("seed").get<std::uint64_t>();
      s.scale = t.at("scale").get<double>();
      s.offset = t.at("offset").get<double>();
      c.tensors.emplace(tname, std::move(s));
    }
    for (const auto& [oname, o] : j.at("outputs").items()) {
      where = "output '" + oname + "': ";
      output_spec s;
      s.name = oname;
      s.file = o.at("file").get<std::string>();
      s.shape = detail::golden_shape(o.at("shape"));
      s.formula = o.value("formula", std::string{});
      c.outputs.emplace(oname, std::move(s));
    }
    where = "probes: ";
    const nlohmann::json probes = j.value("probes", nlohmann::json::object());  // named: items() must not outlive it
    for (const auto& [pname, p] : probes.items()) {
      where = "probes of '" + pname + "': ";
      if (!c.tensors.contains(pname)) throw std::runtime_error("not a tensor of the case");
      c.probes.emplace(pname, p.get<std::vector<float>>());
    }
    where = "attributes: ";
    c.attributes = j.value("attributes", nlohmann::json::object());
    if (!c.attributes.is_object()) throw std::runtime_error("not an object");
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.string() + ": " + where + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(file.string() + ": " + where + e.what());
  }
  return c;
}

// The directory holding the PyTorch golden cases: FUSOR_TEST_DATA_DIR (set
// by the build to the absolute path of tests/data) + "/torch".
#ifndef FUSOR_TEST_DATA_DIR
#error "golden.hpp: define FUSOR_TEST_DATA_DIR as a string literal naming tests/data"
#endif
inline std::filesystem::path golden_data_dir() {
  return std::filesystem::path(FUSOR_TEST_DATA_DIR) / "torch";
}

// load_golden_case(golden_data_dir() / case_name), e.g.
// load_golden("resnet_basic_block_s2"). Same errors.
inline golden_case load_golden(const std::string& case_name) {
  return load_golden_case(golden_data_dir() / case_name);
}

// Names of every case under golden_data_dir() (subdirectories holding a
// manifest.json), sorted. Throws std::runtime_error if the directory is
// missing.
inline std::vector<std::string> golden_case_names() {
  const auto root = golden_data_dir();
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) throw std::runtime_error(root.string() + ": no such directory");
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(root))
    if (e.is_directory() && std::filesystem::exists(e.path() / "manifest.json"))
      names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace fusor::testing
