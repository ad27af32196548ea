// fusor test support: loads one ONNX operator conformance case.
//
// A case is a directory (tests/data/onnx/<case>/, see its README.md) holding
//   case.json             the graph: nodes (op_type, inputs, outputs,
//                         attributes), graph inputs/outputs, initializer
//                         names, tolerances rtol/atol, number of data sets;
//   setK_input_I.npy      data set K's value of graph input I;
//   setK_output_I.npy     data set K's expected value of graph output I;
//   init_NAME.npy         the initializer NAME.
// Attributes are stored as JSON: ints as integers, floats as numbers, lists
// of ints/floats as arrays, strings as strings. A node input named "" is an
// omitted optional input (ONNX's convention, e.g. Clip without min/max).
//
// Test-only code: needs nlohmann-json and, for onnx_data_dir(), the macro
// FUSOR_TEST_DATA_DIR (a string literal: the tests/data directory).
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

// One operator node of a case's graph.
struct onnx_node {
  std::string op_type;
  std::vector<std::string> inputs, outputs;  // "" = omitted optional input
  nlohmann::json attributes;                 // object: name -> value

  bool has_attr(const std::string& name) const { return attributes.contains(name); }

  // Float attribute `name` (an integer value is accepted and converted), or
  // `def` when absent. Throws std::runtime_error if present but not a number.
  float attr_f(const std::string& name, float def) const {
    if (!has_attr(name)) return def;
    const auto& v = attributes.at(name);
    if (!v.is_number()) bad_attr(name, "a number");
    return v.get<float>();
  }

  // Integer attribute `name`, or `def` when absent. Throws std::runtime_error
  // if present but not an integer (a float here would silently truncate).
  std::int64_t attr_i(const std::string& name, std::int64_t def) const {
    if (!has_attr(name)) return def;
    const auto& v = attributes.at(name);
    if (!v.is_number_integer()) bad_attr(name, "an integer");
    return v.get<std::int64_t>();
  }

  // List-of-ints attribute `name` (kernel_shape, pads, strides, axes), or
  // `def` when absent. Throws std::runtime_error unless it is an integer array.
  std::vector<std::int64_t> attr_ints(const std::string& name, std::vector<std::int64_t> def = {}) const {
    if (!has_attr(name)) return def;
    const auto& v = attributes.at(name);
    if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_number_integer(); }))
      bad_attr(name, "a list of integers");
    return v.get<std::vector<std::int64_t>>();
  }

  // List-of-floats attribute `name`, or `def` when absent.
  std::vector<float> attr_floats(const std::string& name, std::vector<float> def = {}) const {
    if (!has_attr(name)) return def;
    const auto& v = attributes.at(name);
    if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_number(); }))
      bad_attr(name, "a list of numbers");
    return v.get<std::vector<float>>();
  }

  // String attribute `name` (auto_pad, approximate, ...), or `def` when absent.
  std::string attr_s(const std::string& name, std::string def = {}) const {
    if (!has_attr(name)) return def;
    const auto& v = attributes.at(name);
    if (!v.is_string()) bad_attr(name, "a string");
    return v.get<std::string>();
  }

 private:
  [[noreturn]] void bad_attr(const std::string& name, const char* wanted) const {
    throw std::runtime_error("onnx_node " + op_type + ": attribute '" + name + "' is " +
                             attributes.at(name).dump() + ", expected " + wanted);
  }
};

// A conformance case: the graph plus lazy access to its data sets.
struct onnx_case {
  std::string name;
  std::filesystem::path dir;  // where the .npy files are read from
  int opset = 0;              // version of the default ("") domain; ONNX semantics depend on it
  std::vector<onnx_node> nodes;
  std::vector<std::string> inputs, outputs;  // graph inputs/outputs, in file-index order
  std::map<std::string, npy_array> initializers;
  double rtol = 0, atol = 0;  // compare as |got - want| <= atol + rtol * |want|
  int data_sets = 0;

  // The single node of a one-node case. Throws std::runtime_error otherwise.
  const onnx_node& node() const {
    if (nodes.size() != 1)
      throw std::runtime_error("onnx_case " + name + ": node() needs exactly one node, case has " +
                               std::to_string(nodes.size()));
    return nodes.front();
  }

  // Data set k's graph inputs, in the order of `inputs` (read from
  // setK_input_I.npy). Throws std::out_of_range for k outside [0, data_sets),
  // std::runtime_error (from load_npy) for a missing or bad file.
  std::vector<npy_array> set_inputs(int k) const { return load_set(k, "input", inputs.size()); }

  // Data set k's expected graph outputs, in the order of `outputs`.
  std::vector<npy_array> set_outputs(int k) const { return load_set(k, "output", outputs.size()); }

  // Data set k's inputs and the initializers, by name: what a node's input
  // names refer to. Same errors as set_inputs.
  std::map<std::string, npy_array> named_inputs(int k) const {
    std::map<std::string, npy_array> by_name = initializers;
    auto arrays = set_inputs(k);
    for (std::size_t i = 0; i < inputs.size(); ++i) by_name.insert_or_assign(inputs[i], std::move(arrays[i]));
    return by_name;
  }

 private:
  std::vector<npy_array> load_set(int k, const char* kind, std::size_t count) const {
    if (k < 0 || k >= data_sets)
      throw std::out_of_range("onnx_case " + name + ": data set " + std::to_string(k) + " requested, case has " +
                              std::to_string(data_sets));
    std::vector<npy_array> arrays;
    arrays.reserve(count);
    for (std::size_t i = 0; i < count; ++i)
      arrays.push_back(load_npy(dir / ("set" + std::to_string(k) + "_" + kind + "_" + std::to_string(i) + ".npy")));
    return arrays;
  }
};

namespace detail {

inline nlohmann::json read_json_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot open file");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.string() + ": invalid JSON: " + e.what());
  }
}

}  // namespace detail

// Reads dir/case.json and every initializer it names (dir/init_NAME.npy).
// Data sets are read later, on demand, by set_inputs/set_outputs. Throws
// std::runtime_error naming the file when case.json is missing, is not valid
// JSON or lacks a required field (name, nodes, inputs, outputs, rtol, atol,
// data_sets), or when an initializer file cannot be loaded.
inline onnx_case load_onnx_case(const std::filesystem::path& dir) {
  const auto file = dir / "case.json";
  const nlohmann::json j = detail::read_json_file(file);
  onnx_case c;
  c.dir = dir;
  try {
    c.name = j.at("name").get<std::string>();
    for (const auto& o : j.value("opset", nlohmann::json::array()))
      if (o.value("domain", std::string{}).empty()) c.opset = o.at("version").get<int>();
    for (const auto& n : j.at("nodes")) {
      onnx_node node;
      node.op_type = n.at("op_type").get<std::string>();
      node.inputs = n.at("inputs").get<std::vector<std::string>>();
      node.outputs = n.at("outputs").get<std::vector<std::string>>();
      node.attributes = n.value("attributes", nlohmann::json::object());
      c.nodes.push_back(std::move(node));
    }
    c.inputs = j.at("inputs").get<std::vector<std::string>>();
    c.outputs = j.at("outputs").get<std::vector<std::string>>();
    c.rtol = j.at("rtol").get<double>();
    c.atol = j.at("atol").get<double>();
    c.data_sets = j.at("data_sets").get<int>();
    // An initializer entry is its name, or an object carrying "name".
    for (const auto& init : j.value("initializers", nlohmann::json::array())) {
      const std::string init_name = init.is_string() ? init.get<std::string>() : init.at("name").get<std::string>();
      c.initializers.emplace(init_name, load_npy(dir / ("init_" + init_name + ".npy")));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
  if (c.data_sets < 0) throw std::runtime_error(file.string() + ": negative data_sets");
  return c;
}

// The directory holding the ONNX cases and index.json: FUSOR_TEST_DATA_DIR
// (set by the build to the absolute path of tests/data) + "/onnx".
#ifndef FUSOR_TEST_DATA_DIR
#error "onnx_case.hpp: define FUSOR_TEST_DATA_DIR as a string literal naming tests/data"
#endif
inline std::filesystem::path onnx_data_dir() {
  return std::filesystem::path(FUSOR_TEST_DATA_DIR) / "onnx";
}

namespace detail {

// Case names from onnx_data_dir()/index.json whose `field` is one of `wanted`,
// in index order. Every wanted value must match at least one case, so a typo
// or an absent operator fails loudly instead of running zero checks.
inline std::vector<std::string> onnx_cases_where(const char* field, const std::vector<std::string>& wanted) {
  const auto file = onnx_data_dir() / "index.json";
  const nlohmann::json index = read_json_file(file);
  std::vector<std::string> names;
  std::vector<bool> seen(wanted.size(), false);
  try {
    for (const auto& e : index) {
      const auto value = e.at(field).get<std::string>();
      const auto it = std::find(wanted.begin(), wanted.end(), value);
      if (it == wanted.end()) continue;
      seen[static_cast<std::size_t>(it - wanted.begin())] = true;
      names.push_back(e.at("case").get<std::string>());
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
  for (std::size_t i = 0; i < wanted.size(); ++i)
    if (!seen[i])
      throw std::runtime_error(file.string() + ": no case has " + field + " '" + wanted[i] + "'");
  return names;
}

}  // namespace detail

// Names of the cases whose single node has one of `op_types` (e.g.
// {"Softmax", "LogSoftmax"}), read from index.json; load each with
// load_onnx_case(onnx_data_dir() / name). Throws std::runtime_error if
// index.json is missing or malformed, or if an op_type matches no case.
inline std::vector<std::string> onnx_cases_of(const std::vector<std::string>& op_types) {
  return detail::onnx_cases_where("op_type", op_types);
}

// Names of the cases in `family` ("elementwise", "contraction", "reduction",
// "normalization"; see tools/onnx_index.py). Same errors as onnx_cases_of.
inline std::vector<std::string> onnx_cases_in_family(const std::string& family) {
  return detail::onnx_cases_where("family", {family});
}

}  // namespace fusor::testing
